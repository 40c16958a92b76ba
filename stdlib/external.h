/* The external programs that draw pictures (gnuplot for plots, graphviz's dot for graphs):
 * run as child processes without a shell, their input and output passed through files in a
 * private temporary directory. A program that is not installed is a RuntimeError naming the
 * Debian package that provides it. */
#ifndef AX_EXTERNAL_H
#define AX_EXTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "../runtime/context.h"

/* A program and where it comes from, for the error when it is missing. */
typedef struct ax_ext_program {
    const char *name;    /* "gnuplot": found through PATH */
    const char *package; /* "gnuplot-nox" */
    const char *purpose; /* "plots are drawn" */
} ax_ext_program;

extern const ax_ext_program ax_ext_gnuplot, ax_ext_dot;

/* A new private directory under $TMPDIR (or /tmp): a malloc'd path, or NULL + IOError. */
char *ax_ext_tmpdir_new(ax_ctx *cx);
/* Removes the files in `dir` and the directory itself (NULL is fine), then frees `dir`. */
void ax_ext_tmpdir_free(char *dir);
/* "dir/name", malloc'd (NULL + error on out of memory). */
char *ax_ext_join(ax_ctx *cx, const char *dir, const char *name);

/* Writes / reads a whole file. read: malloc'd, NUL-terminated, *len bytes (len may be NULL).
 * NULL or -1 with an IOError naming the path. */
int ax_ext_write_file(ax_ctx *cx, const char *path, const char *data, size_t len);
char *ax_ext_read_file(ax_ctx *cx, const char *path, size_t *len);

/* Runs argv (argv[0] = prog->name) with stdin from /dev/null and stdout + stderr written to
 * `log_path`, and waits for it. 0 when it exits with status 0; otherwise -1 with a
 * RuntimeError: the program is missing (naming its package), was killed, or failed (quoting
 * the end of its log). */
int ax_ext_run(ax_ctx *cx, const ax_ext_program *prog, char *const argv[], const char *log_path);

/* Whether the program can be found through PATH (for tests that skip without it). */
bool ax_ext_available(const ax_ext_program *prog);

#endif

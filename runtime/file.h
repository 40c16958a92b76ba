/* Files for array I/O: whole-file reads, and atomic writes (a temporary file in the target's
 * directory, renamed over the target once complete and synced), so that a save that fails or
 * is interrupted leaves the previous file, never a partial one. Errors name the file. */
#ifndef AX_FILE_H
#define AX_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "context.h"

/* The whole file in a new buffer (NUL-terminated, *len bytes before the NUL); NULL with an
 * IOError "cannot read PATH: reason". `who` prefixes the message ("loadtxt"). */
char *ax_file_read(ax_ctx *cx, const char *who, const char *path, size_t *len);

/* A file opened for reading, with its size. */
FILE *ax_file_open_read(ax_ctx *cx, const char *who, const char *path, uint64_t *size);

/* Sequential reads from an open file, from offset `at` on (an ax_raw_reader, npy.h). */
typedef struct ax_fd_reader {
    ax_ctx *cx;
    int fd;
    uint64_t at;
    const char *path;
} ax_fd_reader;
bool ax_fd_read(void *reader, void *dst, size_t n);

typedef struct ax_file_out {
    FILE *f;
    char *path; /* the target */
    char *tmp;  /* the temporary file being written */
    const char *who;
    uint64_t pos; /* bytes written so far */
} ax_file_out;

/* Starts writing `path` (through a temporary file beside it). */
bool ax_file_out_open(ax_ctx *cx, const char *who, const char *path, ax_file_out *out);
bool ax_file_out_write(ax_ctx *cx, ax_file_out *out, const void *data, size_t n);
/* Writes at an earlier position (patching a header), then returns to the end. */
bool ax_file_out_patch(ax_ctx *cx, ax_file_out *out, uint64_t at, const void *data, size_t n);
/* Flushes, syncs and renames the temporary file over the target; aborts on failure. */
bool ax_file_out_commit(ax_ctx *cx, ax_file_out *out);
/* Closes and removes the temporary file (the target is untouched). Safe to call twice. */
void ax_file_out_abort(ax_file_out *out);

#endif

/* `ax notebook FILE.md`: runs the ```ax blocks of a Markdown file in one session and writes
 * an HTML page (notebook_html.c) with each block's output, echoed value, pictures and error;
 * --update records the outputs in the file (```output blocks), --check compares them. */
#ifndef AX_NOTEBOOK_H
#define AX_NOTEBOOK_H

#include <stdbool.h>
#include <stddef.h>

#include "../stdlib/display.h"

/* A fenced code block of the Markdown text. */
typedef struct nb_block {
    int line, end_line; /* 1-based lines of the opening and closing fences */
    size_t start, end;  /* byte range from the opening fence's line to after the closing one */
    int indent;         /* the opening fence's indentation (removed from the content) */
    char fence_char;    /* '`' or '~' */
    int fence_len;
    char lang[32]; /* the info string's first word: "ax", "output", "python", ... */
    bool norun, nocheck, expect_error; /* ax block options: ```ax norun / nocheck / error */
    char *code;                        /* the content */
    int output;                        /* index of the ```output block that follows, or -1 */
} nb_block;

/* What running an ax block gave. */
typedef struct nb_result {
    bool ran;
    char *text;       /* stdout and stderr as written, with the echoed value */
    char *error;      /* the error as the REPL prints it, or NULL */
    ax_picture *pics; /* the pictures it showed (at: offsets into text) */
    int npics;
    double seconds;
} nb_result;

typedef struct nb_document {
    const char *path;
    char *text;
    size_t len;
    nb_block *blocks;
    int nblocks;
    nb_result *results; /* one per block (only ax blocks run) */
} nb_document;

/* Calls fn on each part of a result's output in order: a piece of text (pic NULL), or a
 * picture (text NULL). */
typedef void (*nb_part_fn)(void *arg, const char *text, size_t len, const ax_picture *pic);
void ax_notebook_each_part(const nb_result *r, nb_part_fn fn, void *arg);

/* The transcript of a result as recorded in an ```output block: the text with a line
 * "[picture: ALT]" where each picture was shown, then the error. Malloc'd. */
char *ax_notebook_transcript(const nb_result *r);

/* Writes the page: the Markdown rendered by libcmark, each ax block followed by its outputs.
 * 0, or -1 with a message on stderr (libcmark missing, I/O). */
int ax_notebook_write_html(const nb_document *doc, const char *out_path);

/* The command `ax notebook ARGS` (argv[0] is "notebook"). Returns the exit status. */
int ax_notebook_main(int argc, char **argv, const char *exe);

#endif

/* Errors: a kind, a message in the user's terms, and (set by the evaluator) a source span.
 *
 * Every fallible function in ax reports failure the same way: it records the error in the
 * runtime context with ax_error() and returns NULL (or -1). The first error recorded wins;
 * callers up the stack only add the span of the expression being evaluated. */
#ifndef AX_ERROR_H
#define AX_ERROR_H

#include <stdbool.h>

typedef enum {
    AX_ERR_NONE = 0,
    AX_ERR_SYNTAX,
    AX_ERR_NAME,
    AX_ERR_TYPE,
    AX_ERR_SHAPE,
    AX_ERR_INDEX,
    AX_ERR_VALUE,
    AX_ERR_KEY,
    AX_ERR_ATTRIBUTE,
    AX_ERR_CONCRETIZATION,
    AX_ERR_RECURSION,
    AX_ERR_IMPORT,
    AX_ERR_IO,
    AX_ERR_INTERRUPT,
    AX_ERR_MEMORY,
    AX_ERR_ASSERTION,
    AX_ERR_RUNTIME,
    AX_ERR_NKINDS
} ax_error_kind;

/* A source span: 1-based line and column of the first character, and of one past the last. */
typedef struct ax_span {
    int line, col, end_line, end_col;
} ax_span;

/* The longest part of a source line an error shows (a window around the span). */
#define AX_ERROR_SHOW_MAX 160

typedef struct ax_error {
    ax_error_kind kind;
    char message[1024];
    bool has_span;
    ax_span span;
    char file[256]; /* the file (or "<repl>", "<string>") the span refers to */
    /* the span's line for the caret display (if has_source): all of it, or a window around
     * the span when the line is long; it starts at column source_col (1-based, in bytes) of
     * the line, and source_cut_right says the line goes on after it. Kept in place, so that
     * reporting an error never allocates (memory may have run out). */
    bool has_source;
    char source[AX_ERROR_SHOW_MAX + 1];
    int source_col;
    bool source_cut_right;
} ax_error_info;

struct ax_ctx;

/* "SyntaxError", "ShapeError", ... */
const char *ax_error_kind_name(ax_error_kind kind);

/* Records an error unless one is already pending. Always returns NULL, so that
 * `return ax_error(cx, AX_ERR_SHAPE, "...")` reads naturally in functions returning pointers. */
void *ax_error(struct ax_ctx *cx, ax_error_kind kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Out of memory: records AX_ERR_MEMORY and returns NULL. */
void *ax_error_oom(struct ax_ctx *cx);

bool ax_error_pending(const struct ax_ctx *cx);

/* Attaches a span (and the file name and source text it points into) to the pending error
 * if it has none yet. `source` is the whole source text; the relevant line is copied. */
void ax_error_set_span(struct ax_ctx *cx, ax_span span, const char *file, const char *source);

/* Forgets the pending error (after it was reported). */
void ax_error_clear(struct ax_ctx *cx);

/* Writes the error as the user sees it:
 *   error[ShapeError]: cannot add f32[3] and f32[4] (shapes do not broadcast)
 *     --> mlp.ax:12:9
 *      |
 *   12 |     y = x + b
 *      |         ^^^^^
 * A long line shows a window around the span, with "..." where it is cut; bytes that are not
 * printable text (control characters, invalid UTF-8) show escaped (\x00), so the display is
 * always short and safe for a terminal. */
#include <stdio.h>
void ax_error_print(const struct ax_ctx *cx, FILE *out);

#endif

/* Recording and printing errors. */
#include "error.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "context.h"

static const char *const kind_names[AX_ERR_NKINDS] = {
    [AX_ERR_NONE] = "Error",
    [AX_ERR_SYNTAX] = "SyntaxError",
    [AX_ERR_NAME] = "NameError",
    [AX_ERR_TYPE] = "TypeError",
    [AX_ERR_SHAPE] = "ShapeError",
    [AX_ERR_INDEX] = "IndexError",
    [AX_ERR_VALUE] = "ValueError",
    [AX_ERR_KEY] = "KeyError",
    [AX_ERR_ATTRIBUTE] = "AttributeError",
    [AX_ERR_CONCRETIZATION] = "ConcretizationError",
    [AX_ERR_RECURSION] = "RecursionError",
    [AX_ERR_IMPORT] = "ImportError",
    [AX_ERR_IO] = "IOError",
    [AX_ERR_INTERRUPT] = "KeyboardInterrupt",
    [AX_ERR_MEMORY] = "MemoryError",
    [AX_ERR_ASSERTION] = "AssertionError",
    [AX_ERR_RUNTIME] = "RuntimeError",
};

const char *ax_error_kind_name(ax_error_kind kind) {
    return kind >= 0 && kind < AX_ERR_NKINDS ? kind_names[kind] : "Error";
}

void *ax_error(ax_ctx *cx, ax_error_kind kind, const char *fmt, ...) {
    if (cx->err.kind != AX_ERR_NONE) return NULL;
    cx->err.kind = kind;
    cx->err.has_span = false;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cx->err.message, sizeof cx->err.message, fmt, ap);
    va_end(ap);
    return NULL;
}

void *ax_error_oom(ax_ctx *cx) { return ax_error(cx, AX_ERR_MEMORY, "out of memory"); }

bool ax_error_pending(const ax_ctx *cx) { return cx->err.kind != AX_ERR_NONE; }

/* Copies the first line of `source` that the span covers into out (cut to its size); false
 * if there is no such line. */
static bool copy_line(char *out, size_t cap, const char *source, int line) {
    const char *p = source;
    for (int l = 1; l < line && p; l++) {
        p = strchr(p, '\n');
        if (p) p++;
    }
    if (!p) return false;
    size_t n = strcspn(p, "\n");
    if (n >= cap) n = cap - 1;
    memcpy(out, p, n);
    out[n] = 0;
    return true;
}

void ax_error_set_span(ax_ctx *cx, ax_span span, const char *file, const char *source) {
    ax_error_info *e = &cx->err;
    if (e->kind == AX_ERR_NONE || e->has_span || span.line <= 0) return;
    e->has_span = true;
    e->span = span;
    snprintf(e->file, sizeof e->file, "%s", file ? file : "<input>");
    e->has_source = source && copy_line(e->source, sizeof e->source, source, span.line);
}

void ax_error_clear(ax_ctx *cx) {
    memset(&cx->err, 0, sizeof cx->err);
}

void ax_error_print(const ax_ctx *cx, FILE *out) {
    const ax_error_info *e = &cx->err;
    fprintf(out, "error[%s]: %s\n", ax_error_kind_name(e->kind), e->message);
    if (!e->has_span) return;
    int width = snprintf(NULL, 0, "%d", e->span.line);
    fprintf(out, "%*s--> %s:%d:%d\n", width, "", e->file, e->span.line, e->span.col);
    if (!e->has_source) return;
    fprintf(out, "%*s |\n%d | %s\n%*s | ", width, "", e->span.line, e->source, width, "");
    int len = (int)strlen(e->source);
    int start = e->span.col - 1, end = e->span.end_line == e->span.line ? e->span.end_col - 1 : len;
    if (start > len) start = len;
    if (end <= start) end = start + 1;
    for (int i = 0; i < start; i++) fputc(e->source[i] == '\t' ? '\t' : ' ', out);
    for (int i = start; i < end; i++) fputc('^', out);
    fputc('\n', out);
}

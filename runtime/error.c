/* Recording and printing errors. */
#include "error.h"

#include <limits.h>
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

/* A long line is shown in a window of at most SHOW_MAX bytes that starts SHOW_BEFORE bytes
 * before the span (a 100 MB line must not print 100 MB of source and carets). */
#define SHOW_MAX    AX_ERROR_SHOW_MAX
#define SHOW_BEFORE 60

static bool is_continuation(char c) {
    return ((unsigned char)c & 0xC0) == 0x80;
}

/* Copies the window of line `line` of `source` around byte column `col` into e->source. */
static void copy_window(ax_error_info *e, const char *source, int line, int col) {
    const char *p = source;
    for (int l = 1; l < line && p; l++) {
        p = strchr(p, '\n');
        if (p) p++;
    }
    if (!p) return;
    size_t len = strcspn(p, "\n");
    size_t at = col > 1 ? (size_t)col - 1 : 0, lo = 0, hi = len;
    if (len > SHOW_MAX) {
        lo = at > SHOW_BEFORE ? at - SHOW_BEFORE : 0;
        if (lo > len - SHOW_MAX) lo = len - SHOW_MAX;
        hi = lo + SHOW_MAX;
        /* whole UTF-8 characters only */
        for (int k = 0; k < 3 && lo > 0 && is_continuation(p[lo]); k++) lo++;
        for (int k = 0; k < 3 && hi < len && hi > lo && is_continuation(p[hi]); k++) hi--;
    }
    memcpy(e->source, p + lo, hi - lo); /* hi - lo <= SHOW_MAX */
    e->source[hi - lo] = 0;
    e->source_col = (int)lo + 1;
    e->source_cut_right = hi < len;
    e->has_source = true;
}

void ax_error_set_span(ax_ctx *cx, ax_span span, const char *file, const char *source) {
    ax_error_info *e = &cx->err;
    if (e->kind == AX_ERR_NONE || e->has_span || span.line <= 0) return;
    e->has_span = true;
    e->span = span;
    snprintf(e->file, sizeof e->file, "%s", file ? file : "<input>");
    e->has_source = false;
    if (source) copy_window(e, source, span.line, span.col);
}

void ax_error_clear(ax_ctx *cx) {
    memset(&cx->err, 0, sizeof cx->err);
}

/* One character of a source line as it is displayed: `out` gets its text (the bytes
 * themselves, or an escape for what is not printable text), *width the columns it takes.
 * Returns the number of bytes it covers. */
static size_t display_char(const char *s, char *out, int *width) {
    unsigned char c = (unsigned char)s[0];
    *width = 1;
    if (c == '\t' || (c >= 0x20 && c < 0x7F)) {
        out[0] = (char)c;
        out[1] = 0;
        return 1;
    }
    int n = c >= 0xC2 && c <= 0xDF   ? 2
            : c >= 0xE0 && c <= 0xEF ? 3
            : c >= 0xF0 && c <= 0xF4 ? 4
                                     : 0;
    long cp = n ? c & (0x7F >> n) : -1;
    for (int i = 1; i < n; i++) {
        if (!is_continuation(s[i])) {
            cp = -1;
            break;
        }
        cp = cp << 6 | ((unsigned char)s[i] & 0x3F);
    }
    static const long min_cp[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (n == 0 || cp < min_cp[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
        *width = snprintf(out, 8, "\\x%02x", c); /* not UTF-8 text, or a control character */
        return 1;
    }
    /* C1 controls and the bidirectional overrides would disturb the display */
    if (cp <= 0x9F || (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069)) {
        *width = snprintf(out, 8, "\\u%04lx", cp);
        return (size_t)n;
    }
    memcpy(out, s, (size_t)n);
    out[n] = 0;
    return (size_t)n;
}

/* The source line and, under it, the carets marking bytes [start, end) of it. */
static void print_source(const ax_error_info *e, int start, int end, int width, FILE *out) {
    const char *src = e->source;
    bool cut_left = e->source_col > 1;
    fprintf(out, "%d | %s", e->span.line, cut_left ? "..." : "");
    char text[8];
    int w;
    for (size_t i = 0; src[i];) {
        i += display_char(src + i, text, &w);
        fputs(text, out);
    }
    fprintf(out, "%s\n%*s | %s", e->source_cut_right ? "..." : "", width, "",
            cut_left ? "   " : "");
    int col = 0; /* byte column in src */
    bool marked = false;
    for (size_t i = 0; src[i] && col < end;) {
        size_t n = display_char(src + i, text, &w);
        bool in = col >= start;
        for (int k = 0; k < w; k++) fputc(in ? '^' : text[0] == '\t' ? '\t' : ' ', out);
        marked |= in;
        i += n;
        col += (int)n;
    }
    if (!marked) fputc('^', out); /* the span starts at the end of the line */
    fputc('\n', out);
}

/* A message may quote the user's strings: control characters other than line breaks and tabs
 * print escaped, so that a message never drives the terminal. */
static void print_message(const char *msg, FILE *out) {
    for (const unsigned char *p = (const unsigned char *)msg; *p; p++)
        if ((*p < 0x20 && *p != '\n' && *p != '\t') || *p == 0x7F)
            fprintf(out, "\\x%02x", *p);
        else
            fputc(*p, out);
}

void ax_error_print(const ax_ctx *cx, FILE *out) {
    const ax_error_info *e = &cx->err;
    fprintf(out, "error[%s]: ", ax_error_kind_name(e->kind));
    print_message(e->message, out);
    fputc('\n', out);
    if (!e->has_span) return;
    int width = snprintf(NULL, 0, "%d", e->span.line);
    fprintf(out, "%*s--> %s:%d:%d\n", width, "", e->file, e->span.line, e->span.col);
    if (!e->has_source) return;
    fprintf(out, "%*s |\n", width, "");
    /* the span in bytes of e->source */
    int len = (int)strlen(e->source), start = e->span.col - e->source_col;
    int end = e->span.end_line == e->span.line ? e->span.end_col - e->source_col : INT_MAX;
    if (start > len) start = len;
    if (start < 0) start = 0;
    if (end <= start) end = start + 1;
    print_source(e, start, end, width, out);
}

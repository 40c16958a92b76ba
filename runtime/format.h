/* Printing arrays exactly as NumPy's str() does, and the REPL's `value : type` form. */
#ifndef AX_FORMAT_H
#define AX_FORMAT_H

#include "array.h"

/* A growable string. When an allocation fails, `failed` is set and every later append is
 * dropped: what is there is a prefix of the text, which a caller that keeps it (print, str,
 * a jit cache key) must turn into a MemoryError. */
typedef struct ax_strbuf {
    char *data;
    size_t len, cap;
    bool failed;
} ax_strbuf;
void ax_strbuf_init(ax_strbuf *s);
void ax_strbuf_free(ax_strbuf *s);
void ax_strbuf_append(ax_strbuf *s, const char *text);
void ax_strbuf_appendf(ax_strbuf *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* NumPy's str(x): "[0.25       0.19661197 0.10499357]", "0.4199743", "[[1 2]\n [3 4]]",
 * summarised with "..." above 1000 elements. */
void ax_format_array(ax_strbuf *out, const ax_array *x);
/* The str of a rank-0 float the way Python/NumPy print a scalar inside a container: "2.0". */
void ax_format_scalar(ax_strbuf *out, const ax_array *x);
/* The shortest decimal that reads back to the same float of the dtype (f32 or f64), in
 * NumPy's style for scalars: "0.1", "1e-10", "inf", "nan", "2.0". */
void ax_format_float_shortest(ax_strbuf *out, double v, ax_dtype dtype);

#endif

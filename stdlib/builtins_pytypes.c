/* Python's builtins about characters, slices and numbers as text: callable, NoneType (the class
 * of None, for type() and isinstance(), builtins_types.c), ord, chr, slice, divmod, hex, oct,
 * bin, format. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "builtins_lib.h"

/* ---------------------------------------------------------------- callable, NoneType */

static ax_value *bi_callable(ax_interp *in, ax_value *self, const ax_args *args) {
    static const char *const names[] = {"obj", NULL};
    ax_value *v[1];
    if (!ax_bi_parse(in, args, self->builtin->name, names, 1, v) ||
        !ax_bi_required(in, v[0], "callable", "obj"))
        return NULL;
    bool r = v[0]->kind == AX_V_FUNC || v[0]->kind == AX_V_BUILTIN || v[0]->kind == AX_V_DTYPE ||
             (v[0]->kind == AX_V_OBJECT && v[0]->obj.type->call);
    return ax_bi_bool_value(in, r);
}

/* NoneType(): None, as type(None)() is in Python. */
static ax_value *bi_none_type(ax_interp *in, ax_value *self, const ax_args *args) {
    if (!ax_args_check(in, args, self->builtin->name, 0, NULL)) return NULL;
    return ax_none();
}

/* ---------------------------------------------------------------- characters */

static ax_value *bi_ord(ax_interp *in, ax_value *self, const ax_args *args) {
    static const char *const names[] = {"c", NULL};
    ax_value *v[1];
    if (!ax_bi_parse(in, args, self->builtin->name, names, 1, v) ||
        !ax_bi_required(in, v[0], "ord", "c"))
        return NULL;
    if (v[0]->kind != AX_V_STR) {
        char d[128];
        ax_value_describe(d, sizeof d, v[0]);
        return ax_error(in->cx, AX_ERR_TYPE, "ord() expected a string of length 1, but %s found",
                        d);
    }
    const unsigned char *s = (const unsigned char *)v[0]->str;
    int64_t n = ax_value_length(v[0]);
    if (n != 1)
        return ax_error(in->cx, AX_ERR_TYPE,
                        "ord() expected a character, but string of length %lld found",
                        (long long)n);
    int len = s[0] < 0x80 ? 1 : s[0] < 0xE0 ? 2 : s[0] < 0xF0 ? 3 : 4;
    int64_t cp = len == 1 ? s[0] : s[0] & (0x7F >> len);
    for (int i = 1; i < len; i++) cp = cp << 6 | (s[i] & 0x3F);
    return ax_bi_int_value(in, cp);
}

static ax_value *bi_chr(ax_interp *in, ax_value *self, const ax_args *args) {
    static const char *const names[] = {"i", NULL};
    ax_value *v[1];
    int64_t cp;
    if (!ax_bi_parse(in, args, self->builtin->name, names, 1, v) ||
        !ax_bi_required(in, v[0], "chr", "i") ||
        !ax_value_to_int(in, v[0], "chr()'s argument", &cp))
        return NULL;
    if (cp < 0 || cp > 0x10FFFF)
        return ax_error(in->cx, AX_ERR_VALUE, "chr() arg not in range(0x110000)");
    if (cp >= 0xD800 && cp <= 0xDFFF)
        return ax_error(in->cx, AX_ERR_VALUE, "chr(): %#llx is a surrogate, not a character",
                        (long long)cp);
    char s[5] = {0};
    if (cp < 0x80) {
        s[0] = (char)cp;
    } else if (cp < 0x800) {
        s[0] = (char)(0xC0 | cp >> 6), s[1] = (char)(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        s[0] = (char)(0xE0 | cp >> 12), s[1] = (char)(0x80 | (cp >> 6 & 0x3F));
        s[2] = (char)(0x80 | (cp & 0x3F));
    } else {
        s[0] = (char)(0xF0 | cp >> 18), s[1] = (char)(0x80 | (cp >> 12 & 0x3F));
        s[2] = (char)(0x80 | (cp >> 6 & 0x3F)), s[3] = (char)(0x80 | (cp & 0x3F));
    }
    if (cp == 0) return ax_error(in->cx, AX_ERR_VALUE, "chr(0): ax strings cannot hold NUL");
    ax_value *r = ax_value_str(s);
    return r ? r : ax_error_oom(in->cx);
}

/* ---------------------------------------------------------------- slice */

/* A slice bound: None, or a concrete integer (what indexing reads). */
static bool slice_bound(ax_interp *in, ax_value *v, const char *what) {
    int64_t i;
    return !v || v->kind == AX_V_NONE || ax_value_to_int(in, v, what, &i);
}

static ax_value *bi_slice(ax_interp *in, ax_value *self, const ax_args *args) {
    (void)self;
    if (args->nkw) return ax_error(in->cx, AX_ERR_TYPE, "slice() takes no keyword arguments");
    if (args->n < 1 || args->n > 3)
        return ax_error(in->cx, AX_ERR_TYPE, "slice expected 1 to 3 arguments, got %d", args->n);
    ax_value *b[3] = {NULL, NULL, NULL};
    if (args->n == 1)
        b[1] = args->pos[0];
    else
        for (int i = 0; i < args->n; i++) b[i] = args->pos[i];
    static const char *const what[] = {"a slice's start", "a slice's stop", "a slice's step"};
    for (int i = 0; i < 3; i++)
        if (!slice_bound(in, b[i], what[i])) return NULL;
    ax_value *start = ax_value_retain(b[0] ? b[0] : ax_none());
    ax_value *stop = ax_value_retain(b[1] ? b[1] : ax_none());
    ax_value *step = ax_value_retain(b[2] ? b[2] : ax_none());
    ax_value *r = ax_value_slice(start, stop, step);
    return r ? r : ax_error_oom(in->cx);
}

/* ---------------------------------------------------------------- numbers as text */

static ax_value *bi_divmod(ax_interp *in, ax_value *self, const ax_args *args) {
    static const char *const names[] = {"a", "b", NULL};
    ax_value *v[2];
    if (!ax_bi_parse(in, args, self->builtin->name, names, 2, v) ||
        !ax_bi_required(in, v[0], "divmod", "a") || !ax_bi_required(in, v[1], "divmod", "b"))
        return NULL;
    ax_array *a = ax_value_to_array(in, v[0], "divmod()'s a");
    ax_array *b = a ? ax_value_to_array(in, v[1], "divmod()'s b") : NULL;
    ax_value *items[2] = {NULL, NULL};
    if (b) items[0] = ax_np_wrap_take(in, ax_np_binop(in->cx, AX_OP_FLOORDIV, a, b));
    if (items[0]) items[1] = ax_np_wrap_take(in, ax_np_binop(in->cx, AX_OP_MOD, a, b));
    if (a) ax_array_release(a);
    if (b) ax_array_release(b);
    if (!items[1]) {
        if (items[0]) ax_value_release(items[0]);
        return NULL;
    }
    ax_value *r = ax_value_tuple(2, items);
    return r ? r : ax_error_oom(in->cx);
}

/* hex / oct / bin of an integer: Python's 0x.., 0o.., 0b.. (with a sign). */
static ax_value *int_text(ax_interp *in, const ax_args *args, const char *fname, int base) {
    static const char *const names[] = {"x", NULL};
    ax_value *v[1];
    int64_t x;
    if (!ax_bi_parse(in, args, fname, names, 1, v) || !ax_bi_required(in, v[0], fname, "x"))
        return NULL;
    if (v[0]->kind != AX_V_ARRAY || !ax_dtype_is_int(v[0]->arr->dtype) || v[0]->arr->ndim != 0) {
        char d[128];
        ax_value_describe(d, sizeof d, v[0]);
        return ax_error(in->cx, AX_ERR_TYPE, "%s() takes an integer, not %s", fname, d);
    }
    if (!ax_value_to_int(in, v[0], "the number", &x)) return NULL;
    uint64_t u = x < 0 ? 0 - (uint64_t)x : (uint64_t)x;
    char digits[72], out[80];
    int n = 0;
    do {
        digits[n++] = "0123456789abcdef"[u % (uint64_t)base];
        u /= (uint64_t)base;
    } while (u);
    int k = 0;
    if (x < 0) out[k++] = '-';
    out[k++] = '0';
    out[k++] = base == 16 ? 'x' : base == 8 ? 'o' : 'b';
    while (n) out[k++] = digits[--n];
    out[k] = 0;
    ax_value *r = ax_value_str(out);
    return r ? r : ax_error_oom(in->cx);
}

static ax_value *bi_hex(ax_interp *in, ax_value *self, const ax_args *args) {
    return int_text(in, args, self->builtin->name, 16);
}
static ax_value *bi_oct(ax_interp *in, ax_value *self, const ax_args *args) {
    return int_text(in, args, self->builtin->name, 8);
}
static ax_value *bi_bin(ax_interp *in, ax_value *self, const ax_args *args) {
    return int_text(in, args, self->builtin->name, 2);
}

/* format(value, spec=''): "{:spec}".format(value). */
static ax_value *bi_format(ax_interp *in, ax_value *self, const ax_args *args) {
    static const char *const names[] = {"value", "format_spec", NULL};
    ax_value *v[2];
    if (!ax_bi_parse(in, args, self->builtin->name, names, 2, v) ||
        !ax_bi_required(in, v[0], "format", "value"))
        return NULL;
    const char *spec = v[1] ? ax_bi_str(in, v[1], "format()'s format_spec") : "";
    if (!spec) return NULL;
    if (strchr(spec, '{') || strchr(spec, '}'))
        return ax_error(in->cx, AX_ERR_VALUE, "format(): invalid format spec '%s'", spec);
    size_t len = strlen(spec);
    char *tmpl = malloc(len + 4);
    if (!tmpl) return ax_error_oom(in->cx);
    snprintf(tmpl, len + 4, "{:%s}", spec);
    ax_value *t = ax_value_str(tmpl);
    free(tmpl);
    ax_value *method = t ? ax_getattr(in, t, "format") : ax_error_oom(in->cx);
    if (t) ax_value_release(t);
    ax_value *r = method ? ax_call1(in, method, v[0]) : NULL;
    if (method) ax_value_release(method);
    return r;
}

const ax_builtin_def ax_builtins_pytypes[] = {
    {"callable", bi_callable, "callable(obj): whether obj can be called", 0},
    {"NoneType", bi_none_type, "class NoneType: the class of None (type(None)), for isinstance", 0},
    {"ord", bi_ord, "ord(c): the code point of the one-character string c (ord('a') == 97)", 0},
    {"chr", bi_chr, "chr(i): the one-character string of code point i (chr(97) == 'a')", 0},
    {"slice", bi_slice,
     "class slice(stop) / slice(start, stop, step=None): x[slice(1, 3)] is x[1:3]", 0},
    {"divmod", bi_divmod, "divmod(a, b): (a // b, a % b)", 0},
    {"hex", bi_hex, "hex(x): the integer x in base 16, '0xff'", 0},
    {"oct", bi_oct, "oct(x): the integer x in base 8, '0o17'", 0},
    {"bin", bi_bin, "bin(x): the integer x in base 2, '0b101'", 0},
    {"format", bi_format, "format(value, format_spec=''): value formatted as '{:spec}' does", 0},
    {NULL, NULL, NULL, 0},
};

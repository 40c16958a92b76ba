/* Array creation builtins: array, zeros, ones, full, *_like, arange, linspace, eye, meshgrid. */
#include "builtins_lib.h"

#include <stdlib.h>
#include <string.h>

/* array(object, dtype=None): a new array (lists become strongly typed arrays). */
static ax_value *bi_array(ax_interp *in, ax_value *self, const ax_args *args) {
    static const char *const names[] = {"object", "dtype", "copy", NULL};
    ax_value *v[3];
    const char *f = self->builtin->name;
    int dtype;
    if (!ax_bi_parse(in, args, f, names, 2, v) || !ax_bi_required(in, v[0], f, "object") ||
        !ax_bi_dtype(in, v[1], &dtype))
        return NULL;
    return ax_np_wrap_take(in, ax_np_array(in, v[0], dtype, f));
}

/* The dtype of a creation function: the given one, else the default float. */
static bool creation_dtype(ax_interp *in, ax_value *v, int *dtype) {
    if (!ax_bi_dtype(in, v, dtype)) return false;
    if (*dtype < 0) *dtype = (int)ax_np_default_float(in->cx);
    return true;
}

static ax_value *filled(ax_interp *in, ax_value *self, const ax_args *args, double value) {
    static const char *const names[] = {"shape", "dtype", NULL};
    ax_value *v[2];
    const char *f = self->builtin->name;
    int ndim, dtype;
    int64_t shape[AX_MAX_RANK];
    if (!ax_bi_parse(in, args, f, names, 2, v) || !ax_bi_required(in, v[0], f, "shape") ||
        !ax_bi_shape(in, v[0], "shape", &ndim, shape) || !creation_dtype(in, v[1], &dtype))
        return NULL;
    ax_array *s = ax_np_scalar(in->cx, (ax_dtype)dtype, value);
    ax_array *r = ax_np_full(in->cx, ndim, shape, s, (ax_dtype)dtype);
    ax_array_release(s);
    return ax_np_wrap_take(in, r);
}

static ax_value *bi_zeros(ax_interp *in, ax_value *self, const ax_args *args) {
    return filled(in, self, args, 0.0);
}
static ax_value *bi_ones(ax_interp *in, ax_value *self, const ax_args *args) {
    return filled(in, self, args, 1.0);
}

/* The dtype of a fill value: its own when strongly typed, else the default of its kind. */
static ax_dtype fill_dtype(const ax_ctx *cx, const ax_array *v) {
    if (!v->weak) return v->dtype;
    if (ax_dtype_is_float(v->dtype)) return ax_dtype_default_float(cx->x64);
    if (ax_dtype_is_int(v->dtype)) return ax_dtype_default_int(cx->x64);
    return v->dtype;
}

static ax_value *bi_full(ax_interp *in, ax_value *self, const ax_args *args) {
    static const char *const names[] = {"shape", "fill_value", "dtype", NULL};
    ax_value *v[3];
    const char *f = self->builtin->name;
    int ndim, dtype;
    int64_t shape[AX_MAX_RANK];
    if (!ax_bi_parse(in, args, f, names, 3, v) || !ax_bi_required(in, v[0], f, "shape") ||
        !ax_bi_required(in, v[1], f, "fill_value") ||
        !ax_bi_shape(in, v[0], "shape", &ndim, shape) || !ax_bi_dtype(in, v[2], &dtype))
        return NULL;
    ax_array *fill = ax_np_asarray(in, v[1], f);
    if (!fill) return NULL;
    ax_dtype t = dtype >= 0 ? (ax_dtype)dtype : fill_dtype(in->cx, fill);
    ax_array *r = ax_np_full(in->cx, ndim, shape, fill, t);
    ax_array_release(fill);
    return ax_np_wrap_take(in, r);
}

/* zeros_like / ones_like / full_like (fill given) / empty_like. */
static ax_value *like(ax_interp *in, ax_value *self, const ax_args *args, double value,
                      bool has_fill) {
    static const char *const names[] = {"a", "dtype", "shape", NULL};
    static const char *const fill_names[] = {"a", "fill_value", "dtype", "shape", NULL};
    ax_value *v[4];
    const char *f = self->builtin->name;
    if (!ax_bi_parse(in, args, f, has_fill ? fill_names : names, has_fill ? 4 : 3, v) ||
        !ax_bi_required(in, v[0], f, "a") ||
        (has_fill && !ax_bi_required(in, v[1], f, "fill_value")))
        return NULL;
    ax_value *dtype_v = v[has_fill ? 2 : 1], *shape_v = v[has_fill ? 3 : 2];
    int dtype, ndim;
    int64_t shape[AX_MAX_RANK];
    ax_array *a = ax_np_asarray(in, v[0], f);
    if (!a || !ax_bi_dtype(in, dtype_v, &dtype)) {
        ax_array_release(a);
        return NULL;
    }
    ndim = a->ndim;
    memcpy(shape, a->shape, (size_t)ndim * sizeof *shape);
    ax_dtype t = dtype >= 0 ? (ax_dtype)dtype : a->dtype;
    ax_array_release(a);
    if (shape_v && shape_v->kind != AX_V_NONE && !ax_bi_shape(in, shape_v, "shape", &ndim, shape))
        return NULL;
    ax_array *fill = has_fill ? ax_np_asarray(in, v[1], f) : ax_np_scalar(in->cx, t, value);
    ax_array *r = fill ? ax_np_full(in->cx, ndim, shape, fill, t) : NULL;
    ax_array_release(fill);
    return ax_np_wrap_take(in, r);
}

static ax_value *bi_zeros_like(ax_interp *in, ax_value *self, const ax_args *args) {
    return like(in, self, args, 0.0, false);
}
static ax_value *bi_ones_like(ax_interp *in, ax_value *self, const ax_args *args) {
    return like(in, self, args, 1.0, false);
}
static ax_value *bi_full_like(ax_interp *in, ax_value *self, const ax_args *args) {
    return like(in, self, args, 0.0, true);
}

static bool is_float_value(ax_value *v) {
    return v && v->kind == AX_V_ARRAY && ax_dtype_is_float(v->arr->dtype);
}

/* arange(start, stop=None, step=None, dtype=None), with NumPy's dtype inference. */
static ax_value *bi_arange(ax_interp *in, ax_value *self, const ax_args *args) {
    static const char *const names[] = {"start", "stop", "step", "dtype", NULL};
    ax_value *v[4];
    const char *f = self->builtin->name;
    double start, stop, step;
    int dtype;
    if (!ax_bi_parse(in, args, f, names, 4, v) || !ax_bi_required(in, v[0], f, "start") ||
        !ax_bi_double(in, v[0], "arange start", 0, &start) ||
        !ax_bi_double(in, v[1], "arange stop", 0, &stop) ||
        !ax_bi_double(in, v[2], "arange step", 1, &step) || !ax_bi_dtype(in, v[3], &dtype))
        return NULL;
    if (!v[1] || v[1]->kind == AX_V_NONE) {
        stop = start;
        start = 0;
    }
    if (dtype < 0)
        dtype = is_float_value(v[0]) || is_float_value(v[1]) || is_float_value(v[2])
                    ? (int)ax_np_default_float(in->cx)
                    : (int)ax_np_default_int(in->cx);
    return ax_np_wrap_take(in, ax_np_arange(in->cx, start, stop, step, (ax_dtype)dtype));
}

/* JAX's linspace: start * (1 - t) + stop * t for t = iota / div, then stop appended. */
static ax_array *linspace(ax_ctx *cx, ax_array *start, ax_array *stop, int64_t num, bool endpoint,
                          ax_dtype t) {
    ax_scope s;
    ax_scope_begin(&s, cx);
    ax_array *a = ax_scope_own(&s, ax_np_astype(cx, start, t, false));
    ax_array *b = ax_scope_own(&s, ax_np_astype(cx, stop, t, false));
    ax_array *r = NULL;
    int64_t div = endpoint ? num - 1 : num, one = 1;
    if (num > 1) {
        ax_array *step = ax_scope_own(&s, ax_np_iota(cx, t, 1, &div, 0));
        step = ax_lax_div(&s, step, ax_lax_scalar_like(&s, step, (double)div));
        ax_array *rest = ax_lax_sub(&s, ax_lax_scalar_like(&s, step, 1.0), step);
        r = ax_lax_add(&s, ax_lax_mul(&s, a, rest), ax_lax_mul(&s, b, step));
        if (endpoint && r) {
            ax_array *last = ax_lax_reshape(&s, b, 1, &one);
            r = ax_scope_own(&s, ax_np_concatenate(cx, 2, (ax_array *[]){r, last}, 0));
        }
    } else if (num == 1) {
        r = ax_lax_reshape(&s, a, 1, &one);
    } else {
        int64_t zero = 0;
        r = ax_scope_own(&s, ax_np_iota(cx, t, 1, &zero, 0));
    }
    r = ax_scope_keep(&s, r);
    ax_scope_end(&s);
    return r;
}

static ax_value *bi_linspace(ax_interp *in, ax_value *self, const ax_args *args) {
    static const char *const names[] = {"start", "stop", "num", "endpoint", "dtype", NULL};
    ax_value *v[5];
    const char *f = self->builtin->name;
    int64_t num;
    bool endpoint;
    int dtype;
    if (!ax_bi_parse(in, args, f, names, 5, v) || !ax_bi_required(in, v[0], f, "start") ||
        !ax_bi_required(in, v[1], f, "stop") || !ax_bi_int(in, v[2], "num", 50, &num) ||
        !ax_bi_bool(in, v[3], "endpoint", true, &endpoint) || !ax_bi_dtype(in, v[4], &dtype))
        return NULL;
    if (num < 0)
        return ax_error(in->cx, AX_ERR_VALUE, "number of samples, %lld, must be non-negative",
                        (long long)num);
    ax_array *a = ax_np_asarray(in, v[0], f), *b = a ? ax_np_asarray(in, v[1], f) : NULL;
    ax_array *r = NULL;
    if (b && (a->ndim || b->ndim)) {
        ax_error(in->cx, AX_ERR_VALUE, "linspace: start and stop must be scalars");
    } else if (b) {
        bool weak;
        ax_dtype t = ax_dtype_promote(a->dtype, a->weak, b->dtype, b->weak, &weak);
        if (!ax_dtype_is_float(t)) t = ax_np_default_float(in->cx);
        if (weak) t = ax_np_default_float(in->cx);
        ax_array *lin = linspace(in->cx, a, b, num, endpoint, t);
        r = dtype >= 0 ? ax_np_astype(in->cx, lin, (ax_dtype)dtype, false) : ax_array_retain(lin);
        ax_array_release(lin);
    }
    ax_array_release(a);
    ax_array_release(b);
    return ax_np_wrap_take(in, r);
}

/* An n x m bool array, true where column - row == k (op EQ) or <= k (op LE). */
static ax_array *diagonal_mask(ax_ctx *cx, int64_t n, int64_t m, int64_t k, ax_prim op) {
    int64_t shape[2] = {n, m};
    ax_scope s;
    ax_scope_begin(&s, cx);
    ax_array *rows = ax_scope_own(&s, ax_np_iota(cx, AX_I64, 2, shape, 0));
    ax_array *cols = ax_scope_own(&s, ax_np_iota(cx, AX_I64, 2, shape, 1));
    ax_array *d = ax_lax_sub(&s, cols, rows);
    ax_array *r = ax_scope_keep(&s, ax_lax_binary(&s, op, d, ax_lax_scalar_like(&s, d, (double)k)));
    ax_scope_end(&s);
    return r;
}

static ax_value *bi_eye(ax_interp *in, ax_value *self, const ax_args *args) {
    static const char *const names[] = {"N", "M", "k", "dtype", NULL};
    ax_value *v[4];
    const char *f = self->builtin->name;
    int64_t n, m, k;
    int dtype;
    if (!ax_bi_parse(in, args, f, names, 4, v) || !ax_bi_required(in, v[0], f, "N") ||
        !ax_bi_int(in, v[0], "N", 0, &n) || !ax_bi_int(in, v[1], "M", n, &m) ||
        !ax_bi_int(in, v[2], "k", 0, &k) || !creation_dtype(in, v[3], &dtype))
        return NULL;
    if (n < 0 || m < 0)
        return ax_error(in->cx, AX_ERR_VALUE, "negative dimensions are not allowed");
    ax_array *mask = diagonal_mask(in->cx, n, m, k, AX_P_EQ);
    ax_array *r = ax_np_astype(in->cx, mask, (ax_dtype)dtype, false);
    ax_array_release(mask);
    return ax_np_wrap_take(in, r);
}

static ax_value *bi_identity(ax_interp *in, ax_value *self, const ax_args *args) {
    static const char *const names[] = {"n", "dtype", NULL};
    ax_value *v[2];
    const char *f = self->builtin->name;
    int64_t n;
    int dtype;
    if (!ax_bi_parse(in, args, f, names, 2, v) || !ax_bi_required(in, v[0], f, "n") ||
        !ax_bi_int(in, v[0], "n", 0, &n) || !creation_dtype(in, v[1], &dtype))
        return NULL;
    if (n < 0) return ax_error(in->cx, AX_ERR_VALUE, "negative dimensions are not allowed");
    ax_array *mask = diagonal_mask(in->cx, n, n, 0, AX_P_EQ);
    ax_array *r = ax_np_astype(in->cx, mask, (ax_dtype)dtype, false);
    ax_array_release(mask);
    return ax_np_wrap_take(in, r);
}

/* tril / triu: m with the elements above (tril) / below (triu) diagonal k zeroed. */
static ax_value *triangle(ax_interp *in, ax_value *self, const ax_args *args, bool lower) {
    static const char *const names[] = {"m", "k", NULL};
    ax_value *v[2];
    const char *f = self->builtin->name;
    int64_t k;
    if (!ax_bi_parse(in, args, f, names, 2, v) || !ax_bi_required(in, v[0], f, "m") ||
        !ax_bi_int(in, v[1], "k", 0, &k))
        return NULL;
    ax_ctx *cx = in->cx;
    ax_array *m = ax_np_asarray(in, v[0], f);
    if (m && m->ndim < 2) {
        ax_array_release(m);
        return ax_error(cx, AX_ERR_VALUE, "%s needs an array of rank 2 or more", f);
    }
    if (!m) return NULL;
    int64_t rows = m->shape[m->ndim - 2], cols = m->shape[m->ndim - 1];
    /* col - row lies in [-rows, cols]: a k beyond that means the same as its end (and k - 1
     * below cannot overflow) */
    k = k < -rows - 1 ? -rows - 1 : k > cols + 1 ? cols + 1 : k;
    /* lower: keep col - row <= k; upper: keep col - row >= k, i.e. not (col - row <= k - 1). */
    ax_array *keep = diagonal_mask(cx, rows, cols, lower ? k : k - 1, AX_P_LE);
    ax_array *zero = ax_np_scalar(cx, m->dtype, 0);
    ax_array *r = lower ? ax_np_where(cx, keep, m, zero) : ax_np_where(cx, keep, zero, m);
    ax_array_release(keep);
    ax_array_release(zero);
    ax_array_release(m);
    return ax_np_wrap_take(in, r);
}

static ax_value *bi_tril(ax_interp *in, ax_value *self, const ax_args *args) {
    return triangle(in, self, args, true);
}
static ax_value *bi_triu(ax_interp *in, ax_value *self, const ax_args *args) {
    return triangle(in, self, args, false);
}

/* meshgrid(*xs, indexing='xy'): coordinate arrays, as a list. */
static ax_value *bi_meshgrid(ax_interp *in, ax_value *self, const ax_args *args) {
    static const char *const kw[] = {"indexing", NULL};
    const char *f = self->builtin->name;
    if (!ax_bi_keywords(in, args, f, kw)) return NULL;
    ax_value *ix = ax_bi_kwarg(args, "indexing");
    const char *indexing = ix ? ax_bi_str(in, ix, "indexing") : "xy";
    if (!indexing) return NULL;
    bool xy = !strcmp(indexing, "xy");
    if (!xy && strcmp(indexing, "ij"))
        return ax_error(in->cx, AX_ERR_VALUE, "indexing must be 'xy' or 'ij', got '%s'", indexing);
    int n = args->n;
    if (!ax_rank_check(in->cx, "meshgrid", n)) return NULL; /* one dimension per array */
    ax_array *xs[AX_MAX_RANK] = {NULL};
    ax_value *outs[AX_MAX_RANK] = {NULL};
    int64_t shape[AX_MAX_RANK];
    int pos[AX_MAX_RANK], i = 0;
    bool ok = true;
    for (; i < n && ok; i++) {
        ax_array *a = ax_np_asarray(in, args->pos[i], f);
        xs[i] = ax_np_ravel(in->cx, a);
        ax_array_release(a);
        ok = xs[i] != NULL;
    }
    for (i = 0; i < n && ok; i++) {
        pos[i] = xy && n >= 2 && i < 2 ? 1 - i : i;
        shape[pos[i]] = xs[i]->shape[0];
    }
    for (i = 0; i < n && ok; i++) {
        ax_scope s;
        ax_scope_begin(&s, in->cx);
        ax_array *b = ax_scope_keep(&s, ax_lax_broadcast_in_dim(&s, xs[i], n, shape, &pos[i]));
        ax_scope_end(&s);
        ok = (outs[i] = ax_np_wrap_take(in, b)) != NULL;
    }
    for (int j = 0; j < n; j++) ax_array_release(xs[j]);
    if (ok) return ax_value_or_oom(in, ax_value_list(n, outs));
    for (int j = 0; j < n; j++)
        if (outs[j]) ax_value_release(outs[j]);
    return NULL;
}

static ax_value *bi_copy(ax_interp *in, ax_value *self, const ax_args *args) {
    static const char *const names[] = {"a", NULL};
    ax_value *v[1];
    const char *f = self->builtin->name;
    if (!ax_bi_parse(in, args, f, names, 1, v) || !ax_bi_required(in, v[0], f, "a")) return NULL;
    return ax_np_wrap_take(in,
                           ax_np_asarray(in, v[0], f)); /* arrays are immutable: no copy needed */
}

#define NP AX_BI_NP

const ax_builtin_def ax_builtins_create[] = {
    {"array", bi_array, "array(object, dtype=None): an array from numbers, lists or arrays", NP},
    {"asarray", bi_array, "asarray(a, dtype=None): a as an array", NP},
    {"zeros", bi_zeros, "zeros(shape, dtype=f32): an array of zeros", NP},
    {"ones", bi_ones, "ones(shape, dtype=f32): an array of ones", NP},
    {"empty", bi_zeros, "empty(shape, dtype=f32): an array (of zeros: arrays are immutable)", NP},
    {"full", bi_full, "full(shape, fill_value, dtype=None): an array filled with fill_value", NP},
    {"zeros_like", bi_zeros_like, "zeros_like(a, dtype=None): zeros of a's shape and dtype", NP},
    {"ones_like", bi_ones_like, "ones_like(a, dtype=None): ones of a's shape and dtype", NP},
    {"empty_like", bi_zeros_like, "empty_like(a, dtype=None): zeros of a's shape and dtype", NP},
    {"full_like", bi_full_like,
     "full_like(a, fill_value, dtype=None): fill_value in a's shape and dtype", NP},
    {"arange", bi_arange, "arange(start, stop=None, step=1, dtype=None): evenly spaced values", NP},
    {"linspace", bi_linspace,
     "linspace(start, stop, num=50, endpoint=True, dtype=None): num evenly spaced values", NP},
    {"eye", bi_eye, "eye(N, M=None, k=0, dtype=f32): ones on diagonal k, zeros elsewhere", NP},
    {"identity", bi_identity, "identity(n, dtype=f32): the n x n identity matrix", NP},
    {"tril", bi_tril, "tril(m, k=0): m with the elements above diagonal k zeroed", NP},
    {"triu", bi_triu, "triu(m, k=0): m with the elements below diagonal k zeroed", NP},
    {"meshgrid", bi_meshgrid, "meshgrid(*xs, indexing='xy'): coordinate matrices, as a list", NP},
    {"copy", bi_copy, "copy(a): a (arrays are immutable, so this is a itself)", NP},
    {NULL, NULL, NULL, 0},
};

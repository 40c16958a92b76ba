/* Reductions with NumPy's conventions: negative axes, keepdims, JAX's accumulation dtypes,
 * mean/var/std in floating point, arg-reductions and cumulative sums. */
#include "np.h"

#include <stdlib.h>
#include <string.h>

bool ax_np_axis(ax_ctx *cx, int64_t axis, int ndim, int *out) {
    if (axis < -ndim || axis >= ndim) {
        ax_error(cx, AX_ERR_VALUE, "axis %lld is out of bounds for array of dimension %d",
                 (long long)axis, ndim);
        return false;
    }
    *out = (int)(axis < 0 ? axis + ndim : axis);
    return true;
}

static int compare_ints(const void *a, const void *b) {
    return *(const int *)a - *(const int *)b;
}

/* Puts the reduced axes back as size-1 dimensions. */
static ax_array *keep_dims_take(ax_ctx *cx, ax_array *r, int naxes, const int *axes) {
    if (!r || naxes == 0) return r;
    ax_params p = {.naxes = naxes};
    memcpy(p.axes, axes, (size_t)naxes * sizeof *axes);
    qsort(p.axes, (size_t)naxes, sizeof *p.axes, compare_ints);
    ax_array *k = ax_bind1(cx, AX_P_EXPAND_DIMS, 1, &r, &p);
    ax_array_release(r);
    return k;
}

ax_array *ax_np_reduce(ax_ctx *cx, ax_prim p, ax_array *x, int naxes, const int *axes,
                       bool keepdims) {
    if (!x) return NULL;
    if (naxes == 0) return ax_array_retain(x);
    ax_params prm = {.naxes = naxes};
    memcpy(prm.axes, axes, (size_t)naxes * sizeof *axes);
    qsort(prm.axes, (size_t)naxes, sizeof *prm.axes, compare_ints);
    ax_array *r = ax_bind1(cx, p, 1, &x, &prm);
    return keepdims ? keep_dims_take(cx, r, naxes, prm.axes) : r;
}

/* The dtype JAX accumulates sums and products in: bools and narrow integers widen to the
 * default integer of their signedness. */
static ax_dtype sum_dtype(const ax_ctx *cx, ax_dtype t) {
    if (t == AX_BOOL) return ax_dtype_default_int(cx->x64);
    if (t == AX_U8) return AX_U32;
    if (t == AX_I32 && cx->x64) return AX_I64;
    return t;
}

ax_array *ax_np_sum(ax_ctx *cx, ax_prim p, ax_array *x, int naxes, const int *axes, bool keepdims,
                    int dtype) {
    if (!x) return NULL;
    ax_dtype t = dtype >= 0 ? (ax_dtype)dtype : sum_dtype(cx, x->dtype);
    ax_array *c = ax_np_astype(cx, x, t, x->weak && dtype < 0);
    ax_array *r = ax_np_reduce(cx, p, c, naxes, axes, keepdims);
    ax_array_release(c);
    return r;
}

static int64_t reduced_count(const ax_array *x, int naxes, const int *axes) {
    int64_t n = 1;
    for (int i = 0; i < naxes; i++) n *= x->shape[axes[i]];
    return n;
}

/* r / n for the count n of reduced elements, in r's dtype. */
static ax_array *divide_by_count_take(ax_ctx *cx, ax_array *r, double n) {
    if (!r) return NULL;
    ax_array *d = ax_np_scalar(cx, r->dtype, n);
    ax_array *q = d ? ax_bind_binary(cx, AX_P_DIV, r, d) : NULL;
    ax_array_release(d);
    ax_array_release(r);
    return q;
}

ax_array *ax_np_mean(ax_ctx *cx, ax_array *x, int naxes, const int *axes, bool keepdims,
                     int dtype) {
    if (!x) return NULL;
    ax_array *f =
        dtype >= 0 ? ax_np_astype(cx, x, (ax_dtype)dtype, false) : ax_np_to_inexact(cx, x);
    if (f && !ax_dtype_is_float(f->dtype)) {
        ax_array *g = ax_np_to_inexact(cx, f);
        ax_array_release(f);
        f = g;
    }
    ax_array *s = ax_np_reduce(cx, AX_P_REDUCE_SUM, f, naxes, axes, keepdims);
    ax_array_release(f);
    return divide_by_count_take(cx, s, (double)reduced_count(x, naxes, axes));
}

ax_array *ax_np_var(ax_ctx *cx, ax_array *x, int naxes, const int *axes, bool keepdims, double ddof,
                    bool std) {
    if (!x) return NULL;
    ax_scope s;
    ax_scope_begin(&s, cx);
    ax_array *f = ax_scope_own(&s, ax_np_to_inexact(cx, x));
    ax_array *m = ax_scope_own(&s, ax_np_mean(cx, f, naxes, axes, true, -1));
    ax_array *d = ax_scope_own(&s, f && m ? ax_np_binary(cx, AX_P_SUB, "subtract", f, m) : NULL);
    ax_array *sq = ax_lax_unary(&s, AX_P_SQUARE, d);
    ax_array *sum = ax_scope_own(&s, ax_np_reduce(cx, AX_P_REDUCE_SUM, sq, naxes, axes, keepdims));
    ax_array *v = divide_by_count_take(cx, ax_scope_keep(&s, sum),
                                       (double)reduced_count(x, naxes, axes) - ddof);
    ax_scope_end(&s);
    if (!std || !v) return v;
    ax_array *r = ax_bind_unary(cx, AX_P_SQRT, v);
    ax_array_release(v);
    return r;
}

ax_array *ax_np_extremum(ax_ctx *cx, ax_prim p, ax_array *x, int naxes, const int *axes,
                         bool keepdims) {
    if (!x) return NULL;
    for (int i = 0; i < naxes; i++)
        if (x->shape[axes[i]] == 0)
            return ax_error(cx, AX_ERR_VALUE,
                            "zero-size array to reduction operation %s which has no identity",
                            p == AX_P_REDUCE_MAX ? "maximum" : "minimum");
    if (x->dtype == AX_BOOL) p = p == AX_P_REDUCE_MAX ? AX_P_REDUCE_OR : AX_P_REDUCE_AND;
    return ax_np_reduce(cx, p, x, naxes, axes, keepdims);
}

ax_array *ax_np_all_any(ax_ctx *cx, bool all, ax_array *x, int naxes, const int *axes,
                        bool keepdims) {
    ax_array *b = ax_np_to_bool(cx, x);
    ax_array *r =
        ax_np_reduce(cx, all ? AX_P_REDUCE_AND : AX_P_REDUCE_OR, b, naxes, axes, keepdims);
    ax_array_release(b);
    return r;
}

ax_array *ax_np_argext(ax_ctx *cx, bool max, ax_array *x, int axis, bool keepdims) {
    if (!x) return NULL;
    bool flat = axis < 0;
    ax_array *y = flat ? ax_np_ravel(cx, x) : ax_array_retain(x);
    if (!y) return NULL;
    if (flat) axis = 0;
    if (y->shape[axis] == 0) {
        ax_array_release(y);
        return ax_error(cx, AX_ERR_VALUE, "attempt to get %s of an empty sequence",
                        max ? "argmax" : "argmin");
    }
    ax_params p = {.naxes = 1, .dtype = ax_np_default_int(cx)};
    p.axes[0] = axis;
    ax_array *r = ax_bind1(cx, max ? AX_P_ARGMAX : AX_P_ARGMIN, 1, &y, &p);
    ax_array_release(y);
    if (!keepdims || !r) return r;
    if (!flat) return keep_dims_take(cx, r, 1, &axis);
    int64_t ones[AX_MAX_RANK];
    for (int i = 0; i < x->ndim; i++) ones[i] = 1;
    ax_array *k = ax_np_reshape(cx, r, x->ndim, ones);
    ax_array_release(r);
    return k;
}

ax_array *ax_np_cumulative(ax_ctx *cx, ax_prim p, ax_array *x, int axis, int dtype) {
    if (!x) return NULL;
    bool flat = axis < 0;
    ax_array *y = flat ? ax_np_ravel(cx, x) : ax_array_retain(x);
    ax_dtype t = dtype >= 0 ? (ax_dtype)dtype : sum_dtype(cx, x->dtype);
    ax_array *c = ax_np_astype(cx, y, t, y && y->weak && dtype < 0);
    ax_array_release(y);
    if (!c) return NULL;
    ax_params prm = {.naxes = 1};
    prm.axes[0] = flat ? 0 : axis;
    ax_array *r = ax_bind1(cx, p, 1, &c, &prm);
    ax_array_release(c);
    return r;
}

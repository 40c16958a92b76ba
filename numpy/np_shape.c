/* Shape manipulation and array creation with NumPy's conventions, bound as primitives. */
#include "np.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static void *shape_value_error(ax_ctx *cx, const char *fmt, const ax_array *x) {
    char tx[160];
    ax_array_type_format(tx, sizeof tx, x);
    return ax_error(cx, AX_ERR_VALUE, fmt, tx);
}

ax_array *ax_np_scalar(ax_ctx *cx, ax_dtype dtype, double v) {
    return ax_array_scalar(cx, dtype, v);
}

ax_array *ax_np_reshape(ax_ctx *cx, ax_array *x, int ndim, const int64_t *shape) {
    if (!x) return NULL;
    if (!ax_rank_check(cx, "reshape", ndim)) return NULL;
    int64_t s[AX_MAX_RANK] = {0};
    int infer = -1;
    for (int i = 0; i < ndim; i++) {
        s[i] = shape[i];
        if (shape[i] != -1) continue;
        if (infer >= 0)
            return ax_error(cx, AX_ERR_VALUE, "can only specify one unknown dimension (-1)");
        infer = i;
        s[i] = 1; /* for the size check */
    }
    if (!ax_shape_check(cx, "reshape", x->dtype, ndim, s)) return NULL;
    int64_t known = ax_shape_size(ndim, s);
    if (infer >= 0 && known > 0 && x->size % known == 0) s[infer] = x->size / known;
    if ((infer >= 0 && (known == 0 || x->size % known)) || ax_shape_size(ndim, s) != x->size) {
        char ts[200];
        ax_shape_format(ts, sizeof ts, ndim, shape);
        return ax_error(cx, AX_ERR_VALUE, "cannot reshape array of size %lld into shape %s",
                        (long long)x->size, ts);
    }
    if (ax_shape_equal(x->ndim, x->shape, ndim, s)) return ax_array_retain(x);
    ax_params p = {.ndim = ndim};
    memcpy(p.shape, s, (size_t)ndim * sizeof *s);
    return ax_bind1(cx, AX_P_RESHAPE, 1, &x, &p);
}

ax_array *ax_np_ravel(ax_ctx *cx, ax_array *x) {
    if (!x) return NULL;
    int64_t n = x->size;
    return ax_np_reshape(cx, x, 1, &n);
}

ax_array *ax_np_transpose(ax_ctx *cx, ax_array *x, const int *perm) {
    if (!x) return NULL;
    ax_params p = {.naxes = x->ndim};
    bool seen[AX_MAX_RANK] = {false}, identity = true;
    for (int i = 0; i < x->ndim; i++) {
        int a = perm ? perm[i] : x->ndim - 1 - i;
        if (a < 0 || a >= x->ndim || seen[a])
            return shape_value_error(cx, "transpose: axes are not a permutation of those of %s", x);
        seen[a] = true;
        p.axes[i] = a;
        identity &= a == i;
    }
    if (identity) return ax_array_retain(x);
    return ax_bind1(cx, AX_P_TRANSPOSE, 1, &x, &p);
}

ax_array *ax_np_squeeze(ax_ctx *cx, ax_array *x, int naxes, const int *axes) {
    if (!x) return NULL;
    ax_params p = {0};
    for (int i = 0; i < x->ndim; i++) {
        bool listed = naxes < 0 && x->shape[i] == 1;
        for (int j = 0; j < naxes; j++) listed |= axes[j] == i;
        if (!listed) continue;
        if (x->shape[i] != 1)
            return shape_value_error(
                cx, "cannot select an axis to squeeze out which has size not equal to one (%s)", x);
        p.axes[p.naxes++] = i;
    }
    if (p.naxes == 0) return ax_array_retain(x);
    return ax_bind1(cx, AX_P_SQUEEZE, 1, &x, &p);
}

ax_array *ax_np_expand_dims(ax_ctx *cx, ax_array *x, int naxes, const int64_t *axes) {
    if (!x) return NULL;
    int out = x->ndim + naxes;
    if (!ax_rank_check(cx, "expand_dims", out)) return NULL;
    ax_params p = {.naxes = naxes};
    bool used[AX_MAX_RANK] = {false};
    for (int i = 0; i < naxes; i++) {
        if (!ax_np_axis(cx, axes[i], out, &p.axes[i])) return NULL;
        if (used[p.axes[i]]) return ax_error(cx, AX_ERR_VALUE, "expand_dims: repeated axis");
        used[p.axes[i]] = true;
    }
    for (int i = 0, n = 0; i < out; i++)
        if (used[i]) p.axes[n++] = i;
    if (naxes == 0) return ax_array_retain(x);
    return ax_bind1(cx, AX_P_EXPAND_DIMS, 1, &x, &p);
}

static void *concat_shape_error(ax_ctx *cx, const ax_array *a, const ax_array *b, int axis) {
    char ta[160], tb[160];
    ax_array_type_format(ta, sizeof ta, a);
    ax_array_type_format(tb, sizeof tb, b);
    return ax_error(cx, AX_ERR_SHAPE,
                    "cannot concatenate %s and %s along axis %d (the other dimensions differ)", ta,
                    tb, axis);
}

ax_array *ax_np_concatenate(ax_ctx *cx, int n, ax_array *const *xs, int64_t axis) {
    for (int i = 0; i < n; i++)
        if (!xs[i]) return NULL;
    if (n == 0) return ax_error(cx, AX_ERR_VALUE, "need at least one array to concatenate");
    int ndim = xs[0]->ndim, ax;
    if (ndim == 0)
        return ax_error(cx, AX_ERR_VALUE, "zero-dimensional arrays cannot be concatenated");
    if (!ax_np_axis(cx, axis, ndim, &ax)) return NULL;
    for (int i = 1; i < n; i++) {
        if (xs[i]->ndim != ndim)
            return ax_error(cx, AX_ERR_VALUE,
                            "all the input arrays must have the same number of dimensions, but "
                            "the array at index 0 has %d and the array at index %d has %d",
                            ndim, i, xs[i]->ndim);
        for (int d = 0; d < ndim; d++)
            if (d != ax && xs[i]->shape[d] != xs[0]->shape[d])
                return concat_shape_error(cx, xs[0], xs[i], ax);
    }
    bool weak;
    ax_dtype t = ax_np_result_type(n, xs, &weak);
    ax_array **conv = calloc((size_t)n, sizeof *conv);
    if (!conv) return ax_error_oom(cx);
    ax_array *r = NULL;
    int ok = 1;
    for (int i = 0; i < n && ok; i++) ok = (conv[i] = ax_np_astype(cx, xs[i], t, weak)) != NULL;
    if (ok && n == 1) {
        r = ax_array_retain(conv[0]);
    } else if (ok) {
        ax_params p = {.naxes = 1};
        p.axes[0] = ax;
        r = ax_bind1(cx, AX_P_CONCATENATE, n, conv, &p);
    }
    for (int i = 0; i < n; i++) ax_array_release(conv[i]);
    free(conv);
    return r;
}

ax_array *ax_np_stack(ax_ctx *cx, int n, ax_array *const *xs, int64_t axis) {
    for (int i = 0; i < n; i++)
        if (!xs[i]) return NULL;
    if (n == 0) return ax_error(cx, AX_ERR_VALUE, "need at least one array to stack");
    for (int i = 1; i < n; i++)
        if (!ax_shape_equal(xs[i]->ndim, xs[i]->shape, xs[0]->ndim, xs[0]->shape)) {
            char ta[160], tb[160];
            ax_array_type_format(ta, sizeof ta, xs[0]);
            ax_array_type_format(tb, sizeof tb, xs[i]);
            return ax_error(cx, AX_ERR_SHAPE,
                            "cannot stack %s and %s (all input arrays must have the same shape)",
                            ta, tb);
        }
    int ax;
    if (!ax_np_axis(cx, axis, xs[0]->ndim + 1, &ax)) return NULL;
    ax_array **ex = calloc((size_t)n, sizeof *ex);
    if (!ex) return ax_error_oom(cx);
    int64_t a64 = ax;
    bool ok = true;
    for (int i = 0; i < n && ok; i++) ok = (ex[i] = ax_np_expand_dims(cx, xs[i], 1, &a64)) != NULL;
    ax_array *r = ok ? ax_np_concatenate(cx, n, ex, ax) : NULL;
    for (int i = 0; i < n; i++) ax_array_release(ex[i]);
    free(ex);
    return r;
}

ax_array *ax_np_flip(ax_ctx *cx, ax_array *x, int naxes, const int *axes) {
    if (!x) return NULL;
    ax_params p = {.naxes = naxes < 0 ? x->ndim : naxes};
    for (int i = 0; i < p.naxes; i++) p.axes[i] = naxes < 0 ? i : axes[i];
    if (p.naxes == 0) return ax_array_retain(x);
    return ax_bind1(cx, AX_P_REV, 1, &x, &p);
}

ax_array *ax_np_iota(ax_ctx *cx, ax_dtype dtype, int ndim, const int64_t *shape, int dim) {
    ax_params p = {.dtype = dtype, .ndim = ndim, .naxes = 1};
    memcpy(p.shape, shape, (size_t)ndim * sizeof *shape);
    p.axes[0] = dim;
    return ax_bind1(cx, AX_P_IOTA, 0, NULL, &p);
}

/* v rounded to dtype (as NumPy stores a Python number into an array of that dtype). */
static double in_dtype(ax_dtype t, double v) {
    double out;
    union {
        double f64;
        float f32;
        int64_t i64;
        int32_t i32;
        uint32_t u32;
        uint8_t u8;
    } tmp;
    ax_convert_element(t, &tmp, AX_F64, &v);
    ax_convert_element(AX_F64, &out, t, &tmp);
    return out;
}

/* NumPy's arange stores start and start + step in the array, takes their difference (in the
 * dtype) as the step, and fills start + i * step: iota * step + start computes the same. */
ax_array *ax_np_arange(ax_ctx *cx, double start, double stop, double step, ax_dtype dtype) {
    if (step == 0) return ax_error(cx, AX_ERR_VALUE, "arange: step cannot be zero");
    double len = ceil((stop - start) / step);
    if (!(len >= 0)) len = 0;
    if (len > 1e12) return ax_error(cx, AX_ERR_VALUE, "arange: too many elements (%g)", len);
    int64_t n = (int64_t)len;
    double first = in_dtype(dtype, start);
    double delta = in_dtype(dtype, in_dtype(dtype, start + step) - first);
    ax_scope s;
    ax_scope_begin(&s, cx);
    ax_array *r = ax_scope_own(&s, ax_np_iota(cx, dtype, 1, &n, 0));
    if (delta != 1) r = ax_lax_mul(&s, r, ax_lax_scalar_like(&s, r, delta));
    if (first != 0) r = ax_lax_add(&s, r, ax_lax_scalar_like(&s, r, first));
    r = ax_scope_keep(&s, r);
    ax_scope_end(&s);
    return r;
}

ax_array *ax_np_full(ax_ctx *cx, int ndim, const int64_t *shape, ax_array *value, ax_dtype dtype) {
    if (!value || !ax_shape_check(cx, NULL, dtype, ndim, shape)) return NULL;
    ax_array *v = ax_np_astype(cx, value, dtype, false);
    ax_array *r = ax_np_broadcast_to(cx, v, ndim, shape);
    ax_array_release(v);
    return r;
}

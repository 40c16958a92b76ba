/* Shape operations (see shape_ops.h). Views wherever the result can share x's buffer:
 * reshape (when the strides allow it, as NumPy's no-copy reshape), transpose, broadcast_in_dim,
 * slice, squeeze, expand_dims, rev. concatenate and pad build new contiguous arrays. */
#include "shape_ops.h"

#include <assert.h>
#include <stdio.h>
#include <string.h>

#include "strided.h"

/* ---- message helpers ---- */

/* Returned by value so that several can appear in one ax_error call. */
typedef struct {
    char s[400];
} text;

static text type_text(const ax_array *a) {
    text t;
    ax_array_type_format(t.s, sizeof t.s, a);
    return t;
}

static text shape_text(int ndim, const int64_t *shape) {
    text t;
    ax_shape_format(t.s, sizeof t.s, ndim, shape);
    return t;
}

static text ints_text(int n, const int *v) {
    int64_t wide[AX_MAX_RANK];
    if (n > AX_MAX_RANK) n = AX_MAX_RANK;
    for (int i = 0; i < n; i++) wide[i] = v[i];
    return shape_text(n, wide);
}

#define TYPE(a)       type_text(a).s
#define SHAPE(n, dim) shape_text(n, dim).s
#define INTS(n, v)    ints_text(n, v).s

/* Axes distinct and in [0, ndim); negative ones count from the end, as in NumPy.
 * Writes the normalised axes to out and marks them in `chosen` (may be NULL). */
static bool normalize_axes(ax_ctx *cx, const char *name, int naxes, const int *axes, int ndim,
                           const char *what, int *out, bool *chosen) {
    bool seen[AX_MAX_RANK] = {false};
    if (naxes < 0 || naxes > ndim) {
        ax_error(cx, AX_ERR_VALUE, "%s: %d axes given for %s", name, naxes, what);
        return false;
    }
    for (int i = 0; i < naxes; i++) {
        int a = axes[i] < 0 ? axes[i] + ndim : axes[i];
        if (a < 0 || a >= ndim) {
            ax_error(cx, AX_ERR_VALUE, "%s: axis %d is out of bounds for %s", name, axes[i], what);
            return false;
        }
        if (seen[a]) {
            ax_error(cx, AX_ERR_VALUE, "%s: axis %d is repeated in axes %s", name, a,
                     INTS(naxes, axes));
            return false;
        }
        seen[a] = true;
        out[i] = a;
    }
    if (chosen) memcpy(chosen, seen, sizeof seen);
    return true;
}

/* ---- reshape ---- */

/* NumPy's _attempt_nocopy_reshape: strides for `shape` that walk x's elements in row-major
 * order without copying, or false when x's layout does not allow it. */
static bool nocopy_strides(const ax_array *x, int ndim, const int64_t *shape, int64_t *strides) {
    int64_t olddims[AX_MAX_RANK], oldstrides[AX_MAX_RANK];
    int oldnd = 0;
    for (int d = 0; d < x->ndim; d++) {
        if (x->shape[d] == 1) continue;
        olddims[oldnd] = x->shape[d];
        oldstrides[oldnd++] = x->strides[d];
    }
    int oi = 0, oj = 1, ni = 0, nj = 1;
    while (ni < ndim && oi < oldnd) {
        int64_t np = shape[ni], op = olddims[oi];
        while (np != op) {
            if (np < op)
                np *= shape[nj++];
            else
                op *= olddims[oj++];
        }
        for (int ok = oi; ok < oj - 1; ok++)
            if (oldstrides[ok] != olddims[ok + 1] * oldstrides[ok + 1]) return false;
        strides[nj - 1] = oldstrides[oj - 1];
        for (int nk = nj - 1; nk > ni; nk--) strides[nk - 1] = strides[nk] * shape[nk];
        ni = nj++;
        oi = oj++;
    }
    int64_t last = ni >= 1 ? strides[ni - 1] : 1;
    for (int nk = ni; nk < ndim; nk++) strides[nk] = last;
    return true;
}

/* Resolves one -1 entry (NumPy's "unknown dimension") against x's size. */
static bool resolve_shape(ax_ctx *cx, const ax_array *x, int ndim, const int64_t *shape,
                          int64_t *out) {
    int unknown = -1;
    for (int i = 0; i < ndim; i++) {
        out[i] = shape[i];
        if (shape[i] != -1) continue;
        if (unknown >= 0) {
            ax_error(cx, AX_ERR_VALUE, "can only specify one unknown dimension in shape %s",
                     SHAPE(ndim, shape));
            return false;
        }
        unknown = i;
        out[i] = 1; /* for the size check below */
    }
    if (!ax_shape_check(cx, "reshape", x->dtype, ndim, out)) return false;
    int64_t known = ax_shape_size(ndim, out);
    if (unknown >= 0) out[unknown] = known ? x->size / known : 0;
    if (ax_shape_size(ndim, out) == x->size && (unknown < 0 || known != 0)) return true;
    ax_error(cx, AX_ERR_SHAPE, "cannot reshape %s into shape %s", TYPE(x), SHAPE(ndim, shape));
    return false;
}

ax_array *ax_reshape(ax_ctx *cx, ax_array *x, int ndim, const int64_t *shape) {
    int64_t dims[AX_MAX_RANK], strides[AX_MAX_RANK];
    if (!ax_rank_check(cx, "reshape", ndim) || !resolve_shape(cx, x, ndim, shape, dims))
        return NULL;
    if (x->size == 0) {
        ax_shape_strides(ndim, dims, strides);
        return ax_array_view(cx, x, ndim, dims, strides, x->offset);
    }
    if (nocopy_strides(x, ndim, dims, strides))
        return ax_array_view(cx, x, ndim, dims, strides, x->offset);
    ax_array *c = ax_strided_contiguous(cx, x); /* a fresh copy: x is not contiguous */
    if (!c || c == x) {                         /* (a contiguous x always has a view) */
        ax_array_release(c);
        return c ? ax_error(cx, AX_ERR_RUNTIME, "reshape: no view of a contiguous array") : NULL;
    }
    c->ndim = ndim;
    memcpy(c->shape, dims, (size_t)ndim * sizeof *dims);
    ax_shape_strides(ndim, dims, c->strides);
    return c;
}

/* ---- transpose, broadcast_in_dim ---- */

static bool is_permutation(int n, const int *perm) {
    bool seen[AX_MAX_RANK] = {false};
    for (int i = 0; i < n; i++) {
        if (perm[i] < 0 || perm[i] >= n || seen[perm[i]]) return false;
        seen[perm[i]] = true;
    }
    return true;
}

ax_array *ax_transpose(ax_ctx *cx, ax_array *x, const int *perm) {
    const int *p = perm;
    if (!is_permutation(x->ndim, perm)) {
        ax_error(cx, AX_ERR_VALUE, "transpose: %s is not a permutation of the axes of %s",
                 INTS(x->ndim, perm), TYPE(x));
        return NULL;
    }
    int64_t shape[AX_MAX_RANK], strides[AX_MAX_RANK];
    for (int i = 0; i < x->ndim; i++) {
        shape[i] = x->shape[p[i]];
        strides[i] = x->strides[p[i]];
    }
    return ax_array_view(cx, x, x->ndim, shape, strides, x->offset);
}

static bool check_bdims(ax_ctx *cx, const ax_array *x, int ndim, const int64_t *shape,
                        const int *bdims) {
    bool ok = true;
    for (int i = 0; i < x->ndim && ok; i++)
        ok = bdims[i] >= 0 && bdims[i] < ndim && (i == 0 || bdims[i] > bdims[i - 1]);
    if (!ok) {
        ax_error(cx, AX_ERR_VALUE,
                 "broadcast_in_dim: broadcast_dimensions %s must give, for each dimension of %s, "
                 "an increasing position in the output shape %s",
                 INTS(x->ndim, bdims), TYPE(x), SHAPE(ndim, shape));
        return false;
    }
    for (int i = 0; i < x->ndim; i++) {
        int64_t have = x->shape[i], want = shape[bdims[i]];
        if (have == want || have == 1) continue;
        ax_error(cx, AX_ERR_SHAPE,
                 "cannot broadcast %s to shape %s: dimension %d (size %lld) does not match "
                 "output dimension %d (size %lld)",
                 TYPE(x), SHAPE(ndim, shape), i, (long long)have, bdims[i], (long long)want);
        return false;
    }
    return true;
}

ax_array *ax_broadcast_in_dim(ax_ctx *cx, ax_array *x, int ndim, const int64_t *shape,
                              const int *bdims) {
    if (!ax_rank_check(cx, "broadcast_in_dim", ndim) || ndim < x->ndim) {
        if (!ax_error_pending(cx))
            ax_error(cx, AX_ERR_SHAPE, "cannot broadcast %s to the lower rank shape %s", TYPE(x),
                     SHAPE(ndim, shape));
        return NULL;
    }
    if (!check_bdims(cx, x, ndim, shape, bdims)) return NULL;
    int64_t strides[AX_MAX_RANK] = {0}; /* new dimensions repeat: stride 0 */
    for (int i = 0; i < x->ndim; i++)
        strides[bdims[i]] = x->shape[i] == shape[bdims[i]] ? x->strides[i] : 0;
    return ax_array_view(cx, x, ndim, shape, strides, x->offset);
}

/* ---- concatenate ---- */

static bool check_concat(ax_ctx *cx, int n, ax_array *const *xs, int axis, int *axis_out) {
    for (int i = 0; i < n; i++) assert(xs[i] && ax_refs_load(&xs[i]->refs) > 0);
    if (n < 1) {
        ax_error(cx, AX_ERR_VALUE, "concatenate needs at least one array");
        return false;
    }
    const ax_array *first = xs[0];
    if (first->ndim == 0) {
        ax_error(cx, AX_ERR_VALUE, "zero-dimensional arrays cannot be concatenated");
        return false;
    }
    if (!normalize_axes(cx, "concatenate", 1, &axis, first->ndim, TYPE(first), axis_out, NULL))
        return false;
    for (int i = 1; i < n; i++) {
        const ax_array *x = xs[i];
        if (x->dtype != first->dtype) {
            ax_error(cx, AX_ERR_TYPE, "concatenate requires arguments of one dtype, got %s and %s",
                     TYPE(first), TYPE(x));
            return false;
        }
        bool fits = x->ndim == first->ndim;
        for (int d = 0; fits && d < x->ndim; d++)
            fits = d == *axis_out || x->shape[d] == first->shape[d];
        if (!fits) {
            ax_error(cx, AX_ERR_SHAPE,
                     "cannot concatenate %s and %s along axis %d (shapes differ outside that "
                     "axis)",
                     TYPE(first), TYPE(x), *axis_out);
            return false;
        }
    }
    return true;
}

ax_array *ax_concatenate(ax_ctx *cx, int n, ax_array *const *xs, int axis) {
    if (!check_concat(cx, n, xs, axis, &axis)) return NULL;
    int64_t shape[AX_MAX_RANK];
    memcpy(shape, xs[0]->shape, (size_t)xs[0]->ndim * sizeof *shape);
    shape[axis] = 0;
    bool weak = true;
    for (int i = 0; i < n; i++) {
        if (!ax_add_i64(shape[axis], xs[i]->shape[axis], &shape[axis]))
            return ax_error(cx, AX_ERR_VALUE,
                            "concatenate: the result would have more than 2**63 elements along "
                            "axis %d",
                            axis);
        weak &= xs[i]->weak;
    }
    ax_array *out = ax_array_new(cx, xs[0]->dtype, xs[0]->ndim, shape);
    if (!out) return NULL;
    out->weak = weak;
    size_t es = ax_dtype_size(out->dtype);
    char *dst = ax_array_data(out);
    for (int i = 0; i < n; i++) {
        if (xs[i]->size == 0) continue;
        ax_strided_copy(dst, out->strides, ax_array_data(xs[i]), xs[i]->strides, out->ndim,
                        xs[i]->shape, es);
        dst += xs[i]->shape[axis] * out->strides[axis] * (int64_t)es;
    }
    return out;
}

/* ---- slice ---- */

static bool check_slice_axis(ax_ctx *cx, const ax_array *x, int d, int64_t lo, int64_t hi,
                             int64_t step) {
    if (step < 1) {
        ax_error(cx, AX_ERR_VALUE, "slice strides must be positive, got %lld on axis %d",
                 (long long)step, d);
        return false;
    }
    if (lo < 0 || hi > x->shape[d]) {
        ax_error(cx, AX_ERR_INDEX, "slice %lld:%lld is out of bounds for axis %d of %s",
                 (long long)lo, (long long)hi, d, TYPE(x));
        return false;
    }
    if (lo > hi) {
        ax_error(cx, AX_ERR_VALUE, "slice start %lld is after its limit %lld on axis %d of %s",
                 (long long)lo, (long long)hi, d, TYPE(x));
        return false;
    }
    return true;
}

ax_array *ax_slice(ax_ctx *cx, ax_array *x, const int64_t *start, const int64_t *limit,
                   const int64_t *strides) {
    int64_t shape[AX_MAX_RANK], vstrides[AX_MAX_RANK], offset = x->offset;
    for (int d = 0; d < x->ndim; d++) {
        int64_t step = strides ? strides[d] : 1;
        if (!check_slice_axis(cx, x, d, start[d], limit[d], step)) return NULL;
        shape[d] = limit[d] > start[d] ? (limit[d] - start[d] - 1) / step + 1 : 0;
        /* a step beyond the axis takes one element: its stride is then never used */
        vstrides[d] = shape[d] > 1 ? x->strides[d] * step : x->strides[d];
        if (shape[d] > 0) offset += start[d] * x->strides[d];
    }
    return ax_array_view(cx, x, x->ndim, shape, vstrides, offset);
}

/* ---- pad ---- */

static bool check_pad(ax_ctx *cx, const ax_array *x, const ax_array *value, const int64_t *lo,
                      const int64_t *hi, const int64_t *interior, int64_t *shape) {
    if (value->dtype != x->dtype) {
        ax_error(cx, AX_ERR_TYPE,
                 "pad requires a padding value of the array's dtype, got %s and %s", TYPE(x),
                 TYPE(value));
        return false;
    }
    if (value->ndim != 0) {
        ax_error(cx, AX_ERR_SHAPE, "the padding value must be a scalar, got %s", TYPE(value));
        return false;
    }
    for (int d = 0; d < x->ndim; d++) {
        int64_t n = x->shape[d], in = interior ? interior[d] : 0;
        bool fits = ax_pad_size(n, lo[d], hi[d], in, &shape[d]);
        if (fits && in >= 0 && shape[d] >= 0) continue;
        ax_error(cx, in < 0 || !fits ? AX_ERR_VALUE : AX_ERR_SHAPE,
                 "pad: padding (low %lld, high %lld, interior %lld) of axis %d is invalid for %s%s",
                 (long long)lo[d], (long long)hi[d], (long long)in, d, TYPE(x),
                 fits ? "" : " (the padded size does not fit in 64 bits)");
        return false;
    }
    return true;
}

bool ax_pad_size(int64_t n, int64_t lo, int64_t hi, int64_t interior, int64_t *size) {
    int64_t inner = 0;
    if (n > 0 && interior > 0 && !ax_mul_i64(n - 1, interior, &inner)) return false;
    return ax_add_i64(n, inner, size) && ax_add_i64(*size, lo, size) && ax_add_i64(*size, hi, size);
}

/* a - b, saturated at the ends of int64 */
static int64_t sat_sub(int64_t a, int64_t b) {
    int64_t r;
    if (!__builtin_sub_overflow(a, b, &r)) return r;
    return b < 0 ? INT64_MAX : INT64_MIN;
}

/* Along one axis: x's elements land at lo + i * (interior + 1) in the output. Finds the range
 * [first, first + count) of i that land inside [0, out_size). */
static void pad_kept_range(int64_t n, int64_t lo, int64_t step, int64_t out_size, int64_t *first,
                           int64_t *count) {
    *first = 0;
    *count = 0;
    if (n == 0) return;
    /* the first i with lo + i * step >= 0: ceil(-lo / step), written so that neither -lo nor
     * the + 1 can overflow */
    int64_t q = lo >= 0 ? -1 : (-(lo + 1)) / step, f = q >= n ? n : q + 1;
    /* one past the last i with lo + i * step < out_size */
    int64_t room = sat_sub(out_size, lo);
    int64_t end = room <= 0 ? 0 : (room - 1) / step + 1;
    if (end > n) end = n;
    *first = f;
    *count = end > *first ? end - *first : 0;
}

ax_array *ax_pad(ax_ctx *cx, ax_array *x, ax_array *value, const int64_t *lo, const int64_t *hi,
                 const int64_t *interior) {
    int64_t shape[AX_MAX_RANK];
    if (!check_pad(cx, x, value, lo, hi, interior, shape)) return NULL;
    ax_array *out = ax_array_new(cx, x->dtype, x->ndim, shape);
    if (!out) return NULL;
    out->weak = x->weak && value->weak;
    size_t es = ax_dtype_size(x->dtype);
    ax_fill_elements(ax_array_data(out), out->size, ax_array_data(value), es);
    /* Copy the part of x that survives cropping into a strided view of the output. */
    int64_t kept[AX_MAX_RANK], first[AX_MAX_RANK], step[AX_MAX_RANK];
    for (int d = 0; d < x->ndim; d++) {
        /* (n - 1) * interior fitted in the output, so interior + 1 fits when n > 1 */
        step[d] = x->shape[d] > 1 && interior ? interior[d] + 1 : 1;
        pad_kept_range(x->shape[d], lo[d], step[d], shape[d], &first[d], &kept[d]);
        if (kept[d] == 0) return out;
    }
    /* every kept element lands inside the output: these offsets fit */
    int64_t dst_strides[AX_MAX_RANK], src_off = 0, dst_off = 0;
    for (int d = 0; d < x->ndim; d++) {
        dst_strides[d] = kept[d] > 1 ? out->strides[d] * step[d] : out->strides[d];
        src_off += first[d] * x->strides[d];
        dst_off += (lo[d] + first[d] * step[d]) * out->strides[d];
    }
    ax_strided_copy((char *)ax_array_data(out) + dst_off * (int64_t)es, dst_strides,
                    (char *)ax_array_data(x) + src_off * (int64_t)es, x->strides, x->ndim, kept,
                    es);
    return out;
}

/* ---- squeeze, expand_dims, rev ---- */

ax_array *ax_squeeze(ax_ctx *cx, ax_array *x, int ndims, const int *dims) {
    int axes[AX_MAX_RANK];
    bool drop[AX_MAX_RANK];
    if (!normalize_axes(cx, "squeeze", ndims, dims, x->ndim, TYPE(x), axes, drop)) return NULL;
    for (int i = 0; i < ndims; i++) {
        int64_t n = x->shape[axes[i]];
        if (n == 1) continue;
        ax_error(cx, AX_ERR_SHAPE, "cannot squeeze axis %d of %s: its size is %lld, not 1", axes[i],
                 TYPE(x), (long long)n);
        return NULL;
    }
    int64_t shape[AX_MAX_RANK], strides[AX_MAX_RANK];
    int n = 0;
    for (int d = 0; d < x->ndim; d++) {
        if (drop[d]) continue;
        shape[n] = x->shape[d];
        strides[n++] = x->strides[d];
    }
    return ax_array_view(cx, x, n, shape, strides, x->offset);
}

ax_array *ax_expand_dims(ax_ctx *cx, ax_array *x, int ndims, const int *dims) {
    int ndim = x->ndim + ndims, axes[AX_MAX_RANK];
    bool inserted[AX_MAX_RANK];
    char what[64];
    snprintf(what, sizeof what, "an output of rank %d", ndim);
    if (!ax_rank_check(cx, "expand_dims", ndim) ||
        !normalize_axes(cx, "expand_dims", ndims, dims, ndim, what, axes, inserted))
        return NULL;
    int64_t shape[AX_MAX_RANK], strides[AX_MAX_RANK];
    for (int d = 0, k = 0; d < ndim; d++) {
        shape[d] = inserted[d] ? 1 : x->shape[k];
        strides[d] = inserted[d] ? 0 : x->strides[k++];
    }
    return ax_array_view(cx, x, ndim, shape, strides, x->offset);
}

ax_array *ax_rev(ax_ctx *cx, ax_array *x, int ndims, const int *dims) {
    int axes[AX_MAX_RANK];
    if (!normalize_axes(cx, "rev", ndims, dims, x->ndim, TYPE(x), axes, NULL)) return NULL;
    int64_t strides[AX_MAX_RANK], offset = x->offset;
    memcpy(strides, x->strides, (size_t)x->ndim * sizeof *strides);
    for (int i = 0; i < ndims; i++) {
        int d = axes[i];
        if (x->shape[d] > 0) offset += (x->shape[d] - 1) * strides[d];
        strides[d] = -strides[d];
    }
    return ax_array_view(cx, x, x->ndim, x->shape, strides, offset);
}

/* Gather and scatter (see index.h).
 *
 * Both walk the batch positions B of the index array in row-major order; at each, the k
 * indices select one block of x (the dimensions not indexed, "rest"), which is copied out
 * (gather) or combined with a block of updates (scatter). The block is planned once
 * (strided.h): for the common x[idx] on a contiguous matrix it is one memcpy per row. */
#include "index.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "pool.h"
#include "strided.h"

enum { PARALLEL_ELEMENTS = 1 << 16 }; /* copied elements worth a chunk of a parallel gather */

typedef struct {
    char s[400];
} text;

static text type_text(const ax_array *a) {
    text t;
    ax_array_type_format(t.s, sizeof t.s, a);
    return t;
}
#define TYPE(a) type_text(a).s

/* What gather and scatter share: the indexed axes, the rest dims, the batch shape. */
typedef struct {
    int naxes;
    int axes[AX_MAX_RANK];
    int nrest;
    int64_t rest_shape[AX_MAX_RANK];
    int64_t rest_strides[AX_MAX_RANK]; /* x's strides on the rest dims */
    int nbatch;                        /* idx->ndim - 1 */
    int out_ndim;
    int64_t out_shape[AX_MAX_RANK];
} index_plan;

static bool check_index_dtype(ax_ctx *cx, const char *name, const ax_array *idx) {
    ax_dtype t = idx->dtype;
    if (t == AX_I32 || t == AX_I64 || t == AX_U32 || t == AX_U8) return true;
    ax_error(cx, AX_ERR_TYPE, "%s indices must be integers, got %s", name, TYPE(idx));
    return false;
}

static bool plan_axes(ax_ctx *cx, const char *name, const ax_array *x, int naxes, const int *axes,
                      index_plan *p) {
    bool seen[AX_MAX_RANK] = {false};
    if (naxes < 0 || naxes > x->ndim) {
        ax_error(cx, AX_ERR_VALUE, "%s: %d axes given for %s", name, naxes, TYPE(x));
        return false;
    }
    for (int i = 0; i < naxes; i++) {
        int a = axes[i] < 0 ? axes[i] + x->ndim : axes[i];
        if (a < 0 || a >= x->ndim) {
            ax_error(cx, AX_ERR_VALUE, "%s: axis %d is out of bounds for %s", name, axes[i],
                     TYPE(x));
            return false;
        }
        if (seen[a]) {
            ax_error(cx, AX_ERR_VALUE, "%s: axis %d is repeated in the indexed axes", name, a);
            return false;
        }
        seen[a] = true;
        p->axes[i] = a;
    }
    p->naxes = naxes;
    p->nrest = 0;
    for (int d = 0; d < x->ndim; d++) {
        if (seen[d]) continue;
        p->rest_shape[p->nrest] = x->shape[d];
        p->rest_strides[p->nrest++] = x->strides[d];
    }
    return true;
}

static bool plan_index(ax_ctx *cx, const char *name, const ax_array *x, const ax_array *idx,
                       int naxes, const int *axes, index_plan *p) {
    if (!check_index_dtype(cx, name, idx) || !plan_axes(cx, name, x, naxes, axes, p)) return false;
    if (idx->ndim < 1 || idx->shape[idx->ndim - 1] != naxes) {
        ax_error(cx, AX_ERR_SHAPE,
                 "%s indices must have a last dimension of size %d (one index per indexed axis "
                 "of %s), got %s",
                 name, naxes, TYPE(x), TYPE(idx));
        return false;
    }
    p->nbatch = idx->ndim - 1;
    p->out_ndim = p->nbatch + p->nrest;
    if (p->out_ndim > AX_MAX_RANK) {
        ax_error(cx, AX_ERR_VALUE, "%s would make an array of rank %d; ax supports ranks 0 to %d",
                 name, p->out_ndim, AX_MAX_RANK);
        return false;
    }
    memcpy(p->out_shape, idx->shape, (size_t)p->nbatch * sizeof *p->out_shape);
    memcpy(p->out_shape + p->nbatch, p->rest_shape, (size_t)p->nrest * sizeof *p->rest_shape);
    return true;
}

static int64_t load_index(const char *at, ax_dtype t) {
    switch (t) {
    case AX_I32:
        return *(const int32_t *)at;
    case AX_I64:
        return *(const int64_t *)at;
    case AX_U32:
        return *(const uint32_t *)at;
    default:
        return *(const uint8_t *)at;
    }
}

/* The element offset in x (negative for reversed views) selected by the k indices at idx_at;
 * false with an IndexError if one is out of bounds. */
static bool select_offset(ax_ctx *cx, const index_plan *p, const ax_array *x, const ax_array *idx,
                          const char *idx_at, int64_t *offset) {
    int64_t off = 0, step = idx->strides[idx->ndim - 1] * (int64_t)ax_dtype_size(idx->dtype);
    for (int j = 0; j < p->naxes; j++) {
        int a = p->axes[j];
        int64_t v = load_index(idx_at + j * step, idx->dtype);
        if (v < 0 || v >= x->shape[a]) {
            ax_error(cx, AX_ERR_INDEX, "index %lld is out of bounds for axis %d with size %lld",
                     (long long)v, a, (long long)x->shape[a]);
            return false;
        }
        off += v * x->strides[a];
    }
    *offset = off;
    return true;
}

/* ---- gather ---- */

static void copy_element(char *dst, const char *src, size_t es) {
    switch (es) {
    case 1:
        *dst = *src;
        break;
    case 4:
        memcpy(dst, src, 4);
        break;
    default:
        memcpy(dst, src, 8);
        break;
    }
}

/* The indices are checked in one pass first (so that errors are reported from this thread);
 * the copy pass may then run on the pool, each task a range of batch positions. */
typedef struct {
    const index_plan *p;
    const ax_array *x, *idx;
    ax_copy_plan copy;
    int64_t block; /* elements per batch position */
    char *out;
} gather_job;

static bool check_indices(ax_ctx *cx, const index_plan *p, const ax_array *x, const ax_array *idx) {
    const char *idata = ax_array_data(idx);
    int64_t ies = (int64_t)ax_dtype_size(idx->dtype), off;
    ax_iter it;
    ax_iter_init(&it, p->nbatch, idx->shape, 1, (const int64_t *[]){idx->strides});
    do {
        if (!select_offset(cx, p, x, idx, idata + it.pos[0] * ies, &off)) return false;
    } while (ax_iter_next(&it));
    return true;
}

/* Element offset in idx of batch position b (row-major over the batch dims). */
static int64_t batch_offset(const ax_array *idx, int nbatch, int64_t b) {
    int64_t off = 0;
    for (int d = nbatch - 1; d >= 0; d--) {
        off += b % idx->shape[d] * idx->strides[d];
        b /= idx->shape[d];
    }
    return off;
}

static void gather_range(void *arg, int64_t begin, int64_t end) {
    const gather_job *j = arg;
    const index_plan *p = j->p;
    const ax_array *x = j->x, *idx = j->idx;
    int64_t es = (int64_t)ax_dtype_size(x->dtype), ies = (int64_t)ax_dtype_size(idx->dtype);
    int64_t step = idx->strides[idx->ndim - 1] * ies;
    const char *xdata = ax_array_data(x), *idata = ax_array_data(idx);
    for (int64_t b = begin; b < end; b++) {
        const char *at = idata + batch_offset(idx, p->nbatch, b) * ies;
        int64_t off = 0;
        for (int k = 0; k < p->naxes; k++)
            off += load_index(at + k * step, idx->dtype) * x->strides[p->axes[k]];
        char *dst = j->out + b * j->block * es;
        if (j->block == 1)
            copy_element(dst, xdata + off * es, (size_t)es);
        else
            ax_copy_plan_run(&j->copy, dst, xdata + off * es);
    }
}

ax_array *ax_gather(ax_ctx *cx, ax_array *x, ax_array *idx, int naxes, const int *axes) {
    index_plan p;
    if (!plan_index(cx, "gather", x, idx, naxes, axes, &p)) return NULL;
    int64_t nb = ax_shape_size(p.nbatch, idx->shape);
    if (nb > 0 && !check_indices(cx, &p, x, idx)) return NULL;
    ax_array *out = ax_array_new(cx, x->dtype, p.out_ndim, p.out_shape);
    if (!out) return NULL;
    out->weak = x->weak;
    if (nb == 0) return out;
    gather_job j = {&p, x, idx, {0}, ax_shape_size(p.nrest, p.rest_shape), ax_array_data(out)};
    size_t es = ax_dtype_size(x->dtype);
    ax_copy_plan_init(&j.copy, p.nrest, p.rest_shape, out->strides + p.nbatch, p.rest_strides, es);
    int64_t per_task = j.block > 0 ? j.block : 1;
    ax_parallel_for(cx, nb, PARALLEL_ELEMENTS / per_task + 1, gather_range, &j);
    return out;
}

/* ---- scatter ---- */

/* dst[i * ds] = dst[i * ds] op src[i * ss] for i < n. */
typedef void combine_fn(char *dst, int64_t ds, const char *src, int64_t ss, int64_t n);

#define DEFINE_COMBINE(NAME, T, EXPR)                                                              \
    static void NAME(char *dstp, int64_t ds, const char *srcp, int64_t ss, int64_t n) {            \
        T *d = (T *)dstp;                                                                          \
        const T *s = (const T *)srcp;                                                              \
        for (int64_t i = 0; i < n; i++) {                                                          \
            T a = d[i * ds], b = s[i * ss];                                                        \
            d[i * ds] = (T)(EXPR);                                                                 \
        }                                                                                          \
    }

/* Integers wrap (computed in the unsigned type UT); float min/max propagate NaN, as
 * jnp.minimum/maximum. */
#define DEFINE_COMBINES(SFX, T, UT, ISNAN)                                                         \
    DEFINE_COMBINE(SFX##_add, T, (UT)a + (UT)b)                                                    \
    DEFINE_COMBINE(SFX##_mul, T, (UT)a *(UT)b)                                                     \
    DEFINE_COMBINE(SFX##_min, T, b < a || ISNAN(b) ? b : a)                                        \
    DEFINE_COMBINE(SFX##_max, T, b > a || ISNAN(b) ? b : a)

#define ISNAN_F(v) isnan(v)
#define ISNAN_I(v) 0

DEFINE_COMBINES(u8, uint8_t, unsigned, ISNAN_I)
DEFINE_COMBINES(i32, int32_t, uint32_t, ISNAN_I)
DEFINE_COMBINES(u32, uint32_t, uint32_t, ISNAN_I)
DEFINE_COMBINES(i64, int64_t, uint64_t, ISNAN_I)
DEFINE_COMBINES(f32, float, float, ISNAN_F)
DEFINE_COMBINES(f64, double, double, ISNAN_F)
/* bool: add is or, mul is and (as JAX does for boolean scatter-add/mul) */
DEFINE_COMBINE(b_or, uint8_t, a | b)
DEFINE_COMBINE(b_and, uint8_t, a &b)

#define COMBINES_OF(SFX)                                                                           \
    { SFX##_add, SFX##_mul, SFX##_min, SFX##_max }
/* Indexed [dtype][mode - AX_SCATTER_ADD]. */
static combine_fn *const combines[AX_NDTYPES][4] = {
    [AX_BOOL] = {b_or, b_and, b_and, b_or},
    [AX_U8] = COMBINES_OF(u8),
    [AX_I32] = COMBINES_OF(i32),
    [AX_U32] = COMBINES_OF(u32),
    [AX_I64] = COMBINES_OF(i64),
    [AX_F32] = COMBINES_OF(f32),
    [AX_F64] = COMBINES_OF(f64),
};

static bool check_updates(ax_ctx *cx, const ax_array *x, const ax_array *updates,
                          const index_plan *p, ax_scatter_mode mode) {
    if (mode < AX_SCATTER_SET || mode > AX_SCATTER_MAX) {
        ax_error(cx, AX_ERR_VALUE, "scatter: unknown mode %d", (int)mode);
        return false;
    }
    if (updates->dtype != x->dtype) {
        ax_error(cx, AX_ERR_TYPE, "scatter requires updates of the array's dtype, got %s and %s",
                 TYPE(x), TYPE(updates));
        return false;
    }
    if (!ax_shape_equal(updates->ndim, updates->shape, p->out_ndim, p->out_shape)) {
        char want[400];
        ax_shape_format(want, sizeof want, p->out_ndim, p->out_shape);
        ax_error(cx, AX_ERR_SHAPE,
                 "scatter into %s: updates %s do not match the shape %s of the indexed elements",
                 TYPE(x), TYPE(updates), want);
        return false;
    }
    return true;
}

/* Combines one block of updates into the output with a merged plan of the rest dims. */
static void combine_block(const ax_copy_plan *plan, combine_fn *fn, char *dst, const char *src) {
    if (plan->ndim == 0) {
        fn(dst, 1, src, 1, 1);
        return;
    }
    int inner = plan->ndim - 1;
    int64_t es = (int64_t)plan->elsize;
    ax_iter it;
    ax_iter_init(&it, inner, plan->shape, 2,
                 (const int64_t *[]){plan->dst_strides, plan->src_strides});
    do {
        fn(dst + it.pos[0] * es, plan->dst_strides[inner], src + it.pos[1] * es,
           plan->src_strides[inner], plan->shape[inner]);
    } while (ax_iter_next(&it));
}

ax_array *ax_scatter(ax_ctx *cx, ax_array *x, ax_array *idx, ax_array *updates, int naxes,
                     const int *axes, ax_scatter_mode mode) {
    index_plan p;
    if (!plan_index(cx, "scatter", x, idx, naxes, axes, &p) ||
        !check_updates(cx, x, updates, &p, mode))
        return NULL;
    ax_array *out = ax_array_new(cx, x->dtype, x->ndim, x->shape); /* never x's buffer */
    if (!out) return NULL;
    ax_strided_copy(ax_array_data(out), out->strides, ax_array_data(x), x->strides, x->ndim,
                    x->shape, ax_dtype_size(x->dtype));
    out->weak = x->weak && updates->weak;
    int64_t nb = ax_shape_size(p.nbatch, idx->shape);
    if (nb == 0) return out;
    /* the blocks are addressed with the output's (contiguous) strides */
    int64_t out_rest_strides[AX_MAX_RANK];
    for (int d = 0, r = 0; d < x->ndim; d++) {
        bool indexed = false;
        for (int j = 0; j < p.naxes; j++) indexed |= p.axes[j] == d;
        if (!indexed) out_rest_strides[r++] = out->strides[d];
    }
    size_t es = ax_dtype_size(x->dtype);
    ax_copy_plan plan;
    ax_copy_plan_init(&plan, p.nrest, p.rest_shape, out_rest_strides, updates->strides + p.nbatch,
                      es);
    combine_fn *fn = mode == AX_SCATTER_SET ? NULL : combines[x->dtype][mode - AX_SCATTER_ADD];
    char *odata = ax_array_data(out);
    const char *idata = ax_array_data(idx), *udata = ax_array_data(updates);
    int64_t ies = (int64_t)ax_dtype_size(idx->dtype);
    ax_iter it;
    ax_iter_init(&it, p.nbatch, idx->shape, 2, (const int64_t *[]){idx->strides, updates->strides});
    do {
        int64_t off;
        if (!select_offset(cx, &p, out, idx, idata + it.pos[0] * ies, &off)) {
            ax_array_release(out);
            return NULL;
        }
        char *dst = odata + off * (int64_t)es;
        const char *src = udata + it.pos[1] * (int64_t)es;
        if (fn)
            combine_block(&plan, fn, dst, src);
        else
            ax_copy_plan_run(&plan, dst, src);
    } while (ax_iter_next(&it));
    return out;
}

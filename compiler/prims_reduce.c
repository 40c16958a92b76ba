/* Reductions, arg-reductions, cumulative reductions and sorts along axes: each one's row and
 * every rule about it (kernels: runtime/reduce.h, runtime/sort.h). */
#include <string.h>

#include "../runtime/sort.h"
#include "prim_rows.h"

/* A tangent rule (ax_tangent_rule) of an operation on one operand x, with tangent t and result
 * `out`. */
#define TANGENT(name)                                                                              \
    static ax_array *name##_tangent(ax_scope *s, AX_UNUSED const ax_params *p, ax_array **in,      \
                                    ax_array **tin, AX_UNUSED ax_array *out)
#define OPERAND                                                                                    \
    ax_array *x = in[0], *t = tin[0];                                                              \
    (void)x

/* One example: a float operand of shape `dims` (a parenthesised list) in [lo, hi], and the
 * parameters. */
#define EXAMPLE(lo, hi, dims, ...)                                                                 \
    {                                                                                              \
        .nin = 1, .in = {AX_FLOATS(lo, hi, AX_LIST dims)}, .p = { __VA_ARGS__ }                    \
    }

/* A row of one operand and output: the rest follows. */
#define ROW(name_, flags_, ...)                                                                    \
    const ax_prim_info ax_##name_##_info = {.name = #name_,                                        \
                                            .nin = 1,                                              \
                                            .nout = 1,                                             \
                                            .flags = (flags_),                                     \
                                            .shape = ax_shape_##name_,                             \
                                            .eager = eager_##name_,                                \
                                            __VA_ARGS__}

/* ---------------------------------------------------------------- reductions over axes */

#define REDUCE_EAGER(name, op)                                                                     \
    AX_EAGER(name) {                                                                               \
        (void)nin;                                                                                 \
        return ax_eager_one(ax_reduce(cx, op, in[0], p->naxes, p->axes), out);                     \
    }

static void format_axes(ax_strbuf *s, const ax_params *p) {
    ax_strbuf_append(s, "[axes=");
    ax_ir_format_ints(s, p->naxes, p->axes);
    ax_strbuf_append(s, "]");
}

/* A reduction's row: the rest of it follows. */
#define REDUCTION(name_, flags_, ...)                                                              \
    ROW(name_, flags_, .batch = ax_batch_axes, .format_params = format_axes, __VA_ARGS__)

static int reduce_sum_cotangent(ax_scope *s, const ax_params *p, int nin, ax_array **in,
                                const bool *lin, const ax_aval *ty, ax_array *ct, ax_array **r) {
    (void)nin, (void)in, (void)lin;
    bool reduced[AX_MAX_RANK] = {0};
    int kept[AX_MAX_RANK], k = 0;
    for (int i = 0; i < p->naxes; i++) reduced[p->axes[i]] = true;
    for (int i = 0; i < ty[0].ndim; i++)
        if (!reduced[i]) kept[k++] = i;
    r[0] = ax_lax_broadcast_in_dim(s, ct, ty[0].ndim, ty[0].shape, kept);
    return 0;
}
REDUCE_EAGER(reduce_sum, AX_REDUCE_SUM)
REDUCTION(reduce_sum, LIN, .jvp = ax_jvp_linear, .linear_in = 1, .transpose = ax_transpose_linear,
          .cotangent = reduce_sum_cotangent, .lower = AX_LOWER(AX_KOP_REDUCE_SUM, AX_DT_NUMBER),
          AX_EXAMPLES(EXAMPLE(-2, 2, (2, 3), .naxes = 1, .axes = {1}),
                      EXAMPLE(-2, 2, (2, 3, 2), .naxes = 2, .axes = {0, 2})));

/* x, with the axes in `axes` moved to the end and flattened into one: (rest..., n). */
static ax_array *axes_last_flat(ax_scope *s, ax_array *x, int naxes, const int *axes) {
    int perm[AX_MAX_RANK], k = 0;
    bool reduced[AX_MAX_RANK] = {0};
    int64_t shape[AX_MAX_RANK], n = 1;
    for (int i = 0; i < naxes; i++) reduced[axes[i]] = true;
    for (int i = 0; i < x->ndim; i++)
        if (!reduced[i]) shape[k] = x->shape[i], perm[k++] = i;
    for (int i = 0; i < naxes; i++) perm[k + i] = axes[i], n *= x->shape[axes[i]];
    shape[k] = n;
    return ax_lax_reshape(s, ax_lax_transpose(s, x, perm), k + 1, shape);
}

/* Products of all elements but one, along the last axis, without dividing: exclusive
 * products from the left times exclusive products from the right. */
static ax_array *products_of_others(ax_scope *s, ax_array *x) {
    int last = x->ndim - 1;
    ax_params left = {.ndim = x->ndim}, right = {.ndim = x->ndim};
    left.lo[last] = 1, left.hi[last] = -1;
    right.lo[last] = -1, right.hi[last] = 1;
    ax_array *one = ax_lax_scalar_like(s, x, 1.0);
    ax_params cum = {.naxes = 1, .axes = {last}};
    ax_array *l = ax_lax_bind(
        s, AX_P_CUMPROD, 1,
        (ax_array *[]){ax_lax_bind(s, AX_P_PAD, 2, (ax_array *[]){x, one}, &left)}, &cum);
    cum.flag = 1;
    ax_array *r = ax_lax_bind(
        s, AX_P_CUMPROD, 1,
        (ax_array *[]){ax_lax_bind(s, AX_P_PAD, 2, (ax_array *[]){x, one}, &right)}, &cum);
    return ax_lax_mul(s, l, r);
}

TANGENT(reduce_prod) {
    OPERAND;
    ax_array *xf = axes_last_flat(s, x, p->naxes, p->axes);
    ax_array *tf = axes_last_flat(s, t, p->naxes, p->axes);
    if (!xf || !tf) return NULL;
    int last = xf->ndim - 1;
    ax_array *r =
        ax_lax_reduce(s, AX_P_REDUCE_SUM, ax_lax_mul(s, tf, products_of_others(s, xf)), 1, &last);
    return ax_lax_reshape(s, r, out->ndim, out->shape);
}
REDUCE_EAGER(reduce_prod, AX_REDUCE_PROD)
REDUCTION(reduce_prod, 0, .jvp = ax_jvp_tangent, .tangent = reduce_prod_tangent,
          .lower = AX_LOWER(AX_KOP_REDUCE_PROD, AX_DT_NUMBER),
          AX_EXAMPLES(EXAMPLE(0.5, 2, (2, 3), .naxes = 2, .axes = {0, 1}),
                      EXAMPLE(-2, 2, (2, 3), .naxes = 1, .axes = {0})));

/* The positions where x equals the reduced value share its tangent equally (as JAX). */
TANGENT(reduce_extremum) {
    OPERAND;
    int kept[AX_MAX_RANK], k = 0;
    bool reduced[AX_MAX_RANK] = {0};
    for (int i = 0; i < p->naxes; i++) reduced[p->axes[i]] = true;
    for (int i = 0; i < x->ndim; i++)
        if (!reduced[i]) kept[k++] = i;
    ax_array *b = ax_lax_broadcast_in_dim(s, out, x->ndim, x->shape, kept);
    ax_array *mask = ax_lax_convert(s, ax_lax_binary(s, AX_P_EQ, x, b), x->dtype);
    ax_array *count = ax_lax_reduce(s, AX_P_REDUCE_SUM, mask, p->naxes, p->axes);
    ax_array *num = ax_lax_reduce(s, AX_P_REDUCE_SUM, ax_lax_mul(s, t, mask), p->naxes, p->axes);
    return ax_lax_div(s, num, count);
}
REDUCE_EAGER(reduce_max, AX_REDUCE_MAX)
REDUCTION(reduce_max, 0, .jvp = ax_jvp_tangent, .tangent = reduce_extremum_tangent,
          .lower = AX_LOWER(AX_KOP_REDUCE_MAX, AX_DT_NUMBER),
          AX_EXAMPLES(EXAMPLE(-2, 2, (2, 3), .naxes = 1, .axes = {0})));
REDUCE_EAGER(reduce_min, AX_REDUCE_MIN)
REDUCTION(reduce_min, 0, .jvp = ax_jvp_tangent, .tangent = reduce_extremum_tangent,
          .lower = AX_LOWER(AX_KOP_REDUCE_MIN, AX_DT_NUMBER),
          AX_EXAMPLES(EXAMPLE(-2, 2, (2, 3), .naxes = 1, .axes = {1}),
                      EXAMPLE(-2, 2, (2, 3), .naxes = 0)));

REDUCE_EAGER(reduce_and, AX_REDUCE_AND)
REDUCTION(reduce_and, ND, .lower = AX_LOWER(AX_KOP_REDUCE_AND, AX_DT_BOOL),
          AX_EXAMPLES({.nin = 1, .in = {AX_BOOLS(2, 3)}, .p = {.naxes = 1, .axes = {1}}}));
REDUCE_EAGER(reduce_or, AX_REDUCE_OR)
REDUCTION(reduce_or, ND, .lower = AX_LOWER(AX_KOP_REDUCE_OR, AX_DT_BOOL),
          AX_EXAMPLES({.nin = 1, .in = {AX_BOOLS(2, 3)}, .p = {.naxes = 1, .axes = {0}}}));

/* ---------------------------------------------------------------- along one axis */

static void format_arg_reduction(ax_strbuf *s, const ax_params *p) {
    ax_strbuf_appendf(s, "[axes=(%d,) index_dtype=%s]", p->axes[0], ax_dtype_name(p->dtype));
}

AX_EAGER(argmax) {
    (void)nin;
    return ax_eager_one(ax_argmax(cx, in[0], p->axes[0], p->dtype), out);
}
AX_EAGER(argmin) {
    (void)nin;
    return ax_eager_one(ax_argmin(cx, in[0], p->axes[0], p->dtype), out);
}

/* A row of an operation along axes[0]: the rest follows. */
#define ALONG_AXIS(name_, flags_, ...)                                                             \
    ROW(name_, flags_, .batch = ax_batch_axis, .lower = AX_LOWER_EAGER, __VA_ARGS__)

ALONG_AXIS(argmax, ND, .format_params = format_arg_reduction,
           AX_EXAMPLES(EXAMPLE(-2, 2, (2, 3), .naxes = 1, .axes = {1}, .dtype = AX_I32)));
ALONG_AXIS(argmin, ND, .format_params = format_arg_reduction,
           AX_EXAMPLES(EXAMPLE(-2, 2, (2, 3), .naxes = 1, .axes = {0}, .dtype = AX_I32)));

#define CUMULATIVE_EAGER(name, op)                                                                 \
    AX_EAGER(name) {                                                                               \
        (void)nin;                                                                                 \
        return ax_eager_one(ax_cumulative(cx, op, in[0], p->axes[0], p->flag != 0), out);          \
    }

static void format_cumulative(ax_strbuf *s, const ax_params *p) {
    ax_strbuf_appendf(s, "[axis=%d reverse=%s]", p->axes[0], p->flag ? "True" : "False");
}

/* The transpose of a cumulative sum is one in the other direction. */
static int cumsum_cotangent(ax_scope *s, const ax_params *p, int nin, ax_array **in,
                            const bool *lin, const ax_aval *ty, ax_array *ct, ax_array **r) {
    (void)nin, (void)in, (void)lin, (void)ty;
    ax_params q = *p;
    q.flag = !p->flag;
    r[0] = ax_lax_bind(s, AX_P_CUMSUM, 1, &ct, &q);
    return 0;
}
CUMULATIVE_EAGER(cumsum, AX_CUMSUM)
ALONG_AXIS(cumsum, LIN, .jvp = ax_jvp_linear, .linear_in = 1, .transpose = ax_transpose_linear,
           .cotangent = cumsum_cotangent, .format_params = format_cumulative,
           AX_EXAMPLES(EXAMPLE(-2, 2, (2, 3), .naxes = 1, .axes = {1}, .flag = 1),
                       EXAMPLE(-2, 2, (2, 3), .naxes = 1, .axes = {0})));

/* cumprod: out_i * cumsum(t / x)_i. (Exact away from zeros of x.) */
TANGENT(cumprod) {
    OPERAND;
    ax_params cum = {.naxes = 1, .axes = {p->axes[0]}, .flag = p->flag};
    ax_array *q = ax_lax_div(s, t, x);
    return ax_lax_mul(s, out, ax_lax_bind(s, AX_P_CUMSUM, 1, &q, &cum));
}
CUMULATIVE_EAGER(cumprod, AX_CUMPROD)
ALONG_AXIS(cumprod, 0, .jvp = ax_jvp_tangent, .tangent = cumprod_tangent,
           .format_params = format_cumulative,
           AX_EXAMPLES(EXAMPLE(0.5, 2, (4), .naxes = 1, .axes = {0}),
                       EXAMPLE(0.5, 2, (2, 3), .naxes = 1, .axes = {0}, .flag = 1)));

/* Gathers t along `axis` at positions idx (same shape as t): take_along_axis. */
static ax_array *take_along_axis(ax_scope *s, ax_array *t, ax_array *idx, int axis) {
    int n = t->ndim;
    int64_t shape[AX_MAX_RANK];
    memcpy(shape, t->shape, (size_t)n * sizeof *shape);
    shape[n] = 1;
    ax_array *cols[AX_MAX_RANK];
    ax_array *idx32 = ax_lax_convert(s, idx, AX_I32);
    for (int d = 0; d < n; d++) {
        ax_array *c;
        if (d == axis) {
            c = idx32;
        } else {
            ax_params io = {.dtype = AX_I32, .ndim = n, .naxes = 1, .axes = {d}};
            memcpy(io.shape, t->shape, (size_t)n * sizeof *shape);
            c = ax_lax_bind(s, AX_P_IOTA, 0, NULL, &io);
        }
        cols[d] = ax_lax_reshape(s, c, n + 1, shape);
    }
    ax_params cat = {.naxes = 1, .axes = {n}};
    ax_array *full = ax_lax_bind(s, AX_P_CONCATENATE, n, cols, &cat);
    ax_params g = {.naxes = n};
    for (int d = 0; d < n; d++) g.axes[d] = d;
    return ax_lax_bind(s, AX_P_GATHER, 2, (ax_array *[]){t, full}, &g);
}

/* cummax/cummin: each output takes the tangent of the element the running extremum came from
 * (the last position where x equals it). */
TANGENT(cumulative_extremum) {
    OPERAND;
    int axis = p->axes[0];
    ax_params io = {.dtype = AX_I32, .ndim = x->ndim, .naxes = 1, .axes = {axis}};
    memcpy(io.shape, x->shape, (size_t)x->ndim * sizeof *io.shape);
    ax_array *pos = ax_lax_bind(s, AX_P_IOTA, 0, NULL, &io);
    if (p->flag) {
        /* scanning from the end: the last position in scan order is the smallest index */
        ax_array *n1 = ax_lax_scalar_like(s, pos, (double)(x->shape[axis] - 1));
        pos = ax_lax_sub(s, n1, pos);
    }
    ax_array *hit = ax_lax_binary(s, AX_P_EQ, x, out);
    ax_array *marked = ax_lax_select(s, hit, pos, ax_lax_zeros_like(s, pos));
    ax_params cm = {.naxes = 1, .axes = {axis}, .flag = p->flag};
    ax_array *src = ax_lax_bind(s, AX_P_CUMMAX, 1, &marked, &cm);
    if (p->flag) src = ax_lax_sub(s, ax_lax_scalar_like(s, pos, (double)(x->shape[axis] - 1)), src);
    return take_along_axis(s, t, src, axis);
}
CUMULATIVE_EAGER(cummax, AX_CUMMAX)
ALONG_AXIS(cummax, 0, .jvp = ax_jvp_tangent, .tangent = cumulative_extremum_tangent,
           .format_params = format_cumulative,
           AX_EXAMPLES(EXAMPLE(-2, 2, (5), .naxes = 1, .axes = {0}),
                       EXAMPLE(-2, 2, (2, 4), .naxes = 1, .axes = {1}, .flag = 1)));
CUMULATIVE_EAGER(cummin, AX_CUMMIN)
ALONG_AXIS(cummin, 0, .jvp = ax_jvp_tangent, .tangent = cumulative_extremum_tangent,
           .format_params = format_cumulative,
           AX_EXAMPLES(EXAMPLE(-2, 2, (5), .naxes = 1, .axes = {0}, .flag = 1),
                       EXAMPLE(-2, 2, (2, 4), .naxes = 1, .axes = {1})));

/* ---------------------------------------------------------------- sorting */

AX_EAGER(sort) {
    (void)nin;
    return ax_eager_one(ax_sort(cx, in[0], p->axes[0], p->flag != 0), out);
}
static void format_sort(ax_strbuf *s, const ax_params *p) {
    ax_strbuf_appendf(s, "[dimension=%d descending=%s]", p->axes[0], p->flag ? "True" : "False");
}
/* The tangents go where their elements go. */
TANGENT(sort) {
    OPERAND;
    ax_params as = *p;
    as.dtype = AX_I32;
    ax_array *idx = ax_lax_bind(s, AX_P_ARGSORT, 1, &x, &as);
    return take_along_axis(s, t, idx, p->axes[0]);
}
ALONG_AXIS(sort, 0, .jvp = ax_jvp_tangent, .tangent = sort_tangent, .format_params = format_sort,
           AX_EXAMPLES(EXAMPLE(-2, 2, (4), .naxes = 1, .axes = {0}),
                       EXAMPLE(-2, 2, (2, 3), .naxes = 1, .axes = {1}, .flag = 1)));

AX_EAGER(argsort) {
    (void)nin;
    return ax_eager_one(ax_argsort(cx, in[0], p->axes[0], p->flag != 0, p->dtype), out);
}
static void format_argsort(ax_strbuf *s, const ax_params *p) {
    ax_strbuf_appendf(s, "[dimension=%d descending=%s index_dtype=%s]", p->axes[0],
                      p->flag ? "True" : "False", ax_dtype_name(p->dtype));
}
ALONG_AXIS(argsort, ND, .format_params = format_argsort,
           AX_EXAMPLES(EXAMPLE(-2, 2, (2, 3), .naxes = 1, .axes = {0}, .dtype = AX_I32)));

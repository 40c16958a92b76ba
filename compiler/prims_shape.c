/* Shape operations (views and copies of one array, concatenation, padding) and iota: each
 * one's row and every rule about it (kernels: runtime/shape_ops.h, runtime/creation.h). All
 * are linear in their array operands: the tangent is the operation of the tangents. */
#include <string.h>

#include "../runtime/creation.h"
#include "../runtime/shape_ops.h"
#include "prim_rows.h"

/* A cotangent rule (ax_cotangent_rule) of a primitive of one operand, of type ty[0]. */
#define COTANGENT(name)                                                                            \
    static int name##_cotangent(ax_scope *s, AX_UNUSED const ax_params *p, AX_UNUSED int nin,      \
                                AX_UNUSED ax_array **in, AX_UNUSED const bool *lin,                \
                                AX_UNUSED const ax_aval *ty, ax_array *ct, ax_array **r)
/* A batching rule (ax_batch_rule). */
#define BATCH(name)                                                                                \
    static int name##_batch(ax_ctx *cx, ax_prim prim, const ax_params *p, AX_UNUSED int nin,       \
                            ax_array **in, const int *bdim, int64_t size, ax_array **out,          \
                            int *out_bdim)

/* A row of a linear shape operation: the rest follows. */
#define SHAPE_ROW(name_, nin_, lin_, ...)                                                          \
    const ax_prim_info ax_##name_##_info = {.name = #name_,                                        \
                                            .nin = nin_,                                           \
                                            .nout = 1,                                             \
                                            .flags = LIN,                                          \
                                            .shape = ax_shape_##name_,                             \
                                            .eager = eager_##name_,                                \
                                            .jvp = ax_jvp_linear,                                  \
                                            .linear_in = lin_,                                     \
                                            .transpose = ax_transpose_linear,                      \
                                            .cotangent = name_##_cotangent,                        \
                                            __VA_ARGS__}

/* One example: a float operand of shape `dims` (a parenthesised list) and the parameters. */
#define EXAMPLE(dims, ...)                                                                         \
    {                                                                                              \
        .nin = 1, .in = {AX_FLOATS(-2, 2, AX_LIST dims)}, .p = { __VA_ARGS__ }                     \
    }

/* The operation's parameters, printed: "[dimensions=(0,)]" and the like. */
static void format_named_ints(ax_strbuf *s, const char *name, int n, const int *v) {
    ax_strbuf_appendf(s, "[%s=", name);
    ax_ir_format_ints(s, n, v);
    ax_strbuf_append(s, "]");
}

/* Parameters with the batch dimension prepended: a shape gains `size` in front, axes shift. */
static void prepend_shape(ax_params *q, const ax_params *p, int64_t size) {
    memmove(q->shape + 1, p->shape, (size_t)p->ndim * sizeof *q->shape);
    q->shape[0] = size, q->ndim = p->ndim + 1;
}
static void prepend_axis(ax_params *q, const ax_params *p) {
    for (int i = 0; i < p->naxes; i++) q->axes[i + 1] = p->axes[i] + 1;
    q->axes[0] = 0, q->naxes = p->naxes + 1;
}

/* ---------------------------------------------------------------- views */

AX_EAGER(reshape) {
    (void)nin;
    return ax_eager_one(ax_reshape(cx, in[0], p->ndim, p->shape), out);
}
static void reshape_format(ax_strbuf *s, const ax_params *p) {
    ax_strbuf_append(s, "[new_sizes=");
    ax_ir_format_i64s(s, p->ndim, p->shape);
    ax_strbuf_append(s, "]");
}
COTANGENT(reshape) {
    r[0] = ax_lax_reshape(s, ct, ty[0].ndim, ty[0].shape);
    return 0;
}
BATCH(reshape) {
    ax_params q = *p;
    prepend_shape(&q, p, size);
    return ax_batch_one(cx, prim, &q, in, bdim, size, out, out_bdim);
}
SHAPE_ROW(reshape, 1, 1, .batch = reshape_batch, .identity = ax_identity_operand,
          .format_params = reshape_format, .lower = AX_LOWER(AX_KOP_RESHAPE, AX_DT_ALL),
          AX_EXAMPLES(EXAMPLE((2, 3), .ndim = 1, .shape = {6}),
                      EXAMPLE((2, 3), .ndim = 2, .shape = {3, 2})));

AX_EAGER(transpose) {
    (void)nin;
    return ax_eager_one(ax_transpose(cx, in[0], p->axes), out);
}
static int transpose_identity(const ax_params *p, const ax_ir_atom *in) {
    (void)in;
    for (int i = 0; i < p->naxes; i++)
        if (p->axes[i] != i) return -1;
    return 0;
}
static void transpose_format(ax_strbuf *s, const ax_params *p) {
    format_named_ints(s, "permutation", p->naxes, p->axes);
}
COTANGENT(transpose) {
    int inv[AX_MAX_RANK];
    for (int i = 0; i < p->naxes; i++) inv[p->axes[i]] = i;
    r[0] = ax_lax_transpose(s, ct, inv);
    return 0;
}
BATCH(transpose) {
    ax_params q = *p;
    prepend_axis(&q, p);
    return ax_batch_one(cx, prim, &q, in, bdim, size, out, out_bdim);
}
SHAPE_ROW(transpose, 1, 1, .batch = transpose_batch, .identity = transpose_identity,
          .format_params = transpose_format, .lower = AX_LOWER(AX_KOP_TRANSPOSE, AX_DT_ALL),
          AX_EXAMPLES(EXAMPLE((2, 3), .naxes = 2, .axes = {1, 0}),
                      EXAMPLE((2, 3, 2), .naxes = 3, .axes = {2, 0, 1})));

AX_EAGER(broadcast_in_dim) {
    (void)nin;
    return ax_eager_one(ax_broadcast_in_dim(cx, in[0], p->ndim, p->shape, p->axes), out);
}
static void broadcast_in_dim_format(ax_strbuf *s, const ax_params *p) {
    ax_strbuf_append(s, "[broadcast_dimensions=");
    ax_ir_format_ints(s, p->naxes, p->axes);
    ax_strbuf_append(s, " shape=");
    ax_ir_format_i64s(s, p->ndim, p->shape);
    ax_strbuf_append(s, "]");
}
/* The cotangent summed over the dimensions the operand was broadcast along. */
COTANGENT(broadcast_in_dim) {
    const ax_aval *x = &ty[0];
    bool keep[AX_MAX_RANK] = {0};
    for (int i = 0; i < x->ndim; i++)
        keep[p->axes[i]] = !(x->shape[i] == 1 && p->shape[p->axes[i]] != 1);
    int axes[AX_MAX_RANK], n = 0;
    for (int d = 0; d < p->ndim; d++)
        if (!keep[d]) axes[n++] = d;
    ax_array *sum = n ? ax_lax_reduce(s, AX_P_REDUCE_SUM, ct, n, axes) : ct;
    r[0] = ax_lax_reshape(s, sum, x->ndim, x->shape);
    return 0;
}
BATCH(broadcast_in_dim) {
    ax_params q = *p;
    prepend_shape(&q, p, size);
    prepend_axis(&q, p);
    return ax_batch_one(cx, prim, &q, in, bdim, size, out, out_bdim);
}
SHAPE_ROW(broadcast_in_dim, 1, 1, .batch = broadcast_in_dim_batch, .identity = ax_identity_operand,
          .format_params = broadcast_in_dim_format, .lower = AX_LOWER(AX_KOP_BROADCAST, AX_DT_ALL),
          AX_EXAMPLES(EXAMPLE((3), .ndim = 2, .shape = {2, 3}, .naxes = 1, .axes = {1}),
                      EXAMPLE((2, 1), .ndim = 3, .shape = {2, 2, 3}, .naxes = 2, .axes = {0, 1})));

AX_EAGER(squeeze) {
    (void)nin;
    return ax_eager_one(ax_squeeze(cx, in[0], p->naxes, p->axes), out);
}
static void format_dimensions(ax_strbuf *s, const ax_params *p) {
    format_named_ints(s, "dimensions", p->naxes, p->axes);
}
COTANGENT(squeeze) {
    r[0] = ax_lax_reshape(s, ct, ty[0].ndim, ty[0].shape);
    return 0;
}
SHAPE_ROW(squeeze, 1, 1, .batch = ax_batch_axes, .identity = ax_identity_operand,
          .format_params = format_dimensions, .lower = AX_LOWER(AX_KOP_RESHAPE, AX_DT_ALL),
          AX_EXAMPLES(EXAMPLE((1, 3), .naxes = 1, .axes = {0}),
                      EXAMPLE((2, 1, 3, 1), .naxes = 2, .axes = {1, 3})));

AX_EAGER(expand_dims) {
    (void)nin;
    return ax_eager_one(ax_expand_dims(cx, in[0], p->naxes, p->axes), out);
}
COTANGENT(expand_dims) {
    r[0] = ax_lax_reshape(s, ct, ty[0].ndim, ty[0].shape);
    return 0;
}
SHAPE_ROW(expand_dims, 1, 1, .batch = ax_batch_axes, .identity = ax_identity_operand,
          .format_params = format_dimensions, .lower = AX_LOWER(AX_KOP_RESHAPE, AX_DT_ALL),
          AX_EXAMPLES(EXAMPLE((3), .naxes = 1, .axes = {1}),
                      EXAMPLE((2, 3), .naxes = 2, .axes = {0, 2})));

/* ---------------------------------------------------------------- copies */

AX_EAGER(rev) {
    (void)nin;
    return ax_eager_one(ax_rev(cx, in[0], p->naxes, p->axes), out);
}
COTANGENT(rev) {
    r[0] = ax_lax_bind(s, AX_P_REV, 1, &ct, p);
    return 0;
}
SHAPE_ROW(rev, 1, 1, .batch = ax_batch_axes, .format_params = format_dimensions,
          .lower = AX_LOWER_EAGER,
          AX_EXAMPLES(EXAMPLE((3), .naxes = 1, .axes = {0}),
                      EXAMPLE((2, 3), .naxes = 1, .axes = {1})));

AX_EAGER(slice) {
    (void)nin;
    return ax_eager_one(ax_slice(cx, in[0], p->lo, p->hi, p->step), out);
}
static void slice_format(ax_strbuf *s, const ax_params *p) {
    ax_strbuf_append(s, "[start_indices=");
    ax_ir_format_i64s(s, p->ndim, p->lo);
    ax_strbuf_append(s, " limit_indices=");
    ax_ir_format_i64s(s, p->ndim, p->hi);
    ax_strbuf_append(s, " strides=");
    ax_ir_format_i64s(s, p->ndim, p->step);
    ax_strbuf_append(s, "]");
}
/* The cotangent padded back to the operand's shape with zeros (interior padding for strides). */
COTANGENT(slice) {
    const ax_aval *x = &ty[0];
    ax_params pad = {.ndim = x->ndim};
    for (int d = 0; d < x->ndim; d++) {
        int64_t n = ct->shape[d];
        pad.lo[d] = p->lo[d];
        pad.step[d] = n > 0 ? p->step[d] - 1 : 0;
        pad.hi[d] = x->shape[d] - p->lo[d] - (n > 0 ? (n - 1) * p->step[d] + 1 : 0);
    }
    ax_array *zero = ax_lax_scalar_like(s, ct, 0.0);
    r[0] = ax_lax_bind(s, AX_P_PAD, 2, (ax_array *[]){ct, zero}, &pad);
    return 0;
}
BATCH(slice) {
    ax_params q = *p;
    memmove(q.lo + 1, p->lo, (size_t)p->ndim * sizeof *q.lo);
    memmove(q.hi + 1, p->hi, (size_t)p->ndim * sizeof *q.hi);
    memmove(q.step + 1, p->step, (size_t)p->ndim * sizeof *q.step);
    q.lo[0] = 0, q.hi[0] = size, q.step[0] = 1, q.ndim = p->ndim + 1;
    return ax_batch_one(cx, prim, &q, in, bdim, size, out, out_bdim);
}
SHAPE_ROW(slice, 1, 1, .batch = slice_batch, .format_params = slice_format, .lower = AX_LOWER_EAGER,
          AX_EXAMPLES(EXAMPLE((7), .ndim = 1, .lo = {1}, .hi = {6}, .step = {2}),
                      EXAMPLE((3, 4), .ndim = 2, .lo = {1, 0}, .hi = {3, 4}, .step = {1, 3})));

AX_EAGER(pad) {
    (void)nin;
    return ax_eager_one(ax_pad(cx, in[0], in[1], p->lo, p->hi, p->step), out);
}
static void pad_format(ax_strbuf *s, const ax_params *p) {
    ax_strbuf_append(s, "[padding_config=(");
    for (int i = 0; i < p->ndim; i++)
        ax_strbuf_appendf(s, "%s(%lld, %lld, %lld)", i ? ", " : "", (long long)p->lo[i],
                          (long long)p->hi[i], (long long)p->step[i]);
    ax_strbuf_append(s, p->ndim == 1 ? ",)]" : ")]");
}
/* pad's transpose for the operand: undo negative padding with zeros, then slice. */
static ax_array *pad_transpose(ax_scope *s, const ax_params *p, ax_array *ct, const ax_aval *in) {
    int n = in->ndim;
    ax_params unpad = {.ndim = n}, sl = {.ndim = n};
    for (int d = 0; d < n; d++) {
        unpad.lo[d] = p->lo[d] < 0 ? -p->lo[d] : 0;
        unpad.hi[d] = p->hi[d] < 0 ? -p->hi[d] : 0;
    }
    ax_array *zero = ax_lax_scalar_like(s, ct, 0.0);
    ax_array *u = ax_lax_bind(s, AX_P_PAD, 2, (ax_array *[]){ct, zero}, &unpad);
    if (!u) return NULL;
    for (int d = 0; d < n; d++) {
        sl.lo[d] = p->lo[d] > 0 ? p->lo[d] : 0;
        sl.hi[d] = u->shape[d] - (p->hi[d] > 0 ? p->hi[d] : 0);
        sl.step[d] = p->step[d] + 1;
    }
    return ax_lax_bind(s, AX_P_SLICE, 1, &u, &sl);
}

/* The operand's cotangent is the part of ct it landed on; the padding value's, the rest. */
COTANGENT(pad) {
    if (lin[0]) r[0] = pad_transpose(s, p, ct, &ty[0]);
    if (lin[1]) {
        ax_array *total = ax_lax_reduce_sum_all(s, ct);
        ax_array *inner = lin[0] ? ax_lax_reduce_sum_all(s, r[0])
                                 : ax_lax_reduce_sum_all(s, pad_transpose(s, p, ct, &ty[0]));
        r[1] = ax_lax_sub(s, total, inner);
    }
    return 0;
}
static ax_array *batched_pad(ax_scope *s, const ax_params *p, ax_array **in, const int *bdim,
                             int64_t size) {
    ax_params q = *p;
    q.ndim = p->ndim + 1;
    memmove(q.lo + 1, p->lo, (size_t)p->ndim * sizeof *q.lo);
    memmove(q.hi + 1, p->hi, (size_t)p->ndim * sizeof *q.hi);
    memmove(q.step + 1, p->step, (size_t)p->ndim * sizeof *q.step);
    q.lo[0] = q.hi[0] = q.step[0] = 0;
    ax_array *x = ax_batch_first(s, in[0], bdim[0], size);
    if (bdim[1] < 0) return ax_lax_bind(s, AX_P_PAD, 2, (ax_array *[]){x, in[1]}, &q);
    /* A batched padding value: pad with zeros, then select the value where padding went. */
    ax_array *zero = ax_lax_scalar_like(s, in[1], 0.0);
    ax_array *padded = ax_lax_bind(s, AX_P_PAD, 2, (ax_array *[]){x, zero}, &q);
    ax_array *ones = ax_lax_ones_like(s, x);
    ax_array *mask = ax_lax_binary(
        s, AX_P_NE, ax_lax_bind(s, AX_P_PAD, 2, (ax_array *[]){ones, zero}, &q), zero);
    if (!padded || !mask) return NULL;
    ax_array *v = ax_lax_broadcast_in_dim(s, ax_batch_first(s, in[1], bdim[1], size), padded->ndim,
                                          padded->shape, (int[]){0});
    return ax_lax_select(s, mask, padded, v);
}

BATCH(pad) {
    (void)prim;
    ax_scope s;
    ax_scope_begin(&s, cx);
    return ax_batch_done(&s, batched_pad(&s, p, in, bdim, size), out, out_bdim);
}
SHAPE_ROW(pad, 2, AX_LINEAR_ALL, .batch = pad_batch, .format_params = pad_format,
          .lower = AX_LOWER_EAGER,
          AX_EXAMPLES({.nin = 2,
                       .in = {AX_FLOATS(-2, 2, 3), AX_SCALAR(-2, 2)},
                       .p = {.ndim = 1, .lo = {1}, .hi = {-1}, .step = {1}}},
                      {.nin = 2,
                       .in = {AX_FLOATS(-2, 2, 2, 3), AX_SCALAR(-2, 2)},
                       .p = {.ndim = 2, .lo = {0, -1}, .hi = {2, 1}, .step = {1, 0}}}));

AX_EAGER(concatenate) {
    return ax_eager_one(ax_concatenate(cx, nin, in, p->axes[0]), out);
}
static void concatenate_format(ax_strbuf *s, const ax_params *p) {
    ax_strbuf_appendf(s, "[dimension=%d]", p->axes[0]);
}
/* Each operand's slice of the cotangent. */
COTANGENT(concatenate) {
    int axis = p->axes[0];
    int64_t at = 0;
    for (int i = 0; i < nin; i++) {
        const ax_aval *t = &ty[i];
        if (lin[i]) {
            ax_params sl = {.ndim = t->ndim};
            for (int d = 0; d < t->ndim; d++) sl.lo[d] = 0, sl.hi[d] = ct->shape[d], sl.step[d] = 1;
            sl.lo[axis] = at, sl.hi[axis] = at + t->shape[axis];
            r[i] = ax_lax_bind(s, AX_P_SLICE, 1, &ct, &sl);
        }
        at += t->shape[axis];
    }
    return 0;
}
BATCH(concatenate) {
    (void)prim;
    ax_scope s;
    ax_scope_begin(&s, cx);
    ax_array *small[8], **args = ax_scratch(cx, small, 8, nin, sizeof *args);
    ax_array *r = NULL;
    if (args) {
        for (int i = 0; i < nin; i++) args[i] = ax_batch_first(&s, in[i], bdim[i], size);
        ax_params q = *p;
        q.axes[0]++;
        r = ax_lax_bind(&s, AX_P_CONCATENATE, nin, args, &q);
        ax_scratch_free(args, small);
    }
    return ax_batch_done(&s, r, out, out_bdim);
}
SHAPE_ROW(concatenate, -1, AX_LINEAR_ALL, .batch = concatenate_batch,
          .format_params = concatenate_format, .lower = AX_LOWER_EAGER,
          AX_EXAMPLES({.nin = 2,
                       .in = {AX_FLOATS(-2, 2, 2), AX_FLOATS(-2, 2, 3)},
                       .p = {.naxes = 1, .axes = {0}}},
                      {.nin = 3,
                       .in = {AX_FLOATS(-2, 2, 2, 1), AX_FLOATS(-2, 2, 2, 3),
                              AX_FLOATS(-2, 2, 2, 2)},
                       .p = {.naxes = 1, .axes = {1}}}));

/* ---------------------------------------------------------------- creation */

AX_EAGER(iota) {
    (void)nin, (void)in;
    return ax_eager_one(ax_iota(cx, p->dtype, p->ndim, p->shape, p->axes[0]), out);
}
static void iota_format(ax_strbuf *s, const ax_params *p) {
    ax_strbuf_appendf(s, "[dimension=%d dtype=%s shape=", p->axes[0], ax_dtype_name(p->dtype));
    ax_ir_format_i64s(s, p->ndim, p->shape);
    ax_strbuf_append(s, "]");
}
/* No operands: nothing to differentiate or batch. */
const ax_prim_info ax_iota_info = {
    .name = "iota",
    .nin = 0,
    .nout = 1,
    .flags = ND,
    .shape = ax_shape_iota,
    .eager = eager_iota,
    .format_params = iota_format,
    .lower = AX_LOWER(AX_KOP_INDEX, AX_DT_NUMBER),
    AX_EXAMPLES(
        {.nin = 0, .p = {.dtype = AX_I32, .ndim = 2, .shape = {2, 3}, .naxes = 1, .axes = {1}}},
        {.nin = 0, .p = {.dtype = AX_F32, .ndim = 1, .shape = {5}, .naxes = 1, .axes = {0}}}),
};

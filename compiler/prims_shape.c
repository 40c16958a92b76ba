/* Shape operations (views and copies of one array) and iota: their rows and every rule about
 * them (kernels: runtime/shape_ops.h, runtime/creation.h). */
#include "../runtime/creation.h"
#include "../runtime/shape_ops.h"
#include "prim_rows.h"

/* ---------------------------------------------------------------- eager kernels */

AX_EAGER(reshape) {
    (void)nin;
    return ax_eager_one(ax_reshape(cx, in[0], p->ndim, p->shape), out);
}

AX_EAGER(transpose) {
    (void)nin;
    return ax_eager_one(ax_transpose(cx, in[0], p->axes), out);
}

AX_EAGER(broadcast_in_dim) {
    (void)nin;
    return ax_eager_one(ax_broadcast_in_dim(cx, in[0], p->ndim, p->shape, p->axes), out);
}

AX_EAGER(concatenate) {
    return ax_eager_one(ax_concatenate(cx, nin, in, p->axes[0]), out);
}

AX_EAGER(slice) {
    (void)nin;
    return ax_eager_one(ax_slice(cx, in[0], p->lo, p->hi, p->step), out);
}

AX_EAGER(pad) {
    (void)nin;
    return ax_eager_one(ax_pad(cx, in[0], in[1], p->lo, p->hi, p->step), out);
}

AX_EAGER(squeeze) {
    (void)nin;
    return ax_eager_one(ax_squeeze(cx, in[0], p->naxes, p->axes), out);
}

AX_EAGER(expand_dims) {
    (void)nin;
    return ax_eager_one(ax_expand_dims(cx, in[0], p->naxes, p->axes), out);
}

AX_EAGER(rev) {
    (void)nin;
    return ax_eager_one(ax_rev(cx, in[0], p->naxes, p->axes), out);
}

AX_EAGER(iota) {
    (void)nin, (void)in;
    return ax_eager_one(ax_iota(cx, p->dtype, p->ndim, p->shape, p->axes[0]), out);
}

/* ---------------------------------------------------------------- rows */

const ax_prim_info ax_reshape_info = {
    .name = "reshape",
    .nin = 1,
    .nout = 1,
    .flags = LIN,
    .shape = ax_shape_reshape,
    .eager = eager_reshape,
    .jvp = ax_jvp_linear,
    .transpose = ax_transpose_linear,
    .batch = ax_batch_shape,
    .lower = AX_LOWER(AX_KOP_RESHAPE, AX_DT_ALL),
};

const ax_prim_info ax_transpose_info = {
    .name = "transpose",
    .nin = 1,
    .nout = 1,
    .flags = LIN,
    .shape = ax_shape_transpose,
    .eager = eager_transpose,
    .jvp = ax_jvp_linear,
    .transpose = ax_transpose_linear,
    .batch = ax_batch_shape,
    .lower = AX_LOWER(AX_KOP_TRANSPOSE, AX_DT_ALL),
};

const ax_prim_info ax_broadcast_in_dim_info = {
    .name = "broadcast_in_dim",
    .nin = 1,
    .nout = 1,
    .flags = LIN,
    .shape = ax_shape_broadcast_in_dim,
    .eager = eager_broadcast_in_dim,
    .jvp = ax_jvp_linear,
    .transpose = ax_transpose_linear,
    .batch = ax_batch_shape,
    .lower = AX_LOWER(AX_KOP_BROADCAST, AX_DT_ALL),
};

const ax_prim_info ax_concatenate_info = {
    .name = "concatenate",
    .nin = -1,
    .nout = 1,
    .flags = LIN,
    .shape = ax_shape_concatenate,
    .eager = eager_concatenate,
    .jvp = ax_jvp_linear,
    .transpose = ax_transpose_linear,
    .batch = ax_batch_shape,
    .lower = AX_LOWER_EAGER,
};

const ax_prim_info ax_slice_info = {
    .name = "slice",
    .nin = 1,
    .nout = 1,
    .flags = LIN,
    .shape = ax_shape_slice,
    .eager = eager_slice,
    .jvp = ax_jvp_linear,
    .transpose = ax_transpose_linear,
    .batch = ax_batch_shape,
    .lower = AX_LOWER_EAGER,
};

const ax_prim_info ax_pad_info = {
    .name = "pad",
    .nin = 2,
    .nout = 1,
    .flags = LIN,
    .shape = ax_shape_pad,
    .eager = eager_pad,
    .jvp = ax_jvp_linear,
    .transpose = ax_transpose_linear,
    .batch = ax_batch_shape,
    .lower = AX_LOWER_EAGER,
};

const ax_prim_info ax_squeeze_info = {
    .name = "squeeze",
    .nin = 1,
    .nout = 1,
    .flags = LIN,
    .shape = ax_shape_squeeze,
    .eager = eager_squeeze,
    .jvp = ax_jvp_linear,
    .transpose = ax_transpose_linear,
    .batch = ax_batch_shape,
    .lower = AX_LOWER(AX_KOP_RESHAPE, AX_DT_ALL),
};

const ax_prim_info ax_expand_dims_info = {
    .name = "expand_dims",
    .nin = 1,
    .nout = 1,
    .flags = LIN,
    .shape = ax_shape_expand_dims,
    .eager = eager_expand_dims,
    .jvp = ax_jvp_linear,
    .transpose = ax_transpose_linear,
    .batch = ax_batch_shape,
    .lower = AX_LOWER(AX_KOP_RESHAPE, AX_DT_ALL),
};

const ax_prim_info ax_rev_info = {
    .name = "rev",
    .nin = 1,
    .nout = 1,
    .flags = LIN,
    .shape = ax_shape_rev,
    .eager = eager_rev,
    .jvp = ax_jvp_linear,
    .transpose = ax_transpose_linear,
    .batch = ax_batch_shape,
    .lower = AX_LOWER_EAGER,
};

const ax_prim_info ax_iota_info = {
    .name = "iota",
    .nin = 0,
    .nout = 1,
    .flags = ND,
    .shape = ax_shape_iota,
    .eager = eager_iota,
    .lower = AX_LOWER(AX_KOP_INDEX, AX_DT_NUMBER),
};

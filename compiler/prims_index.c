/* Indexing: gathers, scatters and dynamic slices, their rows and every rule about them
 * (kernels: runtime/index.h, runtime/dynamic_slice.h). */
#include "../runtime/dynamic_slice.h"
#include "prim_rows.h"

/* ---------------------------------------------------------------- eager kernels */

AX_EAGER(gather) {
    (void)nin;
    return ax_eager_one(ax_gather(cx, in[0], in[1], p->naxes, p->axes), out);
}

AX_EAGER(scatter) {
    (void)nin;
    return ax_eager_one(
        ax_scatter(cx, in[0], in[1], in[2], p->naxes, p->axes, (ax_scatter_mode)p->flag), out);
}

/* Reads the rank-0 start indices of dynamic_slice / dynamic_update_slice. */
static void read_starts(int n, ax_array **starts, int64_t *out) {
    for (int i = 0; i < n; i++) out[i] = ax_array_get_i64(starts[i], 0);
}

AX_EAGER(dynamic_slice) {
    int64_t starts[AX_MAX_RANK];
    read_starts(nin - 1, in + 1, starts);
    return ax_eager_one(ax_dynamic_slice(cx, in[0], starts, p->shape), out);
}

AX_EAGER(dynamic_update_slice) {
    (void)p;
    int64_t starts[AX_MAX_RANK];
    read_starts(nin - 2, in + 2, starts);
    return ax_eager_one(ax_dynamic_update_slice(cx, in[0], in[1], starts), out);
}

/* ---------------------------------------------------------------- rows */

const ax_prim_info ax_gather_info = {
    .name = "gather",
    .nin = 2,
    .nout = 1,
    .flags = LIN,
    .shape = ax_shape_gather,
    .eager = eager_gather,
    .jvp = ax_jvp_linear,
    .transpose = ax_transpose_linear,
    .batch = ax_batch_indexing,
    .lower = AX_LOWER_EAGER,
};

const ax_prim_info ax_scatter_info = {
    .name = "scatter",
    .nin = 3,
    .nout = 1,
    .flags = LIN,
    .shape = ax_shape_scatter,
    .eager = eager_scatter,
    .jvp = ax_jvp_special,
    .transpose = ax_transpose_linear,
    .batch = ax_batch_indexing,
    .lower = AX_LOWER_EAGER,
};

const ax_prim_info ax_dynamic_slice_info = {
    .name = "dynamic_slice",
    .nin = -1,
    .nout = 1,
    .flags = LIN,
    .shape = ax_shape_dynamic_slice,
    .eager = eager_dynamic_slice,
    .jvp = ax_jvp_linear,
    .transpose = ax_transpose_linear,
    .batch = ax_batch_indexing,
    .lower = AX_LOWER_EAGER,
};

const ax_prim_info ax_dynamic_update_slice_info = {
    .name = "dynamic_update_slice",
    .nin = -1,
    .nout = 1,
    .flags = LIN,
    .shape = ax_shape_dynamic_update_slice,
    .eager = eager_dynamic_update_slice,
    .jvp = ax_jvp_linear,
    .transpose = ax_transpose_linear,
    .batch = ax_batch_indexing,
    .lower = AX_LOWER_EAGER,
};

/* Reductions, arg-reductions, cumulative reductions and sorts along axes: their rows and every
 * rule about them (kernels: runtime/reduce.h, runtime/sort.h). */
#include "../runtime/sort.h"
#include "prim_rows.h"

/* ---------------------------------------------------------------- eager kernels */

#define REDUCE_EAGER(name, op)                                                                     \
    AX_EAGER(name) {                                                                               \
        (void)nin;                                                                                 \
        return ax_eager_one(ax_reduce(cx, op, in[0], p->naxes, p->axes), out);                     \
    }
#define CUMULATIVE_EAGER(name, op)                                                                 \
    AX_EAGER(name) {                                                                               \
        (void)nin;                                                                                 \
        return ax_eager_one(ax_cumulative(cx, op, in[0], p->axes[0], p->flag != 0), out);          \
    }

// clang-format off
REDUCE_EAGER(reduce_sum, AX_REDUCE_SUM) REDUCE_EAGER(reduce_prod, AX_REDUCE_PROD)
REDUCE_EAGER(reduce_max, AX_REDUCE_MAX) REDUCE_EAGER(reduce_min, AX_REDUCE_MIN)
REDUCE_EAGER(reduce_and, AX_REDUCE_AND) REDUCE_EAGER(reduce_or, AX_REDUCE_OR)

CUMULATIVE_EAGER(cumsum, AX_CUMSUM) CUMULATIVE_EAGER(cumprod, AX_CUMPROD)
CUMULATIVE_EAGER(cummax, AX_CUMMAX) CUMULATIVE_EAGER(cummin, AX_CUMMIN)
    // clang-format on

    AX_EAGER(argmax) {
    (void)nin;
    return ax_eager_one(ax_argmax(cx, in[0], p->axes[0], p->dtype), out);
}

AX_EAGER(argmin) {
    (void)nin;
    return ax_eager_one(ax_argmin(cx, in[0], p->axes[0], p->dtype), out);
}

AX_EAGER(sort) {
    (void)nin;
    return ax_eager_one(ax_sort(cx, in[0], p->axes[0], p->flag != 0), out);
}

AX_EAGER(argsort) {
    (void)nin;
    return ax_eager_one(ax_argsort(cx, in[0], p->axes[0], p->flag != 0, p->dtype), out);
}

/* ---------------------------------------------------------------- rows */

const ax_prim_info ax_reduce_sum_info = {
    .name = "reduce_sum",
    .nin = 1,
    .nout = 1,
    .flags = LIN,
    .shape = ax_shape_reduce_sum,
    .eager = eager_reduce_sum,
    .jvp = ax_jvp_linear,
    .transpose = ax_transpose_linear,
    .batch = ax_batch_axes,
    .lower = AX_LOWER(AX_KOP_REDUCE_SUM, AX_DT_NUMBER),
};

const ax_prim_info ax_reduce_prod_info = {
    .name = "reduce_prod",
    .nin = 1,
    .nout = 1,
    .flags = 0,
    .shape = ax_shape_reduce_prod,
    .eager = eager_reduce_prod,
    .jvp = ax_jvp_special,
    .batch = ax_batch_axes,
    .lower = AX_LOWER(AX_KOP_REDUCE_PROD, AX_DT_NUMBER),
};

const ax_prim_info ax_reduce_max_info = {
    .name = "reduce_max",
    .nin = 1,
    .nout = 1,
    .flags = 0,
    .shape = ax_shape_reduce_max,
    .eager = eager_reduce_max,
    .jvp = ax_jvp_special,
    .batch = ax_batch_axes,
    .lower = AX_LOWER(AX_KOP_REDUCE_MAX, AX_DT_NUMBER),
};

const ax_prim_info ax_reduce_min_info = {
    .name = "reduce_min",
    .nin = 1,
    .nout = 1,
    .flags = 0,
    .shape = ax_shape_reduce_min,
    .eager = eager_reduce_min,
    .jvp = ax_jvp_special,
    .batch = ax_batch_axes,
    .lower = AX_LOWER(AX_KOP_REDUCE_MIN, AX_DT_NUMBER),
};

const ax_prim_info ax_reduce_and_info = {
    .name = "reduce_and",
    .nin = 1,
    .nout = 1,
    .flags = ND,
    .shape = ax_shape_reduce_and,
    .eager = eager_reduce_and,
    .batch = ax_batch_axes,
    .lower = AX_LOWER(AX_KOP_REDUCE_AND, AX_DT_BOOL),
};

const ax_prim_info ax_reduce_or_info = {
    .name = "reduce_or",
    .nin = 1,
    .nout = 1,
    .flags = ND,
    .shape = ax_shape_reduce_or,
    .eager = eager_reduce_or,
    .batch = ax_batch_axes,
    .lower = AX_LOWER(AX_KOP_REDUCE_OR, AX_DT_BOOL),
};

const ax_prim_info ax_argmax_info = {
    .name = "argmax",
    .nin = 1,
    .nout = 1,
    .flags = ND,
    .shape = ax_shape_argmax,
    .eager = eager_argmax,
    .batch = ax_batch_axes,
    .lower = AX_LOWER_EAGER,
};

const ax_prim_info ax_argmin_info = {
    .name = "argmin",
    .nin = 1,
    .nout = 1,
    .flags = ND,
    .shape = ax_shape_argmin,
    .eager = eager_argmin,
    .batch = ax_batch_axes,
    .lower = AX_LOWER_EAGER,
};

const ax_prim_info ax_cumsum_info = {
    .name = "cumsum",
    .nin = 1,
    .nout = 1,
    .flags = LIN,
    .shape = ax_shape_cumsum,
    .eager = eager_cumsum,
    .jvp = ax_jvp_linear,
    .transpose = ax_transpose_linear,
    .batch = ax_batch_axes,
    .lower = AX_LOWER_EAGER,
};

const ax_prim_info ax_cumprod_info = {
    .name = "cumprod",
    .nin = 1,
    .nout = 1,
    .flags = 0,
    .shape = ax_shape_cumprod,
    .eager = eager_cumprod,
    .jvp = ax_jvp_special,
    .batch = ax_batch_axes,
    .lower = AX_LOWER_EAGER,
};

const ax_prim_info ax_cummax_info = {
    .name = "cummax",
    .nin = 1,
    .nout = 1,
    .flags = 0,
    .shape = ax_shape_cummax,
    .eager = eager_cummax,
    .jvp = ax_jvp_special,
    .batch = ax_batch_axes,
    .lower = AX_LOWER_EAGER,
};

const ax_prim_info ax_cummin_info = {
    .name = "cummin",
    .nin = 1,
    .nout = 1,
    .flags = 0,
    .shape = ax_shape_cummin,
    .eager = eager_cummin,
    .jvp = ax_jvp_special,
    .batch = ax_batch_axes,
    .lower = AX_LOWER_EAGER,
};

const ax_prim_info ax_sort_info = {
    .name = "sort",
    .nin = 1,
    .nout = 1,
    .flags = 0,
    .shape = ax_shape_sort,
    .eager = eager_sort,
    .jvp = ax_jvp_special,
    .batch = ax_batch_axes,
    .lower = AX_LOWER_EAGER,
};

const ax_prim_info ax_argsort_info = {
    .name = "argsort",
    .nin = 1,
    .nout = 1,
    .flags = ND,
    .shape = ax_shape_argsort,
    .eager = eager_argsort,
    .batch = ax_batch_axes,
    .lower = AX_LOWER_EAGER,
};

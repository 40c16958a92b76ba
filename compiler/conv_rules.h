/* Every rule of the convolution and windowed-reduction primitives, in one place: shape/dtype
 * rules, eager adapters onto runtime/conv.c, JVP, transpose and batching rules (as JAX's
 * jax/_src/lax/convolution.py and windowed_reductions.py define them), their rows of the
 * primitive table, and how the IR prints their parameters. */
#ifndef AX_CONV_RULES_H
#define AX_CONV_RULES_H

#include "../runtime/conv.h"
#include "ad_rules.h"
#include "ir.h"

/* The rows of the primitive table (compiler/primitive.c): conv_general_dilated,
 * reduce_window_{sum,max,min}, select_and_gather_add, select_and_scatter_add. */
extern const ax_prim_info ax_conv_general_dilated_info, ax_reduce_window_sum_info,
    ax_reduce_window_max_info, ax_reduce_window_min_info, ax_select_and_gather_add_info,
    ax_select_and_scatter_add_info;

/* Parameters for library code: a window over all n dims with unit strides and dilations and
 * no padding (reduce_window), or a convolution with unit strides and dilations, no padding,
 * one group and spec (0, 1, ..., n-1) for lhs, rhs and out (NCHW / OIHW). */
void ax_window_params_init(ax_params *p, int n);
void ax_conv_params_init(ax_params *p, int n);

#endif

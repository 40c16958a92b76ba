/* Every rule of the convolution and windowed-reduction primitives, in one place: shape/dtype
 * rules, eager adapters onto runtime/conv.c, JVP, transpose and batching rules (as JAX's
 * jax/_src/lax/convolution.py and windowed_reductions.py define them), and how the IR prints
 * their parameters. The primitive table (primitive.c) points at these. */
#ifndef AX_CONV_RULES_H
#define AX_CONV_RULES_H

#include "../runtime/conv.h"
#include "ad_rules.h"
#include "ir.h"
#include "shape_rules.h"

// clang-format off
AX_SHAPE_RULE(conv_general_dilated); AX_SHAPE_RULE(reduce_window_sum);
AX_SHAPE_RULE(reduce_window_max); AX_SHAPE_RULE(reduce_window_min);
AX_SHAPE_RULE(select_and_gather_add); AX_SHAPE_RULE(select_and_scatter_add);
// clang-format on

#define AX_CONV_EAGER(name)                                                                        \
    int ax_eager_##name(ax_ctx *cx, int nin, ax_array **in, const ax_params *p, ax_array **out)

AX_CONV_EAGER(conv_general_dilated);
AX_CONV_EAGER(reduce_window_sum);
AX_CONV_EAGER(reduce_window_max);
AX_CONV_EAGER(reduce_window_min);
AX_CONV_EAGER(select_and_gather_add);
AX_CONV_EAGER(select_and_scatter_add);

/* JVP of all six (conv is bilinear; reduce_window_max/min's tangent is select_and_gather_add;
 * the others are linear in operand 0 and constant in the operand they select by). */
int ax_jvp_window(ax_ctx *cx, ax_prim prim, const ax_params *p, int nin, ax_array **in,
                  ax_array **tin, ax_array **out, ax_array **tout);
/* Transposes of the linear ones: conv with respect to either operand (the gradient
 * convolutions), reduce_window_sum, and select_and_gather_add / select_and_scatter_add, each
 * the other's transpose. */
int ax_transpose_window(ax_ctx *cx, ax_prim prim, const ax_params *p, int nin, ax_array **in,
                        const bool *lin, const ax_aval *in_types, ax_array *ct, ax_array **ct_in);
/* Batching: conv folds the batch into its batch or feature dimensions (and groups); the
 * windowed reductions get a window of 1 along it. */
int ax_batch_conv(ax_ctx *cx, ax_prim prim, const ax_params *p, int nin, ax_array **in,
                  const int *bdim, int64_t size, ax_array **out, int *out_bdim);
int ax_batch_window(ax_ctx *cx, ax_prim prim, const ax_params *p, int nin, ax_array **in,
                    const int *bdim, int64_t size, ax_array **out, int *out_bdim);

/* The parameters as jax.make_jaxpr prints them ("[batch_group_count=1 dimension_numbers=..."). */
void ax_conv_format_params(ax_strbuf *s, ax_prim prim, const ax_params *p);

/* Parameters for library code: a window over all n dims with unit strides and dilations and
 * no padding (reduce_window), or a convolution with unit strides and dilations, no padding,
 * one group and spec (0, 1, ..., n-1) for lhs, rhs and out (NCHW / OIHW). */
void ax_window_params_init(ax_params *p, int n);
void ax_conv_params_init(ax_params *p, int n);

#endif

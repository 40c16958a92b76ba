/* Shape/dtype rules of the primitives, which their rows name (the elementwise ones through the
 * rules of their kernel op, below).
 *
 * A rule checks its inputs' avals and static parameters and computes the output avals, or
 * records an error in the user's terms and returns -1:
 *   TypeError  "exp requires a floating-point argument, got i32[3]"
 *   ShapeError "cannot add f32[3] and f32[4] (shapes do not broadcast)"
 *   ValueError for bad static parameters (axes out of range, not a permutation, ...)
 * Rules run before eager kernels and when tracing, so both report the same errors.
 *
 * Weak types: an elementwise result is weak when all its non-bool value operands are weak; shape
 * operations, reductions, sort and indexing keep their operand's weakness; convert sets
 * params.weak; indices, comparisons, iota, argmax/argsort and bitcast are strongly typed. */
#ifndef AX_SHAPE_RULES_H
#define AX_SHAPE_RULES_H

#include "primitive.h"

#define AX_SHAPE_RULE(name)                                                                        \
    int ax_shape_##name(ax_ctx *cx, int nin, const ax_aval *in, const ax_params *p, ax_aval *out)

/* The elementwise operations' rules, by their kernel op (the dtypes its kernels accept; for two
 * operands, one dtype and equal shapes or one of rank 0). `name` is the primitive's. */
int ax_shape_unary_op(ax_ctx *cx, const char *name, ax_unary_op op, const ax_aval *x,
                      ax_aval *out);
int ax_shape_binary_op(ax_ctx *cx, const char *name, ax_binary_op op, const ax_aval *a,
                       const ax_aval *b, ax_aval *out);

// clang-format off
/* elementwise (the others by their kernel op, above) */
AX_SHAPE_RULE(integer_pow); AX_SHAPE_RULE(select); AX_SHAPE_RULE(clamp); AX_SHAPE_RULE(convert);
AX_SHAPE_RULE(bitcast); AX_SHAPE_RULE(stop_gradient);

/* reductions and scans */
AX_SHAPE_RULE(reduce_sum); AX_SHAPE_RULE(reduce_prod); AX_SHAPE_RULE(reduce_max);
AX_SHAPE_RULE(reduce_min); AX_SHAPE_RULE(reduce_and); AX_SHAPE_RULE(reduce_or);
AX_SHAPE_RULE(argmax); AX_SHAPE_RULE(argmin);
AX_SHAPE_RULE(cumsum); AX_SHAPE_RULE(cumprod); AX_SHAPE_RULE(cummax); AX_SHAPE_RULE(cummin);

/* shapes */
AX_SHAPE_RULE(reshape); AX_SHAPE_RULE(transpose); AX_SHAPE_RULE(broadcast_in_dim);
AX_SHAPE_RULE(concatenate); AX_SHAPE_RULE(slice); AX_SHAPE_RULE(pad); AX_SHAPE_RULE(squeeze);
AX_SHAPE_RULE(expand_dims); AX_SHAPE_RULE(rev);

/* indexing */
AX_SHAPE_RULE(gather); AX_SHAPE_RULE(scatter); AX_SHAPE_RULE(dynamic_slice);
AX_SHAPE_RULE(dynamic_update_slice);

/* creation, linear algebra, sorting */
AX_SHAPE_RULE(iota); AX_SHAPE_RULE(dot_general); AX_SHAPE_RULE(cholesky); AX_SHAPE_RULE(triangular_solve); AX_SHAPE_RULE(custom_call); AX_SHAPE_RULE(sort);
AX_SHAPE_RULE(argsort);

/* user rules */
AX_SHAPE_RULE(custom_linear);

/* random numbers */
AX_SHAPE_RULE(threefry2x32);
// clang-format on

#endif

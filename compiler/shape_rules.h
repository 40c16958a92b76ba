/* Shape/dtype rules of the primitives: one ax_shape_rule per row of the table in primitive.c.
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

// clang-format off
/* elementwise unary */
AX_SHAPE_RULE(neg); AX_SHAPE_RULE(abs); AX_SHAPE_RULE(sign); AX_SHAPE_RULE(exp);
AX_SHAPE_RULE(exp2); AX_SHAPE_RULE(log); AX_SHAPE_RULE(log1p); AX_SHAPE_RULE(expm1);
AX_SHAPE_RULE(sin); AX_SHAPE_RULE(cos); AX_SHAPE_RULE(tan); AX_SHAPE_RULE(asin);
AX_SHAPE_RULE(acos); AX_SHAPE_RULE(atan); AX_SHAPE_RULE(sinh); AX_SHAPE_RULE(cosh);
AX_SHAPE_RULE(tanh); AX_SHAPE_RULE(asinh); AX_SHAPE_RULE(acosh); AX_SHAPE_RULE(atanh);
AX_SHAPE_RULE(logistic); AX_SHAPE_RULE(sqrt); AX_SHAPE_RULE(rsqrt); AX_SHAPE_RULE(cbrt);
AX_SHAPE_RULE(floor); AX_SHAPE_RULE(ceil); AX_SHAPE_RULE(round); AX_SHAPE_RULE(erf);
AX_SHAPE_RULE(erfc); AX_SHAPE_RULE(erf_inv); AX_SHAPE_RULE(lgamma); AX_SHAPE_RULE(digamma);
AX_SHAPE_RULE(is_finite); AX_SHAPE_RULE(not); AX_SHAPE_RULE(square);
AX_SHAPE_RULE(integer_pow);

/* elementwise binary */
AX_SHAPE_RULE(add); AX_SHAPE_RULE(sub); AX_SHAPE_RULE(mul); AX_SHAPE_RULE(div);
AX_SHAPE_RULE(floor_divide); AX_SHAPE_RULE(rem); AX_SHAPE_RULE(mod); AX_SHAPE_RULE(pow);
AX_SHAPE_RULE(max); AX_SHAPE_RULE(min); AX_SHAPE_RULE(atan2); AX_SHAPE_RULE(nextafter);
AX_SHAPE_RULE(eq); AX_SHAPE_RULE(ne); AX_SHAPE_RULE(lt); AX_SHAPE_RULE(le); AX_SHAPE_RULE(gt);
AX_SHAPE_RULE(ge); AX_SHAPE_RULE(and); AX_SHAPE_RULE(or); AX_SHAPE_RULE(xor);
AX_SHAPE_RULE(shift_left); AX_SHAPE_RULE(shift_right_logical);
AX_SHAPE_RULE(shift_right_arithmetic);

/* other elementwise */
AX_SHAPE_RULE(select); AX_SHAPE_RULE(clamp); AX_SHAPE_RULE(convert); AX_SHAPE_RULE(bitcast);
AX_SHAPE_RULE(stop_gradient);

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

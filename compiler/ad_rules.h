/* Differentiation rules of the primitive table: JVP rules for every differentiable primitive
 * and transpose rules for the linear ones. They bind primitives (through compiler/lax.h), so
 * they work at any level of nesting: the same rule serves eager grad, grad of grad and jit. */
#ifndef AX_AD_RULES_H
#define AX_AD_RULES_H

#include "lax.h"

/* The rule types (ax_jvp_rule, ax_transpose_rule) are in compiler/primitive.h. */

/* The rule families: one function serves the rows that name it, reading what differs from the
 * row (compiler/primitive.h). An elementwise primitive of one operand: the tangent times the
 * row's derivative. */
int ax_jvp_unary(ax_ctx *cx, ax_prim prim, const ax_params *p, int nin, ax_array **in,
                 ax_array **tin, ax_array **out, ax_array **tout);
/* The row's tangent rule (ax_tangent_rule) on the primal output. */
int ax_jvp_tangent(ax_ctx *cx, ax_prim prim, const ax_params *p, int nin, ax_array **in,
                   ax_array **tin, ax_array **out, ax_array **tout);
/* For tangent rules: a + b (NULL: zero) broadcast to z's shape; NULL when both are. */
ax_array *ax_tangent_sum(ax_scope *s, ax_array *a, ax_array *b, const ax_array *z);
/* Linear primitives: the tangent is the primitive applied to the tangents (zeros filled in)
 * of the operands in the row's linear_in, the others as they are. */
int ax_jvp_linear(ax_ctx *cx, ax_prim prim, const ax_params *p, int nin, ax_array **in,
                  ax_array **tin, ax_array **out, ax_array **tout);
/* The same with the operands from `first` on linear (custom_linear: after its residuals). */
int ax_jvp_linear_from(ax_ctx *cx, ax_prim prim, const ax_params *p, int nin, ax_array **in,
                       ax_array **tin, ax_array **out, ax_array **tout, int first);
/* Zero derivative (floor, sign, round, stop_gradient, ...): tangent is zero. */
int ax_jvp_zero(ax_ctx *cx, ax_prim prim, const ax_params *p, int nin, ax_array **in,
                ax_array **tin, ax_array **out, ax_array **tout);
/* The row's cotangent rule (ax_cotangent_rule) on the cotangent of the single output. */
int ax_transpose_linear(ax_ctx *cx, ax_prim prim, const ax_params *p, int nin, ax_array **in,
                        const bool *lin, const ax_aval *in_types, ax_array *const *cts,
                        ax_array **ct_in);
/* For cotangent rules: ct summed down to the shape of t (the transpose of broadcasting). */
ax_array *ax_cotangent_to(ax_scope *s, ax_array *ct, const ax_aval *t);
/* Zeros of type t (a broadcast scalar). */
ax_array *ax_zeros_of(ax_scope *s, const ax_aval *t);

#endif

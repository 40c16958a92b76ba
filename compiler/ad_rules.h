/* Differentiation rules of the primitive table: JVP rules for every differentiable primitive
 * and transpose rules for the linear ones. They bind primitives (through compiler/lax.h), so
 * they work at any level of nesting: the same rule serves eager grad, grad of grad and jit. */
#ifndef AX_AD_RULES_H
#define AX_AD_RULES_H

#include "lax.h"

/* The rule types (ax_jvp_rule, ax_transpose_rule) are in compiler/primitive.h. */

/* The rule families (one function serves a family, switching on `prim`). */
int ax_jvp_unary(ax_ctx *cx, ax_prim prim, const ax_params *p, int nin, ax_array **in,
                 ax_array **tin, ax_array **out, ax_array **tout);
int ax_jvp_binary(ax_ctx *cx, ax_prim prim, const ax_params *p, int nin, ax_array **in,
                  ax_array **tin, ax_array **out, ax_array **tout);
/* Linear primitives: the tangent is the primitive applied to the tangents (zeros filled in). */
int ax_jvp_linear(ax_ctx *cx, ax_prim prim, const ax_params *p, int nin, ax_array **in,
                  ax_array **tin, ax_array **out, ax_array **tout);
/* Zero derivative (floor, sign, round, stop_gradient, ...): tangent is zero. */
int ax_jvp_zero(ax_ctx *cx, ax_prim prim, const ax_params *p, int nin, ax_array **in,
                ax_array **tin, ax_array **out, ax_array **tout);
/* Everything else, one case per primitive (select, clamp, reductions, dot_general, ...). */
int ax_jvp_special(ax_ctx *cx, ax_prim prim, const ax_params *p, int nin, ax_array **in,
                   ax_array **tin, ax_array **out, ax_array **tout);

/* Whether input i of a primitive carries a tangent / cotangent (indices, predicates and start
 * positions do not). */
bool ax_prim_input_is_linear(ax_prim prim, const ax_params *p, int i);

int ax_transpose_linear(ax_ctx *cx, ax_prim prim, const ax_params *p, int nin, ax_array **in,
                        const bool *lin, const ax_aval *in_types, ax_array *const *cts,
                        ax_array **ct_in);

#endif

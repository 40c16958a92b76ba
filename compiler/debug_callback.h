/* debug_callback: an effect as a primitive, as JAX's debug_callback_p (what jax.debug.print
 * and jax.debug.callback bind). Its one equation has no outputs and carries a callback whose
 * `effect` runs on the operands' values when the equation runs: at once eagerly, and under jit
 * when the compiled program reaches it (an eager step, in program order). Passes never drop,
 * merge or fold it (AX_PRIM_EFFECT). Under differentiation it sees the primal values; under
 * vmap it runs once per example, as JAX unrolls it. */
#ifndef AX_DEBUG_CALLBACK_H
#define AX_DEBUG_CALLBACK_H

#include "ir.h"

/* The table row (compiler/primitive.c points at it). */
extern const ax_prim_info ax_debug_callback_info;

/* Whether an equation has an effect: its primitive's, or one inside its sub-programs. */
bool ax_eqn_has_effect(const ax_ir_eqn *e);

#endif

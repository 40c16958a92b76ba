/* The simplify pass: algebraic identities (x*1, x+0, x-0, x/1, --x, no-op reshapes,
 * converts, transposes and broadcasts), constant folding of equations on literals, common
 * subexpression elimination and dead code elimination. make_jaxpr(grad(f)) then reads like
 * the derivative a person would write, and jit has less to compile. */
#ifndef AX_SIMPLIFY_H
#define AX_SIMPLIFY_H

#include "ir.h"

/* A simplified copy of ir (new reference), or NULL with an error. */
ax_ir *ax_simplify(ax_ctx *cx, const ax_ir *ir);

#endif

/* The simplify pass: algebraic identities (x*1, x+0, x-0, x/1, --x, no-op reshapes,
 * converts, transposes and broadcasts), constant folding of equations on literals, common
 * subexpression elimination and dead code elimination. make_jaxpr(grad(f)) then reads like
 * the derivative a person would write, and jit has less to compile. */
#ifndef AX_SIMPLIFY_H
#define AX_SIMPLIFY_H

#include "ir.h"

/* For the rows' identities (ax_prim_info.identity): whether an operand is the rank-0 literal
 * v; whether it is a zero that is the identity of addition (for floats, the one with the sign
 * bit `negative`; integers: any zero). */
bool ax_ir_atom_is(const ax_ir_atom *a, double v);
bool ax_ir_atom_is_zero(const ax_ir_atom *a, bool negative);
/* The identity of conversions and reshapes: the operand, when it has the result's type. */
int ax_identity_operand(const ax_params *p, const ax_ir_atom *in);

/* For the rows' folds (ax_prim_info.fold): the program being rewritten, and the equation of
 * it that makes operand a (NULL: an input, a literal, or a sub-program's). */
typedef struct ax_simplify_view ax_simplify_view;
const ax_ir_eqn *ax_simplify_producer(const ax_simplify_view *v, const ax_ir_atom *a);

/* A simplified copy of ir (new reference), or NULL with an error. */
ax_ir *ax_simplify(ax_ctx *cx, const ax_ir *ir);

#endif

/* The call primitive (printed pjit): a jitted function met by an outer transformation stays one
 * equation whose sub-program is the function's IR, so grad(jit(f)) differentiates the call and
 * each part it splits into is compiled, and make_jaxpr shows pjit[name=f jaxpr={ ... }]. Its
 * eager rule runs the body's native program (compiler/jit.h), built once per body. */
#ifndef AX_CALL_H
#define AX_CALL_H

#include "primitive.h"

extern const ax_prim_info ax_call_info;

struct ax_ir;
struct ax_jit_program;
/* The native program of a call's body (compiled, or loaded from the disk cache, on first use;
 * then kept with the body). NULL with an error. */
struct ax_jit_program *ax_call_program(ax_ctx *cx, struct ax_ir *body);

#endif

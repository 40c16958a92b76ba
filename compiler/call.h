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
/* The same, its compile ended (ax_jit_ready): for a program that other threads run at once
 * (pmap's devices), which must find it finished. NULL with an error. */
struct ax_jit_program *ax_call_ready(ax_ctx *cx, struct ax_ir *body);

/* The rules, shared with pmap (compiler/pmap.c): each transforms the body with the whole-IR
 * pass (memoised on the body) and binds `prim` again on the result. For a primitive flagged
 * AX_PRIM_MAPPED the operands and results keep their leading axis (params.length). */
struct ax_ir_trace;
int ax_call_jvp(ax_ctx *cx, ax_prim prim, const ax_params *p, int nin, ax_array **in,
                ax_array **tin, ax_array **out, ax_array **tout);
int ax_call_partial_eval(ax_ctx *cx, struct ax_ir_trace *t, ax_prim prim, const ax_params *p,
                         int nin, ax_array **in, const bool *unknown, ax_array **out);
int ax_call_transpose(ax_ctx *cx, ax_prim prim, const ax_params *p, int nin, ax_array **in,
                      const bool *lin, const ax_aval *in_types, ax_array *const *cts,
                      ax_array **ct_in);
int ax_call_batch(ax_ctx *cx, ax_prim prim, const ax_params *p, int nin, ax_array **in,
                  const int *bdim, int64_t size, ax_array **out, int *out_bdim);
int ax_call_nout(const ax_params *p);
void ax_call_dependencies(const ax_params *p, int nin, const bool *in, bool *out);

#endif

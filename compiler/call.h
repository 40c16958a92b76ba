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

/* The gradient of one call on concrete arguments, in one step: what linearize and transpose
 * make of a single call equation, without tracing (grad of a jitted function). body has one
 * scalar float output; its cotangent is 1. One native program runs the known part of the
 * body's JVP and the transposed unknown part on its residuals: grads[t] gets the cotangent of
 * the t-th input where diff holds, and *value (unless value is NULL) the body's output (new
 * references). The split is memoised on the body, shared with the rules below, and so is the
 * program traced from its two parts (one for grad, one for value_and_grad). 0; 1 (nothing
 * done) when the split leaves a value unknown (a while_loop's, which only the general path
 * reports on); or -1 with an error. */
int ax_call_grad(ax_ctx *cx, struct ax_ir *body, ax_array **args, const bool *diff,
                 ax_array **value, ax_array **grads);

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

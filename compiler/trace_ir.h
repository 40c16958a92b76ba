/* The IR-building trace: runs a function on abstract tracers (dtype and shape only) and records
 * every primitive applied to them as an equation of a typed IR. Used by make_jaxpr and jit, and
 * by reverse mode to record the linear (tangent) part of a computation.
 * Arrays from outside the trace (closed-over values, tracers of outer transformations) become
 * constants of the IR; rank-0 concrete arrays become literals. Under make_jaxpr, operations on
 * known values are recorded too (omnistaging, ax_trace_to_ir_staged). */
#ifndef AX_TRACE_IR_H
#define AX_TRACE_IR_H

#include "ir.h"
#include "trace.h"

typedef struct ax_ir_trace ax_ir_trace;

/* Starts a trace (pushed on the context's stack). NULL on out of memory. */
ax_ir_trace *ax_ir_trace_begin(ax_ctx *cx);
/* A new input of the IR: a tracer of the given type (new reference). */
ax_array *ax_ir_trace_input(ax_ir_trace *t, const ax_aval *type);
/* Pops the trace and finishes the IR with `outs` as outputs (tracers of this trace, constants,
 * or NULL for a zero of type out_types[i]). Frees the trace. NULL on error. */
ax_ir *ax_ir_trace_end(ax_ir_trace *t, int nout, ax_array **outs, const ax_aval *out_types);
/* Pops and frees the trace after an error. */
void ax_ir_trace_abort(ax_ir_trace *t);
/* Records p applied to `in` as one equation of the IR (known inputs become constants or
 * literals), with no partial evaluation: out[0..nout) get new tracers. */
int ax_ir_trace_record(ax_ir_trace *t, ax_prim p, int nin, ax_array **in,
                       const ax_params *params, ax_array **out);
/* The innermost active IR-building trace that stages a program (jit, make_jaxpr, a loop's
 * body), skipping reverse mode's recordings of linear parts; NULL when there is none. Where an
 * effect with no traced operand goes, so that it runs with the program, not while tracing. */
ax_ir_trace *ax_ir_trace_innermost(ax_ctx *cx);
/* Whether `a` is one of this trace's tracers (a value it records, not a known one). */
bool ax_ir_trace_owns(const ax_ir_trace *t, const ax_array *a);
/* Partial evaluation (reverse mode's recording of the linear part): a higher-order primitive
 * whose inputs are partly known is split by its partial_eval rule (compiler/primitive.h), so
 * that what the known inputs determine runs now and only the rest is recorded. */
void ax_ir_trace_set_partial_eval(ax_ir_trace *t, bool on);

/* The innermost IR-building trace when it stages known values and no eager kernel is running
 * (the binds a kernel makes inside are its own, not the program's); else NULL. ax_bind hands
 * it the primitives that have no traced operand, after running them eagerly. */
ax_ir_trace *ax_ir_trace_staging(ax_ctx *cx);
/* Brackets an eager kernel run on behalf of a staging trace (enter, then leave). */
void ax_ir_trace_eager(ax_ir_trace *t, bool enter);
/* Records p(in), already computed eagerly into out[0..nout), as an equation; the outputs become
 * known to the trace (it holds references to them until it ends). */
int ax_ir_trace_stage(ax_ir_trace *t, ax_prim p, int nin, ax_array **in, const ax_params *params,
                      ax_array **out);
/* Python's operators on Python numbers (rank-0 weak or bool values that are neither traced nor
 * staged: `-inf`, `n - 1`) compute on the host, as in JAX: between host_begin and host_end
 * nothing is staged. host_begin returns the staging trace it paused, or NULL (then host_end
 * does nothing). */
ax_ir_trace *ax_ir_trace_host_begin(ax_ctx *cx, int n, ax_array *const *a);
void ax_ir_trace_host_end(ax_ir_trace *t);

/* Traces fn on inputs of the given types (jit's trace; make_jaxpr's is staged, below). */
typedef int (*ax_flat_fn)(ax_ctx *cx, void *closure, int nin, ax_array **in, int *nout,
                          ax_array ***out);
ax_ir *ax_trace_to_ir(ax_ctx *cx, ax_flat_fn fn, void *closure, int nin, const ax_aval *in_types,
                      int *nout);
/* The same, with omnistaging when `stage` (make_jaxpr, and the bodies of control flow under it):
 * an operation on known values (constants, or values computed from them) still runs eagerly, so
 * its result stays concrete (Python-level control flow on it keeps working), and is also
 * recorded as an equation, whose variable stands for that result wherever the trace uses it.
 * jit traces without it: such values fold into constants, as simplify would fold them. */
ax_ir *ax_trace_to_ir_staged(ax_ctx *cx, ax_flat_fn fn, void *closure, int nin,
                             const ax_aval *in_types, int *nout, bool stage);

#endif

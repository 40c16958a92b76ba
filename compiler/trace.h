/* The stack of active transformations, and how bind hands a primitive to one of them.
 *
 * A transformation (jvp, vmap, jit's abstract tracing, ...) pushes an ax_trace while it runs a
 * function. Arrays it creates for that function carry an ax_tracer naming their trace. When
 * ax_bind sees tracer inputs, it picks the trace of the highest level among them (the innermost
 * transformation that owns one of the inputs; tracers of outer traces are constants to it, as in
 * JAX) and calls its process_primitive. With no tracer inputs, or no active trace, bind runs the
 * eager kernel. The stack lives in ax_ctx->traces: no global state. */
#ifndef AX_TRACE_H
#define AX_TRACE_H

#include "primitive.h"

typedef struct ax_trace ax_trace;

/* Applies primitive p to inputs on behalf of `trace` (some inputs are its tracers, others are
 * plain arrays or tracers of outer traces). Same contract as ax_bind: fills out[0..nout) with new
 * references; -1 with an error recorded. */
typedef int (*ax_process_primitive_fn)(ax_ctx *cx, ax_trace *trace, ax_prim p, int nin,
                                       ax_array **in, const ax_params *params, ax_array **out);

struct ax_trace {
    int level;        /* its position in the stack (0 = outermost), set by ax_trace_push */
    uint64_t id;      /* unique in the context, set by ax_trace_push */
    const char *name; /* "jvp", "vmap", "jit", ... for error messages */
    ax_process_primitive_fn process_primitive;
    void *data; /* the transformation's own state */
    /* The concrete value behind one of its tracers (borrowed), or NULL when the trace is
     * abstract: lets `if x > 0` work under eager grad and fail under jit. May be NULL. */
    ax_array *(*concrete_value)(ax_trace *trace, ax_array *tracer);
};

/* The concrete value of `a`: a itself when it is not a tracer; for a tracer, what its trace
 * knows (recursively through nested traces), or NULL when it is abstract. Borrowed. */
ax_array *ax_concrete_value(ax_ctx *cx, ax_array *a);

/* What makes an ax_array a tracer (ax_array.tracer). The transformation that creates tracers
 * owns their `data` (primal/tangent pair, batch dimension, IR variable, ...). */
/* struct ax_tracer is declared in runtime/array.h: the trace, its data, and free_data (called
 * when the tracer array is released; may be NULL). */

/* A new tracer array of trace `t` with the given type and no buffer; takes `data`. */
ax_array *ax_tracer_new(ax_ctx *cx, ax_trace *t, const struct ax_aval *type, void *data,
                        void (*free_data)(void *data));
/* The tracer's data when `a` is a tracer of trace `t`, else NULL. */
void *ax_tracer_data(const ax_array *a, const ax_trace *t);

/* The stack, innermost last. Allocated by the first push, freed by the last pop, so an idle
 * context holds nothing. */
struct ax_trace_state {
    int depth, cap;
    ax_trace **stack;
};

/* Pushes `trace` (not owned) and sets its level; -1 on out of memory. */
int ax_trace_push(ax_ctx *cx, ax_trace *trace);
/* Pops `trace`, which must be the innermost one (transformations nest strictly). */
void ax_trace_pop(ax_ctx *cx, ax_trace *trace);
int ax_trace_depth(const ax_ctx *cx);
/* The innermost trace, or NULL. */
ax_trace *ax_trace_top(const ax_ctx *cx);

/* The trace that must process a primitive applied to `in`: the highest-level trace among the
 * inputs' tracers, or NULL (run eagerly) when no input is a tracer. A tracer whose trace is no
 * longer active escaped its transformation: records a RuntimeError and returns -1. */
int ax_trace_find(ax_ctx *cx, int nin, ax_array *const *in, ax_trace **out);

#endif

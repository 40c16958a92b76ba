/* The jit builtin: jit(f, static_argnums) and the REPL's views of what it builds. */
#ifndef AX_JIT_BUILTIN_H
#define AX_JIT_BUILTIN_H

#include "../compiler/jit.h"
#include "../lang/interp.h"
#include "flat_call.h"

int ax_jit_register(ax_interp *in);
/* What jit builds for the call fn(*a) (fn jitted or not): the typed IR and its fusion groups
 * (want_c false, REPL `:ir`), or the C-like dump of the native code (want_c, REPL `:c`).
 * A string value, or NULL with an error. */
ax_value *ax_jit_explain(ax_interp *in, ax_value *fn, const ax_args *a, bool want_c);
/* For grad of a jitted function (stdlib/transforms.c): the IR that the call fn(*a) runs
 * (traced on a first call: *body and *out_def new references, *nmain its main outputs) and its
 * flat inputs, fc->flat, which are exactly the body's inputs (arguments that `from`, a
 * flat_call of the same arguments or NULL, flattened are not flattened again; fc: to free with
 * ax_flat_call_free whatever the result). 1 when that does not apply: fn is not jitted, the
 * call has keyword arguments, or an input or a constant the trace captured is a tracer; -1
 * with an error (the call's own: a static argument missing, a failed trace). */
int ax_jit_concrete_body(ax_interp *in, ax_value *fn, const ax_args *a, const flat_call *from,
                         flat_call *fc, ax_ir **body, ax_value **out_def, int *nmain);
/* The static arguments of a call (the positions statics[0, nstatic) and every keyword)
 * encoded exactly, as jit and pmap key their traces: two calls encode alike only when those
 * arguments are equal (arrays element by element, functions and objects by identity).
 * `what` names the caller in errors. malloc'd; NULL with an error. */
char *ax_statics_exact_key(ax_interp *in, const char *what, const int *statics, int nstatic,
                           const ax_args *a);

/* What jit(f).lower(*a) and jit(f).trace(*a) keep (stdlib/aot.c): jit's own trace of the call
 * (its cache entry, traced now on a miss), and the call's dynamic arguments. */
typedef struct ax_jit_lowered {
    char *name;        /* the function's */
    ax_ir *ir;         /* the simplified IR its calls run (a reference) */
    ax_value *out_def; /* the output's structure */
    int nmain;         /* its leaves (ir's first outputs) */
    ax_value *in_def;  /* the dynamic arguments' structure, ((args...), {}) as JAX's in_tree */
    int nflat;         /* their leaves, of types in_avals[0, nflat) */
    ax_aval *in_avals;
    int nargs;        /* the dynamic (traced) arguments */
    int *counts;      /* the leaves of each */
    char **arg_names; /* and their names: the parameter's ("x"), or "args[3]" */
    ax_value *jaxpr;  /* make_jaxpr's jaxpr of f on the arguments (want_jaxpr), or NULL */
} ax_jit_lowered;
/* Fills *out for the call jit(f)(*a) (jit: the object a jitted function carries as its data,
 * which its attributes get; a: pytrees of arrays or ShapeDtypeStructs in the traced
 * positions, static arguments as jit takes them). 0, or -1 with the call's error (out is then
 * empty). */
int ax_jit_lower(ax_interp *in, ax_value *jit, const ax_args *a, bool want_jaxpr,
                 ax_jit_lowered *out);
void ax_jit_lowered_free(ax_jit_lowered *l);
/* The typed IR as jit_ir prints it, without the fused plan (a string value), or the C-like
 * dump of a built program's native code (NULL with an error when it has none). */
ax_value *ax_jit_ir_text(ax_interp *in, const ax_ir *ir);
ax_value *ax_jit_c_text(ax_interp *in, ax_jit_program *prog);

#endif

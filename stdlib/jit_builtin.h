/* The jit builtin: jit(f, static_argnums) and the REPL's views of what it builds. */
#ifndef AX_JIT_BUILTIN_H
#define AX_JIT_BUILTIN_H

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

#endif

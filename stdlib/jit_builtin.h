/* The jit builtin: jit(f, static_argnums) and the REPL's views of what it builds. */
#ifndef AX_JIT_BUILTIN_H
#define AX_JIT_BUILTIN_H

#include "../lang/interp.h"

int ax_jit_register(ax_interp *in);
/* What jit builds for the call fn(*a) (fn jitted or not): the typed IR and its fusion groups
 * (want_c false, REPL `:ir`), or the C-like dump of the native code (want_c, REPL `:c`).
 * A string value, or NULL with an error. */
ax_value *ax_jit_explain(ax_interp *in, ax_value *fn, const ax_args *a, bool want_c);

#endif

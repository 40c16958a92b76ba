/* JAX's ahead-of-time stages for jitted functions: jit(f).trace(*args) is a Traced (its
 * jaxpr), jit(f).lower(*args) a Lowered (ax's typed IR: the program jit runs for these
 * argument types), Lowered.compile() a Compiled, whose native code is built before it returns
 * and which runs on arrays of those types only. Arguments may be ShapeDtypeStructs. A Lowered
 * shares jit's trace of the call, so jit(f) and its Compiled run the same program. */
#ifndef AX_AOT_H
#define AX_AOT_H

#include "../lang/interp.h"

/* The attributes of a jitted function (lower, trace): the getattr and each_attr of the object
 * it carries as its data (see ax_object_type.function_attrs). */
ax_value *ax_aot_jit_getattr(ax_interp *in, ax_value *jit, const char *name);
void ax_aot_jit_each_attr(ax_interp *in, ax_value *jit, void (*fn)(void *arg, const char *name),
                          void *arg);

#endif

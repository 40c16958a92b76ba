/* jax.debug.print and jax.debug.callback: what a program prints or calls from inside jit,
 * grad, vmap and loops, at run time, through the effect primitive debug_callback
 * (compiler/debug_callback.h). */
#ifndef AX_DEBUG_H
#define AX_DEBUG_H

#include "../lang/interp.h"

/* debug_print(fmt, *args, **kwargs) and debug_callback(fn, *args, **kwargs) as builtins. */
int ax_debug_register(ax_interp *in);

#endif

/* The builtin namespace: every builtin function with its one-line doc (shown by :help). */
#ifndef AX_BUILTINS_H
#define AX_BUILTINS_H

#include "../lang/interp.h"

/* Defines every builtin (array functions, dtypes, print, len, range, ..., the jnp/np
 * aliases) in in->builtins. Returns -1 on failure (out of memory). */
int ax_builtins_register(ax_interp *in);

#endif

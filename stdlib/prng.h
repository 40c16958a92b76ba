/* The C side of the random module (stdlib/random.ax): typed PRNG keys, the threefry2x32 hash
 * as a builtin, and the key-reuse warning. */
#ifndef AX_PRNG_BUILTINS_H
#define AX_PRNG_BUILTINS_H

#include "../lang/interp.h"

int ax_prng_register(ax_interp *in);

#endif

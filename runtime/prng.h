/* threefry2x32, the hash behind JAX's default PRNG (see ../shared/reference/prng.md). */
#ifndef AX_PRNG_H
#define AX_PRNG_H

#include "array.h"

/* One hash of the pair (x0, x1) under the key (k0, k1). */
void ax_threefry2x32_pair(uint32_t k0, uint32_t k1, uint32_t x0, uint32_t x1, uint32_t *y0,
                          uint32_t *y1);

/* Elementwise over u32 arrays whose shapes broadcast (NumPy rules): (y0, y1) = hash of
 * (x0, x1) under (k0, k1). Both outputs are new contiguous u32 arrays. */
int ax_threefry2x32(ax_ctx *cx, ax_array *k0, ax_array *k1, ax_array *x0, ax_array *x1,
                    ax_array **y0, ax_array **y1);

#endif

/* Tiles: the blocks of an operand that jit's generated code reads AX_TILE rows at a time
 * (compiler/codegen.c, "tiles").
 *
 * A fused loop whose vector lanes run along a dimension in which an operand is strided (x.T
 * read row by row) would load each lane from another cache line, in scalar code: at a
 * power-of-two row length all those lines fall into the same cache sets, and every load
 * misses. The loop instead reads such an operand AX_TILE x AX_TILE elements at a time, with
 * AX_TILE contiguous runs, through these functions, and its lanes then read the tile
 * contiguously. Bools go through tiles too, widened to the 32-bit values generated code
 * computes with: bytes beside 32-bit values in one lane loop make GCC build all of it from
 * 128-bit vectors. The functions are compiled at -O3 for this CPU, where GCC makes the full
 * tiles of vector permutes and widenings; generated code (-O2, which does not) calls them
 * through its table of runtime functions. */
#ifndef AX_TILE_H
#define AX_TILE_H

#include <stdint.h>

enum { AX_TILE = 16 };

/* dst[t * AX_TILE + j] = src[t * ldt + j * ldj] for t < rows and j < cols (both at most
 * AX_TILE; strides in elements), on elements of 1, 4 and 8 bytes; 1to4 widens bytes to 32
 * bits. Fastest with ldt == 1 (a transposed tile) or ldj == 1 (a tile of rows). */
void ax_tile_load1(void *dst, const void *src, int64_t ldt, int64_t ldj, int64_t rows,
                   int64_t cols);
void ax_tile_load1to4(void *dst, const void *src, int64_t ldt, int64_t ldj, int64_t rows,
                      int64_t cols);
void ax_tile_load4(void *dst, const void *src, int64_t ldt, int64_t ldj, int64_t rows,
                   int64_t cols);
void ax_tile_load8(void *dst, const void *src, int64_t ldt, int64_t ldj, int64_t rows,
                   int64_t cols);

#endif

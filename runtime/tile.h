/* Transposed tiles: the blocks of a strided operand that jit's generated code reads across its
 * rows (compiler/codegen.c, "transposed loads").
 *
 * A fused loop whose vector lanes run along a dimension in which an operand is strided (x.T
 * read row by row) would load each lane from another cache line, in scalar code: at a
 * power-of-two row length all those lines fall into the same cache sets, and every load
 * misses. The loop instead reads such an operand AX_TILE x AX_TILE elements at a time, with
 * AX_TILE contiguous runs, through these functions, and its lanes then read the tile
 * contiguously. They are compiled at -O3 for this CPU, where GCC turns the full tile into
 * vector permutes; generated code (-O2, which does not) calls them through its table of
 * runtime functions. */
#ifndef AX_TILE_H
#define AX_TILE_H

#include <stdint.h>

enum { AX_TILE = 16 };

/* dst[t * AX_TILE + j] = src[j * ld + t] for t < rows and j < cols (both at most AX_TILE),
 * on elements of 1, 4 and 8 bytes (ld counts elements); 1to4 widens bytes to 32 bits (the
 * values of bools in generated code). */
void ax_tile_transpose1(void *dst, const void *src, int64_t ld, int64_t rows, int64_t cols);
void ax_tile_transpose1to4(void *dst, const void *src, int64_t ld, int64_t rows, int64_t cols);
void ax_tile_transpose4(void *dst, const void *src, int64_t ld, int64_t rows, int64_t cols);
void ax_tile_transpose8(void *dst, const void *src, int64_t ld, int64_t rows, int64_t cols);

#endif

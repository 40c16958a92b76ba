/* Transposed tiles (see tile.h). */
#include "tile.h"

/* Elements of type S copied as T. A full tile has constant bounds, which -O3 vectorises
 * (loads along t, permutes, stores along j) when dst and src are restrict parameters; a
 * partial one goes element by element. */
#define TILE_TRANSPOSE(name, T, S)                                                                 \
    static void name##_full(T *restrict d, const S *restrict s, int64_t ld) {                      \
        for (int t = 0; t < AX_TILE; t++)                                                          \
            for (int j = 0; j < AX_TILE; j++) d[t * AX_TILE + j] = s[j * ld + t];                  \
    }                                                                                              \
    void name(void *dst, const void *src, int64_t ld, int64_t rows, int64_t cols) {                \
        if (rows == AX_TILE && cols == AX_TILE) {                                                  \
            name##_full(dst, src, ld);                                                             \
            return;                                                                                \
        }                                                                                          \
        T *d = dst;                                                                                \
        const S *s = src;                                                                          \
        for (int64_t j = 0; j < cols; j++)                                                         \
            for (int64_t t = 0; t < rows; t++) d[t * AX_TILE + j] = s[j * ld + t];                 \
    }

TILE_TRANSPOSE(ax_tile_transpose1, uint8_t, uint8_t)
TILE_TRANSPOSE(ax_tile_transpose1to4, uint32_t, uint8_t)
TILE_TRANSPOSE(ax_tile_transpose4, uint32_t, uint32_t)
TILE_TRANSPOSE(ax_tile_transpose8, uint64_t, uint64_t)

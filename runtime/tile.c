/* Tiles (see tile.h). */
#include "tile.h"

/* Elements of type S copied as T. Full tiles with one unit stride have constant bounds,
 * which -O3 vectorises when dst and src are restrict parameters (a transposed one: loads
 * along t, permutes, stores along j; one of rows: loads, widenings and stores along j); other
 * tiles go element by element. */
#define TILE_LOAD(name, T, S)                                                                      \
    static void name##_transposed(T *restrict d, const S *restrict s, int64_t ldj) {               \
        for (int t = 0; t < AX_TILE; t++)                                                          \
            for (int j = 0; j < AX_TILE; j++) d[t * AX_TILE + j] = s[j * ldj + t];                 \
    }                                                                                              \
    static void name##_rows(T *restrict d, const S *restrict s, int64_t ldt) {                     \
        for (int t = 0; t < AX_TILE; t++)                                                          \
            for (int j = 0; j < AX_TILE; j++) d[t * AX_TILE + j] = s[t * ldt + j];                 \
    }                                                                                              \
    void name(void *dst, const void *src, int64_t ldt, int64_t ldj, int64_t rows, int64_t cols) {  \
        if (rows == AX_TILE && cols == AX_TILE && ldt == 1) {                                      \
            name##_transposed(dst, src, ldj);                                                      \
            return;                                                                                \
        }                                                                                          \
        if (rows == AX_TILE && cols == AX_TILE && ldj == 1) {                                      \
            name##_rows(dst, src, ldt);                                                            \
            return;                                                                                \
        }                                                                                          \
        T *d = dst;                                                                                \
        const S *s = src;                                                                          \
        for (int64_t t = 0; t < rows; t++)                                                         \
            for (int64_t j = 0; j < cols; j++) d[t * AX_TILE + j] = s[t * ldt + j * ldj];          \
    }

TILE_LOAD(ax_tile_load1, uint8_t, uint8_t)
TILE_LOAD(ax_tile_load1to4, uint32_t, uint8_t)
TILE_LOAD(ax_tile_load4, uint32_t, uint32_t)
TILE_LOAD(ax_tile_load8, uint64_t, uint64_t)

/* Small matrix products through libxsmm's generated kernels (Debian's libxsmm-dev, linked
 * statically). For products of up to ~200^3 they beat OpenBLAS, which packs its operands for
 * large ones: 128^3 f32 took 17.6-22.6 us against 25.3-33 us for OpenBLAS on one thread
 * (docs/benchmarks.md, "Matrix products"). */
#ifndef AX_SMALLGEMM_H
#define AX_SMALLGEMM_H

#include <stdbool.h>

#include "dtype.h"

/* c = op(a) op(b), row-major as cblas_?gemm with alpha 1 and beta 0: op(a) m x k, op(b)
 * k x n, c m x n; f32 or f64. false (c untouched) when libxsmm has no kernel for the case
 * (1.17 generates none for a transposed b): the caller uses OpenBLAS. */
bool ax_small_gemm(ax_dtype dtype, bool trans_a, bool trans_b, int m, int n, int k, const void *a,
                   int lda, const void *b, int ldb, void *c, int ldc);

#endif

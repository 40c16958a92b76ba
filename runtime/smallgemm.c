/* libxsmm is column-major: a row-major c (m x n) is its column-major transpose, so
 * c = op(a) op(b) is asked of libxsmm as c^T = op(b)^T op(a)^T, operands swapped, and a
 * row-major operand read as it is stored is a column-major one transposed. */
#include "smallgemm.h"

#ifdef AX_NO_XSMM
/* Built without libxsmm (the allocation-hooked test programs, Makefile): OpenBLAS does all. */
bool ax_small_gemm(ax_dtype dtype, bool trans_a, bool trans_b, int m, int n, int k, const void *a,
                   int lda, const void *b, int ldb, void *c, int ldc) {
    (void)dtype, (void)trans_a, (void)trans_b, (void)m, (void)n, (void)k;
    (void)a, (void)lda, (void)b, (void)ldb, (void)c, (void)ldc;
    return false;
}
#else
#include <libxsmm.h>

bool ax_small_gemm(ax_dtype dtype, bool trans_a, bool trans_b, int m, int n, int k, const void *a,
                   int lda, const void *b, int ldb, void *c, int ldc) {
    libxsmm_blasint xm = n, xn = m, xk = k, xlda = ldb, xldb = lda, xldc = ldc;
    int flags =
        (trans_b ? LIBXSMM_GEMM_FLAG_TRANS_A : 0) | (trans_a ? LIBXSMM_GEMM_FLAG_TRANS_B : 0);
    if (dtype == AX_F32) {
        const float alpha = 1.0f, beta = 0.0f;
        libxsmm_smmfunction f =
            libxsmm_smmdispatch(xm, xn, xk, &xlda, &xldb, &xldc, &alpha, &beta, &flags, NULL);
        if (!f) return false;
        f(b, a, c);
        return true;
    }
    if (dtype == AX_F64) {
        const double alpha = 1.0, beta = 0.0;
        libxsmm_dmmfunction f =
            libxsmm_dmmdispatch(xm, xn, xk, &xlda, &xldb, &xldc, &alpha, &beta, &flags, NULL);
        if (!f) return false;
        f(b, a, c);
        return true;
    }
    return false;
}
#endif

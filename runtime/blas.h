/* OpenBLAS, opened with dlopen on first use, after choosing OPENBLAS_CORETYPE from the CPU
 * (Debian's 0.3.21 does not recognise recent CPUs and would fall back to slow kernels). */
#ifndef AX_BLAS_H
#define AX_BLAS_H

#include "context.h"

/* CBLAS enums, spelled out so that no CBLAS header is needed. */
enum {
    AX_CBLAS_ROW_MAJOR = 101,
    AX_CBLAS_NO_TRANS = 111,
    AX_CBLAS_TRANS = 112,
    AX_CBLAS_UPPER = 121,
    AX_CBLAS_LOWER = 122,
    AX_CBLAS_NON_UNIT = 131,
    AX_CBLAS_UNIT = 132,
    AX_CBLAS_LEFT = 141,
    AX_CBLAS_RIGHT = 142,
};

typedef void (*ax_sgemm_fn)(int order, int ta, int tb, int m, int n, int k, float alpha,
                            const float *a, int lda, const float *b, int ldb, float beta, float *c,
                            int ldc);
typedef void (*ax_dgemm_fn)(int order, int ta, int tb, int m, int n, int k, double alpha,
                            const double *a, int lda, const double *b, int ldb, double beta,
                            double *c, int ldc);

typedef void (*ax_strsm_fn)(int order, int side, int uplo, int trans, int diag, int m, int n,
                            float alpha, const float *a, int lda, float *b, int ldb);
typedef void (*ax_dtrsm_fn)(int order, int side, int uplo, int trans, int diag, int m, int n,
                            double alpha, const double *a, int lda, double *b, int ldb);

typedef struct ax_blas {
    void *handle;
    ax_sgemm_fn sgemm;
    ax_dgemm_fn dgemm;
    ax_strsm_fn strsm;
    ax_dtrsm_fn dtrsm;
    void (*spotrf)(const char *uplo, const int *n, float *a, const int *lda, int *info);
    void (*dpotrf)(const char *uplo, const int *n, double *a, const int *lda, int *info);
    void (*set_num_threads)(int n);
    int (*get_num_threads)(void);
} ax_blas;

/* Opens OpenBLAS on first call (records an error if it cannot). */
ax_blas *ax_blas_get(ax_ctx *cx);
void ax_blas_free(ax_blas *blas);

#endif

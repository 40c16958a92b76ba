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

/* C = alpha op(A) op(A)^T + beta C on the `uplo` triangle of C only (n x n). */
typedef void (*ax_ssyrk_fn)(int order, int uplo, int trans, int n, int k, float alpha,
                            const float *a, int lda, float beta, float *c, int ldc);
typedef void (*ax_dsyrk_fn)(int order, int uplo, int trans, int n, int k, double alpha,
                            const double *a, int lda, double beta, double *c, int ldc);

typedef void (*ax_strsm_fn)(int order, int side, int uplo, int trans, int diag, int m, int n,
                            float alpha, const float *a, int lda, float *b, int ldb);
typedef void (*ax_dtrsm_fn)(int order, int side, int uplo, int trans, int diag, int m, int n,
                            double alpha, const double *a, int lda, double *b, int ldb);

/* LAPACK routines (Fortran interface, column-major), index 0 = f32 (s...), 1 = f64 (d...). The
 * matrices and vectors are float* or double* by the index; the trailing size_t arguments are
 * gfortran's hidden lengths of the character arguments (1 each). */
typedef void (*ax_getrf_fn)(const int *m, const int *n, void *a, const int *lda, int *ipiv,
                            int *info);
typedef void (*ax_syevd_fn)(const char *jobz, const char *uplo, const int *n, void *a,
                            const int *lda, void *w, void *work, const int *lwork, int *iwork,
                            const int *liwork, int *info, size_t jobz_len, size_t uplo_len);
typedef void (*ax_gesdd_fn)(const char *jobz, const int *m, const int *n, void *a, const int *lda,
                            void *s, void *u, const int *ldu, void *vt, const int *ldvt, void *work,
                            const int *lwork, int *iwork, int *info, size_t jobz_len);
typedef void (*ax_geqrf_fn)(const int *m, const int *n, void *a, const int *lda, void *tau,
                            void *work, const int *lwork, int *info);
typedef void (*ax_orgqr_fn)(const int *m, const int *n, const int *k, void *a, const int *lda,
                            const void *tau, void *work, const int *lwork, int *info);

typedef struct ax_blas {
    void *handle;
    ax_sgemm_fn sgemm;
    ax_dgemm_fn dgemm;
    ax_ssyrk_fn ssyrk;
    ax_dsyrk_fn dsyrk;
    ax_strsm_fn strsm;
    ax_dtrsm_fn dtrsm;
    void (*spotrf)(const char *uplo, const int *n, float *a, const int *lda, int *info);
    void (*dpotrf)(const char *uplo, const int *n, double *a, const int *lda, int *info);
    void (*set_num_threads)(int n);
    int (*get_num_threads)(void);
    ax_getrf_fn getrf[2];
    ax_syevd_fn syevd[2];
    ax_gesdd_fn gesdd[2];
    ax_geqrf_fn geqrf[2];
    ax_orgqr_fn orgqr[2];
} ax_blas;

/* Opens OpenBLAS on first call (records an error if it cannot). */
ax_blas *ax_blas_get(ax_ctx *cx);
void ax_blas_free(ax_blas *blas);

#endif

/* LU, symmetric eigendecomposition, SVD and QR through OpenBLAS's LAPACK (see lapack.h). */
#include "lapack.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "blas.h"

/* ---------------------------------------------------------------- matrices and buffers */

/* The batch of matrices (..., rows, cols) an operand holds. */
typedef struct batch {
    int64_t count, rows, cols;
    int lead; /* the number of leading (batch) dims */
    const int64_t *lead_shape;
    ax_dtype dtype;
    int t;      /* the LAPACK routine index: 0 = f32, 1 = f64 */
    int64_t es; /* element size */
} batch;

static int64_t min64(int64_t a, int64_t b) {
    return a < b ? a : b;
}

/* Checks a (float, (..., m, n), square if asked, sizes LAPACK's int indexing can address) and
 * describes it. */
static bool batch_of(ax_ctx *cx, const char *name, const ax_array *a, bool square, batch *b) {
    char t[96];
    ax_array_type_format(t, sizeof t, a);
    if (!ax_dtype_is_float(a->dtype)) {
        ax_error(cx, AX_ERR_TYPE, "%s requires a floating-point argument, got %s", name, t);
        return false;
    }
    int nd = a->ndim;
    if (nd < 2 || (square && a->shape[nd - 1] != a->shape[nd - 2])) {
        ax_error(cx, AX_ERR_SHAPE, "%s requires %s, got %s", name,
                 square ? "square matrices (..., n, n)" : "matrices (..., m, n)", t);
        return false;
    }
    if (!a->buf) {
        ax_error(cx, AX_ERR_RUNTIME, "%s needs a concrete array, got %s", name, t);
        return false;
    }
    b->rows = a->shape[nd - 2];
    b->cols = a->shape[nd - 1];
    /* LAPACK counts elements and workspace in int */
    if (b->rows * b->cols > INT_MAX / 4) {
        ax_error(cx, AX_ERR_VALUE, "%s of %s: matrices too large for LAPACK", name, t);
        return false;
    }
    b->count = 1;
    for (int d = 0; d < nd - 2; d++) b->count *= a->shape[d];
    b->lead = nd - 2;
    b->lead_shape = a->shape;
    b->dtype = a->dtype;
    b->t = a->dtype == AX_F64;
    b->es = (int64_t)ax_dtype_size(a->dtype);
    return true;
}

/* A new array of the batch's leading dims followed by up to two more. */
static ax_array *new_result(ax_ctx *cx, const batch *b, ax_dtype dtype, int ndim, int64_t d0,
                            int64_t d1) {
    int64_t shape[AX_MAX_RANK];
    memcpy(shape, b->lead_shape, (size_t)b->lead * sizeof *shape);
    shape[b->lead] = d0;
    if (ndim == 2) shape[b->lead + 1] = d1;
    return ax_array_new(cx, dtype, b->lead + ndim, shape);
}

/* dst[j * ldd + i] = src[i * lds + j] for i < rows, j < cols: the transpose of a row-major
 * matrix, which is also the conversion between row-major and column-major order. In 32 x 32
 * tiles, so that both sides stay in cache (a plain double loop is 5x slower at 500 x 500). */
#define TRANSPOSE_TILES(T)                                                                         \
    do {                                                                                           \
        const T *s = src;                                                                          \
        T *d = dst;                                                                                \
        for (int64_t i0 = 0; i0 < rows; i0 += 32)                                                  \
            for (int64_t j0 = 0; j0 < cols; j0 += 32) {                                            \
                int64_t i1 = i0 + 32 < rows ? i0 + 32 : rows,                                      \
                        j1 = j0 + 32 < cols ? j0 + 32 : cols;                                      \
                for (int64_t i = i0; i < i1; i++)                                                  \
                    for (int64_t j = j0; j < j1; j++) d[j * ldd + i] = s[i * lds + j];             \
            }                                                                                      \
    } while (0)

static void transpose(ax_dtype t, const void *src, int64_t rows, int64_t cols, int64_t lds,
                      void *dst, int64_t ldd) {
    if (t == AX_F64)
        TRANSPOSE_TILES(double);
    else
        TRANSPOSE_TILES(float);
}

/* p (n x n) transposed in place, in tiles: x[i][j] <-> x[j][i]. */
#define TRANSPOSE_IN_PLACE(T)                                                                      \
    do {                                                                                           \
        T *x = p;                                                                                  \
        for (int64_t i0 = 0; i0 < n; i0 += 32)                                                     \
            for (int64_t j0 = i0; j0 < n; j0 += 32) {                                              \
                int64_t i1 = i0 + 32 < n ? i0 + 32 : n, j1 = j0 + 32 < n ? j0 + 32 : n;            \
                for (int64_t i = i0; i < i1; i++)                                                  \
                    for (int64_t j = j0 == i0 ? i + 1 : j0; j < j1; j++) {                         \
                        T v = x[i * n + j];                                                        \
                        x[i * n + j] = x[j * n + i];                                               \
                        x[j * n + i] = v;                                                          \
                    }                                                                              \
            }                                                                                      \
    } while (0)

static void transpose_square(ax_dtype t, void *p, int64_t n) {
    if (t == AX_F64)
        TRANSPOSE_IN_PLACE(double);
    else
        TRANSPOSE_IN_PLACE(float);
}

static double get(ax_dtype t, const void *p, int64_t i) {
    return t == AX_F64 ? ((const double *)p)[i] : ((const float *)p)[i];
}

static void set(ax_dtype t, void *p, int64_t i, double v) {
    if (t == AX_F64)
        ((double *)p)[i] = v;
    else
        ((float *)p)[i] = (float)v;
}

static void fill(ax_dtype t, void *p, int64_t n, double v) {
    for (int64_t i = 0; i < n; i++) set(t, p, i, v);
}

/* dst (rows x cols, row-major) = the first `cols` columns of the identity. */
static void identity(ax_dtype t, void *dst, int64_t rows, int64_t cols) {
    fill(t, dst, rows * cols, 0);
    for (int64_t i = 0; i < min64(rows, cols); i++) set(t, dst, i * cols + i, 1);
}

/* Whether the row-major n x n matrix is finite where LAPACK reads it: everywhere (tri = 0), in
 * its lower (tri > 0) or upper (tri < 0) triangle. NaN or infinite input would make the
 * iterative routines return garbage or stall; such matrices give NaNs instead. */
static bool finite_where_read(ax_dtype t, const void *m, int64_t rows, int64_t cols, int tri) {
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < cols; j++)
            if ((tri == 0 || (tri > 0 ? j <= i : j >= i)) && !isfinite(get(t, m, i * cols + j)))
                return false;
    return true;
}

/* LAPACK's answer to a workspace query (lwork = -1), as a count of elements. */
static int work_count(ax_dtype t, const void *query) {
    double v = get(t, query, 0);
    return v < 1 ? 1 : (int)ceil(v * (1 + 1e-6)) + 1; /* f32 rounds large counts down */
}

/* Scratch memory of one call, released together: byte arrays, so that large work matrices come
 * from the context's buffer cache with their pages already mapped (a fresh 2 MB malloc faults
 * them in again on every call). */
typedef struct scratch {
    ax_array *blocks[8];
    int n;
} scratch;

static void *scratch_alloc(ax_ctx *cx, scratch *s, int64_t count, int64_t size) {
    if (s->n == 8) return ax_error(cx, AX_ERR_RUNTIME, "internal error: LAPACK scratch is full");
    int64_t bytes = (count > 0 ? count : 1) * size;
    ax_array *a = ax_array_new(cx, AX_U8, 1, &bytes);
    if (!a) return NULL;
    s->blocks[s->n++] = a;
    return ax_array_data(a);
}

static void scratch_free(scratch *s) {
    for (int i = 0; i < s->n; i++) ax_array_release(s->blocks[i]);
    s->n = 0;
}

/* Releases the outputs of a failed kernel and returns -1. */
static int fail(int n, ax_array **out, ax_array *in, scratch *s) {
    for (int i = 0; i < n; i++) {
        ax_array_release(out[i]);
        out[i] = NULL;
    }
    ax_array_release(in);
    scratch_free(s);
    return -1;
}

/* Releases what a kernel used and returns 0. */
static int succeed(ax_array *in, scratch *s) {
    ax_array_release(in);
    scratch_free(s);
    return 0;
}

static bool all_made(int n, ax_array **out) {
    for (int i = 0; i < n; i++)
        if (!out[i]) return false;
    return true;
}

/* Whether a square buffer of the larger side fits LAPACK's int counts (full u, vt or q). */
static bool square_fits(ax_ctx *cx, const char *name, const batch *b) {
    int64_t big = b->rows > b->cols ? b->rows : b->cols;
    if (big <= (INT_MAX / 4) / (big > 0 ? big : 1)) return true;
    ax_error(cx, AX_ERR_VALUE,
             "%s: a %lld x %lld matrix is too large for LAPACK with "
             "full_matrices=True",
             name, (long long)big, (long long)big);
    return false;
}

static int lapack_failed(ax_ctx *cx, const char *routine, int info) {
    ax_error(cx, AX_ERR_RUNTIME, "internal error: LAPACK %s rejected argument %d", routine, -info);
    return -1;
}

/* ---------------------------------------------------------------- LU */

/* The permutation of rows that the swaps pivots[0..k) make, applied in order to 0..m-1. */
static void permutation_of(const int32_t *pivots, int64_t k, int32_t *perm, int64_t m) {
    for (int64_t i = 0; i < m; i++) perm[i] = (int32_t)i;
    for (int64_t i = 0; i < k; i++) {
        int32_t j = pivots[i], x = perm[i];
        perm[i] = perm[j];
        perm[j] = x;
    }
}

int ax_lu(ax_ctx *cx, ax_array *a, ax_array **out) {
    batch b;
    scratch s = {0};
    out[0] = out[1] = out[2] = NULL;
    if (!batch_of(cx, "lu", a, false, &b)) return -1;
    int64_t m = b.rows, n = b.cols, k = min64(m, n);
    out[0] = new_result(cx, &b, b.dtype, 2, m, n);
    out[1] = new_result(cx, &b, AX_I32, 1, k, 0);
    out[2] = new_result(cx, &b, AX_I32, 1, m, 0);
    ax_array *ac = all_made(3, out) ? ax_array_contiguous(cx, a) : NULL;
    ax_blas *blas = ac && k > 0 ? ax_blas_get(cx) : NULL;
    /* a square matrix is factored in its output, a rectangular one beside it */
    void *work = ac ? (m == n ? ax_array_data(out[0]) : scratch_alloc(cx, &s, m * n, b.es)) : NULL;
    int *ipiv = work ? scratch_alloc(cx, &s, k, sizeof(int)) : NULL;
    if (!ipiv || (k > 0 && !blas)) return fail(3, out, ac, &s);
    const char *src = ax_array_data(ac);
    char *lu = ax_array_data(out[0]);
    int32_t *piv = ax_array_data(out[1]), *perm = ax_array_data(out[2]);
    int im = (int)m, in = (int)n, lda = m > 1 ? (int)m : 1;
    for (int64_t i = 0; i < b.count; i++) {
        int64_t off = i * m * n * b.es;
        if (k > 0) {
            int info = 0;
            char *mat = m == n ? lu + off : work;
            transpose(b.dtype, src + off, m, n, n, mat, lda);
            blas->getrf[b.t](&im, &in, mat, &lda, ipiv, &info);
            if (info < 0) return lapack_failed(cx, "getrf", info), fail(3, out, ac, &s);
            if (m == n)
                transpose_square(b.dtype, mat, n);
            else
                transpose(b.dtype, work, n, m, lda, lu + off, n);
        }
        for (int64_t j = 0; j < k; j++) piv[i * k + j] = ipiv[j] - 1;
        permutation_of(piv + i * k, k, perm + i * m, m);
    }
    return succeed(ac, &s);
}

/* ---------------------------------------------------------------- eigh */

int ax_eigh(ax_ctx *cx, ax_array *a, bool lower, ax_array **out) {
    batch b;
    scratch s = {0};
    out[0] = out[1] = NULL;
    if (!batch_of(cx, "eigh", a, true, &b)) return -1;
    int64_t n = b.rows;
    out[0] = new_result(cx, &b, b.dtype, 2, n, n);
    out[1] = new_result(cx, &b, b.dtype, 1, n, 0);
    ax_array *ac = all_made(2, out) ? ax_array_contiguous(cx, a) : NULL;
    if (!ac || n == 0) {
        ax_array_release(ac);
        return ac ? 0 : fail(2, out, NULL, &s);
    }
    ax_blas *blas = ax_blas_get(cx);
    void *mat = blas ? scratch_alloc(cx, &s, n * n, b.es) : NULL;
    void *wq = mat ? scratch_alloc(cx, &s, n, b.es) : NULL;
    void *query = wq ? scratch_alloc(cx, &s, 1, b.es) : NULL;
    if (!query) return fail(2, out, ac, &s);
    const char *uplo = lower ? "L" : "U";
    int in = (int)n, info = 0, lwork = -1, liwork = -1, iquery = 0;
    blas->syevd[b.t]("V", uplo, &in, mat, &in, wq, query, &lwork, &iquery, &liwork, &info, 1, 1);
    lwork = work_count(b.dtype, query);
    liwork = iquery > 1 ? iquery : 1;
    void *work = scratch_alloc(cx, &s, lwork, b.es);
    int *iwork = work ? scratch_alloc(cx, &s, liwork, sizeof(int)) : NULL;
    if (!iwork) return fail(2, out, ac, &s);
    const char *src = ax_array_data(ac);
    char *v = ax_array_data(out[0]), *w = ax_array_data(out[1]);
    for (int64_t i = 0; i < b.count; i++) {
        const char *mi = src + i * n * n * b.es;
        char *vi = v + i * n * n * b.es, *wi = w + i * n * b.es;
        info = 1;
        if (finite_where_read(b.dtype, mi, n, n, lower ? 1 : -1)) {
            transpose(b.dtype, mi, n, n, n, mat, n);
            blas->syevd[b.t]("V", uplo, &in, mat, &in, wi, work, &lwork, iwork, &liwork, &info, 1,
                             1);
            if (info < 0) return lapack_failed(cx, "syevd", info), fail(2, out, ac, &s);
        }
        if (info == 0) {
            transpose(b.dtype, mat, n, n, n, vi, n); /* LAPACK's columns stay columns */
        } else {
            fill(b.dtype, vi, n * n, NAN);
            fill(b.dtype, wi, n, NAN);
        }
    }
    return succeed(ac, &s);
}

/* ---------------------------------------------------------------- SVD */

/* The empty SVD (k = 0), as JAX gives it: identities for full u and vt. */
static void empty_svd(const batch *b, bool full, ax_array **out) {
    if (!full) return;
    for (int64_t i = 0; i < b->count; i++) {
        int64_t m = b->rows, n = b->cols;
        identity(b->dtype, (char *)ax_array_data(out[1]) + i * m * m * b->es, m, m);
        identity(b->dtype, (char *)ax_array_data(out[2]) + i * n * n * b->es, n, n);
    }
}

int ax_svd(ax_ctx *cx, ax_array *a, bool full_matrices, bool compute_uv, ax_array **out) {
    batch b;
    scratch s = {0};
    int nout = compute_uv ? 3 : 1;
    out[0] = NULL;
    if (compute_uv) out[1] = out[2] = NULL;
    if (!batch_of(cx, "svd", a, false, &b) ||
        (compute_uv && full_matrices && !square_fits(cx, "svd", &b)))
        return -1;
    int64_t m = b.rows, n = b.cols, k = min64(m, n);
    int64_t ucols = full_matrices ? m : k, vtrows = full_matrices ? n : k;
    out[0] = new_result(cx, &b, b.dtype, 1, k, 0);
    if (compute_uv) {
        out[1] = new_result(cx, &b, b.dtype, 2, m, ucols);
        out[2] = new_result(cx, &b, b.dtype, 2, vtrows, n);
    }
    ax_array *ac = all_made(nout, out) ? ax_array_contiguous(cx, a) : NULL;
    if (!ac || k == 0) {
        if (ac && compute_uv) empty_svd(&b, full_matrices, out);
        ax_array_release(ac);
        return ac ? 0 : fail(nout, out, NULL, &s);
    }
    ax_blas *blas = ax_blas_get(cx);
    void *mat = blas ? scratch_alloc(cx, &s, m * n, b.es) : NULL;
    void *u = mat ? scratch_alloc(cx, &s, compute_uv ? m * ucols : 1, b.es) : NULL;
    void *vt = u ? scratch_alloc(cx, &s, compute_uv ? vtrows * n : 1, b.es) : NULL;
    int *iwork = vt ? scratch_alloc(cx, &s, 8 * k, sizeof(int)) : NULL;
    void *sq = iwork ? scratch_alloc(cx, &s, k, b.es) : NULL;
    void *query = sq ? scratch_alloc(cx, &s, 1, b.es) : NULL;
    if (!query) return fail(nout, out, ac, &s);
    const char *jobz = !compute_uv ? "N" : full_matrices ? "A" : "S";
    int im = (int)m, in = (int)n, ldu = compute_uv ? (int)m : 1;
    int ldvt = compute_uv ? (int)vtrows : 1, lwork = -1, info = 0;
    blas->gesdd[b.t](jobz, &im, &in, mat, &im, sq, u, &ldu, vt, &ldvt, query, &lwork, iwork, &info,
                     1);
    lwork = work_count(b.dtype, query);
    void *work = scratch_alloc(cx, &s, lwork, b.es);
    if (!work) return fail(nout, out, ac, &s);
    const char *src = ax_array_data(ac);
    for (int64_t i = 0; i < b.count; i++) {
        const char *mi = src + i * m * n * b.es;
        char *si = (char *)ax_array_data(out[0]) + i * k * b.es;
        char *ui = compute_uv ? (char *)ax_array_data(out[1]) + i * m * ucols * b.es : NULL;
        char *vti = compute_uv ? (char *)ax_array_data(out[2]) + i * vtrows * n * b.es : NULL;
        info = 1;
        if (finite_where_read(b.dtype, mi, m, n, 0)) {
            transpose(b.dtype, mi, m, n, n, mat, m);
            blas->gesdd[b.t](jobz, &im, &in, mat, &im, si, u, &ldu, vt, &ldvt, work, &lwork, iwork,
                             &info, 1);
            if (info < 0) return lapack_failed(cx, "gesdd", info), fail(nout, out, ac, &s);
        }
        if (info != 0) {
            fill(b.dtype, si, k, NAN);
            if (compute_uv) fill(b.dtype, ui, m * ucols, NAN), fill(b.dtype, vti, vtrows * n, NAN);
        } else if (compute_uv) {
            transpose(b.dtype, u, ucols, m, m, ui, ucols);
            transpose(b.dtype, vt, n, vtrows, vtrows, vti, n);
        }
    }
    return succeed(ac, &s);
}

/* ---------------------------------------------------------------- QR */

int ax_qr(ax_ctx *cx, ax_array *a, bool full_matrices, ax_array **out) {
    batch b;
    scratch s = {0};
    out[0] = out[1] = NULL;
    if (!batch_of(cx, "qr", a, false, &b) || (full_matrices && !square_fits(cx, "qr", &b)))
        return -1;
    int64_t m = b.rows, n = b.cols, k = min64(m, n);
    int64_t qcols = full_matrices ? m : k, rrows = full_matrices ? m : k;
    out[0] = new_result(cx, &b, b.dtype, 2, m, qcols);
    out[1] = new_result(cx, &b, b.dtype, 2, rrows, n);
    ax_array *ac = all_made(2, out) ? ax_array_contiguous(cx, a) : NULL;
    if (ac && k == 0) { /* q is the identity's first columns, r zeros, as JAX */
        for (int64_t i = 0; i < b.count; i++)
            identity(b.dtype, (char *)ax_array_data(out[0]) + i * m * qcols * b.es, m, qcols);
        fill(b.dtype, ax_array_data(out[1]), out[1]->size, 0);
    }
    if (!ac || k == 0) {
        ax_array_release(ac);
        return ac ? 0 : fail(2, out, NULL, &s);
    }
    ax_blas *blas = ax_blas_get(cx);
    int64_t wide = n > qcols ? n : qcols; /* the factored matrix, then q, in one buffer */
    void *mat = blas ? scratch_alloc(cx, &s, m * wide, b.es) : NULL;
    void *tau = mat ? scratch_alloc(cx, &s, k, b.es) : NULL;
    void *query = tau ? scratch_alloc(cx, &s, 1, b.es) : NULL;
    if (!query) return fail(2, out, ac, &s);
    int im = (int)m, in = (int)n, iq = (int)qcols, ik = (int)k, lwork = -1, info = 0;
    blas->geqrf[b.t](&im, &in, mat, &im, tau, query, &lwork, &info);
    int lw1 = work_count(b.dtype, query);
    blas->orgqr[b.t](&im, &iq, &ik, mat, &im, tau, query, &lwork, &info);
    int lw2 = work_count(b.dtype, query);
    lwork = lw1 > lw2 ? lw1 : lw2;
    void *work = scratch_alloc(cx, &s, lwork, b.es);
    if (!work) return fail(2, out, ac, &s);
    const char *src = ax_array_data(ac);
    for (int64_t i = 0; i < b.count; i++) {
        char *qi = (char *)ax_array_data(out[0]) + i * m * qcols * b.es;
        char *ri = (char *)ax_array_data(out[1]) + i * rrows * n * b.es;
        fill(b.dtype, mat, m * wide, 0);
        transpose(b.dtype, src + i * m * n * b.es, m, n, n, mat, m);
        blas->geqrf[b.t](&im, &in, mat, &im, tau, work, &lwork, &info);
        if (info < 0) return lapack_failed(cx, "geqrf", info), fail(2, out, ac, &s);
        for (int64_t r = 0; r < rrows; r++) /* r: the upper triangle of the factored matrix */
            for (int64_t c = 0; c < n; c++)
                set(b.dtype, ri, r * n + c, c >= r ? get(b.dtype, mat, c * m + r) : 0.0);
        blas->orgqr[b.t](&im, &iq, &ik, mat, &im, tau, work, &lwork, &info);
        if (info < 0) return lapack_failed(cx, "orgqr", info), fail(2, out, ac, &s);
        transpose(b.dtype, mat, qcols, m, m, qi, qcols);
    }
    return succeed(ac, &s);
}

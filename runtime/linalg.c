/* lax.dot_general through OpenBLAS's gemm, Cholesky through LAPACK's potrf, triangular solves
 * through trsm.
 *
 * dot_general sees each operand as a batch of matrices: the lhs as (free x contracting), the
 * rhs as (contracting x free). When an operand's dimensions already lie in memory the way
 * gemm can read them (each group of dims collapses to one stride, one of the two strides is
 * 1), gemm reads it in place, transposed if need be; otherwise the operand is copied once into
 * that layout. The output is (batch, lhs free, rhs free), row-major. */
#include "linalg.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "blas.h"
#include "smallgemm.h"

/* Products of at most this many multiply-adds (m n k) run on one thread, NN and TN forms on
 * libxsmm. Medians on the 2-core machine of docs/benchmarks.md (build/bench/bench_smallgemm,
 * f32, under load): 128^3 took 22-34 us on two OpenBLAS threads, 25-29 us on one, 18-24 us on
 * libxsmm; 160^3 45-51 / 48-52 / 41-45 us; 192^3 55-79 / 77-87 / 59-76 us; from 256^3 two
 * threads win (120-131 us against 183 on libxsmm). */
#define AX_GEMM_SMALL (160 * 160 * 160)

/* ---------------------------------------------------------------------------------------- */
/* Checking the dimension numbers                                                           */

typedef struct {
    int nbatch, ncontract, nlfree, nrfree;
    int lbatch[AX_MAX_RANK], rbatch[AX_MAX_RANK];
    int lcontract[AX_MAX_RANK], rcontract[AX_MAX_RANK];
    int lfree[AX_MAX_RANK], rfree[AX_MAX_RANK];
    int64_t batch, m, n, k; /* products of the batch, lhs free, rhs free, contracting sizes */
    int out_ndim;
    int64_t out_shape[AX_MAX_RANK];
} dot_plan;

static bool dims_valid(ax_ctx *cx, const ax_array *x, const int *dims, int n, bool *used,
                       const char *what, const char *side) {
    for (int i = 0; i < n; i++) {
        int d = dims[i];
        if (d < 0 || d >= x->ndim) {
            char t[96];
            ax_array_type_format(t, sizeof t, x);
            ax_error(cx, AX_ERR_SHAPE, "dot_general: %s dimension %d is out of range for the %s %s",
                     what, d, side, t);
            return false;
        }
        if (used[d]) {
            ax_error(cx, AX_ERR_SHAPE, "dot_general: dimension %d of the %s is named twice", d,
                     side);
            return false;
        }
        used[d] = true;
    }
    return true;
}

static bool sizes_match(ax_ctx *cx, const ax_array *l, const ax_array *r, const int *ld,
                        const int *rd, int n, const char *what) {
    for (int i = 0; i < n; i++) {
        if (l->shape[ld[i]] == r->shape[rd[i]]) continue;
        char lt[96], rt[96];
        ax_array_type_format(lt, sizeof lt, l);
        ax_array_type_format(rt, sizeof rt, r);
        ax_error(cx, AX_ERR_SHAPE,
                 "dot_general: %s dimension %d of %s (size %lld) does not match dimension %d of "
                 "%s (size %lld)",
                 what, ld[i], lt, (long long)l->shape[ld[i]], rd[i], rt,
                 (long long)r->shape[rd[i]]);
        return false;
    }
    return true;
}

static int free_dims(const ax_array *x, const bool *used, int *out) {
    int n = 0;
    for (int d = 0; d < x->ndim; d++)
        if (!used[d]) out[n++] = d;
    return n;
}

static int64_t dims_product(const ax_array *x, const int *dims, int n) {
    int64_t p = 1;
    for (int i = 0; i < n; i++) p *= x->shape[dims[i]];
    return p;
}

static bool plan_dot(ax_ctx *cx, const ax_array *l, const ax_array *r, const ax_dot_dims *dims,
                     dot_plan *p) {
    /* the operand types, formatted only when there is an error to report */
    char lt[96], rt[96];
#define TYPES() (ax_array_type_format(lt, sizeof lt, l), ax_array_type_format(rt, sizeof rt, r))
    if (l->dtype != r->dtype) {
        TYPES();
        ax_error(cx, AX_ERR_TYPE, "dot_general requires operands of one dtype, got %s and %s", lt,
                 rt);
        return false;
    }
    if (!l->buf || !r->buf) {
        TYPES();
        ax_error(cx, AX_ERR_RUNTIME, "dot_general needs concrete operands, got %s and %s", lt, rt);
        return false;
    }
    memset(p, 0, sizeof *p);
    p->nbatch = dims->nbatch;
    p->ncontract = dims->ncontract;
    if (p->nbatch < 0 || p->ncontract < 0 || p->nbatch + p->ncontract > l->ndim ||
        p->nbatch + p->ncontract > r->ndim) {
        TYPES();
        ax_error(cx, AX_ERR_SHAPE,
                 "dot_general: %d batch and %d contracting dimensions do not fit %s and %s",
                 p->nbatch, p->ncontract, lt, rt);
        return false;
    }
    memcpy(p->lbatch, dims->lhs_batch, sizeof p->lbatch);
    memcpy(p->rbatch, dims->rhs_batch, sizeof p->rbatch);
    memcpy(p->lcontract, dims->lhs_contract, sizeof p->lcontract);
    memcpy(p->rcontract, dims->rhs_contract, sizeof p->rcontract);
    bool lused[AX_MAX_RANK] = {0}, rused[AX_MAX_RANK] = {0};
    if (!dims_valid(cx, l, p->lbatch, p->nbatch, lused, "batch", "lhs") ||
        !dims_valid(cx, l, p->lcontract, p->ncontract, lused, "contracting", "lhs") ||
        !dims_valid(cx, r, p->rbatch, p->nbatch, rused, "batch", "rhs") ||
        !dims_valid(cx, r, p->rcontract, p->ncontract, rused, "contracting", "rhs") ||
        !sizes_match(cx, l, r, p->lbatch, p->rbatch, p->nbatch, "batch") ||
        !sizes_match(cx, l, r, p->lcontract, p->rcontract, p->ncontract, "contracting"))
        return false;
    p->nlfree = free_dims(l, lused, p->lfree);
    p->nrfree = free_dims(r, rused, p->rfree);
    p->batch = dims_product(l, p->lbatch, p->nbatch);
    p->m = dims_product(l, p->lfree, p->nlfree);
    p->n = dims_product(r, p->rfree, p->nrfree);
    p->k = dims_product(l, p->lcontract, p->ncontract);
    p->out_ndim = p->nbatch + p->nlfree + p->nrfree;
    if (p->out_ndim > AX_MAX_RANK) {
        TYPES();
        ax_error(cx, AX_ERR_SHAPE, "dot_general of %s and %s would have rank %d (at most %d)", lt,
                 rt, p->out_ndim, AX_MAX_RANK);
        return false;
    }
    int o = 0;
    for (int i = 0; i < p->nbatch; i++) p->out_shape[o++] = l->shape[p->lbatch[i]];
    for (int i = 0; i < p->nlfree; i++) p->out_shape[o++] = l->shape[p->lfree[i]];
    for (int i = 0; i < p->nrfree; i++) p->out_shape[o++] = r->shape[p->rfree[i]];
    return true;
#undef TYPES
}

/* ---------------------------------------------------------------------------------------- */
/* Operands as gemm matrices                                                                */

/* One operand seen as a batch of (outer x inner) matrices. */
typedef struct {
    ax_array *arr; /* the array gemm reads: the operand or a relaid copy (owned reference) */
    int nbatch, nouter, ninner;
    int batch[AX_MAX_RANK], outer[AX_MAX_RANK], inner[AX_MAX_RANK];
    bool trans;
    int64_t ld;
} gemm_operand;

/* Collapses dims (in this order, outermost first) into one dimension: false when their
 * strides do not nest. *stride is 0 when every dim has size 1 (any stride will do). */
static bool collapse(const ax_array *x, const int *dims, int n, int64_t *stride) {
    int64_t expected = 0;
    bool any = false;
    *stride = 0;
    for (int i = n - 1; i >= 0; i--) {
        int64_t size = x->shape[dims[i]], st = x->strides[dims[i]];
        if (size == 1) continue;
        if (!any)
            *stride = st;
        else if (st != expected)
            return false;
        any = true;
        expected = st * size;
    }
    return true;
}

/* Whether gemm can read the operand in place, and how (row-major, maybe transposed). */
static bool gemm_layout(gemm_operand *op) {
    const ax_array *x = op->arr;
    int64_t rows = dims_product(x, op->outer, op->nouter);
    int64_t cols = dims_product(x, op->inner, op->ninner);
    int64_t rs, cs;
    if (!collapse(x, op->outer, op->nouter, &rs) || !collapse(x, op->inner, op->ninner, &cs))
        return false;
    int64_t min_cols = cols > 1 ? cols : 1, min_rows = rows > 1 ? rows : 1;
    int64_t ld = rows <= 1 ? min_cols : rs;
    if ((cols <= 1 || cs == 1) && ld >= min_cols && ld <= INT_MAX) {
        op->trans = false;
        op->ld = ld;
        return true;
    }
    ld = cols <= 1 ? min_rows : cs;
    if ((rows <= 1 || rs == 1) && ld >= min_rows && ld <= INT_MAX) {
        op->trans = true;
        op->ld = ld;
        return true;
    }
    return false;
}

static void operand_init(gemm_operand *op, ax_array *x, const int *batch, int nbatch,
                         const int *outer, int nouter, const int *inner, int ninner) {
    op->arr = ax_array_retain(x);
    op->nbatch = nbatch;
    op->nouter = nouter;
    op->ninner = ninner;
    memcpy(op->batch, batch, (size_t)nbatch * sizeof *batch);
    memcpy(op->outer, outer, (size_t)nouter * sizeof *outer);
    memcpy(op->inner, inner, (size_t)ninner * sizeof *inner);
}

/* Copies the operand into the row-major layout (batch, outer, inner). */
static bool operand_relayout(ax_ctx *cx, gemm_operand *op) {
    int64_t shape[AX_MAX_RANK], strides[AX_MAX_RANK];
    int perm[AX_MAX_RANK], n = 0;
    for (int i = 0; i < op->nbatch; i++) perm[n++] = op->batch[i];
    for (int i = 0; i < op->nouter; i++) perm[n++] = op->outer[i];
    for (int i = 0; i < op->ninner; i++) perm[n++] = op->inner[i];
    for (int i = 0; i < n; i++) {
        shape[i] = op->arr->shape[perm[i]];
        strides[i] = op->arr->strides[perm[i]];
    }
    ax_array *view = ax_array_view(cx, op->arr, n, shape, strides, op->arr->offset);
    if (!view) return false;
    ax_array *copy = ax_array_copy(cx, view);
    ax_array_release(view);
    if (!copy) return false;
    ax_array_release(op->arr);
    op->arr = copy;
    for (int i = 0; i < op->nbatch; i++) op->batch[i] = i;
    for (int i = 0; i < op->nouter; i++) op->outer[i] = op->nbatch + i;
    for (int i = 0; i < op->ninner; i++) op->inner[i] = op->nbatch + op->nouter + i;
    bool ok = gemm_layout(op);
    (void)ok; /* a fresh row-major copy is always readable */
    return true;
}

/* Contracting pairs in the order of the operand's memory (largest stride first). */
static void contract_order_by(const ax_array *x, const int *mine, const int *lc, const int *rc,
                              int n, int *lout, int *rout) {
    int idx[AX_MAX_RANK];
    for (int i = 0; i < n; i++) idx[i] = i;
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && x->strides[mine[idx[j]]] > x->strides[mine[idx[j - 1]]]; j--) {
            int t = idx[j];
            idx[j] = idx[j - 1];
            idx[j - 1] = t;
        }
    for (int i = 0; i < n; i++) {
        lout[i] = lc[idx[i]];
        rout[i] = rc[idx[i]];
    }
}

static void operands_init(gemm_operand *a, gemm_operand *b, ax_array *l, ax_array *r,
                          const dot_plan *p, const int *lc, const int *rc) {
    operand_init(a, l, p->lbatch, p->nbatch, p->lfree, p->nlfree, lc, p->ncontract);
    operand_init(b, r, p->rbatch, p->nbatch, rc, p->ncontract, p->rfree, p->nrfree);
}

static void operands_release(gemm_operand *a, gemm_operand *b) {
    ax_array_release(a->arr);
    ax_array_release(b->arr);
    a->arr = b->arr = NULL;
}

/* Picks an order of the contracting pairs under which both operands (or failing that, one)
 * can be read in place, and copies the others. */
static bool prepare_operands(ax_ctx *cx, ax_array *l, ax_array *r, const dot_plan *p,
                             gemm_operand *a, gemm_operand *b) {
    int orders[3][2][AX_MAX_RANK];
    memcpy(orders[0][0], p->lcontract, sizeof orders[0][0]);
    memcpy(orders[0][1], p->rcontract, sizeof orders[0][1]);
    contract_order_by(l, p->lcontract, p->lcontract, p->rcontract, p->ncontract, orders[1][0],
                      orders[1][1]);
    contract_order_by(r, p->rcontract, p->lcontract, p->rcontract, p->ncontract, orders[2][0],
                      orders[2][1]);
    int best = 0, best_score = -1;
    for (int o = 0; o < 3; o++) {
        operands_init(a, b, l, r, p, orders[o][0], orders[o][1]);
        int score = 2 * gemm_layout(a) + gemm_layout(b);
        /* prefer the in-place lhs: it is usually the larger operand of a matrix-vector */
        if (score == 3) return true;
        if (score > best_score) {
            best = o;
            best_score = score;
        }
        operands_release(a, b);
    }
    operands_init(a, b, l, r, p, orders[best][0], orders[best][1]);
    bool ok = true;
    if (!gemm_layout(a)) ok = operand_relayout(cx, a);
    if (ok && !gemm_layout(b)) ok = operand_relayout(cx, b);
    if (!ok) operands_release(a, b);
    return ok;
}

/* Element offset of batch element number `index` of an operand. */
static int64_t batch_offset(const gemm_operand *op, const int64_t *batch_shape, int64_t index) {
    int64_t off = 0;
    for (int i = op->nbatch - 1; i >= 0; i--) {
        off += (index % batch_shape[i]) * op->arr->strides[op->batch[i]];
        index /= batch_shape[i];
    }
    return off;
}

/* Whether op(A) op(B) at these pointers is X X^T or X^T X for one matrix X: the same memory
 * read once transposed and once not, as NumPy tests before it calls syrk. */
static bool is_gram(const dot_plan *p, const gemm_operand *a, const gemm_operand *b, const char *ap,
                    const char *bp) {
    return ap == bp && p->m == p->n && p->m > 1 && a->ld == b->ld && a->trans != b->trans;
}

/* Copies the upper triangle of the n x n matrix c onto its lower one, in square tiles so
 * that the column-order writes stay in cache. */
#define MIRROR_UPPER(T)                                                                            \
    static void mirror_upper_##T(T *c, int64_t n) {                                                \
        const int64_t tile = 64;                                                                   \
        for (int64_t i0 = 0; i0 < n; i0 += tile)                                                   \
            for (int64_t j0 = i0; j0 < n; j0 += tile) {                                            \
                int64_t i1 = i0 + tile < n ? i0 + tile : n, j1 = j0 + tile < n ? j0 + tile : n;    \
                for (int64_t i = i0; i < i1; i++)                                                  \
                    for (int64_t j = j0 > i + 1 ? j0 : i + 1; j < j1; j++)                         \
                        c[j * n + i] = c[i * n + j];                                               \
            }                                                                                      \
    }
MIRROR_UPPER(float)
MIRROR_UPPER(double)

/* C = op(A) op(A)^T through syrk, which computes one triangle (half gemm's work); the other
 * is its mirror image, so the result is exactly symmetric. */
static void run_syrk(const ax_blas *blas, ax_dtype dtype, const gemm_operand *a, int n, int k,
                     const char *ap, char *cp) {
    int ta = a->trans ? AX_CBLAS_TRANS : AX_CBLAS_NO_TRANS, lda = (int)a->ld;
    if (dtype == AX_F32) {
        blas->ssyrk(AX_CBLAS_ROW_MAJOR, AX_CBLAS_UPPER, ta, n, k, 1.0f, (const float *)ap, lda,
                    0.0f, (float *)cp, n);
        mirror_upper_float((float *)cp, n);
    } else {
        blas->dsyrk(AX_CBLAS_ROW_MAJOR, AX_CBLAS_UPPER, ta, n, k, 1.0, (const double *)ap, lda, 0.0,
                    (double *)cp, n);
        mirror_upper_double((double *)cp, n);
    }
}

/* Rows of the output per gemm call. A product of more than PANEL_WORK multiply-adds (a
 * second or so on a busy machine) is cut into panels of rows, so that a Ctrl-C is noticed
 * between them; panels of at least PANEL_MIN_ROWS rows keep OpenBLAS as fast as one call. The
 * cut leaves f32 products bit for bit as they were; f64 ones may change in their last bit, as
 * they do with OpenBLAS's thread count. Eager and jit share this kernel, so they agree. */
enum { PANEL_WORK = 1 << 30, PANEL_MIN_ROWS = 256 };

static int64_t panel_rows(const dot_plan *p) {
    int64_t rows = PANEL_WORK / (p->n * p->k); /* n, k >= 1 and <= INT_MAX here */
    if (rows < PANEL_MIN_ROWS) rows = PANEL_MIN_ROWS;
    return p->m < 2 * rows ? p->m : rows;
}

/* false when a Ctrl-C stopped it (the output is partly written). */
static bool run_gemm(const ax_ctx *cx, const ax_blas *blas, const dot_plan *p,
                     const gemm_operand *a, const gemm_operand *b, ax_array *out) {
    int ta = a->trans ? AX_CBLAS_TRANS : AX_CBLAS_NO_TRANS;
    int tb = b->trans ? AX_CBLAS_TRANS : AX_CBLAS_NO_TRANS;
    int n = (int)p->n, k = (int)p->k, lda = (int)a->ld, ldb = (int)b->ld;
    int ldc = n > 1 ? n : 1;
    int64_t es = (int64_t)ax_dtype_size(out->dtype), panel = panel_rows(p);
    /* where row r of op(a) starts: a row of a, or a column of a stored transposed */
    int64_t a_row_step = a->trans ? 1 : a->ld;
    const char *abase = ax_array_data(a->arr), *bbase = ax_array_data(b->arr);
    char *cbase = ax_array_data(out);
    /* libxsmm's kernels for small products, except matrix-vector ones (n = 1 took 2.9 us
     * against OpenBLAS's 0.9 at 128x128) */
    bool small = (double)p->m * (double)p->n * (double)p->k <= AX_GEMM_SMALL && p->n >= 16;
    for (int64_t i = 0; i < p->batch; i++) {
        const char *ap = abase + batch_offset(a, p->out_shape, i) * es;
        const char *bp = bbase + batch_offset(b, p->out_shape, i) * es;
        char *cp = cbase + i * p->m * p->n * es;
        if (ax_ctx_interrupted(cx)) return false;
        if (is_gram(p, a, b, ap, bp)) {
            run_syrk(blas, out->dtype, a, n, k, ap, cp);
            continue;
        }
        if (small && ax_small_gemm(out->dtype, a->trans, b->trans, (int)p->m, n, k, ap, lda, bp,
                                   ldb, cp, ldc))
            continue;
        for (int64_t r = 0; r < p->m; r += panel) {
            if (ax_ctx_interrupted(cx)) return false;
            int m = (int)(p->m - r < panel ? p->m - r : panel);
            const char *ar = ap + r * a_row_step * es;
            char *cr = cp + r * ldc * es;
            if (out->dtype == AX_F32)
                blas->sgemm(AX_CBLAS_ROW_MAJOR, ta, tb, m, n, k, 1.0f, (const float *)ar, lda,
                            (const float *)bp, ldb, 0.0f, (float *)cr, ldc);
            else
                blas->dgemm(AX_CBLAS_ROW_MAJOR, ta, tb, m, n, k, 1.0, (const double *)ar, lda,
                            (const double *)bp, ldb, 0.0, (double *)cr, ldc);
        }
    }
    return true;
}

static bool dot_gemm(ax_ctx *cx, ax_array *l, ax_array *r, const dot_plan *p, ax_array *out) {
    if (p->m > INT_MAX || p->n > INT_MAX || p->k > INT_MAX) {
        char lt[96], rt[96];
        ax_array_type_format(lt, sizeof lt, l);
        ax_array_type_format(rt, sizeof rt, r);
        ax_error(cx, AX_ERR_VALUE, "dot_general of %s and %s: matrices too large for BLAS", lt, rt);
        return false;
    }
    ax_blas *blas = ax_blas_get(cx);
    if (!blas) return false;
    gemm_operand a, b;
    if (!prepare_operands(cx, l, r, p, &a, &b)) return false;
    /* A small product runs on this thread alone: OpenBLAS's second thread costs more to wake
     * than it saves, and once woken it spins for a while on a CPU that the loops around the
     * product (and other processes) need. */
    bool one_thread =
        (double)p->m * (double)p->n * (double)p->k <= AX_GEMM_SMALL && blas->get_num_threads() > 1;
    int threads = one_thread ? blas->get_num_threads() : 0;
    if (one_thread) blas->set_num_threads(1);
    bool done = run_gemm(cx, blas, p, &a, &b, out);
    if (one_thread) blas->set_num_threads(threads);
    operands_release(&a, &b);
    if (!done) ax_ctx_take_interrupt(cx);
    return done;
}

/* ---------------------------------------------------------------------------------------- */
/* Integer and bool products                                                                */

/* The operand's elements as int64, in the row-major order (batch, outer, inner). */
static int64_t *gather_i64(ax_ctx *cx, ax_array *x, const int *batch, int nb, const int *outer,
                           int no, const int *inner, int ni) {
    gemm_operand op;
    operand_init(&op, x, batch, nb, outer, no, inner, ni);
    bool ok = operand_relayout(cx, &op);
    int64_t *v = ok ? malloc((size_t)(op.arr->size ? op.arr->size : 1) * sizeof *v) : NULL;
    if (ok && !v) ax_error_oom(cx);
    if (v) {
        const char *src = ax_array_data(op.arr);
        size_t es = ax_dtype_size(x->dtype);
        for (int64_t i = 0; i < op.arr->size; i++)
            ax_convert_element(AX_I64, &v[i], x->dtype, src + i * (int64_t)es);
    }
    ax_array_release(op.arr);
    return v;
}

/* Sums wrap around as NumPy's and XLA's integer products do (unsigned arithmetic, so that
 * the wrap is defined); bool products are "any of the ands", i.e. a nonzero sum. False with
 * the error recorded (out of memory, Ctrl-C between rows). */
static bool int_matmul(ax_ctx *cx, const dot_plan *p, const int64_t *a, const int64_t *b,
                       ax_array *out) {
    uint64_t *row = malloc((size_t)(p->n ? p->n : 1) * sizeof *row);
    if (!row) return ax_error_oom(cx), false;
    size_t es = ax_dtype_size(out->dtype);
    char *dst = ax_array_data(out);
    for (int64_t bi = 0; bi < p->batch; bi++) {
        const int64_t *ab = a + bi * p->m * p->k, *bb = b + bi * p->k * p->n;
        for (int64_t i = 0; i < p->m; i++) {
            if (ax_ctx_take_interrupt(cx)) {
                free(row);
                return false;
            }
            memset(row, 0, (size_t)p->n * sizeof *row);
            for (int64_t kk = 0; kk < p->k; kk++) {
                uint64_t av = (uint64_t)ab[i * p->k + kk];
                const int64_t *brow = bb + kk * p->n;
                for (int64_t j = 0; j < p->n; j++) row[j] += av * (uint64_t)brow[j];
            }
            for (int64_t j = 0; j < p->n; j++, dst += es) {
                int64_t v = out->dtype == AX_BOOL ? row[j] != 0 : (int64_t)row[j];
                ax_convert_element(out->dtype, dst, AX_I64, &v);
            }
        }
    }
    free(row);
    return true;
}

static bool dot_loop(ax_ctx *cx, ax_array *l, ax_array *r, const dot_plan *p, ax_array *out) {
    int64_t *a =
        gather_i64(cx, l, p->lbatch, p->nbatch, p->lfree, p->nlfree, p->lcontract, p->ncontract);
    int64_t *b =
        a ? gather_i64(cx, r, p->rbatch, p->nbatch, p->rcontract, p->ncontract, p->rfree, p->nrfree)
          : NULL;
    bool ok = a && b && int_matmul(cx, p, a, b, out);
    free(a);
    free(b);
    return ok;
}

ax_array *ax_dot_general(ax_ctx *cx, ax_array *lhs, ax_array *rhs, const ax_dot_dims *dims) {
    dot_plan p;
    if (!plan_dot(cx, lhs, rhs, dims, &p)) return NULL;
    ax_array *out = ax_array_new(cx, lhs->dtype, p.out_ndim, p.out_shape);
    if (!out) return NULL;
    out->weak = lhs->weak && rhs->weak;
    if (out->size == 0) return out;
    if (p.k == 0) {
        memset(ax_array_data(out), 0, (size_t)out->size * ax_dtype_size(out->dtype));
        return out;
    }
    bool ok = ax_dtype_is_float(lhs->dtype) ? dot_gemm(cx, lhs, rhs, &p, out)
                                            : dot_loop(cx, lhs, rhs, &p, out);
    if (!ok) {
        ax_array_release(out);
        return NULL;
    }
    return out;
}

/* ---------------------------------------------------------------------------------------- */
/* Cholesky                                                                                 */

/* LAPACK is column-major: our row-major matrix is its transpose there, so asking for the
 * upper factor U (A^T = U^T U) of that transpose leaves L = U^T in our lower triangle,
 * computed from A's lower triangle. */
static void cholesky_one(const ax_blas *blas, ax_dtype dtype, void *mat, int n) {
    int info = 0;
    if (dtype == AX_F32)
        blas->spotrf("U", &n, mat, &n, &info);
    else
        blas->dpotrf("U", &n, mat, &n, &info);
    for (int i = 0; i < n; i++) {
        for (int j = 0; j < n; j++) {
            bool zero = j > i;
            if (!zero && info == 0) continue;
            double v = info != 0 ? NAN : 0.0;
            if (dtype == AX_F32)
                ((float *)mat)[(int64_t)i * n + j] = (float)v;
            else
                ((double *)mat)[(int64_t)i * n + j] = v;
        }
    }
}

ax_array *ax_cholesky(ax_ctx *cx, ax_array *a) {
    char t[96];
    ax_array_type_format(t, sizeof t, a);
    if (!ax_dtype_is_float(a->dtype))
        return ax_error(cx, AX_ERR_TYPE, "cholesky requires a floating-point array, got %s", t);
    if (a->ndim < 2 || a->shape[a->ndim - 1] != a->shape[a->ndim - 2])
        return ax_error(cx, AX_ERR_SHAPE, "cholesky requires square matrices (..., n, n), got %s",
                        t);
    if (!a->buf) return ax_error(cx, AX_ERR_RUNTIME, "cholesky needs a concrete array, got %s", t);
    int64_t n = a->shape[a->ndim - 1];
    if (n > INT_MAX)
        return ax_error(cx, AX_ERR_VALUE, "cholesky of %s: matrix too large for LAPACK", t);
    ax_array *out = ax_array_copy(cx, a);
    if (!out || out->size == 0) return out;
    ax_blas *blas = ax_blas_get(cx);
    if (!blas) {
        ax_array_release(out);
        return NULL;
    }
    size_t es = ax_dtype_size(a->dtype);
    char *data = ax_array_data(out);
    for (int64_t m = 0; m < out->size / (n * n); m++)
        cholesky_one(blas, a->dtype, data + m * n * n * (int64_t)es, (int)n);
    return out;
}

/* ---------------------------------------------------------------------------------------- */
/* Triangular solve                                                                         */

/* The operands' checks, in the terms of lax.linalg.triangular_solve. */
static bool triangular_solve_valid(ax_ctx *cx, const ax_array *a, const ax_array *b, bool right) {
    char ta[96], tb[96];
    ax_array_type_format(ta, sizeof ta, a);
    ax_array_type_format(tb, sizeof tb, b);
    if (!ax_dtype_is_float(a->dtype) || a->dtype != b->dtype) {
        ax_error(cx, AX_ERR_TYPE,
                 "triangular_solve requires f32 or f64 operands of one dtype, got %s and %s", ta,
                 tb);
        return false;
    }
    int nd = a->ndim;
    bool ok = nd >= 2 && a->shape[nd - 1] == a->shape[nd - 2] && b->ndim == nd &&
              b->shape[right ? nd - 1 : nd - 2] == a->shape[nd - 1];
    for (int d = 0; ok && d < nd - 2; d++) ok = a->shape[d] == b->shape[d];
    if (!ok) {
        ax_error(cx, AX_ERR_SHAPE,
                 "triangular_solve requires a (..., n, n) and b %s with the same leading "
                 "dimensions, got %s and %s",
                 right ? "(..., k, n)" : "(..., n, k)", ta, tb);
        return false;
    }
    if (!a->buf || !b->buf) {
        ax_error(cx, AX_ERR_RUNTIME, "triangular_solve needs concrete arrays, got %s and %s", ta,
                 tb);
        return false;
    }
    if (b->shape[nd - 2] > INT_MAX || b->shape[nd - 1] > INT_MAX) {
        ax_error(cx, AX_ERR_VALUE, "triangular_solve of %s: matrices too large for BLAS", tb);
        return false;
    }
    return true;
}

/* Each matrix of b (a contiguous copy, overwritten) becomes its solution: trsm's B = X. */
static void trsm_each(const ax_blas *blas, ax_dtype dtype, const char *am, char *xm, int64_t nmat,
                      int64_t rows, int64_t cols, int flags) {
    bool right = flags & AX_TRSOLVE_RIGHT_SIDE;
    int side = right ? AX_CBLAS_RIGHT : AX_CBLAS_LEFT;
    int uplo = flags & AX_TRSOLVE_LOWER ? AX_CBLAS_LOWER : AX_CBLAS_UPPER;
    int trans = flags & AX_TRSOLVE_TRANSPOSE_A ? AX_CBLAS_TRANS : AX_CBLAS_NO_TRANS;
    int diag = flags & AX_TRSOLVE_UNIT_DIAGONAL ? AX_CBLAS_UNIT : AX_CBLAS_NON_UNIT;
    int64_t n = right ? cols : rows, es = (int64_t)ax_dtype_size(dtype);
    for (int64_t m = 0; m < nmat; m++) {
        const void *a = am + m * n * n * es;
        void *x = xm + m * rows * cols * es;
        if (dtype == AX_F32)
            blas->strsm(AX_CBLAS_ROW_MAJOR, side, uplo, trans, diag, (int)rows, (int)cols, 1.0f, a,
                        (int)n, x, (int)cols);
        else
            blas->dtrsm(AX_CBLAS_ROW_MAJOR, side, uplo, trans, diag, (int)rows, (int)cols, 1.0, a,
                        (int)n, x, (int)cols);
    }
}

ax_array *ax_triangular_solve(ax_ctx *cx, ax_array *a, ax_array *b, int flags) {
    if (!triangular_solve_valid(cx, a, b, flags & AX_TRSOLVE_RIGHT_SIDE)) return NULL;
    ax_array *out = ax_array_copy(cx, b);
    if (!out || out->size == 0) return out;
    ax_array *ac = ax_array_contiguous(cx, a);
    ax_blas *blas = ac ? ax_blas_get(cx) : NULL;
    if (!blas) {
        ax_array_release(ac);
        ax_array_release(out);
        return NULL;
    }
    int64_t rows = b->shape[b->ndim - 2], cols = b->shape[b->ndim - 1];
    trsm_each(blas, a->dtype, ax_array_data(ac), ax_array_data(out), out->size / (rows * cols),
              rows, cols, flags);
    ax_array_release(ac);
    return out;
}

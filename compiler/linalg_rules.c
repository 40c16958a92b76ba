/* Linear algebra: dot_general, cholesky, triangular_solve and the factorisations lu, eigh,
 * svd and qr: their rows and every rule about them (see linalg_rules.h).
 *
 * The JVP rules follow JAX's (jax/_src/lax/linalg.py), written for leading batch dimensions:
 * - lu: De Hoog, Anderssen & Lukas: with P A = L U, inv(L) P dA inv(U) = inv(L) dL + dU inv(U),
 *   so dL = L tril(X, -1) and dU = triu(X) U for X = inv(L) P dA inv(U);
 * - eigh: first-order perturbation theory (Giles 2008): dw = diag(V^T dA V),
 *   dV = V (F o V^T dA V) with F_ij = 1 / (w_j - w_i) off the diagonal (infinite for repeated
 *   eigenvalues, as in JAX);
 * - svd: the same for the singular vectors, plus the parts outside U's or V's span when the
 *   matrix is not square (the full-matrices factors of a non-square matrix have no JVP, as in
 *   JAX);
 * - qr: Townsend's thin-QR derivative, JAX's extension to wide matrices, and for the full
 *   matrices of a tall one the completion of arXiv:2409.13374.
 * eigh and cholesky read one triangle of their operand: their tangent is read the same way, so
 * that each JVP is the derivative of what the kernel computes. */
#include "linalg_rules.h"

#include <stdio.h>
#include <string.h>

#include "../runtime/lapack.h"
#include "prim_rows.h"

/* ---------------------------------------------------------------- shape rules */

/* Checks a float (..., m, n) operand (square when asked): 0, or -1 and the error. */
static int matrix_operand(ax_ctx *cx, const char *name, const ax_aval *a, bool square) {
    char t[160];
    ax_type_format(t, sizeof t, a->dtype, a->ndim, a->shape);
    if (!ax_dtype_is_float(a->dtype)) {
        ax_error(cx, AX_ERR_TYPE, "%s requires a floating-point argument, got %s", name, t);
        return -1;
    }
    int nd = a->ndim;
    if (nd < 2 || (square && a->shape[nd - 1] != a->shape[nd - 2])) {
        ax_error(cx, AX_ERR_SHAPE, "%s requires %s, got %s", name,
                 square ? "square matrices (..., n, n)" : "matrices (..., m, n)", t);
        return -1;
    }
    return 0;
}

/* out = a's leading dims, then d0 (and d1 when ndim is 2), of `dtype`, strongly typed. */
static void result(ax_aval *out, const ax_aval *a, ax_dtype dtype, int ndim, int64_t d0,
                   int64_t d1) {
    out->dtype = dtype;
    out->weak = false;
    out->ndim = a->ndim - 2 + ndim;
    memcpy(out->shape, a->shape, (size_t)(a->ndim - 2) * sizeof *out->shape);
    out->shape[a->ndim - 2] = d0;
    if (ndim == 2) out->shape[a->ndim - 1] = d1;
}

static int64_t rows_of(const ax_aval *a) {
    return a->shape[a->ndim - 2];
}
static int64_t cols_of(const ax_aval *a) {
    return a->shape[a->ndim - 1];
}
static int64_t min64(int64_t a, int64_t b) {
    return a < b ? a : b;
}

static int lu_shape(ax_ctx *cx, int nin, const ax_aval *in, const ax_params *p, ax_aval *out) {
    (void)nin, (void)p;
    if (matrix_operand(cx, "lu", in, false)) return -1;
    int64_t m = rows_of(in), n = cols_of(in);
    result(&out[0], in, in->dtype, 2, m, n);
    result(&out[1], in, AX_I32, 1, min64(m, n), 0);
    result(&out[2], in, AX_I32, 1, m, 0);
    return 0;
}

static int eigh_shape(ax_ctx *cx, int nin, const ax_aval *in, const ax_params *p, ax_aval *out) {
    (void)nin, (void)p;
    if (matrix_operand(cx, "eigh", in, true)) return -1;
    int64_t n = rows_of(in);
    result(&out[0], in, in->dtype, 2, n, n);
    result(&out[1], in, in->dtype, 1, n, 0);
    return 0;
}

static int svd_shape(ax_ctx *cx, int nin, const ax_aval *in, const ax_params *p, ax_aval *out) {
    (void)nin;
    if (matrix_operand(cx, "svd", in, false)) return -1;
    int64_t m = rows_of(in), n = cols_of(in), k = min64(m, n);
    bool full = p->flag & AX_SVD_FULL_MATRICES;
    result(&out[0], in, in->dtype, 1, k, 0);
    if (p->flag & AX_SVD_COMPUTE_UV) {
        result(&out[1], in, in->dtype, 2, m, full ? m : k);
        result(&out[2], in, in->dtype, 2, full ? n : k, n);
    }
    return 0;
}

static int svd_nout(const ax_params *p) {
    return p->flag & AX_SVD_COMPUTE_UV ? 3 : 1;
}

static int qr_shape(ax_ctx *cx, int nin, const ax_aval *in, const ax_params *p, ax_aval *out) {
    (void)nin;
    if (matrix_operand(cx, "qr", in, false)) return -1;
    int64_t m = rows_of(in), n = cols_of(in), k = min64(m, n);
    bool full = p->flag & AX_QR_FULL_MATRICES;
    result(&out[0], in, in->dtype, 2, m, full ? m : k);
    result(&out[1], in, in->dtype, 2, full ? m : k, n);
    return 0;
}

/* ---------------------------------------------------------------- eager kernels */

AX_EAGER(dot_general) {
    (void)nin;
    return ax_eager_one(ax_dot_general(cx, in[0], in[1], &p->dot), out);
}

AX_EAGER(cholesky) {
    (void)nin, (void)p;
    return ax_eager_one(ax_cholesky(cx, in[0]), out);
}

AX_EAGER(triangular_solve) {
    (void)nin;
    return ax_eager_one(ax_triangular_solve(cx, in[0], in[1], p->flag), out);
}

static int lu_eager(ax_ctx *cx, int nin, ax_array **in, const ax_params *p, ax_array **out) {
    (void)nin, (void)p;
    return ax_lu(cx, in[0], out);
}

static int eigh_eager(ax_ctx *cx, int nin, ax_array **in, const ax_params *p, ax_array **out) {
    (void)nin;
    return ax_eigh(cx, in[0], p->flag & AX_EIGH_LOWER, out);
}

static int svd_eager(ax_ctx *cx, int nin, ax_array **in, const ax_params *p, ax_array **out) {
    (void)nin;
    return ax_svd(cx, in[0], p->flag & AX_SVD_FULL_MATRICES, p->flag & AX_SVD_COMPUTE_UV, out);
}

static int qr_eager(ax_ctx *cx, int nin, ax_array **in, const ax_params *p, ax_array **out) {
    (void)nin;
    return ax_qr(cx, in[0], p->flag & AX_QR_FULL_MATRICES, out);
}

/* ---------------------------------------------------------------- batched matrix algebra */
/* On arrays (..., r, c) whose leading dims agree; NULL in, NULL out (lax.h's convention). */

/* The outputs of a multi-output primitive, owned by the scope; -1 on failure. */
static int bind_n(ax_scope *s, ax_prim prim, ax_array *x, const ax_params *p, ax_array **out) {
    int n = ax_prim_nout(prim, p);
    if (!x || ax_bind(s->cx, prim, 1, &x, p, out)) return -1;
    for (int i = 0; i < n; i++) ax_scope_own(s, out[i]);
    return 0;
}

/* The formulas' shorthands: x^T and a @ b over the last two dims (lax.h). */
static ax_array *mT(ax_scope *s, ax_array *x) {
    return ax_lax_matrix_transpose(s, x);
}

static ax_array *mm(ax_scope *s, ax_array *a, ax_array *b) {
    return ax_lax_matmul(s, a, false, b, false);
}

/* A bool (rows, cols) matrix: true where lo <= col - row <= hi. */
static ax_array *band(ax_scope *s, int64_t rows, int64_t cols, int64_t lo, int64_t hi) {
    ax_params rp = {.dtype = AX_I32, .ndim = 2, .shape = {rows, cols}, .naxes = 1, .axes = {0}};
    ax_params cp = rp;
    cp.axes[0] = 1;
    ax_array *r = ax_lax_bind(s, AX_P_IOTA, 0, NULL, &rp);
    ax_array *diff = ax_lax_sub(s, ax_lax_bind(s, AX_P_IOTA, 0, NULL, &cp), r);
    ax_array *ge = ax_lax_binary(s, AX_P_GE, diff, ax_lax_scalar_like(s, diff, (double)lo));
    ax_array *le = ax_lax_binary(s, AX_P_LE, diff, ax_lax_scalar_like(s, diff, (double)hi));
    return ax_lax_binary(s, AX_P_AND, ge, le);
}

/* `mask` (rows, cols) broadcast over x's leading dims. */
static ax_array *spread(ax_scope *s, ax_array *mask, const ax_array *x) {
    if (!mask || !x) return NULL;
    return ax_lax_broadcast_in_dim(s, mask, x->ndim, x->shape, (int[]){x->ndim - 2, x->ndim - 1});
}

/* x where lo <= col - row <= hi, zero elsewhere: by select, so that infinities outside stay
 * out. tril(x, k) is keep_band(x, -rows, k), triu(x, k) keep_band(x, k, cols). */
static ax_array *keep_band(ax_scope *s, ax_array *x, int64_t lo, int64_t hi) {
    if (!x) return NULL;
    ax_array *m = spread(s, band(s, x->shape[x->ndim - 2], x->shape[x->ndim - 1], lo, hi), x);
    return ax_lax_select(s, m, x, ax_lax_zeros_like(s, x));
}

static ax_array *tril(ax_scope *s, ax_array *x, int64_t k) {
    return x ? keep_band(s, x, -x->shape[x->ndim - 2], k) : NULL;
}

static ax_array *triu(ax_scope *s, ax_array *x, int64_t k) {
    return x ? keep_band(s, x, k, x->shape[x->ndim - 1]) : NULL;
}

/* The identity (..., n, n) of `like`'s dtype and leading dims (like: any (..., *, *) array). */
static ax_array *eye(ax_scope *s, const ax_array *like, int64_t n) {
    if (!like) return NULL;
    int64_t shape[AX_MAX_RANK];
    memcpy(shape, like->shape, sizeof shape);
    shape[like->ndim - 2] = shape[like->ndim - 1] = n;
    ax_array *d = ax_lax_convert(s, band(s, n, n, 0, 0), like->dtype);
    return ax_lax_broadcast_in_dim(s, d, like->ndim, shape,
                                   (int[]){like->ndim - 2, like->ndim - 1});
}

/* The diagonal (..., n) of x (..., n, n). */
static ax_array *diag_of(ax_scope *s, ax_array *x) {
    if (!x) return NULL;
    int last = x->ndim - 1;
    return ax_lax_reduce(s, AX_P_REDUCE_SUM, keep_band(s, x, 0, 0), 1, &last);
}

/* v (..., k) spread over (..., r, k) ([i, j] = v_j, as_row) or (..., k, c) ([i, j] = v_i). */
static ax_array *spread_vector(ax_scope *s, ax_array *v, int64_t other, bool as_row) {
    if (!v) return NULL;
    int nd = v->ndim + 1, dims[AX_MAX_RANK];
    int64_t shape[AX_MAX_RANK];
    for (int d = 0; d < v->ndim - 1; d++) dims[d] = d, shape[d] = v->shape[d];
    int64_t k = v->shape[v->ndim - 1];
    shape[nd - 2] = as_row ? other : k;
    shape[nd - 1] = as_row ? k : other;
    dims[v->ndim - 1] = as_row ? nd - 1 : nd - 2;
    return ax_lax_broadcast_in_dim(s, v, nd, shape, dims);
}

/* x[..., r0:r1, c0:c1]. */
static ax_array *block(ax_scope *s, ax_array *x, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
    if (!x) return NULL;
    int nd = x->ndim;
    ax_params p = {.ndim = nd};
    for (int d = 0; d < nd; d++) p.lo[d] = 0, p.hi[d] = x->shape[d], p.step[d] = 1;
    p.lo[nd - 2] = r0, p.hi[nd - 2] = r1, p.lo[nd - 1] = c0, p.hi[nd - 1] = c1;
    return ax_lax_bind(s, AX_P_SLICE, 1, &x, &p);
}

/* x padded with zeros to `rows` x `cols` (below and to the right). */
static ax_array *pad_to(ax_scope *s, ax_array *x, int64_t rows, int64_t cols) {
    if (!x) return NULL;
    int nd = x->ndim;
    ax_params p = {.ndim = nd};
    p.hi[nd - 2] = rows - x->shape[nd - 2];
    p.hi[nd - 1] = cols - x->shape[nd - 1];
    return ax_lax_bind(s, AX_P_PAD, 2, (ax_array *[]){x, ax_lax_scalar_like(s, x, 0)}, &p);
}

/* a and b joined along the last (axis -1) or second-to-last (-2) dim. */
static ax_array *join(ax_scope *s, ax_array *a, ax_array *b, int axis) {
    if (!a || !b) return NULL;
    ax_params p = {.naxes = 1, .axes = {a->ndim + axis}};
    return ax_lax_bind(s, AX_P_CONCATENATE, 2, (ax_array *[]){a, b}, &p);
}

/* The permutation matrix P (..., m, m) of LU's `perm` (..., m): (P x)[i] = x[perm[i]]. */
static ax_array *permutation_matrix(ax_scope *s, ax_array *perm, ax_dtype dtype) {
    if (!perm) return NULL;
    int64_t m = perm->shape[perm->ndim - 1];
    ax_array *rows = spread_vector(s, perm, m, false);
    ax_params cp = {.dtype = AX_I32, .ndim = rows ? rows->ndim : 0, .naxes = 1};
    if (rows) memcpy(cp.shape, rows->shape, sizeof cp.shape), cp.axes[0] = rows->ndim - 1;
    ax_array *cols = rows ? ax_lax_bind(s, AX_P_IOTA, 0, NULL, &cp) : NULL;
    return ax_lax_convert(s, ax_lax_binary(s, AX_P_EQ, rows, cols), dtype);
}

/* Finishes a JVP rule: the primal outputs and their tangents (NULL = zero) become new
 * references; 0, or -1 when any expected one is missing. */
static int finish(ax_scope *s, int n, ax_array **vals, ax_array **tans, const bool *has_tangent,
                  ax_array **out, ax_array **tout) {
    bool ok = true;
    for (int i = 0; i < n; i++) {
        ok &= vals[i] && (!has_tangent[i] || tans[i]);
        out[i] = NULL, tout[i] = NULL;
    }
    for (int i = 0; ok && i < n; i++) {
        out[i] = ax_scope_keep(s, vals[i]);
        tout[i] = has_tangent[i] ? ax_scope_keep(s, tans[i]) : NULL;
    }
    ax_scope_end(s);
    return ok ? 0 : -1;
}

/* ---------------------------------------------------------------- JVP rules */

/* The LU tangent of a (..., m, n) along da, from its factors. */
static ax_array *lu_tangent(ax_scope *s, ax_array *lu, ax_array *perm, ax_array *da) {
    int nd = lu->ndim;
    int64_t m = lu->shape[nd - 2], n = lu->shape[nd - 1], k = min64(m, n);
    /* L (..., m, m) unit lower, U (..., n, n) upper with ones past the k-th diagonal entry */
    ax_array *l =
        ax_lax_add(s, pad_to(s, tril(s, block(s, lu, 0, m, 0, k), -1), m, m), eye(s, lu, m));
    ax_array *u = pad_to(s, triu(s, block(s, lu, 0, k, 0, n), 0), n, n);
    if (n > k) u = ax_lax_add(s, u, ax_lax_sub(s, eye(s, lu, n), pad_to(s, eye(s, lu, k), n, n)));
    ax_array *pda = mm(s, permutation_matrix(s, perm, lu->dtype), da);
    ax_array *la = ax_lax_triangular_solve(s, l, pda, AX_TRSOLVE_LOWER | AX_TRSOLVE_UNIT_DIAGONAL);
    ax_array *lau = ax_lax_triangular_solve(s, u, la, AX_TRSOLVE_RIGHT_SIDE);
    return ax_lax_add(s, mm(s, l, tril(s, lau, -1)), mm(s, triu(s, lau, 0), u));
}

static int lu_jvp(ax_ctx *cx, ax_prim prim, const ax_params *p, int nin, ax_array **in,
                  ax_array **tin, ax_array **out, ax_array **tout) {
    (void)nin;
    ax_scope s;
    ax_scope_begin(&s, cx);
    ax_array *f[3] = {0}, *t[3] = {0};
    if (bind_n(&s, prim, in[0], p, f) == 0) t[0] = lu_tangent(&s, f[0], f[2], tin[0]);
    return finish(&s, 3, f, t, (const bool[]){true, false, false}, out, tout);
}

/* The symmetric matrix a triangle stands for: tril(x) + tril(x, -1)^T (or the upper one). */
static ax_array *symmetric_from(ax_scope *s, ax_array *x, bool lower) {
    if (lower) return ax_lax_add(s, tril(s, x, 0), mT(s, tril(s, x, -1)));
    return ax_lax_add(s, triu(s, x, 0), mT(s, triu(s, x, 1)));
}

/* 1 / (w_j - w_i) off the diagonal, 0 on it: the reciprocal eigenvalue gaps. */
static ax_array *reciprocal_gaps(ax_scope *s, ax_array *w) {
    if (!w) return NULL;
    int64_t n = w->shape[w->ndim - 1];
    ax_array *wj = spread_vector(s, w, n, true), *wi = spread_vector(s, w, n, false);
    ax_array *i = eye(s, wj, n);
    return ax_lax_sub(s, ax_lax_integer_pow(s, ax_lax_add(s, i, ax_lax_sub(s, wj, wi)), -1), i);
}

static int eigh_jvp(ax_ctx *cx, ax_prim prim, const ax_params *p, int nin, ax_array **in,
                    ax_array **tin, ax_array **out, ax_array **tout) {
    (void)nin;
    ax_scope s;
    ax_scope_begin(&s, cx);
    ax_array *f[2] = {0}, *t[2] = {0};
    if (bind_n(&s, prim, in[0], p, f) == 0) {
        ax_array *v = f[0], *da = symmetric_from(&s, tin[0], p->flag & AX_EIGH_LOWER);
        ax_array *vdv = mm(&s, mm(&s, mT(&s, v), da), v);
        t[0] = mm(&s, v, ax_lax_mul(&s, reciprocal_gaps(&s, f[1]), vdv));
        t[1] = diag_of(&s, vdv);
    }
    return finish(&s, 2, f, t, (const bool[]){true, true}, out, tout);
}

/* The tangents (ds, du, dvt) of the reduced SVD a = u diag(sv) vt along da. */
static void svd_tangents(ax_scope *s, ax_array *a, ax_array *sv, ax_array *u, ax_array *vt,
                         ax_array *da, bool compute_uv, ax_array **t) {
    int nd = a->ndim;
    int64_t m = a->shape[nd - 2], n = a->shape[nd - 1], k = min64(m, n);
    ax_array *v = mT(s, vt), *ut = mT(s, u);
    ax_array *ds_mat = mm(s, mm(s, ut, da), v); /* U^T dA V, (..., k, k) */
    t[0] = diag_of(s, ds_mat);
    if (!compute_uv) return;
    ax_array *sj = spread_vector(s, sv, k, true), *si = spread_vector(s, sv, k, false);
    ax_array *i = eye(s, sj, k);
    ax_array *gaps = ax_lax_mul(s, ax_lax_add(s, sj, si), ax_lax_sub(s, sj, si));
    ax_array *f = ax_lax_sub(s, ax_lax_integer_pow(s, ax_lax_add(s, gaps, i), -1), i);
    ax_array *dss = ax_lax_mul(s, sj, ds_mat), *sds = ax_lax_mul(s, si, ds_mat);
    ax_array *du = mm(s, u, ax_lax_mul(s, f, ax_lax_add(s, dss, mT(s, dss))));
    ax_array *dv = mm(s, v, ax_lax_mul(s, f, ax_lax_add(s, sds, mT(s, sds))));
    if (m > n) { /* the part of dA V outside u's columns */
        ax_array *dav = mm(s, da, v);
        ax_array *rest = ax_lax_sub(s, dav, mm(s, u, mm(s, ut, dav)));
        du = ax_lax_add(s, du, ax_lax_div(s, rest, spread_vector(s, sv, m, true)));
    }
    if (n > m) { /* the part of dA^T U outside v's columns */
        ax_array *dau = mm(s, mT(s, da), u);
        ax_array *rest = ax_lax_sub(s, dau, mm(s, v, mm(s, vt, dau)));
        dv = ax_lax_add(s, dv, ax_lax_div(s, rest, spread_vector(s, sv, n, true)));
    }
    t[1] = du;
    t[2] = mT(s, dv);
}

static int svd_jvp(ax_ctx *cx, ax_prim prim, const ax_params *p, int nin, ax_array **in,
                   ax_array **tin, ax_array **out, ax_array **tout) {
    (void)nin;
    bool uv = p->flag & AX_SVD_COMPUTE_UV;
    const ax_array *a = in[0];
    if (uv && (p->flag & AX_SVD_FULL_MATRICES) && a->shape[a->ndim - 1] != a->shape[a->ndim - 2]) {
        char t[160];
        ax_array_type_format(t, sizeof t, a);
        ax_error(cx, AX_ERR_VALUE,
                 "svd of %s: the derivative of the full_matrices=True factors of a non-square "
                 "matrix is not implemented (as in JAX); use full_matrices=False",
                 t);
        return -1;
    }
    ax_scope s;
    ax_scope_begin(&s, cx);
    ax_array *f[3] = {0}, *t[3] = {0};
    ax_params reduced = {.flag = AX_SVD_COMPUTE_UV};
    if (bind_n(&s, prim, in[0], &reduced, f) == 0)
        svd_tangents(&s, in[0], f[0], f[1], f[2], tin[0], uv, t);
    int n = uv ? 3 : 1;
    return finish(&s, n, f, t, (const bool[]){true, true, true}, out, tout);
}

/* Townsend's derivative of the thin QR q r of an (..., m, n) matrix, m >= n, along dx. */
static void thin_qr_tangents(ax_scope *s, ax_array *q, ax_array *r, ax_array *dx, ax_array **dq,
                             ax_array **dr) {
    ax_array *dx_rinv = ax_lax_triangular_solve(s, r, dx, AX_TRSOLVE_RIGHT_SIDE); /* dx r^-1 */
    ax_array *qt_dx_rinv = mm(s, mT(s, q), dx_rinv);
    ax_array *low = tril(s, qt_dx_rinv, -1);
    ax_array *skew = ax_lax_sub(s, low, mT(s, low));
    *dq = ax_lax_add(s, mm(s, q, ax_lax_sub(s, skew, qt_dx_rinv)), dx_rinv);
    *dr = mm(s, ax_lax_sub(s, qt_dx_rinv, skew), r);
}

/* x with a^T x = b for a general square a (..., n, n), through the LU factors of a^T. */
static ax_array *solve_transposed(ax_scope *s, ax_array *a, ax_array *b) {
    ax_array *f[3] = {0};
    if (bind_n(s, AX_P_LU, mT(s, a), &(ax_params){0}, f)) return NULL;
    ax_array *pb = mm(s, permutation_matrix(s, f[2], b->dtype), b);
    ax_array *y = ax_lax_triangular_solve(s, f[0], pb, AX_TRSOLVE_LOWER | AX_TRSOLVE_UNIT_DIAGONAL);
    return ax_lax_triangular_solve(s, f[0], y, 0);
}

/* The extra columns of a full q (..., m, m) of a tall matrix (m > n), from the thin part's
 * tangent dq_mn: arXiv:2409.13374, eqs. 32-33. */
static ax_array *full_q_tail(ax_scope *s, ax_array *q, ax_array *dq_mn, int64_t n) {
    int nd = q->ndim;
    int64_t m = q->shape[nd - 1];
    ax_array *q_mn = block(s, q, 0, m, 0, n), *q_mp = block(s, q, 0, m, n, m);
    ax_array *q_nn = block(s, q_mn, 0, n, 0, n), *q_pn = block(s, q_mn, n, m, 0, n);
    ax_array *dq_nn = block(s, dq_mn, 0, n, 0, n), *dq_pn = block(s, dq_mn, n, m, 0, n);
    /* Z_pn = Q_pn (Q_nn - I)^-1, from (Q_nn - I)^T Z_pn^T = Q_pn^T */
    ax_array *z_t = solve_transposed(s, ax_lax_sub(s, q_nn, eye(s, q_nn, n)), mT(s, q_pn));
    ax_array *z = mT(s, z_t);
    ax_array *lhs = ax_lax_add(s, q_mn, mm(s, q_mp, z));
    ax_array *rhs = mT(s, ax_lax_sub(s, dq_pn, mm(s, z, dq_nn)));
    return ax_lax_sub(s, mm(s, dq_mn, z_t), mm(s, lhs, rhs));
}

static void qr_tangents(ax_scope *s, ax_array *x, ax_array *q, ax_array *r, ax_array *dx, bool full,
                        ax_array **t) {
    int nd = x->ndim;
    int64_t m = x->shape[nd - 2], n = x->shape[nd - 1];
    if (m < n) { /* wide: x = [x1 x2], q r1 = x1 square, r2 = q^T x2 */
        ax_array *dq, *dr1;
        thin_qr_tangents(s, q, block(s, r, 0, m, 0, m), block(s, dx, 0, m, 0, m), &dq, &dr1);
        ax_array *dr2 = ax_lax_add(s, mm(s, mT(s, dq), block(s, x, 0, m, m, n)),
                                   mm(s, mT(s, q), block(s, dx, 0, m, m, n)));
        t[0] = dq;
        t[1] = join(s, dr1, dr2, -1);
        return;
    }
    ax_array *q_mn = full ? block(s, q, 0, m, 0, n) : q;
    ax_array *r_nn = full ? block(s, r, 0, n, 0, n) : r;
    ax_array *dq_mn, *dr_nn;
    thin_qr_tangents(s, q_mn, r_nn, dx, &dq_mn, &dr_nn);
    if (!full || m == n) {
        t[0] = dq_mn;
        t[1] = dr_nn;
        return;
    }
    t[0] = join(s, dq_mn, full_q_tail(s, q, dq_mn, n), -1);
    t[1] = pad_to(s, dr_nn, m, n);
}

static int qr_jvp(ax_ctx *cx, ax_prim prim, const ax_params *p, int nin, ax_array **in,
                  ax_array **tin, ax_array **out, ax_array **tout) {
    (void)nin;
    ax_scope s;
    ax_scope_begin(&s, cx);
    ax_array *f[2] = {0}, *t[2] = {0};
    if (bind_n(&s, prim, in[0], p, f) == 0)
        qr_tangents(&s, in[0], f[0], f[1], tin[0], p->flag & AX_QR_FULL_MATRICES, t);
    return finish(&s, 2, f, t, (const bool[]){true, true}, out, tout);
}

/* ---------------------------------------------------------------- batching */

/* Each factorisation treats leading dims as a batch: the vmapped dim moves to the front and
 * every output keeps it there. */
static int batch_leading(ax_ctx *cx, ax_prim prim, const ax_params *p, int nin, ax_array **in,
                         const int *bdim, int64_t size, ax_array **out, int *out_bdim) {
    (void)nin, (void)size;
    ax_array *x = ax_moveaxis(cx, in[0], bdim[0], 0);
    if (!x) return -1;
    int rc = ax_bind(cx, prim, 1, &x, p, out);
    ax_array_release(x);
    for (int i = 0, n = ax_prim_nout(prim, p); i < n; i++) out_bdim[i] = 0;
    return rc;
}

/* ---------------------------------------------------------------- printing and the rows */

/* An example: a float (..., m, n) operand and the flags. */
#define MATRIX(flags, ...)                                                                         \
    {                                                                                              \
        .nin = 1, .in = {AX_FLOATS(-2, 2, __VA_ARGS__)}, .p = {.flag = (flags) }                   \
    }

#define TF(bit) ((p->flag & (bit)) ? "True" : "False")
static void eigh_format(ax_strbuf *s, const ax_params *p) {
    ax_strbuf_appendf(s, "[lower=%s sort_eigenvalues=True]", TF(AX_EIGH_LOWER));
}

static void svd_format(ax_strbuf *s, const ax_params *p) {
    ax_strbuf_appendf(s, "[compute_uv=%s full_matrices=%s]", TF(AX_SVD_COMPUTE_UV),
                      TF(AX_SVD_FULL_MATRICES));
}

static void qr_format(ax_strbuf *s, const ax_params *p) {
    ax_strbuf_appendf(s, "[full_matrices=%s pivoting=False]", TF(AX_QR_FULL_MATRICES));
}
#undef TF

const ax_prim_info ax_lu_info = {.name = "lu",
                                 .nin = 1,
                                 .nout = 3,
                                 .shape = lu_shape,
                                 .eager = lu_eager,
                                 .jvp = lu_jvp,
                                 .batch = batch_leading,
                                 .lower = AX_LOWER_EAGER,
                                 AX_EXAMPLES(MATRIX(0, 3, 3), MATRIX(0, 2, 4, 3), MATRIX(0, 2, 4))};
const ax_prim_info ax_eigh_info = {.name = "eigh",
                                   .nin = 1,
                                   .nout = 2,
                                   .shape = eigh_shape,
                                   .eager = eigh_eager,
                                   .jvp = eigh_jvp,
                                   .batch = batch_leading,
                                   .format_params = eigh_format,
                                   .lower = AX_LOWER_EAGER,
                                   AX_EXAMPLES(MATRIX(AX_EIGH_LOWER, 3, 3), MATRIX(0, 2, 3, 3))};
const ax_prim_info ax_svd_info = {
    .name = "svd",
    .nin = 1,
    .nout = -1,
    .shape = svd_shape,
    .eager = svd_eager,
    .jvp = svd_jvp,
    .batch = batch_leading,
    .nout_of = svd_nout,
    .format_params = svd_format,
    .lower = AX_LOWER_EAGER,
    AX_EXAMPLES(MATRIX(AX_SVD_COMPUTE_UV, 4, 3), MATRIX(AX_SVD_COMPUTE_UV, 2, 3),
                MATRIX(AX_SVD_COMPUTE_UV | AX_SVD_FULL_MATRICES, 2, 3, 3), MATRIX(0, 3, 4))};
const ax_prim_info ax_qr_info = {.name = "qr",
                                 .nin = 1,
                                 .nout = 2,
                                 .shape = qr_shape,
                                 .eager = qr_eager,
                                 .jvp = qr_jvp,
                                 .batch = batch_leading,
                                 .format_params = qr_format,
                                 .lower = AX_LOWER_EAGER,
                                 AX_EXAMPLES(MATRIX(0, 4, 3), MATRIX(AX_QR_FULL_MATRICES, 4, 2),
                                             MATRIX(0, 2, 4), MATRIX(AX_QR_FULL_MATRICES, 2, 2, 3),
                                             MATRIX(AX_QR_FULL_MATRICES, 2, 3, 3))};

/* ---------------------------------------------------------------- dot_general */

static void shift_by_one(int *axes, int n) {
    for (int i = 0; i < n; i++) axes[i]++;
}

/* The product rule: da b + a db. */
static ax_array *dot_general_tangent(ax_scope *s, const ax_params *p, ax_array **in, ax_array **tin,
                                     ax_array *out) {
    (void)out;
    ax_array *a = tin[0] ? ax_lax_dot_general(s, tin[0], in[1], &p->dot) : NULL;
    ax_array *b = tin[1] ? ax_lax_dot_general(s, in[0], tin[1], &p->dot) : NULL;
    return a && b ? ax_lax_add(s, a, b) : a ? a : b;
}

/* dot_general's transpose for one operand: contract the cotangent with the other operand over
 * the other operand's free dimensions, then put the result's dimensions in the operand's
 * order. `lhs_side` says which operand is wanted. */
static ax_array *dot_transpose(ax_scope *s, const ax_dot_dims *d, bool lhs_side, ax_array *ct,
                               ax_array *other, const ax_aval *want) {
    const int *mine_c = lhs_side ? d->lhs_contract : d->rhs_contract;
    const int *mine_b = lhs_side ? d->lhs_batch : d->rhs_batch;
    const int *oth_c = lhs_side ? d->rhs_contract : d->lhs_contract;
    const int *oth_b = lhs_side ? d->rhs_batch : d->lhs_batch;
    int nb = d->nbatch, nc = d->ncontract;
    int mine_free[AX_MAX_RANK], oth_free[AX_MAX_RANK], nmf = 0, nof = 0;
    bool used[AX_MAX_RANK] = {0};
    for (int i = 0; i < nc; i++) used[mine_c[i]] = true;
    for (int i = 0; i < nb; i++) used[mine_b[i]] = true;
    for (int i = 0; i < want->ndim; i++)
        if (!used[i]) mine_free[nmf++] = i;
    memset(used, 0, sizeof used);
    for (int i = 0; i < nc; i++) used[oth_c[i]] = true;
    for (int i = 0; i < nb; i++) used[oth_b[i]] = true;
    for (int i = 0; i < other->ndim; i++)
        if (!used[i]) oth_free[nof++] = i;
    /* ct dims: batch, lhs free, rhs free. */
    int ct_mine_free0 = lhs_side ? nb : nb + nof, ct_oth_free0 = lhs_side ? nb + nmf : nb;
    ax_dot_dims nd = {.ncontract = nof, .nbatch = nb};
    for (int j = 0; j < nof; j++)
        nd.lhs_contract[j] = ct_oth_free0 + j, nd.rhs_contract[j] = oth_free[j];
    for (int i = 0; i < nb; i++) nd.lhs_batch[i] = i, nd.rhs_batch[i] = oth_b[i];
    ax_array *r = ax_lax_dot_general(s, ct, other, &nd);
    (void)ct_mine_free0;
    /* r dims: batch, my free dims, then the other's contracting dims in increasing order. */
    int perm[AX_MAX_RANK], k = nb + nmf;
    for (int i = 0; i < nb; i++) perm[mine_b[i]] = i;
    for (int j = 0; j < nmf; j++) perm[mine_free[j]] = nb + j;
    for (int od = 0; od < other->ndim; od++)
        for (int m = 0; m < nc; m++)
            if (oth_c[m] == od) perm[mine_c[m]] = k++;
    /* perm maps my dim -> r dim; transpose wants, for each output dim, the r dim. */
    return ax_lax_transpose(s, r, perm);
}

/* Bilinear: transposes in either operand. */
static int dot_general_cotangent(ax_scope *s, const ax_params *p, int nin, ax_array **in,
                                 const bool *lin, const ax_aval *ty, ax_array *ct, ax_array **r) {
    (void)nin;
    if (lin[0]) r[0] = dot_transpose(s, &p->dot, true, ct, in[1], &ty[0]);
    if (lin[1]) r[1] = dot_transpose(s, &p->dot, false, ct, in[0], &ty[1]);
    return 0;
}

static int dot_general_batch(ax_ctx *cx, ax_prim prim, const ax_params *p, int nin, ax_array **in,
                             const int *bdim, int64_t size, ax_array **out, int *out_bdim) {
    (void)prim, (void)nin;
    ax_scope s;
    ax_scope_begin(&s, cx);
    ax_dot_dims d = p->dot;
    ax_array *a = in[0], *b = in[1];
    /* Every dimension number shifts by one for an operand whose batch dimension goes first. */
    if (bdim[0] >= 0) {
        a = ax_batch_first(&s, a, bdim[0], size);
        shift_by_one(d.lhs_contract, d.ncontract), shift_by_one(d.lhs_batch, d.nbatch);
    }
    if (bdim[1] >= 0) {
        b = ax_batch_first(&s, b, bdim[1], size);
        shift_by_one(d.rhs_contract, d.ncontract), shift_by_one(d.rhs_batch, d.nbatch);
    }
    int where = 0;
    if (bdim[0] >= 0 && bdim[1] >= 0) {
        /* Both batched: one more batch dimension, first in the output. */
        memmove(d.lhs_batch + 1, d.lhs_batch, (size_t)d.nbatch * sizeof *d.lhs_batch);
        memmove(d.rhs_batch + 1, d.rhs_batch, (size_t)d.nbatch * sizeof *d.rhs_batch);
        d.lhs_batch[0] = d.rhs_batch[0] = 0;
        d.nbatch++;
        where = 0;
    } else if (bdim[0] >= 0) {
        where = d.nbatch; /* the first free dimension of the lhs */
    } else {
        /* the first free dimension of the rhs, after the batch and lhs free dimensions */
        where = a->ndim - d.ncontract;
    }
    ax_array *r = ax_lax_dot_general(&s, a, b, &d);
    out[0] = r ? ax_scope_keep(&s, r) : NULL;
    out_bdim[0] = where;
    ax_scope_end(&s);
    return out[0] ? 0 : -1;
}

/* Renumbers an operand's batch and contracting dims through a transpose's permutation (its
 * dim d is dim perm[d] of the transpose's operand): false when the permutation would reorder
 * the operand's free dims, whose order is the result's. */
static bool renumber_through(const int *perm, int ndim, int nb, int *batch, int nc, int *contract) {
    bool named[AX_MAX_RANK] = {false};
    for (int i = 0; i < nb; i++) named[batch[i]] = true;
    for (int i = 0; i < nc; i++) named[contract[i]] = true;
    for (int d = 0, last = -1; d < ndim; d++) {
        if (named[d]) continue;
        if (perm[d] < last) return false;
        last = perm[d];
    }
    for (int i = 0; i < nb; i++) batch[i] = perm[batch[i]];
    for (int i = 0; i < nc; i++) contract[i] = perm[contract[i]];
    return true;
}

/* simplify: dot_general of a transpose reads the transpose's operand with renumbered dims, as
 * it does eagerly, where a transpose is a view: jit makes the same BLAS call as eager (gemm's
 * Trans flag instead of a copy), and x @ x.T becomes a product of x with itself, which the
 * kernel runs as syrk (runtime/linalg.c). */
static void dot_general_fold(const ax_simplify_view *v, ax_params *p, ax_ir_atom *in) {
    for (int side = 0; side < 2; side++) {
        const ax_ir_eqn *t = ax_simplify_producer(v, &in[side]);
        if (!t || t->prim != AX_P_TRANSPOSE) continue;
        ax_dot_dims d = p->dot;
        bool ok = side == 0 ? renumber_through(t->params.axes, t->params.naxes, d.nbatch,
                                               d.lhs_batch, d.ncontract, d.lhs_contract)
                            : renumber_through(t->params.axes, t->params.naxes, d.nbatch,
                                               d.rhs_batch, d.ncontract, d.rhs_contract);
        if (!ok) continue;
        p->dot = d;
        in[side] = t->in[0];
    }
}

static void dot_general_format(ax_strbuf *s, const ax_params *p) {
    const ax_dot_dims *d = &p->dot;
    ax_strbuf_append(s, "[dimension_numbers=((");
    ax_ir_format_ints(s, d->ncontract, d->lhs_contract);
    ax_strbuf_append(s, ", ");
    ax_ir_format_ints(s, d->ncontract, d->rhs_contract);
    ax_strbuf_append(s, "), (");
    ax_ir_format_ints(s, d->nbatch, d->lhs_batch);
    ax_strbuf_append(s, ", ");
    ax_ir_format_ints(s, d->nbatch, d->rhs_batch);
    ax_strbuf_append(s, "))]");
}

/* Matrix products run on their eager kernel, so that jit makes the OpenBLAS calls eager makes
 * (their bits depend on the operands' layout). */
const ax_prim_info ax_dot_general_info = {
    .name = "dot_general",
    .nin = 2,
    .nout = 1,
    .flags = LIN,
    .shape = ax_shape_dot_general,
    .eager = eager_dot_general,
    .jvp = ax_jvp_tangent,
    .tangent = dot_general_tangent,
    .transpose = ax_transpose_linear,
    .cotangent = dot_general_cotangent,
    .batch = dot_general_batch,
    .format_params = dot_general_format,
    .fold = dot_general_fold,
    .lower = AX_LOWER_EAGER,
    AX_EXAMPLES({.nin = 2,
                 .in = {AX_FLOATS(-2, 2, 2, 3), AX_FLOATS(-2, 2, 3, 2)},
                 .p = {.dot = {.ncontract = 1, .lhs_contract = {1}, .rhs_contract = {0}}}},
                {.nin = 2,
                 .in = {AX_FLOATS(-2, 2, 2, 3), AX_FLOATS(-2, 2, 3)},
                 .p = {.dot = {.ncontract = 1, .lhs_contract = {1}, .rhs_contract = {0}}}},
                {.nin = 2,
                 .in = {AX_FLOATS(-2, 2, 2, 2, 3), AX_FLOATS(-2, 2, 2, 3, 2)},
                 .p = {.dot = {.ncontract = 1,
                               .lhs_contract = {2},
                               .rhs_contract = {1},
                               .nbatch = 1,
                               .lhs_batch = {0},
                               .rhs_batch = {0}}}}),
};

/* ---------------------------------------------------------------- cholesky and triangular_solve */

/* Where an element of the last two dims of x lies against the diagonal (iota rows `cmp`
 * iota cols), broadcast to x's shape. */
static ax_array *diagonal_side(ax_scope *s, const ax_array *x, ax_prim cmp) {
    int nd = x->ndim;
    int64_t n = x->shape[nd - 1];
    ax_params rows = {.dtype = AX_I32, .ndim = 2, .shape = {n, n}, .naxes = 1, .axes = {0}};
    ax_params cols = rows;
    cols.axes[0] = 1;
    ax_array *side = ax_lax_binary(s, cmp, ax_lax_bind(s, AX_P_IOTA, 0, NULL, &rows),
                                   ax_lax_bind(s, AX_P_IOTA, 0, NULL, &cols));
    return ax_lax_broadcast_in_dim(s, side, nd, x->shape, (int[]){nd - 2, nd - 1});
}

/* x scaled by f, exact zeros for f = 0 (a select, so that infinities there do not leak). */
static ax_array *scaled(ax_scope *s, ax_array *x, double f) {
    if (f == 0) return ax_lax_zeros_like(s, x);
    return f == 1 ? x : ax_lax_mul(s, x, ax_lax_scalar_like(s, x, f));
}

/* x (..., n, n) with its elements below the diagonal scaled by `below`, on it by `on`, over
 * it by `above`: tril/triu and phi's halved diagonal. */
static ax_array *triangle_part(ax_scope *s, ax_array *x, double below, double on, double above) {
    if (!x) return NULL;
    ax_array *on_or_above =
        ax_lax_select(s, diagonal_side(s, x, AX_P_EQ), scaled(s, x, on), scaled(s, x, above));
    return ax_lax_select(s, diagonal_side(s, x, AX_P_GT), scaled(s, x, below), on_or_above);
}

/* x = op(a)^-1 b: dx = op(a)^-1 (db - op(da) x); on the right, x = b op(a)^-1 and
 * dx = (db - x op(da)) op(a)^-1. da counts only where the kernel reads a: its triangle, less
 * the diagonal when that is taken as ones. */
static ax_array *triangular_solve_tangent(ax_scope *s, const ax_params *p, ax_array **in,
                                          ax_array **tin, ax_array *x) {
    int f = p->flag;
    bool lower = f & AX_TRSOLVE_LOWER, ta = f & AX_TRSOLVE_TRANSPOSE_A;
    ax_array *rhs = tin[1];
    if (tin[0]) {
        ax_array *da = triangle_part(s, tin[0], lower, !(f & AX_TRSOLVE_UNIT_DIAGONAL), !lower);
        ax_array *dax = f & AX_TRSOLVE_RIGHT_SIDE ? ax_lax_matmul(s, x, false, da, ta)
                                                  : ax_lax_matmul(s, da, ta, x, false);
        rhs = rhs ? ax_lax_sub(s, rhs, dax) : ax_lax_neg(s, dax);
    }
    return ax_lax_triangular_solve(s, in[0], rhs, f);
}

/* L = chol(A) from A's lower triangle: with dA the symmetric matrix that triangle's tangent
 * stands for, dL = L phi(L^-1 dA L^-T), phi taking the lower triangle with half the diagonal
 * (Murray, "Differentiation of the Cholesky decomposition", 2016; JAX's rule). */
static ax_array *cholesky_tangent(ax_scope *s, ax_array *da, ax_array *l) {
    ax_array *sym = ax_lax_add(s, triangle_part(s, da, 1, 1, 0),
                               ax_lax_matrix_transpose(s, triangle_part(s, da, 1, 0, 0)));
    int lower_t = AX_TRSOLVE_LOWER | AX_TRSOLVE_TRANSPOSE_A | AX_TRSOLVE_RIGHT_SIDE;
    ax_array *tmp = ax_lax_triangular_solve(s, l, sym, lower_t);            /* dA L^-T */
    ax_array *inner = ax_lax_triangular_solve(s, l, tmp, AX_TRSOLVE_LOWER); /* L^-1 dA L^-T */
    return ax_lax_matmul(s, l, false, triangle_part(s, inner, 1, 0.5, 0), false);
}

static ax_array *cholesky_jvp_tangent(ax_scope *s, const ax_params *p, ax_array **in,
                                      ax_array **tin, ax_array *out) {
    (void)p, (void)in;
    return cholesky_tangent(s, tin[0], out);
}

static ax_array *triangular_solve_jvp_tangent(ax_scope *s, const ax_params *p, ax_array **in,
                                              ax_array **tin, ax_array *out) {
    return triangular_solve_tangent(s, p, in, tin, out);
}

/* x = S b with S = op(a)^-1: ct_b = S^T ct, a solve with op(a)^T on the same side (on the
 * right, x = b S and ct_b = ct S^T). */
static int triangular_solve_cotangent(ax_scope *s, const ax_params *p, int nin, ax_array **in,
                                      const bool *lin, const ax_aval *ty, ax_array *ct,
                                      ax_array **r) {
    (void)nin, (void)ty;
    if (lin[0]) {
        ax_error(s->cx, AX_ERR_RUNTIME, "triangular_solve is not linear in its matrix");
        return -1;
    }
    ax_params q = {.flag = p->flag ^ AX_TRSOLVE_TRANSPOSE_A};
    if (lin[1]) r[1] = ax_lax_bind(s, AX_P_TRIANGULAR_SOLVE, 2, (ax_array *[]){in[0], ct}, &q);
    return 0;
}

/* One matrix a for a batch of b: the examples become more right-hand sides of a single solve,
 * as JAX does, rather than copies of a. b's batch dim moves next to the dim the solve keeps
 * apart (before b's columns on the left, before its rows on the right) and merges with it. */
static int solve_shared_matrix(ax_scope *s, const ax_params *p, ax_array *a, ax_array *b, int bdim,
                               ax_array **out, int *out_bdim) {
    int r = a->ndim, at = p->flag & AX_TRSOLVE_RIGHT_SIDE ? r - 2 : r - 1;
    ax_array *moved = ax_scope_own(s, ax_moveaxis(s->cx, b, bdim, at));
    if (!moved) return -1;
    int64_t merged[AX_MAX_RANK];
    for (int d = 0, k = 0; d <= r; d++) {
        if (d == at + 1)
            merged[k - 1] *= moved->shape[d];
        else
            merged[k++] = moved->shape[d];
    }
    ax_array *x = ax_lax_bind(s, AX_P_TRIANGULAR_SOLVE, 2,
                              (ax_array *[]){a, ax_lax_reshape(s, moved, r, merged)}, p);
    x = x ? ax_lax_reshape(s, x, r + 1, moved->shape) : NULL;
    out[0] = x ? ax_scope_keep(s, x) : NULL;
    out_bdim[0] = at;
    return out[0] ? 0 : -1;
}

/* triangular_solve: batch dims lead, like the primitive's own; an unbatched b is broadcast,
 * an unbatched a is shared (above). */
static int triangular_solve_batch(ax_ctx *cx, ax_prim prim, const ax_params *p, int nin,
                                  ax_array **in, const int *bdim, int64_t size, ax_array **out,
                                  int *out_bdim) {
    (void)nin;
    ax_scope s;
    ax_scope_begin(&s, cx);
    if (bdim[0] < 0 && bdim[1] >= 0) {
        int rc = solve_shared_matrix(&s, p, in[0], in[1], bdim[1], out, out_bdim);
        ax_scope_end(&s);
        return rc;
    }
    ax_array *ab[2] = {ax_batch_first(&s, in[0], bdim[0], size),
                       ax_batch_first(&s, in[1], bdim[1], size)};
    return ax_batch_done(&s, ax_lax_bind(&s, prim, 2, ab, p), out, out_bdim);
}

static void triangular_solve_format(ax_strbuf *s, const ax_params *p) {
    ax_strbuf_appendf(s, "[left_side=%s lower=%s transpose_a=%s unit_diagonal=%s]",
                      p->flag & AX_TRSOLVE_RIGHT_SIDE ? "False" : "True",
                      p->flag & AX_TRSOLVE_LOWER ? "True" : "False",
                      p->flag & AX_TRSOLVE_TRANSPOSE_A ? "True" : "False",
                      p->flag & AX_TRSOLVE_UNIT_DIAGONAL ? "True" : "False");
}

const ax_prim_info ax_cholesky_info = {
    .name = "cholesky",
    .nin = 1,
    .nout = 1,
    .shape = ax_shape_cholesky,
    .eager = eager_cholesky,
    .jvp = ax_jvp_tangent,
    .tangent = cholesky_jvp_tangent,
    .batch = batch_leading,
    .lower = AX_LOWER_EAGER,
    AX_EXAMPLES({.nin = 1, .in = {AX_SPD(3, 3)}}, {.nin = 1, .in = {AX_SPD(2, 3, 3)}}),
};

/* Linear in b: its transpose solves with op(a)^T. */
#define SOLVE_EXAMPLE(flags, a, b)                                                                 \
    {                                                                                              \
        .nin = 2, .in = {AX_SPD a, AX_FLOATS(-1, 1, AX_LIST b)}, .p = {.flag = (flags) }           \
    }
const ax_prim_info ax_triangular_solve_info = {
    .name = "triangular_solve",
    .nin = 2,
    .nout = 1,
    .flags = LIN,
    .shape = ax_shape_triangular_solve,
    .eager = eager_triangular_solve,
    .jvp = ax_jvp_tangent,
    .tangent = triangular_solve_jvp_tangent,
    .transpose = ax_transpose_linear,
    .cotangent = triangular_solve_cotangent,
    .batch = triangular_solve_batch,
    .format_params = triangular_solve_format,
    .lower = AX_LOWER_EAGER,
    AX_EXAMPLES(SOLVE_EXAMPLE(AX_TRSOLVE_LOWER, (3, 3), (3, 2)),
                SOLVE_EXAMPLE(AX_TRSOLVE_TRANSPOSE_A, (3, 3), (3, 2)),
                SOLVE_EXAMPLE(AX_TRSOLVE_LOWER | AX_TRSOLVE_TRANSPOSE_A, (2, 3, 3), (2, 3, 1)),
                SOLVE_EXAMPLE(AX_TRSOLVE_UNIT_DIAGONAL, (3, 3), (3, 2)),
                SOLVE_EXAMPLE(AX_TRSOLVE_RIGHT_SIDE, (3, 3), (2, 3)),
                SOLVE_EXAMPLE(AX_TRSOLVE_RIGHT_SIDE | AX_TRSOLVE_LOWER | AX_TRSOLVE_TRANSPOSE_A |
                                  AX_TRSOLVE_UNIT_DIAGONAL,
                              (2, 3, 3), (2, 1, 3))),
};

/* Products and diagonals: dot, matmul, vdot, inner, outer, tensordot, diagonal, trace, diag. */
#include "builtins_lib.h"

#include "../compiler/linalg_rules.h"

#include <math.h>
#include <string.h>

static bool two(ax_interp *in, ax_value *self, const ax_args *args, const char *const *names,
                ax_array **a, ax_array **b, ax_value **rest) {
    ax_value *v[4];
    const char *f = self->builtin->name;
    *a = *b = NULL;
    if (!ax_bi_parse(in, args, f, names, 3, v) || !ax_bi_required(in, v[0], f, names[0]) ||
        !ax_bi_required(in, v[1], f, names[1]))
        return false;
    if (rest) *rest = v[2];
    *a = ax_np_asarray(in, v[0], f);
    *b = *a ? ax_np_asarray(in, v[1], f) : NULL;
    return *b != NULL;
}

static ax_value *done2_take(ax_interp *in, ax_array *a, ax_array *b, ax_array *r) {
    ax_array_release(a);
    ax_array_release(b);
    return ax_np_wrap_take(in, r);
}

static const char *const ab_names[] = {"a", "b", NULL};

static ax_value *bi_dot(ax_interp *in, ax_value *self, const ax_args *args) {
    ax_array *a, *b;
    if (!two(in, self, args, ab_names, &a, &b, NULL)) return done2_take(in, a, b, NULL);
    return done2_take(in, a, b, ax_np_dot(in->cx, a, b));
}

static ax_value *bi_matmul(ax_interp *in, ax_value *self, const ax_args *args) {
    ax_array *a, *b;
    if (!two(in, self, args, ab_names, &a, &b, NULL)) return done2_take(in, a, b, NULL);
    return done2_take(in, a, b, ax_np_matmul(in->cx, a, b));
}

static ax_value *bi_vdot(ax_interp *in, ax_value *self, const ax_args *args) {
    ax_array *a, *b;
    if (!two(in, self, args, ab_names, &a, &b, NULL)) return done2_take(in, a, b, NULL);
    ax_array *fa = ax_np_ravel(in->cx, a), *fb = ax_np_ravel(in->cx, b);
    ax_array *r = fa && fb ? ax_np_dot(in->cx, fa, fb) : NULL;
    ax_array_release(fa);
    ax_array_release(fb);
    return done2_take(in, a, b, r);
}

static ax_value *bi_outer(ax_interp *in, ax_value *self, const ax_args *args) {
    ax_array *a, *b;
    if (!two(in, self, args, ab_names, &a, &b, NULL)) return done2_take(in, a, b, NULL);
    ax_array *col = ax_np_reshape(in->cx, a, 2, (int64_t[]){a->size, 1});
    ax_array *row = col ? ax_np_reshape(in->cx, b, 2, (int64_t[]){1, b->size}) : NULL;
    ax_array *r = row ? ax_np_binary(in->cx, AX_P_MUL, "outer", col, row) : NULL;
    ax_array_release(col);
    ax_array_release(row);
    return done2_take(in, a, b, r);
}

/* dot_general contracting the listed axes of a and b (promoted to one dtype), no batch. */
static ax_array *contract_axes(ax_ctx *cx, ax_array *a, ax_array *b, int n, const int *ca,
                               const int *cb) {
    for (int i = 0; i < n; i++)
        if (a->shape[ca[i]] != b->shape[cb[i]]) {
            char ta[160], tb[160];
            ax_array_type_format(ta, sizeof ta, a);
            ax_array_type_format(tb, sizeof tb, b);
            return ax_error(cx, AX_ERR_SHAPE,
                            "cannot contract %s and %s (dimensions %lld and %lld differ)", ta, tb,
                            (long long)a->shape[ca[i]], (long long)b->shape[cb[i]]);
        }
    bool weak;
    ax_dtype t = ax_dtype_promote(a->dtype, a->weak, b->dtype, b->weak, &weak);
    ax_dot_dims d = {.ncontract = n};
    memcpy(d.lhs_contract, ca, (size_t)n * sizeof *ca);
    memcpy(d.rhs_contract, cb, (size_t)n * sizeof *cb);
    ax_array *x = ax_np_astype(cx, a, t, weak), *y = ax_np_astype(cx, b, t, weak);
    ax_params p = {.dot = d};
    ax_array *r = x && y ? ax_bind1(cx, AX_P_DOT_GENERAL, 2, (ax_array *[]){x, y}, &p) : NULL;
    ax_array_release(x);
    ax_array_release(y);
    return r;
}

static ax_value *bi_inner(ax_interp *in, ax_value *self, const ax_args *args) {
    ax_array *a, *b;
    if (!two(in, self, args, ab_names, &a, &b, NULL)) return done2_take(in, a, b, NULL);
    if (a->ndim == 0 || b->ndim == 0)
        return done2_take(in, a, b, ax_np_binary(in->cx, AX_P_MUL, "inner", a, b));
    int ca = a->ndim - 1, cb = b->ndim - 1;
    return done2_take(in, a, b, contract_axes(in->cx, a, b, 1, &ca, &cb));
}

/* The axes argument of tensordot: an int N or a pair of axis sequences. */
static int tensordot_axes(ax_interp *in, ax_value *v, const ax_array *a, const ax_array *b, int *ca,
                          int *cb) {
    if (!v || v->kind == AX_V_ARRAY) {
        int64_t n;
        if (!ax_bi_int(in, v, "axes", 2, &n)) return -1;
        if (n < 0 || n > a->ndim || n > b->ndim)
            return ax_error(in->cx, AX_ERR_VALUE, "tensordot: axes=%lld is out of range",
                            (long long)n),
                   -1;
        for (int i = 0; i < n; i++) {
            ca[i] = a->ndim - (int)n + i;
            cb[i] = i;
        }
        return (int)n;
    }
    if ((v->kind != AX_V_TUPLE && v->kind != AX_V_LIST) || v->n != 2)
        return ax_error(in->cx, AX_ERR_TYPE, "tensordot: axes must be an int or a pair"), -1;
    ax_value *pa = v->items[0], *pb = v->items[1];
    bool sa = pa->kind == AX_V_TUPLE || pa->kind == AX_V_LIST;
    bool sb = pb->kind == AX_V_TUPLE || pb->kind == AX_V_LIST;
    int n = sa ? pa->n : 1;
    if ((sb ? pb->n : 1) != n || n > AX_MAX_RANK)
        return ax_error(in->cx, AX_ERR_VALUE, "tensordot: the axis lists differ in length"), -1;
    for (int i = 0; i < n; i++) {
        int64_t x, y;
        if (!ax_bi_int(in, sa ? pa->items[i] : pa, "axis", 0, &x) ||
            !ax_bi_int(in, sb ? pb->items[i] : pb, "axis", 0, &y) ||
            !ax_np_axis(in->cx, x, a->ndim, &ca[i]) || !ax_np_axis(in->cx, y, b->ndim, &cb[i]))
            return -1;
    }
    return n;
}

static ax_value *bi_tensordot(ax_interp *in, ax_value *self, const ax_args *args) {
    static const char *const names[] = {"a", "b", "axes", NULL};
    ax_array *a, *b;
    ax_value *axes;
    int ca[AX_MAX_RANK], cb[AX_MAX_RANK];
    if (!two(in, self, args, names, &a, &b, &axes)) return done2_take(in, a, b, NULL);
    int n = tensordot_axes(in, axes, a, b, ca, cb);
    return done2_take(in, a, b, n < 0 ? NULL : contract_axes(in->cx, a, b, n, ca, cb));
}

/* The diagonal `offset` of the plane (axis1, axis2), as the last axis (as NumPy). */
static ax_array *diagonal(ax_interp *in, ax_array *x, int64_t offset, int axis1, int axis2) {
    ax_ctx *cx = in->cx;
    if (axis1 == axis2) return ax_error(cx, AX_ERR_VALUE, "axis1 and axis2 cannot be the same");
    int perm[AX_MAX_RANK], n = 0;
    for (int i = 0; i < x->ndim; i++)
        if (i != axis1 && i != axis2) perm[n++] = i;
    perm[n++] = axis1;
    perm[n++] = axis2;
    ax_array *t = ax_np_transpose(cx, x, perm);
    if (!t) return NULL;
    int64_t rows = t->shape[n - 2], cols = t->shape[n - 1];
    int64_t len = offset >= 0 ? (rows < cols - offset ? rows : cols - offset)
                              : (rows + offset < cols ? rows + offset : cols);
    if (len < 0) len = 0;
    /* gather (i, i + offset) pairs from the last two axes: result (len, rest...) */
    ax_array *idx = ax_array_new(cx, AX_I64, 2, (int64_t[]){len, 2});
    ax_array *g = NULL;
    if (idx) {
        int64_t *p = ax_array_data(idx);
        for (int64_t i = 0; i < len; i++) {
            p[2 * i] = offset >= 0 ? i : i - offset;
            p[2 * i + 1] = offset >= 0 ? i + offset : i;
        }
        ax_params prm = {.naxes = 2};
        prm.axes[0] = n - 2;
        prm.axes[1] = n - 1;
        g = ax_bind1(cx, AX_P_GATHER, 2, (ax_array *[]){t, idx}, &prm);
    }
    ax_array_release(idx);
    ax_array_release(t);
    if (!g || g->ndim == 1) return g;
    int back[AX_MAX_RANK];
    for (int i = 0; i < g->ndim; i++) back[i] = i + 1 < g->ndim ? i + 1 : 0;
    ax_array *r = ax_np_transpose(cx, g, back);
    ax_array_release(g);
    return r;
}

static bool diagonal_args(ax_interp *in, ax_value *self, const ax_args *args, ax_array **x,
                          int64_t *offset, int *axis1, int *axis2) {
    static const char *const names[] = {"a", "offset", "axis1", "axis2", NULL};
    ax_value *v[4];
    const char *f = self->builtin->name;
    *x = NULL;
    if (!ax_bi_parse(in, args, f, names, 4, v) || !ax_bi_required(in, v[0], f, "a") ||
        !ax_bi_int(in, v[1], "offset", 0, offset))
        return false;
    *x = ax_np_asarray(in, v[0], f);
    if (*x && (*x)->ndim < 2) {
        ax_error(in->cx, AX_ERR_VALUE, "%s needs an array of rank 2 or more", f);
        return false;
    }
    return *x && ax_bi_axis(in, v[2], (*x)->ndim, 0, false, axis1) &&
           ax_bi_axis(in, v[3], (*x)->ndim, 1, false, axis2);
}

static ax_value *bi_diagonal(ax_interp *in, ax_value *self, const ax_args *args) {
    ax_array *x;
    int64_t offset;
    int a1, a2;
    ax_array *r = diagonal_args(in, self, args, &x, &offset, &a1, &a2)
                      ? diagonal(in, x, offset, a1, a2)
                      : NULL;
    ax_array_release(x);
    return ax_np_wrap_take(in, r);
}

static ax_value *bi_trace(ax_interp *in, ax_value *self, const ax_args *args) {
    ax_array *x;
    int64_t offset;
    int a1, a2;
    ax_array *d = diagonal_args(in, self, args, &x, &offset, &a1, &a2)
                      ? diagonal(in, x, offset, a1, a2)
                      : NULL;
    int last = d ? d->ndim - 1 : 0;
    ax_array *r = d ? ax_np_sum(in->cx, AX_P_REDUCE_SUM, d, 1, &last, false, -1) : NULL;
    ax_array_release(d);
    ax_array_release(x);
    return ax_np_wrap_take(in, r);
}

/* diag(v, k=0): the diagonal of a matrix, or a matrix with vector v on diagonal k. */
static ax_value *bi_diag(ax_interp *in, ax_value *self, const ax_args *args) {
    static const char *const names[] = {"v", "k", NULL};
    ax_value *v[2];
    const char *f = self->builtin->name;
    int64_t k;
    if (!ax_bi_parse(in, args, f, names, 2, v) || !ax_bi_required(in, v[0], f, "v") ||
        !ax_bi_int(in, v[1], "k", 0, &k))
        return NULL;
    ax_ctx *cx = in->cx;
    ax_array *x = ax_np_asarray(in, v[0], f);
    if (!x) return NULL;
    ax_array *r = NULL;
    if (x->ndim == 2) {
        r = diagonal(in, x, k, 0, 1);
    } else if (x->ndim != 1) {
        ax_error(cx, AX_ERR_VALUE, "diag needs a 1-D or 2-D array");
    } else {
        /* M[i, j] = v[min(i, j)] where j - i == k: pad v to N and select on the diagonal. */
        int64_t n = x->shape[0], ak = k == INT64_MIN ? INT64_MAX : k < 0 ? -k : k, size;
        if (k == INT64_MIN || !ax_add_i64(n, ak, &size)) {
            ax_array_release(x);
            return ax_error(cx, AX_ERR_VALUE,
                            "diag: a vector of %lld elements on diagonal %lld needs a matrix of "
                            "more than 2**63 - 1 rows",
                            (long long)n, (long long)k);
        }
        int64_t shape[2] = {size, size};
        if (!ax_shape_check(cx, "diag", x->dtype, 2, shape)) {
            ax_array_release(x);
            return NULL;
        }
        ax_scope s;
        ax_scope_begin(&s, cx);
        ax_params p = {.ndim = 1};
        p.hi[0] = ak;
        ax_array *zero = ax_scope_own(&s, ax_np_scalar(cx, x->dtype, 0));
        ax_array *padded = ax_lax_bind(&s, AX_P_PAD, 2, (ax_array *[]){x, zero}, &p);
        ax_array *rows = ax_lax_broadcast_in_dim(&s, padded, 2, shape, (int[]){k >= 0 ? 0 : 1});
        ax_array *rr = ax_scope_own(&s, ax_np_iota(cx, AX_I64, 2, shape, 0));
        ax_array *cc = ax_scope_own(&s, ax_np_iota(cx, AX_I64, 2, shape, 1));
        ax_array *d = ax_lax_sub(&s, cc, rr);
        ax_array *on = ax_lax_binary(&s, AX_P_EQ, d, ax_lax_scalar_like(&s, d, (double)k));
        r = ax_scope_own(&s, on && rows ? ax_np_where(cx, on, rows, zero) : NULL);
        r = ax_scope_keep(&s, r);
        ax_scope_end(&s);
    }
    ax_array_release(x);
    return ax_np_wrap_take(in, r);
}

/* ---------------------------------------------------------------- jnp.linalg */

/* x with its last two axes swapped. */
static ax_array *swap_last_axes(ax_ctx *cx, ax_array *x) {
    ax_params p = {.naxes = x->ndim};
    for (int d = 0; d < x->ndim; d++) p.axes[d] = d;
    p.axes[x->ndim - 2] = x->ndim - 1;
    p.axes[x->ndim - 1] = x->ndim - 2;
    return ax_bind1(cx, AX_P_TRANSPOSE, 1, &x, &p);
}

/* (a + a^T) / 2, as jnp.linalg.cholesky symmetrizes its input: the factor, and so the
 * gradient, then depends on both triangles equally. */
static ax_array *symmetrized(ax_ctx *cx, ax_array *a) {
    if (a->ndim < 2 || a->shape[a->ndim - 1] != a->shape[a->ndim - 2]) return ax_array_retain(a);
    ax_array *t = swap_last_axes(cx, a);
    ax_array *sum = t ? ax_bind_binary(cx, AX_P_ADD, a, t) : NULL;
    ax_array *half = sum ? ax_array_scalar(cx, a->dtype, 0.5) : NULL;
    ax_array *r = half ? ax_bind_binary(cx, AX_P_MUL, sum, half) : NULL;
    ax_array_release(t);
    ax_array_release(sum);
    ax_array_release(half);
    return r;
}

/* cholesky(a, *, upper=False, symmetrize_input=True), as jnp.linalg.cholesky: the lower factor
 * (its transpose when upper) of (a + a^T) / 2, or of a's lower triangle without symmetrizing. */
static ax_value *bi_cholesky(ax_interp *in, ax_value *self, const ax_args *args) {
    static const char *const names[] = {"a", "upper", "symmetrize_input", NULL};
    ax_value *v[3];
    const char *f = self->builtin->name;
    bool upper, sym_input;
    if (!ax_bi_parse(in, args, f, names, 1, v) || !ax_bi_required(in, v[0], f, "a") ||
        !ax_bi_bool(in, v[1], "upper", false, &upper) ||
        !ax_bi_bool(in, v[2], "symmetrize_input", true, &sym_input))
        return NULL;
    ax_array *a = ax_np_asarray(in, v[0], f);
    ax_array *fa = ax_np_to_inexact(in->cx, a);
    ax_array *sym = fa ? (sym_input ? symmetrized(in->cx, fa) : ax_array_retain(fa)) : NULL;
    ax_array *r = sym ? ax_bind_unary(in->cx, AX_P_CHOLESKY, sym) : NULL;
    ax_array *t = r && upper ? swap_last_axes(in->cx, r) : NULL;
    ax_array_release(a);
    ax_array_release(fa);
    ax_array_release(sym);
    if (upper) ax_array_release(r);
    return ax_np_wrap_take(in, upper ? t : r);
}

/* scipy's trans: 0 or 'N' solves a x = b, 1 or 'T' a^T x = b, and 2 or 'C' a^H x = b, the
 * same as 'T' for real a. */
static bool trans_arg(ax_interp *in, ax_value *v, bool *transpose) {
    int64_t t = 0;
    if (v && v->kind == AX_V_STR)
        t = !strcmp(v->str, "N") ? 0 : !strcmp(v->str, "T") ? 1 : !strcmp(v->str, "C") ? 2 : -1;
    else if (!ax_bi_int(in, v, "trans", 0, &t))
        return false;
    if (t < 0 || t > 2) {
        ax_error(in->cx, AX_ERR_VALUE, "solve_triangular: trans must be 0, 1, 2, 'N', 'T' or 'C'");
        return false;
    }
    *transpose = t != 0;
    return true;
}

/* x with a trailing axis of size 1 (col), or without it (!col). */
static ax_array *as_column(ax_ctx *cx, ax_array *x, bool col, int ndim, const int64_t *shape) {
    ax_params p = {.ndim = ndim + col};
    memcpy(p.shape, shape, (size_t)ndim * sizeof *shape);
    if (col) p.shape[ndim] = 1;
    return ax_bind1(cx, AX_P_RESHAPE, 1, &x, &p);
}

/* The triangular_solve primitive on inexact a and b in one dtype; a b of one rank less than
 * a is a vector (or a batch of them), solved as a column. */
static ax_array *solve_triangular(ax_ctx *cx, ax_array *a, ax_array *b, int flags) {
    bool vector = a->ndim >= 2 && b->ndim == a->ndim - 1;
    bool weak;
    ax_dtype t = ax_np_result_type(2, (ax_array *[]){a, b}, &weak);
    ax_array *ca = ax_np_astype(cx, a, t, false);
    ax_array *cb = ca ? ax_np_astype(cx, b, t, false) : NULL;
    ax_array *rhs = cb && vector ? as_column(cx, cb, true, b->ndim, b->shape) : cb;
    ax_params p = {.flag = flags};
    ax_array *x = rhs ? ax_bind1(cx, AX_P_TRIANGULAR_SOLVE, 2, (ax_array *[]){ca, rhs}, &p) : NULL;
    ax_array *r = x && vector ? as_column(cx, x, false, b->ndim, b->shape) : x;
    if (r != x) ax_array_release(x);
    if (rhs != cb) ax_array_release(rhs);
    ax_array_release(ca);
    ax_array_release(cb);
    return r;
}

/* solve_triangular(a, b, trans=0, lower=False, unit_diagonal=False): x with op(a) x = b, as
 * jax.scipy.linalg.solve_triangular; b (..., n, k), or (..., n) a vector. */
static ax_value *bi_solve_triangular(ax_interp *in, ax_value *self, const ax_args *args) {
    static const char *const names[] = {"a", "b", "trans", "lower", "unit_diagonal", NULL};
    ax_value *v[5];
    const char *f = self->builtin->name;
    bool transpose, lower, unit;
    if (!ax_bi_parse(in, args, f, names, 5, v) || !ax_bi_required(in, v[0], f, "a") ||
        !ax_bi_required(in, v[1], f, "b") || !trans_arg(in, v[2], &transpose) ||
        !ax_bi_bool(in, v[3], "lower", false, &lower) ||
        !ax_bi_bool(in, v[4], "unit_diagonal", false, &unit))
        return NULL;
    int flags = (lower ? AX_TRSOLVE_LOWER : 0) | (transpose ? AX_TRSOLVE_TRANSPOSE_A : 0) |
                (unit ? AX_TRSOLVE_UNIT_DIAGONAL : 0);
    ax_array *a = ax_np_asarray(in, v[0], f), *b = a ? ax_np_asarray(in, v[1], f) : NULL;
    ax_array *fa = b ? ax_np_to_inexact(in->cx, a) : NULL;
    ax_array *fb = fa ? ax_np_to_inexact(in->cx, b) : NULL;
    ax_array *x = fb ? solve_triangular(in->cx, fa, fb, flags) : NULL;
    ax_array_release(a), ax_array_release(b), ax_array_release(fa), ax_array_release(fb);
    return ax_np_wrap_take(in, x);
}

/* ---------------------------------------------------------------- factorisations */
/* The private builtins stdlib/linalg.ax is written on, one per primitive (lax.linalg's lu,
 * eigh, svd, qr): each binds its primitive on `a` made inexact and returns the outputs as a
 * tuple, in the primitive's order. Their boolean options are flag bits of the primitive. */

typedef struct factorization {
    ax_prim prim;
    const char *const names[4]; /* "a", then the options */
    int bits[3];
    bool defaults[3];
} factorization;

static const factorization factorizations[] = {
    {AX_P_LU, {"a", NULL}, {0}, {0}},
    {AX_P_EIGH, {"a", "lower", NULL}, {AX_EIGH_LOWER}, {true}},
    {AX_P_SVD,
     {"a", "full_matrices", "compute_uv", NULL},
     {AX_SVD_FULL_MATRICES, AX_SVD_COMPUTE_UV},
     {true, true}},
    {AX_P_QR, {"a", "full_matrices", NULL}, {AX_QR_FULL_MATRICES}, {false}},
};

static ax_value *factorize(ax_interp *in, ax_value *self, const ax_args *args, ax_prim prim) {
    const factorization *fz = NULL;
    for (size_t i = 0; i < sizeof factorizations / sizeof *factorizations; i++)
        if (factorizations[i].prim == prim) fz = &factorizations[i];
    ax_value *v[4];
    const char *f = self->builtin->name;
    int nopt = 0;
    while (fz->names[nopt + 1]) nopt++;
    if (!ax_bi_parse(in, args, f, fz->names, 1 + nopt, v) || !ax_bi_required(in, v[0], f, "a"))
        return NULL;
    ax_params p = {0};
    for (int i = 0; i < nopt; i++) {
        bool on;
        if (!ax_bi_bool(in, v[1 + i], fz->names[1 + i], fz->defaults[i], &on)) return NULL;
        if (on) p.flag |= fz->bits[i];
    }
    ax_array *a = ax_np_asarray(in, v[0], f);
    ax_array *fa = a ? ax_np_to_inexact(in->cx, a) : NULL;
    ax_array *out[3] = {0};
    int n = ax_prim_nout(prim, &p);
    int rc = fa ? ax_bind(in->cx, prim, 1, &fa, &p, out) : -1;
    ax_array_release(a);
    ax_array_release(fa);
    if (rc) return NULL;
    ax_value *items[3];
    bool ok = true;
    for (int i = 0; i < n; i++) ok &= (items[i] = ax_value_array(out[i])) != NULL;
    if (!ok) {
        for (int i = 0; i < n; i++)
            if (items[i]) ax_value_release(items[i]);
        return ax_error_oom(in->cx);
    }
    ax_value *t = ax_value_tuple(n, items);
    return t ? t : ax_error_oom(in->cx);
}

static ax_value *bi_lu(ax_interp *in, ax_value *self, const ax_args *args) {
    return factorize(in, self, args, AX_P_LU);
}
static ax_value *bi_eigh(ax_interp *in, ax_value *self, const ax_args *args) {
    return factorize(in, self, args, AX_P_EIGH);
}
static ax_value *bi_svd(ax_interp *in, ax_value *self, const ax_args *args) {
    return factorize(in, self, args, AX_P_SVD);
}
static ax_value *bi_qr(ax_interp *in, ax_value *self, const ax_args *args) {
    return factorize(in, self, args, AX_P_QR);
}

/* _shape_error(message): a ShapeError, for the checks of modules written in ax. */
static ax_value *bi_shape_error(ax_interp *in, ax_value *self, const ax_args *args) {
    (void)self;
    return ax_error(in->cx, AX_ERR_SHAPE, "%s",
                    args->n == 1 && args->pos[0]->kind == AX_V_STR ? args->pos[0]->str
                                                                   : "bad shape");
}

#define NP AX_BI_NP

const ax_builtin_def ax_builtins_linalg[] = {
    {"dot", bi_dot, "dot(a, b): matrix product (sum over a's last and b's second-to-last axis)",
     NP},
    {"matmul", bi_matmul, "matmul(a, b): matrix product with broadcast batch dimensions (a @ b)",
     NP},
    {"vdot", bi_vdot, "vdot(a, b): dot product of the flattened arrays", NP},
    {"inner", bi_inner, "inner(a, b): sum product over the last axes", NP},
    {"outer", bi_outer, "outer(a, b): outer product of the flattened arrays", NP},
    {"tensordot", bi_tensordot, "tensordot(a, b, axes=2): sum products over the given axes", NP},
    {"diagonal", bi_diagonal, "diagonal(a, offset=0, axis1=0, axis2=1): a diagonal of a", NP},
    {"trace", bi_trace, "trace(a, offset=0, axis1=0, axis2=1): sum along a diagonal", NP},
    {"diag", bi_diag, "diag(v, k=0): the diagonal of a matrix, or a diagonal matrix from v", NP},
    {"cholesky", bi_cholesky,
     "linalg.cholesky(a, upper=False, symmetrize_input=True): the Cholesky factor of "
     "positive-definite a",
     AX_BI_LINALG},
    {"solve_triangular", bi_solve_triangular,
     "linalg.solve_triangular(a, b, trans=0, lower=False, unit_diagonal=False): x with a x = b "
     "(a^T x = b when trans) for triangular a",
     AX_BI_LINALG},
    {"_linalg_lu", bi_lu, "_linalg_lu(a): (lu, pivots, permutation), the lu primitive", 0},
    {"_linalg_eigh", bi_eigh,
     "_linalg_eigh(a, lower=True): (eigenvectors, eigenvalues), the eigh primitive", 0},
    {"_linalg_svd", bi_svd,
     "_linalg_svd(a, full_matrices=True, compute_uv=True): (s, u, vt) or (s,), the svd "
     "primitive",
     0},
    {"_linalg_qr", bi_qr, "_linalg_qr(a, full_matrices=False): (q, r), the qr primitive", 0},
    {"_shape_error", bi_shape_error, "_shape_error(message): raises a ShapeError", 0},
    {NULL, NULL, NULL, 0},
};

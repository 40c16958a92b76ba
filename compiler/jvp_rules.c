/* JVP rules (forward-mode derivatives) of the primitives. Each computes the primal outputs by
 * binding the primitive itself, then the tangents from them. */
#include <math.h>
#include <string.h>

#include "ad_rules.h"

/* Binds the primitive on the primal inputs: the primal half of every rule. */
static int primal(ax_ctx *cx, ax_prim prim, const ax_params *p, int nin, ax_array **in,
                  ax_array **out) {
    return ax_bind(cx, prim, nin, in, p, out);
}

/* Finishes a single-output rule: broadcasts the tangent to the output's shape. */
static int finish1(ax_scope *s, ax_array *t, ax_array *out, ax_array **tout) {
    if (t) t = ax_lax_broadcast_to(s, t, out->ndim, out->shape);
    *tout = t ? ax_scope_keep(s, t) : NULL;
    bool failed = ax_error_pending(s->cx);
    ax_scope_end(s);
    return failed ? -1 : 0;
}

int ax_jvp_unary(ax_ctx *cx, ax_prim prim, const ax_params *p, int nin, ax_array **in,
                 ax_array **tin, ax_array **out, ax_array **tout) {
    (void)nin;
    if (primal(cx, prim, p, 1, in, out)) return -1;
    if (!tin[0]) {
        *tout = NULL;
        return 0;
    }
    ax_scope s;
    ax_scope_begin(&s, cx);
    ax_array *d = ax_prim_get(prim)->derivative(&s, p, in[0], out[0]);
    if (finish1(&s, ax_lax_mul(&s, tin[0], d), out[0], tout)) {
        ax_array_release(out[0]);
        out[0] = NULL;
        return -1;
    }
    return 0;
}

ax_array *ax_tangent_sum(ax_scope *s, ax_array *a, ax_array *b, const ax_array *z) {
    if (a) a = ax_lax_broadcast_to(s, a, z->ndim, z->shape);
    if (b) b = ax_lax_broadcast_to(s, b, z->ndim, z->shape);
    return a && b ? ax_lax_add(s, a, b) : a ? a : b;
}

/* Which inputs of a linear primitive carry tangents (the others are indices, predicates,
 * start positions: passed through as primal values). */
static bool is_linear_input(ax_prim prim, const ax_params *p, int i) {
    unsigned mask = ax_prim_get(prim)->linear_in;
    if (mask) return mask & (1u << (i < 31 ? i : 31));
    switch (prim) {
    case AX_P_GATHER:
        return i == 0;
    case AX_P_DYNAMIC_SLICE:
        return i == 0;
    case AX_P_DYNAMIC_UPDATE_SLICE:
        return i <= 1;
    case AX_P_SELECT:
        return i >= 1;
    case AX_P_SCATTER:
        return i != 1 && (p->flag == AX_SCATTER_SET || p->flag == AX_SCATTER_ADD);
    case AX_P_PAD:
    case AX_P_CONCATENATE:
    case AX_P_ADD:
    case AX_P_SUB:
        return true;
    case AX_P_CUSTOM_LINEAR: /* the residuals come first */
        return i >= p->nconsts;
    default:
        return i == 0;
    }
}

bool ax_prim_input_is_linear(ax_prim prim, const ax_params *p, int i) {
    return is_linear_input(prim, p, i);
}

int ax_jvp_linear(ax_ctx *cx, ax_prim prim, const ax_params *p, int nin, ax_array **in,
                  ax_array **tin, ax_array **out, ax_array **tout) {
    if (primal(cx, prim, p, nin, in, out)) return -1;
    bool any = false;
    for (int i = 0; i < nin; i++) any |= tin[i] && is_linear_input(prim, p, i);
    if (!any || !ax_dtype_is_float(out[0]->dtype)) {
        *tout = NULL;
        return 0;
    }
    ax_scope s;
    ax_scope_begin(&s, cx);
    ax_array *small[8], **targs = ax_scratch(cx, small, 8, nin, sizeof *targs);
    for (int i = 0; targs && i < nin; i++) {
        if (!is_linear_input(prim, p, i))
            targs[i] = in[i];
        else
            targs[i] = tin[i] ? tin[i] : ax_lax_zeros_like(&s, in[i]);
    }
    ax_array *t = targs ? ax_lax_bind(&s, prim, nin, targs, p) : NULL;
    ax_scratch_free(targs, small);
    if (finish1(&s, t, out[0], tout)) {
        ax_array_release(out[0]);
        out[0] = NULL;
        return -1;
    }
    return 0;
}

int ax_jvp_zero(ax_ctx *cx, ax_prim prim, const ax_params *p, int nin, ax_array **in,
                ax_array **tin, ax_array **out, ax_array **tout) {
    (void)tin;
    if (primal(cx, prim, p, nin, in, out)) return -1;
    for (int i = 0; i < ax_prim_get(prim)->nout; i++) tout[i] = NULL;
    return 0;
}

static ax_array *dot_tangent(ax_scope *s, const ax_params *p, ax_array **in, ax_array **tin) {
    ax_array *a = tin[0] ? ax_lax_dot_general(s, tin[0], in[1], &p->dot) : NULL;
    ax_array *b = tin[1] ? ax_lax_dot_general(s, in[0], tin[1], &p->dot) : NULL;
    return a && b ? ax_lax_add(s, a, b) : a ? a : b;
}

/* scatter with mode mul/min/max (set and add are linear). */
static ax_array *scatter_tangent(ax_scope *s, const ax_params *p, ax_array **in, ax_array **tin,
                                 ax_array *out) {
    ax_array *x = in[0], *idx = in[1], *u = in[2];
    ax_params add = *p, gather = *p;
    add.flag = AX_SCATTER_ADD;
    ax_array *zeros = ax_lax_zeros_like(s, x);
    ax_array *out_at = ax_lax_bind(s, AX_P_GATHER, 2, (ax_array *[]){out, idx}, &gather);
    ax_array *tx = NULL, *tu = NULL;
    if (p->flag == AX_SCATTER_MUL) {
        /* out = x * prod(u): d/dx = prod(u); d/du_k = out / u_k */
        if (tin[0]) {
            ax_array *prod =
                ax_lax_bind(s, AX_P_SCATTER, 3, (ax_array *[]){ax_lax_ones_like(s, x), idx, u}, p);
            tx = ax_lax_mul(s, tin[0], prod);
        }
        if (tin[2]) {
            ax_array *contrib = ax_lax_mul(s, tin[2], ax_lax_div(s, out_at, u));
            tu = ax_lax_bind(s, AX_P_SCATTER, 3, (ax_array *[]){zeros, idx, contrib}, &add);
        }
    } else {
        /* min/max: the tangent of whichever value won (x on ties) */
        ax_array *from_x = ax_lax_binary(s, AX_P_EQ, out, x);
        if (tin[0]) tx = ax_lax_select(s, from_x, tin[0], zeros);
        if (tin[2]) {
            ax_array *x_at = ax_lax_bind(s, AX_P_GATHER, 2, (ax_array *[]){x, idx}, &gather);
            ax_array *won = ax_lax_binary(s, AX_P_AND, ax_lax_binary(s, AX_P_EQ, out_at, u),
                                          ax_lax_binary(s, AX_P_NE, x_at, u));
            ax_array *contrib = ax_lax_select(s, won, tin[2], ax_lax_zeros_like(s, u));
            tu = ax_lax_bind(s, AX_P_SCATTER, 3, (ax_array *[]){zeros, idx, contrib}, &add);
        }
    }
    return tx && tu ? ax_lax_add(s, tx, tu) : tx ? tx : tu;
}

/* ---- linear algebra: cholesky and triangular_solve ---- */

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
    ax_array *sym =
        ax_lax_add(s, triangle_part(s, da, 1, 1, 0), ax_lax_matrix_transpose(s, triangle_part(s, da, 1, 0, 0)));
    int lower_t = AX_TRSOLVE_LOWER | AX_TRSOLVE_TRANSPOSE_A | AX_TRSOLVE_RIGHT_SIDE;
    ax_array *tmp = ax_lax_triangular_solve(s, l, sym, lower_t);            /* dA L^-T */
    ax_array *inner = ax_lax_triangular_solve(s, l, tmp, AX_TRSOLVE_LOWER); /* L^-1 dA L^-T */
    return ax_lax_matmul(s, l, false, triangle_part(s, inner, 1, 0.5, 0), false);
}

static ax_array *special_tangent(ax_scope *s, ax_prim prim, const ax_params *p, ax_array **in,
                                 ax_array **tin, ax_array *out) {
    switch (prim) {
    case AX_P_SCATTER:
        return scatter_tangent(s, p, in, tin, out);
    case AX_P_DOT_GENERAL:
        return dot_tangent(s, p, in, tin);
    case AX_P_TRIANGULAR_SOLVE:
        return triangular_solve_tangent(s, p, in, tin, out);
    case AX_P_CHOLESKY:
        return tin[0] ? cholesky_tangent(s, tin[0], out) : NULL;
    default:
        return ax_error(s->cx, AX_ERR_TYPE, "%s is not differentiable", ax_prim_get(prim)->name);
    }
}

int ax_jvp_tangent(ax_ctx *cx, ax_prim prim, const ax_params *p, int nin, ax_array **in,
                   ax_array **tin, ax_array **out, ax_array **tout) {
    if (primal(cx, prim, p, nin, in, out)) return -1;
    bool any = false;
    for (int i = 0; i < nin; i++) any |= tin[i] != NULL;
    if (!any) {
        *tout = NULL;
        return 0;
    }
    ax_scope s;
    ax_scope_begin(&s, cx);
    ax_array *t = ax_prim_get(prim)->tangent(&s, p, in, tin, out[0]);
    if (finish1(&s, t, out[0], tout)) {
        ax_array_release(out[0]);
        out[0] = NULL;
        return -1;
    }
    return 0;
}

int ax_jvp_special(ax_ctx *cx, ax_prim prim, const ax_params *p, int nin, ax_array **in,
                   ax_array **tin, ax_array **out, ax_array **tout) {
    if (prim == AX_P_CUSTOM_CALL) /* the user's rule, not the body's derivative */
        return p->cb->jvp(cx, p->cb->data, (int)p->k, nin, in, tin, out, tout);
    if (prim == AX_P_SCATTER && (p->flag == AX_SCATTER_SET || p->flag == AX_SCATTER_ADD))
        return ax_jvp_linear(cx, prim, p, nin, in, tin, out, tout);
    if (primal(cx, prim, p, nin, in, out)) return -1;
    bool any = false;
    for (int i = 0; i < nin; i++) any |= tin[i] != NULL;
    if (!any) {
        *tout = NULL;
        return 0;
    }
    ax_scope s;
    ax_scope_begin(&s, cx);
    ax_array *t = special_tangent(&s, prim, p, in, tin, out[0]);
    if (finish1(&s, t, out[0], tout)) {
        ax_array_release(out[0]);
        out[0] = NULL;
        return -1;
    }
    return 0;
}

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
    bool failed = ax_error_pending(s->cx); /* a term of t may have failed, leaving it partial */
    *tout = t && !failed ? ax_scope_keep(s, t) : NULL;
    ax_scope_end(s);
    return failed ? -1 : 0;
}

/* trigamma(x) = digamma'(x) for x > 0: the recurrence psi1(x) = psi1(x + 1) + 1/x^2 six times,
 * then the asymptotic series at x + 6 (error below 1e-9 there). */
static ax_array *trigamma(ax_scope *s, ax_array *x) {
#define C(v) ax_lax_scalar_like(s, x, (v))
    ax_array *acc = C(0.0), *z = x;
    for (int k = 0; k < 6; k++) {
        acc = ax_lax_add(s, acc, ax_lax_div(s, C(1.0), ax_lax_mul(s, z, z)));
        z = ax_lax_add(s, z, C(1.0));
    }
    ax_array *iz = ax_lax_div(s, C(1.0), z), *iz2 = ax_lax_mul(s, iz, iz);
    /* 1/z + 1/(2z^2) + 1/(6z^3) - 1/(30z^5) + 1/(42z^7) - 1/(30z^9) */
    ax_array *tail = ax_lax_mul(s, iz2, C(-1.0 / 30.0));
    tail = ax_lax_mul(s, iz2, ax_lax_add(s, tail, C(1.0 / 42.0)));
    tail = ax_lax_mul(s, iz2, ax_lax_add(s, tail, C(-1.0 / 30.0)));
    tail = ax_lax_mul(s, iz2, ax_lax_add(s, tail, C(1.0 / 6.0)));
    ax_array *series =
        ax_lax_add(s, ax_lax_add(s, iz, ax_lax_mul(s, C(0.5), iz2)), ax_lax_mul(s, iz, tail));
    return ax_lax_add(s, acc, series);
#undef C
}

/* dy/dx of a unary primitive, from x and y = f(x). */
static ax_array *unary_derivative(ax_scope *s, ax_prim prim, const ax_params *p, ax_array *x,
                                  ax_array *y) {
#define C(v)     ax_lax_scalar_like(s, x, (v))
#define U(op, a) ax_lax_unary(s, AX_P_##op, (a))
    switch (prim) {
    case AX_P_NEG:
        return C(-1.0);
    case AX_P_EXP:
        return y;
    case AX_P_EXP2:
        return ax_lax_mul(s, y, C(M_LN2));
    case AX_P_LOG:
        return ax_lax_div(s, C(1.0), x);
    case AX_P_LOG1P:
        return ax_lax_div(s, C(1.0), ax_lax_add(s, x, C(1.0)));
    case AX_P_EXPM1:
        return ax_lax_add(s, y, C(1.0));
    case AX_P_SIN:
        return U(COS, x);
    case AX_P_COS:
        return ax_lax_neg(s, U(SIN, x));
    case AX_P_TAN:
        return ax_lax_add(s, C(1.0), ax_lax_mul(s, y, y));
    case AX_P_ASIN:
        return U(RSQRT, ax_lax_sub(s, C(1.0), ax_lax_mul(s, x, x)));
    case AX_P_ACOS:
        return ax_lax_neg(s, U(RSQRT, ax_lax_sub(s, C(1.0), ax_lax_mul(s, x, x))));
    case AX_P_ATAN:
        return ax_lax_div(s, C(1.0), ax_lax_add(s, C(1.0), ax_lax_mul(s, x, x)));
    case AX_P_SINH:
        return U(COSH, x);
    case AX_P_COSH:
        return U(SINH, x);
    case AX_P_TANH:
        return ax_lax_sub(s, C(1.0), ax_lax_mul(s, y, y));
    case AX_P_ASINH:
        return U(RSQRT, ax_lax_add(s, ax_lax_mul(s, x, x), C(1.0)));
    case AX_P_ACOSH:
        return U(RSQRT, ax_lax_mul(s, ax_lax_sub(s, x, C(1.0)), ax_lax_add(s, x, C(1.0))));
    case AX_P_ATANH:
        return ax_lax_div(s, C(1.0), ax_lax_sub(s, C(1.0), ax_lax_mul(s, x, x)));
    case AX_P_LOGISTIC:
        return ax_lax_mul(s, y, ax_lax_sub(s, C(1.0), y));
    case AX_P_SQRT:
        return ax_lax_div(s, C(0.5), y);
    case AX_P_RSQRT:
        return ax_lax_mul(s, C(-0.5), ax_lax_div(s, y, x));
    case AX_P_CBRT:
        return ax_lax_div(s, C(1.0 / 3.0), ax_lax_mul(s, y, y));
    case AX_P_ERF:
    case AX_P_ERFC: {
        ax_array *d = ax_lax_mul(s, C(M_2_SQRTPI), U(EXP, ax_lax_neg(s, ax_lax_mul(s, x, x))));
        return prim == AX_P_ERF ? d : ax_lax_neg(s, d);
    }
    case AX_P_ERF_INV:
        return ax_lax_mul(s, C(sqrt(M_PI) / 2.0), U(EXP, ax_lax_mul(s, y, y)));
    case AX_P_LGAMMA:
        return U(DIGAMMA, x);
    case AX_P_DIGAMMA:
        return trigamma(s, x);
    case AX_P_SQUARE:
        return ax_lax_mul(s, C(2.0), x);
    case AX_P_INTEGER_POW:
        if (p->k == 0) return C(0.0);
        if (p->k == 1) return C(1.0);
        return ax_lax_mul(s, C((double)p->k), ax_lax_integer_pow(s, x, p->k - 1));
    case AX_P_ABS: {
        /* JAX's convention: the derivative at 0 is 1. */
        ax_array *nonneg = ax_lax_binary(s, AX_P_GE, x, C(0.0));
        return ax_lax_select(s, nonneg, C(1.0), C(-1.0));
    }
    default:
        return ax_error(s->cx, AX_ERR_TYPE, "%s is not differentiable", ax_prim_get(prim)->name);
    }
#undef C
#undef U
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
    ax_array *d = unary_derivative(&s, prim, p, in[0], out[0]);
    if (d && d->ndim && prim == AX_P_ABS) d = ax_lax_broadcast_to(&s, d, in[0]->ndim, in[0]->shape);
    ax_array *t = prim == AX_P_NEG ? ax_lax_neg(&s, tin[0]) : ax_lax_mul(&s, tin[0], d);
    if (finish1(&s, t, out[0], tout)) {
        ax_array_release(out[0]);
        out[0] = NULL;
        return -1;
    }
    return 0;
}

/* Tangent contributions of a binary primitive: t = da * ta + db * tb (NULL terms skipped). */
static ax_array *binary_tangent(ax_scope *s, ax_prim prim, ax_array *x, ax_array *y, ax_array *z,
                                ax_array *tx, ax_array *ty) {
    ax_array *a = NULL, *b = NULL;
#define C(v) ax_lax_scalar_like(s, z, (v))
    switch (prim) {
    case AX_P_ADD:
        a = tx, b = ty;
        break;
    case AX_P_SUB:
        a = tx, b = ty ? ax_lax_neg(s, ty) : NULL;
        break;
    case AX_P_MUL:
        a = tx ? ax_lax_mul(s, tx, y) : NULL;
        b = ty ? ax_lax_mul(s, x, ty) : NULL;
        break;
    case AX_P_DIV:
        a = tx ? ax_lax_div(s, tx, y) : NULL;
        b = ty ? ax_lax_neg(s, ax_lax_mul(s, ty, ax_lax_div(s, z, y))) : NULL;
        break;
    case AX_P_POW: {
        /* d/dx x^y = y x^(y-1); d/dy x^y = log(x) x^y, taken as 0 where x == 0 (as JAX). */
        if (tx)
            a = ax_lax_mul(
                s, tx, ax_lax_mul(s, y, ax_lax_binary(s, AX_P_POW, x, ax_lax_sub(s, y, C(1.0)))));
        if (ty) {
            ax_array *zero = ax_lax_binary(s, AX_P_EQ, x, C(0.0));
            ax_array *safe = ax_lax_select(s, zero, ax_lax_ones_like(s, x), x);
            ax_array *lg =
                ax_lax_select(s, zero, ax_lax_zeros_like(s, x), ax_lax_unary(s, AX_P_LOG, safe));
            b = ax_lax_mul(s, ty, ax_lax_mul(s, lg, z));
        }
        break;
    }
    case AX_P_MAX:
    case AX_P_MIN: {
        /* The derivative flows to the operand the result came from (x on ties). */
        ax_array *pick_x = ax_lax_binary(s, prim == AX_P_MAX ? AX_P_GE : AX_P_LE, x, y);
        ax_array *zx = tx ? tx : ax_lax_zeros_like(s, z), *zy = ty ? ty : ax_lax_zeros_like(s, z);
        zx = ax_lax_broadcast_to(s, zx, z->ndim, z->shape);
        zy = ax_lax_broadcast_to(s, zy, z->ndim, z->shape);
        pick_x = ax_lax_broadcast_to(s, pick_x, z->ndim, z->shape);
        a = ax_lax_select(s, pick_x, zx, zy);
        break;
    }
    case AX_P_ATAN2: {
        ax_array *den = ax_lax_add(s, ax_lax_mul(s, x, x), ax_lax_mul(s, y, y));
        if (tx) a = ax_lax_mul(s, tx, ax_lax_div(s, y, den));
        if (ty) b = ax_lax_neg(s, ax_lax_mul(s, ty, ax_lax_div(s, x, den)));
        break;
    }
    case AX_P_REM:
        /* rem(x, y) = x - y * trunc(x / y) */
        a = tx;
        if (ty) {
            ax_array *q = ax_lax_div(s, x, y);
            ax_array *tr = ax_lax_mul(s, ax_lax_unary(s, AX_P_SIGN, q),
                                      ax_lax_unary(s, AX_P_FLOOR, ax_lax_unary(s, AX_P_ABS, q)));
            b = ax_lax_neg(s, ax_lax_mul(s, ty, tr));
        }
        break;
    case AX_P_MOD:
        a = tx;
        if (ty)
            b = ax_lax_neg(s, ax_lax_mul(s, ty, ax_lax_unary(s, AX_P_FLOOR, ax_lax_div(s, x, y))));
        break;
    case AX_P_FLOOR_DIV:
    case AX_P_NEXTAFTER:
        return NULL;
    default:
        return ax_error(s->cx, AX_ERR_TYPE, "%s is not differentiable", ax_prim_get(prim)->name);
    }
#undef C
    if (a) a = ax_lax_broadcast_to(s, a, z->ndim, z->shape);
    if (b) b = ax_lax_broadcast_to(s, b, z->ndim, z->shape);
    return a && b ? ax_lax_add(s, a, b) : a ? a : b;
}

int ax_jvp_binary(ax_ctx *cx, ax_prim prim, const ax_params *p, int nin, ax_array **in,
                  ax_array **tin, ax_array **out, ax_array **tout) {
    (void)nin;
    if (primal(cx, prim, p, 2, in, out)) return -1;
    if (!tin[0] && !tin[1]) {
        *tout = NULL;
        return 0;
    }
    ax_scope s;
    ax_scope_begin(&s, cx);
    ax_array *t = binary_tangent(&s, prim, in[0], in[1], out[0], tin[0], tin[1]);
    if (finish1(&s, t, out[0], tout)) {
        ax_array_release(out[0]);
        out[0] = NULL;
        return -1;
    }
    return 0;
}

/* Which inputs of a linear primitive carry tangents (the others are indices, predicates,
 * start positions: passed through as primal values). */
static bool is_linear_input(ax_prim prim, const ax_params *p, int i) {
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

/* x, with the axes in `axes` moved to the end and flattened into one: (rest..., n). */
static ax_array *axes_last_flat(ax_scope *s, ax_array *x, int naxes, const int *axes) {
    int perm[AX_MAX_RANK], k = 0;
    bool reduced[AX_MAX_RANK] = {0};
    int64_t shape[AX_MAX_RANK], n = 1;
    for (int i = 0; i < naxes; i++) reduced[axes[i]] = true;
    for (int i = 0; i < x->ndim; i++)
        if (!reduced[i]) shape[k] = x->shape[i], perm[k++] = i;
    for (int i = 0; i < naxes; i++) perm[k + i] = axes[i], n *= x->shape[axes[i]];
    shape[k] = n;
    return ax_lax_reshape(s, ax_lax_transpose(s, x, perm), k + 1, shape);
}

/* Products of all elements but one, along the last axis, without dividing: exclusive
 * products from the left times exclusive products from the right. */
static ax_array *products_of_others(ax_scope *s, ax_array *x) {
    int last = x->ndim - 1;
    ax_params left = {.ndim = x->ndim}, right = {.ndim = x->ndim};
    left.lo[last] = 1, left.hi[last] = -1;
    right.lo[last] = -1, right.hi[last] = 1;
    ax_array *one = ax_lax_scalar_like(s, x, 1.0);
    ax_params cum = {.naxes = 1, .axes = {last}};
    ax_array *l = ax_lax_bind(
        s, AX_P_CUMPROD, 1,
        (ax_array *[]){ax_lax_bind(s, AX_P_PAD, 2, (ax_array *[]){x, one}, &left)}, &cum);
    cum.flag = 1;
    ax_array *r = ax_lax_bind(
        s, AX_P_CUMPROD, 1,
        (ax_array *[]){ax_lax_bind(s, AX_P_PAD, 2, (ax_array *[]){x, one}, &right)}, &cum);
    return ax_lax_mul(s, l, r);
}

static ax_array *reduce_prod_tangent(ax_scope *s, const ax_params *p, ax_array *x, ax_array *t,
                                     ax_array *out) {
    ax_array *xf = axes_last_flat(s, x, p->naxes, p->axes);
    ax_array *tf = axes_last_flat(s, t, p->naxes, p->axes);
    if (!xf || !tf) return NULL;
    int last = xf->ndim - 1;
    ax_array *r =
        ax_lax_reduce(s, AX_P_REDUCE_SUM, ax_lax_mul(s, tf, products_of_others(s, xf)), 1, &last);
    return ax_lax_reshape(s, r, out->ndim, out->shape);
}

/* The positions where x equals the reduced value share its tangent equally (as JAX). */
static ax_array *reduce_extremum_tangent(ax_scope *s, const ax_params *p, ax_array *x, ax_array *t,
                                         ax_array *out) {
    int kept[AX_MAX_RANK], k = 0;
    bool reduced[AX_MAX_RANK] = {0};
    for (int i = 0; i < p->naxes; i++) reduced[p->axes[i]] = true;
    for (int i = 0; i < x->ndim; i++)
        if (!reduced[i]) kept[k++] = i;
    ax_array *b = ax_lax_broadcast_in_dim(s, out, x->ndim, x->shape, kept);
    ax_array *mask = ax_lax_convert(s, ax_lax_binary(s, AX_P_EQ, x, b), x->dtype);
    ax_array *count = ax_lax_reduce(s, AX_P_REDUCE_SUM, mask, p->naxes, p->axes);
    ax_array *num = ax_lax_reduce(s, AX_P_REDUCE_SUM, ax_lax_mul(s, t, mask), p->naxes, p->axes);
    return ax_lax_div(s, num, count);
}

static ax_array *clamp_tangent(ax_scope *s, ax_array **in, ax_array **tin, ax_array *out) {
    ax_array *lo = ax_lax_broadcast_to(s, in[0], out->ndim, out->shape);
    ax_array *x = ax_lax_broadcast_to(s, in[1], out->ndim, out->shape);
    ax_array *hi = ax_lax_broadcast_to(s, in[2], out->ndim, out->shape);
    ax_array *zero = ax_lax_zeros_like(s, out), *t = NULL;
    if (tin[1]) {
        ax_array *inside = ax_lax_binary(s, AX_P_AND, ax_lax_binary(s, AX_P_GT, x, lo),
                                         ax_lax_binary(s, AX_P_LT, x, hi));
        t = ax_lax_select(s, inside, ax_lax_broadcast_to(s, tin[1], out->ndim, out->shape), zero);
    }
    if (tin[0]) {
        ax_array *below =
            ax_lax_select(s, ax_lax_binary(s, AX_P_GT, lo, x),
                          ax_lax_broadcast_to(s, tin[0], out->ndim, out->shape), zero);
        t = t ? ax_lax_add(s, t, below) : below;
    }
    if (tin[2]) {
        ax_array *above =
            ax_lax_select(s, ax_lax_binary(s, AX_P_LT, hi, x),
                          ax_lax_broadcast_to(s, tin[2], out->ndim, out->shape), zero);
        t = t ? ax_lax_add(s, t, above) : above;
    }
    return t;
}

static ax_array *dot_tangent(ax_scope *s, const ax_params *p, ax_array **in, ax_array **tin) {
    ax_array *a = tin[0] ? ax_lax_dot_general(s, tin[0], in[1], &p->dot) : NULL;
    ax_array *b = tin[1] ? ax_lax_dot_general(s, in[0], tin[1], &p->dot) : NULL;
    return a && b ? ax_lax_add(s, a, b) : a ? a : b;
}

/* cumprod: out_i * cumsum(t / x)_i. (Exact away from zeros of x.) */
static ax_array *cumprod_tangent(ax_scope *s, const ax_params *p, ax_array *x, ax_array *t,
                                 ax_array *out) {
    ax_params cum = {.naxes = 1, .axes = {p->axes[0]}, .flag = p->flag};
    ax_array *q = ax_lax_div(s, t, x);
    return ax_lax_mul(s, out, ax_lax_bind(s, AX_P_CUMSUM, 1, &q, &cum));
}

/* Gathers t along `axis` at positions idx (same shape as t): take_along_axis. */
static ax_array *take_along_axis(ax_scope *s, ax_array *t, ax_array *idx, int axis) {
    int n = t->ndim;
    int64_t shape[AX_MAX_RANK];
    memcpy(shape, t->shape, (size_t)n * sizeof *shape);
    shape[n] = 1;
    ax_array *cols[AX_MAX_RANK];
    ax_array *idx32 = ax_lax_convert(s, idx, AX_I32);
    for (int d = 0; d < n; d++) {
        ax_array *c;
        if (d == axis) {
            c = idx32;
        } else {
            ax_params io = {.dtype = AX_I32, .ndim = n, .naxes = 1, .axes = {d}};
            memcpy(io.shape, t->shape, (size_t)n * sizeof *shape);
            c = ax_lax_bind(s, AX_P_IOTA, 0, NULL, &io);
        }
        cols[d] = ax_lax_reshape(s, c, n + 1, shape);
    }
    ax_params cat = {.naxes = 1, .axes = {n}};
    ax_array *full = ax_lax_bind(s, AX_P_CONCATENATE, n, cols, &cat);
    ax_params g = {.naxes = n};
    for (int d = 0; d < n; d++) g.axes[d] = d;
    return ax_lax_bind(s, AX_P_GATHER, 2, (ax_array *[]){t, full}, &g);
}

static ax_array *sort_tangent(ax_scope *s, const ax_params *p, ax_array *x, ax_array *t) {
    ax_params as = *p;
    as.dtype = AX_I32;
    ax_array *idx = ax_lax_bind(s, AX_P_ARGSORT, 1, &x, &as);
    return take_along_axis(s, t, idx, p->axes[0]);
}

/* cummax/cummin: each output takes the tangent of the element the running extremum came from
 * (the last position where x equals it). */
static ax_array *cumulative_extremum_tangent(ax_scope *s, const ax_params *p, ax_array *x,
                                             ax_array *t, ax_array *out) {
    int axis = p->axes[0];
    ax_params io = {.dtype = AX_I32, .ndim = x->ndim, .naxes = 1, .axes = {axis}};
    memcpy(io.shape, x->shape, (size_t)x->ndim * sizeof *io.shape);
    ax_array *pos = ax_lax_bind(s, AX_P_IOTA, 0, NULL, &io);
    if (p->flag) {
        /* scanning from the end: the last position in scan order is the smallest index */
        ax_array *n1 = ax_lax_scalar_like(s, pos, (double)(x->shape[axis] - 1));
        pos = ax_lax_sub(s, n1, pos);
    }
    ax_array *hit = ax_lax_binary(s, AX_P_EQ, x, out);
    ax_array *marked = ax_lax_select(s, hit, pos, ax_lax_zeros_like(s, pos));
    ax_params cm = {.naxes = 1, .axes = {axis}, .flag = p->flag};
    ax_array *src = ax_lax_bind(s, AX_P_CUMMAX, 1, &marked, &cm);
    if (p->flag) src = ax_lax_sub(s, ax_lax_scalar_like(s, pos, (double)(x->shape[axis] - 1)), src);
    return take_along_axis(s, t, src, axis);
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
    case AX_P_CLAMP:
        return clamp_tangent(s, in, tin, out);
    case AX_P_DOT_GENERAL:
        return dot_tangent(s, p, in, tin);
    case AX_P_TRIANGULAR_SOLVE:
        return triangular_solve_tangent(s, p, in, tin, out);
    case AX_P_CHOLESKY:
        return tin[0] ? cholesky_tangent(s, tin[0], out) : NULL;
    case AX_P_REDUCE_PROD:
        return tin[0] ? reduce_prod_tangent(s, p, in[0], tin[0], out) : NULL;
    case AX_P_REDUCE_MAX:
    case AX_P_REDUCE_MIN:
        return tin[0] ? reduce_extremum_tangent(s, p, in[0], tin[0], out) : NULL;
    case AX_P_CUMPROD:
        return tin[0] ? cumprod_tangent(s, p, in[0], tin[0], out) : NULL;
    case AX_P_SORT:
        return tin[0] ? sort_tangent(s, p, in[0], tin[0]) : NULL;
    case AX_P_CUMMAX:
    case AX_P_CUMMIN:
        return tin[0] ? cumulative_extremum_tangent(s, p, in[0], tin[0], out) : NULL;
    default:
        return ax_error(s->cx, AX_ERR_TYPE, "%s is not differentiable", ax_prim_get(prim)->name);
    }
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

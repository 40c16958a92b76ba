/* The NumPy layer's operators: JAX's type promotion (with weak types), NumPy broadcasting,
 * arithmetic with Python's semantics for / // % **, comparisons and matmul. Each operation
 * ends in primitives bound through compiler/lax.h. */
#include "np.h"

#include <string.h>

/* ---------------------------------------------------------------- dtypes */

ax_dtype ax_np_default_float(const ax_ctx *cx) {
    return ax_dtype_default_float(cx->x64);
}
ax_dtype ax_np_default_int(const ax_ctx *cx) {
    return ax_dtype_default_int(cx->x64);
}

/* An abstract tracer has no buffer; a concrete one (eager grad) carries its value. */
bool ax_np_is_concrete(const ax_array *x) {
    return x->buf != NULL;
}

ax_dtype ax_np_result_type(int n, ax_array *const *xs, bool *weak) {
    ax_dtype t = xs[0]->dtype;
    bool w = xs[0]->weak;
    for (int i = 1; i < n; i++) t = ax_dtype_promote(t, w, xs[i]->dtype, xs[i]->weak, &w);
    if (weak) *weak = w;
    return t;
}

ax_array *ax_np_astype(ax_ctx *cx, ax_array *x, ax_dtype to, bool weak) {
    if (!x) return NULL;
    if (x->dtype == to && x->weak == weak) return ax_array_retain(x);
    ax_params p = {.dtype = to, .weak = weak};
    return ax_bind1(cx, AX_P_CONVERT, 1, &x, &p);
}

ax_array *ax_np_to_inexact(ax_ctx *cx, ax_array *x) {
    if (!x) return NULL;
    if (ax_dtype_is_float(x->dtype)) return ax_array_retain(x);
    return ax_np_astype(cx, x, ax_np_default_float(cx), x->weak);
}

ax_array *ax_np_to_bool(ax_ctx *cx, ax_array *x) {
    return ax_np_astype(cx, x, AX_BOOL, false);
}

/* x converted to dtype t inside a scope (x itself when it already has dtype t). Only the dtype
 * matters to elementwise primitives: their result is weak when all value operands are. */
static ax_array *promote_to(ax_scope *s, ax_array *x, ax_dtype t, bool weak) {
    if (!x || x->dtype == t) return x;
    return ax_scope_own(s, ax_np_astype(s->cx, x, t, weak));
}

/* ---------------------------------------------------------------- broadcasting */

static void *broadcast_error(ax_ctx *cx, const char *name, const ax_array *a, const ax_array *b) {
    char ta[160], tb[160];
    ax_array_type_format(ta, sizeof ta, a);
    ax_array_type_format(tb, sizeof tb, b);
    return ax_error(cx, AX_ERR_SHAPE, "cannot %s %s and %s (shapes do not broadcast)", name, ta,
                    tb);
}

bool ax_np_broadcast_shapes(int n1, const int64_t *s1, int n2, const int64_t *s2, int *nout,
                            int64_t *out) {
    int64_t a[AX_MAX_RANK], b[AX_MAX_RANK];
    memcpy(a, s1, (size_t)n1 * sizeof *a);
    memcpy(b, s2, (size_t)n2 * sizeof *b);
    return ax_shape_broadcast(n1, a, n2, b, nout, out);
}

ax_array *ax_np_broadcast_to(ax_ctx *cx, ax_array *x, int ndim, const int64_t *shape) {
    if (!x) return NULL;
    bool ok = x->ndim <= ndim;
    for (int i = 0; ok && i < x->ndim; i++) {
        int64_t have = x->shape[i], want = shape[ndim - x->ndim + i];
        ok = have == want || have == 1;
    }
    if (!ok) {
        char tx[160], ts[160];
        ax_array_type_format(tx, sizeof tx, x);
        ax_shape_format(ts, sizeof ts, ndim, shape);
        return ax_error(cx, AX_ERR_SHAPE, "cannot broadcast %s to shape %s", tx, ts);
    }
    ax_scope s;
    ax_scope_begin(&s, cx);
    ax_array *r = ax_scope_keep(&s, ax_lax_broadcast_to(&s, x, ndim, shape));
    ax_scope_end(&s);
    return r;
}

/* Arithmetic that NumPy does not define on booleans (add and multiply are or and and). */
static bool bool_arithmetic(ax_prim p) {
    return p == AX_P_SUB || p == AX_P_DIV || p == AX_P_FLOOR_DIV || p == AX_P_REM ||
           p == AX_P_MOD || p == AX_P_POW;
}

static void *bool_error(ax_ctx *cx, ax_prim p, const char *name, const ax_array *a,
                        const ax_array *b) {
    char ta[160], tb[160];
    ax_array_type_format(ta, sizeof ta, a);
    ax_array_type_format(tb, sizeof tb, b);
    return ax_error(cx, AX_ERR_TYPE, "cannot %s %s and %s (%s)", name, ta, tb,
                    p == AX_P_SUB ? "booleans do not subtract: use ^ or logical_xor"
                                  : "not defined for booleans: convert with astype(i32)");
}

/* Converts a and b to dtype t and binds the binary primitive p, broadcasting both to their
 * common shape unless one is rank 0 (which the primitives accept as is). */
static ax_array *bind_binary(ax_ctx *cx, ax_prim p, const char *name, ax_array *a, ax_array *b,
                             ax_dtype t, bool weak) {
    int nd;
    int64_t shape[AX_MAX_RANK];
    if (!ax_shape_broadcast(a->ndim, a->shape, b->ndim, b->shape, &nd, shape))
        return broadcast_error(cx, name, a, b);
    if (t == AX_BOOL && bool_arithmetic(p)) return bool_error(cx, p, name, a, b);
    ax_scope s;
    ax_scope_begin(&s, cx);
    ax_array *x = promote_to(&s, a, t, weak), *y = promote_to(&s, b, t, weak);
    if (x && y && x->ndim && y->ndim) {
        x = ax_lax_broadcast_to(&s, x, nd, shape);
        y = ax_lax_broadcast_to(&s, y, nd, shape);
    }
    ax_array *r = ax_scope_keep(&s, ax_lax_binary(&s, p, x, y));
    ax_scope_end(&s);
    return r;
}

ax_array *ax_np_binary(ax_ctx *cx, ax_prim p, const char *name, ax_array *a, ax_array *b) {
    if (!a || !b) return NULL;
    bool weak;
    ax_dtype t = ax_dtype_promote(a->dtype, a->weak, b->dtype, b->weak, &weak);
    return bind_binary(cx, p, name, a, b, t, weak);
}

ax_array *ax_np_binary_inexact(ax_ctx *cx, ax_prim p, const char *name, ax_array *a, ax_array *b) {
    if (!a || !b) return NULL;
    bool weak;
    ax_dtype t = ax_dtype_promote(a->dtype, a->weak, b->dtype, b->weak, &weak);
    if (!ax_dtype_is_float(t)) t = ax_np_default_float(cx);
    return bind_binary(cx, p, name, a, b, t, weak);
}

ax_array *ax_np_logical(ax_ctx *cx, ax_prim p, const char *name, ax_array *a, ax_array *b) {
    if (!a || !b) return NULL;
    ax_array *x = ax_np_to_bool(cx, a), *y = x ? ax_np_to_bool(cx, b) : NULL;
    ax_array *r = y ? bind_binary(cx, p, name, x, y, AX_BOOL, false) : NULL;
    ax_array_release(x);
    ax_array_release(y);
    return r;
}

/* ---------------------------------------------------------------- unary */

/* Float-only primitives: JAX first promotes integer and bool inputs to the default float. */
static bool needs_float(ax_prim p) {
    static const ax_prim float_only[] = {
        AX_P_EXP,  AX_P_EXP2,  AX_P_LOG,     AX_P_LOG1P,  AX_P_EXPM1,   AX_P_SIN,
        AX_P_COS,  AX_P_TAN,   AX_P_ASIN,    AX_P_ACOS,   AX_P_ATAN,    AX_P_SINH,
        AX_P_COSH, AX_P_TANH,  AX_P_ASINH,   AX_P_ACOSH,  AX_P_ATANH,   AX_P_LOGISTIC,
        AX_P_SQRT, AX_P_RSQRT, AX_P_CBRT,    AX_P_FLOOR,  AX_P_CEIL,    AX_P_ROUND,
        AX_P_ERF,  AX_P_ERFC,  AX_P_ERF_INV, AX_P_LGAMMA, AX_P_DIGAMMA,
    };
    for (size_t i = 0; i < sizeof float_only / sizeof *float_only; i++)
        if (float_only[i] == p) return true;
    return false;
}

ax_array *ax_np_unary(ax_ctx *cx, ax_prim p, ax_array *x) {
    if (!x) return NULL;
    if (needs_float(p)) {
        ax_array *f = ax_np_to_inexact(cx, x);
        ax_array *r = f ? ax_bind_unary(cx, p, f) : NULL;
        ax_array_release(f);
        return r;
    }
    return ax_bind_unary(cx, p, x);
}

ax_array *ax_np_unop(ax_ctx *cx, ax_unop op, ax_array *a) {
    if (!a) return NULL;
    char ta[160];
    ax_array_type_format(ta, sizeof ta, a);
    switch (op) {
    case AX_OP_POS:
        return ax_array_retain(a);
    case AX_OP_NEG:
        if (a->dtype == AX_BOOL)
            return ax_error(cx, AX_ERR_TYPE,
                            "cannot negate %s: use ~x or logical_not(x) on booleans", ta);
        return ax_bind_unary(cx, AX_P_NEG, a);
    case AX_OP_INVERT:
        if (ax_dtype_is_float(a->dtype))
            return ax_error(cx, AX_ERR_TYPE, "~ needs a bool or integer array, got %s", ta);
        return ax_bind_unary(cx, AX_P_NOT, a);
    }
    return ax_error(cx, AX_ERR_TYPE, "unknown unary operator");
}

/* ---------------------------------------------------------------- power */

/* A concrete integer scalar exponent (x ** 2): JAX binds integer_pow for it, which is exact
 * and differentiates cleanly at 0. */
static bool static_int_exponent(const ax_array *y, int64_t *k) {
    if (y->ndim != 0 || y->tracer || !y->buf) return false;
    if (!ax_dtype_is_int(y->dtype)) return false;
    *k = ax_array_get_i64(y, 0);
    return true;
}

ax_array *ax_np_power(ax_ctx *cx, ax_array *x, ax_array *y) {
    if (!x || !y) return NULL;
    int64_t k;
    if (static_int_exponent(y, &k)) {
        if (k < 0 && !ax_dtype_is_float(x->dtype))
            return ax_error(cx, AX_ERR_VALUE,
                            "integers to negative integer powers are not allowed (%lld)",
                            (long long)k);
        ax_array *base = x->dtype == AX_BOOL ? ax_np_astype(cx, x, ax_np_default_int(cx), x->weak)
                                             : ax_array_retain(x);
        ax_params p = {.k = k};
        ax_array *r = base ? ax_bind1(cx, AX_P_INTEGER_POW, 1, &base, &p) : NULL;
        ax_array_release(base);
        return r;
    }
    bool weak;
    ax_dtype t = ax_dtype_promote(x->dtype, x->weak, y->dtype, y->weak, &weak);
    if (t == AX_BOOL) t = ax_np_default_int(cx);
    return bind_binary(cx, AX_P_POW, "power", x, y, t, weak);
}

/* ---------------------------------------------------------------- where, clip */

ax_array *ax_np_where(ax_ctx *cx, ax_array *cond, ax_array *x, ax_array *y) {
    if (!cond || !x || !y) return NULL;
    int nd, nd2;
    int64_t shape[AX_MAX_RANK], shape2[AX_MAX_RANK];
    if (!ax_shape_broadcast(x->ndim, x->shape, y->ndim, y->shape, &nd, shape))
        return broadcast_error(cx, "where", x, y);
    if (!ax_shape_broadcast(cond->ndim, cond->shape, nd, shape, &nd2, shape2)) {
        char tc[160], ts[160];
        ax_array_type_format(tc, sizeof tc, cond);
        ax_shape_format(ts, sizeof ts, nd, shape);
        return ax_error(cx, AX_ERR_SHAPE,
                        "cannot select with condition %s between values of shape %s (shapes do "
                        "not broadcast)",
                        tc, ts);
    }
    bool weak;
    ax_dtype t = ax_dtype_promote(x->dtype, x->weak, y->dtype, y->weak, &weak);
    ax_scope s;
    ax_scope_begin(&s, cx);
    ax_array *c = ax_scope_own(&s, ax_np_to_bool(cx, cond));
    ax_array *a = promote_to(&s, x, t, weak), *b = promote_to(&s, y, t, weak);
    c = ax_lax_broadcast_to(&s, c, nd2, shape2);
    a = ax_lax_broadcast_to(&s, a, nd2, shape2);
    b = ax_lax_broadcast_to(&s, b, nd2, shape2);
    ax_array *r = ax_scope_keep(&s, ax_lax_select(&s, c, a, b));
    ax_scope_end(&s);
    return r;
}

ax_array *ax_np_clip(ax_ctx *cx, ax_array *x, ax_array *lo, ax_array *hi) {
    if (!x) return NULL;
    ax_array *r = ax_array_retain(x);
    if (lo) {
        ax_array *t = ax_np_binary(cx, AX_P_MAX, "clip", r, lo);
        ax_array_release(r);
        r = t;
    }
    if (hi && r) {
        ax_array *t = ax_np_binary(cx, AX_P_MIN, "clip", r, hi);
        ax_array_release(r);
        r = t;
    }
    return r;
}

/* ---------------------------------------------------------------- matmul, dot */

static void *contract_error(ax_ctx *cx, const char *name, const ax_array *a, const ax_array *b,
                            int64_t ka, int64_t kb) {
    char ta[160], tb[160];
    ax_array_type_format(ta, sizeof ta, a);
    ax_array_type_format(tb, sizeof tb, b);
    return ax_error(cx, AX_ERR_SHAPE,
                    "cannot %s %s and %s (contracting dimensions %lld and %lld differ)", name, ta,
                    tb, (long long)ka, (long long)kb);
}

/* dot_general of a and b (promoted to one dtype) contracting a's axis ca with b's axis cb,
 * with the first nbatch axes of both as batch dimensions. */
static ax_array *contract(ax_ctx *cx, ax_array *a, ax_array *b, int ca, int cb, int nbatch) {
    bool weak;
    ax_dtype t = ax_dtype_promote(a->dtype, a->weak, b->dtype, b->weak, &weak);
    ax_dot_dims d = {.ncontract = 1, .nbatch = nbatch};
    d.lhs_contract[0] = ca;
    d.rhs_contract[0] = cb;
    for (int i = 0; i < nbatch; i++) d.lhs_batch[i] = d.rhs_batch[i] = i;
    ax_scope s;
    ax_scope_begin(&s, cx);
    ax_array *x = promote_to(&s, a, t, weak), *y = promote_to(&s, b, t, weak);
    ax_array *r = ax_scope_keep(&s, x && y ? ax_lax_dot_general(&s, x, y, &d) : NULL);
    ax_scope_end(&s);
    return r;
}

/* Batched matmul: both operands have rank >= 2; their batch dimensions broadcast. */
static ax_array *matmul_batched(ax_ctx *cx, ax_array *a, ax_array *b) {
    int na = a->ndim - 2, nb = b->ndim - 2, nc;
    int64_t batch[AX_MAX_RANK], sa[AX_MAX_RANK], sb[AX_MAX_RANK];
    if (!ax_shape_broadcast(na, a->shape, nb, b->shape, &nc, batch)) {
        char ta[160], tb[160];
        ax_array_type_format(ta, sizeof ta, a);
        ax_array_type_format(tb, sizeof tb, b);
        return ax_error(cx, AX_ERR_SHAPE,
                        "cannot matmul %s and %s (batch dimensions do not broadcast)", ta, tb);
    }
    memcpy(sa, batch, (size_t)nc * sizeof *batch);
    memcpy(sb, batch, (size_t)nc * sizeof *batch);
    sa[nc] = a->shape[na];
    sa[nc + 1] = a->shape[na + 1];
    sb[nc] = b->shape[nb];
    sb[nc + 1] = b->shape[nb + 1];
    ax_array *x = ax_np_broadcast_to(cx, a, nc + 2, sa);
    ax_array *y = x ? ax_np_broadcast_to(cx, b, nc + 2, sb) : NULL;
    ax_array *r = y ? contract(cx, x, y, nc + 1, nc, nc) : NULL;
    ax_array_release(x);
    ax_array_release(y);
    return r;
}

ax_array *ax_np_matmul(ax_ctx *cx, ax_array *a, ax_array *b) {
    if (!a || !b) return NULL;
    if (a->ndim == 0 || b->ndim == 0) {
        char ta[160], tb[160];
        ax_array_type_format(ta, sizeof ta, a);
        ax_array_type_format(tb, sizeof tb, b);
        return ax_error(cx, AX_ERR_VALUE,
                        "matmul needs arrays of rank 1 or more, got %s and %s (use * to "
                        "multiply by a scalar)",
                        ta, tb);
    }
    int64_t ka = a->shape[a->ndim - 1];
    int cb = b->ndim == 1 ? 0 : b->ndim - 2;
    if (ka != b->shape[cb]) return contract_error(cx, "matmul", a, b, ka, b->shape[cb]);
    /* (…, m, k) @ (k,) and (…, m, k) @ (k, n): no batch dimensions needed. (k,) @ (…, k, n)
     * contracts into b's free dimensions in the order NumPy gives. */
    if (b->ndim <= 2 || a->ndim == 1) return contract(cx, a, b, a->ndim - 1, cb, 0);
    return matmul_batched(cx, a, b);
}

ax_array *ax_np_dot(ax_ctx *cx, ax_array *a, ax_array *b) {
    if (!a || !b) return NULL;
    if (a->ndim == 0 || b->ndim == 0) return ax_np_binary(cx, AX_P_MUL, "dot", a, b);
    int64_t ka = a->shape[a->ndim - 1];
    int cb = b->ndim == 1 ? 0 : b->ndim - 2;
    if (ka != b->shape[cb]) return contract_error(cx, "dot", a, b, ka, b->shape[cb]);
    return contract(cx, a, b, a->ndim - 1, cb, 0);
}

/* ---------------------------------------------------------------- operators */

/* Bitwise operations: bools and integers only. */
static ax_array *bitwise(ax_ctx *cx, ax_prim p, const char *name, ax_array *a, ax_array *b) {
    bool weak;
    ax_dtype t = ax_dtype_promote(a->dtype, a->weak, b->dtype, b->weak, &weak);
    if (ax_dtype_is_float(t)) {
        char ta[160], tb[160];
        ax_array_type_format(ta, sizeof ta, a);
        ax_array_type_format(tb, sizeof tb, b);
        return ax_error(cx, AX_ERR_TYPE, "cannot %s %s and %s (needs bool or integer arrays)", name,
                        ta, tb);
    }
    if (p == AX_P_SHR_ARITH && !ax_dtype_is_signed(t)) p = AX_P_SHR_LOGICAL;
    return bind_binary(cx, p, name, a, b, t, weak);
}

ax_array *ax_np_binop(ax_ctx *cx, ax_binop op, ax_array *a, ax_array *b) {
    if (!a || !b) return NULL;
    switch (op) {
    case AX_OP_ADD:
        return ax_np_binary(cx, AX_P_ADD, "add", a, b);
    case AX_OP_SUB:
        return ax_np_binary(cx, AX_P_SUB, "subtract", a, b);
    case AX_OP_MUL:
        return ax_np_binary(cx, AX_P_MUL, "multiply", a, b);
    case AX_OP_DIV:
        return ax_np_binary_inexact(cx, AX_P_DIV, "divide", a, b);
    case AX_OP_FLOORDIV:
        return ax_np_binary(cx, AX_P_FLOOR_DIV, "floor_divide", a, b);
    case AX_OP_MOD:
        return ax_np_binary(cx, AX_P_MOD, "mod", a, b);
    case AX_OP_POW:
        return ax_np_power(cx, a, b);
    case AX_OP_MATMUL:
        return ax_np_matmul(cx, a, b);
    case AX_OP_BITAND:
        return bitwise(cx, AX_P_AND, "bitwise_and", a, b);
    case AX_OP_BITOR:
        return bitwise(cx, AX_P_OR, "bitwise_or", a, b);
    case AX_OP_BITXOR:
        return bitwise(cx, AX_P_XOR, "bitwise_xor", a, b);
    case AX_OP_LSHIFT:
        return bitwise(cx, AX_P_SHL, "left_shift", a, b);
    case AX_OP_RSHIFT:
        return bitwise(cx, AX_P_SHR_ARITH, "right_shift", a, b);
    }
    return ax_error(cx, AX_ERR_TYPE, "unknown binary operator");
}

ax_array *ax_np_compare(ax_ctx *cx, ax_cmpop op, ax_array *a, ax_array *b) {
    if (!a || !b) return NULL;
    static const ax_prim prims[] = {
        [AX_CMP_LT] = AX_P_LT, [AX_CMP_LE] = AX_P_LE, [AX_CMP_GT] = AX_P_GT,
        [AX_CMP_GE] = AX_P_GE, [AX_CMP_EQ] = AX_P_EQ, [AX_CMP_NE] = AX_P_NE};
    if (op > AX_CMP_NE)
        return ax_error(cx, AX_ERR_TYPE, "'in' and 'is' do not compare arrays elementwise");
    return ax_np_binary(cx, prims[op], "compare", a, b);
}

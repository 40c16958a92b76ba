/* Elementwise builtins: exp, sin, maximum, where, clip, isnan, logical_and, ... */
#include "builtins_lib.h"

#include <math.h>
#include <stdlib.h>

#include "pytree.h"

static const char *fname_of(ax_value *self) {
    return self->builtin->name;
}

/* The single array argument `x` of f(x). */
static ax_array *one_array(ax_interp *in, ax_value *self, const ax_args *args) {
    static const char *const names[] = {"x", NULL};
    ax_value *v[1];
    const char *f = fname_of(self);
    if (!ax_bi_parse(in, args, f, names, 1, v) || !ax_bi_required(in, v[0], f, "x")) return NULL;
    return ax_np_asarray(in, v[0], f);
}

static ax_value *unary(ax_interp *in, ax_value *self, const ax_args *args, ax_prim p) {
    ax_array *x = one_array(in, self, args);
    ax_array *r = ax_np_unary(in->cx, p, x);
    ax_array_release(x);
    return ax_np_wrap_take(in, r);
}

#define DEF_UNARY(cname, prim)                                                                     \
    static ax_value *cname(ax_interp *in, ax_value *self, const ax_args *args) {                   \
        return unary(in, self, args, prim);                                                        \
    }

DEF_UNARY(bi_exp, AX_P_EXP)
DEF_UNARY(bi_exp2, AX_P_EXP2)
DEF_UNARY(bi_log, AX_P_LOG)
DEF_UNARY(bi_log1p, AX_P_LOG1P)
DEF_UNARY(bi_expm1, AX_P_EXPM1)
DEF_UNARY(bi_sin, AX_P_SIN)
DEF_UNARY(bi_cos, AX_P_COS)
DEF_UNARY(bi_tan, AX_P_TAN)
DEF_UNARY(bi_arcsin, AX_P_ASIN)
DEF_UNARY(bi_arccos, AX_P_ACOS)
DEF_UNARY(bi_arctan, AX_P_ATAN)
DEF_UNARY(bi_sinh, AX_P_SINH)
DEF_UNARY(bi_cosh, AX_P_COSH)
DEF_UNARY(bi_tanh, AX_P_TANH)
DEF_UNARY(bi_arcsinh, AX_P_ASINH)
DEF_UNARY(bi_arccosh, AX_P_ACOSH)
DEF_UNARY(bi_arctanh, AX_P_ATANH)
DEF_UNARY(bi_logistic, AX_P_LOGISTIC)
DEF_UNARY(bi_sqrt, AX_P_SQRT)
DEF_UNARY(bi_rsqrt, AX_P_RSQRT)
DEF_UNARY(bi_cbrt, AX_P_CBRT)
DEF_UNARY(bi_erf, AX_P_ERF)
DEF_UNARY(bi_erfc, AX_P_ERFC)
DEF_UNARY(bi_erfinv, AX_P_ERF_INV)
DEF_UNARY(bi_lgamma, AX_P_LGAMMA)
DEF_UNARY(bi_digamma, AX_P_DIGAMMA)
DEF_UNARY(bi_sign, AX_P_SIGN)
DEF_UNARY(bi_square, AX_P_SQUARE)

/* Functions that leave integers and bools unchanged (JAX's floor/ceil/trunc/abs of ints). */
static ax_value *float_only(ax_interp *in, ax_value *self, const ax_args *args, ax_prim p) {
    ax_array *x = one_array(in, self, args);
    ax_array *r = x && !ax_dtype_is_float(x->dtype) &&
                          (p != AX_P_ABS || x->dtype == AX_BOOL || ax_dtype_is_unsigned(x->dtype))
                      ? ax_array_retain(x)
                      : ax_np_unary(in->cx, p, x);
    ax_array_release(x);
    return ax_np_wrap_take(in, r);
}

static ax_value *bi_floor(ax_interp *in, ax_value *self, const ax_args *args) {
    return float_only(in, self, args, AX_P_FLOOR);
}
static ax_value *bi_ceil(ax_interp *in, ax_value *self, const ax_args *args) {
    return float_only(in, self, args, AX_P_CEIL);
}
static ax_value *bi_abs(ax_interp *in, ax_value *self, const ax_args *args) {
    return float_only(in, self, args, AX_P_ABS);
}
static ax_value *bi_rint(ax_interp *in, ax_value *self, const ax_args *args) {
    return unary(in, self, args, AX_P_ROUND);
}

static ax_value *bi_negative(ax_interp *in, ax_value *self, const ax_args *args) {
    ax_array *x = one_array(in, self, args);
    ax_array *r = ax_np_unop(in->cx, AX_OP_NEG, x);
    ax_array_release(x);
    return ax_np_wrap_take(in, r);
}

static ax_value *bi_positive(ax_interp *in, ax_value *self, const ax_args *args) {
    return ax_np_wrap_take(in, one_array(in, self, args));
}

static ax_value *bi_invert(ax_interp *in, ax_value *self, const ax_args *args) {
    ax_array *x = one_array(in, self, args);
    ax_array *r = ax_np_unop(in->cx, AX_OP_INVERT, x);
    ax_array_release(x);
    return ax_np_wrap_take(in, r);
}

static ax_value *bi_logical_not(ax_interp *in, ax_value *self, const ax_args *args) {
    ax_array *x = one_array(in, self, args);
    ax_array *b = ax_np_to_bool(in->cx, x);
    ax_array *r = b ? ax_bind_unary(in->cx, AX_P_NOT, b) : NULL;
    ax_array_release(x);
    ax_array_release(b);
    return ax_np_wrap_take(in, r);
}

/* trunc(x): floor for x >= 0, ceil below. */
static ax_value *bi_trunc(ax_interp *in, ax_value *self, const ax_args *args) {
    ax_array *x = one_array(in, self, args);
    if (!x || !ax_dtype_is_float(x->dtype)) return ax_np_wrap_take(in, x);
    ax_ctx *cx = in->cx;
    ax_array *zero = ax_np_scalar(cx, x->dtype, 0);
    ax_array *neg = ax_np_binary(cx, AX_P_LT, "trunc", x, zero);
    ax_array *c = ax_np_unary(cx, AX_P_CEIL, x), *f = ax_np_unary(cx, AX_P_FLOOR, x);
    ax_array *r = ax_np_where(cx, neg, c, f);
    ax_array_release(zero);
    ax_array_release(neg);
    ax_array_release(c);
    ax_array_release(f);
    ax_array_release(x);
    return ax_np_wrap_take(in, r);
}

/* x * factor, in x's float dtype. */
/* x * factor, or x / factor (as JAX's round scales back: 84 / 10 is 8.4 in float32, while
 * 84 * 0.1 is 8.400001). */
static ax_array *scaled(ax_ctx *cx, ax_array *x, double factor, bool divide) {
    ax_array *f = ax_np_scalar(cx, x->dtype, factor);
    ax_array *r = divide ? ax_np_binary(cx, AX_P_DIV, "divide", x, f)
                         : ax_np_binary(cx, AX_P_MUL, "multiply", x, f);
    ax_array_release(f);
    return r;
}

/* round(x, decimals=0): half to even, as NumPy; integers are returned unchanged. */
static ax_value *bi_round(ax_interp *in, ax_value *self, const ax_args *args) {
    static const char *const names[] = {"x", "decimals", NULL};
    ax_value *v[2];
    const char *f = fname_of(self);
    int64_t decimals;
    if (!ax_bi_parse(in, args, f, names, 2, v) || !ax_bi_required(in, v[0], f, "x") ||
        !ax_bi_int(in, v[1], "decimals", 0, &decimals))
        return NULL;
    ax_ctx *cx = in->cx;
    ax_array *x = ax_np_asarray(in, v[0], f);
    if (!x || (!ax_dtype_is_float(x->dtype) && decimals >= 0)) return ax_np_wrap_take(in, x);
    ax_array *xf = ax_np_to_inexact(cx, x);
    ax_array_release(x);
    if (decimals == 0 || !xf) {
        ax_array *r = ax_np_unary(cx, AX_P_ROUND, xf);
        ax_array_release(xf);
        return ax_np_wrap_take(in, r);
    }
    double factor = pow(10.0, (double)decimals);
    ax_array *up = scaled(cx, xf, factor, false);
    ax_array *rounded = ax_np_unary(cx, AX_P_ROUND, up);
    ax_array *r = rounded ? scaled(cx, rounded, factor, true) : NULL;
    ax_array_release(xf);
    ax_array_release(up);
    ax_array_release(rounded);
    return ax_np_wrap_take(in, r);
}

/* log(x) / log(base), as JAX computes log2 and log10. */
static ax_value *log_base(ax_interp *in, ax_value *self, const ax_args *args, double base) {
    ax_ctx *cx = in->cx;
    ax_array *x = one_array(in, self, args);
    ax_array *l = ax_np_unary(cx, AX_P_LOG, x);
    ax_array *b = l ? ax_np_scalar(cx, l->dtype, base) : NULL;
    ax_array *lb = b ? ax_bind_unary(cx, AX_P_LOG, b) : NULL;
    ax_array *r = lb ? ax_bind_binary(cx, AX_P_DIV, l, lb) : NULL;
    ax_array_release(x);
    ax_array_release(l);
    ax_array_release(b);
    ax_array_release(lb);
    return ax_np_wrap_take(in, r);
}

static ax_value *bi_log2(ax_interp *in, ax_value *self, const ax_args *args) {
    return log_base(in, self, args, 2.0);
}
static ax_value *bi_log10(ax_interp *in, ax_value *self, const ax_args *args) {
    return log_base(in, self, args, 10.0);
}

static ax_value *scale_float(ax_interp *in, ax_value *self, const ax_args *args, double k) {
    ax_array *x = one_array(in, self, args);
    ax_array *f = ax_np_to_inexact(in->cx, x);
    ax_array *r = f ? scaled(in->cx, f, k, false) : NULL;
    ax_array_release(x);
    ax_array_release(f);
    return ax_np_wrap_take(in, r);
}

static ax_value *bi_deg2rad(ax_interp *in, ax_value *self, const ax_args *args) {
    return scale_float(in, self, args, M_PI / 180.0);
}
static ax_value *bi_rad2deg(ax_interp *in, ax_value *self, const ax_args *args) {
    return scale_float(in, self, args, 180.0 / M_PI);
}

/* 1 / x in x's dtype (integer division for integers, as jnp.reciprocal). */
static ax_value *bi_reciprocal(ax_interp *in, ax_value *self, const ax_args *args) {
    ax_array *x = one_array(in, self, args);
    ax_array *one = x ? ax_np_scalar(in->cx, x->dtype, 1) : NULL;
    ax_array *r = one ? ax_np_binary(in->cx, AX_P_DIV, "reciprocal", one, x) : NULL;
    ax_array_release(x);
    ax_array_release(one);
    return ax_np_wrap_take(in, r);
}

/* isfinite/isnan/isinf: integers and bools are always finite. */
static ax_value *float_class(ax_interp *in, ax_value *self, const ax_args *args, int which) {
    ax_ctx *cx = in->cx;
    ax_array *x = one_array(in, self, args);
    if (!x) return NULL;
    ax_array *r = NULL;
    if (!ax_dtype_is_float(x->dtype)) {
        ax_array *v = ax_np_scalar(cx, AX_BOOL, which == 0);
        r = ax_np_full(cx, x->ndim, x->shape, v, AX_BOOL);
        ax_array_release(v);
    } else if (which == 0) {
        r = ax_bind_unary(cx, AX_P_IS_FINITE, x);
    } else if (which == 1) {
        r = ax_bind_binary(cx, AX_P_NE, x, x);
    } else {
        ax_array *a = ax_bind_unary(cx, AX_P_ABS, x);
        ax_array *inf = ax_np_scalar(cx, x->dtype, INFINITY);
        r = a && inf ? ax_bind_binary(cx, AX_P_EQ, a, inf) : NULL;
        ax_array_release(a);
        ax_array_release(inf);
    }
    ax_array_release(x);
    return ax_np_wrap_take(in, r);
}

static ax_value *bi_isfinite(ax_interp *in, ax_value *self, const ax_args *args) {
    return float_class(in, self, args, 0);
}
static ax_value *bi_isnan(ax_interp *in, ax_value *self, const ax_args *args) {
    return float_class(in, self, args, 1);
}
static ax_value *bi_isinf(ax_interp *in, ax_value *self, const ax_args *args) {
    return float_class(in, self, args, 2);
}

/* ---------------------------------------------------------------- binary */

typedef ax_array *(*binary_fn)(ax_ctx *cx, ax_prim p, const char *name, ax_array *a, ax_array *b);

static bool two_arrays(ax_interp *in, ax_value *self, const ax_args *args, ax_array **a,
                       ax_array **b) {
    static const char *const names[] = {"x1", "x2", NULL};
    ax_value *v[2];
    const char *f = fname_of(self);
    *a = *b = NULL;
    if (!ax_bi_parse(in, args, f, names, 2, v) || !ax_bi_required(in, v[0], f, "x1") ||
        !ax_bi_required(in, v[1], f, "x2"))
        return false;
    *a = ax_np_asarray(in, v[0], f);
    *b = *a ? ax_np_asarray(in, v[1], f) : NULL;
    return *b != NULL;
}

static ax_value *binary(ax_interp *in, ax_value *self, const ax_args *args, binary_fn fn,
                        ax_prim p) {
    ax_array *a, *b;
    ax_array *r = two_arrays(in, self, args, &a, &b) ? fn(in->cx, p, fname_of(self), a, b) : NULL;
    ax_array_release(a);
    ax_array_release(b);
    return ax_np_wrap_take(in, r);
}

#define DEF_BINARY(cname, fn, prim)                                                                \
    static ax_value *cname(ax_interp *in, ax_value *self, const ax_args *args) {                   \
        return binary(in, self, args, fn, prim);                                                   \
    }

DEF_BINARY(bi_add, ax_np_binary, AX_P_ADD)
DEF_BINARY(bi_subtract, ax_np_binary, AX_P_SUB)
DEF_BINARY(bi_multiply, ax_np_binary, AX_P_MUL)
DEF_BINARY(bi_divide, ax_np_binary_inexact, AX_P_DIV)
DEF_BINARY(bi_floor_divide, ax_np_binary, AX_P_FLOOR_DIV)
DEF_BINARY(bi_mod, ax_np_binary, AX_P_MOD)
DEF_BINARY(bi_fmod, ax_np_binary, AX_P_REM)
DEF_BINARY(bi_maximum, ax_np_binary, AX_P_MAX)
DEF_BINARY(bi_minimum, ax_np_binary, AX_P_MIN)
DEF_BINARY(bi_arctan2, ax_np_binary_inexact, AX_P_ATAN2)
DEF_BINARY(bi_nextafter, ax_np_binary_inexact, AX_P_NEXTAFTER)
DEF_BINARY(bi_equal, ax_np_binary, AX_P_EQ)
DEF_BINARY(bi_not_equal, ax_np_binary, AX_P_NE)
DEF_BINARY(bi_less, ax_np_binary, AX_P_LT)
DEF_BINARY(bi_less_equal, ax_np_binary, AX_P_LE)
DEF_BINARY(bi_greater, ax_np_binary, AX_P_GT)
DEF_BINARY(bi_greater_equal, ax_np_binary, AX_P_GE)
DEF_BINARY(bi_logical_and, ax_np_logical, AX_P_AND)
DEF_BINARY(bi_logical_or, ax_np_logical, AX_P_OR)
DEF_BINARY(bi_logical_xor, ax_np_logical, AX_P_XOR)

static ax_array *binop_as_fn(ax_ctx *cx, ax_prim p, const char *name, ax_array *a, ax_array *b) {
    (void)name;
    return ax_np_binop(cx, (ax_binop)p, a, b);
}

/* The bitwise functions go through the operators (their dtype checks and shift choice). */
DEF_BINARY(bi_bitwise_and, binop_as_fn, (ax_prim)AX_OP_BITAND)
DEF_BINARY(bi_bitwise_or, binop_as_fn, (ax_prim)AX_OP_BITOR)
DEF_BINARY(bi_bitwise_xor, binop_as_fn, (ax_prim)AX_OP_BITXOR)
DEF_BINARY(bi_left_shift, binop_as_fn, (ax_prim)AX_OP_LSHIFT)
DEF_BINARY(bi_right_shift, binop_as_fn, (ax_prim)AX_OP_RSHIFT)

static ax_array *power_fn(ax_ctx *cx, ax_prim p, const char *name, ax_array *a, ax_array *b) {
    (void)p;
    (void)name;
    return ax_np_power(cx, a, b);
}
DEF_BINARY(bi_power, power_fn, AX_P_POW)

/* hypot(a, b) = sqrt(a*a + b*b) in floating point. */
static ax_array *hypot_fn(ax_ctx *cx, ax_prim p, const char *name, ax_array *a, ax_array *b) {
    (void)p;
    ax_array *aa = ax_np_binary_inexact(cx, AX_P_MUL, name, a, a);
    ax_array *bb = ax_np_binary_inexact(cx, AX_P_MUL, name, b, b);
    ax_array *s = ax_np_binary(cx, AX_P_ADD, name, aa, bb);
    ax_array *r = ax_np_unary(cx, AX_P_SQRT, s);
    ax_array_release(aa);
    ax_array_release(bb);
    ax_array_release(s);
    return r;
}
DEF_BINARY(bi_hypot, hypot_fn, AX_P_SQRT)

/* ---------------------------------------------------------------- where, clip */

static ax_value *nonzero_tuple(ax_interp *in, ax_array *x);

static ax_value *bi_where(ax_interp *in, ax_value *self, const ax_args *args) {
    static const char *const names[] = {"condition", "x", "y", NULL};
    ax_value *v[3];
    const char *f = fname_of(self);
    if (!ax_bi_parse(in, args, f, names, 3, v) || !ax_bi_required(in, v[0], f, "condition"))
        return NULL;
    if (!v[1] && !v[2]) {
        ax_array *c = ax_np_asarray(in, v[0], f);
        ax_value *r = c ? nonzero_tuple(in, c) : NULL;
        ax_array_release(c);
        return r;
    }
    if (!v[1] || !v[2])
        return ax_error(in->cx, AX_ERR_TYPE, "where() takes either 1 or 3 arguments");
    ax_array *c = ax_np_asarray(in, v[0], f);
    ax_array *x = c ? ax_np_asarray(in, v[1], f) : NULL;
    ax_array *y = x ? ax_np_asarray(in, v[2], f) : NULL;
    ax_array *r = ax_np_where(in->cx, c, x, y);
    ax_array_release(c);
    ax_array_release(x);
    ax_array_release(y);
    return ax_np_wrap_take(in, r);
}

static ax_value *bi_clip(ax_interp *in, ax_value *self, const ax_args *args) {
    static const char *const names[] = {"x", "a_min", "a_max", "min", "max", NULL};
    ax_value *v[5];
    const char *f = fname_of(self);
    if (!ax_bi_parse(in, args, f, names, 3, v) || !ax_bi_required(in, v[0], f, "x")) return NULL;
    ax_value *lo_v = v[1] ? v[1] : v[3], *hi_v = v[2] ? v[2] : v[4];
    ax_array *x = ax_np_asarray(in, v[0], f);
    ax_array *lo = lo_v && lo_v->kind != AX_V_NONE ? ax_np_asarray(in, lo_v, f) : NULL;
    ax_array *hi = hi_v && hi_v->kind != AX_V_NONE ? ax_np_asarray(in, hi_v, f) : NULL;
    bool ok =
        x && (lo || !lo_v || lo_v->kind == AX_V_NONE) && (hi || !hi_v || hi_v->kind == AX_V_NONE);
    ax_array *r = ok ? ax_np_clip(in->cx, x, lo, hi) : NULL;
    ax_array_release(x);
    ax_array_release(lo);
    ax_array_release(hi);
    return ax_np_wrap_take(in, r);
}

static ax_value *stop_gradient_leaf(ax_interp *in, ax_value *leaf, void *data) {
    (void)data;
    if (leaf->kind != AX_V_ARRAY) return ax_value_retain(leaf);
    return ax_np_wrap_take(in, ax_bind_unary(in->cx, AX_P_STOP_GRADIENT, leaf->arr));
}

/* stop_gradient of every array leaf of a pytree (through pytree.c: its depth limit bounds the
 * walk), other leaves as they are. */
static ax_value *stop_gradient_tree(ax_interp *in, ax_value *v) {
    return ax_tree_map_leaves(in, v, stop_gradient_leaf, NULL);
}

static ax_value *bi_stop_gradient(ax_interp *in, ax_value *self, const ax_args *args) {
    static const char *const names[] = {"x", NULL};
    ax_value *v[1];
    if (!ax_bi_parse(in, args, "stop_gradient", names, 1, v) ||
        !ax_bi_required(in, v[0], "stop_gradient", "x"))
        return NULL;
    (void)self;
    return stop_gradient_tree(in, v[0]);
}

/* ---------------------------------------------------------------- nonzero */

static ax_value *nonzero_tuple(ax_interp *in, ax_array *x) {
    if (!ax_np_is_concrete(x) || x->tracer)
        return ax_error(in->cx, AX_ERR_CONCRETIZATION,
                        "nonzero needs a concrete array: the shape of its result depends on the "
                        "values; use where(c, x, y) instead");
    ax_ctx *cx = in->cx;
    ax_array *b = ax_np_to_bool(cx, x);
    if (!b) return NULL;
    ax_value *pos = ax_np_wrap_take(in, ax_array_retain(b));
    ax_value **items = calloc((size_t)(x->ndim ? x->ndim : 1), sizeof *items);
    ax_value *r = NULL;
    if (pos && items) {
        /* x[mask] on an iota per dimension gives the coordinates of the true elements. */
        int d = 0;
        for (; d < x->ndim; d++) {
            ax_array *io = ax_np_iota(cx, ax_np_default_int(cx), x->ndim, x->shape, d);
            ax_value *iov = ax_np_wrap_take(in, io);
            items[d] = iov ? ax_np_getitem(in, iov, pos) : NULL;
            if (iov) ax_value_release(iov);
            if (!items[d]) break;
        }
        if (d == x->ndim)
            r = ax_value_tuple(d, items);
        else
            for (int j = 0; j < d; j++) ax_value_release(items[j]);
    }
    free(items);
    if (pos) ax_value_release(pos);
    ax_array_release(b);
    return r;
}

static ax_value *bi_nonzero(ax_interp *in, ax_value *self, const ax_args *args) {
    ax_array *x = one_array(in, self, args);
    ax_value *r = x ? nonzero_tuple(in, x) : NULL;
    ax_array_release(x);
    return r;
}

/* ---------------------------------------------------------------- table */

#define NP AX_BI_NP

const ax_builtin_def ax_builtins_math[] = {
    {"exp", bi_exp, "exp(x): e ** x, elementwise", NP},
    {"exp2", bi_exp2, "exp2(x): 2 ** x, elementwise", NP},
    {"log", bi_log, "log(x): natural logarithm, elementwise", NP},
    {"log2", bi_log2, "log2(x): base-2 logarithm, elementwise", NP},
    {"log10", bi_log10, "log10(x): base-10 logarithm, elementwise", NP},
    {"log1p", bi_log1p, "log1p(x): log(1 + x), accurate for small x", NP},
    {"expm1", bi_expm1, "expm1(x): exp(x) - 1, accurate for small x", NP},
    {"sin", bi_sin, "sin(x): sine (radians), elementwise", NP},
    {"cos", bi_cos, "cos(x): cosine (radians), elementwise", NP},
    {"tan", bi_tan, "tan(x): tangent (radians), elementwise", NP},
    {"arcsin", bi_arcsin, "arcsin(x): inverse sine, elementwise", NP},
    {"arccos", bi_arccos, "arccos(x): inverse cosine, elementwise", NP},
    {"arctan", bi_arctan, "arctan(x): inverse tangent, elementwise", NP},
    {"asin", bi_arcsin, "asin(x): inverse sine (arcsin), elementwise", NP},
    {"acos", bi_arccos, "acos(x): inverse cosine (arccos), elementwise", NP},
    {"atan", bi_arctan, "atan(x): inverse tangent (arctan), elementwise", NP},
    {"sinh", bi_sinh, "sinh(x): hyperbolic sine, elementwise", NP},
    {"cosh", bi_cosh, "cosh(x): hyperbolic cosine, elementwise", NP},
    {"tanh", bi_tanh, "tanh(x): hyperbolic tangent, elementwise", NP},
    {"arcsinh", bi_arcsinh, "arcsinh(x): inverse hyperbolic sine, elementwise", NP},
    {"arccosh", bi_arccosh, "arccosh(x): inverse hyperbolic cosine, elementwise", NP},
    {"arctanh", bi_arctanh, "arctanh(x): inverse hyperbolic tangent, elementwise", NP},
    {"asinh", bi_arcsinh, "asinh(x): inverse hyperbolic sine, elementwise", NP},
    {"acosh", bi_arccosh, "acosh(x): inverse hyperbolic cosine, elementwise", NP},
    {"atanh", bi_arctanh, "atanh(x): inverse hyperbolic tangent, elementwise", NP},
    {"logistic", bi_logistic, "logistic(x): 1 / (1 + exp(-x)), elementwise", NP},
    {"sigmoid", bi_logistic, "sigmoid(x): 1 / (1 + exp(-x)) (the logistic function)", NP},
    {"expit", bi_logistic, "expit(x): 1 / (1 + exp(-x)) (the logistic function)", NP},
    {"sqrt", bi_sqrt, "sqrt(x): square root, elementwise", NP},
    {"rsqrt", bi_rsqrt, "rsqrt(x): 1 / sqrt(x), elementwise", NP},
    {"cbrt", bi_cbrt, "cbrt(x): cube root, elementwise", NP},
    {"erf", bi_erf, "erf(x): the error function, elementwise", NP},
    {"erfc", bi_erfc, "erfc(x): 1 - erf(x), elementwise", NP},
    {"erfinv", bi_erfinv, "erfinv(x): inverse of erf, elementwise", NP},
    {"erf_inv", bi_erfinv, "erf_inv(x): inverse of erf, elementwise", NP},
    {"lgamma", bi_lgamma, "lgamma(x): log of the absolute value of the gamma function", NP},
    {"gammaln", bi_lgamma, "gammaln(x): log of the absolute value of the gamma function", NP},
    {"digamma", bi_digamma, "digamma(x): derivative of lgamma, elementwise", NP},
    {"sign", bi_sign, "sign(x): -1, 0 or 1 by the sign of x (nan for nan)", NP},
    {"square", bi_square, "square(x): x * x, elementwise", NP},
    {"abs", bi_abs, "abs(x): absolute value, elementwise", NP},
    {"absolute", bi_abs, "absolute(x): absolute value, elementwise", NP},
    {"negative", bi_negative, "negative(x): -x, elementwise", NP},
    {"positive", bi_positive, "positive(x): +x (x itself)", NP},
    {"reciprocal", bi_reciprocal, "reciprocal(x): 1 / x in x's dtype", NP},
    {"floor", bi_floor, "floor(x): largest integer <= x, elementwise", NP},
    {"ceil", bi_ceil, "ceil(x): smallest integer >= x, elementwise", NP},
    {"trunc", bi_trunc, "trunc(x): x rounded toward zero, elementwise", NP},
    {"fix", bi_trunc, "fix(x): x rounded toward zero, elementwise", NP},
    {"rint", bi_rint, "rint(x): x rounded to the nearest integer (halves to even)", NP},
    {"round", bi_round, "round(x, decimals=0): rounded to `decimals` places (halves to even)", NP},
    {"around", bi_round, "around(x, decimals=0): the same as round", NP},
    {"deg2rad", bi_deg2rad, "deg2rad(x): degrees to radians", NP},
    {"radians", bi_deg2rad, "radians(x): degrees to radians", NP},
    {"rad2deg", bi_rad2deg, "rad2deg(x): radians to degrees", NP},
    {"degrees", bi_rad2deg, "degrees(x): radians to degrees", NP},
    {"isfinite", bi_isfinite, "isfinite(x): True where x is neither inf nor nan", NP},
    {"isnan", bi_isnan, "isnan(x): True where x is nan", NP},
    {"isinf", bi_isinf, "isinf(x): True where x is +inf or -inf", NP},
    {"logical_not", bi_logical_not, "logical_not(x): elementwise not of truth values", NP},
    {"invert", bi_invert, "invert(x): ~x, bitwise not (logical not for bools)", NP},
    {"bitwise_not", bi_invert, "bitwise_not(x): ~x, bitwise not (logical not for bools)", NP},
    {"add", bi_add, "add(x1, x2): x1 + x2 with broadcasting", NP},
    {"subtract", bi_subtract, "subtract(x1, x2): x1 - x2 with broadcasting", NP},
    {"multiply", bi_multiply, "multiply(x1, x2): x1 * x2 with broadcasting", NP},
    {"divide", bi_divide, "divide(x1, x2): true division x1 / x2 (floats for ints)", NP},
    {"true_divide", bi_divide, "true_divide(x1, x2): true division x1 / x2", NP},
    {"floor_divide", bi_floor_divide, "floor_divide(x1, x2): x1 // x2 (rounds down)", NP},
    {"mod", bi_mod, "mod(x1, x2): x1 % x2 with the sign of x2, as Python", NP},
    {"remainder", bi_mod, "remainder(x1, x2): x1 % x2 with the sign of x2, as Python", NP},
    {"fmod", bi_fmod, "fmod(x1, x2): C remainder of x1 / x2, with the sign of x1", NP},
    {"power", bi_power, "power(x1, x2): x1 ** x2 with broadcasting", NP},
    {"pow", bi_power, "pow(x1, x2): x1 ** x2 with broadcasting", NP},
    {"maximum", bi_maximum, "maximum(x1, x2): elementwise maximum (nan propagates)", NP},
    {"minimum", bi_minimum, "minimum(x1, x2): elementwise minimum (nan propagates)", NP},
    {"arctan2", bi_arctan2, "arctan2(x1, x2): angle of the point (x2, x1), elementwise", NP},
    {"atan2", bi_arctan2, "atan2(x1, x2): angle of the point (x2, x1), elementwise", NP},
    {"hypot", bi_hypot, "hypot(x1, x2): sqrt(x1**2 + x2**2), elementwise", NP},
    {"nextafter", bi_nextafter, "nextafter(x1, x2): next float after x1 toward x2", NP},
    {"equal", bi_equal, "equal(x1, x2): x1 == x2, elementwise", NP},
    {"not_equal", bi_not_equal, "not_equal(x1, x2): x1 != x2, elementwise", NP},
    {"less", bi_less, "less(x1, x2): x1 < x2, elementwise", NP},
    {"less_equal", bi_less_equal, "less_equal(x1, x2): x1 <= x2, elementwise", NP},
    {"greater", bi_greater, "greater(x1, x2): x1 > x2, elementwise", NP},
    {"greater_equal", bi_greater_equal, "greater_equal(x1, x2): x1 >= x2, elementwise", NP},
    {"logical_and", bi_logical_and, "logical_and(x1, x2): elementwise and of truth values", NP},
    {"logical_or", bi_logical_or, "logical_or(x1, x2): elementwise or of truth values", NP},
    {"logical_xor", bi_logical_xor, "logical_xor(x1, x2): elementwise xor of truth values", NP},
    {"bitwise_and", bi_bitwise_and, "bitwise_and(x1, x2): x1 & x2 (ints and bools)", NP},
    {"bitwise_or", bi_bitwise_or, "bitwise_or(x1, x2): x1 | x2 (ints and bools)", NP},
    {"bitwise_xor", bi_bitwise_xor, "bitwise_xor(x1, x2): x1 ^ x2 (ints and bools)", NP},
    {"left_shift", bi_left_shift, "left_shift(x1, x2): x1 << x2 (ints)", NP},
    {"right_shift", bi_right_shift, "right_shift(x1, x2): x1 >> x2 (ints)", NP},
    {"where", bi_where, "where(condition, x, y): x where condition is true, else y", NP},
    {"clip", bi_clip, "clip(x, a_min=None, a_max=None): x limited to [a_min, a_max]", NP},
    {"nonzero", bi_nonzero, "nonzero(x): tuple of index arrays of the nonzero elements (eager)",
     NP},
    {"stop_gradient", bi_stop_gradient,
     "stop_gradient(x): x, treated as a constant by grad (arrays or pytrees)", NP},
    {NULL, NULL, NULL, 0},
};

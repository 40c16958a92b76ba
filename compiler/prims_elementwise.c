/* The elementwise primitives: each one's row and every rule about it. Operands share a dtype
 * and have equal shapes or rank 0 (the shape rules of compiler/shape_rules.c); the eager
 * kernels are runtime/elementwise.h's. Flags follow JAX: LIN marks primitives with a transpose
 * rule (mul, div (in the numerator) and select (in the values) are linear in each operand
 * separately; convert is linear between float dtypes); ND marks primitives whose outputs carry
 * no derivative (bool and integer results); floor, ceil, round, sign and stop_gradient are
 * differentiable with a zero derivative. */
#include <math.h>

#include "../runtime/prng.h"
#include "prim_rows.h"

/* A row of an elementwise primitive of one operand (`name`, the kernel op `op`) and its eager
 * rule; the rest of the row follows. */
#define UNARY(name_, op_, flags_, ...)                                                             \
    static int shape_##name_(ax_ctx *cx, int nin, const ax_aval *in, const ax_params *p,           \
                             ax_aval *out) {                                                       \
        (void)nin, (void)p;                                                                        \
        return ax_shape_unary_op(cx, #name_, op_, &in[0], out);                                    \
    }                                                                                              \
    AX_EAGER(name_) {                                                                              \
        (void)nin, (void)p;                                                                        \
        return ax_eager_one(ax_unary(cx, op_, in[0]), out);                                        \
    }                                                                                              \
    const ax_prim_info ax_##name_##_info = {.name = #name_,                                        \
                                            .nin = 1,                                              \
                                            .nout = 1,                                             \
                                            .flags = EW | (flags_),                                \
                                            .shape = shape_##name_,                                \
                                            .eager = eager_##name_,                                \
                                            .batch = ax_batch_elementwise,                         \
                                            __VA_ARGS__}

/* The same for two operands. */
#define BINARY(name_, printed, op_, flags_, ...)                                                   \
    static int shape_##name_(ax_ctx *cx, int nin, const ax_aval *in, const ax_params *p,           \
                             ax_aval *out) {                                                       \
        (void)nin, (void)p;                                                                        \
        return ax_shape_binary_op(cx, printed, op_, &in[0], &in[1], out);                          \
    }                                                                                              \
    AX_EAGER(name_) {                                                                              \
        (void)nin, (void)p;                                                                        \
        return ax_eager_one(ax_binary(cx, op_, in[0], in[1]), out);                                \
    }                                                                                              \
    const ax_prim_info ax_##name_##_info = {.name = printed,                                       \
                                            .nin = 2,                                              \
                                            .nout = 1,                                             \
                                            .flags = EW | (flags_),                                \
                                            .shape = shape_##name_,                                \
                                            .eager = eager_##name_,                                \
                                            .batch = ax_batch_elementwise,                         \
                                            __VA_ARGS__}

/* A unary primitive computed by libm's function of its name (libmvec's f32 one when vec), with
 * the derivative name_derivative, tested on operands in [lo, hi]. */
#define LIBM_UNARY(name, op, vec, lo, hi)                                                          \
    UNARY(name, op, 0, .jvp = ax_jvp_unary, .derivative = name##_derivative,                       \
          .lower = AX_LOWER_LIBM(#name, vec), AX_EXAMPLES(ONE(lo, hi)))

/* The same computed on f32 by ax's own vector math function AX_VM_<VM> (runtime/vecmath.h), in
 * the eager kernel and inline in jit's loops alike. */
#define VECMATH_UNARY(name, op, VM, lo, hi)                                                        \
    UNARY(name, op, 0, .jvp = ax_jvp_unary, .derivative = name##_derivative,                       \
          .lower = AX_LOWER_VECMATH(#name, AX_VM_##VM), AX_EXAMPLES(ONE(lo, hi)))

/* A unary primitive's derivative (ax_derivative_rule), with the constants of x's dtype. */
#define DERIVATIVE(name)                                                                           \
    static ax_array *name##_derivative(ax_scope *s, AX_UNUSED const ax_params *p, ax_array *x,     \
                                       AX_UNUSED ax_array *y)
#define C(v)     ax_lax_scalar_like(s, x, (v))
#define U(op, a) ax_lax_unary(s, AX_P_##op, (a))

/* A tangent rule (ax_tangent_rule) of a binary primitive: x, y the operands, z the result, tx
 * and ty their tangents (NULL: zero). */
#define TANGENT(name)                                                                              \
    static ax_array *name##_tangent(ax_scope *s, AX_UNUSED const ax_params *p, ax_array **in,      \
                                    ax_array **tin, ax_array *z)
#define OPERANDS                                                                                   \
    ax_array *x = in[0], *y = in[1], *tx = tin[0], *ty = tin[1];                                   \
    (void)x, (void)y
/* A cotangent rule (ax_cotangent_rule). */
#define COTANGENT(name)                                                                            \
    static int name##_cotangent(ax_scope *s, AX_UNUSED const ax_params *p, AX_UNUSED int nin,      \
                                ax_array **in, const bool *lin, const ax_aval *ty, ax_array *ct,   \
                                ax_array **r)

/* Examples: an operand (or two) of shape (2, 3) in [lo, hi]. */
#define ONE(lo, hi)                                                                                \
    {                                                                                              \
        .nin = 1, .in = { AX_FLOATS(lo, hi, 2, 3) }                                                \
    }
#define TWO(lo, hi)                                                                                \
    {                                                                                              \
        .nin = 2, .in = { AX_FLOATS(lo, hi, 2, 3), AX_FLOATS(lo, hi, 2, 3) }                       \
    }
#define TWO_INTS(lo, hi)                                                                           \
    {                                                                                              \
        .nin = 2, .in = { AX_INTS(AX_I32, lo, hi, 3), AX_INTS(AX_I32, lo, hi, 3) }                 \
    }
/* a rank-0 operand broadcast against the other */
#define TWO_SCALAR(lo, hi)                                                                         \
    {                                                                                              \
        .nin = 2, .in = { AX_FLOATS(lo, hi, 3), AX_SCALAR(lo, hi) }                                \
    }

#define FLOATS_I32_U32_I64 (AX_DT_FLOAT | AX_DT(AX_I32) | AX_DT(AX_U32) | AX_DT(AX_I64))

/* ---------------------------------------------------------------- one operand */

COTANGENT(neg) {
    (void)in, (void)lin, (void)ty;
    r[0] = ax_lax_neg(s, ct);
    return 0;
}
UNARY(neg, AX_NEG, LIN, .jvp = ax_jvp_linear, .linear_in = 1, .transpose = ax_transpose_linear,
      .cotangent = neg_cotangent, .lower = AX_LOWER(AX_KOP_NEG, AX_DT_NUMBER),
      AX_EXAMPLES(ONE(-2, 2)));

/* JAX's convention: the derivative at 0 is 1. */
DERIVATIVE(abs) {
    ax_array *d = ax_lax_select(s, ax_lax_binary(s, AX_P_GE, x, C(0.0)), C(1.0), C(-1.0));
    return d && d->ndim ? ax_lax_broadcast_to(s, d, x->ndim, x->shape) : d;
}
UNARY(abs, AX_ABS, 0, .jvp = ax_jvp_unary, .derivative = abs_derivative,
      .lower = AX_LOWER(AX_KOP_ABS, FLOATS_I32_U32_I64), AX_EXAMPLES(ONE(0.2, 2), ONE(-2, -0.2)));

UNARY(sign, AX_SIGN, 0, .jvp = ax_jvp_zero, .lower = AX_LOWER(AX_KOP_SIGN, FLOATS_I32_U32_I64),
      AX_EXAMPLES(ONE(0.2, 2), ONE(-2, -0.2)));

DERIVATIVE(exp) {
    (void)s, (void)x;
    return y;
}
VECMATH_UNARY(exp, AX_EXP, EXP, -2, 2);

DERIVATIVE(exp2) {
    return ax_lax_mul(s, y, C(M_LN2));
}
LIBM_UNARY(exp2, AX_EXP2, true, -2, 2);

DERIVATIVE(log) {
    return ax_lax_div(s, C(1.0), x);
}
VECMATH_UNARY(log, AX_LOG, LOG, 0.2, 3);

DERIVATIVE(log1p) {
    return ax_lax_div(s, C(1.0), ax_lax_add(s, x, C(1.0)));
}
LIBM_UNARY(log1p, AX_LOG1P, true, -0.5, 2);

DERIVATIVE(expm1) {
    return ax_lax_add(s, y, C(1.0));
}
VECMATH_UNARY(expm1, AX_EXPM1, EXPM1, -2, 2);

DERIVATIVE(sin) {
    return U(COS, x);
}
LIBM_UNARY(sin, AX_SIN, true, -3, 3);

DERIVATIVE(cos) {
    return ax_lax_neg(s, U(SIN, x));
}
LIBM_UNARY(cos, AX_COS, true, -3, 3);

DERIVATIVE(tan) {
    return ax_lax_add(s, C(1.0), ax_lax_mul(s, y, y));
}
LIBM_UNARY(tan, AX_TAN, false, -1, 1);

DERIVATIVE(asin) {
    return U(RSQRT, ax_lax_sub(s, C(1.0), ax_lax_mul(s, x, x)));
}
LIBM_UNARY(asin, AX_ASIN, false, -0.8, 0.8);

DERIVATIVE(acos) {
    return ax_lax_neg(s, U(RSQRT, ax_lax_sub(s, C(1.0), ax_lax_mul(s, x, x))));
}
LIBM_UNARY(acos, AX_ACOS, true, -0.8, 0.8);

DERIVATIVE(atan) {
    return ax_lax_div(s, C(1.0), ax_lax_add(s, C(1.0), ax_lax_mul(s, x, x)));
}
LIBM_UNARY(atan, AX_ATAN, false, -3, 3);

DERIVATIVE(sinh) {
    return U(COSH, x);
}
LIBM_UNARY(sinh, AX_SINH, true, -2, 2);

DERIVATIVE(cosh) {
    return U(SINH, x);
}
LIBM_UNARY(cosh, AX_COSH, false, -2, 2);

DERIVATIVE(tanh) {
    return ax_lax_sub(s, C(1.0), ax_lax_mul(s, y, y));
}
VECMATH_UNARY(tanh, AX_TANH, TANH, -2, 2);

DERIVATIVE(asinh) {
    return U(RSQRT, ax_lax_add(s, ax_lax_mul(s, x, x), C(1.0)));
}
LIBM_UNARY(asinh, AX_ASINH, true, -2, 2);

DERIVATIVE(acosh) {
    return U(RSQRT, ax_lax_mul(s, ax_lax_sub(s, x, C(1.0)), ax_lax_add(s, x, C(1.0))));
}
LIBM_UNARY(acosh, AX_ACOSH, true, 1.5, 3);

DERIVATIVE(atanh) {
    return ax_lax_div(s, C(1.0), ax_lax_sub(s, C(1.0), ax_lax_mul(s, x, x)));
}
LIBM_UNARY(atanh, AX_ATANH, true, -0.8, 0.8);

DERIVATIVE(logistic) {
    return ax_lax_mul(s, y, ax_lax_sub(s, C(1.0), y));
}
UNARY(logistic, AX_LOGISTIC, 0, .jvp = ax_jvp_unary, .derivative = logistic_derivative,
      .lower = AX_LOWER_LOGISTIC, AX_EXAMPLES(ONE(-3, 3)));

DERIVATIVE(sqrt) {
    return ax_lax_div(s, C(0.5), y);
}
UNARY(sqrt, AX_SQRT, 0, .jvp = ax_jvp_unary, .derivative = sqrt_derivative,
      .lower = AX_LOWER_BUILTIN("sqrt"), AX_EXAMPLES(ONE(0.3, 3)));

DERIVATIVE(rsqrt) {
    return ax_lax_mul(s, C(-0.5), ax_lax_div(s, y, x));
}
UNARY(rsqrt, AX_RSQRT, 0, .jvp = ax_jvp_unary, .derivative = rsqrt_derivative,
      .lower = AX_LOWER(AX_KOP_RSQRT, AX_DT_FLOAT), AX_EXAMPLES(ONE(0.3, 3)));

DERIVATIVE(cbrt) {
    return ax_lax_div(s, C(1.0 / 3.0), ax_lax_mul(s, y, y));
}
LIBM_UNARY(cbrt, AX_CBRT, true, 0.3, 3);

UNARY(floor, AX_FLOOR, 0, .jvp = ax_jvp_zero, .lower = AX_LOWER_BUILTIN("floor"),
      AX_EXAMPLES(ONE(0.2, 0.8)));
UNARY(ceil, AX_CEIL, 0, .jvp = ax_jvp_zero, .lower = AX_LOWER_BUILTIN("ceil"),
      AX_EXAMPLES(ONE(0.2, 0.8)));
UNARY(round, AX_ROUND, 0, .jvp = ax_jvp_zero, .lower = AX_LOWER_BUILTIN("rint"),
      AX_EXAMPLES(ONE(0.1, 0.4)));

DERIVATIVE(erf) {
    return ax_lax_mul(s, C(M_2_SQRTPI), U(EXP, ax_lax_neg(s, ax_lax_mul(s, x, x))));
}
VECMATH_UNARY(erf, AX_ERF, ERF, -2, 2);

DERIVATIVE(erfc) {
    return ax_lax_neg(s, erf_derivative(s, p, x, y));
}
LIBM_UNARY(erfc, AX_ERFC, true, -2, 2);

DERIVATIVE(erf_inv) {
    return ax_lax_mul(s, C(sqrt(M_PI) / 2.0), U(EXP, ax_lax_mul(s, y, y)));
}
UNARY(erf_inv, AX_ERF_INV, 0, .jvp = ax_jvp_unary, .derivative = erf_inv_derivative,
      .lower = AX_LOWER_AXFN(AX_FN_ERF_INV_F32), AX_EXAMPLES(ONE(-0.8, 0.8)));

DERIVATIVE(lgamma) {
    return U(DIGAMMA, x);
}
UNARY(lgamma, AX_LGAMMA, 0, .jvp = ax_jvp_unary, .derivative = lgamma_derivative,
      .lower = AX_LOWER_AXFN(AX_FN_LGAMMA_F32), AX_EXAMPLES(ONE(0.5, 4)));

/* trigamma(x) = digamma'(x) for x > 0: the recurrence psi1(x) = psi1(x + 1) + 1/x^2 six times,
 * then the asymptotic series at x + 6 (error below 1e-9 there). */
DERIVATIVE(digamma) {
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
}
UNARY(digamma, AX_DIGAMMA, 0, .jvp = ax_jvp_unary, .derivative = digamma_derivative,
      .lower = AX_LOWER_AXFN(AX_FN_DIGAMMA_F32), AX_EXAMPLES(ONE(0.5, 4)));

UNARY(is_finite, AX_IS_FINITE, ND, .lower = AX_LOWER(AX_KOP_IS_FINITE, AX_DT_FLOAT),
      AX_EXAMPLES(ONE(-2, 2)));
UNARY(not, AX_NOT, ND, .lower = AX_LOWER(AX_KOP_NOT, AX_DT_BOOL | AX_DT_INT),
      AX_EXAMPLES({.nin = 1, .in = {AX_INTS(AX_I32, -5, 5, 3)}},
                  {.nin = 1, .in = {AX_BOOLS(2, 3)}}));

DERIVATIVE(square) {
    return ax_lax_mul(s, C(2.0), x);
}
UNARY(square, AX_SQUARE, 0, .jvp = ax_jvp_unary, .derivative = square_derivative,
      .lower = AX_LOWER(AX_KOP_SQUARE, AX_DT_NUMBER), AX_EXAMPLES(ONE(-2, 2)));

AX_EAGER(integer_pow) {
    (void)nin;
    return ax_eager_one(ax_integer_pow(cx, in[0], p->k), out);
}
DERIVATIVE(integer_pow) {
    if (p->k == 0) return C(0.0);
    if (p->k == 1) return C(1.0);
    return ax_lax_mul(s, C((double)p->k), ax_lax_integer_pow(s, x, p->k - 1));
}
static int integer_pow_identity(const ax_params *p, const ax_ir_atom *in) {
    (void)in;
    return p->k == 1 ? 0 : -1;
}
static void integer_pow_format(ax_strbuf *s, const ax_params *p) {
    ax_strbuf_appendf(s, "[y=%lld]", (long long)p->k);
}
const ax_prim_info ax_integer_pow_info = {
    .name = "integer_pow",
    .nin = 1,
    .nout = 1,
    .flags = EW,
    .shape = ax_shape_integer_pow,
    .eager = eager_integer_pow,
    .jvp = ax_jvp_unary,
    .derivative = integer_pow_derivative,
    .batch = ax_batch_elementwise,
    .identity = integer_pow_identity,
    .format_params = integer_pow_format,
    .lower = AX_LOWER(AX_KOP_INTEGER_POW, AX_DT_FLOAT),
    AX_EXAMPLES({.nin = 1, .in = {AX_FLOATS(-2, 2, 2, 3)}, .p = {.k = 3}},
                {.nin = 1, .in = {AX_FLOATS(0.5, 2, 3)}, .p = {.k = -2}}),
};

/* ---------------------------------------------------------------- two operands */

/* Identities x op 1 = x (and 1 * x), x + -0.0 = x (for floats only -0.0 is the identity:
 * -0.0 + 0.0 is +0.0), x - 0.0 = x (x - -0.0 is not, for x = -0.0). */
static int add_identity(const ax_params *p, const ax_ir_atom *in) {
    (void)p;
    return ax_ir_atom_is_zero(&in[1], true) ? 0 : ax_ir_atom_is_zero(&in[0], true) ? 1 : -1;
}
static int sub_identity(const ax_params *p, const ax_ir_atom *in) {
    (void)p;
    return ax_ir_atom_is_zero(&in[1], false) ? 0 : -1;
}
static int mul_identity(const ax_params *p, const ax_ir_atom *in) {
    (void)p;
    return ax_ir_atom_is(&in[1], 1.0) ? 0 : ax_ir_atom_is(&in[0], 1.0) ? 1 : -1;
}
static int div_identity(const ax_params *p, const ax_ir_atom *in) {
    (void)p;
    return ax_ir_atom_is(&in[1], 1.0) ? 0 : -1;
}

TANGENT(add) {
    OPERANDS;
    return ax_tangent_sum(s, tx, ty, z);
}
COTANGENT(add) {
    (void)in;
    for (int i = 0; i < 2; i++) r[i] = lin[i] ? ax_cotangent_to(s, ct, &ty[i]) : NULL;
    return 0;
}
BINARY(add, "add", AX_ADD, LIN | COMM, .jvp = ax_jvp_tangent, .tangent = add_tangent,
       .transpose = ax_transpose_linear, .cotangent = add_cotangent, .identity = add_identity,
       .lower = AX_LOWER(AX_KOP_ADD, AX_DT_NUMBER), AX_EXAMPLES(TWO(-2, 2)));

TANGENT(sub) {
    OPERANDS;
    return ax_tangent_sum(s, tx, ty ? ax_lax_neg(s, ty) : NULL, z);
}
COTANGENT(sub) {
    (void)in;
    r[0] = lin[0] ? ax_cotangent_to(s, ct, &ty[0]) : NULL;
    r[1] = lin[1] ? ax_cotangent_to(s, ax_lax_neg(s, ct), &ty[1]) : NULL;
    return 0;
}
BINARY(sub, "sub", AX_SUB, LIN, .jvp = ax_jvp_tangent, .tangent = sub_tangent,
       .transpose = ax_transpose_linear, .cotangent = sub_cotangent, .identity = sub_identity,
       .lower = AX_LOWER(AX_KOP_SUB, AX_DT_NUMBER), AX_EXAMPLES(TWO(-2, 2)));

TANGENT(mul) {
    OPERANDS;
    ax_array *a = tx ? ax_lax_mul(s, tx, y) : NULL; /* in this order: the IR reads as written */
    ax_array *b = ty ? ax_lax_mul(s, x, ty) : NULL;
    return ax_tangent_sum(s, a, b, z);
}
COTANGENT(mul) {
    for (int i = 0; i < 2; i++)
        if (lin[i]) r[i] = ax_cotangent_to(s, ax_lax_mul(s, ct, in[1 - i]), &ty[i]);
    return 0;
}
BINARY(mul, "mul", AX_MUL, LIN | COMM, .jvp = ax_jvp_tangent, .tangent = mul_tangent,
       .transpose = ax_transpose_linear, .cotangent = mul_cotangent, .identity = mul_identity,
       .lower = AX_LOWER(AX_KOP_MUL, AX_DT_NUMBER), AX_EXAMPLES(TWO(-2, 2), TWO_SCALAR(-2, 2)));

TANGENT(div) {
    OPERANDS;
    ax_array *a = tx ? ax_lax_div(s, tx, y) : NULL;
    ax_array *b = ty ? ax_lax_neg(s, ax_lax_mul(s, ty, ax_lax_div(s, z, y))) : NULL;
    return ax_tangent_sum(s, a, b, z);
}
COTANGENT(div) {
    (void)lin;
    r[0] = ax_cotangent_to(s, ax_lax_div(s, ct, in[1]), &ty[0]);
    return 0;
}
BINARY(div, "div", AX_DIV, LIN, .jvp = ax_jvp_tangent, .tangent = div_tangent,
       .transpose = ax_transpose_linear, .cotangent = div_cotangent, .identity = div_identity,
       .lower = AX_LOWER(AX_KOP_DIV, AX_DT_FLOAT), AX_EXAMPLES(TWO(0.5, 2)));

BINARY(floor_divide, "floor_divide", AX_FLOOR_DIV, 0, .jvp = ax_jvp_zero, .lower = AX_LOWER_EAGER,
       AX_EXAMPLES(TWO(1.1, 1.9)));

/* rem(x, y) = x - y * trunc(x / y) */
TANGENT(rem) {
    OPERANDS;
    ax_array *b = NULL;
    if (ty) {
        ax_array *q = ax_lax_div(s, x, y);
        ax_array *tr = ax_lax_mul(s, ax_lax_unary(s, AX_P_SIGN, q),
                                  ax_lax_unary(s, AX_P_FLOOR, ax_lax_unary(s, AX_P_ABS, q)));
        b = ax_lax_neg(s, ax_lax_mul(s, ty, tr));
    }
    return ax_tangent_sum(s, tx, b, z);
}
BINARY(rem, "rem", AX_REM, 0, .jvp = ax_jvp_tangent, .tangent = rem_tangent,
       .lower = AX_LOWER_EAGER, AX_EXAMPLES(TWO(1.1, 1.9)));

/* mod(x, y) = x - y * floor(x / y) */
TANGENT(mod) {
    OPERANDS;
    ax_array *b =
        ty ? ax_lax_neg(s, ax_lax_mul(s, ty, ax_lax_unary(s, AX_P_FLOOR, ax_lax_div(s, x, y))))
           : NULL;
    return ax_tangent_sum(s, tx, b, z);
}
BINARY(mod, "mod", AX_MOD, 0, .jvp = ax_jvp_tangent, .tangent = mod_tangent,
       .lower = AX_LOWER_EAGER, AX_EXAMPLES(TWO(1.1, 1.9)));

/* d/dx x^y = y x^(y-1); d/dy x^y = log(x) x^y, taken as 0 where x == 0 (as JAX). */
TANGENT(pow) {
    OPERANDS;
    ax_array *a = NULL, *b = NULL;
    if (tx)
        a = ax_lax_mul(s, tx,
                       ax_lax_mul(s, y,
                                  ax_lax_binary(s, AX_P_POW, x,
                                                ax_lax_sub(s, y, ax_lax_scalar_like(s, z, 1.0)))));
    if (ty) {
        ax_array *zero = ax_lax_binary(s, AX_P_EQ, x, ax_lax_scalar_like(s, z, 0.0));
        ax_array *safe = ax_lax_select(s, zero, ax_lax_ones_like(s, x), x);
        ax_array *lg =
            ax_lax_select(s, zero, ax_lax_zeros_like(s, x), ax_lax_unary(s, AX_P_LOG, safe));
        b = ax_lax_mul(s, ty, ax_lax_mul(s, lg, z));
    }
    return ax_tangent_sum(s, a, b, z);
}
BINARY(pow, "pow", AX_POW, 0, .jvp = ax_jvp_tangent, .tangent = pow_tangent,
       .lower = AX_LOWER_LIBM("pow", false), AX_EXAMPLES(TWO(0.5, 2)));

/* The derivative flows to the operand the result came from (x on ties). */
static ax_array *extremum_tangent(ax_scope *s, ax_prim pick, ax_array **in, ax_array **tin,
                                  ax_array *z) {
    ax_array *pick_x = ax_lax_binary(s, pick, in[0], in[1]);
    ax_array *zx = tin[0] ? tin[0] : ax_lax_zeros_like(s, z);
    ax_array *zy = tin[1] ? tin[1] : ax_lax_zeros_like(s, z);
    zx = ax_lax_broadcast_to(s, zx, z->ndim, z->shape);
    zy = ax_lax_broadcast_to(s, zy, z->ndim, z->shape);
    pick_x = ax_lax_broadcast_to(s, pick_x, z->ndim, z->shape);
    return ax_tangent_sum(s, ax_lax_select(s, pick_x, zx, zy), NULL, z);
}
TANGENT(max) {
    return extremum_tangent(s, AX_P_GE, in, tin, z);
}
TANGENT(min) {
    return extremum_tangent(s, AX_P_LE, in, tin, z);
}
BINARY(max, "max", AX_MAX, COMM, .jvp = ax_jvp_tangent, .tangent = max_tangent,
       .lower = AX_LOWER(AX_KOP_MAX, AX_DT_NUMBER), AX_EXAMPLES(TWO(-2, 2)));
BINARY(min, "min", AX_MIN, COMM, .jvp = ax_jvp_tangent, .tangent = min_tangent,
       .lower = AX_LOWER(AX_KOP_MIN, AX_DT_NUMBER), AX_EXAMPLES(TWO(-2, 2)));

TANGENT(atan2) {
    OPERANDS;
    ax_array *den = ax_lax_add(s, ax_lax_mul(s, x, x), ax_lax_mul(s, y, y));
    ax_array *a = tx ? ax_lax_mul(s, tx, ax_lax_div(s, y, den)) : NULL;
    ax_array *b = ty ? ax_lax_neg(s, ax_lax_mul(s, ty, ax_lax_div(s, x, den))) : NULL;
    return ax_tangent_sum(s, a, b, z);
}
BINARY(atan2, "atan2", AX_ATAN2, 0, .jvp = ax_jvp_tangent, .tangent = atan2_tangent,
       .lower = AX_LOWER_LIBM("atan2", false), AX_EXAMPLES(TWO(0.3, 2)));

/* its derivative is taken as zero (nextafter(x, y) moves x by one ulp) */
BINARY(nextafter, "nextafter", AX_NEXTAFTER, 0, .jvp = ax_jvp_zero, .lower = AX_LOWER_EAGER,
       AX_EXAMPLES({.nin = 2,
                    .in = {AX_FLOATS(-2, 2, 2, 3), AX_FLOATS(-2, 2, 2, 3)},
                    .skip = AX_EXAMPLE_NO_FD}));

/* comparisons and bitwise operations: bool and integer results */
#define COMPARISON(name, op, kop, flags)                                                           \
    BINARY(name, #name, op, ND | (flags), .lower = AX_LOWER(kop, AX_DT_ALL),                       \
           AX_EXAMPLES(TWO(-2, 2), TWO_INTS(-3, 3)))
COMPARISON(eq, AX_EQ, AX_KOP_EQ, COMM);
COMPARISON(ne, AX_NE, AX_KOP_NE, COMM);
COMPARISON(lt, AX_LT, AX_KOP_LT, 0);
COMPARISON(le, AX_LE, AX_KOP_LE, 0);
COMPARISON(gt, AX_GT, AX_KOP_GT, 0);
COMPARISON(ge, AX_GE, AX_KOP_GE, 0);

#define BITWISE(name, op, kop)                                                                     \
    BINARY(name, #name, op, ND | COMM, .lower = AX_LOWER(kop, AX_DT_BOOL | AX_DT_INT),             \
           AX_EXAMPLES(TWO_INTS(0, 9), {.nin = 2, .in = {AX_BOOLS(2, 3), AX_BOOLS(2, 3)}}))
BITWISE(and, AX_AND, AX_KOP_AND);
BITWISE(or, AX_OR, AX_KOP_OR);
BITWISE(xor, AX_XOR, AX_KOP_XOR);

/* shifts: amounts past the width too */
#define SHIFT(name, op, kop, lo)                                                                   \
    BINARY(name, #name, op, ND,                                                                    \
           .lower = AX_LOWER(kop, AX_DT(AX_I32) | AX_DT(AX_U32) | AX_DT(AX_I64)),                  \
           AX_EXAMPLES(                                                                            \
               {.nin = 2, .in = {AX_INTS(AX_I32, lo, 9, 2, 3), AX_INTS(AX_I32, 0, 40, 2, 3)}}))
SHIFT(shift_left, AX_SHL, AX_KOP_SHL, 0);
SHIFT(shift_right_logical, AX_SHR_LOGICAL, AX_KOP_SHR_LOGICAL, -9);
SHIFT(shift_right_arithmetic, AX_SHR_ARITH, AX_KOP_SHR_ARITH, -9);

/* ---------------------------------------------------------------- others */

AX_EAGER(select) {
    (void)nin, (void)p;
    return ax_eager_one(ax_select(cx, in[0], in[1], in[2]), out);
}
COTANGENT(select) {
    ax_array *zero = ax_lax_zeros_like(s, ct);
    if (lin[1]) r[1] = ax_cotangent_to(s, ax_lax_select(s, in[0], ct, zero), &ty[1]);
    if (lin[2]) r[2] = ax_cotangent_to(s, ax_lax_select(s, in[0], zero, ct), &ty[2]);
    return 0;
}
const ax_prim_info ax_select_info = {
    .name = "select",
    .nin = 3,
    .nout = 1,
    .flags = LIN | EW,
    .shape = ax_shape_select,
    .eager = eager_select,
    .jvp = ax_jvp_linear,
    .linear_in = 6, /* the values, not the predicate */
    .transpose = ax_transpose_linear,
    .cotangent = select_cotangent,
    .batch = ax_batch_elementwise,
    .lower = AX_LOWER(AX_KOP_SELECT, AX_DT_BOOL),
    AX_EXAMPLES(
        {.nin = 3, .in = {AX_BOOLS(2, 3), AX_FLOATS(-2, 2, 2, 3), AX_FLOATS(-2, 2, 2, 3)}},
        {.nin = 3, .in = {AX_BOOLS(3), AX_INTS(AX_I32, -9, 9, 3), AX_INTS(AX_I32, -9, 9, 3)}}),
};

AX_EAGER(clamp) {
    (void)nin, (void)p;
    return ax_eager_one(ax_clamp(cx, in[0], in[1], in[2]), out);
}
/* clamp(lo, x, hi): x's tangent inside the bounds, a bound's where it is taken */
static ax_array *clamp_tangent(ax_scope *s, const ax_params *p, ax_array **in, ax_array **tin,
                               ax_array *out) {
    (void)p;
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
const ax_prim_info ax_clamp_info = {
    .name = "clamp",
    .nin = 3,
    .nout = 1,
    .flags = EW,
    .shape = ax_shape_clamp,
    .eager = eager_clamp,
    .jvp = ax_jvp_tangent,
    .tangent = clamp_tangent,
    .batch = ax_batch_elementwise,
    .lower = AX_LOWER(AX_KOP_CLAMP, AX_DT_NUMBER),
    /* ordered bounds: scalars, or of x's shape */
    AX_EXAMPLES(
        {.nin = 3, .in = {AX_SCALAR(-1.3, -0.7), AX_FLOATS(-2, 2, 4), AX_SCALAR(0.7, 1.3)}},
        {.nin = 3,
         .in = {AX_FLOATS(-1.3, -0.7, 2, 3), AX_FLOATS(-2, 2, 2, 3), AX_FLOATS(0.7, 1.3, 2, 3)}}),
};

AX_EAGER(convert) {
    (void)nin;
    return ax_eager_one(ax_convert(cx, in[0], p->dtype, p->weak), out);
}
static void convert_format(ax_strbuf *s, const ax_params *p) {
    ax_strbuf_appendf(s, "[new_dtype=%s weak_type=%s]", ax_dtype_name(p->dtype),
                      p->weak ? "True" : "False");
}
COTANGENT(convert) {
    (void)in, (void)lin;
    r[0] = ax_lax_convert(s, ct, ty[0].dtype);
    return 0;
}
const ax_prim_info ax_convert_info = {
    .name = "convert_element_type",
    .nin = 1,
    .nout = 1,
    .flags = LIN | EW,
    .shape = ax_shape_convert,
    .eager = eager_convert,
    .jvp = ax_jvp_linear,
    .linear_in = 1,
    .transpose = ax_transpose_linear,
    .cotangent = convert_cotangent,
    .batch = ax_batch_elementwise,
    .identity = ax_identity_operand,
    .format_params = convert_format,
    .lower = AX_LOWER(AX_KOP_CONVERT, AX_DT_ALL),
    AX_EXAMPLES({.nin = 1, .in = {AX_FLOATS(-2, 2, 2, 3)}, .p = {.dtype = AX_F64}},
                {.nin = 1, .in = {AX_FLOATS(-9, 9, 2, 3)}, .p = {.dtype = AX_I32}},
                {.nin = 1, .in = {AX_INTS(AX_I32, -9, 9, 3)}, .p = {.dtype = AX_F32}}),
};

AX_EAGER(bitcast) {
    (void)nin;
    return ax_eager_one(ax_bitcast(cx, in[0], p->dtype), out);
}
static void bitcast_format(ax_strbuf *s, const ax_params *p) {
    ax_strbuf_appendf(s, "[new_dtype=%s]", ax_dtype_name(p->dtype));
}
const ax_prim_info ax_bitcast_info = {
    .name = "bitcast_convert_type",
    .nin = 1,
    .nout = 1,
    .flags = EW | ND,
    .shape = ax_shape_bitcast,
    .eager = eager_bitcast,
    .batch = ax_batch_elementwise,
    .format_params = bitcast_format,
    .lower = AX_LOWER_EAGER,
    AX_EXAMPLES({.nin = 1, .in = {AX_INTS(AX_I32, -9, 9, 3)}, .p = {.dtype = AX_F32}},
                {.nin = 1, .in = {AX_INTS(AX_U32, 0, 9, 2, 3)}, .p = {.dtype = AX_I32}}),
};

/* Eagerly there is nothing to stop: the identity. Transformations give it meaning. */
AX_EAGER(stop_gradient) {
    (void)cx, (void)nin, (void)p;
    return ax_eager_one(ax_array_retain(in[0]), out);
}
const ax_prim_info ax_stop_gradient_info = {
    .name = "stop_gradient",
    .nin = 1,
    .nout = 1,
    .flags = EW,
    .shape = ax_shape_stop_gradient,
    .eager = eager_stop_gradient,
    .jvp = ax_jvp_zero,
    .batch = ax_batch_elementwise,
    .lower = AX_LOWER(AX_KOP_COPY, AX_DT_NUMBER),
    AX_EXAMPLES({.nin = 1, .in = {AX_FLOATS(-2, 2, 2, 3)}, .skip = AX_EXAMPLE_NO_FD}),
};

AX_EAGER(threefry2x32) {
    (void)nin, (void)p;
    return ax_threefry2x32(cx, in[0], in[1], in[2], in[3], &out[0], &out[1]);
}
const ax_prim_info ax_threefry2x32_info = {
    .name = "threefry2x32",
    .nin = 4,
    .nout = 2,
    .flags = EW | ND,
    .shape = ax_shape_threefry2x32,
    .eager = eager_threefry2x32,
    .batch = ax_batch_elementwise,
    .lower = AX_LOWER_EAGER,
    AX_EXAMPLES({.nin = 4,
                 .in = {AX_INT_SCALAR(AX_U32, 0, 1e9), AX_INT_SCALAR(AX_U32, 0, 1e9),
                        AX_INTS(AX_U32, 0, 1e9, 3), AX_INTS(AX_U32, 0, 1e9, 3)}}),
};

/* The elementwise primitives: their rows and every rule about them. Operands share a dtype
 * and have equal shapes or rank 0 (the shape rules of compiler/shape_rules.c); the eager
 * kernels are runtime/elementwise.h's. */
#include <math.h>

#include "../runtime/prng.h"
#include "prim_rows.h"

/* ---------------------------------------------------------------- eager kernels */

#define UNARY_EAGER(name, op)                                                                      \
    AX_EAGER(name) {                                                                               \
        (void)nin, (void)p;                                                                        \
        return ax_eager_one(ax_unary(cx, op, in[0]), out);                                         \
    }
#define BINARY_EAGER(name, op)                                                                     \
    AX_EAGER(name) {                                                                               \
        (void)nin, (void)p;                                                                        \
        return ax_eager_one(ax_binary(cx, op, in[0], in[1]), out);                                 \
    }

// clang-format off
UNARY_EAGER(neg, AX_NEG) UNARY_EAGER(abs, AX_ABS) UNARY_EAGER(sign, AX_SIGN)
UNARY_EAGER(exp, AX_EXP) UNARY_EAGER(exp2, AX_EXP2) UNARY_EAGER(log, AX_LOG)
UNARY_EAGER(log1p, AX_LOG1P) UNARY_EAGER(expm1, AX_EXPM1) UNARY_EAGER(sin, AX_SIN)
UNARY_EAGER(cos, AX_COS) UNARY_EAGER(tan, AX_TAN) UNARY_EAGER(asin, AX_ASIN)
UNARY_EAGER(acos, AX_ACOS) UNARY_EAGER(atan, AX_ATAN) UNARY_EAGER(sinh, AX_SINH)
UNARY_EAGER(cosh, AX_COSH) UNARY_EAGER(tanh, AX_TANH) UNARY_EAGER(asinh, AX_ASINH)
UNARY_EAGER(acosh, AX_ACOSH) UNARY_EAGER(atanh, AX_ATANH) UNARY_EAGER(logistic, AX_LOGISTIC)
UNARY_EAGER(sqrt, AX_SQRT) UNARY_EAGER(rsqrt, AX_RSQRT) UNARY_EAGER(cbrt, AX_CBRT)
UNARY_EAGER(floor, AX_FLOOR) UNARY_EAGER(ceil, AX_CEIL) UNARY_EAGER(round, AX_ROUND)
UNARY_EAGER(erf, AX_ERF) UNARY_EAGER(erfc, AX_ERFC) UNARY_EAGER(erf_inv, AX_ERF_INV)
UNARY_EAGER(lgamma, AX_LGAMMA) UNARY_EAGER(digamma, AX_DIGAMMA)
UNARY_EAGER(is_finite, AX_IS_FINITE) UNARY_EAGER(not, AX_NOT) UNARY_EAGER(square, AX_SQUARE)

BINARY_EAGER(add, AX_ADD) BINARY_EAGER(sub, AX_SUB) BINARY_EAGER(mul, AX_MUL)
BINARY_EAGER(div, AX_DIV) BINARY_EAGER(floor_divide, AX_FLOOR_DIV) BINARY_EAGER(rem, AX_REM)
BINARY_EAGER(mod, AX_MOD) BINARY_EAGER(pow, AX_POW) BINARY_EAGER(max, AX_MAX)
BINARY_EAGER(min, AX_MIN) BINARY_EAGER(atan2, AX_ATAN2) BINARY_EAGER(nextafter, AX_NEXTAFTER)
BINARY_EAGER(eq, AX_EQ) BINARY_EAGER(ne, AX_NE) BINARY_EAGER(lt, AX_LT) BINARY_EAGER(le, AX_LE)
BINARY_EAGER(gt, AX_GT) BINARY_EAGER(ge, AX_GE) BINARY_EAGER(and, AX_AND)
BINARY_EAGER(or, AX_OR) BINARY_EAGER(xor, AX_XOR) BINARY_EAGER(shift_left, AX_SHL)
BINARY_EAGER(shift_right_logical, AX_SHR_LOGICAL)
BINARY_EAGER(shift_right_arithmetic, AX_SHR_ARITH)

    // clang-format on

    AX_EAGER(integer_pow) {
    (void)nin;
    return ax_eager_one(ax_integer_pow(cx, in[0], p->k), out);
}

AX_EAGER(select) {
    (void)nin, (void)p;
    return ax_eager_one(ax_select(cx, in[0], in[1], in[2]), out);
}

AX_EAGER(clamp) {
    (void)nin, (void)p;
    return ax_eager_one(ax_clamp(cx, in[0], in[1], in[2]), out);
}

AX_EAGER(convert) {
    (void)nin;
    return ax_eager_one(ax_convert(cx, in[0], p->dtype, p->weak), out);
}

AX_EAGER(bitcast) {
    (void)nin;
    return ax_eager_one(ax_bitcast(cx, in[0], p->dtype), out);
}

/* Eagerly there is nothing to stop: the identity. Transformations give it meaning. */
AX_EAGER(stop_gradient) {
    (void)cx, (void)nin, (void)p;
    return ax_eager_one(ax_array_retain(in[0]), out);
}

AX_EAGER(threefry2x32) {
    (void)nin, (void)p;
    return ax_threefry2x32(cx, in[0], in[1], in[2], in[3], &out[0], &out[1]);
}

/* ---------------------------------------------------------------- rows */

/* Flags follow JAX: LIN marks primitives with a transpose rule (linear in their float operands:
 * mul, div (in the numerator) and select (in the values) are linear in each operand
 * separately; convert is linear between float dtypes). ND marks primitives whose outputs carry
 * no derivative (bool/int results); floor/ceil/round/sign and stop_gradient are
 * differentiable with a zero derivative. */

const ax_prim_info ax_neg_info = {
    .name = "neg",
    .nin = 1,
    .nout = 1,
    .flags = LIN | EW,
    .shape = ax_shape_neg,
    .eager = eager_neg,
    .jvp = ax_jvp_unary,
    .transpose = ax_transpose_linear,
    .batch = ax_batch_elementwise,
    .lower = AX_LOWER(AX_KOP_NEG, AX_DT_NUMBER),
};

const ax_prim_info ax_abs_info = {
    .name = "abs",
    .nin = 1,
    .nout = 1,
    .flags = EW,
    .shape = ax_shape_abs,
    .eager = eager_abs,
    .jvp = ax_jvp_unary,
    .batch = ax_batch_elementwise,
    .lower = AX_LOWER(AX_KOP_ABS, AX_DT_FLOAT | AX_DT(AX_I32) | AX_DT(AX_U32) | AX_DT(AX_I64)),
};

const ax_prim_info ax_sign_info = {
    .name = "sign",
    .nin = 1,
    .nout = 1,
    .flags = EW,
    .shape = ax_shape_sign,
    .eager = eager_sign,
    .jvp = ax_jvp_zero,
    .batch = ax_batch_elementwise,
    .lower = AX_LOWER(AX_KOP_SIGN, AX_DT_FLOAT | AX_DT(AX_I32) | AX_DT(AX_U32) | AX_DT(AX_I64)),
};

const ax_prim_info ax_exp_info = {
    .name = "exp",
    .nin = 1,
    .nout = 1,
    .flags = EW,
    .shape = ax_shape_exp,
    .eager = eager_exp,
    .jvp = ax_jvp_unary,
    .batch = ax_batch_elementwise,
    .lower = AX_LOWER_LIBM("exp", false),
};

const ax_prim_info ax_exp2_info = {
    .name = "exp2",
    .nin = 1,
    .nout = 1,
    .flags = EW,
    .shape = ax_shape_exp2,
    .eager = eager_exp2,
    .jvp = ax_jvp_unary,
    .batch = ax_batch_elementwise,
    .lower = AX_LOWER_LIBM("exp2", true),
};

const ax_prim_info ax_log_info = {
    .name = "log",
    .nin = 1,
    .nout = 1,
    .flags = EW,
    .shape = ax_shape_log,
    .eager = eager_log,
    .jvp = ax_jvp_unary,
    .batch = ax_batch_elementwise,
    .lower = AX_LOWER_LIBM("log", false),
};

const ax_prim_info ax_log1p_info = {
    .name = "log1p",
    .nin = 1,
    .nout = 1,
    .flags = EW,
    .shape = ax_shape_log1p,
    .eager = eager_log1p,
    .jvp = ax_jvp_unary,
    .batch = ax_batch_elementwise,
    .lower = AX_LOWER_LIBM("log1p", true),
};

const ax_prim_info ax_expm1_info = {
    .name = "expm1",
    .nin = 1,
    .nout = 1,
    .flags = EW,
    .shape = ax_shape_expm1,
    .eager = eager_expm1,
    .jvp = ax_jvp_unary,
    .batch = ax_batch_elementwise,
    .lower = AX_LOWER_LIBM("expm1", false),
};

const ax_prim_info ax_sin_info = {
    .name = "sin",
    .nin = 1,
    .nout = 1,
    .flags = EW,
    .shape = ax_shape_sin,
    .eager = eager_sin,
    .jvp = ax_jvp_unary,
    .batch = ax_batch_elementwise,
    .lower = AX_LOWER_LIBM("sin", true),
};

const ax_prim_info ax_cos_info = {
    .name = "cos",
    .nin = 1,
    .nout = 1,
    .flags = EW,
    .shape = ax_shape_cos,
    .eager = eager_cos,
    .jvp = ax_jvp_unary,
    .batch = ax_batch_elementwise,
    .lower = AX_LOWER_LIBM("cos", true),
};

const ax_prim_info ax_tan_info = {
    .name = "tan",
    .nin = 1,
    .nout = 1,
    .flags = EW,
    .shape = ax_shape_tan,
    .eager = eager_tan,
    .jvp = ax_jvp_unary,
    .batch = ax_batch_elementwise,
    .lower = AX_LOWER_LIBM("tan", false),
};

const ax_prim_info ax_asin_info = {
    .name = "asin",
    .nin = 1,
    .nout = 1,
    .flags = EW,
    .shape = ax_shape_asin,
    .eager = eager_asin,
    .jvp = ax_jvp_unary,
    .batch = ax_batch_elementwise,
    .lower = AX_LOWER_LIBM("asin", false),
};

const ax_prim_info ax_acos_info = {
    .name = "acos",
    .nin = 1,
    .nout = 1,
    .flags = EW,
    .shape = ax_shape_acos,
    .eager = eager_acos,
    .jvp = ax_jvp_unary,
    .batch = ax_batch_elementwise,
    .lower = AX_LOWER_LIBM("acos", true),
};

const ax_prim_info ax_atan_info = {
    .name = "atan",
    .nin = 1,
    .nout = 1,
    .flags = EW,
    .shape = ax_shape_atan,
    .eager = eager_atan,
    .jvp = ax_jvp_unary,
    .batch = ax_batch_elementwise,
    .lower = AX_LOWER_LIBM("atan", false),
};

const ax_prim_info ax_sinh_info = {
    .name = "sinh",
    .nin = 1,
    .nout = 1,
    .flags = EW,
    .shape = ax_shape_sinh,
    .eager = eager_sinh,
    .jvp = ax_jvp_unary,
    .batch = ax_batch_elementwise,
    .lower = AX_LOWER_LIBM("sinh", true),
};

const ax_prim_info ax_cosh_info = {
    .name = "cosh",
    .nin = 1,
    .nout = 1,
    .flags = EW,
    .shape = ax_shape_cosh,
    .eager = eager_cosh,
    .jvp = ax_jvp_unary,
    .batch = ax_batch_elementwise,
    .lower = AX_LOWER_LIBM("cosh", false),
};

const ax_prim_info ax_tanh_info = {
    .name = "tanh",
    .nin = 1,
    .nout = 1,
    .flags = EW,
    .shape = ax_shape_tanh,
    .eager = eager_tanh,
    .jvp = ax_jvp_unary,
    .batch = ax_batch_elementwise,
    .lower = AX_LOWER_LIBM("tanh", true),
};

const ax_prim_info ax_asinh_info = {
    .name = "asinh",
    .nin = 1,
    .nout = 1,
    .flags = EW,
    .shape = ax_shape_asinh,
    .eager = eager_asinh,
    .jvp = ax_jvp_unary,
    .batch = ax_batch_elementwise,
    .lower = AX_LOWER_LIBM("asinh", true),
};

const ax_prim_info ax_acosh_info = {
    .name = "acosh",
    .nin = 1,
    .nout = 1,
    .flags = EW,
    .shape = ax_shape_acosh,
    .eager = eager_acosh,
    .jvp = ax_jvp_unary,
    .batch = ax_batch_elementwise,
    .lower = AX_LOWER_LIBM("acosh", true),
};

const ax_prim_info ax_atanh_info = {
    .name = "atanh",
    .nin = 1,
    .nout = 1,
    .flags = EW,
    .shape = ax_shape_atanh,
    .eager = eager_atanh,
    .jvp = ax_jvp_unary,
    .batch = ax_batch_elementwise,
    .lower = AX_LOWER_LIBM("atanh", true),
};

const ax_prim_info ax_logistic_info = {
    .name = "logistic",
    .nin = 1,
    .nout = 1,
    .flags = EW,
    .shape = ax_shape_logistic,
    .eager = eager_logistic,
    .jvp = ax_jvp_unary,
    .batch = ax_batch_elementwise,
    .lower = AX_LOWER(AX_KOP_LOGISTIC, AX_DT_FLOAT),
};

const ax_prim_info ax_sqrt_info = {
    .name = "sqrt",
    .nin = 1,
    .nout = 1,
    .flags = EW,
    .shape = ax_shape_sqrt,
    .eager = eager_sqrt,
    .jvp = ax_jvp_unary,
    .batch = ax_batch_elementwise,
    .lower = AX_LOWER_BUILTIN("sqrt"),
};

const ax_prim_info ax_rsqrt_info = {
    .name = "rsqrt",
    .nin = 1,
    .nout = 1,
    .flags = EW,
    .shape = ax_shape_rsqrt,
    .eager = eager_rsqrt,
    .jvp = ax_jvp_unary,
    .batch = ax_batch_elementwise,
    .lower = AX_LOWER(AX_KOP_RSQRT, AX_DT_FLOAT),
};

const ax_prim_info ax_cbrt_info = {
    .name = "cbrt",
    .nin = 1,
    .nout = 1,
    .flags = EW,
    .shape = ax_shape_cbrt,
    .eager = eager_cbrt,
    .jvp = ax_jvp_unary,
    .batch = ax_batch_elementwise,
    .lower = AX_LOWER_LIBM("cbrt", true),
};

const ax_prim_info ax_floor_info = {
    .name = "floor",
    .nin = 1,
    .nout = 1,
    .flags = EW,
    .shape = ax_shape_floor,
    .eager = eager_floor,
    .jvp = ax_jvp_zero,
    .batch = ax_batch_elementwise,
    .lower = AX_LOWER_BUILTIN("floor"),
};

const ax_prim_info ax_ceil_info = {
    .name = "ceil",
    .nin = 1,
    .nout = 1,
    .flags = EW,
    .shape = ax_shape_ceil,
    .eager = eager_ceil,
    .jvp = ax_jvp_zero,
    .batch = ax_batch_elementwise,
    .lower = AX_LOWER_BUILTIN("ceil"),
};

const ax_prim_info ax_round_info = {
    .name = "round",
    .nin = 1,
    .nout = 1,
    .flags = EW,
    .shape = ax_shape_round,
    .eager = eager_round,
    .jvp = ax_jvp_zero,
    .batch = ax_batch_elementwise,
    .lower = AX_LOWER_BUILTIN("rint"),
};

const ax_prim_info ax_erf_info = {
    .name = "erf",
    .nin = 1,
    .nout = 1,
    .flags = EW,
    .shape = ax_shape_erf,
    .eager = eager_erf,
    .jvp = ax_jvp_unary,
    .batch = ax_batch_elementwise,
    .lower = AX_LOWER_LIBM("erf", false),
};

const ax_prim_info ax_erfc_info = {
    .name = "erfc",
    .nin = 1,
    .nout = 1,
    .flags = EW,
    .shape = ax_shape_erfc,
    .eager = eager_erfc,
    .jvp = ax_jvp_unary,
    .batch = ax_batch_elementwise,
    .lower = AX_LOWER_LIBM("erfc", true),
};

const ax_prim_info ax_erf_inv_info = {
    .name = "erf_inv",
    .nin = 1,
    .nout = 1,
    .flags = EW,
    .shape = ax_shape_erf_inv,
    .eager = eager_erf_inv,
    .jvp = ax_jvp_unary,
    .batch = ax_batch_elementwise,
    .lower = AX_LOWER_AXFN(AX_FN_ERF_INV_F32),
};

const ax_prim_info ax_lgamma_info = {
    .name = "lgamma",
    .nin = 1,
    .nout = 1,
    .flags = EW,
    .shape = ax_shape_lgamma,
    .eager = eager_lgamma,
    .jvp = ax_jvp_unary,
    .batch = ax_batch_elementwise,
    .lower = AX_LOWER_AXFN(AX_FN_LGAMMA_F32),
};

const ax_prim_info ax_digamma_info = {
    .name = "digamma",
    .nin = 1,
    .nout = 1,
    .flags = EW,
    .shape = ax_shape_digamma,
    .eager = eager_digamma,
    .jvp = ax_jvp_unary,
    .batch = ax_batch_elementwise,
    .lower = AX_LOWER_AXFN(AX_FN_DIGAMMA_F32),
};

const ax_prim_info ax_is_finite_info = {
    .name = "is_finite",
    .nin = 1,
    .nout = 1,
    .flags = EW | ND,
    .shape = ax_shape_is_finite,
    .eager = eager_is_finite,
    .batch = ax_batch_elementwise,
    .lower = AX_LOWER(AX_KOP_IS_FINITE, AX_DT_FLOAT),
};

const ax_prim_info ax_not_info = {
    .name = "not",
    .nin = 1,
    .nout = 1,
    .flags = EW | ND,
    .shape = ax_shape_not,
    .eager = eager_not,
    .batch = ax_batch_elementwise,
    .lower = AX_LOWER(AX_KOP_NOT, AX_DT_BOOL | AX_DT_INT),
};

const ax_prim_info ax_square_info = {
    .name = "square",
    .nin = 1,
    .nout = 1,
    .flags = EW,
    .shape = ax_shape_square,
    .eager = eager_square,
    .jvp = ax_jvp_unary,
    .batch = ax_batch_elementwise,
    .lower = AX_LOWER(AX_KOP_SQUARE, AX_DT_NUMBER),
};

const ax_prim_info ax_integer_pow_info = {
    .name = "integer_pow",
    .nin = 1,
    .nout = 1,
    .flags = EW,
    .shape = ax_shape_integer_pow,
    .eager = eager_integer_pow,
    .jvp = ax_jvp_unary,
    .batch = ax_batch_elementwise,
    .lower = AX_LOWER(AX_KOP_INTEGER_POW, AX_DT_FLOAT),
};

const ax_prim_info ax_add_info = {
    .name = "add",
    .nin = 2,
    .nout = 1,
    .flags = LIN | EW | COMM,
    .shape = ax_shape_add,
    .eager = eager_add,
    .jvp = ax_jvp_binary,
    .transpose = ax_transpose_linear,
    .batch = ax_batch_elementwise,
    .lower = AX_LOWER(AX_KOP_ADD, AX_DT_NUMBER),
};

const ax_prim_info ax_sub_info = {
    .name = "sub",
    .nin = 2,
    .nout = 1,
    .flags = LIN | EW,
    .shape = ax_shape_sub,
    .eager = eager_sub,
    .jvp = ax_jvp_binary,
    .transpose = ax_transpose_linear,
    .batch = ax_batch_elementwise,
    .lower = AX_LOWER(AX_KOP_SUB, AX_DT_NUMBER),
};

const ax_prim_info ax_mul_info = {
    .name = "mul",
    .nin = 2,
    .nout = 1,
    .flags = LIN | EW | COMM,
    .shape = ax_shape_mul,
    .eager = eager_mul,
    .jvp = ax_jvp_binary,
    .transpose = ax_transpose_linear,
    .batch = ax_batch_elementwise,
    .lower = AX_LOWER(AX_KOP_MUL, AX_DT_NUMBER),
};

const ax_prim_info ax_div_info = {
    .name = "div",
    .nin = 2,
    .nout = 1,
    .flags = LIN | EW,
    .shape = ax_shape_div,
    .eager = eager_div,
    .jvp = ax_jvp_binary,
    .transpose = ax_transpose_linear,
    .batch = ax_batch_elementwise,
    .lower = AX_LOWER(AX_KOP_DIV, AX_DT_FLOAT),
};

const ax_prim_info ax_floor_divide_info = {
    .name = "floor_divide",
    .nin = 2,
    .nout = 1,
    .flags = EW,
    .shape = ax_shape_floor_divide,
    .eager = eager_floor_divide,
    .jvp = ax_jvp_binary,
    .batch = ax_batch_elementwise,
    .lower = AX_LOWER_EAGER,
};

const ax_prim_info ax_rem_info = {
    .name = "rem",
    .nin = 2,
    .nout = 1,
    .flags = EW,
    .shape = ax_shape_rem,
    .eager = eager_rem,
    .jvp = ax_jvp_binary,
    .batch = ax_batch_elementwise,
    .lower = AX_LOWER_EAGER,
};

const ax_prim_info ax_mod_info = {
    .name = "mod",
    .nin = 2,
    .nout = 1,
    .flags = EW,
    .shape = ax_shape_mod,
    .eager = eager_mod,
    .jvp = ax_jvp_binary,
    .batch = ax_batch_elementwise,
    .lower = AX_LOWER_EAGER,
};

const ax_prim_info ax_pow_info = {
    .name = "pow",
    .nin = 2,
    .nout = 1,
    .flags = EW,
    .shape = ax_shape_pow,
    .eager = eager_pow,
    .jvp = ax_jvp_binary,
    .batch = ax_batch_elementwise,
    .lower = AX_LOWER_LIBM("pow", false),
};

const ax_prim_info ax_max_info = {
    .name = "max",
    .nin = 2,
    .nout = 1,
    .flags = EW | COMM,
    .shape = ax_shape_max,
    .eager = eager_max,
    .jvp = ax_jvp_binary,
    .batch = ax_batch_elementwise,
    .lower = AX_LOWER(AX_KOP_MAX, AX_DT_NUMBER),
};

const ax_prim_info ax_min_info = {
    .name = "min",
    .nin = 2,
    .nout = 1,
    .flags = EW | COMM,
    .shape = ax_shape_min,
    .eager = eager_min,
    .jvp = ax_jvp_binary,
    .batch = ax_batch_elementwise,
    .lower = AX_LOWER(AX_KOP_MIN, AX_DT_NUMBER),
};

const ax_prim_info ax_atan2_info = {
    .name = "atan2",
    .nin = 2,
    .nout = 1,
    .flags = EW,
    .shape = ax_shape_atan2,
    .eager = eager_atan2,
    .jvp = ax_jvp_binary,
    .batch = ax_batch_elementwise,
    .lower = AX_LOWER_LIBM("atan2", false),
};

const ax_prim_info ax_nextafter_info = {
    .name = "nextafter",
    .nin = 2,
    .nout = 1,
    .flags = EW,
    .shape = ax_shape_nextafter,
    .eager = eager_nextafter,
    .jvp = ax_jvp_binary,
    .batch = ax_batch_elementwise,
    .lower = AX_LOWER_EAGER,
};

const ax_prim_info ax_eq_info = {
    .name = "eq",
    .nin = 2,
    .nout = 1,
    .flags = EW | ND | COMM,
    .shape = ax_shape_eq,
    .eager = eager_eq,
    .batch = ax_batch_elementwise,
    .lower = AX_LOWER(AX_KOP_EQ, AX_DT_ALL),
};

const ax_prim_info ax_ne_info = {
    .name = "ne",
    .nin = 2,
    .nout = 1,
    .flags = EW | ND | COMM,
    .shape = ax_shape_ne,
    .eager = eager_ne,
    .batch = ax_batch_elementwise,
    .lower = AX_LOWER(AX_KOP_NE, AX_DT_ALL),
};

const ax_prim_info ax_lt_info = {
    .name = "lt",
    .nin = 2,
    .nout = 1,
    .flags = EW | ND,
    .shape = ax_shape_lt,
    .eager = eager_lt,
    .batch = ax_batch_elementwise,
    .lower = AX_LOWER(AX_KOP_LT, AX_DT_ALL),
};

const ax_prim_info ax_le_info = {
    .name = "le",
    .nin = 2,
    .nout = 1,
    .flags = EW | ND,
    .shape = ax_shape_le,
    .eager = eager_le,
    .batch = ax_batch_elementwise,
    .lower = AX_LOWER(AX_KOP_LE, AX_DT_ALL),
};

const ax_prim_info ax_gt_info = {
    .name = "gt",
    .nin = 2,
    .nout = 1,
    .flags = EW | ND,
    .shape = ax_shape_gt,
    .eager = eager_gt,
    .batch = ax_batch_elementwise,
    .lower = AX_LOWER(AX_KOP_GT, AX_DT_ALL),
};

const ax_prim_info ax_ge_info = {
    .name = "ge",
    .nin = 2,
    .nout = 1,
    .flags = EW | ND,
    .shape = ax_shape_ge,
    .eager = eager_ge,
    .batch = ax_batch_elementwise,
    .lower = AX_LOWER(AX_KOP_GE, AX_DT_ALL),
};

const ax_prim_info ax_and_info = {
    .name = "and",
    .nin = 2,
    .nout = 1,
    .flags = EW | ND | COMM,
    .shape = ax_shape_and,
    .eager = eager_and,
    .batch = ax_batch_elementwise,
    .lower = AX_LOWER(AX_KOP_AND, AX_DT_BOOL | AX_DT_INT),
};

const ax_prim_info ax_or_info = {
    .name = "or",
    .nin = 2,
    .nout = 1,
    .flags = EW | ND | COMM,
    .shape = ax_shape_or,
    .eager = eager_or,
    .batch = ax_batch_elementwise,
    .lower = AX_LOWER(AX_KOP_OR, AX_DT_BOOL | AX_DT_INT),
};

const ax_prim_info ax_xor_info = {
    .name = "xor",
    .nin = 2,
    .nout = 1,
    .flags = EW | ND | COMM,
    .shape = ax_shape_xor,
    .eager = eager_xor,
    .batch = ax_batch_elementwise,
    .lower = AX_LOWER(AX_KOP_XOR, AX_DT_BOOL | AX_DT_INT),
};

const ax_prim_info ax_shift_left_info = {
    .name = "shift_left",
    .nin = 2,
    .nout = 1,
    .flags = EW | ND,
    .shape = ax_shape_shift_left,
    .eager = eager_shift_left,
    .batch = ax_batch_elementwise,
    .lower = AX_LOWER(AX_KOP_SHL, AX_DT(AX_I32) | AX_DT(AX_U32) | AX_DT(AX_I64)),
};

const ax_prim_info ax_shift_right_logical_info = {
    .name = "shift_right_logical",
    .nin = 2,
    .nout = 1,
    .flags = EW | ND,
    .shape = ax_shape_shift_right_logical,
    .eager = eager_shift_right_logical,
    .batch = ax_batch_elementwise,
    .lower = AX_LOWER(AX_KOP_SHR_LOGICAL, AX_DT(AX_I32) | AX_DT(AX_U32) | AX_DT(AX_I64)),
};

const ax_prim_info ax_shift_right_arithmetic_info = {
    .name = "shift_right_arithmetic",
    .nin = 2,
    .nout = 1,
    .flags = EW | ND,
    .shape = ax_shape_shift_right_arithmetic,
    .eager = eager_shift_right_arithmetic,
    .batch = ax_batch_elementwise,
    .lower = AX_LOWER(AX_KOP_SHR_ARITH, AX_DT(AX_I32) | AX_DT(AX_U32) | AX_DT(AX_I64)),
};

const ax_prim_info ax_select_info = {
    .name = "select",
    .nin = 3,
    .nout = 1,
    .flags = LIN | EW,
    .shape = ax_shape_select,
    .eager = eager_select,
    .jvp = ax_jvp_linear,
    .transpose = ax_transpose_linear,
    .batch = ax_batch_elementwise,
    .lower = AX_LOWER(AX_KOP_SELECT, AX_DT_BOOL),
};

const ax_prim_info ax_clamp_info = {
    .name = "clamp",
    .nin = 3,
    .nout = 1,
    .flags = EW,
    .shape = ax_shape_clamp,
    .eager = eager_clamp,
    .jvp = ax_jvp_special,
    .batch = ax_batch_elementwise,
    .lower = AX_LOWER(AX_KOP_CLAMP, AX_DT_NUMBER),
};

const ax_prim_info ax_convert_info = {
    .name = "convert_element_type",
    .nin = 1,
    .nout = 1,
    .flags = LIN | EW,
    .shape = ax_shape_convert,
    .eager = eager_convert,
    .jvp = ax_jvp_linear,
    .transpose = ax_transpose_linear,
    .batch = ax_batch_elementwise,
    .lower = AX_LOWER(AX_KOP_CONVERT, AX_DT_ALL),
};

const ax_prim_info ax_bitcast_info = {
    .name = "bitcast_convert_type",
    .nin = 1,
    .nout = 1,
    .flags = EW | ND,
    .shape = ax_shape_bitcast,
    .eager = eager_bitcast,
    .batch = ax_batch_elementwise,
    .lower = AX_LOWER_EAGER,
};

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
};

const ax_prim_info ax_threefry2x32_info = {
    .name = "threefry2x32",
    .nin = 4,
    .nout = 2,
    .flags = EW | ND,
    .shape = ax_shape_threefry2x32,
    .eager = eager_threefry2x32,
    .batch = ax_batch_elementwise,
    .lower = AX_LOWER_EAGER,
};

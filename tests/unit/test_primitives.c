/* The primitive table's shape rules, flags and bind: the flags say what the primitives do
 * (elementwise ones compute pointwise, linear ones are linear, non-differentiable ones give
 * zero tangents), every shape rule agrees with its eager kernel on every dtype it accepts (and
 * rejects the others with a TypeError), errors read in the user's terms, weak types propagate,
 * and bind hands tracers to the right transformation.
 *
 * Every other rule of each row (JVP, transposition, batching, jit) is checked on the row's
 * examples by tests/unit/test_prim_table.c. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../compiler/ad.h"
#include "../../compiler/linalg_rules.h"
#include "../../compiler/primitive.h"
#include "../../compiler/trace.h"

/* ---- helpers ---- */

static ax_array *make(ax_ctx *cx, ax_dtype t, int ndim, const int64_t *shape, const double *vals) {
    static const int64_t no_dims[1] = {0}; /* rank 0: a shape pointer that is not NULL */
    ax_array *a = ax_array_new(cx, t, ndim, shape ? shape : no_dims);
    assert_non_null(a);
    char *dst = a->buf->data;
    for (int64_t i = 0; i < a->size; i++)
        ax_convert_element(t, dst + i * (int64_t)ax_dtype_size(t), AX_F64, &vals[i]);
    return a;
}

#define SHAPE(...)                                                                                 \
    (const int64_t[]) {                                                                            \
        __VA_ARGS__                                                                                \
    }
#define VALS(...)                                                                                  \
    (const double[]) {                                                                             \
        __VA_ARGS__                                                                                \
    }

static void assert_values(const ax_array *a, int n, const double *want) {
    assert_non_null(a);
    assert_int_equal(a->size, n);
    for (int i = 0; i < n; i++) assert_float_equal(ax_array_get_f64(a, i), want[i], 1e-6);
}

static void assert_error(ax_ctx *cx, ax_error_kind kind, const char *message) {
    assert_true(ax_error_pending(cx));
    if (cx->err.kind != kind || strcmp(cx->err.message, message) != 0)
        fail_msg("expected %s \"%s\"\n     got %s \"%s\"", ax_error_kind_name(kind), message,
                 ax_error_kind_name(cx->err.kind), cx->err.message);
    ax_error_clear(cx);
}

static int setup(void **state) {
    *state = ax_ctx_new();
    return *state ? 0 : -1;
}

static int teardown(void **state) {
    ax_ctx_free(*state);
    return 0;
}

/* ---- the table ---- */

/* Rows are found by their printed names, which are unique. (What each row's rules do is
 * checked on its examples by tests/unit/test_prim_table.c.) */
static void test_names(void **state) {
    (void)state;
    for (int p = 0; p < AX_P_NPRIMS; p++) {
        const ax_prim_info *info = ax_prim_get((ax_prim)p);
        if (!info->name || !info->name[0]) fail_msg("primitive %d has no name", p);
        assert_int_equal(ax_prim_lookup(info->name), p);
    }
    assert_null(ax_prim_get(AX_P_NPRIMS));
    assert_int_equal(ax_prim_lookup("no_such_primitive"), -1);
    assert_int_equal(ax_prim_lookup("convert_element_type"), AX_P_CONVERT);
    assert_int_equal(ax_prim_lookup("broadcast_in_dim"), AX_P_BROADCAST_IN_DIM);
}

/* ---- every shape rule agrees with its kernel ---- */

enum { VAR, PRED, IDX, START }; /* what an input holds: the dtype under test, bool, i32 */

typedef struct {
    int role, ndim;
    int64_t shape[4];
    int64_t bound; /* IDX: values in [0, bound) */
} input_spec;

/* Which dtypes a case's rule should accept. */
#define DT(t)       (1u << (t))
#define FLOATS      (DT(AX_F32) | DT(AX_F64))
#define INTS        (DT(AX_U8) | DT(AX_I32) | DT(AX_U32) | DT(AX_I64))
#define ALL         (FLOATS | INTS | DT(AX_BOOL))
#define FROM_UNARY  (1u << 30) /* ax_unary_accepts(op) */
#define FROM_BINARY (1u << 31)

typedef struct {
    ax_prim prim;
    int op; /* the unary/binary op, for FROM_UNARY / FROM_BINARY */
    int nin;
    input_spec in[5];
    ax_params params;
    unsigned accepted;
    bool dtype_param; /* params.dtype is the dtype under test (iota) */
} prim_case;

#define IN(role, ...)                                                                              \
    { role, sizeof((int64_t[]){0, __VA_ARGS__}) / 8 - 1, {__VA_ARGS__}, 0 }
#define IN0(role)                                                                                  \
    { role, 0, {0}, 0 }
#define U(P, OP)                                                                                   \
    { P, OP, 1, {IN(VAR, 2, 3)}, {0}, FROM_UNARY, false }
#define B(P, OP)                                                                                   \
    { P, OP, 2, {IN(VAR, 2, 3), IN(VAR, 2, 3)}, {0}, FROM_BINARY, false }
#define CONVERT(T)                                                                                 \
    { AX_P_CONVERT, 0, 1, {IN(VAR, 3)}, {.dtype = T}, ALL, false }

static const prim_case cases[] = {
    U(AX_P_NEG, AX_NEG),
    U(AX_P_ABS, AX_ABS),
    U(AX_P_SIGN, AX_SIGN),
    U(AX_P_EXP, AX_EXP),
    U(AX_P_EXP2, AX_EXP2),
    U(AX_P_LOG, AX_LOG),
    U(AX_P_LOG1P, AX_LOG1P),
    U(AX_P_EXPM1, AX_EXPM1),
    U(AX_P_SIN, AX_SIN),
    U(AX_P_COS, AX_COS),
    U(AX_P_TAN, AX_TAN),
    U(AX_P_ASIN, AX_ASIN),
    U(AX_P_ACOS, AX_ACOS),
    U(AX_P_ATAN, AX_ATAN),
    U(AX_P_SINH, AX_SINH),
    U(AX_P_COSH, AX_COSH),
    U(AX_P_TANH, AX_TANH),
    U(AX_P_ASINH, AX_ASINH),
    U(AX_P_ACOSH, AX_ACOSH),
    U(AX_P_ATANH, AX_ATANH),
    U(AX_P_LOGISTIC, AX_LOGISTIC),
    U(AX_P_SQRT, AX_SQRT),
    U(AX_P_RSQRT, AX_RSQRT),
    U(AX_P_CBRT, AX_CBRT),
    U(AX_P_FLOOR, AX_FLOOR),
    U(AX_P_CEIL, AX_CEIL),
    U(AX_P_ROUND, AX_ROUND),
    U(AX_P_ERF, AX_ERF),
    U(AX_P_ERFC, AX_ERFC),
    U(AX_P_ERF_INV, AX_ERF_INV),
    U(AX_P_LGAMMA, AX_LGAMMA),
    U(AX_P_DIGAMMA, AX_DIGAMMA),
    U(AX_P_IS_FINITE, AX_IS_FINITE),
    U(AX_P_NOT, AX_NOT),
    U(AX_P_SQUARE, AX_SQUARE),
    {AX_P_INTEGER_POW, 0, 1, {IN(VAR, 4)}, {.k = 3}, INTS | FLOATS, false},
    {AX_P_INTEGER_POW, 0, 1, {IN(VAR, 4)}, {.k = -2}, FLOATS, false},

    B(AX_P_ADD, AX_ADD),
    B(AX_P_SUB, AX_SUB),
    B(AX_P_MUL, AX_MUL),
    B(AX_P_DIV, AX_DIV),
    B(AX_P_FLOOR_DIV, AX_FLOOR_DIV),
    B(AX_P_REM, AX_REM),
    B(AX_P_MOD, AX_MOD),
    B(AX_P_POW, AX_POW),
    B(AX_P_MAX, AX_MAX),
    B(AX_P_MIN, AX_MIN),
    B(AX_P_ATAN2, AX_ATAN2),
    B(AX_P_NEXTAFTER, AX_NEXTAFTER),
    B(AX_P_EQ, AX_EQ),
    B(AX_P_NE, AX_NE),
    B(AX_P_LT, AX_LT),
    B(AX_P_LE, AX_LE),
    B(AX_P_GT, AX_GT),
    B(AX_P_GE, AX_GE),
    B(AX_P_AND, AX_AND),
    B(AX_P_OR, AX_OR),
    B(AX_P_XOR, AX_XOR),
    B(AX_P_SHL, AX_SHL),
    B(AX_P_SHR_LOGICAL, AX_SHR_LOGICAL),
    B(AX_P_SHR_ARITH, AX_SHR_ARITH),
    {AX_P_ADD, AX_ADD, 2, {IN(VAR, 3), IN0(VAR)}, {0}, FROM_BINARY, false},
    {AX_P_LT, AX_LT, 2, {IN0(VAR), IN(VAR, 2, 2)}, {0}, FROM_BINARY, false},

    {AX_P_SELECT, 0, 3, {IN(PRED, 2, 3), IN(VAR, 2, 3), IN(VAR, 2, 3)}, {0}, ALL, false},
    {AX_P_SELECT, 0, 3, {IN0(PRED), IN(VAR, 4), IN0(VAR)}, {0}, ALL, false},
    {AX_P_CLAMP, 0, 3, {IN0(VAR), IN(VAR, 4), IN0(VAR)}, {0}, INTS | FLOATS, false},
    {AX_P_CLAMP, 0, 3, {IN(VAR, 4), IN(VAR, 4), IN(VAR, 4)}, {0}, INTS | FLOATS, false},
    CONVERT(AX_BOOL),
    CONVERT(AX_U8),
    CONVERT(AX_I32),
    CONVERT(AX_U32),
    CONVERT(AX_I64),
    CONVERT(AX_F32),
    CONVERT(AX_F64),
    {AX_P_CONVERT, 0, 1, {IN(VAR, 3)}, {.dtype = AX_F32, .weak = true}, ALL, false},
    {AX_P_BITCAST,
     0,
     1,
     {IN(VAR, 3)},
     {.dtype = AX_I32},
     DT(AX_I32) | DT(AX_U32) | DT(AX_F32),
     false},
    {AX_P_BITCAST, 0, 1, {IN(VAR, 3)}, {.dtype = AX_F64}, DT(AX_I64) | DT(AX_F64), false},
    {AX_P_STOP_GRADIENT, 0, 1, {IN(VAR, 3)}, {0}, ALL, false},

    {AX_P_REDUCE_SUM, 0, 1, {IN(VAR, 2, 3)}, {.naxes = 1, .axes = {1}}, INTS | FLOATS, false},
    {AX_P_REDUCE_SUM, 0, 1, {IN(VAR, 2, 3)}, {.naxes = 2, .axes = {1, 0}}, INTS | FLOATS, false},
    {AX_P_REDUCE_SUM, 0, 1, {IN(VAR, 2, 3)}, {.naxes = 0}, INTS | FLOATS, false},
    {AX_P_REDUCE_PROD, 0, 1, {IN(VAR, 2, 3)}, {.naxes = 1, .axes = {0}}, INTS | FLOATS, false},
    {AX_P_REDUCE_MAX, 0, 1, {IN(VAR, 2, 3)}, {.naxes = 1, .axes = {1}}, ALL, false},
    {AX_P_REDUCE_MIN, 0, 1, {IN(VAR, 2, 3)}, {.naxes = 2, .axes = {0, 1}}, ALL, false},
    {AX_P_REDUCE_AND, 0, 1, {IN(VAR, 2, 3)}, {.naxes = 1, .axes = {1}}, DT(AX_BOOL), false},
    {AX_P_REDUCE_OR, 0, 1, {IN(VAR, 2, 3)}, {.naxes = 1, .axes = {0}}, DT(AX_BOOL), false},
    {AX_P_ARGMAX, 0, 1, {IN(VAR, 2, 3)}, {.naxes = 1, .axes = {1}, .dtype = AX_I32}, ALL, false},
    {AX_P_ARGMIN, 0, 1, {IN(VAR, 2, 3)}, {.naxes = 1, .axes = {0}, .dtype = AX_I64}, ALL, false},
    {AX_P_CUMSUM,
     0,
     1,
     {IN(VAR, 2, 3)},
     {.naxes = 1, .axes = {1}, .flag = 1},
     INTS | FLOATS,
     false},
    {AX_P_CUMPROD, 0, 1, {IN(VAR, 2, 3)}, {.naxes = 1, .axes = {0}}, INTS | FLOATS, false},
    {AX_P_CUMMAX, 0, 1, {IN(VAR, 2, 3)}, {.naxes = 1, .axes = {1}}, ALL, false},
    {AX_P_CUMMIN, 0, 1, {IN(VAR, 2, 3)}, {.naxes = 1, .axes = {1}, .flag = 1}, ALL, false},

    {AX_P_RESHAPE, 0, 1, {IN(VAR, 2, 3)}, {.ndim = 3, .shape = {3, 1, 2}}, ALL, false},
    {AX_P_RESHAPE, 0, 1, {IN(VAR, 1, 1)}, {.ndim = 0}, ALL, false},
    {AX_P_TRANSPOSE, 0, 1, {IN(VAR, 2, 3, 4)}, {.naxes = 3, .axes = {2, 0, 1}}, ALL, false},
    {AX_P_BROADCAST_IN_DIM,
     0,
     1,
     {IN(VAR, 3)},
     {.ndim = 2, .shape = {2, 3}, .naxes = 1, .axes = {1}},
     ALL,
     false},
    {AX_P_BROADCAST_IN_DIM,
     0,
     1,
     {IN(VAR, 3, 1)},
     {.ndim = 3, .shape = {3, 2, 4}, .naxes = 2, .axes = {0, 2}},
     ALL,
     false},
    {AX_P_BROADCAST_IN_DIM, 0, 1, {IN0(VAR)}, {.ndim = 2, .shape = {2, 2}}, ALL, false},
    {AX_P_CONCATENATE,
     0,
     3,
     {IN(VAR, 2, 3), IN(VAR, 1, 3), IN(VAR, 4, 3)},
     {.naxes = 1, .axes = {0}},
     ALL,
     false},
    {AX_P_CONCATENATE, 0, 2, {IN(VAR, 2, 3), IN(VAR, 2, 1)}, {.naxes = 1, .axes = {1}}, ALL, false},
    {AX_P_SLICE, 0, 1, {IN(VAR, 5, 4)}, {.lo = {1, 0}, .hi = {5, 4}, .step = {2, 3}}, ALL, false},
    {AX_P_SLICE, 0, 1, {IN(VAR, 5)}, {.lo = {2}, .hi = {2}, .step = {1}}, ALL, false},
    {AX_P_PAD, 0, 2, {IN(VAR, 3), IN0(VAR)}, {.lo = {1}, .hi = {2}, .step = {1}}, ALL, false},
    {AX_P_PAD,
     0,
     2,
     {IN(VAR, 2, 3), IN0(VAR)},
     {.lo = {-1, 0}, .hi = {0, 1}, .step = {0, 2}},
     ALL,
     false},
    {AX_P_SQUEEZE, 0, 1, {IN(VAR, 1, 3, 1)}, {.naxes = 2, .axes = {2, 0}}, ALL, false},
    {AX_P_EXPAND_DIMS, 0, 1, {IN(VAR, 3)}, {.naxes = 2, .axes = {0, 2}}, ALL, false},
    {AX_P_REV, 0, 1, {IN(VAR, 2, 3)}, {.naxes = 1, .axes = {1}}, ALL, false},

    {AX_P_GATHER,
     0,
     2,
     {IN(VAR, 4, 3), {IDX, 2, {2, 1}, 4}},
     {.naxes = 1, .axes = {0}},
     ALL,
     false},
    {AX_P_GATHER,
     0,
     2,
     {IN(VAR, 4, 3), {IDX, 3, {2, 2, 2}, 3}},
     {.naxes = 2, .axes = {1, 0}},
     ALL,
     false},
    {AX_P_SCATTER,
     0,
     3,
     {IN(VAR, 4, 3), {IDX, 2, {2, 1}, 4}, IN(VAR, 2, 3)},
     {.naxes = 1, .axes = {0}, .flag = AX_SCATTER_SET},
     ALL,
     false},
    {AX_P_SCATTER,
     0,
     3,
     {IN(VAR, 4, 3), {IDX, 2, {5, 1}, 4}, IN(VAR, 5, 3)},
     {.naxes = 1, .axes = {0}, .flag = AX_SCATTER_ADD},
     ALL,
     false},
    {AX_P_DYNAMIC_SLICE,
     0,
     3,
     {IN(VAR, 4, 5), IN0(START), IN0(START)},
     {.ndim = 2, .shape = {2, 3}},
     ALL,
     false},
    {AX_P_DYNAMIC_UPDATE_SLICE,
     0,
     4,
     {IN(VAR, 4, 5), IN(VAR, 2, 3), IN0(START), IN0(START)},
     {0},
     ALL,
     false},

    {AX_P_IOTA,
     0,
     0,
     {{0}},
     {.ndim = 2, .shape = {2, 3}, .naxes = 1, .axes = {1}},
     INTS | FLOATS,
     true},
    {AX_P_DOT_GENERAL,
     0,
     2,
     {IN(VAR, 2, 3), IN(VAR, 3, 4)},
     {.dot = {.ncontract = 1, .lhs_contract = {1}, .rhs_contract = {0}}},
     ALL,
     false},
    {AX_P_DOT_GENERAL,
     0,
     2,
     {IN(VAR, 2, 3, 4), IN(VAR, 2, 4, 5)},
     {.dot = {.ncontract = 1,
              .lhs_contract = {2},
              .rhs_contract = {1},
              .nbatch = 1,
              .lhs_batch = {0},
              .rhs_batch = {0}}},
     ALL,
     false},
    {AX_P_DOT_GENERAL, 0, 2, {IN(VAR, 3), IN(VAR, 2)}, {.dot = {0}}, ALL, false}, /* outer */
    {AX_P_CHOLESKY, 0, 1, {IN(VAR, 3, 3)}, {0}, FLOATS, false},
    {AX_P_CHOLESKY, 0, 1, {IN(VAR, 2, 2, 2)}, {0}, FLOATS, false},
    {AX_P_TRIANGULAR_SOLVE, 0, 2, {IN(VAR, 3, 3), IN(VAR, 3, 2)}, {.flag = AX_TRSOLVE_LOWER},
     FLOATS, false},
    {AX_P_TRIANGULAR_SOLVE, 0, 2, {IN(VAR, 2, 3, 3), IN(VAR, 2, 1, 3)},
     {.flag = AX_TRSOLVE_RIGHT_SIDE | AX_TRSOLVE_TRANSPOSE_A}, FLOATS, false},
    {AX_P_LU, 0, 1, {IN(VAR, 3, 3)}, {0}, FLOATS, false},
    {AX_P_LU, 0, 1, {IN(VAR, 2, 4, 3)}, {0}, FLOATS, false},
    {AX_P_EIGH, 0, 1, {IN(VAR, 2, 3, 3)}, {.flag = AX_EIGH_LOWER}, FLOATS, false},
    {AX_P_SVD, 0, 1, {IN(VAR, 3, 2)}, {.flag = AX_SVD_COMPUTE_UV}, FLOATS, false},
    {AX_P_SVD, 0, 1, {IN(VAR, 2, 2, 3)}, {.flag = AX_SVD_COMPUTE_UV | AX_SVD_FULL_MATRICES},
     FLOATS, false},
    {AX_P_SVD, 0, 1, {IN(VAR, 4, 3)}, {0}, FLOATS, false},
    {AX_P_QR, 0, 1, {IN(VAR, 4, 3)}, {0}, FLOATS, false},
    {AX_P_QR, 0, 1, {IN(VAR, 2, 3, 4)}, {.flag = AX_QR_FULL_MATRICES}, FLOATS, false},
    {AX_P_SORT, 0, 1, {IN(VAR, 2, 3)}, {.naxes = 1, .axes = {1}, .flag = 1}, ALL, false},
    {AX_P_ARGSORT, 0, 1, {IN(VAR, 2, 3)}, {.naxes = 1, .axes = {0}, .dtype = AX_I32}, ALL, false},
    {AX_P_CONV_GENERAL_DILATED, 0, 2, {IN(VAR, 1, 2, 5), IN(VAR, 3, 2, 2)},
     {.ndim = 3, .step = {2}, .lo = {1}, .hi = {1},
      .conv = {.lhs_spec = {0, 1, 2}, .rhs_spec = {0, 1, 2}, .out_spec = {2, 0, 1},
               .lhs_dilation = {1}, .rhs_dilation = {2}, .feature_group_count = 1,
               .batch_group_count = 1}},
     INTS | FLOATS, false},
    {AX_P_CONV_GENERAL_DILATED, 0, 2, {IN(VAR, 1, 3, 3, 2), IN(VAR, 2, 2, 1, 4)},
     {.ndim = 4, .step = {1, 1},
      .conv = {.lhs_spec = {0, 3, 1, 2}, .rhs_spec = {3, 2, 0, 1}, .out_spec = {0, 3, 1, 2},
               .lhs_dilation = {2, 1}, .rhs_dilation = {1, 1}, .feature_group_count = 2,
               .batch_group_count = 1}},
     INTS | FLOATS, false},
    {AX_P_REDUCE_WINDOW_SUM, 0, 1, {IN(VAR, 3, 4)},
     {.ndim = 2, .shape = {2, 2}, .step = {1, 2}, .lo = {0, 1},
      .conv = {.lhs_dilation = {1, 1}, .rhs_dilation = {1, 1}}},
     INTS | FLOATS, false},
    {AX_P_REDUCE_WINDOW_MAX, 0, 1, {IN(VAR, 3, 4)},
     {.ndim = 2, .shape = {2, 2}, .step = {1, 1}, .conv = {.lhs_dilation = {1, 1},
                                                          .rhs_dilation = {1, 2}}},
     ALL, false},
    {AX_P_REDUCE_WINDOW_MIN, 0, 1, {IN(VAR, 3, 4)},
     {.ndim = 2, .shape = {1, 3}, .step = {2, 1}, .conv = {.lhs_dilation = {1, 1},
                                                          .rhs_dilation = {1, 1}}},
     ALL, false},
    {AX_P_SELECT_AND_GATHER_ADD, 0, 2, {IN(VAR, 3, 4), IN(VAR, 3, 4)},
     {.ndim = 2, .shape = {2, 2}, .step = {1, 1}, .conv = {.lhs_dilation = {1, 1},
                                                          .rhs_dilation = {1, 1}}},
     FLOATS, false},
    {AX_P_SELECT_AND_SCATTER_ADD, 0, 2, {IN(VAR, 2, 3), IN(VAR, 3, 4)},
     {.ndim = 2, .shape = {2, 2}, .step = {1, 1}, .flag = AX_SELECT_LE,
      .conv = {.lhs_dilation = {1, 1}, .rhs_dilation = {1, 1}}},
     FLOATS, false},
};

/* A small deterministic generator: the tests must not depend on the machine. */
static double next_random(uint64_t *s) {
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(*s >> 11) / 9007199254740992.0; /* [0, 1) */
}

static double random_value(uint64_t *s, int role, ax_dtype t, int64_t bound) {
    double u = next_random(s);
    if (role == IDX) return floor(u * (double)bound);
    if (role == START) return floor(u * 8) - 2; /* also out of range: clamped */
    if (role == PRED || t == AX_BOOL) return u < 0.5;
    if (ax_dtype_is_float(t)) return 4 * u - 2;
    return ax_dtype_is_unsigned(t) ? floor(u * 10) : floor(u * 11) - 3;
}

static ax_array *make_input(ax_ctx *cx, const input_spec *spec, ax_dtype t, uint64_t *seed,
                            bool weak) {
    ax_dtype dtype = spec->role == VAR ? t : spec->role == PRED ? AX_BOOL : AX_I32;
    double vals[64];
    int64_t n = ax_shape_size(spec->ndim, spec->shape);
    assert_true(n <= 64);
    for (int64_t i = 0; i < n; i++) vals[i] = random_value(seed, spec->role, dtype, spec->bound);
    ax_array *a = make(cx, dtype, spec->ndim, spec->shape, vals);
    a->weak = weak && spec->role == VAR && dtype != AX_BOOL;
    return a;
}

static unsigned expected_dtypes(const prim_case *c) {
    unsigned set = 0;
    for (int t = 0; t < AX_NDTYPES; t++) {
        bool ok = c->accepted == FROM_UNARY    ? ax_unary_accepts((ax_unary_op)c->op, t)
                  : c->accepted == FROM_BINARY ? ax_binary_accepts((ax_binary_op)c->op, t)
                                               : (c->accepted & DT(t)) != 0;
        if (ok) set |= DT(t);
    }
    return set;
}

static void describe_case(char *out, size_t cap, const prim_case *c, ax_dtype t, bool weak) {
    snprintf(out, cap, "%s (case %d) on %s%s", ax_prim_get(c->prim)->name, (int)(c - cases),
             ax_dtype_short(t), weak ? " (weak)" : "");
}

/* Runs one case on one dtype: the rule accepts it exactly when expected, and then the kernel's
 * output has the rule's dtype, shape and weak flag. */
static void run_case(ax_ctx *cx, const prim_case *c, ax_dtype t, bool weak, uint64_t *seed) {
    char what[128];
    describe_case(what, sizeof what, c, t, weak);
    ax_array *in[5];
    ax_aval avals[5], want[4];
    ax_params params = c->params;
    if (c->dtype_param) params.dtype = t;
    for (int i = 0; i < c->nin; i++) {
        in[i] = make_input(cx, &c->in[i], t, seed, weak);
        ax_aval_of(&avals[i], in[i]);
    }
    bool expect = (expected_dtypes(c) & DT(t)) != 0;
    int rc = ax_prim_infer(cx, c->prim, c->nin, avals, &params, want);
    if (rc != 0 && (expect || cx->err.kind != AX_ERR_TYPE))
        fail_msg("%s: the rule rejects it: %s", what, cx->err.message);
    if (rc == 0 && !expect) fail_msg("%s: the rule accepts a dtype it should reject", what);
    ax_error_clear(cx);
    int nout = rc == 0 ? ax_prim_nout(c->prim, &params) : 0;
    ax_array *out[4] = {0};
    if (rc == 0 && ax_bind(cx, c->prim, c->nin, in, &params, out))
        fail_msg("%s: %s: %s", what, ax_error_kind_name(cx->err.kind), cx->err.message);
    for (int k = 0; k < nout; k++) {
        char got[128], rule[128];
        ax_array_type_format(got, sizeof got, out[k]);
        ax_type_format(rule, sizeof rule, want[k].dtype, want[k].ndim, want[k].shape);
        if (strcmp(got, rule) != 0 || out[k]->weak != want[k].weak)
            fail_msg("%s: kernel gives %s%s, rule %s%s", what, got, out[k]->weak ? " weak" : "",
                     rule, want[k].weak ? " weak" : "");
        ax_array_release(out[k]);
    }
    for (int i = 0; i < c->nin; i++) ax_array_release(in[i]);
}

static void test_rules_agree_with_kernels(void **state) {
    ax_ctx *cx = *state;
    uint64_t seed = 12345;
    bool covered[AX_P_NPRIMS] = {false};
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        covered[cases[k].prim] = true;
        for (int t = 0; t < AX_NDTYPES; t++) {
            run_case(cx, &cases[k], (ax_dtype)t, false, &seed);
            run_case(cx, &cases[k], (ax_dtype)t, true, &seed);
        }
    }
    /* custom_linear has no eager kernel (custom_vjp functions have no forward-mode tangent):
     * tests/lang/transforms_custom_rules.ax covers it through grad and its error under jvp. */
    covered[AX_P_CUSTOM_LINEAR] = true;
    covered[AX_P_CUSTOM_CALL] = true; /* a user's function: tests/lang/custom_rules_transforms.ax */
    /* threefry2x32 is checked against Random123's known answers in tests/unit/test_prng.c */
    covered[AX_P_THREEFRY2X32] = true;
    covered[AX_P_DEBUG_CALLBACK] = true; /* an effect: tests/unit/test_debug_callback.c */
    /* sub-programs: tests/unit/test_control_flow.c */
    covered[AX_P_COND] = covered[AX_P_WHILE] = covered[AX_P_SCAN] = covered[AX_P_CALL] = true;
    /* pmap and collectives, which run on devices: tests/unit/test_collectives.c */
    for (int p = AX_P_PMAP; p <= AX_P_AXIS_INDEX; p++) covered[p] = true;
    for (int p = 0; p < AX_P_NPRIMS; p++)
        if (!covered[p]) fail_msg("no test case runs %s", ax_prim_get((ax_prim)p)->name);
}

/* ---- what the flags promise, checked on every case above ---- */

/* The dtype a case runs on here: f64 when it takes floats, else the first dtype it takes. */
static ax_dtype case_dtype(const prim_case *c) {
    unsigned set = expected_dtypes(c);
    if (set & DT(AX_F64)) return AX_F64;
    for (int t = 0; t < AX_NDTYPES; t++)
        if (set & DT(t)) return (ax_dtype)t;
    return AX_F64;
}

/* Binds the case on `in`: its outputs in out[0..3] and their number, or -1 (error cleared). */
static int bind_outputs(ax_ctx *cx, const prim_case *c, ax_dtype t, ax_array **in,
                        ax_array **out) {
    ax_params params = c->params;
    if (c->dtype_param) params.dtype = t;
    if (ax_bind(cx, c->prim, c->nin, in, &params, out)) {
        ax_error_clear(cx);
        return -1;
    }
    return ax_prim_nout(c->prim, &params);
}

/* The case's first output (lu's, eigh's ... as well: the others are released). */
static ax_array *apply_case(ax_ctx *cx, const prim_case *c, ax_dtype t, ax_array **in) {
    ax_array *out[4] = {0};
    int nout = bind_outputs(cx, c, t, in, out);
    for (int k = 1; k < nout; k++) ax_array_release(out[k]);
    return nout > 0 ? out[0] : NULL;
}

static bool near(double a, double b, double tol) {
    if (isnan(a) || isnan(b)) return isnan(a) && isnan(b);
    if (isinf(a) || isinf(b)) return a == b;
    return fabs(a - b) <= tol * (1 + fabs(a) + fabs(b));
}

static void release_all(ax_array **a, int n) {
    for (int i = 0; i < n; i++) ax_array_release(a[i]);
}

/* Element `at` of input x as a rank-0 array. */
static ax_array *element(ax_ctx *cx, const ax_array *x, int64_t at) {
    size_t esize = ax_dtype_size(x->dtype);
    return ax_array_from_data(cx, x->dtype, 0, NULL,
                              (char *)ax_array_data(x) + at * (int64_t)esize);
}

/* The flat index into input x of output position k, broadcasting x from the right. */
static int64_t broadcast_index(const ax_array *x, const ax_array *out, int64_t k) {
    int64_t at = 0, stride = 1;
    for (int d = out->ndim - 1; d >= 0; d--) {
        int64_t idx = k % out->shape[d];
        k /= out->shape[d];
        int dx = d - (out->ndim - x->ndim);
        if (dx < 0) continue;
        if (x->shape[dx] > 1) at += idx * stride;
        stride *= x->shape[dx];
    }
    return at;
}

/* Whether the case's output is, at every position, the primitive applied to the input
 * elements (broadcast) at that position: what fusing an elementwise primitive relies on. */
static bool computes_pointwise(ax_ctx *cx, const prim_case *c, ax_dtype t, uint64_t *seed) {
    ax_array *in[5];
    for (int i = 0; i < c->nin; i++) in[i] = make_input(cx, &c->in[i], t, seed, false);
    ax_array *out = apply_case(cx, c, t, in);
    bool pointwise = out && c->nin > 0;
    for (int i = 0; pointwise && i < c->nin; i++) {
        int n;
        int64_t b[AX_MAX_RANK];
        pointwise = ax_shape_broadcast(in[i]->ndim, in[i]->shape, out->ndim, out->shape, &n, b) &&
                    ax_shape_equal(n, b, out->ndim, out->shape);
    }
    for (int64_t k = 0; pointwise && k < out->size; k++) {
        ax_array *scalars[5];
        for (int i = 0; i < c->nin; i++)
            scalars[i] = element(cx, in[i], broadcast_index(in[i], out, k));
        ax_array *one = apply_case(cx, c, t, scalars);
        pointwise = one && one->size == 1 &&
                    near(ax_array_get_f64(one, 0), ax_array_get_f64(out, k), 1e-12);
        ax_array_release(one);
        release_all(scalars, c->nin);
    }
    ax_array_release(out);
    release_all(in, c->nin);
    return pointwise;
}

/* ELEMENTWISE (which lets jit fuse a primitive into a loop nest) marks exactly the primitives
 * that compute pointwise. */
static void test_elementwise_flag_means_pointwise(void **state) {
    ax_ctx *cx = *state;
    uint64_t seed = 777;
    for (int p = 0; p < AX_P_NPRIMS; p++) {
        bool has_case = false, pointwise = true;
        for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
            if (cases[k].prim != (ax_prim)p) continue;
            has_case = true;
            pointwise =
                computes_pointwise(cx, &cases[k], case_dtype(&cases[k]), &seed) && pointwise;
        }
        const ax_prim_info *info = ax_prim_get((ax_prim)p);
        bool flagged = info->flags & AX_PRIM_ELEMENTWISE;
        if (has_case && flagged != pointwise)
            fail_msg("%s %s pointwise but is %smarked elementwise", info->name,
                     pointwise ? "computes" : "does not compute", flagged ? "" : "not ");
    }
}

/* f(x + y) = f(x) + f(y) and f(2.5 x) = 2.5 f(x) in the operands of `which` (f64), the
 * others held fixed. */
static bool linear_in(ax_ctx *cx, const prim_case *c, unsigned which, uint64_t *seed) {
    ax_array *x[5], *y[5], *sum[5], *scaled[5];
    for (int i = 0; i < c->nin; i++) {
        bool vary = (which >> i) & 1;
        x[i] = make_input(cx, &c->in[i], AX_F64, seed, false);
        y[i] = vary ? make_input(cx, &c->in[i], AX_F64, seed, false) : ax_array_retain(x[i]);
        sum[i] = vary ? ax_array_copy(cx, x[i]) : ax_array_retain(x[i]);
        scaled[i] = vary ? ax_array_copy(cx, x[i]) : ax_array_retain(x[i]);
        for (int64_t k = 0; vary && k < x[i]->size; k++) {
            ((double *)sum[i]->buf->data)[k] += ax_array_get_f64(y[i], k);
            ((double *)scaled[i]->buf->data)[k] *= 2.5;
        }
    }
    ax_array *fx = apply_case(cx, c, AX_F64, x), *fy = apply_case(cx, c, AX_F64, y);
    ax_array *fsum = apply_case(cx, c, AX_F64, sum), *fscaled = apply_case(cx, c, AX_F64, scaled);
    bool linear = fx && fy && fsum && fscaled;
    double tol = linear && fx->dtype == AX_F32 ? 1e-5 : 1e-9;
    for (int64_t k = 0; linear && k < fx->size; k++) {
        double a = ax_array_get_f64(fx, k), b = ax_array_get_f64(fy, k);
        linear = isfinite(a) && isfinite(b) && near(ax_array_get_f64(fsum, k), a + b, tol) &&
                 near(ax_array_get_f64(fscaled, k), 2.5 * a, tol);
    }
    ax_array *results[4] = {fx, fy, fsum, fscaled};
    release_all(results, 4);
    release_all(x, c->nin);
    release_all(y, c->nin);
    release_all(sum, c->nin);
    release_all(scaled, c->nin);
    return linear;
}

/* linear_in on a few independent draws: a degenerate draw (clamp with lo > hi is constant in
 * all but hi) must not pass for linearity. */
static bool linear_in_every_draw(ax_ctx *cx, const prim_case *c, unsigned which, uint64_t *seed) {
    for (int draw = 0; draw < 4; draw++)
        if (!linear_in(cx, c, which, seed)) return false;
    return true;
}

/* Linear in all its float operands together (add, select's values, scatter's x and updates),
 * or in one of them with the others fixed (mul, div's numerator, dot_general). */
static bool linear_somehow(ax_ctx *cx, const prim_case *c, unsigned floats, uint64_t *seed) {
    if (linear_in_every_draw(cx, c, floats, seed)) return true;
    for (int i = 0; i < c->nin; i++)
        if (((floats >> i) & 1) && linear_in_every_draw(cx, c, 1u << i, seed)) return true;
    return false;
}

typedef struct {
    const prim_case *c;
    ax_dtype t;
} case_closure;

static int bind_case(ax_ctx *cx, void *closure, int nin, ax_array **in, int *nout,
                     ax_array ***out) {
    const case_closure *cc = closure;
    ax_params params = cc->c->params;
    if (cc->c->dtype_param) params.dtype = cc->t;
    ax_array *r[4] = {0};
    if (ax_bind(cx, cc->c->prim, nin, in, &params, r)) return -1;
    *nout = ax_prim_nout(cc->c->prim, &params);
    *out = malloc(4 * sizeof **out);
    memcpy(*out, r, sizeof r);
    return 0;
}

/* The tangents of the case's outputs (in tangents[0..3]) along random tangents of its float
 * operands (`floats`): their number, or -1 (the error left in cx) when forward mode fails. */
static int case_jvp(ax_ctx *cx, const prim_case *c, ax_dtype t, unsigned floats, uint64_t *seed,
                    ax_array **tangents) {
    ax_array *x[5], *tan[5] = {0};
    for (int i = 0; i < c->nin; i++) {
        x[i] = make_input(cx, &c->in[i], t, seed, false);
        if ((floats >> i) & 1) tan[i] = make_input(cx, &c->in[i], t, seed, false);
    }
    case_closure cc = {c, t};
    int nout = -1;
    ax_array **out = NULL, **tout = NULL;
    if (ax_ad_jvp(cx, bind_case, &cc, c->nin, x, tan, &nout, &out, &tout) == 0) {
        memcpy(tangents, tout, (size_t)nout * sizeof *tout);
        release_all(out, nout);
        free(out);
        free(tout);
    } else {
        nout = -1;
    }
    release_all(x, c->nin);
    release_all(tan, c->nin);
    return nout;
}

static bool all_zero(ax_array **a, int n) {
    for (int i = 0; i < n; i++)
        for (int64_t k = 0; k < a[i]->size; k++)
            if (ax_array_get_f64(a[i], k) != 0) return false;
    return true;
}

static bool any_float(ax_array **a, int n) {
    for (int i = 0; i < n; i++)
        if (ax_dtype_is_float(a[i]->dtype)) return true;
    return false;
}

/* Forward mode goes through every primitive; NONDIFF ones give a zero tangent. Among those
 * with a nonzero derivative, LINEAR (which gives a primitive its transpose rule) marks
 * exactly the ones linear in their float operands, together or one at a time.
 * (test_ad_rules.c checks the derivatives' values against finite differences.) */
static void test_nondiff_and_linear_flags(void **state) {
    ax_ctx *cx = *state;
    uint64_t seed = 4242;
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        const prim_case *c = &cases[k];
        ax_dtype t = case_dtype(c);
        const ax_prim_info *info = ax_prim_get(c->prim);
        char what[128];
        describe_case(what, sizeof what, c, t, false);
        unsigned floats = 0;
        for (int i = 0; i < c->nin; i++)
            if (c->in[i].role == VAR && ax_dtype_is_float(t)) floats |= 1u << i;
        ax_array *tangents[4];
        int nout = case_jvp(cx, c, t, floats, &seed, tangents);
        if (nout < 0 && c->prim == AX_P_SVD && (c->params.flag & AX_SVD_FULL_MATRICES) &&
            cx->err.kind == AX_ERR_VALUE && strstr(cx->err.message, "not implemented")) {
            ax_error_clear(cx); /* undefined in JAX too: linalg_err_svd_grad.ax */
            continue;
        }
        if (nout < 0) fail_msg("%s: forward mode fails: %s", what, cx->err.message);
        bool zero = all_zero(tangents, nout), float_out = any_float(tangents, nout);
        release_all(tangents, nout);
        if ((info->flags & AX_PRIM_NONDIFF) && !zero)
            fail_msg("%s: not differentiable, but its tangent is not zero", what);
        if (zero || !floats || !float_out) continue; /* no derivative to speak of */
        bool linear = linear_somehow(cx, c, floats, &seed);
        if (linear != ((info->flags & AX_PRIM_LINEAR) != 0))
            fail_msg("%s is %slinear in its float operands but %smarked linear", what,
                     linear ? "" : "not ", info->flags & AX_PRIM_LINEAR ? "" : "not ");
    }
}

/* ---- errors in the user's terms ---- */

/* Binds p on arrays of the given types (zeros) and expects an error. */
static void expect_bind_error(ax_ctx *cx, ax_prim p, int nin, const ax_aval *types,
                              const ax_params *params, ax_error_kind kind, const char *msg) {
    ax_array *in[8];
    for (int i = 0; i < nin; i++) {
        in[i] = ax_array_zeros(cx, types[i].dtype, types[i].ndim, types[i].shape);
        assert_non_null(in[i]);
    }
    ax_array *out[4] = {0};
    assert_int_equal(ax_bind(cx, p, nin, in, params, out), -1);
    assert_null(out[0]);
    assert_error(cx, kind, msg);
    for (int i = 0; i < nin; i++) ax_array_release(in[i]);
}

#define T(dt, ...)                                                                                 \
    {                                                                                              \
        dt, false, sizeof((int64_t[]){0, __VA_ARGS__}) / 8 - 1, {                                  \
            __VA_ARGS__                                                                            \
        }                                                                                          \
    }
#define T0(dt)                                                                                     \
    {                                                                                              \
        dt, false, 0, {                                                                            \
            0                                                                                      \
        }                                                                                          \
    }
#define TYPES(...)                                                                                 \
    (const ax_aval[]) {                                                                            \
        __VA_ARGS__                                                                                \
    }

static void test_elementwise_errors(void **state) {
    ax_ctx *cx = *state;
    expect_bind_error(cx, AX_P_ADD, 2, TYPES(T(AX_F32, 3), T(AX_I32, 3)), NULL, AX_ERR_TYPE,
                      "add requires arguments of one dtype, got f32[3] and i32[3]");
    expect_bind_error(cx, AX_P_ADD, 2, TYPES(T(AX_F32, 3), T(AX_F32, 4)), NULL, AX_ERR_SHAPE,
                      "cannot add f32[3] and f32[4] (shapes do not broadcast)");
    expect_bind_error(cx, AX_P_MAX, 2, TYPES(T(AX_F32, 3, 1), T(AX_F32, 3)), NULL, AX_ERR_SHAPE,
                      "cannot apply max to f32[3,1] and f32[3] (shapes do not broadcast)");
    expect_bind_error(cx, AX_P_LT, 2, TYPES(T(AX_I32, 2), T(AX_I32, 3)), NULL, AX_ERR_SHAPE,
                      "cannot compare i32[2] and i32[3] (shapes do not broadcast)");
    expect_bind_error(cx, AX_P_EXP, 1, TYPES(T(AX_I32, 3)), NULL, AX_ERR_TYPE,
                      "exp requires a floating-point argument, got i32[3]");
    expect_bind_error(cx, AX_P_SHL, 2, TYPES(T(AX_F32, 2), T(AX_F32, 2)), NULL, AX_ERR_TYPE,
                      "shift_left requires integer arguments, got f32[2] and f32[2]");
    expect_bind_error(cx, AX_P_INTEGER_POW, 1, TYPES(T(AX_I32, 2)), &(ax_params){.k = -1},
                      AX_ERR_TYPE,
                      "integers cannot be raised to negative powers, got i32[2] ** -1");
    expect_bind_error(cx, AX_P_SELECT, 3, TYPES(T(AX_F32, 2), T(AX_F32, 2), T(AX_F32, 2)), NULL,
                      AX_ERR_TYPE, "select requires a boolean predicate, got f32[2]");
    expect_bind_error(cx, AX_P_SELECT, 3, TYPES(T(AX_BOOL, 3), T(AX_F32, 2), T(AX_F32, 2)), NULL,
                      AX_ERR_SHAPE,
                      "cannot select between f32[2] and f32[2] with a predicate bool[3] (shapes "
                      "do not broadcast)");
    expect_bind_error(cx, AX_P_BITCAST, 1, TYPES(T(AX_F32, 2)), &(ax_params){.dtype = AX_F64},
                      AX_ERR_TYPE,
                      "cannot bitcast f32[2] to f64: their elements have different sizes (4 and "
                      "8 bytes)");
    expect_bind_error(cx, AX_P_ADD, 3, TYPES(T(AX_F32, 2), T(AX_F32, 2), T(AX_F32, 2)), NULL,
                      AX_ERR_TYPE, "add takes 2 operands, got 3");
}

static void test_reduction_errors(void **state) {
    ax_ctx *cx = *state;
    expect_bind_error(cx, AX_P_REDUCE_SUM, 1, TYPES(T(AX_F32, 3, 4)),
                      &(ax_params){.naxes = 1, .axes = {2}}, AX_ERR_VALUE,
                      "reduce_sum: axis 2 is out of bounds for f32[3,4]");
    expect_bind_error(cx, AX_P_REDUCE_SUM, 1, TYPES(T(AX_F32, 3, 4)),
                      &(ax_params){.naxes = 2, .axes = {1, 1}}, AX_ERR_VALUE,
                      "reduce_sum: axis 1 is repeated in axes (1, 1)");
    expect_bind_error(cx, AX_P_REDUCE_SUM, 1, TYPES(T(AX_BOOL, 3)),
                      &(ax_params){.naxes = 1, .axes = {0}}, AX_ERR_TYPE,
                      "reduce_sum requires a numeric argument, got bool[3]");
    expect_bind_error(cx, AX_P_REDUCE_MAX, 1, TYPES(T(AX_F32, 0, 3)),
                      &(ax_params){.naxes = 1, .axes = {0}}, AX_ERR_VALUE,
                      "zero-size array to reduction operation maximum which has no identity "
                      "(axis 0 of f32[0,3])");
    expect_bind_error(cx, AX_P_ARGMAX, 1, TYPES(T(AX_F32, 3, 0)),
                      &(ax_params){.naxes = 1, .axes = {1}, .dtype = AX_I32}, AX_ERR_VALUE,
                      "attempt to get argmax of an empty sequence (axis 1 of f32[3,0])");
    expect_bind_error(cx, AX_P_ARGMAX, 1, TYPES(T(AX_F32, 3)),
                      &(ax_params){.naxes = 1, .axes = {0}, .dtype = AX_F32}, AX_ERR_TYPE,
                      "argmax: the index dtype must be i32 or i64, got f32");
    expect_bind_error(cx, AX_P_CUMSUM, 1, TYPES(T(AX_F32, 3)), &(ax_params){.naxes = 0},
                      AX_ERR_VALUE, "cumsum works along exactly one axis, got 0 axes");
    expect_bind_error(cx, AX_P_SORT, 1, TYPES(T(AX_F32, 3)), &(ax_params){.naxes = 1, .axes = {1}},
                      AX_ERR_VALUE, "sort: axis 1 is out of bounds for f32[3]");
}

static void test_shape_op_errors(void **state) {
    ax_ctx *cx = *state;
    expect_bind_error(cx, AX_P_RESHAPE, 1, TYPES(T(AX_F32, 3, 4)),
                      &(ax_params){.ndim = 2, .shape = {5, 2}}, AX_ERR_SHAPE,
                      "cannot reshape f32[3,4] (size 12) into shape (5, 2) (size 10)");
    expect_bind_error(cx, AX_P_TRANSPOSE, 1, TYPES(T(AX_F32, 3, 4)),
                      &(ax_params){.naxes = 2, .axes = {0, 0}}, AX_ERR_VALUE,
                      "transpose: (0, 0) is not a permutation of the axes of f32[3,4]");
    expect_bind_error(cx, AX_P_BROADCAST_IN_DIM, 1, TYPES(T(AX_F32, 3)),
                      &(ax_params){.ndim = 2, .shape = {4, 4}, .naxes = 1, .axes = {1}},
                      AX_ERR_SHAPE,
                      "cannot broadcast f32[3] to shape (4, 4): dimension 0 (size 3) does not "
                      "match output dimension 1 (size 4)");
    expect_bind_error(cx, AX_P_CONCATENATE, 2, TYPES(T(AX_F32, 3, 4), T(AX_F32, 4, 4)),
                      &(ax_params){.naxes = 1, .axes = {1}}, AX_ERR_SHAPE,
                      "cannot concatenate f32[3,4] and f32[4,4] along axis 1 (shapes differ "
                      "outside that axis)");
    expect_bind_error(cx, AX_P_CONCATENATE, 2, TYPES(T(AX_F32, 3), T(AX_I32, 3)),
                      &(ax_params){.naxes = 1, .axes = {0}}, AX_ERR_TYPE,
                      "concatenate requires arguments of one dtype, got f32[3] and i32[3]");
    expect_bind_error(cx, AX_P_SLICE, 1, TYPES(T(AX_F32, 3)),
                      &(ax_params){.lo = {1}, .hi = {5}, .step = {1}}, AX_ERR_INDEX,
                      "slice 1:5 is out of bounds for axis 0 of f32[3]");
    expect_bind_error(cx, AX_P_SLICE, 1, TYPES(T(AX_F32, 3)),
                      &(ax_params){.lo = {0}, .hi = {3}, .step = {0}}, AX_ERR_VALUE,
                      "slice strides must be positive, got 0 on axis 0");
    expect_bind_error(cx, AX_P_PAD, 2, TYPES(T(AX_F32, 3), T(AX_F32, 1)),
                      &(ax_params){.lo = {1}, .hi = {1}}, AX_ERR_SHAPE,
                      "the padding value must be a scalar, got f32[1]");
    expect_bind_error(cx, AX_P_PAD, 2, TYPES(T(AX_F32, 3), T0(AX_F32)),
                      &(ax_params){.lo = {-3}, .hi = {-1}}, AX_ERR_SHAPE,
                      "pad: padding (low -3, high -1, interior 0) of axis 0 is invalid for "
                      "f32[3]");
    expect_bind_error(cx, AX_P_SQUEEZE, 1, TYPES(T(AX_F32, 3, 4)),
                      &(ax_params){.naxes = 1, .axes = {1}}, AX_ERR_SHAPE,
                      "cannot squeeze axis 1 of f32[3,4]: its size is 4, not 1");
    expect_bind_error(cx, AX_P_EXPAND_DIMS, 1, TYPES(T(AX_F32, 3)),
                      &(ax_params){.naxes = 1, .axes = {2}}, AX_ERR_VALUE,
                      "expand_dims: axis 2 is out of bounds for an output of rank 2");
}

static void test_indexing_and_other_errors(void **state) {
    ax_ctx *cx = *state;
    expect_bind_error(cx, AX_P_GATHER, 2, TYPES(T(AX_F32, 4, 3), T(AX_F32, 2, 1)),
                      &(ax_params){.naxes = 1, .axes = {0}}, AX_ERR_TYPE,
                      "gather indices must be integers, got f32[2,1]");
    expect_bind_error(cx, AX_P_GATHER, 2, TYPES(T(AX_F32, 4, 3), T(AX_I32, 2, 2)),
                      &(ax_params){.naxes = 1, .axes = {0}}, AX_ERR_SHAPE,
                      "gather indices must have a last dimension of size 1 (one index per "
                      "indexed axis of f32[4,3]), got i32[2,2]");
    expect_bind_error(cx, AX_P_SCATTER, 3, TYPES(T(AX_F32, 4, 3), T(AX_I32, 2, 1), T(AX_F32, 2, 4)),
                      &(ax_params){.naxes = 1, .axes = {0}}, AX_ERR_SHAPE,
                      "scatter into f32[4,3]: updates f32[2,4] do not match the shape (2, 3) "
                      "of the indexed elements");
    expect_bind_error(cx, AX_P_DYNAMIC_SLICE, 2, TYPES(T(AX_F32, 3), T0(AX_I32)),
                      &(ax_params){.ndim = 1, .shape = {4}}, AX_ERR_SHAPE,
                      "dynamic_slice: slice size 4 on axis 0 does not fit in f32[3]");
    expect_bind_error(cx, AX_P_DYNAMIC_SLICE, 2, TYPES(T(AX_F32, 3, 3), T0(AX_I32)),
                      &(ax_params){.ndim = 2, .shape = {1, 1}}, AX_ERR_VALUE,
                      "dynamic_slice of f32[3,3] needs 2 start indices, got 1");
    expect_bind_error(cx, AX_P_DYNAMIC_SLICE, 2, TYPES(T(AX_F32, 3), T0(AX_F32)),
                      &(ax_params){.ndim = 1, .shape = {1}}, AX_ERR_TYPE,
                      "dynamic_slice start indices must be integer scalars, got f32[]");
    expect_bind_error(cx, AX_P_DYNAMIC_UPDATE_SLICE, 3,
                      TYPES(T(AX_F32, 3), T(AX_F32, 4), T0(AX_I32)), NULL, AX_ERR_SHAPE,
                      "dynamic_update_slice: update f32[4] does not fit in f32[3]");
    expect_bind_error(cx, AX_P_IOTA, 0, NULL,
                      &(ax_params){.dtype = AX_BOOL, .ndim = 1, .shape = {3}, .naxes = 1},
                      AX_ERR_TYPE, "iota requires a numeric dtype, got bool");
    expect_bind_error(cx, AX_P_DOT_GENERAL, 2, TYPES(T(AX_F32, 3, 4), T(AX_F32, 5, 2)),
                      &(ax_params){.dot = {.ncontract = 1, .lhs_contract = {1}}}, AX_ERR_SHAPE,
                      "dot_general: contracting dimension 1 of f32[3,4] (size 4) does not match "
                      "dimension 0 of f32[5,2] (size 5)");
    expect_bind_error(cx, AX_P_DOT_GENERAL, 2, TYPES(T(AX_F32, 2, 3), T(AX_F32, 3, 3)),
                      &(ax_params){.dot = {.ncontract = 1,
                                           .lhs_contract = {1},
                                           .nbatch = 1,
                                           .lhs_batch = {0},
                                           .rhs_batch = {1}}},
                      AX_ERR_SHAPE,
                      "dot_general: batch dimension 0 of f32[2,3] (size 2) does not match "
                      "dimension 1 of f32[3,3] (size 3)");
    expect_bind_error(cx, AX_P_DOT_GENERAL, 2, TYPES(T(AX_F32, 3), T(AX_F64, 3)),
                      &(ax_params){.dot = {.ncontract = 1}}, AX_ERR_TYPE,
                      "dot_general requires arguments of one dtype, got f32[3] and f64[3]");
    expect_bind_error(cx, AX_P_CHOLESKY, 1, TYPES(T(AX_F32, 3, 4)), NULL, AX_ERR_SHAPE,
                      "cholesky requires square matrices, got f32[3,4]");
    expect_bind_error(cx, AX_P_CHOLESKY, 1, TYPES(T(AX_I32, 2, 2)), NULL, AX_ERR_TYPE,
                      "cholesky requires a floating-point argument, got i32[2,2]");
    expect_bind_error(cx, AX_P_LU, 1, TYPES(T(AX_I32, 2, 2)), NULL, AX_ERR_TYPE,
                      "lu requires a floating-point argument, got i32[2,2]");
    expect_bind_error(cx, AX_P_QR, 1, TYPES(T(AX_F32, 3)), NULL, AX_ERR_SHAPE,
                      "qr requires matrices (..., m, n), got f32[3]");
    expect_bind_error(cx, AX_P_EIGH, 1, TYPES(T(AX_F64, 2, 3)), NULL, AX_ERR_SHAPE,
                      "eigh requires square matrices (..., n, n), got f64[2,3]");
    expect_bind_error(cx, AX_P_TRIANGULAR_SOLVE, 2, TYPES(T(AX_I32, 2, 2), T(AX_I32, 2, 1)), NULL,
                      AX_ERR_TYPE,
                      "triangular_solve requires a floating-point argument, got i32[2,2]");
    expect_bind_error(cx, AX_P_TRIANGULAR_SOLVE, 2, TYPES(T(AX_F32, 3, 3), T(AX_F64, 3, 2)), NULL,
                      AX_ERR_TYPE,
                      "triangular_solve requires one dtype, got f32[3,3] and f64[3,2]");
    expect_bind_error(cx, AX_P_TRIANGULAR_SOLVE, 2, TYPES(T(AX_F32, 3, 3), T(AX_F32, 2, 2)), NULL,
                      AX_ERR_SHAPE,
                      "triangular_solve requires a (..., n, n) and b (..., n, k) with the same "
                      "leading dimensions, got f32[3,3] and f32[2,2]");
    expect_bind_error(cx, AX_P_TRIANGULAR_SOLVE, 2, TYPES(T(AX_F32, 3, 3), T(AX_F32, 3, 2)),
                      &(ax_params){.flag = AX_TRSOLVE_RIGHT_SIDE}, AX_ERR_SHAPE,
                      "triangular_solve requires a (..., n, n) and b (..., k, n) with the same "
                      "leading dimensions, got f32[3,3] and f32[3,2]");
    expect_bind_error(cx, AX_P_TRIANGULAR_SOLVE, 2, TYPES(T(AX_F32, 2, 3, 3), T(AX_F32, 3, 3, 1)),
                      &(ax_params){.flag = AX_TRSOLVE_LOWER}, AX_ERR_SHAPE,
                      "triangular_solve requires a (..., n, n) and b (..., n, k) with the same "
                      "leading dimensions, got f32[2,3,3] and f32[3,3,1]");
}

/* ---- weak types ---- */

static ax_array *weak_f32(ax_ctx *cx, int ndim, const int64_t *shape, const double *vals) {
    ax_array *a = make(cx, AX_F32, ndim, shape, vals);
    a->weak = true;
    return a;
}

static void test_weak_types(void **state) {
    ax_ctx *cx = *state;
    ax_array *w = weak_f32(cx, 1, SHAPE(2), VALS(1, 2));
    ax_array *s = make(cx, AX_F32, 0, NULL, VALS(3));
    ax_array *ws = weak_f32(cx, 0, NULL, VALS(3));

    ax_array *r = ax_bind_binary(cx, AX_P_ADD, w, ws); /* weak + weak: weak */
    assert_true(r && r->weak);
    assert_values(r, 2, VALS(4, 5));
    ax_array_release(r);
    r = ax_bind_binary(cx, AX_P_MUL, w, s); /* weak * strong: strong */
    assert_true(r && !r->weak);
    assert_values(r, 2, VALS(3, 6));
    ax_array_release(r);
    r = ax_bind_binary(cx, AX_P_LT, w, ws); /* comparisons: strong bool */
    assert_true(r && !r->weak && r->dtype == AX_BOOL);
    ax_array_release(r);
    r = ax_bind_unary(cx, AX_P_EXP, w);
    assert_true(r && r->weak);
    ax_array_release(r);

    /* convert sets the flag from params, without touching its input even when the kernel
     * returns the input itself */
    r = ax_bind1(cx, AX_P_CONVERT, 1, &w, &(ax_params){.dtype = AX_F32, .weak = false});
    assert_true(r && !r->weak && w->weak);
    assert_values(r, 2, VALS(1, 2));
    ax_array_release(r);
    r = ax_bind1(cx, AX_P_CONVERT, 1, &s, &(ax_params){.dtype = AX_F64, .weak = true});
    assert_true(r && r->weak && r->dtype == AX_F64 && !s->weak);
    ax_array_release(r);

    r = ax_bind1(cx, AX_P_REDUCE_SUM, 1, &w, &(ax_params){.naxes = 1, .axes = {0}});
    assert_true(r && r->weak);
    assert_values(r, 1, VALS(3));
    ax_array_release(r);
    r = ax_bind1(cx, AX_P_ARGMAX, 1, &w, &(ax_params){.naxes = 1, .axes = {0}, .dtype = AX_I32});
    assert_true(r && !r->weak);
    assert_values(r, 1, VALS(1));
    ax_array_release(r);
    r = ax_bind_unary(cx, AX_P_STOP_GRADIENT, w);
    assert_true(r && r->weak);
    ax_array_release(r);

    ax_array_release(w);
    ax_array_release(s);
    ax_array_release(ws);
}

/* ---- values through bind: parameters reach the kernels ---- */

static ax_array *bind_params(ax_ctx *cx, ax_prim p, int nin, ax_array **in, ax_params params) {
    ax_array *r = ax_bind1(cx, p, nin, in, &params);
    if (!r) fail_msg("%s: %s", ax_prim_get(p)->name, cx->err.message);
    return r;
}

static void check_and_release(ax_array *r, int n, const double *want) {
    assert_values(r, n, want);
    ax_array_release(r);
}

static void test_params_reach_kernels(void **state) {
    ax_ctx *cx = *state;
    /* x = [[3, 1, 2], [0, 5, 4]] */
    ax_array *x = make(cx, AX_F32, 2, SHAPE(2, 3), VALS(3, 1, 2, 0, 5, 4));
    ax_params axis1 = {.naxes = 1, .axes = {1}};

    check_and_release(bind_params(cx, AX_P_REDUCE_SUM, 1, &x, axis1), 2, VALS(6, 9));
    ax_params reverse = axis1;
    reverse.flag = 1;
    check_and_release(bind_params(cx, AX_P_CUMSUM, 1, &x, reverse), 6, VALS(6, 3, 2, 9, 9, 4));
    ax_params descending = axis1;
    descending.flag = 1;
    check_and_release(bind_params(cx, AX_P_SORT, 1, &x, descending), 6, VALS(3, 2, 1, 5, 4, 0));
    descending.dtype = AX_I32;
    check_and_release(bind_params(cx, AX_P_ARGSORT, 1, &x, descending), 6, VALS(0, 2, 1, 1, 2, 0));
    check_and_release(
        bind_params(cx, AX_P_TRANSPOSE, 1, &x, (ax_params){.naxes = 2, .axes = {1, 0}}), 6,
        VALS(3, 0, 1, 5, 2, 4));
    check_and_release(
        bind_params(cx, AX_P_SLICE, 1, &x, (ax_params){.lo = {0, 0}, .hi = {2, 3}, .step = {1, 2}}),
        4, VALS(3, 2, 0, 4));
    check_and_release(bind_params(cx, AX_P_INTEGER_POW, 1, &x, (ax_params){.k = 2}), 6,
                      VALS(9, 1, 4, 0, 25, 16));
    check_and_release(bind_params(cx, AX_P_REV, 1, &x, axis1), 6, VALS(2, 1, 3, 4, 5, 0));

    ax_array *pad_in[2] = {make(cx, AX_F32, 1, SHAPE(2), VALS(1, 2)),
                           make(cx, AX_F32, 0, NULL, VALS(9))};
    check_and_release(
        bind_params(cx, AX_P_PAD, 2, pad_in, (ax_params){.lo = {1}, .hi = {0}, .step = {2}}), 5,
        VALS(9, 1, 9, 9, 2));
    check_and_release(
        bind_params(
            cx, AX_P_IOTA, 0, NULL,
            (ax_params){.dtype = AX_I32, .ndim = 2, .shape = {2, 3}, .naxes = 1, .axes = {0}}),
        6, VALS(0, 0, 0, 1, 1, 1));

    /* scatter-add with a repeated index accumulates */
    ax_array *sc[3] = {make(cx, AX_F32, 1, SHAPE(4), VALS(0, 0, 0, 0)),
                       make(cx, AX_I32, 2, SHAPE(3, 1), VALS(1, 3, 1)),
                       make(cx, AX_F32, 1, SHAPE(3), VALS(1, 2, 4))};
    check_and_release(bind_params(cx, AX_P_SCATTER, 3, sc,
                                  (ax_params){.naxes = 1, .axes = {0}, .flag = AX_SCATTER_ADD}),
                      4, VALS(0, 5, 0, 2));
    /* x[:, [2, 0]] as gather: out[b, r] = x[r, idx[b]] */
    ax_array *idx = make(cx, AX_I32, 2, SHAPE(2, 1), VALS(2, 0));
    check_and_release(bind_params(cx, AX_P_GATHER, 2, (ax_array *[]){x, idx},
                                  (ax_params){.naxes = 1, .axes = {1}}),
                      4, VALS(2, 4, 3, 0));
    /* an index out of range is the kernel's IndexError (it depends on values) */
    assert_null(ax_bind1(cx, AX_P_GATHER, 2, (ax_array *[]){x, sc[1]},
                         &(ax_params){.naxes = 1, .axes = {1}}));
    assert_int_equal(cx->err.kind, AX_ERR_INDEX);
    ax_error_clear(cx);
    ax_array_release(idx);
    for (int i = 0; i < 3; i++) ax_array_release(sc[i]);
    for (int i = 0; i < 2; i++) ax_array_release(pad_in[i]);
    ax_array_release(x);
}

/* ---- dynamic_slice / dynamic_update_slice (implemented here, in runtime/dynamic_slice.c) ---- */

static void test_dynamic_slice(void **state) {
    ax_ctx *cx = *state;
    /* x = arange(10).reshape(2, 5) */
    ax_array *x = make(cx, AX_F32, 2, SHAPE(2, 5), VALS(0, 1, 2, 3, 4, 5, 6, 7, 8, 9));
    ax_array *in[3] = {x, make(cx, AX_I32, 0, NULL, VALS(1)), make(cx, AX_I64, 0, NULL, VALS(3))};
    ax_params p = {.ndim = 2, .shape = {1, 3}};
    /* lax.dynamic_slice(x, (1, 3), (1, 3)) clamps the column start to 2 */
    check_and_release(bind_params(cx, AX_P_DYNAMIC_SLICE, 3, in, p), 3, VALS(7, 8, 9));
    ax_array_release(in[1]);
    in[1] = make(cx, AX_I32, 0, NULL, VALS(-4));
    p.shape[0] = 2;
    p.shape[1] = 2;
    check_and_release(bind_params(cx, AX_P_DYNAMIC_SLICE, 3, in, p), 4, VALS(3, 4, 8, 9));

    /* lax.dynamic_update_slice(zeros((3, 4)), [[1, 2], [3, 4]], (2, -1)) -> start (1, 0) */
    ax_array *z = make(cx, AX_F32, 2, SHAPE(3, 4), VALS(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0));
    ax_array *u = make(cx, AX_F32, 2, SHAPE(2, 2), VALS(1, 2, 3, 4));
    ax_array *s0 = make(cx, AX_I32, 0, NULL, VALS(2)), *s1 = make(cx, AX_I32, 0, NULL, VALS(-1));
    ax_array *r =
        bind_params(cx, AX_P_DYNAMIC_UPDATE_SLICE, 4, (ax_array *[]){z, u, s0, s1}, (ax_params){0});
    check_and_release(r, 12, VALS(0, 0, 0, 0, 1, 2, 0, 0, 3, 4, 0, 0));
    assert_float_equal(ax_array_get_f64(z, 4), 0, 0); /* the input is unchanged */

    /* a strided (transposed) update */
    ax_array *ut = ax_array_view(cx, u, 2, SHAPE(2, 2), SHAPE(1, 2), 0);
    ax_array_release(s0);
    s0 = make(cx, AX_I32, 0, NULL, VALS(0));
    r = bind_params(cx, AX_P_DYNAMIC_UPDATE_SLICE, 4, (ax_array *[]){z, ut, s0, s0},
                    (ax_params){0});
    check_and_release(r, 12, VALS(1, 3, 0, 0, 2, 4, 0, 0, 0, 0, 0, 0));

    ax_array *objs[] = {x, in[1], in[2], z, u, ut, s0, s1};
    for (size_t i = 0; i < sizeof objs / sizeof *objs; i++) ax_array_release(objs[i]);
}

/* ---- bind and the trace stack ---- */

typedef struct {
    int calls;
    ax_prim last;
    int last_nin;
} fake_log;

/* A transformation that records what it was asked and answers with zeros of the right type. */
static int fake_process(ax_ctx *cx, ax_trace *trace, ax_prim p, int nin, ax_array **in,
                        const ax_params *params, ax_array **out) {
    fake_log *log = trace->data;
    log->calls++;
    log->last = p;
    log->last_nin = nin;
    ax_aval avals[8], want;
    for (int i = 0; i < nin; i++) ax_aval_of(&avals[i], in[i]);
    if (ax_prim_infer(cx, p, nin, avals, params, &want)) return -1;
    out[0] = ax_array_zeros(cx, want.dtype, want.ndim, want.shape);
    return out[0] ? 0 : -1;
}

static ax_array *fake_tracer(ax_ctx *cx, ax_trace *t) {
    ax_aval type = {AX_F32, false, 1, {2}};
    ax_array *a = ax_tracer_new(cx, t, &type, NULL, NULL);
    assert_non_null(a);
    return a;
}

static void test_bind_dispatch(void **state) {
    ax_ctx *cx = *state;
    fake_log log1 = {0}, log2 = {0};
    ax_trace t1 = {.name = "fake1", .process_primitive = fake_process, .data = &log1};
    ax_trace t2 = {.name = "fake2", .process_primitive = fake_process, .data = &log2};
    ax_array *x = make(cx, AX_F32, 1, SHAPE(2), VALS(1, 2));

    /* no trace: eager */
    check_and_release(ax_bind_binary(cx, AX_P_ADD, x, x), 2, VALS(2, 4));

    assert_int_equal(ax_trace_push(cx, &t1), 0);
    assert_int_equal(ax_trace_push(cx, &t2), 0);
    assert_int_equal(ax_trace_depth(cx), 2);
    ax_array *a = fake_tracer(cx, &t1), *b = fake_tracer(cx, &t2);

    /* active traces but no tracer inputs: still eager */
    check_and_release(ax_bind_binary(cx, AX_P_MUL, x, x), 2, VALS(1, 4));
    assert_int_equal(log1.calls + log2.calls, 0);

    /* a tracer of the outer trace only: the outer trace handles it, even under t2 */
    ax_array *r = ax_bind_binary(cx, AX_P_SUB, x, a);
    assert_non_null(r);
    assert_int_equal(log1.calls, 1);
    assert_int_equal(log1.last, AX_P_SUB);
    assert_int_equal(log2.calls, 0);
    ax_array_release(r);

    /* tracers of both: the innermost owner */
    r = ax_bind_binary(cx, AX_P_ADD, a, b);
    assert_non_null(r);
    assert_int_equal(log2.calls, 1);
    assert_int_equal(log2.last, AX_P_ADD);
    assert_int_equal(log2.last_nin, 2);
    assert_int_equal(log1.calls, 1);
    ax_array_release(r);

    ax_trace_pop(cx, &t2);
    ax_trace_pop(cx, &t1);
    assert_int_equal(ax_trace_depth(cx), 0);
    assert_null(cx->traces);

    /* escaped tracer */
    assert_null(ax_bind_unary(cx, AX_P_NEG, b));
    assert_int_equal(cx->err.kind, AX_ERR_RUNTIME);
    ax_error_clear(cx);

    ax_array_release(a);
    ax_array_release(b);
    ax_array_release(x);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names),
        cmocka_unit_test_setup_teardown(test_rules_agree_with_kernels, setup, teardown),
        cmocka_unit_test_setup_teardown(test_elementwise_flag_means_pointwise, setup, teardown),
        cmocka_unit_test_setup_teardown(test_nondiff_and_linear_flags, setup, teardown),
        cmocka_unit_test_setup_teardown(test_elementwise_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reduction_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_shape_op_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_indexing_and_other_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_weak_types, setup, teardown),
        cmocka_unit_test_setup_teardown(test_params_reach_kernels, setup, teardown),
        cmocka_unit_test_setup_teardown(test_dynamic_slice, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bind_dispatch, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

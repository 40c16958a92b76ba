/* The sign analysis of fused loops (compiler/value_sign.c) on hand-made node lists: what each
 * operation makes of its operands' signs, and what it must not claim (integers, division by a
 * value that may be a zero of either sign, odd negative powers). tests/lang/jit_exp_sign.ax
 * checks the code it selects: the same bits as eager exp. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "../../compiler/primitive.h"
#include "../../compiler/value_sign.h"

enum { MAX_NODES = 64 };

typedef struct nodes {
    ax_code_node nd[MAX_NODES];
    int n;
} nodes;

static int add(nodes *s, ax_code_node n) {
    assert_true(s->n < MAX_NODES);
    s->nd[s->n] = n;
    return s->n++;
}

static int load(nodes *s, ax_dtype t) {
    return add(s, (ax_code_node){.kind = AX_KN_LOAD, .dtype = t, .buf = 0});
}

static int constant(nodes *s, float v) {
    uint32_t bits;
    memcpy(&bits, &v, 4);
    return add(s, (ax_code_node){.kind = AX_KN_CONST, .dtype = AX_F32, .lit = bits, .buf = -1});
}

static int op(nodes *s, ax_prim p, int a, int b) {
    ax_code_node n = {.kind = AX_KN_OP, .dtype = s->nd[a].dtype, .prim = p, .in = {a, b}};
    n.nin = b < 0 ? 1 : 2;
    n.buf = -1;
    return add(s, n);
}

static int pow_k(nodes *s, int a, int64_t k) {
    int i = op(s, AX_P_INTEGER_POW, a, -1);
    s->nd[i].k = k;
    return i;
}

/* the sign of node i, the last of s */
static ax_sign sign_of(nodes *s, int i) {
    ax_sign sign[MAX_NODES];
    ax_value_signs(s->nd, s->n, sign);
    return sign[i];
}

static void test_squares_and_their_negations(void **state) {
    (void)state;
    nodes s = {0};
    int x = load(&s, AX_F32), nx = op(&s, AX_P_NEG, x, -1);
    assert_int_equal(sign_of(&s, x), AX_SIGN_ANY);
    assert_int_equal(sign_of(&s, op(&s, AX_P_MUL, x, x)), AX_SIGN_NONNEG);
    assert_int_equal(sign_of(&s, op(&s, AX_P_MUL, nx, x)), AX_SIGN_NONPOS);  /* -x * x */
    assert_int_equal(sign_of(&s, op(&s, AX_P_MUL, x, nx)), AX_SIGN_NONPOS);  /* x * -x */
    assert_int_equal(sign_of(&s, op(&s, AX_P_MUL, nx, nx)), AX_SIGN_NONNEG); /* -x * -x */
    int sq = op(&s, AX_P_MUL, x, x);
    assert_int_equal(sign_of(&s, op(&s, AX_P_NEG, sq, -1)), AX_SIGN_NONPOS); /* -(x * x) */
    assert_int_equal(sign_of(&s, op(&s, AX_P_SQUARE, x, -1)), AX_SIGN_NONNEG);
    int y = load(&s, AX_F32);
    assert_int_equal(sign_of(&s, op(&s, AX_P_MUL, x, y)), AX_SIGN_ANY);
}

static void test_functions_and_powers(void **state) {
    (void)state;
    nodes s = {0};
    int x = load(&s, AX_F32);
    assert_int_equal(sign_of(&s, op(&s, AX_P_EXP, x, -1)), AX_SIGN_NONNEG);
    assert_int_equal(sign_of(&s, op(&s, AX_P_SQRT, x, -1)), AX_SIGN_NONNEG);
    assert_int_equal(sign_of(&s, op(&s, AX_P_LOGISTIC, x, -1)), AX_SIGN_NONNEG);
    assert_int_equal(sign_of(&s, op(&s, AX_P_ABS, x, -1)), AX_SIGN_NONNEG);
    assert_int_equal(sign_of(&s, op(&s, AX_P_LOG, x, -1)), AX_SIGN_ANY);
    assert_int_equal(sign_of(&s, op(&s, AX_P_TANH, x, -1)), AX_SIGN_ANY);
    assert_int_equal(sign_of(&s, pow_k(&s, x, 2)), AX_SIGN_NONNEG);
    assert_int_equal(sign_of(&s, pow_k(&s, x, -2)), AX_SIGN_NONNEG);
    int a = op(&s, AX_P_ABS, x, -1);
    assert_int_equal(sign_of(&s, pow_k(&s, a, 3)), AX_SIGN_NONNEG);
    /* 1 / a^3 of a = -0 is -inf: not claimed */
    assert_int_equal(sign_of(&s, pow_k(&s, a, -3)), AX_SIGN_ANY);
}

static void test_sums_quotients_and_choices(void **state) {
    (void)state;
    nodes s = {0};
    int x = load(&s, AX_F32), y = load(&s, AX_F32);
    int pos = op(&s, AX_P_ABS, x, -1), neg = op(&s, AX_P_NEG, pos, -1);
    int two = constant(&s, 2.0f), mtwo = constant(&s, -2.0f), zero = constant(&s, 0.0f);
    assert_int_equal(sign_of(&s, mtwo), AX_SIGN_NONPOS);
    assert_int_equal(sign_of(&s, op(&s, AX_P_ADD, pos, two)), AX_SIGN_NONNEG);
    assert_int_equal(sign_of(&s, op(&s, AX_P_ADD, pos, neg)), AX_SIGN_ANY);
    assert_int_equal(sign_of(&s, op(&s, AX_P_SUB, neg, pos)), AX_SIGN_NONPOS);
    assert_int_equal(sign_of(&s, op(&s, AX_P_SUB, pos, neg)), AX_SIGN_NONNEG);
    assert_int_equal(sign_of(&s, op(&s, AX_P_SUB, pos, pos)), AX_SIGN_ANY);
    assert_int_equal(sign_of(&s, op(&s, AX_P_DIV, neg, two)), AX_SIGN_NONPOS);
    assert_int_equal(sign_of(&s, op(&s, AX_P_DIV, neg, mtwo)), AX_SIGN_NONNEG);
    /* by a constant zero or a value that may be one: x / +0 is an infinity of x's sign */
    assert_int_equal(sign_of(&s, op(&s, AX_P_DIV, neg, zero)), AX_SIGN_ANY);
    assert_int_equal(sign_of(&s, op(&s, AX_P_DIV, neg, pos)), AX_SIGN_ANY);
    assert_int_equal(sign_of(&s, op(&s, AX_P_MUL, neg, mtwo)), AX_SIGN_NONNEG);
    assert_int_equal(sign_of(&s, op(&s, AX_P_MAX, y, pos)), AX_SIGN_NONNEG);
    assert_int_equal(sign_of(&s, op(&s, AX_P_MAX, y, neg)), AX_SIGN_ANY);
    assert_int_equal(sign_of(&s, op(&s, AX_P_MIN, neg, y)), AX_SIGN_NONPOS);
    assert_int_equal(sign_of(&s, op(&s, AX_P_MIN, pos, two)), AX_SIGN_NONNEG);
    int pred = load(&s, AX_BOOL);
    ax_code_node sel = {.kind = AX_KN_OP,
                        .dtype = AX_F32,
                        .prim = AX_P_SELECT,
                        .nin = 3,
                        .in = {pred, neg, mtwo},
                        .buf = -1};
    assert_int_equal(sign_of(&s, add(&s, sel)), AX_SIGN_NONPOS);
    sel.in[2] = two;
    assert_int_equal(sign_of(&s, add(&s, sel)), AX_SIGN_ANY);
}

static void test_integers_are_never_claimed(void **state) {
    (void)state;
    nodes s = {0};
    int i = load(&s, AX_I32);
    assert_int_equal(sign_of(&s, op(&s, AX_P_MUL, i, i)), AX_SIGN_ANY);  /* wraps */
    assert_int_equal(sign_of(&s, op(&s, AX_P_ABS, i, -1)), AX_SIGN_ANY); /* abs(INT_MIN) */
    int d = load(&s, AX_F64);
    assert_int_equal(sign_of(&s, op(&s, AX_P_MUL, d, d)), AX_SIGN_NONNEG);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_squares_and_their_negations),
        cmocka_unit_test(test_functions_and_powers),
        cmocka_unit_test(test_sums_quotients_and_choices),
        cmocka_unit_test(test_integers_are_never_claimed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

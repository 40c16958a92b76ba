/* iota, full, arange, linspace, eye: values against NumPy (float32 results written as the
 * exact doubles of the float32 values NumPy gives). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "../../runtime/creation.h"
#include "kernel_test_util.h"

static void test_iota(void **state) {
    ax_ctx *cx = *state;
    expect_values(ax_iota(cx, AX_F32, 2, SHAPE(2, 3), 1), AX_F32, 2, SHAPE(2, 3),
                  VALS(0, 1, 2, 0, 1, 2), 0);
    expect_values(ax_iota(cx, AX_I64, 3, SHAPE(2, 2, 2), 1), AX_I64, 3, SHAPE(2, 2, 2),
                  VALS(0, 0, 1, 1, 0, 0, 1, 1), 0);
    expect_values(ax_iota(cx, AX_U8, 1, SHAPE(4), 0), AX_U8, 1, SHAPE(4), VALS(0, 1, 2, 3), 0);
    expect_values(ax_iota(cx, AX_I32, 2, SHAPE(0, 3), 1), AX_I32, 2, SHAPE(0, 3), NULL, 0);
    expect_error(cx, ax_iota(cx, AX_I32, 2, SHAPE(2, 3), 2), AX_ERR_VALUE,
                 "iota: dimension 2 is out of bounds for shape (2, 3)");
    expect_error(cx, ax_iota(cx, AX_I32, 0, NULL, 0), AX_ERR_VALUE,
                 "iota: dimension 0 is out of bounds for shape ()");
}

static void test_full(void **state) {
    ax_ctx *cx = *state;
    expect_values(ax_full(cx, AX_F32, 2, SHAPE(2, 2), 1.5), AX_F32, 2, SHAPE(2, 2),
                  VALS(1.5, 1.5, 1.5, 1.5), 0);
    expect_values(ax_full(cx, AX_I32, 1, SHAPE(3), -3.7), AX_I32, 1, SHAPE(3), VALS(-3, -3, -3), 0);
    expect_values(ax_full(cx, AX_BOOL, 1, SHAPE(2), 2), AX_BOOL, 1, SHAPE(2), VALS(1, 1), 0);
    expect_values(ax_full(cx, AX_F64, 0, NULL, NAN), AX_F64, 0, NULL, VALS(NAN), 0);
    expect_values(ax_full(cx, AX_F64, 1, SHAPE(0), 1), AX_F64, 1, SHAPE(0), NULL, 0);
    expect_error(cx, ax_full(cx, AX_F32, 2, SHAPE(2, -1), 0), AX_ERR_VALUE,
                 "full: negative dimension -1 in shape (2, -1)");
}

static void test_arange(void **state) {
    ax_ctx *cx = *state;
    /* np.arange(0.1, 5, 0.37, dtype=float32): steps by the f32 delta f32(0.47) - f32(0.1) */
    expect_values(ax_arange(cx, AX_F32, 0.1, 0.37, 14), AX_F32, 1, SHAPE(14),
                  VALS(0.10000000149011612, 0.4699999988079071, 0.8400000333786011,
                       1.2100000381469727, 1.5800000429153442, 1.9500000476837158,
                       2.319999933242798, 2.690000057220459, 3.059999942779541, 3.429999828338623,
                       3.799999952316284, 4.170000076293945, 4.539999961853027, 4.909999847412109),
                  0);
    expect_values(ax_arange(cx, AX_F64, -3.3, 0.7, 9), AX_F64, 1, SHAPE(9),
                  VALS(-3.3, -2.5999999999999996, -1.8999999999999995, -1.1999999999999993,
                       -0.4999999999999991, 0.20000000000000107, 0.9000000000000012,
                       1.6000000000000014, 2.3000000000000016),
                  0);
    expect_values(ax_arange(cx, AX_I32, 0, 3, 4), AX_I32, 1, SHAPE(4), VALS(0, 3, 6, 9), 0);
    expect_values(ax_arange(cx, AX_I64, 10, -4, 3), AX_I64, 1, SHAPE(3), VALS(10, 6, 2), 0);
    /* NumPy's integer quirk: arange(0, 10, 1.5, dtype=int32) steps by int(1.5) */
    expect_values(ax_arange(cx, AX_I32, 0, 1.5, 7), AX_I32, 1, SHAPE(7), VALS(0, 1, 2, 3, 4, 5, 6),
                  0);
    int64_t big[] = {9007199254740992, 9007199254740995, 9007199254740998};
    expect_ints(ax_arange(cx, AX_I64, 9007199254740992.0, 3, 3), AX_I64, 1, SHAPE(3), big);
    expect_values(ax_arange(cx, AX_F32, 0, 1, 0), AX_F32, 1, SHAPE(0), NULL, 0);
    expect_values(ax_arange(cx, AX_F32, 0, 1, -2), AX_F32, 1, SHAPE(0), NULL, 0);
    expect_error(cx, ax_arange(cx, AX_F32, 0, 0, 3), AX_ERR_VALUE,
                 "arange: the step must not be zero");
}

static void test_linspace(void **state) {
    ax_ctx *cx = *state;
    expect_values(ax_linspace(cx, AX_F32, 0, 1, 7, true), AX_F32, 1, SHAPE(7),
                  VALS(0, 0.1666666716337204, 0.3333333432674408, 0.5, 0.6666666865348816,
                       0.8333333134651184, 1),
                  0);
    expect_values(ax_linspace(cx, AX_F64, -1, 2.5, 9, true), AX_F64, 1, SHAPE(9),
                  VALS(-1, -0.5625, -0.125, 0.3125, 0.75, 1.1875, 1.625, 2.0625, 2.5), 0);
    expect_values(ax_linspace(cx, AX_F64, -1, 2.5, 4, false), AX_F64, 1, SHAPE(4),
                  VALS(-1, -0.125, 0.75, 1.625), 0);
    expect_values(ax_linspace(cx, AX_I32, 2, 3, 5, true), AX_I32, 1, SHAPE(5), VALS(2, 2, 2, 2, 3),
                  0);
    expect_values(ax_linspace(cx, AX_I32, 5, -5, 4, true), AX_I32, 1, SHAPE(4), VALS(5, 1, -2, -5),
                  0);
    expect_values(ax_linspace(cx, AX_F64, 1.5, 9, 1, true), AX_F64, 1, SHAPE(1), VALS(1.5), 0);
    expect_values(ax_linspace(cx, AX_F64, 1.5, 9, 0, true), AX_F64, 1, SHAPE(0), NULL, 0);
    expect_error(cx, ax_linspace(cx, AX_F32, 0, 1, -1, true), AX_ERR_VALUE,
                 "Number of samples, -1, must be non-negative.");
}

static void test_eye(void **state) {
    ax_ctx *cx = *state;
    expect_values(ax_eye(cx, AX_F32, 3, 4, 1), AX_F32, 2, SHAPE(3, 4),
                  VALS(0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1), 0);
    expect_values(ax_eye(cx, AX_I32, 3, 3, -1), AX_I32, 2, SHAPE(3, 3),
                  VALS(0, 0, 0, 1, 0, 0, 0, 1, 0), 0);
    expect_values(ax_eye(cx, AX_BOOL, 2, 2, 5), AX_BOOL, 2, SHAPE(2, 2), VALS(0, 0, 0, 0), 0);
    expect_values(ax_eye(cx, AX_F64, 0, 3, 0), AX_F64, 2, SHAPE(0, 3), NULL, 0);
    expect_error(cx, ax_eye(cx, AX_F32, -1, 2, 0), AX_ERR_VALUE,
                 "eye: negative dimension -1 in shape (-1, 2)");
    /* diagonals beyond the matrix, up to the ends of int64 */
    expect_values(ax_eye(cx, AX_I32, 2, 2, INT64_MAX), AX_I32, 2, SHAPE(2, 2), VALS(0, 0, 0, 0), 0);
    expect_values(ax_eye(cx, AX_I32, 2, 2, INT64_MIN), AX_I32, 2, SHAPE(2, 2), VALS(0, 0, 0, 0), 0);
}

/* runtime/array.h's size invariant: the product of the nonzero dimensions times the element
 * size fits in int64; shapes that break it are ValueErrors naming them. */
static void test_sizes(void **state) {
    ax_ctx *cx = *state;
    int64_t size = -1;
    assert_true(ax_shape_size_checked(2, SHAPE(3, 4), 4, &size));
    assert_int_equal(size, 12);
    assert_true(ax_shape_size_checked(0, NULL, 8, &size));
    assert_int_equal(size, 1);
    assert_true(ax_shape_size_checked(3, SHAPE(0, INT64_MAX, 1), 1, &size));
    assert_int_equal(size, 0);
    assert_true(ax_shape_size_checked(1, SHAPE(INT64_MAX / 8), 8, &size));
    assert_false(ax_shape_size_checked(1, SHAPE(INT64_MAX / 8 + 1), 8, &size));
    assert_false(ax_shape_size_checked(4, SHAPE(65536, 65536, 65536, 65536), 4, &size));
    /* a zero dimension does not excuse the others: their products must fit too */
    assert_false(ax_shape_size_checked(3, SHAPE(0, 1LL << 32, 1LL << 32), 1, &size));
    assert_true(ax_shape_check(cx, "f", AX_F32, 2, SHAPE(2, 3)));
    assert_false(ax_shape_check(cx, "f", AX_F32, 17, NULL));
    expect_error(cx, NULL, AX_ERR_VALUE, "f: ax arrays have at most 16 dimensions, not 17");
    assert_false(ax_shape_check(cx, NULL, AX_F32, 2, SHAPE(2, -3)));
    expect_error(cx, NULL, AX_ERR_VALUE, "negative dimension -3 in shape (2, -3)");
    expect_error(cx, ax_full(cx, AX_F32, 4, SHAPE(65536, 65536, 65536, 65536), 1.0), AX_ERR_VALUE,
                 "shape (65536, 65536, 65536, 65536) is too big: its float32 elements would take "
                 "more than 2**63 bytes");
    expect_error(cx, ax_array_new(cx, AX_F64, 1, SHAPE(1LL << 60)), AX_ERR_VALUE,
                 "shape (1152921504606846976,) is too big: its float64 elements would take more "
                 "than 2**63 bytes");
    expect_error(cx, ax_array_new_abstract(cx, AX_U8, 2, SHAPE(1LL << 32, 1LL << 32)), AX_ERR_VALUE,
                 "shape (4294967296, 4294967296) is too big: its uint8 elements would take more "
                 "than 2**63 bytes");
    int64_t sum;
    assert_false(ax_add_i64(INT64_MAX, 1, &sum));
    assert_false(ax_mul_i64(INT64_MIN, -1, &sum));
    assert_true(ax_mul_i64(-(1LL << 31), 1LL << 32, &sum));
    assert_int_equal(sum, INT64_MIN);
}

/* A buffer the system cannot give is a MemoryError; the header goes back to the allocation
 * cache with its count (LeakSanitizer, under `make asan`, checks nothing is left behind). */
static void test_out_of_memory(void **state) {
    ax_ctx *cx = *state;
    expect_error(cx, ax_array_new(cx, AX_F32, 1, SHAPE(1LL << 40)), AX_ERR_MEMORY, "out of memory");
    expect_values(ax_full(cx, AX_F32, 1, SHAPE(2), 1.0), AX_F32, 1, SHAPE(2), VALS(1, 1), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_iota, setup_ctx, teardown_ctx),
        cmocka_unit_test_setup_teardown(test_full, setup_ctx, teardown_ctx),
        cmocka_unit_test_setup_teardown(test_arange, setup_ctx, teardown_ctx),
        cmocka_unit_test_setup_teardown(test_linspace, setup_ctx, teardown_ctx),
        cmocka_unit_test_setup_teardown(test_eye, setup_ctx, teardown_ctx),
        cmocka_unit_test_setup_teardown(test_sizes, setup_ctx, teardown_ctx),
        cmocka_unit_test_setup_teardown(test_out_of_memory, setup_ctx, teardown_ctx),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

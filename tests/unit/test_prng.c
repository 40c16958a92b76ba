/* threefry2x32 against Random123's known-answer vectors (the ones JAX's tests use), on one pair
 * and through the broadcasting kernel, split over the thread pool for large inputs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "../../runtime/prng.h"

static const uint32_t vectors[3][6] = {
    {0x00000000, 0x00000000, 0x00000000, 0x00000000, 0x6b200159, 0x99ba4efe},
    {0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0x1cb996fc, 0xbb002be7},
    {0x13198a2e, 0x03707344, 0x243f6a88, 0x85a308d3, 0xc4923a9c, 0x483df7a0},
};

static void test_known_answers(void **state) {
    (void)state;
    for (int i = 0; i < 3; i++) {
        uint32_t y0, y1;
        const uint32_t *v = vectors[i];
        ax_threefry2x32_pair(v[0], v[1], v[2], v[3], &y0, &y1);
        assert_int_equal(y0, v[4]);
        assert_int_equal(y1, v[5]);
    }
}

static ax_array *u32(ax_ctx *cx, int ndim, const int64_t *shape, const uint32_t *vals) {
    return ax_array_from_data(cx, AX_U32, ndim, shape, vals);
}

/* The kernel broadcasts a scalar key over counters, and agrees with the pair function on a
 * large array (which goes through the thread pool). */
static void test_kernel(void **state) {
    ax_ctx *cx = *state;
    const uint32_t k0 = 0x13198a2e, k1 = 0x03707344;
    enum { N = 100000 };
    static uint32_t lo[N], hi[N];
    for (uint32_t i = 0; i < N; i++) lo[i] = i, hi[i] = 0x243f6a88u * (i & 1);
    ax_array *a0 = u32(cx, 0, NULL, &k0), *a1 = u32(cx, 0, NULL, &k1);
    ax_array *x0 = u32(cx, 1, (int64_t[]){N}, hi), *x1 = u32(cx, 1, (int64_t[]){N}, lo);
    ax_array *y0 = NULL, *y1 = NULL;
    assert_int_equal(ax_threefry2x32(cx, a0, a1, x0, x1, &y0, &y1), 0);
    for (int i = 0; i < N; i += 997) {
        uint32_t w0, w1;
        ax_threefry2x32_pair(k0, k1, hi[i], lo[i], &w0, &w1);
        assert_int_equal(((uint32_t *)y0->buf->data)[i], w0);
        assert_int_equal(((uint32_t *)y1->buf->data)[i], w1);
    }
    ax_array *arrs[] = {a0, a1, x0, x1, y0, y1};
    for (int i = 0; i < 6; i++) ax_array_release(arrs[i]);
}

static void test_errors(void **state) {
    ax_ctx *cx = *state;
    float f = 1.0f;
    ax_array *bad = ax_array_from_data(cx, AX_F32, 0, NULL, &f), *y0 = NULL, *y1 = NULL;
    assert_int_equal(ax_threefry2x32(cx, bad, bad, bad, bad, &y0, &y1), -1);
    assert_int_equal(cx->err.kind, AX_ERR_TYPE);
    ax_error_clear(cx);
    ax_array_release(bad);
}

static int setup(void **state) {
    *state = ax_ctx_new();
    return *state ? 0 : -1;
}

static int teardown(void **state) {
    ax_ctx_free(*state);
    return 0;
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_known_answers),
        cmocka_unit_test(test_kernel),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}

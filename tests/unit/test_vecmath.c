/* ax's f32 vector math (runtime/vecmath.h) on its own: accuracy against glibc's f64 functions
 * over a sample of every f32 bit pattern and the regime edges, special values exactly, and
 * the same bits whatever the layout (contiguous, strided, in place, any length or offset).
 * test_jit.c checks that jit's emitted
 * code gives these bits; docs/vecmath.md has the exhaustive figures (tests/bench/bench_vecmath
 * --ulp). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../compiler/primitive.h"
#include "../../runtime/elementwise.h"
#include "../../runtime/vecmath.h"
#include "kernel_test_util.h"
#include "vecmath_test_util.h"

static uint32_t bits_of(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

/* Steps between two floats along the number line; -1 when they may never be close: one is
 * NaN, infinite or a zero of the other sign, and they differ. */
static int64_t steps(float want, float got) {
    if (bits_of(want) == bits_of(got) || (isnan(want) && isnan(got))) return 0;
    if (isnan(want) || isnan(got) || isinf(want) || isinf(got) || (want == 0 && got == 0))
        return -1;
    int64_t a = bits_of(want) & 0x7fffffff, b = bits_of(got) & 0x7fffffff;
    if (signbit(want)) a = -a;
    if (signbit(got)) b = -b;
    return a > b ? a - b : b - a;
}

enum { STRIDE = 4099 }; /* ~1M bit patterns: every exponent, mantissas spread over each */

static float *sample_inputs(int64_t *n) {
    int64_t cap = ((int64_t)1 << 32) / STRIDE + 1 + VECMATH_NEDGES;
    float *x = malloc((size_t)cap * sizeof *x);
    assert_non_null(x);
    int64_t k = vecmath_edges(x);
    for (uint64_t u = 0; u < (uint64_t)1 << 32; u += STRIDE) {
        uint32_t b = (uint32_t)u;
        memcpy(&x[k++], &b, 4);
    }
    *n = k;
    return x;
}

/* Within 2 ulp of the correctly rounded result (glibc's f64 function rounded to f32: its
 * error is far below an f32 ulp); zeros, infinities and NaN exactly. */
static void test_accuracy(void **state) {
    (void)state;
    int64_t n;
    float *x = sample_inputs(&n), *y = malloc((size_t)n * sizeof *y);
    assert_non_null(y);
    int bad = 0;
    for (int f = 0; f < AX_VM_COUNT; f++) {
        ax_vecmath_f32((ax_vm_fn)f, n, x, 1, y);
        int64_t worst = 0;
        float at = 0;
        for (int64_t i = 0; i < n; i++) {
            float want = (float)vecmath_refs[f]((double)x[i]);
            int64_t d = steps(want, y[i]);
            if (d < 0 || d > 2) {
                if (bad++ < 20)
                    print_error("%s(%a): got %a, want %a\n", ax_vecmath_name((ax_vm_fn)f),
                                (double)x[i], (double)y[i], (double)want);
            } else if (d > worst) {
                worst = d, at = x[i];
            }
        }
        print_message("%-9s %lld inputs: worst %lld ulp (at %.9g)\n", ax_vecmath_name((ax_vm_fn)f),
                      (long long)n, (long long)worst, (double)at);
    }
    free(x);
    free(y);
    if (bad) fail_msg("%d results beyond 2 ulp, or special values wrong", bad);
}

/* The values the IEEE functions define exactly, spelled out. */
static void test_special_values(void **state) {
    (void)state;
    static const struct {
        ax_vm_fn f;
        float x, want;
    } cases[] = {
        {AX_VM_EXP, -INFINITY, 0},
        {AX_VM_EXP, INFINITY, INFINITY},
        {AX_VM_EXP, 0, 1},
        {AX_VM_EXP, -200, 0},
        {AX_VM_EXP, 89, INFINITY},
        {AX_VM_EXPM1, -0.0f, -0.0f},
        {AX_VM_EXPM1, -INFINITY, -1},
        {AX_VM_EXPM1, INFINITY, INFINITY},
        {AX_VM_EXPM1, 0x1p-149f, 0x1p-149f},
        {AX_VM_LOG, 0, -INFINITY},
        {AX_VM_LOG, -0.0f, -INFINITY},
        {AX_VM_LOG, -1, NAN},
        {AX_VM_LOG, 1, 0},
        {AX_VM_LOG, INFINITY, INFINITY},
        {AX_VM_TANH, 0, 0},
        {AX_VM_TANH, -0.0f, -0.0f},
        {AX_VM_TANH, 0x1p-149f, 0x1p-149f},
        {AX_VM_TANH, -0x1p-20f, -0x1p-20f},
        {AX_VM_TANH, INFINITY, 1},
        {AX_VM_TANH, -INFINITY, -1},
        {AX_VM_TANH, 9.0109215f, 1},
        {AX_VM_TANH, -20, -1},
        {AX_VM_TANH, 3e38f, 1},
        {AX_VM_LOGISTIC, INFINITY, 1},
        {AX_VM_LOGISTIC, -INFINITY, 0},
        {AX_VM_LOGISTIC, 0, 0.5f},
        {AX_VM_ERF, -0.0f, -0.0f},
        {AX_VM_ERF, INFINITY, 1},
        {AX_VM_ERF, -INFINITY, -1},
        {AX_VM_ERF, 5, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        float y;
        ax_vecmath_f32(cases[i].f, 1, &cases[i].x, 1, &y);
        if (steps(cases[i].want, y) != 0)
            fail_msg("%s(%g) = %a, want %a", ax_vecmath_name(cases[i].f), (double)cases[i].x,
                     (double)y, (double)cases[i].want);
    }
    for (int f = 0; f < AX_VM_COUNT; f++) {
        float nan = NAN, y;
        ax_vecmath_f32((ax_vm_fn)f, 1, &nan, 1, &y);
        if (!isnan(y)) fail_msg("%s(nan) = %g", ax_vecmath_name((ax_vm_fn)f), (double)y);
    }
}

/* The same bits, NaN matching any NaN (which NaN an operation passes on is the compiler's
 * choice of operand order). */
static void expect_bits(const float *want, const float *got, int64_t n, const char *what, int f) {
    for (int64_t i = 0; i < n; i++)
        if (bits_of(want[i]) != bits_of(got[i]) && !(isnan(want[i]) && isnan(got[i])))
            fail_msg("%s %s element %lld: %a vs %a", ax_vecmath_name((ax_vm_fn)f), what,
                     (long long)i, (double)want[i], (double)got[i]);
}

/* An element's result is the same bits in a vector loop, its tail, a strided gather, in place
 * or alone. */
static void test_layout(void **state) {
    (void)state;
    enum { N = 1031 };
    float x[N], want[N], got[N], wide[3 * N];
    for (int i = 0; i < N; i++) {
        x[i] = 30.0f * sinf(0.61f * (float)i) + 0.001f * (float)i;
        if (i % 97 == 5) x[i] = 1e7f * (float)(i % 13) + 0.5f;
        if (i % 101 == 7) x[i] = i % 2 ? NAN : -INFINITY;
        wide[3 * i] = x[i];
    }
    for (int f = 0; f < AX_VM_COUNT; f++) {
        ax_vecmath_f32((ax_vm_fn)f, N, x, 1, want);
        ax_vecmath_f32((ax_vm_fn)f, N, wide, 3, got);
        expect_bits(want, got, N, "strided", f);
        memcpy(got, x, sizeof got);
        ax_vecmath_f32((ax_vm_fn)f, N, got, 1, got);
        expect_bits(want, got, N, "in place", f);
        for (int i = 0; i < N; i++) ax_vecmath_f32((ax_vm_fn)f, 1, &x[i], 1, &got[i]);
        expect_bits(want, got, N, "one at a time", f);
        for (int off = 1; off < 40; off += 3) {
            ax_vecmath_f32((ax_vm_fn)f, N - 2 * off, x + off, 1, got);
            expect_bits(want + off, got, N - 2 * off, "at an offset", f);
        }
    }
}

/* The eager kernels are these functions, on any view, and the primitives' rows say so to jit
 * (their lowerings name the same function), every row that does being one of these. */
static void test_eager_kernels(void **state) {
    ax_ctx *cx = *state;
    static const struct {
        ax_unary_op op;
        ax_prim prim;
        ax_vm_fn f;
    } map[] = {{AX_EXP, AX_P_EXP, AX_VM_EXP},
               {AX_EXPM1, AX_P_EXPM1, AX_VM_EXPM1},
               {AX_LOG, AX_P_LOG, AX_VM_LOG},
               {AX_TANH, AX_P_TANH, AX_VM_TANH},
               {AX_LOGISTIC, AX_P_LOGISTIC, AX_VM_LOGISTIC},
               {AX_ERF, AX_P_ERF, AX_VM_ERF}};
    size_t rows = 0;
    for (int p = 0; p < AX_P_NPRIMS; p++) rows += ax_prim_get((ax_prim)p)->lower.vecmath;
    assert_int_equal(rows, sizeof map / sizeof *map);
    for (size_t k = 0; k < sizeof map / sizeof *map; k++) {
        const ax_lowering *l = &ax_prim_get(map[k].prim)->lower;
        if (!l->vecmath || l->vm != map[k].f)
            fail_msg("the row of %s does not lower to ax_vecmath's %s",
                     ax_prim_get(map[k].prim)->name, ax_vecmath_name(map[k].f));
    }
    enum { N = 777 };
    ax_array *x = ax_array_new(cx, AX_F32, 1, SHAPE(N));
    float *px = ax_array_data(x), rev[N], want[N];
    for (int i = 0; i < N; i++) px[i] = 0.013f * (float)(i - 300) + (i % 50 == 0 ? 5e6f : 0);
    for (int i = 0; i < N; i++) rev[i] = px[N - 1 - i];
    ax_array *xr = ax_array_view(cx, x, 1, SHAPE(N), SHAPE(-1), N - 1);
    for (size_t k = 0; k < sizeof map / sizeof *map; k++) {
        ax_array *y = ax_unary(cx, map[k].op, xr);
        assert_non_null(y);
        ax_vecmath_f32(map[k].f, N, rev, 1, want);
        expect_bits(want, ax_array_data(y), N, "eager kernel", map[k].f);
        ax_array_release(y);
    }
    ax_array_release(xr);
    ax_array_release(x);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_accuracy),
        cmocka_unit_test(test_special_values),
        cmocka_unit_test(test_layout),
        cmocka_unit_test(test_eager_kernels),
    };
    return cmocka_run_group_tests(tests, setup_ctx, teardown_ctx);
}

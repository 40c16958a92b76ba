/* Elementwise kernels and the thread pool: values against NumPy / mpmath (pasted as literals),
 * broadcasting of strided views, the integer edge cases, NaN handling, conversions, and big
 * arrays that go through the pool and the streaming path giving the same bits as small ones. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>

#include "../../runtime/elementwise.h"
#include "../../runtime/pool.h"
#include "../../runtime/special.h"
#include "kernel_test_util.h"

#define N_OF(a) ((int64_t)(sizeof(a) / sizeof *(a)))
#define VEC(n)  SHAPE(n)

/* ---------------------------------------------------------------------------------------- */
/* Helpers */

/* The spacing of floats of `t` around v (for tolerances in ulps). */
static double ulp_of(double v, ax_dtype t) {
    int e;
    frexp(fabs(v), &e);
    int digits = t == AX_F32 ? 24 : 53, min_exp = t == AX_F32 ? -149 : -1074;
    if (v == 0) return ldexp(1.0, min_exp);
    return ldexp(1.0, e - digits < min_exp ? min_exp : e - digits);
}

/* Every element of y (released) within max_ulps of want; NaN matches NaN, inf matches inf. */
static void expect_ulps(ax_array *y, ax_dtype t, int64_t n, const double *want, double max_ulps,
                        const char *what) {
    assert_non_null(y);
    assert_int_equal(y->dtype, t);
    assert_int_equal(y->size, n);
    for (int64_t i = 0; i < n; i++) {
        double got = ax_array_get_f64(y, i), w = want[i];
        if ((isnan(w) && isnan(got)) || got == w) continue;
        double err = fabs(got - w) / ulp_of(w, t);
        if (!(err <= max_ulps))
            fail_msg("%s %s element %lld: got %.17g, want %.17g (%.2f ulp)", what,
                     ax_dtype_short(t), (long long)i, got, w, err);
    }
    ax_array_release(y);
}

/* Checks exact integer values and dtype of an n-element result (released). */
static void expect_int_values(ax_array *y, ax_dtype t, int64_t n, const int64_t *want) {
    assert_non_null(y);
    assert_int_equal(y->dtype, t);
    assert_int_equal(y->size, n);
    for (int64_t i = 0; i < n; i++)
        if (ax_array_get_i64(y, i) != want[i])
            fail_msg("%s element %lld: got %lld, want %lld", ax_dtype_short(t), (long long)i,
                     (long long)ax_array_get_i64(y, i), (long long)want[i]);
    ax_array_release(y);
}

static ax_array *vec_f(ax_ctx *cx, ax_dtype t, int64_t n, const double *v) {
    return make_array(cx, t, 1, VEC(n), v);
}

/* An integer vector from exact int64 literals (make_array goes through double). */
static ax_array *vec_i(ax_ctx *cx, ax_dtype t, int64_t n, const int64_t *v) {
    ax_array *a = ax_array_new(cx, t, 1, VEC(n));
    assert_non_null(a);
    size_t es = ax_dtype_size(t);
    for (int64_t i = 0; i < n; i++)
        ax_convert_element(t, (char *)a->buf->data + i * (int64_t)es, AX_I64, &v[i]);
    return a;
}

#define INTS(...) ((const int64_t[]){__VA_ARGS__})

/* op(a, b) on integer vectors of dtype t against exact expectations. */
static void check_int_binary(ax_ctx *cx, ax_binary_op op, ax_dtype t, int64_t n, const int64_t *a,
                             const int64_t *b, const int64_t *want) {
    ax_array *x = vec_i(cx, t, n, a), *y = vec_i(cx, t, n, b);
    expect_int_values(ax_binary(cx, op, x, y), ax_binary_result_dtype(op, t), n, want);
    ax_array_release(x);
    ax_array_release(y);
}

static void check_float_binary(ax_ctx *cx, ax_binary_op op, ax_dtype t, int64_t n, const double *a,
                               const double *b, const double *want, double ulps) {
    ax_array *x = vec_f(cx, t, n, a), *y = vec_f(cx, t, n, b);
    expect_ulps(ax_binary(cx, op, x, y), t, n, want, ulps, ax_binary_name(op));
    ax_array_release(x);
    ax_array_release(y);
}

static void check_float_unary(ax_ctx *cx, ax_unary_op op, ax_dtype t, int64_t n, const double *a,
                              const double *want, double ulps) {
    ax_array *x = vec_f(cx, t, n, a);
    expect_ulps(ax_unary(cx, op, x), t, n, want, ulps, ax_unary_name(op));
    ax_array_release(x);
}

/* Bitwise equality of two arrays' values (read through strides). Releases both. */
static void expect_same_bits(ax_array *a, ax_array *b) {
    assert_non_null(a);
    assert_non_null(b);
    assert_int_equal(a->dtype, b->dtype);
    assert_int_equal(a->size, b->size);
    size_t es = ax_dtype_size(a->dtype);
    const char *pa = ax_array_data(a), *pb = ax_array_data(b);
    for (int64_t i = 0; i < a->size; i++)
        if (memcmp(pa + ax_array_flat_offset(a, i) * (int64_t)es,
                   pb + ax_array_flat_offset(b, i) * (int64_t)es, es) != 0)
            fail_msg("element %lld differs: %.17g vs %.17g", (long long)i, ax_array_get_f64(a, i),
                     ax_array_get_f64(b, i));
    ax_array_release(a);
    ax_array_release(b);
}

/* ---------------------------------------------------------------------------------------- */
/* Float unary ops against mpmath (40 digits), on values exact in f32 and f64 */

typedef struct unary_case {
    ax_unary_op op;
    double x[8];
    double want[8];
} unary_case;

static const unary_case unary_cases[] = {
    {AX_EXP,
     {-3.5, -1.25, -0.5, -0.125, 0.0, 0.375, 1.0, 2.75},
     {0.030197383422318501, 0.28650479686019009, 0.60653065971263342, 0.88249690258459546, 1,
      1.4549914146182013, 2.7182818284590451, 15.642631884188171}},
    {AX_EXP2,
     {-3.5, -1.25, -0.5, -0.125, 0.0, 0.375, 1.0, 2.75},
     {0.088388347648318447, 0.42044820762685725, 0.70710678118654757, 0.91700404320467122, 1,
      1.2968395546510096, 2, 6.727171322029716}},
    {AX_EXPM1,
     {-3.5, -1.25, -0.5, -0.125, 0.0, 0.375, 1.0, 2.75},
     {-0.96980261657768152, -0.71349520313980985, -0.39346934028736658, -0.1175030974154046, 0,
      0.45499141461820136, 1.7182818284590453, 14.642631884188171}},
    {AX_SIN,
     {-3.5, -1.25, -0.5, -0.125, 0.0, 0.375, 1.0, 2.75},
     {0.35078322768961984, -0.9489846193555862, -0.47942553860420301, -0.12467473338522769, 0,
      0.36627252908604757, 0.8414709848078965, 0.38166099205233167}},
    {AX_COS,
     {-3.5, -1.25, -0.5, -0.125, 0.0, 0.375, 1.0, 2.75},
     {-0.93645668729079634, 0.31532236239526867, 0.87758256189037276, 0.99219766722932901, 1,
      0.93050762191231429, 0.54030230586813977, -0.92430237863246356}},
    {AX_TAN,
     {-3.5, -1.25, -0.5, -0.125, 0.0, 0.375, 1.0, 2.75},
     {-0.37458564015859469, -3.0095696738628313, -0.54630248984379048, -0.12565513657513097, 0,
      0.39362657592563277, 1.5574077246549023, -0.41291789448493249}},
    {AX_ATAN,
     {-3.5, -1.25, -0.5, -0.125, 0.0, 0.375, 1.0, 2.75},
     {-1.2924966677897853, -0.89605538457134393, -0.46364760900080609, -0.12435499454676144, 0,
      0.35877067027057225, 0.78539816339744828, 1.2220253232109897}},
    {AX_SINH,
     {-3.5, -1.25, -0.5, -0.125, 0.0, 0.375, 1.0, 2.75},
     {-16.542627287634996, -1.6019190803008256, -0.52109530549374738, -0.12532577524111546, 0,
      0.38385106791361456, 1.1752011936438014, 7.789352011490732}},
    {AX_COSH,
     {-3.5, -1.25, -0.5, -0.125, 0.0, 0.375, 1.0, 2.75},
     {16.572824671057315, 1.8884238771610158, 1.1276259652063807, 1.0078226778257109, 1,
      1.0711403467045868, 1.5430806348152437, 7.8532798726974393}},
    {AX_TANH,
     {-3.5, -1.25, -0.5, -0.125, 0.0, 0.375, 1.0, 2.75},
     {-0.99817789761119868, -0.84828363995751288, -0.46211715726000974, -0.12435300177159621, 0,
      0.35835739835078595, 0.76159415595576485, 0.9918597245682077}},
    {AX_ASINH,
     {-3.5, -1.25, -0.5, -0.125, 0.0, 0.375, 1.0, 2.75},
     {-1.9657204716496515, -1.0475930126492587, -0.48121182505960347, -0.12467674692144275, 0,
      0.36672460423013675, 0.88137358701954305, 1.7362775864618003}},
    {AX_CBRT,
     {-3.5, -1.25, -0.5, -0.125, 0.0, 0.375, 1.0, 2.75},
     {-1.5182944859378313, -1.0772173450159419, -0.79370052598409979, -0.5, 0, 0.72112478515370415,
      1, 1.4010196653276936}},
    {AX_ERF,
     {-3.5, -1.25, -0.5, -0.125, 0.0, 0.375, 1.0, 2.75},
     {-0.99999925690162761, -0.92290012825645829, -0.52049987781304652, -0.1403162048013338, 0,
      0.40411690943482231, 0.84270079294971489, 0.99989937807788032}},
    {AX_ERFC,
     {-3.5, -1.25, -0.5, -0.125, 0.0, 0.375, 1.0, 2.75},
     {1.9999992569016276, 1.9229001282564582, 1.5204998778130465, 1.1403162048013338, 1,
      0.59588309056517774, 0.15729920705028513, 0.00010062192211963683}},
    {AX_LOGISTIC,
     {-3.5, -1.25, -0.5, -0.125, 0.0, 0.375, 1.0, 2.75},
     {0.029312230751356319, 0.22270013882530884, 0.37754066879814546, 0.46879062662624377, 0.5,
      0.59266659995406978, 0.7310585786300049, 0.93991334982599239}},
    {AX_LOG,
     {0.125, 0.5, 1.0, 1.5, 2.75, 10.0, 100.0, 10000.0},
     {-2.0794415416798357, -0.69314718055994529, 0, 0.40546510810816438, 1.0116009116784799,
      2.3025850929940459, 4.6051701859880918, 9.2103403719761836}},
    {AX_SQRT,
     {0.125, 0.5, 1.0, 1.5, 2.75, 10.0, 100.0, 10000.0},
     {0.35355339059327379, 0.70710678118654757, 1, 1.2247448713915889, 1.6583123951776999,
      3.1622776601683795, 10, 100}},
    {AX_RSQRT,
     {0.125, 0.5, 1.0, 1.5, 2.75, 10.0, 100.0, 10000.0},
     {2.8284271247461903, 1.4142135623730951, 1, 0.81649658092772603, 0.60302268915552726,
      0.31622776601683794, 0.10000000000000001, 0.01}},
    {AX_LGAMMA,
     {0.125, 0.5, 1.0, 1.5, 2.75, 10.0, 100.0, 10000.0},
     {2.0194183575537963, 0.57236494292470008, 0, -0.12078223763524522, 0.47521466691493713,
      12.801827480081469, 359.1342053695754, 82099.717496442376}},
    {AX_DIGAMMA,
     {0.125, 0.5, 1.0, 1.5, 2.75, 10.0, 100.0, 10000.0},
     {-8.388492663295855, -1.9635100260214235, -0.57721566490153287, 0.03648997397857652,
      0.8189010249754326, 2.2517525890667209, 4.6001618527380872, 9.2102903711428485}},
    {AX_LOG1P,
     {-0.875, -0.5, -0.125, 0.0, 0.375, 1.0, 2.75, 100.0},
     {-2.0794415416798357, -0.69314718055994529, -0.13353139262452263, 0, 0.31845373111853459,
      0.69314718055994529, 1.3217558399823195, 4.6151205168412597}},
    {AX_ASIN,
     {-0.875, -0.5, -0.125, 0.0, 0.375, 0.5, 0.75, 0.96875},
     {-1.0654358165107394, -0.52359877559829893, -0.1253278311680654, 0, 0.38439677449563908,
      0.52359877559829893, 0.848062078981481, 1.3201406644587659}},
    {AX_ACOS,
     {-0.875, -0.5, -0.125, 0.0, 0.375, 0.5, 0.75, 0.96875},
     {2.6362321433056359, 2.0943951023931957, 1.696124157962962, 1.5707963267948966,
      1.1863995522992576, 1.0471975511965979, 0.72273424781341566, 0.25065566233613079}},
    {AX_ATANH,
     {-0.875, -0.5, -0.125, 0.0, 0.375, 0.5, 0.75, 0.96875},
     {-1.354025100551105, -0.54930614433405489, -0.12565721414045303, 0, 0.39422868018213508,
      0.54930614433405489, 0.97295507452765662, 2.0715673631957663}},
    {AX_ERF_INV,
     {-0.875, -0.5, -0.125, 0.0, 0.375, 0.5, 0.75, 0.96875},
     {-1.0847870400692832, -0.47693627620446988, -0.11123545184094996, 0, 0.34561711478320661,
      0.47693627620446988, 0.81341984759761854, 1.5230194019969561}},
    {AX_ACOSH,
     {1.0, 1.125, 1.5, 2.75, 10.0, 100.0, 1000.0, 10000.0},
     {0, 0.49493292309452691, 0.96242365011920694, 1.66991903058777, 2.9932228461263808,
      5.298292365610485, 7.6009022095419887, 9.9034875500361288}},
    {AX_SQUARE,
     {-3.5, -1.25, -0.5, -0.125, 0.0, 0.375, 1.0, 2.75},
     {12.25, 1.5625, 0.25, 0.015625, 0, 0.140625, 1, 7.5625}},
    {AX_NEG,
     {-3.5, -1.25, -0.5, -0.125, 0.0, 0.375, 1.0, 2.75},
     {3.5, 1.25, 0.5, 0.125, 0, -0.375, -1, -2.75}},
    {AX_ABS,
     {-3.5, -1.25, -0.5, -0.125, 0.0, 0.375, 1.0, 2.75},
     {3.5, 1.25, 0.5, 0.125, 0, 0.375, 1, 2.75}},
    {AX_FLOOR, {-3.5, -1.25, -0.5, -0.125, 0.0, 0.375, 1.0, 2.75}, {-4, -2, -1, -1, 0, 0, 1, 2}},
    {AX_CEIL, {-3.5, -1.25, -0.5, -0.125, 0.0, 0.375, 1.0, 2.75}, {-3, -1, 0, 0, 0, 1, 1, 3}},
};

static void test_unary_float_values(void **state) {
    ax_ctx *cx = *state;
    for (size_t c = 0; c < sizeof unary_cases / sizeof *unary_cases; c++) {
        const unary_case *u = &unary_cases[c];
        /* libmvec and glibc stay within 2 ulp (f32) and 4 ulp (f64); erf_inv is XLA's
         * algorithm, whose own error is about 3.5 ulp; digamma cancels near its root. */
        double f32_ulps = u->op == AX_ERF_INV ? 4 : 2;
        double f64_ulps = u->op == AX_ERF_INV ? 6 : u->op == AX_DIGAMMA ? 64 : 4;
        check_float_unary(cx, u->op, AX_F32, 8, u->x, u->want, f32_ulps);
        check_float_unary(cx, u->op, AX_F64, 8, u->x, u->want, f64_ulps);
    }
}

static void test_unary_special_values(void **state) {
    ax_ctx *cx = *state;
    for (int k = 0; k < 2; k++) {
        ax_dtype t = k ? AX_F64 : AX_F32;
        double big = k ? 1000 : 200;
        check_float_unary(cx, AX_EXP, t, 5, VALS(NAN, -INFINITY, INFINITY, big, -big),
                          VALS(NAN, 0, INFINITY, INFINITY, 0), 0);
        check_float_unary(cx, AX_LOG, t, 4, VALS(0, -1, INFINITY, NAN),
                          VALS(-INFINITY, NAN, INFINITY, NAN), 0);
        check_float_unary(cx, AX_SQRT, t, 3, VALS(-1, -0.0, INFINITY), VALS(NAN, -0.0, INFINITY),
                          0);
        check_float_unary(cx, AX_RSQRT, t, 2, VALS(0, INFINITY), VALS(INFINITY, 0), 0);
        check_float_unary(cx, AX_LOGISTIC, t, 5, VALS(-INFINITY, INFINITY, NAN, -50, 50),
                          VALS(0, 1, NAN, 1.9287498479639178e-22, 1), 1);
        check_float_unary(cx, AX_TANH, t, 3, VALS(INFINITY, -INFINITY, NAN), VALS(1, -1, NAN), 0);
        check_float_unary(cx, AX_ERF_INV, t, 5, VALS(1, -1, 1.5, NAN, 0),
                          VALS(INFINITY, -INFINITY, NAN, NAN, 0), 0);
        check_float_unary(cx, AX_DIGAMMA, t, 4, VALS(0, -1, -0.5, NAN),
                          VALS(NAN, NAN, 0.03648997397857652, NAN), 64);
        check_float_unary(cx, AX_LGAMMA, t, 4, VALS(0, -1, -0.5, INFINITY),
                          VALS(INFINITY, INFINITY, 1.2655121234846454, INFINITY), 2);
        check_float_unary(cx, AX_ACOSH, t, 1, VALS(0.5), VALS(NAN), 0);
        check_float_unary(cx, AX_ATANH, t, 2, VALS(1, 2), VALS(INFINITY, NAN), 0);
        check_float_unary(cx, AX_ASIN, t, 1, VALS(2), VALS(NAN), 0);
        /* round is half to even, as jnp.round; floor/ceil of -0.5 */
        double just_above = k ? 2.5000000000000004 : 2.500000238418579;
        double just_below = k ? 0.49999999999999994 : 0.4999999701976776;
        check_float_unary(cx, AX_ROUND, t, 10,
                          VALS(-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.5, just_above, just_below, NAN),
                          VALS(-2, -2, -0.0, 0, 2, 2, 4, 3, 0, NAN), 0);
        check_float_unary(cx, AX_FLOOR, t, 3, VALS(-0.5, 0.5, -INFINITY), VALS(-1, 0, -INFINITY),
                          0);
        check_float_unary(cx, AX_CEIL, t, 2, VALS(-0.5, 0.5), VALS(-0.0, 1), 0);
        /* sign(0) = 0 keeping the zero's sign, sign(nan) = nan (lax.sign) */
        ax_array *x = vec_f(cx, t, 6, VALS(-2, -0.0, 0.0, 3, NAN, -INFINITY));
        ax_array *s = ax_unary(cx, AX_SIGN, x);
        assert_non_null(s);
        assert_true(signbit(ax_array_get_f64(s, 1)));
        assert_false(signbit(ax_array_get_f64(s, 2)));
        expect_ulps(s, t, 6, VALS(-1, 0, 0, 1, NAN, -1), 0, "sign");
        expect_ints(ax_unary(cx, AX_IS_FINITE, x), AX_BOOL, 1, VEC(6), INTS(1, 1, 1, 1, 0, 0));
        ax_array_release(x);
    }
}

/* ---------------------------------------------------------------------------------------- */
/* Float binary ops */

static void test_binary_float(void **state) {
    ax_ctx *cx = *state;
    for (int k = 0; k < 2; k++) {
        ax_dtype t = k ? AX_F64 : AX_F32;
        /* IEEE: 1/0 = inf, 0/0 = nan */
        check_float_binary(cx, AX_DIV, t, 4, VALS(1, -1, 0, 6), VALS(0, 0, 0, 4),
                           VALS(INFINITY, -INFINITY, NAN, 1.5), 0);
        check_float_binary(cx, AX_SUB, t, 2, VALS(INFINITY, 5), VALS(INFINITY, 7.5),
                           VALS(NAN, -2.5), 0);
        /* max / min propagate NaN from either side */
        check_float_binary(cx, AX_MAX, t, 4, VALS(NAN, 1, 2, -1), VALS(1, NAN, 1, -INFINITY),
                           VALS(NAN, NAN, 2, -1), 0);
        check_float_binary(cx, AX_MIN, t, 4, VALS(NAN, 1, 2, -1), VALS(1, NAN, 1, -INFINITY),
                           VALS(NAN, NAN, 1, -INFINITY), 0);
        /* Python's // and % (NumPy, JAX); rem is C's fmod (lax.rem). By zero: NaN. */
        const double *a = VALS(7.5, -7.5, 7.5, -7.5, 1.0, 5.0, -5.0, 3.0);
        const double *b = VALS(2, 2, -2, -2, 0.1, INFINITY, INFINITY, 0);
        double r01 = k ? 0.09999999999999995 : 0.09999998658895493; /* 1 % 0.1 */
        check_float_binary(cx, AX_FLOOR_DIV, t, 8, a, b, VALS(3, -4, -4, 3, 9, 0, -1, NAN), 0);
        check_float_binary(cx, AX_MOD, t, 8, a, b,
                           VALS(1.5, 0.5, -0.5, -1.5, r01, 5, INFINITY, NAN), 0);
        check_float_binary(cx, AX_REM, t, 8, a, b, VALS(1.5, -1.5, 1.5, -1.5, r01, 5, -5, NAN), 0);
        /* pow: IEEE special cases (C99 Annex F, as NumPy) */
        check_float_binary(cx, AX_POW, t, 9, VALS(2, 2, -8, 0, -2, 1, NAN, 4, 0),
                           VALS(10, -1, 1.0 / 3, 0, 3, NAN, 0, 0.5, -1),
                           VALS(1024, 0.5, NAN, 1, -8, 1, 1, 2, INFINITY), 1);
        check_float_binary(cx, AX_POW, t, 2, VALS(1.5, 10), VALS(2.5, -3),
                           VALS(2.7556759606310752, 0.001), 1);
        check_float_binary(cx, AX_ATAN2, t, 7, VALS(1, 1, -1, -1, 0, -0.0, 0),
                           VALS(1, -1, 1, -1, -1, -1, 0),
                           VALS(0.7853981633974483, 2.356194490192345, -0.7853981633974483,
                                -2.356194490192345, 3.141592653589793, -3.141592653589793, 0.0),
                           1);
        double up = k ? 1.0000000000000002 : 1.0000001192092896;
        double tiny = k ? 4.9406564584124654e-324 : 1.401298464324817e-45;
        check_float_binary(cx, AX_NEXTAFTER, t, 3, VALS(1, 0, 0), VALS(2, 1, -1),
                           VALS(up, tiny, -tiny), 0);
        /* comparisons with NaN are false, != is true */
        ax_array *x = vec_f(cx, t, 3, VALS(1, NAN, 2)), *y = vec_f(cx, t, 3, VALS(1, 1, NAN));
        expect_ints(ax_binary(cx, AX_EQ, x, y), AX_BOOL, 1, VEC(3), INTS(1, 0, 0));
        expect_ints(ax_binary(cx, AX_NE, x, y), AX_BOOL, 1, VEC(3), INTS(0, 1, 1));
        expect_ints(ax_binary(cx, AX_LT, x, y), AX_BOOL, 1, VEC(3), INTS(0, 0, 0));
        expect_ints(ax_binary(cx, AX_LE, x, y), AX_BOOL, 1, VEC(3), INTS(1, 0, 0));
        expect_ints(ax_binary(cx, AX_GT, x, y), AX_BOOL, 1, VEC(3), INTS(0, 0, 0));
        expect_ints(ax_binary(cx, AX_GE, x, y), AX_BOOL, 1, VEC(3), INTS(1, 0, 0));
        ax_array_release(x);
        ax_array_release(y);
    }
}

/* ---------------------------------------------------------------------------------------- */
/* Integer ops: NumPy's answers, with x / 0 = x // 0 = x % 0 = 0 (documented) */

static void test_int_division(void **state) {
    ax_ctx *cx = *state;
    const ax_dtype signed_types[] = {AX_I32, AX_I64};
    for (int k = 0; k < 2; k++) {
        ax_dtype t = signed_types[k];
        int64_t min = t == AX_I32 ? INT32_MIN : INT64_MIN;
        const int64_t *a = INTS(7, -7, 7, -7, 5, min, 0, -1);
        const int64_t *b = INTS(2, 2, -2, -2, 0, -1, 3, 0);
        check_int_binary(cx, AX_DIV, t, 8, a, b, INTS(3, -3, -3, 3, 0, min, 0, 0));
        check_int_binary(cx, AX_REM, t, 8, a, b, INTS(1, -1, 1, -1, 0, 0, 0, 0));
        check_int_binary(cx, AX_FLOOR_DIV, t, 8, a, b, INTS(3, -4, -4, 3, 0, min, 0, 0));
        check_int_binary(cx, AX_MOD, t, 8, a, b, INTS(1, 1, -1, -1, 0, 0, 0, 0));
    }
    const ax_dtype unsigned_types[] = {AX_U8, AX_U32};
    for (int k = 0; k < 2; k++) {
        ax_dtype t = unsigned_types[k];
        const int64_t *a = INTS(7, 200, 5, 0, 255);
        const int64_t *b = INTS(2, 7, 0, 3, 255);
        check_int_binary(cx, AX_DIV, t, 5, a, b, INTS(3, 28, 0, 0, 1));
        check_int_binary(cx, AX_FLOOR_DIV, t, 5, a, b, INTS(3, 28, 0, 0, 1));
        check_int_binary(cx, AX_REM, t, 5, a, b, INTS(1, 4, 0, 0, 0));
        check_int_binary(cx, AX_MOD, t, 5, a, b, INTS(1, 4, 0, 0, 0));
    }
}

static void test_int_arithmetic(void **state) {
    ax_ctx *cx = *state;
    /* wrapping */
    check_int_binary(cx, AX_ADD, AX_I32, 2, INTS(INT32_MAX, -5), INTS(1, 3), INTS(INT32_MIN, -2));
    check_int_binary(cx, AX_ADD, AX_U8, 2, INTS(250, 1), INTS(10, 2), INTS(4, 3));
    check_int_binary(cx, AX_SUB, AX_U8, 1, INTS(3), INTS(5), INTS(254));
    check_int_binary(cx, AX_SUB, AX_U32, 1, INTS(3), INTS(5), INTS(4294967294));
    check_int_binary(cx, AX_MUL, AX_I64, 2, INTS(INT64_C(1) << 62, -3), INTS(4, 7), INTS(0, -21));
    check_int_binary(cx, AX_MAX, AX_I32, 3, INTS(-5, 3, 0), INTS(-7, 9, 0), INTS(-5, 9, 0));
    check_int_binary(cx, AX_MIN, AX_U8, 2, INTS(200, 3), INTS(100, 9), INTS(100, 3));
    /* integer power; negative exponents give 0 except for bases 1 and -1 (lax.pow) */
    check_int_binary(cx, AX_POW, AX_I32, 9, INTS(2, 3, -2, 1, -1, -1, 0, 2, 3),
                     INTS(10, 0, 3, -5, -5, -4, 0, -1, 40),
                     INTS(1024, 1, -8, 1, -1, 1, 1, 0, 689956897));
    check_int_binary(cx, AX_POW, AX_U8, 3, INTS(3, 2, 2), INTS(5, 8, 9), INTS(243, 0, 0));
    check_int_binary(cx, AX_POW, AX_I64, 2, INTS(-3, 2), INTS(3, 62), INTS(-27, INT64_C(1) << 62));
    /* unary */
    ax_array *x = vec_i(cx, AX_I32, 4, INTS(-5, 0, 7, INT32_MIN));
    expect_int_values(ax_unary(cx, AX_NEG, x), AX_I32, 4, INTS(5, 0, -7, INT32_MIN));
    expect_int_values(ax_unary(cx, AX_ABS, x), AX_I32, 4, INTS(5, 0, 7, INT32_MIN));
    expect_int_values(ax_unary(cx, AX_SIGN, x), AX_I32, 4, INTS(-1, 0, 1, -1));
    expect_int_values(ax_unary(cx, AX_NOT, x), AX_I32, 4, INTS(4, -1, -8, INT32_MAX));
    expect_int_values(ax_unary(cx, AX_SQUARE, x), AX_I32, 4, INTS(25, 0, 49, 0));
    expect_int_values(ax_unary(cx, AX_ROUND, x), AX_I32, 4, INTS(-5, 0, 7, INT32_MIN));
    expect_int_values(ax_unary(cx, AX_IS_FINITE, x), AX_BOOL, 4, INTS(1, 1, 1, 1));
    ax_array_release(x);
    x = vec_i(cx, AX_I32, 1, INTS(46341));
    expect_int_values(ax_unary(cx, AX_SQUARE, x), AX_I32, 1, INTS(-2147479015));
    ax_array_release(x);
    x = vec_i(cx, AX_U8, 3, INTS(0, 1, 5));
    expect_int_values(ax_unary(cx, AX_NEG, x), AX_U8, 3, INTS(0, 255, 251));
    expect_int_values(ax_unary(cx, AX_NOT, x), AX_U8, 3, INTS(255, 254, 250));
    expect_int_values(ax_unary(cx, AX_SIGN, x), AX_U8, 3, INTS(0, 1, 1));
    expect_int_values(ax_unary(cx, AX_ABS, x), AX_U8, 3, INTS(0, 1, 5));
    ax_array_release(x);
    x = vec_i(cx, AX_U32, 2, INTS(0, 4000000000));
    expect_int_values(ax_unary(cx, AX_SIGN, x), AX_U32, 2, INTS(0, 1));
    ax_array_release(x);
    /* bitwise */
    check_int_binary(cx, AX_AND, AX_I64, 2, INTS(12, -1), INTS(10, 5), INTS(8, 5));
    check_int_binary(cx, AX_OR, AX_U32, 1, INTS(12), INTS(3), INTS(15));
    check_int_binary(cx, AX_XOR, AX_U8, 1, INTS(255), INTS(15), INTS(240));
    check_int_binary(cx, AX_LT, AX_U32, 2, INTS(4000000000, 1), INTS(1, 2), INTS(0, 1));
    check_int_binary(cx, AX_GE, AX_I64, 2, INTS(-1, 1), INTS(1, 1), INTS(0, 1));
}

/* Counts >= the width give 0 (or the sign for arithmetic shifts); counts are unsigned. */
static void test_shifts(void **state) {
    ax_ctx *cx = *state;
    check_int_binary(cx, AX_SHL, AX_I32, 5, INTS(1, 1, 1, -1, 3), INTS(31, 32, -1, 4, 0),
                     INTS(INT32_MIN, 0, 0, -16, 3));
    check_int_binary(cx, AX_SHR_LOGICAL, AX_I32, 4, INTS(-8, -8, -8, 16), INTS(1, 31, 32, 2),
                     INTS(2147483644, 1, 0, 4));
    check_int_binary(cx, AX_SHR_ARITH, AX_I32, 5, INTS(-8, -8, 8, -8, 8), INTS(1, 40, 40, 31, -3),
                     INTS(-4, -1, 0, -1, 0));
    check_int_binary(cx, AX_SHL, AX_U8, 3, INTS(1, 1, 0x81), INTS(7, 8, 1), INTS(128, 0, 2));
    check_int_binary(cx, AX_SHR_ARITH, AX_U8, 3, INTS(0x80, 0x80, 0x40), INTS(1, 9, 1),
                     INTS(0xC0, 0xFF, 0x20));
    check_int_binary(cx, AX_SHR_LOGICAL, AX_U8, 2, INTS(0x80, 0x80), INTS(1, 8), INTS(0x40, 0));
    check_int_binary(cx, AX_SHL, AX_I64, 2, INTS(1, 1), INTS(63, 64), INTS(INT64_MIN, 0));
    check_int_binary(cx, AX_SHR_ARITH, AX_I64, 2, INTS(-1, INT64_MIN), INTS(64, 63), INTS(-1, -1));
    check_int_binary(cx, AX_SHR_LOGICAL, AX_U32, 2, INTS(0x80000000, 5), INTS(31, 32), INTS(1, 0));
}

static void test_bool_ops(void **state) {
    ax_ctx *cx = *state;
    const int64_t *a = INTS(0, 0, 1, 1), *b = INTS(0, 1, 0, 1);
    check_int_binary(cx, AX_ADD, AX_BOOL, 4, a, b, INTS(0, 1, 1, 1)); /* logical or */
    check_int_binary(cx, AX_MUL, AX_BOOL, 4, a, b, INTS(0, 0, 0, 1)); /* logical and */
    check_int_binary(cx, AX_MAX, AX_BOOL, 4, a, b, INTS(0, 1, 1, 1));
    check_int_binary(cx, AX_MIN, AX_BOOL, 4, a, b, INTS(0, 0, 0, 1));
    check_int_binary(cx, AX_AND, AX_BOOL, 4, a, b, INTS(0, 0, 0, 1));
    check_int_binary(cx, AX_OR, AX_BOOL, 4, a, b, INTS(0, 1, 1, 1));
    check_int_binary(cx, AX_XOR, AX_BOOL, 4, a, b, INTS(0, 1, 1, 0));
    check_int_binary(cx, AX_EQ, AX_BOOL, 4, a, b, INTS(1, 0, 0, 1));
    check_int_binary(cx, AX_LT, AX_BOOL, 4, a, b, INTS(0, 1, 0, 0));
    ax_array *x = vec_i(cx, AX_BOOL, 2, INTS(0, 1));
    expect_int_values(ax_unary(cx, AX_NOT, x), AX_BOOL, 2, INTS(1, 0));
    expect_int_values(ax_unary(cx, AX_IS_FINITE, x), AX_BOOL, 2, INTS(1, 1));
    expect_error(cx, ax_binary(cx, AX_SUB, x, x), AX_ERR_TYPE,
                 "sub is not defined for bool arrays");
    expect_error(cx, ax_unary(cx, AX_NEG, x), AX_ERR_TYPE, "neg is not defined for bool arrays");
    ax_array_release(x);
}

/* ---------------------------------------------------------------------------------------- */
/* Names and dtype rules */

static void test_names_and_rules(void **state) {
    (void)state;
    assert_string_equal(ax_unary_name(AX_LOGISTIC), "logistic");
    assert_string_equal(ax_unary_name(AX_ERF_INV), "erf_inv");
    assert_string_equal(ax_unary_name(AX_IS_FINITE), "is_finite");
    assert_string_equal(ax_binary_name(AX_FLOOR_DIV), "floor_divide");
    assert_string_equal(ax_binary_name(AX_SHR_ARITH), "shift_right_arithmetic");
    for (int op = 0; op < AX_NUNARY; op++) assert_non_null(ax_unary_name((ax_unary_op)op));
    for (int op = 0; op < AX_NBINARY; op++) assert_non_null(ax_binary_name((ax_binary_op)op));
    assert_true(ax_unary_accepts(AX_EXP, AX_F32));
    assert_false(ax_unary_accepts(AX_EXP, AX_I32));
    assert_false(ax_unary_accepts(AX_NOT, AX_F32));
    assert_true(ax_unary_accepts(AX_NOT, AX_BOOL));
    assert_true(ax_unary_accepts(AX_NOT, AX_U8));
    assert_true(ax_unary_accepts(AX_FLOOR, AX_I64));
    assert_false(ax_unary_accepts(AX_NEG, AX_BOOL));
    assert_true(ax_binary_accepts(AX_ADD, AX_BOOL));
    assert_false(ax_binary_accepts(AX_SUB, AX_BOOL));
    assert_false(ax_binary_accepts(AX_SHL, AX_F32));
    assert_false(ax_binary_accepts(AX_ATAN2, AX_I32));
    assert_true(ax_binary_accepts(AX_POW, AX_U8));
    assert_false(ax_binary_accepts(AX_AND, AX_F64));
    assert_int_equal(ax_binary_result_dtype(AX_LT, AX_F32), AX_BOOL);
    assert_int_equal(ax_binary_result_dtype(AX_ADD, AX_U32), AX_U32);
    /* every op accepts at least one dtype */
    for (int op = 0; op < AX_NBINARY; op++) {
        bool any = false;
        for (int t = 0; t < AX_NDTYPES; t++) any |= ax_binary_accepts((ax_binary_op)op, t);
        assert_true(any);
    }
}

/* ---------------------------------------------------------------------------------------- */
/* Broadcasting over strided views */

static void test_broadcast_views(void **state) {
    ax_ctx *cx = *state;
    ax_array *a = make_range(cx, AX_F32, 2, SHAPE(2, 3)); /* [[0 1 2] [3 4 5]] */
    ax_array *b = make_array(cx, AX_F32, 1, VEC(3), VALS(10, 20, 30));
    expect_values(ax_binary(cx, AX_ADD, a, b), AX_F32, 2, SHAPE(2, 3), VALS(10, 21, 32, 13, 24, 35),
                  0);
    /* a.T (3, 2) + [100, 200] */
    ax_array *at = ax_array_view(cx, a, 2, SHAPE(3, 2), SHAPE(1, 3), 0);
    ax_array *c = make_array(cx, AX_F32, 1, VEC(2), VALS(100, 200));
    expect_values(ax_binary(cx, AX_ADD, at, c), AX_F32, 2, SHAPE(3, 2),
                  VALS(100, 203, 101, 204, 102, 205), 0);
    /* b[::-1] has stride -1 */
    ax_array *brev = ax_array_view(cx, b, 1, VEC(3), SHAPE(-1), 2);
    expect_values(ax_binary(cx, AX_SUB, a, brev), AX_F32, 2, SHAPE(2, 3),
                  VALS(-30, -19, -8, -27, -16, -5), 0);
    expect_values(ax_binary(cx, AX_SUB, brev, a), AX_F32, 2, SHAPE(2, 3),
                  VALS(30, 19, 8, 27, 16, 5), 0);
    expect_values(ax_unary(cx, AX_SQRT, brev), AX_F32, 1, VEC(3),
                  VALS(5.4772257804870605, 4.4721360206604004, 3.1622776985168457), 0);
    expect_values(ax_unary(cx, AX_EXP, brev), AX_F32, 1, VEC(3), /* within 2 ulp */
                  VALS(10686474223616, 485165184, 22026.46484375), 2.4e-7);
    /* a[:, ::-2] * a.T[::2].T-like strided view: columns 2 and 0 */
    ax_array *cols = ax_array_view(cx, a, 2, SHAPE(2, 2), SHAPE(3, -2), 2);
    expect_values(ax_binary(cx, AX_MUL, cols, cols), AX_F32, 2, SHAPE(2, 2), VALS(4, 0, 25, 9), 0);
    /* column (2, 1) times row (1, 3) */
    ax_array *col = make_array(cx, AX_F32, 2, SHAPE(2, 1), VALS(1, 2));
    ax_array *row = make_array(cx, AX_F32, 2, SHAPE(1, 3), VALS(1, 2, 3));
    expect_values(ax_binary(cx, AX_MUL, col, row), AX_F32, 2, SHAPE(2, 3), VALS(1, 2, 3, 2, 4, 6),
                  0);
    expect_values(ax_binary(cx, AX_MUL, row, col), AX_F32, 2, SHAPE(2, 3), VALS(1, 2, 3, 2, 4, 6),
                  0);
    /* an explicit stride-0 view (broadcast_to) and a rank-0 scalar */
    ax_array *rows = ax_array_view(cx, b, 2, SHAPE(2, 3), SHAPE(0, 1), 0);
    ax_array *two = ax_array_scalar(cx, AX_F32, 2);
    expect_values(ax_binary(cx, AX_MUL, rows, two), AX_F32, 2, SHAPE(2, 3),
                  VALS(20, 40, 60, 20, 40, 60), 0);
    expect_values(ax_binary(cx, AX_GE, two, a), AX_BOOL, 2, SHAPE(2, 3), VALS(1, 1, 1, 0, 0, 0), 0);
    expect_values(ax_binary(cx, AX_SUB, two, two), AX_F32, 0, NULL, VALS(0), 0);
    /* three-way broadcast in a 3-d output: (2,1,1) + (1,3,1)... through select */
    ax_array *p = make_array(cx, AX_BOOL, 3, SHAPE(2, 1, 1), VALS(1, 0));
    ax_array *t3 = make_array(cx, AX_F32, 3, SHAPE(1, 3, 1), VALS(1, 2, 3));
    ax_array *f3 = make_array(cx, AX_F32, 3, SHAPE(1, 1, 2), VALS(-1, -2));
    expect_values(ax_select(cx, p, t3, f3), AX_F32, 3, SHAPE(2, 3, 2),
                  VALS(1, 1, 2, 2, 3, 3, -1, -2, -1, -2, -1, -2), 0);
    /* empty arrays */
    ax_array *e = ax_array_new(cx, AX_F32, 2, SHAPE(0, 3));
    check_shape(e, AX_F32, 2, SHAPE(0, 3));
    ax_array *ee = ax_binary(cx, AX_ADD, e, b);
    check_shape(ee, AX_F32, 2, SHAPE(0, 3));
    ax_array_release(ee);
    ax_array *ue = ax_unary(cx, AX_EXP, e);
    check_shape(ue, AX_F32, 2, SHAPE(0, 3));
    ax_array_release(ue);
    for (ax_array **q = (ax_array *[]){a, b, at, c, brev, cols, col, row, rows, two, p, t3, f3, e};
         *q != e; q++)
        ax_array_release(*q);
    ax_array_release(e);
}

static void test_errors(void **state) {
    ax_ctx *cx = *state;
    ax_array *x3 = make_range(cx, AX_F32, 1, VEC(3)), *x4 = make_range(cx, AX_F32, 1, VEC(4));
    ax_array *i3 = make_range(cx, AX_I32, 1, VEC(3));
    expect_error(cx, ax_binary(cx, AX_ADD, x3, x4), AX_ERR_SHAPE,
                 "cannot add f32[3] and f32[4] (shapes do not broadcast)");
    expect_error(cx, ax_binary(cx, AX_MAX, x3, x4), AX_ERR_SHAPE,
                 "cannot apply max to f32[3] and f32[4] (shapes do not broadcast)");
    expect_error(cx, ax_binary(cx, AX_ADD, x3, i3), AX_ERR_TYPE,
                 "add needs operands of one dtype, got f32[3] and i32[3]");
    expect_error(cx, ax_unary(cx, AX_EXP, i3), AX_ERR_TYPE, "exp is not defined for int32 arrays");
    expect_error(cx, ax_binary(cx, AX_SHL, x3, x3), AX_ERR_TYPE,
                 "shift_left is not defined for float32 arrays");
    expect_error(cx, ax_select(cx, x3, x3, x3), AX_ERR_TYPE,
                 "select needs a bool condition, got f32[3]");
    ax_array *p = make_array(cx, AX_BOOL, 1, VEC(3), VALS(1, 0, 1));
    expect_error(cx, ax_select(cx, p, x3, i3), AX_ERR_TYPE,
                 "select needs operands of one dtype, got f32[3] and i32[3]");
    expect_error(cx, ax_select(cx, p, x3, x4), AX_ERR_SHAPE,
                 "cannot apply select to bool[3], f32[3] and f32[4] (shapes do not broadcast)");
    expect_error(cx, ax_clamp(cx, x3, i3, x3), AX_ERR_TYPE,
                 "clamp needs operands of one dtype, got f32[3] and i32[3]");
    expect_error(cx, ax_bitcast(cx, x3, AX_F64), AX_ERR_TYPE,
                 "cannot bitcast float32 to float64: bitcast needs two non-bool dtypes of the "
                 "same size");
    expect_error(cx, ax_integer_pow(cx, p, 2), AX_ERR_TYPE,
                 "integer_pow is not defined for bool arrays");
    /* an abstract value (no buffer) cannot be computed on */
    ax_array abstract = *x3;
    abstract.buf = NULL;
    expect_error(cx, ax_unary(cx, AX_EXP, &abstract), AX_ERR_RUNTIME,
                 "exp needs a concrete array, got an abstract f32[3]");
    /* consume variants release their operands on error too */
    ax_array_retain(i3);
    expect_error(cx, ax_unary_take(cx, AX_EXP, i3), AX_ERR_TYPE,
                 "exp is not defined for int32 arrays");
    ax_array_retain(x3);
    ax_array_retain(x4);
    expect_error(cx, ax_binary_take(cx, AX_ADD, x3, x4), AX_ERR_SHAPE,
                 "cannot add f32[3] and f32[4] (shapes do not broadcast)");
    ax_array_release(p);
    ax_array_release(x3);
    ax_array_release(x4);
    ax_array_release(i3);
}

/* ---------------------------------------------------------------------------------------- */
/* integer_pow, select, clamp */

static void test_integer_pow(void **state) {
    ax_ctx *cx = *state;
    ax_array *x = make_array(cx, AX_F32, 1, VEC(4), VALS(1.5, -2, 0, 3));
    expect_values(ax_integer_pow(cx, x, 3), AX_F32, 1, VEC(4), VALS(3.375, -8, 0, 27), 0);
    expect_values(ax_integer_pow(cx, x, 0), AX_F32, 1, VEC(4), VALS(1, 1, 1, 1), 0);
    expect_values(ax_integer_pow(cx, x, 1), AX_F32, 1, VEC(4), VALS(1.5, -2, 0, 3), 0);
    expect_values(ax_integer_pow(cx, x, -2), AX_F32, 1, VEC(4),
                  VALS(0.4444444477558136, 0.25, INFINITY, 0.1111111119389534), 0);
    ax_array_release(x);
    /* the products happen in JAX's order: x^7 = x * x^2 * x^4 */
    float v = 1.1f;
    float x2 = v * v, x4 = x2 * x2, want = (v * x2) * x4;
    x = make_array(cx, AX_F32, 1, VEC(1), VALS(1.1f));
    ax_array *y = ax_integer_pow(cx, x, 7);
    assert_true(((float *)ax_array_data(y))[0] == want);
    ax_array_release(y);
    ax_array_release(x);
    ax_array *i = vec_i(cx, AX_I32, 5, INTS(3, -2, 2, 1, -1));
    expect_int_values(ax_integer_pow(cx, i, 4), AX_I32, 5, INTS(81, 16, 16, 1, 1));
    expect_int_values(ax_integer_pow(cx, i, 31), AX_I32, 5,
                      INTS(1264544299, INT32_MIN, INT32_MIN, 1, -1));
    expect_int_values(ax_integer_pow(cx, i, -3), AX_I32, 5, INTS(0, 0, 0, 1, -1));
    ax_array_release(i);
}

static void test_select_clamp(void **state) {
    ax_ctx *cx = *state;
    ax_array *p = make_array(cx, AX_BOOL, 1, VEC(3), VALS(1, 0, 1));
    ax_array *a = make_range(cx, AX_F64, 2, SHAPE(2, 3));
    ax_array *one = ax_array_scalar(cx, AX_F64, -1);
    expect_values(ax_select(cx, p, a, one), AX_F64, 2, SHAPE(2, 3), VALS(0, -1, 2, 3, -1, 5), 0);
    expect_values(ax_select(cx, p, one, a), AX_F64, 2, SHAPE(2, 3), VALS(-1, 1, -1, -1, 4, -1), 0);
    ax_array *yes = ax_array_scalar(cx, AX_BOOL, 1);
    expect_values(ax_select(cx, yes, a, one), AX_F64, 2, SHAPE(2, 3), VALS(0, 1, 2, 3, 4, 5), 0);
    ax_array *pu8 = make_array(cx, AX_U8, 1, VEC(3), VALS(7, 8, 9));
    ax_array *zu8 = ax_array_scalar(cx, AX_U8, 0);
    expect_values(ax_select(cx, p, pu8, zu8), AX_U8, 1, VEC(3), VALS(7, 0, 9), 0);
    ax_array *pi = vec_i(cx, AX_I64, 3, INTS(INT64_MAX, 1, -5));
    ax_array *zi = ax_array_scalar(cx, AX_I64, 0);
    expect_ints(ax_select(cx, p, pi, zi), AX_I64, 1, VEC(3), INTS(INT64_MAX, 0, -5));
    /* clamp propagates NaN, as lax.clamp */
    ax_array *lo = ax_array_scalar(cx, AX_F32, 0), *hi = ax_array_scalar(cx, AX_F32, 1);
    ax_array *x = make_array(cx, AX_F32, 1, VEC(5), VALS(-1, 0.5, 2, NAN, -INFINITY));
    expect_values(ax_clamp(cx, lo, x, hi), AX_F32, 1, VEC(5), VALS(0, 0.5, 1, NAN, 0), 0);
    ax_array *ilo = vec_i(cx, AX_I32, 2, INTS(0, 10)), *ihi = ax_array_scalar(cx, AX_I32, 12);
    ax_array *ix = vec_i(cx, AX_I32, 4, INTS(-5, 5, 11, 50));
    ax_array *ix2 = ax_array_view(cx, ix, 2, SHAPE(2, 2), SHAPE(2, 1), 0);
    expect_ints(ax_clamp(cx, ilo, ix2, ihi), AX_I32, 2, SHAPE(2, 2), INTS(0, 10, 11, 12));
    ax_array *rs[] = {p, a, one, yes, pu8, zu8, pi, zi, lo, hi, x, ilo, ihi, ix, ix2};
    for (size_t k = 0; k < sizeof rs / sizeof *rs; k++) ax_array_release(rs[k]);
}

/* ---------------------------------------------------------------------------------------- */
/* convert (XLA's saturating float -> int) and bitcast */

static void test_convert(void **state) {
    ax_ctx *cx = *state;
    ax_array *f = make_array(
        cx, AX_F32, 1, VEC(9),
        VALS(1.9, -1.9, NAN, INFINITY, -INFINITY, 3e9, -3e9, 2147483520.0, 2147483648.0));
    expect_ints(ax_convert(cx, f, AX_I32, false), AX_I32, 1, VEC(9),
                INTS(1, -1, 0, INT32_MAX, INT32_MIN, INT32_MAX, INT32_MIN, 2147483520, INT32_MAX));
    expect_ints(
        ax_convert(cx, f, AX_I64, false), AX_I64, 1, VEC(9),
        INTS(1, -1, 0, INT64_MAX, INT64_MIN, 3000000000, -3000000000, 2147483520, 2147483648));
    expect_ints(ax_convert(cx, f, AX_U8, false), AX_U8, 1, VEC(9),
                INTS(1, 0, 0, 255, 0, 255, 0, 255, 255));
    expect_ints(ax_convert(cx, f, AX_U32, false), AX_U32, 1, VEC(9),
                INTS(1, 0, 0, UINT32_MAX, 0, 3000000000, 0, 2147483520, 2147483648));
    expect_ints(ax_convert(cx, f, AX_BOOL, false), AX_BOOL, 1, VEC(9),
                INTS(1, 1, 1, 1, 1, 1, 1, 1, 1));
    ax_array_release(f);
    ax_array *d =
        make_array(cx, AX_F64, 1, VEC(6), VALS(1e19, -1e19, 4294967295.7, -0.5, 0.1, 1e40));
    expect_ints(ax_convert(cx, d, AX_I64, false), AX_I64, 1, VEC(6),
                INTS(INT64_MAX, INT64_MIN, 4294967295, 0, 0, INT64_MAX));
    expect_ints(ax_convert(cx, d, AX_U32, false), AX_U32, 1, VEC(6),
                INTS(UINT32_MAX, 0, 4294967295, 0, 0, UINT32_MAX));
    expect_values(ax_convert(cx, d, AX_F32, false), AX_F32, 1, VEC(6),
                  VALS(9.99999998e18f, -9.99999998e18f, 4294967296.0, -0.5, 0.1f, INFINITY), 0);
    ax_array_release(d);
    /* int -> int wraps, -> bool is != 0, bool -> number is 0 / 1 */
    ax_array *i = vec_i(cx, AX_I64, 5, INTS(300, -1, (INT64_C(1) << 32) + 5, 0, 16777217));
    expect_ints(ax_convert(cx, i, AX_U8, false), AX_U8, 1, VEC(5), INTS(44, 255, 5, 0, 1));
    expect_ints(ax_convert(cx, i, AX_I32, false), AX_I32, 1, VEC(5), INTS(300, -1, 5, 0, 16777217));
    expect_ints(ax_convert(cx, i, AX_U32, false), AX_U32, 1, VEC(5),
                INTS(300, UINT32_MAX, 5, 0, 16777217));
    expect_ints(ax_convert(cx, i, AX_BOOL, false), AX_BOOL, 1, VEC(5), INTS(1, 1, 1, 0, 1));
    expect_values(ax_convert(cx, i, AX_F32, false), AX_F32, 1, VEC(5),
                  VALS(300, -1, 4294967296.0, 0, 16777216), 0);
    ax_array_release(i);
    ax_array *u = vec_i(cx, AX_U32, 2, INTS(UINT32_MAX, 7));
    expect_values(ax_convert(cx, u, AX_F32, false), AX_F32, 1, VEC(2), VALS(4294967296.0, 7), 0);
    expect_ints(ax_convert(cx, u, AX_I32, false), AX_I32, 1, VEC(2), INTS(-1, 7));
    expect_ints(ax_convert(cx, u, AX_I64, false), AX_I64, 1, VEC(2), INTS(UINT32_MAX, 7));
    ax_array_release(u);
    ax_array *b = vec_i(cx, AX_BOOL, 2, INTS(1, 0));
    expect_values(ax_convert(cx, b, AX_F64, false), AX_F64, 1, VEC(2), VALS(1, 0), 0);
    expect_ints(ax_convert(cx, b, AX_I32, false), AX_I32, 1, VEC(2), INTS(1, 0));
    ax_array_release(b);
    ax_array *z = make_array(cx, AX_F32, 1, VEC(2), VALS(-0.0, 0.0));
    expect_ints(ax_convert(cx, z, AX_BOOL, false), AX_BOOL, 1, VEC(2), INTS(0, 0));
    /* weak flag; the same dtype shares the buffer */
    ax_array *w = ax_convert(cx, z, AX_F64, true);
    assert_true(w->weak);
    ax_array_release(w);
    ax_array *same = ax_convert(cx, z, AX_F32, false);
    assert_ptr_equal(same, z);
    ax_array_release(same);
    ax_array *weak = ax_convert(cx, z, AX_F32, true);
    assert_true(weak->weak);
    assert_false(z->weak);
    assert_ptr_equal(weak->buf, z->buf);
    ax_array_release(weak);
    ax_array_release(z);
}

static void test_bitcast(void **state) {
    ax_ctx *cx = *state;
    ax_array *f = make_array(cx, AX_F32, 1, VEC(3), VALS(1.0, -0.0, -2.5));
    ax_array *i = ax_bitcast(cx, f, AX_I32);
    assert_ptr_equal(i->buf, f->buf);
    expect_ints(i, AX_I32, 1, VEC(3), INTS(0x3f800000, INT32_MIN, (int32_t)0xc0200000));
    ax_array *u = ax_bitcast(cx, f, AX_U32);
    expect_ints(u, AX_U32, 1, VEC(3), INTS(0x3f800000, 0x80000000, 0xc0200000));
    ax_array *back = ax_bitcast(cx, f, AX_I32);
    ax_array *f2 = ax_bitcast(cx, back, AX_F32);
    expect_values(f2, AX_F32, 1, VEC(3), VALS(1.0, -0.0, -2.5), 0);
    ax_array_release(back);
    ax_array *d = make_array(cx, AX_F64, 1, VEC(1), VALS(1.0));
    expect_ints(ax_bitcast(cx, d, AX_I64), AX_I64, 1, VEC(1), INTS(0x3ff0000000000000));
    ax_array *q = make_array(cx, AX_U8, 1, VEC(1), VALS(2));
    expect_error(cx, ax_bitcast(cx, q, AX_BOOL), AX_ERR_TYPE,
                 "cannot bitcast uint8 to bool: bitcast needs two non-bool dtypes of the same "
                 "size");
    ax_array_release(q);
    ax_array_release(d);
    ax_array_release(f);
}

/* ---------------------------------------------------------------------------------------- */
/* erf_inv: XLA's algorithm, measured against a long double reference */

/* erf^-1(x) refined by Newton's method in long double from a close start (erfc for the tail,
 * where 1 - x is exact). */
static long double erf_inv_reference(long double x, long double y) {
    long double a = fabsl(x);
    y = fabsl(y);
    for (int i = 0; i < 4; i++) {
        long double slope = 1.1283791670955125738961589L * expl(-y * y);
        long double f = a > 0.5L ? (1 - a) - erfcl(y) : erfl(y) - a;
        y -= f / slope;
    }
    return x < 0 ? -y : y;
}

static void test_erf_inv_accuracy(void **state) {
    ax_ctx *cx = *state;
    enum { N = 20001 };
    double *xs = malloc(N * sizeof *xs);
    for (int i = 0; i < N; i++) xs[i] = -0.99 + 1.98 * i / (N - 1);
    double worst[2] = {0, 0};
    for (int k = 0; k < 2; k++) {
        ax_dtype t = k ? AX_F64 : AX_F32;
        ax_array *x = make_array(cx, t, 1, VEC(N), xs);
        ax_array *y = ax_unary(cx, AX_ERF_INV, x);
        for (int i = 0; i < N; i++) {
            double xv = ax_array_get_f64(x, i), yv = ax_array_get_f64(y, i);
            long double ref = erf_inv_reference(xv, yv);
            double err = (double)(fabsl(yv - ref) / ulp_of((double)ref, t));
            if (err > worst[k]) worst[k] = err;
        }
        ax_array_release(x);
        ax_array_release(y);
    }
    free(xs);
    print_message("erf_inv on [-0.99, 0.99]: max %.2f ulp (f32), %.2f ulp (f64)\n", worst[0],
                  worst[1]);
    /* Giles' polynomials as XLA evaluates them: ~3.5 ulp in the bulk, more towards +-1 where
     * XLA's log1p(-x*x) loses digits (the price of matching JAX's bits) */
    assert_true(worst[0] <= 5);
    assert_true(worst[1] <= 5);
    /* mpmath values */
    check_float_unary(cx, AX_ERF_INV, AX_F64, 2, VALS(0.5, 0.9),
                      VALS(0.4769362762044699, 1.1630871536766743), 4);
    check_float_unary(cx, AX_ERF_INV, AX_F64, 1, VALS(-0.999), VALS(-2.3267537655135246), 16);
}

/* ---------------------------------------------------------------------------------------- */
/* In place */

static void test_consume(void **state) {
    ax_ctx *cx = *state;
    ax_array *x = make_array(cx, AX_F32, 1, VEC(3), VALS(1, -2, 3));
    ax_array *y = ax_unary_take(cx, AX_NEG, x); /* x was unique: reused */
    assert_ptr_equal(y, x);
    expect_values(ax_array_retain(y), AX_F32, 1, VEC(3), VALS(-1, 2, -3), 0);
    ax_array *keep = ax_array_retain(y); /* now shared: a new array, y untouched */
    ax_array *z = ax_unary_take(cx, AX_NEG, y);
    assert_ptr_not_equal(z, keep);
    expect_values(keep, AX_F32, 1, VEC(3), VALS(-1, 2, -3), 0);
    /* x * x with both references handed over */
    ax_array_retain(z);
    ax_array *sq = ax_binary_take(cx, AX_MUL, z, z);
    assert_ptr_equal(sq, z);
    expect_values(sq, AX_F32, 1, VEC(3), VALS(1, 4, 9), 0);
    /* a broadcast operand is not the output's shape; the other one is reused */
    ax_array *a = make_range(cx, AX_I32, 2, SHAPE(2, 2));
    ax_array *s = ax_array_scalar(cx, AX_I32, 10);
    ax_array *r = ax_binary_take(cx, AX_ADD, s, a);
    assert_ptr_equal(r, a);
    expect_ints(r, AX_I32, 2, SHAPE(2, 2), INTS(10, 11, 12, 13));
    /* comparisons change the dtype: never in place */
    ax_array *c = make_range(cx, AX_F32, 1, VEC(2));
    ax_array *c2 = ax_array_retain(c);
    ax_array *lt = ax_binary_take(cx, AX_LT, c, c2);
    assert_ptr_not_equal(lt, c);
    expect_ints(lt, AX_BOOL, 1, VEC(2), INTS(0, 0));
}

/* ---------------------------------------------------------------------------------------- */
/* Large arrays: the pool and the streaming path give the bits the small path gives */

static ax_dtype unary_out_dtype(ax_unary_op op, ax_dtype t) {
    return op == AX_IS_FINITE ? AX_BOOL : t;
}

/* op applied to x in chunks of `chunk` elements (views), concatenated. */
static ax_array *unary_in_chunks(ax_ctx *cx, ax_unary_op op, ax_array *x, int64_t chunk) {
    ax_array *out = ax_array_new(cx, unary_out_dtype(op, x->dtype), 1, VEC(x->size));
    size_t es = ax_dtype_size(out->dtype);
    for (int64_t i = 0; i < x->size; i += chunk) {
        int64_t m = x->size - i < chunk ? x->size - i : chunk;
        ax_array *v = ax_array_view(cx, x, 1, VEC(m), x->strides, x->offset + i * x->strides[0]);
        ax_array *r = ax_unary(cx, op, v);
        memcpy((char *)out->buf->data + i * (int64_t)es, ax_array_data(r), (size_t)m * es);
        ax_array_release(r);
        ax_array_release(v);
    }
    return out;
}

static ax_array *ramp_f32(ax_ctx *cx, int64_t n) {
    ax_array *x = ax_array_new(cx, AX_F32, 1, VEC(n));
    float *p = ax_array_data(x);
    for (int64_t i = 0; i < n; i++) p[i] = 20.0f * sinf(0.37f * (float)i) + 0.001f * (float)(i % 7);
    return x;
}

static void test_big_arrays(void **state) {
    ax_ctx *cx = *state;
    /* transcendental kernels split this over the pool (cheap ones from 4M elements on: see
     * test_streaming_path); an odd tail */
    int64_t n = 300007;
    ax_array *x = ramp_f32(cx, n);
    ax_array *xr = ax_array_view(cx, x, 1, VEC(n), SHAPE(-1), n - 1); /* x[::-1] */
    const ax_unary_op ops[] = {AX_EXP, AX_LOGISTIC, AX_SIN,       AX_TANH, AX_LOG1P,
                               AX_ERF, AX_ROUND,    AX_IS_FINITE, AX_SQRT, AX_ABS};
    for (size_t k = 0; k < sizeof ops / sizeof *ops; k++) {
        expect_same_bits(ax_unary(cx, ops[k], x), unary_in_chunks(cx, ops[k], x, 1000));
        expect_same_bits(ax_unary(cx, ops[k], xr), unary_in_chunks(cx, ops[k], xr, 777));
    }
    /* one thread gives the same bits as the pool */
    ax_ctx *one = ax_ctx_new();
    one->threads = 1;
    assert_int_equal(ax_pool_threads(one), 1);
    expect_same_bits(ax_unary(cx, AX_EXP, x), ax_unary(one, AX_EXP, x));
    expect_same_bits(ax_binary(cx, AX_POW, x, xr), ax_binary(one, AX_POW, x, xr));
    ax_ctx_free(one);
    /* binary with broadcasting and a reversed operand, select, convert: exact checks */
    ax_array *half = ax_array_scalar(cx, AX_F32, 0.5);
    ax_array *sum = ax_binary(cx, AX_ADD, x, xr);
    ax_array *prod = ax_binary(cx, AX_MUL, half, x);
    ax_array *pos = ax_binary(cx, AX_GT, x, half);
    ax_array *sel = ax_select(cx, pos, x, xr);
    ax_array *cvt = ax_convert(cx, x, AX_I32, false);
    const float *px = ax_array_data(x);
    for (int64_t i = 0; i < n; i++) {
        float a = px[i], b = px[n - 1 - i];
        if (((float *)sum->buf->data)[i] != a + b || ((float *)prod->buf->data)[i] != 0.5f * a ||
            ((uint8_t *)pos->buf->data)[i] != (a > 0.5f) ||
            ((float *)sel->buf->data)[i] != (a > 0.5f ? a : b) ||
            ((int32_t *)cvt->buf->data)[i] != (int32_t)a)
            fail_msg("element %lld", (long long)i);
    }
    ax_array *rs[] = {half, sum, prod, pos, sel, cvt, xr, x};
    for (size_t k = 0; k < sizeof rs / sizeof *rs; k++) ax_array_release(rs[k]);
}

/* Outputs of 32 MB and more are written with non-temporal stores, and cheap kernels go
 * through the pool. */
static void test_streaming_path(void **state) {
    ax_ctx *cx = *state;
    int64_t n = 9000001;
    ax_array *x = ramp_f32(cx, n);
    expect_same_bits(ax_unary(cx, AX_EXP, x), unary_in_chunks(cx, AX_EXP, x, 1 << 20));
    ax_array *y = ax_binary(cx, AX_MUL, x, x);
    const float *px = ax_array_data(x), *py = ax_array_data(y);
    for (int64_t i = 0; i < n; i++)
        if (py[i] != px[i] * px[i]) fail_msg("element %lld", (long long)i);
    ax_array_release(y);
    /* a 2-d outer sum: chunks start and end mid-row, rows are streamed through the tile */
    int64_t rows = 2000, cols = 4500;
    ax_array *col = ax_array_view(cx, x, 2, SHAPE(rows, 1), SHAPE(3, 0), 0); /* x[::3, None] */
    ax_array *row = ax_array_view(cx, x, 1, VEC(cols), SHAPE(-1), n - 1);    /* x[::-1][:cols] */
    ax_array *outer = ax_binary(cx, AX_ADD, col, row);
    check_shape(outer, AX_F32, 2, SHAPE(rows, cols));
    const float *po = ax_array_data(outer);
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < cols; j++)
            if (po[i * cols + j] != px[3 * i] + px[n - 1 - j])
                fail_msg("element (%lld, %lld)", (long long)i, (long long)j);
    ax_array_release(outer);
    ax_array_release(row);
    ax_array_release(col);
    /* in place on a unique array */
    ax_array *c = ax_array_copy(cx, x);
    ax_array_retain(c);
    ax_array *sq = ax_binary_take(cx, AX_MUL, c, c);
    assert_ptr_equal(sq, c);
    py = ax_array_data(sq);
    for (int64_t i = 0; i < n; i++)
        if (py[i] != px[i] * px[i]) fail_msg("element %lld", (long long)i);
    ax_array_release(sq);
    ax_array_release(x);
}

/* ---------------------------------------------------------------------------------------- */
/* The pool itself */

typedef struct cover_job {
    ax_ctx *cx;
    unsigned char *hits;
    bool nest;
    pthread_t caller;
    _Atomic int bad;
    _Atomic int on_other_thread;
} cover_job;

static void mark_inner(void *arg, int64_t begin, int64_t end) {
    cover_job *j = arg;
    for (int64_t i = begin; i < end; i++) j->hits[i]++;
    if (!pthread_equal(pthread_self(), j->caller)) j->bad = 1; /* nested loops run inline */
}

static void mark(void *arg, int64_t begin, int64_t end) {
    cover_job *j = arg;
    for (int64_t i = begin; i < end; i++) j->hits[i]++;
    if (!pthread_equal(pthread_self(), j->caller)) j->on_other_thread = 1;
    if (j->nest) {
        unsigned char inner[1000] = {0};
        cover_job sub = {.cx = j->cx, .hits = inner, .caller = pthread_self()};
        ax_parallel_for(j->cx, 1000, 10, mark_inner, &sub);
        for (int i = 0; i < 1000; i++)
            if (inner[i] != 1) sub.bad = 1;
        if (sub.bad) j->bad = 1;
    }
}

static void run_cover(ax_ctx *cx, int64_t n, int64_t grain, bool nest, bool expect_threads) {
    cover_job j = {.cx = cx, .hits = calloc((size_t)n, 1), .nest = nest, .caller = pthread_self()};
    ax_parallel_for(cx, n, grain, mark, &j);
    for (int64_t i = 0; i < n; i++)
        if (j.hits[i] != 1) fail_msg("item %lld done %d times", (long long)i, j.hits[i]);
    free(j.hits);
    assert_int_equal(j.bad, 0);
    if (!expect_threads) assert_int_equal(j.on_other_thread, 0);
}

static void test_pool(void **state) {
    ax_ctx *cx = *state;
    int threads = ax_pool_threads(cx);
    assert_true(threads >= 1);
    run_cover(cx, 1000003, 1000, false, true);
    run_cover(cx, 64 * 1000 + 17, 64, true, true);
    run_cover(cx, 1999, 1000, false, false); /* below 2 * grain: inline */
    run_cover(cx, 1, 1, false, false);
    ax_parallel_for(cx, 0, 1, mark, NULL); /* nothing to do */
    ax_ctx *one = ax_ctx_new();
    one->threads = 1;
    run_cover(one, 1000003, 1000, false, false);
    ax_ctx_free(one);
    ax_ctx *many = ax_ctx_new();
    many->threads = 5; /* more threads than cores still covers everything once */
    assert_int_equal(ax_pool_threads(many), 5);
    run_cover(many, 100003, 7, true, true);
    ax_ctx_free(many);
    ax_pool_free(NULL);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unary_float_values),
        cmocka_unit_test(test_unary_special_values),
        cmocka_unit_test(test_binary_float),
        cmocka_unit_test(test_int_division),
        cmocka_unit_test(test_int_arithmetic),
        cmocka_unit_test(test_shifts),
        cmocka_unit_test(test_bool_ops),
        cmocka_unit_test(test_names_and_rules),
        cmocka_unit_test(test_broadcast_views),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_integer_pow),
        cmocka_unit_test(test_select_clamp),
        cmocka_unit_test(test_convert),
        cmocka_unit_test(test_bitcast),
        cmocka_unit_test(test_erf_inv_accuracy),
        cmocka_unit_test(test_consume),
        cmocka_unit_test(test_big_arrays),
        cmocka_unit_test(test_streaming_path),
        cmocka_unit_test(test_pool),
    };
    return cmocka_run_group_tests(tests, setup_ctx, teardown_ctx);
}

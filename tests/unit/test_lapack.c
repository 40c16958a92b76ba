/* The LAPACK kernels (runtime/lapack.c) against NumPy 1.24 on this machine's LAPACK (values
 * recorded with np.linalg.eigh / svd / qr; LU from a plain partial-pivoting elimination, which
 * picks the same pivots as getrf): factors, including the signs of eigen- and singular vectors,
 * equal NumPy's to rounding. Also: batches equal their matrices one by one, empty and non-finite
 * input, singular LU, and errors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "../../runtime/lapack.h"
#include "kernel_test_util.h"

#define S SHAPE
#define V VALS

static void release(int n, ax_array **out) {
    for (int i = 0; i < n; i++) ax_array_release(out[i]);
}

/* A (3, 4) and its transpose B (4, 3); S symmetric (4, 4). */
static const double A[] = {2.0, -1.0, 0.5, 3.0, 4.0, 1.5, -2.0, 0.0, -1.0, 2.5, 1.0, -0.5};
static const double B[] = {2.0, 4.0, -1.0, -1.0, 1.5, 2.5, 0.5, -2.0, 1.0, 3.0, 0.0, -0.5};
static const double SYM[] = {4.0,  1.0,  -0.5, 0.25, 1.0,  3.0,  0.75, -1.0,
                             -0.5, 0.75, 2.0,  0.5,  0.25, -1.0, 0.5,  1.5};

static void test_lu(void **state) {
    ax_ctx *cx = *state;
    ax_array *out[3], *a = make_array(cx, AX_F64, 2, S(3, 4), A),
                      *b = make_array(cx, AX_F64, 2, S(4, 3), B);
    assert_int_equal(ax_lu(cx, a, out), 0);
    expect_values(out[0], AX_F64, 2, S(3, 4),
                  V(4.0, 1.5, -2.0, 0.0, -0.25, 2.875, 0.5, -0.5, 0.5, -0.6086956521739131,
                    1.8043478260869565, 2.6956521739130435),
                  1e-14);
    expect_values(out[1], AX_I32, 1, S(3), V(1, 2, 2), 0);
    expect_values(out[2], AX_I32, 1, S(3), V(1, 2, 0), 0);
    assert_int_equal(ax_lu(cx, b, out), 0);
    expect_values(out[0], AX_F64, 2, S(4, 3),
                  V(3.0, 0.0, -0.5, 0.6666666666666666, 4.0, -0.6666666666666667,
                    -0.3333333333333333, 0.375, 2.5833333333333335, 0.16666666666666666, -0.5,
                    0.29032258064516125),
                  1e-14);
    expect_values(out[1], AX_I32, 1, S(3), V(3, 3, 3), 0);
    expect_values(out[2], AX_I32, 1, S(4), V(3, 0, 1, 2), 0);
    /* singular: a zero on U's diagonal and no error, as JAX */
    ax_array *z = make_array(cx, AX_F32, 2, S(2, 2), V(1, 2, 2, 4));
    assert_int_equal(ax_lu(cx, z, out), 0);
    expect_values(out[0], AX_F32, 2, S(2, 2), V(2, 4, 0.5, 0), 0);
    release(2, out + 1);
    ax_array_release(a), ax_array_release(b), ax_array_release(z);
}

static const double EIGH_W[] = {0.3299990546869024, 2.25, 3.2652367944804443, 4.654764150832651};
static const double EIGH_V[] = {
    -0.2456949894282225,  0.163299316185545,    0.4870113808948451,  -0.8220627837228096,
    0.4849294928815716,   -0.08164965809277244, -0.6689123346642712, -0.5574343089557271,
    -0.49441454987121125, 0.7348469228349535,   -0.463892496739399,  0.01892100273596525,
    0.6782563025723644,   0.653197264742181,    0.31651217177507895, 0.11455027923327554};

static void test_eigh(void **state) {
    ax_ctx *cx = *state;
    ax_array *out[2], *s = make_array(cx, AX_F64, 2, S(4, 4), SYM);
    assert_int_equal(ax_eigh(cx, s, true, out), 0);
    expect_values(out[1], AX_F64, 1, S(4), EIGH_W, 1e-13);
    expect_values(out[0], AX_F64, 2, S(4, 4), EIGH_V, 1e-12);
    /* f32: the same to f32 rounding */
    ax_array *s32 = make_array(cx, AX_F32, 2, S(4, 4), SYM);
    assert_int_equal(ax_eigh(cx, s32, true, out), 0);
    expect_values(out[1], AX_F32, 1, S(4), EIGH_W, 1e-5);
    expect_values(out[0], AX_F32, 2, S(4, 4), EIGH_V, 1e-5);
    /* only the triangle asked for is read: garbage (even a NaN) in the other changes nothing */
    double low[16];
    memcpy(low, SYM, sizeof low);
    low[1] = NAN, low[2] = 100, low[11] = -7;
    ax_array *l = make_array(cx, AX_F64, 2, S(4, 4), low);
    assert_int_equal(ax_eigh(cx, l, true, out), 0);
    expect_values(out[1], AX_F64, 1, S(4), EIGH_W, 1e-13);
    ax_array_release(out[0]);
    /* a NaN in the triangle read: NaNs, as JAX */
    assert_int_equal(ax_eigh(cx, l, false, out), 0);
    expect_values(out[1], AX_F64, 1, S(4), V(NAN, NAN, NAN, NAN), 0);
    ax_array_release(out[0]);
    ax_array_release(s), ax_array_release(s32), ax_array_release(l);
}

static void test_svd(void **state) {
    ax_ctx *cx = *state;
    ax_array *out[3], *b = make_array(cx, AX_F64, 2, S(4, 3), B),
                      *a = make_array(cx, AX_F64, 2, S(3, 4), A);
    static const double sv[] = {5.124504060396011, 3.6918867913893294, 2.2604048430645736};
    assert_int_equal(ax_svd(cx, b, false, true, out), 0);
    expect_values(out[0], AX_F64, 1, S(3), sv, 1e-14);
    expect_values(out[1], AX_F64, 2, S(4, 3),
                  V(-0.8909194152769837, -0.10696362155680306, 0.003995300477487973,
                    -0.018842359496374625, -0.7355044478658117, -0.6437293804222167,
                    0.32505491155994864, 0.2632755484693633, -0.5473136042667662,
                    -0.3166178539531222, 0.6150430687449595, -0.5348311331063716),
                  1e-12);
    expect_values(out[2], AX_F64, 2, S(3, 3),
                  V(-0.4976720765716208, -0.8277973777514338, 0.2589864969235666,
                    0.6767120246072302, -0.55734706160649, -0.48106661562677067,
                    -0.5425710459957058, 0.06415414488917551, -0.8375565089835219),
                  1e-12);
    assert_int_equal(ax_svd(cx, a, true, true, out), 0);
    expect_values(out[0], AX_F64, 1, S(3), sv, 1e-14);
    expect_values(out[1], AX_F64, 2, S(3, 3),
                  V(0.4976720765716202, 0.6767120246072303, 0.5425710459957063, 0.8277973777514342,
                    -0.5573470616064895, -0.06415414488917581, -0.25898649692356634,
                    -0.48106661562677117, 0.8375565089835215),
                  1e-12);
    expect_values(out[2], AX_F64, 2, S(4, 4),
                  V(0.8909194152769842, 0.018842359496375274, -0.325054911559949,
                    0.31661785395312186, -0.1069636215568027, -0.7355044478658118,
                    0.26327554846936285, 0.6150430687449592, -0.003995300477487869,
                    0.6437293804222165, 0.5473136042667663, 0.534831133106372, -0.44136766614701733,
                    0.21045345670586268, -0.7248952397646377, 0.48521213629407206),
                  1e-12);
    assert_int_equal(ax_svd(cx, a, true, false, out), 0);
    expect_values(out[0], AX_F64, 1, S(3), sv, 1e-14);
    /* infinity in: NaNs out */
    ax_array *inf = make_array(cx, AX_F32, 2, S(2, 2), V(1, INFINITY, 0, 1));
    assert_int_equal(ax_svd(cx, inf, false, true, out), 0);
    expect_values(out[0], AX_F32, 1, S(2), V(NAN, NAN), 0);
    release(2, out + 1);
    /* empty: full factors are identities, as JAX */
    ax_array *e = ax_array_new(cx, AX_F64, 2, S(2, 0));
    assert_int_equal(ax_svd(cx, e, true, true, out), 0);
    expect_values(out[1], AX_F64, 2, S(2, 2), V(1, 0, 0, 1), 0);
    check_shape(out[0], AX_F64, 1, S(0));
    check_shape(out[2], AX_F64, 2, S(0, 0));
    ax_array_release(out[0]), ax_array_release(out[2]);
    ax_array_release(a), ax_array_release(b), ax_array_release(inf), ax_array_release(e);
}

static void test_qr(void **state) {
    ax_ctx *cx = *state;
    ax_array *out[2], *b = make_array(cx, AX_F64, 2, S(4, 3), B),
                      *a = make_array(cx, AX_F64, 2, S(3, 4), A);
    static const double q_thin[] = {-0.5298129428260177,  -0.7195340689221625, 0.08224082048646392,
                                    0.26490647141300877,  -0.4203799587452853, -0.8419112745707678,
                                    -0.13245323570650439, 0.48881390551777354, -0.466951814955148,
                                    -0.7947194142390263,  0.25809374211338443, -0.2576390026887072};
    static const double r_thin[] = {-3.7749172176353745,
                                    -1.4569855927715487,
                                    1.4569855927715483,
                                    0.0,
                                    -4.486334024842125,
                                    0.028351206520030647,
                                    0.0,
                                    0.0,
                                    -2.525151320524178};
    assert_int_equal(ax_qr(cx, b, false, out), 0);
    expect_values(out[0], AX_F64, 2, S(4, 3), q_thin, 1e-13);
    expect_values(out[1], AX_F64, 2, S(3, 3), r_thin, 1e-13);
    assert_int_equal(ax_qr(cx, b, true, out), 0);
    expect_values(
        out[0], AX_F64, 2, S(4, 4),
        V(-0.5298129428260177, -0.7195340689221625, 0.08224082048646392, -0.44136766614701733,
          0.26490647141300877, -0.4203799587452853, -0.8419112745707678, 0.2104534567058626,
          -0.13245323570650439, 0.48881390551777354, -0.466951814955148, -0.7248952397646378,
          -0.7947194142390263, 0.25809374211338443, -0.2576390026887072, 0.48521213629407206),
        1e-13);
    expect_values(out[1], AX_F64, 2, S(4, 3),
                  V(-3.7749172176353745, -1.4569855927715487, 1.4569855927715483, 0.0,
                    -4.486334024842125, 0.028351206520030647, 0.0, 0.0, -2.525151320524178, 0, 0,
                    0),
                  1e-13);
    assert_int_equal(ax_qr(cx, a, false, out), 0); /* wide */
    expect_values(out[0], AX_F64, 2, S(3, 3),
                  V(-0.4364357804719847, 0.37290060537403463, 0.8188216826852399,
                    -0.8728715609439694, -0.3962068932099119, -0.28480754180356177,
                    0.21821789023599236, -0.839026362091578, 0.4984131981562332),
                  1e-13);
    expect_values(out[1], AX_F64, 2, S(3, 4),
                  V(-4.58257569495584, -0.32732683535398843, 1.745743121887939, -1.418416286533951,
                    0.0, -3.0647768504178483, 0.1398377270152631, 1.5382149971678936, 0.0, 0.0,
                    1.4774391231059767, 2.207258448977604),
                  1e-13);
    ax_array_release(a), ax_array_release(b);
}

/* A batch (2, 4, 3) factors as its two matrices do. */
static void test_batches(void **state) {
    ax_ctx *cx = *state;
    double both[24];
    for (int i = 0; i < 12; i++) both[i] = B[i], both[12 + i] = -2 * B[11 - i];
    ax_array *x = make_array(cx, AX_F64, 3, S(2, 4, 3), both);
    ax_array *one = make_array(cx, AX_F64, 2, S(4, 3), both + 12);
    ax_array *got[3], *want[3];
    assert_int_equal(ax_svd(cx, x, false, true, got), 0);
    assert_int_equal(ax_svd(cx, one, false, true, want), 0);
    for (int k = 0; k < 3; k++) {
        int64_t per = want[k]->size;
        for (int64_t i = 0; i < per; i++)
            assert_true(ax_array_get_f64(got[k], per + i) == ax_array_get_f64(want[k], i));
    }
    release(3, got), release(3, want);
    assert_int_equal(ax_lu(cx, x, got), 0);
    assert_int_equal(ax_lu(cx, one, want), 0);
    for (int k = 0; k < 3; k++) {
        int64_t per = want[k]->size;
        for (int64_t i = 0; i < per; i++)
            assert_true(ax_array_get_f64(got[k], per + i) == ax_array_get_f64(want[k], i));
    }
    release(3, got), release(3, want);
    ax_array_release(x), ax_array_release(one);
}

static void test_errors(void **state) {
    ax_ctx *cx = *state;
    ax_array *out[3], *i = ax_array_zeros(cx, AX_I32, 2, S(2, 2));
    ax_array *r = ax_array_zeros(cx, AX_F32, 2, S(2, 3)), *v = ax_array_zeros(cx, AX_F32, 1, S(3));
    assert_int_equal(ax_lu(cx, i, out), -1);
    expect_error(cx, out[0], AX_ERR_TYPE, "lu requires a floating-point argument, got i32[2,2]");
    assert_int_equal(ax_eigh(cx, r, true, out), -1);
    expect_error(cx, out[0], AX_ERR_SHAPE,
                 "eigh requires square matrices (..., n, n), got f32[2,3]");
    assert_int_equal(ax_qr(cx, v, true, out), -1);
    expect_error(cx, out[0], AX_ERR_SHAPE, "qr requires matrices (..., m, n), got f32[3]");
    ax_array_release(i), ax_array_release(r), ax_array_release(v);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lu), cmocka_unit_test(test_eigh),    cmocka_unit_test(test_svd),
        cmocka_unit_test(test_qr), cmocka_unit_test(test_batches), cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, setup_ctx, teardown_ctx);
}

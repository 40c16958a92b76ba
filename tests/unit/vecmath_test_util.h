/* Shared by test_vecmath.c, test_jit.c and tests/bench/bench_vecmath.c: the references ax's
 * f32 vector math (runtime/vecmath.h) is measured against, and the inputs where the functions
 * change regime. */
#ifndef AX_VECMATH_TEST_UTIL_H
#define AX_VECMATH_TEST_UTIL_H

#include <float.h>
#include <math.h>

#include "../../runtime/vecmath.h"

static inline double vecmath_ref_logistic(double x) {
    return (double)(1.0L / (1.0L + expl(-(long double)x)));
}

/* glibc's f64 functions (logistic in long double): their error is far below an f32 ulp, so
 * rounded to f32 they stand for the correctly rounded results */
static double (*const vecmath_refs[AX_VM_COUNT])(double) = {
    [AX_VM_EXP] = exp,   [AX_VM_EXPM1] = expm1, [AX_VM_LOG] = log,
    [AX_VM_TANH] = tanh, [AX_VM_ERF] = erf,     [AX_VM_LOGISTIC] = vecmath_ref_logistic,
};

/* Inputs where the functions change regime: signed zeros, denormals, the limits of f32,
 * infinities and NaN, and each function's thresholds (overflow, underflow, the switch between
 * two approximations, tanh's clamp to 9.1 and where it rounds to 1) with their neighbours on
 * both sides; test_jit.c also sweeps libmvec's log1p, sin and cos from these, hence their own
 * (multiples of pi/2, huge arguments). */
static const float vecmath_thresholds[] = {
    0x1p-149f,    0x1.fffffcp-127f,
    FLT_MIN,      0x1p-25f,
    0x1p-24f,     1.0f,
    FLT_MAX,      88.7228394f,
    88.3762589f,  87.3365479f,
    89.0f,        100.0f,
    103.972084f,  103.278931f,
    110.0f,       17.3286800f,
    30.0f,        0.346573591f,
    0.625f,       9.01092148f,
    9.5f,         4.0f,
    3.9192059f,   0.70710677f,
    1.41421354f,  0.29289323f,
    0.41421357f,  0x1p20f,
    1.57079637f,  3.14159274f,
    4.71238899f,  6.28318548f,
    1e6f,         1.6e6f,
    102.101761f,  0x1.921fb6p20f,
    1e10f,        3e38f,
    0.785398185f, 0.0237094797f,
    9.1f,         0.55f,
};

/* Fills x with 0, -0, NaN, +-inf and every threshold t (and -t) with its two neighbours;
 * returns how many (at most VECMATH_NEDGES). */
enum { VECMATH_NEDGES = 5 + 6 * (int)(sizeof vecmath_thresholds / sizeof *vecmath_thresholds) };
static inline int vecmath_edges(float *x) {
    int n = 0;
    x[n++] = 0.0f, x[n++] = -0.0f, x[n++] = NAN, x[n++] = INFINITY, x[n++] = -INFINITY;
    for (size_t i = 0; i < sizeof vecmath_thresholds / sizeof *vecmath_thresholds; i++)
        for (int sign = -1; sign <= 1; sign += 2) {
            float t = (float)sign * vecmath_thresholds[i];
            x[n++] = nextafterf(t, -INFINITY), x[n++] = t, x[n++] = nextafterf(t, INFINITY);
        }
    return n;
}

#endif

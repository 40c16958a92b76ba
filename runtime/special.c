/* Special functions: erf_inv (XLA's algorithm), digamma, thread-safe lgamma. */
#include "special.h"

#include <math.h>
#include <stdbool.h>

/* Coefficients of Giles, "Approximating the erfinv function" (GPU Computing Gems, 2011),
 * single precision, as XLA's ErfInv uses them: w < 5 and w >= 5. */
static const float erf_inv_small_f32[9] = {2.81022636e-08f,  3.43273939e-07f, -3.5233877e-06f,
                                           -4.39150654e-06f, 0.00021858087f,  -0.00125372503f,
                                           -0.00417768164f,  0.246640727f,    1.50140941f};
static const float erf_inv_large_f32[9] = {-0.000200214257f, 0.000100950558f, 0.00134934322f,
                                           -0.00367342844f,  0.00573950773f,  -0.0076224613f,
                                           0.00943887047f,   1.00167406f,     2.83297682f};

/* XLA:CPU compiles `p = c + p * w` with FMA contraction allowed (its LLVM target options
 * always permit fusion), so each Horner step is one fused multiply-add: fmaf keeps that
 * rounding whatever flags this file is compiled with. */
float ax_erf_inv_f32(float x) {
    float w = -log1pf(x * -x);
    bool small = w < 5.0f;
    const float *c = small ? erf_inv_small_f32 : erf_inv_large_f32;
    w = small ? w - 2.5f : sqrtf(w) - 3.0f;
    float p = c[0];
    for (int i = 1; i < 9; i++) p = fmaf(p, w, c[i]);
    if (fabsf(x) == 1.0f) return x * INFINITY;
    return p * x;
}

/* Giles' double-precision coefficients, w < 6.25, w < 16 and w >= 16. */
static const double erf_inv_small_f64[23] = {
    -3.6444120640178196996e-21, -1.685059138182016589e-19,  1.2858480715256400167e-18,
    1.115787767802518096e-17,   -1.333171662854620906e-16,  2.0972767875968561637e-17,
    6.6376381343583238325e-15,  -4.0545662729752068639e-14, -8.1519341976054721522e-14,
    2.6335093153082322977e-12,  -1.2975133253453532498e-11, -5.4154120542946279317e-11,
    1.051212273321532285e-09,   -4.1126339803469836976e-09, -2.9070369957882005086e-08,
    4.2347877827932403518e-07,  -1.3654692000834678645e-06, -1.3882523362786468719e-05,
    0.0001867342080340571352,   -0.00074070253416626697512, -0.0060336708714301490533,
    0.24015818242558961693,     1.6536545626831027356};
static const double erf_inv_mid_f64[19] = {
    2.2137376921775787049e-09, 9.0756561938885390979e-08, -2.7517406297064545428e-07,
    1.8239629214389227755e-08, 1.5027403968909827627e-06, -4.013867526981545969e-06,
    2.9234449089955446044e-06, 1.2475304481671778723e-05, -4.7318229009055733981e-05,
    6.8284851459573175448e-05, 2.4031110387097893999e-05, -0.0003550375203628474796,
    0.00095328937973738049703, -0.0016882755560235047313, 0.0024914420961078508066,
    -0.0037512085075692412107, 0.005370914553590063617,   1.0052589676941592334,
    3.0838856104922207635};
static const double erf_inv_large_f64[17] = {
    -2.7109920616438573243e-11, -2.5556418169965252055e-10, 1.5076572693500548083e-09,
    -3.7894654401267369937e-09, 7.6157012080783393804e-09,  -1.4960026627149240478e-08,
    2.9147953450901080826e-08,  -6.7711997758452339498e-08, 2.2900482228026654717e-07,
    -9.9298272942317002539e-07, 4.5260625972231537039e-06,  -1.9681778105531670567e-05,
    7.5995277030017761139e-05,  -0.00021503011930044477347, -0.00013871931833623122026,
    1.0103004648645343977,      4.8499064014085844221};

double ax_erf_inv_f64(double x) {
    double w = -log1p(x * -x);
    const double *c;
    int n;
    if (w < 6.25) {
        c = erf_inv_small_f64, n = 23;
        w -= 3.125;
    } else if (w < 16.0) {
        c = erf_inv_mid_f64, n = 19;
        w = sqrt(w) - 3.25;
    } else {
        c = erf_inv_large_f64, n = 17;
        w = sqrt(w) - 5.0;
    }
    double p = c[0];
    for (int i = 1; i < n; i++) p = fma(p, w, c[i]);
    if (fabs(x) == 1.0) return x * INFINITY;
    return p * x;
}

/* pi / tan(pi x), reducing x to [-1/2, 1/2] first so that large |x| keeps its accuracy. */
static double pi_cot_pi(double x) {
    double r = x - nearbyint(x);
    return M_PI / tan(M_PI * r);
}

/* Reflection below 1/2, recurrence up to 10, then the asymptotic series
 * psi(x) ~ ln x - 1/(2x) - sum B_2k / (2k x^2k). */
double ax_digamma_f64(double x) {
    if (isnan(x)) return x;
    if (x <= 0 && x == floor(x)) return NAN;
    if (isinf(x)) return x > 0 ? x : NAN;
    double acc = 0;
    if (x < 0.5) {
        acc = -pi_cot_pi(x);
        x = 1 - x;
    }
    for (; x < 10; x += 1) acc -= 1 / x;
    double r = 1 / (x * x);
    double series =
        r *
        (1.0 / 12 -
         r * (1.0 / 120 -
              r * (1.0 / 252 - r * (1.0 / 240 - r * (1.0 / 132 - r * (691.0 / 32760 - r / 12))))));
    return acc + log(x) - 0.5 / x - series;
}

float ax_digamma_f32(float x) {
    return (float)ax_digamma_f64(x);
}

double ax_lgamma_f64(double x) {
    int sign;
    return lgamma_r(x, &sign);
}

float ax_lgamma_f32(float x) {
    int sign;
    return lgammaf_r(x, &sign);
}

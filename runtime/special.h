/* Special functions that libm lacks or gets subtly different from JAX: the inverse error
 * function (XLA's algorithm, so random.normal matches JAX), digamma, and thread-safe lgamma. */
#ifndef AX_SPECIAL_H
#define AX_SPECIAL_H

/* erf^-1(x): Giles' single-precision polynomial evaluated in f32 exactly as XLA:CPU evaluates
 * it (w = -log1p(-x*x), Horner steps fused into FMAs). +-inf at +-1, NaN outside [-1, 1]. */
float ax_erf_inv_f32(float x);
/* Giles' double-precision version, as XLA evaluates it for f64. */
double ax_erf_inv_f64(double x);

/* psi(x) = d/dx log Gamma(x); NaN at the poles 0, -1, -2, ... (as XLA). */
double ax_digamma_f64(double x);
float ax_digamma_f32(float x);

/* log |Gamma(x)| without touching the global `signgam` (libm's lgamma is not thread-safe). */
double ax_lgamma_f64(double x);
float ax_lgamma_f32(float x);

#endif

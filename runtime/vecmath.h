/* f32 transcendental functions on vector lanes: exp, expm1, log, log1p, tanh, logistic, sin,
 * cos and erf, within 2 ulp of the correctly rounded result (docs/vecmath.md).
 *
 * Each is written once (runtime/vecmath_body.h) as straight-line lane code: compiled here as C
 * for the eager kernels, whose loops GCC vectorises, and emitted by jit into its own lane
 * loops (compiler/vecmath_jit.c). Both evaluate the same operations in the same order, so an
 * element's result is the same bits whichever runs it, wherever it sits in an array. */
#ifndef AX_VECMATH_H
#define AX_VECMATH_H

#include <stdbool.h>
#include <stdint.h>

typedef enum ax_vm_fn {
    AX_VM_EXP,
    AX_VM_EXPM1,
    AX_VM_LOG,
    AX_VM_LOG1P,
    AX_VM_TANH,
    AX_VM_LOGISTIC,
    AX_VM_SIN,
    AX_VM_COS,
    AX_VM_ERF,
    AX_VM_COUNT
} ax_vm_fn;

/* sin and cos reduce |x| up to this in vector lanes; larger arguments (rare: 1.0e6 and
 * beyond) are reduced by glibc, one element at a time (ax_vecmath_trig_big). */
#define AX_VECMATH_TRIG_MAX 0x1p20f

/* y[i] = f(x[i * incx]) for i in [0, n). y must not overlap x unless y == x and incx == 1. */
void ax_vecmath_f32(ax_vm_fn f, int64_t n, const float *x, int64_t incx, float *y);

/* Whether f leaves some arguments to ax_vecmath_trig_big (sin and cos): jit runs those on
 * whole blocks, checked for such arguments, rather than inline. */
static inline bool ax_vecmath_has_big(ax_vm_fn f) {
    return f == AX_VM_SIN || f == AX_VM_COS;
}

/* sin (is_cos = 0) or cos of an x beyond AX_VECMATH_TRIG_MAX: glibc's f64 function, rounded
 * once. The vector code leaves those lanes to this. */
float ax_vecmath_trig_big(float x, int is_cos);

/* Whether the functions' FMA steps are fused (the build targets FMA instructions): jit's code
 * follows, so that it gives the same bits. */
bool ax_vecmath_fused(void);

/* "exp", "log1p"... */
const char *ax_vecmath_name(ax_vm_fn f);

#endif

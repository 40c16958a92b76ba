/* f32 transcendental functions on vector lanes: exp, expm1, log, tanh, logistic and erf, within 2
 * ulp of the correctly rounded result (docs/vecmath.md).
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
    AX_VM_TANH,
    AX_VM_LOGISTIC,
    AX_VM_ERF,
    AX_VM_COUNT
} ax_vm_fn;

/* y[i] = f(x[i * incx]) for i in [0, n). y must not overlap x unless y == x and incx == 1. */
void ax_vecmath_f32(ax_vm_fn f, int64_t n, const float *x, int64_t incx, float *y);

/* Whether the functions' FMA steps are fused (the build targets FMA instructions): jit's code
 * follows, so that it gives the same bits. */
bool ax_vecmath_fused(void);

/* How far ahead loops of float functions prefetch their inputs (the eager kernels here and in
 * runtime/elementwise.c, jit's loops over 2M elements or more): such loops read too slowly for
 * the hardware's prefetchers, which fall behind on arrays beyond the caches (measured in
 * docs/benchmarks.md: 8-32 KB ahead alike). */
#define AX_PREFETCH_BYTES 16384

/* A prefetch of the line AX_PREFETCH_BYTES past p (through an integer: that address may lie
 * past the array; a prefetch never faults). */
static inline void ax_prefetch_ahead(const void *p) {
    __builtin_prefetch((const void *)((uintptr_t)p + AX_PREFETCH_BYTES));
}

/* "exp", "logistic"... */
const char *ax_vecmath_name(ax_vm_fn f);

#endif

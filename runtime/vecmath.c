/* The C back end of runtime/vecmath_body.h: each lane operation is the C operator on one
 * element, and a kernel is a loop of the function over a row, which GCC vectorises (the
 * Makefile builds this file with -O3 -march=native; without AVX2 it is the same code on
 * narrower vectors, or scalar). */
#include "vecmath.h"

#include <math.h>
#include <string.h>

typedef float VM_F;
typedef int32_t VM_I;
typedef uint32_t VM_U;

#define VM_FN(name, ...) static inline __attribute__((always_inline)) float vm_##name(__VA_ARGS__)
#define CALL(name, ...)  vm_##name(__VA_ARGS__)
#define LET(v, e)        __auto_type v = (e)
#define RETURN(e)        return (e)

#define F(c) ((float)(c))
#define D(c) ((double)(c))
#define I(c) ((int32_t)(c))
#define U(c) ((uint32_t)(c))

#define ADD(a, b)    ((a) + (b))
#define SUB(a, b)    ((a) - (b))
#define MUL(a, b)    ((a) * (b))
#define DIV(a, b)    ((a) / (b))
#define NEG(a)       (-(a))
#define LT(a, b)     ((a) < (b))
#define GT(a, b)     ((a) > (b))
#define GE(a, b)     ((a) >= (b))
#define EQ(a, b)     ((a) == (b))
#define SEL(m, a, b) ((m) ? (a) : (b))
#define BAND(a, b)   ((a) & (b))
#define BOR(a, b)    ((a) | (b))
#define SHL(a, k)    ((a) << (k))
#define SHR(a, k)    ((a) >> (k)) /* int32: arithmetic in GCC */
#define BITS(f)      vm_bits(f)
#define FROMBITS(u)  vm_from_bits(u)
#define TOI(u)       ((int32_t)(u))
#define TOU(i)       ((uint32_t)(i))
#define I2F(i)       ((float)(i))
#define F2D(f)       ((double)(f))
#define D2F(d)       ((float)(d))
#define HORNER(z, c) vm_horner(z, c, (int)(sizeof c / sizeof *c))
#if defined(__FMA__)
#define FUSED        1
#define FMA(a, b, c) fmaf(a, b, c)
#else
#define FUSED        0
#define FMA(a, b, c) ((a) * (b) + (c))
#endif

static inline __attribute__((always_inline)) uint32_t vm_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static inline __attribute__((always_inline)) float vm_from_bits(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* The same order as the jit back end's: the innermost coefficient first. */
static inline __attribute__((always_inline)) float vm_horner(float z, const float *c, int n) {
    float p = c[n - 1];
    for (int k = n - 2; k >= 0; k--) p = FMA(p, z, c[k]);
    return p;
}

#include "vecmath_body.h"

/* ------------------------------------------------------------------------------------------
 * Kernels: a contiguous row through the vectorised loop; a strided one gathered a block at a
 * time. */

enum { GATHER = 256 };

/* The functions compute slowly enough that the hardware's prefetchers fall behind on arrays
 * beyond the caches: a row runs in chunks of PREFETCH_CHUNK elements, each starting with
 * prefetches of its lines AX_PREFETCH_BYTES on (vecmath.h). On 10M f32, eager: tanh 2.33 ->
 * 2.27 ms, sigmoid 3.3 -> 2.5, log 4.6 -> 2.7; in cache the same (a burst of prefetches over
 * chunks of 1024 lost 7-27% in a C copy). */
enum { PREFETCH_CHUNK = 256, FLOATS_PER_LINE = 16 };

#define DEF_KERNEL(name)                                                                           \
    static void row_##name(int64_t n, const float *x, float *y) {                                  \
        for (int64_t i = 0; i < n; i++) y[i] = vm_##name(x[i]);                                    \
    }                                                                                              \
    static void k_##name(int64_t n, const float *x, float *y) {                                    \
        for (int64_t i = 0; i < n; i += PREFETCH_CHUNK) {                                          \
            int64_t m = n - i < PREFETCH_CHUNK ? n - i : PREFETCH_CHUNK;                           \
            for (int64_t l = 0; l < m; l += FLOATS_PER_LINE) ax_prefetch_ahead(x + i + l);         \
            row_##name(m, x + i, y + i);                                                           \
        }                                                                                          \
    }

DEF_KERNEL(exp)
DEF_KERNEL(expm1)
DEF_KERNEL(log)
DEF_KERNEL(tanh)
DEF_KERNEL(logistic)
DEF_KERNEL(erf)

typedef void (*row_fn)(int64_t n, const float *x, float *y);

static const row_fn kernels[AX_VM_COUNT] = {
    [AX_VM_EXP] = k_exp,   [AX_VM_EXPM1] = k_expm1, [AX_VM_LOG] = k_log,
    [AX_VM_TANH] = k_tanh, [AX_VM_ERF] = k_erf,     [AX_VM_LOGISTIC] = k_logistic,
};

void ax_vecmath_f32(ax_vm_fn f, int64_t n, const float *x, int64_t incx, float *y) {
    row_fn k = kernels[f];
    if (incx == 1) {
        k(n, x, y);
        return;
    }
    for (int64_t i = 0; i < n; i += GATHER) {
        float t[GATHER];
        int64_t m = n - i < GATHER ? n - i : GATHER;
        for (int64_t j = 0; j < m; j++) t[j] = x[(i + j) * incx];
        k(m, t, y + i);
    }
}

bool ax_vecmath_fused(void) {
    return FUSED;
}

const char *ax_vecmath_name(ax_vm_fn f) {
    static const char *const names[AX_VM_COUNT] = {
        [AX_VM_EXP] = "exp",   [AX_VM_EXPM1] = "expm1", [AX_VM_LOG] = "log",
        [AX_VM_TANH] = "tanh", [AX_VM_ERF] = "erf",     [AX_VM_LOGISTIC] = "logistic",
    };
    return names[f];
}

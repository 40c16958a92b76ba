/* Elementwise kernels.
 *
 * Every operation is a 1-d kernel `fn(n, in[], inc[], out, aux)`: n elements, inputs strided
 * by inc[k] elements (0 for a broadcast operand, negative for a reversed view), output
 * contiguous. Kernels are generated per dtype by macros; each has branches for the common
 * stride patterns so that the compiler vectorises the contiguous and scalar-broadcast loops.
 *
 * The n-d driver (section "Driver") drops size-1 dimensions, merges dimensions that are
 * contiguous in every operand, and walks the remaining outer dimensions calling the kernel on
 * rows. Large outputs are cut into chunks over the thread pool, and written with
 * non-temporal stores when they are far larger than the caches.
 *
 * f32 exp, expm1, log, logistic and erf are ax's own vector math (runtime/vecmath.h), the
 * code jit emits too; the other f32 transcendental functions go through glibc's vector math
 * library (libmvec, reached through -lm) a whole vector at a time (section "Vector math").
 * All are within 2 ulp, and an element's result never depends on where it sits in the array,
 * its stride, or how the array was split over threads (libmvec's tails and strided inputs are
 * gathered into a full vector). f64 ones use glibc's scalar functions.
 *
 * Integer semantics (documented in the header as "as JAX on CPU", NumPy where JAX has none):
 * arithmetic wraps; div, floor_divide, rem and mod by zero give 0 (NumPy's answer; XLA's
 * raw div would give -1); INT_MIN / -1 gives INT_MIN and INT_MIN % -1 gives 0; pow with a
 * negative exponent gives 0 except for bases 1 and -1; shift counts are read as unsigned and
 * counts >= the bit width give 0 (arithmetic right shift: the sign, 0 or -1). */
#include "elementwise.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pool.h"
#include "special.h"
#include "vecmath.h"

#if defined(__SSE2__)
#include <immintrin.h>
#endif

typedef void (*kernel_fn)(int64_t n, const char *const *in, const int64_t *inc, char *out,
                          const void *aux);

/* ------------------------------------------------------------------------------------------
 * Vector math for f32, through glibc's vector math library (libmvec, AVX-512 or AVX2 lanes;
 * plain libm one lane at a time elsewhere). Measured against long double references over a
 * 1/257 sample of all floats, libmvec's f32 functions are 0.8-1.9 ulp for the DIRECT list
 * below but 2-4 ulp for the PROMOTED list (log 3.9, erf 4.0, tan 3.5, asin 2.9, exp 2.5,
 * cosh 2.4, expm1 2.3, atan 2.1): those are evaluated with libmvec's f64 functions on the
 * widened input and rounded once, which gives 0.50 ulp at ~1-2 Gelem/s per core. The
 * functions where ax's own f32 code beats libmvec's (exp, log, tanh, ... : VECMATH_F32) are
 * ax's own (runtime/vecmath.h: 0.8-1.5 ulp at 1-3 Gelem/s per core); libmvec's AVX-512 sin,
 * cos and log1p are faster than ax's were, and stay in the DIRECT list.
 * f64 uses glibc's scalar functions (< 1 ulp, and the same bits as NumPy on this libc); the
 * f64 libmvec variants are up to 3.6 ulp. */

#if defined(__AVX512F__)
#define VW32 16
#define VW64 8
typedef __m512 vec_f32;
typedef __m512d vec_f64;
#define MV32(fn)  _ZGVeN16v_##fn##f
#define MV64(fn)  _ZGVeN8v_##fn
#define MV64V(fn) _ZGVeN8vv_##fn
#define HAVE_MVEC 1
#elif defined(__AVX2__)
#define VW32      8
#define VW64      4
typedef __m256 vec_f32;
typedef __m256d vec_f64;
#define MV32(fn)  _ZGVdN8v_##fn##f
#define MV64(fn)  _ZGVdN4v_##fn
#define MV64V(fn) _ZGVdN4vv_##fn
#define HAVE_MVEC 1
#else
#define VW32      1
#define VW64      1
typedef float vec_f32;
typedef double vec_f64;
#define MV32(fn)  fn##f
#define MV64(fn)  fn
#define MV64V(fn) fn
#define HAVE_MVEC 0
#endif

// clang-format off
#define MVEC_F32_DIRECT(X) \
    X(exp2) X(log1p) X(sin) X(cos) X(acos) X(sinh) X(asinh) X(acosh) X(atanh) X(cbrt) X(erfc)
#define MVEC_F32_PROMOTED(X) X(tan) X(asin) X(atan) X(cosh)
/* ax's own (runtime/vecmath.h): name and ax_vm_fn */
#define VECMATH_F32(X) X(exp, EXP) X(expm1, EXPM1) X(log, LOG) X(tanh, TANH) X(erf, ERF)
// clang-format on

#if HAVE_MVEC
#define DECLARE_MV32(fn) vec_f32 MV32(fn)(vec_f32);
#define DECLARE_MV64(fn) vec_f64 MV64(fn)(vec_f64);
MVEC_F32_DIRECT(DECLARE_MV32)
MVEC_F32_DIRECT(DECLARE_MV64)
MVEC_F32_PROMOTED(DECLARE_MV64)
vec_f64 MV64V(atan2)(vec_f64, vec_f64);
vec_f64 MV64V(pow)(vec_f64, vec_f64);
#endif

/* logistic(x) = 1 / (1 + exp(-x)), computed with e = exp(-|x|) as 1 / (1 + e) for x >= 0 and
 * e / (1 + e) below: nothing overflows and tiny results keep their relative precision. */
static inline double logistic_f64(double x) {
    double e = exp(-fabs(x));
    return x >= 0 ? 1 / (1 + e) : x < 0 ? e / (1 + e) : x; /* NaN stays */
}

/* Lane conversions between VW32 floats and two vectors of VW64 doubles, and whole-vector
 * loads and stores. */
#if defined(__AVX512F__)
static inline vec_f64 widen_lo(vec_f32 v) {
    return _mm512_cvtps_pd(_mm512_castps512_ps256(v));
}
static inline vec_f64 widen_hi(vec_f32 v) {
    return _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
}
static inline vec_f32 narrow(vec_f64 lo, vec_f64 hi) {
    __m512d l = _mm512_castps_pd(_mm512_castps256_ps512(_mm512_cvtpd_ps(lo)));
    return _mm512_castpd_ps(_mm512_insertf64x4(l, _mm256_castps_pd(_mm512_cvtpd_ps(hi)), 1));
}
static inline vec_f32 load_f32(const float *p) {
    return _mm512_loadu_ps(p);
}
static inline void store_f32(float *p, vec_f32 v) {
    _mm512_storeu_ps(p, v);
}
#elif defined(__AVX2__)
static inline vec_f64 widen_lo(vec_f32 v) {
    return _mm256_cvtps_pd(_mm256_castps256_ps128(v));
}
static inline vec_f64 widen_hi(vec_f32 v) {
    return _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1));
}
static inline vec_f32 narrow(vec_f64 lo, vec_f64 hi) {
    return _mm256_insertf128_ps(_mm256_castps128_ps256(_mm256_cvtpd_ps(lo)), _mm256_cvtpd_ps(hi),
                                1);
}
static inline vec_f32 load_f32(const float *p) {
    return _mm256_loadu_ps(p);
}
static inline void store_f32(float *p, vec_f32 v) {
    _mm256_storeu_ps(p, v);
}
#else
static inline vec_f32 load_f32(const float *p) {
    return *p;
}
static inline void store_f32(float *p, vec_f32 v) {
    *p = v;
}
#endif

#if HAVE_MVEC
/* An f32 vector function evaluated on f64 lanes and rounded once. */
#define DEF_PROMOTED_FN(name, VFN64)                                                               \
    static inline vec_f32 name(vec_f32 v) {                                                        \
        return narrow(VFN64(widen_lo(v)), VFN64(widen_hi(v)));                                     \
    }
#define DEF_PROMOTED_FN2(name, VFN64)                                                              \
    static inline vec_f32 name(vec_f32 a, vec_f32 b) {                                             \
        return narrow(VFN64(widen_lo(a), widen_lo(b)), VFN64(widen_hi(a), widen_hi(b)));           \
    }
#else
#define DEF_PROMOTED_FN(name, VFN64)                                                               \
    static inline vec_f32 name(vec_f32 v) {                                                        \
        return (float)VFN64((double)v);                                                            \
    }
#define DEF_PROMOTED_FN2(name, VFN64)                                                              \
    static inline vec_f32 name(vec_f32 a, vec_f32 b) {                                             \
        return (float)VFN64((double)a, (double)b);                                                 \
    }
#endif

int ax_elementwise_vector_lanes(void) {
    return HAVE_MVEC ? VW32 : 1;
}

/* Loads VW32 floats of a strided row into t, padding past the end with a harmless value;
 * returns how many are real. */
static inline int64_t gather_f32(float *t, const float *x, int64_t s, int64_t i, int64_t n) {
    int64_t m = n - i < VW32 ? n - i : VW32;
    for (int64_t j = 0; j < VW32; j++) t[j] = j < m ? x[(i + j) * s] : 0.5f;
    return m;
}

/* Kernels applying a vector function VW32 elements at a time. Tails and strided rows are
 * gathered into a full vector, so every element goes through the same vector code whatever its
 * position, stride or thread: results never depend on how an array is laid out or split. */
#define DEF_VMAP_F32(name, VFN)                                                                    \
    static void name(int64_t n, const char *const *in, const int64_t *inc, char *out,              \
                     const void *aux) {                                                            \
        (void)aux;                                                                                 \
        const float *x = (const float *)in[0];                                                     \
        float *y = (float *)out;                                                                   \
        int64_t i = 0;                                                                             \
        if (inc[0] == 1)                                                                           \
            for (; i + VW32 <= n; i += VW32) {                                                     \
                if ((i & 15) == 0) ax_prefetch_ahead(x + i); /* once per line (vecmath.h) */       \
                store_f32(y + i, VFN(load_f32(x + i)));                                            \
            }                                                                                      \
        for (; i < n; i += VW32) {                                                                 \
            _Alignas(64) float t[VW32];                                                            \
            int64_t m = gather_f32(t, x, inc[0], i, n);                                            \
            store_f32(t, VFN(load_f32(t)));                                                        \
            for (int64_t j = 0; j < m; j++) y[i + j] = t[j];                                       \
        }                                                                                          \
    }

#define DEF_VMAP2_F32(name, VFN)                                                                   \
    static void name(int64_t n, const char *const *in, const int64_t *inc, char *out,              \
                     const void *aux) {                                                            \
        (void)aux;                                                                                 \
        const float *a = (const float *)in[0], *b = (const float *)in[1];                          \
        float *y = (float *)out;                                                                   \
        int64_t i = 0;                                                                             \
        if (inc[0] == 1 && inc[1] == 1)                                                            \
            for (; i + VW32 <= n; i += VW32)                                                       \
                store_f32(y + i, VFN(load_f32(a + i), load_f32(b + i)));                           \
        for (; i < n; i += VW32) {                                                                 \
            _Alignas(64) float ta[VW32], tb[VW32];                                                 \
            int64_t m = gather_f32(ta, a, inc[0], i, n);                                           \
            gather_f32(tb, b, inc[1], i, n);                                                       \
            store_f32(ta, VFN(load_f32(ta), load_f32(tb)));                                        \
            for (int64_t j = 0; j < m; j++) y[i + j] = ta[j];                                      \
        }                                                                                          \
    }

#define DEF_PROMOTED_F32(fn)                                                                       \
    DEF_PROMOTED_FN(promoted_##fn, MV64(fn))                                                       \
    DEF_VMAP_F32(k_##fn##_f32, promoted_##fn)
/* The accuracy figures above are for the AVX-512 variants; elsewhere (AVX2's cbrtf is 2.3 ulp)
 * every function takes the f64 route. */
#if defined(__AVX512F__)
#define DEF_DIRECT_F32(fn) DEF_VMAP_F32(k_##fn##_f32, MV32(fn))
#else
#define DEF_DIRECT_F32(fn) DEF_PROMOTED_F32(fn)
#endif
MVEC_F32_DIRECT(DEF_DIRECT_F32)
MVEC_F32_PROMOTED(DEF_PROMOTED_F32)

#define DEF_VECMATH_F32(fn, FN)                                                                    \
    static void k_##fn##_f32(int64_t n, const char *const *in, const int64_t *inc, char *out,      \
                             const void *aux) {                                                    \
        (void)aux;                                                                                 \
        ax_vecmath_f32(AX_VM_##FN, n, (const float *)in[0], inc[0], (float *)out);                 \
    }
VECMATH_F32(DEF_VECMATH_F32)
DEF_VECMATH_F32(logistic, LOGISTIC)
DEF_PROMOTED_FN2(promoted_atan2, MV64V(atan2))
DEF_PROMOTED_FN2(promoted_pow, MV64V(pow))
DEF_VMAP2_F32(k_atan2_f32, promoted_atan2)
DEF_VMAP2_F32(k_pow_f32, promoted_pow)

/* ------------------------------------------------------------------------------------------
 * Kernel generators for plain loops. EXPR reads `v` (unary) or `a`, `b` (binary). */

#define DEF_UNARY(name, T, R, EXPR)                                                                \
    static void name(int64_t n, const char *const *in, const int64_t *inc, char *out,              \
                     const void *aux) {                                                            \
        (void)aux;                                                                                 \
        const T *x = (const T *)in[0];                                                             \
        R *y = (R *)out;                                                                           \
        int64_t s = inc[0];                                                                        \
        if (s == 1) {                                                                              \
            for (int64_t i = 0; i < n; i++) {                                                      \
                T v = x[i];                                                                        \
                y[i] = (R)(EXPR);                                                                  \
            }                                                                                      \
        } else {                                                                                   \
            for (int64_t i = 0; i < n; i++) {                                                      \
                T v = x[i * s];                                                                    \
                y[i] = (R)(EXPR);                                                                  \
            }                                                                                      \
        }                                                                                          \
    }

/* For scalar-only operations (a libm call, a division): one strided loop is as fast. */
#define DEF_UNARY_SCALAR(name, T, R, EXPR)                                                         \
    static void name(int64_t n, const char *const *in, const int64_t *inc, char *out,              \
                     const void *aux) {                                                            \
        (void)aux;                                                                                 \
        const T *x = (const T *)in[0];                                                             \
        R *y = (R *)out;                                                                           \
        for (int64_t i = 0; i < n; i++) {                                                          \
            T v = x[i * inc[0]];                                                                   \
            y[i] = (R)(EXPR);                                                                      \
        }                                                                                          \
    }

#define DEF_BINARY(name, T, R, EXPR)                                                               \
    static void name(int64_t n, const char *const *in, const int64_t *inc, char *out,              \
                     const void *aux) {                                                            \
        (void)aux;                                                                                 \
        const T *pa = (const T *)in[0], *pb = (const T *)in[1];                                    \
        R *y = (R *)out;                                                                           \
        int64_t sa = inc[0], sb = inc[1];                                                          \
        if (sa == 1 && sb == 1) {                                                                  \
            for (int64_t i = 0; i < n; i++) {                                                      \
                T a = pa[i], b = pb[i];                                                            \
                y[i] = (R)(EXPR);                                                                  \
            }                                                                                      \
        } else if (sa == 1 && sb == 0) {                                                           \
            T b = pb[0];                                                                           \
            for (int64_t i = 0; i < n; i++) {                                                      \
                T a = pa[i];                                                                       \
                y[i] = (R)(EXPR);                                                                  \
            }                                                                                      \
        } else if (sa == 0 && sb == 1) {                                                           \
            T a = pa[0];                                                                           \
            for (int64_t i = 0; i < n; i++) {                                                      \
                T b = pb[i];                                                                       \
                y[i] = (R)(EXPR);                                                                  \
            }                                                                                      \
        } else {                                                                                   \
            for (int64_t i = 0; i < n; i++) {                                                      \
                T a = pa[i * sa], b = pb[i * sb];                                                  \
                y[i] = (R)(EXPR);                                                                  \
            }                                                                                      \
        }                                                                                          \
    }

#define DEF_BINARY_SCALAR(name, T, R, EXPR)                                                        \
    static void name(int64_t n, const char *const *in, const int64_t *inc, char *out,              \
                     const void *aux) {                                                            \
        (void)aux;                                                                                 \
        const T *pa = (const T *)in[0], *pb = (const T *)in[1];                                    \
        R *y = (R *)out;                                                                           \
        for (int64_t i = 0; i < n; i++) {                                                          \
            T a = pa[i * inc[0]], b = pb[i * inc[1]];                                              \
            y[i] = (R)(EXPR);                                                                      \
        }                                                                                          \
    }

/* ------------------------------------------------------------------------------------------
 * Float kernels. F is libm's suffix for the type ("f" or nothing). */

#define FLOAT_HELPERS(sfx, T, F)                                                                   \
    /* XLA's sign: +-1, keeping the sign of zero and NaN itself. */                                \
    static inline T sign_##sfx(T v) {                                                              \
        return v != v ? v : v == 0 ? v : copysign##F(1, v);                                        \
    }                                                                                              \
    /* NaN-propagating max / min, as lax.max / lax.min. */                                         \
    static inline T max_##sfx(T a, T b) {                                                          \
        return (a >= b || a != a) ? a : b;                                                         \
    }                                                                                              \
    static inline T min_##sfx(T a, T b) {                                                          \
        return (a <= b || a != a) ? a : b;                                                         \
    }                                                                                              \
    /* jnp.floor_divide on floats (CPython's float divmod, as JAX computes it). */                 \
    static inline T floordiv_##sfx(T a, T b) {                                                     \
        T m = fmod##F(a, b);                                                                       \
        T d = (a - m) / b;                                                                         \
        if (m != 0 && ((b < 0) != (m < 0))) d -= 1;                                                \
        return round##F(d);                                                                        \
    }                                                                                              \
    /* jnp.remainder on floats: the result takes the sign of b. */                                 \
    static inline T mod_##sfx(T a, T b) {                                                          \
        T m = fmod##F(a, b);                                                                       \
        return (m != 0 && ((m < 0) != (b < 0))) ? m + b : m;                                       \
    }

FLOAT_HELPERS(f32, float, f)
FLOAT_HELPERS(f64, double, )

#define FLOAT_KERNELS(sfx, T, F)                                                                   \
    DEF_UNARY(k_neg_##sfx, T, T, -v)                                                               \
    DEF_UNARY(k_abs_##sfx, T, T, fabs##F(v))                                                       \
    DEF_UNARY(k_sign_##sfx, T, T, sign_##sfx(v))                                                   \
    DEF_UNARY(k_sqrt_##sfx, T, T, sqrt##F(v))                                                      \
    DEF_UNARY(k_rsqrt_##sfx, T, T, 1 / sqrt##F(v))                                                 \
    DEF_UNARY(k_floor_##sfx, T, T, floor##F(v))                                                    \
    DEF_UNARY(k_ceil_##sfx, T, T, ceil##F(v))                                                      \
    DEF_UNARY(k_round_##sfx, T, T, rint##F(v)) /* half to even: the default rounding mode */       \
    DEF_UNARY(k_square_##sfx, T, T, v *v)                                                          \
    DEF_UNARY(k_is_finite_##sfx, T, uint8_t, isfinite(v))                                          \
    DEF_UNARY_SCALAR(k_erf_inv_##sfx, T, T, ax_erf_inv_##sfx(v))                                   \
    DEF_UNARY_SCALAR(k_lgamma_##sfx, T, T, ax_lgamma_##sfx(v))                                     \
    DEF_UNARY_SCALAR(k_digamma_##sfx, T, T, ax_digamma_##sfx(v))                                   \
    DEF_BINARY(k_add_##sfx, T, T, a + b)                                                           \
    DEF_BINARY(k_sub_##sfx, T, T, a - b)                                                           \
    DEF_BINARY(k_mul_##sfx, T, T, a *b)                                                            \
    DEF_BINARY(k_div_##sfx, T, T, a / b)                                                           \
    DEF_BINARY(k_max_##sfx, T, T, max_##sfx(a, b))                                                 \
    DEF_BINARY(k_min_##sfx, T, T, min_##sfx(a, b))                                                 \
    DEF_BINARY_SCALAR(k_floordiv_##sfx, T, T, floordiv_##sfx(a, b))                                \
    DEF_BINARY_SCALAR(k_rem_##sfx, T, T, fmod##F(a, b))                                            \
    DEF_BINARY_SCALAR(k_mod_##sfx, T, T, mod_##sfx(a, b))                                          \
    DEF_BINARY_SCALAR(k_nextafter_##sfx, T, T, nextafter##F(a, b))                                 \
    DEF_BINARY(k_eq_##sfx, T, uint8_t, a == b)                                                     \
    DEF_BINARY(k_ne_##sfx, T, uint8_t, a != b)                                                     \
    DEF_BINARY(k_lt_##sfx, T, uint8_t, a < b)                                                      \
    DEF_BINARY(k_le_##sfx, T, uint8_t, a <= b)                                                     \
    DEF_BINARY(k_gt_##sfx, T, uint8_t, a > b)                                                      \
    DEF_BINARY(k_ge_##sfx, T, uint8_t, a >= b)

FLOAT_KERNELS(f32, float, f)
FLOAT_KERNELS(f64, double, )

/* f64 transcendental functions: glibc's scalar ones (see "Vector math"). */
#define DEF_SCALAR_F64(fn)      DEF_UNARY_SCALAR(k_##fn##_f64, double, double, fn(v))
#define DEF_VECMATH_F64(fn, FN) DEF_SCALAR_F64(fn)
MVEC_F32_DIRECT(DEF_SCALAR_F64)
MVEC_F32_PROMOTED(DEF_SCALAR_F64)
VECMATH_F32(DEF_VECMATH_F64)
DEF_UNARY_SCALAR(k_logistic_f64, double, double, logistic_f64(v))
DEF_BINARY_SCALAR(k_atan2_f64, double, double, atan2(a, b))
DEF_BINARY_SCALAR(k_pow_f64, double, double, pow(a, b))

#define FLOAT_UNARY_TABLE(sfx)                                                                     \
    {                                                                                              \
        [AX_NEG] = k_neg_##sfx, [AX_ABS] = k_abs_##sfx, [AX_SIGN] = k_sign_##sfx,                  \
        [AX_EXP] = k_exp_##sfx, [AX_EXP2] = k_exp2_##sfx, [AX_LOG] = k_log_##sfx,                  \
        [AX_LOG1P] = k_log1p_##sfx, [AX_EXPM1] = k_expm1_##sfx, [AX_SIN] = k_sin_##sfx,            \
        [AX_COS] = k_cos_##sfx, [AX_TAN] = k_tan_##sfx, [AX_ASIN] = k_asin_##sfx,                  \
        [AX_ACOS] = k_acos_##sfx, [AX_ATAN] = k_atan_##sfx, [AX_SINH] = k_sinh_##sfx,              \
        [AX_COSH] = k_cosh_##sfx, [AX_TANH] = k_tanh_##sfx, [AX_ASINH] = k_asinh_##sfx,            \
        [AX_ACOSH] = k_acosh_##sfx, [AX_ATANH] = k_atanh_##sfx, [AX_LOGISTIC] = k_logistic_##sfx,  \
        [AX_SQRT] = k_sqrt_##sfx, [AX_RSQRT] = k_rsqrt_##sfx, [AX_CBRT] = k_cbrt_##sfx,            \
        [AX_FLOOR] = k_floor_##sfx, [AX_CEIL] = k_ceil_##sfx, [AX_ROUND] = k_round_##sfx,          \
        [AX_ERF] = k_erf_##sfx, [AX_ERFC] = k_erfc_##sfx, [AX_ERF_INV] = k_erf_inv_##sfx,          \
        [AX_LGAMMA] = k_lgamma_##sfx, [AX_DIGAMMA] = k_digamma_##sfx,                              \
        [AX_IS_FINITE] = k_is_finite_##sfx, [AX_SQUARE] = k_square_##sfx,                          \
    }

#define FLOAT_BINARY_TABLE(sfx)                                                                    \
    {                                                                                              \
        [AX_ADD] = k_add_##sfx, [AX_SUB] = k_sub_##sfx, [AX_MUL] = k_mul_##sfx,                    \
        [AX_DIV] = k_div_##sfx, [AX_FLOOR_DIV] = k_floordiv_##sfx, [AX_REM] = k_rem_##sfx,         \
        [AX_MOD] = k_mod_##sfx, [AX_POW] = k_pow_##sfx, [AX_MAX] = k_max_##sfx,                    \
        [AX_MIN] = k_min_##sfx, [AX_ATAN2] = k_atan2_##sfx, [AX_NEXTAFTER] = k_nextafter_##sfx,    \
        [AX_EQ] = k_eq_##sfx, [AX_NE] = k_ne_##sfx, [AX_LT] = k_lt_##sfx, [AX_LE] = k_le_##sfx,    \
        [AX_GT] = k_gt_##sfx, [AX_GE] = k_ge_##sfx,                                                \
    }

/* ------------------------------------------------------------------------------------------
 * Integer kernels. T is the type, U its unsigned twin (wrapping arithmetic without UB), S its
 * signed twin (arithmetic shifts of unsigned types shift the bit pattern, as XLA does). */

#define INT_COMMON_HELPERS(sfx, T, U, S, BITS, SIGNED)                                             \
    static inline T shl_##sfx(T a, T b) {                                                          \
        return (U)b >= BITS ? 0 : (T)((U)a << (U)b);                                               \
    }                                                                                              \
    static inline T shrl_##sfx(T a, T b) {                                                         \
        return (U)b >= BITS ? 0 : (T)((U)a >> (U)b);                                               \
    }                                                                                              \
    static inline T shra_##sfx(T a, T b) {                                                         \
        return (T)((U)b >= BITS ? ((S)a < 0 ? (S)-1 : 0) : (S)a >> (U)b);                          \
    }                                                                                              \
    /* Repeated squaring with wrapping products; negative exponents as lax.pow. */                 \
    static inline T ipow_##sfx(T a, T b) {                                                         \
        if (SIGNED && (S)b < 0) return a == 1 ? 1 : (S)a == -1 ? (T)((b & 1) ? -1 : 1) : 0;        \
        U r = 1, x = (U)a, e = (U)b;                                                               \
        for (; e; e >>= 1) {                                                                       \
            if (e & 1) r = (U)(r * x);                                                             \
            x = (U)(x * x);                                                                        \
        }                                                                                          \
        return (T)r;                                                                               \
    }

#define SIGNED_HELPERS(sfx, T, U)                                                                  \
    static inline T div_##sfx(T a, T b) {                                                          \
        if (b == 0) return 0;                                                                      \
        if (b == -1) return (T)(0 - (U)a); /* INT_MIN / -1 wraps to INT_MIN */                     \
        return a / b;                                                                              \
    }                                                                                              \
    static inline T rem_##sfx(T a, T b) {                                                          \
        return b == 0 || b == -1 ? 0 : a % b;                                                      \
    }                                                                                              \
    static inline T floordiv_##sfx(T a, T b) {                                                     \
        T q = div_##sfx(a, b), r = rem_##sfx(a, b);                                                \
        return r != 0 && ((r < 0) != (b < 0)) ? q - 1 : q;                                         \
    }                                                                                              \
    static inline T mod_##sfx(T a, T b) {                                                          \
        T r = rem_##sfx(a, b);                                                                     \
        return r != 0 && ((r < 0) != (b < 0)) ? (T)((U)r + (U)b) : r;                              \
    }                                                                                              \
    static inline T abs_##sfx(T v) {                                                               \
        return v < 0 ? (T)(0 - (U)v) : v;                                                          \
    }                                                                                              \
    static inline T sign_##sfx(T v) {                                                              \
        return (T)((v > 0) - (v < 0));                                                             \
    }

#define UNSIGNED_HELPERS(sfx, T, U)                                                                \
    static inline T div_##sfx(T a, T b) {                                                          \
        return b == 0 ? 0 : (T)(a / b);                                                            \
    }                                                                                              \
    static inline T rem_##sfx(T a, T b) {                                                          \
        return b == 0 ? 0 : (T)(a % b);                                                            \
    }                                                                                              \
    static inline T floordiv_##sfx(T a, T b) {                                                     \
        return div_##sfx(a, b);                                                                    \
    }                                                                                              \
    static inline T mod_##sfx(T a, T b) {                                                          \
        return rem_##sfx(a, b);                                                                    \
    }                                                                                              \
    static inline T abs_##sfx(T v) {                                                               \
        return v;                                                                                  \
    }                                                                                              \
    static inline T sign_##sfx(T v) {                                                              \
        return (T)(v != 0);                                                                        \
    }

SIGNED_HELPERS(i32, int32_t, uint32_t)
SIGNED_HELPERS(i64, int64_t, uint64_t)
UNSIGNED_HELPERS(u8, uint8_t, uint8_t)
UNSIGNED_HELPERS(u32, uint32_t, uint32_t)
INT_COMMON_HELPERS(i32, int32_t, uint32_t, int32_t, 32, 1)
INT_COMMON_HELPERS(i64, int64_t, uint64_t, int64_t, 64, 1)
INT_COMMON_HELPERS(u8, uint8_t, uint8_t, int8_t, 8, 0)
INT_COMMON_HELPERS(u32, uint32_t, uint32_t, int32_t, 32, 0)

#define INT_KERNELS(sfx, T, U)                                                                     \
    DEF_UNARY(k_neg_##sfx, T, T, (T)(0 - (U)v))                                                    \
    DEF_UNARY(k_abs_##sfx, T, T, abs_##sfx(v))                                                     \
    DEF_UNARY(k_sign_##sfx, T, T, sign_##sfx(v))                                                   \
    DEF_UNARY(k_not_##sfx, T, T, (T)~v)                                                            \
    DEF_UNARY(k_square_##sfx, T, T, (T)((U)v * (U)v))                                              \
    DEF_UNARY(k_copy_##sfx, T, T, v)                                                               \
    DEF_UNARY(k_is_finite_##sfx, T, uint8_t, ((void)v, 1))                                         \
    DEF_BINARY(k_add_##sfx, T, T, (T)((U)a + (U)b))                                                \
    DEF_BINARY(k_sub_##sfx, T, T, (T)((U)a - (U)b))                                                \
    DEF_BINARY(k_mul_##sfx, T, T, (T)((U)a * (U)b))                                                \
    DEF_BINARY_SCALAR(k_div_##sfx, T, T, div_##sfx(a, b))                                          \
    DEF_BINARY_SCALAR(k_floordiv_##sfx, T, T, floordiv_##sfx(a, b))                                \
    DEF_BINARY_SCALAR(k_rem_##sfx, T, T, rem_##sfx(a, b))                                          \
    DEF_BINARY_SCALAR(k_mod_##sfx, T, T, mod_##sfx(a, b))                                          \
    DEF_BINARY_SCALAR(k_pow_##sfx, T, T, ipow_##sfx(a, b))                                         \
    DEF_BINARY(k_max_##sfx, T, T, a > b ? a : b)                                                   \
    DEF_BINARY(k_min_##sfx, T, T, a < b ? a : b)                                                   \
    DEF_BINARY(k_eq_##sfx, T, uint8_t, a == b)                                                     \
    DEF_BINARY(k_ne_##sfx, T, uint8_t, a != b)                                                     \
    DEF_BINARY(k_lt_##sfx, T, uint8_t, a < b)                                                      \
    DEF_BINARY(k_le_##sfx, T, uint8_t, a <= b)                                                     \
    DEF_BINARY(k_gt_##sfx, T, uint8_t, a > b)                                                      \
    DEF_BINARY(k_ge_##sfx, T, uint8_t, a >= b)                                                     \
    DEF_BINARY(k_and_##sfx, T, T, a &b)                                                            \
    DEF_BINARY(k_or_##sfx, T, T, a | b)                                                            \
    DEF_BINARY(k_xor_##sfx, T, T, a ^ b)                                                           \
    DEF_BINARY(k_shl_##sfx, T, T, shl_##sfx(a, b))                                                 \
    DEF_BINARY(k_shrl_##sfx, T, T, shrl_##sfx(a, b))                                               \
    DEF_BINARY(k_shra_##sfx, T, T, shra_##sfx(a, b))

INT_KERNELS(u8, uint8_t, uint8_t)
INT_KERNELS(i32, int32_t, uint32_t)
INT_KERNELS(u32, uint32_t, uint32_t)
INT_KERNELS(i64, int64_t, uint64_t)

/* floor / ceil / round are the identity on integers (jnp returns integer input unchanged). */
#define INT_UNARY_TABLE(sfx)                                                                       \
    {                                                                                              \
        [AX_NEG] = k_neg_##sfx, [AX_ABS] = k_abs_##sfx, [AX_SIGN] = k_sign_##sfx,                  \
        [AX_FLOOR] = k_copy_##sfx, [AX_CEIL] = k_copy_##sfx, [AX_ROUND] = k_copy_##sfx,            \
        [AX_IS_FINITE] = k_is_finite_##sfx, [AX_NOT] = k_not_##sfx, [AX_SQUARE] = k_square_##sfx,  \
    }

#define INT_BINARY_TABLE(sfx)                                                                      \
    {                                                                                              \
        [AX_ADD] = k_add_##sfx, [AX_SUB] = k_sub_##sfx, [AX_MUL] = k_mul_##sfx,                    \
        [AX_DIV] = k_div_##sfx, [AX_FLOOR_DIV] = k_floordiv_##sfx, [AX_REM] = k_rem_##sfx,         \
        [AX_MOD] = k_mod_##sfx, [AX_POW] = k_pow_##sfx, [AX_MAX] = k_max_##sfx,                    \
        [AX_MIN] = k_min_##sfx, [AX_EQ] = k_eq_##sfx, [AX_NE] = k_ne_##sfx, [AX_LT] = k_lt_##sfx,  \
        [AX_LE] = k_le_##sfx, [AX_GT] = k_gt_##sfx, [AX_GE] = k_ge_##sfx, [AX_AND] = k_and_##sfx,  \
        [AX_OR] = k_or_##sfx, [AX_XOR] = k_xor_##sfx, [AX_SHL] = k_shl_##sfx,                      \
        [AX_SHR_LOGICAL] = k_shrl_##sfx, [AX_SHR_ARITH] = k_shra_##sfx,                            \
    }

/* Bools are bytes holding 0 or 1: u8 kernels serve where they keep that true. */
DEF_UNARY(k_not_bool, uint8_t, uint8_t, v == 0)
DEF_UNARY(k_is_finite_bool, uint8_t, uint8_t, ((void)v, 1))

static const kernel_fn unary_table[AX_NDTYPES][AX_NUNARY] = {
    [AX_F32] = FLOAT_UNARY_TABLE(f32),
    [AX_F64] = FLOAT_UNARY_TABLE(f64),
    [AX_U8] = INT_UNARY_TABLE(u8),
    [AX_I32] = INT_UNARY_TABLE(i32),
    [AX_U32] = INT_UNARY_TABLE(u32),
    [AX_I64] = INT_UNARY_TABLE(i64),
    [AX_BOOL] = {[AX_NOT] = k_not_bool, [AX_IS_FINITE] = k_is_finite_bool},
};

/* On bool, add is logical or and multiply logical and (jnp.add / jnp.multiply). */
static const kernel_fn binary_table[AX_NDTYPES][AX_NBINARY] = {
    [AX_F32] = FLOAT_BINARY_TABLE(f32),
    [AX_F64] = FLOAT_BINARY_TABLE(f64),
    [AX_U8] = INT_BINARY_TABLE(u8),
    [AX_I32] = INT_BINARY_TABLE(i32),
    [AX_U32] = INT_BINARY_TABLE(u32),
    [AX_I64] = INT_BINARY_TABLE(i64),
    [AX_BOOL] = {[AX_ADD] = k_or_u8,
                 [AX_MUL] = k_and_u8,
                 [AX_MAX] = k_or_u8,
                 [AX_MIN] = k_and_u8,
                 [AX_EQ] = k_eq_u8,
                 [AX_NE] = k_ne_u8,
                 [AX_LT] = k_lt_u8,
                 [AX_LE] = k_le_u8,
                 [AX_GT] = k_gt_u8,
                 [AX_GE] = k_ge_u8,
                 [AX_AND] = k_and_u8,
                 [AX_OR] = k_or_u8,
                 [AX_XOR] = k_xor_u8},
};

/* ------------------------------------------------------------------------------------------
 * integer_pow: x ** k by the same sequence of products as JAX's lowering, so float results
 * match it bit for bit; negative k takes the reciprocal at the end. */

#define DEF_INTEGER_POW(sfx, T, U, RECIP)                                                          \
    static inline T integer_pow1_##sfx(T x, int64_t k) {                                           \
        uint64_t e = k < 0 ? 0 - (uint64_t)k : (uint64_t)k;                                        \
        T acc = 1;                                                                                 \
        bool first = true;                                                                         \
        while (e > 0) {                                                                            \
            if (e & 1) {                                                                           \
                acc = first ? x : (T)((U)acc * (U)x);                                              \
                first = false;                                                                     \
            }                                                                                      \
            e >>= 1;                                                                               \
            if (e > 0) x = (T)((U)x * (U)x);                                                       \
        }                                                                                          \
        return k < 0 ? RECIP(acc) : acc;                                                           \
    }                                                                                              \
    DEF_UNARY_SCALAR(k_integer_pow_##sfx, T, T, integer_pow1_##sfx(v, *(const int64_t *)aux))

#define FLOAT_RECIP(x) (1 / (x))
DEF_INTEGER_POW(f32, float, float, FLOAT_RECIP)
DEF_INTEGER_POW(f64, double, double, FLOAT_RECIP)
#define RECIP_u8(x)  div_u8(1, x)
#define RECIP_i32(x) div_i32(1, x)
#define RECIP_u32(x) div_u32(1, x)
#define RECIP_i64(x) div_i64(1, x)
DEF_INTEGER_POW(u8, uint8_t, uint8_t, RECIP_u8)
DEF_INTEGER_POW(i32, int32_t, uint32_t, RECIP_i32)
DEF_INTEGER_POW(u32, uint32_t, uint32_t, RECIP_u32)
DEF_INTEGER_POW(i64, int64_t, uint64_t, RECIP_i64)

static const kernel_fn integer_pow_table[AX_NDTYPES] = {
    [AX_F32] = k_integer_pow_f32, [AX_F64] = k_integer_pow_f64, [AX_U8] = k_integer_pow_u8,
    [AX_I32] = k_integer_pow_i32, [AX_U32] = k_integer_pow_u32, [AX_I64] = k_integer_pow_i64,
};

/* ------------------------------------------------------------------------------------------
 * select (by element size) and clamp (by dtype). Operands: in[0], in[1], in[2]. */

/* Both values are loaded whatever the predicate, so that the loops are blends, not branches:
 * a branch on a mask such as relu's (x > 0 on data centred at 0) mispredicts every other
 * element, and the scalar case (where(x > 0, g, 0.0), relu's gradient) took the strided loop.
 * The 128x128 selects of conformance 17's SGD step took 20% of its eager time (perf). */
#define DEF_SELECT(name, T)                                                                        \
    static void name(int64_t n, const char *const *in, const int64_t *inc, char *out,              \
                     const void *aux) {                                                            \
        (void)aux;                                                                                 \
        const uint8_t *p = (const uint8_t *)in[0];                                                 \
        const T *a = (const T *)in[1], *b = (const T *)in[2];                                      \
        T *y = (T *)out;                                                                           \
        int64_t sp = inc[0], sa = inc[1], sb = inc[2];                                             \
        if (sp == 1 && sa == 1 && sb == 1) {                                                       \
            for (int64_t i = 0; i < n; i++) {                                                      \
                T av = a[i], bv = b[i];                                                            \
                y[i] = p[i] ? av : bv;                                                             \
            }                                                                                      \
        } else if (sp == 1 && sa == 1 && sb == 0) {                                                \
            T bv = b[0];                                                                           \
            for (int64_t i = 0; i < n; i++) {                                                      \
                T av = a[i];                                                                       \
                y[i] = p[i] ? av : bv;                                                             \
            }                                                                                      \
        } else if (sp == 1 && sa == 0 && sb == 1) {                                                \
            T av = a[0];                                                                           \
            for (int64_t i = 0; i < n; i++) {                                                      \
                T bv = b[i];                                                                       \
                y[i] = p[i] ? av : bv;                                                             \
            }                                                                                      \
        } else {                                                                                   \
            for (int64_t i = 0; i < n; i++) {                                                      \
                T av = a[i * sa], bv = b[i * sb];                                                  \
                y[i] = p[i * sp] ? av : bv;                                                        \
            }                                                                                      \
        }                                                                                          \
    }
DEF_SELECT(k_select_1, uint8_t)
DEF_SELECT(k_select_4, uint32_t)
DEF_SELECT(k_select_8, uint64_t)

#define DEF_CLAMP(name, T, MAX, MIN)                                                               \
    static void name(int64_t n, const char *const *in, const int64_t *inc, char *out,              \
                     const void *aux) {                                                            \
        (void)aux;                                                                                 \
        const T *lo = (const T *)in[0], *x = (const T *)in[1], *hi = (const T *)in[2];             \
        T *y = (T *)out;                                                                           \
        if (inc[0] == 0 && inc[1] == 1 && inc[2] == 0) {                                           \
            T l = lo[0], h = hi[0];                                                                \
            for (int64_t i = 0; i < n; i++) y[i] = MIN(MAX(x[i], l), h);                           \
        } else {                                                                                   \
            for (int64_t i = 0; i < n; i++)                                                        \
                y[i] = MIN(MAX(x[i * inc[1]], lo[i * inc[0]]), hi[i * inc[2]]);                    \
        }                                                                                          \
    }
#define INT_MAX_OF(a, b) ((a) > (b) ? (a) : (b))
#define INT_MIN_OF(a, b) ((a) < (b) ? (a) : (b))
DEF_CLAMP(k_clamp_f32, float, max_f32, min_f32)
DEF_CLAMP(k_clamp_f64, double, max_f64, min_f64)
DEF_CLAMP(k_clamp_u8, uint8_t, INT_MAX_OF, INT_MIN_OF)
DEF_CLAMP(k_clamp_i32, int32_t, INT_MAX_OF, INT_MIN_OF)
DEF_CLAMP(k_clamp_u32, uint32_t, INT_MAX_OF, INT_MIN_OF)
DEF_CLAMP(k_clamp_i64, int64_t, INT_MAX_OF, INT_MIN_OF)

static const kernel_fn clamp_table[AX_NDTYPES] = {
    [AX_F32] = k_clamp_f32, [AX_F64] = k_clamp_f64, [AX_U8] = k_clamp_u8,   [AX_BOOL] = k_clamp_u8,
    [AX_I32] = k_clamp_i32, [AX_U32] = k_clamp_u32, [AX_I64] = k_clamp_i64,
};

/* ------------------------------------------------------------------------------------------
 * convert: XLA's conversions. Float -> int truncates toward zero and saturates (NaN -> 0,
 * out of range -> the nearest representable end); int -> int wraps; -> bool is != 0
 * (NaN -> true); bool -> number is 0 / 1. */

#define DEF_FLOAT_TO_INT(name, T, LO, HI)                                                          \
    static inline T name(double v) {                                                               \
        return v != v ? 0 : v <= (double)(LO) ? (T)(LO) : v >= (double)(HI) ? (T)(HI) : (T)v;      \
    }
DEF_FLOAT_TO_INT(sat_u8, uint8_t, 0, UINT8_MAX)
DEF_FLOAT_TO_INT(sat_i32, int32_t, INT32_MIN, INT32_MAX)
DEF_FLOAT_TO_INT(sat_u32, uint32_t, 0, UINT32_MAX)
DEF_FLOAT_TO_INT(sat_i64, int64_t, INT64_MIN, INT64_MAX)

#define CONVERT_FROM_INT(fs, F)                                                                    \
    DEF_UNARY(k_convert_##fs##_bool, F, uint8_t, v != 0)                                           \
    DEF_UNARY(k_convert_##fs##_u8, F, uint8_t, v)                                                  \
    DEF_UNARY(k_convert_##fs##_i32, F, int32_t, v)                                                 \
    DEF_UNARY(k_convert_##fs##_u32, F, uint32_t, v)                                                \
    DEF_UNARY(k_convert_##fs##_i64, F, int64_t, v)                                                 \
    DEF_UNARY(k_convert_##fs##_f32, F, float, v)                                                   \
    DEF_UNARY(k_convert_##fs##_f64, F, double, v)
#define CONVERT_FROM_FLOAT(fs, F)                                                                  \
    DEF_UNARY(k_convert_##fs##_bool, F, uint8_t, v != 0)                                           \
    DEF_UNARY(k_convert_##fs##_u8, F, uint8_t, sat_u8(v))                                          \
    DEF_UNARY(k_convert_##fs##_i32, F, int32_t, sat_i32(v))                                        \
    DEF_UNARY(k_convert_##fs##_u32, F, uint32_t, sat_u32(v))                                       \
    DEF_UNARY(k_convert_##fs##_i64, F, int64_t, sat_i64(v))                                        \
    DEF_UNARY(k_convert_##fs##_f32, F, float, v)                                                   \
    DEF_UNARY(k_convert_##fs##_f64, F, double, v)
/* A bool source is read as != 0 so that any nonzero byte counts as true. */
DEF_UNARY(k_convert_bool_bool, uint8_t, uint8_t, v != 0)
DEF_UNARY(k_convert_bool_u8, uint8_t, uint8_t, v != 0)
DEF_UNARY(k_convert_bool_i32, uint8_t, int32_t, v != 0)
DEF_UNARY(k_convert_bool_u32, uint8_t, uint32_t, v != 0)
DEF_UNARY(k_convert_bool_i64, uint8_t, int64_t, v != 0)
DEF_UNARY(k_convert_bool_f32, uint8_t, float, v != 0)
DEF_UNARY(k_convert_bool_f64, uint8_t, double, v != 0)
CONVERT_FROM_INT(u8, uint8_t)
CONVERT_FROM_INT(i32, int32_t)
CONVERT_FROM_INT(u32, uint32_t)
CONVERT_FROM_INT(i64, int64_t)
CONVERT_FROM_FLOAT(f32, float)
CONVERT_FROM_FLOAT(f64, double)

#define CONVERT_ROW(fs)                                                                            \
    {                                                                                              \
        [AX_BOOL] = k_convert_##fs##_bool, [AX_U8] = k_convert_##fs##_u8,                          \
        [AX_I32] = k_convert_##fs##_i32, [AX_U32] = k_convert_##fs##_u32,                          \
        [AX_I64] = k_convert_##fs##_i64, [AX_F32] = k_convert_##fs##_f32,                          \
        [AX_F64] = k_convert_##fs##_f64,                                                           \
    }
static const kernel_fn convert_table[AX_NDTYPES][AX_NDTYPES] = {
    [AX_BOOL] = CONVERT_ROW(bool), [AX_U8] = CONVERT_ROW(u8),   [AX_I32] = CONVERT_ROW(i32),
    [AX_U32] = CONVERT_ROW(u32),   [AX_I64] = CONVERT_ROW(i64), [AX_F32] = CONVERT_ROW(f32),
    [AX_F64] = CONVERT_ROW(f64),
};

/* ------------------------------------------------------------------------------------------
 * Driver: an n-d loop over a contiguous output and up to three strided inputs. */

enum {
    MAX_INPUTS = 3,
    /* Items per pool chunk (the pool splits from 2 chunks on). A memory-bound kernel (x * x)
     * gains up to 2x from the second core on data already in place, but a fresh output of
     * 2 MB or more costs page faults, and freeing memory that two threads touched costs TLB
     * shootdowns: measured on this machine, below ~4M elements that outweighs the gain. */
    GRAIN_CHEAP = 1 << 21,
    GRAIN_COSTLY = 4096, /* kernels spending tens of cycles per element: 1.4-2x from 8K up */
    TILE_BYTES = AX_STREAM_TILE_BYTES,
};

typedef struct loop_plan {
    kernel_fn fn;
    const void *aux;
    int nin, ndim;
    int64_t size;
    int64_t shape[AX_MAX_RANK];
    int64_t strides[MAX_INPUTS][AX_MAX_RANK]; /* elements; 0 where broadcast */
    const char *base[MAX_INPUTS];
    size_t in_es[MAX_INPUTS];
    char *out;
    size_t out_es;
    bool stream;
} loop_plan;

/* Strides of input `a` seen through the output shape (NumPy broadcasting, leading 1s). */
static void broadcast_strides(const ax_array *a, int ndim, const int64_t *shape, int64_t *strides) {
    for (int d = 0; d < ndim; d++) {
        int ad = d - (ndim - a->ndim);
        strides[d] = ad < 0 || a->shape[ad] == 1 || shape[d] == 1 ? 0 : a->strides[ad];
    }
}

/* Drops size-1 dimensions and merges neighbours that are contiguous in every operand (the
 * output always is), so that same-shape contiguous operands become a single row. */
static void plan_simplify(loop_plan *p, int ndim, const int64_t *shape,
                          int64_t strides[MAX_INPUTS][AX_MAX_RANK]) {
    int n = 0;
    for (int d = 0; d < ndim; d++) {
        if (shape[d] == 1) continue;
        bool merge = n > 0;
        for (int k = 0; k < p->nin && merge; k++)
            merge = p->strides[k][n - 1] == strides[k][d] * shape[d];
        if (merge) {
            p->shape[n - 1] *= shape[d];
            for (int k = 0; k < p->nin; k++) p->strides[k][n - 1] = strides[k][d];
            continue;
        }
        p->shape[n] = shape[d];
        for (int k = 0; k < p->nin; k++) p->strides[k][n] = strides[k][d];
        n++;
    }
    if (n == 0) {
        p->shape[0] = 1;
        for (int k = 0; k < p->nin; k++) p->strides[k][0] = 0;
        n = 1;
    }
    p->ndim = n;
}

static void plan_init(loop_plan *p, ax_array *out, int nin, ax_array *const *in, kernel_fn fn,
                      const void *aux) {
    int64_t strides[MAX_INPUTS][AX_MAX_RANK];
    p->fn = fn;
    p->aux = aux;
    p->nin = nin;
    p->size = out->size;
    for (int k = 0; k < nin; k++) {
        broadcast_strides(in[k], out->ndim, out->shape, strides[k]);
        p->base[k] = ax_array_data(in[k]);
        p->in_es[k] = ax_dtype_size(in[k]->dtype);
    }
    plan_simplify(p, out->ndim, out->shape, strides);
    p->out = ax_array_data(out);
    p->out_es = ax_dtype_size(out->dtype);
    /* Streaming goes through a staging tile per row: worth it for long rows only. */
    p->stream = (size_t)p->size * p->out_es >= AX_STREAM_MIN_BYTES &&
                (size_t)p->shape[p->ndim - 1] * p->out_es >= TILE_BYTES;
}

void ax_stream_copy(char *dst, const char *src, size_t n) {
#if defined(__SSE2__)
    size_t head = (size_t)(-(uintptr_t)dst & 63);
    if (head > n) head = n;
    memcpy(dst, src, head);
    dst += head, src += head, n -= head;
    for (; n >= 64; n -= 64, dst += 64, src += 64) {
#if defined(__AVX512F__)
        _mm512_stream_si512((void *)dst, _mm512_loadu_si512((const void *)src));
#elif defined(__AVX__)
        _mm256_stream_si256((__m256i *)dst, _mm256_loadu_si256((const __m256i *)src));
        _mm256_stream_si256((__m256i *)(dst + 32), _mm256_loadu_si256((const __m256i *)(src + 32)));
#else
        for (int i = 0; i < 64; i += 16)
            _mm_stream_si128((__m128i *)(dst + i), _mm_loadu_si128((const __m128i *)(src + i)));
#endif
    }
#endif
    memcpy(dst, src, n);
}

void ax_stream_fence(void) {
#if defined(__SSE2__)
    _mm_sfence();
#endif
}

/* One row: n outputs at `out` from inputs at in[k] advancing by inc[k]. */
static void run_row(const loop_plan *p, int64_t n, const char *const *in, const int64_t *inc,
                    char *out) {
    if (!p->stream) {
        p->fn(n, in, inc, out, p->aux);
        return;
    }
    _Alignas(64) char tile[TILE_BYTES];
    int64_t per = TILE_BYTES / (int64_t)p->out_es;
    for (int64_t i = 0; i < n; i += per) {
        int64_t m = n - i < per ? n - i : per;
        const char *src[MAX_INPUTS];
        for (int k = 0; k < p->nin; k++) src[k] = in[k] + i * inc[k] * (int64_t)p->in_es[k];
        p->fn(m, src, inc, tile, p->aux);
        ax_stream_copy(out + i * (int64_t)p->out_es, tile, (size_t)m * p->out_es);
    }
}

/* Outputs [begin, end) in row-major order: a partial first row, whole rows, a partial last. */
static void run_range(void *arg, int64_t begin, int64_t end) {
    const loop_plan *p = arg;
    int last = p->ndim - 1;
    int64_t idx[AX_MAX_RANK], off[MAX_INPUTS] = {0}, inc[MAX_INPUTS];
    int64_t rest = begin;
    for (int d = last; d >= 0; d--) {
        idx[d] = rest % p->shape[d];
        rest /= p->shape[d];
        for (int k = 0; k < p->nin; k++) off[k] += idx[d] * p->strides[k][d];
    }
    for (int k = 0; k < p->nin; k++) inc[k] = p->strides[k][last];
    for (int64_t flat = begin; flat < end;) {
        int64_t n = p->shape[last] - idx[last];
        if (n > end - flat) n = end - flat;
        const char *in[MAX_INPUTS];
        for (int k = 0; k < p->nin; k++) in[k] = p->base[k] + off[k] * (int64_t)p->in_es[k];
        run_row(p, n, in, inc, p->out + flat * (int64_t)p->out_es);
        flat += n;
        /* Advance the multi-index by n (which ends the row or the range). */
        idx[last] += n;
        for (int k = 0; k < p->nin; k++) off[k] += n * inc[k];
        for (int d = last; d > 0 && idx[d] == p->shape[d]; d--) {
            idx[d] = 0;
            idx[d - 1]++;
            for (int k = 0; k < p->nin; k++)
                off[k] += p->strides[k][d - 1] - p->shape[d] * p->strides[k][d];
        }
    }
    if (p->stream) ax_stream_fence(); /* order the streamed stores before the pool's release */
}

static void run_elementwise(ax_ctx *cx, ax_array *out, int nin, ax_array *const *in, kernel_fn fn,
                            const void *aux, int64_t grain) {
    if (out->size == 0) return;
    loop_plan p;
    plan_init(&p, out, nin, in, fn, aux);
    if (p.size < 2 * grain)
        run_range(&p, 0, p.size);
    else
        ax_parallel_for(cx, p.size, grain, run_range, &p);
}

/* ------------------------------------------------------------------------------------------
 * Names, dtype rules, error messages. */

static const char *const unary_names[AX_NUNARY] = {
    [AX_NEG] = "neg",       [AX_ABS] = "abs",         [AX_SIGN] = "sign",
    [AX_EXP] = "exp",       [AX_EXP2] = "exp2",       [AX_LOG] = "log",
    [AX_LOG1P] = "log1p",   [AX_EXPM1] = "expm1",     [AX_SIN] = "sin",
    [AX_COS] = "cos",       [AX_TAN] = "tan",         [AX_ASIN] = "asin",
    [AX_ACOS] = "acos",     [AX_ATAN] = "atan",       [AX_SINH] = "sinh",
    [AX_COSH] = "cosh",     [AX_TANH] = "tanh",       [AX_ASINH] = "asinh",
    [AX_ACOSH] = "acosh",   [AX_ATANH] = "atanh",     [AX_LOGISTIC] = "logistic",
    [AX_SQRT] = "sqrt",     [AX_RSQRT] = "rsqrt",     [AX_CBRT] = "cbrt",
    [AX_FLOOR] = "floor",   [AX_CEIL] = "ceil",       [AX_ROUND] = "round",
    [AX_ERF] = "erf",       [AX_ERFC] = "erfc",       [AX_ERF_INV] = "erf_inv",
    [AX_LGAMMA] = "lgamma", [AX_DIGAMMA] = "digamma", [AX_IS_FINITE] = "is_finite",
    [AX_NOT] = "not",       [AX_SQUARE] = "square",
};

static const char *const binary_names[AX_NBINARY] = {
    [AX_ADD] = "add",
    [AX_SUB] = "sub",
    [AX_MUL] = "mul",
    [AX_DIV] = "div",
    [AX_FLOOR_DIV] = "floor_divide",
    [AX_REM] = "rem",
    [AX_MOD] = "mod",
    [AX_POW] = "pow",
    [AX_MAX] = "max",
    [AX_MIN] = "min",
    [AX_ATAN2] = "atan2",
    [AX_NEXTAFTER] = "nextafter",
    [AX_EQ] = "eq",
    [AX_NE] = "ne",
    [AX_LT] = "lt",
    [AX_LE] = "le",
    [AX_GT] = "gt",
    [AX_GE] = "ge",
    [AX_AND] = "and",
    [AX_OR] = "or",
    [AX_XOR] = "xor",
    [AX_SHL] = "shift_left",
    [AX_SHR_LOGICAL] = "shift_right_logical",
    [AX_SHR_ARITH] = "shift_right_arithmetic",
};

static bool unary_op_valid(ax_unary_op op) {
    return (unsigned)op < AX_NUNARY;
}
static bool binary_op_valid(ax_binary_op op) {
    return (unsigned)op < AX_NBINARY;
}
static bool dtype_valid(ax_dtype t) {
    return (unsigned)t < AX_NDTYPES;
}

const char *ax_unary_name(ax_unary_op op) {
    return unary_op_valid(op) ? unary_names[op] : "?";
}
const char *ax_binary_name(ax_binary_op op) {
    return binary_op_valid(op) ? binary_names[op] : "?";
}

bool ax_unary_accepts(ax_unary_op op, ax_dtype t) {
    return unary_op_valid(op) && dtype_valid(t) && unary_table[t][op] != NULL;
}

bool ax_binary_accepts(ax_binary_op op, ax_dtype t) {
    return binary_op_valid(op) && dtype_valid(t) && binary_table[t][op] != NULL;
}

static bool is_comparison(ax_binary_op op) {
    return op >= AX_EQ && op <= AX_GE;
}

ax_dtype ax_binary_result_dtype(ax_binary_op op, ax_dtype t) {
    return is_comparison(op) ? AX_BOOL : t;
}

static ax_dtype unary_result_dtype(ax_unary_op op, ax_dtype t) {
    return op == AX_IS_FINITE ? AX_BOOL : t;
}

/* Operations spending tens of cycles per element are split over threads sooner. */
static int64_t unary_grain(ax_unary_op op, ax_dtype t) {
    bool cheap = !ax_dtype_is_float(t) || op == AX_NEG || op == AX_ABS || op == AX_SIGN ||
                 op == AX_SQUARE || op == AX_FLOOR || op == AX_CEIL || op == AX_ROUND ||
                 op == AX_IS_FINITE || op == AX_SQRT;
    return cheap ? GRAIN_CHEAP : GRAIN_COSTLY;
}

static int64_t binary_grain(ax_binary_op op, ax_dtype t) {
    bool costly = op == AX_FLOOR_DIV || op == AX_REM || op == AX_MOD || op == AX_POW ||
                  op == AX_ATAN2 || op == AX_NEXTAFTER || (op == AX_DIV && !ax_dtype_is_float(t));
    return costly ? GRAIN_COSTLY : GRAIN_CHEAP;
}

/* Kernels need values: an abstract tracer has none. */
static bool check_concrete(ax_ctx *cx, const char *what, const ax_array *a) {
    if (a && a->buf) return true;
    if (!a) {
        ax_error(cx, AX_ERR_RUNTIME, "%s: missing operand", what);
        return false;
    }
    char type[128];
    ax_array_type_format(type, sizeof type, a);
    ax_error(cx, AX_ERR_RUNTIME, "%s needs a concrete array, got an abstract %s", what, type);
    return false;
}

static const char *binary_verb(ax_binary_op op) {
    switch (op) {
    case AX_ADD:
        return "add";
    case AX_SUB:
        return "subtract";
    case AX_MUL:
        return "multiply";
    case AX_DIV:
        return "divide";
    default:
        return NULL;
    }
}

static void *broadcast_error(ax_ctx *cx, const char *name, const char *verb, const ax_array *a,
                             const ax_array *b) {
    char ta[128], tb[128];
    ax_array_type_format(ta, sizeof ta, a);
    ax_array_type_format(tb, sizeof tb, b);
    if (verb)
        return ax_error(cx, AX_ERR_SHAPE, "cannot %s %s and %s (shapes do not broadcast)", verb, ta,
                        tb);
    return ax_error(cx, AX_ERR_SHAPE, "cannot apply %s to %s and %s (shapes do not broadcast)",
                    name, ta, tb);
}

static void *dtype_mismatch_error(ax_ctx *cx, const char *name, const ax_array *a,
                                  const ax_array *b) {
    char ta[128], tb[128];
    ax_array_type_format(ta, sizeof ta, a);
    ax_array_type_format(tb, sizeof tb, b);
    return ax_error(cx, AX_ERR_TYPE, "%s needs operands of one dtype, got %s and %s", name, ta, tb);
}

static void *dtype_error(ax_ctx *cx, const char *name, ax_dtype t) {
    if (!dtype_valid(t)) return ax_error(cx, AX_ERR_TYPE, "%s: unknown dtype", name);
    return ax_error(cx, AX_ERR_TYPE, "%s is not defined for %s arrays", name, ax_dtype_name(t));
}

/* ------------------------------------------------------------------------------------------
 * Public entry points. */

ax_kernel_fn ax_unary_kernel(ax_unary_op op, ax_dtype t) {
    return unary_op_valid(op) && dtype_valid(t) && ax_unary_accepts(op, t) ? unary_table[t][op]
                                                                           : NULL;
}

ax_kernel_fn ax_binary_kernel(ax_binary_op op, ax_dtype t) {
    return binary_op_valid(op) && dtype_valid(t) && ax_binary_accepts(op, t) ? binary_table[t][op]
                                                                             : NULL;
}

/* Checks a unary op; returns its kernel or NULL with an error recorded. */
static kernel_fn unary_checked(ax_ctx *cx, ax_unary_op op, const ax_array *x) {
    if (!unary_op_valid(op)) {
        ax_error(cx, AX_ERR_VALUE, "unknown unary operation %d", (int)op);
        return NULL;
    }
    if (!check_concrete(cx, unary_names[op], x)) return NULL;
    if (!ax_unary_accepts(op, x->dtype)) {
        dtype_error(cx, unary_names[op], x->dtype);
        return NULL;
    }
    return unary_table[x->dtype][op];
}

static ax_array *unary_into(ax_ctx *cx, ax_unary_op op, ax_array *x, ax_array *out, kernel_fn fn) {
    out->weak = out->dtype != AX_BOOL && x->weak;
    run_elementwise(cx, out, 1, &x, fn, NULL, unary_grain(op, x->dtype));
    return out;
}

ax_array *ax_unary(ax_ctx *cx, ax_unary_op op, ax_array *x) {
    kernel_fn fn = unary_checked(cx, op, x);
    if (!fn) return NULL;
    ax_array *out = ax_array_new(cx, unary_result_dtype(op, x->dtype), x->ndim, x->shape);
    return out ? unary_into(cx, op, x, out, fn) : NULL;
}

ax_array *ax_unary_take(ax_ctx *cx, ax_unary_op op, ax_array *x) {
    kernel_fn fn = unary_checked(cx, op, x);
    if (!fn) {
        ax_array_release(x);
        return NULL;
    }
    if (ax_array_is_unique(x) && unary_result_dtype(op, x->dtype) == x->dtype)
        return unary_into(cx, op, x, x, fn);
    ax_array *out = ax_unary(cx, op, x);
    ax_array_release(x);
    return out;
}

/* Checks a binary op and computes the output shape; returns the kernel or NULL. */
static kernel_fn binary_checked(ax_ctx *cx, ax_binary_op op, const ax_array *a, const ax_array *b,
                                int *ndim, int64_t *shape) {
    if (!binary_op_valid(op)) {
        ax_error(cx, AX_ERR_VALUE, "unknown binary operation %d", (int)op);
        return NULL;
    }
    const char *name = binary_names[op];
    if (!check_concrete(cx, name, a) || !check_concrete(cx, name, b)) return NULL;
    if (a->dtype != b->dtype) {
        dtype_mismatch_error(cx, name, a, b);
        return NULL;
    }
    if (!ax_binary_accepts(op, a->dtype)) {
        dtype_error(cx, name, a->dtype);
        return NULL;
    }
    if (!ax_shape_broadcast(a->ndim, a->shape, b->ndim, b->shape, ndim, shape)) {
        broadcast_error(cx, name, binary_verb(op), a, b);
        return NULL;
    }
    return binary_table[a->dtype][op];
}

static ax_array *binary_into(ax_ctx *cx, ax_binary_op op, ax_array *a, ax_array *b, ax_array *out,
                             kernel_fn fn) {
    out->weak = !is_comparison(op) && a->weak && b->weak;
    ax_array *in[2] = {a, b};
    run_elementwise(cx, out, 2, in, fn, NULL, binary_grain(op, a->dtype));
    return out;
}

ax_array *ax_binary(ax_ctx *cx, ax_binary_op op, ax_array *a, ax_array *b) {
    int ndim;
    int64_t shape[AX_MAX_RANK];
    kernel_fn fn = binary_checked(cx, op, a, b, &ndim, shape);
    if (!fn) return NULL;
    ax_array *out = ax_array_new(cx, ax_binary_result_dtype(op, a->dtype), ndim, shape);
    return out ? binary_into(cx, op, a, b, out, fn) : NULL;
}

/* Whether `x` (one of the operands, whose references the caller hands over) may receive
 * the result: the caller's references are its only ones and it has the output's type. */
static bool reusable(const ax_array *x, int holders, ax_dtype dtype, int ndim,
                     const int64_t *shape) {
    return ax_refs_load(&x->refs) == holders && x->buf && ax_refs_load(&x->buf->refs) == 1 &&
           !x->tracer && x->offset == 0 &&
           ax_array_is_contiguous(x) && x->dtype == dtype &&
           ax_shape_equal(x->ndim, x->shape, ndim, shape);
}

ax_array *ax_binary_take(ax_ctx *cx, ax_binary_op op, ax_array *a, ax_array *b) {
    int ndim;
    int64_t shape[AX_MAX_RANK];
    kernel_fn fn = binary_checked(cx, op, a, b, &ndim, shape);
    ax_array *out = NULL;
    if (fn) {
        ax_dtype t = ax_binary_result_dtype(op, a->dtype);
        int holders = a == b ? 2 : 1;
        if (reusable(a, holders, t, ndim, shape))
            out = binary_into(cx, op, a, b, ax_array_retain(a), fn);
        else if (reusable(b, 1, t, ndim, shape))
            out = binary_into(cx, op, a, b, ax_array_retain(b), fn);
        else
            out = ax_binary(cx, op, a, b);
    }
    ax_array_release(a);
    ax_array_release(b);
    return out;
}

ax_array *ax_integer_pow(ax_ctx *cx, ax_array *x, int64_t k) {
    if (!check_concrete(cx, "integer_pow", x)) return NULL;
    if (!dtype_valid(x->dtype) || !integer_pow_table[x->dtype])
        return dtype_error(cx, "integer_pow", x->dtype);
    ax_array *out = ax_array_new(cx, x->dtype, x->ndim, x->shape);
    if (!out) return NULL;
    out->weak = x->weak;
    int64_t grain = k >= -2 && k <= 2 ? GRAIN_CHEAP : GRAIN_COSTLY;
    run_elementwise(cx, out, 1, &x, integer_pow_table[x->dtype], &k, grain);
    return out;
}

/* Broadcasts three shapes; false (with a ShapeError) when they do not. */
static bool broadcast3(ax_ctx *cx, const char *name, ax_array *const *in, int *ndim,
                       int64_t *shape) {
    int n1;
    int64_t s1[AX_MAX_RANK];
    if (ax_shape_broadcast(in[0]->ndim, in[0]->shape, in[1]->ndim, in[1]->shape, &n1, s1) &&
        ax_shape_broadcast(n1, s1, in[2]->ndim, in[2]->shape, ndim, shape))
        return true;
    char t0[128], t1[128], t2[128];
    ax_array_type_format(t0, sizeof t0, in[0]);
    ax_array_type_format(t1, sizeof t1, in[1]);
    ax_array_type_format(t2, sizeof t2, in[2]);
    ax_error(cx, AX_ERR_SHAPE, "cannot apply %s to %s, %s and %s (shapes do not broadcast)", name,
             t0, t1, t2);
    return false;
}

static ax_array *ternary(ax_ctx *cx, const char *name, ax_array *const *in, ax_dtype dtype,
                         bool weak, kernel_fn fn) {
    int ndim;
    int64_t shape[AX_MAX_RANK];
    if (!broadcast3(cx, name, in, &ndim, shape)) return NULL;
    ax_array *out = ax_array_new(cx, dtype, ndim, shape);
    if (!out) return NULL;
    out->weak = weak;
    run_elementwise(cx, out, 3, in, fn, NULL, GRAIN_CHEAP);
    return out;
}

ax_array *ax_select(ax_ctx *cx, ax_array *pred, ax_array *on_true, ax_array *on_false) {
    if (!check_concrete(cx, "select", pred) || !check_concrete(cx, "select", on_true) ||
        !check_concrete(cx, "select", on_false))
        return NULL;
    if (pred->dtype != AX_BOOL) {
        char t[128];
        ax_array_type_format(t, sizeof t, pred);
        return ax_error(cx, AX_ERR_TYPE, "select needs a bool condition, got %s", t);
    }
    if (on_true->dtype != on_false->dtype)
        return dtype_mismatch_error(cx, "select", on_true, on_false);
    size_t es = ax_dtype_size(on_true->dtype);
    kernel_fn fn = es == 1 ? k_select_1 : es == 4 ? k_select_4 : k_select_8;
    ax_array *in[3] = {pred, on_true, on_false};
    return ternary(cx, "select", in, on_true->dtype, on_true->weak && on_false->weak, fn);
}

ax_array *ax_clamp(ax_ctx *cx, ax_array *lo, ax_array *x, ax_array *hi) {
    if (!check_concrete(cx, "clamp", lo) || !check_concrete(cx, "clamp", x) ||
        !check_concrete(cx, "clamp", hi))
        return NULL;
    if (lo->dtype != x->dtype) return dtype_mismatch_error(cx, "clamp", lo, x);
    if (hi->dtype != x->dtype) return dtype_mismatch_error(cx, "clamp", x, hi);
    ax_array *in[3] = {lo, x, hi};
    return ternary(cx, "clamp", in, x->dtype, lo->weak && x->weak && hi->weak,
                   clamp_table[x->dtype]);
}

/* A view of x's buffer with another dtype / weak flag (no copy). */
static ax_array *retyped_view(ax_ctx *cx, ax_array *x, ax_dtype dtype, bool weak) {
    ax_array *v = ax_array_view(cx, x, x->ndim, x->shape, x->strides, x->offset);
    if (!v) return NULL;
    v->dtype = dtype;
    v->weak = weak;
    return v;
}

ax_array *ax_convert(ax_ctx *cx, ax_array *x, ax_dtype to, bool weak) {
    if (!check_concrete(cx, "convert_element_type", x)) return NULL;
    if (!dtype_valid(to) || !dtype_valid(x->dtype))
        return ax_error(cx, AX_ERR_TYPE, "convert_element_type: unknown dtype");
    /* Same dtype (bool aside, whose bytes may need normalising): share the buffer. */
    if (to == x->dtype && to != AX_BOOL) {
        if (x->weak == weak) return ax_array_retain(x);
        return retyped_view(cx, x, to, weak);
    }
    ax_array *out = ax_array_new(cx, to, x->ndim, x->shape);
    if (!out) return NULL;
    out->weak = weak;
    run_elementwise(cx, out, 1, &x, convert_table[x->dtype][to], NULL, GRAIN_CHEAP);
    return out;
}

ax_array *ax_bitcast(ax_ctx *cx, ax_array *x, ax_dtype to) {
    if (!check_concrete(cx, "bitcast_convert_type", x)) return NULL;
    if (!dtype_valid(to)) return ax_error(cx, AX_ERR_TYPE, "bitcast_convert_type: unknown dtype");
    if (to == x->dtype) return ax_array_retain(x);
    /* bool bytes must stay 0 or 1, so bool takes part in no bitcast (as in XLA). */
    if (ax_dtype_size(to) != ax_dtype_size(x->dtype) || to == AX_BOOL || x->dtype == AX_BOOL) {
        return ax_error(cx, AX_ERR_TYPE,
                        "cannot bitcast %s to %s: bitcast needs two non-bool dtypes of the same "
                        "size",
                        ax_dtype_name(x->dtype), ax_dtype_name(to));
    }
    return retyped_view(cx, x, to, false);
}

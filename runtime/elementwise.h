/* Elementwise kernels: unary and binary math, select, clamp, dtype conversion.
 *
 * Inputs may be any strided views (broadcast dimensions have stride 0); outputs are new
 * contiguous arrays. Binary kernels take operands of one dtype whose shapes broadcast (NumPy
 * rules); type promotion is the caller's business (numpy/np.c). Large arrays are split over
 * the thread pool. Float math follows IEEE (1/0 = inf); integer division by zero gives 0, as
 * JAX does on CPU... documented per op below. */
#ifndef AX_ELEMENTWISE_H
#define AX_ELEMENTWISE_H

#include "array.h"

typedef enum {
    AX_NEG, AX_ABS, AX_SIGN, AX_EXP, AX_EXP2, AX_LOG, AX_LOG1P, AX_EXPM1,
    AX_SIN, AX_COS, AX_TAN, AX_ASIN, AX_ACOS, AX_ATAN, AX_SINH, AX_COSH, AX_TANH,
    AX_ASINH, AX_ACOSH, AX_ATANH, AX_LOGISTIC, AX_SQRT, AX_RSQRT, AX_CBRT,
    AX_FLOOR, AX_CEIL, AX_ROUND, /* round half to even, as jnp.round */
    AX_ERF, AX_ERFC, AX_ERF_INV, AX_LGAMMA, AX_DIGAMMA,
    AX_IS_FINITE, /* -> bool */
    AX_NOT,       /* logical not on bool, bitwise not on ints */
    AX_SQUARE,
    AX_NUNARY
} ax_unary_op;

typedef enum {
    AX_ADD, AX_SUB, AX_MUL, AX_DIV, /* ints: truncating division (lax.div); x/0 = 0 for ints */
    AX_FLOOR_DIV,                   /* Python/NumPy floor division; floats: floor(a / b) as
                                       JAX computes it (x // 0.0 = nan); ints: x // 0 = 0 */
    AX_REM,                         /* C fmod / truncating remainder (lax.rem), sign of a;
                                       ints: x % 0 = 0, INT_MIN % -1 = 0 */
    AX_MOD,                         /* Python/NumPy modulo, sign of b; ints: x % 0 = 0 */
    AX_POW,                         /* ints: integer power, 0 for negative exponents except
                                       bases 1 and -1 (lax.pow) */
    AX_MAX, AX_MIN,                 /* max/min propagate NaN, as jnp.maximum */
    AX_ATAN2, AX_NEXTAFTER,
    AX_EQ, AX_NE, AX_LT, AX_LE, AX_GT, AX_GE, /* -> bool */
    AX_AND, AX_OR, AX_XOR,                    /* logical on bool, bitwise on ints */
    AX_SHL, AX_SHR_LOGICAL, AX_SHR_ARITH,     /* counts read as unsigned; >= the bit width
                                                 give 0 (arithmetic: 0 or -1, the sign) */
    AX_NBINARY
} ax_binary_op;

const char *ax_unary_name(ax_unary_op op);   /* "exp", "logistic", ... (lax names) */
const char *ax_binary_name(ax_binary_op op); /* "add", "floor_divide"... (lax names) */
/* Whether the op is defined on the dtype (e.g. exp needs a float, not needs bool or int). */
bool ax_unary_accepts(ax_unary_op op, ax_dtype t);
bool ax_binary_accepts(ax_binary_op op, ax_dtype t);
/* The result dtype of a binary op on operands of dtype t (bool for comparisons). */
ax_dtype ax_binary_result_dtype(ax_binary_op op, ax_dtype t);

/* The kernel behind ax_unary (ax_binary) on dtype t, for code that runs the eager kernels' code
 * on rows of its own (jit's quick tier, compiler/quickgen.h): y[i] = op(x[i * inc[0]]) for
 * i < n (binary: of in[0] and in[1]); an element's result never depends on n or its position.
 * NULL when op does not take t. */
typedef void (*ax_kernel_fn)(int64_t n, const char *const *in, const int64_t *inc, char *out,
                             const void *aux);
ax_kernel_fn ax_unary_kernel(ax_unary_op op, ax_dtype t);
ax_kernel_fn ax_binary_kernel(ax_binary_op op, ax_dtype t);

ax_array *ax_unary(ax_ctx *cx, ax_unary_op op, ax_array *x);
/* How many f32 lanes the vector math kernels work on (16 with AVX-512, 8 with AVX2, else 1):
 * generated code (compiler/codegen.c) calls the same libmvec entry points to get the same bits. */
int ax_elementwise_vector_lanes(void);
ax_array *ax_binary(ax_ctx *cx, ax_binary_op op, ax_array *a, ax_array *b);
/* As ax_unary / ax_binary, but taking over the caller's references to the operands (also
 * on error). When an operand is held only by those references and has the output's dtype and
 * shape (ax_array_is_unique), the result is written into its buffer and the operand itself is
 * returned. For x * x pass x twice, owning two references. */
ax_array *ax_unary_take(ax_ctx *cx, ax_unary_op op, ax_array *x);
ax_array *ax_binary_take(ax_ctx *cx, ax_binary_op op, ax_array *a, ax_array *b);
/* x ** k for an integer k (lax.integer_pow). */
ax_array *ax_integer_pow(ax_ctx *cx, ax_array *x, int64_t k);
/* where(pred, on_true, on_false): pred bool; the two values share a dtype; all broadcast. */
ax_array *ax_select(ax_ctx *cx, ax_array *pred, ax_array *on_true, ax_array *on_false);
/* min(max(x, lo), hi), all of one dtype, broadcasting. */
ax_array *ax_clamp(ax_ctx *cx, ax_array *lo, ax_array *x, ax_array *hi);
/* Element conversion as XLA does it: float -> int truncates toward zero and saturates (NaN
 * -> 0, out of range -> the nearest end); int -> int wraps; -> bool is != 0 (NaN -> true).
 * Result is strongly typed unless `weak` is set. Converting to the same dtype shares x's
 * buffer. */
ax_array *ax_convert(ax_ctx *cx, ax_array *x, ax_dtype to, bool weak);
/* Reinterprets the bits; the dtypes must have equal sizes and not be bool. Shares x's
 * buffer. */
ax_array *ax_bitcast(ax_ctx *cx, ax_array *x, ax_dtype to);

/* Outputs at least this large bypass the caches (they would only evict the inputs): a kernel
 * writes them a staging tile of AX_STREAM_TILE_BYTES at a time (it stays in L1), copied out
 * with non-temporal stores, which also spare the read of each output line a store into it
 * costs (jitted loops do the same: compiler/jit_loops.c). */
#define AX_STREAM_MIN_BYTES  ((size_t)32 << 20)
#define AX_STREAM_TILE_BYTES 16384
/* Copies n bytes with non-temporal stores where the CPU has them (dst 64-byte aligned first);
 * ax_stream_fence orders them before a later release (a pool chunk's end). */
void ax_stream_copy(char *dst, const char *src, size_t n);
void ax_stream_fence(void);

#endif

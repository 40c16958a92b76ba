/* Reductions, arg-reductions and cumulative scans (see reduce.h).
 *
 * How a reduction runs. The input's dimensions become a loop nest ordered by memory stride
 * (outermost = largest stride), after dropping size-1 dimensions, turning negative strides
 * positive and merging dimensions that are contiguous with each other, so the input is read
 * in memory order whatever its layout (transposed, sliced, reversed, broadcast). The
 * innermost loop is one of three kernels, chosen by what the innermost dimension is:
 *   - a reduced dimension: "line" kernel, folds a strided run into one accumulator
 *     (x.sum(-1), full reductions), or "lines", the same for a batch of runs;
 *   - a kept dimension: "row" kernel, folds a run into a run of accumulators
 *     (x.mean(0) on a 10000x10 matrix: acc[0:10] += x[i, 0:10] for each i).
 * Small outputs (<= 16K elements) get one accumulator array for the whole output. Larger ones
 * are computed a tile of 512 outputs at a time, each tile finished before the next, so no
 * accumulator array as large as the output is ever allocated.
 *
 * Accuracy. Accumulators are 8 bytes wide: double for f32 and f64 (so f32 sums and products
 * are accumulated in f64 and rounded once), uint64 for integer sums and products (wrapping
 * arithmetic gives the same low bits as the dtype's own wrapping), int64/uint64 for integer
 * max/min. Float sums over a contiguous or strided innermost reduced run use NumPy's pairwise
 * summation (blocks of 128 with 8 partial sums) in double; along outer reduced dimensions the
 * partial results are added in order, which is what NumPy does too.
 *
 * Threads. Big reductions (>= 256K elements) are split over the pool. With a whole-output
 * accumulator, the nest's largest dimension is cut into chunks whose number depends only on
 * the shape, never on the number of threads, so results are bitwise reproducible on any
 * machine: chunks along a kept dimension write disjoint accumulators; chunks along a reduced
 * dimension (at most 64) each fill a private accumulator array, combined in chunk order at
 * the end. Tiles are independent tasks. */
#include "reduce.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pool.h"
#include "strided.h"

enum {
    PARALLEL_MIN_ELEMENTS = 1 << 18, /* below this, one thread: the pool costs more than it saves */
    CHUNK_ELEMENTS = 1 << 17,        /* work per chunk of a big reduction */
    MAX_PRIVATE_ACCS = 64,           /* chunks of a reduction cut along a reduced dimension */
    SMALL_OUTPUT = 1 << 14,          /* larger outputs are accumulated tile by tile */
    TILE = 512,                      /* accumulators per tile */
};

/* Runs fn over [0, ntasks) of coarse tasks on the pool, at least `grain` tasks per chunk. The
 * pool cuts its ranges at multiples of 64 items (it expects fine-grained items such as
 * elements), so each task is presented as 64 items and task t runs in the range that holds
 * item 64 t: every task runs exactly once, whatever the cuts. */
typedef struct {
    void (*fn)(void *arg, int64_t begin, int64_t end);
    void *arg;
} task_job;

static void run_task_items(void *arg, int64_t begin, int64_t end) {
    const task_job *j = arg;
    int64_t first = (begin + 63) / 64, last = (end + 63) / 64;
    if (first < last) j->fn(j->arg, first, last);
}

static void parallel_tasks(ax_ctx *cx, int64_t ntasks, int64_t grain,
                           void (*fn)(void *arg, int64_t begin, int64_t end), void *arg) {
    task_job j = {fn, arg};
    ax_parallel_for(cx, ntasks * 64, grain * 64, run_task_items, &j);
}

/* ---- message helpers ---- */

typedef struct {
    char s[400];
} text;

static text type_text(const ax_array *a) {
    text t;
    ax_array_type_format(t.s, sizeof t.s, a);
    return t;
}
#define TYPE(a) type_text(a).s

static const char *const reduce_names[] = {"reduce_sum", "reduce_prod", "reduce_max",
                                           "reduce_min", "reduce_and",  "reduce_or"};

/* Normalises one axis (negative counts from the end); false with a ValueError if invalid. */
static bool normalize_axis(ax_ctx *cx, const char *name, int axis, const ax_array *x, int *out) {
    int a = axis < 0 ? axis + x->ndim : axis;
    if (a < 0 || a >= x->ndim) {
        ax_error(cx, AX_ERR_VALUE, "%s: axis %d is out of bounds for %s", name, axis, TYPE(x));
        return false;
    }
    *out = a;
    return true;
}

/* ---- accumulator arithmetic ---- */

typedef enum { ACC_F64, ACC_I64, ACC_U64 } acc_kind;

/* max/min propagate NaN: once the accumulator is NaN it stays NaN (NaN compares false). */
static inline double sum_f(double a, double v) {
    return a + v;
}
static inline double prod_f(double a, double v) {
    return a * v;
}
static inline double max_f(double a, double v) {
    return v > a || isnan(v) ? v : a;
}
static inline double min_f(double a, double v) {
    return v < a || isnan(v) ? v : a;
}
static inline int64_t max_i(int64_t a, int64_t v) {
    return v > a ? v : a;
}
static inline int64_t min_i(int64_t a, int64_t v) {
    return v < a ? v : a;
}
static inline uint64_t sum_u(uint64_t a, uint64_t v) {
    return a + v;
}
static inline uint64_t prod_u(uint64_t a, uint64_t v) {
    return a * v;
}
static inline uint64_t max_u(uint64_t a, uint64_t v) {
    return v > a ? v : a;
}
static inline uint64_t min_u(uint64_t a, uint64_t v) {
    return v < a ? v : a;
}
static inline uint64_t and_u(uint64_t a, uint64_t v) {
    return a & v;
}
static inline uint64_t or_u(uint64_t a, uint64_t v) {
    return a | v;
}

#define LD_VAL(ACC, v)   ((ACC)(v))
#define LD_TRUTH(ACC, v) ((ACC)((v) != 0))

typedef void line_fn(void *acc, const void *src, int64_t n, int64_t stride);
typedef void row_fn(void *acc, int64_t acc_stride, const void *src, int64_t n, int64_t stride);
/* acc[j * as] = acc[j * as] op fold(src[j * ls + i * s] for i < n), for j < count. */
typedef void lines_fn(void *acc, int64_t as, const void *src, int64_t count, int64_t ls, int64_t n,
                      int64_t s);
/* row(acc, as, src + i * rs, n, s) for i < count. */
typedef void rows_fn(void *acc, int64_t as, const void *src, int64_t count, int64_t rs, int64_t n,
                     int64_t s);

/* Line kernel: *acc = fold of src[0], src[s], ..., with 4 independent partial results so that
 * the loop is not one long dependency chain. A separate copy for stride 1 lets the compiler
 * vectorise it. The lines kernel runs it over `count` runs, one accumulator each. */
#define DEFINE_FOLD(NAME, T, ACC, LOAD, COMBINE)                                                   \
    static inline __attribute__((always_inline))                                                   \
    ACC NAME##_fold(ACC a, const T *x, int64_t n, int64_t s) {                                     \
        int64_t i = 0;                                                                             \
        if (n >= 8) {                                                                              \
            ACC r0 = LOAD(ACC, x[0]), r1 = LOAD(ACC, x[s]), r2 = LOAD(ACC, x[2 * s]),              \
                r3 = LOAD(ACC, x[3 * s]);                                                          \
            for (i = 4; i + 4 <= n; i += 4) {                                                      \
                r0 = COMBINE(r0, LOAD(ACC, x[i * s]));                                             \
                r1 = COMBINE(r1, LOAD(ACC, x[(i + 1) * s]));                                       \
                r2 = COMBINE(r2, LOAD(ACC, x[(i + 2) * s]));                                       \
                r3 = COMBINE(r3, LOAD(ACC, x[(i + 3) * s]));                                       \
            }                                                                                      \
            a = COMBINE(a, COMBINE(COMBINE(r0, r1), COMBINE(r2, r3)));                             \
        }                                                                                          \
        for (; i < n; i++) a = COMBINE(a, LOAD(ACC, x[i * s]));                                    \
        return a;                                                                                  \
    }

#define DEFINE_LINE(NAME, T, ACC)                                                                  \
    static void NAME##_line(void *acc, const void *src, int64_t n, int64_t s) {                    \
        ACC *a = acc;                                                                              \
        *a = s == 1 ? NAME##_fold(*a, src, n, 1) : NAME##_fold(*a, src, n, s);                     \
    }                                                                                              \
    static void NAME##_lines(void *accp, int64_t as, const void *src, int64_t count, int64_t ls,   \
                             int64_t n, int64_t s) {                                               \
        ACC *acc = accp;                                                                           \
        const T *x = src;                                                                          \
        if (s == 1)                                                                                \
            for (int64_t j = 0; j < count; j++)                                                    \
                acc[j * as] = NAME##_fold(acc[j * as], x + j * ls, n, 1);                          \
        else                                                                                       \
            for (int64_t j = 0; j < count; j++)                                                    \
                acc[j * as] = NAME##_fold(acc[j * as], x + j * ls, n, s);                          \
    }

/* Row kernel: acc[j * as] = acc[j * as] op src[j * s] for j < n; the rows kernel runs it over
 * `count` rows rs apart (x.sum(0) of a tall matrix in one call). */
#define DEFINE_ROW(NAME, T, ACC, LOAD, COMBINE)                                                    \
    static inline __attribute__((always_inline)) void NAME##_row_body(                             \
        ACC *acc, int64_t as, const T *x, int64_t n, int64_t s) {                                  \
        if (as == 1 && s == 1) {                                                                   \
            for (int64_t j = 0; j < n; j++) acc[j] = COMBINE(acc[j], LOAD(ACC, x[j]));             \
            return;                                                                                \
        }                                                                                          \
        for (int64_t j = 0; j < n; j++) acc[j * as] = COMBINE(acc[j * as], LOAD(ACC, x[j * s]));   \
    }                                                                                              \
    static void NAME##_row(void *acc, int64_t as, const void *src, int64_t n, int64_t s) {         \
        NAME##_row_body(acc, as, src, n, s);                                                       \
    }                                                                                              \
    static void NAME##_rows(void *acc, int64_t as, const void *src, int64_t count, int64_t rs,     \
                            int64_t n, int64_t s) {                                                \
        const T *x = src;                                                                          \
        for (int64_t i = 0; i < count; i++) NAME##_row_body(acc, as, x + i * rs, n, s);            \
    }

#define DEFINE_KERNELS(NAME, T, ACC, LOAD, COMBINE)                                                \
    DEFINE_FOLD(NAME, T, ACC, LOAD, COMBINE)                                                       \
    DEFINE_LINE(NAME, T, ACC)                                                                      \
    DEFINE_ROW(NAME, T, ACC, LOAD, COMBINE)

#define PW(S, i) ((double)x[(i) * (S)])

/* NumPy's pairwise summation (numpy/core/src/umath/loops_utils.h.src), in double. STRIDE is
 * either the literal 1 or the variable s, making a unit-stride and a strided copy. The eight
 * partial sums are separate variables (not an array) so that they live in registers. */
#define DEFINE_PAIRWISE(NAME, T, STRIDE)                                                           \
    static inline                                                                                  \
        __attribute__((always_inline)) double NAME##_block(const T *x, int64_t n, int64_t s) {     \
        (void)s;                                                                                   \
        if (n < 8) {                                                                               \
            double r = 0.;                                                                         \
            for (int64_t i = 0; i < n; i++) r += PW(STRIDE, i);                                    \
            return r;                                                                              \
        }                                                                                          \
        double r0 = PW(STRIDE, 0), r1 = PW(STRIDE, 1), r2 = PW(STRIDE, 2), r3 = PW(STRIDE, 3);     \
        double r4 = PW(STRIDE, 4), r5 = PW(STRIDE, 5), r6 = PW(STRIDE, 6), r7 = PW(STRIDE, 7);     \
        int64_t i;                                                                                 \
        for (i = 8; i < n - (n % 8); i += 8) {                                                     \
            r0 += PW(STRIDE, i);                                                                   \
            r1 += PW(STRIDE, i + 1);                                                               \
            r2 += PW(STRIDE, i + 2);                                                               \
            r3 += PW(STRIDE, i + 3);                                                               \
            r4 += PW(STRIDE, i + 4);                                                               \
            r5 += PW(STRIDE, i + 5);                                                               \
            r6 += PW(STRIDE, i + 6);                                                               \
            r7 += PW(STRIDE, i + 7);                                                               \
        }                                                                                          \
        double res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7));                            \
        for (; i < n; i++) res += PW(STRIDE, i);                                                   \
        return res;                                                                                \
    }                                                                                              \
    static double NAME##_split(const T *x, int64_t n, int64_t s) {                                 \
        if (n <= 128) return NAME##_block(x, n, s);                                                \
        int64_t n2 = n / 2;                                                                        \
        n2 -= n2 % 8;                                                                              \
        return NAME##_split(x, n2, s) + NAME##_split(x + n2 * (STRIDE), n - n2, s);                \
    }                                                                                              \
    static inline __attribute__((always_inline)) double NAME(const T *x, int64_t n, int64_t s) {   \
        return n <= 128 ? NAME##_block(x, n, s) : NAME##_split(x, n, s);                           \
    }

/* Float max/min of a contiguous run with SIMD (GCC vector extensions, so any target): two
 * vectors of running extremes chosen by compare-and-blend, and a mask of NaNs seen. Returns
 * the extreme, or NaN if the run holds one. Needs n >= 2 * lanes. */
#define DEFINE_VEXTREME(NAME, T, VT, VI, CMP)                                                      \
    static T NAME(const T *x, int64_t n) {                                                         \
        enum { L = sizeof(VT) / sizeof(T) };                                                       \
        VT m0, m1;                                                                                 \
        VI nan = {0};                                                                              \
        memcpy(&m0, x, sizeof m0);                                                                 \
        memcpy(&m1, x + L, sizeof m1);                                                             \
        int64_t i;                                                                                 \
        for (i = 2 * L; i + 2 * L <= n; i += 2 * L) {                                              \
            VT a, b;                                                                               \
            memcpy(&a, x + i, sizeof a);                                                           \
            memcpy(&b, x + i + L, sizeof b);                                                       \
            VI ta = a CMP m0, tb = b CMP m1;                                                       \
            m0 = (VT)(((VI)a & ta) | ((VI)m0 & ~ta));                                              \
            m1 = (VT)(((VI)b & tb) | ((VI)m1 & ~tb));                                              \
            nan |= (a != a) | (b != b);                                                            \
        }                                                                                          \
        T r = m0[0];                                                                               \
        for (int k = 0; k < L; k++) {                                                              \
            if (nan[k]) return (T)NAN;                                                             \
            if (m0[k] CMP r) r = m0[k];                                                            \
            if (m1[k] CMP r) r = m1[k];                                                            \
        }                                                                                          \
        for (; i < n; i++) {                                                                       \
            if (x[i] CMP r)                                                                        \
                r = x[i];                                                                          \
            else if (isnan(x[i]))                                                                  \
                return (T)NAN;                                                                     \
        }                                                                                          \
        return r;                                                                                  \
    }

typedef float v4f __attribute__((vector_size(16)));
typedef int32_t v4i __attribute__((vector_size(16)));
typedef double v2d __attribute__((vector_size(16)));
typedef int64_t v2l __attribute__((vector_size(16)));
DEFINE_VEXTREME(f32_max_simd, float, v4f, v4i, >)
DEFINE_VEXTREME(f32_min_simd, float, v4f, v4i, <)
DEFINE_VEXTREME(f64_max_simd, double, v2d, v2l, >)
DEFINE_VEXTREME(f64_min_simd, double, v2d, v2l, <)

/* Float max/min kernels: the generic ones, with the SIMD fold for long contiguous runs. */
#define DEFINE_FLOAT_EXTREME(NAME, T, COMBINE)                                                     \
    DEFINE_FOLD(NAME##_generic, T, double, LD_VAL, COMBINE)                                        \
    static inline __attribute__((always_inline)) double NAME##_fold(double a, const T *x,          \
                                                                    int64_t n, int64_t s) {        \
        if (s == 1 && n >= 16) return COMBINE(a, NAME##_simd(x, n));                               \
        return NAME##_generic_fold(a, x, n, s);                                                    \
    }                                                                                              \
    DEFINE_LINE(NAME, T, double)                                                                   \
    DEFINE_ROW(NAME, T, double, LD_VAL, COMBINE)

#define DEFINE_FLOAT_SUM(NAME, T)                                                                  \
    DEFINE_PAIRWISE(NAME##_pairwise_unit, T, 1)                                                    \
    DEFINE_PAIRWISE(NAME##_pairwise_strided, T, s)                                                 \
    static void NAME##_line(void *acc, const void *src, int64_t n, int64_t s) {                    \
        *(double *)acc +=                                                                          \
            s == 1 ? NAME##_pairwise_unit(src, n, 1) : NAME##_pairwise_strided(src, n, s);         \
    }                                                                                              \
    static void NAME##_lines(void *accp, int64_t as, const void *src, int64_t count, int64_t ls,   \
                             int64_t n, int64_t s) {                                               \
        double *acc = accp;                                                                        \
        const T *x = src;                                                                          \
        if (s == 1)                                                                                \
            for (int64_t j = 0; j < count; j++)                                                    \
                acc[j * as] += NAME##_pairwise_unit(x + j * ls, n, 1);                             \
        else                                                                                       \
            for (int64_t j = 0; j < count; j++)                                                    \
                acc[j * as] += NAME##_pairwise_strided(x + j * ls, n, s);                          \
    }                                                                                              \
    DEFINE_ROW(NAME, T, double, LD_VAL, sum_f)

#define DEFINE_INT_DTYPE(SFX, T, MMACC, MAX, MIN)                                                  \
    DEFINE_KERNELS(SFX##_sum, T, uint64_t, LD_VAL, sum_u)                                          \
    DEFINE_KERNELS(SFX##_prod, T, uint64_t, LD_VAL, prod_u)                                        \
    DEFINE_KERNELS(SFX##_max, T, MMACC, LD_VAL, MAX)                                               \
    DEFINE_KERNELS(SFX##_min, T, MMACC, LD_VAL, MIN)                                               \
    DEFINE_KERNELS(SFX##_and, T, uint64_t, LD_TRUTH, and_u)                                        \
    DEFINE_KERNELS(SFX##_or, T, uint64_t, LD_TRUTH, or_u)

#define DEFINE_FLOAT_DTYPE(SFX, T)                                                                 \
    DEFINE_FLOAT_SUM(SFX##_sum, T)                                                                 \
    DEFINE_KERNELS(SFX##_prod, T, double, LD_VAL, prod_f)                                          \
    DEFINE_FLOAT_EXTREME(SFX##_max, T, max_f)                                                      \
    DEFINE_FLOAT_EXTREME(SFX##_min, T, min_f)                                                      \
    DEFINE_KERNELS(SFX##_and, T, uint64_t, LD_TRUTH, and_u)                                        \
    DEFINE_KERNELS(SFX##_or, T, uint64_t, LD_TRUTH, or_u)

DEFINE_INT_DTYPE(u8, uint8_t, uint64_t, max_u, min_u) /* also bool: 0/1 bytes */
DEFINE_INT_DTYPE(i32, int32_t, int64_t, max_i, min_i)
DEFINE_INT_DTYPE(u32, uint32_t, uint64_t, max_u, min_u)
DEFINE_INT_DTYPE(i64, int64_t, int64_t, max_i, min_i)
DEFINE_FLOAT_DTYPE(f32, float)
DEFINE_FLOAT_DTYPE(f64, double)

typedef struct {
    line_fn *line;
    row_fn *row;
    lines_fn *lines;
    rows_fn *rows;
} reduce_kernel;

#define KERNEL(NAME)                                                                               \
    { NAME##_line, NAME##_row, NAME##_lines, NAME##_rows }
#define KERNELS_OF(SFX)                                                                            \
    {                                                                                              \
        KERNEL(SFX##_sum), KERNEL(SFX##_prod), KERNEL(SFX##_max), KERNEL(SFX##_min),               \
            KERNEL(SFX##_and), KERNEL(SFX##_or)                                                    \
    }

/* Indexed [dtype][op], op in ax_reduce_op order. */
static const reduce_kernel kernels[AX_NDTYPES][6] = {
    [AX_BOOL] = KERNELS_OF(u8), [AX_U8] = KERNELS_OF(u8),   [AX_I32] = KERNELS_OF(i32),
    [AX_U32] = KERNELS_OF(u32), [AX_I64] = KERNELS_OF(i64), [AX_F32] = KERNELS_OF(f32),
    [AX_F64] = KERNELS_OF(f64),
};

static acc_kind acc_kind_of(ax_reduce_op op, ax_dtype t) {
    if (op == AX_REDUCE_AND || op == AX_REDUCE_OR) return ACC_U64;
    if (ax_dtype_is_float(t)) return ACC_F64;
    if (ax_dtype_is_signed(t) && (op == AX_REDUCE_MAX || op == AX_REDUCE_MIN)) return ACC_I64;
    return ACC_U64;
}

/* The 8-byte starting value of an accumulator. (max/min of an empty axis is an error, so
 * their identities are only ever combined with at least one element.) */
static void acc_identity(acc_kind k, ax_reduce_op op, void *out) {
    static const double f[] = {0.0, 1.0, -INFINITY, INFINITY};
    static const int64_t i[] = {0, 1, INT64_MIN, INT64_MAX};
    static const uint64_t u[] = {0, 1, 0, UINT64_MAX, 1, 0};
    if (k == ACC_F64)
        memcpy(out, &f[op], 8);
    else if (k == ACC_I64)
        memcpy(out, &i[op], 8);
    else
        memcpy(out, &u[op], 8);
}

/* dst[i] = dst[i] op src[i]: combines the private accumulators of two chunks. */
static void combine_accs(acc_kind k, ax_reduce_op op, void *dst, const void *src, int64_t n) {
    switch (k) {
    case ACC_F64: {
        static row_fn *const f64_rows[] = {f64_sum_row, f64_prod_row, f64_max_row, f64_min_row};
        f64_rows[op](dst, 1, src, n, 1);
        break;
    }
    case ACC_I64:
        (op == AX_REDUCE_MAX ? i64_max_row : i64_min_row)(dst, 1, src, n, 1);
        break;
    case ACC_U64: {
        uint64_t *d = dst;
        const uint64_t *s = src;
        for (int64_t j = 0; j < n; j++) {
            switch (op) {
            case AX_REDUCE_SUM:
                d[j] = sum_u(d[j], s[j]);
                break;
            case AX_REDUCE_PROD:
                d[j] = prod_u(d[j], s[j]);
                break;
            case AX_REDUCE_MAX:
                d[j] = max_u(d[j], s[j]);
                break;
            case AX_REDUCE_MIN:
                d[j] = min_u(d[j], s[j]);
                break;
            case AX_REDUCE_AND:
                d[j] = and_u(d[j], s[j]);
                break;
            case AX_REDUCE_OR:
                d[j] = or_u(d[j], s[j]);
                break;
            }
        }
        break;
    }
    }
}

#define STORE_LOOP(T, EXPR)                                                                        \
    do {                                                                                           \
        T *o = out;                                                                                \
        for (int64_t j = 0; j < n; j++) o[j * stride] = (T)(EXPR);                                 \
    } while (0)

/* Rounds n accumulators to the output dtype (integers wrap to the dtype's width) and stores
 * them `stride` elements apart. */
static void store_results(ax_dtype t, acc_kind k, const void *acc, void *out, int64_t n,
                          int64_t stride) {
    const double *f = acc;
    const int64_t *i = acc;
    const uint64_t *u = acc;
    switch (t) {
    case AX_F32:
        STORE_LOOP(float, f[j]);
        break;
    case AX_F64:
        STORE_LOOP(double, f[j]);
        break;
    case AX_BOOL:
        STORE_LOOP(uint8_t, u[j] != 0);
        break;
    case AX_U8:
        STORE_LOOP(uint8_t, u[j]);
        break;
    case AX_U32:
        STORE_LOOP(uint32_t, u[j]);
        break;
    case AX_I32:
        if (k == ACC_I64)
            STORE_LOOP(int32_t, i[j]);
        else
            STORE_LOOP(int32_t, (uint32_t)u[j]);
        break;
    case AX_I64:
        if (k == ACC_I64)
            STORE_LOOP(int64_t, i[j]);
        else
            STORE_LOOP(int64_t, u[j]);
        break;
    default:
        break;
    }
}

/* ---- the loop nest ---- */

typedef struct {
    int ndim; /* outermost first; innermost has the smallest input stride */
    int64_t shape[AX_MAX_RANK];
    int64_t in_strides[AX_MAX_RANK];  /* elements of x */
    int64_t acc_strides[AX_MAX_RANK]; /* output elements (= accumulators); 0 on reduced dims */
    bool reduced[AX_MAX_RANK];
    const char *src;  /* x's element at nest position 0 */
    int64_t acc_base; /* output element of nest position 0 */
    size_t es;
    reduce_kernel kernel;
    acc_kind kind;
    ax_reduce_op op;
    ax_dtype out_dtype;
    int64_t out_size;
    char *out; /* the output's data */
    /* Whole-output accumulation (small outputs): */
    int split;       /* the dimension cut into chunks */
    int64_t nchunks; /* 1: no cutting */
    char *acc;       /* out_size accumulators, times nchunks when split is reduced */
    /* Tiled accumulation (large outputs): */
    int block;  /* the kept dimension whose runs share a tile of accumulators */
    int nk, nr; /* the other kept dims, the other reduced dims */
    int64_t k_shape[AX_MAX_RANK], k_in[AX_MAX_RANK], k_out[AX_MAX_RANK];
    int64_t r_shape[AX_MAX_RANK], r_in[AX_MAX_RANK];
    int64_t ntiles; /* per position of the other kept dims */
} reduce_plan;

/* Nest entry order: stride-0 (broadcast) dimensions outermost, then by decreasing stride. */
static int64_t nest_key(int64_t stride) {
    return stride == 0 ? INT64_MAX : stride;
}

static void nest_swap(reduce_plan *p, int j) {
    int64_t t;
#define SWAP(a) (t = a[j], a[j] = a[j - 1], a[j - 1] = t)
    SWAP(p->shape);
    SWAP(p->in_strides);
    SWAP(p->acc_strides);
#undef SWAP
    bool r = p->reduced[j];
    p->reduced[j] = p->reduced[j - 1];
    p->reduced[j - 1] = r;
}

static void nest_sort(reduce_plan *p) {
    for (int i = 1; i < p->ndim; i++)
        for (int j = i; j > 0 && nest_key(p->in_strides[j - 1]) < nest_key(p->in_strides[j]); j--)
            nest_swap(p, j);
}

/* Merges neighbours that one loop can walk: same kind, contiguous on both sides. */
static void nest_merge(reduce_plan *p) {
    int n = 0;
    for (int d = 0; d < p->ndim; d++) {
        bool mergeable = n > 0 && p->reduced[n - 1] == p->reduced[d] &&
                         p->in_strides[n - 1] == p->in_strides[d] * p->shape[d] &&
                         p->acc_strides[n - 1] == p->acc_strides[d] * p->shape[d];
        if (mergeable) {
            p->shape[n - 1] *= p->shape[d];
            p->in_strides[n - 1] = p->in_strides[d];
            p->acc_strides[n - 1] = p->acc_strides[d];
            continue;
        }
        p->shape[n] = p->shape[d];
        p->in_strides[n] = p->in_strides[d];
        p->acc_strides[n] = p->acc_strides[d];
        p->reduced[n++] = p->reduced[d];
    }
    p->ndim = n;
}

/* Builds the nest for x with `reduced` marking the reduced axes. */
static void plan_nest(reduce_plan *p, const ax_array *x, const bool *reduced) {
    int64_t out_strides[AX_MAX_RANK], s = 1;
    for (int d = x->ndim - 1; d >= 0; d--) {
        out_strides[d] = reduced[d] ? 0 : s;
        if (!reduced[d]) s *= x->shape[d];
    }
    p->es = ax_dtype_size(x->dtype);
    p->src = ax_array_data(x);
    p->acc_base = 0;
    p->ndim = 0;
    for (int d = 0; d < x->ndim; d++) {
        if (x->shape[d] == 1) continue;
        int64_t n = x->shape[d], is = x->strides[d], as = out_strides[d];
        if (is < 0) { /* walk backwards dimensions forwards: same elements, same outputs */
            p->src += (n - 1) * is * (int64_t)p->es;
            p->acc_base += (n - 1) * as;
            is = -is;
            as = -as;
        }
        p->shape[p->ndim] = n;
        p->in_strides[p->ndim] = is;
        p->acc_strides[p->ndim] = as;
        p->reduced[p->ndim++] = reduced[d];
    }
    nest_sort(p);
    nest_merge(p);
    if (p->ndim == 0) { /* a single element */
        p->ndim = 1;
        p->shape[0] = 1;
        p->in_strides[0] = p->acc_strides[0] = 0;
        p->reduced[0] = false;
    }
}

/* ---- whole-output accumulation: small outputs, any number of reduced elements ---- */

/* Chooses how to cut the work (see the file comment). */
static void plan_chunks(reduce_plan *p, int64_t total) {
    p->split = 0;
    p->nchunks = 1;
    if (total < PARALLEL_MIN_ELEMENTS) return;
    for (int d = 1; d < p->ndim; d++)
        if (p->shape[d] > p->shape[p->split]) p->split = d;
    int64_t n = total / CHUNK_ELEMENTS;
    if (n > p->shape[p->split]) n = p->shape[p->split];
    if (p->reduced[p->split]) { /* private accumulators: few, and small next to the input */
        int64_t cap = total / (16 * p->out_size);
        if (n > cap) n = cap;
        if (n > MAX_PRIVATE_ACCS) n = MAX_PRIVATE_ACCS;
    }
    p->nchunks = n > 1 ? n : 1;
}

static void run_range(const reduce_plan *p, char *acc, int64_t lo, int64_t hi) {
    if (hi <= lo) return;
    int64_t shape[AX_MAX_RANK];
    memcpy(shape, p->shape, (size_t)p->ndim * sizeof *shape);
    shape[p->split] = hi - lo;
    int64_t es = (int64_t)p->es;
    int inner = p->ndim - 1, outer = inner - 1; /* the two loops a kernel runs */
    bool two_d = outer >= 0 && p->reduced[outer] != p->reduced[inner];
    const int64_t *is = p->in_strides, *as = p->acc_strides;
    const char *src = p->src + lo * is[p->split] * es;
    char *accp = acc + (p->acc_base + lo * as[p->split]) * 8;
    ax_iter it;
    ax_iter_init(&it, two_d ? outer : inner, shape, 2, (const int64_t *[]){is, as});
    do {
        const char *s = src + it.pos[0] * es;
        char *a = accp + it.pos[1] * 8;
        if (two_d && p->reduced[inner])
            p->kernel.lines(a, as[outer], s, shape[outer], is[outer], shape[inner], is[inner]);
        else if (two_d)
            p->kernel.rows(a, as[inner], s, shape[outer], is[outer], shape[inner], is[inner]);
        else if (p->reduced[inner])
            p->kernel.line(a, s, shape[inner], is[inner]);
        else
            p->kernel.row(a, as[inner], s, shape[inner], is[inner]);
    } while (ax_iter_next(&it));
}

static void run_chunks(void *arg, int64_t begin, int64_t end) {
    const reduce_plan *p = arg;
    int64_t n = p->shape[p->split];
    for (int64_t c = begin; c < end; c++) {
        char *acc = p->reduced[p->split] ? p->acc + c * p->out_size * 8 : p->acc;
        run_range(p, acc, n * c / p->nchunks, n * (c + 1) / p->nchunks);
    }
}

static bool reduce_whole(ax_ctx *cx, reduce_plan *p, int64_t total) {
    plan_chunks(p, total);
    int64_t naccs = p->reduced[p->split] ? p->nchunks : 1;
    p->acc = malloc((size_t)(naccs * p->out_size) * 8);
    if (!p->acc) {
        ax_error_oom(cx);
        return false;
    }
    char identity[8];
    acc_identity(p->kind, p->op, identity);
    ax_fill_elements(p->acc, naccs * p->out_size, identity, 8);
    if (total > 0) {
        if (p->nchunks > 1)
            parallel_tasks(cx, p->nchunks, 1, run_chunks, p);
        else
            run_range(p, p->acc, 0, p->shape[p->split]);
    }
    for (int64_t c = 1; c < naccs; c++)
        combine_accs(p->kind, p->op, p->acc, p->acc + c * p->out_size * 8, p->out_size);
    store_results(p->out_dtype, p->kind, p->acc, p->out, p->out_size, 1);
    free(p->acc);
    return true;
}

/* ---- tiled accumulation: large outputs ----
 * Every output is finished by one task, so no accumulator array as big as the output is
 * needed: a task takes up to TILE neighbouring outputs along the `block` dimension, folds
 * every reduced element into a stack tile of accumulators and stores the tile. With the
 * innermost dimension kept, the tile is filled row by row (x.sum(0) of a 2 x 50M array);
 * with it reduced, run by run (x.sum(-1) of a 10M x 10 array). */

static void plan_tiles(reduce_plan *p) {
    int inner = p->ndim - 1;
    p->block = inner;
    for (int d = inner; d >= 0 && p->reduced[p->block]; d--) p->block = d;
    p->nk = p->nr = 0;
    for (int d = 0; d < p->ndim; d++) {
        if (d == p->block || (d == inner && p->reduced[d])) continue;
        if (p->reduced[d]) {
            p->r_shape[p->nr] = p->shape[d];
            p->r_in[p->nr++] = p->in_strides[d];
        } else {
            p->k_shape[p->nk] = p->shape[d];
            p->k_in[p->nk] = p->in_strides[d];
            p->k_out[p->nk++] = p->acc_strides[d];
        }
    }
    p->ntiles = (p->shape[p->block] + TILE - 1) / TILE;
}

static void run_tile(const reduce_plan *p, int64_t task, uint64_t *acc) {
    int64_t tile = task % p->ntiles, k = task / p->ntiles;
    int64_t in_off = 0, out_off = p->acc_base;
    for (int d = p->nk - 1; d >= 0; d--) {
        int64_t i = k % p->k_shape[d];
        k /= p->k_shape[d];
        in_off += i * p->k_in[d];
        out_off += i * p->k_out[d];
    }
    int b = p->block, inner = p->ndim - 1;
    int64_t t0 = tile * TILE, tn = p->shape[b] - t0 < TILE ? p->shape[b] - t0 : TILE;
    in_off += t0 * p->in_strides[b];
    out_off += t0 * p->acc_strides[b];
    acc_identity(p->kind, p->op, acc);
    for (int64_t j = 1; j < tn; j++) acc[j] = acc[0];
    int64_t es = (int64_t)p->es;
    ax_iter it;
    ax_iter_init(&it, p->nr, p->r_shape, 1, (const int64_t *[]){p->r_in});
    do {
        const char *src = p->src + (in_off + it.pos[0]) * es;
        if (b == inner)
            p->kernel.row(acc, 1, src, tn, p->in_strides[b]);
        else
            p->kernel.lines(acc, 1, src, tn, p->in_strides[b], p->shape[inner],
                            p->in_strides[inner]);
    } while (ax_iter_next(&it));
    int64_t oes = (int64_t)ax_dtype_size(p->out_dtype);
    store_results(p->out_dtype, p->kind, acc, p->out + out_off * oes, tn, p->acc_strides[b]);
}

static void run_tiles(void *arg, int64_t begin, int64_t end) {
    uint64_t acc[TILE];
    for (int64_t task = begin; task < end; task++) run_tile(arg, task, acc);
}

static void reduce_tiled(ax_ctx *cx, reduce_plan *p, int64_t total) {
    plan_tiles(p);
    int64_t ntasks = p->ntiles * ax_shape_size(p->nk, p->k_shape);
    if (total < PARALLEL_MIN_ELEMENTS) {
        run_tiles(p, 0, ntasks);
        return;
    }
    int64_t per_task = total / ntasks;
    parallel_tasks(cx, ntasks, per_task >= CHUNK_ELEMENTS ? 1 : CHUNK_ELEMENTS / per_task,
                   run_tiles, p);
}

/* ---- ax_reduce ---- */

static bool check_reduce(ax_ctx *cx, ax_reduce_op op, const ax_array *x, int naxes, const int *axes,
                         bool *reduced) {
    const char *name = reduce_names[op];
    bool numeric = op == AX_REDUCE_SUM || op == AX_REDUCE_PROD;
    bool logical = op == AX_REDUCE_AND || op == AX_REDUCE_OR;
    if ((numeric && x->dtype == AX_BOOL) || (logical && x->dtype != AX_BOOL)) {
        ax_error(cx, AX_ERR_TYPE, "%s requires %s argument, got %s", name,
                 numeric ? "a numeric" : "a boolean", TYPE(x));
        return false;
    }
    if (naxes < 0 || naxes > x->ndim) {
        ax_error(cx, AX_ERR_VALUE, "%s: %d axes given for %s", name, naxes, TYPE(x));
        return false;
    }
    memset(reduced, 0, AX_MAX_RANK * sizeof *reduced);
    for (int i = 0; i < naxes; i++) {
        int a;
        if (!normalize_axis(cx, name, axes[i], x, &a)) return false;
        if (reduced[a]) {
            ax_error(cx, AX_ERR_VALUE, "%s: axis %d is repeated in the reduction axes", name, a);
            return false;
        }
        reduced[a] = true;
        if (x->shape[a] == 0 && (op == AX_REDUCE_MAX || op == AX_REDUCE_MIN)) {
            ax_error(cx, AX_ERR_VALUE,
                     "zero-size array to reduction operation %s which has no identity (axis %d "
                     "of %s)",
                     op == AX_REDUCE_MAX ? "maximum" : "minimum", a, TYPE(x));
            return false;
        }
    }
    return true;
}

static ax_array *new_reduced_array(ax_ctx *cx, ax_dtype dtype, const ax_array *x,
                                   const bool *reduced) {
    int64_t shape[AX_MAX_RANK];
    int n = 0;
    for (int d = 0; d < x->ndim; d++)
        if (!reduced[d]) shape[n++] = x->shape[d];
    return ax_array_new(cx, dtype, n, shape);
}

ax_array *ax_reduce(ax_ctx *cx, ax_reduce_op op, ax_array *x, int naxes, const int *axes) {
    bool reduced[AX_MAX_RANK];
    if (!check_reduce(cx, op, x, naxes, axes, reduced)) return NULL;
    ax_array *out = new_reduced_array(cx, x->dtype, x, reduced);
    if (!out) return NULL;
    out->weak = x->weak && x->dtype != AX_BOOL;
    if (out->size == 0) return out;

    reduce_plan p;
    p.op = op;
    p.kind = acc_kind_of(op, x->dtype);
    p.kernel = kernels[x->dtype][op];
    p.out_dtype = out->dtype;
    p.out_size = out->size;
    p.out = ax_array_data(out);
    plan_nest(&p, x, reduced);
    if (p.out_size > SMALL_OUTPUT && x->size > 0) {
        reduce_tiled(cx, &p, x->size);
    } else if (!reduce_whole(cx, &p, x->size)) {
        ax_array_release(out);
        return NULL;
    }
    return out;
}

/* ---- argmax / argmin ---- */

#define ISNAN_F(v) isnan(v)
#define ISNAN_I(v) 0

/* First index of the max (CMP is >) or min (CMP is <) of a strided run; the first NaN wins. */
#define DEFINE_ARG_LINE(NAME, T, CMP, ISNAN)                                                       \
    static int64_t NAME##_line(const void *src, int64_t n, int64_t s) {                            \
        const T *x = src;                                                                          \
        T best = x[0];                                                                             \
        int64_t at = 0;                                                                            \
        if (ISNAN(best)) return 0;                                                                 \
        for (int64_t i = 1; i < n; i++) {                                                          \
            T v = x[i * s];                                                                        \
            if (v CMP best) {                                                                      \
                best = v;                                                                          \
                at = i;                                                                            \
            } else if (ISNAN(v)) {                                                                 \
                return i;                                                                          \
            }                                                                                      \
        }                                                                                          \
        return at;                                                                                 \
    }

/* The same over `inner` runs at once, for a contiguous (n, inner) block: row i is
 * src[i * inner ...]. `best` is scratch for inner values. */
#define DEFINE_ARG_ROWS(NAME, T, CMP, ISNAN)                                                       \
    static void NAME##_rows(const void *src, int64_t n, int64_t inner, void *scratch,              \
                            int64_t *at) {                                                         \
        const T *x = src;                                                                          \
        T *best = scratch;                                                                         \
        for (int64_t j = 0; j < inner; j++) {                                                      \
            best[j] = x[j];                                                                        \
            at[j] = 0;                                                                             \
        }                                                                                          \
        for (int64_t i = 1; i < n; i++) {                                                          \
            const T *row = x + i * inner;                                                          \
            for (int64_t j = 0; j < inner; j++) {                                                  \
                T v = row[j];                                                                      \
                if (v CMP best[j] || (ISNAN(v) && !ISNAN(best[j]))) {                              \
                    best[j] = v;                                                                   \
                    at[j] = i;                                                                     \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
    }

typedef int64_t arg_line_fn(const void *src, int64_t n, int64_t s);
typedef void arg_rows_fn(const void *src, int64_t n, int64_t inner, void *scratch, int64_t *at);

#define DEFINE_ARG(SFX, T, ISNAN)                                                                  \
    DEFINE_ARG_LINE(SFX##_argmax, T, >, ISNAN)                                                     \
    DEFINE_ARG_LINE(SFX##_argmin, T, <, ISNAN)                                                     \
    DEFINE_ARG_ROWS(SFX##_argmax, T, >, ISNAN)                                                     \
    DEFINE_ARG_ROWS(SFX##_argmin, T, <, ISNAN)

DEFINE_ARG(u8, uint8_t, ISNAN_I)
DEFINE_ARG(i32, int32_t, ISNAN_I)
DEFINE_ARG(u32, uint32_t, ISNAN_I)
DEFINE_ARG(i64, int64_t, ISNAN_I)
DEFINE_ARG(f32, float, ISNAN_F)
DEFINE_ARG(f64, double, ISNAN_F)

typedef struct {
    arg_line_fn *line;
    arg_rows_fn *rows;
} arg_kernel;

#define ARG_KERNELS(SFX)                                                                           \
    {                                                                                              \
        {SFX##_argmax_line, SFX##_argmax_rows}, {                                                  \
            SFX##_argmin_line, SFX##_argmin_rows                                                   \
        }                                                                                          \
    }
static const arg_kernel arg_kernels[AX_NDTYPES][2] = {
    [AX_BOOL] = ARG_KERNELS(u8), [AX_U8] = ARG_KERNELS(u8),   [AX_I32] = ARG_KERNELS(i32),
    [AX_U32] = ARG_KERNELS(u32), [AX_I64] = ARG_KERNELS(i64), [AX_F32] = ARG_KERNELS(f32),
    [AX_F64] = ARG_KERNELS(f64),
};

/* Shape of x as (outer, n, inner) around `axis`. */
static void split_at_axis(const ax_array *x, int axis, int64_t *outer, int64_t *n, int64_t *inner) {
    *outer = ax_shape_size(axis, x->shape);
    *n = x->shape[axis];
    *inner = ax_shape_size(x->ndim - axis - 1, x->shape + axis + 1);
}

/* Fills at[0 .. outer*inner) with the winning index of every run along `axis`. */
static bool arg_reduce_into(ax_ctx *cx, const arg_kernel *k, const ax_array *x, int axis,
                            int64_t *at) {
    int64_t outer, n, inner;
    split_at_axis(x, axis, &outer, &n, &inner);
    size_t es = ax_dtype_size(x->dtype);
    if (inner > 1 && ax_array_is_contiguous(x)) { /* runs side by side: scan rows */
        void *scratch = malloc((size_t)inner * es);
        if (!scratch) {
            ax_error_oom(cx);
            return false;
        }
        const char *base = ax_array_data(x);
        for (int64_t o = 0; o < outer; o++)
            k->rows(base + o * n * inner * (int64_t)es, n, inner, scratch, at + o * inner);
        free(scratch);
        return true;
    }
    int64_t shape[AX_MAX_RANK], strides[AX_MAX_RANK];
    int m = 0;
    for (int d = 0; d < x->ndim; d++) {
        if (d == axis) continue;
        shape[m] = x->shape[d];
        strides[m++] = x->strides[d];
    }
    const char *base = ax_array_data(x);
    ax_iter it;
    ax_iter_init(&it, m, shape, 1, (const int64_t *[]){strides});
    int64_t j = 0;
    do {
        at[j++] = k->line(base + it.pos[0] * (int64_t)es, n, x->strides[axis]);
    } while (ax_iter_next(&it));
    return true;
}

static ax_array *arg_reduce(ax_ctx *cx, bool is_max, ax_array *x, int axis, ax_dtype index_dtype) {
    const char *name = is_max ? "argmax" : "argmin";
    if (index_dtype != AX_I32 && index_dtype != AX_I64) {
        return ax_error(cx, AX_ERR_TYPE, "%s: the index dtype must be i32 or i64, got %s", name,
                        (unsigned)index_dtype < AX_NDTYPES ? ax_dtype_short(index_dtype)
                                                           : "an unknown dtype");
    }
    if (!normalize_axis(cx, name, axis, x, &axis)) return NULL;
    if (x->shape[axis] == 0)
        return ax_error(cx, AX_ERR_VALUE, "attempt to get %s of an empty sequence (axis %d of %s)",
                        name, axis, TYPE(x));
    bool reduced[AX_MAX_RANK] = {false};
    reduced[axis] = true;
    ax_array *out = new_reduced_array(cx, index_dtype, x, reduced);
    if (!out || out->size == 0) return out;
    int64_t *at = index_dtype == AX_I64 ? ax_array_data(out) : malloc((size_t)out->size * 8);
    if (!at) {
        ax_array_release(out);
        return ax_error_oom(cx);
    }
    bool ok = arg_reduce_into(cx, &arg_kernels[x->dtype][is_max ? 0 : 1], x, axis, at);
    if (ok && index_dtype == AX_I32) {
        int32_t *o = ax_array_data(out);
        for (int64_t j = 0; j < out->size; j++) o[j] = (int32_t)at[j];
    }
    if (index_dtype != AX_I64) free(at);
    if (!ok) {
        ax_array_release(out);
        return NULL;
    }
    return out;
}

ax_array *ax_argmax(ax_ctx *cx, ax_array *x, int axis, ax_dtype index_dtype) {
    return arg_reduce(cx, true, x, axis, index_dtype);
}

ax_array *ax_argmin(ax_ctx *cx, ax_array *x, int axis, ax_dtype index_dtype) {
    return arg_reduce(cx, false, x, axis, index_dtype);
}

/* ---- cumulative scans ---- */

/* Scalar ops in the array's own dtype, as NumPy's accumulate does: integers wrap (computed in
 * the unsigned type UT to avoid signed overflow), floats round at every step. */
#define DEFINE_SCAN_OPS(SFX, T, UT, ISNAN)                                                         \
    static inline T SFX##_cadd(T a, T b) {                                                         \
        return (T)((UT)a + (UT)b);                                                                 \
    }                                                                                              \
    static inline T SFX##_cmul(T a, T b) {                                                         \
        return (T)((UT)a * (UT)b);                                                                 \
    }                                                                                              \
    static inline T SFX##_cmax(T a, T b) {                                                         \
        return b > a || ISNAN(b) ? b : a;                                                          \
    }                                                                                              \
    static inline T SFX##_cmin(T a, T b) {                                                         \
        return b < a || ISNAN(b) ? b : a;                                                          \
    }

/* Scans a contiguous (outer, n, inner) block along n; rows [o0, o1) of outer. */
#define DEFINE_SCAN(NAME, T, COMBINE)                                                              \
    static void NAME(const void *src, void *dst, int64_t o0, int64_t o1, int64_t n, int64_t inner, \
                     bool reverse) {                                                               \
        int64_t first = reverse ? n - 1 : 0, step = reverse ? -1 : 1;                              \
        for (int64_t o = o0; o < o1; o++) {                                                        \
            const T *x = (const T *)src + o * n * inner;                                           \
            T *y = (T *)dst + o * n * inner;                                                       \
            if (inner == 1) { /* one run: keep the running value in a register */                  \
                T acc = x[first];                                                                  \
                y[first] = acc;                                                                    \
                for (int64_t k = 1; k < n; k++) {                                                  \
                    acc = COMBINE(acc, x[first + k * step]);                                       \
                    y[first + k * step] = acc;                                                     \
                }                                                                                  \
                continue;                                                                          \
            }                                                                                      \
            memcpy(y + first * inner, x + first * inner, (size_t)inner * sizeof(T));               \
            for (int64_t k = 1; k < n; k++) {                                                      \
                int64_t i = first + k * step;                                                      \
                const T *prev = y + (i - step) * inner, *xi = x + i * inner;                       \
                T *yi = y + i * inner;                                                             \
                for (int64_t j = 0; j < inner; j++) yi[j] = COMBINE(prev[j], xi[j]);               \
            }                                                                                      \
        }                                                                                          \
    }

typedef void scan_fn(const void *src, void *dst, int64_t o0, int64_t o1, int64_t n, int64_t inner,
                     bool reverse);

#define DEFINE_SCANS(SFX, T, UT, ISNAN)                                                            \
    DEFINE_SCAN_OPS(SFX, T, UT, ISNAN)                                                             \
    DEFINE_SCAN(SFX##_cumsum, T, SFX##_cadd)                                                       \
    DEFINE_SCAN(SFX##_cumprod, T, SFX##_cmul)                                                      \
    DEFINE_SCAN(SFX##_cummax, T, SFX##_cmax)                                                       \
    DEFINE_SCAN(SFX##_cummin, T, SFX##_cmin)

DEFINE_SCANS(u8, uint8_t, unsigned, ISNAN_I)
DEFINE_SCANS(i32, int32_t, uint32_t, ISNAN_I)
DEFINE_SCANS(u32, uint32_t, uint32_t, ISNAN_I)
DEFINE_SCANS(i64, int64_t, uint64_t, ISNAN_I)
DEFINE_SCANS(f32, float, float, ISNAN_F)
DEFINE_SCANS(f64, double, double, ISNAN_F)

#define SCANS_OF(SFX)                                                                              \
    { SFX##_cumsum, SFX##_cumprod, SFX##_cummax, SFX##_cummin }
static scan_fn *const scans[AX_NDTYPES][4] = {
    [AX_BOOL] = SCANS_OF(u8), [AX_U8] = SCANS_OF(u8),   [AX_I32] = SCANS_OF(i32),
    [AX_U32] = SCANS_OF(u32), [AX_I64] = SCANS_OF(i64), [AX_F32] = SCANS_OF(f32),
    [AX_F64] = SCANS_OF(f64),
};

typedef struct {
    scan_fn *fn;
    const void *src;
    void *dst;
    int64_t n, inner;
    bool reverse;
} scan_job;

static void run_scan(void *arg, int64_t begin, int64_t end) {
    const scan_job *j = arg;
    j->fn(j->src, j->dst, begin, end, j->n, j->inner, j->reverse);
}

ax_array *ax_cumulative(ax_ctx *cx, ax_cumulative_op op, ax_array *x, int axis, bool reverse) {
    static const char *const names[] = {"cumsum", "cumprod", "cummax", "cummin"};
    if ((op == AX_CUMSUM || op == AX_CUMPROD) && x->dtype == AX_BOOL)
        return ax_error(cx, AX_ERR_TYPE, "%s requires a numeric argument, got %s", names[op],
                        TYPE(x));
    if (!normalize_axis(cx, names[op], axis, x, &axis)) return NULL;
    ax_array *out = ax_array_new_like(cx, x);
    if (!out) return NULL;
    out->weak = x->weak;
    if (out->size == 0) return out;
    ax_array *xc = ax_strided_contiguous(cx, x);
    if (!xc) {
        ax_array_release(out);
        return NULL;
    }
    int64_t outer;
    scan_job job = {scans[x->dtype][op], ax_array_data(xc), ax_array_data(out), 0, 0, reverse};
    split_at_axis(x, axis, &outer, &job.n, &job.inner);
    int64_t per_outer = job.n * job.inner;
    parallel_tasks(cx, outer, (CHUNK_ELEMENTS + per_outer - 1) / per_outer, run_scan, &job);
    ax_array_release(xc);
    return out;
}

/* Reductions, arg-reductions and cumulative scans (see reduce.h).
 *
 * How a reduction runs. The input's dimensions, size-1 ones left out, stay in logical
 * (row-major) order: neighbours merge only when that keeps every output's order of elements,
 * so an output's value depends on its elements and the shape, never on the memory layout
 * (transposed, reversed, broadcast inputs are read through their strides). What the last
 * dimension is decides the kernels:
 *   - reduced: "runs", the algorithm of reduce.h: each run is cut into chunks of
 *     AX_REDUCE_CHUNK, each chunk folded over AX_REDUCE_LANES lane accumulators, the chunk
 *     results combined in order (x.sum(-1), full reductions);
 *   - kept: "rows", acc[0:n] op= x[i, 0:n] row after row (x.mean(0) on a 10000x10 matrix).
 * The work is cut into tiles of up to TILE outputs along the innermost kept dimension; a
 * tile's accumulators (on the stack) take every reduced element of its outputs in row-major
 * order, then are stored. jit's generated code (compiler/codegen.c) computes the same
 * operations in the same order, so eager and jitted reductions agree bit for bit.
 *
 * Accuracy. Accumulators are 8 bytes wide: double for f32 and f64 (so f32 sums and products
 * are accumulated in f64 and rounded once), uint64 for integer sums and products (wrapping
 * arithmetic gives the same low bits as the dtype's own wrapping), int64/uint64 for integer
 * max/min. A sum of n f64 values is within about (CHUNK / LANES + n / CHUNK) ulps of each
 * term of the exact sum: 256 + n / 4096 (NumPy's pairwise summation: about log2(n)).
 *
 * Threads. Big reductions (>= 256K elements) are split over the pool: tiles are independent
 * tasks; a few outputs with long runs (full reductions) fold their chunks in parallel into an
 * array of partial results, combined in order afterwards. Either way the operations and
 * their order are those of one thread, so results are bitwise reproducible on any machine. */
#include "reduce.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pool.h"
#include "strided.h"

enum {
    PARALLEL_MIN_ELEMENTS = 1 << 18, /* below this, one thread: the pool costs more than it saves */
    CHUNK_ELEMENTS = 1 << 17,        /* work per task of a big reduction or scan */
    TILE = 1024,                     /* outputs per tile of a reduction */
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

enum { LANES = AX_REDUCE_LANES, CHUNK = AX_REDUCE_CHUNK };

static inline uint64_t f64_bits(double v) {
    uint64_t u;
    memcpy(&u, &v, 8);
    return u;
}

static inline double f64_of_bits(uint64_t u) {
    double v;
    memcpy(&v, &u, 8);
    return v;
}

static inline double sum_f(double a, double v) {
    return a + v;
}
static inline double prod_f(double a, double v) {
    return a * v;
}
/* max/min whatever the order of the operands: NaN sticks, and of -0 and +0 max gives +0 and
 * min -0 (the bits of equal values and-ed or or-ed). Generated code does the same. */
static inline double max_f(double a, double v) {
    double tie = a == v ? f64_of_bits(f64_bits(a) & f64_bits(v)) : v;
    return a != a || a > v ? a : tie;
}
static inline double min_f(double a, double v) {
    double tie = a == v ? f64_of_bits(f64_bits(a) | f64_bits(v)) : v;
    return a != a || a < v ? a : tie;
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

/* The kernels of one (dtype, operation), on 8-byte accumulators (see reduce.h):
 *   run(total, x, n, s)     *total op= the chunked, laned fold of the run x[0], x[s], ...;
 *   runs(tot, x, count, ls, rcount, rs, n, s)
 *                           run(tot + j, x + j * ls + r * rs, n, s) for j < count, r < rcount;
 *   chunk(x, n, s)          one chunk's fold (n <= CHUNK), for the threaded full reductions;
 *   rows(acc, x, count, rs, n, s)
 *                           acc[j] op= x[i * rs + j * s] for i < count, j < n (the last axis
 *                           kept). */
typedef void run_fn(void *total, const void *x, int64_t n, int64_t s);
typedef void runs_fn(void *tot, const void *x, int64_t count, int64_t ls, int64_t rcount,
                     int64_t rs, int64_t n, int64_t s);
typedef void chunk_fn(void *out, const void *x, int64_t n, int64_t s);
typedef void rows_fn(void *acc, const void *x, int64_t count, int64_t rs, int64_t n, int64_t s);
typedef void combine_fn(void *acc, const void *v);

/* A chunk of n <= CHUNK elements: element i to lane i % LANES, the lanes folded in order.
 * A run of at most LANES elements gives the same bits added in order from the identity (each
 * lane then holds identity op x_i, and with sums starting at +0 no partial result is -0, so
 * adding +0 for a -0 element changes nothing), which is cheaper for short rows. */
#define DEFINE_CHUNK(NAME, T, ACC, LOAD, OP, IDENT)                                                \
    static inline __attribute__((always_inline))                                                   \
    ACC NAME##_fold(const T *x, int64_t n, int64_t s) {                                            \
        if (n <= LANES) {                                                                          \
            ACC r = IDENT;                                                                         \
            for (int64_t i = 0; i < n; i++) r = OP(r, LOAD(ACC, x[i * s]));                        \
            return r;                                                                              \
        }                                                                                          \
        ACC a[LANES];                                                                              \
        for (int k = 0; k < LANES; k++) a[k] = IDENT;                                              \
        int64_t i = 0;                                                                             \
        if (s == 1)                                                                                \
            for (; i + LANES <= n; i += LANES)                                                     \
                for (int k = 0; k < LANES; k++) a[k] = OP(a[k], LOAD(ACC, x[i + k]));              \
        else                                                                                       \
            for (; i + LANES <= n; i += LANES)                                                     \
                for (int k = 0; k < LANES; k++) a[k] = OP(a[k], LOAD(ACC, x[(i + k) * s]));        \
        for (int k = 0; i + k < n; k++) a[k] = OP(a[k], LOAD(ACC, x[(i + k) * s]));                \
        ACC r = a[0];                                                                              \
        for (int k = 1; k < LANES; k++) r = OP(r, a[k]);                                           \
        return r;                                                                                  \
    }

#define DEFINE_KERNELS(NAME, T, ACC, LOAD, OP, IDENT)                                              \
    DEFINE_CHUNK(NAME, T, ACC, LOAD, OP, IDENT)                                                    \
    static inline __attribute__((always_inline))                                                   \
    ACC NAME##_run_value(ACC t, const T *x, int64_t n, int64_t s) {                                \
        for (int64_t c = 0; c < n; c += CHUNK)                                                     \
            t = OP(t, NAME##_fold(x + c * s, n - c < CHUNK ? n - c : CHUNK, s));                   \
        return t;                                                                                  \
    }                                                                                              \
    static void NAME##_run(void *total, const void *x, int64_t n, int64_t s) {                     \
        *(ACC *)total = s == 1 ? NAME##_run_value(*(ACC *)total, x, n, 1)                          \
                               : NAME##_run_value(*(ACC *)total, x, n, s);                         \
    }                                                                                              \
    /* f[q] = the fold of the short run (n <= LANES) at x + q * qs, for q < 8: eight               \
     * independent chains instead of one, for short rows */                                        \
    static inline __attribute__((always_inline)) void NAME##_folds8(                               \
        ACC *f, const T *x, int64_t qs, int64_t n, int64_t s) {                                    \
        for (int q = 0; q < 8; q++) f[q] = IDENT;                                                  \
        for (int64_t i = 0; i < n; i++)                                                            \
            for (int q = 0; q < 8; q++) f[q] = OP(f[q], LOAD(ACC, x[q * qs + i * s]));             \
    }                                                                                              \
    static void NAME##_runs(void *tot, const void *src, int64_t count, int64_t ls, int64_t rcount, \
                            int64_t rs, int64_t n, int64_t s) {                                    \
        ACC *t = tot, f[8];                                                                        \
        const T *x = src;                                                                          \
        int64_t j = 0;                                                                             \
        if (n <= LANES && rcount == 1)                                                             \
            for (; j + 8 <= count; j += 8) {                                                       \
                NAME##_folds8(f, x + j * ls, ls, n, s);                                            \
                for (int q = 0; q < 8; q++) t[j + q] = OP(t[j + q], f[q]);                         \
            }                                                                                      \
        for (; j < count; j++) {                                                                   \
            ACC v = t[j];                                                                          \
            int64_t r = 0;                                                                         \
            if (n <= LANES)                                                                        \
                for (; r + 8 <= rcount; r += 8) {                                                  \
                    NAME##_folds8(f, x + j * ls + r * rs, rs, n, s);                               \
                    for (int q = 0; q < 8; q++) v = OP(v, f[q]);                                   \
                }                                                                                  \
            if (s == 1)                                                                            \
                for (; r < rcount; r++) v = NAME##_run_value(v, x + j * ls + r * rs, n, 1);        \
            else                                                                                   \
                for (; r < rcount; r++) v = NAME##_run_value(v, x + j * ls + r * rs, n, s);        \
            t[j] = v;                                                                              \
        }                                                                                          \
    }                                                                                              \
    static void NAME##_chunk(void *out, const void *x, int64_t n, int64_t s) {                     \
        *(ACC *)out = NAME##_fold(x, n, s);                                                        \
    }                                                                                              \
    static inline __attribute__((always_inline)) void NAME##_row_body(ACC *acc, const T *x,        \
                                                                      int64_t n, int64_t s) {      \
        if (s == 1)                                                                                \
            for (int64_t j = 0; j < n; j++) acc[j] = OP(acc[j], LOAD(ACC, x[j]));                  \
        else                                                                                       \
            for (int64_t j = 0; j < n; j++) acc[j] = OP(acc[j], LOAD(ACC, x[j * s]));              \
    }                                                                                              \
                                                                                                   \
    static void NAME##_rows(void *acc, const void *src, int64_t count, int64_t rs, int64_t n,      \
                            int64_t s) {                                                           \
        const T *x = src;                                                                          \
        for (int64_t i = 0; i < count; i++) NAME##_row_body(acc, x + i * rs, n, s);                \
    }                                                                                              \
    static void NAME##_combine(void *acc, const void *v) {                                         \
        *(ACC *)acc = OP(*(ACC *)acc, *(const ACC *)v);                                            \
    }

#define DEFINE_INT_DTYPE(SFX, T, MMACC, MAX, MIN, LO, HI)                                          \
    DEFINE_KERNELS(SFX##_sum, T, uint64_t, LD_VAL, sum_u, 0)                                       \
    DEFINE_KERNELS(SFX##_prod, T, uint64_t, LD_VAL, prod_u, 1)                                     \
    DEFINE_KERNELS(SFX##_max, T, MMACC, LD_VAL, MAX, LO)                                           \
    DEFINE_KERNELS(SFX##_min, T, MMACC, LD_VAL, MIN, HI)                                           \
    DEFINE_KERNELS(SFX##_and, T, uint64_t, LD_TRUTH, and_u, 1)                                     \
    DEFINE_KERNELS(SFX##_or, T, uint64_t, LD_TRUTH, or_u, 0)

#define DEFINE_FLOAT_DTYPE(SFX, T)                                                                 \
    DEFINE_KERNELS(SFX##_sum, T, double, LD_VAL, sum_f, 0.0)                                       \
    DEFINE_KERNELS(SFX##_prod, T, double, LD_VAL, prod_f, 1.0)                                     \
    DEFINE_KERNELS(SFX##_max, T, double, LD_VAL, max_f, -INFINITY)                                 \
    DEFINE_KERNELS(SFX##_min, T, double, LD_VAL, min_f, INFINITY)                                  \
    DEFINE_KERNELS(SFX##_and, T, uint64_t, LD_TRUTH, and_u, 1)                                     \
    DEFINE_KERNELS(SFX##_or, T, uint64_t, LD_TRUTH, or_u, 0)

DEFINE_INT_DTYPE(u8, uint8_t, uint64_t, max_u, min_u, 0, UINT64_MAX) /* also bool: 0/1 bytes */
DEFINE_INT_DTYPE(i32, int32_t, int64_t, max_i, min_i, INT64_MIN, INT64_MAX)
DEFINE_INT_DTYPE(u32, uint32_t, uint64_t, max_u, min_u, 0, UINT64_MAX)
DEFINE_INT_DTYPE(i64, int64_t, int64_t, max_i, min_i, INT64_MIN, INT64_MAX)
DEFINE_FLOAT_DTYPE(f32, float)
DEFINE_FLOAT_DTYPE(f64, double)

typedef struct {
    run_fn *run;
    runs_fn *runs;
    chunk_fn *chunk;
    rows_fn *rows;
    combine_fn *combine;
} reduce_kernel;

#define KERNEL(NAME)                                                                               \
    { NAME##_run, NAME##_runs, NAME##_chunk, NAME##_rows, NAME##_combine }
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

#define STORE_LOOP(T, EXPR)                                                                        \
    do {                                                                                           \
        T *o = out;                                                                                \
        for (int64_t j = 0; j < n; j++) o[j * stride] = (T)(EXPR);                                 \
    } while (0)

/* Rounds n accumulators to the output dtype (integers wrap to the dtype's width; a float
 * max/min that is NaN is the quiet NaN: which NaN an extreme keeps depends on the order) and
 * stores them `stride` elements apart. */
static void store_results(ax_dtype t, acc_kind k, bool extreme, const void *acc, void *out,
                          int64_t n, int64_t stride) {
    const double *f = acc;
    const int64_t *i = acc;
    const uint64_t *u = acc;
    switch (t) {
    case AX_F32:
        STORE_LOOP(float, extreme &&isnan(f[j]) ? NAN : f[j]);
        break;
    case AX_F64:
        STORE_LOOP(double, extreme &&isnan(f[j]) ? NAN : f[j]);
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

/* ---- the plan: the logical nest ---- */

/* The input's dims in logical (row-major) order, size-1 dims dropped and neighbours merged
 * where that keeps every output's order of elements (see reduce.h): the order of each
 * output's reduced elements is row-major, so the nest never reorders dims by memory
 * layout. The last dim decides the kernels: reduced (runs) or kept (rows). Work is cut into
 * tiles of up to TILE outputs along the innermost kept dim; each tile is one task that folds
 * every reduced element of its outputs, so the result never depends on the threads. */
typedef struct {
    int ndim;
    int64_t shape[AX_MAX_RANK];
    int64_t in[AX_MAX_RANK];  /* input strides, in elements (any sign, 0 for broadcasts) */
    int64_t out[AX_MAX_RANK]; /* output strides, in elements; 0 on reduced dims */
    bool reduced[AX_MAX_RANK];
    const char *src; /* the input's element [0, ...] */
    size_t es;
    bool runs;  /* the last dim is reduced */
    bool empty; /* no elements to reduce: every output is the identity */
    reduce_kernel kernel;
    acc_kind kind;
    ax_reduce_op op;
    ax_dtype out_dtype;
    char *dst; /* the output's data */
    /* tiles */
    int tdim;   /* the dim a tile runs along: the innermost kept one, or -1 */
    int nk, nr; /* the other kept dims; the reduced dims a tile iterates */
    int kdims[AX_MAX_RANK], rdims[AX_MAX_RANK];
    int64_t ntiles; /* per position of the other kept dims */
    int64_t tile_len;
} reduce_plan;

static bool mergeable(const reduce_plan *p, int d) {
    int e = d + 1;
    if (p->reduced[d] != p->reduced[e]) return false;
    if (p->in[d] != p->in[e] * p->shape[e] || p->out[d] != p->out[e] * p->shape[e]) return false;
    /* merging into the last reduced dim would move chunk boundaries and lanes */
    return !(p->reduced[e] && e == p->ndim - 1 && p->shape[e] % CHUNK != 0);
}

static void merge_dims(reduce_plan *p) {
    for (int d = p->ndim - 2; d >= 0; d--) {
        if (!mergeable(p, d)) continue;
        p->shape[d] *= p->shape[d + 1];
        p->in[d] = p->in[d + 1];
        p->out[d] = p->out[d + 1];
        for (int e = d + 1; e < p->ndim - 1; e++) {
            p->shape[e] = p->shape[e + 1];
            p->in[e] = p->in[e + 1];
            p->out[e] = p->out[e + 1];
            p->reduced[e] = p->reduced[e + 1];
        }
        p->ndim--;
    }
}

static void plan_nest(reduce_plan *p, const ax_array *x, const bool *reduced) {
    int64_t out_strides[AX_MAX_RANK], s = 1;
    for (int d = x->ndim - 1; d >= 0; d--) {
        out_strides[d] = reduced[d] ? 0 : s;
        if (!reduced[d]) s *= x->shape[d];
    }
    p->es = ax_dtype_size(x->dtype);
    p->src = ax_array_data(x);
    p->ndim = 0;
    for (int d = 0; d < x->ndim; d++) {
        if (x->shape[d] == 1) continue;
        p->shape[p->ndim] = x->shape[d];
        p->in[p->ndim] = x->strides[d];
        p->out[p->ndim] = out_strides[d];
        p->reduced[p->ndim++] = reduced[d];
    }
    merge_dims(p);
    if (p->ndim == 0) { /* one element: a row of one output */
        p->ndim = 1;
        p->shape[0] = 1;
        p->in[0] = p->out[0] = 0;
        p->reduced[0] = false;
    }
    p->runs = p->reduced[p->ndim - 1];
}

static void plan_tiles(reduce_plan *p) {
    p->tdim = -1;
    for (int d = p->ndim - 1; d >= 0 && p->tdim < 0; d--)
        if (!p->reduced[d]) p->tdim = d;
    p->nk = p->nr = 0;
    for (int d = 0; d < p->ndim; d++) {
        if (d == p->tdim || (p->runs && d == p->ndim - 1)) continue;
        if (p->reduced[d])
            p->rdims[p->nr++] = d;
        else
            p->kdims[p->nk++] = d;
    }
    int64_t len = p->tdim >= 0 ? p->shape[p->tdim] : 1;
    p->tile_len = len < TILE ? len : TILE;
    p->ntiles = p->tile_len ? (len + p->tile_len - 1) / p->tile_len : 0;
}

static int64_t tiles_total(const reduce_plan *p) {
    int64_t n = p->ntiles;
    for (int i = 0; i < p->nk; i++) n *= p->shape[p->kdims[i]];
    return n;
}

/* Input and output offsets of tile `task`'s first output. */
static void tile_origin(const reduce_plan *p, int64_t task, int64_t *in, int64_t *out,
                        int64_t *len) {
    int64_t tile = task % p->ntiles, rest = task / p->ntiles;
    *in = *out = 0;
    for (int i = p->nk - 1; i >= 0; i--) {
        int d = p->kdims[i];
        int64_t k = rest % p->shape[d];
        rest /= p->shape[d];
        *in += k * p->in[d];
        *out += k * p->out[d];
    }
    *len = 1;
    if (p->tdim >= 0) {
        int64_t t0 = tile * p->tile_len, n = p->shape[p->tdim] - t0;
        *len = n < p->tile_len ? n : p->tile_len;
        *in += t0 * p->in[p->tdim];
        *out += t0 * p->out[p->tdim];
    }
}

/* One tile: its accumulators start at the identity, take every reduced element in row-major
 * order and are stored. */
static void run_tile(const reduce_plan *p, int64_t task, uint64_t *acc) {
    int64_t in0, out0, len;
    tile_origin(p, task, &in0, &out0, &len);
    acc_identity(p->kind, p->op, acc);
    for (int64_t j = 1; j < len; j++) acc[j] = acc[0];
    int64_t tin = p->tdim >= 0 ? p->in[p->tdim] : 0, es = (int64_t)p->es;
    int last = p->ndim - 1;
    /* the kernels loop over the last of the reduced dims they do not reduce themselves */
    int inner_r = p->nr > 0 ? p->nr - 1 : -1;
    int64_t shape[AX_MAX_RANK], strides[AX_MAX_RANK];
    int m = 0;
    for (int i = 0; i < p->nr; i++)
        if (i != inner_r) {
            shape[m] = p->shape[p->rdims[i]];
            strides[m++] = p->in[p->rdims[i]];
        }
    ax_iter it;
    ax_iter_init(&it, m, shape, 1, (const int64_t *[]){strides});
    do {
        if (p->empty) break;
        const char *src = p->src + (in0 + it.pos[0]) * es;
        int64_t rcount = 1, rs = 0;
        if (inner_r >= 0) rcount = p->shape[p->rdims[inner_r]], rs = p->in[p->rdims[inner_r]];
        if (p->runs)
            p->kernel.runs(acc, src, len, tin, rcount, rs, p->shape[last], p->in[last]);
        else
            p->kernel.rows(acc, src, rcount, rs, len, tin);
    } while (ax_iter_next(&it));
    int64_t ostride = p->tdim >= 0 ? p->out[p->tdim] : 1;
    int64_t oes = (int64_t)ax_dtype_size(p->out_dtype);
    bool extreme = p->op == AX_REDUCE_MAX || p->op == AX_REDUCE_MIN;
    store_results(p->out_dtype, p->kind, extreme, acc, p->dst + out0 * oes, len, ostride);
}

static void run_tiles(void *arg, int64_t begin, int64_t end) {
    uint64_t acc[TILE];
    for (int64_t task = begin; task < end; task++) run_tile(arg, task, acc);
}

/* ---- few outputs, long runs: chunks in parallel ----
 * The chunks of every run are folded in parallel into an array of partial results (one per
 * chunk: a small fraction of the input), then each output adds its chunks' results in order:
 * the same operations in the same order as run_tile. */
typedef struct {
    const reduce_plan *p;
    int64_t nchunks; /* per run */
    int64_t nruns;   /* per output */
    uint64_t *partial;
} chunk_job;

/* The input offset of run r of output o (o in row-major order of the kept dims, r of the
 * reduced dims but the last). */
static int64_t run_offset(const reduce_plan *p, int64_t o, int64_t r) {
    int64_t off = 0;
    for (int d = p->ndim - 2; d >= 0; d--) {
        int64_t *k = p->reduced[d] ? &r : &o, i = *k % p->shape[d];
        *k /= p->shape[d];
        off += i * p->in[d];
    }
    return off;
}

static void run_chunks(void *arg, int64_t begin, int64_t end) {
    const chunk_job *j = arg;
    const reduce_plan *p = j->p;
    int last = p->ndim - 1;
    int64_t n = p->shape[last], s = p->in[last], es = (int64_t)p->es;
    for (int64_t q = begin; q < end; q++) {
        int64_t c = q % j->nchunks, run = q / j->nchunks;
        int64_t off = run_offset(p, run / j->nruns, run % j->nruns) + c * CHUNK * s;
        int64_t len = n - c * CHUNK < CHUNK ? n - c * CHUNK : CHUNK;
        p->kernel.chunk(&j->partial[q], p->src + off * es, len, s);
    }
}

static bool reduce_by_chunks(ax_ctx *cx, const reduce_plan *p, int64_t outputs) {
    int64_t n = p->shape[p->ndim - 1];
    chunk_job j = {.p = p, .nchunks = (n + CHUNK - 1) / CHUNK, .nruns = 1};
    for (int d = 0; d < p->ndim - 1; d++)
        if (p->reduced[d]) j.nruns *= p->shape[d];
    int64_t total = outputs * j.nruns * j.nchunks;
    j.partial = malloc((size_t)total * 8);
    if (!j.partial) {
        ax_error_oom(cx);
        return false;
    }
    parallel_tasks(cx, total, 1, run_chunks, &j);
    uint64_t acc;
    bool extreme = p->op == AX_REDUCE_MAX || p->op == AX_REDUCE_MIN;
    int64_t oes = (int64_t)ax_dtype_size(p->out_dtype), per = j.nruns * j.nchunks;
    for (int64_t o = 0; o < outputs; o++) {
        acc_identity(p->kind, p->op, &acc);
        for (int64_t q = 0; q < per; q++) p->kernel.combine(&acc, &j.partial[o * per + q]);
        store_results(p->out_dtype, p->kind, extreme, &acc, p->dst + o * oes, 1, 1);
    }
    free(j.partial);
    return true;
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
    p.dst = ax_array_data(out);
    p.empty = x->size == 0;
    plan_nest(&p, x, reduced);
    plan_tiles(&p);
    int64_t ntasks = tiles_total(&p), total = x->size;
    int64_t run = p.shape[p.ndim - 1];
    if (p.runs && total >= PARALLEL_MIN_ELEMENTS && run >= 2 * CHUNK &&
        ntasks < 2 * ax_pool_threads(cx)) {
        if (!reduce_by_chunks(cx, &p, out->size)) {
            ax_array_release(out);
            return NULL;
        }
        return out;
    }
    if (total < PARALLEL_MIN_ELEMENTS || ntasks == 1) {
        run_tiles(&p, 0, ntasks);
        return out;
    }
    int64_t per_task = total / ntasks;
    parallel_tasks(cx, ntasks, per_task >= CHUNK_ELEMENTS ? 1 : CHUNK_ELEMENTS / per_task,
                   run_tiles, &p);
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

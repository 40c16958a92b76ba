/* Sorting along an axis (see sort.h).
 *
 * Each line along the axis is copied into a buffer, NaNs are moved to its end (stably), the
 * rest is sorted with a stable merge sort, and the result is written out. argsort sorts
 * (key, index) pairs so that the keys being compared sit next to each other in memory.
 *
 * Descending order is JAX's: jnp.argsort(x, descending=True) reverses the line, sorts it
 * stably, and reverses the result. So equal values keep their original order, and NaNs, last
 * in ascending order, come first. ax_sort does the same, so that sort(x) == x[argsort(x)]
 * in both directions. -0.0 and 0.0 compare equal (NumPy, JAX).
 *
 * Lines are independent: big sorts split them over the thread pool, each worker with buffers
 * allocated up front. A Ctrl-C stops the work between lines and between a line's merge
 * passes (each a pass over the line). */
#include "sort.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pool.h"

enum {
    INSERTION_RUN = 32, /* runs sorted by insertion before merging */
    PARALLEL_MIN_ELEMENTS = 1 << 15,
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

/* Stable bottom-up merge sort of a[0..n) using tmp[0..n); it stops early (a[] in any order)
 * when a Ctrl-C is pending. */
#define DEFINE_MERGESORT(NAME, E, LESS)                                                            \
    static void NAME##_insertion(E *a, int64_t n) {                                                \
        for (int64_t i = 1; i < n; i++) {                                                          \
            E v = a[i];                                                                            \
            int64_t j = i;                                                                         \
            for (; j > 0 && LESS(v, a[j - 1]); j--) a[j] = a[j - 1];                               \
            a[j] = v;                                                                              \
        }                                                                                          \
    }                                                                                              \
    static void NAME##_merge(const E *src, E *dst, int64_t lo, int64_t mid, int64_t hi) {          \
        int64_t i = lo, j = mid, k = lo;                                                           \
        if (mid == hi || !LESS(src[mid], src[mid - 1])) { /* already in order */                   \
            memcpy(dst + lo, src + lo, (size_t)(hi - lo) * sizeof(E));                             \
            return;                                                                                \
        }                                                                                          \
        while (i < mid && j < hi) dst[k++] = LESS(src[j], src[i]) ? src[j++] : src[i++];           \
        while (i < mid) dst[k++] = src[i++];                                                       \
        while (j < hi) dst[k++] = src[j++];                                                        \
    }                                                                                              \
    static void NAME(const ax_ctx *cx, E *a, E *tmp, int64_t n) {                                  \
        for (int64_t lo = 0; lo < n; lo += INSERTION_RUN)                                          \
            NAME##_insertion(a + lo, n - lo < INSERTION_RUN ? n - lo : INSERTION_RUN);             \
        E *src = a, *dst = tmp;                                                                    \
        for (int64_t w = INSERTION_RUN; w < n && !ax_ctx_interrupted(cx); w *= 2) {                \
            for (int64_t lo = 0; lo < n; lo += 2 * w) {                                            \
                int64_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;       \
                NAME##_merge(src, dst, lo, mid, hi);                                               \
            }                                                                                      \
            E *t = src;                                                                            \
            src = dst;                                                                             \
            dst = t;                                                                               \
        }                                                                                          \
        if (src != a) memcpy(a, src, (size_t)n * sizeof(E));                                       \
    }

#define KEY_LESS(a, b)  ((a) < (b))
#define PAIR_LESS(a, b) ((a).key < (b).key)
#define ISNAN_F(v)      isnan(v)
#define ISNAN_I(v)      0

/* One line: n elements at src with stride s (elements) -> dst with stride ds. `work` holds
 * 2n keys (sort) or 2n pairs (argsort). `rev` reads and writes the line backwards. */
typedef void sort_line_fn(const ax_ctx *cx, const char *src, int64_t s, char *dst, int64_t ds,
                          int64_t n, bool rev, void *work, ax_dtype index_dtype);

static void store_index(char *dst, ax_dtype t, int64_t i) {
    if (t == AX_I32)
        *(int32_t *)dst = (int32_t)i;
    else
        *(int64_t *)dst = i;
}

#define DEFINE_SORTS(SFX, T, ISNAN)                                                                \
    typedef struct {                                                                               \
        T key;                                                                                     \
        int64_t idx;                                                                               \
    } SFX##_pair;                                                                                  \
    DEFINE_MERGESORT(SFX##_sort_keys, T, KEY_LESS)                                                 \
    DEFINE_MERGESORT(SFX##_sort_pairs, SFX##_pair, PAIR_LESS)                                      \
    static void SFX##_sort_line(const ax_ctx *cx, const char *srcp, int64_t s, char *dstp,         \
                                int64_t ds, int64_t n, bool rev, void *work,                       \
                                ax_dtype index_dtype) {                                            \
        (void)index_dtype;                                                                         \
        const T *src = (const T *)srcp;                                                            \
        T *dst = (T *)dstp, *buf = work, *tmp = buf + n;                                           \
        int64_t k = 0, nan = 0;                                                                    \
        for (int64_t i = 0; i < n; i++) { /* numbers first, NaNs set aside in order */             \
            T v = src[(rev ? n - 1 - i : i) * s];                                                  \
            if (ISNAN(v))                                                                          \
                tmp[nan++] = v;                                                                    \
            else                                                                                   \
                buf[k++] = v;                                                                      \
        }                                                                                          \
        memcpy(buf + k, tmp, (size_t)nan * sizeof(T));                                             \
        SFX##_sort_keys(cx, buf, tmp, k);                                                          \
        for (int64_t i = 0; i < n; i++) dst[(rev ? n - 1 - i : i) * ds] = buf[i];                  \
    }                                                                                              \
    static void SFX##_argsort_line(const ax_ctx *cx, const char *srcp, int64_t s, char *dst,       \
                                   int64_t ds, int64_t n, bool rev, void *work,                    \
                                   ax_dtype index_dtype) {                                         \
        const T *src = (const T *)srcp;                                                            \
        SFX##_pair *buf = work, *tmp = buf + n;                                                    \
        int64_t k = 0, nan = 0;                                                                    \
        for (int64_t i = 0; i < n; i++) {                                                          \
            int64_t at = rev ? n - 1 - i : i;                                                      \
            SFX##_pair v = {src[at * s], at};                                                      \
            if (ISNAN(v.key))                                                                      \
                tmp[nan++] = v;                                                                    \
            else                                                                                   \
                buf[k++] = v;                                                                      \
        }                                                                                          \
        memcpy(buf + k, tmp, (size_t)nan * sizeof *tmp);                                           \
        SFX##_sort_pairs(cx, buf, tmp, k);                                                         \
        int64_t es = (int64_t)ax_dtype_size(index_dtype);                                          \
        for (int64_t i = 0; i < n; i++)                                                            \
            store_index(dst + (rev ? n - 1 - i : i) * ds * es, index_dtype, buf[i].idx);           \
    }

DEFINE_SORTS(u8, uint8_t, ISNAN_I)
DEFINE_SORTS(i32, int32_t, ISNAN_I)
DEFINE_SORTS(u32, uint32_t, ISNAN_I)
DEFINE_SORTS(i64, int64_t, ISNAN_I)
DEFINE_SORTS(f32, float, ISNAN_F)
DEFINE_SORTS(f64, double, ISNAN_F)

#define LINES_OF(SFX)                                                                              \
    { SFX##_sort_line, SFX##_argsort_line }
static sort_line_fn *const sort_lines[AX_NDTYPES][2] = {
    [AX_BOOL] = LINES_OF(u8), [AX_U8] = LINES_OF(u8),   [AX_I32] = LINES_OF(i32),
    [AX_U32] = LINES_OF(u32), [AX_I64] = LINES_OF(i64), [AX_F32] = LINES_OF(f32),
    [AX_F64] = LINES_OF(f64),
};

typedef struct {
    const ax_ctx *cx;
    sort_line_fn *fn;
    const ax_array *x;
    const ax_array *out;
    int axis;
    bool descending;
    int64_t nlines, nworkers;
    size_t work_bytes; /* per worker */
    char *work;
} sort_job;

/* Sorts lines [begin, end): line l is the l-th position, row-major, of the dims but `axis`. */
static void sort_lines_range(const sort_job *j, int64_t begin, int64_t end, void *work) {
    const ax_array *x = j->x, *out = j->out;
    int64_t n = x->shape[j->axis];
    int64_t xes = (int64_t)ax_dtype_size(x->dtype), oes = (int64_t)ax_dtype_size(out->dtype);
    const char *xdata = ax_array_data(x);
    char *odata = ax_array_data(out);
    for (int64_t l = begin; l < end && !ax_ctx_interrupted(j->cx); l++) {
        int64_t rest = l, xoff = 0, ooff = 0;
        for (int d = x->ndim - 1; d >= 0; d--) {
            if (d == j->axis) continue;
            int64_t i = rest % x->shape[d];
            rest /= x->shape[d];
            xoff += i * x->strides[d];
            ooff += i * out->strides[d];
        }
        j->fn(j->cx, xdata + xoff * xes, x->strides[j->axis], odata + ooff * oes,
              out->strides[j->axis], n, j->descending, work, out->dtype);
    }
}

static void run_workers(void *arg, int64_t begin, int64_t end) {
    const sort_job *j = arg;
    for (int64_t w = begin; w < end; w++)
        sort_lines_range(j, j->nlines * w / j->nworkers, j->nlines * (w + 1) / j->nworkers,
                         j->work + (size_t)w * j->work_bytes);
}

static ax_array *sort_common(ax_ctx *cx, ax_array *x, int axis, bool descending, bool arg,
                             ax_dtype index_dtype) {
    const char *name = arg ? "argsort" : "sort";
    if (arg && index_dtype != AX_I32 && index_dtype != AX_I64)
        return ax_error(cx, AX_ERR_TYPE, "argsort: the index dtype must be i32 or i64, got %s",
                        (unsigned)index_dtype < AX_NDTYPES ? ax_dtype_short(index_dtype)
                                                           : "an unknown dtype");
    char type[400];
    ax_array_type_format(type, sizeof type, x);
    if (x->ndim == 0)
        return ax_error(cx, AX_ERR_VALUE, "cannot %s a rank-0 array (%s)", name, type);
    int a = axis < 0 ? axis + x->ndim : axis;
    if (a < 0 || a >= x->ndim)
        return ax_error(cx, AX_ERR_VALUE, "%s: axis %d is out of bounds for %s", name, axis, type);
    ax_array *out = ax_array_new(cx, arg ? index_dtype : x->dtype, x->ndim, x->shape);
    if (!out) return NULL;
    out->weak = !arg && x->weak;
    if (out->size == 0) return out;
    sort_job j = {cx, sort_lines[x->dtype][arg], x, out, a, descending, 0, 1, 0, NULL};
    int64_t n = x->shape[a];
    j.nlines = x->size / n;
    if (x->size >= PARALLEL_MIN_ELEMENTS && j.nlines > 1) {
        int threads = ax_pool_threads(cx);
        j.nworkers = j.nlines < threads ? j.nlines : threads;
    }
    size_t item = arg ? sizeof(int64_t) + 8 : ax_dtype_size(x->dtype); /* pairs pad to 16 */
    j.work_bytes = 2 * (size_t)n * item;
    j.work = malloc(j.work_bytes * (size_t)j.nworkers);
    if (!j.work) {
        ax_array_release(out);
        return ax_error_oom(cx);
    }
    if (j.nworkers > 1)
        parallel_tasks(cx, j.nworkers, 1, run_workers, &j);
    else
        run_workers(&j, 0, 1);
    free(j.work);
    if (ax_ctx_take_interrupt(cx)) {
        ax_array_release(out);
        return NULL;
    }
    return out;
}

ax_array *ax_sort(ax_ctx *cx, ax_array *x, int axis, bool descending) {
    return sort_common(cx, x, axis, descending, false, AX_I64);
}

ax_array *ax_argsort(ax_ctx *cx, ax_array *x, int axis, bool descending, ax_dtype index_dtype) {
    return sort_common(cx, x, axis, descending, true, index_dtype);
}

/* Strided block copies (see strided.h). */
#include "strided.h"

#include <assert.h>
#include <string.h>

void ax_copy_plan_init(ax_copy_plan *plan, int ndim, const int64_t *shape,
                       const int64_t *dst_strides, const int64_t *src_strides, size_t elsize) {
    assert(ndim >= 0 && ndim <= AX_MAX_RANK && elsize >= 1 && elsize <= 8);
    plan->elsize = elsize;
    plan->count = ax_shape_size(ndim, shape);
    int n = 0;
    for (int d = 0; d < ndim; d++) {
        if (shape[d] == 1) continue;
        bool mergeable = n > 0 && plan->dst_strides[n - 1] == dst_strides[d] * shape[d] &&
                         plan->src_strides[n - 1] == src_strides[d] * shape[d];
        if (mergeable) {
            plan->shape[n - 1] *= shape[d];
            plan->dst_strides[n - 1] = dst_strides[d];
            plan->src_strides[n - 1] = src_strides[d];
            continue;
        }
        plan->shape[n] = shape[d];
        plan->dst_strides[n] = dst_strides[d];
        plan->src_strides[n] = src_strides[d];
        n++;
    }
    plan->ndim = n;
}

/* The innermost run: n elements, strides in elements. Typed loops let the compiler move
 * whole elements instead of calling memcpy per element. */
static void copy_run(char *dst, int64_t ds, const char *src, int64_t ss, int64_t n, size_t es) {
    if (ds == 1 && ss == 1) {
        memcpy(dst, src, (size_t)n * es);
        return;
    }
    switch (es) {
    case 1:
        for (int64_t i = 0; i < n; i++) dst[i * ds] = src[i * ss];
        break;
    case 4: {
        uint32_t *d = (uint32_t *)dst;
        const uint32_t *s = (const uint32_t *)src;
        for (int64_t i = 0; i < n; i++) d[i * ds] = s[i * ss];
        break;
    }
    case 8: {
        uint64_t *d = (uint64_t *)dst;
        const uint64_t *s = (const uint64_t *)src;
        for (int64_t i = 0; i < n; i++) d[i * ds] = s[i * ss];
        break;
    }
    default:
        for (int64_t i = 0; i < n; i++)
            memcpy(dst + i * ds * (int64_t)es, src + i * ss * (int64_t)es, es);
    }
}

/* A transposing copy: the innermost dimension is contiguous in dst but not in src, while
 * dimension `o` is contiguous (or nearly) in src. Walking dst row by row would touch a new
 * src cache line for every element; 32 x 32 tiles keep both sides' lines in cache. */
enum { TILE = 32 };

#define TILE_LOOP(T)                                                                               \
    do {                                                                                           \
        T *d = (T *)dst;                                                                           \
        const T *s = (const T *)src;                                                               \
        for (int64_t o = o0; o < o1; o++)                                                          \
            for (int64_t i = i0; i < i1; i++) d[o * dso + i * dsi] = s[o * sso + i * ssi];         \
    } while (0)

static void copy_tiles(char *dst, int64_t dso, int64_t dsi, const char *src, int64_t sso,
                       int64_t ssi, int64_t no, int64_t ni, size_t es) {
    for (int64_t o0 = 0; o0 < no; o0 += TILE) {
        int64_t o1 = o0 + TILE < no ? o0 + TILE : no;
        for (int64_t i0 = 0; i0 < ni; i0 += TILE) {
            int64_t i1 = i0 + TILE < ni ? i0 + TILE : ni;
            switch (es) {
            case 1:
                TILE_LOOP(uint8_t);
                break;
            case 4:
                TILE_LOOP(uint32_t);
                break;
            case 8:
                TILE_LOOP(uint64_t);
                break;
            default:
                for (int64_t o = o0; o < o1; o++)
                    for (int64_t i = i0; i < i1; i++)
                        memcpy(dst + (o * dso + i * dsi) * (int64_t)es,
                               src + (o * sso + i * ssi) * (int64_t)es, es);
            }
        }
    }
}

static int64_t abs64(int64_t v) {
    return v < 0 ? -v : v;
}

/* The dimension to tile against the innermost one, or -1 when a plain walk is as good. */
static int transpose_dim(const ax_copy_plan *plan) {
    int inner = plan->ndim - 1, best = -1;
    if (plan->ndim < 2 || plan->shape[inner] < 8) return -1;
    for (int d = 0; d < inner; d++)
        if (plan->shape[d] >= 8 &&
            (best < 0 || abs64(plan->src_strides[d]) < abs64(plan->src_strides[best])))
            best = d;
    if (best < 0 || abs64(plan->src_strides[best]) >= abs64(plan->src_strides[inner]) ||
        abs64(plan->dst_strides[inner]) > abs64(plan->dst_strides[best]))
        return -1;
    return best;
}

static void run_tiled(const ax_copy_plan *plan, int o, char *dst, const char *src) {
    int inner = plan->ndim - 1, n = 0;
    int64_t shape[AX_MAX_RANK], ds[AX_MAX_RANK], ss[AX_MAX_RANK];
    for (int d = 0; d < inner; d++) {
        if (d == o) continue;
        shape[n] = plan->shape[d];
        ds[n] = plan->dst_strides[d];
        ss[n++] = plan->src_strides[d];
    }
    int64_t es = (int64_t)plan->elsize;
    ax_iter it;
    ax_iter_init(&it, n, shape, 2, (const int64_t *[]){ds, ss});
    do {
        copy_tiles(dst + it.pos[0] * es, plan->dst_strides[o], plan->dst_strides[inner],
                   src + it.pos[1] * es, plan->src_strides[o], plan->src_strides[inner],
                   plan->shape[o], plan->shape[inner], plan->elsize);
    } while (ax_iter_next(&it));
}

void ax_copy_plan_run(const ax_copy_plan *plan, void *dst, const void *src) {
    if (plan->count == 0) return;
    size_t es = plan->elsize;
    if (plan->ndim == 0) {
        memcpy(dst, src, es);
        return;
    }
    int o = transpose_dim(plan);
    if (o >= 0) {
        run_tiled(plan, o, dst, src);
        return;
    }
    int inner = plan->ndim - 1;
    ax_iter it;
    ax_iter_init(&it, inner, plan->shape, 2,
                 (const int64_t *[]){plan->dst_strides, plan->src_strides});
    do {
        copy_run((char *)dst + it.pos[0] * (int64_t)es, plan->dst_strides[inner],
                 (const char *)src + it.pos[1] * (int64_t)es, plan->src_strides[inner],
                 plan->shape[inner], es);
    } while (ax_iter_next(&it));
}

void ax_strided_copy(void *dst, const int64_t *dst_strides, const void *src,
                     const int64_t *src_strides, int ndim, const int64_t *shape, size_t elsize) {
    ax_copy_plan plan;
    ax_copy_plan_init(&plan, ndim, shape, dst_strides, src_strides, elsize);
    ax_copy_plan_run(&plan, dst, src);
}

ax_array *ax_strided_contiguous(ax_ctx *cx, ax_array *x) {
    if (ax_array_is_contiguous(x)) return ax_array_retain(x);
    ax_array *c = ax_array_new(cx, x->dtype, x->ndim, x->shape);
    if (!c) return NULL;
    c->weak = x->weak;
    ax_strided_copy(ax_array_data(c), c->strides, ax_array_data(x), x->strides, x->ndim, x->shape,
                    ax_dtype_size(x->dtype));
    return c;
}

/* Doubling copies: log2(count) memcpy calls instead of count element stores. */
void ax_fill_elements(void *dst, int64_t count, const void *elem, size_t elsize) {
    if (count <= 0) return;
    char *d = dst;
    memcpy(d, elem, elsize);
    size_t total = (size_t)count * elsize, done = elsize;
    while (done < total) {
        size_t n = done < total - done ? done : total - done;
        memcpy(d + done, d, n);
        done += n;
    }
}

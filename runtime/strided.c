/* Strided block copies (see strided.h). */
#include "strided.h"

#include <string.h>

void ax_copy_plan_init(ax_copy_plan *plan, int ndim, const int64_t *shape,
                       const int64_t *dst_strides, const int64_t *src_strides, size_t elsize) {
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

void ax_copy_plan_run(const ax_copy_plan *plan, void *dst, const void *src) {
    if (plan->count == 0) return;
    size_t es = plan->elsize;
    if (plan->ndim == 0) {
        memcpy(dst, src, es);
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

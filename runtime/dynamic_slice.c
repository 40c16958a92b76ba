/* dynamic_slice / dynamic_update_slice (see dynamic_slice.h). */
#include "dynamic_slice.h"

#include <string.h>

static int64_t clamp_start(int64_t start, int64_t dim, int64_t size) {
    int64_t hi = dim - size;
    return start < 0 ? 0 : start > hi ? hi : start;
}

ax_array *ax_dynamic_slice(ax_ctx *cx, ax_array *x, const int64_t *starts, const int64_t *sizes) {
    int64_t offset = x->offset;
    for (int d = 0; d < x->ndim; d++) {
        if (sizes[d] < 0 || sizes[d] > x->shape[d])
            return ax_error(cx, AX_ERR_SHAPE,
                            "dynamic_slice: slice size %lld on axis %d does "
                            "not fit in an axis of size %lld",
                            (long long)sizes[d], d, (long long)x->shape[d]);
        offset += clamp_start(starts[d], x->shape[d], sizes[d]) * x->strides[d];
    }
    return ax_array_view(cx, x, x->ndim, sizes, x->strides, offset);
}

ax_array *ax_dynamic_update_slice(ax_ctx *cx, ax_array *x, ax_array *update,
                                  const int64_t *starts) {
    if (update->dtype != x->dtype || update->ndim != x->ndim)
        return ax_error(cx, AX_ERR_TYPE,
                        "dynamic_update_slice: the update must have the "
                        "array's dtype and rank");
    for (int d = 0; d < x->ndim; d++)
        if (update->shape[d] > x->shape[d])
            return ax_error(cx, AX_ERR_SHAPE,
                            "dynamic_update_slice: the update does not fit "
                            "on axis %d",
                            d);
    ax_array *out = ax_array_copy(cx, x);
    if (!out || update->size == 0) return out;
    /* the copy is contiguous: walk the update and the destination window together */
    size_t es = ax_dtype_size(x->dtype);
    char *dst = ax_array_data(out);
    for (int d = 0; d < x->ndim; d++)
        dst +=
            clamp_start(starts[d], x->shape[d], update->shape[d]) * out->strides[d] * (int64_t)es;
    const char *src = ax_array_data(update);
    ax_iter it;
    ax_iter_init(&it, update->ndim, update->shape, 2,
                 (const int64_t *[]){update->strides, out->strides});
    do {
        memcpy(dst + it.pos[1] * (int64_t)es, src + it.pos[0] * (int64_t)es, es);
    } while (ax_iter_next(&it));
    return out;
}

/* threefry2x32: 20 rounds of add-rotate-xor with a key injection every 4 rounds, exactly as
 * Random123 and JAX compute it. */
#include "prng.h"

#include <string.h>

#include "pool.h"

static inline uint32_t rotl(uint32_t v, int d) {
    return (v << d) | (v >> (32 - d));
}

void ax_threefry2x32_pair(uint32_t k0, uint32_t k1, uint32_t x0, uint32_t x1, uint32_t *y0,
                          uint32_t *y1) {
    static const int rot[2][4] = {{13, 15, 26, 6}, {17, 29, 16, 24}};
    uint32_t ks[3] = {k0, k1, k0 ^ k1 ^ 0x1BD11BDAu};
    x0 += ks[0];
    x1 += ks[1];
    for (int i = 1; i <= 5; i++) {
        const int *r = rot[(i - 1) & 1];
        for (int j = 0; j < 4; j++) {
            x0 += x1;
            x1 = rotl(x1, r[j]);
            x1 ^= x0;
        }
        x0 += ks[i % 3];
        x1 += ks[(i + 1) % 3] + (uint32_t)i;
    }
    *y0 = x0;
    *y1 = x1;
}

typedef struct hash_job {
    const uint32_t *in[4];
    int64_t strides[4][AX_MAX_RANK];
    int ndim;
    const int64_t *shape;
    uint32_t *y0, *y1;
} hash_job;

static void hash_range(void *arg, int64_t begin, int64_t end) {
    hash_job *j = arg;
    for (int64_t i = begin; i < end; i++) {
        /* Element offsets of flat position i in each (broadcast) operand. */
        int64_t off[4] = {0, 0, 0, 0}, rest = i;
        for (int d = j->ndim - 1; d >= 0; d--) {
            int64_t k = rest % j->shape[d];
            rest /= j->shape[d];
            for (int o = 0; o < 4; o++) off[o] += k * j->strides[o][d];
        }
        ax_threefry2x32_pair(j->in[0][off[0]], j->in[1][off[1]], j->in[2][off[2]], j->in[3][off[3]],
                             &j->y0[i], &j->y1[i]);
    }
}

/* Strides of x broadcast to the output shape (0 where x has size 1 or lacks the dim). */
static void broadcast_strides(const ax_array *x, int ndim, const int64_t *shape, int64_t *out) {
    for (int d = 0; d < ndim; d++) {
        int xd = d - (ndim - x->ndim);
        out[d] = xd < 0 || x->shape[xd] == 1 ? 0 : x->strides[xd];
        (void)shape;
    }
}

int ax_threefry2x32(ax_ctx *cx, ax_array *k0, ax_array *k1, ax_array *x0, ax_array *x1,
                    ax_array **y0, ax_array **y1) {
    ax_array *ops[4] = {k0, k1, x0, x1};
    int ndim = 0;
    int64_t shape[AX_MAX_RANK] = {0};
    for (int o = 0; o < 4; o++) {
        if (ops[o]->dtype != AX_U32)
            return ax_error(cx, AX_ERR_TYPE, "threefry2x32 needs uint32 operands, got %s",
                            ax_dtype_name(ops[o]->dtype)),
                   -1;
        int64_t tmp[AX_MAX_RANK];
        int n;
        if (!ax_shape_broadcast(ndim, shape, ops[o]->ndim, ops[o]->shape, &n, tmp))
            return ax_error(cx, AX_ERR_SHAPE, "threefry2x32: operand shapes do not broadcast"), -1;
        ndim = n;
        memcpy(shape, tmp, sizeof tmp);
    }
    *y0 = ax_array_new(cx, AX_U32, ndim, shape);
    *y1 = *y0 ? ax_array_new(cx, AX_U32, ndim, shape) : NULL;
    if (!*y1) {
        ax_array_release(*y0);
        *y0 = NULL;
        return -1;
    }
    hash_job j = {.ndim = ndim, .shape = shape, .y0 = (*y0)->buf->data, .y1 = (*y1)->buf->data};
    for (int o = 0; o < 4; o++) {
        j.in[o] = ax_array_data(ops[o]);
        broadcast_strides(ops[o], ndim, shape, j.strides[o]);
    }
    ax_parallel_for(cx, (*y0)->size, 1 << 14, hash_range, &j);
    return 0;
}

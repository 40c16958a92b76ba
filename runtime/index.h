/* Gather and scatter: indexing by integer arrays.
 *
 * gather(x, idx, axes): idx is an integer array of shape B + (k,), indexing the k dimensions
 * `axes` of x (distinct, in any order). The result has shape B + (the dims of x not in axes, in
 * order): out[b..., rest...] = x[with axes[j] = idx[b..., j], the rest from rest...].
 * Indices must be in range (negative ones are the caller's to normalise): an out-of-bounds index
 * is an IndexError naming the index, the axis and its size.
 *
 * scatter(x, idx, updates, axes, mode): the inverse; updates has the gather result's shape; a
 * copy of x with each addressed element combined with its update (duplicates: set keeps the
 * last, add/mul/min/max accumulate). */
#ifndef AX_INDEX_H
#define AX_INDEX_H

#include "array.h"

typedef enum { AX_SCATTER_SET, AX_SCATTER_ADD, AX_SCATTER_MUL, AX_SCATTER_MIN,
               AX_SCATTER_MAX } ax_scatter_mode;

ax_array *ax_gather(ax_ctx *cx, ax_array *x, ax_array *idx, int naxes, const int *axes);
ax_array *ax_scatter(ax_ctx *cx, ax_array *x, ax_array *idx, ax_array *updates, int naxes,
                     const int *axes, ax_scatter_mode mode);

#endif

/* Shape operations. Those that can be views are views (no copy): reshape of contiguous data,
 * transpose, broadcast_in_dim, slice, squeeze, expand_dims, rev. */
#ifndef AX_SHAPE_OPS_H
#define AX_SHAPE_OPS_H

#include "array.h"

/* All of these validate their arguments and record a ShapeError/ValueError on bad input. */
ax_array *ax_reshape(ax_ctx *cx, ax_array *x, int ndim, const int64_t *shape);
ax_array *ax_transpose(ax_ctx *cx, ax_array *x, const int *perm); /* perm has x->ndim entries */
/* lax.broadcast_in_dim: operand dim i goes to output dim bdims[i]; sizes equal or 1. */
ax_array *ax_broadcast_in_dim(ax_ctx *cx, ax_array *x, int ndim, const int64_t *shape,
                              const int *bdims);
/* Same dtype inputs, equal shapes except along `axis`. */
ax_array *ax_concatenate(ax_ctx *cx, int n, ax_array *const *xs, int axis);
/* lax.slice: start <= limit, strides >= 1, per dimension. */
ax_array *ax_slice(ax_ctx *cx, ax_array *x, const int64_t *start, const int64_t *limit,
                   const int64_t *strides);
/* lax.pad: lo/hi may be negative (cropping); interior >= 0; `value` is a rank-0 array of x's
 * dtype. */
ax_array *ax_pad(ax_ctx *cx, ax_array *x, ax_array *value, const int64_t *lo, const int64_t *hi,
                 const int64_t *interior);
/* The size of an axis of n elements padded by lo, hi and interior (lax.pad's rule), false
 * when it does not fit in int64. */
bool ax_pad_size(int64_t n, int64_t lo, int64_t hi, int64_t interior, int64_t *size);
ax_array *ax_squeeze(ax_ctx *cx, ax_array *x, int ndims, const int *dims);   /* dims of size 1 */
ax_array *ax_expand_dims(ax_ctx *cx, ax_array *x, int ndims, const int *dims); /* output dims */
ax_array *ax_rev(ax_ctx *cx, ax_array *x, int ndims, const int *dims);

#endif

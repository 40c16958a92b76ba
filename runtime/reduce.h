/* Reductions over any set of axes, arg-reductions, and cumulative scans. */
#ifndef AX_REDUCE_H
#define AX_REDUCE_H

#include "array.h"

typedef enum { AX_REDUCE_SUM, AX_REDUCE_PROD, AX_REDUCE_MAX, AX_REDUCE_MIN, AX_REDUCE_AND,
               AX_REDUCE_OR } ax_reduce_op;

/* Reduces x over the given axes (each in [0, ndim), distinct; naxes may be 0). The result
 * drops the reduced axes and keeps x's dtype (AND/OR: bool). Sums of floats are accurate to
 * NumPy's level (pairwise or wider accumulation). max/min of an empty axis is a ValueError;
 * max/min propagate NaN. */
ax_array *ax_reduce(ax_ctx *cx, ax_reduce_op op, ax_array *x, int naxes, const int *axes);

/* Index (dtype `index_dtype`, i32 or i64) of the first max / min along `axis`; NaN counts as
 * the max and the min, as in NumPy. Empty axis: ValueError. */
ax_array *ax_argmax(ax_ctx *cx, ax_array *x, int axis, ax_dtype index_dtype);
ax_array *ax_argmin(ax_ctx *cx, ax_array *x, int axis, ax_dtype index_dtype);

typedef enum { AX_CUMSUM, AX_CUMPROD, AX_CUMMAX, AX_CUMMIN } ax_cumulative_op;
/* Inclusive scan along `axis`; `reverse` scans from the end. Same shape and dtype as x. */
ax_array *ax_cumulative(ax_ctx *cx, ax_cumulative_op op, ax_array *x, int axis, bool reverse);

#endif

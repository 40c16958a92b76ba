/* Reductions over any set of axes, arg-reductions, and cumulative scans. */
#ifndef AX_REDUCE_H
#define AX_REDUCE_H

#include "array.h"

typedef enum { AX_REDUCE_SUM, AX_REDUCE_PROD, AX_REDUCE_MAX, AX_REDUCE_MIN, AX_REDUCE_AND,
               AX_REDUCE_OR } ax_reduce_op;

/* How sums and products are computed: one algorithm, which jit's generated code follows too
 * (compiler/codegen.c), so that eager and jitted reductions give the same bits. With the
 * array's size-1 axes left out, each output's elements are visited in row-major order of the
 * reduced axes. When the last axis is reduced, each run along it is cut into chunks of
 * AX_REDUCE_CHUNK elements; element i of a chunk goes to accumulator i % AX_REDUCE_LANES,
 * the accumulators are combined in order (0, 1, ...) and the chunk's result is combined into
 * the output's total, in order. When the last axis is kept, each output's elements are
 * combined into its total one by one, in order. Accumulators start at the identity and are
 * f64 for f32 and f64 (integers: 64-bit, wrapping; bools: and/or). docs/jit.md has the
 * reasons and the measurements. */
enum { AX_REDUCE_LANES = 16, AX_REDUCE_CHUNK = 4096 };

/* Reduces x over the given axes (each in [0, ndim), distinct; naxes may be 0). The result
 * drops the reduced axes and keeps x's dtype (AND/OR: bool). Sums and products follow the
 * algorithm above. max/min of an empty axis is a ValueError; max/min propagate NaN (any NaN
 * makes the result NaN, the quiet NaN with no sign) and, of -0 and +0, max is +0 and min is
 * -0 whatever their order. */
ax_array *ax_reduce(ax_ctx *cx, ax_reduce_op op, ax_array *x, int naxes, const int *axes);

/* Index (dtype `index_dtype`, i32 or i64) of the first max / min along `axis`; NaN counts as
 * the max and the min, as in NumPy. Empty axis: ValueError. */
ax_array *ax_argmax(ax_ctx *cx, ax_array *x, int axis, ax_dtype index_dtype);
ax_array *ax_argmin(ax_ctx *cx, ax_array *x, int axis, ax_dtype index_dtype);

typedef enum { AX_CUMSUM, AX_CUMPROD, AX_CUMMAX, AX_CUMMIN } ax_cumulative_op;
/* Inclusive scan along `axis`; `reverse` scans from the end. Same shape and dtype as x. */
ax_array *ax_cumulative(ax_ctx *cx, ax_cumulative_op op, ax_array *x, int axis, bool reverse);

#endif

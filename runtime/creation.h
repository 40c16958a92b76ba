/* Arrays made from nothing: iota and full (arange, linspace, eye build on these). */
#ifndef AX_CREATION_H
#define AX_CREATION_H

#include "array.h"

/* lax.iota / broadcasted_iota: values 0, 1, ... along `dimension` of `shape`. */
ax_array *ax_iota(ax_ctx *cx, ax_dtype dtype, int ndim, const int64_t *shape, int dimension);
/* An array of `shape` filled with `value` converted to dtype. */
ax_array *ax_full(ax_ctx *cx, ax_dtype dtype, int ndim, const int64_t *shape, double value);
/* start + i * step for i < n, computed as NumPy's arange does (in f64, then converted). */
ax_array *ax_arange(ax_ctx *cx, ax_dtype dtype, double start, double step, int64_t n);
/* NumPy's linspace: n points from start to stop (endpoint included when `endpoint`). */
ax_array *ax_linspace(ax_ctx *cx, ax_dtype dtype, double start, double stop, int64_t n,
                      bool endpoint);
/* n x m with ones on diagonal k. */
ax_array *ax_eye(ax_ctx *cx, ax_dtype dtype, int64_t n, int64_t m, int64_t k);

#endif

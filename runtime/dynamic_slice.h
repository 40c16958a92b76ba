/* lax.dynamic_slice and lax.dynamic_update_slice with start indices known at run time.
 *
 * Starts are clamped into [0, dim - size] on every axis, as lax does, so that the window
 * always lies inside the array (no out-of-bounds error, as in JAX). */
#ifndef AX_DYNAMIC_SLICE_H
#define AX_DYNAMIC_SLICE_H

#include "array.h"

/* The window of x of shape `sizes` (x->ndim entries, each in [0, dim]) at `starts`: a view. */
ax_array *ax_dynamic_slice(ax_ctx *cx, ax_array *x, const int64_t *starts, const int64_t *sizes);
/* A copy of x with `update` (same dtype and rank, each dim <= x's) written at `starts`. */
ax_array *ax_dynamic_update_slice(ax_ctx *cx, ax_array *x, ax_array *update, const int64_t *starts);

#endif

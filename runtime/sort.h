/* Sorting along an axis (stable; NaN sorts last, as NumPy). */
#ifndef AX_SORT_H
#define AX_SORT_H

#include "array.h"

ax_array *ax_sort(ax_ctx *cx, ax_array *x, int axis, bool descending);
/* Indices (i32, or i64 under x64 when `index_dtype` says so) that sort x along axis, stably. */
ax_array *ax_argsort(ax_ctx *cx, ax_array *x, int axis, bool descending, ax_dtype index_dtype);

#endif

/* The NumPy layer's value side, shared by stdlib/np*.c and stdlib/builtins*.c: arrays from
 * values (lists, scalars), indexing with JAX's out-of-bounds modes, x.at. The array side is
 * numpy/np.h (included). Same conventions as there. */
#ifndef AX_NP_LIB_H
#define AX_NP_LIB_H

#include "../numpy/np.h"
#include "np.h"

/* ---- indexing modes (np_index.c) ---- */

/* JAX's out-of-bounds modes for gathers and scatters (mode=): CHECK is ax's IndexError;
 * FILL reads a fill value / drops an update; CLIP clamps into bounds. */
typedef enum { AX_INDEX_CHECK, AX_INDEX_CLIP, AX_INDEX_FILL } ax_index_mode;
/* Reads mode= ("clip", "fill", "drop", "promise_in_bounds" (clip for gets, drop for
 * updates), "raise" or None); ValueError otherwise. */
bool ax_np_parse_mode(ax_interp *in, ax_value *v, bool update, ax_index_mode *mode);
/* x[index] under a mode; fill_value (may be NULL: NaN for floats, the type's most negative
 * value for signed ints, its largest for unsigned, True for bools) for FILL. */
ax_array *ax_np_index_mode(ax_interp *in, ax_array *x, ax_value *index, ax_index_mode mode,
                           ax_array *fill_value);
/* JAX's default fill value of a dtype (a rank-0 array). */
ax_array *ax_np_fill_default(ax_ctx *cx, ax_dtype dtype);

/* ---- values (np_value.c) ---- */

/* Any value that NumPy would accept as an array (array, number, nested lists/tuples of them,
 * possibly tracers) as an array: weak scalars stay weak, lists make strongly typed arrays.
 * TypeError mentioning `what` otherwise. */
ax_array *ax_np_asarray(ax_interp *in, ax_value *v, const char *what);
/* Same, converted to `dtype` (strongly typed) unless dtype < 0. */
ax_array *ax_np_array(ax_interp *in, ax_value *v, int dtype, const char *what);
/* The array of an array value (borrowed), or NULL without error for other kinds. */
ax_array *ax_np_value_array(ax_value *v);
/* Wraps a new array reference as a value, taking it (NULL passes through). */
ax_value *ax_np_wrap_take(ax_interp *in, ax_array *a);

/* x.shape as a tuple of ints (np_attr.c). */
ax_value *ax_np_shape_value(ax_interp *in, const ax_array *x);

/* ---- indexing (np_index.c) ---- */

/* The `.at` helper of an array value (x.at). */
ax_value *ax_np_at(ax_interp *in, ax_value *x);

#endif

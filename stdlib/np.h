/* Arrays as values of the language: `x[i]`, `x.shape`, `x.sum(0)`, `f32(x)`, with NumPy's
 * rules; the standard library installs them as the interpreter's array class
 * (ax_np_array_class, lang/interp.h). The operators on arrays are numpy/np.h's. Arguments are
 * borrowed; results are new references, or NULL with an error. */
#ifndef AX_NP_H
#define AX_NP_H

#include "../lang/interp.h"
#include "../numpy/np.h"

/* x[index] with NumPy's rules: `index` is one entry or a tuple of entries (ints, slices,
 * None, Ellipsis, integer arrays, bool masks). Basic indexing gives views; integer arrays
 * gather; a bool mask works on concrete arrays only (ConcretizationError under tracing).
 * Out of bounds is an IndexError. */
ax_value *ax_np_getitem(ax_interp *in, ax_value *x, ax_value *index);

/* Attributes and methods of arrays: shape, dtype, ndim, size, T, at, and method sugar
 * (x.sum(0), x.reshape(...), x.astype(f64), x.mean(), x.block_until_ready(), ...).
 * Returns NULL with an AttributeError when the array has no such attribute. */
ax_value *ax_np_getattr(ax_interp *in, ax_value *x, const char *name);
/* Calling a dtype value: f32(x) (or jnp.float32(x)) is asarray(x, dtype=f32), as in JAX.
 * One positional argument (default 0); new reference or NULL with a TypeError. */
ax_value *ax_np_call_dtype(ax_interp *in, ax_dtype dtype, const ax_args *args);

/* Names for completion of `x.` */
void ax_np_each_attr(void (*fn)(void *arg, const char *name), void *arg);

/* The four above, as the interpreter's array class. */
extern const ax_array_class ax_np_array_class;

#endif

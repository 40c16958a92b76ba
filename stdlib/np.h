/* The NumPy layer: what `x + y`, `x[i]`, `x.shape`, `sum(x, axis=0)` mean. It applies NumPy's
 * and JAX's rules (type promotion with weak types, broadcasting, negative axes, keepdims) and
 * then binds primitives (compiler/primitive.h), so that every transformation sees only
 * primitives. Arguments are borrowed; results are new references, or NULL with an error. */
#ifndef AX_NP_H
#define AX_NP_H

#include "../compiler/primitive.h"
#include "../lang/interp.h"

/* Operators of the language on arrays: + - * / // % ** @ & | ^ << >> */
ax_array *ax_np_binop(ax_ctx *cx, ax_binop op, ax_array *a, ax_array *b);
/* - + ~ */
ax_array *ax_np_unop(ax_ctx *cx, ax_unop op, ax_array *a);
/* < <= > >= == != (elementwise, bool result) */
ax_array *ax_np_compare(ax_ctx *cx, ax_cmpop op, ax_array *a, ax_array *b);

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

#endif

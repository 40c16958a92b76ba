/* The NumPy layer on arrays: what `x + y`, `sum(x, axis=0)`, `reshape` mean for arrays, with
 * NumPy's and JAX's rules (type promotion with weak types, broadcasting, negative axes,
 * keepdims). It sits between the primitives (compiler/) and the language (lang/): the
 * evaluator's operators on arrays come here, and the standard library's array functions
 * (stdlib/builtins_*.c) are built on it.
 *
 * Everything here works on arrays (possibly tracers) and binds primitives through
 * compiler/lax.h, never calling runtime kernels: so grad, vmap and jit see every operation.
 * Arguments are borrowed and results are new references, or NULL with an error recorded in cx
 * (runtime/array.h's convention: a consumer is named _take). A NULL array argument (an earlier
 * failure) gives NULL without a new error. */
#ifndef AX_NUMPY_NP_H
#define AX_NUMPY_NP_H

#include "../compiler/lax.h"
#include "ops.h"

/* ---- the operators of the language (np.c) ---- */

/* + - * / // % ** @ & | ^ << >> */
ax_array *ax_np_binop(ax_ctx *cx, ax_binop op, ax_array *a, ax_array *b);
/* - + ~ */
ax_array *ax_np_unop(ax_ctx *cx, ax_unop op, ax_array *a);
/* < <= > >= == != (elementwise, bool result) */
ax_array *ax_np_compare(ax_ctx *cx, ax_cmpop op, ax_array *a, ax_array *b);

/* ---- dtypes and promotion (np.c) ---- */

ax_dtype ax_np_default_float(const ax_ctx *cx);
ax_dtype ax_np_default_int(const ax_ctx *cx);
/* JAX's result_type of n arrays (weak-aware); *weak tells whether the result stays weak. */
ax_dtype ax_np_result_type(int n, ax_array *const *xs, bool *weak);
/* x converted to `to` with weakness `weak` (x itself, retained, when nothing changes). */
ax_array *ax_np_astype(ax_ctx *cx, ax_array *x, ax_dtype to, bool weak);
/* x as a float array: ints and bools become the default float (keeping weakness). */
ax_array *ax_np_to_inexact(ax_ctx *cx, ax_array *x);
/* True when the array's values can be read (not an abstract tracer). */
bool ax_np_is_concrete(const ax_array *x);

/* ---- broadcasting and elementwise operations (np.c) ---- */

/* NumPy's broadcasting of two shapes, like ax_shape_broadcast, but `out` may alias an input
 * (for accumulating the common shape of many arrays). */
bool ax_np_broadcast_shapes(int n1, const int64_t *s1, int n2, const int64_t *s2, int *nout,
                            int64_t *out);
/* NumPy's broadcast_to: ShapeError "cannot broadcast f32[3] to shape (4,)". */
ax_array *ax_np_broadcast_to(ax_ctx *cx, ax_array *x, int ndim, const int64_t *shape);
/* A binary elementwise primitive after promotion and broadcasting. `name` is the NumPy name
 * used in errors: "cannot <name> f32[3] and f32[4] (shapes do not broadcast)". */
ax_array *ax_np_binary(ax_ctx *cx, ax_prim p, const char *name, ax_array *a, ax_array *b);
/* Same, with float results for integer inputs (true division, arctan2, ...). */
ax_array *ax_np_binary_inexact(ax_ctx *cx, ax_prim p, const char *name, ax_array *a, ax_array *b);
/* A unary primitive; float-only primitives first convert ints and bools to the default float. */
ax_array *ax_np_unary(ax_ctx *cx, ax_prim p, ax_array *x);
/* x ** y with JAX's rules (a concrete integer scalar exponent binds integer_pow). */
ax_array *ax_np_power(ax_ctx *cx, ax_array *x, ax_array *y);
/* where(cond, x, y) with promotion of x, y and broadcasting of all three. */
ax_array *ax_np_where(ax_ctx *cx, ax_array *cond, ax_array *x, ax_array *y);
/* clip(x, lo, hi); lo or hi may be NULL. */
ax_array *ax_np_clip(ax_ctx *cx, ax_array *x, ax_array *lo, ax_array *hi);
/* NumPy's matmul, dot, and elementwise logical operations (on truth values). */
ax_array *ax_np_matmul(ax_ctx *cx, ax_array *a, ax_array *b);
ax_array *ax_np_dot(ax_ctx *cx, ax_array *a, ax_array *b);
ax_array *ax_np_logical(ax_ctx *cx, ax_prim p, const char *name, ax_array *a, ax_array *b);
ax_array *ax_np_to_bool(ax_ctx *cx, ax_array *x);

/* ---- axes and reductions (np_reduce.c) ---- */

/* Normalises a possibly negative axis; ValueError "axis 2 is out of bounds for array of
 * dimension 2". Returns false on error. */
bool ax_np_axis(ax_ctx *cx, int64_t axis, int ndim, int *out);
/* Reductions over sorted, distinct, normalised axes; keepdims keeps them as size 1. */
ax_array *ax_np_reduce(ax_ctx *cx, ax_prim p, ax_array *x, int naxes, const int *axes,
                       bool keepdims);
/* sum/prod with JAX's accumulation dtype (bools and small ints widen); dtype < 0: default. */
ax_array *ax_np_sum(ax_ctx *cx, ax_prim p, ax_array *x, int naxes, const int *axes, bool keepdims,
                    int dtype);
ax_array *ax_np_mean(ax_ctx *cx, ax_array *x, int naxes, const int *axes, bool keepdims, int dtype);
ax_array *ax_np_var(ax_ctx *cx, ax_array *x, int naxes, const int *axes, bool keepdims, double ddof,
                    bool std);
/* max/min (p = AX_P_REDUCE_MAX/MIN); ValueError on an empty reduction. */
ax_array *ax_np_extremum(ax_ctx *cx, ax_prim p, ax_array *x, int naxes, const int *axes,
                         bool keepdims);
/* all/any: truth values reduced with and/or. */
ax_array *ax_np_all_any(ax_ctx *cx, bool all, ax_array *x, int naxes, const int *axes,
                        bool keepdims);
/* argmax/argmin along `axis`, or of the flattened array when axis < 0. */
ax_array *ax_np_argext(ax_ctx *cx, bool max, ax_array *x, int axis, bool keepdims);
/* cumsum/cumprod along `axis`, or of the flattened array when axis < 0. */
ax_array *ax_np_cumulative(ax_ctx *cx, ax_prim p, ax_array *x, int axis, int dtype);

/* ---- shapes (np_shape.c) ---- */

/* reshape with one -1 inferred: ValueError "cannot reshape array of size 6 into shape (4,)" */
ax_array *ax_np_reshape(ax_ctx *cx, ax_array *x, int ndim, const int64_t *shape);
ax_array *ax_np_ravel(ax_ctx *cx, ax_array *x);
/* perm == NULL reverses the axes (x.T). */
ax_array *ax_np_transpose(ax_ctx *cx, ax_array *x, const int *perm);
ax_array *ax_np_squeeze(ax_ctx *cx, ax_array *x, int naxes, const int *axes);
/* axes are positions in the output (normalised against x->ndim + naxes). */
ax_array *ax_np_expand_dims(ax_ctx *cx, ax_array *x, int naxes, const int64_t *axes);
/* Arrays promoted to one dtype and joined along an existing / a new axis. */
ax_array *ax_np_concatenate(ax_ctx *cx, int n, ax_array *const *xs, int64_t axis);
ax_array *ax_np_stack(ax_ctx *cx, int n, ax_array *const *xs, int64_t axis);
ax_array *ax_np_flip(ax_ctx *cx, ax_array *x, int naxes, const int *axes);
/* n values from start in steps of step, as NumPy's arange computes them. */
ax_array *ax_np_arange(ax_ctx *cx, double start, double stop, double step, ax_dtype dtype);
/* An array of `shape` filled with `value` (a rank-0 or broadcastable array) as dtype. */
ax_array *ax_np_full(ax_ctx *cx, int ndim, const int64_t *shape, ax_array *value, ax_dtype dtype);
ax_array *ax_np_iota(ax_ctx *cx, ax_dtype dtype, int ndim, const int64_t *shape, int dim);
/* A rank-0 strongly typed constant. */
ax_array *ax_np_scalar(ax_ctx *cx, ax_dtype dtype, double v);

#endif

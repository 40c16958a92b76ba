/* Primitive-level operations for writing rules (JVP, transpose, batching) and library code
 * that binds primitives. Every function takes a scope that owns its results: results are
 * borrowed references released by ax_scope_end, so that rules read like the math they encode:
 *     *tout = ax_scope_keep(s, ax_lax_mul(s, t, ax_lax_cos(s, x)));
 * A NULL input (an earlier failure) gives NULL without a new error, so a chain of calls needs
 * one check at its end. Operands of binary operations must share a dtype and have equal shapes
 * or be rank 0 (the primitives' rule); ax_lax_scalar_like makes constants of the right dtype. */
#ifndef AX_LAX_H
#define AX_LAX_H

#include "primitive.h"

typedef struct ax_scope {
    ax_ctx *cx;
    int n, cap;
    ax_array **items;
    ax_array *inline_items[32];
} ax_scope;

void ax_scope_begin(ax_scope *s, ax_ctx *cx);
/* Releases every array the scope owns. */
void ax_scope_end(ax_scope *s);
/* Takes ownership of a new reference (returns it, borrowed); NULL passes through. */
ax_array *ax_scope_own(ax_scope *s, ax_array *a);
/* A new reference to a (which stays owned by the scope): for returning results. */
ax_array *ax_scope_keep(ax_scope *s, ax_array *a);

ax_array *ax_lax_unary(ax_scope *s, ax_prim p, ax_array *x);
ax_array *ax_lax_binary(ax_scope *s, ax_prim p, ax_array *a, ax_array *b);
ax_array *ax_lax_neg(ax_scope *s, ax_array *x);
ax_array *ax_lax_add(ax_scope *s, ax_array *a, ax_array *b);
ax_array *ax_lax_sub(ax_scope *s, ax_array *a, ax_array *b);
ax_array *ax_lax_mul(ax_scope *s, ax_array *a, ax_array *b);
ax_array *ax_lax_div(ax_scope *s, ax_array *a, ax_array *b);
ax_array *ax_lax_integer_pow(ax_scope *s, ax_array *x, int64_t k);
ax_array *ax_lax_select(ax_scope *s, ax_array *pred, ax_array *on_true, ax_array *on_false);
ax_array *ax_lax_convert(ax_scope *s, ax_array *x, ax_dtype to);
/* A rank-0 constant of x's dtype (strongly typed). */
ax_array *ax_lax_scalar_like(ax_scope *s, const ax_array *x, double v);
/* Zeros / a constant filling the aval (a broadcast view of a scalar: no memory per element). */
ax_array *ax_lax_full_aval(ax_scope *s, const ax_aval *t, double v);
ax_array *ax_lax_zeros_like(ax_scope *s, const ax_array *x);
ax_array *ax_lax_ones_like(ax_scope *s, const ax_array *x);
ax_array *ax_lax_reduce(ax_scope *s, ax_prim p, ax_array *x, int naxes, const int *axes);
ax_array *ax_lax_reduce_sum_all(ax_scope *s, ax_array *x);
ax_array *ax_lax_reshape(ax_scope *s, ax_array *x, int ndim, const int64_t *shape);
ax_array *ax_lax_transpose(ax_scope *s, ax_array *x, const int *perm);
ax_array *ax_lax_broadcast_in_dim(ax_scope *s, ax_array *x, int ndim, const int64_t *shape,
                                  const int *bdims);
/* Broadcasts x (rank-0 or any shape that NumPy-broadcasts) to `t`'s shape. */
ax_array *ax_lax_broadcast_to(ax_scope *s, ax_array *x, int ndim, const int64_t *shape);
/* Sums x down to the given shape (the transpose of NumPy broadcasting). */
ax_array *ax_lax_unbroadcast(ax_scope *s, ax_array *x, int ndim, const int64_t *shape);
ax_array *ax_lax_dot_general(ax_scope *s, ax_array *a, ax_array *b, const ax_dot_dims *d);
/* Matrices (..., m, n) with equal leading (batch) dims: x with its last two dims swapped;
 * op(a) @ op(b), op(m) = m^T when its flag is set; the triangular_solve primitive. */
ax_array *ax_lax_matrix_transpose(ax_scope *s, ax_array *x);
ax_array *ax_lax_matmul(ax_scope *s, ax_array *a, bool ta, ax_array *b, bool tb);
ax_array *ax_lax_triangular_solve(ax_scope *s, ax_array *a, ax_array *b, int flags);
ax_array *ax_lax_bind(ax_scope *s, ax_prim p, int nin, ax_array **in, const ax_params *params);

#endif

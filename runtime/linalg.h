/* Matrix products (lax.dot_general) through OpenBLAS, and the LAPACK routines ax uses. */
#ifndef AX_LINALG_H
#define AX_LINALG_H

#include "array.h"

typedef struct ax_dot_dims {
    int ncontract, nbatch;
    int lhs_contract[AX_MAX_RANK], rhs_contract[AX_MAX_RANK];
    int lhs_batch[AX_MAX_RANK], rhs_batch[AX_MAX_RANK];
} ax_dot_dims;

/* lax.dot_general: operands of one dtype; output shape = batch dims, then lhs free dims, then
 * rhs free dims. f32/f64 go through cblas_sgemm/dgemm (batched: one call per batch element,
 * or one call when batches fold into rows); integer and bool dtypes use a plain loop. */
ax_array *ax_dot_general(ax_ctx *cx, ax_array *lhs, ax_array *rhs, const ax_dot_dims *dims);

/* Lower Cholesky factor of symmetric positive-definite matrices (..., n, n), f32/f64,
 * through LAPACK's potrf; a non-positive-definite input gives NaNs, as jnp.linalg.cholesky. */
ax_array *ax_cholesky(ax_ctx *cx, ax_array *a);

/* Solves op(a) x = b for x (lax.linalg.triangular_solve with left_side=True): a (..., n, n)
 * triangular (its `lower` or upper triangle is read, the rest ignored), op(a) = a or a^T,
 * b (..., n, k) with the same leading dims, f32/f64, through BLAS trsm. A zero on the
 * diagonal gives infinities and NaNs, as JAX. */
ax_array *ax_triangular_solve(ax_ctx *cx, ax_array *a, ax_array *b, bool lower, bool transpose_a);

#endif

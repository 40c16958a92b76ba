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

/* The options of lax.linalg.triangular_solve, as flag bits; 0 solves a x = b with a upper
 * triangular and its diagonal read. */
enum {
    AX_TRSOLVE_LOWER = 1,         /* a is lower triangular (lower=True), else upper */
    AX_TRSOLVE_TRANSPOSE_A = 2,   /* op(a) = a^T (transpose_a=True), else a */
    AX_TRSOLVE_UNIT_DIAGONAL = 4, /* a's diagonal is taken as ones and not read */
    AX_TRSOLVE_RIGHT_SIDE = 8,    /* left_side=False: solve x op(a) = b */
};

/* lax.linalg.triangular_solve: x with op(a) x = b, or x op(a) = b with AX_TRSOLVE_RIGHT_SIDE;
 * a (..., n, n) triangular (only its triangle is read, the rest ignored), b (..., n, k), or
 * (..., k, n) on the right, with the same leading (batch) dims; f32 or f64, one dtype; through
 * BLAS trsm. A zero on the diagonal gives infinities and NaNs, as JAX. */
ax_array *ax_triangular_solve(ax_ctx *cx, ax_array *a, ax_array *b, int flags);

#endif

/* LAPACK through OpenBLAS (runtime/blas.c opens it): LU with partial pivoting (getrf), the
 * symmetric eigendecomposition (syevd), the singular value decomposition (gesdd) and QR (geqrf
 * + orgqr), each on a batch of row-major matrices (..., m, n), f32 or f64: the kernels of the
 * lu, eigh, svd and qr primitives (compiler/linalg_rules.c).
 *
 * LAPACK is column-major: each matrix is transposed into a column-major buffer, factored there,
 * and its factors transposed back, so that LAPACK factors A itself, exactly as NumPy and JAX call
 * it. The factors, including the signs of eigenvectors and singular vectors (which nobody
 * normalises: LAPACK's choice stands), are then the ones NumPy computes with the same LAPACK. */
#ifndef AX_LAPACK_H
#define AX_LAPACK_H

#include "array.h"

/* lax.linalg.lu: P A = L U for a (..., m, n), k = min(m, n). out[0] = lu (..., m, n): L below
 * its unit diagonal, U on and above it; out[1] = pivots i32 (..., k): row i was swapped with row
 * pivots[i], in order; out[2] = permutation i32 (..., m): row i of P A is row permutation[i] of
 * A. A singular matrix gives zeros on U's diagonal (no error, as JAX). 0, or -1 and an error. */
int ax_lu(ax_ctx *cx, ax_array *a, ax_array **out);

/* lax.linalg.eigh of symmetric a (..., n, n), read from its lower (else upper) triangle only:
 * out[0] = eigenvectors v (..., n, n), column j for eigenvalue j; out[1] = eigenvalues w
 * (..., n), ascending. A NaN or infinity in the triangle read, or no convergence, gives NaNs
 * for that matrix (as JAX; NumPy raises LinAlgError). */
int ax_eigh(ax_ctx *cx, ax_array *a, bool lower, ax_array **out);

/* lax.linalg.svd of a (..., m, n), k = min(m, n): out[0] = singular values s (..., k),
 * descending; with compute_uv also out[1] = u (..., m, m) and out[2] = vt (..., n, n) when
 * full_matrices, else u (..., m, k) and vt (..., k, n): a = u diag(s) vt. Non-finite input or no
 * convergence gives NaNs for that matrix, as JAX. */
int ax_svd(ax_ctx *cx, ax_array *a, bool full_matrices, bool compute_uv, ax_array **out);

/* lax.linalg.qr of a (..., m, n), k = min(m, n): out[0] = q with orthonormal columns, (..., m, m)
 * when full_matrices else (..., m, k); out[1] = r, upper triangular, (..., m, n) or (..., k, n):
 * a = q r. R's diagonal keeps LAPACK's signs (not made positive), as NumPy and JAX. */
int ax_qr(ax_ctx *cx, ax_array *a, bool full_matrices, ax_array **out);

#endif

/* The factorisations of lax.linalg as primitives: lu, eigh, svd and qr. Every rule of each
 * (shape, eager kernel, JVP, batching, how the IR prints its parameters) sits in
 * compiler/linalg_rules.c, which also holds their rows of the primitive table (primitive.c points
 * at them). None is linear, so none has a transpose rule: reverse mode transposes the linear
 * primitives their JVPs are written with. Everything else of jnp.linalg and jax.scipy.linalg
 * (solve, det, inv, lstsq, expm, ...) is written on these in stdlib/linalg.ax. */
#ifndef AX_LINALG_RULES_H
#define AX_LINALG_RULES_H

#include "../runtime/format.h"
#include "primitive.h"

/* Parameter bits (params.flag). */
enum {
    AX_EIGH_LOWER = 1, /* eigh reads the lower triangle (lower=True), else the upper one */
};
enum {
    AX_SVD_FULL_MATRICES = 1, /* u (..., m, m) and vt (..., n, n), else (..., m, k), (..., k, n) */
    AX_SVD_COMPUTE_UV = 2,    /* outputs (s, u, vt), else (s,) */
};
enum {
    AX_QR_FULL_MATRICES = 1, /* q (..., m, m) and r (..., m, n), else (..., m, k), (..., k, n) */
};

extern const ax_prim_info ax_lu_info, ax_eigh_info, ax_svd_info, ax_qr_info;

#endif

/* The shared batching rules and their helpers (the rows of the primitive table name them, or
 * rules of their own beside the row). Batched inputs get their batch dimension moved to the
 * front; unbatched ones are broadcast only where the primitive needs equal shapes; the
 * primitive then runs once with adjusted parameters. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir.h"
#include "lax.h"
#include "vmap.h"

ax_array *ax_moveaxis(ax_ctx *cx, ax_array *x, int from, int to) {
    if (from == to) return ax_array_retain(x);
    int perm[AX_MAX_RANK], k = 0;
    for (int i = 0; i < x->ndim; i++)
        if (i != from) perm[k++] = i;
    memmove(perm + to + 1, perm + to, (size_t)(x->ndim - 1 - to) * sizeof *perm);
    perm[to] = from;
    ax_params p = {.naxes = x->ndim};
    memcpy(p.axes, perm, (size_t)x->ndim * sizeof *perm);
    return ax_bind1(cx, AX_P_TRANSPOSE, 1, &x, &p);
}

/* x with its batch dimension first; an unbatched x is broadcast to `size` examples. */
static ax_array *batch_first(ax_scope *s, ax_array *x, int bdim, int64_t size) {
    if (!x) return NULL;
    if (bdim >= 0) return ax_scope_own(s, ax_moveaxis(s->cx, x, bdim, 0));
    int64_t shape[AX_MAX_RANK];
    int dims[AX_MAX_RANK];
    shape[0] = size;
    for (int i = 0; i < x->ndim; i++) shape[i + 1] = x->shape[i], dims[i] = i + 1;
    return ax_lax_broadcast_in_dim(s, x, x->ndim + 1, shape, dims);
}

ax_array *ax_batch_first(ax_scope *s, ax_array *x, int bdim, int64_t size) {
    return batch_first(s, x, bdim, size);
}

/* Finishes a one-output rule whose result has its batch dimension first. */
static int done1(ax_scope *s, ax_array *r, ax_array **out, int *out_bdim) {
    out[0] = r ? ax_scope_keep(s, r) : NULL;
    out_bdim[0] = 0;
    ax_scope_end(s);
    return out[0] ? 0 : -1;
}

int ax_batch_done(ax_scope *s, ax_array *r, ax_array **out, int *out_bdim) {
    return done1(s, r, out, out_bdim);
}

int ax_batch_one(ax_ctx *cx, ax_prim prim, const ax_params *q, ax_array **in, const int *bdim,
                 int64_t size, ax_array **out, int *out_bdim) {
    ax_scope s;
    ax_scope_begin(&s, cx);
    ax_array *x = batch_first(&s, in[0], bdim[0], size);
    return done1(&s, ax_lax_bind(&s, prim, 1, &x, q), out, out_bdim);
}

static void shift_axes(int *axes, int n) {
    for (int i = 0; i < n; i++) axes[i]++;
}

int ax_batch_elementwise(ax_ctx *cx, ax_prim prim, const ax_params *p, int nin, ax_array **in,
                         const int *bdim, int64_t size, ax_array **out, int *out_bdim) {
    ax_scope s;
    ax_scope_begin(&s, cx);
    ax_array *args[8];
    int ndim = 0;
    const int64_t *shape = NULL;
    if (nin > 8) nin = 8;
    /* Batch dimensions first; the per-example shape is that of any operand of rank > 0 (the
     * primitive's rule makes them equal, rank-0 operands broadcast). */
    for (int i = 0; i < nin; i++) {
        args[i] = bdim[i] >= 0 ? batch_first(&s, in[i], bdim[i], size) : in[i];
        if (!args[i]) goto fail;
        int r = args[i]->ndim - (bdim[i] >= 0);
        if (r > ndim) ndim = r, shape = args[i]->shape + (bdim[i] >= 0);
    }
    int64_t full[AX_MAX_RANK];
    full[0] = size;
    for (int d = 0; d < ndim; d++) full[d + 1] = shape[d];
    for (int i = 0; i < nin; i++) {
        int r = args[i]->ndim - (bdim[i] >= 0);
        if (bdim[i] >= 0 && r == 0 && ndim > 0)
            args[i] = ax_lax_broadcast_in_dim(&s, args[i], ndim + 1, full, (int[]){0});
        else if (bdim[i] < 0 && r > 0)
            args[i] = batch_first(&s, args[i], -1, size);
        if (!args[i]) goto fail;
    }
    int nout = ax_prim_get(prim)->nout;
    ax_array *res[8] = {0};
    if (ax_bind(cx, prim, nin, args, p, res)) goto fail;
    for (int j = 0; j < nout; j++) out[j] = res[j], out_bdim[j] = 0;
    ax_scope_end(&s);
    return 0;
fail:
    ax_scope_end(&s);
    return -1;
}

/* One operand, its batch dimension first and the first n of params.axes shifted past it. */
static int batch_shifting(ax_ctx *cx, ax_prim prim, const ax_params *p, ax_array **in,
                          const int *bdim, int64_t size, int n, ax_array **out, int *out_bdim) {
    ax_scope s;
    ax_scope_begin(&s, cx);
    ax_array *x = batch_first(&s, in[0], bdim[0], size);
    ax_params q = *p;
    shift_axes(q.axes, n);
    return done1(&s, ax_lax_bind(&s, prim, 1, &x, &q), out, out_bdim);
}

int ax_batch_axes(ax_ctx *cx, ax_prim prim, const ax_params *p, int nin, ax_array **in,
                  const int *bdim, int64_t size, ax_array **out, int *out_bdim) {
    (void)nin;
    return batch_shifting(cx, prim, p, in, bdim, size, p->naxes, out, out_bdim);
}

int ax_batch_axis(ax_ctx *cx, ax_prim prim, const ax_params *p, int nin, ax_array **in,
                  const int *bdim, int64_t size, ax_array **out, int *out_bdim) {
    (void)nin;
    return batch_shifting(cx, prim, p, in, bdim, size, 1, out, out_bdim);
}

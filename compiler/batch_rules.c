/* Batching rules: how each primitive applies to a batch of examples at once. Batched inputs
 * get their batch dimension moved to the front; unbatched ones are broadcast only where the
 * primitive needs equal shapes; the primitive then runs once with adjusted parameters. */
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

/* One matrix a for a batch of b: the examples become more right-hand sides of a single solve,
 * as JAX does, rather than copies of a. b's batch dim moves next to the dim the solve keeps
 * apart (before b's columns on the left, before its rows on the right) and merges with it. */
static int solve_shared_matrix(ax_scope *s, const ax_params *p, ax_array *a, ax_array *b, int bdim,
                               ax_array **out, int *out_bdim) {
    int r = a->ndim, at = p->flag & AX_TRSOLVE_RIGHT_SIDE ? r - 2 : r - 1;
    ax_array *moved = ax_scope_own(s, ax_moveaxis(s->cx, b, bdim, at));
    if (!moved) return -1;
    int64_t merged[AX_MAX_RANK];
    for (int d = 0, k = 0; d <= r; d++) {
        if (d == at + 1)
            merged[k - 1] *= moved->shape[d];
        else
            merged[k++] = moved->shape[d];
    }
    ax_array *x = ax_lax_bind(s, AX_P_TRIANGULAR_SOLVE, 2,
                              (ax_array *[]){a, ax_lax_reshape(s, moved, r, merged)}, p);
    x = x ? ax_lax_reshape(s, x, r + 1, moved->shape) : NULL;
    out[0] = x ? ax_scope_keep(s, x) : NULL;
    out_bdim[0] = at;
    return out[0] ? 0 : -1;
}

/* triangular_solve: batch dims lead, like the primitive's own; an unbatched b is broadcast,
 * an unbatched a is shared (above). */
int ax_batch_triangular_solve(ax_ctx *cx, ax_prim prim, const ax_params *p, int nin, ax_array **in,
                              const int *bdim, int64_t size, ax_array **out, int *out_bdim) {
    (void)nin;
    ax_scope s;
    ax_scope_begin(&s, cx);
    if (bdim[0] < 0 && bdim[1] >= 0) {
        int rc = solve_shared_matrix(&s, p, in[0], in[1], bdim[1], out, out_bdim);
        ax_scope_end(&s);
        return rc;
    }
    ax_array *ab[2] = {batch_first(&s, in[0], bdim[0], size),
                       batch_first(&s, in[1], bdim[1], size)};
    return done1(&s, ax_lax_bind(&s, prim, 2, ab, p), out, out_bdim);
}

int ax_batch_dot_general(ax_ctx *cx, ax_prim prim, const ax_params *p, int nin, ax_array **in,
                         const int *bdim, int64_t size, ax_array **out, int *out_bdim) {
    (void)prim, (void)nin;
    ax_scope s;
    ax_scope_begin(&s, cx);
    ax_dot_dims d = p->dot;
    ax_array *a = in[0], *b = in[1];
    /* Every dimension number shifts by one for an operand whose batch dimension goes first. */
    if (bdim[0] >= 0) {
        a = batch_first(&s, a, bdim[0], size);
        shift_axes(d.lhs_contract, d.ncontract), shift_axes(d.lhs_batch, d.nbatch);
    }
    if (bdim[1] >= 0) {
        b = batch_first(&s, b, bdim[1], size);
        shift_axes(d.rhs_contract, d.ncontract), shift_axes(d.rhs_batch, d.nbatch);
    }
    int where = 0;
    if (bdim[0] >= 0 && bdim[1] >= 0) {
        /* Both batched: one more batch dimension, first in the output. */
        memmove(d.lhs_batch + 1, d.lhs_batch, (size_t)d.nbatch * sizeof *d.lhs_batch);
        memmove(d.rhs_batch + 1, d.rhs_batch, (size_t)d.nbatch * sizeof *d.rhs_batch);
        d.lhs_batch[0] = d.rhs_batch[0] = 0;
        d.nbatch++;
        where = 0;
    } else if (bdim[0] >= 0) {
        where = d.nbatch; /* the first free dimension of the lhs */
    } else {
        /* the first free dimension of the rhs, after the batch and lhs free dimensions */
        where = a->ndim - d.ncontract;
    }
    ax_array *r = ax_lax_dot_general(&s, a, b, &d);
    out[0] = r ? ax_scope_keep(&s, r) : NULL;
    out_bdim[0] = where;
    ax_scope_end(&s);
    return out[0] ? 0 : -1;
}

/* Index arrays (B, ..., k) -> (B, ..., k+1) with the example number in front: gathers and
 * scatters then address each example's own slice. */
static ax_array *with_example_index(ax_scope *s, ax_array *idx) {
    if (!idx) return NULL;
    int64_t shape[AX_MAX_RANK];
    memcpy(shape, idx->shape, (size_t)idx->ndim * sizeof *shape);
    shape[idx->ndim - 1] = 1;
    ax_params io = {.dtype = idx->dtype, .ndim = idx->ndim, .naxes = 1, .axes = {0}};
    memcpy(io.shape, shape, (size_t)idx->ndim * sizeof *shape);
    ax_array *ex = ax_lax_bind(s, AX_P_IOTA, 0, NULL, &io);
    ax_params cat = {.naxes = 1, .axes = {idx->ndim - 1}};
    return ax_lax_bind(s, AX_P_CONCATENATE, 2, (ax_array *[]){ex, idx}, &cat);
}

static void prepend_axis(ax_params *q) {
    memmove(q->axes + 1, q->axes, (size_t)q->naxes * sizeof *q->axes);
    shift_axes(q->axes + 1, q->naxes);
    q->axes[0] = 0;
    q->naxes++;
}

static ax_array *batched_gather(ax_scope *s, const ax_params *p, ax_array **in, const int *bdim,
                                int64_t size, int *where) {
    ax_params q = *p;
    if (bdim[1] < 0) {
        /* Only x batched: its batch dimension is the first of the dimensions kept. */
        ax_array *x = batch_first(s, in[0], bdim[0], size);
        shift_axes(q.axes, q.naxes);
        *where = in[1]->ndim - 1;
        return ax_lax_bind(s, AX_P_GATHER, 2, (ax_array *[]){x, in[1]}, &q);
    }
    ax_array *idx = batch_first(s, in[1], bdim[1], size);
    *where = 0;
    if (bdim[0] < 0) return ax_lax_bind(s, AX_P_GATHER, 2, (ax_array *[]){in[0], idx}, &q);
    ax_array *x = batch_first(s, in[0], bdim[0], size);
    prepend_axis(&q);
    return ax_lax_bind(s, AX_P_GATHER, 2, (ax_array *[]){x, with_example_index(s, idx)}, &q);
}

static ax_array *batched_scatter(ax_scope *s, const ax_params *p, ax_array **in, const int *bdim,
                                 int64_t size) {
    ax_params q = *p;
    ax_array *x = batch_first(s, in[0], bdim[0], size);
    ax_array *idx = batch_first(s, in[1], bdim[1], size);
    ax_array *u = batch_first(s, in[2], bdim[2], size);
    prepend_axis(&q);
    return ax_lax_bind(s, AX_P_SCATTER, 3, (ax_array *[]){x, with_example_index(s, idx), u}, &q);
}

/* Full index arrays (B, sizes..., 1 + n) addressing each example's slice at its own starts
 * (clamped into range as dynamic_slice does). */
static ax_array *slice_indices(ax_scope *s, ax_array **starts, const int *bdim, int n,
                               const int64_t *dims, const int64_t *sizes, int64_t size) {
    int64_t shape[AX_MAX_RANK + 1];
    shape[0] = size;
    memcpy(shape + 1, sizes, (size_t)n * sizeof *shape);
    shape[n + 1] = 1;
    ax_array *cols[AX_MAX_RANK + 1];
    ax_params io = {.dtype = AX_I32, .ndim = n + 2, .naxes = 1, .axes = {0}};
    memcpy(io.shape, shape, (size_t)(n + 2) * sizeof *shape);
    cols[0] = ax_lax_bind(s, AX_P_IOTA, 0, NULL, &io);
    for (int d = 0; d < n; d++) {
        ax_array *st = ax_lax_convert(s, batch_first(s, starts[d], bdim[d], size), AX_I32);
        ax_array *lo = ax_lax_scalar_like(s, st, 0.0),
                 *hi = ax_lax_scalar_like(s, st, (double)(dims[d] - sizes[d]));
        st = ax_lax_bind(s, AX_P_CLAMP, 3, (ax_array *[]){lo, st, hi}, NULL);
        ax_array *b = ax_lax_broadcast_in_dim(s, st, n + 2, shape, (int[]){0});
        io.axes[0] = d + 1;
        cols[d + 1] = ax_lax_add(s, b, ax_lax_bind(s, AX_P_IOTA, 0, NULL, &io));
    }
    ax_params cat = {.naxes = 1, .axes = {n + 1}};
    return ax_lax_bind(s, AX_P_CONCATENATE, n + 1, cols, &cat);
}

static ax_array *batched_dynamic_slice(ax_scope *s, const ax_params *p, int nin, ax_array **in,
                                       const int *bdim, int64_t size) {
    ax_array *x = batch_first(s, in[0], bdim[0], size);
    if (!x) return NULL;
    ax_array *idx = slice_indices(s, in + 1, bdim + 1, nin - 1, x->shape + 1, p->shape, size);
    ax_params g = {.naxes = nin};
    for (int i = 0; i < nin; i++) g.axes[i] = i;
    return ax_lax_bind(s, AX_P_GATHER, 2, (ax_array *[]){x, idx}, &g);
}

static ax_array *batched_dynamic_update(ax_scope *s, int nin, ax_array **in, const int *bdim,
                                        int64_t size) {
    ax_array *x = batch_first(s, in[0], bdim[0], size);
    ax_array *u = batch_first(s, in[1], bdim[1], size);
    if (!x || !u) return NULL;
    ax_array *idx = slice_indices(s, in + 2, bdim + 2, nin - 2, x->shape + 1, u->shape + 1, size);
    ax_params g = {.naxes = nin - 1, .flag = AX_SCATTER_SET};
    for (int i = 0; i < nin - 1; i++) g.axes[i] = i;
    return ax_lax_bind(s, AX_P_SCATTER, 3, (ax_array *[]){x, idx, u}, &g);
}

int ax_batch_indexing(ax_ctx *cx, ax_prim prim, const ax_params *p, int nin, ax_array **in,
                      const int *bdim, int64_t size, ax_array **out, int *out_bdim) {
    ax_scope s;
    ax_scope_begin(&s, cx);
    ax_array *r = NULL;
    int where = 0;
    bool starts_batched = false;
    int first_start = prim == AX_P_DYNAMIC_SLICE ? 1 : 2;
    for (int i = first_start; i < nin; i++) starts_batched |= bdim[i] >= 0;
    switch (prim) {
    case AX_P_GATHER:
        r = batched_gather(&s, p, in, bdim, size, &where);
        break;
    case AX_P_SCATTER:
        r = batched_scatter(&s, p, in, bdim, size);
        break;
    case AX_P_DYNAMIC_SLICE:
        if (!starts_batched) {
            /* Only x batched: slice the whole batch dimension. */
            ax_array *args[AX_MAX_RANK + 2];
            args[0] = batch_first(&s, in[0], bdim[0], size);
            args[1] = ax_lax_scalar_like(&s, in[1], 0.0);
            for (int i = 1; i < nin; i++) args[i + 1] = in[i];
            ax_params q = *p;
            memmove(q.shape + 1, p->shape, (size_t)p->ndim * sizeof *q.shape);
            q.shape[0] = size, q.ndim = p->ndim + 1;
            r = ax_lax_bind(&s, prim, nin + 1, args, &q);
        } else {
            r = batched_dynamic_slice(&s, p, nin, in, bdim, size);
        }
        break;
    case AX_P_DYNAMIC_UPDATE_SLICE:
        if (!starts_batched) {
            ax_array *args[AX_MAX_RANK + 3];
            args[0] = batch_first(&s, in[0], bdim[0], size);
            args[1] = batch_first(&s, in[1], bdim[1], size);
            args[2] = ax_lax_scalar_like(&s, in[2], 0.0);
            for (int i = 2; i < nin; i++) args[i + 1] = in[i];
            r = ax_lax_bind(&s, prim, nin + 1, args, p);
        } else {
            r = batched_dynamic_update(&s, nin, in, bdim, size);
        }
        break;
    default:
        ax_error(cx, AX_ERR_RUNTIME, "vmap: no batching rule for %s", ax_prim_get(prim)->name);
    }
    out[0] = r ? ax_scope_keep(&s, r) : NULL;
    out_bdim[0] = where;
    ax_scope_end(&s);
    return out[0] ? 0 : -1;
}

/* ---- custom_call: the function vmapped, its rule kept ---- */

/* A custom_call of a function vmapped over `size` examples (every input batched at 0): its
 * body is the original body vmapped, its rule the original rule run per example. */
typedef struct batched_call {
    ax_callback *inner;
    int64_t size;
    char name[80];
} batched_call;

static void batched_call_free(void *data) {
    batched_call *b = data;
    ax_callback_release(b->inner);
    free(b);
}

static int vmapped_body(ax_ctx *cx, void *closure, int nin, ax_array **in, int *nout,
                        ax_array ***out) {
    batched_call *b = closure;
    int *axes = calloc((size_t)nin + 1, sizeof *axes), *bdims = NULL;
    if (!axes) return ax_error_oom(cx), -1;
    int rc = ax_vmap(cx, ax_ir_flat_fn, b->inner->body, nin, in, axes, b->size, nout, out, &bdims);
    free(axes);
    return rc ? -1 : ax_vmap_place_first(cx, *nout, *out, bdims, b->size);
}

/* Zeros shaped like x (a new reference). */
static ax_array *zeros_ref(ax_ctx *cx, const ax_array *x) {
    ax_scope s;
    ax_scope_begin(&s, cx);
    ax_array *z = ax_lax_zeros_like(&s, x);
    z = z ? ax_scope_keep(&s, z) : NULL;
    ax_scope_end(&s);
    return z;
}

typedef struct example_jvp {
    ax_callback *inner;
    int k, nin;
    const int *tangent_at; /* input i's tangent: argument tangent_at[i] of the example, -1 = zero */
} example_jvp;

/* One example's (output, tangent) by the inner rule; inputs: primals, then the tangents that
 * are not zero (a zero stays NULL, so the rule can tell it is zero). */
static int jvp_of_example(ax_ctx *cx, void *closure, int n2, ax_array **in, int *nout,
                          ax_array ***out) {
    example_jvp *e = closure;
    (void)n2;
    ax_array *o = NULL, *t = NULL, **tan = calloc((size_t)e->nin + 1, sizeof *tan);
    if (!tan) return ax_error_oom(cx), -1;
    for (int i = 0; i < e->nin; i++) tan[i] = e->tangent_at[i] >= 0 ? in[e->tangent_at[i]] : NULL;
    int rc = e->inner->jvp(cx, e->inner->data, e->k, e->nin, in, tan, &o, &t);
    free(tan);
    if (rc) return -1;
    if (!t) t = zeros_ref(cx, o);
    *out = calloc(3, sizeof **out);
    if (!*out || !t) {
        ax_array_release(o), ax_array_release(t), free(*out);
        return ax_error_oom(cx), -1;
    }
    (*out)[0] = o, (*out)[1] = t;
    *nout = 2;
    return 0;
}

/* x (batch dimension first) with its first two dimensions as one (`merge`), or split back
 * into (size, rest) (!merge). A new reference; NULL passes through as NULL. */
static ax_array *merge_batch_dims(ax_ctx *cx, ax_array *x, bool merge, int64_t size) {
    if (!x) return NULL;
    int64_t shape[AX_MAX_RANK + 1];
    int ndim = 0;
    if (merge) {
        shape[ndim++] = x->shape[0] * x->shape[1];
        for (int i = 2; i < x->ndim; i++) shape[ndim++] = x->shape[i];
    } else {
        shape[ndim++] = size;
        shape[ndim++] = x->shape[0] / size;
        for (int i = 1; i < x->ndim; i++) shape[ndim++] = x->shape[i];
    }
    ax_scope s;
    ax_scope_begin(&s, cx);
    ax_array *r = ax_lax_reshape(&s, x, ndim, shape);
    r = r ? ax_scope_keep(&s, r) : NULL;
    ax_scope_end(&s);
    return r;
}

/* The batched rule of a function vmapped twice (size examples of b->size examples): the inner
 * function's own batched rule over size * b->size examples, reshaped. How vmap of vmap of a
 * custom_vjp function keeps running fwd and bwd per example. */
static int merged_batched_jvp(ax_ctx *cx, void *data, int64_t size, int k, int nin,
                              ax_array **primals, ax_array **tangents, ax_array **out,
                              ax_array **tout) {
    batched_call *b = data;
    ax_array **args = calloc(2 * (size_t)nin + 1, sizeof *args), *o = NULL, *t = NULL;
    int rc = args ? 0 : -1;
    for (int i = 0; i < nin && !rc; i++) {
        args[i] = merge_batch_dims(cx, primals[i], true, size);
        args[nin + i] = merge_batch_dims(cx, tangents[i], true, size);
        if (!args[i] || (tangents[i] && !args[nin + i])) rc = -1;
    }
    if (!rc)
        rc = b->inner->batched_jvp(cx, b->inner->data, size * b->size, k, nin, args, args + nin, &o,
                                   &t);
    if (!rc) {
        *out = merge_batch_dims(cx, o, false, size);
        *tout = merge_batch_dims(cx, t, false, size);
        if (!*out || (t && !*tout)) {
            ax_array_release(*out), ax_array_release(*tout);
            *out = *tout = NULL;
            rc = -1;
        }
    }
    ax_array_release(o), ax_array_release(t);
    for (int i = 0; args && i < 2 * nin; i++) ax_array_release(args[i]);
    free(args);
    if (rc && !ax_error_pending(cx)) ax_error_oom(cx);
    return rc;
}

static int batched_jvp(ax_ctx *cx, void *data, int k, int nin, ax_array **primals,
                       ax_array **tangents, ax_array **out, ax_array **tout) {
    batched_call *b = data;
    if (b->inner->batched_jvp)
        return b->inner->batched_jvp(cx, b->inner->data, b->size, k, nin, primals, tangents, out,
                                     tout);
    /* the inner rule vmapped over the primals and the tangents that are not zero */
    ax_array **args = calloc(2 * (size_t)nin + 1, sizeof *args), **res = NULL;
    int *axes = calloc(2 * (size_t)nin + 1, sizeof *axes), *bdims = NULL, nres = 0, rc = -1;
    int *tangent_at = calloc((size_t)nin + 1, sizeof *tangent_at), nargs = nin;
    if (!args || !axes || !tangent_at) goto done;
    for (int i = 0; i < nin; i++) {
        args[i] = ax_array_retain(primals[i]);
        tangent_at[i] = tangents[i] ? nargs : -1;
        if (tangents[i]) args[nargs++] = ax_array_retain(tangents[i]);
    }
    example_jvp e = {b->inner, k, nin, tangent_at};
    if (ax_vmap(cx, jvp_of_example, &e, nargs, args, axes, b->size, &nres, &res, &bdims) ||
        ax_vmap_place_first(cx, nres, res, bdims, b->size))
        goto done;
    *out = res[0], *tout = res[1];
    res[0] = res[1] = NULL;
    rc = 0;
done:
    if (args)
        for (int i = 0; i < nargs; i++) ax_array_release(args[i]);
    for (int j = 0; res && j < nres; j++) ax_array_release(res[j]);
    free(res), free(args), free(axes), free(tangent_at);
    if (rc && !ax_error_pending(cx)) ax_error_oom(cx);
    return rc;
}

int ax_batch_custom_call(ax_ctx *cx, ax_prim prim, const ax_params *p, int nin, ax_array **in,
                         const int *bdim, int64_t size, ax_array **out, int *out_bdim) {
    /* A custom_vjp function's tangent map with batched tangents is forward mode (jacfwd):
     * the same error as when it is applied to one tangent (its eager kernel). */
    if (prim == AX_P_CUSTOM_LINEAR) {
        *out_bdim = -1;
        return ax_prim_get(prim)->eager(cx, nin, in, p, out);
    }
    ax_scope s;
    ax_scope_begin(&s, cx);
    ax_array **x = calloc((size_t)nin + 1, sizeof *x);
    ax_aval *types = calloc((size_t)nin + 1, sizeof *types);
    batched_call *b = calloc(1, sizeof *b);
    ax_callback *cb = calloc(1, sizeof *cb);
    ax_array *r = NULL;
    if (!x || !types || !b || !cb) {
        ax_error_oom(cx);
        goto done;
    }
    for (int i = 0; i < nin; i++) {
        if (!(x[i] = batch_first(&s, in[i], bdim[i], size))) goto done;
        ax_aval_of(&types[i], x[i]);
    }
    *b = (batched_call){.inner = ax_callback_retain(p->cb), .size = size};
    snprintf(b->name, sizeof b->name, "vmap(%s)", p->cb->name);
    *cb = (ax_callback){.refs = 1,
                        .name = b->name,
                        .jvp = batched_jvp,
                        .batched_jvp = p->cb->batched_jvp ? merged_batched_jvp : NULL,
                        .free = batched_call_free,
                        .data = b};
    b = NULL;
    int nout = 0;
    cb->body = ax_trace_to_ir(cx, vmapped_body, cb->data, nin, types, &nout);
    if (!cb->body) goto done;
    ax_params q = {.cb = cb, .k = p->k};
    r = ax_lax_bind(&s, AX_P_CUSTOM_CALL, nin, x, &q);
done:
    ax_callback_release(cb);
    free(b);
    free(x);
    free(types);
    return done1(&s, r, out, out_bdim);
}

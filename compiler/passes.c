/* Whole-IR passes (see passes.h). Each one is a flat function traced to IR: the
 * transformation's own trace does the work, equation by equation. */
#include "passes.h"

#include <stdlib.h>
#include <string.h>

#include "ad.h"
#include "collectives.h"
#include "lax.h"
#include "simplify.h"
#include "vmap.h"

void ax_ir_in_type(const ax_ir *ir, int i, ax_aval *out) {
    *out = ir->types[ir->invars[i]];
}

void ax_ir_out_type(const ax_ir *ir, int i, ax_aval *out) {
    const ax_ir_atom *a = &ir->outs[i];
    if (a->var >= 0)
        *out = ir->types[a->var];
    else
        ax_aval_of(out, a->lit);
}

/* Traces fn on the given input types and simplifies the result. */
static ax_ir *trace_simplified(ax_ctx *cx, ax_flat_fn fn, void *closure, int nin,
                               const ax_aval *types) {
    int nout = 0;
    ax_ir *ir = ax_trace_to_ir(cx, fn, closure, nin, types, &nout);
    if (!ir) return NULL;
    ax_ir *s = ax_simplify(cx, ir);
    ax_ir_release(ir);
    return s;
}

/* A zero of type t (a broadcast scalar: no memory per element). */
static ax_array *zeros_of(ax_ctx *cx, const ax_aval *t) {
    ax_scope s;
    ax_scope_begin(&s, cx);
    ax_aval strong = *t;
    strong.weak = false;
    ax_array *z = ax_lax_full_aval(&s, &strong, 0.0);
    z = z ? ax_scope_keep(&s, z) : NULL;
    ax_scope_end(&s);
    return z;
}

static void release_all(int n, ax_array **a) {
    for (int i = 0; a && i < n; i++) ax_array_release(a[i]);
    free(a);
}

/* Fills a malloc'd output array of n entries from `vals` (taken); *out stays NULL on error. */
static int give_outputs(ax_ctx *cx, int n, ax_array **vals, int *nout, ax_array ***out) {
    *nout = n;
    *out = vals;
    for (int j = 0; j < n; j++)
        if (!vals[j]) {
            release_all(n, vals);
            *out = NULL;
            if (!ax_error_pending(cx)) ax_error_oom(cx);
            return -1;
        }
    return 0;
}


/* ---------------------------------------------------------------- jvp */

typedef struct jvp_closure {
    const ax_ir *ir;
    const bool *nonzero_in, *instantiate;
    bool *nonzero_out;
} jvp_closure;

static int jvp_fn(ax_ctx *cx, void *closure, int nin, ax_array **in, int *nout, ax_array ***out) {
    jvp_closure *c = closure;
    const ax_ir *ir = c->ir;
    (void)nin;
    ax_array **tangents = calloc((size_t)ir->nin + 1, sizeof *tangents);
    if (!tangents) return ax_error_oom(cx), -1;
    for (int i = 0, k = ir->nin; i < ir->nin; i++)
        if (c->nonzero_in[i]) tangents[i] = in[k++];
    int n = 0;
    ax_array **po = NULL, **to = NULL;
    int rc = ax_ad_jvp_symbolic(cx, ax_ir_flat_fn, (void *)ir, ir->nin, in, tangents, &n, &po,
                                &to);
    free(tangents);
    if (rc) return -1;
    ax_array **res = calloc(2 * (size_t)n + 1, sizeof *res);
    int k = n;
    for (int j = 0; res && j < n; j++) {
        res[j] = po[j];
        po[j] = NULL;
        bool want = c->instantiate && c->instantiate[j] && ax_dtype_is_float(res[j]->dtype);
        c->nonzero_out[j] = to[j] != NULL || want;
        if (to[j]) {
            res[k++] = to[j];
            to[j] = NULL;
        } else if (want) {
            ax_aval t;
            ax_aval_of(&t, res[j]);
            res[k++] = zeros_of(cx, &t);
        }
    }
    release_all(n, po);
    release_all(n, to);
    if (!res) return ax_error_oom(cx), -1;
    return give_outputs(cx, k, res, nout, out);
}

ax_ir *ax_pass_jvp(ax_ctx *cx, const ax_ir *ir, const bool *nonzero_in, const bool *instantiate,
                   bool *nonzero_out) {
    ax_aval *types = calloc(2 * (size_t)ir->nin + 1, sizeof *types);
    if (!types) return ax_error_oom(cx);
    int n = ir->nin;
    for (int i = 0; i < ir->nin; i++) {
        ax_ir_in_type(ir, i, &types[i]);
        if (!nonzero_in[i]) continue;
        types[n] = types[i];
        types[n++].weak = false;
    }
    jvp_closure c = {ir, nonzero_in, instantiate, nonzero_out};
    ax_ir *r = trace_simplified(cx, jvp_fn, &c, n, types);
    free(types);
    return r;
}

/* ---------------------------------------------------------------- partial evaluation */

/* Ends both traces of a split: the unknown IR with its tracer constants (the values it needs
 * from the known side) lifted to leading inputs, and the known IR returning those values after
 * its own outputs. */
static int finish_split(ax_ctx *cx, ax_ir_trace *outer, ax_ir_trace *inner, int n,
                        ax_array **outs, const bool *unknown_out, ax_ir **known, ax_ir **unknown,
                        int *nres) {
    ax_array **pick = calloc((size_t)n + 1, sizeof *pick);
    if (!pick) {
        ax_ir_trace_abort(inner);
        ax_ir_trace_abort(outer);
        return ax_error_oom(cx), -1;
    }
    int nu = 0;
    for (int j = 0; j < n; j++)
        if (unknown_out[j]) pick[nu++] = outs[j];
    ax_ir *inner_ir = ax_ir_trace_end(inner, nu, pick, NULL);
    bool *lift = inner_ir ? calloc((size_t)inner_ir->nconsts + 1, sizeof *lift) : NULL;
    ax_array **kouts = lift ? calloc((size_t)n + (size_t)inner_ir->nconsts + 1, sizeof *kouts)
                            : NULL;
    if (!kouts) {
        free(pick);
        free(lift);
        ax_ir_release(inner_ir);
        ax_ir_trace_abort(outer);
        if (!ax_error_pending(cx)) ax_error_oom(cx);
        return -1;
    }
    int nk = 0;
    for (int j = 0; j < n; j++)
        if (!unknown_out[j]) kouts[nk++] = outs[j];
    *nres = 0;
    for (int i = 0; i < inner_ir->nconsts; i++) {
        lift[i] = inner_ir->consts[i]->tracer != NULL;
        if (lift[i]) kouts[nk + (*nres)++] = inner_ir->consts[i];
    }
    *unknown = ax_ir_lift_consts(inner_ir, lift);
    *known = ax_ir_trace_end(outer, nk + *nres, kouts, NULL);
    ax_ir_release(inner_ir);
    free(pick);
    free(lift);
    free(kouts);
    if (*known && *unknown) return 0;
    ax_ir_release(*known);
    ax_ir_release(*unknown);
    *known = *unknown = NULL;
    if (!ax_error_pending(cx)) ax_error_oom(cx);
    return -1;
}

static ax_ir *simplified(ax_ctx *cx, ax_ir *ir) {
    if (!ir) return NULL;
    ax_ir *s = ax_simplify(cx, ir);
    ax_ir_release(ir);
    return s;
}

int ax_pass_partial_eval(ax_ctx *cx, const ax_ir *ir, const bool *unknown_in,
                         const bool *instantiate, bool *unknown_out, ax_ir **known,
                         ax_ir **unknown, int *nres) {
    *known = *unknown = NULL;
    ax_ir_trace *outer = ax_ir_trace_begin(cx);
    ax_ir_trace *inner = outer ? ax_ir_trace_begin(cx) : NULL;
    if (!inner) {
        ax_ir_trace_abort(outer);
        return -1;
    }
    ax_ir_trace_set_partial_eval(inner, true);
    ax_array **args = calloc((size_t)ir->nin + (size_t)ir->nout + 1, sizeof *args);
    ax_array **outs = args ? args + ir->nin : NULL;
    int rc = args ? 0 : -1;
    for (int i = 0; i < ir->nin && !rc; i++) {
        ax_aval t;
        ax_ir_in_type(ir, i, &t);
        args[i] = ax_ir_trace_input(unknown_in[i] ? inner : outer, &t);
        if (!args[i]) rc = -1;
    }
    if (!rc) rc = ax_ir_eval(cx, ir, args, outs);
    int filled = rc ? ir->nin : ir->nin + ir->nout;
    if (rc) {
        ax_ir_trace_abort(inner);
        ax_ir_trace_abort(outer);
    } else {
        for (int j = 0; j < ir->nout; j++)
            unknown_out[j] =
                ax_ir_trace_owns(inner, outs[j]) || (instantiate && instantiate[j]);
        rc = finish_split(cx, outer, inner, ir->nout, outs, unknown_out, known, unknown, nres);
    }
    for (int i = 0; args && i < filled; i++) ax_array_release(args[i]);
    if (!args) ax_error_oom(cx);
    free(args);
    if (rc) return -1;
    *known = simplified(cx, *known);
    *unknown = simplified(cx, *unknown);
    if (*known && *unknown) return 0;
    ax_ir_release(*known);
    ax_ir_release(*unknown);
    *known = *unknown = NULL;
    return -1;
}

/* ---------------------------------------------------------------- transposition */

typedef struct transpose_closure {
    const ax_ir *ir;
    const bool *linear_in;
} transpose_closure;

static int transpose_fn(ax_ctx *cx, void *closure, int nin, ax_array **in, int *nout,
                        ax_array ***out) {
    transpose_closure *c = closure;
    const ax_ir *ir = c->ir;
    (void)nin;
    ax_array **vals = calloc(2 * (size_t)ir->nin + 1, sizeof *vals);
    if (!vals) return ax_error_oom(cx), -1;
    ax_array **ct_in = vals + ir->nin;
    int k = 0;
    for (int i = 0; i < ir->nin; i++)
        if (!c->linear_in[i]) vals[i] = in[k++];
    int rc = ax_ir_transpose_eval_mixed(cx, ir, c->linear_in, vals, in + k, ct_in);
    ax_array **res = rc ? NULL : calloc((size_t)ir->nin + 1, sizeof *res);
    int n = 0;
    for (int i = 0; res && i < ir->nin; i++) {
        if (!c->linear_in[i]) continue;
        ax_aval t;
        ax_ir_in_type(ir, i, &t);
        res[n++] = ct_in[i] ? ct_in[i] : zeros_of(cx, &t);
        ct_in[i] = NULL;
    }
    for (int i = 0; i < ir->nin; i++) ax_array_release(ct_in[i]);
    free(vals);
    if (rc) return -1;
    if (!res) return ax_error_oom(cx), -1;
    return give_outputs(cx, n, res, nout, out);
}

ax_ir *ax_pass_transpose(ax_ctx *cx, const ax_ir *ir, const bool *linear_in) {
    ax_aval *types = calloc((size_t)ir->nin + (size_t)ir->nout + 1, sizeof *types);
    if (!types) return ax_error_oom(cx);
    int n = 0;
    for (int i = 0; i < ir->nin; i++)
        if (!linear_in[i]) ax_ir_in_type(ir, i, &types[n++]);
    for (int j = 0; j < ir->nout; j++) {
        ax_ir_out_type(ir, j, &types[n]);
        types[n++].weak = false;
    }
    transpose_closure c = {ir, linear_in};
    ax_ir *r = trace_simplified(cx, transpose_fn, &c, n, types);
    free(types);
    return r;
}

/* ---------------------------------------------------------------- batching */

typedef struct vmap_closure {
    const ax_ir *ir;
    int64_t size;
    const bool *batched_in, *force_out;
    bool *batched_out;
} vmap_closure;

static int vmap_fn(ax_ctx *cx, void *closure, int nin, ax_array **in, int *nout,
                   ax_array ***out) {
    vmap_closure *c = closure;
    int *axes = calloc((size_t)nin + 1, sizeof *axes), *bdims = NULL, n = 0;
    if (!axes) return ax_error_oom(cx), -1;
    for (int i = 0; i < nin; i++) axes[i] = c->batched_in[i] ? 0 : -1;
    ax_array **res = NULL;
    /* named after the vmap whose rule asks (a jit or scan body under vmap(axis_name=...)) */
    int rc = ax_vmap_named(cx, ax_batching_axis(cx), ax_ir_flat_fn, (void *)c->ir, nin, in, axes,
                           c->size, &n, &res, &bdims);
    free(axes);
    if (rc) return -1;
    for (int j = 0; j < n; j++) {
        bool force = c->force_out && c->force_out[j];
        c->batched_out[j] = bdims[j] >= 0 || force;
        if (c->batched_out[j]) res[j] = ax_vmap_place_take(cx, res[j], bdims[j], c->size, 0);
    }
    free(bdims);
    return give_outputs(cx, n, res, nout, out);
}

ax_ir *ax_pass_vmap(ax_ctx *cx, const ax_ir *ir, int64_t size, const bool *batched_in,
                    const bool *force_out, bool *batched_out) {
    ax_aval *types = calloc((size_t)ir->nin + 1, sizeof *types);
    if (!types) return ax_error_oom(cx);
    for (int i = 0; i < ir->nin; i++) {
        ax_ir_in_type(ir, i, &types[i]);
        if (!batched_in[i]) continue;
        ax_aval *t = &types[i];
        if (t->ndim >= AX_MAX_RANK) {
            ax_error(cx, AX_ERR_VALUE,
                     "vmap: arrays of rank %d cannot gain a batch dimension (the most is %d)",
                     t->ndim, AX_MAX_RANK);
            free(types);
            return NULL;
        }
        memmove(t->shape + 1, t->shape, (size_t)t->ndim * sizeof *t->shape);
        t->shape[0] = size;
        t->ndim++;
    }
    vmap_closure c = {ir, size, batched_in, force_out, batched_out};
    ax_ir *r = trace_simplified(cx, vmap_fn, &c, ir->nin, types);
    free(types);
    return r;
}

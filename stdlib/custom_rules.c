/* custom_jvp and custom_vjp (see custom_rules.h).
 *
 * A call looks at its arguments. When the innermost transformation among them is a JVP trace
 * (grad, jvp, vjp, and so on), the user's rule runs on their primal and tangent parts. When it
 * is another one (jit, vmap, make_jaxpr), the call becomes one custom_call equation per output:
 * the function's body traced, with the rule attached, so a differentiation outside
 * (grad(jit(f)), grad(vmap(f))) still applies the rule; vmap batches it by running the rule per
 * example (compiler/batch_rules.c), or for custom_vjp fwd and bwd per example (below). Without
 * any transformation the function runs as written.
 * custom_vjp's tangent map is one custom_linear equation per output, whose transpose calls the
 * user's backward function. */
#include "custom_rules.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../compiler/ad.h"
#include "../compiler/vmap.h"
#include "flat_call.h"
#include "pytree.h"

typedef struct custom_fn {
    bool is_vjp;
    ax_value *fn;
    ax_value *jvp;       /* custom_jvp: rule(primals, tangents) -> (out, tangent_out) */
    ax_value *fwd, *bwd; /* custom_vjp: fwd(*args) -> (out, residuals); bwd(residuals, ct) */
    char name[64];
} custom_fn;

static void custom_free(void *p) {
    custom_fn *c = p;
    ax_value *vals[] = {c->fn, c->jvp, c->fwd, c->bwd};
    for (int i = 0; i < 4; i++)
        if (vals[i]) ax_value_release(vals[i]);
    free(c);
}

static void custom_format(ax_strbuf *out, void *p) {
    custom_fn *c = p;
    ax_strbuf_appendf(out, "<%s function %s>", c->is_vjp ? "custom_vjp" : "custom_jvp", c->name);
}

/* Zeros for absent tangents (a copy of `primals` shape by shape). */
static ax_array **tangents_or_zeros(ax_ctx *cx, int n, ax_array **primals, ax_array **tangents) {
    ax_array **t = calloc((size_t)n + 1, sizeof *t);
    for (int i = 0; t && i < n; i++) {
        t[i] = tangents[i]
                   ? ax_array_retain(tangents[i])
                   : ax_array_zeros(cx, primals[i]->dtype, primals[i]->ndim, primals[i]->shape);
        if (!t[i]) {
            ax_flat_release_arrays(t, i);
            return NULL;
        }
    }
    return t;
}

/* Tuple of the traced arguments rebuilt from flat arrays. */
static ax_value *args_tuple(flat_call *fc, ax_array **flat) {
    return ax_flat_rebuild_per_arg(fc, flat, true);
}

/* Flattens `tree` (which must hold arrays) into new references. */
static int flatten_arrays(ax_interp *in, ax_value *tree, const char *what, ax_array ***out, int *n,
                          ax_value **def) {
    ax_value **leaves;
    if (ax_tree_flatten(in, tree, &leaves, n, def)) return -1;
    *out = calloc((size_t)*n + 1, sizeof **out);
    int rc = *out ? 0 : -1;
    for (int i = 0; i < *n && !rc; i++) {
        if (leaves[i]->kind != AX_V_ARRAY) {
            ax_error(in->cx, AX_ERR_TYPE, "%s must return arrays (or pytrees of arrays)", what);
            rc = -1;
        } else {
            (*out)[i] = ax_array_retain(leaves[i]->arr);
        }
    }
    ax_values_release(leaves, *n);
    if (rc) {
        ax_flat_release_arrays(*out, *n);
        ax_value_release(*def);
        *out = NULL;
    }
    return rc;
}

/* Wraps outputs as JVP tracers of t; consumes outs and touts. */
static ax_value *wrap_outputs(ax_interp *in, ax_trace *t, ax_value *def, int n, ax_array **outs,
                              ax_array **touts) {
    ax_array **w = calloc((size_t)n + 1, sizeof *w);
    int rc = w ? 0 : -1;
    for (int j = 0; j < n; j++) {
        if (!rc && !(w[j] = ax_jvp_tracer_new(in->cx, t, outs[j], touts ? touts[j] : NULL)))
            rc = -1;
        else if (rc) {
            ax_array_release(outs[j]);
            if (touts) ax_array_release(touts[j]);
        }
    }
    free(outs);
    free(touts);
    ax_value *r = NULL;
    if (!rc) {
        ax_value **vals = ax_flat_wrap_arrays(in->cx, n, w);
        if (vals) {
            r = ax_tree_unflatten(in, def, vals, n);
            ax_values_release(vals, n);
        }
    }
    ax_flat_release_arrays(w, n);
    return r;
}

/* ---------------------------------------------------------------- custom_jvp */

/* The user's JVP rule on flat primals and tangents (NULL = zero): the outputs and their
 * tangents, flat (new references), with the outputs' structure. */
static int run_jvp_rule(ax_interp *in, custom_fn *c, flat_call *fc, ax_array **prim, ax_array **tan,
                        int *n, ax_array ***outs, ax_array ***touts, ax_value **def) {
    ax_array **tz = tangents_or_zeros(in->cx, fc->nflat, prim, tan);
    ax_value *p = args_tuple(fc, prim), *tv = tz ? args_tuple(fc, tz) : NULL, *r = NULL;
    ax_flat_release_arrays(tz, fc->nflat);
    if (p && tv) {
        ax_value *pair[2] = {p, tv};
        ax_args a = {.n = 2, .pos = pair};
        r = ax_call(in, c->jvp, &a);
    }
    if (p) ax_value_release(p);
    if (tv) ax_value_release(tv);
    if (!r) return -1;
    if (r->kind != AX_V_TUPLE || r->n != 2) {
        ax_value_release(r);
        ax_error(in->cx, AX_ERR_TYPE,
                 "the custom_jvp rule of %s must return a pair (primal_out, tangent_out)", c->name);
        return -1;
    }
    ax_value *tdef = NULL;
    int nt = 0, rc = -1;
    *outs = *touts = NULL;
    *def = NULL;
    if (!flatten_arrays(in, r->items[0], "a custom_jvp rule", outs, n, def) &&
        !flatten_arrays(in, r->items[1], "a custom_jvp rule", touts, &nt, &tdef)) {
        if (!ax_treedef_equal(*def, tdef))
            ax_error(in->cx, AX_ERR_VALUE,
                     "the custom_jvp rule of %s returned a tangent whose structure differs from "
                     "the output's",
                     c->name);
        else
            rc = 0;
    }
    if (rc) {
        ax_flat_release_arrays(*outs, *n);
        ax_flat_release_arrays(*touts, nt);
        if (*def) ax_value_release(*def);
        *outs = *touts = NULL;
        *def = NULL;
    }
    if (tdef) ax_value_release(tdef);
    ax_value_release(r);
    return rc;
}

/* ---------------------------------------------------------------- custom_vjp */

/* What the transpose of one custom_vjp call needs. */
typedef struct vjp_data {
    ax_interp *in;
    ax_value *bwd, *res, *out_def;
    int nout;
    ax_aval *out_types;
    char name[64];
} vjp_data;

static void vjp_data_free(void *p) {
    vjp_data *d = p;
    ax_value_release(d->bwd);
    ax_value_release(d->res);
    ax_value_release(d->out_def);
    free(d->out_types);
    free(d);
}

static int vjp_transpose(ax_ctx *cx, void *data, int k, ax_array *ct, int nin, ax_array **ct_in) {
    vjp_data *d = data;
    ax_array **cts = calloc((size_t)d->nout + 1, sizeof *cts);
    if (!cts) return ax_error_oom(cx), -1;
    int rc = 0;
    for (int j = 0; j < d->nout && !rc; j++) {
        const ax_aval *t = &d->out_types[j];
        cts[j] = j == k ? ax_array_retain(ct) : ax_array_zeros(cx, t->dtype, t->ndim, t->shape);
        if (!cts[j]) rc = -1;
    }
    ax_value **vals = rc ? NULL : ax_flat_wrap_arrays(cx, d->nout, cts);
    ax_value *ct_tree = vals ? ax_tree_unflatten(d->in, d->out_def, vals, d->nout) : NULL;
    if (vals) ax_values_release(vals, d->nout);
    ax_flat_release_arrays(cts, d->nout);
    if (!ct_tree) return -1;
    ax_value *args[2] = {d->res, ct_tree};
    ax_args a = {.n = 2, .pos = args};
    ax_value *r = ax_call(d->in, d->bwd, &a);
    ax_value_release(ct_tree);
    if (!r) return -1;
    /* bwd returns one cotangent per argument (None for zero), as a tuple */
    ax_array **flat = NULL;
    int n = 0;
    ax_value *def = NULL;
    rc = r->kind == AX_V_TUPLE ? 0 : -1;
    if (rc)
        ax_error(cx, AX_ERR_TYPE,
                 "the backward function of %s must return a tuple with one "
                 "cotangent per argument",
                 d->name);
    if (!rc) rc = flatten_arrays(d->in, r, "a custom_vjp backward function", &flat, &n, &def);
    if (!rc && n != nin) {
        ax_error(cx, AX_ERR_VALUE,
                 "the backward function of %s returned %d cotangent arrays for "
                 "%d input arrays",
                 d->name, n, nin);
        rc = -1;
    }
    for (int i = 0; i < nin; i++) ct_in[i] = !rc ? ax_array_retain(flat[i]) : NULL;
    ax_flat_release_arrays(flat, n);
    if (def) ax_value_release(def);
    ax_value_release(r);
    return rc;
}

/* The user's forward function on flat primals; the tangent of each output is a custom_linear
 * of the tangents whose transpose calls the backward function. Flat outputs and tangents (new
 * references) with the outputs' structure. */
static int run_vjp_rule(ax_interp *in, custom_fn *c, flat_call *fc, ax_array **prim, ax_array **tan,
                        int *n, ax_array ***outs_out, ax_array ***touts_out, ax_value **def_out) {
    ax_value *p = args_tuple(fc, prim);
    if (!p) return -1;
    ax_args a = {.n = p->n, .pos = p->items};
    ax_value *r = ax_call(in, c->fwd, &a);
    ax_value_release(p);
    if (!r) return -1;
    if (r->kind != AX_V_TUPLE || r->n != 2) {
        ax_value_release(r);
        ax_error(in->cx, AX_ERR_TYPE,
                 "the forward function of %s must return a pair (output, residuals)", c->name);
        return -1;
    }
    ax_array **outs = NULL, **tz = NULL, **touts = NULL;
    ax_value *def = NULL;
    int rc = -1;
    vjp_data *d = NULL;
    ax_callback *cb = NULL;
    *n = 0;
    if (flatten_arrays(in, r->items[0], "a custom_vjp forward function", &outs, n, &def)) goto done;
    tz = tangents_or_zeros(in->cx, fc->nflat, prim, tan);
    d = calloc(1, sizeof *d);
    cb = calloc(1, sizeof *cb);
    touts = calloc((size_t)*n + 1, sizeof *touts);
    if (!tz || !d || !cb || !touts) {
        free(d), free(cb);
        d = NULL, cb = NULL;
        ax_error_oom(in->cx);
        goto done;
    }
    *d = (vjp_data){.in = in,
                    .bwd = ax_value_retain(c->bwd),
                    .res = ax_value_retain(r->items[1]),
                    .out_def = ax_value_retain(def),
                    .nout = *n,
                    .out_types = calloc((size_t)*n + 1, sizeof(ax_aval))};
    snprintf(d->name, sizeof d->name, "%s", c->name);
    for (int j = 0; d->out_types && j < *n; j++) ax_aval_of(&d->out_types[j], outs[j]);
    *cb = (ax_callback){
        .refs = 1, .name = d->name, .transpose = vjp_transpose, .free = vjp_data_free, .data = d};
    for (int j = 0; j < *n; j++) {
        ax_params prm = {.cb = cb, .k = j, .dtype = outs[j]->dtype, .ndim = outs[j]->ndim};
        memcpy(prm.shape, outs[j]->shape, (size_t)outs[j]->ndim * sizeof *prm.shape);
        if (!(touts[j] = ax_bind1(in->cx, AX_P_CUSTOM_LINEAR, fc->nflat, tz, &prm))) goto done;
    }
    *outs_out = outs, *touts_out = touts, *def_out = def;
    outs = touts = NULL;
    def = NULL;
    rc = 0;
done:
    ax_callback_release(cb);
    ax_flat_release_arrays(outs, *n);
    ax_flat_release_arrays(touts, *n);
    ax_flat_release_arrays(tz, fc->nflat);
    if (def) ax_value_release(def);
    ax_value_release(r);
    return rc;
}

static int run_rule(ax_interp *in, custom_fn *c, flat_call *fc, ax_array **prim, ax_array **tan,
                    int *n, ax_array ***outs, ax_array ***touts, ax_value **def) {
    return c->is_vjp ? run_vjp_rule(in, c, fc, prim, tan, n, outs, touts, def)
                     : run_jvp_rule(in, c, fc, prim, tan, n, outs, touts, def);
}

/* ---------------------------------------------------------------- under jit and vmap */

/* What a custom_call equation needs to run the rule later: the function object and how to
 * rebuild its arguments from flat arrays. */
typedef struct call_data {
    ax_interp *in;
    ax_value *obj;   /* the custom_jvp / custom_vjp object */
    flat_call shape; /* only in, ntraced, defs and counts are used: the argument structure */
    char name[64];
} call_data;

static void call_data_free(void *p) {
    call_data *d = p;
    ax_value_release(d->obj);
    for (int k = 0; k < d->shape.ntraced; k++) ax_value_release(d->shape.defs[k]);
    free(d);
}

/* custom_call's JVP: the user's rule, output k. */
static int call_jvp(ax_ctx *cx, void *data, int k, int nin, ax_array **prim, ax_array **tan,
                    ax_array **out, ax_array **tout) {
    call_data *d = data;
    custom_fn *c = d->obj->obj.payload;
    ax_array **outs = NULL, **touts = NULL;
    ax_value *def = NULL;
    int n = 0;
    d->shape.nflat = nin;
    if (run_rule(d->in, c, &d->shape, prim, tan, &n, &outs, &touts, &def)) return -1;
    int rc = 0;
    if (k >= n) {
        ax_error(cx, AX_ERR_VALUE, "the rule of %s returned %d outputs, the function %d", c->name,
                 n, k + 1);
        rc = -1;
    } else {
        *out = ax_array_retain(outs[k]);
        *tout = ax_array_retain(touts[k]);
    }
    ax_flat_release_arrays(outs, n);
    ax_flat_release_arrays(touts, n);
    ax_value_release(def);
    return rc;
}

/* ---- custom_vjp under vmap: fwd and bwd run per example through vmap ---- */

typedef struct vmapped_vjp {
    ax_interp *in;
    custom_fn *c;
    flat_call *shape; /* the argument structure */
    int nout;         /* outputs of fwd (flat) */
    ax_value *out_def, *res_def;
    ax_aval *out_types; /* one example's */
    ax_array **res;     /* bwd only: the batched residual leaves (owned) */
    int nres;
    int64_t size;
    char name[80];
} vmapped_vjp;

static void vmapped_vjp_free(void *p) {
    vmapped_vjp *v = p;
    if (v->out_def) ax_value_release(v->out_def);
    if (v->res_def) ax_value_release(v->res_def);
    ax_flat_release_arrays(v->res, v->nres);
    free(v->out_types);
    free(v);
}

/* One example: fwd(*args) flattened to (outputs..., residual leaves...). */
static int fwd_example(ax_ctx *cx, void *closure, int nin, ax_array **in, int *nout,
                       ax_array ***out) {
    vmapped_vjp *v = closure;
    v->shape->nflat = nin;
    ax_value *p = args_tuple(v->shape, in);
    if (!p) return -1;
    ax_args a = {.n = p->n, .pos = p->items};
    ax_value *r = ax_call(v->in, v->c->fwd, &a);
    ax_value_release(p);
    if (!r) return -1;
    ax_array **o = NULL, **res = NULL;
    ax_value *od = NULL, *rd = NULL;
    int no = 0, nr = 0, rc = -1;
    if (r->kind != AX_V_TUPLE || r->n != 2)
        ax_error(cx, AX_ERR_TYPE, "the forward function of %s must return a pair", v->c->name);
    else if (!flatten_arrays(v->in, r->items[0], "a custom_vjp forward function", &o, &no, &od) &&
             !flatten_arrays(v->in, r->items[1], "custom_vjp residuals", &res, &nr, &rd))
        rc = 0;
    if (!rc && (*out = calloc((size_t)(no + nr) + 1, sizeof **out))) {
        for (int j = 0; j < no; j++) (*out)[j] = ax_array_retain(o[j]);
        for (int j = 0; j < nr; j++) (*out)[no + j] = ax_array_retain(res[j]);
        *nout = no + nr;
        if (v->out_def) ax_value_release(v->out_def);
        if (v->res_def) ax_value_release(v->res_def);
        v->out_def = od, v->res_def = rd, v->nout = no;
        od = rd = NULL;
        free(v->out_types);
        v->out_types = calloc((size_t)no + 1, sizeof *v->out_types);
        for (int j = 0; v->out_types && j < no; j++) ax_aval_of(&v->out_types[j], o[j]);
    } else if (!rc) {
        rc = -1, ax_error_oom(cx);
    }
    ax_flat_release_arrays(o, no);
    ax_flat_release_arrays(res, nr);
    if (od) ax_value_release(od);
    if (rd) ax_value_release(rd);
    ax_value_release(r);
    return rc;
}

typedef struct bwd_closure {
    vmapped_vjp *v;
    int k;
} bwd_closure;

/* One example: bwd(residuals, cotangent of output k) flattened; inputs: residual leaves, ct. */
static int bwd_example(ax_ctx *cx, void *closure, int nin, ax_array **in, int *nout,
                       ax_array ***out) {
    bwd_closure *b = closure;
    vmapped_vjp *v = b->v;
    ax_value **rv = ax_flat_wrap_arrays(cx, v->nres, in);
    ax_value *res = rv ? ax_tree_unflatten(v->in, v->res_def, rv, v->nres) : NULL;
    if (rv) ax_values_release(rv, v->nres);
    ax_array **cts = calloc((size_t)v->nout + 1, sizeof *cts);
    int rc = res && cts ? 0 : -1;
    for (int j = 0; j < v->nout && !rc; j++) {
        const ax_aval *t = &v->out_types[j];
        cts[j] = j == b->k ? ax_array_retain(in[nin - 1])
                           : ax_array_zeros(cx, t->dtype, t->ndim, t->shape);
        if (!cts[j]) rc = -1;
    }
    ax_value **cv = rc ? NULL : ax_flat_wrap_arrays(cx, v->nout, cts);
    ax_value *ct = cv ? ax_tree_unflatten(v->in, v->out_def, cv, v->nout) : NULL;
    if (cv) ax_values_release(cv, v->nout);
    ax_flat_release_arrays(cts, v->nout);
    ax_value *r = NULL;
    if (res && ct) {
        ax_value *args[2] = {res, ct};
        ax_args a = {.n = 2, .pos = args};
        r = ax_call(v->in, v->c->bwd, &a);
    }
    if (res) ax_value_release(res);
    if (ct) ax_value_release(ct);
    if (!r) return -1;
    ax_value *def = NULL;
    rc = r->kind == AX_V_TUPLE
             ? flatten_arrays(v->in, r, "a custom_vjp backward function", out, nout, &def)
             : -1;
    if (r->kind != AX_V_TUPLE)
        ax_error(cx, AX_ERR_TYPE,
                 "the backward function of %s must return a tuple with one cotangent per "
                 "argument",
                 v->c->name);
    if (def) ax_value_release(def);
    ax_value_release(r);
    return rc;
}

static int vmapped_transpose(ax_ctx *cx, void *data, int k, ax_array *ct, int nin,
                             ax_array **ct_in) {
    vmapped_vjp *v = data;
    int n = v->nres + 1, nout = 0, *bdims = NULL;
    ax_array **args = calloc((size_t)n + 1, sizeof *args), **outs = NULL;
    int *axes = calloc((size_t)n + 1, sizeof *axes);
    if (!args || !axes) {
        free(args), free(axes);
        return ax_error_oom(cx), -1;
    }
    for (int j = 0; j < v->nres; j++) args[j] = v->res[j];
    args[v->nres] = ct;
    bwd_closure b = {v, k};
    int rc = ax_vmap(cx, bwd_example, &b, n, args, axes, v->size, &nout, &outs, &bdims);
    free(args), free(axes);
    if (!rc) rc = ax_vmap_place_first(cx, nout, outs, bdims, v->size);
    if (!rc && nout != nin) {
        ax_error(cx, AX_ERR_VALUE,
                 "the backward function of %s returned %d cotangents for %d "
                 "inputs",
                 v->c->name, nout, nin);
        rc = -1;
    }
    for (int i = 0; i < nin; i++) ct_in[i] = !rc ? ax_array_retain(outs[i]) : NULL;
    ax_flat_release_arrays(outs, nout);
    return rc;
}

/* custom_vjp vmapped: outputs from fwd per example; the tangent of output k a custom_linear
 * whose transpose runs bwd per example on the batched residuals. */
static int vmapped_vjp_jvp(ax_ctx *cx, void *data, int64_t size, int k, int nin, ax_array **prim,
                           ax_array **tan, ax_array **out, ax_array **tout) {
    call_data *d = data;
    custom_fn *c = d->obj->obj.payload;
    vmapped_vjp *v = calloc(1, sizeof *v);
    int *axes = calloc((size_t)nin + 1, sizeof *axes), *bdims = NULL, nall = 0, rc = -1;
    ax_array **all = NULL, **tz = NULL;
    ax_callback *cb = calloc(1, sizeof *cb);
    if (!v || !axes || !cb) goto done;
    *v = (vmapped_vjp){.in = d->in, .c = c, .shape = &d->shape, .size = size};
    snprintf(v->name, sizeof v->name, "vmap(%s)", c->name);
    if (ax_vmap(cx, fwd_example, v, nin, prim, axes, size, &nall, &all, &bdims) ||
        ax_vmap_place_first(cx, nall, all, bdims, size))
        goto done;
    if (k >= v->nout) {
        ax_error(cx, AX_ERR_VALUE, "the forward function of %s has %d outputs", c->name, v->nout);
        goto done;
    }
    v->nres = nall - v->nout;
    v->res = calloc((size_t)v->nres + 1, sizeof *v->res);
    tz = tangents_or_zeros(cx, nin, prim, tan);
    if (!v->res || !tz) goto done;
    for (int j = 0; j < v->nres; j++) v->res[j] = ax_array_retain(all[v->nout + j]);
    *cb = (ax_callback){.refs = 1,
                        .name = v->name,
                        .transpose = vmapped_transpose,
                        .free = vmapped_vjp_free,
                        .data = v};
    v = NULL;
    ax_params prm = {.cb = cb, .k = k, .dtype = all[k]->dtype, .ndim = all[k]->ndim};
    memcpy(prm.shape, all[k]->shape, (size_t)all[k]->ndim * sizeof *prm.shape);
    if (!(*tout = ax_bind1(cx, AX_P_CUSTOM_LINEAR, nin, tz, &prm))) goto done;
    *out = ax_array_retain(all[k]);
    rc = 0;
done:
    if (rc && !ax_error_pending(cx)) ax_error_oom(cx);
    if (v) vmapped_vjp_free(v);
    ax_callback_release(cb);
    ax_flat_release_arrays(all, nall);
    ax_flat_release_arrays(tz, nin);
    free(axes);
    return rc;
}

/* Under jit, vmap or make_jaxpr: one custom_call equation per output, so a later
 * differentiation (grad(jit(f)), grad(vmap(f))) still finds the rule. */
static ax_value *bind_custom_call(ax_interp *in, ax_value *self, custom_fn *c, flat_call *fc) {
    ax_aval *types = calloc((size_t)fc->nflat + 1, sizeof *types);
    call_data *d = calloc(1, sizeof *d);
    ax_callback *cb = calloc(1, sizeof *cb);
    ax_array **outs = NULL;
    ax_value *result = NULL;
    int nout = 0;
    if (!types || !d || !cb) {
        free(types), free(d), free(cb);
        return ax_error_oom(in->cx);
    }
    *d = (call_data){.in = in, .obj = ax_value_retain(self)};
    d->shape.in = in;
    d->shape.ntraced = fc->ntraced;
    for (int k = 0; k < fc->ntraced; k++) {
        d->shape.defs[k] = ax_value_retain(fc->defs[k]);
        d->shape.counts[k] = fc->counts[k];
    }
    snprintf(d->name, sizeof d->name, "%s", c->name);
    *cb = (ax_callback){.refs = 1,
                        .name = d->name,
                        .jvp = call_jvp,
                        .free = call_data_free,
                        .data = d,
                        .batched_jvp = c->is_vjp ? vmapped_vjp_jvp : NULL};
    for (int i = 0; i < fc->nflat; i++) ax_aval_of(&types[i], fc->flat[i]);
    cb->body = ax_trace_to_ir(in->cx, ax_flat_call_fn, fc, fc->nflat, types, &nout);
    if (cb->body && fc->nmain == nout) {
        outs = calloc((size_t)nout + 1, sizeof *outs);
        for (int j = 0; outs && j < nout; j++) {
            ax_params q = {.cb = cb, .k = j};
            if (!(outs[j] = ax_bind1(in->cx, AX_P_CUSTOM_CALL, fc->nflat, fc->flat, &q))) break;
        }
        ax_value **vals = outs ? ax_flat_wrap_arrays(in->cx, nout, outs) : NULL;
        if (vals) {
            result = ax_tree_unflatten(in, fc->out_def, vals, nout);
            ax_values_release(vals, nout);
        }
        if (outs) ax_flat_release_arrays(outs, nout);
    } else if (cb->body) {
        ax_error(in->cx, AX_ERR_TYPE, "%s must return arrays (or pytrees of arrays)", c->name);
    }
    ax_callback_release(cb);
    free(types);
    return result;
}

/* ---------------------------------------------------------------- the objects */

static ax_value *custom_call(ax_interp *in, ax_value *self, const ax_args *a) {
    custom_fn *c = self->obj.payload;
    if ((!c->is_vjp && !c->jvp) || (c->is_vjp && !c->fwd)) return ax_call(in, c->fn, a);
    int traced[32], n = a->n < 32 ? a->n : 32;
    for (int i = 0; i < n; i++) traced[i] = i;
    flat_call fc;
    ax_value *result = NULL;
    ax_array **prim = NULL, **tan = NULL;
    if (a->nkw) {
        ax_error(in->cx, AX_ERR_TYPE,
                 "%s: pass arguments positionally to a function with a "
                 "custom derivative",
                 c->name);
        return NULL;
    }
    if (ax_flat_call_init(&fc, in, c->name, c->fn, a, n, traced, false)) goto done;
    prim = calloc((size_t)fc.nflat + 1, sizeof *prim);
    tan = calloc((size_t)fc.nflat + 1, sizeof *tan);
    if (!prim || !tan) goto done;
    ax_trace *t = ax_jvp_trace_of(in->cx, fc.nflat, fc.flat, prim, tan), *any = NULL;
    if (ax_error_pending(in->cx)) goto done;
    if (t) { /* differentiation is innermost: the rule, now */
        ax_array **outs = NULL, **touts = NULL;
        ax_value *def = NULL;
        int nout = 0;
        if (!run_rule(in, c, &fc, prim, tan, &nout, &outs, &touts, &def))
            result = wrap_outputs(in, t, def, nout, outs, touts);
        if (def) ax_value_release(def);
    } else if (!ax_trace_find(in->cx, fc.nflat, fc.flat, &any) && any) {
        result = bind_custom_call(in, self, c, &fc); /* jit, vmap, make_jaxpr */
    } else if (!ax_error_pending(in->cx)) {
        result = ax_call(in, c->fn, a);
    }
done:
    free(prim);
    free(tan);
    ax_flat_call_free(&fc);
    return result;
}

/* f.defjvp(rule) / f.defvjp(fwd, bwd): sets the rule; returns the rule (decorator use). */
static ax_value *define_rule(ax_interp *in, ax_value *self, const ax_args *a) {
    ax_value *obj = self->builtin->data;
    custom_fn *c = obj->obj.payload;
    int want = c->is_vjp ? 2 : 1;
    if (a->n != want || a->nkw)
        return ax_error(in->cx, AX_ERR_TYPE, "%s takes %s", c->is_vjp ? "defvjp" : "defjvp",
                        c->is_vjp ? "two functions (fwd, bwd)" : "one function (the JVP rule)");
    ax_value **slot = c->is_vjp ? &c->fwd : &c->jvp;
    if (*slot) ax_value_release(*slot);
    *slot = ax_value_retain(a->pos[0]);
    if (c->is_vjp) {
        if (c->bwd) ax_value_release(c->bwd);
        c->bwd = ax_value_retain(a->pos[1]);
    }
    return ax_value_retain(a->pos[0]);
}

static ax_value *custom_getattr(ax_interp *in, ax_value *self, const char *name) {
    custom_fn *c = self->obj.payload;
    (void)in;
    if (strcmp(name, c->is_vjp ? "defvjp" : "defjvp")) return NULL;
    return ax_value_builtin(name,
                            c->is_vjp ? "f.defvjp(fwd, bwd): the reverse-mode rule of f"
                                      : "f.defjvp(rule): the forward-mode rule of f",
                            define_rule, ax_value_retain(self));
}

static const ax_object_type custom_type = {.name = "custom derivative function",
                                           .free = custom_free,
                                           .format = custom_format,
                                           .getattr = custom_getattr,
                                           .call = custom_call};

static ax_value *make_custom(ax_interp *in, const ax_args *a, bool is_vjp) {
    const char *what = is_vjp ? "custom_vjp" : "custom_jvp";
    if (a->n != 1 || a->nkw) return ax_error(in->cx, AX_ERR_TYPE, "%s(f) takes one function", what);
    custom_fn *c = calloc(1, sizeof *c);
    if (!c) return ax_error_oom(in->cx);
    c->is_vjp = is_vjp;
    c->fn = ax_value_retain(a->pos[0]);
    const ax_value *f = a->pos[0];
    snprintf(c->name, sizeof c->name, "%s",
             f->kind == AX_V_FUNC && f->fn->name ? f->fn->name : what);
    return ax_value_object(&custom_type, c);
}

static ax_value *b_custom_jvp(ax_interp *in, ax_value *self, const ax_args *a) {
    (void)self;
    return make_custom(in, a, false);
}

static ax_value *b_custom_vjp(ax_interp *in, ax_value *self, const ax_args *a) {
    (void)self;
    return make_custom(in, a, true);
}

int ax_custom_rules_register(ax_interp *in) {
    ax_value *j = ax_value_builtin("custom_jvp",
                                   "custom_jvp(f): f with a forward-mode rule "
                                   "set by @f.defjvp",
                                   b_custom_jvp, NULL);
    ax_value *v = ax_value_builtin("custom_vjp",
                                   "custom_vjp(f): f with a reverse-mode rule set "
                                   "by f.defvjp(fwd, bwd)",
                                   b_custom_vjp, NULL);
    if (!j || !v) return -1;
    ax_interp_define_builtin(in, "custom_jvp", j);
    ax_interp_define_builtin(in, "custom_vjp", v);
    return 0;
}

/* custom_jvp and custom_vjp (see custom_rules.h).
 *
 * A call looks at its arguments. When the innermost transformation among them is a JVP trace
 * (grad, jvp, vjp, and so on), the user's rule runs on their primal and tangent parts. When it
 * is another one (jit, vmap, make_jaxpr), the call becomes one custom_call equation per output:
 * the function's body traced, with the rule attached, so a differentiation outside
 * (grad(jit(f)), grad(vmap(f))) still applies the rule; vmap batches it by running the rule per
 * example (compiler/prims_custom.c), or for custom_vjp fwd and bwd per example (below). Traced
 * values the function closes over become leading operands of those equations (JAX's closure
 * conversion), so the IR never holds another trace's tracer. Without any transformation the
 * function runs as written.
 * custom_vjp's tangent map is one custom_linear equation per output, whose transpose calls the
 * user's backward function (one cotangent per argument, None for zero); it has no forward mode:
 * applied forward (jvp, jacfwd, linearize) it is a TypeError, as in JAX. */
#include "custom_rules.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../compiler/ad.h"
#include "../compiler/vmap.h"
#include "../lang/cycles.h"
#include "flat_call.h"
#include "np.h"
#include "transforms.h"
#include "pytree.h"

typedef struct custom_fn {
    bool is_vjp;
    /* custom_gradient: fwd is the user's function, returning (out, vjp); vjp(ct) gives the
     * cotangents, and is kept as a value instead of flattened residuals */
    bool vjp_residual;
    ax_value *fn;
    ax_value *jvp;       /* custom_jvp: rule(primals, tangents) -> (out, tangent_out) */
    ax_value *fwd, *bwd; /* custom_vjp: fwd(*args) -> (out, residuals); bwd(residuals, ct) */
    int nnondiff;
    int *nondiff; /* nondiff_argnums: arguments the rules get first, not differentiated */
    char name[64];
} custom_fn;

static void custom_free(void *p) {
    custom_fn *c = p;
    ax_value *vals[] = {c->fn, c->jvp, c->fwd, c->bwd};
    for (int i = 0; i < 4; i++)
        if (vals[i]) ax_value_release(vals[i]);
    free(c->nondiff);
    free(c);
}

/* The function and its rules, which may close over it (lang/cycles.h). */
static void custom_children(void *p, void (*visit)(void *arg, ax_value *child), void *arg) {
    custom_fn *c = p;
    ax_value *vals[] = {c->fn, c->jvp, c->fwd, c->bwd};
    for (int i = 0; i < 4; i++)
        if (vals[i]) visit(arg, vals[i]);
}

static void custom_forget(void *p) {
    custom_fn *c = p;
    c->fn = c->jvp = c->fwd = c->bwd = NULL;
}

static void custom_format(ax_strbuf *out, void *p) {
    custom_fn *c = p;
    ax_strbuf_appendf(out, "<%s function %s>", c->is_vjp ? "custom_vjp" : "custom_jvp", c->name);
}

/* Zeros for absent tangents (a copy of `primals` shape by shape). */
static ax_array **tangents_or_zeros(ax_ctx *cx, int n, ax_array **primals, ax_array **tangents) {
    ax_array **t = calloc((size_t)n + 1, sizeof *t);
    if (!t) return ax_error_oom(cx);
    for (int i = 0; i < n; i++) {
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
    int rc = *out ? 0 : (ax_error_oom(in->cx), -1);
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
        *def = NULL;
    }
    return rc;
}

/* Wraps outputs as JVP tracers of t; takes outs and touts. */
static ax_value *wrap_outputs_take(ax_interp *in, ax_trace *t, ax_value *def, int n,
                                   ax_array **outs, ax_array **touts) {
    ax_array **w = calloc((size_t)n + 1, sizeof *w);
    int rc = w ? 0 : (ax_error_oom(in->cx), -1);
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

/* How a function's arguments flatten: what a backward function's result is checked against. */
typedef struct arg_layout {
    int nargs;      /* arguments */
    int *counts;    /* leaves of each (owned) */
    int nin;        /* leaves in all */
    ax_aval *types; /* of each leaf (owned) */
} arg_layout;

static void layout_free(arg_layout *l) {
    free(l->counts);
    free(l->types);
}

/* The layout of fc's arguments, with leaf types from `flat` (less `drop` leading dims). */
static int layout_init(ax_ctx *cx, arg_layout *l, const flat_call *fc, ax_array **flat, int drop) {
    *l = (arg_layout){.nargs = fc->ntraced, .nin = fc->nflat};
    l->counts = malloc((size_t)(l->nargs + 1) * sizeof *l->counts);
    l->types = calloc((size_t)l->nin + 1, sizeof *l->types);
    if (!l->counts || !l->types) return ax_error_oom(cx), -1;
    if (l->nargs) memcpy(l->counts, fc->counts, (size_t)l->nargs * sizeof *l->counts);
    for (int i = 0; i < l->nin; i++) {
        ax_aval_of(&l->types[i], flat[i]);
        l->types[i].ndim -= drop;
        memmove(l->types[i].shape, l->types[i].shape + drop,
                (size_t)l->types[i].ndim * sizeof *l->types[i].shape);
    }
    return 0;
}

/* The cotangents a backward function returned: a tuple with one entry per argument of the
 * function, each with that argument's structure and shapes, or None for zero (as in JAX).
 * Fills ct_in[0..l->nin) with new references, NULL for zero. */
static int bwd_cotangents(ax_interp *in, const char *name, ax_value *r, const arg_layout *l,
                          ax_array **ct_in) {
    ax_ctx *cx = in->cx;
    for (int i = 0; i < l->nin; i++) ct_in[i] = NULL;
    if (r->kind != AX_V_TUPLE || r->n != l->nargs) {
        ax_error(cx, AX_ERR_TYPE,
                 "the backward function of %s must return a tuple with one cotangent per "
                 "argument (%d of them; None for zero)",
                 name, l->nargs);
        return -1;
    }
    for (int k = 0, off = 0; k < l->nargs; off += l->counts[k++]) {
        if (r->items[k]->kind == AX_V_NONE) continue;
        ax_array **flat = NULL;
        ax_value *def = NULL;
        int n = 0, rc = 0;
        if (flatten_arrays(in, r->items[k], "a custom_vjp backward function", &flat, &n, &def))
            goto fail;
        ax_value_release(def);
        if (n != l->counts[k]) {
            ax_error(cx, AX_ERR_VALUE,
                     "the backward function of %s returned %d cotangent arrays for argument %d, "
                     "which holds %d",
                     name, n, k, l->counts[k]);
            rc = -1;
        }
        for (int j = 0; j < n && !rc; j++) {
            const ax_aval *t = &l->types[off + j];
            if (!ax_shape_equal(t->ndim, t->shape, flat[j]->ndim, flat[j]->shape)) {
                char want[256], got[256];
                ax_type_format(want, sizeof want, t->dtype, t->ndim, t->shape);
                ax_type_format(got, sizeof got, flat[j]->dtype, flat[j]->ndim, flat[j]->shape);
                ax_error(cx, AX_ERR_VALUE,
                         "the backward function of %s returned a cotangent %s for an argument "
                         "of type %s (argument %d): they must have the same shape",
                         name, got, want, k);
                rc = -1;
            }
        }
        for (int j = 0; j < n && !rc; j++) ct_in[off + j] = ax_array_retain(flat[j]);
        ax_flat_release_arrays(flat, n);
        if (rc) goto fail;
    }
    return 0;
fail:
    for (int i = 0; i < l->nin; i++) {
        ax_array_release(ct_in[i]);
        ct_in[i] = NULL;
    }
    return -1;
}

/* What the transpose of one custom_vjp call needs. */
typedef struct vjp_data {
    ax_interp *in;
    ax_value *bwd, *res_def, *out_def; /* the residuals are custom_linear's leading operands */
    /* custom_gradient: its vjp as an IR of (residuals, cotangents), and its result's structure */
    ax_ir *vjp_body;
    ax_value *ct_def;
    int nout;
    ax_aval *out_types;
    arg_layout args;
    char name[64];
} vjp_data;

static void vjp_data_free(void *p) {
    vjp_data *d = p;
    if (d->bwd) ax_value_release(d->bwd);
    if (d->res_def) ax_value_release(d->res_def);
    if (d->ct_def) ax_value_release(d->ct_def);
    ax_ir_release(d->vjp_body);
    ax_value_release(d->out_def);
    free(d->out_types);
    layout_free(&d->args);
    free(d);
}

/* ---- custom_gradient's vjp, closure-converted as JAX does: traced to an IR of the
 * cotangents once the forward pass has made it; the tracers it closes over become the IR's
 * leading inputs (the residual operands), so transformations around the call see them. */

typedef struct vjp_trace {
    ax_interp *in;
    ax_value *vjp, *out_def;
    ax_value *ct_def; /* the structure of vjp's result, set by the trace */
    int nargs;
} vjp_trace;

/* vjp(ct) flattened; a single argument's cotangent may come without its tuple. */
static int vjp_flat(ax_ctx *cx, void *closure, int nin, ax_array **in, int *nout, ax_array ***out) {
    vjp_trace *v = closure;
    ax_value **vals = ax_flat_wrap_arrays(cx, nin, in);
    ax_value *ct = vals ? ax_tree_unflatten(v->in, v->out_def, vals, nin) : NULL;
    if (vals) ax_values_release(vals, nin);
    ax_value *r = ct ? ax_call1(v->in, v->vjp, ct) : NULL;
    if (ct) ax_value_release(ct);
    if (r && r->kind != AX_V_TUPLE && v->nargs == 1) {
        ax_value *one[1] = {r};
        if (!(r = ax_value_tuple(1, one))) ax_error_oom(cx);
    }
    if (!r) return -1;
    ax_value *def = NULL;
    int rc = flatten_arrays(v->in, r, "the vjp of a custom_gradient function", out, nout, &def);
    ax_value_release(r);
    if (rc) return -1;
    if (v->ct_def) ax_value_release(v->ct_def);
    v->ct_def = def;
    return 0;
}

static ax_ir *convert_traced_consts(ax_ctx *cx, ax_ir *body, int *nconsts, ax_array ***consts);

/* The vjp's IR (new reference) and its captured tracers (*res, new references). */
static ax_ir *trace_vjp(ax_interp *in, ax_value *vjp, ax_value *out_def, int nout, ax_array **outs,
                        int nargs, ax_value **ct_def, int *nres, ax_array ***res) {
    vjp_trace v = {.in = in, .vjp = vjp, .out_def = out_def, .nargs = nargs};
    ax_aval *types = calloc((size_t)nout + 1, sizeof *types);
    if (!types) return ax_error_oom(in->cx);
    for (int j = 0; j < nout; j++) ax_aval_of(&types[j], outs[j]);
    int nct = 0;
    ax_ir *ir = ax_trace_to_ir(in->cx, vjp_flat, &v, nout, types, &nct);
    free(types);
    ax_ir *body = ir ? convert_traced_consts(in->cx, ir, nres, res) : NULL;
    ax_ir_release(ir);
    if (!body && v.ct_def) ax_value_release(v.ct_def);
    *ct_def = body ? v.ct_def : NULL;
    return body;
}

/* The vjp's result for these residual operands and cotangent tree. */
static ax_value *eval_vjp_body(vjp_data *d, int nres, ax_array **res, ax_value *ct_tree) {
    ax_ctx *cx = d->in->cx;
    ax_array **cts = NULL, **args = NULL, **outs = NULL;
    ax_value *def = NULL, *r = NULL;
    int nct = 0, nout = d->vjp_body->nout;
    if (flatten_arrays(d->in, ct_tree, "a cotangent", &cts, &nct, &def)) return NULL;
    args = calloc((size_t)(nres + nct) + 1, sizeof *args);
    outs = calloc((size_t)nout + 1, sizeof *outs);
    if (args && outs) {
        memcpy(args, res, (size_t)nres * sizeof *args);
        memcpy(args + nres, cts, (size_t)nct * sizeof *args);
        if (!ax_ir_eval(cx, d->vjp_body, args, outs)) {
            ax_value **vals = ax_flat_wrap_arrays(cx, nout, outs);
            r = vals ? ax_tree_unflatten(d->in, d->ct_def, vals, nout) : NULL;
            if (vals) ax_values_release(vals, nout);
            ax_flat_release_arrays(outs, nout);
            outs = NULL;
        }
    } else {
        ax_error_oom(cx);
    }
    free(outs);
    free(args);
    ax_flat_release_arrays(cts, nct);
    ax_value_release(def);
    return r;
}

static int vjp_transpose(ax_ctx *cx, void *data, int k, ax_array *ct, int nres, ax_array **res,
                         int nin, ax_array **ct_in) {
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
    ax_value *r = NULL;
    if (d->vjp_body) {
        r = eval_vjp_body(d, nres, res, ct_tree);
    } else {
        ax_value **rv = ax_flat_wrap_arrays(cx, nres, res);
        ax_value *res_tree = rv ? ax_tree_unflatten(d->in, d->res_def, rv, nres) : NULL;
        if (rv) ax_values_release(rv, nres);
        ax_value *args[2] = {res_tree, ct_tree};
        ax_args a = {.n = 2, .pos = args};
        r = res_tree ? ax_call(d->in, d->bwd, &a) : NULL;
        if (res_tree) ax_value_release(res_tree);
    }
    ax_value_release(ct_tree);
    if (!r) return -1;
    (void)nin; /* = d->args.nin: the tangents of the arguments */
    rc = bwd_cotangents(d->in, d->name, r, &d->args, ct_in);
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
    ax_array **outs = NULL, **tz = NULL, **touts = NULL, **res = NULL, **ops = NULL;
    ax_value *def = NULL, *res_def = NULL, *ct_def = NULL;
    ax_ir *vjp_body = NULL;
    int rc = -1, nres = 0;
    vjp_data *d = NULL;
    ax_callback *cb = NULL;
    *n = 0;
    if (flatten_arrays(in, r->items[0], "a custom_vjp forward function", &outs, n, &def)) goto done;
    if (c->vjp_residual) {
        if (!(vjp_body =
                  trace_vjp(in, r->items[1], def, *n, outs, fc->ntraced, &ct_def, &nres, &res)))
            goto done;
    } else if (flatten_arrays(in, r->items[1], "a custom_vjp forward function's residuals", &res,
                              &nres, &res_def)) {
        goto done;
    }
    tz = tangents_or_zeros(in->cx, fc->nflat, prim, tan);
    ops = calloc((size_t)nres + (size_t)fc->nflat + 1, sizeof *ops);
    if (!ops) {
        ax_error_oom(in->cx);
        goto done;
    }
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
                    .bwd = c->bwd ? ax_value_retain(c->bwd) : NULL,
                    .vjp_body = vjp_body,
                    .ct_def = ct_def,
                    .res_def = res_def ? ax_value_retain(res_def) : NULL,
                    .out_def = ax_value_retain(def),
                    .nout = *n,
                    .out_types = calloc((size_t)*n + 1, sizeof(ax_aval))};
    vjp_body = NULL, ct_def = NULL; /* d holds them now */
    snprintf(d->name, sizeof d->name, "%s", c->name);
    *cb = (ax_callback){
        .refs = 1, .name = d->name, .transpose = vjp_transpose, .free = vjp_data_free, .data = d};
    if (!d->out_types) {
        ax_error_oom(in->cx);
        goto done;
    }
    for (int j = 0; j < *n; j++) ax_aval_of(&d->out_types[j], outs[j]);
    if (layout_init(in->cx, &d->args, fc, prim, 0)) goto done;
    for (int i = 0; i < nres; i++) ops[i] = res[i];
    for (int i = 0; i < fc->nflat; i++) ops[nres + i] = tz[i];
    for (int j = 0; j < *n; j++) {
        ax_params prm = {
            .cb = cb, .k = j, .nconsts = nres, .dtype = outs[j]->dtype, .ndim = outs[j]->ndim};
        memcpy(prm.shape, outs[j]->shape, (size_t)outs[j]->ndim * sizeof *prm.shape);
        if (!(touts[j] = ax_bind1(in->cx, AX_P_CUSTOM_LINEAR, nres + fc->nflat, ops, &prm)))
            goto done;
    }
    *outs_out = outs, *touts_out = touts, *def_out = def;
    outs = touts = NULL;
    def = NULL;
    rc = 0;
done:
    ax_callback_release(cb);
    ax_ir_release(vjp_body);
    if (ct_def) ax_value_release(ct_def);
    ax_flat_release_arrays(outs, *n);
    ax_flat_release_arrays(touts, *n);
    ax_flat_release_arrays(tz, fc->nflat);
    ax_flat_release_arrays(res, nres);
    free(ops);
    if (def) ax_value_release(def);
    if (res_def) ax_value_release(res_def);
    ax_value_release(r);
    return rc;
}

static int run_rule(ax_interp *in, custom_fn *c, flat_call *fc, ax_array **prim, ax_array **tan,
                    int *n, ax_array ***outs, ax_array ***touts, ax_value **def) {
    return c->is_vjp ? run_vjp_rule(in, c, fc, prim, tan, n, outs, touts, def)
                     : run_jvp_rule(in, c, fc, prim, tan, n, outs, touts, def);
}

/* ---------------------------------------------------------------- under jit and vmap */

/* What a custom_call equation needs to run the rule later: the function object, how to
 * rebuild its arguments from flat arrays, and how many of the call's leading inputs are values
 * the function closes over rather than arguments (see convert_traced_consts). */
typedef struct call_data {
    ax_interp *in;
    ax_value *obj;   /* the custom_jvp / custom_vjp object */
    flat_call shape; /* only in, ntraced, defs and counts are used: the argument structure */
    int nconsts;
    char name[64];
} call_data;

static void call_data_free(void *p) {
    call_data *d = p;
    ax_value_release(d->obj);
    ax_flat_call_free(&d->shape);
    free(d);
}

/* The rule differentiates with respect to the arguments only: a tangent on a value the
 * function closes over cannot be honoured (JAX refuses it the same way). */
static int check_closure_tangents(ax_ctx *cx, const call_data *d, ax_array **tan) {
    for (int i = 0; i < d->nconsts; i++) {
        if (tan[i]) {
            ax_error(cx, AX_ERR_TYPE,
                     "%s is differentiated with respect to a value it closes over, but its "
                     "custom rule only gives derivatives with respect to its arguments: pass "
                     "that value as an argument (and extend the rule)",
                     d->name);
            return -1;
        }
    }
    return 0;
}

/* custom_call's JVP: the user's rule, output k. */
static int call_jvp(ax_ctx *cx, void *data, int k, int nin, ax_array **prim, ax_array **tan,
                    ax_array **out, ax_array **tout) {
    call_data *d = data;
    custom_fn *c = d->obj->obj.payload;
    ax_array **outs = NULL, **touts = NULL;
    ax_value *def = NULL;
    int n = 0;
    if (check_closure_tangents(cx, d, tan)) return -1;
    prim += d->nconsts, tan += d->nconsts;
    d->shape.nflat = nin - d->nconsts;
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
    vjp_data vjp;     /* custom_gradient: its vjp's IR (vjp_body, ct_def), traced per example */
    flat_call *shape; /* the argument structure */
    arg_layout args;  /* one example's arguments */
    int nout;         /* outputs of fwd (flat) */
    ax_value *out_def, *res_def;
    ax_aval *out_types; /* one example's */
    int nres;           /* the batched residual leaves: custom_linear's leading operands */
    int64_t size;
    char name[80];
} vmapped_vjp;

static void vmapped_vjp_free(void *p) {
    vmapped_vjp *v = p;
    ax_ir_release(v->vjp.vjp_body);
    if (v->vjp.ct_def) ax_value_release(v->vjp.ct_def);
    if (v->out_def) ax_value_release(v->out_def);
    if (v->res_def) ax_value_release(v->res_def);
    free(v->out_types);
    layout_free(&v->args);
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
    else if (flatten_arrays(v->in, r->items[0], "a custom_vjp forward function", &o, &no, &od))
        ;
    else if (v->c->vjp_residual) { /* the vjp's IR; what it closes over are the residuals */
        ax_ir_release(v->vjp.vjp_body);
        if (v->vjp.ct_def) ax_value_release(v->vjp.ct_def);
        v->vjp.ct_def = NULL;
        v->vjp.vjp_body =
            trace_vjp(v->in, r->items[1], od, no, o, v->shape->ntraced, &v->vjp.ct_def, &nr, &res);
        rc = v->vjp.vjp_body ? 0 : -1;
    } else if (!flatten_arrays(v->in, r->items[1], "custom_vjp residuals", &res, &nr, &rd))
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
        if (!v->out_types) rc = -1, ax_error_oom(cx);
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

/* One example's cotangent tree for output k: ct there, zeros elsewhere. */
static ax_value *example_ct_tree(ax_ctx *cx, vmapped_vjp *v, int k, ax_array *ct) {
    ax_array **cts = calloc((size_t)v->nout + 1, sizeof *cts);
    int rc = cts ? 0 : -1;
    for (int j = 0; j < v->nout && !rc; j++) {
        const ax_aval *t = &v->out_types[j];
        cts[j] = j == k ? ax_array_retain(ct) : ax_array_zeros(cx, t->dtype, t->ndim, t->shape);
        if (!cts[j]) rc = -1;
    }
    ax_value **cv = rc ? NULL : ax_flat_wrap_arrays(cx, v->nout, cts);
    ax_value *tree = cv ? ax_tree_unflatten(v->in, v->out_def, cv, v->nout) : NULL;
    if (cv) ax_values_release(cv, v->nout);
    ax_flat_release_arrays(cts, v->nout);
    return tree;
}

/* One example: bwd(residuals, cotangent of output k), one cotangent per argument leaf (zeros
 * where bwd gave None); inputs: residual leaves, ct. */
static int bwd_example(ax_ctx *cx, void *closure, int nin, ax_array **in, int *nout,
                       ax_array ***out) {
    bwd_closure *b = closure;
    vmapped_vjp *v = b->v;
    ax_value *res = NULL, *ct = NULL, *r = NULL;
    if (v->vjp.vjp_body) {
        v->vjp.in = v->in;
        if ((ct = example_ct_tree(cx, v, b->k, in[nin - 1])))
            r = eval_vjp_body(&v->vjp, v->nres, in, ct);
    } else {
        ax_value **rv = ax_flat_wrap_arrays(cx, v->nres, in);
        res = rv ? ax_tree_unflatten(v->in, v->res_def, rv, v->nres) : NULL;
        if (rv) ax_values_release(rv, v->nres);
        ct = res ? example_ct_tree(cx, v, b->k, in[nin - 1]) : NULL;
    }
    if (res && ct) {
        ax_value *args[2] = {res, ct};
        ax_args a = {.n = 2, .pos = args};
        r = ax_call(v->in, v->c->bwd, &a);
    }
    if (res) ax_value_release(res);
    if (ct) ax_value_release(ct);
    if (!r) return -1;
    *nout = v->args.nin;
    *out = calloc((size_t)v->args.nin + 1, sizeof **out);
    int rc = *out ? bwd_cotangents(v->in, v->c->name, r, &v->args, *out) : -1;
    for (int i = 0; !rc && i < v->args.nin; i++) {
        const ax_aval *t = &v->args.types[i];
        if (!(*out)[i] && !((*out)[i] = ax_array_zeros(cx, t->dtype, t->ndim, t->shape))) rc = -1;
    }
    ax_value_release(r);
    if (rc && !ax_error_pending(cx)) ax_error_oom(cx);
    if (rc) {
        ax_flat_release_arrays(*out, v->args.nin);
        *out = NULL;
    }
    return rc;
}

static int vmapped_transpose(ax_ctx *cx, void *data, int k, ax_array *ct, int nres, ax_array **res,
                             int nin, ax_array **ct_in) {
    vmapped_vjp *v = data;
    int n = nres + 1, nout = 0, *bdims = NULL;
    ax_array **args = calloc((size_t)n + 1, sizeof *args), **outs = NULL;
    int *axes = calloc((size_t)n + 1, sizeof *axes);
    if (!args || !axes) {
        free(args), free(axes);
        return ax_error_oom(cx), -1;
    }
    for (int j = 0; j < nres; j++) args[j] = res[j];
    args[nres] = ct;
    bwd_closure b = {v, k};
    int rc = ax_vmap(cx, bwd_example, &b, n, args, axes, v->size, &nout, &outs, &bdims);
    free(args), free(axes);
    if (!rc) rc = ax_vmap_place_first(cx, nout, outs, bdims, v->size);
    for (int i = 0; i < nin; i++) ct_in[i] = !rc && i < nout ? ax_array_retain(outs[i]) : NULL;
    ax_flat_release_arrays(outs, nout);
    return rc;
}

/* custom_vjp vmapped: outputs from fwd per example; the tangent of output k a custom_linear
 * of the arguments' tangents whose transpose runs bwd per example on the batched residuals. */
static int vmapped_vjp_jvp(ax_ctx *cx, void *data, int64_t size, int k, int nin, ax_array **prim,
                           ax_array **tan, ax_array **out, ax_array **tout) {
    call_data *d = data;
    custom_fn *c = d->obj->obj.payload;
    if (check_closure_tangents(cx, d, tan)) return -1;
    prim += d->nconsts, tan += d->nconsts, nin -= d->nconsts;
    d->shape.nflat = nin;
    vmapped_vjp *v = calloc(1, sizeof *v);
    int *axes = calloc((size_t)nin + 1, sizeof *axes), *bdims = NULL, nall = 0, rc = -1;
    ax_array **all = NULL, **tz = NULL, **ops = NULL;
    int nres = 0;
    ax_callback *cb = calloc(1, sizeof *cb);
    if (!v || !axes || !cb) goto done;
    *v = (vmapped_vjp){.in = d->in, .c = c, .shape = &d->shape, .size = size};
    snprintf(v->name, sizeof v->name, "%s", c->name); /* as errors name it */
    if (layout_init(cx, &v->args, &d->shape, prim, 1)) goto done;
    if (ax_vmap(cx, fwd_example, v, nin, prim, axes, size, &nall, &all, &bdims) ||
        ax_vmap_place_first(cx, nall, all, bdims, size))
        goto done;
    if (k >= v->nout) {
        ax_error(cx, AX_ERR_VALUE, "the forward function of %s has %d outputs", c->name, v->nout);
        goto done;
    }
    v->nres = nall - v->nout;
    tz = tangents_or_zeros(cx, nin, prim, tan);
    ops = calloc((size_t)(v->nres + nin) + 1, sizeof *ops);
    if (!tz || !ops) goto done;
    for (int j = 0; j < v->nres; j++) ops[j] = all[v->nout + j];
    for (int i = 0; i < nin; i++) ops[v->nres + i] = tz[i];
    nres = v->nres;
    *cb = (ax_callback){.refs = 1,
                        .name = v->name,
                        .transpose = vmapped_transpose,
                        .free = vmapped_vjp_free,
                        .data = v};
    v = NULL;
    ax_params prm = {
        .cb = cb, .k = k, .nconsts = nres, .dtype = all[k]->dtype, .ndim = all[k]->ndim};
    memcpy(prm.shape, all[k]->shape, (size_t)all[k]->ndim * sizeof *prm.shape);
    if (!(*tout = ax_bind1(cx, AX_P_CUSTOM_LINEAR, nres + nin, ops, &prm))) goto done;
    *out = ax_array_retain(all[k]);
    rc = 0;
done:
    if (rc && !ax_error_pending(cx)) ax_error_oom(cx);
    if (v) vmapped_vjp_free(v);
    ax_callback_release(cb);
    ax_flat_release_arrays(all, nall);
    ax_flat_release_arrays(tz, nin);
    free(ops);
    free(axes);
    return rc;
}

/* JAX's closure conversion: the body's constants that are tracers (values of an enclosing
 * transformation that the function closes over) become its leading inputs, so that the
 * custom_call passes them as operands and every transformation sees them. Left as constants,
 * they would outlive their trace inside the equation (jit(f) of a function defined in f).
 * Returns the body (a new reference); the tracers (new references) go to *consts. */
static ax_ir *convert_traced_consts(ax_ctx *cx, ax_ir *body, int *nconsts, ax_array ***consts) {
    int n = 0;
    for (int i = 0; i < body->nconsts; i++) n += body->consts[i]->tracer != NULL;
    *nconsts = 0;
    if (!(*consts = calloc((size_t)n + 1, sizeof **consts))) return ax_error_oom(cx);
    if (!n) return ax_ir_retain(body);
    ax_ir_builder *b = ax_ir_builder_new();
    ax_ir_atom *map = calloc((size_t)body->nvars + 1, sizeof *map);
    ax_ir_atom *outs = calloc((size_t)body->nout + 1, sizeof *outs);
    ax_ir *res = NULL;
    int rc = b && map && outs ? 0 : -1;
    for (int i = 0; i < body->nconsts && !rc; i++) {
        if (!body->consts[i]->tracer) continue;
        int v = ax_ir_add_input(b, &body->types[body->constvars[i]]);
        map[body->constvars[i]] = (ax_ir_atom){.var = v};
        (*consts)[(*nconsts)++] = ax_array_retain(body->consts[i]);
        rc = v < 0;
    }
    for (int i = 0; i < body->nin && !rc; i++) {
        int v = ax_ir_add_input(b, &body->types[body->invars[i]]);
        map[body->invars[i]] = (ax_ir_atom){.var = v};
        rc = v < 0;
    }
    for (int i = 0; i < body->nconsts && !rc; i++) {
        if (body->consts[i]->tracer) continue;
        int v = ax_ir_add_const(b, body->consts[i]);
        map[body->constvars[i]] = (ax_ir_atom){.var = v};
        rc = v < 0;
    }
    ax_ir_atom *in = NULL; /* the operands of one equation, renamed */
    int in_cap = 0;
    for (int k = 0; k < body->neqns && !rc; k++) {
        const ax_ir_eqn *e = &body->eqns[k];
        ax_aval types[8]; /* a primitive has at most 4 outputs */
        int vars[8];
        if (e->nout > 8) {
            rc = -1;
            break;
        }
        if (e->nin > in_cap) {
            ax_ir_atom *grown = realloc(in, (size_t)e->nin * sizeof *grown);
            if (!grown) {
                rc = -1;
                break;
            }
            in = grown;
            in_cap = e->nin;
        }
        for (int i = 0; i < e->nin; i++) in[i] = e->in[i].var >= 0 ? map[e->in[i].var] : e->in[i];
        for (int i = 0; i < e->nout; i++) types[i] = body->types[e->out[i]];
        rc = ax_ir_add_eqn(b, e->prim, &e->params, e->nin, in, e->nout, types, vars, e->nsub,
                           e->sub);
        for (int i = 0; !rc && i < e->nout; i++) map[e->out[i]] = (ax_ir_atom){.var = vars[i]};
    }
    for (int j = 0; j < body->nout && !rc; j++)
        outs[j] = body->outs[j].var >= 0 ? map[body->outs[j].var] : body->outs[j];
    if (!rc) {
        res = ax_ir_builder_finish(b, body->nout, outs);
        b = NULL;
    }
    ax_ir_builder_free(b);
    free(in);
    free(map);
    free(outs);
    if (!res) {
        ax_flat_release_arrays(*consts, *nconsts);
        *consts = NULL;
        *nconsts = 0;
        if (!ax_error_pending(cx)) ax_error_oom(cx);
    }
    return res;
}

/* The callback of the custom_call equations of one call: body traced, rule attached. */
static ax_callback *call_callback(ax_interp *in, ax_value *self, custom_fn *c,
                                  const flat_call *fc) {
    call_data *d = calloc(1, sizeof *d);
    ax_callback *cb = calloc(1, sizeof *cb);
    if (!d || !cb) {
        free(d), free(cb);
        return ax_error_oom(in->cx);
    }
    *d = (call_data){.in = in, .obj = ax_value_retain(self)};
    if (ax_flat_call_copy_layout(&d->shape, fc)) {
        call_data_free(d);
        free(cb);
        return NULL;
    }
    snprintf(d->name, sizeof d->name, "%s", c->name);
    *cb = (ax_callback){.refs = 1,
                        .name = d->name,
                        .jvp = call_jvp,
                        .free = call_data_free,
                        .data = d,
                        .batched_jvp = c->is_vjp ? vmapped_vjp_jvp : NULL};
    return cb;
}

/* Under jit, vmap or make_jaxpr: one custom_call equation per output, so a later
 * differentiation (grad(jit(f)), grad(vmap(f))) still finds the rule. Its operands: the
 * traced values the function closes over, then the flattened arguments. */
static ax_value *bind_custom_call(ax_interp *in, ax_value *self, custom_fn *c, flat_call *fc) {
    ax_ctx *cx = in->cx;
    ax_aval *types = calloc((size_t)fc->nflat + 1, sizeof *types);
    if (!types) return ax_error_oom(cx);
    ax_callback *cb = call_callback(in, self, c, fc);
    ax_array **consts = NULL, **args = NULL, **outs = NULL;
    ax_value *result = NULL;
    int nout = 0, nconsts = 0, rc = -1;
    if (!cb) {
        free(types);
        return NULL;
    }
    for (int i = 0; i < fc->nflat; i++) ax_aval_of(&types[i], fc->flat[i]);
    ax_ir *traced = ax_trace_to_ir(cx, ax_flat_call_fn, fc, fc->nflat, types, &nout);
    cb->body = traced ? convert_traced_consts(cx, traced, &nconsts, &consts) : NULL;
    ax_ir_release(traced);
    if (!cb->body) goto done;
    ((call_data *)cb->data)->nconsts = nconsts;
    if (fc->nmain != nout) {
        ax_error(cx, AX_ERR_TYPE, "%s must return arrays (or pytrees of arrays)", c->name);
        goto done;
    }
    args = calloc((size_t)(nconsts + fc->nflat) + 1, sizeof *args);
    outs = calloc((size_t)nout + 1, sizeof *outs);
    if (!args || !outs) {
        ax_error_oom(cx);
        goto done;
    }
    memcpy(args, consts, (size_t)nconsts * sizeof *args);
    memcpy(args + nconsts, fc->flat, (size_t)fc->nflat * sizeof *args);
    for (int j = 0; j < nout; j++) {
        ax_params q = {.cb = cb, .k = j};
        if (!(outs[j] = ax_bind1(cx, AX_P_CUSTOM_CALL, nconsts + fc->nflat, args, &q))) goto done;
    }
    rc = 0;
done:
    if (!rc) {
        ax_value **vals = ax_flat_wrap_arrays(cx, nout, outs);
        if (vals) {
            result = ax_tree_unflatten(in, fc->out_def, vals, nout);
            ax_values_release(vals, nout);
        }
    }
    if (outs) ax_flat_release_arrays(outs, nout);
    ax_flat_release_arrays(consts, nconsts);
    free(args);
    ax_callback_release(cb);
    free(types);
    return result;
}

/* ---------------------------------------------------------------- the objects */

static const ax_object_type custom_type;
static ax_value *custom_call(ax_interp *in, ax_value *self, const ax_args *a);

/* ---- nondiff_argnums: those arguments are fixed for the call, and the rules get them first.
 * The call becomes a call of a custom function of the other arguments whose function and rules
 * are these bound forms (data: a tuple (fn, values of the fixed arguments, their positions)). */

/* fn with the fixed arguments put back at their positions among the given ones. */
static ax_value *merged_call(ax_interp *in, ax_value *self, const ax_args *a) {
    ax_value *d = self->builtin->data, *vals = d->items[1], *at = d->items[2];
    int n = a->n + vals->n;
    ax_value **all = calloc((size_t)n + 1, sizeof *all);
    if (!all) return ax_error_oom(in->cx);
    for (int k = 0; k < vals->n; k++) {
        int64_t pos;
        ax_value_to_int(in, at->items[k], "a position", &pos);
        all[pos] = vals->items[k];
    }
    for (int i = 0, next = 0; i < n; i++)
        if (!all[i]) all[i] = a->pos[next++];
    ax_args call = {.n = n, .pos = all, .nkw = a->nkw, .kwnames = a->kwnames, .kwvals = a->kwvals};
    ax_value *r = ax_call(in, d->items[0], &call);
    free(all);
    return r;
}

/* rule(*fixed, *args): how custom_jvp's rule and custom_vjp's bwd get the fixed arguments. */
static ax_value *prefixed_call(ax_interp *in, ax_value *self, const ax_args *a) {
    ax_value *d = self->builtin->data, *vals = d->items[1];
    int n = a->n + vals->n;
    ax_value **all = calloc((size_t)n + 1, sizeof *all);
    if (!all) return ax_error_oom(in->cx);
    memcpy(all, vals->items, (size_t)vals->n * sizeof *all);
    memcpy(all + vals->n, a->pos, (size_t)a->n * sizeof *all);
    ax_args call = {.n = n, .pos = all};
    ax_value *r = ax_call(in, d->items[0], &call);
    free(all);
    return r;
}

/* A builtin binding fn (NULL stays NULL) to the fixed arguments; *failed on error. */
static ax_value *bound(ax_interp *in, ax_value *fn, ax_value *fixed, ax_builtin_fn call,
                       bool *failed) {
    if (!fn || *failed) return NULL;
    ax_value *items[3] = {ax_value_retain(fn), ax_value_retain(fixed->items[0]),
                          ax_value_retain(fixed->items[1])};
    ax_value *data = ax_value_tuple(3, items);
    ax_value *b =
        data ? ax_value_builtin("bound", "a function with fixed arguments", call, data) : NULL;
    if (!b) {
        *failed = true;
        ax_error_oom(in->cx);
    }
    return b;
}

static ax_value *call_nondiff(ax_interp *in, ax_value *self, const ax_args *a) {
    custom_fn *c = self->obj.payload;
    ax_value **vals = calloc((size_t)c->nnondiff + 1, sizeof *vals);
    ax_value **at = calloc((size_t)c->nnondiff + 1, sizeof *at);
    ax_value **rest = calloc((size_t)a->n + 1, sizeof *rest);
    ax_value *fixed = NULL, *obj = NULL, *result = NULL;
    int nrest = 0, nvals = 0;
    if (!vals || !at || !rest) {
        ax_error_oom(in->cx);
        goto done;
    }
    for (int i = 0; i < a->n; i++) {
        bool is_fixed = false;
        for (int k = 0; k < c->nnondiff; k++) is_fixed |= c->nondiff[k] == i;
        if (!is_fixed) {
            rest[nrest++] = a->pos[i];
            continue;
        }
        if (!(at[nvals] = ax_value_int(in, i))) goto done;
        vals[nvals++] = ax_value_retain(a->pos[i]);
    }
    if (nvals != c->nnondiff) {
        ax_error(in->cx, AX_ERR_TYPE,
                 "%s: nondiff_argnums names argument %d but the call gives %d positional "
                 "arguments",
                 c->name, c->nondiff[c->nnondiff - 1], a->n);
        goto done;
    }
    ax_value *pair[2] = {ax_value_tuple(nvals, vals), ax_value_tuple(nvals, at)};
    free(vals), free(at); /* the tuples took the references */
    vals = at = NULL;
    if (!pair[0] || !pair[1]) {
        if (pair[0]) ax_value_release(pair[0]);
        if (pair[1]) ax_value_release(pair[1]);
        ax_error_oom(in->cx);
        goto done;
    }
    if (!(fixed = ax_value_tuple(2, pair))) {
        ax_error_oom(in->cx);
        goto done;
    }
    custom_fn *b = calloc(1, sizeof *b);
    if (!b) {
        ax_error_oom(in->cx);
        goto done;
    }
    bool failed = false;
    *b = (custom_fn){.is_vjp = c->is_vjp,
                     .vjp_residual = c->vjp_residual,
                     .fn = bound(in, c->fn, fixed, merged_call, &failed),
                     .jvp = bound(in, c->jvp, fixed, prefixed_call, &failed),
                     .fwd = bound(in, c->fwd, fixed, merged_call, &failed),
                     .bwd = bound(in, c->bwd, fixed, prefixed_call, &failed)};
    memcpy(b->name, c->name, sizeof b->name);
    if (!(obj = ax_value_object(&custom_type, b)) || failed) goto done;
    ax_args call = {.n = nrest, .pos = rest};
    result = custom_call(in, obj, &call);
done:
    if (vals) ax_values_release(vals, c->nnondiff); /* entries past the filled ones are NULL */
    if (at) ax_values_release(at, c->nnondiff);
    if (fixed) ax_value_release(fixed);
    if (obj) ax_value_release(obj);
    free(rest);
    return result;
}

static ax_value *custom_call(ax_interp *in, ax_value *self, const ax_args *a) {
    custom_fn *c = self->obj.payload;
    if (c->nnondiff && !a->nkw) return call_nondiff(in, self, a);
    if ((!c->is_vjp && !c->jvp) || (c->is_vjp && !c->fwd)) return ax_call(in, c->fn, a);
    flat_call fc;
    memset(&fc, 0, sizeof fc);
    ax_value *result = NULL;
    ax_array **prim = NULL, **tan = NULL;
    if (a->nkw) {
        ax_error(in->cx, AX_ERR_TYPE,
                 "%s: pass arguments positionally to a function with a "
                 "custom derivative",
                 c->name);
        return NULL;
    }
    if (ax_flat_call_init(&fc, in, c->name, c->fn, a, 0, NULL, false)) goto done;
    prim = calloc((size_t)fc.nflat + 1, sizeof *prim);
    tan = calloc((size_t)fc.nflat + 1, sizeof *tan);
    if (!prim || !tan) {
        ax_error_oom(in->cx);
        goto done;
    }
    ax_trace *t = ax_jvp_trace_of(in->cx, fc.nflat, fc.flat, prim, tan), *any = NULL;
    if (ax_error_pending(in->cx)) goto done;
    if (t) { /* differentiation is innermost: the rule, now */
        ax_array **outs = NULL, **touts = NULL;
        ax_value *def = NULL;
        int nout = 0;
        if (!run_rule(in, c, &fc, prim, tan, &nout, &outs, &touts, &def))
            result = wrap_outputs_take(in, t, def, nout, outs, touts);
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
    ax_cycles_note(obj); /* a rule defined in a function may close over obj */
    return ax_value_retain(a->pos[0]);
}

/* a + b leaf by leaf, for two trees of arrays of one structure (new reference or NULL). */
static ax_value *tree_add(ax_interp *in, ax_value *a, ax_value *b) {
    ax_array **x = NULL, **y = NULL;
    ax_value *dx = NULL, *dy = NULL, *r = NULL, **sums = NULL;
    int nx = 0, ny = 0, made = 0;
    if (flatten_arrays(in, a, "a defjvps rule", &x, &nx, &dx) ||
        flatten_arrays(in, b, "a defjvps rule", &y, &ny, &dy))
        goto done;
    if (!ax_treedef_equal(dx, dy)) {
        ax_error(in->cx, AX_ERR_VALUE, "defjvps: the rules' tangents differ in structure");
        goto done;
    }
    if (!(sums = calloc((size_t)nx + 1, sizeof *sums))) {
        ax_error_oom(in->cx);
        goto done;
    }
    for (; made < nx; made++) {
        ax_array *s = ax_np_binop(in->cx, AX_OP_ADD, x[made], y[made]);
        if (!s || !(sums[made] = ax_value_array(s))) break;
    }
    if (made == nx) r = ax_tree_unflatten(in, dx, sums, nx);
done:
    if (sums) ax_values_release(sums, made);
    ax_flat_release_arrays(x, nx);
    ax_flat_release_arrays(y, ny);
    if (dx) ax_value_release(dx);
    if (dy) ax_value_release(dy);
    return r;
}

/* The rule f.defjvps(*jvps) makes: the output's tangent is the sum over the arguments of
 * jvp_i(tangent_i, out, *primals) (None: argument i contributes nothing). data: (fn, jvps). */
static ax_value *jvps_rule(ax_interp *in, ax_value *self, const ax_args *a) {
    ax_value *fn = self->builtin->data->items[0], *jvps = self->builtin->data->items[1];
    ax_value *primals = a->n == 2 ? a->pos[0] : NULL, *tangents = a->n == 2 ? a->pos[1] : NULL;
    if (!primals || primals->kind != AX_V_TUPLE || tangents->kind != AX_V_TUPLE ||
        tangents->n != primals->n || jvps->n != primals->n)
        return ax_error(in->cx, AX_ERR_TYPE,
                        "defjvps: give one rule (or None) per argument of the function");
    ax_args call = {.n = primals->n, .pos = primals->items};
    ax_value *out = ax_call(in, fn, &call), *sum = NULL;
    ax_value **args = out ? calloc((size_t)primals->n + 2, sizeof *args) : NULL;
    if (out && !args) ax_error_oom(in->cx);
    for (int i = 0; args && i < jvps->n; i++) {
        if (jvps->items[i]->kind == AX_V_NONE) continue;
        args[0] = tangents->items[i];
        args[1] = out;
        memcpy(args + 2, primals->items, (size_t)primals->n * sizeof *args);
        ax_args rc = {.n = primals->n + 2, .pos = args};
        ax_value *term = ax_call(in, jvps->items[i], &rc);
        ax_value *next = !term ? NULL : !sum ? ax_value_retain(term) : tree_add(in, sum, term);
        if (term) ax_value_release(term);
        if (sum) ax_value_release(sum);
        sum = next;
        if (!sum) break;
    }
    free(args);
    if (out && !sum && !ax_error_pending(in->cx)) { /* every rule None: a zero tangent */
        ax_value *zeros = ax_interp_lookup(in, "zeros_like");
        sum = zeros ? ax_call1(in, zeros, out) : NULL;
        if (!zeros) ax_error(in->cx, AX_ERR_RUNTIME, "defjvps: zeros_like is not defined");
    }
    if (!sum) {
        if (out) ax_value_release(out);
        return NULL;
    }
    return ax_flat_pair_take(in->cx, out, sum);
}

/* f.defjvps(*jvps): the rule as one term per argument. */
static ax_value *define_jvps(ax_interp *in, ax_value *self, const ax_args *a) {
    custom_fn *c = self->builtin->data->obj.payload;
    if (c->nnondiff) return ax_error(in->cx, AX_ERR_TYPE, "can't use defjvps with nondiff_argnums");
    if (a->nkw) return ax_error(in->cx, AX_ERR_TYPE, "defjvps takes the rules positionally");
    ax_value **jv = calloc((size_t)a->n + 1, sizeof *jv);
    if (!jv) return ax_error_oom(in->cx);
    for (int i = 0; i < a->n; i++) jv[i] = ax_value_retain(a->pos[i]);
    ax_value *jvps = ax_value_tuple(a->n, jv);
    free(jv);
    ax_value *items[2] = {ax_value_retain(c->fn), jvps};
    ax_value *data = jvps ? ax_value_tuple(2, items) : NULL;
    if (!jvps) ax_value_release(items[0]);
    ax_value *rule = data ? ax_value_builtin("defjvps rule", "f's JVP rule, one term per argument",
                                             jvps_rule, data)
                          : NULL;
    if (!rule) return ax_error_oom(in->cx);
    if (c->jvp) ax_value_release(c->jvp);
    c->jvp = rule;
    ax_cycles_note(self->builtin->data);
    return ax_none();
}

static ax_value *custom_getattr(ax_interp *in, ax_value *self, const char *name) {
    custom_fn *c = self->obj.payload;
    if (!c->is_vjp && strcmp(name, "defjvps") == 0) {
        ax_value *m = ax_value_builtin(name, "f.defjvps(*jvps): f's rule, one term per argument",
                                       define_jvps, ax_value_retain(self));
        return m ? m : ax_error_oom(in->cx);
    }
    if (strcmp(name, "__name__") == 0) {
        ax_value *v = ax_value_str(c->name);
        return v ? v : ax_error_oom(in->cx);
    }
    if (strcmp(name, c->is_vjp ? "defvjp" : "defjvp")) return NULL;
    return ax_value_or_oom(
        in, ax_value_builtin(name,
                             c->is_vjp ? "f.defvjp(fwd, bwd): the reverse-mode rule of f"
                                       : "f.defjvp(rule): the forward-mode rule of f",
                             define_rule, ax_value_retain(self)));
}

static const ax_object_type custom_type = {.name = "custom derivative function",
                                           .free = custom_free,
                                           .format = custom_format,
                                           .getattr = custom_getattr,
                                           .call = custom_call,
                                           .children = custom_children,
                                           .forget = custom_forget};

/* custom_jvp(f, nondiff_argnums=()) / custom_vjp(f, nondiff_argnums=()); as a decorator with
 * only nondiff_argnums, the function comes next (@partial(custom_jvp, nondiff_argnums=(0,))
 * also works). */
static ax_value *make_custom(ax_interp *in, const ax_args *a, bool is_vjp);

static ax_value *custom_decorator_call(ax_interp *in, ax_value *self, const ax_args *a) {
    if (a->n != 1 || a->nkw)
        return ax_error(in->cx, AX_ERR_TYPE, "this decorator takes the function");
    ax_value *d = self->builtin->data; /* (is_vjp, nondiff_argnums) */
    bool is_vjp;
    if (!ax_value_truthy(in, d->items[0], &is_vjp)) return NULL;
    const char *kw[1] = {"nondiff_argnums"};
    ax_args full = {.n = 1, .pos = a->pos, .nkw = 1, .kwnames = kw, .kwvals = &d->items[1]};
    return make_custom(in, &full, is_vjp);
}

static ax_value *make_custom(ax_interp *in, const ax_args *a, bool is_vjp) {
    const char *what = is_vjp ? "custom_vjp" : "custom_jvp";
    if (!ax_args_check(in, a, what, 2, (const char *[]){"fun", "nondiff_argnums", NULL}))
        return NULL;
    ax_value *fn = ax_arg(a, 0, "fun"), *nd = ax_arg(a, 1, "nondiff_argnums");
    if (!fn && nd) {
        ax_value *items[2] = {ax_value_bool(in, is_vjp), ax_value_retain(nd)};
        ax_value *data = items[0] ? ax_value_tuple(2, items) : NULL;
        if (!items[0]) ax_value_release(items[1]);
        ax_value *dec =
            data ? ax_value_builtin(what, "a decorator", custom_decorator_call, data) : NULL;
        return dec ? dec : ax_error_oom(in->cx);
    }
    if (!fn) return ax_error(in->cx, AX_ERR_TYPE, "%s(f) takes one function", what);
    custom_fn *c = calloc(1, sizeof *c);
    if (!c) return ax_error_oom(in->cx);
    c->is_vjp = is_vjp;
    c->fn = ax_value_retain(fn);
    snprintf(c->name, sizeof c->name, "%s",
             fn->kind == AX_V_FUNC && fn->fn->name ? fn->fn->name : what);
    bool as_tuple;
    if (nd && nd->kind != AX_V_NONE &&
        ax_read_argnums(in, what, nd, &c->nondiff, &c->nnondiff, &as_tuple)) {
        custom_free(c);
        return NULL;
    }
    return ax_value_or_oom(in, ax_value_object(&custom_type, c)); /* frees c on failure */
}

static ax_value *b_custom_jvp(ax_interp *in, ax_value *self, const ax_args *a) {
    (void)self;
    return make_custom(in, a, false);
}

static ax_value *b_custom_vjp(ax_interp *in, ax_value *self, const ax_args *a) {
    (void)self;
    return make_custom(in, a, true);
}

/* fun(*args)[0]: custom_gradient's function without its vjp. */
static ax_value *value_of_call(ax_interp *in, ax_value *self, const ax_args *a) {
    ax_value *r = ax_call(in, self->builtin->data, a);
    if (!r) return NULL;
    if (r->kind != AX_V_TUPLE || r->n != 2) {
        ax_value_release(r);
        return ax_error(in->cx, AX_ERR_TYPE,
                        "a custom_gradient function must return a pair (value, vjp)");
    }
    ax_value *v = ax_value_retain(r->items[0]);
    ax_value_release(r);
    return v;
}

/* custom_gradient(fun): fun(*args) returns (value, vjp) with vjp(g) the tuple of cotangents,
 * one per argument. A custom_vjp whose forward function is fun and whose residual is vjp. */
static ax_value *b_custom_gradient(ax_interp *in, ax_value *self, const ax_args *a) {
    (void)self;
    if (!ax_args_check(in, a, "custom_gradient", 1, (const char *[]){"fun", NULL})) return NULL;
    ax_value *fn = ax_arg(a, 0, "fun");
    if (!fn) return ax_error(in->cx, AX_ERR_TYPE, "custom_gradient(fun) takes one function");
    custom_fn *c = calloc(1, sizeof *c);
    if (!c) return ax_error_oom(in->cx);
    *c = (custom_fn){.is_vjp = true, .vjp_residual = true, .fwd = ax_value_retain(fn)};
    snprintf(c->name, sizeof c->name, "%s",
             fn->kind == AX_V_FUNC && fn->fn->name ? fn->fn->name : "custom_gradient");
    c->fn = ax_value_builtin(c->name, "the value of a custom_gradient function", value_of_call,
                             ax_value_retain(fn));
    if (!c->fn) {
        custom_free(c);
        return ax_error_oom(in->cx);
    }
    return ax_value_or_oom(in, ax_value_object(&custom_type, c)); /* frees c on failure */
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
    ax_value *g = ax_value_builtin("custom_gradient",
                                   "custom_gradient(f): f returns (value, vjp), and vjp(g) gives "
                                   "its cotangents",
                                   b_custom_gradient, NULL);
    if (!j || !v || !g) {
        ax_value_release(j);
        ax_value_release(v);
        ax_value_release(g);
        return -1;
    }
    ax_interp_define_builtin_take(in, "custom_jvp", j);
    ax_interp_define_builtin_take(in, "custom_vjp", v);
    ax_interp_define_builtin_take(in, "custom_gradient", g);
    return 0;
}

/* custom_jvp and custom_vjp (see custom_rules.h).
 *
 * A call looks at its arguments: when the innermost transformation among them is a JVP trace
 * (grad, jvp, vjp, and so on), the user's rule runs on their primal and tangent parts. Otherwise
 * (no transformation, or vmap/jit innermost) the function runs as written, so the rule applies
 * wherever differentiation is the innermost transformation: grad(f), jit(grad(f)),
 * vmap(grad(f)), grad(grad(f)). (Under grad(jit(f)) or grad(vmap(f)) f's own operations are
 * differentiated instead.)
 * custom_vjp's tangent map is one custom_linear equation per output, whose transpose calls the
 * user's backward function. */
#include "custom_rules.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../compiler/ad.h"
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

static ax_value *call_jvp_rule(ax_interp *in, custom_fn *c, flat_call *fc, ax_trace *t,
                               ax_array **prim, ax_array **tan) {
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
    if (!r) return NULL;
    if (r->kind != AX_V_TUPLE || r->n != 2) {
        ax_value_release(r);
        return ax_error(in->cx, AX_ERR_TYPE,
                        "the custom_jvp rule of %s must return a pair "
                        "(primal_out, tangent_out)",
                        c->name);
    }
    ax_array **outs = NULL, **touts = NULL;
    ax_value *def = NULL, *tdef = NULL, *result = NULL;
    int n = 0, nt = 0;
    if (!flatten_arrays(in, r->items[0], "a custom_jvp rule", &outs, &n, &def) &&
        !flatten_arrays(in, r->items[1], "a custom_jvp rule", &touts, &nt, &tdef)) {
        if (!ax_treedef_equal(def, tdef)) {
            ax_error(in->cx, AX_ERR_VALUE,
                     "the custom_jvp rule of %s returned a tangent whose "
                     "structure differs from the output's",
                     c->name);
        } else {
            result = wrap_outputs(in, t, def, n, outs, touts);
            outs = touts = NULL;
        }
    }
    ax_flat_release_arrays(outs, n);
    ax_flat_release_arrays(touts, nt);
    if (def) ax_value_release(def);
    if (tdef) ax_value_release(tdef);
    ax_value_release(r);
    return result;
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

static ax_value *call_vjp_rule(ax_interp *in, custom_fn *c, flat_call *fc, ax_trace *t,
                               ax_array **prim, ax_array **tan) {
    ax_value *p = args_tuple(fc, prim);
    if (!p) return NULL;
    ax_args a = {.n = p->n, .pos = p->items};
    ax_value *r = ax_call(in, c->fwd, &a);
    ax_value_release(p);
    if (!r) return NULL;
    if (r->kind != AX_V_TUPLE || r->n != 2) {
        ax_value_release(r);
        return ax_error(in->cx, AX_ERR_TYPE,
                        "the forward function of %s must return a pair "
                        "(output, residuals)",
                        c->name);
    }
    ax_array **outs = NULL, **tz = NULL, **touts = NULL;
    ax_value *def = NULL, *result = NULL;
    int n = 0;
    vjp_data *d = NULL;
    ax_callback *cb = NULL;
    if (flatten_arrays(in, r->items[0], "a custom_vjp forward function", &outs, &n, &def))
        goto done;
    tz = tangents_or_zeros(in->cx, fc->nflat, prim, tan);
    d = calloc(1, sizeof *d);
    cb = calloc(1, sizeof *cb);
    touts = calloc((size_t)n + 1, sizeof *touts);
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
                    .nout = n,
                    .out_types = calloc((size_t)n + 1, sizeof(ax_aval))};
    snprintf(d->name, sizeof d->name, "%s", c->name);
    for (int j = 0; d->out_types && j < n; j++) ax_aval_of(&d->out_types[j], outs[j]);
    *cb = (ax_callback){
        .refs = 1, .name = d->name, .transpose = vjp_transpose, .free = vjp_data_free, .data = d};
    for (int j = 0; j < n; j++) {
        ax_params prm = {.cb = cb, .k = j, .dtype = outs[j]->dtype, .ndim = outs[j]->ndim};
        memcpy(prm.shape, outs[j]->shape, (size_t)outs[j]->ndim * sizeof *prm.shape);
        if (!(touts[j] = ax_bind1(in->cx, AX_P_CUSTOM_LINEAR, fc->nflat, tz, &prm))) goto done;
    }
    result = wrap_outputs(in, t, def, n, outs, touts);
    outs = touts = NULL;
done:
    ax_callback_release(cb);
    ax_flat_release_arrays(outs, n);
    ax_flat_release_arrays(touts, n);
    ax_flat_release_arrays(tz, fc->nflat);
    if (def) ax_value_release(def);
    ax_value_release(r);
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
    ax_trace *t = ax_jvp_trace_of(in->cx, fc.nflat, fc.flat, prim, tan);
    if (ax_error_pending(in->cx)) goto done;
    if (!t)
        result = ax_call(in, c->fn, a);
    else
        result = c->is_vjp ? call_vjp_rule(in, c, &fc, t, prim, tan)
                           : call_jvp_rule(in, c, &fc, t, prim, tan);
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

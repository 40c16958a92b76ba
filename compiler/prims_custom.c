/* User-defined rules met by transformations: custom_call (a custom_jvp / custom_vjp function
 * under jit, vmap or make_jaxpr) and custom_linear (a custom_vjp function's tangent map, whose
 * transpose is the user's backward function). Their rows and every rule about them. */
#include <stdio.h>
#include <stdlib.h>

#include "prim_rows.h"

/* ---------------------------------------------------------------- eager kernels */

/* A custom_call outside differentiation: the function's body, output k. */
AX_EAGER(custom_call) {
    const ax_ir *body = p->cb->body;
    ax_array **outs = calloc((size_t)body->nout + 1, sizeof *outs);
    if (!outs) return ax_error_oom(cx), -1;
    int rc = ax_ir_eval(cx, body, in, outs);
    (void)nin;
    out[0] = NULL;
    for (int j = 0; j < body->nout; j++) {
        if (!rc && j == p->k)
            out[0] = outs[j];
        else
            ax_array_release(outs[j]);
    }
    free(outs);
    return rc;
}

/* custom_vjp functions have a backward rule only: their tangents cannot be computed forward. */
AX_EAGER(custom_linear) {
    (void)nin, (void)in, (void)out;
    ax_error(cx, AX_ERR_TYPE,
             "%s is a custom_vjp function: it can be differentiated in reverse mode (grad, vjp, "
             "jacrev) but not in forward mode (jvp, jacfwd, linearize); use custom_jvp for that",
             p->cb ? p->cb->name : "this function");
    return -1;
}

/* ---------------------------------------------------------------- custom_call batched:
 * the function vmapped, its rule kept */

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

static int custom_call_batch(ax_ctx *cx, ax_prim prim, const ax_params *p, int nin, ax_array **in,
                             const int *bdim, int64_t size, ax_array **out, int *out_bdim) {
    (void)prim;
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
        if (!(x[i] = ax_batch_first(&s, in[i], bdim[i], size))) goto done;
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
    return ax_batch_done(&s, r, out, out_bdim);
}

/* ---------------------------------------------------------------- rows */

static void format_callback(ax_strbuf *s, const ax_params *p) {
    ax_strbuf_appendf(s, "[fn=%s output=%lld]", p->cb ? p->cb->name : "?", (long long)p->k);
}

/* The tangent map applied to the tangents, the residuals (the leading nconsts operands) as
 * they are. */
static int custom_linear_jvp(ax_ctx *cx, ax_prim prim, const ax_params *p, int nin, ax_array **in,
                             ax_array **tin, ax_array **out, ax_array **tout) {
    return ax_jvp_linear_from(cx, prim, p, nin, in, tin, out, tout, p->nconsts);
}

/* The user's backward function on the residuals and the cotangent. */
static int custom_linear_cotangent(ax_scope *s, const ax_params *p, int nin, ax_array **in,
                                   const bool *lin, const ax_aval *ty, ax_array *ct, ax_array **r) {
    (void)lin, (void)ty;
    int nres = p->nconsts;
    if (p->cb->transpose(s->cx, p->cb->data, (int)p->k, ct, nres, in, nin - nres, r + nres))
        return -1;
    for (int i = nres; i < nin; i++) ax_scope_own(s, r[i]);
    return 0;
}

/* Batched tangents of a custom_vjp function are forward mode (jacfwd): the same error as when
 * its tangent map is applied to one tangent (its eager kernel). */
static int custom_linear_batch(ax_ctx *cx, ax_prim prim, const ax_params *p, int nin, ax_array **in,
                               const int *bdim, int64_t size, ax_array **out, int *out_bdim) {
    (void)prim, (void)bdim, (void)size;
    *out_bdim = -1;
    return eager_custom_linear(cx, nin, in, p, out);
}

/* Lives only in the linear programs of reverse mode, with a user's callback in its
 * parameters: tests/unit/test_jit.c (test_custom_linear) and tests/lang/custom_rules*.ax. */
const ax_prim_info ax_custom_linear_info = {
    .name = "custom_linear",
    .nin = -1,
    .nout = 1,
    .flags = LIN,
    .shape = ax_shape_custom_linear,
    .eager = eager_custom_linear,
    .jvp = custom_linear_jvp,
    .transpose = ax_transpose_linear,
    .cotangent = custom_linear_cotangent,
    .batch = custom_linear_batch,
    .format_params = format_callback,
    .lower = AX_LOWER_EAGER,
    .tested_by = "tests/unit/test_jit.c (test_custom_linear), tests/lang/custom_rules*.ax",
};

/* The user's rule, not the body's derivative. */
static int custom_call_jvp(ax_ctx *cx, ax_prim prim, const ax_params *p, int nin, ax_array **in,
                           ax_array **tin, ax_array **out, ax_array **tout) {
    (void)prim;
    return p->cb->jvp(cx, p->cb->data, (int)p->k, nin, in, tin, out, tout);
}

const ax_prim_info ax_custom_call_info = {
    .name = "custom_call",
    .nin = -1,
    .nout = 1,
    .flags = 0,
    .shape = ax_shape_custom_call,
    .eager = eager_custom_call,
    .jvp = custom_call_jvp,
    .batch = custom_call_batch,
    .format_params = format_callback,
    .lower = AX_LOWER_EAGER,
    .tested_by = "tests/unit/test_jit.c (custom_call cases), tests/lang/custom_rules*.ax",
};

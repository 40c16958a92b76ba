/* The transformations as builtins (see transforms.h). */
#include "transforms.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../compiler/ad.h"
#include "../compiler/call.h"
#include "../compiler/passes.h"
#include "../compiler/lax.h"
#include "../compiler/vmap.h"
#include "../runtime/creation.h"
#include "../runtime/elementwise.h"
#include "../runtime/shape_ops.h"
#include "eval_shape.h"
#include "flat_call.h"
#include "jit_builtin.h"
#include "np_lib.h"
#include "pytree.h"

/* ---------------------------------------------------------------- argnums */

int ax_read_argnums(ax_interp *in, const char *what, ax_value *v, int **out, int *n,
                    bool *as_tuple) {
    bool seq = v && (v->kind == AX_V_TUPLE || v->kind == AX_V_LIST);
    *as_tuple = seq;
    *n = seq ? v->n : 1;
    *out = NULL;
    if (seq && v->n == 0)
        return ax_error(in->cx, AX_ERR_VALUE, "%s: argnums must name at least one argument", what),
               -1;
    if (!(*out = malloc((size_t)*n * sizeof **out))) return ax_error_oom(in->cx), -1;
    for (int i = 0; i < *n; i++) {
        int64_t k = 0;
        ax_value *item = seq ? v->items[i] : v;
        if (item && item->kind != AX_V_NONE && !ax_value_to_int(in, item, "argnums", &k)) {
            free(*out);
            *out = NULL;
            return -1;
        }
        /* an argnum beyond the int range names no argument, as one beyond the call's */
        (*out)[i] = k > INT_MAX ? INT_MAX : k < -INT_MAX ? -INT_MAX : (int)k;
    }
    return 0;
}

/* Negative argnums count from the end of the call's arguments. An argument named twice is an
 * error: the function would see it once, and one of the two gradients would be silently 0. */
static int normalize_argnums(ax_interp *in, const char *what, int *argnums, int n, int nargs) {
    for (int i = 0; i < n; i++) {
        if (argnums[i] < 0) argnums[i] += nargs;
        for (int j = 0; j < i; j++)
            if (argnums[j] == argnums[i])
                return ax_error(in->cx, AX_ERR_VALUE,
                                "%s: argnums names argument %d twice; each argument can be "
                                "differentiated once",
                                what, argnums[i]),
                       -1;
    }
    return 0;
}

/* ---------------------------------------------------------------- grad */

/* The state a transformed function carries: (fn, argnums, has_aux) as a tuple value. */
static ax_value *transformed(ax_interp *in, const char *name, const char *doc, ax_builtin_fn call,
                             ax_value *fn, ax_value *argnums, ax_value *flag) {
    ax_value **items = malloc(3 * sizeof *items);
    if (!items) return ax_error_oom(in->cx);
    items[0] = ax_value_retain(fn);
    items[1] = argnums ? ax_value_retain(argnums) : ax_none();
    items[2] = flag ? ax_value_retain(flag) : ax_none();
    ax_value *state = ax_value_tuple(3, items);
    free(items);
    if (!state) return ax_error_oom(in->cx);
    return ax_value_or_oom(in, ax_value_builtin(name, doc, call, state)); /* takes the state */
}

static bool flag_of(ax_interp *in, ax_value *v) {
    bool b = false;
    if (v && v->kind != AX_V_NONE && !ax_value_truthy(in, v, &b)) return false;
    return b;
}

static int check_float_inputs(flat_call *fc) {
    for (int i = 0; i < fc->nflat; i++) {
        if (!ax_dtype_is_float(fc->flat[i]->dtype)) {
            char t[96];
            ax_array_type_format(t, sizeof t, fc->flat[i]);
            ax_error(fc->in->cx, AX_ERR_TYPE,
                     "%s requires float inputs, but an input to differentiate is %s (use a float "
                     "array, e.g. x.astype(f32), or leave it out of argnums)",
                     fc->what, t);
            return -1;
        }
    }
    return 0;
}

/* Where each of grad's leaves (fc) sits among the jitted call's flat inputs (jfc): at[i].
 * false when an argument to differentiate is static for jit or named twice. */
static bool leaves_in_call(const flat_call *fc, const flat_call *jfc, int *at) {
    for (int k = 0, g = 0; k < fc->ntraced; k++) {
        for (int m = 0; m < k; m++)
            if (fc->traced[m] == fc->traced[k]) return false;
        int t = 0, off = 0;
        while (t < jfc->ntraced && jfc->traced[t] != fc->traced[k]) off += jfc->counts[t++];
        if (t == jfc->ntraced || jfc->counts[t] != fc->counts[k]) return false;
        for (int j = 0; j < fc->counts[k]; j++) at[g++] = off + j;
    }
    return true;
}

/* The lists grad of a jitted call keeps per call, on the stack for a few inputs. */
enum { SMALL_GRAD = 8 };

typedef struct grad_lists {
    ax_array **ct; /* the cotangents of the body's inputs (body->nin), NULL where not in diff */
    ax_array **g;  /* the gradients of grad's leaves (fc->nflat), borrowed from ct */
    int *at;       /* where each of grad's leaves sits among the body's inputs */
    bool *diff;    /* the body's inputs to differentiate */
    void *heap;
    ax_array *ct_s[SMALL_GRAD], *g_s[SMALL_GRAD];
    int at_s[SMALL_GRAD];
    bool diff_s[SMALL_GRAD];
} grad_lists;

static int grad_lists_init(ax_ctx *cx, grad_lists *l, int nflat, int nin) {
    memset(l, 0, sizeof *l);
    if (nflat <= SMALL_GRAD && nin <= SMALL_GRAD) {
        l->ct = l->ct_s, l->g = l->g_s, l->at = l->at_s, l->diff = l->diff_s;
        return 0;
    }
    size_t n = (size_t)nflat + 1, m = (size_t)nin + 1;
    char *p = l->heap = calloc(1, m * sizeof *l->ct + n * (sizeof *l->g + sizeof *l->at) + m);
    if (!p) return ax_error_oom(cx), -1;
    l->ct = (ax_array **)p, l->g = l->ct + m, l->at = (int *)(l->g + n);
    l->diff = (bool *)(l->at + n);
    return 0;
}

static void grad_lists_free(grad_lists *l, int nin) {
    for (int j = 0; l->ct && j < nin; j++) ax_array_release(l->ct[j]);
    free(l->heap);
}

/* The gradients (a value per argument) from the call's input cotangents; they take the
 * inputs' dtypes, as ax_linear_transpose's do. */
static ax_value *grads_of_call(flat_call *fc, grad_lists *l, bool as_tuple) {
    for (int i = 0; i < fc->nflat; i++) {
        ax_array **c = &l->ct[l->at[i]];
        ax_params p = {.dtype = fc->flat[i]->dtype};
        if ((*c)->dtype != p.dtype) {
            ax_array *converted = ax_bind1(fc->in->cx, AX_P_CONVERT, 1, c, &p);
            if (!converted) return NULL;
            ax_array_release(*c);
            *c = converted;
        }
        l->g[i] = *c;
    }
    return ax_flat_rebuild_per_arg(fc, l->g, as_tuple);
}

/* The function's value: its one output in the structure it returned. */
static ax_value *value_of_call(ax_interp *in, ax_value *out_def, ax_array *out) {
    ax_value *v = ax_value_array(ax_array_retain(out));
    ax_value *value = v ? ax_tree_unflatten(in, out_def, &v, 1) : ax_error_oom(in->cx);
    if (v) ax_value_release(v);
    return value;
}

/* Whether grad applies to the jitted body: one scalar float output. */
static bool scalar_float_body(const ax_ir *body, int nmain) {
    ax_aval t = {0};
    if (nmain != 1 || body->nout != 1) return false;
    ax_ir_out_type(body, 0, &t);
    return t.ndim == 0 && ax_dtype_is_float(t.dtype);
}

/* grad of a jitted function on concrete arguments: its call differentiated in one step
 * (ax_call_grad runs the memoised gradient program), with no trace, tracers or linear IR
 * built per call, and the arguments flattened once: what ax_ad_linearize and
 * ax_linear_transpose make of the one call equation, at the cost of one native program. 1
 * when it does not apply (then the general path runs, and reports any error in the
 * function's output). */
static int grad_of_jitted(flat_call *fc, const ax_args *a, bool with_value, bool as_tuple,
                          ax_value **result) {
    ax_interp *in = fc->in;
    flat_call jfc;
    ax_ir *body = NULL;
    ax_value *out_def = NULL;
    ax_array *out = NULL;
    grad_lists l = {0};
    int nmain = 0, r = ax_jit_concrete_body(in, fc->fn, a, fc, &jfc, &body, &out_def, &nmain);
    if (!r) r = grad_lists_init(in->cx, &l, fc->nflat, body->nin);
    if (!r && (!leaves_in_call(fc, &jfc, l.at) || !scalar_float_body(body, nmain))) r = 1;
    for (int i = 0; !r && i < fc->nflat; i++) l.diff[l.at[i]] = true;
    ax_array **grads = l.g; /* ax_call_grad's, in the order of the inputs */
    if (!r) r = ax_call_grad(in->cx, body, jfc.flat, l.diff, with_value ? &out : NULL, grads);
    for (int j = 0, t = 0; !r && j < body->nin; j++) l.ct[j] = l.diff[j] ? grads[t++] : NULL;
    ax_value *value = !r && with_value ? value_of_call(in, out_def, out) : NULL;
    ax_value *g = r || (with_value && !value) ? NULL : grads_of_call(fc, &l, as_tuple);
    if (!r) *result = with_value ? ax_flat_pair_take(in->cx, value, g) : g;
    if (!r && !*result) r = -1;
    ax_array_release(out);
    if (body) grad_lists_free(&l, body->nin);
    ax_ir_release(body), ax_value_release(out_def);
    ax_flat_call_free(&jfc);
    return r;
}

/* grad and value_and_grad share this: returns (value, aux, grads) pieces. */
static ax_value *grad_call(ax_interp *in, ax_value *self, const ax_args *a, bool with_value) {
    ax_value *state = self->builtin->data;
    ax_value *fn = state->items[0];
    bool has_aux = flag_of(in, state->items[2]);
    int *argnums, nargnums;
    bool as_tuple;
    const char *what = with_value ? "value_and_grad" : "grad";
    if (ax_read_argnums(in, what, state->items[1], &argnums, &nargnums, &as_tuple)) return NULL;
    if (normalize_argnums(in, what, argnums, nargnums, a->n)) {
        free(argnums);
        return NULL;
    }
    flat_call fc;
    ax_value *result = NULL;
    ax_array **outs = NULL, *ct = NULL, **ct_in = NULL;
    ax_linear *lin = NULL;
    int nout = 0;
    if (ax_flat_call_init(&fc, in, what, fn, a, nargnums, argnums, has_aux) ||
        check_float_inputs(&fc))
        goto done;
    if (!has_aux && grad_of_jitted(&fc, a, with_value, as_tuple, &result) <= 0) goto done;
    if (ax_ad_linearize(in->cx, ax_flat_call_fn, &fc, fc.nflat, fc.flat, &nout, &outs, &lin))
        goto done;
    if (fc.nmain != 1 || outs[0]->ndim != 0 || !ax_dtype_is_float(outs[0]->dtype)) {
        char t[96] = "a pytree";
        if (fc.nmain == 1) ax_array_type_format(t, sizeof t, outs[0]);
        ax_error(in->cx, AX_ERR_TYPE,
                 "%s requires a function with a scalar float output, but it returned %s "
                 "(use jacrev or vjp for other outputs)",
                 what, t);
        goto done;
    }
    ax_array **cts = calloc((size_t)nout + 1, sizeof *cts);
    ct_in = calloc((size_t)fc.nflat + 1, sizeof *ct_in);
    if (!cts || !ct_in) {
        free(cts);
        ax_error_oom(in->cx);
        goto done;
    }
    ct = ax_array_scalar(in->cx, outs[0]->dtype, 1.0);
    cts[0] = ct;
    int rc = ct ? ax_linear_transpose(in->cx, lin, cts, ct_in) : -1;
    free(cts);
    if (rc) goto done;
    ax_value *grads = ax_flat_rebuild_per_arg(&fc, ct_in, as_tuple);
    if (!grads) goto done;
    if (has_aux) {
        ax_value *aux = ax_flat_rebuild_aux(&fc, outs);
        if (with_value) {
            ax_value *value = ax_flat_rebuild_main(&fc, outs);
            result = ax_flat_pair_take(in->cx, ax_flat_pair_take(in->cx, value, aux), grads);
        } else {
            result = ax_flat_pair_take(in->cx, grads, aux);
        }
    } else {
        result =
            with_value ? ax_flat_pair_take(in->cx, ax_flat_rebuild_main(&fc, outs), grads) : grads;
    }
done:
    ax_array_release(ct);
    ax_flat_release_arrays(ct_in, fc.nflat);
    ax_flat_release_arrays(outs, nout);
    ax_linear_free(lin);
    ax_flat_call_free(&fc);
    free(argnums);
    return result;
}

static ax_value *grad_fn_call(ax_interp *in, ax_value *self, const ax_args *a) {
    return grad_call(in, self, a, false);
}
static ax_value *value_and_grad_fn_call(ax_interp *in, ax_value *self, const ax_args *a) {
    return grad_call(in, self, a, true);
}

static ax_value *make_transform(ax_interp *in, const ax_args *a, const char *name, const char *doc,
                                ax_builtin_fn call, const char *flag_name) {
    const char *names[] = {"fun", "argnums", flag_name, NULL};
    if (!ax_args_check(in, a, name, 3, names)) return NULL;
    ax_value *fn = ax_arg(a, 0, "fun");
    if (!fn) return ax_error(in->cx, AX_ERR_TYPE, "%s() missing the function to transform", name);
    return transformed(in, name, doc, call, fn, ax_arg(a, 1, "argnums"),
                       flag_name ? ax_arg(a, 2, flag_name) : NULL);
}

static ax_value *b_grad(ax_interp *in, ax_value *self, const ax_args *a) {
    (void)self;
    return make_transform(in, a, "grad", "the gradient of a function", grad_fn_call, "has_aux");
}

static ax_value *b_value_and_grad(ax_interp *in, ax_value *self, const ax_args *a) {
    (void)self;
    return make_transform(in, a, "value_and_grad", "(value, gradient) of a function",
                          value_and_grad_fn_call, "has_aux");
}

/* ---------------------------------------------------------------- jvp */

static ax_value *b_jvp(ax_interp *in, ax_value *self, const ax_args *a) {
    (void)self;
    if (!ax_args_check(in, a, "jvp", 3, (const char *[]){"fun", "primals", "tangents", NULL}))
        return NULL;
    ax_value *fn = ax_arg(a, 0, "fun"), *primals = ax_arg(a, 1, "primals"),
             *tangents = ax_arg(a, 2, "tangents");
    if (!fn || !primals || !tangents ||
        (primals->kind != AX_V_TUPLE && primals->kind != AX_V_LIST) ||
        (tangents->kind != AX_V_TUPLE && tangents->kind != AX_V_LIST))
        return ax_error(in->cx, AX_ERR_TYPE,
                        "jvp(f, primals, tangents) takes a function and two tuples of arguments");
    if (primals->n != tangents->n)
        return ax_error(in->cx, AX_ERR_VALUE, "jvp: %d primals but %d tangents", primals->n,
                        tangents->n);
    ax_args pa = {.n = primals->n, .pos = primals->items},
            ta = {.n = tangents->n, .pos = tangents->items};
    flat_call fc, ft;
    ax_array **outs = NULL, **touts = NULL;
    int nout = 0;
    ax_value *result = NULL;
    memset(&ft, 0, sizeof ft);
    if (ax_flat_call_init(&fc, in, "jvp", fn, &pa, 0, NULL, false)) goto done;
    if (ax_flat_call_init(&ft, in, "jvp", fn, &ta, 0, NULL, false)) goto done;
    if (ft.nflat != fc.nflat) {
        ax_error(in->cx, AX_ERR_VALUE, "jvp: the tangents must have the structure of the primals");
        goto done;
    }
    for (int i = 0; i < fc.nflat; i++) {
        if (!ax_shape_equal(fc.flat[i]->ndim, fc.flat[i]->shape, ft.flat[i]->ndim,
                            ft.flat[i]->shape)) {
            char p[96], t[96];
            ax_array_type_format(p, sizeof p, fc.flat[i]);
            ax_array_type_format(t, sizeof t, ft.flat[i]);
            ax_error(in->cx, AX_ERR_SHAPE, "jvp: a tangent of type %s for a primal of type %s", t,
                     p);
            goto done;
        }
    }
    if (ax_ad_jvp(in->cx, ax_flat_call_fn, &fc, fc.nflat, fc.flat, ft.flat, &nout, &outs, &touts))
        goto done;
    result = ax_flat_pair_take(in->cx, ax_flat_rebuild_main(&fc, outs),
                               ax_flat_rebuild_main(&fc, touts));
done:
    ax_flat_release_arrays(outs, nout);
    ax_flat_release_arrays(touts, nout);
    ax_flat_call_free(&fc);
    ax_flat_call_free(&ft);
    return result;
}

/* ---------------------------------------------------------------- vjp and linearize */

/* What vjp_fn / the linearized function keep: the linear map and the tree structures. */
typedef struct linear_state {
    ax_linear *lin;
    int ntraced;
    ax_value **defs; /* ntraced of each */
    int *counts;
    ax_value *out_def;
    int nmain;
} linear_state;

static void linear_state_free(void *p) {
    linear_state *s = p;
    ax_linear_free(s->lin);
    for (int k = 0; k < s->ntraced; k++) ax_value_release(s->defs[k]);
    free(s->defs);
    free(s->counts);
    if (s->out_def) ax_value_release(s->out_def);
    free(s);
}
static const ax_object_type linear_state_type = {.name = "linear map", .free = linear_state_free};

/* Moves the linear map and structures out of a flat call into a state value. */
static ax_value *linear_state_new(ax_interp *in, flat_call *fc, ax_linear *lin) {
    linear_state *s = calloc(1, sizeof *s);
    ax_value **defs = calloc((size_t)fc->ntraced + 1, sizeof *defs);
    int *counts = calloc((size_t)fc->ntraced + 1, sizeof *counts);
    if (!s || !defs || !counts) {
        free(s), free(defs), free(counts);
        ax_linear_free(lin);
        return ax_error_oom(in->cx);
    }
    s->defs = defs;
    s->counts = counts;
    s->lin = lin;
    s->ntraced = fc->ntraced;
    for (int k = 0; k < fc->ntraced; k++) {
        s->defs[k] = ax_value_retain(fc->defs[k]);
        s->counts[k] = fc->counts[k];
    }
    s->out_def = ax_value_retain(fc->out_def);
    s->nmain = fc->nmain;
    return ax_value_or_oom(in, ax_value_object(&linear_state_type, s)); /* frees s on failure */
}

/* Flattens `tree` and checks it has the structure `def`; arrays borrowed into *flat. */
static int flatten_like(ax_interp *in, const char *what, ax_value *tree, ax_value *def,
                        ax_value ***leaves, int *n) {
    ax_value *tdef;
    if (ax_tree_flatten(in, tree, leaves, n, &tdef)) return -1;
    bool same = ax_treedef_equal(tdef, def);
    ax_value_release(tdef);
    for (int i = 0; same && i < *n; i++) same = (*leaves)[i]->kind == AX_V_ARRAY;
    if (!same) {
        ax_values_release(*leaves, *n);
        ax_error(in->cx, AX_ERR_VALUE,
                 "%s: the argument must have the structure of the "
                 "function's output",
                 what);
        return -1;
    }
    return 0;
}

static ax_value *vjp_fn_call(ax_interp *in, ax_value *self, const ax_args *a) {
    linear_state *s = self->builtin->data->obj.payload;
    if (a->n != 1 || a->nkw)
        return ax_error(in->cx, AX_ERR_TYPE,
                        "vjp_fn takes one cotangent (of the output's structure)");
    ax_value **leaves;
    int n;
    if (flatten_like(in, "vjp_fn", a->pos[0], s->out_def, &leaves, &n)) return NULL;
    ax_array **cts = calloc((size_t)s->lin->nout + 1, sizeof *cts);
    ax_array **ct_in = calloc((size_t)s->lin->nin + 1, sizeof *ct_in);
    ax_value *result = NULL;
    if (cts && ct_in) {
        for (int i = 0; i < n; i++) {
            const ax_aval *t = &s->lin->out_types[i];
            ax_array *c = leaves[i]->arr;
            if (!ax_shape_equal(c->ndim, c->shape, t->ndim, t->shape)) {
                char got[96], want[96];
                ax_array_type_format(got, sizeof got, c);
                ax_type_format(want, sizeof want, t->dtype, t->ndim, t->shape);
                ax_error(in->cx, AX_ERR_SHAPE,
                         "vjp_fn: a cotangent of type %s for an output of type %s", got, want);
                goto done;
            }
            cts[i] = c;
        }
        if (!ax_linear_transpose(in->cx, s->lin, cts, ct_in)) {
            flat_call fc = {.in = in, .ntraced = s->ntraced, .defs = s->defs, .counts = s->counts};
            result = ax_flat_rebuild_per_arg(&fc, ct_in, true); /* fc borrows s's arrays */
        }
    } else {
        ax_error_oom(in->cx);
    }
done:
    ax_flat_release_arrays(ct_in, s->lin->nin);
    free(cts);
    ax_values_release(leaves, n);
    return result;
}

static ax_value *linearized_call(ax_interp *in, ax_value *self, const ax_args *a) {
    linear_state *s = self->builtin->data->obj.payload;
    if (a->n != s->ntraced || a->nkw)
        return ax_error(in->cx, AX_ERR_TYPE, "the linearized function takes %d tangent%s",
                        s->ntraced, s->ntraced == 1 ? "" : "s");
    ax_array **flat = calloc((size_t)s->lin->nin + 1, sizeof *flat);
    ax_array **tout = calloc((size_t)s->lin->nout + 1, sizeof *tout);
    ax_value *result = NULL;
    int off = 0, rc = flat && tout ? 0 : (ax_error_oom(in->cx), -1);
    for (int k = 0; k < s->ntraced && !rc; k++) {
        ax_value **leaves;
        int n;
        if (flatten_like(in, "linearize", a->pos[k], s->defs[k], &leaves, &n)) {
            rc = -1;
            break;
        }
        for (int i = 0; i < n; i++) flat[off + i] = ax_array_retain(leaves[i]->arr);
        off += n;
        ax_values_release(leaves, n);
    }
    if (!rc && !ax_linear_apply(in->cx, s->lin, flat, tout)) {
        ax_value **vals = ax_flat_wrap_arrays(in->cx, s->nmain, tout);
        if (vals) result = ax_tree_unflatten(in, s->out_def, vals, s->nmain);
        if (vals) ax_values_release(vals, s->nmain);
    }
    ax_flat_release_arrays(flat, off);
    ax_flat_release_arrays(tout, s->lin->nout);
    return result;
}

/* vjp(f, *primals) and linearize(f, *primals). */
static ax_value *vjp_or_linearize(ax_interp *in, const ax_args *a, bool vjp) {
    const char *what = vjp ? "vjp" : "linearize";
    if (a->n < 1) return ax_error(in->cx, AX_ERR_TYPE, "%s(f, *primals) needs a function", what);
    bool has_aux = false;
    for (int i = 0; i < a->nkw; i++) {
        if (!strcmp(a->kwnames[i], "has_aux") && vjp) {
            if (!ax_value_truthy(in, a->kwvals[i], &has_aux)) return NULL;
        } else {
            return ax_error(in->cx, AX_ERR_TYPE, "%s() got an unexpected keyword argument '%s'",
                            what, a->kwnames[i]);
        }
    }
    ax_args pa = {.n = a->n - 1, .pos = a->pos + 1};
    flat_call fc;
    ax_array **outs = NULL;
    ax_linear *lin = NULL;
    int nout = 0;
    ax_value *result = NULL;
    if (ax_flat_call_init(&fc, in, what, a->pos[0], &pa, 0, NULL, has_aux) ||
        check_float_inputs(&fc) ||
        ax_ad_linearize(in->cx, ax_flat_call_fn, &fc, fc.nflat, fc.flat, &nout, &outs, &lin))
        goto done;
    ax_value *state = linear_state_new(in, &fc, lin);
    lin = NULL;
    if (!state) goto done;
    ax_value *f = ax_value_or_oom(
        in, ax_value_builtin(vjp ? "vjp_fn" : "f_jvp",
                             vjp ? "the pullback: cotangent of the output -> cotangents of "
                                   "the inputs"
                                 : "the linearized function: tangents -> output tangent",
                             vjp ? vjp_fn_call : linearized_call, state));
    ax_value *value = ax_flat_rebuild_main(&fc, outs);
    result = ax_flat_pair_take(in->cx, value, f);
    if (result && has_aux) {
        ax_value *aux = ax_flat_rebuild_aux(&fc, outs);
        if (!aux) {
            ax_value_release(result);
            result = NULL;
        } else {
            ax_value *items[3] = {ax_value_retain(result->items[0]),
                                  ax_value_retain(result->items[1]), aux};
            ax_value_release(result);
            result = ax_value_or_oom(in, ax_value_tuple(3, items)); /* releases them on failure */
        }
    }
done:
    ax_flat_release_arrays(outs, nout);
    ax_linear_free(lin);
    ax_flat_call_free(&fc);
    return result;
}

static ax_value *b_vjp(ax_interp *in, ax_value *self, const ax_args *a) {
    (void)self;
    return vjp_or_linearize(in, a, true);
}

static ax_value *b_linearize(ax_interp *in, ax_value *self, const ax_args *a) {
    (void)self;
    return vjp_or_linearize(in, a, false);
}

/* ---------------------------------------------------------------- jacobians */

/* The linear map of a linearization, forward (tangents) or transposed (cotangents), as a flat
 * function: what jacfwd and jacrev vmap over the basis vectors. */
typedef struct lin_closure {
    ax_linear *lin;
    bool forward;
} lin_closure;

static int apply_linear(ax_ctx *cx, void *closure, int nin, ax_array **in, int *nout,
                        ax_array ***out) {
    lin_closure *lc = closure;
    (void)nin;
    *nout = lc->forward ? lc->lin->nout : lc->lin->nin;
    *out = calloc((size_t)*nout + 1, sizeof **out);
    if (!*out) return ax_error_oom(cx), -1;
    int rc = lc->forward ? ax_linear_apply(cx, lc->lin, in, *out)
                         : ax_linear_transpose(cx, lc->lin, in, *out);
    if (rc) {
        free(*out);
        *out = NULL;
    }
    return rc;
}

/* The identity's columns [off, off + size) as a batch of basis vectors: shape (n, *shape). */
static ax_array *basis_piece(ax_scope *s, ax_array *eye, int64_t off, const ax_aval *t) {
    int64_t n = eye->shape[0], size = ax_shape_size(t->ndim, t->shape);
    ax_params sl = {.ndim = 2, .lo = {0, off}, .hi = {n, off + size}, .step = {1, 1}};
    int64_t shape[AX_MAX_RANK + 1];
    shape[0] = n;
    memcpy(shape + 1, t->shape, (size_t)t->ndim * sizeof *shape);
    return ax_lax_reshape(s, ax_lax_bind(s, AX_P_SLICE, 1, &eye, &sl), t->ndim + 1, shape);
}

/* Block [off, off + size) of the stacked rows of x (n, *rest) as an array of shape
 * first + rest (forward: transposed to rest + first). */
static ax_array *jacobian_block(ax_scope *s, ax_array *x, int64_t off, const ax_aval *first,
                                bool forward) {
    int64_t size = ax_shape_size(first->ndim, first->shape);
    ax_params sl = {.ndim = x->ndim, .lo = {off}, .hi = {off + size}};
    for (int d = 0; d < x->ndim; d++) sl.step[d] = 1, sl.hi[d] = d ? x->shape[d] : off + size;
    ax_array *b = ax_lax_bind(s, AX_P_SLICE, 1, &x, &sl);
    int rest = x->ndim - 1;
    int64_t shape[2 * AX_MAX_RANK];
    memcpy(shape, first->shape, (size_t)first->ndim * sizeof *shape);
    memcpy(shape + first->ndim, x->shape + 1, (size_t)rest * sizeof *shape);
    b = ax_lax_reshape(s, b, first->ndim + rest, shape);
    if (!forward || !b) return b;
    int perm[2 * AX_MAX_RANK];
    for (int i = 0; i < rest; i++) perm[i] = first->ndim + i;
    for (int i = 0; i < first->ndim; i++) perm[rest + i] = i;
    return ax_lax_transpose(s, b, perm);
}

/* The Jacobian blocks J[j][i] (output leaf j, input leaf i) of a linearization: all basis
 * vectors of the inputs (forward) or outputs (reverse) at once, by vmap of the linear map. */
static int jacobian_blocks(ax_ctx *cx, ax_linear *lin, int nmain, bool forward, ax_array **J) {
    int nbasis = forward ? lin->nin : nmain;
    const ax_aval *types = forward ? lin->in_types : lin->out_types;
    int64_t n = 0;
    for (int k = 0; k < nbasis; k++)
        if (!ax_add_i64(n, ax_shape_size(types[k].ndim, types[k].shape), &n))
            return ax_error(cx, AX_ERR_VALUE,
                            "the Jacobian has more than 2**63 rows (its leaves are too big)"),
                   -1;
    ax_scope s;
    ax_scope_begin(&s, cx);
    ax_dtype t0 = nbasis ? types[0].dtype : AX_F32; /* no basis: an empty eye */
    ax_array *eye = ax_scope_own(&s, ax_eye(cx, t0, n, n, 0));
    ax_array **basis = calloc((size_t)nbasis + 1, sizeof *basis), **res = NULL;
    int *axes = calloc((size_t)nbasis + 1, sizeof *axes), *bdims = NULL, nres = 0, rc = -1;
    if (!basis || !axes) ax_error_oom(cx);
    if (!basis || !axes || !eye) goto done;
    int64_t off = 0;
    for (int k = 0; k < nbasis; k++) {
        ax_aval t = types[k];
        t.dtype = eye->dtype;
        if (!(basis[k] = basis_piece(&s, eye, off, &t))) goto done;
        off += ax_shape_size(t.ndim, t.shape);
    }
    lin_closure lc = {.lin = lin, .forward = forward};
    if (ax_vmap(cx, apply_linear, &lc, nbasis, basis, axes, n, &nres, &res, &bdims)) goto done;
    for (int r = 0; r < nres; r++)
        res[r] = ax_scope_own(&s, ax_vmap_place_take(cx, res[r], bdims[r], n, 0));
    /* forward: res[j] stacks output j over input basis vectors; reverse: res[i] stacks input i
     * over output basis vectors */
    for (int j = 0; j < nmain; j++) {
        int64_t o = 0;
        for (int i = 0; i < lin->nin; i++) {
            const ax_aval *first = forward ? &lin->in_types[i] : &lin->out_types[j];
            ax_array *src = forward ? res[j] : res[i];
            int64_t at = forward ? o : 0;
            if (!forward)
                for (int jj = 0; jj < j; jj++)
                    at += ax_shape_size(lin->out_types[jj].ndim, lin->out_types[jj].shape);
            ax_array *blk = jacobian_block(&s, src, at, first, forward);
            if (!blk) goto done;
            J[j * lin->nin + i] = ax_scope_keep(&s, blk);
            o += ax_shape_size(lin->in_types[i].ndim, lin->in_types[i].shape);
        }
    }
    rc = 0;
done:
    free(res);
    free(bdims);
    free(basis);
    free(axes);
    ax_scope_end(&s);
    return rc;
}

/* jacfwd / jacrev: for each output leaf, the structure of the differentiated arguments with
 * blocks of shape out_leaf.shape + in_leaf.shape. */
static ax_value *jacobian_call(ax_interp *in, ax_value *self, const ax_args *a, bool forward) {
    ax_value *state = self->builtin->data;
    const char *what = forward ? "jacfwd" : "jacrev";
    int *argnums, nargnums;
    bool as_tuple;
    if (ax_read_argnums(in, what, state->items[1], &argnums, &nargnums, &as_tuple)) return NULL;
    if (normalize_argnums(in, what, argnums, nargnums, a->n)) {
        free(argnums);
        return NULL;
    }
    flat_call fc;
    ax_array **outs = NULL, **J = NULL;
    ax_value **per_out = NULL;
    ax_linear *lin = NULL;
    int nout = 0, nj = 0;
    ax_value *result = NULL;
    ax_ctx *cx = in->cx;
    if (ax_flat_call_init(&fc, in, what, state->items[0], a, nargnums, argnums, false) ||
        check_float_inputs(&fc) ||
        ax_ad_linearize(cx, ax_flat_call_fn, &fc, fc.nflat, fc.flat, &nout, &outs, &lin))
        goto done;
    nj = fc.nmain * fc.nflat;
    J = calloc((size_t)nj + 1, sizeof *J);
    per_out = calloc((size_t)fc.nmain + 1, sizeof *per_out);
    if (!J || !per_out) ax_error_oom(cx);
    if (!J || !per_out || jacobian_blocks(cx, lin, fc.nmain, forward, J)) goto done;
    for (int j = 0; j < fc.nmain; j++)
        if (!(per_out[j] = ax_flat_rebuild_per_arg(&fc, J + j * fc.nflat, as_tuple))) goto done;
    result = ax_tree_unflatten(in, fc.out_def, per_out, fc.nmain);
done:
    if (per_out) ax_values_release(per_out, fc.nmain);
    ax_flat_release_arrays(J, nj);
    ax_flat_release_arrays(outs, nout);
    ax_linear_free(lin);
    ax_flat_call_free(&fc);
    free(argnums);
    return result;
}

static ax_value *jacfwd_fn_call(ax_interp *in, ax_value *self, const ax_args *a) {
    return jacobian_call(in, self, a, true);
}
static ax_value *jacrev_fn_call(ax_interp *in, ax_value *self, const ax_args *a) {
    return jacobian_call(in, self, a, false);
}

static ax_value *b_jacfwd(ax_interp *in, ax_value *self, const ax_args *a) {
    (void)self;
    return make_transform(in, a, "jacfwd", "the Jacobian by forward mode", jacfwd_fn_call, NULL);
}
static ax_value *b_jacrev(ax_interp *in, ax_value *self, const ax_args *a) {
    (void)self;
    return make_transform(in, a, "jacrev", "the Jacobian by reverse mode", jacrev_fn_call, NULL);
}

static ax_value *b_hessian(ax_interp *in, ax_value *self, const ax_args *a) {
    (void)self;
    if (!ax_args_check(in, a, "hessian", 2, (const char *[]){"fun", "argnums", NULL})) return NULL;
    ax_value *fn = ax_arg(a, 0, "fun"), *argnums = ax_arg(a, 1, "argnums");
    if (!fn) return ax_error(in->cx, AX_ERR_TYPE, "hessian() missing the function");
    ax_value *inner = transformed(in, "jacrev", "the Jacobian by reverse mode", jacrev_fn_call, fn,
                                  argnums, NULL);
    if (!inner) return NULL;
    ax_value *outer = transformed(in, "hessian", "the Hessian (jacfwd of jacrev)", jacfwd_fn_call,
                                  inner, argnums, NULL);
    ax_value_release(inner);
    return outer;
}

/* ---------------------------------------------------------------- make_jaxpr */

static void jaxpr_free(void *p) {
    ax_ir_release(p);
}
static void jaxpr_format(ax_strbuf *out, void *p) {
    ax_ir_format(out, p);
}
static const ax_object_type jaxpr_type = {
    .name = "jaxpr", .free = jaxpr_free, .format = jaxpr_format};

/* Traces fn abstractly on the types of the call's arguments: the IR as recorded, unsimplified,
 * with the operations on known values staged too (make_jaxpr shows what tracing saw, as JAX
 * does: `log 2.0` stays an equation; jit folds it and simplifies before compiling). */
static ax_ir *trace_call(ax_interp *in, flat_call *fc, const char *what, ax_value *fn,
                         const ax_args *a, int ntraced, const int *traced, int *nout) {
    if (ax_flat_call_init(fc, in, what, fn, a, ntraced, traced, false)) return NULL;
    ax_aval *types = calloc((size_t)fc->nflat + 1, sizeof *types);
    if (!types) return ax_error_oom(in->cx);
    for (int i = 0; i < fc->nflat; i++) ax_aval_of(&types[i], fc->flat[i]);
    ax_ir *ir = ax_trace_to_ir_staged(in->cx, ax_flat_call_fn, fc, fc->nflat, types, nout, true);
    free(types);
    return ir;
}

ax_value *ax_make_jaxpr(ax_interp *in, ax_value *fn, const ax_args *a, int ntraced,
                        const int *traced) {
    flat_call fc;
    int nout = 0;
    ax_ir *ir = trace_call(in, &fc, "make_jaxpr", fn, a, ntraced, traced, &nout);
    ax_flat_call_free(&fc);
    if (!ir) return NULL;
    return ax_value_or_oom(in, ax_value_object(&jaxpr_type, ir)); /* releases ir on failure */
}

/* make_jaxpr(f, static_argnums)(*args): the arguments not named static are traced. */
static ax_value *jaxpr_fn_call(ax_interp *in, ax_value *self, const ax_args *a) {
    ax_value *state = self->builtin->data;
    int *statics = NULL, nstatic = 0, ntraced = 0;
    bool as_tuple;
    ax_value *spec = state->items[1];
    if (spec->kind != AX_V_NONE &&
        ax_read_argnums(in, "make_jaxpr", spec, &statics, &nstatic, &as_tuple))
        return NULL;
    int *traced = malloc((size_t)(a->n + 1) * sizeof *traced);
    if (!traced) {
        free(statics);
        return ax_error_oom(in->cx);
    }
    for (int i = 0; i < a->n; i++) {
        bool is_static = false;
        for (int k = 0; k < nstatic; k++) is_static |= statics[k] == i;
        if (!is_static) traced[ntraced++] = i;
    }
    free(statics);
    ax_args args; /* ShapeDtypeStructs stand for arrays */
    ax_value *jaxpr = NULL;
    if (!ax_shape_args(in, a, &args)) {
        jaxpr = ax_make_jaxpr(in, state->items[0], &args, ntraced, traced);
        ax_shape_args_free(&args);
    }
    free(traced);
    return jaxpr;
}

static ax_value *b_make_jaxpr(ax_interp *in, ax_value *self, const ax_args *a) {
    (void)self;
    if (!ax_args_check(in, a, "make_jaxpr", 2, (const char *[]){"fun", "static_argnums", NULL}))
        return NULL;
    ax_value *fn = ax_arg(a, 0, "fun");
    if (!fn) return ax_error(in->cx, AX_ERR_TYPE, "make_jaxpr() missing the function to trace");
    return transformed(in, "make_jaxpr", "the typed IR of a function for given arguments",
                       jaxpr_fn_call, fn, ax_arg(a, 1, "static_argnums"), NULL);
}

/* ---------------------------------------------------------------- vmap */

#define AXIS_NONE AX_AXIS_NONE

/* Reads an axis spec leaf: an int, or None (AXIS_NONE). */
static int read_axis(ax_interp *in, ax_value *v, int *axis) {
    if (v->kind == AX_V_NONE) {
        *axis = AXIS_NONE;
        return 0;
    }
    int64_t k;
    if (!ax_value_to_int(in, v, "an axis in in_axes/out_axes", &k)) return -1;
    *axis = (int)k;
    return 0;
}

int ax_spread_axes(ax_interp *in, const char *what, ax_value *tree, ax_value *spec, int *axes,
                   int *n, int cap) {
    if (spec->kind == AX_V_NONE || spec->kind == AX_V_ARRAY) {
        int axis, count = 0;
        if (read_axis(in, spec, &axis)) return -1;
        ax_value **leaves, *def;
        if (ax_tree_flatten(in, tree, &leaves, &count, &def)) return -1;
        ax_values_release(leaves, count);
        ax_value_release(def);
        for (int i = 0; i < count; i++) {
            if (*n >= cap) { /* more leaves than the flattened arguments/outputs: a bug */
                ax_error(in->cx, AX_ERR_RUNTIME,
                         "internal error: %s has more leaves than the values it describes", what);
                return -1;
            }
            axes[(*n)++] = axis;
        }
        return 0;
    }
    bool same = spec->kind == tree->kind && spec->n == tree->n &&
                (spec->kind == AX_V_TUPLE || spec->kind == AX_V_LIST || spec->kind == AX_V_DICT);
    if (!same) {
        ax_error(in->cx, AX_ERR_VALUE,
                 "%s must be an int, None, or a tuple/list/dict matching the structure of the "
                 "arguments (a pytree prefix)",
                 what);
        return -1;
    }
    if (spec->kind == AX_V_DICT) {
        /* Leaves are visited in sorted key order: follow the tree's keys in that order. */
        ax_value **leaves, *def;
        int count;
        if (ax_tree_flatten(in, tree, &leaves, &count, &def)) return -1;
        ax_values_release(leaves, count);
        ax_value_release(def);
        ax_value **keys = malloc((size_t)tree->n * sizeof *keys);
        if (!keys) return ax_error_oom(in->cx), -1;
        if (tree->n) memcpy(keys, tree->keys, (size_t)tree->n * sizeof *keys);
        for (int i = 0; i < tree->n; i++)
            for (int j = i + 1; j < tree->n; j++)
                if (ax_dict_key_order(keys[j], keys[i]) < 0) {
                    ax_value *tmp = keys[i];
                    keys[i] = keys[j], keys[j] = tmp;
                }
        int rc = 0;
        for (int i = 0; i < tree->n && !rc; i++) {
            ax_value *sub = ax_dict_lookup(spec, keys[i]);
            if (!sub) {
                ax_strbuf k;
                ax_strbuf_init(&k);
                ax_value_format_nested(&k, keys[i]);
                ax_error(in->cx, AX_ERR_VALUE, "%s: no entry for key %s", what,
                         k.data ? k.data : "?");
                ax_strbuf_free(&k);
                rc = -1;
            } else {
                rc = ax_spread_axes(in, what, ax_dict_lookup(tree, keys[i]), sub, axes, n, cap);
            }
        }
        free(keys);
        return rc;
    }
    for (int i = 0; i < tree->n; i++)
        if (ax_spread_axes(in, what, tree->items[i], spec->items[i], axes, n, cap)) return -1;
    return 0;
}

typedef struct vmap_spec {
    ax_value *fn, *in_axes, *out_axes, *axis_size;
} vmap_spec;

/* The batch size from the mapped leaves; errors name the arguments and their sizes. */
static int batch_size(ax_interp *in, flat_call *fc, int *axes, int64_t *size) {
    int off = 0, first_arg = -1;
    int64_t first = -1;
    for (int k = 0; k < fc->ntraced; k++) {
        for (int i = 0; i < fc->counts[k]; i++) {
            ax_array *x = fc->flat[off + i];
            int *axis = &axes[off + i];
            if (*axis == AXIS_NONE) continue;
            if (*axis < -x->ndim || *axis >= x->ndim) {
                char t[96];
                ax_array_type_format(t, sizeof t, x);
                ax_error(in->cx, AX_ERR_VALUE,
                         "vmap: in_axes %d is out of range for argument %d of type %s", *axis,
                         fc->traced[k], t);
                return -1;
            }
            if (*axis < 0) *axis += x->ndim;
            int64_t n = x->shape[*axis];
            if (first < 0) {
                first = n, first_arg = fc->traced[k];
            } else if (n != first) {
                ax_error(in->cx, AX_ERR_VALUE,
                         "vmap got inconsistent sizes for the mapped axis: argument %d has size "
                         "%lld, argument %d has size %lld",
                         first_arg, (long long)first, fc->traced[k], (long long)n);
                return -1;
            }
        }
        off += fc->counts[k];
    }
    if (first < 0 && *size < 0) {
        ax_error(in->cx, AX_ERR_VALUE,
                 "vmap needs at least one mapped argument (an in_axes "
                 "entry that is not None) or axis_size");
        return -1;
    }
    if (first >= 0 && *size >= 0 && first != *size) {
        ax_error(in->cx, AX_ERR_VALUE,
                 "vmap: axis_size=%lld but the mapped arguments have size "
                 "%lld",
                 (long long)*size, (long long)first);
        return -1;
    }
    if (first >= 0) *size = first;
    return 0;
}

static ax_value *vmap_fn_call(ax_interp *in, ax_value *self, const ax_args *a) {
    ax_value *st = self->builtin->data;
    ax_value *fn = st->items[0], *in_axes = st->items[1], *out_axes = st->items[2],
             *asz = st->items[3], *name = st->items[4];
    int64_t size = -1;
    if (asz->kind != AX_V_NONE && !ax_value_to_int(in, asz, "axis_size", &size)) return NULL;
    /* Per-argument specs: one spec for all, or one per positional argument. */
    bool per_arg = in_axes->kind == AX_V_TUPLE || in_axes->kind == AX_V_LIST;
    if (per_arg && in_axes->n != a->n)
        return ax_error(in->cx, AX_ERR_VALUE,
                        "vmap in_axes has %d entries but the function was called with %d "
                        "positional argument%s",
                        in_axes->n, a->n, a->n == 1 ? "" : "s");
    int *traced = malloc((size_t)(a->n + 1) * sizeof *traced), ntraced = 0;
    ax_value **specs = malloc((size_t)(a->n + 1) * sizeof *specs);
    flat_call fc;
    memset(&fc, 0, sizeof fc);
    int *axes = NULL, nax = 0, nout = 0, *bdims = NULL, *oaxes = NULL;
    ax_array **outs = NULL;
    ax_value *result = NULL;
    if (!traced || !specs) {
        ax_error_oom(in->cx);
        goto done;
    }
    for (int i = 0; i < a->n; i++) {
        ax_value *spec = per_arg ? in_axes->items[i] : in_axes;
        if (spec->kind == AX_V_NONE) continue; /* passed through untouched */
        specs[ntraced] = spec;
        traced[ntraced++] = i;
    }
    if (ax_flat_call_init(&fc, in, "vmap", fn, a, ntraced, traced, false)) goto done;
    axes = malloc((size_t)(fc.nflat + 1) * sizeof *axes);
    if (!axes) {
        ax_error_oom(in->cx);
        goto done;
    }
    for (int k = 0; k < ntraced; k++)
        if (ax_spread_axes(in, "vmap in_axes", a->pos[traced[k]], specs[k], axes, &nax, fc.nflat))
            goto done;
    if (batch_size(in, &fc, axes, &size)) goto done;
    for (int i = 0; i < nax; i++)
        if (axes[i] == AXIS_NONE) axes[i] = -1;
    if (ax_vmap_named(in->cx, name->kind == AX_V_STR ? name->str : NULL, ax_flat_call_fn, &fc,
                      fc.nflat, fc.flat, axes, size, &nout, &outs, &bdims))
        goto done;
    /* Place each output's batch dimension where out_axes says. */
    ax_value *main = ax_flat_rebuild_main(&fc, outs);
    int nox = 0;
    oaxes = malloc((size_t)(nout + 1) * sizeof *oaxes);
    if (!oaxes) ax_error_oom(in->cx);
    if (!main || !oaxes ||
        ax_spread_axes(in, "vmap out_axes", main, out_axes, oaxes, &nox, nout)) {
        if (main) ax_value_release(main);
        goto done;
    }
    ax_value_release(main);
    for (int j = 0; j < nout; j++) {
        int ax = oaxes[j];
        if (ax == AXIS_NONE) {
            if (bdims[j] >= 0) {
                ax_error(in->cx, AX_ERR_VALUE,
                         "vmap: out_axes is None for an output that depends "
                         "on the mapped arguments");
                goto done;
            }
            continue;
        }
        int nd = outs[j]->ndim + (bdims[j] < 0);
        if (ax < 0) ax += nd;
        if (ax < 0 || ax >= nd) {
            ax_error(in->cx, AX_ERR_VALUE,
                     "vmap: out_axes %d is out of range for an output of "
                     "rank %d",
                     oaxes[j], nd - 1);
            goto done;
        }
        ax_array *placed = ax_vmap_place_take(in->cx, outs[j], bdims[j], size, ax);
        outs[j] = placed;
        if (!placed) goto done;
    }
    result = ax_flat_rebuild_main(&fc, outs);
done:
    ax_flat_release_arrays(outs, nout);
    free(bdims);
    free(axes);
    free(oaxes);
    free(traced);
    free(specs);
    ax_flat_call_free(&fc);
    return result;
}

static ax_value *b_vmap(ax_interp *in, ax_value *self, const ax_args *a) {
    (void)self;
    const char *names[] = {"fun", "in_axes", "out_axes", "axis_size", "axis_name", NULL};
    if (!ax_args_check(in, a, "vmap", 5, names)) return NULL;
    ax_value *fn = ax_arg(a, 0, "fun");
    if (!fn) return ax_error(in->cx, AX_ERR_TYPE, "vmap() missing the function to vectorise");
    ax_value *items[5] = {fn, ax_arg(a, 1, "in_axes"), ax_arg(a, 2, "out_axes"),
                          ax_arg(a, 3, "axis_size"), ax_arg(a, 4, "axis_name")};
    if (items[4] && items[4]->kind != AX_V_STR && items[4]->kind != AX_V_NONE)
        return ax_error(in->cx, AX_ERR_TYPE, "vmap: axis_name must be a string (or None)");
    ax_value **st = malloc(5 * sizeof *st);
    if (!st) return ax_error_oom(in->cx);
    for (int i = 0; i < 5; i++) {
        if (items[i])
            st[i] = ax_value_retain(items[i]);
        else if (i >= 3)
            st[i] = ax_none();
        else if (!(st[i] = ax_value_int(in, 0))) {
            ax_values_release(st, i);
            return NULL;
        }
    }
    ax_value *state = ax_value_tuple(5, st);
    free(st);
    if (!state) return ax_error_oom(in->cx);
    return ax_value_or_oom(in,
                           ax_value_builtin("vmap", "a vectorised function", vmap_fn_call, state));
}

/* ---------------------------------------------------------------- check_grads */

/* Numerical checks of a flat function in f64: forward mode against central differences, and
 * reverse mode against forward mode (<J v, w> == <v, J^T w>). Recurses for higher orders on
 * x -> J(x) v. Returns the worst relative error seen, or -1 on error. */
typedef struct tangent_closure {
    ax_flat_fn fn;
    void *closure;
    ax_array **v;
} tangent_closure;

static int tangent_of(ax_ctx *cx, void *closure, int nin, ax_array **in, int *nout,
                      ax_array ***out) {
    tangent_closure *t = closure;
    ax_array **o = NULL;
    if (ax_ad_jvp(cx, t->fn, t->closure, nin, in, t->v, nout, &o, out)) return -1;
    ax_flat_release_arrays(o, *nout);
    return 0;
}

static uint64_t lcg_next(uint64_t *s) {
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return *s >> 11;
}

static ax_array *random_like(ax_ctx *cx, const ax_array *x, uint64_t *seed) {
    ax_array *r = ax_array_new(cx, AX_F64, x->ndim, x->shape);
    for (int64_t i = 0; r && i < r->size; i++)
        ((double *)r->buf->data)[i] = (double)lcg_next(seed) / 9007199254740992.0 * 2 - 1;
    return r;
}

/* *sum += <a, b> over their elements (NULL is zero). The values may come from a function that
 * closes over a value traced by an enclosing transformation: their concrete values (those
 * behind grad's tracers) are read, and a value only jit or vmap knows is an error. */
static int add_inner(ax_ctx *cx, ax_array *a, ax_array *b, double *sum) {
    if (!a || !b) return 0;
    ax_array *ca = ax_concrete_value(cx, a), *cb = ax_concrete_value(cx, b);
    if (!ca || !cb || !ca->buf || !cb->buf) {
        ax_error(cx, AX_ERR_CONCRETIZATION,
                 "check_grads needs concrete values: its function uses a value traced by an "
                 "enclosing jit or vmap");
        return -1;
    }
    for (int64_t i = 0; i < ca->size; i++)
        *sum += ax_array_get_f64(ca, i) * ax_array_get_f64(cb, i);
    return 0;
}

/* sum_j <f_j(x + h v), w_j> */
static int shifted_inner(ax_ctx *cx, ax_flat_fn fn, void *cl, int n, ax_array **x, ax_array **v,
                         double h, ax_array **w, double *out) {
    ax_array **xs = calloc((size_t)n + 1, sizeof *xs), **o = NULL;
    int no = 0, rc = xs ? 0 : (ax_error_oom(cx), -1);
    for (int i = 0; i < n && !rc; i++) {
        xs[i] = ax_array_copy(cx, x[i]);
        if (!xs[i]) rc = -1;
        for (int64_t k = 0; !rc && k < xs[i]->size; k++)
            ((double *)xs[i]->buf->data)[k] += h * ax_array_get_f64(v[i], k);
    }
    if (!rc) rc = fn(cx, cl, n, xs, &no, &o);
    *out = 0;
    for (int j = 0; !rc && j < no; j++) rc = add_inner(cx, o[j], w[j], out);
    ax_flat_release_arrays(o, no);
    ax_flat_release_arrays(xs, n);
    return rc;
}

static double check_flat(ax_ctx *cx, ax_flat_fn fn, void *cl, int n, ax_array **x, int order,
                         uint64_t *seed) {
    ax_array **v = calloc((size_t)n + 1, sizeof *v), **w = NULL, **o = NULL, **t = NULL,
             **ct = calloc((size_t)n + 1, sizeof *ct);
    ax_linear *lin = NULL;
    int no = 0;
    double worst = -1;
    if (!v || !ct) {
        ax_error_oom(cx);
        goto done;
    }
    for (int i = 0; i < n; i++)
        if (!(v[i] = random_like(cx, x[i], seed))) goto done;
    if (ax_ad_jvp(cx, fn, cl, n, x, v, &no, &o, &t)) goto done;
    if (!(w = calloc((size_t)no + 1, sizeof *w))) {
        ax_error_oom(cx);
        goto done;
    }
    for (int j = 0; j < no; j++)
        if (!(w[j] = random_like(cx, o[j], seed))) goto done;
    double jv_w = 0, plus, minus, h = 1e-6;
    for (int j = 0; j < no; j++)
        if (add_inner(cx, t[j], w[j], &jv_w)) goto done;
    if (shifted_inner(cx, fn, cl, n, x, v, h, w, &plus) ||
        shifted_inner(cx, fn, cl, n, x, v, -h, w, &minus))
        goto done;
    double fd = (plus - minus) / (2 * h);
    worst = fabs(jv_w - fd) / (1 + fabs(fd));
    ax_array **lo = NULL;
    int nlo = 0;
    if (ax_ad_linearize(cx, fn, cl, n, x, &nlo, &lo, &lin)) {
        worst = -1;
        goto done;
    }
    ax_flat_release_arrays(lo, nlo);
    if (ax_linear_transpose(cx, lin, w, ct)) {
        worst = -1;
        goto done;
    }
    double v_jtw = 0;
    for (int i = 0; i < n; i++)
        if (add_inner(cx, v[i], ct[i], &v_jtw)) {
            worst = -1;
            goto done;
        }
    double rev = fabs(v_jtw - jv_w) / (1 + fabs(jv_w));
    if (rev > worst) worst = rev;
    if (order > 1) {
        tangent_closure tc = {.fn = fn, .closure = cl, .v = v};
        double e = check_flat(cx, tangent_of, &tc, n, x, order - 1, seed);
        worst = e < 0 ? -1 : e > worst ? e : worst;
    }
done:
    ax_flat_release_arrays(v, n);
    ax_flat_release_arrays(w, no);
    ax_flat_release_arrays(o, no);
    ax_flat_release_arrays(t, no);
    ax_flat_release_arrays(ct, n);
    ax_linear_free(lin);
    return worst;
}

static ax_value *b_check_grads(ax_interp *in, ax_value *self, const ax_args *a) {
    (void)self;
    const char *names[] = {"f", "args", "order", "atol", NULL};
    if (!ax_args_check(in, a, "check_grads", 4, names)) return NULL;
    ax_value *fn = ax_arg(a, 0, "f"), *args = ax_arg(a, 1, "args");
    ax_value *order_v = ax_arg(a, 2, "order"), *atol_v = ax_arg(a, 3, "atol");
    if (!fn || !args || (args->kind != AX_V_TUPLE && args->kind != AX_V_LIST))
        return ax_error(in->cx, AX_ERR_TYPE,
                        "check_grads(f, args, order=2) takes a function and "
                        "a tuple of arguments");
    int64_t order = 2;
    double atol = 1e-5;
    if (order_v && !ax_value_to_int(in, order_v, "order", &order)) return NULL;
    if (atol_v && !ax_value_to_double(in, atol_v, "atol", &atol)) return NULL;
    if (order < 1 || order > 4)
        return ax_error(in->cx, AX_ERR_VALUE, "check_grads: order must be 1 to 4, not %lld",
                        (long long)order);
    ax_args pa = {.n = args->n, .pos = args->items};
    flat_call fc;
    ax_value *result = NULL;
    ax_array **x64 = NULL;
    if (ax_flat_call_init(&fc, in, "check_grads", fn, &pa, 0, NULL, false) ||
        check_float_inputs(&fc))
        goto done;
    x64 = calloc((size_t)fc.nflat + 1, sizeof *x64);
    if (!x64) {
        ax_error_oom(in->cx);
        goto done;
    }
    /* The check reads and writes the arguments' elements: it needs their values (the concrete
     * values behind grad's tracers; none under jit or vmap). */
    for (int i = 0; i < fc.nflat; i++) {
        ax_array *c = ax_concrete_value(in->cx, fc.flat[i]);
        if (!c || !c->buf) {
            ax_error(in->cx, AX_ERR_CONCRETIZATION,
                     "check_grads needs concrete arguments: it cannot run inside jit or vmap");
            goto done;
        }
        if (!(x64[i] = ax_np_astype(in->cx, c, AX_F64, false))) goto done;
    }
    uint64_t seed = 12345;
    double worst = check_flat(in->cx, ax_flat_call_fn, &fc, fc.nflat, x64, (int)order, &seed);
    if (worst < 0) goto done;
    if (worst > atol) {
        ax_error(in->cx, AX_ERR_ASSERTION,
                 "check_grads: derivatives disagree with finite differences (worst relative "
                 "error %.3g > atol %.3g, order %lld)",
                 worst, atol, (long long)order);
        goto done;
    }
    result = ax_value_float(in, worst);
    if (result && result->kind == AX_V_ARRAY && result->arr->dtype != AX_F64) {
        ax_value_release(result);
        result = ax_value_or_oom(in, ax_value_array(ax_array_scalar(in->cx, AX_F64, worst)));
    }
done:
    ax_flat_release_arrays(x64, fc.nflat);
    ax_flat_call_free(&fc);
    return result;
}

/* ---------------------------------------------------------------- is_concrete */

/* Whether a value's contents are known now (not an abstract tracer of jit/vmap/make_jaxpr):
 * what structured control flow uses to choose between branching and selecting. */
static ax_value *b_is_concrete(ax_interp *in, ax_value *self, const ax_args *a) {
    (void)self;
    if (a->n != 1 || a->nkw) return ax_error(in->cx, AX_ERR_TYPE, "is_concrete(x) takes one value");
    ax_value **leaves, *def;
    int n;
    if (ax_tree_flatten(in, a->pos[0], &leaves, &n, &def)) return NULL;
    bool concrete = true;
    for (int i = 0; i < n; i++)
        if (leaves[i]->kind == AX_V_ARRAY && !ax_concrete_value(in->cx, leaves[i]->arr))
            concrete = false;
    ax_values_release(leaves, n);
    ax_value_release(def);
    return ax_value_bool(in, concrete);
}

/* ---------------------------------------------------------------- registration */

int ax_transforms_register(ax_interp *in) {
    static const struct {
        const char *name, *doc;
        ax_builtin_fn fn;
    } fns[] = {
        {"grad", "grad(f, argnums=0, has_aux=False): the gradient of a scalar function", b_grad},
        {"value_and_grad", "value_and_grad(f, argnums=0, has_aux=False): f's value and gradient",
         b_value_and_grad},
        {"jvp", "jvp(f, primals, tangents): (f(*primals), the derivative along tangents)", b_jvp},
        {"vjp",
         "vjp(f, *primals): (f(*primals), vjp_fn) with vjp_fn mapping output cotangents "
         "to input cotangents",
         b_vjp},
        {"linearize", "linearize(f, *primals): (f(*primals), the linear map of tangents)",
         b_linearize},
        {"jacfwd", "jacfwd(f, argnums=0): the Jacobian by forward mode", b_jacfwd},
        {"jacrev", "jacrev(f, argnums=0): the Jacobian by reverse mode", b_jacrev},
        {"jacobian", "jacobian(f, argnums=0): the Jacobian (reverse mode)", b_jacrev},
        {"hessian", "hessian(f, argnums=0): the matrix of second derivatives", b_hessian},
        {"make_jaxpr", "make_jaxpr(f)(*args): the typed IR that f traces to", b_make_jaxpr},
        {"vmap",
         "vmap(f, in_axes=0, out_axes=0, axis_size=None, axis_name=None): f mapped over an axis "
         "(collectives inside use axis_name)",
         b_vmap},
        {"is_concrete", "is_concrete(x): whether x's values are known (not traced by jit or vmap)",
         b_is_concrete},
        {"check_grads",
         "check_grads(f, args, order=2, atol=1e-5): forward and reverse mode vs "
         "finite differences in f64; returns the worst relative error",
         b_check_grads},
    };
    for (size_t i = 0; i < sizeof fns / sizeof *fns; i++) {
        ax_value *v = ax_value_builtin(fns[i].name, fns[i].doc, fns[i].fn, NULL);
        if (!v) return -1;
        ax_interp_define_builtin_take(in, fns[i].name, v);
    }
    return 0;
}

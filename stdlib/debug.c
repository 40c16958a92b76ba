/* jax.debug.print and jax.debug.callback (see debug.h). A call flattens its arguments: the
 * array leaves become the operands of one debug_callback equation, the other leaves (strings,
 * functions) stay in the callback. When the equation runs (at once, or when jit's compiled
 * program reaches it) the callback rebuilds the arguments from the values and prints them
 * with str.format, or calls the function. */
#include "debug.h"

#include <stdlib.h>
#include <string.h>

#include "../compiler/trace_ir.h"
#include "flat_call.h"
#include "pytree.h"

typedef struct debug_data {
    ax_interp *in;
    ax_value *fn;       /* debug.callback's function, or NULL */
    ax_value *fmt;      /* debug.print's format string, or NULL */
    ax_value *treedef;  /* the structure of (args, kwargs) */
    ax_value **statics; /* per leaf: the leaf when it is not an array, else NULL */
    int nleaves;
} debug_data;

static void debug_data_free(void *p) {
    debug_data *d = p;
    if (d->fn) ax_value_release(d->fn);
    if (d->fmt) ax_value_release(d->fmt);
    if (d->treedef) ax_value_release(d->treedef);
    ax_values_release(d->statics, d->nleaves);
    free(d);
}

/* fn(*args, **kwargs) for a tuple and a dict: new reference or NULL. */
static ax_value *call_with(ax_interp *in, ax_value *fn, ax_value *args, ax_value *kwargs) {
    const char **names = calloc((size_t)kwargs->n + 1, sizeof *names);
    if (!names) return ax_error_oom(in->cx);
    for (int i = 0; i < kwargs->n; i++) names[i] = kwargs->keys[i]->str;
    ax_args a = {.n = args->n,
                 .pos = args->items,
                 .nkw = kwargs->n,
                 .kwnames = names,
                 .kwvals = kwargs->items};
    ax_value *r = ax_call(in, fn, &a);
    free(names);
    return r;
}

/* fmt.format(*args, **kwargs), printed with a newline (debug.print), or fn(*args, **kwargs)
 * with its result dropped (debug.callback). */
static int run_effect(ax_interp *in, const debug_data *d, ax_value *args, ax_value *kwargs) {
    ax_value *format = d->fmt ? ax_getattr(in, d->fmt, "format") : NULL;
    if (d->fmt && !format) return -1;
    ax_value *r = call_with(in, format ? format : d->fn, args, kwargs);
    if (format) ax_value_release(format);
    if (!r) return -1;
    bool ok =
        !d->fmt || (r->kind == AX_V_STR && ax_write_checked(in, stdout, r->str, strlen(r->str)) &&
                    ax_write_checked(in, stdout, "\n", 1));
    ax_value_release(r);
    return ok ? 0 : -1;
}

/* The effect: the arguments rebuilt from the operands' values, then printed or passed on. */
static int debug_effect(ax_ctx *cx, void *data, int nin, ax_array **in) {
    debug_data *d = data;
    ax_value **leaves = calloc((size_t)d->nleaves + 1, sizeof *leaves);
    if (!leaves) return ax_error_oom(cx), -1;
    int rc = 0;
    for (int i = 0, k = 0; i < d->nleaves && !rc; i++) {
        if (d->statics[i]) {
            leaves[i] = ax_value_retain(d->statics[i]);
        } else if (k < nin) {
            if (!(leaves[i] = ax_value_array(ax_array_retain(in[k++])))) rc = -1;
        } else {
            rc = -1;
            ax_error(cx, AX_ERR_RUNTIME, "internal error: debug_callback lacks an operand");
        }
    }
    ax_value *pair = rc ? NULL : ax_tree_unflatten(d->in, d->treedef, leaves, d->nleaves);
    ax_values_release(leaves, d->nleaves);
    if (!pair) return -1;
    ax_value *args = pair->items[0], *kwargs = pair->items[1];
    rc = run_effect(d->in, d, args, kwargs);
    ax_value_release(pair);
    return rc;
}

/* Binds one debug_callback for (args, kwargs) = the call's arguments after the first. */
static ax_value *bind_effect(ax_interp *in, const ax_args *a, ax_value *fn, ax_value *fmt,
                             const char *name) {
    ax_value **pos = calloc((size_t)a->n + 1, sizeof *pos);
    ax_value **keys = calloc((size_t)a->nkw + 1, sizeof *keys);
    ax_value **vals = calloc((size_t)a->nkw + 1, sizeof *vals);
    debug_data *d = calloc(1, sizeof *d);
    ax_callback *cb = calloc(1, sizeof *cb);
    ax_array **ops = NULL;
    ax_value *pair = NULL, **leaves = NULL, *result = NULL;
    int n = 0, nops = 0;
    if (!pos || !keys || !vals || !d || !cb) {
        free(pos), free(keys), free(vals), free(d), free(cb);
        return ax_error_oom(in->cx);
    }
    for (int i = 1; i < a->n; i++) pos[i - 1] = ax_value_retain(a->pos[i]);
    int nk = 0, want = 0;
    for (int i = 0; i < a->nkw; i++) {
        if (!strcmp(a->kwnames[i], "ordered")) continue; /* effects always run in order here */
        want++;
        if (!(keys[nk] = ax_value_str(a->kwnames[i]))) break;
        vals[nk++] = ax_value_retain(a->kwvals[i]);
    }
    ax_value *items[2] = {ax_value_tuple(a->n - 1, pos),
                          nk == want ? ax_value_dict(nk, keys, vals) : NULL};
    if (nk < want) ax_values_release(keys, nk), ax_values_release(vals, nk), keys = vals = NULL;
    free(pos), free(keys), free(vals);
    if (items[0] && items[1])
        pair = ax_value_tuple(2, items);
    else {
        if (items[0]) ax_value_release(items[0]);
        if (items[1]) ax_value_release(items[1]);
    }
    *d = (debug_data){
        .in = in, .fn = fn ? ax_value_retain(fn) : NULL, .fmt = fmt ? ax_value_retain(fmt) : NULL};
    *cb = (ax_callback){
        .refs = 1, .name = name, .effect = debug_effect, .free = debug_data_free, .data = d};
    if (!pair) {
        ax_error_oom(in->cx);
        goto done;
    }
    if (ax_tree_flatten(in, pair, &leaves, &n, &d->treedef)) goto done;
    d->statics = calloc((size_t)n + 1, sizeof *d->statics);
    ops = calloc((size_t)n + 1, sizeof *ops);
    if (!d->statics || !ops) {
        ax_error_oom(in->cx);
        goto done;
    }
    d->nleaves = n;
    for (int i = 0; i < n; i++) {
        if (leaves[i]->kind == AX_V_ARRAY)
            ops[nops++] = leaves[i]->arr;
        else
            d->statics[i] = ax_value_retain(leaves[i]);
    }
    ax_params p = {.cb = cb};
    /* with no traced operand, a program being staged (jit) still gets the effect, to run
     * with it rather than now */
    bool traced = false;
    for (int i = 0; i < nops; i++) traced |= ops[i]->tracer != NULL;
    ax_ir_trace *staging = traced ? NULL : ax_ir_trace_innermost(in->cx);
    int rc = staging ? ax_ir_trace_record(staging, AX_P_DEBUG_CALLBACK, nops, ops, &p, NULL)
                     : ax_bind(in->cx, AX_P_DEBUG_CALLBACK, nops, ops, &p, NULL);
    if (!rc) result = ax_none();
done:
    free(ops);
    ax_values_release(leaves, n);
    if (pair) ax_value_release(pair);
    ax_callback_release(cb); /* frees d with it when no equation kept it */
    return result;
}

/* debug_print(fmt, *args, **kwargs): fmt.format(*args, **kwargs) printed where the program
 * runs, with the values it computes (under jit too). */
static ax_value *b_debug_print(ax_interp *in, ax_value *self, const ax_args *a) {
    (void)self;
    if (a->n < 1 || a->pos[0]->kind != AX_V_STR)
        return ax_error(in->cx, AX_ERR_TYPE,
                        "jax.debug.print(fmt, *args, **kwargs) takes a format string first");
    return bind_effect(in, a, NULL, a->pos[0], "print");
}

/* debug_callback(fn, *args, **kwargs): fn called with the values of args where the program
 * runs (its result is ignored). */
static ax_value *b_debug_callback(ax_interp *in, ax_value *self, const ax_args *a) {
    (void)self;
    if (a->n < 1)
        return ax_error(in->cx, AX_ERR_TYPE,
                        "jax.debug.callback(fn, *args, **kwargs) takes the function first");
    return bind_effect(in, a, a->pos[0], NULL, "callback");
}

int ax_debug_register(ax_interp *in) {
    static const struct {
        const char *name, *doc;
        ax_builtin_fn fn;
    } fns[] = {
        {"debug_print",
         "debug_print(fmt, *args, **kwargs): prints fmt.format(...) with runtime values "
         "(jax.debug.print)",
         b_debug_print},
        {"debug_callback",
         "debug_callback(fn, *args, **kwargs): calls fn with runtime values (jax.debug.callback)",
         b_debug_callback},
    };
    for (size_t i = 0; i < sizeof fns / sizeof *fns; i++) {
        ax_value *v = ax_value_builtin(fns[i].name, fns[i].doc, fns[i].fn, NULL);
        if (!v) return -1;
        ax_interp_define_builtin_take(in, fns[i].name, v);
    }
    return 0;
}

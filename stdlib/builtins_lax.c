/* The builtins of structured control flow: cond, switch, while_loop and scan (lax.*). Each
 * traces the user's functions to closed sub-programs (the values they close over that other
 * transformations trace become leading operands: closure conversion) and binds one primitive
 * (compiler/control_flow.h). fori_loop, map and associative_scan are written in ax on these
 * (stdlib/lax.ax). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../compiler/control_flow.h"
#include "../compiler/ir.h"
#include "../compiler/passes.h"
#include "../compiler/simplify.h"
#include "../compiler/trace_ir.h"
#include "builtins_lib.h"
#include "flat_call.h"
#include "pytree.h"

/* ---------------------------------------------------------------- tracing a user function */

/* A call of a user function on rebuilt pytree arguments, as a flat function. */
typedef struct user_call {
    ax_interp *in;
    ax_value *fn;
    int nargs;
    ax_value **defs; /* each argument's structure */
    int *counts;     /* and its number of leaves */
    bool pair;       /* the result is a pair (scan's (carry, y)), flattened part by part */
    bool spread;     /* one argument, a tuple whose items are passed (cond's *operands) */
    ax_value *out_def[2];
    int nout[2];
    const char *what;
} user_call;

static int flatten_part(ax_interp *in, const char *what, ax_value *v, ax_value **def,
                        ax_array ***arrs, int *n) {
    ax_value **leaves;
    if (ax_tree_flatten(in, v, &leaves, n, def)) return -1;
    *arrs = calloc((size_t)*n + 1, sizeof **arrs);
    int rc = *arrs ? 0 : -1;
    if (rc) ax_error_oom(in->cx);
    for (int i = 0; i < *n && !rc; i++) {
        if (leaves[i]->kind != AX_V_ARRAY) {
            char d[64];
            ax_value_describe(d, sizeof d, leaves[i]);
            ax_error(in->cx, AX_ERR_TYPE, "%s must return arrays (or pytrees of them), not %s",
                     what, d);
            rc = -1;
        } else {
            (*arrs)[i] = ax_array_retain(leaves[i]->arr);
        }
    }
    ax_values_release(leaves, *n);
    if (rc) { /* nothing is left for the caller to release */
        ax_flat_release_arrays(*arrs, *n);
        *arrs = NULL;
        ax_value_release(*def);
        *def = NULL;
    }
    return rc;
}

static int user_call_fn(ax_ctx *cx, void *closure, int nin, ax_array **flat, int *nout,
                        ax_array ***out) {
    user_call *u = closure;
    (void)nin;
    ax_value **args = calloc((size_t)u->nargs + 1, sizeof *args);
    if (!args) return ax_error_oom(cx), -1;
    int rc = 0;
    for (int k = 0, off = 0; k < u->nargs && !rc; off += u->counts[k++]) {
        ax_value **vals = ax_flat_wrap_arrays(cx, u->counts[k], flat + off);
        args[k] = vals ? ax_tree_unflatten(u->in, u->defs[k], vals, u->counts[k]) : NULL;
        if (vals) ax_values_release(vals, u->counts[k]);
        if (!args[k]) rc = -1;
    }
    ax_args a = {.n = u->nargs, .pos = args};
    if (!rc && u->spread) a = (ax_args){.n = args[0]->n, .pos = args[0]->items};
    ax_value *r = rc ? NULL : ax_call(u->in, u->fn, &a);
    for (int k = 0; k < u->nargs; k++)
        if (args[k]) ax_value_release(args[k]);
    free(args);
    if (!r) return -1;
    ax_array **parts[2] = {NULL, NULL};
    if (u->pair && (r->kind != AX_V_TUPLE || r->n != 2)) {
        ax_error(cx, AX_ERR_TYPE, "%s must return a pair (carry, y)", u->what);
        rc = -1;
    }
    for (int k = 0; k < (u->pair ? 2 : 1) && !rc; k++)
        rc = flatten_part(u->in, u->what, u->pair ? r->items[k] : r, &u->out_def[k], &parts[k],
                          &u->nout[k]);
    ax_value_release(r);
    if (!rc) {
        *nout = u->nout[0] + u->nout[1];
        *out = calloc((size_t)*nout + 1, sizeof **out);
        if (!*out) ax_error_oom(cx), rc = -1;
        for (int i = 0; !rc && i < u->nout[0]; i++) (*out)[i] = parts[0][i];
        for (int i = 0; !rc && i < u->nout[1]; i++) (*out)[u->nout[0] + i] = parts[1][i];
        if (!rc) {
            free(parts[0]), free(parts[1]); /* their arrays moved to *out */
            return 0;
        }
    }
    ax_flat_release_arrays(parts[0], u->nout[0]);
    ax_flat_release_arrays(parts[1], u->nout[1]);
    return -1;
}

/* A user function traced to a closed sub-program. */
typedef struct traced {
    ax_ir *ir;         /* inputs: the lifted values, then the arguments' leaves */
    int nlift;
    ax_array **lifted; /* the values it closes over that are traced: its leading operands */
    ax_value *out_def[2];
    int nout[2];
} traced;

static void traced_free(traced *t) {
    ax_ir_release(t->ir);
    ax_flat_release_arrays(t->lifted, t->nlift);
    for (int k = 0; k < 2; k++)
        if (t->out_def[k]) ax_value_release(t->out_def[k]);
    memset(t, 0, sizeof *t);
}

/* Traces fn on arguments of the given structures whose leaves have the given types. */
static int trace_fn(ax_interp *in, const char *what, ax_value *fn, int nargs, ax_value **defs,
                    int *counts, const ax_aval *types, bool pair, bool spread, traced *t) {
    memset(t, 0, sizeof *t);
    ax_ctx *cx = in->cx;
    int ntypes = 0;
    for (int k = 0; k < nargs; k++) ntypes += counts[k];
    user_call u = {.in = in, .fn = fn, .nargs = nargs, .defs = defs, .counts = counts,
                   .pair = pair, .spread = spread, .what = what};
    int nout = 0;
    ax_ir *raw = ax_trace_to_ir(cx, user_call_fn, &u, ntypes, types, &nout);
    ax_ir *ir = raw ? ax_simplify(cx, raw) : NULL;
    ax_ir_release(raw);
    t->out_def[0] = u.out_def[0], t->out_def[1] = u.out_def[1];
    t->nout[0] = u.nout[0], t->nout[1] = u.nout[1];
    if (!ir) return traced_free(t), -1;
    bool *lift = calloc((size_t)ir->nconsts + 1, sizeof *lift);
    t->lifted = calloc((size_t)ir->nconsts + 1, sizeof *t->lifted);
    if (!lift || !t->lifted) {
        free(lift);
        ax_ir_release(ir);
        traced_free(t);
        return ax_error_oom(cx), -1;
    }
    for (int i = 0; i < ir->nconsts; i++)
        if ((lift[i] = ir->consts[i]->tracer != NULL))
            t->lifted[t->nlift++] = ax_array_retain(ir->consts[i]);
    t->ir = t->nlift ? ax_ir_lift_consts(ir, lift) : ax_ir_retain(ir);
    ax_ir_release(ir);
    free(lift);
    if (!t->ir) return traced_free(t), ax_error_oom(cx), -1;
    return 0;
}

/* ---------------------------------------------------------------- operands */

/* A pytree of arrays flattened (numbers become arrays): leaves are new references. */
typedef struct flat_tree {
    ax_value *def;
    int n;
    ax_array **leaves;
    ax_aval *types;
} flat_tree;

static void flat_tree_free(flat_tree *f) {
    if (f->def) ax_value_release(f->def);
    ax_flat_release_arrays(f->leaves, f->n);
    free(f->types);
    memset(f, 0, sizeof *f);
}

static int flat_tree_init(ax_interp *in, const char *what, ax_value *tree, flat_tree *f) {
    memset(f, 0, sizeof *f);
    ax_value **leaves;
    if (ax_tree_flatten(in, tree, &leaves, &f->n, &f->def)) return -1;
    f->leaves = calloc((size_t)f->n + 1, sizeof *f->leaves);
    f->types = calloc((size_t)f->n + 1, sizeof *f->types);
    int rc = f->leaves && f->types ? 0 : (ax_error_oom(in->cx), -1);
    for (int i = 0; i < f->n && !rc; i++) {
        if (!(f->leaves[i] = ax_value_to_array(in, leaves[i], what))) rc = -1;
        else ax_aval_of(&f->types[i], f->leaves[i]);
    }
    ax_values_release(leaves, f->n);
    if (rc) flat_tree_free(f);
    return rc;
}

static ax_value *unflatten_arrays(ax_interp *in, ax_value *def, int n, ax_array **arrs) {
    ax_value **vals = ax_flat_wrap_arrays(in->cx, n, arrs);
    if (!vals) return NULL;
    ax_value *r = ax_tree_unflatten(in, def, vals, n);
    ax_values_release(vals, n);
    return r;
}

static void format_types(char *out, size_t cap, int n, const ax_aval *t) {
    size_t len = 0;
    out[0] = 0;
    for (int i = 0; i < n && len + 2 < cap; i++) {
        char one[160];
        ax_type_format(one, sizeof one, t[i].dtype, t[i].ndim, t[i].shape);
        len += (size_t)snprintf(out + len, cap - len, "%s%s", i ? ", " : "", one);
    }
    if (n != 1 && len + 3 < cap) {
        memmove(out + 1, out, len + 1);
        out[0] = '(';
        strcat(out, ")");
    }
}

static void out_types(const ax_ir *ir, int first, int n, ax_aval *types) {
    for (int j = 0; j < n; j++) ax_ir_out_type(ir, first + j, &types[j]);
}

/* Whether two lists of types agree in dtype and shape (weak types are not distinguished: a
 * literal 0 starts an int32 carry). */
static bool types_agree(int n, const ax_aval *a, int m, const ax_aval *b) {
    if (n != m) return false;
    for (int i = 0; i < n; i++)
        if (a[i].dtype != b[i].dtype || !ax_shape_equal(a[i].ndim, a[i].shape, b[i].ndim, b[i].shape))
            return false;
    return true;
}

/* JAX's promotion of weakly typed loop carries: a carry that starts as a Python number (weak)
 * takes the type the body gives it (scan(f, 0.0, xs) with f64 xs carries an f64). Converts
 * such leaves of f; true when one changed (the body must then be traced again). */
static bool promote_weak_carry(ax_interp *in, flat_tree *f, int nout, const ax_aval *out) {
    bool changed = false;
    for (int i = 0; i < f->n && i < nout; i++) {
        ax_aval *t = &f->types[i];
        if (!t->weak || t->dtype == out[i].dtype ||
            !ax_shape_equal(t->ndim, t->shape, out[i].ndim, out[i].shape))
            continue;
        ax_params p = {.dtype = out[i].dtype, .weak = out[i].weak};
        ax_array *c = ax_bind1(in->cx, AX_P_CONVERT, 1, &f->leaves[i], &p);
        if (!c) {
            ax_error_clear(in->cx); /* keep the leaf: the type error says why */
            continue;
        }
        ax_array_release(f->leaves[i]);
        f->leaves[i] = c;
        ax_aval_of(t, c);
        changed = true;
    }
    return changed;
}

/* The TypeError of two structures or type lists that must agree. */
static int disagree(ax_interp *in, const char *fmt, int n, const ax_aval *a, int m,
                    const ax_aval *b) {
    char ta[512], tb[512];
    format_types(ta, sizeof ta, n, a);
    format_types(tb, sizeof tb, m, b);
    ax_error(in->cx, AX_ERR_TYPE, fmt, ta, tb);
    return -1;
}

/* ---------------------------------------------------------------- cond and switch */

/* Branch k's IR with the operands of every branch's lifted values in front: (lifted of branch
 * 0, ..., lifted of branch n-1, operands). */
static ax_ir *with_all_lifted(ax_ctx *cx, traced *br, int nb, int k, int nops, int *nall) {
    int total = 0;
    for (int b = 0; b < nb; b++) total += br[b].nlift;
    *nall = total;
    int *src = calloc((size_t)(total + nops) + 1, sizeof *src);
    ax_aval *types = calloc((size_t)(total + nops) + 1, sizeof *types);
    int *outs = calloc((size_t)br[k].ir->nout + 1, sizeof *outs);
    ax_ir *r = NULL;
    if (src && types && outs) {
        int at = 0;
        for (int b = 0; b < nb; b++)
            for (int i = 0; i < br[b].nlift; i++, at++) {
                src[at] = b == k ? i : -1;
                ax_aval_of(&types[at], br[b].lifted[i]);
            }
        for (int i = 0; i < nops; i++) src[at + i] = br[k].nlift + i;
        for (int j = 0; j < br[k].ir->nout; j++) outs[j] = j;
        r = ax_ir_rewire(br[k].ir, total + nops, src, types, br[k].ir->nout, outs);
    }
    if (!r) ax_error_oom(cx);
    free(src), free(types), free(outs);
    return r;
}

/* Branch functions applied to operands: index (i32 scalar) picks one; every branch traced. */
static ax_value *bind_branches(ax_interp *in, const char *what, ax_array *index, int nb,
                               ax_value **fns, int nops, ax_value **ops) {
    ax_ctx *cx = in->cx;
    ax_value **items = malloc((size_t)nops * sizeof *items + 1);
    if (!items) return ax_error_oom(cx);
    for (int i = 0; i < nops; i++) items[i] = ax_value_retain(ops[i]);
    ax_value *tuple = ax_value_tuple(nops, items); /* takes the references */
    free(items);
    if (!tuple) return ax_error_oom(cx);
    flat_tree f;
    int rc = flat_tree_init(in, "an operand of cond", tuple, &f);
    traced *br = rc ? NULL : calloc((size_t)nb, sizeof *br);
    ax_ir **irs = br ? calloc((size_t)nb, sizeof *irs) : NULL;
    if (!rc && !irs) ax_error_oom(cx), rc = -1;
    ax_value *result = NULL;
    ax_aval *t0 = NULL, *tk = NULL;
    for (int k = 0; k < nb && !rc; k++) {
        char name[64];
        snprintf(name, sizeof name, "%s: branch %d", what, k);
        rc = trace_fn(in, name, fns[k], 1, &f.def, &f.n, f.types, false, true, &br[k]);
    }
    /* every branch must return the same structure and types */
    if (!rc) {
        t0 = calloc((size_t)br[0].nout[0] + 1, sizeof *t0);
        if (!t0) ax_error_oom(cx), rc = -1;
        else out_types(br[0].ir, 0, br[0].nout[0], t0);
    }
    for (int k = 1; k < nb && !rc; k++) {
        tk = calloc((size_t)br[k].nout[0] + 1, sizeof *tk);
        if (!tk) {
            ax_error_oom(cx), rc = -1;
            break;
        }
        out_types(br[k].ir, 0, br[k].nout[0], tk);
        if (!ax_treedef_equal(br[0].out_def[0], br[k].out_def[0]) ||
            !types_agree(br[0].nout[0], t0, br[k].nout[0], tk)) {
            char fmt[200];
            snprintf(fmt, sizeof fmt,
                     "%s: the branches must return the same types, but branch 0 gives %%s and "
                     "branch %d gives %%s",
                     what, k);
            if (nb == 2) /* branch 0 is false_fun */
                snprintf(fmt, sizeof fmt, "%s: true_fun and false_fun must return the same "
                         "types, but true_fun gives %%s and false_fun gives %%s", what);
            rc = nb == 2 ? disagree(in, fmt, br[k].nout[0], tk, br[0].nout[0], t0)
                         : disagree(in, fmt, br[0].nout[0], t0, br[k].nout[0], tk);
        }
        free(tk);
        tk = NULL;
    }
    int nall = 0;
    for (int k = 0; k < nb && !rc; k++)
        if (!(irs[k] = with_all_lifted(cx, br, nb, k, f.n, &nall))) rc = -1;
    ax_array **args = rc ? NULL : calloc((size_t)(1 + nall + f.n + br[0].nout[0]) + 1, sizeof *args);
    if (!rc && !args) ax_error_oom(cx), rc = -1;
    if (!rc) {
        int n = 0;
        args[n++] = index;
        for (int b = 0; b < nb; b++)
            for (int i = 0; i < br[b].nlift; i++) args[n++] = br[b].lifted[i];
        for (int i = 0; i < f.n; i++) args[n++] = f.leaves[i];
        ax_array **outs = args + n;
        ax_params p = {.nsub = nb, .sub = (struct ax_ir *const *)irs};
        if (!ax_bind(cx, AX_P_COND, n, args, &p, outs)) {
            result = unflatten_arrays(in, br[0].out_def[0], br[0].nout[0], outs);
            for (int j = 0; j < br[0].nout[0]; j++) ax_array_release(outs[j]);
        }
    }
    free(args), free(t0);
    for (int k = 0; br && k < nb; k++) {
        traced_free(&br[k]);
        if (irs) ax_ir_release(irs[k]);
    }
    free(br), free(irs);
    flat_tree_free(&f);
    ax_value_release(tuple);
    return result;
}

/* A scalar predicate or index as the int32 index of a branch. */
static ax_array *branch_index_of(ax_interp *in, const char *what, ax_value *v, bool is_pred) {
    ax_array *a = ax_value_to_array(in, v, what);
    if (!a) return NULL;
    if (a->ndim != 0) {
        char t[128];
        ax_array_type_format(t, sizeof t, a);
        ax_array_release(a);
        return ax_error(in->cx, AX_ERR_TYPE, "%s: the %s must be a scalar, not %s", what,
                        is_pred ? "predicate" : "index", t);
    }
    if (!is_pred && !ax_dtype_is_int(a->dtype) && a->dtype != AX_BOOL) {
        char t[128];
        ax_array_type_format(t, sizeof t, a);
        ax_array_release(a);
        return ax_error(in->cx, AX_ERR_TYPE, "%s: the index must be an integer, not %s", what, t);
    }
    ax_array *r;
    if (is_pred && a->dtype != AX_BOOL) { /* a number: true when nonzero */
        ax_array *zero = ax_array_scalar(in->cx, a->dtype, 0.0);
        ax_array *ne = zero ? ax_bind_binary(in->cx, AX_P_NE, a, zero) : NULL;
        ax_array_release(zero);
        ax_array_release(a);
        a = ne;
        if (!a) return NULL;
    }
    ax_params p = {.dtype = AX_I32};
    r = ax_bind1(in->cx, AX_P_CONVERT, 1, &a, &p);
    ax_array_release(a);
    return r;
}

static ax_value *b_cond(ax_interp *in, ax_value *self, const ax_args *a) {
    (void)self;
    if (a->nkw) return ax_error(in->cx, AX_ERR_TYPE, "cond takes its operands positionally");
    if (a->n < 3)
        return ax_error(in->cx, AX_ERR_TYPE,
                        "cond(pred, true_fun, false_fun, *operands) needs at least 3 arguments");
    ax_array *index = branch_index_of(in, "cond", a->pos[0], true);
    if (!index) return NULL;
    ax_value *fns[2] = {a->pos[2], a->pos[1]}; /* index 0: false_fun */
    ax_value *r = bind_branches(in, "cond", index, 2, fns, a->n - 3, a->pos + 3);
    ax_array_release(index);
    return r;
}

static ax_value *b_switch(ax_interp *in, ax_value *self, const ax_args *a) {
    (void)self;
    if (a->nkw) return ax_error(in->cx, AX_ERR_TYPE, "switch takes its operands positionally");
    if (a->n < 2 || (a->pos[1]->kind != AX_V_LIST && a->pos[1]->kind != AX_V_TUPLE) ||
        a->pos[1]->n < 1)
        return ax_error(in->cx, AX_ERR_TYPE,
                        "switch(index, branches, *operands) needs a non-empty list of branches");
    ax_array *index = branch_index_of(in, "switch", a->pos[0], false);
    if (!index) return NULL;
    ax_value *r = bind_branches(in, "switch", index, a->pos[1]->n, a->pos[1]->items, a->n - 2,
                                a->pos + 2);
    ax_array_release(index);
    return r;
}

/* ---------------------------------------------------------------- while_loop */

static ax_value *b_while_loop(ax_interp *in, ax_value *self, const ax_args *a) {
    (void)self;
    if (!ax_args_check(in, a, "while_loop", 3,
                       (const char *[]){"cond_fun", "body_fun", "init_val", NULL}))
        return NULL;
    ax_value *cond_fun = ax_arg(a, 0, "cond_fun"), *body_fun = ax_arg(a, 1, "body_fun");
    ax_value *init = ax_arg(a, 2, "init_val");
    if (!cond_fun || !body_fun || !init)
        return ax_error(in->cx, AX_ERR_TYPE, "while_loop(cond_fun, body_fun, init_val)");
    ax_ctx *cx = in->cx;
    flat_tree f;
    if (flat_tree_init(in, "while_loop's init_val", init, &f)) return NULL;
    traced c = {0}, b = {0};
    ax_value *result = NULL;
    ax_aval *bt = NULL;
    int rc = 0;
    for (int attempt = 0; attempt < 2; attempt++) {
        rc = trace_fn(in, "while_loop's cond_fun", cond_fun, 1, &f.def, &f.n, f.types, false,
                      false, &c);
        if (!rc)
            rc = trace_fn(in, "while_loop's body_fun", body_fun, 1, &f.def, &f.n, f.types, false,
                          false, &b);
        if (!rc) {
            bt = calloc((size_t)b.nout[0] + 1, sizeof *bt);
            if (!bt) ax_error_oom(cx), rc = -1;
            else out_types(b.ir, 0, b.nout[0], bt);
        }
        if (rc || attempt || !promote_weak_carry(in, &f, b.nout[0], bt)) break;
        traced_free(&c), traced_free(&b);
        free(bt);
        bt = NULL;
    }
    if (!rc) {
        ax_aval pt;
        ax_ir_out_type(c.ir, 0, &pt);
        if (c.nout[0] != 1 || pt.dtype != AX_BOOL || pt.ndim != 0) {
            ax_aval *got = calloc((size_t)c.nout[0] + 1, sizeof *got);
            if (got) out_types(c.ir, 0, c.nout[0], got);
            char ts[512];
            format_types(ts, sizeof ts, got ? c.nout[0] : 0, got);
            ax_error(cx, AX_ERR_TYPE, "while_loop: cond_fun must return a boolean scalar, not %s",
                     ts);
            free(got);
            rc = -1;
        }
    }
    if (!rc && (!ax_treedef_equal(f.def, b.out_def[0]) || !types_agree(f.n, f.types, b.nout[0], bt)))
        rc = disagree(in,
                      "while_loop: body_fun must return the carry's type: it gives %s for a "
                      "carry of %s",
                      b.nout[0], bt, f.n, f.types);
    ax_array **args = rc ? NULL : calloc((size_t)(c.nlift + b.nlift + 2 * f.n) + 1, sizeof *args);
    if (!rc && !args) ax_error_oom(cx), rc = -1;
    if (!rc) {
        int n = 0;
        for (int i = 0; i < c.nlift; i++) args[n++] = c.lifted[i];
        for (int i = 0; i < b.nlift; i++) args[n++] = b.lifted[i];
        for (int i = 0; i < f.n; i++) args[n++] = f.leaves[i];
        ax_array **outs = args + n;
        ax_ir *subs[2] = {c.ir, b.ir};
        ax_params p = {.nsub = 2, .sub = (struct ax_ir *const *)subs, .nconsts = c.nlift,
                       .nconsts2 = b.nlift};
        if (!ax_bind(cx, AX_P_WHILE, n, args, &p, outs)) {
            result = unflatten_arrays(in, f.def, f.n, outs);
            for (int j = 0; j < f.n; j++) ax_array_release(outs[j]);
        }
    }
    free(args), free(bt);
    traced_free(&c), traced_free(&b);
    flat_tree_free(&f);
    return result;
}

/* ---------------------------------------------------------------- scan */

static int scan_length(ax_interp *in, const flat_tree *xs, ax_value *length_arg, int64_t *length) {
    bool given = length_arg && length_arg->kind != AX_V_NONE;
    if (given && !ax_value_to_int(in, length_arg, "scan's length", length)) return -1;
    if (given && *length < 0)
        return ax_error(in->cx, AX_ERR_VALUE, "scan: length must be >= 0, got %lld",
                        (long long)*length), -1;
    for (int i = 0; i < xs->n; i++) {
        const ax_aval *t = &xs->types[i];
        if (t->ndim < 1) {
            char ty[128];
            ax_type_format(ty, sizeof ty, t->dtype, t->ndim, t->shape);
            return ax_error(in->cx, AX_ERR_VALUE,
                            "scan: each leaf of xs needs a leading axis to scan over, but one "
                            "is %s", ty), -1;
        }
        if (!given && i == 0) *length = t->shape[0];
        if (t->shape[0] != *length)
            return ax_error(in->cx, AX_ERR_VALUE,
                            "scan: the leaves of xs must all have %lld leading elements%s, but "
                            "one has %lld",
                            (long long)*length, given ? " (length)" : "",
                            (long long)t->shape[0]), -1;
    }
    if (!given && xs->n == 0)
        return ax_error(in->cx, AX_ERR_VALUE,
                        "scan: give length= when xs is None (nothing to scan over)"), -1;
    return 0;
}

static ax_value *b_scan(ax_interp *in, ax_value *self, const ax_args *a) {
    (void)self;
    if (!ax_args_check(in, a, "scan", 6,
                       (const char *[]){"f", "init", "xs", "length", "reverse", "unroll", NULL}))
        return NULL;
    ax_value *fn = ax_arg(a, 0, "f"), *init = ax_arg(a, 1, "init"), *xs_v = ax_arg(a, 2, "xs");
    ax_value *rev = ax_arg(a, 4, "reverse"), *unroll_v = ax_arg(a, 5, "unroll");
    if (!fn || !init) return ax_error(in->cx, AX_ERR_TYPE, "scan(f, init, xs=None, length=None)");
    ax_ctx *cx = in->cx;
    bool reverse = false;
    int64_t length = 0, unroll = 1;
    if (rev && !ax_value_truthy(in, rev, &reverse)) return NULL;
    if (unroll_v && unroll_v->kind != AX_V_NONE) {
        bool is_bool = unroll_v->kind == AX_V_ARRAY && unroll_v->arr->dtype == AX_BOOL;
        if (!ax_value_to_int(in, unroll_v, "scan's unroll", &unroll)) return NULL;
        if (is_bool) unroll = unroll ? 0 : 1; /* unroll=True: all of it */
    }
    flat_tree c, x;
    ax_value *none = ax_none();
    if (flat_tree_init(in, "scan's init", init, &c)) return NULL;
    if (flat_tree_init(in, "scan's xs", xs_v ? xs_v : none, &x)) {
        flat_tree_free(&c);
        return NULL;
    }
    traced t = {0};
    ax_value *result = NULL;
    ax_aval *types = calloc((size_t)(c.n + x.n) + 1, sizeof *types), *ct = NULL;
    int rc = types ? scan_length(in, &x, ax_arg(a, 3, "length"), &length) : (ax_error_oom(cx), -1);
    for (int i = 0; i < c.n && !rc; i++) types[i] = c.types[i];
    for (int i = 0; i < x.n && !rc; i++) { /* f sees one slice of each x */
        ax_aval *s = &types[c.n + i];
        *s = x.types[i];
        s->ndim--;
        memmove(s->shape, s->shape + 1, (size_t)s->ndim * sizeof *s->shape);
    }
    ax_value *defs[2] = {c.def, x.def};
    int counts[2] = {c.n, x.n};
    for (int attempt = 0; attempt < 2 && !rc; attempt++) {
        rc = trace_fn(in, "scan's f", fn, 2, defs, counts, types, true, false, &t);
        if (!rc) {
            ct = calloc((size_t)t.nout[0] + 1, sizeof *ct);
            if (!ct) ax_error_oom(cx), rc = -1;
            else out_types(t.ir, 0, t.nout[0], ct);
        }
        if (rc || attempt || !promote_weak_carry(in, &c, t.nout[0], ct)) break;
        for (int i = 0; i < c.n; i++) types[i] = c.types[i];
        traced_free(&t);
        free(ct);
        ct = NULL;
    }
    if (!rc && (!ax_treedef_equal(c.def, t.out_def[0]) || !types_agree(c.n, c.types, t.nout[0], ct)))
        rc = disagree(in,
                      "scan: f must return a carry of the type it takes: it gives %s for a "
                      "carry of %s",
                      t.nout[0], ct, c.n, c.types);
    int nout = rc ? 0 : t.nout[0] + t.nout[1];
    ax_array **args = rc ? NULL : calloc((size_t)(t.nlift + c.n + x.n + nout) + 1, sizeof *args);
    if (!rc && !args) ax_error_oom(cx), rc = -1;
    if (!rc) {
        int n = 0;
        for (int i = 0; i < t.nlift; i++) args[n++] = t.lifted[i];
        for (int i = 0; i < c.n; i++) args[n++] = c.leaves[i];
        for (int i = 0; i < x.n; i++) args[n++] = x.leaves[i];
        ax_array **outs = args + n;
        ax_params p = {.nsub = 1, .sub = (struct ax_ir *const *)&t.ir, .nconsts = t.nlift,
                       .ncarry = c.n, .length = length, .reverse = reverse, .unroll = (int)unroll};
        if (!ax_bind(cx, AX_P_SCAN, n, args, &p, outs)) {
            ax_value *carry = unflatten_arrays(in, c.def, c.n, outs);
            ax_value *ys = carry ? unflatten_arrays(in, t.out_def[1], t.nout[1], outs + c.n) : NULL;
            result = ax_flat_pair_take(in->cx, carry, ys); /* releases either if the other failed */
            for (int j = 0; j < nout; j++) ax_array_release(outs[j]);
        }
    }
    free(args), free(types), free(ct);
    traced_free(&t);
    flat_tree_free(&c), flat_tree_free(&x);
    return result;
}

/* ---------------------------------------------------------------- the table */

const ax_builtin_def ax_builtins_lax[] = {
    {"cond", b_cond,
     "cond(pred, true_fun, false_fun, *operands): true_fun(*operands) if pred else "
     "false_fun(*operands); only the branch taken runs, under jit and grad too",
     0},
    {"switch", b_switch,
     "switch(index, branches, *operands): branches[index](*operands), index clamped", 0},
    {"while_loop", b_while_loop,
     "while_loop(cond_fun, body_fun, init_val): val = body_fun(val) while cond_fun(val)", 0},
    {"scan", b_scan,
     "scan(f, init, xs=None, length=None, reverse=False, unroll=1): carry, y = f(carry, x) over "
     "the leading axis of xs; returns (carry, the ys stacked)",
     0},
    {NULL, NULL, NULL, 0},
};

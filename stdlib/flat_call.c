/* Calls of user functions on flattened arguments (see flat_call.h). */
#include "flat_call.h"

#include <stdlib.h>
#include <string.h>

#include "pytree.h"

/* ---------------------------------------------------------------- flat calls */

void ax_flat_call_free(flat_call *fc) {
    for (int k = 0; k < fc->ntraced && fc->defs && !fc->shares_layout; k++)
        if (fc->defs[k]) ax_value_release(fc->defs[k]);
    if (!fc->shares_layout) {
        free(fc->traced);
        free(fc->defs);
        free(fc->counts);
        free(fc->flat);
    }
    if (fc->out_def) ax_value_release(fc->out_def);
    if (fc->aux_def) ax_value_release(fc->aux_def);
    ax_values_release(fc->aux_leaves, fc->naux);
}

int ax_flat_call_copy_layout(flat_call *dst, const flat_call *src) {
    int n = src->ntraced;
    memset(dst, 0, sizeof *dst);
    dst->in = src->in;
    dst->what = src->what;
    dst->traced = malloc((size_t)(n + 1) * sizeof *dst->traced);
    dst->defs = calloc((size_t)n + 1, sizeof *dst->defs);
    dst->counts = malloc((size_t)(n + 1) * sizeof *dst->counts);
    if (!dst->traced || !dst->defs || !dst->counts) return ax_error_oom(src->in->cx), -1;
    dst->ntraced = n;
    for (int k = 0; k < n; k++) {
        dst->traced[k] = src->traced[k];
        dst->defs[k] = ax_value_retain(src->defs[k]);
        dst->counts[k] = src->counts[k];
    }
    return 0;
}

/* Room in fc->flat for `more` leaves. */
static int reserve_leaves(flat_call *fc, int more, int *cap) {
    int need = fc->nflat + more;
    if (need <= *cap) return 0;
    ax_array **flat = realloc(fc->flat, (size_t)(need * 2 + 8) * sizeof *flat);
    if (!flat) return ax_error_oom(fc->in->cx), -1;
    fc->flat = flat;
    *cap = need * 2 + 8;
    return 0;
}

/* Takes traced argument k's leaves from `from` when it flattened the same argument: 1 if it
 * did not. */
static int reuse_arg(flat_call *fc, int k, const flat_call *from, int *cap) {
    for (int j = 0, off = 0; from && j < from->ntraced; off += from->counts[j++]) {
        if (from->traced[j] != fc->traced[k]) continue;
        if (reserve_leaves(fc, from->counts[j], cap)) return -1;
        memcpy(fc->flat + fc->nflat, from->flat + off, (size_t)from->counts[j] * sizeof *fc->flat);
        fc->nflat += fc->counts[k] = from->counts[j];
        fc->defs[k] = ax_value_retain(from->defs[j]);
        return 0;
    }
    return 1;
}

/* Flattens traced argument k; its leaves must be arrays. */
static int flatten_arg(flat_call *fc, int k, int *cap) {
    int pos = fc->traced[k];
    ax_value **leaves;
    if (ax_tree_flatten(fc->in, fc->args[pos], &leaves, &fc->counts[k], &fc->defs[k])) return -1;
    int rc = reserve_leaves(fc, fc->counts[k], cap);
    for (int i = 0; !rc && i < fc->counts[k]; i++) {
        if (leaves[i]->kind != AX_V_ARRAY) {
            char desc[64];
            ax_value_describe(desc, sizeof desc, leaves[i]);
            ax_error(fc->in->cx, AX_ERR_TYPE,
                     "%s: argument %d must be an array or a pytree of arrays, but it holds a %s",
                     fc->what, pos, desc);
            rc = -1;
        } else {
            fc->flat[fc->nflat++] = leaves[i]->arr; /* still owned by the argument's tree */
        }
    }
    ax_values_release(leaves, fc->counts[k]);
    return rc;
}

/* Whether `from` flattened exactly the arguments traced[0, ntraced) of a, in that order. */
static bool same_layout(const flat_call *from, const ax_args *a, int ntraced, const int *traced) {
    if (!from || from->args != a->pos || from->nargs != a->n || from->ntraced != ntraced)
        return false;
    for (int k = 0; k < ntraced; k++)
        if (from->traced[k] != (traced ? traced[k] : k)) return false;
    return true;
}

int ax_flat_call_init_from(flat_call *fc, ax_interp *in, const char *what, ax_value *fn,
                           const ax_args *a, int ntraced, const int *traced, bool has_aux,
                           const flat_call *from) {
    if (!traced) ntraced = a->n;
    memset(fc, 0, sizeof *fc);
    fc->in = in, fc->what = what, fc->fn = fn, fc->has_aux = has_aux;
    fc->nargs = a->n, fc->args = a->pos, fc->nkw = a->nkw, fc->kwnames = a->kwnames,
    fc->kwvals = a->kwvals;
    if (same_layout(from, a, ntraced, traced)) { /* its lists, without copying them */
        fc->ntraced = ntraced, fc->traced = from->traced, fc->defs = from->defs;
        fc->counts = from->counts, fc->flat = from->flat, fc->nflat = from->nflat;
        fc->shares_layout = true;
        return 0;
    }
    fc->traced = malloc((size_t)(ntraced + 1) * sizeof *fc->traced);
    fc->defs = calloc((size_t)ntraced + 1, sizeof *fc->defs);
    fc->counts = calloc((size_t)ntraced + 1, sizeof *fc->counts);
    if (!fc->traced || !fc->defs || !fc->counts) return ax_error_oom(in->cx), -1;
    fc->ntraced = ntraced;
    int cap = 0, rc = 0;
    for (int k = 0; k < ntraced && !rc; k++) {
        int pos = traced ? traced[k] : k;
        if (pos < 0 || pos >= a->n) {
            ax_error(in->cx, AX_ERR_VALUE,
                     "%s: argnums refers to argument %d but the function was called with %d "
                     "positional argument%s",
                     what, pos, a->n, a->n == 1 ? "" : "s");
            return -1;
        }
        fc->traced[k] = pos;
        rc = reuse_arg(fc, k, from, &cap);
        if (rc > 0) rc = flatten_arg(fc, k, &cap);
    }
    return rc;
}

int ax_flat_call_init(flat_call *fc, ax_interp *in, const char *what, ax_value *fn,
                      const ax_args *a, int ntraced, const int *traced, bool has_aux) {
    return ax_flat_call_init_from(fc, in, what, fn, a, ntraced, traced, has_aux, NULL);
}

/* Wraps arrays as values (new references to the arrays). */
ax_value **ax_flat_wrap_arrays(ax_ctx *cx, int n, ax_array **arrs) {
    ax_value **vals = calloc((size_t)(n ? n : 1), sizeof *vals);
    if (!vals) return ax_error_oom(cx);
    for (int i = 0; i < n; i++) {
        if (!(vals[i] = ax_value_array(ax_array_retain(arrs[i])))) {
            ax_values_release(vals, i);
            return ax_error_oom(cx);
        }
    }
    return vals;
}

/* Rebuilds the traced argument k from flat arrays. */
ax_value *ax_flat_rebuild_arg(flat_call *fc, int k, ax_array **arrs) {
    if (ax_treedef_is_leaf(fc->defs[k])) /* no tree around the one array */
        return ax_value_or_oom(fc->in, ax_value_array(ax_array_retain(arrs[0])));
    ax_value **vals = ax_flat_wrap_arrays(fc->in->cx, fc->counts[k], arrs);
    if (!vals) return NULL;
    ax_value *v = ax_tree_unflatten(fc->in, fc->defs[k], vals, fc->counts[k]);
    ax_values_release(vals, fc->counts[k]);
    return v;
}

/* Appends the array leaves of `tree` to out[*n]; non-array leaves are an error unless
 * `keep` is given (then they are kept there, array leaves as NULL). */
static int collect_outputs(flat_call *fc, ax_value *tree, ax_value **def, ax_array ***out, int *n,
                           ax_value ***keep, int *nkeep) {
    ax_value **leaves;
    int count;
    if (ax_tree_flatten(fc->in, tree, &leaves, &count, def)) return -1;
    ax_array **grown = realloc(*out, (size_t)(*n + count + 1) * sizeof **out);
    if (!grown) {
        ax_values_release(leaves, count);
        return ax_error_oom(fc->in->cx), -1;
    }
    *out = grown;
    for (int i = 0; i < count; i++) {
        if (leaves[i]->kind == AX_V_ARRAY) {
            (*out)[(*n)++] = ax_array_retain(leaves[i]->arr);
            ax_value_release(leaves[i]);
            leaves[i] = NULL;
        } else if (!keep) {
            char desc[64];
            ax_value_describe(desc, sizeof desc, leaves[i]);
            ax_error(fc->in->cx, AX_ERR_TYPE,
                     "%s: the function must return arrays (or pytrees of arrays), not a %s",
                     fc->what, desc);
            for (int j = i; j < count; j++) ax_value_release(leaves[j]);
            free(leaves);
            return -1;
        }
    }
    if (keep) {
        *keep = leaves;
        *nkeep = count;
    } else {
        free(leaves);
    }
    return 0;
}

void ax_flat_release_arrays(ax_array **a, int n) {
    if (!a) return;
    for (int i = 0; i < n; i++) ax_array_release(a[i]);
    free(a);
}

int ax_flat_call_fn(ax_ctx *cx, void *closure, int nin, ax_array **in, int *nout, ax_array ***out) {
    (void)nin;
    flat_call *fc = closure;
    ax_value **args = calloc((size_t)fc->nargs + 1, sizeof *args);
    ax_value **built = calloc((size_t)fc->ntraced + 1, sizeof *built);
    if (!args || !built) {
        free(args);
        free(built);
        return ax_error_oom(cx), -1;
    }
    if (fc->nargs) memcpy(args, fc->args, (size_t)fc->nargs * sizeof *args);
    int off = 0, rc = 0;
    for (int k = 0; k < fc->ntraced && !rc; k++) {
        if (!(built[k] = ax_flat_rebuild_arg(fc, k, in + off)))
            rc = -1;
        else
            args[fc->traced[k]] = built[k];
        off += fc->counts[k];
    }
    ax_value *r = NULL;
    if (!rc) {
        ax_args ca = {.n = fc->nargs,
                      .pos = args,
                      .nkw = fc->nkw,
                      .kwnames = fc->kwnames,
                      .kwvals = fc->kwvals};
        r = ax_call(fc->in, fc->fn, &ca);
    }
    for (int k = 0; k < fc->ntraced; k++)
        if (built[k]) ax_value_release(built[k]);
    free(built);
    free(args);
    if (!r) return -1;
    ax_value *main = r, *aux = NULL;
    if (fc->has_aux) {
        if (r->kind != AX_V_TUPLE || r->n != 2) {
            ax_value_release(r);
            ax_error(cx, AX_ERR_TYPE,
                     "%s with has_aux=True: the function must return a pair "
                     "(output, auxiliary data)",
                     fc->what);
            return -1;
        }
        main = r->items[0], aux = r->items[1];
    }
    ax_array **arrs = NULL;
    int n = 0;
    if (fc->out_def) ax_value_release(fc->out_def), fc->out_def = NULL;
    rc = collect_outputs(fc, main, &fc->out_def, &arrs, &n, NULL, NULL);
    fc->nmain = n;
    if (!rc && aux) {
        if (fc->aux_def) ax_value_release(fc->aux_def), fc->aux_def = NULL;
        ax_values_release(fc->aux_leaves, fc->naux);
        fc->aux_leaves = NULL, fc->naux = 0;
        rc = collect_outputs(fc, aux, &fc->aux_def, &arrs, &n, &fc->aux_leaves, &fc->naux);
    }
    ax_value_release(r);
    if (rc) {
        ax_flat_release_arrays(arrs, n);
        return -1;
    }
    *nout = n;
    *out = arrs;
    return 0;
}

/* Rebuilds the main output from arrays outs[0..nmain). */
ax_value *ax_flat_rebuild_main(flat_call *fc, ax_array **outs) {
    ax_value **vals = ax_flat_wrap_arrays(fc->in->cx, fc->nmain, outs);
    if (!vals) return NULL;
    ax_value *v = ax_tree_unflatten(fc->in, fc->out_def, vals, fc->nmain);
    ax_values_release(vals, fc->nmain);
    return v;
}

/* Rebuilds the auxiliary output: array leaves from outs (after the main ones). */
ax_value *ax_flat_rebuild_aux(flat_call *fc, ax_array **outs) {
    ax_value **vals = calloc((size_t)fc->naux + 1, sizeof *vals);
    if (!vals) return ax_error_oom(fc->in->cx);
    int k = fc->nmain;
    for (int i = 0; i < fc->naux; i++) {
        vals[i] = fc->aux_leaves[i] ? ax_value_retain(fc->aux_leaves[i])
                                    : ax_value_array(ax_array_retain(outs[k++]));
        if (!vals[i]) {
            ax_values_release(vals, i);
            return ax_error_oom(fc->in->cx);
        }
    }
    ax_value *v = ax_tree_unflatten(fc->in, fc->aux_def, vals, fc->naux);
    ax_values_release(vals, fc->naux);
    return v;
}

/* Rebuilds per-argument trees from flat per-leaf arrays: one value per traced argument. */
ax_value *ax_flat_rebuild_per_arg(flat_call *fc, ax_array **flat, bool as_tuple) {
    if (!as_tuple) return ax_flat_rebuild_arg(fc, 0, flat); /* one argument */
    ax_value **items = calloc((size_t)fc->ntraced + 1, sizeof *items);
    if (!items) return ax_error_oom(fc->in->cx);
    int off = 0;
    for (int k = 0; k < fc->ntraced; k++) {
        if (!(items[k] = ax_flat_rebuild_arg(fc, k, flat + off))) {
            ax_values_release(items, k);
            return NULL;
        }
        off += fc->counts[k];
    }
    ax_value *t = ax_value_tuple(fc->ntraced, items);
    free(items);
    return ax_value_or_oom(fc->in, t);
}

ax_value *ax_flat_pair_take(ax_ctx *cx, ax_value *a, ax_value *b) {
    if (!a || !b) {
        if (a) ax_value_release(a);
        if (b) ax_value_release(b);
        return NULL;
    }
    ax_value *t = ax_value_tuple(2, (ax_value *[]){a, b}); /* releases both on failure */
    return t ? t : ax_error_oom(cx);
}

/* Reduction builtins: sum prod mean var std max min argmax argmin all any cumsum cumprod. */
#include "builtins_lib.h"

#include <stdlib.h>
#include <string.h>

/* The parsed arguments of a reduction. */
typedef struct reduction {
    ax_array *x; /* owned */
    int naxes;
    int axes[AX_MAX_RANK];
    int axis; /* single-axis functions: -1 for None (flattened) */
    bool keepdims;
    int dtype; /* -1: default */
    double ddof;
} reduction;

static int find(const char *const *names, const char *name) {
    for (int i = 0; names[i]; i++)
        if (!strcmp(names[i], name)) return i;
    return -1;
}

/* Parses (a, axis, ...) for the parameters in `names` (a subset of a, axis, dtype, keepdims,
 * ddof). `single` reads one axis (argmax, cumsum) instead of a set of axes. */
static bool parse(ax_interp *in, ax_value *self, const ax_args *args, const char *const *names,
                  int maxpos, bool single, reduction *r) {
    ax_value *v[8];
    const char *f = self->builtin->name;
    memset(r, 0, sizeof *r);
    r->dtype = -1;
    if (!ax_bi_parse(in, args, f, names, maxpos, v) || !ax_bi_required(in, v[0], f, "a"))
        return false;
    int ia = find(names, "axis"), id = find(names, "dtype"), ik = find(names, "keepdims"),
        idd = find(names, "ddof");
    r->x = ax_np_asarray(in, v[0], f);
    if (!r->x) return false;
    ax_value *axis = ia >= 0 ? v[ia] : NULL;
    bool ok = single ? ax_bi_axis(in, axis, r->x->ndim, AX_BI_NO_AXIS, true, &r->axis)
                     : ax_bi_axes(in, axis, r->x->ndim, &r->naxes, r->axes);
    ok = ok && (id < 0 || ax_bi_dtype(in, v[id], &r->dtype));
    ok = ok && (ik < 0 || ax_bi_bool(in, v[ik], "keepdims", false, &r->keepdims));
    ok = ok && (idd < 0 || ax_bi_double(in, v[idd], "ddof", 0, &r->ddof));
    if (!ok) {
        ax_array_release(r->x);
        r->x = NULL;
    }
    return ok;
}

static ax_value *finish_take(ax_interp *in, reduction *r, ax_array *result) {
    ax_array_release(r->x);
    return ax_np_wrap_take(in, result);
}

static const char *const sum_names[] = {"a", "axis", "dtype", "keepdims", NULL};

static ax_value *bi_sum(ax_interp *in, ax_value *self, const ax_args *args) {
    reduction r;
    if (!parse(in, self, args, sum_names, 3, false, &r)) return NULL;
    return finish_take(
        in, &r, ax_np_sum(in->cx, AX_P_REDUCE_SUM, r.x, r.naxes, r.axes, r.keepdims, r.dtype));
}

static ax_value *bi_prod(ax_interp *in, ax_value *self, const ax_args *args) {
    reduction r;
    if (!parse(in, self, args, sum_names, 3, false, &r)) return NULL;
    return finish_take(
        in, &r, ax_np_sum(in->cx, AX_P_REDUCE_PROD, r.x, r.naxes, r.axes, r.keepdims, r.dtype));
}

static ax_value *bi_mean(ax_interp *in, ax_value *self, const ax_args *args) {
    reduction r;
    if (!parse(in, self, args, sum_names, 3, false, &r)) return NULL;
    return finish_take(in, &r, ax_np_mean(in->cx, r.x, r.naxes, r.axes, r.keepdims, r.dtype));
}

static const char *const var_names[] = {"a", "axis", "dtype", "ddof", "keepdims", NULL};

static ax_value *var_std(ax_interp *in, ax_value *self, const ax_args *args, bool std) {
    reduction r;
    if (!parse(in, self, args, var_names, 3, false, &r)) return NULL;
    ax_array *x =
        r.dtype >= 0 ? ax_np_astype(in->cx, r.x, (ax_dtype)r.dtype, false) : ax_array_retain(r.x);
    ax_array *v = ax_np_var(in->cx, x, r.naxes, r.axes, r.keepdims, r.ddof, std);
    ax_array_release(x);
    return finish_take(in, &r, v);
}

static ax_value *bi_var(ax_interp *in, ax_value *self, const ax_args *args) {
    return var_std(in, self, args, false);
}
static ax_value *bi_std(ax_interp *in, ax_value *self, const ax_args *args) {
    return var_std(in, self, args, true);
}

/* max(a, b, ...) of scalars is the Python form: the elementwise maximum of the arguments. */
static ax_value *pairwise(ax_interp *in, const ax_args *args, ax_prim p, const char *name) {
    ax_array *acc = ax_np_asarray(in, args->pos[0], name);
    for (int i = 1; i < args->n && acc; i++) {
        ax_array *b = ax_np_asarray(in, args->pos[i], name);
        ax_array *m = ax_np_binary(in->cx, p, name, acc, b);
        ax_array_release(b);
        ax_array_release(acc);
        acc = m;
    }
    return ax_np_wrap_take(in, acc);
}

static bool scalar_first(const ax_args *args) {
    if (args->n < 2 || args->nkw) return false;
    ax_value *v = args->pos[0];
    return v->kind == AX_V_ARRAY && v->arr->ndim == 0;
}

static const char *const max_names[] = {"a", "axis", "keepdims", NULL};

/* Python's max(iterable, key=..., default=...) / max(a, b, key=...): the prelude's
 * _extremum_by_key compares key(item) for any items (strings, tuples, records, ...). */
static ax_value *extremum_by_key(ax_interp *in, const ax_args *args, bool max) {
    ax_value *key = ax_bi_kwarg(args, "key"), *dflt = ax_bi_kwarg(args, "default");
    const char *name = max ? "max" : "min";
    if (!ax_bi_keywords(in, args, name, (const char *const[]){"key", "default", NULL})) return NULL;
    if (args->n == 0) return ax_error(in->cx, AX_ERR_TYPE, "%s expected at least 1 argument", name);
    if (args->n > 1 && dflt)
        return ax_error(in->cx, AX_ERR_TYPE,
                        "Cannot specify a default for %s() with multiple positional arguments",
                        name);
    ax_value *fn = ax_interp_lookup(in, "_extremum_by_key");
    if (!fn) return ax_error(in->cx, AX_ERR_RUNTIME, "%s(key=...) needs the prelude", name);
    ax_value **items = calloc((size_t)args->n, sizeof *items);
    if (!items) return ax_error_oom(in->cx);
    for (int i = 0; i < args->n; i++) items[i] = ax_value_retain(args->pos[i]);
    ax_value *seq = args->n == 1 ? NULL : ax_value_tuple(args->n, items);
    if (args->n == 1) ax_value_release(items[0]);
    free(items);
    ax_value *call[5] = {args->n == 1 ? args->pos[0] : seq, key ? key : ax_none(),
                         ax_bi_bool_value(in, max), dflt ? dflt : ax_none(),
                         ax_bi_bool_value(in, dflt != NULL)};
    ax_value *r = NULL;
    if (call[0] && call[2] && call[4]) {
        ax_args a = {.n = 5, .pos = call};
        r = ax_call(in, fn, &a);
    } else if (!ax_error_pending(in->cx)) {
        ax_error_oom(in->cx);
    }
    if (seq) ax_value_release(seq);
    if (call[2]) ax_value_release(call[2]);
    if (call[4]) ax_value_release(call[4]);
    return r;
}

/* Items that are not array data (strings, tuples such as (score, name), ...): Python's
 * comparison, not an array's (nested lists of numbers stay NumPy's: max([[1, 2], [3, 4]]) is 4). */
static bool has_non_numbers(const ax_args *args) {
    const ax_value *seq = args->n == 1 ? args->pos[0] : NULL;
    if (!seq || (seq->kind != AX_V_LIST && seq->kind != AX_V_TUPLE && seq->kind != AX_V_SET))
        return false;
    for (int i = 0; i < seq->n; i++)
        if (seq->items[i]->kind != AX_V_ARRAY && seq->items[i]->kind != AX_V_LIST) return true;
    return false;
}

static ax_value *extremum(ax_interp *in, ax_value *self, const ax_args *args, bool max) {
    if (ax_bi_kwarg(args, "key") || ax_bi_kwarg(args, "default") || has_non_numbers(args))
        return extremum_by_key(in, args, max);
    if (scalar_first(args))
        return pairwise(in, args, max ? AX_P_MAX : AX_P_MIN, max ? "maximum" : "minimum");
    reduction r;
    if (!parse(in, self, args, max_names, 2, false, &r)) return NULL;
    return finish_take(in, &r,
                       ax_np_extremum(in->cx, max ? AX_P_REDUCE_MAX : AX_P_REDUCE_MIN, r.x, r.naxes,
                                      r.axes, r.keepdims));
}

static ax_value *bi_max(ax_interp *in, ax_value *self, const ax_args *args) {
    return extremum(in, self, args, true);
}
static ax_value *bi_min(ax_interp *in, ax_value *self, const ax_args *args) {
    return extremum(in, self, args, false);
}

static ax_value *all_any(ax_interp *in, ax_value *self, const ax_args *args, bool all) {
    reduction r;
    if (!parse(in, self, args, max_names, 2, false, &r)) return NULL;
    return finish_take(in, &r, ax_np_all_any(in->cx, all, r.x, r.naxes, r.axes, r.keepdims));
}

static ax_value *bi_all(ax_interp *in, ax_value *self, const ax_args *args) {
    return all_any(in, self, args, true);
}
static ax_value *bi_any(ax_interp *in, ax_value *self, const ax_args *args) {
    return all_any(in, self, args, false);
}

static ax_value *argext(ax_interp *in, ax_value *self, const ax_args *args, bool max) {
    reduction r;
    if (!parse(in, self, args, max_names, 2, true, &r)) return NULL;
    return finish_take(in, &r, ax_np_argext(in->cx, max, r.x, r.axis, r.keepdims));
}

static ax_value *bi_argmax(ax_interp *in, ax_value *self, const ax_args *args) {
    return argext(in, self, args, true);
}
static ax_value *bi_argmin(ax_interp *in, ax_value *self, const ax_args *args) {
    return argext(in, self, args, false);
}

static const char *const cum_names[] = {"a", "axis", "dtype", NULL};

static ax_value *cumulative(ax_interp *in, ax_value *self, const ax_args *args, ax_prim p) {
    reduction r;
    if (!parse(in, self, args, cum_names, 3, true, &r)) return NULL;
    return finish_take(in, &r, ax_np_cumulative(in->cx, p, r.x, r.axis, r.dtype));
}

static ax_value *bi_cumsum(ax_interp *in, ax_value *self, const ax_args *args) {
    return cumulative(in, self, args, AX_P_CUMSUM);
}
static ax_value *bi_cumprod(ax_interp *in, ax_value *self, const ax_args *args) {
    return cumulative(in, self, args, AX_P_CUMPROD);
}

/* count_nonzero(a, axis=None, keepdims=False): the number of nonzero elements. */
static ax_value *bi_count_nonzero(ax_interp *in, ax_value *self, const ax_args *args) {
    reduction r;
    if (!parse(in, self, args, max_names, 2, false, &r)) return NULL;
    ax_array *b = ax_np_to_bool(in->cx, r.x);
    ax_array *s = ax_np_sum(in->cx, AX_P_REDUCE_SUM, b, r.naxes, r.axes, r.keepdims, -1);
    ax_array_release(b);
    return finish_take(in, &r, s);
}

/* ptp(a, axis=None, keepdims=False): max - min. */
static ax_value *bi_ptp(ax_interp *in, ax_value *self, const ax_args *args) {
    reduction r;
    if (!parse(in, self, args, max_names, 2, false, &r)) return NULL;
    ax_ctx *cx = in->cx;
    ax_array *hi = ax_np_extremum(cx, AX_P_REDUCE_MAX, r.x, r.naxes, r.axes, r.keepdims);
    ax_array *lo =
        hi ? ax_np_extremum(cx, AX_P_REDUCE_MIN, r.x, r.naxes, r.axes, r.keepdims) : NULL;
    ax_array *d = lo ? ax_np_binary(cx, AX_P_SUB, "subtract", hi, lo) : NULL;
    ax_array_release(hi);
    ax_array_release(lo);
    return finish_take(in, &r, d);
}

#define NP AX_BI_NP

const ax_builtin_def ax_builtins_reduce[] = {
    {"sum", bi_sum, "sum(a, axis=None, dtype=None, keepdims=False): sum of elements", NP},
    {"prod", bi_prod, "prod(a, axis=None, dtype=None, keepdims=False): product of elements", NP},
    {"mean", bi_mean, "mean(a, axis=None, dtype=None, keepdims=False): arithmetic mean", NP},
    {"var", bi_var, "var(a, axis=None, ddof=0, keepdims=False): variance", NP},
    {"std", bi_std, "std(a, axis=None, ddof=0, keepdims=False): standard deviation", NP},
    {"max", bi_max, "max(a, axis=None, keepdims=False): largest element (max(a, b): larger)", NP},
    {"min", bi_min, "min(a, axis=None, keepdims=False): smallest element (min(a, b): smaller)", NP},
    {"amax", bi_max, "amax(a, axis=None, keepdims=False): largest element", NP},
    {"amin", bi_min, "amin(a, axis=None, keepdims=False): smallest element", NP},
    {"ptp", bi_ptp, "ptp(a, axis=None, keepdims=False): max - min", NP},
    {"argmax", bi_argmax, "argmax(a, axis=None, keepdims=False): index of the largest element", NP},
    {"argmin", bi_argmin, "argmin(a, axis=None, keepdims=False): index of the smallest element",
     NP},
    {"all", bi_all, "all(a, axis=None, keepdims=False): True if every element is true", NP},
    {"any", bi_any, "any(a, axis=None, keepdims=False): True if some element is true", NP},
    {"cumsum", bi_cumsum, "cumsum(a, axis=None, dtype=None): cumulative sum", NP},
    {"cumprod", bi_cumprod, "cumprod(a, axis=None, dtype=None): cumulative product", NP},
    {"count_nonzero", bi_count_nonzero,
     "count_nonzero(a, axis=None, keepdims=False): number of nonzero elements", NP},
    {NULL, NULL, NULL, 0},
};

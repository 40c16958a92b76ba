/* Argument matching and conversion for the builtins. */
#include "builtins_lib.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

static int name_index(const char *const *names, const char *name) {
    for (int i = 0; names[i]; i++)
        if (!strcmp(names[i], name)) return i;
    return -1;
}

bool ax_bi_parse(ax_interp *in, const ax_args *args, const char *fname, const char *const *names,
                 int maxpos, ax_value **vals) {
    int nnames = 0;
    while (names[nnames]) nnames++;
    for (int i = 0; i < nnames; i++) vals[i] = NULL;
    if (args->n > maxpos) {
        ax_error(in->cx, AX_ERR_TYPE, "%s() takes at most %d positional argument%s (%d given)",
                 fname, maxpos, maxpos == 1 ? "" : "s", args->n);
        return false;
    }
    for (int i = 0; i < args->n; i++) vals[i] = args->pos[i];
    for (int k = 0; k < args->nkw; k++) {
        int i = name_index(names, args->kwnames[k]);
        if (i < 0) {
            ax_error(in->cx, AX_ERR_TYPE, "%s() got an unexpected keyword argument '%s'", fname,
                     args->kwnames[k]);
            return false;
        }
        if (vals[i]) {
            ax_error(in->cx, AX_ERR_TYPE, "%s() got multiple values for argument '%s'", fname,
                     names[i]);
            return false;
        }
        vals[i] = args->kwvals[k];
    }
    return true;
}

bool ax_bi_keywords(ax_interp *in, const ax_args *args, const char *fname,
                    const char *const *names) {
    for (int k = 0; k < args->nkw; k++)
        if (name_index(names, args->kwnames[k]) < 0) {
            ax_error(in->cx, AX_ERR_TYPE, "%s() got an unexpected keyword argument '%s'", fname,
                     args->kwnames[k]);
            return false;
        }
    return true;
}

ax_value *ax_bi_kwarg(const ax_args *args, const char *name) {
    for (int k = 0; k < args->nkw; k++)
        if (!strcmp(args->kwnames[k], name)) return args->kwvals[k];
    return NULL;
}

bool ax_bi_required(ax_interp *in, ax_value *v, const char *fname, const char *name) {
    if (v) return true;
    ax_error(in->cx, AX_ERR_TYPE, "%s() missing required argument '%s'", fname, name);
    return false;
}

/* The concrete rank-0 array of a scalar argument, or NULL with an error. */
static const ax_array *scalar_of(ax_interp *in, ax_value *v, const char *what) {
    if (v->kind != AX_V_ARRAY || v->arr->ndim != 0) {
        char d[160];
        ax_value_describe(d, sizeof d, v);
        return ax_error(in->cx, AX_ERR_TYPE, "%s must be a number, got %s", what, d);
    }
    if (!ax_np_is_concrete(v->arr))
        return ax_error(in->cx, AX_ERR_CONCRETIZATION,
                        "%s must be a concrete value, but it was traced (by jit, vmap or grad); "
                        "pass it as a static argument",
                        what);
    return v->arr;
}

bool ax_bi_int(ax_interp *in, ax_value *v, const char *what, int64_t dflt, int64_t *out) {
    if (!v || v->kind == AX_V_NONE) {
        *out = dflt;
        return true;
    }
    const ax_array *a = scalar_of(in, v, what);
    if (!a) return false;
    if (ax_dtype_is_float(a->dtype)) {
        ax_error(in->cx, AX_ERR_TYPE, "%s must be an integer, got a float", what);
        return false;
    }
    *out = ax_array_get_i64(a, 0);
    return true;
}

bool ax_bi_double(ax_interp *in, ax_value *v, const char *what, double dflt, double *out) {
    if (!v || v->kind == AX_V_NONE) {
        *out = dflt;
        return true;
    }
    const ax_array *a = scalar_of(in, v, what);
    if (!a) return false;
    *out = ax_array_get_f64(a, 0);
    return true;
}

bool ax_bi_bool(ax_interp *in, ax_value *v, const char *what, bool dflt, bool *out) {
    if (!v || v->kind == AX_V_NONE) {
        *out = v ? false : dflt;
        return true;
    }
    const ax_array *a = scalar_of(in, v, what);
    if (!a) return false;
    *out = ax_array_get_f64(a, 0) != 0;
    return true;
}

bool ax_bi_dtype(ax_interp *in, ax_value *v, int *out) {
    *out = -1;
    if (!v || v->kind == AX_V_NONE) return true;
    ax_dtype t;
    if (v->kind == AX_V_DTYPE) {
        *out = (int)v->dtype;
        return true;
    }
    if (v->kind == AX_V_STR && ax_dtype_parse(v->str, &t)) {
        *out = (int)t;
        return true;
    }
    if (v->kind == AX_V_BUILTIN) { /* dtype=float, int, bool as in NumPy code */
        const char *n = v->builtin->name;
        if (!strcmp(n, "float")) *out = (int)ax_np_default_float(in->cx);
        if (!strcmp(n, "int")) *out = (int)ax_np_default_int(in->cx);
        if (!strcmp(n, "bool")) *out = (int)AX_BOOL;
        if (*out >= 0) return true;
    }
    char d[160];
    ax_value_describe(d, sizeof d, v);
    ax_error(in->cx, AX_ERR_TYPE, "dtype must be a dtype such as f32 or float64, got %s", d);
    return false;
}

bool ax_bi_shape(ax_interp *in, ax_value *v, const char *what, int *ndim, int64_t *shape) {
    if (v->kind == AX_V_RANGE) { /* read as the tuple of its ints */
        ax_value *t = ax_range_tuple(in, v, 1024);
        bool ok = t && ax_bi_shape(in, t, what, ndim, shape);
        ax_value_release(t);
        return ok;
    }
    if (v->kind == AX_V_ARRAY && v->arr->ndim == 1 && ax_dtype_is_int(v->arr->dtype)) {
        if (!ax_np_is_concrete(v->arr)) {
            ax_error(in->cx, AX_ERR_CONCRETIZATION,
                     "%s must be a concrete value, but it was traced (by jit, vmap or grad); "
                     "pass it as a static argument",
                     what);
            return false;
        }
        if (v->arr->size > AX_MAX_RANK) /* (an array of rank 1: no more than INT64_MAX) */
            return ax_rank_check(in->cx, what,
                                 v->arr->size > INT_MAX ? INT_MAX : (int)v->arr->size);
        *ndim = (int)v->arr->size;
        for (int i = 0; i < *ndim; i++) shape[i] = ax_array_get_i64(v->arr, i);
        return true;
    }
    if (v->kind != AX_V_TUPLE && v->kind != AX_V_LIST) {
        *ndim = 1;
        return ax_bi_int(in, v, what, 0, &shape[0]);
    }
    if (!ax_rank_check(in->cx, what, v->n)) return false;
    *ndim = v->n;
    for (int i = 0; i < v->n; i++)
        if (!ax_bi_int(in, v->items[i], what, 0, &shape[i])) return false;
    return true;
}

static int compare_ints(const void *a, const void *b) {
    return *(const int *)a - *(const int *)b;
}

bool ax_bi_axes(ax_interp *in, ax_value *v, int ndim, int *naxes, int *axes) {
    if (!v || v->kind == AX_V_NONE) {
        *naxes = ndim;
        for (int i = 0; i < ndim; i++) axes[i] = i;
        return true;
    }
    if (v->kind == AX_V_RANGE) { /* read as the tuple of its ints */
        ax_value *t = ax_range_tuple(in, v, 1024);
        bool ok = t && ax_bi_axes(in, t, ndim, naxes, axes);
        ax_value_release(t);
        return ok;
    }
    bool seq = v->kind == AX_V_TUPLE || v->kind == AX_V_LIST;
    int n = seq ? v->n : 1;
    for (int i = 0; i < n; i++) {
        ax_value *item = seq ? v->items[i] : v;
        int64_t a;
        int axis;
        if (!ax_bi_int(in, item, "axis", 0, &a) || !ax_np_axis(in->cx, a, ndim, &axis))
            return false;
        if (i < AX_MAX_RANK) axes[i] = axis;
    }
    if (n > ndim) { /* every axis is in range: some is repeated */
        ax_error(in->cx, AX_ERR_VALUE, "duplicate value in 'axis'");
        return false;
    }
    qsort(axes, (size_t)n, sizeof *axes, compare_ints);
    for (int i = 1; i < n; i++)
        if (axes[i] == axes[i - 1]) {
            ax_error(in->cx, AX_ERR_VALUE, "duplicate value in 'axis'");
            return false;
        }
    *naxes = n;
    return true;
}

bool ax_bi_axis(ax_interp *in, ax_value *v, int ndim, int64_t dflt, bool allow_none, int *axis) {
    bool none = v ? v->kind == AX_V_NONE : dflt == AX_BI_NO_AXIS;
    if (none) {
        *axis = -1;
        if (allow_none) return true;
        ax_error(in->cx, AX_ERR_TYPE, "axis must be an integer, not None");
        return false;
    }
    int64_t a;
    return ax_bi_int(in, v, "axis", dflt, &a) && ax_np_axis(in->cx, a, ndim, axis);
}

void ax_bi_free_arrays(int n, ax_array **xs) {
    if (!xs) return;
    for (int i = 0; i < n; i++) ax_array_release(xs[i]);
    free(xs);
}

/* The rows of an array along axis 0 (x[0], x[1], ...) as separate arrays. */
static bool array_rows(ax_interp *in, ax_array *x, int *n, ax_array ***out) {
    if (x->ndim == 0) {
        ax_error(in->cx, AX_ERR_TYPE, "iteration over a 0-d array");
        return false;
    }
    int64_t count = x->shape[0];
    if (count > INT_MAX) {
        char t[200];
        ax_array_type_format(t, sizeof t, x);
        ax_error(in->cx, AX_ERR_VALUE, "the %lld rows of %s are too many to iterate over",
                 (long long)count, t);
        return false;
    }
    ax_array **xs = calloc((size_t)(count ? count : 1), sizeof *xs);
    if (!xs) {
        ax_error_oom(in->cx);
        return false;
    }
    for (int64_t i = 0; i < count; i++) {
        ax_params p = {.ndim = x->ndim};
        for (int d = 0; d < x->ndim; d++) {
            p.lo[d] = d ? 0 : i;
            p.hi[d] = d ? x->shape[d] : i + 1;
            p.step[d] = 1;
        }
        ax_array *row = ax_bind1(in->cx, AX_P_SLICE, 1, &x, &p);
        int zero = 0;
        xs[i] = row ? ax_np_squeeze(in->cx, row, 1, &zero) : NULL;
        ax_array_release(row);
        if (!xs[i]) {
            ax_bi_free_arrays((int)i, xs);
            return false;
        }
    }
    *n = (int)count;
    *out = xs;
    return true;
}

bool ax_bi_arrays(ax_interp *in, ax_value *v, const char *what, int *n, ax_array ***out) {
    if (v->kind == AX_V_ARRAY) return array_rows(in, v->arr, n, out);
    if (v->kind != AX_V_LIST && v->kind != AX_V_TUPLE) {
        ax_error(in->cx, AX_ERR_TYPE, "%s expects a list or tuple of arrays, got %s", what,
                 ax_value_kind_name(v->kind));
        return false;
    }
    ax_array **xs = calloc((size_t)(v->n ? v->n : 1), sizeof *xs);
    if (!xs) {
        ax_error_oom(in->cx);
        return false;
    }
    for (int i = 0; i < v->n; i++) {
        xs[i] = ax_np_asarray(in, v->items[i], what);
        if (!xs[i]) {
            ax_bi_free_arrays(i, xs);
            return false;
        }
    }
    *n = v->n;
    *out = xs;
    return true;
}

const char *ax_bi_str(ax_interp *in, ax_value *v, const char *what) {
    if (v && v->kind == AX_V_STR) return v->str;
    ax_error(in->cx, AX_ERR_TYPE, "%s must be a string", what);
    return NULL;
}

ax_value *ax_bi_int_value(ax_interp *in, int64_t v) {
    return ax_value_int(in, v);
}
ax_value *ax_bi_float_value(ax_interp *in, double v) {
    return ax_value_float(in, v);
}
ax_value *ax_bi_bool_value(ax_interp *in, bool v) {
    return ax_value_bool(in, v);
}

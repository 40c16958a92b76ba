/* Helpers for builtins: reading arguments and converting values to C numbers and arrays. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "../compiler/primitive.h"
#include "../compiler/trace.h"
#include "interp.h"

ax_value *ax_arg(const ax_args *args, int pos, const char *name) {
    if (!args) return NULL;
    if (pos >= 0 && pos < args->n) return args->pos[pos];
    if (name)
        for (int i = 0; i < args->nkw; i++)
            if (args->kwnames[i] && strcmp(args->kwnames[i], name) == 0) return args->kwvals[i];
    return NULL;
}

bool ax_args_check(ax_interp *in, const ax_args *args, const char *fname, int maxpos,
                   const char *const *names) {
    if (args->n > maxpos) {
        ax_error(in->cx, AX_ERR_TYPE, "%s() takes at most %d positional argument%s but %d %s given",
                 fname, maxpos, maxpos == 1 ? "" : "s", args->n, args->n == 1 ? "was" : "were");
        return false;
    }
    for (int k = 0; k < args->nkw; k++) {
        const char *kw = args->kwnames[k];
        int found = -1;
        for (int i = 0; names && names[i]; i++)
            if (strcmp(names[i], kw) == 0) found = i;
        if (found < 0) {
            ax_error(in->cx, AX_ERR_TYPE, "%s() got an unexpected keyword argument '%s'", fname,
                     kw);
            return false;
        }
        if (found < args->n) {
            ax_error(in->cx, AX_ERR_TYPE, "%s() got multiple values for argument '%s'", fname, kw);
            return false;
        }
    }
    return true;
}

/* ---- scalars ---- */

/* The concrete rank-0 (or one-element) array behind v, or NULL with the right error. */
static ax_array *concrete_scalar(ax_interp *in, ax_value *v, const char *what) {
    char desc[128];
    ax_value_describe(desc, sizeof desc, v);
    if (!v || v->kind != AX_V_ARRAY) {
        return ax_error(in->cx, AX_ERR_TYPE, "%s must be a number, not %s", what, desc);
    }
    if (v->arr->size != 1) {
        return ax_error(in->cx, AX_ERR_TYPE, "%s must be a scalar, not an array of type %s", what,
                        desc);
    }
    ax_array *c = ax_concrete_value(in->cx, v->arr);
    if (!c || !c->buf) {
        ax_trace *t = ax_trace_top(in->cx);
        return ax_error(in->cx, AX_ERR_CONCRETIZATION,
                        "%s needs a concrete value, but it is a traced %s value (under %s its "
                        "value is not known while tracing; pass it as a static argument)",
                        what, desc, t && t->name ? t->name : "a transformation");
    }
    return c;
}

bool ax_value_to_int(ax_interp *in, ax_value *v, const char *what, int64_t *out) {
    ax_array *a = concrete_scalar(in, v, what);
    if (!a) return false;
    if (ax_dtype_is_float(a->dtype)) {
        char desc[128];
        ax_value_describe(desc, sizeof desc, v);
        ax_error(in->cx, AX_ERR_TYPE, "%s must be an integer, not a float (%s)", what, desc);
        return false;
    }
    *out = ax_array_get_i64(a, 0);
    return true;
}

bool ax_value_to_double(ax_interp *in, ax_value *v, const char *what, double *out) {
    ax_array *a = concrete_scalar(in, v, what);
    if (!a) return false;
    *out = ax_array_get_f64(a, 0);
    return true;
}

bool ax_value_truthy(ax_interp *in, ax_value *v, bool *out) {
    switch (v->kind) {
    case AX_V_NONE:
        *out = false;
        return true;
    case AX_V_STR:
        *out = v->str[0] != 0;
        return true;
    case AX_V_TUPLE:
    case AX_V_LIST:
    case AX_V_DICT:
    case AX_V_SET:
        *out = v->n > 0;
        return true;
    case AX_V_RANGE:
        *out = ax_range_len(v) > 0;
        return true;
    case AX_V_ARRAY:
        break;
    default:
        *out = true;
        return true;
    }
    ax_array *a = v->arr;
    char desc[128];
    ax_value_describe(desc, sizeof desc, v);
    if (a->size > 1) {
        ax_error(in->cx, AX_ERR_VALUE,
                 "the truth value of an array with more than one element is ambiguous; use any() "
                 "or all() (the value is %s)",
                 desc);
        return false;
    }
    if (a->size == 0) {
        *out = false;
        return true;
    }
    ax_array *c = ax_concrete_value(in->cx, a);
    if (!c || !c->buf) {
        ax_trace *t = ax_trace_top(in->cx);
        ax_error(in->cx, AX_ERR_CONCRETIZATION,
                 "the truth value of a traced %s value is not known under %s; branch with "
                 "where(cond, x, y) or cond(pred, true_fn, false_fn) instead",
                 desc, t && t->name ? t->name : "a transformation");
        return false;
    }
    *out = ax_array_get_f64(c, 0) != 0;
    return true;
}

/* ---- nested lists of numbers to arrays ---- */

typedef struct {
    int ndim;
    int64_t shape[AX_MAX_RANK];
    ax_dtype dtype;
    bool weak, any_leaf, any_tracer;
    int64_t nleaves;
} nest_info;

static bool is_sequence(const ax_value *v) {
    return v->kind == AX_V_LIST || v->kind == AX_V_TUPLE;
}

/* Finds the shape (the leading sequence dims, then the shape of the leaf arrays), checks that
 * the nesting is rectangular, and promotes the leaves' dtypes. */
static bool nest_scan(ax_interp *in, const ax_value *v, int depth, nest_info *ni,
                      const char *what) {
    if (is_sequence(v)) {
        if (depth >= AX_MAX_RANK) {
            ax_error(in->cx, AX_ERR_VALUE, "%s is nested too deeply", what);
            return false;
        }
        if (ni->ndim <= depth && !ni->any_leaf) {
            ni->ndim = depth + 1;
            ni->shape[depth] = v->n;
        } else if (ni->ndim <= depth || ni->shape[depth] != v->n) {
            ax_error(in->cx, AX_ERR_VALUE,
                     "%s has an inhomogeneous shape (nested sequences of "
                     "different lengths)",
                     what);
            return false;
        }
        for (int i = 0; i < v->n; i++)
            if (!nest_scan(in, v->items[i], depth + 1, ni, what)) return false;
        return true;
    }
    if (v->kind != AX_V_ARRAY) {
        char desc[64];
        ax_value_describe(desc, sizeof desc, v);
        ax_error(in->cx, AX_ERR_TYPE, "%s must be an array or numbers, not %s", what, desc);
        return false;
    }
    const ax_array *a = v->arr;
    if (!ni->any_leaf) {
        if (!ax_rank_check(in->cx, what, depth + a->ndim)) return false;
        if (ni->ndim != depth) { /* a leaf where a sequence was seen at this depth */
            ax_error(in->cx, AX_ERR_VALUE, "%s has an inhomogeneous shape", what);
            return false;
        }
        for (int i = 0; i < a->ndim; i++) ni->shape[depth + i] = a->shape[i];
        ni->ndim = depth + a->ndim;
        ni->dtype = a->dtype;
        ni->weak = a->weak;
        ni->any_leaf = true;
    } else {
        if (depth + a->ndim != ni->ndim ||
            !ax_shape_equal(a->ndim, a->shape, a->ndim, ni->shape + depth)) {
            ax_error(in->cx, AX_ERR_VALUE, "%s has an inhomogeneous shape", what);
            return false;
        }
        bool weak;
        ni->dtype = ax_dtype_promote(ni->dtype, ni->weak, a->dtype, a->weak, &weak);
        ni->weak = weak;
    }
    if (a->tracer) ni->any_tracer = true;
    ni->nleaves++;
    return true;
}

/* Copies the leaves, converted to the result dtype, in row-major order. */
static void nest_copy(const ax_value *v, ax_dtype dtype, char **dst) {
    if (is_sequence(v)) {
        for (int i = 0; i < v->n; i++) nest_copy(v->items[i], dtype, dst);
        return;
    }
    const ax_array *a = v->arr;
    size_t esize = ax_dtype_size(dtype), asize = ax_dtype_size(a->dtype);
    const char *base = ax_array_data(a);
    for (int64_t k = 0; k < a->size; k++) {
        ax_convert_element(dtype, *dst, a->dtype, base + ax_array_flat_offset(a, k) * asize);
        *dst += esize;
    }
}

/* Builds the array with primitives (for traced leaves): each leaf converted and given leading
 * unit axes, then concatenated level by level. */
static ax_array *nest_bind(ax_interp *in, const ax_value *v, int depth, const nest_info *ni) {
    ax_params p;
    if (!is_sequence(v)) {
        memset(&p, 0, sizeof p);
        p.dtype = ni->dtype;
        ax_array *x = v->arr;
        ax_array *conv =
            x->dtype == ni->dtype ? ax_array_retain(x) : ax_bind1(in->cx, AX_P_CONVERT, 1, &x, &p);
        if (!conv || depth == 0) return conv;
        memset(&p, 0, sizeof p);
        for (int i = 0; i < depth; i++) p.shape[i] = 1;
        for (int i = 0; i < x->ndim; i++) p.shape[depth + i] = x->shape[i];
        p.ndim = depth + x->ndim;
        ax_array *r = ax_bind1(in->cx, AX_P_RESHAPE, 1, &conv, &p);
        ax_array_release(conv);
        return r;
    }
    ax_array **parts = calloc((size_t)(v->n ? v->n : 1), sizeof *parts);
    if (!parts) return ax_error_oom(in->cx);
    ax_array *r = NULL;
    int i = 0;
    for (; i < v->n; i++)
        if (!(parts[i] = nest_bind(in, v->items[i], depth + 1, ni))) break;
    if (i == v->n) {
        memset(&p, 0, sizeof p);
        p.naxes = 1;
        p.axes[0] = depth;
        r = ax_bind1(in->cx, AX_P_CONCATENATE, v->n, parts, &p);
    }
    for (int k = 0; k < i; k++) ax_array_release(parts[k]);
    free(parts);
    return r;
}

ax_array *ax_value_to_array(ax_interp *in, ax_value *v, const char *what) {
    if (v && v->kind == AX_V_ARRAY) return ax_array_retain(v->arr);
    if (v && v->kind == AX_V_RANGE) { /* as the tuple of its ints */
        ax_value *t = ax_range_tuple(in, v, INT_MAX);
        ax_array *a = t ? ax_value_to_array(in, t, what) : NULL;
        ax_value_release(t);
        return a;
    }
    if (!v || !is_sequence(v)) {
        char desc[64];
        ax_value_describe(desc, sizeof desc, v);
        return ax_error(in->cx, AX_ERR_TYPE, "%s must be an array or a list of numbers, not %s",
                        what, desc);
    }
    nest_info ni = {.dtype = ax_dtype_default_float(in->cx->x64)};
    if (!nest_scan(in, v, 0, &ni, what)) return NULL;
    if (ni.any_tracer && ni.nleaves > 0) {
        ax_array *r = nest_bind(in, v, 0, &ni);
        if (r) r->weak = false;
        return r;
    }
    ax_array *r = ax_array_new(in->cx, ni.dtype, ni.ndim, ni.shape);
    if (!r) return NULL;
    char *dst = ax_array_data(r);
    if (ni.nleaves > 0) nest_copy(v, ni.dtype, &dst);
    return r;
}

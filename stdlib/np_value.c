/* Values as arrays: numbers, arrays and nested lists/tuples of them, as jnp.asarray sees them. */
#include "np_lib.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

ax_array *ax_np_value_array(ax_value *v) {
    return v && v->kind == AX_V_ARRAY ? v->arr : NULL;
}

ax_value *ax_np_wrap_take(ax_interp *in, ax_array *a) {
    (void)in;
    if (!a) return NULL;
    ax_value *v = ax_value_array(a);
    return v ? v : ax_error_oom(in->cx);
}

/* The leaves of a nested list, checked to form a regular (rectangular) array. */
typedef struct leaves {
    ax_array **items; /* borrowed (from the value, or from `owned`) */
    int n, cap;
    ax_interp *in;
    ax_value **owned; /* the tuples nested ranges read as, released with the leaves */
    int nowned;
    int depth; /* list depth of the leaves; -1 before the first leaf */
    int ndims; /* list dimensions seen so far */
    int64_t dims[AX_MAX_RANK];
} leaves;

static bool inhomogeneous(ax_ctx *cx, const char *what) {
    ax_error(cx, AX_ERR_VALUE,
             "%s: the nested lists have an inhomogeneous shape (they do not form a rectangular "
             "array)",
             what);
    return false;
}

static bool push_leaf(ax_ctx *cx, leaves *c, ax_array *a, int depth, const char *what) {
    if (c->depth < 0) {
        if (c->ndims > depth) return inhomogeneous(cx, what);
        c->depth = depth;
    } else if (depth != c->depth ||
               !ax_shape_equal(a->ndim, a->shape, c->items[0]->ndim, c->items[0]->shape)) {
        return inhomogeneous(cx, what);
    }
    if (c->n == c->cap) {
        int cap = c->cap ? 2 * c->cap : 16;
        ax_array **items = realloc(c->items, (size_t)cap * sizeof *items);
        if (!items) {
            ax_error_oom(cx);
            return false;
        }
        c->items = items;
        c->cap = cap;
    }
    c->items[c->n++] = a;
    return true;
}

/* A range inside a list reads as the tuple of its ints (kept until the leaves are used). */
static bool collect(ax_ctx *cx, ax_value *v, int depth, leaves *c, const char *what);
static bool collect_range(ax_interp *in, ax_value *v, int depth, leaves *c, const char *what) {
    ax_value **owned = realloc(c->owned, (size_t)(c->nowned + 1) * sizeof *owned);
    if (!owned) return ax_error_oom(in->cx), false;
    c->owned = owned;
    if (!(owned[c->nowned] = ax_range_tuple(in, v, INT_MAX))) return false;
    return collect(in->cx, owned[c->nowned++], depth, c, what);
}

static bool collect(ax_ctx *cx, ax_value *v, int depth, leaves *c, const char *what) {
    if (v->kind == AX_V_ARRAY) return push_leaf(cx, c, v->arr, depth, what);
    if (v->kind == AX_V_RANGE) return collect_range(c->in, v, depth, c, what);
    /* a set reads as its items in order (Python's sum(s), max(s)) */
    if (v->kind != AX_V_LIST && v->kind != AX_V_TUPLE && v->kind != AX_V_SET) {
        ax_error(cx, AX_ERR_TYPE, "%s: expected numbers or arrays, got %s", what,
                 ax_value_kind_name(v->kind));
        return false;
    }
    if (depth >= AX_MAX_RANK) return ax_rank_check(cx, what, depth + 1); /* (false) */
    if (c->depth >= 0 && depth >= c->depth) return inhomogeneous(cx, what);
    if (depth < c->ndims) {
        if (c->dims[depth] != v->n) return inhomogeneous(cx, what);
    } else {
        c->dims[c->ndims++] = v->n;
    }
    for (int i = 0; i < v->n; i++)
        if (!collect(cx, v->items[i], depth + 1, c, what)) return false;
    return true;
}

/* Fills a new array from concrete leaves, converting element by element. */
static ax_array *fill_concrete(ax_ctx *cx, const leaves *c, ax_dtype t, int ndim,
                               const int64_t *shape) {
    ax_array *r = ax_array_new(cx, t, ndim, shape);
    if (!r) return NULL;
    char *dst = ax_array_data(r);
    size_t es = ax_dtype_size(t);
    for (int i = 0; i < c->n; i++) {
        const ax_array *a = c->items[i];
        size_t as = ax_dtype_size(a->dtype);
        const char *src = ax_array_data(a);
        for (int64_t k = 0; k < a->size; k++) {
            ax_convert_element(t, dst, a->dtype, src + ax_array_flat_offset(a, k) * (int64_t)as);
            dst += es;
        }
    }
    return r;
}

/* Stacks leaves that include tracers by concatenation, so that transformations see it. */
static ax_array *stack_traced(ax_ctx *cx, const leaves *c, ax_dtype t, int ndim,
                              const int64_t *shape) {
    ax_array **rows = calloc((size_t)c->n, sizeof *rows);
    if (!rows) return ax_error_oom(cx);
    const ax_array *leaf = c->items[0];
    int64_t one_shape[AX_MAX_RANK + 1] = {1};
    memcpy(one_shape + 1, leaf->shape, (size_t)leaf->ndim * sizeof *leaf->shape);
    bool ok = true;
    for (int i = 0; i < c->n && ok; i++) {
        ax_array *conv = ax_np_astype(cx, c->items[i], t, false);
        rows[i] = ax_np_reshape(cx, conv, leaf->ndim + 1, one_shape);
        ax_array_release(conv);
        ok = rows[i] != NULL;
    }
    ax_array *cat = ok ? ax_np_concatenate(cx, c->n, rows, 0) : NULL;
    ax_array *r = ax_np_reshape(cx, cat, ndim, shape);
    ax_array_release(cat);
    for (int i = 0; i < c->n; i++) ax_array_release(rows[i]);
    free(rows);
    return r;
}

static ax_array *from_leaves(ax_ctx *cx, const leaves *c) {
    int64_t shape[AX_MAX_RANK];
    int ndim = c->depth >= 0 ? c->depth : c->ndims;
    memcpy(shape, c->dims, (size_t)ndim * sizeof *shape);
    if (c->n == 0) return ax_array_zeros(cx, ax_np_default_float(cx), ndim, shape);
    const ax_array *leaf = c->items[0];
    if (!ax_rank_check(cx, "array", ndim + leaf->ndim)) return NULL;
    memcpy(shape + ndim, leaf->shape, (size_t)leaf->ndim * sizeof *shape);
    ndim += leaf->ndim;
    ax_dtype t = ax_np_result_type(c->n, c->items, NULL);
    bool concrete = true;
    for (int i = 0; i < c->n; i++) concrete &= c->items[i]->tracer == NULL;
    return concrete ? fill_concrete(cx, c, t, ndim, shape) : stack_traced(cx, c, t, ndim, shape);
}

/* array(range(...)): its ints, as a list of them would give (int32, or int64 when one does not
 * fit or under x64; an empty one is float, like []), written straight into the array. */
static ax_array *range_array(ax_ctx *cx, const ax_value *r) {
    int64_t n = ax_range_len(r), first = ax_range_item(r, 0),
            last = ax_range_item(r, n ? n - 1 : 0);
    bool fits = first >= INT32_MIN && first <= INT32_MAX && last >= INT32_MIN && last <= INT32_MAX;
    ax_dtype t = n == 0 ? ax_np_default_float(cx) : cx->x64 || !fits ? AX_I64 : AX_I32;
    ax_array *a = ax_array_new(cx, t, 1, &n);
    if (!a) return NULL;
    for (int64_t i = 0; i < n; i++) {
        if ((i & 0xFFFFF) == 0 && ax_ctx_check_interrupt(cx)) {
            ax_array_release(a);
            return NULL;
        }
        int64_t x = ax_range_item(r, i);
        if (t == AX_I64)
            ((int64_t *)ax_array_data(a))[i] = x;
        else
            ((int32_t *)ax_array_data(a))[i] = (int32_t)x;
    }
    return a;
}

ax_array *ax_np_asarray(ax_interp *in, ax_value *v, const char *what) {
    if (!v) return NULL;
    if (v->kind == AX_V_ARRAY) return ax_array_retain(v->arr);
    if (v->kind == AX_V_RANGE) return range_array(in->cx, v);
    leaves c = {.depth = -1, .in = in};
    ax_array *r = collect(in->cx, v, 0, &c, what) ? from_leaves(in->cx, &c) : NULL;
    free(c.items);
    for (int i = 0; i < c.nowned; i++) ax_value_release(c.owned[i]);
    free(c.owned);
    return r;
}

ax_array *ax_np_array(ax_interp *in, ax_value *v, int dtype, const char *what) {
    ax_array *a = ax_np_asarray(in, v, what);
    if (!a || dtype < 0) return a;
    ax_array *r = ax_np_astype(in->cx, a, (ax_dtype)dtype, false);
    ax_array_release(a);
    return r;
}

ax_value *ax_np_call_dtype(ax_interp *in, ax_dtype dtype, const ax_args *args) {
    if (args->n > 1 || args->nkw)
        return ax_error(in->cx, AX_ERR_TYPE, "%s() takes one positional argument",
                        ax_dtype_name(dtype));
    if (args->n == 0) return ax_np_wrap_take(in, ax_array_scalar(in->cx, dtype, 0));
    return ax_np_wrap_take(in, ax_np_array(in, args->pos[0], (int)dtype, ax_dtype_name(dtype)));
}

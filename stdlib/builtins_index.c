/* Index-producing and index-consuming builtins: take, take_along_axis, sort, argsort,
 * one_hot, unique, median. */
#include "builtins_lib.h"

#include <stdlib.h>
#include <string.h>

/* a[indices] along `axis`: moves the axis first, indexes it (under the out-of-bounds mode),
 * and moves the index dimensions back to where the axis was (NumPy's take). */
static ax_array *take_along(ax_interp *in, ax_array *a, ax_value *indices, int axis,
                            ax_index_mode mode, ax_array *fill) {
    ax_ctx *cx = in->cx;
    int perm[AX_MAX_RANK];
    perm[0] = axis;
    for (int i = 0, n = 1; i < a->ndim; i++)
        if (i != axis) perm[n++] = i;
    ax_array *t = ax_np_transpose(cx, a, perm);
    ax_array *ga = t ? ax_np_index_mode(in, t, indices, mode, fill) : NULL;
    ax_array_release(t);
    if (!ga || axis == 0) return ga;
    int k = ga->ndim - (a->ndim - 1), back[AX_MAX_RANK];
    for (int i = 0; i < ga->ndim; i++) back[i] = i < axis ? k + i : i < axis + k ? i - axis : i;
    ax_array *r = ax_np_transpose(cx, ga, back);
    ax_array_release(ga);
    return r;
}

/* The out-of-bounds mode of take and take_along_axis: JAX's, and "wrap" (indices modulo the
 * axis' size, applied to the indices first). */
static bool read_take_mode(ax_interp *in, ax_value *v, bool *wrap, ax_index_mode *mode) {
    *wrap = v && v->kind == AX_V_STR && !strcmp(v->str, "wrap");
    if (*wrap) {
        *mode = AX_INDEX_CHECK;
        return true;
    }
    return ax_np_parse_mode(in, v, false, mode);
}

/* indices % n (for mode="wrap"), as a value. */
static ax_value *wrapped(ax_interp *in, ax_array *idx, int64_t n) {
    ax_array *size = ax_array_scalar_i64(in->cx, idx->dtype, n > 0 ? n : 1);
    ax_array *r = size ? ax_np_binop(in->cx, AX_OP_MOD, idx, size) : NULL;
    ax_array_release(size);
    return ax_np_wrap_take(in, r);
}

static ax_value *bi_take(ax_interp *in, ax_value *self, const ax_args *args) {
    static const char *const names[] = {
        "a",          "indices", "axis", "out", "mode", "unique_indices", "indices_are_sorted",
        "fill_value", NULL};
    ax_value *v[8];
    const char *f = self->builtin->name;
    int axis;
    bool wrap;
    ax_index_mode mode;
    if (!ax_bi_parse(in, args, f, names, 5, v) || !ax_bi_required(in, v[0], f, "a") ||
        !ax_bi_required(in, v[1], f, "indices") || !read_take_mode(in, v[4], &wrap, &mode))
        return NULL;
    if (v[3] && v[3]->kind != AX_V_NONE)
        return ax_error(in->cx, AX_ERR_TYPE, "take: out= is not supported (arrays are immutable)");
    ax_array *a = ax_np_asarray(in, v[0], f), *fill = NULL;
    if (!a) return NULL;
    if (v[7] && v[7]->kind != AX_V_NONE && !(fill = ax_np_asarray(in, v[7], "fill_value"))) {
        ax_array_release(a);
        return NULL;
    }
    if (fill && mode == AX_INDEX_CHECK && !wrap) mode = AX_INDEX_FILL;
    ax_array *r = NULL;
    if (ax_bi_axis(in, v[2], a->ndim ? a->ndim : 1, AX_BI_NO_AXIS, true, &axis)) {
        ax_array *src = axis < 0 ? ax_np_ravel(in->cx, a) : ax_array_retain(a);
        ax_array *ia = src ? ax_np_asarray(in, v[1], f) : NULL;
        ax_value *iv = !ia    ? NULL
                       : wrap ? wrapped(in, ia, src->shape[axis < 0 ? 0 : axis])
                              : ax_np_wrap_take(in, ax_array_retain(ia));
        r = iv ? take_along(in, src, iv, axis < 0 ? 0 : axis, mode, fill) : NULL;
        if (iv) ax_value_release(iv);
        ax_array_release(ia);
        ax_array_release(src);
    }
    ax_array_release(fill);
    ax_array_release(a);
    return ax_np_wrap_take(in, r);
}

/* take_along_axis(arr, indices, axis): arr[..., indices[..., j, ...], ...] along axis, computed
 * as a gather from the flattened arr at row-major positions. */
static ax_array *take_along_axis(ax_ctx *cx, ax_array *arr, ax_array *idx, int axis,
                                 ax_index_mode mode, ax_array *fill) {
    if (idx->ndim != arr->ndim)
        return ax_error(cx, AX_ERR_VALUE,
                        "take_along_axis: indices and arr must have the same number of "
                        "dimensions");
    int64_t out[AX_MAX_RANK], stride = 1, strides[AX_MAX_RANK];
    for (int d = arr->ndim - 1; d >= 0; d--) {
        strides[d] = stride;
        stride *= arr->shape[d];
        int64_t a = arr->shape[d], i = idx->shape[d];
        if (d != axis && a != i && a != 1 && i != 1)
            return ax_error(cx, AX_ERR_SHAPE, "take_along_axis: shapes do not broadcast");
        out[d] = d == axis ? i : (a == 1 ? i : a);
        if (d != axis && a == 1) strides[d] = 0;
    }
    ax_scope s;
    ax_scope_begin(&s, cx);
    ax_dtype t = ax_np_default_int(cx);
    if (stride > INT32_MAX) t = AX_I64;
    ax_array *i = ax_scope_own(&s, ax_np_astype(cx, idx, t, false));
    /* normalise negative indices, then add every other coordinate times its stride */
    ax_array *n = ax_lax_scalar_like(&s, i, (double)arr->shape[axis]);
    ax_array *zero = ax_lax_scalar_like(&s, i, 0);
    ax_array *neg = ax_lax_binary(&s, AX_P_LT, i, zero);
    i = ax_lax_select(&s, neg, ax_lax_add(&s, i, n), i);
    ax_array *inside = NULL; /* mode="fill": where the index is in bounds */
    if (mode == AX_INDEX_CLIP) {
        ax_array *last = ax_lax_scalar_like(&s, i, (double)(arr->shape[axis] - 1));
        i = ax_lax_binary(&s, AX_P_MAX, ax_lax_binary(&s, AX_P_MIN, i, last), zero);
    } else if (mode == AX_INDEX_FILL) {
        inside = ax_lax_binary(&s, AX_P_AND, ax_lax_binary(&s, AX_P_GE, i, zero),
                               ax_lax_binary(&s, AX_P_LT, i, n));
        i = ax_lax_select(&s, inside, i, zero);
        inside = ax_scope_own(&s, ax_np_broadcast_to(cx, inside, arr->ndim, out));
    }
    ax_array *flat = ax_scope_own(&s, ax_np_broadcast_to(cx, i, arr->ndim, out));
    flat = ax_lax_mul(&s, flat, ax_lax_scalar_like(&s, flat, (double)strides[axis]));
    for (int d = 0; d < arr->ndim && flat; d++) {
        if (d == axis || strides[d] == 0) continue;
        ax_array *io = ax_scope_own(&s, ax_np_iota(cx, t, arr->ndim, out, d));
        flat = ax_lax_add(&s, flat,
                          ax_lax_mul(&s, io, ax_lax_scalar_like(&s, io, (double)strides[d])));
    }
    int64_t size = arr->size, col[AX_MAX_RANK + 1];
    memcpy(col, out, (size_t)arr->ndim * sizeof *out);
    col[arr->ndim] = 1;
    ax_array *src = ax_lax_reshape(&s, arr, 1, &size);
    ax_array *gi = ax_lax_reshape(&s, flat, arr->ndim + 1, col);
    ax_params p = {.naxes = 1};
    ax_array *r = src && gi ? ax_lax_bind(&s, AX_P_GATHER, 2, (ax_array *[]){src, gi}, &p) : NULL;
    if (r && mode == AX_INDEX_FILL) {
        ax_array *f = fill ? ax_scope_own(&s, ax_np_astype(cx, fill, arr->dtype, arr->weak))
                           : ax_scope_own(&s, ax_np_fill_default(cx, arr->dtype));
        r = f ? ax_scope_own(&s, ax_np_where(cx, inside, r, f)) : NULL;
    }
    r = ax_scope_keep(&s, r);
    ax_scope_end(&s);
    return r;
}

static ax_value *bi_take_along_axis(ax_interp *in, ax_value *self, const ax_args *args) {
    static const char *const names[] = {"arr", "indices", "axis", "mode", "fill_value", NULL};
    ax_value *v[5];
    const char *f = self->builtin->name;
    int axis;
    bool wrap;
    ax_index_mode mode;
    if (!ax_bi_parse(in, args, f, names, 3, v) || !ax_bi_required(in, v[0], f, "arr") ||
        !ax_bi_required(in, v[1], f, "indices") || !ax_bi_required(in, v[2], f, "axis") ||
        !read_take_mode(in, v[3], &wrap, &mode))
        return NULL;
    ax_array *a = ax_np_asarray(in, v[0], f), *i = a ? ax_np_asarray(in, v[1], f) : NULL;
    ax_array *r = NULL, *fill = NULL;
    if (v[4] && v[4]->kind != AX_V_NONE) {
        if (!(fill = ax_np_asarray(in, v[4], "fill_value"))) goto done;
        if (mode == AX_INDEX_CHECK && !wrap) mode = AX_INDEX_FILL;
    }
    if (i && !ax_dtype_is_int(i->dtype)) {
        ax_error(in->cx, AX_ERR_TYPE, "take_along_axis: indices must be integers");
    } else if (i && v[2]->kind == AX_V_NONE) {
        ax_array *fa = ax_np_ravel(in->cx, a), *fi = ax_np_ravel(in->cx, i);
        if (fi && wrap) {
            ax_value *w = wrapped(in, fi, fa ? fa->size : 1);
            ax_array_release(fi);
            fi = w ? ax_array_retain(w->arr) : NULL;
            if (w) ax_value_release(w);
        }
        r = fa && fi ? take_along_axis(in->cx, fa, fi, 0, mode, fill) : NULL;
        ax_array_release(fa);
        ax_array_release(fi);
    } else if (i && ax_bi_axis(in, v[2], a->ndim, 0, false, &axis)) {
        ax_array *wi = i;
        if (wrap) {
            ax_value *w = wrapped(in, i, a->shape[axis]);
            wi = w ? ax_array_retain(w->arr) : NULL;
            if (w) ax_value_release(w);
        } else {
            ax_array_retain(wi);
        }
        r = wi ? take_along_axis(in->cx, a, wi, axis, mode, fill) : NULL;
        ax_array_release(wi);
    }
done:
    ax_array_release(fill);
    ax_array_release(a);
    ax_array_release(i);
    return ax_np_wrap_take(in, r);
}

/* sort / argsort(a, axis=-1, descending=False); axis=None sorts the flattened array. */
static ax_value *sorting(ax_interp *in, ax_value *self, const ax_args *args, bool arg) {
    static const char *const names[] = {"a", "axis", "kind", "order", "stable", "descending", NULL};
    ax_value *v[6];
    const char *f = self->builtin->name;
    int axis;
    bool descending;
    if (!ax_bi_parse(in, args, f, names, 2, v) || !ax_bi_required(in, v[0], f, "a") ||
        !ax_bi_bool(in, v[5], "descending", false, &descending))
        return NULL;
    ax_array *a = ax_np_asarray(in, v[0], f);
    if (!a) return NULL;
    ax_array *r = NULL;
    if (ax_bi_axis(in, v[1], a->ndim ? a->ndim : 1, -1, true, &axis)) {
        ax_array *src = axis < 0 || a->ndim == 0 ? ax_np_ravel(in->cx, a) : ax_array_retain(a);
        ax_params p = {.naxes = 1, .flag = descending, .dtype = ax_np_default_int(in->cx)};
        p.axes[0] = axis < 0 ? 0 : axis;
        r = src ? ax_bind1(in->cx, arg ? AX_P_ARGSORT : AX_P_SORT, 1, &src, &p) : NULL;
        ax_array_release(src);
    }
    ax_array_release(a);
    return ax_np_wrap_take(in, r);
}

static ax_value *bi_sort(ax_interp *in, ax_value *self, const ax_args *args) {
    return sorting(in, self, args, false);
}
static ax_value *bi_argsort(ax_interp *in, ax_value *self, const ax_args *args) {
    return sorting(in, self, args, true);
}

/* one_hot(x, num_classes, dtype=f32): x[..., None] == arange(num_classes), as dtype. */
static ax_value *bi_one_hot(ax_interp *in, ax_value *self, const ax_args *args) {
    static const char *const names[] = {"x", "num_classes", "dtype", NULL};
    ax_value *v[3];
    const char *f = self->builtin->name;
    int64_t k;
    int dtype;
    if (!ax_bi_parse(in, args, f, names, 3, v) || !ax_bi_required(in, v[0], f, "x") ||
        !ax_bi_required(in, v[1], f, "num_classes") || !ax_bi_int(in, v[1], "num_classes", 0, &k) ||
        !ax_bi_dtype(in, v[2], &dtype))
        return NULL;
    ax_ctx *cx = in->cx;
    if (dtype < 0) dtype = (int)ax_np_default_float(cx);
    ax_array *x = ax_np_asarray(in, v[0], f);
    int64_t last = x ? x->ndim : 0;
    ax_array *e = ax_np_expand_dims(cx, x, 1, &last);
    ax_array *classes = e ? ax_np_iota(cx, ax_np_default_int(cx), 1, &k, 0) : NULL;
    ax_array *eq = classes ? ax_np_binary(cx, AX_P_EQ, "one_hot", e, classes) : NULL;
    ax_array *r = ax_np_astype(cx, eq, (ax_dtype)dtype, false);
    ax_array_release(x);
    ax_array_release(e);
    ax_array_release(classes);
    ax_array_release(eq);
    return ax_np_wrap_take(in, r);
}

/* median(a, axis=None, keepdims=False): the mean of the middle element(s) of the sorted axis. */
static ax_value *bi_median(ax_interp *in, ax_value *self, const ax_args *args) {
    static const char *const names[] = {"a", "axis", "keepdims", NULL};
    ax_value *v[3];
    const char *f = self->builtin->name;
    bool keepdims;
    int axis;
    if (!ax_bi_parse(in, args, f, names, 2, v) || !ax_bi_required(in, v[0], f, "a") ||
        !ax_bi_bool(in, v[2], "keepdims", false, &keepdims))
        return NULL;
    ax_ctx *cx = in->cx;
    ax_array *a = ax_np_asarray(in, v[0], f);
    if (!a || !ax_bi_axis(in, v[1], a->ndim ? a->ndim : 1, AX_BI_NO_AXIS, true, &axis)) {
        ax_array_release(a);
        return NULL;
    }
    ax_array *src = axis < 0 ? ax_np_ravel(cx, a) : ax_array_retain(a);
    int ax = axis < 0 ? 0 : axis;
    ax_params p = {.naxes = 1};
    p.axes[0] = ax;
    ax_array *f_src = ax_np_to_inexact(cx, src);
    ax_array *sorted = f_src ? ax_bind1(cx, AX_P_SORT, 1, &f_src, &p) : NULL;
    ax_array *r = NULL;
    if (sorted && sorted->shape[ax] == 0) {
        ax_error(cx, AX_ERR_VALUE, "median of an empty array");
    } else if (sorted) {
        int64_t n = sorted->shape[ax];
        ax_params sl = {.ndim = sorted->ndim};
        for (int d = 0; d < sorted->ndim; d++) {
            sl.lo[d] = d == ax ? (n - 1) / 2 : 0;
            sl.hi[d] = d == ax ? n / 2 + 1 : sorted->shape[d];
            sl.step[d] = 1;
        }
        ax_array *mid = ax_bind1(cx, AX_P_SLICE, 1, &sorted, &sl);
        r = ax_np_mean(cx, mid, 1, &ax, keepdims && axis >= 0, -1);
        ax_array_release(mid);
        if (r && keepdims && axis < 0) {
            int64_t ones[AX_MAX_RANK];
            for (int d = 0; d < a->ndim; d++) ones[d] = 1;
            ax_array *k = ax_np_reshape(cx, r, a->ndim, ones);
            ax_array_release(r);
            r = k;
        }
    }
    ax_array_release(a);
    ax_array_release(src);
    ax_array_release(f_src);
    ax_array_release(sorted);
    return ax_np_wrap_take(in, r);
}

/* ---------------------------------------------------------------- index tricks */

/* jnp.mgrid, ogrid, r_, c_, s_ and index_exp: objects whose indexing calls a function written
 * in ax (stdlib/jnp_more.ax) on the index (a slice, a tuple of them, ...). */
typedef struct index_trick {
    ax_value *fn;
    char *name;
} index_trick;

static void trick_free(void *p) {
    index_trick *t = p;
    if (t->fn) ax_value_release(t->fn);
    free(t->name);
    free(t);
}

static void trick_format(ax_strbuf *out, void *p) {
    ax_strbuf_appendf(out, "<jnp.%s>", ((index_trick *)p)->name);
}

static ax_value *trick_getitem(ax_interp *in, ax_value *self, ax_value *index) {
    return ax_call1(in, ((index_trick *)self->obj.payload)->fn, index);
}

/* The function may close over the module that holds the object (lang/cycles.h). */
static void trick_children(void *p, void (*visit)(void *arg, ax_value *child), void *arg) {
    index_trick *t = p;
    if (t->fn) visit(arg, t->fn);
}

static void trick_forget(void *p) {
    ((index_trick *)p)->fn = NULL;
}

static const ax_object_type index_trick_type = {.name = "index trick",
                                                .free = trick_free,
                                                .format = trick_format,
                                                .getitem = trick_getitem,
                                                .children = trick_children,
                                                .forget = trick_forget};

/* _index_trick(name, fn): an object o with o[index] = fn(index) */
static ax_value *bi_index_trick(ax_interp *in, ax_value *self, const ax_args *args) {
    (void)self;
    if (args->n != 2 || args->nkw)
        return ax_error(in->cx, AX_ERR_TYPE, "_index_trick(name, fn) takes two arguments");
    const char *name = ax_bi_str(in, args->pos[0], "name");
    if (!name) return NULL;
    index_trick *t = calloc(1, sizeof *t);
    if (!t || !(t->name = strdup(name))) {
        free(t);
        return ax_error_oom(in->cx);
    }
    t->fn = ax_value_retain(args->pos[1]);
    return ax_value_or_oom(in, ax_value_object(&index_trick_type, t));
}

#define NP AX_BI_NP

const ax_builtin_def ax_builtins_index[] = {
    {"take", bi_take,
     "take(a, indices, axis=None, mode=None, fill_value=None): elements of a at indices along "
     "axis",
     NP},
    {"take_along_axis", bi_take_along_axis,
     "take_along_axis(arr, indices, axis, mode=None, fill_value=None): elements picked along "
     "axis by matching indices",
     NP},
    {"sort", bi_sort, "sort(a, axis=-1, descending=False): sorted copy (stable, nan last)", NP},
    {"argsort", bi_argsort, "argsort(a, axis=-1, descending=False): indices that sort a", NP},
    {"one_hot", bi_one_hot, "one_hot(x, num_classes, dtype=f32): one-hot encoding of integers", NP},
    {"median", bi_median, "median(a, axis=None, keepdims=False): the median along axis", NP},
    {"_index_trick", bi_index_trick,
     "_index_trick(name, fn): an object whose indexing o[i] is fn(i) (jnp.mgrid and its kin)", 0},
    {NULL, NULL, NULL, 0},
};

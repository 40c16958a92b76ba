/* Attributes of arrays (shape, dtype, ndim, size, T, at, ...) and method sugar: x.sum(0) is
 * sum(x, 0). A method is a builtin bound to its array: calling it calls the array builtin of
 * the same name with the array as the first argument. */
#include "builtins_lib.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

ax_value *ax_np_shape_value(ax_interp *in, const ax_array *x) {
    ax_value *items[AX_MAX_RANK];
    for (int i = 0; i < x->ndim; i++) {
        items[i] = ax_bi_int_value(in, x->shape[i]);
        if (!items[i]) {
            for (int j = 0; j < i; j++) ax_value_release(items[j]);
            return NULL;
        }
    }
    return ax_value_or_oom(in, ax_value_tuple(x->ndim, items));
}

/* ---------------------------------------------------------------- bound methods */

/* Calls the wrapped function (data = (x, function): a builtin, or one written in ax) with x
 * prepended to the arguments. */
static ax_value *call_bound(ax_interp *in, ax_value *self, const ax_args *args) {
    ax_value *x = self->builtin->data->items[0], *fn = self->builtin->data->items[1];
    ax_value **pos = malloc((size_t)(args->n + 1) * sizeof *pos);
    if (!pos) return ax_error_oom(in->cx);
    pos[0] = x;
    if (args->n) memcpy(pos + 1, args->pos, (size_t)args->n * sizeof *pos);
    ax_args with_self = {.n = args->n + 1,
                         .pos = pos,
                         .nkw = args->nkw,
                         .kwnames = args->kwnames,
                         .kwvals = args->kwvals};
    ax_value *r = ax_call(in, fn, &with_self);
    free(pos);
    return r;
}

/* x.name: fn (which the method takes over) bound to x */
static ax_value *bind_value(ax_value *x, const char *name, const char *doc, ax_value *fn) {
    if (!fn) return NULL;
    ax_value *data = ax_value_tuple(2, (ax_value *[]){ax_value_retain(x), fn});
    return data ? ax_value_builtin(name, doc, call_bound, data) : NULL;
}

static ax_value *bind_builtin(ax_value *x, const ax_builtin_def *def) {
    return bind_value(x, def->name, def->doc, ax_value_builtin(def->name, def->doc, def->fn, NULL));
}

/* The array a method was bound to (methods with their own implementation keep it as data). */
static ax_array *receiver(ax_value *self) {
    return self->builtin->data->arr;
}

/* x.reshape(2, 3) or x.reshape((2, 3)) */
static ax_value *m_reshape(ax_interp *in, ax_value *self, const ax_args *args) {
    static const char *const kw[] = {"shape", "order", NULL};
    if (!ax_bi_keywords(in, args, "reshape", kw)) return NULL;
    ax_value *sv = args->n == 1 ? args->pos[0] : ax_bi_kwarg(args, "shape");
    int64_t shape[AX_MAX_RANK];
    int ndim = args->n;
    if (sv) {
        if (!ax_bi_shape(in, sv, "shape", &ndim, shape)) return NULL;
    } else if (!ax_rank_check(in->cx, "reshape", ndim)) {
        return NULL;
    } else {
        for (int i = 0; i < ndim; i++)
            if (!ax_bi_int(in, args->pos[i], "shape", 0, &shape[i])) return NULL;
    }
    return ax_np_wrap_take(in, ax_np_reshape(in->cx, receiver(self), ndim, shape));
}

/* x.transpose(), x.transpose(1, 0) or x.transpose((1, 0)) */
static ax_value *m_transpose(ax_interp *in, ax_value *self, const ax_args *args) {
    ax_array *x = receiver(self);
    if (!ax_bi_keywords(in, args, "transpose", (const char *const[]){"axes", NULL})) return NULL;
    ax_value *axes = args->n == 1 ? args->pos[0] : ax_bi_kwarg(args, "axes");
    if (args->n == 0 && (!axes || axes->kind == AX_V_NONE))
        return ax_np_wrap_take(in, ax_np_transpose(in->cx, x, NULL));
    if (axes && axes->kind == AX_V_RANGE) { /* read as the tuple of its ints */
        ax_value *t = ax_range_tuple(in, axes, 1024);
        ax_args as_tuple = {.n = 1, .pos = &t};
        ax_value *r = t ? m_transpose(in, self, &as_tuple) : NULL;
        ax_value_release(t);
        return r;
    }
    int n = axes ? (axes->kind == AX_V_TUPLE || axes->kind == AX_V_LIST ? axes->n : 1) : args->n;
    if (n != x->ndim)
        return ax_error(in->cx, AX_ERR_VALUE, "axes don't match array: %d axes for rank %d", n,
                        x->ndim);
    int perm[AX_MAX_RANK];
    for (int i = 0; i < n; i++) {
        bool seq = axes && (axes->kind == AX_V_TUPLE || axes->kind == AX_V_LIST);
        ax_value *item = !axes ? args->pos[i] : seq ? axes->items[i] : axes;
        int64_t a;
        if (!ax_bi_int(in, item, "axis", 0, &a) || !ax_np_axis(in->cx, a, x->ndim, &perm[i]))
            return NULL;
    }
    return ax_np_wrap_take(in, ax_np_transpose(in->cx, x, perm));
}

/* A concrete element as a Python-style number. */
static ax_value *element_value(ax_interp *in, const ax_array *x, int64_t flat) {
    if (x->dtype == AX_BOOL) return ax_bi_bool_value(in, ax_array_get_i64(x, flat) != 0);
    if (ax_dtype_is_float(x->dtype)) return ax_bi_float_value(in, ax_array_get_f64(x, flat));
    return ax_bi_int_value(in, ax_array_get_i64(x, flat));
}

static bool concrete_or_error(ax_interp *in, const ax_array *x, const char *what) {
    if (ax_np_is_concrete(x)) return true;
    ax_error(in->cx, AX_ERR_CONCRETIZATION,
             "%s needs a concrete array, but this one is traced (by jit or vmap)", what);
    return false;
}

static ax_value *m_item(ax_interp *in, ax_value *self, const ax_args *args) {
    ax_array *x = receiver(self);
    if (!ax_bi_keywords(in, args, "item", (const char *const[]){NULL})) return NULL;
    if (args->n) return ax_error(in->cx, AX_ERR_TYPE, "item() takes no arguments");
    if (x->size != 1)
        return ax_error(in->cx, AX_ERR_VALUE,
                        "can only convert an array of size 1 to a Python scalar (size %lld)",
                        (long long)x->size);
    return concrete_or_error(in, x, "item()") ? element_value(in, x, 0) : NULL;
}

/* Nested lists of the elements from flat position *at on, for dimensions d.. */
static ax_value *to_list(ax_interp *in, const ax_array *x, int d, int64_t *at) {
    if (d == x->ndim) return element_value(in, x, (*at)++);
    if (x->shape[d] > INT_MAX)
        return ax_error(in->cx, AX_ERR_VALUE, "tolist(): %lld items are too many for a list",
                        (long long)x->shape[d]);
    int n = (int)x->shape[d];
    ax_value **items = calloc((size_t)(n ? n : 1), sizeof *items);
    if (!items) return ax_error_oom(in->cx);
    int i = 0;
    for (; i < n; i++)
        if (!(items[i] = to_list(in, x, d + 1, at))) break;
    ax_value *r = i == n ? ax_value_list(n, items) : NULL;
    if (i < n)
        for (int j = 0; j < i; j++) ax_value_release(items[j]);
    free(items);
    return r;
}

static ax_value *m_tolist(ax_interp *in, ax_value *self, const ax_args *args) {
    ax_array *x = receiver(self);
    if (!ax_bi_keywords(in, args, "tolist", (const char *const[]){NULL})) return NULL;
    int64_t at = 0;
    return concrete_or_error(in, x, "tolist()") ? to_list(in, x, 0, &at) : NULL;
}

static ax_value *m_block_until_ready(ax_interp *in, ax_value *self, const ax_args *args) {
    if (!ax_bi_keywords(in, args, "block_until_ready", (const char *const[]){NULL})) return NULL;
    return ax_np_wrap_take(in, ax_array_retain(receiver(self)));
}

static ax_value *m_devices(ax_interp *in, ax_value *self, const ax_args *args) {
    if (!ax_bi_keywords(in, args, "devices", (const char *const[]){NULL})) return NULL;
    return ax_parallel_devices_of(in, receiver(self));
}

static const struct {
    const char *name, *doc;
    ax_builtin_fn fn;
} own_methods[] = {
    {"reshape", "x.reshape(*shape): x with a new shape (one entry may be -1)", m_reshape},
    {"transpose", "x.transpose(*axes): x with its axes permuted (reversed by default)",
     m_transpose},
    {"item", "x.item(): the single element of x as a Python-style number", m_item},
    {"tolist", "x.tolist(): the elements of x as nested lists", m_tolist},
    {"block_until_ready", "x.block_until_ready(): x (computation is synchronous)",
     m_block_until_ready},
    {"devices", "x.devices(): the devices x lives on, {CpuDevice(id=0)}", m_devices},
};

/* Methods that are the builtin of the same (or the given) name with x first. */
static const struct {
    const char *method, *builtin;
} builtin_methods[] = {
    {"sum", "sum"},           {"prod", "prod"},     {"mean", "mean"},
    {"var", "var"},           {"std", "std"},       {"max", "max"},
    {"min", "min"},           {"argmax", "argmax"}, {"argmin", "argmin"},
    {"all", "all"},           {"any", "any"},       {"cumsum", "cumsum"},
    {"cumprod", "cumprod"},   {"ptp", "ptp"},       {"clip", "clip"},
    {"round", "round"},       {"dot", "dot"},       {"squeeze", "squeeze"},
    {"ravel", "ravel"},       {"flatten", "ravel"}, {"swapaxes", "swapaxes"},
    {"take", "take"},         {"repeat", "repeat"}, {"sort", "sort"},
    {"argsort", "argsort"},   {"astype", "astype"}, {"copy", "copy"},
    {"diagonal", "diagonal"}, {"trace", "trace"},
};

#define COUNT(a) (sizeof(a) / sizeof *(a))

/* Methods that are functions of the standard library written in ax (stdlib/jnp_more.ax),
 * opened on first use: x.nonzero(size=3) as jnp.nonzero(x, size=3). */
static const struct {
    const char *name, *doc;
} library_methods[] = {
    {"nonzero", "x.nonzero(size=None, fill_value=None): the indices of x's nonzero entries, a "
                "tuple of arrays (size= makes their length static, as under jit)"},
};

static ax_value *library_method(ax_interp *in, ax_value *x, size_t i) {
    const char *name = library_methods[i].name;
    ax_value *fn = ax_module_lookup(in->builtins, name);
    if (!fn && !(fn = ax_interp_lookup_lazy(in, name))) return NULL;
    ax_value *m = bind_value(x, name, library_methods[i].doc, ax_value_retain(fn));
    return m ? m : ax_error_oom(in->cx);
}

/* The bound method `name` of x, NULL if x has none (or NULL + MemoryError). */
static ax_value *method(ax_interp *in, ax_value *x, const char *name) {
    for (size_t i = 0; i < COUNT(library_methods); i++)
        if (!strcmp(name, library_methods[i].name)) return library_method(in, x, i);
    for (size_t i = 0; i < COUNT(own_methods); i++) {
        if (strcmp(name, own_methods[i].name)) continue;
        ax_value *m = ax_value_builtin(own_methods[i].name, own_methods[i].doc, own_methods[i].fn,
                                       ax_value_retain(x));
        return m ? m : ax_error_oom(in->cx);
    }
    for (size_t i = 0; i < COUNT(builtin_methods); i++) {
        if (strcmp(name, builtin_methods[i].method)) continue;
        const ax_builtin_def *def = ax_builtin_find(builtin_methods[i].builtin);
        if (!def) continue;
        ax_value *m = bind_builtin(x, def);
        return m ? m : ax_error_oom(in->cx);
    }
    return NULL;
}

/* ---------------------------------------------------------------- attributes */

static ax_value *matrix_transpose(ax_interp *in, ax_array *x) {
    if (x->ndim < 2) return ax_error(in->cx, AX_ERR_VALUE, "x.mT needs an array of rank 2 or more");
    int perm[AX_MAX_RANK];
    for (int i = 0; i < x->ndim; i++) perm[i] = i;
    perm[x->ndim - 2] = x->ndim - 1;
    perm[x->ndim - 1] = x->ndim - 2;
    return ax_np_wrap_take(in, ax_np_transpose(in->cx, x, perm));
}

static const char *const attribute_names[] = {"shape", "dtype",    "ndim",   "size",      "T", "mT",
                                              "at",    "itemsize", "nbytes", "weak_type", NULL};

ax_value *ax_np_getattr(ax_interp *in, ax_value *x, const char *name) {
    if (!x || x->kind != AX_V_ARRAY)
        return ax_error(in->cx, AX_ERR_ATTRIBUTE, "'%s' object has no attribute '%s'",
                        x ? ax_value_kind_name(x->kind) : "None", name);
    ax_array *a = x->arr;
    if (!strcmp(name, "shape")) return ax_np_shape_value(in, a);
    if (!strcmp(name, "dtype")) return ax_value_or_oom(in, ax_value_dtype(a->dtype));
    if (!strcmp(name, "ndim")) return ax_bi_int_value(in, a->ndim);
    if (!strcmp(name, "size")) return ax_bi_int_value(in, a->size);
    if (!strcmp(name, "itemsize")) return ax_bi_int_value(in, (int64_t)ax_dtype_size(a->dtype));
    if (!strcmp(name, "nbytes"))
        return ax_bi_int_value(in, a->size * (int64_t)ax_dtype_size(a->dtype));
    if (!strcmp(name, "weak_type")) return ax_bi_bool_value(in, a->weak);
    if (!strcmp(name, "T")) return ax_np_wrap_take(in, ax_np_transpose(in->cx, a, NULL));
    if (!strcmp(name, "mT")) return matrix_transpose(in, a);
    if (!strcmp(name, "at")) return ax_np_at(in, x);
    ax_value *m = method(in, x, name);
    if (m || ax_error_pending(in->cx)) return m;
    char t[160];
    ax_array_type_format(t, sizeof t, a);
    return ax_error(in->cx, AX_ERR_ATTRIBUTE, "array %s has no attribute '%s'", t, name);
}

void ax_np_each_attr(void (*fn)(void *arg, const char *name), void *arg) {
    for (int i = 0; attribute_names[i]; i++) fn(arg, attribute_names[i]);
    for (size_t i = 0; i < COUNT(own_methods); i++) fn(arg, own_methods[i].name);
    for (size_t i = 0; i < COUNT(builtin_methods); i++) fn(arg, builtin_methods[i].method);
    for (size_t i = 0; i < COUNT(library_methods); i++) fn(arg, library_methods[i].name);
}

const ax_array_class ax_np_array_class = {
    .getitem = ax_np_getitem,
    .getattr = ax_np_getattr,
    .each_attr = ax_np_each_attr,
    .call_dtype = ax_np_call_dtype,
};

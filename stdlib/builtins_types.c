/* type() and isinstance(): Python's classes of ax's values.
 *
 * ax has one array type. A Python number is a weakly typed rank-0 array (see ax_dtype_promote),
 * so its class is int, float or complex as Python's would be, and a rank-0 bool is a bool (also
 * the result of a comparison, where JAX would say Array); every other array is an
 * `ndarray` (jnp.ndarray, jax.Array), as JAX's arrays are. The classes are the builtins of those
 * names, whose one-line docs start with "class " (lang/value.c prints them as <class 'int'>). */
#include "builtins_lib.h"

#include <string.h>

#include "records.h"

static const char *array_class(const ax_array *a) {
    if (a->ndim == 0 && a->dtype == AX_BOOL) return "bool"; /* True is not weakly typed */
    if (!a->weak || a->ndim != 0) return "ndarray";
    if (ax_dtype_is_int(a->dtype)) return "int";
    return ax_dtype_is_float(a->dtype) ? "float" : "complex";
}

/* The name of v's class, as Python's type(v).__name__ would say. */
static const char *class_name(const ax_value *v) {
    switch (v->kind) {
    case AX_V_ARRAY:
        return array_class(v->arr);
    case AX_V_STR:
        return "str";
    case AX_V_LIST:
        return "list";
    case AX_V_TUPLE:
        return "tuple";
    case AX_V_DICT:
        return "dict";
    case AX_V_NONE:
        return "NoneType";
    case AX_V_FUNC:
        return "function";
    case AX_V_BUILTIN:
        return "builtin_function_or_method";
    case AX_V_MODULE:
        return "module";
    case AX_V_DTYPE:
        return "dtype";
    case AX_V_OBJECT:
        return v->obj.type->name;
    default:
        return ax_value_kind_name(v->kind);
    }
}

static bool is_class(const ax_value *c) {
    return c->kind == AX_V_BUILTIN && c->builtin->doc && !strncmp(c->builtin->doc, "class ", 6);
}

static ax_value *bi_type(ax_interp *in, ax_value *self, const ax_args *args) {
    static const char *const names[] = {"object", NULL};
    ax_value *v[1];
    if (!ax_bi_parse(in, args, self->builtin->name, names, 1, v)) return NULL;
    if (!v[0]) return ax_error(in->cx, AX_ERR_TYPE, "type() takes 1 argument (0 given)");
    if (ax_record_is_instance(v[0])) return ax_value_retain(ax_record_class_of(v[0]));
    const char *name = class_name(v[0]);
    ax_value *c = ax_interp_lookup(in, name);
    if (c && is_class(c)) return ax_value_retain(c);
    /* A class ax has no builtin for (function, module, ...): its printed form. */
    ax_strbuf s;
    ax_strbuf_init(&s);
    ax_strbuf_appendf(&s, "<class '%s'>", name);
    ax_value *r = s.data ? ax_value_str(s.data) : NULL;
    ax_strbuf_free(&s);
    return r ? r : ax_error_oom(in->cx);
}

/* Whether v is an instance of the class c (bool is a subclass of int, a namedtuple of tuple, as
 * in Python; ax's sets are frozensets too, since they never change). */
static bool instance_of(const ax_value *v, const ax_value *c) {
    if (ax_record_is_class(c)) return ax_record_is_instance(v) && ax_record_class_of(v) == c;
    const char *have = class_name(v), *want = c->builtin->name;
    if (!strcmp(have, want)) return true;
    if (!strcmp(want, "tuple")) return ax_record_is_instance(v);
    if (!strcmp(want, "frozenset")) return !strcmp(have, "set");
    return !strcmp(want, "int") && !strcmp(have, "bool");
}

static int isinstance_check(ax_interp *in, const ax_value *v, const ax_value *c, int depth) {
    if (c->kind == AX_V_TUPLE && depth < 32) {
        for (int i = 0; i < c->n; i++) {
            int r = isinstance_check(in, v, c->items[i], depth + 1);
            if (r) return r;
        }
        return 0;
    }
    if (!is_class(c) && !ax_record_is_class(c)) {
        char what[128];
        ax_value_describe(what, sizeof what, c);
        ax_error(in->cx, AX_ERR_TYPE,
                 "isinstance() arg 2 must be a class or a tuple of classes (int, float, bool, "
                 "str, list, tuple, dict, set, range, jnp.ndarray, a namedtuple class), not %s",
                 what);
        return -1;
    }
    return instance_of(v, c);
}

static ax_value *bi_isinstance(ax_interp *in, ax_value *self, const ax_args *args) {
    static const char *const names[] = {"obj", "class_or_tuple", NULL};
    ax_value *v[2];
    if (!ax_bi_parse(in, args, self->builtin->name, names, 2, v)) return NULL;
    if (!v[0] || !v[1])
        return ax_error(in->cx, AX_ERR_TYPE, "isinstance() takes 2 arguments (obj, class)");
    int r = isinstance_check(in, v[0], v[1], 0);
    return r < 0 ? NULL : ax_bi_bool_value(in, r);
}

/* The array class: jnp.ndarray and jax.Array name it; arrays are made by jnp.array & co. */
static ax_value *bi_ndarray(ax_interp *in, ax_value *self, const ax_args *args) {
    (void)self, (void)args;
    return ax_error(in->cx, AX_ERR_TYPE,
                    "jnp.ndarray (jax.Array) is the class of arrays, for isinstance() and "
                    "type(); make an array with jnp.array(x), zeros(shape) or asarray(x)");
}

const ax_builtin_def ax_builtins_types[] = {
    {"type", bi_type, "type(object): the class of object (int, float, str, jnp.ndarray, ...)", 0},
    {"isinstance", bi_isinstance,
     "isinstance(obj, class_or_tuple): whether obj is an instance of the class (or of one of "
     "them)",
     0},
    {"ndarray", bi_ndarray, "class ndarray: the class of arrays (jnp.ndarray, jax.Array)",
     AX_BI_NP},
    {NULL, NULL, NULL, 0},
};

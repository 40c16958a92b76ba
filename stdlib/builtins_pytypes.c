/* Python's builtins about types, characters and numbers as text: isinstance, callable, ord,
 * chr, slice, divmod, hex, oct, bin, format; and ndarray (jnp.ndarray, jax.Array), the type
 * of every array, for isinstance. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "builtins_lib.h"
#include "records.h"

/* ---------------------------------------------------------------- isinstance */

/* Is v a Python int / float / bool as JAX programs test them: a scalar (rank-0) array of that
 * kind (a bool is an int too, as in Python). */
static bool scalar_of_kind(const ax_value *v, char kind) {
    if (v->kind != AX_V_ARRAY || v->arr->ndim != 0) return false;
    ax_dtype t = v->arr->dtype;
    switch (kind) {
    case 'i':
        return t == AX_BOOL || ax_dtype_is_int(t);
    case 'f':
        return ax_dtype_is_float(t);
    default:
        return t == AX_BOOL;
    }
}

/* The builtins that stand for Python's types, by name, and what their instances are. */
static int instance_of_builtin(const ax_value *v, const char *type) {
    static const struct {
        const char *name;
        ax_value_kind kind;
    } kinds[] = {{"str", AX_V_STR},     {"list", AX_V_LIST},   {"tuple", AX_V_TUPLE},
                 {"dict", AX_V_DICT},   {"set", AX_V_SET},     {"frozenset", AX_V_SET},
                 {"range", AX_V_RANGE}, {"slice", AX_V_SLICE}, {"ndarray", AX_V_ARRAY}};
    for (size_t i = 0; i < sizeof kinds / sizeof *kinds; i++)
        if (strcmp(type, kinds[i].name) == 0)
            return v->kind == kinds[i].kind ||
                   (kinds[i].kind == AX_V_TUPLE && ax_record_is_instance(v)); /* namedtuples */
    if (strcmp(type, "int") == 0) return scalar_of_kind(v, 'i');
    if (strcmp(type, "float") == 0) return scalar_of_kind(v, 'f');
    if (strcmp(type, "bool") == 0) return scalar_of_kind(v, 'b');
    return -1;
}

/* 1, 0, or -1 with a TypeError when cls is not a type. */
static int is_instance(ax_interp *in, const ax_value *v, const ax_value *cls, int depth) {
    if (cls->kind == AX_V_TUPLE && depth < 16) {
        for (int i = 0; i < cls->n; i++) {
            int r = is_instance(in, v, cls->items[i], depth + 1);
            if (r) return r;
        }
        return 0;
    }
    if (cls->kind == AX_V_BUILTIN) {
        int r = instance_of_builtin(v, cls->builtin->name);
        if (r >= 0) return r;
    }
    if (ax_record_is_class(cls)) return ax_record_is_instance(v) && ax_record_class_of(v) == cls;
    if (cls->kind == AX_V_BUILTIN && strcmp(cls->builtin->name, "NoneType") == 0)
        return v->kind == AX_V_NONE;
    char d[128];
    ax_value_describe(d, sizeof d, cls);
    ax_error(in->cx, AX_ERR_TYPE,
             "isinstance() arg 2 must be a type or a tuple of types (int, float, bool, str, "
             "list, tuple, dict, set, jnp.ndarray, a namedtuple class), not %s",
             d);
    return -1;
}

static ax_value *bi_isinstance(ax_interp *in, ax_value *self, const ax_args *args) {
    static const char *const names[] = {"obj", "class_or_tuple", NULL};
    ax_value *v[2];
    if (!ax_bi_parse(in, args, self->builtin->name, names, 2, v) ||
        !ax_bi_required(in, v[0], "isinstance", "obj") ||
        !ax_bi_required(in, v[1], "isinstance", "class_or_tuple"))
        return NULL;
    int r = is_instance(in, v[0], v[1], 0);
    return r < 0 ? NULL : ax_bi_bool_value(in, r);
}

static ax_value *bi_callable(ax_interp *in, ax_value *self, const ax_args *args) {
    static const char *const names[] = {"obj", NULL};
    ax_value *v[1];
    if (!ax_bi_parse(in, args, self->builtin->name, names, 1, v) ||
        !ax_bi_required(in, v[0], "callable", "obj"))
        return NULL;
    bool r = v[0]->kind == AX_V_FUNC || v[0]->kind == AX_V_BUILTIN || v[0]->kind == AX_V_DTYPE ||
             (v[0]->kind == AX_V_OBJECT && v[0]->obj.type->call);
    return ax_bi_bool_value(in, r);
}

/* jnp.ndarray / jax.Array: a type to test with isinstance, not a constructor. */
static ax_value *bi_ndarray(ax_interp *in, ax_value *self, const ax_args *args) {
    (void)self, (void)args;
    return ax_error(in->cx, AX_ERR_TYPE,
                    "jnp.ndarray (jax.Array) is the type of arrays, for isinstance(x, "
                    "jnp.ndarray); make an array with jnp.array(...) or jnp.asarray(...)");
}

/* type(obj): the builtin that stands for its type (int, float, bool for Python's numbers, the
 * weakly typed scalars; jnp.ndarray for the other arrays; str, list, ...; NoneType; a
 * namedtuple's class). */
static ax_value *bi_type(ax_interp *in, ax_value *self, const ax_args *args) {
    static const char *const names[] = {"obj", NULL};
    ax_value *v[1];
    if (!ax_bi_parse(in, args, self->builtin->name, names, 1, v) ||
        !ax_bi_required(in, v[0], "type", "obj"))
        return NULL;
    ax_value *x = v[0];
    if (ax_record_is_instance(x)) return ax_value_retain(ax_record_class_of(x));
    const char *name = NULL;
    switch (x->kind) {
    case AX_V_ARRAY: {
        const ax_array *a = x->arr;
        bool python = a->ndim == 0 && (a->weak || a->dtype == AX_BOOL);
        name = !python                       ? "ndarray"
               : a->dtype == AX_BOOL         ? "bool"
               : ax_dtype_is_float(a->dtype) ? "float"
                                             : "int";
        break;
    }
    case AX_V_NONE:
        name = "NoneType";
        break;
    case AX_V_STR:
    case AX_V_LIST:
    case AX_V_TUPLE:
    case AX_V_DICT:
    case AX_V_SET:
    case AX_V_RANGE:
    case AX_V_SLICE:
        name = ax_value_kind_name(x->kind);
        break;
    default: {
        char d[128];
        ax_value_describe(d, sizeof d, x);
        return ax_error(in->cx, AX_ERR_TYPE,
                        "type() of %s is not available in ax (use callable(x) for functions)", d);
    }
    }
    ax_value *t = ax_module_lookup(in->builtins, name);
    if (!t) return ax_error(in->cx, AX_ERR_RUNTIME, "type(): the builtin '%s' is missing", name);
    return ax_value_retain(t);
}

/* NoneType(): None, as type(None)() is in Python. */
static ax_value *bi_none_type(ax_interp *in, ax_value *self, const ax_args *args) {
    if (!ax_args_check(in, args, self->builtin->name, 0, NULL)) return NULL;
    return ax_none();
}

/* ---------------------------------------------------------------- characters */

static ax_value *bi_ord(ax_interp *in, ax_value *self, const ax_args *args) {
    static const char *const names[] = {"c", NULL};
    ax_value *v[1];
    if (!ax_bi_parse(in, args, self->builtin->name, names, 1, v) ||
        !ax_bi_required(in, v[0], "ord", "c"))
        return NULL;
    if (v[0]->kind != AX_V_STR) {
        char d[128];
        ax_value_describe(d, sizeof d, v[0]);
        return ax_error(in->cx, AX_ERR_TYPE, "ord() expected a string of length 1, but %s found",
                        d);
    }
    const unsigned char *s = (const unsigned char *)v[0]->str;
    int64_t n = ax_value_length(v[0]);
    if (n != 1)
        return ax_error(in->cx, AX_ERR_TYPE,
                        "ord() expected a character, but string of length %lld found",
                        (long long)n);
    int len = s[0] < 0x80 ? 1 : s[0] < 0xE0 ? 2 : s[0] < 0xF0 ? 3 : 4;
    int64_t cp = len == 1 ? s[0] : s[0] & (0x7F >> len);
    for (int i = 1; i < len; i++) cp = cp << 6 | (s[i] & 0x3F);
    return ax_bi_int_value(in, cp);
}

static ax_value *bi_chr(ax_interp *in, ax_value *self, const ax_args *args) {
    static const char *const names[] = {"i", NULL};
    ax_value *v[1];
    int64_t cp;
    if (!ax_bi_parse(in, args, self->builtin->name, names, 1, v) ||
        !ax_bi_required(in, v[0], "chr", "i") ||
        !ax_value_to_int(in, v[0], "chr()'s argument", &cp))
        return NULL;
    if (cp < 0 || cp > 0x10FFFF)
        return ax_error(in->cx, AX_ERR_VALUE, "chr() arg not in range(0x110000)");
    if (cp >= 0xD800 && cp <= 0xDFFF)
        return ax_error(in->cx, AX_ERR_VALUE, "chr(): %#llx is a surrogate, not a character",
                        (long long)cp);
    char s[5] = {0};
    if (cp < 0x80) {
        s[0] = (char)cp;
    } else if (cp < 0x800) {
        s[0] = (char)(0xC0 | cp >> 6), s[1] = (char)(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        s[0] = (char)(0xE0 | cp >> 12), s[1] = (char)(0x80 | (cp >> 6 & 0x3F));
        s[2] = (char)(0x80 | (cp & 0x3F));
    } else {
        s[0] = (char)(0xF0 | cp >> 18), s[1] = (char)(0x80 | (cp >> 12 & 0x3F));
        s[2] = (char)(0x80 | (cp >> 6 & 0x3F)), s[3] = (char)(0x80 | (cp & 0x3F));
    }
    if (cp == 0) return ax_error(in->cx, AX_ERR_VALUE, "chr(0): ax strings cannot hold NUL");
    ax_value *r = ax_value_str(s);
    return r ? r : ax_error_oom(in->cx);
}

/* ---------------------------------------------------------------- slice */

/* A slice bound: None, or a concrete integer (what indexing reads). */
static bool slice_bound(ax_interp *in, ax_value *v, const char *what) {
    int64_t i;
    return !v || v->kind == AX_V_NONE || ax_value_to_int(in, v, what, &i);
}

static ax_value *bi_slice(ax_interp *in, ax_value *self, const ax_args *args) {
    (void)self;
    if (args->nkw) return ax_error(in->cx, AX_ERR_TYPE, "slice() takes no keyword arguments");
    if (args->n < 1 || args->n > 3)
        return ax_error(in->cx, AX_ERR_TYPE, "slice expected 1 to 3 arguments, got %d", args->n);
    ax_value *b[3] = {NULL, NULL, NULL};
    if (args->n == 1)
        b[1] = args->pos[0];
    else
        for (int i = 0; i < args->n; i++) b[i] = args->pos[i];
    static const char *const what[] = {"a slice's start", "a slice's stop", "a slice's step"};
    for (int i = 0; i < 3; i++)
        if (!slice_bound(in, b[i], what[i])) return NULL;
    ax_value *start = ax_value_retain(b[0] ? b[0] : ax_none());
    ax_value *stop = ax_value_retain(b[1] ? b[1] : ax_none());
    ax_value *step = ax_value_retain(b[2] ? b[2] : ax_none());
    ax_value *r = ax_value_slice(start, stop, step);
    return r ? r : ax_error_oom(in->cx);
}

/* ---------------------------------------------------------------- numbers as text */

static ax_value *bi_divmod(ax_interp *in, ax_value *self, const ax_args *args) {
    static const char *const names[] = {"a", "b", NULL};
    ax_value *v[2];
    if (!ax_bi_parse(in, args, self->builtin->name, names, 2, v) ||
        !ax_bi_required(in, v[0], "divmod", "a") || !ax_bi_required(in, v[1], "divmod", "b"))
        return NULL;
    ax_array *a = ax_value_to_array(in, v[0], "divmod()'s a");
    ax_array *b = a ? ax_value_to_array(in, v[1], "divmod()'s b") : NULL;
    ax_value *items[2] = {NULL, NULL};
    if (b) items[0] = ax_np_wrap_take(in, ax_np_binop(in->cx, AX_OP_FLOORDIV, a, b));
    if (items[0]) items[1] = ax_np_wrap_take(in, ax_np_binop(in->cx, AX_OP_MOD, a, b));
    if (a) ax_array_release(a);
    if (b) ax_array_release(b);
    if (!items[1]) {
        if (items[0]) ax_value_release(items[0]);
        return NULL;
    }
    ax_value *r = ax_value_tuple(2, items);
    return r ? r : ax_error_oom(in->cx);
}

/* hex / oct / bin of an integer: Python's 0x.., 0o.., 0b.. (with a sign). */
static ax_value *int_text(ax_interp *in, const ax_args *args, const char *fname, int base) {
    static const char *const names[] = {"x", NULL};
    ax_value *v[1];
    int64_t x;
    if (!ax_bi_parse(in, args, fname, names, 1, v) || !ax_bi_required(in, v[0], fname, "x"))
        return NULL;
    if (v[0]->kind != AX_V_ARRAY || !ax_dtype_is_int(v[0]->arr->dtype) || v[0]->arr->ndim != 0) {
        char d[128];
        ax_value_describe(d, sizeof d, v[0]);
        return ax_error(in->cx, AX_ERR_TYPE, "%s() takes an integer, not %s", fname, d);
    }
    if (!ax_value_to_int(in, v[0], "the number", &x)) return NULL;
    uint64_t u = x < 0 ? 0 - (uint64_t)x : (uint64_t)x;
    char digits[72], out[80];
    int n = 0;
    do {
        digits[n++] = "0123456789abcdef"[u % (uint64_t)base];
        u /= (uint64_t)base;
    } while (u);
    int k = 0;
    if (x < 0) out[k++] = '-';
    out[k++] = '0';
    out[k++] = base == 16 ? 'x' : base == 8 ? 'o' : 'b';
    while (n) out[k++] = digits[--n];
    out[k] = 0;
    ax_value *r = ax_value_str(out);
    return r ? r : ax_error_oom(in->cx);
}

static ax_value *bi_hex(ax_interp *in, ax_value *self, const ax_args *args) {
    return int_text(in, args, self->builtin->name, 16);
}
static ax_value *bi_oct(ax_interp *in, ax_value *self, const ax_args *args) {
    return int_text(in, args, self->builtin->name, 8);
}
static ax_value *bi_bin(ax_interp *in, ax_value *self, const ax_args *args) {
    return int_text(in, args, self->builtin->name, 2);
}

/* format(value, spec=''): "{:spec}".format(value). */
static ax_value *bi_format(ax_interp *in, ax_value *self, const ax_args *args) {
    static const char *const names[] = {"value", "format_spec", NULL};
    ax_value *v[2];
    if (!ax_bi_parse(in, args, self->builtin->name, names, 2, v) ||
        !ax_bi_required(in, v[0], "format", "value"))
        return NULL;
    const char *spec = v[1] ? ax_bi_str(in, v[1], "format()'s format_spec") : "";
    if (!spec) return NULL;
    if (strchr(spec, '{') || strchr(spec, '}'))
        return ax_error(in->cx, AX_ERR_VALUE, "format(): invalid format spec '%s'", spec);
    size_t len = strlen(spec);
    char *tmpl = malloc(len + 4);
    if (!tmpl) return ax_error_oom(in->cx);
    snprintf(tmpl, len + 4, "{:%s}", spec);
    ax_value *t = ax_value_str(tmpl);
    free(tmpl);
    ax_value *method = t ? ax_getattr(in, t, "format") : ax_error_oom(in->cx);
    if (t) ax_value_release(t);
    ax_value *r = method ? ax_call1(in, method, v[0]) : NULL;
    if (method) ax_value_release(method);
    return r;
}

const ax_builtin_def ax_builtins_pytypes[] = {
    {"isinstance", bi_isinstance,
     "isinstance(obj, class_or_tuple): whether obj is an int, float, str, list, ..., jnp.ndarray "
     "or namedtuple of that class",
     0},
    {"callable", bi_callable, "callable(obj): whether obj can be called", 0},
    {"type", bi_type,
     "type(obj): its type: int, float or bool (Python's numbers), jnp.ndarray, str, list, ...", 0},
    {"NoneType", bi_none_type, "NoneType: the type of None (type(None)), for isinstance", 0},
    {"ndarray", bi_ndarray, "ndarray: the type of arrays (jnp.ndarray, jax.Array), for isinstance",
     AX_BI_NP},
    {"ord", bi_ord, "ord(c): the code point of the one-character string c (ord('a') == 97)", 0},
    {"chr", bi_chr, "chr(i): the one-character string of code point i (chr(97) == 'a')", 0},
    {"slice", bi_slice,
     "slice(stop) / slice(start, stop, step=None): a slice object, x[slice(1, 3)] == x[1:3]", 0},
    {"divmod", bi_divmod, "divmod(a, b): (a // b, a % b)", 0},
    {"hex", bi_hex, "hex(x): the integer x in base 16, '0xff'", 0},
    {"oct", bi_oct, "oct(x): the integer x in base 8, '0o17'", 0},
    {"bin", bi_bin, "bin(x): the integer x in base 2, '0b101'", 0},
    {"format", bi_format, "format(value, format_spec=''): value formatted as '{:spec}' does", 0},
    {NULL, NULL, NULL, 0},
};

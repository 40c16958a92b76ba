/* Python's general builtins: print, len, range, zip, enumerate, list, tuple, dict, str, repr,
 * int, float, bool, sorted, reversed, map, filter, hasattr, getattr. */
#include "builtins_lib.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- helpers */

static void release_items(int n, ax_value **items) {
    if (!items) return;
    for (int i = 0; i < n; i++)
        if (items[i]) ax_value_release(items[i]);
    free(items);
}

/* The characters (code points) of a UTF-8 string as string values. */
static bool string_items(ax_interp *in, const char *s, int *n, ax_value ***out) {
    size_t len = strlen(s);
    ax_value **items = calloc(len ? len : 1, sizeof *items);
    if (!items) return ax_error_oom(in->cx), false;
    int count = 0;
    for (size_t i = 0; i < len;) {
        size_t j = i + 1;
        while (j < len && ((unsigned char)s[j] & 0xC0) == 0x80) j++;
        char buf[8] = {0};
        memcpy(buf, s + i, j - i < 7 ? j - i : 7);
        if (!(items[count++] = ax_value_str(buf))) {
            release_items(count, items);
            return ax_error_oom(in->cx), false;
        }
        i = j;
    }
    *n = count;
    *out = items;
    return true;
}

/* The first `limit` ints of a range (all when limit < 0), made one by one; Ctrl-C stops it. */
static bool range_items(ax_interp *in, ax_value *r, const char *fname, int64_t limit, int *n,
                        ax_value ***out) {
    int64_t len = limit >= 0 && limit < ax_range_len(r) ? limit : ax_range_len(r);
    if (len > INT_MAX) {
        ax_error(in->cx, AX_ERR_VALUE, "%s(): a range of %lld ints is too long for a list", fname,
                 (long long)len);
        return false;
    }
    ax_value **items = calloc((size_t)(len ? len : 1), sizeof *items);
    if (!items) return ax_error_oom(in->cx), false;
    for (int64_t i = 0; i < len; i++) {
        if ((i & 4095) == 0 && ax_ctx_check_interrupt(in->cx)) {
            release_items((int)i, items);
            return false;
        }
        if (!(items[i] = ax_bi_int_value(in, ax_range_item(r, i)))) {
            release_items((int)i, items);
            return false;
        }
    }
    *n = (int)len;
    *out = items;
    return true;
}

/* The elements of an iterable (list, tuple, dict keys, range, array rows, string characters),
 * as new references in a new array of values: the first `limit` of a range (all when
 * limit < 0). */
/* The items of an object that iterates by integer indexing (an array of PRNG keys), at most
 * `limit` of them when limit >= 0. */
static bool object_items(ax_interp *in, ax_value *v, int64_t limit, int *n, ax_value ***out) {
    ax_value_iter it;
    if (ax_value_iter_begin(in, v, &it) < 0) return false;
    int count = 0, cap = 0;
    ax_value **items = NULL, *item = NULL;
    int rc = 0;
    while ((limit < 0 || count < limit) && (rc = ax_value_iter_next(in, &it, &item)) == 1) {
        if (count == cap) {
            int grown = !cap ? 16 : cap <= INT_MAX / 2 ? 2 * cap : 0;
            ax_value **more = grown ? realloc(items, (size_t)grown * sizeof *items) : NULL;
            if (!more) {
                ax_value_release(item);
                rc = -1;
                ax_error_oom(in->cx);
                break;
            }
            items = more, cap = grown;
        }
        items[count++] = item;
    }
    if (rc < 0) {
        release_items(count, items);
        return false;
    }
    *n = count;
    *out = items ? items : calloc(1, sizeof *items);
    return *out ? true : (ax_error_oom(in->cx), false);
}

static bool items_up_to(ax_interp *in, ax_value *v, const char *fname, int64_t limit, int *n,
                        ax_value ***out) {
    if (v->kind == AX_V_OBJECT) return object_items(in, v, limit, n, out);
    if (v->kind == AX_V_STR) return string_items(in, v->str, n, out);
    if (v->kind == AX_V_RANGE) return range_items(in, v, fname, limit, n, out);
    if (v->kind == AX_V_ARRAY) {
        ax_array **rows;
        if (!ax_bi_arrays(in, v, fname, n, &rows)) return false;
        ax_value **items = calloc((size_t)(*n ? *n : 1), sizeof *items);
        bool ok = items != NULL;
        for (int i = 0; ok && i < *n; i++)
            ok = (items[i] = ax_np_wrap_take(in, ax_array_retain(rows[i]))) != NULL;
        ax_bi_free_arrays(*n, rows);
        if (!ok) {
            release_items(*n, items);
            if (!ax_error_pending(in->cx)) ax_error_oom(in->cx);
            return false;
        }
        *out = items;
        return true;
    }
    if (v->kind != AX_V_LIST && v->kind != AX_V_TUPLE && v->kind != AX_V_DICT &&
        v->kind != AX_V_SET) {
        ax_error(in->cx, AX_ERR_TYPE, "%s(): '%s' object is not iterable", fname,
                 ax_value_kind_name(v->kind));
        return false;
    }
    ax_value **items = calloc((size_t)(v->n ? v->n : 1), sizeof *items);
    if (!items) return ax_error_oom(in->cx), false;
    for (int i = 0; i < v->n; i++)
        items[i] = ax_value_retain(v->kind == AX_V_DICT ? v->keys[i] : v->items[i]);
    *n = v->n;
    *out = items;
    return true;
}

static bool items_of(ax_interp *in, ax_value *v, const char *fname, int *n, ax_value ***out) {
    return items_up_to(in, v, fname, -1, n, out);
}

/* A list (or tuple) value made from items, which it takes (the array is freed). */
static ax_value *make_seq_take(ax_interp *in, bool tuple, int n, ax_value **items) {
    (void)in;
    ax_value *r = tuple ? ax_value_tuple(n, items) : ax_value_list(n, items);
    free(items); /* the constructor took the references */
    return ax_value_or_oom(in, r);
}

/* Python truthiness, with NumPy's rule for arrays (size 1 only). */
static bool truthy(ax_interp *in, ax_value *v, bool *out) {
    switch (v->kind) {
    case AX_V_NONE:
        *out = false;
        return true;
    case AX_V_STR:
        *out = v->str[0] != 0;
        return true;
    case AX_V_LIST:
    case AX_V_TUPLE:
    case AX_V_DICT:
    case AX_V_SET:
        *out = v->n > 0;
        return true;
    case AX_V_RANGE:
        *out = ax_range_len(v) > 0;
        return true;
    case AX_V_ARRAY:
        if (v->arr->size != 1) {
            ax_error(in->cx, AX_ERR_VALUE,
                     "the truth value of an array with %lld elements is ambiguous; use any() "
                     "or all()",
                     (long long)v->arr->size);
            return false;
        }
        if (!ax_np_is_concrete(v->arr)) {
            ax_error(in->cx, AX_ERR_CONCRETIZATION,
                     "bool() of a traced value: its truth depends on the data; use where or "
                     "cond");
            return false;
        }
        *out = ax_array_get_f64(v->arr, 0) != 0;
        return true;
    default:
        *out = true;
        return true;
    }
}

static ax_value *call1(ax_interp *in, ax_value *fn, ax_value *arg) {
    ax_args a = {.n = 1, .pos = &arg};
    return ax_call(in, fn, &a);
}

/* ---------------------------------------------------------------- print, str, repr */

static const char *optional_str(ax_interp *in, ax_value *v, const char *what, const char *dflt) {
    if (!v || v->kind == AX_V_NONE) return dflt;
    return ax_bi_str(in, v, what);
}

static ax_value *bi_print(ax_interp *in, ax_value *self, const ax_args *args) {
    static const char *const kw[] = {"sep", "end", "flush", NULL};
    if (!ax_bi_keywords(in, args, self->builtin->name, kw)) return NULL;
    const char *sep = optional_str(in, ax_bi_kwarg(args, "sep"), "sep", " ");
    const char *end = sep ? optional_str(in, ax_bi_kwarg(args, "end"), "end", "\n") : NULL;
    if (!end) return NULL;
    ax_strbuf s;
    ax_strbuf_init(&s);
    bool ok = true; /* a Ctrl-C stops a huge value's text or its writing */
    for (int i = 0; i < args->n && ok; i++) {
        if (i) ax_strbuf_append(&s, sep);
        ok = ax_value_format_checked(in, &s, args->pos[i]);
    }
    ax_strbuf_append(&s, end);
    if (ok && s.failed) ok = false, ax_error_oom(in->cx);
    if (ok && s.data) ok = ax_write_checked(in, stdout, s.data, s.len);
    ax_strbuf_free(&s);
    return ok ? ax_none() : NULL;
}

static ax_value *bi_str(ax_interp *in, ax_value *self, const ax_args *args) {
    static const char *const names[] = {"object", NULL};
    ax_value *v[1];
    if (!ax_bi_parse(in, args, self->builtin->name, names, 1, v)) return NULL;
    if (!v[0]) return ax_value_or_oom(in, ax_value_str(""));
    if (v[0]->kind == AX_V_STR) return ax_value_retain(v[0]);
    ax_strbuf s;
    ax_strbuf_init(&s);
    if (!ax_value_format_checked(in, &s, v[0])) {
        ax_strbuf_free(&s);
        return NULL;
    }
    return ax_value_str_take_buf(in, &s);
}

static ax_value *bi_repr(ax_interp *in, ax_value *self, const ax_args *args) {
    static const char *const names[] = {"object", NULL};
    ax_value *v[1];
    if (!ax_bi_parse(in, args, self->builtin->name, names, 1, v) ||
        !ax_bi_required(in, v[0], "repr", "object"))
        return NULL;
    ax_strbuf s;
    ax_strbuf_init(&s);
    if (v[0]->kind == AX_V_STR) {
        ax_strbuf_appendf(&s, "'%s'", v[0]->str);
    } else {
        /* A one-element list formats its element in the repr-like container form. */
        ax_value *wrap = ax_value_list(1, (ax_value *[]){ax_value_retain(v[0])});
        if (wrap) {
            ax_strbuf tmp;
            ax_strbuf_init(&tmp);
            ax_value_format(&tmp, wrap);
            if (tmp.data && tmp.len >= 2) {
                tmp.data[tmp.len - 1] = 0;
                ax_strbuf_append(&s, tmp.data + 1);
            }
            s.failed |= tmp.failed;
            ax_strbuf_free(&tmp);
            ax_value_release(wrap);
        } else {
            s.failed = true;
        }
    }
    return ax_value_str_take_buf(in, &s);
}

/* ---------------------------------------------------------------- len, range */

static ax_value *bi_len(ax_interp *in, ax_value *self, const ax_args *args) {
    static const char *const names[] = {"obj", NULL};
    ax_value *v[1];
    if (!ax_bi_parse(in, args, self->builtin->name, names, 1, v) ||
        !ax_bi_required(in, v[0], "len", "obj"))
        return NULL;
    ax_value *x = v[0];
    switch (x->kind) {
    case AX_V_LIST:
    case AX_V_TUPLE:
    case AX_V_DICT:
    case AX_V_SET:
        return ax_bi_int_value(in, x->n);
    case AX_V_STR: {
        int64_t n = 0;
        for (const char *p = x->str; *p; p++) n += ((unsigned char)*p & 0xC0) != 0x80;
        return ax_bi_int_value(in, n);
    }
    case AX_V_ARRAY:
        if (x->arr->ndim == 0) return ax_error(in->cx, AX_ERR_TYPE, "len() of unsized object");
        return ax_bi_int_value(in, x->arr->shape[0]);
    case AX_V_RANGE:
        return ax_bi_int_value(in, ax_range_len(x));
    case AX_V_OBJECT:
        if (x->obj.type->length) {
            int64_t n = x->obj.type->length(in, x, false);
            return n < 0 ? NULL : ax_bi_int_value(in, n);
        }
        /* fall through */
    default:
        return ax_error(in->cx, AX_ERR_TYPE, "object of type '%s' has no len()",
                        ax_value_kind_name(x->kind));
    }
}

/* range(stop), range(start, stop[, step]): Python's lazy range (for loops unroll over it). */
static ax_value *bi_range(ax_interp *in, ax_value *self, const ax_args *args) {
    static const char *const names[] = {"start", "stop", "step", NULL};
    ax_value *v[3];
    int64_t a, b, step;
    if (!ax_bi_parse(in, args, self->builtin->name, names, 3, v) ||
        !ax_bi_required(in, v[0], "range", "stop") || !ax_bi_int(in, v[0], "range()", 0, &a) ||
        !ax_bi_int(in, v[1], "range()", 0, &b) || !ax_bi_int(in, v[2], "range()", 1, &step))
        return NULL;
    if (!v[1]) {
        b = a;
        a = 0;
    }
    if (step == 0) return ax_error(in->cx, AX_ERR_VALUE, "range() arg 3 must not be zero");
    return ax_value_range(in, a, b, step);
}

/* ---------------------------------------------------------------- zip, enumerate, list, tuple */

static ax_value *bi_zip(ax_interp *in, ax_value *self, const ax_args *args) {
    if (!ax_bi_keywords(in, args, self->builtin->name, (const char *const[]){"strict", NULL}))
        return NULL;
    int k = args->n, n = k ? -1 : 0;
    int *lens = calloc((size_t)(k ? k : 1), sizeof *lens);
    ax_value ***cols = calloc((size_t)(k ? k : 1), sizeof *cols);
    ax_value **rows = NULL, *r = NULL;
    bool ok = lens && cols;
    int64_t shortest = -1; /* zip(range(10**9), xs) makes len(xs) ints, not 10**9 */
    for (int j = 0; j < k; j++) {
        int64_t len = ax_value_length(args->pos[j]);
        if (len >= 0 && (shortest < 0 || len < shortest)) shortest = len;
    }
    for (int j = 0; j < k && ok; j++) {
        ok = items_up_to(in, args->pos[j], "zip", shortest, &lens[j], &cols[j]);
        if (ok && (n < 0 || lens[j] < n)) n = lens[j];
    }
    if (ok) ok = (rows = calloc((size_t)(n > 0 ? n : 1), sizeof *rows)) != NULL;
    for (int i = 0; i < n && ok; i++) {
        ax_value **t = calloc((size_t)(k ? k : 1), sizeof *t);
        if (!(ok = t != NULL)) break;
        for (int j = 0; j < k; j++) t[j] = ax_value_retain(cols[j][i]);
        ok = (rows[i] = make_seq_take(in, true, k, t)) != NULL;
    }
    if (ok) {
        r = make_seq_take(in, false, n, rows);
        rows = NULL;
    } else if (!ax_error_pending(in->cx)) {
        ax_error_oom(in->cx);
    }
    release_items(n > 0 ? n : 0, rows);
    for (int j = 0; cols && lens && j < k; j++) release_items(lens[j], cols[j]);
    free(cols);
    free(lens);
    return r;
}

static ax_value *bi_enumerate(ax_interp *in, ax_value *self, const ax_args *args) {
    static const char *const names[] = {"iterable", "start", NULL};
    ax_value *v[2], **items;
    int64_t start;
    int n;
    if (!ax_bi_parse(in, args, self->builtin->name, names, 2, v) ||
        !ax_bi_required(in, v[0], "enumerate", "iterable") ||
        !ax_bi_int(in, v[1], "start", 0, &start) || !items_of(in, v[0], "enumerate", &n, &items))
        return NULL;
    int64_t last;
    if (n > 0 && !ax_add_i64(start, n - 1, &last)) {
        release_items(n, items);
        return ax_error(in->cx, AX_ERR_VALUE, "enumerate: start %lld + %d items overflows int64",
                        (long long)start, n);
    }
    for (int i = 0; i < n; i++) {
        ax_value *idx = ax_bi_int_value(in, start + i);
        if (!idx) {
            release_items(n, items);
            return NULL;
        }
        /* the pair takes both references, and releases them when it cannot be made */
        if (!(items[i] = ax_value_tuple(2, (ax_value *[]){idx, items[i]}))) {
            release_items(n, items);
            return ax_error_oom(in->cx);
        }
    }
    return make_seq_take(in, false, n, items);
}

static ax_value *to_seq(ax_interp *in, ax_value *self, const ax_args *args, bool tuple) {
    static const char *const names[] = {"iterable", NULL};
    ax_value *v[1], **items;
    int n;
    const char *f = self->builtin->name;
    if (!ax_bi_parse(in, args, f, names, 1, v)) return NULL;
    if (!v[0]) return ax_value_or_oom(in, tuple ? ax_value_tuple(0, NULL) : ax_value_list(0, NULL));
    if (!items_of(in, v[0], f, &n, &items)) return NULL;
    return make_seq_take(in, tuple, n, items);
}

static ax_value *bi_list(ax_interp *in, ax_value *self, const ax_args *args) {
    return to_seq(in, self, args, false);
}
static ax_value *bi_tuple(ax_interp *in, ax_value *self, const ax_args *args) {
    return to_seq(in, self, args, true);
}

static ax_value *bi_reversed(ax_interp *in, ax_value *self, const ax_args *args) {
    static const char *const names[] = {"seq", NULL};
    ax_value *v[1], **items;
    int n;
    if (!ax_bi_parse(in, args, self->builtin->name, names, 1, v) ||
        !ax_bi_required(in, v[0], "reversed", "seq") || !items_of(in, v[0], "reversed", &n, &items))
        return NULL;
    for (int i = 0; i < n / 2; i++) {
        ax_value *t = items[i];
        items[i] = items[n - 1 - i];
        items[n - 1 - i] = t;
    }
    return make_seq_take(in, false, n, items);
}

/* set(iterable=()) and frozenset(...): sets never change, so the two are one. */
static ax_value *bi_set(ax_interp *in, ax_value *self, const ax_args *args) {
    static const char *const names[] = {"iterable", NULL};
    ax_value *v[1];
    if (!ax_bi_parse(in, args, self->builtin->name, names, 1, v)) return NULL;
    if (!v[0]) {
        ax_value *s = ax_value_set(0, NULL);
        return s ? s : ax_error_oom(in->cx);
    }
    return ax_set_from(in, v[0]);
}

/* ---------------------------------------------------------------- dict */

/* Adds key/value (new references taken) to growing arrays (ax_value_dict_merged merges
 * repeated keys). */
static bool dict_put_take(ax_interp *in, int *n, ax_value ***keys, ax_value ***vals, int *cap,
                          ax_value *key, ax_value *val) {
    if (*n == *cap) {
        int c = *cap ? 2 * *cap : 8;
        ax_value **k = realloc(*keys, (size_t)c * sizeof *k);
        if (k) *keys = k;
        ax_value **v = k ? realloc(*vals, (size_t)c * sizeof *v) : NULL;
        if (v) *vals = v;
        if (!k || !v) {
            ax_value_release(key);
            ax_value_release(val);
            return ax_error_oom(in->cx), false;
        }
        *cap = c;
    }
    (*keys)[*n] = key;
    (*vals)[(*n)++] = val;
    return true;
}

static bool dict_from(ax_interp *in, ax_value *src, int *n, ax_value ***keys, ax_value ***vals,
                      int *cap) {
    if (src->kind == AX_V_DICT) {
        for (int i = 0; i < src->n; i++)
            if (!dict_put_take(in, n, keys, vals, cap, ax_value_retain(src->keys[i]),
                               ax_value_retain(src->items[i])))
                return false;
        return true;
    }
    if (src->kind != AX_V_LIST && src->kind != AX_V_TUPLE) {
        ax_error(in->cx, AX_ERR_TYPE, "dict() expects a dict or a list of (key, value) pairs");
        return false;
    }
    for (int i = 0; i < src->n; i++) {
        ax_value *p = src->items[i];
        if ((p->kind != AX_V_TUPLE && p->kind != AX_V_LIST) || p->n != 2) {
            ax_error(in->cx, AX_ERR_TYPE, "dict() needs (key, value) pairs");
            return false;
        }
        if (!ax_dict_key_check(in, p->items[0])) return false;
        if (!dict_put_take(in, n, keys, vals, cap, ax_value_retain(p->items[0]),
                           ax_value_retain(p->items[1])))
            return false;
    }
    return true;
}

static ax_value *bi_dict(ax_interp *in, ax_value *self, const ax_args *args) {
    (void)self;
    if (args->n > 1)
        return ax_error(in->cx, AX_ERR_TYPE, "dict() takes at most 1 positional argument");
    int n = 0, cap = 0;
    ax_value **keys = NULL, **vals = NULL;
    bool ok = args->n == 0 || dict_from(in, args->pos[0], &n, &keys, &vals, &cap);
    for (int k = 0; k < args->nkw && ok; k++) {
        ax_value *key = ax_value_or_oom(in, ax_value_str(args->kwnames[k]));
        ok =
            key && dict_put_take(in, &n, &keys, &vals, &cap, key, ax_value_retain(args->kwvals[k]));
    }
    if (!ok) {
        release_items(n, keys);
        release_items(n, vals);
        return NULL;
    }
    ax_value *r = ax_value_dict_merged(n, keys, vals);
    free(keys);
    free(vals);
    return ax_value_or_oom(in, r);
}

/* ---------------------------------------------------------------- int, float, bool */

static bool parse_number(ax_interp *in, const char *s, bool integer, double *f, int64_t *i) {
    char *end;
    errno = 0;
    if (integer)
        *i = strtoll(s, &end, 10);
    else
        *f = strtod(s, &end);
    while (*end == ' ' || *end == '\n' || *end == '\t') end++;
    if (end == s || *end || errno) {
        ax_error(in->cx, AX_ERR_VALUE, "invalid literal for %s(): '%s'", integer ? "int" : "float",
                 s);
        return false;
    }
    return true;
}

static ax_value *number(ax_interp *in, ax_value *self, const ax_args *args, bool integer) {
    static const char *const names[] = {"x", NULL};
    ax_value *v[1];
    const char *f = self->builtin->name;
    double d = 0;
    int64_t i = 0;
    if (!ax_bi_parse(in, args, f, names, 1, v)) return NULL;
    if (!v[0]) return integer ? ax_bi_int_value(in, 0) : ax_bi_float_value(in, 0);
    if (v[0]->kind == AX_V_STR) {
        if (!parse_number(in, v[0]->str, integer, &d, &i)) return NULL;
        return integer ? ax_bi_int_value(in, i) : ax_bi_float_value(in, d);
    }
    if (v[0]->kind != AX_V_ARRAY || v[0]->arr->size != 1)
        return ax_error(in->cx, AX_ERR_TYPE,
                        "%s() needs a number, a string or an array of one "
                        "element",
                        f);
    if (!ax_np_is_concrete(v[0]->arr))
        return ax_error(in->cx, AX_ERR_CONCRETIZATION,
                        "%s() of a traced value: the result would depend on the data", f);
    d = ax_array_get_f64(v[0]->arr, 0);
    if (!integer) return ax_bi_float_value(in, d);
    if (isnan(d) || isinf(d))
        return ax_error(in->cx, AX_ERR_VALUE, "cannot convert float %s to integer",
                        isnan(d) ? "NaN" : "infinity");
    /* (int64_t)d is undefined beyond int64: [-2**63, 2**63) is exactly representable */
    if (ax_dtype_is_float(v[0]->arr->dtype) &&
        !(d >= -9223372036854775808.0 && d < 9223372036854775808.0))
        return ax_error(in->cx, AX_ERR_VALUE, "int(): %g does not fit in a 64-bit integer", d);
    return ax_bi_int_value(
        in, ax_dtype_is_float(v[0]->arr->dtype) ? (int64_t)d : ax_array_get_i64(v[0]->arr, 0));
}

static ax_value *bi_int(ax_interp *in, ax_value *self, const ax_args *args) {
    return number(in, self, args, true);
}
static ax_value *bi_float(ax_interp *in, ax_value *self, const ax_args *args) {
    return number(in, self, args, false);
}

static ax_value *bi_bool(ax_interp *in, ax_value *self, const ax_args *args) {
    static const char *const names[] = {"x", NULL};
    ax_value *v[1];
    bool b = false;
    if (!ax_bi_parse(in, args, self->builtin->name, names, 1, v)) return NULL;
    if (v[0] && !truthy(in, v[0], &b)) return NULL;
    return ax_bi_bool_value(in, b);
}

/* ---------------------------------------------------------------- sorted, map, filter */

/* -1/0/1 ordering of two sort keys (numbers, strings, or tuples or lists of them, compared
 * item by item); false on incomparable keys. */
static bool compare_keys_at(ax_interp *in, ax_value *a, ax_value *b, int *out, int depth) {
    if (a->kind == AX_V_STR && b->kind == AX_V_STR) {
        int c = strcmp(a->str, b->str);
        *out = (c > 0) - (c < 0);
        return true;
    }
    if ((a->kind == AX_V_TUPLE || a->kind == AX_V_LIST) && a->kind == b->kind) {
        if (depth >= AX_MAX_VALUE_DEPTH) {
            ax_error(in->cx, AX_ERR_RECURSION, "sorted(): keys nested more than %d levels deep",
                     AX_MAX_VALUE_DEPTH);
            return false;
        }
        *out = 0;
        for (int i = 0; *out == 0 && i < a->n && i < b->n; i++)
            if (!compare_keys_at(in, a->items[i], b->items[i], out, depth + 1)) return false;
        if (*out == 0) *out = (a->n > b->n) - (a->n < b->n);
        return true;
    }
    double x, y;
    if (a->kind == AX_V_ARRAY && b->kind == AX_V_ARRAY && ax_bi_double(in, a, "sort key", 0, &x) &&
        ax_bi_double(in, b, "sort key", 0, &y)) {
        *out = (x > y) - (x < y);
        return true;
    }
    if (!ax_error_pending(in->cx))
        ax_error(in->cx, AX_ERR_TYPE,
                 "sorted() can only compare numbers, strings, and tuples or lists of them");
    return false;
}

static bool compare_keys(ax_interp *in, ax_value *a, ax_value *b, int *out) {
    return compare_keys_at(in, a, b, out, 0);
}

/* Stable merge sort of idx[0..n) by keys; false when a comparison fails. */
static bool merge_sort(ax_interp *in, int *idx, int *tmp, int n, ax_value **keys, bool reverse) {
    if (n < 2) return true;
    int h = n / 2;
    if (!merge_sort(in, idx, tmp, h, keys, reverse) ||
        !merge_sort(in, idx + h, tmp, n - h, keys, reverse))
        return false;
    int i = 0, j = h, k = 0;
    while (i < h && j < n) {
        int c;
        if (!compare_keys(in, keys[idx[j]], keys[idx[i]], &c)) return false;
        tmp[k++] = (reverse ? c > 0 : c < 0) ? idx[j++] : idx[i++];
    }
    while (i < h) tmp[k++] = idx[i++];
    while (j < n) tmp[k++] = idx[j++];
    memcpy(idx, tmp, (size_t)n * sizeof *idx);
    return true;
}

static ax_value *bi_sorted(ax_interp *in, ax_value *self, const ax_args *args) {
    static const char *const names[] = {"iterable", "key", "reverse", NULL};
    ax_value *v[3], **items, **keys = NULL, *r = NULL;
    bool reverse;
    int n;
    if (!ax_bi_parse(in, args, self->builtin->name, names, 1, v) ||
        !ax_bi_required(in, v[0], "sorted", "iterable") ||
        !ax_bi_bool(in, v[2], "reverse", false, &reverse) ||
        !items_of(in, v[0], "sorted", &n, &items))
        return NULL;
    bool has_key = v[1] && v[1]->kind != AX_V_NONE;
    keys = calloc((size_t)(n ? n : 1), sizeof *keys);
    int *idx = calloc((size_t)(n ? n : 1), sizeof *idx),
        *tmp = calloc((size_t)(n ? n : 1), sizeof *tmp);
    bool ok = keys && idx && tmp;
    for (int i = 0; i < n && ok; i++) {
        idx[i] = i;
        ok = (keys[i] = has_key ? call1(in, v[1], items[i]) : ax_value_retain(items[i])) != NULL;
    }
    if (ok && merge_sort(in, idx, tmp, n, keys, reverse)) {
        ax_value **out = calloc((size_t)(n ? n : 1), sizeof *out);
        if (out) {
            for (int i = 0; i < n; i++) out[i] = ax_value_retain(items[idx[i]]);
            r = make_seq_take(in, false, n, out);
        }
    }
    if (!r && !ax_error_pending(in->cx)) ax_error_oom(in->cx);
    release_items(n, keys);
    release_items(n, items);
    free(idx);
    free(tmp);
    return r;
}

static ax_value *bi_map(ax_interp *in, ax_value *self, const ax_args *args) {
    if (!ax_bi_keywords(in, args, self->builtin->name, (const char *const[]){NULL})) return NULL;
    if (args->n < 2) return ax_error(in->cx, AX_ERR_TYPE, "map() needs a function and an iterable");
    /* zip the iterables, then call the function on each tuple's elements */
    ax_args rest = {.n = args->n - 1, .pos = args->pos + 1};
    ax_value *zipped = bi_zip(in, self, &rest);
    if (!zipped) return NULL;
    int n = zipped->n;
    ax_value **out = calloc((size_t)(n ? n : 1), sizeof *out);
    int i = 0;
    for (; out && i < n; i++) {
        ax_value *t = zipped->items[i];
        ax_args call = {.n = t->n, .pos = t->items};
        if (!(out[i] = ax_call(in, args->pos[0], &call))) break;
    }
    ax_value *r = NULL;
    if (!out)
        ax_error_oom(in->cx);
    else if (i == n)
        r = make_seq_take(in, false, n, out);
    else
        release_items(i, out);
    ax_value_release(zipped);
    return r;
}

static ax_value *bi_filter(ax_interp *in, ax_value *self, const ax_args *args) {
    static const char *const names[] = {"function", "iterable", NULL};
    ax_value *v[2], **items;
    int n, kept = 0;
    if (!ax_bi_parse(in, args, self->builtin->name, names, 2, v) ||
        !ax_bi_required(in, v[1], "filter", "iterable") ||
        !items_of(in, v[1], "filter", &n, &items))
        return NULL;
    bool ok = true;
    for (int i = 0; i < n && ok; i++) {
        bool keep;
        ax_value *t =
            v[0] && v[0]->kind != AX_V_NONE ? call1(in, v[0], items[i]) : ax_value_retain(items[i]);
        ok = t && truthy(in, t, &keep);
        if (t) ax_value_release(t);
        if (!ok) break;
        ax_value *item = items[i];
        items[i] = NULL;
        if (keep)
            items[kept++] = item;
        else
            ax_value_release(item);
    }
    if (!ok) {
        release_items(n, items);
        return NULL;
    }
    return make_seq_take(in, false, kept, items);
}

/* ---------------------------------------------------------------- attributes */

static ax_value *attribute(ax_interp *in, ax_value *self, const ax_args *args, bool has) {
    static const char *const names[] = {"object", "name", "default", NULL};
    ax_value *v[3];
    const char *f = self->builtin->name;
    if (!ax_bi_parse(in, args, f, names, 3, v) || !ax_bi_required(in, v[0], f, "object") ||
        !ax_bi_required(in, v[1], f, "name"))
        return NULL;
    const char *name = ax_bi_str(in, v[1], "attribute name");
    if (!name) return NULL;
    ax_value *r = ax_getattr(in, v[0], name);
    if (!r && in->cx->err.kind == AX_ERR_ATTRIBUTE && (has || v[2])) {
        ax_error_clear(in->cx);
        return has ? ax_bi_bool_value(in, false) : ax_value_retain(v[2]);
    }
    if (!has || !r) return r;
    ax_value_release(r);
    return ax_bi_bool_value(in, true);
}

static ax_value *bi_hasattr(ax_interp *in, ax_value *self, const ax_args *args) {
    return attribute(in, self, args, true);
}
static ax_value *bi_getattr(ax_interp *in, ax_value *self, const ax_args *args) {
    return attribute(in, self, args, false);
}

/* ---------------------------------------------------------------- dir */

typedef struct name_list {
    char **names;
    int n, cap;
    bool failed;
} name_list;

static void collect_name(void *arg, const char *name) {
    name_list *l = arg;
    if (l->failed) return;
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 32;
        char **grown = realloc(l->names, (size_t)cap * sizeof *grown);
        if (!grown) {
            l->failed = true;
            return;
        }
        l->names = grown;
        l->cap = cap;
    }
    if (!(l->names[l->n] = strdup(name)))
        l->failed = true;
    else
        l->n++;
}

static int compare_names(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* dir(object): the names getattr resolves on it (the ones Tab completes), sorted. */
static ax_value *bi_dir(ax_interp *in, ax_value *self, const ax_args *args) {
    (void)self;
    if (!ax_args_check(in, args, "dir", 1, (const char *[]){"object", NULL})) return NULL;
    ax_value *obj = ax_arg(args, 0, "object");
    if (!obj)
        return ax_error(in->cx, AX_ERR_TYPE,
                        "dir() needs an object in ax: dir(x) lists x's attributes (a scope's "
                        "names are not a value)");
    name_list l = {0};
    ax_value_each_attr(in, obj, collect_name, &l);
    ax_value **items = l.failed ? NULL : calloc((size_t)l.n + 1, sizeof *items);
    bool ok = items != NULL;
    int n = 0;
    if (ok && l.n) qsort(l.names, (size_t)l.n, sizeof *l.names, compare_names);
    for (int i = 0; ok && i < l.n; i++) {
        if (n && strcmp(l.names[i], items[n - 1]->str) == 0) continue; /* named twice */
        if (!(items[n] = ax_value_str(l.names[i])))
            ok = false;
        else
            n++;
    }
    for (int i = 0; i < l.n; i++) free(l.names[i]);
    free(l.names);
    if (ok) return make_seq_take(in, false, n, items);
    release_items(n, items);
    return ax_error_oom(in->cx);
}

const ax_builtin_def ax_builtins_py[] = {
    {"print", bi_print, "print(*values, sep=' ', end='\\n'): writes the values' str forms", 0},
    {"len", bi_len, "len(obj): the number of items (an array's leading dimension)", 0},
    {"range", bi_range, "class range(start, stop, step=1): the ints from start to stop, lazily", 0},
    {"zip", bi_zip, "zip(*iterables): a list of tuples of corresponding items", 0},
    {"enumerate", bi_enumerate, "enumerate(iterable, start=0): a list of (index, item) pairs", 0},
    {"list", bi_list, "class list(iterable=()): a list of the items", 0},
    {"tuple", bi_tuple, "class tuple(iterable=()): a tuple of the items", 0},
    {"dict", bi_dict, "class dict(pairs=(), **kw): a dict from pairs and keywords", 0},
    {"set", bi_set, "class set(iterable=()): the distinct items, as a set (sets never change)", 0},
    {"frozenset", bi_set, "class frozenset(iterable=()): the same as set(): ax's sets never change",
     0},
    {"str", bi_str, "class str(object): the text form of object, as print writes it", 0},
    {"repr", bi_repr, "repr(object): the text form of object as it shows inside a container", 0},
    {"int", bi_int, "class int(x): x as an integer (truncated toward zero)", 0},
    {"float", bi_float, "class float(x): x as a float", 0},
    {"bool", bi_bool, "class bool(x): the truth value of x", 0},
    {"sorted", bi_sorted, "sorted(iterable, key=None, reverse=False): a sorted list (stable)", 0},
    {"reversed", bi_reversed, "reversed(seq): a list of the items in reverse order", 0},
    {"map", bi_map, "map(f, *iterables): the list of f applied to corresponding items", 0},
    {"filter", bi_filter, "filter(f, iterable): the list of items for which f(item) is true", 0},
    {"hasattr", bi_hasattr, "hasattr(object, name): whether object has the attribute", 0},
    {"getattr", bi_getattr, "getattr(object, name, default): the attribute called name", 0},
    {"dir", bi_dir, "dir(object): the sorted names of object's attributes (what Tab completes)", 0},
    {NULL, NULL, NULL, 0},
};

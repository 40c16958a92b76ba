/* Values of the language: construction, reference counting, description and printing. */
#include "value.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cycles.h"
#include "eval.h"
#include "interp.h"

/* None is immortal: its count is never touched, so sharing it needs no mutable global. */
static ax_value none_value = {.refs = -1, .kind = AX_V_NONE};

ax_value *ax_value_retain(ax_value *v) {
    assert(!v || v->refs != 0); /* retaining a released value (None counts -1: immortal) */
    if (v && v->refs >= 0) v->refs++;
    return v;
}

/* Values to destroy, kept on the heap so that freeing a deeply nested container does not
 * recurse once per level. */
typedef struct dead_list {
    ax_value **items;
    size_t n, cap;
    ax_value *inline_items[32];
} dead_list;

static void drop(dead_list *d, ax_value *v);

static void drop_items(dead_list *d, ax_value **items, int n) {
    if (!items) return;
    for (int i = 0; i < n; i++) drop(d, items[i]);
    free(items);
}

/* Frees a closure, queueing the values it holds (a chain of closures, each capturing the
 * previous one, frees without recursion). */
static void drop_closure(dead_list *d, ax_closure *c) {
    ax_env *env = c->captured;
    if (env) {
        for (int i = 0; i < env->n; i++) {
            drop(d, env->vals[i]);
            free(env->names[i]);
        }
        env->n = 0;
    }
    if (c->defaults) {
        for (int i = 0; i < c->def->nparams; i++) drop(d, c->defaults[i]);
        free(c->defaults);
        c->defaults = NULL;
    }
    ax_closure_free(c); /* the rest: names, the program reference */
}

static void value_destroy(dead_list *d, ax_value *v) {
    switch (v->kind) {
    case AX_V_ARRAY:
        ax_array_release(v->arr);
        break;
    case AX_V_STR:
        free(v->str);
        break;
    case AX_V_DICT:
        drop_items(d, v->keys, v->n); /* fall through */
    case AX_V_TUPLE:
    case AX_V_LIST:
    case AX_V_SLICE:
    case AX_V_SET:
        drop_items(d, v->items, v->n);
        break;
    case AX_V_FUNC:
        drop_closure(d, v->fn);
        break;
    case AX_V_BUILTIN:
        drop(d, v->builtin->data);
        free(v->builtin);
        break;
    case AX_V_OBJECT:
        if (v->obj.type->free) v->obj.type->free(v->obj.payload);
        break;
    default:
        break;
    }
    free(v);
}

/* Releases one reference; a value that dies is queued (or destroyed at once if the queue
 * cannot grow). */
static void drop(dead_list *d, ax_value *v) {
    assert(!v || v->refs != 0);
    if (!v || v->refs < 0) return;
    if (--v->refs > 0) {
        if (v->refs <= v->cycle_refs) ax_cycles_collect(v);
        return;
    }
    if (d->n == d->cap) {
        size_t cap = 2 * d->cap;
        ax_value **items = d->items == d->inline_items ? malloc(cap * sizeof *items)
                                                       : realloc(d->items, cap * sizeof *items);
        if (!items) {
            value_destroy(d, v);
            return;
        }
        if (d->items == d->inline_items) memcpy(items, d->inline_items, sizeof d->inline_items);
        d->items = items;
        d->cap = cap;
    }
    d->items[d->n++] = v;
}

/* The release loop running on this thread, if any. A value released while another is being
 * destroyed (an object's free function releasing what it holds: jit(jit(...)), custom_jvp of
 * a custom_jvp function) joins that loop instead of starting a nested one, so that chains of
 * objects free without recursion. Thread-local rather than in ax_ctx: values do not know
 * their context, and each thread's loop is its own. */
static _Thread_local dead_list *active_release;

void ax_value_release(ax_value *v) {
    if (active_release) {
        drop(active_release, v);
        return;
    }
    assert(!v || v->refs != 0); /* releasing more references than were taken */
    if (!v || v->refs < 0) return;
    if (--v->refs > 0) {
        if (v->refs <= v->cycle_refs) ax_cycles_collect(v); /* perhaps its cycle's last */
        return;
    }
    dead_list d = {.n = 0, .cap = 32};
    d.items = d.inline_items;
    active_release = &d;
    value_destroy(&d, v);
    while (d.n > 0) value_destroy(&d, d.items[--d.n]);
    active_release = NULL;
    if (d.items != d.inline_items) free(d.items);
}

static ax_value *value_new(ax_value_kind kind) {
    ax_value *v = calloc(1, sizeof *v);
    if (!v) return NULL;
    v->refs = 1;
    v->kind = kind;
    return v;
}

ax_value *ax_none(void) {
    return &none_value;
}

ax_value *ax_value_array(ax_array *a) {
    if (!a) return NULL;
    ax_value *v = value_new(AX_V_ARRAY);
    if (!v) {
        ax_array_release(a);
        return NULL;
    }
    v->arr = a;
    return v;
}

ax_value *ax_value_str(const char *s) {
    ax_value *v = value_new(AX_V_STR);
    if (!v) return NULL;
    v->str = strdup(s ? s : "");
    if (!v->str) {
        free(v);
        return NULL;
    }
    return v;
}

static ax_value *sequence_new(ax_value_kind kind, int n, ax_value **items, ax_value **keys) {
    ax_value *v = value_new(kind);
    ax_value **copy = malloc((size_t)(n ? n : 1) * sizeof *copy);
    ax_value **kcopy = keys ? malloc((size_t)(n ? n : 1) * sizeof *kcopy) : NULL;
    if (!v || !copy || (keys && !kcopy)) {
        free(v);
        free(copy);
        free(kcopy);
        for (int i = 0; i < n; i++) {
            ax_value_release(items[i]);
            if (keys) ax_value_release(keys[i]);
        }
        return NULL;
    }
    if (n) memcpy(copy, items, (size_t)n * sizeof *copy);
    if (keys && n) memcpy(kcopy, keys, (size_t)n * sizeof *kcopy);
    v->items = copy;
    v->keys = kcopy;
    v->n = n;
    return v;
}

ax_value *ax_value_tuple(int n, ax_value **items) {
    return sequence_new(AX_V_TUPLE, n, items, NULL);
}
ax_value *ax_value_list(int n, ax_value **items) {
    return sequence_new(AX_V_LIST, n, items, NULL);
}
ax_value *ax_value_dict(int n, ax_value **keys, ax_value **vals) {
    return sequence_new(AX_V_DICT, n, vals, keys);
}

/* Where key k is among keys[0..) indexed by slot (entry + 1, 0 empty; mask + 1 slots), or the
 * empty slot where it goes. */
static size_t key_slot(ax_value **keys, const int *slot, size_t mask, const ax_value *k) {
    size_t h = (size_t)ax_dict_key_hash(k) & mask;
    while (slot[h] && !ax_dict_key_equal(keys[slot[h] - 1], k)) h = (h + 1) & mask;
    return h;
}

ax_value *ax_value_dict_merged(int n, ax_value **keys, ax_value **vals) {
    size_t cap = 16;
    while (cap < 2 * (size_t)n) cap *= 2;
    int *slot = calloc(cap, sizeof *slot);
    if (!slot) {
        for (int i = 0; i < n; i++) ax_value_release(keys[i]), ax_value_release(vals[i]);
        return NULL;
    }
    int m = 0; /* the entries kept, in place at the front */
    for (int i = 0; i < n; i++) {
        size_t h = key_slot(keys, slot, cap - 1, keys[i]);
        if (slot[h]) { /* a repeated key: its first place, the last value */
            ax_value_release(keys[i]);
            ax_value_release(vals[slot[h] - 1]);
            vals[slot[h] - 1] = vals[i];
            continue;
        }
        keys[m] = keys[i], vals[m] = vals[i];
        slot[h] = ++m;
    }
    free(slot);
    return sequence_new(AX_V_DICT, m, vals, keys);
}

/* Stable merge sort of v[0..n) by ax_dict_key_order (tmp: scratch of n). */
static void sort_keys(ax_value **v, ax_value **tmp, int n) {
    if (n < 2) return;
    int h = n / 2, i = 0, j = h, k = 0;
    sort_keys(v, tmp, h);
    sort_keys(v + h, tmp, n - h);
    while (i < h && j < n) tmp[k++] = ax_dict_key_order(v[j], v[i]) < 0 ? v[j++] : v[i++];
    while (i < h) tmp[k++] = v[i++];
    while (j < n) tmp[k++] = v[j++];
    memcpy(v, tmp, (size_t)n * sizeof *v);
}

ax_value *ax_value_set(int n, ax_value **items) {
    ax_value **tmp = malloc((size_t)(n ? n : 1) * sizeof *tmp);
    if (!tmp) {
        for (int i = 0; i < n; i++) ax_value_release(items[i]);
        return NULL;
    }
    sort_keys(items, tmp, n);
    free(tmp);
    int m = 0; /* equal items sit together, the first one made first: keep it */
    for (int i = 0; i < n; i++) {
        if (m > 0 && ax_dict_key_equal(items[m - 1], items[i]))
            ax_value_release(items[i]);
        else
            items[m++] = items[i];
    }
    return sequence_new(AX_V_SET, m, items, NULL);
}

ax_value *ax_value_builtin(const char *name, const char *doc, ax_builtin_fn fn, ax_value *data) {
    /* One allocation holds the struct and copies of both strings. */
    size_t nlen = strlen(name ? name : "") + 1, dlen = doc ? strlen(doc) + 1 : 0;
    ax_value *v = value_new(AX_V_BUILTIN);
    ax_builtin *b = malloc(sizeof *b + nlen + dlen);
    if (!v || !b) {
        free(v);
        free(b);
        ax_value_release(data);
        return NULL;
    }
    char *names = (char *)(b + 1);
    memcpy(names, name ? name : "", nlen);
    if (doc) memcpy(names + nlen, doc, dlen);
    *b = (ax_builtin){.name = names, .doc = doc ? names + nlen : NULL, .fn = fn, .data = data};
    v->builtin = b;
    return v;
}

ax_value *ax_value_dtype(ax_dtype t) {
    ax_value *v = value_new(AX_V_DTYPE);
    if (v) v->dtype = t;
    return v;
}

ax_value *ax_value_object(const ax_object_type *type, void *payload) {
    ax_value *v = value_new(AX_V_OBJECT);
    if (!v) {
        if (type->free) type->free(payload);
        return NULL;
    }
    v->obj.type = type;
    v->obj.payload = payload;
    return v;
}

/* The number of ints of range(start, stop, step), in unsigned arithmetic: stop - start may
 * not fit an int64. */
static uint64_t range_count(int64_t start, int64_t stop, int64_t step) {
    uint64_t span = step > 0 ? (stop > start ? (uint64_t)stop - (uint64_t)start : 0)
                             : (start > stop ? (uint64_t)start - (uint64_t)stop : 0);
    uint64_t by = step > 0 ? (uint64_t)step : 0 - (uint64_t)step;
    return span ? (span - 1) / by + 1 : 0;
}

ax_value *ax_value_range(ax_interp *in, int64_t start, int64_t stop, int64_t step) {
    if (range_count(start, stop, step) > (uint64_t)INT64_MAX)
        return ax_error(in->cx, AX_ERR_VALUE, "range() has more than 2**63 - 1 elements");
    ax_value *v = value_new(AX_V_RANGE);
    if (!v) return ax_error_oom(in->cx);
    v->range.start = start;
    v->range.stop = stop;
    v->range.step = step;
    return v;
}

int64_t ax_range_len(const ax_value *r) {
    return (int64_t)range_count(r->range.start, r->range.stop, r->range.step);
}

int64_t ax_range_item(const ax_value *r, int64_t i) {
    /* wraps modulo 2**64 on the way, lands on the (representable) item */
    return (int64_t)((uint64_t)r->range.start + (uint64_t)i * (uint64_t)r->range.step);
}

ax_value *ax_range_tuple(ax_interp *in, const ax_value *r, int64_t max) {
    int64_t n = ax_range_len(r);
    if (n > max)
        return ax_error(in->cx, AX_ERR_VALUE, "a range of %lld ints is too long for this argument",
                        (long long)n);
    ax_value **items = calloc((size_t)(n ? n : 1), sizeof *items);
    if (!items) return ax_error_oom(in->cx);
    for (int64_t i = 0; i < n; i++)
        if (!(items[i] = ax_value_int(in, ax_range_item(r, i)))) {
            while (i-- > 0) ax_value_release(items[i]);
            free(items);
            return NULL;
        }
    ax_value *t = ax_value_tuple((int)n, items);
    free(items);
    return t ? t : ax_error_oom(in->cx);
}

int64_t ax_value_length(const ax_value *v) {
    switch (v->kind) {
    case AX_V_TUPLE:
    case AX_V_LIST:
    case AX_V_DICT:
    case AX_V_SET:
        return v->n;
    case AX_V_STR: { /* characters, not bytes */
        int64_t n = 0;
        for (const char *p = v->str; *p; p++) n += ((unsigned char)*p & 0xC0) != 0x80;
        return n;
    }
    case AX_V_RANGE:
        return ax_range_len(v);
    case AX_V_ARRAY:
        return v->arr->ndim > 0 ? v->arr->shape[0] : -1;
    default:
        return -1;
    }
}

ax_value *ax_value_module(ax_module *m) {
    ax_value *v = value_new(AX_V_MODULE);
    if (v) v->module = m;
    return v;
}

ax_value *ax_value_slice(ax_value *start, ax_value *stop, ax_value *step) {
    ax_value *parts[3] = {start, stop, step};
    return sequence_new(AX_V_SLICE, 3, parts, NULL);
}

ax_value *ax_value_ellipsis(void) {
    return value_new(AX_V_ELLIPSIS);
}

static ax_value *weak_scalar(ax_interp *in, ax_array *a) {
    if (!a) return NULL;
    a->weak = true;
    ax_value *v = ax_value_array(a);
    return v ? v : ax_error_oom(in->cx);
}

ax_value *ax_value_int(ax_interp *in, int64_t v) {
    /* A literal that does not fit i32 becomes i64 rather than silently wrapping. */
    bool fits = v >= INT32_MIN && v <= INT32_MAX;
    ax_dtype t = in->cx->x64 || !fits ? AX_I64 : AX_I32;
    return weak_scalar(in, ax_array_scalar_i64(in->cx, t, v));
}

ax_value *ax_value_float(ax_interp *in, double v) {
    return weak_scalar(in, ax_array_scalar(in->cx, ax_dtype_default_float(in->cx->x64), v));
}

ax_value *ax_value_bool(ax_interp *in, bool v) {
    ax_value *r = ax_value_array(ax_array_scalar_i64(in->cx, AX_BOOL, v));
    return r ? r : ax_error_oom(in->cx);
}

static const char *const kind_names[AX_V_NKINDS] = {
    [AX_V_NONE] = "NoneType", [AX_V_ARRAY] = "array",     [AX_V_STR] = "str",
    [AX_V_TUPLE] = "tuple",   [AX_V_LIST] = "list",       [AX_V_DICT] = "dict",
    [AX_V_FUNC] = "function", [AX_V_BUILTIN] = "builtin", [AX_V_MODULE] = "module",
    [AX_V_DTYPE] = "dtype",   [AX_V_SLICE] = "slice",     [AX_V_ELLIPSIS] = "ellipsis",
    [AX_V_OBJECT] = "object", [AX_V_RANGE] = "range",     [AX_V_SET] = "set",
};

const char *ax_value_kind_name(ax_value_kind kind) {
    return kind >= 0 && kind < AX_V_NKINDS ? kind_names[kind] : "value";
}

void ax_value_describe(char *out, size_t cap, const ax_value *v) {
    if (!v) {
        snprintf(out, cap, "nothing");
    } else if (v->kind == AX_V_ARRAY) {
        ax_array_type_format(out, cap, v->arr);
    } else if (v->kind == AX_V_OBJECT) {
        snprintf(out, cap, "%s", v->obj.type->name);
    } else {
        snprintf(out, cap, "%s", ax_value_kind_name(v->kind));
    }
}

ax_value *ax_dict_get(const ax_value *dict, const char *key) {
    if (!dict || dict->kind != AX_V_DICT) return NULL;
    for (int i = 0; i < dict->n; i++)
        if (dict->keys[i]->kind == AX_V_STR && strcmp(dict->keys[i]->str, key) == 0)
            return dict->items[i];
    return NULL;
}

/* ---- dict keys ---- */

/* A concrete scalar (a Python number or bool): the only arrays that can be keys. */
static bool is_key_scalar(const ax_value *v) {
    return v->kind == AX_V_ARRAY && v->arr->ndim == 0 && v->arr->buf && !v->arr->tracer;
}

static bool key_check_at(ax_interp *in, const ax_value *key, int depth) {
    char d[128];
    switch (key->kind) {
    case AX_V_STR:
    case AX_V_NONE:
    case AX_V_DTYPE:
    case AX_V_ELLIPSIS:
        return true;
    case AX_V_ARRAY:
        if (is_key_scalar(key)) return true;
        ax_value_describe(d, sizeof d, key);
        if (key->arr->tracer)
            ax_error(in->cx, AX_ERR_CONCRETIZATION,
                     "a dict key must be a concrete value, not a traced %s (keys cannot depend "
                     "on the values a transformation traces)",
                     d);
        else
            ax_error(in->cx, AX_ERR_TYPE,
                     "unhashable type: an array (%s) cannot be a dict key (use a number, a "
                     "string or a tuple of them, e.g. tuple(x.tolist()))",
                     d);
        return false;
    case AX_V_TUPLE:
        if (depth >= AX_MAX_VALUE_DEPTH) {
            ax_error(in->cx, AX_ERR_RECURSION, "a dict key nested more than %d levels deep",
                     AX_MAX_VALUE_DEPTH);
            return false;
        }
        for (int i = 0; i < key->n; i++)
            if (!key_check_at(in, key->items[i], depth + 1)) return false;
        return true;
    default:
        ax_value_describe(d, sizeof d, key);
        ax_error(in->cx, AX_ERR_TYPE,
                 "unhashable type: %s cannot be a dict key (keys are strings, numbers, None "
                 "and tuples of them)",
                 d);
        return false;
    }
}

bool ax_dict_key_check(ax_interp *in, const ax_value *key) {
    return key_check_at(in, key, 0);
}

/* Scalars compare by value across dtypes, as Python's 1 == 1.0 == True. */
static int compare_scalars(const ax_array *a, const ax_array *b) {
    if (ax_dtype_is_float(a->dtype) || ax_dtype_is_float(b->dtype)) {
        double x = ax_array_get_f64(a, 0), y = ax_array_get_f64(b, 0);
        return x < y ? -1 : x > y ? 1 : 0;
    }
    int64_t x = ax_array_get_i64(a, 0), y = ax_array_get_i64(b, 0);
    return x < y ? -1 : x > y ? 1 : 0;
}

/* Kinds in the order that sorts keys of different kinds (Python cannot compare them; tree
 * functions still need an order): None, numbers, strings, tuples, dtypes, `...`. */
static int key_rank(const ax_value *k) {
    switch (k->kind) {
    case AX_V_NONE:
        return 0;
    case AX_V_ARRAY:
        return 1;
    case AX_V_STR:
        return 2;
    case AX_V_TUPLE:
        return 3;
    case AX_V_DTYPE:
        return 4;
    default:
        return 5;
    }
}

int ax_dict_key_order(const ax_value *a, const ax_value *b) {
    int ra = key_rank(a), rb = key_rank(b);
    if (ra != rb) return ra < rb ? -1 : 1;
    switch (a->kind) {
    case AX_V_ARRAY: {
        int c = compare_scalars(a->arr, b->arr);
        /* NaN keys: equal to nothing, not even each other; ordered by address */
        if (c == 0 && a != b && !ax_dict_key_equal(a, b)) return a < b ? -1 : 1;
        return c;
    }
    case AX_V_STR:
        return strcmp(a->str, b->str);
    case AX_V_DTYPE:
        return a->dtype < b->dtype ? -1 : a->dtype > b->dtype;
    case AX_V_TUPLE:
        for (int i = 0; i < a->n && i < b->n; i++) {
            int c = ax_dict_key_order(a->items[i], b->items[i]);
            if (c) return c;
        }
        return a->n < b->n ? -1 : a->n > b->n;
    default:
        return 0;
    }
}

bool ax_dict_key_equal(const ax_value *a, const ax_value *b) {
    if (a == b) return true;
    if (a->kind != b->kind) return false;
    switch (a->kind) {
    case AX_V_STR:
        return strcmp(a->str, b->str) == 0;
    case AX_V_ARRAY: {
        if (!is_key_scalar(a) || !is_key_scalar(b)) return false;
        bool floats = ax_dtype_is_float(a->arr->dtype) || ax_dtype_is_float(b->arr->dtype);
        return floats ? ax_array_get_f64(a->arr, 0) == ax_array_get_f64(b->arr, 0)
                      : ax_array_get_i64(a->arr, 0) == ax_array_get_i64(b->arr, 0);
    }
    case AX_V_DTYPE:
        return a->dtype == b->dtype;
    case AX_V_TUPLE:
        if (a->n != b->n) return false;
        for (int i = 0; i < a->n; i++)
            if (!ax_dict_key_equal(a->items[i], b->items[i])) return false;
        return true;
    case AX_V_NONE:
    case AX_V_ELLIPSIS:
        return true;
    default:
        return false;
    }
}

static uint64_t mix_hash(uint64_t h, uint64_t v) {
    return (h ^ v) * 0x100000001B3ull + (h >> 29);
}

uint64_t ax_dict_key_hash(const ax_value *k) {
    uint64_t h = 0xCBF29CE484222325ull ^ (uint64_t)key_rank(k);
    switch (k->kind) {
    case AX_V_STR:
        for (const char *c = k->str; *c; c++) h = mix_hash(h, (unsigned char)*c);
        return h;
    case AX_V_ARRAY: { /* numbers equal across dtypes hash alike: 1, 1.0, True */
        if (!is_key_scalar(k)) return h;
        double d = ax_array_get_f64(k->arr, 0);
        if (!ax_dtype_is_float(k->arr->dtype))
            return mix_hash(h, (uint64_t)ax_array_get_i64(k->arr, 0));
        if (d != d) return mix_hash(h, 1); /* NaN: equal to nothing, any hash will do */
        if (d >= -0x1p63 && d < 0x1p63 && d == (double)(int64_t)d)
            return mix_hash(h, (uint64_t)(int64_t)d);
        uint64_t bits;
        memcpy(&bits, &d, sizeof bits);
        return mix_hash(h, bits);
    }
    case AX_V_TUPLE:
        for (int i = 0; i < k->n; i++) h = mix_hash(h, ax_dict_key_hash(k->items[i]));
        return mix_hash(h, (uint64_t)k->n);
    case AX_V_DTYPE:
        return mix_hash(h, (uint64_t)k->dtype);
    default:
        return h;
    }
}

int ax_dict_index(const ax_value *dict, const ax_value *key) {
    if (!dict || dict->kind != AX_V_DICT) return -1;
    for (int i = 0; i < dict->n; i++)
        if (ax_dict_key_equal(dict->keys[i], key)) return i;
    return -1;
}

ax_value *ax_dict_lookup(const ax_value *dict, const ax_value *key) {
    int i = ax_dict_index(dict, key);
    return i < 0 ? NULL : dict->items[i];
}

/* ---- printing ---- */

void ax_format_string_repr(ax_strbuf *out, const char *s) {
    /* Python's choice: single quotes unless the text has a ' and no ". */
    char q = strchr(s, '\'') && !strchr(s, '"') ? '"' : '\'';
    char buf[8];
    ax_strbuf_appendf(out, "%c", q);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        const char *esc = NULL;
        switch (*p) {
        case '\\':
            esc = "\\\\";
            break;
        case '\n':
            esc = "\\n";
            break;
        case '\t':
            esc = "\\t";
            break;
        case '\r':
            esc = "\\r";
            break;
        default:
            if (*p == (unsigned char)q) {
                snprintf(buf, sizeof buf, "\\%c", q);
                esc = buf;
            } else if (*p < 0x20 || *p == 0x7f) {
                snprintf(buf, sizeof buf, "\\x%02x", *p);
                esc = buf;
            }
        }
        if (esc) {
            ax_strbuf_append(out, esc);
        } else {
            char c[2] = {(char)*p, 0};
            ax_strbuf_append(out, c);
        }
    }
    ax_strbuf_appendf(out, "%c", q);
}

static void format_array(ax_strbuf *out, const ax_array *a, bool in_container) {
    if (!a->buf) { /* an abstract tracer: only its type is known */
        char type[128];
        ax_array_type_format(type, sizeof type, a);
        ax_strbuf_appendf(out, "Traced<%s>", type);
    } else if (in_container && a->ndim == 0) {
        ax_format_scalar(out, a);
    } else {
        ax_format_array(out, a);
    }
}

/* Containers nested deeper than this print as "..." (keeps the C stack bounded). */
#define MAX_FORMAT_DEPTH 200

static void format_value(ax_strbuf *out, const ax_value *v, int depth, const ax_ctx *cx);

/* cx (may be NULL): a Ctrl-C stops the text early (the caller reports it). */
static void format_items(ax_strbuf *out, const ax_value *v, const char *open, const char *close,
                         int depth, const ax_ctx *cx) {
    ax_strbuf_append(out, open);
    if (depth > MAX_FORMAT_DEPTH) {
        ax_strbuf_appendf(out, "...%s", close);
        return;
    }
    for (int i = 0; i < v->n; i++) {
        if ((i & 1023) == 1023 && ax_ctx_interrupted(cx)) return;
        if (i) ax_strbuf_append(out, ", ");
        if (v->kind == AX_V_DICT) {
            format_value(out, v->keys[i], depth + 1, cx);
            ax_strbuf_append(out, ": ");
        }
        format_value(out, v->items[i], depth + 1, cx);
    }
    if (v->kind == AX_V_TUPLE && v->n == 1) ax_strbuf_append(out, ",");
    ax_strbuf_append(out, close);
}

/* depth 0 is the value printed; inside containers (depth > 0) strings are quoted and
 * rank-0 arrays print as Python scalars. */
static void format_value(ax_strbuf *out, const ax_value *v, int depth, const ax_ctx *cx) {
    bool in_container = depth > 0;
    switch (v->kind) {
    case AX_V_NONE:
        ax_strbuf_append(out, "None");
        break;
    case AX_V_ARRAY:
        format_array(out, v->arr, in_container);
        break;
    case AX_V_STR:
        if (in_container)
            ax_format_string_repr(out, v->str);
        else
            ax_strbuf_append(out, v->str);
        break;
    case AX_V_TUPLE:
        format_items(out, v, "(", ")", depth, cx);
        break;
    case AX_V_LIST:
        format_items(out, v, "[", "]", depth, cx);
        break;
    case AX_V_DICT:
        format_items(out, v, "{", "}", depth, cx);
        break;
    case AX_V_SET:
        if (v->n)
            format_items(out, v, "{", "}", depth, cx);
        else
            ax_strbuf_append(out, "set()");
        break;
    case AX_V_FUNC:
        ax_strbuf_appendf(out, "<function %s>", v->fn->name);
        break;
    case AX_V_BUILTIN:
        /* the builtins that are Python's classes say so in their doc (stdlib/builtins_types.c) */
        if (v->builtin->doc && !strncmp(v->builtin->doc, "class ", 6))
            ax_strbuf_appendf(out, "<class '%s'>", v->builtin->name);
        else
            ax_strbuf_appendf(out, "<built-in function %s>", v->builtin->name);
        break;
    case AX_V_MODULE:
        ax_strbuf_appendf(out, "<module '%s'>", ax_module_name(v->module));
        break;
    case AX_V_DTYPE:
        ax_strbuf_append(out, ax_dtype_name(v->dtype));
        break;
    case AX_V_SLICE:
        ax_strbuf_append(out, "slice(");
        for (int i = 0; i < 3; i++) {
            if (i) ax_strbuf_append(out, ", ");
            format_value(out, v->items[i], depth + 1, cx);
        }
        ax_strbuf_append(out, ")");
        break;
    case AX_V_ELLIPSIS:
        ax_strbuf_append(out, "Ellipsis");
        break;
    case AX_V_RANGE:
        ax_strbuf_appendf(out, "range(%lld, %lld", (long long)v->range.start,
                          (long long)v->range.stop);
        if (v->range.step != 1) ax_strbuf_appendf(out, ", %lld", (long long)v->range.step);
        ax_strbuf_append(out, ")");
        break;
    case AX_V_OBJECT:
        if (v->obj.type->format)
            v->obj.type->format(out, v->obj.payload);
        else
            ax_strbuf_appendf(out, "<%s object>", v->obj.type->name);
        break;
    default:
        ax_strbuf_append(out, "<?>");
        break;
    }
}

void ax_value_format(ax_strbuf *out, const ax_value *v) {
    if (!v) return;
    format_value(out, v, 0, NULL);
}

bool ax_value_format_checked(ax_interp *in, ax_strbuf *out, const ax_value *v) {
    if (v) format_value(out, v, 0, in->cx);
    if (out->failed) return ax_error_oom(in->cx), false;
    return !ax_ctx_check_interrupt(in->cx);
}

bool ax_write_checked(ax_interp *in, FILE *f, const char *data, size_t len) {
    /* in pieces, so that Ctrl-C stops a huge text that a slow terminal takes in */
    for (size_t done = 0; done < len;) {
        if (ax_ctx_check_interrupt(in->cx)) return false;
        size_t n = len - done < 65536 ? len - done : 65536;
        size_t wrote = fwrite(data + done, 1, n, f);
        done += wrote;
        if (wrote < n) {
            if (!ferror(f) || errno != EINTR) break; /* output that is gone is not an error */
            clearerr(f);
        }
    }
    return !ax_ctx_check_interrupt(in->cx);
}

void ax_value_format_nested(ax_strbuf *out, const ax_value *v) {
    if (v) format_value(out, v, 1, NULL);
}

void ax_value_format_repl(ax_strbuf *out, const ax_value *v, const ax_ctx *cx) {
    if (!v) return;
    format_value(out, v, 0, cx);
    if (v->kind == AX_V_ARRAY) {
        char type[128];
        ax_array_type_format(type, sizeof type, v->arr);
        ax_strbuf_appendf(out, " : %s", type);
    }
}

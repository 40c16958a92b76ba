/* Typed PRNG keys and the builtins random.ax is written on (see prng.h).
 *
 * A typed key (dtype key<fry>) wraps its uint32 data of shape (..., 2). It is a one-leaf pytree
 * node, so grad/vmap/jit see the data; indexing and iteration work on the leading dimensions,
 * so `k1, k2 = random.split(key)` and `keys[i]` give keys. */
#include "prng.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../compiler/primitive.h"
#include "../compiler/trace.h"
#include "np_lib.h"

/* ---------------------------------------------------------------- typed keys */

typedef struct key_obj {
    ax_array *data; /* u32[..., 2] */
} key_obj;

static void key_free(void *p) {
    key_obj *k = p;
    ax_array_release(k->data);
    free(k);
}

static void key_format(ax_strbuf *out, void *p) {
    key_obj *k = p;
    char shape[128];
    ax_shape_format(shape, sizeof shape, k->data->ndim - 1, k->data->shape);
    ax_strbuf_appendf(out, "Array(%s, dtype=key<fry>) overlaying:\n", shape);
    ax_format_array(out, k->data);
}

static const ax_object_type key_type;

static bool is_key_data(const ax_array *a) {
    return a->dtype == AX_U32 && a->ndim >= 1 && a->shape[a->ndim - 1] == 2;
}

/* A typed key around `data` (takes the reference). */
static ax_value *key_new_take(ax_interp *in, ax_array *data) {
    if (!is_key_data(data)) {
        char t[96];
        ax_array_type_format(t, sizeof t, data);
        ax_array_release(data);
        return ax_error(in->cx, AX_ERR_TYPE,
                        "key data must be uint32 with a last dimension of 2 "
                        "(u32[..., 2]), got %s",
                        t);
    }
    key_obj *k = malloc(sizeof *k);
    if (!k) {
        ax_array_release(data);
        return ax_error_oom(in->cx);
    }
    k->data = data;
    return ax_value_or_oom(in, ax_value_object(&key_type, k)); /* frees k on failure */
}

static ax_value *key_leaf(void *p) {
    return ax_value_array(ax_array_retain(((key_obj *)p)->data));
}

static ax_value *key_rebuild(ax_interp *in, ax_value *leaf) {
    if (leaf->kind != AX_V_ARRAY) return ax_error(in->cx, AX_ERR_TYPE, "a key is made of an array");
    return key_new_take(in, ax_array_retain(leaf->arr));
}

static ax_value *key_getitem(ax_interp *in, ax_value *self, ax_value *index) {
    key_obj *k = self->obj.payload;
    if (k->data->ndim == 1)
        return ax_error(in->cx, AX_ERR_INDEX, "a single key (shape ()) cannot be indexed");
    ax_value *data = ax_value_array(ax_array_retain(k->data));
    if (!data) return ax_error_oom(in->cx);
    ax_value *r = ax_np_getitem(in, data, index);
    ax_value_release(data);
    if (!r) return NULL;
    ax_value *key = r->kind == AX_V_ARRAY && is_key_data(r->arr)
                        ? key_new_take(in, ax_array_retain(r->arr))
                        : NULL;
    if (!key && !ax_error_pending(in->cx))
        ax_error(in->cx, AX_ERR_INDEX, "index the leading dimensions of a key array only");
    ax_value_release(r);
    return key;
}

static ax_value *key_getattr(ax_interp *in, ax_value *self, const char *name) {
    key_obj *k = self->obj.payload;
    if (!strcmp(name, "dtype")) return ax_value_or_oom(in, ax_value_str("key<fry>"));
    if (!strcmp(name, "ndim")) return ax_value_int(in, k->data->ndim - 1);
    if (!strcmp(name, "shape") || !strcmp(name, "size")) {
        int n = k->data->ndim - 1;
        if (!strcmp(name, "size")) return ax_value_int(in, ax_shape_size(n, k->data->shape));
        ax_value **dims = calloc((size_t)n + 1, sizeof *dims);
        if (!dims) return ax_error_oom(in->cx);
        for (int i = 0; i < n; i++) {
            if (!(dims[i] = ax_value_int(in, k->data->shape[i]))) {
                while (i-- > 0) ax_value_release(dims[i]);
                free(dims);
                return NULL;
            }
        }
        ax_value *t = ax_value_tuple(n, dims);
        free(dims);
        return ax_value_or_oom(in, t);
    }
    return NULL;
}

static const ax_object_type key_type = {.name = "key<fry>",
                                        .free = key_free,
                                        .format = key_format,
                                        .getattr = key_getattr,
                                        .getitem = key_getitem,
                                        .tree_leaf = key_leaf,
                                        .tree_rebuild = key_rebuild};

/* The uint32 data of a typed or raw key (new reference), or NULL + TypeError naming fname. */
static ax_array *key_data_of(ax_interp *in, ax_value *v, const char *fname) {
    if (v->kind == AX_V_OBJECT && v->obj.type == &key_type)
        return ax_array_retain(((key_obj *)v->obj.payload)->data);
    if (v->kind == AX_V_ARRAY && is_key_data(v->arr)) return ax_array_retain(v->arr);
    char d[96];
    ax_value_describe(d, sizeof d, v);
    return ax_error(in->cx, AX_ERR_TYPE,
                    "%s expects a PRNG key (random.key(seed) or random.PRNGKey(seed)), got %s",
                    fname, d);
}

/* ---------------------------------------------------------------- builtins */

static ax_value *b_key_data(ax_interp *in, ax_value *self, const ax_args *a) {
    (void)self;
    /* an optional second argument names the caller in errors (random.normal, ...) */
    if (a->n < 1 || a->n > 2 || a->nkw || (a->n == 2 && a->pos[1]->kind != AX_V_STR))
        return ax_error(in->cx, AX_ERR_TYPE, "key_data(key) takes one key");
    ax_array *d = key_data_of(in, a->pos[0], a->n == 2 ? a->pos[1]->str : "key_data");
    return d ? ax_value_or_oom(in, ax_value_array(d)) : NULL;
}

static ax_value *b_wrap_key_data(ax_interp *in, ax_value *self, const ax_args *a) {
    (void)self;
    if (a->n != 1 || a->nkw || a->pos[0]->kind != AX_V_ARRAY)
        return ax_error(in->cx, AX_ERR_TYPE,
                        "wrap_key_data(data) takes a uint32 array of shape "
                        "(..., 2)");
    return key_new_take(in, ax_array_retain(a->pos[0]->arr));
}

static ax_value *b_is_typed_key(ax_interp *in, ax_value *self, const ax_args *a) {
    (void)self;
    if (a->n != 1) return ax_error(in->cx, AX_ERR_TYPE, "_is_typed_key(x) takes one value");
    return ax_value_bool(in, a->pos[0]->kind == AX_V_OBJECT && a->pos[0]->obj.type == &key_type);
}

static ax_value *b_threefry(ax_interp *in, ax_value *self, const ax_args *a) {
    (void)self;
    if (a->n != 4 || a->nkw)
        return ax_error(in->cx, AX_ERR_TYPE,
                        "threefry2x32(k0, k1, x0, x1) takes four uint32 "
                        "arrays");
    ax_array *args[4] = {0}, *out[2] = {0};
    ax_value *r = NULL;
    int i = 0;
    for (; i < 4; i++) {
        ax_array *x = ax_value_to_array(in, a->pos[i], "threefry2x32");
        if (!x) break;
        /* through bind: x may be a tracer (jit, vmap, grad) */
        args[i] = x->dtype == AX_U32 ? x : ax_np_astype(in->cx, x, AX_U32, false);
        if (args[i] != x) ax_array_release(x);
        if (!args[i]) break;
    }
    if (i == 4 && !ax_bind(in->cx, AX_P_THREEFRY2X32, 4, args, &(ax_params){0}, out)) {
        ax_value *items[2] = {ax_value_array(out[0]), ax_value_array(out[1])};
        if (items[0] && items[1]) {
            r = ax_value_or_oom(in, ax_value_tuple(2, items)); /* releases both on failure */
        } else {
            for (int k = 0; k < 2; k++) ax_value_release(items[k]);
            ax_error_oom(in->cx);
        }
    }
    for (int k = 0; k < 4; k++) ax_array_release(args[k]);
    return r;
}

/* bitcast_convert_type(x, dtype): the same bits read as another dtype of the same width. */
static ax_value *b_bitcast(ax_interp *in, ax_value *self, const ax_args *a) {
    (void)self;
    if (!ax_args_check(in, a, "bitcast_convert_type", 2, (const char *[]){"x", "new_dtype", NULL}))
        return NULL;
    ax_value *xv = ax_arg(a, 0, "x"), *tv = ax_arg(a, 1, "new_dtype");
    if (!xv || !tv || tv->kind != AX_V_DTYPE)
        return ax_error(in->cx, AX_ERR_TYPE,
                        "bitcast_convert_type(x, new_dtype) takes an array "
                        "and a dtype");
    ax_array *x = ax_value_to_array(in, xv, "bitcast_convert_type");
    if (!x) return NULL;
    ax_params p = {.dtype = tv->dtype};
    ax_array *r = ax_bind1(in->cx, AX_P_BITCAST, 1, &x, &p);
    ax_array_release(x);
    return r ? ax_value_or_oom(in, ax_value_array(r)) : NULL;
}

/* Small helpers random.ax is written with. */
static ax_value *b_value_error(ax_interp *in, ax_value *self, const ax_args *a) {
    (void)self;
    return ax_error(in->cx, AX_ERR_VALUE, "%s",
                    a->n == 1 && a->pos[0]->kind == AX_V_STR ? a->pos[0]->str : "bad value");
}

static ax_value *b_is_sequence(ax_interp *in, ax_value *self, const ax_args *a) {
    (void)self;
    if (a->n != 1) return ax_error(in->cx, AX_ERR_TYPE, "_is_sequence(x) takes one value");
    return ax_value_bool(in, a->pos[0]->kind == AX_V_TUPLE || a->pos[0]->kind == AX_V_LIST);
}

static ax_value *b_x64(ax_interp *in, ax_value *self, const ax_args *a) {
    (void)self, (void)a;
    return ax_value_bool(in, in->cx->x64);
}

static ax_value *b_partitionable(ax_interp *in, ax_value *self, const ax_args *a) {
    (void)self, (void)a;
    return ax_value_bool(in, !in->threefry_unpartitioned);
}

/* ---------------------------------------------------------------- key reuse */

typedef struct key_use {
    uint32_t w0, w1;
    bool used;
    char where[176];
} key_use;

/* Consumed keys: an open-addressing hash set on the key's two words (a training loop samples
 * millions of times; lookups stay O(1)). */
typedef struct key_uses {
    key_use *slots;
    int64_t n, cap; /* cap is a power of two */
} key_uses;

static void key_uses_free(void *p) {
    key_uses *u = p;
    if (!u) return;
    free(u->slots);
    free(u);
}

static uint64_t key_hash(uint32_t w0, uint32_t w1) {
    uint64_t h = ((uint64_t)w0 << 32 | w1) * 0x9E3779B97F4A7C15ull;
    return h ^ (h >> 29);
}

/* The slot of (w0, w1): where it is, or the empty slot where it would go. */
static key_use *key_slot(key_uses *u, uint32_t w0, uint32_t w1) {
    uint64_t mask = (uint64_t)u->cap - 1;
    for (uint64_t i = key_hash(w0, w1) & mask;; i = (i + 1) & mask) {
        key_use *k = &u->slots[i];
        if (!k->used || (k->w0 == w0 && k->w1 == w1)) return k;
    }
}

static bool key_uses_grow(key_uses *u) {
    int64_t cap = u->cap ? 2 * u->cap : 256;
    key_use *old = u->slots;
    int64_t oldcap = u->cap;
    u->slots = calloc((size_t)cap, sizeof *u->slots);
    if (!u->slots) {
        u->slots = old;
        return false;
    }
    u->cap = cap;
    for (int64_t i = 0; i < oldcap; i++)
        if (old[i].used) *key_slot(u, old[i].w0, old[i].w1) = old[i];
    free(old);
    return true;
}

/* "file:line" of the innermost call made outside the standard library (the user's call). */
static void user_site(ax_interp *in, char *out, size_t cap) {
    int top = in->nsites < AX_CALL_SITES ? in->nsites : AX_CALL_SITES;
    for (int i = top - 1; i >= 0; i--) {
        const char *file = in->sites[i].file;
        if (file && !(in->stdlib_dir && !strncmp(file, in->stdlib_dir, strlen(in->stdlib_dir)))) {
            snprintf(out, cap, "%s:%d:%d", file, in->sites[i].line, in->sites[i].col);
            return;
        }
    }
    snprintf(out, cap, "%s", "<unknown>");
}

/* _use_key(key, "random.normal"): warns when a concrete single key is used for sampling a
 * second time, naming both places. Abstract keys (under jit or vmap) are not tracked: their
 * values are not known. */
static ax_value *b_use_key(ax_interp *in, ax_value *self, const ax_args *a) {
    (void)self;
    if (a->n != 2 || a->pos[1]->kind != AX_V_STR)
        return ax_error(in->cx, AX_ERR_TYPE, "_use_key(key, name)");
    ax_array *data = key_data_of(in, a->pos[0], a->pos[1]->str);
    if (!data) return NULL;
    ax_array *c = ax_concrete_value(in->cx, data);
    if (in->allow_key_reuse || !c || c->size != 2) {
        ax_array_release(data);
        return ax_none();
    }
    uint32_t w0 = (uint32_t)ax_array_get_i64(c, 0), w1 = (uint32_t)ax_array_get_i64(c, 1);
    ax_array_release(data);
    key_uses *u = in->key_uses;
    if (!u) {
        u = calloc(1, sizeof *u);
        if (!u) return ax_error_oom(in->cx);
        in->key_uses = u;
        in->free_key_uses = key_uses_free;
    }
    if (2 * (u->n + 1) > u->cap && !key_uses_grow(u)) return ax_error_oom(in->cx);
    char here[160];
    user_site(in, here, sizeof here);
    key_use *k = key_slot(u, w0, w1);
    if (k->used) {
        fprintf(stderr,
                "warning: PRNG key reused: %s at %s uses the key already used by %s; the two "
                "draws are not independent (split the key with random.split; "
                "--allow-key-reuse silences this)\n",
                a->pos[1]->str, here, k->where);
        return ax_none();
    }
    *k = (key_use){.w0 = w0, .w1 = w1, .used = true};
    snprintf(k->where, sizeof k->where, "%s at %s", a->pos[1]->str, here);
    u->n++;
    return ax_none();
}

/* _keys_unrecorded(fn, *args, **kwargs): fn(*args, **kwargs) with no key use recorded or
 * reported. For computations whose random draws are thrown away, as nn's tabulate runs init
 * only for its shapes (Flax runs it under eval_shape, where keys are abstract), so that
 * tabulate(key, x) and init(key, x) with the same key are not a reuse. */
static ax_value *b_keys_unrecorded(ax_interp *in, ax_value *self, const ax_args *a) {
    (void)self;
    if (a->n < 1) return ax_error(in->cx, AX_ERR_TYPE, "_keys_unrecorded(fn, *args, **kwargs)");
    ax_args rest = *a;
    rest.n -= 1;
    rest.pos += 1;
    bool was = in->allow_key_reuse;
    in->allow_key_reuse = true;
    ax_value *r = ax_call(in, a->pos[0], &rest);
    in->allow_key_reuse = was;
    return r;
}

int ax_prng_register(ax_interp *in) {
    static const struct {
        const char *name, *doc;
        ax_builtin_fn fn;
    } fns[] = {
        {"threefry2x32",
         "threefry2x32(k0, k1, x0, x1): the PRNG's hash of uint32 arrays, as a "
         "pair (y0, y1)",
         b_threefry},
        {"bitcast_convert_type",
         "bitcast_convert_type(x, new_dtype): x's bits read as another "
         "dtype of the same width",
         b_bitcast},
        {"_value_error", "raises a ValueError with the given message", b_value_error},
        {"_is_sequence", "whether a value is a tuple or a list", b_is_sequence},
        {"_x64", "whether 64-bit mode (--x64) is on", b_x64},
        {"_partitionable", "whether jax_threefry_partitionable is on (the default)",
         b_partitionable},
        {"_key_data", "the uint32 data (..., 2) of a typed or raw PRNG key", b_key_data},
        {"_wrap_key_data", "a typed PRNG key around uint32 data of shape (..., 2)",
         b_wrap_key_data},
        {"_is_typed_key", "whether a value is a typed PRNG key", b_is_typed_key},
        {"_use_key", "records a key's use for sampling; warns when it was used before", b_use_key},
        {"_keys_unrecorded", "_keys_unrecorded(fn, *args): fn(*args) without recording key uses",
         b_keys_unrecorded},
    };
    for (size_t i = 0; i < sizeof fns / sizeof *fns; i++) {
        ax_value *v = ax_value_builtin(fns[i].name, fns[i].doc, fns[i].fn, NULL);
        if (!v) return -1;
        ax_interp_define_builtin_take(in, fns[i].name, v);
    }
    return 0;
}

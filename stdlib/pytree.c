/* Pytrees (see pytree.h). A tree's structure is kept as a skeleton: the tree itself with each
 * leaf replaced by a marker object, wrapped in a `treedef` object. */
#include "pytree.h"

#include <stdlib.h>
#include <string.h>

#include "builtins_lib.h"
#include "records.h"

static void leaf_format(ax_strbuf *out, void *payload) {
    (void)payload;
    ax_strbuf_append(out, "*");
}
static const ax_object_type leaf_marker = {.name = "leaf", .format = leaf_format};

/* The skeleton of an object that is a one-leaf node (a typed key): remembers its type. */
static void node_format(ax_strbuf *out, void *payload) {
    ax_strbuf_appendf(out, "%s(*)", ((const ax_object_type *)payload)->name);
}
static const ax_object_type object_node = {.name = "node", .format = node_format};

/* The skeleton of a record (stdlib/records.h): its class, the auxiliary data its registered
 * flatten function gave (NULL for a namedtuple's own fields), and its children's skeletons. */
typedef struct record_node {
    ax_value *cls, *aux, *children; /* children: a tuple */
} record_node;

static void record_node_free(void *p) {
    record_node *r = p;
    ax_value_release(r->cls);
    if (r->aux) ax_value_release(r->aux);
    ax_value_release(r->children);
    free(r);
}

static void record_node_format(ax_strbuf *out, void *p) {
    record_node *r = p;
    if (r->aux) {
        ax_strbuf_appendf(out, "CustomNode(%s[", ax_record_class_name(r->cls));
        ax_value_format_nested(out, r->aux);
        ax_strbuf_append(out, "], [");
    } else {
        ax_strbuf_appendf(out, "CustomNode(namedtuple[%s], [", ax_record_class_name(r->cls));
    }
    for (int i = 0; i < r->children->n; i++) {
        if (i) ax_strbuf_append(out, ", ");
        ax_value_format_nested(out, r->children->items[i]);
    }
    ax_strbuf_append(out, "])");
}
static const ax_object_type record_node_type = {
    .name = "node", .free = record_node_free, .format = record_node_format};

static void treedef_free(void *payload) {
    ax_value_release(payload);
}
static void treedef_format(ax_strbuf *out, void *payload) {
    ax_strbuf_append(out, "PyTreeDef(");
    ax_value_format(out, payload);
    ax_strbuf_append(out, ")");
}
static ax_value *treedef_getattr(ax_interp *in, ax_value *self, const char *name);
/* The names treedef_getattr resolves (Tab completion, dir). */
static void treedef_each_attr(ax_interp *in, ax_value *self,
                              void (*fn)(void *arg, const char *name), void *arg) {
    (void)in, (void)self;
    static const char *const names[] = {"flatten_up_to", "num_leaves", "num_nodes", "unflatten"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) fn(arg, names[i]);
}
static int treedef_equal(ax_interp *in, const ax_value *a, const ax_value *b) {
    (void)in;
    return ax_treedef_equal((ax_value *)a, (ax_value *)b);
}
static const ax_object_type treedef_type = {.name = "PyTreeDef",
                                            .free = treedef_free,
                                            .format = treedef_format,
                                            .getattr = treedef_getattr,
                                            .each_attr = treedef_each_attr,
                                            .equal = treedef_equal};

void ax_values_release(ax_value **values, int n) {
    if (!values) return;
    for (int i = 0; i < n; i++) ax_value_release(values[i]);
    free(values);
}

ax_value *ax_tree_map_leaves(ax_interp *in, ax_value *tree,
                             ax_value *(*fn)(ax_interp *in, ax_value *leaf, void *data),
                             void *data) {
    ax_value **leaves, *def;
    int n;
    if (ax_tree_flatten(in, tree, &leaves, &n, &def)) return NULL;
    int i = 0;
    for (; i < n; i++) {
        ax_value *y = fn(in, leaves[i], data);
        if (!y) break;
        ax_value_release(leaves[i]);
        leaves[i] = y;
    }
    ax_value *r = i == n ? ax_tree_unflatten(in, def, leaves, n) : NULL;
    ax_values_release(leaves, n);
    ax_value_release(def);
    return r;
}

/* ---------------------------------------------------------------- keys of paths */

/* An entry of a leaf's path: JAX's DictKey(key=...), SequenceKey(idx=...),
 * GetAttrKey(name=...) and FlattenedIndexKey(key=...). */
typedef enum { KEY_DICT, KEY_SEQUENCE, KEY_ATTR, KEY_FLAT } key_kind;
typedef struct tree_key {
    key_kind kind;
    ax_value *v; /* a string (dict keys, attribute names) or an int */
} tree_key;

static const struct {
    const char *type, *field;
} key_names[] = {[KEY_DICT] = {"DictKey", "key"},
                 [KEY_SEQUENCE] = {"SequenceKey", "idx"},
                 [KEY_ATTR] = {"GetAttrKey", "name"},
                 [KEY_FLAT] = {"FlattenedIndexKey", "key"}};

static void key_free(void *p) {
    ax_value_release(((tree_key *)p)->v);
    free(p);
}
static void key_format(ax_strbuf *out, void *p) {
    const tree_key *k = p;
    ax_strbuf_appendf(out, "%s(%s=", key_names[k->kind].type, key_names[k->kind].field);
    ax_value_format_nested(out, k->v);
    ax_strbuf_append(out, ")");
}
static ax_value *key_getattr(ax_interp *in, ax_value *self, const char *name) {
    const tree_key *k = self->obj.payload;
    (void)in;
    return strcmp(name, key_names[k->kind].field) == 0 ? ax_value_retain(k->v) : NULL;
}
static int key_equal(ax_interp *in, const ax_value *a, const ax_value *b) {
    const tree_key *x = a->obj.payload, *y = b->obj.payload;
    return x->kind != y->kind ? 0 : ax_value_equal(in, x->v, y->v);
}
static const ax_object_type key_type = {.name = "key",
                                        .free = key_free,
                                        .format = key_format,
                                        .getattr = key_getattr,
                                        .equal = key_equal};

/* A key around v (takes the reference). */
static ax_value *key_new(ax_interp *in, key_kind kind, ax_value *v) {
    tree_key *k = v ? malloc(sizeof *k) : NULL;
    if (!k) {
        if (v) ax_value_release(v);
        return ax_error_oom(in->cx);
    }
    *k = (tree_key){kind, v};
    ax_value *r = ax_value_object(&key_type, k);
    return r ? r : ax_error_oom(in->cx);
}

/* keystr's text of one key: ['a'], [0], .name, or the bare value when simple. */
static void key_text(ax_strbuf *out, const ax_value *key, bool simple) {
    if (key->kind != AX_V_OBJECT || key->obj.type != &key_type) {
        ax_value_format(out, key);
        return;
    }
    const tree_key *k = key->obj.payload;
    if (simple) {
        ax_value_format(out, k->v);
    } else if (k->kind == KEY_ATTR) {
        ax_strbuf_appendf(out, ".%s", k->v->str);
    } else if (k->kind == KEY_FLAT) {
        ax_strbuf_append(out, "[<flat index ");
        ax_value_format(out, k->v);
        ax_strbuf_append(out, ">]");
    } else {
        ax_strbuf_append(out, "[");
        ax_value_format_nested(out, k->v);
        ax_strbuf_append(out, "]");
    }
}

/* ---------------------------------------------------------------- flattening */

typedef struct leaf_list {
    ax_value **items;
    int n, cap;
} leaf_list;

/* Appends v (taking the reference); false (v released) when memory runs out. */
static bool push_take(leaf_list *l, ax_value *v) {
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 16;
        ax_value **items = realloc(l->items, (size_t)cap * sizeof *items);
        if (!items) {
            ax_value_release(v);
            return false;
        }
        l->items = items;
        l->cap = cap;
    }
    l->items[l->n++] = v;
    return true;
}

/* What a flattening walk collects: the leaves, and for *_with_path each leaf's path (a tuple
 * of keys; `path` holds the keys down to the node being walked). */
typedef struct walk {
    ax_interp *in;
    ax_value *is_leaf; /* a predicate that stops the walk at a subtree, or NULL */
    leaf_list leaves;
    bool with_paths;
    leaf_list paths, path;
} walk;

static void walk_free(walk *w) {
    ax_values_release(w->leaves.items, w->leaves.n);
    ax_values_release(w->paths.items, w->paths.n);
    ax_values_release(w->path.items, w->path.n);
}

static bool push_leaf(walk *w, ax_value *leaf) {
    if (!push_take(&w->leaves, ax_value_retain(leaf))) return ax_error_oom(w->in->cx), false;
    if (!w->with_paths) return true;
    for (int i = 0; i < w->path.n; i++) ax_value_retain(w->path.items[i]);
    ax_value **keys = malloc((size_t)(w->path.n ? w->path.n : 1) * sizeof *keys);
    if (keys && w->path.n) memcpy(keys, w->path.items, (size_t)w->path.n * sizeof *keys);
    ax_value *t = keys ? ax_value_tuple(w->path.n, keys) : NULL;
    free(keys);
    if (!t) {
        if (!keys)
            for (int i = 0; i < w->path.n; i++) ax_value_release(w->path.items[i]);
        return ax_error_oom(w->in->cx), false;
    }
    return push_take(&w->paths, t) || (ax_error_oom(w->in->cx), false);
}

static int key_cmp(const void *a, const void *b) {
    const ax_value *const *x = a, *const *y = b;
    return ax_dict_key_order(*x, *y);
}

/* Sorted order of a dict's keys (indices into its items). */
static int *sorted_order(const ax_value *d) {
    ax_value **keys = malloc((size_t)(d->n ? d->n : 1) * sizeof *keys);
    int *order = malloc((size_t)(d->n ? d->n : 1) * sizeof *order);
    if (!keys || !order) {
        free(keys);
        free(order);
        return NULL;
    }
    if (d->n) memcpy(keys, d->keys, (size_t)d->n * sizeof *keys);
    qsort(keys, (size_t)d->n, sizeof *keys, key_cmp);
    for (int i = 0; i < d->n; i++)
        for (int j = 0; j < d->n; j++)
            if (d->keys[j] == keys[i]) order[i] = j;
    free(keys);
    return order;
}

static ax_value *flatten(walk *w, ax_value *t, int depth);

/* Flattens child i of a node, with its key on the path (key taken; NULL: no path entry). */
static ax_value *flatten_child(walk *w, ax_value *child, ax_value *key, int depth) {
    if (w->with_paths && !push_take(&w->path, key)) return ax_error_oom(w->in->cx);
    if (!w->with_paths && key) ax_value_release(key);
    ax_value *s = flatten(w, child, depth + 1);
    if (w->with_paths) ax_value_release(w->path.items[--w->path.n]);
    return s;
}

/* The key of a child (takes v): what callers make only when paths are wanted. */
static ax_value *child_key(walk *w, key_kind kind, ax_value *v) {
    return key_new(w->in, kind, v ? v : ax_error_oom(w->in->cx));
}

static ax_value *flatten_seq(walk *w, ax_value *t, int depth) {
    ax_value **items = calloc((size_t)(t->n ? t->n : 1), sizeof *items);
    if (!items) return ax_error_oom(w->in->cx);
    for (int i = 0; i < t->n; i++) {
        ax_value *key = w->with_paths ? child_key(w, KEY_SEQUENCE, ax_value_int(w->in, i)) : NULL;
        if ((w->with_paths && !key) || !(items[i] = flatten_child(w, t->items[i], key, depth))) {
            ax_values_release(items, i);
            return NULL;
        }
    }
    ax_value *r = t->kind == AX_V_TUPLE ? ax_value_tuple(t->n, items) : ax_value_list(t->n, items);
    free(items);
    return ax_value_or_oom(w->in, r);
}

static ax_value *flatten_dict(walk *w, ax_value *t, int depth) {
    int *order = sorted_order(t);
    ax_value **keys = calloc((size_t)(t->n ? t->n : 1), sizeof *keys);
    ax_value **vals = calloc((size_t)(t->n ? t->n : 1), sizeof *vals);
    if (!order || !keys || !vals) {
        free(order);
        free(keys);
        free(vals);
        return ax_error_oom(w->in->cx);
    }
    for (int i = 0; i < t->n; i++) {
        keys[i] = ax_value_retain(t->keys[order[i]]);
        ax_value *key = w->with_paths ? child_key(w, KEY_DICT, ax_value_retain(keys[i])) : NULL;
        if ((w->with_paths && !key) ||
            !(vals[i] = flatten_child(w, t->items[order[i]], key, depth))) {
            ax_values_release(keys, i + 1);
            ax_values_release(vals, i);
            free(order);
            return NULL;
        }
    }
    free(order);
    ax_value *r = ax_value_dict(t->n, keys, vals);
    free(keys);
    free(vals);
    return ax_value_or_oom(w->in, r);
}

/* A record's children (a new tuple or list) and aux data (a new reference; NULL for a
 * namedtuple's own fields): what its registered flatten function returns, or its fields. */
static int record_split(ax_interp *in, ax_value *t, ax_value **kids, ax_value **aux) {
    ax_value *cls = ax_record_class_of(t), *fn = ax_record_flatten_fn(cls);
    *aux = NULL;
    if (!fn) {
        int n = ax_record_nfields(t);
        ax_value **items = calloc((size_t)n + 1, sizeof *items);
        if (!items) return ax_error_oom(in->cx), -1;
        for (int i = 0; i < n; i++) items[i] = ax_value_retain(ax_record_value(t, i));
        *kids = ax_value_tuple(n, items);
        free(items);
        return *kids ? 0 : (ax_error_oom(in->cx), -1);
    }
    ax_value *arg = t;
    ax_args a = {.n = 1, .pos = &arg};
    ax_value *pair = ax_call(in, fn, &a);
    if (!pair) return -1;
    if (pair->kind != AX_V_TUPLE || pair->n != 2 ||
        (pair->items[0]->kind != AX_V_TUPLE && pair->items[0]->kind != AX_V_LIST)) {
        ax_value_release(pair);
        ax_error(in->cx, AX_ERR_TYPE,
                 "the flatten function registered for %s must return (children, aux_data) "
                 "with children a tuple or a list",
                 ax_record_class_name(cls));
        return -1;
    }
    *kids = ax_value_retain(pair->items[0]);
    *aux = ax_value_retain(pair->items[1]);
    ax_value_release(pair);
    return 0;
}

/* A record: its children (flat-index keys when a registered function gave them, attribute
 * keys for a namedtuple's fields). */
static ax_value *flatten_record(walk *w, ax_value *t, int depth) {
    ax_interp *in = w->in;
    ax_value *kids, *aux;
    if (record_split(in, t, &kids, &aux)) return NULL;
    int n = kids->n, done = 0;
    ax_value **items = calloc((size_t)n + 1, sizeof *items);
    record_node *r = calloc(1, sizeof *r);
    for (; items && r && done < n; done++) {
        ax_value *key = !w->with_paths ? NULL
                        : aux          ? child_key(w, KEY_FLAT, ax_value_int(in, done))
                              : child_key(w, KEY_ATTR, ax_value_str(ax_record_field_name(t, done)));
        if ((w->with_paths && !key) ||
            !(items[done] = flatten_child(w, kids->items[done], key, depth)))
            break;
    }
    ax_value *node = NULL;
    if (items && r && done == n) {
        r->children = ax_value_tuple(n, items); /* takes the items, not the array */
        free(items);
        items = NULL;
        if (r->children) {
            r->cls = ax_value_retain(ax_record_class_of(t));
            r->aux = aux;
            aux = NULL;
            node = ax_value_object(&record_node_type, r);
            r = NULL;
        }
    }
    if (!node && !ax_error_pending(in->cx)) ax_error_oom(in->cx);
    if (items) ax_values_release(items, done);
    free(r);
    if (aux) ax_value_release(aux);
    ax_value_release(kids);
    return node;
}

static bool stops_at(walk *w, ax_value *t, bool *stop) {
    *stop = false;
    if (!w->is_leaf) return true;
    ax_value *arg = t;
    ax_args a = {.n = 1, .pos = &arg};
    ax_value *r = ax_call(w->in, w->is_leaf, &a);
    bool ok = r && ax_value_truthy(w->in, r, stop);
    if (r) ax_value_release(r);
    return ok;
}

/* The skeleton of t (depth: how deep t sits in the tree being flattened). Every other walk
 * over a skeleton recurses as deep as this one did, so its depth limit bounds them all. */
static ax_value *flatten(walk *w, ax_value *t, int depth) {
    ax_interp *in = w->in;
    bool node = t->kind == AX_V_TUPLE || t->kind == AX_V_LIST || t->kind == AX_V_DICT ||
                ax_record_is_instance(t);
    if (node && depth >= AX_MAX_VALUE_DEPTH)
        return ax_error(in->cx, AX_ERR_RECURSION,
                        "a pytree nested more than %d levels deep cannot be flattened",
                        AX_MAX_VALUE_DEPTH);
    bool stop;
    if (!stops_at(w, t, &stop)) return NULL;
    if (stop) return push_leaf(w, t) ? ax_value_object(&leaf_marker, NULL) : NULL;
    switch (t->kind) {
    case AX_V_TUPLE:
    case AX_V_LIST:
        return flatten_seq(w, t, depth);
    case AX_V_DICT:
        return flatten_dict(w, t, depth);
    case AX_V_NONE:
        return ax_value_retain(t);
    case AX_V_OBJECT:
        if (ax_record_is_instance(t)) return flatten_record(w, t, depth);
        if (t->obj.type->tree_leaf) {
            ax_value *leaf = t->obj.type->tree_leaf(t->obj.payload);
            bool ok = leaf && push_leaf(w, leaf);
            if (leaf) ax_value_release(leaf);
            if (!ok) return leaf ? NULL : ax_error_oom(in->cx);
            return ax_value_object(&object_node, (void *)t->obj.type);
        }
        /* other objects are leaves */
        __attribute__((fallthrough));
    default:
        return push_leaf(w, t) ? ax_value_object(&leaf_marker, NULL) : NULL;
    }
}

/* Flattens with a walk set up by the caller; the skeleton wrapped as a treedef. */
static ax_value *walk_tree(walk *w, ax_value *tree) {
    ax_value *skeleton = flatten(w, tree, 0);
    ax_value *def = skeleton ? ax_value_object(&treedef_type, skeleton) : NULL;
    if (!def && !ax_error_pending(w->in->cx)) ax_error_oom(w->in->cx);
    return def; /* ax_value_object freed the skeleton on failure */
}

int ax_tree_flatten(ax_interp *in, ax_value *tree, ax_value ***leaves, int *nleaves,
                    ax_value **treedef) {
    walk w = {.in = in};
    ax_value *def = walk_tree(&w, tree);
    if (!def) {
        walk_free(&w);
        return -1;
    }
    *leaves = w.leaves.items ? w.leaves.items : calloc(1, sizeof **leaves);
    *nleaves = w.leaves.n;
    *treedef = def;
    return 0;
}

static bool is_node(const ax_value *s) {
    return s->kind == AX_V_TUPLE || s->kind == AX_V_LIST || s->kind == AX_V_DICT;
}

static const ax_value *record_children(const ax_value *s) {
    return s->kind == AX_V_OBJECT && s->obj.type == &record_node_type
               ? ((record_node *)s->obj.payload)->children
               : NULL;
}

static int count_leaves(const ax_value *s) {
    const ax_value *kids = record_children(s);
    if (kids) return count_leaves(kids);
    if (s->kind == AX_V_OBJECT)
        return s->obj.type == &leaf_marker || s->obj.type == &object_node ? 1 : 0;
    if (!is_node(s)) return 0;
    int n = 0;
    for (int i = 0; i < s->n; i++) n += count_leaves(s->items[i]);
    return n;
}

/* JAX's num_nodes: every node and leaf, None included. */
static int count_nodes(const ax_value *s) {
    const ax_value *kids = record_children(s);
    if (kids) return count_nodes(kids);
    if (!is_node(s)) return 1;
    int n = 1;
    for (int i = 0; i < s->n; i++) n += count_nodes(s->items[i]);
    return n;
}

bool ax_treedef_is_leaf(const ax_value *treedef) {
    if (treedef->kind != AX_V_OBJECT || treedef->obj.type != &treedef_type) return false;
    const ax_value *s = treedef->obj.payload;
    return s->kind == AX_V_OBJECT && s->obj.type == &leaf_marker;
}

int ax_treedef_leaves(ax_value *treedef) {
    if (treedef->kind != AX_V_OBJECT || treedef->obj.type != &treedef_type) return -1;
    return count_leaves(treedef->obj.payload);
}

/* Aux data compare by their printed form, which is what they hash by (JAX requires them to be
 * hashable and comparable: strings, numbers, tuples of them). */
static bool aux_equal(const ax_value *a, const ax_value *b) {
    if (!a || !b) return a == b;
    ax_strbuf x, y;
    ax_strbuf_init(&x);
    ax_strbuf_init(&y);
    ax_value_format_nested(&x, a);
    ax_value_format_nested(&y, b);
    bool same = x.data && y.data && strcmp(x.data, y.data) == 0;
    ax_strbuf_free(&x);
    ax_strbuf_free(&y);
    return same;
}

static bool skeleton_equal(const ax_value *a, const ax_value *b) {
    if (a->kind != b->kind || (a->kind == AX_V_OBJECT && a->obj.type != b->obj.type)) return false;
    if (a->kind == AX_V_OBJECT && a->obj.type == &object_node)
        return a->obj.payload == b->obj.payload;
    if (record_children(a)) {
        const record_node *x = a->obj.payload, *y = b->obj.payload;
        return x->cls == y->cls && aux_equal(x->aux, y->aux) &&
               skeleton_equal(x->children, y->children);
    }
    if (!is_node(a)) return true;
    if (a->n != b->n) return false;
    for (int i = 0; i < a->n; i++) {
        if (a->kind == AX_V_DICT && !ax_dict_key_equal(a->keys[i], b->keys[i])) return false;
        if (!skeleton_equal(a->items[i], b->items[i])) return false;
    }
    return true;
}

static uint64_t mix(uint64_t h, uint64_t v) {
    h ^= v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
    return h;
}

/* Hashes what skeleton_equal compares. */
static uint64_t skeleton_hash(const ax_value *s, uint64_t h) {
    h = mix(h, (uint64_t)s->kind);
    if (record_children(s)) {
        const record_node *r = s->obj.payload;
        h = mix(h, (uint64_t)(uintptr_t)r->cls);
        if (r->aux) {
            ax_strbuf t;
            ax_strbuf_init(&t);
            ax_value_format_nested(&t, r->aux);
            for (const char *c = t.data ? t.data : ""; *c; c++) h = mix(h, (unsigned char)*c);
            ax_strbuf_free(&t);
        }
        return skeleton_hash(r->children, h);
    }
    if (s->kind == AX_V_OBJECT)
        return mix(
            h, (uint64_t)(uintptr_t)(s->obj.type == &object_node ? s->obj.payload : s->obj.type));
    if (!is_node(s)) return h;
    h = mix(h, (uint64_t)s->n);
    for (int i = 0; i < s->n; i++) {
        if (s->kind == AX_V_DICT) h = mix(h, ax_dict_key_hash(s->keys[i]));
        h = skeleton_hash(s->items[i], h);
    }
    return h;
}

uint64_t ax_treedef_hash(ax_value *treedef) {
    if (ax_treedef_leaves(treedef) < 0) return 0;
    return skeleton_hash(treedef->obj.payload, 1469598103934665603ull);
}

bool ax_treedef_equal(ax_value *a, ax_value *b) {
    return ax_treedef_leaves(a) >= 0 && ax_treedef_leaves(b) >= 0 &&
           skeleton_equal(a->obj.payload, b->obj.payload);
}

static ax_value *rebuild(ax_interp *in, const ax_value *s, ax_value **leaves, int *at);

/* A record from its rebuilt children: the registered unflatten(aux, children), or the class
 * called with its fields. */
static ax_value *rebuild_record(ax_interp *in, const record_node *r, ax_value **leaves, int *at) {
    ax_value *kids = rebuild(in, r->children, leaves, at);
    if (!kids) return NULL;
    ax_value *out;
    if (r->aux) {
        ax_value *args[2] = {r->aux, kids};
        ax_args a = {.n = 2, .pos = args};
        out = ax_call(in, ax_record_unflatten_fn(r->cls), &a);
    } else {
        out = ax_record_new(in, r->cls, kids->items);
    }
    ax_value_release(kids);
    return out;
}

static ax_value *rebuild(ax_interp *in, const ax_value *s, ax_value **leaves, int *at) {
    if (s->kind == AX_V_OBJECT && s->obj.type == &leaf_marker)
        return ax_value_retain(leaves[(*at)++]);
    if (s->kind == AX_V_OBJECT && s->obj.type == &object_node) {
        const ax_object_type *t = s->obj.payload;
        return t->tree_rebuild(in, leaves[(*at)++]);
    }
    if (record_children(s)) return rebuild_record(in, s->obj.payload, leaves, at);
    if (!is_node(s)) return ax_value_retain((ax_value *)s);
    ax_value **items = calloc((size_t)(s->n ? s->n : 1), sizeof *items);
    ax_value **keys = s->kind == AX_V_DICT ? calloc((size_t)(s->n ? s->n : 1), sizeof *keys) : NULL;
    if (!items || (s->kind == AX_V_DICT && !keys)) {
        free(items);
        free(keys);
        return ax_error_oom(in->cx);
    }
    for (int i = 0; i < s->n; i++) {
        if (keys) keys[i] = ax_value_retain(s->keys[i]);
        if (!(items[i] = rebuild(in, s->items[i], leaves, at))) {
            ax_values_release(items, i);
            if (keys) ax_values_release(keys, i + 1);
            return NULL;
        }
    }
    ax_value *r = s->kind == AX_V_DICT    ? ax_value_dict(s->n, keys, items)
                  : s->kind == AX_V_TUPLE ? ax_value_tuple(s->n, items)
                                          : ax_value_list(s->n, items);
    free(items);
    free(keys);
    return ax_value_or_oom(in, r);
}

ax_value *ax_tree_unflatten(ax_interp *in, ax_value *treedef, ax_value **leaves, int nleaves) {
    int want = ax_treedef_leaves(treedef);
    if (want < 0) return ax_error(in->cx, AX_ERR_TYPE, "tree_unflatten expects a tree structure");
    if (want != nleaves)
        return ax_error(in->cx, AX_ERR_VALUE,
                        "tree_unflatten: the structure has %d leaves but %d were given", want,
                        nleaves);
    int at = 0;
    return rebuild(in, treedef->obj.payload, leaves, &at);
}

/* ---------------------------------------------------------------- prefixes */

static void describe_value(ax_strbuf *out, const ax_value *v) {
    ax_strbuf t;
    ax_strbuf_init(&t);
    ax_value_format_nested(&t, v);
    if (t.len > 80)
        ax_strbuf_appendf(out, "%.77s...", t.data);
    else
        ax_strbuf_append(out, t.data ? t.data : "");
    ax_strbuf_free(&t);
}

/* A structure mismatch in a tree that the skeleton s should be a prefix of. */
static int mismatch(ax_interp *in, const char *what, const ax_value *s, const ax_value *t) {
    ax_strbuf m;
    ax_strbuf_init(&m);
    ax_strbuf_appendf(&m, "%s: expected ", what);
    if (s->kind == AX_V_DICT) {
        ax_strbuf_append(&m, "a dict with keys [");
        for (int i = 0; i < s->n; i++) {
            if (i) ax_strbuf_append(&m, ", ");
            ax_value_format_nested(&m, s->keys[i]);
        }
        ax_strbuf_append(&m, "]");
    } else if (s->kind == AX_V_TUPLE || s->kind == AX_V_LIST) {
        ax_strbuf_appendf(&m, "a %s of %d items", ax_value_kind_name(s->kind), s->n);
    } else if (record_children(s)) {
        ax_strbuf_appendf(&m, "a %s", ax_record_class_name(((record_node *)s->obj.payload)->cls));
    } else {
        ax_strbuf_append(&m, s->kind == AX_V_NONE ? "None" : "a PRNG key");
    }
    ax_strbuf_append(&m, ", got ");
    describe_value(&m, t);
    ax_error(in->cx, AX_ERR_VALUE, "%s", m.data ? m.data : what);
    ax_strbuf_free(&m);
    return -1;
}

/* Appends to `out` the subtrees of t that sit where the skeleton s has leaves (new refs). */
static int up_to(walk *w, const char *what, const ax_value *s, ax_value *t) {
    ax_interp *in = w->in;
    if (s->kind == AX_V_OBJECT && s->obj.type == &leaf_marker)
        return push_take(&w->leaves, ax_value_retain(t)) ? 0 : (ax_error_oom(in->cx), -1);
    if (s->kind == AX_V_NONE) return t->kind == AX_V_NONE ? 0 : mismatch(in, what, s, t);
    if (s->kind == AX_V_OBJECT && s->obj.type == &object_node) {
        if (t->kind != AX_V_OBJECT || t->obj.type != (const ax_object_type *)s->obj.payload)
            return mismatch(in, what, s, t);
        ax_value *leaf = t->obj.type->tree_leaf(t->obj.payload);
        return leaf && push_take(&w->leaves, leaf) ? 0 : (ax_error_oom(in->cx), -1);
    }
    if (record_children(s)) {
        const record_node *r = s->obj.payload;
        if (!ax_record_is_instance(t) || ax_record_class_of(t) != r->cls)
            return mismatch(in, what, s, t);
        ax_value *kids, *aux;
        if (record_split(in, t, &kids, &aux)) return -1;
        int rc = aux_equal(r->aux, aux) && kids->n == r->children->n ? 0 : mismatch(in, what, s, t);
        for (int i = 0; !rc && i < kids->n; i++)
            rc = up_to(w, what, r->children->items[i], kids->items[i]);
        ax_value_release(kids);
        if (aux) ax_value_release(aux);
        return rc;
    }
    if (t->kind != s->kind || t->n != s->n) return mismatch(in, what, s, t);
    if (s->kind == AX_V_DICT) {
        for (int i = 0; i < s->n; i++) { /* s's keys are sorted */
            ax_value *v = ax_dict_lookup(t, s->keys[i]);
            if (!v) return mismatch(in, what, s, t);
            if (up_to(w, what, s->items[i], v)) return -1;
        }
        return 0;
    }
    for (int i = 0; i < s->n; i++)
        if (up_to(w, what, s->items[i], t->items[i])) return -1;
    return 0;
}

/* The subtrees of `tree` at the leaves of `treedef` (a prefix of it): new references. */
static int flatten_up_to(ax_interp *in, const char *what, ax_value *treedef, ax_value *tree,
                         ax_value ***out, int *n) {
    walk w = {.in = in};
    if (up_to(&w, what, treedef->obj.payload, tree)) {
        walk_free(&w);
        return -1;
    }
    *out = w.leaves.items ? w.leaves.items : calloc(1, sizeof **out);
    *n = w.leaves.n;
    return *out ? 0 : (ax_error_oom(in->cx), -1);
}

/* ---------------------------------------------------------------- treedef attributes */

static ax_value *treedef_unflatten_method(ax_interp *in, ax_value *self, const ax_args *a) {
    ax_value *leaves = a->n == 1 && !a->nkw ? a->pos[0] : NULL;
    if (!leaves || (leaves->kind != AX_V_LIST && leaves->kind != AX_V_TUPLE))
        return ax_error(in->cx, AX_ERR_TYPE, "treedef.unflatten(leaves) takes a list of leaves");
    return ax_tree_unflatten(in, self->builtin->data, leaves->items, leaves->n);
}

static ax_value *treedef_flatten_up_to_method(ax_interp *in, ax_value *self, const ax_args *a) {
    if (a->n != 1 || a->nkw)
        return ax_error(in->cx, AX_ERR_TYPE, "treedef.flatten_up_to(tree) takes one tree");
    ax_value **subtrees;
    int n;
    if (flatten_up_to(in, "flatten_up_to", self->builtin->data, a->pos[0], &subtrees, &n))
        return NULL;
    ax_value *r = ax_value_list(n, subtrees);
    free(subtrees);
    return r ? r : ax_error_oom(in->cx);
}

static ax_value *treedef_getattr(ax_interp *in, ax_value *self, const char *name) {
    const ax_value *s = self->obj.payload;
    if (strcmp(name, "num_leaves") == 0) return ax_value_int(in, count_leaves(s));
    if (strcmp(name, "num_nodes") == 0) return ax_value_int(in, count_nodes(s));
    ax_builtin_fn fn = strcmp(name, "unflatten") == 0       ? treedef_unflatten_method
                       : strcmp(name, "flatten_up_to") == 0 ? treedef_flatten_up_to_method
                                                            : NULL;
    if (!fn) return NULL;
    ax_value *m = ax_value_builtin(name, "a PyTreeDef method", fn, ax_value_retain(self));
    return m ? m : ax_error_oom(in->cx);
}

/* ---------------------------------------------------------------- builtins */

/* Flattens a call's `tree` argument (with is_leaf= and, when wanted, paths). The walk holds
 * the leaves; the treedef is returned (NULL + error). */
static ax_value *flatten_arg(ax_interp *in, const ax_args *a, const char *fname, walk *w,
                             bool with_paths) {
    if (!ax_args_check(in, a, fname, 2, (const char *[]){"tree", "is_leaf", NULL})) return NULL;
    ax_value *tree = ax_arg(a, 0, "tree"), *is_leaf = ax_arg(a, 1, "is_leaf");
    if (!tree) return ax_error(in->cx, AX_ERR_TYPE, "%s() missing argument 'tree'", fname);
    *w = (walk){.in = in, .with_paths = with_paths};
    if (is_leaf && is_leaf->kind != AX_V_NONE) w->is_leaf = is_leaf;
    return walk_tree(w, tree);
}

/* A list taking the items of a leaf list. */
static ax_value *list_take(ax_interp *in, leaf_list *l) {
    ax_value *r = ax_value_list(l->n, l->items);
    free(l->items);
    *l = (leaf_list){0};
    return r ? r : ax_error_oom(in->cx);
}

static ax_value *pair_take(ax_interp *in, ax_value *a, ax_value *b) {
    ax_value *items[2] = {a, b};
    if (!a || !b) {
        if (a) ax_value_release(a);
        if (b) ax_value_release(b);
        return NULL;
    }
    ax_value *r = ax_value_tuple(2, items);
    return r ? r : ax_error_oom(in->cx);
}

static ax_value *b_tree_leaves(ax_interp *in, ax_value *self, const ax_args *a) {
    (void)self;
    walk w;
    ax_value *def = flatten_arg(in, a, "tree_leaves", &w, false);
    ax_value *r = def ? list_take(in, &w.leaves) : NULL;
    if (def) ax_value_release(def);
    walk_free(&w);
    return r;
}

static ax_value *b_tree_structure(ax_interp *in, ax_value *self, const ax_args *a) {
    (void)self;
    walk w;
    ax_value *def = flatten_arg(in, a, "tree_structure", &w, false);
    walk_free(&w);
    return def;
}

static ax_value *b_tree_flatten(ax_interp *in, ax_value *self, const ax_args *a) {
    (void)self;
    walk w;
    ax_value *def = flatten_arg(in, a, "tree_flatten", &w, false);
    ax_value *r = def ? pair_take(in, list_take(in, &w.leaves), def) : NULL;
    walk_free(&w);
    return r;
}

/* The (path, leaf) pairs of a walk with paths, as a list. */
static ax_value *path_pairs(ax_interp *in, walk *w) {
    leaf_list pairs = {0};
    for (int i = 0; i < w->leaves.n; i++) {
        ax_value *p =
            pair_take(in, ax_value_retain(w->paths.items[i]), ax_value_retain(w->leaves.items[i]));
        if (!p || !push_take(&pairs, p)) {
            if (p) ax_error_oom(in->cx);
            ax_values_release(pairs.items, pairs.n);
            return NULL;
        }
    }
    return list_take(in, &pairs);
}

static ax_value *b_tree_flatten_with_path(ax_interp *in, ax_value *self, const ax_args *a) {
    (void)self;
    walk w;
    ax_value *def = flatten_arg(in, a, "tree_flatten_with_path", &w, true);
    ax_value *r = def ? pair_take(in, path_pairs(in, &w), def) : NULL;
    walk_free(&w);
    return r;
}

static ax_value *b_tree_leaves_with_path(ax_interp *in, ax_value *self, const ax_args *a) {
    (void)self;
    walk w;
    ax_value *def = flatten_arg(in, a, "tree_leaves_with_path", &w, true);
    ax_value *r = def ? path_pairs(in, &w) : NULL;
    if (def) ax_value_release(def);
    walk_free(&w);
    return r;
}

ax_value *ax_tree_call_args(ax_interp *in, int n, ax_value *const *args) {
    ax_value **items = calloc((size_t)n + 1, sizeof *items);
    if (!items) return ax_error_oom(in->cx);
    for (int i = 0; i < n; i++) items[i] = ax_value_retain(args[i]);
    ax_value *pair[2] = {ax_value_tuple(n, items), ax_value_dict(0, NULL, NULL)};
    free(items);
    if (!pair[0] || !pair[1]) {
        if (pair[0]) ax_value_release(pair[0]);
        if (pair[1]) ax_value_release(pair[1]);
        return ax_error_oom(in->cx);
    }
    return ax_value_or_oom(in, ax_value_tuple(2, pair));
}

char *ax_tree_leaf_keystr(ax_interp *in, ax_value *tree, int leaf) {
    walk w = {.in = in, .with_paths = true};
    ax_value *def = walk_tree(&w, tree);
    char *text = NULL;
    if (def && leaf >= 0 && leaf < w.paths.n) {
        ax_strbuf out;
        ax_strbuf_init(&out);
        const ax_value *path = w.paths.items[leaf];
        for (int i = 0; i < path->n; i++) key_text(&out, path->items[i], false);
        text = out.failed ? NULL : out.data ? out.data : strdup("");
        if (out.failed) ax_strbuf_free(&out);
        if (!text) ax_error_oom(in->cx);
    } else if (def) {
        ax_error(in->cx, AX_ERR_INDEX, "the tree has no leaf %d", leaf);
    }
    if (def) ax_value_release(def);
    walk_free(&w);
    return text;
}

static ax_value *b_tree_unflatten(ax_interp *in, ax_value *self, const ax_args *a) {
    (void)self;
    if (!ax_args_check(in, a, "tree_unflatten", 2, (const char *[]){"treedef", "leaves", NULL}))
        return NULL;
    ax_value *def = ax_arg(a, 0, "treedef"), *leaves = ax_arg(a, 1, "leaves");
    if (!def || !leaves || (leaves->kind != AX_V_LIST && leaves->kind != AX_V_TUPLE))
        return ax_error(in->cx, AX_ERR_TYPE,
                        "tree_unflatten(treedef, leaves) needs a structure "
                        "and a list of leaves");
    return ax_tree_unflatten(in, def, leaves->items, leaves->n);
}

/* tree_map(f, tree, *rest, is_leaf=None) and tree_map_with_path (f(path, leaf, *rest)): f
 * applied to the leaves of `tree`; each tree of `rest` has `tree`'s structure or deeper (tree
 * is a prefix of it), and f gets its subtree at each leaf of `tree`. */
static ax_value *map_call(ax_interp *in, const ax_args *a, bool with_path) {
    const char *fname = with_path ? "tree_map_with_path" : "tree_map";
    if (!ax_bi_keywords(in, a, fname, (const char *[]){"is_leaf", NULL})) return NULL;
    if (a->n < 2)
        return ax_error(in->cx, AX_ERR_TYPE,
                        "%s(f, tree, *rest) takes a function and at least "
                        "one tree",
                        fname);
    ax_value *is_leaf = ax_bi_kwarg(a, "is_leaf");
    int nrest = a->n - 2, n = 0, rc = 0, lead = with_path ? 1 : 0;
    walk w = {.in = in, .with_paths = with_path};
    if (is_leaf && is_leaf->kind != AX_V_NONE) w.is_leaf = is_leaf;
    ax_value *def = walk_tree(&w, a->pos[1]), *out = NULL;
    ax_value ***rest = calloc((size_t)nrest + 1, sizeof *rest);
    int *counts = calloc((size_t)nrest + 1, sizeof *counts);
    ax_value **callargs = calloc((size_t)nrest + 2, sizeof *callargs);
    if (!def || !rest || !counts || !callargs) rc = -1;
    if (def && (!rest || !counts || !callargs)) ax_error_oom(in->cx);
    n = w.leaves.n;
    for (int t = 0; t < nrest && !rc; t++) {
        char what[96];
        snprintf(what, sizeof what, "%s: tree %d does not match the first tree", fname, t + 2);
        rc = flatten_up_to(in, what, def, a->pos[t + 2], &rest[t], &counts[t]);
    }
    leaf_list results = {0};
    for (int i = 0; i < n && !rc; i++) {
        if (with_path) callargs[0] = w.paths.items[i];
        callargs[lead] = w.leaves.items[i];
        for (int t = 0; t < nrest; t++) callargs[lead + 1 + t] = rest[t][i];
        ax_args ca = {.n = lead + 1 + nrest, .pos = callargs};
        ax_value *r = ax_call(in, a->pos[0], &ca);
        if (!r || !push_take(&results, r)) {
            if (r) ax_error_oom(in->cx);
            rc = -1;
        }
    }
    if (!rc) out = ax_tree_unflatten(in, def, results.items, results.n);
    ax_values_release(results.items, results.n);
    for (int t = 0; rest && t < nrest; t++)
        if (rest[t]) ax_values_release(rest[t], counts[t]);
    if (def) ax_value_release(def);
    walk_free(&w);
    free(rest);
    free(counts);
    free(callargs);
    return out;
}

static ax_value *b_tree_map(ax_interp *in, ax_value *self, const ax_args *a) {
    (void)self;
    return map_call(in, a, false);
}

static ax_value *b_tree_map_with_path(ax_interp *in, ax_value *self, const ax_args *a) {
    (void)self;
    return map_call(in, a, true);
}

/* keystr(keys, simple=False, separator=''): a path as text, "['a'][0].x" (or "a/0/x" with
 * simple=True, separator='/'). */
static ax_value *b_keystr(ax_interp *in, ax_value *self, const ax_args *a) {
    (void)self;
    if (!ax_args_check(in, a, "keystr", 1, (const char *[]){"keys", "simple", "separator", NULL}))
        return NULL;
    ax_value *keys = ax_arg(a, 0, "keys"), *sep = ax_arg(a, 2, "separator");
    bool simple;
    if (!keys || (keys->kind != AX_V_TUPLE && keys->kind != AX_V_LIST))
        return ax_error(in->cx, AX_ERR_TYPE, "keystr(keys) takes a path: a tuple of keys");
    if (!ax_bi_bool(in, ax_arg(a, 1, "simple"), "simple", false, &simple)) return NULL;
    if (sep && sep->kind != AX_V_STR)
        return ax_error(in->cx, AX_ERR_TYPE, "keystr: separator must be a string");
    ax_strbuf out;
    ax_strbuf_init(&out);
    for (int i = 0; i < keys->n; i++) {
        if (i && sep) ax_strbuf_append(&out, sep->str);
        key_text(&out, keys->items[i], simple);
    }
    return ax_value_str_take_buf(in, &out);
}

static ax_value *make_key(ax_interp *in, const ax_args *a, key_kind kind) {
    const char *field = key_names[kind].field, *type = key_names[kind].type;
    if (!ax_args_check(in, a, type, 1, (const char *[]){field, NULL})) return NULL;
    ax_value *v = ax_arg(a, 0, field);
    bool want_int = kind == KEY_SEQUENCE || kind == KEY_FLAT;
    if (!v || (want_int ? v->kind != AX_V_ARRAY : v->kind != AX_V_STR))
        return ax_error(in->cx, AX_ERR_TYPE, "%s(%s) takes %s", type, field,
                        want_int ? "an int" : "a string");
    return key_new(in, kind, ax_value_retain(v));
}

static ax_value *b_dict_key(ax_interp *in, ax_value *self, const ax_args *a) {
    (void)self;
    return make_key(in, a, KEY_DICT);
}
static ax_value *b_sequence_key(ax_interp *in, ax_value *self, const ax_args *a) {
    (void)self;
    return make_key(in, a, KEY_SEQUENCE);
}
static ax_value *b_get_attr_key(ax_interp *in, ax_value *self, const ax_args *a) {
    (void)self;
    return make_key(in, a, KEY_ATTR);
}
static ax_value *b_flattened_index_key(ax_interp *in, ax_value *self, const ax_args *a) {
    (void)self;
    return make_key(in, a, KEY_FLAT);
}

/* register_pytree_node(nodetype, flatten_func, unflatten_func) */
static ax_value *b_register_pytree_node(ax_interp *in, ax_value *self, const ax_args *a) {
    (void)self;
    static const char *const names[] = {"nodetype", "flatten_func", "unflatten_func", NULL};
    if (!ax_args_check(in, a, "register_pytree_node", 3, names)) return NULL;
    ax_value *cls = ax_arg(a, 0, names[0]), *fl = ax_arg(a, 1, names[1]),
             *un = ax_arg(a, 2, names[2]);
    if (!cls || !fl || !un)
        return ax_error(in->cx, AX_ERR_TYPE,
                        "register_pytree_node(nodetype, flatten_func, unflatten_func) takes "
                        "three arguments");
    return ax_record_register(in, cls, fl, un) ? NULL : ax_none();
}

/* all_leaves(iterable, is_leaf=None): whether every item is a leaf. */
static ax_value *b_all_leaves(ax_interp *in, ax_value *self, const ax_args *a) {
    (void)self;
    if (!ax_args_check(in, a, "all_leaves", 2, (const char *[]){"iterable", "is_leaf", NULL}))
        return NULL;
    ax_value *items = ax_arg(a, 0, "iterable"), *is_leaf = ax_arg(a, 1, "is_leaf");
    if (!items) return ax_error(in->cx, AX_ERR_TYPE, "all_leaves() missing argument 'iterable'");
    ax_value_iter it;
    ax_value *item;
    bool all = true;
    int st;
    if (ax_value_iter_begin(in, items, &it) < 0) return NULL;
    while (all && (st = ax_value_iter_next(in, &it, &item)) == 1) {
        walk w = {.in = in};
        if (is_leaf && is_leaf->kind != AX_V_NONE) w.is_leaf = is_leaf;
        ax_value *def = walk_tree(&w, item);
        ax_value_release(item);
        if (!def) {
            walk_free(&w);
            return NULL;
        }
        const ax_value *s = def->obj.payload;
        all = s->kind == AX_V_OBJECT && s->obj.type == &leaf_marker;
        ax_value_release(def);
        walk_free(&w);
    }
    if (all && st < 0) return NULL;
    return ax_value_bool(in, all);
}

int ax_pytree_register(ax_interp *in) {
    static const struct {
        const char *name, *doc;
        ax_builtin_fn fn;
    } fns[] = {
        {"tree_map",
         "tree_map(f, tree, *rest, is_leaf=None): f of the leaves of tree (and the subtrees of "
         "rest there)",
         b_tree_map},
        {"tree_leaves", "tree_leaves(tree, is_leaf=None): the leaves, in order (dicts by key)",
         b_tree_leaves},
        {"tree_structure", "tree_structure(tree, is_leaf=None): the structure (a PyTreeDef)",
         b_tree_structure},
        {"tree_flatten", "tree_flatten(tree, is_leaf=None): (leaves, structure)", b_tree_flatten},
        {"tree_unflatten", "tree_unflatten(structure, leaves): rebuild a pytree", b_tree_unflatten},
        {"tree_map_with_path",
         "tree_map_with_path(f, tree, *rest, is_leaf=None): f(path, leaf, *rest) per leaf",
         b_tree_map_with_path},
        {"tree_flatten_with_path",
         "tree_flatten_with_path(tree, is_leaf=None): ([(path, leaf), ...], structure)",
         b_tree_flatten_with_path},
        {"tree_leaves_with_path", "tree_leaves_with_path(tree, is_leaf=None): [(path, leaf), ...]",
         b_tree_leaves_with_path},
        {"keystr", "keystr(path, simple=False, separator=''): a leaf's path as text", b_keystr},
        {"register_pytree_node",
         "register_pytree_node(nodetype, flatten, unflatten): how a namedtuple class's records "
         "flatten",
         b_register_pytree_node},
        {"all_leaves", "all_leaves(iterable, is_leaf=None): whether every item is a leaf",
         b_all_leaves},
        {"DictKey", "DictKey(key): a dict entry in a leaf's path", b_dict_key},
        {"SequenceKey", "SequenceKey(idx): a tuple or list item in a leaf's path", b_sequence_key},
        {"GetAttrKey", "GetAttrKey(name): a record field in a leaf's path", b_get_attr_key},
        {"FlattenedIndexKey", "FlattenedIndexKey(key): a child of a registered node",
         b_flattened_index_key},
    };
    for (size_t i = 0; i < sizeof fns / sizeof *fns; i++) {
        ax_value *v = ax_value_builtin(fns[i].name, fns[i].doc, fns[i].fn, NULL);
        if (!v) return -1;
        ax_interp_define_builtin_take(in, fns[i].name, v);
    }
    return 0;
}

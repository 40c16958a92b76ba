/* Pytrees (see pytree.h). A tree's structure is kept as a skeleton: the tree itself with each
 * leaf replaced by a marker object, wrapped in a `treedef` object. */
#include "pytree.h"

#include <stdlib.h>
#include <string.h>

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

static void treedef_free(void *payload) {
    ax_value_release(payload);
}
static void treedef_format(ax_strbuf *out, void *payload) {
    ax_strbuf_append(out, "PyTreeDef(");
    ax_value_format(out, payload);
    ax_strbuf_append(out, ")");
}
static const ax_object_type treedef_type = {
    .name = "PyTreeDef", .free = treedef_free, .format = treedef_format};

void ax_values_release(ax_value **values, int n) {
    if (!values) return;
    for (int i = 0; i < n; i++) ax_value_release(values[i]);
    free(values);
}

typedef struct leaf_list {
    ax_value **items;
    int n, cap;
} leaf_list;

static bool push_leaf(leaf_list *l, ax_value *v) {
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 16;
        ax_value **items = realloc(l->items, (size_t)cap * sizeof *items);
        if (!items) return false;
        l->items = items;
        l->cap = cap;
    }
    l->items[l->n++] = ax_value_retain(v);
    return true;
}

static int key_cmp(const void *a, const void *b) {
    const ax_value *const *x = a, *const *y = b;
    return strcmp((*x)->str, (*y)->str);
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

static ax_value *flatten(ax_interp *in, ax_value *t, leaf_list *leaves, int depth);

static ax_value *flatten_seq(ax_interp *in, ax_value *t, leaf_list *leaves, int depth) {
    ax_value **items = calloc((size_t)(t->n ? t->n : 1), sizeof *items);
    if (!items) return ax_error_oom(in->cx);
    for (int i = 0; i < t->n; i++) {
        if (!(items[i] = flatten(in, t->items[i], leaves, depth + 1))) {
            ax_values_release(items, i);
            return NULL;
        }
    }
    ax_value *r = t->kind == AX_V_TUPLE ? ax_value_tuple(t->n, items) : ax_value_list(t->n, items);
    free(items);
    return ax_value_or_oom(in, r);
}

static ax_value *flatten_dict(ax_interp *in, ax_value *t, leaf_list *leaves, int depth) {
    int *order = sorted_order(t);
    ax_value **keys = calloc((size_t)(t->n ? t->n : 1), sizeof *keys);
    ax_value **vals = calloc((size_t)(t->n ? t->n : 1), sizeof *vals);
    if (!order || !keys || !vals) {
        free(order);
        free(keys);
        free(vals);
        return ax_error_oom(in->cx);
    }
    for (int i = 0; i < t->n; i++) {
        keys[i] = ax_value_retain(t->keys[order[i]]);
        if (!(vals[i] = flatten(in, t->items[order[i]], leaves, depth + 1))) {
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
    return ax_value_or_oom(in, r);
}

/* The skeleton of t (depth: how deep t sits in the tree being flattened). Every other walk
 * over a skeleton recurses as deep as this one did, so its depth limit bounds them all. */
static ax_value *flatten(ax_interp *in, ax_value *t, leaf_list *leaves, int depth) {
    bool node = t->kind == AX_V_TUPLE || t->kind == AX_V_LIST || t->kind == AX_V_DICT;
    if (node && depth >= AX_MAX_VALUE_DEPTH)
        return ax_error(in->cx, AX_ERR_RECURSION,
                        "a pytree nested more than %d levels deep cannot be flattened",
                        AX_MAX_VALUE_DEPTH);
    switch (t->kind) {
    case AX_V_TUPLE:
    case AX_V_LIST:
        return flatten_seq(in, t, leaves, depth);
    case AX_V_DICT:
        return flatten_dict(in, t, leaves, depth);
    case AX_V_NONE:
        return ax_value_retain(t);
    case AX_V_OBJECT:
        if (t->obj.type->tree_leaf) {
            ax_value *leaf = t->obj.type->tree_leaf(t->obj.payload);
            bool ok = leaf && push_leaf(leaves, leaf);
            if (leaf) ax_value_release(leaf);
            if (!ok) return ax_error_oom(in->cx);
            return ax_value_object(&object_node, (void *)t->obj.type);
        }
        /* other objects are leaves */
        __attribute__((fallthrough));
    default:
        if (!push_leaf(leaves, t)) return ax_error_oom(in->cx);
        return ax_value_object(&leaf_marker, NULL);
    }
}

int ax_tree_flatten(ax_interp *in, ax_value *tree, ax_value ***leaves, int *nleaves,
                    ax_value **treedef) {
    leaf_list l = {0};
    ax_value *skeleton = flatten(in, tree, &l, 0);
    ax_value *def = skeleton ? ax_value_object(&treedef_type, skeleton) : NULL;
    if (!def) { /* ax_value_object freed the skeleton */
        ax_values_release(l.items, l.n);
        if (!ax_error_pending(in->cx)) ax_error_oom(in->cx);
        return -1;
    }
    *leaves = l.items ? l.items : calloc(1, sizeof **leaves);
    *nleaves = l.n;
    *treedef = def;
    return 0;
}

static int count_leaves(const ax_value *s) {
    if (s->kind == AX_V_OBJECT)
        return s->obj.type == &leaf_marker || s->obj.type == &object_node ? 1 : 0;
    if (s->kind != AX_V_TUPLE && s->kind != AX_V_LIST && s->kind != AX_V_DICT) return 0;
    int n = 0;
    for (int i = 0; i < s->n; i++) n += count_leaves(s->items[i]);
    return n;
}

int ax_treedef_leaves(ax_value *treedef) {
    if (treedef->kind != AX_V_OBJECT || treedef->obj.type != &treedef_type) return -1;
    return count_leaves(treedef->obj.payload);
}

static bool skeleton_equal(const ax_value *a, const ax_value *b) {
    if (a->kind != b->kind || (a->kind == AX_V_OBJECT && a->obj.type != b->obj.type)) return false;
    if (a->kind == AX_V_OBJECT && a->obj.type == &object_node)
        return a->obj.payload == b->obj.payload;
    if (a->kind != AX_V_TUPLE && a->kind != AX_V_LIST && a->kind != AX_V_DICT) return true;
    if (a->n != b->n) return false;
    for (int i = 0; i < a->n; i++) {
        if (a->kind == AX_V_DICT && strcmp(a->keys[i]->str, b->keys[i]->str)) return false;
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
    if (s->kind == AX_V_OBJECT)
        return mix(
            h, (uint64_t)(uintptr_t)(s->obj.type == &object_node ? s->obj.payload : s->obj.type));
    if (s->kind != AX_V_TUPLE && s->kind != AX_V_LIST && s->kind != AX_V_DICT) return h;
    h = mix(h, (uint64_t)s->n);
    for (int i = 0; i < s->n; i++) {
        if (s->kind == AX_V_DICT)
            for (const char *c = s->keys[i]->str; *c; c++) h = mix(h, (unsigned char)*c);
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

static ax_value *rebuild(ax_interp *in, const ax_value *s, ax_value **leaves, int *at) {
    if (s->kind == AX_V_OBJECT && s->obj.type == &leaf_marker)
        return ax_value_retain(leaves[(*at)++]);
    if (s->kind == AX_V_OBJECT && s->obj.type == &object_node) {
        const ax_object_type *t = s->obj.payload;
        return t->tree_rebuild(in, leaves[(*at)++]);
    }
    if (s->kind != AX_V_TUPLE && s->kind != AX_V_LIST && s->kind != AX_V_DICT)
        return ax_value_retain((ax_value *)s);
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

/* ---------------------------------------------------------------- builtins */

static ax_value *b_tree_leaves(ax_interp *in, ax_value *self, const ax_args *a) {
    (void)self;
    if (!ax_args_check(in, a, "tree_leaves", 1, (const char *[]){"tree", NULL})) return NULL;
    ax_value *tree = ax_arg(a, 0, "tree"), **leaves, *def;
    int n;
    if (!tree) return ax_error(in->cx, AX_ERR_TYPE, "tree_leaves() missing argument 'tree'");
    if (ax_tree_flatten(in, tree, &leaves, &n, &def)) return NULL;
    ax_value_release(def);
    ax_value *r = ax_value_list(n, leaves);
    free(leaves);
    return ax_value_or_oom(in, r);
}

static ax_value *b_tree_structure(ax_interp *in, ax_value *self, const ax_args *a) {
    (void)self;
    if (!ax_args_check(in, a, "tree_structure", 1, (const char *[]){"tree", NULL})) return NULL;
    ax_value *tree = ax_arg(a, 0, "tree"), **leaves, *def;
    int n;
    if (!tree) return ax_error(in->cx, AX_ERR_TYPE, "tree_structure() missing argument 'tree'");
    if (ax_tree_flatten(in, tree, &leaves, &n, &def)) return NULL;
    ax_values_release(leaves, n);
    return def;
}

static ax_value *b_tree_flatten(ax_interp *in, ax_value *self, const ax_args *a) {
    (void)self;
    if (!ax_args_check(in, a, "tree_flatten", 1, (const char *[]){"tree", NULL})) return NULL;
    ax_value *tree = ax_arg(a, 0, "tree"), **leaves, *def;
    int n;
    if (!tree) return ax_error(in->cx, AX_ERR_TYPE, "tree_flatten() missing argument 'tree'");
    if (ax_tree_flatten(in, tree, &leaves, &n, &def)) return NULL;
    ax_value *list = ax_value_list(n, leaves);
    free(leaves);
    ax_value **pair = malloc(2 * sizeof *pair);
    if (!list || !pair) {
        ax_value_release(list);
        ax_value_release(def);
        free(pair);
        return ax_error_oom(in->cx);
    }
    pair[0] = list;
    pair[1] = def;
    ax_value *r = ax_value_tuple(2, pair);
    free(pair);
    return ax_value_or_oom(in, r);
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

/* tree_map(f, tree, *rest): f applied to corresponding leaves; the other trees must have the
 * first one's structure. */
static ax_value *b_tree_map(ax_interp *in, ax_value *self, const ax_args *a) {
    (void)self;
    if (a->n < 2 || a->nkw)
        return ax_error(in->cx, AX_ERR_TYPE,
                        "tree_map(f, tree, *rest) takes a function and at "
                        "least one tree");
    int ntrees = a->n - 1, n = 0, rc = 0;
    ax_value ***leaves = calloc((size_t)ntrees, sizeof *leaves),
             **defs = calloc((size_t)ntrees, sizeof *defs);
    int *counts = calloc((size_t)ntrees, sizeof *counts);
    ax_value **results = NULL, **callargs = calloc((size_t)ntrees, sizeof *callargs), *out = NULL;
    if (!leaves || !defs || !counts || !callargs) rc = -1, ax_error_oom(in->cx);
    for (int t = 0; t < ntrees && !rc; t++) {
        rc = ax_tree_flatten(in, a->pos[t + 1], &leaves[t], &counts[t], &defs[t]);
        if (!rc && t > 0 && !ax_treedef_equal(defs[0], defs[t])) {
            ax_error(in->cx, AX_ERR_VALUE,
                     "tree_map: tree %d has a different structure than the first tree", t + 1);
            rc = -1;
        }
    }
    if (!rc) {
        n = counts[0];
        results = calloc((size_t)(n ? n : 1), sizeof *results);
        if (!results) rc = -1, ax_error_oom(in->cx);
    }
    for (int i = 0; i < n && !rc; i++) {
        for (int t = 0; t < ntrees; t++) callargs[t] = leaves[t][i];
        ax_args ca = {.n = ntrees, .pos = callargs};
        if (!(results[i] = ax_call(in, a->pos[0], &ca))) rc = -1;
    }
    if (!rc) out = ax_tree_unflatten(in, defs[0], results, n);
    if (results) ax_values_release(results, n);
    for (int t = 0; t < ntrees; t++) {
        if (leaves && leaves[t]) ax_values_release(leaves[t], counts[t]);
        if (defs && defs[t]) ax_value_release(defs[t]);
    }
    free(leaves);
    free(defs);
    free(counts);
    free(callargs);
    return out;
}

int ax_pytree_register(ax_interp *in) {
    static const struct {
        const char *name, *doc;
        ax_builtin_fn fn;
    } fns[] = {
        {"tree_map", "tree_map(f, tree, *rest): apply f to the leaves (of trees of one structure)",
         b_tree_map},
        {"tree_leaves", "tree_leaves(tree): the leaves of a pytree, in order (dicts by sorted key)",
         b_tree_leaves},
        {"tree_structure", "tree_structure(tree): the structure of a pytree (a PyTreeDef)",
         b_tree_structure},
        {"tree_flatten", "tree_flatten(tree): (leaves, structure)", b_tree_flatten},
        {"tree_unflatten", "tree_unflatten(structure, leaves): rebuild a pytree", b_tree_unflatten},
    };
    for (size_t i = 0; i < sizeof fns / sizeof *fns; i++) {
        ax_value *v = ax_value_builtin(fns[i].name, fns[i].doc, fns[i].fn, NULL);
        if (!v) return -1;
        ax_interp_define_builtin(in, fns[i].name, v);
    }
    return 0;
}

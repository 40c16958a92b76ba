/* Reference cycles among values (see cycles.h). */
#include "cycles.h"

#include <stdint.h>
#include <stdlib.h>

#include "eval.h"

typedef void (*visit_fn)(void *arg, ax_value *child);

/* Calls visit on each value that v holds a reference to, among those the walk can see. */
static void each_child(ax_value *v, visit_fn visit, void *arg) {
    switch (v->kind) {
    case AX_V_DICT:
        for (int i = 0; i < v->n; i++) visit(arg, v->keys[i]);
        /* fall through */
    case AX_V_TUPLE:
    case AX_V_LIST:
        for (int i = 0; i < v->n; i++) visit(arg, v->items[i]);
        break;
    case AX_V_FUNC: {
        const ax_closure *c = v->fn;
        for (int i = 0; c->captured && i < c->captured->n; i++) visit(arg, c->captured->vals[i]);
        for (int i = 0; c->defaults && i < c->def->nparams; i++)
            if (c->defaults[i]) visit(arg, c->defaults[i]);
        break;
    }
    case AX_V_BUILTIN:
        if (v->builtin->data) visit(arg, v->builtin->data);
        break;
    case AX_V_OBJECT:
        if (v->obj.type->children) v->obj.type->children(v->obj.payload, visit, arg);
        break;
    default: /* arrays, strings, slices, ranges, ...: they hold no value that could hold them */
        break;
    }
}

/* The values reachable from a start value (nodes[0]) and the references among them. */
typedef struct graph {
    ax_value **nodes;
    int n, cap;
    int *slot; /* open addressing: node index + 1 by address, 0 for empty; size scap (2^k) */
    size_t scap;
    int *from, *to; /* one entry per reference from nodes[from] to nodes[to] */
    int ne, ecap;
    bool marked_only; /* walk only the values that ax_cycles_note marked */
    bool failed;      /* out of memory */
    int current;      /* the node whose children are being visited */
} graph;

static bool grow(void **p, int *cap, size_t size) {
    int c = *cap ? 2 * *cap : 16;
    void *q = realloc(*p, (size_t)c * size);
    if (!q) return false;
    *p = q;
    *cap = c;
    return true;
}

static size_t hash_ptr(const ax_value *v, size_t mask) {
    return (size_t)(((uintptr_t)v >> 4) * 0x9E3779B97F4A7C15ull) & mask;
}

static bool rehash(graph *g) {
    size_t cap = g->scap ? 2 * g->scap : 64;
    int *slot = calloc(cap, sizeof *slot);
    if (!slot) return false;
    for (int i = 0; i < g->n; i++) {
        size_t h = hash_ptr(g->nodes[i], cap - 1);
        while (slot[h]) h = (h + 1) & (cap - 1);
        slot[h] = i + 1;
    }
    free(g->slot);
    g->slot = slot;
    g->scap = cap;
    return true;
}

/* The index of v in g, added if new; -1 out of memory. */
static int node_index(graph *g, ax_value *v) {
    if ((size_t)g->n * 2 >= g->scap && !rehash(g)) return -1;
    size_t h = hash_ptr(v, g->scap - 1);
    for (; g->slot[h]; h = (h + 1) & (g->scap - 1))
        if (g->nodes[g->slot[h] - 1] == v) return g->slot[h] - 1;
    if (g->n == g->cap && !grow((void **)&g->nodes, &g->cap, sizeof *g->nodes)) return -1;
    g->nodes[g->n] = v;
    g->slot[h] = ++g->n;
    return g->n - 1;
}

/* Only values that hold references can be on a cycle (and None is immortal). */
static bool walked(const graph *g, const ax_value *v) {
    if (v->refs <= 0) return false;
    if (g->marked_only) return v->cycle_refs > 0;
    switch (v->kind) {
    case AX_V_DICT:
    case AX_V_TUPLE:
    case AX_V_LIST:
    case AX_V_FUNC:
    case AX_V_BUILTIN:
    case AX_V_OBJECT:
        return true;
    default:
        return false;
    }
}

static bool add_edge(graph *g, int from, int to) {
    if (g->ne == g->ecap) {
        int cap = g->ecap ? 2 * g->ecap : 16;
        int *f = realloc(g->from, (size_t)cap * sizeof *f);
        if (f) g->from = f;
        int *t = f ? realloc(g->to, (size_t)cap * sizeof *t) : NULL;
        if (!t) return false;
        g->to = t;
        g->ecap = cap;
    }
    g->from[g->ne] = from;
    g->to[g->ne++] = to;
    return true;
}

static void visit_edge(void *arg, ax_value *child) {
    graph *g = arg;
    if (g->failed || !child || !walked(g, child)) return;
    int to = node_index(g, child);
    if (to < 0 || !add_edge(g, g->current, to)) g->failed = true;
}

static void graph_free(graph *g) {
    free(g->nodes);
    free(g->slot);
    free(g->from);
    free(g->to);
}

/* Walks from start (breadth first: nodes doubles as the queue). False out of memory. */
static bool graph_build(graph *g, ax_value *start, bool marked_only) {
    *g = (graph){.marked_only = marked_only};
    if (node_index(g, start) < 0) return false;
    for (g->current = 0; g->current < g->n && !g->failed; g->current++)
        each_child(g->nodes[g->current], visit_edge, g);
    return !g->failed;
}

/* The nodes reachable from the seeds along the references (forward) or against them. */
static bool *reach(const graph *g, bool forward, bool *seeds) {
    const int *src = forward ? g->from : g->to, *dst = forward ? g->to : g->from;
    /* the edges grouped by where the walk leaves from: node i's are adj[start[i], start[i+1]) */
    int *start = calloc((size_t)g->n + 1, sizeof *start);
    int *adj = malloc((size_t)(g->ne + 1) * sizeof *adj);
    int *queue = malloc((size_t)g->n * sizeof *queue);
    if (!start || !adj || !queue) {
        free(seeds);
        seeds = NULL;
        goto done;
    }
    for (int e = 0; e < g->ne; e++) start[src[e] + 1]++;
    for (int i = 0; i < g->n; i++) start[i + 1] += start[i];
    for (int e = 0; e < g->ne; e++) adj[start[src[e]]++] = dst[e];
    for (int i = g->n; i > 0; i--) start[i] = start[i - 1]; /* the filling moved each start */
    start[0] = 0;
    int head = 0, tail = 0;
    for (int i = 0; i < g->n; i++)
        if (seeds[i]) queue[tail++] = i;
    while (head < tail) {
        int i = queue[head++];
        for (int k = start[i]; k < start[i + 1]; k++)
            if (!seeds[adj[k]]) {
                seeds[adj[k]] = true;
                queue[tail++] = adj[k];
            }
    }
done:
    free(start);
    free(adj);
    free(queue);
    return seeds;
}

/* The references from one node to others, counted per target (UINT32_MAX at most), among the
 * edges whose two ends pass `keep` (NULL: all). */
static uint32_t *count_inner(const graph *g, const bool *keep) {
    uint32_t *inner = calloc((size_t)g->n, sizeof *inner);
    for (int e = 0; inner && e < g->ne; e++)
        if ((!keep || (keep[g->from[e]] && keep[g->to[e]])) && inner[g->to[e]] < UINT32_MAX)
            inner[g->to[e]]++;
    return inner;
}

void ax_cycles_note(ax_value *root) {
    graph g;
    bool *back = NULL;
    uint32_t *inner = NULL;
    if (!graph_build(&g, root, false) || !(back = calloc((size_t)g.n, sizeof *back))) goto done;
    back[0] = true;
    /* The cycles through root: the values it reaches that reach it back. */
    if (!(back = reach(&g, false, back)) || !(inner = count_inner(&g, back))) goto done;
    if (inner[0] == 0) goto done; /* root is on no cycle */
    for (int i = 0; i < g.n; i++)
        if (back[i] && inner[i] > g.nodes[i]->cycle_refs) g.nodes[i]->cycle_refs = inner[i];
done:
    free(back);
    free(inner);
    graph_free(&g);
}

typedef struct value_list {
    ax_value **v;
    int n, cap;
    bool failed;
} value_list;

static void append_child(void *arg, ax_value *child) {
    value_list *l = arg;
    if (l->failed || !child) return;
    if (l->n == l->cap && !grow((void **)&l->v, &l->cap, sizeof *l->v)) {
        l->failed = true;
        return;
    }
    l->v[l->n++] = child;
}

/* Takes the references that the garbage objects among g's nodes hold (the objects forget
 * them), for the caller to release once the walk's memory is freed: every cycle among values
 * passes through such an object, so that releasing them frees the garbage. False (nothing
 * taken) out of memory. */
static bool cut_garbage(graph *g, const bool *alive, value_list *cut) {
    for (int i = 0; i < g->n && !cut->failed; i++) {
        ax_value *v = g->nodes[i];
        if (!alive[i] && v->kind == AX_V_OBJECT && v->obj.type->forget)
            v->obj.type->children(v->obj.payload, append_child, cut);
    }
    if (cut->failed) return false;
    for (int i = 0; i < g->n; i++) {
        ax_value *v = g->nodes[i];
        if (!alive[i] && v->kind == AX_V_OBJECT && v->obj.type->forget)
            v->obj.type->forget(v->obj.payload);
    }
    return true;
}

void ax_cycles_collect(ax_value *v) {
    graph g;
    bool *alive = NULL;
    uint32_t *inner = NULL;
    value_list cut = {0};
    if (!graph_build(&g, v, true) || !(inner = count_inner(&g, NULL)) ||
        !(alive = calloc((size_t)g.n, sizeof *alive)))
        goto done;
    /* Trial deletion: a value with more references than the walked values hold is referenced
     * from outside, and keeps alive what it reaches. */
    for (int i = 0; i < g.n; i++) alive[i] = g.nodes[i]->refs > (int64_t)inner[i];
    if (alive[0] || !(alive = reach(&g, true, alive)) || alive[0]) goto done;
    if (!cut_garbage(&g, alive, &cut)) cut.n = 0;
done:
    free(alive);
    free(inner);
    graph_free(&g);
    for (int i = 0; i < cut.n; i++) ax_value_release(cut.v[i]);
    free(cut.v);
}

/* The tree-walking evaluator: expressions, statements, closures and argument binding.
 *
 * A frame is where evaluation happens: the local environment (NULL at a module's top level,
 * where names bind in the module's globals), the module for late-bound globals, and the
 * program for error spans. Every failing node attaches its span to the pending error unless a
 * node inside it already did, so the innermost failing expression gets the caret. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "../compiler/trace.h"
#include "eval.h"

typedef struct frame {
    ax_interp *in;
    ax_env *env;
    ax_module *module;
    struct ax_program_ref *prog;
    const char *fn_name; /* the function being run, or NULL at module level */
} frame;

/* How a statement ended. */
typedef enum { EX_OK, EX_BREAK, EX_CONTINUE, EX_ERROR } exec_status;

static ax_value *eval(frame *f, const ax_node *n);
static exec_status exec_block(frame *f, const ax_nodelist *body, ax_value **out);

/* Inside the standard library (random.ax, prelude.ax) an error is the caller's: the span goes
 * on the user's expression that called into it. */
static bool in_stdlib(const frame *f) {
    const char *dir = f->in->stdlib_dir, *file = f->prog->prog->file;
    return dir && file && strncmp(file, dir, strlen(dir)) == 0;
}

static void attach_span(frame *f, const ax_node *n) {
    ax_ctx *cx = f->in->cx;
    if (ax_error_pending(cx) && !cx->err.has_span && !in_stdlib(f))
        ax_error_set_span(cx, n->span, f->prog->prog->file, f->prog->prog->source);
}

static ax_value *oom(frame *f, ax_value *v) {
    return v ? v : ax_error_oom(f->in->cx);
}

/* The source text of a span (its first line), for messages that quote the program. */
static void span_text(const frame *f, ax_span s, char *out, size_t cap) {
    out[0] = 0;
    const char *p = f->prog->prog->source;
    for (int l = 1; p && l < s.line; l++) {
        p = strchr(p, '\n');
        if (p) p++;
    }
    if (!p || s.col < 1 || cap < 8) return;
    size_t linelen = strcspn(p, "\n");
    size_t start = (size_t)(s.col - 1);
    size_t end = s.end_line == s.line && s.end_col > s.col ? (size_t)(s.end_col - 1) : linelen;
    if (start > linelen) return;
    if (end > linelen) end = linelen;
    size_t n = end - start;
    bool cut = n > cap - 4 || s.end_line > s.line;
    if (n > cap - 4) n = cap - 4;
    memcpy(out, p + start, n);
    strcpy(out + n, cut ? "..." : "");
}

/* ---- names ---- */

static ax_value *lookup(frame *f, const char *name) {
    ax_value *v = f->env ? ax_env_get(f->env, name) : NULL;
    if (!v) v = ax_module_lookup(f->module, name);
    if (!v && f->module != f->in->builtins) v = ax_module_lookup(f->in->builtins, name);
    return v;
}

static void offer_module(ax_near_miss *nm, const ax_module *m) {
    for (int i = 0; i < m->n; i++) ax_near_miss_offer(nm, m->entries[i].name);
}

static ax_value *name_error(frame *f, const char *name) {
    ax_near_miss nm = {.target = name};
    for (const ax_env *e = f->env; e; e = e->parent)
        for (int i = 0; i < e->n; i++) ax_near_miss_offer(&nm, e->names[i]);
    offer_module(&nm, f->module);
    offer_module(&nm, f->in->builtins);
    if (nm.best)
        return ax_error(f->in->cx, AX_ERR_NAME, "name '%s' is not defined; did you mean '%s'?",
                        name, nm.best);
    return ax_error(f->in->cx, AX_ERR_NAME, "name '%s' is not defined", name);
}

/* Binds a name in the innermost scope (takes v). */
static int bind_name(frame *f, const char *name, ax_value *v) {
    int rc = f->env ? ax_env_set_take(f->env, name, v) : ax_module_set_take(f->module, name, v);
    if (rc < 0) ax_error_oom(f->in->cx);
    return rc;
}

/* ---- truth values ---- */

/* Like ax_value_truthy, but a traced condition's error quotes the expression. */
static bool truthy_at(frame *f, const ax_node *n, ax_value *v, bool *out) {
    /* a traced array of any size cannot choose (JAX's TracerBoolConversionError); a concrete
     * one of several elements is ambiguous (NumPy's ValueError, from ax_value_truthy) */
    if (v->kind == AX_V_ARRAY && (v->arr->size == 1 || v->arr->tracer)) {
        ax_array *c = ax_concrete_value(f->in->cx, v->arr);
        if (!c || !c->buf) {
            char text[160], type[64];
            span_text(f, n->span, text, sizeof text);
            ax_array_type_format(type, sizeof type, v->arr);
            ax_trace *t = ax_trace_top(f->in->cx);
            char where[96] = "";
            if (f->fn_name) snprintf(where, sizeof where, " in %s()", f->fn_name);
            ax_error(f->in->cx, AX_ERR_CONCRETIZATION,
                     "`%s` is a traced %s value under %s%s, so it cannot choose a branch; use "
                     "where(%s, if_true, if_false) or cond(pred, true_fn, false_fn) instead",
                     text[0] ? text : "the condition", type,
                     t && t->name ? t->name : "a transformation", where, text[0] ? text : "cond");
            return false;
        }
    }
    return ax_value_truthy(f->in, v, out);
}

/* ---- growable value lists ---- */

typedef struct vlist {
    ax_value **items;
    int n, cap;
} vlist;

static int vlist_push(vlist *l, ax_value *v) { /* takes v */
    if (l->n == l->cap) {
        int cap = !l->cap ? 8 : l->cap <= INT_MAX / 2 ? 2 * l->cap : INT_MAX;
        if (l->n == INT_MAX) cap = 0; /* a list holds at most INT_MAX values */
        ax_value **items = cap ? realloc(l->items, (size_t)cap * sizeof *items) : NULL;
        if (!items) {
            ax_value_release(v);
            return -1;
        }
        l->items = items;
        l->cap = cap;
    }
    l->items[l->n++] = v;
    return 0;
}

static void vlist_free(vlist *l) {
    for (int i = 0; i < l->n; i++) ax_value_release(l->items[i]);
    free(l->items);
    *l = (vlist){0};
}

/* Hands the items over to a new tuple or list. */
static ax_value *vlist_finish(frame *f, vlist *l, ax_value_kind kind) {
    ax_value *r =
        kind == AX_V_TUPLE ? ax_value_tuple(l->n, l->items) : ax_value_list(l->n, l->items);
    free(l->items);
    *l = (vlist){0};
    return oom(f, r);
}

/* Appends every item of an iterable (for `*x` in displays, calls and unpacking); Ctrl-C
 * stops it. */
static int push_all(frame *f, vlist *l, ax_value *seq) {
    ax_value_iter it;
    if (ax_value_iter_begin(f->in, seq, &it) < 0) return -1;
    int64_t len = ax_value_length(seq);
    if (len > INT_MAX - l->n) {
        char d[128];
        ax_value_describe(d, sizeof d, seq);
        ax_error(f->in->cx, AX_ERR_VALUE, "%lld values of %s are too many for a list",
                 (long long)len, d);
        return -1;
    }
    for (;;) {
        if ((it.i & 4095) == 4095 && ax_ctx_check_interrupt(f->in->cx)) return -1;
        ax_value *item;
        int r = ax_value_iter_next(f->in, &it, &item);
        if (r <= 0) return r;
        if (vlist_push(l, item) < 0) return ax_error_oom(f->in->cx), -1;
    }
}

/* ---- expressions ---- */

/* The items of a display (`*x` entries spread) appended to l; 0 or -1 (l freed). */
static int eval_items(frame *f, const ax_node *n, vlist *l) {
    for (int i = 0; i < n->items.n; i++) {
        const ax_node *e = n->items.items[i];
        bool star = e->kind == AX_N_STAR;
        ax_value *v = eval(f, star ? e->a : e);
        int rc = !v ? -1 : star ? push_all(f, l, v) : vlist_push(l, ax_value_retain(v));
        ax_value_release(v);
        if (rc < 0) {
            if (v && !ax_error_pending(f->in->cx)) ax_error_oom(f->in->cx);
            if (star) attach_span(f, e);
            vlist_free(l);
            return -1;
        }
    }
    return 0;
}

static ax_value *eval_sequence(frame *f, const ax_node *n, ax_value_kind kind) {
    vlist l = {0};
    if (eval_items(f, n, &l) < 0) return NULL;
    return vlist_finish(f, &l, kind);
}

/* A dict being built: its entries as given (dict_finish merges repeated keys). */
typedef struct dict_builder {
    vlist keys, vals;
} dict_builder;

static void dict_builder_free(dict_builder *b) {
    vlist_free(&b->keys);
    vlist_free(&b->vals);
}

/* Adds key: value (both taken). */
static int dict_put(frame *f, dict_builder *b, ax_value *k, ax_value *v) {
    if (vlist_push(&b->keys, k) < 0) {
        ax_value_release(v);
        return ax_error_oom(f->in->cx), -1;
    }
    if (vlist_push(&b->vals, v) < 0) {
        ax_value_release(b->keys.items[--b->keys.n]);
        return ax_error_oom(f->in->cx), -1;
    }
    return 0;
}

/* `**m` in a dict display: m's entries. */
static int dict_put_all(frame *f, dict_builder *b, const ax_value *m) {
    if (m->kind != AX_V_DICT) {
        char d[128];
        ax_value_describe(d, sizeof d, m);
        ax_error(f->in->cx, AX_ERR_TYPE, "'**' in a dict display needs a dict, not %s", d);
        return -1;
    }
    for (int i = 0; i < m->n; i++)
        if (dict_put(f, b, ax_value_retain(m->keys[i]), ax_value_retain(m->items[i])) < 0)
            return -1;
    return 0;
}

static ax_value *dict_finish(frame *f, dict_builder *b) {
    ax_value *r = oom(f, ax_value_dict_merged(b->keys.n, b->keys.items, b->vals.items));
    free(b->keys.items);
    free(b->vals.items);
    *b = (dict_builder){0};
    return r;
}

/* One `key: value` entry of a display or comprehension. */
static int dict_entry(frame *f, dict_builder *b, const ax_node *kn, const ax_node *vn) {
    ax_value *k = eval(f, kn);
    if (!k) return -1;
    if (!ax_dict_key_check(f->in, k)) {
        ax_value_release(k);
        attach_span(f, kn);
        return -1;
    }
    ax_value *v = eval(f, vn);
    if (!v) {
        ax_value_release(k);
        return -1;
    }
    return dict_put(f, b, k, v);
}

static ax_value *eval_dict(frame *f, const ax_node *n) {
    dict_builder b = {0};
    for (int i = 0; i < n->items.n; i++) {
        const ax_node *k = n->items.items[i];
        int rc;
        if (k->kind == AX_N_STAR) { /* **m */
            ax_value *m = eval(f, k->a);
            rc = m ? dict_put_all(f, &b, m) : -1;
            if (m && rc < 0) attach_span(f, k);
            ax_value_release(m);
        } else {
            rc = dict_entry(f, &b, k, n->items2.items[i]);
        }
        if (rc < 0) {
            dict_builder_free(&b);
            return NULL;
        }
    }
    return dict_finish(f, &b);
}

/* A set of the items of a list being built (which it takes), each checked as a dict key. */
static ax_value *set_finish(frame *f, vlist *l, const ax_node *where) {
    for (int i = 0; i < l->n; i++)
        if (!ax_dict_key_check(f->in, l->items[i])) {
            attach_span(f, where);
            vlist_free(l);
            return NULL;
        }
    ax_value *r = oom(f, ax_value_set(l->n, l->items));
    free(l->items);
    *l = (vlist){0};
    return r;
}

static ax_value *eval_set(frame *f, const ax_node *n) {
    vlist l = {0};
    return eval_items(f, n, &l) < 0 ? NULL : set_finish(f, &l, n);
}

static ax_value *eval_binop(frame *f, const ax_node *n) {
    ax_value *a = eval(f, n->a);
    if (!a) return NULL;
    ax_value *b = eval(f, n->b);
    ax_value *r = b ? ax_value_binop(f->in, (ax_binop)n->op, a, b) : NULL;
    ax_value_release(a);
    ax_value_release(b);
    return r;
}

static ax_value *eval_unary(frame *f, const ax_node *n) {
    ax_value *a = eval(f, n->a);
    if (!a) return NULL;
    ax_value *r = ax_value_unop(f->in, (ax_unop)n->op, a);
    ax_value_release(a);
    return r;
}

/* a < b < c means (a < b) and (b < c), with b evaluated once. */
static ax_value *eval_compare(frame *f, const ax_node *n) {
    ax_value *left = eval(f, n->a);
    for (int i = 0; left && i < n->items.n; i++) {
        ax_value *right = eval(f, n->items.items[i]);
        ax_value *r = right ? ax_value_compare(f->in, (ax_cmpop)n->ops[i], left, right) : NULL;
        ax_value_release(left);
        left = right;
        if (!r || i == n->items.n - 1) {
            ax_value_release(right);
            return r;
        }
        bool t;
        if (!truthy_at(f, n, r, &t) || !t) {
            ax_value_release(right);
            return ax_error_pending(f->in->cx) ? (ax_value_release(r), NULL) : r;
        }
        ax_value_release(r);
    }
    return left;
}

static ax_value *eval_and_or(frame *f, const ax_node *n, bool is_and) {
    ax_value *a = eval(f, n->a);
    bool t;
    if (!a) return NULL;
    if (!truthy_at(f, n->a, a, &t)) {
        ax_value_release(a);
        return NULL;
    }
    if (t != is_and) return a; /* `a or b` with a true, `a and b` with a false */
    ax_value_release(a);
    return eval(f, n->b);
}

static ax_value *eval_not(frame *f, const ax_node *n) {
    ax_value *a = eval(f, n->a);
    bool t;
    if (!a) return NULL;
    bool ok = truthy_at(f, n->a, a, &t);
    ax_value_release(a);
    return ok ? ax_value_bool(f->in, !t) : NULL;
}

static ax_value *eval_ifexp(frame *f, const ax_node *n) {
    ax_value *c = eval(f, n->a);
    bool t;
    if (!c) return NULL;
    bool ok = truthy_at(f, n->a, c, &t);
    ax_value_release(c);
    return ok ? eval(f, t ? n->b : n->c) : NULL;
}

/* ---- calls ---- */

typedef struct call_args {
    vlist pos;
    vlist kwvals;
    const char **kwnames;
    int kwcap;
    vlist held; /* dicts whose keys name keyword arguments: kept alive during the call */
} call_args;

static void call_args_free(call_args *c) {
    vlist_free(&c->pos);
    vlist_free(&c->kwvals);
    vlist_free(&c->held);
    free(c->kwnames);
}

static int add_keyword(frame *f, call_args *c, const char *name, ax_value *v) { /* takes v */
    for (int i = 0; i < c->kwvals.n; i++)
        if (strcmp(c->kwnames[i], name) == 0) {
            ax_value_release(v);
            ax_error(f->in->cx, AX_ERR_TYPE, "keyword argument '%s' is given twice", name);
            return -1;
        }
    if (c->kwvals.n == c->kwcap) {
        int cap = c->kwcap ? 2 * c->kwcap : 8;
        const char **names = realloc(c->kwnames, (size_t)cap * sizeof *names);
        if (!names) {
            ax_value_release(v);
            return ax_error_oom(f->in->cx), -1;
        }
        c->kwnames = names;
        c->kwcap = cap;
    }
    c->kwnames[c->kwvals.n] = name;
    if (vlist_push(&c->kwvals, v) < 0) return ax_error_oom(f->in->cx), -1;
    return 0;
}

static int add_keywords_from(frame *f, call_args *c, ax_value *d) {
    if (d->kind != AX_V_DICT) {
        char desc[128];
        ax_value_describe(desc, sizeof desc, d);
        ax_error(f->in->cx, AX_ERR_TYPE, "argument after ** must be a dict, not %s", desc);
        return -1;
    }
    if (vlist_push(&c->held, ax_value_retain(d)) < 0) return ax_error_oom(f->in->cx), -1;
    for (int i = 0; i < d->n; i++) {
        if (d->keys[i]->kind != AX_V_STR) {
            char desc[128];
            ax_value_describe(desc, sizeof desc, d->keys[i]);
            ax_error(f->in->cx, AX_ERR_TYPE, "keywords must be strings, not %s", desc);
            return -1;
        }
        if (add_keyword(f, c, d->keys[i]->str, ax_value_retain(d->items[i])) < 0) return -1;
    }
    return 0;
}

static int eval_call_args(frame *f, const ax_node *n, call_args *c) {
    for (int i = 0; i < n->items.n; i++) {
        const ax_node *e = n->items.items[i];
        bool star = e->kind == AX_N_STAR;
        ax_value *v = eval(f, star ? e->a : e);
        if (!v) return -1;
        int rc = star ? push_all(f, &c->pos, v) : vlist_push(&c->pos, ax_value_retain(v));
        ax_value_release(v);
        if (rc < 0) {
            if (!ax_error_pending(f->in->cx)) ax_error_oom(f->in->cx);
            attach_span(f, e);
            return -1;
        }
    }
    for (int i = 0; i < n->items2.n; i++) {
        const ax_node *e = n->items2.items[i];
        ax_value *v = eval(f, e);
        if (!v) return -1;
        const char *name = n->kwnames ? n->kwnames[i] : NULL;
        int rc;
        if (name) {
            rc = add_keyword(f, c, name, v);
        } else {
            rc = add_keywords_from(f, c, v);
            ax_value_release(v);
        }
        if (rc < 0) {
            attach_span(f, e);
            return -1;
        }
    }
    return 0;
}

static ax_value *eval_call(frame *f, const ax_node *n) {
    ax_value *callee = eval(f, n->a);
    if (!callee) return NULL;
    call_args c = {0};
    ax_value *r = NULL;
    if (eval_call_args(f, n, &c) == 0) {
        ax_args args = {.n = c.pos.n,
                        .pos = c.pos.items,
                        .nkw = c.kwvals.n,
                        .kwnames = c.kwnames,
                        .kwvals = c.kwvals.items};
        ax_interp *in = f->in;
        int site = in->nsites++;
        if (site < AX_CALL_SITES)
            in->sites[site] = (ax_call_site){.file = f->prog ? f->prog->prog->file : NULL,
                                             .line = n->span.line,
                                             .col = n->span.col};
        r = ax_call(in, callee, &args);
        in->nsites--;
    }
    call_args_free(&c);
    ax_value_release(callee);
    return r;
}

/* ---- indexing ---- */

static ax_value *eval_index_entry(frame *f, const ax_node *e) {
    if (e->kind == AX_N_ELLIPSIS) return oom(f, ax_value_ellipsis());
    if (e->kind != AX_N_SLICE) return eval(f, e);
    const ax_node *parts[3] = {e->a, e->b, e->c};
    ax_value *v[3] = {NULL, NULL, NULL};
    for (int i = 0; i < 3; i++) {
        v[i] = parts[i] ? eval(f, parts[i]) : ax_none();
        if (!v[i]) {
            for (int k = 0; k < i; k++) ax_value_release(v[k]);
            return NULL;
        }
    }
    return oom(f, ax_value_slice(v[0], v[1], v[2]));
}

static ax_value *eval_index_value(frame *f, const ax_node *n) {
    if (n->items.n == 1) return eval_index_entry(f, n->items.items[0]);
    vlist l = {0};
    for (int i = 0; i < n->items.n; i++) {
        ax_value *v = eval_index_entry(f, n->items.items[i]);
        if (!v || vlist_push(&l, v) < 0) {
            if (v) ax_error_oom(f->in->cx);
            vlist_free(&l);
            return NULL;
        }
    }
    return vlist_finish(f, &l, AX_V_TUPLE);
}

static ax_value *eval_index(frame *f, const ax_node *n) {
    ax_value *obj = eval(f, n->a);
    if (!obj) return NULL;
    ax_value *idx = eval_index_value(f, n);
    ax_value *r = idx ? ax_value_getitem(f->in, obj, idx) : NULL;
    ax_value_release(obj);
    ax_value_release(idx);
    return r;
}

static ax_value *eval_attr(frame *f, const ax_node *n) {
    ax_value *obj = eval(f, n->a);
    if (!obj) return NULL;
    ax_value *r = ax_getattr(f->in, obj, n->text);
    ax_value_release(obj);
    return r;
}

/* ---- closures ---- */

void ax_closure_free(ax_closure *c) {
    if (!c) return;
    if (c->cache_free) c->cache_free(c->cache);
    if (c->defaults) {
        int np = c->def->nparams;
        for (int i = 0; i < np; i++) ax_value_release(c->defaults[i]);
        free(c->defaults);
    }
    ax_env_free(c->captured);
    ax_program_ref_release(c->program);
    free(c->name);
    free(c);
}

static ax_value *make_closure(frame *f, const ax_node *def) {
    ax_closure *c = calloc(1, sizeof *c);
    if (!c) return ax_error_oom(f->in->cx);
    c->def = def;
    c->program = ax_program_ref_retain(f->prog);
    c->module = f->module;
    c->name = strdup(def->kind == AX_N_DEF && def->text ? def->text : "<lambda>");
    bool ok = c->name != NULL;
    if (ok && f->env) ok = (c->captured = ax_env_snapshot(f->env)) != NULL;
    for (int i = 0; ok && i < def->nparams; i++) {
        const ax_node *d = def->params[i].default_value;
        if (!d) continue;
        if (!c->defaults && !(c->defaults = calloc((size_t)def->nparams, sizeof *c->defaults))) {
            ok = false;
            break;
        }
        if (!(c->defaults[i] = eval(f, d))) {
            ax_closure_free(c);
            return NULL;
        }
    }
    ax_value *v = ok ? calloc(1, sizeof *v) : NULL;
    if (!v) {
        ax_closure_free(c);
        return ax_error_oom(f->in->cx);
    }
    v->refs = 1;
    v->kind = AX_V_FUNC;
    v->fn = c;
    return v;
}

static exec_status exec_def(frame *f, const ax_node *n) {
    vlist decorators = {0};
    for (int i = 0; i < n->items.n; i++) {
        ax_value *d = eval(f, n->items.items[i]);
        if (!d || vlist_push(&decorators, d) < 0) {
            if (d) ax_error_oom(f->in->cx);
            vlist_free(&decorators);
            return EX_ERROR;
        }
    }
    ax_value *fn = make_closure(f, n);
    /* Decorators apply bottom-up: the one nearest the def first. */
    for (int i = decorators.n - 1; fn && i >= 0; i--) {
        ax_value *g = ax_call1(f->in, decorators.items[i], fn);
        if (!g) attach_span(f, n->items.items[i]);
        ax_value_release(fn);
        fn = g;
    }
    vlist_free(&decorators);
    if (!fn) return EX_ERROR;
    return bind_name(f, n->text, fn) < 0 ? EX_ERROR : EX_OK;
}

/* ---- argument binding ---- */

static void missing_error(ax_interp *in, const char *fname, const char **names, int n,
                          bool kwonly) {
    char list[512] = "";
    size_t len = 0;
    for (int i = 0; i < n && len < sizeof list - 64; i++) {
        const char *sep = i == 0 ? "" : i == n - 1 ? " and " : ", ";
        len += (size_t)snprintf(list + len, sizeof list - len, "%s'%s'", sep, names[i]);
    }
    ax_error(in->cx, AX_ERR_TYPE, "%s() missing %d required %sargument%s %s", fname, n,
             kwonly ? "keyword-only " : "", n == 1 ? "" : "s", list);
}

static int find_param(const ax_node *def, const char *name) {
    for (int i = 0; i < def->nparams; i++) {
        const ax_param *p = &def->params[i];
        if (!p->star && !p->star2 && strcmp(p->name, name) == 0) return i;
    }
    return -1;
}

/* Python's binding of positional and keyword arguments to parameters. Fills slots[] with
 * new references (one per parameter). */
static int bind_args(ax_interp *in, const ax_closure *c, const ax_args *args, ax_value **slots) {
    const ax_node *def = c->def;
    int npos = 0, star = -1, star2 = -1, ndefault_pos = 0;
    for (int i = 0; i < def->nparams; i++) {
        const ax_param *p = &def->params[i];
        if (p->star)
            star = i;
        else if (p->star2)
            star2 = i;
        else if (!p->kwonly && star < 0) {
            npos++;
            if (p->default_value) ndefault_pos++;
        }
    }
    vlist extra = {0};
    for (int i = 0; i < args->n; i++) {
        if (i < npos) {
            slots[i] = ax_value_retain(args->pos[i]);
        } else if (star >= 0) {
            if (vlist_push(&extra, ax_value_retain(args->pos[i])) < 0) goto oom;
        } else {
            if (ndefault_pos)
                ax_error(in->cx, AX_ERR_TYPE,
                         "%s() takes from %d to %d positional arguments but %d were given", c->name,
                         npos - ndefault_pos, npos, args->n);
            else
                ax_error(in->cx, AX_ERR_TYPE, "%s() takes %d positional argument%s but %d %s given",
                         c->name, npos, npos == 1 ? "" : "s", args->n,
                         args->n == 1 ? "was" : "were");
            goto fail;
        }
    }
    /* the tuple takes the references (and releases them itself if it cannot be made) */
    if (star >= 0) slots[star] = ax_value_tuple(extra.n, extra.items);
    free(extra.items);
    extra = (vlist){0};
    if (star >= 0 && !slots[star]) goto oom;
    vlist kwkeys = {0}, kwvals = {0};
    for (int k = 0; k < args->nkw; k++) {
        const char *name = args->kwnames[k];
        int i = find_param(def, name);
        if (i >= 0 && slots[i]) {
            ax_error(in->cx, AX_ERR_TYPE, "%s() got multiple values for argument '%s'", c->name,
                     name);
            goto kwfail;
        }
        if (i >= 0) {
            slots[i] = ax_value_retain(args->kwvals[k]);
        } else if (star2 >= 0) {
            ax_value *key = ax_value_str(name);
            if (!key || vlist_push(&kwkeys, key) < 0 ||
                vlist_push(&kwvals, ax_value_retain(args->kwvals[k])) < 0) {
                ax_error_oom(in->cx);
                goto kwfail;
            }
        } else {
            ax_near_miss nm = {.target = name};
            for (int j = 0; j < def->nparams; j++) ax_near_miss_offer(&nm, def->params[j].name);
            if (nm.best)
                ax_error(in->cx, AX_ERR_TYPE,
                         "%s() got an unexpected keyword argument '%s'; did you mean '%s'?",
                         c->name, name, nm.best);
            else
                ax_error(in->cx, AX_ERR_TYPE, "%s() got an unexpected keyword argument '%s'",
                         c->name, name);
            goto kwfail;
        }
    }
    if (star2 >= 0) {
        slots[star2] = ax_value_dict(kwkeys.n, kwkeys.items, kwvals.items);
        free(kwkeys.items);
        free(kwvals.items);
        if (!slots[star2]) return ax_error_oom(in->cx), -1;
    } else {
        vlist_free(&kwkeys);
        vlist_free(&kwvals);
    }
    /* Defaults, then report everything still missing at once. */
    const char *missing[64];
    int nmissing = 0;
    bool kwonly_missing = false;
    for (int i = 0; i < def->nparams; i++) {
        if (slots[i] || i == star || i == star2) continue;
        if (c->defaults && c->defaults[i]) {
            slots[i] = ax_value_retain(c->defaults[i]);
        } else if (nmissing < 64) {
            bool kwonly = def->params[i].kwonly || (star >= 0 && i > star);
            if (nmissing == 0) kwonly_missing = kwonly;
            if (kwonly == kwonly_missing) missing[nmissing++] = def->params[i].name;
        }
    }
    if (nmissing) {
        missing_error(in, c->name, missing, nmissing, kwonly_missing);
        return -1;
    }
    return 0;
kwfail:
    vlist_free(&kwkeys);
    vlist_free(&kwvals);
    return -1;
oom:
    ax_error_oom(in->cx);
fail:
    vlist_free(&extra);
    return -1;
}

ax_value *ax_call_closure(ax_interp *in, ax_value *fnval, const ax_args *args) {
    ax_closure *c = fnval->fn;
    const ax_node *def = c->def;
    ax_env *env = ax_env_new(c->captured);
    ax_value **slots = calloc((size_t)(def->nparams ? def->nparams : 1), sizeof *slots);
    ax_value *result = NULL;
    if (!env || !slots) {
        ax_error_oom(in->cx);
        goto done;
    }
    /* A local function sees itself through the call, not through its snapshot: recursion
     * without a reference cycle. Top-level functions find themselves in their module. */
    if (c->captured && def->kind == AX_N_DEF &&
        ax_env_set_take(env, c->name, ax_value_retain(fnval)) < 0) {
        ax_error_oom(in->cx);
        goto done;
    }
    if (bind_args(in, c, args, slots) < 0) goto done;
    for (int i = 0; i < def->nparams; i++) {
        if (ax_env_set_take(env, def->params[i].name, slots[i]) < 0) {
            slots[i] = NULL;
            ax_error_oom(in->cx);
            goto done;
        }
        slots[i] = NULL;
    }
    frame f = {.in = in, .env = env, .module = c->module, .prog = c->program, .fn_name = c->name};
    const char *saved_file = in->current_file, *saved_source = in->current_source;
    in->current_file = c->program->prog->file;
    in->current_source = c->program->prog->source;
    if (def->kind == AX_N_LAMBDA) {
        result = eval(&f, def->a);
    } else {
        exec_status st = exec_block(&f, &def->body, &result);
        if (st == EX_OK && !result) result = ax_none();
        if (st != EX_OK) {
            ax_value_release(result);
            result = NULL;
        }
    }
    in->current_file = saved_file;
    in->current_source = saved_source;
done:
    if (slots)
        for (int i = 0; i < def->nparams; i++) ax_value_release(slots[i]);
    free(slots);
    ax_env_free(env);
    return result;
}

/* ---- comprehensions ---- */

static int assign_target(frame *f, const ax_node *target, ax_value *v);

/* Runs the `for` clauses from k on; at the innermost, appends the element to out (a dict
 * comprehension's entries to dict). */
static int comp_clause(frame *f, const ax_node *n, int k, vlist *out, dict_builder *dict) {
    if (k == n->items.n) {
        if (n->kind == AX_N_DICTCOMP) return dict_entry(f, dict, n->a, n->b);
        ax_value *v = eval(f, n->a);
        if (!v) return -1;
        if (vlist_push(out, v) < 0) return ax_error_oom(f->in->cx), -1;
        return 0;
    }
    const ax_node *clause = n->items.items[k];
    ax_value *seq = eval(f, clause->b);
    if (!seq) return -1;
    ax_value_iter it;
    int rc = ax_value_iter_begin(f->in, seq, &it);
    if (rc < 0) attach_span(f, clause->b);
    while (rc == 0) {
        ax_value *item;
        int r = ax_value_iter_next(f->in, &it, &item);
        if (r <= 0) {
            if (r < 0) attach_span(f, clause->b), rc = -1;
            break;
        }
        if (ax_ctx_check_interrupt(f->in->cx)) rc = -1;
        if (rc == 0) rc = assign_target(f, clause->a, item);
        ax_value_release(item);
        bool keep = true;
        for (int i = 0; rc == 0 && keep && i < clause->items.n; i++) {
            ax_value *c = eval(f, clause->items.items[i]);
            if (!c || !truthy_at(f, clause->items.items[i], c, &keep)) rc = -1;
            ax_value_release(c);
        }
        if (rc == 0 && keep) rc = comp_clause(f, n, k + 1, out, dict);
    }
    ax_value_release(seq);
    return rc;
}

/* A list, set or dict comprehension (a generator expression is made as a list). Its names
 * live in a scope of their own, as in Python 3. */
static ax_value *eval_comprehension(frame *f, const ax_node *n) {
    ax_env *env = ax_env_new(f->env);
    if (!env) return ax_error_oom(f->in->cx);
    frame sub = *f;
    sub.env = env;
    vlist out = {0};
    dict_builder dict = {0};
    ax_value *r = NULL;
    if (comp_clause(&sub, n, 0, &out, &dict) == 0)
        r = n->kind == AX_N_DICTCOMP  ? dict_finish(f, &dict)
            : n->kind == AX_N_SETCOMP ? set_finish(f, &out, n->a)
                                      : vlist_finish(f, &out, AX_V_LIST);
    vlist_free(&out);
    dict_builder_free(&dict);
    ax_env_free(env);
    return r;
}

/* ---- expression dispatch ---- */

static ax_value *eval_inner(frame *f, const ax_node *n) {
    ax_interp *in = f->in;
    switch (n->kind) {
    case AX_N_INT:
        return ax_value_int(in, n->ival);
    case AX_N_FLOAT:
        return ax_value_float(in, n->fval);
    case AX_N_STR:
        return oom(f, ax_value_str(n->text));
    case AX_N_NAME: {
        ax_value *v = lookup(f, n->text);
        return v ? ax_value_retain(v) : name_error(f, n->text);
    }
    case AX_N_TRUE:
        return ax_value_bool(in, true);
    case AX_N_FALSE:
        return ax_value_bool(in, false);
    case AX_N_NONE:
        return ax_none();
    case AX_N_ELLIPSIS:
        return oom(f, ax_value_ellipsis());
    case AX_N_TUPLE:
        return eval_sequence(f, n, AX_V_TUPLE);
    case AX_N_LIST:
        return eval_sequence(f, n, AX_V_LIST);
    case AX_N_DICT:
        return eval_dict(f, n);
    case AX_N_BINOP:
        return eval_binop(f, n);
    case AX_N_UNARY:
        return eval_unary(f, n);
    case AX_N_COMPARE:
        return eval_compare(f, n);
    case AX_N_AND:
        return eval_and_or(f, n, true);
    case AX_N_OR:
        return eval_and_or(f, n, false);
    case AX_N_NOT:
        return eval_not(f, n);
    case AX_N_IFEXP:
        return eval_ifexp(f, n);
    case AX_N_CALL:
        return eval_call(f, n);
    case AX_N_INDEX:
        return eval_index(f, n);
    case AX_N_ATTR:
        return eval_attr(f, n);
    case AX_N_LAMBDA:
        return make_closure(f, n);
    case AX_N_LISTCOMP:
    case AX_N_SETCOMP:
    case AX_N_DICTCOMP:
        return eval_comprehension(f, n);
    case AX_N_SET:
        return eval_set(f, n);
    case AX_N_STAR:
        return ax_error(in->cx, AX_ERR_SYNTAX,
                        "a starred expression is allowed only in calls, lists, tuples and "
                        "assignment targets");
    case AX_N_SLICE:
        return ax_error(in->cx, AX_ERR_SYNTAX, "a slice is allowed only inside brackets: x[a:b]");
    default:
        return ax_error(in->cx, AX_ERR_SYNTAX, "a %s statement is not an expression",
                        ax_node_kind_name(n->kind));
    }
}

static ax_value *eval(frame *f, const ax_node *n) {
    ax_value *v = eval_inner(f, n);
    if (!v) {
        if (!ax_error_pending(f->in->cx))
            ax_error(f->in->cx, AX_ERR_RUNTIME, "evaluation failed without an error");
        attach_span(f, n);
    }
    return v;
}

/* ---- assignment ---- */

/* "too many values to unpack (expected 3, got 4294967295)", with the axis an array unpacks. */
static int unpack_count_error(frame *f, const ax_value *v, int want, bool star, int64_t got) {
    char why[128] = "";
    if (v->kind == AX_V_ARRAY) { /* arrays unpack along their first axis: say so */
        char d[64];
        ax_value_describe(d, sizeof d, v);
        snprintf(why, sizeof why, "; an array unpacks along its first axis (%s gives %lld values)",
                 d, (long long)got);
    }
    if (got > want)
        ax_error(f->in->cx, AX_ERR_VALUE, "too many values to unpack (expected %d, got %lld)%s",
                 want, (long long)got, why);
    else
        ax_error(f->in->cx, AX_ERR_VALUE, "not enough values to unpack (expected %s%d, got %lld)%s",
                 star ? "at least " : "", want, (long long)got, why);
    return -1;
}

static int unpack_into(frame *f, const ax_node *target, ax_value *v) {
    const ax_nodelist *ts = &target->items;
    int star = -1;
    for (int i = 0; i < ts->n; i++)
        if (ts->items[i]->kind == AX_N_STAR) {
            if (star >= 0) {
                ax_error(f->in->cx, AX_ERR_SYNTAX, "two starred targets in one assignment");
                return -1;
            }
            star = i;
        }
    int want = star >= 0 ? ts->n - 1 : ts->n;
    bool iterable = v->kind == AX_V_TUPLE || v->kind == AX_V_LIST || v->kind == AX_V_DICT ||
                    v->kind == AX_V_STR || v->kind == AX_V_RANGE ||
                    (v->kind == AX_V_ARRAY && v->arr->ndim > 0) ||
                    (v->kind == AX_V_OBJECT && v->obj.type->getitem);
    if (!iterable) {
        char d[128];
        ax_value_describe(d, sizeof d, v);
        ax_error(f->in->cx, AX_ERR_TYPE, "cannot unpack %s into %d names", d, ts->n);
        return -1;
    }
    /* Count first: `a, b, c = ones((0xffffffff, 3))` must not make 4294967295 rows to say so. */
    int64_t count = ax_value_length(v);
    if (count >= 0 && (star < 0 ? count != want : count < want))
        return unpack_count_error(f, v, want, star >= 0, count);
    vlist items = {0};
    if (push_all(f, &items, v) < 0) {
        vlist_free(&items);
        return -1;
    }
    if (star < 0 ? items.n != want : items.n < want) { /* objects: counted as they were read */
        unpack_count_error(f, v, want, star >= 0, items.n);
        vlist_free(&items);
        return -1;
    }
    int rest = items.n - want, k = 0, rc = 0;
    for (int i = 0; rc == 0 && i < ts->n; i++) {
        const ax_node *t = ts->items[i];
        if (i == star) {
            ax_value *l = ax_value_list(rest, items.items + k);
            for (int j = 0; j < rest; j++) items.items[k + j] = NULL;
            k += rest;
            rc = l ? assign_target(f, t->a, l) : (ax_error_oom(f->in->cx), -1);
            ax_value_release(l);
        } else {
            rc = assign_target(f, t, items.items[k++]);
        }
    }
    vlist_free(&items);
    return rc;
}

/* `x[i] = v` and `x.a = v`: values are immutable; say what to write instead. */
static int immutable_error(frame *f, const ax_node *target, const ax_node *value) {
    char obj[96], idx[96], val[96];
    span_text(f, target->a->span, obj, sizeof obj);
    if (!obj[0]) snprintf(obj, sizeof obj, "x");
    if (target->kind == AX_N_ATTR) {
        ax_error(f->in->cx, AX_ERR_TYPE,
                 "cannot set attribute '%s' of %s: values are immutable; bind a new value instead",
                 target->text, obj);
        return -1;
    }
    ax_value *o = eval(f, target->a);
    if (!o) return -1;
    ax_value_kind kind = o->kind;
    ax_value_release(o);
    ax_span is = target->span;
    is.line = target->a->span.end_line;
    is.col = target->a->span.end_col;
    span_text(f, is, idx, sizeof idx);
    if (!idx[0]) snprintf(idx, sizeof idx, "[i]");
    val[0] = 0;
    if (value) span_text(f, value->span, val, sizeof val);
    if (!val[0]) snprintf(val, sizeof val, "v");
    if (kind == AX_V_ARRAY || kind == AX_V_OBJECT) {
        /* idx is "[...]": the .at form reuses it */
        ax_error(f->in->cx, AX_ERR_TYPE,
                 "arrays are immutable: use %s = %s.at%s.set(%s) to make an updated copy", obj, obj,
                 idx, val);
    } else {
        ax_error(f->in->cx, AX_ERR_TYPE,
                 "%ss are immutable: %s%s cannot be assigned; build a new %s instead",
                 ax_value_kind_name(kind), obj, idx, ax_value_kind_name(kind));
    }
    return -1;
}

/* Binds `target` to v (borrowed). */
static int assign_target(frame *f, const ax_node *target, ax_value *v) {
    int rc;
    switch (target->kind) {
    case AX_N_NAME:
        rc = bind_name(f, target->text, ax_value_retain(v));
        break;
    case AX_N_TUPLE:
    case AX_N_LIST:
        rc = unpack_into(f, target, v);
        break;
    case AX_N_INDEX:
    case AX_N_ATTR:
        rc = immutable_error(f, target, NULL);
        break;
    case AX_N_STAR:
        ax_error(f->in->cx, AX_ERR_SYNTAX, "a starred target must be inside a tuple or list");
        rc = -1;
        break;
    default:
        ax_error(f->in->cx, AX_ERR_SYNTAX, "cannot assign to %s", ax_node_kind_name(target->kind));
        rc = -1;
    }
    if (rc < 0) attach_span(f, target);
    return rc;
}

/* ---- statements ---- */

static exec_status exec_assign(frame *f, const ax_node *n) {
    if (n->a->kind == AX_N_INDEX || n->a->kind == AX_N_ATTR) {
        /* Evaluate the value first so that its own errors come first, as in Python. */
        ax_value *v = eval(f, n->b);
        if (!v) return EX_ERROR;
        ax_value_release(v);
        immutable_error(f, n->a, n->b);
        attach_span(f, n->a);
        return EX_ERROR;
    }
    ax_value *v = eval(f, n->b);
    if (!v) return EX_ERROR;
    int rc = assign_target(f, n->a, v);
    ax_value_release(v);
    return rc < 0 ? EX_ERROR : EX_OK;
}

static exec_status exec_augassign(frame *f, const ax_node *n) {
    if (n->a->kind != AX_N_NAME) {
        ax_value *v = eval(f, n->b);
        if (!v) return EX_ERROR;
        ax_value_release(v);
        immutable_error(f, n->a, n->b);
        attach_span(f, n->a);
        return EX_ERROR;
    }
    ax_value *cur = eval(f, n->a);
    if (!cur) return EX_ERROR;
    ax_value *rhs = eval(f, n->b);
    ax_value *r = rhs ? ax_value_binop(f->in, (ax_binop)n->op, cur, rhs) : NULL;
    ax_value_release(cur);
    ax_value_release(rhs);
    if (!r) return EX_ERROR;
    return bind_name(f, n->a->text, r) < 0 ? EX_ERROR : EX_OK;
}

static exec_status exec_if(frame *f, const ax_node *n, ax_value **out) {
    ax_value *c = eval(f, n->a);
    bool t;
    if (!c) return EX_ERROR;
    bool ok = truthy_at(f, n->a, c, &t);
    ax_value_release(c);
    if (!ok) {
        attach_span(f, n->a);
        return EX_ERROR;
    }
    if (t) return exec_block(f, &n->body, out);
    if (n->orelse.n) return exec_block(f, &n->orelse, out);
    return EX_OK; /* no else: the value is None */
}

static exec_status exec_loop_body(frame *f, const ax_node *n) {
    if (ax_ctx_check_interrupt(f->in->cx)) {
        attach_span(f, n);
        return EX_ERROR;
    }
    return exec_block(f, &n->body, NULL);
}

static exec_status exec_for(frame *f, const ax_node *n) {
    ax_value *seq = eval(f, n->b);
    if (!seq) return EX_ERROR;
    ax_value_iter it;
    exec_status st = EX_OK;
    if (ax_value_iter_begin(f->in, seq, &it) < 0) {
        attach_span(f, n->b);
        st = EX_ERROR;
    }
    while (st != EX_ERROR) {
        ax_value *item;
        int r = ax_value_iter_next(f->in, &it, &item);
        if (r < 0) attach_span(f, n->b);
        if (r <= 0) {
            st = r < 0 ? EX_ERROR : EX_OK;
            break;
        }
        int rc = assign_target(f, n->a, item);
        ax_value_release(item);
        st = rc < 0 ? EX_ERROR : exec_loop_body(f, n);
        if (st == EX_BREAK) {
            st = EX_OK;
            break;
        }
    }
    ax_value_release(seq);
    return st == EX_CONTINUE ? EX_OK : st;
}

static exec_status exec_while(frame *f, const ax_node *n) {
    for (;;) {
        ax_value *c = eval(f, n->a);
        bool t;
        if (!c) return EX_ERROR;
        bool ok = truthy_at(f, n->a, c, &t);
        ax_value_release(c);
        if (!ok) {
            attach_span(f, n->a);
            return EX_ERROR;
        }
        if (!t) return EX_OK;
        exec_status st = exec_loop_body(f, n);
        if (st == EX_BREAK) return EX_OK;
        if (st == EX_ERROR) return st;
    }
}

static exec_status exec_assert(frame *f, const ax_node *n) {
    ax_value *c = eval(f, n->a);
    bool t;
    if (!c) return EX_ERROR;
    bool ok = truthy_at(f, n->a, c, &t);
    ax_value_release(c);
    if (!ok) return EX_ERROR;
    if (t) return EX_OK;
    if (n->b) {
        ax_value *m = eval(f, n->b);
        if (!m) return EX_ERROR;
        ax_strbuf s;
        ax_strbuf_init(&s);
        ax_value_format(&s, m);
        if (s.failed) ax_error_oom(f->in->cx);
        ax_error(f->in->cx, AX_ERR_ASSERTION, "%s", s.data ? s.data : "");
        ax_strbuf_free(&s);
        ax_value_release(m);
    } else {
        char text[256];
        span_text(f, n->a->span, text, sizeof text);
        ax_error(f->in->cx, AX_ERR_ASSERTION, "assertion failed: %s", text);
    }
    return EX_ERROR;
}

static const char *last_component(const char *dotted) {
    const char *dot = strrchr(dotted, '.');
    return dot ? dot + 1 : dotted;
}

/* The package a dotted library name starts with ("jax" for jax.scipy.special), written to
 * out, when that package is an offered library; NULL otherwise. */
static const char *lib_package(ax_interp *in, const char *dotted, char *out, size_t cap) {
    size_t len = strcspn(dotted, ".");
    if (!dotted[len] || len >= cap) return NULL;
    memcpy(out, dotted, len);
    out[len] = 0;
    return ax_interp_find_lib(in, out) ? out : NULL;
}

/* `import a.b as c` binds c to a.b. Without `as`, as in Python, `import jax.numpy` binds the
 * package jax when it is a library; a module file in a directory binds its own name
 * (`import modules.evalmod` binds evalmod). */
static exec_status exec_import(frame *f, const ax_node *n) {
    ax_value *v = ax_interp_import_value(f->in, n->text);
    if (!v) return EX_ERROR;
    char package[128];
    const char *top = n->text2 ? NULL : lib_package(f->in, n->text, package, sizeof package);
    if (top) {
        ax_value_release(v);
        if (!(v = ax_interp_import_value(f->in, top))) return EX_ERROR;
    }
    const char *name = n->text2 ? n->text2 : top ? top : last_component(n->text);
    return bind_name(f, name, v) < 0 ? EX_ERROR : EX_OK;
}

static exec_status exec_from_import(frame *f, const ax_node *n) {
    ax_value *mv = ax_interp_import_value(f->in, n->text);
    if (!mv) return EX_ERROR;
    exec_status st = EX_OK;
    for (int i = 0; st == EX_OK && i < n->nnames; i++) {
        const char *name = n->kwnames[i];
        if (strcmp(name, "*") == 0) {
            if (mv->kind != AX_V_MODULE) continue;
            const ax_module *m = mv->module;
            for (int k = 0; st == EX_OK && k < m->n; k++)
                if (m->entries[k].name[0] != '_' &&
                    bind_name(f, m->entries[k].name, ax_value_retain(m->entries[k].val)) < 0)
                    st = EX_ERROR;
            continue;
        }
        ax_value *v = ax_getattr(f->in, mv, name);
        if (!v) {
            /* Say it as Python does, keeping the attribute lookup's hint. */
            char hint[160] = "";
            const char *dym = strstr(f->in->cx->err.message, "; did you mean");
            if (dym) snprintf(hint, sizeof hint, "%s", dym);
            ax_error_clear(f->in->cx);
            /* as in Python, `from pkg import sub` may name the submodule pkg.sub */
            char sub[512];
            snprintf(sub, sizeof sub, "%s.%s", n->text, name);
            if (!(v = ax_interp_import_value(f->in, sub))) {
                bool missing = f->in->cx->err.kind == AX_ERR_IMPORT &&
                               !strncmp(f->in->cx->err.message, "no module named", 15);
                if (!missing) { /* the submodule exists and failed: say why */
                    st = EX_ERROR;
                    break;
                }
                ax_error_clear(f->in->cx);
                ax_error(f->in->cx, AX_ERR_IMPORT, "cannot import name '%s' from '%s'%s", name,
                         n->text, hint);
                st = EX_ERROR;
                break;
            }
        }
        const char *alias = n->aliases && n->aliases[i] ? n->aliases[i] : name;
        if (bind_name(f, alias, v) < 0) st = EX_ERROR;
    }
    ax_value_release(mv);
    return st;
}

static exec_status exec_stmt_inner(frame *f, const ax_node *n, ax_value **out) {
    switch (n->kind) {
    case AX_N_EXPR:
    case AX_N_RETURN: {
        /* `return` is only ever in tail position (ax_check_program), so it is the value. */
        ax_value *v = n->a ? eval(f, n->a) : ax_none();
        if (!v) return EX_ERROR;
        if (out)
            *out = v;
        else
            ax_value_release(v);
        return EX_OK;
    }
    case AX_N_ASSIGN:
        return exec_assign(f, n);
    case AX_N_AUGASSIGN:
        return exec_augassign(f, n);
    case AX_N_DEF:
        return exec_def(f, n);
    case AX_N_IF:
        return exec_if(f, n, out);
    case AX_N_FOR:
        return exec_for(f, n);
    case AX_N_WHILE:
        return exec_while(f, n);
    case AX_N_IMPORT:
        return exec_import(f, n);
    case AX_N_FROMIMPORT:
        return exec_from_import(f, n);
    case AX_N_PASS:
        return EX_OK;
    case AX_N_BREAK:
        return EX_BREAK;
    case AX_N_CONTINUE:
        return EX_CONTINUE;
    case AX_N_ASSERT:
        return exec_assert(f, n);
    default: {
        /* an expression node used as a statement */
        ax_value *v = eval(f, n);
        if (!v) return EX_ERROR;
        if (out)
            *out = v;
        else
            ax_value_release(v);
        return EX_OK;
    }
    }
}

static exec_status exec_stmt(frame *f, const ax_node *n, ax_value **out) {
    exec_status st = exec_stmt_inner(f, n, out);
    if (st == EX_ERROR) {
        if (!ax_error_pending(f->in->cx))
            ax_error(f->in->cx, AX_ERR_RUNTIME, "a %s statement failed without an error",
                     ax_node_kind_name(n->kind));
        attach_span(f, n);
    }
    return st;
}

/* Runs a block; its value (when `out` is given) is its last statement's, or NULL for None. */
static exec_status exec_block(frame *f, const ax_nodelist *body, ax_value **out) {
    if (out) *out = NULL;
    for (int i = 0; i < body->n; i++) {
        bool last = i == body->n - 1;
        ax_value *v = NULL;
        exec_status st = exec_stmt(f, body->items[i], out && last ? &v : NULL);
        if (st != EX_OK) {
            ax_value_release(v);
            return st;
        }
        if (out && last) *out = v;
    }
    return EX_OK;
}

/* ---- programs ---- */

int ax_eval_program(ax_interp *in, struct ax_program_ref *prog, ax_module *module, FILE *echo) {
    frame f = {.in = in, .env = NULL, .module = module, .prog = prog};
    const char *saved_file = in->current_file, *saved_source = in->current_source;
    in->current_file = prog->prog->file;
    in->current_source = prog->prog->source;
    int rc = 0;
    const ax_nodelist *stmts = &prog->prog->stmts;
    for (int i = 0; i < stmts->n && rc == 0; i++) {
        const ax_node *n = stmts->items[i];
        bool show = echo && n->kind == AX_N_EXPR;
        ax_value *v = NULL;
        if (exec_stmt(&f, n, show ? &v : NULL) != EX_OK) {
            rc = -1;
        } else if (v && v->kind != AX_V_NONE) {
            ax_strbuf s;
            ax_strbuf_init(&s);
            ax_value_format_repl(&s, v, in->cx);
            ax_strbuf_append(&s, "\n");
            if (s.failed)
                rc = -1, ax_error_oom(in->cx);
            else if (!ax_write_checked(in, echo, s.data, s.len))
                rc = -1;
            fflush(echo);
            ax_strbuf_free(&s);
        }
        ax_value_release(v);
    }
    in->current_file = saved_file;
    in->current_source = saved_source;
    return rc;
}

ax_value *ax_eval_expr_in_module(ax_interp *in, struct ax_program_ref *prog, const ax_node *expr,
                                 ax_module *module) {
    frame f = {.in = in, .env = NULL, .module = module, .prog = prog};
    const char *saved_file = in->current_file, *saved_source = in->current_source;
    in->current_file = prog->prog->file;
    in->current_source = prog->prog->source;
    ax_value *v = eval(&f, expr);
    in->current_file = saved_file;
    in->current_source = saved_source;
    return v;
}

/* ---- static checks ---- */

typedef struct check_ctx {
    ax_interp *in;
    const ax_program *prog;
} check_ctx;

static int check_fail(const check_ctx *c, const ax_node *n, const char *msg) {
    ax_error(c->in->cx, AX_ERR_SYNTAX, "%s", msg);
    ax_error_set_span(c->in->cx, n->span, c->prog->file, c->prog->source);
    return -1;
}

static int check_block(const check_ctx *c, const ax_nodelist *b, bool in_def, bool tail,
                       bool in_loop) {
    for (int i = 0; i < b->n; i++) {
        const ax_node *n = b->items[i];
        bool tail_here = tail && i == b->n - 1;
        switch (n->kind) {
        case AX_N_RETURN:
            if (!in_def) return check_fail(c, n, "'return' outside a function");
            if (!tail_here)
                return check_fail(c, n,
                                  "'return' is allowed only as the last statement of a function "
                                  "(a function's value is its last expression; use if/else "
                                  "branches as values)");
            break;
        case AX_N_BREAK:
        case AX_N_CONTINUE:
            if (!in_loop)
                return check_fail(c, n,
                                  n->kind == AX_N_BREAK ? "'break' outside a loop"
                                                        : "'continue' outside a loop");
            break;
        case AX_N_IF:
            if (check_block(c, &n->body, in_def, tail_here, in_loop) < 0 ||
                check_block(c, &n->orelse, in_def, tail_here, in_loop) < 0)
                return -1;
            break;
        case AX_N_FOR:
        case AX_N_WHILE:
            if (check_block(c, &n->body, in_def, false, true) < 0) return -1;
            break;
        case AX_N_DEF:
            if (check_block(c, &n->body, true, true, false) < 0) return -1;
            break;
        default:
            break;
        }
    }
    return 0;
}

int ax_check_program(ax_interp *in, const ax_program *prog) {
    check_ctx c = {.in = in, .prog = prog};
    return check_block(&c, &prog->stmts, false, false, false);
}

/* jit as a builtin (see jit_builtin.h): per argument signature, trace once, simplify, and
 * build a native program (compiler/jit.c); later calls with the same signature run it.
 *
 * Under an enclosing transformation (grad(jit(f)), vmap(jit(f)), make_jaxpr) the arguments are
 * tracers: the call is then one `call` equation (compiler/call.h) whose body is the cached IR,
 * so the outer transformation transforms the body as a whole and each part it makes is
 * compiled too. */
#include "jit_builtin.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../compiler/call.h"
#include "../compiler/collectives.h"
#include "../compiler/jit.h"
#include "../compiler/simplify.h"
#include "../compiler/trace.h"
#include "aot.h"
#include "eval_shape.h"
#include "flat_call.h"
#include "pytree.h"
#include "transforms.h"

typedef struct jit_entry {
    unsigned char *key; /* the call signature, compact (see signature_key) */
    size_t keylen;
    char *types;   /* the traced leaves' types, ";"-separated (for the log) */
    char *statics; /* the static arguments' values */
    ax_ir *ir;     /* its native program is built on the first concrete call (compiler/call.h) */
    ax_value *out_def;
    int nmain;
} jit_entry;

static void entries_free(jit_entry **entries, int n) {
    for (int i = 0; i < n; i++) {
        free(entries[i]->key);
        free(entries[i]->types);
        free(entries[i]->statics);
        ax_ir_release(entries[i]->ir);
        ax_value_release(entries[i]->out_def);
        free(entries[i]);
    }
    free(entries);
}

/* The traces of one function under one static configuration. Every jit of a function that
 * the language made (a closure) shares them, as JAX keys its cache on the function: jit(f)(4.)
 * and a later jit(f)(5.) run one trace. They are kept on the function (ax_closure.cache) and
 * freed with it; a jit of anything else keeps its own. */
typedef struct jit_traces {
    int refs;
    char *config;        /* the static configuration they were traced under */
    jit_entry **entries; /* each allocated on its own: a call keeps its entry while a nested
                            call of the same function may add others */
    int nentries, cap;
    struct jit_traces *next; /* the same function's other configurations */
} jit_traces;

static void traces_release(jit_traces *t) {
    if (!t || --t->refs > 0) return;
    entries_free(t->entries, t->nentries);
    free(t->config);
    free(t);
}

static void closure_cache_free(void *cache) {
    for (jit_traces *t = cache, *next; t; t = next) {
        next = t->next;
        traces_release(t);
    }
}

/* The traces of fn under `config` (a new reference): shared through the function when it is
 * a closure, new otherwise. NULL + error on out of memory. */
static jit_traces *traces_for(ax_interp *in, ax_value *fn, const char *config) {
    ax_closure *c = fn->kind == AX_V_FUNC ? fn->fn : NULL;
    if (c && c->cache_free && c->cache_free != closure_cache_free) c = NULL; /* another's */
    for (jit_traces *t = c ? c->cache : NULL; t; t = t->next)
        if (strcmp(t->config, config) == 0) return t->refs++, t;
    jit_traces *t = calloc(1, sizeof *t);
    if (!t || !(t->config = strdup(config))) {
        free(t);
        return ax_error_oom(in->cx);
    }
    t->refs = 1;
    if (c) { /* the function holds a reference too */
        t->refs++;
        t->next = c->cache;
        c->cache = t;
        c->cache_free = closure_cache_free;
    }
    return t;
}

/* A jit-compiled function: what it calls, which arguments are static, and its traces. */
typedef struct jit_state {
    ax_value *fn;
    int nstatic;
    int *statics; /* static_argnums, and the positions of static_argnames */
    int nnames;
    char **static_names; /* static_argnames (static also when passed by keyword) */
    jit_traces *tr;
} jit_state;

static void jit_state_free(void *p) {
    jit_state *s = p;
    ax_value_release(s->fn);
    traces_release(s->tr);
    for (int i = 0; i < s->nnames; i++) free(s->static_names[i]);
    free(s->static_names);
    free(s->statics);
    free(s);
}
/* The function it compiles, for the walk over reference cycles (lang/cycles.h). */
static void jit_state_children(void *p, void (*visit)(void *arg, ax_value *child), void *arg) {
    visit(arg, ((jit_state *)p)->fn);
}
/* A jitted function's attributes are its ahead-of-time methods (stdlib/aot.h). */
static const ax_object_type jit_state_type = {.name = "jit",
                                              .free = jit_state_free,
                                              .children = jit_state_children,
                                              .getattr = ax_aot_jit_getattr,
                                              .each_attr = ax_aot_jit_each_attr,
                                              .function_attrs = true};

static bool in_argnums(const int *statics, int nstatic, int pos) {
    for (int i = 0; i < nstatic; i++)
        if (statics[i] == pos) return true;
    return false;
}

static bool is_static(const jit_state *s, int pos) {
    return in_argnums(s->statics, s->nstatic, pos);
}

static const char *fn_name(const ax_value *fn) {
    if (fn->kind == AX_V_FUNC && fn->fn->name) return fn->fn->name;
    if (fn->kind == AX_V_BUILTIN) return fn->builtin->name;
    return "<function>";
}

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* The text of a key, or NULL when building it failed (a truncated key could match another
 * call's). */
static char *key_text(ax_strbuf *k) {
    if (k->failed) {
        ax_strbuf_free(k);
        return NULL;
    }
    return k->data ? k->data : strdup("");
}

/* The signature of a call: every traced leaf's type (and the trees' structure), and the value
 * of every static argument. */
static char *types_key(const flat_call *fc) {
    ax_strbuf k;
    ax_strbuf_init(&k);
    for (int i = 0; i < fc->nflat; i++) {
        char t[128];
        ax_array_type_format(t, sizeof t, fc->flat[i]);
        ax_strbuf_appendf(&k, "%s%s;", t, fc->flat[i]->weak ? "~" : "");
    }
    ax_strbuf_appendf(&k, "|");
    for (int k2 = 0; k2 < fc->ntraced; k2++) ax_value_format(&k, fc->defs[k2]);
    return key_text(&k);
}

static char *statics_key(const jit_state *s, const ax_args *a) {
    ax_strbuf k;
    ax_strbuf_init(&k);
    for (int i = 0; i < a->n; i++) {
        if (!is_static(s, i)) continue;
        ax_strbuf_appendf(&k, "%sargument %d = ", k.len ? ", " : "", i);
        ax_value_format(&k, a->pos[i]);
    }
    for (int i = 0; i < a->nkw; i++) {
        ax_strbuf_appendf(&k, "%s%s = ", k.len ? ", " : "", a->kwnames[i]);
        ax_value_format(&k, a->kwvals[i]);
    }
    return key_text(&k);
}

/* Appends an exact encoding of a static argument: two values encode alike only when they are
 * equal (arrays by dtype, shape and every element, exactly; functions and objects by identity,
 * as JAX hashes them). Their printed forms cannot key the cache: print elides the middle of
 * long arrays and the depths of nested containers, so different values would share a trace. */
static int encode_static(ax_interp *in, const char *what, ax_strbuf *k, const ax_value *v,
                         int depth) {
    if (depth >= AX_MAX_VALUE_DEPTH) {
        ax_error(in->cx, AX_ERR_RECURSION, "%s: a static argument nested more than %d levels deep",
                 what, AX_MAX_VALUE_DEPTH);
        return -1;
    }
    switch (v->kind) {
    case AX_V_NONE:
    case AX_V_ELLIPSIS:
        ax_strbuf_appendf(k, "K%d", (int)v->kind);
        return 0;
    case AX_V_STR:
        ax_strbuf_appendf(k, "S%zu:", strlen(v->str));
        ax_strbuf_append(k, v->str);
        return 0;
    case AX_V_DTYPE:
        ax_strbuf_appendf(k, "D%d", (int)v->dtype);
        return 0;
    case AX_V_ARRAY: {
        ax_array *c = ax_concrete_value(in->cx, v->arr);
        if (!c || !c->buf) {
            ax_error(in->cx, AX_ERR_CONCRETIZATION,
                     "%s: a static argument must be a concrete value, not one traced by an "
                     "enclosing jit or vmap",
                     what);
            return -1;
        }
        char type[160];
        ax_array_type_format(type, sizeof type, c);
        ax_strbuf_appendf(k, "A%s%s:", type, c->weak ? "~" : "");
        bool fl = ax_dtype_is_float(c->dtype);
        for (int64_t i = 0; i < c->size; i++) {
            if (fl)
                ax_strbuf_appendf(k, "%a,", ax_array_get_f64(c, i));
            else
                ax_strbuf_appendf(k, "%lld,", (long long)ax_array_get_i64(c, i));
        }
        return 0;
    }
    case AX_V_TUPLE:
    case AX_V_LIST:
    case AX_V_DICT:
    case AX_V_SLICE:
        ax_strbuf_appendf(k, "C%d,%d(", (int)v->kind, v->n);
        for (int i = 0; i < v->n; i++) {
            if (v->kind == AX_V_DICT && encode_static(in, what, k, v->keys[i], depth + 1))
                return -1;
            if (encode_static(in, what, k, v->items[i], depth + 1)) return -1;
        }
        ax_strbuf_append(k, ")");
        return 0;
    case AX_V_BUILTIN: /* a builtin value is made per use: its function and data identify it */
        ax_strbuf_appendf(k, "B%p,%p", (void *)v->builtin->fn, (void *)v->builtin->data);
        return 0;
    default: /* functions, modules, objects: by identity */
        ax_strbuf_appendf(k, "K%d,%p", (int)v->kind, (const void *)v);
        return 0;
    }
}

char *ax_statics_exact_key(ax_interp *in, const char *what, const int *statics, int nstatic,
                           const ax_args *a) {
    ax_strbuf k;
    ax_strbuf_init(&k);
    int rc = 0;
    for (int i = 0; i < a->n && !rc; i++) {
        if (!in_argnums(statics, nstatic, i)) continue;
        ax_strbuf_appendf(&k, "|%d=", i);
        rc = encode_static(in, what, &k, a->pos[i], 0);
    }
    for (int i = 0; i < a->nkw && !rc; i++) {
        ax_strbuf_appendf(&k, "|%s=", a->kwnames[i]);
        rc = encode_static(in, what, &k, a->kwvals[i], 0);
    }
    if (!rc && !k.data && !(k.data = strdup(""))) ax_error_oom(in->cx);
    if (rc) ax_strbuf_free(&k);
    return rc ? NULL : k.data;
}

/* Why a call missed the cache, for AX_LOG_COMPILES: what differs from the last entry. */
static void miss_reason(const jit_state *s, const char *types, const char *statics, char *out,
                        size_t n) {
    if (!s->tr->nentries) {
        snprintf(out, n, "first call");
        return;
    }
    const jit_entry *last = s->tr->entries[s->tr->nentries - 1];
    if (strcmp(last->statics, statics)) {
        snprintf(out, n, "new static argument: %s (was %s)", statics, last->statics);
        return;
    }
    /* compare leaf by leaf: same dtype prefix means the shape changed */
    const char *a = types, *b = last->types;
    while (*a && *b) {
        size_t la = strcspn(a, ";|"), lb = strcspn(b, ";|");
        if (la != lb || strncmp(a, b, la)) {
            size_t da = strcspn(a, "["), db = strcspn(b, "[");
            bool same_dtype = da == db && !strncmp(a, b, da);
            snprintf(out, n, "new %s: %.*s (was %.*s)", same_dtype ? "shape" : "dtype", (int)la, a,
                     (int)lb, b);
            return;
        }
        a += la + (a[la] != 0);
        b += lb + (b[lb] != 0);
    }
    snprintf(out, n, "new argument structure");
}

/* The signature as bytes, built without formatting anything (it is computed on every call):
 * each leaf's dtype, weak flag and shape, each argument tree's structure hash, and the static
 * arguments' exact encodings (only when there are some), and whether a pmap is around the
 * call (a pmap in fn is then a nested one, traced otherwise). malloc'd; NULL with an error. */
static unsigned char *signature_key(ax_interp *in, const jit_state *s, const ax_args *a,
                                    const flat_call *fc, size_t *len) {
    size_t cap = 64 + (size_t)fc->nflat * (3 + 8 * AX_MAX_RANK) + (size_t)fc->ntraced * 8;
    unsigned char *k = malloc(cap), *p = k;
    if (!k) return ax_error_oom(in->cx);
    *p++ = ax_axis_pmap_slices(in->cx) != 0;
    for (int i = 0; i < fc->nflat; i++) {
        const ax_array *x = fc->flat[i];
        *p++ = (unsigned char)x->dtype;
        *p++ = (unsigned char)x->weak;
        *p++ = (unsigned char)x->ndim;
        memcpy(p, x->shape, (size_t)x->ndim * sizeof *x->shape);
        p += (size_t)x->ndim * sizeof *x->shape;
    }
    for (int t = 0; t < fc->ntraced; t++) {
        uint64_t h = ax_treedef_hash(fc->defs[t]);
        memcpy(p, &h, sizeof h);
        p += sizeof h;
    }
    *len = (size_t)(p - k);
    if (s->nstatic || a->nkw) {
        char *st = ax_statics_exact_key(in, "jit", s->statics, s->nstatic, a);
        size_t n = st ? strlen(st) : 0;
        unsigned char *grown = st ? realloc(k, *len + n) : NULL;
        if (!grown) {
            if (st) ax_error_oom(in->cx);
            free(st);
            free(k);
            return NULL;
        }
        k = grown;
        memcpy(k + *len, st, n);
        *len += n;
        free(st);
    }
    return k;
}

static jit_entry *find_entry(jit_state *s, const unsigned char *key, size_t len) {
    for (int i = s->tr->nentries - 1; i >= 0; i--)
        if (s->tr->entries[i]->keylen == len && !memcmp(s->tr->entries[i]->key, key, len))
            return s->tr->entries[i];
    return NULL;
}

/* Traces and simplifies fn for this signature and adds the entry (taking the key). */
static jit_entry *add_entry(ax_interp *in, jit_state *s, const ax_args *a, flat_call *fc,
                            unsigned char **key, size_t keylen) {
    bool log = ax_jit_logging(in->cx);
    char why[512] = "";
    char *types = types_key(fc), *statics = statics_key(s, a);
    if (!types || !statics) {
        free(types), free(statics);
        return ax_error_oom(in->cx);
    }
    if (log) miss_reason(s, types, statics, why, sizeof why);
    double t0 = now_ms();
    ax_aval *avals = calloc((size_t)fc->nflat + 1, sizeof *avals);
    if (!avals) {
        free(types), free(statics);
        return ax_error_oom(in->cx);
    }
    for (int i = 0; i < fc->nflat; i++) ax_aval_of(&avals[i], fc->flat[i]);
    int nout = 0;
    ax_ir *traced = ax_trace_to_ir(in->cx, ax_flat_call_fn, fc, fc->nflat, avals, &nout);
    free(avals);
    ax_ir *ir = traced ? ax_simplify(in->cx, traced) : NULL;
    ax_ir_release(traced);
    if (!ir || ax_ir_set_name(ir, fn_name(s->fn))) {
        if (ir) ax_error_oom(in->cx);
        ax_ir_release(ir);
        free(types), free(statics);
        return NULL;
    }
    jit_entry *e = malloc(sizeof *e);
    if (e && s->tr->nentries == s->tr->cap) {
        int cap = s->tr->cap ? 2 * s->tr->cap : 4;
        jit_entry **grown = realloc(s->tr->entries, (size_t)cap * sizeof *grown);
        if (grown) {
            s->tr->entries = grown;
            s->tr->cap = cap;
        }
    }
    if (!e || s->tr->nentries == s->tr->cap) {
        free(e);
        ax_ir_release(ir);
        free(types), free(statics);
        return ax_error_oom(in->cx);
    }
    if (log)
        fprintf(stderr, "ax: jit: traced %s in %.2f ms (%s): %d equations\n", fn_name(s->fn),
                now_ms() - t0, why, ir->neqns);
    s->tr->entries[s->tr->nentries++] = e;
    *e = (jit_entry){.key = *key,
                     .keylen = keylen,
                     .types = types,
                     .statics = statics,
                     .ir = ir,
                     .out_def = ax_value_retain(fc->out_def),
                     .nmain = fc->nmain};
    *key = NULL;
    return e;
}

/* Whether every input (and every constant the trace captured) holds values: only then can
 * native code run; otherwise an outer transformation must see the equations. */
static bool all_concrete(const flat_call *fc, const ax_ir *ir) {
    for (int i = 0; i < fc->nflat; i++)
        if (fc->flat[i]->tracer) return false;
    for (int i = 0; i < ir->nconsts; i++)
        if (ir->consts[i]->tracer) return false;
    return true;
}

static ax_jit_program *program_of(ax_interp *in, jit_entry *e) {
    return ax_call_program(in->cx, e->ir);
}

/* A call under an outer transformation: one call equation. Constants the trace captured that
 * are tracers (values the function closes over, traced by the outer transformation) become
 * leading operands of the equation. */
static int bind_call(ax_ctx *cx, jit_entry *e, ax_array **flat, int nflat, ax_array **outs) {
    const ax_ir *ir = e->ir;
    bool *lift = calloc((size_t)ir->nconsts + 1, sizeof *lift);
    ax_array **args = calloc((size_t)ir->nconsts + (size_t)nflat + 1, sizeof *args);
    if (!lift || !args) {
        free(lift), free(args);
        return ax_error_oom(cx), -1;
    }
    int n = 0;
    for (int i = 0; i < ir->nconsts; i++)
        if ((lift[i] = ir->consts[i]->tracer != NULL)) args[n++] = ir->consts[i];
    ax_ir *body = n ? ax_ir_lift_consts(ir, lift) : ax_ir_retain(e->ir);
    for (int i = 0; i < nflat; i++) args[n++] = flat[i];
    int rc = -1;
    if (body) {
        ax_params p = {.nsub = 1, .sub = (struct ax_ir *const *)&body};
        rc = ax_bind(cx, AX_P_CALL, n, args, &p, outs);
    } else {
        ax_error_oom(cx);
    }
    ax_ir_release(body);
    free(lift), free(args);
    return rc;
}

static int check_call(ax_interp *in, const jit_state *s, const ax_args *a) {
    for (int i = 0; i < a->nkw; i++)
        if (a->kwvals[i]->kind == AX_V_ARRAY)
            return ax_error(in->cx, AX_ERR_TYPE,
                            "pass arrays to a jit-compiled function positionally (keyword '%s')",
                            a->kwnames[i]),
                   -1;
    const ax_node *def = s->fn->kind == AX_V_FUNC ? s->fn->fn->def : NULL;
    for (int i = 0; i < s->nstatic; i++)
        if (s->statics[i] >= a->n && /* a parameter left to its default is fine */
            !(def && s->statics[i] < def->nparams && def->params[s->statics[i]].default_value))
            return ax_error(in->cx, AX_ERR_VALUE,
                            "jit: static_argnums names argument %d but only %d were given",
                            s->statics[i], a->n),
                   -1;
    return 0;
}

/* The cache entry for this call (tracing on a miss); fc is initialised for the call, with the
 * flattenings of `from` (NULL, or a flat_call of the same arguments). */
static jit_entry *entry_for(ax_interp *in, jit_state *s, const ax_args *a, flat_call *fc,
                            const flat_call *from) {
    int *traced = malloc((size_t)(a->n + 1) * sizeof *traced), ntraced = 0;
    if (!traced) {
        memset(fc, 0, sizeof *fc);
        return ax_error_oom(in->cx);
    }
    for (int i = 0; i < a->n; i++)
        if (!is_static(s, i)) traced[ntraced++] = i;
    int rc = ax_flat_call_init_from(fc, in, "jit", s->fn, a, ntraced, traced, false, from);
    free(traced);
    if (rc) return NULL;
    size_t len = 0;
    unsigned char *key = signature_key(in, s, a, fc, &len);
    jit_entry *e = NULL;
    if (key && !(e = find_entry(s, key, len))) e = add_entry(in, s, a, fc, &key, len);
    free(key);
    return e;
}

/* The call with keyword arguments that name the function's next parameters moved to their
 * positions (f(x, n=3) is f(x, 3)), so that static_argnums and static_argnames see one
 * form. n->pos and n->kwnames/kwvals are malloc'd (borrowed values); free with call_free. */
static int normalize_call(ax_interp *in, const jit_state *s, const ax_args *a, ax_args *n) {
    *n = (ax_args){0};
    n->pos = malloc((size_t)(a->n + a->nkw + 1) * sizeof *n->pos);
    n->kwnames = malloc((size_t)(a->nkw + 1) * sizeof *n->kwnames);
    n->kwvals = malloc((size_t)(a->nkw + 1) * sizeof *n->kwvals);
    bool *moved = calloc((size_t)a->nkw + 1, sizeof *moved);
    if (!n->pos || !n->kwnames || !n->kwvals || !moved) {
        free(moved);
        return ax_error_oom(in->cx), -1;
    }
    if (a->n) memcpy(n->pos, a->pos, (size_t)a->n * sizeof *n->pos);
    n->n = a->n;
    const ax_node *def = s->fn->kind == AX_V_FUNC ? s->fn->fn->def : NULL;
    for (bool found = true; def && found && n->n < def->nparams;) {
        const ax_param *p = &def->params[n->n];
        found = false;
        if (p->star || p->star2 || p->kwonly) break;
        for (int k = 0; k < a->nkw && !found; k++)
            if (!moved[k] && strcmp(a->kwnames[k], p->name) == 0) {
                moved[k] = found = true;
                n->pos[n->n++] = a->kwvals[k];
            }
    }
    for (int k = 0; k < a->nkw; k++)
        if (!moved[k]) {
            n->kwnames[n->nkw] = a->kwnames[k];
            n->kwvals[n->nkw++] = a->kwvals[k];
        }
    free(moved);
    return 0;
}

static void call_free(ax_args *n) {
    free(n->pos);
    free((void *)n->kwnames);
    free(n->kwvals);
}

static ax_value *jit_fn_call(ax_interp *in, ax_value *self, const ax_args *call) {
    jit_state *s = self->builtin->data->obj.payload;
    ax_args args, *a = &args;
    if (normalize_call(in, s, call, &args)) {
        call_free(&args);
        return NULL;
    }
    flat_call fc = {0};
    ax_value *result = NULL;
    ax_array **outs = NULL;
    if (check_call(in, s, a)) goto done;
    jit_entry *e = entry_for(in, s, a, &fc, NULL);
    if (!e) goto done;
    outs = calloc((size_t)e->ir->nout + 1, sizeof *outs);
    if (!outs) {
        ax_error_oom(in->cx);
        goto done;
    }
    int rc;
    ax_jit_program *prog = NULL;
    /* under make_jaxpr a call on known values is still one pjit equation, as traced */
    if (all_concrete(&fc, e->ir) && !ax_ir_trace_staging(in->cx))
        rc = (prog = program_of(in, e)) ? ax_jit_run(in->cx, prog, fc.flat, outs) : -1;
    else
        rc = bind_call(in->cx, e, fc.flat, fc.nflat, outs);
    if (rc) goto done;
    ax_value **vals = ax_flat_wrap_arrays(in->cx, e->nmain, outs);
    if (vals) {
        result = ax_tree_unflatten(in, e->out_def, vals, e->nmain);
        ax_values_release(vals, e->nmain);
    }
    ax_flat_release_arrays(outs, e->ir->nout);
    outs = NULL;
done:
    free(outs);
    ax_flat_call_free(&fc);
    call_free(&args);
    return result;
}

/* static_argnames: a string or a sequence of strings (copied into *names). */
static int read_argnames(ax_interp *in, ax_value *v, char ***names, int *n) {
    *names = NULL;
    *n = 0;
    if (!v || v->kind == AX_V_NONE) return 0;
    bool one = v->kind == AX_V_STR;
    int count = one ? 1 : v->kind == AX_V_TUPLE || v->kind == AX_V_LIST ? v->n : -1;
    for (int i = 0; !one && i < count; i++)
        if (v->items[i]->kind != AX_V_STR) count = -1;
    if (count < 0)
        return ax_error(in->cx, AX_ERR_TYPE,
                        "jit: static_argnames must be a string or a tuple of strings"),
               -1;
    if (!(*names = calloc((size_t)count + 1, sizeof **names))) return ax_error_oom(in->cx), -1;
    for (int i = 0; i < count; i++, (*n)++)
        if (!((*names)[i] = strdup(one ? v->str : v->items[i]->str)))
            return ax_error_oom(in->cx), -1;
    return 0;
}

/* Adds the positions of the parameters named static to s->statics, and writes the static
 * configuration ("positions|names") to *config. */
static int static_config(ax_interp *in, jit_state *s, char **config) {
    const ax_node *def = s->fn->kind == AX_V_FUNC ? s->fn->fn->def : NULL;
    int *grown = realloc(s->statics, (size_t)(s->nstatic + s->nnames + 1) * sizeof *grown);
    if (!grown) return ax_error_oom(in->cx), -1;
    s->statics = grown;
    for (int k = 0; def && k < s->nnames; k++)
        for (int i = 0; i < def->nparams; i++)
            if (!def->params[i].star && !def->params[i].star2 && !def->params[i].kwonly &&
                strcmp(def->params[i].name, s->static_names[k]) == 0 && !is_static(s, i))
                s->statics[s->nstatic++] = i;
    ax_strbuf c;
    ax_strbuf_init(&c);
    for (int i = 0; i < s->nstatic; i++) ax_strbuf_appendf(&c, "%d,", s->statics[i]);
    ax_strbuf_append(&c, "|");
    for (int k = 0; k < s->nnames; k++) ax_strbuf_appendf(&c, "%s,", s->static_names[k]);
    *config = c.data;
    return c.data ? 0 : (ax_error_oom(in->cx), -1);
}

static const char *const jit_params[] = {
    "fun",         "static_argnums", "static_argnames", "donate_argnums", "donate_argnames",
    "keep_unused", "inline",         "device",          "backend",        NULL};

static ax_value *b_jit(ax_interp *in, ax_value *self, const ax_args *a);

/* @jit(static_argnames=...): the options wait for the function. */
static ax_value *jit_decorator_call(ax_interp *in, ax_value *self, const ax_args *a) {
    ax_value *opts = self->builtin->data; /* a dict of the options */
    if (a->n != 1 || a->nkw)
        return ax_error(in->cx, AX_ERR_TYPE, "jit(...) with options takes the function to compile");
    const char **names = malloc((size_t)(opts->n + 1) * sizeof *names);
    if (!names) return ax_error_oom(in->cx);
    for (int i = 0; i < opts->n; i++) names[i] = opts->keys[i]->str;
    ax_args full = {.n = 1, .pos = a->pos, .nkw = opts->n, .kwnames = names, .kwvals = opts->items};
    ax_value *r = b_jit(in, NULL, &full);
    free(names);
    return r;
}

static ax_value *jit_decorator(ax_interp *in, const ax_args *a) {
    ax_value **keys = calloc((size_t)a->nkw + 1, sizeof *keys);
    ax_value **vals = calloc((size_t)a->nkw + 1, sizeof *vals);
    if (!keys || !vals) {
        free(keys), free(vals);
        return ax_error_oom(in->cx);
    }
    int n = 0;
    for (; n < a->nkw; n++) {
        if (!(keys[n] = ax_value_str(a->kwnames[n]))) break;
        vals[n] = ax_value_retain(a->kwvals[n]);
    }
    if (n < a->nkw) {
        ax_values_release(keys, n);
        ax_values_release(vals, n);
        return ax_error_oom(in->cx);
    }
    ax_value *opts = ax_value_dict(n, keys, vals);
    free(keys), free(vals);
    if (!opts) return ax_error_oom(in->cx);
    ax_value *d = ax_value_builtin("jit", "jit with options, waiting for the function",
                                   jit_decorator_call, opts);
    return d ? d : ax_error_oom(in->cx);
}

/* jit(fun, static_argnums=None, static_argnames=None, donate_argnums=None, ...): donation and
 * the placement options are accepted and change nothing (there is one device, and arrays
 * are never overwritten). Without fun, the options wait for it (@jit(static_argnums=...)). */
static ax_value *b_jit(ax_interp *in, ax_value *self, const ax_args *a) {
    (void)self;
    if (!ax_args_check(in, a, "jit", 2, jit_params)) return NULL;
    ax_value *fn = ax_arg(a, 0, "fun"), *statics = ax_arg(a, 1, "static_argnums");
    if (!fn) return jit_decorator(in, a);
    int *donated = NULL, ndonated = 0;
    bool as_tuple;
    ax_value *donate = ax_arg(a, 3, "donate_argnums");
    if (donate && donate->kind != AX_V_NONE &&
        ax_read_argnums(in, "jit", donate, &donated, &ndonated, &as_tuple))
        return NULL;
    free(donated);
    jit_state *s = calloc(1, sizeof *s);
    if (!s) return ax_error_oom(in->cx);
    s->fn = ax_value_retain(fn);
    char *config = NULL;
    int rc = 0;
    if (statics && statics->kind != AX_V_NONE)
        rc = ax_read_argnums(in, "jit", statics, &s->statics, &s->nstatic, &as_tuple);
    if (!rc) rc = read_argnames(in, ax_arg(a, 2, "static_argnames"), &s->static_names, &s->nnames);
    if (!rc) rc = static_config(in, s, &config);
    if (!rc && !(s->tr = traces_for(in, fn, config))) rc = -1;
    free(config);
    if (rc) {
        jit_state_free(s);
        return NULL;
    }
    ax_value *state = ax_value_object(&jit_state_type, s); /* frees s on failure */
    if (!state) return ax_error_oom(in->cx);
    return ax_value_or_oom(in,
                           ax_value_builtin("jit", "a jit-compiled function", jit_fn_call, state));
}

static bool is_jitted(const ax_value *fn) {
    return fn->kind == AX_V_BUILTIN && fn->builtin->fn == jit_fn_call;
}

int ax_jit_concrete_body(ax_interp *in, ax_value *fn, const ax_args *a, const flat_call *from,
                         flat_call *fc, ax_ir **body, ax_value **out_def, int *nmain) {
    memset(fc, 0, sizeof *fc);
    if (!is_jitted(fn) || a->nkw) return 1;
    jit_state *s = fn->builtin->data->obj.payload;
    if (check_call(in, s, a)) return -1;
    jit_entry *e = entry_for(in, s, a, fc, from);
    if (!e) return -1;
    if (!all_concrete(fc, e->ir) || e->ir->nin != fc->nflat) return 1;
    *body = ax_ir_retain(e->ir);
    *out_def = ax_value_retain(e->out_def);
    *nmain = e->nmain;
    return 0;
}

/* The text as a string value, without its final newlines (print adds one); frees out. */
static ax_value *text_value(ax_interp *in, ax_strbuf *out) {
    while (!out->failed && out->len && out->data[out->len - 1] == '\n') out->data[--out->len] = 0;
    return ax_value_str_take_buf(in, out);
}

ax_value *ax_jit_ir_text(ax_interp *in, const ax_ir *ir) {
    ax_strbuf out;
    ax_strbuf_init(&out);
    ax_ir_format(&out, ir);
    return text_value(in, &out);
}

ax_value *ax_jit_c_text(ax_interp *in, ax_jit_program *prog) {
    ax_strbuf out;
    ax_strbuf_init(&out);
    if (ax_jit_dump_c(in->cx, prog, &out)) {
        ax_strbuf_free(&out);
        return NULL;
    }
    return text_value(in, &out);
}

ax_value *ax_jit_explain(ax_interp *in, ax_value *fn, const ax_args *a, bool want_c) {
    ax_value *wrapped = NULL;
    if (!is_jitted(fn)) { /* `:c f(x)` of a plain function shows what jit(f) would build */
        ax_value *arg = fn;
        ax_args wa = {.n = 1, .pos = &arg};
        wrapped = b_jit(in, NULL, &wa);
        if (!wrapped) return NULL;
        fn = wrapped;
    }
    jit_state *s = fn->builtin->data->obj.payload;
    flat_call fc;
    ax_value *text = NULL;
    ax_args call;
    bool checked = !normalize_call(in, s, a, &call) && !check_call(in, s, &call);
    jit_entry *e = checked ? entry_for(in, s, &call, &fc, NULL) : NULL;
    ax_jit_program *prog = e ? program_of(in, e) : NULL;
    if (prog && want_c) {
        text = ax_jit_c_text(in, prog);
    } else if (prog) {
        ax_strbuf out;
        ax_strbuf_init(&out);
        ax_ir_format(&out, e->ir);
        ax_strbuf_appendf(&out, "\n-- fused into:\n");
        ax_jit_format_plan(&out, prog);
        text = text_value(in, &out);
    }
    if (checked) ax_flat_call_free(&fc);
    call_free(&call);
    ax_value_release(wrapped);
    return text;
}

/* ---------------------------------------------------------------- ahead of time */

void ax_jit_lowered_free(ax_jit_lowered *l) {
    free(l->name);
    ax_ir_release(l->ir);
    if (l->out_def) ax_value_release(l->out_def);
    if (l->in_def) ax_value_release(l->in_def);
    free(l->in_avals);
    for (int k = 0; l->arg_names && k < l->nargs; k++) free(l->arg_names[k]);
    free(l->arg_names);
    free(l->counts);
    if (l->jaxpr) ax_value_release(l->jaxpr);
    memset(l, 0, sizeof *l);
}

/* The name JAX gives the argument at position pos: its parameter's, or "args[i]" for one
 * that *args takes (or of a function without a signature). malloc'd, or NULL. */
static char *arg_name(const jit_state *s, int pos) {
    const ax_node *def = s->fn->kind == AX_V_FUNC ? s->fn->fn->def : NULL;
    char buf[256];
    snprintf(buf, sizeof buf, "args[%d]", pos);
    for (int i = 0; def && i < def->nparams; i++) {
        const ax_param *p = &def->params[i];
        if (p->star) {
            snprintf(buf, sizeof buf, "%s[%d]", p->name, pos - i);
            break;
        }
        if (i == pos && !p->star2 && !p->kwonly) {
            snprintf(buf, sizeof buf, "%s", p->name);
            break;
        }
    }
    return strdup(buf);
}

/* The dynamic arguments' structure, ((args...), {}): what JAX's in_tree describes. */
static ax_value *dynamic_tree(ax_interp *in, const flat_call *fc) {
    ax_value **args = calloc((size_t)fc->ntraced + 1, sizeof *args);
    if (!args) return ax_error_oom(in->cx);
    for (int k = 0; k < fc->ntraced; k++) args[k] = fc->args[fc->traced[k]];
    ax_value *tree = ax_tree_call_args(in, fc->ntraced, args), **leaves = NULL, *def = NULL;
    free(args);
    int n = 0;
    if (tree && !ax_tree_flatten(in, tree, &leaves, &n, &def)) ax_values_release(leaves, n);
    if (tree) ax_value_release(tree);
    return def;
}

static int fill_lowered(ax_interp *in, const jit_state *s, const ax_args *call, const flat_call *fc,
                        const jit_entry *e, bool want_jaxpr, ax_jit_lowered *l) {
    l->ir = ax_ir_retain(e->ir);
    l->out_def = ax_value_retain(e->out_def);
    l->nmain = e->nmain;
    l->nflat = fc->nflat;
    l->nargs = fc->ntraced;
    l->name = strdup(fn_name(s->fn));
    l->in_avals = calloc((size_t)fc->nflat + 1, sizeof *l->in_avals);
    l->counts = calloc((size_t)fc->ntraced + 1, sizeof *l->counts);
    l->arg_names = calloc((size_t)fc->ntraced + 1, sizeof *l->arg_names);
    if (!l->name || !l->in_avals || !l->counts || !l->arg_names) return ax_error_oom(in->cx), -1;
    for (int i = 0; i < fc->nflat; i++) ax_aval_of(&l->in_avals[i], fc->flat[i]);
    for (int k = 0; k < fc->ntraced; k++) {
        l->counts[k] = fc->counts[k];
        if (!(l->arg_names[k] = arg_name(s, fc->traced[k]))) return ax_error_oom(in->cx), -1;
    }
    if (!(l->in_def = dynamic_tree(in, fc))) return -1;
    if (want_jaxpr && !(l->jaxpr = ax_make_jaxpr(in, s->fn, call, fc->ntraced, fc->traced)))
        return -1;
    return 0;
}

/* A static argument is part of the program: a ShapeDtypeStruct cannot stand for it. */
static int statics_have_values(ax_interp *in, const jit_state *s, const ax_args *a) {
    char which[160] = "";
    for (int i = 0; i < a->n && !which[0]; i++)
        if (is_static(s, i) && ax_is_shape_dtype_struct(a->pos[i]))
            snprintf(which, sizeof which, "%d", i);
    for (int k = 0; k < a->nkw && !which[0]; k++)
        if (ax_is_shape_dtype_struct(a->kwvals[k]))
            snprintf(which, sizeof which, "'%s'", a->kwnames[k]);
    if (!which[0]) return 0;
    return ax_error(in->cx, AX_ERR_TYPE,
                    "%s: static argument %s is a ShapeDtypeStruct; static arguments are part of "
                    "the program and need their values",
                    fn_name(s->fn), which),
           -1;
}

int ax_jit_lower(ax_interp *in, ax_value *jit, const ax_args *a, bool want_jaxpr,
                 ax_jit_lowered *out) {
    memset(out, 0, sizeof *out);
    jit_state *s = jit->obj.payload;
    flat_call fc;
    ax_args call, args; /* args: ShapeDtypeStructs made arrays */
    bool checked = !normalize_call(in, s, a, &call) && !check_call(in, s, &call) &&
                   !statics_have_values(in, s, &call) && !ax_shape_args(in, &call, &args);
    jit_entry *e = checked ? entry_for(in, s, &args, &fc, NULL) : NULL;
    int rc = e ? fill_lowered(in, s, &args, &fc, e, want_jaxpr, out) : -1;
    if (checked) {
        ax_flat_call_free(&fc);
        ax_shape_args_free(&args);
    }
    call_free(&call);
    if (rc) ax_jit_lowered_free(out);
    return rc;
}

/* jit_ir(f, *args) and jit_c(f, *args): the REPL's :ir and :c as functions. */
static ax_value *explain(ax_interp *in, const ax_args *a, const char *what, bool want_c) {
    if (a->n < 1)
        return ax_error(in->cx, AX_ERR_TYPE, "%s(f, *args) needs the function to show", what);
    ax_args rest = *a;
    rest.n--;
    rest.pos++;
    return ax_jit_explain(in, a->pos[0], &rest, want_c);
}

static ax_value *b_jit_ir(ax_interp *in, ax_value *self, const ax_args *a) {
    (void)self;
    return explain(in, a, "jit_ir", false);
}

static ax_value *b_jit_c(ax_interp *in, ax_value *self, const ax_args *a) {
    (void)self;
    return explain(in, a, "jit_c", true);
}

int ax_jit_register(ax_interp *in) {
    static const struct {
        const char *name, *doc;
        ax_builtin_fn fn;
    } fns[] = {
        {"jit", "jit(f, static_argnums=()): f compiled to native code for each new argument type",
         b_jit},
        {"jit_ir", "jit_ir(f, *args): the typed IR jit traces f(*args) to, and its fused loops",
         b_jit_ir},
        {"jit_c", "jit_c(f, *args): the C-like dump of the native code jit builds for f(*args)",
         b_jit_c},
    };
    for (size_t i = 0; i < sizeof fns / sizeof *fns; i++) {
        ax_value *v = ax_value_builtin(fns[i].name, fns[i].doc, fns[i].fn, NULL);
        if (!v) return -1;
        ax_interp_define_builtin_take(in, fns[i].name, v);
    }
    return 0;
}

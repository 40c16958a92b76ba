/* Registers the builtin namespace: the function tables of builtins_*.c, the dtype values,
 * the constants (pi, e, inf, nan, newaxis), and `jnp` / `np`, a namespace object whose
 * members are the array functions (jnp.dot, jnp.float32, jnp.pi, ...). */
#include "builtins_lib.h"
#include "config.h"
#include "custom_rules.h"
#include "debug.h"
#include "eval_shape.h"
#include "prng.h"
#include "support.h"
#include "pytree.h"
#include "jit_builtin.h"
#include "graph.h"
#include "plot.h"
#include "transforms.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const ax_builtin_def *const tables[] = {
    ax_builtins_py,      ax_builtins_create, ax_builtins_math,  ax_builtins_reduce,
    ax_builtins_shape,   ax_builtins_linalg, ax_builtins_index, ax_builtins_einsum,
    ax_builtins_compare, ax_builtins_time,   ax_builtins_plot,   ax_builtins_graph,
    ax_builtins_lax,     ax_builtins_conv,   ax_builtins_io,    ax_builtins_help,
    ax_builtins_types,   ax_builtins_parallel, ax_builtins_pytypes,
};

#define NTABLES (sizeof tables / sizeof *tables)

const ax_builtin_def *ax_builtin_find(const char *name) {
    for (size_t t = 0; t < NTABLES; t++)
        for (const ax_builtin_def *d = tables[t]; d->name; d++)
            if (!strcmp(d->name, name)) return d;
    return NULL;
}

/* ---------------------------------------------------------------- the jnp ns_table */

typedef struct ns_entry {
    const char *name; /* static storage */
    ax_value *value;
} ns_entry;

typedef struct ns_table {
    ns_entry *entries; /* sorted by name once complete */
    int n, cap;
    const char *label;  /* "jax.numpy" */
    bool prelude;       /* also finds the builtins written in ax (the prelude) */
    const char *module; /* also finds the members of this stdlib module, imported on first use */
} ns_table;

static void ns_free(void *payload) {
    ns_table *ns = payload;
    for (int i = 0; i < ns->n; i++) ax_value_release(ns->entries[i].value);
    free(ns->entries);
    free(ns);
}

static void ns_format(ax_strbuf *out, void *payload) {
    ax_strbuf_appendf(out, "<module '%s'>", ((ns_table *)payload)->label);
}

static int entry_compare(const void *a, const void *b) {
    return strcmp(((const ns_entry *)a)->name, ((const ns_entry *)b)->name);
}

static ax_value *ns_getattr(ax_interp *in, ax_value *self, const char *name) {
    ns_table *ns = self->obj.payload;
    ns_entry key = {.name = name};
    ns_entry *e = bsearch(&key, ns->entries, (size_t)ns->n, sizeof *ns->entries, entry_compare);
    if (e) return ax_value_retain(e->value);
    /* Array functions written in ax (the prelude) are found among the builtins. */
    ax_value *v = ns->prelude ? ax_interp_lookup(in, name) : NULL;
    if (!v && ns->prelude) v = ax_interp_lookup_lazy(in, name); /* jnp.histogram: jnp_more.ax */
    if (!v && ax_error_pending(in->cx)) return NULL;
    /* jnp.linalg's functions written in ax live in stdlib/jnp_linalg.ax */
    ax_module *m = !v && ns->module ? ax_interp_import(in, ns->module) : NULL;
    if (m && name[0] != '_') v = ax_module_lookup(m, name);
    return v ? ax_value_retain(v) : NULL;
}

/* The names ns_getattr finds: its own, and for jnp those written in ax (stdlib/jnp_more.ax,
 * opened here) and jnp.linalg's module. */
static void ns_each_attr(ax_interp *in, ax_value *self, void (*fn)(void *arg, const char *name),
                         void *arg) {
    ns_table *ns = self->obj.payload;
    for (int i = 0; i < ns->n; i++) fn(arg, ns->entries[i].name);
    if (ns->prelude) ax_interp_each_lazy_builtin(in, fn, arg);
    ax_module *m = ns->module ? ax_interp_import(in, ns->module) : NULL;
    ax_value *mv = m ? ax_value_module(m) : NULL;
    if (mv) ax_value_each_attr(in, mv, fn, arg), ax_value_release(mv);
    ax_error_clear(in->cx);
}

static const ax_object_type namespace_type = {
    .name = "module",
    .free = ns_free,
    .format = ns_format,
    .getattr = ns_getattr,
    .each_attr = ns_each_attr,
};

/* Adds name -> v (a new reference of its own) to the namespace. */
static bool ns_add(ax_interp *in, ns_table *ns, const char *name, ax_value *v) {
    if (ns->n == ns->cap) {
        int cap = ns->cap ? 2 * ns->cap : 256;
        ns_entry *e = realloc(ns->entries, (size_t)cap * sizeof *e);
        if (!e) return ax_error_oom(in->cx), false;
        ns->entries = e;
        ns->cap = cap;
    }
    ns->entries[ns->n++] = (ns_entry){name, ax_value_retain(v)};
    return true;
}

/* Adds name -> v to the namespace only (takes v). */
static bool ns_add_take(ax_interp *in, ns_table *ns, const char *name, ax_value *v) {
    if (!v) return ax_error_oom(in->cx), false;
    bool ok = ns_add(in, ns, name, v);
    ax_value_release(v);
    return ok;
}

/* Defines `name` as a builtin (and, when ns is given, a member of jnp). Takes v. */
static bool define(ax_interp *in, ns_table *ns, const char *name, ax_value *v) {
    if (!v) return false;
    bool ok = !ns || ns_add(in, ns, name, v);
    ax_interp_define_builtin_take(in, name, v);
    return ok;
}

/* ---------------------------------------------------------------- np.random */

/* np.random: NumPy's generator keeps hidden state, which ax (like JAX) does not have. Every use
 * is an error that shows the key-passing way to write it. */
static const struct {
    const char *numpy, *ax;
} random_equivalents[] = {
    {"rand", "x = random.uniform(sub, shape)"},
    {"random", "x = random.uniform(sub, shape)"},
    {"uniform", "x = random.uniform(sub, shape, minval=low, maxval=high)"},
    {"randn", "x = random.normal(sub, shape)"},
    {"normal", "x = loc + scale * random.normal(sub, shape)"},
    {"standard_normal", "x = random.normal(sub, shape)"},
    {"randint", "x = random.randint(sub, shape, minval, maxval)"},
    {"integers", "x = random.randint(sub, shape, minval, maxval)"},
    {"choice", "x = random.choice(sub, a, shape)"},
    {"permutation", "x = random.permutation(sub, x)"},
    {"shuffle", "x = random.permutation(sub, x)"},
};

static ax_value *np_random_getattr(ax_interp *in, ax_value *self, const char *name) {
    (void)self;
    const char *ax = NULL;
    for (size_t i = 0; i < sizeof random_equivalents / sizeof *random_equivalents; i++)
        if (!strcmp(name, random_equivalents[i].numpy)) ax = random_equivalents[i].ax;
    return ax_error(in->cx, AX_ERR_ATTRIBUTE,
                    "np.random.%s: np is jax.numpy in ax, and there is no global random state; "
                    "pass PRNG keys instead: key = random.key(seed), then key, sub = "
                    "random.split(key) and %s",
                    name, ax ? ax : "x = random.normal(sub, shape)");
}

static void np_random_format(ax_strbuf *out, void *payload) {
    (void)payload;
    ax_strbuf_append(out, "<np.random: not available; use PRNG keys (random.key)>");
}

static const ax_object_type np_random_type = {
    .name = "np.random", .format = np_random_format, .getattr = np_random_getattr};

/* ---------------------------------------------------------------- dtypes and constants */

static const struct {
    const char *name;
    ax_dtype dtype;
} dtype_names[] = {
    {"f32", AX_F32},    {"f64", AX_F64},   {"i32", AX_I32},     {"i64", AX_I64},
    {"u32", AX_U32},    {"u8", AX_U8},     {"float32", AX_F32}, {"float64", AX_F64},
    {"int32", AX_I32},  {"int64", AX_I64}, {"uint32", AX_U32},  {"uint8", AX_U8},
    {"bool_", AX_BOOL},
};

static bool define_dtypes(ax_interp *in, ns_table *ns) {
    for (size_t i = 0; i < sizeof dtype_names / sizeof *dtype_names; i++)
        if (!define(in, ns, dtype_names[i].name, ax_value_dtype(dtype_names[i].dtype)))
            return false;
    return true;
}

static bool define_constants(ax_interp *in, ns_table *ns) {
    return define(in, ns, "pi", ax_bi_float_value(in, M_PI)) &&
           define(in, ns, "e", ax_bi_float_value(in, M_E)) &&
           define(in, ns, "inf", ax_bi_float_value(in, INFINITY)) &&
           define(in, ns, "nan", ax_bi_float_value(in, NAN)) &&
           define(in, ns, "euler_gamma", ax_bi_float_value(in, 0.57721566490153286060)) &&
           define(in, ns, "newaxis", ax_none()) &&
           ns_add_take(in, ns, "random", ax_value_object(&np_random_type, NULL));
}

/* Each function becomes a builtin (AX_BI_NP ones also members of jnp), except the
 * AX_BI_LINALG ones, which live in jnp.linalg only. */
static bool define_functions(ax_interp *in, ns_table *ns, ns_table *linalg) {
    for (size_t t = 0; t < NTABLES; t++)
        for (const ax_builtin_def *d = tables[t]; d->name; d++) {
            ax_value *v = ax_value_builtin(d->name, d->doc, d->fn, NULL);
            if (!v) return false;
            if (d->flags & AX_BI_LINALG) {
                bool ok = ns_add(in, linalg, d->name, v);
                ax_value_release(v);
                if (!ok) return false;
            } else if (!define(in, d->flags & AX_BI_NP ? ns : NULL, d->name, v)) {
                return false;
            }
        }
    return true;
}

static ns_table *ns_new(ax_interp *in, const char *label, bool prelude) {
    ns_table *ns = calloc(1, sizeof *ns);
    if (!ns) return ax_error_oom(in->cx);
    ns->label = label;
    ns->prelude = prelude;
    return ns;
}

/* The namespace as an object value (frees ns on failure). */
static ax_value *ns_value(ns_table *ns) {
    qsort(ns->entries, (size_t)ns->n, sizeof *ns->entries, entry_compare);
    return ax_value_object(&namespace_type, ns);
}

int ax_builtins_register(ax_interp *in) {
    ns_table *ns = ns_new(in, "jax.numpy", true), *linalg = ns_new(in, "jax.numpy.linalg", false);
    if (linalg) linalg->module = "jnp_linalg";
    if (!ns || !linalg || !define_functions(in, ns, linalg) || !define_dtypes(in, ns) ||
        !define_constants(in, ns)) {
        if (ns) ns_free(ns);
        if (linalg) ns_free(linalg);
        return -1;
    }
    ax_value *lv = ns_value(linalg);
    if (!lv || !define(in, ns, "linalg", lv)) {
        ns_free(ns);
        return -1;
    }
    ax_value *module = ns_value(ns);
    if (!module) return -1;
    ax_interp_define_builtin_take(in, "np", ax_value_retain(module));
    ax_interp_define_builtin_take(in, "jnp", module);
    /* The builtins written elsewhere: tree_* (stdlib/pytree.c), grad/vmap/... (transforms.c),
     * jit (jit_builtin.c). */
    if (ax_pytree_register(in) < 0 || ax_transforms_register(in) < 0 || ax_jit_register(in) < 0 ||
        ax_custom_rules_register(in) < 0 || ax_prng_register(in) < 0 || ax_plot_register(in) < 0 ||
        ax_support_register(in) < 0 || ax_eval_shape_register(in) < 0 ||
        ax_debug_register(in) < 0 || ax_config_register(in) < 0)
        return -1;
    return 0;
}

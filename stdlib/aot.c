/* JAX's ahead-of-time stages (see aot.h). One payload, jit's trace of the call, is shared by
 * the stages made from it: a Traced, the Lowered it lowers to, the Compiled that compiles. */
#include "aot.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../compiler/call.h"
#include "../compiler/passes.h"
#include "eval_shape.h"
#include "jit_builtin.h"
#include "pytree.h"

typedef struct stage {
    int refs;
    ax_jit_lowered l;
} stage;

static void stage_release(void *p) {
    stage *s = p;
    if (--s->refs > 0) return;
    ax_jit_lowered_free(&s->l);
    free(s);
}

/* "float32[2,3]", as JAX's str_short writes an array type. */
static void aval_format(ax_strbuf *out, const ax_aval *t) {
    ax_strbuf_appendf(out, "%s[", ax_dtype_name(t->dtype));
    for (int d = 0; d < t->ndim; d++)
        ax_strbuf_appendf(out, "%s%lld", d ? "," : "", (long long)t->shape[d]);
    ax_strbuf_append(out, "]");
}

/* Traced(f: float32[3], float32[3]) */
static void stage_format(ax_strbuf *out, const stage *s, const char *kind) {
    ax_strbuf_appendf(out, "%s(%s:", kind, s->l.name);
    for (int i = 0; i < s->l.nflat; i++) {
        ax_strbuf_append(out, i ? ", " : " ");
        aval_format(out, &s->l.in_avals[i]);
    }
    ax_strbuf_append(out, ")");
}
static void traced_format(ax_strbuf *out, void *p) {
    stage_format(out, p, "Traced");
}
static void lowered_format(ax_strbuf *out, void *p) {
    stage_format(out, p, "Lowered");
}
static void compiled_format(ax_strbuf *out, void *p) {
    stage_format(out, p, "Compiled");
}

static ax_value *stage_getattr(ax_interp *in, ax_value *self, const char *name);
static void stage_each_attr(ax_interp *in, ax_value *self, void (*fn)(void *arg, const char *name),
                            void *arg);
static ax_value *compiled_call(ax_interp *in, ax_value *self, const ax_args *a);

enum { TRACED = 1, LOWERED = 2, COMPILED = 4 };

static const ax_object_type traced_type = {.name = "Traced",
                                           .free = stage_release,
                                           .format = traced_format,
                                           .getattr = stage_getattr,
                                           .each_attr = stage_each_attr};
static const ax_object_type lowered_type = {.name = "Lowered",
                                            .free = stage_release,
                                            .format = lowered_format,
                                            .getattr = stage_getattr,
                                            .each_attr = stage_each_attr};
static const ax_object_type compiled_type = {.name = "Compiled",
                                             .free = stage_release,
                                             .format = compiled_format,
                                             .getattr = stage_getattr,
                                             .each_attr = stage_each_attr,
                                             .call = compiled_call};

static int stage_kind(const ax_value *v) {
    return v->obj.type == &traced_type ? TRACED : v->obj.type == &lowered_type ? LOWERED : COMPILED;
}

/* The stage of another kind on the same payload. */
static ax_value *next_stage(ax_interp *in, stage *s, const ax_object_type *type) {
    s->refs++;
    ax_value *v = ax_value_object(type, s); /* releases s on failure */
    return v ? v : ax_error_oom(in->cx);
}

/* ---------------------------------------------------------------- jit(f).lower, .trace */

/* Lowers the call into a new stage of `type`. */
static ax_value *lower_call(ax_interp *in, ax_value *self, const ax_args *a,
                            const ax_object_type *type) {
    stage *s = calloc(1, sizeof *s);
    int rc = s ? ax_jit_lower(in, self->builtin->data, a, type == &traced_type, &s->l)
               : (ax_error_oom(in->cx), -1);
    if (rc) {
        free(s);
        return NULL;
    }
    return next_stage(in, s, type);
}

static ax_value *jit_lower(ax_interp *in, ax_value *self, const ax_args *a) {
    return lower_call(in, self, a, &lowered_type);
}

static ax_value *jit_trace(ax_interp *in, ax_value *self, const ax_args *a) {
    return lower_call(in, self, a, &traced_type);
}

static ax_value *out_info(ax_interp *in, const stage *s);

/* jit(f).eval_shape(*args): the outputs' ShapeDtypeStructs (static arguments honoured). */
static ax_value *jit_eval_shape(ax_interp *in, ax_value *self, const ax_args *a) {
    ax_value *lowered = lower_call(in, self, a, &lowered_type);
    ax_value *r = lowered ? out_info(in, lowered->obj.payload) : NULL;
    if (lowered) ax_value_release(lowered);
    return r;
}

static const struct {
    const char *name, *doc;
    ax_builtin_fn fn;
} jit_methods[] = {
    {"lower",
     "jit(f).lower(*args): the program jit builds for these argument types (arrays or "
     "ShapeDtypeStructs), a Lowered",
     jit_lower},
    {"trace", "jit(f).trace(*args): f traced for these argument types, a Traced (.jaxpr, .lower())",
     jit_trace},
    {"eval_shape",
     "jit(f).eval_shape(*args): the outputs' ShapeDtypeStructs, static arguments as jit takes "
     "them",
     jit_eval_shape},
};

ax_value *ax_aot_jit_getattr(ax_interp *in, ax_value *jit, const char *name) {
    for (size_t i = 0; i < sizeof jit_methods / sizeof *jit_methods; i++)
        if (strcmp(name, jit_methods[i].name) == 0)
            return ax_value_or_oom(in, ax_value_builtin(name, jit_methods[i].doc, jit_methods[i].fn,
                                                        ax_value_retain(jit)));
    return NULL;
}

void ax_aot_jit_each_attr(ax_interp *in, ax_value *jit, void (*fn)(void *arg, const char *name),
                          void *arg) {
    (void)in, (void)jit;
    for (size_t i = 0; i < sizeof jit_methods / sizeof *jit_methods; i++)
        fn(arg, jit_methods[i].name);
}

/* ---------------------------------------------------------------- cost analysis */

typedef struct cost {
    double flops, transcendentals, bytes;
} cost;

static double elements(const ax_aval *t) {
    double n = 1;
    for (int d = 0; d < t->ndim; d++) n *= (double)t->shape[d];
    return n;
}

static void atom_type(const ax_ir *ir, const ax_ir_atom *a, ax_aval *t) {
    if (a->var >= 0)
        *t = ir->types[a->var];
    else
        ax_aval_of(t, a->lit);
}

/* As XLA's cost analysis counts them: one transcendental per element. */
static bool is_transcendental(ax_prim p) {
    static const ax_prim prims[] = {
        AX_P_EXP,   AX_P_EXP2,  AX_P_LOG,     AX_P_LOG1P,    AX_P_EXPM1,   AX_P_SIN,   AX_P_COS,
        AX_P_TAN,   AX_P_ASIN,  AX_P_ACOS,    AX_P_ATAN,     AX_P_SINH,    AX_P_COSH,  AX_P_TANH,
        AX_P_ASINH, AX_P_ACOSH, AX_P_ATANH,   AX_P_LOGISTIC, AX_P_SQRT,    AX_P_RSQRT, AX_P_CBRT,
        AX_P_ERF,   AX_P_ERFC,  AX_P_ERF_INV, AX_P_LGAMMA,   AX_P_DIGAMMA, AX_P_POW,   AX_P_ATAN2};
    for (size_t i = 0; i < sizeof prims / sizeof *prims; i++)
        if (prims[i] == p) return true;
    return false;
}

static bool is_reduction(ax_prim p) {
    return p == AX_P_REDUCE_SUM || p == AX_P_REDUCE_PROD || p == AX_P_REDUCE_MAX ||
           p == AX_P_REDUCE_MIN || p == AX_P_REDUCE_AND || p == AX_P_REDUCE_OR ||
           p == AX_P_ARGMAX || p == AX_P_ARGMIN;
}

/* The arithmetic of one equation that has no sub-programs: flops (or transcendentals). */
static void eqn_arithmetic(const ax_ir *ir, const ax_ir_eqn *e, double out_elems, cost *c) {
    ax_aval lhs, rhs;
    if (e->nin) atom_type(ir, &e->in[0], &lhs);
    if (e->prim == AX_P_DOT_GENERAL) { /* a multiply and an add per contracted product */
        double k = 1;
        for (int i = 0; i < e->params.dot.ncontract; i++)
            k *= (double)lhs.shape[e->params.dot.lhs_contract[i]];
        c->flops += 2 * out_elems * k;
    } else if (e->prim == AX_P_CONV_GENERAL_DILATED) { /* the same per kernel element */
        atom_type(ir, &e->in[1], &rhs);
        double out_features = (double)rhs.shape[e->params.conv.rhs_spec[0]];
        c->flops += out_features > 0 ? 2 * out_elems * elements(&rhs) / out_features : 0;
    } else if (is_reduction(e->prim)) { /* a combination per element dropped */
        c->flops += elements(&lhs) - out_elems;
    } else if (e->prim >= AX_P_CUMSUM && e->prim <= AX_P_CUMMIN) {
        c->flops += out_elems;
    } else if (is_transcendental(e->prim)) {
        c->transcendentals += out_elems;
    } else if (ax_prim_get(e->prim)->flags & AX_PRIM_ELEMENTWISE) {
        c->flops += out_elems;
    }
}

/* Adds `runs` executions of ir: arithmetic as above, and every equation's operands and results
 * as bytes read and written once (before fusion). Sub-programs count `runs` times what their
 * equation runs them (a scan: its length; a while: once, its trip count being unknown; a cond:
 * its costliest branch). */
static void ir_cost(const ax_ir *ir, double runs, cost *c) {
    for (int k = 0; k < ir->neqns; k++) {
        const ax_ir_eqn *e = &ir->eqns[k];
        const ax_prim_info *row = ax_prim_get(e->prim);
        if (e->nsub) {
            double times = row->runs ? row->runs(&e->params) : 1;
            if (!isfinite(times)) times = 1;
            cost most = {0};
            for (int i = 0; i < e->nsub; i++) {
                cost sub = {0};
                ir_cost(e->sub[i], runs * times, &sub);
                if (e->prim != AX_P_COND) {
                    c->flops += sub.flops, c->transcendentals += sub.transcendentals;
                    c->bytes += sub.bytes;
                } else if (sub.flops + sub.transcendentals >= most.flops + most.transcendentals) {
                    most = sub;
                }
            }
            c->flops += most.flops, c->transcendentals += most.transcendentals;
            c->bytes += most.bytes;
            continue;
        }
        double out_elems = 0, bytes = 0;
        for (int j = 0; j < e->nout; j++) {
            const ax_aval *t = &ir->types[e->out[j]];
            out_elems += elements(t);
            bytes += elements(t) * (double)ax_dtype_size(t->dtype);
        }
        for (int i = 0; i < e->nin; i++) {
            ax_aval t;
            atom_type(ir, &e->in[i], &t);
            bytes += elements(&t) * (double)ax_dtype_size(t.dtype);
        }
        cost one = {0};
        eqn_arithmetic(ir, e, out_elems, &one);
        c->flops += runs * one.flops;
        c->transcendentals += runs * one.transcendentals;
        c->bytes += runs * bytes;
    }
}

static ax_value *cost_analysis(ax_interp *in, ax_value *self, const ax_args *a) {
    if (!ax_args_check(in, a, "cost_analysis", 0, NULL)) return NULL;
    const stage *s = self->builtin->data->obj.payload;
    cost c = {0};
    ir_cost(s->l.ir, 1, &c);
    const char *names[] = {"flops", "transcendentals", "bytes accessed"};
    double vals[] = {c.flops, c.transcendentals, c.bytes};
    ax_value *keys[3] = {0}, *items[3] = {0};
    bool ok = true;
    for (int i = 0; i < 3; i++) {
        keys[i] = ax_value_str(names[i]);
        items[i] = ax_value_float(in, vals[i]);
        ok &= keys[i] && items[i];
    }
    if (!ok) {
        for (int i = 0; i < 3; i++) {
            if (keys[i]) ax_value_release(keys[i]);
            if (items[i]) ax_value_release(items[i]);
        }
        return ax_error_oom(in->cx);
    }
    return ax_value_or_oom(in, ax_value_dict(3, keys, items));
}

/* ---------------------------------------------------------------- the stages' methods */

static ax_value *traced_lower(ax_interp *in, ax_value *self, const ax_args *a) {
    if (!ax_args_check(in, a, "lower", 0, NULL)) return NULL;
    return next_stage(in, self->builtin->data->obj.payload, &lowered_type);
}

static ax_value *as_text(ax_interp *in, ax_value *self, const ax_args *a) {
    ax_value *st = self->builtin->data;
    bool lowered = stage_kind(st) != COMPILED;
    const char *const names[] = {"dialect", "debug_info", NULL};
    if (!ax_args_check(in, a, "as_text", lowered, lowered ? names : NULL)) return NULL;
    ax_value *dialect = lowered ? ax_arg(a, 0, "dialect") : NULL;
    if (dialect && dialect->kind != AX_V_NONE)
        return ax_error(in->cx, AX_ERR_VALUE,
                        "as_text: ax lowers to its typed IR, the only text it has (no dialect "
                        "such as 'stablehlo' or 'hlo')");
    const stage *s = st->obj.payload;
    if (lowered) return ax_jit_ir_text(in, s->l.ir);
    ax_jit_program *prog = ax_call_program(in->cx, s->l.ir); /* built by compile() */
    if (!prog) return NULL;
    /* running on the eager kernels (no native code could be built): as JAX, None */
    return ax_jit_program_info(prog)->native ? ax_jit_c_text(in, prog) : ax_none();
}

/* Lowered.compile(): builds the native code now (waiting for a compile that runs in the
 * background), so that the first call of the Compiled runs it. */
static ax_value *lowered_compile(ax_interp *in, ax_value *self, const ax_args *a) {
    if (!ax_args_check(in, a, "compile", 1, (const char *[]){"compiler_options", NULL}))
        return NULL;
    ax_value *options = ax_arg(a, 0, "compiler_options");
    if (options && options->kind != AX_V_NONE && !(options->kind == AX_V_DICT && !options->n))
        return ax_error(in->cx, AX_ERR_VALUE,
                        "compile: ax takes no compiler_options (they are XLA's flags); the "
                        "environment sets jit's (AX_JIT_OPT, docs/jit.md)");
    stage *s = self->builtin->data->obj.payload;
    for (int i = 0; i < s->l.ir->nconsts; i++)
        if (s->l.ir->consts[i]->tracer)
            return ax_error(in->cx, AX_ERR_TYPE,
                            "compile: %s closes over a value traced by an enclosing "
                            "transformation; lower and compile it outside that transformation",
                            s->l.name);
    if (!ax_call_ready(in->cx, s->l.ir)) return NULL;
    return next_stage(in, s, &compiled_type);
}

/* ---------------------------------------------------------------- calling a Compiled */

/* The name JAX gives flat argument i in errors: "x", "params['w']". malloc'd, or NULL. */
static char *leaf_name(ax_interp *in, const stage *s, const ax_args *a, int i) {
    int k = 0;
    while (k < s->l.nargs - 1 && i >= s->l.counts[k]) i -= s->l.counts[k++];
    char *path = ax_tree_leaf_keystr(in, a->pos[k], i);
    if (!path) return NULL;
    ax_strbuf out;
    ax_strbuf_init(&out);
    ax_strbuf_appendf(&out, "%s%s", s->l.arg_names[k], path);
    free(path);
    if (out.failed) ax_strbuf_free(&out);
    return out.failed ? ax_error_oom(in->cx) : out.data;
}

/* JAX's TypeError when leaves differ in shape or dtype from the compiled ones (at most five
 * named): 0 when none does, -1 with the error. */
static int check_leaves(ax_interp *in, const stage *s, const ax_args *a, ax_value **leaves) {
    ax_strbuf msg;
    ax_strbuf_init(&msg);
    int nbad = 0;
    for (int i = 0; i < s->l.nflat; i++) {
        const ax_aval *want = &s->l.in_avals[i];
        ax_aval got;
        bool is_array = leaves[i]->kind == AX_V_ARRAY;
        if (is_array) ax_aval_of(&got, leaves[i]->arr);
        if (is_array && got.dtype == want->dtype &&
            ax_shape_equal(got.ndim, got.shape, want->ndim, want->shape))
            continue;
        if (++nbad > 5) continue;
        char *name = leaf_name(in, s, a, i);
        if (!name) {
            ax_strbuf_free(&msg);
            return -1;
        }
        ax_strbuf_appendf(&msg, "\nArgument '%s' compiled with ", name);
        aval_format(&msg, want);
        ax_strbuf_append(&msg, " and called with ");
        if (is_array)
            aval_format(&msg, &got);
        else
            ax_strbuf_appendf(&msg, "a %s", ax_value_kind_name(leaves[i]->kind));
        free(name);
    }
    if (nbad && !msg.failed) {
        char lead[64] = "The";
        if (nbad > 5) snprintf(lead, sizeof lead, "The first 5 of %d", nbad);
        ax_error(in->cx, AX_ERR_TYPE,
                 "Argument types differ from the types for which this computation was compiled. "
                 "%s mismatches are:%s",
                 lead, msg.data);
    } else if (nbad) {
        ax_error_oom(in->cx);
    }
    ax_strbuf_free(&msg);
    return nbad ? -1 : 0;
}

/* The call's arguments as ((args...), {}): leaves (new references) checked against the
 * compiled structure. 0, or -1 with JAX's TypeError. */
static int flatten_args(ax_interp *in, const stage *s, const ax_args *a, ax_value ***leaves) {
    ax_value *tree = ax_tree_call_args(in, a->n, a->pos), *def = NULL;
    if (!tree) return -1;
    int n = 0, rc = ax_tree_flatten(in, tree, leaves, &n, &def);
    ax_value_release(tree);
    if (rc) return -1;
    if (!ax_treedef_equal(def, s->l.in_def)) {
        ax_strbuf want, got;
        ax_strbuf_init(&want);
        ax_strbuf_init(&got);
        ax_value_format(&want, s->l.in_def);
        ax_value_format(&got, def);
        ax_error(in->cx, AX_ERR_TYPE,
                 "Function compiled with input pytree does not match the input pytree it was "
                 "called with: compiled for %s, called with %s",
                 want.data ? want.data : "?", got.data ? got.data : "?");
        ax_strbuf_free(&want);
        ax_strbuf_free(&got);
        rc = -1;
    }
    ax_value_release(def);
    if (!rc) rc = check_leaves(in, s, a, *leaves);
    if (rc) {
        ax_values_release(*leaves, n);
        *leaves = NULL;
    }
    return rc;
}

static ax_value *compiled_call(ax_interp *in, ax_value *self, const ax_args *a) {
    const stage *s = self->obj.payload;
    if (a->nkw)
        return ax_error(in->cx, AX_ERR_TYPE,
                        "a Compiled takes the arguments that were traced, positionally "
                        "(keyword '%s'): the static ones were fixed by lower()",
                        a->kwnames[0]);
    ax_value **leaves = NULL;
    if (flatten_args(in, s, a, &leaves)) return NULL;
    const ax_ir *ir = s->l.ir;
    ax_array **flat = calloc((size_t)s->l.nflat + 1, sizeof *flat);
    ax_array **outs = calloc((size_t)ir->nout + 1, sizeof *outs);
    ax_value *result = NULL;
    if (!flat || !outs) {
        ax_error_oom(in->cx);
        goto done;
    }
    for (int i = 0; i < s->l.nflat; i++) {
        flat[i] = leaves[i]->arr;
        if (flat[i]->tracer) { /* JAX's words */
            ax_error(in->cx, AX_ERR_TYPE,
                     "Cannot apply JAX transformations to a function lowered and compiled for a "
                     "particular signature. Detected argument of Tracer type.");
            goto done;
        }
    }
    ax_jit_program *prog = ax_call_program(in->cx, (ax_ir *)ir);
    if (!prog || ax_jit_run(in->cx, prog, flat, outs)) goto done;
    ax_value **vals = ax_flat_wrap_arrays(in->cx, s->l.nmain, outs);
    if (vals) {
        result = ax_tree_unflatten(in, s->l.out_def, vals, s->l.nmain);
        ax_values_release(vals, s->l.nmain);
    }
    ax_flat_release_arrays(outs, ir->nout);
    outs = NULL;
done:
    free(outs);
    free(flat);
    ax_values_release(leaves, s->l.nflat);
    return result;
}

/* ---------------------------------------------------------------- attributes */

/* A tree of ShapeDtypeStructs of structure def, one per type. */
static ax_value *struct_tree(ax_interp *in, ax_value *def, int n, const ax_aval *types) {
    ax_value **leaves = calloc((size_t)n + 1, sizeof *leaves);
    if (!leaves) return ax_error_oom(in->cx);
    int made = 0;
    while (made < n && (leaves[made] = ax_shape_dtype_struct(in, &types[made]))) made++;
    ax_value *r = made == n ? ax_tree_unflatten(in, def, leaves, n) : NULL;
    ax_values_release(leaves, made);
    return r;
}

static ax_value *out_info(ax_interp *in, const stage *s) {
    ax_aval *types = calloc((size_t)s->l.nmain + 1, sizeof *types);
    if (!types) return ax_error_oom(in->cx);
    for (int j = 0; j < s->l.nmain; j++) ax_ir_out_type(s->l.ir, j, &types[j]);
    ax_value *r = struct_tree(in, s->l.out_def, s->l.nmain, types);
    free(types);
    return r;
}

/* Each stage's attributes: a method (fn) or a property; `kinds` says which stages have it. */
static const struct {
    const char *name;
    unsigned kinds;
    ax_builtin_fn fn;
    const char *doc;
} stage_attrs[] = {
    {"jaxpr", TRACED, NULL, NULL},
    {"fun_name", TRACED, NULL, NULL},
    {"lower", TRACED, traced_lower, "Traced.lower(): the Lowered program jit builds for it"},
    {"as_text", LOWERED | COMPILED, as_text,
     "as_text(): the typed IR (Lowered), or the C-like dump of the native code (Compiled)"},
    {"compile", LOWERED, lowered_compile,
     "Lowered.compile(): builds the native code now; a Compiled, called with arrays of the "
     "lowered types"},
    {"cost_analysis", LOWERED | COMPILED, cost_analysis,
     "cost_analysis(): {'flops', 'transcendentals', 'bytes accessed'} estimated from the IR "
     "(bytes as if unfused)"},
    {"in_tree", TRACED | LOWERED | COMPILED, NULL, NULL},
    {"out_tree", TRACED | LOWERED | COMPILED, NULL, NULL},
    {"in_avals", TRACED | LOWERED | COMPILED, NULL, NULL},
    {"args_info", TRACED | LOWERED | COMPILED, NULL, NULL},
    {"out_info", TRACED | LOWERED | COMPILED, NULL, NULL},
};

static ax_value *property(ax_interp *in, const stage *s, const char *name) {
    if (strcmp(name, "jaxpr") == 0) return ax_value_retain(s->l.jaxpr);
    if (strcmp(name, "fun_name") == 0) return ax_value_or_oom(in, ax_value_str(s->l.name));
    if (strcmp(name, "in_tree") == 0) return ax_value_retain(s->l.in_def);
    if (strcmp(name, "out_tree") == 0) return ax_value_retain(s->l.out_def);
    if (strcmp(name, "out_info") == 0) return out_info(in, s);
    /* in_avals, args_info: the arguments' types in their structure */
    return struct_tree(in, s->l.in_def, s->l.nflat, s->l.in_avals);
}

static ax_value *stage_getattr(ax_interp *in, ax_value *self, const char *name) {
    unsigned kind = (unsigned)stage_kind(self);
    for (size_t i = 0; i < sizeof stage_attrs / sizeof *stage_attrs; i++) {
        if (!(stage_attrs[i].kinds & kind) || strcmp(name, stage_attrs[i].name)) continue;
        if (!stage_attrs[i].fn) return property(in, self->obj.payload, name);
        return ax_value_or_oom(in, ax_value_builtin(name, stage_attrs[i].doc, stage_attrs[i].fn,
                                                    ax_value_retain(self)));
    }
    return NULL;
}

static void stage_each_attr(ax_interp *in, ax_value *self, void (*fn)(void *arg, const char *name),
                            void *arg) {
    (void)in;
    unsigned kind = (unsigned)stage_kind(self);
    for (size_t i = 0; i < sizeof stage_attrs / sizeof *stage_attrs; i++)
        if (stage_attrs[i].kinds & kind) fn(arg, stage_attrs[i].name);
}

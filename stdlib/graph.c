/* show_graph and graph_dot (see graph.h).
 *
 * The function is traced to typed IR as make_jaxpr does (so show_graph(grad(f), x) draws the
 * backward pass). For values and gradients the IR is instrumented: a copy whose extra outputs
 * are all its variables and where each float variable v is replaced by v + e_v, e_v a new
 * input. Linearizing that copy at e = 0 gives every value (the primal outputs) and, transposed
 * from the output's cotangent 1, the gradient of the output with respect to every variable
 * (the cotangents of the e_v): the picture a teacher draws for backpropagation. */
#include "graph.h"

#include <stdlib.h>
#include <string.h>

#include "../compiler/ad.h"
#include "../compiler/simplify.h"
#include "builtins_lib.h"
#include "display.h"
#include "external.h"
#include "flat_call.h"

/* ---------------------------------------------------------------- names from the source */

/* The closure behind fn: itself, or the function a transformation wraps (grad(f) is a
 * builtin whose data is (f, argnums, ...)). */
static ax_value *wrapped_closure(ax_value *fn) {
    for (int depth = 0; fn && depth < 8; depth++) {
        if (fn->kind == AX_V_FUNC) return fn;
        if (fn->kind != AX_V_BUILTIN || !fn->builtin->data) return NULL;
        ax_value *d = fn->builtin->data;
        fn = d->kind == AX_V_TUPLE && d->n > 0 ? d->items[0] : NULL;
    }
    return NULL;
}

/* "tanh", "grad(tanh)", "<lambda>". */
static void describe_fn(ax_strbuf *s, ax_value *fn, int depth) {
    if (fn->kind == AX_V_FUNC) {
        ax_strbuf_append(s, fn->fn->name ? fn->fn->name : "<lambda>");
    } else if (fn->kind == AX_V_BUILTIN) {
        ax_value *d = fn->builtin->data;
        ax_value *inner = d && d->kind == AX_V_TUPLE && d->n > 0 ? d->items[0] : NULL;
        ax_strbuf_append(s, fn->builtin->name);
        if (inner && depth < 8 && (inner->kind == AX_V_FUNC || inner->kind == AX_V_BUILTIN)) {
            ax_strbuf_append(s, "(");
            describe_fn(s, inner, depth + 1);
            ax_strbuf_append(s, ")");
        }
    } else {
        ax_strbuf_append(s, "f");
    }
}

typedef struct name_list {
    char **v;
    int n, cap;
} name_list;

static void name_add(name_list *l, const char *name) {
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 16;
        char **v = realloc(l->v, (size_t)cap * sizeof *v);
        if (!v) return;
        l->v = v;
        l->cap = cap;
    }
    char *copy = strdup(name);
    if (copy) l->v[l->n++] = copy;
}

static void names_free(name_list *l) {
    for (int i = 0; i < l->n; i++) free(l->v[i]);
    free(l->v);
}

static int compare_keys(const void *a, const void *b) {
    const ax_value *x = *(ax_value *const *)a, *y = *(ax_value *const *)b;
    return ax_dict_key_order(x, y);
}

/* The names of a pytree's leaves, in the order tree_flatten visits them: x, p['w'], t[0]. */
static void leaf_names(name_list *l, ax_value *v, const char *prefix, int depth) {
    char buf[512];
    if (depth > 16) return;
    if (v->kind == AX_V_TUPLE || v->kind == AX_V_LIST) {
        for (int i = 0; i < v->n; i++) {
            snprintf(buf, sizeof buf, "%s[%d]", prefix, i);
            leaf_names(l, v->items[i], buf, depth + 1);
        }
    } else if (v->kind == AX_V_DICT) {
        ax_value **keys = malloc((size_t)(v->n ? v->n : 1) * sizeof *keys);
        if (!keys) return;
        memcpy(keys, v->keys, (size_t)v->n * sizeof *keys);
        qsort(keys, (size_t)v->n, sizeof *keys, compare_keys);
        for (int i = 0; i < v->n; i++) {
            ax_strbuf k;
            ax_strbuf_init(&k);
            ax_value_format_nested(&k, keys[i]);
            snprintf(buf, sizeof buf, "%s[%s]", prefix, k.data ? k.data : "?");
            ax_strbuf_free(&k);
            leaf_names(l, ax_dict_lookup(v, keys[i]), buf, depth + 1);
        }
        free(keys);
    } else if (v->kind != AX_V_NONE) {
        name_add(l, prefix);
    }
}

/* The inputs' names: the parameters of the function, with the paths of pytree leaves. */
static void input_names(name_list *l, ax_value *fn, const ax_args *fa) {
    ax_value *c = wrapped_closure(fn);
    const ax_node *def = c ? c->fn->def : NULL;
    for (int i = 0; i < fa->n; i++) {
        char base[128];
        if (def && i < def->nparams && !def->params[i].star && !def->params[i].star2)
            snprintf(base, sizeof base, "%s", def->params[i].name);
        else
            snprintf(base, sizeof base, "arg%d", i);
        leaf_names(l, fa->pos[i], base, 0);
    }
}

/* The outputs' names: the names the function's result is made of (`y`, `(loss, acc)`), else
 * the function's own name. */
static void output_names(name_list *l, ax_value *fn, int nout) {
    const ax_node *result = NULL;
    if (fn->kind == AX_V_FUNC) { /* a transformed function returns something else */
        const ax_node *def = fn->fn->def;
        if (def->kind == AX_N_LAMBDA) {
            result = def->a;
        } else if (def->body.n > 0) {
            const ax_node *last = def->body.items[def->body.n - 1];
            if (last->kind == AX_N_EXPR || last->kind == AX_N_RETURN) result = last->a;
        }
    }
    if (result && result->kind == AX_N_NAME && nout == 1) {
        name_add(l, result->text);
        return;
    }
    if (result && result->kind == AX_N_TUPLE && result->items.n == nout) {
        bool all = true;
        for (int i = 0; i < nout; i++) all = all && result->items.items[i]->kind == AX_N_NAME;
        for (int i = 0; all && i < nout; i++) name_add(l, result->items.items[i]->text);
        if (all) return;
    }
    ax_strbuf s;
    ax_strbuf_init(&s);
    describe_fn(&s, fn, 0);
    for (int i = 0; i < nout; i++) {
        char buf[300];
        if (nout == 1)
            snprintf(buf, sizeof buf, "%s", s.data ? s.data : "out");
        else
            snprintf(buf, sizeof buf, "%s[%d]", s.data ? s.data : "out", i);
        name_add(l, buf);
    }
    ax_strbuf_free(&s);
}

/* ---------------------------------------------------------------- values and gradients */

/* The instrumented copy of ir (see the top of the file). eps[v] is the input index of e_v,
 * or -1 when v is not perturbed (integers, booleans). Outputs: ir's, then every variable. */
static ax_ir *instrumented(ax_ctx *cx, const ax_ir *ir, int *eps) {
    ax_ir_builder *b = ax_ir_builder_new();
    int *map = malloc((size_t)(ir->nvars ? ir->nvars : 1) * sizeof *map);
    int *eps_var = malloc((size_t)(ir->nvars ? ir->nvars : 1) * sizeof *eps_var);
    ax_ir_atom *outs = malloc((size_t)(ir->nout + ir->nvars + 1) * sizeof *outs);
    ax_ir_atom *in = NULL;
    ax_aval *types = NULL;
    int maxin = 1, maxout = 1, nin = ir->nin;
    for (int k = 0; k < ir->neqns; k++) {
        if (ir->eqns[k].nin > maxin) maxin = ir->eqns[k].nin;
        if (ir->eqns[k].nout > maxout) maxout = ir->eqns[k].nout;
    }
    in = malloc((size_t)maxin * sizeof *in);
    types = malloc((size_t)maxout * sizeof *types);
    if (!b || !map || !eps_var || !outs || !in || !types) goto fail;
    for (int v = 0; v < ir->nvars; v++) map[v] = -1;
    for (int i = 0; i < ir->nin; i++)
        if (ax_ir_add_input(b, &ir->types[ir->invars[i]]) < 0) goto fail;
    for (int v = 0; v < ir->nvars; v++) { /* the perturbation inputs, after the real ones */
        eps[v] = eps_var[v] = -1;
        if (!ax_dtype_is_float(ir->types[v].dtype)) continue;
        if ((eps_var[v] = ax_ir_add_input(b, &ir->types[v])) < 0) goto fail;
        eps[v] = nin++;
    }
    /* v' = v + e_v, and later uses of v read v' */
#define PERTURB(v, fresh)                                                                          \
    do {                                                                                           \
        map[v] = (fresh);                                                                          \
        if (eps_var[v] >= 0) {                                                                     \
            ax_ir_atom sum_in[2] = {{map[v], NULL}, {eps_var[v], NULL}};                           \
            int sum;                                                                               \
            if (ax_ir_add_eqn(b, AX_P_ADD, NULL, 2, sum_in, 1, &ir->types[v], &sum, 0, NULL) < 0)  \
                goto fail;                                                                         \
            map[v] = sum;                                                                          \
        }                                                                                          \
    } while (0)
    const ax_ir *built = ax_ir_builder_peek(b);
    for (int i = 0; i < ir->nin; i++) PERTURB(ir->invars[i], built->invars[i]);
    for (int i = 0; i < ir->nconsts; i++) {
        int c = ax_ir_add_const(b, ir->consts[i]);
        if (c < 0) goto fail;
        PERTURB(ir->constvars[i], c);
    }
    for (int k = 0; k < ir->neqns; k++) {
        const ax_ir_eqn *e = &ir->eqns[k];
        for (int i = 0; i < e->nin; i++)
            in[i] = e->in[i].var >= 0 ? (ax_ir_atom){map[e->in[i].var], NULL} : e->in[i];
        for (int i = 0; i < e->nout; i++) types[i] = ir->types[e->out[i]];
        int out[16];
        if (e->nout > 16 || ax_ir_add_eqn(b, e->prim, &e->params, e->nin, in, e->nout, types, out,
                                          e->nsub, e->sub) < 0)
            goto fail;
        for (int i = 0; i < e->nout; i++) PERTURB(e->out[i], out[i]);
    }
#undef PERTURB
    int n = 0;
    for (int i = 0; i < ir->nout; i++)
        outs[n++] = ir->outs[i].var >= 0 ? (ax_ir_atom){map[ir->outs[i].var], NULL} : ir->outs[i];
    for (int v = 0; v < ir->nvars; v++) {
        if (map[v] < 0) goto fail; /* every variable is defined by an input, constant or eqn */
        outs[n++] = (ax_ir_atom){map[v], NULL};
    }
    ax_ir *result = ax_ir_builder_finish(b, n, outs);
    b = NULL;
    if (!result) ax_error_oom(cx);
    free(map), free(eps_var), free(outs), free(in), free(types);
    return result;
fail:
    ax_ir_builder_free(b);
    free(map), free(eps_var), free(outs), free(in), free(types);
    return ax_error_oom(cx);
}

typedef struct graph_eval {
    ax_array **vals;  /* per variable of the IR (new references), or NULL */
    ax_array **grads; /* per variable: d output / d variable, or NULL */
} graph_eval;

static void graph_eval_free(graph_eval *g, int nvars) {
    ax_flat_release_arrays(g->vals, g->vals ? nvars : 0);
    ax_flat_release_arrays(g->grads, g->grads ? nvars : 0);
}

static int check_scalar_output(ax_ctx *cx, const ax_ir *ir) {
    ax_aval t;
    if (ir->nout == 1) {
        if (ir->outs[0].var >= 0)
            t = ir->types[ir->outs[0].var];
        else
            ax_aval_of(&t, ir->outs[0].lit);
        if (t.ndim == 0 && ax_dtype_is_float(t.dtype)) return 0;
    }
    ax_error(cx, AX_ERR_TYPE,
             "show_graph(..., grads=True) needs a function with one float scalar output (the "
             "gradients are those of that output), but it has %d output%s",
             ir->nout, ir->nout == 1 ? " that is not a float scalar" : "s");
    return -1;
}

/* Every variable's value (and gradient when grads) for the given inputs. */
static int evaluate(ax_ctx *cx, const ax_ir *ir, ax_array **args, bool grads, graph_eval *g) {
    if (grads && check_scalar_output(cx, ir) < 0) return -1;
    int *eps = malloc((size_t)(ir->nvars ? ir->nvars : 1) * sizeof *eps);
    ax_ir *inst = eps ? instrumented(cx, ir, eps) : NULL;
    ax_array **primals = inst ? calloc((size_t)inst->nin + 1, sizeof *primals) : NULL;
    ax_array **outs = NULL, **cts = NULL, **ct_in = NULL;
    ax_linear *lin = NULL;
    int nout = 0, rc = -1;
    g->vals = calloc((size_t)ir->nvars + 1, sizeof *g->vals);
    if (!inst || !primals || !g->vals) goto done;
    for (int i = 0; i < ir->nin; i++) primals[i] = ax_array_retain(args[i]);
    for (int v = 0; v < ir->nvars; v++)
        if (eps[v] >= 0 && !(primals[eps[v]] = ax_array_zeros(
                                 cx, ir->types[v].dtype, ir->types[v].ndim, ir->types[v].shape)))
            goto done;
    if (grads) {
        if (ax_ad_linearize(cx, ax_ir_flat_fn, inst, inst->nin, primals, &nout, &outs, &lin))
            goto done;
        cts = calloc((size_t)nout + 1, sizeof *cts);
        ct_in = calloc((size_t)inst->nin + 1, sizeof *ct_in);
        g->grads = calloc((size_t)ir->nvars + 1, sizeof *g->grads);
        if (!cts || !ct_in || !g->grads) goto done;
        if (!(cts[0] = ax_array_scalar(cx, outs[0]->dtype, 1.0))) goto done;
        if (ax_linear_transpose(cx, lin, cts, ct_in)) goto done;
        for (int v = 0; v < ir->nvars; v++)
            if (eps[v] >= 0) g->grads[v] = ax_array_retain(ct_in[eps[v]]);
    } else {
        nout = inst->nout;
        if (!(outs = calloc((size_t)nout + 1, sizeof *outs))) goto done;
        if (ax_ir_eval(cx, inst, primals, outs)) goto done;
    }
    for (int v = 0; v < ir->nvars; v++) g->vals[v] = ax_array_retain(outs[ir->nout + v]);
    rc = 0;
done:
    if (rc && !ax_error_pending(cx)) ax_error_oom(cx);
    ax_flat_release_arrays(outs, outs ? nout : 0);
    ax_flat_release_arrays(cts, cts ? nout : 0);
    ax_flat_release_arrays(ct_in, ct_in && inst ? inst->nin : 0);
    ax_flat_release_arrays(primals, primals ? inst->nin : 0);
    ax_linear_free(lin);
    ax_ir_release(inst);
    free(eps);
    return rc;
}

/* ---------------------------------------------------------------- DOT */

typedef struct dot_writer {
    ax_strbuf s;
    int nodes; /* node ids: n0, n1, ... */
    int clusters;
    const graph_eval *eval; /* for the top-level IR only */
} dot_writer;

/* Text inside a graphviz HTML-like label. */
static void html_text(ax_strbuf *s, const char *t) {
    for (; *t; t++) {
        if (*t == '<')
            ax_strbuf_append(s, "&lt;");
        else if (*t == '>')
            ax_strbuf_append(s, "&gt;");
        else if (*t == '&')
            ax_strbuf_append(s, "&amp;");
        else if (*t == '"')
            ax_strbuf_append(s, "&quot;");
        else if (*t == '\n')
            ax_strbuf_append(s, " ");
        else
            ax_strbuf_appendf(s, "%c", *t);
    }
}

/* A value as a label shows it: NumPy's str for small arrays, a summary for large ones. */
static void value_text(ax_strbuf *s, const ax_array *a) {
    ax_strbuf t;
    ax_strbuf_init(&t);
    if (a->size <= 6) {
        ax_format_array(&t, a);
    } else {
        double lo = ax_array_get_f64(a, 0), hi = lo, sum = 0;
        for (int64_t i = 0; i < a->size; i++) {
            double v = ax_array_get_f64(a, i);
            lo = v < lo ? v : lo, hi = v > hi ? v : hi, sum += v;
        }
        ax_strbuf_appendf(&t, "mean %.4g, min %.4g, max %.4g", sum / (double)a->size, lo, hi);
    }
    html_text(s, t.data ? t.data : "");
    ax_strbuf_free(&t);
}

static void type_text(ax_strbuf *s, const ax_aval *t) {
    char buf[160];
    ax_type_format(buf, sizeof buf, t->dtype, t->ndim, t->shape);
    html_text(s, buf);
}

/* The value and gradient lines of variable v (top level only). */
static void value_lines(dot_writer *w, int v) {
    if (!w->eval) return;
    if (w->eval->vals && w->eval->vals[v]) {
        ax_strbuf_append(&w->s, "<BR/><FONT COLOR=\"#1f5fbf\">value ");
        value_text(&w->s, w->eval->vals[v]);
        ax_strbuf_append(&w->s, "</FONT>");
    }
    if (w->eval->grads && w->eval->grads[v]) {
        ax_strbuf_append(&w->s, "<BR/><FONT COLOR=\"#c0392b\">grad ");
        value_text(&w->s, w->eval->grads[v]);
        ax_strbuf_append(&w->s, "</FONT>");
    }
}

/* Where each variable comes from: node id and, for multi-output equations, the output. */
typedef struct source {
    int node;
    int port; /* -1: the node's only output */
} source;

static void edge(dot_writer *w, source from, int to, const char *label) {
    ax_strbuf_appendf(&w->s, "  n%d -> n%d", from.node, to);
    if (from.port >= 0 || label) {
        ax_strbuf_append(&w->s, " [label=\"");
        if (from.port >= 0) ax_strbuf_appendf(&w->s, "%d%s", from.port, label ? " " : "");
        if (label) ax_strbuf_append(&w->s, label);
        ax_strbuf_append(&w->s, "\"]");
    }
    ax_strbuf_append(&w->s, ";\n");
}

static int input_node(dot_writer *w, const ax_ir *ir, int v, const char *name, bool top) {
    int id = w->nodes++;
    ax_strbuf_appendf(&w->s,
                      "  n%d [shape=box, style=\"rounded,filled\", fillcolor=\"%s\", "
                      "label=<<B>",
                      id, top ? "#dbe9f9" : "#eef3fa");
    html_text(&w->s, name);
    ax_strbuf_append(&w->s, "</B><BR/><FONT POINT-SIZE=\"9\">");
    type_text(&w->s, &ir->types[v]);
    ax_strbuf_append(&w->s, "</FONT>");
    if (top) value_lines(w, v);
    ax_strbuf_append(&w->s, ">];\n");
    return id;
}

static int write_ir(dot_writer *w, const ax_ir *ir, char **in_names, char **out_names, bool top);

/* A sub-program as a cluster beside its equation, joined to it by a dashed edge. */
static int write_cluster(dot_writer *w, const ax_ir *sub, const char *label, int eqn_node) {
    int k = w->clusters++;
    ax_strbuf_appendf(&w->s, "  subgraph cluster_%d {\n  label=\"", k);
    html_text(&w->s, label);
    ax_strbuf_append(&w->s, "\"; style=\"rounded,dashed\"; color=\"#8899aa\"; fontsize=10;\n");
    int first = w->nodes;
    if (write_ir(w, sub, NULL, NULL, false) < 0) return -1;
    ax_strbuf_append(&w->s, "  }\n");
    if (w->nodes > first)
        ax_strbuf_appendf(&w->s, "  n%d -> n%d [style=dashed, arrowhead=none, lhead=cluster_%d];\n",
                          eqn_node, first, k);
    return 0;
}

static bool commutative(ax_prim p) {
    return ax_prim_get(p)->flags & AX_PRIM_COMMUTATIVE;
}

static const char *operand_label(int i) {
    static const char *const labels[] = {"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"};
    return i < 10 ? labels[i] : "";
}

static int write_eqn(dot_writer *w, const ax_ir *ir, const ax_ir_eqn *e, source *src, bool top) {
    int id = w->nodes++;
    const ax_prim_info *info = ax_prim_get(e->prim);
    ax_strbuf params;
    ax_strbuf_init(&params);
    ax_ir_format_params(&params, e->prim, &e->params);
    bool higher =
        e->nsub > 0 || (e->prim == AX_P_CUSTOM_CALL && e->params.cb && e->params.cb->body);
    ax_strbuf_appendf(&w->s, "  n%d [shape=box, style=\"filled\", fillcolor=\"%s\", label=<<B>", id,
                      higher ? "#fdf1d8" : "#f2f2f2");
    html_text(&w->s, info ? info->name : "?");
    ax_strbuf_append(&w->s, "</B>");
    if (params.data && params.len <= 40) {
        ax_strbuf_append(&w->s, "<FONT POINT-SIZE=\"9\">");
        html_text(&w->s, params.data);
        ax_strbuf_append(&w->s, "</FONT>");
    }
    bool literal = false;
    for (int i = 0; i < e->nin; i++) literal = literal || e->in[i].var < 0;
    if (literal) { /* the operands, literals written out: "(·, -2.0)" */
        ax_strbuf_append(&w->s, "<FONT POINT-SIZE=\"10\"> (");
        for (int i = 0; i < e->nin; i++) {
            if (i) ax_strbuf_append(&w->s, ", ");
            if (e->in[i].var >= 0)
                ax_strbuf_append(&w->s, "\xc2\xb7");
            else
                value_text(&w->s, e->in[i].lit);
        }
        ax_strbuf_append(&w->s, ")</FONT>");
    }
    for (int i = 0; i < e->nout; i++) {
        ax_strbuf_append(&w->s, "<BR/><FONT POINT-SIZE=\"9\">");
        if (e->nout > 1) ax_strbuf_appendf(&w->s, "%d: ", i);
        type_text(&w->s, &ir->types[e->out[i]]);
        ax_strbuf_append(&w->s, "</FONT>");
        if (top) value_lines(w, e->out[i]);
    }
    ax_strbuf_append(&w->s, ">];\n");
    ax_strbuf_free(&params);
    /* the order of two operands matters for sub, div, pow, ...: the edges say which is which */
    int nvar = 0;
    for (int i = 0; i < e->nin; i++) nvar += e->in[i].var >= 0;
    bool ordered = nvar > 1 && !commutative(e->prim);
    for (int i = 0; i < e->nin; i++)
        if (e->in[i].var >= 0)
            edge(w, src[e->in[i].var], id,
                 !ordered      ? NULL
                 : e->nin == 2 ? (i ? "rhs" : "lhs")
                               : operand_label(i));
    for (int i = 0; i < e->nout; i++) src[e->out[i]] = (source){id, e->nout > 1 ? i : -1};
    for (int k = 0; k < e->nsub; k++)
        if (write_cluster(w, e->sub[k], info ? info->name : "body", id) < 0) return -1;
    if (e->prim == AX_P_CUSTOM_CALL && e->params.cb && e->params.cb->body) {
        char label[160];
        snprintf(label, sizeof label, "%s (custom rule)",
                 e->params.cb->name ? e->params.cb->name : "custom_call");
        if (write_cluster(w, e->params.cb->body, label, id) < 0) return -1;
    }
    return 0;
}

/* The nodes and edges of an IR. Top level: inputs and outputs named, values shown. */
static int write_ir(dot_writer *w, const ax_ir *ir, char **in_names, char **out_names, bool top) {
    source *src = calloc((size_t)ir->nvars + 1, sizeof *src);
    if (!src) return -1;
    for (int i = 0; i < ir->nin; i++) {
        char name[32];
        if (!in_names) snprintf(name, sizeof name, "in %d", i);
        src[ir->invars[i]] =
            (source){input_node(w, ir, ir->invars[i], in_names ? in_names[i] : name, top), -1};
    }
    for (int i = 0; i < ir->nconsts; i++) {
        int id = w->nodes++;
        ax_strbuf_appendf(&w->s,
                          "  n%d [shape=box, style=\"rounded,dashed\", label=<const<BR/>"
                          "<FONT POINT-SIZE=\"9\">",
                          id);
        type_text(&w->s, &ir->types[ir->constvars[i]]);
        ax_strbuf_append(&w->s, "</FONT>");
        if (top) value_lines(w, ir->constvars[i]);
        ax_strbuf_append(&w->s, ">];\n");
        src[ir->constvars[i]] = (source){id, -1};
    }
    for (int k = 0; k < ir->neqns; k++)
        if (write_eqn(w, ir, &ir->eqns[k], src, top) < 0) {
            free(src);
            return -1;
        }
    for (int i = 0; i < ir->nout; i++) {
        int id = w->nodes++;
        char name[32];
        if (!out_names) snprintf(name, sizeof name, "out %d", i);
        ax_strbuf_appendf(&w->s,
                          "  n%d [shape=box, style=\"rounded,filled\", fillcolor=\"%s\", "
                          "label=<<B>",
                          id, top ? "#d9f2dc" : "#eef7ef");
        html_text(&w->s, out_names ? out_names[i] : name);
        ax_strbuf_append(&w->s, "</B>>];\n");
        if (ir->outs[i].var >= 0) {
            edge(w, src[ir->outs[i].var], id, NULL);
        } else {
            int lit = w->nodes++;
            ax_strbuf_appendf(&w->s, "  n%d [shape=plaintext, fontsize=10, label=<", lit);
            value_text(&w->s, ir->outs[i].lit);
            ax_strbuf_appendf(&w->s, ">];\n  n%d -> n%d;\n", lit, id);
        }
    }
    free(src);
    return 0;
}

static char *dot_text(const ax_ir *ir, const graph_eval *eval, char **in_names, char **out_names,
                      const char *title) {
    dot_writer w = {.eval = eval};
    ax_strbuf_init(&w.s);
    ax_strbuf_append(&w.s, "digraph G {\n  rankdir=TB; compound=true; newrank=true;\n"
                           "  graph [fontname=\"sans\", fontsize=11, labelloc=t, label=\"");
    html_text(&w.s, title);
    ax_strbuf_append(&w.s, "\"];\n  node [fontname=\"sans\", fontsize=11, color=\"#777777\"];\n"
                           "  edge [color=\"#555555\", arrowsize=0.7, fontsize=9];\n");
    if (write_ir(&w, ir, in_names, out_names, true) < 0) {
        ax_strbuf_free(&w.s);
        return NULL;
    }
    ax_strbuf_append(&w.s, "}\n");
    return w.s.data;
}

/* ---------------------------------------------------------------- the builtins */

typedef struct graph_request {
    ax_value *fn;
    ax_args fargs; /* the function's arguments */
    bool values, grads;
    ax_value *path;
} graph_request;

static bool read_request(ax_interp *in, const ax_args *a, const char *fname, bool with_path,
                         graph_request *r) {
    static const char *const kw_path[] = {"values", "grads", "path", NULL};
    static const char *const kw[] = {"values", "grads", NULL};
    if (!ax_bi_keywords(in, a, fname, with_path ? kw_path : kw)) return false;
    if (a->n < 1) {
        ax_error(in->cx, AX_ERR_TYPE, "%s() needs a function and its arguments: %s(f, *args)",
                 fname, fname);
        return false;
    }
    r->fn = a->pos[0];
    r->fargs = (ax_args){.n = a->n - 1, .pos = a->pos + 1};
    r->path = ax_bi_kwarg(a, "path");
    return ax_bi_bool(in, ax_bi_kwarg(a, "values"), "values", false, &r->values) &&
           ax_bi_bool(in, ax_bi_kwarg(a, "grads"), "grads", false, &r->grads);
}

/* The DOT text of a request (malloc'd), and in *title what it shows. */
static char *graph_of(ax_interp *in, const graph_request *r, char *title, size_t cap) {
    ax_ctx *cx = in->cx;
    flat_call fc;
    int traced[32], n = r->fargs.n < 32 ? r->fargs.n : 32, nout = 0;
    for (int i = 0; i < n; i++) traced[i] = i;
    if (r->fargs.n > 32) return ax_error(cx, AX_ERR_VALUE, "show_graph: too many arguments");
    name_list ins = {0}, outs = {0};
    graph_eval eval = {0};
    ax_ir *ir = NULL, *traced_ir = NULL;
    char *dot = NULL;
    ax_aval *types = NULL;
    if (ax_flat_call_init(&fc, in, "show_graph", r->fn, &r->fargs, n, traced, false)) goto done;
    types = calloc((size_t)fc.nflat + 1, sizeof *types);
    if (!types) {
        ax_error_oom(cx);
        goto done;
    }
    for (int i = 0; i < fc.nflat; i++) ax_aval_of(&types[i], fc.flat[i]);
    traced_ir = ax_trace_to_ir(cx, ax_flat_call_fn, &fc, fc.nflat, types, &nout);
    if (!traced_ir || !(ir = ax_simplify(cx, traced_ir))) goto done;
    if ((r->values || r->grads) && evaluate(cx, ir, fc.flat, r->grads, &eval) < 0) goto done;
    input_names(&ins, r->fn, &r->fargs);
    output_names(&outs, r->fn, ir->nout);
    ax_strbuf t;
    ax_strbuf_init(&t);
    describe_fn(&t, r->fn, 0);
    snprintf(title, cap, "%s", t.data ? t.data : "f");
    ax_strbuf_free(&t);
    dot = dot_text(ir, &eval, ins.n == ir->nin ? ins.v : NULL, outs.n == ir->nout ? outs.v : NULL,
                   title);
    if (!dot) ax_error_oom(cx);
done:
    if (ir) graph_eval_free(&eval, ir->nvars);
    names_free(&ins);
    names_free(&outs);
    free(types);
    ax_ir_release(ir);
    ax_ir_release(traced_ir);
    ax_flat_call_free(&fc);
    return dot;
}

/* Runs dot on the text: the picture's bytes in `format` (svg, png, pdf). */
static char *render_dot(ax_ctx *cx, const char *dot, const char *format, size_t *len) {
    char *dir = ax_ext_tmpdir_new(cx);
    char *src = dir ? ax_ext_join(cx, dir, "graph.dot") : NULL;
    char *out = dir ? ax_ext_join(cx, dir, "graph.out") : NULL;
    char *log = dir ? ax_ext_join(cx, dir, "dot.log") : NULL;
    char *data = NULL, flag[16];
    snprintf(flag, sizeof flag, "-T%s", format);
    if (src && out && log && ax_ext_write_file(cx, src, dot, strlen(dot)) == 0) {
        char *argv[] = {(char *)"dot", flag, src, (char *)"-o", out, NULL};
        if (ax_ext_run(cx, &ax_ext_dot, argv, log) == 0) data = ax_ext_read_file(cx, out, len);
    }
    free(src), free(out), free(log);
    ax_ext_tmpdir_free(dir);
    return data;
}

static const char *graph_format(const char *path) {
    const char *dot = strrchr(path, '.');
    static const char *const formats[] = {"svg", "png", "pdf", "dot"};
    for (size_t i = 0; dot && i < 4; i++)
        if (!strcmp(dot + 1, formats[i])) return formats[i];
    return NULL;
}

static ax_value *b_show_graph(ax_interp *in, ax_value *self, const ax_args *a) {
    (void)self;
    graph_request r;
    if (!read_request(in, a, "show_graph", true, &r)) return NULL;
    const char *format = "svg";
    if (r.path && r.path->kind != AX_V_NONE) {
        if (r.path->kind != AX_V_STR || !(format = graph_format(r.path->str)))
            return ax_error(in->cx, AX_ERR_VALUE,
                            "show_graph(): path must name a .svg, .png, .pdf or .dot file");
    }
    char title[256];
    char *dot = graph_of(in, &r, title, sizeof title);
    if (!dot) return NULL;
    size_t len = strlen(dot);
    char *data = strcmp(format, "dot") ? render_dot(in->cx, dot, format, &len) : dot;
    if (data != dot) free(dot);
    if (!data) return NULL;
    int rc;
    if (r.path && r.path->kind == AX_V_STR) {
        rc = ax_ext_write_file(in->cx, r.path->str, data, len);
        free(data);
    } else {
        char alt[300];
        snprintf(alt, sizeof alt, "graph of %s", title);
        rc = ax_display_show_take(in, "graph", format, data, len, alt);
    }
    return rc == 0 ? ax_none() : NULL;
}

static ax_value *b_graph_dot(ax_interp *in, ax_value *self, const ax_args *a) {
    (void)self;
    graph_request r;
    if (!read_request(in, a, "graph_dot", false, &r)) return NULL;
    char title[256];
    char *dot = graph_of(in, &r, title, sizeof title);
    if (!dot) return NULL;
    ax_value *v = ax_value_str(dot);
    free(dot);
    return v ? v : ax_error_oom(in->cx);
}

const ax_builtin_def ax_builtins_graph[] = {
    {"show_graph", b_show_graph,
     "show_graph(f, *args, values=False, grads=False, path=None): draw the computation graph "
     "of f at args with graphviz (in a notebook: inline; else a .svg file whose path is "
     "printed)",
     0},
    {"graph_dot", b_graph_dot,
     "graph_dot(f, *args, values=False, grads=False): the DOT text show_graph draws", 0},
    {NULL, NULL, NULL, 0},
};

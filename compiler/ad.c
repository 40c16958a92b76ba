/* Forward and reverse mode (see ad.h). */
#include "ad.h"

#include <stdlib.h>
#include <string.h>

#include "ad_rules.h"

/* ---------------------------------------------------------------- the JVP trace */

typedef struct jvp_pair {
    ax_array *primal, *tangent; /* tangent NULL = zero */
} jvp_pair;

static void pair_free(void *data) {
    jvp_pair *p = data;
    ax_array_release(p->primal);
    ax_array_release(p->tangent);
    free(p);
}

/* A tracer carrying (primal, tangent); takes both references. */
static ax_array *jvp_tracer(ax_ctx *cx, ax_trace *t, ax_array *primal, ax_array *tangent) {
    jvp_pair *p = malloc(sizeof *p);
    if (!p) {
        ax_array_release(primal);
        ax_array_release(tangent);
        return ax_error_oom(cx);
    }
    p->primal = primal;
    p->tangent = tangent;
    ax_aval type;
    ax_aval_of(&type, primal);
    return ax_tracer_new(cx, t, &type, p, pair_free);
}

static ax_jvp_rule jvp_rule_of(ax_ctx *cx, ax_prim p) {
    const ax_prim_info *info = ax_prim_get(p);
    if (info->jvp) return info->jvp;
    if (info->flags & AX_PRIM_NONDIFF) return ax_jvp_zero;
    ax_error(cx, AX_ERR_TYPE, "cannot differentiate %s: it has no derivative rule", info->name);
    return NULL;
}

static int jvp_process(ax_ctx *cx, ax_trace *trace, ax_prim p, int nin, ax_array **in,
                       const ax_params *params, ax_array **out) {
    int nout = ax_prim_nout(p, params);
    ax_array *small[16] = {0};
    size_t n = 2 * (size_t)nin + 2 * (size_t)nout;
    ax_array **buf = n <= 16 ? small : calloc(n, sizeof *buf);
    if (!buf) return ax_error_oom(cx), -1;
    ax_array **prim = buf, **tan = buf + nin, **o = buf + 2 * nin, **to = o + nout;
    bool any = false;
    for (int i = 0; i < nin; i++) {
        jvp_pair *pair = ax_tracer_data(in[i], trace);
        prim[i] = pair ? pair->primal : in[i];
        tan[i] = pair ? pair->tangent : NULL;
        any |= tan[i] != NULL;
    }
    int rc;
    ax_jvp_rule rule = NULL;
    if (!any) {
        rc = ax_bind(cx, p, nin, prim, params, out);
    } else if (!(rule = jvp_rule_of(cx, p))) {
        rc = -1;
    } else if (!(rc = rule(cx, p, params, nin, prim, tan, o, to))) {
        for (int j = 0; j < nout; j++) {
            if (to[j] && !rc) {
                out[j] = jvp_tracer(cx, trace, o[j], to[j]);
                if (!out[j]) rc = -1;
            } else if (!rc) {
                out[j] = o[j];
            } else {
                ax_array_release(o[j]);
                ax_array_release(to[j]);
            }
        }
        for (int j = 0; rc && j < nout; j++) {
            ax_array_release(out[j]);
            out[j] = NULL;
        }
    }
    if (buf != small) free(buf);
    return rc;
}

static ax_array *jvp_concrete(ax_trace *trace, ax_array *tracer) {
    jvp_pair *pair = ax_tracer_data(tracer, trace);
    return pair ? pair->primal : NULL;
}

ax_trace *ax_jvp_trace_of(ax_ctx *cx, int n, ax_array **in, ax_array **primals,
                          ax_array **tangents) {
    ax_trace *t = NULL;
    if (ax_trace_find(cx, n, in, &t) || !t || t->process_primitive != jvp_process) return NULL;
    for (int i = 0; i < n; i++) {
        jvp_pair *pair = ax_tracer_data(in[i], t);
        primals[i] = pair ? pair->primal : in[i];
        tangents[i] = pair ? pair->tangent : NULL;
    }
    return t;
}

ax_array *ax_jvp_tracer_new(ax_ctx *cx, ax_trace *t, ax_array *primal, ax_array *tangent) {
    if (!tangent) return primal;
    return jvp_tracer(cx, t, primal, tangent);
}

static void jvp_trace_init(ax_trace *t) {
    memset(t, 0, sizeof *t);
    t->name = "jvp";
    t->process_primitive = jvp_process;
    t->concrete_value = jvp_concrete;
}

/* Runs fn with inputs wrapped as JVP tracers; unpacks outputs into primal and tangent parts
 * (tangent NULL = zero). */
static int run_jvp(ax_ctx *cx, ax_flat_fn fn, void *closure, int nin, ax_array **primals,
                   ax_array **tangents, int *nout, ax_array ***pout, ax_array ***tout) {
    ax_trace trace;
    jvp_trace_init(&trace);
    if (ax_trace_push(cx, &trace)) return -1;
    ax_array **in = calloc((size_t)(nin ? nin : 1), sizeof *in), **out = NULL;
    int rc = in ? 0 : (ax_error_oom(cx), -1);
    for (int i = 0; i < nin && !rc; i++) {
        in[i] = tangents[i] ? jvp_tracer(cx, &trace, ax_array_retain(primals[i]),
                                         ax_array_retain(tangents[i]))
                            : ax_array_retain(primals[i]);
        if (!in[i]) rc = -1;
    }
    if (!rc) rc = fn(cx, closure, nin, in, nout, &out);
    for (int i = 0; in && i < nin; i++) ax_array_release(in[i]);
    free(in);
    ax_trace_pop(cx, &trace);
    if (rc) return -1;
    *pout = calloc((size_t)(*nout ? *nout : 1), sizeof **pout);
    *tout = calloc((size_t)(*nout ? *nout : 1), sizeof **tout);
    for (int j = 0; j < *nout; j++) {
        jvp_pair *pair = ax_tracer_data(out[j], &trace);
        if (*pout && *tout) {
            (*pout)[j] = ax_array_retain(pair ? pair->primal : out[j]);
            (*tout)[j] = pair ? ax_array_retain(pair->tangent) : NULL;
        }
        ax_array_release(out[j]);
    }
    free(out);
    if (!*pout || !*tout) {
        free(*pout);
        free(*tout);
        *pout = *tout = NULL; /* the caller releases what they hold */
        return ax_error_oom(cx), -1;
    }
    return 0;
}

static ax_array *zeros_of(ax_ctx *cx, const ax_aval *t) {
    ax_array *z = ax_array_zeros(cx, t->dtype, t->ndim, t->shape);
    return z;
}

int ax_ad_jvp_symbolic(ax_ctx *cx, ax_flat_fn fn, void *closure, int nin, ax_array **primals,
                       ax_array **tangents, int *nout, ax_array ***out, ax_array ***tout) {
    return run_jvp(cx, fn, closure, nin, primals, tangents, nout, out, tout);
}

int ax_ad_jvp(ax_ctx *cx, ax_flat_fn fn, void *closure, int nin, ax_array **primals,
              ax_array **tangents, int *nout, ax_array ***out, ax_array ***tout) {
    if (run_jvp(cx, fn, closure, nin, primals, tangents, nout, out, tout)) return -1;
    for (int j = 0; j < *nout; j++) {
        if ((*tout)[j]) continue;
        ax_aval t;
        ax_aval_of(&t, (*out)[j]);
        if (!((*tout)[j] = zeros_of(cx, &t))) {
            for (int k = 0; k < *nout; k++) {
                ax_array_release((*out)[k]);
                ax_array_release((*tout)[k]);
            }
            free(*out);
            free(*tout);
            return -1;
        }
    }
    return 0;
}

/* ---------------------------------------------------------------- linearize */

void ax_linear_free(ax_linear *lin) {
    if (!lin) return;
    ax_ir_release(lin->ir);
    free(lin->diff_in);
    free(lin->in_types);
    free(lin->out_types);
    free(lin);
}

static ax_linear *linear_new(int nin) {
    ax_linear *lin = calloc(1, sizeof *lin);
    if (!lin) return NULL;
    lin->nin = nin;
    lin->diff_in = calloc((size_t)nin + 1, sizeof *lin->diff_in);
    lin->in_types = calloc((size_t)nin + 1, sizeof *lin->in_types);
    if (!lin->diff_in || !lin->in_types) {
        ax_linear_free(lin);
        return NULL;
    }
    return lin;
}

int ax_ad_linearize(ax_ctx *cx, ax_flat_fn fn, void *closure, int nin, ax_array **primals,
                    int *nout, ax_array ***out, ax_linear **plin) {
    ax_linear *lin = linear_new(nin);
    ax_array **tan = calloc((size_t)nin + 1, sizeof *tan), **pout = NULL, **tout = NULL;
    ax_ir_trace *irt = lin && tan ? ax_ir_trace_begin(cx) : NULL;
    if (!irt) {
        if (!ax_error_pending(cx)) ax_error_oom(cx);
        ax_linear_free(lin);
        free(tan);
        return -1;
    }
    ax_ir_trace_set_partial_eval(irt, true);
    int rc = 0;
    for (int i = 0; i < nin && !rc; i++) {
        ax_aval_of(&lin->in_types[i], primals[i]);
        lin->diff_in[i] = ax_dtype_is_float(primals[i]->dtype);
        if (!lin->diff_in[i]) continue;
        ax_aval t = lin->in_types[i];
        t.weak = false;
        if (!(tan[i] = ax_ir_trace_input(irt, &t))) rc = -1;
    }
    if (!rc) rc = run_jvp(cx, fn, closure, nin, primals, tan, nout, &pout, &tout);
    for (int i = 0; i < nin; i++) ax_array_release(tan[i]);
    free(tan);
    if (rc) {
        ax_ir_trace_abort(irt);
        ax_linear_free(lin);
        return -1;
    }
    lin->nout = *nout;
    lin->out_types = calloc((size_t)*nout + 1, sizeof *lin->out_types);
    for (int j = 0; lin->out_types && j < *nout; j++) {
        ax_aval_of(&lin->out_types[j], pout[j]);
        lin->out_types[j].weak = false;
    }
    lin->ir = lin->out_types ? ax_ir_trace_end(irt, *nout, tout, lin->out_types) : NULL;
    if (!lin->out_types) ax_ir_trace_abort(irt);
    for (int j = 0; j < *nout; j++) ax_array_release(tout[j]);
    free(tout);
    if (!lin->ir) {
        if (!ax_error_pending(cx)) ax_error_oom(cx);
        for (int j = 0; j < *nout; j++) ax_array_release(pout[j]);
        free(pout);
        ax_linear_free(lin);
        return -1;
    }
    *out = pout;
    *plin = lin;
    return 0;
}

int ax_linear_apply(ax_ctx *cx, const ax_linear *lin, ax_array **tangents, ax_array **tout) {
    ax_array **args = calloc((size_t)lin->nin + 1, sizeof *args);
    if (!args) return ax_error_oom(cx), -1;
    int k = 0;
    for (int i = 0; i < lin->nin; i++)
        if (lin->diff_in[i]) args[k++] = tangents[i];
    int rc = ax_ir_eval(cx, lin->ir, args, tout);
    free(args);
    return rc;
}

/* ---------------------------------------------------------------- transposition */

static int accumulate(ax_ctx *cx, ax_array **slot, ax_array *ct) {
    if (!ct) return 0;
    if (!*slot) {
        *slot = ct;
        return 0;
    }
    ax_array *sum = ax_bind_binary(cx, AX_P_ADD, *slot, ct);
    ax_array_release(*slot);
    ax_array_release(ct);
    *slot = sum;
    return sum ? 0 : -1;
}

static ax_array *atom_val(ax_array **vals, const ax_ir_atom *a) {
    return a->var >= 0 ? vals[a->var] : a->lit;
}

static bool eqn_is_linear(const ax_ir_eqn *e, const bool *linear) {
    for (int i = 0; i < e->nout; i++)
        if (linear[e->out[i]]) return true;
    return false;
}

/* Evaluates the equations that do not depend on the linear inputs (the residual computations),
 * forward. */
static int eval_nonlinear(ax_ctx *cx, const ax_ir *ir, const bool *linear, ax_array **vals) {
    int cap = 0;
    ax_array **in = NULL;
    int rc = 0;
    for (int k = 0; k < ir->neqns && !rc; k++) {
        const ax_ir_eqn *e = &ir->eqns[k];
        if (eqn_is_linear(e, linear)) continue;
        int need = e->nin + e->nout;
        if (need > cap) {
            free(in);
            cap = need;
            if (!(in = malloc((size_t)cap * sizeof *in))) return ax_error_oom(cx), -1;
        }
        ax_array **res = in + e->nin;
        for (int i = 0; i < e->nin; i++) in[i] = atom_val(vals, &e->in[i]);
        for (int i = 0; i < e->nout; i++) res[i] = NULL;
        rc = ax_bind(cx, e->prim, e->nin, in, &e->params, res);
        for (int i = 0; !rc && i < e->nout; i++) vals[e->out[i]] = res[i];
    }
    free(in);
    return rc;
}

static ax_transpose_rule transpose_rule_of(ax_ctx *cx, ax_prim p) {
    const ax_prim_info *info = ax_prim_get(p);
    if (info->transpose) return info->transpose;
    if (info->flags & AX_PRIM_LINEAR) return ax_transpose_linear;
    ax_error(cx, AX_ERR_TYPE, "reverse-mode differentiation of %s is not possible: it is not linear in its tangents", info->name);
    return NULL;
}

static int transpose_eqn(ax_ctx *cx, const ax_ir *ir, const ax_ir_eqn *e, const bool *linear,
                         ax_array **vals, ax_array **ct) {
    bool any = false;
    for (int i = 0; i < e->nout; i++) any |= ct[e->out[i]] != NULL;
    if (!any) return 0;
    size_t n = (size_t)e->nin;
    ax_array **in = calloc(2 * n + (size_t)e->nout + 1, sizeof *in);
    bool *lin = calloc(n + 1, sizeof *lin);
    ax_aval *types = calloc(n + 1, sizeof *types);
    int rc = in && lin && types ? 0 : -1;
    ax_array **ct_in = in ? in + n : NULL, **cts = in ? in + 2 * n : NULL;
    for (int i = 0; !rc && i < e->nout; i++) {
        cts[i] = ct[e->out[i]];
        ct[e->out[i]] = NULL;
    }
    for (int i = 0; !rc && i < e->nin; i++) {
        const ax_ir_atom *a = &e->in[i];
        lin[i] = a->var >= 0 && linear[a->var];
        in[i] = lin[i] ? NULL : atom_val(vals, a);
        if (a->var >= 0)
            types[i] = ir->types[a->var];
        else
            ax_aval_of(&types[i], a->lit);
    }
    ax_transpose_rule rule = rc ? NULL : transpose_rule_of(cx, e->prim);
    if (!rule) rc = -1;
    if (!rc) rc = rule(cx, e->prim, &e->params, e->nin, in, lin, types, cts, ct_in);
    for (int i = 0; cts && i < e->nout; i++) ax_array_release(cts[i]);
    for (int i = 0; ct_in && i < e->nin; i++) {
        if (!rc && lin[i])
            rc = accumulate(cx, &ct[e->in[i].var], ct_in[i]);
        else
            ax_array_release(ct_in[i]);
    }
    if (!in || !lin || !types) ax_error_oom(cx);
    free(in);
    free(lin);
    free(types);
    return rc;
}

int ax_ir_transpose_eval_mixed(ax_ctx *cx, const ax_ir *ir, const bool *linear_in,
                               ax_array **in_vals, ax_array **cts, ax_array **ct_in) {
    bool *linear = calloc((size_t)ir->nvars + 1, sizeof *linear);
    ax_array **vals = calloc((size_t)ir->nvars + 1, sizeof *vals);
    ax_array **ct = calloc((size_t)ir->nvars + 1, sizeof *ct);
    int rc = linear && vals && ct ? 0 : -1;
    if (rc) ax_error_oom(cx);
    for (int i = 0; !rc && i < ir->nin; i++) {
        linear[ir->invars[i]] = !linear_in || linear_in[i];
        if (!linear[ir->invars[i]]) vals[ir->invars[i]] = ax_array_retain(in_vals[i]);
    }
    for (int k = 0; !rc && k < ir->neqns; k++) {
        const ax_ir_eqn *e = &ir->eqns[k];
        bool any = false;
        for (int i = 0; i < e->nin; i++) any |= e->in[i].var >= 0 && linear[e->in[i].var];
        for (int i = 0; i < e->nout; i++) linear[e->out[i]] = any;
    }
    for (int i = 0; !rc && i < ir->nconsts; i++)
        vals[ir->constvars[i]] = ax_array_retain(ir->consts[i]);
    if (!rc) rc = eval_nonlinear(cx, ir, linear, vals);
    for (int j = 0; !rc && j < ir->nout; j++) {
        const ax_ir_atom *a = &ir->outs[j];
        if (a->var >= 0 && linear[a->var] && cts[j])
            rc = accumulate(cx, &ct[a->var], ax_array_retain(cts[j]));
    }
    for (int k = ir->neqns - 1; !rc && k >= 0; k--)
        if (eqn_is_linear(&ir->eqns[k], linear))
            rc = transpose_eqn(cx, ir, &ir->eqns[k], linear, vals, ct);
    for (int i = 0; i < ir->nin; i++) {
        int v = ir->invars[i];
        ct_in[i] = !rc && linear && linear[v] ? ct[v] : NULL;
        if (!rc && ct) ct[v] = NULL;
    }
    for (int v = 0; ct && vals && v < ir->nvars; v++) {
        ax_array_release(ct[v]);
        ax_array_release(vals[v]);
    }
    free(linear);
    free(vals);
    free(ct);
    return rc;
}

int ax_ir_transpose_eval(ax_ctx *cx, const ax_ir *ir, ax_array **cts, ax_array **ct_in) {
    return ax_ir_transpose_eval_mixed(cx, ir, NULL, NULL, cts, ct_in);
}

int ax_linear_transpose(ax_ctx *cx, const ax_linear *lin, ax_array **cts, ax_array **ct_in) {
    ax_array **ir_ct = calloc((size_t)lin->nin + 1, sizeof *ir_ct);
    if (!ir_ct) return ax_error_oom(cx), -1;
    int rc = ax_ir_transpose_eval(cx, lin->ir, cts, ir_ct);
    int k = 0;
    for (int i = 0; i < lin->nin; i++) {
        ax_array *c = lin->diff_in[i] ? ir_ct[k++] : NULL;
        if (!rc && !c) c = zeros_of(cx, &lin->in_types[i]);
        if (!rc && c && c->dtype != lin->in_types[i].dtype) {
            ax_params p = {.dtype = lin->in_types[i].dtype};
            ax_array *cv = ax_bind1(cx, AX_P_CONVERT, 1, &c, &p);
            ax_array_release(c);
            c = cv;
        }
        if (!rc && !c) rc = -1;
        ct_in[i] = rc ? (ax_array_release(c), NULL) : c;
    }
    if (rc)
        for (int i = 0; i < lin->nin; i++) {
            ax_array_release(ct_in[i]);
            ct_in[i] = NULL;
        }
    free(ir_ct);
    return rc;
}

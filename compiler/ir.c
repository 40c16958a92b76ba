/* The typed IR: builder, printer, verifier, evaluator. */
#include "ir.h"

#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- lifetime */

ax_ir *ax_ir_retain(ax_ir *ir) {
    if (ir) ir->refs++;
    return ir;
}

static void atom_release(ax_ir_atom *a) {
    if (a->var < 0) ax_array_release(a->lit);
}

static void eqn_free(ax_ir_eqn *e) {
    ax_callback_release(e->params.cb);
    for (int i = 0; i < e->nin; i++) atom_release(&e->in[i]);
    for (int i = 0; i < e->nsub; i++) ax_ir_release(e->sub[i]);
    free(e->in);
    free(e->out);
    free(e->sub);
}

void ax_ir_release(ax_ir *ir) {
    if (!ir || --ir->refs > 0) return;
    for (int i = 0; i < ir->neqns; i++) eqn_free(&ir->eqns[i]);
    for (int i = 0; i < ir->nconsts; i++) ax_array_release(ir->consts[i]);
    for (int i = 0; i < ir->nout; i++) atom_release(&ir->outs[i]);
    free(ir->types);
    free(ir->constvars);
    free(ir->consts);
    free(ir->invars);
    free(ir->eqns);
    free(ir->outs);
    free(ir);
}

/* ---------------------------------------------------------------- building */

struct ax_ir_builder {
    ax_ir *ir; /* grows in place; capacities below */
    int cap_vars, cap_eqns, cap_in, cap_consts;
};

ax_ir_builder *ax_ir_builder_new(void) {
    ax_ir_builder *b = calloc(1, sizeof *b);
    if (!b) return NULL;
    b->ir = calloc(1, sizeof *b->ir);
    if (!b->ir) {
        free(b);
        return NULL;
    }
    b->ir->refs = 1;
    return b;
}

void ax_ir_builder_free(ax_ir_builder *b) {
    if (!b) return;
    ax_ir_release(b->ir);
    free(b);
}

/* Grows *arr (of elements of `size` bytes) so that index n fits. */
static bool grow(void **arr, int *cap, int n, size_t size) {
    if (n < *cap) return true;
    int nc = *cap ? *cap * 2 : 16;
    while (nc <= n) nc *= 2;
    void *p = realloc(*arr, (size_t)nc * size);
    if (!p) return false;
    *arr = p;
    *cap = nc;
    return true;
}

int ax_ir_new_var(ax_ir_builder *b, const ax_aval *type) {
    ax_ir *ir = b->ir;
    if (!grow((void **)&ir->types, &b->cap_vars, ir->nvars, sizeof *ir->types)) return -1;
    ir->types[ir->nvars] = *type;
    return ir->nvars++;
}

int ax_ir_add_input(ax_ir_builder *b, const ax_aval *type) {
    ax_ir *ir = b->ir;
    int v = ax_ir_new_var(b, type);
    if (v < 0 || !grow((void **)&ir->invars, &b->cap_in, ir->nin, sizeof *ir->invars)) return -1;
    ir->invars[ir->nin++] = v;
    return v;
}

int ax_ir_add_const(ax_ir_builder *b, ax_array *value) {
    ax_ir *ir = b->ir;
    ax_aval t;
    ax_aval_of(&t, value);
    int v = ax_ir_new_var(b, &t);
    int cap = b->cap_consts;
    if (v < 0 || !grow((void **)&ir->constvars, &cap, ir->nconsts, sizeof *ir->constvars) ||
        !grow((void **)&ir->consts, &b->cap_consts, ir->nconsts, sizeof *ir->consts))
        return -1;
    ir->constvars[ir->nconsts] = v;
    ir->consts[ir->nconsts++] = ax_array_retain(value);
    return v;
}

int ax_ir_add_eqn(ax_ir_builder *b, ax_prim prim, const ax_params *params, int nin,
                  const ax_ir_atom *in, int nout, const ax_aval *out_types, int *out, int nsub,
                  ax_ir *const *sub) {
    ax_ir *ir = b->ir;
    if (!grow((void **)&ir->eqns, &b->cap_eqns, ir->neqns, sizeof *ir->eqns)) return -1;
    ax_ir_eqn e = {.prim = prim, .nin = nin, .nout = nout, .nsub = nsub};
    if (params) e.params = *params;
    e.in = malloc((size_t)(nin ? nin : 1) * sizeof *e.in);
    e.out = malloc((size_t)(nout ? nout : 1) * sizeof *e.out);
    e.sub = nsub ? malloc((size_t)nsub * sizeof *e.sub) : NULL;
    if (!e.in || !e.out || (nsub && !e.sub)) goto fail;
    for (int i = 0; i < nout; i++) {
        out[i] = e.out[i] = ax_ir_new_var(b, &out_types[i]);
        if (out[i] < 0) goto fail;
    }
    for (int i = 0; i < nin; i++) {
        e.in[i] = in[i];
        if (in[i].var < 0) ax_array_retain(in[i].lit);
    }
    for (int i = 0; i < nsub; i++) e.sub[i] = ax_ir_retain(sub[i]);
    ax_callback_retain(e.params.cb);
    ir->eqns[ir->neqns++] = e;
    return 0;
fail:
    free(e.in);
    free(e.out);
    free(e.sub);
    return -1;
}

ax_ir *ax_ir_builder_finish(ax_ir_builder *b, int nout, const ax_ir_atom *outs) {
    ax_ir *ir = b->ir;
    ir->outs = malloc((size_t)(nout ? nout : 1) * sizeof *ir->outs);
    if (!ir->outs) {
        ax_ir_builder_free(b);
        return NULL;
    }
    for (int i = 0; i < nout; i++) {
        ir->outs[i] = outs[i];
        if (outs[i].var < 0) ax_array_retain(outs[i].lit);
    }
    ir->nout = nout;
    free(b);
    return ir;
}

const ax_aval *ax_ir_builder_type(const ax_ir_builder *b, int var) {
    return &b->ir->types[var];
}
const ax_ir *ax_ir_builder_peek(const ax_ir_builder *b) {
    return b->ir;
}

void ax_ir_atom_type(const ax_ir_builder *b, const ax_ir_atom *a, ax_aval *out) {
    if (a->var >= 0)
        *out = b->ir->types[a->var];
    else
        ax_aval_of(out, a->lit);
}

/* ---------------------------------------------------------------- printing */

/* JAX's variable names: a..z, then ba, bb, ... */
static void var_name(char *out, int v) {
    char tmp[16];
    int n = 0;
    do {
        tmp[n++] = (char)('a' + v % 26);
        v = v / 26;
    } while (v > 0 && n < 15);
    for (int i = 0; i < n; i++) out[i] = tmp[n - 1 - i];
    out[n] = 0;
}

static void format_type(ax_strbuf *s, const ax_aval *t) {
    char buf[256];
    ax_type_format(buf, sizeof buf, t->dtype, t->ndim, t->shape);
    ax_strbuf_append(s, buf);
}

/* Variables print in order of appearance (constants, inputs, then equations), as JAX does,
 * whatever their numbers: `names` maps a variable to its position. */
static void format_binder(ax_strbuf *s, const ax_ir *ir, const int *names, int v) {
    char name[16];
    var_name(name, names[v]);
    ax_strbuf_append(s, name);
    ax_strbuf_append(s, ":");
    format_type(s, &ir->types[v]);
}

static void format_atom(ax_strbuf *s, const int *names, const ax_ir_atom *a) {
    if (a->var >= 0) {
        char name[16];
        var_name(name, names[a->var]);
        ax_strbuf_append(s, name);
        return;
    }
    ax_strbuf tmp;
    ax_strbuf_init(&tmp);
    ax_format_array(&tmp, a->lit);
    ax_strbuf_append(s, tmp.data ? tmp.data : "?");
    s->failed |= tmp.failed;
    ax_strbuf_free(&tmp);
    ax_strbuf_append(s, ":");
    ax_aval t;
    ax_aval_of(&t, a->lit);
    format_type(s, &t);
}

static void format_ints(ax_strbuf *s, int n, const int *v) {
    ax_strbuf_append(s, "(");
    for (int i = 0; i < n; i++) ax_strbuf_appendf(s, i ? ", %d" : "%d", v[i]);
    ax_strbuf_append(s, n == 1 ? ",)" : ")");
}

static void format_i64s(ax_strbuf *s, int n, const int64_t *v) {
    ax_strbuf_append(s, "(");
    for (int i = 0; i < n; i++) ax_strbuf_appendf(s, i ? ", %lld" : "%lld", (long long)v[i]);
    ax_strbuf_append(s, n == 1 ? ",)" : ")");
}

static const char *scatter_mode_name(int mode) {
    static const char *const names[] = {"set", "add", "mul", "min", "max"};
    return mode >= 0 && mode < 5 ? names[mode] : "?";
}

void ax_ir_format_params(ax_strbuf *s, ax_prim prim, const ax_params *p) {
    switch (prim) {
    case AX_P_INTEGER_POW:
        ax_strbuf_appendf(s, "[y=%lld]", (long long)p->k);
        break;
    case AX_P_CONVERT:
        ax_strbuf_appendf(s, "[new_dtype=%s weak_type=%s]", ax_dtype_name(p->dtype),
                          p->weak ? "True" : "False");
        break;
    case AX_P_BITCAST:
        ax_strbuf_appendf(s, "[new_dtype=%s]", ax_dtype_name(p->dtype));
        break;
    case AX_P_REDUCE_SUM:
    case AX_P_REDUCE_PROD:
    case AX_P_REDUCE_MAX:
    case AX_P_REDUCE_MIN:
    case AX_P_REDUCE_AND:
    case AX_P_REDUCE_OR:
        ax_strbuf_append(s, "[axes=");
        format_ints(s, p->naxes, p->axes);
        ax_strbuf_append(s, "]");
        break;
    case AX_P_ARGMAX:
    case AX_P_ARGMIN:
        ax_strbuf_appendf(s, "[axes=(%d,) index_dtype=%s]", p->axes[0], ax_dtype_name(p->dtype));
        break;
    case AX_P_TRIANGULAR_SOLVE:
        ax_strbuf_appendf(s, "[left_side=%s lower=%s transpose_a=%s unit_diagonal=%s]",
                          p->flag & AX_TRSOLVE_RIGHT_SIDE ? "False" : "True",
                          p->flag & AX_TRSOLVE_LOWER ? "True" : "False",
                          p->flag & AX_TRSOLVE_TRANSPOSE_A ? "True" : "False",
                          p->flag & AX_TRSOLVE_UNIT_DIAGONAL ? "True" : "False");
        break;
    case AX_P_CUMSUM:
    case AX_P_CUMPROD:
    case AX_P_CUMMAX:
    case AX_P_CUMMIN:
        ax_strbuf_appendf(s, "[axis=%d reverse=%s]", p->axes[0], p->flag ? "True" : "False");
        break;
    case AX_P_RESHAPE:
        ax_strbuf_append(s, "[new_sizes=");
        format_i64s(s, p->ndim, p->shape);
        ax_strbuf_append(s, "]");
        break;
    case AX_P_TRANSPOSE:
        ax_strbuf_append(s, "[permutation=");
        format_ints(s, p->naxes, p->axes);
        ax_strbuf_append(s, "]");
        break;
    case AX_P_BROADCAST_IN_DIM:
        ax_strbuf_append(s, "[broadcast_dimensions=");
        format_ints(s, p->naxes, p->axes);
        ax_strbuf_append(s, " shape=");
        format_i64s(s, p->ndim, p->shape);
        ax_strbuf_append(s, "]");
        break;
    case AX_P_CONCATENATE:
        ax_strbuf_appendf(s, "[dimension=%d]", p->axes[0]);
        break;
    case AX_P_SLICE:
        ax_strbuf_append(s, "[start_indices=");
        format_i64s(s, p->ndim, p->lo);
        ax_strbuf_append(s, " limit_indices=");
        format_i64s(s, p->ndim, p->hi);
        ax_strbuf_append(s, " strides=");
        format_i64s(s, p->ndim, p->step);
        ax_strbuf_append(s, "]");
        break;
    case AX_P_PAD:
        ax_strbuf_append(s, "[padding_config=(");
        for (int i = 0; i < p->ndim; i++)
            ax_strbuf_appendf(s, "%s(%lld, %lld, %lld)", i ? ", " : "", (long long)p->lo[i],
                              (long long)p->hi[i], (long long)p->step[i]);
        ax_strbuf_append(s, p->ndim == 1 ? ",)]" : ")]");
        break;
    case AX_P_SQUEEZE:
    case AX_P_EXPAND_DIMS:
    case AX_P_REV:
        ax_strbuf_append(s, "[dimensions=");
        format_ints(s, p->naxes, p->axes);
        ax_strbuf_append(s, "]");
        break;
    case AX_P_GATHER:
        ax_strbuf_append(s, "[axes=");
        format_ints(s, p->naxes, p->axes);
        ax_strbuf_append(s, "]");
        break;
    case AX_P_SCATTER:
        ax_strbuf_append(s, "[axes=");
        format_ints(s, p->naxes, p->axes);
        ax_strbuf_appendf(s, " mode=%s]", scatter_mode_name(p->flag));
        break;
    case AX_P_DYNAMIC_SLICE:
        ax_strbuf_append(s, "[slice_sizes=");
        format_i64s(s, p->ndim, p->shape);
        ax_strbuf_append(s, "]");
        break;
    case AX_P_IOTA:
        ax_strbuf_appendf(s, "[dimension=%d dtype=%s shape=", p->axes[0], ax_dtype_name(p->dtype));
        format_i64s(s, p->ndim, p->shape);
        ax_strbuf_append(s, "]");
        break;
    case AX_P_DOT_GENERAL: {
        const ax_dot_dims *d = &p->dot;
        ax_strbuf_append(s, "[dimension_numbers=((");
        format_ints(s, d->ncontract, d->lhs_contract);
        ax_strbuf_append(s, ", ");
        format_ints(s, d->ncontract, d->rhs_contract);
        ax_strbuf_append(s, "), (");
        format_ints(s, d->nbatch, d->lhs_batch);
        ax_strbuf_append(s, ", ");
        format_ints(s, d->nbatch, d->rhs_batch);
        ax_strbuf_append(s, "))]");
        break;
    }
    case AX_P_SORT:
        ax_strbuf_appendf(s, "[dimension=%d descending=%s]", p->axes[0],
                          p->flag ? "True" : "False");
        break;
    case AX_P_ARGSORT:
        ax_strbuf_appendf(s, "[dimension=%d descending=%s index_dtype=%s]", p->axes[0],
                          p->flag ? "True" : "False", ax_dtype_name(p->dtype));
        break;
    case AX_P_CUSTOM_CALL:
        ax_strbuf_appendf(s, "[fn=%s output=%lld]", p->cb ? p->cb->name : "?", (long long)p->k);
        break;
    case AX_P_CUSTOM_LINEAR:
        ax_strbuf_appendf(s, "[fn=%s output=%lld]", p->cb ? p->cb->name : "?", (long long)p->k);
        break;
    default:
        break;
    }
}

static void format_eqn(ax_strbuf *s, const ax_ir *ir, const int *names, const ax_ir_eqn *e) {
    for (int i = 0; i < e->nout; i++) {
        if (i) ax_strbuf_append(s, " ");
        format_binder(s, ir, names, e->out[i]);
    }
    ax_strbuf_appendf(s, " = %s", ax_prim_get(e->prim)->name);
    ax_ir_format_params(s, e->prim, &e->params);
    for (int i = 0; i < e->nin; i++) {
        ax_strbuf_append(s, " ");
        format_atom(s, names, &e->in[i]);
    }
}

static void format_header(ax_strbuf *s, const ax_ir *ir, const int *names) {
    ax_strbuf_append(s, "{ lambda ");
    for (int i = 0; i < ir->nconsts; i++) {
        if (i) ax_strbuf_append(s, " ");
        format_binder(s, ir, names, ir->constvars[i]);
    }
    ax_strbuf_append(s, "; ");
    for (int i = 0; i < ir->nin; i++) {
        if (i) ax_strbuf_append(s, " ");
        format_binder(s, ir, names, ir->invars[i]);
    }
    ax_strbuf_append(s, ". let");
}

static void format_outs(ax_strbuf *s, const ax_ir *ir, const int *names) {
    ax_strbuf_append(s, "in (");
    for (int i = 0; i < ir->nout; i++) {
        if (i) ax_strbuf_append(s, ", ");
        format_atom(s, names, &ir->outs[i]);
    }
    ax_strbuf_append(s, ir->nout == 1 ? ",) }" : ") }");
}

static int *order_of_appearance(const ax_ir *ir) {
    int *names = calloc((size_t)ir->nvars + 1, sizeof *names), k = 0;
    if (!names) return NULL;
    for (int i = 0; i < ir->nconsts; i++) names[ir->constvars[i]] = k++;
    for (int i = 0; i < ir->nin; i++) names[ir->invars[i]] = k++;
    for (int e = 0; e < ir->neqns; e++)
        for (int i = 0; i < ir->eqns[e].nout; i++) names[ir->eqns[e].out[i]] = k++;
    return names;
}

void ax_ir_format(ax_strbuf *out, const ax_ir *ir) {
    int *names = order_of_appearance(ir);
    if (!names) {
        out->failed = true;
        return;
    }
    ax_strbuf one;
    ax_strbuf_init(&one);
    format_header(&one, ir, names);
    for (int i = 0; i < ir->neqns; i++) {
        ax_strbuf_append(&one, i ? "; " : " ");
        format_eqn(&one, ir, names, &ir->eqns[i]);
    }
    ax_strbuf_append(&one, " ");
    format_outs(&one, ir, names);
    bool nested = false;
    for (int i = 0; i < ir->neqns; i++) nested |= ir->eqns[i].nsub > 0;
    if (one.failed) {
        out->failed = true;
    } else if (one.len <= 80 && !nested) {
        ax_strbuf_append(out, one.data ? one.data : "");
    } else {
        format_header(out, ir, names);
        ax_strbuf_append(out, "\n");
        for (int i = 0; i < ir->neqns; i++) {
            ax_strbuf_append(out, "    ");
            format_eqn(out, ir, names, &ir->eqns[i]);
            ax_strbuf_append(out, "\n");
        }
        ax_strbuf_append(out, "  ");
        format_outs(out, ir, names);
    }
    ax_strbuf_free(&one);
    free(names);
}

/* ---------------------------------------------------------------- verifying */

static bool aval_equal(const ax_aval *a, const ax_aval *b) {
    return a->dtype == b->dtype && ax_shape_equal(a->ndim, a->shape, b->ndim, b->shape);
}

static int verify_atom(ax_ctx *cx, const ax_ir *ir, const bool *defined, const ax_ir_atom *a,
                       int eqn) {
    if (a->var < 0) {
        if (!a->lit)
            return ax_error(cx, AX_ERR_RUNTIME, "IR: equation %d has a null literal", eqn), -1;
        return 0;
    }
    if (a->var >= ir->nvars || !defined[a->var])
        return ax_error(cx, AX_ERR_RUNTIME, "IR: equation %d uses variable %d before it is defined",
                        eqn, a->var),
               -1;
    return 0;
}

static int define_var(ax_ctx *cx, const ax_ir *ir, bool *defined, int v) {
    if (v < 0 || v >= ir->nvars)
        return ax_error(cx, AX_ERR_RUNTIME, "IR: variable %d out of range", v), -1;
    if (defined[v]) return ax_error(cx, AX_ERR_RUNTIME, "IR: variable %d is assigned twice", v), -1;
    defined[v] = true;
    return 0;
}

static int verify_eqn(ax_ctx *cx, const ax_ir *ir, bool *defined, int k) {
    const ax_ir_eqn *e = &ir->eqns[k];
    const ax_prim_info *info = ax_prim_get(e->prim);
    ax_aval in[64], out[8];
    if (e->nin > 64 || e->nout > 8 || (info->nin >= 0 && info->nin != e->nin) ||
        info->nout != e->nout)
        return ax_error(cx, AX_ERR_RUNTIME, "IR: equation %d (%s) has the wrong arity", k,
                        info->name),
               -1;
    for (int i = 0; i < e->nin; i++) {
        if (verify_atom(cx, ir, defined, &e->in[i], k)) return -1;
        if (e->in[i].var >= 0)
            in[i] = ir->types[e->in[i].var];
        else
            ax_aval_of(&in[i], e->in[i].lit);
    }
    if (info->shape && info->shape(cx, e->nin, in, &e->params, out)) return -1;
    for (int i = 0; i < e->nout; i++) {
        if (define_var(cx, ir, defined, e->out[i])) return -1;
        if (info->shape && !aval_equal(&out[i], &ir->types[e->out[i]])) {
            char want[128], got[128];
            ax_type_format(want, sizeof want, out[i].dtype, out[i].ndim, out[i].shape);
            const ax_aval *t = &ir->types[e->out[i]];
            ax_type_format(got, sizeof got, t->dtype, t->ndim, t->shape);
            return ax_error(cx, AX_ERR_RUNTIME,
                            "IR: equation %d (%s) declares %s, its rule gives %s", k, info->name,
                            got, want),
                   -1;
        }
    }
    for (int i = 0; i < e->nsub; i++)
        if (ax_ir_verify(cx, e->sub[i])) return -1;
    return 0;
}

int ax_ir_verify(ax_ctx *cx, const ax_ir *ir) {
    bool *defined = calloc((size_t)ir->nvars + 1, sizeof *defined);
    if (!defined) return ax_error_oom(cx), -1;
    int rc = 0;
    for (int i = 0; i < ir->nconsts && !rc; i++) rc = define_var(cx, ir, defined, ir->constvars[i]);
    for (int i = 0; i < ir->nin && !rc; i++) rc = define_var(cx, ir, defined, ir->invars[i]);
    for (int k = 0; k < ir->neqns && !rc; k++) rc = verify_eqn(cx, ir, defined, k);
    for (int i = 0; i < ir->nout && !rc; i++) rc = verify_atom(cx, ir, defined, &ir->outs[i], -1);
    free(defined);
    return rc;
}

/* ---------------------------------------------------------------- evaluating */

static ax_array *atom_value(ax_array **env, const ax_ir_atom *a) {
    return a->var >= 0 ? env[a->var] : a->lit;
}

/* One equation's outputs: bound, or (inline) a custom_call's body evaluated in place. */
static int eval_eqn(ax_ctx *cx, const ax_ir_eqn *e, ax_array **in, ax_array **res,
                    bool inline_calls) {
    if (!inline_calls || e->prim != AX_P_CUSTOM_CALL)
        return ax_bind(cx, e->prim, e->nin, in, &e->params, res);
    const ax_ir *body = e->params.cb->body;
    ax_array **outs = calloc((size_t)body->nout + 1, sizeof *outs);
    if (!outs) return ax_error_oom(cx), -1;
    int rc = ax_ir_eval_inlined(cx, body, in, outs);
    for (int j = 0; j < body->nout; j++) {
        if (!rc && j == e->params.k)
            res[0] = outs[j];
        else
            ax_array_release(outs[j]);
    }
    free(outs);
    return rc;
}

static int eval_ir(ax_ctx *cx, const ax_ir *ir, ax_array **args, ax_array **outs,
                   bool inline_calls) {
    ax_array **env = calloc((size_t)ir->nvars + 1, sizeof *env);
    ax_array **in = NULL;
    int maxin = 1, rc = -1;
    for (int k = 0; k < ir->neqns; k++)
        if (ir->eqns[k].nin > maxin) maxin = ir->eqns[k].nin;
    in = malloc((size_t)maxin * sizeof *in);
    if (!env || !in) {
        ax_error_oom(cx);
        goto done;
    }
    for (int i = 0; i < ir->nconsts; i++) env[ir->constvars[i]] = ax_array_retain(ir->consts[i]);
    for (int i = 0; i < ir->nin; i++) env[ir->invars[i]] = ax_array_retain(args[i]);
    for (int k = 0; k < ir->neqns; k++) {
        const ax_ir_eqn *e = &ir->eqns[k];
        for (int i = 0; i < e->nin; i++) in[i] = atom_value(env, &e->in[i]);
        ax_array *res[8] = {0};
        if (eval_eqn(cx, e, in, res, inline_calls)) goto done;
        for (int i = 0; i < e->nout; i++) env[e->out[i]] = res[i];
    }
    for (int i = 0; i < ir->nout; i++) outs[i] = ax_array_retain(atom_value(env, &ir->outs[i]));
    rc = 0;
done:
    if (env)
        for (int v = 0; v < ir->nvars; v++) ax_array_release(env[v]);
    free(env);
    free(in);
    return rc;
}

int ax_ir_eval(ax_ctx *cx, const ax_ir *ir, ax_array **args, ax_array **outs) {
    return eval_ir(cx, ir, args, outs, false);
}

int ax_ir_eval_inlined(ax_ctx *cx, const ax_ir *ir, ax_array **args, ax_array **outs) {
    return eval_ir(cx, ir, args, outs, true);
}

/* The flat-function forms (closure = the IR): outputs in a new array of new references. */
static int eval_flat(ax_ctx *cx, const ax_ir *ir, ax_array **in, int *nout, ax_array ***out,
                     bool inline_calls) {
    *nout = ir->nout;
    *out = calloc((size_t)ir->nout + 1, sizeof **out);
    if (!*out) return ax_error_oom(cx), -1;
    return eval_ir(cx, ir, in, *out, inline_calls);
}

int ax_ir_flat_fn(ax_ctx *cx, void *closure, int nin, ax_array **in, int *nout, ax_array ***out) {
    (void)nin;
    return eval_flat(cx, closure, in, nout, out, false);
}

int ax_ir_inlined_flat_fn(ax_ctx *cx, void *closure, int nin, ax_array **in, int *nout,
                          ax_array ***out) {
    (void)nin;
    return eval_flat(cx, closure, in, nout, out, true);
}

bool ax_ir_has_custom_calls(const ax_ir *ir) {
    for (int k = 0; k < ir->neqns; k++)
        if (ir->eqns[k].prim == AX_P_CUSTOM_CALL) return true;
    return false;
}

/* The IR-building trace (see trace_ir.h). */
#include "trace_ir.h"

#include <stdint.h>
#include <stdlib.h>

struct ax_ir_trace {
    ax_trace base;
    ax_ctx *cx;
    ax_ir_builder *b;
    /* outside arrays already bound to constants: the same array is one constant */
    ax_array **const_arrays;
    int *const_vars;
    int nconsts, cap;
    bool partial_eval; /* reverse mode's recording: higher-order primitives are split */
    /* make_jaxpr's omnistaging: operations on known values are recorded too (their results stay
     * concrete arrays; `known` maps each to its variable, holding a reference). */
    bool stage_known;
    int eager_depth; /* > 0 while an eager kernel runs: its inner binds are not the user's */
    ax_array **known_keys;
    int *known_vars;
    int nknown, known_cap; /* a hash table by address; known_cap is 0 or a power of two */
};

static size_t known_slot(const ax_ir_trace *t, const ax_array *a) {
    size_t mask = (size_t)t->known_cap - 1, h = ((uintptr_t)a >> 4) * 0x9E3779B97F4A7C15u;
    for (size_t i = h & mask;; i = (i + 1) & mask)
        if (!t->known_keys[i] || t->known_keys[i] == a) return i;
}

/* The variable of a staged known array, or -1. */
static int known_var(const ax_ir_trace *t, const ax_array *a) {
    if (!t->nknown) return -1;
    size_t i = known_slot(t, a);
    return t->known_keys[i] ? t->known_vars[i] : -1;
}

static int known_grow(ax_ir_trace *t) {
    int cap = t->known_cap ? 2 * t->known_cap : 16;
    ax_array **keys = calloc((size_t)cap, sizeof *keys);
    int *vars = calloc((size_t)cap, sizeof *vars);
    if (!keys || !vars) return free(keys), free(vars), -1;
    ax_ir_trace old = *t;
    t->known_keys = keys, t->known_vars = vars, t->known_cap = cap;
    for (int i = 0; i < old.known_cap; i++) {
        if (!old.known_keys[i]) continue;
        size_t j = known_slot(t, old.known_keys[i]);
        t->known_keys[j] = old.known_keys[i];
        t->known_vars[j] = old.known_vars[i];
    }
    free(old.known_keys);
    free(old.known_vars);
    return 0;
}

/* Maps known array a (retained) to variable v. */
static int known_add(ax_ir_trace *t, ax_array *a, int v) {
    if (2 * (t->nknown + 1) > t->known_cap && known_grow(t)) return -1;
    size_t i = known_slot(t, a);
    if (!t->known_keys[i]) {
        t->known_keys[i] = ax_array_retain(a);
        t->nknown++;
    }
    t->known_vars[i] = v;
    return 0;
}

static void known_free(ax_ir_trace *t) {
    for (int i = 0; i < t->known_cap; i++) ax_array_release(t->known_keys[i]);
    free(t->known_keys);
    free(t->known_vars);
}

static int tracer_var(const ax_array *a, ax_ir_trace *t) {
    void *d = ax_tracer_data(a, &t->base);
    return d ? (int)(intptr_t)d - 1 : -1;
}

static int const_var(ax_ir_trace *t, ax_array *a) {
    for (int i = 0; i < t->nconsts; i++)
        if (t->const_arrays[i] == a) return t->const_vars[i];
    if (t->nconsts == t->cap) {
        int cap = t->cap ? 2 * t->cap : 8;
        ax_array **arrs = realloc(t->const_arrays, (size_t)cap * sizeof *arrs);
        if (!arrs) return -1;
        t->const_arrays = arrs;
        int *vars = realloc(t->const_vars, (size_t)cap * sizeof *vars);
        if (!vars) return -1;
        t->const_vars = vars;
        t->cap = cap;
    }
    int v = ax_ir_add_const(t->b, a);
    if (v < 0) return -1;
    t->const_arrays[t->nconsts] = a; /* the IR holds the reference */
    t->const_vars[t->nconsts++] = v;
    return v;
}

/* The IR operand for an input: its variable, a literal, or a new constant. */
static int atom_of(ax_ir_trace *t, ax_array *a, ax_ir_atom *out) {
    int v = tracer_var(a, t);
    if (v < 0) v = known_var(t, a);
    if (v >= 0) {
        *out = (ax_ir_atom){.var = v};
        return 0;
    }
    if (!a->tracer && a->ndim == 0) {
        *out = (ax_ir_atom){.var = -1, .lit = a};
        return 0;
    }
    v = const_var(t, a);
    if (v < 0) return ax_error_oom(t->cx), -1;
    *out = (ax_ir_atom){.var = v};
    return 0;
}

static ax_array *new_tracer(ax_ir_trace *t, int var) {
    return ax_tracer_new(t->cx, &t->base, ax_ir_builder_type(t->b, var),
                         (void *)(intptr_t)(var + 1), NULL);
}

/* Adds the equation p(in) to the IR; vars[0..nout) get its result variables. */
static int add_eqn(ax_ir_trace *t, ax_prim p, int nin, ax_array **in, const ax_params *params,
                   int nout, int *vars) {
    ax_ctx *cx = t->cx;
    ax_aval *types = calloc((size_t)nin + (size_t)nout + 1, sizeof *types);
    ax_ir_atom *atoms = calloc((size_t)nin + 1, sizeof *atoms);
    int rc = types && atoms ? 0 : -1;
    if (rc) ax_error_oom(cx);
    ax_aval *in_types = types, *out_types = types ? types + nin : NULL; /* NULL + n is UB */
    for (int i = 0; i < nin && !rc; i++) {
        ax_aval_of(&in_types[i], in[i]);
        rc = atom_of(t, in[i], &atoms[i]);
    }
    if (!rc) rc = ax_prim_infer(cx, p, nin, in_types, params, out_types);
    if (!rc && ax_ir_add_eqn(t->b, p, params, nin, atoms, nout, out_types, vars, 0, NULL))
        ax_error_oom(cx), rc = -1;
    free(types);
    free(atoms);
    return rc;
}

int ax_ir_trace_record(ax_ir_trace *t, ax_prim p, int nin, ax_array **in,
                       const ax_params *params, ax_array **out) {
    int nout = ax_prim_nout(p, params);
    int *vars = calloc((size_t)nout + 1, sizeof *vars);
    int rc = vars ? add_eqn(t, p, nin, in, params, nout, vars) : (ax_error_oom(t->cx), -1);
    for (int i = 0; i < nout && !rc; i++) {
        out[i] = new_tracer(t, vars[i]);
        if (!out[i]) {
            for (int j = 0; j < i; j++) ax_array_release(out[j]);
            rc = -1;
        }
    }
    free(vars);
    return rc;
}

/* A convert of a rank-0 value that is neither traced nor staged: a Python number taking the
 * dtype of its operation, which JAX does on the host (its jaxpr shows the literal). */
static bool host_conversion(ax_ir_trace *t, ax_prim p, int nin, ax_array **in) {
    return p == AX_P_CONVERT && nin == 1 && in[0]->ndim == 0 && !in[0]->tracer &&
           known_var(t, in[0]) < 0;
}

/* Whether a kernel handed back one of its operands (an identity): nothing was computed, and
 * that operand must keep the variable or literal it already has. */
static bool returns_operand(int nin, ax_array **in, int nout, ax_array **out) {
    for (int i = 0; i < nout; i++)
        for (int j = 0; j < nin; j++)
            if (out[i] == in[j]) return true;
    return false;
}

ax_ir_trace *ax_ir_trace_staging(ax_ctx *cx) {
    ax_ir_trace *t = cx->traces ? ax_ir_trace_innermost(cx) : NULL;
    return t && t->stage_known && !t->eager_depth ? t : NULL;
}

void ax_ir_trace_eager(ax_ir_trace *t, bool enter) {
    t->eager_depth += enter ? 1 : -1;
}

int ax_ir_trace_stage(ax_ir_trace *t, ax_prim p, int nin, ax_array **in, const ax_params *params,
                      ax_array **out) {
    int nout = ax_prim_nout(p, params);
    if (host_conversion(t, p, nin, in) || returns_operand(nin, in, nout, out)) return 0;
    int *vars = calloc((size_t)nout + 1, sizeof *vars);
    int rc = vars ? add_eqn(t, p, nin, in, params, nout, vars) : (ax_error_oom(t->cx), -1);
    for (int i = 0; i < nout && !rc; i++)
        if (known_add(t, out[i], vars[i])) rc = (ax_error_oom(t->cx), -1);
    free(vars);
    return rc;
}

/* A Python number: a rank-0 concrete value, weakly typed or bool, that no trace knows. */
static bool python_number(ax_ir_trace *t, const ax_array *a) {
    return a && a->ndim == 0 && a->buf && !a->tracer && (a->weak || a->dtype == AX_BOOL) &&
           known_var(t, a) < 0;
}

ax_ir_trace *ax_ir_trace_host_begin(ax_ctx *cx, int n, ax_array *const *a) {
    ax_ir_trace *t = ax_ir_trace_staging(cx);
    for (int i = 0; t && i < n; i++)
        if (!python_number(t, a[i])) t = NULL;
    if (t) ax_ir_trace_eager(t, true);
    return t;
}

void ax_ir_trace_host_end(ax_ir_trace *t) {
    if (t) ax_ir_trace_eager(t, false);
}

bool ax_ir_trace_owns(const ax_ir_trace *t, const ax_array *a) {
    return tracer_var(a, (ax_ir_trace *)t) >= 0;
}

static int process(ax_ctx *cx, ax_trace *trace, ax_prim p, int nin, ax_array **in,
                   const ax_params *params, ax_array **out) {
    ax_ir_trace *t = trace->data;
    ax_partial_eval_rule pe = ax_prim_get(p)->partial_eval;
    if (!t->partial_eval || !pe) return ax_ir_trace_record(t, p, nin, in, params, out);
    bool *unknown = calloc((size_t)nin + 1, sizeof *unknown);
    if (!unknown) return ax_error_oom(cx), -1;
    for (int i = 0; i < nin; i++) unknown[i] = tracer_var(in[i], t) >= 0;
    int rc = pe(cx, t, p, params, nin, in, unknown, out);
    free(unknown);
    return rc;
}

ax_ir_trace *ax_ir_trace_innermost(ax_ctx *cx) {
    const struct ax_trace_state *st = cx->traces;
    for (int i = st ? st->depth - 1 : -1; i >= 0; i--) {
        ax_trace *t = st->stack[i];
        if (t->process_primitive == process && !((ax_ir_trace *)t->data)->partial_eval)
            return t->data;
    }
    return NULL;
}

void ax_ir_trace_set_partial_eval(ax_ir_trace *t, bool on) {
    t->partial_eval = on;
}

ax_ir_trace *ax_ir_trace_begin(ax_ctx *cx) {
    ax_ir_trace *t = calloc(1, sizeof *t);
    if (!t || !(t->b = ax_ir_builder_new())) {
        free(t);
        return ax_error_oom(cx);
    }
    t->cx = cx;
    t->base.name = "jit";
    t->base.process_primitive = process;
    t->base.data = t;
    if (ax_trace_push(cx, &t->base)) {
        ax_ir_builder_free(t->b);
        free(t);
        return NULL;
    }
    return t;
}

ax_array *ax_ir_trace_input(ax_ir_trace *t, const ax_aval *type) {
    int v = ax_ir_add_input(t->b, type);
    if (v < 0) return ax_error_oom(t->cx);
    return new_tracer(t, v);
}

static void trace_free(ax_ir_trace *t) {
    known_free(t);
    free(t->const_arrays);
    free(t->const_vars);
    free(t);
}

void ax_ir_trace_abort(ax_ir_trace *t) {
    if (!t) return;
    ax_trace_pop(t->cx, &t->base);
    ax_ir_builder_free(t->b);
    trace_free(t);
}

ax_ir *ax_ir_trace_end(ax_ir_trace *t, int nout, ax_array **outs, const ax_aval *out_types) {
    ax_ctx *cx = t->cx;
    ax_ir_atom *atoms = calloc((size_t)(nout ? nout : 1), sizeof *atoms);
    ax_array **zeros = calloc((size_t)(nout ? nout : 1), sizeof *zeros);
    int rc = atoms && zeros ? 0 : -1;
    for (int i = 0; i < nout && !rc; i++) {
        ax_array *a = outs[i];
        if (!a) {
            /* A zero output: a broadcast of a scalar, bound as a constant. */
            const ax_aval *ty = &out_types[i];
            ax_array *z = ax_array_scalar(cx, ty->dtype, 0.0);
            int64_t strides[AX_MAX_RANK] = {0};
            a = zeros[i] =
                z && ty->ndim ? ax_array_view(cx, z, ty->ndim, ty->shape, strides, 0) : z;
            if (z && ty->ndim) ax_array_release(z);
            if (!a) rc = -1;
        }
        if (!rc) rc = atom_of(t, a, &atoms[i]);
    }
    ax_ir *ir = NULL;
    ax_trace_pop(cx, &t->base);
    if (!rc) {
        ir = ax_ir_builder_finish(t->b, nout, atoms);
        if (!ir) ax_error_oom(cx);
    } else {
        ax_ir_builder_free(t->b);
        if (!ax_error_pending(cx)) ax_error_oom(cx);
    }
    for (int i = 0; i < nout; i++) ax_array_release(zeros ? zeros[i] : NULL);
    free(zeros);
    free(atoms);
    trace_free(t);
    return ir;
}

ax_ir *ax_trace_to_ir(ax_ctx *cx, ax_flat_fn fn, void *closure, int nin, const ax_aval *in_types,
                      int *nout) {
    return ax_trace_to_ir_staged(cx, fn, closure, nin, in_types, nout, false);
}

ax_ir *ax_trace_to_ir_staged(ax_ctx *cx, ax_flat_fn fn, void *closure, int nin,
                             const ax_aval *in_types, int *nout, bool stage) {
    ax_ir_trace *t = ax_ir_trace_begin(cx);
    if (!t) return NULL;
    t->stage_known = stage;
    ax_array **in = calloc((size_t)(nin ? nin : 1), sizeof *in);
    ax_array **out = NULL;
    int rc = in ? 0 : (ax_error_oom(cx), -1);
    for (int i = 0; i < nin && !rc; i++)
        if (!(in[i] = ax_ir_trace_input(t, &in_types[i]))) rc = -1;
    if (!rc) rc = fn(cx, closure, nin, in, nout, &out);
    for (int i = 0; in && i < nin; i++) ax_array_release(in[i]);
    free(in);
    if (rc) {
        ax_ir_trace_abort(t);
        return NULL;
    }
    ax_ir *ir = ax_ir_trace_end(t, *nout, out, NULL);
    for (int i = 0; i < *nout; i++) ax_array_release(out[i]);
    free(out);
    return ir;
}

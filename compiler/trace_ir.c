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
};

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

int ax_ir_trace_record(ax_ir_trace *t, ax_prim p, int nin, ax_array **in,
                       const ax_params *params, ax_array **out) {
    ax_ctx *cx = t->cx;
    int nout = ax_prim_nout(p, params);
    ax_aval *types = calloc((size_t)nin + (size_t)nout + 1, sizeof *types);
    ax_ir_atom *atoms = calloc((size_t)nin + 1, sizeof *atoms);
    int *vars = calloc((size_t)nout + 1, sizeof *vars);
    int rc = types && atoms && vars ? 0 : -1;
    if (rc) ax_error_oom(cx);
    ax_aval *in_types = types, *out_types = types ? types + nin : NULL; /* NULL + n is UB */
    for (int i = 0; i < nin && !rc; i++) {
        ax_aval_of(&in_types[i], in[i]);
        rc = atom_of(t, in[i], &atoms[i]);
    }
    if (!rc) rc = ax_prim_infer(cx, p, nin, in_types, params, out_types);
    if (!rc && ax_ir_add_eqn(t->b, p, params, nin, atoms, nout, out_types, vars, 0, NULL))
        ax_error_oom(cx), rc = -1;
    for (int i = 0; i < nout && !rc; i++) {
        out[i] = new_tracer(t, vars[i]);
        if (!out[i]) {
            for (int j = 0; j < i; j++) ax_array_release(out[j]);
            rc = -1;
        }
    }
    free(types);
    free(atoms);
    free(vars);
    return rc;
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
    ax_ir_trace *t = ax_ir_trace_begin(cx);
    if (!t) return NULL;
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

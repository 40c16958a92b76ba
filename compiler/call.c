/* The call primitive (see call.h): every rule. The passes a call's rules apply to its body are
 * remembered on the body (a jitted function's IR lives across calls), so grad(jit(f)) traces
 * its JVP, split and transposition once, and compiles each part once. */
#include "call.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jit.h"
#include "lax.h"
#include "passes.h"
#include "simplify.h"
#include "trace_ir.h"
#include "vmap.h"

/* ---------------------------------------------------------------- what a body remembers */

enum { MEMO_JVP, MEMO_PARTIAL_EVAL, MEMO_TRANSPOSE, MEMO_VMAP, MEMO_GRAD };

/* Calls with at most this many results keep their list on the stack. */
enum { SMALL_CALL = 8 };

typedef struct memo_entry {
    int kind;
    int64_t size;   /* vmap: the batch size */
    bool *mask;     /* nonzero / unknown / linear / batched inputs (body->nin) */
    bool *out_mask; /* the pass's answer per output */
    ax_ir *a, *b;   /* its result(s) */
    int nres;       /* partial evaluation: residuals */
} memo_entry;

typedef struct call_memo {
    ax_jit_program *prog; /* the body's native program, built on the first eager call */
    int n, cap;
    memo_entry *entries;
} call_memo;

static void memo_free(void *p) {
    call_memo *m = p;
    if (!m) return;
    ax_jit_free(m->prog);
    for (int i = 0; i < m->n; i++) {
        free(m->entries[i].mask);
        free(m->entries[i].out_mask);
        ax_ir_release(m->entries[i].a);
        ax_ir_release(m->entries[i].b);
    }
    free(m->entries);
    free(m);
}

/* The memo attached to body (created on first use); NULL when out of memory. */
static call_memo *memo_of(ax_ir *body) {
    if (body->attached_free == memo_free) return body->attached;
    if (body->attached) return NULL; /* attached by someone else: no memo */
    call_memo *m = calloc(1, sizeof *m);
    if (!m) return NULL;
    body->attached = m;
    body->attached_free = memo_free;
    return m;
}

static memo_entry *memo_find(ax_ir *body, int kind, int64_t size, const bool *mask) {
    call_memo *m = memo_of(body);
    for (int i = 0; m && i < m->n; i++) {
        memo_entry *e = &m->entries[i];
        if (e->kind == kind && e->size == size &&
            !memcmp(e->mask, mask, (size_t)body->nin * sizeof *mask))
            return e;
    }
    return NULL;
}

/* Remembers a pass's result (retained); failures to remember are harmless. */
static void memo_add(ax_ir *body, int kind, int64_t size, const bool *mask, const bool *out_mask,
                     int nout_mask, ax_ir *a, ax_ir *b, int nres) {
    call_memo *m = memo_of(body);
    if (!m) return;
    if (m->n == m->cap) {
        int cap = m->cap ? 2 * m->cap : 4;
        memo_entry *e = realloc(m->entries, (size_t)cap * sizeof *e);
        if (!e) return;
        m->entries = e;
        m->cap = cap;
    }
    memo_entry e = {.kind = kind, .size = size, .nres = nres};
    e.mask = malloc((size_t)body->nin + 1);
    e.out_mask = malloc((size_t)nout_mask + 1);
    if (!e.mask || !e.out_mask) {
        free(e.mask);
        free(e.out_mask);
        return;
    }
    memcpy(e.mask, mask, (size_t)body->nin * sizeof *mask);
    memcpy(e.out_mask, out_mask, (size_t)nout_mask * sizeof *out_mask);
    e.a = ax_ir_retain(a);
    e.b = ax_ir_retain(b);
    m->entries[m->n++] = e;
}

/* Names a derived body `fmt` around the original's name: "jvp(f)", "transpose(jvp(f))". */
static void name_derived(ax_ir *ir, const char *fmt, const ax_ir *from) {
    char name[256];
    snprintf(name, sizeof name, fmt, from->name ? from->name : "<lambda>");
    ax_ir_set_name(ir, name); /* a name is optional: no error if it cannot be kept */
}

/* ---------------------------------------------------------------- the body's native program */

static ax_ir *simplified(ax_ctx *cx, ax_ir *ir) {
    if (!ir) return NULL;
    ax_ir *s = ax_simplify(cx, ir);
    ax_ir_release(ir);
    return s;
}

/* The IR native code is built from: nested calls and custom_call equations replaced by their
 * bodies (native code is never differentiated, and the bodies fuse with the rest). Never ir
 * itself: the program it keeps must not hold the body that holds it. */
static ax_ir *for_native_code(ax_ctx *cx, ax_ir *ir) {
    if (!ax_ir_has_custom_calls(ir)) {
        bool *none = calloc((size_t)ir->nconsts + 1, sizeof *none);
        ax_ir *copy = none ? ax_ir_lift_consts(ir, none) : NULL;
        free(none);
        return copy ? copy : ax_error_oom(cx);
    }
    ax_aval *types = calloc((size_t)ir->nin + 1, sizeof *types);
    if (!types) return ax_error_oom(cx);
    for (int i = 0; i < ir->nin; i++) ax_ir_in_type(ir, i, &types[i]);
    int nout = 0;
    ax_ir *flat = ax_trace_to_ir(cx, ax_ir_inlined_flat_fn, ir, ir->nin, types, &nout);
    free(types);
    return simplified(cx, flat);
}

ax_jit_program *ax_call_program(ax_ctx *cx, ax_ir *body) {
    call_memo *m = memo_of(body);
    if (!m) return ax_error_oom(cx);
    if (m->prog) return m->prog;
    ax_ir *native = for_native_code(cx, body);
    m->prog = native ? ax_jit_start(cx, native) : NULL; /* it logs the build */
    ax_ir_release(native);
    return m->prog;
}

ax_jit_program *ax_call_ready(ax_ctx *cx, ax_ir *body) {
    ax_jit_program *prog = ax_call_program(cx, body);
    return prog && !ax_jit_ready(cx, prog) ? prog : NULL;
}

/* ---------------------------------------------------------------- rules */

int ax_call_nout(const ax_params *p) {
    return p->sub[0]->nout;
}

static int call_shape(ax_ctx *cx, int nin, const ax_aval *in, const ax_params *p, ax_aval *out) {
    const ax_ir *body = p->nsub == 1 ? p->sub[0] : NULL;
    if (!body || body->nin != nin)
        return ax_error(cx, AX_ERR_RUNTIME, "internal error: call's body does not fit"), -1;
    for (int i = 0; i < nin; i++) {
        ax_aval t;
        ax_ir_in_type(body, i, &t);
        if (t.dtype != in[i].dtype || !ax_shape_equal(t.ndim, t.shape, in[i].ndim, in[i].shape))
            return ax_error(cx, AX_ERR_RUNTIME, "internal error: call's argument types"), -1;
    }
    for (int j = 0; j < body->nout; j++) ax_ir_out_type(body, j, &out[j]);
    return 0;
}

static int call_eager(ax_ctx *cx, int nin, ax_array **in, const ax_params *p, ax_array **out) {
    (void)nin;
    ax_jit_program *prog = ax_call_program(cx, (ax_ir *)p->sub[0]);
    return prog ? ax_jit_run(cx, prog, in, out) : -1;
}

/* Binds prim (call, or pmap) of `body` on args; out gets body->nout new references. */
static int bind_call(ax_ctx *cx, ax_prim prim, const ax_params *p, ax_ir *body, int n,
                     ax_array **args, ax_array **out) {
    ax_params q = *p;
    q.nsub = 1;
    q.sub = (struct ax_ir *const *)&body;
    return ax_bind(cx, prim, n, args, &q, out);
}

/* The leading axis a mapped primitive (pmap) adds to its body's operands and results, or 0. */
static int64_t mapped_size(ax_prim prim, const ax_params *p) {
    return ax_prim_get(prim)->flags & AX_PRIM_MAPPED ? p->length : 0;
}

/* The JVP of body for the nonzero tangents nz (body->nin): memoised; nzo (body->nout) gets
 * which output tangents are nonzero. A new reference, or NULL with an error. */
static ax_ir *jvp_body(ax_ctx *cx, ax_ir *body, const bool *nz, bool *nzo) {
    memo_entry *e = memo_find(body, MEMO_JVP, 0, nz);
    if (e) {
        memcpy(nzo, e->out_mask, (size_t)body->nout * sizeof *nzo);
        return ax_ir_retain(e->a);
    }
    ax_ir *jb = ax_pass_jvp(cx, body, nz, NULL, nzo);
    if (jb) {
        name_derived(jb, "jvp(%s)", body);
        memo_add(body, MEMO_JVP, 0, nz, nzo, body->nout, jb, NULL, 0);
    }
    return jb;
}

/* The split of body into its known part *kn (outputs: the known ones, then *nres residuals)
 * and unknown part *un (inputs: the residuals, then the unknown inputs) for the unknown
 * inputs `unknown`: memoised; uo (body->nout) gets which outputs are unknown. New references;
 * 0, or -1 with an error. */
static int split_body(ax_ctx *cx, ax_ir *body, const bool *unknown, bool *uo, ax_ir **kn,
                      ax_ir **un, int *nres) {
    memo_entry *e = memo_find(body, MEMO_PARTIAL_EVAL, 0, unknown);
    if (e) {
        *kn = ax_ir_retain(e->a), *un = ax_ir_retain(e->b), *nres = e->nres;
        memcpy(uo, e->out_mask, (size_t)body->nout * sizeof *uo);
        return 0;
    }
    if (ax_pass_partial_eval(cx, body, unknown, NULL, uo, kn, un, nres)) return -1;
    name_derived(*kn, "%s", body);
    name_derived(*un, "%s", body);
    memo_add(body, MEMO_PARTIAL_EVAL, 0, unknown, uo, body->nout, *kn, *un, *nres);
    return 0;
}

/* The transpose of body for its linear inputs lin: memoised. Its inputs: the nonlinear
 * inputs, then one cotangent per output; its outputs: one cotangent per linear input. A new
 * reference, or NULL with an error. */
static ax_ir *transpose_body(ax_ctx *cx, ax_ir *body, const bool *lin) {
    memo_entry *e = memo_find(body, MEMO_TRANSPOSE, 0, lin);
    if (e) return ax_ir_retain(e->a);
    ax_ir *tb = ax_pass_transpose(cx, body, lin);
    if (tb) {
        name_derived(tb, "transpose(%s)", body);
        memo_add(body, MEMO_TRANSPOSE, 0, lin, lin, 0, tb, NULL, 0);
    }
    return tb;
}

int ax_call_jvp(ax_ctx *cx, ax_prim prim, const ax_params *p, int nin, ax_array **in,
                ax_array **tin, ax_array **out, ax_array **tout) {
    ax_ir *body = (ax_ir *)p->sub[0];
    int nout = body->nout;
    bool *nz = calloc((size_t)nin + (size_t)nout + 1, sizeof *nz), *nzo = nz ? nz + nin : NULL;
    ax_array **args = calloc(2 * (size_t)nin + 2 * (size_t)nout + 1, sizeof *args);
    if (!nz || !args) {
        free(nz), free(args);
        return ax_error_oom(cx), -1;
    }
    for (int i = 0; i < nin; i++) nz[i] = tin[i] != NULL;
    ax_ir *jb = jvp_body(cx, body, nz, nzo);
    int rc = jb ? 0 : -1, n = 0;
    for (int i = 0; i < nin; i++) args[n++] = in[i];
    for (int i = 0; i < nin; i++)
        if (nz[i]) args[n++] = tin[i];
    ax_array **res = args + n;
    if (!rc) rc = bind_call(cx, prim, p, jb, n, args, res);
    for (int j = 0, t = nout; j < nout && !rc; j++) {
        out[j] = res[j];
        tout[j] = nzo[j] ? res[t++] : NULL;
    }
    ax_ir_release(jb);
    free(nz), free(args);
    return rc;
}

int ax_call_partial_eval(ax_ctx *cx, ax_ir_trace *t, ax_prim prim, const ax_params *p, int nin,
                         ax_array **in, const bool *unknown, ax_array **out) {
    ax_ir *body = (ax_ir *)p->sub[0], *kn = NULL, *un = NULL;
    int nout = body->nout, nres = 0;
    bool *uo = calloc((size_t)nout + 1, sizeof *uo);
    if (!uo) return ax_error_oom(cx), -1;
    int rc = split_body(cx, body, unknown, uo, &kn, &un, &nres);
    int nu = 0;
    for (int j = 0; j < nout; j++) nu += uo[j];
    int nk = nout - nu;
    ax_array **args = rc ? NULL : calloc(2 * (size_t)nin + 2 * (size_t)nres + (size_t)nout + 1,
                                         sizeof *args);
    if (!rc && !args) ax_error_oom(cx), rc = -1;
    if (!rc) {
        int n = 0;
        for (int i = 0; i < nin; i++)
            if (!unknown[i]) args[n++] = in[i];
        ax_array **kres = args + n;
        rc = bind_call(cx, prim, p, kn, n, args, kres);
        ax_array **uargs = kres + nk + nres, **ures = NULL;
        if (!rc) {
            int m = 0;
            for (int r = 0; r < nres; r++) uargs[m++] = kres[nk + r];
            for (int i = 0; i < nin; i++)
                if (unknown[i]) uargs[m++] = in[i];
            ures = uargs + m;
            ax_params q = *p;
            q.nsub = 1;
            q.sub = (struct ax_ir *const *)&un;
            rc = ax_ir_trace_record(t, prim, m, uargs, &q, ures);
            if (rc)
                for (int j = 0; j < nk; j++) ax_array_release(kres[j]);
            for (int r = 0; r < nres; r++) ax_array_release(kres[nk + r]);
        }
        for (int j = 0, a = 0, b = 0; j < nout && !rc; j++) out[j] = uo[j] ? ures[b++] : kres[a++];
    }
    ax_ir_release(kn), ax_ir_release(un);
    free(uo), free(args);
    return rc;
}

int ax_call_transpose(ax_ctx *cx, ax_prim prim, const ax_params *p, int nin, ax_array **in,
                      const bool *lin, const ax_aval *in_types, ax_array *const *cts,
                      ax_array **ct_in) {
    (void)in_types;
    int64_t lead = mapped_size(prim, p);
    ax_ir *body = (ax_ir *)p->sub[0];
    int nout = body->nout;
    ax_ir *tb = transpose_body(cx, body, lin);
    ax_array **args = calloc(2 * (size_t)nin + 2 * (size_t)nout + 1, sizeof *args);
    int rc = tb && args ? 0 : -1, n = 0, nz = 0;
    if (tb && !args) ax_error_oom(cx);
    ax_array **zeros = args ? args + nin + nout : NULL, **res = zeros ? zeros + nout : NULL;
    for (int i = 0; i < nin && !rc; i++)
        if (!lin[i]) args[n++] = in[i];
    ax_scope s;
    ax_scope_begin(&s, cx);
    for (int j = 0; j < nout && !rc; j++) {
        ax_aval ty;
        ax_ir_out_type(body, j, &ty);
        ty.weak = false;
        if (lead) {
            memmove(ty.shape + 1, ty.shape, (size_t)ty.ndim * sizeof *ty.shape);
            ty.shape[0] = lead;
            ty.ndim++;
        }
        args[n++] = cts[j] ? cts[j] : ax_lax_full_aval(&s, &ty, 0.0);
        if (!args[n - 1]) rc = -1;
    }
    (void)zeros, (void)nz;
    if (!rc) rc = bind_call(cx, prim, p, tb, n, args, res);
    for (int i = 0, r = 0; i < nin; i++) ct_in[i] = !rc && lin[i] ? res[r++] : NULL;
    ax_scope_end(&s);
    ax_ir_release(tb);
    free(args);
    return rc;
}

/* ---------------------------------------------------------------- reverse mode of one call */

static int count_true(const bool *m, int n) {
    int k = 0;
    for (int i = 0; i < n; i++) k += m[i];
    return k;
}

/* The cotangents the transposed unknown part takes, one per output of the unknown part: the
 * cotangents cts of the body's outputs (NULL = zero) whose tangents are unknown outputs of the
 * JVP body (its first nout outputs are the values, all known; then the nonzero tangents nzo).
 * New references in targs; 0, or -1 with an error. */
static int unknown_cts(ax_ctx *cx, const ax_ir *body, const ax_ir *un, const bool *nzo,
                       const bool *uo, ax_array *const *cts, ax_array **targs) {
    for (int o = 0, j = body->nout, u = 0; o < body->nout; o++) {
        if (!nzo[o] || !uo[j++]) continue; /* no tangent, or one that no input tangent moves */
        ax_aval ty;
        ax_ir_out_type(un, u, &ty);
        ax_array *ct = cts[o];
        if (ct &&
            (ct->dtype != ty.dtype || !ax_shape_equal(ct->ndim, ct->shape, ty.ndim, ty.shape)))
            return ax_error(cx, AX_ERR_RUNTIME, "internal error: a call's cotangent type"), -1;
        targs[u++] = ct ? ax_array_retain(ct) : ax_array_zeros(cx, ty.dtype, ty.ndim, ty.shape);
        if (!targs[u - 1]) return -1;
    }
    return 0;
}

/* The programs of reverse mode through a body for its inputs diff (each memoised): the known
 * part kn of its JVP jb (outputs: the known ones, first the values, then nres residuals) and
 * the transpose tb of the unknown part un (inputs: the residuals, then one cotangent per
 * output of un; outputs: one cotangent per input in diff). */
typedef struct vjp_split {
    bool *nzo; /* the body's outputs whose tangents are nonzero (jb's outputs after the values) */
    bool *uo;  /* jb's outputs that are unknown (un's outputs) */
    ax_ir *jb, *kn, *un, *tb;
    int ntan, nres, nk;
} vjp_split;

static void vjp_split_free(vjp_split *v) {
    free(v->nzo), free(v->uo);
    ax_ir_release(v->jb), ax_ir_release(v->kn), ax_ir_release(v->un), ax_ir_release(v->tb);
}

/* 0; 1 when a value (not only a tangent) is left unknown; -1 with an error. */
static int vjp_split_of(ax_ctx *cx, ax_ir *body, const bool *diff, vjp_split *v) {
    int nin = body->nin, nout = body->nout, ntan = count_true(diff, nin);
    *v = (vjp_split){.ntan = ntan};
    v->nzo = calloc((size_t)nout + 1, sizeof *v->nzo);
    bool *mask = calloc((size_t)nin + (size_t)ntan + 1, sizeof *mask);
    int rc = v->nzo && mask && (v->jb = jvp_body(cx, body, diff, v->nzo)) ? 0 : -1;
    if (!rc && !(v->uo = calloc((size_t)v->jb->nout + 1, sizeof *v->uo))) rc = -1;
    for (int i = nin; !rc && i < nin + ntan; i++) mask[i] = true; /* the tangents */
    if (!rc) rc = split_body(cx, v->jb, mask, v->uo, &v->kn, &v->un, &v->nres);
    free(mask);
    if (rc) return ax_error_pending(cx) ? -1 : (ax_error_oom(cx), -1);
    if (count_true(v->uo, nout)) return 1; /* a while_loop's value needs the tangents */
    v->nk = v->jb->nout - count_true(v->uo, v->jb->nout);
    bool *lin = calloc((size_t)v->nres + (size_t)ntan + 1, sizeof *lin);
    if (!lin) return ax_error_oom(cx), -1;
    for (int i = v->nres; i < v->nres + ntan; i++) lin[i] = true;
    v->tb = transpose_body(cx, v->un, lin);
    free(lin);
    return v->tb ? 0 : -1;
}

/* The split's two parts in a row: kn on the body's inputs, then tb on kn's residuals and the
 * cotangents. out: the body's outputs, then one cotangent per input in diff (new references).
 * Run under the trace that records the fused program below. */
static int run_split(ax_ctx *cx, const ax_ir *body, const vjp_split *v, ax_array **args,
                     ax_array *const *cts, ax_array **out) {
    int nkept = v->nk + v->nres + v->un->nout; /* kn's results, then tb's cotangents */
    ax_array **kres = calloc((size_t)nkept + (size_t)v->ntan + 1, sizeof *kres);
    if (!kres) return ax_error_oom(cx), -1;
    ax_array **targs = kres + v->nk, **tres = kres + nkept;
    int rc = ax_ir_eval(cx, v->kn, args, kres);
    if (!rc) rc = unknown_cts(cx, body, v->un, v->nzo, v->uo, cts, targs + v->nres);
    if (!rc) rc = ax_ir_eval(cx, v->tb, targs, tres);
    for (int j = 0; !rc && j < body->nout; j++) out[j] = ax_array_retain(kres[j]);
    for (int t = 0; !rc && t < v->ntan; t++) out[body->nout + t] = tres[t];
    for (int k = 0; k < (rc ? nkept + v->ntan : nkept); k++) ax_array_release(kres[k]);
    free(kres);
    return rc;
}

typedef struct fused_grad {
    const ax_ir *body;
    const vjp_split *split;
    bool with_value;
} fused_grad;

/* The flat function the gradient program is traced from: its inputs are the body's; the
 * cotangent of the body's one output is 1 (a literal of the program). Its outputs: the body's
 * output if with_value, then the input cotangents. */
static int fused_grad_fn(ax_ctx *cx, void *closure, int nin, ax_array **in, int *nout,
                         ax_array ***out) {
    const fused_grad *f = closure;
    (void)nin;
    ax_aval t;
    ax_ir_out_type(f->body, 0, &t);
    ax_array *one = ax_array_scalar(cx, t.dtype, 1.0);
    *nout = 1 + f->split->ntan;
    *out = one ? calloc((size_t)*nout + 1, sizeof **out) : NULL;
    int rc = *out ? run_split(cx, f->body, f->split, in, &one, *out) : -1;
    if (one && !*out) ax_error_oom(cx);
    ax_array_release(one);
    if (!rc && !f->with_value) { /* what nothing uses the simplifier then drops */
        ax_array_release((*out)[0]);
        *nout -= 1;
        memmove(*out, *out + 1, (size_t)*nout * sizeof **out);
    }
    if (!rc) return 0;
    free(*out);
    *out = NULL;
    return -1;
}

/* The split's two parts traced into one IR, so that grad of a jitted function costs one
 * native program, as jit(grad(f)) does: residuals stay in the program's buffers, its loops
 * fuse across the two parts, and the cotangent 1 is folded in. Memoised per diff and
 * with_value: a call that finds it does not look the split up again. *fused: a new reference;
 * 0, 1 (vjp_split_of's), or -1 with an error. */
static int fused_grad_body(ax_ctx *cx, ax_ir *body, const bool *diff, bool with_value,
                           ax_ir **fused) {
    memo_entry *e = memo_find(body, MEMO_GRAD, with_value, diff);
    if (e) return *fused = ax_ir_retain(e->a), 0;
    *fused = NULL;
    vjp_split v;
    int rc = vjp_split_of(cx, body, diff, &v);
    ax_aval *types = rc ? NULL : calloc((size_t)body->nin + 1, sizeof *types);
    if (!rc && !types) rc = (ax_error_oom(cx), -1);
    for (int i = 0; !rc && i < body->nin; i++) ax_ir_in_type(body, i, &types[i]);
    fused_grad f = {body, &v, with_value};
    int nout = 0;
    if (!rc)
        *fused = simplified(cx, ax_trace_to_ir(cx, fused_grad_fn, &f, body->nin, types, &nout));
    if (!rc && !*fused) rc = -1;
    if (!rc) {
        name_derived(*fused, with_value ? "value_and_vjp(%s)" : "vjp(%s)", body);
        memo_add(body, MEMO_GRAD, with_value, diff, diff, 0, *fused, NULL, 0);
    }
    free(types);
    vjp_split_free(&v);
    return rc;
}

int ax_call_grad(ax_ctx *cx, ax_ir *body, ax_array **args, const bool *diff, ax_array **value,
                 ax_array **grads) {
    ax_ir *fused = NULL;
    int rc = fused_grad_body(cx, body, diff, value != NULL, &fused);
    ax_jit_program *fp = fused ? ax_call_program(cx, fused) : NULL;
    if (!rc && !fp) rc = -1;
    ax_array *res[SMALL_CALL], **r = value ? res : grads;
    int ntan = count_true(diff, body->nin);
    if (!rc && value && ntan >= SMALL_CALL && !(r = calloc((size_t)ntan + 1, sizeof *r)))
        rc = (ax_error_oom(cx), -1);
    if (!rc) rc = ax_jit_run(cx, fp, args, r);
    if (!rc && value) *value = r[0], memcpy(grads, r + 1, (size_t)ntan * sizeof *grads);
    if (r != res && r != grads) free(r);
    ax_ir_release(fused);
    return rc;
}

/* A mapped primitive's operands keep their leading axis: the batch goes second. */
int ax_call_batch(ax_ctx *cx, ax_prim prim, const ax_params *p, int nin, ax_array **in,
                  const int *bdim, int64_t size, ax_array **out, int *out_bdim) {
    int lead = mapped_size(prim, p) ? 1 : 0;
    ax_ir *body = (ax_ir *)p->sub[0];
    int nout = body->nout;
    bool *bm = calloc((size_t)nin + (size_t)nout + 1, sizeof *bm), *bo = bm ? bm + nin : NULL;
    ax_array **x = calloc((size_t)nin + 1, sizeof *x);
    int rc = bm && x ? 0 : -1;
    if (rc) ax_error_oom(cx);
    for (int i = 0; i < nin && !rc; i++) {
        bm[i] = bdim[i] >= 0;
        x[i] = bm[i] ? ax_moveaxis(cx, in[i], bdim[i], lead) : ax_array_retain(in[i]);
        if (!x[i]) rc = -1;
    }
    memo_entry *e = rc ? NULL : memo_find(body, MEMO_VMAP, size, bm);
    ax_ir *vb = rc ? NULL : e ? ax_ir_retain(e->a) : ax_pass_vmap(cx, body, size, bm, NULL, bo);
    if (e) memcpy(bo, e->out_mask, (size_t)nout * sizeof *bo);
    if (vb && !e) {
        name_derived(vb, "vmap(%s)", body);
        memo_add(body, MEMO_VMAP, size, bm, bo, nout, vb, NULL, 0);
    }
    if (!rc && !vb) rc = -1;
    if (!rc) rc = bind_call(cx, prim, p, vb, nin, x, out);
    for (int j = 0; j < nout; j++) out_bdim[j] = bo && bo[j] ? lead : -1;
    for (int i = 0; x && i < nin; i++) ax_array_release(x[i]);
    ax_ir_release(vb);
    free(bm), free(x);
    return rc;
}

void ax_call_dependencies(const ax_params *p, int nin, const bool *in, bool *out) {
    (void)nin;
    ax_ir_dependencies(p->sub[0], in, out);
}

static void call_format(ax_ir_printer *pr, const ax_params *p) {
    const ax_ir *body = p->sub[0];
    ax_strbuf_appendf(ax_ir_print_param(pr), "name=%s", body->name ? body->name : "<lambda>");
    ax_ir_print_sub(pr, "jaxpr", body);
}

static const ax_ir *call_inline_body(const ax_params *p, int *out) {
    *out = -1;
    return p->sub[0];
}

/* The body's native program, built before devices run it (they only read it). */
static int call_ready_for_devices(ax_ctx *cx, const ax_params *p) {
    return ax_call_ready(cx, p->sub[0]) ? 0 : -1;
}

const ax_prim_info ax_call_info = {
    .name = "pjit",
    .nin = -1,
    .nout = -1,
    .shape = call_shape,
    .eager = call_eager,
    .jvp = ax_call_jvp,
    .transpose = ax_call_transpose,
    .batch = ax_call_batch,
    .partial_eval = ax_call_partial_eval,
    .nout_of = ax_call_nout,
    .dependencies = ax_call_dependencies,
    .format_subs = call_format,
    .inline_body = call_inline_body,
    .ready_for_devices = call_ready_for_devices,
    .lower = AX_LOWER_EAGER,
    .tested_by = "tests/unit/test_control_flow.c, tests/lang/lax_transforms.ax",
};

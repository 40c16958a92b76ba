/* The shared JVP rules (forward-mode derivatives): the rows of the primitive table name one
 * and give what differs (a derivative, a tangent rule, the linear operands; see ad_rules.h).
 * Each computes the primal outputs by binding the primitive itself, then the tangents. */
#include <math.h>
#include <string.h>

#include "ad_rules.h"

/* Binds the primitive on the primal inputs: the primal half of every rule. */
static int primal(ax_ctx *cx, ax_prim prim, const ax_params *p, int nin, ax_array **in,
                  ax_array **out) {
    return ax_bind(cx, prim, nin, in, p, out);
}

/* Finishes a single-output rule: broadcasts the tangent to the output's shape. */
static int finish1(ax_scope *s, ax_array *t, ax_array *out, ax_array **tout) {
    if (t) t = ax_lax_broadcast_to(s, t, out->ndim, out->shape);
    bool failed = ax_error_pending(s->cx); /* a term of t may have failed, leaving it partial */
    *tout = t && !failed ? ax_scope_keep(s, t) : NULL;
    ax_scope_end(s);
    return failed ? -1 : 0;
}

int ax_jvp_unary(ax_ctx *cx, ax_prim prim, const ax_params *p, int nin, ax_array **in,
                 ax_array **tin, ax_array **out, ax_array **tout) {
    (void)nin;
    if (primal(cx, prim, p, 1, in, out)) return -1;
    if (!tin[0]) {
        *tout = NULL;
        return 0;
    }
    ax_scope s;
    ax_scope_begin(&s, cx);
    ax_array *d = ax_prim_get(prim)->derivative(&s, p, in[0], out[0]);
    if (finish1(&s, ax_lax_mul(&s, tin[0], d), out[0], tout)) {
        ax_array_release(out[0]);
        out[0] = NULL;
        return -1;
    }
    return 0;
}

ax_array *ax_tangent_sum(ax_scope *s, ax_array *a, ax_array *b, const ax_array *z) {
    if (a) a = ax_lax_broadcast_to(s, a, z->ndim, z->shape);
    if (b) b = ax_lax_broadcast_to(s, b, z->ndim, z->shape);
    return a && b ? ax_lax_add(s, a, b) : a ? a : b;
}

/* The tangent of a primitive linear in the operands marked lin: the primitive of their
 * tangents (zeros for the missing ones), the other operands as they are. */
static int jvp_of_linear(ax_ctx *cx, ax_prim prim, const ax_params *p, int nin, ax_array **in,
                         ax_array **tin, const bool *lin, ax_array **out, ax_array **tout) {
    if (primal(cx, prim, p, nin, in, out)) return -1;
    bool any = false;
    for (int i = 0; i < nin; i++) any |= tin[i] && lin[i];
    if (!any || !ax_dtype_is_float(out[0]->dtype)) {
        *tout = NULL;
        return 0;
    }
    ax_scope s;
    ax_scope_begin(&s, cx);
    ax_array *small[8], **targs = ax_scratch(cx, small, 8, nin, sizeof *targs);
    for (int i = 0; targs && i < nin; i++) {
        if (!lin[i])
            targs[i] = in[i];
        else
            targs[i] = tin[i] ? tin[i] : ax_lax_zeros_like(&s, in[i]);
    }
    ax_array *t = targs ? ax_lax_bind(&s, prim, nin, targs, p) : NULL;
    ax_scratch_free(targs, small);
    if (finish1(&s, t, out[0], tout)) {
        ax_array_release(out[0]);
        out[0] = NULL;
        return -1;
    }
    return 0;
}

/* Operands i for which pick(i, arg) holds are linear. */
static int jvp_linear_where(ax_ctx *cx, ax_prim prim, const ax_params *p, int nin, ax_array **in,
                            ax_array **tin, ax_array **out, ax_array **tout,
                            bool (*pick)(int i, unsigned arg), unsigned arg) {
    bool small[8], *lin = ax_scratch(cx, small, 8, nin, sizeof *lin);
    if (!lin) return -1;
    for (int i = 0; i < nin; i++) lin[i] = pick(i, arg);
    int rc = jvp_of_linear(cx, prim, p, nin, in, tin, lin, out, tout);
    ax_scratch_free(lin, small);
    return rc;
}

static bool in_mask(int i, unsigned mask) {
    return mask & (1u << (i < 31 ? i : 31));
}

static bool from(int i, unsigned first) {
    return i >= (int)first;
}

int ax_jvp_linear(ax_ctx *cx, ax_prim prim, const ax_params *p, int nin, ax_array **in,
                  ax_array **tin, ax_array **out, ax_array **tout) {
    unsigned mask = ax_prim_get(prim)->linear_in;
    return jvp_linear_where(cx, prim, p, nin, in, tin, out, tout, in_mask, mask);
}

int ax_jvp_linear_from(ax_ctx *cx, ax_prim prim, const ax_params *p, int nin, ax_array **in,
                       ax_array **tin, ax_array **out, ax_array **tout, int first) {
    return jvp_linear_where(cx, prim, p, nin, in, tin, out, tout, from, (unsigned)first);
}

int ax_jvp_zero(ax_ctx *cx, ax_prim prim, const ax_params *p, int nin, ax_array **in,
                ax_array **tin, ax_array **out, ax_array **tout) {
    (void)tin;
    if (primal(cx, prim, p, nin, in, out)) return -1;
    for (int i = 0; i < ax_prim_get(prim)->nout; i++) tout[i] = NULL;
    return 0;
}

int ax_jvp_tangent(ax_ctx *cx, ax_prim prim, const ax_params *p, int nin, ax_array **in,
                   ax_array **tin, ax_array **out, ax_array **tout) {
    if (primal(cx, prim, p, nin, in, out)) return -1;
    bool any = false;
    for (int i = 0; i < nin; i++) any |= tin[i] != NULL;
    if (!any) {
        *tout = NULL;
        return 0;
    }
    ax_scope s;
    ax_scope_begin(&s, cx);
    ax_array *t = ax_prim_get(prim)->tangent(&s, p, in, tin, out[0]);
    if (finish1(&s, t, out[0], tout)) {
        ax_array_release(out[0]);
        out[0] = NULL;
        return -1;
    }
    return 0;
}

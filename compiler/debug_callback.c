/* debug_callback's rules (see debug_callback.h). */
#include "debug_callback.h"

#include <stdlib.h>

#include "ad_rules.h"
#include "lax.h"

static bool ir_has_effect(const ax_ir *ir) {
    for (int k = 0; k < ir->neqns; k++)
        if (ax_eqn_has_effect(&ir->eqns[k])) return true;
    return false;
}

bool ax_eqn_has_effect(const ax_ir_eqn *e) {
    if (ax_prim_get(e->prim)->flags & AX_PRIM_EFFECT) return true;
    for (int i = 0; i < e->nsub; i++)
        if (ir_has_effect(e->sub[i])) return true;
    return false;
}

static int debug_shape(ax_ctx *cx, int nin, const ax_aval *in, const ax_params *p, ax_aval *out) {
    (void)nin, (void)in, (void)out;
    if (!p->cb || !p->cb->effect)
        return ax_error(cx, AX_ERR_RUNTIME, "internal error: debug_callback without a callback"),
               -1;
    return 0;
}

static int debug_eager(ax_ctx *cx, int nin, ax_array **in, const ax_params *p, ax_array **out) {
    (void)out;
    return p->cb->effect(cx, p->cb->data, nin, in);
}

/* JVP: the effect sees the primal values; nothing has a tangent. */
static int debug_jvp(ax_ctx *cx, ax_prim prim, const ax_params *p, int nin, ax_array **in,
                     ax_array **tin, ax_array **out, ax_array **tout) {
    (void)tin, (void)out, (void)tout;
    return ax_bind(cx, prim, nin, in, p, NULL);
}

/* Batching: one effect per example, in order (JAX unrolls debug_callback over the mapped
 * axis); unbatched operands are the same for every example. */
static int debug_batch(ax_ctx *cx, ax_prim prim, const ax_params *p, int nin, ax_array **in,
                       const int *bdim, int64_t size, ax_array **out, int *out_bdim) {
    (void)out, (void)out_bdim;
    ax_array **row = calloc((size_t)nin + 1, sizeof *row);
    if (!row) return ax_error_oom(cx), -1;
    int rc = 0;
    for (int64_t i = 0; i < size && !rc; i++) {
        ax_scope s;
        ax_scope_begin(&s, cx);
        for (int k = 0; k < nin && !rc; k++) {
            if (bdim[k] < 0) {
                row[k] = in[k];
                continue;
            }
            ax_params sl = {.ndim = in[k]->ndim}, sq = {.naxes = 1};
            for (int d = 0; d < in[k]->ndim; d++) {
                sl.hi[d] = d == bdim[k] ? i + 1 : in[k]->shape[d];
                sl.lo[d] = d == bdim[k] ? i : 0;
                sl.step[d] = 1;
            }
            sq.axes[0] = bdim[k];
            ax_array *x = ax_lax_bind(&s, AX_P_SLICE, 1, &in[k], &sl);
            row[k] = x ? ax_lax_bind(&s, AX_P_SQUEEZE, 1, &x, &sq) : NULL;
            if (!row[k]) rc = -1;
        }
        if (!rc) rc = ax_bind(cx, prim, nin, row, p, NULL);
        ax_scope_end(&s);
    }
    free(row);
    return rc;
}

static void debug_dependencies(const ax_params *p, int nin, const bool *in, bool *out) {
    (void)p, (void)nin, (void)in, (void)out; /* no outputs */
}

static void debug_format(ax_strbuf *s, const ax_params *p) {
    ax_strbuf_appendf(s, "[callback=%s effect=Debug]", p->cb ? p->cb->name : "?");
}

const ax_prim_info ax_debug_callback_info = {
    .name = "debug_callback",
    .nin = -1,
    .nout = 0,
    .flags = AX_PRIM_EFFECT,
    .shape = debug_shape,
    .eager = debug_eager,
    .jvp = debug_jvp,
    .batch = debug_batch,
    .dependencies = debug_dependencies,
    .format_params = debug_format,
    .lower = AX_LOWER_EAGER,
    .tested_by = "tests/unit/test_debug_callback.c, tests/lang/jax_debug_print.ax",
};

/* Layout variants of jitted programs for broadcast inputs (see jit_layout.h). */
#include "jit_layout.h"

#include <stdio.h>
#include <stdlib.h>

#include "passes.h"
#include "simplify.h"
#include "trace_ir.h"

uint32_t ax_layout_broadcast_axes(const ax_array *a) {
    uint32_t axes = 0;
    for (int d = 0; d < a->ndim; d++)
        if (a->strides[d] == 0 && a->shape[d] > 1) axes |= 1u << d;
    return axes;
}

ax_array *ax_layout_compact(ax_ctx *cx, ax_array *a, uint32_t axes) {
    int64_t shape[AX_MAX_RANK], strides[AX_MAX_RANK];
    int n = 0;
    for (int d = 0; d < a->ndim; d++)
        if (!(axes >> d & 1)) {
            shape[n] = a->shape[d];
            strides[n++] = a->strides[d];
        }
    return ax_array_view(cx, a, n, shape, strides, a->offset);
}

typedef struct variant_closure {
    const ax_ir *ir;
    const uint32_t *axes;
} variant_closure;

/* Broadcasts the compact input x back to input i's type. */
static int broadcast_back(ax_ctx *cx, const ax_aval *full, uint32_t axes, ax_array *x,
                          ax_array **out) {
    ax_params p = {.ndim = full->ndim};
    for (int d = 0; d < full->ndim; d++) {
        p.shape[d] = full->shape[d];
        if (!(axes >> d & 1)) p.axes[p.naxes++] = d;
    }
    return ax_bind(cx, AX_P_BROADCAST_IN_DIM, 1, &x, &p, out);
}

static int variant_fn(ax_ctx *cx, void *closure, int nin, ax_array **in, int *nout,
                      ax_array ***out) {
    const variant_closure *c = closure;
    ax_array **full = calloc((size_t)nin + 1, sizeof *full);
    if (!full) return ax_error_oom(cx), -1;
    int rc = 0;
    for (int i = 0; i < nin && !rc; i++) {
        ax_aval t;
        ax_ir_in_type(c->ir, i, &t);
        if (c->axes[i])
            rc = broadcast_back(cx, &t, c->axes[i], in[i], &full[i]);
        else
            full[i] = ax_array_retain(in[i]);
    }
    if (!rc) rc = ax_ir_flat_fn(cx, (void *)c->ir, nin, full, nout, out);
    for (int i = 0; i < nin; i++) ax_array_release(full[i]);
    free(full);
    return rc;
}

ax_ir *ax_layout_variant(ax_ctx *cx, const ax_ir *ir, const uint32_t *axes) {
    ax_aval *types = calloc((size_t)ir->nin + 1, sizeof *types);
    if (!types) return ax_error_oom(cx);
    for (int i = 0; i < ir->nin; i++) {
        ax_aval t;
        ax_ir_in_type(ir, i, &t);
        types[i] = t;
        types[i].ndim = 0;
        for (int d = 0; d < t.ndim; d++)
            if (!(axes[i] >> d & 1)) types[i].shape[types[i].ndim++] = t.shape[d];
    }
    variant_closure c = {ir, axes};
    int nout = 0;
    ax_ir *traced = ax_trace_to_ir(cx, variant_fn, &c, ir->nin, types, &nout);
    free(types);
    ax_ir *v = traced ? ax_simplify(cx, traced) : NULL;
    ax_ir_release(traced);
    char name[256];
    snprintf(name, sizeof name, "%s (broadcast inputs)", ir->name ? ir->name : "<lambda>");
    if (v && ax_ir_set_name(v, name)) {
        ax_ir_release(v);
        return ax_error_oom(cx);
    }
    return v;
}

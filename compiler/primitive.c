/* The one table of primitives (its rows are defined beside their rules), and bind. */
#include "primitive.h"

#include <stdlib.h>
#include <string.h>

#include "collectives.h"
#include "ir.h"
#include "trace.h"

ax_callback *ax_callback_retain(ax_callback *cb) {
    if (cb) cb->refs++;
    return cb;
}

void ax_callback_release(ax_callback *cb) {
    if (!cb || --cb->refs > 0) return;
    if (cb->free) cb->free(cb->data);
    ax_ir_release(cb->body);
    free(cb);
}

/* ---- the table ---- */

/* Each row is defined beside its rules (compiler/primitives.def says where). */
#define AX_PRIM(NAME, row) extern const ax_prim_info ax_##row##_info;
#include "primitives.def"
#undef AX_PRIM

static const ax_prim_info *const table[AX_P_NPRIMS] = {
#define AX_PRIM(NAME, row) [AX_P_##NAME] = &ax_##row##_info,
#include "primitives.def"
#undef AX_PRIM
};

const ax_prim_info *ax_prim_get(ax_prim p) {
    return (unsigned)p < AX_P_NPRIMS ? table[p] : NULL;
}

int ax_prim_nout(ax_prim p, const ax_params *params) {
    const ax_prim_info *info = table[p];
    return info->nout >= 0 ? info->nout : info->nout_of(params);
}

int ax_prim_lookup(const char *name) {
    for (int p = 0; p < AX_P_NPRIMS; p++)
        if (table[p]->name && !strcmp(table[p]->name, name)) return p;
    return -1;
}

void ax_aval_of(ax_aval *out, const ax_array *a) {
    out->dtype = a->dtype;
    out->weak = a->weak;
    out->ndim = a->ndim;
    memcpy(out->shape, a->shape, (size_t)a->ndim * sizeof *a->shape);
}

/* ---- bind ---- */

static int check_arity(ax_ctx *cx, ax_prim p, int nin) {
    const ax_prim_info *info = ax_prim_get(p);
    if (!info) {
        ax_error(cx, AX_ERR_RUNTIME, "internal error: no primitive numbered %d", (int)p);
        return -1;
    }
    if (nin < 0 || (info->nin >= 0 && nin != info->nin)) {
        ax_error(cx, AX_ERR_TYPE, "%s takes %d operand%s, got %d", info->name, info->nin,
                 info->nin == 1 ? "" : "s", nin);
        return -1;
    }
    return 0;
}

/* The primitive's shape rule, then runtime/array.h's invariant on its outputs: a result whose
 * size does not fit in 64 bits (a product of huge broadcast dimensions, an outer product of
 * long vectors) is a ValueError naming its shape, whatever the rule computed it from. */
static int infer(ax_ctx *cx, ax_prim p, int nin, const ax_aval *in, const ax_params *params,
                 ax_aval *out) {
    const ax_prim_info *info = table[p];
    if (info->shape(cx, nin, in, params, out)) return -1;
    for (int k = 0, nout = ax_prim_nout(p, params); k < nout; k++)
        if (!ax_shape_check(cx, info->name, out[k].dtype, out[k].ndim, out[k].shape)) return -1;
    return 0;
}

int ax_prim_infer(ax_ctx *cx, ax_prim p, int nin, const ax_aval *in, const ax_params *params,
                  ax_aval *out) {
    static const ax_params no_params;
    if (check_arity(cx, p, nin)) return -1;
    return infer(cx, p, nin, in, params ? params : &no_params, out);
}

/* Gives out the weak flag of its aval. A kernel may return a header it shares (its input
 * retained, a cached view): that one is not ours to change, so the flag goes on a new view. */
static int set_weak(ax_ctx *cx, ax_array **out, bool weak) {
    ax_array *a = *out;
    if (a->weak == weak) return 0;
    if (ax_refs_load(&a->refs) == 1) {
        a->weak = weak;
        return 0;
    }
    ax_array *v = ax_array_view(cx, a, a->ndim, a->shape, a->strides, a->offset);
    if (!v) return -1;
    v->weak = weak;
    ax_array_release(a);
    *out = v;
    return 0;
}

/* Checks the kernels' outputs against the shape rule (a disagreement is a bug in one of them,
 * reported rather than aborted on) and gives them the rule's weak flags. */
static int finish_outputs(ax_ctx *cx, const ax_prim_info *info, int nout, const ax_aval *want,
                          ax_array **out) {
    for (int k = 0; k < nout; k++) {
        char got[400], rule[400];
        if (!out[k]) {
            ax_error(cx, AX_ERR_RUNTIME, "internal error: the %s kernel returned no result",
                     info->name);
            return -1;
        }
        if (out[k]->dtype != want[k].dtype ||
            !ax_shape_equal(out[k]->ndim, out[k]->shape, want[k].ndim, want[k].shape)) {
            ax_array_type_format(got, sizeof got, out[k]);
            ax_type_format(rule, sizeof rule, want[k].dtype, want[k].ndim, want[k].shape);
            ax_error(cx, AX_ERR_RUNTIME,
                     "internal error: the %s kernel returned %s where its shape rule gives %s",
                     info->name, got, rule);
            return -1;
        }
        if (set_weak(cx, &out[k], want[k].weak)) return -1;
    }
    return 0;
}

static void release_outputs(int nout, ax_array **out) {
    for (int k = 0; k < nout; k++) {
        ax_array_release(out[k]);
        out[k] = NULL;
    }
}

void *ax_scratch(ax_ctx *cx, void *small, int cap, int n, size_t size) {
    if (n <= cap) return small;
    void *p = malloc((size_t)n * size);
    return p ? p : ax_error_oom(cx);
}

void ax_scratch_free(void *p, const void *small) {
    if (p != small) free(p);
}

/* The avals of the inputs, in `small` when they fit, else in a new allocation (NULL + error). */
static ax_aval *avals_of(ax_ctx *cx, int nin, ax_array **in, ax_aval *small, int nsmall) {
    ax_aval *avals = ax_scratch(cx, small, nsmall, nin, sizeof *avals);
    if (!avals) return NULL;
    for (int i = 0; i < nin; i++) ax_aval_of(&avals[i], in[i]);
    return avals;
}

static int bind_eager(ax_ctx *cx, ax_prim p, int nin, ax_array **in, const ax_params *params,
                      ax_array **out) {
    const ax_prim_info *info = table[p];
    int nout = ax_prim_nout(p, params);
    if (ax_ctx_take_interrupt(cx)) return -1; /* a Ctrl-C stops a chain of operations here */
    ax_aval small[8], want_small[4];
    small[0].ndim = 0; /* defined memory even for a primitive without inputs (iota) */
    ax_aval *avals = avals_of(cx, nin, in, small, 8);
    ax_aval *want = nout <= 4 ? want_small : malloc((size_t)nout * sizeof *want);
    int rc = avals && want ? 0 : -1;
    if (want == NULL) ax_error_oom(cx);
    if (rc == 0) rc = infer(cx, p, nin, avals, params, want);
    if (avals && avals != small) free(avals);
    if (rc == 0) rc = info->eager(cx, nin, in, params, out);
    if (rc == 0 && ax_ctx_take_interrupt(cx)) rc = -1; /* the kernel did not stop: drop it */
    if (rc == 0) rc = finish_outputs(cx, info, nout, want, out);
    if (rc != 0) release_outputs(nout, out);
    if (want && want != want_small) free(want);
    return rc;
}

int ax_bind(ax_ctx *cx, ax_prim p, int nin, ax_array **in, const ax_params *params,
            ax_array **out) {
    static const ax_params no_params;
    if (check_arity(cx, p, nin)) return -1;
    if (!params) params = &no_params;
    for (int k = 0, n = ax_prim_nout(p, params); k < n; k++) out[k] = NULL;
    for (int i = 0; i < nin; i++) {
        if (in[i]) continue;
        ax_error(cx, AX_ERR_RUNTIME, "internal error: operand %d of %s is missing", i,
                 table[p]->name);
        return -1;
    }
    ax_trace *trace;
    if (ax_trace_find(cx, nin, in, &trace)) return -1;
    if (table[p]->flags & AX_PRIM_COLLECTIVE && ax_collective_route(cx, p, params, &trace))
        return -1;
    if (trace) return trace->process_primitive(cx, trace, p, nin, in, params, out);
    return bind_eager(cx, p, nin, in, params, out);
}

ax_array *ax_bind1(ax_ctx *cx, ax_prim p, int nin, ax_array **in, const ax_params *params) {
    const ax_prim_info *info = ax_prim_get(p);
    if (info && info->nout != 1) {
        return ax_error(cx, AX_ERR_RUNTIME, "internal error: %s has %d outputs, not 1", info->name,
                        info->nout);
    }
    ax_array *out = NULL;
    return ax_bind(cx, p, nin, in, params, &out) == 0 ? out : NULL;
}

ax_array *ax_bind_unary(ax_ctx *cx, ax_prim p, ax_array *x) {
    return ax_bind1(cx, p, 1, &x, NULL);
}

ax_array *ax_bind_binary(ax_ctx *cx, ax_prim p, ax_array *a, ax_array *b) {
    ax_array *in[2] = {a, b};
    return ax_bind1(cx, p, 2, in, NULL);
}

/* The batching trace (see vmap.h). */
#include "vmap.h"

#include <stdlib.h>
#include <string.h>

#include "collectives.h"

typedef struct batched {
    ax_array *value; /* with the batch dimension */
    int bdim;
} batched;

typedef struct vmap_trace {
    ax_trace base;
    int64_t size;
    const char *axis; /* vmap(axis_name=...): the name its collectives use, or NULL */
} vmap_trace;

static void batched_free(void *data) {
    batched *b = data;
    ax_array_release(b->value);
    free(b);
}

/* A tracer for `value` (taken) whose batch dimension is bdim. */
static ax_array *batch_tracer(ax_ctx *cx, vmap_trace *t, ax_array *value, int bdim) {
    batched *b = malloc(sizeof *b);
    if (!b) {
        ax_array_release(value);
        return ax_error_oom(cx);
    }
    b->value = value;
    b->bdim = bdim;
    ax_aval type;
    ax_aval_of(&type, value);
    memmove(type.shape + bdim, type.shape + bdim + 1,
            (size_t)(type.ndim - bdim - 1) * sizeof *type.shape);
    type.ndim--;
    return ax_tracer_new(cx, &t->base, &type, b, batched_free);
}

static ax_batch_rule rule_of(ax_ctx *cx, ax_prim p) {
    const ax_prim_info *info = ax_prim_get(p);
    if (!info->batch) ax_error(cx, AX_ERR_RUNTIME, "vmap: %s has no batching rule", info->name);
    return info->batch;
}

static int vmap_process(ax_ctx *cx, ax_trace *trace, ax_prim p, int nin, ax_array **in,
                        const ax_params *params, ax_array **out) {
    vmap_trace *t = trace->data;
    ax_batch_rule rule = rule_of(cx, p);
    if (!rule) return -1;
    int nout = ax_prim_nout(p, params);
    ax_array **vals = calloc((size_t)nin + (size_t)nout + 1, sizeof *vals);
    int *bdims = calloc((size_t)nin + (size_t)nout + 1, sizeof *bdims);
    if (!vals || !bdims) {
        free(vals);
        free(bdims);
        return ax_error_oom(cx), -1;
    }
    ax_array **res = vals + nin;
    int *obd = bdims + nin;
    for (int i = 0; i < nin; i++) {
        batched *b = ax_tracer_data(in[i], trace);
        vals[i] = b ? b->value : in[i];
        bdims[i] = b ? b->bdim : -1;
    }
    /* the rule's collectives and sub-programs see which axis they are batched along */
    const char *outer_axis = ax_set_batching_axis(cx, t->axis);
    int rc = rule(cx, p, params, nin, vals, bdims, t->size, res, obd);
    ax_set_batching_axis(cx, outer_axis);
    for (int j = 0; j < nout && !rc; j++) {
        if (obd[j] < 0) {
            out[j] = res[j];
            res[j] = NULL;
        } else {
            out[j] = batch_tracer(cx, t, res[j], obd[j]);
            res[j] = NULL;
            if (!out[j]) rc = -1;
        }
    }
    for (int j = 0; j < nout; j++) ax_array_release(res[j]);
    for (int j = 0; rc && j < nout; j++) {
        ax_array_release(out[j]);
        out[j] = NULL;
    }
    free(vals);
    free(bdims);
    return rc;
}

int ax_vmap_place_first(ax_ctx *cx, int n, ax_array **out, int *bdims, int64_t size) {
    int rc = 0;
    for (int j = 0; j < n; j++) {
        out[j] = rc ? (ax_array_release(out[j]), NULL)
                    : ax_vmap_place_take(cx, out[j], bdims[j], size, 0);
        if (!out[j]) rc = -1;
    }
    free(bdims);
    return rc;
}

ax_array *ax_vmap_place_take(ax_ctx *cx, ax_array *x, int bdim, int64_t size, int axis) {
    if (!x) return NULL;
    ax_array *r;
    if (bdim < 0) {
        ax_params p = {.ndim = x->ndim + 1, .naxes = x->ndim};
        for (int d = 0, k = 0; d <= x->ndim; d++) {
            if (d == axis) {
                p.shape[d] = size;
                continue;
            }
            p.shape[d] = x->shape[k];
            p.axes[k++] = d;
        }
        r = ax_bind1(cx, AX_P_BROADCAST_IN_DIM, 1, &x, &p);
    } else {
        r = ax_moveaxis(cx, x, bdim, axis);
    }
    ax_array_release(x);
    return r;
}

int ax_vmap(ax_ctx *cx, ax_flat_fn fn, void *closure, int nin, ax_array **in, const int *in_axes,
            int64_t size, int *nout, ax_array ***out, int **out_bdims) {
    return ax_vmap_named(cx, NULL, fn, closure, nin, in, in_axes, size, nout, out, out_bdims);
}

int ax_vmap_named(ax_ctx *cx, const char *axis, ax_flat_fn fn, void *closure, int nin,
                  ax_array **in, const int *in_axes, int64_t size, int *nout, ax_array ***out,
                  int **out_bdims) {
    vmap_trace t = {.base = {.name = "vmap", .process_primitive = vmap_process}, .size = size};
    t.base.data = &t;
    ax_axis_frame frame = {.kind = AX_AXIS_BATCHED, .size = size, .trace = &t.base};
    if (axis && !(t.axis = frame.name = ax_intern_str(cx, axis))) return -1;
    if (ax_trace_push(cx, &t.base)) return -1;
    if (axis && ax_axis_push(cx, &frame)) {
        ax_trace_pop(cx, &t.base);
        return -1;
    }
    ax_array **args = calloc((size_t)nin + 1, sizeof *args), **res = NULL;
    int rc = args ? 0 : (ax_error_oom(cx), -1);
    for (int i = 0; i < nin && !rc; i++) {
        args[i] = in_axes[i] < 0 ? ax_array_retain(in[i])
                                 : batch_tracer(cx, &t, ax_array_retain(in[i]), in_axes[i]);
        if (!args[i]) rc = -1;
    }
    if (!rc) rc = fn(cx, closure, nin, args, nout, &res);
    for (int i = 0; args && i < nin; i++) ax_array_release(args[i]);
    free(args);
    if (axis) ax_axis_pop(cx, &frame);
    ax_trace_pop(cx, &t.base);
    if (rc) return -1;
    *out = calloc((size_t)*nout + 1, sizeof **out);
    *out_bdims = calloc((size_t)*nout + 1, sizeof **out_bdims);
    for (int j = 0; j < *nout; j++) {
        batched *b = ax_tracer_data(res[j], &t.base);
        if (*out && *out_bdims) {
            (*out)[j] = ax_array_retain(b ? b->value : res[j]);
            (*out_bdims)[j] = b ? b->bdim : -1;
        }
        ax_array_release(res[j]);
    }
    free(res);
    if (!*out || !*out_bdims) {
        free(*out);
        free(*out_bdims);
        *out = NULL, *out_bdims = NULL; /* the caller releases what they hold */
        return ax_error_oom(cx), -1;
    }
    return 0;
}

/* The pmap primitive (see pmap.h): its shape rule, the eager rule that runs the body on the
 * devices, and call's rules (compiler/call.h) with the body's axis name in scope. */
#include "pmap.h"

#include <stdlib.h>
#include <string.h>

#include "../runtime/device.h"
#include "../runtime/strided.h"
#include "call.h"
#include "jit.h"
#include "passes.h"
#include "simplify.h"

#define NESTED_XLA_PMAP                                                                            \
    "pmap: a pmap traced outside this pmap's function cannot run on its devices (call the "        \
    "inner pmap from the outer pmap's function)"

static const ax_ir *body_of(const ax_params *p) {
    return p->nsub == 1 ? p->sub[0] : NULL;
}

/* The device count the body's collectives see: this process's slices times the processes
 * (each runs the same pmap over its own devices). */
static int64_t axis_size(ax_ctx *cx, const ax_params *p) {
    return p->length * ax_process_count(cx);
}

/* ---------------------------------------------------------------- shape */

static int pmap_shape(ax_ctx *cx, int nin, const ax_aval *in, const ax_params *p, ax_aval *out) {
    const ax_ir *body = body_of(p);
    if (!body || body->nin != nin)
        return ax_error(cx, AX_ERR_RUNTIME, "internal error: pmap's body does not fit"), -1;
    for (int i = 0; i < nin; i++) {
        ax_aval t;
        ax_ir_in_type(body, i, &t);
        bool fits = in[i].ndim == t.ndim + 1 && in[i].shape[0] == p->length &&
                    in[i].dtype == t.dtype &&
                    ax_shape_equal(t.ndim, t.shape, in[i].ndim - 1, in[i].shape + 1);
        if (!fits) {
            char want[128], got[128];
            ax_type_format(want, sizeof want, t.dtype, t.ndim, t.shape);
            ax_type_format(got, sizeof got, in[i].dtype, in[i].ndim, in[i].shape);
            ax_error(cx, AX_ERR_RUNTIME,
                     "internal error: pmap operand %d is %s, not %lld slices of %s", i, got,
                     (long long)p->length, want);
            return -1;
        }
    }
    for (int j = 0; j < body->nout; j++) {
        ax_aval t;
        ax_ir_out_type(body, j, &t);
        if (!ax_rank_check(cx, "pmap", t.ndim + 1)) return -1;
        out[j] = t;
        memmove(out[j].shape + 1, t.shape, (size_t)t.ndim * sizeof *t.shape);
        out[j].shape[0] = p->length;
        out[j].ndim++;
    }
    return 0;
}

/* ---------------------------------------------------------------- on the devices */

typedef struct pmap_job {
    ax_jit_program *prog;
    const char *axis; /* NULL: a pmap without axis_name */
    int64_t size;
    int nin, nout;
    ax_array **ins, **outs; /* per slice: nin inputs, nout outputs */
} pmap_job;

static int run_slice(ax_ctx *dcx, int i, void *arg) {
    pmap_job *j = arg;
    ax_axis_frame f = {.kind = AX_AXIS_DEVICE, .name = j->axis, .size = j->size};
    if (j->axis && ax_axis_push(dcx, &f)) return -1;
    int rc = ax_jit_run(dcx, j->prog, j->ins + (size_t)i * (size_t)j->nin,
                        j->outs + (size_t)i * (size_t)j->nout);
    if (j->axis) ax_axis_pop(dcx, &f);
    return rc;
}

/* The programs of calls nested in the body's sub-programs (a jit inside a scan), built now:
 * a device must not build them (they are kept on the shared IR). A pmap called inside a pmap
 * is batched as it is traced (stdlib/builtins_parallel.c), so an xla_pmap here was traced
 * outside any pmap: refused. */
static int prepare_nested(ax_ctx *cx, const ax_ir *ir) {
    for (int k = 0; k < ir->neqns; k++) {
        const ax_ir_eqn *e = &ir->eqns[k];
        if (e->prim == AX_P_PMAP) {
            return ax_error(cx, AX_ERR_VALUE, NESTED_XLA_PMAP), -1;
        }
        if (e->prim == AX_P_CALL && !ax_call_ready(cx, e->sub[0])) return -1;
        for (int s = 0; s < e->nsub; s++)
            if (prepare_nested(cx, e->sub[s])) return -1;
    }
    return 0;
}

/* Slice i of x's leading axis, a view made with (and returned to the cache of) dcx. */
static ax_array *slice_for(ax_ctx *dcx, ax_array *x, int64_t i) {
    return ax_array_view(dcx, x, x->ndim - 1, x->shape + 1, x->strides + 1,
                         x->offset + i * x->strides[0]);
}

/* The slices' results stacked along a new leading axis, in the main context. */
static ax_array *stack(ax_ctx *cx, const ax_aval *t, int64_t n, ax_array **parts, int stride) {
    int64_t shape[AX_MAX_RANK];
    shape[0] = n;
    memcpy(shape + 1, t->shape, (size_t)t->ndim * sizeof *shape);
    ax_array *y = ax_array_new(cx, t->dtype, t->ndim + 1, shape);
    if (!y) return NULL;
    y->weak = t->weak;
    size_t es = ax_dtype_size(t->dtype);
    int64_t slot = ax_shape_size(t->ndim, t->shape);
    for (int64_t i = 0; i < n && slot; i++) {
        ax_array *src = parts[i * stride];
        ax_strided_copy((char *)ax_array_data(y) + (size_t)(i * slot) * es, y->strides + 1,
                        ax_array_data(src), src->strides, src->ndim, src->shape, es);
    }
    return y;
}

/* The devices the spec names, as ints (NULL when it names none: the first ones). */
static int *devices_of(ax_ctx *cx, const ax_axis_spec *spec, int64_t n, int local) {
    if (!spec || !spec->ndevices) {
        if (n <= local) return NULL;
        ax_error(cx, AX_ERR_VALUE,
                 "pmap: the mapped axis has size %lld, but this process has %d device%s (set "
                 "their number with --devices N or AX_DEVICES=N)",
                 (long long)n, local, local == 1 ? "" : "s");
        return NULL;
    }
    int *devs = malloc((size_t)n * sizeof *devs);
    if (!devs) return ax_error_oom(cx);
    for (int64_t i = 0; i < n; i++) devs[i] = (int)spec->data[2 * spec->npairs + i];
    return devs;
}

static int enter_axis(ax_ctx *cx, const ax_params *p, ax_axis_frame *f);
static void leave_axis(ax_ctx *cx, ax_axis_frame *f);

/* The body's native program and those of the calls nested in it, built with the axis name in
 * scope (building re-traces the body, whose collectives name it). */
static int build_programs(ax_ctx *cx, const ax_params *p, ax_ir *body, ax_jit_program **prog) {
    ax_axis_frame f;
    if (enter_axis(cx, p, &f)) return -1;
    *prog = ax_call_ready(cx, body);
    int rc = *prog && !prepare_nested(cx, body) ? 0 : -1;
    leave_axis(cx, &f);
    return rc;
}

static int pmap_eager(ax_ctx *cx, int nin, ax_array **in, const ax_params *p, ax_array **out) {
    if (ax_device_running(cx)) return ax_error(cx, AX_ERR_VALUE, NESTED_XLA_PMAP), -1;
    ax_ir *body = (ax_ir *)body_of(p);
    int64_t n = p->length;
    int local = ax_local_device_count(cx);
    if (local < 0) return -1;
    int *devs = devices_of(cx, p->axis, n, local);
    if (ax_error_pending(cx)) return -1;
    pmap_job job = {.axis = p->axis && p->axis->nnames ? p->axis->names[0] : NULL,
                    .size = axis_size(cx, p),
                    .nin = nin,
                    .nout = body->nout};
    int rc = build_programs(cx, p, body, &job.prog);
    if (!rc && ax_process_count(cx) > 1)
        rc = ax_distributed_same(cx, n, "the size of the pmapped axis");
    job.ins = rc ? NULL : calloc((size_t)(n * nin) + 1, sizeof *job.ins);
    job.outs = rc ? NULL : calloc((size_t)(n * body->nout) + 1, sizeof *job.outs);
    if (!rc && (!job.ins || !job.outs)) rc = (ax_error_oom(cx), -1);
    for (int64_t i = 0; i < n && !rc; i++) {
        ax_ctx *dcx = ax_device_context(cx, devs ? devs[i] : (int)i);
        for (int k = 0; k < nin && !rc; k++)
            if (!dcx || !(job.ins[i * nin + k] = slice_for(dcx, in[k], i))) rc = -1;
    }
    if (!rc) rc = ax_devices_run(cx, (int)n, devs, run_slice, &job);
    for (int j = 0; j < body->nout && !rc; j++) {
        ax_aval t;
        ax_ir_out_type(body, j, &t);
        if (!(out[j] = stack(cx, &t, n, job.outs + j, body->nout))) rc = -1;
    }
    for (int64_t i = 0; job.ins && i < n * nin; i++) ax_array_release(job.ins[i]);
    for (int64_t i = 0; job.outs && i < n * body->nout; i++) ax_array_release(job.outs[i]);
    free(job.ins);
    free(job.outs);
    free(devs);
    return rc;
}

/* ---------------------------------------------------------------- transformations */

/* Brings the body's axis into scope (a traced axis, named or not) while a rule transforms the
 * body. */
static int enter_axis(ax_ctx *cx, const ax_params *p, ax_axis_frame *f) {
    *f = (ax_axis_frame){.kind = AX_AXIS_TRACED, .size = axis_size(cx, p)};
    f->name = p->axis && p->axis->nnames ? p->axis->names[0] : NULL;
    return ax_axis_push(cx, f);
}

static void leave_axis(ax_ctx *cx, ax_axis_frame *f) {
    ax_axis_pop(cx, f);
}

static int pmap_jvp(ax_ctx *cx, ax_prim prim, const ax_params *p, int nin, ax_array **in,
                    ax_array **tin, ax_array **out, ax_array **tout) {
    ax_axis_frame f;
    if (enter_axis(cx, p, &f)) return -1;
    int rc = ax_call_jvp(cx, prim, p, nin, in, tin, out, tout);
    leave_axis(cx, &f);
    return rc;
}

static int pmap_partial_eval(ax_ctx *cx, ax_ir_trace *t, ax_prim prim, const ax_params *p, int nin,
                             ax_array **in, const bool *unknown, ax_array **out) {
    ax_axis_frame f;
    if (enter_axis(cx, p, &f)) return -1;
    int rc = ax_call_partial_eval(cx, t, prim, p, nin, in, unknown, out);
    leave_axis(cx, &f);
    return rc;
}

static int pmap_transpose(ax_ctx *cx, ax_prim prim, const ax_params *p, int nin, ax_array **in,
                          const bool *lin, const ax_aval *in_types, ax_array *const *cts,
                          ax_array **ct_in) {
    ax_axis_frame f;
    if (enter_axis(cx, p, &f)) return -1;
    int rc = ax_call_transpose(cx, prim, p, nin, in, lin, in_types, cts, ct_in);
    leave_axis(cx, &f);
    return rc;
}

static int pmap_batch(ax_ctx *cx, ax_prim prim, const ax_params *p, int nin, ax_array **in,
                      const int *bdim, int64_t size, ax_array **out, int *out_bdim) {
    ax_axis_frame f;
    if (enter_axis(cx, p, &f)) return -1;
    int rc = ax_call_batch(cx, prim, p, nin, in, bdim, size, out, out_bdim);
    leave_axis(cx, &f);
    return rc;
}

static void pmap_format(ax_strbuf *out, const ax_params *p) {
    const ax_axis_spec *s = p->axis;
    ax_strbuf_appendf(out, "axis_name=%s axis_size=%lld", s && s->nnames ? s->names[0] : "None",
                      (long long)p->length);
    if (s && s->ndevices) {
        ax_strbuf_append(out, " devices=(");
        for (int i = 0; i < s->ndevices; i++)
            ax_strbuf_appendf(out, "%s%lld", i ? ", " : "", (long long)s->data[2 * s->npairs + i]);
        ax_strbuf_append(out, s->ndevices == 1 ? ",)" : ")");
    }
}

const ax_prim_info ax_pmap_info = {
    .name = "xla_pmap",
    .nin = -1,
    .nout = -1,
    .flags = AX_PRIM_MAPPED,
    .shape = pmap_shape,
    .eager = pmap_eager,
    .jvp = pmap_jvp,
    .transpose = pmap_transpose,
    .batch = pmap_batch,
    .partial_eval = pmap_partial_eval,
    .nout_of = ax_call_nout,
    .dependencies = ax_call_dependencies,
    .format_params = pmap_format,
    .lower = AX_LOWER_EAGER,
    .tested_by = "tests/unit/test_collectives.c, tests/lang/pmap_*.ax",
};

/* ---------------------------------------------------------------- building */

ax_ir *ax_pmap_trace(ax_ctx *cx, const ax_axis_spec *spec, int64_t size, ax_flat_fn fn,
                     void *closure, int nin, const ax_aval *types, int *nout) {
    /* the axis is in scope even without a name: a pmap called in fn is then a nested one */
    ax_axis_frame f = {.kind = AX_AXIS_TRACED, .size = size};
    f.name = spec && spec->nnames ? spec->names[0] : NULL;
    if (ax_axis_push(cx, &f)) return NULL;
    ax_ir *traced = ax_trace_to_ir(cx, fn, closure, nin, types, nout);
    ax_ir *ir = traced ? ax_simplify(cx, traced) : NULL;
    ax_ir_release(traced);
    ax_axis_pop(cx, &f);
    return ir;
}

int ax_pmap_bind(ax_ctx *cx, ax_ir *body, const ax_axis_spec *spec, int64_t n, int nin,
                 ax_array **in, ax_array **out) {
    ax_params p = {.nsub = 1, .sub = (struct ax_ir *const *)&body, .length = n, .axis = spec};
    return ax_bind(cx, AX_P_PMAP, nin, in, &p, out);
}

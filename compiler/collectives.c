/* Collectives by axis name (see collectives.h): the axis scope, bind's routing, and every rule
 * of psum, pmax, pmin, all_gather, psum_scatter, ppermute, all_to_all and axis_index.
 *
 * On devices (the eager rules) every device hands its operand to the run's exchange
 * (runtime/device.h) and computes its own result from all of them, always in device order: a
 * psum adds device 0's value, then device 1's, ..., so every device gets the same bits, run
 * after run, whatever the timing. */
#include "collectives.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../runtime/device.h"
#include "../runtime/strided.h"
#include "ad_rules.h"
#include "collective_axes.h"
#include "vmap.h"

/* ---------------------------------------------------------------- specs and scope */

const ax_axis_spec *ax_axis_spec_make(ax_ctx *cx, int nnames, const char *const *names, int npairs,
                                      const int64_t *pairs, int ndevices, const int *devices) {
    if (nnames < 0 || nnames > AX_MAX_AXIS_NAMES)
        return ax_error(cx, AX_ERR_VALUE, "a collective names at most %d axes, not %d",
                        AX_MAX_AXIS_NAMES, nnames);
    size_t n = sizeof(ax_axis_spec) + (2 * (size_t)npairs + (size_t)ndevices) * sizeof(int64_t);
    ax_axis_spec *s = calloc(1, n); /* zeroed: specs are interned by their bytes */
    if (!s) return ax_error_oom(cx);
    s->nnames = nnames;
    s->npairs = npairs;
    s->ndevices = ndevices;
    bool ok = true;
    for (int i = 0; i < nnames && ok; i++) ok = (s->names[i] = ax_intern_str(cx, names[i]));
    for (int k = 0; k < 2 * npairs; k++) s->data[k] = pairs[k];
    for (int k = 0; k < ndevices; k++) s->data[2 * npairs + k] = devices[k];
    const ax_axis_spec *r = ok ? ax_intern(cx, s, n) : NULL;
    free(s);
    return r;
}

int ax_axis_push(ax_ctx *cx, ax_axis_frame *f) {
    ax_parallel *p = ax_parallel_of(cx);
    if (!p) return -1;
    f->depth = ax_trace_depth(cx);
    f->outer = p->axes;
    p->axes = f;
    return 0;
}

void ax_axis_pop(ax_ctx *cx, ax_axis_frame *f) {
    cx->parallel->axes = f->outer;
}

const ax_axis_frame *ax_axis_find(const ax_ctx *cx, const char *name) {
    for (const ax_axis_frame *f = cx->parallel ? cx->parallel->axes : NULL; f; f = f->outer)
        if (f->name && (f->name == name || !strcmp(f->name, name))) return f;
    return NULL;
}

int64_t ax_axis_pmap_slices(const ax_ctx *cx) {
    int64_t slices = 0;
    for (const ax_axis_frame *f = cx->parallel ? cx->parallel->axes : NULL; f; f = f->outer)
        if (f->kind != AX_AXIS_BATCHED) slices = (slices ? slices : 1) * f->size;
    return slices;
}

const char *ax_batching_axis(const ax_ctx *cx) {
    return cx->parallel ? cx->parallel->batching_axis : NULL;
}

const char *ax_set_batching_axis(ax_ctx *cx, const char *name) {
    if (!cx->parallel) return NULL; /* a named vmap made it: NULL is all there is to set */
    const char *before = cx->parallel->batching_axis;
    cx->parallel->batching_axis = name;
    return before;
}

static int unbound(ax_ctx *cx, const char *name) {
    ax_strbuf in_scope;
    ax_strbuf_init(&in_scope);
    for (const ax_axis_frame *f = cx->parallel ? cx->parallel->axes : NULL; f; f = f->outer)
        if (f->name) ax_strbuf_appendf(&in_scope, "%s'%s'", in_scope.len ? ", " : "", f->name);
    if (in_scope.len)
        ax_error(cx, AX_ERR_NAME, "unbound axis name: %s (the axis names in scope here: %s)", name,
                 in_scope.data);
    else
        ax_error(cx, AX_ERR_NAME,
                 "unbound axis name: %s (collectives work inside pmap or vmap with that "
                 "axis_name)",
                 name);
    ax_strbuf_free(&in_scope);
    return -1;
}

int64_t ax_axis_size(ax_ctx *cx, const ax_axis_spec *spec) {
    int64_t size = 1;
    for (int i = 0; i < spec->nnames; i++) {
        const ax_axis_frame *f = ax_axis_find(cx, spec->names[i]);
        if (!f) return unbound(cx, spec->names[i]);
        size *= f->size;
    }
    return size;
}

/* The outermost trace recording an IR from `depth` on (a pmap body's trace, or the first
 * trace of a pass over it): a collective of values that no trace in the axis's scope owns
 * belongs there (in a split into known and unknown parts, to the known part). */
static ax_trace *recording_trace(const ax_ctx *cx, int depth) {
    const struct ax_trace_state *st = cx->traces;
    for (int i = depth; st && i < st->depth; i++)
        if (!strcmp(st->stack[i]->name, "jit")) return st->stack[i];
    return NULL;
}

int ax_collective_route(ax_ctx *cx, ax_prim p, const ax_params *params, ax_trace **trace) {
    const ax_axis_spec *spec = params->axis;
    if (!spec) {
        ax_error(cx, AX_ERR_RUNTIME, "internal error: %s names no axis", ax_prim_get(p)->name);
        return -1;
    }
    ax_trace *target = NULL;
    for (int i = 0; i < spec->nnames; i++) {
        const ax_axis_frame *f = ax_axis_find(cx, spec->names[i]);
        if (!f) return unbound(cx, spec->names[i]);
        ax_trace *t = f->kind == AX_AXIS_BATCHED  ? f->trace
                      : f->kind == AX_AXIS_TRACED ? recording_trace(cx, f->depth)
                                                  : NULL;
        if (t && (!target || t->level > target->level)) target = t;
    }
    if (target && (!*trace || target->level > (*trace)->level)) *trace = target;
    return 0;
}

ax_array *ax_collective(ax_ctx *cx, ax_prim p, ax_array *x, const ax_axis_spec *spec,
                        const ax_params *extra) {
    if (ax_collective_composed(p, spec)) return ax_collective_axes(cx, p, x, spec, extra);
    ax_params q = extra ? *extra : (ax_params){0};
    q.axis = spec;
    if ((q.length = ax_axis_size(cx, spec)) < 0) return NULL;
    return ax_bind1(cx, p, x ? 1 : 0, x ? &x : NULL, &q);
}

/* The spec without `name` (NULL when nothing is left). *err on failure. */
static const ax_axis_spec *spec_without(ax_ctx *cx, const ax_axis_spec *s, const char *name,
                                        bool *err) {
    const char *rest[AX_MAX_AXIS_NAMES];
    int n = 0;
    for (int i = 0; i < s->nnames; i++)
        if (strcmp(s->names[i], name)) rest[n++] = s->names[i];
    *err = false;
    if (!n) return NULL;
    const ax_axis_spec *r = ax_axis_spec_make(cx, n, rest, s->npairs, s->data, s->ndevices, NULL);
    *err = r == NULL;
    return r;
}

static bool names_axis(const ax_axis_spec *s, const char *name) {
    for (int i = 0; name && i < s->nnames; i++)
        if (!strcmp(s->names[i], name)) return true;
    return false;
}

/* ---------------------------------------------------------------- printing */

static void format_names(ax_strbuf *out, const ax_axis_spec *s) {
    ax_strbuf_append(out, "(");
    for (int i = 0; s && i < s->nnames; i++)
        ax_strbuf_appendf(out, "%s'%s'", i ? ", " : "", s->names[i]);
    ax_strbuf_append(out, s && s->nnames == 1 ? ",)" : ")");
}

static void format_reduce(ax_strbuf *out, const ax_params *p) {
    ax_strbuf_append(out, "[axes=");
    format_names(out, p->axis);
    ax_strbuf_append(out, "]");
}

static const char *py_bool(int b) {
    return b ? "True" : "False";
}

static void format_all_gather(ax_strbuf *out, const ax_params *p) {
    ax_strbuf_appendf(out, "[all_gather_dimension=%d axis_name=", p->axes[0]);
    format_names(out, p->axis);
    ax_strbuf_appendf(out, " axis_size=%lld tiled=%s]", (long long)p->length, py_bool(p->flag));
}

static void format_psum_scatter(ax_strbuf *out, const ax_params *p) {
    ax_strbuf_append(out, "[axis_name=");
    format_names(out, p->axis);
    ax_strbuf_appendf(out, " scatter_dimension=%d tiled=%s]", p->axes[0], py_bool(p->flag));
}

static void format_ppermute(ax_strbuf *out, const ax_params *p) {
    ax_strbuf_append(out, "[axis_name=");
    format_names(out, p->axis);
    ax_strbuf_append(out, " perm=(");
    for (int k = 0; k < p->axis->npairs; k++)
        ax_strbuf_appendf(out, "%s(%lld, %lld)", k ? ", " : "", (long long)p->axis->data[2 * k],
                          (long long)p->axis->data[2 * k + 1]);
    ax_strbuf_append(out, p->axis->npairs == 1 ? ",)]" : ")]");
}

static void format_all_to_all(ax_strbuf *out, const ax_params *p) {
    ax_strbuf_append(out, "[axis_name=");
    format_names(out, p->axis);
    ax_strbuf_appendf(out, " concat_axis=%d split_axis=%d tiled=%s]", p->axes[1], p->axes[0],
                      py_bool(p->flag));
}

static void format_axis_index(ax_strbuf *out, const ax_params *p) {
    ax_strbuf_append(out, "[axis_name=");
    if (p->axis && p->axis->nnames == 1)
        ax_strbuf_append(out, p->axis->names[0]);
    else
        format_names(out, p->axis);
    ax_strbuf_append(out, "]");
}

/* ---------------------------------------------------------------- shape rules */

static int bad_axis(ax_ctx *cx, const char *what, const char *which, int axis, int ndim) {
    ax_error(cx, AX_ERR_VALUE, "%s: %s %d is out of range for an operand of rank %d", what, which,
             axis, ndim);
    return -1;
}

static int same_shape(ax_ctx *cx, int nin, const ax_aval *in, const ax_params *p, ax_aval *out) {
    (void)cx, (void)nin, (void)p;
    out[0] = in[0];
    return 0;
}

static int psum_shape(ax_ctx *cx, int nin, const ax_aval *in, const ax_params *p, ax_aval *out) {
    if (in[0].dtype == AX_BOOL)
        return ax_error(cx, AX_ERR_TYPE, "psum of bool values: convert them first (astype(int32))"),
               -1;
    return same_shape(cx, nin, in, p, out);
}

static int too_big(ax_ctx *cx, const char *what, const ax_aval *t) {
    int64_t total;
    if (ax_shape_size_checked(t->ndim, t->shape, ax_dtype_size(t->dtype), &total)) return 0;
    ax_error(cx, AX_ERR_VALUE, "%s: the result would be too big", what);
    return -1;
}

/* Multiplies dimension d of t by n (checked). */
static int grow_dim(ax_ctx *cx, const char *what, ax_aval *t, int d, int64_t n) {
    if (!ax_mul_i64(t->shape[d], n, &t->shape[d]))
        return ax_error(cx, AX_ERR_VALUE, "%s: the result would be too big", what), -1;
    return too_big(cx, what, t);
}

static void insert_dim(ax_aval *t, int d, int64_t n) {
    memmove(t->shape + d + 1, t->shape + d, (size_t)(t->ndim - d) * sizeof *t->shape);
    t->shape[d] = n;
    t->ndim++;
}

static void delete_dim(ax_aval *t, int d) {
    memmove(t->shape + d, t->shape + d + 1, (size_t)(t->ndim - d - 1) * sizeof *t->shape);
    t->ndim--;
}

static int all_gather_shape(ax_ctx *cx, int nin, const ax_aval *in, const ax_params *p,
                            ax_aval *out) {
    (void)nin;
    int a = p->axes[0], nd = in[0].ndim;
    if (a < 0 || a > nd - (p->flag ? 1 : 0)) return bad_axis(cx, "all_gather", "axis", a, nd);
    out[0] = in[0];
    if (p->flag) return grow_dim(cx, "all_gather", &out[0], a, p->length);
    if (!ax_rank_check(cx, "all_gather", nd + 1)) return -1;
    insert_dim(&out[0], a, p->length);
    return too_big(cx, "all_gather", &out[0]);
}

/* Dimension d must split into p->length chunks (tiled) or be p->length long (not tiled). */
static int check_split(ax_ctx *cx, const char *what, const ax_aval *t, int d, const ax_params *p) {
    int64_t n = p->length, size = t->shape[d];
    if (p->flag ? size % n == 0 : size == n) return 0;
    if (p->flag)
        ax_error(cx, AX_ERR_VALUE,
                 "%s: dimension %d has size %lld, which %lld devices cannot split evenly", what, d,
                 (long long)size, (long long)n);
    else
        ax_error(cx, AX_ERR_VALUE,
                 "%s: dimension %d must have the axis size %lld (one entry per device), not "
                 "%lld (or pass tiled=True)",
                 what, d, (long long)n, (long long)size);
    return -1;
}

static int psum_scatter_shape(ax_ctx *cx, int nin, const ax_aval *in, const ax_params *p,
                              ax_aval *out) {
    if (psum_shape(cx, nin, in, p, out)) return -1;
    int d = p->axes[0], nd = in[0].ndim;
    if (d < 0 || d >= nd) return bad_axis(cx, "psum_scatter", "scatter_dimension", d, nd);
    if (check_split(cx, "psum_scatter", &in[0], d, p)) return -1;
    if (p->flag)
        out[0].shape[d] /= p->length;
    else
        delete_dim(&out[0], d);
    return 0;
}

static int all_to_all_shape(ax_ctx *cx, int nin, const ax_aval *in, const ax_params *p,
                            ax_aval *out) {
    (void)nin;
    int s = p->axes[0], c = p->axes[1], nd = in[0].ndim;
    if (s < 0 || s >= nd) return bad_axis(cx, "all_to_all", "split_axis", s, nd);
    if (c < 0 || c >= nd) return bad_axis(cx, "all_to_all", "concat_axis", c, nd);
    if (check_split(cx, "all_to_all", &in[0], s, p)) return -1;
    out[0] = in[0];
    if (!p->flag) {
        delete_dim(&out[0], s);
        insert_dim(&out[0], c, p->length);
        return 0;
    }
    out[0].shape[s] /= p->length;
    return grow_dim(cx, "all_to_all", &out[0], c, p->length);
}

static int ppermute_shape(ax_ctx *cx, int nin, const ax_aval *in, const ax_params *p,
                          ax_aval *out) {
    const ax_axis_spec *s = p->axis;
    for (int k = 0; s && k < 2 * s->npairs; k++)
        if (s->data[k] < 0 || s->data[k] >= p->length)
            return ax_error(cx, AX_ERR_VALUE,
                            "ppermute: device %lld is out of range for an axis of size %lld",
                            (long long)s->data[k], (long long)p->length),
                   -1;
    return same_shape(cx, nin, in, p, out);
}

static int axis_index_shape(ax_ctx *cx, int nin, const ax_aval *in, const ax_params *p,
                            ax_aval *out) {
    (void)cx, (void)nin, (void)in, (void)p;
    out[0] = (ax_aval){.dtype = AX_I32};
    return 0;
}

/* ---------------------------------------------------------------- on the devices */

/* The device running this collective's pmap, or an error. */
static int on_device(ax_ctx *cx, const ax_params *p) {
    const ax_axis_spec *s = p->axis;
    if (!s || s->nnames != 1) {
        ax_error(cx, AX_ERR_VALUE,
                 "a collective over several pmap axes at once is not supported (nested pmap)");
        return -1;
    }
    const ax_axis_frame *f = ax_axis_find(cx, s->names[0]);
    if (!f) return unbound(cx, s->names[0]);
    if (f->kind != AX_AXIS_DEVICE || !ax_device_running(cx)) {
        ax_error(cx, AX_ERR_RUNTIME, "internal error: a collective over '%s' ran outside its pmap",
                 s->names[0]);
        return -1;
    }
    return 0;
}

/* Every device's operand (contiguous), in device order: *parts; *x is this device's. The
 * operand is copied: the others read it after this step, and the step's input may be memory
 * the caller reuses at once (jit's loops lend their buffers to eager steps). */
static int exchange(ax_ctx *cx, const ax_params *p, ax_array *in, ax_array **x,
                    const void *const **parts) {
    *x = NULL;
    if (on_device(cx, p)) return -1;
    if (!(*x = ax_array_copy(cx, in))) return -1;
    if (!ax_device_exchange(cx, *x, parts)) return 0;
    ax_array_release(*x);
    *x = NULL;
    return -1;
}

enum { OP_SUM, OP_MAX, OP_MIN };

#define ACCUMULATE(T, FLOAT)                                                                       \
    do {                                                                                           \
        T *a = acc;                                                                                \
        const T *b = x;                                                                            \
        for (int64_t i = 0; i < n; i++) {                                                          \
            if (op == OP_SUM) {                                                                    \
                a[i] = (T)(a[i] + b[i]);                                                           \
            } else {                                                                               \
                bool take = op == OP_MAX ? b[i] > a[i] : b[i] < a[i];                              \
                if (FLOAT && b[i] != b[i]) take = true; /* NaN wins, as jnp.maximum */             \
                if (FLOAT && a[i] != a[i]) take = false;                                           \
                if (take) a[i] = b[i];                                                             \
            }                                                                                      \
        }                                                                                          \
    } while (0)

/* acc[i] = acc[i] op x[i] for n elements of type t. */
static void accumulate(int op, ax_dtype t, void *acc, const void *x, int64_t n) {
    switch (t) {
    case AX_BOOL:
    case AX_U8:
        ACCUMULATE(uint8_t, 0);
        break;
    case AX_I32:
        ACCUMULATE(int32_t, 0);
        break;
    case AX_U32:
        ACCUMULATE(uint32_t, 0);
        break;
    case AX_I64:
        ACCUMULATE(int64_t, 0);
        break;
    case AX_F32:
        ACCUMULATE(float, 1);
        break;
    default:
        ACCUMULATE(double, 1);
        break;
    }
}

/* The kernel's result for out (a new array of type t), or NULL. */
static ax_array *new_result(ax_ctx *cx, const ax_aval *t) {
    return ax_array_new(cx, t->dtype, t->ndim, t->shape);
}

/* psum, pmax, pmin: device 0's value, then each other device's combined in, in order. */
static int reduce_eager(ax_ctx *cx, int op, ax_array **in, const ax_params *p, ax_array **out) {
    ax_array *x;
    const void *const *parts;
    if (exchange(cx, p, in[0], &x, &parts)) return -1;
    ax_aval t;
    ax_aval_of(&t, x);
    ax_array *y = new_result(cx, &t);
    size_t bytes = (size_t)x->size * ax_dtype_size(x->dtype);
    if (y) {
        if (bytes) memcpy(ax_array_data(y), parts[0], bytes);
        for (int64_t j = 1; j < p->length; j++)
            accumulate(op, x->dtype, ax_array_data(y), parts[j], x->size);
    }
    ax_array_release(x);
    out[0] = y;
    return y ? 0 : -1;
}

static int psum_eager(ax_ctx *cx, int nin, ax_array **in, const ax_params *p, ax_array **out) {
    (void)nin;
    return reduce_eager(cx, OP_SUM, in, p, out);
}

static int pmax_eager(ax_ctx *cx, int nin, ax_array **in, const ax_params *p, ax_array **out) {
    (void)nin;
    return reduce_eager(cx, OP_MAX, in, p, out);
}

static int pmin_eager(ax_ctx *cx, int nin, ax_array **in, const ax_params *p, ax_array **out) {
    (void)nin;
    return reduce_eager(cx, OP_MIN, in, p, out);
}

/* Elements (bytes) of the dimensions of x before / from d. */
static int64_t outer_of(const ax_array *x, int d) {
    return ax_shape_size(d, x->shape);
}

static int all_gather_eager(ax_ctx *cx, int nin, ax_array **in, const ax_params *p,
                            ax_array **out) {
    ax_array *x;
    const void *const *parts;
    if (exchange(cx, p, in[0], &x, &parts)) return -1;
    ax_aval t, xt;
    ax_aval_of(&xt, x);
    ax_array *y = all_gather_shape(cx, nin, &xt, p, &t) ? NULL : new_result(cx, &t);
    if (y) {
        int64_t outer = outer_of(x, p->axes[0]), n = p->length;
        size_t inner = (size_t)(x->size / (outer ? outer : 1)) * ax_dtype_size(x->dtype);
        char *dst = ax_array_data(y);
        for (int64_t o = 0; o < outer && inner; o++)
            for (int64_t j = 0; j < n; j++)
                memcpy(dst + (size_t)(o * n + j) * inner, (const char *)parts[j] + o * inner,
                       inner);
    }
    ax_array_release(x);
    out[0] = y;
    return y ? 0 : -1;
}

static int psum_scatter_eager(ax_ctx *cx, int nin, ax_array **in, const ax_params *p,
                              ax_array **out) {
    ax_array *x;
    const void *const *parts;
    if (exchange(cx, p, in[0], &x, &parts)) return -1;
    ax_aval t, xt;
    ax_aval_of(&xt, x);
    ax_array *y = psum_scatter_shape(cx, nin, &xt, p, &t) ? NULL : new_result(cx, &t);
    if (y && y->size) {
        int64_t outer = outer_of(x, p->axes[0]), row = x->size / outer, chunk = row / p->length;
        int64_t me = ax_device_group_index(cx);
        size_t es = ax_dtype_size(x->dtype);
        char *dst = ax_array_data(y);
        for (int64_t o = 0; o < outer; o++) {
            char *d = dst + (size_t)(o * chunk) * es;
            size_t at = (size_t)(o * row + me * chunk) * es;
            memcpy(d, (const char *)parts[0] + at, (size_t)chunk * es);
            for (int64_t j = 1; j < p->length; j++)
                accumulate(OP_SUM, x->dtype, d, (const char *)parts[j] + at, chunk);
        }
    }
    ax_array_release(x);
    out[0] = y;
    return y ? 0 : -1;
}

static int ppermute_eager(ax_ctx *cx, int nin, ax_array **in, const ax_params *p, ax_array **out) {
    (void)nin;
    ax_array *x;
    const void *const *parts;
    if (exchange(cx, p, in[0], &x, &parts)) return -1;
    int64_t me = ax_device_group_index(cx), src = -1;
    for (int k = 0; k < p->axis->npairs; k++)
        if (p->axis->data[2 * k + 1] == me) src = p->axis->data[2 * k];
    ax_aval t;
    ax_aval_of(&t, x);
    ax_array *y = new_result(cx, &t);
    size_t bytes = (size_t)x->size * ax_dtype_size(x->dtype);
    if (y && bytes) {
        if (src >= 0)
            memcpy(ax_array_data(y), parts[src], bytes);
        else
            memset(ax_array_data(y), 0, bytes);
    }
    ax_array_release(x);
    out[0] = y;
    return y ? 0 : -1;
}

/* Removes dimension d from a shape and its strides (for the block copies of all_to_all). */
static void drop_dim(int *nd, int64_t *shape, int64_t *strides, int d) {
    memmove(shape + d, shape + d + 1, (size_t)(*nd - d - 1) * sizeof *shape);
    memmove(strides + d, strides + d + 1, (size_t)(*nd - d - 1) * sizeof *strides);
    (*nd)--;
}

/* all_to_all: chunk `me` of every device's operand (along the split axis), placed in device
 * order along the concat axis of the result. */
static int all_to_all_eager(ax_ctx *cx, int nin, ax_array **in, const ax_params *p,
                            ax_array **out) {
    ax_array *x;
    const void *const *parts;
    if (exchange(cx, p, in[0], &x, &parts)) return -1;
    ax_aval t, xt;
    ax_aval_of(&xt, x);
    ax_array *y = all_to_all_shape(cx, nin, &xt, p, &t) ? NULL : new_result(cx, &t);
    if (y && y->size) {
        int s = p->axes[0], c = p->axes[1], nd = x->ndim, ydim = y->ndim;
        int64_t n = p->length, me = ax_device_group_index(cx), chunk = x->shape[s] / n;
        size_t es = ax_dtype_size(x->dtype);
        int64_t shape[AX_MAX_RANK], src_strides[AX_MAX_RANK], yshape[AX_MAX_RANK],
            dst_strides[AX_MAX_RANK];
        memcpy(shape, x->shape, (size_t)nd * sizeof *shape);
        memcpy(src_strides, x->strides, (size_t)nd * sizeof *src_strides);
        memcpy(yshape, y->shape, (size_t)ydim * sizeof *yshape);
        memcpy(dst_strides, y->strides, (size_t)ydim * sizeof *dst_strides);
        int64_t src_off = me * chunk * x->strides[s], dst_step = y->strides[c];
        if (p->flag) { /* the block: x's shape with the split axis cut to one chunk */
            shape[s] = chunk;
            dst_step = y->strides[c] * shape[c];
        } else {
            drop_dim(&nd, shape, src_strides, s);
            drop_dim(&ydim, yshape, dst_strides, c);
        }
        char *dst = ax_array_data(y);
        for (int64_t j = 0; j < n; j++)
            ax_strided_copy(dst + (size_t)(j * dst_step) * es, dst_strides,
                            (const char *)parts[j] + (size_t)src_off * es, src_strides, nd, shape,
                            es);
    }
    ax_array_release(x);
    out[0] = y;
    return y ? 0 : -1;
}

static int axis_index_eager(ax_ctx *cx, int nin, ax_array **in, const ax_params *p,
                            ax_array **out) {
    (void)nin, (void)in;
    if (on_device(cx, p)) return -1;
    out[0] = ax_array_scalar_i64(cx, AX_I32, ax_device_group_index(cx));
    return out[0] ? 0 : -1;
}

/* ---------------------------------------------------------------- differentiation */

/* pmax / pmin: the tangent of the devices holding the extreme value, averaged over them (as
 * reduce_max's JVP averages over ties). */
static int extreme_jvp(ax_ctx *cx, ax_prim prim, const ax_params *p, int nin, ax_array **in,
                       ax_array **tin, ax_array **out, ax_array **tout) {
    (void)nin;
    *tout = NULL;
    if (!(out[0] = ax_bind1(cx, prim, 1, in, p))) return -1;
    if (!tin[0] || !ax_dtype_is_float(out[0]->dtype)) return 0;
    ax_scope s;
    ax_scope_begin(&s, cx);
    ax_array *hit = ax_lax_binary(&s, AX_P_EQ, in[0], out[0]);
    ax_array *t = ax_lax_select(&s, hit, tin[0], ax_lax_zeros_like(&s, tin[0]));
    ax_array *count = ax_lax_convert(&s, hit, out[0]->dtype);
    ax_array *num = ax_lax_bind(&s, AX_P_PSUM, 1, &t, p);
    ax_array *den = ax_lax_bind(&s, AX_P_PSUM, 1, &count, p);
    ax_array *r = ax_lax_div(&s, num, den);
    *tout = r ? ax_scope_keep(&s, r) : NULL;
    ax_scope_end(&s);
    if (*tout) return 0;
    ax_array_release(out[0]);
    out[0] = NULL;
    return -1;
}

/* psum's transpose is psum (every device's output took every device's input); all_gather and
 * psum_scatter are each other's; ppermute's is the inverse permutation; all_to_all's swaps
 * its axes. */
static int collective_transpose(ax_ctx *cx, ax_prim prim, const ax_params *p, int nin,
                                ax_array **in, const bool *lin, const ax_aval *in_types,
                                ax_array *const *cts, ax_array **ct_in) {
    (void)nin, (void)in, (void)lin, (void)in_types;
    ax_params q = *p;
    ax_prim to = prim;
    if (prim == AX_P_ALL_GATHER) to = AX_P_PSUM_SCATTER;
    if (prim == AX_P_PSUM_SCATTER) to = AX_P_ALL_GATHER;
    if (prim == AX_P_ALL_TO_ALL) q.axes[0] = p->axes[1], q.axes[1] = p->axes[0];
    if (prim == AX_P_PPERMUTE) {
        const ax_axis_spec *s = p->axis;
        int64_t *pairs = malloc((2 * (size_t)s->npairs + 1) * sizeof *pairs);
        if (!pairs) return ax_error_oom(cx), -1;
        for (int k = 0; k < s->npairs; k++)
            pairs[2 * k] = s->data[2 * k + 1], pairs[2 * k + 1] = s->data[2 * k];
        q.axis = ax_axis_spec_make(cx, s->nnames, s->names, s->npairs, pairs, 0, NULL);
        free(pairs);
        if (!q.axis) return -1;
    }
    ax_array *ct = cts[0];
    ct_in[0] = ax_bind1(cx, to, 1, &ct, &q);
    return ct_in[0] ? 0 : -1;
}

/* ---------------------------------------------------------------- batching */

/* A collective over other axes than the vmap's: each example's own collective. The batch
 * dimension goes first, and the axes of the parameters move one up. */
static int batch_other(ax_ctx *cx, ax_prim prim, const ax_params *p, ax_array *x, int bdim,
                       ax_array **out, int *out_bdim) {
    ax_params q = *p;
    ax_array *y;
    if (prim == AX_P_PSUM || prim == AX_P_PMAX || prim == AX_P_PMIN || prim == AX_P_PPERMUTE) {
        *out_bdim = bdim;
        y = ax_bind1(cx, prim, 1, &x, p);
    } else {
        q.axes[0]++;
        q.axes[1]++;
        ax_array *front = ax_moveaxis(cx, x, bdim, 0);
        *out_bdim = 0;
        y = front ? ax_bind1(cx, prim, 1, &front, &q) : NULL;
        ax_array_release(front);
    }
    out[0] = y;
    return y ? 0 : -1;
}

/* x (batched at 0) with dimensions d and d + 1 merged. */
static ax_array *merge_dims(ax_scope *s, ax_array *x, int d) {
    if (!x) return NULL;
    int64_t shape[AX_MAX_RANK];
    int nd = 0;
    for (int i = 0; i < x->ndim; i++) {
        if (i == d + 1) continue;
        shape[nd++] = i == d ? x->shape[d] * x->shape[d + 1] : x->shape[i];
    }
    return ax_lax_reshape(s, x, nd, shape);
}

/* x with dimension d split into (n, x.shape[d] / n). */
static ax_array *split_dim(ax_scope *s, ax_array *x, int d, int64_t n) {
    if (!x) return NULL;
    int64_t shape[AX_MAX_RANK];
    int nd = 0;
    for (int i = 0; i < x->ndim; i++) {
        if (i == d) {
            shape[nd++] = n;
            shape[nd++] = x->shape[d] / n;
        } else {
            shape[nd++] = x->shape[i];
        }
    }
    return ax_lax_reshape(s, x, nd, shape);
}

static ax_array *slice0(ax_scope *s, ax_array *x, int64_t at) {
    ax_params q = {.ndim = x->ndim};
    for (int i = 0; i < x->ndim; i++) q.lo[i] = 0, q.hi[i] = x->shape[i], q.step[i] = 1;
    q.lo[0] = at;
    q.hi[0] = at + 1;
    return ax_lax_bind(s, AX_P_SLICE, 1, &x, &q);
}

/* ppermute along the batch (dimension 0 of x): example d gets example source(d), or zeros. */
static ax_array *permute_examples(ax_scope *s, ax_array *x, const ax_axis_spec *spec) {
    int64_t n = x->shape[0];
    ax_array **pieces = calloc((size_t)n + 1, sizeof *pieces);
    if (!pieces) return ax_error_oom(s->cx);
    ax_aval one;
    ax_aval_of(&one, x);
    one.shape[0] = 1;
    one.weak = false;
    ax_array *zero = NULL;
    for (int64_t d = 0; d < n; d++) {
        int64_t src = -1;
        for (int k = 0; k < spec->npairs; k++)
            if (spec->data[2 * k + 1] == d) src = spec->data[2 * k];
        if (src < 0 && !zero) zero = ax_lax_full_aval(s, &one, 0.0);
        pieces[d] = src >= 0 ? slice0(s, x, src) : zero;
    }
    ax_params q = {.naxes = 1};
    ax_array *r = ax_lax_bind(s, AX_P_CONCATENATE, (int)n, pieces, &q);
    free(pieces);
    return r;
}

/* all_to_all over the vmap's own axis (x batched at 0): example i gets chunk i of every
 * example, in example order along the concat axis: a transposition of x (after splitting the
 * split axis into chunks when tiled). */
static ax_array *all_to_all_examples(ax_scope *s, ax_array *x, const ax_params *p) {
    int sa = p->axes[0], ca = p->axes[1];
    int64_t n = x->shape[0];
    if (p->flag) x = split_dim(s, x, 1 + sa, n);
    if (!x) return NULL;
    int nd = x->ndim, perm[AX_MAX_RANK], rest[AX_MAX_RANK], k = 0;
    for (int i = 1; i < nd; i++)
        if (i != 1 + sa) rest[k++] = i;
    perm[0] = 1 + sa;
    for (int i = 0, r = 0; i < k + 1; i++) perm[1 + i] = i == ca ? 0 : rest[r++];
    ax_array *y = ax_lax_transpose(s, x, perm);
    return p->flag ? merge_dims(s, y, 1 + ca) : y;
}

/* A collective over the vmap's own axis: the batch is the devices. Results that are the same
 * for every example come back unbatched. */
static int batch_own(ax_ctx *cx, ax_prim prim, const ax_params *p, ax_array *x, int bdim,
                     int64_t size, const char *axis, ax_array **out, int *out_bdim) {
    bool err;
    const ax_axis_spec *rest = spec_without(cx, p->axis, axis, &err);
    if (err) return -1;
    bool reduction = prim == AX_P_PSUM || prim == AX_P_PMAX || prim == AX_P_PMIN;
    if (rest && !reduction) {
        ax_error(cx, AX_ERR_VALUE, "%s over several axis names at once is not supported",
                 ax_prim_get(prim)->name);
        return -1;
    }
    ax_scope s;
    ax_scope_begin(&s, cx);
    if (prim == AX_P_AXIS_INDEX) {
        ax_params q = {.dtype = AX_I32, .ndim = 1, .shape = {size}, .naxes = 1};
        x = ax_lax_bind(&s, AX_P_IOTA, 0, NULL, &q);
    } else {
        x = ax_scope_own(&s, bdim < 0 ? ax_vmap_place_take(cx, ax_array_retain(x), -1, size, 0)
                                      : ax_moveaxis(cx, x, bdim, 0));
    }
    int axes0[1] = {0}, d = p->axes[0];
    ax_array *y = NULL;
    *out_bdim = -1;
    switch (prim) {
    case AX_P_PSUM:
        y = ax_lax_reduce(&s, AX_P_REDUCE_SUM, x, 1, axes0);
        break;
    case AX_P_PMAX:
        y = ax_lax_reduce(&s, AX_P_REDUCE_MAX, x, 1, axes0);
        break;
    case AX_P_PMIN:
        y = ax_lax_reduce(&s, AX_P_REDUCE_MIN, x, 1, axes0);
        break;
    case AX_P_ALL_GATHER:
        y = ax_scope_own(&s, x ? ax_moveaxis(cx, x, 0, d) : NULL);
        if (p->flag) y = merge_dims(&s, y, d);
        break;
    case AX_P_PSUM_SCATTER:
        y = ax_lax_reduce(&s, AX_P_REDUCE_SUM, x, 1, axes0);
        if (p->flag) y = split_dim(&s, y, d, size);
        *out_bdim = d;
        break;
    case AX_P_PPERMUTE:
        y = x ? permute_examples(&s, x, p->axis) : NULL;
        *out_bdim = 0;
        break;
    case AX_P_ALL_TO_ALL:
        y = x ? all_to_all_examples(&s, x, p) : NULL;
        *out_bdim = 0;
        break;
    default: /* axis_index */
        y = x;
        *out_bdim = 0;
        break;
    }
    if (y && rest) y = ax_scope_own(&s, ax_collective(cx, prim, y, rest, NULL));
    out[0] = y ? ax_scope_keep(&s, y) : NULL;
    ax_scope_end(&s);
    return out[0] ? 0 : -1;
}

static int collective_batch(ax_ctx *cx, ax_prim prim, const ax_params *p, int nin, ax_array **in,
                            const int *bdim, int64_t size, ax_array **out, int *out_bdim) {
    const char *axis = ax_batching_axis(cx);
    if (names_axis(p->axis, axis))
        return batch_own(cx, prim, p, nin ? in[0] : NULL, nin ? bdim[0] : -1, size, axis, out,
                         out_bdim);
    if (!nin) { /* routed here only by a vmap that names its axis */
        ax_error(cx, AX_ERR_RUNTIME, "internal error: axis_index batched by another axis");
        return -1;
    }
    return batch_other(cx, prim, p, in[0], bdim[0], out, out_bdim);
}

/* ---------------------------------------------------------------- the rows */

#define COLLECTIVE(NAME, PRINTED, NIN, FLAGS, SHAPE, EAGER, JVP, TRANSPOSE, FORMAT)                \
    const ax_prim_info NAME = {                                                                    \
        .name = PRINTED,                                                                           \
        .nin = NIN,                                                                                \
        .nout = 1,                                                                                 \
        .flags = AX_PRIM_COLLECTIVE | (FLAGS),                                                     \
        .shape = SHAPE,                                                                            \
        .eager = EAGER,                                                                            \
        .jvp = JVP,                                                                                \
        .linear_in = 1,                                                                            \
        .transpose = TRANSPOSE,                                                                    \
        .batch = collective_batch,                                                                 \
        .format_params = FORMAT,                                                                   \
        .lower = AX_LOWER_EAGER,                                                                   \
        .tested_by = "tests/unit/test_collectives.c, tests/lang/pmap_*.ax",                        \
    }

COLLECTIVE(ax_psum_info, "psum", 1, AX_PRIM_LINEAR, psum_shape, psum_eager, ax_jvp_linear,
           collective_transpose, format_reduce);
COLLECTIVE(ax_pmax_info, "pmax", 1, 0, same_shape, pmax_eager, extreme_jvp, NULL, format_reduce);
COLLECTIVE(ax_pmin_info, "pmin", 1, 0, same_shape, pmin_eager, extreme_jvp, NULL, format_reduce);
COLLECTIVE(ax_all_gather_info, "all_gather", 1, AX_PRIM_LINEAR, all_gather_shape, all_gather_eager,
           ax_jvp_linear, collective_transpose, format_all_gather);
COLLECTIVE(ax_psum_scatter_info, "psum_scatter", 1, AX_PRIM_LINEAR, psum_scatter_shape,
           psum_scatter_eager, ax_jvp_linear, collective_transpose, format_psum_scatter);
COLLECTIVE(ax_ppermute_info, "ppermute", 1, AX_PRIM_LINEAR, ppermute_shape, ppermute_eager,
           ax_jvp_linear, collective_transpose, format_ppermute);
COLLECTIVE(ax_all_to_all_info, "all_to_all", 1, AX_PRIM_LINEAR, all_to_all_shape, all_to_all_eager,
           ax_jvp_linear, collective_transpose, format_all_to_all);
COLLECTIVE(ax_axis_index_info, "axis_index", 0, AX_PRIM_NONDIFF, axis_index_shape, axis_index_eager,
           ax_jvp_zero, NULL, format_axis_index);

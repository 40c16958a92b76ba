/* Devices, pmap and collectives as builtins (docs/parallel.md): jax.devices() and friends,
 * jax.device_put (the library jax._devices, bound by stdlib/jax.ax), jax.distributed.initialize(),
 * pmap(f, axis_name=...) and lax.psum, pmean,
 * pmax, pmin, all_gather, psum_scatter, ppermute, all_to_all, axis_index.
 *
 * pmap traces f once per argument signature on one slice of each mapped argument, with the
 * axis name in scope (compiler/pmap.h), and binds one xla_pmap equation: eagerly its body runs
 * on the devices, under another transformation it is one equation of its trace. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../compiler/collectives.h"
#include "../compiler/lax.h"
#include "../compiler/pmap.h"
#include "../compiler/vmap.h"
#include "../runtime/device.h"
#include "builtins_lib.h"
#include "flat_call.h"
#include "jit_builtin.h"
#include "libs.h"
#include "np_lib.h"
#include "pytree.h"
#include "transforms.h"

/* ---------------------------------------------------------------- devices */

typedef struct device_obj {
    int id, process;
} device_obj;

static void device_format(ax_strbuf *out, void *payload) {
    ax_strbuf_appendf(out, "CpuDevice(id=%d)", ((device_obj *)payload)->id);
}

static ax_value *device_getattr(ax_interp *in, ax_value *self, const char *name) {
    device_obj *d = self->obj.payload;
    if (!strcmp(name, "id")) return ax_bi_int_value(in, d->id);
    if (!strcmp(name, "process_index")) return ax_bi_int_value(in, d->process);
    if (!strcmp(name, "platform") || !strcmp(name, "device_kind")) return ax_value_str("cpu");
    return NULL;
}

static const ax_object_type device_type = {
    .name = "Device", .free = free, .format = device_format, .getattr = device_getattr};

/* Device `id` of a process with `local` devices. */
static ax_value *device_value(ax_interp *in, int id, int local) {
    device_obj *d = malloc(sizeof *d);
    if (!d) return ax_error_oom(in->cx);
    d->id = id;
    d->process = local > 0 ? id / local : 0;
    return ax_value_object(&device_type, d);
}

/* A set of devices as x.devices() gives it: prints {CpuDevice(id=0), ...}, iterates. */
typedef struct device_set {
    int n;
    int first;
    int local; /* devices per process */
} device_set;

static void set_format(ax_strbuf *out, void *payload) {
    device_set *s = payload;
    ax_strbuf_append(out, "{");
    for (int i = 0; i < s->n; i++)
        ax_strbuf_appendf(out, "%sCpuDevice(id=%d)", i ? ", " : "", s->first + i);
    ax_strbuf_append(out, "}");
}

static ax_value *set_getitem(ax_interp *in, ax_value *self, ax_value *index) {
    device_set *s = self->obj.payload;
    int64_t i;
    if (!ax_value_to_int(in, index, "a device set index", &i)) return NULL;
    if (i < 0 || i >= s->n) return ax_error(in->cx, AX_ERR_INDEX, "device set index out of range");
    return device_value(in, s->first + (int)i, s->local);
}

static const ax_object_type device_set_type = {
    .name = "set", .free = free, .format = set_format, .getitem = set_getitem};

/* The global ids of this process's devices start here. */
static int first_local(ax_interp *in, int local) {
    return ax_process_index(in->cx) * local;
}

static ax_value *device_list(ax_interp *in, int first, int n, int local) {
    ax_value **items = calloc((size_t)n + 1, sizeof *items);
    if (!items) return ax_error_oom(in->cx);
    for (int i = 0; i < n; i++)
        if (!(items[i] = device_value(in, first + i, local))) {
            ax_values_release(items, i);
            return NULL;
        }
    ax_value *r = ax_value_list(n, items);
    free(items);
    return r;
}

ax_value *ax_parallel_devices_of(ax_interp *in, const ax_array *x) {
    int local = ax_local_device_count(in->cx);
    if (local < 0) return NULL;
    device_set *s = malloc(sizeof *s);
    if (!s) return ax_error_oom(in->cx);
    *s = (device_set){.n = 1, .first = 0, .local = local};
    if (x->device & AX_DEVICE_SHARDED)
        s->n = x->device & ~AX_DEVICE_SHARDED, s->first = first_local(in, local);
    else if (x->device)
        s->first = x->device - 1;
    return ax_value_object(&device_set_type, s);
}

static bool backend_ok(ax_interp *in, ax_value *backend, const char *fname) {
    if (!backend || backend->kind == AX_V_NONE) return true;
    const char *b = ax_bi_str(in, backend, "backend");
    if (!b) return false;
    if (!strcmp(b, "cpu")) return true;
    ax_error(in->cx, AX_ERR_VALUE, "%s: ax has only the 'cpu' backend, not '%s'", fname, b);
    return false;
}

/* devices(backend=None): every device of every process. */
static ax_value *b_devices(ax_interp *in, ax_value *self, const ax_args *a) {
    (void)self;
    ax_value *v[1] = {NULL};
    if (!ax_bi_parse(in, a, "devices", (const char *const[]){"backend", NULL}, 1, v) ||
        !backend_ok(in, v[0], "devices"))
        return NULL;
    int local = ax_local_device_count(in->cx);
    if (local < 0) return NULL;
    return device_list(in, 0, local * ax_process_count(in->cx), local);
}

static ax_value *b_local_devices(ax_interp *in, ax_value *self, const ax_args *a) {
    (void)self;
    ax_value *v[2] = {NULL};
    static const char *const names[] = {"process_index", "backend", NULL};
    if (!ax_bi_parse(in, a, "local_devices", names, 2, v) || !backend_ok(in, v[1], "local_devices"))
        return NULL;
    int64_t proc;
    if (!ax_bi_int(in, v[0], "process_index", ax_process_index(in->cx), &proc)) return NULL;
    if (proc < 0 || proc >= ax_process_count(in->cx))
        return ax_error(in->cx, AX_ERR_VALUE, "local_devices: there is no process %lld",
                        (long long)proc);
    int local = ax_local_device_count(in->cx);
    return local < 0 ? NULL : device_list(in, (int)proc * local, local, local);
}

static ax_value *count_value(ax_interp *in, const ax_args *a, const char *fname, bool global) {
    ax_value *v[1] = {NULL};
    if (!ax_bi_parse(in, a, fname, (const char *const[]){"backend", NULL}, 1, v) ||
        !backend_ok(in, v[0], fname))
        return NULL;
    int local = ax_local_device_count(in->cx);
    if (local < 0) return NULL;
    return ax_bi_int_value(in, global ? local * ax_process_count(in->cx) : local);
}

static ax_value *b_device_count(ax_interp *in, ax_value *self, const ax_args *a) {
    (void)self;
    return count_value(in, a, "device_count", true);
}

static ax_value *b_local_device_count(ax_interp *in, ax_value *self, const ax_args *a) {
    (void)self;
    return count_value(in, a, "local_device_count", false);
}

static ax_value *b_process_index(ax_interp *in, ax_value *self, const ax_args *a) {
    (void)self;
    if (!ax_bi_parse(in, a, "process_index", (const char *const[]){"backend", NULL}, 1,
                     (ax_value *[1]){NULL}))
        return NULL;
    return ax_bi_int_value(in, ax_process_index(in->cx));
}

static ax_value *b_process_count(ax_interp *in, ax_value *self, const ax_args *a) {
    (void)self;
    if (!ax_bi_parse(in, a, "process_count", (const char *const[]){"backend", NULL}, 1,
                     (ax_value *[1]){NULL}))
        return NULL;
    return ax_bi_int_value(in, ax_process_count(in->cx));
}

/* A device value's global id; -1 with a TypeError for anything else. */
static int device_id(ax_interp *in, ax_value *v, const char *what) {
    if (v->kind == AX_V_OBJECT && v->obj.type == &device_type)
        return ((device_obj *)v->obj.payload)->id;
    char d[64];
    ax_value_describe(d, sizeof d, v);
    ax_error(in->cx, AX_ERR_TYPE, "%s must be a device (from jax.devices()), not %s", what, d);
    return -1;
}

/* x as an array, committed to device *(int *)device when that is >= 0 (a view: its data is shared,
 * as all devices read host memory). */
static ax_value *committed(ax_interp *in, ax_value *x, void *device) {
    int id = *(int *)device;
    if (x->kind != AX_V_ARRAY) return ax_np_wrap_take(in, ax_np_asarray(in, x, "device_put"));
    if (id < 0 || x->arr->tracer) return ax_value_retain(x);
    ax_array *a = x->arr;
    ax_array *v = ax_array_view(in->cx, a, a->ndim, a->shape, a->strides, a->offset);
    if (v) v->device = (uint16_t)(id + 1);
    return v ? ax_value_array(v) : NULL;
}

/* device_put(x, device=None): x (a pytree) with array leaves committed to device. */
static ax_value *b_device_put(ax_interp *in, ax_value *self, const ax_args *a) {
    (void)self;
    ax_value *v[2] = {NULL};
    if (!ax_bi_parse(in, a, "device_put", (const char *const[]){"x", "device", NULL}, 2, v) ||
        !ax_bi_required(in, v[0], "device_put", "x"))
        return NULL;
    int id = -1;
    if (v[1] && v[1]->kind != AX_V_NONE && (id = device_id(in, v[1], "device_put: device")) < 0)
        return NULL;
    int total = ax_local_device_count(in->cx) * ax_process_count(in->cx);
    if (id >= AX_DEVICE_SHARDED - 1 || (total > 0 && id >= total))
        return ax_error(in->cx, AX_ERR_VALUE, "device_put: there is no device %d", id);
    return ax_tree_map_leaves(in, v[0], committed, &id);
}

static ax_value *b_block_until_ready(ax_interp *in, ax_value *self, const ax_args *a) {
    (void)self;
    ax_value *v[1] = {NULL};
    if (!ax_bi_parse(in, a, "block_until_ready", (const char *const[]){"x", NULL}, 1, v) ||
        !ax_bi_required(in, v[0], "block_until_ready", "x"))
        return NULL;
    return ax_value_retain(v[0]); /* every computation has finished when it returns */
}

/* ---------------------------------------------------------------- jax.distributed */

static ax_value *b_initialize(ax_interp *in, ax_value *self, const ax_args *a) {
    (void)self;
    static const char *const names[] = {"coordinator_address", "num_processes", "process_id",
                                        "local_device_ids", NULL};
    ax_value *v[4] = {NULL};
    if (!ax_bi_parse(in, a, "initialize", names, 4, v)) return NULL;
    if (ax_distributed_initialize(in->cx)) return NULL;
    int64_t want;
    if (!ax_bi_int(in, v[1], "num_processes", ax_process_count(in->cx), &want)) return NULL;
    if (want != ax_process_count(in->cx))
        return ax_error(in->cx, AX_ERR_VALUE,
                        "jax.distributed.initialize: num_processes=%lld, but mpirun started %d "
                        "(ax joins the processes of an mpirun: run `mpirun -n %lld ax prog.ax`)",
                        (long long)want, ax_process_count(in->cx), (long long)want);
    if (!ax_bi_int(in, v[2], "process_id", ax_process_index(in->cx), &want)) return NULL;
    if (want != ax_process_index(in->cx))
        return ax_error(in->cx, AX_ERR_VALUE,
                        "jax.distributed.initialize: process_id=%lld, but mpirun made this "
                        "process %d",
                        (long long)want, ax_process_index(in->cx));
    return ax_none();
}

static ax_value *b_shutdown(ax_interp *in, ax_value *self, const ax_args *a) {
    (void)self;
    if (!ax_bi_parse(in, a, "shutdown", (const char *const[]){NULL}, 0, NULL)) return NULL;
    ax_distributed_finish(in->cx, false);
    return ax_none();
}

ax_value *ax_lib_open_distributed(ax_interp *in, const ax_lib *lib) {
    static const ax_builtin_def fns[] = {
        {"initialize", b_initialize,
         "jax.distributed.initialize(): joins the processes of an mpirun (nothing outside one)", 0},
        {"shutdown", b_shutdown, "jax.distributed.shutdown(): leaves MPI", 0},
        {NULL, NULL, NULL, 0},
    };
    return ax_lib_module_of(in, lib, fns);
}

/* ---------------------------------------------------------------- collectives */

/* An axis_name argument: a string or a tuple/list of strings, interned as a spec. */
static const ax_axis_spec *read_axis_names(ax_interp *in, ax_value *v, const char *fname,
                                           int npairs, const int64_t *pairs) {
    const char *names[AX_MAX_AXIS_NAMES];
    int n = 0;
    if (v && v->kind == AX_V_STR) {
        names[n++] = v->str;
    } else if (v && (v->kind == AX_V_TUPLE || v->kind == AX_V_LIST) && v->n >= 1 &&
               v->n <= AX_MAX_AXIS_NAMES) {
        for (int i = 0; i < v->n; i++) {
            if (v->items[i]->kind != AX_V_STR) break;
            names[n++] = v->items[i]->str;
        }
        if (n < v->n) n = -1;
    } else {
        n = -1;
    }
    if (n < 0)
        return ax_error(in->cx, AX_ERR_TYPE,
                        "%s: axis_name must be a string or a tuple of up to %d strings", fname,
                        AX_MAX_AXIS_NAMES);
    return ax_axis_spec_make(in->cx, n, names, npairs, pairs, 0, NULL);
}

typedef struct collective_call {
    ax_prim prim;
    const ax_axis_spec *spec;
    ax_params extra;
    bool mean;
} collective_call;

/* The collective of one leaf; negative axes count from the end of the leaf's rank, plus
 * rank_extra (all_gather's new axis). */
static ax_array *collective_leaf(ax_interp *in, const collective_call *c, ax_array *x,
                                 int rank_extra) {
    ax_ctx *cx = in->cx;
    ax_params extra = c->extra;
    for (int k = 0; k < extra.naxes; k++)
        if (extra.axes[k] < 0) extra.axes[k] += x->ndim + rank_extra;
    ax_array *own = NULL;
    if (c->prim == AX_P_PSUM && x->dtype == AX_BOOL) /* as JAX: booleans are counted */
        x = own = ax_np_astype(cx, x, ax_dtype_default_int(cx->x64), false);
    if (c->mean && !ax_dtype_is_float(x->dtype)) {
        ax_array *f = ax_np_to_inexact(cx, x);
        ax_array_release(own);
        x = own = f;
    }
    ax_array *y = x ? ax_collective(cx, c->prim, x, c->spec, &extra) : NULL;
    ax_array_release(own);
    if (y && c->mean) {
        int64_t size = ax_axis_size(cx, c->spec);
        ax_array *n = size > 0 ? ax_array_scalar(cx, y->dtype, (double)size) : NULL;
        ax_array *m = n ? ax_bind_binary(cx, AX_P_DIV, y, n) : NULL;
        ax_array_release(n);
        ax_array_release(y);
        y = m;
    }
    return y;
}

typedef struct leaf_call {
    const collective_call *c;
    const char *fname;
    int rank_extra;
} leaf_call;

static ax_value *collective_of_leaf(ax_interp *in, ax_value *leaf, void *data) {
    const leaf_call *lc = data;
    ax_array *a = ax_value_to_array(in, leaf, lc->fname);
    ax_array *y = a ? collective_leaf(in, lc->c, a, lc->rank_extra) : NULL;
    ax_array_release(a);
    return y ? ax_value_array(y) : NULL;
}

/* The collective of every leaf of the tree x. */
static ax_value *collective_tree(ax_interp *in, const collective_call *c, ax_value *x,
                                 const char *fname, int rank_extra) {
    leaf_call lc = {c, fname, rank_extra};
    return ax_tree_map_leaves(in, x, collective_of_leaf, &lc);
}

/* psum / pmean / pmax / pmin (x, axis_name). */
static ax_value *reduction(ax_interp *in, const ax_args *a, const char *fname, ax_prim prim,
                           bool mean) {
    ax_value *v[3] = {NULL};
    static const char *const names[] = {"x", "axis_name", "axis_index_groups", NULL};
    if (!ax_bi_parse(in, a, fname, names, 3, v) || !ax_bi_required(in, v[0], fname, "x") ||
        !ax_bi_required(in, v[1], fname, "axis_name"))
        return NULL;
    if (v[2] && v[2]->kind != AX_V_NONE)
        return ax_error(in->cx, AX_ERR_VALUE, "%s: axis_index_groups is not supported", fname);
    collective_call c = {.prim = prim, .mean = mean};
    if (!(c.spec = read_axis_names(in, v[1], fname, 0, NULL))) return NULL;
    return collective_tree(in, &c, v[0], fname, 0);
}

static ax_value *b_psum(ax_interp *in, ax_value *self, const ax_args *a) {
    (void)self;
    return reduction(in, a, "psum", AX_P_PSUM, false);
}

static ax_value *b_pmean(ax_interp *in, ax_value *self, const ax_args *a) {
    (void)self;
    return reduction(in, a, "pmean", AX_P_PSUM, true);
}

static ax_value *b_pmax(ax_interp *in, ax_value *self, const ax_args *a) {
    (void)self;
    return reduction(in, a, "pmax", AX_P_PMAX, false);
}

static ax_value *b_pmin(ax_interp *in, ax_value *self, const ax_args *a) {
    (void)self;
    return reduction(in, a, "pmin", AX_P_PMIN, false);
}

/* The collectives with axis parameters: their signatures (x and axis_name first). */
typedef struct shaped {
    const char *fname;
    ax_prim prim;
    const char *names[7];
    int maxpos;
    int naxes, axis_arg[2]; /* the parameters that are axes (required after axis_name when
                               maxpos says so), in params.axes order */
    int tiled_arg;
} shaped;

static const shaped all_gather_sig = {"all_gather",
                                      AX_P_ALL_GATHER,
                                      {"x", "axis_name", "axis_index_groups", "axis", "tiled"},
                                      2,
                                      1,
                                      {3},
                                      4};
static const shaped psum_scatter_sig = {
    "psum_scatter",
    AX_P_PSUM_SCATTER,
    {"x", "axis_name", "scatter_dimension", "axis_index_groups", "tiled"},
    2,
    1,
    {2},
    4};
static const shaped all_to_all_sig = {
    "all_to_all",
    AX_P_ALL_TO_ALL,
    {"x", "axis_name", "split_axis", "concat_axis", "axis_index_groups", "tiled"},
    4,
    2,
    {2, 3},
    5};

static ax_value *shaped_collective(ax_interp *in, const ax_args *a, const shaped *sig) {
    ax_value *v[7] = {NULL};
    bool tiled;
    collective_call c = {.prim = sig->prim, .extra = {.naxes = sig->naxes}};
    if (!ax_bi_parse(in, a, sig->fname, sig->names, sig->maxpos, v)) return NULL;
    for (int k = 0; k < sig->maxpos; k++)
        if (!ax_bi_required(in, v[k], sig->fname, sig->names[k])) return NULL;
    for (int k = 0; k < sig->naxes; k++) {
        int64_t axis;
        if (!ax_bi_int(in, v[sig->axis_arg[k]], sig->names[sig->axis_arg[k]], 0, &axis))
            return NULL;
        if (axis < -AX_MAX_RANK - 1 || axis > AX_MAX_RANK)
            return ax_error(in->cx, AX_ERR_VALUE, "%s: %s %lld is out of range", sig->fname,
                            sig->names[sig->axis_arg[k]], (long long)axis);
        c.extra.axes[k] = (int)axis;
    }
    if (!ax_bi_bool(in, v[sig->tiled_arg], "tiled", false, &tiled)) return NULL;
    c.extra.flag = tiled;
    if (!(c.spec = read_axis_names(in, v[1], sig->fname, 0, NULL))) return NULL;
    /* all_gather's axis counts in the result, which has one more dimension unless tiled */
    return collective_tree(in, &c, v[0], sig->fname, sig == &all_gather_sig && !tiled);
}

static ax_value *b_all_gather(ax_interp *in, ax_value *self, const ax_args *a) {
    (void)self;
    return shaped_collective(in, a, &all_gather_sig);
}

static ax_value *b_psum_scatter(ax_interp *in, ax_value *self, const ax_args *a) {
    (void)self;
    return shaped_collective(in, a, &psum_scatter_sig);
}

static ax_value *b_all_to_all(ax_interp *in, ax_value *self, const ax_args *a) {
    (void)self;
    return shaped_collective(in, a, &all_to_all_sig);
}

/* perm: (source, destination) pairs, each source and each destination at most once. */
static int64_t *read_perm(ax_interp *in, ax_value *perm, int *npairs) {
    ax_value_iter it;
    if (ax_value_iter_begin(in, perm, &it)) return NULL;
    int cap = 16, n = 0;
    int64_t *pairs = malloc((size_t)cap * 2 * sizeof *pairs);
    if (!pairs) return ax_error_oom(in->cx);
    ax_value *item;
    int rc;
    while ((rc = ax_value_iter_next(in, &it, &item)) == 1) {
        bool pair = (item->kind == AX_V_TUPLE || item->kind == AX_V_LIST) && item->n == 2;
        if (!pair)
            ax_error(in->cx, AX_ERR_TYPE,
                     "ppermute: perm must be a list of (source, destination) pairs");
        if (pair && n == cap) {
            int64_t *g = realloc(pairs, (size_t)(cap *= 2) * 2 * sizeof *g);
            if (!g)
                pair = false, ax_error_oom(in->cx);
            else
                pairs = g;
        }
        bool ok = pair && ax_value_to_int(in, item->items[0], "a ppermute source", &pairs[2 * n]) &&
                  ax_value_to_int(in, item->items[1], "a ppermute destination", &pairs[2 * n + 1]);
        ax_value_release(item);
        for (int k = 0; ok && k < n; k++)
            if (pairs[2 * k] == pairs[2 * n] || pairs[2 * k + 1] == pairs[2 * n + 1]) {
                ax_error(
                    in->cx, AX_ERR_VALUE, "ppermute: perm sends from or to device %lld twice",
                    (long long)(pairs[2 * k] == pairs[2 * n] ? pairs[2 * n] : pairs[2 * n + 1]));
                ok = false;
            }
        if (!ok) {
            rc = -1;
            break;
        }
        n++;
    }
    if (rc < 0) {
        free(pairs);
        return NULL;
    }
    *npairs = n;
    return pairs;
}

static ax_value *b_ppermute(ax_interp *in, ax_value *self, const ax_args *a) {
    (void)self;
    ax_value *v[3] = {NULL};
    static const char *const names[] = {"x", "axis_name", "perm", NULL};
    if (!ax_bi_parse(in, a, "ppermute", names, 3, v) ||
        !ax_bi_required(in, v[0], "ppermute", "x") ||
        !ax_bi_required(in, v[1], "ppermute", "axis_name") ||
        !ax_bi_required(in, v[2], "ppermute", "perm"))
        return NULL;
    int npairs = 0;
    int64_t *pairs = read_perm(in, v[2], &npairs);
    if (!pairs) return NULL;
    collective_call c = {.prim = AX_P_PPERMUTE};
    c.spec = read_axis_names(in, v[1], "ppermute", npairs, pairs);
    free(pairs);
    return c.spec ? collective_tree(in, &c, v[0], "ppermute", 0) : NULL;
}

static ax_value *b_axis_index(ax_interp *in, ax_value *self, const ax_args *a) {
    (void)self;
    ax_value *v[1] = {NULL};
    if (!ax_bi_parse(in, a, "axis_index", (const char *const[]){"axis_name", NULL}, 1, v) ||
        !ax_bi_required(in, v[0], "axis_index", "axis_name"))
        return NULL;
    const ax_axis_spec *spec = read_axis_names(in, v[0], "axis_index", 0, NULL);
    if (!spec) return NULL;
    return ax_np_wrap_take(in, ax_collective(in->cx, AX_P_AXIS_INDEX, NULL, spec, NULL));
}

/* ---------------------------------------------------------------- pmap */

typedef struct pmap_entry {
    char *key;
    ax_ir *ir;
    ax_value *out_def;
    int nmain;
} pmap_entry;

typedef struct pmap_state {
    ax_value *fn, *in_axes, *out_axes;
    const ax_axis_spec *spec; /* the axis name and the devices= */
    int64_t axis_size;        /* axis_size=, or -1 */
    int nstatic;
    int *statics;
    pmap_entry *entries;
    int nentries, cap;
} pmap_state;

static void pmap_state_free(void *p) {
    pmap_state *s = p;
    ax_value_release(s->fn);
    ax_value_release(s->in_axes);
    ax_value_release(s->out_axes);
    for (int i = 0; i < s->nentries; i++) {
        free(s->entries[i].key);
        ax_ir_release(s->entries[i].ir);
        ax_value_release(s->entries[i].out_def);
    }
    free(s->entries);
    free(s->statics);
    free(s);
}

static const ax_object_type pmap_state_type = {.name = "pmap", .free = pmap_state_free};

static bool is_static(const pmap_state *s, int pos) {
    for (int i = 0; i < s->nstatic; i++)
        if (s->statics[i] == pos) return true;
    return false;
}

/* The leaves of the traced arguments, each with its mapped axis moved to the front (a
 * broadcast for an unmapped one): new references in *mapped; *n the slices; axes[i] the mapped
 * axis of leaf i (-1 for none). */
static int map_leaves(ax_interp *in, pmap_state *s, const ax_args *a, flat_call *fc,
                      ax_array **mapped, int *axes, int64_t *n) {
    int nax = 0;
    bool per_arg = s->in_axes->kind == AX_V_TUPLE || s->in_axes->kind == AX_V_LIST;
    int rc = 0;
    if (per_arg && s->in_axes->n != a->n) {
        ax_error(in->cx, AX_ERR_VALUE,
                 "pmap in_axes has %d entries but the function was called with %d positional "
                 "argument%s",
                 s->in_axes->n, a->n, a->n == 1 ? "" : "s");
        rc = -1;
    }
    for (int k = 0; k < fc->ntraced && !rc; k++) {
        ax_value *spec = per_arg ? s->in_axes->items[fc->traced[k]] : s->in_axes;
        rc = ax_spread_axes(in, "pmap in_axes", a->pos[fc->traced[k]], spec, axes, &nax, fc->nflat);
    }
    *n = -1;
    for (int i = 0; i < fc->nflat && !rc; i++) {
        ax_array *x = fc->flat[i];
        if (axes[i] == AX_AXIS_NONE) continue;
        if (axes[i] < -x->ndim || axes[i] >= x->ndim) {
            char t[96];
            ax_array_type_format(t, sizeof t, x);
            ax_error(in->cx, AX_ERR_VALUE,
                     "pmap: in_axes %d is out of range for an argument of type %s", axes[i], t);
            rc = -1;
        } else {
            if (axes[i] < 0) axes[i] += x->ndim;
            if (*n >= 0 && x->shape[axes[i]] != *n) {
                ax_error(in->cx, AX_ERR_VALUE,
                         "pmap got inconsistent sizes for the mapped axes: %lld and %lld",
                         (long long)*n, (long long)x->shape[axes[i]]);
                rc = -1;
            }
            *n = x->shape[axes[i]];
        }
    }
    if (!rc && *n >= 0 && s->axis_size >= 0 && *n != s->axis_size) {
        ax_error(in->cx, AX_ERR_VALUE,
                 "pmap: axis_size=%lld but the mapped arguments have size %lld",
                 (long long)s->axis_size, (long long)*n);
        rc = -1;
    }
    if (!rc && *n < 0 && (*n = s->axis_size) < 0) {
        ax_error(in->cx, AX_ERR_VALUE,
                 "pmap needs at least one mapped argument (an in_axes entry that is not None) "
                 "or axis_size");
        rc = -1;
    }
    for (int i = 0; i < fc->nflat && !rc; i++) {
        ax_array *x = fc->flat[i];
        if (axes[i] == AX_AXIS_NONE) axes[i] = -1;
        mapped[i] = axes[i] < 0 ? ax_vmap_place_take(in->cx, ax_array_retain(x), -1, *n, 0)
                                : ax_moveaxis(in->cx, x, axes[i], 0);
        if (!mapped[i]) rc = -1;
    }
    return rc;
}

/* The signature of a call: the slices' types, the trees, the static arguments. */
static char *signature(ax_interp *in, pmap_state *s, const ax_args *a, const flat_call *fc,
                       ax_array **mapped, int64_t n) {
    ax_strbuf k;
    ax_strbuf_init(&k);
    ax_strbuf_appendf(&k, "%lld|", (long long)n);
    for (int i = 0; i < fc->nflat; i++) {
        char t[160];
        ax_array_type_format(t, sizeof t, mapped[i]);
        ax_strbuf_appendf(&k, "%s%s;", t, mapped[i]->weak ? "~" : "");
    }
    for (int t = 0; t < fc->ntraced; t++)
        ax_strbuf_appendf(&k, "%llx,", (unsigned long long)ax_treedef_hash(fc->defs[t]));
    /* keywords pass as they are, like statics */
    char *statics = ax_statics_exact_key(in, "pmap", s->statics, s->nstatic, a);
    if (statics) ax_strbuf_append(&k, statics);
    free(statics);
    if (statics && !k.data) ax_error_oom(in->cx);
    if (!statics || !k.data) ax_strbuf_free(&k);
    return statics ? k.data : NULL;
}

static pmap_entry *trace_entry(ax_interp *in, pmap_state *s, flat_call *fc, ax_array **mapped,
                               int64_t n, char **key) {
    ax_aval *avals = calloc((size_t)fc->nflat + 1, sizeof *avals);
    if (!avals) return ax_error_oom(in->cx);
    for (int i = 0; i < fc->nflat; i++) {
        ax_aval_of(&avals[i], mapped[i]);
        memmove(avals[i].shape, avals[i].shape + 1,
                (size_t)(avals[i].ndim - 1) * sizeof *avals[i].shape);
        avals[i].ndim--;
    }
    int nout = 0;
    ax_ir *ir = ax_pmap_trace(in->cx, s->spec, n * ax_process_count(in->cx), ax_flat_call_fn, fc,
                              fc->nflat, avals, &nout);
    free(avals);
    if (!ir) return NULL;
    const char *name = s->fn->kind == AX_V_FUNC && s->fn->fn->name ? s->fn->fn->name : "<lambda>";
    ax_ir_set_name(ir, name);
    if (s->nentries == s->cap) {
        int cap = s->cap ? 2 * s->cap : 4;
        pmap_entry *g = realloc(s->entries, (size_t)cap * sizeof *g);
        if (!g) {
            ax_ir_release(ir);
            return ax_error_oom(in->cx);
        }
        s->entries = g;
        s->cap = cap;
    }
    pmap_entry *e = &s->entries[s->nentries++];
    *e = (pmap_entry){
        .key = *key, .ir = ir, .out_def = ax_value_retain(fc->out_def), .nmain = fc->nmain};
    *key = NULL;
    return e;
}

/* Binds the pmap of e's body: the constants it captured that an outer transformation traces
 * become leading operands, broadcast to every device. */
static int bind_entry(ax_interp *in, pmap_state *s, pmap_entry *e, ax_array **mapped, int nflat,
                      int64_t n, ax_array **outs) {
    ax_ctx *cx = in->cx;
    const ax_ir *ir = e->ir;
    bool *lift = calloc((size_t)ir->nconsts + 1, sizeof *lift);
    ax_array **args = calloc((size_t)ir->nconsts + (size_t)nflat + 1, sizeof *args);
    int rc = lift && args ? 0 : -1, m = 0;
    if (rc) ax_error_oom(cx);
    for (int i = 0; i < ir->nconsts && !rc; i++)
        if ((lift[i] = ir->consts[i]->tracer != NULL)) {
            args[m] = ax_vmap_place_take(cx, ax_array_retain(ir->consts[i]), -1, n, 0);
            if (!args[m++]) rc = -1;
        }
    int nlifted = m;
    ax_ir *body = rc ? NULL : nlifted ? ax_ir_lift_consts(ir, lift) : ax_ir_retain(e->ir);
    if (!rc && !body) rc = (ax_error_oom(cx), -1);
    for (int i = 0; i < nflat; i++) args[m++] = mapped[i];
    if (!rc) rc = ax_pmap_bind(cx, body, s->spec, n, m, args, outs);
    for (int i = 0; args && i < nlifted; i++) ax_array_release(args[i]);
    ax_ir_release(body);
    free(lift);
    free(args);
    return rc;
}

/* Result j (n slices along axis 0) placed as out_axes says. Takes y. */
static ax_array *place_output(ax_interp *in, ax_array *y, int axis) {
    if (!y) return NULL;
    ax_ctx *cx = in->cx;
    if (axis == AX_AXIS_NONE) { /* the first device's value */
        ax_scope s;
        ax_scope_begin(&s, cx);
        ax_params q = {.ndim = y->ndim};
        for (int i = 0; i < y->ndim; i++) q.lo[i] = 0, q.hi[i] = y->shape[i], q.step[i] = 1;
        q.hi[0] = 1;
        ax_array *first = ax_lax_bind(&s, AX_P_SLICE, 1, &y, &q);
        ax_array *r = first ? ax_lax_reshape(&s, first, y->ndim - 1, y->shape + 1) : NULL;
        r = r ? ax_scope_keep(&s, r) : NULL;
        ax_scope_end(&s);
        ax_array_release(y);
        return r;
    }
    if (axis < 0) axis += y->ndim;
    if (axis < 0 || axis >= y->ndim) {
        ax_array_release(y);
        return ax_error(cx, AX_ERR_VALUE,
                        "pmap: out_axes %d is out of range for an output of rank %d", axis,
                        y->ndim - 1);
    }
    ax_array *r = ax_moveaxis(cx, y, 0, axis);
    ax_array_release(y);
    return r;
}

static ax_value *finish_outputs(ax_interp *in, pmap_state *s, pmap_entry *e, ax_array **outs,
                                int64_t n) {
    ax_ctx *cx = in->cx;
    ax_value **vals = ax_flat_wrap_arrays(cx, e->nmain, outs);
    ax_value *main = vals ? ax_tree_unflatten(in, e->out_def, vals, e->nmain) : NULL;
    if (vals) ax_values_release(vals, e->nmain);
    int *axes = main ? malloc((size_t)(e->nmain + 1) * sizeof *axes) : NULL, nax = 0;
    if (main && !axes) ax_error_oom(cx);
    bool ok = axes && !ax_spread_axes(in, "pmap out_axes", main, s->out_axes, axes, &nax, e->nmain);
    ax_value_release(main);
    for (int j = 0; ok && j < e->nmain; j++) {
        outs[j] = place_output(in, outs[j], axes[j]);
        ok = outs[j] != NULL;
        if (ok && !outs[j]->tracer && ax_refs_load(&outs[j]->refs) == 1 &&
            axes[j] != AX_AXIS_NONE && n < AX_DEVICE_SHARDED)
            outs[j]->device = (uint16_t)(AX_DEVICE_SHARDED | n);
    }
    free(axes);
    if (!ok) return NULL;
    vals = ax_flat_wrap_arrays(cx, e->nmain, outs);
    ax_value *r = vals ? ax_tree_unflatten(in, e->out_def, vals, e->nmain) : NULL;
    if (vals) ax_values_release(vals, e->nmain);
    return r;
}

/* A pmap called inside another (`outer` slices around it), as JAX's pmap of pmap: the slices of
 * every level together must fit the devices. Its body is batched over its axis (a vmap with
 * its axis_name, whose collectives give what the devices' would) on each outer device. */
static ax_value *nested_pmap(ax_interp *in, pmap_state *s, flat_call *fc, const int *axes,
                             int64_t n, int64_t outer) {
    ax_ctx *cx = in->cx;
    int devices = ax_local_device_count(cx) * ax_process_count(cx);
    if (s->spec->ndevices)
        return ax_error(cx, AX_ERR_VALUE,
                        "pmap: devices= on a pmap nested in another (give them to the outermost "
                        "pmap)");
    if (devices >= 0 && outer * n > devices)
        return ax_error(cx, AX_ERR_VALUE,
                        "pmap: nested pmaps map %lld x %lld = %lld slices, but there are %d "
                        "devices (set their number with --devices N or AX_DEVICES=N)",
                        (long long)outer, (long long)n, (long long)(outer * n), devices);
    if (devices < 0) return NULL;
    const char *name = s->spec->nnames ? s->spec->names[0] : NULL;
    int nout = 0, *bdims = NULL;
    ax_array **outs = NULL;
    if (ax_vmap_named(cx, name, ax_flat_call_fn, fc, fc->nflat, fc->flat, axes, n, &nout, &outs,
                      &bdims))
        return NULL;
    ax_value *r = NULL;
    if (!ax_vmap_place_first(cx, nout, outs, bdims, n)) {
        pmap_entry e = {.out_def = fc->out_def, .nmain = fc->nmain};
        r = finish_outputs(in, s, &e, outs, n);
    }
    ax_flat_release_arrays(outs, nout);
    return r;
}

static ax_value *pmap_fn_call(ax_interp *in, ax_value *self, const ax_args *a) {
    pmap_state *s = self->builtin->data->obj.payload;
    for (int i = 0; i < a->nkw; i++)
        if (a->kwvals[i]->kind == AX_V_ARRAY)
            return ax_error(in->cx, AX_ERR_TYPE,
                            "pass arrays to a pmapped function positionally (keyword '%s')",
                            a->kwnames[i]);
    for (int i = 0; i < s->nstatic; i++)
        if (s->statics[i] >= a->n)
            return ax_error(in->cx, AX_ERR_VALUE,
                            "pmap: static_broadcasted_argnums names argument %d but only %d "
                            "were given",
                            s->statics[i], a->n);
    int *traced = malloc((size_t)(a->n + 1) * sizeof *traced), ntraced = 0;
    if (!traced) return ax_error_oom(in->cx);
    for (int i = 0; i < a->n; i++)
        if (!is_static(s, i)) traced[ntraced++] = i;
    flat_call fc;
    ax_value *result = NULL;
    ax_array **mapped = NULL, **outs = NULL;
    char *key = NULL;
    int64_t n = 0, outer = ax_axis_pmap_slices(in->cx);
    int *axes = NULL;
    int rc = ax_flat_call_init(&fc, in, "pmap", s->fn, a, ntraced, traced, false);
    free(traced);
    if (!rc && (!(mapped = calloc((size_t)fc.nflat + 1, sizeof *mapped)) ||
                !(axes = malloc((size_t)(fc.nflat + 1) * sizeof *axes))))
        rc = (ax_error_oom(in->cx), -1);
    if (!rc) rc = map_leaves(in, s, a, &fc, mapped, axes, &n);
    if (!rc && outer) {
        result = nested_pmap(in, s, &fc, axes, n, outer);
        rc = 1; /* done */
    }
    int local = rc ? 0 : ax_local_device_count(in->cx);
    if (!rc && local < 0) rc = -1;
    if (!rc && !s->spec->ndevices && n > local)
        rc = (ax_error(in->cx, AX_ERR_VALUE,
                       "pmap: the mapped axis has size %lld, but this process has %d device%s "
                       "(set their number with --devices N or AX_DEVICES=N)",
                       (long long)n, local, local == 1 ? "" : "s"),
              -1);
    if (!rc && s->spec->ndevices && n != s->spec->ndevices)
        rc = (ax_error(in->cx, AX_ERR_VALUE,
                       "pmap: the mapped axis has size %lld, but devices= lists %d device%s",
                       (long long)n, s->spec->ndevices, s->spec->ndevices == 1 ? "" : "s"),
              -1);
    if (!rc && !(key = signature(in, s, a, &fc, mapped, n))) rc = -1;
    pmap_entry *e = NULL;
    for (int i = 0; !rc && i < s->nentries && !e; i++)
        if (!strcmp(s->entries[i].key, key)) e = &s->entries[i];
    if (!rc && !e && !(e = trace_entry(in, s, &fc, mapped, n, &key))) rc = -1;
    if (!rc && !(outs = calloc((size_t)e->ir->nout + 1, sizeof *outs)))
        rc = (ax_error_oom(in->cx), -1);
    if (!rc) rc = bind_entry(in, s, e, mapped, fc.nflat, n, outs);
    if (!rc) result = finish_outputs(in, s, e, outs, n);
    if (!rc)
        ax_flat_release_arrays(outs, e->ir->nout);
    else
        free(outs);
    for (int i = 0; mapped && i < fc.nflat; i++) ax_array_release(mapped[i]);
    free(mapped);
    free(axes);
    free(key);
    ax_flat_call_free(&fc);
    return result;
}

/* devices=[...]: this process's devices, in order. */
static int *read_devices(ax_interp *in, ax_value *v, int *n) {
    ax_value_iter it;
    if (ax_value_iter_begin(in, v, &it)) return NULL;
    int local = ax_local_device_count(in->cx), first = first_local(in, local), cap = 8;
    int *devs = malloc((size_t)cap * sizeof *devs);
    if (!devs || local < 0) {
        free(devs);
        return local < 0 ? NULL : ax_error_oom(in->cx);
    }
    *n = 0;
    ax_value *item;
    int rc;
    while ((rc = ax_value_iter_next(in, &it, &item)) == 1) {
        int id = device_id(in, item, "pmap: devices");
        ax_value_release(item);
        if (id >= 0 && (id < first || id >= first + local)) {
            ax_error(in->cx, AX_ERR_VALUE, "pmap: device %d belongs to another process", id);
            id = -1;
        }
        if (id >= 0 && *n == cap) {
            int *g = realloc(devs, (size_t)(cap *= 2) * sizeof *g);
            if (!g)
                id = -1, ax_error_oom(in->cx);
            else
                devs = g;
        }
        if (id < 0) {
            rc = -1;
            break;
        }
        devs[(*n)++] = id - first;
    }
    if (rc < 0 || *n == 0) {
        if (!rc) ax_error(in->cx, AX_ERR_VALUE, "pmap: devices is empty");
        free(devs);
        return NULL;
    }
    return devs;
}

static ax_value *b_pmap(ax_interp *in, ax_value *self, const ax_args *a) {
    (void)self;
    static const char *const names[] = {
        "fun",     "axis_name", "in_axes",   "out_axes",       "static_broadcasted_argnums",
        "devices", "backend",   "axis_size", "donate_argnums", NULL};
    ax_value *v[9] = {NULL};
    if (!ax_bi_parse(in, a, "pmap", names, 2, v)) return NULL;
    if (!v[0]) return ax_error(in->cx, AX_ERR_TYPE, "pmap() missing the function to map");
    if (!backend_ok(in, v[6], "pmap")) return NULL;
    if (v[1] && v[1]->kind != AX_V_NONE && v[1]->kind != AX_V_STR)
        return ax_error(in->cx, AX_ERR_TYPE, "pmap: axis_name must be a string (or None)");
    pmap_state *s = calloc(1, sizeof *s);
    if (!s) return ax_error_oom(in->cx);
    s->fn = ax_value_retain(v[0]);
    s->axis_size = -1;
    s->in_axes = v[2] ? ax_value_retain(v[2]) : ax_value_int(in, 0);
    s->out_axes = v[3] ? ax_value_retain(v[3]) : ax_value_int(in, 0);
    int ndev = 0, *devs = NULL, rc = s->in_axes && s->out_axes ? 0 : -1;
    bool as_tuple;
    if (!rc && v[4] && v[4]->kind != AX_V_NONE)
        rc = ax_read_argnums(in, "pmap", v[4], &s->statics, &s->nstatic, &as_tuple);
    if (!rc && v[5] && v[5]->kind != AX_V_NONE && !(devs = read_devices(in, v[5], &ndev))) rc = -1;
    if (!rc && v[7] && v[7]->kind != AX_V_NONE &&
        (!ax_bi_int(in, v[7], "pmap: axis_size", -1, &s->axis_size) || s->axis_size < 1))
        rc = ax_error_pending(in->cx)
                 ? -1
                 : (ax_error(in->cx, AX_ERR_VALUE, "pmap: axis_size must be at least 1"), -1);
    const char *name = v[1] && v[1]->kind == AX_V_STR ? v[1]->str : NULL;
    if (!rc) s->spec = ax_axis_spec_make(in->cx, name ? 1 : 0, &name, 0, NULL, ndev, devs);
    free(devs);
    if (rc || !s->spec) {
        pmap_state_free(s);
        return NULL;
    }
    ax_value *state = ax_value_object(&pmap_state_type, s);
    if (!state) return NULL;
    return ax_value_builtin("pmap", "a function mapped over devices", pmap_fn_call, state);
}

/* ---------------------------------------------------------------- registration */

const ax_builtin_def ax_builtins_parallel[] = {
    {"pmap", b_pmap,
     "pmap(f, axis_name=None, in_axes=0, out_axes=0, static_broadcasted_argnums=(), "
     "devices=None): f on each device, one slice of the mapped axis each, in parallel",
     0},
    {"psum", b_psum, "psum(x, axis_name): x summed over the devices (or examples) of axis_name", 0},
    {"pmean", b_pmean, "pmean(x, axis_name): the mean of x over axis_name", 0},
    {"pmax", b_pmax, "pmax(x, axis_name): the maximum of x over axis_name", 0},
    {"pmin", b_pmin, "pmin(x, axis_name): the minimum of x over axis_name", 0},
    {"all_gather", b_all_gather,
     "all_gather(x, axis_name, axis=0, tiled=False): every device's x, stacked along axis", 0},
    {"psum_scatter", b_psum_scatter,
     "psum_scatter(x, axis_name, scatter_dimension=0, tiled=False): the psum, each device "
     "keeping its chunk",
     0},
    {"ppermute", b_ppermute,
     "ppermute(x, axis_name, perm): x sent from device i to device j for each (i, j) in perm "
     "(zeros where nothing arrives)",
     0},
    {"all_to_all", b_all_to_all,
     "all_to_all(x, axis_name, split_axis, concat_axis, tiled=False): chunk j of x to device j", 0},
    {"axis_index", b_axis_index, "axis_index(axis_name): this device's position along axis_name",
     0},
    {NULL, NULL, NULL, 0},
};

ax_value *ax_lib_open_devices(ax_interp *in, const ax_lib *lib) {
    static const ax_builtin_def fns[] = {
        {"devices", b_devices, "devices(): every device of every process: [CpuDevice(id=0), ...]",
         0},
        {"local_devices", b_local_devices, "local_devices(): this process's devices", 0},
        {"device_count", b_device_count, "device_count(): the devices of every process", 0},
        {"local_device_count", b_local_device_count,
         "local_device_count(): this process's devices (--devices N, AX_DEVICES=N, or one per "
         "core)",
         0},
        {"process_index", b_process_index, "process_index(): this process's index under mpirun", 0},
        {"process_count", b_process_count, "process_count(): the processes under mpirun", 0},
        {"device_put", b_device_put, "device_put(x, device=None): x committed to device", 0},
        {"block_until_ready", b_block_until_ready,
         "block_until_ready(x): x, once computed (ax computes synchronously)", 0},
        {NULL, NULL, NULL, 0},
    };
    return ax_lib_module_of(in, lib, fns);
}

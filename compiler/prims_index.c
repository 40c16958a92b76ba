/* Indexing: gathers, scatters and dynamic slices, each one's row and every rule about it
 * (kernels: runtime/index.h, runtime/dynamic_slice.h). Their indices and start positions are
 * integers that carry no tangent; each is linear in its array operands (scatter in the set and
 * add modes). */
#include <string.h>

#include "../runtime/dynamic_slice.h"
#include "prim_rows.h"

/* A cotangent rule (ax_cotangent_rule). */
#define COTANGENT(name)                                                                            \
    static int name##_cotangent(ax_scope *s, const ax_params *p, AX_UNUSED int nin, ax_array **in, \
                                AX_UNUSED const bool *lin, const ax_aval *ty, ax_array *ct,        \
                                ax_array **r)

static void format_axes(ax_strbuf *s, const ax_params *p) {
    ax_strbuf_append(s, "[axes=");
    ax_ir_format_ints(s, p->naxes, p->axes);
}

/* ---------------------------------------------------------------- batching */

static void shift_axes(int *axes, int n) {
    for (int i = 0; i < n; i++) axes[i]++;
}

/* Index arrays (B, ..., k) -> (B, ..., k+1) with the example number in front: gathers and
 * scatters then address each example's own slice. */
static ax_array *with_example_index(ax_scope *s, ax_array *idx) {
    if (!idx) return NULL;
    int64_t shape[AX_MAX_RANK];
    memcpy(shape, idx->shape, (size_t)idx->ndim * sizeof *shape);
    shape[idx->ndim - 1] = 1;
    ax_params io = {.dtype = idx->dtype, .ndim = idx->ndim, .naxes = 1, .axes = {0}};
    memcpy(io.shape, shape, (size_t)idx->ndim * sizeof *shape);
    ax_array *ex = ax_lax_bind(s, AX_P_IOTA, 0, NULL, &io);
    ax_params cat = {.naxes = 1, .axes = {idx->ndim - 1}};
    return ax_lax_bind(s, AX_P_CONCATENATE, 2, (ax_array *[]){ex, idx}, &cat);
}

static void prepend_axis(ax_params *q) {
    memmove(q->axes + 1, q->axes, (size_t)q->naxes * sizeof *q->axes);
    shift_axes(q->axes + 1, q->naxes);
    q->axes[0] = 0;
    q->naxes++;
}

static ax_array *batched_gather(ax_scope *s, const ax_params *p, ax_array **in, const int *bdim,
                                int64_t size, int *where) {
    ax_params q = *p;
    if (bdim[1] < 0) {
        /* Only x batched: its batch dimension is the first of the dimensions kept. */
        ax_array *x = ax_batch_first(s, in[0], bdim[0], size);
        shift_axes(q.axes, q.naxes);
        *where = in[1]->ndim - 1;
        return ax_lax_bind(s, AX_P_GATHER, 2, (ax_array *[]){x, in[1]}, &q);
    }
    ax_array *idx = ax_batch_first(s, in[1], bdim[1], size);
    *where = 0;
    if (bdim[0] < 0) return ax_lax_bind(s, AX_P_GATHER, 2, (ax_array *[]){in[0], idx}, &q);
    ax_array *x = ax_batch_first(s, in[0], bdim[0], size);
    prepend_axis(&q);
    return ax_lax_bind(s, AX_P_GATHER, 2, (ax_array *[]){x, with_example_index(s, idx)}, &q);
}

static ax_array *batched_scatter(ax_scope *s, const ax_params *p, ax_array **in, const int *bdim,
                                 int64_t size) {
    ax_params q = *p;
    ax_array *x = ax_batch_first(s, in[0], bdim[0], size);
    ax_array *idx = ax_batch_first(s, in[1], bdim[1], size);
    ax_array *u = ax_batch_first(s, in[2], bdim[2], size);
    prepend_axis(&q);
    return ax_lax_bind(s, AX_P_SCATTER, 3, (ax_array *[]){x, with_example_index(s, idx), u}, &q);
}

/* Full index arrays (B, sizes..., 1 + n) addressing each example's slice at its own starts
 * (clamped into range as dynamic_slice does). */
static ax_array *slice_indices(ax_scope *s, ax_array **starts, const int *bdim, int n,
                               const int64_t *dims, const int64_t *sizes, int64_t size) {
    int64_t shape[AX_MAX_RANK + 1];
    shape[0] = size;
    memcpy(shape + 1, sizes, (size_t)n * sizeof *shape);
    shape[n + 1] = 1;
    ax_array *cols[AX_MAX_RANK + 1];
    ax_params io = {.dtype = AX_I32, .ndim = n + 2, .naxes = 1, .axes = {0}};
    memcpy(io.shape, shape, (size_t)(n + 2) * sizeof *shape);
    cols[0] = ax_lax_bind(s, AX_P_IOTA, 0, NULL, &io);
    for (int d = 0; d < n; d++) {
        ax_array *st = ax_lax_convert(s, ax_batch_first(s, starts[d], bdim[d], size), AX_I32);
        ax_array *lo = ax_lax_scalar_like(s, st, 0.0),
                 *hi = ax_lax_scalar_like(s, st, (double)(dims[d] - sizes[d]));
        st = ax_lax_bind(s, AX_P_CLAMP, 3, (ax_array *[]){lo, st, hi}, NULL);
        ax_array *b = ax_lax_broadcast_in_dim(s, st, n + 2, shape, (int[]){0});
        io.axes[0] = d + 1;
        cols[d + 1] = ax_lax_add(s, b, ax_lax_bind(s, AX_P_IOTA, 0, NULL, &io));
    }
    ax_params cat = {.naxes = 1, .axes = {n + 1}};
    return ax_lax_bind(s, AX_P_CONCATENATE, n + 1, cols, &cat);
}

static ax_array *batched_dynamic_slice(ax_scope *s, const ax_params *p, int nin, ax_array **in,
                                       const int *bdim, int64_t size) {
    ax_array *x = ax_batch_first(s, in[0], bdim[0], size);
    if (!x) return NULL;
    ax_array *idx = slice_indices(s, in + 1, bdim + 1, nin - 1, x->shape + 1, p->shape, size);
    ax_params g = {.naxes = nin};
    for (int i = 0; i < nin; i++) g.axes[i] = i;
    return ax_lax_bind(s, AX_P_GATHER, 2, (ax_array *[]){x, idx}, &g);
}

static ax_array *batched_dynamic_update(ax_scope *s, int nin, ax_array **in, const int *bdim,
                                        int64_t size) {
    ax_array *x = ax_batch_first(s, in[0], bdim[0], size);
    ax_array *u = ax_batch_first(s, in[1], bdim[1], size);
    if (!x || !u) return NULL;
    ax_array *idx = slice_indices(s, in + 2, bdim + 2, nin - 2, x->shape + 1, u->shape + 1, size);
    ax_params g = {.naxes = nin - 1, .flag = AX_SCATTER_SET};
    for (int i = 0; i < nin - 1; i++) g.axes[i] = i;
    return ax_lax_bind(s, AX_P_SCATTER, 3, (ax_array *[]){x, idx, u}, &g);
}

/* Finishes a batching rule with r, batched at `where`. */
static int batched(ax_scope *s, ax_array *r, int where, ax_array **out, int *out_bdim) {
    out[0] = r ? ax_scope_keep(s, r) : NULL;
    out_bdim[0] = where;
    ax_scope_end(s);
    return out[0] ? 0 : -1;
}

static bool any_batched(int from, int n, const int *bdim) {
    for (int i = from; i < n; i++)
        if (bdim[i] >= 0) return true;
    return false;
}

/* A batching rule (ax_batch_rule) in scope s. */
#define BATCH(name)                                                                                \
    static int name##_batch(ax_ctx *cx, ax_prim prim, const ax_params *p, int nin, ax_array **in,  \
                            const int *bdim, int64_t size, ax_array **out, int *out_bdim)

BATCH(gather) {
    (void)prim, (void)nin;
    ax_scope s;
    ax_scope_begin(&s, cx);
    int where = 0;
    ax_array *r = batched_gather(&s, p, in, bdim, size, &where);
    return batched(&s, r, where, out, out_bdim);
}

BATCH(scatter) {
    (void)prim, (void)nin;
    ax_scope s;
    ax_scope_begin(&s, cx);
    return batched(&s, batched_scatter(&s, p, in, bdim, size), 0, out, out_bdim);
}

BATCH(dynamic_slice) {
    ax_scope s;
    ax_scope_begin(&s, cx);
    ax_array *r;
    if (!any_batched(1, nin, bdim)) {
        /* Only x batched: slice the whole batch dimension. */
        ax_array *args[AX_MAX_RANK + 2];
        args[0] = ax_batch_first(&s, in[0], bdim[0], size);
        args[1] = ax_lax_scalar_like(&s, in[1], 0.0);
        for (int i = 1; i < nin; i++) args[i + 1] = in[i];
        ax_params q = *p;
        memmove(q.shape + 1, p->shape, (size_t)p->ndim * sizeof *q.shape);
        q.shape[0] = size, q.ndim = p->ndim + 1;
        r = ax_lax_bind(&s, prim, nin + 1, args, &q);
    } else {
        r = batched_dynamic_slice(&s, p, nin, in, bdim, size);
    }
    return batched(&s, r, 0, out, out_bdim);
}

BATCH(dynamic_update_slice) {
    ax_scope s;
    ax_scope_begin(&s, cx);
    ax_array *r;
    if (!any_batched(2, nin, bdim)) {
        ax_array *args[AX_MAX_RANK + 3];
        args[0] = ax_batch_first(&s, in[0], bdim[0], size);
        args[1] = ax_batch_first(&s, in[1], bdim[1], size);
        args[2] = ax_lax_scalar_like(&s, in[2], 0.0);
        for (int i = 2; i < nin; i++) args[i + 1] = in[i];
        r = ax_lax_bind(&s, prim, nin + 1, args, p);
    } else {
        r = batched_dynamic_update(&s, nin, in, bdim, size);
    }
    return batched(&s, r, 0, out, out_bdim);
}

/* ---------------------------------------------------------------- gather */

AX_EAGER(gather) {
    (void)nin;
    return ax_eager_one(ax_gather(cx, in[0], in[1], p->naxes, p->axes), out);
}

static void gather_format(ax_strbuf *s, const ax_params *p) {
    format_axes(s, p);
    ax_strbuf_append(s, "]");
}
/* The cotangent added back where the gather read from. */
COTANGENT(gather) {
    ax_params q = *p;
    q.flag = AX_SCATTER_ADD;
    r[0] = ax_lax_bind(s, AX_P_SCATTER, 3, (ax_array *[]){ax_zeros_of(s, &ty[0]), in[1], ct}, &q);
    return 0;
}
const ax_prim_info ax_gather_info = {
    .name = "gather",
    .nin = 2,
    .nout = 1,
    .flags = LIN,
    .shape = ax_shape_gather,
    .eager = eager_gather,
    .jvp = ax_jvp_linear,
    .linear_in = 1,
    .transpose = ax_transpose_linear,
    .cotangent = gather_cotangent,
    .batch = gather_batch,
    .format_params = gather_format,
    .lower = AX_LOWER_EAGER,
    AX_EXAMPLES({.nin = 2,
                 .in = {AX_FLOATS(-2, 2, 3, 2), AX_INTS(AX_I32, 0, 2, 4, 1)},
                 .p = {.naxes = 1, .axes = {0}}},
                {.nin = 2,
                 .in = {AX_FLOATS(-2, 2, 3, 2), AX_INTS(AX_I32, 0, 1, 2, 1)},
                 .p = {.naxes = 1, .axes = {1}}},
                {.nin = 2,
                 .in = {AX_FLOATS(-2, 2, 3, 2), AX_INTS(AX_I32, 0, 1, 3, 2)},
                 .p = {.naxes = 2, .axes = {0, 1}}}),
};

/* ---------------------------------------------------------------- scatter */

AX_EAGER(scatter) {
    (void)nin;
    return ax_eager_one(
        ax_scatter(cx, in[0], in[1], in[2], p->naxes, p->axes, (ax_scatter_mode)p->flag), out);
}

static const char *scatter_mode_name(int mode) {
    static const char *const names[] = {"set", "add", "mul", "min", "max"};
    return mode >= 0 && mode < 5 ? names[mode] : "?";
}
static void scatter_format(ax_strbuf *s, const ax_params *p) {
    format_axes(s, p);
    ax_strbuf_appendf(s, " mode=%s]", scatter_mode_name(p->flag));
}

/* scatter with mode mul/min/max (set and add are linear). */
static ax_array *scatter_tangent(ax_scope *s, const ax_params *p, ax_array **in, ax_array **tin,
                                 ax_array *out) {
    ax_array *x = in[0], *idx = in[1], *u = in[2];
    ax_params add = *p, gather = *p;
    add.flag = AX_SCATTER_ADD;
    ax_array *zeros = ax_lax_zeros_like(s, x);
    ax_array *out_at = ax_lax_bind(s, AX_P_GATHER, 2, (ax_array *[]){out, idx}, &gather);
    ax_array *tx = NULL, *tu = NULL;
    if (p->flag == AX_SCATTER_MUL) {
        /* out = x * prod(u): d/dx = prod(u); d/du_k = out / u_k */
        if (tin[0]) {
            ax_array *prod =
                ax_lax_bind(s, AX_P_SCATTER, 3, (ax_array *[]){ax_lax_ones_like(s, x), idx, u}, p);
            tx = ax_lax_mul(s, tin[0], prod);
        }
        if (tin[2]) {
            ax_array *contrib = ax_lax_mul(s, tin[2], ax_lax_div(s, out_at, u));
            tu = ax_lax_bind(s, AX_P_SCATTER, 3, (ax_array *[]){zeros, idx, contrib}, &add);
        }
    } else {
        /* min/max: the tangent of whichever value won (x on ties) */
        ax_array *from_x = ax_lax_binary(s, AX_P_EQ, out, x);
        if (tin[0]) tx = ax_lax_select(s, from_x, tin[0], zeros);
        if (tin[2]) {
            ax_array *x_at = ax_lax_bind(s, AX_P_GATHER, 2, (ax_array *[]){x, idx}, &gather);
            ax_array *won = ax_lax_binary(s, AX_P_AND, ax_lax_binary(s, AX_P_EQ, out_at, u),
                                          ax_lax_binary(s, AX_P_NE, x_at, u));
            ax_array *contrib = ax_lax_select(s, won, tin[2], ax_lax_zeros_like(s, u));
            tu = ax_lax_bind(s, AX_P_SCATTER, 3, (ax_array *[]){zeros, idx, contrib}, &add);
        }
    }
    return tx && tu ? ax_lax_add(s, tx, tu) : tx ? tx : tu;
}

/* Linear in x and the updates in the set and add modes (the tangent is a scatter of the
 * tangents); the other modes by the tangent rule above. */
static int scatter_jvp(ax_ctx *cx, ax_prim prim, const ax_params *p, int nin, ax_array **in,
                       ax_array **tin, ax_array **out, ax_array **tout) {
    if (p->flag == AX_SCATTER_SET || p->flag == AX_SCATTER_ADD)
        return ax_jvp_linear(cx, prim, p, nin, in, tin, out, tout);
    return ax_jvp_tangent(cx, prim, p, nin, in, tin, out, tout);
}
/* x's cotangent where nothing was scattered (all of it when adding), the updates' read back. */
COTANGENT(scatter) {
    ax_params g = *p;
    if (lin[0]) {
        if (p->flag == AX_SCATTER_ADD) {
            r[0] = ct;
        } else {
            ax_array *z = ax_zeros_of(s, &ty[2]);
            r[0] = ax_lax_bind(s, AX_P_SCATTER, 3, (ax_array *[]){ct, in[1], z}, p);
        }
    }
    if (lin[2]) r[2] = ax_lax_bind(s, AX_P_GATHER, 2, (ax_array *[]){ct, in[1]}, &g);
    return 0;
}
#define SCATTER_EXAMPLE(mode, lo, n)                                                               \
    {                                                                                              \
        .nin = 3, .in = {AX_FLOATS(lo, 2, 4), AX_INTS(AX_I32, 0, 3, n, 1), AX_FLOATS(lo, 2, n)},   \
        .p = {                                                                                     \
            .naxes = 1,                                                                            \
            .axes = {0},                                                                           \
            .flag = mode                                                                           \
        }                                                                                          \
    }
const ax_prim_info ax_scatter_info = {
    .name = "scatter",
    .nin = 3,
    .nout = 1,
    .flags = LIN,
    .shape = ax_shape_scatter,
    .eager = eager_scatter,
    .jvp = scatter_jvp,
    .tangent = scatter_tangent,
    .linear_in = 5, /* x and the updates, not the indices */
    .transpose = ax_transpose_linear,
    .cotangent = scatter_cotangent,
    .batch = scatter_batch,
    .format_params = scatter_format,
    .lower = AX_LOWER_EAGER,
    /* set: one index, so that none repeats (its transpose assumes unique indices, as JAX's) */
    AX_EXAMPLES(
        SCATTER_EXAMPLE(AX_SCATTER_SET, 0.5, 1), SCATTER_EXAMPLE(AX_SCATTER_ADD, 0.5, 4),
        SCATTER_EXAMPLE(AX_SCATTER_MUL, 0.5, 4), SCATTER_EXAMPLE(AX_SCATTER_MAX, -2, 3),
        SCATTER_EXAMPLE(AX_SCATTER_MIN, -2, 3),
        {.nin = 3,
         .in = {AX_FLOATS(-2, 2, 4, 2), AX_INTS(AX_I32, 0, 3, 1, 1), AX_FLOATS(-2, 2, 1, 2)},
         .p = {.naxes = 1, .axes = {0}, .flag = AX_SCATTER_SET}}),
};

/* ---------------------------------------------------------------- dynamic slices */

/* Reads the rank-0 start indices of dynamic_slice / dynamic_update_slice. */
static void read_starts(int n, ax_array **starts, int64_t *out) {
    for (int i = 0; i < n; i++) out[i] = ax_array_get_i64(starts[i], 0);
}

AX_EAGER(dynamic_slice) {
    int64_t starts[AX_MAX_RANK];
    read_starts(nin - 1, in + 1, starts);
    return ax_eager_one(ax_dynamic_slice(cx, in[0], starts, p->shape), out);
}

static void dynamic_slice_format(ax_strbuf *s, const ax_params *p) {
    ax_strbuf_append(s, "[slice_sizes=");
    ax_ir_format_i64s(s, p->ndim, p->shape);
    ax_strbuf_append(s, "]");
}
/* The cotangent put back in zeros at the same (clamped) start. */
COTANGENT(dynamic_slice) {
    (void)p;
    ax_array *args[AX_MAX_RANK + 2];
    args[0] = ax_zeros_of(s, &ty[0]);
    args[1] = ct;
    for (int i = 1; i < nin; i++) args[i + 1] = in[i];
    r[0] = ax_lax_bind(s, AX_P_DYNAMIC_UPDATE_SLICE, nin + 1, args, NULL);
    return 0;
}
const ax_prim_info ax_dynamic_slice_info = {
    .name = "dynamic_slice",
    .nin = -1,
    .nout = 1,
    .flags = LIN,
    .shape = ax_shape_dynamic_slice,
    .eager = eager_dynamic_slice,
    .jvp = ax_jvp_linear,
    .linear_in = 1,
    .transpose = ax_transpose_linear,
    .cotangent = dynamic_slice_cotangent,
    .batch = dynamic_slice_batch,
    .format_params = dynamic_slice_format,
    .lower = AX_LOWER_EAGER,
    /* starts out of range too: they are clamped */
    AX_EXAMPLES(
        {.nin = 2,
         .in = {AX_FLOATS(-2, 2, 5), AX_INT_SCALAR(AX_I32, -1, 4)},
         .p = {.ndim = 1, .shape = {2}}},
        {.nin = 3,
         .in = {AX_FLOATS(-2, 2, 3, 4), AX_INT_SCALAR(AX_I32, 0, 2), AX_INT_SCALAR(AX_I32, 0, 3)},
         .p = {.ndim = 2, .shape = {2, 2}}}),
};

AX_EAGER(dynamic_update_slice) {
    (void)p;
    int64_t starts[AX_MAX_RANK];
    read_starts(nin - 2, in + 2, starts);
    return ax_eager_one(ax_dynamic_update_slice(cx, in[0], in[1], starts), out);
}

/* x's cotangent outside the update, the update's where it went. */
COTANGENT(dynamic_update_slice) {
    (void)p;
    ax_array *args[AX_MAX_RANK + 2];
    if (lin[0]) {
        args[0] = ct;
        args[1] = ax_zeros_of(s, &ty[1]);
        for (int i = 2; i < nin; i++) args[i] = in[i];
        r[0] = ax_lax_bind(s, AX_P_DYNAMIC_UPDATE_SLICE, nin, args, NULL);
    }
    if (lin[1]) {
        ax_params ds = {.ndim = ty[1].ndim};
        memcpy(ds.shape, ty[1].shape, (size_t)ty[1].ndim * sizeof *ds.shape);
        args[0] = ct;
        for (int i = 2; i < nin; i++) args[i - 1] = in[i];
        r[1] = ax_lax_bind(s, AX_P_DYNAMIC_SLICE, nin - 1, args, &ds);
    }
    return 0;
}
const ax_prim_info ax_dynamic_update_slice_info = {
    .name = "dynamic_update_slice",
    .nin = -1,
    .nout = 1,
    .flags = LIN,
    .shape = ax_shape_dynamic_update_slice,
    .eager = eager_dynamic_update_slice,
    .jvp = ax_jvp_linear,
    .linear_in = 3, /* x and the update, not the starts */
    .transpose = ax_transpose_linear,
    .cotangent = dynamic_update_slice_cotangent,
    .batch = dynamic_update_slice_batch,
    .lower = AX_LOWER_EAGER,
    AX_EXAMPLES(
        {.nin = 3, .in = {AX_FLOATS(-2, 2, 5), AX_FLOATS(-2, 2, 2), AX_INT_SCALAR(AX_I32, -1, 4)}},
        {.nin = 4,
         .in = {AX_FLOATS(-2, 2, 3, 4), AX_FLOATS(-2, 2, 2, 2), AX_INT_SCALAR(AX_I32, 0, 2),
                AX_INT_SCALAR(AX_I32, 0, 3)}}),
};

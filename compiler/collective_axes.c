/* Collectives over several axis names, composed from collectives over one (see
 * collective_axes.h). */
#include "collective_axes.h"

#include <string.h>

#include "lax.h"
#include "vmap.h"

bool ax_collective_composed(ax_prim p, const ax_axis_spec *spec) {
    bool reduction = p == AX_P_PSUM || p == AX_P_PMAX || p == AX_P_PMIN;
    return spec && spec->nnames > 1 && !reduction;
}

/* Collective p over name k of spec alone (x NULL for axis_index), owned by the scope. */
static ax_array *over_name(ax_scope *s, ax_prim p, ax_array *x, const ax_axis_spec *spec, int k,
                           const ax_params *extra) {
    if (!x && p != AX_P_AXIS_INDEX) return NULL;
    const ax_axis_spec *one = ax_axis_spec_make(s->cx, 1, &spec->names[k], 0, NULL, 0, NULL);
    return one ? ax_scope_own(s, ax_collective(s->cx, p, x, one, extra)) : NULL;
}

/* This position along the names together, row-major (an int32 scalar). */
static ax_array *linear_index(ax_scope *s, const ax_axis_spec *spec) {
    ax_array *idx = over_name(s, AX_P_AXIS_INDEX, NULL, spec, 0, NULL);
    for (int k = 1; k < spec->nnames && idx; k++) {
        const ax_axis_frame *f = ax_axis_find(s->cx, spec->names[k]);
        ax_array *size = f ? ax_lax_scalar_like(s, idx, (double)f->size) : NULL;
        idx = ax_lax_add(s, ax_lax_mul(s, idx, size),
                         over_name(s, AX_P_AXIS_INDEX, NULL, spec, k, NULL));
    }
    return idx;
}

/* Every position's x along the names, at `axis` (a new dimension, or concatenated when
 * tiled): the last name gathered first, each outer name then concatenates those blocks. */
static ax_array *gather(ax_scope *s, ax_array *x, const ax_axis_spec *spec, int axis, bool tiled) {
    ax_params q = {.naxes = 1, .axes = {axis}, .flag = tiled};
    ax_array *r = over_name(s, AX_P_ALL_GATHER, x, spec, spec->nnames - 1, &q);
    q.flag = true;
    for (int k = spec->nnames - 2; k >= 0; k--) r = over_name(s, AX_P_ALL_GATHER, r, spec, k, &q);
    return r;
}

/* The sum, this position keeping its chunk of dimension d: the first name scatters first,
 * each inner name then splits that chunk. */
static ax_array *scatter(ax_scope *s, ax_array *x, const ax_axis_spec *spec, int d, bool tiled) {
    ax_params q = {.naxes = 1, .axes = {d}, .flag = true};
    ax_array *r = x;
    for (int k = 0; k < spec->nnames; k++) {
        if (k == spec->nnames - 1) q.flag = tiled;
        r = over_name(s, AX_P_PSUM_SCATTER, r, spec, k, &q);
    }
    return r;
}

/* Entries [lo, lo + n) of dimension d of x. */
static ax_array *slice_dim(ax_scope *s, ax_array *x, int d, int64_t lo, int64_t n) {
    if (!x) return NULL;
    ax_params q = {.ndim = x->ndim};
    for (int i = 0; i < x->ndim; i++) q.lo[i] = 0, q.hi[i] = x->shape[i], q.step[i] = 1;
    q.lo[d] = lo, q.hi[d] = lo + n;
    return ax_lax_bind(s, AX_P_SLICE, 1, &x, &q);
}

/* x without its dimension d (of size 1). */
static ax_array *drop_dim(ax_scope *s, ax_array *x, int d) {
    if (!x) return NULL;
    int64_t shape[AX_MAX_RANK];
    int nd = 0;
    for (int i = 0; i < x->ndim; i++)
        if (i != d) shape[nd++] = x->shape[i];
    return ax_lax_reshape(s, x, nd, shape);
}

/* Where idx == at, `value`; elsewhere `other` (both of one shape). */
static ax_array *where_index(ax_scope *s, ax_array *idx, int64_t at, ax_array *value,
                             ax_array *other) {
    if (!value || !other) return NULL;
    ax_array *hit = ax_lax_binary(s, AX_P_EQ, idx, ax_lax_scalar_like(s, idx, (double)at));
    return ax_lax_select(s, ax_lax_broadcast_to(s, hit, value->ndim, value->shape), value, other);
}

/* ppermute: what the position sending to this one sent (zeros when none does). */
static ax_array *permute(ax_scope *s, ax_array *x, const ax_axis_spec *spec) {
    ax_array *gathered = gather(s, x, spec, 0, false), *idx = linear_index(s, spec);
    ax_array *y = ax_lax_zeros_like(s, x);
    for (int k = 0; k < spec->npairs && y; k++) {
        ax_array *sent = drop_dim(s, slice_dim(s, gathered, 0, spec->data[2 * k], 1), 0);
        y = where_index(s, idx, spec->data[2 * k + 1], sent, y);
    }
    return y;
}

/* all_to_all: chunk `idx` of dimension sa of every position's x, in position order along ca
 * (a new dimension there, or concatenated when tiled). */
static ax_array *exchange(ax_scope *s, ax_array *x, const ax_axis_spec *spec, int sa, int ca,
                          bool tiled) {
    ax_array *gathered = gather(s, x, spec, 0, false), *idx = linear_index(s, spec);
    if (!gathered || !idx) return NULL;
    int64_t n = gathered->shape[0], chunk = tiled ? x->shape[sa] / n : 1;
    ax_array *mine = NULL; /* (positions, x's shape with chunk idx of dimension sa) */
    for (int64_t d = 0; d < n; d++) {
        ax_array *part = slice_dim(s, gathered, sa + 1, d * chunk, chunk);
        if (!tiled) part = drop_dim(s, part, sa + 1);
        mine = mine ? where_index(s, idx, d, part, mine) : part;
    }
    if (!mine) return NULL;
    ax_array *y = ax_scope_own(s, ax_moveaxis(s->cx, mine, 0, ca));
    if (!tiled || !y) return y;
    int64_t shape[AX_MAX_RANK]; /* the positions' chunks end to end along ca */
    int nd = 0;
    for (int i = 0; i < y->ndim; i++)
        if (i != ca + 1) shape[nd++] = i == ca ? y->shape[ca] * y->shape[ca + 1] : y->shape[i];
    return ax_lax_reshape(s, y, nd, shape);
}

ax_array *ax_collective_axes(ax_ctx *cx, ax_prim p, ax_array *x, const ax_axis_spec *spec,
                             const ax_params *extra) {
    ax_params q = extra ? *extra : (ax_params){0};
    q.axis = spec;
    if ((q.length = ax_axis_size(cx, spec)) < 0) return NULL;
    ax_aval in, out[1];
    if (x) ax_aval_of(&in, x);
    if (ax_prim_get(p)->shape(cx, x ? 1 : 0, &in, &q, out)) return NULL; /* p's own errors */
    ax_scope s;
    ax_scope_begin(&s, cx);
    ax_array *y = p == AX_P_AXIS_INDEX     ? linear_index(&s, spec)
                  : p == AX_P_ALL_GATHER   ? gather(&s, x, spec, q.axes[0], q.flag)
                  : p == AX_P_PSUM_SCATTER ? scatter(&s, x, spec, q.axes[0], q.flag)
                  : p == AX_P_PPERMUTE     ? permute(&s, x, spec)
                                           : exchange(&s, x, spec, q.axes[0], q.axes[1], q.flag);
    y = y ? ax_scope_keep(&s, y) : NULL;
    ax_scope_end(&s);
    return y;
}

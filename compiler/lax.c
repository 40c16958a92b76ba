/* Primitive-level operations with scoped ownership (see lax.h). */
#include "lax.h"

#include <stdlib.h>
#include <string.h>

void ax_scope_begin(ax_scope *s, ax_ctx *cx) {
    s->cx = cx;
    s->n = 0;
    s->cap = (int)(sizeof s->inline_items / sizeof *s->inline_items);
    s->items = s->inline_items;
}

void ax_scope_end(ax_scope *s) {
    for (int i = 0; i < s->n; i++) ax_array_release(s->items[i]);
    if (s->items != s->inline_items) free(s->items);
    s->n = 0;
    s->items = s->inline_items;
}

ax_array *ax_scope_own(ax_scope *s, ax_array *a) {
    if (!a) return NULL;
    if (s->n == s->cap) {
        int cap = s->cap * 2;
        ax_array **items = malloc((size_t)cap * sizeof *items);
        if (!items) {
            ax_array_release(a);
            return ax_error_oom(s->cx);
        }
        memcpy(items, s->items, (size_t)s->n * sizeof *items);
        if (s->items != s->inline_items) free(s->items);
        s->items = items;
        s->cap = cap;
    }
    s->items[s->n++] = a;
    return a;
}

ax_array *ax_scope_keep(ax_scope *s, ax_array *a) {
    (void)s;
    return ax_array_retain(a);
}

ax_array *ax_lax_bind(ax_scope *s, ax_prim p, int nin, ax_array **in, const ax_params *params) {
    for (int i = 0; i < nin; i++)
        if (!in[i]) return NULL;
    ax_params none = {0};
    return ax_scope_own(s, ax_bind1(s->cx, p, nin, in, params ? params : &none));
}

ax_array *ax_lax_unary(ax_scope *s, ax_prim p, ax_array *x) {
    return ax_lax_bind(s, p, 1, &x, NULL);
}

ax_array *ax_lax_binary(ax_scope *s, ax_prim p, ax_array *a, ax_array *b) {
    return ax_lax_bind(s, p, 2, (ax_array *[]){a, b}, NULL);
}

ax_array *ax_lax_neg(ax_scope *s, ax_array *x) {
    return ax_lax_unary(s, AX_P_NEG, x);
}
ax_array *ax_lax_add(ax_scope *s, ax_array *a, ax_array *b) {
    return ax_lax_binary(s, AX_P_ADD, a, b);
}
ax_array *ax_lax_sub(ax_scope *s, ax_array *a, ax_array *b) {
    return ax_lax_binary(s, AX_P_SUB, a, b);
}
ax_array *ax_lax_mul(ax_scope *s, ax_array *a, ax_array *b) {
    return ax_lax_binary(s, AX_P_MUL, a, b);
}
ax_array *ax_lax_div(ax_scope *s, ax_array *a, ax_array *b) {
    return ax_lax_binary(s, AX_P_DIV, a, b);
}

ax_array *ax_lax_integer_pow(ax_scope *s, ax_array *x, int64_t k) {
    ax_params p = {.k = k};
    return ax_lax_bind(s, AX_P_INTEGER_POW, 1, &x, &p);
}

ax_array *ax_lax_select(ax_scope *s, ax_array *pred, ax_array *on_true, ax_array *on_false) {
    return ax_lax_bind(s, AX_P_SELECT, 3, (ax_array *[]){pred, on_true, on_false}, NULL);
}

ax_array *ax_lax_convert(ax_scope *s, ax_array *x, ax_dtype to) {
    if (!x) return NULL;
    if (x->dtype == to && !x->weak) return x;
    ax_params p = {.dtype = to};
    return ax_lax_bind(s, AX_P_CONVERT, 1, &x, &p);
}

ax_array *ax_lax_scalar_like(ax_scope *s, const ax_array *x, double v) {
    if (!x) return NULL;
    return ax_scope_own(s, ax_array_scalar(s->cx, x->dtype, v));
}

ax_array *ax_lax_full_aval(ax_scope *s, const ax_aval *t, double v) {
    ax_array *c = ax_scope_own(s, ax_array_scalar(s->cx, t->dtype, v));
    if (!c || t->ndim == 0) return c;
    int64_t strides[AX_MAX_RANK] = {0};
    return ax_scope_own(s, ax_array_view(s->cx, c, t->ndim, t->shape, strides, c->offset));
}

ax_array *ax_lax_zeros_like(ax_scope *s, const ax_array *x) {
    if (!x) return NULL;
    ax_aval t;
    ax_aval_of(&t, x);
    return ax_lax_full_aval(s, &t, 0.0);
}

ax_array *ax_lax_ones_like(ax_scope *s, const ax_array *x) {
    if (!x) return NULL;
    ax_aval t;
    ax_aval_of(&t, x);
    return ax_lax_full_aval(s, &t, 1.0);
}

ax_array *ax_lax_reduce(ax_scope *s, ax_prim p, ax_array *x, int naxes, const int *axes) {
    ax_params prm = {.naxes = naxes};
    if (naxes) memcpy(prm.axes, axes, (size_t)naxes * sizeof *axes);
    return ax_lax_bind(s, p, 1, &x, &prm);
}

ax_array *ax_lax_reduce_sum_all(ax_scope *s, ax_array *x) {
    if (!x) return NULL;
    int axes[AX_MAX_RANK];
    for (int i = 0; i < x->ndim; i++) axes[i] = i;
    return ax_lax_reduce(s, AX_P_REDUCE_SUM, x, x->ndim, axes);
}

ax_array *ax_lax_reshape(ax_scope *s, ax_array *x, int ndim, const int64_t *shape) {
    if (!x) return NULL;
    if (ax_shape_equal(x->ndim, x->shape, ndim, shape)) return x;
    ax_params p = {.ndim = ndim};
    memcpy(p.shape, shape, (size_t)ndim * sizeof *shape);
    return ax_lax_bind(s, AX_P_RESHAPE, 1, &x, &p);
}

ax_array *ax_lax_transpose(ax_scope *s, ax_array *x, const int *perm) {
    if (!x) return NULL;
    ax_params p = {.naxes = x->ndim};
    bool identity = true;
    for (int i = 0; i < x->ndim; i++) {
        p.axes[i] = perm[i];
        identity &= perm[i] == i;
    }
    if (identity) return x;
    return ax_lax_bind(s, AX_P_TRANSPOSE, 1, &x, &p);
}

ax_array *ax_lax_broadcast_in_dim(ax_scope *s, ax_array *x, int ndim, const int64_t *shape,
                                  const int *bdims) {
    if (!x) return NULL;
    ax_params p = {.ndim = ndim, .naxes = x->ndim};
    memcpy(p.shape, shape, (size_t)ndim * sizeof *shape);
    if (x->ndim) memcpy(p.axes, bdims, (size_t)x->ndim * sizeof *bdims);
    return ax_lax_bind(s, AX_P_BROADCAST_IN_DIM, 1, &x, &p);
}

ax_array *ax_lax_broadcast_to(ax_scope *s, ax_array *x, int ndim, const int64_t *shape) {
    if (!x) return NULL;
    if (ax_shape_equal(x->ndim, x->shape, ndim, shape)) return x;
    int bdims[AX_MAX_RANK];
    for (int i = 0; i < x->ndim; i++) bdims[i] = ndim - x->ndim + i;
    return ax_lax_broadcast_in_dim(s, x, ndim, shape, bdims);
}

ax_array *ax_lax_unbroadcast(ax_scope *s, ax_array *x, int ndim, const int64_t *shape) {
    if (!x) return NULL;
    if (ax_shape_equal(x->ndim, x->shape, ndim, shape)) return x;
    /* Sum the leading extra dimensions and the dimensions broadcast from size 1. */
    int axes[AX_MAX_RANK], n = 0, lead = x->ndim - ndim;
    for (int i = 0; i < x->ndim; i++)
        if (i < lead || (shape[i - lead] == 1 && x->shape[i] != 1)) axes[n++] = i;
    ax_array *r = n ? ax_lax_reduce(s, AX_P_REDUCE_SUM, x, n, axes) : x;
    return ax_lax_reshape(s, r, ndim, shape);
}

ax_array *ax_lax_dot_general(ax_scope *s, ax_array *a, ax_array *b, const ax_dot_dims *d) {
    ax_params p = {.dot = *d};
    return ax_lax_bind(s, AX_P_DOT_GENERAL, 2, (ax_array *[]){a, b}, &p);
}

ax_array *ax_lax_matrix_transpose(ax_scope *s, ax_array *x) {
    if (!x) return NULL;
    int perm[AX_MAX_RANK];
    for (int d = 0; d < x->ndim; d++) perm[d] = d;
    perm[x->ndim - 2] = x->ndim - 1;
    perm[x->ndim - 1] = x->ndim - 2;
    return ax_lax_transpose(s, x, perm);
}

ax_array *ax_lax_matmul(ax_scope *s, ax_array *a, bool ta, ax_array *b, bool tb) {
    if (!a || !b) return NULL;
    int nd = a->ndim;
    ax_dot_dims d = {.ncontract = 1,
                     .lhs_contract = {ta ? nd - 2 : nd - 1},
                     .rhs_contract = {tb ? nd - 1 : nd - 2},
                     .nbatch = nd - 2};
    for (int i = 0; i < nd - 2; i++) d.lhs_batch[i] = d.rhs_batch[i] = i;
    return ax_lax_dot_general(s, a, b, &d);
}

ax_array *ax_lax_triangular_solve(ax_scope *s, ax_array *a, ax_array *b, int flags) {
    ax_params p = {.flag = flags};
    return ax_lax_bind(s, AX_P_TRIANGULAR_SOLVE, 2, (ax_array *[]){a, b}, &p);
}

/* Transpose rules of the linear primitives: from the cotangent of the output, the cotangents
 * of the linear inputs. Reverse mode (compiler/ad.c) applies them equation by equation. */
#include <stdlib.h>
#include <string.h>

#include "ad_rules.h"

static ax_array *zeros_aval(ax_scope *s, const ax_aval *t) {
    return ax_lax_full_aval(s, t, 0.0);
}

static ax_array *to_type(ax_scope *s, ax_array *ct, const ax_aval *t) {
    return ax_lax_unbroadcast(s, ct, t->ndim, t->shape);
}

/* dot_general's transpose for one operand: contract the cotangent with the other operand over
 * the other operand's free dimensions, then put the result's dimensions in the operand's
 * order. `lhs_side` says which operand is wanted. */
static ax_array *dot_transpose(ax_scope *s, const ax_dot_dims *d, bool lhs_side, ax_array *ct,
                               ax_array *other, const ax_aval *want) {
    const int *mine_c = lhs_side ? d->lhs_contract : d->rhs_contract;
    const int *mine_b = lhs_side ? d->lhs_batch : d->rhs_batch;
    const int *oth_c = lhs_side ? d->rhs_contract : d->lhs_contract;
    const int *oth_b = lhs_side ? d->rhs_batch : d->lhs_batch;
    int nb = d->nbatch, nc = d->ncontract;
    int mine_free[AX_MAX_RANK], oth_free[AX_MAX_RANK], nmf = 0, nof = 0;
    bool used[AX_MAX_RANK] = {0};
    for (int i = 0; i < nc; i++) used[mine_c[i]] = true;
    for (int i = 0; i < nb; i++) used[mine_b[i]] = true;
    for (int i = 0; i < want->ndim; i++)
        if (!used[i]) mine_free[nmf++] = i;
    memset(used, 0, sizeof used);
    for (int i = 0; i < nc; i++) used[oth_c[i]] = true;
    for (int i = 0; i < nb; i++) used[oth_b[i]] = true;
    for (int i = 0; i < other->ndim; i++)
        if (!used[i]) oth_free[nof++] = i;
    /* ct dims: batch, lhs free, rhs free. */
    int ct_mine_free0 = lhs_side ? nb : nb + nof, ct_oth_free0 = lhs_side ? nb + nmf : nb;
    ax_dot_dims nd = {.ncontract = nof, .nbatch = nb};
    for (int j = 0; j < nof; j++)
        nd.lhs_contract[j] = ct_oth_free0 + j, nd.rhs_contract[j] = oth_free[j];
    for (int i = 0; i < nb; i++) nd.lhs_batch[i] = i, nd.rhs_batch[i] = oth_b[i];
    ax_array *r = ax_lax_dot_general(s, ct, other, &nd);
    (void)ct_mine_free0;
    /* r dims: batch, my free dims, then the other's contracting dims in increasing order. */
    int perm[AX_MAX_RANK], k = nb + nmf;
    for (int i = 0; i < nb; i++) perm[mine_b[i]] = i;
    for (int j = 0; j < nmf; j++) perm[mine_free[j]] = nb + j;
    for (int od = 0; od < other->ndim; od++)
        for (int m = 0; m < nc; m++)
            if (oth_c[m] == od) perm[mine_c[m]] = k++;
    /* perm maps my dim -> r dim; transpose wants, for each output dim, the r dim. */
    return ax_lax_transpose(s, r, perm);
}

static ax_array *broadcast_transpose(ax_scope *s, const ax_params *p, ax_array *ct,
                                     const ax_aval *in) {
    bool keep[AX_MAX_RANK] = {0};
    for (int i = 0; i < in->ndim; i++)
        keep[p->axes[i]] = !(in->shape[i] == 1 && p->shape[p->axes[i]] != 1);
    int axes[AX_MAX_RANK], n = 0;
    for (int d = 0; d < p->ndim; d++)
        if (!keep[d]) axes[n++] = d;
    ax_array *r = n ? ax_lax_reduce(s, AX_P_REDUCE_SUM, ct, n, axes) : ct;
    return ax_lax_reshape(s, r, in->ndim, in->shape);
}

static ax_array *reduce_sum_transpose(ax_scope *s, const ax_params *p, ax_array *ct,
                                      const ax_aval *in) {
    bool reduced[AX_MAX_RANK] = {0};
    int kept[AX_MAX_RANK], k = 0;
    for (int i = 0; i < p->naxes; i++) reduced[p->axes[i]] = true;
    for (int i = 0; i < in->ndim; i++)
        if (!reduced[i]) kept[k++] = i;
    return ax_lax_broadcast_in_dim(s, ct, in->ndim, in->shape, kept);
}

static ax_array *slice_transpose(ax_scope *s, const ax_params *p, ax_array *ct, const ax_aval *in) {
    ax_params pad = {.ndim = in->ndim};
    for (int d = 0; d < in->ndim; d++) {
        int64_t n = ct->shape[d];
        pad.lo[d] = p->lo[d];
        pad.step[d] = n > 0 ? p->step[d] - 1 : 0;
        pad.hi[d] = in->shape[d] - p->lo[d] - (n > 0 ? (n - 1) * p->step[d] + 1 : 0);
    }
    ax_array *zero = ax_lax_scalar_like(s, ct, 0.0);
    return ax_lax_bind(s, AX_P_PAD, 2, (ax_array *[]){ct, zero}, &pad);
}

/* pad's transpose for the operand: undo negative padding with zeros, then slice. */
static ax_array *pad_transpose(ax_scope *s, const ax_params *p, ax_array *ct, const ax_aval *in) {
    int n = in->ndim;
    ax_params unpad = {.ndim = n}, sl = {.ndim = n};
    for (int d = 0; d < n; d++) {
        unpad.lo[d] = p->lo[d] < 0 ? -p->lo[d] : 0;
        unpad.hi[d] = p->hi[d] < 0 ? -p->hi[d] : 0;
    }
    ax_array *zero = ax_lax_scalar_like(s, ct, 0.0);
    ax_array *u = ax_lax_bind(s, AX_P_PAD, 2, (ax_array *[]){ct, zero}, &unpad);
    if (!u) return NULL;
    for (int d = 0; d < n; d++) {
        sl.lo[d] = p->lo[d] > 0 ? p->lo[d] : 0;
        sl.hi[d] = u->shape[d] - (p->hi[d] > 0 ? p->hi[d] : 0);
        sl.step[d] = p->step[d] + 1;
    }
    return ax_lax_bind(s, AX_P_SLICE, 1, &u, &sl);
}

static void concat_transpose(ax_scope *s, const ax_params *p, int nin, const bool *lin,
                             const ax_aval *in_types, ax_array *ct, ax_array **out) {
    int axis = p->axes[0];
    int64_t at = 0;
    for (int i = 0; i < nin; i++) {
        const ax_aval *t = &in_types[i];
        if (lin[i]) {
            ax_params sl = {.ndim = t->ndim};
            for (int d = 0; d < t->ndim; d++) sl.lo[d] = 0, sl.hi[d] = ct->shape[d], sl.step[d] = 1;
            sl.lo[axis] = at, sl.hi[axis] = at + t->shape[axis];
            out[i] = ax_lax_bind(s, AX_P_SLICE, 1, &ct, &sl);
        }
        at += t->shape[axis];
    }
}

static int transpose_into(ax_scope *s, ax_prim prim, const ax_params *p, int nin, ax_array **in,
                          const bool *lin, const ax_aval *ty, ax_array *ct, ax_array **r) {
    switch (prim) {
    case AX_P_NEG:
        r[0] = ax_lax_neg(s, ct);
        break;
    case AX_P_ADD:
        for (int i = 0; i < 2; i++) r[i] = lin[i] ? to_type(s, ct, &ty[i]) : NULL;
        break;
    case AX_P_SUB:
        r[0] = lin[0] ? to_type(s, ct, &ty[0]) : NULL;
        r[1] = lin[1] ? to_type(s, ax_lax_neg(s, ct), &ty[1]) : NULL;
        break;
    case AX_P_MUL:
        for (int i = 0; i < 2; i++)
            if (lin[i]) r[i] = to_type(s, ax_lax_mul(s, ct, in[1 - i]), &ty[i]);
        break;
    case AX_P_DIV:
        r[0] = to_type(s, ax_lax_div(s, ct, in[1]), &ty[0]);
        break;
    case AX_P_CONVERT:
        r[0] = ax_lax_convert(s, ct, ty[0].dtype);
        break;
    case AX_P_REDUCE_SUM:
        r[0] = reduce_sum_transpose(s, p, ct, &ty[0]);
        break;
    case AX_P_CUMSUM: {
        ax_params q = *p;
        q.flag = !p->flag;
        r[0] = ax_lax_bind(s, AX_P_CUMSUM, 1, &ct, &q);
        break;
    }
    case AX_P_RESHAPE:
    case AX_P_SQUEEZE:
    case AX_P_EXPAND_DIMS:
        r[0] = ax_lax_reshape(s, ct, ty[0].ndim, ty[0].shape);
        break;
    case AX_P_TRANSPOSE: {
        int inv[AX_MAX_RANK];
        for (int i = 0; i < p->naxes; i++) inv[p->axes[i]] = i;
        r[0] = ax_lax_transpose(s, ct, inv);
        break;
    }
    case AX_P_REV:
        r[0] = ax_lax_bind(s, AX_P_REV, 1, &ct, p);
        break;
    case AX_P_BROADCAST_IN_DIM:
        r[0] = broadcast_transpose(s, p, ct, &ty[0]);
        break;
    case AX_P_SLICE:
        r[0] = slice_transpose(s, p, ct, &ty[0]);
        break;
    case AX_P_PAD:
        if (lin[0]) r[0] = pad_transpose(s, p, ct, &ty[0]);
        if (lin[1]) {
            ax_array *total = ax_lax_reduce_sum_all(s, ct);
            ax_array *inner = lin[0] ? ax_lax_reduce_sum_all(s, r[0])
                                     : ax_lax_reduce_sum_all(s, pad_transpose(s, p, ct, &ty[0]));
            r[1] = ax_lax_sub(s, total, inner);
        }
        break;
    case AX_P_CONCATENATE:
        concat_transpose(s, p, nin, lin, ty, ct, r);
        break;
    case AX_P_SELECT: {
        ax_array *zero = ax_lax_zeros_like(s, ct);
        if (lin[1]) r[1] = to_type(s, ax_lax_select(s, in[0], ct, zero), &ty[1]);
        if (lin[2]) r[2] = to_type(s, ax_lax_select(s, in[0], zero, ct), &ty[2]);
        break;
    }
    case AX_P_GATHER: {
        ax_params q = *p;
        q.flag = AX_SCATTER_ADD;
        r[0] =
            ax_lax_bind(s, AX_P_SCATTER, 3, (ax_array *[]){zeros_aval(s, &ty[0]), in[1], ct}, &q);
        break;
    }
    case AX_P_SCATTER: {
        ax_params g = *p;
        if (lin[0]) {
            if (p->flag == AX_SCATTER_ADD) {
                r[0] = ct;
            } else {
                ax_array *z = zeros_aval(s, &ty[2]);
                r[0] = ax_lax_bind(s, AX_P_SCATTER, 3, (ax_array *[]){ct, in[1], z}, p);
            }
        }
        if (lin[2]) r[2] = ax_lax_bind(s, AX_P_GATHER, 2, (ax_array *[]){ct, in[1]}, &g);
        break;
    }
    case AX_P_DYNAMIC_SLICE: {
        ax_array *args[AX_MAX_RANK + 2];
        args[0] = zeros_aval(s, &ty[0]);
        args[1] = ct;
        for (int i = 1; i < nin; i++) args[i + 1] = in[i];
        r[0] = ax_lax_bind(s, AX_P_DYNAMIC_UPDATE_SLICE, nin + 1, args, NULL);
        break;
    }
    case AX_P_DYNAMIC_UPDATE_SLICE: {
        ax_array *args[AX_MAX_RANK + 2];
        if (lin[0]) {
            args[0] = ct;
            args[1] = zeros_aval(s, &ty[1]);
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
        break;
    }
    case AX_P_CUSTOM_LINEAR: {
        int nres = p->nconsts;
        if (p->cb->transpose(s->cx, p->cb->data, (int)p->k, ct, nres, in, nin - nres, r + nres))
            return -1;
        for (int i = nres; i < nin; i++) ax_scope_own(s, r[i]);
        break;
    }
    case AX_P_DOT_GENERAL:
        if (lin[0]) r[0] = dot_transpose(s, &p->dot, true, ct, in[1], &ty[0]);
        if (lin[1]) r[1] = dot_transpose(s, &p->dot, false, ct, in[0], &ty[1]);
        break;
    case AX_P_TRIANGULAR_SOLVE: {
        /* x = S b with S = op(a)^-1: ct_b = S^T ct, a solve with op(a)^T on the same side
         * (on the right, x = b S and ct_b = ct S^T) */
        if (lin[0]) {
            ax_error(s->cx, AX_ERR_RUNTIME, "triangular_solve is not linear in its matrix");
            return -1;
        }
        ax_params q = {.flag = p->flag ^ AX_TRSOLVE_TRANSPOSE_A};
        if (lin[1]) r[1] = ax_lax_bind(s, AX_P_TRIANGULAR_SOLVE, 2, (ax_array *[]){in[0], ct}, &q);
        break;
    }
    default:
        ax_error(s->cx, AX_ERR_RUNTIME, "%s has no transpose rule (it is not linear)",
                 ax_prim_get(prim)->name);
        return -1;
    }
    return ax_error_pending(s->cx) ? -1 : 0;
}

int ax_transpose_linear(ax_ctx *cx, ax_prim prim, const ax_params *p, int nin, ax_array **in,
                        const bool *lin, const ax_aval *in_types, ax_array *const *cts,
                        ax_array **ct_in) {
    ax_scope s;
    ax_scope_begin(&s, cx);
    ax_array *small[8] = {0}, **r = nin <= 8 ? small : calloc((size_t)nin, sizeof *r);
    int rc = r ? transpose_into(&s, prim, p, nin, in, lin, in_types, cts[0], r) : -1;
    for (int i = 0; i < nin; i++)
        ct_in[i] = rc == 0 && lin[i] && r[i] ? ax_scope_keep(&s, r[i]) : NULL;
    if (!r) ax_error_oom(cx);
    if (r != small) free(r);
    ax_scope_end(&s);
    return rc;
}

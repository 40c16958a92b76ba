/* Transpose rules of the linear primitives: from the cotangent of the output, the cotangents
 * of the linear inputs. Reverse mode (compiler/ad.c) applies them equation by equation. */
#include <stdlib.h>
#include <string.h>

#include "ad_rules.h"

ax_array *ax_zeros_of(ax_scope *s, const ax_aval *t) {
    return ax_lax_full_aval(s, t, 0.0);
}

ax_array *ax_cotangent_to(ax_scope *s, ax_array *ct, const ax_aval *t) {
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

static int transpose_into(ax_scope *s, ax_prim prim, const ax_params *p, int nin, ax_array **in,
                          const bool *lin, const ax_aval *ty, ax_array *ct, ax_array **r) {
    switch (prim) {
    case AX_P_GATHER: {
        ax_params q = *p;
        q.flag = AX_SCATTER_ADD;
        r[0] =
            ax_lax_bind(s, AX_P_SCATTER, 3, (ax_array *[]){ax_zeros_of(s, &ty[0]), in[1], ct}, &q);
        break;
    }
    case AX_P_SCATTER: {
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
        break;
    }
    case AX_P_DYNAMIC_SLICE: {
        ax_array *args[AX_MAX_RANK + 2];
        args[0] = ax_zeros_of(s, &ty[0]);
        args[1] = ct;
        for (int i = 1; i < nin; i++) args[i + 1] = in[i];
        r[0] = ax_lax_bind(s, AX_P_DYNAMIC_UPDATE_SLICE, nin + 1, args, NULL);
        break;
    }
    case AX_P_DYNAMIC_UPDATE_SLICE: {
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
    ax_cotangent_rule rule = ax_prim_get(prim)->cotangent;
    int rc = !r     ? -1
             : rule ? rule(&s, p, nin, in, lin, in_types, cts[0], r)
                    : transpose_into(&s, prim, p, nin, in, lin, in_types, cts[0], r);
    if (rc == 0 && ax_error_pending(cx)) rc = -1;
    for (int i = 0; i < nin; i++)
        ct_in[i] = rc == 0 && lin[i] && r[i] ? ax_scope_keep(&s, r[i]) : NULL;
    if (!r) ax_error_oom(cx);
    if (r != small) free(r);
    ax_scope_end(&s);
    return rc;
}

/* The shared transpose rule of the linear primitives: from the cotangent of the output, the
 * cotangents of the linear inputs by the row's cotangent rule, in a scope. Reverse mode
 * (compiler/ad.c) applies them equation by equation. */
#include <stdlib.h>
#include <string.h>

#include "ad_rules.h"

ax_array *ax_zeros_of(ax_scope *s, const ax_aval *t) {
    return ax_lax_full_aval(s, t, 0.0);
}

ax_array *ax_cotangent_to(ax_scope *s, ax_array *ct, const ax_aval *t) {
    return ax_lax_unbroadcast(s, ct, t->ndim, t->shape);
}

int ax_transpose_linear(ax_ctx *cx, ax_prim prim, const ax_params *p, int nin, ax_array **in,
                        const bool *lin, const ax_aval *in_types, ax_array *const *cts,
                        ax_array **ct_in) {
    ax_scope s;
    ax_scope_begin(&s, cx);
    ax_array *small[8] = {0}, **r = nin <= 8 ? small : calloc((size_t)nin, sizeof *r);
    int rc = r ? ax_prim_get(prim)->cotangent(&s, p, nin, in, lin, in_types, cts[0], r) : -1;
    if (rc == 0 && ax_error_pending(cx)) rc = -1;
    for (int i = 0; i < nin; i++)
        ct_in[i] = rc == 0 && lin[i] && r[i] ? ax_scope_keep(&s, r[i]) : NULL;
    if (!r) ax_error_oom(cx);
    if (r != small) free(r);
    ax_scope_end(&s);
    return rc;
}

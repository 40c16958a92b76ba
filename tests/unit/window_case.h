/* Convolution and windowed-reduction cases for the tests that walk the primitive table
 * (test_ad_rules.c, test_batch_rules.c): their parameters, too long for those tests' spec
 * initializers, as a short description. Include after the compiler headers. */
#ifndef AX_WINDOW_CASE_H
#define AX_WINDOW_CASE_H

#include <string.h>

#include "../../compiler/conv_rules.h"

typedef struct window_case {
    ax_prim prim;
    int nin, ndim;
    int64_t shape[2][5];
    int spec[3][5]; /* conv: lhs, rhs and out specs */
    /* per windowed dim (conv: spatial); base / window dilation 0 means 1 */
    int64_t stride[5], lo[5], hi[5], base[5], wdil[5], window[5];
    int64_t fgc, bgc;
    int flag;
} window_case;

static inline ax_params window_case_params(const window_case *w) {
    ax_params p;
    int n = w->ndim, ns = w->prim == AX_P_CONV_GENERAL_DILATED ? n - 2 : n;
    if (w->prim == AX_P_CONV_GENERAL_DILATED) {
        ax_conv_params_init(&p, n);
        memcpy(p.conv.lhs_spec, w->spec[0], (size_t)n * sizeof(int));
        memcpy(p.conv.rhs_spec, w->spec[1], (size_t)n * sizeof(int));
        memcpy(p.conv.out_spec, w->spec[2], (size_t)n * sizeof(int));
        p.conv.feature_group_count = w->fgc;
        p.conv.batch_group_count = w->bgc;
    } else {
        ax_window_params_init(&p, n);
        for (int d = 0; d < n; d++) p.shape[d] = w->window[d];
        p.flag = w->flag;
    }
    for (int d = 0; d < ns; d++) {
        p.step[d] = w->stride[d];
        p.lo[d] = w->lo[d];
        p.hi[d] = w->hi[d];
        p.conv.lhs_dilation[d] = w->base[d] ? w->base[d] : 1;
        p.conv.rhs_dilation[d] = w->wdil[d] ? w->wdil[d] : 1;
    }
    return p;
}

#endif

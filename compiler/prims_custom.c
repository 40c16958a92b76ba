/* User-defined rules met by transformations: custom_call (a custom_jvp / custom_vjp function
 * under jit, vmap or make_jaxpr) and custom_linear (a custom_vjp function's tangent map, whose
 * transpose is the user's backward function). Their rows and every rule about them. */
#include <stdlib.h>

#include "prim_rows.h"

/* ---------------------------------------------------------------- eager kernels */

/* A custom_call outside differentiation: the function's body, output k. */
AX_EAGER(custom_call) {
    const ax_ir *body = p->cb->body;
    ax_array **outs = calloc((size_t)body->nout + 1, sizeof *outs);
    if (!outs) return ax_error_oom(cx), -1;
    int rc = ax_ir_eval(cx, body, in, outs);
    (void)nin;
    out[0] = NULL;
    for (int j = 0; j < body->nout; j++) {
        if (!rc && j == p->k)
            out[0] = outs[j];
        else
            ax_array_release(outs[j]);
    }
    free(outs);
    return rc;
}

/* custom_vjp functions have a backward rule only: their tangents cannot be computed forward. */
AX_EAGER(custom_linear) {
    (void)nin, (void)in, (void)out;
    ax_error(cx, AX_ERR_TYPE,
             "%s is a custom_vjp function: it can be differentiated in reverse mode (grad, vjp, "
             "jacrev) but not in forward mode (jvp, jacfwd, linearize); use custom_jvp for that",
             p->cb ? p->cb->name : "this function");
    return -1;
}

/* ---------------------------------------------------------------- rows */

const ax_prim_info ax_custom_linear_info = {
    .name = "custom_linear",
    .nin = -1,
    .nout = 1,
    .flags = LIN,
    .shape = ax_shape_custom_linear,
    .eager = eager_custom_linear,
    .jvp = ax_jvp_linear,
    .transpose = ax_transpose_linear,
    .batch = ax_batch_custom_call,
    .lower = AX_LOWER_EAGER,
};

const ax_prim_info ax_custom_call_info = {
    .name = "custom_call",
    .nin = -1,
    .nout = 1,
    .flags = 0,
    .shape = ax_shape_custom_call,
    .eager = eager_custom_call,
    .jvp = ax_jvp_special,
    .batch = ax_batch_custom_call,
    .lower = AX_LOWER_EAGER,
};

/* The transformations as builtins: grad, value_and_grad, jvp, vjp, linearize, jacfwd, jacrev,
 * jacobian, hessian, make_jaxpr, jit, check_grads. They flatten pytree arguments to arrays,
 * run compiler/ad.c or compiler/trace_ir.c on a flat function that rebuilds the trees and
 * calls the user's function, and rebuild the results. */
#ifndef AX_TRANSFORMS_H
#define AX_TRANSFORMS_H

#include "../lang/interp.h"

int ax_transforms_register(ax_interp *in);

#endif

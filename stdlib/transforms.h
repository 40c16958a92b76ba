/* The transformations as builtins: grad, value_and_grad, jvp, vjp, linearize, jacfwd, jacrev,
 * jacobian, hessian, make_jaxpr, jit, check_grads. They flatten pytree arguments to arrays,
 * run compiler/ad.c or compiler/trace_ir.c on a flat function that rebuilds the trees and
 * calls the user's function, and rebuild the results. */
#ifndef AX_TRANSFORMS_H
#define AX_TRANSFORMS_H

#include "../lang/interp.h"

int ax_transforms_register(ax_interp *in);
/* Reads argnums (an int or a tuple of ints, default 0) into *out (malloc'd, *n entries, for
 * the caller to free); *as_tuple says which form. 0, or -1 with an error (*out is then NULL). */
int ax_read_argnums(ax_interp *in, const char *what, ax_value *v, int **out, int *n,
                    bool *as_tuple);
/* make_jaxpr's jaxpr (an object printing as a jaxpr) of fn called with a (the positions
 * traced[0, ntraced) traced, the others as given). NULL with an error. */
ax_value *ax_make_jaxpr(ax_interp *in, ax_value *fn, const ax_args *a, int ntraced,
                        const int *traced);

/* An in_axes / out_axes entry of None, as ax_spread_axes stores it. */
#define AX_AXIS_NONE (-1000000)
/* Gives each leaf of `tree` its axis from `spec`, a pytree prefix of it (an int or None applies
 * to a whole subtree: None is AX_AXIS_NONE). Appends to axes[*n] (room for cap). 0, or -1 with
 * an error naming `what` (vmap and pmap's in_axes and out_axes). */
int ax_spread_axes(ax_interp *in, const char *what, ax_value *tree, ax_value *spec, int *axes,
                   int *n, int cap);

#endif

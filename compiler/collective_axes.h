/* Collectives over several axis names at once (all_gather(x, ("i", "j")), axis_index,
 * psum_scatter, ppermute, all_to_all), as JAX has them for nested pmaps and vmaps: the named
 * axes form one axis, row-major (the first name varies slowest), whose positions are
 * axis_index(("i", "j")) = axis_index("i") * size("j") + axis_index("j").
 *
 * Each is composed from collectives over one name, so the primitives (their rules on devices,
 * their batching and transposes) only ever see one name: all_gather and psum_scatter gather
 * or scatter one name after the other, ppermute and all_to_all gather over every name and
 * keep what this position receives. psum, pmax and pmin take several names themselves. */
#ifndef AX_COLLECTIVE_AXES_H
#define AX_COLLECTIVE_AXES_H

#include "collectives.h"

/* Whether collective p over `spec` is composed here (several names, p not a reduction). */
bool ax_collective_composed(ax_prim p, const ax_axis_spec *spec);

/* Collective p over the names of `spec` on x (NULL for axis_index), with p's parameters in
 * extra (may be NULL); negative axes already resolved. A new reference, or NULL with the
 * error of p's shape rule over the whole axis. */
ax_array *ax_collective_axes(ax_ctx *cx, ax_prim p, ax_array *x, const ax_axis_spec *spec,
                             const ax_params *extra);

#endif

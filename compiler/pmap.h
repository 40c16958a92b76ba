/* The pmap primitive (printed xla_pmap): sub[0], the body, applied on device i to slice i of
 * every operand's leading axis; each result stacks the devices' results along a new leading
 * axis. Every operand is mapped: an argument that is the same for every device comes as a
 * broadcast (a view without copies), so the transpose of that broadcast sums the devices'
 * cotangents, as data-parallel training needs.
 *
 * Eagerly the body's native program (built once, as for a call) runs on the devices
 * (runtime/device.h), each with its own context; its collectives meet through the run's
 * exchange (compiler/collectives.h). The rules of the transformations are call's
 * (compiler/call.h), with the body's axis name in scope while they transform it. */
#ifndef AX_PMAP_H
#define AX_PMAP_H

#include "collectives.h"
#include "ir.h"
#include "trace_ir.h"

extern const ax_prim_info ax_pmap_info;

/* Traces fn into a pmap body (slices of the given types), with `spec`'s axis name bound to
 * `size` devices (every process's), simplified. NULL with an error. */
ax_ir *ax_pmap_trace(ax_ctx *cx, const ax_axis_spec *spec, int64_t size, ax_flat_fn fn,
                     void *closure, int nin, const ax_aval *types, int *nout);

/* Binds pmap of `body` over n slices (every operand of leading size n); out gets body->nout
 * new references. */
int ax_pmap_bind(ax_ctx *cx, ax_ir *body, const ax_axis_spec *spec, int64_t n, int nin,
                 ax_array **in, ax_array **out);

#endif

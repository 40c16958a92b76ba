/* vmap: a batching trace. Its tracers carry a value with one extra (batch) dimension and the
 * position of that dimension; each primitive's batching rule moves batch dimensions rather
 * than looping (a matrix-vector product of a batch of vectors becomes one matrix product). */
#ifndef AX_VMAP_H
#define AX_VMAP_H

#include "trace_ir.h"

struct ax_scope;

/* A batching rule: inputs in[i] with batch dimension bdim[i] (-1 when not batched), batch size
 * `size`; fills out (new references) and out_bdim (-1 when an output is not batched). */
typedef int (*ax_batch_rule)(ax_ctx *cx, ax_prim prim, const ax_params *p, int nin, ax_array **in,
                             const int *bdim, int64_t size, ax_array **out, int *out_bdim);

/* The rule families (one function per family, switching on prim). */
int ax_batch_elementwise(ax_ctx *cx, ax_prim prim, const ax_params *p, int nin, ax_array **in,
                         const int *bdim, int64_t size, ax_array **out, int *out_bdim);
int ax_batch_axes(ax_ctx *cx, ax_prim prim, const ax_params *p, int nin, ax_array **in,
                  const int *bdim, int64_t size, ax_array **out, int *out_bdim);
int ax_batch_shape(ax_ctx *cx, ax_prim prim, const ax_params *p, int nin, ax_array **in,
                   const int *bdim, int64_t size, ax_array **out, int *out_bdim);
int ax_batch_dot_general(ax_ctx *cx, ax_prim prim, const ax_params *p, int nin, ax_array **in,
                         const int *bdim, int64_t size, ax_array **out, int *out_bdim);
int ax_batch_triangular_solve(ax_ctx *cx, ax_prim prim, const ax_params *p, int nin,
                              ax_array **in, const int *bdim, int64_t size, ax_array **out,
                              int *out_bdim);
int ax_batch_indexing(ax_ctx *cx, ax_prim prim, const ax_params *p, int nin, ax_array **in,
                      const int *bdim, int64_t size, ax_array **out, int *out_bdim);
/* custom_call: a custom_call of the vmapped function, whose rule runs per example;
 * custom_linear: batched tangents of a custom_vjp function are forward mode, an error. */
int ax_batch_custom_call(ax_ctx *cx, ax_prim prim, const ax_params *p, int nin, ax_array **in,
                         const int *bdim, int64_t size, ax_array **out, int *out_bdim);

/* Runs fn with input i batched along in_axes[i] (-1: not batched, the same for every example)
 * over `size` examples. Output j comes back with its batch dimension at (*out_bdims)[j], or -1
 * when it does not depend on a batched input (a malloc'd array the caller frees). */
int ax_vmap(ax_ctx *cx, ax_flat_fn fn, void *closure, int nin, ax_array **in, const int *in_axes,
            int64_t size, int *nout, ax_array ***out, int **out_bdims);
/* The same, for vmap(f, axis_name=axis): collectives naming `axis` inside fn are batching
 * rules over this vmap's batch (compiler/collectives.h). axis NULL: ax_vmap. */
int ax_vmap_named(ax_ctx *cx, const char *axis, ax_flat_fn fn, void *closure, int nin,
                  ax_array **in, const int *in_axes, int64_t size, int *nout, ax_array ***out,
                  int **out_bdims);
/* Puts an output's batch dimension (bdim, -1: none) at `axis` of the result, broadcasting an
 * unbatched output to `size` examples. Consumes x. */
ax_array *ax_vmap_place(ax_ctx *cx, ax_array *x, int bdim, int64_t size, int axis);

/* The outputs of ax_vmap with every batch dimension at 0 (unbatched ones broadcast): replaces
 * out[0..n) in place and frees bdims. 0, or -1 (the failed outputs are NULL). */
int ax_vmap_place_first(ax_ctx *cx, int n, ax_array **out, int *bdims, int64_t size);

/* For batching rules: x with its batch dimension (bdim, -1: none) first, an unbatched x
 * broadcast to `size` examples (owned by the scope). */
ax_array *ax_batch_first(struct ax_scope *s, ax_array *x, int bdim, int64_t size);

/* Moves axis `from` of x to position `to` (new reference). */
ax_array *ax_moveaxis(ax_ctx *cx, ax_array *x, int from, int to);

#endif

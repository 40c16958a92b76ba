/* vmap: a batching trace. Its tracers carry a value with one extra (batch) dimension and the
 * position of that dimension; each primitive's batching rule moves batch dimensions rather
 * than looping (a matrix-vector product of a batch of vectors becomes one matrix product). */
#ifndef AX_VMAP_H
#define AX_VMAP_H

#include "trace_ir.h"

struct ax_scope;

/* The rule type (ax_batch_rule) is in compiler/primitive.h. */

/* Shared batching rules that rows name. Elementwise: batch dimensions first, rank-0 and
 * unbatched operands broadcast where the shapes must agree. */
int ax_batch_elementwise(ax_ctx *cx, ax_prim prim, const ax_params *p, int nin, ax_array **in,
                         const int *bdim, int64_t size, ax_array **out, int *out_bdim);
/* One operand whose params.axes (all naxes of them) name its dimensions: reductions. */
int ax_batch_axes(ax_ctx *cx, ax_prim prim, const ax_params *p, int nin, ax_array **in,
                  const int *bdim, int64_t size, ax_array **out, int *out_bdim);
/* One operand whose params.axes[0] names a dimension: argmax, cumulative sums, sorts. */
int ax_batch_axis(ax_ctx *cx, ax_prim prim, const ax_params *p, int nin, ax_array **in,
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
ax_array *ax_vmap_place_take(ax_ctx *cx, ax_array *x, int bdim, int64_t size, int axis);

/* The outputs of ax_vmap with every batch dimension at 0 (unbatched ones broadcast): replaces
 * out[0..n) in place and frees bdims. 0, or -1 (the failed outputs are NULL). */
int ax_vmap_place_first(ax_ctx *cx, int n, ax_array **out, int *bdims, int64_t size);

/* For batching rules: x with its batch dimension (bdim, -1: none) first, an unbatched x
 * broadcast to `size` examples (owned by the scope). */
ax_array *ax_batch_first(struct ax_scope *s, ax_array *x, int bdim, int64_t size);

/* For batching rules of one output: finishes with r (batch dimension first) as the output,
 * ending the scope; 0, or -1 when r is NULL. */
int ax_batch_done(struct ax_scope *s, ax_array *r, ax_array **out, int *out_bdim);
/* A primitive of one operand batched by binding it, with the parameters q (adjusted for the
 * batch dimension), on the operand with its batch dimension first. */
int ax_batch_one(ax_ctx *cx, ax_prim prim, const ax_params *q, ax_array **in, const int *bdim,
                 int64_t size, ax_array **out, int *out_bdim);

/* Moves axis `from` of x to position `to` (new reference). */
ax_array *ax_moveaxis(ax_ctx *cx, ax_array *x, int from, int to);

#endif

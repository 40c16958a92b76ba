/* Whole-IR passes: IR -> IR versions of the transformations, for the rules of higher-order
 * primitives (cond, while, scan, call), whose sub-programs are transformed as a whole (as
 * autodidax's cond_p rules call jvp_jaxpr, partial_eval_jaxpr, vmap_jaxpr and transpose).
 *
 * Each pass traces the sub-program through the transformation it stands for (ax_ir_eval under
 * a JVP, batching or recording trace), so a rule never duplicates what the traces know; the
 * results are simplified (dead code dropped). All return a new IR (NULL with an error). */
#ifndef AX_PASSES_H
#define AX_PASSES_H

#include "ir.h"

/* Forward mode. Inputs: ir's inputs, then a tangent for each input i with nonzero_in[i].
 * Outputs: ir's outputs, then a tangent for each output j with nonzero_out[j], which the pass
 * sets: true where the tangent is not a symbolic zero, or where instantiate[j] asks for it
 * (NULL: none) — a zero then is materialised. */
ax_ir *ax_pass_jvp(ax_ctx *cx, const ax_ir *ir, const bool *nonzero_in, const bool *instantiate,
                   bool *nonzero_out);

/* Partial evaluation: splits ir, given which inputs are unknown, into
 *   *known:   the known inputs (in order) -> the known outputs, then *nres residuals;
 *   *unknown: the residuals, then the unknown inputs -> the unknown outputs.
 * unknown_out[j] (set by the pass) says where output j comes from: the unknown part when it
 * depends on an unknown input or instantiate[j] asks for it (NULL: none). Nested higher-order
 * equations are split by their own rules. */
int ax_pass_partial_eval(ax_ctx *cx, const ax_ir *ir, const bool *unknown_in,
                         const bool *instantiate, bool *unknown_out, ax_ir **known,
                         ax_ir **unknown, int *nres);

/* Transposition of an IR linear in the inputs marked linear_in (the others are residuals).
 * Inputs: the residual inputs (in order), then a cotangent for each output of ir.
 * Outputs: the cotangent of each linear input (zeros where nothing flows). */
ax_ir *ax_pass_transpose(ax_ctx *cx, const ax_ir *ir, const bool *linear_in);

/* Batching over `size` examples. Inputs: ir's, with a leading batch dimension on those marked
 * batched_in. Outputs: ir's, with a leading batch dimension where batched_out[j] (set by the
 * pass): when the output depends on a batched input, or force_out[j] asks (NULL: none). */
ax_ir *ax_pass_vmap(ax_ctx *cx, const ax_ir *ir, int64_t size, const bool *batched_in,
                    const bool *force_out, bool *batched_out);

/* The type of ir's input / output i. */
void ax_ir_in_type(const ax_ir *ir, int i, ax_aval *out);
void ax_ir_out_type(const ax_ir *ir, int i, ax_aval *out);

#endif

/* Automatic differentiation: forward mode by a JVP trace, reverse mode by linearizing (a JVP
 * trace whose tangents are tracers of an IR-building trace, so the tangent computation is
 * recorded as a linear IR while the primal one runs concretely) and transposing that IR.
 * Because every rule binds primitives, these compose to any order. */
#ifndef AX_AD_H
#define AX_AD_H

#include "trace_ir.h"

/* Forward mode: out = fn(primals), tout = the directional derivative along tangents (an entry
 * NULL = zero; integer inputs must have NULL). New references in *out / *tout (tout entries
 * are never NULL: zeros are materialised). */
int ax_ad_jvp(ax_ctx *cx, ax_flat_fn fn, void *closure, int nin, ax_array **primals,
              ax_array **tangents, int *nout, ax_array ***out, ax_array ***tout);

/* The same with symbolic zeros: a tout entry is NULL where the tangent is zero. */
int ax_ad_jvp_symbolic(ax_ctx *cx, ax_flat_fn fn, void *closure, int nin, ax_array **primals,
                       ax_array **tangents, int *nout, ax_array ***out, ax_array ***tout);

/* A linearization: the linear map from input tangents to output tangents, as IR. */
typedef struct ax_linear {
    ax_ir *ir;      /* inputs: one tangent per differentiable (float) input; outputs: tangents */
    int nin, nout;
    bool *diff_in;  /* which inputs were differentiated (float dtype) */
    ax_aval *in_types, *out_types;
} ax_linear;

/* Reverse mode, first half: runs fn, giving its outputs, and records the linear map. */
int ax_ad_linearize(ax_ctx *cx, ax_flat_fn fn, void *closure, int nin, ax_array **primals,
                    int *nout, ax_array ***out, ax_linear **lin);
/* Applies the linear map forward (jvp of a linearization). tout: nout new references. */
int ax_linear_apply(ax_ctx *cx, const ax_linear *lin, ax_array **tangents, ax_array **tout);
/* Applies the transposed linear map: from output cotangents (NULL = zero) to input cotangents
 * (nin new references; zeros of the input's type for inputs that were not differentiated —
 * integer inputs get integer zeros). */
int ax_linear_transpose(ax_ctx *cx, const ax_linear *lin, ax_array **cts, ax_array **ct_in);
void ax_linear_free(ax_linear *lin);

/* For user-defined rules (custom_jvp, custom_vjp): when the innermost trace among `in` is a
 * JVP trace, returns it and fills each input's primal and tangent parts for it (borrowed;
 * tangent NULL = zero); otherwise returns NULL. */
ax_trace *ax_jvp_trace_of(ax_ctx *cx, int n, ax_array **in, ax_array **primals,
                          ax_array **tangents);
/* A tracer of JVP trace t carrying (primal, tangent); takes both references. */
ax_array *ax_jvp_tracer_new(ax_ctx *cx, ax_trace *t, ax_array *primal, ax_array *tangent);

/* Evaluates a linear IR backwards: given cotangents of its outputs, the cotangents of its
 * inputs (NULL where nothing flowed). */
int ax_ir_transpose_eval(ax_ctx *cx, const ax_ir *ir, ax_array **cts, ax_array **ct_in);
/* The same for an IR linear in the inputs marked linear_in, whose other inputs are residuals
 * with the values in_vals[i] (entries for linear inputs are ignored): ct_in[i] is set for the
 * linear inputs only (NULL where nothing flowed). */
int ax_ir_transpose_eval_mixed(ax_ctx *cx, const ax_ir *ir, const bool *linear_in,
                               ax_array **in_vals, ax_array **cts, ax_array **ct_in);

#endif

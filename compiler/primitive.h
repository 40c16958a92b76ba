/* The one table of primitives, and bind: the single entry point of every array operation.
 *
 * Each primitive is one row of compiler/primitive.c holding every rule about it: its
 * shape/dtype rule, its eager kernel (an adapter onto runtime/), and the slots that the
 * transformation passes fill (JVP, transpose, batching, code generation). */
#ifndef AX_PRIMITIVE_H
#define AX_PRIMITIVE_H

#include "../runtime/array.h"
#include "../runtime/elementwise.h"
#include "../runtime/index.h"
#include "../runtime/linalg.h"
#include "../runtime/reduce.h"

struct ax_axis_spec;
struct ax_strbuf;

typedef enum {
    /* elementwise unary: params none (integer_pow: k) */
    AX_P_NEG, AX_P_ABS, AX_P_SIGN, AX_P_EXP, AX_P_EXP2, AX_P_LOG, AX_P_LOG1P, AX_P_EXPM1,
    AX_P_SIN, AX_P_COS, AX_P_TAN, AX_P_ASIN, AX_P_ACOS, AX_P_ATAN, AX_P_SINH, AX_P_COSH,
    AX_P_TANH, AX_P_ASINH, AX_P_ACOSH, AX_P_ATANH, AX_P_LOGISTIC, AX_P_SQRT, AX_P_RSQRT,
    AX_P_CBRT, AX_P_FLOOR, AX_P_CEIL, AX_P_ROUND, AX_P_ERF, AX_P_ERFC, AX_P_ERF_INV,
    AX_P_LGAMMA, AX_P_DIGAMMA, AX_P_IS_FINITE, AX_P_NOT, AX_P_SQUARE, AX_P_INTEGER_POW,
    /* elementwise binary: operands of one dtype, equal shapes or one of them rank 0 */
    AX_P_ADD, AX_P_SUB, AX_P_MUL, AX_P_DIV, AX_P_FLOOR_DIV, AX_P_REM, AX_P_MOD, AX_P_POW,
    AX_P_MAX, AX_P_MIN, AX_P_ATAN2, AX_P_NEXTAFTER, AX_P_EQ, AX_P_NE, AX_P_LT, AX_P_LE,
    AX_P_GT, AX_P_GE, AX_P_AND, AX_P_OR, AX_P_XOR, AX_P_SHL, AX_P_SHR_LOGICAL, AX_P_SHR_ARITH,
    /* elementwise others */
    AX_P_SELECT,  /* (pred, on_true, on_false) */
    AX_P_CLAMP,   /* (lo, x, hi) */
    AX_P_CONVERT, /* params: dtype, weak */
    AX_P_BITCAST, /* params: dtype */
    AX_P_STOP_GRADIENT,
    /* reductions: params axes */
    AX_P_REDUCE_SUM, AX_P_REDUCE_PROD, AX_P_REDUCE_MAX, AX_P_REDUCE_MIN, AX_P_REDUCE_AND,
    AX_P_REDUCE_OR,
    AX_P_ARGMAX, AX_P_ARGMIN, /* params: axes[0], dtype (index dtype) */
    AX_P_CUMSUM, AX_P_CUMPROD, AX_P_CUMMAX, AX_P_CUMMIN, /* params: axes[0], flag = reverse */
    /* shapes */
    AX_P_RESHAPE,          /* params: shape */
    AX_P_TRANSPOSE,        /* params: axes = permutation */
    AX_P_BROADCAST_IN_DIM, /* params: shape, axes = broadcast_dimensions */
    AX_P_CONCATENATE,      /* variadic; params: axes[0] */
    AX_P_SLICE,            /* params: lo = start, hi = limit, step = strides */
    AX_P_PAD,              /* (x, padding value); params: lo, hi, step = interior */
    AX_P_SQUEEZE,          /* params: axes */
    AX_P_EXPAND_DIMS,      /* params: axes */
    AX_P_REV,              /* params: axes */
    /* indexing */
    AX_P_GATHER,           /* (x, idx); params: axes */
    AX_P_SCATTER,          /* (x, idx, updates); params: axes, flag = ax_scatter_mode */
    AX_P_DYNAMIC_SLICE,    /* (x, start_0, ..., start_{n-1}); params: shape = slice sizes;
                              starts are clamped into range, as lax.dynamic_slice */
    AX_P_DYNAMIC_UPDATE_SLICE, /* (x, update, start_0, ...) */
    /* creation */
    AX_P_IOTA,             /* no inputs; params: dtype, shape, axes[0] = dimension */
    /* linear algebra */
    AX_P_DOT_GENERAL,      /* params: dot */
    AX_P_CHOLESKY,
    AX_P_TRIANGULAR_SOLVE, /* (a, b): x with op(a) x = b (or x op(a) = b), a (..., n, n)
                              triangular; params: flag = AX_TRSOLVE_* bits (runtime/linalg.h):
                              lower, transpose_a, unit_diagonal, right side (left_side=False) */
    /* factorisations of (..., m, n) matrices, rules in compiler/linalg_rules.c; params: flag =
     * the AX_EIGH_* / AX_SVD_* / AX_QR_* bits of compiler/linalg_rules.h */
    AX_P_LU,   /* a -> (lu, pivots, permutation) */
    AX_P_EIGH, /* a -> (eigenvectors, eigenvalues) */
    AX_P_SVD,  /* a -> (s, u, vt), or (s,) without compute_uv */
    AX_P_QR,   /* a -> (q, r) */
    /* sorting */
    AX_P_SORT,             /* params: axes[0], flag = descending */
    AX_P_ARGSORT,          /* params: axes[0], flag = descending, dtype = index dtype */
    /* a user-defined linear map (the tangent of a custom_vjp function): (residuals, tangents),
     * one output of type (dtype, shape), linear in the tangents; params: cb (its transpose),
     * k = output index, nconsts = the number of residuals */
    AX_P_CUSTOM_LINEAR,
    /* a function with a custom derivative (custom_jvp / custom_vjp) met by jit, vmap or
     * make_jaxpr: variadic inputs (its flattened arguments), output k of the function;
     * params: cb (body = the function traced, jvp = its rule), k */
    AX_P_CUSTOM_CALL,
    /* the PRNG's hash: (k0, k1, x0, x1) u32, shapes equal or rank 0 -> (y0, y1) */
    AX_P_THREEFRY2X32,
    /* an effect (jax.debug.print, jax.debug.callback): no outputs; params: cb, whose `effect`
     * runs on the concrete operands when the equation runs (compiler/debug_callback.h) */
    AX_P_DEBUG_CALLBACK,
    /* higher-order primitives: closed sub-programs in params.sub (compiler/control_flow.h,
     * compiler/call.h); any number of outputs */
    AX_P_COND,  /* (index, operands...): branch sub[clamp(index)] applied to the operands */
    AX_P_WHILE, /* (cond consts, body consts, carry...): sub[0] = cond, sub[1] = body */
    AX_P_SCAN,  /* (consts, carry, xs...): sub[0] = body; length, reverse, unroll */
    AX_P_CALL,  /* (args...): sub[0] applied to the arguments (what jit leaves in a trace) */
    /* convolution and windowed reductions (compiler/conv_rules.c has all their rules) */
    AX_P_CONV_GENERAL_DILATED, /* (lhs, rhs); params: conv, ndim = rank, step = window
                                  strides, lo/hi = padding (spatial dims, rhs_spec order) */
    AX_P_REDUCE_WINDOW_SUM,    /* (x); params: ndim = rank, shape = window_dimensions, step =
                                  window_strides, lo/hi = padding, conv.lhs_dilation = base
                                  dilation, conv.rhs_dilation = window dilation */
    AX_P_REDUCE_WINDOW_MAX, AX_P_REDUCE_WINDOW_MIN, /* the same */
    AX_P_SELECT_AND_GATHER_ADD,  /* (tangents, operand) -> window shape; the same params, flag =
                                    AX_SELECT_GE (max) / AX_SELECT_LE (min) */
    AX_P_SELECT_AND_SCATTER_ADD, /* (source, operand) -> operand's shape; the same params */
    /* pmap (compiler/pmap.h): sub[0] applied to slice i of every operand's leading axis on
     * device i; params: length = the slices, axis = the axis name (and devices) */
    AX_P_PMAP,
    /* collectives by axis name (compiler/collectives.h); params: axis = the names, length =
     * the size of the named axes together (the devices taking part) */
    AX_P_PSUM, AX_P_PMAX, AX_P_PMIN,
    AX_P_ALL_GATHER,   /* axes[0] = the new axis, flag = tiled */
    AX_P_PSUM_SCATTER, /* axes[0] = the scattered dimension, flag = tiled */
    AX_P_PPERMUTE,     /* axis->pairs: (source, destination) device pairs */
    AX_P_ALL_TO_ALL,   /* axes[0] = split axis, axes[1] = concat axis, flag = tiled */
    AX_P_AXIS_INDEX,   /* no inputs: the device's position along the named axis */
    AX_P_NPRIMS
} ax_prim;

/* conv_general_dilated's dimension numbers, dilations and groups, as lax names them (specs:
 * (batch, feature, spatial...) of lhs and out, (out feature, in feature, spatial...) of rhs).
 * The windowed reductions read the dilations as base_dilation / window_dilation. */
typedef struct ax_conv_dims {
    int lhs_spec[AX_MAX_RANK], rhs_spec[AX_MAX_RANK], out_spec[AX_MAX_RANK];
    int64_t lhs_dilation[AX_MAX_RANK], rhs_dilation[AX_MAX_RANK];
    int64_t feature_group_count, batch_group_count;
} ax_conv_dims;

/* select_and_gather_add / select_and_scatter_add: which element of a window is selected. */
enum { AX_SELECT_GE = 0, AX_SELECT_LE = 1 };

/* Static parameters. Which fields a primitive reads is listed in the enum above. */
typedef struct ax_params {
    ax_dtype dtype;
    bool weak;
    int flag;
    int64_t k;
    int naxes;
    int axes[AX_MAX_RANK];
    int ndim;
    int64_t shape[AX_MAX_RANK];
    int64_t lo[AX_MAX_RANK], hi[AX_MAX_RANK], step[AX_MAX_RANK];
    ax_dot_dims dot;
    ax_conv_dims conv;
    struct ax_callback *cb; /* custom_linear: reference-counted; IR equations hold one */
    /* higher-order primitives: the closed sub-programs (borrowed by bind; an IR equation holds
     * references, see ax_ir_add_eqn) and how the operands split between them */
    int nsub;
    struct ax_ir *const *sub;
    int nconsts;      /* scan: leading constant operands; while: the cond's constants */
    int nconsts2;     /* while: the body's constants (after the cond's) */
    int ncarry;       /* scan: carried operands (after the constants) */
    int64_t length;   /* scan: number of steps */
    int unroll;       /* scan: steps per iteration of the generated loop (a hint) */
    bool reverse;     /* scan: from the last element to the first */
    /* pmap and collectives: the axis names (interned: compiler/collectives.h) */
    const struct ax_axis_spec *axis;
} ax_params;

struct ax_ir;

/* A callback carried by a primitive's parameters (custom_vjp's backward function, a
 * custom_call's function and rule). */
typedef struct ax_callback {
    int64_t refs;
    const char *name;
    /* custom_call: the function's body, traced on the argument types (owned) */
    struct ax_ir *body;
    /* custom_call: output k of the function and its tangent, by the user's rule, from the
     * primal inputs and their tangents (NULL = zero); new references (*tout NULL = zero) */
    int (*jvp)(ax_ctx *cx, void *data, int k, int nin, ax_array **primals, ax_array **tangents,
               ax_array **out, ax_array **tout);
    /* custom_call (optional): the same for the function vmapped over `size` examples (every
     * input batched at 0); without it vmap runs `jvp` per example */
    int (*batched_jvp)(ax_ctx *cx, void *data, int64_t size, int k, int nin, ax_array **primals,
                       ax_array **tangents, ax_array **out, ax_array **tout);
    /* the cotangents of the inputs (nin, new references or NULL for zero) from the cotangent
     * `ct` of output `k` and the residuals the forward pass kept (nres of them: custom_linear's
     * leading operands, so that they flow through an IR like any value) */
    int (*transpose)(ax_ctx *cx, void *data, int k, ax_array *ct, int nres, ax_array **res,
                     int nin, ax_array **ct_in);
    /* debug_callback: the effect, on the operands' concrete values; 0 or -1 with an error */
    int (*effect)(ax_ctx *cx, void *data, int nin, ax_array **in);
    void (*free)(void *data);
    void *data;
} ax_callback;

ax_callback *ax_callback_retain(ax_callback *cb);
void ax_callback_release(ax_callback *cb);

/* The abstract value of an array: what a shape rule sees. */
typedef struct ax_aval {
    ax_dtype dtype;
    bool weak;
    int ndim;
    int64_t shape[AX_MAX_RANK];
} ax_aval;

void ax_aval_of(ax_aval *out, const ax_array *a);

/* Computes the output avals (nout of them) from the input avals; records a ShapeError /
 * TypeError / ValueError in the program's terms and returns -1 on bad input. */
typedef int (*ax_shape_rule)(ax_ctx *cx, int nin, const ax_aval *in, const ax_params *p,
                             ax_aval *out);
/* Runs the eager kernel: fills out[0..nout) with new references; -1 on error. */
typedef int (*ax_eager_rule)(ax_ctx *cx, int nin, ax_array **in, const ax_params *p,
                             ax_array **out);

enum {
    AX_PRIM_LINEAR = 1,       /* linear in its (float) inputs: has a transpose rule */
    AX_PRIM_ELEMENTWISE = 2,  /* fusable pointwise op */
    AX_PRIM_NONDIFF = 4,      /* not differentiable (integer/bool results, comparisons, iota) */
    AX_PRIM_EFFECT = 8,       /* has an effect: never dropped, merged or folded by a pass */
    AX_PRIM_COLLECTIVE = 16,  /* names axes (params.axis): bind finds the trace that binds them */
    AX_PRIM_MAPPED = 32,      /* operands and results carry a leading axis of params.length
                                 that its sub-program does not see (pmap) */
};

struct ax_ir_trace;
/* Partial evaluation (reverse mode's split of a computation into its known part, run now, and
 * its unknown part, recorded as a linear program): `in[i]` is known when !unknown[i] (a value,
 * or a tracer of an outer transformation) and otherwise a tracer of the recording trace `t`.
 * The rule binds what it can compute from the known inputs and records the rest in `t`
 * (ax_ir_trace_record); out[0..nout) get new references, known where possible. Primitives
 * without one are recorded whole. */
typedef int (*ax_partial_eval_rule)(ax_ctx *cx, struct ax_ir_trace *t, ax_prim prim,
                                    const ax_params *p, int nin, ax_array **in,
                                    const bool *unknown, ax_array **out);

typedef struct ax_prim_info {
    const char *name; /* as the IR prints it: "add", "reduce_sum", "broadcast_in_dim" */
    int nin;          /* -1: variadic */
    int nout;         /* -1: given by nout_of */
    unsigned flags;
    ax_shape_rule shape;
    ax_eager_rule eager;
    void *jvp;        /* compiler/jvp_rules.c fills these (typed there) */
    void *transpose;
    void *batch;
    void *codegen;
    ax_partial_eval_rule partial_eval;
    int (*nout_of)(const ax_params *p); /* the number of outputs, when nout is -1 */
    /* Which outputs depend on the inputs marked in `in` (what partial evaluation and the loop
     * fixpoints ask); without it every output depends on every input. */
    void (*dependencies)(const ax_params *p, int nin, const bool *in, bool *out);
    /* Appends the parameters as the IR printer shows them ("[axes=('i',)]"); without it the
     * printer's own table says (compiler/ir.c). */
    void (*format_params)(struct ax_strbuf *out, const ax_params *p);
} ax_prim_info;

const ax_prim_info *ax_prim_get(ax_prim p);
/* The number of outputs of p with these parameters. */
int ax_prim_nout(ax_prim p, const ax_params *params);

/* Room for the `n` operands (items of `size` bytes) of one equation: `small`, which holds `cap`
 * of them, when they fit, else a new allocation (NULL and a MemoryError). Variadic primitives
 * (concatenate of any number of arrays) have no fixed operand count. ax_scratch_free releases
 * it either way. */
void *ax_scratch(ax_ctx *cx, void *small, int cap, int n, size_t size);
void ax_scratch_free(void *p, const void *small);
/* reduce_sum ... reduce_or: the reductions over axes with one output. */
static inline bool ax_prim_is_reduction(ax_prim p) {
    return p >= AX_P_REDUCE_SUM && p <= AX_P_REDUCE_OR;
}
/* Finds a primitive by its printed name; -1 if none. */
int ax_prim_lookup(const char *name);

/* Abstract evaluation: checks the operand count and runs p's shape rule. What tracers and the
 * IR verifier use to type an equation without running it. 0, or -1 with the rule's error. */
int ax_prim_infer(ax_ctx *cx, ax_prim p, int nin, const ax_aval *in, const ax_params *params,
                  ax_aval *out);

/* THE entry point: applies primitive p to inputs. When any input is a tracer, the innermost
 * active transformation handles it (compiler/trace.c); otherwise the shape rule checks the
 * inputs and the eager kernel runs. Fills out[0..nout) with new references; -1 on error. */
int ax_bind(ax_ctx *cx, ax_prim p, int nin, ax_array **in, const ax_params *params,
            ax_array **out);
/* For single-output primitives: the output (new reference) or NULL. */
ax_array *ax_bind1(ax_ctx *cx, ax_prim p, int nin, ax_array **in, const ax_params *params);

/* Shorthands used by the library layer. */
ax_array *ax_bind_unary(ax_ctx *cx, ax_prim p, ax_array *x);
ax_array *ax_bind_binary(ax_ctx *cx, ax_prim p, ax_array *a, ax_array *b);

#endif

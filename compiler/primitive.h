/* The one table of primitives, and bind: the single entry point of every array operation.
 *
 * Each primitive is one row (ax_prim_info) holding every rule about it: its shape/dtype rule,
 * its eager kernel (an adapter onto runtime/), its JVP, transpose and batching rules (or what
 * the shared rules need from it), how jit computes it, how it prints and simplifies, and the
 * examples the table's tests run them on. compiler/primitives.def lists the primitives and
 * where each row is defined; docs/primitives.md tells how to add one. */
#ifndef AX_PRIMITIVE_H
#define AX_PRIMITIVE_H

#include "../runtime/array.h"
#include "../runtime/elementwise.h"
#include "../runtime/format.h"
#include "../runtime/index.h"
#include "../runtime/linalg.h"
#include "../runtime/reduce.h"
#include "../runtime/vecmath.h"

struct ax_axis_spec;

/* The primitives, in the order of compiler/primitives.def (which says where each one's row
 * and rules are, and which parameters it reads). */
typedef enum {
#define AX_PRIM(NAME, row) AX_P_##NAME,
#include "primitives.def"
#undef AX_PRIM
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

/* Static parameters. Which fields a primitive reads is listed in compiler/primitives.def. */
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
    AX_PRIM_COMMUTATIVE = 64, /* f(a, b) = f(b, a) (graphs draw its operands unnumbered) */
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

/* JVP (forward mode, compiler/ad.c): given the primal inputs `in` and their tangents `tin`
 * (NULL = a symbolic zero), compute the primal outputs `out` and their tangents `tout` (NULL =
 * zero). New references. Rules bind primitives (compiler/lax.h), so they work at any level of
 * nesting: the same rule serves eager grad, grad of grad and jit. */
typedef int (*ax_jvp_rule)(ax_ctx *cx, ax_prim prim, const ax_params *p, int nin, ax_array **in,
                           ax_array **tin, ax_array **out, ax_array **tout);

/* Transpose of a primitive linear in the inputs marked `lin` (reverse mode): given the
 * cotangents `cts` of its outputs (one per output; an entry NULL = zero, at least one is not)
 * and the values of the non-linear inputs (in[i] for !lin[i]; in[i] is NULL for linear ones,
 * whose types are in_types[i]), fill ct_in[i] for each linear input (new references; NULL =
 * zero). */
typedef int (*ax_transpose_rule)(ax_ctx *cx, ax_prim prim, const ax_params *p, int nin,
                                 ax_array **in, const bool *lin, const ax_aval *in_types,
                                 ax_array *const *cts, ax_array **ct_in);

/* Batching (vmap, compiler/vmap.c): inputs in[i] with batch dimension bdim[i] (-1 when not
 * batched), batch size `size`; fills out (new references) and out_bdim (-1 when an output is
 * not batched). */
typedef int (*ax_batch_rule)(ax_ctx *cx, ax_prim prim, const ax_params *p, int nin, ax_array **in,
                             const int *bdim, int64_t size, ax_array **out, int *out_bdim);

struct ax_ir_atom;
struct ax_ir_printer;
struct ax_simplify_view;
struct ax_scope;
struct ax_collective_rules;

/* The per-primitive parts of the shared rules: a row names a family rule (ax_jvp_unary,
 * ax_jvp_tangent, ax_transpose_linear, compiler/ad_rules.h) and gives what differs. They bind
 * primitives in scope s (compiler/lax.h) and return NULL (or -1) with an error pending on
 * failure. */
/* dy/dx of an elementwise primitive of one operand, from x and y = f(x): rank 0 or x's shape
 * (.jvp = ax_jvp_unary multiplies the tangent by it). */
typedef ax_array *(*ax_derivative_rule)(struct ax_scope *s, const ax_params *p, ax_array *x,
                                        ax_array *y);
/* The tangent of the single output from the primal inputs, their tangents `tin` (NULL: zero;
 * not all NULL) and the primal output `out` (.jvp = ax_jvp_tangent); NULL without an error
 * pending: a zero tangent. */
typedef ax_array *(*ax_tangent_rule)(struct ax_scope *s, const ax_params *p, ax_array **in,
                                     ax_array **tin, ax_array *out);
/* The cotangents r[i] of the inputs marked lin[i] (the others stay NULL; NULL is zero) from the
 * cotangent `ct` of the single output (.transpose = ax_transpose_linear): in[i] holds the
 * inputs that are not linear, ty[i] every input's type. 0, or -1 with an error. */
typedef int (*ax_cotangent_rule)(struct ax_scope *s, const ax_params *p, int nin, ax_array **in,
                                 const bool *lin, const ax_aval *ty, ax_array *ct, ax_array **r);

/* Operand dtypes as a mask (1u << dtype), for rows that list the dtypes a rule applies to. */
#define AX_DT(t)     (1u << (t))
#define AX_DT_FLOAT  (AX_DT(AX_F32) | AX_DT(AX_F64))
#define AX_DT_INT    (AX_DT(AX_U8) | AX_DT(AX_I32) | AX_DT(AX_U32) | AX_DT(AX_I64))
#define AX_DT_BOOL   AX_DT(AX_BOOL)
#define AX_DT_ALL    (AX_DT_FLOAT | AX_DT_INT | AX_DT_BOOL)
#define AX_DT_NUMBER (AX_DT_FLOAT | AX_DT_INT)

/* How jit computes a primitive: an operation of the neutral kernel IR that compiled loops are
 * made of (compiler/fuse.h), or an eager step. A backend's renderer (compiler/codegen.c for
 * libgccjit) implements each operation once, for every row naming it; what differs between
 * rows of one operation (a libm function's name, the dtypes) is data in the row. The scalar
 * semantics are the eager kernels' (runtime/elementwise.h, runtime/reduce.h), operation for
 * operation, so that jit and eager give the same bits. A row must say which: AX_KOP_NONE (a
 * row that says nothing) makes jit refuse the program with an internal error. */
typedef enum {
    AX_KOP_NONE,  /* not declared: a bug in the row, refused */
    AX_KOP_EAGER, /* an eager step: the equation runs on its eager kernel between the loops */
    /* elementwise, on operands of one dtype (their dtype: ax_lowering.dtypes) */
    AX_KOP_COPY,        /* the operand (stop_gradient) */
    AX_KOP_NEG,         /* floats: the sign flipped; integers: 0 - x, wrapping */
    AX_KOP_ABS,         /* floats: fabs; integers: x < 0 ? 0 - x : x */
    AX_KOP_SIGN,        /* XLA's sign: -1, 0, 1 (floats keep zeros and NaN) */
    AX_KOP_NOT,         /* logical (bool) or bitwise not */
    AX_KOP_SQUARE,      /* x * x */
    AX_KOP_RSQRT,       /* 1 / sqrt(x) */
    AX_KOP_IS_FINITE,   /* the exponent bits are not all ones */
    AX_KOP_INTEGER_POW, /* x ** params.k by the eager kernel's products (|k| <= 64) */
    AX_KOP_BUILTIN,     /* fn: a C function the compiler expands inline (sqrt, floor, rint) */
    AX_KOP_LIBM,        /* fn: libm's function of one or two floats; f32 through f64, or with
                           AVX-512 libmvec's f32 function when vec_f32, or ax's own vector math
                           when vecmath (as the eager kernels) */
    AX_KOP_AXFN,        /* fn_slot: ax's own scalar function through the fns table (AX_FN_*) */
    AX_KOP_LOGISTIC,    /* 1 / (1 + exp(-x)) as the eager kernel computes it (f32: vecmath) */
    AX_KOP_ADD,         /* + - *: integers wrap */
    AX_KOP_SUB,
    AX_KOP_MUL,
    AX_KOP_DIV,
    AX_KOP_MAX, /* NaN propagates, as lax.max */
    AX_KOP_MIN,
    AX_KOP_AND, /* bitwise (bool: logical) */
    AX_KOP_OR,
    AX_KOP_XOR,
    AX_KOP_SHL, /* shifts by an amount >= the width give 0 (arithmetic: the sign) */
    AX_KOP_SHR_LOGICAL,
    AX_KOP_SHR_ARITH,
    AX_KOP_EQ, /* comparisons: bool results */
    AX_KOP_NE,
    AX_KOP_LT,
    AX_KOP_LE,
    AX_KOP_GT,
    AX_KOP_GE,
    AX_KOP_SELECT,  /* (pred, on_true, on_false) */
    AX_KOP_CLAMP,   /* (lo, x, hi): min(max(x, lo), hi) */
    AX_KOP_CONVERT, /* to the output's dtype, as ax_convert (float -> integer: eager) */
    /* reductions over params.axes, in the eager kernels' order (runtime/reduce.h) */
    AX_KOP_REDUCE_SUM,
    AX_KOP_REDUCE_PROD,
    AX_KOP_REDUCE_MAX,
    AX_KOP_REDUCE_MIN,
    AX_KOP_REDUCE_AND,
    AX_KOP_REDUCE_OR,
    AX_KOP_INDEX, /* iota: the index along params.axes[0] */
    /* views, folded into the strides of the loops that read them */
    AX_KOP_BROADCAST, /* broadcast_in_dim */
    AX_KOP_TRANSPOSE, /* by params.axes */
    AX_KOP_RESHAPE,   /* reshape, squeeze, expand_dims (of contiguous data) */
    /* control flow: loops over the steps of the sub-programs' own plans (compiler/jit_loops.c) */
    AX_KOP_COND,
    AX_KOP_WHILE,
    AX_KOP_SCAN,
} ax_kop;

/* Functions generated code calls through its `fns` table (AX_KOP_AXFN): ax's own scalar
 * special functions, the f64 version in the slot after the f32 one; and the reads of the
 * loop nests' tiles (runtime/tile.h, compiler/codegen.c), by element size. */
enum {
    AX_FN_ERF_INV_F32,
    AX_FN_ERF_INV_F64,
    AX_FN_LGAMMA_F32,
    AX_FN_LGAMMA_F64,
    AX_FN_DIGAMMA_F32,
    AX_FN_DIGAMMA_F64,
    AX_FN_TILE1,
    AX_FN_TILE1TO4,
    AX_FN_TILE4,
    AX_FN_TILE8,
    AX_FN_COUNT
};

typedef struct ax_lowering {
    ax_kop kop;
    /* elementwise operations, reductions, iota: the dtypes of operand 0 (of the output for
     * iota) that loops compute; on the others the equation is an eager step */
    unsigned dtypes;
    const char *fn; /* BUILTIN, LIBM: the C function ("exp"; "expf" is its f32 name) */
    bool vec_f32;   /* LIBM: libmvec's f32 function is called directly (with AVX-512) */
    int fn_slot;    /* AXFN: the f32 function's AX_FN_* slot */
    /* LIBM, LOGISTIC: f32 loops compute ax's own vector math function `vm` inline
     * (runtime/vecmath.h), the code the eager kernel runs; f64 ones are unchanged */
    bool vecmath;
    ax_vm_fn vm;
} ax_lowering;

static inline bool ax_kop_is_reduction(ax_kop k) {
    return k >= AX_KOP_REDUCE_SUM && k <= AX_KOP_REDUCE_OR;
}
/* Operations that are views: folded into the strides of their readers. */
static inline bool ax_kop_is_view(ax_kop k) {
    return k == AX_KOP_BROADCAST || k == AX_KOP_TRANSPOSE || k == AX_KOP_RESHAPE;
}
/* cond, while, scan: loops over sub-programs. */
static inline bool ax_kop_is_control(ax_kop k) {
    return k == AX_KOP_COND || k == AX_KOP_WHILE || k == AX_KOP_SCAN;
}

/* The rows' lowerings, spelled alike. */
#define AX_LOWER(kop_, dtypes_) {.kop = (kop_), .dtypes = (dtypes_)}
#define AX_LOWER_EAGER          {.kop = AX_KOP_EAGER}
#define AX_LOWER_LIBM(name, vec)                                                                   \
    {.kop = AX_KOP_LIBM, .dtypes = AX_DT_FLOAT, .fn = (name), .vec_f32 = (vec)}
#define AX_LOWER_BUILTIN(name) {.kop = AX_KOP_BUILTIN, .dtypes = AX_DT_FLOAT, .fn = (name)}
#define AX_LOWER_AXFN(slot)    {.kop = AX_KOP_AXFN, .dtypes = AX_DT_FLOAT, .fn_slot = (slot)}
/* libm's `name` on f64, ax's vector math function vm_ (AX_VM_*) on f32 */
#define AX_LOWER_VECMATH(name, vm_)                                                                \
    {.kop = AX_KOP_LIBM, .dtypes = AX_DT_FLOAT, .fn = (name), .vecmath = true, .vm = (vm_)}
/* logistic: ax's vector math on f32, the eager kernel's expression on f64 */
#define AX_LOWER_LOGISTIC                                                                          \
    {.kop = AX_KOP_LOGISTIC, .dtypes = AX_DT_FLOAT, .vecmath = true, .vm = AX_VM_LOGISTIC}

#define AX_LINEAR_ALL 0xffffffffu

/* Examples: the cases tests/unit/test_prim_table.c runs every rule of a row on (derivatives
 * against finite differences, transposition against the JVP, batching against a loop over
 * examples, jit against eager), so that a new row is tested by being added. */
typedef enum {
    AX_ARG_FLOAT, /* floats in [lo, hi] (f64 for the derivatives, f32 and f64 under jit) */
    AX_ARG_INT,   /* integers of `dtype` in [lo, hi]: indices, bit patterns (not differentiated) */
    AX_ARG_BOOL,  /* booleans (not differentiated) */
    AX_ARG_SPD,   /* floats: (..., n, n) symmetric positive definite matrices with a strong
                     diagonal, to factor and solve with */
} ax_arg_kind;

typedef struct ax_example_arg {
    ax_arg_kind kind;
    int ndim;
    int64_t shape[5];
    double lo, hi;
    ax_dtype dtype; /* INT */
} ax_example_arg;

enum {
    /* the derivative is a convention, not the function's (stop_gradient, nextafter): not
     * compared with finite differences */
    AX_EXAMPLE_NO_FD = 1,
};

typedef struct ax_prim_example {
    int nin;
    ax_example_arg in[5];
    ax_params p;
    unsigned skip; /* AX_EXAMPLE_* */
} ax_prim_example;

/* A row's examples: .examples = ..., .nexamples = ... from a list of ax_prim_example. */
#define AX_EXAMPLES(...)                                                                           \
    .examples = (const ax_prim_example[]){__VA_ARGS__},                                           \
    .nexamples = (int)(sizeof((const ax_prim_example[]){__VA_ARGS__}) / sizeof(ax_prim_example))

/* One row of the table: a primitive and every rule about it. Rows are defined beside their
 * rules, one file per family (compiler/prims_*.c, control_flow.c, conv_rules.c, ...); how to
 * add one is in docs/primitives.md. */
typedef struct ax_prim_info {
    const char *name; /* as the IR prints it: "add", "reduce_sum", "broadcast_in_dim" */
    int nin;          /* -1: variadic */
    int nout;         /* -1: given by nout_of */
    unsigned flags;
    ax_shape_rule shape;
    ax_eager_rule eager;
    ax_jvp_rule jvp;             /* NULL: not differentiable (zero tangents when NONDIFF) */
    ax_transpose_rule transpose; /* the LINEAR ones */
    ax_batch_rule batch;         /* NULL: vmap reports that it has none */
    /* what the family rules read (see ax_derivative_rule and the others above) */
    ax_derivative_rule derivative; /* .jvp = ax_jvp_unary */
    ax_tangent_rule tangent;       /* .jvp = ax_jvp_tangent */
    ax_cotangent_rule cotangent;   /* .transpose = ax_transpose_linear */
    /* The operands that carry tangents (.jvp = ax_jvp_linear: the tangent is the primitive of
     * the tangents, the other operands as they are): bit i for operand i, bit 31 for the
     * operands from 31 on (AX_LINEAR_ALL: every one). */
    unsigned linear_in;
    ax_partial_eval_rule partial_eval;
    int (*nout_of)(const ax_params *p); /* the number of outputs, when nout is -1 */
    /* Which outputs depend on the inputs marked in `in` (what partial evaluation and the loop
     * fixpoints ask); without it every output depends on every input. */
    void (*dependencies)(const ax_params *p, int nin, const bool *in, bool *out);
    /* The parameters as the IR prints them after the name ("[axes=(0,)]"); NULL: none. */
    void (*format_params)(ax_strbuf *s, const ax_params *p);
    /* Higher-order primitives: their parameters and sub-programs, one per line (through
     * ax_ir_print_param / ax_ir_print_sub, compiler/ir.h); NULL: each sub-program as jaxpr=. */
    void (*format_subs)(struct ax_ir_printer *pr, const ax_params *p);
    /* simplify: the operand an equation with these operands computes (when it has the
     * result's type), or -1; NULL: none (see compiler/simplify.h for the helpers). */
    int (*identity)(const ax_params *p, const struct ax_ir_atom *in);
    /* simplify: rewrites the operands in[] and parameters p of an equation to read what the
     * equations making its operands read (compiler/simplify.h), when that is cheaper or what
     * eager does; NULL: none. */
    void (*fold)(const struct ax_simplify_view *v, ax_params *p, struct ax_ir_atom *in);
    /* Collectives (AX_PRIM_COLLECTIVE): what their shared batching rule and their composition
     * over several axis names read (compiler/collectives.h). */
    const struct ax_collective_rules *collective;
    /* Calls (pjit, custom_call): the body an equation runs, that native code inlines in its
     * place (ax_ir_eval_inlined: code is never differentiated, and the body fuses with the
     * rest), and which of the body's outputs the equation is (*out; -1: all, in order). NULL,
     * or a NULL body: the equation is bound as it is. */
    const struct ax_ir *(*inline_body)(const ax_params *p, int *out);
    /* Higher-order primitives: how many times an equation runs its sub-programs, for jit's
     * estimate of a call's work (scan: its length; while: unknown, INFINITY); NULL: once. */
    double (*runs)(const ax_params *p);
    /* Before devices run a program holding the equation (pmap): builds what they must not
     * build themselves (a call's native program), or refuses what cannot run there (a pmap
     * traced outside any pmap). 0, or -1 with an error; NULL: nothing to do. */
    int (*ready_for_devices)(ax_ctx *cx, const ax_params *p);
    /* How jit computes it: a loop operation or an eager step (never left zero). */
    ax_lowering lower;
    /* What the table's tests run its rules on; a row without examples names the tests that
     * check it instead (sub-programs and callbacks are no static data). */
    const ax_prim_example *examples;
    int nexamples;
    const char *tested_by;
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
/* reduce_sum ... reduce_or: the reductions over axes with one output (whose loops reduce). */
static inline bool ax_prim_is_reduction(ax_prim p) {
    return ax_kop_is_reduction(ax_prim_get(p)->lower.kop);
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

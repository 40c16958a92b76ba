/* Code generation: the LOOP and GEMM steps of a fusion plan (compiler/fuse.h) as native
 * functions, built with the libgccjit API in one context per program.
 *
 * Every step function has the signature of ax_step_fn: `bufs` holds the data pointers of the
 * buffers the step reads and writes (in the order ax_kernel_buffers gives, or lhs, rhs, out for
 * a GEMM), `fns` the runtime functions the code calls (AX_FN_*), and [lo, hi) the range of the
 * outermost loop this call runs, so the caller can split a loop over threads. */
#ifndef AX_CODEGEN_H
#define AX_CODEGEN_H

#include "gccjit.h"

#include "fuse.h"

/* Functions generated code calls through the `fns` table: OpenBLAS (opened at run time) and
 * ax's own scalar special functions. */
enum {
    AX_FN_SGEMM,
    AX_FN_DGEMM,
    AX_FN_ERF_INV_F32,
    AX_FN_ERF_INV_F64,
    AX_FN_LGAMMA_F32,
    AX_FN_LGAMMA_F64,
    AX_FN_DIGAMMA_F32,
    AX_FN_DIGAMMA_F64,
    AX_FN_COUNT
};

typedef void (*ax_step_fn)(char **bufs, void *const *fns, int64_t lo, int64_t hi);

/* Whether equation `e` (operand types `in`, result type `out`) can be part of a LOOP step:
 * elementwise operations, reductions and views on the dtypes code generation handles. */
bool ax_codegen_fusable(const ax_ir_eqn *e, const ax_aval *in, const ax_aval *out);
/* Whether a dot_general is a (batched) matrix product that a GEMM step can do. */
bool ax_codegen_gemm(const ax_ir_eqn *e, const ax_aval *lhs, const ax_aval *rhs);

/* The variables whose buffers a LOOP step's function takes, in order; returns how many
 * (at most 2 * k->nnodes). */
int ax_kernel_buffers(const ax_kernel *k, int *vars);
/* How a LOOP step's outermost loop may be split: its extent, the elements each of its
 * iterations touches, the granule a split must respect, and whether it may be split at all
 * (not when it runs over a reduced axis). */
typedef struct ax_loop_split {
    int64_t extent, work_per_iter, granule;
    bool splittable;
} ax_loop_split;
void ax_kernel_split(const ax_kernel *k, ax_loop_split *out);
/* A GEMM step's batch count (its function's range). */
int64_t ax_gemm_batches(const ax_plan *plan, int step);

/* The optimisation level: 2, or AX_JIT_OPT (0-3) when set. */
int ax_codegen_opt_level(void);
/* Sets the options generated code is compiled with: -O2, -march for this CPU, no errno,
 * no trapping math, no FMA contraction (so results equal the eager kernels'). */
void ax_codegen_options(const ax_gccjit *api, gcc_jit_context *ctx);
/* The target the options select ("x86-64-v4"...), for cache keys and logs. */
const char *ax_codegen_target(void);
/* Adds the function "s<N>" for every LOOP and GEMM step N of `plan` to `ctx`; false when out
 * of memory (ctx is then incomplete: release it). */
bool ax_codegen_build(const ax_gccjit *api, gcc_jit_context *ctx, const ax_plan *plan);

#endif

/* Code generation: the LOOP steps of a fusion plan (compiler/fuse.h) as native functions,
 * built with the libgccjit API in one context per program.
 *
 * Every step function has the signature of ax_step_fn: `bufs` holds the data pointers of the
 * buffers the step reads and writes (its slots in the code: ax_code_step.first_buf ..), `fns`
 * the runtime functions the code calls (AX_FN_*), and [lo, hi) the range of the outermost loop
 * this call runs, so the caller can split a loop over threads. */
#ifndef AX_CODEGEN_H
#define AX_CODEGEN_H

#include "gccjit.h"

#include "fuse.h"

/* Functions generated code calls through the `fns` table: ax's own scalar special
 * functions, and sin / cos of arguments beyond their vector range (ax_vecmath_trig_big). */
enum {
    AX_FN_ERF_INV_F32,
    AX_FN_ERF_INV_F64,
    AX_FN_LGAMMA_F32,
    AX_FN_LGAMMA_F64,
    AX_FN_DIGAMMA_F32,
    AX_FN_DIGAMMA_F64,
    AX_FN_TRIG_BIG_F32,
    AX_FN_COUNT
};

/* Bump when generated code changes, so that old cache entries are not used. */
#define AX_CODEGEN_VERSION "ax-codegen-13"

typedef void (*ax_step_fn)(char **bufs, void *const *fns, int64_t lo, int64_t hi);

/* Whether equation `e` (operand types `in`, result type `out`) can be part of a LOOP step:
 * elementwise operations, reductions and views on the dtypes code generation handles. */
bool ax_codegen_fusable(const ax_ir_eqn *e, const ax_aval *in, const ax_aval *out);

/* How a step's function is called: [0, extent) of its outermost loop, which may be split
 * into ranges at multiples of `granule` (not when it runs over a reduced axis), each
 * iteration touching work_per_iter elements. */
typedef struct ax_loop_split {
    int64_t extent, work_per_iter, granule;
    bool splittable;
} ax_loop_split;
void ax_codegen_split(const ax_code *code, int step, ax_loop_split *out);

/* Operations per piece function of a big loop (see codegen.c): 48, or AX_JIT_PIECE_WORK
 * when set (0: a loop is always one function). */
int ax_codegen_piece_work(void);
/* The optimisation level: 2, or AX_JIT_OPT (0-3) when set. */
int ax_codegen_opt_level(void);
/* Sets the options generated code is compiled with: -O2, -march for this CPU, no errno,
 * no trapping math, no FMA contraction (so results equal the eager kernels'). */
void ax_codegen_options(const ax_gccjit *api, gcc_jit_context *ctx);
/* The target the options select ("x86-64-v4"...), for cache keys and logs. */
const char *ax_codegen_target(void);
/* Adds the function "s<N>" for every LOOP step N of `code` to `ctx`. Reads nothing
 * but `code`. */
bool ax_codegen_build(const ax_gccjit *api, gcc_jit_context *ctx, const ax_code *code);

#endif

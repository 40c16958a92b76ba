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

/* The functions generated code calls through the `fns` table (AX_FN_*) are listed in
 * compiler/primitive.h, beside the lowerings that use them (and the loop nests' tile reads). */

/* Bump when generated code changes, so that old cache entries are not used. */
#define AX_CODEGEN_VERSION "ax-codegen-19-pf"

typedef void (*ax_step_fn)(char **bufs, void *const *fns, int64_t lo, int64_t hi);

/* Whether equation `e` (operand types `in`, result type `out`) can be part of a LOOP step:
 * elementwise operations, reductions and views on the dtypes code generation handles. */
bool ax_codegen_fusable(const ax_ir_eqn *e, const ax_aval *in, const ax_aval *out);

/* How LOOP step `step`'s function is called (ax_loop_split in fuse.h), as recorded in the
 * code when it was lowered; ax_codegen_choose_split chooses it, from the loop order the code
 * generator will build. */
void ax_codegen_split(const ax_code *code, int step, ax_loop_split *out);
void ax_codegen_choose_split(const ax_code *code, int step, ax_loop_split *out);
/* The dim of LOOP step `step` whose range [lo, hi) its function is called with (the outermost
 * loop of the nest). */
int ax_codegen_outer_dim(const ax_code *code, int step);

/* How load `node` (counted from the step's first) of LOOP step `step` reads its lanes: in
 * the lane loops (contiguous or broadcast along them), through a tile (runtime/tile.h:
 * strided loads and bools), or gathered before the lane loops. */
typedef enum { AX_LOAD_DIRECT, AX_LOAD_TILE, AX_LOAD_GATHER } ax_load_access;
ax_load_access ax_codegen_load_access(const ax_code *code, int step, int node);

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
/* Adds the function "s<N>" for every LOOP step N of `code` to `ctx`. Reads `code` and the
 * lowerings of its primitives (compiler/primitive.h). False when out of memory, or with the
 * reason in `why` when the code holds an operation it has no code for (an internal error). */
bool ax_codegen_build(const ax_gccjit *api, gcc_jit_context *ctx, const ax_code *code, char *why,
                      size_t whylen);

#endif

/* How a native program runs its CONTROL steps (cond, while, scan: compiler/fuse.h). Each
 * sub-program was fused into a plan of its own whose LOOP steps are compiled with the program;
 * here a loop runs them over a frame — one data pointer per variable of the sub-program — so an
 * iteration costs a few function calls and no allocation: the carry lives in two buffers that
 * swap, each x_i and y_i is read and written in place in xs and ys, and the values a step makes
 * live in one scratch block allocated when the loop starts. EAGER steps of a sub-program run
 * their kernel on arrays that borrow the frame's buffers. */
#ifndef AX_JIT_LOOPS_H
#define AX_JIT_LOOPS_H

#include "codegen.h"

/* What running a step needs from the program: its functions (by step of the whole code) and
 * the runtime functions the code calls. */
typedef struct ax_jit_fns {
    ax_step_fn *fn;
    void *const *fns;
} ax_jit_fns;

/* Runs CONTROL step `st` of `plan` (whose sub-programs' steps start at `base` + st->sub_base
 * in the program's code) on operands in[] (data pointers, contiguous, one per operand of the
 * equation) into outputs out[] (allocated by the caller). 0, or -1 with an error. */
int ax_jit_run_control(ax_ctx *cx, const ax_jit_fns *f, const ax_plan *plan, const ax_step *st,
                       int base, char *const *in, char *const *out);

/* Runs LOOP step `s` of `code` with its buffers, split over the pool when it is big. Outputs
 * of AX_STREAM_MIN_BYTES or more (runtime/elementwise.h) are written a tile at a time and
 * copied out with non-temporal stores, when the loop has no reductions and writes them in
 * order (ax_jit_loop_streams). */
void ax_jit_run_loop(ax_ctx *cx, ax_step_fn fn, const ax_code *code, int s, char **bufs,
                     void *const *fns);
bool ax_jit_loop_streams(const ax_code *code, int s);

#endif

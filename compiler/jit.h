/* Native programs: a simplified IR fused (compiler/fuse.h), compiled with libgccjit
 * (compiler/codegen.h, in a child process: compiler/jit_job.h) or loaded from the disk cache
 * (compiler/jit_cache.h), and run; until GCC's code is ready, on code the quick tier renders
 * in microseconds (compiler/quickgen.h).
 *
 * When native code cannot be built (no assembler on PATH, a libgccjit error) ax warns once
 * and the program runs its IR on the eager kernels instead: same results, slower. */
#ifndef AX_JIT_H
#define AX_JIT_H

#include "../runtime/format.h"
#include "ir.h"

typedef struct ax_jit_program ax_jit_program;

/* How a program came to be, for AX_LOG_COMPILES and tests. */
typedef struct ax_jit_info {
    bool native;                        /* false: runs on the eager kernels */
    bool from_disk;                     /* loaded from the disk cache */
    bool background;                    /* compiled (or compiling) in the background */
    bool compiling;                     /* background: not ended yet (queued or running) */
    int eager_calls;                    /* background: calls run on the eager kernels meanwhile */
    bool quick;                         /* the quick tier's code runs it until GCC's is ready */
    int quick_calls;                    /* calls run on the quick tier's code */
    int nvariants;                      /* layout variants built (compiler/jit_layout.h) */
    double build_ms;                    /* fusing + code generation + compiling or loading */
    int nsteps, nloops, ngemms, neager; /* ngemms: matrix products (eager steps on OpenBLAS) */
    uint64_t key;
} ax_jit_info;

/* Builds the program for `ir` (retained). NULL when out of memory, or with KeyboardInterrupt
 * when Ctrl-C (cx->interrupt) abandoned its compile: compiles run in a child process that is
 * killed then, so the call returns at once. */
ax_jit_program *ax_jit_build(ax_ctx *cx, ax_ir *ir);
/* The same, tiered: on a miss of both caches the program runs at once on the quick tier's
 * code (compiler/quickgen.h; the eager kernels when it has a loop the quick tier does not
 * render) while GCC compiles its code in the background (a child process); a call after the
 * compile ended runs GCC's code. AX_JIT_SYNC=1, or a program one call of which could outlast
 * its compile on the eager kernels (loops, large arrays), waits as ax_jit_build does.
 * AX_JIT_QUICK=0 leaves the quick tier out; AX_JIT_QUICK=only runs its code alone (both
 * functions). */
ax_jit_program *ax_jit_start(ax_ctx *cx, ax_ir *ir);
void ax_jit_free(ax_jit_program *p);
/* Ends the program's background compile now: starts it if it waits in the queue, waits for
 * it and installs the code (or, if it fails, leaves the program on the eager kernels with the
 * warning). For a program about to run under other contexts, which only read it. 0, or -1
 * with KeyboardInterrupt when Ctrl-C stopped the wait (the compile goes on). */
int ax_jit_ready(ax_ctx *cx, ax_jit_program *p);
const ax_jit_info *ax_jit_program_info(const ax_jit_program *p);
/* Runs on concrete arrays (nin of them); fills outs[0..nout) with new references. Under the
 * context that built the program, a call may change it (install its finished compile, build a
 * layout variant); under any other (pmap's devices, which run it on several threads at once)
 * it only reads it, running the native code if it has it, else the eager kernels. */
int ax_jit_run(ax_ctx *cx, ax_jit_program *p, ax_array **args, ax_array **outs);
/* Appends the steps of the program (fusion groups) to `out`. */
void ax_jit_format_plan(ax_strbuf *out, const ax_jit_program *p);
/* Appends the C-like dump of the generated code (gcc_jit_context_dump_to_file). 0, or -1 with
 * an error when there is no native code to show. */
int ax_jit_dump_c(ax_ctx *cx, const ax_jit_program *p, ax_strbuf *out);
/* Whether AX_LOG_COMPILES is set (read once per context). */
bool ax_jit_logging(ax_ctx *cx);

#endif

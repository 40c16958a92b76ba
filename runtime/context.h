/* The runtime context: the one place that holds mutable state (pending error, options, the
 * thread pool, the BLAS handle, the trace stack). Everything that can fail takes it. */
#ifndef AX_CONTEXT_H
#define AX_CONTEXT_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include "error.h"

struct ax_pool;
struct ax_blas;
struct ax_trace_state;
struct ax_parallel;

typedef struct ax_ctx {
    ax_error_info err;
    bool x64; /* default float f64 and default int i64, like jax_enable_x64 */
    volatile sig_atomic_t interrupt; /* set by the SIGINT handler; polled by loops and kernels */
    struct ax_pool *pool;            /* worker threads, created on first large kernel */
    struct ax_blas *blas;            /* OpenBLAS, opened on first matrix product */
    struct ax_trace_state *traces;   /* the stack of active transformations (compiler/) */
    uint64_t trace_ids;              /* source of unique trace ids (compiler/trace.c) */
    int threads;                     /* number of worker threads to use (0: from the machine) */
    struct ax_alloc_cache *alloc;    /* reused array headers and small buffers (array.c) */
    void *jit;                       /* the native compiler's state (compiler/jit.c), or NULL */
    void (*jit_free)(void *jit);
    int ndevices;                    /* --devices N (0: AX_DEVICES, else one per core) */
    struct ax_parallel *parallel;    /* devices, processes, named axes (runtime/device.h) */
    int64_t step_budget; /* interrupt checks left before a RuntimeError, so that a fuzzed
                            program cannot loop forever (tests/fuzz); 0: no limit */
} ax_ctx;

/* Recursive walks over nested values (pytree flattening, `==` on containers) stop at this
 * depth with a RecursionError, as Python's recursion limit stops them: the C stack stays
 * bounded whatever a program builds (documented in docs/reference.md). */
#define AX_MAX_VALUE_DEPTH 1000

ax_ctx *ax_ctx_new(void);
void ax_ctx_free(ax_ctx *cx);

/* Ctrl-C. While the REPL runs, its SIGINT handler sets cx->interrupt; every loop that can run
 * long in C polls it and stops, and the session goes on with a KeyboardInterrupt:
 *
 *   ax_ctx_interrupted(cx)      true while a Ctrl-C is pending. One load, records nothing, safe
 *                               from any thread (a pool worker, a compile thread): the loop stops
 *                               early and lets the thread that owns cx report it. A kernel polls it
 *                               between chunks of work (every ~1 ms of work is plenty).
 *   ax_ctx_take_interrupt(cx)   on the owning thread: when a Ctrl-C is pending, records
 *                               KeyboardInterrupt (AX_ERR_INTERRUPT), clears the flag and returns
 *                               true, so `if (ax_ctx_take_interrupt(cx)) return NULL;`.
 *   ax_ctx_check_interrupt(cx)  the same for a step of a loop or a call: it also spends
 *                               cx->step_budget when one is set, RuntimeError (and true) once it
 *                               is spent.
 *
 * A typical kernel: `for (chunk...) { if (ax_ctx_interrupted(cx)) break; ... }` and then, on the
 * owning thread, `if (ax_ctx_take_interrupt(cx)) { release the output; return NULL; }`. Every
 * eager primitive also takes a pending Ctrl-C before and after its kernel (ax_bind), so a chain
 * of operations stops at the next one, and one whose kernel did not poll drops its result. */
static inline bool ax_ctx_interrupted(const ax_ctx *cx) {
    return cx && cx->interrupt;
}
bool ax_ctx_take_interrupt(ax_ctx *cx);
bool ax_ctx_check_interrupt(ax_ctx *cx);

#endif

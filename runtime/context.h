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
    int64_t step_budget; /* interrupt checks left before a RuntimeError, so that a fuzzed
                            program cannot loop forever (tests/fuzz); 0: no limit */
} ax_ctx;

ax_ctx *ax_ctx_new(void);
void ax_ctx_free(ax_ctx *cx);

/* True (and records AX_ERR_INTERRUPT) when Ctrl-C was pressed since the last check, or
 * (AX_ERR_RUNTIME) when cx->step_budget ran out; every loop iteration and call checks. */
bool ax_ctx_check_interrupt(ax_ctx *cx);

#endif

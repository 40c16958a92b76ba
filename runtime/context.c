/* The runtime context. */
#include "context.h"

#include <stdlib.h>

#include "array.h"
#include "blas.h"
#include "device.h"
#include "pool.h"

ax_ctx *ax_ctx_new(void) {
    ax_ctx *cx = calloc(1, sizeof *cx);
    if (cx) cx->alloc = ax_alloc_cache_new(); /* NULL only makes allocation slower */
    return cx;
}

void ax_ctx_free(ax_ctx *cx) {
    if (!cx) return;
    ax_error_clear(cx);
    ax_parallel_free(cx->parallel); /* first: its devices may hold the BLAS lent to them */
    ax_pool_free(cx->pool);
    ax_blas_free(cx->blas);
    cx->blas = NULL; /* the jit's end (below) must not touch it */
    if (cx->jit_free) cx->jit_free(cx->jit);
    ax_alloc_cache_close(cx->alloc);
    free(cx);
}

bool ax_ctx_take_interrupt(ax_ctx *cx) {
    if (!cx->interrupt) return false;
    cx->interrupt = 0;
    ax_error(cx, AX_ERR_INTERRUPT, "interrupted");
    return true;
}

bool ax_ctx_check_interrupt(ax_ctx *cx) {
    if (cx->step_budget > 0 && --cx->step_budget == 0) {
        cx->step_budget = 1; /* stays spent: the next check fails too */
        ax_error(cx, AX_ERR_RUNTIME, "the step budget is spent (loops and calls are limited)");
        return true;
    }
    return ax_ctx_take_interrupt(cx);
}

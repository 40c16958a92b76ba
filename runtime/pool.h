/* A thread pool sized from the machine, for splitting large kernels. */
#ifndef AX_POOL_H
#define AX_POOL_H

#include <stdint.h>

#include "context.h"

struct ax_pool;

/* Calls fn(arg, begin, end) over [0, n) split into contiguous chunks of at least `grain`
 * items, on the pool's threads and the caller's. Runs inline when n < 2 * grain or the pool
 * has one thread. Returns when every chunk is done. */
void ax_parallel_for(ax_ctx *cx, int64_t n, int64_t grain,
                     void (*fn)(void *arg, int64_t begin, int64_t end), void *arg);
int ax_pool_threads(ax_ctx *cx);
void ax_pool_free(struct ax_pool *pool);

#endif

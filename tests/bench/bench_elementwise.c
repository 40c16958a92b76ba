/* Micro benchmark of the elementwise kernels against memcpy (not run by the tests).
 *
 *   bench_elementwise [n]      (default n = 100M f32 elements)
 *
 * Prints medians of 7 runs: memory bandwidth as GB/s counting bytes read + bytes written,
 * and throughput as Gelem/s. "fresh" rows allocate their output each run, as the eager
 * interpreter does, so they include the first-touch page faults of a new buffer. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../runtime/elementwise.h"
#include "../../runtime/pool.h"
#include "bench_util.h"

typedef struct bench {
    ax_ctx *cx;
    ax_array *x;
    void *dst; /* pre-faulted memcpy target */
    int64_t n;
} bench;

/* Times one run of `what`; the output is released outside the timed region. */
static double time_memcpy(bench *b) {
    double t = now();
    memcpy(b->dst, ax_array_data(b->x), (size_t)b->n * sizeof(float));
    return now() - t;
}

/* array.c's copy into a new buffer: what a fresh output costs without huge pages. */
static double time_copy(bench *b) {
    double t = now();
    ax_array *y = ax_array_copy(b->cx, b->x);
    t = now() - t;
    ax_array_release(y);
    return t;
}

static double time_binary(bench *b) {
    double t = now();
    ax_array *y = ax_binary(b->cx, AX_MUL, b->x, b->x);
    t = now() - t;
    ax_array_release(y);
    return t;
}

static double time_binary_in_place(bench *b) {
    ax_array *tmp = ax_array_copy(b->cx, b->x);
    ax_array_retain(tmp); /* x * x: both operand references are handed over */
    double t = now();
    ax_array *y = ax_binary_take(b->cx, AX_MUL, tmp, tmp);
    t = now() - t;
    ax_array_release(y);
    return t;
}

static double time_exp(bench *b) {
    double t = now();
    ax_array *y = ax_unary(b->cx, AX_EXP, b->x);
    t = now() - t;
    ax_array_release(y);
    return t;
}

static double run(bench *b, double (*fn)(bench *)) {
    double t[RUNS];
    fn(b); /* warm up */
    for (int i = 0; i < RUNS; i++) t[i] = fn(b);
    return median(t);
}

/* exp on a cache-resident array, repeated: the compute throughput of one thread. */
static double exp_in_cache(ax_ctx *cx) {
    int64_t n = 1 << 14; /* below the pool's threshold: runs on the calling thread */
    ax_array *x = ax_array_new(cx, AX_F32, 1, &n);
    float *p = ax_array_data(x);
    for (int64_t i = 0; i < n; i++) p[i] = -20.0f + 40.0f * (float)i / (float)n;
    double t[RUNS];
    for (int r = 0; r < RUNS; r++) {
        double t0 = now();
        for (int k = 0; k < 200; k++) ax_array_release(ax_unary(cx, AX_EXP, x));
        t[r] = (now() - t0) / 200;
    }
    ax_array_release(x);
    return (double)n / median(t) / 1e9;
}

int main(int argc, char **argv) {
    int64_t n = argc > 1 ? atoll(argv[1]) : 100000000;
    ax_ctx *cx = ax_ctx_new();
    bench b = {.cx = cx, .n = n};
    b.x = ax_array_new(cx, AX_F32, 1, &n);
    b.dst = malloc((size_t)n * sizeof(float));
    if (!b.x || !b.dst) {
        fprintf(stderr, "out of memory\n");
        return 1;
    }
    float *px = ax_array_data(b.x);
    for (int64_t i = 0; i < n; i++) px[i] = (float)(i % 1000) * 0.01f - 5.0f;
    memset(b.dst, 0, (size_t)n * sizeof(float));

    double bytes = 2.0 * (double)n * sizeof(float);
    printf("n = %lld f32, %d threads\n", (long long)n, ax_pool_threads(cx));
    double t_memcpy = run(&b, time_memcpy);
    printf("memcpy (1 thread, pre-faulted dst)  %7.2f GB/s\n", bytes / t_memcpy / 1e9);
    double t_copy = run(&b, time_copy);
    printf("ax_array_copy (1 thread, fresh dst) %7.2f GB/s\n", bytes / t_copy / 1e9);
    double t_mul = run(&b, time_binary);
    printf("x * x  (fresh output)               %7.2f GB/s  (%.2fx memcpy)\n", bytes / t_mul / 1e9,
           t_memcpy / t_mul);
    double t_mul_ip = run(&b, time_binary_in_place);
    printf("x * x  (in place, consume)          %7.2f GB/s  (%.2fx memcpy)\n",
           bytes / t_mul_ip / 1e9, t_memcpy / t_mul_ip);
    double t_exp = run(&b, time_exp);
    printf("exp(x) (fresh output)               %7.2f Gelem/s\n", (double)n / t_exp / 1e9);
    cx->threads = 1;
    ax_pool_free(cx->pool);
    cx->pool = NULL;
    double t_exp1 = run(&b, time_exp);
    printf("exp(x) (fresh output, 1 thread)     %7.2f Gelem/s\n", (double)n / t_exp1 / 1e9);
    printf("exp(x) (16K in cache, 1 thread)     %7.2f Gelem/s\n", exp_in_cache(cx));

    free(b.dst);
    ax_array_release(b.x);
    ax_ctx_free(cx);
    return 0;
}

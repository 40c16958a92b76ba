/* Micro benchmark of reductions, eager (ax_reduce) and jitted (native loops), against memcpy
 * (not run by the tests).
 *
 *   bench_reduce [n] [threads]   (default n = 32M f32 elements; threads: the pool's default)
 *
 * Prints medians of 7 runs as GB/s of input read (memcpy: of bytes read, so the rows compare
 * times for the same input), and each row's time relative to memcpy's. The jitted rows build
 * one-equation programs (or sum(exp(x - m)) fused into one pass) with the jit cache in a
 * temporary directory. */
// bench-args: 33554432
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../../compiler/jit.h"
#include "../../runtime/pool.h"
#include "../../runtime/reduce.h"
#include "bench_util.h"

typedef struct shape_case {
    const char *name;
    int ndim;
    int64_t shape[2];
    int naxes, axes[2];
} shape_case;

static double time_memcpy(const float *src, float *dst, int64_t n) {
    double t[RUNS];
    for (int r = 0; r < RUNS; r++) {
        double t0 = now();
        memcpy(dst, src, (size_t)n * sizeof *src);
        t[r] = now() - t0;
    }
    return median(t);
}

static double time_eager(ax_ctx *cx, ax_array *x, const shape_case *c) {
    double t[RUNS];
    for (int r = 0; r < RUNS; r++) {
        double t0 = now();
        ax_array *y = ax_reduce(cx, AX_REDUCE_SUM, x, c->naxes, c->axes);
        t[r] = now() - t0;
        ax_array_release(y);
    }
    return median(t);
}

/* sum over the case's axes, or (fused) sum(exp(x - 1), axes) */
static ax_ir *reduce_ir(ax_ctx *cx, const ax_aval *in, const shape_case *c, bool fused) {
    ax_ir_builder *b = ax_ir_builder_new();
    int x = ax_ir_add_input(b, in), v = x;
    if (fused) {
        ax_ir_atom one = {.var = -1, .lit = ax_array_scalar(cx, AX_F32, 1.0)};
        if (!one.lit) return NULL;
        ax_ir_add_eqn(b, AX_P_SUB, &(ax_params){0}, 2, (ax_ir_atom[]){{.var = x}, one}, 1, in, &v,
                      0, NULL);
        ax_array_release(one.lit);
        ax_ir_add_eqn(b, AX_P_EXP, &(ax_params){0}, 1, &(ax_ir_atom){.var = v}, 1, in, &v, 0, NULL);
    }
    ax_aval out = {.dtype = AX_F32};
    for (int d = 0; d < in->ndim; d++) {
        bool red = false;
        for (int i = 0; i < c->naxes; i++) red |= c->axes[i] == d;
        if (!red) out.shape[out.ndim++] = in->shape[d];
    }
    ax_params p = {.naxes = c->naxes};
    memcpy(p.axes, c->axes, sizeof c->axes);
    int y;
    ax_ir_add_eqn(b, AX_P_REDUCE_SUM, &p, 1, &(ax_ir_atom){.var = v}, 1, &out, &y, 0, NULL);
    return ax_ir_builder_finish(b, 1, &(ax_ir_atom){.var = y});
}

static double time_jit(ax_ctx *cx, ax_array *x, const shape_case *c, bool fused) {
    ax_aval in;
    ax_aval_of(&in, x);
    ax_ir *ir = reduce_ir(cx, &in, c, fused);
    ax_jit_program *p = ir ? ax_jit_build(cx, ir) : NULL;
    if (!p || !ax_jit_program_info(p)->native) {
        fprintf(stderr, "no native code for %s\n", c->name);
        exit(1);
    }
    double t[RUNS];
    for (int r = 0; r < RUNS; r++) {
        ax_array *y = NULL;
        double t0 = now();
        if (ax_jit_run(cx, p, &x, &y)) exit(1);
        t[r] = now() - t0;
        ax_array_release(y);
    }
    ax_jit_free(p);
    ax_ir_release(ir);
    return median(t);
}

int main(int argc, char **argv) {
    int64_t n = argc > 1 ? atoll(argv[1]) : 33554432;
    ax_ctx *cx = ax_ctx_new();
    if (argc > 2) cx->threads = atoi(argv[2]);
    char dir[] = "/tmp/ax-bench-reduce-XXXXXX";
    if (!mkdtemp(dir)) return 1;
    setenv("XDG_CACHE_HOME", dir, 1);
    n = n / 16000 * 16000;
    ax_array *flat = ax_array_new(cx, AX_F32, 1, &n);
    float *dst = malloc((size_t)n * sizeof *dst);
    if (!flat || !dst) {
        fprintf(stderr, "out of memory\n");
        return 1;
    }
    float *px = ax_array_data(flat);
    for (int64_t i = 0; i < n; i++) px[i] = (float)(i % 1000) * 0.001f - 0.5f;
    memset(dst, 0, (size_t)n * sizeof *dst);
    const shape_case cases[] = {
        {"sum(x)", 1, {n}, 1, {0}},
        {"sum(x, axis=1) [n/1000, 1000]", 2, {n / 1000, 1000}, 1, {1}},
        {"sum(x, axis=0) [n/1000, 1000]", 2, {n / 1000, 1000}, 1, {0}},
        {"sum(x, axis=1) [n/10, 10]", 2, {n / 10, 10}, 1, {1}},
        {"sum(x) [n/10, 10]", 2, {n / 10, 10}, 2, {0, 1}},
        {"sum(x, axis=0) [n/16000, 16000]", 2, {n / 16000, 16000}, 1, {0}},
    };
    double bytes = (double)n * sizeof(float);
    double t_memcpy = time_memcpy(px, dst, n);
    printf("n = %lld f32, %d threads\n", (long long)n, ax_pool_threads(cx));
    printf("%-36s %7.2f GB/s read (%.2f GB/s read + write)\n", "memcpy (1 thread)",
           bytes / t_memcpy / 1e9, 2 * bytes / t_memcpy / 1e9);
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const shape_case *c = &cases[i];
        int64_t strides[2] = {c->ndim == 2 ? c->shape[1] : 1, 1};
        ax_array *x = ax_array_view(cx, flat, c->ndim, c->shape, strides, 0);
        double te = time_eager(cx, x, c), tj = time_jit(cx, x, c, false);
        printf("%-36s eager %6.2f GB/s (%.2fx memcpy's time)   jit %6.2f GB/s (%.2fx)\n", c->name,
               bytes / te / 1e9, te / t_memcpy, bytes / tj / 1e9, tj / t_memcpy);
        ax_array_release(x);
    }
    ax_array *x2 = ax_array_view(cx, flat, 2, cases[1].shape, (int64_t[]){1000, 1}, 0);
    double tf = time_jit(cx, x2, &cases[1], true);
    printf("%-36s jit %6.2f GB/s, %.2f Gelem/s (one pass)\n", "sum(exp(x - 1), axis=1)",
           bytes / tf / 1e9, (double)n / tf / 1e9);
    ax_array_release(x2);
    free(dst);
    ax_array_release(flat);
    ax_ctx_free(cx);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    return system(cmd) == 0 ? 0 : 1;
}

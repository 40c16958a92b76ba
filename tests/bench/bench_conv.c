/* The convolution kernels against OpenBLAS sgemm on the same machine: the three convolutions of
 * a 3x3 conv layer's training step (batch 32, 28x28, 16 -> 32 channels, NHWC / HWIO, SAME
 * padding): forward, the kernel gradient and the input gradient, as the transpose rules emit
 * them, each with its GFLOP/s; and sgemm on the shape of the forward's im2col product
 * (25088 x 144 times 144 x 32) and on a large square. Medians of `reps` calls, on `threads`
 * threads (default: the machine's).
 *   build/bench/bench_conv [reps [threads]]       (default 30) */
// bench-args: 30
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../compiler/conv_rules.h"
#include "../../runtime/blas.h"
#include "../../runtime/pool.h"

static double seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static ax_array *filled(ax_ctx *cx, int n, const int64_t *shape, unsigned seed) {
    ax_array *a = ax_array_new(cx, AX_F32, n, shape);
    if (!a) return NULL;
    float *p = a->buf->data;
    for (int64_t i = 0; i < a->size; i++) {
        seed = seed * 1103515245u + 12345u;
        p[i] = (float)((seed >> 16) & 0x7fff) / 32768.0f - 0.5f;
    }
    return a;
}

static int compare(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *t, int n) {
    qsort(t, (size_t)n, sizeof *t, compare);
    return t[n / 2];
}

/* Median seconds of conv(l, r) with params p. */
static double time_conv(ax_ctx *cx, ax_array *l, ax_array *r, const ax_params *p, int reps) {
    double *t = malloc((size_t)reps * sizeof *t);
    for (int i = -2; i < reps; i++) {
        double t0 = seconds();
        ax_array *o = ax_bind1(cx, AX_P_CONV_GENERAL_DILATED, 2, (ax_array *[]){l, r}, p);
        double dt = seconds() - t0;
        if (!o) {
            ax_error_print(cx, stderr);
            exit(1);
        }
        ax_array_release(o);
        if (i >= 0) t[i] = dt;
    }
    double m = median(t, reps);
    free(t);
    return m;
}

static double time_sgemm(ax_ctx *cx, int m, int n, int k, int reps) {
    ax_blas *blas = ax_blas_get(cx);
    ax_array *a = filled(cx, 2, (int64_t[]){m, k}, 1), *b = filled(cx, 2, (int64_t[]){k, n}, 2);
    ax_array *c = filled(cx, 2, (int64_t[]){m, n}, 3);
    double *t = malloc((size_t)reps * sizeof *t);
    for (int i = -2; i < reps; i++) {
        double t0 = seconds();
        blas->sgemm(AX_CBLAS_ROW_MAJOR, AX_CBLAS_NO_TRANS, AX_CBLAS_NO_TRANS, m, n, k, 1.0f,
                    a->buf->data, k, b->buf->data, n, 0.0f, c->buf->data, n);
        if (i >= 0) t[i] = seconds() - t0;
    }
    double med = median(t, reps);
    free(t);
    ax_array_release(a), ax_array_release(b), ax_array_release(c);
    return med;
}

static void set_specs(ax_params *p, const int *l, const int *r, const int *o) {
    memcpy(p->conv.lhs_spec, l, 4 * sizeof *l);
    memcpy(p->conv.rhs_spec, r, 4 * sizeof *r);
    memcpy(p->conv.out_spec, o, 4 * sizeof *o);
    p->lo[0] = p->lo[1] = p->hi[0] = p->hi[1] = 1;
}

int main(int argc, char **argv) {
    int reps = argc > 1 ? atoi(argv[1]) : 30;
    if (reps < 1) reps = 1;
    ax_ctx *cx = ax_ctx_new();
    if (argc > 2) cx->threads = atoi(argv[2]);
    ax_array *x = filled(cx, 4, (int64_t[]){32, 28, 28, 16}, 4);
    ax_array *w = filled(cx, 4, (int64_t[]){3, 3, 16, 32}, 5);
    ax_array *g = filled(cx, 4, (int64_t[]){32, 28, 28, 32}, 6);
    ax_array *wr = filled(cx, 4, (int64_t[]){3, 3, 16, 32}, 7);
    if (!x || !w || !g || !wr || !ax_blas_get(cx)) {
        ax_error_print(cx, stderr);
        return 1;
    }
    static const int nhwc[4] = {0, 3, 1, 2}, hwio[4] = {3, 2, 0, 1}, cnhw[4] = {3, 0, 1, 2},
                     iohw[4] = {2, 3, 0, 1}, oihw_t[4] = {2, 3, 0, 1};
    ax_params fwd, wgrad, dgrad;
    ax_conv_params_init(&fwd, 4);
    set_specs(&fwd, nhwc, hwio, nhwc);
    ax_conv_params_init(&wgrad, 4); /* transpose_rhs: lhs (C, N, H, W), rhs = g, out HWIO */
    set_specs(&wgrad, cnhw, cnhw, iohw);
    ax_conv_params_init(&dgrad, 4); /* transpose_lhs: g with the reversed kernel, out NHWC */
    set_specs(&dgrad, nhwc, oihw_t, nhwc);
    double flops = 2.0 * 32 * 28 * 28 * 32 * 3 * 3 * 16;
    double tf = time_conv(cx, x, w, &fwd, reps);
    double tw = time_conv(cx, x, g, &wgrad, reps);
    double td = time_conv(cx, g, wr, &dgrad, reps);
    double ts = time_sgemm(cx, 32 * 28 * 28, 32, 144, reps);
    double tq = time_sgemm(cx, 1024, 1024, 1024, reps > 5 ? 5 : reps);
    printf("3x3 conv, batch 32, 28x28, 16 -> 32, NHWC, f32, %d threads (medians of %d):\n",
           ax_pool_threads(cx), reps);
    printf("  forward          %7.3f ms  %6.1f GFLOP/s\n", tf * 1e3, flops / tf / 1e9);
    printf("  kernel gradient  %7.3f ms  %6.1f GFLOP/s\n", tw * 1e3, flops / tw / 1e9);
    printf("  input gradient   %7.3f ms  %6.1f GFLOP/s\n", td * 1e3, flops / td / 1e9);
    printf("  sgemm 25088x144 . 144x32   %7.3f ms  %6.1f GFLOP/s\n", ts * 1e3, flops / ts / 1e9);
    printf("  sgemm 1024^3               %7.3f ms  %6.1f GFLOP/s\n", tq * 1e3,
           2.0 * 1024 * 1024 * 1024 / tq / 1e9);
    ax_array_release(x), ax_array_release(w), ax_array_release(g), ax_array_release(wr);
    ax_ctx_free(cx);
    return 0;
}

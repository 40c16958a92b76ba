/* dot_general against a direct cblas_sgemm on the same operands, in the same process.
 *   gcc -std=c11 -D_GNU_SOURCE -O2 -pthread -o /tmp/bench_linalg tests/bench/bench_linalg.c \
 *       runtime/linalg.c runtime/blas.c runtime/array.c runtime/dtype.c runtime/error.c \
 *       runtime/context.c runtime/pool.c -lm -ldl
 *   /tmp/bench_linalg [n] [reps]       (default 3000, 5) */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "../../runtime/blas.h"
#include "../../runtime/linalg.h"

static double seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static ax_array *filled(ax_ctx *cx, int64_t n, unsigned seed) {
    ax_array *a = ax_array_new(cx, AX_F32, 2, (int64_t[]){n, n});
    if (!a) return NULL;
    float *p = a->buf->data;
    for (int64_t i = 0; i < n * n; i++) {
        seed = seed * 1103515245u + 12345u;
        p[i] = (float)((seed >> 16) & 0x7fff) / 32768.0f - 0.5f;
    }
    return a;
}

int main(int argc, char **argv) {
    int64_t n = argc > 1 ? atoll(argv[1]) : 3000;
    int reps = argc > 2 ? atoi(argv[2]) : 5;
    ax_ctx *cx = ax_ctx_new();
    ax_array *a = filled(cx, n, 1), *b = filled(cx, n, 2),
             *c = ax_array_zeros(cx, AX_F32, 2, (int64_t[]){n, n});
    ax_blas *blas = ax_blas_get(cx);
    if (!a || !b || !c || !blas) {
        ax_error_print(cx, stderr);
        return 1;
    }
    ax_dot_dims dims = {.ncontract = 1, .lhs_contract = {1}, .rhs_contract = {0}};
    double flops = 2.0 * (double)n * (double)n * (double)n, best_direct = 1e30, best_dot = 1e30;
    for (int r = 0; r < reps + 1; r++) { /* the first round warms up threads and pages */
        double t = seconds();
        blas->sgemm(AX_CBLAS_ROW_MAJOR, AX_CBLAS_NO_TRANS, AX_CBLAS_NO_TRANS, (int)n, (int)n,
                    (int)n, 1.0f, a->buf->data, (int)n, b->buf->data, (int)n, 0.0f, c->buf->data,
                    (int)n);
        t = seconds() - t;
        if (r && t < best_direct) best_direct = t;
        t = seconds();
        ax_array *d = ax_dot_general(cx, a, b, &dims);
        t = seconds() - t;
        if (!d) {
            ax_error_print(cx, stderr);
            return 1;
        }
        ax_array_release(d);
        if (r && t < best_dot) best_dot = t;
    }
    const char *core = getenv("OPENBLAS_CORETYPE");
    printf("%lldx%lld f32, OPENBLAS_CORETYPE=%s: cblas_sgemm %.1f GFLOP/s, dot_general %.1f "
           "GFLOP/s, ratio %.3f\n",
           (long long)n, (long long)n, core ? core : "(unset)", flops / best_direct / 1e9,
           flops / best_dot / 1e9, best_direct / best_dot);
    ax_array_release(a);
    ax_array_release(b);
    ax_array_release(c);
    ax_ctx_free(cx);
    return 0;
}

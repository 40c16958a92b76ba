/* dot_general against direct OpenBLAS calls on the same operands, in the same process: best
 * wall time of `reps` calls after one warm-up call (threads started, pages touched).
 *   a @ b      dot_general vs cblas_sgemm (NoTrans, NoTrans)
 *   a @ a.T    dot_general (which calls ssyrk and mirrors the triangle) vs cblas_ssyrk alone
 *              and vs cblas_sgemm (NoTrans, Trans), the call a plain product would make
 *   a.T @ b    dot_general on the transposed view vs cblas_sgemm (Trans, NoTrans)
 * Usage: build/bench/bench_linalg [n] [reps]       (default 3000, 5) */
// bench-args: 3000 5
#include <stdio.h>
#include <stdlib.h>

#include "../../runtime/blas.h"
#include "../../runtime/linalg.h"
#include "../../runtime/shape_ops.h"
#include "bench_util.h"

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

typedef struct bench {
    ax_ctx *cx;
    ax_blas *blas;
    ax_array *a, *b, *at, *c; /* at: a transposed view of a */
    int n;
    bool failed;
} bench;

typedef void (*bench_fn)(bench *b, int which);

static double best_of(bench *b, int reps, bench_fn fn, int which) {
    double best = 1e30;
    for (int r = 0; r < reps + 1; r++) {
        double t = now();
        fn(b, which);
        t = now() - t;
        if (r && t < best) best = t;
    }
    return best;
}

static void direct(bench *b, int which) {
    float *a = b->a->buf->data, *bb = b->b->buf->data, *c = b->c->buf->data;
    int n = b->n;
    if (which == 0)
        b->blas->sgemm(AX_CBLAS_ROW_MAJOR, AX_CBLAS_NO_TRANS, AX_CBLAS_NO_TRANS, n, n, n, 1.0f, a,
                       n, bb, n, 0.0f, c, n);
    else if (which == 1)
        b->blas->ssyrk(AX_CBLAS_ROW_MAJOR, AX_CBLAS_UPPER, AX_CBLAS_NO_TRANS, n, n, 1.0f, a, n,
                       0.0f, c, n);
    else if (which == 2)
        b->blas->sgemm(AX_CBLAS_ROW_MAJOR, AX_CBLAS_NO_TRANS, AX_CBLAS_TRANS, n, n, n, 1.0f, a, n,
                       a, n, 0.0f, c, n);
    else
        b->blas->sgemm(AX_CBLAS_ROW_MAJOR, AX_CBLAS_TRANS, AX_CBLAS_NO_TRANS, n, n, n, 1.0f, a, n,
                       bb, n, 0.0f, c, n);
}

static void through_dot(bench *b, int which) {
    ax_dot_dims dims = {.ncontract = 1, .lhs_contract = {1}, .rhs_contract = {0}};
    ax_array *l = which == 2 ? b->at : b->a, *r = which == 0 ? b->b : which == 1 ? b->at : b->b;
    ax_array *d = ax_dot_general(b->cx, l, r, &dims);
    if (!d) b->failed = true;
    ax_array_release(d);
}

int main(int argc, char **argv) {
    int64_t n = argc > 1 ? atoll(argv[1]) : 3000;
    int reps = argc > 2 ? atoi(argv[2]) : 5;
    ax_ctx *cx = ax_ctx_new();
    bench b = {.cx = cx, .n = (int)n};
    b.a = filled(cx, n, 1);
    b.b = filled(cx, n, 2);
    b.c = ax_array_zeros(cx, AX_F32, 2, (int64_t[]){n, n});
    b.at = b.a ? ax_transpose(cx, b.a, (int[]){1, 0}) : NULL;
    b.blas = ax_blas_get(cx);
    if (!b.a || !b.b || !b.c || !b.at || !b.blas) {
        ax_error_print(cx, stderr);
        return 1;
    }
    double flops = 2.0 * (double)n * (double)n * (double)n;
    const char *core = getenv("OPENBLAS_CORETYPE");
    printf("%lldx%lld f32, OPENBLAS_CORETYPE=%s, best of %d (ms; GFLOP/s as 2n^3 / time)\n",
           (long long)n, (long long)n, core ? core : "(unset)", reps);
    double g = best_of(&b, reps, direct, 0), d = best_of(&b, reps, through_dot, 0);
    printf("a @ b    cblas_sgemm %.2f (%.1f)  dot_general %.2f (%.1f)  ratio %.3f\n", g * 1e3,
           flops / g / 1e9, d * 1e3, flops / d / 1e9, d / g);
    double s = best_of(&b, reps, direct, 1), nt = best_of(&b, reps, direct, 2);
    d = best_of(&b, reps, through_dot, 1);
    printf("a @ a.T  cblas_ssyrk %.2f  cblas_sgemm(N,T) %.2f  dot_general %.2f (%.1f)  ratio to "
           "syrk %.3f\n",
           s * 1e3, nt * 1e3, d * 1e3, flops / d / 1e9, d / s);
    g = best_of(&b, reps, direct, 3);
    d = best_of(&b, reps, through_dot, 2);
    printf("a.T @ b  cblas_sgemm(T,N) %.2f  dot_general %.2f  ratio %.3f\n", g * 1e3, d * 1e3,
           d / g);
    ax_array_release(b.a);
    ax_array_release(b.b);
    ax_array_release(b.c);
    ax_array_release(b.at);
    ax_ctx_free(cx);
    return b.failed;
}

/* Small matrix products, f32: OpenBLAS on two threads and on one against libxsmm
 * (runtime/smallgemm.c), median wall time of many calls, and how long a loop over the result
 * takes right after the product (OpenBLAS's second thread spins for a while after a call).
 * Usage: build/bench/bench_smallgemm [calls]      (default 2000) */
// bench-args: 2000
#include <stdio.h>
#include <stdlib.h>

#include "../../runtime/blas.h"
#include "../../runtime/smallgemm.h"
#include "bench_util.h"

enum { MAXN = 256 };
static float A[MAXN * MAXN], B[MAXN * MAXN], C[MAXN * MAXN], D[MAXN * MAXN];
static double checksum; /* read at the end, so that the loop is not optimised away */

/* relu(c + 1): the kind of loop that follows a product in a layer */
static void loop_after(int m, int n) {
    for (int i = 0; i < m * n; i++) D[i] = C[i] + 1.0f > 0 ? C[i] + 1.0f : 0.0f;
    checksum += D[(m * n) / 2];
}

static int cmp(const void *x, const void *y) {
    return compare_doubles(x, y);
}

typedef struct {
    int m, n, k;
    bool ta, tb;
} shape;

/* way: 0 OpenBLAS 2 threads, 1 OpenBLAS 1 thread, 2 libxsmm; false if libxsmm declined */
static bool product(ax_blas *blas, int way, shape s) {
    int lda = s.ta ? s.m : s.k, ldb = s.tb ? s.k : s.n;
    if (way == 2) return ax_small_gemm(AX_F32, s.ta, s.tb, s.m, s.n, s.k, A, lda, B, ldb, C, s.n);
    blas->sgemm(AX_CBLAS_ROW_MAJOR, s.ta ? AX_CBLAS_TRANS : AX_CBLAS_NO_TRANS,
                s.tb ? AX_CBLAS_TRANS : AX_CBLAS_NO_TRANS, s.m, s.n, s.k, 1.0f, A, lda, B, ldb,
                0.0f, C, s.n);
    return true;
}

static void measure(ax_blas *blas, shape s, int calls) {
    double *tp = malloc(sizeof *tp * (size_t)calls), *tl = malloc(sizeof *tl * (size_t)calls);
    printf("%3dx%3dx%3d %s%s", s.m, s.n, s.k, s.ta ? "T" : "N", s.tb ? "T" : "N");
    for (int way = 0; way < 3; way++) {
        blas->set_num_threads(way == 0 ? 2 : 1);
        bool ok = true;
        for (int c = 0; c < calls && ok; c++) {
            double t0 = now();
            ok = product(blas, way, s);
            double t1 = now();
            loop_after(s.m, s.n);
            tp[c] = t1 - t0, tl[c] = now() - t1;
        }
        if (!ok) {
            printf("  %-22s", "libxsmm: no kernel");
            continue;
        }
        qsort(tp, (size_t)calls, sizeof *tp, cmp);
        qsort(tl, (size_t)calls, sizeof *tl, cmp);
        printf("  %7.2f us (loop %5.2f)", tp[calls / 2] * 1e6, tl[calls / 2] * 1e6);
    }
    printf("\n");
    free(tp), free(tl);
}

int main(int argc, char **argv) {
    int calls = argc > 1 ? atoi(argv[1]) : 2000;
    ax_ctx *cx = ax_ctx_new();
    ax_blas *blas = ax_blas_get(cx);
    if (!blas) {
        ax_error_print(cx, stderr);
        return 1;
    }
    for (int i = 0; i < MAXN * MAXN; i++)
        A[i] = (float)(i % 17) * 0.01f, B[i] = (float)(i % 13) * 0.01f;
    printf("f32, median of %d calls; columns: OpenBLAS 2 threads | OpenBLAS 1 thread | libxsmm\n",
           calls);
    const shape shapes[] = {{128, 128, 128, false, false}, {128, 128, 128, true, false},
                            {128, 128, 128, false, true},  {128, 128, 1, false, false},
                            {1, 128, 128, false, false},   {128, 1, 128, false, false},
                            {64, 64, 64, false, false},    {160, 160, 160, false, false},
                            {192, 192, 192, false, false}, {256, 256, 256, false, false}};
    for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++) measure(blas, shapes[i], calls);
    printf("(checksum %g)\n", checksum);
    ax_ctx_free(cx);
    return 0;
}

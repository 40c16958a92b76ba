/* The LAPACK kernels (runtime/lapack.c) against the bare LAPACK routine on a column-major copy
 * prepared outside the timing: what the row-major <-> column-major transposes, the workspace
 * queries and the result arrays cost. f64, n x n, best of `reps` after one warm-up round, in
 * CPU time of the process (all threads): on a shared machine wall time mostly measures the
 * neighbours.
 *   /tmp/bench_lapack [n] [reps]       (default 500, 5) */
// bench-args: 500 5
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../runtime/blas.h"
#include "../../runtime/lapack.h"

static double seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* A well-conditioned symmetric matrix: random entries plus n on the diagonal. */
static ax_array *filled(ax_ctx *cx, int64_t n) {
    ax_array *a = ax_array_new(cx, AX_F64, 2, (int64_t[]){n, n});
    if (!a) return NULL;
    double *p = a->buf->data;
    unsigned seed = 1;
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j <= i; j++) {
            seed = seed * 1103515245u + 12345u;
            double v = (double)((seed >> 16) & 0x7fff) / 32768.0 - 0.5 + (i == j ? (double)n : 0);
            p[i * n + j] = p[j * n + i] = v;
        }
    return a;
}

typedef struct timing {
    double kernel, bare;
} timing;

/* The bare routine on a fresh copy of `col` (column-major), timed without the copy. */
static double bare(const ax_blas *blas, const char *what, const double *col, int n) {
    size_t bytes = (size_t)n * (size_t)n * sizeof(double);
    double *m = malloc(bytes), *w = malloc((size_t)n * sizeof(double) * 2), query = 0;
    int *ip = malloc((size_t)n * 8 * sizeof(int)), info = 0, lwork = -1, liwork = -1, iq = 0;
    double *u = malloc(bytes), *vt = malloc(bytes), *work = NULL;
    memcpy(m, col, bytes);
    double t = 0;
    if (!strcmp(what, "lu")) {
        t = seconds();
        blas->getrf[1](&n, &n, m, &n, ip, &info);
    } else if (!strcmp(what, "eigh")) {
        blas->syevd[1]("V", "L", &n, m, &n, w, &query, &lwork, &iq, &liwork, &info, 1, 1);
        lwork = (int)query + 1, liwork = iq;
        work = malloc((size_t)lwork * sizeof(double));
        int *iwork = malloc((size_t)liwork * sizeof(int));
        t = seconds();
        blas->syevd[1]("V", "L", &n, m, &n, w, work, &lwork, iwork, &liwork, &info, 1, 1);
        t = seconds() - t;
        free(iwork);
        free(m), free(w), free(ip), free(u), free(vt), free(work);
        return t;
    } else if (!strcmp(what, "svd")) {
        blas->gesdd[1]("S", &n, &n, m, &n, w, u, &n, vt, &n, &query, &lwork, ip, &info, 1);
        lwork = (int)query + 1;
        work = malloc((size_t)lwork * sizeof(double));
        t = seconds();
        blas->gesdd[1]("S", &n, &n, m, &n, w, u, &n, vt, &n, work, &lwork, ip, &info, 1);
    } else { /* qr */
        blas->geqrf[1](&n, &n, m, &n, w, &query, &lwork, &info);
        lwork = (int)query + 1;
        work = malloc((size_t)lwork * sizeof(double));
        t = seconds();
        blas->geqrf[1](&n, &n, m, &n, w, work, &lwork, &info);
        blas->orgqr[1](&n, &n, &n, m, &n, w, work, &lwork, &info);
    }
    t = seconds() - t;
    free(m), free(w), free(ip), free(u), free(vt), free(work);
    return t;
}

static double kernel(ax_ctx *cx, const char *what, ax_array *a) {
    ax_array *out[3] = {0};
    double t = seconds();
    int rc = !strcmp(what, "lu")     ? ax_lu(cx, a, out)
             : !strcmp(what, "eigh") ? ax_eigh(cx, a, true, out)
             : !strcmp(what, "svd")  ? ax_svd(cx, a, false, true, out)
                                     : ax_qr(cx, a, false, out);
    t = seconds() - t;
    for (int i = 0; i < 3; i++) ax_array_release(out[i]);
    return rc ? -1 : t;
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 500;
    int reps = argc > 2 ? atoi(argv[2]) : 5;
    ax_ctx *cx = ax_ctx_new();
    ax_array *a = filled(cx, n);
    ax_blas *blas = ax_blas_get(cx);
    if (!a || !blas) {
        ax_error_print(cx, stderr);
        return 1;
    }
    const double *col = a->buf->data; /* symmetric: its own column-major copy */
    const char *const names[] = {"lu", "eigh", "svd", "qr"};
    for (int k = 0; k < 4; k++) {
        timing best = {1e30, 1e30};
        for (int r = 0; r < reps + 1; r++) {
            double tk = kernel(cx, names[k], a), tb = bare(blas, names[k], col, n);
            if (tk < 0) {
                ax_error_print(cx, stderr);
                return 1;
            }
            if (r && tk < best.kernel) best.kernel = tk;
            if (r && tb < best.bare) best.bare = tb;
        }
        printf("%-4s %dx%d f64: ax kernel %7.2f ms, bare LAPACK %7.2f ms (CPU), overhead %+5.1f%%\n",
               names[k], n, n, best.kernel * 1e3, best.bare * 1e3,
               100 * (best.kernel / best.bare - 1));
    }
    ax_array_release(a);
    ax_ctx_free(cx);
    return 0;
}

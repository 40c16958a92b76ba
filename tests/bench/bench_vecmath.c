/* ax's f32 vector math (runtime/vecmath.h), one thread: speed, and accuracy against glibc.
 *
 *   bench_vecmath              ns per element of each function, 16K elements in cache and 10M
 *                              from memory, against y = 2x + 1 on the same arrays (medians of 7)
 *   bench_vecmath --ulp [S [name...]]  the accuracy sweep of docs/vecmath.md: every S-th f32
 *                              bit pattern (default 1: all 2^32; ~2-10 min per function on one
 *                              core), of the named functions (default all)
 *                              against glibc's f64 function; prints the worst error in ulps
 *                              (|y - exact| / ulp(exact), the f64 result standing for exact)
 *                              and how many results are 0, 1, 2... steps from the correctly
 *                              rounded one. */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../runtime/vecmath.h"
#include "../unit/vecmath_test_util.h"
#include "bench_util.h"

/* ---- speed ---- */

static void affine(int64_t n, const float *x, float *y) {
    for (int64_t i = 0; i < n; i++) y[i] = x[i] * 2.0f + 1.0f;
}

/* ns per element of f on x[0..n) (f < 0: the affine map), median of RUNS */
static double ns_per_element(int f, int64_t n, const float *x, float *y) {
    int reps = n < 100000 ? 200 : 1;
    double t[RUNS];
    for (int r = 0; r < RUNS; r++) {
        double t0 = now();
        for (int k = 0; k < reps; k++)
            if (f < 0)
                affine(n, x, y);
            else
                ax_vecmath_f32((ax_vm_fn)f, n, x, 1, y);
        t[r] = (now() - t0) / reps / (double)n * 1e9;
    }
    return median(t);
}

/* normal-ish values (|x| + 0.001 for log), as the language benchmarks use */
static void fill(float *x, float *pos, int64_t n) {
    uint64_t s = 88172645463325252u;
    for (int64_t i = 0; i < n; i++) {
        double u = 0;
        for (int k = 0; k < 4; k++) { /* Irwin-Hall: a sum of 4 uniforms, centred */
            s ^= s << 13, s ^= s >> 7, s ^= s << 17;
            u += (double)(s >> 11) / 9007199254740992.0;
        }
        x[i] = (float)((u - 2) * 1.7);
        pos[i] = fabsf(x[i]) + 0.001f;
    }
}

static int speed(void) {
    enum { SMALL = 16384, BIG = 10000000 };
    float *x = malloc(BIG * sizeof *x), *pos = malloc(BIG * sizeof *pos);
    float *y = malloc(BIG * sizeof *y);
    if (!x || !pos || !y) return 1;
    fill(x, pos, BIG);
    memset(y, 0, BIG * sizeof *y);
    printf("%-9s %12s %12s   (ns per element, one thread)\n", "", "16K, cache", "10M, memory");
    printf("%-9s %12.3f %12.3f\n", "2x + 1", ns_per_element(-1, SMALL, x, y),
           ns_per_element(-1, BIG, x, y));
    for (int f = 0; f < AX_VM_COUNT; f++) {
        const float *in = f == AX_VM_LOG ? pos : x;
        printf("%-9s %12.3f %12.3f\n", ax_vecmath_name((ax_vm_fn)f),
               ns_per_element(f, SMALL, in, y), ns_per_element(f, BIG, in, y));
    }
    free(x), free(pos), free(y);
    return 0;
}

/* ---- accuracy ---- */

/* |y - exact| in ulps of exact (an f32 ulp; denormal spacing below FLT_MIN); results that
 * round to an infinity or are NaN must be exactly that */
static double ulp_error(float y, double exact) {
    float rounded = (float)exact;
    if (isnan(rounded) || isinf(rounded) || isnan(y) || isinf(y))
        return (isnan(rounded) && isnan(y)) || y == rounded ? 0 : INFINITY;
    int e;
    frexp(exact, &e);
    double ulp = ldexp(1.0, exact == 0 || e - 24 < -149 ? -149 : e - 24);
    return fabs((double)y - exact) / ulp;
}

/* steps between y and the correctly rounded result; 99 for a NaN/inf/zero-sign mismatch */
static int64_t steps(float y, float want) {
    uint32_t a, b;
    memcpy(&a, &want, 4);
    memcpy(&b, &y, 4);
    if (a == b || (isnan(y) && isnan(want))) return 0;
    if (isnan(y) || isnan(want) || isinf(y) || isinf(want) || (y == 0 && want == 0)) return 99;
    int64_t ia = a & 0x7fffffff, ib = b & 0x7fffffff;
    if (a >> 31) ia = -ia;
    if (b >> 31) ib = -ib;
    int64_t d = ia > ib ? ia - ib : ib - ia;
    return d > 99 ? 99 : d;
}

/* Whether function f is among names[0..n) (all when n == 0). */
static bool wanted(int f, char **names, int n) {
    for (int k = 0; k < n; k++)
        if (!strcmp(names[k], ax_vecmath_name((ax_vm_fn)f))) return true;
    return n == 0;
}

static int accuracy(uint64_t stride, char **names, int nnames) {
    enum { N = 4096 };
    float x[N], y[N];
    for (int f = 0; f < AX_VM_COUNT; f++) {
        if (!wanted(f, names, nnames)) continue;
        double worst = 0;
        float worst_x = 0;
        int64_t hist[4] = {0}; /* 0, 1, 2, more steps */
        for (uint64_t u = 0; u < (uint64_t)1 << 32;) {
            int n = 0;
            for (; n < N && u < (uint64_t)1 << 32; n++, u += stride) {
                uint32_t b = (uint32_t)u;
                memcpy(&x[n], &b, 4);
            }
            ax_vecmath_f32((ax_vm_fn)f, n, x, 1, y);
            for (int i = 0; i < n; i++) {
                double exact = vecmath_refs[f]((double)x[i]);
                double e = ulp_error(y[i], exact);
                int64_t s = steps(y[i], (float)exact);
                hist[s > 3 ? 3 : s]++;
                if (e > worst) worst = e, worst_x = x[i];
            }
        }
        printf("%-9s worst %.3f ulp at %a (%.9g); results 0/1/2/more steps from the "
               "correctly rounded: %lld %lld %lld %lld\n",
               ax_vecmath_name((ax_vm_fn)f), worst, (double)worst_x, (double)worst_x,
               (long long)hist[0], (long long)hist[1], (long long)hist[2], (long long)hist[3]);
        fflush(stdout);
    }
    return 0;
}

int main(int argc, char **argv) {
    if (argc > 1 && !strcmp(argv[1], "--ulp")) {
        uint64_t stride = argc > 2 ? strtoull(argv[2], NULL, 0) : 1;
        return accuracy(stride ? stride : 1, argv + 3, argc > 3 ? argc - 3 : 0);
    }
    return speed();
}

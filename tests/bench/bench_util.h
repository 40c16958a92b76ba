/* Timing helpers shared by the C benchmarks (tests/bench/bench_*.c). */
#ifndef AX_BENCH_UTIL_H
#define AX_BENCH_UTIL_H

#include <stdlib.h>
#include <time.h>

enum { RUNS = 7 }; /* runs per measurement; the median is reported */

static inline double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static inline int compare_doubles(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median of RUNS times (sorts them). */
static inline double median(double *t) {
    qsort(t, RUNS, sizeof *t, compare_doubles);
    return t[RUNS / 2];
}

#endif

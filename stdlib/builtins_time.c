/* timeit(f, *args): the median time per call, in seconds. */
#include "builtins_lib.h"

#include <stdlib.h>
#include <time.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Calls f(args) `number` times; the elapsed seconds, or -1 on error. */
static double run(ax_interp *in, ax_value *f, const ax_args *call, int64_t number) {
    double start = now();
    for (int64_t i = 0; i < number; i++) {
        if (ax_ctx_check_interrupt(in->cx)) return -1;
        ax_value *r = ax_call(in, f, call);
        if (!r) return -1;
        ax_value_release(r);
    }
    return now() - start;
}

static int compare_doubles(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Python's timeit.autorange: 1, 2, 5, 10, 20, ... calls until they take 0.2 s. */
static int64_t autorange(ax_interp *in, ax_value *f, const ax_args *call) {
    for (int64_t base = 1;; base *= 10) {
        for (int k = 0; k < 3; k++) {
            int64_t number = base * (k == 0 ? 1 : k == 1 ? 2 : 5);
            double t = run(in, f, call, number);
            if (t < 0) return -1;
            if (t >= 0.2 || number >= 100000000) return number;
        }
    }
}

static ax_value *bi_timeit(ax_interp *in, ax_value *self, const ax_args *args) {
    static const char *const kw[] = {"number", "repeat", NULL};
    if (!ax_bi_keywords(in, args, self->builtin->name, kw)) return NULL;
    if (args->n < 1) return ax_error(in->cx, AX_ERR_TYPE, "timeit() needs a function to time");
    int64_t number, repeat;
    if (!ax_bi_int(in, ax_bi_kwarg(args, "number"), "number", 0, &number) ||
        !ax_bi_int(in, ax_bi_kwarg(args, "repeat"), "repeat", 5, &repeat))
        return NULL;
    if (number < 0 || repeat < 1 || repeat > 1000)
        return ax_error(in->cx, AX_ERR_VALUE, "timeit: number must be >= 1 and repeat in 1..1000");
    ax_value *f = args->pos[0];
    ax_args call = {.n = args->n - 1, .pos = args->pos + 1};
    if (run(in, f, &call, 1) < 0) return NULL; /* warm up (jit compiles on the first call) */
    if (number == 0 && (number = autorange(in, f, &call)) < 0) return NULL;
    double *times = malloc((size_t)repeat * sizeof *times);
    if (!times) return ax_error_oom(in->cx);
    for (int64_t i = 0; i < repeat; i++) {
        double t = run(in, f, &call, number);
        if (t < 0) {
            free(times);
            return NULL;
        }
        times[i] = t / (double)number;
    }
    qsort(times, (size_t)repeat, sizeof *times, compare_doubles);
    double median =
        repeat % 2 ? times[repeat / 2] : 0.5 * (times[repeat / 2 - 1] + times[repeat / 2]);
    free(times);
    return ax_bi_float_value(in, median);
}

const ax_builtin_def ax_builtins_time[] = {
    {"timeit", bi_timeit,
     "timeit(f, *args, number=auto, repeat=5): median seconds per call of f(*args)", 0},
    {NULL, NULL, NULL, 0},
};

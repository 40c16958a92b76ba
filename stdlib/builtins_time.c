/* timeit(f, *args): the median time per call, in seconds; and Python's time module. */
#include "builtins_lib.h"
#include "libs.h"

#include <errno.h>
#include <math.h>
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

/* ---------------------------------------------------------------- the time module */

static double clock_seconds(clockid_t clock) {
    struct timespec t;
    clock_gettime(clock, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int64_t clock_ns(clockid_t clock) {
    struct timespec t;
    clock_gettime(clock, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* Seconds as a float64 scalar: a float32 cannot tell apart two instants of today's clock. */
static ax_value *seconds_value(ax_interp *in, double s) {
    ax_array *a = ax_array_scalar(in->cx, AX_F64, s);
    return a ? ax_value_or_oom(in, ax_value_array(a)) : NULL;
}

static ax_value *time_clock(ax_interp *in, ax_value *self, const ax_args *a, clockid_t clock,
                            bool ns) {
    if (!ax_args_check(in, a, self->builtin->name, 0, (const char *[]){NULL})) return NULL;
    if (!ns) return seconds_value(in, clock_seconds(clock));
    ax_array *r = ax_array_scalar_i64(in->cx, AX_I64, clock_ns(clock));
    return r ? ax_value_or_oom(in, ax_value_array(r)) : NULL;
}

static ax_value *bi_time(ax_interp *in, ax_value *self, const ax_args *a) {
    return time_clock(in, self, a, CLOCK_REALTIME, false);
}
static ax_value *bi_time_ns(ax_interp *in, ax_value *self, const ax_args *a) {
    return time_clock(in, self, a, CLOCK_REALTIME, true);
}
static ax_value *bi_perf_counter(ax_interp *in, ax_value *self, const ax_args *a) {
    return time_clock(in, self, a, CLOCK_MONOTONIC, false);
}
static ax_value *bi_perf_counter_ns(ax_interp *in, ax_value *self, const ax_args *a) {
    return time_clock(in, self, a, CLOCK_MONOTONIC, true);
}
static ax_value *bi_process_time(ax_interp *in, ax_value *self, const ax_args *a) {
    return time_clock(in, self, a, CLOCK_PROCESS_CPUTIME_ID, false);
}

/* sleep(seconds), in slices so that Ctrl-C stops it. */
static ax_value *bi_sleep(ax_interp *in, ax_value *self, const ax_args *a) {
    double secs;
    if (!ax_args_check(in, a, "sleep", 1, (const char *[]){"secs", NULL})) return NULL;
    ax_value *v = ax_arg(a, 0, "secs");
    if (!ax_bi_required(in, v, "sleep", "secs") || !ax_bi_double(in, v, "secs", 0, &secs))
        return NULL;
    if (!(secs >= 0) || isinf(secs))
        return ax_error(in->cx, AX_ERR_VALUE, "sleep length must be a finite number >= 0");
    (void)self;
    double end = clock_seconds(CLOCK_MONOTONIC) + secs;
    for (double left = secs; left > 0; left = end - clock_seconds(CLOCK_MONOTONIC)) {
        if (ax_ctx_check_interrupt(in->cx)) return NULL;
        double step = left < 0.05 ? left : 0.05;
        struct timespec t = {(time_t)step, (long)((step - (double)(time_t)step) * 1e9)};
        while (nanosleep(&t, &t) != 0 && errno == EINTR)
            if (ax_ctx_check_interrupt(in->cx)) return NULL;
    }
    return ax_none();
}

ax_value *ax_lib_open_time(ax_interp *in, const ax_lib *lib) {
    static const ax_builtin_def fns[] = {
        {"time", bi_time, "time(): seconds since the epoch (float64)", 0},
        {"time_ns", bi_time_ns, "time_ns(): nanoseconds since the epoch (int64)", 0},
        {"perf_counter", bi_perf_counter, "perf_counter(): a monotonic clock, in seconds", 0},
        {"perf_counter_ns", bi_perf_counter_ns, "perf_counter_ns(): perf_counter in ns", 0},
        {"monotonic", bi_perf_counter, "monotonic(): a monotonic clock, in seconds", 0},
        {"process_time", bi_process_time, "process_time(): CPU seconds of this process", 0},
        {"sleep", bi_sleep, "sleep(secs): waits secs seconds (Ctrl-C stops it)", 0},
        {NULL, NULL, NULL, 0},
    };
    return ax_lib_module_of(in, lib, fns);
}

/* The thread pool: every item of a job runs exactly once, jobs follow each other without
 * mixing, and the caller never waits for a worker that has not started (a worker held in a
 * signal handler stands for one the OS has descheduled on a busy machine); a worker stalled
 * in the middle of a chunk is pulled onto the caller's CPU, and has its affinity back once
 * its chunk is done. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <dirent.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../../runtime/pool.h"

enum { N = 1 << 16 };

typedef struct job {
    _Atomic uint8_t *hits; /* per item: how many times it ran */
    pthread_t caller;
    atomic_long by_caller; /* items the calling thread ran */
    int tag;               /* which job wrote the item (stale workers would mix them) */
    int *tags;
} job;

static void mark(void *arg, int64_t begin, int64_t end) {
    job *j = arg;
    for (int64_t i = begin; i < end; i++) {
        atomic_fetch_add(&j->hits[i], 1);
        j->tags[i] = j->tag;
    }
    if (pthread_equal(pthread_self(), j->caller)) atomic_fetch_add(&j->by_caller, end - begin);
}

static ax_ctx *two_thread_ctx(void) {
    ax_ctx *cx = ax_ctx_new();
    assert_non_null(cx);
    cx->threads = 2; /* a worker even on a one-CPU machine */
    assert_int_equal(ax_pool_threads(cx), 2);
    return cx;
}

/* Runs one job over [0, n) and checks every item ran once, for this job. Returns the items
 * the caller ran itself. */
static long run_and_check(ax_ctx *cx, int64_t n, int64_t grain, int tag) {
    static _Atomic uint8_t hits[N];
    static int tags[N];
    for (int64_t i = 0; i < n; i++) atomic_store(&hits[i], 0);
    job j = {.hits = hits, .caller = pthread_self(), .tag = tag, .tags = tags};
    atomic_init(&j.by_caller, 0);
    ax_parallel_for(cx, n, grain, mark, &j);
    for (int64_t i = 0; i < n; i++) {
        if (atomic_load(&hits[i]) != 1 || tags[i] != tag)
            fail_msg("job %d (n %lld, grain %lld): item %lld ran %d times, tag %d", tag,
                     (long long)n, (long long)grain, (long long)i, (int)atomic_load(&hits[i]),
                     tags[i]);
    }
    return atomic_load(&j.by_caller);
}

static void test_every_item_once(void **state) {
    (void)state;
    ax_ctx *cx = two_thread_ctx();
    const int64_t sizes[] = {1, 63, 64, 65, 1000, 4097, N};
    const int64_t grains[] = {1, 7, 64, 1000, N};
    int tag = 0;
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++)
        for (size_t g = 0; g < sizeof grains / sizeof *grains; g++)
            run_and_check(cx, sizes[s], grains[g], ++tag);
    ax_ctx_free(cx);
}

/* Thousands of jobs back to back, small ones included: a worker that arrives late must
 * never run (or count) a chunk of a job that is over. */
static void test_back_to_back_jobs(void **state) {
    (void)state;
    ax_ctx *cx = two_thread_ctx();
    for (int tag = 1; tag <= 5000; tag++) run_and_check(cx, 256 + tag % 4096, 64, tag);
    ax_ctx_free(cx);
}

/* ---- a worker the OS does not run: held in a signal handler ---- */

static int hold_pipe[2], ack_pipe[2];

static void hold_thread(int sig) {
    (void)sig;
    char c = 'h';
    if (write(ack_pipe[1], &c, 1) != 1) abort();
    while (read(hold_pipe[0], &c, 1) != 1) {
    }
}

static void watchdog(int sig) {
    (void)sig;
    static const char msg[] = "test_pool: the caller waited for a worker that never started\n";
    if (write(2, msg, sizeof msg - 1)) {
    }
    _exit(1);
}

/* Sends SIGUSR1 to every thread but this one (the pool's workers) and waits until each is
 * inside the handler. Returns how many were held. */
static int hold_other_threads(void) {
    DIR *d = opendir("/proc/self/task");
    assert_non_null(d);
    pid_t self = (pid_t)syscall(SYS_gettid);
    int held = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        pid_t tid = (pid_t)atoi(e->d_name);
        if (tid <= 0 || tid == self) continue;
        assert_int_equal(syscall(SYS_tgkill, getpid(), tid, SIGUSR1), 0);
        held++;
    }
    closedir(d);
    for (int i = 0; i < held; i++) {
        char c;
        assert_int_equal(read(ack_pipe[0], &c, 1), 1);
    }
    return held;
}

static void test_caller_does_not_wait_for_a_stalled_worker(void **state) {
    (void)state;
    ax_ctx *cx = two_thread_ctx();
    run_and_check(cx, N, 64, 1); /* the worker has run a job and is idle (spinning or asleep) */
    assert_int_equal(pipe(hold_pipe), 0);
    assert_int_equal(pipe(ack_pipe), 0);
    struct sigaction sa = {.sa_handler = hold_thread};
    sigemptyset(&sa.sa_mask);
    assert_int_equal(sigaction(SIGUSR1, &sa, NULL), 0);
    signal(SIGALRM, watchdog);
    int held = hold_other_threads();
    assert_true(held >= 1);

    alarm(10); /* only a hang trips it: the job alone takes microseconds */
    for (int tag = 2; tag < 10; tag++) assert_int_equal(run_and_check(cx, N, 64, tag), N);
    alarm(0);

    /* Let the worker go: it finds those jobs done and takes part in the next ones. */
    char c = 'g';
    assert_int_equal(write(hold_pipe[1], &c, 1), 1);
    for (int tag = 10; tag < 200; tag++) run_and_check(cx, N, 64, tag);
    ax_ctx_free(cx);
    signal(SIGALRM, SIG_DFL);
    signal(SIGUSR1, SIG_DFL);
    close(hold_pipe[0]), close(hold_pipe[1]), close(ack_pipe[0]), close(ack_pipe[1]);
}

/* ---- a worker stalled inside a chunk ---- */

typedef struct stall {
    pthread_t caller;
    atomic_int stalled;    /* 1 once a worker took its (first) chunk and stalled in it */
    atomic_int worker_tid; /* the stalled worker */
    atomic_int cpus_after; /* the CPUs it was allowed after the stall */
    atomic_long items;
} stall;

static void stall_once(void *arg, int64_t begin, int64_t end) {
    stall *st = arg;
    int expected = 0;
    if (!pthread_equal(pthread_self(), st->caller) &&
        atomic_compare_exchange_strong(&st->stalled, &expected, 1)) {
        atomic_store(&st->worker_tid, (int)syscall(SYS_gettid));
        usleep(30000); /* the caller is done long before: it pulls this thread meanwhile */
        cpu_set_t now;
        if (sched_getaffinity(0, sizeof now, &now) == 0)
            atomic_store(&st->cpus_after, CPU_COUNT(&now));
    }
    for (volatile int spin = 0; spin < 20000; spin++) { /* a chunk takes some time */
    }
    atomic_fetch_add(&st->items, end - begin);
}

static void test_a_stalled_chunk_is_pulled_to_the_caller(void **state) {
    (void)state;
    cpu_set_t all;
    assert_int_equal(sched_getaffinity(0, sizeof all, &all), 0);
    ax_ctx *cx = two_thread_ctx();
    stall st = {.caller = pthread_self()};
    atomic_init(&st.stalled, 0);
    atomic_init(&st.worker_tid, 0);
    atomic_init(&st.cpus_after, 0);
    atomic_init(&st.items, 0);
    /* many jobs until the worker takes a chunk of one (it may not be running yet) */
    for (int k = 0; k < 2000 && !atomic_load(&st.stalled); k++) {
        atomic_store(&st.items, 0);
        ax_parallel_for(cx, N, 64, stall_once, &st);
        assert_int_equal(atomic_load(&st.items), N);
    }
    if (!atomic_load(&st.stalled)) skip(); /* the worker never ran: nothing to check */
    assert_int_equal(atomic_load(&st.cpus_after), 1);
    cpu_set_t restored;
    assert_int_equal(sched_getaffinity(atomic_load(&st.worker_tid), sizeof restored, &restored), 0);
    assert_true(CPU_EQUAL(&restored, &all));
    run_and_check(cx, N, 64, 1);
    ax_ctx_free(cx);
}

/* A job started from inside a job runs inline on the thread that asked. */
typedef struct nested {
    ax_ctx *cx;
    atomic_long items;
} nested;

static void count(void *arg, int64_t begin, int64_t end) {
    atomic_fetch_add(&((nested *)arg)->items, end - begin);
}

static void inner_job(void *arg, int64_t begin, int64_t end) {
    nested *n = arg;
    for (int64_t i = begin; i < end; i++) ax_parallel_for(n->cx, 1000, 10, count, n);
}

static void test_nested_jobs(void **state) {
    (void)state;
    ax_ctx *cx = two_thread_ctx();
    nested n = {.cx = cx};
    atomic_init(&n.items, 0);
    ax_parallel_for(cx, 64, 1, inner_job, &n);
    assert_int_equal(atomic_load(&n.items), 64 * 1000);
    ax_ctx_free(cx);
}

/* An argument runs only the tests whose names match it (cmocka's filter). */
int main(int argc, char **argv) {
    if (argc > 1) cmocka_set_test_filter(argv[1]);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_item_once),
        cmocka_unit_test(test_back_to_back_jobs),
        cmocka_unit_test(test_caller_does_not_wait_for_a_stalled_worker),
        cmocka_unit_test(test_nested_jobs),
        cmocka_unit_test(test_a_stalled_chunk_is_pulled_to_the_caller),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

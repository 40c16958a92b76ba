/* A persistent thread pool: (threads - 1) workers plus the calling thread share each job.
 *
 * One job runs at a time (the runtime context is single-threaded; a job that itself calls
 * ax_parallel_for runs that inner loop inline). A job is [0, n) cut into chunks, and every
 * thread, the caller included, claims chunks from one atomic ticket until none are left. The
 * caller starts on the chunks at once and, when none are left to claim, waits only for the
 * chunks that workers have claimed and not finished yet: a worker that the OS has not run yet
 * (on a busy machine it may wait milliseconds for a CPU) claims nothing, so it holds nobody
 * up; when it does run, it finds the job done (or claims chunks of a later one).
 *
 * Idle workers spin briefly (tens of µs) before they sleep, which keeps back-to-back kernels
 * from paying a wake-up each. The caller, left waiting for a worker's chunk, spins only a few
 * µs before it sleeps: a worker that far behind has usually been preempted, and a caller that
 * keeps its CPU busy keeps the OS from moving the worker there. Sleeping and waking go
 * through futexes on the job counter and the count of finished chunks, with no mutex, so a
 * worker stopped anywhere (descheduled, or in a signal handler) never blocks the caller.
 *
 * With another busy process on the machine, the OS may leave a worker on the caller's CPU,
 * where the two only take turns: a worker that starts a job there moves itself off it (at
 * most once a millisecond) and lets the OS place it freely again.
 *
 * A worker preempted in the middle of a chunk (the other process got its CPU) holds the
 * caller up until the OS runs it again: measured with a spinner on the other CPU, about ten
 * waits in 1500 jobs of jitted `norm`, ~5 ms each, a third of the run; the OS did not move
 * the worker to the CPU the sleeping caller left idle (it had just run: cache hot). So a
 * caller that has waited well past the time its own chunks took (PATIENCE) pulls the workers
 * still in a chunk onto its own CPU, where the chunk then finishes at once; the worker goes
 * back to its own affinity and off the caller's CPU as soon as it has finished. */
#include "pool.h"

#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define cpu_relax() _mm_pause()
#else
#define cpu_relax() ((void)0)
#endif

enum {
    /* Iterations of a worker's idle spin (a pause is ~10-60 cycles: ~40 µs measured here). */
    WORKER_SPIN = 4000,
    /* Iterations the caller spins for workers' chunks before it sleeps (~10 µs here). */
    CALLER_SPIN = 1000,
    /* Chunks per thread when the work allows: more than one, so that a thread that started
     * late (or was preempted) leaves whole chunks for the others to take. */
    CHUNKS_PER_THREAD = 4,
    CHUNK_ALIGN = 64,
    /* How long past its own chunks' time (twice their mean) the caller waits for workers'
     * chunks before it pulls their threads onto its CPU, in ns. */
    PATIENCE_NS = 20000,
};

/* The ticket packs the job's chunk count (high half) and the next chunk to hand out (low
 * half), so that one fetch-and-add both claims a chunk and says whether it exists. Each
 * thread makes at most one failed claim per job, so the low half cannot overflow. */
#define TICKET(nchunks, next) ((uint64_t)(nchunks) << 32 | (uint64_t)(next))
#define MAX_CHUNKS            (1 << 24)

typedef void (*chunk_fn)(void *arg, int64_t begin, int64_t end);

struct pool_worker {
    struct ax_pool *pool;
    pthread_t thread;
    atomic_int tid;       /* its thread id, once it runs (0 before) */
    atomic_bool in_chunk; /* it runs a chunk of the current job */
    atomic_bool pulled;   /* the caller pinned it to its CPU: it must restore `mask` */
    bool has_mask;
    cpu_set_t mask; /* its affinity when it started */
};

struct ax_pool {
    int nworkers;
    struct pool_worker *workers;

    /* The current job. The caller writes these before publishing the ticket (release); a
     * thread reads them only after claiming a chunk, and a job with a claimed, unfinished
     * chunk is never replaced, so they are stable while read. */
    chunk_fn fn;
    void *arg;
    int64_t n, nchunks;

    _Atomic uint64_t ticket;   /* TICKET(nchunks, next chunk) of the current job */
    _Atomic uint32_t finished; /* chunks of the current job done (futex: the caller waits) */
    _Atomic uint32_t job;      /* bumped per job (futex: idle workers wait) */
    atomic_int sleepers;       /* workers asleep (or about to sleep) on `job` */
    atomic_bool wake_sent;     /* sleepers were woken and none has run since */
    atomic_int caller_waiting; /* the caller sleeps (or is about to) on `finished` */
    atomic_bool stop;
    atomic_bool busy;      /* a job is running: nested calls run inline */
    atomic_int caller_cpu; /* the CPU the caller published the current job from */
};

/* Sleeps while *addr == expected, at most `timeout` (NULL: no limit). */
static void futex_wait(_Atomic uint32_t *addr, uint32_t expected, const struct timespec *timeout) {
    syscall(SYS_futex, (uint32_t *)addr, FUTEX_WAIT_PRIVATE, expected, timeout, NULL, 0);
}

static void futex_wake(_Atomic uint32_t *addr, int count) {
    syscall(SYS_futex, (uint32_t *)addr, FUTEX_WAKE_PRIVATE, count, NULL, NULL, 0);
}

/* Moves the calling thread off `cpu` if it may run elsewhere, then gives it back its
 * affinity, so that the OS places it freely again (it does not move it back by itself). */
static void leave_cpu(int cpu) {
    cpu_set_t mask, others;
    if (cpu < 0 || cpu >= CPU_SETSIZE || sched_getaffinity(0, sizeof mask, &mask) != 0) return;
    others = mask;
    CPU_CLR(cpu, &others);
    if (CPU_COUNT(&others) > 0 && sched_setaffinity(0, sizeof others, &others) == 0)
        sched_setaffinity(0, sizeof mask, &mask);
}

static int64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* A worker about to help on the caller's own CPU would only take turns with it. */
static void avoid_caller_cpu(const struct ax_pool *p, int64_t *last_move) {
    int cpu = sched_getcpu();
    if (cpu < 0 || cpu != atomic_load_explicit(&p->caller_cpu, memory_order_relaxed)) return;
    int64_t now = now_ns();
    if (now - *last_move < 1000000) return;
    *last_move = now;
    leave_cpu(cpu);
}

static int64_t chunk_begin(const struct ax_pool *p, int64_t i) {
    if (i >= p->nchunks) return p->n;
    /* Boundaries on multiples of CHUNK_ALIGN items keep chunks cache-line aligned. */
    int64_t b = (int64_t)((__int128)p->n * i / p->nchunks);
    return b / CHUNK_ALIGN * CHUNK_ALIGN;
}

/* The i-th chunk handed out. Consecutive grabs go to far-apart regions (0, C, 2C, ..., 1,
 * C + 1, ...), so that each thread mostly walks its own stretch of memory in order: better for
 * the prefetchers, and threads do not fault in the same fresh pages at the same time. */
static int64_t chunk_order(const struct ax_pool *p, int64_t i) {
    int64_t threads = p->nworkers + 1;
    if (p->nchunks % threads != 0) return i;
    return i % threads * (p->nchunks / threads) + i / threads;
}

/* A worker the caller pulled onto its CPU gets its own affinity back and leaves that CPU. */
static void unpull(struct pool_worker *w) {
    if (!atomic_exchange(&w->pulled, false)) return;
    if (w->has_mask) sched_setaffinity(0, sizeof w->mask, &w->mask);
    leave_cpu(sched_getcpu());
}

/* Claims and runs chunks of the current job until none are left; w is the worker running
 * them, NULL for the caller. Returns how many it ran. */
static int run_chunks(struct ax_pool *p, struct pool_worker *w) {
    for (int ran = 0;; ran++) {
        uint64_t t = atomic_fetch_add_explicit(&p->ticket, 1, memory_order_acquire);
        uint32_t nchunks = (uint32_t)(t >> 32), i = (uint32_t)t;
        if (i >= nchunks) return ran;
        int64_t c = chunk_order(p, i);
        int64_t b = chunk_begin(p, c), e = chunk_begin(p, c + 1);
        if (w) atomic_store(&w->in_chunk, true);
        if (b < e) p->fn(p->arg, b, e);
        if (w) {
            atomic_store(&w->in_chunk, false);
            unpull(w);
        }
        /* The last chunk done wakes the caller if it went to sleep (the seq_cst pair with
         * wait_for_chunks: either it sees `finished` complete or this sees it waiting). */
        if (atomic_fetch_add(&p->finished, 1) + 1 == nchunks && atomic_load(&p->caller_waiting))
            futex_wake(&p->finished, 1);
    }
}

/* Waits for a job other than `seen`; false when the pool is stopping. */
static bool wait_for_job(struct ax_pool *p, uint32_t seen) {
    if (atomic_load(&p->stop)) return false;
    for (int i = 0; i < WORKER_SPIN; i++) {
        if (atomic_load_explicit(&p->job, memory_order_acquire) != seen) return true;
        cpu_relax();
    }
    while (!atomic_load(&p->stop) && atomic_load(&p->job) == seen) {
        atomic_fetch_add(&p->sleepers, 1);
        /* seq_cst with publish_job: either that sees this sleeper or this sees the job */
        if (!atomic_load(&p->stop) && atomic_load(&p->job) == seen) futex_wait(&p->job, seen, NULL);
        atomic_fetch_sub(&p->sleepers, 1);
    }
    atomic_store_explicit(&p->wake_sent, false, memory_order_relaxed);
    return !atomic_load(&p->stop);
}

static void *worker_main(void *arg) {
    struct pool_worker *w = arg;
    struct ax_pool *p = w->pool;
    uint32_t seen = 0;
    int64_t last_move = 0;
    w->has_mask = sched_getaffinity(0, sizeof w->mask, &w->mask) == 0;
    atomic_store(&w->tid, (int)syscall(SYS_gettid));
    while (wait_for_job(p, seen)) {
        /* Read before claiming: a job published after this read is never slept through. */
        seen = atomic_load_explicit(&p->job, memory_order_acquire);
        unpull(w); /* a pull that came after its chunk had ended */
        avoid_caller_cpu(p, &last_move);
        run_chunks(p, w);
    }
    return NULL;
}

static int machine_threads(void) {
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        int n = CPU_COUNT(&set);
        if (n > 0) return n;
    }
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

/* The threads that take part in a job, the caller included. */
static int wanted_threads(const ax_ctx *cx) {
    int n = cx->threads > 0 ? cx->threads : machine_threads();
    return n < 1 ? 1 : n > 256 ? 256 : n;
}

static struct ax_pool *pool_new(int nthreads) {
    struct ax_pool *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    atomic_init(&p->ticket, 0);
    atomic_init(&p->finished, 0);
    atomic_init(&p->job, 0);
    atomic_init(&p->sleepers, 0);
    atomic_init(&p->caller_waiting, 0);
    atomic_init(&p->wake_sent, false);
    atomic_init(&p->caller_cpu, -1);
    atomic_init(&p->stop, false);
    atomic_init(&p->busy, false);
    p->workers = calloc((size_t)(nthreads > 1 ? nthreads - 1 : 1), sizeof *p->workers);
    if (!p->workers) {
        ax_pool_free(p);
        return NULL;
    }
    /* A worker that cannot be created just leaves the pool smaller. */
    for (int i = 0; i < nthreads - 1; i++) {
        struct pool_worker *w = &p->workers[p->nworkers];
        w->pool = p;
        atomic_init(&w->tid, 0);
        atomic_init(&w->in_chunk, false);
        atomic_init(&w->pulled, false);
        if (pthread_create(&w->thread, NULL, worker_main, w) != 0) break;
        p->nworkers++;
    }
    return p;
}

void ax_pool_free(struct ax_pool *p) {
    if (!p) return;
    atomic_store(&p->stop, true);
    atomic_fetch_add(&p->job, 1);
    futex_wake(&p->job, INT_MAX);
    for (int i = 0; i < p->nworkers; i++) pthread_join(p->workers[i].thread, NULL);
    free(p->workers);
    free(p);
}

static struct ax_pool *pool_get(ax_ctx *cx) {
    if (!cx->pool && wanted_threads(cx) > 1) cx->pool = pool_new(wanted_threads(cx));
    return cx->pool;
}

int ax_pool_threads(ax_ctx *cx) {
    struct ax_pool *p = pool_get(cx);
    return p ? p->nworkers + 1 : 1;
}

static void publish_job(struct ax_pool *p, int64_t n, int64_t nchunks, chunk_fn fn, void *arg) {
    p->fn = fn;
    p->arg = arg;
    p->n = n;
    p->nchunks = nchunks;
    atomic_store_explicit(&p->finished, 0, memory_order_relaxed);
    atomic_store_explicit(&p->caller_cpu, sched_getcpu(), memory_order_relaxed);
    atomic_store_explicit(&p->ticket, TICKET(nchunks, 0), memory_order_release);
    atomic_fetch_add(&p->job, 1);
    /* A woken worker may wait a long time for a CPU on a busy machine: one wake is enough */
    if (atomic_load(&p->sleepers) > 0 && !atomic_exchange(&p->wake_sent, true))
        futex_wake(&p->job, INT_MAX);
}

static int64_t clock_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* Pins the workers that are in a chunk to the caller's CPU (see the top of the file). The
 * flag is raised after the pin, so a worker that sees it restores its affinity after the pin
 * took effect. */
static void pull_workers(struct ax_pool *p) {
    int cpu = sched_getcpu();
    if (cpu < 0 || cpu >= CPU_SETSIZE) return;
    cpu_set_t here;
    CPU_ZERO(&here);
    CPU_SET(cpu, &here);
    for (int i = 0; i < p->nworkers; i++) {
        struct pool_worker *w = &p->workers[i];
        int tid = atomic_load(&w->tid);
        if (!tid || !atomic_load(&w->in_chunk) || !w->has_mask) continue;
        if (sched_setaffinity(tid, sizeof here, &here) == 0) atomic_store(&w->pulled, true);
    }
}

/* Returns when every chunk is done; the caller has claimed all there were to claim, so what
 * is left are chunks that workers are running. After `patience` ns it pulls those workers
 * onto its CPU (once). */
static void wait_for_chunks(struct ax_pool *p, uint32_t nchunks, int64_t patience) {
    for (int i = 0; i < CALLER_SPIN; i++) {
        if (atomic_load_explicit(&p->finished, memory_order_acquire) == nchunks) return;
        cpu_relax();
    }
    int64_t deadline = clock_ns() + patience;
    bool pulled = false;
    uint32_t f;
    while ((f = atomic_load(&p->finished)) != nchunks) {
        int64_t left = deadline - clock_ns();
        if (!pulled && left <= 0) {
            pull_workers(p);
            pulled = true;
        }
        struct timespec t = {left / 1000000000, left % 1000000000};
        atomic_store(&p->caller_waiting, 1);
        if (atomic_load(&p->finished) == f) futex_wait(&p->finished, f, pulled ? NULL : &t);
        atomic_store(&p->caller_waiting, 0);
    }
}

void ax_parallel_for(ax_ctx *cx, int64_t n, int64_t grain, chunk_fn fn, void *arg) {
    if (n <= 0) return;
    if (grain < 1) grain = 1;
    struct ax_pool *p = n < 2 * grain ? NULL : pool_get(cx);
    bool expected = false;
    if (!p || p->nworkers == 0 ||
        !atomic_compare_exchange_strong_explicit(&p->busy, &expected, true, memory_order_acquire,
                                                 memory_order_relaxed)) {
        fn(arg, 0, n);
        return;
    }
    int64_t threads = p->nworkers + 1;
    int64_t nchunks = n / grain;
    if (nchunks > threads * CHUNKS_PER_THREAD) nchunks = threads * CHUNKS_PER_THREAD;
    if (nchunks > threads) nchunks -= nchunks % threads;
    if (nchunks > MAX_CHUNKS) nchunks = MAX_CHUNKS;
    publish_job(p, n, nchunks, fn, arg);
    int64_t start = clock_ns();
    int ran = run_chunks(p, NULL);
    int64_t own = ran ? (clock_ns() - start) / ran : 0;
    wait_for_chunks(p, (uint32_t)nchunks, PATIENCE_NS + 2 * own);
    atomic_store_explicit(&p->busy, false, memory_order_release);
}

/* A persistent thread pool: (threads - 1) workers plus the calling thread share each job.
 *
 * One job runs at a time (the runtime context is single-threaded; a job that itself calls
 * ax_parallel_for runs that inner loop inline). A job is [0, n) cut into chunks; every thread
 * takes chunks from an atomic counter until none are left, so a thread that is descheduled
 * for a while does not hold up the others. Workers spin briefly after a job before sleeping
 * on a condition variable, which keeps back-to-back kernels from paying a wake-up each. */
#include "pool.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define cpu_relax() _mm_pause()
#else
#define cpu_relax() ((void)0)
#endif

/* Iterations of the spin loop (a pause is ~10-60 cycles): some tens of microseconds. */
enum { SPIN_ITERATIONS = 4000, CHUNKS_PER_THREAD = 4, CHUNK_ALIGN = 64 };

typedef void (*chunk_fn)(void *arg, int64_t begin, int64_t end);

struct ax_pool {
    int nworkers;
    pthread_t *workers;
    pthread_mutex_t mu;
    pthread_cond_t wake; /* workers wait here for a new job (or stop) */
    pthread_cond_t done; /* the caller waits here for the last worker */
    int sleeping;        /* workers blocked on `wake` (under mu) */
    bool stop;

    /* The current job, published by bumping `generation`. */
    chunk_fn fn;
    void *arg;
    int64_t n, nchunks;
    atomic_int_fast64_t next_chunk;
    atomic_int active; /* workers that have not finished the current job */
    atomic_int_fast64_t generation;
    atomic_bool busy; /* a job is running: nested calls run inline */
};

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

static void run_chunks(struct ax_pool *p) {
    for (;;) {
        int64_t i = atomic_fetch_add_explicit(&p->next_chunk, 1, memory_order_relaxed);
        if (i >= p->nchunks) return;
        i = chunk_order(p, i);
        int64_t b = chunk_begin(p, i), e = chunk_begin(p, i + 1);
        if (b < e) p->fn(p->arg, b, e);
    }
}

/* Waits for a generation other than `seen`; false when the pool is stopping. */
static bool wait_for_job(struct ax_pool *p, int64_t seen) {
    for (int i = 0; i < SPIN_ITERATIONS; i++) {
        if (atomic_load_explicit(&p->generation, memory_order_acquire) != seen) return true;
        cpu_relax();
    }
    pthread_mutex_lock(&p->mu);
    while (!p->stop && atomic_load_explicit(&p->generation, memory_order_acquire) == seen) {
        p->sleeping++;
        pthread_cond_wait(&p->wake, &p->mu);
        p->sleeping--;
    }
    bool stop = p->stop;
    pthread_mutex_unlock(&p->mu);
    return !stop;
}

static void *worker_main(void *arg) {
    struct ax_pool *p = arg;
    int64_t seen = 0;
    while (wait_for_job(p, seen)) {
        seen = atomic_load_explicit(&p->generation, memory_order_acquire);
        run_chunks(p);
        /* The last worker out wakes the caller if it went to sleep. */
        if (atomic_fetch_sub_explicit(&p->active, 1, memory_order_acq_rel) == 1) {
            pthread_mutex_lock(&p->mu);
            pthread_cond_signal(&p->done);
            pthread_mutex_unlock(&p->mu);
        }
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
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->wake, NULL);
    pthread_cond_init(&p->done, NULL);
    atomic_init(&p->next_chunk, 0);
    atomic_init(&p->active, 0);
    atomic_init(&p->generation, 0);
    atomic_init(&p->busy, false);
    p->workers = calloc((size_t)(nthreads > 1 ? nthreads - 1 : 1), sizeof *p->workers);
    if (!p->workers) {
        ax_pool_free(p);
        return NULL;
    }
    /* A worker that cannot be created just leaves the pool smaller. */
    for (int i = 0; i < nthreads - 1; i++) {
        if (pthread_create(&p->workers[p->nworkers], NULL, worker_main, p) != 0) break;
        p->nworkers++;
    }
    return p;
}

void ax_pool_free(struct ax_pool *p) {
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    p->stop = true;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < p->nworkers; i++) pthread_join(p->workers[i], NULL);
    pthread_cond_destroy(&p->done);
    pthread_cond_destroy(&p->wake);
    pthread_mutex_destroy(&p->mu);
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

static void run_job(struct ax_pool *p, int64_t n, int64_t nchunks, chunk_fn fn, void *arg) {
    p->fn = fn;
    p->arg = arg;
    p->n = n;
    p->nchunks = nchunks;
    atomic_store_explicit(&p->next_chunk, 0, memory_order_relaxed);
    atomic_store_explicit(&p->active, p->nworkers, memory_order_relaxed);
    pthread_mutex_lock(&p->mu);
    atomic_fetch_add_explicit(&p->generation, 1, memory_order_release);
    if (p->sleeping) pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);

    run_chunks(p);

    for (int i = 0; i < SPIN_ITERATIONS; i++) {
        if (atomic_load_explicit(&p->active, memory_order_acquire) == 0) return;
        cpu_relax();
    }
    pthread_mutex_lock(&p->mu);
    while (atomic_load_explicit(&p->active, memory_order_acquire) != 0)
        pthread_cond_wait(&p->done, &p->mu);
    pthread_mutex_unlock(&p->mu);
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
    run_job(p, n, nchunks, fn, arg);
    atomic_store_explicit(&p->busy, false, memory_order_release);
}

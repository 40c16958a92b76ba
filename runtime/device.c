/* CPU devices (see device.h): one thread and one context per device, started on the first
 * run and parked on a condition variable between runs; a run's rendezvous for collectives. */
#include "device.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "blas.h"
#include "mpi.h"

#define MAX_DEVICES 1024

/* ---------------------------------------------------------------- interned bytes */

typedef struct interned {
    struct interned *next;
    size_t n;
    _Alignas(16) unsigned char data[];
} interned;

ax_parallel *ax_parallel_of(ax_ctx *cx) {
    if (!cx->parallel && !(cx->parallel = calloc(1, sizeof *cx->parallel))) return ax_error_oom(cx);
    if (!cx->parallel->process_count) cx->parallel->process_count = 1;
    return cx->parallel;
}

const void *ax_intern(ax_ctx *cx, const void *data, size_t n) {
    ax_parallel *p = ax_parallel_of(cx);
    if (!p) return NULL;
    for (interned *e = p->interned; e; e = e->next)
        if (e->n == n && !memcmp(e->data, data, n)) return e->data;
    interned *e = malloc(sizeof *e + n + 1);
    if (!e) return ax_error_oom(cx);
    e->n = n;
    memcpy(e->data, data, n);
    e->data[n] = 0;
    e->next = p->interned;
    p->interned = e;
    return e->data;
}

const char *ax_intern_str(ax_ctx *cx, const char *s) {
    return ax_intern(cx, s, strlen(s) + 1);
}

/* ---------------------------------------------------------------- a run's rendezvous */

struct ax_device_run {
    int n;           /* this process's devices in the run */
    int nproc, proc; /* processes, and this one's index */
    ax_mpi *mpi;     /* NULL with one process */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int arrived, finished;
    uint64_t gen; /* barriers passed */
    bool failed, out_of_step;
    uint64_t *seq;      /* per device: its exchanges so far */
    bool *victim;       /* per device: it stopped only because another one failed */
    ax_array **held[2]; /* per slot (exchange number % 2), per device: its contribution */
    const void **posted[2];
    size_t nbytes[2];
    char *gathered; /* every process's contributions (nproc * n of them) */
    size_t gathered_cap;
    char *packed;       /* this process's, one after the other, for MPI */
    const void **parts; /* into gathered, in group order */
};

static void run_init(ax_device_run *r, int n, ax_parallel *par) {
    memset(r, 0, sizeof *r);
    r->n = n;
    r->nproc = par->process_count;
    r->proc = par->process_index;
    r->mpi = r->nproc > 1 ? par->mpi : NULL;
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->cv, NULL);
}

/* Allocations per device, made before the run so that no device fails for want of them. */
static int run_alloc(ax_ctx *cx, ax_device_run *r) {
    size_t n = (size_t)r->n;
    r->seq = calloc(n, sizeof *r->seq);
    r->victim = calloc(n, sizeof *r->victim);
    r->held[0] = calloc(2 * n, sizeof **r->held);
    r->posted[0] = calloc(2 * n, sizeof **r->posted);
    r->parts = calloc(n * (size_t)r->nproc, sizeof *r->parts);
    if (!r->seq || !r->victim || !r->held[0] || !r->posted[0] || !r->parts)
        return ax_error_oom(cx), -1;
    r->held[1] = r->held[0] + n;
    r->posted[1] = r->posted[0] + n;
    return 0;
}

static void run_free(ax_device_run *r) {
    for (int s = 0; s < 2 && r->held[0]; s++)
        for (int i = 0; i < r->n; i++) ax_array_release(r->held[s][i]);
    free(r->seq);
    free(r->victim);
    free(r->held[0]);
    free(r->posted[0]);
    free(r->parts);
    free(r->gathered);
    free(r->packed);
    pthread_mutex_destroy(&r->mu);
    pthread_cond_destroy(&r->cv);
}

/* Marks the run failed (with the lock held) and wakes every device waiting in it. */
static void fail_locked(ax_device_run *r, bool out_of_step) {
    if (!r->failed) r->out_of_step = out_of_step;
    r->failed = true;
    pthread_cond_broadcast(&r->cv);
}

/* Waits until every device of this process arrives. The devices that finished their slice
 * never will: when all the others wait, they took different paths (a collective under a
 * branch some devices did not take) and the run fails instead of hanging. */
static int barrier(ax_ctx *dcx, ax_device_run *r, int i) {
    pthread_mutex_lock(&r->mu);
    uint64_t gen = r->gen;
    if (!r->failed && ++r->arrived == r->n) {
        r->arrived = 0;
        r->gen++;
        pthread_cond_broadcast(&r->cv);
    }
    while (r->gen == gen && !r->failed) {
        if (r->arrived + r->finished == r->n) {
            fail_locked(r, true);
            break;
        }
        pthread_cond_wait(&r->cv, &r->mu);
    }
    bool passed = r->gen != gen, skew = r->out_of_step;
    if (!passed && !skew) r->victim[i] = true;
    pthread_mutex_unlock(&r->mu);
    if (passed) return 0;
    if (skew)
        ax_error(dcx, AX_ERR_RUNTIME,
                 "pmap: the devices did not reach the same collectives (a collective under a "
                 "branch or loop that some devices skipped?)");
    else
        ax_error(dcx, AX_ERR_RUNTIME, "pmap: stopped because another device failed");
    return -1;
}

static void run_finish(ax_device_run *r, bool failed) {
    pthread_mutex_lock(&r->mu);
    r->finished++;
    if (failed)
        fail_locked(r, false);
    else if (r->arrived > 0 && r->arrived + r->finished == r->n)
        fail_locked(r, true);
    pthread_mutex_unlock(&r->mu);
}

bool ax_device_running(const ax_ctx *dcx) {
    return dcx->parallel && dcx->parallel->run;
}

int64_t ax_device_group_size(const ax_ctx *dcx) {
    const ax_device_run *r = dcx->parallel->run;
    return (int64_t)r->n * r->nproc;
}

int64_t ax_device_group_index(const ax_ctx *dcx) {
    const ax_device_run *r = dcx->parallel->run;
    return (int64_t)r->proc * r->n + dcx->parallel->run_index;
}

/* The leader's part across processes: this process's contributions packed, every process's
 * gathered (in rank order, which is group order). */
static int gather_processes(ax_ctx *dcx, ax_device_run *r, int slot) {
    size_t nb = r->nbytes[slot], local = nb * (size_t)r->n, all = local * (size_t)r->nproc;
    if (all > r->gathered_cap) {
        free(r->gathered);
        free(r->packed);
        r->gathered = malloc(all ? all : 1);
        r->packed = malloc(local ? local : 1);
        r->gathered_cap = r->gathered && r->packed ? all : 0;
        if (!r->gathered_cap) return ax_error_oom(dcx), -1;
    }
    for (int i = 0; i < r->n; i++) memcpy(r->packed + (size_t)i * nb, r->posted[slot][i], nb);
    if (ax_mpi_allgather(dcx, r->mpi, r->packed, local, r->gathered)) return -1;
    for (int k = 0; k < r->n * r->nproc; k++) r->parts[k] = r->gathered + (size_t)k * nb;
    return 0;
}

int ax_device_exchange(ax_ctx *dcx, ax_array *x, const void *const **parts) {
    ax_device_run *r = dcx->parallel->run;
    int i = dcx->parallel->run_index, slot = (int)(r->seq[i]++ & 1);
    size_t nb = (size_t)x->size * ax_dtype_size(x->dtype);
    ax_array_release(r->held[slot][i]); /* every device is past the exchange that used it */
    r->held[slot][i] = ax_array_retain(x);
    r->posted[slot][i] = ax_array_data(x);
    if (i == 0) r->nbytes[slot] = nb;
    if (barrier(dcx, r, i)) return -1;
    if (r->nbytes[slot] != nb)
        return ax_error(dcx, AX_ERR_RUNTIME, "pmap: devices gave a collective different sizes"), -1;
    if (!r->mpi) {
        *parts = r->posted[slot];
        return 0;
    }
    if (i == 0 && gather_processes(dcx, r, slot)) {
        pthread_mutex_lock(&r->mu);
        fail_locked(r, false);
        pthread_mutex_unlock(&r->mu);
        return -1;
    }
    if (barrier(dcx, r, i)) return -1;
    *parts = r->parts;
    return 0;
}

/* ---------------------------------------------------------------- the devices */

typedef struct device {
    struct ax_devices *set;
    int id;
    ax_ctx *cx;
    pthread_t thread;
    bool started;
    bool borrowed_blas; /* cx->blas is the main context's, lent for a run */
    int rc;             /* of its part in the last run */
} device;

typedef struct ax_devices {
    int n;
    device *dev;
    pthread_mutex_t mu;
    pthread_cond_t wake, idle;
    uint64_t job; /* runs started */
    int pending;  /* devices still working on the current one */
    bool quit;
    /* the current run */
    ax_device_fn fn;
    void *arg;
    int *index_of; /* per device: its index in the run, or -1 */
    ax_device_run *run;
} ax_devices;

static int machine_cores(void) {
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

/* The count from the command line, the environment, or the machine. */
static int wanted_devices(ax_ctx *cx) {
    if (cx->ndevices > 0) return cx->ndevices < MAX_DEVICES ? cx->ndevices : MAX_DEVICES;
    const char *env = getenv("AX_DEVICES");
    if (env && *env) {
        char *end;
        errno = 0;
        long n = strtol(env, &end, 10);
        if (*end || errno || n < 1 || n > MAX_DEVICES) {
            ax_error(cx, AX_ERR_VALUE, "AX_DEVICES=%s: the number of devices must be 1 to %d", env,
                     MAX_DEVICES);
            return -1;
        }
        return (int)n;
    }
    int n = machine_cores() / ax_mpi_local_size();
    return n < 1 ? 1 : n;
}

int ax_set_local_device_count(ax_ctx *cx, int64_t n) {
    if (n < 1 || n > MAX_DEVICES) {
        ax_error(cx, AX_ERR_VALUE, "jax_num_cpu_devices must be 1 to %d, not %lld", MAX_DEVICES,
                 (long long)n);
        return -1;
    }
    const ax_devices *d = cx->parallel ? cx->parallel->devices : NULL;
    if (d && d->n != n) {
        ax_error(cx, AX_ERR_VALUE,
                 "jax_num_cpu_devices must be set before the devices start, and %d devices "
                 "have started (by a pmap or a device_put)",
                 d->n);
        return -1;
    }
    cx->ndevices = (int)n;
    return 0;
}

int ax_local_device_count(ax_ctx *cx) {
    if (cx->parallel && cx->parallel->devices) return cx->parallel->devices->n;
    return wanted_devices(cx);
}

int ax_process_index(ax_ctx *cx) {
    return cx->parallel ? cx->parallel->process_index : 0;
}

int ax_process_count(ax_ctx *cx) {
    return cx->parallel && cx->parallel->process_count > 0 ? cx->parallel->process_count : 1;
}

/* A device's thread: parked until a run includes it, then its part of the run. */
static void *device_main(void *arg) {
    device *me = arg;
    ax_devices *d = me->set;
    ax_ctx *dcx = me->cx;
    uint64_t seen = 0;
    pthread_mutex_lock(&d->mu);
    for (;;) {
        while (d->job == seen && !d->quit) pthread_cond_wait(&d->wake, &d->mu);
        if (d->quit) break;
        seen = d->job;
        int idx = d->index_of[me->id];
        if (idx < 0) continue;
        ax_device_fn fn = d->fn;
        void *farg = d->arg;
        ax_device_run *run = d->run;
        pthread_mutex_unlock(&d->mu);
        dcx->parallel->run = run;
        dcx->parallel->run_index = idx;
        int rc = fn(dcx, idx, farg);
        run_finish(run, rc != 0);
        dcx->parallel->run = NULL;
        pthread_mutex_lock(&d->mu);
        me->rc = rc;
        if (--d->pending == 0) pthread_cond_signal(&d->idle);
    }
    pthread_mutex_unlock(&d->mu);
    return NULL;
}

static void devices_stop(ax_devices *d) {
    if (!d) return;
    pthread_mutex_lock(&d->mu);
    d->quit = true;
    pthread_cond_broadcast(&d->wake);
    pthread_mutex_unlock(&d->mu);
    for (int i = 0; i < d->n; i++)
        if (d->dev[i].started) pthread_join(d->dev[i].thread, NULL);
    for (int i = 0; i < d->n; i++) {
        if (d->dev[i].borrowed_blas) d->dev[i].cx->blas = NULL;
        ax_ctx_free(d->dev[i].cx);
    }
    pthread_mutex_destroy(&d->mu);
    pthread_cond_destroy(&d->wake);
    pthread_cond_destroy(&d->idle);
    free(d->index_of);
    free(d->dev);
    free(d);
}

static ax_devices *devices_start(ax_ctx *cx, int n) {
    ax_devices *d = calloc(1, sizeof *d);
    if (!d) return ax_error_oom(cx);
    pthread_mutex_init(&d->mu, NULL);
    pthread_cond_init(&d->wake, NULL);
    pthread_cond_init(&d->idle, NULL);
    d->dev = calloc((size_t)n, sizeof *d->dev);
    d->index_of = calloc((size_t)n, sizeof *d->index_of);
    bool ok = d->dev && d->index_of;
    d->n = ok ? n : 0;
    for (int i = 0; ok && i < n; i++) {
        ax_ctx *dcx = ax_ctx_new();
        ok = dcx && ax_parallel_of(dcx);
        if (dcx) dcx->threads = 1; /* the devices already use every core: no pool in one */
        d->dev[i] = (device){.set = d, .id = i, .cx = dcx};
    }
    for (int i = 0; ok && i < n; i++) {
        ok = pthread_create(&d->dev[i].thread, NULL, device_main, &d->dev[i]) == 0;
        d->dev[i].started = ok;
    }
    if (ok) return d;
    devices_stop(d);
    return ax_error(cx, AX_ERR_MEMORY, "cannot start %d devices (threads and contexts)", n);
}

static ax_devices *devices_of(ax_ctx *cx) {
    ax_parallel *p = ax_parallel_of(cx);
    if (!p) return NULL;
    if (p->devices) return p->devices;
    int n = wanted_devices(cx);
    return n < 0 ? NULL : (p->devices = devices_start(cx, n));
}

ax_ctx *ax_device_context(ax_ctx *cx, int device) {
    ax_devices *d = devices_of(cx);
    if (!d) return NULL;
    if (device < 0 || device >= d->n)
        return ax_error(cx, AX_ERR_VALUE, "there is no device %d: this process has %d", device,
                        d->n);
    return d->dev[device].cx;
}

/* OpenBLAS for a run: the main context's, lent to the devices, on one thread each while
 * several devices run (its own threads would only compete with them). Returns the thread
 * count to restore afterwards, or 0. */
static int lend_blas(ax_ctx *cx, ax_devices *d, int n, const int *devs) {
    if (!cx->blas && !ax_blas_get(cx)) {
        ax_error_clear(cx); /* a device that needs BLAS reports it */
        return 0;
    }
    for (int k = 0; k < n; k++) {
        device *dv = &d->dev[devs ? devs[k] : k];
        if (dv->cx->blas) continue;
        dv->cx->blas = cx->blas;
        dv->borrowed_blas = true;
    }
    if (n < 2 || !cx->blas->get_num_threads) return 0;
    int before = cx->blas->get_num_threads();
    cx->blas->set_num_threads(1);
    return before;
}

/* Waits for the run's devices; a Ctrl-C on the main context reaches them meanwhile. */
static void wait_idle(ax_ctx *cx, ax_devices *d) {
    pthread_mutex_lock(&d->mu);
    while (d->pending > 0) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 20 * 1000000;
        if (ts.tv_nsec >= 1000000000) ts.tv_sec++, ts.tv_nsec -= 1000000000;
        pthread_cond_timedwait(&d->idle, &d->mu, &ts);
        if (ax_ctx_interrupted(cx))
            for (int i = 0; i < d->n; i++)
                if (d->index_of[i] >= 0) d->dev[i].cx->interrupt = 1;
    }
    pthread_mutex_unlock(&d->mu);
}

/* The error of a failed run, moved to cx: the first device that failed on its own. */
static void collect_errors(ax_ctx *cx, ax_devices *d, ax_device_run *run) {
    int best = -1;
    for (int i = 0; i < d->n; i++) {
        int k = d->index_of[i];
        if (k < 0 || !d->dev[i].rc) continue;
        if (best < 0 || (run->victim[d->index_of[best]] && !run->victim[k])) best = i;
    }
    if (best >= 0) {
        const ax_error_info *e = &d->dev[best].cx->err;
        if (e->kind != AX_ERR_NONE)
            ax_error(cx, e->kind, "%s", e->message);
        else
            ax_error(cx, AX_ERR_RUNTIME, "pmap: device %d failed", best);
    }
    for (int i = 0; i < d->n; i++) {
        if (d->index_of[i] < 0) continue;
        ax_error_clear(d->dev[i].cx);
        d->dev[i].cx->interrupt = 0;
    }
}

int ax_devices_run(ax_ctx *cx, int n, const int *devs, ax_device_fn fn, void *arg) {
    ax_devices *d = devices_of(cx);
    if (!d) return -1;
    for (int k = 0; k < n; k++)
        if (devs && (devs[k] < 0 || devs[k] >= d->n))
            return ax_error(cx, AX_ERR_VALUE, "there is no device %d: this process has %d", devs[k],
                            d->n),
                   -1;
    ax_device_run run;
    run_init(&run, n, cx->parallel);
    if (run_alloc(cx, &run)) {
        run_free(&run);
        return -1;
    }
    int restore = lend_blas(cx, d, n, devs);
    pthread_mutex_lock(&d->mu);
    for (int i = 0; i < d->n; i++) d->index_of[i] = -1;
    for (int k = 0; k < n; k++) {
        device *dv = &d->dev[devs ? devs[k] : k];
        d->index_of[dv->id] = k;
        dv->rc = 0;
        dv->cx->x64 = cx->x64;
    }
    d->fn = fn;
    d->arg = arg;
    d->run = &run;
    d->pending = n;
    d->job++;
    pthread_cond_broadcast(&d->wake);
    pthread_mutex_unlock(&d->mu);
    wait_idle(cx, d);
    if (restore > 0) cx->blas->set_num_threads(restore);
    bool failed = false;
    for (int i = 0; i < d->n; i++) failed |= d->index_of[i] >= 0 && d->dev[i].rc != 0;
    if (failed) collect_errors(cx, d, &run);
    run_free(&run);
    return failed ? -1 : 0;
}

/* ---------------------------------------------------------------- processes */

int ax_distributed_initialize(ax_ctx *cx) {
    ax_parallel *p = ax_parallel_of(cx);
    if (!p) return -1;
    if (p->mpi || !ax_mpi_launched()) return 0;
    if (p->mpi_finished)
        return ax_error(cx, AX_ERR_RUNTIME,
                        "jax.distributed.initialize: MPI cannot start again after shutdown()"),
               -1;
    int local = ax_local_device_count(cx);
    if (local < 0) return -1;
    ax_mpi *m = ax_mpi_open(cx);
    if (!m) return -1;
    int size = ax_mpi_size(m), rank = ax_mpi_rank(m);
    int *counts = calloc((size_t)size, sizeof *counts);
    int rc = counts ? ax_mpi_allgather(cx, m, &local, sizeof local, counts) : -1;
    if (!counts) ax_error_oom(cx);
    for (int k = 0; !rc && k < size; k++)
        if (counts[k] != local) {
            ax_error(cx, AX_ERR_VALUE,
                     "jax.distributed.initialize: every process needs the same number of "
                     "devices, but process %d has %d and process %d has %d (set --devices N "
                     "or AX_DEVICES=N)",
                     rank, local, k, counts[k]);
            rc = -1;
        }
    free(counts);
    /* kept after a failure too: the program's end then stops every process (MPI_Abort) */
    p->mpi = m;
    if (rc) return -1;
    p->process_index = rank;
    p->process_count = size;
    return 0;
}

int ax_distributed_same(ax_ctx *cx, int64_t value, const char *what) {
    ax_parallel *p = cx->parallel;
    if (!p || !p->mpi || p->process_count < 2) return 0;
    int64_t *all = calloc((size_t)p->process_count, sizeof *all);
    if (!all) return ax_error_oom(cx), -1;
    int rc = ax_mpi_allgather(cx, p->mpi, &value, sizeof value, all);
    for (int k = 0; !rc && k < p->process_count; k++)
        if (all[k] != value) {
            ax_error(cx, AX_ERR_VALUE,
                     "every process must run the same pmap, but %s is %lld in process %d and "
                     "%lld in process %d",
                     what, (long long)value, p->process_index, (long long)all[k], k);
            rc = -1;
        }
    free(all);
    return rc;
}

void ax_distributed_finish(ax_ctx *cx, bool failed) {
    ax_parallel *p = cx->parallel;
    if (!p || !p->mpi) return;
    ax_mpi_close(p->mpi, failed);
    p->mpi = NULL;
    p->mpi_finished = true;
    p->process_index = 0; /* what follows runs on this process's devices alone */
    p->process_count = 1;
}

void ax_parallel_free(ax_parallel *p) {
    if (!p) return;
    devices_stop(p->devices);
    ax_mpi_close(p->mpi, false);
    for (interned *e = p->interned, *next; e; e = next) {
        next = e->next;
        free(e);
    }
    free(p);
}

/* Native programs: build (fuse, generate, compile or load) and run. See jit.h. */
#include "jit.h"

#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../runtime/blas.h"
#include "../runtime/elementwise.h"
#include "../runtime/pool.h"
#include "../runtime/special.h"
#include "../runtime/tile.h"
#include "codegen.h"
#include "gccjit.h"
#include "fuse.h"
#include "quickgen.h"
#include "jit_cache.h"
#include "jit_job.h"
#include "jit_layout.h"
#include "jit_loops.h"

/* A layout variant of a program (compiler/jit_layout.h): the broadcast axes of each input it
 * is for, how often calls brought them, and its program once built. */
typedef struct variant {
    uint32_t *axes;
    int seen;
    bool failed;
    struct ax_jit_program *prog;
} variant;

enum { MAX_VARIANTS = 4 };

struct ax_jit_program {
    ax_ir *ir;
    ax_plan *plan;
    void *dl; /* the loaded shared object; NULL: the quick tier's code, or the IR on the eager
                 kernels */
    ax_step_fn *fn; /* per step (NULL for eager steps): GCC's code, or else the quick tier's */
    /* the quick tier's code (compiler/quickgen.h), run until GCC's is ready; kept until the
     * program is freed, as a call in progress may still be in it when GCC's code arrives */
    ax_quick_code *quick;
    ax_jit_info info;
    /* The context that built it: only calls under it change the program (poll its compile,
     * count its calls, build variants). Calls under other contexts (pmap's devices, threads
     * that run it at once) only read it: see ax_jit_ready. */
    ax_ctx *owner;
    struct pending *pending; /* the background compile it waits for, or NULL */
    int nvariants;
    variant variants[MAX_VARIANTS];
};

/* A compile in the background (tiered execution): queued until a child process is free to
 * run it, then running. Its program runs on the eager kernels meanwhile. */
typedef struct pending {
    struct pending *next;
    struct jit_state *owner;
    ax_jit_program *prog; /* NULL once the program is freed: the compile then only fills the
                             disk cache (see detach) */
    ax_jit_job *job;      /* NULL while queued */
    ax_code *own;         /* the code of a queued compile whose program is gone */
    uint64_t key;
    char *name;
    double queued_ms, started_ms;
} pending;

/* Per-context state: whether the tools exist, the one warning, the log switch, the cache,
 * the compiles in the background. */
typedef struct jit_state {
    ax_ctx *cx; /* its context */
    bool tools_checked, tools_ok, warned, log;
    bool sync;        /* AX_JIT_SYNC=1: every call waits for its compile */
    int quick;        /* the quick tier: QUICK_OFF, QUICK_ON or QUICK_ONLY (AX_JIT_QUICK) */
    int max_jobs;     /* compiles in the background at once */
    int exit_wait_ms; /* AX_JIT_EXIT_WAIT: how long the end waits for running compiles */
    ax_jit_cache *cache;
    ax_gccjit *api; /* opened on the first compile in this process (not for compiles in the
                       background: the child opens it) */
    bool api_failed;
    char api_why[256];
    pending *pending; /* in the order they were asked for */
    int running;
    int blas_threads; /* OpenBLAS's thread count while compiles run (it runs on one), or 0 */
    double last_poll_ms;
} jit_state;

/* While a compile runs in the background, OpenBLAS runs on one thread: raising its thread
 * count again after each small product (runtime/linalg.c) wakes its second thread, which then
 * spins on the CPU the compiler needs while the eager steps wait for it. With the short spin
 * runtime/blas.c asks for, measured on the SGD step of conformance 17 (2 cores, quiet): 300
 * steps on an empty cache 108 -> 52 ms, the compile 151 -> 99 ms of wall time
 * (docs/benchmarks.md); this alone left the worker that the first call woke spinning through
 * the compile (53-109 ms). Called whenever `running` changes. */
static void blas_follow_compiles(jit_state *s) {
    ax_blas *blas = s->cx->blas;
    if (!blas || !blas->get_num_threads) return;
    if (s->running > 0 && !s->blas_threads && blas->get_num_threads() > 1) {
        s->blas_threads = blas->get_num_threads();
        blas->set_num_threads(1);
    } else if (s->running == 0 && s->blas_threads) {
        blas->set_num_threads(s->blas_threads);
        s->blas_threads = 0;
    }
}

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static void finish_at_exit(jit_state *s);

static void jit_state_free(void *p) {
    jit_state *s = p;
    if (s) {
        finish_at_exit(s);
        ax_jit_cache_close(s->cache);
        ax_gccjit_close(s->api);
    }
    free(s);
}

/* libgccjit, opened the first time it is needed; NULL (reason in s->api_why) if it cannot. */
static const ax_gccjit *gccjit(jit_state *s) {
    if (!s->api && !s->api_failed) {
        s->api = ax_gccjit_open(s->api_why, sizeof s->api_why);
        s->api_failed = s->api == NULL;
    }
    return s->api;
}

static bool env_flag(const char *name) {
    const char *v = getenv(name);
    return v && *v && strcmp(v, "0") != 0;
}

/* Compiles run one per core beyond the one running ax, at least one, at most four: more
 * would only slow each other and the program they are for. */
static int background_jobs(void) {
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    return cpus <= 2 ? 1 : cpus - 1 > 4 ? 4 : (int)cpus - 1;
}

/* How long the end of a process waits at most for compiles still running, so that the next
 * run finds their code in the disk cache (docs/jit.md, "Tiered execution", has the figures):
 * a bound, in case a compile takes very long, not what a wait usually costs. */
#define EXIT_WAIT_MS 10000

static int exit_wait_ms(void) {
    const char *v = getenv("AX_JIT_EXIT_WAIT");
    if (!v || !*v) return EXIT_WAIT_MS;
    char *end;
    long ms = strtol(v, &end, 10);
    if (ms >= 0 && ms <= 3600000 && !*end) return (int)ms;
    fprintf(stderr,
            "ax: warning: AX_JIT_EXIT_WAIT='%s' is not a number of milliseconds (0 to 3600000); "
            "the end of the process waits at most %d ms for compiles\n",
            v, EXIT_WAIT_MS);
    return EXIT_WAIT_MS;
}

/* AX_JIT_QUICK: 0 turns the quick tier off; "only" runs quick code alone, never compiling
 * with GCC (for tests and benchmarks of the tier); unset, the quick tier runs a program's
 * calls while GCC compiles its code in the background. */
enum { QUICK_OFF, QUICK_ON, QUICK_ONLY };

static int quick_mode(void) {
    const char *v = getenv("AX_JIT_QUICK");
    if (!ax_quickgen_supported()) return QUICK_OFF;
    if (v && !strcmp(v, "only")) return QUICK_ONLY;
    return v && !strcmp(v, "0") ? QUICK_OFF : QUICK_ON;
}

static jit_state *state(ax_ctx *cx) {
    if (!cx->jit) {
        jit_state *s = calloc(1, sizeof *s);
        if (!s) return NULL;
        s->cx = cx;
        s->log = env_flag("AX_LOG_COMPILES");
        s->sync = env_flag("AX_JIT_SYNC");
        s->quick = quick_mode();
        s->max_jobs = background_jobs();
        s->exit_wait_ms = exit_wait_ms();
        s->cache = ax_jit_cache_open(s->log);
        cx->jit = s;
        cx->jit_free = jit_state_free;
    }
    return cx->jit;
}

bool ax_jit_logging(ax_ctx *cx) {
    jit_state *s = state(cx);
    return s && s->log;
}

/* libgccjit runs the assembler and linker as programs; without `as` it exits the whole
 * process, so look for them first. */
static bool on_path(const char *prog) {
    const char *path = getenv("PATH");
    if (!path) return false;
    char buf[4096];
    while (*path) {
        size_t n = strcspn(path, ":");
        if (n > 0 && n + strlen(prog) + 2 < sizeof buf) {
            snprintf(buf, sizeof buf, "%.*s/%s", (int)n, path, prog);
            if (access(buf, X_OK) == 0) return true;
        }
        path += n;
        if (*path == ':') path++;
    }
    return false;
}

static bool tools_ok(jit_state *s) {
    if (!s->tools_checked) {
        s->tools_ok = on_path("as") && on_path("ld");
        s->tools_checked = true;
    }
    return s->tools_ok;
}

static void warn_once(jit_state *s, const char *why) {
    if (s->warned) return;
    s->warned = true;
    fprintf(stderr,
            "ax: warning: jit cannot build native code (%s); jitted functions run on "
            "the quick tier's code or the eager kernels\n",
            why);
}

/* ---- building ---- */

/* "$TMPDIR/name" (default /tmp), a template for mkstemp / mkdtemp. */
static void temp_template(char *buf, size_t n, const char *name) {
    const char *base = getenv("TMPDIR");
    snprintf(buf, n, "%s/%s", base && *base ? base : "/tmp", name);
}

static bool bind_functions(ax_jit_program *p) {
    for (int s = 0; s < p->plan->code.h.nsteps; s++) {
        if (p->plan->code.steps[s].kind != AX_STEP_LOOP) continue;
        char name[32];
        snprintf(name, sizeof name, "s%d", ax_jit_code_twin(&p->plan->code, s));
        p->fn[s] = (ax_step_fn)dlsym(p->dl, name);
        if (!p->fn[s]) return false;
    }
    return true;
}

/* The shared object a finished job compiled, loaded, then offered to the disk cache (the code
 * runs whether or not it can be cached); NULL with the reason. */
static void *load_job(jit_state *s, ax_jit_job *job, uint64_t key, char *why, size_t whylen) {
    if (ax_jit_job_poll(job, 0) != AX_JOB_DONE) {
        snprintf(why, whylen, "%s", ax_jit_job_why(job));
        return NULL;
    }
    const char *so = ax_jit_job_so(job);
    void *dl = dlopen(so, RTLD_NOW | RTLD_LOCAL);
    if (!dl) {
        const char *dlerr = dlerror();
        snprintf(why, whylen, "cannot load the compiled code: %s", dlerr ? dlerr : "?");
        return NULL;
    }
    ax_jit_cache_store(s->cache, key, so);
    return dl;
}

/* Installs the shared object in the program; false (with the reason) when it lacks the
 * program's functions. */
static bool install(ax_jit_program *p, void *dl, char *why, size_t whylen) {
    p->dl = dl;
    if (bind_functions(p)) return true;
    snprintf(why, whylen, "compiled code lacks its functions");
    dlclose(p->dl);
    p->dl = NULL;
    for (int k = 0; p->quick && k < p->plan->code.h.nsteps; k++)
        p->fn[k] = ax_quickgen_fn(p->quick, k); /* the quick tier's code again */
    return false;
}

/* Starts a compile and waits for it, until it ends or Ctrl-C (cx->interrupt) abandons it (the
 * child is killed then: *interrupted). The loaded code, or NULL with the reason. */
static void *compile_and_wait(ax_ctx *cx, jit_state *s, const ax_code *code, uint64_t key,
                              char *why, size_t whylen, bool *interrupted) {
    const ax_gccjit *api = gccjit(s);
    if (!api) {
        snprintf(why, whylen, "%s", s->api_why);
        return NULL;
    }
    ax_jit_job *job = ax_jit_job_start(api, code, key, why, whylen);
    if (!job) return NULL;
    while (!(*interrupted = cx->interrupt != 0) && ax_jit_job_poll(job, 50) == AX_JOB_RUNNING) {
    }
    void *dl = *interrupted ? NULL : load_job(s, job, key, why, whylen);
    ax_jit_job_free(job);
    return dl;
}

/* ---- compiles in the background ---- */

/* A copy of the code (its arrays), for a queued compile that outlives its program. */
static ax_code *code_copy(const ax_code *c) {
    ax_code *d = calloc(1, sizeof *d);
    if (!d) return NULL;
    d->h = c->h;
    d->steps = malloc(((size_t)c->h.nsteps + 1) * sizeof *d->steps);
    d->nodes = malloc(((size_t)c->h.nnodes + 1) * sizeof *d->nodes);
    d->bufs = malloc(((size_t)c->h.nbufs + 1) * sizeof *d->bufs);
    if (d->steps && d->nodes && d->bufs) {
        memcpy(d->steps, c->steps, (size_t)c->h.nsteps * sizeof *d->steps);
        memcpy(d->nodes, c->nodes, (size_t)c->h.nnodes * sizeof *d->nodes);
        memcpy(d->bufs, c->bufs, (size_t)c->h.nbufs * sizeof *d->bufs);
        return d;
    }
    free(d->steps), free(d->nodes), free(d->bufs), free(d);
    return NULL;
}

static void code_free(ax_code *c) {
    if (c) free(c->steps), free(c->nodes), free(c->bufs), free(c);
}

/* The calls a program ran before its native code: on the eager kernels or the quick tier's. */
static int calls_before_native(const ax_jit_program *p) {
    return p->info.eager_calls + p->info.quick_calls;
}

static void pending_unlink(jit_state *s, pending *q) {
    for (pending **at = &s->pending; *at; at = &(*at)->next)
        if (*at == q) {
            *at = q->next;
            break;
        }
    if (q->job) s->running--, blas_follow_compiles(s);
    if (q->prog) q->prog->pending = NULL, q->prog->info.compiling = false;
    ax_jit_job_free(q->job);
    code_free(q->own);
    free(q->name);
    free(q);
}

/* The program lets go of its compile (it is freed, or the context ends): a running compile
 * goes on for the disk cache, and so does a queued one if the program ran (with a copy of its
 * code); one that never ran is dropped. */
static void detach(jit_state *s, pending *q) {
    ax_jit_program *p = q->prog;
    if (!q->job && (calls_before_native(p) == 0 || !(q->own = code_copy(&p->plan->code)))) {
        pending_unlink(s, q);
        return;
    }
    p->pending = NULL;
    p->info.compiling = false;
    q->prog = NULL;
}

static void log_background(const jit_state *s, const pending *q, const char *outcome) {
    if (s->log)
        fprintf(stderr,
                "ax: jit: compiled %s in %.2f ms in the background (%.2f ms after it was "
                "asked for, %.2f ms of CPU): %s\n",
                q->name, now_ms() - q->started_ms, now_ms() - q->queued_ms,
                ax_jit_job_cpu_ms(q->job), outcome);
}

/* A compile that ended: its code goes to the disk cache, and to its program if it still has
 * one; a failure warns (once) and leaves the program on the eager kernels. */
static void settle(jit_state *s, pending *q) {
    char why[512] = "", outcome[128];
    ax_jit_program *p = q->prog;
    void *dl = load_job(s, q->job, q->key, why, sizeof why);
    if (dl && !p) { /* no program left: the disk cache was what it was for */
        dlclose(dl);
        log_background(s, q, "stored in the disk cache (its function is gone)");
    } else if (dl && install(p, dl, why, sizeof why)) {
        p->info.native = true;
        p->info.build_ms = now_ms() - q->started_ms;
        snprintf(outcome, sizeof outcome, "native from its call %d on", calls_before_native(p) + 1);
        log_background(s, q, outcome);
    } else {
        warn_once(s, why);
    }
    pending_unlink(s, q);
}

/* The niceness of a compile whose program runs on the quick tier's code meanwhile: on a busy
 * machine its steps, nearly native already, then get the CPU before the compiler. Measured on
 * the SGD step (2 cores, load 5: docs/benchmarks.md): 300 steps from an empty cache 88 -> 54 ms,
 * the last 50 of them 14 -> 6 ms (5.2 from the disk cache); a 10-step script that waits at
 * its end for the compile took as long either way (186 against 191 ms, medians of 6). */
#define QUICK_COMPILE_NICE 10

/* Starts queued compiles of programs that ran (the first call gets the machine to itself),
 * while fewer than max_jobs run. */
static void start_queued(jit_state *s) {
    for (pending *q = s->pending, *next; q && s->running < s->max_jobs; q = next) {
        next = q->next;
        if (q->job || (q->prog && calls_before_native(q->prog) == 0)) continue;
        char why[512] = "";
        q->started_ms = now_ms();
        /* libgccjit is opened by the child unless this process has it already */
        const ax_code *code = q->prog ? &q->prog->plan->code : q->own;
        if (!(q->job = ax_jit_job_start(s->api, code, q->key, why, sizeof why))) {
            warn_once(s, why);
            pending_unlink(s, q);
            continue;
        }
        /* a program on quick code runs at nearly native speed: its steps go first */
        if (q->prog && q->prog->quick) ax_jit_job_renice(q->job, QUICK_COMPILE_NICE);
        s->running++;
        blas_follow_compiles(s);
    }
}

/* Settles the compiles that ended, then starts queued ones. */
static void poll_pending(jit_state *s) {
    s->last_poll_ms = now_ms();
    for (pending *q = s->pending, *next; q; q = next) {
        next = q->next;
        if (q->job && ax_jit_job_poll(q->job, 0) != AX_JOB_RUNNING) settle(s, q);
    }
    start_queued(s);
}

/* Queues the program's compile: it starts after the program's first call (ax_jit_run), when
 * a child is free. A program whose compile cannot start (no scratch directory, no process)
 * stays on the eager kernels, with the warning. */
static void compile_in_background(jit_state *s, ax_jit_program *p) {
    pending *q = calloc(1, sizeof *q);
    const char *name = p->ir->name ? p->ir->name : "<lambda>";
    if (!q || !(q->name = strdup(name))) {
        free(q);
        return; /* out of memory: it stays on the eager kernels */
    }
    q->owner = s;
    q->prog = p;
    q->key = p->info.key;
    q->queued_ms = now_ms();
    pending **at = &s->pending;
    while (*at) at = &(*at)->next;
    *at = q;
    p->pending = q;
    p->info.background = p->info.compiling = true;
}

/* The end of the context: the compiles of programs that ran get up to exit_wait_ms (or until
 * Ctrl-C) to finish, queued ones included, so that the next run loads their code from the disk
 * cache; waiting costs no more than a synchronous compile would have. The rest are killed. */
static void finish_at_exit(jit_state *s) {
    double t0 = now_ms(), deadline = t0 + s->exit_wait_ms;
    int asked = 0, stopped = 0;
    for (pending *q = s->pending, *next; q; q = next) {
        next = q->next;
        if (q->prog) detach(s, q);
    }
    for (pending *q = s->pending; q; q = q->next) asked++;
    while (s->pending && now_ms() < deadline && !s->cx->interrupt) {
        ax_jit_job *jobs[16];
        int n = 0;
        for (pending *q = s->pending; q && n < 16; q = q->next)
            if (q->job) jobs[n++] = q->job;
        ax_jit_job_wait_any(jobs, n, (int)(deadline - now_ms()) + 1);
        poll_pending(s);
    }
    while (s->pending) {
        stopped++;
        pending_unlink(s, s->pending);
    }
    if (s->log && asked)
        fprintf(stderr,
                "ax: jit: at exit, waited %.2f ms for %d compile%s in the background; %d "
                "stopped (AX_JIT_EXIT_WAIT=%d ms)\n",
                now_ms() - t0, asked, asked == 1 ? "" : "s", stopped, s->exit_wait_ms);
}

/* ---- programs ---- */

/* Counts the steps of a plan and of its sub-programs' plans. */
static void count_plan(ax_jit_info *info, const ax_plan *plan) {
    info->nsteps += plan->nsteps;
    for (int s = 0; s < plan->nsteps; s++) {
        const ax_step *st = &plan->steps[s];
        bool product = st->kind == AX_STEP_EAGER && plan->ir->eqns[st->eqn].prim == AX_P_DOT_GENERAL;
        info->nloops += st->kind == AX_STEP_LOOP;
        info->ngemms += product; /* on OpenBLAS, as eagerly */
        info->neager += st->kind == AX_STEP_EAGER && !product;
        for (int i = 0; i < st->nsub; i++) count_plan(info, st->sub[i]);
    }
}

static void count_steps(ax_jit_program *p) {
    count_plan(&p->info, p->plan);
}

static bool prepare_functions(ax_jit_program *p) {
    p->fn = calloc((size_t)p->plan->code.h.nsteps + 1, sizeof *p->fn);
    return p->fn != NULL;
}

/* A rough count of the elements one call writes on the eager kernels (each equation counting
 * at least 1024, its dispatch): loops multiply their bodies, a while's trip count is unknown. */
static double eager_work(const ax_ir *ir) {
    double work = 0;
    for (int k = 0; k < ir->neqns; k++) {
        const ax_ir_eqn *e = &ir->eqns[k];
        const ax_prim_info *row = ax_prim_get(e->prim);
        double runs = row->runs ? row->runs(&e->params) : 1;
        if (isinf(runs)) return INFINITY;
        double body = 0;
        for (int i = 0; i < e->nsub; i++) body += eager_work(e->sub[i]);
        body *= runs;
        double out = 0;
        for (int j = 0; j < e->nout; j++) {
            const ax_aval *t = &ir->types[e->out[j]];
            double n = 1;
            for (int d = 0; d < t->ndim; d++) n *= (double)t->shape[d];
            out += n;
        }
        work += body + (out > 1024 ? out : 1024);
    }
    return work;
}

/* Whether the first calls should run on the eager kernels while the code compiles: not when
 * one call could take longer than the compile itself (~2^26 elements written, ~0.1 s: the
 * order of a compile), as a while loop's or a long scan's can, whose steps cost microseconds
 * eagerly and nanoseconds natively. */
static bool worth_tiering(const ax_ir *ir) {
    return eager_work(ir) < (double)(1 << 26);
}

/* The quick tier's code for the program's loops (compiler/quickgen.h), run until GCC's code is
 * ready; false (logged) when some loop is not one it renders. */
static bool build_quick(jit_state *s, ax_jit_program *p) {
    char why[256] = "";
    double t0 = now_ms();
    p->quick = ax_quickgen_build(&p->plan->code, why, sizeof why);
    if (!p->quick) {
        if (s->log)
            fprintf(stderr, "ax: jit: no quick code for %s: %s\n",
                    p->ir->name ? p->ir->name : "<lambda>", why);
        return false;
    }
    for (int k = 0; k < p->plan->code.h.nsteps; k++) p->fn[k] = ax_quickgen_fn(p->quick, k);
    p->info.quick = true;
    if (s->log)
        fprintf(stderr, "ax: jit: quick code for %s in %.3f ms (%zu bytes of x86-64)\n",
                p->ir->name ? p->ir->name : "<lambda>", now_ms() - t0, ax_quickgen_size(p->quick));
    return true;
}

/* Fuses `ir`, then loads its code from the disk cache or compiles it: at once, or (background)
 * in a child process while the program runs on the quick tier's code (or else the eager
 * kernels). */
static ax_jit_program *build(ax_ctx *cx, ax_ir *ir, bool background) {
    double t0 = now_ms();
    jit_state *s = state(cx);
    ax_jit_program *p = calloc(1, sizeof *p);
    if (!p || !s) {
        free(p);
        ax_error_oom(cx);
        return NULL;
    }
    p->ir = ax_ir_retain(ir);
    p->owner = cx;
    p->plan = ax_fuse(ir);
    if (!p->plan || !prepare_functions(p)) {
        ax_jit_free(p);
        ax_error_oom(cx);
        return NULL;
    }
    if (p->plan->unlowered) {
        ax_error(cx, AX_ERR_RUNTIME,
                 "internal error: jit cannot compute %s: its row in the primitive table declares "
                 "no lowering",
                 p->plan->unlowered);
        ax_jit_free(p);
        return NULL;
    }
    count_steps(p);
    if (s->pending) poll_pending(s);
    if (p->info.nloops == 0) { /* nothing to compile: eager steps only */
        p->info.build_ms = now_ms() - t0;
        return p;
    }
    p->info.key = ax_code_key(&p->plan->code);
    char why[512] = "";
    if (s->quick == QUICK_ONLY && build_quick(s, p)) {
        p->info.build_ms = now_ms() - t0;
        return p;
    }
    void *dl = ax_jit_cache_load(s->cache, p->info.key);
    p->info.from_disk = dl && install(p, dl, why, sizeof why);
    if (!p->dl && !tools_ok(s)) { /* a cached entry loads without them */
        warn_once(s, "the assembler 'as' or linker 'ld' is not on PATH");
        if (s->quick == QUICK_ON) build_quick(s, p); /* needs neither */
    } else if (!p->dl && background) {
        if (s->quick == QUICK_ON) build_quick(s, p);
        compile_in_background(s, p);
    } else if (!p->dl) {
        bool interrupted = false;
        dl = compile_and_wait(cx, s, &p->plan->code, p->info.key, why, sizeof why, &interrupted);
        if (interrupted) { /* KeyboardInterrupt, and nothing kept of the abandoned compile */
            ax_jit_free(p);
            cx->interrupt = 0;
            ax_error(cx, AX_ERR_INTERRUPT, "interrupted");
            return NULL;
        }
        if (!dl || !install(p, dl, why, sizeof why)) {
            warn_once(s, why);
            if (s->quick == QUICK_ON) build_quick(s, p);
        }
    }
    p->info.native = p->dl != NULL;
    p->info.build_ms = now_ms() - t0;
    return p;
}

ax_jit_program *ax_jit_build(ax_ctx *cx, ax_ir *ir) {
    return build(cx, ir, false);
}

static void log_build(const ax_jit_program *p) {
    const ax_jit_info *info = &p->info;
    fprintf(stderr,
            "ax: jit: %s %s in %.2f ms: %d fused loops, %d matrix products, %d eager steps%s\n",
            info->from_disk    ? "loaded"
            : info->native     ? "compiled"
            : info->background ? "started"
            : info->quick      ? "prepared (quick code only)"
                               : "prepared (no native code)",
            p->ir->name ? p->ir->name : "<lambda>", info->build_ms, info->nloops, info->ngemms,
            info->neager,
            !info->background ? ""
            : info->quick     ? " (compiling in the background; quick code runs it meanwhile)"
                          : " (compiling in the background; the eager kernels run it meanwhile)");
}

ax_jit_program *ax_jit_start(ax_ctx *cx, ax_ir *ir) {
    jit_state *s = state(cx);
    ax_jit_program *p = build(cx, ir, s && !s->sync && worth_tiering(ir));
    if (p && s->log) log_build(p);
    return p;
}

void ax_jit_free(ax_jit_program *p) {
    if (!p) return;
    if (p->pending) detach(p->pending->owner, p->pending);
    for (int i = 0; i < p->nvariants; i++) {
        ax_jit_free(p->variants[i].prog);
        free(p->variants[i].axes);
    }
    if (p->dl) dlclose(p->dl);
    free(p->fn);
    ax_plan_free(p->plan);
    ax_quickgen_free(p->quick);
    ax_ir_release(p->ir);
    free(p);
}

const ax_jit_info *ax_jit_program_info(const ax_jit_program *p) {
    return &p->info;
}

void ax_jit_format_plan(ax_strbuf *out, const ax_jit_program *p) {
    ax_plan_format(out, p->plan);
}

int ax_jit_dump_c(ax_ctx *cx, const ax_jit_program *p, ax_strbuf *out) {
    if (p->info.nloops == 0) {
        ax_strbuf_appendf(out, "/* no native code: every step runs on an eager kernel */\n");
        return 0;
    }
    jit_state *s = state(cx);
    const ax_gccjit *api = s ? gccjit(s) : NULL;
    char path[4096];
    temp_template(path, sizeof path, "ax-dump-XXXXXX");
    int fd = api ? mkstemp(path) : -1;
    char why[256] = "";
    gcc_jit_context *ctx = fd >= 0 ? ax_jit_new_context(api, &p->plan->code, why, sizeof why) : NULL;
    if (!ctx) {
        if (fd >= 0) {
            close(fd);
            unlink(path);
        }
        ax_error(cx, AX_ERR_RUNTIME, "cannot dump the generated code (%s)",
                 why[0] ? why
                 : api  ? "no temporary file"
                 : s    ? s->api_why
                        : "out of memory");
        return -1;
    }
    close(fd);
    GCCJIT(gcc_jit_context_dump_to_file)(ctx, path, 0);
    GCCJIT(gcc_jit_context_release)(ctx);
    FILE *f = fopen(path, "r");
    char buf[4096];
    size_t got;
    while (f && (got = fread(buf, 1, sizeof buf, f)) > 0)
        ax_strbuf_appendf(out, "%.*s", (int)got, buf);
    if (f) fclose(f);
    unlink(path);
    return 0;
}

/* ---- running ---- */

static ax_array *atom_array(ax_array **env, const ax_ir_atom *a) {
    return a->var >= 0 ? env[a->var] : a->lit;
}

/* env[var] as a contiguous buffer (eager steps may leave views) and its data pointer. */
static char *buffer_of(ax_ctx *cx, ax_array **env, int var) {
    ax_array *a = env[var];
    if (!ax_array_is_contiguous(a)) {
        ax_array *c = ax_array_contiguous(cx, a);
        if (!c) return NULL;
        ax_array_release(a);
        env[var] = a = c;
    }
    return ax_array_data(a);
}

static int new_output(ax_ctx *cx, ax_array **env, const ax_ir *ir, int var) {
    const ax_aval *t = &ir->types[var];
    ax_array_release(env[var]);
    env[var] = ax_array_new(cx, t->dtype, t->ndim, t->shape);
    if (!env[var]) return -1;
    env[var]->weak = t->weak;
    return 0;
}

/* The data pointers of step s's buffers, in its slots' order (outputs made first). */
static int step_buffers(ax_ctx *cx, ax_jit_program *p, int s, ax_array **env, char **b) {
    const ax_code_step *cs = &p->plan->code.steps[s];
    const int *vars = p->plan->slot_var + cs->first_buf;
    for (int i = 0; i < cs->nbufs; i++)
        if (!(b[i] = buffer_of(cx, env, vars[i]))) return -1;
    return 0;
}

static int run_loop_step(ax_ctx *cx, ax_jit_program *p, int s, ax_array **env, void *const *fns) {
    const ax_kernel *k = p->plan->steps[s].k;
    for (int i = 0; i < k->nnodes; i++)
        if (k->nodes[i].store && new_output(cx, env, p->ir, k->nodes[i].var)) return -1;
    char *bufs[512];
    int nb = p->plan->code.steps[s].nbufs;
    char **b = nb <= 512 ? bufs : malloc((size_t)nb * sizeof *b);
    if (!b) return ax_error_oom(cx), -1;
    int rc = step_buffers(cx, p, s, env, b);
    if (!rc) ax_jit_run_loop(cx, p->fn[s], &p->plan->code, s, b, fns);
    if (b != bufs) free(b);
    return rc;
}

static int run_eager_step(ax_ctx *cx, ax_jit_program *p, int s, ax_array **env) {
    const ax_ir_eqn *e = &p->ir->eqns[p->plan->steps[s].eqn];
    ax_array *in[16], **ins = e->nin <= 16 ? in : malloc((size_t)e->nin * sizeof *ins);
    if (!ins) return ax_error_oom(cx), -1;
    for (int i = 0; i < e->nin; i++) ins[i] = atom_array(env, &e->in[i]);
    ax_array *small[8] = {0}, **res = e->nout <= 8 ? small : calloc((size_t)e->nout, sizeof *res);
    int rc = res ? ax_bind(cx, e->prim, e->nin, ins, &e->params, res) : (ax_error_oom(cx), -1);
    if (ins != in) free(ins);
    for (int i = 0; !rc && i < e->nout; i++) {
        ax_array_release(env[e->out[i]]);
        env[e->out[i]] = res[i];
    }
    if (res != small) free(res);
    return rc;
}

/* A cond, while or scan: its operands' buffers and its outputs, made here, to the loop. */
static int run_control_step(ax_ctx *cx, ax_jit_program *p, int s, ax_array **env,
                            void *const *fns) {
    const ax_step *st = &p->plan->steps[s];
    const ax_ir_eqn *e = &p->ir->eqns[st->eqn];
    char **io = calloc((size_t)e->nin + (size_t)e->nout + 1, sizeof *io);
    if (!io) return ax_error_oom(cx), -1;
    int rc = 0;
    for (int i = 0; i < e->nin && !rc; i++) {
        io[i] = e->in[i].var >= 0 ? buffer_of(cx, env, e->in[i].var) : ax_array_data(e->in[i].lit);
        if (!io[i]) rc = -1;
    }
    for (int j = 0; j < e->nout && !rc; j++) {
        rc = new_output(cx, env, p->ir, e->out[j]);
        if (!rc) io[e->nin + j] = ax_array_data(env[e->out[j]]);
    }
    ax_jit_fns f = {p->fn, fns};
    if (!rc) rc = ax_jit_run_control(cx, &f, p->plan, st, 0, io, io + e->nin);
    free(io);
    return rc;
}

static void fill_fns(void **fns) {
    fns[AX_FN_ERF_INV_F32] = (void *)ax_erf_inv_f32;
    fns[AX_FN_ERF_INV_F64] = (void *)ax_erf_inv_f64;
    fns[AX_FN_LGAMMA_F32] = (void *)ax_lgamma_f32;
    fns[AX_FN_LGAMMA_F64] = (void *)ax_lgamma_f64;
    fns[AX_FN_DIGAMMA_F32] = (void *)ax_digamma_f32;
    fns[AX_FN_DIGAMMA_F64] = (void *)ax_digamma_f64;
    fns[AX_FN_TILE1] = (void *)ax_tile_load1;
    fns[AX_FN_TILE1TO4] = (void *)ax_tile_load1to4;
    fns[AX_FN_TILE4] = (void *)ax_tile_load4;
    fns[AX_FN_TILE8] = (void *)ax_tile_load8;
}

/* How often a program waiting for its compile looks whether it has ended: a poll is a system
 * call, a call of a small program a few microseconds. */
#define POLL_INTERVAL_MS 1.0

/* ---- layout variants ---- */

/* Broadcast inputs smaller than this are copied out: a variant costs a compile. */
#define VARIANT_MIN_BYTES ((int64_t)1 << 20)

/* The variant for these broadcast axes, created (unbuilt) the first time; NULL when the
 * program has as many as it keeps. */
static variant *find_variant(ax_jit_program *p, const uint32_t *axes) {
    size_t n = (size_t)p->ir->nin * sizeof *axes;
    for (int i = 0; i < p->nvariants; i++)
        if (!memcmp(p->variants[i].axes, axes, n)) return &p->variants[i];
    if (p->nvariants == MAX_VARIANTS) return NULL;
    uint32_t *copy = malloc(n + 1);
    if (!copy) return NULL;
    memcpy(copy, axes, n);
    p->variants[p->nvariants] = (variant){.axes = copy};
    return &p->variants[p->nvariants++];
}

/* Builds the variant (on the second call that brings its layout); false with an error only
 * when Ctrl-C abandoned its compile: any other failure leaves the program as it is. */
static bool build_variant(ax_ctx *cx, ax_jit_program *p, variant *v) {
    ax_ir *ir = ax_layout_variant(cx, p->ir, v->axes);
    v->prog = ir ? ax_jit_start(cx, ir) : NULL;
    ax_ir_release(ir);
    p->info.nvariants += v->prog != NULL;
    if (v->prog) return true;
    if (cx->err.kind == AX_ERR_INTERRUPT) return false; /* the next call may try again */
    v->failed = true;
    ax_error_clear(cx);
    return true;
}

/* The native variant of p for the layout of these arguments, if there is one (building it
 * when its time has come). *rc: -1 when Ctrl-C interrupted that. */
static ax_jit_program *variant_for(ax_ctx *cx, ax_jit_program *p, ax_array **args, int *rc) {
    uint32_t small[64], *axes = p->ir->nin <= 64 ? small : calloc((size_t)p->ir->nin, sizeof *axes);
    if (!axes) return NULL;
    int64_t bytes = 0;
    for (int i = 0; i < p->ir->nin; i++) {
        axes[i] = ax_layout_broadcast_axes(args[i]);
        if (axes[i]) bytes += args[i]->size * (int64_t)ax_dtype_size(args[i]->dtype);
    }
    variant *v = bytes >= VARIANT_MIN_BYTES ? find_variant(p, axes) : NULL;
    if (axes != small) free(axes);
    if (!v || v->failed) return NULL;
    if (++v->seen >= 2 && !v->prog && !build_variant(cx, p, v)) *rc = -1;
    return v->prog && v->prog->dl ? v->prog : NULL;
}

/* Runs the variant on the compact forms of the arguments. */
static int run_variant(ax_ctx *cx, ax_jit_program *p, ax_jit_program *v, ax_array **args,
                       ax_array **outs) {
    int n = p->ir->nin, rc = 0;
    ax_array **compact = calloc((size_t)n + 1, sizeof *compact);
    if (!compact) return ax_error_oom(cx), -1;
    for (int i = 0; i < n && !rc; i++) {
        uint32_t axes = ax_layout_broadcast_axes(args[i]);
        compact[i] = axes ? ax_layout_compact(cx, args[i], axes) : ax_array_retain(args[i]);
        if (!compact[i]) rc = -1;
    }
    if (!rc) rc = ax_jit_run(cx, v, compact, outs);
    for (int i = 0; i < n; i++) ax_array_release(compact[i]);
    free(compact);
    return rc;
}

static int run_native(ax_ctx *cx, ax_jit_program *p, ax_array **args, ax_array **outs) {
    const ax_ir *ir = p->ir;
    void *fns[AX_FN_COUNT] = {0};
    ax_array **env = calloc((size_t)ir->nvars + 1, sizeof *env);
    if (!env) return ax_error_oom(cx), -1;
    fill_fns(fns);
    int rc = 0;
    for (int i = 0; i < ir->nconsts; i++) env[ir->constvars[i]] = ax_array_retain(ir->consts[i]);
    for (int i = 0; i < ir->nin; i++) env[ir->invars[i]] = ax_array_retain(args[i]);
    for (int s = 0; s < p->plan->nsteps && !rc; s++) {
        switch (p->plan->steps[s].kind) {
        case AX_STEP_LOOP:
            rc = run_loop_step(cx, p, s, env, fns);
            break;
        case AX_STEP_CONTROL:
            rc = run_control_step(cx, p, s, env, fns);
            break;
        default:
            rc = run_eager_step(cx, p, s, env);
            break;
        }
        if (!rc && ax_ctx_check_interrupt(cx)) rc = -1;
    }
    for (int i = 0; i < ir->nout && !rc; i++)
        outs[i] = ax_array_retain(atom_array(env, &ir->outs[i]));
    for (int v = 0; v < ir->nvars; v++) ax_array_release(env[v]);
    free(env);
    return rc;
}

int ax_jit_ready(ax_ctx *cx, ax_jit_program *p) {
    pending *q = p->pending;
    if (!q) return 0;
    jit_state *s = q->owner;
    char why[512] = "";
    if (!q->job) { /* queued: start it now, whatever else runs */
        q->started_ms = now_ms();
        if (!(q->job = ax_jit_job_start(s->api, &p->plan->code, q->key, why, sizeof why))) {
            warn_once(s, why);
            pending_unlink(s, q);
            return 0;
        }
        s->running++;
        blas_follow_compiles(s);
    }
    while (ax_jit_job_poll(q->job, 50) == AX_JOB_RUNNING)
        if (ax_ctx_check_interrupt(cx)) return -1; /* the compile goes on in the background */
    settle(s, q);
    return 0;
}

int ax_jit_run(ax_ctx *cx, ax_jit_program *p, ax_array **args, ax_array **outs) {
    if (cx != p->owner) /* another thread's context: read only (see ax_jit_ready) */
        return p->dl || p->quick ? run_native(cx, p, args, outs)
                                 : ax_ir_eval(cx, p->ir, args, outs);
    if (p->pending && now_ms() - p->pending->owner->last_poll_ms >= POLL_INTERVAL_MS)
        poll_pending(p->pending->owner);
    if (p->dl) {
        int rc = 0;
        ax_jit_program *v = variant_for(cx, p, args, &rc);
        if (rc || v) return rc ? rc : run_variant(cx, p, v, args, outs);
        return run_native(cx, p, args, outs);
    }
    if (p->quick) {
        p->info.quick_calls++;
        int rc = run_native(cx, p, args, outs);
        if (p->pending && !p->pending->job) start_queued(p->pending->owner);
        return rc;
    }
    if (!p->pending) return ax_ir_eval(cx, p->ir, args, outs);
    p->info.eager_calls++;
    int rc = ax_ir_eval(cx, p->ir, args, outs);
    /* A compile starts after the first call, which so runs alone on the machine */
    if (p->pending && !p->pending->job) start_queued(p->pending->owner);
    return rc;
}

/* Native programs: build (fuse, generate, compile or load) and run. See jit.h. */
#include "jit.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../runtime/elementwise.h"
#include "../runtime/pool.h"
#include "../runtime/special.h"
#include "../runtime/vecmath.h"
#include "codegen.h"
#include "gccjit.h"
#include "fuse.h"
#include "jit_cache.h"
#include "jit_loops.h"

struct ax_jit_program {
    ax_ir *ir;
    ax_plan *plan;
    void *dl;       /* the loaded shared object; NULL: run the IR on the eager kernels */
    ax_step_fn *fn; /* per step (NULL for eager steps) */
    ax_jit_info info;
};

/* Per-context state: whether the tools exist, the one warning, the log switch, the cache. */
typedef struct jit_state {
    bool tools_checked, tools_ok, warned, log;
    ax_jit_cache *cache;
    ax_gccjit *api; /* opened on the first compile */
    bool api_failed;
    char api_why[256];
} jit_state;

static void jit_state_free(void *p) {
    jit_state *s = p;
    if (s) {
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

static jit_state *state(ax_ctx *cx) {
    if (!cx->jit) {
        jit_state *s = calloc(1, sizeof *s);
        if (!s) return NULL;
        const char *log = getenv("AX_LOG_COMPILES");
        s->log = log && *log && strcmp(log, "0") != 0;
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

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
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
            "the eager kernels\n",
            why);
}

/* ---- building ---- */

static gcc_jit_context *new_context(const ax_gccjit *api, const ax_plan *plan) {
    gcc_jit_context *ctx = GCCJIT(gcc_jit_context_acquire)();
    if (!ctx) return NULL;
    GCCJIT(gcc_jit_context_set_bool_print_errors_to_stderr)(ctx, 0);
    ax_codegen_options(api, ctx);
    /* The link is most of a small program's compile time. The shared object's undefined
     * symbols (libm, libmvec) resolve against ax itself, so it needs no C library; without
     * the LTO plugin (never used here) and a build id, ld starts faster (~15 ms of ~75). */
    GCCJIT(gcc_jit_context_add_driver_option)(ctx, "-nostdlib");
    GCCJIT(gcc_jit_context_add_driver_option)(ctx, "-fno-use-linker-plugin");
    GCCJIT(gcc_jit_context_add_driver_option)(ctx, "-Wl,--build-id=none");
    if (!ax_codegen_build(api, ctx, &plan->code)) {
        GCCJIT(gcc_jit_context_release)(ctx);
        return NULL;
    }
    return ctx;
}

/* "$TMPDIR/name" (default /tmp), a template for mkstemp / mkdtemp. */
static void temp_template(char *buf, size_t n, const char *name) {
    const char *base = getenv("TMPDIR");
    snprintf(buf, n, "%s/%s", base && *base ? base : "/tmp", name);
}

/* Builds the code and compiles it to the shared object `path`; 0, or -1 with the reason. */
static int compile_here(const ax_gccjit *api, const ax_plan *plan, const char *path, char *why,
                        size_t whylen) {
    gcc_jit_context *ctx = new_context(api, plan);
    if (!ctx) {
        snprintf(why, whylen, "libgccjit cannot make a context");
        return -1;
    }
    GCCJIT(gcc_jit_context_compile_to_file)(ctx, GCC_JIT_OUTPUT_KIND_DYNAMIC_LIBRARY, path);
    const char *err = GCCJIT(gcc_jit_context_get_first_error)(ctx);
    if (err) snprintf(why, whylen, "libgccjit: %s", err);
    GCCJIT(gcc_jit_context_release)(ctx);
    return err ? -1 : 0;
}

/* Waits for the compiling child `pid`, reading its message from `fd`, until it ends or Ctrl-C
 * (cx->interrupt) abandons it: then it is killed. 0, -1 with the reason, or -2: interrupted. */
static int wait_for_compile(ax_ctx *cx, pid_t pid, int fd, char *why, size_t whylen) {
    char msg[512];
    size_t got = 0;
    for (;;) {
        if (cx->interrupt) {
            kill(pid, SIGKILL);
            while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {
            }
            return -2;
        }
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, 50) <= 0) continue; /* a timeout, or a signal (Ctrl-C) */
        ssize_t n = read(fd, msg + got, sizeof msg - 1 - got);
        if (n > 0) got += (size_t)n;
        if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN) || got == sizeof msg - 1) break;
    }
    msg[got] = 0;
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return 0;
    if (got)
        snprintf(why, whylen, "%s", msg);
    else if (WIFSIGNALED(status))
        snprintf(why, whylen, "the compiler process died of signal %d", WTERMSIG(status));
    else
        snprintf(why, whylen, "the compiler process failed");
    return -1;
}

/* Compiles in a child process, which Ctrl-C can abandon (GCC cannot be stopped in the middle
 * of a compile; a large program takes seconds): 0, -1 with the reason, -2: interrupted. When
 * there is no child to be had, compiles here. */
static int compile_to(ax_ctx *cx, const ax_gccjit *api, const ax_plan *plan, const char *path,
                      char *why, size_t whylen) {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC)) return compile_here(api, plan, path, why, whylen);
    pid_t parent = getpid(), pid = fork();
    if (pid == 0) { /* the child: compile, report, and leave without running exit handlers */
        prctl(PR_SET_PDEATHSIG, SIGKILL); /* and die with ax, if ax is killed first */
        if (getppid() != parent) _exit(1);
        close(fds[0]);
        char msg[512] = "";
        int rc = compile_here(api, plan, path, msg, sizeof msg);
        if (rc && write(fds[1], msg, strlen(msg)) < 0) rc = -1;
        _exit(rc ? 1 : 0);
    }
    close(fds[1]);
    int rc = pid < 0 ? compile_here(api, plan, path, why, whylen)
                     : wait_for_compile(cx, pid, fds[0], why, whylen);
    close(fds[0]);
    return rc;
}

/* Compiles in the process's scratch directory (in a child process: see compile_to) and loads
 * the result, then offers it to the disk cache: the code runs whether or not it can be cached.
 * *interrupted: Ctrl-C abandoned the compile. */
static void *compile_and_load(ax_ctx *cx, jit_state *s, const ax_plan *plan, uint64_t key,
                              char *why, size_t whylen, bool *interrupted) {
    const ax_gccjit *api = gccjit(s);
    if (!api) {
        snprintf(why, whylen, "%s", s->api_why);
        return NULL;
    }
    ax_jit_scratch scratch;
    void *dl = NULL;
    if (!ax_jit_scratch_begin(&scratch, key)) {
        snprintf(why, whylen, "no temporary directory to compile in");
    } else {
        const char *so = scratch.so;
        int rc = compile_to(cx, api, plan, so, why, whylen);
        *interrupted = rc == -2;
        if (rc) {
            /* why says it (nothing to say when interrupted) */
        } else if (!(dl = dlopen(so, RTLD_NOW | RTLD_LOCAL))) {
            const char *dlerr = dlerror();
            snprintf(why, whylen, "cannot load the compiled code: %s", dlerr ? dlerr : "?");
        } else {
            ax_jit_cache_store(s->cache, key, so);
        }
        ax_jit_scratch_end(&scratch);
    }
    return dl;
}

static bool bind_functions(ax_jit_program *p) {
    for (int s = 0; s < p->plan->code.h.nsteps; s++) {
        if (p->plan->code.steps[s].kind != AX_STEP_LOOP) continue;
        char name[32];
        snprintf(name, sizeof name, "s%d", s);
        p->fn[s] = (ax_step_fn)dlsym(p->dl, name);
        if (!p->fn[s]) return false;
    }
    return true;
}

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

ax_jit_program *ax_jit_build(ax_ctx *cx, ax_ir *ir) {
    double t0 = now_ms();
    jit_state *s = state(cx);
    ax_jit_program *p = calloc(1, sizeof *p);
    if (!p || !s) {
        free(p);
        ax_error_oom(cx);
        return NULL;
    }
    p->ir = ax_ir_retain(ir);
    p->plan = ax_fuse(ir);
    if (!p->plan || !prepare_functions(p)) {
        ax_jit_free(p);
        ax_error_oom(cx);
        return NULL;
    }
    count_steps(p);
    if (p->info.nloops == 0) { /* nothing to compile: eager steps only */
        p->info.build_ms = now_ms() - t0;
        return p;
    }
    p->info.key = ax_code_key(&p->plan->code);
    char why[512] = "";
    p->dl = ax_jit_cache_load(s->cache, p->info.key);
    p->info.from_disk = p->dl != NULL;
    if (p->dl && !bind_functions(p)) {
        dlclose(p->dl);
        p->dl = NULL;
        p->info.from_disk = false;
    }
    if (!p->dl && !tools_ok(s)) { /* a cached entry loads without them */
        warn_once(s, "the assembler 'as' or linker 'ld' is not on PATH");
    } else if (!p->dl) {
        bool interrupted = false;
        p->dl = compile_and_load(cx, s, p->plan, p->info.key, why, sizeof why, &interrupted);
        if (interrupted) { /* KeyboardInterrupt, and nothing kept of the abandoned compile */
            ax_jit_free(p);
            cx->interrupt = 0;
            ax_error(cx, AX_ERR_INTERRUPT, "interrupted");
            return NULL;
        }
        if (p->dl && !bind_functions(p)) {
            snprintf(why, sizeof why, "compiled code lacks its functions");
            dlclose(p->dl);
            p->dl = NULL;
        }
        if (!p->dl) warn_once(s, why);
    }
    p->info.native = p->dl != NULL;
    p->info.build_ms = now_ms() - t0;
    return p;
}

void ax_jit_free(ax_jit_program *p) {
    if (!p) return;
    if (p->dl) dlclose(p->dl);
    free(p->fn);
    ax_plan_free(p->plan);
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
    gcc_jit_context *ctx = fd >= 0 ? new_context(api, p->plan) : NULL;
    if (!ctx) {
        if (fd >= 0) {
            close(fd);
            unlink(path);
        }
        ax_error(cx, AX_ERR_RUNTIME, "cannot dump the generated code (%s)",
                 api ? "no temporary file"
                 : s ? s->api_why
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
    fns[AX_FN_TRIG_BIG_F32] = (void *)ax_vecmath_trig_big;
}

int ax_jit_run(ax_ctx *cx, ax_jit_program *p, ax_array **args, ax_array **outs) {
    if (!p->dl) return ax_ir_eval(cx, p->ir, args, outs);
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

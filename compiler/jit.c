/* Native programs: build (fuse, generate, compile or load) and run. See jit.h. */
#include "jit.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../runtime/blas.h"
#include "../runtime/elementwise.h"
#include "../runtime/pool.h"
#include "../runtime/special.h"
#include "codegen.h"
#include "gccjit.h"
#include "fuse.h"
#include "jit_cache.h"

/* Bump when generated code changes, so old cache entries are not used. */
#define CODEGEN_VERSION "ax-codegen-10"

struct ax_jit_program {
    ax_ir *ir;
    ax_plan *plan;
    void *dl;       /* the loaded shared object; NULL: run the IR on the eager kernels */
    ax_step_fn *fn; /* per step (NULL for eager steps) */
    int **bufvars;  /* LOOP steps: the variables of their buffers */
    int *nbufs;
    ax_jit_info info;
};

/* Per-context state: whether the tools exist, the one warning, the log switch, the cache. */
typedef struct jit_state {
    bool tools_checked, tools_ok, warned, log;
    char *cache_dir;
    ax_gccjit *api; /* opened on the first compile */
    bool api_failed;
    char api_why[256];
} jit_state;

static void jit_state_free(void *p) {
    jit_state *s = p;
    if (s) {
        free(s->cache_dir);
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
        s->cache_dir = ax_jit_cache_dir();
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

/* ---- the key: everything the generated code depends on ---- */

static uint64_t hash_str(uint64_t h, const char *s) {
    return ax_hash_bytes(h, s, strlen(s) + 1);
}

static int clamp_rank(int n) {
    return n < 0 ? 0 : n > AX_MAX_RANK ? AX_MAX_RANK : n;
}

static uint64_t hash_params(uint64_t h, const ax_params *p) {
    h = ax_hash_bytes(h, &p->dtype, sizeof p->dtype);
    h = ax_hash_bytes(h, &p->k, sizeof p->k);
    h = ax_hash_bytes(h, &p->naxes, sizeof p->naxes);
    const ax_dot_dims *d = &p->dot; /* only the entries in use: the rest may be anything */
    int counts[3] = {clamp_rank(p->naxes), clamp_rank(d->ncontract), clamp_rank(d->nbatch)};
    h = ax_hash_bytes(h, p->axes, (size_t)counts[0] * sizeof *p->axes);
    h = ax_hash_bytes(h, counts, sizeof counts);
    h = ax_hash_bytes(h, d->lhs_contract, (size_t)counts[1] * sizeof(int));
    h = ax_hash_bytes(h, d->rhs_contract, (size_t)counts[1] * sizeof(int));
    h = ax_hash_bytes(h, d->lhs_batch, (size_t)counts[2] * sizeof(int));
    h = ax_hash_bytes(h, d->rhs_batch, (size_t)counts[2] * sizeof(int));
    return h;
}

static uint64_t hash_kernel(uint64_t h, const ax_plan *plan, const ax_kernel *k) {
    h = ax_hash_bytes(h, &k->ndim, sizeof k->ndim);
    h = ax_hash_bytes(h, k->shape, (size_t)k->ndim * sizeof *k->shape);
    h = ax_hash_bytes(h, k->reduced, (size_t)k->ndim * sizeof *k->reduced);
    for (int i = 0; i < k->nnodes; i++) {
        const ax_knode *n = &k->nodes[i];
        int fields[6] = {n->kind, n->dtype, n->nin, n->in[0], n->in[1], n->in[2]};
        h = ax_hash_bytes(h, fields, sizeof fields);
        h = ax_hash_bytes(h, &n->store, sizeof n->store);
        h = ax_hash_bytes(h, n->stride, (size_t)k->ndim * sizeof *n->stride);
        h = ax_hash_bytes(h, n->ostride, (size_t)k->ndim * sizeof *n->ostride);
        if (n->kind == AX_KN_CONST)
            h = ax_hash_bytes(h, ax_array_data(n->lit), ax_dtype_size(n->dtype));
        if (n->kind == AX_KN_OP || n->kind == AX_KN_REDUCE) {
            const ax_ir_eqn *e = &plan->ir->eqns[n->eqn];
            h = ax_hash_bytes(h, &e->prim, sizeof e->prim);
            h = hash_params(h, &e->params);
        }
        if (n->kind == AX_KN_LOAD) /* which buffer slot it reads: its position among loads */
            h = ax_hash_bytes(h, &plan->ir->types[n->var].dtype, sizeof(ax_dtype));
    }
    int vars[512], nb = k->nnodes <= 256 ? ax_kernel_buffers(k, vars) : 0;
    for (int b = 0; b < nb; b++)
        for (int i = 0; i < k->nnodes; i++)
            if (k->nodes[i].var == vars[b]) {
                h = ax_hash_bytes(h, &i, sizeof i); /* buffer b belongs to node i */
                break;
            }
    return h;
}

static uint64_t plan_key(const ax_plan *plan) {
    uint64_t h = hash_str(AX_HASH_INIT, CODEGEN_VERSION);
    h = hash_str(h, ax_codegen_target());
    int lanes = ax_elementwise_vector_lanes(), opt = ax_codegen_opt_level();
    h = ax_hash_bytes(h, &lanes, sizeof lanes);
    h = ax_hash_bytes(h, &opt, sizeof opt);
    for (int s = 0; s < plan->nsteps; s++) {
        const ax_step *st = &plan->steps[s];
        h = ax_hash_bytes(h, &st->kind, sizeof st->kind);
        if (st->kind == AX_STEP_LOOP) h = hash_kernel(h, plan, st->k);
        if (st->kind == AX_STEP_GEMM) {
            const ax_ir_eqn *e = &plan->ir->eqns[st->eqn];
            h = ax_hash_bytes(h, &st->transposed, sizeof st->transposed);
            h = hash_params(h, &e->params);
            for (int i = 0; i < 2; i++) {
                const ax_aval *t = &plan->ir->types[e->in[i].var];
                h = ax_hash_bytes(h, &t->dtype, sizeof t->dtype);
                h = ax_hash_bytes(h, &t->ndim, sizeof t->ndim);
                h = ax_hash_bytes(h, t->shape, (size_t)t->ndim * sizeof *t->shape);
            }
        }
    }
    return h;
}

/* ---- building ---- */

/* A context holding the plan's code; NULL (with *oom when memory ran out) if it cannot be made. */
static gcc_jit_context *new_context(const ax_gccjit *api, const ax_plan *plan, bool *oom) {
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
    if (!ax_codegen_build(api, ctx, plan)) {
        GCCJIT(gcc_jit_context_release)(ctx);
        *oom = true;
        return NULL;
    }
    return ctx;
}

/* "$TMPDIR/name" (default /tmp), a template for mkstemp / mkdtemp. */
static void temp_template(char *buf, size_t n, const char *name) {
    const char *base = getenv("TMPDIR");
    snprintf(buf, n, "%s/%s", base && *base ? base : "/tmp", name);
}

/* Compiles into the cache directory (or a private temporary one) and loads the result. */
static void *compile_and_load(jit_state *s, const ax_plan *plan, uint64_t key, char *why,
                              size_t whylen, bool *oom) {
    const ax_gccjit *api = gccjit(s);
    gcc_jit_context *ctx = api ? new_context(api, plan, oom) : NULL;
    if (!ctx) {
        snprintf(why, whylen, "%s", api ? "libgccjit cannot make a context" : s->api_why);
        return NULL;
    }
    char tmpdir[4096];
    temp_template(tmpdir, sizeof tmpdir, "ax-jit-XXXXXX");
    const char *dir = s->cache_dir;
    if (!dir) dir = mkdtemp(tmpdir);
    char *tmp = dir ? ax_jit_cache_path(dir, key, "so.tmp") : NULL;
    char *final = NULL;
    if (tmp) {
        char *withpid = malloc(strlen(tmp) + 24);
        if (withpid) sprintf(withpid, "%s%ld", tmp, (long)getpid());
        free(tmp);
        tmp = withpid;
    }
    void *dl = NULL;
    if (!tmp) {
        snprintf(why, whylen, "no directory to compile in");
    } else {
        GCCJIT(gcc_jit_context_compile_to_file)(ctx, GCC_JIT_OUTPUT_KIND_DYNAMIC_LIBRARY, tmp);
        const char *err = GCCJIT(gcc_jit_context_get_first_error)(ctx);
        if (err) {
            snprintf(why, whylen, "libgccjit: %s", err);
            unlink(tmp);
        } else if (s->cache_dir) {
            final = ax_jit_cache_publish(dir, key, tmp);
            if (final)
                dl = dlopen(final, RTLD_NOW | RTLD_LOCAL);
            else { /* the entry cannot be written: the code is good, use it uncached */
                dl = dlopen(tmp, RTLD_NOW | RTLD_LOCAL);
                unlink(tmp);
            }
        } else {
            dl = dlopen(tmp, RTLD_NOW | RTLD_LOCAL);
            unlink(tmp);
        }
        const char *dlerr = err || dl ? NULL : dlerror();
        if (!err && !dl)
            snprintf(why, whylen, "cannot load the compiled code: %s",
                     dlerr ? dlerr : "it could not be written");
    }
    if (!s->cache_dir && dir) rmdir(dir);
    free(tmp);
    free(final);
    GCCJIT(gcc_jit_context_release)(ctx);
    return dl;
}

static bool bind_functions(ax_jit_program *p) {
    for (int s = 0; s < p->plan->nsteps; s++) {
        if (p->plan->steps[s].kind == AX_STEP_EAGER) continue;
        char name[32];
        snprintf(name, sizeof name, "s%d", s);
        p->fn[s] = (ax_step_fn)dlsym(p->dl, name);
        if (!p->fn[s]) return false;
    }
    return true;
}

static void count_steps(ax_jit_program *p) {
    p->info.nsteps = p->plan->nsteps;
    for (int s = 0; s < p->plan->nsteps; s++) {
        ax_step_kind k = p->plan->steps[s].kind;
        p->info.nloops += k == AX_STEP_LOOP;
        p->info.ngemms += k == AX_STEP_GEMM;
        p->info.neager += k == AX_STEP_EAGER;
    }
}

static bool prepare_buffers(ax_jit_program *p) {
    int n = p->plan->nsteps;
    p->fn = calloc((size_t)n + 1, sizeof *p->fn);
    p->bufvars = calloc((size_t)n + 1, sizeof *p->bufvars);
    p->nbufs = calloc((size_t)n + 1, sizeof *p->nbufs);
    if (!p->fn || !p->bufvars || !p->nbufs) return false;
    for (int s = 0; s < n; s++) {
        const ax_kernel *k = p->plan->steps[s].k;
        if (!k) continue;
        p->bufvars[s] = malloc((2 * (size_t)k->nnodes + 1) * sizeof(int));
        if (!p->bufvars[s]) return false;
        p->nbufs[s] = ax_kernel_buffers(k, p->bufvars[s]);
    }
    return true;
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
    if (!p->plan || !prepare_buffers(p)) {
        ax_jit_free(p);
        ax_error_oom(cx);
        return NULL;
    }
    count_steps(p);
    if (p->info.nloops + p->info.ngemms == 0) { /* nothing to compile: eager steps only */
        p->info.build_ms = now_ms() - t0;
        return p;
    }
    p->info.key = plan_key(p->plan);
    char why[512] = "";
    if (s->cache_dir) p->dl = ax_jit_cache_load(s->cache_dir, p->info.key);
    p->info.from_disk = p->dl != NULL;
    if (p->dl && !bind_functions(p)) {
        dlclose(p->dl);
        p->dl = NULL;
        p->info.from_disk = false;
    }
    if (!p->dl && !tools_ok(s)) { /* a cached entry loads without them */
        warn_once(s, "the assembler 'as' or linker 'ld' is not on PATH");
    } else if (!p->dl) {
        bool oom = false;
        p->dl = compile_and_load(s, p->plan, p->info.key, why, sizeof why, &oom);
        if (oom) {
            ax_jit_free(p);
            return ax_error_oom(cx);
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
    if (p->bufvars && p->plan)
        for (int s = 0; s < p->plan->nsteps; s++) free(p->bufvars[s]);
    free(p->bufvars);
    free(p->nbufs);
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
    if (p->info.nloops + p->info.ngemms == 0) {
        ax_strbuf_appendf(out, "/* no native code: every step runs on an eager kernel */\n");
        return 0;
    }
    jit_state *s = state(cx);
    const ax_gccjit *api = s ? gccjit(s) : NULL;
    char path[4096];
    temp_template(path, sizeof path, "ax-dump-XXXXXX");
    int fd = api ? mkstemp(path) : -1;
    bool oom = false;
    gcc_jit_context *ctx = fd >= 0 ? new_context(api, p->plan, &oom) : NULL;
    if (!ctx) {
        if (fd >= 0) {
            close(fd);
            unlink(path);
        }
        if (oom) return ax_error_oom(cx), -1;
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

typedef struct loop_call {
    ax_step_fn fn;
    char **bufs;
    void *const *fns;
    int64_t granule, extent;
} loop_call;

static void run_chunk(void *arg, int64_t begin, int64_t end) {
    const loop_call *c = arg;
    int64_t lo = begin * c->granule, hi = end * c->granule;
    c->fn(c->bufs, c->fns, lo, hi < c->extent ? hi : c->extent);
}

/* Splits the outermost loop over the pool when there is enough work. */
static void run_loop(ax_ctx *cx, ax_step_fn fn, const ax_kernel *k, char **bufs, void *const *fns) {
    ax_loop_split sp;
    ax_kernel_split(k, &sp);
    const int64_t min_chunk = 1 << 15;
    if (!sp.splittable || sp.extent * sp.work_per_iter < 2 * min_chunk) {
        fn(bufs, fns, 0, sp.extent);
        return;
    }
    loop_call c = {fn, bufs, fns, sp.granule, sp.extent};
    int64_t units = (sp.extent + sp.granule - 1) / sp.granule;
    int64_t per_unit = sp.granule * (sp.work_per_iter ? sp.work_per_iter : 1);
    int64_t grain = (min_chunk + per_unit - 1) / per_unit;
    ax_parallel_for(cx, units, grain ? grain : 1, run_chunk, &c);
}

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

static int run_loop_step(ax_ctx *cx, ax_jit_program *p, int s, ax_array **env, void *const *fns) {
    const ax_kernel *k = p->plan->steps[s].k;
    for (int i = 0; i < k->nnodes; i++)
        if (k->nodes[i].store && new_output(cx, env, p->ir, k->nodes[i].var)) return -1;
    char *bufs[512];
    int nb = p->nbufs[s];
    char **b = nb <= 512 ? bufs : malloc((size_t)nb * sizeof *b);
    if (!b) return ax_error_oom(cx), -1;
    int rc = 0;
    for (int i = 0; i < nb && !rc; i++)
        if (!(b[i] = buffer_of(cx, env, p->bufvars[s][i]))) rc = -1;
    if (!rc) run_loop(cx, p->fn[s], k, b, fns);
    if (b != bufs) free(b);
    return rc;
}

static int run_gemm_step(ax_ctx *cx, ax_jit_program *p, int s, ax_array **env, void *const *fns) {
    const ax_step *st = &p->plan->steps[s];
    const ax_ir_eqn *e = &p->ir->eqns[st->eqn];
    if (new_output(cx, env, p->ir, st->out)) return -1;
    char *bufs[3] = {buffer_of(cx, env, e->in[0].var), buffer_of(cx, env, e->in[1].var),
                     buffer_of(cx, env, st->out)};
    if (!bufs[0] || !bufs[1] || !bufs[2]) return -1;
    p->fn[s](bufs, fns, 0, ax_gemm_batches(p->plan, s));
    return 0;
}

static int run_eager_step(ax_ctx *cx, ax_jit_program *p, int s, ax_array **env) {
    const ax_ir_eqn *e = &p->ir->eqns[p->plan->steps[s].eqn];
    ax_array *in[16], **ins = e->nin <= 16 ? in : malloc((size_t)e->nin * sizeof *ins);
    if (!ins) return ax_error_oom(cx), -1;
    for (int i = 0; i < e->nin; i++) ins[i] = atom_array(env, &e->in[i]);
    ax_array *res[8] = {0};
    int rc = ax_bind(cx, e->prim, e->nin, ins, &e->params, res);
    if (ins != in) free(ins);
    if (rc) return -1;
    for (int i = 0; i < e->nout; i++) {
        ax_array_release(env[e->out[i]]);
        env[e->out[i]] = res[i];
    }
    return 0;
}

static bool needs_blas(const ax_plan *plan) {
    for (int s = 0; s < plan->nsteps; s++)
        if (plan->steps[s].kind == AX_STEP_GEMM) return true;
    return false;
}

static int fill_fns(ax_ctx *cx, const ax_plan *plan, void **fns) {
    fns[AX_FN_ERF_INV_F32] = (void *)ax_erf_inv_f32;
    fns[AX_FN_ERF_INV_F64] = (void *)ax_erf_inv_f64;
    fns[AX_FN_LGAMMA_F32] = (void *)ax_lgamma_f32;
    fns[AX_FN_LGAMMA_F64] = (void *)ax_lgamma_f64;
    fns[AX_FN_DIGAMMA_F32] = (void *)ax_digamma_f32;
    fns[AX_FN_DIGAMMA_F64] = (void *)ax_digamma_f64;
    if (needs_blas(plan)) {
        ax_blas *blas = ax_blas_get(cx);
        if (!blas) return -1;
        fns[AX_FN_SGEMM] = (void *)blas->sgemm;
        fns[AX_FN_DGEMM] = (void *)blas->dgemm;
    }
    return 0;
}

int ax_jit_run(ax_ctx *cx, ax_jit_program *p, ax_array **args, ax_array **outs) {
    if (!p->dl) return ax_ir_eval(cx, p->ir, args, outs);
    const ax_ir *ir = p->ir;
    void *fns[AX_FN_COUNT] = {0};
    ax_array **env = calloc((size_t)ir->nvars + 1, sizeof *env);
    if (!env) return ax_error_oom(cx), -1;
    int rc = fill_fns(cx, p->plan, fns);
    for (int i = 0; i < ir->nconsts; i++) env[ir->constvars[i]] = ax_array_retain(ir->consts[i]);
    for (int i = 0; i < ir->nin; i++) env[ir->invars[i]] = ax_array_retain(args[i]);
    for (int s = 0; s < p->plan->nsteps && !rc; s++) {
        switch (p->plan->steps[s].kind) {
        case AX_STEP_LOOP:
            rc = run_loop_step(cx, p, s, env, fns);
            break;
        case AX_STEP_GEMM:
            rc = run_gemm_step(cx, p, s, env, fns);
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

/* Tiered execution (compiler/jit.h, ax_jit_start): the first calls run on the eager kernels
 * while the code compiles in a child process, later calls run the native code, with the same
 * bits; AX_JIT_SYNC=1 waits as before; the end of a context waits a bounded time for compiles
 * still running (AX_JIT_EXIT_WAIT) and kills the rest; a compile that fails leaves the program
 * on the eager kernels. And layout variants (compiler/jit_layout.h): inputs made by
 * broadcasting run, from their second call, on a variant that reads the compact array, with
 * the bits of the plain program.
 *
 * Every test has a cache directory of its own; $TMPDIR is private to this program (the
 * scratch directory lives there), so that it can check that nothing is left behind. No
 * verdict depends on a time: waits are for events, with a generous limit. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>
#include <dirent.h>
#include <errno.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../../compiler/simplify.h"
#include "../../compiler/quickgen.h"
#include "jit_test_util.h"

static char root[256];

static double limit_s(void) {
    const char *scale = getenv("AX_TEST_TIMEOUT_SCALE");
    return 120.0 * (scale ? atof(scale) : 1.0);
}

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* A fresh cache directory for the next context, and the jit's switches: the quick tier off
 * (the tests of the eager tier; test_quick_first_then_native turns it on). */
static void use_cache(const char *name, const char *sync, const char *exit_wait) {
    setenv("AX_JIT_QUICK", "0", 1);
    char dir[512];
    snprintf(dir, sizeof dir, "%s/%s", root, name);
    mkdir(dir, 0700);
    setenv("XDG_CACHE_HOME", dir, 1);
    if (sync)
        setenv("AX_JIT_SYNC", sync, 1);
    else
        unsetenv("AX_JIT_SYNC");
    if (exit_wait)
        setenv("AX_JIT_EXIT_WAIT", exit_wait, 1);
    else
        unsetenv("AX_JIT_EXIT_WAIT");
}

/* The number of files in dir whose names end with `suffix`. */
static int count_files(const char *dir, const char *suffix) {
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *e;
    size_t ls = strlen(suffix);
    while (d && (e = readdir(d))) {
        size_t l = strlen(e->d_name);
        n += l >= ls && !strcmp(e->d_name + l - ls, suffix);
    }
    if (d) closedir(d);
    return n;
}

static int cache_entries(const char *name) {
    char dir[512];
    snprintf(dir, sizeof dir, "%s/%s/ax", root, name);
    return count_files(dir, ".so");
}

/* Shared objects left in the scratch directory (ax-jit-<pid>-*) under $TMPDIR. */
static int scratch_objects(void) {
    char tmp[512];
    snprintf(tmp, sizeof tmp, "%s/tmp", root);
    DIR *d = opendir(tmp);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (strncmp(e->d_name, "ax-jit-", 7)) continue;
        char sub[1024];
        snprintf(sub, sizeof sub, "%s/%s", tmp, e->d_name);
        n += count_files(sub, ".so");
    }
    if (d) closedir(d);
    return n;
}

static void no_children_left(void) {
    errno = 0;
    assert_int_equal(waitpid(-1, NULL, WNOHANG), -1);
    assert_int_equal(errno, ECHILD);
}

/* ---------------------------------------------------------------- the program */

typedef struct irb {
    ax_ctx *cx;
    ax_ir_builder *b;
} irb;

static ax_ir_atom eqn(irb *b, ax_prim prim, const ax_params *p, int nin, const ax_ir_atom *ins) {
    return jit_test_eqn(b->cx, b->b, prim, p, nin, ins);
}

static ax_ir_atom bin(irb *b, ax_prim prim, ax_ir_atom x, ax_ir_atom y) {
    return eqn(b, prim, &(ax_params){0}, 2, (ax_ir_atom[]){x, y});
}

/* (sum(exp(x) * 2 + x, axis=1), x * x - x * 0.5): a loop with a reduction and one without.
 * `salt` goes into a literal, so that each test compiles code of its own. */
static ax_ir *program(ax_ctx *cx, int64_t rows, int64_t cols, double salt, ax_array **lits) {
    irb b = {cx, ax_ir_builder_new()};
    assert_non_null(b.b);
    ax_aval t = {.dtype = AX_F32, .ndim = 2, .shape = {rows, cols}};
    ax_ir_atom x = {.var = ax_ir_add_input(b.b, &t)};
    lits[0] = ax_array_scalar(cx, AX_F32, 2.0);
    lits[1] = ax_array_scalar(cx, AX_F32, salt);
    ax_ir_atom two = {.var = -1, .lit = lits[0]}, half = {.var = -1, .lit = lits[1]};
    ax_ir_atom e = eqn(&b, AX_P_EXP, &(ax_params){0}, 1, &x);
    ax_ir_atom s = bin(&b, AX_P_ADD, bin(&b, AX_P_MUL, e, two), x);
    ax_ir_atom r = eqn(&b, AX_P_REDUCE_SUM, &(ax_params){.naxes = 1, .axes = {1}}, 1, &s);
    ax_ir_atom q = bin(&b, AX_P_SUB, bin(&b, AX_P_MUL, x, x), bin(&b, AX_P_MUL, x, half));
    ax_ir *ir = ax_ir_builder_finish(b.b, 2, (ax_ir_atom[]){r, q});
    assert_non_null(ir);
    assert_int_equal(ax_ir_set_name(ir, "tiered"), 0);
    return ir;
}

typedef struct fixture {
    ax_ctx *cx;
    ax_ir *ir;
    ax_array *lits[2];
    ax_array *x;
    ax_array *want[2];
} fixture;

static void fixture_make(fixture *f, double salt) {
    *f = (fixture){.cx = ax_ctx_new()};
    assert_non_null(f->cx);
    f->ir = program(f->cx, 37, 29, salt, f->lits);
    rng r = {(uint64_t)(salt * 1000)};
    ax_aval t = {.dtype = AX_F32, .ndim = 2, .shape = {37, 29}};
    f->x = make_input(f->cx, &r, &t, D_ANY, 0);
    if (ax_ir_eval(f->cx, f->ir, &f->x, f->want)) fail_msg("eager: %s", f->cx->err.message);
}

/* Runs the program and compares both outputs with the eager ones, bit for bit. */
static void run_and_compare(fixture *f, ax_jit_program *p) {
    ax_array *got[2] = {0};
    if (ax_jit_run(f->cx, p, &f->x, got)) fail_msg("run: %s", f->cx->err.message);
    check c = {0};
    compare("row sums", f->want[0], got[0], NULL, &c);
    compare("polynomial", f->want[1], got[1], NULL, &c);
    assert_int_equal(c.mismatches, 0);
    ax_array_release(got[0]);
    ax_array_release(got[1]);
}

/* Calls the program until its background compile has ended (each call checked). */
static void run_until_compiled(fixture *f, ax_jit_program *p) {
    double deadline = now_s() + limit_s();
    while (ax_jit_program_info(p)->compiling) {
        if (now_s() > deadline) fail_msg("the background compile did not end");
        run_and_compare(f, p);
        usleep(2000);
    }
}

static void fixture_free(fixture *f) {
    for (int i = 0; i < 2; i++) {
        ax_array_release(f->want[i]);
        ax_array_release(f->lits[i]);
    }
    ax_array_release(f->x);
    ax_ir_release(f->ir);
    ax_ctx_free(f->cx);
}

/* ---------------------------------------------------------------- tiers */

static void test_eager_first_then_native(void **state) {
    (void)state;
    use_cache("tiers", NULL, NULL);
    fixture f;
    fixture_make(&f, 0.5);
    ax_jit_program *p = ax_jit_start(f.cx, f.ir);
    assert_non_null(p);
    const ax_jit_info *info = ax_jit_program_info(p);
    assert_true(info->background);
    assert_false(info->native);
    run_and_compare(&f, p); /* at once, on the eager kernels */
    assert_true(info->eager_calls >= 1 || info->native);
    run_until_compiled(&f, p);
    assert_true(info->native);
    int eager = info->eager_calls;
    run_and_compare(&f, p); /* natively now */
    assert_int_equal(info->eager_calls, eager);
    assert_int_equal(cache_entries("tiers"), 1);
    assert_int_equal(scratch_objects(), 0);
    ax_jit_free(p);
    fixture_free(&f);
    no_children_left();
}

/* With the quick tier, the first calls run its code (compiler/quickgen.h) while GCC compiles,
 * later calls GCC's code: the same bits throughout. */
static void test_quick_first_then_native(void **state) {
    if (!ax_quickgen_supported()) skip(); /* no AVX2: the tier never runs here */
    (void)state;
    use_cache("quick", NULL, NULL);
    setenv("AX_JIT_QUICK", "1", 1);
    fixture f;
    fixture_make(&f, 0.375);
    ax_jit_program *p = ax_jit_start(f.cx, f.ir);
    assert_non_null(p);
    const ax_jit_info *info = ax_jit_program_info(p);
    assert_true(info->background);
    assert_true(info->quick);
    assert_false(info->native);
    run_and_compare(&f, p); /* at once, on the quick tier's code */
    assert_true(info->quick_calls >= 1 || info->native);
    assert_int_equal(info->eager_calls, 0);
    run_until_compiled(&f, p);
    assert_true(info->native);
    int quick = info->quick_calls;
    run_and_compare(&f, p); /* GCC's code now */
    assert_int_equal(info->quick_calls, quick);
    assert_int_equal(info->eager_calls, 0);
    assert_int_equal(cache_entries("quick"), 1);
    ax_jit_free(p);
    fixture_free(&f);
    no_children_left();
}

static void test_sync_waits(void **state) {
    (void)state;
    use_cache("sync", "1", NULL);
    fixture f;
    fixture_make(&f, 0.25);
    ax_jit_program *p = ax_jit_start(f.cx, f.ir);
    assert_non_null(p);
    assert_true(ax_jit_program_info(p)->native);
    assert_false(ax_jit_program_info(p)->background);
    run_and_compare(&f, p);
    ax_jit_free(p);
    fixture_free(&f);
}

static void test_cached_code_loads_at_once(void **state) {
    (void)state;
    use_cache("warm", "1", NULL);
    fixture f;
    fixture_make(&f, 0.75);
    ax_jit_free(ax_jit_start(f.cx, f.ir)); /* fills the cache */
    fixture_free(&f);
    use_cache("warm", NULL, NULL);
    fixture_make(&f, 0.75);
    ax_jit_program *p = ax_jit_start(f.cx, f.ir);
    assert_true(ax_jit_program_info(p)->from_disk);
    assert_false(ax_jit_program_info(p)->background);
    run_and_compare(&f, p);
    ax_jit_free(p);
    fixture_free(&f);
}

/* Runs a program once (its compile starts after the first call), frees it and its context
 * while the compile runs, and returns how many entries the cache `name` then holds: the end
 * of the context waits up to `exit_wait` ms. No child process and no scratch file is left. */
static int end_during_compile(const char *name, const char *exit_wait, double salt) {
    use_cache(name, NULL, exit_wait);
    fixture f;
    fixture_make(&f, salt);
    ax_jit_program *p = ax_jit_start(f.cx, f.ir);
    run_and_compare(&f, p);
    assert_true(ax_jit_program_info(p)->compiling);
    ax_jit_free(p); /* the compile goes on, for the disk cache */
    fixture_free(&f);
    no_children_left();
    assert_int_equal(scratch_objects(), 0);
    return cache_entries(name);
}

/* AX_JIT_EXIT_WAIT=0: the child is killed at once and nothing reaches the cache. */
static void test_exit_stops_compile(void **state) {
    (void)state;
    assert_int_equal(end_during_compile("stop", "0", 1.5), 0);
}

/* With time to wait, the end of a context lets a running compile fill the disk cache, even
 * though its program is gone: the next context loads the code. */
static void test_exit_fills_cache(void **state) {
    (void)state;
    assert_int_equal(end_during_compile("fill", "600000", 2.5), 1);
    fixture f;
    fixture_make(&f, 2.5);
    ax_jit_program *p = ax_jit_start(f.cx, f.ir);
    assert_true(ax_jit_program_info(p)->from_disk);
    run_and_compare(&f, p);
    ax_jit_free(p);
    fixture_free(&f);
}

/* Two programs that ran, freed while the second's compile may still wait in the queue (one
 * compile at a time on two cores): the end of the context compiles both into the cache. */
static void test_exit_compiles_queued(void **state) {
    (void)state;
    use_cache("queued", NULL, "600000");
    fixture f;
    fixture_make(&f, 5.5);
    ax_array *lits[2];
    ax_ir *other = program(f.cx, 37, 29, 6.5, lits);
    ax_jit_program *a = ax_jit_start(f.cx, f.ir), *b = ax_jit_start(f.cx, other);
    run_and_compare(&f, a);
    ax_array *got[2] = {0};
    assert_int_equal(ax_jit_run(f.cx, b, &f.x, got), 0);
    ax_array_release(got[0]);
    ax_array_release(got[1]);
    ax_jit_free(a);
    ax_jit_free(b);
    ax_ir_release(other);
    ax_array_release(lits[0]);
    ax_array_release(lits[1]);
    fixture_free(&f);
    no_children_left();
    assert_int_equal(cache_entries("queued"), 2);
    assert_int_equal(scratch_objects(), 0);
}

/* Several programs at once: compiles beyond the machine's share wait in a queue; every
 * program ends native with the right bits; a queued compile whose program goes is dropped. */
static void test_queue(void **state) {
    (void)state;
    use_cache("queue", NULL, "600000");
    enum { N = 4 };
    fixture f[N];
    ax_jit_program *p[N];
    for (int i = 0; i < N; i++) {
        fixture_make(&f[i], 3.0 + i);
        p[i] = ax_jit_start(f[i].cx, f[i].ir);
        assert_true(ax_jit_program_info(p[i])->compiling);
    }
    for (int i = 0; i < N; i++) {
        run_until_compiled(&f[i], p[i]);
        assert_true(ax_jit_program_info(p[i])->native);
        run_and_compare(&f[i], p[i]);
    }
    /* one context, several programs: a queued one dropped with its program */
    fixture g;
    fixture_make(&g, 9.0);
    ax_array *other_lits[2];
    ax_ir *other = program(g.cx, 5, 3, 9.5, other_lits);
    ax_jit_program *a = ax_jit_start(g.cx, g.ir), *b = ax_jit_start(g.cx, other);
    assert_true(ax_jit_program_info(b)->compiling);
    ax_jit_free(b);
    run_until_compiled(&g, a);
    assert_true(ax_jit_program_info(a)->native);
    ax_jit_free(a);
    ax_ir_release(other);
    ax_array_release(other_lits[0]);
    ax_array_release(other_lits[1]);
    fixture_free(&g);
    for (int i = 0; i < N; i++) {
        ax_jit_free(p[i]);
        fixture_free(&f[i]);
    }
    no_children_left();
}

/* A compile that fails in the background (an assembler that refuses) leaves the program on
 * the eager kernels, with the right results. */
static void test_failed_compile_falls_back(void **state) {
    (void)state;
    char bin[512], as[600], ld[600];
    snprintf(bin, sizeof bin, "%s/bin", root);
    mkdir(bin, 0700);
    snprintf(as, sizeof as, "%s/as", bin);
    snprintf(ld, sizeof ld, "%s/ld", bin);
    FILE *script = fopen(as, "w");
    assert_non_null(script);
    fputs("#!/bin/sh\necho 'stand-in assembler: no' >&2\nexit 1\n", script);
    fclose(script);
    chmod(as, 0755);
    symlink("/usr/bin/ld", ld);
    char *path = strdup(getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin");
    char newpath[4096];
    snprintf(newpath, sizeof newpath, "%s:%s", bin, path);
    setenv("PATH", newpath, 1);
    use_cache("fail", NULL, NULL);
    fixture f;
    fixture_make(&f, 4.5);
    ax_jit_program *p = ax_jit_start(f.cx, f.ir);
    assert_true(ax_jit_program_info(p)->compiling);
    run_until_compiled(&f, p);
    assert_false(ax_jit_program_info(p)->native);
    run_and_compare(&f, p);
    run_and_compare(&f, p);
    assert_int_equal(cache_entries("fail"), 0);
    ax_jit_free(p);
    fixture_free(&f);
    setenv("PATH", path, 1);
    free(path);
    no_children_left();
    assert_int_equal(scratch_objects(), 0);
}

/* ---------------------------------------------------------------- layout variants */

/* x*x + x*2 over f32[512,1024] (2 MB: enough for a variant). */
static ax_ir *poly(ax_ctx *cx, ax_array **two) {
    irb b = {cx, ax_ir_builder_new()};
    ax_aval t = {.dtype = AX_F32, .ndim = 2, .shape = {512, 1024}};
    ax_ir_atom x = {.var = ax_ir_add_input(b.b, &t)};
    *two = ax_array_scalar(cx, AX_F32, 2.0);
    ax_ir_atom c = {.var = -1, .lit = *two};
    ax_ir_atom y = bin(&b, AX_P_ADD, bin(&b, AX_P_MUL, x, x), bin(&b, AX_P_MUL, x, c));
    ax_ir *ir = ax_ir_builder_finish(b.b, 1, &y);
    assert_non_null(ir);
    return ir;
}

/* f32[512,1024] broadcast from `base` (shape bshape) with the given strides. */
static ax_array *broadcast(ax_ctx *cx, rng *r, int bndim, const int64_t *bshape,
                           const int64_t *strides) {
    ax_aval bt = {.dtype = AX_F32, .ndim = bndim};
    for (int d = 0; d < bndim; d++) bt.shape[d] = bshape[d];
    ax_array *base = make_input(cx, r, &bt, D_ANY, 0);
    ax_array *v = ax_array_view(cx, base, 2, (int64_t[]){512, 1024}, strides, 0);
    ax_array_release(base);
    return v;
}

static void test_broadcast_inputs_use_a_variant(void **state) {
    (void)state;
    use_cache("layout", "1", NULL);
    ax_ctx *cx = ax_ctx_new();
    ax_array *two;
    ax_ir *ir = poly(cx, &two);
    rng r = {42};
    ax_array *inputs[] = {
        broadcast(cx, &r, 0, NULL, (int64_t[]){0, 0}),              /* ones((512, 1024)) */
        broadcast(cx, &r, 1, (int64_t[]){1024}, (int64_t[]){0, 1}), /* a row */
        broadcast(cx, &r, 1, (int64_t[]){512}, (int64_t[]){1, 0}),  /* a column */
    };
    ax_jit_program *p = ax_jit_start(cx, ir);
    assert_true(ax_jit_program_info(p)->native);
    for (int k = 0; k < 3; k++) {
        ax_array *want = NULL;
        if (ax_ir_eval(cx, ir, &inputs[k], &want)) fail_msg("eager: %s", cx->err.message);
        for (int call = 0; call < 3; call++) { /* the variant is built on the second */
            ax_array *got = NULL;
            if (ax_jit_run(cx, p, &inputs[k], &got)) fail_msg("run: %s", cx->err.message);
            check c = {0};
            compare("x*x + x*2", want, got, NULL, &c);
            assert_int_equal(c.mismatches, 0);
            ax_array_release(got);
        }
        assert_int_equal(ax_jit_program_info(p)->nvariants, k + 1);
        ax_array_release(want);
    }
    for (int k = 0; k < 3; k++) ax_array_release(inputs[k]);
    ax_jit_free(p);
    ax_ir_release(ir);
    ax_array_release(two);
    ax_ctx_free(cx);
}

/* A broadcast input seen once (optimizer state made by zeros_like, computed from the second
 * step on) builds no variant. */
static void test_layout_seen_once_builds_nothing(void **state) {
    (void)state;
    use_cache("layout", "1", NULL);
    ax_ctx *cx = ax_ctx_new();
    ax_array *two;
    ax_ir *ir = poly(cx, &two);
    rng r = {43};
    ax_array *zeros = broadcast(cx, &r, 0, NULL, (int64_t[]){0, 0});
    ax_aval t = {.dtype = AX_F32, .ndim = 2, .shape = {512, 1024}};
    ax_array *computed = make_input(cx, &r, &t, D_SMALL, 0);
    ax_jit_program *p = ax_jit_start(cx, ir);
    ax_array *args[] = {zeros, computed, computed, computed};
    for (int i = 0; i < 4; i++) {
        ax_array *got = NULL;
        assert_int_equal(ax_jit_run(cx, p, &args[i], &got), 0);
        ax_array_release(got);
    }
    assert_int_equal(ax_jit_program_info(p)->nvariants, 0);
    ax_array_release(zeros);
    ax_array_release(computed);
    ax_jit_free(p);
    ax_ir_release(ir);
    ax_array_release(two);
    ax_ctx_free(cx);
}

int main(void) {
    snprintf(root, sizeof root, "/tmp/ax-test-tier-XXXXXX");
    const char *base = getenv("TMPDIR");
    if (base && *base) snprintf(root, sizeof root, "%s/ax-test-tier-XXXXXX", base);
    if (!mkdtemp(root)) return 1;
    char tmp[512];
    snprintf(tmp, sizeof tmp, "%s/tmp", root);
    mkdir(tmp, 0700);
    setenv("TMPDIR", tmp, 1); /* before the first compile: the scratch directory goes here */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_eager_first_then_native),
        cmocka_unit_test(test_quick_first_then_native),
        cmocka_unit_test(test_sync_waits),
        cmocka_unit_test(test_cached_code_loads_at_once),
        cmocka_unit_test(test_exit_stops_compile),
        cmocka_unit_test(test_exit_fills_cache),
        cmocka_unit_test(test_exit_compiles_queued),
        cmocka_unit_test(test_queue),
        cmocka_unit_test(test_failed_compile_falls_back),
        cmocka_unit_test(test_broadcast_inputs_use_a_variant),
        cmocka_unit_test(test_layout_seen_once_builds_nothing),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    if (system(cmd) != 0) return 1;
    return failed;
}

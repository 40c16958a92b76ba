/* OpenBLAS through dlopen, so that ax links without it and reports a clear error when the
 * library is missing. */
#include "blas.h"

#include <dlfcn.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define OPENBLAS_SONAME "libopenblas.so.0"

/* OpenBLAS reads OPENBLAS_CORETYPE once, when it is loaded. Debian's 0.3.21 may not know a
 * recent CPU and then falls back to generic kernels several times slower; naming the kernel
 * family from the CPU's features avoids that. Measured on an AVX-512 AMD EPYC (3000^3 sgemm,
 * 2 threads): SkylakeX 390 GFLOP/s, Cooperlake 383, Haswell 207, Zen 209. A user's own
 * setting always wins. */
static void choose_coretype(void) {
    if (getenv("OPENBLAS_CORETYPE")) return;
    __builtin_cpu_init();
    const char *core = NULL;
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl"))
        core = "SkylakeX";
    else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        core = "Haswell";
    if (core) setenv("OPENBLAS_CORETYPE", core, 0);
}

/* Stores dlsym's object pointer into a function pointer (POSIX guarantees they convert). */
static bool lookup(void *handle, const char *name, void *fn_ptr, size_t size) {
    void *p = dlsym(handle, name);
    if (!p || size != sizeof p) return false;
    memcpy(fn_ptr, &p, sizeof p);
    return true;
}

#define LOOKUP(handle, name, dst) lookup((handle), (name), &(dst), sizeof(dst))

/* The LAPACK routines of runtime/lapack.c, f32 and f64: the name of a missing one, or NULL. */
static const char *lapack_open(void *handle, ax_blas *b) {
    static const char *const names[][2] = {{"sgetrf_", "dgetrf_"},
                                           {"ssyevd_", "dsyevd_"},
                                           {"sgesdd_", "dgesdd_"},
                                           {"sgeqrf_", "dgeqrf_"},
                                           {"sorgqr_", "dorgqr_"}};
    for (int t = 0; t < 2; t++) {
        if (!LOOKUP(handle, names[0][t], b->getrf[t])) return names[0][t];
        if (!LOOKUP(handle, names[1][t], b->syevd[t])) return names[1][t];
        if (!LOOKUP(handle, names[2][t], b->gesdd[t])) return names[2][t];
        if (!LOOKUP(handle, names[3][t], b->geqrf[t])) return names[3][t];
        if (!LOOKUP(handle, names[4][t], b->orgqr[t])) return names[4][t];
    }
    return NULL;
}

/* OpenBLAS's worker threads spin after each job for 2^OPENBLAS_THREAD_TIMEOUT cycles (2^28 by
 * default, ~0.1 s) before they sleep: long enough to take the other core from what runs next
 * (the eager steps and the compiler of a tiered jit, other processes). 2^20 cycles (~0.4 ms)
 * still bridges back-to-back large products. Measured on 2 cores: conformance 17's 300 SGD
 * steps on an empty cache 101-109 -> 49-52 ms; 256^2, 512^2 and 3000^2 products unchanged
 * (118 us, 0.80 ms, 148 ms). A user's own setting wins. */
static void shorten_thread_timeout(void) {
    setenv("OPENBLAS_THREAD_TIMEOUT", "20", 0);
}

static ax_blas *blas_open(ax_ctx *cx) {
    choose_coretype();
    shorten_thread_timeout();
    void *handle = dlopen(OPENBLAS_SONAME, RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
        const char *why = dlerror();
        return ax_error(cx, AX_ERR_RUNTIME, "cannot load OpenBLAS (%s): %s", OPENBLAS_SONAME,
                        why ? why : "unknown reason");
    }
    ax_blas *b = calloc(1, sizeof *b);
    if (!b) {
        dlclose(handle);
        return ax_error_oom(cx);
    }
    b->handle = handle;
    const char *missing = NULL;
    if (!LOOKUP(handle, "cblas_sgemm", b->sgemm))
        missing = "cblas_sgemm";
    else if (!LOOKUP(handle, "cblas_dgemm", b->dgemm))
        missing = "cblas_dgemm";
    else if (!LOOKUP(handle, "cblas_ssyrk", b->ssyrk))
        missing = "cblas_ssyrk";
    else if (!LOOKUP(handle, "cblas_dsyrk", b->dsyrk))
        missing = "cblas_dsyrk";
    else if (!LOOKUP(handle, "cblas_strsm", b->strsm))
        missing = "cblas_strsm";
    else if (!LOOKUP(handle, "cblas_dtrsm", b->dtrsm))
        missing = "cblas_dtrsm";
    else if (!LOOKUP(handle, "spotrf_", b->spotrf))
        missing = "spotrf_";
    else if (!LOOKUP(handle, "dpotrf_", b->dpotrf))
        missing = "dpotrf_";
    else if (!LOOKUP(handle, "openblas_set_num_threads", b->set_num_threads))
        missing = "openblas_set_num_threads";
    else if (!LOOKUP(handle, "openblas_get_num_threads", b->get_num_threads))
        missing = "openblas_get_num_threads";
    else
        missing = lapack_open(handle, b);
    if (missing) {
        ax_blas_free(b);
        return ax_error(cx, AX_ERR_RUNTIME, "OpenBLAS (%s) has no function %s", OPENBLAS_SONAME,
                        missing);
    }
    if (cx->threads > 0) b->set_num_threads(cx->threads);
    return b;
}

ax_blas *ax_blas_get(ax_ctx *cx) {
    if (!cx->blas) cx->blas = blas_open(cx);
    return cx->blas;
}

void ax_blas_free(ax_blas *blas) {
    if (!blas) return;
    if (blas->handle) dlclose(blas->handle);
    free(blas);
}

/* Compiles in child processes (see jit_job.h). */
#include "jit_job.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "codegen.h"
#include "jit_cache.h"

struct ax_jit_job {
    ax_jit_job_state state;
    pid_t pid; /* the child while RUNNING; 0 once reaped (or when compiled here) */
    int fd;    /* the read end of the child's report; -1 once closed */
    char *so;
    char msg[512]; /* the child's report: empty when it succeeded */
    size_t got;
    double cpu_ms; /* the CPU time of the child and the programs it ran, once reaped */
};

/* jit's options, and the functions of `code`; NULL (the context released) on failure. */
static gcc_jit_context *configure(const ax_gccjit *api, gcc_jit_context *ctx, const ax_code *code,
                                  char *why, size_t whylen) {
    GCCJIT(gcc_jit_context_set_bool_print_errors_to_stderr)(ctx, 0);
    ax_codegen_options(api, ctx);
    /* The link is most of a small program's compile time. The shared object's undefined
     * symbols (libm, libmvec) resolve against ax itself, so it needs no C library; without
     * the LTO plugin (never used here) and a build id, ld starts faster (~15 ms of ~75). */
    GCCJIT(gcc_jit_context_add_driver_option)(ctx, "-nostdlib");
    GCCJIT(gcc_jit_context_add_driver_option)(ctx, "-fno-use-linker-plugin");
    GCCJIT(gcc_jit_context_add_driver_option)(ctx, "-Wl,--build-id=none");
    if (!ax_codegen_build(api, ctx, code, why, whylen)) {
        GCCJIT(gcc_jit_context_release)(ctx);
        return NULL;
    }
    return ctx;
}

/* Whether loop steps a and b make the same function: the same loop nest, nodes and buffer
 * types (nodes name operands and buffers relative to their step). */
static bool same_loop(const ax_code *code, int a, int b) {
    const ax_code_step *x = &code->steps[a], *y = &code->steps[b];
    return x->kind == AX_STEP_LOOP && y->kind == AX_STEP_LOOP && x->ndim == y->ndim &&
           x->nnodes == y->nnodes && x->nbufs == y->nbufs &&
           !memcmp(x->shape, y->shape, sizeof x->shape) &&
           !memcmp(x->reduced, y->reduced, sizeof x->reduced) &&
           !memcmp(code->nodes + x->first_node, code->nodes + y->first_node,
                   (size_t)x->nnodes * sizeof *code->nodes) &&
           !memcmp(code->bufs + x->first_buf, code->bufs + y->first_buf,
                   (size_t)x->nbufs * sizeof *code->bufs);
}

int ax_jit_code_twin(const ax_code *code, int s) {
    for (int t = 0; t < s; t++)
        if (same_loop(code, t, s)) return t;
    return s;
}

gcc_jit_context *ax_jit_new_context(const ax_gccjit *api, const ax_code *code, char *why,
                                    size_t whylen) {
    /* Each function once: a loop step that repeats an earlier one (the two layers of an MLP,
     * the same update of several parameters) becomes an eager step in this copy, which the
     * code generator skips; the program calls its twin's function (ax_jit_code_twin). */
    ax_code unique = *code;
    unique.steps = malloc(((size_t)code->h.nsteps + 1) * sizeof *unique.steps);
    if (!unique.steps) return NULL;
    memcpy(unique.steps, code->steps, (size_t)code->h.nsteps * sizeof *unique.steps);
    for (int s = 0; s < code->h.nsteps; s++)
        if (ax_jit_code_twin(code, s) != s) unique.steps[s].kind = AX_STEP_EAGER;
    gcc_jit_context *ctx = GCCJIT(gcc_jit_context_acquire)();
    if (ctx) ctx = configure(api, ctx, &unique, why, whylen);
    free(unique.steps);
    return ctx;
}

/* Builds the code and compiles it to the shared object `path`; 0, or -1 with the reason. */
static int compile_here(const ax_gccjit *api, const ax_code *code, const char *path, char *why,
                        size_t whylen) {
    why[0] = 0;
    gcc_jit_context *ctx = ax_jit_new_context(api, code, why, whylen);
    if (!ctx) {
        if (!why[0]) snprintf(why, whylen, "libgccjit cannot make a context");
        return -1;
    }
    GCCJIT(gcc_jit_context_compile_to_file)(ctx, GCC_JIT_OUTPUT_KIND_DYNAMIC_LIBRARY, path);
    const char *err = GCCJIT(gcc_jit_context_get_first_error)(ctx);
    if (err) snprintf(why, whylen, "libgccjit: %s", err);
    GCCJIT(gcc_jit_context_release)(ctx);
    return err ? -1 : 0;
}

/* The child: compile, report, and leave without running the parent's exit handlers. */
static _Noreturn void run_child(const ax_gccjit *api, const ax_code *code, const char *so,
                                pid_t parent, int report) {
    prctl(PR_SET_PDEATHSIG, SIGKILL); /* die with ax, if ax is killed or exits first */
    if (getppid() != parent) _exit(1);
    /* Ctrl-C in a terminal reaches the whole process group: it interrupts what ax runs, not a
     * compile in the background (nor the assembler and linker, which inherit the setting).
     * ax stops a compile itself, with SIGKILL, when Ctrl-C abandons it. */
    signal(SIGINT, SIG_IGN);
    /* libgccjit reads $TMPDIR once per process: this child's first compile is its only one */
    setenv("TMPDIR", ax_jit_scratch_dir(), 1);
    char msg[512] = "";
    ax_gccjit *opened = api ? NULL : ax_gccjit_open(msg, sizeof msg);
    int rc = api || opened ? compile_here(api ? api : opened, code, so, msg, sizeof msg) : -1;
    if (rc && write(report, msg, strlen(msg)) < 0) rc = -1;
    _exit(rc ? 1 : 0);
}

/* A fresh, unique path for the shared object in the scratch directory. */
static char *new_so_path(uint64_t key) {
    const char *dir = ax_jit_scratch_dir();
    if (!dir) return NULL;
    size_t n = strlen(dir) + 40;
    char *path = malloc(n);
    if (!path) return NULL;
    snprintf(path, n, "%s/%016llx-XXXXXX.so", dir, (unsigned long long)key);
    int fd = mkostemps(path, 3, O_CLOEXEC);
    if (fd < 0) {
        free(path);
        return NULL;
    }
    close(fd);
    return path;
}

/* No child to be had: compile in this process, with $TMPDIR pointing at the scratch
 * directory meanwhile. */
static void compile_in_process(ax_jit_job *j, const ax_gccjit *api, const ax_code *code) {
    ax_jit_scratch scratch;
    if (!ax_jit_scratch_enter(&scratch)) {
        snprintf(j->msg, sizeof j->msg, "no temporary directory to compile in");
        j->state = AX_JOB_FAILED;
        return;
    }
    j->state = compile_here(api, code, j->so, j->msg, sizeof j->msg) ? AX_JOB_FAILED : AX_JOB_DONE;
    ax_jit_scratch_leave(&scratch);
}

void ax_jit_job_renice(ax_jit_job *j, int nice) {
    if (j->pid > 0) setpriority(PRIO_PROCESS, (id_t)j->pid, nice);
}

ax_jit_job *ax_jit_job_start(const ax_gccjit *api, const ax_code *code, uint64_t key, char *why,
                             size_t whylen) {
    ax_jit_job *j = calloc(1, sizeof *j);
    if (!j) {
        snprintf(why, whylen, "out of memory");
        return NULL;
    }
    j->fd = -1;
    if (!(j->so = new_so_path(key))) {
        snprintf(why, whylen, "no temporary directory to compile in");
        free(j);
        return NULL;
    }
    int fds[2];
    pid_t parent = getpid(), pid = -1;
    /* The child gets a copy of stdio's buffers: if anything in it flushed them (a sanitizer's
     * exit, a library calling exit()), output the program printed would appear twice. */
    fflush(NULL);
    if (pipe2(fds, O_CLOEXEC) == 0) {
        pid = fork();
        if (pid == 0) run_child(api, code, j->so, parent, fds[1]);
        close(fds[1]);
        if (pid < 0) close(fds[0]);
    }
    if (pid < 0 && !api) {
        snprintf(j->msg, sizeof j->msg, "no process to compile in (%s)", strerror(errno));
        j->state = AX_JOB_FAILED;
        return j;
    }
    if (pid < 0) {
        compile_in_process(j, api, code);
        return j;
    }
    j->pid = pid;
    j->fd = fds[0];
    fcntl(j->fd, F_SETFL, O_NONBLOCK);
    j->state = AX_JOB_RUNNING;
    return j;
}

/* The child closed its end: reap it and record how it ended. */
static void finish(ax_jit_job *j) {
    close(j->fd);
    j->fd = -1;
    j->msg[j->got] = 0;
    int status = 0;
    struct rusage ru = {0};
    /* ECHILD (SIGCHLD ignored by an embedding program): the report alone tells */
    while (wait4(j->pid, &status, 0, &ru) < 0 && errno == EINTR) {
    }
    j->pid = 0;
    j->cpu_ms = (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
                (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
    bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (ok) {
        j->state = AX_JOB_DONE;
        return;
    }
    j->state = AX_JOB_FAILED;
    if (j->got) return; /* the child said why */
    if (WIFSIGNALED(status))
        snprintf(j->msg, sizeof j->msg, "the compiler process died of signal %d", WTERMSIG(status));
    else
        snprintf(j->msg, sizeof j->msg, "the compiler process failed");
}

/* Reads what the child has written; finishes the job at end of file. */
static void drain(ax_jit_job *j) {
    for (;;) {
        ssize_t n = read(j->fd, j->msg + j->got, sizeof j->msg - 1 - j->got);
        if (n > 0) {
            j->got += (size_t)n;
            if (j->got < sizeof j->msg - 1) continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && errno == EAGAIN) return; /* still running */
        finish(j); /* end of file, an error, or a report too long to keep reading */
        return;
    }
}

ax_jit_job_state ax_jit_job_poll(ax_jit_job *j, int timeout_ms) {
    if (j->state != AX_JOB_RUNNING) return j->state;
    struct pollfd p = {.fd = j->fd, .events = POLLIN};
    if (poll(&p, 1, timeout_ms) > 0) drain(j); /* 0: a timeout; -1: a signal (Ctrl-C) */
    return j->state;
}

void ax_jit_job_wait_any(ax_jit_job *const *jobs, int n, int timeout_ms) {
    struct pollfd p[16];
    int k = 0;
    for (int i = 0; i < n && k < 16; i++)
        if (jobs[i]->state == AX_JOB_RUNNING)
            p[k++] = (struct pollfd){.fd = jobs[i]->fd, .events = POLLIN};
    if (k) poll(p, (nfds_t)k, timeout_ms);
}

const char *ax_jit_job_so(const ax_jit_job *j) {
    return j->so;
}

double ax_jit_job_cpu_ms(const ax_jit_job *j) {
    return j->cpu_ms;
}

const char *ax_jit_job_why(const ax_jit_job *j) {
    return j->msg;
}

void ax_jit_job_free(ax_jit_job *j) {
    if (!j) return;
    if (j->pid > 0) {
        kill(j->pid, SIGKILL);
        while (waitpid(j->pid, NULL, 0) < 0 && errno == EINTR) {
        }
    }
    if (j->fd >= 0) close(j->fd);
    if (j->so) unlink(j->so);
    free(j->so);
    free(j);
}

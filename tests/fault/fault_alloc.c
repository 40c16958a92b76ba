/* The allocation hook behind fault injection and the fuzzer's memory limits (fault_alloc.h).
 *
 * A test file, not part of ax: the globals below are the hook's own state, shared by every
 * thread (the counter is atomic so that the N-th allocation is well defined even when a worker
 * thread allocates). Nothing here allocates, so that the hook cannot recurse into itself. */
#include "fault_alloc.h"

#include <errno.h>
#include <execinfo.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Each wrapped function: the linker's --wrap sends calls to __wrap_NAME, which calls the C
 * library's through __real_NAME. */
#define WRAPPED(ret, name, ...)                                                                    \
    ret __real_##name(__VA_ARGS__);                                                                \
    ret __wrap_##name(__VA_ARGS__);
WRAPPED(void *, malloc, size_t n)
WRAPPED(void *, calloc, size_t count, size_t size)
WRAPPED(void *, realloc, void *p, size_t n)
WRAPPED(char *, strdup, const char *s)
WRAPPED(char *, strndup, const char *s, size_t n)
WRAPPED(void *, aligned_alloc, size_t align, size_t n)
#undef WRAPPED

/* Where the executable is loaded: return addresses minus this are what addr2line reads. */
extern char __executable_start;

static struct {
    atomic_int ready;  /* 0: environment not read yet, 1: being read, 2: read */
    atomic_long count; /* allocations so far */
    long fail_at;      /* 0: never */
    bool persist, trace;
    int log_fd; /* -1: no log */
    char count_path[4096];
    /* the fuzzer's limits */
    atomic_bool armed;
    size_t max_one, max_total;
    atomic_size_t total;
} hook = {.log_fd = -1};

static void write_count(void) {
    int fd = open(hook.count_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) return;
    char line[32];
    int n = snprintf(line, sizeof line, "%ld\n", atomic_load(&hook.count));
    if (write(fd, line, (size_t)n) != n) { /* nothing to do about it */
    }
    close(fd);
}

static void read_environment(void) {
    int expected = 0;
    if (!atomic_compare_exchange_strong(&hook.ready, &expected, 1)) {
        while (atomic_load(&hook.ready) != 2) { /* another thread is reading it */
        }
        return;
    }
    const char *at = getenv("AX_FAULT_AT"), *persist = getenv("AX_FAULT_PERSIST");
    const char *log = getenv("AX_FAULT_LOG"), *count = getenv("AX_FAULT_COUNT");
    hook.fail_at = at ? atol(at) : 0;
    hook.persist = persist && *persist && strcmp(persist, "0") != 0;
    hook.trace = getenv("AX_FAULT_TRACE") != NULL;
    if (log && *log) hook.log_fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (count && *count && strlen(count) < sizeof hook.count_path) {
        strcpy(hook.count_path, count);
        atexit(write_count);
    }
    atomic_store(&hook.ready, 2);
}

/* ASan's, when linked in: a symbolized stack. */
void __sanitizer_print_stack_trace(void) __attribute__((weak));

static void log_failure(long n, void *caller) {
    if (hook.trace) {
        fprintf(stderr, "fault_alloc: allocation %ld fails here:\n", n);
        if (__sanitizer_print_stack_trace) {
            __sanitizer_print_stack_trace();
        } else {
            void *frames[32];
            backtrace_symbols_fd(frames, backtrace(frames, 32), STDERR_FILENO);
        }
    }
    if (hook.log_fd < 0) return;
    /* The caller, then (for the report) up to 5 of its callers. */
    void *frames[40];
    int nframes = backtrace(frames, 40), first = 0;
    while (first < nframes && frames[first] != caller) first++;
    if (first == nframes) frames[0] = caller, first = 0, nframes = 1;
    char line[256];
    int len = snprintf(line, sizeof line, "%ld", n);
    for (int i = first; i < nframes && i < first + 6; i++)
        len += snprintf(line + len, sizeof line - (size_t)len, " 0x%lx",
                        (unsigned long)((uintptr_t)frames[i] - (uintptr_t)&__executable_start));
    len += snprintf(line + len, sizeof line - (size_t)len, "\n");
    if (write(hook.log_fd, line, (size_t)len) != len) { /* the runner will see no line */
    }
}

/* True when this allocation (of `n` bytes, called from `caller`) must fail. */
static bool should_fail(size_t n, void *caller) {
    if (atomic_load_explicit(&hook.ready, memory_order_acquire) != 2) read_environment();
    long k = atomic_fetch_add(&hook.count, 1) + 1;
    if (hook.fail_at > 0 && (k == hook.fail_at || (hook.persist && k > hook.fail_at))) {
        if (k == hook.fail_at) log_failure(k, caller);
        errno = ENOMEM;
        return true;
    }
    if (atomic_load_explicit(&hook.armed, memory_order_relaxed)) {
        size_t before = atomic_fetch_add(&hook.total, n);
        if ((hook.max_one && n > hook.max_one) || (hook.max_total && before + n > hook.max_total)) {
            if (before <= hook.max_total) log_failure(k, caller); /* where the total ran out */
            errno = ENOMEM;
            return true;
        }
    }
    return false;
}

void ax_fault_limit_arm(size_t max_one, size_t max_total) {
    hook.max_one = max_one;
    hook.max_total = max_total;
    atomic_store(&hook.total, 0);
    atomic_store(&hook.armed, true);
}

void ax_fault_limit_disarm(void) {
    atomic_store(&hook.armed, false);
}

#define CALLER __builtin_return_address(0)

void *__wrap_malloc(size_t n) {
    return should_fail(n, CALLER) ? NULL : __real_malloc(n);
}

void *__wrap_calloc(size_t count, size_t size) {
    size_t n = size && count > SIZE_MAX / size ? SIZE_MAX : count * size;
    return should_fail(n, CALLER) ? NULL : __real_calloc(count, size);
}

void *__wrap_realloc(void *p, size_t n) {
    return should_fail(n, CALLER) ? NULL : __real_realloc(p, n);
}

char *__wrap_strdup(const char *s) {
    return should_fail(strlen(s) + 1, CALLER) ? NULL : __real_strdup(s);
}

char *__wrap_strndup(const char *s, size_t n) {
    return should_fail(strnlen(s, n) + 1, CALLER) ? NULL : __real_strndup(s, n);
}

void *__wrap_aligned_alloc(size_t align, size_t n) {
    return should_fail(n, CALLER) ? NULL : __real_aligned_alloc(align, n);
}

/* Fuzz target for the lexer, parser and evaluator: any input must run, or stop with an error
 * that says why, never crash, hang, leak or trip a sanitizer (docs/testing.md).
 *
 * Each input is parsed on its own (the tree is dumped, the REPL's "is this entry complete?"
 * is asked), then run as a program in a fresh interpreter whose work is bounded: a step
 * budget (loop iterations and calls, runtime/context.h) and an allocation limit
 * (tests/fault/fault_alloc.c) turn endless loops and huge arrays into errors. The values of
 * top-level expressions are formatted as the REPL does, and a failure's report is formatted
 * too; all output goes to /dev/null (AX_FUZZ_SHOW=1 keeps it, to look at one input).
 * The options "#% --x64" and "--allow-key-reuse" in the input work as they do in tests/lang.
 *
 * Built with libFuzzer (make fuzz: clang, -fsanitize=fuzzer -DAX_LIBFUZZER) it is an
 * ordinary target. Built without it (make: build/fuzz/fuzz_ax), it is a small deterministic
 * mutation fuzzer of its own, which make test runs:
 *   fuzz_ax FILE...                              run each file once
 *   fuzz_ax [--last PATH] --random N SEED FILE...  the files, then N random mutations of them;
 *                                                each input is first written to PATH, so
 *                                                that the one that crashed can be replayed */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../lang/ast.h"
#include "../../lang/interp.h"
#include "../../runtime/context.h"
#include "../../runtime/format.h"
#include "../../stdlib/libs.h"
#include "../fault/fault_alloc.h"

enum {
    STEP_BUDGET = 20000,           /* loop iterations + calls per input */
    MAX_ONE_ALLOCATION = 1 << 20,  /* bytes: below the 2 MB buffers the array cache keeps */
    MAX_INPUT_ALLOCATION = 1 << 26 /* bytes requested by one input, all allocations: about the
                                      work it may do on arrays of more than 8 KB */
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* A failure of the program under test that is not a crash: report it as one. */
static void fail(const char *why, ax_ctx *cx) {
    fprintf(stderr, "fuzz_ax: %s\n", why);
    if (cx) ax_error_print(cx, stderr);
    abort();
}

static void check_parse(const char *src, size_t len) {
    ax_ctx *cx = ax_ctx_new();
    if (!cx) return;
    ax_program *p = ax_parse_n(cx, src, len, "fuzz.ax"); /* NUL bytes included */
    if (p) {
        ax_strbuf sb;
        ax_strbuf_init(&sb);
        for (int i = 0; i < p->stmts.n; i++) ax_ast_dump(&sb, p->stmts.items[i]);
        ax_strbuf_free(&sb);
        ax_program_free(p);
    } else if (!ax_error_pending(cx)) {
        fail("a failed parse recorded no error", NULL);
    }
    (void)ax_parse_is_incomplete(src);
    ax_ctx_free(cx);
}

static FILE *sink; /* /dev/null, where the REPL echo and error reports go */

static void run_program(const char *src, size_t len) {
    ax_ctx *cx = ax_ctx_new();
    if (!cx) return;
    cx->threads = 1; /* a pool per input would cost more than the input */
    cx->x64 = strstr(src, "#% --x64") != NULL;
    ax_interp *in = ax_interp_new(cx, NULL);
    if (!in || ax_libs_open(in) < 0) fail("the interpreter did not start", cx);
    in->allow_key_reuse = strstr(src, "--allow-key-reuse") != NULL;
    cx->step_budget = STEP_BUDGET;
    ax_fault_limit_arm(MAX_ONE_ALLOCATION, MAX_INPUT_ALLOCATION);
    int rc = ax_interp_run_n(in, src, len, "fuzz.ax", sink);
    ax_fault_limit_disarm();
    if (rc != 0 && !ax_error_pending(cx)) fail("the program failed without an error", NULL);
    if (ax_error_pending(cx)) ax_error_print(cx, sink);
    fflush(stdout);
    ax_interp_free(in);
    ax_ctx_free(cx);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    const char *show = getenv("AX_FUZZ_SHOW");
    if (show && *show && strcmp(show, "0") != 0) {
        sink = stderr;
        return 0;
    }
    sink = fopen("/dev/null", "w");
    int fd = open("/dev/null", O_WRONLY);
    if (!sink || fd < 0) abort();
    dup2(fd, STDOUT_FILENO); /* print() */
    close(fd);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *src = malloc(size + 1);
    if (!src) return 0;
    memcpy(src, data, size);
    src[size] = 0;
    check_parse(src, size);
    run_program(src, size);
    free(src);
    return 0;
}

#ifndef AX_LIBFUZZER

/* ---- the standalone driver ---- */

static char *read_all(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    for (size_t got; buf && (got = fread(buf + n, 1, cap - n, f)) > 0;) {
        n += got;
        if (n == cap) {
            char *bigger = realloc(buf, cap *= 2);
            if (!bigger) free(buf);
            buf = bigger;
        }
    }
    fclose(f);
    *len = n;
    return buf;
}

static void save_input(const char *path, const char *data, size_t len) {
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) return;
    if (write(fd, data, len) != (ssize_t)len) perror(path);
    close(fd);
}

static uint64_t next(uint64_t *s) {
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 2685821657736338717ull;
}

static const char pieces[] = "()[]{}:,;.=+-*/%@&|^~<>!#\\'\"\n\t _0123456789eExjbo";

/* Words that make a mutant more likely to reach the evaluator's corners. */
static const char *const words[] = {"def f(x):\n    ",
                                    "lambda x: ",
                                    "for i in range(3):\n    ",
                                    "while ",
                                    " if ",
                                    " else ",
                                    "return ",
                                    "grad(",
                                    "vmap(",
                                    "jit(",
                                    "jacfwd(",
                                    "jacrev(",
                                    "value_and_grad(",
                                    "stop_gradient(",
                                    "custom_vjp",
                                    "defvjp(",
                                    "scan(",
                                    "fori_loop(",
                                    "while_loop(",
                                    "cond(",
                                    "reshape(",
                                    "transpose(",
                                    "sum(",
                                    "mean(",
                                    "max(",
                                    "argmax(",
                                    "sort(",
                                    "take(",
                                    "einsum(",
                                    "dot(",
                                    "matmul(",
                                    "concatenate(",
                                    "stack(",
                                    "where(",
                                    "zeros(",
                                    "ones(",
                                    "arange(",
                                    "linspace(",
                                    "eye(",
                                    ".at[",
                                    "].set(",
                                    "].add(",
                                    ".shape",
                                    ".T",
                                    "random.PRNGKey(0)",
                                    "random.split(",
                                    "random.normal(",
                                    "print(",
                                    "len(",
                                    "tree_map(",
                                    "(1, 2)",
                                    "[1.0, 2.0]",
                                    "{\"a\": 1}",
                                    "axis=",
                                    "keepdims=True",
                                    "dtype=",
                                    "float64",
                                    "int32",
                                    "bool",
                                    "None",
                                    "True",
                                    "...",
                                    "1e308",
                                    "-0.0",
                                    "2**63",
                                    "nan",
                                    "inf",
                                    "[::-1]",
                                    "[None]",
                                    "*args",
                                    "**kw",
                                    "import ",
                                    "from random import ",
                                    "assert ",
                                    "break",
                                    "continue",
                                    "pass",
                                    "    ",
                                    "\n"};

/* A few random edits of `src` into `out` (capacity cap); `other` is another corpus entry for
 * crossover. */
static size_t mutate(uint64_t *rng, const char *src, size_t len, const char *other, size_t olen,
                     char *out, size_t cap) {
    size_t n = len < cap ? len : cap;
    memcpy(out, src, n);
    for (int edits = 1 + (int)(next(rng) % 6); edits > 0; edits--) {
        uint64_t r = next(rng);
        size_t at = n ? (r >> 8) % n : 0, span = 1 + (r >> 20) % 16;
        if (at + span > n) span = n - at;
        switch (r % 6) {
        case 0: /* delete */
            memmove(out + at, out + at + span, n - at - span), n -= span;
            break;
        case 1: /* insert a character */
            if (n < cap) {
                memmove(out + at + 1, out + at, n - at);
                out[at] = (r >> 40) % 4 ? pieces[(r >> 32) % (sizeof pieces - 1)] : (char)(r >> 48);
                n++;
            }
            break;
        case 2: /* duplicate a span */
            if (n + span <= cap) memmove(out + at + span, out + at, n - at), n += span;
            break;
        case 3: { /* insert a word */
            const char *w = words[(r >> 32) % (sizeof words / sizeof *words)];
            size_t wl = strlen(w);
            if (n + wl <= cap) {
                memmove(out + at + wl, out + at, n - at);
                memcpy(out + at, w, wl);
                n += wl;
            }
            break;
        }
        case 4: { /* splice in a piece of another input */
            size_t from = olen ? (r >> 32) % olen : 0, take = 1 + (r >> 44) % 64;
            if (from + take > olen) take = olen - from;
            if (n + take <= cap) {
                memmove(out + at + take, out + at, n - at);
                memcpy(out + at, other + from, take);
                n += take;
            }
            break;
        }
        default: /* overwrite a character */
            if (n) out[at] = pieces[(r >> 32) % (sizeof pieces - 1)];
            break;
        }
    }
    return n;
}

int main(int argc, char **argv) {
    long iterations = 0;
    uint64_t rng = 1;
    const char *last = NULL;
    int first = 1;
    if (argc > first + 1 && !strcmp(argv[first], "--last")) {
        last = argv[first + 1];
        first += 2;
    }
    if (argc > first + 2 && !strcmp(argv[first], "--random")) {
        iterations = atol(argv[first + 1]);
        rng = strtoull(argv[first + 2], NULL, 0) | 1;
        first += 3;
    }
    LLVMFuzzerInitialize(&argc, &argv);
    int ncorpus = argc - first;
    char **corpus = calloc((size_t)ncorpus + 1, sizeof *corpus);
    size_t *lens = calloc((size_t)ncorpus + 1, sizeof *lens);
    if (!corpus || !lens) return 1;
    for (int i = 0; i < ncorpus; i++) {
        corpus[i] = read_all(argv[first + i], &lens[i]);
        if (!corpus[i]) {
            fprintf(stderr, "fuzz_ax: cannot read %s\n", argv[first + i]);
            return 1;
        }
        if (last) save_input(last, corpus[i], lens[i]);
        LLVMFuzzerTestOneInput((const uint8_t *)corpus[i], lens[i]);
    }
    static char buf[1 << 16];
    for (long it = 0; it < iterations && ncorpus > 0; it++) {
        int k = (int)(next(&rng) % (uint64_t)ncorpus), o = (int)(next(&rng) % (uint64_t)ncorpus);
        size_t n = mutate(&rng, corpus[k], lens[k], corpus[o], lens[o], buf, sizeof buf);
        if (last) save_input(last, buf, n);
        LLVMFuzzerTestOneInput((const uint8_t *)buf, n);
    }
    for (int i = 0; i < ncorpus; i++) free(corpus[i]);
    free(corpus);
    free(lens);
    fprintf(stderr, "fuzz_ax: %d files, %ld mutations, no crash\n", ncorpus, iterations);
    return 0;
}

#endif

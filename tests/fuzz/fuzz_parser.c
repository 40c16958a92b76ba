/* Fuzz target for the lexer and parser: any input must give a tree or a syntax error, never a
 * crash, a hang or a leak.
 *
 * With libFuzzer (clang -fsanitize=fuzzer,address -DAX_LIBFUZZER) it is an ordinary target.
 * Built without it, it is a small mutation fuzzer of its own:
 *   fuzz_parser FILE...                     parse each file once
 *   fuzz_parser --random N SEED FILE...     N random mutations of the files (a corpus)
 * Build: gcc -std=c11 -D_GNU_SOURCE -O1 -g -fsanitize=address,undefined
 *        tests/fuzz/fuzz_parser.c lang/lexer.c lang/parser.c lang/ast.c runtime/error.c
 *        runtime/format.c runtime/array.c runtime/dtype.c runtime/strided.c -lm */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../lang/ast.h"
#include "../../runtime/context.h"
#include "../../runtime/format.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *src = malloc(size + 1);
    if (!src) return 0;
    memcpy(src, data, size);
    src[size] = 0;
    ax_ctx *cx = calloc(1, sizeof *cx);
    ax_program *p = cx ? ax_parse_n(cx, src, size, "fuzz.ax") : NULL;
    if (p) {
        ax_strbuf sb;
        ax_strbuf_init(&sb);
        for (int i = 0; i < p->stmts.n; i++) ax_ast_dump(&sb, p->stmts.items[i]);
        ax_strbuf_free(&sb);
        ax_program_free(p);
    } else if (cx && cx->err.kind == AX_ERR_NONE) {
        abort(); /* a failed parse must say why */
    }
    (void)ax_parse_is_incomplete(src);
    if (cx) ax_error_clear(cx);
    free(cx);
    free(src);
    return 0;
}

#ifndef AX_LIBFUZZER

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

static uint64_t next(uint64_t *s) {
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 2685821657736338717ull;
}

static const char pieces[] = "()[]{}:,;.=+-*/%@&|^~<>!#\\'\"\n\t _0123456789eExjbo";

/* A few random edits of `src` into `out` (capacity cap). */
static size_t mutate(uint64_t *rng, const char *src, size_t len, char *out, size_t cap) {
    size_t n = len < cap ? len : cap;
    memcpy(out, src, n);
    for (int edits = 1 + (int)(next(rng) % 6); edits > 0; edits--) {
        uint64_t r = next(rng);
        size_t at = n ? (r >> 8) % n : 0, span = 1 + (r >> 20) % 16;
        if (at + span > n) span = n - at;
        switch (r % 4) {
        case 0:
            memmove(out + at, out + at + span, n - at - span), n -= span;
            break;
        case 1:
            if (n < cap) {
                memmove(out + at + 1, out + at, n - at);
                out[at] = (r >> 40) % 4 ? pieces[(r >> 32) % (sizeof pieces - 1)] : (char)(r >> 48);
                n++;
            }
            break;
        case 2:
            if (n + span <= cap) memmove(out + at + span, out + at, n - at), n += span;
            break;
        default:
            if (n) out[at] = pieces[(r >> 32) % (sizeof pieces - 1)];
            break;
        }
    }
    return n;
}

int main(int argc, char **argv) {
    long iterations = 0;
    uint64_t rng = 1;
    int first = 1;
    if (argc > 3 && !strcmp(argv[1], "--random")) {
        iterations = atol(argv[2]);
        rng = strtoull(argv[3], NULL, 0) | 1;
        first = 4;
    }
    int ncorpus = argc - first;
    char **corpus = calloc((size_t)ncorpus + 1, sizeof *corpus);
    size_t *lens = calloc((size_t)ncorpus + 1, sizeof *lens);
    for (int i = 0; i < ncorpus; i++) {
        corpus[i] = read_all(argv[first + i], &lens[i]);
        if (!corpus[i]) corpus[i] = calloc(1, 1), lens[i] = 0;
        LLVMFuzzerTestOneInput((const uint8_t *)corpus[i], lens[i]);
    }
    char buf[1 << 16];
    for (long it = 0; it < iterations && ncorpus > 0; it++) {
        int k = (int)(next(&rng) % (uint64_t)ncorpus);
        size_t n = mutate(&rng, corpus[k], lens[k], buf, sizeof buf);
        LLVMFuzzerTestOneInput((const uint8_t *)buf, n);
    }
    for (int i = 0; i < ncorpus; i++) free(corpus[i]);
    free(corpus);
    free(lens);
    printf("fuzz_parser: %d files, %ld mutations, no crash\n", ncorpus, iterations);
    return 0;
}

#endif

/* The notebook runner (see notebook.h).
 *
 * Every ```ax block runs in one interpreter, as the entries of one REPL session do, in the
 * notebook's directory. While a block runs, file descriptors 1 and 2 point at one temporary
 * file, so prints, warnings and the output of child processes are kept in the order they were
 * written; pictures (plots, graphs) go to the interpreter's display with their position in
 * that text. Blocks are named "<block N>" in errors, with lines counted from the block's
 * first line. */
#include "notebook.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../runtime/context.h"
#include "../runtime/format.h"
#include "../stdlib/libs.h"
#include "../stdlib/plot.h"
#include "../lang/ast.h"
#include "../lang/interp.h"
#include "repl.h"

enum { EXIT_DIFFERS = 1, EXIT_USAGE = 2 };

static const char usage_text[] =
    "usage: ax notebook [options] FILE.md\n"
    "\n"
    "Runs the ```ax blocks of FILE.md in order, in one session, in FILE.md's directory, and\n"
    "writes FILE.html: the page with each block's output, value, pictures and errors.\n"
    "\n"
    "options:\n"
    "  -o PATH       write the page to PATH (with --update or --check: also write it)\n"
    "  --update      record the outputs in FILE.md (```output blocks after the code)\n"
    "  --check       compare the outputs with those recorded; exit 1 with a diff if any differ\n"
    "  --strict      exit 1 when a block fails (blocks marked ```ax error may fail)\n"
    "  --x64         default float f64 and int i64\n"
    "  -h, --help    print this help and exit\n"
    "\n"
    "Block options after ```ax: norun (shown, not run), nocheck (--check ignores its output),\n"
    "error (the block is meant to fail). In a recorded output, '...' matches any text on its\n"
    "line, and a line '...' any number of lines; numbers match within 1e-5 (relative).\n";

typedef struct nb_options {
    const char *file, *out;
    bool update, check, strict, x64;
} nb_options;

/* ---------------------------------------------------------------- reading the Markdown */

/* A fence: up to any indentation, then 3+ backticks or tildes. */
static bool fence_open(const char *line, size_t n, int *indent, char *ch, int *len) {
    size_t i = 0;
    while (i < n && line[i] == ' ') i++;
    if (i >= n || (line[i] != '`' && line[i] != '~')) return false;
    size_t k = i;
    while (k < n && line[k] == line[i]) k++;
    if (k - i < 3) return false;
    if (line[i] == '`' && memchr(line + k, '`', n - k)) return false;
    *indent = (int)i, *ch = line[i], *len = (int)(k - i);
    return true;
}

static bool fence_close(const char *line, size_t n, char ch, int len) {
    size_t i = 0;
    while (i < n && line[i] == ' ') i++;
    size_t k = i;
    while (k < n && line[k] == ch) k++;
    if ((int)(k - i) < len) return false;
    while (k < n && isspace((unsigned char)line[k])) k++;
    return k == n;
}

/* The info string's first word and the ax options after it. */
static void read_info(nb_block *b, const char *info, size_t n) {
    char buf[256];
    snprintf(buf, sizeof buf, "%.*s", (int)(n < sizeof buf ? n : sizeof buf - 1), info);
    char *save = NULL, *word = strtok_r(buf, " \t\r{}", &save);
    snprintf(b->lang, sizeof b->lang, "%s", word ? word : "");
    while ((word = strtok_r(NULL, " \t\r{},", &save))) {
        if (!strcmp(word, "norun")) b->norun = true;
        if (!strcmp(word, "nocheck")) b->nocheck = true;
        if (!strcmp(word, "error")) b->expect_error = true;
    }
}

/* Appends line [p, p + n) to the block's code, without the fence's indentation. */
static void add_code_line(ax_strbuf *code, const char *p, size_t n, int indent) {
    int skip = 0;
    while (skip < indent && (size_t)skip < n && p[skip] == ' ') skip++;
    ax_strbuf_appendf(code, "%.*s\n", (int)(n - (size_t)skip), p + skip);
}

static int add_block(nb_document *doc, const nb_block *b) {
    nb_block *blocks = realloc(doc->blocks, (size_t)(doc->nblocks + 1) * sizeof *blocks);
    if (!blocks) return -1;
    doc->blocks = blocks;
    doc->blocks[doc->nblocks++] = *b;
    return 0;
}

static bool is_blank_range(const char *p, const char *end) {
    for (; p < end; p++)
        if (!isspace((unsigned char)*p)) return false;
    return true;
}

/* Finds the fenced blocks; an ```output block right after an ax block (blank lines between)
 * is its recorded output. */
static int scan_blocks(nb_document *doc) {
    const char *text = doc->text, *end = text + doc->len;
    nb_block cur;
    bool open = false;
    ax_strbuf code;
    ax_strbuf_init(&code);
    int line = 0;
    for (const char *p = text; p < end;) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        size_t n = eol ? (size_t)(eol - p) : (size_t)(end - p);
        const char *next = eol ? eol + 1 : end;
        line++;
        if (!open) {
            if (fence_open(p, n, &cur.indent, &cur.fence_char, &cur.fence_len)) {
                memset(&cur.lang, 0, sizeof cur.lang);
                cur.norun = cur.nocheck = cur.expect_error = false;
                cur.line = line, cur.start = (size_t)(p - text), cur.output = -1;
                const char *info = p + cur.indent + cur.fence_len;
                read_info(&cur, info, n - (size_t)(info - p));
                open = true;
                code.len = 0;
                if (code.data) code.data[0] = 0;
                ax_strbuf_append(&code, "");
            }
        } else if (fence_close(p, n, cur.fence_char, cur.fence_len)) {
            cur.end_line = line, cur.end = (size_t)(next - text);
            cur.code = strdup(code.data ? code.data : "");
            if (!cur.code || add_block(doc, &cur) < 0) goto oom;
            open = false;
        } else {
            add_code_line(&code, p, n, cur.indent);
        }
        p = next;
    }
    if (open) { /* an unclosed fence runs to the end of the document */
        cur.end_line = line, cur.end = doc->len;
        cur.code = strdup(code.data ? code.data : "");
        if (!cur.code || add_block(doc, &cur) < 0) goto oom;
    }
    ax_strbuf_free(&code);
    for (int i = 1; i < doc->nblocks; i++) {
        nb_block *prev = &doc->blocks[i - 1], *b = &doc->blocks[i];
        if (!strcmp(b->lang, "output") && !strcmp(prev->lang, "ax") &&
            is_blank_range(text + prev->end, text + b->start))
            prev->output = i;
    }
    return 0;
oom:
    ax_strbuf_free(&code);
    return -1;
}

/* An ```output block that follows no ax block is left over from an edit: nothing checks it. */
static void warn_orphan_outputs(const nb_document *doc) {
    for (int i = 0; i < doc->nblocks; i++) {
        if (strcmp(doc->blocks[i].lang, "output")) continue;
        bool owned = false;
        for (int k = 0; k < doc->nblocks && !owned; k++) owned = doc->blocks[k].output == i;
        if (!owned)
            fprintf(stderr,
                    "%s:%d: warning: this ```output block does not follow an ```ax block (only "
                    "blank lines may come between): nothing checks or updates it\n",
                    doc->path, doc->blocks[i].line);
    }
}

static void free_document(nb_document *doc) {
    for (int i = 0; i < doc->nblocks; i++) {
        free(doc->blocks[i].code);
        if (!doc->results) continue;
        nb_result *r = &doc->results[i];
        free(r->text);
        free(r->error);
        for (int k = 0; k < r->npics; k++) {
            free(r->pics[k].format), free(r->pics[k].data), free(r->pics[k].alt);
        }
        free(r->pics);
    }
    free(doc->blocks);
    free(doc->results);
    free(doc->text);
}

/* ---------------------------------------------------------------- running blocks */

typedef struct runner {
    ax_interp *in;
    ax_display *display;
    FILE *capture; /* where fds 1 and 2 point while a block runs */
    int saved_out, saved_err;
} runner;

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int capture_begin(runner *r) {
    fflush(stdout);
    fflush(stderr);
    int fd = fileno(r->capture);
    if (ftruncate(fd, 0) != 0 || lseek(fd, 0, SEEK_SET) != 0) return -1;
    if (dup2(fd, STDOUT_FILENO) < 0 || dup2(fd, STDERR_FILENO) < 0) return -1;
    return 0;
}

/* Restores stdout and stderr; the captured text (malloc'd). */
static char *capture_end(runner *r) {
    fflush(stdout);
    fflush(stderr);
    dup2(r->saved_out, STDOUT_FILENO);
    dup2(r->saved_err, STDERR_FILENO);
    int fd = fileno(r->capture);
    off_t size = lseek(fd, 0, SEEK_END);
    char *text = malloc(size > 0 ? (size_t)size + 1 : 1);
    if (!text) return NULL;
    ssize_t got = size > 0 ? pread(fd, text, (size_t)size, 0) : 0;
    text[got > 0 ? got : 0] = 0;
    return text;
}

/* The offset at which line `line` (1-based) starts. */
static size_t line_offset(const char *code, int line) {
    const char *p = code;
    for (int l = 1; l < line && *p; l++) {
        const char *eol = strchr(p, '\n');
        if (!eol) return strlen(code);
        p = eol + 1;
    }
    return (size_t)(p - code);
}

/* Runs a block; the value of its last statement, when that is an expression, is echoed as
 * the REPL shows it. The last statement runs as a program of its own, preceded by as many
 * newlines as the lines before it, so that errors keep the block's line numbers. */
static int run_code(ax_interp *in, const char *code, const char *file) {
    ax_program *p = ax_parse(in->cx, code, file);
    if (!p) return -1;
    const ax_node *last = p->stmts.n ? p->stmts.items[p->stmts.n - 1] : NULL;
    int line = 0;
    if (last && last->kind == AX_N_EXPR) {
        size_t at = line_offset(code, last->span.line);
        size_t lead = strspn(code + at, " \t");
        if ((int)lead + 1 == last->span.col) line = last->span.line; /* it starts its line */
    }
    ax_program_free(p);
    if (!line) return ax_interp_run(in, code, file, NULL);
    size_t cut = line_offset(code, line);
    char *head = strndup(code, cut);
    char *tail = malloc((size_t)line + strlen(code + cut));
    int rc = -1;
    if (head && tail) {
        memset(tail, '\n', (size_t)line - 1);
        strcpy(tail + line - 1, code + cut);
        rc = ax_interp_run(in, head, file, NULL);
        if (rc == 0) rc = ax_interp_run(in, tail, file, stdout);
    } else {
        ax_error_oom(in->cx);
    }
    free(head);
    free(tail);
    return rc;
}

static char *error_text(ax_interp *in) {
    if (!ax_error_pending(in->cx)) ax_error(in->cx, AX_ERR_RUNTIME, "the block failed");
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    if (m) {
        ax_error_print(in->cx, m);
        fclose(m);
    }
    ax_error_clear(in->cx);
    return buf;
}

static int run_block(runner *run, const nb_block *b, int number, nb_result *r) {
    char file[32];
    snprintf(file, sizeof file, "<block %d>", number);
    ax_interp *in = run->in;
    in->cx->interrupt = 0;
    if (capture_begin(run) < 0) {
        fprintf(stderr, "ax notebook: cannot capture the output: %s\n", strerror(errno));
        return -1;
    }
    double t0 = now_seconds();
    int rc = run_code(in, b->code, file);
    if (rc != 0) r->error = error_text(in);
    if (ax_plot_flush(in) < 0) { /* the figures drawn appear even after a failure */
        char *err = error_text(in);
        if (r->error)
            free(err);
        else
            r->error = err;
    }
    r->seconds = now_seconds() - t0;
    r->text = capture_end(run);
    r->ran = true;
    r->pics = run->display->items;
    r->npics = run->display->n;
    run->display->items = NULL;
    run->display->n = run->display->cap = 0;
    return r->text ? 0 : -1;
}

/* The first line of an error, for the one-line report on stderr. */
static void report_failure(const nb_document *doc, const nb_block *b, int number,
                           const nb_result *r) {
    const char *e = r->error ? r->error : "";
    size_t n = strcspn(e, "\n");
    fprintf(stderr, "%s:%d: block %d failed: %.*s\n", doc->path, b->line, number, (int)n, e);
}

static int run_all(nb_document *doc, const nb_options *o, const char *exe, int *failures) {
    doc->results = calloc((size_t)(doc->nblocks ? doc->nblocks : 1), sizeof *doc->results);
    if (!doc->results) return -1;
    /* Line by line, so that prints and warnings (stderr, unbuffered) keep their order in the
     * captured text. Nothing has been written to stdout yet. */
    setvbuf(stdout, NULL, _IOLBF, BUFSIZ);
    ax_ctx *cx = ax_ctx_new();
    if (!cx) return -1;
    cx->x64 = o->x64;
    runner run = {.saved_out = dup(STDOUT_FILENO), .saved_err = dup(STDERR_FILENO)};
    run.capture = tmpfile();
    run.in = run.capture ? ax_interp_new(cx, exe) : NULL;
    if (run.in && ax_libs_open(run.in) < 0) {
        ax_interp_free(run.in);
        run.in = NULL;
    }
    run.display = run.in ? ax_display_install(run.in) : NULL;
    int rc = 0;
    if (!run.display || run.saved_out < 0 || run.saved_err < 0) {
        if (ax_error_pending(cx)) ax_error_print(cx, stderr);
        fprintf(stderr, "ax notebook: the session did not start\n");
        rc = -1;
    }
    for (int i = 0, number = 0; rc == 0 && i < doc->nblocks; i++) {
        const nb_block *b = &doc->blocks[i];
        if (strcmp(b->lang, "ax") || b->norun) continue;
        rc = run_block(&run, b, ++number, &doc->results[i]);
        if (rc == 0 && doc->results[i].error && !b->expect_error) {
            (*failures)++;
            report_failure(doc, b, number, &doc->results[i]);
        }
    }
    ax_interp_free(run.in);
    ax_ctx_free(cx);
    if (run.capture) fclose(run.capture);
    if (run.saved_out >= 0) close(run.saved_out);
    if (run.saved_err >= 0) close(run.saved_err);
    return rc;
}

/* ---------------------------------------------------------------- transcripts */

void ax_notebook_each_part(const nb_result *r, nb_part_fn fn, void *arg) {
    const char *text = r->text ? r->text : "";
    size_t len = strlen(text), done = 0;
    for (int k = 0; k <= r->npics; k++) {
        size_t at = k < r->npics && r->pics[k].at >= 0 ? (size_t)r->pics[k].at : len;
        if (at > len) at = len;
        if (at > done) fn(arg, text + done, at - done, NULL), done = at;
        if (k < r->npics) fn(arg, NULL, 0, &r->pics[k]);
    }
}

static void transcript_part(void *arg, const char *text, size_t len, const ax_picture *pic) {
    ax_strbuf *s = arg;
    if (text) {
        ax_strbuf_appendf(s, "%.*s", (int)len, text);
        return;
    }
    if (s->len && s->data[s->len - 1] != '\n') ax_strbuf_append(s, "\n");
    ax_strbuf_appendf(s, "[picture: %s]\n", pic->alt);
}

char *ax_notebook_transcript(const nb_result *r) {
    ax_strbuf s;
    ax_strbuf_init(&s);
    ax_strbuf_append(&s, "");
    ax_notebook_each_part(r, transcript_part, &s);
    if (r->error) {
        if (s.len && s.data[s.len - 1] != '\n') ax_strbuf_append(&s, "\n");
        ax_strbuf_append(&s, r->error);
    }
    /* no trailing blank lines; one final newline */
    while (s.len && isspace((unsigned char)s.data[s.len - 1])) s.data[--s.len] = 0;
    if (s.len) ax_strbuf_append(&s, "\n");
    return s.data;
}

/* ---------------------------------------------------------------- comparing outputs */

/* Lines of a text (pointers into a copy). */
typedef struct lines {
    char *buf;
    char **v;
    int n;
} lines;

static int split_lines(const char *text, lines *out) {
    out->buf = strdup(text ? text : "");
    out->n = 0;
    int cap = 1;
    for (const char *p = out->buf; p && *p; p++) cap += *p == '\n';
    out->v = malloc((size_t)cap * sizeof *out->v);
    if (!out->buf || !out->v) return -1;
    for (char *p = out->buf; *p;) {
        char *eol = strchr(p, '\n');
        out->v[out->n++] = p;
        if (!eol) break;
        *eol = 0;
        p = eol + 1;
    }
    while (out->n && !out->v[out->n - 1][strspn(out->v[out->n - 1], " \t\r")]) out->n--;
    return 0;
}

static void free_lines(lines *l) {
    free(l->buf);
    free(l->v);
}

/* Tokens: numbers, the wildcard "...", or single non-space characters. */
static const char *next_token(const char *p, const char **end, bool *num, double *value) {
    while (isspace((unsigned char)*p)) p++;
    if (!*p) return NULL;
    *num = false;
    if (!strncmp(p, "...", 3)) {
        *end = p + 3;
        return p;
    }
    bool numeric_start =
        isdigit((unsigned char)*p) ||
        ((*p == '-' || *p == '+' || *p == '.') &&
         (isdigit((unsigned char)p[1]) || (p[1] == '.' && isdigit((unsigned char)p[2]))));
    if (numeric_start || !strncmp(p, "nan", 3) || !strncmp(p, "inf", 3) || !strncmp(p, "-inf", 4)) {
        char *e;
        *value = strtod(p, &e);
        if (e > p && !(e[-1] == '.' && e - p == 1)) {
            *num = true;
            *end = e;
            return p;
        }
    }
    *end = p + 1;
    return p;
}

static bool same_number(double a, double b) {
    if (isnan(a) || isnan(b)) return isnan(a) && isnan(b);
    if (isinf(a) || isinf(b)) return a == b;
    return fabs(a - b) <= 1e-6 + 1e-5 * fabs(b);
}

/* Whether got matches want from these positions on ("..." in want matches any tokens). */
static bool tokens_match(const char *w, const char *g) {
    const char *we, *ge;
    bool wn, gn;
    double wv, gv;
    const char *wt = next_token(w, &we, &wn, &wv);
    if (!wt) return next_token(g, &ge, &gn, &gv) == NULL;
    if (!strncmp(wt, "...", 3) && !wn) {
        for (const char *p = g;; p++) { /* try every split point */
            if (tokens_match(we, p)) return true;
            if (!*p) return false;
        }
    }
    const char *gt = next_token(g, &ge, &gn, &gv);
    if (!gt) return false;
    if (wn && gn) return same_number(wv, gv) && tokens_match(we, ge);
    if (wn != gn || we - wt != ge - gt || memcmp(wt, gt, (size_t)(we - wt))) return false;
    return tokens_match(we, ge);
}

static bool is_ellipsis_line(const char *s) {
    while (isspace((unsigned char)*s)) s++;
    if (strncmp(s, "...", 3)) return false;
    s += 3;
    while (isspace((unsigned char)*s)) s++;
    return !*s;
}

/* Line-level match with "..." lines matching any number of lines (memoised). */
static bool lines_match_from(const lines *w, int i, const lines *g, int j, signed char *memo) {
    signed char *m = &memo[(size_t)i * (size_t)(g->n + 1) + (size_t)j];
    if (*m >= 0) return *m;
    bool ok;
    if (i == w->n)
        ok = j == g->n;
    else if (is_ellipsis_line(w->v[i]))
        ok = lines_match_from(w, i + 1, g, j, memo) ||
             (j < g->n && lines_match_from(w, i, g, j + 1, memo));
    else
        ok = j < g->n && tokens_match(w->v[i], g->v[j]) &&
             lines_match_from(w, i + 1, g, j + 1, memo);
    *m = ok;
    return ok;
}

static bool outputs_match(const char *want, const char *got) {
    lines w, g;
    bool ok = false;
    if (split_lines(want, &w) == 0 && split_lines(got, &g) == 0) {
        size_t cells = (size_t)(w.n + 1) * (size_t)(g.n + 1);
        signed char *memo = malloc(cells);
        if (memo) {
            memset(memo, -1, cells);
            ok = lines_match_from(&w, 0, &g, 0, memo);
            free(memo);
        }
    }
    free_lines(&w);
    free_lines(&g);
    return ok;
}

/* A line diff (longest common subsequence under tokens_match) of want and got. */
static void print_diff(FILE *out, const char *want, const char *got) {
    lines w, g;
    if (split_lines(want, &w) < 0 || split_lines(got, &g) < 0) goto done;
    size_t cols = (size_t)g.n + 1;
    int *lcs = w.n * g.n <= 4000000 ? calloc(((size_t)w.n + 1) * cols, sizeof *lcs) : NULL;
    if (!lcs) {
        for (int i = 0; i < w.n; i++) fprintf(out, "  - %s\n", w.v[i]);
        for (int j = 0; j < g.n; j++) fprintf(out, "  + %s\n", g.v[j]);
        goto done;
    }
    for (int i = w.n - 1; i >= 0; i--)
        for (int j = g.n - 1; j >= 0; j--) {
            int *c = &lcs[(size_t)i * cols + (size_t)j];
            if (is_ellipsis_line(w.v[i]) || tokens_match(w.v[i], g.v[j]))
                *c = 1 + lcs[(size_t)(i + 1) * cols + (size_t)(j + 1)];
            else
                *c = lcs[(size_t)(i + 1) * cols + (size_t)j] > lcs[(size_t)i * cols + (size_t)j + 1]
                         ? lcs[(size_t)(i + 1) * cols + (size_t)j]
                         : lcs[(size_t)i * cols + (size_t)j + 1];
        }
    int i = 0, j = 0;
    while (i < w.n || j < g.n) {
        if (i < w.n && j < g.n && (is_ellipsis_line(w.v[i]) || tokens_match(w.v[i], g.v[j]))) {
            fprintf(out, "    %s\n", g.v[j]);
            i++, j++;
        } else if (i < w.n && (j == g.n || lcs[(size_t)(i + 1) * cols + (size_t)j] >=
                                               lcs[(size_t)i * cols + (size_t)j + 1])) {
            fprintf(out, "  - %s\n", w.v[i++]);
        } else {
            fprintf(out, "  + %s\n", g.v[j++]);
        }
    }
    free(lcs);
done:
    free_lines(&w);
    free_lines(&g);
}

/* --check: the blocks whose output differs from the recorded one. */
static int check_outputs(const nb_document *doc) {
    int differ = 0;
    for (int i = 0, number = 0; i < doc->nblocks; i++) {
        const nb_block *b = &doc->blocks[i];
        const nb_result *r = &doc->results[i];
        if (!r->ran) continue;
        number++;
        if (b->nocheck) continue;
        char *got = ax_notebook_transcript(r);
        const char *want = b->output >= 0 ? doc->blocks[b->output].code : "";
        if (!outputs_match(want, got ? got : "")) {
            differ++;
            fprintf(stderr, "%s:%d: block %d: the output differs from the one recorded%s\n",
                    doc->path, b->line, number, b->output < 0 ? " (none is)" : "");
            print_diff(stderr, want, got ? got : "");
        }
        free(got);
    }
    return differ;
}

/* ---------------------------------------------------------------- --update */

/* An ```output block holding `text`, indented and fenced like `b`. */
static void append_output_block(ax_strbuf *s, const nb_block *b, const char *text) {
    int longest = 0; /* a fence longer than any run of fence characters inside */
    for (const char *p = text; *p; p++) {
        int run = 0;
        while (p[run] == b->fence_char) run++;
        if (run > longest) longest = run;
        if (run) p += run - 1;
    }
    int len = longest >= 3 ? longest + 1 : 3;
    char fence[64];
    snprintf(fence, sizeof fence, "%*s%.*s", b->indent, "", len,
             b->fence_char == '`' ? "````````````````````````````````"
                                  : "~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~");
    ax_strbuf_appendf(s, "\n%soutput\n", fence);
    for (const char *p = text; *p;) {
        const char *eol = strchr(p, '\n');
        size_t n = eol ? (size_t)(eol - p) : strlen(p);
        ax_strbuf_appendf(s, "%*s%.*s\n", n ? b->indent : 0, "", (int)n, p);
        p = eol ? eol + 1 : p + n;
    }
    ax_strbuf_appendf(s, "%s\n", fence);
}

/* The document with each run block's output recorded: unchanged where the recorded output
 * still matches, replaced where it does not, removed where there is none. */
static char *updated_text(const nb_document *doc, int *changed) {
    ax_strbuf s;
    ax_strbuf_init(&s);
    ax_strbuf_append(&s, "");
    size_t copied = 0;
    *changed = 0;
    for (int i = 0; i < doc->nblocks; i++) {
        const nb_block *b = &doc->blocks[i];
        const nb_result *r = &doc->results[i];
        if (!r->ran) continue;
        char *got = ax_notebook_transcript(r);
        if (!got) continue;
        const nb_block *old = b->output >= 0 ? &doc->blocks[b->output] : NULL;
        /* a nocheck block's output (timings, paths) differs on every run: once recorded, it
         * stays until the recorded block is deleted */
        bool keep = old ? b->nocheck || outputs_match(old->code, got) : !*got;
        if (!keep) {
            (*changed)++;
            ax_strbuf_appendf(&s, "%.*s", (int)(b->end - copied), doc->text + copied);
            if (b->end > 0 && doc->text[b->end - 1] != '\n') ax_strbuf_append(&s, "\n");
            if (*got) append_output_block(&s, b, got);
            copied = old ? old->end : b->end;
        }
        free(got);
    }
    ax_strbuf_appendf(&s, "%s", doc->text + copied);
    return s.data;
}

static int write_text(const char *path, const char *text) {
    char tmp[PATH_MAX + 16];
    snprintf(tmp, sizeof tmp, "%s.tmp%d", path, (int)getpid());
    FILE *f = fopen(tmp, "wb");
    if (!f) return -1;
    struct stat st; /* the new file keeps the old one's permissions */
    if (stat(path, &st) == 0) fchmod(fileno(f), st.st_mode & 07777);
    bool ok = fputs(text, f) >= 0;
    ok = fclose(f) == 0 && ok;
    if (!ok || rename(tmp, path) != 0) {
        int saved = errno;
        unlink(tmp);
        errno = saved;
        return -1;
    }
    return 0;
}

/* ---------------------------------------------------------------- the command */

static int parse_args(int argc, char **argv, nb_options *o) {
    const char *x64 = getenv("AX_X64");
    o->x64 = x64 && *x64 && strcmp(x64, "0") != 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(usage_text, stdout);
            return 0;
        } else if (!strcmp(a, "-o")) {
            if (i + 1 >= argc) break;
            o->out = argv[++i];
        } else if (!strcmp(a, "--update")) {
            o->update = true;
        } else if (!strcmp(a, "--check")) {
            o->check = true;
        } else if (!strcmp(a, "--strict")) {
            o->strict = true;
        } else if (!strcmp(a, "--x64")) {
            o->x64 = true;
        } else if (a[0] == '-' && a[1]) {
            fprintf(stderr, "ax notebook: unknown option '%s' (try 'ax notebook --help')\n", a);
            return EXIT_USAGE;
        } else if (o->file) {
            fprintf(stderr, "ax notebook: one file at a time ('%s' and '%s')\n", o->file, a);
            return EXIT_USAGE;
        } else {
            o->file = a;
        }
    }
    if (!o->file) {
        fputs("ax notebook: no file given (usage: ax notebook [options] FILE.md; try "
              "'ax notebook --help')\n",
              stderr);
        return EXIT_USAGE;
    }
    if (o->update && o->check) {
        fputs("ax notebook: --update and --check do not go together\n", stderr);
        return EXIT_USAGE;
    }
    return -1;
}

/* An absolute form of `path` (relative to the current directory), malloc'd. */
static char *absolute(const char *path) {
    if (path[0] == '/') return strdup(path);
    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof cwd)) return NULL;
    size_t n = strlen(cwd) + strlen(path) + 2;
    char *abs = malloc(n);
    if (abs) snprintf(abs, n, "%s/%s", cwd, path);
    return abs;
}

/* FILE.md -> FILE.html (absolute). */
static char *default_page(const char *abs_md) {
    size_t n = strlen(abs_md);
    const char *slash = strrchr(abs_md, '/'), *dot = strrchr(abs_md, '.');
    size_t stem = dot && dot > slash ? (size_t)(dot - abs_md) : n;
    char *page = malloc(stem + 6);
    if (page) snprintf(page, stem + 6, "%.*s.html", (int)stem, abs_md);
    return page;
}

static int finish(nb_document *doc, const nb_options *o, const char *md_abs, const char *page,
                  int failures) {
    int status = 0;
    if (o->check || o->update) warn_orphan_outputs(doc);
    if (o->check) {
        int differ = check_outputs(doc);
        if (differ) {
            fprintf(stderr,
                    "%s: %d block%s differ%s from the recorded output (ax notebook "
                    "--update %s records the new one)\n",
                    doc->path, differ, differ == 1 ? "" : "s", differ == 1 ? "s" : "", doc->path);
            status = EXIT_DIFFERS;
        }
    }
    if (o->update) {
        int changed = 0;
        char *text = updated_text(doc, &changed);
        if (!text || (changed && write_text(md_abs, text) < 0)) {
            fprintf(stderr, "ax notebook: cannot write %s: %s\n", doc->path, strerror(errno));
            status = EXIT_DIFFERS;
        } else if (changed) {
            fprintf(stderr, "%s: recorded %d output%s\n", doc->path, changed,
                    changed == 1 ? "" : "s");
        }
        free(text);
    }
    if (page && ax_notebook_write_html(doc, page) < 0) status = EXIT_DIFFERS;
    if (o->strict && failures) {
        fprintf(stderr, "%s: %d block%s failed (--strict)\n", doc->path, failures,
                failures == 1 ? "" : "s");
        status = EXIT_DIFFERS;
    }
    return status;
}

int ax_notebook_main(int argc, char **argv, const char *exe) {
    nb_options o = {0};
    int status = parse_args(argc, argv, &o);
    if (status >= 0) return status;
    nb_document doc = {.path = o.file};
    char *md_abs = absolute(o.file), *page = NULL, *exe_abs = NULL;
    if (!md_abs || !(doc.text = ax_read_file(md_abs, NULL, &doc.len))) {
        fprintf(stderr, "ax notebook: cannot read '%s': %s\n", o.file, strerror(errno));
        free(md_abs);
        return EXIT_USAGE;
    }
    status = EXIT_DIFFERS;
    if (o.out || (!o.update && !o.check)) page = o.out ? absolute(o.out) : default_page(md_abs);
    /* the binary's own path before leaving the directory it was named from */
    exe_abs = exe && strchr(exe, '/') ? absolute(exe) : NULL;
    int failures = 0;
    char *dir = strdup(md_abs);
    char *slash = dir ? strrchr(dir, '/') : NULL;
    if (slash) *(slash == dir ? slash + 1 : slash) = 0;
    if (!dir || scan_blocks(&doc) < 0) {
        fputs("ax notebook: out of memory\n", stderr);
    } else if (chdir(dir) != 0) {
        fprintf(stderr, "ax notebook: cannot enter %s: %s\n", dir, strerror(errno));
    } else if (run_all(&doc, &o, exe_abs ? exe_abs : exe, &failures) == 0) {
        status = finish(&doc, &o, md_abs, page, failures);
    }
    free(dir);
    free(exe_abs);
    free(page);
    free(md_abs);
    free_document(&doc);
    return status;
}

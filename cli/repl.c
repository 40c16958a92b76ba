/* The interactive session (REPL).
 *
 * Reading uses readline's callback interface inside a pselect() loop rather than readline():
 * that is the one way to make Ctrl-C at the prompt discard the line cleanly (readline() would
 * keep reading after the signal). SIGINT stays blocked except inside pselect(), so a Ctrl-C
 * between the check of the flag and the wait cannot be lost. While an entry is evaluated the
 * terminal is back in its normal mode and Ctrl-C sets cx->interrupt, which the evaluator polls:
 * it stops with KeyboardInterrupt and the session goes on. */
#include "repl.h"

#include <errno.h>
#include <ctype.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <time.h>
#include <unistd.h>

#include <readline/history.h>
#include <readline/readline.h>

#include "../runtime/context.h"
#include "../runtime/format.h"
#include "../stdlib/help.h"

#define HISTORY_MAX 2000

/* ---------- the session ---------- */

typedef struct repl_session {
    ax_interp *in;
    const ax_repl_options *opt;
    char *history_path; /* NULL: no history */
    /* what the readline line handler received */
    bool got_line;
    char *line;
    /* completion candidates for the current attempt */
    char **cands;
    int ncands, capcands;
    int next_cand;
} repl_session;

/* A signal handler receives no user pointer, so the SIGINT handler reaches the interrupt flag of
 * the session's context through this static, set before the handler is installed and cleared
 * after it is removed. It is the only state the handler touches. */
static volatile sig_atomic_t *interrupt_flag;

/* Readline's line handler and completion callbacks take no user pointer either: they reach the
 * running session through this one, set for the duration of ax_repl_run. */
static repl_session *rl_session;

static void on_sigint(int sig) {
    (void)sig;
    if (interrupt_flag) *interrupt_flag = 1;
}

/* ---------- scanning entries: strings, comments, brackets, block headers ---------- */

typedef struct scan_state {
    int depth;   /* open ( [ { */
    char quote;  /* inside a string opened with this quote, or 0 */
    bool triple; /* ... a triple-quoted one (which may span lines) */
    bool block;  /* some line opened an indented block */
} scan_state;

/* Scans one line, updating the bracket/string state; notes a block header: a line that ends
 * with ':' outside brackets, strings and comments, or a decorator line. */
static void scan_line(scan_state *st, const char *p, const char *end) {
    const char *first = p;
    while (first < end && (*first == ' ' || *first == '\t')) first++;
    if (st->depth == 0 && !st->quote && first < end && *first == '@') st->block = true;
    char last = 0; /* last significant character outside strings and comments */
    for (; p < end; p++) {
        char c = *p;
        if (st->quote) {
            if (c == '\\' && p + 1 < end) {
                p++;
            } else if (c == st->quote) {
                if (!st->triple) {
                    st->quote = 0;
                } else if (p + 2 < end && p[1] == c && p[2] == c) {
                    st->quote = 0;
                    p += 2;
                }
            }
            last = 'x';
            continue;
        }
        if (c == '#') break;
        if (c == '"' || c == '\'') {
            st->quote = c;
            st->triple = p + 2 < end && p[1] == c && p[2] == c;
            if (st->triple) p += 2;
        } else if (c == '(' || c == '[' || c == '{') {
            st->depth++;
        } else if ((c == ')' || c == ']' || c == '}') && st->depth > 0) {
            st->depth--;
        }
        if (c != ' ' && c != '\t' && c != '\r') last = c;
    }
    if (st->quote && !st->triple) st->quote = 0; /* a one-line string ends with its line */
    if (st->depth == 0 && !st->quote && last == ':') st->block = true;
}

static scan_state scan_text(const char *text) {
    scan_state st = {0};
    while (*text) {
        const char *eol = strchr(text, '\n');
        if (!eol) eol = text + strlen(text);
        scan_line(&st, text, eol);
        text = *eol ? eol + 1 : eol;
    }
    return st;
}

bool ax_repl_line_opens_block(const char *line) {
    return scan_text(line).block;
}

static bool is_blank(const char *s) {
    while (*s == ' ' || *s == '\t' || *s == '\r' || *s == '\n') s++;
    return *s == 0;
}

bool ax_repl_needs_more(const char *entry, const char *line) {
    if (is_blank(line)) return false; /* an empty line ends a block */
    if (ax_parse_is_incomplete(entry)) return true;
    scan_state st = scan_text(entry);
    return st.block || st.depth > 0 || st.quote;
}

/* ---------- evaluation ---------- */

static void report_error(ax_interp *in) {
    fflush(stdout);
    if (!ax_error_pending(in->cx)) ax_error(in->cx, AX_ERR_RUNTIME, "evaluation failed");
    ax_error_print(in->cx, stderr);
    fflush(stderr);
    ax_error_clear(in->cx);
}

/* Forgets a Ctrl-C that the evaluator did not get to see: after an entry or a command, never
 * before one (a Ctrl-C pressed just after Enter is meant for what the line starts). */
static void clear_interrupt(ax_interp *in) {
    in->cx->interrupt = 0;
}

int ax_repl_eval(ax_interp *in, const char *source, FILE *out) {
    int rc = ax_interp_run(in, source, "<repl>", out);
    fflush(out);
    if (rc != 0) report_error(in);
    clear_interrupt(in);
    return rc != 0 ? -1 : 0;
}

/* ---------- describing values: :type, :vars, :help ---------- */

static void describe_for_listing(ax_strbuf *out, const ax_value *v) {
    if (v->kind == AX_V_FUNC) {
        ax_help_signature(out, v);
    } else {
        ax_help_describe_value(out, v, 0);
    }
}

/* ---------- dotted names (for :help and completion) ---------- */

static bool is_ident(const char *s, size_t n) {
    if (n == 0 || !(isalpha((unsigned char)s[0]) || s[0] == '_')) return false;
    for (size_t i = 1; i < n; i++)
        if (!(isalnum((unsigned char)s[i]) || s[i] == '_')) return false;
    return true;
}

/* The value of a plain dotted name ("random", "nn.Dense", "x.shape"): new reference, or NULL
 * (no error left pending) when it is not such a name or does not resolve. Nothing else is
 * evaluated, so completion never runs user code. */
static ax_value *resolve_dotted(ax_interp *in, const char *name, size_t len) {
    const char *dot = memchr(name, '.', len);
    size_t first = dot ? (size_t)(dot - name) : len;
    if (!is_ident(name, first)) return NULL;
    char part[256];
    if (first >= sizeof part) return NULL;
    memcpy(part, name, first);
    part[first] = 0;
    ax_value *v = ax_interp_lookup(in, part);
    if (!v) v = ax_interp_lookup_lazy(in, part); /* :help histogram opens stdlib/jnp_more.ax */
    if (!v) {
        ax_error_clear(in->cx);
        return NULL;
    }
    ax_value_retain(v);
    size_t pos = first;
    while (pos < len) {
        const char *start = name + pos + 1;
        const char *next = memchr(start, '.', len - pos - 1);
        size_t n = next ? (size_t)(next - start) : len - pos - 1;
        if (!is_ident(start, n) || n >= sizeof part) {
            ax_value_release(v);
            return NULL;
        }
        memcpy(part, start, n);
        part[n] = 0;
        ax_value *attr = ax_getattr(in, v, part);
        ax_value_release(v);
        if (!attr) {
            ax_error_clear(in->cx);
            return NULL;
        }
        v = attr;
        pos += n + 1;
    }
    return v;
}

/* ---------- commands ---------- */

/* A command's handler; `args` is the rest of the line, trimmed. */
typedef void (*command_fn)(ax_interp *in, const char *args, FILE *out);

typedef struct repl_command {
    const char *name;
    const char *args; /* shown by :help; a name without brackets is required */
    const char *help;
    command_fn run; /* NULL for :quit */
} repl_command;

static void cmd_help(ax_interp *in, const char *args, FILE *out);
static void cmd_type(ax_interp *in, const char *args, FILE *out);
static void cmd_time(ax_interp *in, const char *args, FILE *out);
static void cmd_vars(ax_interp *in, const char *args, FILE *out);
static void cmd_load(ax_interp *in, const char *args, FILE *out);
static void cmd_reset(ax_interp *in, const char *args, FILE *out);
static void cmd_ir(ax_interp *in, const char *args, FILE *out);
static void cmd_c(ax_interp *in, const char *args, FILE *out);
static void cmd_graph(ax_interp *in, const char *args, FILE *out);

static const repl_command commands[] = {
    {"help", "[name]", "this list, or the documentation of a name (:help sum, :help random)",
     cmd_help},
    {"type", "expr", "the type of an expression's value (f32[3], a tuple of types, function)",
     cmd_type},
    {"time", "[N] expr",
     "run an expression N times (default: as many as fit in ~1 s) and report the median, min "
     "and max time",
     cmd_time},
    {"vars", "", "the names you defined, with their types", cmd_vars},
    {"ir", "f(args)", "the typed IR jit traces the call to, and the loops it fuses", cmd_ir},
    {"c", "f(args)", "the C-like dump of the native code jit builds for the call", cmd_c},
    {"graph", "f(args)", "draw the call's computation graph (graphviz) and print the file's path",
     cmd_graph},
    {"load", "FILE", "run a file in this session (its definitions stay)", cmd_load},
    {"reset", "", "forget every name you defined", cmd_reset},
    {"quit", "", "leave (also Ctrl-D)", NULL},
};
#define NCOMMANDS ((int)(sizeof commands / sizeof commands[0]))

static void print_command_list(FILE *out) {
    fputs("Type an expression to see its value and type, or a statement to run it; a line\n"
          "ending in ':' opens a block, which an empty line closes. Ctrl-C stops a running\n"
          "evaluation; Tab completes names and module members (random.<Tab>).\n"
          "Commands:\n",
          out);
    for (int i = 0; i < NCOMMANDS; i++) {
        char head[64];
        snprintf(head, sizeof head, ":%s %s", commands[i].name, commands[i].args);
        fprintf(out, "  %-16s %s\n", head, commands[i].help);
    }
    fputs("Commands may be shortened to a unique prefix (:h, :t, :q). The language is\n"
          "described in docs/reference.md and `man ax`.\n",
          out);
}

static const repl_command *find_command(const char *name, size_t n) {
    const repl_command *found = NULL;
    for (int i = 0; i < NCOMMANDS; i++) {
        if (strncmp(commands[i].name, name, n) != 0) continue;
        if (strlen(commands[i].name) == n) return &commands[i];
        if (found) return NULL; /* ambiguous prefix */
        found = &commands[i];
    }
    if (!found && n == 4 && strncmp(name, "exit", 4) == 0) return &commands[NCOMMANDS - 1];
    return found;
}

static void cmd_help(ax_interp *in, const char *args, FILE *out) {
    if (!*args) {
        print_command_list(out);
        return;
    }
    if (args[0] == ':') {
        const repl_command *c = find_command(args + 1, strcspn(args + 1, " "));
        if (c) {
            fprintf(out, ":%s %s\n    %s\n", c->name, c->args, c->help);
            return;
        }
    }
    ax_value *v = resolve_dotted(in, args, strlen(args));
    if (!v) {
        fprintf(stderr, "no name '%s' (try :vars, or Tab to complete)\n", args);
        return;
    }
    ax_strbuf s;
    ax_strbuf_init(&s);
    ax_help_text(in, &s, args, v);
    fprintf(out, "%s\n", s.data ? s.data : "");
    ax_strbuf_free(&s);
    ax_value_release(v);
}

static void cmd_type(ax_interp *in, const char *args, FILE *out) {
    ax_value *v = ax_interp_eval_expr(in, args, "<repl>");
    if (!v) {
        report_error(in);
        return;
    }
    ax_strbuf s;
    ax_strbuf_init(&s);
    describe_for_listing(&s, v);
    fprintf(out, "%s\n", s.data ? s.data : "");
    ax_strbuf_free(&s);
    ax_value_release(v);
}

/* Splits "callee(args)" at its last top-level parenthesised group: the callee's text and
 * the arguments' text. False when the expression is not a call. */
bool ax_repl_split_call(const char *expr, char *callee, char *args, size_t cap) {
    size_t n = strlen(expr);
    while (n && isspace((unsigned char)expr[n - 1])) n--;
    if (!n || expr[n - 1] != ')') return false;
    int depth = 0;
    for (size_t i = n; i-- > 0;) {
        if (expr[i] == ')' || expr[i] == ']') depth++;
        if (expr[i] == '(' || expr[i] == '[') depth--;
        if (depth == 0) {
            if (expr[i] != '(' || i == 0 || i >= cap || n - i - 2 >= cap) return false;
            snprintf(callee, cap, "%.*s", (int)i, expr);
            snprintf(args, cap, "%.*s", (int)(n - i - 2), expr + i + 1);
            return true;
        }
    }
    return false;
}

/* :ir and :c: calls jit_ir / jit_c on the call's function and arguments. */
static void show_jit(ax_interp *in, const char *args, FILE *out, const char *fn) {
    size_t cap = strlen(args) + 1;
    char *callee = malloc(cap), *rest = malloc(cap), *expr = malloc(2 * cap + 32);
    if (!callee || !rest || !expr) {
        free(callee), free(rest), free(expr);
        return;
    }
    if (!ax_repl_split_call(args, callee, rest, cap)) {
        const char *cmd = strchr(fn, '_') + 1; /* jit_ir -> ir, show_graph -> graph */
        fprintf(stderr, ":%s needs a call, like :%s f(x)\n", cmd, cmd);
    } else {
        snprintf(expr, 2 * cap + 32, "%s(%s%s%s)", fn, callee, *rest ? ", " : "", rest);
        ax_value *v = ax_interp_eval_expr(in, expr, "<repl>");
        if (!v)
            report_error(in);
        else if (v->kind == AX_V_STR)
            fprintf(out, "%s\n", v->str);
        ax_value_release(v);
    }
    free(callee), free(rest), free(expr);
}

static void cmd_ir(ax_interp *in, const char *args, FILE *out) {
    show_jit(in, args, out, "jit_ir");
}

static void cmd_c(ax_interp *in, const char *args, FILE *out) {
    show_jit(in, args, out, "jit_c");
}

static void cmd_graph(ax_interp *in, const char *args, FILE *out) {
    show_jit(in, args, out, "show_graph");
}

const char *ax_repl_parse_time_args(const char *args, int *runs) {
    *runs = 0;
    const char *p = args;
    while (*p == ' ') p++;
    const char *digits = p;
    while (isdigit((unsigned char)*p)) p++;
    if (p > digits && *p == ' ') {
        long n = strtol(digits, NULL, 10);
        *runs = n > 1000000 ? 1000000 : (int)n;
        while (*p == ' ') p++;
        return p;
    }
    return digits;
}

void ax_repl_format_seconds(char *out, size_t cap, double s) {
    if (s >= 1.0)
        snprintf(out, cap, "%.3g s", s);
    else if (s >= 1e-3)
        snprintf(out, cap, "%.3g ms", s * 1e3);
    else if (s >= 1e-6)
        snprintf(out, cap, "%.3g us", s * 1e6);
    else
        snprintf(out, cap, "%.3g ns", s * 1e9);
}

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* One timed evaluation: its duration, or -1 after an error (reported). */
static double time_once(ax_interp *in, const char *expr) {
    double t0 = now_seconds();
    ax_value *v = ax_interp_eval_expr(in, expr, "<repl>");
    double dt = now_seconds() - t0;
    if (!v) {
        report_error(in);
        return -1;
    }
    ax_value_release(v);
    return dt;
}

static int compare_doubles(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void cmd_time(ax_interp *in, const char *args, FILE *out) {
    int runs;
    const char *expr = ax_repl_parse_time_args(args, &runs);
    if (!*expr) {
        fputs("usage: :time [N] expr\n", stderr);
        return;
    }
    /* A first run outside the measurement: it pays for jit compilation and caches. */
    double first = time_once(in, expr);
    if (first < 0) return;
    if (runs <= 0) {
        double fit = 1.0 / (first > 1e-7 ? first : 1e-7);
        runs = fit < 3 ? 3 : fit > 10000 ? 10000 : (int)fit;
    }
    double *t = malloc(sizeof *t * (size_t)runs);
    if (!t) {
        fputs("out of memory\n", stderr);
        return;
    }
    for (int i = 0; i < runs; i++) {
        t[i] = time_once(in, expr);
        if (t[i] < 0) {
            free(t);
            return;
        }
    }
    qsort(t, (size_t)runs, sizeof *t, compare_doubles);
    double median = runs % 2 ? t[runs / 2] : 0.5 * (t[runs / 2 - 1] + t[runs / 2]);
    char med[32], lo[32], hi[32];
    ax_repl_format_seconds(med, sizeof med, median);
    ax_repl_format_seconds(lo, sizeof lo, t[0]);
    ax_repl_format_seconds(hi, sizeof hi, t[runs - 1]);
    fprintf(out, "median %s (min %s, max %s; %d run%s)\n", med, lo, hi, runs, runs == 1 ? "" : "s");
    free(t);
    clear_interrupt(in);
}

typedef struct var_entry {
    const char *name;
    ax_value *v;
} var_entry;

typedef struct var_list {
    var_entry *items;
    int n, cap;
    bool oom;
} var_list;

static void collect_var(void *arg, const char *name, ax_value *v, bool is_builtin) {
    var_list *l = arg;
    if (is_builtin || l->oom) return;
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 32;
        var_entry *items = realloc(l->items, sizeof *items * (size_t)cap);
        if (!items) {
            l->oom = true;
            return;
        }
        l->items = items;
        l->cap = cap;
    }
    l->items[l->n++] = (var_entry){name, v};
}

static int compare_vars(const void *a, const void *b) {
    return strcmp(((const var_entry *)a)->name, ((const var_entry *)b)->name);
}

static void cmd_vars(ax_interp *in, const char *args, FILE *out) {
    (void)args;
    var_list l = {0};
    ax_interp_each_name(in, collect_var, &l);
    if (l.n > 1) qsort(l.items, (size_t)l.n, sizeof *l.items, compare_vars);
    ax_strbuf s;
    ax_strbuf_init(&s);
    for (int i = 0; i < l.n; i++) {
        s.len = 0;
        if (s.data) s.data[0] = 0;
        describe_for_listing(&s, l.items[i].v);
        if (l.items[i].v->kind == AX_V_FUNC)
            fprintf(out, "%s\n", s.data);
        else
            fprintf(out, "%s : %s\n", l.items[i].name, s.data ? s.data : "");
    }
    if (l.n == 0) fputs("(no names defined yet)\n", out);
    ax_strbuf_free(&s);
    free(l.items);
}

static void cmd_load(ax_interp *in, const char *args, FILE *out) {
    (void)out;
    char path[4096];
    snprintf(path, sizeof path, "%s", args);
    size_t n = strlen(path);
    if (n >= 2 && (path[0] == '"' || path[0] == '\'') && path[n - 1] == path[0]) {
        memmove(path, path + 1, n - 2);
        path[n - 2] = 0;
    }
    if (ax_interp_run_file(in, path, NULL) != 0) report_error(in);
    fflush(stdout);
}

static void cmd_reset(ax_interp *in, const char *args, FILE *out) {
    (void)args;
    (void)out;
    ax_interp_reset(in);
}

int ax_repl_command(ax_interp *in, const char *line, FILE *out) {
    while (*line == ' ' || *line == '\t') line++;
    if (*line == ':') line++;
    size_t n = strcspn(line, " \t\r\n");
    char args[4096];
    const char *a = line + n;
    while (*a == ' ' || *a == '\t') a++;
    snprintf(args, sizeof args, "%s", a);
    for (size_t len = strlen(args); len && isspace((unsigned char)args[len - 1]);) args[--len] = 0;

    const repl_command *c = find_command(line, n);
    if (!c || n == 0) {
        fprintf(stderr, "unknown command ':%.*s' (:help lists the commands)\n", (int)n, line);
        return 0;
    }
    if (!c->run) return 1; /* :quit */
    bool required = c->args[0] && c->args[0] != '[';
    if (required && !*args)
        fprintf(stderr, "usage: :%s %s\n", c->name, c->args);
    else
        c->run(in, args, out);
    fflush(out);
    clear_interrupt(in);
    return 0;
}

/* ---------- completion ---------- */

static const char *const keywords[] = {"def",  "lambda", "if",       "elif",   "else",  "for",
                                       "in",   "while",  "return",   "import", "from",  "as",
                                       "and",  "or",     "not",      "True",   "False", "None",
                                       "pass", "break",  "continue", "assert", NULL};

static void add_candidate(repl_session *s, const char *prefix, const char *name, bool call) {
    if (s->ncands == s->capcands) {
        int cap = s->capcands ? 2 * s->capcands : 64;
        char **c = realloc(s->cands, sizeof *c * (size_t)cap);
        if (!c) return;
        s->cands = c;
        s->capcands = cap;
    }
    size_t n = strlen(prefix) + strlen(name) + 2;
    char *text = malloc(n);
    if (!text) return;
    snprintf(text, n, "%s%s%s", prefix, name, call ? "(" : "");
    s->cands[s->ncands++] = text;
}

static void clear_candidates(repl_session *s) {
    for (int i = s->ncands; i-- > 0;) free(s->cands[i]);
    s->ncands = 0;
    s->next_cand = 0;
}

/* What the completion callbacks below are looking for. */
typedef struct completion_query {
    repl_session *s;
    const char *prefix; /* "random." or "" */
    const char *stem;   /* the partial word after it */
    bool add_paren;     /* append '(' to callables (not in :help arguments) */
} completion_query;

static bool is_callable(const ax_value *v) {
    return v && (v->kind == AX_V_FUNC || v->kind == AX_V_BUILTIN ||
                 (v->kind == AX_V_OBJECT && v->obj.type->call));
}

static void offer_name(void *arg, const char *name, ax_value *v, bool is_builtin) {
    (void)is_builtin;
    completion_query *q = arg;
    if (strncmp(name, q->stem, strlen(q->stem)) == 0)
        add_candidate(q->s, "", name, q->add_paren && is_callable(v));
}

/* A name of the library opened on first use (histogram): offered unless a name of its own
 * already was (the builtins hold it once a program has used it). */
static void offer_lazy_name(void *arg, const char *name) {
    completion_query *q = arg;
    if (strncmp(name, q->stem, strlen(q->stem)) || ax_interp_lookup(q->s->in, name)) return;
    add_candidate(q->s, "", name, q->add_paren);
}

/* A module's private members (_name) are offered only once an underscore is typed. */
static void offer_attr(void *arg, const char *name) {
    completion_query *q = arg;
    if (name[0] == '_' && q->stem[0] != '_') return;
    if (strncmp(name, q->stem, strlen(q->stem)) == 0) add_candidate(q->s, q->prefix, name, false);
}

static void complete_code(repl_session *s, const char *text, bool add_paren) {
    const char *dot = strrchr(text, '.');
    if (dot) {
        ax_value *obj = resolve_dotted(s->in, text, (size_t)(dot - text));
        if (!obj) return;
        char prefix[512];
        snprintf(prefix, sizeof prefix, "%.*s", (int)(dot - text + 1), text);
        completion_query q = {s, prefix, dot + 1, false};
        ax_value_each_attr(s->in, obj, offer_attr, &q);
        ax_value_release(obj);
        ax_error_clear(s->in->cx);
        return;
    }
    completion_query q = {s, "", text, add_paren};
    ax_interp_each_name(s->in, offer_name, &q);
    ax_interp_each_lazy_builtin(s->in, offer_lazy_name, &q);
    for (int i = 0; keywords[i]; i++)
        if (strncmp(keywords[i], text, strlen(text)) == 0) add_candidate(s, "", keywords[i], false);
}

static char *next_candidate(const char *text, int state) {
    (void)text;
    (void)state;
    repl_session *s = rl_session;
    return s->next_cand < s->ncands ? strdup(s->cands[s->next_cand++]) : NULL;
}

static char **attempt_completion(const char *text, int start, int end) {
    (void)end;
    repl_session *s = rl_session;
    clear_candidates(s);
    rl_attempted_completion_over = 1; /* no file names unless asked for below */
    rl_completion_append_character = '\0';
    const char *line = rl_line_buffer;
    size_t lead = strspn(line, " \t");
    if (line[lead] == ':') {
        size_t cmd_end = lead + 1 + strcspn(line + lead + 1, " \t");
        if ((size_t)start <= cmd_end) {
            for (int i = 0; i < NCOMMANDS; i++)
                if (!strncmp(commands[i].name, text, strlen(text)))
                    add_candidate(s, "", commands[i].name, false);
            rl_completion_append_character = ' ';
        } else {
            const repl_command *c = find_command(line + lead + 1, cmd_end - lead - 1);
            if (c && !strcmp(c->name, "load")) {
                rl_attempted_completion_over = 0;
                return NULL; /* readline completes file names */
            }
            complete_code(s, text, c && strcmp(c->name, "help") != 0);
        }
    } else {
        complete_code(s, text, true);
    }
    return rl_completion_matches(text, next_candidate);
}

/* ---------- history ---------- */

static char *history_path_for(const ax_repl_options *opt) {
    if (opt->history_file) return strdup(opt->history_file);
    const char *home = getenv("HOME");
    if (!home || !*home) return NULL;
    size_t n = strlen(home) + sizeof "/.ax_history";
    char *path = malloc(n);
    if (path) snprintf(path, n, "%s/.ax_history", home);
    return path;
}

static void history_open(repl_session *s) {
    using_history();
    if (!s->history_path) return;
    /* append_history() needs the file to exist */
    int fd = open(s->history_path, O_WRONLY | O_CREAT | O_APPEND, 0600);
    if (fd < 0) {
        free(s->history_path);
        s->history_path = NULL;
        return;
    }
    close(fd);
    read_history(s->history_path);
}

static void history_add(repl_session *s, const char *line) {
    if (is_blank(line)) return;
    HIST_ENTRY *last = history_length > 0 ? history_get(history_base + history_length - 1) : NULL;
    if (last && !strcmp(last->line, line)) return;
    add_history(line);
    if (s->history_path) append_history(1, s->history_path);
}

static void history_close(repl_session *s) {
    if (s->history_path) history_truncate_file(s->history_path, HISTORY_MAX);
    clear_history();
}

/* ---------- reading lines ---------- */

static void on_line(char *line) {
    rl_session->got_line = true;
    rl_session->line = line;
    rl_callback_handler_remove();
}

/* 1 with *line (malloc'd), 0 at end of input, -1 when Ctrl-C discarded the line. */
static int read_line_tty(repl_session *s, const char *prompt, char **line) {
    sigset_t sigint, old;
    sigemptyset(&sigint);
    sigaddset(&sigint, SIGINT);
    sigprocmask(SIG_BLOCK, &sigint, &old);
    clear_interrupt(s->in);
    s->got_line = false;
    s->line = NULL;
    rl_callback_handler_install(prompt, on_line);
    int fd = fileno(rl_instream ? rl_instream : stdin);
    int result = 0;
    for (;;) {
        if (s->in->cx->interrupt) {
            /* the sequence CPython uses to abandon a line in callback mode */
            rl_free_line_state();
            rl_callback_sigcleanup();
            rl_cleanup_after_signal();
            rl_callback_handler_remove();
            fputs("\n", stdout);
            fflush(stdout);
            clear_interrupt(s->in);
            result = -1;
            break;
        }
        fd_set fds;
        FD_ZERO(&fds);
        FD_SET(fd, &fds);
        int r = pselect(fd + 1, &fds, NULL, NULL, NULL, &old);
        if (r < 0) {
            if (errno == EINTR) continue;
            rl_callback_handler_remove();
            break;
        }
        rl_callback_read_char();
        if (s->got_line) {
            *line = s->line;
            result = s->line ? 1 : 0;
            break;
        }
    }
    sigprocmask(SIG_SETMASK, &old, NULL);
    return result;
}

/* A line from a pipe or file (`ax -i < script`): no prompt, no editing. *len counts its bytes
 * (a NUL byte in it makes it longer than the string). */
static int read_line_plain(repl_session *s, char **line, size_t *len) {
    char *buf = NULL;
    size_t cap = 0;
    ssize_t n = getline(&buf, &cap, s->opt->in ? s->opt->in : stdin);
    if (n < 0) {
        free(buf);
        return 0;
    }
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r')) buf[--n] = 0;
    *line = buf;
    *len = (size_t)n;
    return 1;
}

static int read_line(repl_session *s, const char *prompt, char **line, size_t *len) {
    int r = s->opt->interactive ? read_line_tty(s, prompt, line) : read_line_plain(s, line, len);
    if (r == 1 && s->opt->interactive) {
        history_add(s, *line);
        *len = strlen(*line); /* readline's lines are strings */
    }
    return r;
}

/* An entry whose line `lineno` holds a NUL byte at column `col`: reported as the parser
 * reports it in a file, and dropped. */
static void report_nul(ax_interp *in, const char *entry, int lineno, int col) {
    ax_error(in->cx, AX_ERR_SYNTAX, "source code cannot contain null bytes");
    ax_error_set_span(in->cx, (ax_span){lineno, col, lineno, col + 1}, "<repl>", entry);
    report_error(in);
}

/* ---------- the loop ---------- */

/* Reads one entry (a command, a line, or a block) into *entry. 1 when there is something to
 * run, 0 at end of input, -1 after Ctrl-C. A ':command' is returned as is. */
static int read_entry(repl_session *s, ax_strbuf *entry) {
    entry->len = 0;
    if (entry->data) entry->data[0] = 0;
    for (;;) {
        bool first = entry->len == 0;
        char *line = NULL;
        size_t len = 0;
        int r = read_line(s, first ? ">>> " : "... ", &line, &len);
        if (r <= 0) return r < 0 ? -1 : (first ? 0 : 1);
        if (strlen(line) < len) {
            int lineno = 1;
            for (const char *q = entry->data ? entry->data : ""; *q; q++) lineno += *q == '\n';
            ax_strbuf_append(entry, line);
            report_nul(s->in, entry->data, lineno, (int)strlen(line) + 1);
            free(line);
            return -1;
        }
        if (first && line[strspn(line, " \t")] == ':') {
            ax_strbuf_append(entry, line);
            free(line);
            return 1;
        }
        if (first && is_blank(line)) {
            free(line);
            continue;
        }
        ax_strbuf_append(entry, line);
        ax_strbuf_append(entry, "\n");
        bool more = ax_repl_needs_more(entry->data, line);
        free(line);
        if (!more) return 1;
    }
}

static void install_readline(repl_session *s) {
    rl_readline_name = "ax";
    rl_catch_signals = 0; /* our SIGINT handler; readline's would re-raise the signal */
    rl_basic_word_break_characters = " \t\n\"'`@$><=;|&{}()[],+-*/%^~!:";
    rl_completer_word_break_characters = rl_basic_word_break_characters;
    rl_attempted_completion_function = attempt_completion;
    history_open(s);
}

int ax_repl_run(ax_interp *in, const ax_repl_options *opt) {
    repl_session s = {.in = in, .opt = opt};
    rl_session = &s;
    interrupt_flag = &in->cx->interrupt;
    struct sigaction sa = {0}, old_sa;
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_sa);
    if (opt->interactive) {
        s.history_path = history_path_for(opt);
        install_readline(&s);
    }

    ax_strbuf entry;
    ax_strbuf_init(&entry);
    bool at_eof = false;
    for (;;) {
        int r = read_entry(&s, &entry);
        if (r == 0) {
            at_eof = true;
            break;
        }
        if (r < 0) continue;
        const char *text = entry.data + strspn(entry.data, " \t");
        if (*text == ':') {
            if (ax_repl_command(in, text, stdout)) break;
        } else {
            ax_repl_eval(in, entry.data, stdout);
        }
    }
    if (opt->interactive) {
        if (at_eof) fputs("\n", stdout); /* after the prompt that Ctrl-D answered */
        history_close(&s);
    }
    fflush(stdout);
    ax_strbuf_free(&entry);
    clear_candidates(&s);
    free(s.cands);
    free(s.history_path);

    sigaction(SIGINT, &old_sa, NULL);
    interrupt_flag = NULL;
    rl_session = NULL;
    return 0;
}

/* The interactive session: read an entry (one line, or a block while it is open), run it,
 * echo its value, go on after errors. Commands start with ':' (see ax_repl_command). */
#ifndef AX_REPL_H
#define AX_REPL_H

#include <stdbool.h>
#include <stdio.h>

#include "../lang/interp.h"

typedef struct ax_repl_options {
    bool interactive;         /* a terminal: GNU readline, prompts, history, completion, Ctrl-C */
    FILE *in;                 /* where entries are read from when not interactive */
    const char *history_file; /* NULL: ~/.ax_history (none when HOME is unset) */
} ax_repl_options;

/* Runs the session until :quit or end of input. Returns the exit status (0). */
int ax_repl_run(ax_interp *in, const ax_repl_options *opt);

/* Runs one ':command' line (":help sum", ":type x", ":time 10 f(x)", ...), writing its output
 * to `out` and errors to stderr. Returns 1 when the command asks to quit, 0 otherwise. */
int ax_repl_command(ax_interp *in, const char *line, FILE *out);

/* Runs one entry of source text in the main module, echoing the value of an expression to
 * `out`; an error is printed to stderr and cleared. Returns 0, or -1 after an error. */
int ax_repl_eval(ax_interp *in, const char *source, FILE *out);

/* True when `line` opens an indented block: it ends with ':' (outside strings and comments)
 * or is a decorator. The REPL then reads lines until an empty one. */
bool ax_repl_line_opens_block(const char *line);

/* True when `entry` (the lines read so far) needs another line before it can run. `line` is
 * the line just read. */
bool ax_repl_needs_more(const char *entry, const char *line);

/* Splits "callee(args)" at its last top-level parenthesised group (for :ir and :c); false
 * when the expression is not a call. callee and args hold up to cap bytes. */
bool ax_repl_split_call(const char *expr, char *callee, char *args, size_t cap);

/* Splits ":time[ N] expr": *runs = N (0 when not given), returns the start of expr. */
const char *ax_repl_parse_time_args(const char *args, int *runs);

/* Formats a duration in seconds with a unit that keeps 3-4 significant digits ("12.3 ms"). */
void ax_repl_format_seconds(char *out, size_t cap, double seconds);

#endif

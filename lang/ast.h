/* The abstract syntax tree. Every node keeps its source span.
 *
 * One node struct with generic fields keeps the parser and evaluator small; the table below
 * says which fields each kind uses. Lists are arrays of node pointers with a count. */
#ifndef AX_AST_H
#define AX_AST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../numpy/ops.h"
#include "../runtime/error.h"

typedef enum {
    /* expressions */
    AX_N_INT,   /* ival (and text: the literal as written) */
    AX_N_FLOAT, /* fval, text */
    AX_N_STR,   /* text (escapes resolved) */
    AX_N_NAME,  /* text */
    AX_N_TRUE,
    AX_N_FALSE,
    AX_N_NONE,
    AX_N_ELLIPSIS, /* `...` inside an index */
    AX_N_TUPLE,    /* items */
    AX_N_LIST,     /* items */
    AX_N_DICT,     /* items = keys, items2 = values (same count); `**x` is a key AX_N_STAR
                      (op 2, a = x) with a NULL value */
    AX_N_SET,      /* items (AX_N_STAR nodes for *x) */
    AX_N_BINOP,    /* op (ax_binop), a, b */
    AX_N_UNARY,    /* op (ax_unop), a */
    AX_N_COMPARE,  /* a = first operand; items = the further operands; ops[i] the comparison
                      between operand i and i+1 (chains: a < b < c) */
    AX_N_AND,
    AX_N_OR,       /* a, b (short-circuit) */
    AX_N_NOT,      /* a */
    AX_N_IFEXP,    /* a = condition, b = value if true, c = value if false */
    AX_N_CALL,     /* a = callee; items = positional args (an AX_N_STAR node for *x);
                      kwnames/items2 = keyword args (kwnames[i] NULL for **x) */
    AX_N_STAR,     /* a: `*x` in a call or a target list */
    AX_N_INDEX,    /* a = object; items = index entries (one per comma-separated entry;
                      entries are expressions, AX_N_SLICE, AX_N_ELLIPSIS or AX_N_NONE) */
    AX_N_SLICE,    /* a = start, b = stop, c = step (each may be NULL) */
    AX_N_ATTR,     /* a = object, text = attribute name */
    AX_N_LAMBDA,   /* params, body (a single expression node in `a`) */
    AX_N_LISTCOMP, /* a = element; items = the `for` clauses (AX_N_COMPFOR) in order; op 1
                      for a generator expression (made as a list) */
    AX_N_SETCOMP,  /* a = element; items = the `for` clauses */
    AX_N_DICTCOMP, /* a = key, b = value; items = the `for` clauses */
    AX_N_COMPFOR,  /* a = target, b = iterable, items = `if` conditions */

    /* statements (every block is a list of statements; a block's value is its last one) */
    AX_N_EXPR,       /* a */
    AX_N_ASSIGN,     /* a = target (NAME, TUPLE/LIST of targets, STAR, INDEX, ATTR), b = value */
    AX_N_AUGASSIGN,  /* op (ax_binop), a = target NAME, b = value */
    AX_N_DEF,        /* text = name, params, body, items = decorators (outermost first) */
    AX_N_RETURN,     /* a (may be NULL) */
    AX_N_IF,         /* a = condition, body = then-block, orelse = else-block (an elif is an
                        AX_N_IF alone in orelse); orelse.n == 0 when there is no else */
    AX_N_FOR,        /* a = target, b = iterable, body */
    AX_N_WHILE,      /* a = condition, body */
    AX_N_IMPORT,     /* text = module name (dotted), text2 = alias or NULL */
    AX_N_FROMIMPORT, /* text = module; kwnames = names; aliases = `as` names (entries may be NULL)
                      */
    AX_N_PASS,
    AX_N_BREAK,
    AX_N_CONTINUE,
    AX_N_ASSERT, /* a = condition, b = message or NULL */
    AX_N_NKINDS
} ax_node_kind;

typedef struct ax_node ax_node;

typedef struct ax_nodelist {
    ax_node **items;
    int n;
} ax_nodelist;

/* A function parameter: `name`, `name=default`, `*name` (star), `**name` (star2). Parameters
 * after a `*` or `*name` are keyword-only. */
typedef struct ax_param {
    char *name;
    ax_node *default_value; /* NULL when required */
    bool star, star2, kwonly;
} ax_param;

struct ax_node {
    ax_node_kind kind;
    ax_span span;
    int height;      /* of the tree under this node (a leaf is 1; set for expressions) */
    int op;          /* ax_binop / ax_unop */
    int64_t ival;
    double fval;
    char *text, *text2;
    ax_node *a, *b, *c;
    ax_nodelist items, items2;
    int *ops;        /* AX_N_COMPARE: items.n entries of ax_cmpop */
    char **kwnames;  /* AX_N_CALL: items2.n entries; AX_N_FROMIMPORT: the imported names */
    char **aliases;  /* AX_N_FROMIMPORT: items2.n... see nnames */
    int nnames;      /* AX_N_FROMIMPORT: number of names */
    ax_param *params;
    int nparams;
    ax_nodelist body, orelse;
};

/* A parsed program (or REPL entry): its statements, and the source they came from. */
typedef struct ax_program {
    ax_nodelist stmts;
    char *file;   /* owned copy of the file name */
    char *source; /* owned copy of the source text (the error printer shows lines of it) */
} ax_program;

/* Parses a whole source text. On a syntax error, records AX_ERR_SYNTAX with its span in cx
 * and returns NULL. `file` names the source in errors ("<repl>", "prog.ax"). */
struct ax_ctx;
ax_program *ax_parse(struct ax_ctx *cx, const char *source, const char *file);
/* The same for source[0, len), which may hold NUL bytes (a syntax error), a UTF-8 byte order
 * mark and "\r\n" or "\r" line ends (both read as "\n"). */
ax_program *ax_parse_n(struct ax_ctx *cx, const char *source, size_t len, const char *file);
void ax_program_free(ax_program *p);

/* For the REPL: true when `source` is incomplete (an open bracket, a block header without a
 * body yet, a line ending in `:` or a backslash, an unterminated triple-quoted string), so the
 * REPL should read another line before parsing. `source` holds the lines read so far, each
 * ending in '\n'. As in Python's REPL, an open indented block (or a one-line `if c: x` that an
 * `else` may follow) continues until an empty line is entered; a blank line after a bare block
 * header or decorator ends the input (and parsing then reports the missing block). */
bool ax_parse_is_incomplete(const char *source);

const char *ax_node_kind_name(ax_node_kind kind);

/* Frees a node and everything it owns (NULL is fine). */
void ax_node_free(ax_node *node);

/* Calls fn on each direct child node of `node` (operands, list entries, parameter defaults,
 * decorators, block statements), skipping NULL ones. */
void ax_node_each_child(const ax_node *node, void (*fn)(void *arg, ax_node *child), void *arg);

/* Writes the tree as an S-expression, for tests and debugging: `x = -a ** 2` dumps as
 * `(= x (u- (** a 2)))`. */
struct ax_strbuf;
void ax_ast_dump(struct ax_strbuf *out, const ax_node *node);

#endif

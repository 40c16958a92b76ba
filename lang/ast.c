/* The AST: freeing, kind names, the S-expression dumper, and the REPL's completeness test. */
#include "ast.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../runtime/format.h"
#include "lexer.h"

/* ---- freeing ---- */

static void free_list(ax_nodelist *l) {
    for (int i = 0; i < l->n; i++) ax_node_free(l->items[i]);
    free(l->items);
}

static void free_names(char **names, int n) {
    if (!names) return;
    for (int i = 0; i < n; i++) free(names[i]);
    free(names);
}

/* Frees everything a node owns except its `a` child, which the caller frees next. */
static void free_node_shallow(ax_node *n) {
    free(n->text);
    free(n->text2);
    ax_node_free(n->b);
    ax_node_free(n->c);
    free_list(&n->items);
    free_list(&n->items2);
    free(n->ops);
    free_names(n->kwnames, n->kind == AX_N_FROMIMPORT ? n->nnames : n->items2.n);
    free_names(n->aliases, n->nnames);
    for (int i = 0; i < n->nparams; i++) {
        free(n->params[i].name);
        ax_node_free(n->params[i].default_value);
    }
    free(n->params);
    free_list(&n->body);
    free_list(&n->orelse);
    free(n);
}

void ax_node_free(ax_node *node) {
    /* Long left-associative chains (a + b + c + ..., f()()(), x.a.b.c) nest through `a`; a loop
     * instead of recursion there keeps the stack flat however long the chain is. */
    while (node) {
        ax_node *next = node->a;
        free_node_shallow(node);
        node = next;
    }
}

void ax_program_free(ax_program *p) {
    if (!p) return;
    free_list(&p->stmts);
    free(p->file);
    free(p->source);
    free(p);
}

void ax_node_each_child(const ax_node *n, void (*fn)(void *arg, ax_node *child), void *arg) {
    ax_node *direct[3] = {n->a, n->b, n->c};
    for (int i = 0; i < 3; i++)
        if (direct[i]) fn(arg, direct[i]);
    const ax_nodelist *lists[4] = {&n->items, &n->items2, &n->body, &n->orelse};
    for (int l = 0; l < 4; l++)
        for (int i = 0; i < lists[l]->n; i++)
            if (lists[l]->items[i]) fn(arg, lists[l]->items[i]);
    for (int i = 0; i < n->nparams; i++)
        if (n->params[i].default_value) fn(arg, n->params[i].default_value);
}

/* ---- names ---- */

static const char *const kind_names[AX_N_NKINDS] = {
    [AX_N_INT] = "int",
    [AX_N_FLOAT] = "float",
    [AX_N_STR] = "str",
    [AX_N_NAME] = "name",
    [AX_N_TRUE] = "True",
    [AX_N_FALSE] = "False",
    [AX_N_NONE] = "None",
    [AX_N_ELLIPSIS] = "Ellipsis",
    [AX_N_TUPLE] = "tuple",
    [AX_N_LIST] = "list",
    [AX_N_DICT] = "dict",
    [AX_N_SET] = "set",
    [AX_N_BINOP] = "binop",
    [AX_N_UNARY] = "unary",
    [AX_N_COMPARE] = "compare",
    [AX_N_AND] = "and",
    [AX_N_OR] = "or",
    [AX_N_NOT] = "not",
    [AX_N_IFEXP] = "ifexp",
    [AX_N_CALL] = "call",
    [AX_N_STAR] = "star",
    [AX_N_INDEX] = "index",
    [AX_N_SLICE] = "slice",
    [AX_N_ATTR] = "attr",
    [AX_N_LAMBDA] = "lambda",
    [AX_N_LISTCOMP] = "listcomp",
    [AX_N_SETCOMP] = "setcomp",
    [AX_N_DICTCOMP] = "dictcomp",
    [AX_N_COMPFOR] = "compfor",
    [AX_N_EXPR] = "expr",
    [AX_N_ASSIGN] = "assign",
    [AX_N_AUGASSIGN] = "augassign",
    [AX_N_DEF] = "def",
    [AX_N_RETURN] = "return",
    [AX_N_IF] = "if",
    [AX_N_FOR] = "for",
    [AX_N_WHILE] = "while",
    [AX_N_IMPORT] = "import",
    [AX_N_FROMIMPORT] = "fromimport",
    [AX_N_PASS] = "pass",
    [AX_N_BREAK] = "break",
    [AX_N_CONTINUE] = "continue",
    [AX_N_ASSERT] = "assert",
};

const char *ax_node_kind_name(ax_node_kind kind) {
    return kind >= 0 && kind < AX_N_NKINDS && kind_names[kind] ? kind_names[kind] : "?";
}

static const char *const binop_text[] = {
    [AX_OP_ADD] = "+",       [AX_OP_SUB] = "-",   [AX_OP_MUL] = "*",    [AX_OP_DIV] = "/",
    [AX_OP_FLOORDIV] = "//", [AX_OP_MOD] = "%",   [AX_OP_POW] = "**",   [AX_OP_MATMUL] = "@",
    [AX_OP_BITAND] = "&",    [AX_OP_BITOR] = "|", [AX_OP_BITXOR] = "^", [AX_OP_LSHIFT] = "<<",
    [AX_OP_RSHIFT] = ">>",
};
static const char *const unop_text[] = {
    [AX_OP_NEG] = "u-", [AX_OP_POS] = "u+", [AX_OP_INVERT] = "~"};
static const char *const cmp_text[] = {
    [AX_CMP_LT] = "<",  [AX_CMP_LE] = "<=",         [AX_CMP_GT] = ">",  [AX_CMP_GE] = ">=",
    [AX_CMP_EQ] = "==", [AX_CMP_NE] = "!=",         [AX_CMP_IN] = "in", [AX_CMP_NOT_IN] = "not-in",
    [AX_CMP_IS] = "is", [AX_CMP_IS_NOT] = "is-not",
};

static const char *op_name(const char *const *table, size_t n, int op) {
    return op >= 0 && (size_t)op < n && table[op] ? table[op] : "?";
}
#define OP_NAME(table, op) op_name(table, sizeof table / sizeof table[0], op)

/* ---- the S-expression dumper ---- */

/* Deeper trees than the parser accepts are cut short instead of overflowing the stack. */
#define DUMP_MAX_DEPTH 2000

static void dump(ax_strbuf *o, const ax_node *n, int depth);

static void dump_float(ax_strbuf *o, double v) {
    if (isinf(v) || isnan(v)) {
        ax_strbuf_append(o, isnan(v) ? "nan" : v > 0 ? "inf" : "-inf");
        return;
    }
    /* Python's repr: the fewest digits that read back the same, positional notation for
     * exponents from -4 to 15, scientific otherwise */
    char text[64];
    int prec = 1;
    for (; prec < 17; prec++) {
        snprintf(text, sizeof text, "%.*e", prec - 1, v);
        if (strtod(text, NULL) == v) break;
    }
    snprintf(text, sizeof text, "%.*e", prec - 1, v);
    int exp10 = atoi(strchr(text, 'e') + 1);
    if (exp10 >= -4 && exp10 < 16) {
        int decimals = prec - 1 - exp10;
        snprintf(text, sizeof text, "%.*f", decimals > 1 ? decimals : 1, v);
    }
    ax_strbuf_append(o, text);
}

static void dump_string(ax_strbuf *o, const char *s) {
    ax_strbuf_append(o, "\"");
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        if (*c == '"' || *c == '\\')
            ax_strbuf_appendf(o, "\\%c", *c);
        else if (*c == '\n')
            ax_strbuf_append(o, "\\n");
        else if (*c == '\t')
            ax_strbuf_append(o, "\\t");
        else if (*c < 0x20 || *c == 0x7F)
            ax_strbuf_appendf(o, "\\x%02x", *c);
        else
            ax_strbuf_appendf(o, "%c", *c);
    }
    ax_strbuf_append(o, "\"");
}

/* Writes " item" for each entry of a list. */
static void dump_items(ax_strbuf *o, const ax_nodelist *l, int depth) {
    for (int i = 0; i < l->n; i++) {
        ax_strbuf_append(o, " ");
        dump(o, l->items[i], depth);
    }
}

static void dump_opt(ax_strbuf *o, const ax_node *n, int depth) {
    ax_strbuf_append(o, " ");
    if (n)
        dump(o, n, depth);
    else
        ax_strbuf_append(o, "_");
}

/* Parameters in Python's own notation: (x y=1 *args z=2 **kw), or (a * b) for a bare star. */
static void dump_params(ax_strbuf *o, const ax_node *n, int depth) {
    ax_strbuf_append(o, "(");
    for (int i = 0; i < n->nparams; i++) {
        const ax_param *pa = &n->params[i];
        bool after_star = i > 0 && (n->params[i - 1].star || n->params[i - 1].kwonly);
        if (i > 0) ax_strbuf_append(o, " ");
        if (pa->kwonly && !after_star) ax_strbuf_append(o, "* ");
        ax_strbuf_appendf(o, "%s%s", pa->star ? "*" : pa->star2 ? "**" : "", pa->name);
        if (pa->default_value) {
            ax_strbuf_append(o, "=");
            dump(o, pa->default_value, depth);
        }
    }
    ax_strbuf_append(o, ")");
}

static void dump_block(ax_strbuf *o, const ax_nodelist *l, int depth) {
    ax_strbuf_append(o, " (do");
    dump_items(o, l, depth);
    ax_strbuf_append(o, ")");
}

static void dump_call(ax_strbuf *o, const ax_node *n, int depth) {
    ax_strbuf_append(o, "(call ");
    dump(o, n->a, depth);
    dump_items(o, &n->items, depth);
    for (int i = 0; i < n->items2.n; i++) {
        if (n->kwnames && n->kwnames[i])
            ax_strbuf_appendf(o, " (kw %s ", n->kwnames[i]);
        else
            ax_strbuf_append(o, " (** ");
        dump(o, n->items2.items[i], depth);
        ax_strbuf_append(o, ")");
    }
    ax_strbuf_append(o, ")");
}

static void dump_compare(ax_strbuf *o, const ax_node *n, int depth) {
    ax_strbuf_append(o, "(cmp ");
    dump(o, n->a, depth);
    for (int i = 0; i < n->items.n; i++) {
        ax_strbuf_appendf(o, " %s ", OP_NAME(cmp_text, n->ops[i]));
        dump(o, n->items.items[i], depth);
    }
    ax_strbuf_append(o, ")");
}

static void dump_dict(ax_strbuf *o, const ax_node *n, int depth) {
    ax_strbuf_append(o, "(dict");
    for (int i = 0; i < n->items.n && i < n->items2.n; i++) {
        const ax_node *k = n->items.items[i];
        if (k->kind == AX_N_STAR) { /* **x */
            ax_strbuf_append(o, " (** ");
            dump(o, k->a, depth);
            ax_strbuf_append(o, ")");
            continue;
        }
        ax_strbuf_append(o, " (");
        dump(o, k, depth);
        ax_strbuf_append(o, " ");
        dump(o, n->items2.items[i], depth);
        ax_strbuf_append(o, ")");
    }
    ax_strbuf_append(o, ")");
}

static void dump_def(ax_strbuf *o, const ax_node *n, int depth) {
    ax_strbuf_appendf(o, "(def %s ", n->text);
    dump_params(o, n, depth);
    if (n->items.n) {
        ax_strbuf_append(o, " (@");
        dump_items(o, &n->items, depth);
        ax_strbuf_append(o, ")");
    }
    dump_block(o, &n->body, depth);
    ax_strbuf_append(o, ")");
}

static void dump_fromimport(ax_strbuf *o, const ax_node *n) {
    ax_strbuf_appendf(o, "(from %s", n->text);
    for (int i = 0; i < n->nnames; i++) {
        if (n->aliases && n->aliases[i])
            ax_strbuf_appendf(o, " (%s as %s)", n->kwnames[i], n->aliases[i]);
        else
            ax_strbuf_appendf(o, " %s", n->kwnames[i]);
    }
    ax_strbuf_append(o, ")");
}

/* Nodes printed as "(head child...)" with their fixed children a, b, c and items. */
static bool dump_simple(ax_strbuf *o, const ax_node *n, int depth) {
    const char *head = NULL;
    switch (n->kind) {
    case AX_N_TUPLE:
        head = "tuple";
        break;
    case AX_N_LIST:
        head = "list";
        break;
    case AX_N_AND:
        head = "and";
        break;
    case AX_N_OR:
        head = "or";
        break;
    case AX_N_NOT:
        head = "not";
        break;
    case AX_N_IFEXP:
        head = "ifexp";
        break;
    case AX_N_STAR:
        head = "*";
        break;
    case AX_N_INDEX:
        head = "index";
        break;
    case AX_N_LISTCOMP:
        head = n->op == 1 ? "genexp" : "listcomp";
        break;
    case AX_N_SETCOMP:
        head = "setcomp";
        break;
    case AX_N_DICTCOMP:
        head = "dictcomp";
        break;
    case AX_N_SET:
        head = "set";
        break;
    case AX_N_EXPR:
        head = "expr";
        break;
    case AX_N_ASSIGN:
        head = "=";
        break;
    case AX_N_BINOP:
        head = OP_NAME(binop_text, n->op);
        break;
    case AX_N_UNARY:
        head = OP_NAME(unop_text, n->op);
        break;
    default:
        return false;
    }
    ax_strbuf_appendf(o, "(%s", head);
    const ax_node *fixed[3] = {n->a, n->b, n->c};
    for (int i = 0; i < 3 && fixed[i]; i++) {
        ax_strbuf_append(o, " ");
        dump(o, fixed[i], depth);
    }
    dump_items(o, &n->items, depth);
    ax_strbuf_append(o, ")");
    return true;
}

static void dump_statement(ax_strbuf *o, const ax_node *n, int depth) {
    switch (n->kind) {
    case AX_N_AUGASSIGN:
        ax_strbuf_appendf(o, "(%s= ", OP_NAME(binop_text, n->op));
        dump(o, n->a, depth);
        ax_strbuf_append(o, " ");
        dump(o, n->b, depth);
        ax_strbuf_append(o, ")");
        break;
    case AX_N_DEF:
        dump_def(o, n, depth);
        break;
    case AX_N_RETURN:
    case AX_N_ASSERT:
        ax_strbuf_append(o, n->kind == AX_N_RETURN ? "(return" : "(assert");
        if (n->a) dump_opt(o, n->a, depth);
        if (n->b) dump_opt(o, n->b, depth);
        ax_strbuf_append(o, ")");
        break;
    case AX_N_IF:
    case AX_N_WHILE:
        ax_strbuf_append(o, n->kind == AX_N_IF ? "(if " : "(while ");
        dump(o, n->a, depth);
        dump_block(o, &n->body, depth);
        if (n->orelse.n) dump_block(o, &n->orelse, depth);
        ax_strbuf_append(o, ")");
        break;
    case AX_N_FOR:
        ax_strbuf_append(o, "(for ");
        dump(o, n->a, depth);
        ax_strbuf_append(o, " ");
        dump(o, n->b, depth);
        dump_block(o, &n->body, depth);
        ax_strbuf_append(o, ")");
        break;
    case AX_N_IMPORT:
        ax_strbuf_appendf(o, "(import %s", n->text);
        if (n->text2) ax_strbuf_appendf(o, " as %s", n->text2);
        ax_strbuf_append(o, ")");
        break;
    case AX_N_FROMIMPORT:
        dump_fromimport(o, n);
        break;
    case AX_N_PASS:
        ax_strbuf_append(o, "(pass)");
        break;
    case AX_N_BREAK:
        ax_strbuf_append(o, "(break)");
        break;
    case AX_N_CONTINUE:
        ax_strbuf_append(o, "(continue)");
        break;
    default:
        ax_strbuf_appendf(o, "(?%d)", (int)n->kind);
        break;
    }
}

static void dump_expression(ax_strbuf *o, const ax_node *n, int depth) {
    switch (n->kind) {
    case AX_N_INT:
        ax_strbuf_appendf(o, "%lld", (long long)n->ival);
        break;
    case AX_N_FLOAT:
        dump_float(o, n->fval);
        break;
    case AX_N_STR:
        dump_string(o, n->text ? n->text : "");
        break;
    case AX_N_NAME:
        ax_strbuf_append(o, n->text);
        break;
    case AX_N_TRUE:
        ax_strbuf_append(o, "True");
        break;
    case AX_N_FALSE:
        ax_strbuf_append(o, "False");
        break;
    case AX_N_NONE:
        ax_strbuf_append(o, "None");
        break;
    case AX_N_ELLIPSIS:
        ax_strbuf_append(o, "...");
        break;
    case AX_N_DICT:
        dump_dict(o, n, depth);
        break;
    case AX_N_COMPARE:
        dump_compare(o, n, depth);
        break;
    case AX_N_CALL:
        dump_call(o, n, depth);
        break;
    case AX_N_SLICE:
        ax_strbuf_append(o, "(slice");
        dump_opt(o, n->a, depth);
        dump_opt(o, n->b, depth);
        dump_opt(o, n->c, depth);
        ax_strbuf_append(o, ")");
        break;
    case AX_N_ATTR:
        ax_strbuf_append(o, "(. ");
        dump(o, n->a, depth);
        ax_strbuf_appendf(o, " %s)", n->text);
        break;
    case AX_N_LAMBDA:
        ax_strbuf_append(o, "(lambda ");
        dump_params(o, n, depth);
        dump_opt(o, n->a, depth);
        ax_strbuf_append(o, ")");
        break;
    case AX_N_COMPFOR:
        ax_strbuf_append(o, "(for ");
        dump(o, n->a, depth);
        ax_strbuf_append(o, " ");
        dump(o, n->b, depth);
        for (int i = 0; i < n->items.n; i++) {
            ax_strbuf_append(o, " (if ");
            dump(o, n->items.items[i], depth);
            ax_strbuf_append(o, ")");
        }
        ax_strbuf_append(o, ")");
        break;
    default:
        dump_statement(o, n, depth);
        break;
    }
}

static void dump(ax_strbuf *o, const ax_node *n, int depth) {
    if (!n) {
        ax_strbuf_append(o, "_");
        return;
    }
    if (depth >= DUMP_MAX_DEPTH) {
        ax_strbuf_append(o, "...");
        return;
    }
    if (!dump_simple(o, n, depth + 1)) dump_expression(o, n, depth + 1);
}

void ax_ast_dump(ax_strbuf *out, const ax_node *node) {
    dump(out, node, 0);
}

/* ---- the REPL's question: is this input complete? ---- */

/* True when the last line of `source` (each line ending in '\n') is empty or blank. */
static bool ends_with_blank_line(const char *source) {
    size_t len = strlen(source);
    if (len == 0) return false;
    if (source[len - 1] == '\n') len--;
    size_t start = len;
    while (start > 0 && source[start - 1] != '\n') start--;
    for (size_t i = start; i < len; i++)
        if (source[i] != ' ' && source[i] != '\t' && source[i] != '\r' && source[i] != '\f')
            return false;
    return true;
}

static bool is_layout(ax_tok_kind k) {
    return k == AX_TOK_NEWLINE || k == AX_TOK_INDENT || k == AX_TOK_DEDENT || k == AX_TOK_EOF;
}

bool ax_parse_is_incomplete(const char *source) {
    if (!source) return false;
    ax_token_list l;
    bool incomplete = false;
    if (ax_lex(source, &l) < 0) {
        incomplete = l.incomplete && !l.out_of_memory;
    } else if (l.continued_at_end) {
        incomplete = true;
    } else if (!ends_with_blank_line(source)) {
        /* the last logical line: from after the previous NEWLINE to the last real token */
        int last = l.n - 1;
        while (last >= 0 && is_layout(ax_token_at(&l, last)->kind)) last--;
        int first = last;
        while (first > 0 && !is_layout(ax_token_at(&l, first - 1)->kind)) first--;
        if (last >= 0) {
            ax_tok_kind head = ax_token_at(&l, first)->kind, tail = ax_token_at(&l, last)->kind;
            incomplete = tail == AX_TOK_COLON || head == AX_TOK_AT || l.eof_indent_depth > 0 ||
                         head == AX_TOK_IF || head == AX_TOK_ELIF;
        }
    }
    ax_token_list_free(&l);
    return incomplete;
}

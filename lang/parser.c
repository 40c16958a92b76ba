/* The parser: recursive descent over the tokens, Python's grammar and precedence.
 *
 * Every parse function returns a node it owns, or NULL after recording a syntax error; on
 * failure it frees what it built. The first error stops the parse. Tokens are made as the
 * parser reaches them and freed after each top-level statement, and every expression node
 * knows the height of its tree, so that a huge input that breaks a limit (a 100 MB line of
 * 1 + 1 + ... + 1) stops when it breaks it, having read no more than that. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../runtime/context.h"
#include "ast.h"
#include "lexer.h"

/* Nesting limits: recursion in the parser (nested parentheses, unary chains, lambdas) and the
 * height of a statement's tree (the evaluator walks it recursively). */
#define MAX_NESTING     200
#define MAX_TREE_HEIGHT 1000

typedef struct {
    ax_ctx *cx;
    const char *source, *file;
    ax_lexer *lexer;
    ax_token_list lx;
    int pos;
    int depth;
    bool failed;
} parser;

/* Tokens made ahead of the parser at a time (and how often Ctrl-C is checked). */
#define TOKEN_BATCH 256

/* ---- errors ---- */

static void report(parser *p, ax_error_kind kind, ax_span span, const char *msg) {
    p->failed = true;
    ax_error(p->cx, kind, "%s", msg);
    ax_error_set_span(p->cx, span, p->file, p->source);
}

static void report_lex_error(parser *p) {
    if (p->lx.interrupted) {
        p->failed = true;
        p->cx->interrupt = 0; /* what ax_ctx_check_interrupt does (the fuzz target links no
                                 runtime/context.c) */
        ax_error(p->cx, AX_ERR_INTERRUPT, "interrupted");
        return;
    }
    report(p, p->lx.out_of_memory ? AX_ERR_MEMORY : AX_ERR_SYNTAX, p->lx.err_span, p->lx.message);
}

static void *vsyntax_error(parser *p, ax_span span, const char *fmt, va_list ap) {
    if (p->failed) return NULL;
    /* Past an unclosed bracket everything is one logical line, so a later error is most
     * likely a consequence: report the bracket, as Python does. Whether one is never closed
     * is known at the end of the input only. */
    if (!p->lx.done) ax_lexer_scan_rest(p->lexer);
    if (p->lx.failed && p->lx.unclosed && span.line > p->lx.err_span.line) {
        report_lex_error(p);
        return NULL;
    }
    char msg[512];
    vsnprintf(msg, sizeof msg, fmt, ap);
    report(p, AX_ERR_SYNTAX, span, msg);
    return NULL;
}

__attribute__((format(printf, 3, 4))) static void *syntax_error(parser *p, ax_span span,
                                                                const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsyntax_error(p, span, fmt, ap);
    va_end(ap);
    return NULL;
}

/* An error at a token; at the lexer's ERROR token, the lexical error is what is reported. */
__attribute__((format(printf, 3, 4))) static void *error_at(parser *p, const ax_token *t,
                                                            const char *fmt, ...) {
    if (p->failed) return NULL;
    if (t->kind == AX_TOK_ERROR) {
        report_lex_error(p);
        return NULL;
    }
    va_list ap;
    va_start(ap, fmt);
    vsyntax_error(p, t->span, fmt, ap);
    va_end(ap);
    return NULL;
}

static void *oom(parser *p) {
    if (!p->failed) {
        p->failed = true;
        ax_error_oom(p->cx);
    }
    return NULL;
}

/* ---- tokens ---- */

/* Token i, made now if need be; past the end, the last one (EOF or ERROR). */
static ax_token *token(parser *p, int i) {
    if (i >= p->lx.n && !p->lx.done) {
        if (ax_ctx_interrupted(p->cx))
            ax_lexer_interrupt(p->lexer);
        else
            ax_lexer_fill(p->lexer, i + TOKEN_BATCH);
    }
    return ax_token_at(&p->lx, i < p->lx.n ? i : p->lx.n - 1);
}

static ax_token *cur(parser *p) {
    return token(p, p->pos);
}
static ax_token *peek(parser *p, int k) {
    return token(p, p->pos + k);
}
static bool at(parser *p, ax_tok_kind k) {
    return cur(p)->kind == k;
}

static ax_token *advance(parser *p) {
    ax_token *t = cur(p);
    if (t->kind != AX_TOK_EOF && t->kind != AX_TOK_ERROR) p->pos++;
    return t;
}

static bool accept(parser *p, ax_tok_kind k) {
    if (!at(p, k)) return false;
    advance(p);
    return true;
}

/* The token as a message names it: "name 'x'", "number 2", "')'", "end of line". */
static const char *describe_token(const ax_token *t, char *buf, size_t size) {
    int len = t->len > 40 ? 40 : t->len;
    switch (t->kind) {
    case AX_TOK_NAME:
        snprintf(buf, size, "name '%.*s'", len, t->start);
        break;
    case AX_TOK_INT:
    case AX_TOK_FLOAT:
        snprintf(buf, size, "number %.*s", len, t->start);
        break;
    default:
        snprintf(buf, size, "%s", ax_tok_kind_desc(t->kind));
        break;
    }
    return buf;
}

static ax_token *expect(parser *p, ax_tok_kind k, const char *msg) {
    if (at(p, k)) return advance(p);
    if (at(p, AX_TOK_INDENT)) return error_at(p, cur(p), "unexpected indent");
    return error_at(p, cur(p), "%s", msg);
}

/* The end of the last real token consumed (not a NEWLINE, INDENT or DEDENT). */
static ax_span prev_span(parser *p) {
    int first = p->lx.dropped * AX_TOKEN_BLOCK; /* the earliest token still kept */
    for (int i = p->pos - 1; i >= first; i--) {
        ax_tok_kind k = ax_token_at(&p->lx, i)->kind;
        if (k != AX_TOK_NEWLINE && k != AX_TOK_INDENT && k != AX_TOK_DEDENT)
            return ax_token_at(&p->lx, i)->span;
    }
    return token(p, first)->span;
}

static ax_span join(ax_span a, ax_span b) {
    return (ax_span){a.line, a.col, b.end_line, b.end_col};
}

static bool can_start_expression(ax_tok_kind k) {
    switch (k) {
    case AX_TOK_NAME:
    case AX_TOK_INT:
    case AX_TOK_FLOAT:
    case AX_TOK_STRING:
    case AX_TOK_FSTRING:
    case AX_TOK_TRUE:
    case AX_TOK_FALSE:
    case AX_TOK_NONE:
    case AX_TOK_ELLIPSIS:
    case AX_TOK_LPAREN:
    case AX_TOK_LBRACKET:
    case AX_TOK_LBRACE:
    case AX_TOK_MINUS:
    case AX_TOK_PLUS:
    case AX_TOK_TILDE:
    case AX_TOK_NOT:
    case AX_TOK_LAMBDA:
        return true;
    default:
        return false;
    }
}

/* Counts a level of recursion; false (with an error) past the limit. */
static bool enter(parser *p) {
    if (p->depth >= MAX_NESTING) {
        error_at(p, cur(p), "expression is nested too deeply (more than %d levels)", MAX_NESTING);
        return false;
    }
    p->depth++;
    return true;
}
static void leave(parser *p) {
    p->depth--;
}

/* ---- building nodes ---- */

static ax_node *node_new(parser *p, ax_node_kind kind, ax_span span) {
    ax_node *n = calloc(1, sizeof *n);
    if (!n) return oom(p);
    n->kind = kind;
    n->span = span;
    n->height = 1;
    return n;
}

static void max_height(void *arg, ax_node *child) {
    int *h = arg;
    if (child->height > *h) *h = child->height;
}

/* Sets the height of n's tree from its children, once they are all in place. Past the limit,
 * records the error and frees n: the parse stops here, not after reading the rest of a chain. */
static ax_node *with_height(parser *p, ax_node *n) {
    int h = 0;
    ax_node_each_child(n, max_height, &h);
    n->height = h + 1;
    if (n->height <= MAX_TREE_HEIGHT) return n;
    syntax_error(p, n->span, "expression too complex: nested more than %d levels deep",
                 MAX_TREE_HEIGHT);
    ax_node_free(n);
    return NULL;
}

/* Appends `item` (taking it); on failure frees it and returns false. */
static bool push(parser *p, ax_nodelist *l, ax_node *item) {
    if ((l->n & (l->n - 1)) == 0) { /* grow at powers of two */
        ax_node **items = realloc(l->items, (size_t)(l->n ? 2 * l->n : 2) * sizeof *items);
        if (!items) {
            ax_node_free(item);
            oom(p);
            return false;
        }
        l->items = items;
    }
    l->items[l->n++] = item;
    return true;
}

static char *dup_text(parser *p, const char *s, int len) {
    char *d = malloc((size_t)len + 1);
    if (!d) return oom(p);
    memcpy(d, s, (size_t)len);
    d[len] = 0;
    return d;
}

static char *token_text(parser *p, const ax_token *t) {
    return dup_text(p, t->start, t->len);
}

/* A node with operands a (and b): frees the operands when it cannot be made. */
static ax_node *node2(parser *p, ax_node_kind kind, int op, ax_node *a, ax_node *b) {
    ax_node *n = node_new(p, kind, join(a->span, (b ? b : a)->span));
    if (!n) {
        ax_node_free(a);
        ax_node_free(b);
        return NULL;
    }
    n->op = op;
    n->a = a;
    n->b = b;
    return with_height(p, n);
}

/* Appends a keyword argument (name NULL for **x) to a call; takes name and value. */
static bool push_keyword(parser *p, ax_node *call, char *name, ax_node *value) {
    char **names = realloc(call->kwnames, (size_t)(call->items2.n + 1) * sizeof *names);
    if (!names) {
        free(name);
        ax_node_free(value);
        oom(p);
        return false;
    }
    call->kwnames = names;
    names[call->items2.n] = name;
    if (push(p, &call->items2, value)) return true;
    free(name);
    return false;
}

/* ---- expressions ---- */

static ax_node *parse_test(parser *p);
static ax_node *parse_or(parser *p);
static ax_node *parse_bitor(parser *p);
static ax_node *parse_factor(parser *p);
static int parse_params(parser *p, ax_node *fn, ax_tok_kind end);

/* Closes a bracket: the usual mistake inside one is a missing comma. */
static ax_token *expect_close(parser *p, ax_tok_kind kind, const char *what) {
    if (at(p, kind)) return advance(p);
    ax_token *t = cur(p);
    if (can_start_expression(t->kind))
        return error_at(p, t, "invalid syntax. Perhaps you forgot a comma?");
    if (t->kind == AX_TOK_ASSIGN)
        return error_at(p, t, "invalid syntax. Maybe you meant '==' instead of '='?");
    char d[64];
    return error_at(p, t, "expected %s, found %s", what, describe_token(t, d, sizeof d));
}

static bool is_string_token(ax_tok_kind k) {
    return k == AX_TOK_STRING || k == AX_TOK_FSTRING;
}

/* The expression of an f-string's field, parsed from its own text as if in parentheses (so
 * that it may span lines), with its place in the whole source. */
static ax_node *parse_expression_at(parser *p, const ax_fstring_field *field) {
    size_t n = strlen(field->expr);
    char *src = malloc(n + 3);
    if (!src) return oom(p);
    src[0] = '(';
    memcpy(src + 1, field->expr, n);
    memcpy(src + n + 1, ")", 2);
    parser sub = {.cx = p->cx, .source = p->source, .file = p->file, .depth = p->depth};
    sub.lexer = ax_lexer_new_at(src, field->line, field->col - 1, &sub.lx);
    ax_node *e = sub.lexer ? parse_test(&sub) : oom(p);
    if (e && !at(&sub, AX_TOK_NEWLINE) && !at(&sub, AX_TOK_EOF)) {
        error_at(&sub, cur(&sub), "f-string: invalid expression");
        ax_node_free(e);
        e = NULL;
    }
    if (sub.failed && p->cx->err.kind == AX_ERR_SYNTAX) { /* the error in the f-string's terms */
        char *m = p->cx->err.message, *paren = strstr(m, "')'");
        if (paren) paren[1] = '}'; /* the closing parenthesis stands for the field's brace */
        if (strncmp(m, "f-string", 8) != 0) {
            size_t len = strnlen(m, sizeof p->cx->err.message - 11);
            memmove(m + 10, m, len);
            memcpy(m, "f-string: ", 10);
            m[len + 10] = 0;
        }
    }
    p->failed |= sub.failed;
    ax_lexer_free(sub.lexer);
    ax_token_list_free(&sub.lx);
    free(src);
    return e;
}

/* An f-string (possibly joined with plain literals): template.format(*fields), the template
 * being the literal text with each field as {}, {!r} or {:spec} (see ax_token.str). */
static ax_node *parse_fstring(parser *p, ax_node *template, int ntokens) {
    ax_node *attr = node_new(p, AX_N_ATTR, template->span);
    ax_node *call = attr ? node_new(p, AX_N_CALL, template->span) : NULL;
    if (!attr || !call || !(attr->text = dup_text(p, "format", 6))) {
        ax_node_free(template);
        ax_node_free(attr);
        ax_node_free(call);
        return NULL;
    }
    attr->a = template;
    call->a = attr;
    for (int i = 0; i < ntokens; i++) {
        ax_token *t = peek(p, i - ntokens);
        for (int k = 0; t->kind == AX_TOK_FSTRING && k < t->nfields; k++) {
            ax_node *e = parse_expression_at(p, &t->fields[k]);
            if (!e || !push(p, &call->items, e)) {
                ax_node_free(call);
                return NULL;
            }
        }
    }
    attr->height = template->height + 1;
    return with_height(p, call);
}

/* Adjacent string literals join ("a" "b" is "ab"); with an f-string among them, the plain
 * ones' braces are doubled to stay text in the template. */
static ax_node *parse_string(parser *p) {
    ax_token *first = cur(p);
    size_t len = 0;
    int n = 0;
    bool fmt = false;
    for (; is_string_token(peek(p, n)->kind); n++) {
        fmt |= peek(p, n)->kind == AX_TOK_FSTRING;
        len += 2 * strlen(peek(p, n)->str);
    }
    char *text = malloc(len + 1);
    ax_node *node = text ? node_new(p, AX_N_STR, first->span) : oom(p);
    if (!node) {
        free(text);
        return NULL;
    }
    size_t at = 0;
    for (int i = 0; i < n; i++) {
        ax_token *t = advance(p);
        for (const char *s = t->str; *s; s++) {
            text[at++] = *s;
            if (fmt && t->kind == AX_TOK_STRING && (*s == '{' || *s == '}')) text[at++] = *s;
        }
        node->span = join(first->span, t->span);
    }
    text[at] = 0;
    node->text = text;
    return fmt ? parse_fstring(p, with_height(p, node), n) : node;
}

static ax_node *parse_number(parser *p) {
    ax_token *t = advance(p);
    ax_node *n = node_new(p, t->kind == AX_TOK_INT ? AX_N_INT : AX_N_FLOAT, t->span);
    if (!n) return NULL;
    n->ival = t->ival;
    n->fval = t->fval;
    if (!(n->text = token_text(p, t))) {
        ax_node_free(n);
        return NULL;
    }
    return n;
}

/* `*x` (op 0) or `**x` (op 2): the star token is current. */
static ax_node *parse_starred(parser *p, int op) {
    ax_token *star = advance(p);
    ax_node *v = parse_bitor(p);
    ax_node *n = v ? node2(p, AX_N_STAR, op, v, NULL) : NULL;
    if (n) n->span = join(star->span, v->span);
    return n;
}

static ax_node *parse_star_or_test(parser *p) {
    return at(p, AX_TOK_STAR) ? parse_starred(p, 0) : parse_test(p);
}

static bool parse_comp_clauses(parser *p, ax_node *comp);

/* `element for ... in ...` (element taken): a generator expression, which ax makes as a list
 * (sum(x * x for x in xs), tuple(f(v) for v in vs)). */
static ax_node *parse_generator(parser *p, ax_node *element) {
    ax_node *g = node_new(p, AX_N_LISTCOMP, element->span);
    if (!g) {
        ax_node_free(element);
        return NULL;
    }
    g->op = 1;
    g->a = element;
    if (!parse_comp_clauses(p, g)) {
        ax_node_free(g);
        return NULL;
    }
    g->span = join(element->span, prev_span(p));
    return with_height(p, g);
}

/* The parenthesised form: (), (x), (x,), (x, y), (x for ...). */
static ax_node *parse_paren(parser *p) {
    ax_token *open = advance(p), *close;
    if (at(p, AX_TOK_RPAREN)) {
        close = advance(p);
        return node_new(p, AX_N_TUPLE, join(open->span, close->span));
    }
    ax_node *first = parse_star_or_test(p);
    if (!first) return NULL;
    if (at(p, AX_TOK_FOR) && first->kind != AX_N_STAR) {
        if (!(first = parse_generator(p, first))) return NULL;
        if (!(close = expect_close(p, AX_TOK_RPAREN, "')'"))) {
            ax_node_free(first);
            return NULL;
        }
        first->span = join(open->span, close->span);
        return first;
    }
    if (!at(p, AX_TOK_COMMA)) {
        if (!(close = expect_close(p, AX_TOK_RPAREN, "')'"))) {
            ax_node_free(first);
            return NULL;
        }
        if (first->kind == AX_N_STAR) {
            ax_node_free(first);
            return syntax_error(p, join(open->span, close->span),
                                "cannot use starred expression here");
        }
        first->span = join(open->span, close->span); /* carets then show the parentheses */
        return first;
    }
    ax_node *tuple = node_new(p, AX_N_TUPLE, open->span);
    if (!tuple || !push(p, &tuple->items, first)) {
        if (!tuple) ax_node_free(first);
        ax_node_free(tuple);
        return NULL;
    }
    while (accept(p, AX_TOK_COMMA) && !at(p, AX_TOK_RPAREN)) {
        ax_node *item = parse_star_or_test(p);
        if (!item || !push(p, &tuple->items, item)) {
            ax_node_free(tuple);
            return NULL;
        }
    }
    if (!(close = expect_close(p, AX_TOK_RPAREN, "')'"))) {
        ax_node_free(tuple);
        return NULL;
    }
    tuple->span = join(open->span, close->span);
    return with_height(p, tuple);
}

static ax_node *parse_target_list(parser *p);
static bool check_target(parser *p, const ax_node *t, bool top, bool hint);

/* The `for ... in ... if ...` clauses of a list comprehension, appended to comp->items. */
static bool parse_comp_clauses(parser *p, ax_node *comp) {
    while (at(p, AX_TOK_FOR)) {
        ax_token *for_tok = advance(p);
        ax_node *clause = node_new(p, AX_N_COMPFOR, for_tok->span);
        if (!clause || !push(p, &comp->items, clause)) return false;
        if (!(clause->a = parse_target_list(p))) return false;
        if (!check_target(p, clause->a, true, false)) return false;
        if (!expect(p, AX_TOK_IN, "expected 'in' after the target of 'for'")) return false;
        if (!(clause->b = parse_or(p))) return false;
        while (accept(p, AX_TOK_IF)) {
            ax_node *cond = parse_or(p);
            if (!cond || !push(p, &clause->items, cond)) return false;
        }
        clause->span = join(for_tok->span, prev_span(p));
        int i = comp->items.n - 1;
        if (!(comp->items.items[i] = with_height(p, clause))) {
            comp->items.n--;
            return false;
        }
    }
    return true;
}

static ax_node *parse_list(parser *p) {
    ax_token *open = advance(p), *close;
    ax_node *list = node_new(p, AX_N_LIST, open->span);
    if (!list) return NULL;
    if (!at(p, AX_TOK_RBRACKET)) {
        ax_node *first = parse_star_or_test(p);
        if (!first || !push(p, &list->items, first)) goto fail;
        if (at(p, AX_TOK_FOR)) {
            if (first->kind == AX_N_STAR) {
                syntax_error(p, first->span,
                             "iterable unpacking cannot be used in a comprehension");
                goto fail;
            }
            list->kind = AX_N_LISTCOMP;
            list->a = first;
            list->items.n = 0;
            if (!parse_comp_clauses(p, list)) goto fail;
        } else {
            while (accept(p, AX_TOK_COMMA) && !at(p, AX_TOK_RBRACKET)) {
                ax_node *item = parse_star_or_test(p);
                if (!item || !push(p, &list->items, item)) goto fail;
            }
        }
    }
    if (!(close = expect_close(p, AX_TOK_RBRACKET, "']'"))) goto fail;
    list->span = join(open->span, close->span);
    return with_height(p, list);
fail:
    ax_node_free(list);
    return NULL;
}

/* `**x` in a dict display: a key AX_N_STAR (op 2) with no value. */
static bool parse_dict_unpacking(parser *p, ax_node *dict) {
    ax_node *star = parse_starred(p, 2);
    return star && push(p, &dict->items, star) && push(p, &dict->items2, NULL);
}

/* The entries after the first of a dict display: `key: value` or `**x`. */
static bool parse_dict_entries(parser *p, ax_node *dict) {
    while (accept(p, AX_TOK_COMMA) && !at(p, AX_TOK_RBRACE)) {
        if (at(p, AX_TOK_DSTAR)) {
            if (!parse_dict_unpacking(p, dict)) return false;
            continue;
        }
        ax_node *key = parse_test(p);
        if (!key || !push(p, &dict->items, key)) return false;
        if (!expect(p, AX_TOK_COLON, "':' expected after dictionary key")) return false;
        ax_node *value = parse_test(p);
        if (!value || !push(p, &dict->items2, value)) return false;
        if (at(p, AX_TOK_FOR))
            return error_at(p, cur(p), "a dict comprehension has one `key: value` entry");
    }
    return true;
}

/* The items after the first of a set display. */
static bool parse_set_items(parser *p, ax_node *set) {
    while (accept(p, AX_TOK_COMMA) && !at(p, AX_TOK_RBRACE)) {
        ax_node *item = parse_star_or_test(p);
        if (!item || !push(p, &set->items, item)) return false;
    }
    return true;
}

/* What follows the first entry of a brace display: a dict (first `key: value` or `**x`), a
 * dict comprehension, a set or a set comprehension. */
static bool parse_brace_rest(parser *p, ax_node *n, ax_node *first) {
    if (first->kind == AX_N_STAR && first->op == 2) {
        n->kind = AX_N_DICT;
        return push(p, &n->items, first) && push(p, &n->items2, NULL) && parse_dict_entries(p, n);
    }
    if (accept(p, AX_TOK_COLON)) {
        if (first->kind == AX_N_STAR) {
            syntax_error(p, first->span, "cannot use a starred expression as a dict key");
            ax_node_free(first);
            return false;
        }
        ax_node *value = parse_test(p);
        if (!value) {
            ax_node_free(first);
            return false;
        }
        if (at(p, AX_TOK_FOR)) {
            n->kind = AX_N_DICTCOMP;
            n->a = first;
            n->b = value;
            return parse_comp_clauses(p, n);
        }
        n->kind = AX_N_DICT;
        if (!push(p, &n->items, first)) {
            ax_node_free(value);
            return false;
        }
        return push(p, &n->items2, value) && parse_dict_entries(p, n);
    }
    if (at(p, AX_TOK_FOR)) {
        if (first->kind == AX_N_STAR) {
            syntax_error(p, first->span, "iterable unpacking cannot be used in a comprehension");
            ax_node_free(first);
            return false;
        }
        n->kind = AX_N_SETCOMP;
        n->a = first;
        return parse_comp_clauses(p, n);
    }
    n->kind = AX_N_SET;
    return push(p, &n->items, first) && parse_set_items(p, n);
}

/* {}, {k: v, **d}, {k: v for ...}, {a, *b}, {a for ...}. */
static ax_node *parse_brace(parser *p) {
    ax_token *open = advance(p), *close;
    ax_node *n = node_new(p, AX_N_DICT, open->span);
    if (!n) return NULL;
    if (!at(p, AX_TOK_RBRACE)) {
        ax_node *first = at(p, AX_TOK_DSTAR) ? parse_starred(p, 2) : parse_star_or_test(p);
        if (!first || !parse_brace_rest(p, n, first)) goto fail;
    }
    if (!(close = expect_close(p, AX_TOK_RBRACE, "'}'"))) goto fail;
    n->span = join(open->span, close->span);
    return with_height(p, n);
fail:
    ax_node_free(n);
    return NULL;
}

static ax_node *parse_atom(parser *p) {
    ax_token *t = cur(p);
    ax_node_kind kind;
    switch (t->kind) {
    case AX_TOK_NAME: {
        ax_node *n = node_new(p, AX_N_NAME, t->span);
        if (n && !(n->text = token_text(p, t))) {
            ax_node_free(n);
            return NULL;
        }
        advance(p);
        return n;
    }
    case AX_TOK_INT:
    case AX_TOK_FLOAT:
        return parse_number(p);
    case AX_TOK_STRING:
    case AX_TOK_FSTRING:
        return parse_string(p);
    case AX_TOK_LPAREN:
        return parse_paren(p);
    case AX_TOK_LBRACKET:
        return parse_list(p);
    case AX_TOK_LBRACE:
        return parse_brace(p);
    case AX_TOK_TRUE:
        kind = AX_N_TRUE;
        break;
    case AX_TOK_FALSE:
        kind = AX_N_FALSE;
        break;
    case AX_TOK_NONE:
        kind = AX_N_NONE;
        break;
    case AX_TOK_ELLIPSIS:
        kind = AX_N_ELLIPSIS;
        break;
    case AX_TOK_INDENT:
        return error_at(p, t, "unexpected indent");
    case AX_TOK_STAR:
        return error_at(p, t, "cannot use starred expression here");
    default: {
        char d[64];
        return error_at(p, t, "expected an expression, found %s", describe_token(t, d, sizeof d));
    }
    }
    advance(p);
    return node_new(p, kind, t->span);
}

/* `name=value` or `**value` (name NULL) in a call. */
static bool parse_keyword_argument(parser *p, ax_node *call) {
    ax_token *t = advance(p);
    char *name = NULL;
    if (t->kind == AX_TOK_NAME) {
        advance(p); /* the '=' */
        if (!(name = token_text(p, t))) return false;
        for (int i = 0; i < call->items2.n; i++)
            if (call->kwnames[i] && !strcmp(call->kwnames[i], name)) {
                syntax_error(p, t->span, "keyword argument repeated: %s", name);
                free(name);
                return false;
            }
    }
    ax_node *v = parse_test(p);
    if (!v) {
        free(name);
        return false;
    }
    return push_keyword(p, call, name, v);
}

/* `value` or `*value` in a call, after `seen_keyword` / `seen_dstar` arguments. */
static bool parse_positional_argument(parser *p, ax_node *call, bool seen_keyword,
                                      bool seen_dstar) {
    bool star = at(p, AX_TOK_STAR);
    ax_node *v = star ? parse_star_or_test(p) : parse_test(p);
    if (v && !star && at(p, AX_TOK_FOR)) { /* f(x for x in xs): the only argument */
        if (call->items.n || call->items2.n) {
            ax_node_free(v);
            return error_at(p, cur(p), "a generator expression must be parenthesized");
        }
        v = parse_generator(p, v);
        if (v && at(p, AX_TOK_COMMA) && peek(p, 1)->kind != AX_TOK_RPAREN) {
            syntax_error(p, v->span, "a generator expression must be parenthesized");
            ax_node_free(v);
            return false;
        }
    }
    if (!v || !push(p, &call->items, v)) return false;
    if (at(p, AX_TOK_ASSIGN))
        return syntax_error(p, v->span,
                            "expression cannot contain assignment, perhaps you meant \"==\"?");
    if (star && seen_dstar)
        return syntax_error(p, v->span,
                            "iterable argument unpacking follows keyword argument unpacking");
    if (!star && seen_dstar)
        return syntax_error(p, v->span, "positional argument follows keyword argument unpacking");
    if (!star && seen_keyword)
        return syntax_error(p, v->span, "positional argument follows keyword argument");
    return true;
}

/* Call arguments: positional, *x, name=value, **x, in Python's order rules. */
static bool parse_arguments(parser *p, ax_node *call) {
    bool seen_keyword = false, seen_dstar = false;
    while (!at(p, AX_TOK_RPAREN)) {
        ax_token *t = cur(p);
        if (t->kind == AX_TOK_DSTAR ||
            (t->kind == AX_TOK_NAME && peek(p, 1)->kind == AX_TOK_ASSIGN)) {
            if (!parse_keyword_argument(p, call)) return false;
            seen_keyword |= t->kind == AX_TOK_NAME;
            seen_dstar |= t->kind == AX_TOK_DSTAR;
        } else if (!parse_positional_argument(p, call, seen_keyword, seen_dstar)) {
            return false;
        }
        if (!accept(p, AX_TOK_COMMA)) break;
    }
    return true;
}

static ax_node *parse_call(parser *p, ax_node *callee) {
    ax_node *call = node2(p, AX_N_CALL, 0, callee, NULL);
    if (!call) return NULL;
    advance(p);
    ax_token *close;
    if (!parse_arguments(p, call) || !(close = expect_close(p, AX_TOK_RPAREN, "')'"))) {
        ax_node_free(call);
        return NULL;
    }
    call->span = join(callee->span, close->span);
    return with_height(p, call);
}

/* One entry of an index: an expression or a slice lo:hi:step. */
static ax_node *parse_index_entry(parser *p) {
    ax_token *start = cur(p);
    ax_node *lo = NULL;
    if (at(p, AX_TOK_STAR))
        return error_at(p, start, "starred expressions are not supported in an index");
    if (!at(p, AX_TOK_COLON)) {
        if (!(lo = parse_test(p)) || !at(p, AX_TOK_COLON)) return lo;
    }
    ax_node *slice = node_new(p, AX_N_SLICE, start->span);
    if (!slice) {
        ax_node_free(lo);
        return NULL;
    }
    slice->a = lo;
    advance(p);
#define ENDS_PART(p) (at(p, AX_TOK_COLON) || at(p, AX_TOK_COMMA) || at(p, AX_TOK_RBRACKET))
    if (!ENDS_PART(p) && !(slice->b = parse_test(p))) goto fail;
    if (accept(p, AX_TOK_COLON) && !ENDS_PART(p) && !(slice->c = parse_test(p))) goto fail;
#undef ENDS_PART
    slice->span = join(start->span, prev_span(p));
    return with_height(p, slice);
fail:
    ax_node_free(slice);
    return NULL;
}

static ax_node *parse_subscript(parser *p, ax_node *obj) {
    ax_node *index = node2(p, AX_N_INDEX, 0, obj, NULL);
    if (!index) return NULL;
    advance(p);
    ax_token *close;
    if (at(p, AX_TOK_RBRACKET)) {
        error_at(p, cur(p), "expected an index between '[' and ']'");
        goto fail;
    }
    do {
        ax_node *entry = parse_index_entry(p);
        if (!entry || !push(p, &index->items, entry)) goto fail;
    } while (accept(p, AX_TOK_COMMA) && !at(p, AX_TOK_RBRACKET));
    if (!(close = expect_close(p, AX_TOK_RBRACKET, "']'"))) goto fail;
    index->span = join(obj->span, close->span);
    return with_height(p, index);
fail:
    ax_node_free(index);
    return NULL;
}

static ax_node *parse_attribute(parser *p, ax_node *obj) {
    advance(p);
    ax_token *name = cur(p);
    if (name->kind != AX_TOK_NAME) {
        ax_node_free(obj);
        char d[64];
        return error_at(p, name, "expected an attribute name after '.', found %s",
                        describe_token(name, d, sizeof d));
    }
    advance(p);
    ax_node *n = node2(p, AX_N_ATTR, 0, obj, NULL);
    if (n && !(n->text = token_text(p, name))) {
        ax_node_free(n);
        return NULL;
    }
    if (n) n->span = join(obj->span, name->span);
    return n;
}

/* Calls, indexing and attributes, left to right. */
static ax_node *parse_postfix(parser *p) {
    ax_node *n = parse_atom(p);
    while (n) {
        if (at(p, AX_TOK_LPAREN))
            n = parse_call(p, n);
        else if (at(p, AX_TOK_LBRACKET))
            n = parse_subscript(p, n);
        else if (at(p, AX_TOK_DOT))
            n = parse_attribute(p, n);
        else
            break;
    }
    return n;
}

/* x ** y: the exponent is a unary expression (2 ** -1), and -x ** 2 is -(x ** 2). */
static ax_node *parse_power(parser *p) {
    ax_node *base = parse_postfix(p);
    if (!base || !at(p, AX_TOK_DSTAR)) return base;
    if (!enter(p)) {
        ax_node_free(base);
        return NULL;
    }
    advance(p);
    ax_node *exponent = parse_factor(p);
    leave(p);
    if (!exponent) {
        ax_node_free(base);
        return NULL;
    }
    return node2(p, AX_N_BINOP, AX_OP_POW, base, exponent);
}

static ax_node *parse_factor(parser *p) {
    ax_tok_kind k = cur(p)->kind;
    if (k != AX_TOK_MINUS && k != AX_TOK_PLUS && k != AX_TOK_TILDE) return parse_power(p);
    if (!enter(p)) return NULL;
    ax_token *op = advance(p);
    ax_node *operand = parse_factor(p);
    leave(p);
    if (!operand) return NULL;
    ax_node *n = node2(p, AX_N_UNARY,
                       k == AX_TOK_MINUS  ? AX_OP_NEG
                       : k == AX_TOK_PLUS ? AX_OP_POS
                                          : AX_OP_INVERT,
                       operand, NULL);
    if (n) n->span = join(op->span, operand->span);
    return n;
}

/* The binary levels from | down to * / // % @, each left-associative. */
static const struct {
    ax_tok_kind tok[5];
    ax_binop op[5];
    int n;
} binary_levels[] = {
    {{AX_TOK_PIPE}, {AX_OP_BITOR}, 1},
    {{AX_TOK_CARET}, {AX_OP_BITXOR}, 1},
    {{AX_TOK_AMP}, {AX_OP_BITAND}, 1},
    {{AX_TOK_LSHIFT, AX_TOK_RSHIFT}, {AX_OP_LSHIFT, AX_OP_RSHIFT}, 2},
    {{AX_TOK_PLUS, AX_TOK_MINUS}, {AX_OP_ADD, AX_OP_SUB}, 2},
    {{AX_TOK_STAR, AX_TOK_SLASH, AX_TOK_DSLASH, AX_TOK_PERCENT, AX_TOK_AT},
     {AX_OP_MUL, AX_OP_DIV, AX_OP_FLOORDIV, AX_OP_MOD, AX_OP_MATMUL},
     5},
};
#define NLEVELS ((int)(sizeof binary_levels / sizeof binary_levels[0]))

static int level_op(int level, ax_tok_kind k) {
    for (int i = 0; i < binary_levels[level].n; i++)
        if (binary_levels[level].tok[i] == k) return binary_levels[level].op[i];
    return -1;
}

static ax_node *parse_binary(parser *p, int level) {
    if (level == NLEVELS) return parse_factor(p);
    ax_node *left = parse_binary(p, level + 1);
    int op;
    while (left && (op = level_op(level, cur(p)->kind)) >= 0) {
        advance(p);
        ax_node *right = parse_binary(p, level + 1);
        if (!right) {
            ax_node_free(left);
            return NULL;
        }
        left = node2(p, AX_N_BINOP, op, left, right);
    }
    return left;
}

static ax_node *parse_bitor(parser *p) {
    return parse_binary(p, 0);
}

/* The comparison operator at the cursor (consuming it), or -1. */
static int take_comparison(parser *p) {
    static const struct {
        ax_tok_kind tok;
        ax_cmpop op;
    } simple[] = {{AX_TOK_LT, AX_CMP_LT}, {AX_TOK_LE, AX_CMP_LE}, {AX_TOK_GT, AX_CMP_GT},
                  {AX_TOK_GE, AX_CMP_GE}, {AX_TOK_EQ, AX_CMP_EQ}, {AX_TOK_NE, AX_CMP_NE},
                  {AX_TOK_IN, AX_CMP_IN}};
    ax_tok_kind k = cur(p)->kind;
    for (size_t i = 0; i < sizeof simple / sizeof simple[0]; i++)
        if (simple[i].tok == k) {
            advance(p);
            return simple[i].op;
        }
    if (k == AX_TOK_NOT && peek(p, 1)->kind == AX_TOK_IN) {
        advance(p), advance(p);
        return AX_CMP_NOT_IN;
    }
    if (k == AX_TOK_IS) {
        advance(p);
        return accept(p, AX_TOK_NOT) ? AX_CMP_IS_NOT : AX_CMP_IS;
    }
    return -1;
}

static ax_node *parse_comparison(parser *p) {
    ax_node *first = parse_bitor(p);
    if (!first) return NULL;
    ax_node *cmp = NULL;
    int op;
    while ((op = take_comparison(p)) >= 0) {
        if (!cmp && !(cmp = node2(p, AX_N_COMPARE, 0, first, NULL))) return NULL;
        int *ops = realloc(cmp->ops, (size_t)(cmp->items.n + 1) * sizeof *ops);
        if (!ops) {
            ax_node_free(cmp);
            return oom(p);
        }
        cmp->ops = ops;
        ops[cmp->items.n] = op;
        ax_node *right = parse_bitor(p);
        if (!right || !push(p, &cmp->items, right)) {
            ax_node_free(cmp);
            return NULL;
        }
        cmp->span = join(first->span, right->span);
    }
    return cmp ? with_height(p, cmp) : first;
}

static ax_node *parse_not(parser *p) {
    if (!at(p, AX_TOK_NOT)) return parse_comparison(p);
    if (!enter(p)) return NULL;
    ax_token *op = advance(p);
    ax_node *operand = parse_not(p);
    leave(p);
    if (!operand) return NULL;
    ax_node *n = node2(p, AX_N_NOT, 0, operand, NULL);
    if (n) n->span = join(op->span, operand->span);
    return n;
}

static ax_node *parse_logic(parser *p, bool is_or) {
    ax_node *left = is_or ? parse_logic(p, false) : parse_not(p);
    while (left && accept(p, is_or ? AX_TOK_OR : AX_TOK_AND)) {
        ax_node *right = is_or ? parse_logic(p, false) : parse_not(p);
        if (!right) {
            ax_node_free(left);
            return NULL;
        }
        left = node2(p, is_or ? AX_N_OR : AX_N_AND, 0, left, right);
    }
    return left;
}

static ax_node *parse_or(parser *p) {
    return parse_logic(p, true);
}

static ax_node *parse_lambda(parser *p) {
    ax_token *kw = advance(p);
    ax_node *fn = node_new(p, AX_N_LAMBDA, kw->span);
    if (!fn) return NULL;
    if (parse_params(p, fn, AX_TOK_COLON) < 0 ||
        !expect(p, AX_TOK_COLON, "expected ':' after the parameters of 'lambda'") ||
        !(fn->a = parse_test(p))) {
        ax_node_free(fn);
        return NULL;
    }
    fn->span = join(kw->span, fn->a->span);
    return with_height(p, fn);
}

/* `value if cond else other`, with `value` already parsed (taken). */
static ax_node *parse_ifexp(parser *p, ax_node *value) {
    ax_node *n = node_new(p, AX_N_IFEXP, value->span);
    if (!n) {
        ax_node_free(value);
        return NULL;
    }
    n->b = value;
    advance(p);
    if (!(n->a = parse_or(p))) goto fail;
    if (!at(p, AX_TOK_ELSE)) {
        syntax_error(p, join(value->span, n->a->span), "expected 'else' after 'if' expression");
        goto fail;
    }
    advance(p);
    if (!(n->c = parse_test(p))) goto fail;
    n->span = join(value->span, n->c->span);
    return with_height(p, n);
fail:
    ax_node_free(n);
    return NULL;
}

/* A full expression: lambda, or `a if cond else b`, or an or-test. */
static ax_node *parse_test(parser *p) {
    if (!enter(p)) return NULL;
    bool is_lambda = at(p, AX_TOK_LAMBDA);
    ax_node *n = is_lambda ? parse_lambda(p) : parse_or(p);
    if (n && !is_lambda && at(p, AX_TOK_IF)) n = parse_ifexp(p, n);
    leave(p);
    return n;
}

/* Comma-separated expressions (with *x entries): one expression, or a tuple when there is a
 * comma. `target` parses bit-or expressions only (for loop targets), so that the `in` of a
 * for loop is not read as a comparison. */
static ax_node *parse_expr_list(parser *p, bool target) {
    ax_node *(*item_fn)(parser *) = target ? parse_bitor : parse_test;
    ax_token *start = cur(p);
    ax_node *first;
    if (at(p, AX_TOK_STAR)) {
        advance(p);
        ax_node *v = parse_bitor(p);
        first = v ? node2(p, AX_N_STAR, 0, v, NULL) : NULL;
        if (first) first->span = join(start->span, v->span);
    } else {
        first = item_fn(p);
    }
    if (!first || !at(p, AX_TOK_COMMA)) return first;
    ax_node *tuple = node_new(p, AX_N_TUPLE, first->span);
    if (!tuple || !push(p, &tuple->items, first)) {
        if (!tuple) ax_node_free(first);
        ax_node_free(tuple);
        return NULL;
    }
    while (accept(p, AX_TOK_COMMA) && (can_start_expression(cur(p)->kind) || at(p, AX_TOK_STAR))) {
        ax_node *item = at(p, AX_TOK_STAR) ? parse_starred(p, 0) : item_fn(p);
        if (!item || !push(p, &tuple->items, item)) {
            ax_node_free(tuple);
            return NULL;
        }
    }
    tuple->span = join(start->span, prev_span(p));
    return with_height(p, tuple);
}

static ax_node *parse_target_list(parser *p) {
    return parse_expr_list(p, true);
}
static ax_node *parse_testlist(parser *p) {
    return parse_expr_list(p, false);
}

/* ---- assignment targets ---- */

static const char *describe_node(const ax_node *n) {
    switch (n->kind) {
    case AX_N_INT:
    case AX_N_FLOAT:
    case AX_N_STR:
        return "a literal";
    case AX_N_TRUE:
        return "True";
    case AX_N_FALSE:
        return "False";
    case AX_N_NONE:
        return "None";
    case AX_N_ELLIPSIS:
        return "Ellipsis";
    case AX_N_COMPARE:
        return "a comparison";
    case AX_N_IFEXP:
        return "a conditional expression";
    case AX_N_CALL:
        return "a function call";
    case AX_N_LAMBDA:
        return "a lambda";
    case AX_N_LISTCOMP:
        return "a list comprehension";
    case AX_N_DICT:
        return "a dict literal";
    case AX_N_TUPLE:
        return "a tuple";
    case AX_N_LIST:
        return "a list";
    default:
        return "an expression";
    }
}

/* Checks that `t` can be assigned to: a name, x[i] or x.a (the evaluator explains that those
 * cannot change), or a tuple/list of targets with at most one *starred entry. `hint` adds
 * Python's "did you mean '=='" for a top-level `=`. */
static bool check_target(parser *p, const ax_node *t, bool top, bool hint) {
    switch (t->kind) {
    case AX_N_NAME:
    case AX_N_INDEX:
    case AX_N_ATTR:
        return true;
    case AX_N_STAR:
        if (top) {
            syntax_error(p, t->span, "starred assignment target must be in a list or tuple");
            return false;
        }
        return check_target(p, t->a, false, false);
    case AX_N_TUPLE:
    case AX_N_LIST: {
        int stars = 0;
        for (int i = 0; i < t->items.n; i++) {
            const ax_node *item = t->items.items[i];
            if (item->kind == AX_N_STAR && ++stars > 1) {
                syntax_error(p, t->span, "multiple starred expressions in assignment");
                return false;
            }
            if (!check_target(p, item, false, false)) return false;
        }
        return true;
    }
    default:
        if (hint && top)
            syntax_error(p, t->span,
                         "cannot assign to %s here. Maybe you meant '==' instead of '='?",
                         describe_node(t));
        else
            syntax_error(p, t->span, "cannot assign to %s", describe_node(t));
        return false;
    }
}

/* ---- parameters ---- */

static bool add_param(parser *p, ax_node *fn, const ax_token *name, ax_param param) {
    for (int i = 0; i < fn->nparams; i++)
        if ((int)strlen(fn->params[i].name) == name->len &&
            !memcmp(fn->params[i].name, name->start, (size_t)name->len)) {
            syntax_error(p, name->span, "duplicate argument '%.*s' in function definition",
                         name->len, name->start);
            ax_node_free(param.default_value);
            return false;
        }
    ax_param *params = realloc(fn->params, (size_t)(fn->nparams + 1) * sizeof *params);
    if (params) fn->params = params;
    if (!params || !(param.name = token_text(p, name))) {
        ax_node_free(param.default_value);
        oom(p);
        return false;
    }
    fn->params[fn->nparams++] = param;
    return true;
}

static ax_token *param_name(parser *p, const char *after) {
    if (at(p, AX_TOK_NAME)) return advance(p);
    char d[64];
    return error_at(p, cur(p), "expected a parameter name%s, found %s", after,
                    describe_token(cur(p), d, sizeof d));
}

/* One parameter: name, name=default, *name, **name, or a bare *. */
static bool parse_param(parser *p, ax_node *fn, ax_tok_kind end, bool *kwonly, bool *seen_default,
                        const ax_token **bare_star, bool *seen_star) {
    ax_token *t = cur(p);
    if (t->kind == AX_TOK_SLASH)
        return error_at(p, t, "positional-only parameters ('/') are not supported");
    if (t->kind == AX_TOK_DSTAR || t->kind == AX_TOK_STAR) {
        bool two = t->kind == AX_TOK_DSTAR;
        advance(p);
        if (!two && *seen_star) return error_at(p, t, "* argument may appear only once");
        if (!two) *seen_star = *kwonly = true;
        if (!two && !at(p, AX_TOK_NAME)) {
            *bare_star = t;
            return true;
        }
        ax_token *name = param_name(p, two ? " after '**'" : "");
        if (!name) return false;
        if (at(p, AX_TOK_ASSIGN))
            return error_at(p, cur(p), "var-%s argument cannot have default value",
                            two ? "keyword" : "positional");
        return add_param(p, fn, name, (ax_param){.star = !two, .star2 = two});
    }
    ax_token *name = param_name(p, "");
    if (!name) return false;
    if (at(p, AX_TOK_COLON) && end == AX_TOK_RPAREN)
        return error_at(p, cur(p), "type annotations are not supported");
    ax_param param = {.kwonly = *kwonly};
    *bare_star = NULL;
    if (accept(p, AX_TOK_ASSIGN)) {
        if (!(param.default_value = parse_test(p))) return false;
        if (!*kwonly) *seen_default = true;
    } else if (*seen_default && !*kwonly) {
        return syntax_error(p, name->span, "non-default argument follows default argument");
    }
    return add_param(p, fn, name, param);
}

/* The parameters of a def (up to ')') or a lambda (up to ':'). */
static int parse_params(parser *p, ax_node *fn, ax_tok_kind end) {
    bool kwonly = false, seen_default = false, seen_star = false;
    const ax_token *bare_star = NULL;
    while (!at(p, end)) {
        if (fn->nparams > 0 && fn->params[fn->nparams - 1].star2) {
            error_at(p, cur(p), "arguments cannot follow var-keyword argument");
            return -1;
        }
        if (!parse_param(p, fn, end, &kwonly, &seen_default, &bare_star, &seen_star)) return -1;
        if (!accept(p, AX_TOK_COMMA)) break;
    }
    if (bare_star) {
        syntax_error(p, bare_star->span, "named arguments must follow bare *");
        return -1;
    }
    return 0;
}

/* ---- statements ---- */

static int parse_statement(parser *p, ax_nodelist *out);
static int parse_simple_statements(parser *p, ax_nodelist *out);

static bool is_compound_start(ax_tok_kind k) {
    return k == AX_TOK_DEF || k == AX_TOK_IF || k == AX_TOK_FOR || k == AX_TOK_WHILE ||
           k == AX_TOK_AT;
}

/* The block after a header's ':': an indented block, or simple statements on the same line.
 * `what` names the header for the error ("'if' statement"). */
static int parse_block(parser *p, ax_nodelist *out, const ax_token *header, const char *what) {
    if (!accept(p, AX_TOK_NEWLINE)) {
        if (is_compound_start(cur(p)->kind)) {
            error_at(p, cur(p),
                     "%s cannot follow ':' on the same line; start it on a new, "
                     "indented line",
                     ax_tok_kind_desc(cur(p)->kind));
            return -1;
        }
        return parse_simple_statements(p, out);
    }
    if (!at(p, AX_TOK_INDENT)) {
        error_at(p, cur(p), "expected an indented block after %s on line %d", what,
                 header->span.line);
        return -1;
    }
    advance(p);
    while (!at(p, AX_TOK_DEDENT) && !at(p, AX_TOK_EOF))
        if (parse_statement(p, out) < 0) return -1;
    return expect(p, AX_TOK_DEDENT, "expected the end of the block") ? 0 : -1;
}

/* `:` after a header; `if x = 1:` gets Python's hint. */
static bool expect_colon(parser *p, const char *msg) {
    if (at(p, AX_TOK_ASSIGN)) {
        error_at(p, cur(p), "invalid syntax. Maybe you meant '==' instead of '='?");
        return false;
    }
    return expect(p, AX_TOK_COLON, msg) != NULL;
}

static ax_node *parse_def(parser *p) {
    ax_token *kw = advance(p);
    char d[64];
    if (!at(p, AX_TOK_NAME))
        return error_at(p, cur(p), "expected a function name after 'def', found %s",
                        describe_token(cur(p), d, sizeof d));
    ax_token *name = advance(p);
    ax_node *fn = node_new(p, AX_N_DEF, kw->span);
    if (!fn) return NULL;
    if (!(fn->text = token_text(p, name))) goto fail;
    if (!expect(p, AX_TOK_LPAREN, "expected '(' after the function name")) goto fail;
    if (parse_params(p, fn, AX_TOK_RPAREN) < 0) goto fail;
    if (!expect_close(p, AX_TOK_RPAREN, "',' or ')' in the parameter list")) goto fail;
    if (at(p, AX_TOK_ARROW)) {
        error_at(p, cur(p), "return type annotations are not supported");
        goto fail;
    }
    if (!expect_colon(p, "expected ':' after the parameters of 'def'")) goto fail;
    if (parse_block(p, &fn->body, kw, "function definition") < 0) goto fail;
    fn->span = join(kw->span, prev_span(p));
    return fn;
fail:
    ax_node_free(fn);
    return NULL;
}

static ax_node *parse_decorated(parser *p) {
    ax_nodelist decorators = {0};
    while (at(p, AX_TOK_AT)) {
        advance(p);
        ax_node *d = parse_test(p);
        if (!d || !push(p, &decorators, d)) goto fail;
        if (!expect(p, AX_TOK_NEWLINE, "expected the end of the line after the decorator"))
            goto fail;
    }
    if (!at(p, AX_TOK_DEF)) {
        expect(p, AX_TOK_DEF, "expected 'def' after a decorator");
        goto fail;
    }
    ax_node *fn = parse_def(p);
    if (!fn) goto fail;
    fn->items = decorators;
    return fn;
fail:
    for (int i = 0; i < decorators.n; i++) ax_node_free(decorators.items[i]);
    free(decorators.items);
    return NULL;
}

/* if / elif / else: an elif is an AX_N_IF alone in the orelse of the one before. */
static ax_node *parse_if_clause(parser *p) {
    ax_token *kw = advance(p);
    bool is_elif = kw->kind == AX_TOK_ELIF;
    ax_node *n = node_new(p, AX_N_IF, kw->span);
    if (!n) return NULL;
    if (!(n->a = parse_test(p)) ||
        !expect_colon(p, is_elif ? "expected ':' after the condition of 'elif'"
                                 : "expected ':' after the condition of 'if'") ||
        parse_block(p, &n->body, kw, is_elif ? "'elif' statement" : "'if' statement") < 0) {
        ax_node_free(n);
        return NULL;
    }
    n->span = join(kw->span, prev_span(p));
    return n;
}

static ax_node *parse_if(parser *p) {
    ax_node *root = parse_if_clause(p), *last = root;
    while (last && at(p, AX_TOK_ELIF)) {
        ax_node *next = parse_if_clause(p);
        if (!next || !push(p, &last->orelse, next)) goto fail;
        last = next;
    }
    if (last && at(p, AX_TOK_ELSE)) {
        ax_token *kw = advance(p);
        if (!expect_colon(p, "expected ':' after 'else'") ||
            parse_block(p, &last->orelse, kw, "'else' statement") < 0)
            goto fail;
    }
    if (root) { /* each clause's span reaches the end of the whole statement */
        ax_span end = prev_span(p);
        for (ax_node *n = root;; n = n->orelse.items[0]) {
            n->span = join(n->span, end);
            if (n == last) break;
        }
    }
    return root;
fail:
    ax_node_free(root);
    return NULL;
}

static ax_node *parse_for(parser *p) {
    ax_token *kw = advance(p);
    ax_node *n = node_new(p, AX_N_FOR, kw->span);
    if (!n) return NULL;
    if (!(n->a = parse_target_list(p)) || !check_target(p, n->a, true, false) ||
        !expect(p, AX_TOK_IN, "expected 'in' after the target of 'for'") ||
        !(n->b = parse_testlist(p)) || !expect_colon(p, "expected ':' after 'for ... in ...'") ||
        parse_block(p, &n->body, kw, "'for' statement") < 0) {
        ax_node_free(n);
        return NULL;
    }
    n->span = join(kw->span, prev_span(p));
    return n;
}

static ax_node *parse_while(parser *p) {
    ax_token *kw = advance(p);
    ax_node *n = node_new(p, AX_N_WHILE, kw->span);
    if (!n) return NULL;
    if (!(n->a = parse_test(p)) ||
        !expect_colon(p, "expected ':' after the condition of 'while'") ||
        parse_block(p, &n->body, kw, "'while' statement") < 0) {
        ax_node_free(n);
        return NULL;
    }
    n->span = join(kw->span, prev_span(p));
    return n;
}

/* a.b.c as one string. */
static char *parse_dotted_name(parser *p, const char *what) {
    char d[64];
    if (!at(p, AX_TOK_NAME))
        return error_at(p, cur(p), "expected a module name after '%s', found %s", what,
                        describe_token(cur(p), d, sizeof d));
    int first = p->pos;
    size_t len = (size_t)advance(p)->len;
    while (at(p, AX_TOK_DOT)) {
        advance(p);
        if (!at(p, AX_TOK_NAME))
            return error_at(p, cur(p), "expected a name after '.' in the module name");
        len += 1 + (size_t)advance(p)->len;
    }
    char *s = malloc(len + 1);
    if (!s) return oom(p);
    size_t k = 0;
    for (int i = first; i < p->pos; i++) { /* the names and dots, without spaces between */
        const ax_token *t = ax_token_at(&p->lx, i);
        memcpy(s + k, t->start, (size_t)t->len);
        k += (size_t)t->len;
    }
    s[k] = 0;
    return s;
}

static char *parse_alias(parser *p) {
    if (!accept(p, AX_TOK_AS)) return NULL;
    if (!at(p, AX_TOK_NAME)) {
        char d[64];
        return error_at(p, cur(p), "expected a name after 'as', found %s",
                        describe_token(cur(p), d, sizeof d));
    }
    return token_text(p, advance(p));
}

/* import a, b.c as d: one AX_N_IMPORT per module. */
static int parse_import(parser *p, ax_nodelist *out) {
    do {
        ax_token *start = cur(p);
        ax_node *n = node_new(p, AX_N_IMPORT, start->span);
        if (!n) return -1;
        n->text = parse_dotted_name(p, "import");
        if (n->text) n->text2 = parse_alias(p);
        if (p->failed) {
            ax_node_free(n);
            return -1;
        }
        n->span = join(start->span, prev_span(p));
        if (!push(p, out, n)) return -1;
    } while (accept(p, AX_TOK_COMMA));
    return 0;
}

static bool at_statement_end(parser *p) {
    return at(p, AX_TOK_NEWLINE) || at(p, AX_TOK_SEMI) || at(p, AX_TOK_EOF);
}

static bool add_import_name(parser *p, ax_node *n) {
    char *name = token_text(p, advance(p));
    char *alias = name ? parse_alias(p) : NULL;
    char **names = p->failed ? NULL : realloc(n->kwnames, (size_t)(n->nnames + 1) * sizeof *names);
    if (names) n->kwnames = names;
    char **aliases = names ? realloc(n->aliases, (size_t)(n->nnames + 1) * sizeof *aliases) : NULL;
    if (aliases) n->aliases = aliases;
    if (!aliases) {
        free(name);
        free(alias);
        if (!p->failed) oom(p);
        return false;
    }
    n->kwnames[n->nnames] = name;
    n->aliases[n->nnames++] = alias;
    return true;
}

static ax_node *parse_from_import(parser *p) {
    ax_token *kw = advance(p);
    if (at(p, AX_TOK_DOT) || at(p, AX_TOK_ELLIPSIS))
        return error_at(p, cur(p), "relative imports are not supported");
    ax_node *n = node_new(p, AX_N_FROMIMPORT, kw->span);
    if (!n) return NULL;
    if (!(n->text = parse_dotted_name(p, "from"))) goto fail;
    if (!expect(p, AX_TOK_IMPORT, "expected 'import' after the module name")) goto fail;
    if (at(p, AX_TOK_STAR)) {
        error_at(p, cur(p), "'from ... import *' is not supported: name what you import");
        goto fail;
    }
    bool paren = accept(p, AX_TOK_LPAREN);
    do {
        if (n->nnames > 0 && !paren && at_statement_end(p)) {
            syntax_error(p, ax_token_at(&p->lx, p->pos - 1)->span,
                         "trailing comma not allowed without surrounding parentheses");
            goto fail;
        }
        if (n->nnames > 0 && paren && at(p, AX_TOK_RPAREN)) break;
        if (!at(p, AX_TOK_NAME)) {
            char d[64];
            error_at(p, cur(p), "expected a name to import, found %s",
                     describe_token(cur(p), d, sizeof d));
            goto fail;
        }
        if (!add_import_name(p, n)) goto fail;
    } while (accept(p, AX_TOK_COMMA));
    if (paren && !expect_close(p, AX_TOK_RPAREN, "')'")) goto fail;
    n->span = join(kw->span, prev_span(p));
    return n;
fail:
    ax_node_free(n);
    return NULL;
}

/* Python statements ax does not have: a clear message instead of "invalid syntax". */
static bool unsupported_statement(parser *p) {
    static const struct {
        const char *word, *message;
    } words[] = {
        {"class", "classes are not supported in ax (use functions, tuples and dicts)"},
        {"try", "exceptions are not supported in ax ('try')"},
        {"except", "exceptions are not supported in ax ('except')"},
        {"finally", "exceptions are not supported in ax ('finally')"},
        {"raise", "exceptions are not supported in ax ('raise'); use assert"},
        {"with", "'with' statements are not supported in ax"},
        {"global", "'global' is not supported: ax values are immutable and names are bound "
                   "lexically"},
        {"nonlocal", "'nonlocal' is not supported: ax values are immutable and names are bound "
                     "lexically"},
        {"del", "'del' is not supported: ax values are immutable"},
        {"yield", "generators are not supported in ax ('yield')"},
        {"async", "'async' is not supported in ax"},
        {"await", "'await' is not supported in ax"},
        {"print", "Missing parentheses in call to 'print'. Did you mean print(...)?"},
    };
    ax_token *t = cur(p);
    ax_tok_kind next = peek(p, 1)->kind;
    if (t->kind != AX_TOK_NAME) return false;
    bool follows = next == AX_TOK_NAME || next == AX_TOK_INT || next == AX_TOK_FLOAT ||
                   next == AX_TOK_STRING || next == AX_TOK_FSTRING || next == AX_TOK_COLON ||
                   next == AX_TOK_DEF || next == AX_TOK_FOR || next == AX_TOK_NONE ||
                   next == AX_TOK_TRUE || next == AX_TOK_FALSE;
    if (!follows) return false;
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
        if ((int)strlen(words[i].word) == t->len && !memcmp(words[i].word, t->start, t->len)) {
            if (!strcmp(words[i].word, "print") && next == AX_TOK_COLON) return false;
            error_at(p, t, "%s", words[i].message);
            return true;
        }
    return false;
}

static const struct {
    ax_tok_kind tok;
    ax_binop op;
} aug_ops[] = {
    {AX_TOK_PLUSEQ, AX_OP_ADD},        {AX_TOK_MINUSEQ, AX_OP_SUB},
    {AX_TOK_STAREQ, AX_OP_MUL},        {AX_TOK_SLASHEQ, AX_OP_DIV},
    {AX_TOK_DSLASHEQ, AX_OP_FLOORDIV}, {AX_TOK_PERCENTEQ, AX_OP_MOD},
    {AX_TOK_DSTAREQ, AX_OP_POW},       {AX_TOK_ATEQ, AX_OP_MATMUL},
    {AX_TOK_AMPEQ, AX_OP_BITAND},      {AX_TOK_PIPEEQ, AX_OP_BITOR},
    {AX_TOK_CARETEQ, AX_OP_BITXOR},    {AX_TOK_LSHIFTEQ, AX_OP_LSHIFT},
    {AX_TOK_RSHIFTEQ, AX_OP_RSHIFT},
};

static int aug_op(ax_tok_kind k) {
    for (size_t i = 0; i < sizeof aug_ops / sizeof aug_ops[0]; i++)
        if (aug_ops[i].tok == k) return aug_ops[i].op;
    return -1;
}

static bool check_aug_target(parser *p, const ax_node *t, const ax_token *op) {
    if (t->kind == AX_N_NAME) return true;
    if (t->kind == AX_N_INDEX)
        syntax_error(p, t->span,
                     "'%.*s' cannot update an element: values are immutable (for an "
                     "array, write x = x.at[i].add(v))",
                     op->len, op->start);
    else if (t->kind == AX_N_ATTR)
        syntax_error(p, t->span, "'%.*s' cannot update an attribute: values are immutable", op->len,
                     op->start);
    else
        syntax_error(p, t->span, "%s is an illegal expression for augmented assignment",
                     describe_node(t));
    return false;
}

static ax_node *no_bare_star(parser *p, ax_node *n) {
    if (n && n->kind == AX_N_STAR) {
        syntax_error(p, n->span, "cannot use starred expression here");
        ax_node_free(n);
        return NULL;
    }
    return n;
}

/* An expression statement, `targets = value` or `name op= value`. */
static ax_node *parse_expression_statement(parser *p) {
    ax_node *lhs = parse_testlist(p);
    if (!lhs) return NULL;
    ax_token *t = cur(p);
    int op = aug_op(t->kind);
    if (t->kind == AX_TOK_ASSIGN || op >= 0) {
        if (op < 0 ? !check_target(p, lhs, true, true) : !check_aug_target(p, lhs, t)) {
            ax_node_free(lhs);
            return NULL;
        }
        advance(p);
        ax_node *rhs = no_bare_star(p, parse_testlist(p));
        if (rhs && at(p, AX_TOK_ASSIGN)) {
            error_at(p, cur(p),
                     op < 0 ? "chained assignment `a = b = e` is not supported; "
                              "assign one name at a time"
                            : "invalid syntax");
            ax_node_free(rhs);
            rhs = NULL;
        }
        if (!rhs) {
            ax_node_free(lhs);
            return NULL;
        }
        return node2(p, op < 0 ? AX_N_ASSIGN : AX_N_AUGASSIGN, op < 0 ? 0 : op, lhs, rhs);
    }
    if (t->kind == AX_TOK_COLON &&
        (lhs->kind == AX_N_NAME || lhs->kind == AX_N_ATTR || lhs->kind == AX_N_INDEX)) {
        ax_node_free(lhs);
        return error_at(p, t, "variable annotations are not supported");
    }
    if (t->kind == AX_TOK_WALRUS) {
        ax_node_free(lhs);
        return error_at(p, t, "the walrus operator ':=' is not supported");
    }
    lhs = no_bare_star(p, lhs);
    return lhs ? node2(p, AX_N_EXPR, 0, lhs, NULL) : NULL;
}

static ax_node *parse_keyword_statement(parser *p, ax_node_kind kind) {
    ax_token *kw = advance(p);
    ax_node *n = node_new(p, kind, kw->span);
    if (!n) return NULL;
    if (kind == AX_N_RETURN && !at_statement_end(p)) {
        if (!(n->a = no_bare_star(p, parse_testlist(p)))) goto fail;
    } else if (kind == AX_N_ASSERT) {
        if (!(n->a = parse_test(p))) goto fail;
        if (accept(p, AX_TOK_COMMA) && !(n->b = parse_test(p))) goto fail;
    }
    n->span = join(kw->span, prev_span(p));
    return n;
fail:
    ax_node_free(n);
    return NULL;
}

static int parse_simple_statement(parser *p, ax_nodelist *out) {
    ax_node *n;
    switch (cur(p)->kind) {
    case AX_TOK_PASS:
        n = parse_keyword_statement(p, AX_N_PASS);
        break;
    case AX_TOK_BREAK:
        n = parse_keyword_statement(p, AX_N_BREAK);
        break;
    case AX_TOK_CONTINUE:
        n = parse_keyword_statement(p, AX_N_CONTINUE);
        break;
    case AX_TOK_RETURN:
        n = parse_keyword_statement(p, AX_N_RETURN);
        break;
    case AX_TOK_ASSERT:
        n = parse_keyword_statement(p, AX_N_ASSERT);
        break;
    case AX_TOK_IMPORT:
        advance(p);
        return parse_import(p, out);
    case AX_TOK_FROM:
        n = parse_from_import(p);
        break;
    default:
        if (unsupported_statement(p)) return -1;
        n = parse_expression_statement(p);
        break;
    }
    return n && push(p, out, n) ? 0 : -1;
}

/* simple (';' simple)* [';'] NEWLINE */
static int parse_simple_statements(parser *p, ax_nodelist *out) {
    for (;;) {
        if (parse_simple_statement(p, out) < 0) return -1;
        if (!accept(p, AX_TOK_SEMI) || at(p, AX_TOK_NEWLINE) || at(p, AX_TOK_EOF)) break;
    }
    if (accept(p, AX_TOK_NEWLINE) || at(p, AX_TOK_EOF)) return 0;
    ax_token *t = cur(p);
    if (t->kind == AX_TOK_ASSIGN)
        error_at(p, t, "invalid syntax. Maybe you meant '==' instead of '='?");
    else if (t->kind == AX_TOK_IF)
        error_at(p, t, "expected 'else' after 'if' expression");
    else {
        char d[64];
        error_at(p, t, "invalid syntax: unexpected %s", describe_token(t, d, sizeof d));
    }
    return -1;
}

static int parse_statement(parser *p, ax_nodelist *out) {
    ax_node *n;
    ax_token *t = cur(p);
    switch (t->kind) {
    case AX_TOK_AT:
        n = parse_decorated(p);
        break;
    case AX_TOK_DEF:
        n = parse_def(p);
        break;
    case AX_TOK_IF:
        n = parse_if(p);
        break;
    case AX_TOK_FOR:
        n = parse_for(p);
        break;
    case AX_TOK_WHILE:
        n = parse_while(p);
        break;
    case AX_TOK_INDENT:
        error_at(p, t, "unexpected indent");
        return -1;
    case AX_TOK_NEWLINE:
        advance(p);
        return 0;
    case AX_TOK_ELSE:
    case AX_TOK_ELIF: {
        ax_node_kind prev = out->n ? out->items[out->n - 1]->kind : AX_N_PASS;
        if (t->kind == AX_TOK_ELSE && (prev == AX_N_FOR || prev == AX_N_WHILE))
            error_at(p, t, "'else' after a loop is not supported");
        else
            error_at(p, t, "'%s' without a matching 'if' at the same indentation",
                     t->kind == AX_TOK_ELSE ? "else" : "elif");
        return -1;
    }
    default:
        return parse_simple_statements(p, out);
    }
    return n && push(p, out, n) ? 0 : -1;
}

/* ---- the tree-height check ---- */

typedef struct {
    const ax_node *node;
    int height;
} height_item;

typedef struct {
    height_item *items;
    int n, cap;
    int pending_height;
    bool oom;
} height_stack;

static void height_push(void *arg, ax_node *child) {
    height_stack *s = arg;
    if (s->oom) return;
    if (s->n == s->cap) {
        int cap = s->cap ? 2 * s->cap : 64;
        height_item *items = realloc(s->items, (size_t)cap * sizeof *items);
        if (!items) {
            s->oom = true;
            return;
        }
        s->items = items;
        s->cap = cap;
    }
    s->items[s->n++] = (height_item){child, s->pending_height};
}

/* The evaluator and the dumper recurse over the tree, so its height is bounded here, with an
 * explicit stack (a chain like 1+1+...+1 can be arbitrarily deep). */
static bool check_height(parser *p, const ax_node *root) {
    height_stack s = {0};
    s.pending_height = 1;
    height_push(&s, (ax_node *)root);
    bool ok = true;
    while (s.n > 0 && ok && !s.oom) {
        height_item it = s.items[--s.n];
        if (it.height > MAX_TREE_HEIGHT) {
            syntax_error(p, root->span, "expression too complex: nested more than %d levels deep",
                         MAX_TREE_HEIGHT);
            ok = false;
            break;
        }
        s.pending_height = it.height + 1;
        ax_node_each_child(it.node, height_push, &s);
    }
    free(s.items);
    if (s.oom && ok) {
        oom(p);
        ok = false;
    }
    return ok;
}

/* ---- entry point ---- */

static char *dup_string(const char *s) {
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

/* A NUL byte cannot be part of a program (text functions would silently stop there): a syntax
 * error at the first one, as Python reports it. */
static bool check_no_nul(ax_ctx *cx, const char *text, size_t len, const char *file) {
    const char *nul = memchr(text, 0, len);
    if (!nul) return true;
    ax_span at = {1, 1, 1, 2};
    for (const char *q = text; q < nul; q++) {
        if (*q == '\n') {
            at.line++;
            at.col = 0;
        }
        at.col++;
    }
    at.end_line = at.line;
    at.end_col = at.col + 1;
    ax_error(cx, AX_ERR_SYNTAX, "source code cannot contain null bytes");
    ax_error_set_span(cx, at, file, text);
    return false;
}

ax_program *ax_parse_n(struct ax_ctx *cx, const char *source, size_t len, const char *file) {
    if (!source) source = "", len = 0;
    if (!file) file = "<input>";
    ax_program *prog = calloc(1, sizeof *prog);
    size_t n = 0;
    if (prog) prog->file = dup_string(file);
    if (prog && prog->file) prog->source = ax_source_normalize(source, len, &n);
    if (!prog || !prog->source) {
        ax_program_free(prog);
        return ax_error_oom(cx);
    }
    if (!check_no_nul(cx, prog->source, n, file)) {
        ax_program_free(prog);
        return NULL;
    }
    parser p = {.cx = cx, .source = prog->source, .file = file};
    p.lexer = ax_lexer_new(prog->source, &p.lx);
    if (!p.lexer) {
        ax_token_list_free(&p.lx);
        ax_program_free(prog);
        return ax_error_oom(cx);
    }
    while (!at(&p, AX_TOK_EOF)) {
        int before = prog->stmts.n;
        if (parse_statement(&p, &prog->stmts) < 0) break;
        for (int i = before; i < prog->stmts.n; i++)
            if (!check_height(&p, prog->stmts.items[i])) break;
        if (p.failed) break;
        ax_token_list_drop(&p.lx, p.pos); /* no statement reads back before its start */
    }
    ax_lexer_free(p.lexer);
    ax_token_list_free(&p.lx);
    if (p.failed) {
        ax_program_free(prog);
        return NULL;
    }
    return prog;
}

ax_program *ax_parse(struct ax_ctx *cx, const char *source, const char *file) {
    return ax_parse_n(cx, source, source ? strlen(source) : 0, file);
}

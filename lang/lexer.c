/* The lexer: Python-style tokens, indentation and line joining (see lexer.h). */
#include "lexer.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Python's limits: deeper nesting is almost surely a mistake, and bounding it keeps the
 * recursive-descent parser's stack small. */
#define MAX_INDENT   100
#define MAX_BRACKETS 200

typedef struct {
    int col8, col1; /* indentation width with tabs to multiples of 8, and with tabs as 1 */
} indent_level;

typedef struct {
    char ch;
    ax_span span;
} open_bracket;

typedef struct ax_lexer {
    const char *src, *p, *line_start;
    int line;
    int first_line, col0; /* columns on first_line count from col0 + 1 (ax_lexer_new_at) */
    ax_token_list *out;
    indent_level indents[MAX_INDENT + 1];
    int nindent; /* indents[0] is the top level */
    open_bracket brackets[MAX_BRACKETS];
    int nbrackets;
    bool at_line_start;
    ax_tok_kind last; /* the kind of the last token made */
    bool scan_only;   /* ax_lexer_scan_rest: tokens go to `scratch`, not to `out` */
    ax_token scratch;
} lexer;

/* Where a token starts. */
typedef struct {
    const char *p;
    int line, col;
} mark;

/* ---- token output ---- */

/* The column of p, on the current line. */
static int col_at(const lexer *lx, const char *p) {
    return (int)(p - lx->line_start) + 1 + (lx->line == lx->first_line ? lx->col0 : 0);
}

static mark here(const lexer *lx) {
    return (mark){lx->p, lx->line, col_at(lx, lx->p)};
}

static ax_span span_from(const lexer *lx, mark m) {
    return (ax_span){m.line, m.col, lx->line, col_at(lx, lx->p)};
}

/* Makes sure block `b` exists (blocks are added in order). */
static bool ensure_block(ax_token_list *out, int b) {
    if (b < out->nblocks) return true;
    if (out->nblocks == out->capblocks) {
        int cap = out->capblocks ? 2 * out->capblocks : 8;
        ax_token **blocks = realloc(out->blocks, (size_t)cap * sizeof *blocks);
        if (!blocks) return false;
        out->blocks = blocks;
        out->capblocks = cap;
    }
    ax_token *block = malloc(AX_TOKEN_BLOCK * sizeof *block);
    if (!block) return false;
    out->blocks[out->nblocks++] = block;
    return true;
}

/* Keeps room for one more token plus the final EOF / ERROR token. */
static bool reserve(ax_token_list *out) {
    return out->n < INT_MAX - 2 && ensure_block(out, out->n / AX_TOKEN_BLOCK) &&
           ensure_block(out, (out->n + 1) / AX_TOKEN_BLOCK);
}

static int fail_oom(lexer *lx);

/* Frees what a token owns. */
static void token_free(ax_token *t) {
    free(t->str);
    for (int i = 0; i < t->nfields; i++) free(t->fields[i].expr);
    free(t->fields);
}

static ax_token *push(lexer *lx, ax_tok_kind kind, ax_span span, const char *start, int len) {
    ax_token *t;
    if (lx->scan_only) {
        t = &lx->scratch;
        token_free(t);
    } else if (!reserve(lx->out)) {
        fail_oom(lx);
        return NULL;
    } else {
        t = ax_token_at(lx->out, lx->out->n++);
    }
    *t = (ax_token){.kind = kind, .span = span, .start = start, .len = len};
    lx->last = kind;
    return t;
}

static ax_token *emit(lexer *lx, ax_tok_kind kind, mark m) {
    return push(lx, kind, span_from(lx, m), m.p, (int)(lx->p - m.p));
}

/* The final token, for which reserve() always left room. */
static void push_final(lexer *lx, ax_tok_kind kind, ax_span span) {
    ax_token_list *out = lx->out;
    out->done = true;
    if (lx->scan_only || out->nblocks == 0) return;
    *ax_token_at(out, out->n++) = (ax_token){.kind = kind, .span = span, .start = lx->p};
}

/* Records a lexical error and ends the token array with an ERROR token at `span`. */
__attribute__((format(printf, 4, 5))) static int fail(lexer *lx, ax_span span, bool incomplete,
                                                      const char *fmt, ...) {
    ax_token_list *out = lx->out;
    if (out->failed) return -1;
    out->failed = true;
    out->incomplete = incomplete;
    out->err_span = span;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out->message, sizeof out->message, fmt, ap);
    va_end(ap);
    push_final(lx, AX_TOK_ERROR, span);
    return -1;
}

static int fail_oom(lexer *lx) {
    lx->out->out_of_memory = true;
    return fail(lx, span_from(lx, here(lx)), false, "out of memory");
}

/* ---- characters ---- */

static bool is_ident_start(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
static bool is_digit(char c) {
    return c >= '0' && c <= '9';
}
static bool is_ident_char(char c) {
    return is_ident_start(c) || is_digit(c);
}

/* Decodes one UTF-8 sequence; returns the code point and its length, or -1 if malformed. */
static long utf8_decode(const char *s, int *len) {
    const unsigned char *u = (const unsigned char *)s;
    int n = u[0] < 0x80             ? 1
            : (u[0] & 0xE0) == 0xC0 ? 2
            : (u[0] & 0xF0) == 0xE0 ? 3
            : (u[0] & 0xF8) == 0xF0 ? 4
                                    : 0;
    if (n == 0) return -1;
    long cp = n == 1 ? u[0] : u[0] & (0x7F >> n);
    for (int i = 1; i < n; i++) {
        if ((u[i] & 0xC0) != 0x80) return -1;
        cp = cp << 6 | (u[i] & 0x3F);
    }
    static const long min_for_len[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < min_for_len[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return -1;
    *len = n;
    return cp;
}

/* Non-ASCII letters allowed in names: Latin, Greek, Cyrillic and other alphabets of the
 * lower planes, and the mathematical alphanumerics (a rough stand-in for Unicode's XID). */
static bool is_unicode_letter(long cp) {
    if (cp == 0xD7 || cp == 0xF7) return false; /* × ÷ */
    return (cp >= 0xC0 && cp <= 0x1FFF) || (cp >= 0x1D400 && cp <= 0x1D7FF);
}

static int utf8_encode(long cp, char *buf) {
    if (cp < 0x80) {
        buf[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        buf[0] = (char)(0xC0 | cp >> 6);
        buf[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        buf[0] = (char)(0xE0 | cp >> 12);
        buf[1] = (char)(0x80 | (cp >> 6 & 0x3F));
        buf[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    buf[0] = (char)(0xF0 | cp >> 18);
    buf[1] = (char)(0x80 | (cp >> 12 & 0x3F));
    buf[2] = (char)(0x80 | (cp >> 6 & 0x3F));
    buf[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

static void newline_passed(lexer *lx) {
    lx->line++;
    lx->line_start = lx->p;
}

/* ---- indentation ---- */

/* Measures the indentation of the line at lx->p. Returns false for a blank or comment-only
 * line (consumed entirely, including its newline). */
static bool measure_indent(lexer *lx, indent_level *lev) {
    const char *q = lx->p;
    int col8 = 0, col1 = 0;
    for (;; q++) {
        if (*q == ' ')
            col8++, col1++;
        else if (*q == '\t')
            col8 = (col8 / 8 + 1) * 8, col1++;
        else if (*q == '\f')
            col8 = col1 = 0;
        else
            break;
    }
    const char *r = q;
    while (*r == '\r') r++;
    if (*r == '#')
        while (*r && *r != '\n') r++;
    if (*r == '\n' || *r == 0) {
        lx->p = *r ? r + 1 : r;
        if (*r) newline_passed(lx);
        return false;
    }
    lx->p = q;
    *lev = (indent_level){col8, col1};
    return true;
}

static int tab_error(lexer *lx, mark m) {
    return fail(lx, span_from(lx, m), false, "inconsistent use of tabs and spaces in indentation");
}

/* Emits the INDENT or DEDENTs that take the stack to the indentation of the current line. */
static int handle_indentation(lexer *lx) {
    mark line_begin = {lx->p, lx->line, 1};
    indent_level lev;
    if (!measure_indent(lx, &lev)) return 0;
    lx->at_line_start = false;
    indent_level top = lx->indents[lx->nindent];
    if (lev.col8 == top.col8) {
        if (lev.col1 != top.col1) return tab_error(lx, line_begin);
        return 0;
    }
    if (lev.col8 > top.col8) {
        if (lev.col1 <= top.col1) return tab_error(lx, line_begin);
        if (lx->nindent == MAX_INDENT)
            return fail(lx, span_from(lx, line_begin), false, "too many levels of indentation");
        lx->indents[++lx->nindent] = lev;
        return emit(lx, AX_TOK_INDENT, line_begin) ? 0 : -1;
    }
    while (lx->nindent > 0 && lev.col8 < lx->indents[lx->nindent].col8) {
        lx->nindent--;
        if (!push(lx, AX_TOK_DEDENT, span_from(lx, here(lx)), lx->p, 0)) return -1;
    }
    top = lx->indents[lx->nindent];
    if (lev.col8 != top.col8)
        return fail(lx, span_from(lx, line_begin), false,
                    "unindent does not match any outer indentation level");
    if (lev.col1 != top.col1) return tab_error(lx, line_begin);
    return 0;
}

/* ---- names and keywords ---- */

static const struct {
    const char *word;
    ax_tok_kind kind;
} keywords[] = {
    {"def", AX_TOK_DEF},       {"lambda", AX_TOK_LAMBDA}, {"if", AX_TOK_IF},
    {"elif", AX_TOK_ELIF},     {"else", AX_TOK_ELSE},     {"for", AX_TOK_FOR},
    {"in", AX_TOK_IN},         {"while", AX_TOK_WHILE},   {"return", AX_TOK_RETURN},
    {"import", AX_TOK_IMPORT}, {"from", AX_TOK_FROM},     {"as", AX_TOK_AS},
    {"and", AX_TOK_AND},       {"or", AX_TOK_OR},         {"not", AX_TOK_NOT},
    {"True", AX_TOK_TRUE},     {"False", AX_TOK_FALSE},   {"None", AX_TOK_NONE},
    {"pass", AX_TOK_PASS},     {"break", AX_TOK_BREAK},   {"continue", AX_TOK_CONTINUE},
    {"assert", AX_TOK_ASSERT}, {"is", AX_TOK_IS},
};

static ax_tok_kind keyword_kind(const char *s, int len) {
    for (size_t i = 0; i < sizeof keywords / sizeof keywords[0]; i++)
        if ((int)strlen(keywords[i].word) == len && memcmp(keywords[i].word, s, len) == 0)
            return keywords[i].kind;
    return AX_TOK_NAME;
}

static int invalid_character(lexer *lx) {
    mark m = here(lx);
    int len = 1;
    long cp = utf8_decode(lx->p, &len);
    if (cp < 0)
        return fail(lx, (ax_span){m.line, m.col, m.line, m.col + 1}, false,
                    "invalid byte 0x%02x in the source (it is not UTF-8 text)",
                    (unsigned char)*lx->p);
    ax_span span = {m.line, m.col, m.line, m.col + len};
    if (cp < 0x20 || cp == 0x7F)
        return fail(lx, span, false, "invalid non-printable character U+%04lX", cp);
    if (cp == '!')
        return fail(lx, span, false,
                    "invalid syntax: '!' is not an operator (use 'not' for negation)");
    return fail(lx, span, false, "invalid character '%.*s' (U+%04lX)", len, lx->p, cp);
}

/* Advances over identifier characters, including non-ASCII letters. */
static void scan_name(lexer *lx) {
    for (;;) {
        if (is_ident_char(*lx->p)) {
            lx->p++;
            continue;
        }
        int len;
        long cp = (unsigned char)*lx->p >= 0x80 ? utf8_decode(lx->p, &len) : -1;
        if (cp < 0 || !is_unicode_letter(cp)) return;
        lx->p += len;
    }
}

/* ---- strings ---- */

typedef struct {
    char *data;
    size_t len, cap;
} buf;

static bool buf_put(buf *b, const char *s, size_t n) {
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 32;
        while (b->len + n + 1 > cap) cap *= 2;
        char *d = realloc(b->data, cap);
        if (!d) return false;
        b->data = d;
        b->cap = cap;
    }
    memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = 0;
    return true;
}

static int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static int string_error_eof(lexer *lx, mark open, bool triple) {
    ax_span span = {open.line, open.col, open.line, open.col + (triple ? 3 : 1)};
    /* the line of the last character read, as Python counts it */
    int line = lx->line - (*lx->p == 0 && lx->p > lx->src && lx->p[-1] == '\n');
    if (triple)
        return fail(lx, span, true,
                    "unterminated triple-quoted string literal (detected at line %d)", line);
    return fail(lx, span, false, "unterminated string literal (detected at line %d)", line);
}

/* Decodes the escape at lx->p (just after the backslash) into `b`. */
static int decode_escape(lexer *lx, buf *b, mark open, bool triple) {
    mark esc = {lx->p - 1, lx->line, col_at(lx, lx->p) - 1};
    char c = *lx->p;
    static const char simple_from[] = "\\'\"abfnrtv", simple_to[] = "\\'\"\a\b\f\n\r\t\v";
    const char *s = c ? strchr(simple_from, c) : NULL;
    if (c == 0) return string_error_eof(lx, open, triple);
    if (c == '\n' || (c == '\r' && lx->p[1] == '\n')) { /* a line continuation in the string */
        lx->p += c == '\r' ? 2 : 1;
        newline_passed(lx);
        return 0;
    }
    if (s) {
        lx->p++;
        return buf_put(b, &simple_to[s - simple_from], 1) ? 0 : fail_oom(lx);
    }
    long cp = 0;
    if (c >= '0' && c <= '7') {
        for (int i = 0; i < 3 && *lx->p >= '0' && *lx->p <= '7'; i++)
            cp = cp * 8 + (*lx->p++ - '0');
    } else if (c == 'x' || c == 'u' || c == 'U') {
        int digits = c == 'x' ? 2 : c == 'u' ? 4 : 8;
        lx->p++;
        for (int i = 0; i < digits; i++) {
            int h = hex_value(*lx->p);
            if (h < 0)
                return fail(lx, span_from(lx, esc), false, "truncated \\%c%s escape", c,
                            c == 'x'   ? "XX"
                            : c == 'u' ? "XXXX"
                                       : "XXXXXXXX");
            cp = cp * 16 + h;
            lx->p++;
        }
        if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            return fail(lx, span_from(lx, esc), false, "illegal Unicode character in \\%c escape",
                        c);
    } else if (c == 'N') {
        lx->p++;
        return fail(lx, span_from(lx, esc), false, "\\N{...} escapes are not supported");
    } else { /* an unknown escape keeps its backslash, as in Python */
        return buf_put(b, "\\", 1) ? 0 : fail_oom(lx);
    }
    char enc[4];
    return buf_put(b, enc, utf8_encode(cp, enc)) ? 0 : fail_oom(lx);
}

/* ---- f-strings ---- */

typedef struct field_list {
    ax_fstring_field *v;
    int n, cap;
} field_list;

static void fields_free(field_list *l) {
    for (int i = 0; i < l->n; i++) free(l->v[i].expr);
    free(l->v);
}

/* Does the string's closing quote start at p? */
static bool at_close(const char *p, char q, bool triple) {
    return *p == q && (!triple || (p[1] == q && p[2] == q));
}

/* Moves past the end of a replacement field's expression: to the `}`, `!`, `:` or `=` (of
 * {x=}) that ends it outside brackets and strings. -1 after an error. */
static int scan_field_expr(lexer *lx, char q, bool triple, mark open) {
    char stack[MAX_BRACKETS];
    int depth = 0;
    for (;;) {
        char c = *lx->p;
        if (c == 0 || (c == '\n' && !triple) || at_close(lx->p, q, triple))
            return fail(lx, span_from(lx, open), c == 0, "f-string: expecting '}'");
        if (c == '\\')
            return fail(lx, span_from(lx, here(lx)), false,
                        "f-string expression part cannot include a backslash");
        if (c == '#')
            return fail(lx, span_from(lx, here(lx)), false,
                        "f-string expression part cannot include '#'");
        if (depth == 0) {
            bool eq =
                c == '=' && lx->p[1] != '=' && lx->p > open.p + 1 && !strchr("=!<>", lx->p[-1]);
            if (c == '}' || c == ':' || (c == '!' && lx->p[1] != '=') || eq) return 0;
        }
        if (c == '(' || c == '[' || c == '{') {
            if (depth == MAX_BRACKETS)
                return fail(lx, span_from(lx, here(lx)), false,
                            "f-string: too many nested parentheses");
            stack[depth++] = c == '(' ? ')' : c == '[' ? ']' : '}';
        } else if (c == ')' || c == ']' || c == '}') {
            if (depth == 0 || stack[depth - 1] != c)
                return fail(lx, span_from(lx, here(lx)), false, "f-string: unmatched '%c'", c);
            depth--;
        } else if (c == '\'' || c == '"') { /* a string inside the expression */
            char iq = c;
            mark s = here(lx);
            for (lx->p++; *lx->p != iq; lx->p++)
                if (!*lx->p || *lx->p == '\n' || at_close(lx->p, q, triple))
                    return fail(lx, span_from(lx, s), false,
                                "f-string: unterminated string in a replacement field");
        }
        lx->p++;
        if (c == '\n') newline_passed(lx);
    }
}

/* Appends text to the template with its braces doubled (str.format reads them as braces). */
static bool put_escaped_braces(buf *b, const char *s, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!buf_put(b, &s[i], 1) || ((s[i] == '{' || s[i] == '}') && !buf_put(b, &s[i], 1)))
            return false;
    return true;
}

/* A replacement field; lx->p is just after its `{`. Appends its template ({}, {!r}, {:spec})
 * to b and its expression to fields. */
static int lex_fstring_field(lexer *lx, buf *b, field_list *fields, char q, bool triple) {
    mark open = {lx->p - 1, lx->line, col_at(lx, lx->p) - 1};
    mark expr = here(lx);
    if (scan_field_expr(lx, q, triple, open) < 0) return -1;
    const char *end = lx->p;
    const char *t = expr.p;
    while (t < end && (*t == ' ' || *t == '\t' || *t == '\n')) t++;
    if (t == end)
        return fail(lx, span_from(lx, open), false, "f-string: empty expression not allowed");
    bool self_doc = *lx->p == '=';
    if (self_doc) { /* {x=}: the expression's text, then its value (its repr by default) */
        lx->p++;
        while (*lx->p == ' ') lx->p++;
        if (!put_escaped_braces(b, expr.p, (size_t)(lx->p - expr.p))) return fail_oom(lx);
    }
    char conversion = 0;
    if (*lx->p == '!') {
        conversion = lx->p[1];
        if (!conversion || !strchr("rsa", conversion))
            return fail(lx, span_from(lx, here(lx)), false,
                        "f-string: invalid conversion character: expected 's', 'r', or 'a'");
        lx->p += 2;
    }
    const char *spec = NULL, *spec_end = NULL;
    if (*lx->p == ':') {
        spec = ++lx->p;
        while (*lx->p != '}') {
            if (*lx->p == '{')
                return fail(lx, span_from(lx, here(lx)), false,
                            "f-string: a replacement field inside a format spec is not supported");
            if (!*lx->p || *lx->p == '\n' || at_close(lx->p, q, triple))
                return fail(lx, span_from(lx, open), !*lx->p, "f-string: expecting '}'");
            lx->p++;
        }
        spec_end = lx->p;
    }
    if (*lx->p != '}') return fail(lx, span_from(lx, open), false, "f-string: expecting '}'");
    lx->p++;
    if (self_doc && !conversion && !spec) conversion = 'r';
    char conv[3] = {'!', conversion == 'a' ? 'r' : conversion, 0};
    if (!buf_put(b, "{", 1) || (conversion && !buf_put(b, conv, 2)) ||
        (spec && (!buf_put(b, ":", 1) || !buf_put(b, spec, (size_t)(spec_end - spec)))) ||
        !buf_put(b, "}", 1))
        return fail_oom(lx);
    if (fields->n == fields->cap) {
        int cap = fields->cap ? 2 * fields->cap : 4;
        ax_fstring_field *v = realloc(fields->v, (size_t)cap * sizeof *v);
        if (!v) return fail_oom(lx);
        fields->v = v;
        fields->cap = cap;
    }
    char *text = strndup(expr.p, (size_t)(end - expr.p));
    if (!text) return fail_oom(lx);
    fields->v[fields->n++] = (ax_fstring_field){text, expr.line, expr.col};
    return 0;
}

/* Lexes a string literal; lx->p is at the opening quote, `m` at the prefix (if any). An
 * f-string (fmt) becomes a str.format template and the expressions of its fields. */
static int lex_string(lexer *lx, mark m, bool raw, bool fmt) {
    char q = *lx->p;
    bool triple = lx->p[1] == q && lx->p[2] == q;
    mark open = here(lx);
    lx->p += triple ? 3 : 1;
    buf b = {0};
    field_list fields = {0};
    if (!buf_put(&b, "", 0)) return fail_oom(lx);
    int rc = 0;
    for (;;) {
        char c = *lx->p;
        if (c == 0 || (c == '\n' && !triple)) {
            rc = string_error_eof(lx, open, triple);
            break;
        }
        if (c == q && (!triple || (lx->p[1] == q && lx->p[2] == q))) {
            lx->p += triple ? 3 : 1;
            break;
        }
        if (fmt && (c == '{' || c == '}')) {
            if (lx->p[1] == c) { /* {{ and }}: a brace, kept doubled in the template */
                lx->p += 2;
                if (!buf_put(&b, c == '{' ? "{{" : "}}", 2)) {
                    rc = fail_oom(lx);
                    break;
                }
                continue;
            }
            if (c == '}') {
                rc =
                    fail(lx, span_from(lx, here(lx)), false, "f-string: single '}' is not allowed");
                break;
            }
            lx->p++;
            if ((rc = lex_fstring_field(lx, &b, &fields, q, triple)) < 0) break;
            continue;
        }
        lx->p++;
        if (c == '\r' && *lx->p == '\n') continue; /* CRLF in a string reads as \n */
        if (c == '\\' && !raw) {
            if ((rc = decode_escape(lx, &b, open, triple)) < 0) break;
            continue;
        }
        /* a raw string keeps the backslash and the character after it (even a quote) */
        const char *from = lx->p - 1;
        if (c == '\\' && *lx->p) lx->p++;
        if (!buf_put(&b, from, (size_t)(lx->p - from))) {
            rc = fail_oom(lx);
            break;
        }
        if (lx->p[-1] == '\n') newline_passed(lx);
    }
    ax_token *t = rc == 0 ? emit(lx, fmt ? AX_TOK_FSTRING : AX_TOK_STRING, m) : NULL;
    if (!t) {
        free(b.data);
        fields_free(&fields);
        return -1;
    }
    t->str = b.data;
    t->fields = fields.v;
    t->nfields = fields.n;
    return 0;
}

/* Lexes a name, keyword, or a string with a prefix (r"...", u"..."). */
static int lex_name(lexer *lx) {
    mark m = here(lx);
    scan_name(lx);
    int len = (int)(lx->p - m.p);
    if ((*lx->p == '"' || *lx->p == '\'') && len <= 2) {
        char pre[3] = {0};
        for (int i = 0; i < len; i++) pre[i] = (char)(m.p[i] | 0x20);
        if (!strcmp(pre, "r") || !strcmp(pre, "u")) return lex_string(lx, m, pre[0] == 'r', false);
        bool is_b = strchr(pre, 'b') && strspn(pre, "br") == (size_t)len;
        bool is_f = strchr(pre, 'f') && strspn(pre, "fr") == (size_t)len;
        ax_span span = {m.line, m.col, m.line, m.col + len + 1};
        if (is_b) return fail(lx, span, false, "bytes literals are not supported");
        if (is_f) return lex_string(lx, m, strchr(pre, 'r') != NULL, true);
    }
    return emit(lx, keyword_kind(m.p, len), m) ? 0 : -1;
}

/* ---- numbers ---- */

static bool is_base_digit(char c, int base) {
    int v = hex_value(c);
    return v >= 0 && v < base;
}

/* Reads digits of `base` with single underscores between them; returns how many digits. */
static int scan_digits(lexer *lx, int base) {
    int n = 0;
    for (;;) {
        if (is_base_digit(*lx->p, base)) {
            lx->p++, n++;
        } else if (*lx->p == '_' && is_base_digit(lx->p[1], base) && (n > 0 || base != 10)) {
            lx->p++;
        } else {
            return n;
        }
    }
}

static int bad_number(lexer *lx, mark m, const char *what) {
    while (is_ident_char(*lx->p)) lx->p++;
    return fail(lx, span_from(lx, m), false, "invalid %s literal", what);
}

/* Accumulates the digits of [from, to) in `base`, skipping underscores. */
static int int_value(lexer *lx, mark m, const char *from, const char *to, int base, int64_t *out) {
    uint64_t v = 0;
    for (const char *s = from; s < to; s++) {
        if (*s == '_') continue;
        uint64_t d = (uint64_t)hex_value(*s);
        if (v > ((uint64_t)INT64_MAX - d) / (uint64_t)base)
            return fail(lx, span_from(lx, m), false,
                        "integer literal is too large (the largest is %lld)", (long long)INT64_MAX);
        v = v * (uint64_t)base + d;
    }
    *out = (int64_t)v;
    return 0;
}

static int lex_prefixed_int(lexer *lx, mark m) {
    char p = (char)(lx->p[1] | 0x20);
    int base = p == 'x' ? 16 : p == 'o' ? 8 : 2;
    const char *what = base == 16 ? "hexadecimal" : base == 8 ? "octal" : "binary";
    lx->p += 2;
    const char *digits = lx->p;
    int n = scan_digits(lx, base);
    if (is_digit(*lx->p)) {
        mark d = here(lx);
        lx->p++;
        return fail(lx, span_from(lx, d), false, "invalid digit '%c' in %s literal", d.p[0], what);
    }
    if (n == 0 || is_ident_char(*lx->p)) return bad_number(lx, m, what);
    ax_token *t;
    int64_t v;
    if (int_value(lx, m, digits, lx->p, base, &v) < 0) return -1;
    if (!(t = emit(lx, AX_TOK_INT, m))) return -1;
    t->ival = v;
    return 0;
}

/* Decimal integers and floats: 1, 1_000, 2.5, 5., .5, 1e-3. */
static int lex_decimal(lexer *lx, mark m) {
    int int_digits = scan_digits(lx, 10);
    bool is_float = false;
    if (*lx->p == '.' && (int_digits > 0 || is_digit(lx->p[1]))) {
        is_float = true;
        lx->p++;
        if (*lx->p == '_') return bad_number(lx, m, "decimal");
        scan_digits(lx, 10);
    }
    if ((*lx->p | 0x20) == 'e') {
        const char *e = lx->p + 1;
        if (*e == '+' || *e == '-') e++;
        if (!is_digit(*e)) return bad_number(lx, m, "decimal");
        lx->p = e;
        scan_digits(lx, 10);
        is_float = true;
    }
    if (is_ident_char(*lx->p)) return bad_number(lx, m, "decimal");
    if (!is_float) {
        const char *s = m.p;
        while (*s == '0' || *s == '_') s++;
        if (*m.p == '0' && s < lx->p)
            return fail(lx, span_from(lx, m), false,
                        "leading zeros in decimal integer literals are not permitted; use an 0o "
                        "prefix for octal integers");
        int64_t v;
        ax_token *t;
        if (int_value(lx, m, m.p, lx->p, 10, &v) < 0) return -1;
        if (!(t = emit(lx, AX_TOK_INT, m))) return -1;
        t->ival = v;
        return 0;
    }
    char clean[128];
    size_t k = 0;
    for (const char *s = m.p; s < lx->p && k + 1 < sizeof clean; s++)
        if (*s != '_') clean[k++] = *s;
    clean[k] = 0;
    ax_token *t = emit(lx, AX_TOK_FLOAT, m);
    if (!t) return -1;
    t->fval = strtod(clean, NULL);
    return 0;
}

static int lex_number(lexer *lx) {
    mark m = here(lx);
    if (lx->p[0] == '0' && lx->p[1] && strchr("xXoObB", lx->p[1])) return lex_prefixed_int(lx, m);
    return lex_decimal(lx, m);
}

/* ---- operators and brackets ---- */

static const struct {
    const char *text;
    ax_tok_kind kind;
} operators[] = {
    /* longest first, so that the first match is the longest */
    {"**=", AX_TOK_DSTAREQ},  {"//=", AX_TOK_DSLASHEQ}, {">>=", AX_TOK_RSHIFTEQ},
    {"<<=", AX_TOK_LSHIFTEQ}, {"...", AX_TOK_ELLIPSIS}, {"**", AX_TOK_DSTAR},
    {"//", AX_TOK_DSLASH},    {"<<", AX_TOK_LSHIFT},    {">>", AX_TOK_RSHIFT},
    {"<=", AX_TOK_LE},        {">=", AX_TOK_GE},        {"==", AX_TOK_EQ},
    {"!=", AX_TOK_NE},        {"->", AX_TOK_ARROW},     {":=", AX_TOK_WALRUS},
    {"+=", AX_TOK_PLUSEQ},    {"-=", AX_TOK_MINUSEQ},   {"*=", AX_TOK_STAREQ},
    {"/=", AX_TOK_SLASHEQ},   {"%=", AX_TOK_PERCENTEQ}, {"@=", AX_TOK_ATEQ},
    {"&=", AX_TOK_AMPEQ},     {"|=", AX_TOK_PIPEEQ},    {"^=", AX_TOK_CARETEQ},
    {"+", AX_TOK_PLUS},       {"-", AX_TOK_MINUS},      {"*", AX_TOK_STAR},
    {"/", AX_TOK_SLASH},      {"%", AX_TOK_PERCENT},    {"@", AX_TOK_AT},
    {"&", AX_TOK_AMP},        {"|", AX_TOK_PIPE},       {"^", AX_TOK_CARET},
    {"~", AX_TOK_TILDE},      {"<", AX_TOK_LT},         {">", AX_TOK_GT},
    {"(", AX_TOK_LPAREN},     {")", AX_TOK_RPAREN},     {"[", AX_TOK_LBRACKET},
    {"]", AX_TOK_RBRACKET},   {"{", AX_TOK_LBRACE},     {"}", AX_TOK_RBRACE},
    {",", AX_TOK_COMMA},      {":", AX_TOK_COLON},      {";", AX_TOK_SEMI},
    {".", AX_TOK_DOT},        {"=", AX_TOK_ASSIGN},
};

static int open_bracket_push(lexer *lx, mark m) {
    if (lx->nbrackets == MAX_BRACKETS)
        return fail(lx, span_from(lx, m), false, "too many nested parentheses");
    lx->brackets[lx->nbrackets++] = (open_bracket){*m.p, span_from(lx, m)};
    return 0;
}

static int close_bracket(lexer *lx, mark m) {
    char c = *m.p, want = c == ')' ? '(' : c == ']' ? '[' : '{';
    if (lx->nbrackets == 0) return fail(lx, span_from(lx, m), false, "unmatched '%c'", c);
    open_bracket *ob = &lx->brackets[lx->nbrackets - 1];
    if (ob->ch != want) {
        if (ob->span.line != m.line)
            return fail(lx, span_from(lx, m), false,
                        "closing parenthesis '%c' does not match opening parenthesis '%c' on "
                        "line %d",
                        c, ob->ch, ob->span.line);
        return fail(lx, span_from(lx, m), false,
                    "closing parenthesis '%c' does not match opening parenthesis '%c'", c, ob->ch);
    }
    lx->nbrackets--;
    return 0;
}

static int lex_operator(lexer *lx) {
    mark m = here(lx);
    for (size_t i = 0; i < sizeof operators / sizeof operators[0]; i++) {
        size_t n = strlen(operators[i].text);
        if (strncmp(lx->p, operators[i].text, n) != 0) continue;
        lx->p += n;
        char c = *m.p;
        if (n == 1 && (c == '(' || c == '[' || c == '{') && open_bracket_push(lx, m) < 0) return -1;
        if (n == 1 && (c == ')' || c == ']' || c == '}') && close_bracket(lx, m) < 0) return -1;
        return emit(lx, operators[i].kind, m) ? 0 : -1;
    }
    return invalid_character(lx);
}

/* ---- the main loop ---- */

static ax_tok_kind last_kind(const lexer *lx) {
    return lx->last;
}

/* A line break outside brackets ends the logical line (if anything was on it). */
static int end_of_line(lexer *lx) {
    mark m = here(lx);
    lx->p++;
    ax_tok_kind k = last_kind(lx);
    ax_span span = {m.line, m.col, m.line, m.col + 1};
    newline_passed(lx);
    lx->at_line_start = true;
    if (k == AX_TOK_NEWLINE || k == AX_TOK_INDENT || k == AX_TOK_DEDENT) return 0;
    return push(lx, AX_TOK_NEWLINE, span, m.p, 1) ? 0 : -1;
}

static int continuation(lexer *lx) {
    mark m = here(lx);
    const char *q = lx->p + 1;
    while (*q == '\r') q++;
    if (*q == '\n') {
        lx->p = q + 1;
        newline_passed(lx);
        if (*lx->p == 0) lx->out->continued_at_end = true;
        return 0;
    }
    if (*q == 0)
        return fail(lx, (ax_span){m.line, m.col, m.line, m.col + 1}, true,
                    "unexpected end of input after line continuation character");
    return fail(lx, (ax_span){m.line, m.col + 1, m.line, m.col + 2}, false,
                "unexpected character after line continuation character");
}

static int lex_token(lexer *lx) {
    char c = *lx->p;
    if (c == ' ' || c == '\t' || c == '\f' || c == '\r') {
        lx->p++;
        return 0;
    }
    if (c == '#') {
        while (*lx->p && *lx->p != '\n') lx->p++;
        return 0;
    }
    if (c == '\n') {
        if (lx->nbrackets == 0) return end_of_line(lx);
        lx->p++;
        newline_passed(lx);
        return 0;
    }
    if (c == '\\') return continuation(lx);
    if (c == '"' || c == '\'') return lex_string(lx, here(lx), false, false);
    if (is_digit(c) || (c == '.' && is_digit(lx->p[1]))) return lex_number(lx);
    if (is_ident_start(c)) return lex_name(lx);
    if ((unsigned char)c >= 0x80) {
        int len;
        long cp = utf8_decode(lx->p, &len);
        if (cp >= 0 && is_unicode_letter(cp)) return lex_name(lx);
        return invalid_character(lx);
    }
    return lex_operator(lx);
}

static void finish(lexer *lx) {
    ax_token_list *out = lx->out;
    if (lx->nbrackets > 0) {
        open_bracket *ob = &lx->brackets[lx->nbrackets - 1];
        out->unclosed = true;
        fail(lx, ob->span, true, "'%c' was never closed", ob->ch);
        return;
    }
    ax_span at_end = span_from(lx, here(lx));
    ax_tok_kind k = last_kind(lx);
    if (k != AX_TOK_NEWLINE && k != AX_TOK_INDENT && k != AX_TOK_DEDENT &&
        !push(lx, AX_TOK_NEWLINE, at_end, lx->p, 0))
        return;
    out->eof_indent_depth = lx->nindent;
    for (; lx->nindent > 0; lx->nindent--)
        if (!push(lx, AX_TOK_DEDENT, at_end, lx->p, 0)) return;
    push_final(lx, AX_TOK_EOF, at_end);
}

/* Lexes a little more: one token, or the indentation of a line; at the end of the input, the
 * final tokens. */
static void step(lexer *lx) {
    if (lx->at_line_start && lx->nbrackets == 0) {
        if (handle_indentation(lx) < 0) return;
        if (lx->at_line_start) { /* a blank line was skipped */
            if (*lx->p == 0) finish(lx);
            return;
        }
    }
    if (*lx->p == 0)
        finish(lx);
    else
        lex_token(lx);
}

ax_lexer *ax_lexer_new_at(const char *source, int line, int col, ax_token_list *out) {
    ax_lexer *lx = ax_lexer_new(source, out);
    if (lx) {
        lx->line = lx->first_line = line;
        lx->col0 = col - 1;
    }
    return lx;
}

ax_lexer *ax_lexer_new(const char *source, ax_token_list *out) {
    memset(out, 0, sizeof *out);
    lexer *lx = calloc(1, sizeof *lx);
    if (!lx || !reserve(out)) {
        free(lx);
        out->failed = out->out_of_memory = out->done = true;
        snprintf(out->message, sizeof out->message, "out of memory");
        return NULL;
    }
    lx->src = lx->p = lx->line_start = source ? source : "";
    lx->line = 1;
    lx->out = out;
    lx->at_line_start = true;
    lx->last = AX_TOK_NEWLINE;
    return lx;
}

void ax_lexer_free(ax_lexer *lx) {
    if (!lx) return;
    token_free(&lx->scratch);
    free(lx);
}

void ax_lexer_fill(ax_lexer *lx, int count) {
    while (!lx->out->done && lx->out->n < count) step(lx);
}

void ax_lexer_interrupt(ax_lexer *lx) {
    if (lx->out->done) return;
    lx->out->interrupted = true;
    fail(lx, span_from(lx, here(lx)), false, "interrupted");
}

void ax_lexer_scan_rest(ax_lexer *lx) {
    ax_token_list *out = lx->out;
    /* with no bracket open here, every one opened so far was closed */
    if (out->done || lx->nbrackets == 0) return;
    lx->scan_only = true;
    while (!out->done) step(lx);
    lx->scan_only = false;
    /* the tokens end where the scan began: end them there (reserve() left room for it) */
    *ax_token_at(out, out->n++) =
        (ax_token){.kind = out->failed ? AX_TOK_ERROR : AX_TOK_EOF, .span = out->err_span};
}

int ax_lex(const char *source, ax_token_list *out) {
    lexer *lx = ax_lexer_new(source, out);
    if (!lx) return -1;
    ax_lexer_fill(lx, INT_MAX);
    ax_lexer_free(lx);
    return out->failed ? -1 : 0;
}

void ax_token_list_free(ax_token_list *list) {
    if (!list) return;
    ax_token_list_drop(list, list->n);
    for (int b = list->dropped; b < list->nblocks; b++) {
        for (int i = b * AX_TOKEN_BLOCK; i < list->n && i < (b + 1) * AX_TOKEN_BLOCK; i++)
            token_free(ax_token_at(list, i));
        free(list->blocks[b]);
    }
    free(list->blocks);
    list->blocks = NULL;
    list->n = list->nblocks = list->capblocks = list->dropped = 0;
}

void ax_token_list_drop(ax_token_list *list, int before) {
    if (before > list->n) before = list->n;
    for (; list->dropped < list->nblocks && (list->dropped + 1) * AX_TOKEN_BLOCK <= before;
         list->dropped++) {
        int b = list->dropped;
        for (int i = b * AX_TOKEN_BLOCK; i < (b + 1) * AX_TOKEN_BLOCK; i++)
            token_free(ax_token_at(list, i));
        free(list->blocks[b]);
        list->blocks[b] = NULL;
    }
}

char *ax_source_normalize(const char *source, size_t len, size_t *out_len) {
    if (len >= 3 && memcmp(source, "\xEF\xBB\xBF", 3) == 0) { /* a UTF-8 byte order mark */
        source += 3;
        len -= 3;
    }
    char *out = malloc(len + 1);
    if (!out) return NULL;
    size_t n = 0;
    for (size_t i = 0; i < len; i++) {
        char c = source[i];
        if (c == '\r') {
            if (i + 1 < len && source[i + 1] == '\n') i++;
            c = '\n';
        }
        out[n++] = c;
    }
    out[n] = 0;
    *out_len = n;
    return out;
}

static const char *const kind_desc[AX_TOK_NKINDS] = {
    [AX_TOK_EOF] = "end of input",
    [AX_TOK_ERROR] = "invalid token",
    [AX_TOK_NEWLINE] = "end of line",
    [AX_TOK_INDENT] = "indent",
    [AX_TOK_DEDENT] = "dedent",
    [AX_TOK_NAME] = "name",
    [AX_TOK_INT] = "number",
    [AX_TOK_FLOAT] = "number",
    [AX_TOK_STRING] = "string",
    [AX_TOK_FSTRING] = "f-string",
    [AX_TOK_DEF] = "'def'",
    [AX_TOK_LAMBDA] = "'lambda'",
    [AX_TOK_IF] = "'if'",
    [AX_TOK_ELIF] = "'elif'",
    [AX_TOK_ELSE] = "'else'",
    [AX_TOK_FOR] = "'for'",
    [AX_TOK_IN] = "'in'",
    [AX_TOK_WHILE] = "'while'",
    [AX_TOK_RETURN] = "'return'",
    [AX_TOK_IMPORT] = "'import'",
    [AX_TOK_FROM] = "'from'",
    [AX_TOK_AS] = "'as'",
    [AX_TOK_AND] = "'and'",
    [AX_TOK_OR] = "'or'",
    [AX_TOK_NOT] = "'not'",
    [AX_TOK_TRUE] = "'True'",
    [AX_TOK_FALSE] = "'False'",
    [AX_TOK_NONE] = "'None'",
    [AX_TOK_PASS] = "'pass'",
    [AX_TOK_BREAK] = "'break'",
    [AX_TOK_CONTINUE] = "'continue'",
    [AX_TOK_ASSERT] = "'assert'",
    [AX_TOK_IS] = "'is'",
    [AX_TOK_LPAREN] = "'('",
    [AX_TOK_RPAREN] = "')'",
    [AX_TOK_LBRACKET] = "'['",
    [AX_TOK_RBRACKET] = "']'",
    [AX_TOK_LBRACE] = "'{'",
    [AX_TOK_RBRACE] = "'}'",
    [AX_TOK_COMMA] = "','",
    [AX_TOK_COLON] = "':'",
    [AX_TOK_SEMI] = "';'",
    [AX_TOK_DOT] = "'.'",
    [AX_TOK_ELLIPSIS] = "'...'",
    [AX_TOK_AT] = "'@'",
    [AX_TOK_ASSIGN] = "'='",
    [AX_TOK_ARROW] = "'->'",
    [AX_TOK_WALRUS] = "':='",
    [AX_TOK_PLUS] = "'+'",
    [AX_TOK_MINUS] = "'-'",
    [AX_TOK_STAR] = "'*'",
    [AX_TOK_SLASH] = "'/'",
    [AX_TOK_DSLASH] = "'//'",
    [AX_TOK_PERCENT] = "'%'",
    [AX_TOK_DSTAR] = "'**'",
    [AX_TOK_AMP] = "'&'",
    [AX_TOK_PIPE] = "'|'",
    [AX_TOK_CARET] = "'^'",
    [AX_TOK_TILDE] = "'~'",
    [AX_TOK_LSHIFT] = "'<<'",
    [AX_TOK_RSHIFT] = "'>>'",
    [AX_TOK_LT] = "'<'",
    [AX_TOK_GT] = "'>'",
    [AX_TOK_LE] = "'<='",
    [AX_TOK_GE] = "'>='",
    [AX_TOK_EQ] = "'=='",
    [AX_TOK_NE] = "'!='",
    [AX_TOK_PLUSEQ] = "'+='",
    [AX_TOK_MINUSEQ] = "'-='",
    [AX_TOK_STAREQ] = "'*='",
    [AX_TOK_SLASHEQ] = "'/='",
    [AX_TOK_DSLASHEQ] = "'//='",
    [AX_TOK_PERCENTEQ] = "'%='",
    [AX_TOK_DSTAREQ] = "'**='",
    [AX_TOK_ATEQ] = "'@='",
    [AX_TOK_AMPEQ] = "'&='",
    [AX_TOK_PIPEEQ] = "'|='",
    [AX_TOK_CARETEQ] = "'^='",
    [AX_TOK_LSHIFTEQ] = "'<<='",
    [AX_TOK_RSHIFTEQ] = "'>>='",
};

const char *ax_tok_kind_desc(ax_tok_kind kind) {
    return kind >= 0 && kind < AX_TOK_NKINDS && kind_desc[kind] ? kind_desc[kind] : "token";
}

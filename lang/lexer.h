/* The lexer: source text to tokens, Python style.
 *
 * Indentation becomes INDENT / DEDENT tokens (a stack of indentation levels, tabs and spaces
 * checked for consistent use as Python does); a line break inside (), [] or {} or after a
 * backslash joins lines; blank and comment-only lines produce nothing. Tokens are made on
 * demand (ax_lexer_fill), so that the parser can stop early on a huge input without having
 * tokenized all of it; ax_lex tokenizes a whole text at once. A lexical error stops the lexer:
 * the tokens then end with one AX_TOK_ERROR token (the parser reports it when it gets there, so
 * that an earlier syntax error is still reported first), and the error is described in the
 * token list. The source is NUL-terminated text with '\n' line ends (see ax_source_normalize). */
#ifndef AX_LEXER_H
#define AX_LEXER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../runtime/error.h"

typedef enum {
    AX_TOK_EOF,
    AX_TOK_ERROR,
    AX_TOK_NEWLINE,
    AX_TOK_INDENT,
    AX_TOK_DEDENT,
    AX_TOK_NAME,
    AX_TOK_INT,
    AX_TOK_FLOAT,
    AX_TOK_STRING,
    AX_TOK_FSTRING, /* f"...": str is a str.format template, one {} per field */
    /* keywords */
    AX_TOK_DEF,
    AX_TOK_LAMBDA,
    AX_TOK_IF,
    AX_TOK_ELIF,
    AX_TOK_ELSE,
    AX_TOK_FOR,
    AX_TOK_IN,
    AX_TOK_WHILE,
    AX_TOK_RETURN,
    AX_TOK_IMPORT,
    AX_TOK_FROM,
    AX_TOK_AS,
    AX_TOK_AND,
    AX_TOK_OR,
    AX_TOK_NOT,
    AX_TOK_TRUE,
    AX_TOK_FALSE,
    AX_TOK_NONE,
    AX_TOK_PASS,
    AX_TOK_BREAK,
    AX_TOK_CONTINUE,
    AX_TOK_ASSERT,
    AX_TOK_IS,
    /* brackets and punctuation */
    AX_TOK_LPAREN,
    AX_TOK_RPAREN,
    AX_TOK_LBRACKET,
    AX_TOK_RBRACKET,
    AX_TOK_LBRACE,
    AX_TOK_RBRACE,
    AX_TOK_COMMA,
    AX_TOK_COLON,
    AX_TOK_SEMI,
    AX_TOK_DOT,
    AX_TOK_ELLIPSIS,
    AX_TOK_AT,
    AX_TOK_ASSIGN, /* = */
    AX_TOK_ARROW,  /* -> (only to report that annotations are not supported) */
    AX_TOK_WALRUS, /* := (likewise) */
    /* operators */
    AX_TOK_PLUS,
    AX_TOK_MINUS,
    AX_TOK_STAR,
    AX_TOK_SLASH,
    AX_TOK_DSLASH,
    AX_TOK_PERCENT,
    AX_TOK_DSTAR,
    AX_TOK_AMP,
    AX_TOK_PIPE,
    AX_TOK_CARET,
    AX_TOK_TILDE,
    AX_TOK_LSHIFT,
    AX_TOK_RSHIFT,
    AX_TOK_LT,
    AX_TOK_GT,
    AX_TOK_LE,
    AX_TOK_GE,
    AX_TOK_EQ,
    AX_TOK_NE,
    /* augmented assignment */
    AX_TOK_PLUSEQ,
    AX_TOK_MINUSEQ,
    AX_TOK_STAREQ,
    AX_TOK_SLASHEQ,
    AX_TOK_DSLASHEQ,
    AX_TOK_PERCENTEQ,
    AX_TOK_DSTAREQ,
    AX_TOK_ATEQ,
    AX_TOK_AMPEQ,
    AX_TOK_PIPEEQ,
    AX_TOK_CARETEQ,
    AX_TOK_LSHIFTEQ,
    AX_TOK_RSHIFTEQ,
    AX_TOK_NKINDS
} ax_tok_kind;

/* A replacement field of an f-string: the text of its expression and where that starts. */
typedef struct ax_fstring_field {
    char *expr; /* owned, NUL-terminated */
    int line, col;
} ax_fstring_field;

typedef struct ax_token {
    ax_tok_kind kind;
    ax_span span;
    const char *start; /* the token's text in the source (len bytes) */
    int len;
    char *str; /* AX_TOK_STRING: the value with escapes resolved (owned); AX_TOK_FSTRING:
                  the literal parts with escapes resolved and braces doubled, and each
                  field as {}, {!r}, {:spec} (a str.format template) */
    ax_fstring_field *fields; /* AX_TOK_FSTRING: the fields' expressions, in order (owned) */
    int nfields;
    int64_t ival; /* AX_TOK_INT */
    double fval;  /* AX_TOK_FLOAT */
} ax_token;

/* Tokens are stored in blocks of this many, so that their addresses never change while more
 * are made, and the blocks a parser is done with can be freed. */
#define AX_TOKEN_BLOCK 1024

typedef struct ax_token_list {
    ax_token **blocks; /* token i is blocks[i / AX_TOKEN_BLOCK][i % AX_TOKEN_BLOCK] */
    int nblocks, capblocks;
    int dropped; /* blocks [0, dropped) were freed by ax_token_list_drop */
    int n;       /* tokens made so far; once the input ended, the last one is AX_TOK_EOF, or
                    AX_TOK_ERROR after a lexical error */
    bool done;   /* the last token was made */
    /* the lexical error, when there is one */
    bool failed;
    bool out_of_memory;
    bool incomplete;  /* the error is the input ending early: an open bracket, an
                         unterminated triple-quoted string, a backslash at the very end */
    bool unclosed;    /* the error is "'(' was never closed" (err_span is the bracket) */
    bool interrupted; /* ax_lexer_interrupt stopped it */
    char message[256];
    ax_span err_span;
    int eof_indent_depth;  /* open indented blocks when the input ended */
    bool continued_at_end; /* the input ends with a backslash continuation */
} ax_token_list;

/* Token i (0 <= i < n, not dropped). */
static inline ax_token *ax_token_at(const ax_token_list *l, int i) {
    return &l->blocks[i / AX_TOKEN_BLOCK][i % AX_TOKEN_BLOCK];
}

/* Tokenizes `source` whole. Returns 0, or -1 after a lexical error (described in `out`). The
 * list is filled in either case and must be freed with ax_token_list_free. */
int ax_lex(const char *source, ax_token_list *out);
void ax_token_list_free(ax_token_list *list);
/* Frees the blocks that hold only tokens before index `before` (they can no longer be read). */
void ax_token_list_drop(ax_token_list *list, int before);

/* A lexer that makes tokens into `out` on demand. `source` must outlive it. NULL on OOM. */
typedef struct ax_lexer ax_lexer;
ax_lexer *ax_lexer_new(const char *source, ax_token_list *out);
/* The same for a piece of a bigger source (an f-string's field) that starts at line:col of
 * it, so that tokens carry their place in the whole source. */
ax_lexer *ax_lexer_new_at(const char *source, int line, int col, ax_token_list *out);
void ax_lexer_free(ax_lexer *lx);
/* Makes tokens until `out` holds at least `count` of them or the last one was made. */
void ax_lexer_fill(ax_lexer *lx, int count);
/* Stops the lexer as after a lexical error "interrupted" (Ctrl-C): no more tokens. */
void ax_lexer_interrupt(ax_lexer *lx);
/* Lexes the rest of the input without keeping its tokens, to learn how it ends: afterwards
 * out->failed and out->unclosed tell whether a bracket opened so far is never closed. */
void ax_lexer_scan_rest(ax_lexer *lx);

/* A copy of source[0, len) as the lexer reads it (Python's universal newlines): without a
 * leading UTF-8 byte order mark, with "\r\n" and a lone '\r' turned into '\n'. NUL bytes are
 * kept (the parser reports them). *out_len is the copy's length. NULL on OOM. */
char *ax_source_normalize(const char *source, size_t len, size_t *out_len);

/* How a token kind reads in a message: "'('", "name", "end of line", "'def'", ... */
const char *ax_tok_kind_desc(ax_tok_kind kind);

#endif

/* The lexer: source text to a token array, Python style.
 *
 * Indentation becomes INDENT / DEDENT tokens (a stack of indentation levels, tabs and spaces
 * checked for consistent use as Python does); a line break inside (), [] or {} or after a
 * backslash joins lines; blank and comment-only lines produce nothing. The whole source is
 * tokenized up front. A lexical error stops the lexer: the array then ends with one
 * AX_TOK_ERROR token (the parser reports it when it gets there, so that an earlier syntax error
 * is still reported first), and the error is described in the token list. */
#ifndef AX_LEXER_H
#define AX_LEXER_H

#include <stdbool.h>
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

typedef struct ax_token {
    ax_tok_kind kind;
    ax_span span;
    const char *start; /* the token's text in the source (len bytes) */
    int len;
    char *str;    /* AX_TOK_STRING: the value with escapes resolved (owned) */
    int64_t ival; /* AX_TOK_INT */
    double fval;  /* AX_TOK_FLOAT */
} ax_token;

typedef struct ax_token_list {
    ax_token *toks; /* ends with AX_TOK_EOF, or with AX_TOK_ERROR after a lexical error */
    int n, cap;
    /* the lexical error, when there is one */
    bool failed;
    bool out_of_memory;
    bool incomplete; /* the error is the input ending early: an open bracket, an
                        unterminated triple-quoted string, a backslash at the very end */
    bool unclosed;   /* the error is "'(' was never closed" (err_span is the bracket) */
    char message[256];
    ax_span err_span;
    int eof_indent_depth;  /* open indented blocks when the input ended */
    bool continued_at_end; /* the input ends with a backslash continuation */
} ax_token_list;

/* Tokenizes `source`. Returns 0, or -1 after a lexical error (described in `out`). The list
 * is filled in either case and must be freed with ax_token_list_free. */
int ax_lex(const char *source, ax_token_list *out);
void ax_token_list_free(ax_token_list *list);

/* How a token kind reads in a message: "'('", "name", "end of line", "'def'", ... */
const char *ax_tok_kind_desc(ax_tok_kind kind);

#endif

/* Lexer and parser tests: tree shapes (as S-expressions), literal values, spans, syntax errors
 * with their line:col and message, the REPL's completeness test, the conformance programs and
 * LANGUAGE.md's examples, deep nesting, and a fuzz loop that must never crash or leak.
 *
 * The expected trees of valid snippets were produced from Python 3.11's own ast module,
 * rendered in the same S-expression format, so they also check Python's precedence rules. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../lang/ast.h"
#include "../../lang/lexer.h"
#include "../../runtime/context.h"
#include "../../runtime/format.h"

/* A context without the thread pool or BLAS: the parser only records errors in it. */
static ax_ctx *new_ctx(void) {
    return calloc(1, sizeof(ax_ctx));
}
static void free_ctx(ax_ctx *cx) {
    ax_error_clear(cx);
    free(cx);
}

/* The program's statements dumped one per line, or NULL (with the error left in cx). */
static char *parse_dump(ax_ctx *cx, const char *src) {
    ax_program *p = ax_parse(cx, src, "test.ax");
    if (!p) return NULL;
    ax_strbuf sb;
    ax_strbuf_init(&sb);
    for (int i = 0; i < p->stmts.n; i++) {
        if (i) ax_strbuf_append(&sb, "\n");
        ax_ast_dump(&sb, p->stmts.items[i]);
    }
    ax_program_free(p);
    char *out = strdup(sb.data ? sb.data : "");
    ax_strbuf_free(&sb);
    return out;
}

static void check_tree(const char *src, const char *want) {
    ax_ctx *cx = new_ctx();
    char *got = parse_dump(cx, src);
    if (!got) fail_msg("parse of <<%s>> failed: %s", src, cx->err.message);
    if (strcmp(got, want) != 0) fail_msg("<<%s>>\n  got:  %s\n  want: %s", src, got, want);
    free(got);
    free_ctx(cx);
}

/* ---- tree shapes ---- */

static const struct {
    const char *src, *tree;
} trees[] = {
    {"1", "(expr 1)"},
    {"0x1234", "(expr 4660)"},
    {"0b101", "(expr 5)"},
    {"0o17", "(expr 15)"},
    {"1_000", "(expr 1000)"},
    {"2.5", "(expr 2.5)"},
    {"1e-3", "(expr 0.001)"},
    {".5", "(expr 0.5)"},
    {"5.", "(expr 5.0)"},
    {"1E+10", "(expr 10000000000.0)"},
    {"0.1", "(expr 0.1)"},
    {"10.0", "(expr 10.0)"},
    {"1e16", "(expr 1e+16)"},
    {"1.5e-7", "(expr 1.5e-07)"},
    {"0X_ff", "(expr 255)"},
    {"'single'", "(expr \"single\")"},
    {"\"double\"", "(expr \"double\")"},
    {"'a\\tb\\n'", "(expr \"a\\tb\\n\")"},
    {"\"q\\\"uote\"", "(expr \"q\\\"uote\")"},
    {"'''tri\nple'''", "(expr \"tri\\nple\")"},
    {"\"\\x41\\u00e9\\U0001F600\\101\"", "(expr \"Aé😀A\")"},
    {"r\"raw\\n\"", "(expr \"raw\\\\n\")"},
    {"\"a\" 'b' \"c\"", "(expr \"abc\")"},
    {"\"unknown \\d\"", "(expr \"unknown \\\\d\")"},
    {"\"line\\\ncont\"", "(expr \"linecont\")"},
    {"True", "(expr True)"},
    {"False", "(expr False)"},
    {"None", "(expr None)"},
    {"...", "(expr ...)"},
    {"x", "(expr x)"},
    {"-x ** 2", "(expr (u- (** x 2)))"},
    {"2 ** -1", "(expr (** 2 (u- 1)))"},
    {"2 ** 3 ** 2", "(expr (** 2 (** 3 2)))"},
    {"-2 ** -1", "(expr (u- (** 2 (u- 1))))"},
    {"~x + 1", "(expr (+ (~ x) 1))"},
    {"a + b * c", "(expr (+ a (* b c)))"},
    {"(a + b) * c", "(expr (* (+ a b) c))"},
    {"a - b - c", "(expr (- (- a b) c))"},
    {"a / b // c % d @ e", "(expr (@ (% (// (/ a b) c) d) e))"},
    {"a | b ^ c & d << e >> f", "(expr (| a (^ b (& c (>> (<< d e) f)))))"},
    {"a << b + c", "(expr (<< a (+ b c)))"},
    {"a == b", "(expr (cmp a == b))"},
    {"a < b <= c", "(expr (cmp a < b <= c))"},
    {"a in b", "(expr (cmp a in b))"},
    {"a not in b", "(expr (cmp a not-in b))"},
    {"a is b", "(expr (cmp a is b))"},
    {"a is not b", "(expr (cmp a is-not b))"},
    {"a != b > c >= d", "(expr (cmp a != b > c >= d))"},
    {"not a == b", "(expr (not (cmp a == b)))"},
    {"not not a", "(expr (not (not a)))"},
    {"a and b or c and d", "(expr (or (and a b) (and c d)))"},
    {"a or b or c", "(expr (or (or a b) c))"},
    {"a if c else b", "(expr (ifexp c a b))"},
    {"a if b else c if d else e", "(expr (ifexp b a (ifexp d c e)))"},
    {"x + 1 if x > 0 else -x", "(expr (ifexp (cmp x > 0) (+ x 1) (u- x)))"},
    {"lambda: 1", "(expr (lambda () 1))"},
    {"lambda x, y=2: x + y", "(expr (lambda (x y=2) (+ x y)))"},
    {"lambda *args, k=1, **kw: k", "(expr (lambda (*args k=1 **kw) k))"},
    {"lambda a, *, b: a", "(expr (lambda (a * b) a))"},
    {"lambda x: a if x else b", "(expr (lambda (x) (ifexp x a b)))"},
    {"-x.T", "(expr (u- (. x T)))"},
    {"x.T ** 2", "(expr (** (. x T) 2))"},
    {"()", "(expr (tuple))"},
    {"(a,)", "(expr (tuple a))"},
    {"(a, b)", "(expr (tuple a b))"},
    {"(a, *b)", "(expr (tuple a (* b)))"},
    {"1, 2", "(expr (tuple 1 2))"},
    {"1,", "(expr (tuple 1))"},
    {"[]", "(expr (list))"},
    {"[a, b,]", "(expr (list a b))"},
    {"[*a, b]", "(expr (list (* a) b))"},
    {"{}", "(expr (dict))"},
    {"{\"w\": W, \"b\": b}", "(expr (dict (\"w\" W) (\"b\" b)))"},
    {"{1: 2,}", "(expr (dict (1 2)))"},
    {"[f(x) for x in xs]", "(expr (listcomp (call f x) (for x xs)))"},
    {"{1, *a}", "(expr (set 1 (* a)))"},
    {"f'a{x!r:>4}b{{'", "(expr (call (. \"a{!r:>4}b{{\" format) x))"},
    {"'{' f'{x}'", "(expr (call (. \"{{{}\" format) x))"},
    {"{k: v for k, v in d}", "(expr (dictcomp k v (for (tuple k v) d)))"},
    {"{x for x in xs if x}", "(expr (setcomp x (for x xs (if x))))"},
    {"{**a, 'b': 1, **c}", "(expr (dict (** a) (\"b\" 1) (** c)))"},
    {"sum(x * x for x in xs)", "(expr (call sum (genexp (* x x) (for x xs))))"},
    {"(x for x in xs)", "(expr (genexp x (for x xs)))"},
    {"[x for x in xs if x > 0 if x < 9]",
     "(expr (listcomp x (for x xs (if (cmp x > 0)) (if (cmp x < 9)))))"},
    {"[(i, j) for i in a for j in b if i != j]",
     "(expr (listcomp (tuple i j) (for i a) (for j b (if (cmp i != j)))))"},
    {"[x * y for x, y in zip(a, b)]", "(expr (listcomp (* x y) (for (tuple x y) (call zip a b))))"},
    {"f()", "(expr (call f))"},
    {"f(a, b)", "(expr (call f a b))"},
    {"f(a, k=1)", "(expr (call f a (kw k 1)))"},
    {"f(*args, **kwargs)", "(expr (call f (* args) (** kwargs)))"},
    {"f(a, *b, c, k=1, **d)", "(expr (call f a (* b) c (kw k 1) (** d)))"},
    {"f(x,)", "(expr (call f x))"},
    {"f(a)(b)(c)", "(expr (call (call (call f a) b) c))"},
    {"jnp.dot(x, W)", "(expr (call (. jnp dot) x W))"},
    {"x[0]", "(expr (index x 0))"},
    {"x[-1]", "(expr (index x (u- 1)))"},
    {"x[1:3]", "(expr (index x (slice 1 3 _)))"},
    {"x[::2]", "(expr (index x (slice _ _ 2)))"},
    {"x[:, 0]", "(expr (index x (slice _ _ _) 0))"},
    {"x[..., None]", "(expr (index x ... None))"},
    {"x[i, j]", "(expr (index x i j))"},
    {"x[:]", "(expr (index x (slice _ _ _)))"},
    {"x[1:]", "(expr (index x (slice 1 _ _)))"},
    {"x[:-1]", "(expr (index x (slice _ (u- 1) _)))"},
    {"x[::-1]", "(expr (index x (slice _ _ (u- 1))))"},
    {"x[a:b:c]", "(expr (index x (slice a b c)))"},
    {"x[i,]", "(expr (index x i))"},
    {"x.at[0].set(10)", "(expr (call (. (index (. x at) 0) set) 10))"},
    {"x.at[1:3].add(5)", "(expr (call (. (index (. x at) (slice 1 3 _)) add) 5))"},
    {"p['w']", "(expr (index p \"w\"))"},
    {"a.b.c", "(expr (. (. a b) c))"},
    {"f(x)[0].shape", "(expr (. (index (call f x) 0) shape))"},
    {"x = 1", "(= x 1)"},
    {"a, b = 1.0, 2.0", "(= (tuple a b) (tuple 1.0 2.0))"},
    {"(a, b), c = t", "(= (tuple (tuple a b) c) t)"},
    {"[a, b] = t", "(= (list a b) t)"},
    {"first, *rest = xs", "(= (tuple first (* rest)) xs)"},
    {"*a, b = xs", "(= (tuple (* a) b) xs)"},
    {"x[i] = v", "(= (index x i) v)"},
    {"x.a = v", "(= (. x a) v)"},
    {"x, = t", "(= (tuple x) t)"},
    {"x += 1", "(+= x 1)"},
    {"x -= 1", "(-= x 1)"},
    {"x *= 2", "(*= x 2)"},
    {"x /= 2", "(/= x 2)"},
    {"x //= 2", "(//= x 2)"},
    {"x %= 2", "(%= x 2)"},
    {"x **= 2", "(**= x 2)"},
    {"x @= W", "(@= x W)"},
    {"x &= m", "(&= x m)"},
    {"x |= m", "(|= x m)"},
    {"x ^= m", "(^= x m)"},
    {"x <<= 1", "(<<= x 1)"},
    {"x >>= 1", "(>>= x 1)"},
    {"x = 1; y = 2", "(= x 1)\n(= y 2)"},
    {"x = 1;", "(= x 1)"},
    {"pass", "(pass)"},
    {"assert x", "(assert x)"},
    {"assert x > 0, 'positive'", "(assert (cmp x > 0) \"positive\")"},
    {"def square(x): x * x", "(def square (x) (do (expr (* x x))))"},
    {"def f(x, y=1, *args, z=2, **kw): x", "(def f (x y=1 *args z=2 **kw) (do (expr x)))"},
    {"def f(a, *, b=1): a", "(def f (a * b=1) (do (expr a)))"},
    {"def f(): pass", "(def f () (do (pass)))"},
    {"def f(x,): return x", "(def f (x) (do (return x)))"},
    {"def tanh(x):\n    y = exp(-2.0 * x)\n    (1.0 - y) / (1.0 + y)",
     "(def tanh (x) (do (= y (call exp (* (u- 2.0) x))) (expr (/ (- 1.0 y) (+ 1.0 y)))))"},
    {"def f(x):\n    return\n", "(def f (x) (do (return)))"},
    {"def f(x):\n    return x, 1\n", "(def f (x) (do (return (tuple x 1))))"},
    {"@jit\ndef f(x): x", "(def f (x) (@ jit) (do (expr x)))"},
    {"@partial(jit, static_argnums=(1,))\ndef f(x, n): x",
     "(def f (x n) (@ (call partial jit (kw static_argnums (tuple 1)))) (do (expr x)))"},
    {"@a\n@b.c\ndef f(): 1", "(def f () (@ a (. b c)) (do (expr 1)))"},
    {"def f(x):\n    def g(y):\n        y\n    g(x)",
     "(def f (x) (do (def g (y) (do (expr y))) (expr (call g x))))"},
    {"if c: x", "(if c (do (expr x)))"},
    {"if c: x\nelse: y", "(if c (do (expr x)) (do (expr y)))"},
    {"if a:\n    x\nelif b:\n    y\nelif c:\n    z\nelse:\n    w",
     "(if a (do (expr x)) (do (if b (do (expr y)) (do (if c (do (expr z)) (do (expr w)))))))"},
    {"if a:\n    x\nelif b:\n    y", "(if a (do (expr x)) (do (if b (do (expr y)))))"},
    {"for W, b in params:\n    x = x @ W + b", "(for (tuple W b) params (do (= x (+ (@ x W) b))))"},
    {"for i in range(3): s = s + i", "(for i (call range 3) (do (= s (+ s i))))"},
    {"for (a, b), c in t:\n    pass", "(for (tuple (tuple a b) c) t (do (pass)))"},
    {"for x in 1, 2:\n    pass", "(for x (tuple 1 2) (do (pass)))"},
    {"while i < 10:\n    i = i + 1\n    if i > 5:\n        break\n    continue",
     "(while (cmp i < 10) (do (= i (+ i 1)) (if (cmp i > 5) (do (break))) (continue)))"},
    {"import nn", "(import nn)"},
    {"import optim as opt", "(import optim as opt)"},
    {"import a.b", "(import a.b)"},
    {"import a.b as c, d", "(import a.b as c)\n(import d)"},
    {"from random import normal, split", "(from random normal split)"},
    {"from a import b, c as d", "(from a b (c as d))"},
    {"from a import (b, c)", "(from a b c)"},
    {"from a import (b,\n    c as d,\n)", "(from a b (c as d))"},
    {"from a.b import c", "(from a.b c)"},
    {"x = (1 +\n     2)", "(= x (+ 1 2))"},
    {"x = [1,\n  2,\n]", "(= x (list 1 2))"},
    {"x = 1 + \\\n    2", "(= x (+ 1 2))"},
    {"x = 1  # comment\n# another\n\ny = 2", "(= x 1)\n(= y 2)"},
    {"return", "(return)"},
    {"return x", "(return x)"},
    {"sign = 1 if x > 0 else -1", "(= sign (ifexp (cmp x > 0) 1 (u- 1)))"},
    {"f = lambda x, y: x ** 2 + y", "(= f (lambda (x y) (+ (** x 2) y)))"},
    {"if x:\n\tif y:\n\t\tz\n\telse:\n\t\tw", "(if x (do (if y (do (expr z)) (do (expr w)))))"},
    {"def f(x):\n    if x > 0:\n        x\n    else:\n        -x\nprint(f(1.0))",
     "(def f (x) (do (if (cmp x > 0) (do (expr x)) (do (expr (u- x))))))\n(expr (call print (call "
     "f 1.0)))"},
    {"key, sub = random.split(key)\nrandom.normal(sub, (3, 4)); random.uniform(sub, (10,), "
     "minval=-1, maxval=1)",
     "(= (tuple key sub) (call (. random split) key))\n(expr (call (. random normal) sub (tuple 3 "
     "4)))\n(expr (call (. random uniform) sub (tuple 10) (kw minval (u- 1)) (kw maxval 1)))"},
};

static void test_trees(void **state) {
    (void)state;
    for (size_t i = 0; i < sizeof trees / sizeof trees[0]; i++)
        check_tree(trees[i].src, trees[i].tree);
}

/* Forms whose tree Python would print differently or that Python lacks. */
static void test_ax_specific_trees(void **state) {
    (void)state;
    /* a parenthesised index is one entry, a bare comma list is several */
    check_tree("x[(i, j)]", "(expr (index x (tuple i j)))");
    check_tree("x[i, j]", "(expr (index x i j))");
    /* a parenthesised lambda is an ordinary operand */
    check_tree("f = (lambda: 1) if c else g", "(= f (ifexp c (lambda () 1) g))");
    /* an elif chain nests an AX_N_IF alone in orelse */
    check_tree("if a: 1\nelif b: 2\nelse: 3",
               "(if a (do (expr 1)) (do (if b (do (expr 2)) (do (expr 3)))))");
    /* semicolons and a trailing semicolon */
    check_tree("a; b; c;", "(expr a)\n(expr b)\n(expr c)");
    /* `import a, b` becomes one statement per module */
    check_tree("import a, b.c as d", "(import a)\n(import b.c as d)");
    /* CRLF line ends, a form feed, a comment after a block header */
    check_tree("if x:  # why\r\n    y\r\n", "(if x (do (expr y)))");
    check_tree("x = 1\n\f\ny = 2", "(= x 1)\n(= y 2)");
    /* empty input, only comments and blank lines */
    check_tree("", "");
    check_tree("# nothing\n\n   \n# more", "");
    /* non-ASCII names and strings */
    check_tree("α = \"é\"", "(= α \"é\")");
}

/* ---- literal values and spans ---- */

static ax_program *parse_ok(ax_ctx *cx, const char *src) {
    ax_program *p = ax_parse(cx, src, "test.ax");
    if (!p) fail_msg("parse of <<%s>> failed: %s", src, cx->err.message);
    return p;
}

/* The expression of the program's first statement (an expression statement). */
static const ax_node *first_expr(const ax_program *p) {
    assert_true(p->stmts.n >= 1);
    assert_int_equal(p->stmts.items[0]->kind, AX_N_EXPR);
    return p->stmts.items[0]->a;
}

static void test_literal_values(void **state) {
    (void)state;
    ax_ctx *cx = new_ctx();
    static const struct {
        const char *src;
        int64_t value;
    } ints[] = {{"0", 0},
                {"1_000", 1000},
                {"0x1234", 0x1234},
                {"0XfF", 255},
                {"0b101", 5},
                {"0o17", 15},
                {"0x_ff", 255},
                {"00", 0},
                {"9223372036854775807", INT64_MAX},
                {"0x7fffffffffffffff", INT64_MAX}};
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
        ax_program *p = parse_ok(cx, ints[i].src);
        const ax_node *n = first_expr(p);
        assert_int_equal(n->kind, AX_N_INT);
        assert_true(n->ival == ints[i].value);
        assert_string_equal(n->text, ints[i].src);
        ax_program_free(p);
    }
    static const struct {
        const char *src;
        double value;
    } floats[] = {{"2.5", 2.5}, {"1e-3", 1e-3},      {".5", 0.5},
                  {"5.", 5.0},  {"1_0.2_5", 10.25},  {"1E+10", 1e10},
                  {"0e0", 0.0}, {"1e400", INFINITY}, {"3.141592653589793", 3.141592653589793}};
    for (size_t i = 0; i < sizeof floats / sizeof floats[0]; i++) {
        ax_program *p = parse_ok(cx, floats[i].src);
        const ax_node *n = first_expr(p);
        assert_int_equal(n->kind, AX_N_FLOAT);
        assert_true(n->fval == floats[i].value);
        assert_string_equal(n->text, floats[i].src);
        ax_program_free(p);
    }
    static const struct {
        const char *src, *value;
    } strings[] = {
        {"'a\\tb'", "a\tb"},
        {"\"\\x41\\101\\u00e9\\U0001F600\"", "AA\xc3\xa9\xf0\x9f\x98\x80"},
        {"'\\'\"'", "'\""},
        {"\"it's\"", "it's"},
        {"'''a\nb'''", "a\nb"},
        {"'''a\r\nb'''\r\n", "a\nb"},
        {"\"\"\"x\"y\"\"\"", "x\"y"},
        {"r'\\n\\''", "\\n\\'"},
        {"'a' \"b\"\n", "ab"},
        {"'\\d'", "\\d"},
        {"'a\\\nb'", "ab"},
        {"u'x'", "x"},
        {"''", ""},
    };
    for (size_t i = 0; i < sizeof strings / sizeof strings[0]; i++) {
        ax_program *p = parse_ok(cx, strings[i].src);
        const ax_node *n = first_expr(p);
        assert_int_equal(n->kind, AX_N_STR);
        assert_string_equal(n->text, strings[i].value);
        ax_program_free(p);
    }
    free_ctx(cx);
}

static void assert_span(ax_span s, int line, int col, int end_line, int end_col) {
    if (s.line != line || s.col != col || s.end_line != end_line || s.end_col != end_col)
        fail_msg("span %d:%d-%d:%d, want %d:%d-%d:%d", s.line, s.col, s.end_line, s.end_col, line,
                 col, end_line, end_col);
}

static void test_spans(void **state) {
    (void)state;
    ax_ctx *cx = new_ctx();
    ax_program *p = parse_ok(cx, "y = x + b\nz = (1.0 - y) / (1.0 + y)\nf(a, k=2)\n");
    const ax_node *assign = p->stmts.items[0];
    assert_span(assign->span, 1, 1, 1, 10);
    assert_span(assign->a->span, 1, 1, 1, 2);
    assert_span(assign->b->span, 1, 5, 1, 10);
    const ax_node *div = p->stmts.items[1]->b; /* the parentheses belong to the operands */
    assert_span(div->span, 2, 5, 2, 26);
    assert_span(div->a->span, 2, 5, 2, 14);
    assert_span(p->stmts.items[2]->a->span, 3, 1, 3, 10);
    ax_program_free(p);

    p = parse_ok(cx, "def f(x):\n    y = x\n    y * 2\n\nif a:\n    1\nelse:\n    2\n");
    assert_span(p->stmts.items[0]->span, 1, 1, 3, 10);
    assert_span(p->stmts.items[0]->body.items[1]->span, 3, 5, 3, 10);
    assert_span(p->stmts.items[1]->span, 5, 1, 8, 6);
    ax_program_free(p);

    p = parse_ok(cx, "s = '''a\nbc'''\nx[1:3, ::2]\n");
    assert_span(p->stmts.items[0]->b->span, 1, 5, 2, 6);
    const ax_node *index = p->stmts.items[1]->a;
    assert_span(index->span, 3, 1, 3, 12);
    assert_span(index->items.items[0]->span, 3, 3, 3, 6);
    assert_span(index->items.items[1]->span, 3, 8, 3, 11);
    ax_program_free(p);

    /* parameters and the def's decorators */
    p = parse_ok(cx, "@jit\ndef f(x, y=1, *args, z=2, **kw): x\n");
    const ax_node *def = p->stmts.items[0];
    assert_int_equal(def->kind, AX_N_DEF);
    assert_string_equal(def->text, "f");
    assert_int_equal(def->items.n, 1);
    assert_int_equal(def->nparams, 5);
    assert_string_equal(def->params[1].name, "y");
    assert_non_null(def->params[1].default_value);
    assert_true(def->params[2].star && !def->params[2].kwonly);
    assert_true(def->params[3].kwonly && def->params[3].default_value);
    assert_true(def->params[4].star2);
    assert_null(def->params[0].default_value);
    ax_program_free(p);
    free_ctx(cx);
}

/* ---- syntax errors ---- */

static const struct {
    const char *src;
    int line, col;
    const char *message;
} errors[] = {
    {"if x\n    y\n", 1, 5, "expected ':' after the condition of 'if'"},
    {"while x\n    y\n", 1, 8, "expected ':' after the condition of 'while'"},
    {"for x in y\n    1\n", 1, 11, "expected ':' after 'for ... in ...'"},
    {"def f(x)\n    1\n", 1, 9, "expected ':' after the parameters of 'def'"},
    {"if a:\n    x\nelse\n    y\n", 3, 5, "expected ':' after 'else'"},
    {"if a:\n    x\nelif b\n    y\n", 3, 7, "expected ':' after the condition of 'elif'"},
    {"lambda x x\n", 1, 10, "expected ':' after the parameters of 'lambda'"},
    {"if x = 1:\n    y\n", 1, 6, "invalid syntax. Maybe you meant '==' instead of '='?"},
    {"  x = 1\n", 1, 1, "unexpected indent"},
    {"x = 1\n    y = 2\n", 2, 1, "unexpected indent"},
    {"if x:\n    a\n  b\n", 3, 1, "unindent does not match any outer indentation level"},
    {"if x:\ny\n", 2, 1, "expected an indented block after 'if' statement on line 1"},
    {"def f(x):\n", 2, 1, "expected an indented block after function definition on line 1"},
    {"for i in r:\n\nx\n", 3, 1, "expected an indented block after 'for' statement on line 1"},
    {"if x:\n\ty\n        z\n", 3, 1, "inconsistent use of tabs and spaces in indentation"},
    {"x = 'abc\n", 1, 5, "unterminated string literal (detected at line 1)"},
    {"x = \"abc\n", 1, 5, "unterminated string literal (detected at line 1)"},
    {"x = '''abc\n", 1, 5, "unterminated triple-quoted string literal (detected at line 1)"},
    {"s = \"\"\"doc\nmore\n", 1, 5,
     "unterminated triple-quoted string literal (detected at line 2)"},
    {"x = (1,\n2\n", 1, 5, "'(' was never closed"},
    {"foo(\n  1\ny = 2\n", 1, 4, "'(' was never closed"},
    {"x = [\n", 1, 5, "'[' was never closed"},
    {"x = (]\n", 1, 6, "closing parenthesis ']' does not match opening parenthesis '('"},
    {"x = )\n", 1, 5, "unmatched ')'"},
    {"x=[1,2,)\n", 1, 8, "closing parenthesis ')' does not match opening parenthesis '['"},
    {"x = (\n1]\n", 2, 2,
     "closing parenthesis ']' does not match opening parenthesis '(' on line 1"},
    {"x = 1 \\ y\n", 1, 8, "unexpected character after line continuation character"},
    {"x = \\", 1, 5, "unexpected end of input after line continuation character"},
    {"1 = x\n", 1, 1, "cannot assign to a literal here. Maybe you meant '==' instead of '='?"},
    {"f() = 1\n", 1, 1,
     "cannot assign to a function call here. Maybe you meant '==' instead of '='?"},
    {"a + b = 1\n", 1, 1,
     "cannot assign to an expression here. Maybe you meant '==' instead of '='?"},
    {"True = 1\n", 1, 1, "cannot assign to True here. Maybe you meant '==' instead of '='?"},
    {"(a, 1) = x\n", 1, 5, "cannot assign to a literal"},
    {"[a, 'b'] = x\n", 1, 5, "cannot assign to a literal"},
    {"*a = 1\n", 1, 1, "starred assignment target must be in a list or tuple"},
    {"a, *b, *c = 1\n", 1, 1, "multiple starred expressions in assignment"},
    {"for 1 in x:\n    pass\n", 1, 5, "cannot assign to a literal"},
    {"a = b = 1\n", 1, 7,
     "chained assignment `a = b = e` is not supported; assign one name at a time"},
    {"a, b += 1\n", 1, 1, "a tuple is an illegal expression for augmented assignment"},
    {"x[0] += 1\n", 1, 1,
     "'+=' cannot update an element: values are immutable (for an array, write x = "
     "x.at[i].add(v))"},
    {"x.a += 1\n", 1, 1, "'+=' cannot update an attribute: values are immutable"},
    {"f(x) += 1\n", 1, 1, "a function call is an illegal expression for augmented assignment"},
    {"x = 01\n", 1, 5,
     "leading zeros in decimal integer literals are not permitted; use an 0o prefix for octal "
     "integers"},
    {"x = 1abc\n", 1, 5, "invalid decimal literal"},
    {"x = 0b102\n", 1, 9, "invalid digit '2' in binary literal"},
    {"x = 0x\n", 1, 5, "invalid hexadecimal literal"},
    {"x = 1_\n", 1, 5, "invalid decimal literal"},
    {"x = 1__0\n", 1, 5, "invalid decimal literal"},
    {"x = 1e\n", 1, 5, "invalid decimal literal"},
    {"x = 0o8\n", 1, 7, "invalid digit '8' in octal literal"},
    {"x = 99999999999999999999\n", 1, 5,
     "integer literal is too large (the largest is 9223372036854775807)"},
    {"x = $\n", 1, 5, "invalid character '$' (U+0024)"},
    {"x = !y\n", 1, 5, "invalid syntax: '!' is not an operator (use 'not' for negation)"},
    {"x = \x01"
     "\n",
     1, 5, "invalid non-printable character U+0001"},
    {"x = '\\x1'\n", 1, 6, "truncated \\xXX escape"},
    {"x = '\\u12'\n", 1, 6, "truncated \\uXXXX escape"},
    {"x = f'{}'\n", 1, 7, "f-string: empty expression not allowed"},
    {"x = f'{a'\n", 1, 7, "f-string: expecting '}'"},
    {"x = f'}'\n", 1, 7, "f-string: single '}' is not allowed"},
    {"x = f'{a!x}'\n", 1, 9, "f-string: invalid conversion character: expected 's', 'r', or 'a'"},
    {"x = f'{a b}'\n", 1, 10, "f-string: invalid syntax. Perhaps you forgot a comma?"},
    {"x = b'a'\n", 1, 5, "bytes literals are not supported"},
    {"f(a=1, b)\n", 1, 8, "positional argument follows keyword argument"},
    {"f(**a, b)\n", 1, 8, "positional argument follows keyword argument unpacking"},
    {"f(**a, *b)\n", 1, 8, "iterable argument unpacking follows keyword argument unpacking"},
    {"f(a=1, a=2)\n", 1, 8, "keyword argument repeated: a"},
    {"f(a.b=1)\n", 1, 3, "expression cannot contain assignment, perhaps you meant \"==\"?"},
    {"f(a, x for x in y)\n", 1, 8, "a generator expression must be parenthesized"},
    {"f(x for x in y, a)\n", 1, 3, "a generator expression must be parenthesized"},
    {"x = [1 2]\n", 1, 8, "invalid syntax. Perhaps you forgot a comma?"},
    {"f(a b)\n", 1, 5, "invalid syntax. Perhaps you forgot a comma?"},
    {"def f(a=1, b): 1\n", 1, 12, "non-default argument follows default argument"},
    {"def f(a, a): 1\n", 1, 10, "duplicate argument 'a' in function definition"},
    {"def f(*): 1\n", 1, 7, "named arguments must follow bare *"},
    {"def f(**k, a): 1\n", 1, 12, "arguments cannot follow var-keyword argument"},
    {"def f(*a=1): 1\n", 1, 9, "var-positional argument cannot have default value"},
    {"def f(*a, *b): 1\n", 1, 11, "* argument may appear only once"},
    {"def f(a, /, b): 1\n", 1, 10, "positional-only parameters ('/') are not supported"},
    {"def f(x: int): x\n", 1, 8, "type annotations are not supported"},
    {"def f(x) -> int: x\n", 1, 10, "return type annotations are not supported"},
    {"def (x): 1\n", 1, 5, "expected a function name after 'def', found '('"},
    {"def f x: 1\n", 1, 7, "expected '(' after the function name"},
    {"x = 1 +\n", 1, 8, "expected an expression, found end of line"},
    {"x = a if b\n", 1, 5, "expected 'else' after 'if' expression"},
    {"x[]\n", 1, 3, "expected an index between '[' and ']'"},
    {"x == = 1\n", 1, 6, "expected an expression, found '='"},
    {"a b\n", 1, 3, "invalid syntax: unexpected name 'b'"},
    {"print 'hello'\n", 1, 1, "Missing parentheses in call to 'print'. Did you mean print(...)?"},
    {"x = {1: 2, 3}\n", 1, 13, "':' expected after dictionary key"},
    {"x = {1: 2, 3: 4 for a in b}\n", 1, 17, "a dict comprehension has one `key: value` entry"},
    {"x = {*a: 1}\n", 1, 6, "cannot use a starred expression as a dict key"},
    {"x = {*a for a in b}\n", 1, 6, "iterable unpacking cannot be used in a comprehension"},
    {"x = [*a for a in b]\n", 1, 6, "iterable unpacking cannot be used in a comprehension"},
    {"else: 1\n", 1, 1, "'else' without a matching 'if' at the same indentation"},
    {"for x in y:\n    pass\nelse:\n    pass\n", 3, 1, "'else' after a loop is not supported"},
    {"def f(x): if x: 1\n", 1, 11,
     "'if' cannot follow ':' on the same line; start it on a new, indented line"},
    {"x: int = 1\n", 1, 2, "variable annotations are not supported"},
    {"x := 1\n", 1, 3, "the walrus operator ':=' is not supported"},
    {"@jit\nx = 1\n", 2, 1, "expected 'def' after a decorator"},
    {"*a\n", 1, 1, "cannot use starred expression here"},
    {"x = *a\n", 1, 5, "cannot use starred expression here"},
    {"from . import x\n", 1, 6, "relative imports are not supported"},
    {"from a import *\n", 1, 15, "'from ... import *' is not supported: name what you import"},
    {"from a import b,\n", 1, 16, "trailing comma not allowed without surrounding parentheses"},
    {"import\n", 1, 7, "expected a module name after 'import', found end of line"},
    {"import a.\n", 1, 10, "expected a name after '.' in the module name"},
    {"from a import\n", 1, 14, "expected a name to import, found end of line"},
    {"class A: pass\n", 1, 1, "classes are not supported in ax (use functions, tuples and dicts)"},
    {"try:\n    x\n", 1, 1, "exceptions are not supported in ax ('try')"},
    {"del x\n", 1, 1, "'del' is not supported: ax values are immutable"},
    {"raise E\n", 1, 1, "exceptions are not supported in ax ('raise'); use assert"},
    {"with f as g:\n    1\n", 1, 1, "'with' statements are not supported in ax"},
    {"x = (1\ny = 2\nz = 3\n", 1, 5, "'(' was never closed"},
    {"x = 1\nif x:\n    y = (\n", 3, 9, "'(' was never closed"},
    {"x.1\n", 1, 2, "invalid syntax: unexpected number .1"},
    {"x.if\n", 1, 3, "expected an attribute name after '.', found 'if'"},
};

static void test_syntax_errors(void **state) {
    (void)state;
    for (size_t i = 0; i < sizeof errors / sizeof errors[0]; i++) {
        ax_ctx *cx = new_ctx();
        ax_program *p = ax_parse(cx, errors[i].src, "test.ax");
        if (p) fail_msg("<<%s>> parsed, want the error '%s'", errors[i].src, errors[i].message);
        const ax_error_info *e = &cx->err;
        if (e->kind != AX_ERR_SYNTAX || !e->has_span || e->span.line != errors[i].line ||
            e->span.col != errors[i].col || strcmp(e->message, errors[i].message) != 0)
            fail_msg("<<%s>>\n  got  %s %d:%d '%s'\n  want SyntaxError %d:%d '%s'", errors[i].src,
                     ax_error_kind_name(e->kind), e->span.line, e->span.col, e->message,
                     errors[i].line, errors[i].col, errors[i].message);
        assert_string_equal(e->file, "test.ax");
        free_ctx(cx);
    }
}

/* The error keeps the offending line for the caret display. */
static void test_error_display(void **state) {
    (void)state;
    ax_ctx *cx = new_ctx();
    assert_null(ax_parse(cx, "x = 1\ny = (2 +\n     3 3)\n", "prog.ax"));
    assert_int_equal(cx->err.kind, AX_ERR_SYNTAX);
    assert_string_equal(cx->err.message, "invalid syntax. Perhaps you forgot a comma?");
    assert_string_equal(cx->err.file, "prog.ax");
    assert_true(cx->err.has_source);
    assert_string_equal(cx->err.source, "     3 3)");
    assert_int_equal(cx->err.span.col, 8);
    free_ctx(cx);
}

/* The printed error of a parse, from a memory stream. */
static char *printed_error(ax_ctx *cx) {
    char *text = calloc(1, 4096);
    FILE *f = fmemopen(text, 4095, "w");
    ax_error_print(cx, f);
    fclose(f);
    return text;
}

/* A long line shows a window around the error, not all of it, and never raw control bytes. */
static void test_error_display_long_and_unprintable(void **state) {
    (void)state;
    ax_strbuf sb;
    ax_strbuf_init(&sb);
    ax_strbuf_append(&sb, "x = [");
    for (int i = 0; i < 100000; i++) ax_strbuf_append(&sb, "1, ");
    ax_strbuf_append(&sb, "2 3");
    for (int i = 0; i < 100000; i++) ax_strbuf_append(&sb, ", 1");
    ax_strbuf_append(&sb, "]\n");
    ax_ctx *cx = new_ctx();
    assert_null(ax_parse(cx, sb.data, "long.ax"));
    assert_string_equal(cx->err.message, "invalid syntax. Perhaps you forgot a comma?");
    assert_int_equal(cx->err.span.col, 5 + 300000 + 3);
    char *out = printed_error(cx);
    assert_true(strlen(out) < 600);
    /* the source window and the caret line: the caret is under the '3' */
    char *src = strstr(out, "1 | ..."), *caret = src ? strstr(src, "\n  | ") : NULL;
    assert_non_null(caret);
    const char *three = strstr(src, "2 3") + 2, *mark = strchr(caret + 1, '^');
    assert_int_equal(mark - (caret + 1), three - src);
    assert_non_null(strstr(src, "1, 1...\n"));
    free(out);
    free_ctx(cx);
    ax_strbuf_free(&sb);

    /* an escape sequence in a string and a control character: shown escaped, caret aligned */
    cx = new_ctx();
    assert_null(ax_parse(cx, "s = '\x1b[31m\x7f\xc3\xa9' \x01\n", "ctl.ax"));
    assert_string_equal(cx->err.message, "invalid non-printable character U+0001");
    out = printed_error(cx);
    for (const char *q = out; *q; q++)
        if ((unsigned char)*q < 0x20 && *q != '\n') fail_msg("raw control byte in <<%s>>", out);
    assert_non_null(strstr(out, "1 | s = '\\x1b[31m\\x7f\xc3\xa9' \\x01\n"));
    /* s = '\x1b[31m\x7fé' is 20 columns wide */
    assert_non_null(strstr(out, "\n  | "
                                "                    "
                                "^^^^\n"));
    free(out);
    free_ctx(cx);
}

/* A UTF-8 byte order mark is skipped, and "\r\n" and a lone "\r" end lines (Python reads
 * sources with universal newlines); line numbers count them. */
static void test_bom_and_line_ends(void **state) {
    (void)state;
    check_tree("\xEF\xBB\xBFx = 1\r\ny = 2\rz = '''a\r\nb'''\r\n",
               "(= x 1)\n(= y 2)\n(= z \"a\\nb\")");
    check_tree("if x:\r\n    y\r\nelse:\r    z\r", "(if x (do (expr y)) (do (expr z)))");
    ax_ctx *cx = new_ctx();
    assert_null(ax_parse(cx, "\xEF\xBB\xBFx = 1\r\n\r\ny = )\r\n", "crlf.ax"));
    assert_int_equal(cx->err.span.line, 3);
    assert_int_equal(cx->err.span.col, 5);
    assert_string_equal(cx->err.source, "y = )");
    free_ctx(cx);
}

/* A NUL byte anywhere is a syntax error at that byte; nothing before it runs. */
static void test_nul_bytes(void **state) {
    (void)state;
    static const struct {
        const char *src;
        size_t len;
        int line, col;
    } cases[] = {
        {"\0print(1)\n", 10, 1, 1},   {"x = 1\ny = 2\0\n", 13, 2, 6},
        {"s = 'a\0b'\n", 11, 1, 7},   {"# a comment \0\nx = 1\n", 21, 1, 13},
        {"x = (1 +\r\n\0", 11, 2, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ax_ctx *cx = new_ctx();
        assert_null(ax_parse_n(cx, cases[i].src, cases[i].len, "nul.ax"));
        assert_int_equal(cx->err.kind, AX_ERR_SYNTAX);
        assert_string_equal(cx->err.message, "source code cannot contain null bytes");
        assert_int_equal(cx->err.span.line, cases[i].line);
        assert_int_equal(cx->err.span.col, cases[i].col);
        free_ctx(cx);
    }
}

/* ---- limits: deep nesting is an error, never a stack overflow ---- */

static char *repeat(const char *prefix, const char *unit, int n, const char *suffix) {
    size_t lp = strlen(prefix), lu = strlen(unit), ls = strlen(suffix);
    char *s = malloc(lp + lu * (size_t)n + ls + 1);
    memcpy(s, prefix, lp);
    for (int i = 0; i < n; i++) memcpy(s + lp + lu * (size_t)i, unit, lu);
    memcpy(s + lp + lu * (size_t)n, suffix, ls + 1);
    return s;
}

static void expect_error_containing(const char *src, const char *fragment) {
    ax_ctx *cx = new_ctx();
    ax_program *p = ax_parse(cx, src, "deep.ax");
    if (p) fail_msg("a deeply nested input parsed");
    if (!strstr(cx->err.message, fragment))
        fail_msg("error '%s' does not mention '%s'", cx->err.message, fragment);
    free_ctx(cx);
}

static void test_deep_nesting(void **state) {
    (void)state;
    char *s = repeat("x = ", "(", 5000, "1");
    expect_error_containing(s, "too many nested parentheses");
    free(s);
    s = repeat("x = ", "-", 100000, "1");
    expect_error_containing(s, "nested too deeply");
    free(s);
    s = repeat("x = ", "not ", 1000, "1");
    expect_error_containing(s, "nested too deeply");
    free(s);
    s = repeat("x = 1", " + 1", 100000, "\n");
    expect_error_containing(s, "too complex");
    free(s);
    /* the parse stops at the limit: it never gets to the invalid character at the end */
    s = repeat("x = 1", " + 1", 100000, " $\n");
    expect_error_containing(s, "too complex");
    free(s);
    s = repeat("x = [f", "(1).a[0]", 100000, " $]\n");
    expect_error_containing(s, "too complex");
    free(s);
    s = repeat("x = [1 and 1", " or 1", 100000, " $]\n");
    expect_error_containing(s, "too complex");
    free(s);
    s = repeat("x = f", "(1)", 50000, "\n");
    expect_error_containing(s, "too complex");
    free(s);
    s = repeat("x = a", ".b", 50000, "\n");
    expect_error_containing(s, "too complex");
    free(s);
    s = repeat("x = ", "lambda: ", 1000, "1");
    expect_error_containing(s, "nested too deeply");
    free(s);
    s = repeat("x = 2", " ** 2", 100000, "\n");
    expect_error_containing(s, "nested too deeply");
    free(s);
    /* 150 nested blocks */
    ax_strbuf sb;
    ax_strbuf_init(&sb);
    for (int i = 0; i < 150; i++) ax_strbuf_appendf(&sb, "%*sif x:\n", i, "");
    ax_strbuf_appendf(&sb, "%*sy\n", 150, "");
    expect_error_containing(sb.data, "too many levels of indentation");
    ax_strbuf_free(&sb);
    /* nesting within the limits parses */
    s = repeat("x = ", "(", 150, "1");
    char *t = repeat(s, ")", 150, "\n");
    ax_ctx *cx = new_ctx();
    ax_program *p = parse_ok(cx, t);
    ax_program_free(p);
    free_ctx(cx);
    free(s);
    free(t);
}

/* ---- the REPL's completeness test ---- */

static void test_incomplete(void **state) {
    (void)state;
    static const struct {
        const char *src;
        bool incomplete;
    } cases[] = {
        {"", false},
        {"\n", false},
        {"x = 1\n", false},
        {"x = 1", false},
        {"def square(x): x * x\n", false},
        {"def f(x):\n", true},
        {"def f(x):", true},
        {"def f(x):\n    y = x\n", true},
        {"def f(x):\n    y = x\n    y\n", true},
        {"def f(x):\n    y = x\n\n", false},
        {"def f(x):\n    y = x\n    \n", false},
        {"def f(x):\n\n", false}, /* a blank line ends it: parsing reports the missing block */
        {"@jit\n", true},
        {"@partial(jit, static_argnums=(1,))\n", true},
        {"@jit\ndef f(x):\n", true},
        {"@jit\ndef f(x): x\n", false},
        {"x = (1,\n", true},
        {"f(a,\n  b\n", true},
        {"x = [1, 2", true},
        {"d = {\n\n\n", true},
        {"x = (1, 2)\n", false},
        {"x = '''abc\n", true},
        {"x = '''abc\n\n", true},
        {"x = \"\"\"doc\nmore", true},
        {"x = '''abc'''\n", false},
        {"x = 1 + \\\n", true},
        {"x = 1 + \\", true},
        {"x = )\n", false},
        {"x = 'abc\n", false},
        {"x = $\n", false},
        {"if c: x\n", true},
        {"if c: x\nelse: y\n", false},
        {"if c: x\nelif d: y\n", true},
        {"if x:\n    a\nelse:\n", true},
        {"if x:\n    a\nelse:\n    b\n", true},
        {"if x:\n    a\nelse:\n    b\n\n", false},
        {"for i in range(3): s = s + i\n", false},
        {"for i in range(3):\n    s = s + i\n", true},
        {"while x:\n", true},
        {"x = 1 if c else 2\n", false},
        {"# just a comment\n", false},
        {"def f(x):\n    # comment\n", true},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        if (ax_parse_is_incomplete(cases[i].src) != cases[i].incomplete)
            fail_msg("ax_parse_is_incomplete(<<%s>>) should be %s", cases[i].src,
                     cases[i].incomplete ? "true" : "false");
    assert_false(ax_parse_is_incomplete(NULL));
}

/* ---- the shared example programs ---- */

/* The shared/ folder beside the repository (or $AX_SHARED_DIR), or NULL. */
static const char *shared_dir(void) {
    static const char *const candidates[] = {"../shared", "../../shared", "../../../shared",
                                             "/work/shared"};
    const char *env = getenv("AX_SHARED_DIR");
    char path[512];
    if (env) {
        snprintf(path, sizeof path, "%s/design/LANGUAGE.md", env);
        FILE *f = fopen(path, "r");
        if (f) {
            fclose(f);
            return env;
        }
    }
    for (size_t i = 0; i < sizeof candidates / sizeof candidates[0]; i++) {
        snprintf(path, sizeof path, "%s/design/LANGUAGE.md", candidates[i]);
        FILE *f = fopen(path, "r");
        if (f) {
            fclose(f);
            return candidates[i];
        }
    }
    return NULL;
}

static char *read_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    ax_strbuf sb;
    ax_strbuf_init(&sb);
    char chunk[4096];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk - 1, f)) > 0) {
        chunk[n] = 0;
        ax_strbuf_append(&sb, chunk);
    }
    fclose(f);
    char *s = strdup(sb.data ? sb.data : "");
    ax_strbuf_free(&sb);
    return s;
}

static const char *const conformance_files[] = {
    "01_grad_tanh.ax",
    "02_grad_control_flow.ax",
    "03_vmap_square.ax",
    "04_sum_logistic.ax",
    "05_predict_loss.ax",
    "06_pairwise.ax",
    "07_prng.ax",
    "08_immutable.ax",
    "09_mutation_error.ax",
    "10_jit_branch_error.ax",
    "11_dynamic_shape.ax",
    "12_argnums_pytrees.ax",
    "13_hessian.ax",
    "14_jit_equivalence.ax",
    "15_vmap_apply_matrix.ax",
    "16_make_jaxpr.ax",
    "17_mlp_sin.ax",
};

static void test_conformance_programs(void **state) {
    (void)state;
    const char *dir = shared_dir();
    if (!dir) skip();
    for (size_t i = 0; i < sizeof conformance_files / sizeof conformance_files[0]; i++) {
        char path[600];
        snprintf(path, sizeof path, "%s/conformance/%s", dir, conformance_files[i]);
        char *src = read_file(path);
        if (!src) continue; /* renamed or removed since */
        ax_ctx *cx = new_ctx();
        char *dump = parse_dump(cx, src);
        if (!dump)
            fail_msg("%s: %s at %d:%d", path, cx->err.message, cx->err.span.line, cx->err.span.col);
        assert_true(strlen(dump) > 0);
        free(dump);
        free(src);
        free_ctx(cx);
    }
    /* spot checks of the trees (checked against Python's ast when written) */
    check_tree("x = arange(10)\nx[0] = 10\n", "(= x (call arange 10))\n(= (index x 0) 10)");
    check_tree("k1, k2, k3, k4 = random.split(random.key(0), 4)",
               "(= (tuple k1 k2 k3 k4) (call (. random split) (call (. random key) 0) 4))");
}

/* Every code block of LANGUAGE.md except the error display parses. */
static void test_language_md_examples(void **state) {
    (void)state;
    const char *dir = shared_dir();
    if (!dir) skip();
    char path[600];
    snprintf(path, sizeof path, "%s/design/LANGUAGE.md", dir);
    char *md = read_file(path);
    assert_non_null(md);
    int blocks = 0;
    for (char *open = strstr(md, "```\n"); open; open = strstr(open, "```\n")) {
        char *code = open + 4, *close = strstr(code, "```");
        if (!close) break;
        *close = 0;
        if (strncmp(code, "error[", 6) != 0) {
            ax_ctx *cx = new_ctx();
            char *dump = parse_dump(cx, code);
            if (!dump)
                fail_msg("LANGUAGE.md block:\n%s\nfails: %s at %d:%d", code, cx->err.message,
                         cx->err.span.line, cx->err.span.col);
            free(dump);
            free_ctx(cx);
            blocks++;
        }
        open = close + 3;
    }
    assert_true(blocks >= 5);
    free(md);
}

/* ---- fuzzing: random bytes and mutated programs never crash, leak or hang ---- */

static uint64_t rng_next(uint64_t *s) { /* xorshift64* */
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 2685821657736338717ull;
}

static const char fuzz_alphabet[] = "()[]{}:,;.=+-*/%@&|^~<>!#\\'\"\n\n\n    \t\r_01234567899xeEjbo"
                                    "abcdefxyz ifelsedeflambdaforinwhilereturn";

/* Parses `src` and checks the result is consistent: a tree that dumps, or an error with a
 * kind and a sane position. */
static void fuzz_one(const char *src) {
    ax_ctx *cx = new_ctx();
    ax_program *p = ax_parse(cx, src, "fuzz.ax");
    if (p) {
        assert_int_equal(cx->err.kind, AX_ERR_NONE);
        ax_strbuf sb;
        ax_strbuf_init(&sb);
        for (int i = 0; i < p->stmts.n; i++) ax_ast_dump(&sb, p->stmts.items[i]);
        ax_strbuf_free(&sb);
        ax_program_free(p);
    } else {
        assert_true(cx->err.kind == AX_ERR_SYNTAX || cx->err.kind == AX_ERR_MEMORY);
        assert_true(cx->err.has_span);
        assert_true(cx->err.span.line >= 1 && cx->err.span.col >= 1);
        assert_true(cx->err.message[0] != 0);
    }
    (void)ax_parse_is_incomplete(src);
    free_ctx(cx);
}

static void random_text(uint64_t *rng, char *buf, int len) {
    for (int i = 0; i < len; i++) {
        uint64_t r = rng_next(rng);
        buf[i] = r % 8 == 0 ? (char)(1 + (r >> 8) % 255) /* any byte but NUL */
                            : fuzz_alphabet[(r >> 8) % (sizeof fuzz_alphabet - 1)];
    }
    buf[len] = 0;
}

/* One random edit of `s` (at most `cap` bytes, NUL included). */
static void mutate(uint64_t *rng, char *s, size_t cap) {
    size_t len = strlen(s);
    uint64_t r = rng_next(rng);
    size_t at = len ? (r >> 8) % len : 0, span = 1 + (r >> 24) % 8;
    switch (r % 5) {
    case 0: /* delete a few bytes */
        if (at + span > len) span = len - at;
        memmove(s + at, s + at + span, len - at - span + 1);
        break;
    case 1: /* insert one */
        if (len + 2 > cap) break;
        memmove(s + at + 1, s + at, len - at + 1);
        s[at] = fuzz_alphabet[(r >> 32) % (sizeof fuzz_alphabet - 1)];
        break;
    case 2: /* replace one */
        if (len) s[at] = fuzz_alphabet[(r >> 32) % (sizeof fuzz_alphabet - 1)];
        break;
    case 3: /* duplicate a range */
        if (at + span > len) span = len - at;
        if (len + span + 1 > cap) break;
        memmove(s + at + span, s + at, len - at + 1);
        break;
    default: /* truncate */
        s[at] = 0;
        break;
    }
}

static void test_fuzz(void **state) {
    (void)state;
    uint64_t rng = 0x9E3779B97F4A7C15ull;
    char buf[4096];
    for (int i = 0; i < 2000; i++) {
        random_text(&rng, buf, (int)(rng_next(&rng) % 120));
        fuzz_one(buf);
    }
    /* mutations of valid programs reach much deeper into the parser */
    size_t ntrees = sizeof trees / sizeof trees[0];
    for (int i = 0; i < 4000; i++) {
        const char *seed = trees[rng_next(&rng) % ntrees].src;
        if (i % 3 == 0) seed = errors[rng_next(&rng) % (sizeof errors / sizeof errors[0])].src;
        if (i % 5 == 0) /* two snippets as one program */
            snprintf(buf, sizeof buf, "%s\n%s\n", seed, trees[rng_next(&rng) % ntrees].src);
        else
            snprintf(buf, sizeof buf, "%s", seed);
        int edits = 1 + (int)(rng_next(&rng) % 4);
        for (int k = 0; k < edits; k++) mutate(&rng, buf, sizeof buf);
        fuzz_one(buf);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_trees),
        cmocka_unit_test(test_ax_specific_trees),
        cmocka_unit_test(test_literal_values),
        cmocka_unit_test(test_spans),
        cmocka_unit_test(test_syntax_errors),
        cmocka_unit_test(test_error_display),
        cmocka_unit_test(test_error_display_long_and_unprintable),
        cmocka_unit_test(test_bom_and_line_ends),
        cmocka_unit_test(test_nul_bytes),
        cmocka_unit_test(test_deep_nesting),
        cmocka_unit_test(test_incomplete),
        cmocka_unit_test(test_conformance_programs),
        cmocka_unit_test(test_language_md_examples),
        cmocka_unit_test(test_fuzz),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/* The evaluator and values: small programs run through ax_interp_run, checked by what the REPL
 * echo writes (the value of each expression statement, "3 : i32[]" for arrays, str for the
 * rest) or by the error they raise ("error[Kind] L:C: message"). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "../../lang/interp.h"

#include "interp_fixture.h"

/* Runs src; returns what the echo wrote, followed by "error[Kind] L:C: message" on failure.
 * The caller frees the result. */
static char *run(fixture *fx, const char *src) {
    char *buf = NULL;
    size_t len = 0;
    FILE *echo = open_memstream(&buf, &len);
    int rc = ax_interp_run(fx->in, src, "<test>", echo);
    if (rc < 0) {
        const ax_error_info *e = &fx->cx->err;
        if (e->has_span)
            fprintf(echo, "error[%s] %d:%d: %s\n", ax_error_kind_name(e->kind), e->span.line,
                    e->span.col, e->message);
        else
            fprintf(echo, "error[%s]: %s\n", ax_error_kind_name(e->kind), e->message);
        ax_error_clear(fx->cx);
    }
    fclose(echo);
    return buf;
}

/* Each case: a program and its exact echo output. */
typedef struct {
    const char *src, *want;
} eval_case;

static void check_cases(void **state, const eval_case *cases, size_t n) {
    fixture *fx = *state;
    int failures = 0;
    for (size_t i = 0; i < n; i++) {
        char *got = run(fx, cases[i].src);
        if (strcmp(got, cases[i].want) != 0) {
            fprintf(stderr, "--- program:\n%s\n--- wanted:\n%s--- got:\n%s\n", cases[i].src,
                    cases[i].want, got);
            failures++;
        }
        free(got);
        ax_interp_reset(fx->in);
    }
    assert_int_equal(failures, 0);
}

#define CHECK(state, cases) check_cases(state, cases, sizeof cases / sizeof cases[0])

/* Runs src and checks that it fails with `kind`, that the message contains `part`, and (when
 * line > 0) that the caret is at line:col. */
static void check_error(fixture *fx, const char *src, ax_error_kind kind, const char *part,
                        int line, int col) {
    int rc = ax_interp_run(fx->in, src, "<test>", NULL);
    const ax_error_info *e = &fx->cx->err;
    if (rc == 0 || e->kind != kind || !strstr(e->message, part) ||
        (line > 0 && (!e->has_span || e->span.line != line || e->span.col != col))) {
        fprintf(stderr, "--- program:\n%s\n--- wanted error[%s] containing '%s' at %d:%d\n", src,
                ax_error_kind_name(kind), part, line, col);
        ax_error_print(fx->cx, stderr);
        ax_error_clear(fx->cx);
        ax_interp_reset(fx->in);
        fail();
    }
    ax_error_clear(fx->cx);
    ax_interp_reset(fx->in);
}

/* ---- values and operators ---- */

static void test_literals(void **state) {
    static const eval_case cases[] = {
        {"1", "1 : i32[]\n"},
        {"2.5", "2.5 : f32[]\n"},
        {"0x10", "16 : i32[]\n"},
        {"'ab'", "ab\n"},
        {"None", ""},
        {"True\nFalse", "True : bool[]\nFalse : bool[]\n"},
        {"(1, 2)", "(1, 2)\n"},
        {"(3,)", "(3,)\n"},
        {"()", "()\n"},
        {"[]", "[]\n"},
        {"[1.0, 'a', None, True]", "[1.0, 'a', None, True]\n"},
        {"{'b': 3.0, 'w': [1, 2]}", "{'b': 3.0, 'w': [1, 2]}\n"},
        {"[\"it's\", 'q\"']", "[\"it's\", 'q\"']\n"},
        {"{}", "{}\n"},
    };
    CHECK(state, cases);
}

static void test_arithmetic(void **state) {
    static const eval_case cases[] = {
        {"1 + 2 * 3", "7 : i32[]\n"},  {"(7 // 2, 7 % 2, 2 ** 10)", "(3, 1, 1024)\n"},
        {"-2 ** 2", "-4 : i32[]\n"},   {"1 / 2", "0.5 : f32[]\n"},
        {"x = 3\n-x", "-3 : i32[]\n"}, {"2 * 1.5", "3.0 : f32[]\n"},
    };
    CHECK(state, cases);
}

static void test_sequences(void **state) {
    static const eval_case cases[] = {
        {"[1, 2] + [3]", "[1, 2, 3]\n"},
        {"(1,) * 3", "(1, 1, 1)\n"},
        {"2 * [0]", "[0, 0]\n"},
        {"[0] * 0", "[]\n"},
        {"'ab' * 2", "abab\n"},
        {"'a' + 'b'", "ab\n"},
        {"{'a': 1} | {'b': 2, 'a': 3}", "{'a': 3, 'b': 2}\n"},
        {"{'a': 1, 'a': 2}", "{'a': 2}\n"},
        {"a = [1, 2]\n[*a, 3, *(4,)]", "[1, 2, 3, 4]\n"},
    };
    CHECK(state, cases);
}

static void test_comparisons(void **state) {
    static const eval_case cases[] = {
        {"1 < 2 < 3", "True : bool[]\n"},
        {"3 > 2 > 2", "False : bool[]\n"},
        {"'a' == 'a'", "True : bool[]\n"},
        {"'a' < 'b'", "True : bool[]\n"},
        {"None == None", "True : bool[]\n"},
        {"(1, 2) == (1, 2)", "True : bool[]\n"},
        {"(1, 2) != (1, 3)", "True : bool[]\n"},
        {"[1, [2, 3]] == [1, [2, 3]]", "True : bool[]\n"},
        {"{'a': 1} == {'a': 1}", "True : bool[]\n"},
        {"2 in [1, 2]", "True : bool[]\n"},
        {"3 not in (1, 2)", "True : bool[]\n"},
        {"'x' in {'x': 1}", "True : bool[]\n"},
        {"'bc' in 'abc'", "True : bool[]\n"},
        {"None is None", "True : bool[]\n"},
        {"1 is not None", "True : bool[]\n"},
        {"'a' == 1", "False : bool[]\n"},
    };
    CHECK(state, cases);
}

static void test_boolean_ops(void **state) {
    static const eval_case cases[] = {
        {"0 or 5", "5 : i32[]\n"},
        {"1 and 'x'", "x\n"},
        {"not []", "True : bool[]\n"},
        {"None or 'd'", "d\n"},
        {"0 and undefined_name", "0 : i32[]\n"},
        {"1 or undefined_name", "1 : i32[]\n"},
        {"'yes' if [1] else 'no'", "yes\n"},
        {"1 if 0 else 2", "2 : i32[]\n"},
    };
    CHECK(state, cases);
}

/* ---- bindings ---- */

static void test_bindings(void **state) {
    static const eval_case cases[] = {
        {"a, b = 1, 2\na, b = b, a\n(a, b)", "(2, 1)\n"},
        {"a, *r = [1, 2, 3]\nr", "[2, 3]\n"},
        {"*h, t = (1, 2, 3)\n(h, t)", "([1, 2], 3)\n"},
        {"[x, (y, z)] = (1, (2, 3))\nx + y + z", "6 : i32[]\n"},
        {"a, b = 'xy'\nb", "y\n"},
        {"k1, k2 = {'p': 1, 'q': 2}\nk2", "q\n"},
        {"x = 1\nx += 2\nx *= 3\nx", "9 : i32[]\n"},
        {"l = [1]\nm = l\nl += [2]\n(l, m)", "([1, 2], [1])\n"},
        {"x = 1\nx = 'shadowed'\nx", "shadowed\n"},
    };
    CHECK(state, cases);
}

/* ---- functions ---- */

static void test_functions(void **state) {
    static const eval_case cases[] = {
        {"def sq(x): x * x\n"
         "def f(x):\n"
         "    y = x + 1\n"
         "    y * 2\n"
         "(sq(3), f(1))",
         "(9, 4)\n"},
        {"def g(x):\n"
         "    if x > 0:\n"
         "        return 1\n"
         "    else:\n"
         "        return -1\n"
         "(g(2), g(-2))",
         "(1, -1)\n"},
        {"def h():\n    return\nh() is None", "True : bool[]\n"},
        {"def a(x): y = x\na(1) is None", "True : bool[]\n"},
        {"n = 1\ndef f(x, k=n): x + k\nn = 100\nf(1)", "2 : i32[]\n"},
        {"def f(a, b=2, *args, c, d=4, **kw): (a, b, args, c, d, kw)\n"
         "f(1, c=3)\n"
         "f(1, 5, 6, 7, c=3, e=8)\n"
         "f(c=0, a=9, b=8)",
         "(1, 2, (), 3, 4, {})\n(1, 5, (6, 7), 3, 4, {'e': 8})\n(9, 8, (), 0, 4, {})\n"},
        {"def f(x, y): x - y\nargs = (5, 3)\nkw = {'y': 1}\n(f(*args), f(10, **kw))", "(2, 9)\n"},
        {"f = lambda x, y=10: x + y\n(f(1), f(1, 2), (lambda: 'k')())", "(11, 3, 'k')\n"},
        {"def f(): f\nf()", "<function f>\n"},
    };
    CHECK(state, cases);
}

static void test_decorators(void **state) {
    static const eval_case cases[] = {
        {"def twice(f): lambda x: f(f(x))\n"
         "@twice\n"
         "@twice\n"
         "def add1(x): x + 1\n"
         "add1(0)",
         "4 : i32[]\n"},
        {"def tag(s): lambda f: lambda x: s + f(x)\n"
         "@tag('a')\n"
         "@tag('b')\n"
         "def h(x): x\n"
         "h('c')",
         "abc\n"},
    };
    CHECK(state, cases);
}

static void test_closures(void **state) {
    static const eval_case cases[] = {
        /* captured by snapshot at definition time */
        {"def make():\n"
         "    k = 1\n"
         "    f = lambda x: x + k\n"
         "    k = 10\n"
         "    f(0)\n"
         "make()",
         "1 : i32[]\n"},
        {"def adder(n): lambda x: x + n\nadd2 = adder(2)\nadd5 = adder(5)\n(add2(1), add5(1))",
         "(3, 6)\n"},
        /* a local function calls itself */
        {"def outer(n):\n"
         "    def fact(k): 1 if k <= 1 else k * fact(k - 1)\n"
         "    fact(n)\n"
         "outer(5)",
         "120 : i32[]\n"},
        /* top-level names are late-bound */
        {"def a(): b()\ndef b(): 1\na()\ndef b(): 2\na()", "1 : i32[]\n2 : i32[]\n"},
        /* a local function escapes its definer and still works */
        {"def counter_from(start):\n"
         "    def step(k): start + k\n"
         "    step\n"
         "s = counter_from(10)\n"
         "s(5)",
         "15 : i32[]\n"},
    };
    CHECK(state, cases);
}

/* ---- control flow ---- */

static void test_conditionals(void **state) {
    static const eval_case cases[] = {
        {"def sign(x):\n"
         "    if x > 0:\n"
         "        1\n"
         "    elif x < 0:\n"
         "        -1\n"
         "    else:\n"
         "        0\n"
         "(sign(5), sign(-5), sign(0))",
         "(1, -1, 0)\n"},
        {"def f(x):\n    if x:\n        1\nf(0) is None", "True : bool[]\n"},
        {"x = 5\nif x > 3:\n    y = 'big'\nelse:\n    y = 'small'\ny", "big\n"},
    };
    CHECK(state, cases);
}

static void test_loops(void **state) {
    static const eval_case cases[] = {
        {"s = 0\nfor i in [1, 2, 3]:\n    t = s\n    s = s + i\n(s, t, i)", "(6, 3, 3)\n"},
        {"def total(xs):\n"
         "    acc = 0\n"
         "    for x in xs:\n"
         "        acc = acc + x\n"
         "    acc\n"
         "total((1, 2, 3))",
         "6 : i32[]\n"},
        {"ks = ''\nfor k in {'a': 1, 'b': 2}:\n    ks = ks + k\nks", "ab\n"},
        {"cs = []\nfor c in 'hi':\n    cs = cs + [c]\ncs", "['h', 'i']\n"},
        {"out = []\n"
         "for i in [1, 2, 3, 4, 5]:\n"
         "    if i == 2:\n"
         "        continue\n"
         "    if i == 4:\n"
         "        break\n"
         "    out = out + [i]\n"
         "out",
         "[1, 3]\n"},
        {"n = 0\nwhile n < 5:\n    n += 1\nn", "5 : i32[]\n"},
        {"n = 0\nwhile True:\n    n += 1\n    if n >= 3:\n        break\nn", "3 : i32[]\n"},
        {"pairs = [(1, 'a'), (2, 'b')]\nfor n, s in pairs:\n    pass\n(n, s)", "(2, 'b')\n"},
        {"[x * 2 for x in [1, 2, 3]]", "[2, 4, 6]\n"},
        {"[(x, y) for x in [1, 2] for y in 'ab' if x != 2]", "[(1, 'a'), (1, 'b')]\n"},
        {"x = 'outer'\n[x for x in [1]]\nx", "[1]\nouter\n"},
        {"fs = [lambda: i for i in [1, 2]]\n[f() for f in fs]", "[1, 2]\n"},
        {"assert 1 == 1\n'ok'", "ok\n"},
    };
    CHECK(state, cases);
}

static void test_indexing(void **state) {
    static const eval_case cases[] = {
        {"(1, 2, 3)[-1]", "3 : i32[]\n"},
        {"[1, 2, 3, 4][1:3]", "[2, 3]\n"},
        {"[1, 2, 3, 4][::-1]", "[4, 3, 2, 1]\n"},
        {"(1, 2, 3, 4, 5)[1::2]", "(2, 4)\n"},
        {"[1, 2, 3][-10:10]", "[1, 2, 3]\n"},
        {"'hello'[1:4]", "ell\n"},
        {"'hello'[-1]", "o\n"},
        {"{'a': 1}['a']", "1 : i32[]\n"},
        {"d = {'w': 2, 'b': 'x'}\n(d.w, d.b)", "(2, 'x')\n"},
        {"d = {'w': 2, 'b': 3}\n(d.keys(), d.values(), d.items())",
         "(['w', 'b'], [2, 3], [('w', 2), ('b', 3)])\n"},
        {"d = {'w': 2}\n(d.get('w'), d.get('z'), d.get('z', 0))", "(2, None, 0)\n"},
    };
    CHECK(state, cases);
}

/* ---- errors ---- */

static void test_errors(void **state) {
    fixture *fx = *state;
    check_error(fx, "length = 1\nlenght", AX_ERR_NAME,
                "name 'lenght' is not defined; did you mean 'length'?", 2, 1);
    check_error(fx, "x = [1]\ny = (2,)\nz = x + y", AX_ERR_TYPE, "unsupported operand", 3, 5);
    check_error(fx, "def f(x, y): x\nf(1)", AX_ERR_TYPE, "f() missing 1 required argument 'y'", 2,
                1);
    check_error(fx, "def f(x, y): x\nf()", AX_ERR_TYPE,
                "f() missing 2 required arguments 'x' and 'y'", 2, 1);
    check_error(fx, "def f(x, y): x\nf(1, 2, 3)", AX_ERR_TYPE,
                "f() takes 2 positional arguments but 3 were given", 2, 1);
    check_error(fx, "def f(x, y): x\nf(1, y=2, z=3)", AX_ERR_TYPE,
                "f() got an unexpected keyword argument 'z'", 2, 1);
    check_error(fx, "def f(x): x\nf(1, x=2)", AX_ERR_TYPE,
                "f() got multiple values for argument 'x'", 2, 1);
    check_error(fx, "def f(*, k): k\nf()", AX_ERR_TYPE, "missing 1 required keyword-only", 2, 1);
    check_error(fx, "def f(x):\n    y = x + 1\n    return y\n    y", AX_ERR_SYNTAX, "'return'", 3,
                5);
    check_error(fx, "return 1", AX_ERR_SYNTAX, "outside a function", 1, 1);
    check_error(fx, "break", AX_ERR_SYNTAX, "outside a loop", 1, 1);
    check_error(fx, "x = [1, 2]\nx[0] = 5", AX_ERR_TYPE, "lists are immutable", 2, 1);
    check_error(fx, "p = {'w': 1}\np.w = 2", AX_ERR_TYPE, "immutable", 2, 1);
    check_error(fx, "a, b = (1, 2, 3)", AX_ERR_VALUE, "too many values to unpack", 1, 1);
    check_error(fx, "a, b, c = (1, 2)", AX_ERR_VALUE, "not enough values to unpack", 1, 1);
    check_error(fx, "d = {'w': 1}\nd['v']", AX_ERR_KEY, "'v'", 2, 1);
    check_error(fx, "d = {'alpha': 1}\nd.alpah", AX_ERR_ATTRIBUTE, "did you mean 'alpha'", 2, 1);
    check_error(fx, "(3, 4)[5]", AX_ERR_INDEX, "out of range", 1, 1);
    check_error(fx, "assert 1 == 2, 'nope'", AX_ERR_ASSERTION, "nope", 1, 1);
    check_error(fx, "assert 1 > 2", AX_ERR_ASSERTION, "assertion failed: 1 > 2", 1, 1);
    check_error(fx, "import no_such_module_xyz", AX_ERR_IMPORT, "no module named", 1, 8);
    check_error(fx, "x = 3\nx(1)", AX_ERR_TYPE, "not callable", 2, 1);
    check_error(fx, "{[1]: 2}", AX_ERR_TYPE, "cannot be a dict key", 1, 2);
    check_error(fx, "{1, [2]}", AX_ERR_TYPE, "cannot be a dict key", 1, 1);
    check_error(fx, "for x in None:\n    pass", AX_ERR_TYPE, "cannot iterate", 1, 10);
    check_error(fx, "def f(n): f(n + 1)\nf(0)", AX_ERR_RECURSION, "recursion", 0, 0);
    /* the innermost failing expression gets the caret, also inside a function */
    check_error(fx, "def f(x):\n    y = x\n    y + 'a'\nf([1])", AX_ERR_TYPE, "unsupported", 3, 5);
}

static void test_deep_recursion(void **state) {
    static const eval_case cases[] = {
        {"def d(n): 0 if n == 0 else 1 + d(n - 1)\nd(900)", "900 : i32[]\n"},
    };
    CHECK(state, cases);
}

static void test_interrupt(void **state) {
    fixture *fx = *state;
    fx->cx->interrupt = 1;
    check_error(fx, "while True:\n    pass", AX_ERR_INTERRUPT, "interrupt", 0, 0);
    fx->cx->interrupt = 0;
}

/* ---- the REPL's needs ---- */

static void test_repl_entries(void **state) {
    fixture *fx = *state;
    /* a function defined in one entry is called in a later one: its AST must outlive the
     * entry it was parsed from */
    char *out = run(fx, "def f(x):\n    g = lambda y: y * x\n    g\n");
    assert_string_equal(out, "");
    free(out);
    free(run(fx, "h = f(3)"));
    free(run(fx, "unrelated = 1"));
    out = run(fx, "h(2)");
    assert_string_equal(out, "6 : i32[]\n");
    free(out);
    /* an error in one entry leaves the session usable */
    out = run(fx, "nope");
    assert_non_null(strstr(out, "error[NameError]"));
    free(out);
    out = run(fx, "h(1)");
    assert_string_equal(out, "3 : i32[]\n");
    free(out);
    ax_value *v = ax_interp_eval_expr(fx->in, "h(10)", "<expr>");
    assert_non_null(v);
    assert_int_equal(v->kind, AX_V_ARRAY);
    ax_value_release(v);
    assert_null(ax_interp_eval_expr(fx->in, "x = 1", "<expr>"));
    assert_int_equal(fx->cx->err.kind, AX_ERR_SYNTAX);
    ax_error_clear(fx->cx);
    assert_non_null(ax_interp_lookup(fx->in, "h"));
    ax_interp_reset(fx->in);
    assert_null(ax_interp_lookup(fx->in, "h"));
}

static void count_name(void *arg, const char *name, ax_value *v, bool is_builtin) {
    (void)v;
    if (!is_builtin && strcmp(name, "zebra") == 0) ++*(int *)arg;
}

static void count_attr(void *arg, const char *name) {
    if (strcmp(name, "w") == 0 || strcmp(name, "k") == 0) ++*(int *)arg;
}

static void test_names_and_attrs(void **state) {
    fixture *fx = *state;
    free(run(fx, "zebra = {'w': 1}"));
    int n = 0;
    ax_interp_each_name(fx->in, count_name, &n);
    assert_int_equal(n, 1);
    n = 0;
    ax_value_each_attr(fx->in, ax_interp_lookup(fx->in, "zebra"), count_attr, &n);
    assert_int_equal(n, 1);
    ax_interp_reset(fx->in);
}

/* ---- modules ---- */

static void test_import(void **state) {
    fixture *fx = *state;
    char dir[] = "/tmp/ax_test_eval_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[256];
    snprintf(path, sizeof path, "%s/evalmod.ax", dir);
    FILE *f = fopen(path, "w");
    fputs("k = 42\ndef twice(x): 2 * x\ndef uses_k(): twice(k)\n", f);
    fclose(f);
    snprintf(path, sizeof path, "%s/main.ax", dir);
    /* the directory of the main script is searched */
    char *out;
    assert_int_equal(ax_interp_run(fx->in, "pass", path, NULL), 0);
    static const eval_case cases[] = {
        {"import evalmod\n(evalmod.twice(evalmod.k), evalmod.uses_k())", "(84, 84)\n"},
        {"import evalmod as m\nm.k", "42 : i32[]\n"},
        {"from evalmod import k as kk, twice\ntwice(kk)", "84 : i32[]\n"},
        {"import evalmod as a\nimport evalmod as b\na == b", "True : bool[]\n"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        out = run(fx, cases[i].src);
        assert_string_equal(out, cases[i].want);
        free(out);
    }
    check_error(fx, "from evalmod import twise", AX_ERR_IMPORT, "did you mean 'twice'", 1, 1);
    snprintf(path, sizeof path, "%s/evalmod.ax", dir);
    unlink(path);
    rmdir(dir);
}

/* ---- the C API ---- */

static void test_value_api(void **state) {
    fixture *fx = *state;
    ax_interp *in = fx->in;
    ax_value *items[3] = {ax_value_str("a"), ax_value_int(in, 1), ax_none()};
    ax_value *t = ax_value_tuple(3, items);
    ax_strbuf s;
    ax_strbuf_init(&s);
    ax_value_format(&s, t);
    assert_string_equal(s.data, "('a', 1, None)");
    ax_strbuf_free(&s);
    ax_value_release(t);

    ax_value *keys[1] = {ax_value_str("w")}, *vals[1] = {ax_value_float(in, 2.0)};
    ax_value *d = ax_value_dict(1, keys, vals);
    assert_non_null(ax_dict_get(d, "w"));
    assert_null(ax_dict_get(d, "b"));
    ax_value *w = ax_getattr(in, d, "w");
    assert_ptr_equal(w, ax_dict_get(d, "w"));
    ax_value_release(w);
    ax_value_release(d);

    /* truth values */
    bool b;
    int64_t shape[1] = {3};
    ax_value *arr = ax_value_array(ax_array_zeros(fx->cx, AX_F32, 1, shape));
    assert_false(ax_value_truthy(in, arr, &b));
    assert_int_equal(fx->cx->err.kind, AX_ERR_VALUE);
    assert_non_null(strstr(fx->cx->err.message, "more than one element is ambiguous"));
    ax_error_clear(fx->cx);
    ax_value_release(arr);
    assert_true(ax_value_truthy(in, ax_none(), &b));
    assert_false(b);

    /* conversions */
    int64_t k;
    double x;
    ax_value *one = ax_value_int(in, 7);
    assert_true(ax_value_to_int(in, one, "n", &k));
    assert_int_equal(k, 7);
    assert_true(ax_value_to_double(in, one, "x", &x));
    assert_true(x == 7.0);
    ax_value *half = ax_value_float(in, 0.5);
    assert_false(ax_value_to_int(in, half, "n", &k));
    assert_int_equal(fx->cx->err.kind, AX_ERR_TYPE);
    ax_error_clear(fx->cx);

    ax_value *row1[2] = {ax_value_retain(one), ax_value_int(in, 2)};
    ax_value *row2[2] = {ax_value_int(in, 3), ax_value_retain(half)};
    ax_value *rows[2] = {ax_value_list(2, row1), ax_value_list(2, row2)};
    ax_value *nested = ax_value_list(2, rows);
    ax_array *a = ax_value_to_array(in, nested, "x");
    assert_non_null(a);
    assert_int_equal(a->dtype, AX_F32);
    assert_int_equal(a->ndim, 2);
    assert_false(a->weak);
    assert_true(ax_array_get_f64(a, 3) == 0.5 && ax_array_get_f64(a, 2) == 3.0);
    ax_array_release(a);
    ax_value_release(nested);
    ax_value_release(one);
    ax_value_release(half);

    /* argument helpers */
    ax_value *pos[1] = {ax_none()};
    const char *kwn[1] = {"axis"};
    ax_value *kwv[1] = {ax_none()};
    ax_args args = {.n = 1, .pos = pos, .nkw = 1, .kwnames = kwn, .kwvals = kwv};
    static const char *const names[] = {"x", "axis", NULL};
    assert_true(ax_args_check(in, &args, "sum", 2, names));
    assert_ptr_equal(ax_arg(&args, 1, "axis"), kwv[0]);
    assert_null(ax_arg(&args, 2, "keepdims"));
    kwn[0] = "x";
    assert_false(ax_args_check(in, &args, "sum", 2, names));
    assert_non_null(strstr(fx->cx->err.message, "multiple values"));
    ax_error_clear(fx->cx);
    kwn[0] = "bogus";
    assert_false(ax_args_check(in, &args, "sum", 2, names));
    assert_non_null(strstr(fx->cx->err.message, "unexpected keyword argument 'bogus'"));
    ax_error_clear(fx->cx);
}

/* ax_value_to_array on nested lists, with leaves traced by jit, vmap and grad. */
static ax_value *bi_to_array(ax_interp *in, ax_value *self, const ax_args *a) {
    (void)self;
    ax_array *r = a->n == 1 ? ax_value_to_array(in, a->pos[0], "to_array") : NULL;
    return r ? ax_value_array(r) : NULL;
}

static void test_to_array_traced(void **state) {
    fixture *fx = *state;
    ax_interp_define_builtin_take(fx->in, "to_array",
                                  ax_value_builtin("to_array", "test", bi_to_array, NULL));
    static const eval_case cases[] = {
        {"to_array([[1, 2.5], [3, 4]])", "[[1.  2.5]\n [3.  4. ]] : f32[2,2]\n"},
        {"to_array([[True], [False]])", "[[ True]\n [False]] : bool[2,1]\n"},
        {"f = lambda x: to_array([[x, x * 2], [x, 1]])\njit(f)(2.0)",
         "[[2. 4.]\n [2. 1.]] : f32[2,2]\n"},
        {"f = lambda x: to_array([x, 2 * x])\nvmap(f)(array([1.0, 2.0]))",
         "[[1. 2.]\n [2. 4.]] : f32[2,2]\n"},
        {"grad(lambda x: sum(to_array([[x, x * 2], [x, 1]])))(2.0)", "4.0 : f32[]\n"},
        {"jit(lambda v: to_array([v, v]))(arange(3.0))", "[[0. 1. 2.]\n [0. 1. 2.]] : f32[2,3]\n"},
    };
    CHECK(state, cases);
    check_error(fx, "to_array([[1, 2], [3]])", AX_ERR_VALUE, "inhomogeneous", 1, 1);
    check_error(fx, "to_array(['a'])", AX_ERR_TYPE, "must be an array or numbers", 1, 1);
}

/* ---- Ctrl-C inside long C loops ---- */

/* press_ctrl_c(): what the SIGINT handler does, from inside an expression, so that the loops
 * that run after it in the same expression (no call in between to notice it first) meet it. */
static ax_value *bi_press_ctrl_c(ax_interp *in, ax_value *self, const ax_args *args) {
    (void)self;
    (void)args;
    in->cx->interrupt = 1;
    return ax_none();
}

static void test_interrupt_in_c_loops(void **state) {
    fixture *fx = *state;
    ax_interp_define_builtin_take(fx->in, "press_ctrl_c",
                                  ax_value_builtin("press_ctrl_c", "test", bi_press_ctrl_c, NULL));
    static const char *const programs[] = {
        "xs = (press_ctrl_c(), [*range(1000000)])",          /* a display's *range */
        "a, *b = (press_ctrl_c(), range(1000000))[1]",       /* starred unpacking */
        "xs = (press_ctrl_c(), [None] * 100000000)",         /* repetition */
        "xs = [0] * 10000\n(press_ctrl_c(), 7 in xs)",       /* membership */
        "xs = [0] * 10000\n(press_ctrl_c(), xs)[1]",         /* the REPL echo of a big value */
        "xs = ['a'] * 10000\n(press_ctrl_c(), ''.join(xs))", /* join */
        /* eager structured loops, and an operation (bind takes a pending Ctrl-C) */
        "(press_ctrl_c(), while_loop(lambda c: True, lambda c: c + 1, 0))",
        "(press_ctrl_c(), fori_loop(0, 10**9, lambda i, x: x + 1, 0))",
        "(press_ctrl_c(), scan(lambda c, x: (c + 1, c), 0, None, length=10**6))",
        "x = ones((4, 4))\n(press_ctrl_c(), x @ x)",
        "x = ones((4, 4))\n(press_ctrl_c(), sort(x))",
        "x = ones((4, 4))\ny = (press_ctrl_c(), x * 2 + x)",
    };
    for (size_t i = 0; i < sizeof programs / sizeof programs[0]; i++) {
        char *out = run(fx, programs[i]);
        if (!strstr(out, "error[KeyboardInterrupt]"))
            fail_msg("<<%s>> gave <<%.300s>>", programs[i], out);
        assert_int_equal(fx->cx->interrupt, 0); /* reported once, then forgotten */
        free(out);
        ax_interp_reset(fx->in);
    }
    /* builtins whose loops run with the flag already up (called directly: a call through the
     * evaluator would notice it at the call): making a range's ints, formatting a long list */
    ax_value *items[5000];
    for (int i = 0; i < 5000; i++) items[i] = ax_value_int(fx->in, i);
    ax_value *big = ax_value_list(5000, items), *r = ax_value_range(fx->in, 0, 100000000, 1);
    static const char *const calls[] = {"list", "tuple", "sorted", "print", "str"};
    for (size_t i = 0; i < sizeof calls / sizeof calls[0]; i++) {
        ax_value *fn = ax_interp_lookup(fx->in, calls[i]);
        ax_value *arg = i < 3 ? r : big;
        ax_args a = {.n = 1, .pos = &arg};
        fx->cx->interrupt = 1;
        ax_value *got = fn->builtin->fn(fx->in, fn, &a);
        if (got || fx->cx->err.kind != AX_ERR_INTERRUPT)
            fail_msg("%s() with Ctrl-C pending: %s", calls[i],
                     got ? "returned a value" : fx->cx->err.message);
        assert_int_equal(fx->cx->interrupt, 0);
        ax_error_clear(fx->cx);
    }
    ax_value_release(big);
    ax_value_release(r);
    /* reading a source and parsing one */
    fx->cx->interrupt = 1;
    size_t len;
    FILE *f = fopen("/dev/zero", "rb");
    assert_null(ax_read_stream(f, fx->cx, &len));
    fclose(f);
    fx->cx->interrupt = 1;
    check_error(fx, "x = 1\ny = 2\n", AX_ERR_INTERRUPT, "interrupted", 0, 0);
    assert_int_equal(fx->cx->interrupt, 0);
}

/* A message that quotes the user's strings never prints raw control characters. */
static void test_error_message_escapes(void **state) {
    fixture *fx = *state;
    assert_int_equal(ax_interp_run(fx->in, "d = {'a': 1}\nd['\x1b[2J\x07']", "<test>", NULL), -1);
    char text[512] = "";
    FILE *f = fmemopen(text, sizeof text - 1, "w");
    ax_error_print(fx->cx, f);
    fclose(f);
    assert_non_null(strstr(text, "error[KeyError]: '\\x1b[2J\\x07' is not a key"));
    for (const char *p = text; *p; p++) assert_true((unsigned char)*p >= 0x20 || *p == '\n');
    ax_error_clear(fx->cx);
    ax_interp_reset(fx->in);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_literals),
        cmocka_unit_test(test_arithmetic),
        cmocka_unit_test(test_sequences),
        cmocka_unit_test(test_comparisons),
        cmocka_unit_test(test_boolean_ops),
        cmocka_unit_test(test_bindings),
        cmocka_unit_test(test_functions),
        cmocka_unit_test(test_decorators),
        cmocka_unit_test(test_closures),
        cmocka_unit_test(test_conditionals),
        cmocka_unit_test(test_loops),
        cmocka_unit_test(test_indexing),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_deep_recursion),
        cmocka_unit_test(test_interrupt),
        cmocka_unit_test(test_repl_entries),
        cmocka_unit_test(test_names_and_attrs),
        cmocka_unit_test(test_import),
        cmocka_unit_test(test_value_api),
        cmocka_unit_test(test_to_array_traced),
        cmocka_unit_test(test_interrupt_in_c_loops),
        cmocka_unit_test(test_error_message_escapes),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}

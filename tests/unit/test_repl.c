/* The REPL's pieces that need no terminal: when an entry is complete, the :commands, the
 * formatting of times. (tests/repl_test.py drives the whole session through a pty.) */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../cli/repl.h"
#include "../../stdlib/libs.h"
#include "../../runtime/context.h"

static void test_block_headers(void **state) {
    (void)state;
    assert_true(ax_repl_line_opens_block("def f(x):"));
    assert_true(ax_repl_line_opens_block("if x > 0:   # a comment: here"));
    assert_true(ax_repl_line_opens_block("    else:"));
    assert_true(ax_repl_line_opens_block("@jit"));
    assert_false(ax_repl_line_opens_block("def square(x): x * x"));
    assert_false(ax_repl_line_opens_block("x = 'a:'"));
    assert_false(ax_repl_line_opens_block("y = x[1:]"));
    assert_false(ax_repl_line_opens_block("d = {'a': 1}"));
    assert_false(ax_repl_line_opens_block("print(1)  # ends with:"));
}

static void test_needs_more(void **state) {
    (void)state;
    assert_false(ax_repl_needs_more("1 + 1\n", "1 + 1"));
    assert_true(ax_repl_needs_more("(1 +\n", "(1 +"));
    assert_false(ax_repl_needs_more("(1 +\n  2)\n", "  2)"));
    assert_true(ax_repl_needs_more("def f(x):\n", "def f(x):"));
    /* a block goes on until an empty line */
    assert_true(ax_repl_needs_more("def f(x):\n    x\n", "    x"));
    assert_false(ax_repl_needs_more("def f(x):\n    x\n\n", ""));
    assert_true(ax_repl_needs_more("s = '''a\n", "s = '''a"));
    assert_false(ax_repl_needs_more("s = '''a\nb'''\n", "b'''"));
    assert_false(ax_repl_needs_more("def sq(x): x * x\n", "def sq(x): x * x"));
}

static void test_time_args(void **state) {
    (void)state;
    int runs;
    assert_string_equal(ax_repl_parse_time_args("10 f(x)", &runs), "f(x)");
    assert_int_equal(runs, 10);
    assert_string_equal(ax_repl_parse_time_args("f(x)", &runs), "f(x)");
    assert_int_equal(runs, 0);
    assert_string_equal(ax_repl_parse_time_args("  3+4", &runs), "3+4");
    assert_int_equal(runs, 0);
}

static void test_format_seconds(void **state) {
    (void)state;
    char s[32];
    ax_repl_format_seconds(s, sizeof s, 1.5);
    assert_string_equal(s, "1.5 s");
    ax_repl_format_seconds(s, sizeof s, 0.0123);
    assert_string_equal(s, "12.3 ms");
    ax_repl_format_seconds(s, sizeof s, 4.56e-6);
    assert_string_equal(s, "4.56 us");
    ax_repl_format_seconds(s, sizeof s, 7e-8);
    assert_string_equal(s, "70 ns");
}

/* ---- commands, on a real interpreter ---- */

typedef struct fixture {
    ax_ctx *cx;
    ax_interp *in;
} fixture;

static int setup(void **state) {
    fixture *f = calloc(1, sizeof *f);
    f->cx = ax_ctx_new();
    f->in = f->cx ? ax_interp_new(f->cx, NULL) : NULL;
    if (f->in && ax_libs_open(f->in) < 0) {
        ax_interp_free(f->in);
        f->in = NULL;
    }
    if (!f->in) {
        ax_ctx_free(f->cx);
        free(f);
        return -1;
    }
    *state = f;
    return 0;
}

static int teardown(void **state) {
    fixture *f = *state;
    ax_interp_free(f->in);
    ax_ctx_free(f->cx);
    free(f);
    return 0;
}

/* The output of `line` (an entry or a :command). The caller frees it. */
static char *run_line(fixture *f, const char *line) {
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    if (line[0] == ':')
        ax_repl_command(f->in, line, out);
    else
        ax_repl_eval(f->in, line, out);
    fclose(out);
    return text;
}

static void expect_output(fixture *f, const char *line, const char *want) {
    char *got = run_line(f, line);
    assert_string_equal(got, want);
    free(got);
}

static void test_command_type(void **state) {
    fixture *f = *state;
    expect_output(f, ":type array([1., 2., 3.])", "f32[3]\n");
    expect_output(f, ":type (1.0, [zeros((2, 3))])", "(f32[], [f32[2,3]])\n");
    expect_output(f, ":type 'a'", "str\n");
}

static void test_command_vars_and_reset(void **state) {
    fixture *f = *state;
    expect_output(f, "b = 2\n", "");
    expect_output(f, "a = ones((2,))\n", "");
    expect_output(f, "def g(x, y=2.0): x\n", "");
    expect_output(f, ":vars", "a : f32[2]\nb : i32[]\ndef g(x, y=2.0)\n");
    expect_output(f, ":reset", "");
    expect_output(f, ":vars", "(no names defined yet)\n");
}

static void test_command_help(void **state) {
    fixture *f = *state;
    char *text = run_line(f, ":help");
    assert_non_null(strstr(text, ":time [N] expr"));
    free(text);
    text = run_line(f, ":help sum");
    assert_non_null(strstr(text, "sum"));
    free(text);
    expect_output(f, "def h(x, *rest, scale=1.0): x\n", "");
    expect_output(f, ":help h", "def h(x, *rest, scale=1.0)\n");
    expect_output(f, ":help :reset", ":reset \n    forget every name you defined\n");
}

static void test_command_time(void **state) {
    fixture *f = *state;
    char *text = run_line(f, ":time 3 1 + 1");
    assert_non_null(strstr(text, "median "));
    assert_non_null(strstr(text, "3 runs)"));
    free(text);
}

static void test_quit(void **state) {
    fixture *f = *state;
    assert_int_equal(ax_repl_command(f->in, ":quit", stdout), 1);
    assert_int_equal(ax_repl_command(f->in, ":q", stdout), 1);
    FILE *null = fopen("/dev/null", "w");
    assert_non_null(null);
    assert_int_equal(ax_repl_command(f->in, ":vars", null), 0);
    fclose(null);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_block_headers),
        cmocka_unit_test(test_needs_more),
        cmocka_unit_test(test_time_args),
        cmocka_unit_test(test_format_seconds),
        cmocka_unit_test_setup_teardown(test_command_type, setup, teardown),
        cmocka_unit_test_setup_teardown(test_command_vars_and_reset, setup, teardown),
        cmocka_unit_test_setup_teardown(test_command_help, setup, teardown),
        cmocka_unit_test_setup_teardown(test_command_time, setup, teardown),
        cmocka_unit_test_setup_teardown(test_quit, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

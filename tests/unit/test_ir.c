/* The typed IR: building, the jaxpr-style printer (one line when it fits in 80 columns), the
 * verifier (types, single assignment, definition before use), evaluation through bind, and the
 * simplify pass (identities, folding, CSE, dead code), whose output must verify too. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../compiler/ir.h"
#include "../../compiler/simplify.h"
#include "../../compiler/trace_ir.h"

static const ax_aval f32_3 = {.dtype = AX_F32, .ndim = 1, .shape = {3}};
static const ax_aval f32_0 = {.dtype = AX_F32, .ndim = 0};

static char *format(const ax_ir *ir) {
    ax_strbuf s;
    ax_strbuf_init(&s);
    ax_ir_format(&s, ir);
    return s.data;
}

static ax_ir_atom var(int v) {
    return (ax_ir_atom){.var = v};
}

/* { lambda ; a:f32[3]. let b = exp a; c = reduce_sum[axes=(0,)] b in (c,) } */
static ax_ir *small_ir(void) {
    ax_ir_builder *b = ax_ir_builder_new();
    int a = ax_ir_add_input(b, &f32_3), e, c;
    ax_ir_add_eqn(b, AX_P_EXP, &(ax_params){0}, 1, (ax_ir_atom[]){var(a)}, 1, &f32_3, &e, 0, NULL);
    ax_params sum = {.naxes = 1, .axes = {0}};
    ax_ir_add_eqn(b, AX_P_REDUCE_SUM, &sum, 1, (ax_ir_atom[]){var(e)}, 1, &f32_0, &c, 0, NULL);
    return ax_ir_builder_finish(b, 1, (ax_ir_atom[]){var(c)});
}

static void test_print_short_on_one_line(void **state) {
    ax_ctx *cx = *state;
    ax_ir_builder *b = ax_ir_builder_new();
    int a = ax_ir_add_input(b, &f32_3), e;
    ax_ir_add_eqn(b, AX_P_EXP, &(ax_params){0}, 1, (ax_ir_atom[]){var(a)}, 1, &f32_3, &e, 0, NULL);
    ax_ir *ir = ax_ir_builder_finish(b, 1, (ax_ir_atom[]){var(e)});
    assert_int_equal(ax_ir_verify(cx, ir), 0);
    char *text = format(ir);
    assert_string_equal(text, "{ lambda ; a:f32[3]. let b:f32[3] = exp a in (b,) }");
    free(text);
    ax_ir_release(ir);
}

/* A result nothing reads prints as `_` and takes no name, as JAX prints it; inputs keep theirs. */
static void test_print_unused_result(void **state) {
    ax_ctx *cx = *state;
    ax_ir_builder *b = ax_ir_builder_new();
    int a = ax_ir_add_input(b, &f32_3), unused = ax_ir_add_input(b, &f32_3), s, c;
    ax_ir_add_eqn(b, AX_P_SIN, &(ax_params){0}, 1, (ax_ir_atom[]){var(a)}, 1, &f32_3, &s, 0, NULL);
    ax_ir_add_eqn(b, AX_P_COS, &(ax_params){0}, 1, (ax_ir_atom[]){var(a)}, 1, &f32_3, &c, 0, NULL);
    (void)unused;
    ax_ir *ir = ax_ir_builder_finish(b, 1, (ax_ir_atom[]){var(c)});
    assert_int_equal(ax_ir_verify(cx, ir), 0);
    char *text = format(ir);
    assert_string_equal(
        text, "{ lambda ; a:f32[3] b:f32[3]. let _:f32[3] = sin a; c:f32[3] = cos a in (c,) }");
    free(text);
    ax_ir_release(ir);
}

static void test_print_one_line(void **state) {
    ax_ctx *cx = *state;
    ax_ir *ir = small_ir();
    assert_int_equal(ax_ir_verify(cx, ir), 0);
    char *text = format(ir);
    /* 89 columns on one line: one equation a line */
    assert_string_equal(text, "{ lambda ; a:f32[3]. let\n"
                              "    b:f32[3] = exp a\n"
                              "    c:f32[] = reduce_sum[axes=(0,)] b\n"
                              "  in (c,) }");
    free(text);
    ax_ir_release(ir);
}

static void test_print_multi_line(void **state) {
    ax_ctx *cx = *state;
    ax_ir_builder *b = ax_ir_builder_new();
    int x = ax_ir_add_input(b, &f32_3), v = x;
    for (int i = 0; i < 4; i++)
        ax_ir_add_eqn(b, AX_P_SIN, &(ax_params){0}, 1, (ax_ir_atom[]){var(v)}, 1, &f32_3, &v, 0,
                      NULL);
    ax_ir *ir = ax_ir_builder_finish(b, 1, (ax_ir_atom[]){var(v)});
    assert_int_equal(ax_ir_verify(cx, ir), 0);
    char *text = format(ir);
    assert_string_equal(text, "{ lambda ; a:f32[3]. let\n"
                              "    b:f32[3] = sin a\n"
                              "    c:f32[3] = sin b\n"
                              "    d:f32[3] = sin c\n"
                              "    e:f32[3] = sin d\n"
                              "  in (e,) }");
    free(text);
    ax_ir_release(ir);
}

static void test_verifier_rejects_bad_irs(void **state) {
    ax_ctx *cx = *state;
    /* a declared type that the shape rule does not give */
    ax_ir_builder *b = ax_ir_builder_new();
    int a = ax_ir_add_input(b, &f32_3), c;
    ax_ir_add_eqn(b, AX_P_EXP, &(ax_params){0}, 1, (ax_ir_atom[]){var(a)}, 1, &f32_0, &c, 0, NULL);
    ax_ir *ir = ax_ir_builder_finish(b, 1, (ax_ir_atom[]){var(c)});
    assert_int_equal(ax_ir_verify(cx, ir), -1);
    assert_non_null(strstr(cx->err.message, "declares f32[]"));
    ax_error_clear(cx);
    ax_ir_release(ir);
    /* use before definition */
    b = ax_ir_builder_new();
    a = ax_ir_add_input(b, &f32_3);
    int later = ax_ir_new_var(b, &f32_3);
    ax_ir_add_eqn(b, AX_P_EXP, &(ax_params){0}, 1, (ax_ir_atom[]){var(later)}, 1, &f32_3, &c, 0,
                  NULL);
    ir = ax_ir_builder_finish(b, 1, (ax_ir_atom[]){var(c)});
    assert_int_equal(ax_ir_verify(cx, ir), -1);
    assert_non_null(strstr(cx->err.message, "before it is defined"));
    ax_error_clear(cx);
    ax_ir_release(ir);
}

static void test_eval(void **state) {
    ax_ctx *cx = *state;
    ax_ir *ir = small_ir();
    float vals[] = {0.0f, 1.0f, 2.0f};
    ax_array *x = ax_array_from_data(cx, AX_F32, 1, (int64_t[]){3}, vals), *out = NULL;
    assert_int_equal(ax_ir_eval(cx, ir, &x, &out), 0);
    assert_float_equal(ax_array_get_f64(out, 0), 1.0 + 2.718281828 + 7.389056099, 1e-5);
    ax_array_release(out);
    ax_array_release(x);
    ax_ir_release(ir);
}

/* x * 1.0 + -0.0, twice (a common subexpression), plus a dead exp and a foldable 2 * 3. (For
 * floats only -0.0 is the identity of addition: x + 0.0 is not x when x is -0.0.) */
static void test_simplify(void **state) {
    ax_ctx *cx = *state;
    ax_ir_builder *b = ax_ir_builder_new();
    int x = ax_ir_add_input(b, &f32_3), m1, m2, s1, s2, dead, sum;
    ax_array *one = ax_array_scalar(cx, AX_F32, 1.0), *zero = ax_array_scalar(cx, AX_F32, -0.0);
    ax_array *two = ax_array_scalar(cx, AX_F32, 2.0), *three = ax_array_scalar(cx, AX_F32, 3.0);
    ax_ir_atom lit1 = {.var = -1, .lit = one}, lit0 = {.var = -1, .lit = zero};
    ax_params none = {0};
    ax_ir_add_eqn(b, AX_P_MUL, &none, 2, (ax_ir_atom[]){var(x), lit1}, 1, &f32_3, &m1, 0, NULL);
    ax_ir_add_eqn(b, AX_P_ADD, &none, 2, (ax_ir_atom[]){var(m1), lit0}, 1, &f32_3, &s1, 0, NULL);
    ax_ir_add_eqn(b, AX_P_SIN, &none, 1, (ax_ir_atom[]){var(s1)}, 1, &f32_3, &m2, 0, NULL);
    ax_ir_add_eqn(b, AX_P_SIN, &none, 1, (ax_ir_atom[]){var(x)}, 1, &f32_3, &s2, 0, NULL);
    ax_ir_add_eqn(b, AX_P_EXP, &none, 1, (ax_ir_atom[]){var(x)}, 1, &f32_3, &dead, 0, NULL);
    int six;
    ax_ir_add_eqn(b, AX_P_MUL, &none, 2,
                  (ax_ir_atom[]){{.var = -1, .lit = two}, {.var = -1, .lit = three}}, 1, &f32_0,
                  &six, 0, NULL);
    ax_ir_add_eqn(b, AX_P_ADD, &none, 2, (ax_ir_atom[]){var(m2), var(s2)}, 1, &f32_3, &sum, 0,
                  NULL);
    int out;
    ax_ir_add_eqn(b, AX_P_MUL, &none, 2, (ax_ir_atom[]){var(sum), var(six)}, 1, &f32_3, &out, 0,
                  NULL);
    ax_ir *ir = ax_ir_builder_finish(b, 1, (ax_ir_atom[]){var(out)});
    assert_int_equal(ax_ir_verify(cx, ir), 0);
    ax_ir *s = ax_simplify(cx, ir);
    assert_non_null(s);
    assert_int_equal(ax_ir_verify(cx, s), 0);
    char *text = format(s);
    assert_string_equal(text, "{ lambda ; a:f32[3]. let\n"
                              "    b:f32[3] = sin a\n"
                              "    c:f32[3] = add b b\n"
                              "    d:f32[3] = mul c 6.0:f32[]\n"
                              "  in (d,) }");
    free(text);
    ax_ir_release(s);
    ax_ir_release(ir);
    ax_array_release(one), ax_array_release(zero), ax_array_release(two), ax_array_release(three);
}

/* Tracing records closed-over arrays as constants and rank-0 concrete values as literals. */
static int traced_fn(ax_ctx *cx, void *closure, int nin, ax_array **in, int *nout,
                     ax_array ***out) {
    ax_array *captured = closure;
    (void)nin;
    *nout = 1;
    *out = calloc(1, sizeof **out);
    ax_array *two = ax_array_scalar(cx, AX_F32, 2.0);
    ax_array *t = ax_bind_binary(cx, AX_P_MUL, in[0], two);
    (*out)[0] = ax_bind_binary(cx, AX_P_ADD, t, captured);
    ax_array_release(t);
    ax_array_release(two);
    return (*out)[0] ? 0 : -1;
}

static void test_trace(void **state) {
    ax_ctx *cx = *state;
    ax_array *c = ax_array_zeros(cx, AX_F32, 1, (int64_t[]){3});
    int nout = 0;
    ax_ir *ir = ax_trace_to_ir(cx, traced_fn, c, 1, &f32_3, &nout);
    assert_non_null(ir);
    assert_int_equal(ax_ir_verify(cx, ir), 0);
    char *text = format(ir);
    assert_string_equal(text, "{ lambda a:f32[3]; b:f32[3]. let\n"
                              "    c:f32[3] = mul b 2.0:f32[]\n"
                              "    d:f32[3] = add c a\n"
                              "  in (d,) }");
    free(text);
    ax_ir_release(ir);
    ax_array_release(c);
    assert_int_equal(ax_trace_depth(cx), 0);
}

static int setup(void **state) {
    *state = ax_ctx_new();
    return *state ? 0 : -1;
}

static int teardown(void **state) {
    ax_ctx_free(*state);
    return 0;
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_print_short_on_one_line),
        cmocka_unit_test(test_print_unused_result),
        cmocka_unit_test(test_print_one_line),
        cmocka_unit_test(test_print_multi_line),
        cmocka_unit_test(test_verifier_rejects_bad_irs),
        cmocka_unit_test(test_eval),
        cmocka_unit_test(test_simplify),
        cmocka_unit_test(test_trace),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}

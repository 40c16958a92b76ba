/* debug_callback, the effect primitive (compiler/debug_callback.h), checked by what its effect
 * sees: eagerly at once; under JVP the primal values; under vmap one call per example, in
 * order; through simplify (kept though it has no outputs, never merged with its twin) and
 * fusion (an eager step between the loops, in program order), so that jit runs it with the
 * values the program computes. The language-level behaviour (jax.debug.print under jit, grad,
 * vmap and scan) is in tests/lang/jax_debug_print.ax. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../compiler/ad.h"
#include "../../compiler/fuse.h"
#include "../../compiler/jit.h"
#include "../../compiler/lax.h"
#include "../../compiler/simplify.h"
#include "../../compiler/trace_ir.h"
#include "../../compiler/vmap.h"

/* What the effect saw: per call, the number of operands and the first operand's elements. */
typedef struct seen {
    int calls;
    int nin[16];
    double first[16][4];
} seen;

static int record(ax_ctx *cx, void *data, int nin, ax_array **in) {
    (void)cx;
    seen *s = data;
    if (s->calls == 16) return 0;
    s->nin[s->calls] = nin;
    for (int64_t i = 0; nin > 0 && i < in[0]->size && i < 4; i++) {
        assert_null(in[0]->tracer); /* the effect only ever sees values */
        s->first[s->calls][i] = ax_array_get_f64(in[0], i);
    }
    s->calls++;
    return 0;
}

static void no_free(void *data) {
    (void)data;
}

static ax_callback callback_of(seen *s) {
    return (ax_callback){.refs = 1, .name = "record", .effect = record, .free = no_free, .data = s};
}

static int effect(ax_ctx *cx, ax_callback *cb, int nin, ax_array **in) {
    ax_params p = {.cb = cb};
    return ax_bind(cx, AX_P_DEBUG_CALLBACK, nin, in, &p, NULL);
}

/* f(x) = effect(x * 2); return sin(x) + 1 (closure: the callback). */
static int program(ax_ctx *cx, void *closure, int nin, ax_array **in, int *nout, ax_array ***out) {
    (void)nin;
    ax_scope s;
    ax_scope_begin(&s, cx);
    ax_array *twice = ax_lax_mul(&s, in[0], ax_lax_scalar_like(&s, in[0], 2.0));
    int rc = twice ? effect(cx, closure, 1, &twice) : -1;
    ax_array *y =
        ax_lax_add(&s, ax_lax_unary(&s, AX_P_SIN, in[0]), ax_lax_scalar_like(&s, in[0], 1.0));
    *nout = 1;
    *out = calloc(1, sizeof **out);
    (*out)[0] = ax_scope_keep(&s, y);
    ax_scope_end(&s);
    return rc || !(*out)[0] ? -1 : 0;
}

static ax_array *vector(ax_ctx *cx, int64_t n, double first) {
    ax_array *a = ax_array_new(cx, AX_F64, 1, &n);
    for (int64_t i = 0; i < n; i++) ((double *)ax_array_data(a))[i] = first + (double)i;
    return a;
}

static void test_eager_runs_at_once(void **state) {
    ax_ctx *cx = *state;
    seen s = {0};
    ax_callback cb = callback_of(&s);
    ax_array *x = ax_array_scalar(cx, AX_F64, 1.5);
    assert_int_equal(effect(cx, &cb, 1, &x), 0);
    assert_int_equal(effect(cx, &cb, 0, NULL), 0);
    assert_int_equal(s.calls, 2);
    assert_int_equal(s.nin[0], 1);
    assert_true(s.first[0][0] == 1.5);
    assert_int_equal(s.nin[1], 0);
    ax_array_release(x);
}

static void test_jvp_sees_primals(void **state) {
    ax_ctx *cx = *state;
    seen s = {0};
    ax_callback cb = callback_of(&s);
    ax_array *x = ax_array_scalar(cx, AX_F64, 0.5), *t = ax_array_scalar(cx, AX_F64, 1.0);
    ax_array **out = NULL, **tout = NULL;
    int nout = 0;
    assert_int_equal(ax_ad_jvp(cx, program, &cb, 1, &x, &t, &nout, &out, &tout), 0);
    assert_int_equal(s.calls, 1);
    assert_true(s.first[0][0] == 1.0); /* x * 2 of the primal */
    for (int j = 0; j < nout; j++) ax_array_release(out[j]), ax_array_release(tout[j]);
    free(out), free(tout);
    ax_array_release(x), ax_array_release(t);
}

static void test_vmap_runs_once_per_example(void **state) {
    ax_ctx *cx = *state;
    seen s = {0};
    ax_callback cb = callback_of(&s);
    ax_array *xs = vector(cx, 3, 1.0), **out = NULL;
    int axes[1] = {0}, *bdims = NULL, nout = 0;
    assert_int_equal(ax_vmap(cx, program, &cb, 1, &xs, axes, 3, &nout, &out, &bdims), 0);
    assert_int_equal(s.calls, 3);
    for (int i = 0; i < 3; i++) assert_true(s.first[i][0] == 2.0 * (1.0 + i));
    ax_array_release(out[0]);
    free(out), free(bdims);
    ax_array_release(xs);
}

/* Two identical effects and one that reads a value nothing else uses. */
static int twins(ax_ctx *cx, void *closure, int nin, ax_array **in, int *nout, ax_array ***out) {
    (void)nin;
    ax_scope s;
    ax_scope_begin(&s, cx);
    ax_array *dead = ax_lax_unary(&s, AX_P_EXP, in[0]);
    int rc = effect(cx, closure, 1, &in[0]) || effect(cx, closure, 1, &in[0]) ||
             effect(cx, closure, 1, &dead);
    *nout = 1;
    *out = calloc(1, sizeof **out);
    (*out)[0] = ax_scope_keep(&s, ax_lax_neg(&s, in[0]));
    ax_scope_end(&s);
    return rc ? -1 : 0;
}

static int count_prim(const ax_ir *ir, ax_prim p) {
    int n = 0;
    for (int k = 0; k < ir->neqns; k++) n += ir->eqns[k].prim == p;
    return n;
}

static void test_simplify_keeps_every_effect(void **state) {
    ax_ctx *cx = *state;
    seen s = {0};
    ax_callback cb = callback_of(&s);
    ax_aval t = {.dtype = AX_F64, .ndim = 1, .shape = {4}};
    int nout = 0;
    ax_ir *ir = ax_trace_to_ir(cx, twins, &cb, 1, &t, &nout);
    assert_non_null(ir);
    assert_int_equal(s.calls, 0); /* tracing stages the effects, it does not run them */
    ax_ir *simple = ax_simplify(cx, ir);
    assert_non_null(simple);
    assert_int_equal(count_prim(simple, AX_P_DEBUG_CALLBACK), 3);
    assert_int_equal(count_prim(simple, AX_P_EXP), 1); /* read by an effect: live */
    ax_strbuf text;
    ax_strbuf_init(&text);
    ax_ir_format(&text, simple);
    assert_non_null(strstr(text.data, "    debug_callback[callback=record effect=Debug] a\n"));
    ax_strbuf_free(&text);
    ax_ir_release(simple);
    ax_ir_release(ir);
}

static void test_jit_runs_effects_in_order(void **state) {
    ax_ctx *cx = *state;
    seen s = {0};
    ax_callback cb = callback_of(&s);
    ax_aval t = {.dtype = AX_F64, .ndim = 1, .shape = {4}};
    int nout = 0;
    ax_ir *traced = ax_trace_to_ir(cx, program, &cb, 1, &t, &nout);
    ax_ir *ir = traced ? ax_simplify(cx, traced) : NULL;
    ax_ir_release(traced);
    assert_non_null(ir);
    ax_plan *plan = ax_fuse(ir);
    assert_non_null(plan);
    int eager_at = -1;
    for (int i = 0; i < plan->nsteps; i++)
        if (plan->steps[i].kind == AX_STEP_EAGER &&
            ir->eqns[plan->steps[i].eqn].prim == AX_P_DEBUG_CALLBACK)
            eager_at = i;
    assert_true(eager_at >= 0); /* an eager step, after the loop that computes x * 2 */
    assert_true(eager_at > 0 && plan->steps[eager_at - 1].kind == AX_STEP_LOOP);
    ax_plan_free(plan);
    ax_jit_program *prog = ax_jit_build(cx, ir);
    assert_non_null(prog);
    for (int run = 0; run < 2; run++) {
        ax_array *x = vector(cx, 4, run * 10.0), *y = NULL;
        assert_int_equal(ax_jit_run(cx, prog, &x, &y), 0);
        assert_int_equal(s.calls, run + 1);
        for (int i = 0; i < 4; i++) assert_true(s.first[run][i] == 2.0 * (run * 10.0 + i));
        ax_array_release(x), ax_array_release(y);
    }
    ax_jit_free(prog);
    ax_ir_release(ir);
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
        cmocka_unit_test(test_eager_runs_at_once),
        cmocka_unit_test(test_jvp_sees_primals),
        cmocka_unit_test(test_vmap_runs_once_per_example),
        cmocka_unit_test(test_simplify_keeps_every_effect),
        cmocka_unit_test(test_jit_runs_effects_in_order),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}

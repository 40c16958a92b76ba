/* The higher-order primitives (cond, while, scan, call) and the whole-IR passes their rules use
 * (compiler/passes.h), checked by what they compute:
 * - each pass's IR verifies, and computes what it stands for: ax_pass_jvp the directional
 *   derivative (finite differences in f64), ax_pass_partial_eval's two parts composed give the
 *   original, ax_pass_transpose satisfies <J v, w> = <v, J^T w>, ax_pass_vmap equals a loop;
 * - the IR utilities: closure conversion, rewiring, dependencies through sub-programs;
 * - the verifier rejects sub-programs that do not fit, and the printer nests them.
 * The language-level behaviour (grad to second order, vmap, jit, errors) is in
 * tests/lang/lax_*.ax. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../compiler/ad.h"
#include "../../compiler/lax.h"
#include "../../compiler/passes.h"
#include "../../compiler/trace_ir.h"

/* ---------------------------------------------------------------- building programs */

static const ax_aval f64_0 = {.dtype = AX_F64, .ndim = 0};
static const ax_aval f64_4 = {.dtype = AX_F64, .ndim = 1, .shape = {4}};

/* A flat function from a C function of a scope and inputs to outputs. */
typedef int (*scoped_fn)(ax_scope *s, ax_array **in, ax_array **out);
typedef struct body {
    scoped_fn fn;
    int nout;
} body;

static int scoped_flat(ax_ctx *cx, void *closure, int nin, ax_array **in, int *nout,
                       ax_array ***out) {
    body *b = closure;
    (void)nin;
    *nout = b->nout;
    *out = calloc((size_t)b->nout + 1, sizeof **out);
    ax_scope s;
    ax_scope_begin(&s, cx);
    ax_array *res[8] = {0};
    int rc = b->fn(&s, in, res);
    for (int j = 0; j < b->nout && !rc; j++) (*out)[j] = ax_scope_keep(&s, res[j]);
    ax_scope_end(&s);
    return rc;
}

static ax_ir *trace(ax_ctx *cx, scoped_fn fn, int nout, int nin, const ax_aval *types) {
    body b = {fn, nout};
    int n = 0;
    ax_ir *ir = ax_trace_to_ir(cx, scoped_flat, &b, nin, types, &n);
    assert_non_null(ir);
    assert_int_equal(ax_ir_verify(cx, ir), 0);
    return ir;
}

/* carry, y = (c * sin(x) + x, c * x) */
static int scan_body(ax_scope *s, ax_array **in, ax_array **out) {
    ax_array *c = in[0], *x = in[1];
    out[0] = ax_lax_add(s, ax_lax_mul(s, c, ax_lax_unary(s, AX_P_SIN, x)), x);
    out[1] = ax_lax_mul(s, c, x);
    return out[0] && out[1] ? 0 : -1;
}

static int branch_sin(ax_scope *s, ax_array **in, ax_array **out) {
    out[0] = ax_lax_mul(s, ax_lax_unary(s, AX_P_SIN, in[0]), in[1]);
    return out[0] ? 0 : -1;
}

static int branch_exp(ax_scope *s, ax_array **in, ax_array **out) {
    out[0] = ax_lax_add(s, ax_lax_unary(s, AX_P_EXP, in[0]), in[1]);
    return out[0] ? 0 : -1;
}

/* The program under test: (xs: f64[4], a: f64[]) -> (scan's carry, sum of its ys) * cond(...) */
typedef struct program {
    ax_ir *body, *br[2];
} program;

static int program_fn(ax_ctx *cx, void *closure, int nin, ax_array **in, int *nout,
                      ax_array ***out) {
    program *p = closure;
    (void)nin;
    *nout = 2;
    *out = calloc(3, sizeof **out);
    ax_scope s;
    ax_scope_begin(&s, cx);
    ax_array *sres[2] = {NULL, NULL}, *init = ax_lax_scalar_like(&s, in[1], 0.5);
    ax_params sp = {.nsub = 1, .sub = (struct ax_ir *const *)&p->body, .ncarry = 1, .length = 4};
    int rc = ax_bind(cx, AX_P_SCAN, 2, (ax_array *[]){init, in[0]}, &sp, sres);
    if (rc) goto done;
    ax_scope_own(&s, sres[0]), ax_scope_own(&s, sres[1]);
    /* the branch index is data dependent: a > 0 */
    ax_array *pred = ax_lax_binary(&s, AX_P_GT, in[1], ax_lax_scalar_like(&s, in[1], 0.0));
    ax_array *index = ax_lax_convert(&s, pred, AX_I32), *cres = NULL;
    ax_params cp = {.nsub = 2, .sub = (struct ax_ir *const *)p->br};
    rc = ax_bind(cx, AX_P_COND, 3, (ax_array *[]){index, sres[0], in[1]}, &cp, &cres);
    if (rc) goto done;
    ax_scope_own(&s, cres);
    (*out)[0] = ax_scope_keep(&s, ax_lax_mul(&s, cres, sres[0]));
    (*out)[1] = ax_scope_keep(&s, ax_lax_reduce_sum_all(&s, sres[1]));
done:
    ax_scope_end(&s);
    return rc;
}

static program make_program(ax_ctx *cx) {
    program p;
    ax_aval two[2] = {f64_0, f64_0};
    p.body = trace(cx, scan_body, 2, 2, two);
    p.br[0] = trace(cx, branch_exp, 1, 2, two);
    p.br[1] = trace(cx, branch_sin, 1, 2, two);
    return p;
}

static void program_free(program *p) {
    ax_ir_release(p->body);
    ax_ir_release(p->br[0]);
    ax_ir_release(p->br[1]);
}

static ax_ir *program_ir(ax_ctx *cx, program *p) {
    ax_aval types[2] = {f64_4, f64_0};
    int n = 0;
    ax_ir *ir = ax_trace_to_ir(cx, program_fn, p, 2, types, &n);
    assert_non_null(ir);
    assert_int_equal(ax_ir_verify(cx, ir), 0);
    return ir;
}

static ax_array *vec(ax_ctx *cx, const double *v, int n) {
    return n ? ax_array_from_data(cx, AX_F64, 1, (int64_t[]){n}, v)
             : ax_array_from_data(cx, AX_F64, 0, NULL, v);
}

static double get(const ax_array *a, int64_t i) {
    return ax_array_get_f64(a, i);
}

static void eval_or_fail(ax_ctx *cx, const ax_ir *ir, ax_array **in, ax_array **out) {
    if (ax_ir_eval(cx, ir, in, out)) fail_msg("eval: %s", cx->err.message);
}

/* ---------------------------------------------------------------- the passes */

static void test_jvp_pass_is_the_derivative(void **state) {
    ax_ctx *cx = *state;
    program p = make_program(cx);
    ax_ir *ir = program_ir(cx, &p);
    bool nz[2] = {true, true}, nzo[2];
    ax_ir *j = ax_pass_jvp(cx, ir, nz, NULL, nzo);
    assert_non_null(j);
    assert_int_equal(ax_ir_verify(cx, j), 0);
    assert_true(nzo[0] && nzo[1]);
    for (int sign = -1; sign <= 1; sign += 2) { /* both branches of the cond */
        double xv[4] = {0.5, 1.0, -0.3, 2.0}, a = 0.7 * sign, v[4] = {0.3, -0.2, 0.5, 0.1};
        double va = 0.4, h = 1e-6;
        ax_array *in[4] = {vec(cx, xv, 4), vec(cx, &a, 0), vec(cx, v, 4), vec(cx, &va, 0)};
        ax_array *out[4] = {0};
        eval_or_fail(cx, j, in, out);
        double xp[4], xm[4], ap = a + h * va, am = a - h * va;
        for (int i = 0; i < 4; i++) xp[i] = xv[i] + h * v[i], xm[i] = xv[i] - h * v[i];
        ax_array *ip[2] = {vec(cx, xp, 4), vec(cx, &ap, 0)}, *im[2] = {vec(cx, xm, 4), vec(cx, &am, 0)};
        ax_array *op[2] = {0}, *om[2] = {0};
        eval_or_fail(cx, ir, ip, op);
        eval_or_fail(cx, ir, im, om);
        for (int k = 0; k < 2; k++) {
            double fd = (get(op[k], 0) - get(om[k], 0)) / (2 * h);
            assert_true(fabs(get(out[2 + k], 0) - fd) < 1e-6 * (1 + fabs(fd)));
            ax_array_release(op[k]), ax_array_release(om[k]);
        }
        for (int k = 0; k < 4; k++) ax_array_release(in[k]), ax_array_release(out[k]);
        for (int k = 0; k < 2; k++) ax_array_release(ip[k]), ax_array_release(im[k]);
    }
    ax_ir_release(j);
    ax_ir_release(ir);
    program_free(&p);
}

/* known then unknown equals the original, for every split of the inputs */
static void test_partial_eval_parts_compose(void **state) {
    ax_ctx *cx = *state;
    program p = make_program(cx);
    ax_ir *ir = program_ir(cx, &p);
    double xv[4] = {0.5, 1.0, -0.3, 2.0}, a = 0.7;
    ax_array *in[2] = {vec(cx, xv, 4), vec(cx, &a, 0)}, *want[2] = {0};
    eval_or_fail(cx, ir, in, want);
    for (int mask = 0; mask < 4; mask++) {
        bool unknown[2] = {mask & 1, (mask >> 1) & 1}, uo[2];
        ax_ir *kn = NULL, *un = NULL;
        int nres = 0;
        assert_int_equal(ax_pass_partial_eval(cx, ir, unknown, NULL, uo, &kn, &un, &nres), 0);
        assert_int_equal(ax_ir_verify(cx, kn), 0);
        assert_int_equal(ax_ir_verify(cx, un), 0);
        int nk = 0, nu = 0;
        for (int j = 0; j < 2; j++) nk += !uo[j], nu += uo[j];
        assert_int_equal(kn->nout, nk + nres);
        assert_int_equal(un->nin, nres + unknown[0] + unknown[1]);
        /* an output is unknown exactly when an unknown input reaches it */
        assert_int_equal(uo[0] || uo[1], mask != 0);
        ax_array *kin[2], *kout[16] = {0}, *uin[16], *uout[2] = {0};
        int n = 0;
        for (int i = 0; i < 2; i++)
            if (!unknown[i]) kin[n++] = in[i];
        eval_or_fail(cx, kn, kin, kout);
        n = 0;
        for (int r = 0; r < nres; r++) uin[n++] = kout[nk + r];
        for (int i = 0; i < 2; i++)
            if (unknown[i]) uin[n++] = in[i];
        eval_or_fail(cx, un, uin, uout);
        for (int j = 0, a2 = 0, b2 = 0; j < 2; j++) {
            ax_array *got = uo[j] ? uout[b2++] : kout[a2++];
            assert_true(fabs(get(got, 0) - get(want[j], 0)) <= 1e-12 * (1 + fabs(get(want[j], 0))));
        }
        for (int k = 0; k < nk + nres; k++) ax_array_release(kout[k]);
        for (int k = 0; k < nu; k++) ax_array_release(uout[k]);
        ax_ir_release(kn), ax_ir_release(un);
    }
    for (int k = 0; k < 2; k++) ax_array_release(in[k]), ax_array_release(want[k]);
    ax_ir_release(ir);
    program_free(&p);
}

/* the linear part of the program (its linearization) transposes: <J v, w> = <v, J^T w> */
static void test_transpose_pass_is_the_adjoint(void **state) {
    ax_ctx *cx = *state;
    program p = make_program(cx);
    ax_ir *ir = program_ir(cx, &p);
    /* the JVP split: primals known, tangents unknown -> the linear map of the tangents */
    bool nz[2] = {true, true}, nzo[2];
    ax_ir *j = ax_pass_jvp(cx, ir, nz, NULL, nzo);
    bool unknown[4] = {false, false, true, true}, uo[4];
    ax_ir *kn = NULL, *lin = NULL;
    int nres = 0;
    assert_int_equal(ax_pass_partial_eval(cx, j, unknown, NULL, uo, &kn, &lin, &nres), 0);
    assert_true(!uo[0] && !uo[1] && uo[2] && uo[3]); /* primal outputs known, tangents not */
    bool *linear = calloc((size_t)lin->nin, sizeof *linear);
    for (int i = nres; i < lin->nin; i++) linear[i] = true;
    ax_ir *t = ax_pass_transpose(cx, lin, linear);
    assert_non_null(t);
    assert_int_equal(ax_ir_verify(cx, t), 0);
    double xv[4] = {0.5, 1.0, -0.3, 2.0}, a = -0.7, v[4] = {0.3, -0.2, 0.5, 0.1}, va = 0.4;
    double w[2] = {1.3, -0.6};
    ax_array *kin[2] = {vec(cx, xv, 4), vec(cx, &a, 0)}, *kout[32] = {0};
    eval_or_fail(cx, kn, kin, kout);
    ax_array *lin_in[34], *lin_out[2] = {0}, *t_in[34], *t_out[2] = {0};
    for (int r = 0; r < nres; r++) lin_in[r] = t_in[r] = kout[2 + r];
    lin_in[nres] = vec(cx, v, 4), lin_in[nres + 1] = vec(cx, &va, 0);
    t_in[nres] = vec(cx, &w[0], 0), t_in[nres + 1] = vec(cx, &w[1], 0);
    eval_or_fail(cx, lin, lin_in, lin_out);
    eval_or_fail(cx, t, t_in, t_out);
    double jv_w = get(lin_out[0], 0) * w[0] + get(lin_out[1], 0) * w[1];
    double v_jtw = get(t_out[1], 0) * va;
    for (int i = 0; i < 4; i++) v_jtw += get(t_out[0], i) * v[i];
    assert_true(fabs(jv_w - v_jtw) < 1e-12 * (1 + fabs(jv_w)));
    for (int k = 0; k < 2 + nres; k++) ax_array_release(kout[k]);
    for (int k = 0; k < 2; k++) {
        ax_array_release(kin[k]), ax_array_release(lin_out[k]), ax_array_release(t_out[k]);
        ax_array_release(lin_in[nres + k]), ax_array_release(t_in[nres + k]);
    }
    free(linear);
    ax_ir_release(t), ax_ir_release(lin), ax_ir_release(kn), ax_ir_release(j), ax_ir_release(ir);
    program_free(&p);
}

static void test_vmap_pass_is_a_loop(void **state) {
    ax_ctx *cx = *state;
    program p = make_program(cx);
    ax_ir *ir = program_ir(cx, &p);
    /* a batch of 3 examples; a takes both signs, so the cond's index is batched */
    for (int which = 1; which < 4; which++) {
        bool batched[2] = {which & 1, (which >> 1) & 1}, bo[2];
        ax_ir *v = ax_pass_vmap(cx, ir, 3, batched, NULL, bo);
        assert_non_null(v);
        assert_int_equal(ax_ir_verify(cx, v), 0);
        double xs[12], as[3] = {0.7, -0.4, 1.1};
        for (int i = 0; i < 12; i++) xs[i] = 0.1 * i - 0.5;
        ax_array *in[2] = {batched[0] ? ax_array_from_data(cx, AX_F64, 2, (int64_t[]){3, 4}, xs)
                                      : vec(cx, xs, 4),
                           batched[1] ? vec(cx, as, 3) : vec(cx, as, 0)};
        ax_array *out[2] = {0};
        eval_or_fail(cx, v, in, out);
        for (int e = 0; e < 3; e++) {
            ax_array *ein[2] = {vec(cx, xs + (batched[0] ? 4 * e : 0), 4),
                                vec(cx, as + (batched[1] ? e : 0), 0)};
            ax_array *eout[2] = {0};
            eval_or_fail(cx, ir, ein, eout);
            for (int k = 0; k < 2; k++) {
                double got = get(out[k], bo[k] ? e : 0), want = get(eout[k], 0);
                assert_true(fabs(got - want) < 1e-12 * (1 + fabs(want)));
                ax_array_release(eout[k]);
                ax_array_release(ein[k]);
            }
        }
        for (int k = 0; k < 2; k++) ax_array_release(in[k]), ax_array_release(out[k]);
        ax_ir_release(v);
    }
    ax_ir_release(ir);
    program_free(&p);
}

/* ---------------------------------------------------------------- IR utilities */

static void test_dependencies_see_through_sub_programs(void **state) {
    ax_ctx *cx = *state;
    program p = make_program(cx);
    ax_ir *ir = program_ir(cx, &p);
    bool out[2];
    /* xs reaches both outputs; a reaches the first only (through the cond), not the sum */
    ax_ir_dependencies(ir, (bool[]){true, false}, out);
    assert_true(out[0] && out[1]);
    ax_ir_dependencies(ir, (bool[]){false, true}, out);
    assert_true(out[0] && !out[1]);
    ax_ir_release(ir);
    program_free(&p);
}

static void test_rewire_and_lift(void **state) {
    ax_ctx *cx = *state;
    program p = make_program(cx);
    /* the body's inputs swapped, and an unused input added in front */
    ax_aval types[3] = {f64_4, f64_0, f64_0};
    ax_ir *r = ax_ir_rewire(p.body, 3, (int[]){-1, 1, 0}, types, 2, (int[]){1, 0});
    assert_non_null(r);
    assert_int_equal(ax_ir_verify(cx, r), 0);
    assert_false(ax_ir_uses_input(r, 0));
    assert_true(ax_ir_uses_input(r, 1) && ax_ir_uses_input(r, 2));
    double c = 0.5, x = 2.0, unused[4] = {0};
    ax_array *in[3] = {vec(cx, unused, 4), vec(cx, &x, 0), vec(cx, &c, 0)}, *out[2] = {0};
    eval_or_fail(cx, r, in, out);
    assert_true(fabs(get(out[0], 0) - c * x) < 1e-15);              /* y first now */
    assert_true(fabs(get(out[1], 0) - (c * sin(x) + x)) < 1e-15);   /* then the carry */
    for (int k = 0; k < 3; k++) ax_array_release(in[k]);
    ax_array_release(out[0]), ax_array_release(out[1]);
    ax_ir_release(r);
    program_free(&p);
}

static void test_verifier_checks_sub_programs(void **state) {
    ax_ctx *cx = *state;
    program p = make_program(cx);
    /* a cond whose branches return different types cannot be built */
    ax_aval two[2] = {f64_0, f64_0};
    ax_ir *bad = trace(cx, scan_body, 2, 2, two); /* two outputs where the others have one */
    ax_ir *branches[2] = {p.br[0], bad};
    ax_ir_builder *b = ax_ir_builder_new();
    int i = ax_ir_add_input(b, &(ax_aval){.dtype = AX_I32}), x = ax_ir_add_input(b, &f64_0);
    int y = ax_ir_add_input(b, &f64_0), o;
    ax_params cp = {.nsub = 2, .sub = (struct ax_ir *const *)branches};
    ax_ir_add_eqn(b, AX_P_COND, &cp, 3, (ax_ir_atom[]){{.var = i}, {.var = x}, {.var = y}}, 1,
                  &f64_0, &o, 0, NULL);
    ax_ir *ir = ax_ir_builder_finish(b, 1, (ax_ir_atom[]){{.var = o}});
    assert_int_equal(ax_ir_verify(cx, ir), -1);
    ax_error_clear(cx);
    ax_ir_release(ir);
    ax_ir_release(bad);
    program_free(&p);
}

static void test_printer_nests(void **state) {
    ax_ctx *cx = *state;
    program p = make_program(cx);
    ax_ir *ir = program_ir(cx, &p);
    ax_strbuf s;
    ax_strbuf_init(&s);
    ax_ir_format(&s, ir);
    assert_non_null(strstr(s.data, "= scan[\n      jaxpr={ lambda ; "));
    assert_non_null(strstr(s.data, "      length=4\n      num_carry=1\n      num_consts=0\n"));
    assert_non_null(strstr(s.data, "= cond[\n      branches=(\n        { lambda ; "));
    free(s.data);
    ax_ir_release(ir);
    program_free(&p);
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
        cmocka_unit_test(test_jvp_pass_is_the_derivative),
        cmocka_unit_test(test_partial_eval_parts_compose),
        cmocka_unit_test(test_transpose_pass_is_the_adjoint),
        cmocka_unit_test(test_vmap_pass_is_a_loop),
        cmocka_unit_test(test_dependencies_see_through_sub_programs),
        cmocka_unit_test(test_rewire_and_lift),
        cmocka_unit_test(test_verifier_checks_sub_programs),
        cmocka_unit_test(test_printer_nests),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}

/* The primitive table, row by row: every row says how jit computes it, and the code generator
 * refuses what a row's lowering does not cover rather than guessing. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../compiler/codegen.h"
#include "../../compiler/fuse.h"

static int setup(void **state) {
    *state = ax_ctx_new();
    return *state ? 0 : -1;
}

static int teardown(void **state) {
    ax_ctx_free(*state);
    return 0;
}

/* ---------------------------------------------------------------- lowerings */

/* Every row declares how jit computes it: a loop operation, or an eager step. */
static void test_every_row_has_a_lowering(void **state) {
    (void)state;
    for (int p = 0; p < AX_P_NPRIMS; p++) {
        const ax_prim_info *info = ax_prim_get((ax_prim)p);
        const ax_lowering *l = &info->lower;
        if (l->kop == AX_KOP_NONE)
            fail_msg("%s declares no lowering (a loop operation or AX_LOWER_EAGER)", info->name);
        bool loop = l->kop != AX_KOP_EAGER && !ax_kop_is_control(l->kop);
        if (loop && !l->dtypes)
            fail_msg("%s is lowered to a loop operation for no dtype", info->name);
        if ((l->kop == AX_KOP_LIBM || l->kop == AX_KOP_BUILTIN) && !(l->fn && l->fn[0]))
            fail_msg("%s calls a math function without naming it", info->name);
    }
}

/* The one-equation program y = prim(x) (or prim(x, x)) on f64[rows, 16], fused. */
static ax_plan *one_loop(ax_ctx *cx, ax_prim prim, const ax_params *p, int rows) {
    int nin = ax_prim_get(prim)->nin;
    ax_aval in[2] = {{.dtype = AX_F64, .ndim = 2, .shape = {rows, 16}}}, out;
    in[1] = in[0];
    assert_int_equal(ax_prim_infer(cx, prim, nin, in, p, &out), 0);
    ax_ir_builder *b = ax_ir_builder_new();
    int x = ax_ir_add_input(b, &in[0]), y;
    ax_ir_atom args[2] = {{.var = x}, {.var = x}};
    assert_int_equal(ax_ir_add_eqn(b, prim, p, nin, args, 1, &out, &y, 0, NULL), 0);
    ax_ir *ir = ax_ir_builder_finish(b, 1, (ax_ir_atom[]){{.var = y}});
    assert_non_null(ir);
    ax_plan *plan = ax_fuse(ir);
    assert_non_null(plan);
    assert_null(plan->unlowered);
    return plan;
}

static void free_loop(ax_plan *plan) {
    ax_ir *ir = (ax_ir *)plan->ir; /* borrowed by the plan, owned here */
    ax_plan_free(plan);
    ax_ir_release(ir);
}

/* Builds `code` with one node's primitive replaced by `as`: refused with an internal error
 * naming it, or built when `as` fits. */
static void build_as(const ax_gccjit *api, ax_plan *plan, ax_knode_kind kind, ax_prim as,
                     bool fits) {
    int changed = 0;
    for (int i = 0; i < plan->code.h.nnodes; i++)
        if (plan->code.nodes[i].kind == kind) plan->code.nodes[i].prim = as, changed++;
    assert_int_equal(changed, 1);
    gcc_jit_context *ctx = GCCJIT(gcc_jit_context_acquire)();
    assert_non_null(ctx);
    char why[256] = "";
    bool ok = ax_codegen_build(api, ctx, &plan->code, why, sizeof why);
    GCCJIT(gcc_jit_context_release)(ctx);
    if (fits) {
        if (!ok) fail_msg("%s: %s", ax_prim_get(as)->name, why);
        return;
    }
    if (ok)
        fail_msg("the code generator accepted %s where its lowering does not fit",
                 ax_prim_get(as)->name);
    if (!strstr(why, "internal error") || !strstr(why, ax_prim_get(as)->name))
        fail_msg("refusing %s: \"%s\"", ax_prim_get(as)->name, why);
}

/* The code generator never guesses: a node whose row's lowering is an eager step, or an
 * operation of another arity or kind, is refused (it once compiled any binary operation it did
 * not know as >=). */
static void test_codegen_refuses_what_rows_do_not_lower(void **state) {
    ax_ctx *cx = *state;
    char why[256];
    ax_gccjit *api = ax_gccjit_open(why, sizeof why);
    if (!api) fail_msg("libgccjit: %s", why);
    const ax_prim elementwise_as[] = {AX_P_SORT,       AX_P_FLOOR_DIV,        AX_P_ADD,
                                      AX_P_REDUCE_SUM, AX_P_BROADCAST_IN_DIM, AX_P_SCAN};
    for (size_t i = 0; i < sizeof elementwise_as / sizeof *elementwise_as; i++) {
        ax_plan *plan = one_loop(cx, AX_P_EXP, NULL, 1);
        build_as(api, plan, AX_KN_OP, elementwise_as[i], false);
        free_loop(plan);
    }
    ax_plan *plan = one_loop(cx, AX_P_EXP, NULL, 1);
    build_as(api, plan, AX_KN_OP, AX_P_TANH, true);
    free_loop(plan);
    const ax_prim binary_as[] = {AX_P_FLOOR_DIV, AX_P_NEXTAFTER, AX_P_EXP, AX_P_SELECT};
    for (size_t i = 0; i < sizeof binary_as / sizeof *binary_as; i++) {
        plan = one_loop(cx, AX_P_ADD, NULL, 1);
        build_as(api, plan, AX_KN_OP, binary_as[i], false);
        free_loop(plan);
    }
    plan = one_loop(cx, AX_P_ADD, NULL, 1);
    build_as(api, plan, AX_KN_OP, AX_P_ATAN2, true);
    free_loop(plan);
    ax_params sum = {.naxes = 1, .axes = {1}};
    const ax_prim reduction_as[] = {AX_P_EXP, AX_P_ARGMAX, AX_P_CUMSUM};
    for (size_t i = 0; i < sizeof reduction_as / sizeof *reduction_as; i++) {
        plan = one_loop(cx, AX_P_REDUCE_SUM, &sum, 4);
        build_as(api, plan, AX_KN_REDUCE, reduction_as[i], false);
        free_loop(plan);
    }
    plan = one_loop(cx, AX_P_REDUCE_SUM, &sum, 4);
    build_as(api, plan, AX_KN_REDUCE, AX_P_REDUCE_MAX, true);
    free_loop(plan);
    ax_gccjit_close(api);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_row_has_a_lowering),
        cmocka_unit_test_setup_teardown(test_codegen_refuses_what_rows_do_not_lower, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

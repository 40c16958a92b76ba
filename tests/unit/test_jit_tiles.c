/* Loops that read operands across their rows (x.T, permuted views) or read bools: strided
 * loads and bools go through tiles (runtime/tile.h) or strided loads are gathered before the
 * lane loops (compiler/codegen.c), and the results are eager's bit for bit: elementwise loops
 * in every dtype (tiles of 1, 4 and 8 bytes, bools widened), tails in both tiled dims, 3-d
 * permutations, two transposed operands with different contiguous dims, reductions over a
 * kept last axis (the SGD step's loops: a select on a bool mask summed over rows beside a
 * transposed product scaled and subtracted), over two axes, along the lanes, vector math
 * reading a tile, loops split over threads along the tile dim, and loops in pieces (gathers
 * only). Each program also states how its loads are read, so a change of plan shows here
 * before it shows in a benchmark. Loops with outputs of 32 MB or more write them through a
 * staging tile with non-temporal stores (compiler/jit_loops.c): the same bits, whatever the
 * output's alignment within a tile, with one output or several, on one thread or two. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "../../compiler/jit_loops.h"
#include "../../runtime/pool.h"
#include "jit_test_util.h"

/* ---------------------------------------------------------------- programs */

/* A program under construction: its builder and the literals it holds until finished. */
typedef struct prog {
    ax_ctx *cx;
    ax_ir_builder *b;
    int nlits;
    ax_array *lits[16];
} prog;

#define SH(...) ((const int64_t[]){__VA_ARGS__})
#define AX(...) ((const int[]){__VA_ARGS__})

static ax_ir_atom arg(prog *p, ax_dtype t, int ndim, const int64_t *shape) {
    ax_aval a = {.dtype = t, .ndim = ndim};
    memcpy(a.shape, shape, (size_t)ndim * sizeof *shape);
    return (ax_ir_atom){.var = ax_ir_add_input(p->b, &a)};
}

/* prim(x[, y[, z]]) with no parameters. */
static ax_ir_atom op(prog *p, ax_prim prim, int nin, ax_ir_atom x, ax_ir_atom y, ax_ir_atom z) {
    return jit_test_eqn(p->cx, p->b, prim, &(ax_params){0}, nin, (ax_ir_atom[]){x, y, z});
}

static ax_ir_atom op1(prog *p, ax_prim prim, ax_ir_atom x) {
    return op(p, prim, 1, x, x, x);
}

static ax_ir_atom op2(prog *p, ax_prim prim, ax_ir_atom x, ax_ir_atom y) {
    return op(p, prim, 2, x, y, y);
}

/* An operation on axes: a transpose (the permutation) or a reduction (the axes reduced). */
static ax_ir_atom on_axes(prog *p, ax_prim prim, ax_ir_atom x, int n, const int *axes) {
    ax_params par = {.naxes = n};
    memcpy(par.axes, axes, (size_t)n * sizeof *axes);
    return jit_test_eqn(p->cx, p->b, prim, &par, 1, &x);
}

static ax_ir_atom tr(prog *p, ax_ir_atom x) {
    return on_axes(p, AX_P_TRANSPOSE, x, 2, AX(1, 0));
}

static ax_ir_atom lit_as(prog *p, ax_dtype t, double v) {
    assert_true(p->nlits < 16);
    ax_array *a = p->lits[p->nlits++] = ax_array_scalar(p->cx, t, v);
    assert_non_null(a);
    return (ax_ir_atom){.var = -1, .lit = a};
}

static ax_ir *done(prog *p, int nout, const ax_ir_atom *outs) {
    ax_ir *ir = ax_ir_builder_finish(p->b, nout, outs);
    while (p->nlits > 0) ax_array_release(p->lits[--p->nlits]);
    assert_non_null(ir);
    return ir;
}

/* How the loops of a plan read their loads. */
typedef struct accesses {
    int tiles, gathers;
} accesses;

static accesses count_accesses(const ax_ir *ir) {
    ax_plan *p = ax_fuse(ir);
    assert_non_null(p);
    accesses a = {0};
    for (int s = 0; s < p->code.h.nsteps; s++) {
        const ax_code_step *st = &p->code.steps[s];
        if (st->kind != AX_STEP_LOOP) continue;
        for (int i = 0; i < st->nnodes; i++) {
            ax_load_access k = ax_codegen_load_access(&p->code, s, i);
            a.tiles += k == AX_LOAD_TILE;
            a.gathers += k == AX_LOAD_GATHER;
        }
    }
    ax_plan_free(p);
    return a;
}

/* Runs `ir` eagerly and natively on random inputs; every output must have eager's bits, and
 * its loops must read as many loads through tiles and gathers as stated (-1: any number).
 * Sums get finite values (D_SMALL: with all their bits, so any change of order shows), other
 * programs the special values too. */
static void check_program(ax_ctx *cx, ax_ir *ir, const char *what, int tiles, int gathers) {
    bool sums = false;
    for (int k = 0; k < ir->neqns; k++) sums |= ir->eqns[k].prim == AX_P_REDUCE_SUM;
    rng r = {.s = 17};
    ax_array *args[8];
    assert_true(ir->nin <= 8);
    for (int i = 0; i < ir->nin; i++)
        args[i] = make_input(cx, &r, &ir->types[ir->invars[i]], sums ? D_SMALL : D_ANY, 0);
    accesses a = count_accesses(ir);
    if ((tiles >= 0 && a.tiles != tiles) || (gathers >= 0 && a.gathers != gathers))
        fail_msg("%s: %d tiled and %d gathered loads, not %d and %d", what, a.tiles, a.gathers,
                 tiles, gathers);
    check_compiled(ir);
    check c = {0};
    run_both(cx, ir, args, NULL, &c);
    for (int i = 0; i < ir->nin; i++) ax_array_release(args[i]);
    if (c.mismatches) fail_msg("%s: %d elements differ between eager and jit", what, c.mismatches);
}

/* Shapes with full tiles, tails in either dim, rows shorter than a tile and a ROWS tile
 * (over 1024 lanes) with its tail. */
static const int64_t shapes[][2] = {{16, 16}, {37, 53}, {5, 300}, {300, 5}, {3, 2000}, {129, 17}};
enum { NSHAPES = sizeof shapes / sizeof *shapes };

/* y - c * x.T (bools: y & x.T) in every dtype: one tiled load. */
static void test_elementwise_transposed(void **state) {
    ax_ctx *cx = *state;
    static const ax_dtype types[] = {AX_F32, AX_F64, AX_I32, AX_U32, AX_I64, AX_U8, AX_BOOL};
    for (size_t t = 0; t < sizeof types / sizeof *types; t++)
        for (int k = 0; k < NSHAPES; k++) {
            int64_t m = shapes[k][0], n = shapes[k][1];
            prog b = {.cx = cx, .b = ax_ir_builder_new()};
            ax_dtype dt = types[t];
            ax_ir_atom x = arg(&b, dt, 2, SH(n, m)), y = arg(&b, dt, 2, SH(m, n));
            ax_ir_atom z = dt == AX_BOOL ? op2(&b, AX_P_AND, y, tr(&b, x))
                                         : op2(&b, AX_P_SUB, y,
                                               op2(&b, AX_P_MUL, lit_as(&b, dt, 3), tr(&b, x)));
            ax_ir *ir = done(&b, 1, &z);
            char what[64];
            snprintf(what, sizeof what, "%s y - c * x.T [%lld,%lld]", ax_dtype_short(dt),
                     (long long)m, (long long)n);
            check_program(cx, ir, what, dt == AX_BOOL ? 2 : 1, 0); /* bools: y too */
            ax_ir_release(ir);
        }
}

/* 3-d: x.transpose(2, 0, 1) + y tiles along dim 0; beside it w.transpose(0, 2, 1), strided
 * along the lanes but contiguous along dim 1, is gathered; a permutation that keeps the last
 * axis last reads directly. */
static void test_permuted_3d(void **state) {
    ax_ctx *cx = *state;
    prog b = {.cx = cx, .b = ax_ir_builder_new()};
    ax_ir_atom x = arg(&b, AX_F32, 3, SH(6, 21, 19)), y = arg(&b, AX_F32, 3, SH(19, 6, 21));
    ax_ir_atom w = arg(&b, AX_F32, 3, SH(19, 21, 6)), v = arg(&b, AX_F32, 3, SH(6, 19, 21));
    ax_ir_atom xt = on_axes(&b, AX_P_TRANSPOSE, x, 3, AX(2, 0, 1)),
               wt = on_axes(&b, AX_P_TRANSPOSE, w, 3, AX(0, 2, 1));
    ax_ir_atom vt = on_axes(&b, AX_P_TRANSPOSE, v, 3, AX(1, 0, 2));
    ax_ir_atom z = op2(&b, AX_P_ADD, op2(&b, AX_P_MUL, xt, y), op2(&b, AX_P_SUB, wt, vt));
    ax_ir *ir = done(&b, 1, &z);
    check_program(cx, ir, "x.transpose(2,0,1) * y + w.transpose(0,2,1) - v.transpose(1,0,2)", 1, 1);
    ax_ir_release(ir);
}

/* The SGD step's loop: s = where(p, a, c) (also an output), sum(s, axis=0), and
 * g - 0.01 * h.T in the same loop; f32 and f64. */
static void test_rows_reduction_with_transposed_operand(void **state) {
    ax_ctx *cx = *state;
    for (int f64 = 0; f64 < 2; f64++)
        for (int k = 0; k < NSHAPES; k++) {
            int64_t m = shapes[k][0], n = shapes[k][1];
            ax_dtype dt = f64 ? AX_F64 : AX_F32;
            prog b = {.cx = cx, .b = ax_ir_builder_new()};
            ax_ir_atom p = arg(&b, AX_BOOL, 2, SH(m, n)), a = arg(&b, dt, 2, SH(m, n));
            ax_ir_atom c = arg(&b, dt, 2, SH(m, n)), h = arg(&b, dt, 2, SH(n, m));
            ax_ir_atom g = arg(&b, dt, 2, SH(m, n));
            ax_ir_atom s = op(&b, AX_P_SELECT, 3, p, a, c);
            ax_ir_atom outs[3] = {
                s, on_axes(&b, AX_P_REDUCE_SUM, s, 1, AX(0)),
                op2(&b, AX_P_SUB, g, op2(&b, AX_P_MUL, lit_as(&b, dt, 0.01), tr(&b, h)))};
            ax_ir *ir = done(&b, 3, outs);
            char what[64];
            snprintf(what, sizeof what, "%s SGD loop [%lld,%lld]", ax_dtype_short(dt), (long long)m,
                     (long long)n);
            check_program(cx, ir, what, 2, 0); /* h.T and p */
            ax_ir_release(ir);
        }
}

/* Bools read along the lanes go through tiles too (widened to 32 bits): sum(where(p, a, c),
 * axis=0) of the SGD step's other loop, tiled along the reduced axis; where(p, a, c) in a loop
 * of one dim (no other dim to tile along) reads them in the lane loops. */
static void test_bools_are_widened(void **state) {
    ax_ctx *cx = *state;
    for (int k = 0; k < NSHAPES; k++) {
        int64_t m = shapes[k][0], n = shapes[k][1];
        prog b = {.cx = cx, .b = ax_ir_builder_new()};
        ax_ir_atom p = arg(&b, AX_BOOL, 2, SH(m, n)), a = arg(&b, AX_F32, 2, SH(m, n));
        ax_ir_atom c = arg(&b, AX_F32, 2, SH(m, n));
        ax_ir_atom s = op(&b, AX_P_SELECT, 3, p, a, c);
        ax_ir_atom outs[2] = {s, on_axes(&b, AX_P_REDUCE_SUM, s, 1, AX(0))};
        ax_ir *ir = done(&b, 2, outs);
        check_program(cx, ir, "sum(where(p, a, c), axis=0)", 1, 0);
        ax_ir_release(ir);
    }
    prog b = {.cx = cx, .b = ax_ir_builder_new()};
    ax_ir_atom p = arg(&b, AX_BOOL, 2, SH(37, 53)), a = arg(&b, AX_F32, 2, SH(37, 53));
    ax_ir_atom s = op(&b, AX_P_SELECT, 3, p, a, lit_as(&b, AX_F32, 0));
    ax_ir *ir = done(&b, 1, &s);
    check_program(cx, ir, "where(p, a, 0)", 0, 0);
    ax_ir_release(ir);
}

/* Reductions over two axes with the last kept: a load contiguous along the inner reduced
 * axis is tiled; one contiguous along the outer reduced axis is gathered (tiling it would
 * change the order of each output's elements). */
static void test_rows_reduction_over_two_axes(void **state) {
    ax_ctx *cx = *state;
    for (int inner = 0; inner < 2; inner++) {
        prog b = {.cx = cx, .b = ax_ir_builder_new()};
        ax_ir_atom x =
            inner ? arg(&b, AX_F64, 3, SH(7, 33, 40)) : arg(&b, AX_F64, 3, SH(33, 40, 7));
        ax_ir_atom xt =
            on_axes(&b, AX_P_TRANSPOSE, x, 3, inner ? AX(0, 2, 1) : AX(2, 1, 0)); /* [7, 40, 33] */
        ax_ir_atom y = arg(&b, AX_F64, 3, SH(7, 40, 33));
        ax_ir_atom s = on_axes(&b, AX_P_REDUCE_SUM, op2(&b, AX_P_MUL, xt, y), 2, AX(0, 1));
        ax_ir *ir = done(&b, 1, &s);
        check_program(cx, ir, inner ? "sum over (0, 1), tiled" : "sum over (0, 1), gathered", inner,
                      !inner);
        ax_ir_release(ir);
    }
}

/* Reductions along the lanes (the last axis) of transposed operands: tiled along a kept
 * axis, AX_TILE outputs side by side, in chunks (5 x 5000: two chunks, a partial tile); rows
 * shorter than the lanes (40 x 7) run across outputs and gather; f32 sums, i32 sums
 * (wrapping) and f64 maxima (NaN and signed zeros); and a 3-d loop whose tiled axis is not
 * the innermost kept one (the kept axes are reordered). */
static void test_runs_of_a_transposed_operand(void **state) {
    ax_ctx *cx = *state;
    static const int64_t runs[][2] = {{37, 53}, {5, 5000}, {128, 128}, {40, 7}};
    static const struct {
        ax_prim prim;
        ax_dtype t;
    } ops[] = {{AX_P_REDUCE_SUM, AX_F32}, {AX_P_REDUCE_SUM, AX_I32}, {AX_P_REDUCE_MAX, AX_F64}};
    for (size_t o = 0; o < sizeof ops / sizeof *ops; o++)
        for (size_t k = 0; k < sizeof runs / sizeof *runs; k++) {
            int64_t m = runs[k][0], n = runs[k][1];
            prog b = {.cx = cx, .b = ax_ir_builder_new()};
            ax_dtype dt = ops[o].t;
            ax_ir_atom x = arg(&b, dt, 2, SH(n, m)), y = arg(&b, dt, 2, SH(m, n));
            ax_ir_atom s = on_axes(&b, ops[o].prim, op2(&b, AX_P_ADD, tr(&b, x), y), 1, AX(1));
            ax_ir *ir = done(&b, 1, &s);
            char what[64];
            snprintf(what, sizeof what, "%s reduce(x.T + y, axis=1) [%lld,%lld]",
                     ax_dtype_short(dt), (long long)m, (long long)n);
            check_program(cx, ir, what, n < 16 ? 0 : 1, n < 16);
            ax_ir_release(ir);
        }
    prog b = {.cx = cx, .b = ax_ir_builder_new()};
    ax_ir_atom x = arg(&b, AX_F32, 3, SH(40, 30, 20)), y = arg(&b, AX_F32, 3, SH(20, 40, 30));
    ax_ir_atom xt = on_axes(&b, AX_P_TRANSPOSE, x, 3, AX(2, 0, 1)); /* [20, 40, 30] */
    ax_ir_atom s = on_axes(&b, AX_P_REDUCE_SUM, op2(&b, AX_P_MUL, xt, y), 1, AX(2));
    ax_ir *ir = done(&b, 1, &s);
    check_program(cx, ir, "sum(x.transpose(2, 0, 1) * y, axis=2)", 1, 0);
    ax_ir_release(ir);
}

/* Vector math on a tiled load: exp(x.T) + sin(y), f32 and f64 (f32 sin: libmvec on whole
 * blocks). */
static void test_math_on_tiles(void **state) {
    ax_ctx *cx = *state;
    for (int f64 = 0; f64 < 2; f64++) {
        ax_dtype dt = f64 ? AX_F64 : AX_F32;
        prog b = {.cx = cx, .b = ax_ir_builder_new()};
        ax_ir_atom x = arg(&b, dt, 2, SH(45, 70)), y = arg(&b, dt, 2, SH(70, 45));
        ax_ir_atom z = op2(&b, AX_P_ADD, op1(&b, AX_P_EXP, tr(&b, x)), op1(&b, AX_P_SIN, y));
        ax_ir *ir = done(&b, 1, &z);
        check_program(cx, ir, f64 ? "f64 exp(x.T) + sin(y)" : "f32 exp(x.T) + sin(y)", 1, 0);
        ax_ir_release(ir);
    }
}

/* Makes the context's pool (made again on first use) that many threads. */
static void use_threads(ax_ctx *cx, int threads) {
    cx->threads = threads;
    ax_pool_free(cx->pool);
    cx->pool = NULL;
}

/* Loops big enough to be split over threads: an elementwise one along the tile dim (ranges
 * of whole tiles), a ROWS reduction along its lanes, on one thread and on two. */
static void test_threads(void **state) {
    ax_ctx *cx = *state;
    for (int threads = 1; threads <= 2; threads++) {
        use_threads(cx, threads);
        prog b = {.cx = cx, .b = ax_ir_builder_new()};
        ax_ir_atom x = arg(&b, AX_F32, 2, SH(1000, 301)), y = arg(&b, AX_F32, 2, SH(301, 1000));
        ax_ir_atom z = op2(&b, AX_P_SUB, y, tr(&b, x));
        ax_ir_atom s = on_axes(&b, AX_P_REDUCE_SUM, op2(&b, AX_P_MUL, x, tr(&b, y)), 1, AX(0));
        ax_ir *ir = done(&b, 2, (ax_ir_atom[]){z, s});
        check_program(cx, ir, threads == 1 ? "big, one thread" : "big, two threads", 2, 0);
        ax_ir_release(ir);
    }
}

/* Loops in pieces (one operation each) gather their strided loads in every piece that reads
 * them; tiles are left to whole loops. */
static void test_pieces(void **state) {
    ax_ctx *cx = *state;
    setenv("AX_JIT_PIECE_WORK", "1", 1);
    prog b = {.cx = cx, .b = ax_ir_builder_new()};
    ax_ir_atom x = arg(&b, AX_F32, 2, SH(53, 37)), y = arg(&b, AX_F32, 2, SH(37, 53));
    ax_ir_atom xt = tr(&b, x);
    ax_ir_atom z = op2(&b, AX_P_MUL, op2(&b, AX_P_ADD, xt, y), op2(&b, AX_P_SUB, y, xt));
    z = op2(&b, AX_P_ADD, op2(&b, AX_P_MUL, z, xt), xt);
    ax_ir_atom s = on_axes(&b, AX_P_REDUCE_SUM, op2(&b, AX_P_MUL, xt, z), 1, AX(0));
    ax_ir *ir = done(&b, 2, (ax_ir_atom[]){z, s});
    check_program(cx, ir, "pieces", 0, 1);
    ax_ir_release(ir);
    unsetenv("AX_JIT_PIECE_WORK");
}

/* How many of the plan's LOOP steps stream their outputs (ax_jit_loop_streams). */
static int count_streamed(const ax_ir *ir) {
    ax_plan *p = ax_fuse(ir);
    assert_non_null(p);
    int n = 0;
    for (int s = 0; s < p->code.h.nsteps; s++)
        n += p->code.steps[s].kind == AX_STEP_LOOP && ax_jit_loop_streams(&p->code, s);
    ax_plan_free(p);
    return n;
}

static void check_streamed(ax_ctx *cx, ax_ir *ir, const char *what, int streamed) {
    int n = count_streamed(ir);
    if (n != streamed) fail_msg("%s: %d loops stream their outputs, not %d", what, n, streamed);
    check_program(cx, ir, what, -1, -1);
    ax_ir_release(ir);
}

/* Outputs of 32 MB or more: exp(x) * 2 + tanh(x) on 8.4M f32 (an extent that is no multiple
 * of the lanes), rows of 2901 f32 (a row's bytes no multiple of 64, so tiles start at every
 * offset) with a broadcast row and a bool output beside, a transposed operand (a tiled load,
 * ranges of 16 rows); not streamed: rows too long for a tile, a reduction, an output below
 * the size. */
static void test_streamed_outputs(void **state) {
    ax_ctx *cx = *state;
    for (int threads = 1; threads <= 2; threads++) {
        use_threads(cx, threads);
        prog b = {.cx = cx, .b = ax_ir_builder_new()};
        ax_ir_atom x = arg(&b, AX_F32, 1, SH(8400005));
        ax_ir_atom z = op2(&b, AX_P_MUL, op1(&b, AX_P_EXP, x), lit_as(&b, AX_F32, 2.0));
        z = op2(&b, AX_P_ADD, z, op1(&b, AX_P_TANH, x));
        check_streamed(cx, done(&b, 1, &z), "exp(x) * 2 + tanh(x), 8.4M", 1);

        b = (prog){.cx = cx, .b = ax_ir_builder_new()};
        x = arg(&b, AX_F32, 2, SH(2897, 2901));
        ax_params row = {.ndim = 2, .shape = {2897, 2901}, .naxes = 1, .axes = {1}};
        ax_ir_atom y = arg(&b, AX_F32, 1, SH(2901));
        y = jit_test_eqn(cx, b.b, AX_P_BROADCAST_IN_DIM, &row, 1, &y);
        ax_ir_atom outs[2] = {op2(&b, AX_P_MUL, x, y), op2(&b, AX_P_GT, x, y)};
        check_streamed(cx, done(&b, 2, outs), "x * row, x > row, rows of 2901", 1);

        b = (prog){.cx = cx, .b = ax_ir_builder_new()};
        x = arg(&b, AX_F64, 2, SH(21000, 200));
        y = arg(&b, AX_F64, 2, SH(200, 21000));
        z = op2(&b, AX_P_SUB, x, tr(&b, y));
        check_streamed(cx, done(&b, 1, &z), "x - y.T, 21000 x 200 f64", 1);
    }
    prog b = {.cx = cx, .b = ax_ir_builder_new()};
    ax_params column = {.ndim = 2, .shape = {2, 4200000}, .naxes = 1, .axes = {0}};
    ax_ir_atom x = arg(&b, AX_F32, 2, SH(2, 4200000)), y = arg(&b, AX_F32, 1, SH(2));
    y = jit_test_eqn(cx, b.b, AX_P_BROADCAST_IN_DIM, &column, 1, &y);
    ax_ir_atom z = op2(&b, AX_P_MUL, x, y);
    check_streamed(cx, done(&b, 1, &z), "rows of 4.2M", 0);

    b = (prog){.cx = cx, .b = ax_ir_builder_new()};
    x = arg(&b, AX_F32, 2, SH(2900, 2900));
    ax_ir_atom outs[2] = {op2(&b, AX_P_MUL, x, x),
                          on_axes(&b, AX_P_REDUCE_SUM, op2(&b, AX_P_MUL, x, x), 1, AX(1))};
    check_streamed(cx, done(&b, 2, outs), "x * x beside its row sums", 0);

    b = (prog){.cx = cx, .b = ax_ir_builder_new()};
    x = arg(&b, AX_F32, 1, SH(8000000));
    z = op2(&b, AX_P_MUL, x, x);
    check_streamed(cx, done(&b, 1, &z), "x * x, 32 MB less 2 MB", 0);
}

/* An argument runs only the tests whose names match it (cmocka's filter). */
int main(int argc, char **argv) {
    if (argc > 1) cmocka_set_test_filter(argv[1]);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_elementwise_transposed, jit_test_setup,
                                        jit_test_teardown),
        cmocka_unit_test_setup_teardown(test_permuted_3d, jit_test_setup, jit_test_teardown),
        cmocka_unit_test_setup_teardown(test_rows_reduction_with_transposed_operand, jit_test_setup,
                                        jit_test_teardown),
        cmocka_unit_test_setup_teardown(test_bools_are_widened, jit_test_setup, jit_test_teardown),
        cmocka_unit_test_setup_teardown(test_rows_reduction_over_two_axes, jit_test_setup,
                                        jit_test_teardown),
        cmocka_unit_test_setup_teardown(test_runs_of_a_transposed_operand, jit_test_setup,
                                        jit_test_teardown),
        cmocka_unit_test_setup_teardown(test_math_on_tiles, jit_test_setup, jit_test_teardown),
        cmocka_unit_test_setup_teardown(test_threads, jit_test_setup, jit_test_teardown),
        cmocka_unit_test_setup_teardown(test_pieces, jit_test_setup, jit_test_teardown),
        cmocka_unit_test_setup_teardown(test_streamed_outputs, jit_test_setup, jit_test_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

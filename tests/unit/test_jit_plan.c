/* Fusion (ax_fuse) and the jit cache key (ax_code_key): what becomes a loop or an eager step, which
 * buffers and strides a loop reads, how its dims merge; and that the key tells apart any two codes
 * (every byte of the lowered plan counts) while ignoring what the generated code does not depend on
 * (variable numbering, unused inputs). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "../../runtime/reduce.h"
#include "jit_test_util.h"

/* ---------------------------------------------------------------- building IRs */

typedef struct irb {
    ax_ctx *cx;
    ax_ir_builder *b;
    int nlits;
    ax_array *lits[1024]; /* released when the IR (which holds its own references) is made */
} irb;

static ax_ir_atom in(irb *b, ax_dtype t, int ndim, const int64_t *shape) {
    ax_aval a = {.dtype = t, .ndim = ndim};
    memcpy(a.shape, shape, (size_t)ndim * sizeof *shape);
    return (ax_ir_atom){.var = ax_ir_add_input(b->b, &a)};
}

static ax_ir_atom eqn(irb *b, ax_prim prim, const ax_params *p, int nin, const ax_ir_atom *ins) {
    return jit_test_eqn(b->cx, b->b, prim, p, nin, ins);
}

static ax_ir_atom un(irb *b, ax_prim prim, ax_ir_atom x) {
    return eqn(b, prim, &(ax_params){0}, 1, &x);
}

static ax_ir_atom bi(irb *b, ax_prim prim, ax_ir_atom x, ax_ir_atom y) {
    return eqn(b, prim, &(ax_params){0}, 2, (ax_ir_atom[]){x, y});
}

static ax_ir_atom lit(irb *b, double v) {
    ax_array *a = ax_array_scalar(b->cx, AX_F32, v);
    assert_non_null(a);
    assert_true(b->nlits < 1024);
    b->lits[b->nlits++] = a;
    return (ax_ir_atom){.var = -1, .lit = a};
}

static ax_ir_atom transpose2(irb *b, ax_ir_atom x) {
    return eqn(b, AX_P_TRANSPOSE, &(ax_params){.naxes = 2, .axes = {1, 0}}, 1, &x);
}

static ax_ir_atom reduce(irb *b, ax_prim prim, ax_ir_atom x, int naxes, const int *axes) {
    ax_params p = {.naxes = naxes};
    memcpy(p.axes, axes, (size_t)naxes * sizeof *axes);
    return eqn(b, prim, &p, 1, &x);
}

static ax_ir *finish(irb *b, int nout, const ax_ir_atom *outs) {
    ax_ir *ir = ax_ir_builder_finish(b->b, nout, outs);
    for (int i = 0; i < b->nlits; i++) ax_array_release(b->lits[i]);
    b->nlits = 0;
    assert_non_null(ir);
    assert_int_equal(ax_ir_verify(b->cx, ir), 0);
    return ir;
}

#define SH(...) ((const int64_t[]){__VA_ARGS__})
#define AX(...) ((const int[]){__VA_ARGS__})

/* z = x + y^T (or x + x^T), then z = z * 1.001 + 0.5, `steps` times: the loop of the issue's
 * cache collision (over 256 nodes). */
static ax_ir *chain_ir(ax_ctx *cx, bool same, int steps) {
    irb b = {.cx = cx, .b = ax_ir_builder_new()};
    ax_ir_atom x = in(&b, AX_F32, 2, SH(4, 4)), y = in(&b, AX_F32, 2, SH(4, 4));
    ax_ir_atom z = bi(&b, AX_P_ADD, x, transpose2(&b, same ? x : y));
    for (int i = 0; i < steps; i++)
        z = bi(&b, AX_P_ADD, bi(&b, AX_P_MUL, z, lit(&b, 1.001)), lit(&b, 0.5));
    return finish(&b, 1, &z);
}

/* ---------------------------------------------------------------- the key */

static uint64_t key_of(ax_ir *ir) {
    ax_plan *p = ax_fuse(ir);
    assert_non_null(p);
    uint64_t k = ax_code_key(&p->code);
    ax_plan_free(p);
    return k;
}

/* The collision: the same loop but for which buffer the transposed load reads. */
static void test_key_tells_buffers_apart(void **state) {
    ax_ctx *cx = *state;
    ax_ir *a = chain_ir(cx, false, 200), *b = chain_ir(cx, true, 200);
    ax_plan *pa = ax_fuse(a), *pb = ax_fuse(b);
    assert_true(pa && pb);
    assert_int_equal(pa->nsteps, 1);
    assert_int_equal(pb->nsteps, 1);
    assert_true(pa->steps[0].k->nnodes > 256);
    assert_int_equal(pa->code.steps[0].nbufs, 3); /* x, y, z */
    assert_int_equal(pb->code.steps[0].nbufs, 2); /* x, z */
    /* the two loads: slots 0 and 1, or slot 0 twice (with other strides) */
    const ax_code_node *na = pa->code.nodes, *nb = pb->code.nodes;
    assert_int_equal(na[0].kind, AX_KN_LOAD);
    assert_int_equal(na[1].kind, AX_KN_LOAD);
    assert_int_equal(na[0].buf, 0);
    assert_int_equal(na[1].buf, 1);
    assert_int_equal(nb[0].buf, 0);
    assert_int_equal(nb[1].buf, 0);
    assert_true(ax_code_key(&pa->code) != ax_code_key(&pb->code));
    ax_plan_free(pa);
    ax_plan_free(pb);
    ax_ir_release(a);
    ax_ir_release(b);
}

/* A key depends on the code only: the same program fused twice, or with an unused input
 * first (other variable numbers, the same loop), has the same key; one literal changed, or
 * one step more, changes it. */
static void test_key_is_a_function_of_the_code(void **state) {
    ax_ctx *cx = *state;
    ax_ir *irs[4];
    for (int k = 0; k < 4; k++) {
        irb b = {.cx = cx, .b = ax_ir_builder_new()};
        if (k == 1) in(&b, AX_I32, 1, SH(9)); /* unused */
        ax_ir_atom x = in(&b, AX_F32, 2, SH(5, 37));
        ax_ir_atom y = bi(&b, AX_P_MUL, un(&b, AX_P_EXP, x), lit(&b, k == 2 ? 3.0 : 2.0));
        if (k == 3) y = un(&b, AX_P_SIN, y);
        y = reduce(&b, AX_P_REDUCE_SUM, y, 1, AX(1));
        irs[k] = finish(&b, 1, &y);
    }
    uint64_t k0 = key_of(irs[0]);
    assert_true(key_of(irs[0]) == k0);
    assert_true(key_of(irs[1]) == k0);
    assert_true(key_of(irs[2]) != k0);
    assert_true(key_of(irs[3]) != k0);
    for (int k = 0; k < 4; k++) ax_ir_release(irs[k]);
}

/* Every byte of the code counts: changing any one byte of the header, of any step, node or
 * buffer record changes the key (so a field added to them is covered without more code). */
static void test_key_covers_every_byte(void **state) {
    ax_ctx *cx = *state;
    irb b = {.cx = cx, .b = ax_ir_builder_new()};
    ax_ir_atom x = in(&b, AX_F32, 2, SH(6, 37)), w = in(&b, AX_F32, 2, SH(37, 5));
    ax_ir_atom h = un(&b, AX_P_TANH, bi(&b, AX_P_ADD, x, lit(&b, 1.0)));
    ax_params dot = {.dot = {.ncontract = 1, .lhs_contract = {1}, .rhs_contract = {0}}};
    ax_ir_atom y = eqn(&b, AX_P_DOT_GENERAL, &dot, 2, (ax_ir_atom[]){h, w});
    ax_ir_atom s = reduce(&b, AX_P_REDUCE_MAX, y, 1, AX(1));
    ax_ir *ir = finish(&b, 2, (ax_ir_atom[]){s, h});
    ax_plan *p = ax_fuse(ir);
    assert_non_null(p);
    ax_code *c = &p->code;
    uint64_t k0 = ax_code_key(c);
    struct {
        void *data;
        size_t size;
    } parts[] = {{&c->h, sizeof c->h},
                 {c->steps, (size_t)c->h.nsteps * sizeof *c->steps},
                 {c->nodes, (size_t)c->h.nnodes * sizeof *c->nodes},
                 {c->bufs, (size_t)c->h.nbufs * sizeof *c->bufs}};
    size_t bytes = 0;
    for (size_t part = 0; part < 4; part++) {
        unsigned char *d = parts[part].data;
        size_t n = parts[part].size;
        if (part == 0) n = offsetof(ax_code_header, nsteps); /* the counts size the rest */
        for (size_t i = 0; i < n; i++, bytes++) {
            d[i] ^= 0x5a;
            if (ax_code_key(c) == k0) fail_msg("byte %zu of part %zu is not in the key", i, part);
            d[i] ^= 0x5a;
        }
    }
    assert_true(ax_code_key(c) == k0);
    assert_true(bytes > 1000);
    ax_plan_free(p);
    ax_ir_release(ir);
}

/* ---------------------------------------------------------------- fusion */

static const char *plan_text(const ax_plan *p, char *buf, size_t n) {
    ax_strbuf s;
    ax_strbuf_init(&s);
    ax_plan_format(&s, p);
    snprintf(buf, n, "%s", s.data ? s.data : "");
    ax_strbuf_free(&s);
    return buf;
}

/* Elementwise chains over one shape, with broadcasts and transposes of buffers read through
 * strides, are one loop; a reduction ends it, so sum(exp(x - m), axis=1) is one pass. */
static void test_fuse_softmax_denominator(void **state) {
    ax_ctx *cx = *state;
    irb b = {.cx = cx, .b = ax_ir_builder_new()};
    ax_ir_atom x = in(&b, AX_F32, 2, SH(8, 100));
    ax_ir_atom m = reduce(&b, AX_P_REDUCE_MAX, x, 1, AX(1));
    ax_params bc = {.ndim = 2, .shape = {8, 100}, .naxes = 1, .axes = {0}};
    ax_ir_atom mb = eqn(&b, AX_P_BROADCAST_IN_DIM, &bc, 1, &m);
    ax_ir_atom s = reduce(&b, AX_P_REDUCE_SUM, un(&b, AX_P_EXP, bi(&b, AX_P_SUB, x, mb)), 1, AX(1));
    ax_ir *ir = finish(&b, 1, &s);
    ax_plan *p = ax_fuse(ir);
    char text[512];
    assert_string_equal(plan_text(p, text, sizeof text),
                        "loop[8,+100]: reduce_max\nloop[8,+100]: sub exp reduce_sum\n");
    /* the second loop reads x with strides (100, 1) and m broadcast along the rows (1, 0) */
    const ax_code_step *st = &p->code.steps[1];
    const ax_code_node *n = p->code.nodes + st->first_node;
    assert_int_equal(st->nbufs, 3); /* x, m, the sum */
    assert_int_equal(n[0].kind, AX_KN_LOAD);
    assert_int_equal(n[1].kind, AX_KN_LOAD);
    assert_int_equal(n[1].stride[0], 1);
    assert_int_equal(n[1].stride[1], 0);
    assert_true(n[st->nnodes - 1].kind == AX_KN_REDUCE && n[st->nnodes - 1].store);
    ax_plan_free(p);
    ax_ir_release(ir);
}

/* Dims merge when every access walks them contiguously; not into a reduced last dim unless
 * its runs are whole chunks (runtime/reduce.h), and not where a transposed load reads them. */
static void test_fuse_merges_dims(void **state) {
    ax_ctx *cx = *state;
    static const struct {
        int64_t shape[2];
        int naxes, axes[2];
        bool transposed;
        int ndim;
    } cases[] = {
        {{4, 33}, 0, {0}, false, 1},                 /* elementwise: [132] */
        {{4, 33}, 2, {0, 1}, false, 2},              /* a sum of everything: kept apart */
        {{2, AX_REDUCE_CHUNK}, 2, {0, 1}, false, 1}, /* whole chunks: merged */
        {{4, 33}, 1, {1}, false, 2},
        {{33, 4}, 0, {0}, true, 2}, /* a transpose read: no merge */
    };
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        irb b = {.cx = cx, .b = ax_ir_builder_new()};
        ax_ir_atom x = in(&b, AX_F32, 2, cases[k].shape);
        if (cases[k].transposed) x = transpose2(&b, x);
        ax_ir_atom y = bi(&b, AX_P_MUL, x, lit(&b, 3.0));
        if (cases[k].naxes) y = reduce(&b, AX_P_REDUCE_SUM, y, cases[k].naxes, cases[k].axes);
        ax_ir *ir = finish(&b, 1, &y);
        ax_plan *p = ax_fuse(ir);
        assert_int_equal(p->nsteps, 1);
        if (p->code.steps[0].ndim != cases[k].ndim)
            fail_msg("case %zu: %d dims, wanted %d", k, p->code.steps[0].ndim, cases[k].ndim);
        ax_plan_free(p);
        ax_ir_release(ir);
    }
}

/* Matrix products and sorts run eagerly between loops, which store what they read; a
 * transpose of a product stays a view that the next loop reads through strides, or an eager
 * transpose (a view too) for an eager step: OpenBLAS is called with exactly the layouts it
 * gets eagerly. */
static void test_fuse_eager_steps(void **state) {
    ax_ctx *cx = *state;
    irb b = {.cx = cx, .b = ax_ir_builder_new()};
    ax_ir_atom x = in(&b, AX_F32, 2, SH(6, 5)), w = in(&b, AX_F32, 2, SH(5, 7));
    ax_params dot = {.dot = {.ncontract = 1, .lhs_contract = {1}, .rhs_contract = {0}}};
    ax_ir_atom h = un(&b, AX_P_TANH, x);
    ax_ir_atom yt = transpose2(&b, eqn(&b, AX_P_DOT_GENERAL, &dot, 2, (ax_ir_atom[]){h, w}));
    ax_ir_atom s = eqn(&b, AX_P_SORT, &(ax_params){.naxes = 1, .axes = {1}}, 1, &yt);
    ax_ir_atom out = bi(&b, AX_P_ADD, un(&b, AX_P_EXP, s), yt);
    ax_ir *ir = finish(&b, 1, &out);
    ax_plan *p = ax_fuse(ir);
    char text[512];
    assert_string_equal(plan_text(p, text, sizeof text), "loop[30]: tanh\neager dot_general\n"
                                                         "eager transpose\neager sort\n"
                                                         "loop[42]: exp add\n");
    assert_true(p->code.nodes[p->code.steps[0].first_node + 1].store); /* tanh: read eagerly */
    ax_plan_free(p);
    ax_ir_release(ir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_key_tells_buffers_apart, jit_test_setup,
                                        jit_test_teardown),
        cmocka_unit_test_setup_teardown(test_key_is_a_function_of_the_code, jit_test_setup,
                                        jit_test_teardown),
        cmocka_unit_test_setup_teardown(test_key_covers_every_byte, jit_test_setup,
                                        jit_test_teardown),
        cmocka_unit_test_setup_teardown(test_fuse_softmax_denominator, jit_test_setup,
                                        jit_test_teardown),
        cmocka_unit_test_setup_teardown(test_fuse_merges_dims, jit_test_setup, jit_test_teardown),
        cmocka_unit_test_setup_teardown(test_fuse_eager_steps, jit_test_setup, jit_test_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

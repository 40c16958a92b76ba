/* A random-program fuzzer of jit against the eager kernels: random compositions of
 * primitives (elementwise math, comparisons and selects, reductions over random axes,
 * broadcasts, transposes, reshapes, conversions, iota, matrix products and eager-only steps
 * between loops) on shapes with tails, short rows, broadcasts, rank 0 and empty axes, and
 * arguments passed as views. Each program runs through ax_ir_eval (the reference) and native
 * code (after the simplify pass, as jit() runs it), and every output must have the same bits
 * (jit_test_util.h). Programs are built in
 * batches sharing one compile; every other batch has its loops split into pieces of two
 * operations.
 *
 *   test_jit_fuzz [--seed S] [--count N] [-v] [--print]
 *
 * make test runs the fixed seed 1 with 48 programs (a few seconds); --count 5000 runs longer.
 * test_random_programs_quick runs programs of the quick tier's dtypes on its code alone
 * (AX_JIT_QUICK=only), one per IR, from seed S + 7000 (rerun one with --seed, less 7000);
 * those whose seed is a multiple of 3 hold float64, int64 and bool values only.
 * A failure names the program's seed and prints its IR; `--seed S --count 1` runs it alone,
 * --print prints every program. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "../../compiler/simplify.h"
#include "../../compiler/quickgen.h"
#include "jit_test_util.h"

enum { MAX_VALUES = 96, MAX_PROG_IN = 6, BATCH = 12 };

/* A value of the program being built: a variable (or a literal) and its type. */
typedef struct value {
    ax_ir_atom a;
    ax_aval t;
    bool used; /* an operand of a later equation */
} value;

typedef struct gen {
    ax_ctx *cx;
    rng r;
    ax_ir_builder *b;
    int nv;
    value v[MAX_VALUES];
    int nin;         /* the program's inputs */
    ax_array **lits; /* literals made (the IR holds its own references to those it uses) */
    int nlits, caplits;
    bool quick;   /* only the dtypes the quick tier renders (compiler/quickgen.h) */
    bool quick64; /* and of those, float64, int64 and bool (a third of the quick tier's programs) */
} gen;

static uint64_t pick(gen *g, uint64_t n) {
    return rnd(&g->r) % n;
}

#define PICK(a) (a)[pick(g, sizeof(a) / sizeof *(a))]

static const ax_dtype dtypes[] = {AX_F32, AX_F32, AX_F32,  AX_F32, AX_F64, AX_F64,
                                  AX_I32, AX_U8,  AX_BOOL, AX_I64, AX_U32};
static const ax_dtype quick_dtypes[] = {AX_F32, AX_F32, AX_F32, AX_F32, AX_I32, AX_BOOL, AX_U32};
/* The quick tier's 64-bit loops hold f64, int64 and bool values (32-bit numbers only converted) */
static const ax_dtype quick64_dtypes[] = {AX_F64, AX_F64, AX_F64, AX_BOOL, AX_I64};

static ax_dtype some_dtype(gen *g) {
    if (g->quick64) return PICK(quick64_dtypes);
    return g->quick ? PICK(quick_dtypes) : PICK(dtypes);
}

/* Shapes that exercise the loops: full blocks and tails, short rows, size-1 and empty dims,
 * rank 0, long rows (several chunks of a reduction), and more than 64K elements (split
 * over threads). */
static const struct {
    int ndim;
    int64_t shape[3];
} shapes[] = {
    {0, {0}},        {1, {1}},        {1, {7}},       {1, {16}},      {1, {37}},
    {1, {0}},        {2, {3, 5}},     {2, {4, 33}},   {2, {40, 10}},  {2, {1, 37}},
    {2, {37, 1}},    {3, {2, 3, 17}}, {3, {5, 0, 3}}, {2, {2, 9000}}, {2, {300, 301}},
    {3, {4, 1, 20}}, {2, {17, 16}},   {1, {4099}},
};
enum { NSHAPES = sizeof shapes / sizeof *shapes };

static int add_value(gen *g, ax_ir_atom a, const ax_aval *t) {
    if (g->nv == MAX_VALUES) return -1;
    g->v[g->nv] = (value){.a = a, .t = *t};
    return g->nv++;
}

/* Adds one equation when its shape rule accepts the operands; the new value, or -1. */
static int emit(gen *g, ax_prim prim, const ax_params *p, int nin, const ax_ir_atom *in) {
    ax_aval types[4], out[2];
    for (int i = 0; i < nin; i++) ax_ir_atom_type(g->b, &in[i], &types[i]);
    if (ax_prim_infer(g->cx, prim, nin, types, p, out)) {
        ax_error_clear(g->cx);
        return -1;
    }
    int nout = ax_prim_get(prim)->nout, vars[2];
    if (ax_ir_add_eqn(g->b, prim, p, nin, in, nout, out, vars, 0, NULL)) {
        ax_error_clear(g->cx);
        return -1;
    }
    for (int i = 0; i < nin; i++)
        for (int k = 0; k < g->nv; k++)
            if (in[i].var >= 0 && g->v[k].a.var == in[i].var) g->v[k].used = true;
    return add_value(g, (ax_ir_atom){.var = vars[0]}, &out[0]);
}

/* A literal: half the time one of the identities the simplify pass looks for (0, -0, 1),
 * specials too. */
static ax_ir_atom literal(gen *g, ax_dtype t) {
    static const double identities[] = {0.0, -0.0, 1.0};
    static const double floats[] = {-1.0, 0.5, 2.0, 3.0, -2.5, INFINITY, NAN};
    static const double ints[] = {0, 1, -1, 2, 3, 7, -5, 100};
    double v = t == AX_BOOL   ? (double)pick(g, 2)
               : !is_float(t) ? PICK(ints)
               : pick(g, 2)   ? PICK(identities)
                              : PICK(floats);
    ax_array *lit = ax_array_scalar(g->cx, t, v);
    assert_non_null(lit);
    if (g->nlits == g->caplits) {
        g->caplits = g->caplits ? 2 * g->caplits : 64;
        g->lits = realloc(g->lits, (size_t)g->caplits * sizeof *g->lits);
        assert_non_null(g->lits);
    }
    g->lits[g->nlits++] = lit;
    return (ax_ir_atom){.var = -1, .lit = lit};
}

static int new_input(gen *g) {
    if (g->nin == MAX_PROG_IN) return -1;
    int s = (int)pick(g, NSHAPES);
    ax_aval t = {.dtype = some_dtype(g), .ndim = shapes[s].ndim};
    memcpy(t.shape, shapes[s].shape, sizeof shapes[s].shape);
    g->nin++;
    return add_value(g, (ax_ir_atom){.var = ax_ir_add_input(g->b, &t)}, &t);
}

/* A value of dtype class `want` (0: any, 1: float, 2: integer, 3: bool), or -1. */
static int some_value(gen *g, int want) {
    for (int tries = 0; tries < 8; tries++) {
        int i = (int)pick(g, (uint64_t)g->nv);
        ax_dtype t = g->v[i].t.dtype;
        bool ok = want == 0 || (want == 1 && is_float(t)) ||
                  (want == 2 && !is_float(t) && t != AX_BOOL) || (want == 3 && t == AX_BOOL);
        if (ok) return i;
    }
    return -1;
}

/* A second operand for value i: a value of the same type, a rank-0 one of its dtype, or a
 * literal. */
static ax_ir_atom partner(gen *g, int i) {
    const ax_aval *t = &g->v[i].t;
    if (pick(g, 3) == 0) return literal(g, t->dtype);
    int start = (int)pick(g, (uint64_t)g->nv);
    for (int k = 0; k < g->nv; k++) {
        const value *w = &g->v[(start + k) % g->nv];
        bool same = w->t.dtype == t->dtype &&
                    (w->t.ndim == 0 || ax_shape_equal(w->t.ndim, w->t.shape, t->ndim, t->shape));
        if (same && pick(g, 3)) return w->a;
    }
    return literal(g, t->dtype);
}

static const ax_prim float_unary[] = {
    AX_P_NEG,       AX_P_ABS,   AX_P_SIGN,  AX_P_EXP,         AX_P_LOG,      AX_P_LOG1P,
    AX_P_EXPM1,     AX_P_SIN,   AX_P_COS,   AX_P_TANH,        AX_P_LOGISTIC, AX_P_SQRT,
    AX_P_RSQRT,     AX_P_FLOOR, AX_P_ROUND, AX_P_SQUARE,      AX_P_ERF,      AX_P_ATAN,
    AX_P_IS_FINITE, AX_P_CBRT,  AX_P_EXP2,  AX_P_INTEGER_POW,
};
static const ax_prim int_unary[] = {AX_P_NEG, AX_P_ABS, AX_P_SIGN, AX_P_NOT, AX_P_SQUARE};
static const ax_prim binary[] = {AX_P_ADD, AX_P_ADD, AX_P_SUB, AX_P_SUB, AX_P_MUL,      AX_P_MUL,
                                 AX_P_DIV, AX_P_MAX, AX_P_MIN, AX_P_POW, AX_P_EQ,       AX_P_LT,
                                 AX_P_GE,  AX_P_AND, AX_P_XOR, AX_P_SHL, AX_P_SHR_ARITH};
static const ax_prim reductions[] = {AX_P_REDUCE_SUM, AX_P_REDUCE_SUM, AX_P_REDUCE_PROD,
                                     AX_P_REDUCE_MAX, AX_P_REDUCE_MIN};

static int step_unary(gen *g) {
    int i = some_value(g, 0);
    if (i < 0) return -1;
    bool f = is_float(g->v[i].t.dtype);
    ax_params p = {.k = (int64_t)pick(g, 7) - 2};
    return emit(g, f ? PICK(float_unary) : PICK(int_unary), &p, 1, &g->v[i].a);
}

static int step_binary(gen *g) {
    int i = some_value(g, 0);
    if (i < 0) return -1;
    ax_ir_atom in[2] = {g->v[i].a, partner(g, i)};
    if (pick(g, 4) == 0) { /* the operands the other way round */
        ax_ir_atom t = in[0];
        in[0] = in[1], in[1] = t;
    }
    return emit(g, PICK(binary), &(ax_params){0}, 2, in);
}

/* A reduction over a random non-empty set of axes. */
static int step_reduce(gen *g) {
    int i = some_value(g, 0);
    if (i < 0 || g->v[i].t.ndim == 0) return -1;
    const ax_aval *t = &g->v[i].t;
    ax_prim prim =
        t->dtype == AX_BOOL ? (pick(g, 2) ? AX_P_REDUCE_AND : AX_P_REDUCE_OR) : PICK(reductions);
    ax_params p = {0};
    for (int d = 0; d < t->ndim; d++)
        if (pick(g, 2)) p.axes[p.naxes++] = d;
    if (!p.naxes) p.axes[p.naxes++] = (int)pick(g, (uint64_t)t->ndim);
    bool extreme = prim == AX_P_REDUCE_MAX || prim == AX_P_REDUCE_MIN;
    for (int k = 0; k < p.naxes && extreme; k++)
        if (t->shape[p.axes[k]] == 0) return -1; /* no identity: an error both ways */
    return emit(g, prim, &p, 1, &g->v[i].a);
}

/* A broadcast to a shape with a new dimension somewhere (or the size-1 dims expanded). */
static int step_broadcast(gen *g) {
    int i = some_value(g, 0);
    if (i < 0 || g->v[i].t.ndim >= 3) return -1;
    const ax_aval *t = &g->v[i].t;
    int at = (int)pick(g, (uint64_t)t->ndim + 1);
    ax_params p = {.ndim = t->ndim + 1, .naxes = t->ndim};
    for (int d = 0, o = 0; o < p.ndim; o++) {
        if (o == at) {
            p.shape[o] = (const int64_t[]){2, 5, 16, 17}[pick(g, 4)];
            continue;
        }
        p.axes[d] = o;
        p.shape[o] = t->shape[d] == 1 ? (const int64_t[]){1, 3}[pick(g, 2)] : t->shape[d];
        d++;
    }
    return emit(g, AX_P_BROADCAST_IN_DIM, &p, 1, &g->v[i].a);
}

static int step_transpose(gen *g) {
    int i = some_value(g, 0);
    if (i < 0 || g->v[i].t.ndim < 2) return -1;
    int n = g->v[i].t.ndim;
    ax_params p = {.naxes = n};
    for (int d = 0; d < n; d++) p.axes[d] = d;
    for (int d = n - 1; d > 0; d--) { /* Fisher-Yates */
        int k = (int)pick(g, (uint64_t)d + 1), tmp = p.axes[d];
        p.axes[d] = p.axes[k], p.axes[k] = tmp;
    }
    return emit(g, AX_P_TRANSPOSE, &p, 1, &g->v[i].a);
}

/* A reshape: flattened, or the first dimension split in two. */
static int step_reshape(gen *g) {
    int i = some_value(g, 0);
    if (i < 0 || g->v[i].t.ndim == 0) return -1;
    const ax_aval *t = &g->v[i].t;
    ax_params p = {0};
    int64_t n = ax_shape_size(t->ndim, t->shape);
    if (pick(g, 2) || t->shape[0] % 2 || t->ndim >= 3) {
        p.ndim = 1, p.shape[0] = n;
    } else {
        p.ndim = t->ndim + 1, p.shape[0] = 2, p.shape[1] = t->shape[0] / 2;
        for (int d = 1; d < t->ndim; d++) p.shape[d + 1] = t->shape[d];
    }
    return emit(g, AX_P_RESHAPE, &p, 1, &g->v[i].a);
}

static int step_convert(gen *g) {
    int i = some_value(g, 0);
    if (i < 0) return -1;
    ax_params p = {.dtype = some_dtype(g)};
    return emit(g, AX_P_CONVERT, &p, 1, &g->v[i].a);
}

/* where(x > literal, x, y) */
static int step_select(gen *g) {
    int i = some_value(g, 0);
    if (i < 0) return -1;
    ax_ir_atom in[2] = {g->v[i].a, literal(g, g->v[i].t.dtype)};
    int pred = emit(g, pick(g, 2) ? AX_P_GT : AX_P_NE, &(ax_params){0}, 2, in);
    if (pred < 0) return -1;
    if (g->v[pred].t.ndim != g->v[i].t.ndim) return pred; /* a literal predicate: rank 0 */
    ax_ir_atom sel[3] = {g->v[pred].a, g->v[i].a, partner(g, i)};
    return emit(g, AX_P_SELECT, &(ax_params){0}, 3, sel);
}

static int step_clamp(gen *g) {
    int i = some_value(g, 0);
    if (i < 0 || g->v[i].t.dtype == AX_BOOL) return -1;
    ax_dtype t = g->v[i].t.dtype;
    ax_ir_atom in[3] = {literal(g, t), g->v[i].a, literal(g, t)};
    return emit(g, AX_P_CLAMP, &(ax_params){0}, 3, in);
}

static int step_iota(gen *g) {
    int s = (int)pick(g, NSHAPES);
    if (shapes[s].ndim == 0) return -1;
    ax_params p = {.dtype = pick(g, 2) ? AX_I32 : AX_F32, .ndim = shapes[s].ndim, .naxes = 1};
    memcpy(p.shape, shapes[s].shape, sizeof shapes[s].shape);
    p.axes[0] = (int)pick(g, (uint64_t)p.ndim);
    return emit(g, AX_P_IOTA, &p, 0, NULL);
}

/* x @ w for a 2-d float x and a new input w (OpenBLAS), or an eager-only step (cumsum,
 * sort) between loops. */
static int step_other(gen *g) {
    int i = some_value(g, 1);
    if (i < 0 || g->v[i].t.ndim != 2 || g->nin == MAX_PROG_IN) return -1;
    const ax_aval *t = &g->v[i].t;
    ax_params p = {.naxes = 1, .axes = {(int)pick(g, 2)}};
    switch (pick(g, 3)) {
    case 0: {
        ax_aval w = {
            .dtype = t->dtype, .ndim = 2, .shape = {t->shape[1], 1 + (int64_t)pick(g, 20)}};
        g->nin++;
        ax_ir_atom in[2] = {g->v[i].a, {.var = ax_ir_add_input(g->b, &w)}};
        ax_params d = {.dot = {.ncontract = 1, .lhs_contract = {1}, .rhs_contract = {0}}};
        return emit(g, AX_P_DOT_GENERAL, &d, 2, in);
    }
    case 1:
        return emit(g, AX_P_CUMSUM, &p, 1, &g->v[i].a);
    default:
        return emit(g, AX_P_SORT, &p, 1, &g->v[i].a);
    }
}

typedef int (*step_fn)(gen *g);
static const step_fn steps[] = {step_unary,     step_unary,   step_binary,  step_binary,
                                step_binary,    step_reduce,  step_reduce,  step_broadcast,
                                step_transpose, step_reshape, step_convert, step_select,
                                step_clamp,     step_iota,    step_other};

/* Program `seed` added to g's builder: its inputs, equations and up to 8 outputs. */
static int generate(gen *g, uint64_t seed, ax_ir_atom *outs) {
    g->r = (rng){.s = seed * 0x9E3779B97F4A7C15ull + 1};
    g->quick64 = g->quick && seed % 3 == 0;
    g->nv = 0;
    g->nin = 0;
    int nin = 1 + (int)pick(g, 3);
    for (int i = 0; i < nin; i++) new_input(g);
    int nsteps = 4 + (int)pick(g, 20);
    for (int s = 0; s < nsteps; s++) PICK(steps)(g);
    int nout = 0; /* what nothing else reads (so every result is seen), up to 8 */
    for (int k = g->nv - 1; k >= 0 && nout < 8; k--)
        if (!g->v[k].used) outs[nout++] = g->v[k].a;
    return nout;
}

typedef struct fuzz_options {
    uint64_t seed;
    int count;
    bool verbose, print, quick;
} fuzz_options;

static fuzz_options options = {.seed = 1, .count = 48};

/* Prints program `seed` alone, for a failure's report. */
static void print_program(ax_ctx *cx, uint64_t seed) {
    gen *g = calloc(1, sizeof *g);
    assert_non_null(g);
    g->cx = cx;
    g->quick = options.quick;
    g->b = ax_ir_builder_new();
    ax_ir_atom outs[8];
    int nout = generate(g, seed, outs);
    ax_ir *ir = ax_ir_builder_finish(g->b, nout, outs);
    ax_strbuf text;
    ax_strbuf_init(&text);
    ax_ir_format(&text, ir);
    print_message("program %llu:\n%s\n", (unsigned long long)seed, text.data);
    ax_strbuf_free(&text);
    ax_ir_release(ir);
    for (int i = 0; i < g->nlits; i++) ax_array_release(g->lits[i]);
    free(g->lits);
    free(g);
}

/* Programs [first, first + n) in one IR: eager and native outputs compared; returns how
 * many elements differ. *rendered counts the batches the quick tier ran. */
static int run_batch(ax_ctx *cx, uint64_t first, int n, bool pieces, int *loops, int *rendered) {
    gen *g = calloc(1, sizeof *g);
    assert_non_null(g);
    g->cx = cx;
    g->quick = options.quick;
    g->b = ax_ir_builder_new();
    ax_ir_atom outs[BATCH * 8];
    int nout = 0, prog_of_out[BATCH * 8];
    for (int k = 0; k < n; k++) {
        if (options.print) print_program(cx, first + (uint64_t)k);
        int m = generate(g, first + (uint64_t)k, outs + nout);
        for (int o = 0; o < m; o++) prog_of_out[nout + o] = k;
        nout += m;
    }
    ax_ir *ir = ax_ir_builder_finish(g->b, nout, outs);
    assert_non_null(ir);
    if (ax_ir_verify(cx, ir)) fail_msg("the IR does not verify: %s", cx->err.message);
    /* the arguments, some passed as views (2-d ones: transposed, reversed, strided, broadcast) */
    ax_array **args = calloc((size_t)ir->nin + 1, sizeof *args);
    assert_non_null(args);
    rng vals = {.s = first};
    for (int i = 0; i < ir->nin; i++) {
        const ax_aval *t = &ir->types[ir->invars[i]];
        bool view = t->ndim == 2 && t->shape[0] > 1 && t->shape[1] > 1 && rnd(&vals) % 3 == 0;
        args[i] = view ? make_view_arg(cx, &vals, t, D_ANY, (view_kind)(1 + rnd(&vals) % 4))
                       : make_input(cx, &vals, t, D_ANY, 0);
        if (!view && is_float(t->dtype)) /* zeros of both signs, which identities must keep */
            for (int64_t e = 0; e < args[i]->size; e++)
                if (rnd(&vals) % 8 == 0) set_elem(args[i], e, rnd(&vals) % 2 ? 0.0 : -0.0, 0);
    }
    ax_array **want = calloc((size_t)nout + 1, sizeof *want);
    ax_array **got = calloc((size_t)nout + 1, sizeof *got);
    assert_true(want && got);
    int bad = 0;
    if (ax_ir_eval(cx, ir, args, want)) {
        /* an error of the program itself (e.g. a sort of bools): jit must fail alike */
        char eager[sizeof cx->err.message];
        snprintf(eager, sizeof eager, "%s", cx->err.message);
        ax_error_clear(cx);
        ax_jit_program *p = ax_jit_build(cx, ir);
        assert_non_null(p);
        if (!ax_jit_run(cx, p, args, got)) fail_msg("eager failed (%s), jit did not", eager);
        ax_error_clear(cx);
        ax_jit_free(p);
        nout = 0;
    } else {
        /* jit compiles the simplified IR, as jit() does; eager runs the program as written */
        ax_ir *simple = ax_simplify(cx, ir);
        if (!simple) fail_msg("simplify failed: %s", cx->err.message);
        if (pieces) setenv("AX_JIT_PIECE_WORK", "2", 1);
        ax_jit_program *p = ax_jit_build(cx, simple);
        if (pieces) unsetenv("AX_JIT_PIECE_WORK");
        ax_ir_release(simple);
        assert_non_null(p);
        const ax_jit_info *info = ax_jit_program_info(p);
        assert_true(info->native || info->quick || info->nloops == 0);
        *loops += info->nloops;
        *rendered += info->quick;
        if (ax_jit_run(cx, p, args, got)) fail_msg("jit failed: %s", cx->err.message);
        uint64_t reported = UINT64_MAX;
        for (int o = 0; o < nout; o++) {
            check c = {0};
            char what[64];
            uint64_t seed = first + (uint64_t)prog_of_out[o];
            snprintf(what, sizeof what, "program %llu output %d", (unsigned long long)seed, o);
            compare(what, want[o], got[o], NULL, &c);
            bad += c.mismatches;
            if (c.mismatches && seed != reported) print_program(cx, reported = seed);
        }
        ax_jit_free(p);
    }
    for (int o = 0; o < nout; o++) {
        ax_array_release(want[o]);
        ax_array_release(got[o]);
    }
    for (int i = 0; i < ir->nin; i++) ax_array_release(args[i]);
    free(args), free(want), free(got);
    ax_ir_release(ir);
    for (int i = 0; i < g->nlits; i++) ax_array_release(g->lits[i]);
    free(g->lits);
    free(g);
    return bad;
}

static void test_random_programs(void **state) {
    ax_ctx *cx = *state;
    int bad = 0, loops = 0;
    for (int k = 0; k < options.count; k += BATCH) {
        int n = options.count - k < BATCH ? options.count - k : BATCH;
        int rendered = 0;
        bad +=
            run_batch(cx, options.seed + (uint64_t)k, n, (k / BATCH) % 2 == 1, &loops, &rendered);
        if (options.verbose)
            print_message("programs %llu..%llu: %d elements differ so far\n",
                          (unsigned long long)(options.seed + (uint64_t)k),
                          (unsigned long long)(options.seed + (uint64_t)k + (uint64_t)n - 1), bad);
    }
    print_message("%d random programs from seed %llu: %d native loops, %d elements differ\n",
                  options.count, (unsigned long long)options.seed, loops, bad);
    if (bad) fail_msg("%d elements differ between eager and jit", bad);
}

/* The same on the quick tier's code (AX_JIT_QUICK=only), one program per IR so that each is
 * rendered or not on its own, on the dtypes it renders. */
static void test_random_programs_quick(void **state) {
    if (!ax_quickgen_supported()) skip(); /* no AVX2: the tier never runs here */
    ax_ctx *cx = *state;
    int bad = 0, loops = 0, rendered = 0, count = options.count;
    options.quick = true;
    for (int k = 0; k < count; k++)
        bad += run_batch(cx, options.seed + 7000 + (uint64_t)k, 1, false, &loops, &rendered);
    options.quick = false;
    print_message("%d random programs on the quick tier from seed %llu: %d rendered, %d "
                  "elements differ\n",
                  count, (unsigned long long)options.seed + 7000, rendered, bad);
    if (bad) fail_msg("%d elements differ between eager and the quick tier", bad);
    assert_true(rendered >= count / 2);
}

int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--seed") && i + 1 < argc)
            options.seed = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--count") && i + 1 < argc)
            options.count = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-v"))
            options.verbose = true;
        else if (!strcmp(argv[i], "--print"))
            options.print = true;
        else {
            fprintf(stderr, "usage: %s [--seed S] [--count N] [-v] [--print]\n", argv[0]);
            return 2;
        }
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_random_programs, jit_test_setup, jit_test_teardown),
        cmocka_unit_test_setup_teardown(test_random_programs_quick, jit_test_quick_setup,
                                        jit_test_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

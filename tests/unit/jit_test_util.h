/* Helpers shared by the jit tests (test_jit*.c): random inputs rich in special values,
 * arguments passed as views, running an IR eagerly (the reference) and natively, and
 * comparing the two bit for bit. Include after cmocka.h. */
#ifndef AX_JIT_TEST_UTIL_H
#define AX_JIT_TEST_UTIL_H

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../compiler/codegen.h"
#include "../../compiler/fuse.h"
#include "../../compiler/jit.h"

/* ---------------------------------------------------------------- random inputs */

typedef struct rng {
    uint64_t s;
} rng;

static inline uint64_t rnd(rng *r) { /* splitmix64 */
    uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static inline double rnd_in(rng *r, double lo, double hi) {
    return lo + (hi - lo) * (double)(rnd(r) >> 11) * 0x1p-53;
}

typedef enum {
    D_ANY,    /* floats: specials mixed with values of every magnitude; integers: the extremes,
                 random bit patterns and small values */
    D_NOZNEG, /* D_ANY without -0 (the sign of a zero maximum depends on the order of a max) */
    D_SMALL,  /* floats in [-3, 3]; integers in [-20, 20] */
    D_EXACT,  /* floats: multiples of 1/8 in [-4, 4], so sums of a few thousand are exact in
                 any order; integers: as D_ANY (wrapping sums are exact in any order) */
    D_POW2,   /* floats: +-0.5, +-1, +-2, so products are exact in any order; integers: D_ANY */
    D_POS,    /* floats in (0.1, 4); integers in [1, 20] */
    D_SHIFT,  /* shift counts in [-3, 70]: negative and past the width too */
    D_INDEX,  /* i32 indices in [0, index_max) */
    D_SPD,    /* symmetric positive definite matrices (cholesky) */
    D_TRI,    /* triangular matrices with a strong diagonal (triangular_solve) */
} domain;

enum { NSPECIAL = 20 };
static const double f32_special[NSPECIAL] = {
    0.0,      -0.0,      INFINITY, -INFINITY,      NAN,
    0x1p-149, -0x1p-140, 0x1p-126, 0x1.fffffep127, -0x1.fffffep127,
    1e30,     -1e-30,    1.0,      -1.0,           0.5,
    2.5,      -2.5,      88.72,    -103.9,         1e-7};
static const double f64_special[NSPECIAL] = {
    0.0,   -0.0,    INFINITY, -INFINITY, NAN, 0x1p-1074, -0x1p-1060, DBL_MIN, DBL_MAX, -DBL_MAX,
    1e300, -1e-300, 1.0,      -1.0,      0.5, 2.5,       -2.5,       709.78,  -745.1,  1e-16};

static inline bool is_float(ax_dtype t) {
    return t == AX_F32 || t == AX_F64;
}

static inline void int_range(ax_dtype t, int64_t *lo, int64_t *hi) {
    switch (t) {
    case AX_BOOL:
        *lo = 0, *hi = 1;
        break;
    case AX_U8:
        *lo = 0, *hi = UINT8_MAX;
        break;
    case AX_I32:
        *lo = INT32_MIN, *hi = INT32_MAX;
        break;
    case AX_U32:
        *lo = 0, *hi = UINT32_MAX;
        break;
    default:
        *lo = INT64_MIN, *hi = INT64_MAX;
        break;
    }
}

static inline double float_value(rng *r, ax_dtype t, domain d, int64_t i) {
    static const double pow2[] = {0.5, -0.5, 1.0, -1.0, 2.0, -2.0};
    switch (d) {
    case D_SMALL:
        return rnd_in(r, -3, 3);
    case D_EXACT:
        return (double)((int64_t)(rnd(r) % 65) - 32) / 8;
    case D_POW2:
        return pow2[rnd(r) % 6];
    case D_POS:
        return rnd_in(r, 0.1, 4);
    default:
        break;
    }
    if (i % 3 == 1) { /* one element in three, so specials land in full blocks and in tails */
        double v = (t == AX_F32 ? f32_special : f64_special)[rnd(r) % NSPECIAL];
        return d == D_NOZNEG && v == 0 ? 0.0 : v;
    }
    if (rnd(r) & 1) return rnd_in(r, -4, 4);
    double mag = pow(10, rnd_in(r, -8, 8));
    return rnd(r) & 1 ? mag : -mag;
}

static inline int64_t int_value(rng *r, ax_dtype t, domain d, int index_max) {
    if (t == AX_BOOL) return (int64_t)(rnd(r) & 1);
    bool is_unsigned = t == AX_U8 || t == AX_U32;
    int64_t lo, hi;
    int_range(t, &lo, &hi);
    switch (d) {
    case D_INDEX:
        return (int64_t)(rnd(r) % (uint64_t)index_max);
    case D_SHIFT:
        return (int64_t)(rnd(r) % 74) - 3;
    case D_POS:
        return 1 + (int64_t)(rnd(r) % 20);
    case D_SMALL:
        break;
    default:
        switch (rnd(r) % 4) {
        case 0: {
            const int64_t extremes[] = {lo, hi, 0, -1, 1, lo + 1, hi - 1};
            return extremes[rnd(r) % 7];
        }
        case 1:
            return (int64_t)rnd(r); /* truncated to the dtype's width when stored */
        default:
            break;
        }
    }
    return is_unsigned ? (int64_t)(rnd(r) % 41) : (int64_t)(rnd(r) % 41) - 20;
}

/* Stores element i of a contiguous array: f for floats, n (wrapped to the width) otherwise. */
static inline void set_elem(ax_array *a, int64_t i, double f, int64_t n) {
    char *p = (char *)ax_array_data(a) + i * (int64_t)ax_dtype_size(a->dtype);
    switch (a->dtype) {
    case AX_BOOL:
        *(uint8_t *)p = (uint8_t)(n & 1);
        break;
    case AX_U8:
        *(uint8_t *)p = (uint8_t)n;
        break;
    case AX_I32:
    case AX_U32: {
        uint32_t v = (uint32_t)n;
        memcpy(p, &v, 4);
        break;
    }
    case AX_I64:
        memcpy(p, &n, 8);
        break;
    case AX_F32: {
        float v = (float)f;
        memcpy(p, &v, 4);
        break;
    }
    default:
        memcpy(p, &f, 8);
        break;
    }
}

/* Symmetric positive definite (D_SPD) or triangular with a strong diagonal (D_TRI) matrices
 * over the last two dims. */
static inline void fill_matrices(rng *r, ax_array *a, domain d) {
    int64_t n = a->shape[a->ndim - 1], nmat = a->size / (n * n);
    double *m = malloc((size_t)(n * n) * sizeof *m);
    assert_non_null(m);
    for (int64_t b = 0; b < nmat; b++) {
        for (int64_t i = 0; i < n * n; i++) m[i] = rnd_in(r, -1, 1);
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < n; j++) {
                double v = m[i * n + j];
                if (d == D_SPD) { /* (M M^T)[i, j] + n on the diagonal */
                    v = i == j ? (double)n : 0.0;
                    for (int64_t k = 0; k < n; k++) v += m[i * n + k] * m[j * n + k];
                } else if (i == j) {
                    v = 2 + fabs(v);
                }
                set_elem(a, b * n * n + i * n + j, v, 0);
            }
    }
    free(m);
}

static inline void fill(rng *r, ax_array *a, domain d, int index_max) {
    if (d == D_SPD || d == D_TRI) {
        fill_matrices(r, a, d);
        return;
    }
    for (int64_t i = 0; i < a->size; i++) {
        if (is_float(a->dtype))
            set_elem(a, i, float_value(r, a->dtype, d, i), 0);
        else
            set_elem(a, i, 0, int_value(r, a->dtype, d, index_max));
    }
}

static inline ax_array *make_input(ax_ctx *cx, rng *r, const ax_aval *t, domain d, int index_max) {
    ax_array *a = ax_array_new(cx, t->dtype, t->ndim, t->shape);
    assert_non_null(a);
    fill(r, a, d, index_max);
    return a;
}

/* ---------------------------------------------------------------- comparing */

static inline uint64_t elem_bits(const ax_array *a, int64_t flat) {
    uint64_t v = 0;
    size_t size = ax_dtype_size(a->dtype);
    memcpy(&v, (const char *)ax_array_data(a) + ax_array_flat_offset(a, flat) * (int64_t)size,
           size);
    return v;
}

static inline double bits_value(uint64_t bits, ax_dtype t) {
    if (t == AX_F32) {
        float f;
        uint32_t u = (uint32_t)bits;
        memcpy(&f, &u, 4);
        return f;
    }
    double d;
    memcpy(&d, &bits, 8);
    return d;
}

/* Floats as integers that order like the values (+0 and -0 both 0). */
static inline int64_t ordered(uint64_t bits, ax_dtype t) {
    if (t == AX_F32) {
        uint32_t u = (uint32_t)bits;
        return u >> 31 ? -(int64_t)(u & 0x7fffffffu) : (int64_t)u;
    }
    return bits >> 63 ? -(int64_t)(bits & INT64_MAX) : (int64_t)bits;
}

#define FAR INT64_MAX

/* The distance in ulps between two floats: 0 for equal bits or two NaNs, FAR when they can
 * never count as close (one NaN, an infinity, zeros of opposite signs). */
static inline int64_t float_distance(uint64_t want, uint64_t got, ax_dtype t) {
    if (want == got) return 0;
    double w = bits_value(want, t), g = bits_value(got, t);
    if (isnan(w) && isnan(g)) return 0;
    if (isnan(w) || isnan(g) || isinf(w) || isinf(g) || (w == 0 && g == 0)) return FAR;
    int64_t a = ordered(want, t), b = ordered(got, t);
    uint64_t d = a > b ? (uint64_t)a - (uint64_t)b : (uint64_t)b - (uint64_t)a;
    return d > (uint64_t)INT64_MAX ? FAR : (int64_t)d;
}

static inline void format_elem(char *buf, size_t n, const ax_array *a, int64_t flat) {
    uint64_t bits = elem_bits(a, flat);
    switch (a->dtype) {
    case AX_F32:
        snprintf(buf, n, "%.9g (0x%08llx)", bits_value(bits, AX_F32), (unsigned long long)bits);
        break;
    case AX_F64:
        snprintf(buf, n, "%.17g (0x%016llx)", bits_value(bits, AX_F64), (unsigned long long)bits);
        break;
    case AX_I32:
        snprintf(buf, n, "%d", (int32_t)(uint32_t)bits);
        break;
    case AX_I64:
        snprintf(buf, n, "%lld", (long long)bits);
        break;
    default:
        snprintf(buf, n, "%llu", (unsigned long long)bits);
        break;
    }
}

/* What a comparison found. Eager and jit must give the same bits: integers, bools and floats
 * alike, but for which NaN a NaN is (scalar libm and libmvec give NaNs of different signs for
 * log(-1)); worst_ulp is the largest distance seen in ulps. */
typedef struct check {
    int64_t worst_ulp;
    int mismatches;
} check;

/* Operands of an output that line up with it element by element (same size or one element),
 * printed beside a mismatch. */
typedef struct operands {
    int n;
    const ax_array *a[4];
} operands;

static inline void report_mismatch(const char *what, const ax_array *want, const ax_array *got,
                                   int64_t i, const operands *ops) {
    char w[64], g[64], line[512];
    format_elem(w, sizeof w, want, i);
    format_elem(g, sizeof g, got, i);
    int len = snprintf(line, sizeof line, "MISMATCH %s [%lld]: eager %s, jit %s", what,
                       (long long)i, w, g);
    for (int k = 0; ops && k < ops->n && len < (int)sizeof line - 80; k++) {
        const ax_array *o = ops->a[k];
        if (o->size != want->size && o->size != 1) continue;
        format_elem(w, sizeof w, o, o->size == 1 ? 0 : i);
        len += snprintf(line + len, sizeof line - (size_t)len, "%s %s", k ? "," : "; inputs", w);
    }
    print_message("%s\n", line);
}

static inline void compare(const char *what, const ax_array *want, const ax_array *got,
                           const operands *ops, check *c) {
    if (want->dtype != got->dtype ||
        !ax_shape_equal(want->ndim, want->shape, got->ndim, got->shape)) {
        char tw[64], tg[64];
        ax_array_type_format(tw, sizeof tw, want);
        ax_array_type_format(tg, sizeof tg, got);
        print_message("MISMATCH %s: eager %s, jit %s\n", what, tw, tg);
        c->mismatches++;
        return;
    }
    int shown = 0;
    for (int64_t i = 0; i < want->size; i++) {
        uint64_t w = elem_bits(want, i), g = elem_bits(got, i);
        if (w == g) continue;
        if (is_float(want->dtype)) {
            int64_t d = float_distance(w, g, want->dtype);
            if (d == 0) continue; /* two NaNs */
            if (d > c->worst_ulp) c->worst_ulp = d;
        }
        c->mismatches++;
        if (shown++ < 4) report_mismatch(what, want, got, i, ops);
    }
}

/* ---------------------------------------------------------------- building IRs */

/* Appends prim(ins) (one output, typed by the primitive's shape rule) to the builder. */
static inline ax_ir_atom jit_test_eqn(ax_ctx *cx, ax_ir_builder *b, ax_prim prim,
                                      const ax_params *p, int nin, const ax_ir_atom *ins) {
    ax_aval types[3], out;
    for (int i = 0; i < nin; i++) ax_ir_atom_type(b, &ins[i], &types[i]);
    if (ax_prim_infer(cx, prim, nin, types, p, &out)) fail_msg("%s", cx->err.message);
    int v;
    assert_int_equal(ax_ir_add_eqn(b, prim, p, nin, ins, 1, &out, &v, 0, NULL), 0);
    return (ax_ir_atom){.var = v};
}

/* ---------------------------------------------------------------- running both ways */

static inline bool is_view_prim(ax_prim p) {
    return ax_kop_is_view(ax_prim_get(p)->lower.kop);
}

static inline void eqn_operand_types(const ax_ir *ir, const ax_ir_eqn *e, ax_aval *in) {
    for (int i = 0; i < e->nin && i < 4; i++) {
        if (e->in[i].var >= 0)
            in[i] = ir->types[e->in[i].var];
        else
            ax_aval_of(&in[i], e->in[i].lit);
    }
}

/* Proves on the fusion plan that what the code generator accepts is compiled: every fusable
 * equation (but views, which fold into their readers' strides) is a node of a LOOP step.
 * Returns how many equations were fusable. */
static inline int check_compiled(const ax_ir *ir) {
    ax_plan *plan = ax_fuse(ir);
    assert_non_null(plan);
    bool *in_loop = calloc((size_t)ir->neqns + 1, sizeof *in_loop);
    assert_non_null(in_loop);
    for (int s = 0; s < plan->nsteps; s++) {
        const ax_step *st = &plan->steps[s];
        if (st->kind != AX_STEP_LOOP) continue;
        for (int i = 0; i < st->k->nnodes; i++)
            if (st->k->nodes[i].kind == AX_KN_OP || st->k->nodes[i].kind == AX_KN_REDUCE ||
                st->k->nodes[i].kind == AX_KN_INDEX)
                in_loop[st->k->nodes[i].eqn] = true;
    }
    int fusable = 0, missing = 0;
    for (int k = 0; k < ir->neqns; k++) {
        const ax_ir_eqn *e = &ir->eqns[k];
        ax_aval in[4];
        eqn_operand_types(ir, e, in);
        bool fuses = e->nin <= 3 && ax_codegen_fusable(e, in, &ir->types[e->out[0]]);
        fusable += fuses;
        if (fuses && !is_view_prim(e->prim) && !in_loop[k]) {
            print_message("NOT COMPILED: equation %d (%s %s) is fusable but runs eagerly\n", k,
                          ax_prim_get(e->prim)->name, ax_dtype_short(ir->types[e->out[0]].dtype));
            missing++;
        }
    }
    free(in_loop);
    ax_plan_free(plan);
    assert_int_equal(missing, 0);
    return fusable;
}

/* Labels and operands of a program's outputs, for messages. */
typedef struct out_desc {
    char label[112];
    int nops;
    int op_input[4];           /* the program input each operand is, or -1 */
    const ax_array *op_lit[4]; /* or the literal (owned by the IR) */
} out_desc;

/* Runs `ir` eagerly and natively on `args` and compares every output. */
static inline ax_jit_info run_both(ax_ctx *cx, ax_ir *ir, ax_array **args, const out_desc *desc,
                                   check *c) {
    ax_array **want = calloc((size_t)ir->nout + 1, sizeof *want);
    ax_array **got = calloc((size_t)ir->nout + 1, sizeof *got);
    assert_true(want && got);
    if (ax_ir_eval(cx, ir, args, want)) fail_msg("eager evaluation failed: %s", cx->err.message);
    ax_jit_program *p = ax_jit_build(cx, ir);
    assert_non_null(p);
    ax_jit_info info = *ax_jit_program_info(p);
    if (ax_jit_run(cx, p, args, got)) fail_msg("native run failed: %s", cx->err.message);
    for (int k = 0; k < ir->nout; k++) {
        operands ops = {0};
        char what[160];
        if (desc) {
            for (int i = 0; i < desc[k].nops; i++)
                ops.a[ops.n++] =
                    desc[k].op_input[i] >= 0 ? args[desc[k].op_input[i]] : desc[k].op_lit[i];
            snprintf(what, sizeof what, "%s", desc[k].label);
        } else {
            snprintf(what, sizeof what, "output %d", k);
        }
        compare(what, want[k], got[k], &ops, c);
        ax_array_release(want[k]);
        ax_array_release(got[k]);
    }
    ax_jit_free(p);
    free(want);
    free(got);
    return info;
}

typedef enum { V_NONE, V_TRANSPOSED, V_REVERSED, V_STRIDED, V_BROADCAST } view_kind;

/* An argument of logical type t passed as a view of another buffer. */
static inline ax_array *make_view_arg(ax_ctx *cx, rng *r, const ax_aval *t, domain d, view_kind v) {
    assert_int_equal(t->ndim, 2);
    int64_t rows = t->shape[0], cols = t->shape[1];
    int64_t base_shape[2] = {rows, cols};
    if (v == V_TRANSPOSED) base_shape[0] = cols, base_shape[1] = rows;
    if (v == V_STRIDED) base_shape[0] = 2 * rows + 1;
    if (v == V_BROADCAST) base_shape[0] = 1;
    ax_aval bt = {.dtype = t->dtype, .ndim = 2, .shape = {base_shape[0], base_shape[1]}};
    ax_array *base = make_input(cx, r, &bt, d, 0), *view = NULL;
    switch (v) {
    case V_TRANSPOSED:
        view = ax_array_view(cx, base, 2, t->shape, (int64_t[]){1, rows}, 0);
        break;
    case V_REVERSED:
        view = ax_array_view(cx, base, 2, t->shape, (int64_t[]){-cols, 1}, (rows - 1) * cols);
        break;
    case V_STRIDED: /* every other row, from row 1 */
        view = ax_array_view(cx, base, 2, t->shape, (int64_t[]){2 * cols, 1}, cols);
        break;
    default:
        view = ax_array_view(cx, base, 2, t->shape, (int64_t[]){0, 1}, 0);
        break;
    }
    ax_array_release(base);
    assert_non_null(view);
    assert_false(ax_array_is_contiguous(view));
    return view;
}

/* cmocka fixtures: a fresh context per test. */
static inline int jit_test_setup(void **state) {
    *state = ax_ctx_new();
    return *state ? 0 : -1;
}

/* A fresh context whose jit runs the quick tier's code alone (AX_JIT_QUICK=only, read when a
 * context first uses jit: here). */
static inline int jit_test_quick_setup(void **state) {
    setenv("AX_JIT_QUICK", "only", 1);
    int rc = jit_test_setup(state);
    if (*state) ax_jit_logging(*state);
    unsetenv("AX_JIT_QUICK");
    return rc;
}

static inline int jit_test_teardown(void **state) {
    ax_ctx_free(*state);
    return 0;
}

#endif

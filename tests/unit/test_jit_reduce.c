/* Reductions: the eager kernels (runtime/reduce.c) against a plain implementation of the
 * algorithm runtime/reduce.h states, bit for bit, and jit's generated code against the eager
 * kernels, bit for bit.
 *
 * The reference below is written from the statement alone, element by element over logical
 * indices: each output's elements in row-major order of the reduced axes; with the last axis
 * reduced, runs cut into chunks of 4096, element i of a chunk to lane i % 16, lanes folded in
 * order, chunk results folded in order into the total; with the last axis kept, the elements
 * folded into the total one by one; f64 accumulators for floats, 64-bit wrapping ones for
 * integers; max/min independent of the order (NaN sticks and is the quiet NaN, +0 beats -0).
 * The cases cover every operation and dtype on shapes that take every path of the kernels:
 * runs longer than a chunk, runs shorter than the lanes (eight folded at a time, across
 * outputs and across reduced rows), reduced axes around kept ones, a kept last axis, size-1
 * and empty axes, and inputs that are transposed, reversed, strided or broadcast views. Values
 * span 16 orders of magnitude, so any change of order changes the bits. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "../../runtime/pool.h"
#include "../../runtime/reduce.h"
#include "jit_test_util.h"

/* ---------------------------------------------------------------- the reference */

typedef struct ref_op {
    ax_reduce_op op;
    ax_dtype t;
} ref_op;

static bool ref_float(const ref_op *o) {
    return is_float(o->t) && o->op != AX_REDUCE_AND && o->op != AX_REDUCE_OR;
}

/* Accumulators: f (floats), u (wrapping integer sums and products, and/or, unsigned
 * max/min) or i (signed max/min). */
typedef struct acc {
    double f;
    uint64_t u;
    int64_t i;
} acc;

static acc ref_identity(const ref_op *o) {
    acc a = {0};
    switch (o->op) {
    case AX_REDUCE_SUM:
    case AX_REDUCE_OR:
        break;
    case AX_REDUCE_PROD:
    case AX_REDUCE_AND:
        a.f = 1, a.u = 1;
        break;
    case AX_REDUCE_MAX:
        a.f = -INFINITY, a.i = INT64_MIN, a.u = 0;
        break;
    case AX_REDUCE_MIN:
        a.f = INFINITY, a.i = INT64_MAX, a.u = UINT64_MAX;
        break;
    }
    return a;
}

static double ref_extreme(double a, double v, bool is_max) {
    if (isnan(a) || isnan(v)) return NAN;
    if (a == v) { /* -0 and +0: max is +0, min -0 */
        uint64_t x, y;
        memcpy(&x, &a, 8);
        memcpy(&y, &v, 8);
        x = is_max ? x & y : x | y;
        memcpy(&a, &x, 8);
        return a;
    }
    return (a > v) == is_max ? a : v;
}

static acc ref_combine(const ref_op *o, acc a, acc v) {
    bool is_signed = ax_dtype_is_signed(o->t);
    switch (o->op) {
    case AX_REDUCE_SUM:
        a.f += v.f, a.u += v.u;
        break;
    case AX_REDUCE_PROD:
        a.f *= v.f, a.u *= v.u;
        break;
    case AX_REDUCE_AND:
        a.u = a.u && v.u;
        break;
    case AX_REDUCE_OR:
        a.u = a.u || v.u;
        break;
    default: {
        bool is_max = o->op == AX_REDUCE_MAX;
        a.f = ref_extreme(a.f, v.f, is_max);
        if (is_signed)
            a.i = (v.i > a.i) == is_max && v.i != a.i ? v.i : a.i;
        else
            a.u = (v.u > a.u) == is_max && v.u != a.u ? v.u : a.u;
    }
    }
    return a;
}

/* Element `off` (elements from the array's element [0, ...]) as an accumulator value. */
static acc ref_load(const ref_op *o, const ax_array *x, int64_t off) {
    const char *p = (const char *)ax_array_data(x) + off * (int64_t)ax_dtype_size(x->dtype);
    acc a = {0};
    switch (x->dtype) {
    case AX_F32: {
        float f;
        memcpy(&f, p, 4);
        a.f = f;
        break;
    }
    case AX_F64:
        memcpy(&a.f, p, 8);
        break;
    case AX_BOOL:
    case AX_U8:
        a.u = *(const uint8_t *)p;
        a.i = (int64_t)a.u;
        break;
    case AX_I32: {
        int32_t v;
        memcpy(&v, p, 4);
        a.i = v, a.u = (uint64_t)(int64_t)v;
        break;
    }
    case AX_U32: {
        uint32_t v;
        memcpy(&v, p, 4);
        a.u = v, a.i = v;
        break;
    }
    default:
        memcpy(&a.i, p, 8);
        a.u = (uint64_t)a.i;
        break;
    }
    if (o->op == AX_REDUCE_AND || o->op == AX_REDUCE_OR)
        a.u = is_float(x->dtype) ? a.f != 0 : a.u != 0;
    return a;
}

static void ref_store(const ref_op *o, acc a, ax_array *out, int64_t k) {
    bool extreme = o->op == AX_REDUCE_MAX || o->op == AX_REDUCE_MIN;
    if (ref_float(o) && extreme && isnan(a.f)) a.f = NAN;
    bool is_signed = ax_dtype_is_signed(out->dtype) && out->dtype != AX_BOOL;
    int64_t n = out->dtype == AX_BOOL ? a.u != 0 : extreme && is_signed ? a.i : (int64_t)a.u;
    set_elem(out, k, a.f, n);
}

/* The statement of runtime/reduce.h, element by element. */
static ax_array *ref_reduce(ax_ctx *cx, const ref_op *o, const ax_array *x, int naxes,
                            const int *axes) {
    bool red[AX_MAX_RANK] = {false};
    for (int i = 0; i < naxes; i++) red[axes[i]] = true;
    int64_t kshape[AX_MAX_RANK], kstr[AX_MAX_RANK], rshape[AX_MAX_RANK], rstr[AX_MAX_RANK];
    int nk = 0, nr = 0, nout = 0;
    int64_t oshape[AX_MAX_RANK] = {0};
    bool last_reduced = false;
    for (int d = 0; d < x->ndim; d++) {
        if (!red[d]) oshape[nout++] = x->shape[d];
        if (x->shape[d] == 1) continue; /* size-1 axes are left out */
        last_reduced = red[d];
        if (red[d])
            rshape[nr] = x->shape[d], rstr[nr++] = x->strides[d];
        else
            kshape[nk] = x->shape[d], kstr[nk++] = x->strides[d];
    }
    ax_array *out = ax_array_new(cx, x->dtype, nout, oshape);
    assert_non_null(out);
    int64_t nouts = out->size, nred = 1;
    for (int i = 0; i < nr; i++) nred *= rshape[i];
    int64_t run = last_reduced ? rshape[nr - 1] : 1, nruns = run ? nred / run : 0;
    for (int64_t k = 0; k < nouts; k++) {
        int64_t base = 0, rem = k;
        for (int i = nk - 1; i >= 0; i--) base += (rem % kshape[i]) * kstr[i], rem /= kshape[i];
        acc total = ref_identity(o);
        if (!last_reduced) {
            for (int64_t e = 0; e < nred; e++) {
                int64_t off = base, q = e;
                for (int i = nr - 1; i >= 0; i--) off += (q % rshape[i]) * rstr[i], q /= rshape[i];
                total = ref_combine(o, total, ref_load(o, x, off));
            }
        } else {
            for (int64_t rr = 0; rr < nruns; rr++) {
                int64_t off = base, q = rr;
                for (int i = nr - 2; i >= 0; i--) off += (q % rshape[i]) * rstr[i], q /= rshape[i];
                for (int64_t c0 = 0; c0 < run; c0 += AX_REDUCE_CHUNK) {
                    acc lane[AX_REDUCE_LANES];
                    for (int l = 0; l < AX_REDUCE_LANES; l++) lane[l] = ref_identity(o);
                    for (int64_t i = c0; i < run && i < c0 + AX_REDUCE_CHUNK; i++) {
                        int l = (int)((i - c0) % AX_REDUCE_LANES);
                        lane[l] = ref_combine(o, lane[l], ref_load(o, x, off + i * rstr[nr - 1]));
                    }
                    acc p = lane[0];
                    for (int l = 1; l < AX_REDUCE_LANES; l++) p = ref_combine(o, p, lane[l]);
                    total = ref_combine(o, total, p);
                }
            }
        }
        ref_store(o, total, out, k);
    }
    return out;
}

/* ---------------------------------------------------------------- the cases */

typedef struct rcase {
    int ndim;
    int64_t shape[4];
    int naxes, axes[4];
} rcase;

enum { C = AX_REDUCE_CHUNK };

static const rcase cases[] = {
    {1, {37}, 1, {0}},
    {1, {7}, 1, {0}},
    {1, {2 * C + 17}, 1, {0}}, /* three chunks, the last with a tail */
    {1, {C}, 1, {0}},
    {2, {4, 33}, 1, {1}},
    {2, {4, 33}, 1, {0}},
    {2, {4, 33}, 2, {0, 1}},
    {2, {40, 5}, 1, {1}}, /* short rows across outputs */
    {2, {40, 5}, 1, {0}},
    {2, {40, 10}, 1, {1}},      /* short rows: eight at a time, then the rest */
    {2, {43, 10}, 2, {0, 1}},   /* short rows into one total */
    {2, {3, C + 5}, 1, {1}},    /* runs of two chunks */
    {2, {2, 2 * C}, 2, {0, 1}}, /* mergeable: the run is a multiple of a chunk */
    {2, {C + 3, 3}, 1, {0}},    /* a long kept last axis... */
    {2, {3, 2000}, 1, {0}},     /* ...and a tiled one */
    {3, {3, 5, 7}, 1, {1}},
    {3, {3, 5, 7}, 2, {0, 2}},
    {3, {3, 5, 7}, 3, {0, 1, 2}},
    {3, {3, 20, 6}, 1, {2}},
    {3, {4, 9, 18}, 2, {0, 1}}, /* reduced axes before a kept last one */
    {3, {3, 1, 37}, 1, {1}},    /* size-1 axes, reduced and kept */
    {3, {3, 37, 1}, 1, {1}},
    {2, {37, 1}, 1, {1}},
    {2, {1, 1}, 2, {0, 1}},
    {2, {0, 5}, 1, {0}},
    {2, {5, 0}, 1, {1}},
    {2, {4, 33}, 0, {0}},
    {0, {0}, 0, {0}},
    {4, {2, 3, 4, 5}, 2, {1, 3}},
    {4, {2, 3, 4, 17}, 2, {0, 3}},
};
enum { NCASES = sizeof cases / sizeof *cases };

/* Values of every magnitude (so that the order of additions shows), with zeros of both
 * signs, infinities and NaN in some of them. */
static void fill_values(rng *r, ax_array *a, bool specials, ax_reduce_op op) {
    for (int64_t i = 0; i < a->size; i++) {
        double v;
        if (op == AX_REDUCE_PROD) /* products of a few thousand: stay finite and inexact */
            v = (rnd(r) & 1 ? 1 : -1) * (1 + rnd_in(r, -1e-3, 1e-3));
        else if (specials && rnd(r) % 97 == 0)
            v = (const double[]){0.0, -0.0, INFINITY, -INFINITY, NAN}[rnd(r) % 5];
        else if (rnd(r) % 7 == 0)
            v = (rnd(r) & 1 ? 0.0 : -0.0);
        else
            v = (rnd(r) & 1 ? 1 : -1) * pow(10, rnd_in(r, -8, 8));
        if (is_float(a->dtype))
            set_elem(a, i, v, 0);
        else
            set_elem(a, i, 0, (int64_t)rnd(r));
    }
}

typedef enum { L_PLAIN, L_TRANSPOSED, L_REVERSED, L_STRIDED, L_BROADCAST, NLAYOUTS } layout;

/* An array of logical type (t, shape) laid out as `l` (a view of a bigger or permuted base). */
static ax_array *make_laid_out(ax_ctx *cx, rng *r, ax_dtype t, const rcase *c, layout l,
                               bool specials, ax_reduce_op op) {
    int n = c->ndim;
    int64_t base_shape[4], strides[4], offset = 0;
    for (int d = 0; d < n; d++) base_shape[d] = c->shape[d];
    if (l == L_TRANSPOSED) /* the base has the axes reversed */
        for (int d = 0; d < n; d++) base_shape[d] = c->shape[n - 1 - d];
    if (l == L_STRIDED && n > 0) base_shape[n - 1] = 2 * c->shape[n - 1];
    if (l == L_BROADCAST && n > 0) base_shape[0] = 1;
    ax_array *base = ax_array_new(cx, t, n, base_shape);
    assert_non_null(base);
    fill_values(r, base, specials, op);
    int64_t s = 1;
    for (int d = n - 1; d >= 0; d--) strides[d] = s, s *= base_shape[d];
    switch (l) {
    case L_TRANSPOSED:
        for (int d = 0; d < n; d++) strides[d] = 0;
        s = 1;
        for (int d = 0; d < n; d++) strides[d] = s, s *= c->shape[d];
        break;
    case L_REVERSED:
        if (n > 0 && c->shape[0] > 0) {
            offset = (c->shape[0] - 1) * strides[0];
            strides[0] = -strides[0];
        }
        break;
    case L_STRIDED:
        if (n > 0) strides[n - 1] = 2;
        break;
    case L_BROADCAST:
        if (n > 0) strides[0] = 0;
        break;
    default:
        break;
    }
    ax_array *v = ax_array_view(cx, base, n, c->shape, strides, offset);
    ax_array_release(base);
    assert_non_null(v);
    return v;
}

static bool op_accepts(ax_reduce_op op, ax_dtype t) {
    bool logical = op == AX_REDUCE_AND || op == AX_REDUCE_OR;
    return logical == (t == AX_BOOL);
}

static bool empty_extreme(ax_reduce_op op, const rcase *c) {
    if (op != AX_REDUCE_MAX && op != AX_REDUCE_MIN) return false;
    for (int i = 0; i < c->naxes; i++)
        if (c->shape[c->axes[i]] == 0) return true;
    return false;
}

static const char *const op_names[] = {"sum", "prod", "max", "min", "and", "or"};

static void describe(char *buf, size_t n, ax_reduce_op op, ax_dtype t, const rcase *c, layout l) {
    static const char *const layouts[] = {"", " (transposed)", " (reversed)", " (strided)",
                                          " (broadcast)"};
    int len = snprintf(buf, n, "%s %s [", op_names[op], ax_dtype_short(t));
    for (int d = 0; d < c->ndim; d++)
        len += snprintf(buf + len, n - (size_t)len, "%s%lld", d ? "," : "", (long long)c->shape[d]);
    len += snprintf(buf + len, n - (size_t)len, "] axes (");
    for (int i = 0; i < c->naxes; i++)
        len += snprintf(buf + len, n - (size_t)len, "%s%d", i ? "," : "", c->axes[i]);
    snprintf(buf + len, n - (size_t)len, ")%s", layouts[l]);
}

/* Every operation, dtype, case and layout: ax_reduce against the reference. */
static void test_eager_follows_the_algorithm(void **state) {
    ax_ctx *cx = *state;
    rng r = {.s = 11};
    check total = {0};
    int ran = 0;
    for (int op = 0; op < 6; op++)
        for (int t = 0; t < AX_NDTYPES; t++) {
            if (!op_accepts((ax_reduce_op)op, (ax_dtype)t)) continue;
            ref_op o = {(ax_reduce_op)op, (ax_dtype)t};
            for (int k = 0; k < NCASES; k++) {
                if (empty_extreme(o.op, &cases[k])) continue;
                /* layouts in turn, so that every case meets every layout on some dtype */
                layout l = (layout)((k + t + op) % NLAYOUTS);
                ax_array *x = make_laid_out(cx, &r, o.t, &cases[k], l, k % 3 == 0, o.op);
                ax_array *want = ref_reduce(cx, &o, x, cases[k].naxes, cases[k].axes);
                ax_array *got = ax_reduce(cx, o.op, x, cases[k].naxes, cases[k].axes);
                if (!got) fail_msg("ax_reduce failed: %s", cx->err.message);
                char what[160];
                describe(what, sizeof what, o.op, o.t, &cases[k], l);
                compare(what, want, got, NULL, &total);
                ax_array_release(want);
                ax_array_release(got);
                ax_array_release(x);
                ran++;
            }
        }
    print_message("%d reductions against the reference\n", ran);
    if (total.mismatches) fail_msg("%d elements differ from the reference", total.mismatches);
}

/* The same on 2 threads and on 1, on inputs big enough to be split (tiles, chunks in
 * parallel): the bits do not depend on the threads. */
static void test_threads_change_nothing(void **state) {
    ax_ctx *cx = *state;
    static const rcase big[] = {
        {1, {1 << 20}, 1, {0}},   {2, {3, 300000}, 1, {1}},     {2, {300000, 3}, 1, {0}},
        {2, {2000, 300}, 1, {0}}, {2, {100000, 10}, 2, {0, 1}},
    };
    rng r = {.s = 12};
    check total = {0};
    for (size_t k = 0; k < sizeof big / sizeof *big; k++) {
        ref_op o = {AX_REDUCE_SUM, AX_F32};
        ax_array *x = make_laid_out(cx, &r, o.t, &big[k], L_PLAIN, false, o.op);
        ax_array *want = ref_reduce(cx, &o, x, big[k].naxes, big[k].axes);
        for (int threads = 1; threads <= 2; threads++) {
            cx->threads = threads;
            ax_pool_free(cx->pool);
            cx->pool = NULL;
            ax_array *got = ax_reduce(cx, o.op, x, big[k].naxes, big[k].axes);
            assert_non_null(got);
            char what[160];
            describe(what, sizeof what, o.op, o.t, &big[k], L_PLAIN);
            compare(what, want, got, NULL, &total);
            ax_array_release(got);
        }
        ax_array_release(want);
        ax_array_release(x);
    }
    if (total.mismatches) fail_msg("%d elements differ", total.mismatches);
}

/* ---------------------------------------------------------------- jit against eager */

/* One program: every operation on the cases (those with a reduced axis), each on
 * its own input, read directly, through a transpose (strided loads in the loop) or through an
 * elementwise operation in the same loop. */
typedef struct jit_batch {
    ax_ir_builder *b;
    int nin, nout;
    ax_aval in[512];
    ax_reduce_op op_of_in[512];
    ax_ir_atom out[512];
    char label[512][96];
} jit_batch;

static ax_prim reduce_prim(ax_reduce_op op) {
    static const ax_prim p[] = {AX_P_REDUCE_SUM, AX_P_REDUCE_PROD, AX_P_REDUCE_MAX,
                                AX_P_REDUCE_MIN, AX_P_REDUCE_AND,  AX_P_REDUCE_OR};
    return p[op];
}

static int add1(jit_batch *jb, ax_ctx *cx, ax_prim prim, const ax_params *p, int nin,
                const ax_ir_atom *in) {
    ax_aval types[2], out;
    for (int i = 0; i < nin; i++) ax_ir_atom_type(jb->b, &in[i], &types[i]);
    if (ax_prim_infer(cx, prim, nin, types, p, &out)) fail_msg("%s", cx->err.message);
    int v;
    assert_int_equal(ax_ir_add_eqn(jb->b, prim, p, nin, in, 1, &out, &v, 0, NULL), 0);
    return v;
}

static void add_jit_case(jit_batch *jb, ax_ctx *cx, ax_reduce_op op, ax_dtype t, const rcase *c,
                         int how) {
    assert_true(jb->nin < 512 && jb->nout < 512);
    ax_aval in = {.dtype = t, .ndim = c->ndim};
    memcpy(in.shape, c->shape, sizeof c->shape);
    int perm[4] = {0}, nd = c->ndim;
    if (how == 1) { /* the input is the transposed operand: reversed axes */
        for (int d = 0; d < nd; d++) in.shape[d] = c->shape[nd - 1 - d], perm[d] = nd - 1 - d;
    }
    jb->in[jb->nin] = in;
    jb->op_of_in[jb->nin++] = op;
    ax_ir_atom x = {.var = ax_ir_add_input(jb->b, &in)};
    if (how == 1) {
        ax_params p = {.naxes = nd};
        memcpy(p.axes, perm, sizeof perm);
        x.var = add1(jb, cx, AX_P_TRANSPOSE, &p, 1, &x);
    } else if (how == 2 && t != AX_BOOL) { /* x * x * x in the same loop */
        ax_ir_atom x2 = {.var = add1(jb, cx, AX_P_MUL, &(ax_params){0}, 2, (ax_ir_atom[]){x, x})};
        x.var = add1(jb, cx, AX_P_MUL, &(ax_params){0}, 2, (ax_ir_atom[]){x2, x});
    }
    ax_params p = {.naxes = c->naxes};
    memcpy(p.axes, c->axes, sizeof c->axes);
    jb->out[jb->nout] = (ax_ir_atom){.var = add1(jb, cx, reduce_prim(op), &p, 1, &x)};
    describe(jb->label[jb->nout], sizeof jb->label[0], op, t, c, L_PLAIN);
    static const char *const hows[] = {"", " of a transpose", " of x * x * x"};
    size_t len = strlen(jb->label[jb->nout]);
    snprintf(jb->label[jb->nout] + len, sizeof jb->label[0] - len, "%s", hows[how]);
    jb->nout++;
}

/* Builds and runs the program both ways; returns the mismatches. */
static int run_jit_batch(ax_ctx *cx, rng *r, jit_batch *jb, check *c) {
    ax_ir *ir = ax_ir_builder_finish(jb->b, jb->nout, jb->out);
    assert_non_null(ir);
    ax_array *args[512], *want[512], *got[512];
    for (int i = 0; i < jb->nin; i++) {
        args[i] = ax_array_new(cx, jb->in[i].dtype, jb->in[i].ndim, jb->in[i].shape);
        assert_non_null(args[i]);
        fill_values(r, args[i], i % 3 == 0, jb->op_of_in[i]);
    }
    if (ax_ir_eval(cx, ir, args, want)) fail_msg("eager: %s", cx->err.message);
    ax_jit_program *p = ax_jit_build(cx, ir);
    assert_non_null(p);
    assert_true(ax_jit_program_info(p)->native);
    if (ax_jit_run(cx, p, args, got)) fail_msg("jit: %s", cx->err.message);
    int before = c->mismatches;
    for (int k = 0; k < jb->nout; k++) {
        compare(jb->label[k], want[k], got[k], NULL, c);
        ax_array_release(want[k]);
        ax_array_release(got[k]);
    }
    for (int i = 0; i < jb->nin; i++) ax_array_release(args[i]);
    ax_jit_free(p);
    ax_ir_release(ir);
    return c->mismatches - before;
}

static bool reduces_something(const rcase *c) {
    return c->naxes > 0 && c->ndim > 0;
}

/* Which cases a dtype's program takes: compile time is the budget (~10 ms a reduction), so
 * every case for f64 sums (every kind of loop, and the order shows most), one in six for
 * other float reductions, one in sixteen for integers and bools (exact in any order:
 * wrapping, and the identities of the dtype's width). */
static bool jit_case_wanted(ax_reduce_op op, ax_dtype t, int k) {
    if (!op_accepts(op, t)) return false;
    if (t == AX_F64 && op == AX_REDUCE_SUM) return true;
    return (k + op + t) % (is_float(t) ? 6 : 16) == 0;
}

/* One program (one compile) with every dtype's cases. */
static void run_jit_cases(ax_ctx *cx, const char *pieces) {
    rng r = {.s = 13};
    check total = {0};
    if (pieces) setenv("AX_JIT_PIECE_WORK", pieces, 1);
    jit_batch *jb = calloc(1, sizeof *jb);
    assert_non_null(jb);
    jb->b = ax_ir_builder_new();
    for (int t = 0; t < AX_NDTYPES; t++)
        for (int op = 0; op < 6; op++)
            for (int k = 0; k < NCASES; k++) {
                ax_reduce_op o = (ax_reduce_op)op;
                if (!reduces_something(&cases[k]) || empty_extreme(o, &cases[k])) continue;
                if (pieces ? o != AX_REDUCE_SUM || t != AX_F64
                           : !jit_case_wanted(o, (ax_dtype)t, k))
                    continue;
                add_jit_case(jb, cx, o, (ax_dtype)t, &cases[k], pieces ? 2 : (k + op) % 3);
            }
    run_jit_batch(cx, &r, jb, &total);
    print_message("%d reductions%s\n", jb->nout, pieces ? " (loops in pieces)" : "");
    free(jb);
    if (pieces) unsetenv("AX_JIT_PIECE_WORK");
    if (total.mismatches) fail_msg("%d elements differ between eager and jit", total.mismatches);
}

static void test_jit_equals_eager(void **state) {
    run_jit_cases(*state, NULL);
}

/* f64 sums of x * x * x with every loop split into pieces of one operation: the reductions'
 * accumulators in the driver's frame, updated by the last piece. */
static void test_jit_in_pieces_equals_eager(void **state) {
    run_jit_cases(*state, "1");
}

/* An argument runs only the tests whose names match it (cmocka's filter). */
int main(int argc, char **argv) {
    if (argc > 1) cmocka_set_test_filter(argv[1]);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_eager_follows_the_algorithm, jit_test_setup,
                                        jit_test_teardown),
        cmocka_unit_test_setup_teardown(test_threads_change_nothing, jit_test_setup,
                                        jit_test_teardown),
        cmocka_unit_test_setup_teardown(test_jit_equals_eager, jit_test_setup, jit_test_teardown),
        cmocka_unit_test_setup_teardown(test_jit_in_pieces_equals_eager, jit_test_setup,
                                        jit_test_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

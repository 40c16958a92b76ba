/* The primitive table, row by row: every rule of every row is checked on the row's own
 * examples (ax_prim_info.examples), so that a new row is tested by being added:
 * - JVP against central finite differences, to second order (f64);
 * - transposition against the JVP: <J v, w> == <v, J^T w> through linearize and transpose;
 * - non-differentiable rows give zero tangents; commutative ones give f(a, b) == f(b, a);
 * - batching: vmap over each non-empty subset of the operands, batch dimension first and last,
 *   equals a loop over the examples;
 * - jit against eager, bit for bit, in f32 and f64 (what the row lowers to a loop is compiled);
 * - every row declares how jit computes it, and the code generator refuses what a row's
 *   lowering does not cover rather than guessing.
 * A row without examples (sub-programs and user callbacks are not static data) names the tests
 * that check it instead. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "jit_test_util.h"

#include "../../compiler/ad.h"
#include "../../compiler/vmap.h"
#include "../../runtime/shape_ops.h"

enum { NB = 3 /* examples in a batch */, MAXIN = 5 };

static int setup(void **state) {
    *state = ax_ctx_new();
    return *state ? 0 : -1;
}

static int teardown(void **state) {
    ax_ctx_free(*state);
    return 0;
}

/* ---------------------------------------------------------------- drawing operands */

static uint64_t seed = 0x9E3779B97F4A7C15ull;

static double uniform(double lo, double hi) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    return lo + (hi - lo) * (double)(seed >> 11) / 9007199254740992.0;
}

static ax_dtype arg_dtype(const ax_example_arg *a, ax_dtype ft) {
    return a->kind == AX_ARG_INT ? a->dtype : a->kind == AX_ARG_BOOL ? AX_BOOL : ft;
}

static bool differentiated(const ax_example_arg *a) {
    return a->kind == AX_ARG_FLOAT || a->kind == AX_ARG_SPD;
}

/* Makes the (..., n, n) matrices of the f64 data d positive definite: x x^T + n I. */
static void condition(double *d, int64_t size, int64_t n) {
    double m[64];
    for (int64_t b = 0; b < size / (n * n); b++, d += n * n) {
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < n; j++) {
                double acc = i == j ? (double)n : 0;
                for (int64_t k = 0; k < n; k++) acc += d[i * n + k] * d[j * n + k];
                m[i * n + j] = acc;
            }
        memcpy(d, m, (size_t)(n * n) * sizeof *d);
    }
}

/* An operand drawn for a, its floats of dtype ft, with a batch dimension of nb examples at
 * bdim (-1: none). */
static ax_array *make_arg(ax_ctx *cx, const ax_example_arg *a, ax_dtype ft, int bdim, int nb) {
    int64_t shape[AX_MAX_RANK];
    int n = 0;
    if (bdim >= 0) shape[n++] = nb;
    for (int d = 0; d < a->ndim; d++) shape[n++] = a->shape[d];
    ax_array *f = ax_array_new(cx, AX_F64, n, shape);
    assert_non_null(f);
    double *v = (double *)f->buf->data;
    for (int64_t k = 0; k < f->size; k++) {
        if (a->kind == AX_ARG_FLOAT) v[k] = uniform(a->lo, a->hi);
        if (a->kind == AX_ARG_SPD) v[k] = uniform(-1, 1);
        if (a->kind == AX_ARG_INT) v[k] = fmin(floor(uniform(a->lo, a->hi + 1)), a->hi);
        if (a->kind == AX_ARG_BOOL) v[k] = uniform(0, 1) < 0.5;
    }
    if (a->kind == AX_ARG_SPD) condition(v, f->size, a->shape[a->ndim - 1]);
    ax_array *t = ax_convert(cx, f, arg_dtype(a, ft), false);
    ax_array_release(f);
    assert_non_null(t);
    if (bdim <= 0) return t;
    ax_array *moved = ax_moveaxis(cx, t, 0, bdim);
    ax_array_release(t);
    assert_non_null(moved);
    return moved;
}

static const char *row_name(ax_prim p) {
    return ax_prim_get(p)->name;
}

/* ---------------------------------------------------------------- applying a row */

/* prim on an example: the operands in[] of a flat function fill the ones not fixed. */
typedef struct call {
    ax_prim prim;
    const ax_prim_example *ex;
    int out;                /* the output returned, or -1: all of them */
    ax_array *fixed[MAXIN]; /* operands that are not arguments (NULL: the next argument) */
} call;

static int apply(ax_ctx *cx, void *closure, int nin, ax_array **in, int *nout, ax_array ***out) {
    call *c = closure;
    ax_array *args[MAXIN];
    for (int i = 0, k = 0; i < c->ex->nin; i++) args[i] = c->fixed[i] ? c->fixed[i] : in[k++];
    (void)nin;
    int n = ax_prim_nout(c->prim, &c->ex->p);
    ax_array **all = calloc((size_t)n + 1, sizeof *all);
    assert_non_null(all);
    if (ax_bind(cx, c->prim, c->ex->nin, args, &c->ex->p, all)) {
        free(all);
        return -1;
    }
    if (c->out < 0) {
        *out = all;
        *nout = n;
        return 0;
    }
    *out = calloc(1, sizeof **out);
    assert_non_null(*out);
    for (int k = 0; k < n; k++) {
        if (k == c->out)
            (*out)[0] = all[k];
        else
            ax_array_release(all[k]);
    }
    free(all);
    *nout = 1;
    return 0;
}

/* The example run eagerly on fresh operands of float dtype ft (every output). */
static ax_array **run_eagerly(ax_ctx *cx, ax_prim prim, const ax_prim_example *ex, ax_dtype ft,
                              int *nout) {
    call c = {.prim = prim, .ex = ex, .out = -1};
    for (int i = 0; i < ex->nin; i++) c.fixed[i] = make_arg(cx, &ex->in[i], ft, -1, 0);
    ax_array **out = NULL;
    if (apply(cx, &c, 0, NULL, nout, &out))
        fail_msg("%s: the example fails eagerly: %s", row_name(prim), cx->err.message);
    for (int i = 0; i < ex->nin; i++) ax_array_release(c.fixed[i]);
    return out;
}

static void release_all(int n, ax_array **a) {
    for (int i = 0; i < n; i++) ax_array_release(a[i]);
    free(a);
}

/* ---------------------------------------------------------------- derivatives */

static double dot(const ax_array *a, const ax_array *b) {
    double s = 0;
    for (int64_t i = 0; i < a->size; i++) s += ax_array_get_f64(a, i) * ax_array_get_f64(b, i);
    return s;
}

static ax_array *random_like(ax_ctx *cx, const ax_array *x) {
    ax_example_arg a = {.kind = AX_ARG_FLOAT, .ndim = x->ndim, .lo = -1, .hi = 1};
    memcpy(a.shape, x->shape, (size_t)x->ndim * sizeof *x->shape);
    return make_arg(cx, &a, AX_F64, -1, 0);
}

/* fn at x + h*v (elementwise over the flat inputs): its first output. */
static ax_array *eval_shifted(ax_ctx *cx, ax_flat_fn fn, void *cl, int n, ax_array **x,
                              ax_array **v, double h) {
    ax_array *xs[MAXIN], **out = NULL;
    int nout = 0;
    for (int i = 0; i < n; i++) {
        xs[i] = ax_array_copy(cx, x[i]);
        for (int64_t k = 0; k < xs[i]->size; k++)
            ((double *)xs[i]->buf->data)[k] += h * ax_array_get_f64(v[i], k);
    }
    int rc = fn(cx, cl, n, xs, &nout, &out);
    for (int i = 0; i < n; i++) ax_array_release(xs[i]);
    assert_int_equal(rc, 0);
    for (int k = 1; k < nout; k++) ax_array_release(out[k]);
    ax_array *r = out[0];
    free(out);
    return r;
}

/* jvp(fn)(x; v) against (fn(x + hv) - fn(x - hv)) / 2h. */
static void check_jvp(ax_ctx *cx, const char *what, ax_flat_fn fn, void *cl, int n, ax_array **x,
                      ax_array **v) {
    ax_array **o = NULL, **t = NULL;
    int no = 0;
    if (ax_ad_jvp(cx, fn, cl, n, x, v, &no, &o, &t)) fail_msg("%s: %s", what, cx->err.message);
    const double h = 1e-5;
    ax_array *plus = eval_shifted(cx, fn, cl, n, x, v, h),
             *minus = eval_shifted(cx, fn, cl, n, x, v, -h);
    for (int64_t k = 0; k < t[0]->size; k++) {
        double fd = (ax_array_get_f64(plus, k) - ax_array_get_f64(minus, k)) / (2 * h);
        double got = ax_array_get_f64(t[0], k);
        if (fabs(fd - got) > 1e-5 * (1 + fabs(fd)))
            fail_msg("%s: tangent[%lld] = %.10g, finite differences give %.10g", what, (long long)k,
                     got, fd);
    }
    ax_array_release(plus);
    ax_array_release(minus);
    release_all(no, o);
    release_all(no, t);
}

/* <J v, w> == <v, J^T w> through linearize and transpose. */
static void check_transpose(ax_ctx *cx, const char *what, ax_flat_fn fn, void *cl, int n,
                            ax_array **x, ax_array **v) {
    ax_array **o = NULL, *tout = NULL, *ct[MAXIN] = {0};
    ax_linear *lin = NULL;
    int no = 0;
    if (ax_ad_linearize(cx, fn, cl, n, x, &no, &o, &lin)) fail_msg("%s: %s", what, cx->err.message);
    assert_int_equal(ax_ir_verify(cx, lin->ir), 0);
    if (ax_linear_apply(cx, lin, v, &tout)) fail_msg("%s: %s", what, cx->err.message);
    ax_array *w = random_like(cx, o[0]);
    if (ax_linear_transpose(cx, lin, &w, ct)) fail_msg("%s: transpose: %s", what, cx->err.message);
    double lhs = dot(tout, w), rhs = 0;
    for (int i = 0; i < n; i++) rhs += dot(v[i], ct[i]);
    if (fabs(lhs - rhs) > 1e-9 * (1 + fabs(lhs)))
        fail_msg("%s: <Jv, w> = %.12g but <v, J^T w> = %.12g", what, lhs, rhs);
    for (int i = 0; i < n; i++) ax_array_release(ct[i]);
    ax_array_release(w);
    ax_array_release(tout);
    release_all(no, o);
    ax_linear_free(lin);
}

/* The tangent of `inner` at x along a fixed v: a function of x, for second order. */
typedef struct first_order {
    call *inner;
    ax_array **v;
} first_order;

static int tangent_fn(ax_ctx *cx, void *closure, int nin, ax_array **in, int *nout,
                      ax_array ***out) {
    first_order *f = closure;
    ax_array **o = NULL, **t = NULL;
    int no = 0;
    if (ax_ad_jvp(cx, apply, f->inner, nin, in, f->v, &no, &o, &t)) return -1;
    release_all(no, o);
    *out = t;
    *nout = no;
    return 0;
}

/* Output k of the example as a function of its float operands: derivatives to second order. */
static void check_output_derivatives(ax_ctx *cx, ax_prim prim, const ax_prim_example *ex, int k) {
    call c = {.prim = prim, .ex = ex, .out = k};
    ax_array *x[MAXIN], *v[MAXIN], *u[MAXIN];
    int n = 0;
    for (int i = 0; i < ex->nin; i++) {
        ax_array *a = make_arg(cx, &ex->in[i], AX_F64, -1, 0);
        if (!differentiated(&ex->in[i])) {
            c.fixed[i] = a;
            continue;
        }
        x[n] = a, v[n] = random_like(cx, a), u[n] = random_like(cx, a);
        n++;
    }
    char what[128];
    const char *name = row_name(prim);
    snprintf(what, sizeof what, "%s output %d (first order)", name, k);
    check_jvp(cx, what, apply, &c, n, x, v);
    snprintf(what, sizeof what, "%s output %d (transpose of the linearization)", name, k);
    check_transpose(cx, what, apply, &c, n, x, v);
    first_order g = {.inner = &c, .v = v};
    snprintf(what, sizeof what, "%s output %d (second order)", name, k);
    check_jvp(cx, what, tangent_fn, &g, n, x, u);
    snprintf(what, sizeof what, "%s output %d (second order, transposed)", name, k);
    check_transpose(cx, what, tangent_fn, &g, n, x, u);
    for (int i = 0; i < n; i++)
        ax_array_release(x[i]), ax_array_release(v[i]), ax_array_release(u[i]);
    for (int i = 0; i < ex->nin; i++) ax_array_release(c.fixed[i]);
    assert_false(ax_error_pending(cx));
}

/* A non-differentiable row: its outputs' tangents are zero. */
static void check_zero_tangents(ax_ctx *cx, ax_prim prim, const ax_prim_example *ex) {
    call c = {.prim = prim, .ex = ex, .out = -1};
    ax_array *x[MAXIN], *v[MAXIN], **o = NULL, **t = NULL;
    int n = 0, no = 0;
    for (int i = 0; i < ex->nin; i++) {
        ax_array *a = make_arg(cx, &ex->in[i], AX_F64, -1, 0);
        if (!differentiated(&ex->in[i])) {
            c.fixed[i] = a;
            continue;
        }
        x[n] = a, v[n] = random_like(cx, a);
        n++;
    }
    if (ax_ad_jvp(cx, apply, &c, n, x, v, &no, &o, &t))
        fail_msg("%s: jvp of a non-differentiable primitive: %s", row_name(prim), cx->err.message);
    for (int k = 0; k < no; k++)
        for (int64_t e = 0; e < t[k]->size; e++)
            if (ax_array_get_f64(t[k], e) != 0)
                fail_msg("%s is not differentiable but output %d has a tangent", row_name(prim), k);
    release_all(no, o);
    release_all(no, t);
    for (int i = 0; i < n; i++) ax_array_release(x[i]), ax_array_release(v[i]);
    for (int i = 0; i < ex->nin; i++) ax_array_release(c.fixed[i]);
}

static void check_derivatives(ax_ctx *cx, ax_prim prim, const ax_prim_example *ex) {
    const ax_prim_info *info = ax_prim_get(prim);
    bool any = false;
    for (int i = 0; i < ex->nin; i++) any |= differentiated(&ex->in[i]);
    if (!any) return;
    if (info->flags & AX_PRIM_NONDIFF) {
        check_zero_tangents(cx, prim, ex);
        return;
    }
    if (ex->skip & AX_EXAMPLE_NO_FD) return;
    int nout = 0;
    ax_array **out = run_eagerly(cx, prim, ex, AX_F64, &nout);
    for (int k = 0; k < nout; k++)
        if (ax_dtype_is_float(out[k]->dtype)) check_output_derivatives(cx, prim, ex, k);
    release_all(nout, out);
}

/* ---------------------------------------------------------------- batching */

/* Example b of x along `axis`. */
static ax_array *example_of(ax_ctx *cx, ax_array *x, int axis, int b) {
    int64_t start[AX_MAX_RANK] = {0}, limit[AX_MAX_RANK], step[AX_MAX_RANK];
    for (int d = 0; d < x->ndim; d++) step[d] = 1, limit[d] = x->shape[d];
    start[axis] = b, limit[axis] = b + 1;
    ax_array *sl = ax_slice(cx, x, start, limit, step);
    ax_array *r = ax_squeeze(cx, sl, 1, (int[]){axis});
    ax_array_release(sl);
    return r;
}

static void expect_close(const char *what, int b, const ax_array *got, const ax_array *want) {
    if (!ax_shape_equal(got->ndim, got->shape, want->ndim, want->shape) ||
        got->dtype != want->dtype)
        fail_msg("%s: example %d has the wrong type", what, b);
    for (int64_t k = 0; k < got->size; k++) {
        double g = ax_array_get_f64(got, k), w = ax_array_get_f64(want, k);
        if (!(fabs(g - w) <= 1e-9 * (1 + fabs(w))) && !(isnan(g) && isnan(w)))
            fail_msg("%s: example %d element %lld is %.17g, the loop gives %.17g", what, b,
                     (long long)k, g, w);
    }
}

/* vmap with the operands in `mask` batched (at their first or last dimension) against a loop
 * over the examples. */
static void check_batch_case(ax_ctx *cx, ax_prim prim, const ax_prim_example *ex, unsigned mask,
                             bool last) {
    call c = {.prim = prim, .ex = ex, .out = -1};
    ax_array *in[MAXIN];
    int axes[MAXIN];
    for (int i = 0; i < ex->nin; i++) {
        axes[i] = mask & (1u << i) ? (last ? ex->in[i].ndim : 0) : -1;
        in[i] = make_arg(cx, &ex->in[i], AX_F64, axes[i], NB);
    }
    char what[128];
    snprintf(what, sizeof what, "vmap of %s (operands %#x batched %s)", row_name(prim), mask,
             last ? "last" : "first");
    int nout = 0, *bd = NULL;
    ax_array **out = NULL;
    if (ax_vmap(cx, apply, &c, ex->nin, in, axes, NB, &nout, &out, &bd))
        fail_msg("%s: %s", what, cx->err.message);
    for (int b = 0; b < NB; b++) {
        ax_array **want = NULL;
        int nw = 0;
        for (int i = 0; i < ex->nin; i++)
            c.fixed[i] = axes[i] >= 0 ? example_of(cx, in[i], axes[i], b) : ax_array_retain(in[i]);
        assert_int_equal(apply(cx, &c, 0, NULL, &nw, &want), 0);
        assert_int_equal(nw, nout);
        for (int j = 0; j < nout; j++) {
            ax_array *got = bd[j] >= 0 ? example_of(cx, out[j], bd[j], b) : ax_array_retain(out[j]);
            expect_close(what, b, got, want[j]);
            ax_array_release(got);
        }
        release_all(nw, want);
        for (int i = 0; i < ex->nin; i++) ax_array_release(c.fixed[i]);
    }
    release_all(nout, out);
    free(bd);
    for (int i = 0; i < ex->nin; i++) ax_array_release(in[i]);
}

static void check_batching(ax_ctx *cx, ax_prim prim, const ax_prim_example *ex) {
    for (unsigned mask = 1; mask < (1u << ex->nin); mask++)
        for (int last = 0; last < 2; last++) check_batch_case(cx, prim, ex, mask, last);
}

/* ---------------------------------------------------------------- flags */

/* A commutative row gives the same bits with its operands swapped. */
static void check_commutes(ax_ctx *cx, ax_prim prim, const ax_prim_example *ex) {
    if (ex->nin != 2) fail_msg("%s is commutative with %d operands", row_name(prim), ex->nin);
    ax_array *a = make_arg(cx, &ex->in[0], AX_F64, -1, 0),
             *b = make_arg(cx, &ex->in[1], AX_F64, -1, 0);
    ax_array *ab = ax_bind1(cx, prim, 2, (ax_array *[]){a, b}, &ex->p);
    ax_array *ba = ax_bind1(cx, prim, 2, (ax_array *[]){b, a}, &ex->p);
    assert_true(ab && ba);
    for (int64_t k = 0; k < ab->size; k++)
        if (elem_bits(ab, k) != elem_bits(ba, k))
            fail_msg("%s is marked commutative but f(a, b) != f(b, a)", row_name(prim));
    ax_array_release(a), ax_array_release(b), ax_array_release(ab), ax_array_release(ba);
}

/* ---------------------------------------------------------------- the walk */

typedef void (*example_check)(ax_ctx *cx, ax_prim prim, const ax_prim_example *ex);

/* Runs check on every example of every row; returns how many it ran. */
static int each_example(ax_ctx *cx, example_check check) {
    int n = 0;
    for (int p = 0; p < AX_P_NPRIMS; p++) {
        const ax_prim_info *info = ax_prim_get((ax_prim)p);
        for (int e = 0; e < info->nexamples; e++, n++) {
            assert_true(info->examples[e].nin <= MAXIN);
            check(cx, (ax_prim)p, &info->examples[e]);
            if (ax_error_pending(cx))
                fail_msg("%s example %d left an error: %s", info->name, e, cx->err.message);
        }
    }
    return n;
}

/* Every row is tested: by its examples, or by the tests it names. Linear rows are transposed
 * (an example with float operands), commutative ones have two operands of one type. */
static void test_every_row_is_tested(void **state) {
    (void)state;
    for (int p = 0; p < AX_P_NPRIMS; p++) {
        const ax_prim_info *info = ax_prim_get((ax_prim)p);
        if (!info->nexamples && !(info->tested_by && info->tested_by[0]))
            fail_msg("%s has no examples (ax_prim_info.examples) and names no tests", info->name);
        if (!info->nexamples) continue;
        bool transposed = false;
        for (int e = 0; e < info->nexamples; e++)
            for (int i = 0; i < info->examples[e].nin; i++)
                transposed |= differentiated(&info->examples[e].in[i]);
        if ((info->flags & AX_PRIM_LINEAR) && !transposed)
            fail_msg("%s is linear but no example has float operands to transpose", info->name);
    }
}

static void test_derivatives_match_finite_differences(void **state) {
    int n = each_example(*state, check_derivatives);
    print_message("derivatives of %d examples\n", n);
}

static void test_batching_matches_loops(void **state) {
    ax_ctx *cx = *state;
    int n = 0;
    for (int p = 0; p < AX_P_NPRIMS; p++) {
        const ax_prim_info *info = ax_prim_get((ax_prim)p);
        if (info->nexamples && info->nin != 0 && !info->batch)
            fail_msg("%s has operands but no batching rule", info->name);
        for (int e = 0; e < info->nexamples; e++, n++)
            if (info->examples[e].nin > 0) check_batching(cx, (ax_prim)p, &info->examples[e]);
    }
    print_message("batching of %d examples\n", n);
}

static void test_commutative_rows_commute(void **state) {
    ax_ctx *cx = *state;
    for (int p = 0; p < AX_P_NPRIMS; p++) {
        const ax_prim_info *info = ax_prim_get((ax_prim)p);
        if (!(info->flags & AX_PRIM_COMMUTATIVE)) continue;
        for (int e = 0; e < info->nexamples; e++)
            check_commutes(cx, (ax_prim)p, &info->examples[e]);
    }
}

/* ---------------------------------------------------------------- jit against eager */

/* One program holding every example (those without float operands in the f64 one only), each
 * on inputs of its own; compiled once, run eagerly and natively, compared bit for bit. */
static void check_jit(ax_ctx *cx, ax_dtype ft, check *c) {
    enum { CAP = 512 };
    ax_ir_builder *b = ax_ir_builder_new();
    out_desc *desc = calloc(CAP, sizeof *desc);
    ax_ir_atom *outs = calloc(CAP, sizeof *outs);
    ax_array **inputs = calloc(CAP, sizeof *inputs);
    assert_true(b && desc && outs && inputs);
    int nin = 0, nout = 0;
    for (int p = 0; p < AX_P_NPRIMS; p++) {
        const ax_prim_info *info = ax_prim_get((ax_prim)p);
        for (int e = 0; e < info->nexamples; e++) {
            const ax_prim_example *ex = &info->examples[e];
            bool floats = false;
            for (int i = 0; i < ex->nin; i++) floats |= differentiated(&ex->in[i]);
            if (!floats && ft != AX_F64) continue;
            ax_aval types[MAXIN], res[8];
            ax_ir_atom args[MAXIN];
            for (int i = 0; i < ex->nin; i++) { /* each example on inputs of its own */
                inputs[nin] = make_arg(cx, &ex->in[i], ft, -1, 0);
                ax_aval_of(&types[i], inputs[nin++]);
                args[i] = (ax_ir_atom){.var = ax_ir_add_input(b, &types[i])};
            }
            int nres = ax_prim_nout((ax_prim)p, &ex->p), vars[8];
            if (ax_prim_infer(cx, (ax_prim)p, ex->nin, types, &ex->p, res))
                fail_msg("%s example %d: %s", info->name, e, cx->err.message);
            assert_int_equal(
                ax_ir_add_eqn(b, (ax_prim)p, &ex->p, ex->nin, args, nres, res, vars, 0, NULL), 0);
            for (int k = 0; k < nres; k++) {
                desc[nout] = (out_desc){0};
                snprintf(desc[nout].label, sizeof desc[nout].label, "%s example %d output %d (%s)",
                         info->name, e, k, ax_dtype_short(ft));
                outs[nout++] = (ax_ir_atom){.var = vars[k]};
            }
            assert_true(nin < CAP - MAXIN && nout < CAP - 8);
        }
    }
    ax_ir *ir = ax_ir_builder_finish(b, nout, outs);
    assert_non_null(ir);
    if (ax_ir_verify(cx, ir))
        fail_msg("the examples' program does not verify: %s", cx->err.message);
    int fusable = check_compiled(ir);
    ax_jit_info info = run_both(cx, ir, inputs, desc, c);
    print_message("%s: %d examples' equations (%d fusable), %d loops, %d eager steps\n",
                  ax_dtype_short(ft), ir->neqns, fusable, info.nloops, info.neager);
    assert_true(info.native);
    release_all(nin, inputs);
    ax_ir_release(ir);
    free(desc), free(outs);
}

static void test_jit_matches_eager(void **state) {
    check c = {0};
    check_jit(*state, AX_F64, &c);
    check_jit(*state, AX_F32, &c);
    if (c.mismatches) fail_msg("%d elements differ between eager and jit", c.mismatches);
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
        if (!ok) fail_msg("%s: %s", row_name(as), why);
        return;
    }
    if (ok)
        fail_msg("the code generator accepted %s where its lowering does not fit", row_name(as));
    if (!strstr(why, "internal error") || !strstr(why, row_name(as)))
        fail_msg("refusing %s: \"%s\"", row_name(as), why);
}

/* The code generator never guesses: a node whose row's lowering is an eager step, or an
 * operation of another arity or kind, is refused (it once compiled any binary operation it did
 * not know as >=). */
static void test_codegen_refuses_what_rows_do_not_lower(void **state) {
    ax_ctx *cx = *state;
    char why[256];
    ax_gccjit *api = ax_gccjit_open(why, sizeof why);
    if (!api) fail_msg("libgccjit: %s", why);
    const ax_prim elementwise_as[] = {AX_P_SORT,       AX_P_FLOOR_DIV, AX_P_ADD,
                                      AX_P_REDUCE_SUM, AX_P_SCAN,      AX_P_BROADCAST_IN_DIM};
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
        cmocka_unit_test(test_every_row_is_tested),
        cmocka_unit_test(test_every_row_has_a_lowering),
        cmocka_unit_test_setup_teardown(test_derivatives_match_finite_differences, setup, teardown),
        cmocka_unit_test_setup_teardown(test_batching_matches_loops, setup, teardown),
        cmocka_unit_test_setup_teardown(test_commutative_rows_commute, setup, teardown),
        cmocka_unit_test_setup_teardown(test_jit_matches_eager, setup, teardown),
        cmocka_unit_test_setup_teardown(test_codegen_refuses_what_rows_do_not_lower, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

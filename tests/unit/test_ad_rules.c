/* Differentiation rules of every differentiable primitive, checked numerically in f64:
 * - JVP against central finite differences, first and second order;
 * - transpose (VJP) against the JVP by the dot-product test <J v, w> == <v, J^T w>;
 * and a walk of the table that fails when a differentiable primitive lacks a JVP rule, a linear
 * one lacks a transpose rule, or a primitive with operands lacks a batching rule. */
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
#include "../../compiler/ad_rules.h"
#include "window_case.h"
#include "../../compiler/linalg_rules.h"

typedef struct spec {
    ax_prim prim;
    int nin;
    int ndim[4];
    int64_t shape[4][5];
    double lo, hi; /* the domain values are drawn from */
    ax_params p;
    bool int_index; /* input 1 is an index array (gather) */
} spec;

#define S1(n)                                                                                      \
    {1}, {                                                                                         \
        { n }                                                                                      \
    }
#define U(P, lo, hi)                                                                               \
    { P, 1, {1}, {{3}}, lo, hi, {0}, false }
#define B(P, lo, hi)                                                                               \
    { P, 2, {1, 1}, {{3}, {3}}, lo, hi, {0}, false }

static const spec specs[] = {
    U(AX_P_NEG, -2, 2),
    U(AX_P_ABS, 0.2, 2),
    U(AX_P_EXP, -2, 2),
    U(AX_P_EXP2, -2, 2),
    U(AX_P_LOG, 0.2, 3),
    U(AX_P_LOG1P, -0.5, 2),
    U(AX_P_EXPM1, -2, 2),
    U(AX_P_SIN, -3, 3),
    U(AX_P_COS, -3, 3),
    U(AX_P_TAN, -1, 1),
    U(AX_P_ASIN, -0.8, 0.8),
    U(AX_P_ACOS, -0.8, 0.8),
    U(AX_P_ATAN, -3, 3),
    U(AX_P_SINH, -2, 2),
    U(AX_P_COSH, -2, 2),
    U(AX_P_TANH, -2, 2),
    U(AX_P_ASINH, -2, 2),
    U(AX_P_ACOSH, 1.5, 3),
    U(AX_P_ATANH, -0.8, 0.8),
    U(AX_P_LOGISTIC, -3, 3),
    U(AX_P_SQRT, 0.3, 3),
    U(AX_P_RSQRT, 0.3, 3),
    U(AX_P_CBRT, 0.3, 3),
    U(AX_P_ERF, -2, 2),
    U(AX_P_ERFC, -2, 2),
    U(AX_P_ERF_INV, -0.8, 0.8),
    U(AX_P_LGAMMA, 0.5, 4),
    U(AX_P_DIGAMMA, 0.5, 4),
    U(AX_P_SQUARE, -2, 2),
    U(AX_P_SIGN, 0.2, 2),
    U(AX_P_FLOOR, 0.2, 0.8),
    U(AX_P_CEIL, 0.2, 0.8),
    U(AX_P_ROUND, 0.1, 0.4),
    {AX_P_INTEGER_POW, 1, {1}, {{3}}, -2, 2, {.k = 3}, false},
    {AX_P_INTEGER_POW, 1, {1}, {{3}}, 0.5, 2, {.k = -2}, false},
    B(AX_P_ADD, -2, 2),
    B(AX_P_SUB, -2, 2),
    B(AX_P_MUL, -2, 2),
    B(AX_P_DIV, 0.5, 2),
    B(AX_P_POW, 0.5, 2),
    B(AX_P_MAX, -2, 2),
    B(AX_P_MIN, -2, 2),
    B(AX_P_ATAN2, 0.3, 2),
    B(AX_P_REM, 1.1, 1.9),
    B(AX_P_MOD, 1.1, 1.9),
    B(AX_P_FLOOR_DIV, 1.1, 1.9),
    {AX_P_MUL, 2, {1, 0}, {{3}, {0}}, -2, 2, {0}, false},
    {AX_P_SELECT, 3, {1, 1, 1}, {{3}, {3}, {3}}, -2, 2, {0}, false},
    {AX_P_CLAMP, 3, {0, 1, 0}, {{0}, {4}, {0}}, -2, 2, {0}, false},
    {AX_P_CONVERT, 1, {1}, {{3}}, -2, 2, {.dtype = AX_F64}, false},
    {AX_P_REDUCE_SUM, 1, {2}, {{2, 3}}, -2, 2, {.naxes = 1, .axes = {1}}, false},
    {AX_P_REDUCE_PROD, 1, {2}, {{2, 3}}, 0.5, 2, {.naxes = 2, .axes = {0, 1}}, false},
    {AX_P_REDUCE_MAX, 1, {2}, {{2, 3}}, -2, 2, {.naxes = 1, .axes = {0}}, false},
    {AX_P_REDUCE_MIN, 1, {2}, {{2, 3}}, -2, 2, {.naxes = 1, .axes = {1}}, false},
    {AX_P_CUMSUM, 1, {2}, {{2, 3}}, -2, 2, {.naxes = 1, .axes = {1}, .flag = 1}, false},
    {AX_P_CUMPROD, 1, {1}, {{4}}, 0.5, 2, {.naxes = 1, .axes = {0}}, false},
    {AX_P_CUMMAX, 1, {1}, {{5}}, -2, 2, {.naxes = 1, .axes = {0}}, false},
    {AX_P_CUMMIN, 1, {1}, {{5}}, -2, 2, {.naxes = 1, .axes = {0}, .flag = 1}, false},
    {AX_P_RESHAPE, 1, {2}, {{2, 3}}, -2, 2, {.ndim = 1, .shape = {6}}, false},
    {AX_P_TRANSPOSE, 1, {2}, {{2, 3}}, -2, 2, {.naxes = 2, .axes = {1, 0}}, false},
    {AX_P_BROADCAST_IN_DIM,
     1,
     {1},
     {{3}},
     -2,
     2,
     {.ndim = 2, .shape = {2, 3}, .naxes = 1, .axes = {1}},
     false},
    {AX_P_CONCATENATE, 2, {1, 1}, {{2}, {3}}, -2, 2, {.naxes = 1, .axes = {0}}, false},
    {AX_P_SLICE, 1, {1}, {{7}}, -2, 2, {.ndim = 1, .lo = {1}, .hi = {6}, .step = {2}}, false},
    {AX_P_PAD,
     2,
     {1, 0},
     {{3}, {0}},
     -2,
     2,
     {.ndim = 1, .lo = {1}, .hi = {-1}, .step = {1}},
     false},
    {AX_P_SQUEEZE, 1, {2}, {{1, 3}}, -2, 2, {.naxes = 1, .axes = {0}}, false},
    {AX_P_EXPAND_DIMS, 1, {1}, {{3}}, -2, 2, {.naxes = 1, .axes = {1}}, false},
    {AX_P_REV, 1, {1}, {{3}}, -2, 2, {.naxes = 1, .axes = {0}}, false},
    {AX_P_GATHER, 2, {2, 2}, {{3, 2}, {4, 1}}, -2, 2, {.naxes = 1, .axes = {0}}, true},
    {AX_P_SCATTER, 3, {1, 2, 1}, {{4}, {3, 1}, {3}}, 0.5, 2,
     {.naxes = 1, .axes = {0}, .flag = AX_SCATTER_SET}, true},
    {AX_P_SCATTER, 3, {1, 2, 1}, {{4}, {4, 1}, {4}}, 0.5, 2,
     {.naxes = 1, .axes = {0}, .flag = AX_SCATTER_ADD}, true},
    {AX_P_SCATTER, 3, {1, 2, 1}, {{4}, {4, 1}, {4}}, 0.5, 2,
     {.naxes = 1, .axes = {0}, .flag = AX_SCATTER_MUL}, true},
    {AX_P_SCATTER, 3, {1, 2, 1}, {{4}, {3, 1}, {3}}, -2, 2,
     {.naxes = 1, .axes = {0}, .flag = AX_SCATTER_MAX}, true},
    {AX_P_SCATTER, 3, {1, 2, 1}, {{4}, {3, 1}, {3}}, -2, 2,
     {.naxes = 1, .axes = {0}, .flag = AX_SCATTER_MIN}, true},
    {AX_P_DOT_GENERAL,
     2,
     {2, 2},
     {{2, 3}, {3, 2}},
     -2,
     2,
     {.dot = {.ncontract = 1, .lhs_contract = {1}, .rhs_contract = {0}}},
     false},
    {AX_P_DOT_GENERAL,
     2,
     {3, 3},
     {{2, 2, 3}, {2, 3, 2}},
     -2,
     2,
     {.dot = {.ncontract = 1,
              .lhs_contract = {2},
              .rhs_contract = {1},
              .nbatch = 1,
              .lhs_batch = {0},
              .rhs_batch = {0}}},
     false},
    {AX_P_SORT, 1, {1}, {{4}}, -2, 2, {.naxes = 1, .axes = {0}}, false},
    /* made well-conditioned in check_spec: positive definite, a strong diagonal */
    {AX_P_CHOLESKY, 1, {2}, {{3, 3}}, -1, 1, {0}, false},
    {AX_P_CHOLESKY, 1, {3}, {{2, 3, 3}}, -1, 1, {0}, false},
    {AX_P_TRIANGULAR_SOLVE, 2, {2, 2}, {{3, 3}, {3, 2}}, -1, 1, {.flag = AX_TRSOLVE_LOWER}, false},
    {AX_P_TRIANGULAR_SOLVE, 2, {2, 2}, {{3, 3}, {3, 2}}, -1, 1,
     {.flag = AX_TRSOLVE_TRANSPOSE_A}, false},
    {AX_P_TRIANGULAR_SOLVE, 2, {3, 3}, {{2, 3, 3}, {2, 3, 1}}, -1, 1,
     {.flag = AX_TRSOLVE_LOWER | AX_TRSOLVE_TRANSPOSE_A}, false},
    {AX_P_TRIANGULAR_SOLVE, 2, {2, 2}, {{3, 3}, {3, 2}}, -1, 1,
     {.flag = AX_TRSOLVE_UNIT_DIAGONAL}, false},
    {AX_P_TRIANGULAR_SOLVE, 2, {2, 2}, {{3, 3}, {2, 3}}, -1, 1,
     {.flag = AX_TRSOLVE_RIGHT_SIDE}, false},
    {AX_P_TRIANGULAR_SOLVE, 2, {3, 3}, {{2, 3, 3}, {2, 1, 3}}, -1, 1,
     {.flag = AX_TRSOLVE_RIGHT_SIDE | AX_TRSOLVE_LOWER | AX_TRSOLVE_TRANSPOSE_A |
              AX_TRSOLVE_UNIT_DIAGONAL}, false},
};

/* Convolutions and windowed reductions (window_case.h). */
static const window_case window_cases[] = {
    /* 1-d NCW: strided, padded, rhs-dilated */
    {AX_P_CONV_GENERAL_DILATED, 2, 3, {{2, 2, 5}, {3, 2, 2}}, {{0, 1, 2}, {0, 1, 2}, {0, 1, 2}},
     {2}, {1}, {0}, {1}, {2}, {0}, 1, 1, 0},
    /* 2-d NHWC / HWIO with lhs dilation and uneven padding */
    {AX_P_CONV_GENERAL_DILATED, 2, 4, {{1, 4, 3, 2}, {2, 2, 2, 3}},
     {{0, 3, 1, 2}, {3, 2, 0, 1}, {0, 3, 1, 2}}, {1, 2}, {1, 0}, {1, 1}, {2, 1}, {1, 1}, {0}, 1, 1,
     0},
    /* feature groups, batch groups */
    {AX_P_CONV_GENERAL_DILATED, 2, 3, {{1, 4, 4}, {4, 2, 3}}, {{0, 1, 2}, {0, 1, 2}, {0, 1, 2}},
     {1}, {1}, {1}, {1}, {1}, {0}, 2, 1, 0},
    {AX_P_CONV_GENERAL_DILATED, 2, 3, {{4, 2, 4}, {4, 2, 2}}, {{0, 1, 2}, {0, 1, 2}, {0, 1, 2}},
     {1}, {0}, {0}, {1}, {1}, {0}, 1, 2, 0},
    /* 3-d, negative padding */
    {AX_P_CONV_GENERAL_DILATED, 2, 5, {{1, 1, 3, 4, 3}, {2, 1, 2, 2, 2}},
     {{0, 1, 2, 3, 4}, {0, 1, 2, 3, 4}, {0, 1, 4, 3, 2}}, {1, 2, 1}, {0, -1, 1}, {1, 0, 0},
     {1, 1, 1}, {1, 1, 1}, {0}, 1, 1, 0},
    {AX_P_REDUCE_WINDOW_SUM, 1, 2, {{3, 4}}, {{0}}, {1, 2}, {1, 0}, {0, 1}, {2, 1}, {1, 1}, {2, 2},
     1, 1, 0},
    {AX_P_REDUCE_WINDOW_MAX, 1, 2, {{4, 5}}, {{0}}, {2, 1}, {0, 1}, {1, 0}, {1, 1}, {1, 2}, {2, 3},
     1, 1, 0},
    {AX_P_REDUCE_WINDOW_MIN, 1, 2, {{4, 5}}, {{0}}, {1, 2}, {1, 1}, {0, 0}, {1, 1}, {1, 1}, {2, 2},
     1, 1, 0},
    {AX_P_SELECT_AND_GATHER_ADD, 2, 2, {{4, 5}, {4, 5}}, {{0}}, {2, 1}, {1, 0}, {0, 1}, {1, 1},
     {1, 1}, {2, 2}, 1, 1, AX_SELECT_GE},
    {AX_P_SELECT_AND_SCATTER_ADD, 2, 2, {{2, 5}, {4, 5}}, {{0}}, {2, 1}, {1, 0}, {0, 1}, {1, 1},
     {1, 1}, {2, 2}, 1, 1, AX_SELECT_LE},
};

/* The spec of a window case. */
static spec window_spec(const window_case *w) {
    spec s = {.prim = w->prim, .nin = w->nin, .lo = -2, .hi = 2, .p = window_case_params(w)};
    for (int i = 0; i < w->nin; i++) {
        s.ndim[i] = w->ndim;
        memcpy(s.shape[i], w->shape[i], sizeof w->shape[i]);
    }
    return s;
}

/* The factorisations, each output of square, tall, wide and batched operands. */
typedef struct out_spec {
    spec s;
    int out; /* the output checked */
} out_spec;

static const out_spec out_specs[] = {
    {{AX_P_LU, 1, {2}, {{3, 3}}, -2, 2, {0}, false}, 0},
    {{AX_P_LU, 1, {3}, {{2, 4, 3}}, -2, 2, {0}, false}, 0},
    {{AX_P_LU, 1, {2}, {{2, 4}}, -2, 2, {0}, false}, 0},
    {{AX_P_EIGH, 1, {2}, {{3, 3}}, -2, 2, {.flag = AX_EIGH_LOWER}, false}, 0},
    {{AX_P_EIGH, 1, {2}, {{3, 3}}, -2, 2, {.flag = AX_EIGH_LOWER}, false}, 1},
    {{AX_P_EIGH, 1, {3}, {{2, 3, 3}}, -2, 2, {0}, false}, 0},
    {{AX_P_EIGH, 1, {3}, {{2, 3, 3}}, -2, 2, {0}, false}, 1},
    {{AX_P_SVD, 1, {2}, {{4, 3}}, -2, 2, {.flag = AX_SVD_COMPUTE_UV}, false}, 0},
    {{AX_P_SVD, 1, {2}, {{4, 3}}, -2, 2, {.flag = AX_SVD_COMPUTE_UV}, false}, 1},
    {{AX_P_SVD, 1, {2}, {{4, 3}}, -2, 2, {.flag = AX_SVD_COMPUTE_UV}, false}, 2},
    {{AX_P_SVD, 1, {2}, {{2, 3}}, -2, 2, {.flag = AX_SVD_COMPUTE_UV}, false}, 1},
    {{AX_P_SVD, 1, {2}, {{2, 3}}, -2, 2, {.flag = AX_SVD_COMPUTE_UV}, false}, 2},
    {{AX_P_SVD, 1, {3}, {{2, 3, 3}}, -2, 2, {.flag = AX_SVD_COMPUTE_UV | AX_SVD_FULL_MATRICES},
      false},
     2},
    {{AX_P_SVD, 1, {2}, {{3, 4}}, -2, 2, {0}, false}, 0},
    {{AX_P_QR, 1, {2}, {{4, 3}}, -2, 2, {0}, false}, 0},
    {{AX_P_QR, 1, {2}, {{4, 3}}, -2, 2, {0}, false}, 1},
    {{AX_P_QR, 1, {2}, {{4, 2}}, -2, 2, {.flag = AX_QR_FULL_MATRICES}, false}, 0},
    {{AX_P_QR, 1, {2}, {{4, 2}}, -2, 2, {.flag = AX_QR_FULL_MATRICES}, false}, 1},
    {{AX_P_QR, 1, {2}, {{2, 4}}, -2, 2, {0}, false}, 0},
    {{AX_P_QR, 1, {3}, {{2, 2, 3}}, -2, 2, {.flag = AX_QR_FULL_MATRICES}, false}, 1},
    {{AX_P_QR, 1, {3}, {{2, 3, 3}}, -2, 2, {.flag = AX_QR_FULL_MATRICES}, false}, 0},
};

/* ---- a function of flat inputs that binds one primitive (the non-differentiated inputs,
 * e.g. gather's indices and select's predicate, are fixed) ---- */

typedef struct prim_fn {
    const spec *s;
    int out;            /* the output of s->prim the function returns */
    ax_array *fixed[4]; /* inputs that are not differentiated (NULL: differentiated) */
} prim_fn;

static int apply_prim(ax_ctx *cx, void *closure, int nin, ax_array **in, int *nout,
                      ax_array ***out) {
    prim_fn *f = closure;
    ax_array *args[4];
    for (int i = 0, k = 0; i < f->s->nin; i++) args[i] = f->fixed[i] ? f->fixed[i] : in[k++];
    (void)nin;
    ax_array *all[4] = {0};
    int n = ax_prim_nout(f->s->prim, &f->s->p);
    *out = calloc(1, sizeof **out);
    *nout = 1;
    if (ax_bind(cx, f->s->prim, f->s->nin, args, &f->s->p, all)) return -1;
    for (int k = 0; k < n; k++) {
        if (k == f->out)
            (*out)[0] = all[k];
        else
            ax_array_release(all[k]);
    }
    return 0;
}

/* The tangent of `inner` at x along a fixed v: a function of x, for second order. */
typedef struct first_order {
    prim_fn *inner;
    ax_array **v;
    int n;
} first_order;

static int tangent_fn(ax_ctx *cx, void *closure, int nin, ax_array **in, int *nout,
                      ax_array ***out) {
    first_order *f = closure;
    ax_array **o = NULL, **t = NULL;
    int no = 0;
    if (ax_ad_jvp(cx, apply_prim, f->inner, nin, in, f->v, &no, &o, &t)) return -1;
    ax_array_release(o[0]);
    free(o);
    *out = t;
    *nout = no;
    return 0;
}

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static double uniform(double lo, double hi) {
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return lo + (hi - lo) * (double)(rng >> 11) / 9007199254740992.0;
}

static ax_array *random_array(ax_ctx *cx, int ndim, const int64_t *shape, double lo, double hi) {
    ax_array *a = ax_array_new(cx, AX_F64, ndim, shape);
    for (int64_t i = 0; i < a->size; i++) ((double *)a->buf->data)[i] = uniform(lo, hi);
    return a;
}

static double dot(const ax_array *a, const ax_array *b) {
    double s = 0;
    for (int64_t i = 0; i < a->size; i++) s += ax_array_get_f64(a, i) * ax_array_get_f64(b, i);
    return s;
}

/* Evaluates fn at x + h*v (elementwise over the flat inputs). */
static ax_array *eval_shifted(ax_ctx *cx, ax_flat_fn fn, void *cl, int n, ax_array **x,
                              ax_array **v, double h) {
    ax_array *xs[4], **out = NULL;
    int nout = 0;
    for (int i = 0; i < n; i++) {
        xs[i] = ax_array_copy(cx, x[i]);
        for (int64_t k = 0; k < xs[i]->size; k++)
            ((double *)xs[i]->buf->data)[k] += h * ax_array_get_f64(v[i], k);
    }
    int rc = fn(cx, cl, n, xs, &nout, &out);
    for (int i = 0; i < n; i++) ax_array_release(xs[i]);
    assert_int_equal(rc, 0);
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
    for (int i = 0; i < no; i++) ax_array_release(o[i]), ax_array_release(t[i]);
    free(o);
    free(t);
}

/* <J v, w> == <v, J^T w> through linearize and transpose. */
static void check_transpose(ax_ctx *cx, const char *what, ax_flat_fn fn, void *cl, int n,
                            ax_array **x, ax_array **v) {
    ax_array **o = NULL, *tout = NULL, *ct[4] = {0};
    ax_linear *lin = NULL;
    int no = 0;
    if (ax_ad_linearize(cx, fn, cl, n, x, &no, &o, &lin)) fail_msg("%s: %s", what, cx->err.message);
    assert_int_equal(ax_ir_verify(cx, lin->ir), 0);
    if (ax_linear_apply(cx, lin, v, &tout)) fail_msg("%s: %s", what, cx->err.message);
    ax_array *w = random_array(cx, o[0]->ndim, o[0]->shape, -1, 1);
    if (ax_linear_transpose(cx, lin, &w, ct)) fail_msg("%s: transpose: %s", what, cx->err.message);
    double lhs = dot(tout, w), rhs = 0;
    for (int i = 0; i < n; i++) rhs += dot(v[i], ct[i]);
    if (fabs(lhs - rhs) > 1e-9 * (1 + fabs(lhs)))
        fail_msg("%s: <Jv, w> = %.12g but <v, J^T w> = %.12g", what, lhs, rhs);
    for (int i = 0; i < n; i++) ax_array_release(ct[i]);
    ax_array_release(w);
    ax_array_release(tout);
    ax_array_release(o[0]);
    free(o);
    ax_linear_free(lin);
}

/* Square matrices (..., n, n) made safe to factor and solve with: x x^T + n I (positive
 * definite and symmetric), which also gives a triangle a strong diagonal. */
static void condition(ax_array *x) {
    int64_t n = x->shape[x->ndim - 1];
    double *d = (double *)x->buf->data, m[64];
    for (int64_t b = 0; b < x->size / (n * n); b++, d += n * n) {
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < n; j++) {
                double acc = i == j ? (double)n : 0;
                for (int64_t k = 0; k < n; k++) acc += d[i * n + k] * d[j * n + k];
                m[i * n + j] = acc;
            }
        memcpy(d, m, (size_t)(n * n) * sizeof *d);
    }
}

static void check_spec(ax_ctx *cx, const spec *s, int out) {
    prim_fn f = {.s = s, .out = out};
    ax_array *x[4], *v[4], *u[4];
    int n = 0;
    const char *name = ax_prim_get(s->prim)->name;
    for (int i = 0; i < s->nin; i++) {
        bool fixed = (s->int_index && i == 1) || (s->prim == AX_P_SELECT && i == 0);
        if (s->int_index && i == 1) {
            f.fixed[i] = ax_array_new(cx, AX_I32, s->ndim[i], s->shape[i]);
            int32_t idx[] = {2, 0, 1, 2};
            memcpy(f.fixed[i]->buf->data, idx, sizeof(int32_t) * (size_t)f.fixed[i]->size);
        } else if (fixed) {
            f.fixed[i] = ax_array_new(cx, AX_BOOL, s->ndim[i], s->shape[i]);
            for (int64_t k = 0; k < f.fixed[i]->size; k++)
                ((uint8_t *)f.fixed[i]->buf->data)[k] = k % 2;
        } else {
            x[n] = random_array(cx, s->ndim[i], s->shape[i], s->lo, s->hi);
            v[n] = random_array(cx, s->ndim[i], s->shape[i], -1, 1);
            u[n] = random_array(cx, s->ndim[i], s->shape[i], -1, 1);
            n++;
        }
    }
    if (s->prim == AX_P_CLAMP) {
        /* keep lo < hi: clamp's bounds are meant to be ordered */
        for (int64_t k = 0; k < x[0]->size; k++)
            ((double *)x[0]->buf->data)[k] = -1 + uniform(-0.3, 0.3);
        for (int64_t k = 0; k < x[2]->size; k++)
            ((double *)x[2]->buf->data)[k] = 1 + uniform(-0.3, 0.3);
    }
    if (s->prim == AX_P_CHOLESKY || s->prim == AX_P_TRIANGULAR_SOLVE) condition(x[0]);
    char what[96];
    snprintf(what, sizeof what, "%s (first order)", name);
    check_jvp(cx, what, apply_prim, &f, n, x, v);
    snprintf(what, sizeof what, "%s (transpose of the linearization)", name);
    check_transpose(cx, what, apply_prim, &f, n, x, v);
    first_order g = {.inner = &f, .v = v, .n = n};
    snprintf(what, sizeof what, "%s (second order)", name);
    check_jvp(cx, what, tangent_fn, &g, n, x, u);
    snprintf(what, sizeof what, "%s (second order, transposed)", name);
    check_transpose(cx, what, tangent_fn, &g, n, x, u);
    for (int i = 0; i < n; i++)
        ax_array_release(x[i]), ax_array_release(v[i]), ax_array_release(u[i]);
    for (int i = 0; i < s->nin; i++) ax_array_release(f.fixed[i]);
}

static void test_rules_match_finite_differences(void **state) {
    ax_ctx *cx = *state;
    for (size_t i = 0; i < sizeof specs / sizeof *specs; i++) {
        check_spec(cx, &specs[i], 0);
        assert_false(ax_error_pending(cx));
    }
    for (size_t i = 0; i < sizeof out_specs / sizeof *out_specs; i++) {
        check_spec(cx, &out_specs[i].s, out_specs[i].out);
        assert_false(ax_error_pending(cx));
    }
    for (size_t i = 0; i < sizeof window_cases / sizeof *window_cases; i++) {
        spec s = window_spec(&window_cases[i]);
        check_spec(cx, &s, 0);
        assert_false(ax_error_pending(cx));
    }
}

/* Every differentiable primitive is covered by a spec above and has a JVP rule; every linear
 * one has a transpose rule; every primitive with operands has a batching rule. */
static void test_table_has_every_rule(void **state) {
    (void)state;
    for (int p = 0; p < AX_P_NPRIMS; p++) {
        const ax_prim_info *info = ax_prim_get((ax_prim)p);
        /* custom_linear only lives in the linear IR of reverse mode, which vmap never sees */
        if (info->nin != 0 && !info->batch && p != AX_P_CUSTOM_LINEAR)
            fail_msg("%s has no batching rule", info->name);
        if (info->flags & AX_PRIM_LINEAR && !info->transpose)
            fail_msg("%s is linear but has no transpose rule", info->name);
        if (info->flags & AX_PRIM_NONDIFF) continue;
        if (!info->jvp) fail_msg("%s is differentiable but has no JVP rule", info->name);
        bool tested = false;
        for (size_t i = 0; i < sizeof specs / sizeof *specs; i++)
            tested |= specs[i].prim == (ax_prim)p;
        for (size_t i = 0; i < sizeof window_cases / sizeof *window_cases; i++)
            tested |= window_cases[i].prim == (ax_prim)p;
        for (size_t i = 0; i < sizeof out_specs / sizeof *out_specs; i++)
            tested |= out_specs[i].s.prim == (ax_prim)p;
        if (!tested && p != AX_P_DYNAMIC_SLICE &&
            p != AX_P_DYNAMIC_UPDATE_SLICE && p != AX_P_NEXTAFTER &&
            p != AX_P_STOP_GRADIENT && p != AX_P_CUSTOM_LINEAR &&
            /* carries a user's function and rule: tests/lang/custom_rules_transforms.ax */
            p != AX_P_CUSTOM_CALL &&
            /* an effect with no outputs: tests/unit/test_debug_callback.c */
            p != AX_P_DEBUG_CALLBACK &&
            /* sub-programs: tests/unit/test_control_flow.c checks them by finite differences */
            !(p == AX_P_COND || p == AX_P_WHILE || p == AX_P_SCAN || p == AX_P_CALL) &&
            /* pmap and collectives: tests/unit/test_collectives.c */
            !(info->flags & (AX_PRIM_COLLECTIVE | AX_PRIM_MAPPED)))
            fail_msg("%s has no finite-difference check in this test", info->name);
    }
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
        cmocka_unit_test(test_rules_match_finite_differences),
        cmocka_unit_test(test_table_has_every_rule),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}

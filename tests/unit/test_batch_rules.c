/* Batching rules: for every primitive, vmap over each non-empty subset of its operands, with the
 * batch dimension first and last, must equal an explicit loop over the examples. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "window_case.h"
#include "../../compiler/linalg_rules.h"
#include "../../compiler/vmap.h"
#include "../../runtime/shape_ops.h"

#define NB 3 /* examples */

typedef struct spec {
    ax_prim prim;
    int nin;
    int ndim[4];
    int64_t shape[4][5];
    ax_dtype dtype[4];
    double lo[4], hi[4]; /* value ranges (ints: [lo, hi] inclusive) */
    ax_params p;
} spec;

#define F AX_F32
#define I AX_I32
#define U1(P)                                                                                      \
    {                                                                                              \
        P, 1, {2}, {{2, 3}}, {F}, {0.2}, {2}, {                                                    \
            0                                                                                      \
        }                                                                                          \
    }
#define B2(P)                                                                                      \
    {                                                                                              \
        P, 2, {2, 2}, {{2, 3}, {2, 3}}, {F, F}, {0.5, 0.5}, {2, 2}, {                              \
            0                                                                                      \
        }                                                                                          \
    }

static const spec specs[] = {
    U1(AX_P_NEG),
    U1(AX_P_ABS),
    U1(AX_P_SIGN),
    U1(AX_P_EXP),
    U1(AX_P_EXP2),
    U1(AX_P_LOG),
    U1(AX_P_LOG1P),
    U1(AX_P_EXPM1),
    U1(AX_P_SIN),
    U1(AX_P_COS),
    U1(AX_P_TAN),
    U1(AX_P_ATAN),
    U1(AX_P_SINH),
    U1(AX_P_COSH),
    U1(AX_P_TANH),
    U1(AX_P_ASINH),
    U1(AX_P_LOGISTIC),
    U1(AX_P_SQRT),
    U1(AX_P_RSQRT),
    U1(AX_P_CBRT),
    U1(AX_P_FLOOR),
    U1(AX_P_CEIL),
    U1(AX_P_ROUND),
    U1(AX_P_ERF),
    U1(AX_P_ERFC),
    U1(AX_P_LGAMMA),
    U1(AX_P_DIGAMMA),
    U1(AX_P_IS_FINITE),
    U1(AX_P_SQUARE),
    U1(AX_P_STOP_GRADIENT),
    {AX_P_ASIN, 1, {1}, {{3}}, {F}, {-0.9}, {0.9}, {0}},
    {AX_P_ACOS, 1, {1}, {{3}}, {F}, {-0.9}, {0.9}, {0}},
    {AX_P_ATANH, 1, {1}, {{3}}, {F}, {-0.9}, {0.9}, {0}},
    {AX_P_ERF_INV, 1, {1}, {{3}}, {F}, {-0.9}, {0.9}, {0}},
    {AX_P_ACOSH, 1, {1}, {{3}}, {F}, {1.5}, {3}, {0}},
    {AX_P_NOT, 1, {1}, {{3}}, {I}, {-5}, {5}, {0}},
    {AX_P_INTEGER_POW, 1, {1}, {{3}}, {F}, {-2}, {2}, {.k = 3}},
    B2(AX_P_ADD),
    B2(AX_P_SUB),
    B2(AX_P_MUL),
    B2(AX_P_DIV),
    B2(AX_P_FLOOR_DIV),
    B2(AX_P_REM),
    B2(AX_P_MOD),
    B2(AX_P_POW),
    B2(AX_P_MAX),
    B2(AX_P_MIN),
    B2(AX_P_ATAN2),
    B2(AX_P_NEXTAFTER),
    B2(AX_P_EQ),
    B2(AX_P_NE),
    B2(AX_P_LT),
    B2(AX_P_LE),
    B2(AX_P_GT),
    B2(AX_P_GE),
    {AX_P_AND, 2, {1, 1}, {{3}, {3}}, {I, I}, {0, 0}, {9, 9}, {0}},
    {AX_P_OR, 2, {1, 1}, {{3}, {3}}, {I, I}, {0, 0}, {9, 9}, {0}},
    {AX_P_XOR, 2, {1, 1}, {{3}, {3}}, {I, I}, {0, 0}, {9, 9}, {0}},
    {AX_P_SHL, 2, {1, 1}, {{3}, {3}}, {I, I}, {0, 0}, {9, 5}, {0}},
    {AX_P_SHR_LOGICAL, 2, {1, 1}, {{3}, {3}}, {I, I}, {-9, 0}, {9, 5}, {0}},
    {AX_P_SHR_ARITH, 2, {1, 1}, {{3}, {3}}, {I, I}, {-9, 0}, {9, 5}, {0}},
    {AX_P_MUL, 2, {1, 0}, {{3}, {0}}, {F, F}, {-2, -2}, {2, 2}, {0}},
    {AX_P_SELECT, 3, {1, 1, 1}, {{3}, {3}, {3}}, {AX_BOOL, F, F}, {0, -1, -1}, {1, 1, 1}, {0}},
    {AX_P_CLAMP, 3, {0, 1, 0}, {{0}, {4}, {0}}, {F, F, F}, {-1, -2, 0.5}, {-0.5, 2, 1}, {0}},
    {AX_P_CONVERT, 1, {1}, {{3}}, {F}, {-9}, {9}, {.dtype = AX_I32}},
    {AX_P_BITCAST, 1, {1}, {{3}}, {F}, {-9}, {9}, {.dtype = AX_I32}},
    {AX_P_REDUCE_SUM, 1, {2}, {{2, 3}}, {F}, {-2}, {2}, {.naxes = 1, .axes = {1}}},
    {AX_P_REDUCE_PROD, 1, {2}, {{2, 3}}, {F}, {-2}, {2}, {.naxes = 2, .axes = {0, 1}}},
    {AX_P_REDUCE_MAX, 1, {2}, {{2, 3}}, {F}, {-2}, {2}, {.naxes = 1, .axes = {0}}},
    {AX_P_REDUCE_MIN, 1, {2}, {{2, 3}}, {F}, {-2}, {2}, {.naxes = 0}},
    {AX_P_REDUCE_AND, 1, {2}, {{2, 3}}, {AX_BOOL}, {0}, {1}, {.naxes = 1, .axes = {1}}},
    {AX_P_REDUCE_OR, 1, {2}, {{2, 3}}, {AX_BOOL}, {0}, {1}, {.naxes = 1, .axes = {0}}},
    {AX_P_ARGMAX, 1, {2}, {{2, 3}}, {F}, {-2}, {2}, {.naxes = 1, .axes = {1}, .dtype = AX_I32}},
    {AX_P_ARGMIN, 1, {2}, {{2, 3}}, {F}, {-2}, {2}, {.naxes = 1, .axes = {0}, .dtype = AX_I32}},
    {AX_P_CUMSUM, 1, {2}, {{2, 3}}, {F}, {-2}, {2}, {.naxes = 1, .axes = {1}}},
    {AX_P_CUMPROD, 1, {2}, {{2, 3}}, {F}, {-2}, {2}, {.naxes = 1, .axes = {0}, .flag = 1}},
    {AX_P_CUMMAX, 1, {1}, {{4}}, {F}, {-2}, {2}, {.naxes = 1, .axes = {0}}},
    {AX_P_CUMMIN, 1, {1}, {{4}}, {F}, {-2}, {2}, {.naxes = 1, .axes = {0}}},
    {AX_P_RESHAPE, 1, {2}, {{2, 3}}, {F}, {-2}, {2}, {.ndim = 2, .shape = {3, 2}}},
    {AX_P_TRANSPOSE, 1, {2}, {{2, 3}}, {F}, {-2}, {2}, {.naxes = 2, .axes = {1, 0}}},
    {AX_P_BROADCAST_IN_DIM,
     1,
     {1},
     {{3}},
     {F},
     {-2},
     {2},
     {.ndim = 2, .shape = {2, 3}, .naxes = 1, .axes = {1}}},
    {AX_P_CONCATENATE,
     2,
     {2, 2},
     {{2, 1}, {2, 3}},
     {F, F},
     {-2, -2},
     {2, 2},
     {.naxes = 1, .axes = {1}}},
    {AX_P_SLICE, 1, {1}, {{7}}, {F}, {-2}, {2}, {.ndim = 1, .lo = {1}, .hi = {6}, .step = {2}}},
    {AX_P_PAD,
     2,
     {1, 0},
     {{3}, {0}},
     {F, F},
     {-2, -2},
     {2, 2},
     {.ndim = 1, .lo = {1}, .hi = {-1}, .step = {1}}},
    {AX_P_SQUEEZE, 1, {2}, {{1, 3}}, {F}, {-2}, {2}, {.naxes = 1, .axes = {0}}},
    {AX_P_EXPAND_DIMS, 1, {1}, {{3}}, {F}, {-2}, {2}, {.naxes = 1, .axes = {1}}},
    {AX_P_REV, 1, {2}, {{2, 3}}, {F}, {-2}, {2}, {.naxes = 1, .axes = {1}}},
    {AX_P_GATHER, 2, {2, 2}, {{3, 2}, {4, 1}}, {F, I}, {-2, 0}, {2, 2}, {.naxes = 1, .axes = {0}}},
    {AX_P_GATHER, 2, {2, 2}, {{3, 2}, {2, 1}}, {F, I}, {-2, 0}, {2, 1}, {.naxes = 1, .axes = {1}}},
    {AX_P_SCATTER,
     3,
     {1, 2, 1},
     {{4}, {3, 1}, {3}},
     {F, I, F},
     {-2, 0, -2},
     {2, 3, 2},
     {.naxes = 1, .axes = {0}, .flag = AX_SCATTER_ADD}},
    {AX_P_SCATTER,
     3,
     {2, 2, 2},
     {{4, 2}, {2, 1}, {2, 2}},
     {F, I, F},
     {-2, 0, -2},
     {2, 3, 2},
     {.naxes = 1, .axes = {0}, .flag = AX_SCATTER_SET}},
    {AX_P_DYNAMIC_SLICE,
     2,
     {1, 0},
     {{5}, {0}},
     {F, I},
     {-2, -1},
     {2, 4},
     {.ndim = 1, .shape = {2}}},
    {AX_P_DYNAMIC_UPDATE_SLICE,
     3,
     {1, 1, 0},
     {{5}, {2}, {0}},
     {F, F, I},
     {-2, -2, -1},
     {2, 2, 4},
     {0}},
    {AX_P_DOT_GENERAL,
     2,
     {2, 1},
     {{2, 3}, {3}},
     {F, F},
     {-2, -2},
     {2, 2},
     {.dot = {.ncontract = 1, .lhs_contract = {1}, .rhs_contract = {0}}}},
    {AX_P_DOT_GENERAL,
     2,
     {3, 3},
     {{2, 2, 3}, {2, 3, 2}},
     {F, F},
     {-2, -2},
     {2, 2},
     {.dot = {.ncontract = 1,
              .lhs_contract = {2},
              .rhs_contract = {1},
              .nbatch = 1,
              .lhs_batch = {0},
              .rhs_batch = {0}}}},
    {AX_P_CHOLESKY, 1, {2}, {{2, 2}}, {F}, {0}, {0}, {0}},
    {AX_P_TRIANGULAR_SOLVE, 2, {2, 2}, {{2, 2}, {2, 3}}, {F, F}, {0, -2}, {0, 2},
     {.flag = AX_TRSOLVE_LOWER}},
    {AX_P_TRIANGULAR_SOLVE, 2, {3, 3}, {{2, 2, 2}, {2, 3, 2}}, {F, F}, {0, -2}, {0, 2},
     {.flag = AX_TRSOLVE_RIGHT_SIDE | AX_TRSOLVE_TRANSPOSE_A | AX_TRSOLVE_UNIT_DIAGONAL}},
    {AX_P_LU, 1, {2}, {{3, 2}}, {F}, {-2}, {2}, {0}},
    {AX_P_EIGH, 1, {2}, {{3, 3}}, {F}, {-2}, {2}, {.flag = AX_EIGH_LOWER}},
    {AX_P_SVD, 1, {2}, {{3, 2}}, {F}, {-2}, {2}, {.flag = AX_SVD_COMPUTE_UV}},
    {AX_P_QR, 1, {2}, {{2, 3}}, {F}, {-2}, {2}, {.flag = AX_QR_FULL_MATRICES}},
    {AX_P_SORT, 1, {2}, {{2, 3}}, {F}, {-2}, {2}, {.naxes = 1, .axes = {1}}},
    {AX_P_THREEFRY2X32, 4, {0, 0, 1, 1}, {{0}, {0}, {3}, {3}}, {AX_U32, AX_U32, AX_U32, AX_U32},
     {0, 0, 0, 0}, {9, 9, 9, 9}, {0}},
    {AX_P_ARGSORT, 1, {2}, {{2, 3}}, {F}, {-2}, {2}, {.naxes = 1, .axes = {0}, .dtype = AX_I32}},
};

/* Convolutions (plain, feature- and batch-grouped, NHWC) and windowed reductions
 * (window_case.h). */
static const window_case window_cases[] = {
    {AX_P_CONV_GENERAL_DILATED, 2, 4, {{1, 4, 3, 3, 0}, {4, 2, 2, 2}},
     {{0, 1, 2, 3, 0}, {0, 1, 2, 3, 0}, {0, 1, 2, 3}}, {1, 1}, {1, 0}, {0, 1}, {0}, {0}, {0}, 2, 1, 0},
    {AX_P_CONV_GENERAL_DILATED, 2, 4, {{4, 2, 3, 3, 0}, {4, 2, 2, 2}},
     {{0, 1, 2, 3, 0}, {0, 1, 2, 3, 0}, {0, 1, 2, 3}}, {1, 2}, {0, 1}, {0, 0}, {0}, {0}, {0}, 1, 2, 0},
    {AX_P_CONV_GENERAL_DILATED, 2, 4, {{2, 3, 3, 2, 0}, {2, 2, 2, 3}},
     {{0, 3, 1, 2, 0}, {3, 2, 0, 1, 0}, {0, 3, 1, 2}}, {1, 1}, {1, 1}, {1, 1}, {0}, {0}, {0}, 1, 1, 0},
    {AX_P_REDUCE_WINDOW_SUM, 1, 2, {{4, 5}}, {{0}}, {1, 2}, {1, 0}, {0, 1}, {0}, {0}, {2, 2}, 1, 1, 0},
    {AX_P_REDUCE_WINDOW_MAX, 1, 2, {{4, 5}}, {{0}}, {2, 1}, {0, 1}, {1, 0}, {0}, {0}, {2, 3}, 1, 1, 0},
    {AX_P_REDUCE_WINDOW_MIN, 1, 2, {{4, 5}}, {{0}}, {1, 1}, {0, 0}, {0, 0}, {0}, {0}, {3, 2}, 1, 1, 0},
    {AX_P_SELECT_AND_GATHER_ADD, 2, 2, {{4, 5}, {4, 5}}, {{0}}, {2, 1}, {1, 0}, {0, 1}, {0}, {0},
     {2, 2}, 1, 1, 0},
    {AX_P_SELECT_AND_SCATTER_ADD, 2, 2, {{2, 5}, {4, 5}}, {{0}}, {2, 1}, {1, 0}, {0, 1}, {0}, {0},
     {2, 2}, 1, 1, 0},
};

static spec window_spec(const window_case *w) {
    spec s = {.prim = w->prim, .nin = w->nin, .p = window_case_params(w)};
    for (int i = 0; i < w->nin; i++) {
        s.ndim[i] = w->ndim;
        memcpy(s.shape[i], w->shape[i], sizeof w->shape[i]);
        s.dtype[i] = F;
        s.lo[i] = -2;
        s.hi[i] = 2;
    }
    return s;
}

static uint64_t rng = 0x2545F4914F6CDD1Dull;
static double uniform(double lo, double hi) {
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return lo + (hi - lo) * (double)(rng >> 11) / 9007199254740992.0;
}

/* An input of one example's shape with the batch dimension inserted at bdim (-1: none). */
static ax_array *make_input(ax_ctx *cx, const spec *s, int i, int bdim) {
    int64_t shape[AX_MAX_RANK];
    int n = 0;
    for (int d = 0; d <= s->ndim[i]; d++) {
        if (d == bdim) shape[n++] = NB;
        if (d < s->ndim[i]) shape[n++] = s->shape[i][d];
    }
    ax_array *a = ax_array_new(cx, s->dtype[i], n, shape);
    for (int64_t k = 0; k < a->size; k++) {
        double v = uniform(s->lo[i], s->hi[i]);
        if (s->prim == AX_P_CHOLESKY || (s->prim == AX_P_TRIANGULAR_SOLVE && i == 0))
            v = k % 4 == 0 || k % 4 == 3 ? 3 + uniform(0, 1) : uniform(0, 0.5);
        if (!ax_dtype_is_float(s->dtype[i])) v = floor(v + 0.5);
        ax_convert_element(s->dtype[i],
                           (char *)a->buf->data + k * (int64_t)ax_dtype_size(s->dtype[i]), AX_F64,
                           &v);
    }
    return a;
}

/* Example b of x along `axis`. */
static ax_array *example(ax_ctx *cx, ax_array *x, int axis, int b) {
    int64_t start[AX_MAX_RANK] = {0}, limit[AX_MAX_RANK], step[AX_MAX_RANK];
    for (int d = 0; d < x->ndim; d++) step[d] = 1;
    for (int d = 0; d < x->ndim; d++) limit[d] = x->shape[d];
    start[axis] = b, limit[axis] = b + 1;
    ax_array *sl = ax_slice(cx, x, start, limit, step);
    ax_array *r = ax_squeeze(cx, sl, 1, (int[]){axis});
    ax_array_release(sl);
    return r;
}

static int apply_prim(ax_ctx *cx, void *closure, int nin, ax_array **in, int *nout,
                      ax_array ***out) {
    const spec *s = closure;
    (void)nin;
    *nout = ax_prim_nout(s->prim, &s->p);
    *out = calloc(4, sizeof **out);
    return ax_bind(cx, s->prim, s->nin, in, &s->p, *out);
}

static void check_case(ax_ctx *cx, const spec *s, unsigned mask, bool last) {
    ax_array *in[4];
    int axes[4];
    for (int i = 0; i < s->nin; i++) {
        axes[i] = mask & (1u << i) ? (last ? s->ndim[i] : 0) : -1;
        in[i] = make_input(cx, s, i, axes[i]);
    }
    int nout = 0, *bd = NULL;
    ax_array **out = NULL;
    const char *name = ax_prim_get(s->prim)->name;
    if (ax_vmap(cx, apply_prim, (void *)s, s->nin, in, axes, NB, &nout, &out, &bd))
        fail_msg("vmap of %s (operands %#x, batch %s): %s", name, mask, last ? "last" : "first",
                 cx->err.message);
    for (int b = 0; b < NB; b++) {
        ax_array *ex[4], **want = NULL;
        int nw = 0;
        for (int i = 0; i < s->nin; i++)
            ex[i] = axes[i] >= 0 ? example(cx, in[i], axes[i], b) : ax_array_retain(in[i]);
        assert_int_equal(apply_prim(cx, (void *)s, s->nin, ex, &nw, &want), 0);
        for (int j = 0; j < nout; j++) {
            ax_array *got = bd[j] >= 0 ? example(cx, out[j], bd[j], b) : ax_array_retain(out[j]);
            if (!ax_shape_equal(got->ndim, got->shape, want[j]->ndim, want[j]->shape) ||
                got->dtype != want[j]->dtype)
                fail_msg("%s (operands %#x): example %d has the wrong type", name, mask, b);
            for (int64_t k = 0; k < got->size; k++) {
                double g = ax_array_get_f64(got, k), w = ax_array_get_f64(want[j], k);
                if (!(fabs(g - w) <= 1e-5 * (1 + fabs(w))) && !(isnan(g) && isnan(w)))
                    fail_msg("%s (operands %#x, batch %s): example %d element %lld is %g, the loop "
                             "gives %g",
                             name, mask, last ? "last" : "first", b, (long long)k, g, w);
            }
            ax_array_release(got);
            ax_array_release(want[j]);
        }
        free(want);
        for (int i = 0; i < s->nin; i++) ax_array_release(ex[i]);
    }
    for (int j = 0; j < nout; j++) ax_array_release(out[j]);
    free(out);
    free(bd);
    for (int i = 0; i < s->nin; i++) ax_array_release(in[i]);
}

static void test_rules_match_loops(void **state) {
    ax_ctx *cx = *state;
    for (size_t i = 0; i < sizeof specs / sizeof *specs; i++)
        for (unsigned mask = 1; mask < (1u << specs[i].nin); mask++)
            for (int last = 0; last < 2; last++) check_case(cx, &specs[i], mask, last);
    for (size_t i = 0; i < sizeof window_cases / sizeof *window_cases; i++) {
        spec s = window_spec(&window_cases[i]);
        for (unsigned mask = 1; mask < (1u << s.nin); mask++)
            for (int last = 0; last < 2; last++) check_case(cx, &s, mask, last);
    }
}

/* Every primitive with operands has a case above. */
static void test_every_primitive_is_checked(void **state) {
    (void)state;
    for (int p = 0; p < AX_P_NPRIMS; p++) {
        const ax_prim_info *info = ax_prim_get((ax_prim)p);
        if (info->nin == 0) continue;          /* iota: nothing to batch */
        if (p == AX_P_CUSTOM_LINEAR) continue; /* reverse mode's linear IR only */
        /* a user's function and rule: tests/lang/custom_rules_transforms.ax */
        if (p == AX_P_CUSTOM_CALL) continue;
        if (p == AX_P_DEBUG_CALLBACK) continue; /* an effect: tests/unit/test_debug_callback.c */
        /* sub-programs: tests/unit/test_control_flow.c checks them against loops */
        if (p == AX_P_COND || p == AX_P_WHILE || p == AX_P_SCAN || p == AX_P_CALL) continue;
        /* pmap and collectives: tests/unit/test_collectives.c checks them against loops */
        if (info->flags & (AX_PRIM_COLLECTIVE | AX_PRIM_MAPPED)) continue;
        bool found = false;
        for (size_t i = 0; i < sizeof specs / sizeof *specs; i++)
            found |= specs[i].prim == (ax_prim)p;
        for (size_t i = 0; i < sizeof window_cases / sizeof *window_cases; i++)
            found |= window_cases[i].prim == (ax_prim)p;
        if (!found) fail_msg("%s has no batching check", info->name);
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
        cmocka_unit_test(test_rules_match_loops),
        cmocka_unit_test(test_every_primitive_is_checked),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}

/* jit's native code against the eager kernels (the reference), and the accuracy of its f32
 * math.
 *
 * 1. Every row of the primitive table, on every dtype its shape rule accepts, as one-equation
 *    cases on shapes that exercise the generated loops: full blocks of 16 lanes and tails
 *    ([37], [4,33]), short rows ([7], [3,5]), rank 0, rank-0 operands broadcast against arrays,
 *    literal operands. All cases share one IR per group, so the test pays few compiles. Every
 *    equation the code generator accepts must end up in a native loop (checked on the fusion
 *    plan); matrix products run on OpenBLAS exactly as eagerly (random values: the same bits).
 * 2. A corpus of composed programs, traced from C functions that call ax_bind: an MLP loss,
 *    softmax cross-entropy, normalisations, reductions over every kind of axis, transposes,
 *    iota masks, integer wrapping, shifts, conversions, dot_general in every layout, rank 0,
 *    empty arrays, outputs that are inputs or literals, non-contiguous arguments, loops big
 *    enough to be split over threads.
 * 3. f32 exp, log, log1p, expm1, tanh, logistic, sin, cos, erf, erf_inv, sqrt, rsqrt and pow
 *    over ~100k inputs each against correctly rounded results.
 * 4. Ctrl-C during a compile: the compile is abandoned, the call fails with KeyboardInterrupt.
 *
 * Comparison (jit_test_util.h): the same bits, for every dtype, reductions included (they
 * follow one algorithm, runtime/reduce.h): NaN where NaN, infinities and the sign of zero
 * exactly. tests/unit/test_jit_fuzz.c runs random programs the same way. */
#include <float.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <errno.h>

#include <cmocka.h>

#include "../../compiler/linalg_rules.h"
#include "../../compiler/trace_ir.h"
#include "../../compiler/quickgen.h"
#include "jit_test_util.h"
#include "vecmath_test_util.h"

/* ================================================================ 1. every primitive */

typedef struct pcase {
    ax_prim prim;
    int nin;
    int ndim[4];
    int64_t shape[4][3];
    ax_params p;
    domain dom[4];
    int index_max;    /* for D_INDEX inputs (i32) */
    unsigned bool_in; /* inputs that are bool whatever the case's dtype (select's predicate) */
    int lit;          /* 1 + the input given as a literal operand, or 0 */
    unsigned dtypes;  /* dtypes tried (bit per ax_dtype), 0: all */
} pcase;

#define ALL_DT 0u
#define FLOATS ((1u << AX_F32) | (1u << AX_F64))

#define DOT(l0, l1, r0, r1, lc, rc)                                                                \
    {                                                                                              \
        AX_P_DOT_GENERAL, 2, {2, 2}, {{l0, l1}, {r0, r1}},                                         \
            {.dot = {.ncontract = 1, .lhs_contract = {lc}, .rhs_contract = {rc}}},                 \
            {D_SMALL, D_SMALL}, 0, 0, 0, 0                                                         \
    }

static const pcase other_cases[] = {
    {AX_P_SELECT, 3, {1, 1, 1}, {{37}, {37}, {37}}, {0}, {0}, 0, 1, 0, 0},
    {AX_P_SELECT, 3, {0, 2, 2}, {{0}, {4, 33}, {4, 33}}, {0}, {0}, 0, 1, 0, 0},
    {AX_P_SELECT, 3, {2, 2, 2}, {{3, 5}, {3, 5}, {3, 5}}, {0}, {0}, 0, 1, 0, 0},
    {AX_P_SELECT, 3, {0, 0, 0}, {{0}, {0}, {0}}, {0}, {0}, 0, 1, 0, 0},
    {AX_P_CLAMP, 3, {0, 1, 0}, {{0}, {37}, {0}}, {0}, {0}, 0, 0, 0, 0},
    {AX_P_CLAMP, 3, {1, 1, 1}, {{37}, {37}, {37}}, {0}, {0}, 0, 0, 0, 0},
    {AX_P_CLAMP, 3, {0, 2, 0}, {{0}, {4, 33}, {0}}, {0}, {0}, 0, 0, 1, 0},
    {AX_P_CLAMP, 3, {0, 0, 0}, {{0}, {0}, {0}}, {0}, {0}, 0, 0, 0, 0},
    {AX_P_ARGMAX, 1, {2}, {{4, 9}}, {.naxes = 1, .axes = {1}, .dtype = AX_I32}, {0}, 0, 0, 0, 0},
    {AX_P_ARGMAX, 1, {2}, {{4, 9}}, {.naxes = 1, .axes = {0}, .dtype = AX_I64}, {0}, 0, 0, 0, 0},
    {AX_P_ARGMIN, 1, {2}, {{4, 9}}, {.naxes = 1, .axes = {1}, .dtype = AX_I32}, {0}, 0, 0, 0, 0},
    {AX_P_ARGMIN, 1, {1}, {{37}}, {.naxes = 1, .axes = {0}, .dtype = AX_I32}, {0}, 0, 0, 0, 0},
    {AX_P_CUMSUM, 1, {2}, {{4, 9}}, {.naxes = 1, .axes = {1}}, {D_EXACT}, 0, 0, 0, 0},
    {AX_P_CUMSUM, 1, {2}, {{4, 9}}, {.naxes = 1, .axes = {0}, .flag = 1}, {D_EXACT}, 0, 0, 0, 0},
    {AX_P_CUMPROD, 1, {1}, {{9}}, {.naxes = 1, .axes = {0}}, {0}, 0, 0, 0, 0},
    {AX_P_CUMPROD, 1, {2}, {{3, 9}}, {.naxes = 1, .axes = {1}, .flag = 1}, {0}, 0, 0, 0, 0},
    {AX_P_CUMMAX, 1, {1}, {{9}}, {.naxes = 1, .axes = {0}}, {0}, 0, 0, 0, 0},
    {AX_P_CUMMAX, 1, {2}, {{3, 9}}, {.naxes = 1, .axes = {0}, .flag = 1}, {0}, 0, 0, 0, 0},
    {AX_P_CUMMIN, 1, {1}, {{9}}, {.naxes = 1, .axes = {0}, .flag = 1}, {0}, 0, 0, 0, 0},
    {AX_P_RESHAPE, 1, {2}, {{5, 7}}, {.ndim = 1, .shape = {35}}, {0}, 0, 0, 0, 0},
    {AX_P_RESHAPE, 1, {2}, {{4, 33}}, {.ndim = 3, .shape = {2, 2, 33}}, {0}, 0, 0, 0, 0},
    {AX_P_RESHAPE, 1, {0}, {{0}}, {.ndim = 2, .shape = {1, 1}}, {0}, 0, 0, 0, 0},
    {AX_P_TRANSPOSE, 1, {2}, {{5, 7}}, {.naxes = 2, .axes = {1, 0}}, {0}, 0, 0, 0, 0},
    {AX_P_TRANSPOSE, 1, {3}, {{3, 5, 7}}, {.naxes = 3, .axes = {2, 0, 1}}, {0}, 0, 0, 0, 0},
    {AX_P_TRANSPOSE, 1, {2}, {{4, 33}}, {.naxes = 2, .axes = {1, 0}}, {0}, 0, 0, 0, 0},
    {AX_P_BROADCAST_IN_DIM,
     1,
     {1},
     {{7}},
     {.ndim = 2, .shape = {5, 7}, .naxes = 1, .axes = {1}},
     {0},
     0,
     0,
     0,
     0},
    {AX_P_BROADCAST_IN_DIM,
     1,
     {1},
     {{5}},
     {.ndim = 2, .shape = {5, 33}, .naxes = 1, .axes = {0}},
     {0},
     0,
     0,
     0,
     0},
    {AX_P_BROADCAST_IN_DIM, 1, {0}, {{0}}, {.ndim = 2, .shape = {4, 33}}, {0}, 0, 0, 0, 0},
    {AX_P_BROADCAST_IN_DIM,
     1,
     {2},
     {{1, 7}},
     {.ndim = 3, .shape = {3, 2, 7}, .naxes = 2, .axes = {1, 2}},
     {0},
     0,
     0,
     0,
     0},
    {AX_P_CONCATENATE, 2, {1, 1}, {{5}, {7}}, {.naxes = 1, .axes = {0}}, {0}, 0, 0, 0, 0},
    {AX_P_CONCATENATE, 2, {2, 2}, {{2, 3}, {2, 4}}, {.naxes = 1, .axes = {1}}, {0}, 0, 0, 0, 0},
    {AX_P_SLICE, 1, {1}, {{37}}, {.ndim = 1, .lo = {1}, .hi = {30}, .step = {3}}, {0}, 0, 0, 0, 0},
    {AX_P_SLICE,
     1,
     {2},
     {{4, 33}},
     {.ndim = 2, .lo = {1, 2}, .hi = {3, 33}, .step = {1, 5}},
     {0},
     0,
     0,
     0,
     0},
    {AX_P_PAD,
     2,
     {1, 0},
     {{7}, {0}},
     {.ndim = 1, .lo = {2}, .hi = {-1}, .step = {1}},
     {0},
     0,
     0,
     0,
     0},
    {AX_P_PAD,
     2,
     {2, 0},
     {{3, 5}, {0}},
     {.ndim = 2, .lo = {1, 0}, .hi = {0, 2}, .step = {0, 1}},
     {0},
     0,
     0,
     2,
     0},
    {AX_P_SQUEEZE, 1, {2}, {{1, 7}}, {.naxes = 1, .axes = {0}}, {0}, 0, 0, 0, 0},
    {AX_P_SQUEEZE, 1, {3}, {{3, 1, 5}}, {.naxes = 1, .axes = {1}}, {0}, 0, 0, 0, 0},
    {AX_P_EXPAND_DIMS, 1, {1}, {{7}}, {.naxes = 1, .axes = {1}}, {0}, 0, 0, 0, 0},
    {AX_P_EXPAND_DIMS, 1, {2}, {{3, 5}}, {.naxes = 1, .axes = {0}}, {0}, 0, 0, 0, 0},
    {AX_P_REV, 1, {1}, {{7}}, {.naxes = 1, .axes = {0}}, {0}, 0, 0, 0, 0},
    {AX_P_REV, 1, {2}, {{3, 5}}, {.naxes = 2, .axes = {0, 1}}, {0}, 0, 0, 0, 0},
    {AX_P_GATHER, 2, {2, 2}, {{5, 3}, {4, 1}}, {.naxes = 1, .axes = {0}}, {0, D_INDEX}, 5, 0, 0, 0},
    {AX_P_GATHER,
     2,
     {2, 3},
     {{5, 3}, {2, 2, 1}},
     {.naxes = 1, .axes = {1}},
     {0, D_INDEX},
     3,
     0,
     0,
     0},
    {AX_P_SCATTER,
     3,
     {1, 2, 1},
     {{6}, {4, 1}, {4}},
     {.naxes = 1, .axes = {0}, .flag = AX_SCATTER_SET},
     {0, D_INDEX},
     6,
     0,
     0,
     0},
    {AX_P_SCATTER,
     3,
     {1, 2, 1},
     {{6}, {4, 1}, {4}},
     {.naxes = 1, .axes = {0}, .flag = AX_SCATTER_ADD},
     {D_EXACT, D_INDEX, D_EXACT},
     6,
     0,
     0,
     0},
    {AX_P_SCATTER,
     3,
     {1, 2, 1},
     {{6}, {4, 1}, {4}},
     {.naxes = 1, .axes = {0}, .flag = AX_SCATTER_MUL},
     {D_POW2, D_INDEX, D_POW2},
     6,
     0,
     0,
     0},
    {AX_P_SCATTER,
     3,
     {1, 2, 1},
     {{6}, {4, 1}, {4}},
     {.naxes = 1, .axes = {0}, .flag = AX_SCATTER_MIN},
     {0, D_INDEX},
     6,
     0,
     0,
     0},
    {AX_P_SCATTER,
     3,
     {2, 2, 2},
     {{6, 3}, {4, 1}, {4, 3}},
     {.naxes = 1, .axes = {0}, .flag = AX_SCATTER_MAX},
     {0, D_INDEX},
     6,
     0,
     0,
     0},
    {AX_P_DYNAMIC_SLICE,
     2,
     {1, 0},
     {{9}, {0}},
     {.ndim = 1, .shape = {4}},
     {0, D_INDEX},
     12,
     0,
     0,
     0},
    {AX_P_DYNAMIC_SLICE,
     3,
     {2, 0, 0},
     {{4, 6}, {0}, {0}},
     {.ndim = 2, .shape = {2, 3}},
     {0, D_INDEX, D_INDEX},
     6,
     0,
     0,
     0},
    {AX_P_DYNAMIC_UPDATE_SLICE, 3, {1, 1, 0}, {{9}, {3}, {0}}, {0}, {0, 0, D_INDEX}, 12, 0, 0, 0},
    {AX_P_IOTA,
     0,
     {0},
     {{0}},
     {.ndim = 2, .shape = {5, 7}, .naxes = 1, .axes = {1}},
     {0},
     0,
     0,
     0,
     0},
    {AX_P_IOTA,
     0,
     {0},
     {{0}},
     {.ndim = 1, .shape = {37}, .naxes = 1, .axes = {0}},
     {0},
     0,
     0,
     0,
     0},
    {AX_P_IOTA,
     0,
     {0},
     {{0}},
     {.ndim = 2, .shape = {40, 9}, .naxes = 1, .axes = {0}},
     {0},
     0,
     0,
     0,
     0},
    {AX_P_IOTA,
     0,
     {0},
     {{0}},
     {.ndim = 2, .shape = {0, 3}, .naxes = 1, .axes = {0}},
     {0},
     0,
     0,
     0,
     0},
    DOT(5, 3, 3, 4, 1, 0),
    DOT(3, 5, 3, 4, 0, 0),
    DOT(5, 3, 4, 3, 1, 1),
    DOT(3, 5, 4, 3, 0, 1),
    DOT(17, 33, 33, 19, 1, 0),
    {AX_P_DOT_GENERAL,
     2,
     {1, 2},
     {{3}, {3, 4}},
     {.dot = {.ncontract = 1, .lhs_contract = {0}, .rhs_contract = {0}}},
     {D_SMALL, D_SMALL},
     0,
     0,
     0,
     0},
    {AX_P_DOT_GENERAL,
     2,
     {1, 1},
     {{37}, {37}},
     {.dot = {.ncontract = 1, .lhs_contract = {0}, .rhs_contract = {0}}},
     {D_SMALL, D_SMALL},
     0,
     0,
     0,
     0},
    {AX_P_DOT_GENERAL,
     2,
     {3, 3},
     {{2, 5, 3}, {2, 3, 4}},
     {.dot = {.ncontract = 1,
              .lhs_contract = {2},
              .rhs_contract = {1},
              .nbatch = 1,
              .lhs_batch = {0},
              .rhs_batch = {0}}},
     {D_SMALL, D_SMALL},
     0,
     0,
     0,
     0},
    {AX_P_DOT_GENERAL, /* batch dims not leading */
     2,
     {3, 3},
     {{5, 2, 3}, {3, 2, 4}},
     {.dot = {.ncontract = 1,
              .lhs_contract = {2},
              .rhs_contract = {0},
              .nbatch = 1,
              .lhs_batch = {1},
              .rhs_batch = {1}}},
     {D_SMALL, D_SMALL},
     0,
     0,
     0,
     0},
    {AX_P_DOT_GENERAL, /* two contracting dims */
     2,
     {3, 2},
     {{2, 3, 4}, {3, 2}},
     {.dot = {.ncontract = 2, .lhs_contract = {0, 1}, .rhs_contract = {1, 0}}},
     {D_SMALL, D_SMALL},
     0,
     0,
     0,
     0},
    {AX_P_CHOLESKY, 1, {2}, {{3, 3}}, {0}, {D_SPD}, 0, 0, 0, FLOATS},
    {AX_P_CHOLESKY, 1, {3}, {{2, 4, 4}}, {0}, {D_SPD}, 0, 0, 0, FLOATS},
    {AX_P_TRIANGULAR_SOLVE,
     2,
     {2, 2},
     {{3, 3}, {3, 4}},
     {.flag = AX_TRSOLVE_LOWER},
     {D_TRI, D_SMALL},
     0,
     0,
     0,
     FLOATS},
    {AX_P_TRIANGULAR_SOLVE,
     2,
     {2, 2},
     {{3, 3}, {4, 3}},
     {.flag = AX_TRSOLVE_RIGHT_SIDE | AX_TRSOLVE_UNIT_DIAGONAL},
     {D_TRI, D_SMALL},
     0,
     0,
     0,
     FLOATS},
    {AX_P_TRIANGULAR_SOLVE,
     2,
     {3, 3},
     {{2, 3, 3}, {2, 3, 2}},
     {.flag = AX_TRSOLVE_TRANSPOSE_A},
     {D_TRI, D_SMALL},
     0,
     0,
     0,
     FLOATS},
    {AX_P_LU, 1, {2}, {{4, 3}}, {0}, {D_SMALL}, 0, 0, 0, FLOATS},
    {AX_P_EIGH, 1, {3}, {{2, 3, 3}}, {.flag = AX_EIGH_LOWER}, {D_SMALL}, 0, 0, 0, FLOATS},
    {AX_P_SVD, 1, {2}, {{3, 4}}, {.flag = AX_SVD_COMPUTE_UV}, {D_SMALL}, 0, 0, 0, FLOATS},
    {AX_P_QR, 1, {2}, {{4, 3}}, {.flag = AX_QR_FULL_MATRICES}, {D_SMALL}, 0, 0, 0, FLOATS},
    {AX_P_SORT, 1, {1}, {{9}}, {.naxes = 1, .axes = {0}}, {0}, 0, 0, 0, 0},
    {AX_P_SORT, 1, {2}, {{4, 9}}, {.naxes = 1, .axes = {0}, .flag = 1}, {0}, 0, 0, 0, 0},
    {AX_P_ARGSORT, 1, {1}, {{9}}, {.naxes = 1, .axes = {0}, .dtype = AX_I32}, {0}, 0, 0, 0, 0},
    {AX_P_ARGSORT,
     1,
     {2},
     {{4, 9}},
     {.naxes = 1, .axes = {1}, .flag = 1, .dtype = AX_I64},
     {0},
     0,
     0,
     0,
     0},
    {AX_P_THREEFRY2X32, 4, {0, 0, 1, 1}, {{0}, {0}, {9}, {9}}, {0}, {0}, 0, 0, 0, 1u << AX_U32},
    {AX_P_THREEFRY2X32, 4, {1, 1, 1, 1}, {{37}, {37}, {37}, {37}}, {0}, {0}, 0, 0, 0, 1u << AX_U32},
    /* eager steps between the loops */
    {AX_P_CONV_GENERAL_DILATED, 2, {3, 3}, {{2, 3, 7}, {4, 3, 3}},
     {.ndim = 3, .step = {2}, .lo = {1}, .hi = {0},
      .conv = {.lhs_spec = {0, 1, 2}, .rhs_spec = {0, 1, 2}, .out_spec = {0, 2, 1},
               .lhs_dilation = {1}, .rhs_dilation = {1}, .feature_group_count = 1,
               .batch_group_count = 1}},
     {0}, 0, 0, 0, 0},
    {AX_P_REDUCE_WINDOW_SUM, 1, {2}, {{5, 7}},
     {.ndim = 2, .shape = {2, 2}, .step = {1, 2}, .lo = {1, 0}, .hi = {0, 1},
      .conv = {.lhs_dilation = {1, 1}, .rhs_dilation = {1, 1}}},
     {0}, 0, 0, 0, 0},
    {AX_P_REDUCE_WINDOW_MAX, 1, {2}, {{5, 7}},
     {.ndim = 2, .shape = {2, 3}, .step = {2, 1},
      .conv = {.lhs_dilation = {1, 1}, .rhs_dilation = {1, 1}}},
     {0}, 0, 0, 0, 0},
    {AX_P_REDUCE_WINDOW_MIN, 1, {2}, {{5, 7}},
     {.ndim = 2, .shape = {3, 1}, .step = {1, 1},
      .conv = {.lhs_dilation = {1, 2}, .rhs_dilation = {1, 1}}},
     {0}, 0, 0, 0, 0},
    {AX_P_SELECT_AND_GATHER_ADD, 2, {2, 2}, {{5, 7}, {5, 7}},
     {.ndim = 2, .shape = {2, 2}, .step = {2, 2},
      .conv = {.lhs_dilation = {1, 1}, .rhs_dilation = {1, 1}}},
     {0}, 0, 0, 0, FLOATS},
    {AX_P_SELECT_AND_SCATTER_ADD, 2, {2, 2}, {{2, 3}, {5, 7}},
     {.ndim = 2, .shape = {2, 2}, .step = {2, 2},
      .conv = {.lhs_dilation = {1, 1}, .rhs_dilation = {1, 1}}},
     {0}, 0, 0, 0, FLOATS},
};

/* Everything Part 1 adds to one IR. Cases are added in chunks: each chunk's inputs first pass
 * through an identity slice (an eager step), so the chunk's equations cannot join an earlier
 * chunk's loop. Loops stay small: libgccjit's compile time grows faster than linearly with the
 * size of a function (160 additions: 2.9 s in one loop, 0.26 s in loops of 10). */
enum { MAX_IN = 2048, MAX_OUT = 2048, CHUNK = 24 };

typedef struct pending {
    pcase c;
    ax_dtype t;
    ax_aval in[4], out[4];
    ax_array *lit[4];
    char label[112];
} pending;

typedef struct batch {
    ax_ir_builder *b;
    int nin;
    ax_aval in_type[MAX_IN];
    domain in_dom[MAX_IN];
    int in_index_max[MAX_IN];
    int nout;
    ax_ir_atom out[MAX_OUT];
    out_desc desc[MAX_OUT];
    int cases[AX_P_NPRIMS]; /* cases added per primitive */
    int npending;
    pending pend[CHUNK];
} batch;

static int text_shape(char *buf, size_t n, int ndim, const int64_t *shape) {
    int len = snprintf(buf, n, "[");
    for (int d = 0; d < ndim; d++)
        len += snprintf(buf + len, n - (size_t)len, "%s%lld", d ? "," : "", (long long)shape[d]);
    return len + snprintf(buf + len, n - (size_t)len, "]");
}

static int text_axes(char *buf, size_t n, const ax_params *p) {
    int len = snprintf(buf, n, " axes=(");
    for (int i = 0; i < p->naxes; i++)
        len += snprintf(buf + len, n - (size_t)len, "%s%d", i ? "," : "", p->axes[i]);
    return len + snprintf(buf + len, n - (size_t)len, ")");
}

/* "reduce_sum f32 [3,5,7] axes=(0,2)", "add i32 [37] x lit", "convert u8 [37] -> f32" */
static void case_label(char *buf, size_t n, const pcase *c, const ax_params *p, ax_dtype t,
                       const ax_aval *in) {
    int len = snprintf(buf, n, "%s %s", ax_prim_get(c->prim)->name, ax_dtype_short(t));
    for (int i = 0; i < c->nin; i++) {
        len += snprintf(buf + len, n - (size_t)len, "%s", i ? " x " : " ");
        if (c->lit == i + 1)
            len += snprintf(buf + len, n - (size_t)len, "lit");
        else
            len += text_shape(buf + len, n - (size_t)len, in[i].ndim, in[i].shape);
    }
    if (c->prim == AX_P_IOTA) len += text_shape(buf + len, n - (size_t)len, p->ndim, p->shape);
    if (ax_prim_is_reduction(c->prim) || c->prim == AX_P_IOTA ||
        (c->prim >= AX_P_ARGMAX && c->prim <= AX_P_CUMMIN) || c->prim == AX_P_TRANSPOSE)
        len += text_axes(buf + len, n - (size_t)len, p);
    if (c->prim == AX_P_INTEGER_POW)
        len += snprintf(buf + len, n - (size_t)len, " k=%lld", (long long)p->k);
    if (c->prim == AX_P_CONVERT || c->prim == AX_P_BITCAST)
        snprintf(buf + len, n - (size_t)len, " -> %s", ax_dtype_short(p->dtype));
}

static void add_output(batch *bt, int var, const char *label, const out_desc *ops) {
    assert_true(bt->nout < MAX_OUT);
    out_desc *d = &bt->desc[bt->nout];
    *d = ops ? *ops : (out_desc){0};
    snprintf(d->label, sizeof d->label, "%s", label);
    bt->out[bt->nout++] = (ax_ir_atom){.var = var};
}

static int add_eqn1(batch *bt, ax_prim prim, const ax_params *p, int nin, const ax_ir_atom *in,
                    const ax_aval *out) {
    int v;
    assert_int_equal(ax_ir_add_eqn(bt->b, prim, p, nin, in, 1, out, &v, 0, NULL), 0);
    return v;
}

/* An elementwise reader of a view, so that the view folds into a loop's strides. */
static void add_view_reader(batch *bt, int var, const ax_aval *t, const char *label) {
    ax_prim reader = t->dtype == AX_BOOL ? AX_P_NOT : AX_P_NEG;
    int v = add_eqn1(bt, reader, &(ax_params){0}, 1, &(ax_ir_atom){.var = var}, t);
    char text[128];
    snprintf(text, sizeof text, "%s of %.100s", ax_prim_get(reader)->name, label);
    add_output(bt, v, text, NULL);
}

/* A new input of type t, read through an identity slice (the chunk's barrier). */
static int add_barrier_input(batch *bt, const ax_aval *t, domain d, int index_max) {
    assert_true(bt->nin < MAX_IN);
    int x = ax_ir_add_input(bt->b, t);
    bt->in_type[bt->nin] = *t;
    bt->in_dom[bt->nin] = d;
    bt->in_index_max[bt->nin++] = index_max;
    if (t->ndim == 0) return x; /* a scalar is read as a constant anyway */
    ax_params p = {.ndim = t->ndim};
    for (int i = 0; i < t->ndim; i++) p.hi[i] = t->shape[i], p.step[i] = 1;
    return add_eqn1(bt, AX_P_SLICE, &p, 1, &(ax_ir_atom){.var = x}, t);
}

/* Emits the pending cases: all their inputs (behind the barrier), then their equations. */
static void flush(batch *bt) {
    ax_ir_atom atoms[CHUNK][4];
    out_desc ops[CHUNK];
    for (int k = 0; k < bt->npending; k++) {
        pending *pc = &bt->pend[k];
        ops[k] = (out_desc){.nops = pc->c.nin};
        for (int i = 0; i < pc->c.nin; i++) {
            if (pc->lit[i]) {
                atoms[k][i] = (ax_ir_atom){.var = -1, .lit = pc->lit[i]};
                ops[k].op_input[i] = -1;
                ops[k].op_lit[i] = pc->lit[i];
            } else {
                ops[k].op_input[i] = bt->nin;
                atoms[k][i] = (ax_ir_atom){
                    .var = add_barrier_input(bt, &pc->in[i], pc->c.dom[i], pc->c.index_max)};
            }
        }
    }
    for (int k = 0; k < bt->npending; k++) {
        pending *pc = &bt->pend[k];
        int nout = ax_prim_nout(pc->c.prim, &pc->c.p), vars[4];
        assert_int_equal(ax_ir_add_eqn(bt->b, pc->c.prim, &pc->c.p, pc->c.nin, atoms[k], nout,
                                       pc->out, vars, 0, NULL),
                         0);
        bool pointwise = (ax_prim_get(pc->c.prim)->flags & AX_PRIM_ELEMENTWISE) ||
                         pc->c.prim == AX_P_SELECT || pc->c.prim == AX_P_CLAMP;
        if (!pointwise) ops[k].nops = 0;
        for (int o = 0; o < nout; o++) add_output(bt, vars[o], pc->label, &ops[k]);
        if (is_view_prim(pc->c.prim)) add_view_reader(bt, vars[0], &pc->out[0], pc->label);
        for (int i = 0; i < pc->c.nin; i++) ax_array_release(pc->lit[i]); /* the IR holds them */
    }
    bt->npending = 0;
}

/* Adds case c on dtype t when the shape rule accepts it; true when it did. */
static bool add_case(ax_ctx *cx, rng *r, batch *bt, const pcase *c, ax_dtype t) {
    if (c->dtypes && !(c->dtypes >> t & 1)) return false;
    pending pc = {.c = *c, .t = t};
    if (c->prim == AX_P_IOTA) pc.c.p.dtype = t;
    bool uses_t = c->prim == AX_P_IOTA;
    for (int i = 0; i < c->nin; i++) {
        bool fixed = c->dom[i] == D_INDEX || (c->bool_in >> i & 1);
        ax_dtype dt = c->dom[i] == D_INDEX ? AX_I32 : (c->bool_in >> i & 1) ? AX_BOOL : t;
        uses_t |= !fixed;
        pc.in[i] = (ax_aval){.dtype = dt, .ndim = c->ndim[i]};
        memcpy(pc.in[i].shape, c->shape[i], sizeof c->shape[i]);
    }
    if (!uses_t) return false;
    if (ax_prim_infer(cx, c->prim, c->nin, pc.in, &pc.c.p, pc.out)) {
        ax_error_clear(cx);
        return false;
    }
    for (int i = 0; i < c->nin; i++)
        if (c->lit == i + 1) pc.lit[i] = make_input(cx, r, &pc.in[i], c->dom[i], c->index_max);
    case_label(pc.label, sizeof pc.label, c, &pc.c.p, t, pc.in);
    bt->pend[bt->npending++] = pc;
    if (bt->npending == CHUNK) flush(bt);
    bt->cases[c->prim]++;
    return true;
}

/* Which of n forms (shapes) a (primitive, dtype) pair runs on: rotating with both, so that
 * every dtype meets every form on some primitives. */
static int rotate(int prim, ax_dtype t, int n) {
    return (prim * 3 + (int)t) % n;
}

/* Whether a pair also runs on a second form: one in four. Compile time is the budget here:
 * libgccjit takes 2-10 ms per compiled operation, whatever the shape. */
static bool second_form(int prim, ax_dtype t) {
    return (prim + (int)t) % 4 == 0;
}

/* Unary elementwise primitives: every pair on a special-rich vector or matrix with full
 * blocks of 16 lanes and a tail ([37] or [4,33]: specials land in both), some also on
 * short rows ([3,5]) or rank 0; integer_pow for exponents inside and outside what code
 * generation unrolls (|k| <= 64). */
static void add_unary_cases(ax_ctx *cx, rng *r, batch *bt, ax_dtype t) {
    static const int ndims[4] = {1, 2, 2, 0};
    static const int64_t shapes[4][3] = {{37}, {4, 33}, {3, 5}, {0}};
    for (int p = AX_P_NEG; p <= AX_P_STOP_GRADIENT; p++) {
        if (!(p <= AX_P_SQUARE || p == AX_P_STOP_GRADIENT)) continue;
        int s = rotate(p, t, 2);
        pcase c = {.prim = (ax_prim)p, .nin = 1, .ndim = {ndims[s]}};
        memcpy(c.shape[0], shapes[s], sizeof shapes[s]);
        add_case(cx, r, bt, &c, t);
        if (!second_form(p, t)) continue;
        s = 2 + rotate(p / 2, t, 2);
        c.ndim[0] = ndims[s];
        memcpy(c.shape[0], shapes[s], sizeof shapes[s]);
        add_case(cx, r, bt, &c, t);
    }
    static const int64_t ks[] = {0, 1, 2, -3, 64, 65};
    for (size_t i = 0; i < sizeof ks / sizeof *ks; i++) {
        pcase c = {.prim = AX_P_INTEGER_POW, .nin = 1, .ndim = {1}, .shape = {{37}}};
        c.p.k = ks[i];
        add_case(cx, r, bt, &c, t);
    }
    pcase c = {.prim = AX_P_INTEGER_POW, .nin = 1, .ndim = {0}, .p = {.k = 3}};
    add_case(cx, r, bt, &c, t);
}

/* Binary elementwise primitives: every pair on [37] x [37], some also on one more form: a rank-0
 * operand on either side, short rows, two scalars, a literal on either side. */
static void add_binary_cases(ax_ctx *cx, rng *r, batch *bt, ax_dtype t) {
    static const struct {
        int ndim[2];
        int64_t shape[2][3];
        int lit;
    } forms[] = {
        {{1, 1}, {{37}, {37}}, 0},   {{2, 0}, {{4, 33}, {0}}, 0}, {{0, 2}, {{0}, {3, 5}}, 0},
        {{1, 1}, {{7}, {7}}, 0},     {{0, 0}, {{0}, {0}}, 0},     {{1, 0}, {{37}, {0}}, 2},
        {{0, 2}, {{0}, {4, 33}}, 1},
    };
    enum { NFORMS = sizeof forms / sizeof *forms };
    for (int p = AX_P_ADD; p <= AX_P_SHR_ARITH; p++) {
        bool shift = p == AX_P_SHL || p == AX_P_SHR_LOGICAL || p == AX_P_SHR_ARITH;
        int pick[2] = {0, 1 + rotate(p / 2, t, NFORMS - 1)};
        for (int k = 0; k < (second_form(p, t) ? 2 : 1); k++) {
            int f = pick[k];
            pcase c = {.prim = (ax_prim)p, .nin = 2, .lit = forms[f].lit};
            memcpy(c.ndim, forms[f].ndim, sizeof forms[f].ndim);
            memcpy(c.shape, forms[f].shape, sizeof forms[f].shape);
            if (shift) c.dom[1] = D_SHIFT;
            add_case(cx, r, bt, &c, t);
        }
    }
}

static void add_conversion_cases(ax_ctx *cx, rng *r, batch *bt, ax_dtype t) {
    for (int to = 0; to < AX_NDTYPES; to++) {
        pcase c = {.prim = AX_P_CONVERT, .nin = 1, .ndim = {1}, .shape = {{37}}};
        c.p.dtype = (ax_dtype)to;
        if (rotate(to, t, 3) == 0) c.ndim[0] = 0;
        add_case(cx, r, bt, &c, t);
        /* bitcast's shape rule accepts bool <-> u8, which its kernel refuses (as XLA does) */
        if (t == AX_BOOL || to == AX_BOOL) continue;
        c = (pcase){.prim = AX_P_BITCAST, .nin = 1, .ndim = {1}, .shape = {{37}}};
        c.p.dtype = (ax_dtype)to;
        add_case(cx, r, bt, &c, t);
    }
}

/* Reductions: rows with a tail on every (primitive, dtype), half of them on one more form
 * rotating over
 * columns, short rows (lanes across rows), a middle axis, outer axes, everything, one short
 * run, an empty reduced axis, an empty kept axis, no axis at all, axes of length 1. */
static void add_reduction_cases(ax_ctx *cx, rng *r, batch *bt, ax_dtype t) {
    static const struct {
        int ndim;
        int64_t shape[3];
        int naxes, axes[3];
    } forms[] = {
        {2, {4, 33}, 1, {1}},   {2, {4, 33}, 1, {0}},      {2, {40, 5}, 1, {1}},
        {3, {3, 5, 7}, 1, {1}}, {3, {3, 5, 7}, 2, {0, 2}}, {3, {3, 5, 7}, 3, {0, 1, 2}},
        {1, {37}, 1, {0}},      {1, {7}, 1, {0}},          {2, {0, 5}, 1, {0}},
        {2, {0, 5}, 1, {1}},    {2, {4, 33}, 0, {0}},      {3, {3, 1, 37}, 1, {1}},
        {2, {37, 1}, 1, {1}},
    };
    enum { NFORMS = sizeof forms / sizeof *forms };
    static const domain dom[] = {D_EXACT, D_POW2, D_NOZNEG, D_NOZNEG, D_ANY, D_ANY};
    for (int p = AX_P_REDUCE_SUM; p <= AX_P_REDUCE_OR; p++) {
        int pick[2] = {0, 1 + rotate(p / 2, t, NFORMS - 1)};
        for (int k = 0; k < ((p + (int)t) % 2 ? 1 : 2); k++) {
            pcase c = {.prim = (ax_prim)p, .nin = 1, .ndim = {forms[pick[k]].ndim}};
            memcpy(c.shape[0], forms[pick[k]].shape, sizeof forms[pick[k]].shape);
            c.p.naxes = forms[pick[k]].naxes;
            memcpy(c.p.axes, forms[pick[k]].axes, sizeof forms[pick[k]].axes);
            c.dom[0] = dom[p - AX_P_REDUCE_SUM];
            add_case(cx, r, bt, &c, t);
        }
    }
}

/* The table's cases: primitives that compile (select, clamp, views, iota) take one of their
 * cases per dtype, in turn, so every case runs on some dtype; the others (eager kernels in
 * both runs, or matrix products: cheap to compile) take them all. */
static bool one_case_per_dtype(ax_prim p) {
    return p == AX_P_SELECT || p == AX_P_CLAMP || p == AX_P_IOTA || is_view_prim(p);
}

static void add_table_cases(ax_ctx *cx, rng *r, batch *bt, ax_dtype t) {
    enum { N = sizeof other_cases / sizeof *other_cases };
    for (size_t i = 0; i < N; i++) {
        ax_prim p = other_cases[i].prim;
        if (!one_case_per_dtype(p)) {
            add_case(cx, r, bt, &other_cases[i], t);
            continue;
        }
        if (i > 0 && other_cases[i - 1].prim == p) continue; /* the first of the run picks */
        size_t k = 0;
        while (i + k < N && other_cases[i + k].prim == p) k++;
        for (size_t j = 0; j < k; j++)
            if (add_case(cx, r, bt, &other_cases[i + ((size_t)t + j) % k], t)) break;
    }
}

/* custom_call: a function's body (here tanh(x) * 2 + x, and x itself) called as one equation;
 * jit runs it as an eager step, so its value must be the eager one. */
static void add_custom_call_cases(ax_ctx *cx, batch *bt) {
    ax_aval f32_7 = {.dtype = AX_F32, .ndim = 1, .shape = {7}};
    ax_ir_builder *b = ax_ir_builder_new();
    ax_ir_atom x = {.var = ax_ir_add_input(b, &f32_7)};
    int th, tw, y;
    ax_ir_atom two = {.var = -1, .lit = ax_array_scalar(cx, AX_F32, 2.0)};
    assert_int_equal(ax_ir_add_eqn(b, AX_P_TANH, &(ax_params){0}, 1, &x, 1, &f32_7, &th, 0, NULL),
                     0);
    assert_int_equal(ax_ir_add_eqn(b, AX_P_MUL, &(ax_params){0}, 2,
                                   (ax_ir_atom[]){{.var = th}, two}, 1, &f32_7, &tw, 0, NULL),
                     0);
    assert_int_equal(ax_ir_add_eqn(b, AX_P_ADD, &(ax_params){0}, 2, (ax_ir_atom[]){{.var = tw}, x},
                                   1, &f32_7, &y, 0, NULL),
                     0);
    ax_array_release(two.lit);
    ax_callback *cb = calloc(1, sizeof *cb);
    assert_non_null(cb);
    cb->refs = 1;
    cb->name = "f";
    cb->body = ax_ir_builder_finish(b, 2, (ax_ir_atom[]){{.var = y}, x});
    assert_non_null(cb->body);
    for (int k = 0; k < 2; k++) {
        ax_params p = {.cb = cb, .k = k};
        ax_aval out;
        assert_int_equal(ax_prim_infer(cx, AX_P_CUSTOM_CALL, 1, &f32_7, &p, &out), 0);
        int in = add_barrier_input(bt, &f32_7, D_ANY, 0);
        int v = add_eqn1(bt, AX_P_CUSTOM_CALL, &p, 1, &(ax_ir_atom){.var = in}, &out);
        add_output(bt, v, k ? "custom_call f32 [7] output 1" : "custom_call f32 [7] output 0",
                   NULL);
        bt->cases[AX_P_CUSTOM_CALL]++;
    }
    ax_callback_release(cb); /* the equations hold it */
}

static batch *new_batch(void) {
    batch *bt = calloc(1, sizeof *bt);
    assert_non_null(bt);
    bt->b = ax_ir_builder_new();
    assert_non_null(bt->b);
    return bt;
}

/* Builds the batch's IR, runs it both ways on fresh inputs and checks it was compiled. */
static void run_batch(ax_ctx *cx, rng *r, batch *bt, const char *name, check *c) {
    flush(bt);
    ax_ir *ir = ax_ir_builder_finish(bt->b, bt->nout, bt->out);
    bt->b = NULL;
    assert_non_null(ir);
    if (ax_ir_verify(cx, ir)) fail_msg("%s: the IR does not verify: %s", name, cx->err.message);
    ax_array **args = calloc((size_t)bt->nin + 1, sizeof *args);
    assert_non_null(args);
    for (int i = 0; i < bt->nin; i++)
        args[i] = make_input(cx, r, &bt->in_type[i], bt->in_dom[i], bt->in_index_max[i]);
    int fusable = check_compiled(ir);
    ax_jit_info info = run_both(cx, ir, args, bt->desc, c);
    print_message("%s: %d equations (%d fusable), %d outputs: %d loops, %d products, %d eager; "
                  "built in %.0f ms%s\n",
                  name, ir->neqns, fusable, ir->nout, info.nloops, info.ngemms, info.neager,
                  info.build_ms, info.from_disk ? " (from the disk cache)" : "");
    assert_true(info.native);
    if (fusable) assert_true(info.nloops >= 1);
    for (int i = 0; i < bt->nin; i++) ax_array_release(args[i]);
    free(args);
    ax_ir_release(ir);
}

static void test_every_primitive(void **state) {
    ax_ctx *cx = *state;
    rng r = {.s = 1};
    check c = {0};
    int cases[AX_P_NPRIMS] = {0};
    /* two programs: the elementwise cases, and the rest */
    batch *bt = new_batch();
    for (int t = 0; t < AX_NDTYPES; t++) {
        add_unary_cases(cx, &r, bt, (ax_dtype)t);
        add_binary_cases(cx, &r, bt, (ax_dtype)t);
        add_conversion_cases(cx, &r, bt, (ax_dtype)t);
    }
    for (int p = 0; p < AX_P_NPRIMS; p++) cases[p] += bt->cases[p];
    run_batch(cx, &r, bt, "elementwise", &c);
    free(bt);
    bt = new_batch();
    for (int t = 0; t < AX_NDTYPES; t++) {
        add_reduction_cases(cx, &r, bt, (ax_dtype)t);
        add_table_cases(cx, &r, bt, (ax_dtype)t);
    }
    add_custom_call_cases(cx, bt);
    for (int p = 0; p < AX_P_NPRIMS; p++) cases[p] += bt->cases[p];
    run_batch(cx, &r, bt, "structural", &c);
    free(bt);
    print_message("every primitive: worst float difference %lld ulp\n", (long long)c.worst_ulp);
    /* custom_linear has no kernel: test_custom_linear checks that both paths fail alike;
     * primitives with sub-programs run eagerly and under jit in tests/unit/test_control_flow.c */
    cases[AX_P_CUSTOM_LINEAR]++;
    cases[AX_P_COND]++, cases[AX_P_WHILE]++, cases[AX_P_SCAN]++, cases[AX_P_CALL]++;
    cases[AX_P_DEBUG_CALLBACK]++; /* an effect: tests/unit/test_debug_callback.c runs it in jit */
    /* pmap and collectives run on devices: tests/unit/test_collectives.c, tests/lang/pmap_* */
    for (int p = AX_P_PMAP; p <= AX_P_AXIS_INDEX; p++) cases[p]++;
    for (int p = 0; p < AX_P_NPRIMS; p++)
        if (!cases[p]) fail_msg("primitive %s has no case here", ax_prim_get((ax_prim)p)->name);
    if (c.mismatches) fail_msg("%d elements differ between eager and jit", c.mismatches);
}

/* custom_linear (a custom_vjp function's tangent) has no forward kernel: eager and native runs
 * must fail with the same error. */
static void test_custom_linear(void **state) {
    ax_ctx *cx = *state;
    ax_aval f32_7 = {.dtype = AX_F32, .ndim = 1, .shape = {7}};
    ax_callback *cb = calloc(1, sizeof *cb);
    assert_non_null(cb);
    cb->refs = 1;
    cb->name = "g";
    ax_params p = {.cb = cb, .dtype = AX_F32, .ndim = 1, .shape = {7}};
    ax_ir_builder *b = ax_ir_builder_new();
    ax_ir_atom x = {.var = ax_ir_add_input(b, &f32_7)};
    int e, l;
    assert_int_equal(ax_ir_add_eqn(b, AX_P_EXP, &(ax_params){0}, 1, &x, 1, &f32_7, &e, 0, NULL), 0);
    assert_int_equal(ax_ir_add_eqn(b, AX_P_CUSTOM_LINEAR, &p, 1, &x, 1, &f32_7, &l, 0, NULL), 0);
    ax_callback_release(cb);
    ax_ir *ir = ax_ir_builder_finish(b, 2, (ax_ir_atom[]){{.var = e}, {.var = l}});
    rng r = {.s = 2};
    ax_array *arg = make_input(cx, &r, &f32_7, D_SMALL, 0), *outs[2] = {0};
    assert_int_equal(ax_ir_eval(cx, ir, &arg, outs), -1);
    char eager[sizeof cx->err.message];
    ax_error_kind kind = cx->err.kind;
    snprintf(eager, sizeof eager, "%s", cx->err.message);
    ax_error_clear(cx);
    ax_jit_program *prog = ax_jit_build(cx, ir);
    assert_true(ax_jit_program_info(prog)->native);
    assert_int_equal(ax_jit_run(cx, prog, &arg, outs), -1);
    assert_int_equal(cx->err.kind, kind);
    assert_string_equal(cx->err.message, eager);
    ax_error_clear(cx);
    ax_jit_free(prog);
    ax_array_release(arg);
    ax_ir_release(ir);
}

/* ================================================================ 2. composed programs */

/* Tracing helpers: every result is held by the trace builder and released at the end, and a
 * NULL operand (an earlier failure) gives NULL. */
typedef struct tb {
    ax_ctx *cx;
    int n;
    ax_array *held[512];
} tb;

static ax_array *hold(tb *b, ax_array *a) {
    assert_true(b->n < 512);
    if (a) b->held[b->n++] = a;
    return a;
}

static ax_array *bind(tb *b, ax_prim p, int nin, ax_array **in, const ax_params *params) {
    for (int i = 0; i < nin; i++)
        if (!in[i]) return NULL;
    return hold(b, ax_bind1(b->cx, p, nin, in, params));
}

static ax_array *un(tb *b, ax_prim p, ax_array *x) {
    return bind(b, p, 1, &x, &(ax_params){0});
}

static ax_array *bi(tb *b, ax_prim p, ax_array *x, ax_array *y) {
    return bind(b, p, 2, (ax_array *[]){x, y}, &(ax_params){0});
}

static ax_array *lit(tb *b, ax_dtype t, double v) {
    return hold(b, ax_array_scalar(b->cx, t, v));
}

static ax_array *bcast(tb *b, ax_array *x, int ndim, const int64_t *shape, const int *dims) {
    ax_params p = {.ndim = ndim, .naxes = x ? x->ndim : 0};
    memcpy(p.shape, shape, (size_t)ndim * sizeof *shape);
    if (x) memcpy(p.axes, dims, (size_t)x->ndim * sizeof *dims);
    return bind(b, AX_P_BROADCAST_IN_DIM, 1, &x, &p);
}

static ax_array *reduce(tb *b, ax_prim prim, ax_array *x, int naxes, const int *axes) {
    ax_params p = {.naxes = naxes};
    memcpy(p.axes, axes, (size_t)naxes * sizeof *axes);
    return bind(b, prim, 1, &x, &p);
}

static ax_array *transpose(tb *b, ax_array *x, const int *perm) {
    ax_params p = {.naxes = x ? x->ndim : 0};
    if (x) memcpy(p.axes, perm, (size_t)x->ndim * sizeof *perm);
    return bind(b, AX_P_TRANSPOSE, 1, &x, &p);
}

static ax_array *dot(tb *b, ax_array *x, ax_array *y, int lc, int rc, int nbatch) {
    ax_params p = {.dot = {.ncontract = 1, .lhs_contract = {lc}, .rhs_contract = {rc}}};
    p.dot.nbatch = nbatch;
    for (int i = 0; i < nbatch; i++) p.dot.lhs_batch[i] = p.dot.rhs_batch[i] = i;
    return bind(b, AX_P_DOT_GENERAL, 2, (ax_array *[]){x, y}, &p);
}

static ax_array *convert(tb *b, ax_array *x, ax_dtype t) {
    return bind(b, AX_P_CONVERT, 1, &x, &(ax_params){.dtype = t});
}

static ax_array *ipow(tb *b, ax_array *x, int64_t k) {
    return bind(b, AX_P_INTEGER_POW, 1, &x, &(ax_params){.k = k});
}

static ax_array *iota(tb *b, ax_dtype t, int ndim, const int64_t *shape, int axis) {
    ax_params p = {.dtype = t, .ndim = ndim, .naxes = 1, .axes = {axis}};
    memcpy(p.shape, shape, (size_t)ndim * sizeof *shape);
    return bind(b, AX_P_IOTA, 0, NULL, &p);
}

static ax_array *select3(tb *b, ax_array *pred, ax_array *x, ax_array *y) {
    return bind(b, AX_P_SELECT, 3, (ax_array *[]){pred, x, y}, &(ax_params){0});
}

#define SH(...) ((const int64_t[]){__VA_ARGS__})
#define AX(...) ((const int[]){__VA_ARGS__})

/* Each program fills out[] and returns how many outputs it has. */
typedef int (*body_fn)(tb *b, ax_array **x, ax_array **out);

/* h = tanh(x W1 + b1); p = h W2 + b2; loss = mean((p - y)^2) */
static int mlp_loss(tb *b, ax_array **x, ax_array **out) {
    ax_array *h = bi(b, AX_P_ADD, dot(b, x[0], x[1], 1, 0, 0), bcast(b, x[2], 2, SH(8, 16), AX(1)));
    h = un(b, AX_P_TANH, h);
    ax_array *p = bi(b, AX_P_ADD, dot(b, h, x[3], 1, 0, 0), bcast(b, x[4], 2, SH(8, 3), AX(1)));
    ax_array *d = bi(b, AX_P_SUB, p, x[5]);
    ax_array *sum = reduce(b, AX_P_REDUCE_SUM, bi(b, AX_P_MUL, d, d), 2, AX(0, 1));
    out[0] = bi(b, AX_P_MUL, sum, lit(b, AX_F32, 1.0 / 24));
    out[1] = p;
    return 2;
}

/* log_softmax and the cross-entropy against integer labels (a one-hot made of iota == label) */
static int softmax_xent(tb *b, ax_array **x, ax_array **out) {
    ax_array *m = reduce(b, AX_P_REDUCE_MAX, x[0], 1, AX(1));
    ax_array *z = bi(b, AX_P_SUB, x[0], bcast(b, m, 2, SH(6, 10), AX(0)));
    ax_array *lse = un(b, AX_P_LOG, reduce(b, AX_P_REDUCE_SUM, un(b, AX_P_EXP, z), 1, AX(1)));
    ax_array *logp = bi(b, AX_P_SUB, z, bcast(b, lse, 2, SH(6, 10), AX(0)));
    ax_array *hot =
        bi(b, AX_P_EQ, iota(b, AX_I32, 2, SH(6, 10), 1), bcast(b, x[1], 2, SH(6, 10), AX(0)));
    ax_array *picked = bi(b, AX_P_MUL, convert(b, hot, AX_F32), logp);
    ax_array *nll = reduce(b, AX_P_REDUCE_SUM, picked, 2, AX(0, 1));
    out[0] = logp;
    out[1] = bi(b, AX_P_MUL, un(b, AX_P_NEG, nll), lit(b, AX_F32, 1.0 / 6));
    return 2;
}

/* x / sqrt(sum(x * x, axis=1)): exact sums of multiples of 1/8, so bit for bit */
static int row_normalise(tb *b, ax_array **x, ax_array **out) {
    ax_array *n =
        un(b, AX_P_SQRT, reduce(b, AX_P_REDUCE_SUM, bi(b, AX_P_MUL, x[0], x[0]), 1, AX(1)));
    out[0] = bi(b, AX_P_DIV, x[0], bcast(b, n, 2, SH(7, 37), AX(0)));
    out[1] = n;
    return 2;
}

/* column sums and means (a reduction over axis 0), f64 and f32 */
static int column_sums(tb *b, ax_array **x, ax_array **out) {
    out[0] = reduce(b, AX_P_REDUCE_SUM, x[0], 1, AX(0));
    out[1] = bi(b, AX_P_MUL, reduce(b, AX_P_REDUCE_SUM, x[1], 1, AX(0)), lit(b, AX_F32, 0.25));
    out[2] = reduce(b, AX_P_REDUCE_MAX, x[1], 1, AX(0));
    return 3;
}

/* reductions of everything: sums, extremes, products, integer sums that wrap, all / any */
static int full_reductions(tb *b, ax_array **x, ax_array **out) {
    out[0] = reduce(b, AX_P_REDUCE_SUM, x[0], 2, AX(0, 1));
    out[1] = reduce(b, AX_P_REDUCE_MAX, x[0], 2, AX(0, 1));
    out[2] = reduce(b, AX_P_REDUCE_MIN, un(b, AX_P_ABS, x[0]), 2, AX(0, 1));
    out[3] = reduce(b, AX_P_REDUCE_PROD, x[1], 1, AX(0));
    out[4] = reduce(b, AX_P_REDUCE_SUM, x[2], 2, AX(0, 1));
    out[5] = reduce(b, AX_P_REDUCE_AND, x[3], 1, AX(0));
    out[6] = reduce(b, AX_P_REDUCE_OR, x[3], 1, AX(0));
    out[7] = reduce(b, AX_P_REDUCE_MAX, x[2], 2, AX(0, 1));
    return 8;
}

/* reductions over middle and mixed axes of 3-d and 4-d arrays */
static int middle_axes(tb *b, ax_array **x, ax_array **out) {
    out[0] = reduce(b, AX_P_REDUCE_SUM, x[0], 1, AX(1));
    out[1] = reduce(b, AX_P_REDUCE_MAX, x[0], 2, AX(0, 2));
    out[2] = reduce(b, AX_P_REDUCE_SUM, x[1], 1, AX(1));
    out[3] = reduce(b, AX_P_REDUCE_SUM, bi(b, AX_P_MUL, x[2], x[2]), 2, AX(1, 2));
    out[4] = reduce(b, AX_P_REDUCE_MIN, x[2], 2, AX(0, 3));
    return 5;
}

/* transposes read by elementwise operations (folded into the loads' strides) */
static int transposes(tb *b, ax_array **x, ax_array **out) {
    ax_array *xt = transpose(b, x[0], AX(1, 0));
    out[0] = bi(b, AX_P_ADD, bi(b, AX_P_MUL, xt, x[1]), un(b, AX_P_EXP, xt));
    ax_array *yt = transpose(b, x[2], AX(2, 0, 1));
    out[1] = bi(b, AX_P_SUB, yt, un(b, AX_P_SIN, yt));
    out[2] = un(b, AX_P_COS, transpose(b, transpose(b, x[2], AX(1, 0, 2)), AX(0, 2, 1)));
    return 3;
}

/* iota, comparisons and select: a triangular mask, a sign flip, a mask as numbers */
static int iota_select(tb *b, ax_array **x, ax_array **out) {
    ax_array *i = iota(b, AX_I32, 2, SH(6, 37), 0), *j = iota(b, AX_I32, 2, SH(6, 37), 1);
    ax_array *mask = bi(b, AX_P_AND, bi(b, AX_P_LE, i, j), bi(b, AX_P_GT, x[0], lit(b, AX_F32, 0)));
    out[0] = select3(b, mask, x[0], bi(b, AX_P_MUL, x[0], lit(b, AX_F32, -2)));
    out[1] = convert(b, mask, AX_F32);
    out[2] = bi(b, AX_P_ADD, iota(b, AX_F32, 2, SH(6, 37), 1), x[0]);
    out[3] = select3(b, bi(b, AX_P_NE, x[0], x[0]), lit(b, AX_F32, 7), x[0]); /* NaN -> 7 */
    return 4;
}

/* integer arithmetic that wraps, on every integer dtype */
static int int_wrap(tb *b, ax_array **x, ax_array **out) {
    for (int k = 0; k < 4; k++) {
        ax_array *a = x[2 * k], *c = x[2 * k + 1];
        ax_array *v = bi(b, AX_P_SUB, bi(b, AX_P_ADD, bi(b, AX_P_MUL, a, c), a), c);
        out[k] = bi(b, AX_P_MAX, bi(b, AX_P_MUL, v, un(b, AX_P_SQUARE, a)), un(b, AX_P_NEG, c));
    }
    out[4] = un(b, AX_P_ABS, x[0]);
    out[5] = un(b, AX_P_SIGN, x[6]);
    return 6;
}

/* shifts by counts negative and past the width, mixed with bitwise operations */
static int shifts(tb *b, ax_array **x, ax_array **out) {
    for (int k = 0; k < 3; k++) {
        ax_array *v = x[2 * k], *s = x[2 * k + 1];
        ax_array *l = bi(b, AX_P_SHL, v, s), *r = bi(b, AX_P_SHR_LOGICAL, v, s);
        out[k] = bi(b, AX_P_OR, bi(b, AX_P_XOR, l, r), bi(b, AX_P_SHR_ARITH, v, s));
    }
    out[3] = un(b, AX_P_NOT, bi(b, AX_P_AND, x[0], bi(b, AX_P_SHL, x[0], lit(b, AX_I32, 3))));
    return 4;
}

static int bool_logic(tb *b, ax_array **x, ax_array **out) {
    ax_array *p = x[0], *q = x[1];
    out[0] = bi(b, AX_P_OR, bi(b, AX_P_AND, p, un(b, AX_P_NOT, q)), bi(b, AX_P_XOR, p, q));
    out[1] = bi(b, AX_P_EQ, p, q);
    out[2] = select3(b, p, q, un(b, AX_P_NOT, q));
    out[3] = bi(b, AX_P_LT, p, q);
    out[4] = convert(b, bi(b, AX_P_NE, p, q), AX_I32);
    return 5;
}

/* conversions between every kind of dtype, chained */
static int conversions(tb *b, ax_array **x, ax_array **out) {
    out[0] = convert(b, convert(b, x[0], AX_F64), AX_F32);
    out[1] = bi(b, AX_P_ADD, convert(b, x[1], AX_F32), lit(b, AX_F32, 0.5));
    out[2] = convert(b, convert(b, x[2], AX_I32), AX_F64);
    out[3] = convert(b, x[0], AX_BOOL);
    out[4] = bi(b, AX_P_MUL, convert(b, x[3], AX_F32), x[0]);
    out[5] = convert(b, x[4], AX_F32);
    out[6] = convert(b, x[5], AX_F32);
    out[7] = convert(b, convert(b, x[0], AX_I32), AX_F32); /* float -> int saturates */
    out[8] = convert(b, x[1], AX_U8);
    out[9] = convert(b, convert(b, x[4], AX_U32), AX_I64);
    return 10;
}

static int integer_pows(tb *b, ax_array **x, ax_array **out) {
    out[0] = bi(b, AX_P_ADD, ipow(b, x[0], 2), ipow(b, x[0], 3));
    out[1] = bi(b, AX_P_SUB, ipow(b, x[0], -2), ipow(b, x[0], 7));
    out[2] = ipow(b, x[1], 5);
    out[3] = ipow(b, x[1], -1);
    return 4;
}

static int clamps(tb *b, ax_array **x, ax_array **out) {
    out[0] = bind(b, AX_P_CLAMP, 3, (ax_array *[]){lit(b, AX_F32, -1), x[0], lit(b, AX_F32, 2)},
                  &(ax_params){0});
    out[1] = bind(b, AX_P_CLAMP, 3, (ax_array *[]){x[1], x[0], x[2]}, &(ax_params){0});
    out[2] = bind(b, AX_P_CLAMP, 3, (ax_array *[]){lit(b, AX_I32, -5), x[3], lit(b, AX_I32, 9)},
                  &(ax_params){0});
    return 3;
}

/* max / min with NaN on either side, against literals, and reduced */
static int max_min_nan(tb *b, ax_array **x, ax_array **out) {
    out[0] = bi(b, AX_P_MAX, x[0], x[1]);
    out[1] = bi(b, AX_P_MIN, x[0], x[1]);
    out[2] = bi(b, AX_P_MAX, x[0], lit(b, AX_F32, 0));
    out[3] = bi(b, AX_P_MIN, lit(b, AX_F32, NAN), x[1]);
    out[4] = reduce(b, AX_P_REDUCE_MAX, x[0], 1, AX(1));
    out[5] = reduce(b, AX_P_REDUCE_MIN, x[1], 1, AX(0));
    return 6;
}

/* dot_general in its four 2-d layouts, batched, matrix-vector, and transposed products */
static int dots(tb *b, ax_array **x, ax_array **out) {
    out[0] = dot(b, x[0], x[1], 1, 0, 0);                         /* [5,3] [3,4] */
    out[1] = dot(b, transpose(b, x[0], AX(1, 0)), x[1], 0, 0, 0); /* via a transposed operand */
    out[2] = dot(b, x[2], x[3], 0, 0, 0);                         /* [3,5]^T [3,4] */
    out[3] = dot(b, x[0], x[4], 1, 1, 0);                         /* [5,3] [4,3]^T */
    out[4] = dot(b, x[2], x[4], 0, 1, 0);                         /* [3,5]^T [4,3]^T */
    out[5] = dot(b, x[5], x[6], 2, 1, 1);                         /* [2,5,3] [2,3,4] */
    out[6] = dot(b, x[0], x[7], 1, 0, 0);                         /* [5,3] [3] */
    out[7] = transpose(b, dot(b, x[0], x[1], 1, 0, 0), AX(1, 0)); /* (A B)^T = B^T A^T */
    out[8] = un(b, AX_P_TANH, dot(b, x[0], x[1], 1, 0, 0));
    out[9] = dot(b, x[8], x[9], 1, 0, 0); /* i32: eager */
    return 10;
}

static int rank0(tb *b, ax_array **x, ax_array **out) {
    ax_array *e = bi(b, AX_P_ADD, bi(b, AX_P_MUL, un(b, AX_P_EXP, x[0]), x[1]), lit(b, AX_F32, 1));
    out[0] = e;
    out[1] = select3(b, bi(b, AX_P_GT, x[0], x[1]), un(b, AX_P_LOG1P, x[0]), x[1]);
    out[2] = bi(b, AX_P_MAX, x[0], bi(b, AX_P_POW, x[1], x[0]));
    out[3] = bi(b, AX_P_ADD, x[2], lit(b, AX_I32, 7));
    out[4] = reduce(b, AX_P_REDUCE_SUM, bcast(b, e, 1, SH(5), AX(0)), 1, AX(0));
    return 5;
}

/* arrays with a zero-length dimension */
static int empty_arrays(tb *b, ax_array **x, ax_array **out) {
    out[0] = bi(b, AX_P_ADD, un(b, AX_P_EXP, x[0]), lit(b, AX_F32, 1));
    out[1] = reduce(b, AX_P_REDUCE_SUM, x[0], 1, AX(0));          /* zeros [5] */
    out[2] = reduce(b, AX_P_REDUCE_SUM, x[1], 1, AX(1));          /* zeros [5] */
    out[3] = reduce(b, AX_P_REDUCE_PROD, x[2], 1, AX(1));         /* ones [3,4] */
    out[4] = dot(b, x[0], x[3], 1, 0, 0);                         /* [0,3] */
    out[5] = dot(b, x[1], transpose(b, x[1], AX(1, 0)), 1, 0, 0); /* zeros [5,5] */
    out[6] = iota(b, AX_I32, 2, SH(0, 3), 1);
    out[7] = reduce(b, AX_P_REDUCE_MIN, x[2], 1, AX(0)); /* [0,4] */
    return 8;
}

/* softplus, selu, gelu: chains of transcendental functions */
static int activations(tb *b, ax_array **x, ax_array **out) {
    ax_array *v = x[0];
    out[0] =
        bi(b, AX_P_ADD, un(b, AX_P_LOG1P, un(b, AX_P_EXP, un(b, AX_P_NEG, un(b, AX_P_ABS, v)))),
           bi(b, AX_P_MAX, v, lit(b, AX_F32, 0)));
    ax_array *neg = bi(b, AX_P_MUL, lit(b, AX_F32, 1.6732632f), un(b, AX_P_EXPM1, v));
    out[1] = bi(b, AX_P_MUL, select3(b, bi(b, AX_P_GT, v, lit(b, AX_F32, 0)), v, neg),
                lit(b, AX_F32, 1.0507010f));
    ax_array *e = un(b, AX_P_ERF, bi(b, AX_P_MUL, v, lit(b, AX_F32, 0.70710678f)));
    out[2] = bi(b, AX_P_MUL, bi(b, AX_P_MUL, v, lit(b, AX_F32, 0.5)),
                bi(b, AX_P_ADD, e, lit(b, AX_F32, 1)));
    out[3] = bi(b, AX_P_MUL, v, un(b, AX_P_LOGISTIC, v));
    out[4] = un(b, AX_P_RSQRT, bi(b, AX_P_ADD, bi(b, AX_P_MUL, x[1], x[1]), lit(b, AX_F64, 1e-3)));
    return 5;
}

/* loops and eager steps in turn: exp, sort, scale, cumsum, shift */
static int with_eager_steps(tb *b, ax_array **x, ax_array **out) {
    ax_array *s = bind(b, AX_P_SORT, 1, (ax_array *[]){un(b, AX_P_EXP, x[0])},
                       &(ax_params){.naxes = 1, .axes = {1}});
    ax_array *c = bind(b, AX_P_CUMSUM, 1, (ax_array *[]){bi(b, AX_P_MUL, s, lit(b, AX_F32, 2))},
                       &(ax_params){.naxes = 1, .axes = {1}});
    out[0] = bi(b, AX_P_ADD, c, un(b, AX_P_SIN, x[0]));
    out[1] = s;
    return 2;
}

/* row and column broadcasts: outer sums and products */
static int outer(tb *b, ax_array **x, ax_array **out) {
    ax_array *col = bcast(b, x[0], 2, SH(6, 37), AX(0)), *row = bcast(b, x[1], 2, SH(6, 37), AX(1));
    out[0] = bi(b, AX_P_ADD, col, row);
    out[1] = bi(b, AX_P_MUL, col, un(b, AX_P_EXP, row));
    out[2] = bi(b, AX_P_SUB, x[2],
                bcast(b, reduce(b, AX_P_REDUCE_MAX, x[2], 1, AX(1)), 2, SH(6, 37), AX(0)));
    return 3;
}

/* the same values reduced over different axes, and kept */
static int two_reductions(tb *b, ax_array **x, ax_array **out) {
    ax_array *e = bi(b, AX_P_MUL, x[0], x[0]);
    out[0] = reduce(b, AX_P_REDUCE_SUM, e, 1, AX(0));
    out[1] = reduce(b, AX_P_REDUCE_SUM, e, 1, AX(1));
    out[2] = e;
    out[3] = reduce(b, AX_P_REDUCE_MAX, bi(b, AX_P_ADD, e, x[0]), 2, AX(0, 1));
    return 4;
}

/* layer normalisation: mean, variance, scale */
static int layer_norm(tb *b, ax_array **x, ax_array **out) {
    ax_array *mean =
        bi(b, AX_P_MUL, reduce(b, AX_P_REDUCE_SUM, x[0], 1, AX(1)), lit(b, AX_F32, 1.0 / 37));
    ax_array *d = bi(b, AX_P_SUB, x[0], bcast(b, mean, 2, SH(8, 37), AX(0)));
    ax_array *var = bi(b, AX_P_MUL, reduce(b, AX_P_REDUCE_SUM, bi(b, AX_P_MUL, d, d), 1, AX(1)),
                       lit(b, AX_F32, 1.0 / 37));
    ax_array *inv = un(b, AX_P_RSQRT, bi(b, AX_P_ADD, var, lit(b, AX_F32, 1e-5)));
    out[0] = bi(b, AX_P_MUL, d, bcast(b, inv, 2, SH(8, 37), AX(0)));
    return 1;
}

/* reductions over axes of length 1, over no axes, and over other axes of the same values */
static int degenerate_reductions(tb *b, ax_array **x, ax_array **out) {
    ax_array *e = bi(b, AX_P_MUL, x[0], x[0]);
    out[0] = reduce(b, AX_P_REDUCE_SUM, e, 1, AX(1));
    out[1] = reduce(b, AX_P_REDUCE_SUM, e, 0, AX(0));
    out[2] = reduce(b, AX_P_REDUCE_MAX, e, 1, AX(2));
    out[3] = reduce(b, AX_P_REDUCE_PROD, bi(b, AX_P_ADD, e, lit(b, AX_F32, 1)), 2, AX(0, 1));
    out[4] = reduce(b, AX_P_REDUCE_MIN, x[1], 1, AX(0));
    return 5;
}

/* loops big enough to be split over the pool's threads */
static int large(tb *b, ax_array **x, ax_array **out) {
    ax_array *y = bi(b, AX_P_ADD, bi(b, AX_P_MUL, x[0], x[0]), un(b, AX_P_TANH, x[0]));
    out[0] = y;
    out[1] = reduce(b, AX_P_REDUCE_SUM, x[0], 1, AX(1));
    out[2] = reduce(b, AX_P_REDUCE_MAX, y, 1, AX(0));
    out[3] = reduce(b, AX_P_REDUCE_SUM, bi(b, AX_P_MUL, x[0], lit(b, AX_F32, 2)), 1, AX(0));
    return 4;
}

/* elementwise work on arguments that are views: transposed, reversed, strided, broadcast */
static int strided_args(tb *b, ax_array **x, ax_array **out) {
    out[0] = bi(b, AX_P_ADD, un(b, AX_P_EXP, x[0]), bi(b, AX_P_MUL, x[1], x[2]));
    out[1] = reduce(b, AX_P_REDUCE_SUM, bi(b, AX_P_MUL, x[0], x[3]), 1, AX(1));
    out[2] = x[1];
    out[3] = dot(b, x[0], transpose(b, x[3], AX(1, 0)), 1, 0, 0);
    return 4;
}

#define MAX_PIN 10

typedef struct program {
    const char *name;
    body_fn body;
    int nin;
    ax_aval in[MAX_PIN];
    domain dom[MAX_PIN];
    int index_max;
    view_kind view[MAX_PIN]; /* how an argument is passed (all describe the same logical type) */
} program;

#define F32(...)                                                                                   \
    {                                                                                              \
        .dtype = AX_F32, .ndim = sizeof(SH(__VA_ARGS__)) / 8, .shape = { __VA_ARGS__ }             \
    }
#define F64(...)                                                                                   \
    {                                                                                              \
        .dtype = AX_F64, .ndim = sizeof(SH(__VA_ARGS__)) / 8, .shape = { __VA_ARGS__ }             \
    }
#define I32(...)                                                                                   \
    {                                                                                              \
        .dtype = AX_I32, .ndim = sizeof(SH(__VA_ARGS__)) / 8, .shape = { __VA_ARGS__ }             \
    }
#define U32(...)                                                                                   \
    {                                                                                              \
        .dtype = AX_U32, .ndim = sizeof(SH(__VA_ARGS__)) / 8, .shape = { __VA_ARGS__ }             \
    }
#define I64(...)                                                                                   \
    {                                                                                              \
        .dtype = AX_I64, .ndim = sizeof(SH(__VA_ARGS__)) / 8, .shape = { __VA_ARGS__ }             \
    }
#define U8(...)                                                                                    \
    {                                                                                              \
        .dtype = AX_U8, .ndim = sizeof(SH(__VA_ARGS__)) / 8, .shape = { __VA_ARGS__ }              \
    }
#define BOOL(...)                                                                                  \
    {                                                                                              \
        .dtype = AX_BOOL, .ndim = sizeof(SH(__VA_ARGS__)) / 8, .shape = { __VA_ARGS__ }            \
    }
#define SCALAR(t)                                                                                  \
    { .dtype = t, .ndim = 0 }

static const program corpus[] = {
    {"mlp_loss",
     mlp_loss,
     6,
     {F32(8, 5), F32(5, 16), F32(16), F32(16, 3), F32(3), F32(8, 3)},
     {D_SMALL, D_SMALL, D_SMALL, D_SMALL, D_SMALL, D_SMALL},
     0,
     {0}},
    {"softmax_xent", softmax_xent, 2, {F32(6, 10), I32(6)}, {D_SMALL, D_INDEX}, 10, {0}},
    {"row_normalise", row_normalise, 1, {F32(7, 37)}, {D_EXACT}, 0, {0}},
    {"column_sums", column_sums, 2, {F64(40, 5), F32(33, 6)}, {D_EXACT, D_EXACT}, 0, {0}},
    {"full_reductions",
     full_reductions,
     4,
     {F32(4, 33), F32(37), I32(4, 33), BOOL(37)},
     {D_EXACT, D_POW2, D_ANY, D_ANY},
     0,
     {0}},
    {"middle_axes",
     middle_axes,
     3,
     {F32(3, 5, 7), I64(3, 5, 7), F64(2, 3, 4, 5)},
     {D_EXACT, D_ANY, D_EXACT},
     0,
     {0}},
    {"transposes",
     transposes,
     3,
     {F32(5, 7), F32(7, 5), F32(3, 5, 17)},
     {D_ANY, D_ANY, D_ANY},
     0,
     {0}},
    {"iota_select", iota_select, 1, {F32(6, 37)}, {D_ANY}, 0, {0}},
    {"int_wrap",
     int_wrap,
     8,
     {I32(37), I32(37), U32(37), U32(37), U8(4, 33), U8(4, 33), I64(37), I64(37)},
     {D_ANY, D_ANY, D_ANY, D_ANY, D_ANY, D_ANY, D_ANY, D_ANY},
     0,
     {0}},
    {"shifts",
     shifts,
     6,
     {I32(37), I32(37), U32(37), U32(37), I64(37), I64(37)},
     {D_ANY, D_SHIFT, D_ANY, D_SHIFT, D_ANY, D_SHIFT},
     0,
     {0}},
    {"bool_logic", bool_logic, 2, {BOOL(4, 33), BOOL(4, 33)}, {D_ANY, D_ANY}, 0, {0}},
    {"conversions",
     conversions,
     6,
     {F32(37), I32(37), U8(37), BOOL(37), I64(37), U32(37)},
     {D_ANY, D_ANY, D_ANY, D_ANY, D_ANY, D_ANY},
     0,
     {0}},
    {"integer_pow", integer_pows, 2, {F32(37), F64(4, 33)}, {D_ANY, D_ANY}, 0, {0}},
    {"clamp",
     clamps,
     4,
     {F32(4, 33), F32(4, 33), F32(4, 33), I32(37)},
     {D_ANY, D_ANY, D_ANY, D_ANY},
     0,
     {0}},
    {"max_min_nan", max_min_nan, 2, {F32(4, 33), F32(4, 33)}, {D_NOZNEG, D_NOZNEG}, 0, {0}},
    {"dots",
     dots,
     10,
     {F32(5, 3), F32(3, 4), F32(3, 5), F32(3, 4), F32(4, 3), F32(2, 5, 3), F32(2, 3, 4), F32(3),
      I32(5, 3), I32(3, 4)},
     {D_SMALL, D_SMALL, D_SMALL, D_SMALL, D_SMALL, D_SMALL, D_SMALL, D_SMALL, D_ANY, D_ANY},
     0,
     {0}},
    {"rank0",
     rank0,
     3,
     {SCALAR(AX_F32), SCALAR(AX_F32), SCALAR(AX_I32)},
     {D_SMALL, D_POS, D_ANY},
     0,
     {0}},
    {"empty",
     empty_arrays,
     4,
     {F32(0, 5), F32(5, 0), F32(3, 0, 4), F32(5, 3)},
     {D_ANY, D_ANY, D_ANY, D_ANY},
     0,
     {0}},
    {"activations", activations, 2, {F32(4, 33), F64(37)}, {D_ANY, D_ANY}, 0, {0}},
    {"with_eager_steps", with_eager_steps, 1, {F32(3, 17)}, {D_EXACT}, 0, {0}},
    {"outer", outer, 3, {F32(6), F32(37), F32(6, 37)}, {D_ANY, D_ANY, D_NOZNEG}, 0, {0}},
    {"two_reductions", two_reductions, 1, {F32(9, 37)}, {D_EXACT}, 0, {0}},
    {"degenerate_reductions",
     degenerate_reductions,
     2,
     {F32(4, 1, 37), I32(1, 9)},
     {D_EXACT, D_ANY},
     0,
     {0}},
    {"layer_norm", layer_norm, 1, {F32(8, 37)}, {D_SMALL}, 0, {0}},
    {"large", large, 1, {F32(300, 301)}, {D_EXACT}, 0, {0}},
    {"strided_args",
     strided_args,
     4,
     {F32(5, 7), F32(5, 7), F32(5, 7), F32(5, 7)},
     {D_EXACT, D_EXACT, D_EXACT, D_EXACT},
     0,
     {V_TRANSPOSED, V_REVERSED, V_BROADCAST, V_STRIDED}},
};

enum { NPROGRAMS = sizeof corpus / sizeof *corpus };

/* A group of programs traced as one function (one compile): inputs and outputs concatenated. */
typedef struct group {
    const program *progs[NPROGRAMS];
    int n;
    int nout[NPROGRAMS];
} group;

static int group_fn(ax_ctx *cx, void *closure, int nin, ax_array **in, int *nout, ax_array ***out) {
    group *g = closure;
    tb *b = calloc(1, sizeof *b);
    ax_array **res = calloc(16 * NPROGRAMS, sizeof *res);
    if (!b || !res) {
        free(b);
        free(res);
        return -1;
    }
    b->cx = cx;
    int total = 0, used = 0, rc = 0;
    for (int i = 0; i < g->n && !rc; i++) {
        g->nout[i] = g->progs[i]->body(b, in + used, res + total);
        used += g->progs[i]->nin;
        for (int k = 0; k < g->nout[i]; k++)
            if (!res[total + k]) rc = -1;
        total += g->nout[i];
    }
    (void)nin;
    if (!rc) {
        *out = calloc((size_t)total + 1, sizeof **out);
        if (!*out) rc = -1;
        for (int k = 0; !rc && k < total; k++) (*out)[k] = ax_array_retain(res[k]);
        *nout = total;
    }
    for (int i = 0; i < b->n; i++) ax_array_release(b->held[i]);
    free(b);
    free(res);
    return rc;
}

/* Runs a group's programs eagerly and through jit, comparing them; whether jit ran the quick
 * tier's code (AX_JIT_QUICK=only) or GCC's. */
static bool run_group(ax_ctx *cx, group *g, uint64_t seed, check *total) {
    ax_aval types[NPROGRAMS * MAX_PIN];
    int nin = 0;
    for (int i = 0; i < g->n; i++)
        for (int k = 0; k < g->progs[i]->nin; k++) types[nin++] = g->progs[i]->in[k];
    int nout = 0;
    ax_ir *ir = ax_trace_to_ir(cx, group_fn, g, nin, types, &nout);
    if (!ir) fail_msg("tracing %s failed: %s", g->progs[0]->name, cx->err.message);
    ax_array **args = calloc((size_t)nin + 1, sizeof *args);
    assert_non_null(args);
    rng r = {.s = seed};
    for (int i = 0, a = 0; i < g->n; i++) {
        const program *pr = g->progs[i];
        for (int k = 0; k < pr->nin; k++, a++)
            args[a] = pr->view[k] ? make_view_arg(cx, &r, &pr->in[k], pr->dom[k], pr->view[k])
                                  : make_input(cx, &r, &pr->in[k], pr->dom[k], pr->index_max);
    }
    /* each program's outputs compared with its own rule */
    ax_array **want = calloc((size_t)nout + 1, sizeof *want);
    ax_array **got = calloc((size_t)nout + 1, sizeof *got);
    assert_true(want && got);
    if (ax_ir_eval(cx, ir, args, want)) fail_msg("eager evaluation failed: %s", cx->err.message);
    ax_jit_program *p = ax_jit_build(cx, ir);
    assert_non_null(p);
    const ax_jit_info *info = ax_jit_program_info(p);
    if (ax_jit_run(cx, p, args, got)) fail_msg("native run failed: %s", cx->err.message);
    check_compiled(ir);
    for (int i = 0, o = 0; i < g->n; i++) {
        check c = {0};
        for (int k = 0; k < g->nout[i]; k++, o++) {
            char what[96];
            snprintf(what, sizeof what, "%s output %d", g->progs[i]->name, k);
            compare(what, want[o], got[o], NULL, &c);
        }
        if (c.mismatches)
            print_message("  %-16s %d elements differ\n", g->progs[i]->name, c.mismatches);
        total->mismatches += c.mismatches;
        if (c.worst_ulp > total->worst_ulp) total->worst_ulp = c.worst_ulp;
    }
    print_message("group of %d: %d equations, %d loops, %d products, %d eager, built in %.0f ms\n",
                  g->n, ir->neqns, info->nloops, info->ngemms, info->neager, info->build_ms);
    bool quick = info->quick;
    assert_true(info->native || quick);
    assert_true(info->nloops >= 1);
    for (int k = 0; k < nout; k++) {
        ax_array_release(want[k]);
        ax_array_release(got[k]);
    }
    for (int i = 0; i < nin; i++) ax_array_release(args[i]);
    free(want), free(got), free(args);
    ax_jit_free(p);
    ax_ir_release(ir);
    return quick;
}

static void test_corpus(void **state) {
    ax_ctx *cx = *state;
    check total = {0};
    /* programs that only make sense alone (rank 0, empty, large, views) get their own compile,
     * the rest share one */
    group shared = {0};
    for (int i = 0; i < NPROGRAMS; i++) {
        const char *n = corpus[i].name;
        bool alone = !strcmp(n, "rank0") || !strcmp(n, "empty") || !strcmp(n, "large") ||
                     !strcmp(n, "strided_args");
        if (alone) {
            group g = {.progs = {&corpus[i]}, .n = 1};
            run_group(cx, &g, 100 + (uint64_t)i, &total);
        } else {
            shared.progs[shared.n++] = &corpus[i];
        }
    }
    run_group(cx, &shared, 7, &total);
    print_message("corpus: %d programs, worst %lld ulp\n", NPROGRAMS, (long long)total.worst_ulp);
    if (total.mismatches) fail_msg("%d elements differ between eager and jit", total.mismatches);
}

/* The quick tier (compiler/quickgen.h) on the corpus, one program at a time: each it renders
 * gives the eager kernels' bits. AX_JIT_QUICK is read when a context first uses jit: the
 * fixture's context is fresh. */
static void test_corpus_quick(void **state) {
    if (!ax_quickgen_supported()) skip(); /* no AVX2: the tier never runs here */
    ax_ctx *cx = *state;
    check total = {0};
    int rendered = 0;
    for (int i = 0; i < NPROGRAMS; i++) {
        group g = {.progs = {&corpus[i]}, .n = 1};
        rendered += run_group(cx, &g, 300 + (uint64_t)i, &total);
    }
    print_message("quick tier: %d of %d programs rendered, worst %lld ulp\n", rendered, NPROGRAMS,
                  (long long)total.worst_ulp);
    if (total.mismatches) fail_msg("%d elements differ between eager and jit", total.mismatches);
    assert_true(rendered >= NPROGRAMS / 2);
}

/* A program whose outputs are an input, a literal, an input twice and a computed value. */
static void test_outputs_inputs_and_literals(void **state) {
    ax_ctx *cx = *state;
    ax_aval t = {.dtype = AX_F32, .ndim = 1, .shape = {37}};
    ax_ir_builder *b = ax_ir_builder_new();
    int x = ax_ir_add_input(b, &t), y = ax_ir_add_input(b, &t), s;
    assert_int_equal(ax_ir_add_eqn(b, AX_P_ADD, &(ax_params){0}, 2,
                                   (ax_ir_atom[]){{.var = x}, {.var = y}}, 1, &t, &s, 0, NULL),
                     0);
    ax_array *three = ax_array_scalar(cx, AX_F32, 3.0);
    ax_ir *ir = ax_ir_builder_finish(
        b, 5,
        (ax_ir_atom[]){{.var = x}, {.var = -1, .lit = three}, {.var = s}, {.var = y}, {.var = x}});
    ax_array_release(three);
    rng r = {.s = 3};
    ax_array *args[2] = {make_input(cx, &r, &t, D_ANY, 0), make_input(cx, &r, &t, D_ANY, 0)};
    check c = {0};
    ax_jit_info info = run_both(cx, ir, args, NULL, &c);
    assert_true(info.native);
    assert_int_equal(c.mismatches, 0);
    /* and the outputs that are inputs are the caller's arrays, unchanged */
    ax_jit_program *p = ax_jit_build(cx, ir);
    ax_array *outs[5];
    assert_int_equal(ax_jit_run(cx, p, args, outs), 0);
    assert_ptr_equal(outs[0], args[0]);
    assert_ptr_equal(outs[3], args[1]);
    assert_int_equal(outs[1]->ndim, 0);
    assert_true(ax_array_get_f64(outs[1], 0) == 3.0);
    for (int k = 0; k < 5; k++) ax_array_release(outs[k]);
    ax_jit_free(p);
    ax_array_release(args[0]);
    ax_array_release(args[1]);
    ax_ir_release(ir);
}

/* ================================================================ 3. accuracy */

static double ref_rsqrt(double x) {
    return (double)(1.0L / sqrtl((long double)x));
}

/* erf^-1 by Newton's method on erfl in long double, from a double estimate. */
static double ref_erf_inv(double x) {
    if (x <= -1) return x == -1 ? -INFINITY : NAN;
    if (x >= 1) return x == 1 ? INFINITY : NAN;
    if (x == 0) return x;
    long double y = 0, lx = x;
    /* start: the inverse of erf's asymptotic forms, refined by bisection-safe Newton */
    long double lo = x < 0 ? -10 : 0, hi = x < 0 ? 0 : 10;
    for (int i = 0; i < 80; i++) { /* bisection to ~1e-24 relative of the bracket */
        y = (lo + hi) / 2;
        if (erfl(y) < lx)
            lo = y;
        else
            hi = y;
    }
    for (int i = 0; i < 3; i++) {
        long double f = erfl(y) - lx;
        long double df = 2 / sqrtl(3.14159265358979323846264338327950288L) * expl(-y * y);
        if (df == 0) break;
        y -= f / df;
    }
    return (double)y;
}

typedef struct acc_case {
    ax_prim prim;
    double lo, hi; /* the sweep's range */
    double (*ref)(double);
    int64_t max_ulp;
    bool edges; /* the sweep starts with vecmath_edges (whatever lo and hi) */
} acc_case;

/* erf_inv is the exception: it is XLA's f32 algorithm, kept bit for bit so that
 * random.normal draws JAX's numbers, and that algorithm is 3-5 ulp from the correctly rounded
 * result for |x| < 0.99 and up to ~65 ulp towards +-1 (JAX has the same error). The bounds
 * below guard against regressions; the differential check holds jit to eager's bits. */
static const acc_case acc_cases[] = {
    {AX_P_EXP, -104, 89, exp, 2, true},
    {AX_P_LOG, 0, FLT_MAX, log, 2, true},
    {AX_P_LOG1P, -1, FLT_MAX, log1p, 2, true},
    {AX_P_EXPM1, -104, 89, expm1, 2, true},
    {AX_P_TANH, -20, 20, tanh, 2, true},
    {AX_P_LOGISTIC, -110, 90, vecmath_ref_logistic, 2, true},
    {AX_P_SIN, -FLT_MAX, FLT_MAX, sin, 2, true},
    {AX_P_COS, -FLT_MAX, FLT_MAX, cos, 2, true},
    {AX_P_ERF, -10, 10, erf, 2, true},
    {AX_P_ERF_INV, -0.99, 0.99, ref_erf_inv, 5, false},
    {AX_P_ERF_INV, -1, 1, ref_erf_inv, 80, false},
    {AX_P_SQRT, 0, FLT_MAX, sqrt, 2, true},
    {AX_P_RSQRT, 0, FLT_MAX, ref_rsqrt, 2, true},
    {AX_P_POW, 0, 0, NULL, 2, false}, /* pow's inputs: see pow_inputs */
};

enum { NACC = sizeof acc_cases / sizeof *acc_cases, NSWEEP = 100000 };

static float random_float_in(rng *r, double lo, double hi) {
    for (;;) { /* random bit patterns: every binade equally, denormals included */
        uint32_t u = (uint32_t)rnd(r);
        float f;
        memcpy(&f, &u, 4);
        if (isfinite(f) && f >= lo && f <= hi) return f;
    }
}

/* The edges of the functions' regimes (vecmath_test_util.h), then half the sweep evenly spaced
 * over the part of [lo, hi] where the function changes most (|x| <= 4, or [lo, hi] if
 * smaller), half random bit patterns over [lo, hi] (so sin and cos see blocks of arguments
 * within their vector range only, and blocks mixing in larger ones). */
static void sweep_inputs(rng *r, const acc_case *c, float *x) {
    double a = c->lo > -4 ? c->lo : -4, b = c->hi < 4 ? c->hi : 4;
    int k = c->edges ? vecmath_edges(x) : 0;
    for (int i = k; i < NSWEEP; i++)
        x[i] = i < NSWEEP / 2 ? (float)(a + (b - a) * (i + 0.5) / (NSWEEP / 2))
                              : random_float_in(r, c->lo, c->hi);
}

/* pow: positive bases of every size with exponents in [-40, 40], bases near 1 with large
 * exponents, negative bases with integer exponents, and zeros. */
static void pow_inputs(rng *r, float *x, float *y) {
    for (int i = 0; i < NSWEEP; i++) {
        switch (i % 4) {
        case 0:
            x[i] = random_float_in(r, 0, FLT_MAX);
            y[i] = (float)rnd_in(r, -40, 40);
            break;
        case 1:
            x[i] = (float)rnd_in(r, 0.5, 2);
            y[i] = (float)rnd_in(r, -200, 200);
            break;
        case 2:
            x[i] = -(float)rnd_in(r, 0, 10);
            y[i] = (float)(int)rnd_in(r, -20, 20);
            break;
        default:
            x[i] = (float)rnd_in(r, 0, 3);
            y[i] = (float)rnd_in(r, -3, 3);
            if (i % 64 == 3) x[i] = 0;
            break;
        }
    }
}

static void test_f32_accuracy(void **state) {
    ax_ctx *cx = *state;
    ax_aval t = {.dtype = AX_F32, .ndim = 1, .shape = {NSWEEP}};
    ax_ir_builder *b = ax_ir_builder_new();
    ax_ir_atom outs[NACC];
    ax_array *args[NACC + 1];
    float *data = malloc(2 * (size_t)NSWEEP * sizeof *data);
    assert_non_null(data);
    rng r = {.s = 4};
    int nin = 0;
    for (int c = 0; c < NACC; c++) {
        const acc_case *ac = &acc_cases[c];
        int n = ac->prim == AX_P_POW ? 2 : 1, v;
        ax_ir_atom in[2];
        if (ac->prim == AX_P_POW)
            pow_inputs(&r, data, data + NSWEEP);
        else
            sweep_inputs(&r, ac, data);
        for (int k = 0; k < n; k++) {
            in[k] = (ax_ir_atom){.var = ax_ir_add_input(b, &t)};
            args[nin++] = ax_array_from_data(cx, AX_F32, 1, t.shape, data + k * NSWEEP);
        }
        assert_int_equal(ax_ir_add_eqn(b, ac->prim, &(ax_params){0}, n, in, 1, &t, &v, 0, NULL), 0);
        outs[c] = (ax_ir_atom){.var = v};
    }
    free(data);
    ax_ir *ir = ax_ir_builder_finish(b, NACC, outs);
    ax_jit_program *p = ax_jit_build(cx, ir);
    assert_true(ax_jit_program_info(p)->native);
    print_message("%d functions on %d inputs each: built in %.0f ms\n", NACC, NSWEEP,
                  ax_jit_program_info(p)->build_ms);
    ax_array *got[NACC], *want[NACC];
    assert_int_equal(ax_jit_run(cx, p, args, got), 0);
    assert_int_equal(ax_ir_eval(cx, ir, args, want), 0);
    int bad = 0;
    for (int c = 0, a = 0; c < NACC; c++) {
        const acc_case *ac = &acc_cases[c];
        const float *x = ax_array_data(args[a]), *y = ax_array_data(got[c]);
        const float *x2 = ac->prim == AX_P_POW ? ax_array_data(args[a + 1]) : NULL;
        a += x2 ? 2 : 1;
        int64_t worst = 0;
        float worst_x = 0, worst_x2 = 0;
        for (int i = 0; i < NSWEEP; i++) {
            double ref = x2 ? pow((double)x[i], (double)x2[i]) : ac->ref((double)x[i]);
            float rf = (float)ref, yf = y[i];
            uint32_t rb, yb;
            memcpy(&rb, &rf, 4);
            memcpy(&yb, &yf, 4);
            int64_t d = float_distance(rb, yb, AX_F32);
            if (d > worst) {
                worst = d;
                worst_x = x[i];
                worst_x2 = x2 ? x2[i] : 0;
            }
        }
        check same = {0}; /* jit must also give the eager kernel's bits */
        compare(ax_prim_get(ac->prim)->name, want[c], got[c], NULL, &same);
        bad += same.mismatches;
        char at[80] = "";
        if (worst && x2)
            snprintf(at, sizeof at, " at pow(%.9g, %.9g)", worst_x, worst_x2);
        else if (worst)
            snprintf(at, sizeof at, " at x = %.9g", worst_x);
        char name[64];
        snprintf(name, sizeof name, "%s [%g, %g]", ax_prim_get(ac->prim)->name, ac->lo, ac->hi);
        if (ac->prim == AX_P_POW) snprintf(name, sizeof name, "pow");
        if (worst == FAR)
            print_message("%-30s an infinity or NaN where the value is not one%s\n", name, at);
        else
            print_message("%-30s worst %lld ulp%s%s\n", name, (long long)worst, at,
                          ac->max_ulp > 2 ? " (XLA's algorithm, see acc_cases)" : "");
        if (worst > ac->max_ulp) {
            print_message("ACCURACY %s: %lld ulp from the correctly rounded value (allowed: "
                          "%lld)\n",
                          name, (long long)worst, (long long)ac->max_ulp);
            bad++;
        }
        ax_array_release(got[c]);
        ax_array_release(want[c]);
    }
    for (int i = 0; i < nin; i++) ax_array_release(args[i]);
    ax_jit_free(p);
    ax_ir_release(ir);
    if (bad) fail_msg("%d accuracy or eager/jit failures", bad);
}

/* ================================================================ 4. Ctrl-C */

/* A compile that Ctrl-C interrupts (the flag set before it starts, so the test does not
 * depend on timing) is abandoned: the build fails with KeyboardInterrupt, the flag is
 * consumed, no compiler process is left and nothing reaches the cache; the next build works. */
static void test_interrupted_compile(void **state) {
    ax_ctx *cx = *state;
    char dir[] = "/tmp/ax-test-interrupt-XXXXXX";
    assert_non_null(mkdtemp(dir));
    const char *old = getenv("XDG_CACHE_HOME");
    char *saved = old ? strdup(old) : NULL;
    setenv("XDG_CACHE_HOME", dir, 1); /* read when the context first uses jit: now */
    ax_aval t = {.dtype = AX_F32, .ndim = 1, .shape = {37}};
    ax_ir_builder *b = ax_ir_builder_new();
    int x = ax_ir_add_input(b, &t), y;
    assert_int_equal(
        ax_ir_add_eqn(b, AX_P_SIN, &(ax_params){0}, 1, &(ax_ir_atom){.var = x}, 1, &t, &y, 0, NULL),
        0);
    ax_ir *ir = ax_ir_builder_finish(b, 1, &(ax_ir_atom){.var = y});
    cx->interrupt = 1;
    assert_null(ax_jit_build(cx, ir));
    assert_int_equal(cx->err.kind, AX_ERR_INTERRUPT);
    assert_int_equal(cx->interrupt, 0);
    ax_error_clear(cx);
    errno = 0;
    assert_int_equal(waitpid(-1, NULL, WNOHANG), -1); /* no child, finished or not */
    assert_int_equal(errno, ECHILD);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "find %s -name '*.so*' | grep -q .", dir);
    assert_int_not_equal(system(cmd), 0); /* no entry, no temporary file */
    ax_jit_program *p = ax_jit_build(cx, ir);
    assert_non_null(p);
    assert_true(ax_jit_program_info(p)->native);
    ax_jit_free(p);
    ax_ir_release(ir);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
    if (saved)
        setenv("XDG_CACHE_HOME", saved, 1);
    else
        unsetenv("XDG_CACHE_HOME");
    free(saved);
}

/* An argument runs only the tests whose names match it (cmocka's filter). */
int main(int argc, char **argv) {
    if (argc > 1) cmocka_set_test_filter(argv[1]);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_every_primitive, jit_test_setup, jit_test_teardown),
        cmocka_unit_test_setup_teardown(test_custom_linear, jit_test_setup, jit_test_teardown),
        cmocka_unit_test_setup_teardown(test_corpus, jit_test_setup, jit_test_teardown),
        cmocka_unit_test_setup_teardown(test_corpus_quick, jit_test_quick_setup, jit_test_teardown),
        cmocka_unit_test_setup_teardown(test_outputs_inputs_and_literals, jit_test_setup,
                                        jit_test_teardown),
        cmocka_unit_test_setup_teardown(test_f32_accuracy, jit_test_setup, jit_test_teardown),
        cmocka_unit_test_setup_teardown(test_interrupted_compile, jit_test_setup,
                                        jit_test_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/* The one table of primitives, its eager adapters onto runtime/ kernels, and bind. */
#include "primitive.h"

#include <stdlib.h>
#include <string.h>

#include "../runtime/creation.h"
#include "../runtime/dynamic_slice.h"
#include "../runtime/prng.h"
#include "../runtime/shape_ops.h"
#include "../runtime/sort.h"
#include "ad_rules.h"
#include "call.h"
#include "collectives.h"
#include "control_flow.h"
#include "conv_rules.h"
#include "debug_callback.h"
#include "ir.h"
#include "linalg_rules.h"
#include "pmap.h"
#include "shape_rules.h"
#include "vmap.h"
#include "trace.h"

/* ---- eager rules: adapters from (inputs, params) to the runtime kernels ---- */

#define EAGER(name)                                                                                \
    static int eager_##name(ax_ctx *cx, int nin, ax_array **in, const ax_params *p, ax_array **out)

/* Stores a kernel's single result: 0, or -1 when the kernel failed (it recorded the error). */
static int one(ax_array *result, ax_array **out) {
    out[0] = result;
    return result ? 0 : -1;
}

#define UNARY_EAGER(name, op)                                                                      \
    EAGER(name) {                                                                                  \
        (void)nin, (void)p;                                                                        \
        return one(ax_unary(cx, op, in[0]), out);                                                  \
    }
#define BINARY_EAGER(name, op)                                                                     \
    EAGER(name) {                                                                                  \
        (void)nin, (void)p;                                                                        \
        return one(ax_binary(cx, op, in[0], in[1]), out);                                          \
    }
#define REDUCE_EAGER(name, op)                                                                     \
    EAGER(name) {                                                                                  \
        (void)nin;                                                                                 \
        return one(ax_reduce(cx, op, in[0], p->naxes, p->axes), out);                              \
    }
#define CUMULATIVE_EAGER(name, op)                                                                 \
    EAGER(name) {                                                                                  \
        (void)nin;                                                                                 \
        return one(ax_cumulative(cx, op, in[0], p->axes[0], p->flag != 0), out);                   \
    }

// clang-format off
UNARY_EAGER(neg, AX_NEG) UNARY_EAGER(abs, AX_ABS) UNARY_EAGER(sign, AX_SIGN)
UNARY_EAGER(exp, AX_EXP) UNARY_EAGER(exp2, AX_EXP2) UNARY_EAGER(log, AX_LOG)
UNARY_EAGER(log1p, AX_LOG1P) UNARY_EAGER(expm1, AX_EXPM1) UNARY_EAGER(sin, AX_SIN)
UNARY_EAGER(cos, AX_COS) UNARY_EAGER(tan, AX_TAN) UNARY_EAGER(asin, AX_ASIN)
UNARY_EAGER(acos, AX_ACOS) UNARY_EAGER(atan, AX_ATAN) UNARY_EAGER(sinh, AX_SINH)
UNARY_EAGER(cosh, AX_COSH) UNARY_EAGER(tanh, AX_TANH) UNARY_EAGER(asinh, AX_ASINH)
UNARY_EAGER(acosh, AX_ACOSH) UNARY_EAGER(atanh, AX_ATANH) UNARY_EAGER(logistic, AX_LOGISTIC)
UNARY_EAGER(sqrt, AX_SQRT) UNARY_EAGER(rsqrt, AX_RSQRT) UNARY_EAGER(cbrt, AX_CBRT)
UNARY_EAGER(floor, AX_FLOOR) UNARY_EAGER(ceil, AX_CEIL) UNARY_EAGER(round, AX_ROUND)
UNARY_EAGER(erf, AX_ERF) UNARY_EAGER(erfc, AX_ERFC) UNARY_EAGER(erf_inv, AX_ERF_INV)
UNARY_EAGER(lgamma, AX_LGAMMA) UNARY_EAGER(digamma, AX_DIGAMMA)
UNARY_EAGER(is_finite, AX_IS_FINITE) UNARY_EAGER(not, AX_NOT) UNARY_EAGER(square, AX_SQUARE)

BINARY_EAGER(add, AX_ADD) BINARY_EAGER(sub, AX_SUB) BINARY_EAGER(mul, AX_MUL)
BINARY_EAGER(div, AX_DIV) BINARY_EAGER(floor_divide, AX_FLOOR_DIV) BINARY_EAGER(rem, AX_REM)
BINARY_EAGER(mod, AX_MOD) BINARY_EAGER(pow, AX_POW) BINARY_EAGER(max, AX_MAX)
BINARY_EAGER(min, AX_MIN) BINARY_EAGER(atan2, AX_ATAN2) BINARY_EAGER(nextafter, AX_NEXTAFTER)
BINARY_EAGER(eq, AX_EQ) BINARY_EAGER(ne, AX_NE) BINARY_EAGER(lt, AX_LT) BINARY_EAGER(le, AX_LE)
BINARY_EAGER(gt, AX_GT) BINARY_EAGER(ge, AX_GE) BINARY_EAGER(and, AX_AND)
BINARY_EAGER(or, AX_OR) BINARY_EAGER(xor, AX_XOR) BINARY_EAGER(shift_left, AX_SHL)
BINARY_EAGER(shift_right_logical, AX_SHR_LOGICAL)
BINARY_EAGER(shift_right_arithmetic, AX_SHR_ARITH)

REDUCE_EAGER(reduce_sum, AX_REDUCE_SUM) REDUCE_EAGER(reduce_prod, AX_REDUCE_PROD)
REDUCE_EAGER(reduce_max, AX_REDUCE_MAX) REDUCE_EAGER(reduce_min, AX_REDUCE_MIN)
REDUCE_EAGER(reduce_and, AX_REDUCE_AND) REDUCE_EAGER(reduce_or, AX_REDUCE_OR)

CUMULATIVE_EAGER(cumsum, AX_CUMSUM) CUMULATIVE_EAGER(cumprod, AX_CUMPROD)
CUMULATIVE_EAGER(cummax, AX_CUMMAX) CUMULATIVE_EAGER(cummin, AX_CUMMIN)
    // clang-format on

    EAGER(integer_pow) {
    (void)nin;
    return one(ax_integer_pow(cx, in[0], p->k), out);
}

EAGER(select) {
    (void)nin, (void)p;
    return one(ax_select(cx, in[0], in[1], in[2]), out);
}

EAGER(clamp) {
    (void)nin, (void)p;
    return one(ax_clamp(cx, in[0], in[1], in[2]), out);
}

EAGER(convert) {
    (void)nin;
    return one(ax_convert(cx, in[0], p->dtype, p->weak), out);
}

EAGER(bitcast) {
    (void)nin;
    return one(ax_bitcast(cx, in[0], p->dtype), out);
}

/* Eagerly there is nothing to stop: the identity. Transformations give it meaning. */
EAGER(stop_gradient) {
    (void)cx, (void)nin, (void)p;
    return one(ax_array_retain(in[0]), out);
}

EAGER(argmax) {
    (void)nin;
    return one(ax_argmax(cx, in[0], p->axes[0], p->dtype), out);
}

EAGER(argmin) {
    (void)nin;
    return one(ax_argmin(cx, in[0], p->axes[0], p->dtype), out);
}

EAGER(reshape) {
    (void)nin;
    return one(ax_reshape(cx, in[0], p->ndim, p->shape), out);
}

EAGER(transpose) {
    (void)nin;
    return one(ax_transpose(cx, in[0], p->axes), out);
}

EAGER(broadcast_in_dim) {
    (void)nin;
    return one(ax_broadcast_in_dim(cx, in[0], p->ndim, p->shape, p->axes), out);
}

EAGER(concatenate) {
    return one(ax_concatenate(cx, nin, in, p->axes[0]), out);
}

EAGER(slice) {
    (void)nin;
    return one(ax_slice(cx, in[0], p->lo, p->hi, p->step), out);
}

EAGER(pad) {
    (void)nin;
    return one(ax_pad(cx, in[0], in[1], p->lo, p->hi, p->step), out);
}

EAGER(squeeze) {
    (void)nin;
    return one(ax_squeeze(cx, in[0], p->naxes, p->axes), out);
}

EAGER(expand_dims) {
    (void)nin;
    return one(ax_expand_dims(cx, in[0], p->naxes, p->axes), out);
}

EAGER(rev) {
    (void)nin;
    return one(ax_rev(cx, in[0], p->naxes, p->axes), out);
}

EAGER(gather) {
    (void)nin;
    return one(ax_gather(cx, in[0], in[1], p->naxes, p->axes), out);
}

EAGER(scatter) {
    (void)nin;
    return one(ax_scatter(cx, in[0], in[1], in[2], p->naxes, p->axes, (ax_scatter_mode)p->flag),
               out);
}

/* Reads the rank-0 start indices of dynamic_slice / dynamic_update_slice. */
static void read_starts(int n, ax_array **starts, int64_t *out) {
    for (int i = 0; i < n; i++) out[i] = ax_array_get_i64(starts[i], 0);
}

EAGER(dynamic_slice) {
    int64_t starts[AX_MAX_RANK];
    read_starts(nin - 1, in + 1, starts);
    return one(ax_dynamic_slice(cx, in[0], starts, p->shape), out);
}

EAGER(dynamic_update_slice) {
    (void)p;
    int64_t starts[AX_MAX_RANK];
    read_starts(nin - 2, in + 2, starts);
    return one(ax_dynamic_update_slice(cx, in[0], in[1], starts), out);
}

EAGER(iota) {
    (void)nin, (void)in;
    return one(ax_iota(cx, p->dtype, p->ndim, p->shape, p->axes[0]), out);
}

EAGER(dot_general) {
    (void)nin;
    return one(ax_dot_general(cx, in[0], in[1], &p->dot), out);
}

EAGER(triangular_solve) {
    (void)nin;
    return one(ax_triangular_solve(cx, in[0], in[1], p->flag), out);
}

/* A custom_call outside differentiation: the function's body, output k. */
EAGER(custom_call) {
    const ax_ir *body = p->cb->body;
    ax_array **outs = calloc((size_t)body->nout + 1, sizeof *outs);
    if (!outs) return ax_error_oom(cx), -1;
    int rc = ax_ir_eval(cx, body, in, outs);
    (void)nin;
    out[0] = NULL;
    for (int j = 0; j < body->nout; j++) {
        if (!rc && j == p->k)
            out[0] = outs[j];
        else
            ax_array_release(outs[j]);
    }
    free(outs);
    return rc;
}

EAGER(cholesky) {
    (void)nin, (void)p;
    return one(ax_cholesky(cx, in[0]), out);
}

EAGER(sort) {
    (void)nin;
    return one(ax_sort(cx, in[0], p->axes[0], p->flag != 0), out);
}

EAGER(argsort) {
    (void)nin;
    return one(ax_argsort(cx, in[0], p->axes[0], p->flag != 0, p->dtype), out);
}

EAGER(threefry2x32) {
    (void)nin, (void)p;
    return ax_threefry2x32(cx, in[0], in[1], in[2], in[3], &out[0], &out[1]);
}

/* custom_vjp functions have a backward rule only: their tangents cannot be computed forward. */
EAGER(custom_linear) {
    (void)nin, (void)in, (void)out;
    ax_error(cx, AX_ERR_TYPE,
             "%s is a custom_vjp function: it can be differentiated in reverse mode (grad, vjp, "
             "jacrev) but not in forward mode (jvp, jacfwd, linearize); use custom_jvp for that",
             p->cb ? p->cb->name : "this function");
    return -1;
}

ax_callback *ax_callback_retain(ax_callback *cb) {
    if (cb) cb->refs++;
    return cb;
}

void ax_callback_release(ax_callback *cb) {
    if (!cb || --cb->refs > 0) return;
    if (cb->free) cb->free(cb->data);
    ax_ir_release(cb->body);
    free(cb);
}

/* ---- the table ---- */

enum {
    LIN = AX_PRIM_LINEAR,
    EW = AX_PRIM_ELEMENTWISE,
    ND = AX_PRIM_NONDIFF,
};

/* One single-output row. The jvp/transpose/batch/codegen slots are filled by the passes that
 * define them (compiler/ad.c and friends); their tests check that every row has what it needs. */
#define ROW(P, PRINTED, NIN, FLAGS, RULE, JVP, BATCH)                                              \
    [P] = &(const ax_prim_info) {                                                                  \
        .name = PRINTED, .nin = NIN, .nout = 1, .flags = FLAGS, .shape = ax_shape_##RULE,          \
        .eager = eager_##RULE, .jvp = (void *)(JVP),                                               \
        .transpose = ((FLAGS) & AX_PRIM_LINEAR) ? (void *)ax_transpose_linear : NULL,              \
        .batch = (void *)(BATCH)                                                                   \
    }

/* Flags follow JAX: LIN marks primitives with a transpose rule (linear in their float operands:
 * mul, div (in the numerator), select (in the values) and dot_general are linear in each
 * operand separately; convert is linear between float dtypes; scatter in (x, updates) for the
 * set/add modes). ND marks primitives whose outputs carry no derivative (bool/int results,
 * iota); floor/ceil/round/sign and stop_gradient are differentiable with a zero derivative. */
static const ax_prim_info *const table[AX_P_NPRIMS] = {
    ROW(AX_P_NEG, "neg", 1, LIN | EW, neg, ax_jvp_unary, ax_batch_elementwise),
    ROW(AX_P_ABS, "abs", 1, EW, abs, ax_jvp_unary, ax_batch_elementwise),
    ROW(AX_P_SIGN, "sign", 1, EW, sign, ax_jvp_zero, ax_batch_elementwise),
    ROW(AX_P_EXP, "exp", 1, EW, exp, ax_jvp_unary, ax_batch_elementwise),
    ROW(AX_P_EXP2, "exp2", 1, EW, exp2, ax_jvp_unary, ax_batch_elementwise),
    ROW(AX_P_LOG, "log", 1, EW, log, ax_jvp_unary, ax_batch_elementwise),
    ROW(AX_P_LOG1P, "log1p", 1, EW, log1p, ax_jvp_unary, ax_batch_elementwise),
    ROW(AX_P_EXPM1, "expm1", 1, EW, expm1, ax_jvp_unary, ax_batch_elementwise),
    ROW(AX_P_SIN, "sin", 1, EW, sin, ax_jvp_unary, ax_batch_elementwise),
    ROW(AX_P_COS, "cos", 1, EW, cos, ax_jvp_unary, ax_batch_elementwise),
    ROW(AX_P_TAN, "tan", 1, EW, tan, ax_jvp_unary, ax_batch_elementwise),
    ROW(AX_P_ASIN, "asin", 1, EW, asin, ax_jvp_unary, ax_batch_elementwise),
    ROW(AX_P_ACOS, "acos", 1, EW, acos, ax_jvp_unary, ax_batch_elementwise),
    ROW(AX_P_ATAN, "atan", 1, EW, atan, ax_jvp_unary, ax_batch_elementwise),
    ROW(AX_P_SINH, "sinh", 1, EW, sinh, ax_jvp_unary, ax_batch_elementwise),
    ROW(AX_P_COSH, "cosh", 1, EW, cosh, ax_jvp_unary, ax_batch_elementwise),
    ROW(AX_P_TANH, "tanh", 1, EW, tanh, ax_jvp_unary, ax_batch_elementwise),
    ROW(AX_P_ASINH, "asinh", 1, EW, asinh, ax_jvp_unary, ax_batch_elementwise),
    ROW(AX_P_ACOSH, "acosh", 1, EW, acosh, ax_jvp_unary, ax_batch_elementwise),
    ROW(AX_P_ATANH, "atanh", 1, EW, atanh, ax_jvp_unary, ax_batch_elementwise),
    ROW(AX_P_LOGISTIC, "logistic", 1, EW, logistic, ax_jvp_unary, ax_batch_elementwise),
    ROW(AX_P_SQRT, "sqrt", 1, EW, sqrt, ax_jvp_unary, ax_batch_elementwise),
    ROW(AX_P_RSQRT, "rsqrt", 1, EW, rsqrt, ax_jvp_unary, ax_batch_elementwise),
    ROW(AX_P_CBRT, "cbrt", 1, EW, cbrt, ax_jvp_unary, ax_batch_elementwise),
    ROW(AX_P_FLOOR, "floor", 1, EW, floor, ax_jvp_zero, ax_batch_elementwise),
    ROW(AX_P_CEIL, "ceil", 1, EW, ceil, ax_jvp_zero, ax_batch_elementwise),
    ROW(AX_P_ROUND, "round", 1, EW, round, ax_jvp_zero, ax_batch_elementwise),
    ROW(AX_P_ERF, "erf", 1, EW, erf, ax_jvp_unary, ax_batch_elementwise),
    ROW(AX_P_ERFC, "erfc", 1, EW, erfc, ax_jvp_unary, ax_batch_elementwise),
    ROW(AX_P_ERF_INV, "erf_inv", 1, EW, erf_inv, ax_jvp_unary, ax_batch_elementwise),
    ROW(AX_P_LGAMMA, "lgamma", 1, EW, lgamma, ax_jvp_unary, ax_batch_elementwise),
    ROW(AX_P_DIGAMMA, "digamma", 1, EW, digamma, ax_jvp_unary, ax_batch_elementwise),
    ROW(AX_P_IS_FINITE, "is_finite", 1, EW | ND, is_finite, NULL, ax_batch_elementwise),
    ROW(AX_P_NOT, "not", 1, EW | ND, not , NULL, ax_batch_elementwise),
    ROW(AX_P_SQUARE, "square", 1, EW, square, ax_jvp_unary, ax_batch_elementwise),
    ROW(AX_P_INTEGER_POW, "integer_pow", 1, EW, integer_pow, ax_jvp_unary, ax_batch_elementwise),

    ROW(AX_P_ADD, "add", 2, LIN | EW, add, ax_jvp_binary, ax_batch_elementwise),
    ROW(AX_P_SUB, "sub", 2, LIN | EW, sub, ax_jvp_binary, ax_batch_elementwise),
    ROW(AX_P_MUL, "mul", 2, LIN | EW, mul, ax_jvp_binary, ax_batch_elementwise),
    ROW(AX_P_DIV, "div", 2, LIN | EW, div, ax_jvp_binary, ax_batch_elementwise),
    ROW(AX_P_FLOOR_DIV, "floor_divide", 2, EW, floor_divide, ax_jvp_binary, ax_batch_elementwise),
    ROW(AX_P_REM, "rem", 2, EW, rem, ax_jvp_binary, ax_batch_elementwise),
    ROW(AX_P_MOD, "mod", 2, EW, mod, ax_jvp_binary, ax_batch_elementwise),
    ROW(AX_P_POW, "pow", 2, EW, pow, ax_jvp_binary, ax_batch_elementwise),
    ROW(AX_P_MAX, "max", 2, EW, max, ax_jvp_binary, ax_batch_elementwise),
    ROW(AX_P_MIN, "min", 2, EW, min, ax_jvp_binary, ax_batch_elementwise),
    ROW(AX_P_ATAN2, "atan2", 2, EW, atan2, ax_jvp_binary, ax_batch_elementwise),
    ROW(AX_P_NEXTAFTER, "nextafter", 2, EW, nextafter, ax_jvp_binary, ax_batch_elementwise),
    ROW(AX_P_EQ, "eq", 2, EW | ND, eq, NULL, ax_batch_elementwise),
    ROW(AX_P_NE, "ne", 2, EW | ND, ne, NULL, ax_batch_elementwise),
    ROW(AX_P_LT, "lt", 2, EW | ND, lt, NULL, ax_batch_elementwise),
    ROW(AX_P_LE, "le", 2, EW | ND, le, NULL, ax_batch_elementwise),
    ROW(AX_P_GT, "gt", 2, EW | ND, gt, NULL, ax_batch_elementwise),
    ROW(AX_P_GE, "ge", 2, EW | ND, ge, NULL, ax_batch_elementwise),
    ROW(AX_P_AND, "and", 2, EW | ND, and, NULL, ax_batch_elementwise),
    ROW(AX_P_OR, "or", 2, EW | ND, or, NULL, ax_batch_elementwise),
    ROW(AX_P_XOR, "xor", 2, EW | ND, xor, NULL, ax_batch_elementwise),
    ROW(AX_P_SHL, "shift_left", 2, EW | ND, shift_left, NULL, ax_batch_elementwise),
    ROW(AX_P_SHR_LOGICAL, "shift_right_logical", 2, EW | ND, shift_right_logical, NULL, ax_batch_elementwise),
    ROW(AX_P_SHR_ARITH, "shift_right_arithmetic", 2, EW | ND, shift_right_arithmetic, NULL, ax_batch_elementwise),

    ROW(AX_P_SELECT, "select", 3, LIN | EW, select, ax_jvp_linear, ax_batch_elementwise),
    ROW(AX_P_CLAMP, "clamp", 3, EW, clamp, ax_jvp_special, ax_batch_elementwise),
    ROW(AX_P_CONVERT, "convert_element_type", 1, LIN | EW, convert, ax_jvp_linear, ax_batch_elementwise),
    ROW(AX_P_BITCAST, "bitcast_convert_type", 1, EW | ND, bitcast, NULL, ax_batch_elementwise),
    ROW(AX_P_STOP_GRADIENT, "stop_gradient", 1, EW, stop_gradient, ax_jvp_zero, ax_batch_elementwise),

    ROW(AX_P_REDUCE_SUM, "reduce_sum", 1, LIN, reduce_sum, ax_jvp_linear, ax_batch_axes),
    ROW(AX_P_REDUCE_PROD, "reduce_prod", 1, 0, reduce_prod, ax_jvp_special, ax_batch_axes),
    ROW(AX_P_REDUCE_MAX, "reduce_max", 1, 0, reduce_max, ax_jvp_special, ax_batch_axes),
    ROW(AX_P_REDUCE_MIN, "reduce_min", 1, 0, reduce_min, ax_jvp_special, ax_batch_axes),
    ROW(AX_P_REDUCE_AND, "reduce_and", 1, ND, reduce_and, NULL, ax_batch_axes),
    ROW(AX_P_REDUCE_OR, "reduce_or", 1, ND, reduce_or, NULL, ax_batch_axes),
    ROW(AX_P_ARGMAX, "argmax", 1, ND, argmax, NULL, ax_batch_axes),
    ROW(AX_P_ARGMIN, "argmin", 1, ND, argmin, NULL, ax_batch_axes),
    ROW(AX_P_CUMSUM, "cumsum", 1, LIN, cumsum, ax_jvp_linear, ax_batch_axes),
    ROW(AX_P_CUMPROD, "cumprod", 1, 0, cumprod, ax_jvp_special, ax_batch_axes),
    ROW(AX_P_CUMMAX, "cummax", 1, 0, cummax, ax_jvp_special, ax_batch_axes),
    ROW(AX_P_CUMMIN, "cummin", 1, 0, cummin, ax_jvp_special, ax_batch_axes),

    ROW(AX_P_RESHAPE, "reshape", 1, LIN, reshape, ax_jvp_linear, ax_batch_shape),
    ROW(AX_P_TRANSPOSE, "transpose", 1, LIN, transpose, ax_jvp_linear, ax_batch_shape),
    ROW(AX_P_BROADCAST_IN_DIM, "broadcast_in_dim", 1, LIN, broadcast_in_dim, ax_jvp_linear, ax_batch_shape),
    ROW(AX_P_CONCATENATE, "concatenate", -1, LIN, concatenate, ax_jvp_linear, ax_batch_shape),
    ROW(AX_P_SLICE, "slice", 1, LIN, slice, ax_jvp_linear, ax_batch_shape),
    ROW(AX_P_PAD, "pad", 2, LIN, pad, ax_jvp_linear, ax_batch_shape),
    ROW(AX_P_SQUEEZE, "squeeze", 1, LIN, squeeze, ax_jvp_linear, ax_batch_shape),
    ROW(AX_P_EXPAND_DIMS, "expand_dims", 1, LIN, expand_dims, ax_jvp_linear, ax_batch_shape),
    ROW(AX_P_REV, "rev", 1, LIN, rev, ax_jvp_linear, ax_batch_shape),

    ROW(AX_P_GATHER, "gather", 2, LIN, gather, ax_jvp_linear, ax_batch_indexing),
    ROW(AX_P_SCATTER, "scatter", 3, LIN, scatter, ax_jvp_special, ax_batch_indexing),
    ROW(AX_P_DYNAMIC_SLICE, "dynamic_slice", -1, LIN, dynamic_slice, ax_jvp_linear, ax_batch_indexing),
    ROW(AX_P_DYNAMIC_UPDATE_SLICE, "dynamic_update_slice", -1, LIN, dynamic_update_slice, ax_jvp_linear, ax_batch_indexing),

    ROW(AX_P_IOTA, "iota", 0, ND, iota, NULL, NULL),
    ROW(AX_P_DOT_GENERAL, "dot_general", 2, LIN, dot_general, ax_jvp_special, ax_batch_dot_general),
    ROW(AX_P_CHOLESKY, "cholesky", 1, 0, cholesky, ax_jvp_special, ax_batch_axes),
    /* linear in b: its transpose solves with op(a)^T */
    ROW(AX_P_TRIANGULAR_SOLVE, "triangular_solve", 2, LIN, triangular_solve, ax_jvp_special, ax_batch_triangular_solve),
    /* factorisations: their rows sit with their rules */
    [AX_P_LU] = &ax_lu_info,
    [AX_P_EIGH] = &ax_eigh_info,
    [AX_P_SVD] = &ax_svd_info,
    [AX_P_QR] = &ax_qr_info,
    ROW(AX_P_SORT, "sort", 1, 0, sort, ax_jvp_special, ax_batch_axes),
    ROW(AX_P_ARGSORT, "argsort", 1, ND, argsort, NULL, ax_batch_axes),
    /* batched, it is forward mode (jacfwd of a custom_vjp function): its rule is the error */
    ROW(AX_P_CUSTOM_LINEAR, "custom_linear", -1, LIN, custom_linear, ax_jvp_linear, ax_batch_custom_call),
    ROW(AX_P_CUSTOM_CALL, "custom_call", -1, 0, custom_call, ax_jvp_special, ax_batch_custom_call),
    [AX_P_THREEFRY2X32] = &(const ax_prim_info){.name = "threefry2x32", .nin = 4, .nout = 2,
                                                .flags = EW | ND, .shape = ax_shape_threefry2x32,
                                                .eager = eager_threefry2x32,
                                                .batch = (void *)ax_batch_elementwise},
    [AX_P_DEBUG_CALLBACK] = &ax_debug_callback_info,
    /* higher-order primitives: their rows sit with their rules */
    [AX_P_COND] = &ax_cond_info,
    [AX_P_WHILE] = &ax_while_info,
    [AX_P_SCAN] = &ax_scan_info,
    [AX_P_CALL] = &ax_call_info,
    /* convolution and windowed reductions: their rows sit with their rules too */
    [AX_P_CONV_GENERAL_DILATED] = &ax_conv_general_dilated_info,
    [AX_P_REDUCE_WINDOW_SUM] = &ax_reduce_window_sum_info,
    [AX_P_REDUCE_WINDOW_MAX] = &ax_reduce_window_max_info,
    [AX_P_REDUCE_WINDOW_MIN] = &ax_reduce_window_min_info,
    [AX_P_SELECT_AND_GATHER_ADD] = &ax_select_and_gather_add_info,
    [AX_P_SELECT_AND_SCATTER_ADD] = &ax_select_and_scatter_add_info,
    [AX_P_PMAP] = &ax_pmap_info,
    /* collectives by axis name: compiler/collectives.c */
    [AX_P_PSUM] = &ax_psum_info,
    [AX_P_PMAX] = &ax_pmax_info,
    [AX_P_PMIN] = &ax_pmin_info,
    [AX_P_ALL_GATHER] = &ax_all_gather_info,
    [AX_P_PSUM_SCATTER] = &ax_psum_scatter_info,
    [AX_P_PPERMUTE] = &ax_ppermute_info,
    [AX_P_ALL_TO_ALL] = &ax_all_to_all_info,
    [AX_P_AXIS_INDEX] = &ax_axis_index_info,
};

const ax_prim_info *ax_prim_get(ax_prim p) {
    return (unsigned)p < AX_P_NPRIMS ? table[p] : NULL;
}

int ax_prim_nout(ax_prim p, const ax_params *params) {
    const ax_prim_info *info = table[p];
    return info->nout >= 0 ? info->nout : info->nout_of(params);
}

int ax_prim_lookup(const char *name) {
    for (int p = 0; p < AX_P_NPRIMS; p++)
        if (table[p]->name && !strcmp(table[p]->name, name)) return p;
    return -1;
}

void ax_aval_of(ax_aval *out, const ax_array *a) {
    out->dtype = a->dtype;
    out->weak = a->weak;
    out->ndim = a->ndim;
    memcpy(out->shape, a->shape, (size_t)a->ndim * sizeof *a->shape);
}

/* ---- bind ---- */

static int check_arity(ax_ctx *cx, ax_prim p, int nin) {
    const ax_prim_info *info = ax_prim_get(p);
    if (!info) {
        ax_error(cx, AX_ERR_RUNTIME, "internal error: no primitive numbered %d", (int)p);
        return -1;
    }
    if (nin < 0 || (info->nin >= 0 && nin != info->nin)) {
        ax_error(cx, AX_ERR_TYPE, "%s takes %d operand%s, got %d", info->name, info->nin,
                 info->nin == 1 ? "" : "s", nin);
        return -1;
    }
    return 0;
}

/* The primitive's shape rule, then runtime/array.h's invariant on its outputs: a result whose
 * size does not fit in 64 bits (a product of huge broadcast dimensions, an outer product of
 * long vectors) is a ValueError naming its shape, whatever the rule computed it from. */
static int infer(ax_ctx *cx, ax_prim p, int nin, const ax_aval *in, const ax_params *params,
                 ax_aval *out) {
    const ax_prim_info *info = table[p];
    if (info->shape(cx, nin, in, params, out)) return -1;
    for (int k = 0, nout = ax_prim_nout(p, params); k < nout; k++)
        if (!ax_shape_check(cx, info->name, out[k].dtype, out[k].ndim, out[k].shape)) return -1;
    return 0;
}

int ax_prim_infer(ax_ctx *cx, ax_prim p, int nin, const ax_aval *in, const ax_params *params,
                  ax_aval *out) {
    static const ax_params no_params;
    if (check_arity(cx, p, nin)) return -1;
    return infer(cx, p, nin, in, params ? params : &no_params, out);
}

/* Gives out the weak flag of its aval. A kernel may return a header it shares (its input
 * retained, a cached view): that one is not ours to change, so the flag goes on a new view. */
static int set_weak(ax_ctx *cx, ax_array **out, bool weak) {
    ax_array *a = *out;
    if (a->weak == weak) return 0;
    if (ax_refs_load(&a->refs) == 1) {
        a->weak = weak;
        return 0;
    }
    ax_array *v = ax_array_view(cx, a, a->ndim, a->shape, a->strides, a->offset);
    if (!v) return -1;
    v->weak = weak;
    ax_array_release(a);
    *out = v;
    return 0;
}

/* Checks the kernels' outputs against the shape rule (a disagreement is a bug in one of them,
 * reported rather than aborted on) and gives them the rule's weak flags. */
static int finish_outputs(ax_ctx *cx, const ax_prim_info *info, int nout, const ax_aval *want,
                          ax_array **out) {
    for (int k = 0; k < nout; k++) {
        char got[400], rule[400];
        if (!out[k]) {
            ax_error(cx, AX_ERR_RUNTIME, "internal error: the %s kernel returned no result",
                     info->name);
            return -1;
        }
        if (out[k]->dtype != want[k].dtype ||
            !ax_shape_equal(out[k]->ndim, out[k]->shape, want[k].ndim, want[k].shape)) {
            ax_array_type_format(got, sizeof got, out[k]);
            ax_type_format(rule, sizeof rule, want[k].dtype, want[k].ndim, want[k].shape);
            ax_error(cx, AX_ERR_RUNTIME,
                     "internal error: the %s kernel returned %s where its shape rule gives %s",
                     info->name, got, rule);
            return -1;
        }
        if (set_weak(cx, &out[k], want[k].weak)) return -1;
    }
    return 0;
}

static void release_outputs(int nout, ax_array **out) {
    for (int k = 0; k < nout; k++) {
        ax_array_release(out[k]);
        out[k] = NULL;
    }
}

void *ax_scratch(ax_ctx *cx, void *small, int cap, int n, size_t size) {
    if (n <= cap) return small;
    void *p = malloc((size_t)n * size);
    return p ? p : ax_error_oom(cx);
}

void ax_scratch_free(void *p, const void *small) {
    if (p != small) free(p);
}

/* The avals of the inputs, in `small` when they fit, else in a new allocation (NULL + error). */
static ax_aval *avals_of(ax_ctx *cx, int nin, ax_array **in, ax_aval *small, int nsmall) {
    ax_aval *avals = ax_scratch(cx, small, nsmall, nin, sizeof *avals);
    if (!avals) return NULL;
    for (int i = 0; i < nin; i++) ax_aval_of(&avals[i], in[i]);
    return avals;
}

static int bind_eager(ax_ctx *cx, ax_prim p, int nin, ax_array **in, const ax_params *params,
                      ax_array **out) {
    const ax_prim_info *info = table[p];
    int nout = ax_prim_nout(p, params);
    ax_aval small[8], want_small[4];
    small[0].ndim = 0; /* defined memory even for a primitive without inputs (iota) */
    ax_aval *avals = avals_of(cx, nin, in, small, 8);
    ax_aval *want = nout <= 4 ? want_small : malloc((size_t)nout * sizeof *want);
    int rc = avals && want ? 0 : -1;
    if (want == NULL) ax_error_oom(cx);
    if (rc == 0) rc = infer(cx, p, nin, avals, params, want);
    if (avals && avals != small) free(avals);
    if (rc == 0) rc = info->eager(cx, nin, in, params, out);
    if (rc == 0) rc = finish_outputs(cx, info, nout, want, out);
    if (rc != 0) release_outputs(nout, out);
    if (want && want != want_small) free(want);
    return rc;
}

int ax_bind(ax_ctx *cx, ax_prim p, int nin, ax_array **in, const ax_params *params,
            ax_array **out) {
    static const ax_params no_params;
    if (check_arity(cx, p, nin)) return -1;
    if (!params) params = &no_params;
    for (int k = 0, n = ax_prim_nout(p, params); k < n; k++) out[k] = NULL;
    for (int i = 0; i < nin; i++) {
        if (in[i]) continue;
        ax_error(cx, AX_ERR_RUNTIME, "internal error: operand %d of %s is missing", i,
                 table[p]->name);
        return -1;
    }
    ax_trace *trace;
    if (ax_trace_find(cx, nin, in, &trace)) return -1;
    if (table[p]->flags & AX_PRIM_COLLECTIVE && ax_collective_route(cx, p, params, &trace))
        return -1;
    if (trace) return trace->process_primitive(cx, trace, p, nin, in, params, out);
    return bind_eager(cx, p, nin, in, params, out);
}

ax_array *ax_bind1(ax_ctx *cx, ax_prim p, int nin, ax_array **in, const ax_params *params) {
    const ax_prim_info *info = ax_prim_get(p);
    if (info && info->nout != 1) {
        return ax_error(cx, AX_ERR_RUNTIME, "internal error: %s has %d outputs, not 1", info->name,
                        info->nout);
    }
    ax_array *out = NULL;
    return ax_bind(cx, p, nin, in, params, &out) == 0 ? out : NULL;
}

ax_array *ax_bind_unary(ax_ctx *cx, ax_prim p, ax_array *x) {
    return ax_bind1(cx, p, 1, &x, NULL);
}

ax_array *ax_bind_binary(ax_ctx *cx, ax_prim p, ax_array *a, ax_array *b) {
    ax_array *in[2] = {a, b};
    return ax_bind1(cx, p, 2, in, NULL);
}

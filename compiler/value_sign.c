/* Sign analysis of a fused loop's float values: one pass over a step's nodes, each operation's
 * result from its operands' signs (see value_sign.h). Integers are never claimed: their
 * arithmetic wraps. */
#include "value_sign.h"

#include <string.h>

#include "primitive.h"

static ax_sign flip(ax_sign s) {
    return s == AX_SIGN_NONNEG ? AX_SIGN_NONPOS : s == AX_SIGN_NONPOS ? AX_SIGN_NONNEG : s;
}

/* The sign of a product or quotient of values of signs a and b */
static ax_sign product(ax_sign a, ax_sign b) {
    if (a == AX_SIGN_ANY || b == AX_SIGN_ANY) return AX_SIGN_ANY;
    return a == b ? AX_SIGN_NONNEG : AX_SIGN_NONPOS;
}

/* a if both are a, else unknown: a sum of two values, a choice between them */
static ax_sign same(ax_sign a, ax_sign b) {
    return a == b ? a : AX_SIGN_ANY;
}

/* max(a, b) >= each operand; min(a, b) <= each (NaN propagates) */
static ax_sign maximum(ax_sign a, ax_sign b) {
    return a == AX_SIGN_NONNEG || b == AX_SIGN_NONNEG ? AX_SIGN_NONNEG : same(a, b);
}

static ax_sign minimum(ax_sign a, ax_sign b) {
    return a == AX_SIGN_NONPOS || b == AX_SIGN_NONPOS ? AX_SIGN_NONPOS : same(a, b);
}

static bool is_float(ax_dtype t) {
    return t == AX_F32 || t == AX_F64;
}

/* e^x, sqrt(x) (sqrt(-0) is -0, a zero) and the logistic function are never negative */
static bool nonneg_function(const ax_lowering *l) {
    if (l->kop == AX_KOP_LOGISTIC) return true;
    if (l->kop == AX_KOP_LIBM) return !strcmp(l->fn, "exp");
    return l->kop == AX_KOP_BUILTIN && !strcmp(l->fn, "sqrt");
}

static ax_sign const_sign(const ax_code_node *n) {
    uint64_t sign_bit = n->dtype == AX_F32 ? (uint64_t)1 << 31 : (uint64_t)1 << 63;
    return n->lit & sign_bit ? AX_SIGN_NONPOS : AX_SIGN_NONNEG;
}

static bool nonzero_const(const ax_code_node *n) {
    uint64_t magnitude = n->dtype == AX_F32 ? n->lit & 0x7fffffffu : n->lit << 1;
    return n->kind == AX_KN_CONST && magnitude != 0;
}

static bool is_neg(const ax_code_node *n) {
    return n->kind == AX_KN_OP && ax_prim_get(n->prim)->lower.kop == AX_KOP_NEG;
}

/* The sign of a * b where each is some value v with its sign flipped 0 or more times: v * v,
 * -v * v (as -x * x parses), v * -v...; otherwise, `otherwise`. */
static ax_sign self_product(const ax_code_node *nodes, int a, int b, ax_sign otherwise) {
    bool flipped = false;
    for (; is_neg(&nodes[a]); a = nodes[a].in[0]) flipped = !flipped;
    for (; is_neg(&nodes[b]); b = nodes[b].in[0]) flipped = !flipped;
    if (a != b) return otherwise;
    return flipped ? AX_SIGN_NONPOS : AX_SIGN_NONNEG;
}

static ax_sign op_sign(const ax_code_node *nodes, const ax_code_node *n, const ax_sign *sign) {
    const ax_lowering *l = &ax_prim_get(n->prim)->lower;
    ax_sign a = n->nin > 0 ? sign[n->in[0]] : AX_SIGN_ANY;
    ax_sign b = n->nin > 1 ? sign[n->in[1]] : AX_SIGN_ANY;
    if (nonneg_function(l)) return AX_SIGN_NONNEG;
    switch (l->kop) {
    case AX_KOP_COPY:
        return a;
    case AX_KOP_NEG:
        return flip(a);
    case AX_KOP_ABS:
    case AX_KOP_SQUARE:
        return AX_SIGN_NONNEG;
    case AX_KOP_INTEGER_POW: /* x^-k of a zero is an infinity of the zero's sign */
        return n->k % 2 == 0 ? AX_SIGN_NONNEG : n->k > 0 ? a : AX_SIGN_ANY;
    case AX_KOP_ADD:
        return same(a, b);
    case AX_KOP_SUB:
        return same(a, flip(b));
    case AX_KOP_MUL:
        return self_product(nodes, n->in[0], n->in[1], product(a, b));
    case AX_KOP_DIV: /* by a zero, only where its sign is known: a constant's */
        return nonzero_const(&nodes[n->in[1]]) ? product(a, b) : AX_SIGN_ANY;
    case AX_KOP_MAX:
        return maximum(a, b);
    case AX_KOP_MIN:
        return minimum(a, b);
    case AX_KOP_SELECT:
        return same(b, sign[n->in[2]]);
    case AX_KOP_CLAMP: /* (lo, x, hi): min(max(x, lo), hi) */
        return minimum(maximum(b, a), sign[n->in[2]]);
    case AX_KOP_CONVERT: /* between floats: rounding keeps the sign */
        return is_float(nodes[n->in[0]].dtype) ? a : AX_SIGN_ANY;
    default:
        return AX_SIGN_ANY;
    }
}

void ax_value_signs(const ax_code_node *nodes, int n, ax_sign *sign) {
    for (int i = 0; i < n; i++) {
        const ax_code_node *nd = &nodes[i];
        sign[i] = AX_SIGN_ANY;
        if (!is_float(nd->dtype)) continue;
        if (nd->kind == AX_KN_CONST) sign[i] = const_sign(nd);
        if (nd->kind == AX_KN_INDEX) sign[i] = AX_SIGN_NONNEG;
        if (nd->kind == AX_KN_OP) sign[i] = op_sign(nodes, nd, sign);
    }
}

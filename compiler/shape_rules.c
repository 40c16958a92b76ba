/* Shape/dtype rules of the primitives (see shape_rules.h). */
#include "shape_rules.h"

#include "ir.h"
#include "../runtime/shape_ops.h"

#include <stdio.h>
#include <string.h>

/* ---- formatting for messages ---- */

/* A string returned by value, so that several can appear in one ax_error call (C11 keeps the
 * temporary alive until the end of the full expression). */
typedef struct {
    char s[400];
} text;

static text type_text(const ax_aval *a) {
    text t;
    ax_type_format(t.s, sizeof t.s, a->dtype, a->ndim, a->shape);
    return t;
}

static text shape_text(int ndim, const int64_t *shape) {
    text t;
    ax_shape_format(t.s, sizeof t.s, ndim, shape);
    return t;
}

static text axes_text(int n, const int *axes) {
    int64_t wide[AX_MAX_RANK];
    for (int i = 0; i < n && i < AX_MAX_RANK; i++) wide[i] = axes[i];
    return shape_text(n < AX_MAX_RANK ? n : AX_MAX_RANK, wide);
}

#define TYPE(aval)     type_text(aval).s
#define SHAPE(n, dims) shape_text(n, dims).s
#define AXES(n, list)  axes_text(n, list).s

/* ---- dtype sets ---- */

#define DT(t)  (1u << (t))
#define FLOATS (DT(AX_F32) | DT(AX_F64))
#define INTS   (DT(AX_U8) | DT(AX_I32) | DT(AX_U32) | DT(AX_I64))
#define BOOLS  DT(AX_BOOL)
#define ALL    (FLOATS | INTS | BOOLS)

/* "floating-point", "integer", ... for a set of dtypes; NULL when it has no common name. */
static const char *dtype_set_adjective(unsigned set) {
    if (set == FLOATS) return "floating-point";
    if (set == INTS) return "integer";
    if (set == (INTS | BOOLS)) return "boolean or integer";
    if (set == (INTS | FLOATS)) return "numeric";
    if (set == (DT(AX_I32) | DT(AX_I64) | FLOATS)) return "signed numeric";
    if (set == BOOLS) return "boolean";
    return NULL;
}

/* "a floating-point argument" / "integer arguments" / "an argument of dtype f32 or i32". */
static text describe_accepted(unsigned set, bool plural) {
    text t;
    const char *adj = dtype_set_adjective(set);
    if (adj) {
        bool vowel = strchr("aeiou", adj[0]) != NULL;
        snprintf(t.s, sizeof t.s, "%s%s argument%s",
                 plural  ? ""
                 : vowel ? "an "
                         : "a ",
                 adj, plural ? "s" : "");
        return t;
    }
    int n = snprintf(t.s, sizeof t.s, "%s of dtype ", plural ? "arguments" : "an argument");
    int left = __builtin_popcount(set), listed = 0;
    for (int d = 0; d < AX_NDTYPES; d++) {
        if (!(set & DT(d))) continue;
        const char *sep = listed == 0 ? "" : listed == left - 1 ? " or " : ", ";
        n += snprintf(t.s + n, sizeof t.s - (size_t)n, "%s%s", sep, ax_dtype_short((ax_dtype)d));
        listed++;
    }
    return t;
}

static int type_error_unary(ax_ctx *cx, const char *name, unsigned set, const ax_aval *x) {
    ax_error(cx, AX_ERR_TYPE, "%s requires %s, got %s", name, describe_accepted(set, false).s,
             TYPE(x));
    return -1;
}

static int require_dtypes(ax_ctx *cx, const char *name, unsigned set, const ax_aval *x) {
    return set & DT(x->dtype) ? 0 : type_error_unary(cx, name, set, x);
}

static bool valid_dtype(ax_dtype t) {
    return (unsigned)t < AX_NDTYPES;
}

/* ---- small helpers ---- */

static void set_aval(ax_aval *out, ax_dtype dtype, bool weak, int ndim, const int64_t *shape) {
    out->dtype = dtype;
    out->weak = weak;
    out->ndim = ndim;
    if (ndim) memcpy(out->shape, shape, (size_t)ndim * sizeof *shape);
}

static bool same_shape(const ax_aval *a, const ax_aval *b) {
    return ax_shape_equal(a->ndim, a->shape, b->ndim, b->shape);
}

static int check_rank(ax_ctx *cx, const char *name, int ndim) {
    return ax_rank_check(cx, name, ndim) ? 0 : -1;
}

/* A shape given as a parameter: rank, dimensions and size (runtime/array.h's invariant). */
static int check_dims(ax_ctx *cx, const char *name, ax_dtype dtype, int ndim,
                      const int64_t *shape) {
    return ax_shape_check(cx, name, dtype, ndim, shape) ? 0 : -1;
}

/* Axes distinct and within [0, ndim). `what` names the array they refer to. */
/* Axes in [0, ndim), each once. `x` (or, when NULL, an output of rank ndim) names what they
 * index in errors; the text is made only for an error (this runs on every bind). */
static int check_axes_in(ax_ctx *cx, const char *name, int naxes, const int *axes, int ndim,
                         const ax_aval *x) {
    char what[400];
#define WHAT()                                                                                     \
    (x ? snprintf(what, sizeof what, "%s", TYPE(x))                                                \
       : snprintf(what, sizeof what, "an output of rank %d", ndim))
    if (naxes < 0 || naxes > ndim) {
        WHAT();
        ax_error(cx, AX_ERR_VALUE, "%s: %d axes given for %s", name, naxes, what);
        return -1;
    }
    for (int i = 0; i < naxes; i++) {
        if (axes[i] < 0 || axes[i] >= ndim) {
            WHAT();
            ax_error(cx, AX_ERR_VALUE, "%s: axis %d is out of bounds for %s", name, axes[i], what);
            return -1;
        }
        for (int j = 0; j < i; j++) {
            if (axes[j] != axes[i]) continue;
            ax_error(cx, AX_ERR_VALUE, "%s: axis %d is repeated in axes %s", name, axes[i],
                     AXES(naxes, axes));
            return -1;
        }
    }
#undef WHAT
    return 0;
}

static int check_axes(ax_ctx *cx, const char *name, int naxes, const int *axes, const ax_aval *x) {
    return check_axes_in(cx, name, naxes, axes, x->ndim, x);
}

/* Primitives that work along one axis (params.axes[0]). */
static int check_one_axis(ax_ctx *cx, const char *name, const ax_params *p, const ax_aval *x) {
    if (p->naxes != 1) {
        ax_error(cx, AX_ERR_VALUE, "%s works along exactly one axis, got %d axes", name, p->naxes);
        return -1;
    }
    return check_axes(cx, name, 1, p->axes, x);
}

static int check_index_dtype(ax_ctx *cx, const char *name, ax_dtype t) {
    if (t == AX_I32 || t == AX_I64) return 0;
    ax_error(cx, AX_ERR_TYPE, "%s: the index dtype must be i32 or i64, got %s", name,
             valid_dtype(t) ? ax_dtype_short(t) : "an unknown dtype");
    return -1;
}

/* x's shape without the given (valid) axes. */
static int drop_axes(const ax_aval *x, int naxes, const int *axes, int64_t *shape) {
    int n = 0;
    for (int d = 0; d < x->ndim; d++) {
        bool dropped = false;
        for (int i = 0; i < naxes; i++) dropped |= axes[i] == d;
        if (!dropped) shape[n++] = x->shape[d];
    }
    return n;
}

/* ---- elementwise unary ---- */

static unsigned unary_accepted(ax_unary_op op) {
    unsigned set = 0;
    for (int t = 0; t < AX_NDTYPES; t++)
        if (ax_unary_accepts(op, (ax_dtype)t)) set |= DT(t);
    return set;
}

int ax_shape_unary_op(ax_ctx *cx, const char *name, ax_unary_op op, const ax_aval *x,
                      ax_aval *out) {
    /* the set of accepted dtypes only for the message: this runs at every bind */
    if (!ax_unary_accepts(op, x->dtype) && require_dtypes(cx, name, unary_accepted(op), x))
        return -1;
    *out = *x;
    if (op == AX_IS_FINITE) {
        out->dtype = AX_BOOL;
        out->weak = false;
    }
    return 0;
}

AX_SHAPE_RULE(integer_pow) {
    (void)nin;
    if (require_dtypes(cx, "integer_pow", INTS | FLOATS, &in[0])) return -1;
    if (p->k < 0 && ax_dtype_is_int(in[0].dtype)) {
        ax_error(cx, AX_ERR_TYPE, "integers cannot be raised to negative powers, got %s ** %lld",
                 TYPE(&in[0]), (long long)p->k);
        return -1;
    }
    *out = in[0];
    return 0;
}

/* ---- elementwise binary ---- */

static unsigned binary_accepted(ax_binary_op op) {
    unsigned set = 0;
    for (int t = 0; t < AX_NDTYPES; t++)
        if (ax_binary_accepts(op, (ax_dtype)t)) set |= DT(t);
    return set;
}

/* "cannot add f32[3] and f32[4]": the verb the user would use for the operator. */
static text shape_mismatch_text(const char *name, ax_binary_op op) {
    text t;
    const char *verbs[] = {
        [AX_ADD] = "add", [AX_SUB] = "subtract", [AX_MUL] = "multiply", [AX_DIV] = "divide"};
    if (op <= AX_DIV)
        snprintf(t.s, sizeof t.s, "cannot %s", verbs[op]);
    else if (op >= AX_EQ && op <= AX_GE)
        snprintf(t.s, sizeof t.s, "cannot compare");
    else
        snprintf(t.s, sizeof t.s, "cannot apply %s to", name);
    return t;
}

/* Equal shapes, or one operand of rank 0 (broadcast by the kernel): the common shape, or NULL. */
static const ax_aval *broadcast_pair(const ax_aval *a, const ax_aval *b) {
    if (same_shape(a, b) || b->ndim == 0) return a;
    if (a->ndim == 0) return b;
    return NULL;
}

int ax_shape_binary_op(ax_ctx *cx, const char *name, ax_binary_op op, const ax_aval *a,
                       const ax_aval *b, ax_aval *out) {
    if (a->dtype != b->dtype) {
        ax_error(cx, AX_ERR_TYPE, "%s requires arguments of one dtype, got %s and %s", name,
                 TYPE(a), TYPE(b));
        return -1;
    }
    if (!ax_binary_accepts(op, a->dtype)) {
        ax_error(cx, AX_ERR_TYPE, "%s requires %s, got %s and %s", name,
                 describe_accepted(binary_accepted(op), true).s, TYPE(a), TYPE(b));
        return -1;
    }
    const ax_aval *shape = broadcast_pair(a, b);
    if (!shape) {
        ax_error(cx, AX_ERR_SHAPE, "%s %s and %s (shapes do not broadcast)",
                 shape_mismatch_text(name, op).s, TYPE(a), TYPE(b));
        return -1;
    }
    ax_dtype result = ax_binary_result_dtype(op, a->dtype);
    set_aval(out, result, a->weak && b->weak && result != AX_BOOL, shape->ndim, shape->shape);
    return 0;
}

/* ---- other elementwise ---- */

/* The shape of the non-scalar operands (all equal), or NULL when they differ. */
static const ax_aval *common_shape(int n, const ax_aval *in) {
    const ax_aval *shape = &in[0];
    for (int i = 1; i < n; i++) {
        shape = broadcast_pair(shape, &in[i]);
        if (!shape) return NULL;
    }
    return shape;
}

AX_SHAPE_RULE(select) {
    (void)nin, (void)p;
    const ax_aval *pred = &in[0], *t = &in[1], *f = &in[2];
    if (pred->dtype != AX_BOOL) {
        ax_error(cx, AX_ERR_TYPE, "select requires a boolean predicate, got %s", TYPE(pred));
        return -1;
    }
    if (t->dtype != f->dtype) {
        ax_error(cx, AX_ERR_TYPE, "select requires values of one dtype, got %s and %s", TYPE(t),
                 TYPE(f));
        return -1;
    }
    const ax_aval *shape = common_shape(3, in);
    if (!shape) {
        ax_error(cx, AX_ERR_SHAPE,
                 "cannot select between %s and %s with a predicate %s (shapes do not broadcast)",
                 TYPE(t), TYPE(f), TYPE(pred));
        return -1;
    }
    set_aval(out, t->dtype, t->weak && f->weak, shape->ndim, shape->shape);
    return 0;
}

AX_SHAPE_RULE(clamp) {
    (void)nin, (void)p;
    const ax_aval *lo = &in[0], *x = &in[1], *hi = &in[2];
    if (lo->dtype != x->dtype || hi->dtype != x->dtype) {
        ax_error(cx, AX_ERR_TYPE, "clamp requires arguments of one dtype, got %s, %s and %s",
                 TYPE(lo), TYPE(x), TYPE(hi));
        return -1;
    }
    if (require_dtypes(cx, "clamp", INTS | FLOATS, x)) return -1;
    bool lo_fits = lo->ndim == 0 || same_shape(lo, x), hi_fits = hi->ndim == 0 || same_shape(hi, x);
    if (!lo_fits || !hi_fits) {
        ax_error(cx, AX_ERR_SHAPE,
                 "cannot clamp %s between %s and %s (bounds must be scalars or of its shape)",
                 TYPE(x), TYPE(lo), TYPE(hi));
        return -1;
    }
    set_aval(out, x->dtype, lo->weak && x->weak && hi->weak, x->ndim, x->shape);
    return 0;
}

AX_SHAPE_RULE(convert) {
    (void)nin;
    if (!valid_dtype(p->dtype)) {
        ax_error(cx, AX_ERR_VALUE, "convert_element_type: unknown target dtype %d", (int)p->dtype);
        return -1;
    }
    set_aval(out, p->dtype, p->weak, in[0].ndim, in[0].shape);
    return 0;
}

AX_SHAPE_RULE(bitcast) {
    (void)nin;
    if (!valid_dtype(p->dtype)) {
        ax_error(cx, AX_ERR_VALUE, "bitcast_convert_type: unknown target dtype %d", (int)p->dtype);
        return -1;
    }
    if (ax_dtype_size(p->dtype) != ax_dtype_size(in[0].dtype)) {
        ax_error(cx, AX_ERR_TYPE,
                 "cannot bitcast %s to %s: their elements have different sizes (%zu and %zu "
                 "bytes)",
                 TYPE(&in[0]), ax_dtype_short(p->dtype), ax_dtype_size(in[0].dtype),
                 ax_dtype_size(p->dtype));
        return -1;
    }
    set_aval(out, p->dtype, false, in[0].ndim, in[0].shape);
    return 0;
}

AX_SHAPE_RULE(stop_gradient) {
    (void)cx, (void)nin, (void)p;
    *out = in[0];
    return 0;
}

/* ---- reductions and scans ---- */

static int check_nonempty_axes(ax_ctx *cx, const char *what, int naxes, const int *axes,
                               const ax_aval *x) {
    for (int i = 0; i < naxes; i++) {
        if (x->shape[axes[i]] != 0) continue;
        ax_error(cx, AX_ERR_VALUE,
                 "zero-size array to reduction operation %s which has no identity (axis %d of "
                 "%s)",
                 what, axes[i], TYPE(x));
        return -1;
    }
    return 0;
}

/* reduce_*: `set` is the accepted dtypes; `identityless` names the operation for the error on an
 * empty axis (max/min), or is NULL. */
static int reduce_rule(ax_ctx *cx, const char *name, unsigned set, const char *identityless,
                       const ax_aval *x, const ax_params *p, ax_aval *out) {
    if (require_dtypes(cx, name, set, x) || check_axes(cx, name, p->naxes, p->axes, x)) return -1;
    if (identityless && check_nonempty_axes(cx, identityless, p->naxes, p->axes, x)) return -1;
    out->dtype = x->dtype;
    out->weak = x->weak && x->dtype != AX_BOOL;
    out->ndim = drop_axes(x, p->naxes, p->axes, out->shape);
    return 0;
}

AX_SHAPE_RULE(reduce_sum) {
    (void)nin;
    return reduce_rule(cx, "reduce_sum", INTS | FLOATS, NULL, &in[0], p, out);
}
AX_SHAPE_RULE(reduce_prod) {
    (void)nin;
    return reduce_rule(cx, "reduce_prod", INTS | FLOATS, NULL, &in[0], p, out);
}
AX_SHAPE_RULE(reduce_max) {
    (void)nin;
    return reduce_rule(cx, "reduce_max", ALL, "maximum", &in[0], p, out);
}
AX_SHAPE_RULE(reduce_min) {
    (void)nin;
    return reduce_rule(cx, "reduce_min", ALL, "minimum", &in[0], p, out);
}
AX_SHAPE_RULE(reduce_and) {
    (void)nin;
    return reduce_rule(cx, "reduce_and", BOOLS, NULL, &in[0], p, out);
}
AX_SHAPE_RULE(reduce_or) {
    (void)nin;
    return reduce_rule(cx, "reduce_or", BOOLS, NULL, &in[0], p, out);
}

static int arg_reduce_rule(ax_ctx *cx, const char *name, const ax_aval *x, const ax_params *p,
                           ax_aval *out) {
    if (check_one_axis(cx, name, p, x) || check_index_dtype(cx, name, p->dtype)) return -1;
    if (x->shape[p->axes[0]] == 0) {
        ax_error(cx, AX_ERR_VALUE, "attempt to get %s of an empty sequence (axis %d of %s)", name,
                 p->axes[0], TYPE(x));
        return -1;
    }
    out->dtype = p->dtype;
    out->weak = false;
    out->ndim = drop_axes(x, 1, p->axes, out->shape);
    return 0;
}

AX_SHAPE_RULE(argmax) {
    (void)nin;
    return arg_reduce_rule(cx, "argmax", &in[0], p, out);
}
AX_SHAPE_RULE(argmin) {
    (void)nin;
    return arg_reduce_rule(cx, "argmin", &in[0], p, out);
}

static int cumulative_rule(ax_ctx *cx, const char *name, unsigned set, const ax_aval *x,
                           const ax_params *p, ax_aval *out) {
    if (require_dtypes(cx, name, set, x) || check_one_axis(cx, name, p, x)) return -1;
    *out = *x;
    return 0;
}

AX_SHAPE_RULE(cumsum) {
    (void)nin;
    return cumulative_rule(cx, "cumsum", INTS | FLOATS, &in[0], p, out);
}
AX_SHAPE_RULE(cumprod) {
    (void)nin;
    return cumulative_rule(cx, "cumprod", INTS | FLOATS, &in[0], p, out);
}
AX_SHAPE_RULE(cummax) {
    (void)nin;
    return cumulative_rule(cx, "cummax", ALL, &in[0], p, out);
}
AX_SHAPE_RULE(cummin) {
    (void)nin;
    return cumulative_rule(cx, "cummin", ALL, &in[0], p, out);
}

/* ---- shapes ---- */

AX_SHAPE_RULE(reshape) {
    (void)nin;
    const ax_aval *x = &in[0];
    if (check_dims(cx, "reshape", x->dtype, p->ndim, p->shape)) return -1;
    int64_t from = ax_shape_size(x->ndim, x->shape), to = ax_shape_size(p->ndim, p->shape);
    if (from != to) {
        ax_error(cx, AX_ERR_SHAPE, "cannot reshape %s (size %lld) into shape %s (size %lld)",
                 TYPE(x), (long long)from, SHAPE(p->ndim, p->shape), (long long)to);
        return -1;
    }
    set_aval(out, x->dtype, x->weak, p->ndim, p->shape);
    return 0;
}

static bool is_permutation(int n, const int *perm) {
    bool seen[AX_MAX_RANK] = {false};
    for (int i = 0; i < n; i++) {
        if (perm[i] < 0 || perm[i] >= n || seen[perm[i]]) return false;
        seen[perm[i]] = true;
    }
    return true;
}

AX_SHAPE_RULE(transpose) {
    (void)nin;
    const ax_aval *x = &in[0];
    if (p->naxes != x->ndim || !is_permutation(p->naxes, p->axes)) {
        ax_error(cx, AX_ERR_VALUE, "transpose: %s is not a permutation of the axes of %s",
                 AXES(p->naxes, p->axes), TYPE(x));
        return -1;
    }
    out->dtype = x->dtype;
    out->weak = x->weak;
    out->ndim = x->ndim;
    for (int i = 0; i < x->ndim; i++) out->shape[i] = x->shape[p->axes[i]];
    return 0;
}

static bool strictly_increasing(int n, const int *v) {
    for (int i = 1; i < n; i++)
        if (v[i] <= v[i - 1]) return false;
    return true;
}

AX_SHAPE_RULE(broadcast_in_dim) {
    (void)nin;
    const ax_aval *x = &in[0];
    if (check_dims(cx, "broadcast_in_dim", x->dtype, p->ndim, p->shape)) return -1;
    if (p->naxes != x->ndim || !strictly_increasing(p->naxes, p->axes) ||
        (p->naxes && (p->axes[0] < 0 || p->axes[p->naxes - 1] >= p->ndim))) {
        ax_error(cx, AX_ERR_VALUE,
                 "broadcast_in_dim: broadcast_dimensions %s must give, for each dimension of "
                 "%s, an increasing position in the output shape %s",
                 AXES(p->naxes, p->axes), TYPE(x), SHAPE(p->ndim, p->shape));
        return -1;
    }
    for (int i = 0; i < x->ndim; i++) {
        int64_t have = x->shape[i], want = p->shape[p->axes[i]];
        if (have == want || have == 1) continue;
        ax_error(cx, AX_ERR_SHAPE,
                 "cannot broadcast %s to shape %s: dimension %d (size %lld) does not match "
                 "output dimension %d (size %lld)",
                 TYPE(x), SHAPE(p->ndim, p->shape), i, (long long)have, p->axes[i],
                 (long long)want);
        return -1;
    }
    set_aval(out, x->dtype, x->weak, p->ndim, p->shape);
    return 0;
}

static int check_concat_operand(ax_ctx *cx, const ax_aval *first, const ax_aval *x, int axis) {
    if (x->dtype != first->dtype) {
        ax_error(cx, AX_ERR_TYPE, "concatenate requires arguments of one dtype, got %s and %s",
                 TYPE(first), TYPE(x));
        return -1;
    }
    bool fits = x->ndim == first->ndim;
    for (int d = 0; fits && d < x->ndim; d++) fits = d == axis || x->shape[d] == first->shape[d];
    if (fits) return 0;
    ax_error(cx, AX_ERR_SHAPE,
             "cannot concatenate %s and %s along axis %d (shapes differ outside that axis)",
             TYPE(first), TYPE(x), axis);
    return -1;
}

AX_SHAPE_RULE(concatenate) {
    if (nin < 1) {
        ax_error(cx, AX_ERR_VALUE, "concatenate needs at least one array");
        return -1;
    }
    if (check_one_axis(cx, "concatenate", p, &in[0])) return -1;
    int axis = p->axes[0];
    bool weak = true;
    int64_t total = 0;
    for (int i = 0; i < nin; i++) {
        if (check_concat_operand(cx, &in[0], &in[i], axis)) return -1;
        weak &= in[i].weak;
        if (!ax_add_i64(total, in[i].shape[axis], &total)) {
            ax_error(cx, AX_ERR_VALUE,
                     "concatenate: the result would have more than 2**63 elements along axis %d",
                     axis);
            return -1;
        }
    }
    set_aval(out, in[0].dtype, weak, in[0].ndim, in[0].shape);
    out->shape[axis] = total;
    return 0;
}

static int check_slice_axis(ax_ctx *cx, const ax_aval *x, int d, const ax_params *p) {
    int64_t lo = p->lo[d], hi = p->hi[d], step = p->step[d];
    if (step < 1) {
        ax_error(cx, AX_ERR_VALUE, "slice strides must be positive, got %lld on axis %d",
                 (long long)step, d);
        return -1;
    }
    if (lo > hi && lo >= 0 && hi <= x->shape[d]) {
        ax_error(cx, AX_ERR_VALUE, "slice start %lld is after its limit %lld on axis %d of %s",
                 (long long)lo, (long long)hi, d, TYPE(x));
        return -1;
    }
    if (lo < 0 || hi > x->shape[d]) {
        ax_error(cx, AX_ERR_INDEX, "slice %lld:%lld is out of bounds for axis %d of %s",
                 (long long)lo, (long long)hi, d, TYPE(x));
        return -1;
    }
    return 0;
}

AX_SHAPE_RULE(slice) {
    (void)nin;
    const ax_aval *x = &in[0];
    set_aval(out, x->dtype, x->weak, x->ndim, x->shape);
    for (int d = 0; d < x->ndim; d++) {
        if (check_slice_axis(cx, x, d, p)) return -1;
        out->shape[d] = p->hi[d] > p->lo[d] ? (p->hi[d] - p->lo[d] - 1) / p->step[d] + 1 : 0;
    }
    return 0;
}

AX_SHAPE_RULE(pad) {
    (void)nin;
    const ax_aval *x = &in[0], *v = &in[1];
    if (v->dtype != x->dtype) {
        ax_error(cx, AX_ERR_TYPE,
                 "pad requires a padding value of the array's dtype, got %s and %s", TYPE(x),
                 TYPE(v));
        return -1;
    }
    if (v->ndim != 0) {
        ax_error(cx, AX_ERR_SHAPE, "the padding value must be a scalar, got %s", TYPE(v));
        return -1;
    }
    set_aval(out, x->dtype, x->weak && v->weak, x->ndim, x->shape);
    for (int d = 0; d < x->ndim; d++) {
        int64_t n = x->shape[d], interior = p->step[d], size;
        bool fits = ax_pad_size(n, p->lo[d], p->hi[d], interior, &size);
        if (interior < 0 || !fits || size < 0) {
            ax_error(cx, interior < 0 || !fits ? AX_ERR_VALUE : AX_ERR_SHAPE,
                     "pad: padding (low %lld, high %lld, interior %lld) of axis %d is invalid "
                     "for %s%s",
                     (long long)p->lo[d], (long long)p->hi[d], (long long)interior, d, TYPE(x),
                     fits ? "" : " (the padded size does not fit in 64 bits)");
            return -1;
        }
        out->shape[d] = size;
    }
    return 0;
}

AX_SHAPE_RULE(squeeze) {
    (void)nin;
    const ax_aval *x = &in[0];
    if (check_axes(cx, "squeeze", p->naxes, p->axes, x)) return -1;
    for (int i = 0; i < p->naxes; i++) {
        int64_t n = x->shape[p->axes[i]];
        if (n == 1) continue;
        ax_error(cx, AX_ERR_SHAPE, "cannot squeeze axis %d of %s: its size is %lld, not 1",
                 p->axes[i], TYPE(x), (long long)n);
        return -1;
    }
    out->dtype = x->dtype;
    out->weak = x->weak;
    out->ndim = drop_axes(x, p->naxes, p->axes, out->shape);
    return 0;
}

AX_SHAPE_RULE(expand_dims) {
    (void)nin;
    const ax_aval *x = &in[0];
    int ndim = x->ndim + p->naxes;
    if (check_rank(cx, "expand_dims", ndim) ||
        check_axes_in(cx, "expand_dims", p->naxes, p->axes, ndim, NULL))
        return -1;
    out->dtype = x->dtype;
    out->weak = x->weak;
    out->ndim = ndim;
    /* new axes first (size 1), then x's dims fill the remaining positions in order */
    for (int d = 0; d < ndim; d++) out->shape[d] = -1;
    for (int i = 0; i < p->naxes; i++) out->shape[p->axes[i]] = 1;
    for (int d = 0, k = 0; d < ndim; d++)
        if (out->shape[d] < 0) out->shape[d] = x->shape[k++];
    return 0;
}

AX_SHAPE_RULE(rev) {
    (void)nin;
    if (check_axes(cx, "rev", p->naxes, p->axes, &in[0])) return -1;
    *out = in[0];
    return 0;
}

/* ---- indexing ---- */

/* The shape of gather(x, idx) with params axes: idx.shape[:-1] + the dims of x not in axes.
 * Shared by scatter, whose updates must have this shape. */
static int gather_shape(ax_ctx *cx, const char *name, const ax_aval *x, const ax_aval *idx,
                        const ax_params *p, ax_aval *out) {
    if (!ax_dtype_is_int(idx->dtype)) {
        ax_error(cx, AX_ERR_TYPE, "%s indices must be integers, got %s", name, TYPE(idx));
        return -1;
    }
    if (check_axes(cx, name, p->naxes, p->axes, x)) return -1;
    if (idx->ndim < 1 || idx->shape[idx->ndim - 1] != p->naxes) {
        ax_error(cx, AX_ERR_SHAPE,
                 "%s indices must have a last dimension of size %d (one index per indexed axis "
                 "of %s), got %s",
                 name, p->naxes, TYPE(x), TYPE(idx));
        return -1;
    }
    int64_t rest[AX_MAX_RANK];
    int nrest = drop_axes(x, p->naxes, p->axes, rest);
    int ndim = idx->ndim - 1 + nrest;
    if (check_rank(cx, name, ndim)) return -1;
    out->dtype = x->dtype;
    out->weak = x->weak;
    out->ndim = ndim;
    memcpy(out->shape, idx->shape, (size_t)(idx->ndim - 1) * sizeof *out->shape);
    memcpy(out->shape + idx->ndim - 1, rest, (size_t)nrest * sizeof *rest);
    return 0;
}

AX_SHAPE_RULE(gather) {
    (void)nin;
    return gather_shape(cx, "gather", &in[0], &in[1], p, out);
}

AX_SHAPE_RULE(scatter) {
    (void)nin;
    const ax_aval *x = &in[0], *upd = &in[2];
    ax_aval want;
    if (p->flag < AX_SCATTER_SET || p->flag > AX_SCATTER_MAX) {
        ax_error(cx, AX_ERR_VALUE, "scatter: unknown mode %d", p->flag);
        return -1;
    }
    if (gather_shape(cx, "scatter", x, &in[1], p, &want)) return -1;
    if (upd->dtype != x->dtype) {
        ax_error(cx, AX_ERR_TYPE, "scatter requires updates of the array's dtype, got %s and %s",
                 TYPE(x), TYPE(upd));
        return -1;
    }
    if (!same_shape(upd, &want)) {
        ax_error(cx, AX_ERR_SHAPE,
                 "scatter into %s: updates %s do not match the shape %s of the indexed elements",
                 TYPE(x), TYPE(upd), SHAPE(want.ndim, want.shape));
        return -1;
    }
    *out = *x;
    out->weak = x->weak && upd->weak;
    return 0;
}

/* Start indices of dynamic_slice / dynamic_update_slice: one integer scalar per dimension. */
static int check_starts(ax_ctx *cx, const char *name, const ax_aval *x, int nstarts,
                        const ax_aval *starts) {
    if (nstarts != x->ndim) {
        ax_error(cx, AX_ERR_VALUE, "%s of %s needs %d start indices, got %d", name, TYPE(x),
                 x->ndim, nstarts);
        return -1;
    }
    for (int i = 0; i < nstarts; i++) {
        if (starts[i].ndim == 0 && ax_dtype_is_int(starts[i].dtype)) continue;
        ax_error(cx, AX_ERR_TYPE, "%s start indices must be integer scalars, got %s", name,
                 TYPE(&starts[i]));
        return -1;
    }
    return 0;
}

AX_SHAPE_RULE(dynamic_slice) {
    if (nin < 1) {
        ax_error(cx, AX_ERR_VALUE, "dynamic_slice needs an array to slice");
        return -1;
    }
    const ax_aval *x = &in[0];
    if (check_starts(cx, "dynamic_slice", x, nin - 1, in + 1)) return -1;
    if (p->ndim != x->ndim) {
        ax_error(cx, AX_ERR_VALUE, "dynamic_slice of %s needs %d slice sizes, got %d", TYPE(x),
                 x->ndim, p->ndim);
        return -1;
    }
    for (int d = 0; d < x->ndim; d++) {
        if (p->shape[d] >= 0 && p->shape[d] <= x->shape[d]) continue;
        ax_error(cx, AX_ERR_SHAPE, "dynamic_slice: slice size %lld on axis %d does not fit in %s",
                 (long long)p->shape[d], d, TYPE(x));
        return -1;
    }
    set_aval(out, x->dtype, x->weak, x->ndim, p->shape);
    return 0;
}

AX_SHAPE_RULE(dynamic_update_slice) {
    (void)p;
    if (nin < 2) {
        ax_error(cx, AX_ERR_VALUE, "dynamic_update_slice needs an array and an update");
        return -1;
    }
    const ax_aval *x = &in[0], *upd = &in[1];
    if (upd->dtype != x->dtype) {
        ax_error(cx, AX_ERR_TYPE,
                 "dynamic_update_slice requires an update of the array's dtype, got %s and %s",
                 TYPE(x), TYPE(upd));
        return -1;
    }
    bool fits = upd->ndim == x->ndim;
    for (int d = 0; fits && d < x->ndim; d++) fits = upd->shape[d] <= x->shape[d];
    if (!fits) {
        ax_error(cx, AX_ERR_SHAPE, "dynamic_update_slice: update %s does not fit in %s", TYPE(upd),
                 TYPE(x));
        return -1;
    }
    if (check_starts(cx, "dynamic_update_slice", x, nin - 2, in + 2)) return -1;
    *out = *x;
    out->weak = x->weak && upd->weak;
    return 0;
}

/* ---- creation, linear algebra, sorting ---- */

AX_SHAPE_RULE(iota) {
    (void)in, (void)nin;
    if (!valid_dtype(p->dtype) || !(DT(p->dtype) & (INTS | FLOATS))) {
        ax_error(cx, AX_ERR_TYPE, "iota requires a numeric dtype, got %s",
                 valid_dtype(p->dtype) ? ax_dtype_short(p->dtype) : "an unknown dtype");
        return -1;
    }
    if (check_dims(cx, "iota", p->dtype, p->ndim, p->shape)) return -1;
    if (p->naxes != 1 || p->axes[0] < 0 || p->axes[0] >= p->ndim) {
        ax_error(cx, AX_ERR_VALUE, "iota: dimension %d is out of bounds for shape %s",
                 p->naxes == 1 ? p->axes[0] : -1, SHAPE(p->ndim, p->shape));
        return -1;
    }
    set_aval(out, p->dtype, false, p->ndim, p->shape);
    return 0;
}

/* Contracting and batch dimensions of one operand: in range, each used once. */
static int check_dot_dims(ax_ctx *cx, const ax_aval *x, int nc, const int *contract, int nb,
                          const int *batch) {
    int all[2 * AX_MAX_RANK];
    if (nc < 0 || nb < 0 || nc + nb > x->ndim) {
        ax_error(cx, AX_ERR_VALUE,
                 "dot_general: %d contracting and %d batch dimensions given for %s", nc, nb,
                 TYPE(x));
        return -1;
    }
    memcpy(all, contract, (size_t)nc * sizeof *all);
    memcpy(all + nc, batch, (size_t)nb * sizeof *all);
    return check_axes(cx, "dot_general", nc + nb, all, x);
}

static int check_dot_sizes(ax_ctx *cx, const char *kind, const ax_aval *l, const ax_aval *r, int n,
                           const int *ldims, const int *rdims) {
    for (int i = 0; i < n; i++) {
        int64_t a = l->shape[ldims[i]], b = r->shape[rdims[i]];
        if (a == b) continue;
        ax_error(cx, AX_ERR_SHAPE,
                 "dot_general: %s dimension %d of %s (size %lld) does not match dimension %d of "
                 "%s (size %lld)",
                 kind, ldims[i], TYPE(l), (long long)a, rdims[i], TYPE(r), (long long)b);
        return -1;
    }
    return 0;
}

/* Appends the dims of x that are neither contracted nor batched. */
static void append_free_dims(const ax_aval *x, int nc, const int *contract, int nb,
                             const int *batch, ax_aval *out) {
    for (int d = 0; d < x->ndim; d++) {
        bool used = false;
        for (int i = 0; i < nc; i++) used |= contract[i] == d;
        for (int i = 0; i < nb; i++) used |= batch[i] == d;
        if (!used) out->shape[out->ndim++] = x->shape[d];
    }
}

AX_SHAPE_RULE(dot_general) {
    (void)nin;
    const ax_aval *l = &in[0], *r = &in[1];
    const ax_dot_dims *dd = &p->dot;
    if (l->dtype != r->dtype) {
        ax_error(cx, AX_ERR_TYPE, "dot_general requires arguments of one dtype, got %s and %s",
                 TYPE(l), TYPE(r));
        return -1;
    }
    if (check_dot_dims(cx, l, dd->ncontract, dd->lhs_contract, dd->nbatch, dd->lhs_batch) ||
        check_dot_dims(cx, r, dd->ncontract, dd->rhs_contract, dd->nbatch, dd->rhs_batch) ||
        check_dot_sizes(cx, "contracting", l, r, dd->ncontract, dd->lhs_contract,
                        dd->rhs_contract) ||
        check_dot_sizes(cx, "batch", l, r, dd->nbatch, dd->lhs_batch, dd->rhs_batch))
        return -1;
    int ndim = l->ndim + r->ndim - 2 * dd->ncontract - dd->nbatch;
    if (check_rank(cx, "dot_general", ndim)) return -1;
    out->dtype = l->dtype;
    out->weak = l->weak && r->weak;
    out->ndim = 0;
    for (int i = 0; i < dd->nbatch; i++) out->shape[out->ndim++] = l->shape[dd->lhs_batch[i]];
    append_free_dims(l, dd->ncontract, dd->lhs_contract, dd->nbatch, dd->lhs_batch, out);
    append_free_dims(r, dd->ncontract, dd->rhs_contract, dd->nbatch, dd->rhs_batch, out);
    return 0;
}

AX_SHAPE_RULE(cholesky) {
    (void)nin, (void)p;
    const ax_aval *x = &in[0];
    if (require_dtypes(cx, "cholesky", FLOATS, x)) return -1;
    if (x->ndim < 2 || x->shape[x->ndim - 1] != x->shape[x->ndim - 2]) {
        ax_error(cx, AX_ERR_SHAPE, "cholesky requires square matrices, got %s", TYPE(x));
        return -1;
    }
    *out = *x;
    return 0;
}

AX_SHAPE_RULE(triangular_solve) {
    (void)nin;
    const ax_aval *a = &in[0], *b = &in[1];
    if (require_dtypes(cx, "triangular_solve", FLOATS, a) ||
        require_dtypes(cx, "triangular_solve", FLOATS, b))
        return -1;
    if (a->dtype != b->dtype) {
        ax_error(cx, AX_ERR_TYPE, "triangular_solve requires one dtype, got %s and %s", TYPE(a),
                 TYPE(b));
        return -1;
    }
    if (p->flag & ~(AX_TRSOLVE_LOWER | AX_TRSOLVE_TRANSPOSE_A | AX_TRSOLVE_UNIT_DIAGONAL |
                    AX_TRSOLVE_RIGHT_SIDE)) {
        ax_error(cx, AX_ERR_VALUE, "triangular_solve: unknown option bits %#x", (unsigned)p->flag);
        return -1;
    }
    /* b's dimension that meets a: its rows on the left (a x = b), its columns on the right */
    bool right = p->flag & AX_TRSOLVE_RIGHT_SIDE;
    int nd = a->ndim;
    bool ok = nd >= 2 && a->shape[nd - 1] == a->shape[nd - 2] && b->ndim == nd &&
              b->shape[right ? nd - 1 : nd - 2] == a->shape[nd - 1];
    for (int d = 0; ok && d < nd - 2; d++) ok = a->shape[d] == b->shape[d];
    if (!ok) {
        ax_error(cx, AX_ERR_SHAPE,
                 "triangular_solve requires a (..., n, n) and b %s with the same leading "
                 "dimensions, got %s and %s",
                 right ? "(..., k, n)" : "(..., n, k)", TYPE(a), TYPE(b));
        return -1;
    }
    *out = *b;
    out->weak = false;
    return 0;
}

AX_SHAPE_RULE(sort) {
    (void)nin;
    if (check_one_axis(cx, "sort", p, &in[0])) return -1;
    *out = in[0];
    return 0;
}

AX_SHAPE_RULE(argsort) {
    (void)nin;
    if (check_one_axis(cx, "argsort", p, &in[0]) || check_index_dtype(cx, "argsort", p->dtype))
        return -1;
    set_aval(out, p->dtype, false, in[0].ndim, in[0].shape);
    return 0;
}

/* The output type is a parameter: the tangent of one output of a custom_vjp function. */
AX_SHAPE_RULE(custom_linear) {
    (void)nin, (void)in;
    if (!p->cb) {
        ax_error(cx, AX_ERR_VALUE, "custom_linear needs its callback");
        return -1;
    }
    out[0] = (ax_aval){.dtype = p->dtype, .ndim = p->ndim};
    memcpy(out[0].shape, p->shape, (size_t)p->ndim * sizeof *p->shape);
    return 0;
}

AX_SHAPE_RULE(custom_call) {
    const ax_ir *body = p->cb ? p->cb->body : NULL;
    if (!body || p->k < 0 || p->k >= body->nout || nin != body->nin) {
        ax_error(cx, AX_ERR_VALUE, "custom_call needs its function, traced for %d inputs", nin);
        return -1;
    }
    for (int i = 0; i < nin; i++) {
        const ax_aval *want = &body->types[body->invars[i]];
        if (want->dtype != in[i].dtype ||
            !ax_shape_equal(want->ndim, want->shape, in[i].ndim, in[i].shape)) {
            ax_error(cx, AX_ERR_TYPE, "%s was traced for %s but input %d is %s", p->cb->name,
                     TYPE(want), i, TYPE(&in[i]));
            return -1;
        }
    }
    const ax_ir_atom *o = &body->outs[p->k];
    if (o->var >= 0)
        *out = body->types[o->var];
    else
        ax_aval_of(out, o->lit);
    return 0;
}

AX_SHAPE_RULE(threefry2x32) {
    (void)nin, (void)p;
    for (int i = 0; i < 4; i++) {
        if (in[i].dtype != AX_U32) {
            ax_error(cx, AX_ERR_TYPE, "threefry2x32 requires uint32 operands, got %s",
                     TYPE(&in[i]));
            return -1;
        }
    }
    const ax_aval *shape = common_shape(4, in);
    if (!shape) {
        ax_error(cx, AX_ERR_SHAPE, "threefry2x32: the shapes of %s, %s, %s and %s do not broadcast",
                 TYPE(&in[0]), TYPE(&in[1]), TYPE(&in[2]), TYPE(&in[3]));
        return -1;
    }
    for (int k = 0; k < 2; k++) set_aval(&out[k], AX_U32, false, shape->ndim, shape->shape);
    return 0;
}

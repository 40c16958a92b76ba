/* Tolerance comparisons: isclose, allclose, array_equal, array_equiv, assert_allclose. */
#include "builtins_lib.h"

#include <math.h>

/* NumPy's isclose: |a - b| <= atol + rtol * |b| for finite values, equality for infinities,
 * False for nan (unless equal_nan and both are nan). Integers compare exactly. */
static ax_array *isclose(ax_ctx *cx, ax_array *a, ax_array *b, double rtol, double atol,
                         bool equal_nan) {
    bool weak;
    ax_dtype t = ax_dtype_promote(a->dtype, a->weak, b->dtype, b->weak, &weak);
    if (!ax_dtype_is_float(t)) return ax_np_binary(cx, AX_P_EQ, "isclose", a, b);
    ax_scope s;
    ax_scope_begin(&s, cx);
#define OWN(e) ax_scope_own(&s, (e))
    ax_array *x = OWN(ax_np_astype(cx, a, t, false)), *y = OWN(ax_np_astype(cx, b, t, false));
    ax_array *ad = OWN(ax_np_unary(cx, AX_P_ABS, OWN(ax_np_binary(cx, AX_P_SUB, "isclose", x, y))));
    ax_array *ax = OWN(ax_np_unary(cx, AX_P_ABS, x)), *ay = OWN(ax_np_unary(cx, AX_P_ABS, y));
    ax_array *tol = ax_lax_add(&s, ax_lax_scalar_like(&s, ay, atol),
                               ax_lax_mul(&s, ax_lax_scalar_like(&s, ay, rtol), ay));
    ax_array *within = OWN(ax_np_binary(cx, AX_P_LE, "isclose", ad, tol));
    /* infinities only match themselves (|inf - 1| <= rtol * inf would say otherwise) */
    ax_array *inf = ax_lax_scalar_like(&s, x, INFINITY);
    ax_array *any_inf = OWN(ax_np_logical(cx, AX_P_OR, "isclose",
                                          OWN(ax_np_binary(cx, AX_P_EQ, "isclose", ax, inf)),
                                          OWN(ax_np_binary(cx, AX_P_EQ, "isclose", ay, inf))));
    ax_array *finite = OWN(ax_np_unop(cx, AX_OP_INVERT, any_inf));
    ax_array *r = OWN(ax_np_logical(cx, AX_P_AND, "isclose", within, finite));
    r = OWN(
        ax_np_logical(cx, AX_P_OR, "isclose", r, OWN(ax_np_binary(cx, AX_P_EQ, "isclose", x, y))));
    if (equal_nan) {
        ax_array *xn = OWN(ax_np_binary(cx, AX_P_NE, "isclose", x, x));
        ax_array *yn = OWN(ax_np_binary(cx, AX_P_NE, "isclose", y, y));
        r = OWN(ax_np_logical(cx, AX_P_OR, "isclose", r,
                              OWN(ax_np_logical(cx, AX_P_AND, "isclose", xn, yn))));
    }
#undef OWN
    r = ax_scope_keep(&s, r);
    ax_scope_end(&s);
    return r;
}

typedef struct close_args {
    ax_array *a, *b;
    double rtol, atol;
    bool equal_nan;
} close_args;

static bool parse_close(ax_interp *in, ax_value *self, const ax_args *args, double rtol0,
                        double atol0, close_args *c) {
    static const char *const names[] = {"a", "b", "rtol", "atol", "equal_nan", NULL};
    ax_value *v[5];
    const char *f = self->builtin->name;
    c->a = c->b = NULL;
    if (!ax_bi_parse(in, args, f, names, 5, v) || !ax_bi_required(in, v[0], f, "a") ||
        !ax_bi_required(in, v[1], f, "b") || !ax_bi_double(in, v[2], "rtol", rtol0, &c->rtol) ||
        !ax_bi_double(in, v[3], "atol", atol0, &c->atol) ||
        !ax_bi_bool(in, v[4], "equal_nan", false, &c->equal_nan))
        return false;
    c->a = ax_np_asarray(in, v[0], f);
    c->b = c->a ? ax_np_asarray(in, v[1], f) : NULL;
    return c->b != NULL;
}

static ax_value *close_done_take(ax_interp *in, close_args *c, ax_array *r) {
    ax_array_release(c->a);
    ax_array_release(c->b);
    return ax_np_wrap_take(in, r);
}

static ax_value *bi_isclose(ax_interp *in, ax_value *self, const ax_args *args) {
    close_args c;
    if (!parse_close(in, self, args, 1e-5, 1e-8, &c)) return close_done_take(in, &c, NULL);
    return close_done_take(in, &c, isclose(in->cx, c.a, c.b, c.rtol, c.atol, c.equal_nan));
}

static ax_array *all_of_take(ax_ctx *cx, ax_array *x) {
    if (!x) return NULL;
    int axes[AX_MAX_RANK];
    for (int i = 0; i < x->ndim; i++) axes[i] = i;
    ax_array *r = ax_np_all_any(cx, true, x, x->ndim, axes, false);
    ax_array_release(x);
    return r;
}

static ax_value *bi_allclose(ax_interp *in, ax_value *self, const ax_args *args) {
    close_args c;
    if (!parse_close(in, self, args, 1e-5, 1e-8, &c)) return close_done_take(in, &c, NULL);
    return close_done_take(
        in, &c, all_of_take(in->cx, isclose(in->cx, c.a, c.b, c.rtol, c.atol, c.equal_nan)));
}

/* array_equal: same shape and equal elements; array_equiv: equal after broadcasting. */
static ax_value *equal_arrays(ax_interp *in, ax_value *self, const ax_args *args, bool equiv) {
    static const char *const names[] = {"a1", "a2", "equal_nan", NULL};
    ax_value *v[3];
    const char *f = self->builtin->name;
    bool equal_nan;
    if (!ax_bi_parse(in, args, f, names, equiv ? 2 : 3, v) || !ax_bi_required(in, v[0], f, "a1") ||
        !ax_bi_required(in, v[1], f, "a2") || !ax_bi_bool(in, v[2], "equal_nan", false, &equal_nan))
        return NULL;
    ax_ctx *cx = in->cx;
    ax_array *a = ax_np_asarray(in, v[0], f), *b = a ? ax_np_asarray(in, v[1], f) : NULL;
    ax_array *r = NULL;
    int nd;
    int64_t shape[AX_MAX_RANK];
    if (b) {
        bool comparable = equiv
                              ? ax_shape_broadcast(a->ndim, a->shape, b->ndim, b->shape, &nd, shape)
                              : ax_shape_equal(a->ndim, a->shape, b->ndim, b->shape);
        if (!comparable)
            r = ax_np_scalar(cx, AX_BOOL, 0);
        else
            r = all_of_take(cx, equal_nan ? isclose(cx, a, b, 0, 0, true)
                                          : ax_np_binary(cx, AX_P_EQ, f, a, b));
    }
    ax_array_release(a);
    ax_array_release(b);
    return ax_np_wrap_take(in, r);
}

static ax_value *bi_array_equal(ax_interp *in, ax_value *self, const ax_args *args) {
    return equal_arrays(in, self, args, false);
}
static ax_value *bi_array_equiv(ax_interp *in, ax_value *self, const ax_args *args) {
    return equal_arrays(in, self, args, true);
}

/* assert_allclose(actual, desired, rtol=1e-7, atol=0): AssertionError naming the mismatch. */
static ax_value *bi_assert_allclose(ax_interp *in, ax_value *self, const ax_args *args) {
    close_args c;
    if (!parse_close(in, self, args, 1e-7, 0, &c)) return close_done_take(in, &c, NULL);
    ax_ctx *cx = in->cx;
    int nd;
    int64_t shape[AX_MAX_RANK];
    if (!ax_shape_broadcast(c.a->ndim, c.a->shape, c.b->ndim, c.b->shape, &nd, shape)) {
        char ta[160], tb[160];
        ax_array_type_format(ta, sizeof ta, c.a);
        ax_array_type_format(tb, sizeof tb, c.b);
        ax_error(cx, AX_ERR_ASSERTION, "shapes differ: %s and %s", ta, tb);
        return close_done_take(in, &c, NULL);
    }
    ax_array *ok = isclose(cx, c.a, c.b, c.rtol, c.atol, true);
    if (ok && !ax_np_is_concrete(ok)) {
        ax_array_release(ok);
        ax_error(cx, AX_ERR_CONCRETIZATION, "assert_allclose needs concrete arrays");
        return close_done_take(in, &c, NULL);
    }
    ax_array *diff = ok ? ax_np_binary(cx, AX_P_SUB, "subtract", c.a, c.b) : NULL;
    int64_t bad = 0, total = ok ? ok->size : 0;
    double worst = 0;
    for (int64_t i = 0; diff && i < total; i++) {
        if (ax_array_get_i64(ok, i)) continue;
        bad++;
        double d = fabs(ax_array_get_f64(diff, diff->size == total ? i : 0));
        if (d > worst || isnan(d)) worst = d;
    }
    ax_array_release(ok);
    ax_array_release(diff);
    if (bad)
        ax_error(cx, AX_ERR_ASSERTION,
                 "not equal to tolerance rtol=%g, atol=%g: %lld of %lld elements differ (max "
                 "absolute difference %g)",
                 c.rtol, c.atol, (long long)bad, (long long)total, worst);
    if (ax_error_pending(cx)) return close_done_take(in, &c, NULL);
    close_done_take(in, &c, NULL);
    return ax_none();
}

#define NP AX_BI_NP

const ax_builtin_def ax_builtins_compare[] = {
    {"isclose", bi_isclose,
     "isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False): elementwise closeness", NP},
    {"allclose", bi_allclose,
     "allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False): True if all elements are close", NP},
    {"array_equal", bi_array_equal, "array_equal(a1, a2): True if same shape and elements", NP},
    {"array_equiv", bi_array_equiv, "array_equiv(a1, a2): True if equal after broadcasting", NP},
    {"assert_allclose", bi_assert_allclose,
     "assert_allclose(actual, desired, rtol=1e-07, atol=0): AssertionError unless close", 0},
    {NULL, NULL, NULL, 0},
};

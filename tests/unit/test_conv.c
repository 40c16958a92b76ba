/* Convolution and windowed reductions: the kernels (runtime/conv.c, through the primitives)
 * against plain loops written here from the definitions, over many random configurations
 * (1-, 2- and 3-d; strides; lhs and rhs dilation; padding, negative included; feature and batch
 * groups; every dimension order; f32, f64 and i32; operands that are views), and against
 * values PyTorch computed (conv_cases.inc, made by gen_conv_cases.py), gradients included. */
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
#include "../../compiler/conv_rules.h"
#include "../../runtime/shape_ops.h"

static uint64_t rng = 0x853C49E6748FEA9Bull;
static int64_t rand_int(int64_t lo, int64_t hi) { /* inclusive */
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return lo + (int64_t)((rng >> 33) % (uint64_t)(hi - lo + 1));
}

static double rand_value(void) {
    return (double)rand_int(-1000, 1000) / 250.0;
}

static void shuffle(int n, int *v) {
    for (int i = 0; i < n; i++) v[i] = i;
    for (int i = n - 1; i > 0; i--) {
        int j = (int)rand_int(0, i), t = v[i];
        v[i] = v[j];
        v[j] = t;
    }
}

/* A random array; a view (reversed or transposed storage) when `view`. */
static ax_array *random_array(ax_ctx *cx, ax_dtype t, int n, const int64_t *shape, bool view) {
    int64_t store[AX_MAX_RANK];
    int perm[AX_MAX_RANK], inv[AX_MAX_RANK];
    shuffle(n, perm);
    if (!view)
        for (int i = 0; i < n; i++) perm[i] = i;
    for (int i = 0; i < n; i++) store[i] = shape[perm[i]], inv[perm[i]] = i;
    ax_array *a = ax_array_new(cx, t, n, store);
    for (int64_t i = 0; i < a->size; i++) {
        double v = ax_dtype_is_float(t) ? rand_value() : (double)rand_int(-5, 5);
        ax_convert_element(t, (char *)a->buf->data + i * (int64_t)ax_dtype_size(t), AX_F64, &v);
    }
    ax_array *v = ax_transpose(cx, a, inv);
    ax_array_release(a);
    if (view && n > 0 && v->shape[0] > 1) { /* and reversed along dim 0 */
        ax_array *r = ax_rev(cx, v, 1, (int[]){0});
        ax_array_release(v);
        v = r;
    }
    return v;
}

/* An array's values in row-major order, as doubles. */
typedef struct dense {
    int ndim;
    const int64_t *shape;
    double *v;
} dense;

static dense dense_of(const ax_array *a) {
    dense d = {a->ndim, a->shape, malloc((size_t)(a->size ? a->size : 1) * sizeof(double))};
    for (int64_t i = 0; i < a->size; i++) d.v[i] = ax_array_get_f64(a, i);
    return d;
}

/* Element at a logical multi-index. */
static double at(const dense *a, const int64_t *idx) {
    int64_t flat = 0;
    for (int d = 0; d < a->ndim; d++) flat = flat * a->shape[d] + idx[d];
    return a->v[flat];
}

/* The input index tap k of output o reads along one dim, or -1 (XLA's definition). */
static int64_t ref_tap(int64_t o, int64_t k, int64_t stride, int64_t wdil, int64_t lo, int64_t bdil,
                       int64_t n) {
    int64_t p = o * stride + k * wdil - lo;
    if (p < 0 || p % bdil) return -1;
    p /= bdil;
    return p < n ? p : -1;
}

/* conv_general_dilated by its definition, in double. */
static void ref_conv(const ax_array *la, const ax_array *ra, const ax_params *p, const ax_array *o,
                     double *out, double *scale) {
    dense ld = dense_of(la), rd = dense_of(ra);
    const dense *l = &ld, *r = &rd;
    const ax_conv_dims *c = &p->conv;
    int n = p->ndim, ns = n - 2;
    int64_t fgc = c->feature_group_count, bgc = c->batch_group_count;
    int64_t nbo = o->shape[c->out_spec[0]], f = o->shape[c->out_spec[1]];
    int64_t ig = r->shape[c->rhs_spec[1]], groups = fgc > 1 ? fgc : bgc, fg = f / groups;
    int64_t oidx[AX_MAX_RANK] = {0};
    for (int64_t flat = 0; flat < o->size; flat++) {
        int64_t rem = flat;
        for (int d = n - 1; d >= 0; d--) oidx[d] = rem % o->shape[d], rem /= o->shape[d];
        int64_t b = oidx[c->out_spec[0]], of = oidx[c->out_spec[1]], g = of / fg;
        double acc = 0, mag = 0;
        int64_t nk = 1;
        for (int d = 0; d < ns; d++) nk *= r->shape[c->rhs_spec[2 + d]];
        for (int64_t i = 0; i < ig; i++)
            for (int64_t kf = 0; kf < nk; kf++) {
                int64_t li[AX_MAX_RANK], ri[AX_MAX_RANK], krem = kf;
                bool inside = true;
                for (int d = ns - 1; d >= 0; d--) {
                    int64_t ks = r->shape[c->rhs_spec[2 + d]], k = krem % ks;
                    krem /= ks;
                    ri[c->rhs_spec[2 + d]] = k;
                    int64_t x = ref_tap(oidx[c->out_spec[2 + d]], k, p->step[d], c->rhs_dilation[d],
                                        p->lo[d], c->lhs_dilation[d], l->shape[c->lhs_spec[2 + d]]);
                    inside &= x >= 0;
                    li[c->lhs_spec[2 + d]] = x;
                }
                if (!inside) continue;
                li[c->lhs_spec[0]] = bgc > 1 ? g * nbo + b : b;
                li[c->lhs_spec[1]] = fgc > 1 ? g * ig + i : i;
                ri[c->rhs_spec[0]] = of;
                ri[c->rhs_spec[1]] = i;
                double prod = at(l, li) * at(r, ri);
                acc += prod;
                mag += fabs(prod);
            }
        out[flat] = acc;
        scale[flat] = mag;
    }
    free(ld.v);
    free(rd.v);
}

/* got == want within tol relative to 1 + |want| (or to 1 + scale, the sum of the magnitudes of
 * the terms, for long sums). */
static void expect_close_scaled(const char *what, const ax_array *got, const double *want,
                                const double *scale, double tol) {
    for (int64_t i = 0; i < got->size; i++) {
        double g = ax_array_get_f64(got, i), w = want[i];
        if (fabs(g - w) <= tol * (1 + (scale ? scale[i] : fabs(w)))) continue;
        fail_msg("%s: element %lld is %.9g, want %.9g", what, (long long)i, g, w);
    }
}

static void expect_close(const char *what, const ax_array *got, const double *want, double tol) {
    expect_close_scaled(what, got, want, NULL, tol);
}

/* A random valid convolution: returns false when the drawn padding leaves no output. */
static bool random_conv(ax_params *p, int ns, int64_t *lshape, int64_t *rshape) {
    int n = ns + 2, perm[3][AX_MAX_RANK];
    ax_conv_params_init(p, n);
    for (int i = 0; i < 3; i++) shuffle(n, perm[i]);
    memcpy(p->conv.lhs_spec, perm[0], sizeof perm[0]);
    memcpy(p->conv.rhs_spec, perm[1], sizeof perm[1]);
    memcpy(p->conv.out_spec, perm[2], sizeof perm[2]);
    int64_t groups = rand_int(1, 3), ig = rand_int(1, 4), fg = rand_int(1, 3), nbo = rand_int(1, 3);
    bool batch_groups = rand_int(0, 2) == 0;
    p->conv.feature_group_count = batch_groups ? 1 : groups;
    p->conv.batch_group_count = batch_groups ? groups : 1;
    lshape[p->conv.lhs_spec[0]] = nbo * p->conv.batch_group_count;
    lshape[p->conv.lhs_spec[1]] = ig * p->conv.feature_group_count;
    rshape[p->conv.rhs_spec[0]] = fg * groups;
    rshape[p->conv.rhs_spec[1]] = ig;
    for (int d = 0; d < ns; d++) {
        int64_t in = rand_int(1, ns == 3 ? 5 : 8), k = rand_int(1, 3);
        lshape[p->conv.lhs_spec[2 + d]] = in;
        rshape[p->conv.rhs_spec[2 + d]] = k;
        p->step[d] = rand_int(1, 3);
        p->conv.lhs_dilation[d] = rand_int(1, 2);
        p->conv.rhs_dilation[d] = rand_int(1, 2);
        p->lo[d] = rand_int(-1, 2);
        p->hi[d] = rand_int(-1, 2);
        ax_window w = {.ndim = 1,
                       .size = {k},
                       .stride = {p->step[d]},
                       .pad_lo = {p->lo[d]},
                       .pad_hi = {p->hi[d]},
                       .base_dilation = {p->conv.lhs_dilation[d]},
                       .window_dilation = {p->conv.rhs_dilation[d]}};
        if (ax_window_out_dim(&w, 0, in) <= 0) return false;
    }
    return true;
}

static void check_conv(ax_ctx *cx, const ax_params *p, ax_array *l, ax_array *r, double tol,
                       const char *what) {
    ax_array *o = ax_bind1(cx, AX_P_CONV_GENERAL_DILATED, 2, (ax_array *[]){l, r}, p);
    if (!o) fail_msg("%s: %s", what, cx->err.message);
    double *want = malloc((size_t)(o->size ? o->size : 1) * sizeof *want);
    double *scale = malloc((size_t)(o->size ? o->size : 1) * sizeof *scale);
    ref_conv(l, r, p, o, want, scale);
    expect_close_scaled(what, o, want, scale, tol);
    free(want);
    free(scale);
    ax_array_release(o);
}

static void test_conv_matches_loops(void **state) {
    ax_ctx *cx = *state;
    int checked = 0;
    for (int trial = 0; checked < 600; trial++) {
        ax_params p;
        int64_t ls[AX_MAX_RANK], rs[AX_MAX_RANK];
        int ns = 1 + trial % 3;
        if (!random_conv(&p, ns, ls, rs)) continue;
        ax_dtype t = trial % 5 == 0 ? AX_I32 : trial % 5 == 1 ? AX_F64 : AX_F32;
        bool view = trial % 4 == 3;
        ax_array *l = random_array(cx, t, ns + 2, ls, view);
        ax_array *r = random_array(cx, t, ns + 2, rs, view);
        char what[64];
        snprintf(what, sizeof what, "random convolution %d", trial);
        check_conv(cx, &p, l, r, t == AX_F32 ? 1e-6 : 1e-14, what);
        ax_array_release(l);
        ax_array_release(r);
        checked++;
    }
}

/* Sizes that take several blocks of the im2col matrix, in both gather orders, with K split
 * into slices and accumulated over blocks: NHWC forward, its weight gradient (batch
 * contiguous), a batch-grouped one, NCHW grouped and strided, an NCHW weight gradient, a long
 * window, 1x1 windows. */
static void test_conv_large_blocks(void **state) {
    ax_ctx *cx = *state;
    static const struct {
        int lhs[4], rhs[4], out[4];
        int64_t lshape[4], rshape[4];
        int64_t fgc, bgc, stride, pad;
    } cases[] = {
        {{0, 3, 1, 2}, {3, 2, 0, 1}, {0, 3, 1, 2}, {4, 20, 20, 24}, {3, 3, 24, 20}, 1, 1, 1, 1},
        {{3, 0, 1, 2}, {3, 0, 1, 2}, {2, 3, 0, 1}, {6, 24, 24, 8}, {6, 22, 22, 10}, 1, 1, 1, 0},
        {{3, 0, 1, 2}, {3, 0, 1, 2}, {2, 3, 0, 1}, {6, 20, 20, 4}, {6, 18, 18, 8}, 1, 4, 1, 0},
        {{0, 1, 2, 3}, {0, 1, 2, 3}, {0, 1, 2, 3}, {3, 8, 30, 30}, {12, 4, 5, 5}, 2, 1, 2, 2},
        {{1, 0, 2, 3}, {1, 0, 2, 3}, {1, 0, 2, 3}, {12, 3, 40, 40}, {12, 6, 38, 38}, 1, 1, 1, 0},
        {{0, 1, 2, 3}, {0, 1, 2, 3}, {0, 1, 2, 3}, {2, 8, 1, 1200}, {4, 8, 1, 900}, 1, 1, 1, 0},
        /* 1x1 windows over NHWC: the lhs is the im2col matrix (grouped, and not) */
        {{0, 3, 1, 2}, {3, 2, 0, 1}, {0, 3, 1, 2}, {4, 10, 10, 24}, {1, 1, 8, 21}, 3, 1, 1, 0},
        {{0, 3, 1, 2}, {3, 2, 0, 1}, {0, 3, 1, 2}, {40, 10, 10, 24}, {1, 1, 24, 5}, 1, 1, 1, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        ax_params p;
        ax_conv_params_init(&p, 4);
        memcpy(p.conv.lhs_spec, cases[i].lhs, sizeof cases[i].lhs);
        memcpy(p.conv.rhs_spec, cases[i].rhs, sizeof cases[i].rhs);
        memcpy(p.conv.out_spec, cases[i].out, sizeof cases[i].out);
        p.conv.feature_group_count = cases[i].fgc;
        p.conv.batch_group_count = cases[i].bgc;
        for (int d = 0; d < 2; d++) p.step[d] = cases[i].stride, p.lo[d] = p.hi[d] = cases[i].pad;
        ax_array *l = random_array(cx, AX_F32, 4, cases[i].lshape, false);
        ax_array *r = random_array(cx, AX_F32, 4, cases[i].rshape, false);
        char what[64];
        snprintf(what, sizeof what, "large convolution %zu", i);
        check_conv(cx, &p, l, r, 1e-6, what);
        ax_array_release(l);
        ax_array_release(r);
    }
}

/* ---- windowed reductions ---- */

static void random_window(ax_params *p, int n, int64_t *shape) {
    for (;;) {
        ax_window_params_init(p, n);
        bool ok = true;
        for (int d = 0; d < n; d++) {
            shape[d] = rand_int(1, 6);
            p->shape[d] = rand_int(1, 3);
            p->step[d] = rand_int(1, 3);
            p->lo[d] = rand_int(-1, 2);
            p->hi[d] = rand_int(-1, 2);
            p->conv.lhs_dilation[d] = rand_int(1, 2);
            p->conv.rhs_dilation[d] = rand_int(1, 2);
            if (rand_int(0, 2) == 0) { /* a dim the window passes through */
                p->shape[d] = p->step[d] = p->conv.lhs_dilation[d] = p->conv.rhs_dilation[d] = 1;
                p->lo[d] = p->hi[d] = 0;
            }
            ax_window w;
            memset(&w, 0, sizeof w);
            w.ndim = 1, w.size[0] = p->shape[d], w.stride[0] = p->step[d];
            w.pad_lo[0] = p->lo[d], w.pad_hi[0] = p->hi[d];
            w.base_dilation[0] = p->conv.lhs_dilation[d];
            w.window_dilation[0] = p->conv.rhs_dilation[d];
            ok &= ax_window_out_dim(&w, 0, shape[d]) > 0;
        }
        if (ok) return;
    }
}

/* The taps of window `o` (flat over the output): input flat indices, -1 for padding. */
static int window_taps(const ax_params *p, const int64_t *shape, const int64_t *oshape, int64_t o,
                       int64_t *taps) {
    int n = p->ndim, count = 0;
    int64_t oi[AX_MAX_RANK], ntaps = 1;
    for (int d = n - 1; d >= 0; d--) oi[d] = o % oshape[d], o /= oshape[d];
    for (int d = 0; d < n; d++) ntaps *= p->shape[d];
    for (int64_t t = 0; t < ntaps; t++) {
        int64_t rem = t, flat = 0;
        int64_t k[AX_MAX_RANK];
        for (int d = n - 1; d >= 0; d--) k[d] = rem % p->shape[d], rem /= p->shape[d];
        for (int d = 0; d < n && flat >= 0; d++) {
            int64_t x = ref_tap(oi[d], k[d], p->step[d], p->conv.rhs_dilation[d], p->lo[d],
                                p->conv.lhs_dilation[d], shape[d]);
            flat = x < 0 ? -1 : flat * shape[d] + x;
        }
        taps[count++] = flat;
    }
    return count;
}

static const ax_prim window_prims[3] = {AX_P_REDUCE_WINDOW_SUM, AX_P_REDUCE_WINDOW_MAX,
                                        AX_P_REDUCE_WINDOW_MIN};

static void test_reduce_window_matches_loops(void **state) {
    ax_ctx *cx = *state;
    for (int trial = 0; trial < 400; trial++) {
        ax_params p;
        int64_t shape[AX_MAX_RANK], taps[512];
        int n = 1 + trial % 4;
        random_window(&p, n, shape);
        ax_dtype t = trial % 3 == 0 ? AX_I32 : trial % 3 == 1 ? AX_F64 : AX_F32;
        ax_array *x = random_array(cx, t, n, shape, trial % 5 == 4);
        for (int k = 0; k < 3; k++) {
            ax_prim prim = window_prims[k];
            ax_array *o = ax_bind1(cx, prim, 1, &x, &p);
            if (!o) fail_msg("reduce_window trial %d: %s", trial, cx->err.message);
            for (int64_t i = 0; i < o->size; i++) {
                int nt = window_taps(&p, shape, o->shape, i, taps);
                double ident = k == 0   ? 0
                               : k == 1 ? (t == AX_I32 ? -2147483648.0 : -INFINITY)
                                        : (t == AX_I32 ? 2147483647.0 : INFINITY);
                double acc = ident;
                for (int j = 0; j < nt; j++) {
                    double v = taps[j] < 0 ? ident : ax_array_get_f64(x, taps[j]);
                    acc = k == 0 ? acc + v : k == 1 ? fmax(acc, v) : fmin(acc, v);
                }
                double got = ax_array_get_f64(o, i);
                if (fabs(got - acc) > 1e-5 * (1 + fabs(acc)) && !(isinf(acc) && got == acc))
                    fail_msg("%s trial %d element %lld: %g, want %g", ax_prim_get(prim)->name,
                             trial, (long long)i, got, acc);
            }
            ax_array_release(o);
        }
        ax_array_release(x);
    }
}

/* select_and_gather_add picks the first element no earlier one beats (padding counts as the
 * identity with tangent 0); select_and_scatter_add adds back at the same positions. */
static void test_select_and_scatter_matches_loops(void **state) {
    ax_ctx *cx = *state;
    for (int trial = 0; trial < 300; trial++) {
        ax_params p;
        int64_t shape[AX_MAX_RANK], taps[512];
        int n = 1 + trial % 4;
        random_window(&p, n, shape);
        p.flag = trial % 2 ? AX_SELECT_LE : AX_SELECT_GE;
        ax_dtype t = trial % 3 ? AX_F32 : AX_F64;
        ax_array *x = random_array(cx, t, n, shape, trial % 5 == 4);
        ax_array *tan = random_array(cx, t, n, shape, false);
        ax_array *g = ax_bind1(cx, AX_P_SELECT_AND_GATHER_ADD, 2, (ax_array *[]){tan, x}, &p);
        if (!g) fail_msg("select_and_gather_add trial %d: %s", trial, cx->err.message);
        ax_array *src = random_array(cx, t, n, g->shape, false);
        ax_array *s = ax_bind1(cx, AX_P_SELECT_AND_SCATTER_ADD, 2, (ax_array *[]){src, x}, &p);
        if (!s) fail_msg("select_and_scatter_add trial %d: %s", trial, cx->err.message);
        double *scattered = calloc((size_t)x->size, sizeof *scattered);
        for (int64_t i = 0; i < g->size; i++) {
            int nt = window_taps(&p, shape, g->shape, i, taps);
            double best = p.flag == AX_SELECT_LE ? INFINITY : -INFINITY;
            int64_t pick = -1;
            for (int j = 0; j < nt; j++) {
                double v = taps[j] < 0 ? (p.flag == AX_SELECT_LE ? INFINITY : -INFINITY)
                                       : ax_array_get_f64(x, taps[j]);
                bool keep = p.flag == AX_SELECT_LE ? best <= v : best >= v;
                if (!keep) best = v, pick = taps[j];
            }
            double want = pick >= 0 ? ax_array_get_f64(tan, pick) : 0;
            if (ax_array_get_f64(g, i) != want)
                fail_msg("select_and_gather_add trial %d element %lld: %g, want %g", trial,
                         (long long)i, ax_array_get_f64(g, i), want);
            if (pick >= 0) scattered[pick] += ax_array_get_f64(src, i);
        }
        expect_close("select_and_scatter_add", s, scattered, 1e-6);
        free(scattered);
        ax_array_release(x), ax_array_release(tan), ax_array_release(g);
        ax_array_release(src), ax_array_release(s);
    }
}

/* Ties go to the first element of the window; a window of padding only picks nothing; a NaN
 * is picked (nothing is >= it) and then replaced by the next element. */
static void test_select_ties(void **state) {
    ax_ctx *cx = *state;
    ax_params p;
    ax_window_params_init(&p, 1);
    p.shape[0] = 2;
    p.lo[0] = 2;
    ax_array *x = ax_array_new(cx, AX_F32, 1, (int64_t[]){5});
    ax_array *t = ax_array_new(cx, AX_F32, 1, (int64_t[]){5});
    float xs[5] = {1, 1, 1, NAN, 0}, ts[5] = {10, 20, 30, 40, 50};
    memcpy(x->buf->data, xs, sizeof xs);
    memcpy(t->buf->data, ts, sizeof ts);
    ax_array *g = ax_bind1(cx, AX_P_SELECT_AND_GATHER_ADD, 2, (ax_array *[]){t, x}, &p);
    /* windows: (pad, pad) (pad, 1) (1, 1) (1, 1) (1, nan) (nan, 0) */
    expect_close("ties", g, (const double[]){0, 10, 10, 20, 40, 50}, 0);
    ax_array *src = ax_array_new(cx, AX_F32, 1, (int64_t[]){6});
    for (int i = 0; i < 6; i++) ((float *)src->buf->data)[i] = (float)(1 << i);
    ax_array *sc = ax_bind1(cx, AX_P_SELECT_AND_SCATTER_ADD, 2, (ax_array *[]){src, x}, &p);
    expect_close("ties scattered", sc, (const double[]){2 + 4, 8, 0, 16, 32}, 0);
    ax_array_release(x), ax_array_release(t), ax_array_release(g);
    ax_array_release(src), ax_array_release(sc);
}

/* Integer window sums wrap around as XLA's do (signed overflow must not be undefined
 * behaviour: make asan's UBSan found it). */
static void test_window_sum_wraps(void **state) {
    ax_ctx *cx = *state;
    ax_params p;
    ax_window_params_init(&p, 1);
    p.shape[0] = 2;
    ax_array *x = ax_array_new(cx, AX_I32, 1, (int64_t[]){3});
    int32_t xs[3] = {INT32_MAX, 1, INT32_MIN};
    memcpy(x->buf->data, xs, sizeof xs);
    ax_array *s = ax_bind1(cx, AX_P_REDUCE_WINDOW_SUM, 1, &x, &p);
    assert_non_null(s);
    assert_int_equal(ax_array_get_i64(s, 0), INT32_MIN);
    assert_int_equal(ax_array_get_i64(s, 1), INT32_MIN + 1);
    ax_array_release(s);
    ax_array_release(x);
}

/* ---- values from PyTorch (gen_conv_cases.py) ---- */

/* Everything NCHW / OIHW; pools: rshape is the window; parameters in lax's terms. */
typedef struct torch_case {
    const char *name;
    int kind; /* 0 conv (+ gradients), 1 max pool (+ gradient), 2 average pool */
    int nsp;
    int64_t lshape[5], rshape[5];
    int64_t stride[3], lo[3], hi[3], lhs_dilation[3], rhs_dilation[3], groups;
    const double *x, *w, *y, *gx, *gw, *ct;
} torch_case;

#include "conv_cases.inc"

static ax_array *from_values(ax_ctx *cx, int n, const int64_t *shape, const double *v) {
    ax_array *a = ax_array_new(cx, AX_F32, n, shape);
    for (int64_t i = 0; i < a->size; i++) ((float *)a->buf->data)[i] = (float)v[i];
    return a;
}

typedef struct bound_conv {
    const ax_params *p;
    const torch_case *c;
    ax_array *fixed_w;
} bound_conv;

static int conv_fn(ax_ctx *cx, void *closure, int nin, ax_array **in, int *nout, ax_array ***out) {
    const bound_conv *b = closure;
    (void)nin;
    *nout = 1;
    *out = calloc(1, sizeof **out);
    const ax_prim pool = b->c->kind == 1 ? AX_P_REDUCE_WINDOW_MAX : AX_P_REDUCE_WINDOW_SUM;
    if (b->c->kind == 0) return ax_bind(cx, AX_P_CONV_GENERAL_DILATED, 2, in, b->p, *out);
    return ax_bind(cx, pool, 1, in, b->p, *out);
}

/* The case's operation in NCHW as our primitive's parameters. */
static void torch_params(const torch_case *c, ax_params *p) {
    int n = c->nsp + 2;
    if (c->kind == 0) {
        ax_conv_params_init(p, n);
        p->conv.feature_group_count = c->groups;
        for (int d = 0; d < c->nsp; d++) {
            p->step[d] = c->stride[d];
            p->lo[d] = c->lo[d];
            p->hi[d] = c->hi[d];
            p->conv.lhs_dilation[d] = c->lhs_dilation[d];
            p->conv.rhs_dilation[d] = c->rhs_dilation[d];
        }
        return;
    }
    ax_window_params_init(p, n);
    for (int d = 0; d < c->nsp; d++) {
        p->shape[2 + d] = c->rshape[d];
        p->step[2 + d] = c->stride[d];
        p->lo[2 + d] = c->lo[d];
        p->hi[2 + d] = c->hi[d];
    }
}

static void test_values_from_torch(void **state) {
    ax_ctx *cx = *state;
    for (size_t i = 0; i < sizeof torch_cases / sizeof *torch_cases; i++) {
        const torch_case *c = &torch_cases[i];
        int n = c->nsp + 2;
        ax_params p;
        torch_params(c, &p);
        ax_array *x = from_values(cx, n, c->lshape, c->x);
        ax_array *w = c->kind == 0 ? from_values(cx, n, c->rshape, c->w) : NULL;
        bound_conv b = {&p, c, NULL};
        ax_array *in[2] = {x, w}, **outs = NULL, *cts[2] = {0};
        ax_linear *lin = NULL;
        int nout = 0;
        if (ax_ad_linearize(cx, conv_fn, &b, c->kind == 0 ? 2 : 1, in, &nout, &outs, &lin))
            fail_msg("%s: %s", c->name, cx->err.message);
        ax_array *y = outs[0];
        if (c->kind == 2) { /* average: the sum over the window's size, as torch counts */
            double size = 1;
            for (int d = 0; d < c->nsp; d++) size *= (double)c->rshape[d];
            for (int64_t k = 0; k < y->size; k++) ((float *)y->buf->data)[k] /= (float)size;
        }
        expect_close(c->name, y, c->y, 2e-5);
        ax_array *ct = from_values(cx, y->ndim, y->shape, c->ct);
        if (ax_linear_transpose(cx, lin, &ct, cts)) fail_msg("%s: %s", c->name, cx->err.message);
        if (c->kind == 2) {
            double size = 1;
            for (int d = 0; d < c->nsp; d++) size *= (double)c->rshape[d];
            for (int64_t k = 0; k < cts[0]->size; k++)
                ((float *)cts[0]->buf->data)[k] /= (float)size;
        }
        char what[96];
        snprintf(what, sizeof what, "%s: input gradient", c->name);
        expect_close(what, cts[0], c->gx, 2e-5);
        if (c->kind == 0) {
            snprintf(what, sizeof what, "%s: kernel gradient", c->name);
            expect_close(what, cts[1], c->gw, 2e-5);
        }
        for (int k = 0; k < 2; k++) ax_array_release(cts[k]);
        ax_array_release(ct);
        ax_array_release(y);
        free(outs);
        ax_linear_free(lin);
        ax_array_release(x);
        ax_array_release(w);
    }
}

/* ---- errors ---- */

static void expect_error_text(ax_ctx *cx, ax_array *r, const char *part) {
    if (r || !strstr(cx->err.message, part))
        fail_msg("expected an error containing \"%s\", got %s", part,
                 r ? "a result" : cx->err.message);
    ax_error_clear(cx);
}

static void test_shape_rule_errors(void **state) {
    ax_ctx *cx = *state;
    ax_params p;
    ax_conv_params_init(&p, 4);
    ax_array *l = ax_array_zeros(cx, AX_F32, 4, (int64_t[]){2, 6, 5, 5});
    ax_array *r = ax_array_zeros(cx, AX_F32, 4, (int64_t[]){4, 3, 3, 3});
    expect_error_text(cx, ax_bind1(cx, AX_P_CONV_GENERAL_DILATED, 2, (ax_array *[]){l, r}, &p),
                      "lhs f32[2,6,5,5] has 6 input features (dimension 1), but the kernel "
                      "f32[4,3,3,3] takes 3 (its dimension 1)");
    p.conv.feature_group_count = 4;
    expect_error_text(cx, ax_bind1(cx, AX_P_CONV_GENERAL_DILATED, 2, (ax_array *[]){l, r}, &p),
                      "feature_group_count=4 must divide the 6 input features");
    p.conv.feature_group_count = 2;
    ax_array *o = ax_bind1(cx, AX_P_CONV_GENERAL_DILATED, 2, (ax_array *[]){l, r}, &p);
    assert_non_null(o);
    assert_int_equal(o->shape[1], 4);
    ax_array_release(o);
    p.lo[0] = -7;
    expect_error_text(cx, ax_bind1(cx, AX_P_CONV_GENERAL_DILATED, 2, (ax_array *[]){l, r}, &p),
                      "negative padding (-7, 0) is larger than dimension 0 of size 5");
    p.lo[0] = 0;
    p.conv.lhs_spec[0] = 1;
    expect_error_text(cx, ax_bind1(cx, AX_P_CONV_GENERAL_DILATED, 2, (ax_array *[]){l, r}, &p),
                      "lhs_spec (1, 1, 2, 3) is not a permutation");
    ax_params w;
    ax_window_params_init(&w, 3);
    expect_error_text(cx, ax_bind1(cx, AX_P_REDUCE_WINDOW_MAX, 1, &l, &w),
                      "window_dimensions (1, 1, 1) have 3 entries for operand f32[2,6,5,5]");
    ax_array_release(l);
    ax_array_release(r);
}

static void test_ir_prints_like_jax(void **state) {
    (void)state;
    ax_params p;
    ax_conv_params_init(&p, 4);
    int lhs[4] = {0, 3, 1, 2}, rhs[4] = {3, 2, 0, 1};
    memcpy(p.conv.lhs_spec, lhs, sizeof lhs);
    memcpy(p.conv.rhs_spec, rhs, sizeof rhs);
    memcpy(p.conv.out_spec, lhs, sizeof lhs);
    p.lo[0] = p.hi[0] = p.lo[1] = p.hi[1] = 1;
    ax_strbuf s;
    ax_strbuf_init(&s);
    ax_ir_format_params(&s, AX_P_CONV_GENERAL_DILATED, &p);
    assert_string_equal(
        s.data, "[batch_group_count=1 dimension_numbers=ConvDimensionNumbers(lhs_spec=(0, 3, 1, "
                "2), rhs_spec=(3, 2, 0, 1), out_spec=(0, 3, 1, 2)) feature_group_count=1 "
                "lhs_dilation=(1, 1) padding=((1, 1), (1, 1)) precision=None "
                "preferred_element_type=None rhs_dilation=(1, 1) window_strides=(1, 1)]");
    ax_strbuf_free(&s);
    ax_strbuf_init(&s);
    ax_window_params_init(&p, 2);
    p.shape[1] = p.step[1] = 2;
    ax_ir_format_params(&s, AX_P_REDUCE_WINDOW_MAX, &p);
    assert_string_equal(s.data, "[base_dilation=(1, 1) padding=((0, 0), (0, 0)) "
                                "window_dilation=(1, 1) window_dimensions=(1, 2) "
                                "window_strides=(1, 2)]");
    ax_strbuf_free(&s);
}

/* A Ctrl-C pending stops the kernel itself (called without bind, which would notice it first)
 * between its blocks: KeyboardInterrupt, reported once. */
static void test_conv_stops_at_ctrl_c(void **state) {
    ax_ctx *cx = *state;
    ax_params p;
    ax_conv_params_init(&p, 4);
    memcpy(p.conv.lhs_spec, (int[]){0, 3, 1, 2}, 4 * sizeof(int));
    memcpy(p.conv.rhs_spec, (int[]){3, 2, 0, 1}, 4 * sizeof(int));
    memcpy(p.conv.out_spec, (int[]){0, 3, 1, 2}, 4 * sizeof(int));
    ax_array *in[2] = {random_array(cx, AX_F32, 4, (int64_t[]){4, 20, 20, 24}, false),
                       random_array(cx, AX_F32, 4, (int64_t[]){3, 3, 24, 20}, false)};
    ax_array *out[1] = {NULL};
    cx->interrupt = 1;
    assert_int_equal(ax_prim_get(AX_P_CONV_GENERAL_DILATED)->eager(cx, 2, in, &p, out), -1);
    assert_null(out[0]);
    assert_int_equal(cx->err.kind, AX_ERR_INTERRUPT);
    assert_int_equal(cx->interrupt, 0);
    ax_error_clear(cx);
    ax_array_release(in[0]);
    ax_array_release(in[1]);
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
        cmocka_unit_test(test_conv_matches_loops),
        cmocka_unit_test(test_conv_large_blocks),
        cmocka_unit_test(test_reduce_window_matches_loops),
        cmocka_unit_test(test_select_and_scatter_matches_loops),
        cmocka_unit_test(test_select_ties),
        cmocka_unit_test(test_window_sum_wraps),
        cmocka_unit_test(test_values_from_torch),
        cmocka_unit_test(test_shape_rule_errors),
        cmocka_unit_test(test_ir_prints_like_jax),
        cmocka_unit_test(test_conv_stops_at_ctrl_c),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}

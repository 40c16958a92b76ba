/* dot_general, Cholesky and triangular solves: values from NumPy (np.matmul / np.einsum /
 * np.linalg.cholesky / np.linalg.solve on np.tril / np.triu),
 * and a randomised comparison of every operand layout against a plain loop. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../runtime/blas.h"
#include "../../runtime/linalg.h"
#include "../../runtime/shape_ops.h"
#include "../../runtime/smallgemm.h"

static ax_array *make(ax_ctx *cx, ax_dtype dtype, int ndim, const int64_t *shape,
                      const double *values) {
    ax_array *a = ax_array_new(cx, dtype, ndim, shape);
    assert_non_null(a);
    size_t es = ax_dtype_size(dtype);
    for (int64_t i = 0; i < a->size; i++)
        ax_convert_element(dtype, (char *)a->buf->data + i * (int64_t)es, AX_F64, &values[i]);
    return a;
}

static void expect_values(ax_array *x, ax_dtype dtype, int ndim, const int64_t *shape,
                          const double *want, double rtol) {
    assert_non_null(x);
    assert_int_equal(x->dtype, dtype);
    assert_true(ax_shape_equal(x->ndim, x->shape, ndim, shape));
    for (int64_t i = 0; i < x->size; i++) {
        double got = ax_array_get_f64(x, i);
        if (isnan(want[i])) {
            assert_true(isnan(got));
            continue;
        }
        if (fabs(got - want[i]) > rtol * (fabs(want[i]) + 1e-30)) {
            print_error("element %lld: got %.17g, want %.17g\n", (long long)i, got, want[i]);
            fail();
        }
    }
}

/* Contracts lhs dim lc with rhs dim rc, no batch dims. */
static ax_dot_dims contract1(int lc, int rc) {
    ax_dot_dims d = {0};
    d.ncontract = 1;
    d.lhs_contract[0] = lc;
    d.rhs_contract[0] = rc;
    return d;
}

static void test_matrix_matrix(void **state) {
    (void)state;
    ax_ctx *cx = ax_ctx_new();
    ax_array *a = make(cx, AX_F32, 2, (int64_t[]){2, 3}, (double[]){-1, -0.5, 0, 0.5, 1, 1.5});
    ax_array *b = make(cx, AX_F32, 2, (int64_t[]){3, 2}, (double[]){0.5, 0.75, 1, 1.25, 1.5, 1.75});
    ax_dot_dims d = contract1(1, 0);
    ax_array *c = ax_dot_general(cx, a, b, &d);
    expect_values(c, AX_F32, 2, (int64_t[]){2, 2}, (double[]){-1.0, -1.375, 3.5, 4.25}, 1e-6);
    ax_array_release(c);
    ax_array_release(a);
    ax_array_release(b);
    ax_ctx_free(cx);
}

static void test_matrix_vector_and_dot(void **state) {
    (void)state;
    ax_ctx *cx = ax_ctx_new();
    ax_array *m = make(cx, AX_F64, 2, (int64_t[]){4, 3},
                       (double[]){1.5, -2.0, 3.25, 0.5, 4.0, -1.0, 2.0, 2.0, 2.0, 0.1, 0.2, 0.3});
    ax_array *v = make(cx, AX_F64, 1, (int64_t[]){3}, (double[]){0.5, -1.5, 2.0});
    ax_dot_dims d = contract1(1, 0);
    ax_array *mv = ax_dot_general(cx, m, v, &d);
    expect_values(mv, AX_F64, 1, (int64_t[]){4}, (double[]){10.25, -7.75, 2.0, 0.3499999999999999},
                  1e-14);
    ax_array *x = make(cx, AX_F32, 1, (int64_t[]){4}, (double[]){1.5, 2.5, -3.0, 4.0});
    ax_array *y = make(cx, AX_F32, 1, (int64_t[]){4}, (double[]){0.5, -1.0, 0.25, 2.0});
    d = contract1(0, 0);
    ax_array *xy = ax_dot_general(cx, x, y, &d);
    expect_values(xy, AX_F32, 0, NULL, (double[]){5.5}, 1e-6);
    ax_array_release(mv);
    ax_array_release(xy);
    ax_array_release(m);
    ax_array_release(v);
    ax_array_release(x);
    ax_array_release(y);
    ax_ctx_free(cx);
}

static void test_outer_and_empty(void **state) {
    (void)state;
    ax_ctx *cx = ax_ctx_new();
    ax_array *u = make(cx, AX_F32, 1, (int64_t[]){2}, (double[]){2, -3});
    ax_array *w = make(cx, AX_F32, 1, (int64_t[]){3}, (double[]){1, 0.5, 4});
    ax_dot_dims none = {0};
    ax_array *o = ax_dot_general(cx, u, w, &none);
    expect_values(o, AX_F32, 2, (int64_t[]){2, 3}, (double[]){2, 1, 8, -3, -1.5, -12}, 0);
    ax_array_release(o);
    /* a zero-length contraction sums nothing */
    ax_array *e1 = ax_array_new(cx, AX_F64, 2, (int64_t[]){2, 0});
    ax_array *e2 = ax_array_new(cx, AX_F64, 2, (int64_t[]){0, 3});
    ax_dot_dims d = contract1(1, 0);
    ax_array *z = ax_dot_general(cx, e1, e2, &d);
    expect_values(z, AX_F64, 2, (int64_t[]){2, 3}, (double[]){0, 0, 0, 0, 0, 0}, 0);
    ax_array_release(z);
    ax_array_release(e1);
    ax_array_release(e2);
    ax_array_release(u);
    ax_array_release(w);
    ax_ctx_free(cx);
}

static void test_batched(void **state) {
    (void)state;
    ax_ctx *cx = ax_ctx_new();
    double lv[12], rv[12];
    for (int i = 0; i < 12; i++) {
        lv[i] = i - 5;
        rv[i] = i * 0.5;
    }
    ax_array *l = make(cx, AX_F64, 3, (int64_t[]){2, 2, 3}, lv);
    ax_array *r = make(cx, AX_F64, 3, (int64_t[]){2, 3, 2}, rv);
    ax_dot_dims d = contract1(2, 1);
    d.nbatch = 1;
    ax_array *c = ax_dot_general(cx, l, r, &d);
    expect_values(c, AX_F64, 3, (int64_t[]){2, 2, 2},
                  (double[]){-10.0, -16.0, -1.0, -2.5, 26.0, 29.0, 62.0, 69.5}, 1e-14);
    ax_array_release(c);
    ax_array_release(l);
    ax_array_release(r);
    ax_ctx_free(cx);
}

/* einsum('akc,cna->kn') and einsum('ibk,kb->bi'): contracting and batch dims anywhere. */
static void test_nonstandard_dims(void **state) {
    (void)state;
    ax_ctx *cx = ax_ctx_new();
    double pv[24], qv[40], sv[24], tv[8];
    for (int i = 0; i < 24; i++) pv[i] = i * 0.5 - 3, sv[i] = i - 10;
    for (int i = 0; i < 40; i++) qv[i] = i * 0.25 - 2;
    for (int i = 0; i < 8; i++) tv[i] = i + 1;
    ax_array *p = make(cx, AX_F64, 3, (int64_t[]){2, 3, 4}, pv);
    ax_array *q = make(cx, AX_F64, 3, (int64_t[]){4, 5, 2}, qv);
    ax_dot_dims d = {.ncontract = 2, .lhs_contract = {2, 0}, .rhs_contract = {0, 2}};
    ax_array *c = ax_dot_general(cx, p, q, &d);
    expect_values(c, AX_F64, 2, (int64_t[]){3, 5},
                  (double[]){26.75, 29.75, 32.75, 35.75, 38.75, 56.75, 67.75, 78.75, 89.75, 100.75,
                             86.75, 105.75, 124.75, 143.75, 162.75},
                  1e-14);
    ax_array *s = make(cx, AX_F32, 3, (int64_t[]){3, 2, 4}, sv);
    ax_array *t = make(cx, AX_F32, 2, (int64_t[]){4, 2}, tv);
    ax_dot_dims e = {.ncontract = 1,
                     .nbatch = 1,
                     .lhs_contract = {2},
                     .rhs_contract = {0},
                     .lhs_batch = {1},
                     .rhs_batch = {1}};
    ax_array *bi = ax_dot_general(cx, s, t, &e);
    expect_values(bi, AX_F32, 2, (int64_t[]){2, 3},
                  (double[]){-126.0, 2.0, 130.0, -80.0, 80.0, 240.0}, 1e-6);
    ax_array_release(bi);
    ax_array_release(c);
    ax_array_release(p);
    ax_array_release(q);
    ax_array_release(s);
    ax_array_release(t);
    ax_ctx_free(cx);
}

/* A transposed view as the lhs: gemm reads it in place with the Trans flag. */
static void test_transposed_view(void **state) {
    (void)state;
    ax_ctx *cx = ax_ctx_new();
    /* base is A^T (3x2); the view (2x3) with strides (1, 2) is A of test_matrix_matrix */
    ax_array *base = make(cx, AX_F32, 2, (int64_t[]){3, 2}, (double[]){-1, 0.5, -0.5, 1, 0, 1.5});
    ax_array *a = ax_array_view(cx, base, 2, (int64_t[]){2, 3}, (int64_t[]){1, 2}, 0);
    ax_array *bbase =
        make(cx, AX_F32, 2, (int64_t[]){2, 3}, (double[]){0.5, 1, 1.5, 0.75, 1.25, 1.75});
    ax_array *b = ax_array_view(cx, bbase, 2, (int64_t[]){3, 2}, (int64_t[]){1, 3}, 0);
    ax_dot_dims d = contract1(1, 0);
    ax_array *c = ax_dot_general(cx, a, b, &d);
    expect_values(c, AX_F32, 2, (int64_t[]){2, 2}, (double[]){-1.0, -1.375, 3.5, 4.25}, 1e-6);
    ax_array_release(c);
    ax_array_release(a);
    ax_array_release(b);
    ax_array_release(base);
    ax_array_release(bbase);
    ax_ctx_free(cx);
}

static void test_integers(void **state) {
    (void)state;
    ax_ctx *cx = ax_ctx_new();
    ax_array *a = make(cx, AX_I32, 2, (int64_t[]){2, 2}, (double[]){100000, -3, 7, 2147483647});
    ax_array *b = make(cx, AX_I32, 2, (int64_t[]){2, 2}, (double[]){30000, 1, 2, 2});
    ax_dot_dims d = contract1(1, 0);
    ax_array *c = ax_dot_general(cx, a, b, &d);
    /* wraps around like np.matmul on int32 */
    expect_values(c, AX_I32, 2, (int64_t[]){2, 2}, (double[]){-1294967302, 99994, 209998, 5}, 0);
    ax_array *p = make(cx, AX_BOOL, 2, (int64_t[]){2, 2}, (double[]){1, 0, 0, 0});
    ax_array *q = make(cx, AX_BOOL, 2, (int64_t[]){2, 2}, (double[]){1, 1, 0, 1});
    ax_array *pq = ax_dot_general(cx, p, q, &d);
    expect_values(pq, AX_BOOL, 2, (int64_t[]){2, 2}, (double[]){1, 1, 0, 0}, 0);
    ax_array_release(pq);
    ax_array_release(p);
    ax_array_release(q);
    ax_array_release(c);
    ax_array_release(a);
    ax_array_release(b);
    ax_ctx_free(cx);
}

static void test_errors(void **state) {
    (void)state;
    ax_ctx *cx = ax_ctx_new();
    ax_array *a = ax_array_zeros(cx, AX_F32, 2, (int64_t[]){2, 3});
    ax_array *b = ax_array_zeros(cx, AX_F64, 2, (int64_t[]){3, 2});
    ax_array *c = ax_array_zeros(cx, AX_F32, 2, (int64_t[]){4, 2});
    ax_dot_dims d = contract1(1, 0);
    assert_null(ax_dot_general(cx, a, b, &d));
    assert_int_equal(cx->err.kind, AX_ERR_TYPE);
    ax_error_clear(cx);
    assert_null(ax_dot_general(cx, a, c, &d));
    assert_int_equal(cx->err.kind, AX_ERR_SHAPE);
    assert_non_null(strstr(cx->err.message, "f32[2,3]"));
    ax_error_clear(cx);
    d = contract1(2, 0);
    assert_null(ax_dot_general(cx, a, c, &d));
    assert_int_equal(cx->err.kind, AX_ERR_SHAPE);
    ax_error_clear(cx);
    assert_null(ax_cholesky(cx, c));
    assert_int_equal(cx->err.kind, AX_ERR_SHAPE);
    ax_error_clear(cx);
    ax_array_release(a);
    ax_array_release(b);
    ax_array_release(c);
    ax_ctx_free(cx);
}

/* ---------------------------------------------------------------------------------------- */
/* Every layout against a plain loop                                                        */

static uint64_t next_random(uint64_t *s) {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static int rand_below(uint64_t *s, int n) {
    return (int)(next_random(s) % (uint64_t)n);
}

/* Which logical index a dimension of an operand carries. */
typedef struct {
    char group; /* 'b'atch, 'c'ontracting, 'f'ree */
    int index;
} dim_role;

typedef struct {
    int nb, nc, nl, nr;
    int64_t bs[2], cs[2], ls[2], rs[2];
} dot_case;

static int64_t role_size(const dot_case *k, dim_role r, bool lhs) {
    if (r.group == 'b') return k->bs[r.index];
    if (r.group == 'c') return k->cs[r.index];
    return lhs ? k->ls[r.index] : k->rs[r.index];
}

/* Builds an array of the given logical shape whose memory layout is chosen at random. */
static ax_array *random_layout(ax_ctx *cx, uint64_t *seed, ax_dtype dtype, int ndim,
                               const int64_t *shape) {
    int kind = rand_below(seed, 4);
    int64_t bshape[8], strides[8], offset = 0;
    ax_array *base, *view;
    if (kind == 1 && ndim >= 2) { /* the transpose of a contiguous array */
        for (int i = 0; i < ndim; i++) bshape[i] = shape[ndim - 1 - i];
        base = ax_array_new(cx, dtype, ndim, bshape);
        for (int i = 0; i < ndim; i++) strides[i] = base->strides[ndim - 1 - i];
    } else if (kind == 2 && ndim >= 1) { /* every other element along a random axis */
        int ax = rand_below(seed, ndim);
        memcpy(bshape, shape, (size_t)ndim * sizeof *shape);
        bshape[ax] *= 2;
        base = ax_array_new(cx, dtype, ndim, bshape);
        memcpy(strides, base->strides, (size_t)ndim * sizeof *strides);
        strides[ax] *= 2;
    } else if (kind == 3 && ndim >= 1) { /* one axis reversed */
        int ax = rand_below(seed, ndim);
        base = ax_array_new(cx, dtype, ndim, shape);
        memcpy(strides, base->strides, (size_t)ndim * sizeof *strides);
        offset = (shape[ax] - 1) * strides[ax];
        strides[ax] = -strides[ax];
    } else {
        base = ax_array_new(cx, dtype, ndim, shape);
        memcpy(strides, base->strides, (size_t)ndim * sizeof *strides);
    }
    assert_non_null(base);
    size_t es = ax_dtype_size(dtype);
    for (int64_t i = 0; i < base->size; i++) {
        double v = rand_below(seed, 9) - 4;
        ax_convert_element(dtype, (char *)base->buf->data + i * (int64_t)es, AX_F64, &v);
    }
    view = ax_array_view(cx, base, ndim, shape, strides, offset);
    ax_array_release(base);
    assert_non_null(view);
    return view;
}

/* Row-major flat index of a multi-index. */
static int64_t flat_index(const ax_array *x, const int64_t *idx) {
    int64_t f = 0;
    for (int d = 0; d < x->ndim; d++) f = f * x->shape[d] + idx[d];
    return f;
}

static void check_random_case(ax_ctx *cx, uint64_t *seed, ax_dtype dtype) {
    dot_case k = {.nb = rand_below(seed, 3),
                  .nc = rand_below(seed, 3),
                  .nl = rand_below(seed, 3),
                  .nr = rand_below(seed, 3)};
    for (int i = 0; i < 2; i++) {
        k.bs[i] = 1 + rand_below(seed, 3);
        k.cs[i] = 1 + rand_below(seed, 4);
        k.ls[i] = 1 + rand_below(seed, 4);
        k.rs[i] = 1 + rand_below(seed, 4);
    }
    dim_role lr[8], rr[8];
    int ln = 0, rn = 0;
    for (int i = 0; i < k.nb; i++) lr[ln++] = rr[rn++] = (dim_role){'b', i};
    for (int i = 0; i < k.nc; i++) lr[ln++] = rr[rn++] = (dim_role){'c', i};
    for (int i = 0; i < k.nl; i++) lr[ln++] = (dim_role){'f', i};
    for (int i = 0; i < k.nr; i++) rr[rn++] = (dim_role){'f', i};
    for (int pass = 0; pass < 2; pass++) { /* shuffle both role lists */
        dim_role *roles = pass ? rr : lr;
        int n = pass ? rn : ln;
        for (int i = n - 1; i > 0; i--) {
            int j = rand_below(seed, i + 1);
            dim_role t = roles[i];
            roles[i] = roles[j];
            roles[j] = t;
        }
        /* free dims come out in the order of their positions */
        int f = 0;
        for (int i = 0; i < n; i++)
            if (roles[i].group == 'f') roles[i].index = f++;
    }
    ax_dot_dims d = {.nbatch = k.nb, .ncontract = k.nc};
    int64_t lshape[8], rshape[8];
    for (int i = 0; i < ln; i++) {
        lshape[i] = role_size(&k, lr[i], true);
        if (lr[i].group == 'b') d.lhs_batch[lr[i].index] = i;
        if (lr[i].group == 'c') d.lhs_contract[lr[i].index] = i;
    }
    for (int i = 0; i < rn; i++) {
        rshape[i] = role_size(&k, rr[i], false);
        if (rr[i].group == 'b') d.rhs_batch[rr[i].index] = i;
        if (rr[i].group == 'c') d.rhs_contract[rr[i].index] = i;
    }
    ax_array *l = random_layout(cx, seed, dtype, ln, lshape);
    ax_array *r = random_layout(cx, seed, dtype, rn, rshape);
    ax_array *out = ax_dot_general(cx, l, r, &d);
    assert_non_null(out);
    /* the plain loop, over (batch, lhs free, rhs free) and the contracting indices */
    int64_t B = 1, M = 1, N = 1, K = 1;
    for (int i = 0; i < k.nb; i++) B *= k.bs[i];
    for (int i = 0; i < k.nl; i++) M *= k.ls[i];
    for (int i = 0; i < k.nr; i++) N *= k.rs[i];
    for (int i = 0; i < k.nc; i++) K *= k.cs[i];
    assert_int_equal(out->size, B * M * N);
    int64_t o = 0;
    for (int64_t b = 0; b < B; b++)
        for (int64_t m = 0; m < M; m++)
            for (int64_t n = 0; n < N; n++, o++) {
                double sum = 0;
                for (int64_t c = 0; c < K; c++) {
                    int64_t bi[2], ci[2], li[2], ri[2], lidx[8], ridx[8];
                    int64_t t = b;
                    for (int i = k.nb - 1; i >= 0; i--) bi[i] = t % k.bs[i], t /= k.bs[i];
                    t = c;
                    for (int i = k.nc - 1; i >= 0; i--) ci[i] = t % k.cs[i], t /= k.cs[i];
                    t = m;
                    for (int i = k.nl - 1; i >= 0; i--) li[i] = t % k.ls[i], t /= k.ls[i];
                    t = n;
                    for (int i = k.nr - 1; i >= 0; i--) ri[i] = t % k.rs[i], t /= k.rs[i];
                    for (int i = 0; i < ln; i++)
                        lidx[i] = lr[i].group == 'b'   ? bi[lr[i].index]
                                  : lr[i].group == 'c' ? ci[lr[i].index]
                                                       : li[lr[i].index];
                    for (int i = 0; i < rn; i++)
                        ridx[i] = rr[i].group == 'b'   ? bi[rr[i].index]
                                  : rr[i].group == 'c' ? ci[rr[i].index]
                                                       : ri[rr[i].index];
                    sum += ax_array_get_f64(l, flat_index(l, lidx)) *
                           ax_array_get_f64(r, flat_index(r, ridx));
                }
                if (ax_array_get_f64(out, o) != sum) {
                    print_error("%s nb=%d nc=%d nl=%d nr=%d: element %lld got %g want %g\n",
                                ax_dtype_short(dtype), k.nb, k.nc, k.nl, k.nr, (long long)o,
                                ax_array_get_f64(out, o), sum);
                    fail();
                }
            }
    ax_array_release(out);
    ax_array_release(l);
    ax_array_release(r);
}

static void test_random_layouts(void **state) {
    (void)state;
    ax_ctx *cx = ax_ctx_new();
    uint64_t seed = 0x9e3779b97f4a7c15ull;
    const ax_dtype dtypes[] = {AX_F32, AX_F64, AX_I32, AX_I64};
    for (int i = 0; i < 400; i++) check_random_case(cx, &seed, dtypes[i % 4]);
    ax_ctx_free(cx);
}

/* Big products run as panels of rows (a Ctrl-C is noticed between them): every row of a
 * product cut in two, with the lhs read in place and transposed, against a plain loop on three
 * columns (small integers: the sums are exact in f32). */
static void test_product_in_panels(void **state) {
    (void)state;
    ax_ctx *cx = ax_ctx_new();
    enum { M = 2048, K = 1024, N = 1024 }; /* 2**31 multiply-adds: two panels of 1024 rows */
    ax_array *a = ax_array_new(cx, AX_F32, 2, (int64_t[]){M, K});
    ax_array *at = ax_array_new(cx, AX_F32, 2, (int64_t[]){K, M}); /* a, stored transposed */
    ax_array *b = ax_array_new(cx, AX_F32, 2, (int64_t[]){K, N});
    float *av = ax_array_data(a), *atv = ax_array_data(at), *bv = ax_array_data(b);
    for (int64_t i = 0; i < M; i++)
        for (int64_t k = 0; k < K; k++)
            av[i * K + k] = atv[k * M + i] = (float)((i * 7 + k) % 5 - 2);
    for (int64_t k = 0; k < K; k++)
        for (int64_t j = 0; j < N; j++) bv[k * N + j] = (float)((k * 3 + j * 11) % 5 - 2);
    ax_array *view = ax_array_view(cx, at, 2, (int64_t[]){M, K}, (int64_t[]){1, M}, 0);
    ax_dot_dims d = contract1(1, 0);
    ax_array *c[2] = {ax_dot_general(cx, a, b, &d), ax_dot_general(cx, view, b, &d)};
    for (int v = 0; v < 2; v++) {
        assert_non_null(c[v]);
        const float *cv = ax_array_data(c[v]);
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j += N / 2 - 1) {
                double want = 0;
                for (int64_t k = 0; k < K; k++) want += (double)av[i * K + k] * bv[k * N + j];
                if (cv[i * N + j] != want)
                    fail_msg("%s lhs: element (%lld, %lld) is %g, not %g",
                             v ? "transposed" : "plain", (long long)i, (long long)j,
                             (double)cv[i * N + j], want);
            }
        ax_array_release(c[v]);
    }
    /* a Ctrl-C pending when a product starts stops it (floats between panels, integers
     * between rows): KeyboardInterrupt, reported once */
    ax_array *ints = make(cx, AX_I32, 2, (int64_t[]){2, 2}, (double[]){1, 2, 3, 4});
    ax_array *operands[2] = {a, ints};
    for (int t = 0; t < 2; t++) {
        cx->interrupt = 1;
        assert_null(ax_dot_general(cx, operands[t], t ? ints : b, &d));
        assert_int_equal(cx->err.kind, AX_ERR_INTERRUPT);
        assert_int_equal(cx->interrupt, 0);
        ax_error_clear(cx);
    }
    ax_array_release(ints);
    ax_array_release(view);
    ax_array_release(a);
    ax_array_release(at);
    ax_array_release(b);
    ax_ctx_free(cx);
}

/* ---------------------------------------------------------------------------------------- */
/* The BLAS calls a product makes: x @ x.T through syrk, transposes as gemm's flags          */

/* Stand-ins for OpenBLAS's entry points that record each call and then make it. */
static struct {
    ax_ssyrk_fn ssyrk;
    ax_dsyrk_fn dsyrk;
    ax_sgemm_fn sgemm;
    int nsyrk, ngemm;
    int ta, tb;        /* the last gemm's flags */
    const void *a, *b; /* and operands */
} blas_log;

static void log_ssyrk(int order, int uplo, int trans, int n, int k, float alpha, const float *a,
                      int lda, float beta, float *c, int ldc) {
    blas_log.nsyrk++;
    blas_log.ssyrk(order, uplo, trans, n, k, alpha, a, lda, beta, c, ldc);
}

static void log_dsyrk(int order, int uplo, int trans, int n, int k, double alpha, const double *a,
                      int lda, double beta, double *c, int ldc) {
    blas_log.nsyrk++;
    blas_log.dsyrk(order, uplo, trans, n, k, alpha, a, lda, beta, c, ldc);
}

static void log_sgemm(int order, int ta, int tb, int m, int n, int k, float alpha, const float *a,
                      int lda, const float *b, int ldb, float beta, float *c, int ldc) {
    blas_log.ngemm++;
    blas_log.ta = ta, blas_log.tb = tb, blas_log.a = a, blas_log.b = b;
    blas_log.sgemm(order, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

static ax_ctx *logging_ctx(void) {
    ax_ctx *cx = ax_ctx_new();
    ax_blas *blas = ax_blas_get(cx);
    assert_non_null(blas);
    blas_log.ssyrk = blas->ssyrk, blas_log.dsyrk = blas->dsyrk, blas_log.sgemm = blas->sgemm;
    blas->ssyrk = log_ssyrk, blas->dsyrk = log_dsyrk, blas->sgemm = log_sgemm;
    blas_log.nsyrk = blas_log.ngemm = 0;
    return cx;
}

/* Small integers, so that every summation order gives the exact result. */
static ax_array *small_ints(ax_ctx *cx, ax_dtype dtype, int ndim, const int64_t *shape,
                            uint64_t *seed) {
    ax_array *x = ax_array_new(cx, dtype, ndim, shape);
    assert_non_null(x);
    for (int64_t i = 0; i < x->size; i++) {
        double v = rand_below(seed, 9) - 4;
        ax_convert_element(dtype, (char *)x->buf->data + i * (int64_t)ax_dtype_size(dtype), AX_F64,
                           &v);
    }
    return x;
}

/* x @ x.T (or x.T @ x) of x (batch..., m, k): one syrk per matrix, equal to the plain sums and
 * so exactly symmetric. */
static void check_gram(ax_ctx *cx, ax_dtype dtype, int nbatch, int64_t m, int64_t k,
                       bool transposed_first, uint64_t *seed) {
    int nd = nbatch + 2;
    int64_t shape[4] = {3, 2, 3, 2};
    shape[nd - 2] = m, shape[nd - 1] = k;
    ax_array *x = small_ints(cx, dtype, nd, shape, seed);
    int perm[4] = {0, 1, 2, 3};
    perm[nd - 2] = nd - 1, perm[nd - 1] = nd - 2;
    ax_array *xt = ax_transpose(cx, x, perm);
    /* as the language writes x @ x.T and x.T @ x: the lhs's last dim with the rhs's second to
     * last */
    ax_dot_dims d = {
        .nbatch = nbatch, .ncontract = 1, .lhs_contract = {nd - 1}, .rhs_contract = {nd - 2}};
    for (int i = 0; i < nbatch; i++) d.lhs_batch[i] = d.rhs_batch[i] = i;
    ax_array *l = transposed_first ? xt : x, *r = transposed_first ? x : xt;
    int before = blas_log.nsyrk;
    ax_array *c = ax_dot_general(cx, l, r, &d);
    assert_non_null(c);
    int64_t nmat = 1, n = transposed_first ? k : m, kk = transposed_first ? m : k;
    for (int i = 0; i < nbatch; i++) nmat *= shape[i];
    /* (a sum of one product per element, k = 1, is a plain gemm: symmetric all the same) */
    assert_int_equal(blas_log.nsyrk - before, n > 1 && kk > 1 ? nmat : 0);
    for (int64_t b = 0; b < nmat; b++)
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < n; j++) {
                double sum = 0;
                for (int64_t p = 0; p < kk; p++) {
                    int64_t xi = transposed_first ? p * k + i : i * k + p;
                    int64_t xj = transposed_first ? p * k + j : j * k + p;
                    sum +=
                        ax_array_get_f64(x, b * m * k + xi) * ax_array_get_f64(x, b * m * k + xj);
                }
                double got = ax_array_get_f64(c, (b * n + i) * n + j);
                if (got != sum) {
                    print_error("%s batch %d %lldx%lld%s: [%lld, %lld, %lld] got %g want %g\n",
                                ax_dtype_short(dtype), nbatch, (long long)m, (long long)k,
                                transposed_first ? " (x.T @ x)" : "", (long long)b, (long long)i,
                                (long long)j, got, sum);
                    fail();
                }
            }
    ax_array_release(c);
    ax_array_release(xt);
    ax_array_release(x);
}

static void test_gram_through_syrk(void **state) {
    (void)state;
    ax_ctx *cx = logging_ctx();
    uint64_t seed = 0x2545f4914f6cdd1dull;
    const int64_t sizes[][2] = {{1, 1}, {1, 4},   {4, 1},   {5, 3},
                                {3, 5}, {17, 40}, {70, 70}, {130, 7}};
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++)
        for (int nbatch = 0; nbatch <= 2; nbatch++)
            for (int t = 0; t < 2; t++) {
                check_gram(cx, AX_F32, nbatch, sizes[s][0], sizes[s][1], t, &seed);
                check_gram(cx, AX_F64, nbatch, sizes[s][0], sizes[s][1], t, &seed);
            }
    ax_ctx_free(cx);
}

/* a.T @ b, a @ b.T and their batched forms read the operands where they are: gemm gets the
 * arrays' own data with its Trans flags, nothing is copied. */
static void test_transposes_fold_into_gemm(void **state) {
    (void)state;
    ax_ctx *cx = logging_ctx();
    uint64_t seed = 7;
    for (int nbatch = 0; nbatch <= 1; nbatch++) {
        int nd = nbatch + 2;
        /* a (6x5), b (6x3), e (2x5), each with a batch dim of 4 in front or none */
        int64_t as[3] = {4, 6, 5}, bs[3] = {4, 6, 3}, es[3] = {4, 2, 5};
        ax_array *a = small_ints(cx, AX_F32, nd, as + 1 - nbatch, &seed);
        ax_array *b = small_ints(cx, AX_F32, nd, bs + 1 - nbatch, &seed);
        ax_array *e = small_ints(cx, AX_F32, nd, es + 1 - nbatch, &seed);
        int perm[3] = {0, 1, 2};
        perm[nd - 2] = nd - 1, perm[nd - 1] = nd - 2;
        ax_array *at = ax_transpose(cx, a, perm), *et = ax_transpose(cx, e, perm);
        ax_dot_dims d = {.nbatch = nbatch, .ncontract = 1};
        d.lhs_batch[0] = d.rhs_batch[0] = 0;
        d.lhs_contract[0] = nd - 1, d.rhs_contract[0] = nd - 2;
        for (int form = 0; form < 2; form++) { /* a.T @ b, then a @ e.T */
            ax_array *l = form ? a : at, *r = form ? et : b;
            int before = blas_log.ngemm;
            ax_array *c = ax_dot_general(cx, l, r, &d);
            assert_non_null(c);
            assert_int_equal(blas_log.ngemm - before, nbatch ? 4 : 1);
            assert_int_equal(blas_log.ta, form ? AX_CBLAS_NO_TRANS : AX_CBLAS_TRANS);
            assert_int_equal(blas_log.tb, form ? AX_CBLAS_TRANS : AX_CBLAS_NO_TRANS);
            /* the last batch element's matrices, in the operands' own buffers */
            int64_t last = nbatch ? 3 : 0;
            assert_ptr_equal(blas_log.a, (char *)ax_array_data(a) + last * 30 * 4);
            assert_ptr_equal(blas_log.b,
                             (char *)ax_array_data(form ? e : b) + last * (form ? 10 : 18) * 4);
            ax_array_release(c);
        }
        ax_array_release(at);
        ax_array_release(et);
        ax_array_release(a);
        ax_array_release(b);
        ax_array_release(e);
    }
    ax_ctx_free(cx);
}

/* libxsmm's small products against a plain loop: every flag combination it takes, row
 * strides wider than the rows, f32 and f64; it declines (and leaves c alone) rather than
 * computing a case wrongly. */
static void test_small_gemm(void **state) {
    (void)state;
    uint64_t seed = 11;
    const int shapes[][3] = {{5, 16, 3}, {17, 33, 9}, {128, 128, 128}, {1, 20, 7}, {64, 16, 1}};
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++)
        for (int dt = 0; dt < 2; dt++)
            for (int flags = 0; flags < 4; flags++) {
                int m = shapes[s][0], n = shapes[s][1], k = shapes[s][2];
                bool ta = flags & 1, tb = flags & 2;
                int lda = (ta ? m : k) + 3, ldb = (tb ? k : n) + 2, ldc = n + 1;
                int arows = ta ? k : m, brows = tb ? n : k;
                double *a = malloc(sizeof *a * (size_t)(arows * lda));
                double *b = malloc(sizeof *b * (size_t)(brows * ldb));
                double *c = malloc(sizeof *c * (size_t)(m * ldc));
                float *af = malloc(sizeof *af * (size_t)(arows * lda));
                float *bf = malloc(sizeof *bf * (size_t)(brows * ldb));
                float *cf = malloc(sizeof *cf * (size_t)(m * ldc));
                for (int i = 0; i < arows * lda; i++)
                    af[i] = (float)(a[i] = rand_below(&seed, 9) - 4);
                for (int i = 0; i < brows * ldb; i++)
                    bf[i] = (float)(b[i] = rand_below(&seed, 9) - 4);
                for (int i = 0; i < m * ldc; i++) cf[i] = (float)(c[i] = -99);
                bool done = dt ? ax_small_gemm(AX_F64, ta, tb, m, n, k, a, lda, b, ldb, c, ldc)
                               : ax_small_gemm(AX_F32, ta, tb, m, n, k, af, lda, bf, ldb, cf, ldc);
                if (!tb) assert_true(done); /* the forms dot_general sends it */
                for (int i = 0; i < m; i++)
                    for (int j = 0; j < ldc; j++) {
                        double want = -99;
                        if (done && j < n) {
                            want = 0;
                            for (int p = 0; p < k; p++)
                                want += a[ta ? p * lda + i : i * lda + p] *
                                        b[tb ? j * ldb + p : p * ldb + j];
                        }
                        double got = dt ? c[i * ldc + j] : cf[i * ldc + j];
                        if (got != want) {
                            print_error("%s %dx%dx%d ta=%d tb=%d: c[%d, %d] got %g want %g\n",
                                        dt ? "f64" : "f32", m, n, k, ta, tb, i, j, got, want);
                            fail();
                        }
                    }
                free(a), free(b), free(c), free(af), free(bf), free(cf);
            }
}

/* ---------------------------------------------------------------------------------------- */
/* Cholesky                                                                                 */

static void test_cholesky(void **state) {
    (void)state;
    ax_ctx *cx = ax_ctx_new();
    const double spd[9] = {4.0, 2.0, 0.6, 2.0, 5.0, 1.5, 0.6, 1.5, 3.0};
    const double want[9] = {2.0, 0.0, 0.0, 1.0, 2.0, 0.0, 0.3, 0.6, 1.5968719422671311};
    ax_array *a = make(cx, AX_F64, 2, (int64_t[]){3, 3}, spd);
    ax_array *l = ax_cholesky(cx, a);
    expect_values(l, AX_F64, 2, (int64_t[]){3, 3}, want, 1e-14);
    ax_array_release(l);
    /* batched f32, the second matrix not positive definite: all NaN */
    ax_array *b = make(cx, AX_F32, 3, (int64_t[]){2, 2, 2}, (double[]){2, -1, -1, 2, 1, 2, 2, 1});
    ax_array *lb = ax_cholesky(cx, b);
    expect_values(lb, AX_F32, 3, (int64_t[]){2, 2, 2},
                  (double[]){1.4142135381698608, 0.0, -0.7071067690849304, 1.2247449159622192, NAN,
                             NAN, NAN, NAN},
                  1e-6);
    ax_array_release(lb);
    ax_array_release(b);
    /* only the lower triangle is read */
    ax_array *u = make(cx, AX_F64, 2, (int64_t[]){3, 3},
                       (double[]){4.0, 99, -99, 2.0, 5.0, 7, 0.6, 1.5, 3.0});
    ax_array *lu = ax_cholesky(cx, u);
    expect_values(lu, AX_F64, 2, (int64_t[]){3, 3}, want, 1e-14);
    ax_array_release(lu);
    ax_array_release(u);
    ax_array_release(a);
    ax_ctx_free(cx);
}

/* ---------------------------------------------------------------------------------------- */
/* Triangular solves                                                                        */

/* A's triangle that a solve does not read holds junk (7, -5, 9 above, 0.5, 1, 0.25 below). */
static const double tri_a[9] = {2.0, 7.0, -5.0, 0.5, -1.5, 9.0, 1.0, 0.25, 4.0};
static const double tri_b[6] = {1.0, -2.0, 0.5, 3.0, 2.0, 1.0};       /* 3x2: on the left */
static const double tri_b_right[6] = {1.0, 0.5, 2.0, -2.0, 3.0, 1.0}; /* 2x3: on the right */
static const double want_lower[6] = {
    0.5, -1.0, -0.16666666666666666, -2.333333333333333, 0.3854166666666667, 0.6458333333333333};

static void expect_solve(ax_ctx *cx, ax_array *a, const double *b, bool right, int flags,
                         const double *want) {
    int64_t shape[2] = {right ? 2 : 3, right ? 3 : 2};
    ax_array *bb = make(cx, a->dtype, 2, shape, b);
    ax_array *x = ax_triangular_solve(cx, a, bb, flags);
    expect_values(x, a->dtype, 2, shape, want, 1e-13);
    ax_array_release(x);
    ax_array_release(bb);
}

static void test_triangular_solve(void **state) {
    (void)state;
    ax_ctx *cx = ax_ctx_new();
    ax_array *a = make(cx, AX_F64, 2, (int64_t[]){3, 3}, tri_a);
    expect_solve(cx, a, tri_b, false, AX_TRSOLVE_LOWER, want_lower);
    expect_solve(cx, a, tri_b, false, AX_TRSOLVE_TRANSPOSE_A,
                 (double[]){0.5000000000000001, -1.0000000000000004, 2.0000000000000004,
                            -6.666666666666669, -3.375000000000001, 14.000000000000004});
    expect_solve(cx, a, tri_b, false, AX_TRSOLVE_LOWER | AX_TRSOLVE_UNIT_DIAGONAL,
                 (double[]){1.0, -2.0, 0.0, 4.0, 1.0, 2.0});
    expect_solve(cx, a, tri_b_right, true, AX_TRSOLVE_RIGHT_SIDE,
                 (double[]){0.5000000000000001, 2.0000000000000004, -3.375000000000001,
                            -1.0000000000000004, -6.666666666666669, 14.000000000000004});
    expect_solve(cx, a, tri_b_right, true,
                 AX_TRSOLVE_RIGHT_SIDE | AX_TRSOLVE_LOWER | AX_TRSOLVE_TRANSPOSE_A,
                 (double[]){0.5, -0.16666666666666666, 0.3854166666666667, -1.0, -2.333333333333333,
                            0.6458333333333333});
    /* a transposed view: the upper triangle of a^T, transposed, is tril(a) */
    ax_array *at = ax_transpose(cx, a, (int[]){1, 0});
    expect_solve(cx, at, tri_b, false, AX_TRSOLVE_TRANSPOSE_A, want_lower);
    ax_array_release(at);
    ax_array_release(a);
    /* batched f32: a (2, 2, 2), b (2, 2, 1) */
    ax_array *ab =
        make(cx, AX_F32, 3, (int64_t[]){2, 2, 2}, (double[]){2, -1, 0.5, 4, -3, 8, 1.5, 0.5});
    ax_array *bb = make(cx, AX_F32, 3, (int64_t[]){2, 2, 1}, (double[]){1, 2, 3, -1});
    ax_array *xb = ax_triangular_solve(cx, ab, bb, AX_TRSOLVE_LOWER);
    expect_values(xb, AX_F32, 3, (int64_t[]){2, 2, 1}, (double[]){0.5, 0.4375, -1.0, 1.0}, 1e-6);
    ax_array_release(xb);
    ax_array_release(bb);
    /* no right-hand sides: an empty result */
    ax_array *b0 = ax_array_new(cx, AX_F32, 3, (int64_t[]){2, 2, 0});
    ax_array *x0 = ax_triangular_solve(cx, ab, b0, AX_TRSOLVE_LOWER);
    assert_non_null(x0);
    assert_true(ax_shape_equal(x0->ndim, x0->shape, 3, (int64_t[]){2, 2, 0}));
    ax_array_release(x0);
    ax_array_release(b0);
    /* errors, in the user's terms */
    ax_array *bd = ax_array_new(cx, AX_F64, 3, (int64_t[]){2, 2, 1});
    assert_null(ax_triangular_solve(cx, ab, bd, 0));
    assert_int_equal(cx->err.kind, AX_ERR_TYPE);
    assert_string_equal(cx->err.message, "triangular_solve requires f32 or f64 operands of one "
                                         "dtype, got f32[2,2,2] and f64[2,2,1]");
    ax_error_clear(cx);
    ax_array *bs = ax_array_new(cx, AX_F32, 3, (int64_t[]){2, 3, 1});
    assert_null(ax_triangular_solve(cx, ab, bs, 0));
    assert_int_equal(cx->err.kind, AX_ERR_SHAPE);
    assert_string_equal(cx->err.message, "triangular_solve requires a (..., n, n) and b (..., n, "
                                         "k) with the same leading dimensions, got f32[2,2,2] "
                                         "and f32[2,3,1]");
    ax_error_clear(cx);
    ax_array_release(bs);
    ax_array_release(bd);
    ax_array_release(ab);
    ax_ctx_free(cx);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_matrix_matrix),
        cmocka_unit_test(test_matrix_vector_and_dot),
        cmocka_unit_test(test_outer_and_empty),
        cmocka_unit_test(test_batched),
        cmocka_unit_test(test_nonstandard_dims),
        cmocka_unit_test(test_transposed_view),
        cmocka_unit_test(test_integers),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_random_layouts),
        cmocka_unit_test(test_cholesky),
        cmocka_unit_test(test_triangular_solve),
        cmocka_unit_test(test_gram_through_syrk),
        cmocka_unit_test(test_transposes_fold_into_gemm),
        cmocka_unit_test(test_small_gemm),
        cmocka_unit_test(test_product_in_panels),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

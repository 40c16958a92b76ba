/* Reductions, arg-reductions and scans: values against NumPy (literals computed with
 * numpy 1.24), on contiguous arrays and on views, empty arrays, rank 0, big arrays that take
 * the tiled and the threaded paths, and errors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "../../runtime/reduce.h"
#include "../../runtime/shape_ops.h"
#include "kernel_test_util.h"

static ax_array *x234(ax_ctx *cx) {
    return make_range(cx, AX_F32, 3, SHAPE(2, 3, 4));
}

/* n copies of 0.1f */
static ax_array *tenths(ax_ctx *cx, int64_t n) {
    ax_array *x = ax_array_new(cx, AX_F32, 1, &n);
    float *d = ax_array_data(x);
    for (int64_t i = 0; i < n; i++) d[i] = 0.1f;
    return x;
}

static void test_sum_over_axes(void **state) {
    ax_ctx *cx = *state;
    ax_array *x = x234(cx);
    expect_values(ax_reduce(cx, AX_REDUCE_SUM, x, 1, AXES(0)), AX_F32, 2, SHAPE(3, 4),
                  VALS(12, 14, 16, 18, 20, 22, 24, 26, 28, 30, 32, 34), 0);
    expect_values(ax_reduce(cx, AX_REDUCE_SUM, x, 1, AXES(1)), AX_F32, 2, SHAPE(2, 4),
                  VALS(12, 15, 18, 21, 48, 51, 54, 57), 0);
    expect_values(ax_reduce(cx, AX_REDUCE_SUM, x, 1, AXES(-1)), AX_F32, 2, SHAPE(2, 3),
                  VALS(6, 22, 38, 54, 70, 86), 0);
    expect_values(ax_reduce(cx, AX_REDUCE_SUM, x, 2, AXES(2, 0)), AX_F32, 1, SHAPE(3),
                  VALS(60, 92, 124), 0);
    expect_values(ax_reduce(cx, AX_REDUCE_SUM, x, 2, AXES(1, 2)), AX_F32, 1, SHAPE(2),
                  VALS(66, 210), 0);
    expect_values(ax_reduce(cx, AX_REDUCE_SUM, x, 3, AXES(0, 1, 2)), AX_F32, 0, NULL, VALS(276), 0);
    double all[24];
    for (int i = 0; i < 24; i++) all[i] = i;
    expect_values(ax_reduce(cx, AX_REDUCE_SUM, x, 0, NULL), AX_F32, 3, SHAPE(2, 3, 4), all, 0);
    ax_array *w = make_range(cx, AX_F32, 3, SHAPE(2, 3, 4));
    w->weak = true;
    ax_array *r = ax_reduce(cx, AX_REDUCE_SUM, w, 1, AXES(0));
    assert_true(r->weak);
    ax_array_release(r);
    ax_array_release(w);
    ax_array_release(x);
}

static void test_prod_max_min(void **state) {
    ax_ctx *cx = *state;
    double v[24];
    for (int i = 0; i < 24; i++) v[i] = (i + 1) / 8.0;
    ax_array *x = make_array(cx, AX_F32, 3, SHAPE(2, 3, 4), v);
    expect_values(ax_reduce(cx, AX_REDUCE_PROD, x, 1, AXES(2)), AX_F32, 2, SHAPE(2, 3),
                  VALS(0.005859375, 0.41015625, 2.900390625, 10.6640625, 28.388671875, 62.26171875),
                  1e-7);
    ax_array *m = make_array(cx, AX_F64, 2, SHAPE(2, 3), VALS(1, NAN, 3, 4, 5, -6));
    expect_values(ax_reduce(cx, AX_REDUCE_MAX, m, 1, AXES(1)), AX_F64, 1, SHAPE(2), VALS(NAN, 5),
                  0);
    expect_values(ax_reduce(cx, AX_REDUCE_MIN, m, 1, AXES(0)), AX_F64, 1, SHAPE(3),
                  VALS(1, NAN, -6), 0);
    ax_array *i = make_array(cx, AX_I32, 1, SHAPE(3), VALS(100000, 100000, 3));
    expect_values(ax_reduce(cx, AX_REDUCE_PROD, i, 1, AXES(0)), AX_I32, 0, NULL, VALS(-64771072),
                  0); /* wraps, as np.prod(dtype=int32) */
    ax_array *j = make_array(cx, AX_I32, 1, SHAPE(2), VALS(2147483647, 10));
    expect_values(ax_reduce(cx, AX_REDUCE_SUM, j, 1, AXES(0)), AX_I32, 0, NULL, VALS(-2147483639),
                  0);
    ax_array *u = make_array(cx, AX_U8, 1, SHAPE(3), VALS(200, 100, 50));
    expect_values(ax_reduce(cx, AX_REDUCE_SUM, u, 1, AXES(0)), AX_U8, 0, NULL, VALS(94), 0);
    expect_values(ax_reduce(cx, AX_REDUCE_MIN, u, 1, AXES(0)), AX_U8, 0, NULL, VALS(50), 0);
    ax_array *neg = make_array(cx, AX_I64, 2, SHAPE(2, 2), VALS(-5, -9, 3, -1));
    expect_values(ax_reduce(cx, AX_REDUCE_MAX, neg, 1, AXES(1)), AX_I64, 1, SHAPE(2), VALS(-5, 3),
                  0);
    expect_values(ax_reduce(cx, AX_REDUCE_MIN, neg, 1, AXES(0)), AX_I64, 1, SHAPE(2), VALS(-5, -9),
                  0);
    ax_array *big = make_array(cx, AX_U32, 1, SHAPE(2), VALS(4000000000.0, 7));
    expect_values(ax_reduce(cx, AX_REDUCE_MAX, big, 1, AXES(0)), AX_U32, 0, NULL,
                  VALS(4000000000.0), 0);
    ax_array_release(big);
    ax_array_release(neg);
    ax_array_release(u);
    ax_array_release(j);
    ax_array_release(i);
    ax_array_release(m);
    ax_array_release(x);
}

static void test_bool_reductions(void **state) {
    ax_ctx *cx = *state;
    ax_array *b = make_array(cx, AX_BOOL, 2, SHAPE(2, 3), VALS(1, 0, 1, 1, 1, 1));
    expect_values(ax_reduce(cx, AX_REDUCE_AND, b, 1, AXES(1)), AX_BOOL, 1, SHAPE(2), VALS(0, 1), 0);
    expect_values(ax_reduce(cx, AX_REDUCE_OR, b, 1, AXES(0)), AX_BOOL, 1, SHAPE(3), VALS(1, 1, 1),
                  0);
    expect_values(ax_reduce(cx, AX_REDUCE_MIN, b, 2, AXES(0, 1)), AX_BOOL, 0, NULL, VALS(0), 0);
    expect_values(ax_reduce(cx, AX_REDUCE_MAX, b, 2, AXES(0, 1)), AX_BOOL, 0, NULL, VALS(1), 0);
    ax_array *e = ax_array_new(cx, AX_BOOL, 1, SHAPE(0));
    expect_values(ax_reduce(cx, AX_REDUCE_AND, e, 1, AXES(0)), AX_BOOL, 0, NULL, VALS(1), 0);
    expect_values(ax_reduce(cx, AX_REDUCE_OR, e, 1, AXES(0)), AX_BOOL, 0, NULL, VALS(0), 0);
    expect_error(cx, ax_reduce(cx, AX_REDUCE_SUM, b, 1, AXES(0)), AX_ERR_TYPE,
                 "reduce_sum requires a numeric argument, got bool[2,3]");
    ax_array *f = make_range(cx, AX_F32, 1, SHAPE(3));
    expect_error(cx, ax_reduce(cx, AX_REDUCE_OR, f, 1, AXES(0)), AX_ERR_TYPE,
                 "reduce_or requires a boolean argument, got f32[3]");
    ax_array_release(f);
    ax_array_release(e);
    ax_array_release(b);
}

static void test_views_as_inputs(void **state) {
    ax_ctx *cx = *state;
    ax_array *x = x234(cx);
    ax_array *t = ax_transpose(cx, x, AXES(2, 0, 1));
    expect_values(ax_reduce(cx, AX_REDUCE_SUM, t, 1, AXES(0)), AX_F32, 2, SHAPE(2, 3),
                  VALS(6, 22, 38, 54, 70, 86), 0);
    expect_values(ax_reduce(cx, AX_REDUCE_SUM, t, 2, AXES(1, 2)), AX_F32, 1, SHAPE(4),
                  VALS(60, 66, 72, 78), 0);
    /* x[:, ::2, ::-1] */
    ax_array *s = ax_slice(cx, x, SHAPE(0, 0, 0), SHAPE(2, 3, 4), SHAPE(1, 2, 1));
    ax_array *sr = ax_rev(cx, s, 1, AXES(2));
    expect_values(ax_reduce(cx, AX_REDUCE_MAX, sr, 1, AXES(2)), AX_F32, 2, SHAPE(2, 2),
                  VALS(3, 11, 15, 23), 0);
    expect_values(ax_reduce(cx, AX_REDUCE_MIN, sr, 1, AXES(0)), AX_F32, 2, SHAPE(2, 4),
                  VALS(3, 2, 1, 0, 11, 10, 9, 8), 0);
    ax_array *v = make_array(cx, AX_F32, 1, SHAPE(4), VALS(3, -1, 7, 2));
    ax_array *b = ax_broadcast_in_dim(cx, v, 2, SHAPE(5, 4), AXES(1));
    expect_values(ax_reduce(cx, AX_REDUCE_SUM, b, 1, AXES(0)), AX_F32, 1, SHAPE(4),
                  VALS(15, -5, 35, 10), 0);
    expect_values(ax_reduce(cx, AX_REDUCE_SUM, b, 1, AXES(1)), AX_F32, 1, SHAPE(5),
                  VALS(11, 11, 11, 11, 11), 0);
    ax_array_release(b);
    ax_array_release(v);
    ax_array_release(sr);
    ax_array_release(s);
    ax_array_release(t);
    ax_array_release(x);
}

static void test_empty_and_rank0(void **state) {
    ax_ctx *cx = *state;
    ax_array *e = ax_array_new(cx, AX_F32, 2, SHAPE(0, 3));
    expect_values(ax_reduce(cx, AX_REDUCE_SUM, e, 1, AXES(0)), AX_F32, 1, SHAPE(3), VALS(0, 0, 0),
                  0);
    expect_values(ax_reduce(cx, AX_REDUCE_PROD, e, 1, AXES(0)), AX_F32, 1, SHAPE(3), VALS(1, 1, 1),
                  0);
    expect_values(ax_reduce(cx, AX_REDUCE_SUM, e, 1, AXES(1)), AX_F32, 1, SHAPE(0), NULL, 0);
    expect_values(ax_reduce(cx, AX_REDUCE_MAX, e, 1, AXES(1)), AX_F32, 1, SHAPE(0), NULL, 0);
    expect_error(cx, ax_reduce(cx, AX_REDUCE_MAX, e, 1, AXES(0)), AX_ERR_VALUE,
                 "zero-size array to reduction operation maximum which has no identity (axis 0 "
                 "of f32[0,3])");
    expect_error(cx, ax_reduce(cx, AX_REDUCE_MIN, e, 2, AXES(1, 0)), AX_ERR_VALUE,
                 "zero-size array to reduction operation minimum which has no identity (axis 0 "
                 "of f32[0,3])");
    ax_array *s = ax_array_scalar(cx, AX_I32, -4);
    expect_values(ax_reduce(cx, AX_REDUCE_SUM, s, 0, NULL), AX_I32, 0, NULL, VALS(-4), 0);
    expect_values(ax_reduce(cx, AX_REDUCE_MIN, s, 0, NULL), AX_I32, 0, NULL, VALS(-4), 0);
    expect_error(cx, ax_reduce(cx, AX_REDUCE_SUM, s, 1, AXES(0)), AX_ERR_VALUE,
                 "reduce_sum: 1 axes given for i32[]");
    ax_array *x = x234(cx);
    expect_error(cx, ax_reduce(cx, AX_REDUCE_SUM, x, 1, AXES(3)), AX_ERR_VALUE,
                 "reduce_sum: axis 3 is out of bounds for f32[2,3,4]");
    expect_error(cx, ax_reduce(cx, AX_REDUCE_SUM, x, 2, AXES(1, -2)), AX_ERR_VALUE,
                 "reduce_sum: axis 1 is repeated in the reduction axes");
    ax_array_release(x);
    ax_array_release(s);
    ax_array_release(e);
}

/* Accuracy: a million copies of 0.1f. Sequential f32 addition gives 100958.34; NumPy's
 * pairwise f32 sum 100000.086; the f64 accumulation rounds to 100000.0. */
static void test_float_sum_accuracy(void **state) {
    ax_ctx *cx = *state;
    int64_t n = 1000000;
    ax_array *x = tenths(cx, n);
    ax_array *r = ax_reduce(cx, AX_REDUCE_SUM, x, 1, AXES(0));
    expect_values(r, AX_F32, 0, NULL, VALS(100000.0), 0);
    ax_array_release(x);
    /* f64: 100000 values k/7 - 50, the exact sum (math.fsum) is 2135714.285714286 */
    double *v = malloc(100000 * sizeof *v);
    for (int64_t i = 0; i < 100000; i++) v[i] = (double)(i * 7919 % 1000) / 7.0 - 50;
    ax_array *d = make_array(cx, AX_F64, 1, SHAPE(100000), v);
    expect_values(ax_reduce(cx, AX_REDUCE_SUM, d, 1, AXES(0)), AX_F64, 0, NULL,
                  VALS(2135714.285714286), 1e-15);
    ax_array_release(d);
    free(v);
}

/* Big reductions: the tiled path (outputs > 16384) and the threaded paths (>= 256K elements),
 * with integer-valued data so that every result is exact. */
static void check_i64_sums(ax_ctx *cx, int64_t rows, int64_t cols, bool transposed) {
    /* x[i, j] = i * cols + j (or the transpose of such a cols x rows matrix) */
    ax_array *base = make_range(cx, AX_I64, 2, transposed ? SHAPE(cols, rows) : SHAPE(rows, cols));
    ax_array *x = transposed ? ax_transpose(cx, base, AXES(1, 0)) : ax_array_retain(base);
    ax_array *s0 = ax_reduce(cx, AX_REDUCE_SUM, x, 1, AXES(0));
    ax_array *s1 = ax_reduce(cx, AX_REDUCE_SUM, x, 1, AXES(1));
    check_shape(s0, AX_I64, 1, SHAPE(cols));
    check_shape(s1, AX_I64, 1, SHAPE(rows));
    const int64_t *r0 = ax_array_data(s0), *r1 = ax_array_data(s1);
    for (int64_t j = 0; j < cols; j++) {
        int64_t want = 0;
        for (int64_t i = 0; i < rows; i++) want += transposed ? j * rows + i : i * cols + j;
        assert_int_equal(r0[j], want);
    }
    for (int64_t i = 0; i < rows; i++) {
        int64_t want = 0;
        for (int64_t j = 0; j < cols; j++) want += transposed ? j * rows + i : i * cols + j;
        assert_int_equal(r1[i], want);
    }
    ax_array *all = ax_reduce(cx, AX_REDUCE_SUM, x, 2, AXES(0, 1));
    int64_t n = rows * cols;
    assert_int_equal(*(int64_t *)ax_array_data(all), n * (n - 1) / 2);
    ax_array *mx = ax_reduce(cx, AX_REDUCE_MAX, x, 1, AXES(0));
    assert_int_equal(((int64_t *)ax_array_data(mx))[cols - 1],
                     transposed ? (cols - 1) * rows + rows - 1 : (rows - 1) * cols + cols - 1);
    ax_array_release(mx);
    ax_array_release(all);
    ax_array_release(s1);
    ax_array_release(s0);
    ax_array_release(x);
    ax_array_release(base);
}

static void test_big_reductions(void **state) {
    ax_ctx *cx = *state;
    check_i64_sums(cx, 20000, 3, false);  /* lines into tiles; 3-wide rows */
    check_i64_sums(cx, 3, 20000, false);  /* rows into tiles */
    check_i64_sums(cx, 20000, 3, true);   /* the same through transposed views */
    check_i64_sums(cx, 100000, 4, false); /* threaded, private accumulators */
    check_i64_sums(cx, 600, 1000, false); /* threaded along a kept dimension */
    check_i64_sums(cx, 1000, 600, true);
    /* f32 rows of a big matrix: X.mean(0) shape */
    ax_array *x = make_range(cx, AX_F32, 2, SHAPE(100000, 10));
    ax_array *s = ax_reduce(cx, AX_REDUCE_SUM, x, 1, AXES(0));
    const float *sv = ax_array_data(s);
    for (int j = 0; j < 10; j++) /* sum over i of f32(10 i + j), exact in f64 */
        assert_true(sv[j] == (float)(10.0 * 4999950000.0 + 100000.0 * j));
    ax_array_release(s);
    ax_array_release(x);
}

static void test_argmax_argmin(void **state) {
    ax_ctx *cx = *state;
    ax_array *w = make_array(cx, AX_I32, 2, SHAPE(3, 4), VALS(2, 7, 7, 1, 9, 9, 0, 0, 5, 1, 8, 8));
    expect_values(ax_argmax(cx, w, 0, AX_I32), AX_I32, 1, SHAPE(4), VALS(1, 1, 2, 2), 0);
    expect_values(ax_argmax(cx, w, 1, AX_I64), AX_I64, 1, SHAPE(3), VALS(1, 0, 2), 0);
    expect_values(ax_argmin(cx, w, 0, AX_I32), AX_I32, 1, SHAPE(4), VALS(0, 2, 1, 1), 0);
    expect_values(ax_argmin(cx, w, -1, AX_I32), AX_I32, 1, SHAPE(3), VALS(3, 2, 1), 0);
    ax_array *wt = ax_transpose(cx, w, AXES(1, 0));
    expect_values(ax_argmax(cx, wt, 1, AX_I32), AX_I32, 1, SHAPE(4), VALS(1, 1, 2, 2), 0);
    ax_array *wr = ax_rev(cx, w, 1, AXES(0));
    expect_values(ax_argmin(cx, wr, 0, AX_I32), AX_I32, 1, SHAPE(4), VALS(2, 0, 1, 1), 0);
    ax_array *m = make_array(cx, AX_F64, 2, SHAPE(2, 3), VALS(1, NAN, 3, 4, 5, -6));
    expect_values(ax_argmax(cx, m, 1, AX_I32), AX_I32, 1, SHAPE(2), VALS(1, 1), 0);
    expect_values(ax_argmin(cx, m, 1, AX_I32), AX_I32, 1, SHAPE(2), VALS(1, 2), 0);
    expect_values(ax_argmax(cx, m, 0, AX_I32), AX_I32, 1, SHAPE(3), VALS(1, 0, 0), 0);
    ax_array *f = make_array(cx, AX_F32, 2, SHAPE(3, 2), VALS(1, NAN, NAN, 2, 0, NAN));
    expect_values(ax_argmax(cx, f, 0, AX_I32), AX_I32, 1, SHAPE(2), VALS(1, 0), 0);
    expect_values(ax_argmin(cx, f, 0, AX_I32), AX_I32, 1, SHAPE(2), VALS(1, 0), 0);
    ax_array *b = make_array(cx, AX_BOOL, 1, SHAPE(4), VALS(0, 0, 1, 1));
    expect_values(ax_argmax(cx, b, 0, AX_I32), AX_I32, 0, NULL, VALS(2), 0);
    ax_array *e = ax_array_new(cx, AX_F32, 2, SHAPE(0, 3));
    expect_values(ax_argmax(cx, e, 1, AX_I32), AX_I32, 1, SHAPE(0), NULL, 0);
    expect_error(cx, ax_argmax(cx, e, 0, AX_I32), AX_ERR_VALUE,
                 "attempt to get argmax of an empty sequence (axis 0 of f32[0,3])");
    expect_error(cx, ax_argmin(cx, w, 0, AX_F32), AX_ERR_TYPE,
                 "argmin: the index dtype must be i32 or i64, got f32");
    expect_error(cx, ax_argmin(cx, w, 2, AX_I32), AX_ERR_VALUE,
                 "argmin: axis 2 is out of bounds for i32[3,4]");
    ax_array_release(e);
    ax_array_release(b);
    ax_array_release(f);
    ax_array_release(m);
    ax_array_release(wr);
    ax_array_release(wt);
    ax_array_release(w);
}

static void test_cumulative(void **state) {
    ax_ctx *cx = *state;
    ax_array *z = make_array(cx, AX_F32, 1, SHAPE(6), VALS(1e8, 1, 1, 1, 2, 3));
    /* accumulated in f32 like np.cumsum: the small terms vanish */
    expect_values(ax_cumulative(cx, AX_CUMSUM, z, 0, false), AX_F32, 1, SHAPE(6),
                  VALS(1e8, 1e8, 1e8, 1e8, 1e8, 1e8), 0);
    ax_array *y = make_array(cx, AX_F32, 2, SHAPE(2, 3), VALS(1, 2, 3, 4, 5, 6));
    expect_values(ax_cumulative(cx, AX_CUMSUM, y, 0, false), AX_F32, 2, SHAPE(2, 3),
                  VALS(1, 2, 3, 5, 7, 9), 0);
    expect_values(ax_cumulative(cx, AX_CUMSUM, y, 1, false), AX_F32, 2, SHAPE(2, 3),
                  VALS(1, 3, 6, 4, 9, 15), 0);
    expect_values(ax_cumulative(cx, AX_CUMSUM, y, -1, true), AX_F32, 2, SHAPE(2, 3),
                  VALS(6, 5, 3, 15, 11, 6), 0);
    expect_values(ax_cumulative(cx, AX_CUMPROD, y, 0, true), AX_F32, 2, SHAPE(2, 3),
                  VALS(4, 10, 18, 4, 5, 6), 0);
    ax_array *yt = ax_transpose(cx, y, AXES(1, 0)); /* [[1, 4], [2, 5], [3, 6]] */
    expect_values(ax_cumulative(cx, AX_CUMSUM, yt, 0, false), AX_F32, 2, SHAPE(3, 2),
                  VALS(1, 4, 3, 9, 6, 15), 0);
    ax_array *q = make_array(cx, AX_F32, 1, SHAPE(5), VALS(3, 1, NAN, 5, 0));
    expect_values(ax_cumulative(cx, AX_CUMMAX, q, 0, false), AX_F32, 1, SHAPE(5),
                  VALS(3, 3, NAN, NAN, NAN), 0);
    expect_values(ax_cumulative(cx, AX_CUMMIN, q, 0, false), AX_F32, 1, SHAPE(5),
                  VALS(3, 1, NAN, NAN, NAN), 0);
    expect_values(ax_cumulative(cx, AX_CUMMAX, q, 0, true), AX_F32, 1, SHAPE(5),
                  VALS(NAN, NAN, NAN, 5, 0), 0);
    ax_array *iw = make_array(cx, AX_I32, 1, SHAPE(4), VALS(1073741824, 2, 2, -3));
    expect_values(ax_cumulative(cx, AX_CUMPROD, iw, 0, false), AX_I32, 1, SHAPE(4),
                  VALS(1073741824, -2147483648.0, 0, 0), 0);
    ax_array *is = make_array(cx, AX_I32, 1, SHAPE(3), VALS(2147483647, 1, 5));
    expect_values(ax_cumulative(cx, AX_CUMSUM, is, 0, false), AX_I32, 1, SHAPE(3),
                  VALS(2147483647, -2147483648.0, -2147483643.0), 0);
    ax_array *b = make_array(cx, AX_BOOL, 1, SHAPE(3), VALS(0, 1, 0));
    expect_values(ax_cumulative(cx, AX_CUMMAX, b, 0, false), AX_BOOL, 1, SHAPE(3), VALS(0, 1, 1),
                  0);
    expect_error(cx, ax_cumulative(cx, AX_CUMSUM, b, 0, false), AX_ERR_TYPE,
                 "cumsum requires a numeric argument, got bool[3]");
    expect_error(cx, ax_cumulative(cx, AX_CUMMIN, y, 2, false), AX_ERR_VALUE,
                 "cummin: axis 2 is out of bounds for f32[2,3]");
    ax_array *e = ax_array_new(cx, AX_I64, 2, SHAPE(3, 0));
    expect_values(ax_cumulative(cx, AX_CUMSUM, e, 0, true), AX_I64, 2, SHAPE(3, 0), NULL, 0);
    ax_array_release(e);
    ax_array_release(b);
    ax_array_release(is);
    ax_array_release(iw);
    ax_array_release(q);
    ax_array_release(yt);
    ax_array_release(y);
    ax_array_release(z);
}

/* Big scans split over threads: cumsum along axis 1 of 1000 x 500 i64 ones. */
static void test_big_cumulative(void **state) {
    ax_ctx *cx = *state;
    ax_array *x = ax_array_new(cx, AX_I64, 2, SHAPE(1000, 500));
    int64_t *d = ax_array_data(x);
    for (int64_t i = 0; i < x->size; i++) d[i] = 1;
    ax_array *c = ax_cumulative(cx, AX_CUMSUM, x, 1, true);
    const int64_t *cv = ax_array_data(c);
    for (int64_t i = 0; i < 1000; i++)
        for (int64_t j = 0; j < 500; j++) assert_int_equal(cv[i * 500 + j], 500 - j);
    ax_array_release(c);
    ax_array_release(x);
}

/* Every numeric dtype through every kernel: the 4 x 5 matrix of the digits of pi. u8 products
 * wrap. Also run on the transpose, which takes the other loop order. */
static void test_dtype_sweep(void **state) {
    ax_ctx *cx = *state;
    const ax_dtype dtypes[] = {AX_U8, AX_I32, AX_U32, AX_I64, AX_F32, AX_F64};
    for (size_t k = 0; k < sizeof dtypes / sizeof *dtypes; k++) {
        ax_dtype t = dtypes[k];
        ax_array *a = make_array(cx, t, 2, SHAPE(4, 5),
                                 VALS(3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 9, 3, 2, 3, 8, 4));
        ax_array *at = ax_transpose(cx, a, AXES(1, 0));
        expect_values(ax_reduce(cx, AX_REDUCE_SUM, a, 1, AXES(1)), t, 1, SHAPE(4),
                      VALS(14, 25, 38, 20), 0);
        expect_values(ax_reduce(cx, AX_REDUCE_SUM, at, 1, AXES(0)), t, 1, SHAPE(4),
                      VALS(14, 25, 38, 20), 0);
        expect_values(ax_reduce(cx, AX_REDUCE_PROD, a, 1, AXES(1)), t, 1, SHAPE(4),
                      t == AX_U8 ? VALS(60, 84, 152, 64) : VALS(60, 1620, 22680, 576), 0);
        expect_values(ax_reduce(cx, AX_REDUCE_MAX, a, 1, AXES(0)), t, 1, SHAPE(5),
                      VALS(9, 8, 9, 8, 9), 0);
        expect_values(ax_reduce(cx, AX_REDUCE_MIN, at, 1, AXES(1)), t, 1, SHAPE(5),
                      VALS(3, 1, 3, 1, 3), 0);
        expect_values(ax_argmax(cx, a, 1, AX_I32), AX_I32, 1, SHAPE(4), VALS(4, 0, 2, 3), 0);
        expect_values(ax_argmin(cx, a, 0, AX_I64), AX_I64, 1, SHAPE(5), VALS(0, 0, 3, 0, 1), 0);
        expect_values(ax_argmin(cx, at, 1, AX_I64), AX_I64, 1, SHAPE(5), VALS(0, 0, 3, 0, 1), 0);
        ax_array *c = ax_cumulative(cx, AX_CUMSUM, a, 0, false);
        ax_array *last = ax_slice(cx, c, SHAPE(3, 0), SHAPE(4, 5), NULL);
        expect_values(last, t, 2, SHAPE(1, 5), VALS(20, 13, 22, 21, 21), 0);
        ax_array_release(c);
        c = ax_cumulative(cx, AX_CUMPROD, a, 1, true);
        ax_array *first = ax_slice(cx, c, SHAPE(0, 0), SHAPE(4, 1), NULL);
        expect_values(first, t, 2, SHAPE(4, 1),
                      t == AX_U8 ? VALS(60, 84, 152, 64) : VALS(60, 1620, 22680, 576), 0);
        ax_array_release(c);
        c = ax_cumulative(cx, AX_CUMMIN, at, 1, false);
        expect_values(c, t, 2, SHAPE(5, 4),
                      VALS(3, 3, 3, 3, 1, 1, 1, 1, 4, 4, 4, 3, 1, 1, 1, 1, 5, 3, 3, 3), 0);
        ax_array_release(at);
        ax_array_release(a);
    }
}

/* Long contiguous float runs take the SIMD max/min; a NaN anywhere wins. */
static void test_long_float_extremes(void **state) {
    ax_ctx *cx = *state;
    const ax_dtype dtypes[] = {AX_F32, AX_F64};
    for (int k = 0; k < 2; k++) {
        ax_array *x = ax_array_new(cx, dtypes[k], 2, SHAPE(20000, 37));
        for (int64_t i = 0; i < x->size; i++) {
            double v = (double)((i * 7919) % 1000) - 500 + (double)(i / 37) * 1e-3;
            ax_convert_element(x->dtype,
                               (char *)ax_array_data(x) + i * (int64_t)ax_dtype_size(x->dtype),
                               AX_F64, &v);
        }
        ax_array *mx = ax_reduce(cx, AX_REDUCE_MAX, x, 1, AXES(1));
        ax_array *mn = ax_reduce(cx, AX_REDUCE_MIN, x, 1, AXES(1));
        for (int64_t r = 0; r < 20000; r += 997) {
            double want_max = -INFINITY, want_min = INFINITY;
            for (int64_t j = 0; j < 37; j++) {
                double v = ax_array_get_f64(x, r * 37 + j);
                want_max = v > want_max ? v : want_max;
                want_min = v < want_min ? v : want_min;
            }
            assert_true(ax_array_get_f64(mx, r) == want_max);
            assert_true(ax_array_get_f64(mn, r) == want_min);
        }
        ax_array_release(mn);
        ax_array_release(mx);
        double nan = NAN;
        ax_convert_element(x->dtype,
                           (char *)ax_array_data(x) + 777 * (int64_t)ax_dtype_size(x->dtype),
                           AX_F64, &nan);
        expect_values(ax_reduce(cx, AX_REDUCE_MAX, x, 2, AXES(0, 1)), x->dtype, 0, NULL, VALS(NAN),
                      0);
        mn = ax_reduce(cx, AX_REDUCE_MIN, x, 1, AXES(1));
        assert_true(isnan(ax_array_get_f64(mn, 21)));
        assert_false(isnan(ax_array_get_f64(mn, 20)));
        ax_array_release(mn);
        ax_array_release(x);
    }
}

/* Tiles that also walk another kept dimension: a transposed 3-d array reduced over its last
 * axis, and products with private accumulators per thread. */
static void test_tiles_over_kept_dims(void **state) {
    ax_ctx *cx = *state;
    ax_array *base = make_range(cx, AX_I64, 3, SHAPE(2, 20000, 3));
    ax_array *x = ax_transpose(cx, base, AXES(1, 0, 2)); /* (20000, 2, 3) */
    ax_array *s = ax_reduce(cx, AX_REDUCE_SUM, x, 1, AXES(2));
    check_shape(s, AX_I64, 2, SHAPE(20000, 2));
    for (int64_t i = 0; i < 20000; i += 123)
        for (int64_t k = 0; k < 2; k++) {
            int64_t first = (k * 20000 + i) * 3;
            assert_int_equal(ax_array_get_i64(s, i * 2 + k), 3 * first + 3);
        }
    ax_array_release(s);
    ax_array_release(x);
    ax_array_release(base);
    /* reversed rows: the tiles store their results backwards */
    base = make_range(cx, AX_I32, 2, SHAPE(30000, 3));
    x = ax_rev(cx, base, 1, AXES(0));
    s = ax_reduce(cx, AX_REDUCE_SUM, x, 1, AXES(1));
    for (int64_t i = 0; i < 30000; i += 7)
        assert_int_equal(ax_array_get_i64(s, i), 9 * (29999 - i) + 3);
    ax_array_release(s);
    s = ax_reduce(cx, AX_REDUCE_MAX, x, 1, AXES(0));
    expect_values(s, AX_I32, 1, SHAPE(3), VALS(89997, 89998, 89999), 0);
    ax_array_release(x);
    ax_array_release(base);
    ax_array *ones = ax_array_new(cx, AX_U32, 2, SHAPE(300000, 2));
    uint32_t *d = ax_array_data(ones);
    for (int64_t i = 0; i < ones->size; i++) d[i] = i == 123457 ? 3 : 1;
    expect_values(ax_reduce(cx, AX_REDUCE_PROD, ones, 1, AXES(0)), AX_U32, 1, SHAPE(2), VALS(1, 3),
                  0);
    expect_values(ax_reduce(cx, AX_REDUCE_MAX, ones, 1, AXES(0)), AX_U32, 1, SHAPE(2), VALS(1, 3),
                  0);
    ax_array_release(ones);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_sum_over_axes, setup_ctx, teardown_ctx),
        cmocka_unit_test_setup_teardown(test_prod_max_min, setup_ctx, teardown_ctx),
        cmocka_unit_test_setup_teardown(test_bool_reductions, setup_ctx, teardown_ctx),
        cmocka_unit_test_setup_teardown(test_views_as_inputs, setup_ctx, teardown_ctx),
        cmocka_unit_test_setup_teardown(test_empty_and_rank0, setup_ctx, teardown_ctx),
        cmocka_unit_test_setup_teardown(test_float_sum_accuracy, setup_ctx, teardown_ctx),
        cmocka_unit_test_setup_teardown(test_big_reductions, setup_ctx, teardown_ctx),
        cmocka_unit_test_setup_teardown(test_argmax_argmin, setup_ctx, teardown_ctx),
        cmocka_unit_test_setup_teardown(test_cumulative, setup_ctx, teardown_ctx),
        cmocka_unit_test_setup_teardown(test_big_cumulative, setup_ctx, teardown_ctx),
        cmocka_unit_test_setup_teardown(test_dtype_sweep, setup_ctx, teardown_ctx),
        cmocka_unit_test_setup_teardown(test_long_float_extremes, setup_ctx, teardown_ctx),
        cmocka_unit_test_setup_teardown(test_tiles_over_kept_dims, setup_ctx, teardown_ctx),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

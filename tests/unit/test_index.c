/* Gather and scatter: values against NumPy fancy indexing and ufunc.at, views as inputs,
 * every index dtype, errors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "../../runtime/index.h"
#include "../../runtime/shape_ops.h"
#include "kernel_test_util.h"

/* x = arange(12.).reshape(4, 3) */
static ax_array *x43(ax_ctx *cx) {
    return make_range(cx, AX_F32, 2, SHAPE(4, 3));
}

static void test_gather_rows(void **state) {
    ax_ctx *cx = *state;
    ax_array *x = x43(cx);
    const ax_dtype idx_types[] = {AX_I32, AX_I64, AX_U32, AX_U8};
    for (int k = 0; k < 4; k++) { /* x[[2, 0, 3]] */
        ax_array *idx = make_array(cx, idx_types[k], 2, SHAPE(3, 1), VALS(2, 0, 3));
        expect_values(ax_gather(cx, x, idx, 1, AXES(0)), AX_F32, 2, SHAPE(3, 3),
                      VALS(6, 7, 8, 0, 1, 2, 9, 10, 11), 0);
        ax_array_release(idx);
    }
    /* x[[[1, 3], [0, 0]]]: a 2-d batch of rows */
    ax_array *idx = make_array(cx, AX_I32, 3, SHAPE(2, 2, 1), VALS(1, 3, 0, 0));
    expect_values(ax_gather(cx, x, idx, 1, AXES(0)), AX_F32, 3, SHAPE(2, 2, 3),
                  VALS(3, 4, 5, 9, 10, 11, 0, 1, 2, 0, 1, 2), 0);
    ax_array_release(idx);
    ax_array_release(x);
}

static void test_gather_elements_and_columns(void **state) {
    ax_ctx *cx = *state;
    ax_array *x = x43(cx);
    /* x[[1, 3], [2, 0]] */
    ax_array *pairs = make_array(cx, AX_I64, 2, SHAPE(2, 2), VALS(1, 2, 3, 0));
    expect_values(ax_gather(cx, x, pairs, 2, AXES(0, 1)), AX_F32, 1, SHAPE(2), VALS(5, 9), 0);
    /* pairs given as (column, row): x[[1, 3], [2, 0]] again */
    ax_array *swapped = make_array(cx, AX_I64, 2, SHAPE(2, 2), VALS(2, 1, 0, 3));
    expect_values(ax_gather(cx, x, swapped, 2, AXES(1, 0)), AX_F32, 1, SHAPE(2), VALS(5, 9), 0);
    ax_array_release(swapped);
    /* columns: out[b, i] = x[i, idx[b]] */
    ax_array *cols = make_array(cx, AX_U8, 2, SHAPE(3, 1), VALS(2, 2, 0));
    expect_values(ax_gather(cx, x, cols, 1, AXES(1)), AX_F32, 2, SHAPE(3, 4),
                  VALS(2, 5, 8, 11, 2, 5, 8, 11, 0, 3, 6, 9), 0);
    /* no indexed axes: every batch position copies all of x */
    ax_array *none = ax_array_new(cx, AX_I32, 2, SHAPE(2, 0));
    ax_array *g = ax_gather(cx, x, none, 0, NULL);
    check_shape(g, AX_F32, 3, SHAPE(2, 4, 3));
    assert_true(ax_array_get_f64(g, 12 + 7) == 7);
    ax_array_release(g);
    /* an empty batch */
    ax_array *empty = ax_array_new(cx, AX_I32, 2, SHAPE(0, 1));
    expect_values(ax_gather(cx, x, empty, 1, AXES(0)), AX_F32, 2, SHAPE(0, 3), NULL, 0);
    ax_array_release(empty);
    ax_array_release(none);
    ax_array_release(cols);
    ax_array_release(pairs);
    ax_array_release(x);
}

static void test_gather_views_and_dtypes(void **state) {
    ax_ctx *cx = *state;
    ax_array *x = x43(cx);
    ax_array *xt = ax_transpose(cx, x, AXES(1, 0)); /* (3, 4) */
    ax_array *idx = make_array(cx, AX_I32, 2, SHAPE(2, 1), VALS(2, 0));
    expect_values(ax_gather(cx, xt, idx, 1, AXES(0)), AX_F32, 2, SHAPE(2, 4),
                  VALS(2, 5, 8, 11, 0, 3, 6, 9), 0);
    ax_array *xr = ax_rev(cx, x, 1, AXES(0));
    ax_array *idx2 = make_array(cx, AX_I32, 2, SHAPE(2, 1), VALS(0, 3));
    expect_values(ax_gather(cx, xr, idx2, 1, AXES(0)), AX_F32, 2, SHAPE(2, 3),
                  VALS(9, 10, 11, 0, 1, 2), 0);
    /* the index array itself a view: [[1], [1], [1]] broadcast with stride 0 */
    ax_array *one = make_array(cx, AX_I64, 1, SHAPE(1), VALS(1));
    ax_array *ib = ax_broadcast_in_dim(cx, one, 2, SHAPE(3, 1), AXES(1));
    expect_values(ax_gather(cx, x, ib, 1, AXES(0)), AX_F32, 2, SHAPE(3, 3),
                  VALS(3, 4, 5, 3, 4, 5, 3, 4, 5), 0);
    const ax_dtype types[] = {AX_BOOL, AX_U8, AX_I32, AX_U32, AX_I64, AX_F64};
    for (int k = 0; k < 6; k++) {
        ax_array *v = make_array(cx, types[k], 1, SHAPE(4), VALS(0, 1, 1, 0));
        ax_array *ii = make_array(cx, AX_I32, 2, SHAPE(3, 1), VALS(2, 3, 1));
        expect_values(ax_gather(cx, v, ii, 1, AXES(0)), types[k], 1, SHAPE(3), VALS(1, 0, 1), 0);
        ax_array_release(ii);
        ax_array_release(v);
    }
    ax_array_release(ib);
    ax_array_release(one);
    ax_array_release(idx2);
    ax_array_release(xr);
    ax_array_release(idx);
    ax_array_release(xt);
    ax_array_release(x);
}

static void test_gather_errors(void **state) {
    ax_ctx *cx = *state;
    ax_array *x = x43(cx);
    ax_array *big = make_array(cx, AX_I32, 2, SHAPE(2, 1), VALS(1, 4));
    expect_error(cx, ax_gather(cx, x, big, 1, AXES(0)), AX_ERR_INDEX,
                 "index 4 is out of bounds for axis 0 with size 4");
    ax_array *neg = make_array(cx, AX_I64, 2, SHAPE(1, 2), VALS(0, -1));
    expect_error(cx, ax_gather(cx, x, neg, 2, AXES(0, 1)), AX_ERR_INDEX,
                 "index -1 is out of bounds for axis 1 with size 3");
    ax_array *f = make_array(cx, AX_F32, 2, SHAPE(1, 1), VALS(0));
    expect_error(cx, ax_gather(cx, x, f, 1, AXES(0)), AX_ERR_TYPE,
                 "gather indices must be integers, got f32[1,1]");
    ax_array *b = make_array(cx, AX_BOOL, 2, SHAPE(1, 1), VALS(0));
    expect_error(cx, ax_gather(cx, x, b, 1, AXES(0)), AX_ERR_TYPE,
                 "gather indices must be integers, got bool[1,1]");
    expect_error(cx, ax_gather(cx, x, big, 2, AXES(0, 1)), AX_ERR_SHAPE,
                 "gather indices must have a last dimension of size 2 (one index per indexed "
                 "axis of f32[4,3]), got i32[2,1]");
    expect_error(cx, ax_gather(cx, x, neg, 2, AXES(1, 1)), AX_ERR_VALUE,
                 "gather: axis 1 is repeated in the indexed axes");
    expect_error(cx, ax_gather(cx, x, big, 1, AXES(2)), AX_ERR_VALUE,
                 "gather: axis 2 is out of bounds for f32[4,3]");
    ax_array *s = ax_array_scalar(cx, AX_I32, 0);
    expect_error(cx, ax_gather(cx, x, s, 0, NULL), AX_ERR_SHAPE,
                 "gather indices must have a last dimension of size 0 (one index per indexed "
                 "axis of f32[4,3]), got i32[]");
    ax_array_release(s);
    ax_array_release(b);
    ax_array_release(f);
    ax_array_release(neg);
    ax_array_release(big);
    ax_array_release(x);
}

static void test_scatter_modes(void **state) {
    ax_ctx *cx = *state;
    ax_array *idx = make_array(cx, AX_I32, 2, SHAPE(3, 1), VALS(1, 3, 1));
    ax_array *u = make_array(cx, AX_F32, 1, SHAPE(3), VALS(10, 20, 30));
    ax_array *z = ax_array_zeros(cx, AX_F32, 1, SHAPE(5));
    expect_values(ax_scatter(cx, z, idx, u, 1, AXES(0), AX_SCATTER_SET), AX_F32, 1, SHAPE(5),
                  VALS(0, 30, 0, 20, 0), 0); /* duplicates: the last wins */
    expect_values(ax_scatter(cx, z, idx, u, 1, AXES(0), AX_SCATTER_ADD), AX_F32, 1, SHAPE(5),
                  VALS(0, 40, 0, 20, 0), 0);
    assert_true(ax_array_get_f64(z, 1) == 0); /* x is unchanged */
    ax_array *two = make_array(cx, AX_F32, 1, SHAPE(5), VALS(2, 2, 2, 2, 2));
    expect_values(ax_scatter(cx, two, idx, u, 1, AXES(0), AX_SCATTER_MUL), AX_F32, 1, SHAPE(5),
                  VALS(2, 600, 2, 40, 2), 0);
    ax_array *f15 = make_array(cx, AX_F32, 1, SHAPE(5), VALS(15, 15, 15, 15, 15));
    expect_values(ax_scatter(cx, f15, idx, u, 1, AXES(0), AX_SCATTER_MAX), AX_F32, 1, SHAPE(5),
                  VALS(15, 30, 15, 20, 15), 0);
    ax_array *un = make_array(cx, AX_F32, 1, SHAPE(3), VALS(10, 20, NAN));
    expect_values(ax_scatter(cx, f15, idx, un, 1, AXES(0), AX_SCATTER_MIN), AX_F32, 1, SHAPE(5),
                  VALS(15, NAN, 15, 15, 15), 0);
    ax_array_release(un);
    ax_array_release(f15);
    ax_array_release(two);
    ax_array_release(z);
    ax_array_release(u);
    ax_array_release(idx);
}

static void test_scatter_rows_views_dtypes(void **state) {
    ax_ctx *cx = *state;
    /* np.add.at(arange(12).reshape(4, 3), [3, 0, 3], [[1, 1, 1], [2, 2, 2], [10, 20, 30]]) */
    ax_array *r = make_range(cx, AX_I64, 2, SHAPE(4, 3));
    ax_array *idx = make_array(cx, AX_U8, 2, SHAPE(3, 1), VALS(3, 0, 3));
    ax_array *u = make_array(cx, AX_I64, 2, SHAPE(3, 3), VALS(1, 1, 1, 2, 2, 2, 10, 20, 30));
    expect_values(ax_scatter(cx, r, idx, u, 1, AXES(0), AX_SCATTER_ADD), AX_I64, 2, SHAPE(4, 3),
                  VALS(2, 3, 4, 3, 4, 5, 6, 7, 8, 20, 31, 42), 0);
    /* x as a transposed view, updates broadcast with stride 0: set column 1 of x.T to 7 */
    ax_array *base = make_range(cx, AX_I64, 2, SHAPE(3, 4));
    ax_array *xt = ax_transpose(cx, base, AXES(1, 0)); /* (4, 3) */
    ax_array *seven = ax_array_scalar_i64(cx, AX_I64, 7);
    ax_array *col = ax_broadcast_in_dim(cx, seven, 2, SHAPE(1, 4), NULL);
    ax_array *one = make_array(cx, AX_I32, 2, SHAPE(1, 1), VALS(1));
    expect_values(ax_scatter(cx, xt, one, col, 1, AXES(1), AX_SCATTER_SET), AX_I64, 2, SHAPE(4, 3),
                  VALS(0, 7, 8, 1, 7, 9, 2, 7, 10, 3, 7, 11), 0);
    /* integers wrap; bools: add is or, mul is and */
    ax_array *imax = make_array(cx, AX_I32, 1, SHAPE(2), VALS(2147483647, 0));
    ax_array *i0 = make_array(cx, AX_I32, 2, SHAPE(1, 1), VALS(0));
    ax_array *i1 = make_array(cx, AX_I32, 1, SHAPE(1), VALS(1));
    expect_values(ax_scatter(cx, imax, i0, i1, 1, AXES(0), AX_SCATTER_ADD), AX_I32, 1, SHAPE(2),
                  VALS(-2147483648.0, 0), 0);
    ax_array *bx = make_array(cx, AX_BOOL, 1, SHAPE(3), VALS(0, 1, 1));
    ax_array *bi = make_array(cx, AX_I64, 2, SHAPE(2, 1), VALS(0, 2));
    ax_array *bu = make_array(cx, AX_BOOL, 1, SHAPE(2), VALS(1, 0));
    expect_values(ax_scatter(cx, bx, bi, bu, 1, AXES(0), AX_SCATTER_ADD), AX_BOOL, 1, SHAPE(3),
                  VALS(1, 1, 1), 0);
    expect_values(ax_scatter(cx, bx, bi, bu, 1, AXES(0), AX_SCATTER_MUL), AX_BOOL, 1, SHAPE(3),
                  VALS(0, 1, 0), 0);
    ax_array_release(bu);
    ax_array_release(bi);
    ax_array_release(bx);
    ax_array_release(i1);
    ax_array_release(i0);
    ax_array_release(imax);
    ax_array_release(one);
    ax_array_release(col);
    ax_array_release(seven);
    ax_array_release(xt);
    ax_array_release(base);
    ax_array_release(u);
    ax_array_release(idx);
    ax_array_release(r);
}

static void test_scatter_errors(void **state) {
    ax_ctx *cx = *state;
    ax_array *x = x43(cx);
    ax_array *idx = make_array(cx, AX_I32, 2, SHAPE(2, 1), VALS(0, 9));
    ax_array *u = ax_array_zeros(cx, AX_F32, 2, SHAPE(2, 3));
    expect_error(cx, ax_scatter(cx, x, idx, u, 1, AXES(0), AX_SCATTER_ADD), AX_ERR_INDEX,
                 "index 9 is out of bounds for axis 0 with size 4");
    ax_array *u2 = ax_array_zeros(cx, AX_F32, 2, SHAPE(2, 2));
    expect_error(cx, ax_scatter(cx, x, idx, u2, 1, AXES(0), AX_SCATTER_SET), AX_ERR_SHAPE,
                 "scatter into f32[4,3]: updates f32[2,2] do not match the shape (2, 3) of the "
                 "indexed elements");
    ax_array *ui = ax_array_zeros(cx, AX_I32, 2, SHAPE(2, 3));
    expect_error(cx, ax_scatter(cx, x, idx, ui, 1, AXES(0), AX_SCATTER_SET), AX_ERR_TYPE,
                 "scatter requires updates of the array's dtype, got f32[4,3] and i32[2,3]");
    expect_error(cx, ax_scatter(cx, x, idx, u, 1, AXES(0), (ax_scatter_mode)9), AX_ERR_VALUE,
                 "scatter: unknown mode 9");
    ax_array_release(ui);
    ax_array_release(u2);
    ax_array_release(u);
    ax_array_release(idx);
    ax_array_release(x);
}

/* Big gathers run on the pool: rows of a table, and single elements by (row, column). */
static void test_big_gather(void **state) {
    ax_ctx *cx = *state;
    ax_array *table = make_range(cx, AX_F32, 2, SHAPE(5000, 64));
    ax_array *idx = ax_array_new(cx, AX_I64, 2, SHAPE(100000, 1));
    int64_t *ip = ax_array_data(idx);
    for (int64_t i = 0; i < 100000; i++) ip[i] = i * 7919 % 5000;
    ax_array *g = ax_gather(cx, table, idx, 1, AXES(0));
    check_shape(g, AX_F32, 2, SHAPE(100000, 64));
    const float *gv = ax_array_data(g);
    for (int64_t i = 0; i < 100000; i += 13)
        for (int64_t j = 0; j < 64; j += 9) assert_true(gv[i * 64 + j] == ip[i] * 64 + j);
    ax_array_release(g);
    ax_array *pairs = ax_array_new(cx, AX_U32, 2, SHAPE(300000, 2));
    uint32_t *pp = ax_array_data(pairs);
    for (int64_t i = 0; i < 300000; i++) {
        pp[2 * i] = (uint32_t)(i % 5000);
        pp[2 * i + 1] = (uint32_t)(i % 64);
    }
    g = ax_gather(cx, table, pairs, 2, AXES(0, 1));
    check_shape(g, AX_F32, 1, SHAPE(300000));
    gv = ax_array_data(g);
    for (int64_t i = 0; i < 300000; i += 11) assert_true(gv[i] == (i % 5000) * 64 + i % 64);
    ax_array_release(g);
    ax_array_release(pairs);
    ax_array_release(idx);
    ax_array_release(table);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_gather_rows, setup_ctx, teardown_ctx),
        cmocka_unit_test_setup_teardown(test_gather_elements_and_columns, setup_ctx, teardown_ctx),
        cmocka_unit_test_setup_teardown(test_gather_views_and_dtypes, setup_ctx, teardown_ctx),
        cmocka_unit_test_setup_teardown(test_gather_errors, setup_ctx, teardown_ctx),
        cmocka_unit_test_setup_teardown(test_scatter_modes, setup_ctx, teardown_ctx),
        cmocka_unit_test_setup_teardown(test_scatter_rows_views_dtypes, setup_ctx, teardown_ctx),
        cmocka_unit_test_setup_teardown(test_scatter_errors, setup_ctx, teardown_ctx),
        cmocka_unit_test_setup_teardown(test_big_gather, setup_ctx, teardown_ctx),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

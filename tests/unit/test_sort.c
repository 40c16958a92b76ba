/* sort / argsort: values against NumPy's stable sort (ascending) and JAX's descending order
 * (the reverse, ties kept in their original order, NaN first), views, big arrays. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "../../runtime/shape_ops.h"
#include "../../runtime/sort.h"
#include "kernel_test_util.h"

static void test_sort_floats_with_nan(void **state) {
    ax_ctx *cx = *state;
    ax_array *x = make_array(cx, AX_F32, 1, SHAPE(8), VALS(3, 1, NAN, 2, 1, NAN, -0.0, 0.0));
    ax_array *s = ax_sort(cx, x, 0, false);
    const float *sv = ax_array_data(s);
    assert_true(signbit(sv[0]) && !signbit(sv[1])); /* -0.0 and 0.0 are equal: kept in order */
    expect_values(s, AX_F32, 1, SHAPE(8), VALS(0, 0, 1, 1, 2, 3, NAN, NAN), 0);
    expect_values(ax_argsort(cx, x, -1, false, AX_I32), AX_I32, 1, SHAPE(8),
                  VALS(6, 7, 1, 4, 3, 0, 2, 5), 0);
    expect_values(ax_argsort(cx, x, 0, true, AX_I64), AX_I64, 1, SHAPE(8),
                  VALS(2, 5, 0, 3, 1, 4, 6, 7), 0);
    expect_values(ax_sort(cx, x, 0, true), AX_F32, 1, SHAPE(8), VALS(NAN, NAN, 3, 2, 1, 1, 0, 0),
                  0);
    ax_array_release(x);
}

static void test_sort_matrix_axes_and_views(void **state) {
    ax_ctx *cx = *state;
    ax_array *m = make_array(cx, AX_I32, 2, SHAPE(3, 4), VALS(5, 2, 9, 2, 1, 7, 1, 3, 4, 4, 0, 8));
    expect_values(ax_sort(cx, m, 1, false), AX_I32, 2, SHAPE(3, 4),
                  VALS(2, 2, 5, 9, 1, 1, 3, 7, 0, 4, 4, 8), 0);
    expect_values(ax_argsort(cx, m, 0, false, AX_I32), AX_I32, 2, SHAPE(3, 4),
                  VALS(1, 0, 2, 0, 2, 2, 1, 1, 0, 1, 0, 2), 0);
    expect_values(ax_argsort(cx, m, 1, true, AX_I32), AX_I32, 2, SHAPE(3, 4),
                  VALS(2, 0, 1, 3, 1, 3, 0, 2, 3, 0, 1, 2), 0);
    expect_values(ax_argsort(cx, m, 0, true, AX_I32), AX_I32, 2, SHAPE(3, 4),
                  VALS(0, 1, 0, 2, 2, 2, 1, 1, 1, 0, 2, 0), 0);
    ax_array *mt = ax_transpose(cx, m, AXES(1, 0));
    expect_values(ax_sort(cx, mt, 1, false), AX_I32, 2, SHAPE(4, 3),
                  VALS(1, 4, 5, 2, 4, 7, 0, 1, 9, 2, 3, 8), 0);
    ax_array *mr = ax_rev(cx, m, 1, AXES(1)); /* rows reversed: [2, 9, 2, 5], ... */
    expect_values(ax_argsort(cx, mr, 1, false, AX_I32), AX_I32, 2, SHAPE(3, 4),
                  VALS(0, 2, 3, 1, 1, 3, 0, 2, 1, 2, 3, 0), 0);
    ax_array *b = make_array(cx, AX_BOOL, 1, SHAPE(4), VALS(1, 0, 1, 0));
    expect_values(ax_argsort(cx, b, 0, false, AX_I32), AX_I32, 1, SHAPE(4), VALS(1, 3, 0, 2), 0);
    expect_values(ax_sort(cx, b, 0, false), AX_BOOL, 1, SHAPE(4), VALS(0, 0, 1, 1), 0);
    ax_array_release(b);
    ax_array_release(mr);
    ax_array_release(mt);
    ax_array_release(m);
}

static void test_sort_edges_and_errors(void **state) {
    ax_ctx *cx = *state;
    ax_array *e = ax_array_new(cx, AX_F64, 2, SHAPE(3, 0));
    expect_values(ax_sort(cx, e, 1, false), AX_F64, 2, SHAPE(3, 0), NULL, 0);
    expect_values(ax_argsort(cx, e, 0, false, AX_I32), AX_I32, 2, SHAPE(3, 0), NULL, 0);
    ax_array *one = make_array(cx, AX_U32, 2, SHAPE(2, 1), VALS(7, 3));
    expect_values(ax_sort(cx, one, 1, true), AX_U32, 2, SHAPE(2, 1), VALS(7, 3), 0);
    ax_array *s = ax_array_scalar(cx, AX_F32, 1);
    expect_error(cx, ax_sort(cx, s, 0, false), AX_ERR_VALUE, "cannot sort a rank-0 array (f32[])");
    expect_error(cx, ax_argsort(cx, one, 2, false, AX_I32), AX_ERR_VALUE,
                 "argsort: axis 2 is out of bounds for u32[2,1]");
    expect_error(cx, ax_argsort(cx, one, 0, false, AX_U8), AX_ERR_TYPE,
                 "argsort: the index dtype must be i32 or i64, got u8");
    ax_array_release(s);
    ax_array_release(one);
    ax_array_release(e);
}

/* Checks that idx sorts x along axis 1 stably (ascending) or in JAX's descending order. */
static void check_sorted_rows(const ax_array *x, const ax_array *idx, const ax_array *vals,
                              bool descending) {
    int64_t rows = x->shape[0], n = x->shape[1];
    for (int64_t r = 0; r < rows; r++) {
        bool *seen = calloc((size_t)n, 1);
        for (int64_t j = 0; j < n; j++) {
            int64_t i = ax_array_get_i64(idx, r * n + j);
            assert_true(i >= 0 && i < n && !seen[i]);
            seen[i] = true;
            double v = ax_array_get_f64(x, r * n + i);
            assert_true(ax_array_get_f64(vals, r * n + j) == v);
            if (j == 0) continue;
            int64_t ip = ax_array_get_i64(idx, r * n + j - 1);
            double vp = ax_array_get_f64(x, r * n + ip);
            if (descending)
                assert_true(vp > v || (vp == v && ip < i));
            else
                assert_true(vp < v || (vp == v && ip < i));
        }
        free(seen);
    }
}

/* 300 rows of 200 values with many ties: the threaded path, merges longer than the runs. */
static void test_big_sort(void **state) {
    ax_ctx *cx = *state;
    const ax_dtype types[] = {AX_I64, AX_F32, AX_U8};
    for (int k = 0; k < 3; k++) {
        ax_array *x = ax_array_new(cx, types[k], 2, SHAPE(300, 200));
        for (int64_t i = 0; i < x->size; i++) {
            int64_t v = (i * 7919 + i / 200) % 37;
            ax_convert_element(x->dtype,
                               (char *)ax_array_data(x) + i * (int64_t)ax_dtype_size(x->dtype),
                               AX_I64, &v);
        }
        for (int desc = 0; desc < 2; desc++) {
            ax_array *idx = ax_argsort(cx, x, 1, desc, AX_I32);
            ax_array *vals = ax_sort(cx, x, 1, desc);
            check_sorted_rows(x, idx, vals, desc);
            ax_array_release(vals);
            ax_array_release(idx);
        }
        ax_array_release(x);
    }
}

/* A Ctrl-C pending stops a sort between lines and between merge passes: KeyboardInterrupt,
 * reported once (one long line, many lines on the pool, argsort). */
static void test_sort_stops_at_ctrl_c(void **state) {
    ax_ctx *cx = *state;
    ax_array *line = ax_array_new(cx, AX_F32, 1, SHAPE(100000));
    ax_array *lines = ax_array_new(cx, AX_I32, 2, SHAPE(1000, 100));
    for (int64_t i = 0; i < line->size; i++) ((float *)ax_array_data(line))[i] = (float)(i % 977);
    for (int64_t i = 0; i < lines->size; i++) ((int32_t *)ax_array_data(lines))[i] = (int32_t)-i;
    for (int k = 0; k < 3; k++) {
        cx->interrupt = 1;
        ax_array *r = k == 0   ? ax_sort(cx, line, 0, false)
                      : k == 1 ? ax_sort(cx, lines, 1, true)
                               : ax_argsort(cx, line, 0, false, AX_I32);
        expect_error(cx, r, AX_ERR_INTERRUPT, "interrupted");
        assert_int_equal(cx->interrupt, 0);
    }
    ax_array_release(line);
    ax_array_release(lines);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_sort_floats_with_nan, setup_ctx, teardown_ctx),
        cmocka_unit_test_setup_teardown(test_sort_matrix_axes_and_views, setup_ctx, teardown_ctx),
        cmocka_unit_test_setup_teardown(test_sort_edges_and_errors, setup_ctx, teardown_ctx),
        cmocka_unit_test_setup_teardown(test_big_sort, setup_ctx, teardown_ctx),
        cmocka_unit_test_setup_teardown(test_sort_stops_at_ctrl_c, setup_ctx, teardown_ctx),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

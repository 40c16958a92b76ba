/* Shape operations: values against NumPy, views where promised, errors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "../../runtime/shape_ops.h"
#include "kernel_test_util.h"

/* x = arange(24.).reshape(2, 3, 4) */
static ax_array *x234(ax_ctx *cx) {
    return make_range(cx, AX_F32, 3, SHAPE(2, 3, 4));
}

static void test_reshape_contiguous_is_view(void **state) {
    ax_ctx *cx = *state;
    ax_array *x = x234(cx);
    ax_array *r = ax_reshape(cx, x, 2, SHAPE(4, 6));
    assert_ptr_equal(r->buf, x->buf);
    double want[24];
    for (int i = 0; i < 24; i++) want[i] = i;
    expect_values(r, AX_F32, 2, SHAPE(4, 6), want, 0);
    r = ax_reshape(cx, x, 2, SHAPE(-1, 8)); /* NumPy's unknown dimension */
    expect_values(r, AX_F32, 2, SHAPE(3, 8), want, 0);
    r = ax_reshape(cx, x, 0, NULL);
    expect_error(cx, r, AX_ERR_SHAPE, "cannot reshape f32[2,3,4] into shape ()");
    ax_array_release(x);
}

static void test_reshape_views_and_copies(void **state) {
    ax_ctx *cx = *state;
    ax_array *x = x234(cx);
    ax_array *t = ax_transpose(cx, x, AXES(2, 0, 1));
    /* np.transpose(x, (2, 0, 1)).reshape(4, 6) is still a view (strides (4, 16) bytes) */
    ax_array *r = ax_reshape(cx, t, 2, SHAPE(4, 6));
    assert_ptr_equal(r->buf, x->buf);
    assert_int_equal(r->strides[0], 1);
    assert_int_equal(r->strides[1], 4);
    const double *tv =
        VALS(0, 4, 8, 12, 16, 20, 1, 5, 9, 13, 17, 21, 2, 6, 10, 14, 18, 22, 3, 7, 11, 15, 19, 23);
    expect_values(r, AX_F32, 2, SHAPE(4, 6), tv, 0);
    r = ax_reshape(cx, t, 1, SHAPE(24)); /* needs a copy */
    assert_ptr_not_equal(r->buf, x->buf);
    assert_true(ax_array_is_contiguous(r));
    expect_values(r, AX_F32, 1, SHAPE(24), tv, 0);
    /* x[:, :, :3].reshape(6, 3): rows of 3 inside rows of 4, a view */
    ax_array *s = ax_slice(cx, x, SHAPE(0, 0, 0), SHAPE(2, 3, 3), SHAPE(1, 1, 1));
    r = ax_reshape(cx, s, 2, SHAPE(6, 3));
    assert_ptr_equal(r->buf, x->buf);
    expect_values(r, AX_F32, 2, SHAPE(6, 3),
                  VALS(0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, 16, 17, 18, 20, 21, 22), 0);
    r = ax_reshape(cx, s, 1, SHAPE(18));
    assert_ptr_not_equal(r->buf, x->buf);
    expect_values(r, AX_F32, 1, SHAPE(18),
                  VALS(0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, 16, 17, 18, 20, 21, 22), 0);
    ax_array_release(s);
    ax_array_release(t);
    ax_array_release(x);
}

static void test_reshape_errors_and_edges(void **state) {
    ax_ctx *cx = *state;
    ax_array *x = make_range(cx, AX_F32, 1, SHAPE(6));
    expect_error(cx, ax_reshape(cx, x, 2, SHAPE(4, 2)), AX_ERR_SHAPE,
                 "cannot reshape f32[6] into shape (4, 2)");
    expect_error(cx, ax_reshape(cx, x, 2, SHAPE(-1, -1)), AX_ERR_VALUE,
                 "can only specify one unknown dimension in shape (-1, -1)");
    expect_error(cx, ax_reshape(cx, x, 2, SHAPE(-1, 4)), AX_ERR_SHAPE,
                 "cannot reshape f32[6] into shape (-1, 4)");
    expect_error(cx, ax_reshape(cx, x, 2, SHAPE(-2, -3)), AX_ERR_VALUE,
                 "reshape: negative dimension -2 in shape (-2, -3)");
    expect_error(cx, ax_reshape(cx, x, 3, SHAPE(1LL << 62, 1LL << 62, 0)), AX_ERR_VALUE,
                 "shape (4611686018427387904, 4611686018427387904, 0) is too big: its float32 "
                 "elements would take more than 2**63 bytes");
    expect_error(cx, ax_reshape(cx, x, 3, SHAPE(-1, 1LL << 62, 1LL << 62)), AX_ERR_VALUE,
                 "shape (1, 4611686018427387904, 4611686018427387904) is too big: its float32 "
                 "elements would take more than 2**63 bytes");
    /* rank 0 <-> rank 1, empty arrays */
    ax_array *one = make_range(cx, AX_I32, 1, SHAPE(1));
    expect_values(ax_reshape(cx, one, 0, NULL), AX_I32, 0, NULL, VALS(0), 0);
    ax_array *e = ax_array_new(cx, AX_F64, 2, SHAPE(0, 3));
    expect_values(ax_reshape(cx, e, 3, SHAPE(3, 0, 5)), AX_F64, 3, SHAPE(3, 0, 5), NULL, 0);
    expect_error(cx, ax_reshape(cx, e, 2, SHAPE(0, -1)), AX_ERR_SHAPE,
                 "cannot reshape f64[0,3] into shape (0, -1)");
    ax_array_release(e);
    ax_array_release(one);
    ax_array_release(x);
}

static void test_transpose(void **state) {
    ax_ctx *cx = *state;
    ax_array *x = make_range(cx, AX_I64, 2, SHAPE(2, 3));
    ax_array *t = ax_transpose(cx, x, AXES(1, 0));
    assert_ptr_equal(t->buf, x->buf);
    expect_values(t, AX_I64, 2, SHAPE(3, 2), VALS(0, 3, 1, 4, 2, 5), 0);
    expect_error(cx, ax_transpose(cx, x, AXES(0, 0)), AX_ERR_VALUE,
                 "transpose: (0, 0) is not a permutation of the axes of i64[2,3]");
    expect_error(cx, ax_transpose(cx, x, AXES(0, 2)), AX_ERR_VALUE,
                 "transpose: (0, 2) is not a permutation of the axes of i64[2,3]");
    ax_array *s = ax_array_scalar(cx, AX_F32, 2.5);
    expect_values(ax_transpose(cx, s, NULL), AX_F32, 0, NULL, VALS(2.5), 0);
    ax_array_release(s);
    ax_array_release(x);
}

static void test_broadcast_in_dim(void **state) {
    ax_ctx *cx = *state;
    ax_array *v = make_array(cx, AX_F32, 1, SHAPE(3), VALS(1, 2, 3));
    ax_array *b = ax_broadcast_in_dim(cx, v, 2, SHAPE(2, 3), AXES(1));
    assert_ptr_equal(b->buf, v->buf);
    assert_int_equal(b->strides[0], 0);
    expect_values(b, AX_F32, 2, SHAPE(2, 3), VALS(1, 2, 3, 1, 2, 3), 0);
    ax_array *col = make_array(cx, AX_F32, 2, SHAPE(3, 1), VALS(1, 2, 3));
    expect_values(ax_broadcast_in_dim(cx, col, 3, SHAPE(2, 3, 2), AXES(1, 2)), AX_F32, 3,
                  SHAPE(2, 3, 2), VALS(1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3), 0);
    ax_array *s = ax_array_scalar(cx, AX_I32, 7);
    expect_values(ax_broadcast_in_dim(cx, s, 2, SHAPE(2, 2), NULL), AX_I32, 2, SHAPE(2, 2),
                  VALS(7, 7, 7, 7), 0);
    expect_error(cx, ax_broadcast_in_dim(cx, v, 2, SHAPE(2, 4), AXES(1)), AX_ERR_SHAPE,
                 "cannot broadcast f32[3] to shape (2, 4): dimension 0 (size 3) does not match "
                 "output dimension 1 (size 4)");
    expect_error(cx, ax_broadcast_in_dim(cx, col, 3, SHAPE(3, 1, 2), AXES(2, 0)), AX_ERR_VALUE,
                 "broadcast_in_dim: broadcast_dimensions (2, 0) must give, for each dimension of "
                 "f32[3,1], an increasing position in the output shape (3, 1, 2)");
    expect_error(cx, ax_broadcast_in_dim(cx, col, 1, SHAPE(3), AXES(0)), AX_ERR_SHAPE,
                 "cannot broadcast f32[3,1] to the lower rank shape (3,)");
    ax_array_release(s);
    ax_array_release(col);
    ax_array_release(v);
}

static void test_concatenate(void **state) {
    ax_ctx *cx = *state;
    ax_array *a = make_range(cx, AX_F32, 2, SHAPE(2, 3));
    ax_array *b0 = make_array(cx, AX_F32, 2, SHAPE(3, 2), VALS(6, 7, 8, 9, 10, 11));
    ax_array *b = ax_transpose(cx, b0, AXES(1, 0)); /* [[6, 8, 10], [7, 9, 11]] */
    expect_values(ax_concatenate(cx, 2, (ax_array *[]){a, b}, 0), AX_F32, 2, SHAPE(4, 3),
                  VALS(0, 1, 2, 3, 4, 5, 6, 8, 10, 7, 9, 11), 0);
    ax_array *br = ax_rev(cx, b, 1, AXES(1));
    expect_values(ax_concatenate(cx, 2, (ax_array *[]){a, br}, -1), AX_F32, 2, SHAPE(2, 6),
                  VALS(0, 1, 2, 10, 8, 6, 3, 4, 5, 11, 9, 7), 0);
    ax_array *e = ax_array_new(cx, AX_F32, 2, SHAPE(0, 3));
    expect_values(ax_concatenate(cx, 3, (ax_array *[]){e, a, e}, 0), AX_F32, 2, SHAPE(2, 3),
                  VALS(0, 1, 2, 3, 4, 5), 0);
    ax_array *i = make_range(cx, AX_I32, 2, SHAPE(2, 3));
    expect_error(cx, ax_concatenate(cx, 2, (ax_array *[]){a, i}, 0), AX_ERR_TYPE,
                 "concatenate requires arguments of one dtype, got f32[2,3] and i32[2,3]");
    expect_error(cx, ax_concatenate(cx, 2, (ax_array *[]){a, b0}, 0), AX_ERR_SHAPE,
                 "cannot concatenate f32[2,3] and f32[3,2] along axis 0 (shapes differ outside "
                 "that axis)");
    expect_error(cx, ax_concatenate(cx, 1, (ax_array *[]){a}, 2), AX_ERR_VALUE,
                 "concatenate: axis 2 is out of bounds for f32[2,3]");
    expect_error(cx, ax_concatenate(cx, 0, NULL, 0), AX_ERR_VALUE,
                 "concatenate needs at least one array");
    ax_array *s = ax_array_scalar(cx, AX_F32, 1);
    expect_error(cx, ax_concatenate(cx, 2, (ax_array *[]){s, s}, 0), AX_ERR_VALUE,
                 "zero-dimensional arrays cannot be concatenated");
    ax_array_release(s);
    ax_array_release(i);
    ax_array_release(e);
    ax_array_release(br);
    ax_array_release(b);
    ax_array_release(b0);
    ax_array_release(a);
}

static void test_slice(void **state) {
    ax_ctx *cx = *state;
    ax_array *x = x234(cx);
    ax_array *s = ax_slice(cx, x, SHAPE(0, 1, 1), SHAPE(2, 3, 4), SHAPE(1, 1, 2));
    assert_ptr_equal(s->buf, x->buf);
    expect_values(s, AX_F32, 3, SHAPE(2, 2, 2), VALS(5, 7, 9, 11, 17, 19, 21, 23), 0);
    /* a slice of a reversed view: x[::-1][:, 2:3, 3:0:... ] */
    ax_array *r = ax_rev(cx, x, 2, AXES(0, 2));
    expect_values(ax_slice(cx, r, SHAPE(0, 2, 0), SHAPE(2, 3, 4), SHAPE(1, 1, 3)), AX_F32, 3,
                  SHAPE(2, 1, 2), VALS(23, 20, 11, 8), 0);
    expect_values(ax_slice(cx, x, SHAPE(1, 3, 0), SHAPE(1, 3, 4), NULL), AX_F32, 3, SHAPE(0, 0, 4),
                  NULL, 0);
    expect_error(cx, ax_slice(cx, x, SHAPE(0, 0, 2), SHAPE(2, 3, 5), NULL), AX_ERR_INDEX,
                 "slice 2:5 is out of bounds for axis 2 of f32[2,3,4]");
    expect_error(cx, ax_slice(cx, x, SHAPE(0, 3, 0), SHAPE(2, 1, 4), NULL), AX_ERR_VALUE,
                 "slice start 3 is after its limit 1 on axis 1 of f32[2,3,4]");
    expect_error(cx, ax_slice(cx, x, SHAPE(0, 0, 0), SHAPE(2, 3, 4), SHAPE(0, 1, 1)), AX_ERR_VALUE,
                 "slice strides must be positive, got 0 on axis 0");
    /* a stride beyond the axis takes its first element (and its stride is never formed) */
    expect_values(ax_slice(cx, x, SHAPE(1, 0, 3), SHAPE(2, 3, 4), SHAPE(INT64_MAX, INT64_MAX, 1)),
                  AX_F32, 3, SHAPE(1, 1, 1), VALS(15), 0);
    ax_array_release(r);
    ax_array_release(x);
}

static void test_pad(void **state) {
    ax_ctx *cx = *state;
    ax_array *p = make_array(cx, AX_F32, 2, SHAPE(2, 3), VALS(1, 2, 3, 4, 5, 6));
    ax_array *m1 = ax_array_scalar(cx, AX_F32, -1);
    ax_array *nine = ax_array_scalar(cx, AX_F32, 9);
    ax_array *zero = ax_array_scalar(cx, AX_F32, 0);
    expect_values(ax_pad(cx, p, m1, SHAPE(1, -1), SHAPE(0, 2), SHAPE(1, 1)), AX_F32, 2, SHAPE(4, 6),
                  VALS(-1, -1, -1, -1, -1, -1, -1, 2, -1, 3, -1, -1, -1, -1, -1, -1, -1, -1, -1, 5,
                       -1, 6, -1, -1),
                  0);
    expect_values(ax_pad(cx, p, m1, SHAPE(-2, -1), SHAPE(-1, 1), SHAPE(2, 0)), AX_F32, 2,
                  SHAPE(1, 3), VALS(-1, -1, -1), 0);
    expect_values(ax_pad(cx, p, nine, SHAPE(-1, -2), SHAPE(0, 0), SHAPE(1, 2)), AX_F32, 2,
                  SHAPE(2, 5), VALS(9, 9, 9, 9, 9, 9, 5, 9, 9, 6), 0);
    ax_array *t = ax_transpose(cx, p, AXES(1, 0));
    expect_values(ax_pad(cx, t, zero, SHAPE(0, 2), SHAPE(1, -1), SHAPE(0, 1)), AX_F32, 2,
                  SHAPE(4, 4), VALS(0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 0, 0), 0);
    expect_values(ax_pad(cx, m1, zero, NULL, NULL, NULL), AX_F32, 0, NULL, VALS(-1), 0);
    /* widths at the ends of int64 whose sum fits; one whose sum does not */
    ax_array *v = make_array(cx, AX_F32, 1, SHAPE(1), VALS(7));
    expect_values(ax_pad(cx, v, zero, SHAPE(INT64_MIN), SHAPE(INT64_MAX), NULL), AX_F32, 1,
                  SHAPE(0), NULL, 0);
    expect_values(ax_pad(cx, v, zero, SHAPE(INT64_MIN + 2), SHAPE(INT64_MAX), SHAPE(INT64_MAX)),
                  AX_F32, 1, SHAPE(2), VALS(0, 0), 0);
    expect_values(ax_pad(cx, v, zero, SHAPE(-1), SHAPE(0), SHAPE(INT64_MAX)), AX_F32, 1, SHAPE(0),
                  NULL, 0);
    expect_values(ax_pad(cx, v, zero, SHAPE(0), SHAPE(-1), SHAPE(INT64_MAX)), AX_F32, 1, SHAPE(0),
                  NULL, 0);
    expect_error(cx, ax_pad(cx, v, zero, SHAPE(INT64_MAX), SHAPE(1), NULL), AX_ERR_VALUE,
                 "pad: padding (low 9223372036854775807, high 1, interior 0) of axis 0 is invalid "
                 "for f32[1] (the padded size does not fit in 64 bits)");
    expect_error(cx, ax_pad(cx, p, zero, SHAPE(0, 0), SHAPE(0, 0), SHAPE(0, INT64_MAX / 2 + 1)),
                 AX_ERR_VALUE,
                 "pad: padding (low 0, high 0, interior 4611686018427387904) of axis 1 is invalid "
                 "for f32[2,3] (the padded size does not fit in 64 bits)");
    ax_array_release(v);
    expect_error(cx, ax_pad(cx, p, m1, SHAPE(-3, 0), SHAPE(0, 0), NULL), AX_ERR_SHAPE,
                 "pad: padding (low -3, high 0, interior 0) of axis 0 is invalid for f32[2,3]");
    expect_error(cx, ax_pad(cx, p, m1, SHAPE(0, 0), SHAPE(0, 0), SHAPE(0, -1)), AX_ERR_VALUE,
                 "pad: padding (low 0, high 0, interior -1) of axis 1 is invalid for f32[2,3]");
    ax_array *i = ax_array_scalar(cx, AX_I32, 0);
    expect_error(cx, ax_pad(cx, p, i, SHAPE(0, 0), SHAPE(0, 0), NULL), AX_ERR_TYPE,
                 "pad requires a padding value of the array's dtype, got f32[2,3] and i32[]");
    expect_error(cx, ax_pad(cx, p, p, SHAPE(0, 0), SHAPE(0, 0), NULL), AX_ERR_SHAPE,
                 "the padding value must be a scalar, got f32[2,3]");
    ax_array_release(i);
    ax_array_release(t);
    ax_array_release(zero);
    ax_array_release(nine);
    ax_array_release(m1);
    ax_array_release(p);
}

static void test_squeeze_expand_rev(void **state) {
    ax_ctx *cx = *state;
    ax_array *x = make_range(cx, AX_U8, 3, SHAPE(1, 3, 1));
    ax_array *s = ax_squeeze(cx, x, 2, AXES(0, -1));
    assert_ptr_equal(s->buf, x->buf);
    expect_values(s, AX_U8, 1, SHAPE(3), VALS(0, 1, 2), 0);
    expect_error(cx, ax_squeeze(cx, x, 1, AXES(1)), AX_ERR_SHAPE,
                 "cannot squeeze axis 1 of u8[1,3,1]: its size is 3, not 1");
    expect_error(cx, ax_squeeze(cx, x, 2, AXES(0, 0)), AX_ERR_VALUE,
                 "squeeze: axis 0 is repeated in axes (0, 0)");
    expect_error(cx, ax_squeeze(cx, x, 1, AXES(3)), AX_ERR_VALUE,
                 "squeeze: axis 3 is out of bounds for u8[1,3,1]");
    ax_array *v = make_range(cx, AX_F64, 1, SHAPE(3));
    expect_values(ax_expand_dims(cx, v, 2, AXES(0, 2)), AX_F64, 3, SHAPE(1, 3, 1), VALS(0, 1, 2),
                  0);
    expect_values(ax_expand_dims(cx, v, 1, AXES(-1)), AX_F64, 2, SHAPE(3, 1), VALS(0, 1, 2), 0);
    expect_error(cx, ax_expand_dims(cx, v, 1, AXES(2)), AX_ERR_VALUE,
                 "expand_dims: axis 2 is out of bounds for an output of rank 2");
    ax_array *p = make_array(cx, AX_F32, 2, SHAPE(2, 3), VALS(1, 2, 3, 4, 5, 6));
    ax_array *r = ax_rev(cx, p, 1, AXES(1));
    assert_ptr_equal(r->buf, p->buf);
    assert_int_equal(r->strides[1], -1);
    expect_values(r, AX_F32, 2, SHAPE(2, 3), VALS(3, 2, 1, 6, 5, 4), 0);
    r = ax_rev(cx, p, 2, AXES(0, 1));
    ax_array *c = ax_array_copy(cx, r);
    expect_values(c, AX_F32, 2, SHAPE(2, 3), VALS(6, 5, 4, 3, 2, 1), 0);
    ax_array *rr = ax_rev(cx, r, 1, AXES(0)); /* rev of rev */
    expect_values(rr, AX_F32, 2, SHAPE(2, 3), VALS(3, 2, 1, 6, 5, 4), 0);
    ax_array_release(r);
    ax_array *e = ax_array_new(cx, AX_F32, 1, SHAPE(0));
    expect_values(ax_rev(cx, e, 1, AXES(0)), AX_F32, 1, SHAPE(0), NULL, 0);
    ax_array_release(e);
    ax_array_release(p);
    ax_array_release(v);
    ax_array_release(x);
}

/* Copies of transposed views go through 32 x 32 tiles: check every element, for 1-, 4- and
 * 8-byte elements, with a batch dimension and sizes that are not multiples of the tile. */
static void test_transposed_copies(void **state) {
    ax_ctx *cx = *state;
    const ax_dtype types[] = {AX_U8, AX_I32, AX_F64};
    for (int k = 0; k < 3; k++) {
        ax_array *x = make_range(cx, types[k], 3, SHAPE(3, 40, 50));
        ax_array *t = ax_transpose(cx, x, AXES(0, 2, 1)); /* (3, 50, 40) */
        ax_array *r = ax_reshape(cx, t, 1, SHAPE(6000));
        check_shape(r, types[k], 1, SHAPE(6000));
        for (int64_t b = 0; b < 3; b++)
            for (int64_t i = 0; i < 50; i++)
                for (int64_t j = 0; j < 40; j++) {
                    int64_t want = (b * 2000 + j * 50 + i) % (types[k] == AX_U8 ? 256 : 1 << 30);
                    assert_int_equal(ax_array_get_i64(r, b * 2000 + i * 40 + j), want);
                }
        ax_array_release(r);
        /* concatenating two transposed halves along the last axis gives back the transpose */
        ax_array *h0 = ax_slice(cx, t, SHAPE(0, 0, 0), SHAPE(3, 50, 17), NULL);
        ax_array *h1 = ax_slice(cx, t, SHAPE(0, 0, 17), SHAPE(3, 50, 40), NULL);
        ax_array *c = ax_concatenate(cx, 2, (ax_array *[]){h0, h1}, 2);
        for (int64_t i = 0; i < 6000; i += 7)
            assert_int_equal(ax_array_get_i64(c, i), ax_array_get_i64(t, i));
        ax_array_release(c);
        ax_array_release(h1);
        ax_array_release(h0);
        ax_array_release(t);
        ax_array_release(x);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_reshape_contiguous_is_view, setup_ctx, teardown_ctx),
        cmocka_unit_test_setup_teardown(test_reshape_views_and_copies, setup_ctx, teardown_ctx),
        cmocka_unit_test_setup_teardown(test_reshape_errors_and_edges, setup_ctx, teardown_ctx),
        cmocka_unit_test_setup_teardown(test_transpose, setup_ctx, teardown_ctx),
        cmocka_unit_test_setup_teardown(test_broadcast_in_dim, setup_ctx, teardown_ctx),
        cmocka_unit_test_setup_teardown(test_concatenate, setup_ctx, teardown_ctx),
        cmocka_unit_test_setup_teardown(test_slice, setup_ctx, teardown_ctx),
        cmocka_unit_test_setup_teardown(test_pad, setup_ctx, teardown_ctx),
        cmocka_unit_test_setup_teardown(test_squeeze_expand_rev, setup_ctx, teardown_ctx),
        cmocka_unit_test_setup_teardown(test_transposed_copies, setup_ctx, teardown_ctx),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

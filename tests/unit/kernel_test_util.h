/* Helpers shared by the kernel unit tests (test_reduce, test_shape_ops, test_index, test_sort,
 * test_creation): building arrays from literal values, comparing results with the values
 * NumPy computed, and checking the error a call recorded. Include after cmocka.h. */
#ifndef AX_KERNEL_TEST_UTIL_H
#define AX_KERNEL_TEST_UTIL_H

#include <math.h>
#include <string.h>

#include "../../runtime/array.h"
#include "../../runtime/error.h"

#define SHAPE(...) ((const int64_t[]){__VA_ARGS__})
#define VALS(...)  ((const double[]){__VA_ARGS__})
#define AXES(...)  ((const int[]){__VA_ARGS__})

/* A contiguous array of dtype with the given values (converted from double). */
static inline ax_array *make_array(ax_ctx *cx, ax_dtype dtype, int ndim, const int64_t *shape,
                                   const double *values) {
    ax_array *a = ax_array_new(cx, dtype, ndim, shape);
    assert_non_null(a);
    size_t es = ax_dtype_size(dtype);
    for (int64_t i = 0; i < a->size; i++)
        ax_convert_element(dtype, (char *)a->buf->data + i * (int64_t)es, AX_F64, &values[i]);
    return a;
}

/* 0, 1, 2, ... in the given shape. */
static inline ax_array *make_range(ax_ctx *cx, ax_dtype dtype, int ndim, const int64_t *shape) {
    ax_array *a = ax_array_new(cx, dtype, ndim, shape);
    assert_non_null(a);
    size_t es = ax_dtype_size(dtype);
    for (int64_t i = 0; i < a->size; i++)
        ax_convert_element(dtype, (char *)a->buf->data + i * (int64_t)es, AX_I64, &i);
    return a;
}

static inline void check_shape(const ax_array *a, ax_dtype dtype, int ndim,
                               const int64_t *shape) {
    assert_non_null(a);
    assert_int_equal(a->dtype, dtype);
    assert_int_equal(a->ndim, ndim);
    for (int d = 0; d < ndim; d++) assert_int_equal(a->shape[d], shape[d]);
}

/* Checks dtype, shape and every value (read through the strides, so views work). Floats may
 * differ by `tol` relative; NaN matches NaN. Consumes (releases) a. */
static inline void expect_values(ax_array *a, ax_dtype dtype, int ndim, const int64_t *shape,
                                 const double *want, double tol) {
    check_shape(a, dtype, ndim, shape);
    for (int64_t i = 0; i < a->size; i++) {
        double got = ax_array_get_f64(a, i), w = want[i];
        if (isnan(w) && isnan(got)) continue;
        if (got == w || fabs(got - w) <= tol * fabs(w)) continue;
        print_error("element %lld: got %.17g, want %.17g\n", (long long)i, got, w);
        fail();
    }
    ax_array_release(a);
}

/* Checks exact 64-bit integer values (for i64 results beyond 2^53). Consumes a. */
static inline void expect_ints(ax_array *a, ax_dtype dtype, int ndim, const int64_t *shape,
                               const int64_t *want) {
    check_shape(a, dtype, ndim, shape);
    for (int64_t i = 0; i < a->size; i++) assert_int_equal(ax_array_get_i64(a, i), want[i]);
    ax_array_release(a);
}

/* The call returned NULL and recorded an error of this kind whose message is `message`. */
static inline void expect_error(ax_ctx *cx, const void *result, ax_error_kind kind,
                                const char *message) {
    assert_null(result);
    assert_true(ax_error_pending(cx));
    if (cx->err.kind != kind || strcmp(cx->err.message, message) != 0) {
        print_error("got %s: %s\nwant %s: %s\n", ax_error_kind_name(cx->err.kind),
                    cx->err.message, ax_error_kind_name(kind), message);
        fail();
    }
    ax_error_clear(cx);
}

static inline int setup_ctx(void **state) {
    *state = ax_ctx_new();
    return *state ? 0 : -1;
}

static inline int teardown_ctx(void **state) {
    ax_ctx *cx = *state;
    assert_false(ax_error_pending(cx));
    ax_ctx_free(cx);
    return 0;
}

#endif

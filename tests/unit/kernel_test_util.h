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

/* The test's file and line for messages: the helpers below are called through macros. */
#define check_shape(a, dtype, ndim, shape) check_shape_at(a, dtype, ndim, shape, __FILE__, __LINE__)
#define expect_values(a, dtype, ndim, shape, want, tol)                                            \
    expect_values_at(a, dtype, ndim, shape, want, tol, __FILE__, __LINE__)
#define expect_ints(a, dtype, ndim, shape, want)                                                   \
    expect_ints_at(a, dtype, ndim, shape, want, __FILE__, __LINE__)
#define expect_error(cx, result, kind, message)                                                    \
    expect_error_at(cx, result, kind, message, __FILE__, __LINE__)

static inline void check_shape_at(const ax_array *a, ax_dtype dtype, int ndim, const int64_t *shape,
                                  const char *file, int line) {
    bool ok = a && a->dtype == dtype && a->ndim == ndim;
    for (int d = 0; ok && d < ndim; d++) ok = a->shape[d] == shape[d];
    if (ok) return;
    char got[128] = "NULL", want[128];
    if (a) ax_array_type_format(got, sizeof got, a);
    ax_type_format(want, sizeof want, dtype, ndim, shape);
    print_error("%s:%d: got %s, want %s\n", file, line, got, want);
    fail();
}

/* Checks dtype, shape and every value (read through the strides, so views work). Floats may
 * differ by `tol` relative; NaN matches NaN. Consumes (releases) a. */
static inline void expect_values_at(ax_array *a, ax_dtype dtype, int ndim, const int64_t *shape,
                                    const double *want, double tol, const char *file, int line) {
    check_shape_at(a, dtype, ndim, shape, file, line);
    for (int64_t i = 0; i < a->size; i++) {
        double got = ax_array_get_f64(a, i), w = want[i];
        if (isnan(w) && isnan(got)) continue;
        if (got == w || fabs(got - w) <= tol * fabs(w)) continue;
        print_error("%s:%d: element %lld: got %.17g, want %.17g\n", file, line, (long long)i, got,
                    w);
        fail();
    }
    ax_array_release(a);
}

/* Checks exact 64-bit integer values (for i64 results beyond 2^53). Consumes a. */
static inline void expect_ints_at(ax_array *a, ax_dtype dtype, int ndim, const int64_t *shape,
                                  const int64_t *want, const char *file, int line) {
    check_shape_at(a, dtype, ndim, shape, file, line);
    for (int64_t i = 0; i < a->size; i++) assert_int_equal(ax_array_get_i64(a, i), want[i]);
    ax_array_release(a);
}

/* The call returned NULL and recorded an error of this kind whose message is `message`. */
static inline void expect_error_at(ax_ctx *cx, const void *result, ax_error_kind kind,
                                   const char *message, const char *file, int line) {
    if (result || cx->err.kind != kind || strcmp(cx->err.message, message) != 0) {
        print_error("%s:%d: got %s: %s%s\nwant %s: %s\n", file, line,
                    ax_error_kind_name(cx->err.kind), cx->err.message,
                    result ? " (and a result)" : "", ax_error_kind_name(kind), message);
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

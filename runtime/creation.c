/* Arrays made from nothing (see creation.h). Values are computed the way NumPy computes
 * them, because jnp.arange / jnp.linspace with concrete arguments return NumPy's numbers. */
#include "creation.h"

#include <math.h>
#include <string.h>

#include "strided.h"

ax_array *ax_full(ax_ctx *cx, ax_dtype dtype, int ndim, const int64_t *shape, double value) {
    if (!ax_shape_check(cx, "full", dtype, ndim, shape)) return NULL;
    ax_array *a = ax_array_new(cx, dtype, ndim, shape);
    if (!a) return NULL;
    char elem[8];
    ax_convert_element(dtype, elem, AX_F64, &value);
    ax_fill_elements(ax_array_data(a), a->size, elem, ax_dtype_size(dtype));
    return a;
}

/* Fills the array as (outer, n, inner): every inner run at position i of `dimension` holds i. */
ax_array *ax_iota(ax_ctx *cx, ax_dtype dtype, int ndim, const int64_t *shape, int dimension) {
    if (!ax_shape_check(cx, "iota", dtype, ndim, shape)) return NULL;
    if (dimension < 0 || dimension >= ndim) {
        char text[400];
        ax_shape_format(text, sizeof text, ndim, shape);
        return ax_error(cx, AX_ERR_VALUE, "iota: dimension %d is out of bounds for shape %s",
                        dimension, text);
    }
    ax_array *a = ax_array_new(cx, dtype, ndim, shape);
    if (!a || a->size == 0) return a;
    int64_t n = shape[dimension],
            inner = ax_shape_size(ndim - dimension - 1, shape + dimension + 1);
    int64_t outer = a->size / (n * inner);
    size_t es = ax_dtype_size(dtype);
    char *dst = ax_array_data(a);
    for (int64_t i = 0; i < n; i++) { /* first block: runs of 0, 1, ..., n-1 */
        char elem[8];
        ax_convert_element(dtype, elem, AX_I64, &i);
        ax_fill_elements(dst + i * inner * (int64_t)es, inner, elem, es);
    }
    size_t block = (size_t)(n * inner) * es;
    for (int64_t o = 1; o < outer; o++) memcpy(dst + o * (int64_t)block, dst, block);
    return a;
}

static bool is_int64(double v) {
    return v == floor(v) && fabs(v) < 9.2e18;
}

/* NumPy's arange (PyArray_Arange + the dtype's `fill`): the first two values are start and
 * start + step converted to the dtype; the rest are first + i * delta computed in the dtype,
 * with delta = second - first. So arange(0.1, 5, 0.37, dtype=f32) steps by an f32 delta,
 * exactly as NumPy (and jnp.arange with concrete arguments) do. */
#define ARANGE_FILL(T, UT)                                                                         \
    do {                                                                                           \
        T *o = ax_array_data(a);                                                                   \
        T first, second;                                                                           \
        ax_convert_element(dtype, &first, AX_F64, &start);                                         \
        if (exact_ints) { /* start + step in int64, as Python ints would be */                     \
            int64_t next = (int64_t)start + (int64_t)step;                                         \
            ax_convert_element(dtype, &second, AX_I64, &next);                                     \
        } else {                                                                                   \
            double next = start + step;                                                            \
            ax_convert_element(dtype, &second, AX_F64, &next);                                     \
        }                                                                                          \
        T delta = (T)((UT)second - (UT)first);                                                     \
        o[0] = first;                                                                              \
        for (int64_t i = 1; i < n; i++) o[i] = (T)((UT)first + (UT)i * (UT)delta);                 \
    } while (0)

ax_array *ax_arange(ax_ctx *cx, ax_dtype dtype, double start, double step, int64_t n) {
    if (n < 0) n = 0; /* an empty range, as NumPy gives for stop < start */
    if (step == 0 && n > 1) return ax_error(cx, AX_ERR_VALUE, "arange: the step must not be zero");
    ax_array *a = ax_array_new(cx, dtype, 1, &n);
    if (!a || n == 0) return a;
    bool exact_ints =
        !ax_dtype_is_float(dtype) && is_int64(start) && is_int64(step) && is_int64(start + step);
    switch (dtype) {
    case AX_F32:
        ARANGE_FILL(float, float);
        break;
    case AX_F64:
        ARANGE_FILL(double, double);
        break;
    case AX_I32:
        ARANGE_FILL(int32_t, uint32_t);
        break;
    case AX_I64:
        ARANGE_FILL(int64_t, uint64_t);
        break;
    case AX_U32:
        ARANGE_FILL(uint32_t, uint32_t);
        break;
    case AX_U8:
        ARANGE_FILL(uint8_t, unsigned);
        break;
    case AX_BOOL: {
        if (n > 2) {
            ax_array_release(a);
            return ax_error(cx, AX_ERR_VALUE,
                            "arange: no fill-function for bool arrays longer than 2");
        }
        uint8_t *o = ax_array_data(a);
        for (int64_t i = 0; i < n; i++) o[i] = start + (double)i * step != 0;
        break;
    }
    default:
        break;
    }
    return a;
}

/* NumPy's linspace (numpy/core/function_base.py) in f64: step = (stop - start) / div,
 * y = start + i * step (or i / div * delta when step underflows to 0), the last point set to
 * stop when endpoint; integer dtypes take the floor before converting. */
ax_array *ax_linspace(ax_ctx *cx, ax_dtype dtype, double start, double stop, int64_t n,
                      bool endpoint) {
    if (n < 0)
        return ax_error(cx, AX_ERR_VALUE, "Number of samples, %lld, must be non-negative.",
                        (long long)n);
    ax_array *a = ax_array_new(cx, dtype, 1, &n);
    if (!a || n == 0) return a;
    int64_t div = endpoint ? n - 1 : n;
    double delta = stop - start, step = div > 0 ? delta / (double)div : NAN;
    bool to_int = !ax_dtype_is_float(dtype) && dtype != AX_BOOL;
    size_t es = ax_dtype_size(dtype);
    char *o = ax_array_data(a);
    for (int64_t i = 0; i < n; i++) {
        double y;
        if (div == 0)
            y = (double)i * delta;
        else if (step == 0)
            y = (double)i / (double)div * delta;
        else
            y = (double)i * step;
        y += start;
        if (endpoint && n > 1 && i == n - 1) y = stop;
        if (to_int) y = floor(y);
        ax_convert_element(dtype, o + i * (int64_t)es, AX_F64, &y);
    }
    return a;
}

ax_array *ax_eye(ax_ctx *cx, ax_dtype dtype, int64_t n, int64_t m, int64_t k) {
    int64_t shape[2] = {n, m};
    if (!ax_shape_check(cx, "eye", dtype, 2, shape)) return NULL;
    ax_array *a = ax_array_zeros(cx, dtype, 2, shape);
    if (!a) return NULL;
    char one[8];
    double v = 1.0;
    ax_convert_element(dtype, one, AX_F64, &v);
    size_t es = ax_dtype_size(dtype);
    char *o = ax_array_data(a);
    if (k >= m || k <= -n) return a; /* the diagonal misses the matrix (-k may not exist) */
    for (int64_t i = k < 0 ? -k : 0; i < n && i + k < m; i++)
        memcpy(o + (i * m + i + k) * (int64_t)es, one, es);
    return a;
}

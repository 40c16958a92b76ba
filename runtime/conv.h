/* Convolution (lax.conv_general_dilated) and windowed reductions (lax.reduce_window and the
 * select-and-gather / select-and-scatter pair of max pooling's derivatives).
 *
 * Both move a window over some dimensions of an array. Along one dimension d, the input of
 * length n is dilated (base_dilation - 1 holes between elements), padded (pad_lo / pad_hi,
 * negative crops), and the window of `size` taps, themselves window_dilation apart, steps by
 * `stride`: output position o, tap k reads the padded, dilated input at
 *     o * stride + k * window_dilation - pad_lo,
 * which is an element of the input when it is in range and a multiple of base_dilation (then
 * the element at that index / base_dilation), and padding otherwise (0 for a convolution and
 * a sum, the reduction's identity for max / min). */
#ifndef AX_CONV_H
#define AX_CONV_H

#include "array.h"

typedef struct ax_window {
    int ndim; /* the dimensions the window moves along */
    int64_t size[AX_MAX_RANK];
    int64_t stride[AX_MAX_RANK];
    int64_t pad_lo[AX_MAX_RANK], pad_hi[AX_MAX_RANK];
    int64_t base_dilation[AX_MAX_RANK], window_dilation[AX_MAX_RANK];
} ax_window;

/* (n - 1) * dilation + 1, and 0 for n == 0: a dilated extent. */
int64_t ax_dilate_dim(int64_t n, int64_t dilation);
/* The number of window positions along dimension d over an input of length n; -1 when the
 * padding crops more than the dilated input holds. */
int64_t ax_window_out_dim(const ax_window *w, int d, int64_t n);

/* conv_general_dilated: lhs (batch, feature, spatial...) and rhs (out feature, in feature,
 * spatial...) in the dimension orders given by the specs (as lax.ConvDimensionNumbers), the
 * window over the spatial dimensions in rhs_spec order, its sizes taken from rhs. */
typedef struct ax_conv_geometry {
    ax_window win;
    int lhs_spec[AX_MAX_RANK], rhs_spec[AX_MAX_RANK], out_spec[AX_MAX_RANK];
    int64_t feature_groups, batch_groups;
} ax_conv_geometry;

/* The convolution of lhs and rhs (one dtype: floats through im2col blocks and OpenBLAS GEMM,
 * integers by a direct loop that wraps around as XLA does). The caller has checked the shapes
 * (compiler/conv_rules.c's shape rule): out has out_ndim = lhs->ndim dims of out_shape. */
ax_array *ax_conv_general(ax_ctx *cx, ax_array *lhs, ax_array *rhs, const ax_conv_geometry *g,
                          const int64_t *out_shape);

typedef enum { AX_WINDOW_SUM, AX_WINDOW_MAX, AX_WINDOW_MIN } ax_window_op;

/* reduce_window_{sum,max,min} over every dimension of x (w->ndim == x->ndim); padding holds
 * the identity (0, -inf / the dtype's minimum, +inf / its maximum). max and min propagate
 * NaN. */
ax_array *ax_reduce_window(ax_ctx *cx, ax_window_op op, ax_array *x, const ax_window *w);

/* In each window of x, the element that max (le == false: >=) or min (le: <=) pooling picks:
 * the first in window order that no earlier one beats, starting from the identity, so a window
 * of padding and identities picks nothing. select_and_gather_add returns t (x's shape) at
 * the picked positions (0 where nothing is picked), in the shape of the windows;
 * select_and_scatter_add adds each window's `source` value at its picked position of an array
 * of x's shape: the transpose of the former. */
ax_array *ax_select_and_gather_add(ax_ctx *cx, ax_array *t, ax_array *x, bool le,
                                   const ax_window *w);
ax_array *ax_select_and_scatter_add(ax_ctx *cx, ax_array *source, ax_array *x, bool le,
                                    const ax_window *w);

#endif

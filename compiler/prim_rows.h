/* What the files defining rows of the primitive table share (compiler/prims_*.c,
 * linalg_rules.c, conv_rules.c, control_flow.c, ...): the rule families and their helpers, and
 * shorthands for writing rows. How a row is written: docs/primitives.md. */
#ifndef AX_PRIM_ROWS_H
#define AX_PRIM_ROWS_H

#include "ad_rules.h"
#include "ir.h"
#include "shape_rules.h"
#include "simplify.h"
#include "vmap.h"

/* The rows' flags, short. */
enum {
    LIN = AX_PRIM_LINEAR,
    EW = AX_PRIM_ELEMENTWISE,
    ND = AX_PRIM_NONDIFF,
    COMM = AX_PRIM_COMMUTATIVE,
};

/* For rule functions that do not read all their parameters. */
#define AX_UNUSED __attribute__((unused))

/* An eager rule (ax_eager_rule) named eager_<name>. */
#define AX_EAGER(name)                                                                             \
    static int eager_##name(ax_ctx *cx, int nin, ax_array **in, const ax_params *p, ax_array **out)

/* Stores a kernel's single result: 0, or -1 when the kernel failed (it recorded the error). */
static inline int ax_eager_one(ax_array *result, ax_array **out) {
    out[0] = result;
    return result ? 0 : -1;
}

/* Examples' operands: floats of shape (dims...) in [lo, hi]; integers of dtype t; booleans;
 * positive definite matrices. */
#define AX_FLOATS(lo_, hi_, ...)                                                                   \
    {.kind = AX_ARG_FLOAT, .ndim = AX_NDIMS(__VA_ARGS__), .shape = {__VA_ARGS__}, .lo = (lo_),    \
     .hi = (hi_)}
#define AX_SCALAR(lo_, hi_) {.kind = AX_ARG_FLOAT, .ndim = 0, .lo = (lo_), .hi = (hi_)}
#define AX_INTS(t, lo_, hi_, ...)                                                                  \
    {.kind = AX_ARG_INT, .dtype = (t), .ndim = AX_NDIMS(__VA_ARGS__), .shape = {__VA_ARGS__},     \
     .lo = (lo_), .hi = (hi_)}
#define AX_INT_SCALAR(t, lo_, hi_)                                                                 \
    {.kind = AX_ARG_INT, .dtype = (t), .ndim = 0, .lo = (lo_), .hi = (hi_)}
#define AX_BOOLS(...) {.kind = AX_ARG_BOOL, .ndim = AX_NDIMS(__VA_ARGS__), .shape = {__VA_ARGS__}}
#define AX_SPD(...)   {.kind = AX_ARG_SPD, .ndim = AX_NDIMS(__VA_ARGS__), .shape = {__VA_ARGS__}}
/* A parenthesised list, unwrapped: AX_LIST (2, 3) is 2, 3. */
#define AX_LIST(...) __VA_ARGS__
/* The number of arguments (1 to 5) of a shape list. */
#define AX_NDIMS(...)                       AX_NDIMS_(__VA_ARGS__, 5, 4, 3, 2, 1, 0)
#define AX_NDIMS_(a, b, c, d, e, n, ...)    n

#endif

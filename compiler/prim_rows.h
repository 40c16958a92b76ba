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

/* An eager rule (ax_eager_rule) named eager_<name>. */
#define AX_EAGER(name)                                                                             \
    static int eager_##name(ax_ctx *cx, int nin, ax_array **in, const ax_params *p, ax_array **out)

/* Stores a kernel's single result: 0, or -1 when the kernel failed (it recorded the error). */
static inline int ax_eager_one(ax_array *result, ax_array **out) {
    out[0] = result;
    return result ? 0 : -1;
}

#endif

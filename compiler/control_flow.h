/* Structured control flow as primitives with sub-programs: cond, while and scan (JAX's lax
 * control flow; call, what jit leaves inside an outer trace, is in compiler/call.h). Each
 * primitive's rules —
 * shape, eager evaluation, JVP, partial evaluation, transposition, batching — are here, and
 * the rules of a primitive apply the whole-IR passes (compiler/passes.h) to its sub-programs,
 * as autodidax's cond_p does. Operand layouts are in compiler/primitive.h. */
#ifndef AX_CONTROL_FLOW_H
#define AX_CONTROL_FLOW_H

#include "primitive.h"

/* The table rows of the three primitives (compiler/primitive.c points at them). */
extern const ax_prim_info ax_cond_info, ax_while_info, ax_scan_info;

#endif

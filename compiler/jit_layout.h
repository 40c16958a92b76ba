/* Inputs made by ones, zeros, full or broadcast_to: arrays whose buffer holds only their
 * distinct values, read with stride 0 along the broadcast axes. Native loops read contiguous
 * buffers, so such an input is copied out in full before every call (a 100 MB ones() is
 * written and read again each time). A *layout variant* of the program takes the compact
 * array instead (the input without its broadcast axes) and broadcasts it inside the program,
 * where fusion folds the broadcast into the loads' strides: nothing is copied, and less is
 * read than for a computed array. compiler/jit.c builds a variant for a broadcast layout the
 * second time a call brings it (a layout seen once, such as optimizer state initialised with
 * zeros_like and computed from the second step on, costs no compile). */
#ifndef AX_JIT_LAYOUT_H
#define AX_JIT_LAYOUT_H

#include <stdint.h>

#include "ir.h"

/* The axes `a` is broadcast along (stride 0, extent > 1), as bits. */
uint32_t ax_layout_broadcast_axes(const ax_array *a);

/* A view of `a` without the axes in `axes` (new reference). */
ax_array *ax_layout_compact(ax_ctx *cx, ax_array *a, uint32_t axes);

/* The IR of `ir` taking input i without its axes axes[i], broadcast back in the program:
 * simplified, named after ir. NULL with an error. */
ax_ir *ax_layout_variant(ax_ctx *cx, const ax_ir *ir, const uint32_t *axes);

#endif

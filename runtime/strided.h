/* Copying n-d blocks of elements between strided layouts: the shared inner loop of the shape
 * kernels (concatenate, pad, gather, scatter, reshape copies).
 *
 * A plan is made once for a block shape and a pair of stride sets, then run at many base
 * addresses (gather runs one per index). Making the plan drops size-1 dimensions and merges
 * dimensions that are contiguous in both layouts, so the inner loop is one memcpy whenever
 * the innermost run is contiguous on both sides. */
#ifndef AX_STRIDED_H
#define AX_STRIDED_H

#include <stddef.h>
#include <stdint.h>

#include "array.h"

typedef struct ax_copy_plan {
    int ndim;      /* after merging; 0 means a single element */
    size_t elsize; /* bytes per element */
    int64_t count; /* elements in the block (0: nothing to copy) */
    int64_t shape[AX_MAX_RANK];
    int64_t dst_strides[AX_MAX_RANK]; /* in elements */
    int64_t src_strides[AX_MAX_RANK];
} ax_copy_plan;

void ax_copy_plan_init(ax_copy_plan *plan, int ndim, const int64_t *shape,
                       const int64_t *dst_strides, const int64_t *src_strides, size_t elsize);
/* Copies the block from src to dst (addresses of element [0, ..., 0] on each side). */
void ax_copy_plan_run(const ax_copy_plan *plan, void *dst, const void *src);

/* ax_copy_plan_init + ax_copy_plan_run. */
void ax_strided_copy(void *dst, const int64_t *dst_strides, const void *src,
                     const int64_t *src_strides, int ndim, const int64_t *shape, size_t elsize);

/* x itself (retained) when it is contiguous, else a new contiguous copy made with
 * ax_strided_copy (tiled for transposed layouts), keeping x's weak flag. */
ax_array *ax_strided_contiguous(ax_ctx *cx, ax_array *x);

/* Writes `count` copies of the elsize-byte element `elem` to dst. */
void ax_fill_elements(void *dst, int64_t count, const void *elem, size_t elsize);

#endif

/* Collectives by axis name: psum, pmax, pmin, all_gather, psum_scatter, ppermute, all_to_all
 * and axis_index, as JAX has them inside pmap and vmap(axis_name=...) (docs/parallel.md).
 *
 * A collective names axes; something in scope must bind each name:
 *  - a vmap(axis_name=...) trace: the collective is a batching rule over its batch dimension
 *    (psum is a sum over the batch, axis_index an iota, ...);
 *  - pmap while it traces its body, or while a rule transforms the body (a TRACED axis): the
 *    collective is recorded in the IR being built, to run on the devices;
 *  - a device running a slice of a pmap (a DEVICE axis): the collective runs, meeting the
 *    other devices' (runtime/device.h).
 * With no binding in scope, binding one is a NameError ("unbound axis name: i"), as in JAX.
 * Since a collective's inputs may be constants (psum(1, 'i') is the axis size) and axis_index
 * has none, bind hands a collective to the trace that binds its axes, not only to the traces
 * of its inputs (ax_collective_route). */
#ifndef AX_COLLECTIVES_H
#define AX_COLLECTIVES_H

#include "../runtime/device.h"
#include "trace.h"

#define AX_MAX_AXIS_NAMES 8

/* The named axes of a collective or a pmap. Interned (ax_intern): equal specs are one pointer,
 * equations hold it as a plain pointer, and it lives as long as the context. */
typedef struct ax_axis_spec {
    int nnames;
    const char *names[AX_MAX_AXIS_NAMES]; /* interned strings */
    int npairs;   /* ppermute: (source, destination) pairs in data[0 .. 2 * npairs) */
    int ndevices; /* pmap(devices=...): this process's devices to use, in data[] */
    int64_t data[];
} ax_axis_spec;

/* An interned spec (NULL with a MemoryError). names are interned here; data holds the pairs
 * then the devices. */
const ax_axis_spec *ax_axis_spec_make(ax_ctx *cx, int nnames, const char *const *names, int npairs,
                                      const int64_t *pairs, int ndevices, const int *devices);

/* ---- the named axes in scope ---- */

typedef enum { AX_AXIS_BATCHED, AX_AXIS_TRACED, AX_AXIS_DEVICE } ax_axis_kind;

typedef struct ax_axis_frame {
    ax_axis_kind kind;
    const char *name; /* interned; NULL for a pmap without axis_name (it binds no name) */
    int64_t size;     /* the devices (or examples) along it */
    ax_trace *trace;  /* BATCHED: the vmap trace that batches it */
    int depth;        /* TRACED: the trace depth when it was pushed (set by ax_axis_push): the
                         IR traces above it record its collectives */
    struct ax_axis_frame *outer;
} ax_axis_frame;

/* Brings a name into scope until ax_axis_pop (frames nest strictly; the caller owns f). */
int ax_axis_push(ax_ctx *cx, ax_axis_frame *f);
void ax_axis_pop(ax_ctx *cx, ax_axis_frame *f);
/* The innermost frame binding `name` (interned or not), or NULL. */
const ax_axis_frame *ax_axis_find(const ax_ctx *cx, const char *name);
/* The slices of the pmaps in scope (traced or running) multiplied, or 0 outside any pmap: a
 * pmap called with that many around it is a nested pmap. */
int64_t ax_axis_pmap_slices(const ax_ctx *cx);
/* The size of the spec's axes together, or -1 with a NameError for a name not in scope. */
int64_t ax_axis_size(ax_ctx *cx, const ax_axis_spec *spec);

/* The name of the vmap whose batching rule is running, or NULL (what ax_pass_vmap names the
 * batching of a sub-program after, so that its collectives find their axis). */
const char *ax_batching_axis(const ax_ctx *cx);
/* Sets it, returning the previous one (compiler/vmap.c, around each batching rule). */
const char *ax_set_batching_axis(ax_ctx *cx, const char *name);

/* ax_bind's step for collectives: checks that every name is bound, and raises *trace to the
 * trace that binds the innermost of them when that one is above the inputs' trace. -1 with a
 * NameError for an unbound name. */
int ax_collective_route(ax_ctx *cx, ax_prim p, const ax_params *params, ax_trace **trace);

/* Binds collective p over `spec` on x (NULL for axis_index) with the primitive's other
 * parameters in `extra` (axes, flag; may be NULL). A new reference, or NULL. */
ax_array *ax_collective(ax_ctx *cx, ax_prim p, ax_array *x, const ax_axis_spec *spec,
                        const ax_params *extra);

/* The rows of the primitive table. */
extern const ax_prim_info ax_psum_info, ax_pmax_info, ax_pmin_info, ax_all_gather_info,
    ax_psum_scatter_info, ax_ppermute_info, ax_all_to_all_info, ax_axis_index_info;

#endif

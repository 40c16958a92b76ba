/* Immutable n-d arrays: a dtype, a shape, strides into a reference-counted, 64-byte-aligned
 * buffer. Views (transpose, slice, broadcast, reverse) share the buffer with other strides.
 *
 * Ownership, the one convention for arrays and values (ax_value, lang/value.h) in all of ax:
 *  - a function returning an ax_array* (or ax_value*) returns a new reference (count already
 *    taken) that the caller releases (ax_array_release / ax_value_release); NULL means an
 *    error recorded in the context;
 *  - arguments are borrowed: the callee retains what it keeps;
 *  - a function that consumes a reference says so in its name, `_take` (ax_binary_take,
 *    ax_np_wrap_take, ...): it owns the arguments its comment names from the call on, on
 *    success and on error alike, so that `f_take(g(x))` neither leaks nor needs a temporary;
 *  - the only other consumers are the value constructors, which wrap what they are given
 *    (ax_value_array, _tuple, _list, _dict, _object, _builtin: see lang/value.h; ax_value_slice
 *    and ax_program_ref_new in lang/eval.h), and a scope's ax_scope_own (compiler/lax.h), whose
 *    job is to take;
 *  - an array stored in a struct is owned by it unless its comment says borrowed.
 * A tracer (compiler/trace.h) is an ax_array whose `tracer` field is set: its dtype and shape
 * are known, its buffer may be NULL (abstract) or hold the value (concrete tracing). */
#ifndef AX_ARRAY_H
#define AX_ARRAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "context.h"
#include "dtype.h"

#define AX_MAX_RANK 16
#define AX_DEVICE_SHARDED 0x8000
#define AX_ALIGN    64

struct ax_alloc_cache;

/* Reference counts of arrays and buffers are atomic: the devices of a pmap (runtime/device.h)
 * share what the compiled body holds (its constants and literals) and take and drop
 * references to it at once. Uncontended, an atomic increment costs a few nanoseconds, which
 * eager code does not notice (docs/parallel.md has the measurements). A count goes to zero on
 * the thread that owns the array's context (see docs/parallel.md), so the caches need no lock. */
static inline void ax_refs_take(int64_t *refs) {
    __atomic_fetch_add(refs, 1, __ATOMIC_RELAXED);
}
/* The count left after dropping one reference. */
static inline int64_t ax_refs_drop(int64_t *refs) {
    return __atomic_sub_fetch(refs, 1, __ATOMIC_ACQ_REL);
}
static inline int64_t ax_refs_load(const int64_t *refs) {
    return __atomic_load_n(refs, __ATOMIC_RELAXED);
}

typedef struct ax_buffer {
    int64_t refs;
    size_t nbytes;
    void *data; /* 64-byte aligned (16-byte for at most 16 bytes: a scalar's) */
    void *base; /* what was allocated (data is inside it); free(base) releases it */
    struct ax_alloc_cache *cache; /* the context's cache it returns to, or NULL */
    int size_class;               /* its capacity class in that cache, or -1 */
    size_t capacity;              /* bytes allocated for data (>= nbytes) */
} ax_buffer;

/* The part of a tracer the runtime knows (compiler/trace.h has the rest). */
struct ax_tracer {
    struct ax_trace *trace;
    uint64_t trace_id; /* the trace's id: a trace at a reused address is not this one */
    void *data;
    void (*free_data)(void *data);
};

/* ndim never changes once an array is made, and shape and strides come last: a rank-0 array's
 * header is allocated without them (scalars are most of the arrays a program makes). Never
 * copy an ax_array by value. */
typedef struct ax_array {
    int64_t refs;
    ax_dtype dtype;
    bool weak; /* weakly typed (a Python-style literal), see ax_dtype_promote */
    /* where jax.device_put committed it (device + 1), or pmap's results spread over devices
     * (AX_DEVICE_SHARDED | count); 0: the default device. Only x.devices() reads it: every
     * device reads host memory (runtime/device.h) */
    uint16_t device;
    int ndim;
    int64_t size;                 /* product of shape */
    int64_t offset;               /* in elements, from buf->data to element [0, 0, ...] */
    ax_buffer *buf;               /* NULL for an abstract tracer */
    struct ax_tracer *tracer;     /* NULL for a concrete array */
    struct ax_alloc_cache *cache; /* the context's cache the header returns to, or NULL */
    int64_t shape[AX_MAX_RANK];
    int64_t strides[AX_MAX_RANK]; /* in elements; 0 on broadcast dimensions; may be negative */
} ax_array;

/* Recently released array headers and small buffers, kept for reuse: transformations make
 * and drop many small arrays per call, and malloc's own caches are too small for that. Owned
 * by the context (ax_ctx.alloc); every header and buffer taken from it holds a reference, so
 * arrays released after the context is gone still free correctly. */
struct ax_alloc_cache *ax_alloc_cache_new(void);
/* The context's reference: frees what is cached; the rest goes when its arrays do. */
void ax_alloc_cache_close(struct ax_alloc_cache *c);

/* A new contiguous (row-major) array with uninitialised contents. */
ax_array *ax_array_new(ax_ctx *cx, ax_dtype dtype, int ndim, const int64_t *shape);
ax_array *ax_array_zeros(ax_ctx *cx, ax_dtype dtype, int ndim, const int64_t *shape);
/* A new array with the dtype and shape of `like`. */
ax_array *ax_array_new_like(ax_ctx *cx, const ax_array *like);
/* A rank-0 array holding v converted to dtype. */
ax_array *ax_array_scalar(ax_ctx *cx, ax_dtype dtype, double v);
ax_array *ax_array_scalar_i64(ax_ctx *cx, ax_dtype dtype, int64_t v);
/* A contiguous array copied from host data of the given dtype. */
ax_array *ax_array_from_data(ax_ctx *cx, ax_dtype dtype, int ndim, const int64_t *shape,
                             const void *data);
/* A contiguous array over `data`, which it does not own or copy: the caller keeps that memory
 * alive and unchanged while the array, or anything sharing its buffer, lives (jit's loops lend
 * their buffers to the eager kernels this way). */
ax_array *ax_array_borrow(ax_ctx *cx, ax_dtype dtype, int ndim, const int64_t *shape,
                          void *data);

/* An array header with no buffer (for tracers): dtype and shape only. */
ax_array *ax_array_new_abstract(ax_ctx *cx, ax_dtype dtype, int ndim, const int64_t *shape);

ax_array *ax_array_retain(ax_array *a);
void ax_array_release(ax_array *a);

/* A view sharing a's buffer with other shape/strides/offset (all in elements). */
ax_array *ax_array_view(ax_ctx *cx, ax_array *a, int ndim, const int64_t *shape,
                        const int64_t *strides, int64_t offset);

/* Row-major contiguous with offset 0 strides (data may start at an offset). */
bool ax_array_is_contiguous(const ax_array *a);
/* a itself (retained) when contiguous, else a contiguous copy. */
ax_array *ax_array_contiguous(ax_ctx *cx, ax_array *a);
/* A contiguous copy, always a fresh buffer. */
ax_array *ax_array_copy(ax_ctx *cx, ax_array *a);
/* True when the array is the only holder of its buffer and may be overwritten in place. */
bool ax_array_is_unique(const ax_array *a);

/* Address of element [0,...,0]. */
void *ax_array_data(const ax_array *a);
/* Element at row-major logical position `flat` (0 <= flat < size), converted. */
double ax_array_get_f64(const ax_array *a, int64_t flat);
int64_t ax_array_get_i64(const ax_array *a, int64_t flat);
/* Element offset (in elements, from ax_array_data) of row-major logical position `flat`. */
int64_t ax_array_flat_offset(const ax_array *a, int64_t flat);

/* ---- sizes: every size computation is checked once, here ----
 *
 * The invariant every array (and tracer, and shape rule output) satisfies: its rank is in
 * [0, AX_MAX_RANK], its dimensions are >= 0, and the product of its nonzero dimensions times
 * its element size fits in int64. So the product of any subset of an array's dimensions, and
 * any element or byte offset inside it, can be computed without overflow. A shape that does not
 * come from an existing array (user input, a shape computed from user integers) goes through
 * ax_shape_check before anything multiplies its dimensions; dimensions computed from user
 * integers (tile's reps * size, pad's widths, ...) are computed with ax_add_i64/ax_mul_i64. */

/* a + b and a * b, false when the exact result does not fit in int64 (*out is then unset). */
static inline bool ax_add_i64(int64_t a, int64_t b, int64_t *out) {
    return !__builtin_add_overflow(a, b, out);
}
static inline bool ax_mul_i64(int64_t a, int64_t b, int64_t *out) {
    return !__builtin_mul_overflow(a, b, out);
}
/* The number of elements of a shape whose dimensions are >= 0, in *size; false when the
 * product of its nonzero dimensions times elem_size bytes does not fit in int64. */
bool ax_shape_size_checked(int ndim, const int64_t *shape, size_t elem_size, int64_t *size);
/* AX_MAX_RANK is ax's one limit on rank (documented in docs/reference.md): a rank outside
 * [0, AX_MAX_RANK] records the ValueError "[what: ]ax arrays have at most 16 dimensions, not
 * 17" and gives false. */
bool ax_rank_check(ax_ctx *cx, const char *what, int ndim);
/* Checks a shape for an array of dtype: rank, no negative dimension, a size that fits (see
 * above). Otherwise records a ValueError naming the shape (prefixed by `what` when not NULL)
 * and returns false. */
bool ax_shape_check(ax_ctx *cx, const char *what, ax_dtype dtype, int ndim, const int64_t *shape);

/* Row-major contiguous strides for a shape. */
void ax_shape_strides(int ndim, const int64_t *shape, int64_t *strides);
/* The number of elements of a valid shape (one satisfying the invariant above). */
int64_t ax_shape_size(int ndim, const int64_t *shape);
bool ax_shape_equal(int n1, const int64_t *s1, int n2, const int64_t *s2);
/* NumPy broadcasting of two shapes; false if they do not broadcast. */
bool ax_shape_broadcast(int n1, const int64_t *s1, int n2, const int64_t *s2, int *nout,
                        int64_t *out);
/* "(3, 4)" as Python prints a shape tuple; "(3,)" for rank 1; "()" for rank 0. */
void ax_shape_format(char *out, size_t cap, int ndim, const int64_t *shape);
/* "f32[3,4]" as the IR prints a type. */
void ax_type_format(char *out, size_t cap, ax_dtype dtype, int ndim, const int64_t *shape);
void ax_array_type_format(char *out, size_t cap, const ax_array *a);

/* Converts one element between dtypes with C semantics as NumPy/JAX use them
 * (float->int truncates toward zero, ->bool is != 0). */
void ax_convert_element(ax_dtype to, void *dst, ax_dtype from, const void *src);

/* Iterates over the row-major positions of an n-d shape, tracking up to 4 strided operands.
 * Usage:
 *   ax_iter it; ax_iter_init(&it, ndim, shape, 2, (const int64_t*[]){sa, sb});
 *   do { ... it.pos[0], it.pos[1] are element offsets ... } while (ax_iter_next(&it));
 * Skips nothing: callers handle size 0 before the loop. */
typedef struct ax_iter {
    int ndim, nops;
    int64_t shape[AX_MAX_RANK];
    int64_t idx[AX_MAX_RANK];
    int64_t strides[4][AX_MAX_RANK];
    int64_t pos[4];
} ax_iter;
void ax_iter_init(ax_iter *it, int ndim, const int64_t *shape, int nops,
                  const int64_t *const *strides);
bool ax_iter_next(ax_iter *it);

#endif

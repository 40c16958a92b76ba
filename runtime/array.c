/* Array allocation, views, element access and the strided iterator. */
#include "array.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "strided.h"

/* Buffers this big go on 2 MB pages: on this kind of VM a first touch of each 4 KB page costs
 * microseconds, which dominated every large kernel. */
#define HUGE_PAGE (2u << 20)

/* ---- the allocation cache ---- */

enum {
    CACHED_HEADERS = 512,
    SIZE_CLASSES = 15, /* buffers of 64 B .. 1 MB (powers of two) */
    SMALL_CLASSES = 8, /* those up to 8 KB: kept whatever their bytes */
    CACHED_BUFFERS = 64,
    LARGE_CLASS = SIZE_CLASSES, /* buffers on 2 MB pages, reused by exact capacity */
    CACHED_LARGE = 4,
    TINY_CLASS = SIZE_CLASSES + 1, /* scalars: the data inside the ax_buffer's own block */
    TINY_BYTES = 16,
};

/* A scalar's buffer and data in one block of 80 bytes (instead of a buffer and 128 bytes of
 * padded data): every int of a loop or a list is one. Its data is 16-byte aligned. */
typedef struct tiny_buffer {
    ax_buffer b;
    _Alignas(16) unsigned char data[TINY_BYTES];
} tiny_buffer;

/* A rank-0 array's header ends where shape[] begins (ax_array keeps shape and strides last):
 * 64 bytes instead of 320. */
#define SCALAR_HEADER offsetof(ax_array, shape)

/* Large buffers kept for reuse at most: a fresh one costs a page fault per 2 MB page on first
 * touch, which made a jitted x*x + x*2.0 on 100 MB 1.5x a memcpy instead of ~1.1x. */
#define CACHED_LARGE_BYTES ((size_t)1 << 30)

/* Buffers of 16 KB .. 1 MB kept for reuse at most. From malloc, they come from the top of
 * the heap, which glibc gives back to the system once 128 KB of it are free: a program whose
 * values are freed together (a jitted function's, at the end of each call) then faults its
 * pages in again on every call (jit(grad(f)) of a 128-wide MLP: ~100 page faults a call, a
 * third of its time). */
#define CACHED_MEDIUM_BYTES ((size_t)64 << 20)

struct ax_alloc_cache {
    int64_t refs; /* the context's, plus one per header or buffer taken from it */
    bool closed;
    int nheaders, nscalar_headers;
    ax_array *headers[CACHED_HEADERS];
    ax_array *scalar_headers[CACHED_HEADERS]; /* SCALAR_HEADER bytes each */
    int ntiny;
    ax_buffer *tiny[CACHED_BUFFERS];
    int nbuffers[SIZE_CLASSES];
    ax_buffer *buffers[SIZE_CLASSES][CACHED_BUFFERS];
    size_t medium_bytes; /* held in classes above SMALL_CLASSES */
    int nlarge;
    size_t large_bytes;
    ax_buffer *large[CACHED_LARGE];
};

struct ax_alloc_cache *ax_alloc_cache_new(void) {
    struct ax_alloc_cache *c = calloc(1, sizeof *c);
    if (c) c->refs = 1;
    return c;
}

static void free_cached(struct ax_alloc_cache *c) {
    for (int i = 0; i < c->nheaders; i++) free(c->headers[i]);
    c->nheaders = 0;
    for (int i = 0; i < c->nscalar_headers; i++) free(c->scalar_headers[i]);
    c->nscalar_headers = 0;
    for (int i = 0; i < c->ntiny; i++) free(c->tiny[i]); /* its data is inside */
    c->ntiny = 0;
    for (int i = 0; i < c->nlarge; i++) {
        free(c->large[i]->base);
        free(c->large[i]);
    }
    c->nlarge = 0;
    c->large_bytes = 0;
    for (int k = 0; k < SIZE_CLASSES; k++) {
        for (int i = 0; i < c->nbuffers[k]; i++) {
            free(c->buffers[k][i]->base);
            free(c->buffers[k][i]);
        }
        c->nbuffers[k] = 0;
    }
    c->medium_bytes = 0;
}

static void cache_unref(struct ax_alloc_cache *c) {
    assert(!c || c->refs > 0);
    if (c && --c->refs == 0) {
        free_cached(c);
        free(c);
    }
}

void ax_alloc_cache_close(struct ax_alloc_cache *c) {
    if (!c) return;
    c->closed = true;
    free_cached(c);
    cache_unref(c);
}

/* The class of a small buffer (capacity 64 << class), or -1 for one the cache does not keep. */
static int size_class(size_t nbytes) {
    int k = 0;
    while (k < SIZE_CLASSES && ((size_t)64 << k) < nbytes) k++;
    return k < SIZE_CLASSES ? k : -1;
}

/* Takes cached large buffer i out, the others staying in the order they were freed in. */
static ax_buffer *remove_large(struct ax_alloc_cache *c, int i) {
    ax_buffer *b = c->large[i];
    memmove(&c->large[i], &c->large[i + 1], (size_t)(c->nlarge - i - 1) * sizeof *c->large);
    c->nlarge--;
    c->large_bytes -= b->capacity;
    return b;
}

/* A cached large buffer of exactly `cap` bytes, or NULL. */
static ax_buffer *take_large(struct ax_alloc_cache *c, size_t cap) {
    for (int i = 0; c && i < c->nlarge; i++)
        if (c->large[i]->capacity == cap) return remove_large(c, i);
    return NULL;
}

/* A new buffer from the system: on 2 MB pages when big, else malloc'd and aligned by hand
 * (glibc's memalign takes a slow path, consolidating its free lists, on every request, which
 * dominated small eager operations). */
static ax_buffer *buffer_alloc(ax_ctx *cx, size_t nbytes, int k, size_t huge_cap) {
    ax_buffer *b = malloc(sizeof *b);
    if (!b) return ax_error_oom(cx);
    if (nbytes >= HUGE_PAGE) {
        b->capacity = huge_cap;
        b->base = b->data = aligned_alloc(HUGE_PAGE, huge_cap);
        if (b->data) madvise(b->data, huge_cap, MADV_HUGEPAGE);
    } else {
        b->capacity = k >= 0 ? (size_t)64 << k : nbytes;
        b->base = malloc(b->capacity + AX_ALIGN);
        b->data =
            b->base ? (void *)(((uintptr_t)b->base + AX_ALIGN) & ~(uintptr_t)(AX_ALIGN - 1)) : NULL;
    }
    if (!b->data) {
        free(b);
        return ax_error_oom(cx);
    }
    assert(((uintptr_t)b->data & (AX_ALIGN - 1)) == 0 && b->capacity >= nbytes);
    return b;
}

static ax_buffer *tiny_buffer_new(ax_ctx *cx, size_t nbytes) {
    struct ax_alloc_cache *c = cx ? cx->alloc : NULL;
    ax_buffer *b = c && c->ntiny > 0 ? c->tiny[--c->ntiny] : malloc(sizeof(tiny_buffer));
    if (!b) return ax_error_oom(cx);
    *b = (ax_buffer){.refs = 1,
                     .nbytes = nbytes,
                     .data = ((tiny_buffer *)b)->data,
                     .base = NULL,
                     .cache = c,
                     .size_class = c ? TINY_CLASS : -1,
                     .capacity = TINY_BYTES};
    if (c) c->refs++;
    return b;
}

static ax_buffer *buffer_new(ax_ctx *cx, size_t nbytes) {
    if (nbytes <= TINY_BYTES) return tiny_buffer_new(cx, nbytes);
    struct ax_alloc_cache *c = cx ? cx->alloc : NULL;
    int k = size_class(nbytes);
    size_t huge_cap = (nbytes + HUGE_PAGE - 1) / HUGE_PAGE * HUGE_PAGE;
    ax_buffer *b = NULL;
    if (c && k >= 0 && c->nbuffers[k] > 0) {
        b = c->buffers[k][--c->nbuffers[k]];
        if (k >= SMALL_CLASSES) c->medium_bytes -= b->capacity;
    } else if (nbytes >= HUGE_PAGE)
        b = take_large(c, huge_cap); /* its pages are already mapped */
    if (!b && !(b = buffer_alloc(cx, nbytes, k, huge_cap))) return NULL;
    assert(b->capacity >= nbytes);
    b->refs = 1;
    b->nbytes = nbytes;
    b->size_class = !c ? -1 : nbytes < HUGE_PAGE ? k : LARGE_CLASS;
    b->cache = b->size_class >= 0 ? c : NULL;
    if (b->cache) c->refs++;
    return b;
}

/* Keeps b, making room by freeing the buffers freed longest ago: a program whose arrays change
 * size reuses its current ones (a cache full of earlier sizes, which it kept, made every 40 MB
 * result of a later loop fault its pages in again: x * 2 + 1 on 10M floats took 4x as long). */
static bool keep_large(struct ax_alloc_cache *c, ax_buffer *b) {
    if (b->capacity > CACHED_LARGE_BYTES) return false;
    while (c->nlarge == CACHED_LARGE || c->large_bytes + b->capacity > CACHED_LARGE_BYTES) {
        ax_buffer *oldest = remove_large(c, 0);
        free(oldest->base);
        free(oldest);
    }
    c->large[c->nlarge++] = b;
    c->large_bytes += b->capacity;
    return true;
}

static bool keep_small(struct ax_alloc_cache *c, ax_buffer *b) {
    if (c->nbuffers[b->size_class] == CACHED_BUFFERS) return false;
    if (b->size_class >= SMALL_CLASSES) {
        if (c->medium_bytes + b->capacity > CACHED_MEDIUM_BYTES) return false;
        c->medium_bytes += b->capacity;
    }
    c->buffers[b->size_class][c->nbuffers[b->size_class]++] = b;
    return true;
}

static bool keep_tiny(struct ax_alloc_cache *c, ax_buffer *b) {
    if (c->ntiny == CACHED_BUFFERS) return false;
    c->tiny[c->ntiny++] = b;
    return true;
}

static void buffer_release(ax_buffer *b) {
    assert(!b || ax_refs_load(&b->refs) > 0);
    if (!b || ax_refs_drop(&b->refs) > 0) return;
    struct ax_alloc_cache *c = b->cache;
    bool kept = c && !c->closed &&
                (b->size_class == LARGE_CLASS  ? keep_large(c, b)
                 : b->size_class == TINY_CLASS ? keep_tiny(c, b)
                                               : keep_small(c, b));
    if (!kept) {
        free(b->base);
        free(b);
    }
    cache_unref(c);
}

bool ax_shape_size_checked(int ndim, const int64_t *shape, size_t elem_size, int64_t *size) {
    int64_t nonzero = elem_size ? (int64_t)elem_size : 1, n = 1;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] == 0)
            n = 0;
        else if (!ax_mul_i64(nonzero, shape[i], &nonzero))
            return false;
    }
    *size = n ? nonzero / (elem_size ? (int64_t)elem_size : 1) : 0;
    return true;
}

bool ax_rank_check(ax_ctx *cx, const char *what, int ndim) {
    if (ndim >= 0 && ndim <= AX_MAX_RANK) return true;
    ax_error(cx, AX_ERR_VALUE, "%s%sax arrays have at most %d dimensions, not %d", what ? what : "",
             what ? ": " : "", AX_MAX_RANK, ndim);
    return false;
}

bool ax_shape_check(ax_ctx *cx, const char *what, ax_dtype dtype, int ndim, const int64_t *shape) {
    if (!ax_rank_check(cx, what, ndim)) return false;
    const char *sep = what ? ": " : "";
    if (!what) what = "";
    char text[400];
    for (int i = 0; i < ndim; i++) {
        if (shape[i] >= 0) continue;
        ax_shape_format(text, sizeof text, ndim, shape);
        ax_error(cx, AX_ERR_VALUE, "%s%snegative dimension %lld in shape %s", what, sep,
                 (long long)shape[i], text);
        return false;
    }
    int64_t size;
    if (ax_shape_size_checked(ndim, shape, ax_dtype_size(dtype), &size)) return true;
    ax_shape_format(text, sizeof text, ndim, shape);
    ax_error(cx, AX_ERR_VALUE,
             "shape %s is too big: its %s elements would take more than 2**63 bytes", text,
             ax_dtype_name(dtype));
    return false;
}

int64_t ax_shape_size(int ndim, const int64_t *shape) {
    int64_t n = 1;
    for (int i = 0; i < ndim; i++) {
        bool fits = ax_mul_i64(n, shape[i], &n);
        assert(shape[i] >= 0 && fits && "ax_shape_size of a shape that was never checked");
        (void)fits;
    }
    return n;
}

void ax_shape_strides(int ndim, const int64_t *shape, int64_t *strides) {
    assert(ndim >= 0 && ndim <= AX_MAX_RANK);
    int64_t s = 1;
    for (int i = ndim - 1; i >= 0; i--) {
        strides[i] = s;
        s *= shape[i] > 0 ? shape[i] : 1;
    }
}

bool ax_shape_equal(int n1, const int64_t *s1, int n2, const int64_t *s2) {
    if (n1 != n2) return false;
    for (int i = 0; i < n1; i++)
        if (s1[i] != s2[i]) return false;
    return true;
}

bool ax_shape_broadcast(int n1, const int64_t *s1, int n2, const int64_t *s2, int *nout,
                        int64_t *out) {
    int n = n1 > n2 ? n1 : n2;
    for (int i = 0; i < n; i++) {
        int64_t a = i < n - n1 ? 1 : s1[i - (n - n1)];
        int64_t b = i < n - n2 ? 1 : s2[i - (n - n2)];
        if (a != b && a != 1 && b != 1) return false;
        out[i] = a == 1 ? b : a;
    }
    *nout = n;
    return true;
}

void ax_shape_format(char *out, size_t cap, int ndim, const int64_t *shape) {
    size_t n = (size_t)snprintf(out, cap, "(");
    for (int i = 0; i < ndim && n < cap; i++)
        n += (size_t)snprintf(out + n, cap - n, i ? ", %lld" : "%lld", (long long)shape[i]);
    if (n < cap) snprintf(out + n, cap - n, ndim == 1 ? ",)" : ")");
}

void ax_type_format(char *out, size_t cap, ax_dtype dtype, int ndim, const int64_t *shape) {
    size_t n = (size_t)snprintf(out, cap, "%s[", ax_dtype_short(dtype));
    for (int i = 0; i < ndim && n < cap; i++)
        n += (size_t)snprintf(out + n, cap - n, i ? ",%lld" : "%lld", (long long)shape[i]);
    if (n < cap) snprintf(out + n, cap - n, "]");
}

void ax_array_type_format(char *out, size_t cap, const ax_array *a) {
    ax_type_format(out, cap, a->dtype, a->ndim, a->shape);
}

/* A zeroed header for an array of rank ndim (a short one for rank 0), from the cache if it
 * has one. */
static ax_array *header_alloc(struct ax_alloc_cache *c, int ndim) {
    size_t size = ndim == 0 ? SCALAR_HEADER : sizeof(ax_array);
    ax_array *a = NULL;
    if (c && ndim == 0 && c->nscalar_headers > 0)
        a = c->scalar_headers[--c->nscalar_headers];
    else if (c && ndim > 0 && c->nheaders > 0)
        a = c->headers[--c->nheaders];
    else
        a = malloc(size);
    if (a) memset(a, 0, size);
    return a;
}

/* Returns a header to the cache it came from, or frees it. */
static void header_free(ax_array *a) {
    struct ax_alloc_cache *c = a->cache;
    if (c && !c->closed && a->ndim == 0 && c->nscalar_headers < CACHED_HEADERS)
        c->scalar_headers[c->nscalar_headers++] = a;
    else if (c && !c->closed && a->ndim > 0 && c->nheaders < CACHED_HEADERS)
        c->headers[c->nheaders++] = a;
    else
        free(a);
    cache_unref(c);
}

static ax_array *header_new(ax_ctx *cx, ax_dtype dtype, int ndim, const int64_t *shape) {
    assert((unsigned)dtype < AX_NDTYPES);
    if (!ax_shape_check(cx, NULL, dtype, ndim, shape)) return NULL;
    struct ax_alloc_cache *c = cx ? cx->alloc : NULL;
    ax_array *a = header_alloc(c, ndim);
    if (!a) return ax_error_oom(cx);
    a->cache = c;
    if (c) c->refs++;
    a->refs = 1;
    a->dtype = dtype;
    a->ndim = ndim;
    if (ndim) memcpy(a->shape, shape, (size_t)ndim * sizeof *shape);
    a->size = ax_shape_size(ndim, shape);
    ax_shape_strides(ndim, shape, a->strides);
    return a;
}

ax_array *ax_array_new(ax_ctx *cx, ax_dtype dtype, int ndim, const int64_t *shape) {
    ax_array *a = header_new(cx, dtype, ndim, shape);
    if (!a) return NULL;
    a->buf = buffer_new(cx, (size_t)a->size * ax_dtype_size(dtype));
    if (!a->buf) {
        header_free(a);
        return NULL;
    }
    return a;
}

ax_array *ax_array_zeros(ax_ctx *cx, ax_dtype dtype, int ndim, const int64_t *shape) {
    ax_array *a = ax_array_new(cx, dtype, ndim, shape);
    if (a) memset(a->buf->data, 0, a->buf->nbytes);
    return a;
}

ax_array *ax_array_new_like(ax_ctx *cx, const ax_array *like) {
    return ax_array_new(cx, like->dtype, like->ndim, like->shape);
}

ax_array *ax_array_scalar(ax_ctx *cx, ax_dtype dtype, double v) {
    ax_array *a = ax_array_new(cx, dtype, 0, NULL);
    if (a) ax_convert_element(dtype, a->buf->data, AX_F64, &v);
    return a;
}

ax_array *ax_array_scalar_i64(ax_ctx *cx, ax_dtype dtype, int64_t v) {
    ax_array *a = ax_array_new(cx, dtype, 0, NULL);
    if (a) ax_convert_element(dtype, a->buf->data, AX_I64, &v);
    return a;
}

ax_array *ax_array_from_data(ax_ctx *cx, ax_dtype dtype, int ndim, const int64_t *shape,
                             const void *data) {
    ax_array *a = ax_array_new(cx, dtype, ndim, shape);
    if (a && a->size) memcpy(a->buf->data, data, (size_t)a->size * ax_dtype_size(dtype));
    return a;
}

ax_array *ax_array_borrow(ax_ctx *cx, ax_dtype dtype, int ndim, const int64_t *shape,
                          void *data) {
    ax_array *a = header_new(cx, dtype, ndim, shape);
    ax_buffer *b = a ? malloc(sizeof *b) : NULL;
    if (!b) {
        if (a) header_free(a);
        return a ? ax_error_oom(cx) : NULL;
    }
    /* no base to free and no cache: releasing it frees only the record */
    *b = (ax_buffer){.refs = 1,
                     .nbytes = (size_t)a->size * ax_dtype_size(dtype),
                     .data = data,
                     .size_class = -1};
    a->buf = b;
    return a;
}

ax_array *ax_array_retain(ax_array *a) {
    assert(!a || ax_refs_load(&a->refs) > 0); /* retaining a released array */
    if (a) ax_refs_take(&a->refs);
    return a;
}

ax_array *ax_array_new_abstract(ax_ctx *cx, ax_dtype dtype, int ndim, const int64_t *shape) {
    return header_new(cx, dtype, ndim, shape);
}

void ax_array_release(ax_array *a) {
    assert(!a || ax_refs_load(&a->refs) > 0); /* releasing more references than were taken */
    if (!a || ax_refs_drop(&a->refs) > 0) return;
    buffer_release(a->buf);
    if (a->tracer) {
        if (a->tracer->free_data) a->tracer->free_data(a->tracer->data);
        free(a->tracer);
    }
    header_free(a);
}

ax_array *ax_array_view(ax_ctx *cx, ax_array *a, int ndim, const int64_t *shape,
                        const int64_t *strides, int64_t offset) {
    assert(ax_refs_load(&a->refs) > 0 && (!a->buf || ax_refs_load(&a->buf->refs) > 0));
    ax_array *v = header_new(cx, a->dtype, ndim, shape);
    if (!v) return NULL;
    if (ndim) memcpy(v->strides, strides, (size_t)ndim * sizeof *strides);
    v->offset = offset;
    v->weak = a->weak;
    v->buf = a->buf;
    if (v->buf) ax_refs_take(&v->buf->refs);
    return v;
}

bool ax_array_is_contiguous(const ax_array *a) {
    int64_t s = 1;
    for (int i = a->ndim - 1; i >= 0; i--) {
        if (a->shape[i] != 1 && a->strides[i] != s) return false;
        s *= a->shape[i];
    }
    return true;
}

bool ax_array_is_unique(const ax_array *a) {
    return ax_refs_load(&a->refs) == 1 && a->buf && ax_refs_load(&a->buf->refs) == 1 &&
           !a->tracer && a->offset == 0 &&
           ax_array_is_contiguous(a);
}

void *ax_array_data(const ax_array *a) {
    assert(a->buf && "the data of an abstract tracer");
    return (char *)a->buf->data + a->offset * (int64_t)ax_dtype_size(a->dtype);
}

int64_t ax_array_flat_offset(const ax_array *a, int64_t flat) {
    assert(flat >= 0 && flat < a->size);
    int64_t off = 0;
    for (int i = a->ndim - 1; i >= 0; i--) {
        int64_t n = a->shape[i];
        off += (flat % n) * a->strides[i];
        flat /= n;
    }
    return off;
}

double ax_array_get_f64(const ax_array *a, int64_t flat) {
    double v;
    size_t es = ax_dtype_size(a->dtype);
    ax_convert_element(AX_F64, &v, a->dtype,
                       (char *)ax_array_data(a) + ax_array_flat_offset(a, flat) * (int64_t)es);
    return v;
}

int64_t ax_array_get_i64(const ax_array *a, int64_t flat) {
    int64_t v;
    size_t es = ax_dtype_size(a->dtype);
    ax_convert_element(AX_I64, &v, a->dtype,
                       (char *)ax_array_data(a) + ax_array_flat_offset(a, flat) * (int64_t)es);
    return v;
}

ax_array *ax_array_copy(ax_ctx *cx, ax_array *a) {
    ax_array *c = ax_array_new(cx, a->dtype, a->ndim, a->shape);
    if (!c || a->size == 0) return c;
    c->weak = a->weak;
    /* merged dimensions and tiles for transposed layouts (runtime/strided.c) */
    ax_strided_copy(c->buf->data, c->strides, ax_array_data(a), a->strides, a->ndim, a->shape,
                    ax_dtype_size(a->dtype));
    return c;
}

ax_array *ax_array_contiguous(ax_ctx *cx, ax_array *a) {
    if (ax_array_is_contiguous(a)) return ax_array_retain(a);
    return ax_array_copy(cx, a);
}

/* Loads any dtype as a double or an int64 (whichever is exact), stores the other way. */
void ax_convert_element(ax_dtype to, void *dst, ax_dtype from, const void *src) {
    assert((unsigned)to < AX_NDTYPES && (unsigned)from < AX_NDTYPES);
    bool is_float = ax_dtype_is_float(from);
    double f = 0;
    int64_t i = 0;
    switch (from) {
    case AX_BOOL:
        i = *(const uint8_t *)src != 0;
        break;
    case AX_U8:
        i = *(const uint8_t *)src;
        break;
    case AX_I32:
        i = *(const int32_t *)src;
        break;
    case AX_U32:
        i = *(const uint32_t *)src;
        break;
    case AX_I64:
        i = *(const int64_t *)src;
        break;
    case AX_F32:
        f = *(const float *)src;
        break;
    case AX_F64:
        f = *(const double *)src;
        break;
    default:
        break;
    }
    if (!is_float) f = (double)i;
    /* float -> int: truncate toward zero, saturating at the ends of int64, NaN -> 0, as XLA
     * converts (the kernels in elementwise.c do the same per dtype) */
    if (is_float && to != AX_F32 && to != AX_F64 && to != AX_BOOL) {
        if (isnan(f))
            i = 0;
        else if (f >= 9.2233720368547758e18)
            i = INT64_MAX;
        else if (f <= -9.2233720368547758e18)
            i = INT64_MIN;
        else
            i = (int64_t)f;
    }
    switch (to) {
    case AX_BOOL:
        *(uint8_t *)dst = is_float ? f != 0 : i != 0;
        break;
    case AX_U8:
        *(uint8_t *)dst = !is_float ? (uint8_t)i : i < 0 ? 0 : i > 255 ? 255 : (uint8_t)i;
        break;
    case AX_I32:
        *(int32_t *)dst = !is_float       ? (int32_t)i
                          : i > INT32_MAX ? INT32_MAX
                          : i < INT32_MIN ? INT32_MIN
                                          : (int32_t)i;
        break;
    case AX_U32:
        *(uint32_t *)dst = !is_float        ? (uint32_t)i
                           : i < 0          ? 0
                           : i > UINT32_MAX ? UINT32_MAX
                                            : (uint32_t)i;
        break;
    case AX_I64:
        *(int64_t *)dst = i;
        break;
    case AX_F32:
        *(float *)dst = is_float ? (float)f : (float)i;
        break;
    case AX_F64:
        *(double *)dst = is_float ? f : (double)i;
        break;
    default:
        break;
    }
}

void ax_iter_init(ax_iter *it, int ndim, const int64_t *shape, int nops,
                  const int64_t *const *strides) {
    assert(ndim >= 0 && ndim <= AX_MAX_RANK && nops >= 0 && nops <= 4);
    it->ndim = ndim;
    it->nops = nops;
    for (int d = 0; d < ndim; d++) {
        it->shape[d] = shape[d];
        it->idx[d] = 0;
        for (int k = 0; k < nops; k++) it->strides[k][d] = strides[k][d];
    }
    for (int k = 0; k < nops; k++) it->pos[k] = 0;
}

bool ax_iter_next(ax_iter *it) {
    for (int d = it->ndim - 1; d >= 0; d--) {
        if (++it->idx[d] < it->shape[d]) {
            for (int k = 0; k < it->nops; k++) it->pos[k] += it->strides[k][d];
            return true;
        }
        for (int k = 0; k < it->nops; k++) it->pos[k] -= it->strides[k][d] * (it->shape[d] - 1);
        it->idx[d] = 0;
    }
    return false;
}

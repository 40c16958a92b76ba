/* Convolution and windowed reductions (see conv.h).
 *
 * A float convolution is a matrix product per group: with M the output positions (out batch x
 * out spatial), K the taps (in features x window taps) and F the out features,
 *     out[M][F] = T[M][K] . W[K][F],
 * where T, the im2col matrix, holds the input element each (position, tap) reads. It is read
 * in one of two orders, so that its runs are contiguous input:
 *   - rows: T[(b, q)][(k, i)], runs over the input features i (channels-last inputs, NHWC);
 *     an input with strided features is made channels-last first;
 *   - cols: T stored transposed, [(i, k)][(q, b)], runs over the batch b: the weight-gradient
 *     convolution of a channels-last input, whose "batch" is the input's channels.
 * W is the kernel (or, for a weight gradient, the output cotangent) viewed as [K][F]: HWIO
 * kernels and NHWC cotangents are such matrices already; others are copied into that layout.
 * The product lands in the natural layout of the output (rows: (b, spatial..., f) = NHWC; cols:
 * (spatial..., b, f) = HWIO) and is permuted into the requested one when they differ.
 *
 * Three ways to compute it, measured on a 3x3 layer (docs/benchmarks.md):
 *   - f32 on AVX-512: direct kernels that keep a block of outputs in registers and read the
 *     input (zero-padded once) and W in place: no T at all (~150 GFLOP/s per core here);
 *   - a 1x1 window over channels-last rows: T is the input itself, one GEMM per block;
 *   - otherwise (f64, lhs dilation, other CPUs): blocks of T (a few hundred KB, so they stay in
 *     L2) gathered and multiplied by OpenBLAS, ~90 GFLOP/s per core, since OpenBLAS packs each
 *     block again. One full T and one GEMM was slower still (T does not fit in cache).
 * Blocks over M run in parallel on the pool (OpenBLAS single-threaded inside); long sums over K
 * are cut into slices with their own partial sums, added in order, so that results do not
 * depend on the number of threads. */
#include "conv.h"

#include <limits.h>
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "blas.h"
#include "pool.h"
#include "shape_ops.h"

int64_t ax_dilate_dim(int64_t n, int64_t dilation) {
    return n == 0 ? 0 : 1 + dilation * (n - 1);
}

int64_t ax_window_out_dim(const ax_window *w, int d, int64_t n) {
    int64_t padded = ax_dilate_dim(n, w->base_dilation[d]) + w->pad_lo[d] + w->pad_hi[d];
    if (padded < 0) return -1;
    int64_t span = ax_dilate_dim(w->size[d], w->window_dilation[d]);
    return padded < span ? 0 : (padded - span) / w->stride[d] + 1;
}

/* The input index that output position o, tap k reads along dimension d of an input of
 * length n, or -1 where it reads padding or a hole of the base dilation. */
static inline int64_t tap_index(const ax_window *w, int d, int64_t n, int64_t o, int64_t k) {
    int64_t p = o * w->stride[d] + k * w->window_dilation[d] - w->pad_lo[d];
    if (p < 0) return -1;
    int64_t bd = w->base_dilation[d];
    if (bd != 1) {
        if (p % bd) return -1;
        p /= bd;
    }
    return p < n ? p : -1;
}

/* Row-major multi-index of `flat` over `shape`. */
static void unflatten(int n, const int64_t *shape, int64_t flat, int64_t *idx) {
    for (int d = n - 1; d >= 0; d--) {
        idx[d] = shape[d] ? flat % shape[d] : 0;
        flat = shape[d] ? flat / shape[d] : 0;
    }
}

/* Advances a row-major multi-index; false after the last. */
static bool advance(int n, const int64_t *shape, int64_t *idx) {
    for (int d = n - 1; d >= 0; d--) {
        if (++idx[d] < shape[d]) return true;
        idx[d] = 0;
    }
    return false;
}

/* ---------------------------------------------------------------------------------------- */
/* Float convolution: im2col blocks and GEMM                                                */

/* Elements of one gathered block of T: 512 KB in f32, so that a block and OpenBLAS's packed
 * panels stay in a core's L2 (2 MB here). */
enum {
    BLOCK_ELEMS = 128 * 1024,
    MIN_BLOCK_ROWS = 64,
    MIN_BLOCK_COLS = 256,
    MIN_TASKS = 8,
    TASK_ALIGN = 64,
    MK_BLOCK_ROWS = 240 /* rows per task of the direct kernel: a multiple of its 12 and 24 */
};

typedef struct conv_plan {
    ax_dtype dtype;
    size_t es;
    int nsp;
    ax_window win; /* over the spatial dims; sizes from the kernel */
    int64_t in_sp[AX_MAX_RANK], out_sp[AX_MAX_RANK];
    int64_t nq, nk; /* output positions per example, window taps */
    int64_t groups; /* feature or batch groups (at most one kind is > 1) */
    bool batch_grouped;
    int64_t nbo, ig, fg, f; /* out batch, in features per group, out features per group, all */
    bool cols;              /* T gathered transposed, runs over the batch */
    const char *l;          /* lhs element 0 and its strides */
    int64_t l_b, l_i, l_sp[AX_MAX_RANK];
    const char *w; /* W[K][f], row-major */
    char *c;       /* the natural output [M][f] */
    /* blocking: per group M x K, blocks of mb x kb, K blocks grouped into slices */
    int64_t m, k, mb, kb, nmb, nkb, nslices, kb_per_slice;
    char *partial;      /* nslices > 1: per (group, slice) [m][fg] sums */
    int64_t direct_lda; /* > 0: T is the lhs itself (a 1x1 window over channels-last data), its
                           rows this far apart */
    bool microkernel;   /* f32 on AVX-512: the direct kernel below instead of im2col and GEMM */
    const struct padded_input *padded; /* microkernel: its input */
    const ax_blas *blas;
    const ax_ctx *cx; /* polled for a Ctrl-C between tasks */
    atomic_bool oom;
} conv_plan;

/* memcpy / memset for the short runs of the gathers (tens to hundreds of bytes): 64-byte
 * moves the compiler inlines, rather than a call per run. */
static inline void copy_bytes(char *dst, const char *src, size_t n) {
    for (; n >= 64; n -= 64, dst += 64, src += 64) memcpy(dst, src, 64);
    for (; n >= 8; n -= 8, dst += 8, src += 8) memcpy(dst, src, 8);
    if (n) memcpy(dst, src, 4); /* elements are 4 or 8 bytes */
}

static inline void zero_bytes(char *dst, size_t n) {
    for (; n >= 64; n -= 64, dst += 64) memset(dst, 0, 64);
    for (; n >= 8; n -= 8, dst += 8) memset(dst, 0, 8);
    if (n) memset(dst, 0, 4);
}

/* Copies n elements of size es from src (stride `stride` elements) to contiguous dst. */
static inline void copy_run(char *dst, const char *src, int64_t n, int64_t stride, size_t es) {
    if (stride == 1) {
        copy_bytes(dst, src, (size_t)n * es);
    } else if (es == 4) {
        uint32_t *d = (uint32_t *)dst;
        const uint32_t *s = (const uint32_t *)src;
        for (int64_t i = 0; i < n; i++) d[i] = s[i * stride];
    } else {
        uint64_t *d = (uint64_t *)dst;
        const uint64_t *s = (const uint64_t *)src;
        for (int64_t i = 0; i < n; i++) d[i] = s[i * stride];
    }
}

/* The offset (elements, negative with reversed strides) of spatial position q, tap k in the
 * lhs over the spatial dims before `upto`; false where the tap reads padding. */
static inline bool tap_offset(const conv_plan *p, const int64_t *q, const int64_t *k, int upto,
                              int64_t *off) {
    *off = 0;
    for (int d = 0; d < upto; d++) {
        int64_t i = tap_index(&p->win, d, p->in_sp[d], q[d], k[d]);
        if (i < 0) return false;
        *off += i * p->l_sp[d];
    }
    return true;
}

/* The lhs batch and feature offset (elements) where group `gi` reads. */
static int64_t group_origin(const conv_plan *p, int64_t gi) {
    return p->batch_grouped ? gi * p->nbo * p->l_b : gi * p->ig * p->l_i;
}

/* The j in [0, count) with 0 <= a + j * step < n (step > 0): [*lo, *hi). */
static inline void range_in(int64_t a, int64_t step, int64_t n, int64_t count, int64_t *lo,
                            int64_t *hi) {
    if (step == 1) { /* the common case, without the divisions */
        *lo = a >= 0 ? 0 : -a;
        *hi = a >= n ? 0 : n - a;
    } else {
        *lo = a >= 0 ? 0 : (-a + step - 1) / step;
        *hi = a >= n ? 0 : (n - a + step - 1) / step;
    }
    if (*hi > count) *hi = count;
    if (*lo > *hi) *lo = *hi;
}

/* count segments of `seg` elements along the last spatial dim, the i-th reading input position
 * a + i * step of it (contiguous when spanning): zeros where the position is padding. */
static inline __attribute__((always_inline)) void
copy_segments(const conv_plan *p, char *dst, const char *src, int64_t a, int64_t step,
              int64_t count, int64_t seg, int64_t run_stride, bool spanning) {
    int last = p->nsp - 1;
    size_t bytes = (size_t)seg * p->es;
    if (spanning) { /* the in-range segments are one contiguous run of the input */
        int64_t lo, hi;
        range_in(a, step, p->in_sp[last], count, &lo, &hi);
        if (lo) zero_bytes(dst, (size_t)lo * bytes);
        if (hi > lo)
            copy_bytes(dst + lo * (int64_t)bytes,
                       src + (a + lo * step) * p->l_sp[last] * (int64_t)p->es,
                       (size_t)(hi - lo) * bytes);
        if (hi < count) zero_bytes(dst + hi * (int64_t)bytes, (size_t)(count - hi) * bytes);
        return;
    }
    for (int64_t j = 0; j < count; j++, dst += bytes) {
        int64_t pos = a + j * step;
        if (pos < 0 || pos % p->win.base_dilation[last] != 0 ||
            (pos /= p->win.base_dilation[last]) >= p->in_sp[last])
            zero_bytes(dst, bytes);
        else
            copy_run(dst, src + pos * p->l_sp[last] * (int64_t)p->es, seg, run_stride, p->es);
    }
}

/* Rows order: T[m - m0][kk - k0] for m = (b, q), kk = (tap, i); k0, k1 multiples of ig. Taps
 * along the last spatial dim read one contiguous run of a channels-last input when the kernel
 * is not dilated there. */
static void gather_rows(const conv_plan *p, int64_t gi, int64_t m0, int64_t m1, int64_t k0,
                        int64_t k1, char *t) {
    const char *base = p->l + group_origin(p, gi) * (int64_t)p->es;
    int last = p->nsp - 1;
    int64_t width = k1 - k0, tap0 = k0 / p->ig, tap1 = k1 / p->ig, q[AX_MAX_RANK], k[AX_MAX_RANK];
    int64_t klast = last >= 0 ? p->win.size[last] : 1;
    bool spanning = last >= 0 && p->l_i == 1 && p->win.base_dilation[last] == 1 &&
                    p->win.window_dilation[last] * p->l_sp[last] == p->ig;
    int64_t b = m0 / p->nq, k_first[AX_MAX_RANK];
    unflatten(p->nsp, p->out_sp, m0 % p->nq, q); /* then stepped: divisions cost more here */
    unflatten(p->nsp, p->win.size, tap0, k_first);
    for (int64_t m = m0; m < m1; m++, b += !advance(p->nsp, p->out_sp, q)) {
        memcpy(k, k_first, sizeof k);
        const char *row = base + b * p->l_b * (int64_t)p->es;
        char *dst = t + (m - m0) * width * (int64_t)p->es;
        for (int64_t tap = tap0; tap < tap1;) {
            int64_t n = last < 0 ? 1 : klast - k[last], off;
            if (n > tap1 - tap) n = tap1 - tap;
            size_t bytes = (size_t)(n * p->ig) * p->es;
            if (last < 0 || !tap_offset(p, q, k, last, &off)) {
                if (last < 0)
                    copy_run(dst, row, p->ig, p->l_i, p->es);
                else
                    zero_bytes(dst, bytes);
            } else {
                int64_t a = q[last] * p->win.stride[last] + k[last] * p->win.window_dilation[last] -
                            p->win.pad_lo[last];
                copy_segments(p, dst, row + off * (int64_t)p->es, a, p->win.window_dilation[last],
                              n, p->ig, p->l_i, spanning);
            }
            dst += bytes;
            tap += n;
            if (last >= 0 && (k[last] += n) == klast) {
                k[last] = 0;
                advance(last, p->win.size, k);
            }
        }
    }
}

/* Cols order: T^T[kk - k0][m - m0] for kk = (i, tap), m = (q, b). Output positions along the
 * last spatial dim read one contiguous run when the input's batch is innermost and the window
 * steps by one there. */
static void gather_cols(const conv_plan *p, int64_t gi, int64_t m0, int64_t m1, int64_t k0,
                        int64_t k1, char *t) {
    const char *base = p->l + group_origin(p, gi) * (int64_t)p->es;
    int last = p->nsp - 1;
    int64_t width = m1 - m0, q[AX_MAX_RANK], k[AX_MAX_RANK];
    int64_t qlast = last >= 0 ? p->out_sp[last] : 1;
    bool spanning = last >= 0 && p->l_b == 1 && p->win.base_dilation[last] == 1 &&
                    p->win.stride[last] * p->l_sp[last] == p->nbo;
    int64_t i = k0 / p->nk, b0 = m0 % p->nbo, q0[AX_MAX_RANK];
    unflatten(p->nsp, p->win.size, k0 % p->nk, k); /* then stepped, as the positions below */
    unflatten(p->nsp, p->out_sp, m0 / p->nbo, q0);
    for (int64_t kk = k0; kk < k1; kk++, i += !advance(p->nsp, p->win.size, k)) {
        const char *feature = base + i * p->l_i * (int64_t)p->es;
        char *dst = t + (kk - k0) * width * (int64_t)p->es;
        int64_t b = b0;
        memcpy(q, q0, sizeof q);
        for (int64_t m = m0; m < m1;) {
            int64_t off;
            /* whole output positions from here, or the rest of one */
            int64_t steps = b == 0 && last >= 0 ? qlast - q[last] : 0;
            if (steps > (m1 - m) / p->nbo) steps = (m1 - m) / p->nbo;
            int64_t n = steps ? steps * p->nbo : (p->nbo - b < m1 - m ? p->nbo - b : m1 - m);
            if (last >= 0 && !tap_offset(p, q, k, last, &off)) {
                zero_bytes(dst, (size_t)n * p->es);
            } else if (last < 0) {
                copy_run(dst, feature + b * p->l_b * (int64_t)p->es, n, p->l_b, p->es);
            } else {
                int64_t a = q[last] * p->win.stride[last] + k[last] * p->win.window_dilation[last] -
                            p->win.pad_lo[last];
                const char *src = feature + (off + b * p->l_b) * (int64_t)p->es;
                if (steps)
                    copy_segments(p, dst, src, a, p->win.stride[last], steps, p->nbo, p->l_b,
                                  spanning);
                else
                    copy_segments(p, dst, src, a, p->win.stride[last], 1, n, p->l_b, false);
            }
            dst += n * (int64_t)p->es;
            m += n;
            /* step q past the positions done */
            if (steps) {
                if (last >= 0 && (q[last] += steps) == qlast) {
                    q[last] = 0;
                    advance(last, p->out_sp, q);
                }
            } else if ((b += n) == p->nbo) {
                b = 0;
                advance(p->nsp, p->out_sp, q);
            }
        }
    }
}

static void gemm(const conv_plan *p, bool trans_a, int64_t m, int64_t n, int64_t k, const char *a,
                 int64_t lda, const char *b, int64_t ldb, bool accumulate, char *c, int64_t ldc) {
    int ta = trans_a ? AX_CBLAS_TRANS : AX_CBLAS_NO_TRANS;
    if (p->dtype == AX_F32)
        p->blas->sgemm(AX_CBLAS_ROW_MAJOR, ta, AX_CBLAS_NO_TRANS, (int)m, (int)n, (int)k, 1.0f,
                       (const float *)a, (int)lda, (const float *)b, (int)ldb,
                       accumulate ? 1.0f : 0.0f, (float *)c, (int)ldc);
    else
        p->blas->dgemm(AX_CBLAS_ROW_MAJOR, ta, AX_CBLAS_NO_TRANS, (int)m, (int)n, (int)k, 1.0,
                       (const double *)a, (int)lda, (const double *)b, (int)ldb,
                       accumulate ? 1.0 : 0.0, (double *)c, (int)ldc);
}

/* ---- the direct kernel: f32, channels-last, AVX-512 ----
 *
 * The rows order without im2col: R output rows at a time (consecutive positions), NV 16-lane
 * vectors of output features each, accumulated in registers over every tap and input feature,
 * one broadcast of an input element per row and one FMA per vector. It reads a zero-padded
 * channels-last copy of the input (made once per call, so no tap needs a bounds check) and
 * the kernel matrix W[tap][i][f] in place; along the last spatial dim, taps one element apart
 * read one contiguous run of the input (W's rows for them are contiguous too), so the inner
 * loop covers a whole row of taps. */

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

enum { MK_MAX_ROWS = 24, MK_ROWS_1 = 24, MK_ROWS_2 = 12 };

/* The padded input: element 0 and strides (channels contiguous), and each spatial dim's offset
 * from a window's nominal start (pad_lo, less what negative padding crops). */
typedef struct padded_input {
    const float *data;
    int64_t b_stride, sp_stride[AX_MAX_RANK], shift[AX_MAX_RANK];
} padded_input;

/* The masks of the nf output features left (two vectors' worth) and zeroed accumulators. */
static inline __attribute__((always_inline, target("avx512f"))) void
mk_start(int64_t nf, __mmask16 *mask, __m512 (*acc)[2], const int nv, const int rows) {
    mask[0] = nf >= 16 ? 0xFFFF : (__mmask16)((1u << nf) - 1);
    mask[1] = nf >= 32 ? 0xFFFF : nf > 16 ? (__mmask16)((1u << (nf - 16)) - 1) : 0;
#pragma GCC unroll 24
    for (int r = 0; r < rows; r++)
#pragma GCC unroll 2
        for (int v = 0; v < nv; v++) acc[r][v] = _mm512_setzero_ps();
}

/* Stores the first nr rows of accumulators, rows `ld` floats apart. */
static inline __attribute__((always_inline, target("avx512f"))) void
mk_store(float *dst, int64_t ld, const __mmask16 *mask, __m512 (*acc)[2], const int nv,
         const int rows, int nr, const bool masked) {
#pragma GCC unroll 24
    for (int r = 0; r < rows; r++)
#pragma GCC unroll 2
        for (int v = 0; v < nv; v++) {
            if (r < nr && masked)
                _mm512_mask_storeu_ps(dst + r * ld + 16 * v, mask[v], acc[r][v]);
            else if (r < nr)
                _mm512_storeu_ps(dst + r * ld + 16 * v, acc[r][v]);
        }
}

/* Runs kernel KERNEL(..., nv, rows, masked) in its four shapes: 1 or 2 vectors of features
 * (24 accumulators either way), masked where whole vectors do not cover them. */
#define MK_DISPATCH(p, KERNEL, ...)                                                                \
    do {                                                                                           \
        bool whole_ = (p)->fg % ((p)->fg <= 16 ? 16 : 32) == 0;                                    \
        if ((p)->fg <= 16 && whole_)                                                               \
            KERNEL(__VA_ARGS__, 1, MK_ROWS_1, false);                                              \
        else if ((p)->fg <= 16)                                                                    \
            KERNEL(__VA_ARGS__, 1, MK_ROWS_1, true);                                               \
        else if (whole_)                                                                           \
            KERNEL(__VA_ARGS__, 2, MK_ROWS_2, false);                                              \
        else                                                                                       \
            KERNEL(__VA_ARGS__, 2, MK_ROWS_2, true);                                               \
    } while (0)

static inline __attribute__((always_inline, target("avx512f"))) void
mk_rows(const conv_plan *p, const padded_input *in, int64_t gi, int64_t m0, int64_t m1,
        const int nv, const int rows, const bool masked) {
    int ns = p->nsp, last = ns - 1;
    /* the group's examples (batch groups) or channels (feature groups) */
    const float *base = in->data + (p->batch_grouped ? gi * p->nbo * in->b_stride : gi * p->ig);
    const float *w = (const float *)p->w + gi * p->fg;
    float *c = (float *)p->c + gi * p->fg;
    int64_t klast = ns ? p->win.size[last] : 1, nouter = p->nk / klast;
    int64_t step = ns ? p->win.window_dilation[last] * in->sp_stride[last] : 0;
    bool run = klast == 1 || step == p->ig; /* a row of taps is one contiguous run */
    int64_t qc[AX_MAX_RANK], k[AX_MAX_RANK], bc = m0 / p->nq, rowbase[MK_MAX_ROWS];
    unflatten(ns, p->out_sp, m0 % p->nq, qc);
    for (int64_t r0 = m0; r0 < m1; r0 += rows) {
        int nr = m1 - r0 < rows ? (int)(m1 - r0) : rows;
        for (int r = 0; r < rows; r++) { /* rows past the end repeat the first (not stored) */
            if (r >= nr) {
                rowbase[r] = rowbase[0];
                continue;
            }
            rowbase[r] = bc * in->b_stride;
            for (int d = 0; d < ns; d++)
                rowbase[r] += (qc[d] * p->win.stride[d] + in->shift[d]) * in->sp_stride[d];
            bc += !advance(ns, p->out_sp, qc);
        }
        for (int64_t f0 = 0; f0 < p->fg; f0 += 16 * nv) {
            __mmask16 mask[2];
            __m512 acc[MK_MAX_ROWS][2];
            mk_start(p->fg - f0, mask, acc, nv, rows);
            memset(k, 0, sizeof k);
            for (int64_t outer = 0; outer < nouter; outer++, advance(last, p->win.size, k)) {
                int64_t tapoff = 0;
                for (int d = 0; d < last; d++)
                    tapoff += k[d] * p->win.window_dilation[d] * in->sp_stride[d];
                const float *wt = w + outer * klast * p->ig * p->f + f0;
                /* one run of klast * ig inputs, or klast runs of ig */
                int64_t nruns = run ? 1 : klast, len = run ? klast * p->ig : p->ig;
                for (int64_t t = 0; t < nruns; t++) {
                    const float *src[MK_MAX_ROWS];
#pragma GCC unroll 24
                    for (int r = 0; r < rows; r++) src[r] = base + rowbase[r] + tapoff + t * step;
                    for (int64_t j = 0; j < len; j++, wt += p->f) {
                        __m512 wv[2];
#pragma GCC unroll 2
                        for (int v = 0; v < nv; v++)
                            wv[v] = masked ? _mm512_maskz_loadu_ps(mask[v], wt + 16 * v)
                                           : _mm512_loadu_ps(wt + 16 * v);
#pragma GCC unroll 24
                        for (int r = 0; r < rows; r++) {
                            __m512 x = _mm512_set1_ps(src[r][j]);
#pragma GCC unroll 2
                            for (int v = 0; v < nv; v++)
                                acc[r][v] = _mm512_fmadd_ps(x, wv[v], acc[r][v]);
                        }
                    }
                }
            }
            mk_store(c + r0 * p->f + f0, p->f, mask, acc, nv, rows, nr, masked);
        }
    }
}

__attribute__((target("avx512f"))) static void mk_block(const conv_plan *p, const padded_input *in,
                                                        int64_t gi, int64_t m0, int64_t m1) {
    MK_DISPATCH(p, mk_rows, p, in, gi, m0, m1);
}

/* The cols order (weight gradients) without im2col: rows are R consecutive lhs batch entries
 * (contiguous: l_b == 1) at one output position q, summed over the input features i in
 * [i0, i1) and every tap; a tap on padding is the same for all R rows, so it is skipped. The
 * kernel matrix W[i][tap][f] (the output cotangent, NHWC) is read in place. */
static inline __attribute__((always_inline, target("avx512f"))) void
mk_cols(const conv_plan *p, int64_t gi, int64_t m0, int64_t m1, int64_t i0, int64_t i1, float *c,
        int64_t ldc, const int nv, const int rows, const bool masked) {
    int ns = p->nsp, last = ns - 1;
    const float *base = (const float *)p->l + group_origin(p, gi);
    const float *w = (const float *)p->w + gi * p->fg;
    int64_t klast = ns ? p->win.size[last] : 1, nouter = p->nk / klast;
    int64_t xstep = ns ? p->win.window_dilation[last] * p->l_sp[last] : 0;
    int64_t q[AX_MAX_RANK], k[AX_MAX_RANK], b = m0 % p->nbo;
    unflatten(ns, p->out_sp, m0 / p->nbo, q);
    for (int64_t m = m0; m < m1;) {
        int64_t left = p->nbo - b < m1 - m ? p->nbo - b : m1 - m;
        int nr = left < rows ? (int)left : rows;
        int64_t idx[MK_MAX_ROWS]; /* rows past nr read row 0 (not stored) */
#pragma GCC unroll 24
        for (int r = 0; r < rows; r++) idx[r] = r < nr ? r : 0;
        for (int64_t f0 = 0; f0 < p->fg; f0 += 16 * nv) {
            __mmask16 mask[2];
            __m512 acc[MK_MAX_ROWS][2];
            mk_start(p->fg - f0, mask, acc, nv, rows);
            for (int64_t i = i0; i < i1; i++) {
                const float *xi = base + i * p->l_i + b;
                memset(k, 0, sizeof k);
                for (int64_t outer = 0; outer < nouter; outer++, advance(last, p->win.size, k)) {
                    int64_t off;
                    if (!tap_offset(p, q, k, last, &off)) continue;
                    int64_t lo = 0, hi = 1, a = 0;
                    if (ns) {
                        a = q[last] * p->win.stride[last] - p->win.pad_lo[last];
                        range_in(a, p->win.window_dilation[last], p->in_sp[last], klast, &lo, &hi);
                    }
                    const float *x = xi + off + a * (ns ? p->l_sp[last] : 0) + lo * xstep;
                    const float *wt = w + ((i * nouter + outer) * klast + lo) * p->f + f0;
                    for (int64_t t = lo; t < hi; t++, x += xstep, wt += p->f) {
                        __m512 wv[2];
#pragma GCC unroll 2
                        for (int v = 0; v < nv; v++)
                            wv[v] = masked ? _mm512_maskz_loadu_ps(mask[v], wt + 16 * v)
                                           : _mm512_loadu_ps(wt + 16 * v);
#pragma GCC unroll 24
                        for (int r = 0; r < rows; r++) {
                            __m512 xv = _mm512_set1_ps(x[idx[r]]);
#pragma GCC unroll 2
                            for (int v = 0; v < nv; v++)
                                acc[r][v] = _mm512_fmadd_ps(xv, wv[v], acc[r][v]);
                        }
                    }
                }
            }
            mk_store(c + (m - m0) * ldc + f0, ldc, mask, acc, nv, rows, nr, masked);
        }
        m += nr;
        if ((b += nr) == p->nbo) {
            b = 0;
            advance(ns, p->out_sp, q);
        }
    }
}

__attribute__((target("avx512f"))) static void mk_cols_block(const conv_plan *p, int64_t gi,
                                                             int64_t m0, int64_t m1, int64_t i0,
                                                             int64_t i1, float *c, int64_t ldc) {
    MK_DISPATCH(p, mk_cols, p, gi, m0, m1, i0, i1, c, ldc);
}

static bool cpu_has_avx512(void) {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f");
}
#else
typedef struct padded_input {
    const float *data;
    int64_t b_stride, sp_stride[AX_MAX_RANK], shift[AX_MAX_RANK];
} padded_input;

static void mk_block(const conv_plan *p, const padded_input *in, int64_t gi, int64_t m0,
                     int64_t m1) {
    (void)p, (void)in, (void)gi, (void)m0, (void)m1;
}

static void mk_cols_block(const conv_plan *p, int64_t gi, int64_t m0, int64_t m1, int64_t i0,
                          int64_t i1, float *c, int64_t ldc) {
    (void)p, (void)gi, (void)m0, (void)m1, (void)i0, (void)i1, (void)c, (void)ldc;
}

static bool cpu_has_avx512(void) {
    return false;
}
#endif

/* The direct kernels take f32 convolutions without lhs dilation: the rows order over
 * channels-last inputs (a 1x1 window is a plain GEMM already), the cols order as planned. */
static bool use_microkernel(const conv_plan *p) {
    if (p->dtype != AX_F32 || p->direct_lda || (p->cols ? p->l_b != 1 : p->l_i != 1 && p->ig > 1))
        return false;
    for (int d = 0; d < p->nsp; d++)
        if (p->win.base_dilation[d] != 1) return false;
    return cpu_has_avx512();
}

/* The lhs (channels-last, as plan_lhs left it) copied into a zeroed buffer with the padding
 * around it: the direct kernel's input. `buf` receives the allocation (NULL on failure). */
static bool pad_input(const conv_plan *p, padded_input *in, float **buf) {
    int ns = p->nsp;
    int64_t size[AX_MAX_RANK], channels = p->batch_grouped ? p->ig : p->ig * p->groups;
    int64_t batch = p->batch_grouped ? p->nbo * p->groups : p->nbo, total = channels;
    for (int d = ns - 1; d >= 0; d--) {
        int64_t lo = p->win.pad_lo[d] > 0 ? p->win.pad_lo[d] : 0;
        size[d] = p->in_sp[d] + lo + (p->win.pad_hi[d] > 0 ? p->win.pad_hi[d] : 0);
        in->shift[d] = lo - p->win.pad_lo[d];
        in->sp_stride[d] = total;
        total *= size[d];
    }
    in->b_stride = total;
    *buf = calloc((size_t)(total * batch) + 1, sizeof(float));
    if (!*buf) return false;
    in->data = *buf;
    int64_t idx[AX_MAX_RANK] = {0}, npos = batch;
    for (int d = 0; d < ns; d++) npos *= p->in_sp[d];
    for (int64_t pos = 0, b = 0; pos < npos; pos++) { /* one run of channels per position */
        int64_t src = b * p->l_b, dst = b * in->b_stride;
        for (int d = 0; d < ns; d++) {
            int64_t lo = p->win.pad_lo[d] > 0 ? p->win.pad_lo[d] : 0;
            src += idx[d] * p->l_sp[d];
            dst += (idx[d] + lo) * in->sp_stride[d];
        }
        copy_run((char *)(*buf + dst), p->l + src * (int64_t)p->es, channels, p->l_i, p->es);
        b += !advance(ns, p->in_sp, idx);
    }
    return true;
}

/* One task: group gi, M block mblock, the K blocks of one slice, accumulated into the output
 * (one slice) or the slice's partial sums. */
static void run_task(conv_plan *p, int64_t task, char *t) {
    int64_t per_group = p->nmb * p->nslices;
    int64_t gi = task / per_group, mblock = task % per_group / p->nslices;
    int64_t slice = task % p->nslices;
    int64_t m0 = mblock * p->mb, m1 = m0 + p->mb < p->m ? m0 + p->mb : p->m;
    int64_t kb0 = slice * p->kb_per_slice, kb1 = kb0 + p->kb_per_slice;
    if (kb1 > p->nkb) kb1 = p->nkb;
    char *c;
    int64_t ldc;
    if (p->nslices == 1) {
        c = p->c + (m0 * p->f + gi * p->fg) * (int64_t)p->es;
        ldc = p->f;
    } else {
        c = p->partial + ((gi * p->nslices + slice) * p->m + m0) * p->fg * (int64_t)p->es;
        ldc = p->fg;
    }
    if (p->microkernel && p->cols) { /* slices: ranges of input features */
        int64_t i0 = slice * p->kb_per_slice, i1 = i0 + p->kb_per_slice;
        mk_cols_block(p, gi, m0, m1, i0, i1 < p->ig ? i1 : p->ig, (float *)c, ldc);
        return;
    }
    if (p->microkernel) {
        mk_block(p, p->padded, gi, m0, m1);
        return;
    }
    const char *w = p->w + gi * p->fg * (int64_t)p->es;
    for (int64_t kbi = kb0; kbi < kb1; kbi++) {
        int64_t k0 = kbi * p->kb, k1 = k0 + p->kb < p->k ? k0 + p->kb : p->k;
        const char *wk = w + k0 * p->f * (int64_t)p->es;
        if (p->direct_lda) {
            const char *a = p->l + (group_origin(p, gi) + m0 * p->direct_lda) * (int64_t)p->es;
            gemm(p, false, m1 - m0, p->fg, k1 - k0, a + k0 * (int64_t)p->es, p->direct_lda, wk,
                 p->f, kbi > kb0, c, ldc);
        } else if (p->cols) {
            gather_cols(p, gi, m0, m1, k0, k1, t);
            gemm(p, true, m1 - m0, p->fg, k1 - k0, t, m1 - m0, wk, p->f, kbi > kb0, c, ldc);
        } else {
            gather_rows(p, gi, m0, m1, k0, k1, t);
            gemm(p, false, m1 - m0, p->fg, k1 - k0, t, k1 - k0, wk, p->f, kbi > kb0, c, ldc);
        }
    }
}

/* Pool chunks come in multiples of TASK_ALIGN items: each task is TASK_ALIGN items. */
static void run_tasks(void *arg, int64_t begin, int64_t end) {
    conv_plan *p = arg;
    bool gathers = !p->direct_lda && !p->microkernel;
    char *t = gathers ? malloc((size_t)(p->mb * p->kb) * p->es) : NULL;
    if (!t && gathers) {
        atomic_store(&p->oom, true);
        return;
    }
    for (int64_t task = begin / TASK_ALIGN;
         task < (end + TASK_ALIGN - 1) / TASK_ALIGN && !ax_ctx_interrupted(p->cx); task++)
        run_task(p, task, t);
    free(t);
}

/* The slices' partial sums, added in slice order (the result does not depend on threads). */
static void add_partials(conv_plan *p) {
    int64_t per_slice = p->m * p->fg;
    for (int64_t gi = 0; gi < p->groups; gi++)
        for (int64_t m = 0; m < p->m; m++)
            for (int64_t j = 0; j < p->fg; j++) {
                int64_t src = gi * p->nslices * per_slice + m * p->fg + j;
                int64_t dst = m * p->f + gi * p->fg + j;
                double acc = 0;
                for (int64_t s = 0; s < p->nslices; s++, src += per_slice)
                    acc += p->dtype == AX_F32 ? ((float *)p->partial)[src]
                                              : ((double *)p->partial)[src];
                if (p->dtype == AX_F32)
                    ((float *)p->c)[dst] = (float)acc;
                else
                    ((double *)p->c)[dst] = acc;
            }
}

static void choose_blocks(conv_plan *p) {
    int64_t budget = BLOCK_ELEMS * 4 / (int64_t)p->es;
    /* whole rows of T when they fit, else blocks at least MIN_BLOCK_COLS wide: a weight
     * gradient's few output positions (M) stay in one block, so its runs are not cut */
    p->mb = budget / (p->k < MIN_BLOCK_COLS ? (p->k ? p->k : 1) : MIN_BLOCK_COLS);
    if (p->mb < MIN_BLOCK_ROWS) p->mb = MIN_BLOCK_ROWS;
    if (p->mb > p->m) p->mb = p->m;
    p->kb = budget / p->mb;
    if (!p->cols) p->kb = p->kb / p->ig * p->ig; /* whole taps */
    if (p->kb < (p->cols ? 1 : p->ig)) p->kb = p->cols ? 1 : p->ig;
    if (p->kb > p->k) p->kb = p->k;
    p->nmb = (p->m + p->mb - 1) / p->mb;
    p->nkb = (p->k + p->kb - 1) / p->kb;
    /* few M blocks: split K into slices too, each with its own partial sums */
    int64_t mtasks = p->nmb * p->groups;
    p->nslices = mtasks >= MIN_TASKS ? 1 : (MIN_TASKS + mtasks - 1) / mtasks;
    if (p->nslices > p->nkb) p->nslices = p->nkb;
    p->kb_per_slice = (p->nkb + p->nslices - 1) / p->nslices;
    p->nslices = (p->nkb + p->kb_per_slice - 1) / p->kb_per_slice;
}

/* Runs every task, in parallel when there is enough work, OpenBLAS on one thread inside. */
static int run_plan(ax_ctx *cx, conv_plan *p) {
    int64_t ntasks = p->groups * p->nmb * p->nslices;
    double flops = 2.0 * (double)p->groups * (double)p->m * (double)p->k * (double)p->fg;
    int threads = ntasks > 1 && flops > 4e6 ? ax_pool_threads(cx) : 1;
    if (threads > 1) {
        int before = p->blas->get_num_threads();
        p->blas->set_num_threads(1);
        ax_parallel_for(cx, ntasks * TASK_ALIGN, TASK_ALIGN, run_tasks, p);
        p->blas->set_num_threads(before);
    } else {
        run_tasks(p, 0, ntasks * TASK_ALIGN);
    }
    if (atomic_load(&p->oom)) return ax_error_oom(cx), -1;
    if (ax_ctx_take_interrupt(cx)) return -1;
    if (p->nslices > 1) add_partials(p);
    return 0;
}

/* x's dims in the order perm as a contiguous array (x itself, retained, when it is one). */
static ax_array *contiguous_permuted(ax_ctx *cx, ax_array *x, const int *perm) {
    ax_array *v = ax_transpose(cx, x, perm);
    if (!v || ax_array_is_contiguous(v)) return v;
    ax_array *c = ax_array_contiguous(cx, v);
    ax_array_release(v);
    return c;
}

/* Sizes and the strategy (see the top of the file). */
static void plan_sizes(conv_plan *p, const ax_array *lhs, const ax_array *rhs,
                       const ax_conv_geometry *g, const int64_t *out_shape) {
    p->dtype = lhs->dtype;
    p->es = ax_dtype_size(lhs->dtype);
    p->win = g->win;
    p->nsp = g->win.ndim;
    p->nq = p->nk = 1;
    for (int d = 0; d < p->nsp; d++) {
        p->win.size[d] = rhs->shape[g->rhs_spec[2 + d]];
        p->in_sp[d] = lhs->shape[g->lhs_spec[2 + d]];
        p->out_sp[d] = out_shape[g->out_spec[2 + d]];
        p->nq *= p->out_sp[d];
        p->nk *= p->win.size[d];
    }
    p->batch_grouped = g->batch_groups > 1;
    p->groups = p->batch_grouped ? g->batch_groups : g->feature_groups;
    p->nbo = out_shape[g->out_spec[0]];
    p->f = out_shape[g->out_spec[1]];
    p->fg = p->f / p->groups;
    p->ig = rhs->shape[g->rhs_spec[1]];
    int64_t sb = lhs->strides[g->lhs_spec[0]], si = lhs->strides[g->lhs_spec[1]];
    p->cols = sb == 1 && si != 1 && p->nbo > 1 && p->ig > 1;
    p->m = p->nq * p->nbo;
    p->k = p->nk * p->ig;
}

/* The lhs as the gathers read it: channels-last unless the cols order reads it as it is. */
static ax_array *plan_lhs(ax_ctx *cx, conv_plan *p, ax_array *lhs, const ax_conv_geometry *g) {
    int perm[AX_MAX_RANK], n = lhs->ndim;
    perm[0] = g->lhs_spec[0];
    for (int d = 0; d < p->nsp; d++) perm[1 + d] = g->lhs_spec[2 + d];
    perm[n - 1] = g->lhs_spec[1];
    bool relayout = !p->cols && lhs->strides[g->lhs_spec[1]] != 1 && p->ig > 1;
    ax_array *v = relayout ? contiguous_permuted(cx, lhs, perm) : ax_transpose(cx, lhs, perm);
    if (!v) return NULL;
    p->l = ax_array_data(v);
    p->l_b = v->strides[0];
    p->l_i = v->strides[n - 1];
    for (int d = 0; d < p->nsp; d++) p->l_sp[d] = v->strides[1 + d];
    return v;
}

/* A 1x1 window with unit strides and no padding over channels-last rows that follow each other
 * evenly: the im2col matrix is the lhs itself, its rows `stride` elements apart (0: not). */
static int64_t direct_rows(const conv_plan *p) {
    if (p->cols || p->nk != 1 || (p->l_i != 1 && p->ig > 1)) return 0;
    int64_t stride = p->nsp ? p->l_sp[p->nsp - 1] : p->l_b;
    if (stride < p->ig * (p->batch_grouped ? 1 : p->groups)) return 0;
    int64_t want = stride;
    for (int d = p->nsp - 1; d >= 0; d--) {
        const ax_window *w = &p->win;
        if (w->stride[d] != 1 || w->pad_lo[d] || w->pad_hi[d] || w->base_dilation[d] != 1 ||
            p->out_sp[d] != p->in_sp[d] || (p->out_sp[d] > 1 && p->l_sp[d] != want))
            return 0;
        want *= p->in_sp[d];
    }
    return p->nbo > 1 && p->l_b != want ? 0 : stride;
}

/* The kernel as the K x F matrix of the chosen order. */
static ax_array *plan_kernel(ax_ctx *cx, conv_plan *p, ax_array *rhs, const ax_conv_geometry *g) {
    int perm[AX_MAX_RANK], n = rhs->ndim, at = 0;
    if (p->cols) perm[at++] = g->rhs_spec[1];
    for (int d = 0; d < p->nsp; d++) perm[at++] = g->rhs_spec[2 + d];
    if (!p->cols) perm[at++] = g->rhs_spec[1];
    perm[n - 1] = g->rhs_spec[0];
    ax_array *w = contiguous_permuted(cx, rhs, perm);
    if (w) p->w = ax_array_data(w);
    return w;
}

/* Where the out dims come from in the natural layout (rows: b, q..., f; cols: q..., b, f). */
static void natural_order(const conv_plan *p, const ax_conv_geometry *g, int n, int *perm,
                          int64_t *natural_shape, const int64_t *out_shape) {
    perm[g->out_spec[0]] = p->cols ? p->nsp : 0;
    perm[g->out_spec[1]] = n - 1;
    for (int d = 0; d < p->nsp; d++) perm[g->out_spec[2 + d]] = p->cols ? d : d + 1;
    for (int j = 0; j < n; j++) natural_shape[perm[j]] = out_shape[j];
}

static bool fits_blas(const conv_plan *p) {
    return p->f <= INT_MAX && p->mb <= INT_MAX && p->kb <= INT_MAX;
}

static ax_array *conv_float(ax_ctx *cx, ax_array *lhs, ax_array *rhs, const ax_conv_geometry *g,
                            const int64_t *out_shape) {
    int n = lhs->ndim, perm[AX_MAX_RANK];
    int64_t natural_shape[AX_MAX_RANK];
    conv_plan p = {0};
    atomic_init(&p.oom, false);
    plan_sizes(&p, lhs, rhs, g, out_shape);
    natural_order(&p, g, n, perm, natural_shape, out_shape);
    ax_array *nat = ax_array_new(cx, lhs->dtype, n, natural_shape);
    if (!nat || nat->size == 0) goto finish;
    p.c = ax_array_data(nat);
    if (p.k == 0) {
        memset(p.c, 0, (size_t)nat->size * p.es);
        goto finish;
    }
    choose_blocks(&p);
    if (!fits_blas(&p)) {
        ax_error(cx, AX_ERR_VALUE,
                 "conv_general_dilated: %lld output features are too many for "
                 "BLAS",
                 (long long)p.f);
        goto fail;
    }
    if (!(p.blas = ax_blas_get(cx))) goto fail;
    ax_array *l = plan_lhs(cx, &p, lhs, g), *w = l ? plan_kernel(cx, &p, rhs, g) : NULL;
    p.direct_lda = direct_rows(&p);
    padded_input padded;
    float *padded_buf = NULL;
    if (w && (p.microkernel = use_microkernel(&p))) {
        p.mb = MK_BLOCK_ROWS < p.m ? MK_BLOCK_ROWS : p.m; /* row blocks only, no im2col */
        p.nmb = (p.m + p.mb - 1) / p.mb;
        p.kb = p.k, p.nkb = p.nslices = p.kb_per_slice = 1;
        if (p.cols) { /* few rows, long sums: slices of the input features, as choose_blocks */
            int64_t mtasks = p.nmb * p.groups;
            p.nslices = mtasks >= MIN_TASKS ? 1 : (MIN_TASKS + mtasks - 1) / mtasks;
            if (p.nslices > p.ig) p.nslices = p.ig;
            p.kb_per_slice = (p.ig + p.nslices - 1) / p.nslices;
            p.nslices = (p.ig + p.kb_per_slice - 1) / p.kb_per_slice;
        } else {
            p.padded = &padded;
            if (!pad_input(&p, &padded, &padded_buf)) ax_error_oom(cx);
        }
    }
    if (w && p.nslices > 1) {
        p.partial = malloc((size_t)(p.groups * p.nslices * p.m * p.fg) * p.es);
        if (!p.partial) ax_error_oom(cx);
    }
    bool ready = w && (p.nslices == 1 || p.partial) && (!p.padded || padded_buf);
    p.cx = cx;
    int rc = ready ? run_plan(cx, &p) : -1;
    free(p.partial);
    free(padded_buf);
    ax_array_release(l);
    ax_array_release(w);
    if (rc) goto fail;
finish:
    if (!nat) return NULL;
    ax_array *out = contiguous_permuted(cx, nat, perm);
    ax_array_release(nat);
    return out;
fail:
    ax_array_release(nat);
    return NULL;
}

/* ---------------------------------------------------------------------------------------- */
/* Integer convolution: a direct loop                                                       */

static int64_t read_int(const char *p, ax_dtype t) {
    switch (t) {
    case AX_BOOL:
    case AX_U8:
        return *(const uint8_t *)p;
    case AX_I32:
        return *(const int32_t *)p;
    case AX_U32:
        return *(const uint32_t *)p;
    default:
        return *(const int64_t *)p;
    }
}

/* Products wrap around in unsigned arithmetic, as XLA's integer convolutions do. */
static ax_array *conv_int(ax_ctx *cx, ax_array *lhs, ax_array *rhs, const ax_conv_geometry *g,
                          const int64_t *out_shape) {
    conv_plan p = {0};
    plan_sizes(&p, lhs, rhs, g, out_shape);
    ax_array *out = ax_array_new(cx, lhs->dtype, lhs->ndim, out_shape);
    if (!out || out->size == 0) return out;
    const char *l = ax_array_data(lhs), *r = ax_array_data(rhs);
    char *o = ax_array_data(out);
    size_t es = p.es;
    int64_t q[AX_MAX_RANK], k[AX_MAX_RANK], ob[3], lb[3];
    for (int64_t b = 0; b < p.nbo; b++)
        for (int64_t f = 0; f < p.f; f++) {
            int64_t gi = f / p.fg;
            memset(q, 0, sizeof q);
            for (int64_t qi = 0; qi < p.nq; qi++, advance(p.nsp, p.out_sp, q)) {
                uint64_t acc = 0;
                for (int64_t i = 0; i < p.ig; i++) {
                    memset(k, 0, sizeof k);
                    for (int64_t ki = 0; ki < p.nk; ki++, advance(p.nsp, p.win.size, k)) {
                        int64_t loff = 0, roff = 0;
                        bool inside = true;
                        for (int d = 0; d < p.nsp && inside; d++) {
                            int64_t x = tap_index(&p.win, d, p.in_sp[d], q[d], k[d]);
                            inside = x >= 0;
                            loff += x * lhs->strides[g->lhs_spec[2 + d]];
                            roff += k[d] * rhs->strides[g->rhs_spec[2 + d]];
                        }
                        if (!inside) continue;
                        lb[0] = p.batch_grouped ? gi * p.nbo + b : b;
                        lb[1] = p.batch_grouped ? i : gi * p.ig + i;
                        loff += lb[0] * lhs->strides[g->lhs_spec[0]] +
                                lb[1] * lhs->strides[g->lhs_spec[1]];
                        roff += f * rhs->strides[g->rhs_spec[0]] + i * rhs->strides[g->rhs_spec[1]];
                        acc += (uint64_t)read_int(l + loff * (int64_t)es, lhs->dtype) *
                               (uint64_t)read_int(r + roff * (int64_t)es, rhs->dtype);
                    }
                }
                int64_t ooff = 0;
                ob[0] = b, ob[1] = f;
                ooff += ob[0] * out->strides[g->out_spec[0]] + ob[1] * out->strides[g->out_spec[1]];
                for (int d = 0; d < p.nsp; d++) ooff += q[d] * out->strides[g->out_spec[2 + d]];
                int64_t v = (int64_t)acc;
                ax_convert_element(out->dtype, o + ooff * (int64_t)es, AX_I64, &v);
            }
        }
    return out;
}

ax_array *ax_conv_general(ax_ctx *cx, ax_array *lhs, ax_array *rhs, const ax_conv_geometry *g,
                          const int64_t *out_shape) {
    if (!lhs->buf || !rhs->buf)
        return ax_error(cx, AX_ERR_RUNTIME, "conv_general_dilated needs concrete arrays");
    if (ax_dtype_is_float(lhs->dtype)) return conv_float(cx, lhs, rhs, g, out_shape);
    return conv_int(cx, lhs, rhs, g, out_shape);
}

/* ---------------------------------------------------------------------------------------- */
/* Windowed reductions                                                                      */

/* A window loop over contiguous arrays. Trailing dims that the window passes through (size,
 * stride and dilations 1, no padding) form a run of contiguous elements handled as one vector;
 * the loop covers the other (outer) dims. */
typedef struct wloop {
    int n;       /* outer dims */
    int64_t run; /* elements per run */
    ax_window w;
    int64_t in_shape[AX_MAX_RANK], out_shape[AX_MAX_RANK];
    int64_t in_stride[AX_MAX_RANK]; /* of the input's outer dims, in elements */
    int64_t nout, ntaps;            /* outer output positions, taps per window */
} wloop;

static bool passes_through(const ax_window *w, int d) {
    return w->size[d] == 1 && w->stride[d] == 1 && w->base_dilation[d] == 1 &&
           w->window_dilation[d] == 1 && w->pad_lo[d] == 0 && w->pad_hi[d] == 0;
}

static void wloop_init(wloop *L, const ax_window *w, int ndim, const int64_t *in_shape) {
    L->w = *w;
    L->n = ndim;
    L->run = 1;
    while (L->n > 0 && passes_through(w, L->n - 1)) L->run *= in_shape[--L->n];
    int64_t stride = L->run;
    L->nout = L->ntaps = 1;
    for (int d = L->n - 1; d >= 0; d--) {
        L->in_shape[d] = in_shape[d];
        L->out_shape[d] = ax_window_out_dim(w, d, in_shape[d]);
        L->in_stride[d] = stride;
        stride *= in_shape[d];
        L->nout *= L->out_shape[d];
        L->ntaps *= w->size[d];
    }
}

/* The input offset (elements) that output position o, tap k reads, or -1 for padding. */
static int64_t wloop_offset(const wloop *L, const int64_t *o, const int64_t *k) {
    int64_t off = 0;
    for (int d = 0; d < L->n; d++) {
        int64_t i = tap_index(&L->w, d, L->in_shape[d], o[d], k[d]);
        if (i < 0) return -1;
        off += i * L->in_stride[d];
    }
    return off;
}

/* Per-dtype element operations, instantiated for every dtype below. */
#define FLOAT_MAX(a, b)  ((b) > (a) || (b) != (b) ? (b) : (a))
#define FLOAT_MIN(a, b)  ((b) < (a) || (b) != (b) ? (b) : (a))
#define INT_MAX_OP(a, b) ((b) > (a) ? (b) : (a))
#define INT_MIN_OP(a, b) ((b) < (a) ? (b) : (a))

/* Sums add in ST: the type itself for floats, the unsigned one for integers, so that they
 * wrap around as XLA's do (a signed overflow is undefined in C). */
#define WINDOW_KERNELS(T, ST, SUF, MAXOP, MINOP)                                                   \
    static void combine_##SUF(ax_window_op op, T *acc, const T *x, int64_t n) {                    \
        if (op == AX_WINDOW_SUM)                                                                   \
            for (int64_t j = 0; j < n; j++) acc[j] = (T)((ST)acc[j] + (ST)x[j]);                   \
        else if (op == AX_WINDOW_MAX)                                                              \
            for (int64_t j = 0; j < n; j++) acc[j] = MAXOP(acc[j], x[j]);                          \
        else                                                                                       \
            for (int64_t j = 0; j < n; j++) acc[j] = MINOP(acc[j], x[j]);                          \
    }                                                                                              \
    static void fill_##SUF(T *dst, T v, int64_t n) {                                               \
        for (int64_t j = 0; j < n; j++) dst[j] = v;                                                \
    }                                                                                              \
    /* The select-and-* pick: a candidate replaces the best when the best is not >= (<=) it. */    \
    static void pick_##SUF(bool le, T *best, int64_t *at, const T *x, int64_t n, int64_t off) {    \
        if (le) {                                                                                  \
            for (int64_t j = 0; j < n; j++)                                                        \
                if (!(best[j] <= x[j])) best[j] = x[j], at[j] = off + j;                           \
        } else {                                                                                   \
            for (int64_t j = 0; j < n; j++)                                                        \
                if (!(best[j] >= x[j])) best[j] = x[j], at[j] = off + j;                           \
        }                                                                                          \
    }                                                                                              \
    static void pick_padding_##SUF(bool le, T *best, int64_t *at, T pad, int64_t n) {              \
        for (int64_t j = 0; j < n; j++)                                                            \
            if (le ? !(best[j] <= pad) : !(best[j] >= pad)) best[j] = pad, at[j] = -1;             \
    }

WINDOW_KERNELS(float, float, f32, FLOAT_MAX, FLOAT_MIN)
WINDOW_KERNELS(double, double, f64, FLOAT_MAX, FLOAT_MIN)
WINDOW_KERNELS(int32_t, uint32_t, i32, INT_MAX_OP, INT_MIN_OP)
WINDOW_KERNELS(int64_t, uint64_t, i64, INT_MAX_OP, INT_MIN_OP)
WINDOW_KERNELS(uint8_t, uint8_t, u8, INT_MAX_OP, INT_MIN_OP)
WINDOW_KERNELS(uint32_t, uint32_t, u32, INT_MAX_OP, INT_MIN_OP)

/* The identity of op in dtype t, stored at dst. */
static void identity_of(ax_window_op op, ax_dtype t, void *dst) {
    double v = op == AX_WINDOW_SUM ? 0.0 : op == AX_WINDOW_MAX ? -INFINITY : INFINITY;
    if (ax_dtype_is_float(t) || op == AX_WINDOW_SUM) {
        ax_convert_element(t, dst, AX_F64, &v);
        return;
    }
    bool max = op == AX_WINDOW_MAX;
    switch (t) {
    case AX_I32:
        *(int32_t *)dst = max ? INT32_MIN : INT32_MAX;
        break;
    case AX_I64:
        *(int64_t *)dst = max ? INT64_MIN : INT64_MAX;
        break;
    case AX_U32:
        *(uint32_t *)dst = max ? 0 : UINT32_MAX;
        break;
    default: /* u8, bool */
        *(uint8_t *)dst = max ? 0 : (t == AX_BOOL ? 1 : UINT8_MAX);
        break;
    }
}

#define DISPATCH(t, CALL_F32, CALL_F64, CALL_I32, CALL_I64, CALL_U8, CALL_U32)                     \
    switch (t) {                                                                                   \
    case AX_F32:                                                                                   \
        CALL_F32;                                                                                  \
        break;                                                                                     \
    case AX_F64:                                                                                   \
        CALL_F64;                                                                                  \
        break;                                                                                     \
    case AX_I32:                                                                                   \
        CALL_I32;                                                                                  \
        break;                                                                                     \
    case AX_I64:                                                                                   \
        CALL_I64;                                                                                  \
        break;                                                                                     \
    case AX_U32:                                                                                   \
        CALL_U32;                                                                                  \
        break;                                                                                     \
    default:                                                                                       \
        CALL_U8;                                                                                   \
        break;                                                                                     \
    }

static void combine(ax_dtype t, ax_window_op op, void *acc, const void *x, int64_t n) {
    DISPATCH(t, combine_f32(op, acc, x, n), combine_f64(op, acc, x, n), combine_i32(op, acc, x, n),
             combine_i64(op, acc, x, n), combine_u8(op, acc, x, n), combine_u32(op, acc, x, n))
}

static void fill(ax_dtype t, void *dst, const void *v, int64_t n) {
    DISPATCH(t, fill_f32(dst, *(const float *)v, n), fill_f64(dst, *(const double *)v, n),
             fill_i32(dst, *(const int32_t *)v, n), fill_i64(dst, *(const int64_t *)v, n),
             fill_u8(dst, *(const uint8_t *)v, n), fill_u32(dst, *(const uint32_t *)v, n))
}

static void pick(ax_dtype t, bool le, void *best, int64_t *at, const void *x, int64_t n,
                 int64_t off) {
    DISPATCH(t, pick_f32(le, best, at, x, n, off), pick_f64(le, best, at, x, n, off),
             pick_i32(le, best, at, x, n, off), pick_i64(le, best, at, x, n, off),
             pick_u8(le, best, at, x, n, off), pick_u32(le, best, at, x, n, off))
}

static void pick_padding(ax_dtype t, bool le, void *best, int64_t *at, const void *pad, int64_t n) {
    DISPATCH(t, pick_padding_f32(le, best, at, *(const float *)pad, n),
             pick_padding_f64(le, best, at, *(const double *)pad, n),
             pick_padding_i32(le, best, at, *(const int32_t *)pad, n),
             pick_padding_i64(le, best, at, *(const int64_t *)pad, n),
             pick_padding_u8(le, best, at, *(const uint8_t *)pad, n),
             pick_padding_u32(le, best, at, *(const uint32_t *)pad, n))
}

typedef struct reduce_job {
    const wloop *L;
    ax_window_op op;
    ax_dtype dtype;
    size_t es;
    const char *x;
    char *out;
    char identity[8];
} reduce_job;

static void reduce_range(void *arg, int64_t begin, int64_t end) {
    const reduce_job *j = arg;
    const wloop *L = j->L;
    int64_t o[AX_MAX_RANK], k[AX_MAX_RANK], run = L->run;
    unflatten(L->n, L->out_shape, begin, o);
    for (int64_t pos = begin; pos < end; pos++, advance(L->n, L->out_shape, o)) {
        char *acc = j->out + pos * run * (int64_t)j->es;
        fill(j->dtype, acc, j->identity, run);
        memset(k, 0, sizeof k);
        for (int64_t t = 0; t < L->ntaps; t++, advance(L->n, L->w.size, k)) {
            int64_t off = wloop_offset(L, o, k);
            if (off >= 0) combine(j->dtype, j->op, acc, j->x + off * (int64_t)j->es, run);
        }
    }
}

/* Outer positions per pool chunk: about 32K element operations. */
static int64_t window_grain(const wloop *L) {
    int64_t per = L->run * (L->ntaps ? L->ntaps : 1);
    int64_t g = (1 << 15) / (per ? per : 1);
    return g > 0 ? g : 1;
}

static ax_array *new_window_output(ax_ctx *cx, ax_dtype t, const wloop *L, int ndim,
                                   const int64_t *in_shape) {
    int64_t shape[AX_MAX_RANK];
    for (int d = 0; d < ndim; d++) shape[d] = d < L->n ? L->out_shape[d] : in_shape[d];
    return ax_array_new(cx, t, ndim, shape);
}

ax_array *ax_reduce_window(ax_ctx *cx, ax_window_op op, ax_array *x, const ax_window *w) {
    if (!x->buf) return ax_error(cx, AX_ERR_RUNTIME, "reduce_window needs a concrete array");
    wloop L;
    wloop_init(&L, w, x->ndim, x->shape);
    ax_array *out = new_window_output(cx, x->dtype, &L, x->ndim, x->shape);
    if (!out || out->size == 0) return out;
    ax_array *xc = ax_array_contiguous(cx, x);
    if (!xc) {
        ax_array_release(out);
        return NULL;
    }
    reduce_job j = {
        &L, op, x->dtype, ax_dtype_size(x->dtype), ax_array_data(xc), ax_array_data(out), {0}};
    identity_of(op, x->dtype, j.identity);
    ax_parallel_for(cx, L.nout, window_grain(&L), reduce_range, &j);
    ax_array_release(xc);
    return out;
}

/* ---- select_and_gather_add / select_and_scatter_add ---- */

typedef struct select_job {
    const wloop *L;
    bool le;
    ax_dtype dtype;
    size_t es;
    const char *x, *t; /* operand; tangents (gather) or source (scatter) */
    char *out;
    char identity[8];
    atomic_bool oom;
} select_job;

/* The offset each lane of window `o` picks (-1: padding or nothing), into at[0..run). */
static void pick_window(const select_job *j, const int64_t *o, void *best, int64_t *at) {
    const wloop *L = j->L;
    int64_t k[AX_MAX_RANK] = {0};
    fill(j->dtype, best, j->identity, L->run);
    for (int64_t r = 0; r < L->run; r++) at[r] = -1;
    for (int64_t t = 0; t < L->ntaps; t++, advance(L->n, L->w.size, k)) {
        int64_t off = wloop_offset(L, o, k);
        if (off >= 0)
            pick(j->dtype, j->le, best, at, j->x + off * (int64_t)j->es, L->run, off);
        else
            pick_padding(j->dtype, j->le, best, at, j->identity, L->run);
    }
}

/* A run's best values and picked offsets (NULL, and the job marked, when out of memory). */
static char *pick_buffers(select_job *j, int64_t **at) {
    char *best = malloc((size_t)j->L->run * 8);
    *at = malloc((size_t)j->L->run * sizeof **at);
    if (best && *at) return best;
    atomic_store(&j->oom, true);
    free(best);
    free(*at);
    return NULL;
}

static void gather_range(void *arg, int64_t begin, int64_t end) {
    select_job *j = arg;
    const wloop *L = j->L;
    int64_t o[AX_MAX_RANK], *at;
    char *best = pick_buffers(j, &at);
    if (!best) return;
    unflatten(L->n, L->out_shape, begin, o);
    for (int64_t pos = begin; pos < end; pos++, advance(L->n, L->out_shape, o)) {
        pick_window(j, o, best, at);
        char *dst = j->out + pos * L->run * (int64_t)j->es;
        for (int64_t r = 0; r < L->run; r++, dst += j->es) {
            if (at[r] >= 0)
                memcpy(dst, j->t + at[r] * (int64_t)j->es, j->es);
            else
                memset(dst, 0, j->es);
        }
    }
    free(best);
    free(at);
}

static void add_element(ax_dtype t, char *dst, const char *src) {
    if (t == AX_F32)
        *(float *)dst += *(const float *)src;
    else
        *(double *)dst += *(const double *)src;
}

/* Windows overlap, so one pass in order (its sums do not depend on threads). */
static void scatter_all(select_job *j) {
    const wloop *L = j->L;
    int64_t o[AX_MAX_RANK] = {0}, *at;
    char *best = pick_buffers(j, &at);
    if (!best) return;
    for (int64_t pos = 0; pos < L->nout; pos++, advance(L->n, L->out_shape, o)) {
        pick_window(j, o, best, at);
        const char *src = j->t + pos * L->run * (int64_t)j->es;
        for (int64_t r = 0; r < L->run; r++, src += j->es)
            if (at[r] >= 0) add_element(j->dtype, j->out + at[r] * (int64_t)j->es, src);
    }
    free(best);
    free(at);
}

static ax_array *select_and(ax_ctx *cx, bool scatter, ax_array *t, ax_array *x, bool le,
                            const ax_window *w) {
    if (!x->buf || !t->buf) return ax_error(cx, AX_ERR_RUNTIME, "pooling needs concrete arrays");
    wloop L;
    wloop_init(&L, w, x->ndim, x->shape);
    ax_array *out = scatter ? ax_array_zeros(cx, x->dtype, x->ndim, x->shape)
                            : new_window_output(cx, x->dtype, &L, x->ndim, x->shape);
    if (!out || out->size == 0 || L.nout == 0) return out;
    ax_array *xc = ax_array_contiguous(cx, x), *tc = xc ? ax_array_contiguous(cx, t) : NULL;
    select_job j = {&L,
                    le,
                    x->dtype,
                    ax_dtype_size(x->dtype),
                    xc ? ax_array_data(xc) : NULL,
                    tc ? ax_array_data(tc) : NULL,
                    ax_array_data(out),
                    {0},
                    false};
    identity_of(le ? AX_WINDOW_MIN : AX_WINDOW_MAX, x->dtype, j.identity);
    if (tc && scatter)
        scatter_all(&j);
    else if (tc)
        ax_parallel_for(cx, L.nout, window_grain(&L), gather_range, &j);
    ax_array_release(xc);
    ax_array_release(tc);
    if (!tc || atomic_load(&j.oom)) {
        if (tc) ax_error_oom(cx);
        ax_array_release(out);
        return NULL;
    }
    return out;
}

ax_array *ax_select_and_gather_add(ax_ctx *cx, ax_array *t, ax_array *x, bool le,
                                   const ax_window *w) {
    return select_and(cx, false, t, x, le, w);
}

ax_array *ax_select_and_scatter_add(ax_ctx *cx, ax_array *source, ax_array *x, bool le,
                                    const ax_window *w) {
    return select_and(cx, true, source, x, le, w);
}

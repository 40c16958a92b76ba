/* The quick tier's code generator (see quickgen.h).
 *
 * A LOOP step's function: the loops over the step's dims other than the blocked one (the
 * innermost), and the blocked dim innermost, 8 lanes at a time (one ymm register of 32-bit
 * values). Within a block each value stays in a register from the operation that computes it
 * to the last that reads it (the value cache); it has a 32-byte slot in the frame for when
 * registers run out or a call clobbers them. Bools are masks in registers (all ones or zero per
 * lane), bytes in memory. Constants are set in the prologue, loads broadcast along the blocked
 * dim once per row, strided rows gathered (vgatherdps); a row's tail, bool gathers and the
 * reductions' folds go through small C functions below. Loops that call functions (exp, tanh)
 * run wide blocks of 64 lanes a call (emit_wide_block).
 *
 * Loop order: the kept dims outside (the split dim among them), the reduced ones inside in
 * their order, the blocked dim last. So each output takes its elements in row-major order of
 * the reduced dims, as runtime/reduce.h says:
 *   ROWS (the innermost dim kept): an accumulator per element of the row, in the frame;
 *   RUNS (the innermost dim reduced): each run along it in chunks of AX_REDUCE_CHUNK, element
 *        i of a chunk to lane accumulator i % AX_REDUCE_LANES, the lanes folded in order into
 *        the output's total. */
#include "quickgen.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "../runtime/elementwise.h"
#include "../runtime/reduce.h"
#include "../runtime/vecmath.h"
#include "x86.h"

enum {
    LANES = 8,                  /* a block: one ymm register of 32-bit lanes */
    WIDE = 64,                  /* a wide block: 8 blocks, for loops that call functions */
    SLOT = 32,                  /* a value's bytes in the frame */
    MAX_ROWS_BYTES = 256 << 10, /* the ROWS accumulators a frame may hold */
    NCONST = 256,               /* distinct vector constants per program */
};
_Static_assert(AX_REDUCE_LANES == 2 * LANES, "a lane accumulator pair per two blocks");
_Static_assert(AX_REDUCE_CHUNK % (2 * LANES) == 0, "chunks hold whole block pairs");

#define R(name)        AX_X86_##name
#define AT(base, disp) ax_x86_at(base, disp)
static const int SP = AX_X86_RSP;

/* ---------------------------------------------------------------- run-time helpers */

/* The reductions rendered: f32 sums and products accumulate in f64, f32 maxima and minima in
 * f32 (runtime/reduce.h); 32-bit integers and bools in 32-bit lanes (bools as masks), where
 * wrapping sums and products, extremes and bit operations give the same bits in any order.
 * In a step of 4-lane blocks (float64, int64): f64 sums, products and extremes in f64
 * as the eager kernels, bools as 64-bit masks, 64-bit integers' wrapping sums and extremes in
 * 64-bit lanes (any order gives their bits; no products: AVX2 has no 64-bit multiply). */
typedef enum {
    QK_SUM,
    QK_PROD,
    QK_MAX,
    QK_MIN, /* f32 */
    QK_ISUM,
    QK_IPROD,
    QK_SMAX,
    QK_SMIN,
    QK_UMAX,
    QK_UMIN,
    QK_IAND,
    QK_IOR, /* int32, uint32 */
    QK_BAND,
    QK_BOR, /* bool */
    QK_DSUM,
    QK_DPROD,
    QK_DMAX,
    QK_DMIN, /* f64 */
    QK_LAND,
    QK_LOR, /* bool in a 64-bit step: 64-bit masks */
    QK_QSUM,
    QK_QMAX,
    QK_QMIN /* int64 */
} qkind;

/* f32 sums and products: f32 values, f64 accumulators */
static bool wide(qkind k) {
    return k == QK_SUM || k == QK_PROD;
}

/* The kinds whose accumulators are 8 bytes */
static bool acc64(qkind k) {
    return wide(k) || k >= QK_DSUM;
}

static bool is_float_kind(qkind k) {
    return k <= QK_MIN;
}

/* The identity of a 4-byte accumulator kind as 32 bits (the f32 kinds: its f32 value's). */
static uint32_t identity_bits(qkind k) {
    static const uint32_t bits[] = {[QK_SUM] = 0,
                                    [QK_PROD] = 0x3f800000u,
                                    [QK_MAX] = 0xff800000u,
                                    [QK_MIN] = 0x7f800000u,
                                    [QK_ISUM] = 0,
                                    [QK_IPROD] = 1,
                                    [QK_SMAX] = 0x80000000u,
                                    [QK_SMIN] = 0x7fffffffu,
                                    [QK_UMAX] = 0,
                                    [QK_UMIN] = 0xffffffffu,
                                    [QK_IAND] = 0xffffffffu,
                                    [QK_IOR] = 0,
                                    [QK_BAND] = 0xffffffffu,
                                    [QK_BOR] = 0};
    return bits[k];
}

/* The identity of an 8-byte accumulator kind as 64 bits */
static uint64_t identity_bits64(qkind k) {
    switch (k) {
    case QK_PROD:
    case QK_DPROD:
        return 0x3ff0000000000000u; /* 1.0 */
    case QK_DMAX:
        return 0xfff0000000000000u; /* -inf */
    case QK_DMIN:
        return 0x7ff0000000000000u;
    case QK_LAND:
        return UINT64_MAX;
    case QK_QMAX:
        return 0x8000000000000000u;
    case QK_QMIN:
        return 0x7fffffffffffffffu;
    default:
        return 0;
    }
}

/* acc op v on 64-bit masks and integers */
static uint64_t step_bits64(qkind k, uint64_t a, uint64_t v) {
    switch (k) {
    case QK_LAND:
        return a & v;
    case QK_LOR:
        return a | v;
    case QK_QSUM:
        return a + v;
    case QK_QMAX:
        return (int64_t)a > (int64_t)v ? a : v;
    default:
        return (int64_t)a < (int64_t)v ? a : v;
    }
}

/* The maximum (minimum) of accumulator a and value v whatever their order, as
 * compiler/codegen.c's float_extreme: NaN sticks, +0 is the maximum of -0 and +0. (f32
 * values are exact in f64, and so are their extremes.) */
static double extreme(bool is_max, double a, double v) {
    uint64_t ua, uv, um;
    memcpy(&ua, &a, 8);
    memcpy(&uv, &v, 8);
    um = is_max ? ua & uv : ua | uv;
    double merged;
    memcpy(&merged, &um, 8);
    double tie = a == v ? merged : v;
    bool keep = isnan(a) || (is_max ? a > v : a < v);
    return keep ? a : tie;
}

static void q_reset(qkind k, void *acc, int64_t n) {
    if (acc64(k)) {
        uint64_t id64 = identity_bits64(k);
        for (int64_t j = 0; j < n; j++) memcpy((char *)acc + 8 * j, &id64, 8);
    } else {
        uint32_t id = identity_bits(k); /* the 32-bit kinds only */
        for (int64_t j = 0; j < n; j++) memcpy((char *)acc + 4 * j, &id, 4);
    }
}

/* acc op v on 32-bit lanes */
static uint32_t step32(qkind k, uint32_t a, uint32_t v) {
    switch (k) {
    case QK_ISUM:
        return a + v;
    case QK_IPROD:
        return a * v;
    case QK_SMAX:
        return (int32_t)a > (int32_t)v ? a : v;
    case QK_SMIN:
        return (int32_t)a < (int32_t)v ? a : v;
    case QK_UMAX:
        return a > v ? a : v;
    case QK_UMIN:
        return a < v ? a : v;
    case QK_IAND:
    case QK_BAND:
        return a & v;
    default:
        return a | v;
    }
}

/* acc op v on f64 accumulators */
static double step64(qkind k, double acc, double v) {
    switch (k) {
    case QK_SUM:
    case QK_DSUM:
        return acc + v;
    case QK_PROD:
    case QK_DPROD:
        return acc * v;
    default:
        return extreme(k == QK_DMAX, acc, v);
    }
}

/* A chunk's lane accumulators folded in order, then into the total. */
static void q_fold(qkind k, const void *acc, void *total) {
    if (k >= QK_LAND) {
        const uint64_t *a = acc;
        uint64_t r = a[0];
        for (int j = 1; j < AX_REDUCE_LANES; j++) r = step_bits64(k, r, a[j]);
        *(uint64_t *)total = step_bits64(k, *(uint64_t *)total, r);
    } else if (acc64(k)) {
        const double *a = acc;
        double r = a[0];
        for (int j = 1; j < AX_REDUCE_LANES; j++) r = step64(k, r, a[j]);
        *(double *)total = step64(k, *(double *)total, r);
    } else if (is_float_kind(k)) {
        const float *a = acc;
        float r = a[0];
        for (int j = 1; j < AX_REDUCE_LANES; j++) r = (float)extreme(k == QK_MAX, r, a[j]);
        *(float *)total = (float)extreme(k == QK_MAX, *(float *)total, r);
    } else {
        const uint32_t *a = acc;
        uint32_t r = a[0];
        for (int j = 1; j < AX_REDUCE_LANES; j++) r = step32(k, r, a[j]);
        *(uint32_t *)total = step32(k, *(uint32_t *)total, r);
    }
}

/* Accumulator j's result stored at out: f32 or f64 (the extremes' NaN is one NaN whatever its
 * bits), 32 bits, or a bool's byte. */
static void put_result(qkind k, const void *acc, int64_t j, char *out) {
    if (wide(k)) {
        float v = (float)((const double *)acc)[j];
        memcpy(out, &v, 4);
    } else if (k == QK_LAND || k == QK_LOR) {
        *out = ((const uint64_t *)acc)[j] != 0;
    } else if (k >= QK_QSUM) {
        memcpy(out, (const char *)acc + 8 * j, 8);
    } else if (acc64(k)) {
        double v = ((const double *)acc)[j];
        if (k >= QK_DMAX && isnan(v)) v = __builtin_nan("");
        memcpy(out, &v, 8);
    } else if (is_float_kind(k)) {
        float v = ((const float *)acc)[j];
        if (isnan(v)) v = __builtin_nanf("");
        memcpy(out, &v, 4);
    } else if (k == QK_BAND || k == QK_BOR) {
        *out = ((const uint32_t *)acc)[j] != 0;
    } else {
        memcpy(out, (const char *)acc + 4 * j, 4);
    }
}

static void q_store_total(qkind k, const void *total, char *out) {
    put_result(k, total, 0, out);
}

static void q_store_rows(qkind k, const void *acc, char *out, int64_t stride, int64_t n) {
    for (int64_t j = 0; j < n; j++) put_result(k, acc, j, out + j * stride);
}

/* An eager kernel on one block (the same bits as on a whole array). */
static void q_kernel(ax_kernel_fn k, void *y, const void *a, const void *b, int64_t n) {
    const char *in[2] = {(const char *)a, (const char *)b};
    const int64_t inc[2] = {1, 1};
    k(n, in, inc, (char *)y, NULL);
}

static void q_gather4(int32_t *dst, const char *src, int64_t stride, int64_t n) {
    for (int64_t j = 0; j < n; j++) memcpy(&dst[j], src + j * stride, 4);
}

static void q_gather8(int64_t *dst, const char *src, int64_t stride, int64_t n) {
    for (int64_t j = 0; j < n; j++) memcpy(&dst[j], src + j * stride, 8);
}

static void q_gather_bool(int32_t *dst, const uint8_t *src, int64_t stride, int64_t n) {
    for (int64_t j = 0; j < n; j++) dst[j] = src[j * stride] ? -1 : 0;
}

static void q_gather_bool64(int64_t *dst, const uint8_t *src, int64_t stride, int64_t n) {
    for (int64_t j = 0; j < n; j++) dst[j] = src[j * stride] ? -1 : 0;
}

static void q_scatter4(char *dst, int64_t stride, const int32_t *src, int64_t n) {
    for (int64_t j = 0; j < n; j++) memcpy(dst + j * stride, &src[j], 4);
}

static void q_scatter8(char *dst, int64_t stride, const int64_t *src, int64_t n) {
    for (int64_t j = 0; j < n; j++) memcpy(dst + j * stride, &src[j], 8);
}

static void q_scatter_bool(uint8_t *dst, int64_t stride, const int32_t *src, int64_t n) {
    for (int64_t j = 0; j < n; j++) dst[j * stride] = src[j] != 0;
}

static void q_scatter_bool64(uint8_t *dst, int64_t stride, const int64_t *src, int64_t n) {
    for (int64_t j = 0; j < n; j++) dst[j * stride] = src[j] != 0;
}

/* ---------------------------------------------------------------- the program's code */

struct ax_quick_code {
    void *exec; /* the mapping of the machine code */
    size_t size, mapped;
    int nsteps;
    ax_step_fn *fn;
    uint32_t (*consts)[LANES]; /* the vector constants the code reads */
};

bool ax_quickgen_supported(void) {
#if defined(__x86_64__)
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2");
#else
    return false;
#endif
}

ax_step_fn ax_quickgen_fn(const ax_quick_code *q, int s) {
    return s >= 0 && s < q->nsteps ? q->fn[s] : NULL;
}

size_t ax_quickgen_size(const ax_quick_code *q) {
    return q->size;
}

void ax_quickgen_free(ax_quick_code *q) {
    if (!q) return;
    if (q->exec) munmap(q->exec, q->mapped);
    free(q->fn);
    free(q->consts);
    free(q);
}

/* ---------------------------------------------------------------- the generator */

typedef enum { RK_NONE, RK_ROWS, RK_RUNS } reduce_kind;

typedef struct qg {
    ax_x86 a;
    ax_quick_code *q;
    int nconsts;
    const ax_code *code;
    const ax_code_step *st;
    const ax_code_node *nd;
    int n;
    int blocked, outer; /* the innermost dim; the dim [lo, hi) is for */
    int order[AX_MAX_RANK], norder, first_reduced;
    reduce_kind rk;
    bool w64;  /* a float64 step: blocks of 4 lanes of 64 bits (32-bit values: the low xmm) */
    int lanes; /* a block's lanes: 8, or 4 in a float64 step */
    /* frame offsets */
    int32_t lo, hi, idx, row, total, val, frame;
    int32_t *acc_at; /* per node: its accumulators' offset */
    /* the value cache of the block being emitted (see fetch) */
    int *reg_of;     /* per node: the cache register holding its value, or -1 */
    bool *in_slot;   /* per node: its frame slot holds its value */
    int *last_use;   /* per node: the last node of the block that reads it */
    int node_in[16]; /* per register: the node it holds, or -1 */
    int cur;         /* the node being emitted */
    /* wide blocks (see emit_wide_block) */
    bool has_math, wide; /* the step calls functions; a wide block is being emitted */
    int nsegs;
    int *seg_of;   /* per node: its segment (a function call ends one) */
    bool *crosses; /* per node: read by a later segment or a call: kept in its wide slot */
    bool *in_wide; /* per node: its wide slot holds its value */
    int32_t wval;  /* the wide slots: WIDE lanes per node */
    char why[200];
} qg;

static bool refuse(qg *g, const char *fmt, const char *what) {
    if (!g->why[0]) snprintf(g->why, sizeof g->why, fmt, what);
    return false;
}

/* A vector constant (8 equal 32-bit lanes, or given lanes) in the program's table. */
static const void *vconst(qg *g, const uint32_t *lanes) {
    for (int i = 0; i < g->nconsts; i++)
        if (!memcmp(g->q->consts[i], lanes, sizeof g->q->consts[i])) return g->q->consts[i];
    if (g->nconsts == NCONST) { /* a program reading hundreds of distinct strides */
        refuse(g, "%s", "too many vector constants");
        return g->q->consts[0];
    }
    memcpy(g->q->consts[g->nconsts], lanes, sizeof g->q->consts[0]);
    return g->q->consts[g->nconsts++];
}

static const void *splat(qg *g, uint32_t bits) {
    uint32_t l[LANES];
    for (int i = 0; i < LANES; i++) l[i] = bits;
    return vconst(g, l);
}

/* 4 equal 64-bit lanes */
static const void *splat64(qg *g, uint64_t bits) {
    uint32_t l[LANES];
    for (int i = 0; i < LANES; i += 2) l[i] = (uint32_t)bits, l[i + 1] = (uint32_t)(bits >> 32);
    return vconst(g, l);
}

static uint32_t fbits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static uint64_t dbits(double f) {
    uint64_t u;
    memcpy(&u, &f, 8);
    return u;
}

/* ---- emitting ---- */

static void vrr(qg *g, ax_x86_vop op, int dst, int a, int b) {
    ax_x86_vrr(&g->a, op, 1, dst, a, b);
}

static void vload(qg *g, int reg, int32_t off) {
    ax_x86_vrm(&g->a, AX_X86_VMOVUPS_LOAD, 1, reg, -1, AT(SP, off));
}

static void vstore(qg *g, int32_t off, int reg) {
    ax_x86_vrm(&g->a, AX_X86_VMOVUPS_STORE, 1, reg, -1, AT(SP, off));
}

static int32_t val(const qg *g, int i) {
    return g->val + i * SLOT;
}

static int32_t rowp(const qg *g, int i) {
    return g->row + i * 8;
}

static int32_t index_of(const qg *g, int d) {
    return g->idx + d * 8;
}

/* reg = the constant (through rax) */
static void vconst_load(qg *g, int reg, const void *c) {
    ax_x86_mov_imm(&g->a, R(RAX), (int64_t)(uintptr_t)c);
    ax_x86_vrm(&g->a, AX_X86_VMOVUPS_LOAD, 1, reg, -1, AT(R(RAX), 0));
}

static void vsplat(qg *g, int reg, uint32_t bits) {
    vconst_load(g, reg, splat(g, bits));
}

static void vsplat64(qg *g, int reg, uint64_t bits) {
    vconst_load(g, reg, splat64(g, bits));
}

/* reg = float value v in every lane of dtype t (f32 or f64) */
static void vsplat_float(qg *g, int reg, ax_dtype t, double v) {
    if (t == AX_F64)
        vsplat64(g, reg, dbits(v));
    else
        vsplat(g, reg, fbits((float)v));
}

/* reg = the sign bit (sign) or the other bits (!sign) of every lane of dtype t */
static void vsign_mask(qg *g, int reg, ax_dtype t, bool sign) {
    if (t == AX_F64)
        vsplat64(g, reg, sign ? 0x8000000000000000u : 0x7fffffffffffffffu);
    else
        vsplat(g, reg, sign ? 0x80000000u : 0x7fffffffu);
}

/* dst = mask ? b : a */
static void blend(qg *g, int dst, int a, int b, int mask) {
    vrr(g, AX_X86_VBLENDVPS, dst, a, b);
    ax_x86_imm8(&g->a, (uint8_t)(mask << 4));
}

/* dst = the comparison of float lanes a and b (dtype t: f32 or f64) as a mask */
static void vcmp_t(qg *g, ax_dtype t, int dst, int a, int b, int pred) {
    vrr(g, t == AX_F64 ? AX_X86_VCMPPD : AX_X86_VCMPPS, dst, a, b);
    ax_x86_imm8(&g->a, (uint8_t)pred);
}

static void vcmp(qg *g, int dst, int a, int b, int pred) {
    vcmp_t(g, AX_F32, dst, a, b, pred);
}

static void all_ones(qg *g, int reg) {
    vrr(g, AX_X86_VPCMPEQD, reg, reg, reg);
}

static void zero(qg *g, int reg) {
    vrr(g, AX_X86_VPXOR, reg, reg, reg);
}

static void vnot(qg *g, int dst, int src, int scratch) {
    all_ones(g, scratch);
    vrr(g, AX_X86_VPXOR, dst, src, scratch);
}

static void cache_flush(qg *g);

static void call(qg *g, const void *fn) {
    cache_flush(g);
    ax_x86_vzeroupper(&g->a);
    ax_x86_call(&g->a, fn);
}

static bool is_broadcast_load(const qg *g, int i) {
    return g->nd[i].kind == AX_KN_LOAD && g->nd[i].stride[g->blocked] == 0;
}

static bool is_math(const qg *g, int i) {
    const ax_code_node *n = &g->nd[i];
    if (n->kind != AX_KN_OP) return false;
    ax_kop k = ax_prim_get(n->prim)->lower.kop;
    return k == AX_KOP_LIBM || k == AX_KOP_AXFN || k == AX_KOP_LOGISTIC;
}

/* A wide slot's bytes per node: WIDE lanes of 32 (64) bits, 32 bytes a block. */
static int32_t wide_bytes(const qg *g) {
    return WIDE * (g->w64 ? 8 : 4);
}

static int32_t wide_slot(const qg *g, int i) {
    return g->wval + i * wide_bytes(g);
}

/* Node i's wide slot at the current block of a wide block (r15: its offset). */
static ax_x86_mem wide_at(const qg *g, int i) {
    return ax_x86_idx(SP, R(R15), 1, wide_slot(g, i));
}

/* ---- the value cache ----
 * Inside a block, values stay in ymm6-ymm15 from the node that computes them to the last one
 * that reads them; the emitters work in ymm0-ymm5. A value goes to its frame slot only when
 * its register is needed for another or a call is about to clobber every register. Constants
 * and broadcast loads live in their slots, set outside the block. */
enum { CACHE_FIRST = 6, CACHE_END = 16 };

static void cache_reset(qg *g) {
    for (int r = 0; r < 16; r++) g->node_in[r] = -1;
    for (int i = 0; i < g->n; i++) {
        const ax_code_node *n = &g->nd[i];
        g->reg_of[i] = -1;
        g->in_slot[i] = n->kind == AX_KN_CONST || is_broadcast_load(g, i);
        if (!g->wide) g->in_wide[i] = false;
    }
}

static void vmov(qg *g, int dst, int src) {
    if (dst != src) vrr(g, AX_X86_VMOVAPS, dst, -1, src);
}

/* Writes node i's register to its slot if it is needed later and not there yet. */
static void spill(qg *g, int i) {
    if (g->reg_of[i] >= 0 && !g->in_slot[i] && !g->in_wide[i] && g->last_use[i] > g->cur) {
        vstore(g, val(g, i), g->reg_of[i]);
        g->in_slot[i] = true;
    }
}

static void cache_drop(qg *g, int r) {
    int i = g->node_in[r];
    if (i >= 0) g->reg_of[i] = -1;
    g->node_in[r] = -1;
}

/* Before a call: every value still needed goes to its slot, and no register holds one. */
static void cache_flush(qg *g) {
    for (int r = CACHE_FIRST; r < CACHE_END; r++) {
        if (g->node_in[r] < 0) continue;
        spill(g, g->node_in[r]);
        cache_drop(g, r);
    }
}

static void fetch(qg *g, int r, int i);

/* Node i's value in its slot (for a C function that reads it there). */
static void ensure_slot(qg *g, int i) {
    if (g->in_slot[i]) return;
    if (g->reg_of[i] < 0) { /* in its wide slot */
        fetch(g, 0, i);
        vstore(g, val(g, i), 0);
    } else {
        vstore(g, val(g, i), g->reg_of[i]);
    }
    g->in_slot[i] = true;
}

/* Node i's value was written to its slot (by a C function). */
static void defined_in_slot(qg *g, int i) {
    g->in_slot[i] = true;
    g->reg_of[i] = -1;
}

/* Register r = node i's value (from its register or its slot). */
static void fetch(qg *g, int r, int i) {
    if (g->reg_of[i] >= 0)
        vmov(g, r, g->reg_of[i]);
    else if (g->in_wide[i])
        ax_x86_vrm(&g->a, AX_X86_VMOVUPS_LOAD, 1, r, -1, wide_at(g, i));
    else
        vload(g, r, val(g, i));
}

/* Node i's value is in register r (an emitter's): it moves to a cache register, or to its slot
 * when it is read by a later node and no register is free. */
static void define(qg *g, int i, int r) {
    g->in_slot[i] = false;
    int best = -1;
    for (int c = CACHE_FIRST; c < CACHE_END && best < 0; c++) {
        int held = g->node_in[c];
        if (held < 0 || g->last_use[held] <= g->cur) best = c;
    }
    if (best < 0) { /* every register is live: evict the value read last */
        best = CACHE_FIRST;
        for (int c = CACHE_FIRST; c < CACHE_END; c++)
            if (g->last_use[g->node_in[c]] > g->last_use[g->node_in[best]]) best = c;
        spill(g, g->node_in[best]);
    }
    cache_drop(g, best);
    vmov(g, best, r);
    g->reg_of[i] = best;
    g->node_in[best] = i;
    if (g->wide && g->crosses[i]) { /* for the later segments and calls */
        ax_x86_vrm(&g->a, AX_X86_VMOVUPS_STORE, 1, r, -1, wide_at(g, i));
        g->in_wide[i] = true;
    }
}

/* r += IDX[d] * k for an element stride k (bytes) */
static void add_scaled_index(qg *g, int r, int d, int64_t k) {
    if (!k) return;
    ax_x86_load(&g->a, R(RCX), AT(SP, index_of(g, d)));
    ax_x86_mov_imm(&g->a, R(RDX), k);
    ax_x86_imul_rr(&g->a, R(RCX), R(RDX));
    ax_x86_add_rr(&g->a, r, R(RCX));
}

/* r = bufs[buf] + sum over the dims but the blocked one of index * stride (bytes) */
static void row_address(qg *g, int r, int buf, const int64_t *stride, size_t esize) {
    ax_x86_load(&g->a, r, AT(R(RBX), buf * 8));
    for (int d = 0; d < g->st->ndim; d++)
        if (d != g->blocked) add_scaled_index(g, r, d, stride[d] * (int64_t)esize);
}

/* ---- what is rendered ---- */

static bool is32(ax_dtype t) {
    return t == AX_F32 || t == AX_I32 || t == AX_U32 || t == AX_BOOL;
}

/* 32-bit numbers: in a float64 step they live in the low 4 lanes of a register */
static bool narrow(ax_dtype t) {
    return t == AX_F32 || t == AX_I32 || t == AX_U32;
}

static bool is_float(ax_dtype t) {
    return t == AX_F32 || t == AX_F64;
}

static bool is_long(ax_dtype t) {
    return t == AX_I64; /* (ax has no uint64) */
}

/* The dtypes that make a step one of 4-lane blocks */
static bool is64(ax_dtype t) {
    return t == AX_F64 || is_long(t);
}

static ax_kop kop_of(const ax_code_node *n) {
    return ax_prim_get(n->prim)->lower.kop;
}

static qkind reduce_kind_of(const qg *g, const ax_code_node *n) {
    ax_kop k = kop_of(n);
    int op = k - AX_KOP_REDUCE_SUM; /* sum, prod, max, min, and, or */
    if (n->dtype == AX_F32) return (qkind)(QK_SUM + op);
    if (n->dtype == AX_F64) return (qkind)(QK_DSUM + op);
    if (n->dtype == AX_I64) return op == 0 ? QK_QSUM : op == 2 ? QK_QMAX : QK_QMIN;
    if (n->dtype == AX_BOOL && g->w64) return op == 3 || op == 4 ? QK_LAND : QK_LOR;
    if (n->dtype == AX_BOOL) return op == 3 || op == 4 ? QK_BAND : QK_BOR;
    static const qkind ints[2][6] = {{QK_ISUM, QK_IPROD, QK_SMAX, QK_SMIN, QK_IAND, QK_IOR},
                                     {QK_ISUM, QK_IPROD, QK_UMAX, QK_UMIN, QK_IAND, QK_IOR}};
    return ints[n->dtype == AX_U32][op];
}

static bool builtin_round_mode(const char *fn, int *imm) {
    static const struct {
        const char *name;
        int imm;
    } modes[] = {{"floor", 0x09}, {"ceil", 0x0a}, {"trunc", 0x0b}, {"rint", 0x08}};
    for (size_t i = 0; i < sizeof modes / sizeof *modes; i++)
        if (!strcmp(fn, modes[i].name)) return *imm = modes[i].imm, true;
    return false;
}

/* The eager kernel of function node n (libm's, libmvec's, ax's special functions) on dtype t
 * (f32 or f64), by the primitive's name; NULL if there is none. */
static ax_kernel_fn eager_kernel(const ax_code_node *n, ax_dtype t) {
    const char *name = ax_prim_get(n->prim)->name;
    for (int op = 0; n->nin == 1 && op < AX_NUNARY; op++)
        if (!strcmp(ax_unary_name((ax_unary_op)op), name))
            return ax_unary_kernel((ax_unary_op)op, t);
    for (int op = 0; n->nin == 2 && op < AX_NBINARY; op++)
        if (!strcmp(ax_binary_name((ax_binary_op)op), name))
            return ax_binary_kernel((ax_binary_op)op, t);
    return NULL;
}

/* Whether elementwise node n (operands of dtype t) is rendered. */
static bool op_ok(const ax_code_node *n, ax_dtype t) {
    const ax_lowering *l = &ax_prim_get(n->prim)->lower;
    bool f = is_float(t), ints = t == AX_I32 || t == AX_U32, b = t == AX_BOOL, q = is_long(t);
    int imm;
    switch (l->kop) {
    case AX_KOP_COPY:
    case AX_KOP_EQ:
    case AX_KOP_NE:
    case AX_KOP_LT:
    case AX_KOP_LE:
    case AX_KOP_GT:
    case AX_KOP_GE:
    case AX_KOP_MAX:
    case AX_KOP_MIN:
        return true;
    case AX_KOP_NEG:
    case AX_KOP_ADD:
    case AX_KOP_SUB:
    case AX_KOP_ABS:
    case AX_KOP_SIGN:
        return f || ints || q;
    case AX_KOP_MUL: /* AVX2 multiplies no 64-bit integers */
    case AX_KOP_SQUARE:
        return f || ints;
    case AX_KOP_NOT:
    case AX_KOP_AND:
    case AX_KOP_OR:
    case AX_KOP_XOR:
    case AX_KOP_SHL:
    case AX_KOP_SHR_LOGICAL:
    case AX_KOP_SHR_ARITH:
        return ints || b || q;
    case AX_KOP_DIV:
    case AX_KOP_RSQRT:
    case AX_KOP_IS_FINITE:
        return f;
    case AX_KOP_INTEGER_POW:
        return f && n->k >= -64 && n->k <= 64;
    case AX_KOP_BUILTIN:
        return f && (!strcmp(l->fn, "sqrt") || builtin_round_mode(l->fn, &imm));
    case AX_KOP_LIBM:
    case AX_KOP_AXFN:
    case AX_KOP_LOGISTIC: /* f64: always the eager kernel (ax's vector math is f32's) */
        return t == AX_F32 ? l->vecmath || eager_kernel(n, t) : f && eager_kernel(n, t);
    case AX_KOP_SELECT:
    case AX_KOP_CLAMP:
        return true;
    case AX_KOP_CONVERT: /* float -> integer stays eager (ax_codegen_fusable); AVX2 converts
                            no 64-bit integers to floats */
        return f ? is_float(n->dtype) || n->dtype == AX_BOOL : q ? !is_float(n->dtype) : ints || b;
    default:
        return false;
    }
}

/* In a 64-bit step 32-bit numbers are only converted to or from 64-bit ones (and loaded,
 * stored, constants, iotas): their lanes are the low half of a register, which the other
 * operations (and the f32 functions' calls) do not handle. */
static bool mixes_widths(const qg *g, const ax_code_node *n) {
    if (!g->w64 || n->kind != AX_KN_OP) return false;
    bool has_narrow = narrow(n->dtype);
    for (int k = 0; k < n->nin; k++) has_narrow |= narrow(g->nd[n->in[k]].dtype);
    if (!has_narrow) return false;
    return kop_of(n) != AX_KOP_CONVERT || (!is64(n->dtype) && !is64(g->nd[n->in[0]].dtype));
}

static bool node_ok(qg *g, int i) {
    const ax_code_node *n = &g->nd[i];
    const char *name =
        n->kind == AX_KN_LOAD || n->kind == AX_KN_CONST ? "a load" : ax_prim_get(n->prim)->name;
    if (!is32(n->dtype) && !is64(n->dtype))
        return refuse(g, "%s of a dtype other than 32- and 64-bit and bool", name);
    for (int k = 0; k < n->nin; k++) {
        const ax_code_node *src = &g->nd[n->in[k]];
        if (!is32(src->dtype) && !is64(src->dtype))
            return refuse(g, "%s of an 8- or 16-bit operand", name);
        if (src->kind == AX_KN_REDUCE) return refuse(g, "%s of a reduction's result", name);
    }
    if (mixes_widths(g, n)) return refuse(g, "%s of 32-bit numbers in a 64-bit loop", name);
    switch (n->kind) {
    case AX_KN_LOAD:
    case AX_KN_CONST:
        return true;
    case AX_KN_INDEX: { /* int32 lanes: every index must fit */
        int64_t top = 0;
        for (int d = 0; d < g->st->ndim; d++)
            top += (g->st->shape[d] - 1) * (n->stride[d] < 0 ? -n->stride[d] : n->stride[d]);
        if (n->dtype == AX_BOOL || top > INT32_MAX) return refuse(g, "%s", "iota past 2^31");
        return true;
    }
    case AX_KN_REDUCE: {
        ax_kop k = kop_of(n);
        bool f = is_float(n->dtype), b = n->dtype == AX_BOOL;
        if (!ax_kop_is_reduction(k) || n->nin != 1 || g->nd[n->in[0]].dtype != n->dtype ||
            (f && k > AX_KOP_REDUCE_MIN) || (b && k < AX_KOP_REDUCE_MAX) ||
            (g->w64 && narrow(n->dtype)) ||
            (is_long(n->dtype) && (k == AX_KOP_REDUCE_PROD || k > AX_KOP_REDUCE_MIN)))
            return refuse(g, "%s on these dtypes", name);
        return true;
    }
    case AX_KN_OP:
        if (ax_prim_get(n->prim)->nin != n->nin) return refuse(g, "%s of another arity", name);
        if (kop_of(n) == AX_KOP_SELECT && g->nd[n->in[0]].dtype != AX_BOOL)
            return refuse(g, "%s on a predicate that is not bool", name);
        if (!op_ok(n, n->nin ? g->nd[n->in[kop_of(n) == AX_KOP_SELECT]].dtype : n->dtype))
            return refuse(g, "%s on these dtypes", name);
        return true;
    }
    return refuse(g, "%s", "an unknown node");
}

/* ---- the frame ---- */

static int64_t acc_esize(const qg *g, int i) {
    return acc64(reduce_kind_of(g, &g->nd[i])) ? 8 : 4;
}

static bool plan_step(qg *g, int s) {
    const ax_code_step *st = &g->code->steps[s];
    g->st = st;
    g->nd = g->code->nodes + st->first_node;
    g->n = st->nnodes;
    g->blocked = st->ndim - 1;
    g->outer = ax_codegen_outer_dim(g->code, s);
    g->w64 = false;
    for (int i = 0; i < g->n; i++) g->w64 |= is64(g->nd[i].dtype);
    g->lanes = g->w64 ? LANES / 2 : LANES;
    bool reduces = false;
    for (int i = 0; i < g->n; i++) {
        if (!node_ok(g, i)) return false;
        reduces |= g->nd[i].kind == AX_KN_REDUCE;
    }
    g->rk = !reduces ? RK_NONE : st->reduced[g->blocked] ? RK_RUNS : RK_ROWS;
    for (int i = 0; i < g->n; i++) {
        g->last_use[i] = -1;
        for (int k = 0; k < g->nd[i].nin; k++) g->last_use[g->nd[i].in[k]] = i;
    }
    g->has_math = false;
    g->nsegs = 1;
    for (int i = 0; i < g->n; i++) {
        g->seg_of[i] = g->nsegs - 1;
        g->crosses[i] = false;
        if (is_math(g, i)) g->has_math = true, g->nsegs++;
    }
    for (int j = 0; j < g->n; j++)
        for (int k = 0; k < g->nd[j].nin; k++) {
            int src = g->nd[j].in[k];
            if (!is_math(g, src) && (is_math(g, j) || g->seg_of[j] > g->seg_of[src]))
                g->crosses[src] = true;
        }
    g->wide = false;
    cache_reset(g); /* outside blocks no register holds a value */
    /* kept dims (the split one first), then the reduced ones in order */
    g->norder = 0;
    if (g->outer >= 0 && g->outer != g->blocked && !st->reduced[g->outer])
        g->order[g->norder++] = g->outer;
    for (int d = 0; d < st->ndim; d++)
        if (d != g->blocked && d != g->outer && !st->reduced[d]) g->order[g->norder++] = d;
    g->first_reduced = reduces ? g->norder : -1;
    for (int d = 0; d < st->ndim; d++)
        if (d != g->blocked && st->reduced[d]) g->order[g->norder++] = d;
    if (st->split.splittable && (g->outer < 0 || st->reduced[g->outer] ||
                                 (g->outer == g->blocked && st->split.granule % g->lanes)))
        return refuse(g, "%s", "a loop split where blocks cannot follow");
    if (g->rk == RK_RUNS && st->shape[g->blocked] > INT32_MAX)
        return refuse(g, "%s", "a run too long");
    /* the frame */
    int32_t off = 0;
    g->lo = off, off += 8;
    g->hi = off, off += 8;
    g->idx = off, off += 8 * AX_MAX_RANK;
    g->row = off, off += 8 * g->n;
    g->total = off, off += 8 * g->n;
    off = (off + SLOT - 1) / SLOT * SLOT;
    g->val = off, off += SLOT * g->n;
    g->wval = off, off += g->has_math ? wide_bytes(g) * g->n : 0;
    int64_t row_lanes = (st->shape[g->blocked] + LANES - 1) / LANES * LANES, acc_bytes = 0;
    for (int i = 0; i < g->n; i++) {
        if (g->nd[i].kind != AX_KN_REDUCE) continue;
        int64_t esize = acc_esize(g, i);
        int64_t bytes = g->rk == RK_RUNS ? AX_REDUCE_LANES * esize : row_lanes * esize;
        g->acc_at[i] = off + (int32_t)acc_bytes;
        acc_bytes += (bytes + SLOT - 1) / SLOT * SLOT;
        if (acc_bytes > MAX_ROWS_BYTES) return refuse(g, "%s", "rows too long to reduce");
    }
    off += (int32_t)acc_bytes;
    g->frame = (off + 63) / 64 * 64 + 64;
    return true;
}

/* ---- values ---- */

static void emit_const(qg *g, int i) {
    const ax_code_node *n = &g->nd[i];
    uint32_t bits = (uint32_t)n->lit;
    if (n->dtype == AX_BOOL) bits = (n->lit & 0xff) ? 0xffffffffu : 0;
    if (is64(n->dtype)) {
        vsplat64(g, 0, n->lit);
        vstore(g, val(g, i), 0);
        return;
    }
    ax_x86_mov_imm(&g->a, R(RAX), (int32_t)bits);
    ax_x86_vmovd_from(&g->a, 0, R(RAX));
    ax_x86_vrr(&g->a, AX_X86_VPBROADCASTD, 1, 0, -1, 0);
    vstore(g, val(g, i), 0);
}

/* A load broadcast along the blocked dim: its value for the whole row (a bool's mask in 32-
 * or 64-bit lanes alike: all ones or zero). */
static void emit_row_broadcast(qg *g, int i) {
    ax_x86_load(&g->a, R(RAX), AT(SP, rowp(g, i)));
    if (is64(g->nd[i].dtype)) {
        ax_x86_vrm(&g->a, AX_X86_VBROADCASTSD, 1, 0, -1, AT(R(RAX), 0));
    } else if (g->nd[i].dtype == AX_BOOL) {
        ax_x86_movzx_byte(&g->a, R(RAX), AT(R(RAX), 0));
        ax_x86_neg32(&g->a, R(RAX));
        ax_x86_vmovd_from(&g->a, 0, R(RAX));
        ax_x86_vrr(&g->a, AX_X86_VPBROADCASTD, 1, 0, -1, 0);
    } else {
        ax_x86_vrm(&g->a, AX_X86_VBROADCASTSS, 1, 0, -1, AT(R(RAX), 0));
    }
    vstore(g, val(g, i), 0);
}

/* rcx = the lanes of a tail: constant, or hi - r12 (tail < 0) */
static void tail_count(qg *g, int reg, int tail) {
    if (tail > 0) {
        ax_x86_mov_imm(&g->a, reg, tail);
    } else {
        ax_x86_mov_rr(&g->a, reg, R(R13));
        ax_x86_sub_rr(&g->a, reg, R(R12));
    }
}

/* rsi = the row pointer of node i at the block's first lane, element stride k bytes */
static void lane_address(qg *g, int reg, int i, int64_t k) {
    ax_x86_load(&g->a, reg, AT(SP, rowp(g, i)));
    if (!k) return;
    ax_x86_mov_rr(&g->a, R(RAX), R(R12));
    ax_x86_mov_imm(&g->a, R(RDX), k);
    ax_x86_imul_rr(&g->a, R(RAX), R(RDX));
    ax_x86_add_rr(&g->a, reg, R(RAX));
}

/* The vector length (VEX.L) of a block of dtype t in memory: a ymm register, or in a float64
 * step the low xmm for 32-bit numbers. */
static int mem_l(const qg *g, ax_dtype t) {
    return g->w64 && narrow(t) ? 0 : 1;
}

/* A load's lanes of the block (tail: 0 for a full block, its constant length, or -1 for
 * hi - r12 lanes). */
static void emit_load(qg *g, int i, int tail) {
    const ax_code_node *n = &g->nd[i];
    bool b = n->dtype == AX_BOOL;
    int size = (int)ax_dtype_size(n->dtype);
    int64_t stride = n->stride[g->blocked];
    if (!tail && stride == 1) {
        ax_x86_load(&g->a, R(RAX), AT(SP, rowp(g, i)));
        ax_x86_mem m = ax_x86_idx(R(RAX), R(R12), size, 0);
        if (b) { /* bytes widened to lanes, nonzero to all ones */
            ax_x86_vrm(&g->a, g->w64 ? AX_X86_VPMOVZXBQ : AX_X86_VPMOVZXBD, 1, 0, -1, m);
            zero(g, 1);
            vrr(g, g->w64 ? AX_X86_VPCMPGTQ : AX_X86_VPCMPGTD, 0, 0, 1);
        } else {
            ax_x86_vrm(&g->a, AX_X86_VMOVUPS_LOAD, mem_l(g, n->dtype), 0, -1, m);
        }
        define(g, i, 0);
        return;
    }
    int64_t k = stride * size;
    if (!tail && !b && k > -(INT32_MAX / LANES) && k < INT32_MAX / LANES) {
        /* a strided row: a gather from the block's first element, lanes j * k bytes on */
        uint32_t offsets[LANES] = {0};
        for (int j = 0; j < g->lanes; j++) offsets[j] = (uint32_t)(int32_t)(j * k);
        vconst_load(g, 1, vconst(g, offsets));
        lane_address(g, R(RSI), i, k);
        all_ones(g, 2);
        ax_x86_vrm(&g->a, size == 8 ? AX_X86_VGATHERDPD : AX_X86_VGATHERDPS, mem_l(g, n->dtype), 0,
                   2, ax_x86_idx(R(RSI), 1, 1, 0));
        define(g, i, 0);
        return;
    }
    lane_address(g, R(RSI), i, k);
    ax_x86_mov_imm(&g->a, R(RDX), k);
    ax_x86_lea(&g->a, R(RDI), AT(SP, val(g, i)));
    tail_count(g, R(RCX), tail ? tail : g->lanes);
    const void *fn = b ? g->w64 ? (const void *)q_gather_bool64 : (const void *)q_gather_bool
                     : size == 8 ? (const void *)q_gather8
                                 : (const void *)q_gather4;
    call(g, fn);
    defined_in_slot(g, i);
}

/* Bool masks (ymm0) to bytes 0/1 at [m]: dwords 0/1 (a float64 step's 64-bit masks first
 * narrowed to 4 dwords), packed to words, then to bytes. */
static void store_mask_bytes(qg *g, ax_x86_mem m) {
    ax_x86_vrr(&g->a, AX_X86_VEXTRACTF128, 1, 0, -1, 1); /* xmm1 = high half */
    ax_x86_imm8(&g->a, 1);
    if (g->w64) { /* dwords 0 and 2 of each half */
        vrr(g, AX_X86_VSHUFPS, 0, 0, 1);
        ax_x86_imm8(&g->a, 0x88);
    }
    ax_x86_vrr(&g->a, AX_X86_VPSHIFTD_IMM, 1, 2, 0, 0); /* vpsrld ymm0, ymm0, 31 */
    ax_x86_imm8(&g->a, 31);
    ax_x86_vrr(&g->a, AX_X86_VPSHIFTD_IMM, 1, 2, 1, 1); /* vpsrld ymm1, ymm1, 31 */
    ax_x86_imm8(&g->a, 31);
    ax_x86_vrr(&g->a, AX_X86_VPACKUSDW, 0, 0, 0, 1);
    ax_x86_vrr(&g->a, AX_X86_VPACKUSWB, 0, 0, 0, 0);
    ax_x86_vrm(&g->a, g->w64 ? AX_X86_VMOVD_STORE : AX_X86_VMOVQ_STORE, 0, 0, -1, m);
}

static void emit_store(qg *g, int i, int tail) {
    const ax_code_node *n = &g->nd[i];
    bool b = n->dtype == AX_BOOL;
    int size = (int)ax_dtype_size(n->dtype);
    int64_t stride = n->ostride[g->blocked];
    if (!tail && stride == 1) {
        fetch(g, 0, i);
        ax_x86_load(&g->a, R(RAX), AT(SP, rowp(g, i)));
        ax_x86_mem m = ax_x86_idx(R(RAX), R(R12), size, 0);
        if (b)
            store_mask_bytes(g, m);
        else
            ax_x86_vrm(&g->a, AX_X86_VMOVUPS_STORE, mem_l(g, n->dtype), 0, -1, m);
        return;
    }
    int64_t k = stride * size;
    ensure_slot(g, i);
    lane_address(g, R(RDI), i, k);
    ax_x86_mov_imm(&g->a, R(RSI), k);
    ax_x86_lea(&g->a, R(RDX), AT(SP, val(g, i)));
    tail_count(g, R(RCX), tail ? tail : g->lanes);
    const void *fn = b ? g->w64 ? (const void *)q_scatter_bool64 : (const void *)q_scatter_bool
                     : size == 8 ? (const void *)q_scatter8
                                 : (const void *)q_scatter4;
    call(g, fn);
}

/* ---- elementwise operations: operands in ymm0, ymm1, ymm2; the result in ymm0 ---- */

/* dst = max or min of registers x and y, of dtype t (ymm3-5 scratch) */
static void emit_maxmin(qg *g, ax_dtype t, bool is_max, int dst, int x, int y) {
    if (is_float(t)) { /* keep x where x >= y (<=) or x is NaN, as lax.max */
        vcmp_t(g, t, 3, x, y, is_max ? AX_X86_CMP_GE_OS : AX_X86_CMP_LE_OS);
        vcmp_t(g, t, 4, x, x, AX_X86_CMP_UNORD_Q);
        vrr(g, AX_X86_VORPS, 3, 3, 4);
        blend(g, dst, y, x, 3);
    } else if (is_long(t)) { /* keep x where x > y (y > x) */
        vrr(g, AX_X86_VPCMPGTQ, 3, is_max ? x : y, is_max ? y : x);
        blend(g, dst, y, x, 3);
    } else if (t == AX_I32) {
        vrr(g, is_max ? AX_X86_VPMAXSD : AX_X86_VPMINSD, dst, x, y);
    } else { /* uint32, and bool masks (all ones is the larger) */
        vrr(g, is_max ? AX_X86_VPMAXUD : AX_X86_VPMINUD, dst, x, y);
    }
}

/* ymm0 = the comparison of ymm0 and ymm1 (operands of dtype t) as a mask */
static void emit_compare(qg *g, ax_kop k, ax_dtype t) {
    if (is_float(t)) {
        static const int pred[] = {[AX_KOP_EQ] = AX_X86_CMP_EQ_OQ, [AX_KOP_NE] = AX_X86_CMP_NEQ_UQ,
                                   [AX_KOP_LT] = AX_X86_CMP_LT_OS, [AX_KOP_LE] = AX_X86_CMP_LE_OS,
                                   [AX_KOP_GT] = AX_X86_CMP_GT_OS, [AX_KOP_GE] = AX_X86_CMP_GE_OS};
        vcmp_t(g, t, 0, 0, 1, pred[k]);
        return;
    }
    /* bools in a 64-bit step: masks of equal dwords, compared dword by dword alike */
    bool q = is_long(t);
    if (t != AX_I32 && !q) { /* unsigned order: flip the sign bits, compare signed */
        vsplat(g, 2, 0x80000000u);
        vrr(g, AX_X86_VPXOR, 0, 0, 2);
        vrr(g, AX_X86_VPXOR, 1, 1, 2);
    }
    ax_x86_vop gt = q ? AX_X86_VPCMPGTQ : AX_X86_VPCMPGTD;
    switch (k) {
    case AX_KOP_EQ:
    case AX_KOP_NE:
        vrr(g, q ? AX_X86_VPCMPEQQ : AX_X86_VPCMPEQD, 0, 0, 1);
        break;
    case AX_KOP_GT:
    case AX_KOP_LE:
        vrr(g, gt, 0, 0, 1);
        break;
    default: /* LT, GE: y > x */
        vrr(g, gt, 0, 1, 0);
        break;
    }
    if (k == AX_KOP_NE || k == AX_KOP_LE || k == AX_KOP_GE) vnot(g, 0, 0, 2);
}

static ax_x86_vop mul_op(ax_dtype t) {
    return t == AX_F64 ? AX_X86_VMULPD : AX_X86_VMULPS;
}

static ax_x86_vop div_op(ax_dtype t) {
    return t == AX_F64 ? AX_X86_VDIVPD : AX_X86_VDIVPS;
}

/* x ** k by the eager kernel's products, in its order (x in ymm0, of float dtype t) */
static void emit_integer_pow(qg *g, ax_dtype t, int64_t k) {
    uint64_t e = k < 0 ? 0 - (uint64_t)k : (uint64_t)k;
    bool have = false; /* ymm1: x^(2^i); ymm2: the product so far */
    vrr(g, AX_X86_VORPS, 1, 0, 0);
    while (e > 0) {
        if (e & 1) {
            if (have)
                vrr(g, mul_op(t), 2, 2, 1);
            else
                vrr(g, AX_X86_VORPS, 2, 1, 1);
            have = true;
        }
        e >>= 1;
        if (e > 0) vrr(g, mul_op(t), 1, 1, 1);
    }
    if (!have) vsplat_float(g, 2, t, 1.0);
    if (k < 0) {
        vsplat_float(g, 0, t, 1.0);
        vrr(g, div_op(t), 0, 0, 2);
    } else {
        vrr(g, AX_X86_VORPS, 0, 2, 2);
    }
}

/* A conversion to or from f64 in a float64 step: 32-bit numbers in the low xmm, bools as
 * 64-bit masks. */
static void emit_convert64(qg *g, ax_dtype from, ax_dtype to) {
    if (from == to) return;
    if (to == AX_BOOL && is_long(from)) { /* x != 0 */
        zero(g, 1);
        vrr(g, AX_X86_VPCMPEQQ, 0, 0, 1);
        vnot(g, 0, 0, 1);
    } else if (is_long(from)) { /* to int32, uint32: the low dwords of the lanes */
        ax_x86_vrr(&g->a, AX_X86_VEXTRACTF128, 1, 0, -1, 1); /* xmm1 = high half */
        ax_x86_imm8(&g->a, 1);
        vrr(g, AX_X86_VSHUFPS, 0, 0, 1);
        ax_x86_imm8(&g->a, 0x88);
    } else if (is_long(to)) { /* from bool (a mask's bit 63), int32 (signed), uint32 */
        if (from == AX_BOOL) {
            ax_x86_vrr(&g->a, AX_X86_VPSHIFTQ_IMM, 1, 2, 0, 0); /* vpsrlq ymm0, ymm0, 63 */
            ax_x86_imm8(&g->a, 63);
        } else {
            vrr(g, from == AX_U32 ? AX_X86_VPMOVZXDQ : AX_X86_VPMOVSXDQ, 0, -1, 0);
        }
    } else if (to == AX_BOOL) { /* x != 0 (NaN is true) */
        zero(g, 1);
        vcmp_t(g, AX_F64, 0, 0, 1, AX_X86_CMP_NEQ_UQ);
    } else if (to == AX_F32) {
        vrr(g, AX_X86_VCVTPD2PS, 0, -1, 0); /* rounded to nearest, as C's (float) */
    } else if (from == AX_F32) {
        vrr(g, AX_X86_VCVTPS2PD, 0, -1, 0);
    } else if (from == AX_I32) {
        vrr(g, AX_X86_VCVTDQ2PD, 0, -1, 0);
    } else if (from == AX_U32) { /* (x - 2^31 as int32) + 2^31: exact in f64 */
        vsplat(g, 1, 0x80000000u);
        vrr(g, AX_X86_VPXOR, 0, 0, 1);
        vrr(g, AX_X86_VCVTDQ2PD, 0, -1, 0);
        vsplat64(g, 1, dbits(2147483648.0));
        vrr(g, AX_X86_VADDPD, 0, 0, 1);
    } else { /* bool -> f64 */
        vsplat64(g, 1, dbits(1.0));
        vrr(g, AX_X86_VANDPS, 0, 0, 1);
    }
}

static void emit_convert(qg *g, ax_dtype from, ax_dtype to) {
    if (g->w64) {
        emit_convert64(g, from, to);
        return;
    }
    if (from == to || (from != AX_F32 && from != AX_BOOL && to != AX_F32 && to != AX_BOOL))
        return;          /* int32 <-> uint32: the same bits */
    if (to == AX_BOOL) { /* x != 0 (NaN is true) */
        zero(g, 1);
        if (from == AX_F32) {
            vcmp(g, 0, 0, 1, AX_X86_CMP_NEQ_UQ);
        } else {
            vrr(g, AX_X86_VPCMPEQD, 0, 0, 1);
            vnot(g, 0, 0, 2);
        }
    } else if (from == AX_BOOL) {
        if (to == AX_F32) {
            vsplat(g, 1, fbits(1.0f));
            vrr(g, AX_X86_VANDPS, 0, 0, 1);
        } else {
            ax_x86_vrr(&g->a, AX_X86_VPSHIFTD_IMM, 1, 2, 0, 0); /* vpsrld ymm0, ymm0, 31 */
            ax_x86_imm8(&g->a, 31);
        }
    } else if (from == AX_I32) {
        vrr(g, AX_X86_VCVTDQ2PS, 0, -1, 0);
    } else { /* uint32 -> f32: (x >> 16) * 65536 exactly, plus x & 0xffff, rounded once */
        ax_x86_vrr(&g->a, AX_X86_VPSHIFTD_IMM, 1, 2, 1, 0); /* vpsrld ymm1, ymm0, 16 */
        ax_x86_imm8(&g->a, 16);
        vsplat(g, 2, 0xffffu);
        vrr(g, AX_X86_VPAND, 0, 0, 2);
        vrr(g, AX_X86_VCVTDQ2PS, 0, -1, 0);
        vrr(g, AX_X86_VCVTDQ2PS, 1, -1, 1);
        vsplat(g, 2, fbits(65536.0f));
        vrr(g, AX_X86_VMULPS, 1, 1, 2);
        vrr(g, AX_X86_VADDPS, 0, 1, 0);
    }
}

static void emit_unary(qg *g, const ax_code_node *n, ax_dtype t) {
    const ax_lowering *l = &ax_prim_get(n->prim)->lower;
    bool f = is_float(t), d = t == AX_F64, q = is_long(t);
    ax_x86_vop sub = q ? AX_X86_VPSUBQ : AX_X86_VPSUBD, gt = q ? AX_X86_VPCMPGTQ : AX_X86_VPCMPGTD;
    int imm = 0;
    switch (l->kop) {
    case AX_KOP_NEG:
        if (f) {
            vsign_mask(g, 1, t, true);
            vrr(g, AX_X86_VXORPS, 0, 0, 1);
        } else {
            zero(g, 1);
            vrr(g, sub, 0, 1, 0);
        }
        break;
    case AX_KOP_ABS:
        if (f) {
            vsign_mask(g, 1, t, false);
            vrr(g, AX_X86_VANDPS, 0, 0, 1);
        } else if (t == AX_I32) {
            vrr(g, AX_X86_VPABSD, 0, -1, 0);
        } else if (t == AX_I64) { /* -x where 0 > x (INT64_MIN stays itself, as in C) */
            zero(g, 1);
            vrr(g, AX_X86_VPSUBQ, 2, 1, 0);
            vrr(g, AX_X86_VPCMPGTQ, 3, 1, 0);
            blend(g, 0, 0, 2, 3);
        } /* uint32: itself */
        break;
    case AX_KOP_SIGN:
        if (f) { /* +-1 with x's sign; zeros and NaN kept */
            vsign_mask(g, 1, t, true);
            vrr(g, AX_X86_VANDPS, 1, 1, 0);
            vsplat_float(g, 2, t, 1.0);
            vrr(g, AX_X86_VORPS, 1, 1, 2);
            zero(g, 2);
            vcmp_t(g, t, 2, 0, 2, AX_X86_CMP_EQ_OQ);
            vcmp_t(g, t, 3, 0, 0, AX_X86_CMP_UNORD_Q);
            vrr(g, AX_X86_VORPS, 2, 2, 3);
            blend(g, 0, 1, 0, 2);
        } else if (t == AX_U32) { /* 1 where x != 0 */
            zero(g, 1);
            vrr(g, AX_X86_VPCMPEQD, 0, 0, 1);
            vnot(g, 0, 0, 1);
            ax_x86_vrr(&g->a, AX_X86_VPSHIFTD_IMM, 1, 2, 0, 0); /* vpsrld ymm0, ymm0, 31 */
            ax_x86_imm8(&g->a, 31);
        } else { /* (x < 0) - (x > 0) as masks: -1, 0 or 1 */
            zero(g, 3);
            vrr(g, gt, 1, 3, 0);
            vrr(g, gt, 2, 0, 3);
            vrr(g, sub, 0, 1, 2);
        }
        break;
    case AX_KOP_NOT:
        vnot(g, 0, 0, 1);
        break;
    case AX_KOP_SQUARE:
        vrr(g, f ? mul_op(t) : AX_X86_VPMULLD, 0, 0, 0);
        break;
    case AX_KOP_RSQRT:
        vrr(g, d ? AX_X86_VSQRTPD : AX_X86_VSQRTPS, 1, -1, 0);
        vsplat_float(g, 0, t, 1.0);
        vrr(g, div_op(t), 0, 0, 1);
        break;
    case AX_KOP_IS_FINITE: /* the exponent's bits not all ones */
        if (d)
            vsplat64(g, 1, 0x7ff0000000000000u);
        else
            vsplat(g, 1, 0x7f800000u);
        vrr(g, AX_X86_VPAND, 0, 0, 1);
        vrr(g, d ? AX_X86_VPCMPEQQ : AX_X86_VPCMPEQD, 0, 0, 1);
        vnot(g, 0, 0, 1);
        break;
    case AX_KOP_INTEGER_POW:
        emit_integer_pow(g, t, n->k);
        break;
    case AX_KOP_BUILTIN:
        if (!strcmp(l->fn, "sqrt")) {
            vrr(g, d ? AX_X86_VSQRTPD : AX_X86_VSQRTPS, 0, -1, 0);
        } else {
            builtin_round_mode(l->fn, &imm);
            vrr(g, d ? AX_X86_VROUNDPD : AX_X86_VROUNDPS, 0, -1, 0);
            ax_x86_imm8(&g->a, (uint8_t)imm);
        }
        break;
    default: /* COPY */
        break;
    }
}

/* ymm0 = ymm0 >> ymm1 arithmetically on int64 lanes (AVX2 has no vpsravq): the logical shift
 * or-ed with the sign's copies in the top n bits; counts of 64 or more (unsigned) the sign. */
static void emit_shr_arith64(qg *g) {
    zero(g, 2);
    vrr(g, AX_X86_VPCMPGTQ, 3, 2, 0); /* the sign: 0 > x */
    vrr(g, AX_X86_VPSRLVQ, 4, 0, 1);
    vsplat64(g, 5, 64);
    vrr(g, AX_X86_VPSUBQ, 5, 5, 1);
    vrr(g, AX_X86_VPSLLVQ, 5, 3, 5); /* sign << (64 - n): 0 for n = 0 */
    vrr(g, AX_X86_VPOR, 4, 4, 5);
    vsplat64(g, 5, 63);
    vrr(g, AX_X86_VPCMPGTQ, 5, 1, 5); /* n > 63 or n < 0 */
    vrr(g, AX_X86_VPCMPGTQ, 0, 2, 1);
    vrr(g, AX_X86_VPOR, 5, 5, 0);
    blend(g, 0, 4, 3, 5);
}

static void emit_binary(qg *g, ax_kop k, ax_dtype t) {
    bool f = is_float(t), d = t == AX_F64, q = is_long(t);
    switch (k) {
    case AX_KOP_ADD:
        vrr(g, d ? AX_X86_VADDPD : f ? AX_X86_VADDPS : q ? AX_X86_VPADDQ : AX_X86_VPADDD, 0, 0, 1);
        break;
    case AX_KOP_SUB:
        vrr(g, d ? AX_X86_VSUBPD : f ? AX_X86_VSUBPS : q ? AX_X86_VPSUBQ : AX_X86_VPSUBD, 0, 0, 1);
        break;
    case AX_KOP_MUL:
        vrr(g, f ? mul_op(t) : AX_X86_VPMULLD, 0, 0, 1);
        break;
    case AX_KOP_DIV:
        vrr(g, div_op(t), 0, 0, 1);
        break;
    case AX_KOP_MAX:
    case AX_KOP_MIN:
        emit_maxmin(g, t, k == AX_KOP_MAX, 0, 0, 1);
        break;
    case AX_KOP_AND:
        vrr(g, AX_X86_VPAND, 0, 0, 1);
        break;
    case AX_KOP_OR:
        vrr(g, AX_X86_VPOR, 0, 0, 1);
        break;
    case AX_KOP_XOR:
        vrr(g, AX_X86_VPXOR, 0, 0, 1);
        break;
    case AX_KOP_SHL: /* counts of 32 (64) or more give 0 (arithmetic: the sign), as lax's */
        vrr(g, q ? AX_X86_VPSLLVQ : AX_X86_VPSLLVD, 0, 0, 1);
        break;
    case AX_KOP_SHR_LOGICAL:
        vrr(g, q ? AX_X86_VPSRLVQ : AX_X86_VPSRLVD, 0, 0, 1);
        break;
    case AX_KOP_SHR_ARITH:
        if (q)
            emit_shr_arith64(g);
        else
            vrr(g, AX_X86_VPSRAVD, 0, 0, 1);
        break;
    default:
        emit_compare(g, k, t);
        break;
    }
}

/* Float function node n on `lanes` lanes through a C function, its operands and result at
 * frame offsets a, b (the second operand, if any) and out: ax's own vector math (the eager
 * kernel's code), or the eager kernel (libm's, libmvec's, ax's special functions). */
static void emit_function_call(qg *g, const ax_code_node *n, int32_t out, int32_t a, int32_t b,
                               int lanes) {
    const ax_lowering *l = &ax_prim_get(n->prim)->lower;
    ax_dtype t = g->nd[n->in[0]].dtype;
    if (!l->vecmath || t == AX_F64) {
        ax_x86_mov_imm(&g->a, R(RDI), (int64_t)(uintptr_t)eager_kernel(n, t));
        ax_x86_lea(&g->a, R(RSI), AT(SP, out));
        ax_x86_lea(&g->a, R(RDX), AT(SP, a));
        ax_x86_lea(&g->a, R(RCX), AT(SP, b));
        ax_x86_mov_imm(&g->a, R(R8), lanes);
        call(g, (const void *)q_kernel);
    } else {
        ax_x86_mov_imm(&g->a, R(RDI), l->vm);
        ax_x86_mov_imm(&g->a, R(RSI), lanes);
        ax_x86_lea(&g->a, R(RDX), AT(SP, a));
        ax_x86_mov_imm(&g->a, R(RCX), 1);
        ax_x86_lea(&g->a, R(R8), AT(SP, out));
        call(g, (const void *)ax_vecmath_f32);
    }
}

/* A function on the block's 8 lanes, through the slots. */
static void emit_math_call(qg *g, int i) {
    const ax_code_node *n = &g->nd[i];
    for (int k = 0; k < n->nin; k++) ensure_slot(g, n->in[k]);
    emit_function_call(g, n, val(g, i), val(g, n->in[0]), val(g, n->in[n->nin - 1]), g->lanes);
    defined_in_slot(g, i);
}

static void emit_op(qg *g, int i) {
    const ax_code_node *n = &g->nd[i];
    const ax_lowering *l = &ax_prim_get(n->prim)->lower;
    ax_dtype t = n->nin ? g->nd[n->in[0]].dtype : n->dtype;
    if (is_math(g, i)) {
        emit_math_call(g, i);
        return;
    }
    for (int k = 0; k < n->nin; k++) fetch(g, k, n->in[k]);
    switch (l->kop) {
    case AX_KOP_SELECT: /* (pred, on_true, on_false) */
        blend(g, 0, 2, 1, 0);
        break;
    case AX_KOP_CLAMP: /* (lo, x, hi): min(max(x, lo), hi) */
        t = g->nd[n->in[1]].dtype;
        emit_maxmin(g, t, true, 0, 1, 0);
        emit_maxmin(g, t, false, 0, 0, 2);
        break;
    case AX_KOP_CONVERT:
        emit_convert(g, t, n->dtype);
        break;
    default:
        if (n->nin == 1)
            emit_unary(g, n, t);
        else
            emit_binary(g, l->kop, t);
        break;
    }
    define(g, i, 0);
}

/* ---- reductions ---- */

/* ymm1 = float_extreme of accumulator ymm1 and value ymm0 (dtype t), as extreme() */
static void emit_extreme(qg *g, ax_dtype t, bool is_max) {
    vrr(g, is_max ? AX_X86_VANDPS : AX_X86_VORPS, 2, 1, 0);
    vcmp_t(g, t, 3, 1, 0, AX_X86_CMP_EQ_OQ);
    blend(g, 2, 0, 2, 3); /* tie: merged where acc == v, else v */
    vcmp_t(g, t, 3, 1, 1, AX_X86_CMP_UNORD_Q);
    vcmp_t(g, t, 4, 1, 0, is_max ? AX_X86_CMP_GT_OS : AX_X86_CMP_LT_OS);
    vrr(g, AX_X86_VORPS, 3, 3, 4);
    blend(g, 1, 2, 1, 3);
}

/* The block's value of reduction i (ymm0) into accumulators at [m] (a block's lanes). In a
 * RUNS tail of `tail` lanes the lanes past it add the identity. */
static void emit_accumulate(qg *g, int i, ax_x86_mem m, int tail) {
    qkind k = reduce_kind_of(g, &g->nd[i]);
    fetch(g, 0, g->nd[i].in[0]);
    if (tail > 0) { /* lane j of the block: 32 bytes / lanes, all ones within the tail */
        uint32_t mask[LANES];
        for (int j = 0; j < LANES; j++) mask[j] = j * g->lanes / LANES < tail ? 0xffffffffu : 0;
        vconst_load(g, 1, vconst(g, mask));
        if (g->w64)
            vsplat64(g, 2, identity_bits64(k));
        else
            vsplat(g, 2, identity_bits(k));
        blend(g, 0, 2, 0, 1);
    }
    if (g->w64) { /* f64 or 64-bit masks, lane for lane: acc = acc op v */
        ax_x86_vrm(&g->a, AX_X86_VMOVUPS_LOAD, 1, 1, -1, m);
        ax_dtype t = g->nd[i].dtype;
        if (k == QK_DSUM || k == QK_DPROD)
            vrr(g, k == QK_DSUM ? AX_X86_VADDPD : AX_X86_VMULPD, 1, 1, 0);
        else if (k == QK_LAND || k == QK_LOR)
            vrr(g, k == QK_LAND ? AX_X86_VPAND : AX_X86_VPOR, 1, 1, 0);
        else if (k == QK_QSUM)
            vrr(g, AX_X86_VPADDQ, 1, 1, 0);
        else if (is_long(t))
            emit_maxmin(g, t, k == QK_QMAX, 1, 1, 0);
        else
            emit_extreme(g, AX_F64, k == QK_DMAX);
        ax_x86_vrm(&g->a, AX_X86_VMOVUPS_STORE, 1, 1, -1, m);
        return;
    }
    if (wide(k)) { /* two halves of 4 lanes in f64: acc = acc op (double)v */
        ax_x86_vop op = k == QK_SUM ? AX_X86_VADDPD : AX_X86_VMULPD;
        for (int h = 0; h < 2; h++) {
            if (h) {
                ax_x86_vrr(&g->a, AX_X86_VEXTRACTF128, 1, 0, -1, 0); /* xmm0 = high half */
                ax_x86_imm8(&g->a, 1);
            }
            ax_x86_vrr(&g->a, AX_X86_VCVTPS2PD, 1, 1, -1, 0);
            ax_x86_mem mh = m;
            mh.disp += 32 * h;
            ax_x86_vrm(&g->a, AX_X86_VMOVUPS_LOAD, 1, 2, -1, mh);
            vrr(g, op, 1, 2, 1);
            ax_x86_vrm(&g->a, AX_X86_VMOVUPS_STORE, 1, 1, -1, mh);
        }
        return;
    }
    if (!is_float_kind(k)) { /* acc = acc op v on 32-bit lanes */
        static const ax_x86_vop ops[] = {
            [QK_ISUM] = AX_X86_VPADDD,  [QK_IPROD] = AX_X86_VPMULLD, [QK_SMAX] = AX_X86_VPMAXSD,
            [QK_SMIN] = AX_X86_VPMINSD, [QK_UMAX] = AX_X86_VPMAXUD,  [QK_UMIN] = AX_X86_VPMINUD,
            [QK_IAND] = AX_X86_VPAND,   [QK_IOR] = AX_X86_VPOR,      [QK_BAND] = AX_X86_VPAND,
            [QK_BOR] = AX_X86_VPOR};
        ax_x86_vrm(&g->a, AX_X86_VMOVUPS_LOAD, 1, 1, -1, m);
        vrr(g, ops[k], 1, 1, 0);
        ax_x86_vrm(&g->a, AX_X86_VMOVUPS_STORE, 1, 1, -1, m);
        return;
    }
    ax_x86_vrm(&g->a, AX_X86_VMOVUPS_LOAD, 1, 1, -1, m);
    emit_extreme(g, AX_F32, k == QK_MAX);
    ax_x86_vrm(&g->a, AX_X86_VMOVUPS_STORE, 1, 1, -1, m);
}

static void reset_accumulators(qg *g, int i, int32_t off, int64_t n) {
    ax_x86_mov_imm(&g->a, R(RDI), reduce_kind_of(g, &g->nd[i]));
    ax_x86_lea(&g->a, R(RSI), AT(SP, off));
    ax_x86_mov_imm(&g->a, R(RDX), n);
    call(g, (const void *)q_reset);
}

/* ---- blocks and loops ---- */

/* An iota's lanes: its row's base (in its total slot) plus the block's first index times its
 * stride along the blocked dim, plus j times that stride in lane j; converted to its dtype. */
static void emit_index(qg *g, int i) {
    const ax_code_node *n = &g->nd[i];
    int64_t k = n->stride[g->blocked];
    uint32_t lanes[LANES];
    for (int j = 0; j < LANES; j++) lanes[j] = (uint32_t)(int32_t)(j * k);
    ax_x86_load(&g->a, R(RAX), AT(SP, g->total + i * 8));
    ax_x86_mov_rr(&g->a, R(RCX), R(R12));
    ax_x86_mov_imm(&g->a, R(RDX), k);
    ax_x86_imul_rr(&g->a, R(RCX), R(RDX));
    ax_x86_add_rr(&g->a, R(RAX), R(RCX));
    ax_x86_vmovd_from(&g->a, 0, R(RAX));
    ax_x86_vrr(&g->a, AX_X86_VPBROADCASTD, 1, 0, -1, 0);
    vconst_load(g, 1, vconst(g, lanes));
    vrr(g, AX_X86_VPADDD, 0, 0, 1);
    if (n->dtype == AX_F32) vrr(g, AX_X86_VCVTDQ2PS, 0, -1, 0);
    if (n->dtype == AX_F64) vrr(g, AX_X86_VCVTDQ2PD, 0, -1, 0);
    if (is_long(n->dtype)) vrr(g, AX_X86_VPMOVSXDQ, 0, -1, 0);
    define(g, i, 0);
}

/* One block of lanes at r12: tail 0 (a full block), a constant count, or -1 (hi - r12); part:
 * which lanes of a RUNS chunk's 16 lane accumulators it feeds (the 8 or 4 from part * lanes). */
static void emit_block(qg *g, int tail, int part) {
    cache_reset(g);
    for (int i = 0; i < g->n; i++) {
        const ax_code_node *n = &g->nd[i];
        g->cur = i;
        if (n->kind == AX_KN_LOAD && !is_broadcast_load(g, i)) emit_load(g, i, tail);
        if (n->kind == AX_KN_OP) emit_op(g, i);
        if (n->kind == AX_KN_INDEX) emit_index(g, i);
        if ((n->kind == AX_KN_OP || n->kind == AX_KN_INDEX) && n->store) emit_store(g, i, tail);
        if (n->kind != AX_KN_REDUCE) continue;
        int64_t es = acc_esize(g, i);
        if (g->rk == RK_RUNS)
            emit_accumulate(g, i, AT(SP, g->acc_at[i] + (int32_t)(part * g->lanes * es)), tail);
        else
            emit_accumulate(g, i, ax_x86_idx(SP, R(R12), (int)es, g->acc_at[i]), 0);
    }
    g->cur = g->n; /* nothing is live past the block */
    for (int r = CACHE_FIRST; r < CACHE_END; r++) cache_drop(g, r);
}

/* A function call of a wide block: on the WIDE lanes of its operands' wide slots. */
static void emit_wide_call(qg *g, int i) {
    const ax_code_node *n = &g->nd[i];
    for (int k = 0; k < n->nin; k++) { /* a constant or broadcast operand: its WIDE copies */
        int src = n->in[k];
        if (g->in_wide[src]) continue;
        vload(g, 0, val(g, src));
        for (int j = 0; j < WIDE / g->lanes; j++) vstore(g, wide_slot(g, src) + j * SLOT, 0);
        g->in_wide[src] = true;
    }
    emit_function_call(g, n, wide_slot(g, i), wide_slot(g, n->in[0]),
                       wide_slot(g, n->in[n->nin - 1]), WIDE);
    g->in_wide[i] = true;
}

/* A wide block: WIDE lanes at r12 (r12 + WIDE <= the row's end), for loops that call
 * functions (exp, tanh, ...), whose calls cost too much on 8 lanes. The nodes between two calls
 * (a segment) run as blocks in a loop over the wide block (r15: the block's offset in the
 * wide slots, 32 bytes a block); the values a later segment or a call reads are kept in wide
 * slots; each call runs on all WIDE lanes at once. In RUNS a block's lane accumulators are
 * its part of 16 lanes, as in the groups of blocks (chunked_runs). */
static void emit_wide_block(qg *g) {
    g->wide = true;
    for (int i = 0; i < g->n; i++) g->in_wide[i] = false;
    for (int seg = 0; seg < g->nsegs; seg++) {
        bool work = false;
        for (int i = 0; i < g->n; i++)
            work |= (g->seg_of[i] == seg && !is_math(g, i) &&
                     !(g->nd[i].kind == AX_KN_LOAD && is_broadcast_load(g, i)) &&
                     g->nd[i].kind != AX_KN_CONST) ||
                    (is_math(g, i) && g->seg_of[i] == seg - 1 && g->nd[i].store);
        if (work) {
            int top = ax_x86_label(&g->a);
            ax_x86_mov_imm(&g->a, R(R15), 0);
            ax_x86_bind(&g->a, top);
            cache_reset(g);
            for (int i = 0; i < g->n; i++) {
                const ax_code_node *n = &g->nd[i];
                g->cur = i;
                if (is_math(g, i)) {
                    if (g->seg_of[i] == seg - 1 && n->store) emit_store(g, i, 0);
                    continue;
                }
                if (g->seg_of[i] != seg) continue;
                if (n->kind == AX_KN_LOAD && !is_broadcast_load(g, i)) emit_load(g, i, 0);
                if (n->kind == AX_KN_OP) emit_op(g, i);
                if (n->kind == AX_KN_INDEX) emit_index(g, i);
                if ((n->kind == AX_KN_OP || n->kind == AX_KN_INDEX) && n->store)
                    emit_store(g, i, 0);
                if (n->kind != AX_KN_REDUCE) continue;
                int64_t es = acc_esize(g, i);
                if (g->rk == RK_RUNS) { /* block b's part b % parts, lanes of es bytes */
                    int parts = AX_REDUCE_LANES / g->lanes;
                    ax_x86_mov_rr(&g->a, R(RAX), R(R15));
                    ax_x86_and_imm(&g->a, R(RAX), SLOT * (parts - 1)); /* part * 32 */
                    if (g->lanes * es == 2 * SLOT) ax_x86_add_rr(&g->a, R(RAX), R(RAX));
                    emit_accumulate(g, i, ax_x86_idx(SP, R(RAX), 1, g->acc_at[i]), 0);
                } else {
                    emit_accumulate(g, i, ax_x86_idx(SP, R(R12), (int)es, g->acc_at[i]), 0);
                }
            }
            g->cur = g->n;
            for (int r = CACHE_FIRST; r < CACHE_END; r++) cache_drop(g, r);
            ax_x86_add_imm(&g->a, R(R12), g->lanes);
            ax_x86_add_imm(&g->a, R(R15), SLOT);
            ax_x86_cmp_imm(&g->a, R(R15), wide_bytes(g));
            ax_x86_jcc(&g->a, AX_X86_JL, top);
            ax_x86_sub_imm(&g->a, R(R12), WIDE);
        }
        for (int i = 0; i < g->n; i++)
            if (is_math(g, i) && g->seg_of[i] == seg) emit_wide_call(g, i);
    }
    g->wide = false;
    cache_reset(g);
}

/* Wide blocks while WIDE lanes are left before `end` (a register), when the loop calls
 * functions. */
static void wide_blocks(qg *g, int end) {
    if (!g->has_math) return;
    int top = ax_x86_label(&g->a), done = ax_x86_label(&g->a);
    ax_x86_bind(&g->a, top);
    ax_x86_lea(&g->a, R(RAX), AT(R(R12), WIDE));
    ax_x86_cmp_rr(&g->a, R(RAX), end);
    ax_x86_jcc(&g->a, AX_X86_JG, done);
    emit_wide_block(g);
    ax_x86_add_imm(&g->a, R(R12), WIDE);
    ax_x86_jmp(&g->a, top);
    ax_x86_bind(&g->a, done);
}

/* The row pointers of the loads and stored values, the broadcast loads' values, and the
 * iotas' bases. */
static void row_setup(qg *g) {
    for (int i = 0; i < g->n; i++) {
        const ax_code_node *n = &g->nd[i];
        if (n->kind == AX_KN_INDEX) {
            ax_x86_mov_imm(&g->a, R(RAX), 0);
            for (int d = 0; d < g->st->ndim; d++)
                if (d != g->blocked) add_scaled_index(g, R(RAX), d, n->stride[d]);
            ax_x86_store(&g->a, AT(SP, g->total + i * 8), R(RAX));
        }
        bool stored = (n->kind == AX_KN_OP || n->kind == AX_KN_INDEX) && n->store;
        if (n->kind != AX_KN_LOAD && !stored) continue;
        row_address(g, R(RAX), n->buf, stored ? n->ostride : n->stride, ax_dtype_size(n->dtype));
        ax_x86_store(&g->a, AT(SP, rowp(g, i)), R(RAX));
        if (is_broadcast_load(g, i)) emit_row_broadcast(g, i);
    }
}

/* r12 over [lo, hi) of the blocked dim (r13 = hi): blocks of 8, then the tail. */
static void blocked_loop(qg *g) {
    int d = g->blocked;
    if (d == g->outer) {
        ax_x86_load(&g->a, R(R12), AT(SP, g->lo));
        ax_x86_load(&g->a, R(R13), AT(SP, g->hi));
    } else {
        ax_x86_mov_imm(&g->a, R(R12), 0);
        ax_x86_mov_imm(&g->a, R(R13), g->st->shape[d]);
    }
    wide_blocks(g, R(R13));
    int top = ax_x86_label(&g->a), tail = ax_x86_label(&g->a), done = ax_x86_label(&g->a);
    ax_x86_bind(&g->a, top);
    ax_x86_lea(&g->a, R(RAX), AT(R(R12), g->lanes));
    ax_x86_cmp_rr(&g->a, R(RAX), R(R13));
    ax_x86_jcc(&g->a, AX_X86_JG, tail);
    emit_block(g, 0, 0);
    ax_x86_add_imm(&g->a, R(R12), g->lanes);
    ax_x86_jmp(&g->a, top);
    ax_x86_bind(&g->a, tail);
    ax_x86_cmp_rr(&g->a, R(R12), R(R13));
    ax_x86_jcc(&g->a, AX_X86_JGE, done);
    emit_block(g, -1, 0);
    ax_x86_bind(&g->a, done);
}

/* RUNS: the run along the blocked dim in chunks; r14 = the chunk's end. Within a chunk, groups
 * of blocks feed the 16 lane accumulators in turn (2 blocks of 8 lanes, or 4 of 4). */
static void chunked_runs(qg *g) {
    int64_t extent = g->st->shape[g->blocked], rem = extent % AX_REDUCE_LANES;
    int parts = AX_REDUCE_LANES / g->lanes;
    int chunk = ax_x86_label(&g->a), done = ax_x86_label(&g->a);
    int pair = ax_x86_label(&g->a), pairs_done = ax_x86_label(&g->a), fold = ax_x86_label(&g->a);
    int capped = ax_x86_label(&g->a);
    ax_x86_mov_imm(&g->a, R(R12), 0);
    ax_x86_bind(&g->a, chunk);
    ax_x86_cmp_imm(&g->a, R(R12), (int32_t)extent);
    ax_x86_jcc(&g->a, AX_X86_JGE, done);
    for (int i = 0; i < g->n; i++)
        if (g->nd[i].kind == AX_KN_REDUCE) reset_accumulators(g, i, g->acc_at[i], AX_REDUCE_LANES);
    ax_x86_lea(&g->a, R(R14), AT(R(R12), AX_REDUCE_CHUNK));
    ax_x86_cmp_imm(&g->a, R(R14), (int32_t)extent);
    ax_x86_jcc(&g->a, AX_X86_JLE, capped);
    ax_x86_mov_imm(&g->a, R(R14), extent);
    ax_x86_bind(&g->a, capped);
    wide_blocks(g, R(R14));
    ax_x86_bind(&g->a, pair);
    ax_x86_lea(&g->a, R(RAX), AT(R(R12), AX_REDUCE_LANES));
    ax_x86_cmp_rr(&g->a, R(RAX), R(R14));
    ax_x86_jcc(&g->a, AX_X86_JG, pairs_done);
    for (int h = 0; h < parts; h++) {
        emit_block(g, 0, h);
        ax_x86_add_imm(&g->a, R(R12), g->lanes);
    }
    ax_x86_jmp(&g->a, pair);
    ax_x86_bind(&g->a, pairs_done);
    if (rem) { /* only the last chunk has a tail, of rem lanes */
        ax_x86_cmp_rr(&g->a, R(R12), R(R14));
        ax_x86_jcc(&g->a, AX_X86_JGE, fold);
        int part = 0;
        for (; rem >= g->lanes; rem -= g->lanes, part++) {
            emit_block(g, 0, part);
            ax_x86_add_imm(&g->a, R(R12), g->lanes);
        }
        if (rem) emit_block(g, (int)rem, part);
        ax_x86_mov_rr(&g->a, R(R12), R(R14));
    }
    ax_x86_bind(&g->a, fold);
    for (int i = 0; i < g->n; i++) {
        if (g->nd[i].kind != AX_KN_REDUCE) continue;
        ax_x86_mov_imm(&g->a, R(RDI), reduce_kind_of(g, &g->nd[i]));
        ax_x86_lea(&g->a, R(RSI), AT(SP, g->acc_at[i]));
        ax_x86_lea(&g->a, R(RDX), AT(SP, g->total + i * 8));
        call(g, (const void *)q_fold);
    }
    ax_x86_jmp(&g->a, chunk);
    ax_x86_bind(&g->a, done);
}

/* Before the reduced loops: accumulators (ROWS) or totals (RUNS) to the identity. */
static void reduce_begin(qg *g) {
    for (int i = 0; i < g->n; i++) {
        if (g->nd[i].kind != AX_KN_REDUCE) continue;
        if (g->rk == RK_RUNS)
            reset_accumulators(g, i, g->total + i * 8, 1);
        else
            reset_accumulators(g, i, g->acc_at[i],
                               (g->st->shape[g->blocked] + LANES - 1) / LANES * LANES);
    }
}

/* After them: the results to the outputs. */
static void reduce_end(qg *g) {
    for (int i = 0; i < g->n; i++) {
        const ax_code_node *n = &g->nd[i];
        if (n->kind != AX_KN_REDUCE) continue;
        int64_t osize = (int64_t)ax_dtype_size(n->dtype);
        row_address(g, R(RAX), n->buf, n->ostride, (size_t)osize);
        ax_x86_mov_imm(&g->a, R(RDI), reduce_kind_of(g, n));
        if (g->rk == RK_RUNS) {
            ax_x86_lea(&g->a, R(RSI), AT(SP, g->total + i * 8));
            ax_x86_mov_rr(&g->a, R(RDX), R(RAX));
            call(g, (const void *)q_store_total);
            continue;
        }
        /* ROWS: elements [b_lo, b_hi) of the row: (kind, acc + b_lo, out + b_lo * k, k, n) */
        int64_t k = n->ostride[g->blocked] * osize, es = acc_esize(g, i);
        if (g->blocked == g->outer) {
            ax_x86_load(&g->a, R(R12), AT(SP, g->lo));
            ax_x86_load(&g->a, R(R8), AT(SP, g->hi));
            ax_x86_sub_rr(&g->a, R(R8), R(R12));
        } else {
            ax_x86_mov_imm(&g->a, R(R12), 0);
            ax_x86_mov_imm(&g->a, R(R8), g->st->shape[g->blocked]);
        }
        ax_x86_lea(&g->a, R(RSI), ax_x86_idx(SP, R(R12), (int)es, g->acc_at[i]));
        ax_x86_mov_imm(&g->a, R(RDX), k);
        ax_x86_imul_rr(&g->a, R(RDX), R(R12));
        ax_x86_add_rr(&g->a, R(RDX), R(RAX));
        ax_x86_mov_imm(&g->a, R(RCX), k);
        call(g, (const void *)q_store_rows);
    }
}

static void nest(qg *g, int pos) {
    if (pos == g->first_reduced) reduce_begin(g);
    if (pos == g->norder) {
        row_setup(g);
        if (g->rk == RK_RUNS)
            chunked_runs(g);
        else
            blocked_loop(g);
    } else {
        int d = g->order[pos];
        int32_t slot = index_of(g, d);
        int top = ax_x86_label(&g->a), end = ax_x86_label(&g->a);
        if (d == g->outer) {
            ax_x86_load(&g->a, R(RAX), AT(SP, g->lo));
            ax_x86_store(&g->a, AT(SP, slot), R(RAX));
        } else {
            ax_x86_store_imm(&g->a, AT(SP, slot), 0);
        }
        ax_x86_bind(&g->a, top);
        ax_x86_load(&g->a, R(RAX), AT(SP, slot));
        if (d == g->outer) {
            ax_x86_cmp_mem(&g->a, R(RAX), AT(SP, g->hi));
        } else {
            ax_x86_mov_imm(&g->a, R(RCX), g->st->shape[d]);
            ax_x86_cmp_rr(&g->a, R(RAX), R(RCX));
        }
        ax_x86_jcc(&g->a, AX_X86_JGE, end);
        nest(g, pos + 1);
        ax_x86_add_mem_imm(&g->a, AT(SP, slot), 1);
        ax_x86_jmp(&g->a, top);
        ax_x86_bind(&g->a, end);
    }
    if (pos == g->first_reduced) reduce_end(g);
}

static const int SAVED[] = {R(RBX), R(RBP), R(R12), R(R13), R(R14), R(R15)};
enum { NSAVED = sizeof SAVED / sizeof *SAVED };

static void emit_function(qg *g) {
    for (int i = 0; i < NSAVED; i++) ax_x86_push(&g->a, SAVED[i]);
    ax_x86_mov_rr(&g->a, R(RBP), SP);
    for (int32_t left = g->frame; left > 0; left -= 4096) { /* touch each page of the frame */
        ax_x86_sub_imm(&g->a, SP, left > 4096 ? 4096 : left);
        ax_x86_store_imm(&g->a, AT(SP, 0), 0);
    }
    ax_x86_and_imm(&g->a, SP, -64);
    ax_x86_mov_rr(&g->a, R(RBX), R(RDI));
    ax_x86_store(&g->a, AT(SP, g->lo), R(RDX));
    ax_x86_store(&g->a, AT(SP, g->hi), R(RCX));
    for (int i = 0; i < g->n; i++)
        if (g->nd[i].kind == AX_KN_CONST) emit_const(g, i);
    nest(g, 0);
    ax_x86_mov_rr(&g->a, SP, R(RBP));
    for (int i = NSAVED - 1; i >= 0; i--) ax_x86_pop(&g->a, SAVED[i]);
    ax_x86_vzeroupper(&g->a);
    ax_x86_ret(&g->a);
}

/* ---------------------------------------------------------------- building */

static bool install(qg *g, const size_t *start) {
    long page = 4096;
    size_t mapped = (g->a.len + (size_t)page - 1) / (size_t)page * (size_t)page;
    void *m = mmap(NULL, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) return refuse(g, "%s", "no memory for the code");
    memcpy(m, g->a.code, g->a.len);
    if (mprotect(m, mapped, PROT_READ | PROT_EXEC)) {
        munmap(m, mapped);
        return refuse(g, "%s", "the system refuses executable memory");
    }
    ax_quick_code *q = g->q;
    q->exec = m;
    q->mapped = mapped;
    q->size = g->a.len;
    for (int s = 0; s < q->nsteps; s++) {
        if (g->code->steps[s].kind != AX_STEP_LOOP) continue;
        void *at = (char *)m + start[s];
        memcpy(&q->fn[s], &at, sizeof at); /* object to function pointer: POSIX allows it */
    }
    return true;
}

ax_quick_code *ax_quickgen_build(const ax_code *code, char *why, size_t whylen) {
    qg g = {.code = code};
    int nsteps = code->h.nsteps;
    g.q = calloc(1, sizeof *g.q);
    size_t *start = calloc((size_t)nsteps + 1, sizeof *start);
    size_t nn = (size_t)code->h.nnodes + 1;
    g.acc_at = calloc(nn, sizeof *g.acc_at);
    g.reg_of = calloc(nn, sizeof *g.reg_of);
    g.in_slot = calloc(nn, sizeof *g.in_slot);
    g.last_use = calloc(nn, sizeof *g.last_use);
    g.seg_of = calloc(nn, sizeof *g.seg_of);
    g.crosses = calloc(nn, sizeof *g.crosses);
    g.in_wide = calloc(nn, sizeof *g.in_wide);
    if (g.q) {
        g.q->nsteps = nsteps;
        g.q->fn = calloc((size_t)nsteps + 1, sizeof *g.q->fn);
        g.q->consts = aligned_alloc(64, NCONST * sizeof *g.q->consts);
    }
    bool ok = g.q && start && g.acc_at && g.reg_of && g.in_slot && g.last_use && g.seg_of &&
              g.crosses && g.in_wide && g.q->fn && g.q->consts;
    if (!ok) snprintf(g.why, sizeof g.why, "out of memory");
    ax_x86_init(&g.a);
    for (int s = 0; ok && s < nsteps; s++) {
        if (code->steps[s].kind != AX_STEP_LOOP) continue;
        while (g.a.len % 16) ax_x86_imm8(&g.a, 0xcc); /* functions start at 16 bytes */
        start[s] = g.a.len;
        ok = plan_step(&g, s);
        if (ok) emit_function(&g);
        ok = ok && !g.why[0];
    }
    if (ok && !ax_x86_finish(&g.a)) {
        snprintf(g.why, sizeof g.why, "out of memory");
        ok = false;
    }
    if (ok) ok = install(&g, start);
    ax_x86_free(&g.a);
    free(start);
    free(g.acc_at);
    free(g.reg_of);
    free(g.in_slot);
    free(g.last_use);
    free(g.seg_of);
    free(g.crosses);
    free(g.in_wide);
    if (!ok) {
        snprintf(why, whylen, "%s", g.why);
        ax_quickgen_free(g.q);
        return NULL;
    }
    return g.q;
}

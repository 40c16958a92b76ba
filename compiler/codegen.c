/* Code generation with libgccjit (see codegen.h). It reads the lowered plan (ax_code) and
 * the lowerings of the primitive table's rows (what each node computes, compiler/primitive.h)
 * and nothing else, so the jit cache key, a hash of that code and AX_CODEGEN_VERSION, covers
 * all it depends on. It implements each operation of the kernel IR (ax_kop) once; an operation
 * it has no code for is refused with an internal error, never guessed at.
 *
 * A LOOP step becomes one loop nest. The innermost dimension runs in blocks of B = 16 lanes
 * (the eager kernels' f32 vector width with AVX-512), and inside a block every equation is a
 * short loop over the lanes that GCC vectorises: strides and extents are constants, so loads,
 * arithmetic and stores become vector instructions. exp, expm1, log, tanh, logistic and erf
 * on f32 are ax's own vector math (runtime/vecmath_body.h, emitted by vecmath_jit.c), inline
 * in those loops: the code the eager kernels run, so the same bits. The other transcendental
 * functions call glibc's vector math library (libmvec) on whole blocks, through the same entry
 * points the eager kernels use: a block's code is split into "segments" at each such call;
 * values a later segment needs are kept in lane arrays.
 *
 * Reductions follow the eager kernels' algorithm (runtime/reduce.h) operation for operation:
 * runs along a reduced innermost dim go to 16 lane accumulators in chunks of 4096, folded in
 * order; f32 sums and products accumulate in f64. So jitted and eager reductions agree bit for
 * bit, and stay one pass over their input (sum(exp(x - m)) never stores exp(x - m)).
 *
 * A loop with hundreds of operations becomes a driver and "pieces" (see plan_pieces): GCC's
 * compile time grows faster than linearly with the size of a function, linearly with the
 * number of functions. */
#include "codegen.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../runtime/elementwise.h"
#include "../runtime/reduce.h"
#include "../runtime/tile.h"
#include "vecmath_jit.h"

/* libgccjit through the table of the generator in scope (compiler/gccjit.h) */
#define GJ(name) (g->api->name)

/* ---------------------------------------------------------------- what is supported */

static bool is_float(ax_dtype t) {
    return t == AX_F32 || t == AX_F64;
}
static bool is_intlike(ax_dtype t) {
    return t == AX_U8 || t == AX_I32 || t == AX_U32 || t == AX_I64;
}

/* What a node or an equation computes: its primitive's lowering (compiler/primitive.h). The
 * rows' lowerings are part of the code generator: AX_CODEGEN_VERSION covers them too. */
static const ax_lowering *lowering(ax_prim p) {
    return &ax_prim_get(p)->lower;
}

/* Float functions (libm's, ax's own, logistic): how each is computed. M_VECMATH: ax's f32
 * vector math inline in the lane loop (runtime/vecmath.h). */
typedef enum { M_NONE, M_EXPR, M_DIRECT, M_PROMOTED, M_AXFN, M_VECMATH } math_kind;

/* How lowering l on dtype t is computed, given the eager kernels' f32 vector width vw: the
 * eager kernels run ax's own vector math on f32 where the row says so, call libmvec's f32
 * functions directly for some others (with AVX-512) and go through the f64 functions for the
 * rest (runtime/elementwise.c explains why). */
static math_kind float_math(const ax_lowering *l, ax_dtype t, int vw) {
    if (l->kop == AX_KOP_AXFN) return M_AXFN;
    if (l->vecmath && t == AX_F32) return M_VECMATH;
    if (l->kop == AX_KOP_LOGISTIC) return M_EXPR;
    if (l->kop != AX_KOP_LIBM) return M_NONE;
    if (t == AX_F64 || vw == 1) return M_EXPR; /* scalar libm */
    return l->vec_f32 && vw == 16 ? M_DIRECT : M_PROMOTED;
}

bool ax_codegen_fusable(const ax_ir_eqn *e, const ax_aval *in, const ax_aval *out) {
    if (e->nout != 1 || e->nsub) return false;
    const ax_lowering *l = lowering(e->prim);
    ax_dtype t = e->nin ? in[0].dtype : out->dtype;
    if (l->kop == AX_KOP_NONE || l->kop == AX_KOP_EAGER || !(l->dtypes & AX_DT(t))) return false;
    if (ax_kop_is_reduction(l->kop))
        /* A reduction over no axes is a copy, left to the eager kernel: fusion would take it
         * for a loop without reductions yet and let other reductions join it. */
        return t == out->dtype && in[0].ndim > 0 && e->params.naxes > 0;
    switch (l->kop) { /* the limits of the loops' code */
    case AX_KOP_INTEGER_POW:
        return e->params.k >= -64 && e->params.k <= 64;
    case AX_KOP_CONVERT: /* float -> integer saturates: left to the eager kernel */
        return !(is_float(t) && is_intlike(out->dtype));
    case AX_KOP_COND:
    case AX_KOP_WHILE:
    case AX_KOP_SCAN:
        return false;
    default:
        return true;
    }
}

/* ---------------------------------------------------------------- loop structure */

enum {
    B = AX_REDUCE_LANES,     /* lanes per block; a reduction's accumulators per run */
    CHUNK = AX_REDUCE_CHUNK, /* a reduction's run is folded every CHUNK elements */
    TILE = 1024,             /* ROWS: outputs accumulated together (see nest) */
};
_Static_assert((int)AX_TILE == (int)B, "a tile's row is one block of lanes");

static bool has_reduce(const ax_code *code, const ax_code_step *st) {
    for (int i = 0; i < st->nnodes; i++)
        if (code->nodes[st->first_node + i].kind == AX_KN_REDUCE) return true;
    return false;
}

/* Whether a loop is big enough to become a driver and piece functions (see plan_pieces). */
static bool in_pieces(const ax_code *code, const ax_code_step *st) {
    int work = 0, piece_work = code->h.piece_work;
    for (int i = 0; i < st->nnodes; i++) {
        const ax_code_node *n = &code->nodes[st->first_node + i];
        work += n->kind == AX_KN_OP || n->kind == AX_KN_REDUCE;
    }
    return piece_work > 0 && work > 2 * piece_work;
}

/* A load whose lanes are not consecutive elements (x.T read along its rows): neither
 * contiguous nor broadcast along the lane dim. */
static bool strided_load(const ax_code_node *n, int lane) {
    return n->kind == AX_KN_LOAD && n->stride[lane] != 0 && n->stride[lane] != 1;
}

static int lane_dim(const ax_code *code, const ax_code_step *st);

/* A bool read along the lanes: a tile widens it (see tile_dim). */
static bool bool_load(const ax_code_node *n, int lane) {
    return n->kind == AX_KN_LOAD && n->dtype == AX_BOOL && n->stride[lane] != 0;
}

/* The dim along which loads are read in tiles (runtime/tile.h), or -1. Its loop runs in tiles
 * of AX_TILE rows, and a tile's rows inside the lane blocks: a block reads AX_TILE x B
 * elements of each tiled load through the runtime, and its lanes then read them
 * contiguously. Strided loads are tiled along the dim, other than the lane dim, in which
 * most of their bytes are contiguous (a transposed tile, read with AX_TILE contiguous runs);
 * bools along any (widened to their 32-bit values, so that the lane loops hold no bytes), by
 * default the innermost dim that may be tiled. Tiling reorders iterations, so only where no
 * reduction sees it: in loops without reductions; in ROWS reductions along their innermost
 * reduced dim (each output still takes its elements in order); in RUNS reductions along a
 * kept dim, whose AX_TILE outputs then accumulate side by side (sum(x.T, axis=1) reads x's
 * rows). Not in loops split into pieces. */
static int tile_dim(const ax_code *code, const ax_code_step *st) {
    int lane = lane_dim(code, st), inner = st->ndim - 1, last_reduced = -1;
    bool reduces = has_reduce(code, st), bools = false, runs = reduces && st->reduced[inner];
    if ((runs && lane != inner) || in_pieces(code, st)) return -1;
    for (int d = 0; d < st->ndim; d++)
        if (st->reduced[d]) last_reduced = d;
    int64_t bytes[AX_MAX_RANK] = {0};
    for (int i = 0; i < st->nnodes; i++) {
        const ax_code_node *n = &code->nodes[st->first_node + i];
        bools |= bool_load(n, lane);
        if (!strided_load(n, lane)) continue;
        for (int d = 0; d < st->ndim; d++)
            if (d != lane && n->stride[d] == 1) bytes[d] += (int64_t)ax_dtype_size(n->dtype);
    }
    int best = -1, innermost = -1;
    for (int d = 0; d < st->ndim; d++) {
        if (d == lane || (runs ? st->reduced[d] : reduces && d != last_reduced)) continue;
        innermost = d;
        if (bytes[d] > 0 && (best < 0 || bytes[d] > bytes[best])) best = d;
    }
    return best >= 0 ? best : bools ? innermost : -1;
}

/* The dim whose consecutive elements are a block's lanes: the innermost, unless it is a short
 * reduced run (sums over rows of 10): then the last kept dim, so that each lane accumulates
 * one row and no lanes are folded per row, or else the last reduced one (each lane one row of
 * the same output). */
static int lane_dim(const ax_code *code, const ax_code_step *st) {
    int inner = st->ndim - 1, kept = -1, reduced = -1;
    if (!st->reduced[inner] || st->shape[inner] >= B || !has_reduce(code, st)) return inner;
    for (int d = inner - 1; d >= 0; d--) {
        if (!st->reduced[d] && kept < 0) kept = d;
        if (st->reduced[d] && reduced < 0) reduced = d;
    }
    if (kept >= 0 && st->shape[kept] >= B) return kept;
    return reduced >= 0 && st->shape[reduced] >= B ? reduced : inner;
}

/* Loop order: kept dims outside, reduced dims inside, and the lane dim blocked; when the lane
 * dim is kept it comes before the reduced ones (per-lane accumulators); a reduced lane dim
 * comes last, or just before the innermost when that is a short run (ACROSS_RUNS). A kept
 * tile dim comes just before the lane dim, so a tile is read whole before the next. */
static int loop_order(const ax_code *code, const ax_code_step *st, int *order) {
    int n = 0, lane = lane_dim(code, st), inner = st->ndim - 1, tdim = tile_dim(code, st);
    bool across = st->reduced[lane] && lane != inner;
    for (int d = 0; d < st->ndim; d++)
        if (!st->reduced[d] && d != lane && d != tdim) order[n++] = d;
    if (tdim >= 0 && !st->reduced[tdim]) order[n++] = tdim;
    if (!st->reduced[lane]) order[n++] = lane;
    for (int d = 0; d < st->ndim; d++)
        if (st->reduced[d] && d != lane && !(across && d == inner)) order[n++] = d;
    if (st->reduced[lane]) order[n++] = lane;
    if (across) order[n++] = inner;
    return n;
}

int ax_codegen_outer_dim(const ax_code *code, int step) {
    int order[AX_MAX_RANK];
    return loop_order(code, &code->steps[step], order) > 0 ? order[0] : -1;
}

void ax_codegen_split(const ax_code *code, int step, ax_loop_split *out) {
    *out = code->steps[step].split;
}

void ax_codegen_choose_split(const ax_code *code, int step, ax_loop_split *out) {
    const ax_code_step *st = &code->steps[step];
    int order[AX_MAX_RANK];
    loop_order(code, st, order);
    int64_t total = 1;
    for (int d = 0; d < st->ndim; d++) total *= st->shape[d];
    out->extent = st->shape[order[0]];
    out->work_per_iter = out->extent ? total / out->extent : 0;
    out->granule = order[0] == lane_dim(code, st)   ? B
                   : order[0] == tile_dim(code, st) ? AX_TILE
                                                    : 1;
    out->splittable = !(st->reduced[order[0]] && has_reduce(code, st));
}

/* A load reads its lanes from the block's tile, at the block's row, when the loop has a tile
 * dim and the load is a bool or strided and contiguous along it; else in the lane loops when
 * it is contiguous or broadcast along the lane dim; else it is gathered into a lane array in
 * a loop of its own before the block's lane loops (one strided load inside a lane loop
 * keeps GCC from vectorising any of it). Tiles and gathered lanes hold values (a bool's tile
 * its 32-bit values). */
static ax_load_access load_access(const ax_code_node *n, int lane, int tdim) {
    if (tdim >= 0 && (bool_load(n, lane) || (strided_load(n, lane) && n->stride[tdim] == 1)))
        return AX_LOAD_TILE;
    return strided_load(n, lane) ? AX_LOAD_GATHER : AX_LOAD_DIRECT;
}

ax_load_access ax_codegen_load_access(const ax_code *code, int step, int node) {
    const ax_code_step *st = &code->steps[step];
    return load_access(&code->nodes[st->first_node + node], lane_dim(code, st), tile_dim(code, st));
}

/* ---------------------------------------------------------------- the generator */

/* How a LOOP step reduces (see docs/jit.md, "Reductions": the same algorithm as the eager
 * kernels, runtime/reduce.c):
 *   ROWS        the innermost dim is kept: each lane is an output, accumulated in order (over
 *               tiles of TILE outputs: the reduced loops inside the tile's, the tile's blocks
 *               innermost, so rows are read in memory order);
 *   RUNS        the innermost dim is reduced and is the lane dim: each run along it is cut into
 *               chunks of CHUNK, a chunk's elements go to B lane accumulators (element i to
 *               lane i % B) that are folded in order, and the chunk results are added in
 *               order to the output's total;
 *   SHORT_RUNS  the innermost dim is reduced but shorter than B, and the lanes run across
 *               outputs: each lane adds its run in order and the run to its total (what RUNS
 *               computes for a run of fewer than B elements);
 *   ACROSS_RUNS the same with the lanes across the runs of one output (the last reduced dim
 *               before the innermost): the lanes' runs are added to the total in lane order
 *               (sum(x) of a 100000 x 10 array). */
typedef enum { RK_NONE, RK_ROWS, RK_RUNS, RK_SHORT_RUNS, RK_ACROSS_RUNS } reduce_kind;

/* A lane array: a local array of the function being built or, in a big loop split into
 * pieces, a slot of the frame that the driver function passes to its pieces. */
typedef struct lanes_ref {
    gcc_jit_lvalue *local; /* or NULL: the frame at `off` */
    int off;
    gcc_jit_type *t;
} lanes_ref;

typedef struct cg {
    const ax_gccjit *api;
    gcc_jit_context *c;
    const ax_code *code;
    int vw; /* the eager kernels' f32 vector width (libmvec entry points) */
    gcc_jit_type *t_void, *t_i64, *t_int, *t_bool, *t_charp, *t_charpp, *t_voidp, *t_voidpp;
    gcc_jit_type *st[AX_NDTYPES]; /* type of each dtype's values in generated code */
    gcc_jit_type *mt[AX_NDTYPES]; /* its type in memory (bool: one byte; values: 32 bits, so
                                     masks have the width of the floats they select) */
    gcc_jit_type *ut[AX_NDTYPES]; /* its unsigned twin (bit patterns, wrapping arithmetic) */
    /* the function being built */
    gcc_jit_function *fn;
    gcc_jit_block *blk;
    gcc_jit_rvalue *bufs, *fns, *lo, *hi, *frame;
    int nlocals;
    /* the kernel being built: what holds for all its functions */
    int step;
    const ax_code_step *ks;
    const ax_code_node *nd; /* its nodes */
    int n;
    int order[AX_MAX_RANK], lane;
    int first_reduced; /* position in order of the first reduced dim */
    int run_pos;       /* SHORT_RUNS: position of the reduced innermost dim, else -1 */
    reduce_kind rk;
    int tdim;                /* the dim strided loads are tiled along (tile_dim), or -1 */
    bool trun;               /* RUNS tiled along a kept dim: accumulators and totals per row */
    gcc_jit_lvalue *t_lo;    /* the current tile's first index in tdim */
    gcc_jit_rvalue *t_rows;  /* its rows */
    gcc_jit_lvalue *t_i;     /* the row of it the block computes */
    bool tiled;              /* ROWS over tiles: accumulators for tile_w lanes */
    int64_t tile_w;          /* a tile's lanes: TILE, or the lane dim rounded up to B if less */
    gcc_jit_lvalue *tile_lo; /* the driver's current tile: [tile_lo, tile_hi) of the lane dim */
    gcc_jit_rvalue *tile_hi;
    gcc_jit_rvalue *accoff_p; /* a piece's offset of its block in the tile (a parameter) */
    bool *math;               /* per node: a vector call on whole blocks */
    ax_sign *sign;            /* per node: what is known of its sign */
    int *seg;                 /* per node: its segment (a new one at each vector call and piece) */
    bool *spilled;  /* per node: kept in a lane array (read by another segment, or stored) */
    int *piece;     /* per node: the piece function computing it */
    int *frame_off; /* per node: its lane array's (or accumulator's) place in the frame, or -1 */
    bool *far;      /* per node: read by another piece */
    char *access;   /* per node: how a load reads its lanes (ax_load_access) */
    int *gathers;   /* scratch: the loads a block gathers */
    bool *gathering;
    int npieces, frame_bytes;
    gcc_jit_function **piece_fn;
    /* the function being built: per node (reset for each function) */
    gcc_jit_rvalue **ptr;                               /* per buffer slot: its typed pointer */
    gcc_jit_lvalue **spill, **mathin, **mathin2, **acc; /* local lane arrays, made on use */
    gcc_jit_lvalue **tot;                               /* RUNS, SHORT_RUNS: per-output totals */
    gcc_jit_lvalue **lbuf; /* strided loads: the block's tile or gathered lanes, made on use */
    gcc_jit_lvalue *idxl[AX_MAX_RANK]; /* the driver's loop indices */
    gcc_jit_rvalue *idxp[AX_MAX_RANK]; /* a piece's (parameters) */
    /* the current lane loop */
    gcc_jit_lvalue *j;
    gcc_jit_rvalue *L; /* lanes in this block: B, or the tail's count */
    bool tail;
    bool prefetch;        /* this loop prefetches its contiguous inputs (wants_prefetch) */
    int cur;              /* current segment */
    gcc_jit_rvalue **val; /* per node: its value in the current lane loop, or NULL */
    char refused[200];    /* the first operation refused (see refuse), or "" */
} cg;

static char *fresh(cg *g, const char *base, char *buf, size_t n) {
    snprintf(buf, n, "%s%d", base, g->nlocals++);
    return buf;
}

static gcc_jit_lvalue *local(cg *g, gcc_jit_type *t, const char *base) {
    char name[32];
    return GJ(gcc_jit_function_new_local)(g->fn, NULL, t, fresh(g, base, name, sizeof name));
}

static gcc_jit_block *block(cg *g, const char *base) {
    char name[32];
    return GJ(gcc_jit_function_new_block)(g->fn, fresh(g, base, name, sizeof name));
}

static gcc_jit_rvalue *i64c(cg *g, int64_t v) {
    return GJ(gcc_jit_context_new_rvalue_from_long)(g->c, g->t_i64, (long)v);
}

static gcc_jit_rvalue *rv(cg *g, gcc_jit_lvalue *l) {
    return GJ(gcc_jit_lvalue_as_rvalue)(l);
}

static gcc_jit_rvalue *bin(cg *g, enum gcc_jit_binary_op op, gcc_jit_type *t, gcc_jit_rvalue *a,
                           gcc_jit_rvalue *b) {
    return GJ(gcc_jit_context_new_binary_op)(g->c, NULL, op, t, a, b);
}

static gcc_jit_rvalue *cmp(cg *g, enum gcc_jit_comparison op, gcc_jit_rvalue *a,
                           gcc_jit_rvalue *b) {
    return GJ(gcc_jit_context_new_comparison)(g->c, NULL, op, a, b);
}

static gcc_jit_rvalue *cast(cg *g, gcc_jit_rvalue *v, gcc_jit_type *t) {
    return GJ(gcc_jit_context_new_cast)(g->c, NULL, v, t);
}

static gcc_jit_rvalue *bitcast(cg *g, gcc_jit_rvalue *v, gcc_jit_type *t) {
    return GJ(gcc_jit_context_new_bitcast)(g->c, NULL, v, t);
}

static void assign(cg *g, gcc_jit_lvalue *l, gcc_jit_rvalue *v) {
    GJ(gcc_jit_block_add_assignment)(g->blk, NULL, l, v);
}

static gcc_jit_lvalue *at(cg *g, gcc_jit_rvalue *ptr, gcc_jit_rvalue *i) {
    return GJ(gcc_jit_context_new_array_access)(g->c, NULL, ptr, i);
}

/* A value held in a local, so later code refers to it by name rather than re-evaluating. */
static gcc_jit_rvalue *hold(cg *g, gcc_jit_type *t, gcc_jit_rvalue *v) {
    gcc_jit_lvalue *l = local(g, t, "t");
    assign(g, l, v);
    return rv(g, l);
}

static gcc_jit_function *builtin(cg *g, const char *name) {
    return GJ(gcc_jit_context_get_builtin_function)(g->c, name);
}

static gcc_jit_rvalue *call1(cg *g, gcc_jit_function *f, gcc_jit_rvalue *a) {
    return GJ(gcc_jit_context_new_call)(g->c, NULL, f, 1, &a);
}

static gcc_jit_rvalue *call2(cg *g, gcc_jit_function *f, gcc_jit_rvalue *a, gcc_jit_rvalue *b) {
    gcc_jit_rvalue *args[2] = {a, b};
    return GJ(gcc_jit_context_new_call)(g->c, NULL, f, 2, args);
}

/* An imported function (libm, libmvec) taking n values of type `arg`. */
static gcc_jit_function *import(cg *g, const char *name, gcc_jit_type *ret, gcc_jit_type *arg,
                                int n) {
    gcc_jit_param *p[2];
    for (int i = 0; i < n; i++)
        p[i] = GJ(gcc_jit_context_new_param)(g->c, NULL, arg, i ? "b" : "a");
    return GJ(gcc_jit_context_new_function)(g->c, NULL, GCC_JIT_FUNCTION_IMPORTED, ret, name, n, p,
                                            0);
}

/* cond ? a : b without a branch: the bits of a and b blended by a mask, which vectorises. */
static gcc_jit_rvalue *sel(cg *g, ax_dtype t, gcc_jit_rvalue *cond, gcc_jit_rvalue *a,
                           gcc_jit_rvalue *b) {
    gcc_jit_type *u = g->ut[t];
    gcc_jit_rvalue *mask = bin(g, GCC_JIT_BINARY_OP_MINUS, u, GJ(gcc_jit_context_zero)(g->c, u),
                               cast(g, cast(g, cond, g->t_int), u));
    gcc_jit_rvalue *ua = is_float(t) ? bitcast(g, a, u) : cast(g, a, u);
    gcc_jit_rvalue *ub = is_float(t) ? bitcast(g, b, u) : cast(g, b, u);
    gcc_jit_rvalue *notmask =
        GJ(gcc_jit_context_new_unary_op)(g->c, NULL, GCC_JIT_UNARY_OP_BITWISE_NEGATE, u, mask);
    gcc_jit_rvalue *r =
        bin(g, GCC_JIT_BINARY_OP_BITWISE_OR, u, bin(g, GCC_JIT_BINARY_OP_BITWISE_AND, u, ua, mask),
            bin(g, GCC_JIT_BINARY_OP_BITWISE_AND, u, ub, notmask));
    return is_float(t) ? bitcast(g, r, g->st[t]) : cast(g, r, g->st[t]);
}

static gcc_jit_rvalue *to_bool_storage(cg *g, gcc_jit_rvalue *cond) {
    return cast(g, cast(g, cond, g->t_int), g->st[AX_BOOL]);
}

static gcc_jit_rvalue *is_nan(cg *g, gcc_jit_rvalue *v) {
    return cmp(g, GCC_JIT_COMPARISON_NE, v, v);
}

/* A literal of dtype t from 8 bytes of raw data (floats through their bits, so NaN, infinities
 * and -0.0 stay exact). */
static gcc_jit_rvalue *literal(cg *g, ax_dtype t, const void *data) {
    switch (t) {
    case AX_BOOL:
    case AX_U8:
        return GJ(gcc_jit_context_new_rvalue_from_int)(
            g->c, g->st[t],
            *(const uint8_t *)data != 0 && t == AX_BOOL ? 1 : *(const uint8_t *)data);
    case AX_I32:
        return GJ(gcc_jit_context_new_rvalue_from_int)(g->c, g->st[t], *(const int32_t *)data);
    case AX_U32:
        return GJ(gcc_jit_context_new_rvalue_from_long)(g->c, g->st[t], *(const uint32_t *)data);
    case AX_I64:
        return GJ(gcc_jit_context_new_rvalue_from_long)(g->c, g->st[t],
                                                        (long)*(const int64_t *)data);
    case AX_F32: {
        uint32_t bits;
        memcpy(&bits, data, 4);
        return bitcast(g, GJ(gcc_jit_context_new_rvalue_from_long)(g->c, g->ut[t], bits), g->st[t]);
    }
    default: {
        uint64_t bits;
        memcpy(&bits, data, 8);
        return bitcast(g, GJ(gcc_jit_context_new_rvalue_from_long)(g->c, g->ut[t], (long)bits),
                       g->st[t]);
    }
    }
}

static gcc_jit_rvalue *fconst(cg *g, ax_dtype t, double v) {
    if (t == AX_F32) {
        float f = (float)v;
        return literal(g, t, &f);
    }
    if (t == AX_F64) return literal(g, t, &v);
    return GJ(gcc_jit_context_new_rvalue_from_long)(g->c, g->st[t], (long)v);
}

/* ---- loops ---- */

typedef struct loop {
    gcc_jit_block *head, *after;
    gcc_jit_lvalue *var;
    gcc_jit_rvalue *step;
} loop;

static loop loop_begin(cg *g, gcc_jit_lvalue *var, gcc_jit_rvalue *from, gcc_jit_rvalue *to,
                       gcc_jit_rvalue *step) {
    loop l = {.head = block(g, "head"), .after = block(g, "after"), .var = var, .step = step};
    gcc_jit_block *body = block(g, "body");
    assign(g, var, from);
    GJ(gcc_jit_block_end_with_jump)(g->blk, NULL, l.head);
    GJ(gcc_jit_block_end_with_conditional)
    (l.head, NULL, cmp(g, GCC_JIT_COMPARISON_LT, rv(g, var), to), body, l.after);
    g->blk = body;
    return l;
}

static void loop_end(cg *g, const loop *l) {
    GJ(gcc_jit_block_add_assignment_op)(g->blk, NULL, l->var, GCC_JIT_BINARY_OP_PLUS, l->step);
    GJ(gcc_jit_block_end_with_jump)(g->blk, NULL, l->head);
    g->blk = l->after;
}

/* A loop over the lanes [0, L) of the current block; values computed in it are its own. */
static loop lanes_begin(cg *g) {
    memset(g->val, 0, (size_t)g->n * sizeof *g->val);
    return loop_begin(g, g->j, i64c(g, 0), g->L, i64c(g, 1));
}

/* The same over [0, n) lanes for a constant n. */
static loop lanes_upto(cg *g, int64_t n) {
    memset(g->val, 0, (size_t)g->n * sizeof *g->val);
    return loop_begin(g, g->j, i64c(g, 0), i64c(g, n), i64c(g, 1));
}

/* ---- lane arrays ---- */

/* A local array of n elements of type t, aligned for vector loads. */
static gcc_jit_lvalue *array_of(cg *g, gcc_jit_type *t, int n, const char *base) {
    gcc_jit_type *arr = GJ(gcc_jit_context_new_array_type)(g->c, NULL, t, n);
    return local(g, GJ(gcc_jit_type_get_aligned)(arr, 64), base);
}

static gcc_jit_lvalue *lane_array(cg *g, gcc_jit_type *t, const char *base) {
    return array_of(g, t, B, base);
}

static lanes_ref local_ref(cg *g, gcc_jit_lvalue **slot, gcc_jit_type *t, const char *base) {
    if (!*slot) *slot = lane_array(g, t, base);
    return (lanes_ref){.local = *slot, .t = t};
}

/* Element k of a lane array. */
static gcc_jit_lvalue *ref_at(cg *g, lanes_ref r, gcc_jit_rvalue *k) {
    if (r.local) return at(g, rv(g, r.local), k);
    gcc_jit_rvalue *byte = GJ(gcc_jit_lvalue_get_address)(at(g, g->frame, i64c(g, r.off)), NULL);
    return at(g, cast(g, byte, GJ(gcc_jit_type_get_pointer)(r.t)), k);
}

static gcc_jit_lvalue *ref_lane(cg *g, lanes_ref r) {
    return ref_at(g, r, rv(g, g->j));
}

/* Node i's lane array: in the frame when another piece reads it. */
static lanes_ref spill_ref(cg *g, int i) {
    gcc_jit_type *t = g->st[g->nd[i].dtype];
    if (g->frame_off[i] >= 0) return (lanes_ref){.off = g->frame_off[i], .t = t};
    return local_ref(g, &g->spill[i], t, "sp");
}

static ax_dtype acc_dtype(const cg *g, int i) {
    const ax_code_node *n = &g->nd[i];
    ax_kop k = lowering(n->prim)->kop;
    bool widen = k == AX_KOP_REDUCE_SUM || k == AX_KOP_REDUCE_PROD;
    return n->dtype == AX_F32 && widen ? AX_F64 : n->dtype;
}

/* Reduction node i's lane accumulators (B, or tile_w when tiled): in the frame when the loop
 * has pieces. */
static lanes_ref acc_ref(cg *g, int i) {
    gcc_jit_type *t = g->st[acc_dtype(g, i)];
    if (g->npieces > 1) return (lanes_ref){.off = g->frame_off[i], .t = t};
    if (!g->acc[i])
        g->acc[i] = array_of(g, t, g->tiled ? g->tile_w : g->trun ? B * AX_TILE : B, "acc");
    return (lanes_ref){.local = g->acc[i], .t = t};
}

/* With RUNS tiled, element k of the current tile row's accumulators (else element k). */
static gcc_jit_lvalue *acc_at(cg *g, int i, gcc_jit_rvalue *k) {
    if (g->trun)
        k = bin(g, GCC_JIT_BINARY_OP_PLUS, g->t_i64,
                bin(g, GCC_JIT_BINARY_OP_MULT, g->t_i64, rv(g, g->t_i), i64c(g, B)), k);
    return ref_at(g, acc_ref(g, i), k);
}

/* The accumulator of the current lane: lane j, or in a tile the block's offset in it plus j. */
static gcc_jit_lvalue *acc_lane(cg *g, int i) {
    if (g->trun) return acc_at(g, i, rv(g, g->j));
    if (!g->tiled) return ref_lane(g, acc_ref(g, i));
    gcc_jit_rvalue *off = g->accoff_p ? g->accoff_p
                                      : bin(g, GCC_JIT_BINARY_OP_MINUS, g->t_i64,
                                            rv(g, g->idxl[g->lane]), rv(g, g->tile_lo));
    return ref_at(g, acc_ref(g, i), bin(g, GCC_JIT_BINARY_OP_PLUS, g->t_i64, off, rv(g, g->j)));
}

static lanes_ref mathin_ref(cg *g, int i, int which) {
    return local_ref(g, which ? &g->mathin2[i] : &g->mathin[i], g->st[AX_F32], "min");
}

/* ---- values ---- */

static gcc_jit_rvalue *index_value(cg *g, int d) {
    return g->npieces > 1 && g->idxp[d] ? g->idxp[d] : rv(g, g->idxl[d]);
}

/* The element offset at lane j of an access with these strides: sum of index * stride over
 * the loop dims. */
static gcc_jit_rvalue *offset(cg *g, const int64_t *stride, bool with_lane) {
    gcc_jit_rvalue *off = NULL;
    for (int d = 0; d < g->ks->ndim; d++) {
        if (!stride[d]) continue;
        gcc_jit_rvalue *pos = index_value(g, d);
        if (d == g->lane && with_lane)
            pos = bin(g, GCC_JIT_BINARY_OP_PLUS, g->t_i64, pos, rv(g, g->j));
        gcc_jit_rvalue *term = bin(g, GCC_JIT_BINARY_OP_MULT, g->t_i64, pos, i64c(g, stride[d]));
        off = off ? bin(g, GCC_JIT_BINARY_OP_PLUS, g->t_i64, off, term) : term;
    }
    return off ? off : i64c(g, 0);
}

static gcc_jit_rvalue *value(cg *g, int i);
static gcc_jit_rvalue *op_value(cg *g, int i);

/* A strided load's tile or gathered lanes in the function being built. */
static gcc_jit_rvalue *load_buf(cg *g, int i) {
    if (!g->lbuf[i]) {
        bool tile = g->access[i] == AX_LOAD_TILE;
        g->lbuf[i] =
            array_of(g, g->st[g->nd[i].dtype], tile ? AX_TILE * AX_TILE : B, tile ? "tb" : "gb");
    }
    return rv(g, g->lbuf[i]);
}

/* Strided load i's element at the current lane, from its tile or gathered lanes. */
static gcc_jit_lvalue *load_buf_lane(cg *g, int i) {
    gcc_jit_rvalue *k = rv(g, g->j);
    if (g->access[i] == AX_LOAD_TILE)
        k = bin(g, GCC_JIT_BINARY_OP_PLUS, g->t_i64,
                bin(g, GCC_JIT_BINARY_OP_MULT, g->t_i64, rv(g, g->t_i), i64c(g, AX_TILE)), k);
    return at(g, load_buf(g, i), k);
}

static gcc_jit_rvalue *compute(cg *g, int i) {
    const ax_code_node *n = &g->nd[i];
    switch (n->kind) {
    case AX_KN_LOAD:
        if (g->access[i] != AX_LOAD_DIRECT) return rv(g, load_buf_lane(g, i));
        return cast(g, rv(g, at(g, g->ptr[n->buf], offset(g, n->stride, true))), g->st[n->dtype]);
    case AX_KN_CONST:
        return literal(g, n->dtype, &n->lit);
    case AX_KN_INDEX:
        return cast(g, offset(g, n->stride, true), g->st[n->dtype]);
    default:
        return op_value(g, i);
    }
}

/* Node i's value at the current lane: computed once per lane loop, or read back from the lane
 * array of an earlier segment. */
static gcc_jit_rvalue *value(cg *g, int i) {
    if (g->val[i]) return g->val[i];
    const ax_code_node *n = &g->nd[i];
    gcc_jit_rvalue *v;
    if (g->math[i] || (n->kind == AX_KN_OP && g->seg[i] != g->cur))
        v = rv(g, ref_lane(g, spill_ref(g, i)));
    else
        v = hold(g, g->st[n->dtype], compute(g, i));
    g->val[i] = v;
    return v;
}

static gcc_jit_rvalue *wrap_arith(cg *g, enum gcc_jit_binary_op op, ax_dtype t, gcc_jit_rvalue *a,
                                  gcc_jit_rvalue *b) {
    if (is_float(t)) return bin(g, op, g->st[t], a, b);
    gcc_jit_type *u = g->ut[t];
    return cast(g, bin(g, op, u, cast(g, a, u), cast(g, b, u)), g->st[t]);
}

static gcc_jit_rvalue *max_min(cg *g, ax_dtype t, bool is_max, gcc_jit_rvalue *a,
                               gcc_jit_rvalue *b) {
    gcc_jit_rvalue *keep = cmp(g, is_max ? GCC_JIT_COMPARISON_GE : GCC_JIT_COMPARISON_LE, a, b);
    if (is_float(t)) /* NaN propagates, as lax.max */
        keep = bin(g, GCC_JIT_BINARY_OP_LOGICAL_OR, g->t_bool, keep, is_nan(g, a));
    return sel(g, t, keep, a, b);
}

static const char *fsuffix(ax_dtype t) {
    return t == AX_F32 ? "f" : "";
}

static gcc_jit_rvalue *fbuiltin(cg *g, const char *base, ax_dtype t, gcc_jit_rvalue *v) {
    char name[48];
    snprintf(name, sizeof name, "__builtin_%s%s", base, fsuffix(t));
    return call1(g, builtin(g, name), v);
}

/* XLA's sign: +-1, keeping zeros and NaN. */
static gcc_jit_rvalue *float_sign(cg *g, ax_dtype t, gcc_jit_rvalue *v) {
    char name[48];
    snprintf(name, sizeof name, "__builtin_copysign%s", fsuffix(t));
    gcc_jit_rvalue *one = call2(g, builtin(g, name), fconst(g, t, 1.0), v);
    gcc_jit_rvalue *keep = bin(g, GCC_JIT_BINARY_OP_LOGICAL_OR, g->t_bool, is_nan(g, v),
                               cmp(g, GCC_JIT_COMPARISON_EQ, v, fconst(g, t, 0.0)));
    return sel(g, t, keep, v, one);
}

static gcc_jit_rvalue *integer_pow(cg *g, ax_dtype t, gcc_jit_rvalue *x, int64_t k) {
    uint64_t e = k < 0 ? 0 - (uint64_t)k : (uint64_t)k;
    gcc_jit_rvalue *acc = NULL;
    while (e > 0) { /* the products of the eager kernel, in its order */
        if (e & 1)
            acc = acc ? hold(g, g->st[t], bin(g, GCC_JIT_BINARY_OP_MULT, g->st[t], acc, x)) : x;
        e >>= 1;
        if (e > 0) x = hold(g, g->st[t], bin(g, GCC_JIT_BINARY_OP_MULT, g->st[t], x, x));
    }
    if (!acc) acc = fconst(g, t, 1.0);
    return k < 0 ? bin(g, GCC_JIT_BINARY_OP_DIVIDE, g->st[t], fconst(g, t, 1.0), acc) : acc;
}

/* An operation this code generator has no code for: a row's lowering that does not fit what
 * fusion made of its equation (a unary operation given two operands, a reduction as an
 * elementwise node, ...). Refused, never guessed at: the first such is recorded and
 * ax_codegen_build fails with it; the value returned only lets the build reach its end. */
static gcc_jit_rvalue *refuse(cg *g, ax_prim p, ax_dtype t, const char *as) {
    if (!g->refused[0])
        snprintf(g->refused, sizeof g->refused,
                 "internal error: the code generator has no code for %s as %s (its lowering is "
                 "operation %d)",
                 ax_prim_get(p)->name, as, (int)lowering(p)->kop);
    return GJ(gcc_jit_context_zero)(g->c, g->st[t]);
}

/* ax's f32 vector math function f on x, of sign `sign`, emitted where the function being built
 * is. */
static gcc_jit_rvalue *vecmath(cg *g, ax_vm_fn f, gcc_jit_rvalue *x, ax_sign sign) {
    ax_vecmath_jit where = {g->api, g->c, g->fn, g->blk, &g->nlocals};
    gcc_jit_rvalue *y = ax_vecmath_jit_emit(&where, f, x, sign);
    g->blk = where.blk;
    return y;
}

/* A float function through its scalar implementation: libm for f64 (as the eager kernels),
 * ax's own special functions through the fns table, ax's f32 vector math inline. */
static gcc_jit_rvalue *scalar_math(cg *g, const ax_code_node *e, ax_dtype t, gcc_jit_rvalue *a,
                                   gcc_jit_rvalue *b) {
    gcc_jit_type *ft = g->st[t];
    const ax_lowering *l = lowering(e->prim);
    if (float_math(l, t, g->vw) == M_VECMATH) return vecmath(g, l->vm, a, g->sign[e->in[0]]);
    if (float_math(l, t, g->vw) == M_AXFN) {
        int slot = l->fn_slot + (t == AX_F64);
        gcc_jit_type *fp = GJ(gcc_jit_context_new_function_ptr_type)(g->c, NULL, ft, 1, &ft, 0);
        gcc_jit_rvalue *f = cast(g, rv(g, at(g, g->fns, i64c(g, slot))), fp);
        return GJ(gcc_jit_context_new_call_through_ptr)(g->c, NULL, f, 1, &a);
    }
    if (l->kop == AX_KOP_LOGISTIC) { /* 1/(1+e) or e/(1+e) with e = exp(-|x|), in f64 */
        gcc_jit_type *d = g->st[AX_F64];
        gcc_jit_rvalue *x = cast(g, a, d);
        gcc_jit_rvalue *e =
            hold(g, d,
                 call1(g, import(g, "exp", d, d, 1),
                       GJ(gcc_jit_context_new_unary_op)(g->c, NULL, GCC_JIT_UNARY_OP_MINUS, d,
                                                        fbuiltin(g, "fabs", AX_F64, x))));
        gcc_jit_rvalue *q = bin(g, GCC_JIT_BINARY_OP_PLUS, d, fconst(g, AX_F64, 1.0), e);
        gcc_jit_rvalue *r = sel(g, AX_F64, cmp(g, GCC_JIT_COMPARISON_GE, x, fconst(g, AX_F64, 0)),
                                bin(g, GCC_JIT_BINARY_OP_DIVIDE, d, fconst(g, AX_F64, 1.0), q),
                                bin(g, GCC_JIT_BINARY_OP_DIVIDE, d, e, q));
        r = sel(g, AX_F64, is_nan(g, x), x, r);
        return cast(g, r, ft);
    }
    /* f64, or f32 without libmvec: the f64 libm function, rounded once */
    gcc_jit_type *d = g->st[AX_F64];
    int n = b ? 2 : 1;
    gcc_jit_function *f = import(g, l->fn, d, d, n);
    gcc_jit_rvalue *r =
        n == 2 ? call2(g, f, cast(g, a, d), cast(g, b, d)) : call1(g, f, cast(g, a, d));
    return cast(g, r, ft);
}

static gcc_jit_rvalue *shift(cg *g, ax_kop k, ax_dtype t, gcc_jit_rvalue *a, gcc_jit_rvalue *b) {
    gcc_jit_type *u = g->ut[t];
    int bits = (int)ax_dtype_size(t) * 8;
    gcc_jit_rvalue *big = cmp(g, GCC_JIT_COMPARISON_GE, cast(g, b, u),
                              GJ(gcc_jit_context_new_rvalue_from_int)(g->c, u, bits));
    gcc_jit_rvalue *amount = bin(g, GCC_JIT_BINARY_OP_BITWISE_AND, u, cast(g, b, u),
                                 GJ(gcc_jit_context_new_rvalue_from_int)(g->c, u, bits - 1));
    gcc_jit_rvalue *zero = GJ(gcc_jit_context_zero)(g->c, g->st[t]);
    if (k == AX_KOP_SHL)
        return sel(g, t, big, zero,
                   cast(g, bin(g, GCC_JIT_BINARY_OP_LSHIFT, u, cast(g, a, u), amount), g->st[t]));
    if (k == AX_KOP_SHR_LOGICAL)
        return sel(g, t, big, zero,
                   cast(g, bin(g, GCC_JIT_BINARY_OP_RSHIFT, u, cast(g, a, u), amount), g->st[t]));
    /* arithmetic: the sign-extended pattern shifted by min(b, bits - 1) */
    gcc_jit_type *s = t == AX_I64 ? g->st[AX_I64] : g->st[AX_I32];
    gcc_jit_rvalue *clamped =
        sel(g, t == AX_I64 ? AX_U32 : AX_U32, big,
            GJ(gcc_jit_context_new_rvalue_from_int)(g->c, g->st[AX_U32], bits - 1),
            cast(g, amount, g->st[AX_U32]));
    return cast(g, bin(g, GCC_JIT_BINARY_OP_RSHIFT, s, cast(g, a, s), cast(g, clamped, s)),
                g->st[t]);
}

static gcc_jit_rvalue *compare(cg *g, enum gcc_jit_comparison op, gcc_jit_rvalue *a,
                               gcc_jit_rvalue *b) {
    return to_bool_storage(g, cmp(g, op, a, b));
}

/* An elementwise operation of operand a (and b, of operations of two operands) of dtype t: the
 * case of its row's kernel operation. */
static gcc_jit_rvalue *elementwise_value(cg *g, const ax_code_node *e, ax_dtype t,
                                         gcc_jit_rvalue *a, gcc_jit_rvalue *b) {
    gcc_jit_type *ty = g->st[t];
    const ax_lowering *l = lowering(e->prim);
    /* add ... ge, listed together in ax_kop, take two */
    if (!b && l->kop >= AX_KOP_ADD && l->kop <= AX_KOP_GE)
        return refuse(g, e->prim, t, "an operation of one operand");
    switch (l->kop) {
    case AX_KOP_NEG: /* floats: a sign flip (0 - x would give +0 for +0) */
        if (is_float(t))
            return GJ(gcc_jit_context_new_unary_op)(g->c, NULL, GCC_JIT_UNARY_OP_MINUS, ty, a);
        return wrap_arith(g, GCC_JIT_BINARY_OP_MINUS, t, GJ(gcc_jit_context_zero)(g->c, ty), a);
    case AX_KOP_COPY:
        return a;
    case AX_KOP_ABS:
        if (is_float(t)) return fbuiltin(g, "fabs", t, a);
        return sel(g, t, cmp(g, GCC_JIT_COMPARISON_LT, a, GJ(gcc_jit_context_zero)(g->c, ty)),
                   wrap_arith(g, GCC_JIT_BINARY_OP_MINUS, t, GJ(gcc_jit_context_zero)(g->c, ty), a),
                   a);
    case AX_KOP_SIGN:
        if (is_float(t)) return float_sign(g, t, a);
        return cast(
            g,
            bin(g, GCC_JIT_BINARY_OP_MINUS, g->t_int,
                cast(g, cmp(g, GCC_JIT_COMPARISON_GT, a, GJ(gcc_jit_context_zero)(g->c, ty)),
                     g->t_int),
                cast(g, cmp(g, GCC_JIT_COMPARISON_LT, a, GJ(gcc_jit_context_zero)(g->c, ty)),
                     g->t_int)),
            ty);
    case AX_KOP_NOT:
        if (t == AX_BOOL)
            return bin(g, GCC_JIT_BINARY_OP_BITWISE_XOR, ty, a, GJ(gcc_jit_context_one)(g->c, ty));
        return GJ(gcc_jit_context_new_unary_op)(g->c, NULL, GCC_JIT_UNARY_OP_BITWISE_NEGATE, ty, a);
    case AX_KOP_BUILTIN:
        return fbuiltin(g, l->fn, t, a);
    case AX_KOP_RSQRT:
        return bin(g, GCC_JIT_BINARY_OP_DIVIDE, ty, fconst(g, t, 1.0), fbuiltin(g, "sqrt", t, a));
    case AX_KOP_SQUARE:
        return wrap_arith(g, GCC_JIT_BINARY_OP_MULT, t, a, a);
    case AX_KOP_IS_FINITE: {
        gcc_jit_type *u = g->ut[t];
        gcc_jit_rvalue *expo =
            t == AX_F32 ? GJ(gcc_jit_context_new_rvalue_from_long)(g->c, u, 0x7f800000L)
                        : GJ(gcc_jit_context_new_rvalue_from_long)(g->c, u, 0x7ff0000000000000L);
        return to_bool_storage(
            g, cmp(g, GCC_JIT_COMPARISON_NE,
                   bin(g, GCC_JIT_BINARY_OP_BITWISE_AND, u, bitcast(g, a, u), expo), expo));
    }
    case AX_KOP_INTEGER_POW:
        return integer_pow(g, t, a, e->k);
    case AX_KOP_LIBM: /* of one or two operands */
    case AX_KOP_AXFN:
    case AX_KOP_LOGISTIC:
        return scalar_math(g, e, t, a, b);
    case AX_KOP_ADD:
        return wrap_arith(g, GCC_JIT_BINARY_OP_PLUS, t, a, b);
    case AX_KOP_SUB:
        return wrap_arith(g, GCC_JIT_BINARY_OP_MINUS, t, a, b);
    case AX_KOP_MUL:
        return wrap_arith(g, GCC_JIT_BINARY_OP_MULT, t, a, b);
    case AX_KOP_DIV:
        return bin(g, GCC_JIT_BINARY_OP_DIVIDE, ty, a, b);
    case AX_KOP_MAX:
        return max_min(g, t, true, a, b);
    case AX_KOP_MIN:
        return max_min(g, t, false, a, b);
    case AX_KOP_AND:
        return bin(g, GCC_JIT_BINARY_OP_BITWISE_AND, ty, a, b);
    case AX_KOP_OR:
        return bin(g, GCC_JIT_BINARY_OP_BITWISE_OR, ty, a, b);
    case AX_KOP_XOR:
        return bin(g, GCC_JIT_BINARY_OP_BITWISE_XOR, ty, a, b);
    case AX_KOP_SHL:
    case AX_KOP_SHR_LOGICAL:
    case AX_KOP_SHR_ARITH:
        return shift(g, l->kop, t, a, b);
    case AX_KOP_EQ:
        return compare(g, GCC_JIT_COMPARISON_EQ, a, b);
    case AX_KOP_NE:
        return compare(g, GCC_JIT_COMPARISON_NE, a, b);
    case AX_KOP_LT:
        return compare(g, GCC_JIT_COMPARISON_LT, a, b);
    case AX_KOP_LE:
        return compare(g, GCC_JIT_COMPARISON_LE, a, b);
    case AX_KOP_GT:
        return compare(g, GCC_JIT_COMPARISON_GT, a, b);
    case AX_KOP_GE:
        return compare(g, GCC_JIT_COMPARISON_GE, a, b);
    /* not elementwise operations of one or two operands */
    case AX_KOP_NONE:
    case AX_KOP_EAGER:
    case AX_KOP_SELECT:
    case AX_KOP_CLAMP:
    case AX_KOP_CONVERT:
    case AX_KOP_REDUCE_SUM:
    case AX_KOP_REDUCE_PROD:
    case AX_KOP_REDUCE_MAX:
    case AX_KOP_REDUCE_MIN:
    case AX_KOP_REDUCE_AND:
    case AX_KOP_REDUCE_OR:
    case AX_KOP_INDEX:
    case AX_KOP_BROADCAST:
    case AX_KOP_TRANSPOSE:
    case AX_KOP_RESHAPE:
    case AX_KOP_COND:
    case AX_KOP_WHILE:
    case AX_KOP_SCAN:
        break;
    }
    return refuse(g, e->prim, t, "an elementwise operation");
}

static gcc_jit_rvalue *op_value(cg *g, int i) {
    const ax_code_node *n = &g->nd[i];
    const ax_code_node *e = n;
    ax_dtype in_t = n->nin ? g->nd[n->in[0]].dtype : n->dtype;
    if (ax_prim_get(e->prim)->nin != n->nin)
        return refuse(g, e->prim, n->dtype, "an operation of another number of operands");
    switch (lowering(e->prim)->kop) {
    case AX_KOP_SELECT: {
        gcc_jit_rvalue *pred = value(g, n->in[0]);
        gcc_jit_rvalue *cond =
            cmp(g, GCC_JIT_COMPARISON_NE, pred, GJ(gcc_jit_context_zero)(g->c, g->st[AX_BOOL]));
        return sel(g, n->dtype, cond, value(g, n->in[1]), value(g, n->in[2]));
    }
    case AX_KOP_CLAMP: { /* min(max(x, lo), hi), as the eager kernel */
        gcc_jit_rvalue *m = hold(
            g, g->st[n->dtype], max_min(g, n->dtype, true, value(g, n->in[1]), value(g, n->in[0])));
        return max_min(g, n->dtype, false, m, value(g, n->in[2]));
    }
    case AX_KOP_CONVERT: {
        gcc_jit_rvalue *v = value(g, n->in[0]);
        if (n->dtype == AX_BOOL)
            return to_bool_storage(
                g, cmp(g, GCC_JIT_COMPARISON_NE, v, GJ(gcc_jit_context_zero)(g->c, g->st[in_t])));
        return cast(g, v, g->st[n->dtype]);
    }
    default:
        break;
    }
    if (n->nin == 1) return elementwise_value(g, e, in_t, value(g, n->in[0]), NULL);
    if (n->nin == 2) return elementwise_value(g, e, in_t, value(g, n->in[0]), value(g, n->in[1]));
    return refuse(g, e->prim, n->dtype, "an elementwise operation");
}

/* ---- vector math on whole blocks ---- */

static bool is_math_node(const cg *g, int i) {
    const ax_code_node *n = &g->nd[i];
    if (n->kind != AX_KN_OP || n->dtype != AX_F32) return false;
    math_kind m = float_math(lowering(n->prim), AX_F32, g->vw);
    return m == M_DIRECT || m == M_PROMOTED;
}

/* Calls vector function `name` on the lane arrays `in` (and `in2`) in chunks of `width`
 * elements of type t, writing `out`. */
static void vector_calls(cg *g, const char *name, gcc_jit_type *t, int width, int nargs,
                         lanes_ref out, lanes_ref in, lanes_ref in2) {
    gcc_jit_type *vt = GJ(gcc_jit_type_get_vector)(t, (size_t)width);
    gcc_jit_type *vp = GJ(gcc_jit_type_get_pointer)(vt);
    gcc_jit_function *f = import(g, name, vt, vt, nargs);
    for (int h = 0; h < B; h += width) {
        lanes_ref src[2] = {in, in2};
        gcc_jit_rvalue *args[2];
        for (int a = 0; a < nargs; a++)
            args[a] = rv(
                g, GJ(gcc_jit_rvalue_dereference)(
                       cast(g, GJ(gcc_jit_lvalue_get_address)(ref_at(g, src[a], i64c(g, h)), NULL),
                            vp),
                       NULL));
        gcc_jit_lvalue *dst = GJ(gcc_jit_rvalue_dereference)(
            cast(g, GJ(gcc_jit_lvalue_get_address)(ref_at(g, out, i64c(g, h)), NULL), vp), NULL);
        assign(g, dst, GJ(gcc_jit_context_new_call)(g->c, NULL, f, nargs, args));
    }
}

/* Runs a whole-block lane loop `dst[j] = (t)src[j]`. */
static void lane_convert(cg *g, lanes_ref dst, lanes_ref src, gcc_jit_type *t) {
    loop l = lanes_upto(g, B);
    assign(g, ref_lane(g, dst), cast(g, rv(g, ref_lane(g, src)), t));
    loop_end(g, &l);
}

/* The vector call of math node i: reads its mathin arrays, writes its lane array. */
static void math_call(cg *g, int i) {
    const ax_code_node *e = &g->nd[i];
    const char *isa = g->vw == 16 ? "e" : "d";
    gcc_jit_type *f = g->st[AX_F32], *d = g->st[AX_F64];
    const ax_lowering *lw = lowering(e->prim);
    math_kind m = float_math(lw, AX_F32, g->vw);
    lanes_ref none = {0}, out = spill_ref(g, i), in = mathin_ref(g, i, 0);
    char name[64];
    if (m == M_DIRECT) {
        snprintf(name, sizeof name, "_ZGV%sN%dv_%sf", isa, g->vw, lw->fn);
        vector_calls(g, name, f, g->vw, 1, out, in, none);
        return;
    }
    lanes_ref din = {.local = lane_array(g, d, "din"), .t = d};
    lanes_ref dout = {.local = lane_array(g, d, "dout"), .t = d}, din2 = none;
    lane_convert(g, din, in, d);
    int nargs = e->nin;
    if (nargs == 2) {
        din2 = (lanes_ref){.local = lane_array(g, d, "din"), .t = d};
        lane_convert(g, din2, mathin_ref(g, i, 1), d);
    }
    snprintf(name, sizeof name, "_ZGV%sN%d%s_%s", isa, g->vw / 2, nargs == 2 ? "vv" : "v", lw->fn);
    vector_calls(g, name, d, g->vw / 2, nargs, dout, din, din2);
    lane_convert(g, out, dout, f);
}

/* ---- reductions ---- */

static gcc_jit_rvalue *reduce_identity(cg *g, ax_prim p, ax_dtype t) {
    ax_kop k = lowering(p)->kop;
    switch (k) {
    case AX_KOP_REDUCE_SUM:
    case AX_KOP_REDUCE_OR:
        return GJ(gcc_jit_context_zero)(g->c, g->st[t]);
    case AX_KOP_REDUCE_PROD:
    case AX_KOP_REDUCE_AND:
        return GJ(gcc_jit_context_one)(g->c, g->st[t]);
    case AX_KOP_REDUCE_MAX:
    case AX_KOP_REDUCE_MIN:
        break;
    default:
        return refuse(g, p, t, "a reduction");
    }
    bool is_max = k == AX_KOP_REDUCE_MAX;
    if (is_float(t)) return fconst(g, t, is_max ? -__builtin_inf() : __builtin_inf());
    int64_t lo = 0, hi = 0;
    switch (t) {
    case AX_U8:
        hi = 255;
        break;
    case AX_I32:
        lo = INT32_MIN, hi = INT32_MAX;
        break;
    case AX_U32:
        hi = UINT32_MAX;
        break;
    default:
        lo = INT64_MIN, hi = INT64_MAX;
        break;
    }
    return GJ(gcc_jit_context_new_rvalue_from_long)(g->c, g->st[t], (long)(is_max ? lo : hi));
}

/* The maximum (minimum) of a float accumulator and a value, whatever their order: NaN sticks
 * once seen, and of two equal values the one with the sign bit clear (set) wins, so +0 is the
 * maximum of -0 and +0 (runtime/reduce.c does the same). */
static gcc_jit_rvalue *float_extreme(cg *g, ax_dtype t, bool is_max, gcc_jit_rvalue *acc,
                                     gcc_jit_rvalue *v) {
    gcc_jit_type *u = g->ut[t];
    gcc_jit_rvalue *a = hold(g, g->st[t], acc);
    gcc_jit_rvalue *merged =
        bitcast(g,
                bin(g, is_max ? GCC_JIT_BINARY_OP_BITWISE_AND : GCC_JIT_BINARY_OP_BITWISE_OR, u,
                    bitcast(g, a, u), bitcast(g, v, u)),
                g->st[t]);
    gcc_jit_rvalue *tie = sel(g, t, cmp(g, GCC_JIT_COMPARISON_EQ, a, v), merged, v);
    gcc_jit_rvalue *keep =
        bin(g, GCC_JIT_BINARY_OP_LOGICAL_OR, g->t_bool, is_nan(g, a),
            cmp(g, is_max ? GCC_JIT_COMPARISON_GT : GCC_JIT_COMPARISON_LT, a, v));
    return sel(g, t, keep, a, tie);
}

/* acc op v in the accumulator's dtype t. */
static gcc_jit_rvalue *reduce_step(cg *g, ax_prim p, ax_dtype t, gcc_jit_rvalue *acc,
                                   gcc_jit_rvalue *v) {
    ax_kop k = lowering(p)->kop;
    switch (k) {
    case AX_KOP_REDUCE_SUM:
        return wrap_arith(g, GCC_JIT_BINARY_OP_PLUS, t, acc, v);
    case AX_KOP_REDUCE_PROD:
        return wrap_arith(g, GCC_JIT_BINARY_OP_MULT, t, acc, v);
    case AX_KOP_REDUCE_MAX:
    case AX_KOP_REDUCE_MIN:
        if (is_float(t)) return float_extreme(g, t, k == AX_KOP_REDUCE_MAX, acc, v);
        return max_min(g, t, k == AX_KOP_REDUCE_MAX, acc, v);
    case AX_KOP_REDUCE_AND:
        return bin(g, GCC_JIT_BINARY_OP_BITWISE_AND, g->st[t], acc, v);
    case AX_KOP_REDUCE_OR:
        return bin(g, GCC_JIT_BINARY_OP_BITWISE_OR, g->st[t], acc, v);
    default:
        return refuse(g, p, t, "a reduction");
    }
}

/* Reduction node i's step on accumulator element `a` and value v. */
static void accumulate(cg *g, int i, gcc_jit_lvalue *a, gcc_jit_rvalue *v) {
    ax_dtype t = acc_dtype(g, i);
    assign(g, a, reduce_step(g, g->nd[i].prim, t, rv(g, a), cast(g, v, g->st[t])));
}

/* The output element of reduction node i for accumulator value v: NaN is one NaN whatever
 * its bits (which NaN an extreme keeps depends on the order of the lanes). */
static gcc_jit_rvalue *reduce_result(cg *g, int i, gcc_jit_rvalue *v) {
    const ax_code_node *n = &g->nd[i];
    ax_dtype t = acc_dtype(g, i);
    ax_kop k = lowering(n->prim)->kop;
    if (is_float(t) && (k == AX_KOP_REDUCE_MAX || k == AX_KOP_REDUCE_MIN)) {
        gcc_jit_rvalue *h = hold(g, g->st[t], v);
        v = sel(g, t, is_nan(g, h), fconst(g, t, __builtin_nan("")), h);
    }
    return cast(g, v, g->st[n->dtype]);
}

static void store_node(cg *g, int i, gcc_jit_rvalue *v, bool with_lane) {
    assign(g, at(g, g->ptr[g->nd[i].buf], offset(g, g->nd[i].ostride, with_lane)),
           cast(g, v, g->mt[g->nd[i].dtype]));
}

/* Sets lanes [0, n) of every reduction's accumulators (n < 0: the block's L lanes) or totals
 * to the identity. */
static void reset_lanes(cg *g, bool totals, int64_t n) {
    loop l = n < 0 ? lanes_begin(g) : lanes_upto(g, n);
    for (int i = 0; i < g->n; i++) {
        if (g->nd[i].kind != AX_KN_REDUCE) continue;
        gcc_jit_lvalue *a =
            totals ? at(g, rv(g, g->tot[i]), rv(g, g->j)) : ref_lane(g, acc_ref(g, i));
        assign(g, a, reduce_identity(g, g->nd[i].prim, acc_dtype(g, i)));
    }
    loop_end(g, &l);
}

/* With RUNS tiled, reduction i's total for the current tile row (else its total). */
static gcc_jit_lvalue *row_total(cg *g, int i) {
    return g->trun ? at(g, rv(g, g->tot[i]), rv(g, g->t_i)) : g->tot[i];
}

/* RUNS: the totals, one per reduction (and tile row), before the reduced loops. */
static void init_totals(cg *g) {
    for (int i = 0; i < g->n; i++) {
        if (g->nd[i].kind != AX_KN_REDUCE) continue;
        ax_dtype t = acc_dtype(g, i);
        if (g->rk == RK_SHORT_RUNS) { /* a total per lane */
            g->tot[i] = lane_array(g, g->st[t], "tot");
        } else if (g->trun) {
            g->tot[i] = array_of(g, g->st[t], AX_TILE, "tot");
            loop l = loop_begin(g, g->t_i, i64c(g, 0), i64c(g, AX_TILE), i64c(g, 1));
            assign(g, row_total(g, i), reduce_identity(g, g->nd[i].prim, t));
            loop_end(g, &l);
        } else {
            g->tot[i] = local(g, g->st[t], "tot");
            assign(g, g->tot[i], reduce_identity(g, g->nd[i].prim, t));
        }
    }
    if (g->rk == RK_SHORT_RUNS) reset_lanes(g, true, -1);
}

/* RUNS: a chunk's lanes [0, n) folded in order and added to the total (of each tile row). */
static void fold_chunk(cg *g, int64_t n) {
    loop rows = {0};
    if (g->trun) rows = loop_begin(g, g->t_i, i64c(g, 0), g->t_rows, i64c(g, 1));
    for (int i = 0; i < g->n; i++) {
        if (g->nd[i].kind != AX_KN_REDUCE) continue;
        ax_dtype t = acc_dtype(g, i);
        ax_prim p = g->nd[i].prim;
        gcc_jit_lvalue *r = local(g, g->st[t], "r");
        assign(g, r, rv(g, acc_at(g, i, i64c(g, 0))));
        if (n > 1) {
            loop l = loop_begin(g, g->j, i64c(g, 1), i64c(g, n), i64c(g, 1));
            assign(g, r, reduce_step(g, p, t, rv(g, r), rv(g, acc_at(g, i, rv(g, g->j)))));
            loop_end(g, &l);
        }
        gcc_jit_lvalue *tot = row_total(g, i);
        assign(g, tot, reduce_step(g, p, t, rv(g, tot), rv(g, r)));
    }
    if (g->trun) loop_end(g, &rows);
}

/* SHORT_RUNS: each lane's run added to its total; ACROSS_RUNS: the lanes' runs added to the
 * one total, in lane order. */
static void add_runs(cg *g) {
    loop l = lanes_begin(g);
    for (int i = 0; i < g->n; i++) {
        if (g->nd[i].kind != AX_KN_REDUCE) continue;
        gcc_jit_lvalue *t =
            g->rk == RK_SHORT_RUNS ? at(g, rv(g, g->tot[i]), rv(g, g->j)) : g->tot[i];
        ax_dtype dt = acc_dtype(g, i);
        assign(g, t,
               reduce_step(g, g->nd[i].prim, dt, rv(g, t), rv(g, ref_lane(g, acc_ref(g, i)))));
    }
    loop_end(g, &l);
}

/* After the reduced loops: the results to the outputs. */
static void store_results(cg *g) {
    if (g->rk == RK_RUNS || g->rk == RK_ACROSS_RUNS) { /* one total (per tile row) */
        loop rows = {0};
        if (g->trun) {
            rows = loop_begin(g, g->t_i, i64c(g, 0), g->t_rows, i64c(g, 1));
            assign(g, g->idxl[g->tdim],
                   bin(g, GCC_JIT_BINARY_OP_PLUS, g->t_i64, rv(g, g->t_lo), rv(g, g->t_i)));
        }
        for (int i = 0; i < g->n; i++)
            if (g->nd[i].kind == AX_KN_REDUCE)
                store_node(g, i, reduce_result(g, i, rv(g, row_total(g, i))), false);
        if (g->trun) loop_end(g, &rows);
        return;
    }
    if (g->tiled) { /* the tile's outputs: from its first index on */
        assign(g, g->idxl[g->lane], rv(g, g->tile_lo));
        g->L = hold(g, g->t_i64,
                    bin(g, GCC_JIT_BINARY_OP_MINUS, g->t_i64, g->tile_hi, rv(g, g->tile_lo)));
    }
    loop l = lanes_begin(g);
    for (int i = 0; i < g->n; i++) {
        if (g->nd[i].kind != AX_KN_REDUCE) continue;
        gcc_jit_rvalue *v = g->rk == RK_SHORT_RUNS ? rv(g, at(g, rv(g, g->tot[i]), rv(g, g->j)))
                                                   : rv(g, ref_lane(g, acc_ref(g, i)));
        store_node(g, i, reduce_result(g, i, v), true);
    }
    loop_end(g, &l);
}

/* ---- blocks ---- */

/* The gathered loads that nodes [a, b) read: each into its lane array, in one lane loop. */
static void gather_loads(cg *g, int a, int b) {
    int *list = g->gathers, n = 0;
    for (int i = a; i < b; i++)
        for (int k = 0; k < g->nd[i].nin; k++) {
            int src = g->nd[i].in[k];
            if (g->access[src] != AX_LOAD_GATHER || g->gathering[src]) continue;
            g->gathering[src] = true;
            list[n++] = src;
        }
    if (!n) return;
    loop l = lanes_begin(g);
    for (int k = 0; k < n; k++) {
        const ax_code_node *ld = &g->nd[list[k]];
        assign(
            g, load_buf_lane(g, list[k]),
            cast(g, rv(g, at(g, g->ptr[ld->buf], offset(g, ld->stride, true))), g->st[ld->dtype]));
        g->gathering[list[k]] = false;
    }
    loop_end(g, &l);
}

/* Nodes [a, b) on one block of lanes: their lane loops and vector calls, then the stores of
 * the values they computed. */
static void emit_block(cg *g, int a, int b) {
    gather_loads(g, a, b);
    if (g->tail) /* lanes past the tail's end feed the vector calls something harmless */
        for (int i = a; i < b; i++) {
            if (!g->math[i]) continue;
            loop l = lanes_upto(g, B);
            assign(g, ref_lane(g, mathin_ref(g, i, 0)), fconst(g, AX_F32, 0.5));
            if (g->nd[i].nin == 2)
                assign(g, ref_lane(g, mathin_ref(g, i, 1)), fconst(g, AX_F32, 0.5));
            loop_end(g, &l);
        }
    g->cur = g->seg[a] - (g->math[a] ? 1 : 0);
    loop l = lanes_begin(g);
    for (int i = a; i < b; i++) {
        const ax_code_node *n = &g->nd[i];
        if (g->math[i]) {
            assign(g, ref_lane(g, mathin_ref(g, i, 0)), value(g, n->in[0]));
            if (n->nin == 2) assign(g, ref_lane(g, mathin_ref(g, i, 1)), value(g, n->in[1]));
            loop_end(g, &l);
            math_call(g, i);
            g->cur = g->seg[i];
            l = lanes_begin(g);
        } else if (n->kind == AX_KN_OP) {
            gcc_jit_rvalue *v = value(g, i);
            if (g->spilled[i]) assign(g, ref_lane(g, spill_ref(g, i)), v);
        } else if (n->kind == AX_KN_REDUCE) {
            accumulate(g, i, acc_lane(g, i), value(g, n->in[0]));
        }
    }
    loop_end(g, &l);
    /* Stores last, one loop per output: a loop that loads from one buffer and stores to
     * another would need a run-time alias check before GCC vectorises it. */
    for (int i = a; i < b; i++) {
        const ax_code_node *n = &g->nd[i];
        if (!n->store || n->kind == AX_KN_REDUCE) continue;
        l = lanes_begin(g);
        store_node(g, i, n->kind == AX_KN_OP ? rv(g, ref_lane(g, spill_ref(g, i))) : value(g, i),
                   true);
        loop_end(g, &l);
    }
}

/* ---- prefetching ---- */

/* A loop that computes a float function (exp, tanh, ...) over more than the caches hold (2M
 * elements or more: 8 MB of f32) reads its inputs too slowly for the hardware's prefetchers:
 * they fall behind, and its time per element grew 11% from 7M to 10M f32 (tanh(x) +
 * exp(-x*x)). Such a loop prefetches each contiguous input AX_PREFETCH_BYTES ahead, a cache line
 * per line a block reads: in a C copy of that loop on 10M f32, one thread, 0.53 -> 0.48 ns per
 * element (8-32 KB ahead alike), the speed it has on 4M. Loops of plain arithmetic keep up
 * without it. */
enum { PREFETCH_MIN_ELEMS = 2 << 20, CACHE_LINE = 64 };

static bool wants_prefetch(const cg *g) {
    int64_t elems = 1;
    for (int d = 0; d < g->ks->ndim; d++) elems *= g->ks->shape[d];
    if (elems < PREFETCH_MIN_ELEMS || g->tdim >= 0) return false;
    for (int i = 0; i < g->n; i++) {
        const ax_code_node *n = &g->nd[i];
        if (n->kind == AX_KN_OP && float_math(lowering(n->prim), n->dtype, g->vw) != M_NONE)
            return true;
    }
    return false;
}

/* Whether load i reads what an earlier load of the step reads */
static bool repeated_load(const cg *g, int i) {
    const ax_code_node *n = &g->nd[i];
    for (int k = 0; k < i; k++) {
        const ax_code_node *m = &g->nd[k];
        if (m->kind == AX_KN_LOAD && m->buf == n->buf &&
            !memcmp(m->stride, n->stride, sizeof n->stride))
            return true;
    }
    return false;
}

/* At a block's start: a prefetch of each line of each contiguous input AX_PREFETCH_BYTES ahead
 * (past the array's end too: a prefetch never faults). */
static void prefetch_inputs(cg *g) {
    if (!g->prefetch || g->tail) return;
    gcc_jit_function *pf = builtin(g, "__builtin_prefetch");
    for (int i = 0; i < g->n; i++) {
        const ax_code_node *n = &g->nd[i];
        if (n->kind != AX_KN_LOAD || g->access[i] != AX_LOAD_DIRECT || n->stride[g->lane] != 1 ||
            repeated_load(g, i))
            continue;
        int64_t size = (int64_t)ax_dtype_size(n->dtype);
        for (int64_t line = 0; line < B * size; line += CACHE_LINE) {
            gcc_jit_rvalue *off =
                bin(g, GCC_JIT_BINARY_OP_PLUS, g->t_i64, offset(g, n->stride, false),
                    i64c(g, (AX_PREFETCH_BYTES + line) / size));
            gcc_jit_rvalue *args[3] = {
                cast(g, GJ(gcc_jit_lvalue_get_address)(at(g, g->ptr[n->buf], off), NULL),
                     g->t_voidp),
                GJ(gcc_jit_context_new_rvalue_from_int)(g->c, g->t_int, 0),  /* a read */
                GJ(gcc_jit_context_new_rvalue_from_int)(g->c, g->t_int, 3)}; /* into L1 */
            GJ(gcc_jit_block_add_eval)
            (g->blk, NULL, GJ(gcc_jit_context_new_call)(g->c, NULL, pf, 3, args));
        }
    }
}

/* The whole block, or a call of each piece function. */
static void block_or_pieces(cg *g) {
    prefetch_inputs(g);
    if (g->npieces <= 1) {
        emit_block(g, 0, g->n);
        return;
    }
    for (int p = 0; p < g->npieces; p++) {
        gcc_jit_rvalue *args[5 + AX_MAX_RANK] = {g->bufs, g->fns, g->L, g->frame, i64c(g, 0)};
        if (g->tiled)
            args[4] = bin(g, GCC_JIT_BINARY_OP_MINUS, g->t_i64, rv(g, g->idxl[g->lane]),
                          rv(g, g->tile_lo));
        for (int d = 0; d < g->ks->ndim; d++) args[5 + d] = rv(g, g->idxl[d]);
        GJ(gcc_jit_block_add_eval)
        (g->blk, NULL,
         GJ(gcc_jit_context_new_call)(g->c, NULL, g->piece_fn[p], 5 + g->ks->ndim, args));
    }
}

/* Each tiled load's tile for the block: AX_TILE rows of tdim from t_lo (t_rows of them), the
 * block's lanes, through the runtime (runtime/tile.h). */
static void load_tiles(cg *g) {
    gcc_jit_type *ps[6] = {g->t_voidp, g->t_voidp, g->t_i64, g->t_i64, g->t_i64, g->t_i64};
    gcc_jit_type *fp = GJ(gcc_jit_context_new_function_ptr_type)(g->c, NULL, g->t_void, 6, ps, 0);
    for (int i = 0; i < g->n; i++) {
        if (g->access[i] != AX_LOAD_TILE) continue;
        const ax_code_node *n = &g->nd[i];
        size_t size = ax_dtype_size(n->dtype);
        int slot = n->dtype == AX_BOOL ? AX_FN_TILE1TO4
                   : size == 1         ? AX_FN_TILE1
                   : size == 4         ? AX_FN_TILE4
                                       : AX_FN_TILE8;
        gcc_jit_rvalue *f = cast(g, rv(g, at(g, g->fns, i64c(g, slot))), fp);
        gcc_jit_rvalue *src = GJ(gcc_jit_lvalue_get_address)(
            at(g, g->ptr[n->buf], offset(g, n->stride, false)), NULL);
        gcc_jit_rvalue *args[6] = {
            cast(g, GJ(gcc_jit_lvalue_get_address)(at(g, load_buf(g, i), i64c(g, 0)), NULL),
                 g->t_voidp),
            cast(g, src, g->t_voidp),
            i64c(g, n->stride[g->tdim]),
            i64c(g, n->stride[g->lane]),
            g->t_rows,
            g->L};
        GJ(gcc_jit_block_add_eval)
        (g->blk, NULL, GJ(gcc_jit_context_new_call_through_ptr)(g->c, NULL, f, 6, args));
    }
}

/* The innermost body: the block; with tiles, their reads, then the block once per
 * row of them. */
static void block_body(cg *g) {
    if (g->tdim < 0) {
        block_or_pieces(g);
        return;
    }
    gcc_jit_lvalue *ti = g->idxl[g->tdim];
    assign(g, ti, rv(g, g->t_lo));
    load_tiles(g);
    loop l = loop_begin(g, g->t_i, i64c(g, 0), g->t_rows, i64c(g, 1));
    assign(g, ti, bin(g, GCC_JIT_BINARY_OP_PLUS, g->t_i64, rv(g, g->t_lo), rv(g, g->t_i)));
    block_or_pieces(g);
    loop_end(g, &l);
}

static void nest(cg *g, int pos);

/* min(a, b) of two int64 values in a new local, by a branch: GCC turns it into one MIN_EXPR,
 * where the masks of sel (made for lane loops) cost it ~1 ms of compile time each. */
static gcc_jit_rvalue *min_i64(cg *g, gcc_jit_rvalue *a, gcc_jit_rvalue *b) {
    gcc_jit_lvalue *m = local(g, g->t_i64, "min");
    gcc_jit_block *lower = block(g, "lower"), *done = block(g, "min");
    assign(g, m, a);
    GJ(gcc_jit_block_end_with_conditional)
    (g->blk, NULL, cmp(g, GCC_JIT_COMPARISON_LT, b, a), lower, done);
    g->blk = lower;
    assign(g, m, b);
    GJ(gcc_jit_block_end_with_jump)(g->blk, NULL, done);
    g->blk = done;
    return rv(g, m);
}

/* The tile dim in tiles of AX_TILE rows over [from, to); the rows of a tile run inside the
 * lane blocks (block_body). Inside the nest [from, to) is [0, extent): a tile always has
 * AX_TILE rows when the extent is a multiple of it. */
static void tile_rows(cg *g, int pos, gcc_jit_rvalue *from, gcc_jit_rvalue *to) {
    gcc_jit_rvalue *size = i64c(g, AX_TILE);
    loop l = loop_begin(g, g->t_lo, from, to, size);
    if (pos > 0 && g->ks->shape[g->tdim] % AX_TILE == 0)
        g->t_rows = size;
    else
        g->t_rows = min_i64(g, bin(g, GCC_JIT_BINARY_OP_MINUS, g->t_i64, to, rv(g, g->t_lo)), size);
    nest(g, pos + 1);
    loop_end(g, &l);
}

/* A run of blocks of the lane dim d from `from` (an index) over `count` blocks of B lanes
 * (count < 0: up to the rvalue `to`), then a tail of `tail` lanes (constant) when > 0. */
static void blocks_then_tail(cg *g, int pos, gcc_jit_rvalue *from, int64_t count, int64_t tail) {
    int d = g->lane;
    if (count > 0) {
        g->L = i64c(g, B);
        g->tail = false;
        loop l = loop_begin(g, g->idxl[d], from,
                            bin(g, GCC_JIT_BINARY_OP_PLUS, g->t_i64, from, i64c(g, count * B)),
                            i64c(g, B));
        nest(g, pos + 1);
        loop_end(g, &l);
    }
    if (tail > 0) {
        assign(g, g->idxl[d], bin(g, GCC_JIT_BINARY_OP_PLUS, g->t_i64, from, i64c(g, count * B)));
        g->L = i64c(g, tail);
        g->tail = true;
        nest(g, pos + 1);
    }
}

/* RUNS: the reduced lane dim in chunks of CHUNK elements; each chunk starts its lane
 * accumulators afresh and ends folding them into the totals. */
static void chunked(cg *g, int pos) {
    int64_t extent = g->ks->shape[g->lane], nfull = extent / CHUNK, rem = extent % CHUNK;
    int64_t lanes = g->trun ? B * AX_TILE : B; /* accumulators: B per tile row */
    if (nfull > 0) {
        gcc_jit_lvalue *c = local(g, g->t_i64, "c");
        loop l = loop_begin(g, c, i64c(g, 0), i64c(g, nfull * CHUNK), i64c(g, CHUNK));
        reset_lanes(g, false, lanes);
        blocks_then_tail(g, pos, rv(g, c), CHUNK / B, 0);
        fold_chunk(g, B);
        loop_end(g, &l);
    }
    if (rem > 0) {
        reset_lanes(g, false, lanes);
        blocks_then_tail(g, pos, i64c(g, nfull * CHUNK), rem / B, rem % B);
        fold_chunk(g, rem < B ? rem : B);
    }
}

/* The blocked lane dim when kept: full blocks of B lanes, then the tail. Inside the nest its
 * extent is constant (so is the tail's length: short rows get loops of known trip count); as
 * the outermost loop, or a tile's blocks (innermost: then its body is the block's), it runs
 * over [from, to). */
static void blocked(cg *g, int pos, gcc_jit_rvalue *from, gcc_jit_rvalue *to, bool innermost) {
    int d = g->lane;
    if (pos > 0 && !innermost) {
        int64_t extent = g->ks->shape[d];
        blocks_then_tail(g, pos, i64c(g, 0), extent / B, extent % B);
        return;
    }
    gcc_jit_lvalue *i = g->idxl[d];
    gcc_jit_rvalue *step = i64c(g, B);
    assign(g, i, from);
    /* [from, to) starts and ends at multiples of B but at the dim's end (a split's granule is
     * B, a tile's size a multiple of it): a block or tail that can never run is not generated
     * (GCC spends a third of a compile on tails: docs/benchmarks.md). */
    int64_t extent = g->ks->shape[d];
    gcc_jit_block *rest = g->blk;
    if (extent >= B) {
        gcc_jit_block *head = block(g, "bhead"), *body = block(g, "bbody");
        rest = block(g, "tail");
        GJ(gcc_jit_block_end_with_jump)(g->blk, NULL, head);
        GJ(gcc_jit_block_end_with_conditional)
        (head, NULL,
         cmp(g, GCC_JIT_COMPARISON_LE, bin(g, GCC_JIT_BINARY_OP_PLUS, g->t_i64, rv(g, i), step),
             to),
         body, rest);
        g->blk = body;
        g->L = step;
        g->tail = false;
        if (innermost)
            block_body(g);
        else
            nest(g, pos + 1);
        GJ(gcc_jit_block_add_assignment_op)(g->blk, NULL, i, GCC_JIT_BINARY_OP_PLUS, step);
        GJ(gcc_jit_block_end_with_jump)(g->blk, NULL, head);
        g->blk = rest;
    }
    if (extent % B == 0) return;
    gcc_jit_block *tail = block(g, "tbody"), *done = block(g, "done");
    GJ(gcc_jit_block_end_with_conditional)
    (rest, NULL, cmp(g, GCC_JIT_COMPARISON_LT, rv(g, i), to), tail, done);
    g->blk = tail;
    /* a tail runs only at the dim's end: its length is constant (a loop of unknown trip count
     * costs GCC more: a 1-element loop's function compiled in 3.8 ms, 2.2 with the constant) */
    g->L = i64c(g, extent % B);
    g->tail = true;
    if (innermost)
        block_body(g);
    else
        nest(g, pos + 1);
    GJ(gcc_jit_block_end_with_jump)(g->blk, NULL, done);
    g->blk = done;
}

/* ROWS over tiles: the lane dim in tiles of TILE lanes; the reduced loops run inside a tile,
 * the tile's blocks inside them (nest, at the innermost position). */
static void tiles(cg *g, int pos, gcc_jit_rvalue *from, gcc_jit_rvalue *to) {
    gcc_jit_rvalue *size = i64c(g, g->tile_w);
    loop l = loop_begin(g, g->tile_lo, from, to, size);
    g->tile_hi = min_i64(g, bin(g, GCC_JIT_BINARY_OP_PLUS, g->t_i64, rv(g, g->tile_lo), size), to);
    nest(g, pos + 1);
    loop_end(g, &l);
}

/* Emits loop positions pos.. of the nest (position 0 runs over [lo, hi)). */
static void nest(cg *g, int pos) {
    const ax_code_step *k = g->ks;
    if (pos == g->first_reduced) {
        if (g->rk == RK_ROWS)
            reset_lanes(g, false, g->tiled ? g->tile_w : -1);
        else
            init_totals(g);
    }
    if (pos == g->run_pos) reset_lanes(g, false, -1);
    if (pos == k->ndim) {
        if (g->tiled)
            blocked(g, pos, rv(g, g->tile_lo), g->tile_hi, true);
        else
            block_body(g);
    } else {
        int d = g->order[pos];
        gcc_jit_rvalue *from = pos == 0 ? g->lo : i64c(g, 0);
        gcc_jit_rvalue *to = pos == 0 ? g->hi : i64c(g, k->shape[d]);
        if (d == g->lane && g->rk == RK_RUNS) {
            chunked(g, pos);
        } else if (d == g->lane && g->tiled) {
            tiles(g, pos, from, to);
        } else if (d == g->lane) {
            blocked(g, pos, from, to, false);
        } else if (d == g->tdim) {
            tile_rows(g, pos, from, to);
        } else {
            loop l = loop_begin(g, g->idxl[d], from, to, i64c(g, 1));
            nest(g, pos + 1);
            loop_end(g, &l);
        }
    }
    if (pos == g->run_pos) add_runs(g);
    if (pos == g->first_reduced) store_results(g);
}

/* ---- a kernel's plan: segments, pieces, the frame ---- */

/* Big loops are split into pieces: GCC's optimisers take time superlinear in the size of a
 * function (alias walks over every store; 2400 operations in one function: tens of seconds),
 * so a loop with more than twice ax_codegen_piece_work() operations becomes a driver (the loop
 * nest) that calls piece functions of about that many operations on each block. Values a later
 * piece reads, and the reductions' accumulators, live in a frame the driver passes them. */
static void plan_pieces(cg *g) {
    int p = 0, since = 0, piece_work = g->code->h.piece_work;
    bool split = in_pieces(g->code, g->ks);
    for (int i = 0; i < g->n; i++) {
        bool counts = g->nd[i].kind == AX_KN_OP || g->nd[i].kind == AX_KN_REDUCE;
        if (split && counts && since >= piece_work) {
            p++;
            since = 0;
        }
        since += counts;
        g->piece[i] = p;
    }
    g->npieces = p + 1;
}

/* Segments (a new one after each vector call and at each piece), the values kept in lane
 * arrays, and the frame. */
static void plan_segments(cg *g) {
    int cur = 0;
    for (int i = 0; i < g->n; i++) {
        g->math[i] = is_math_node(g, i);
        if (i > 0 && g->piece[i] != g->piece[i - 1]) cur++;
        if (g->math[i]) cur++;
        g->seg[i] = cur;
        g->frame_off[i] = -1;
    }
    bool *far = g->far; /* read by another piece */
    memset(far, 0, (size_t)g->n * sizeof *far);
    for (int i = 0; i < g->n; i++) {
        const ax_code_node *n = &g->nd[i];
        for (int a = 0; a < n->nin; a++) {
            int src = n->in[a];
            if (g->nd[src].kind == AX_KN_OP && !g->math[src] &&
                g->seg[src] != g->seg[i] - (g->math[i] ? 1 : 0))
                g->spilled[src] = true;
            if (g->piece[src] != g->piece[i]) far[src] = true;
        }
        if (n->kind == AX_KN_OP && n->store) g->spilled[i] = true;
    }
    g->frame_bytes = 0;
    for (int i = 0; i < g->n; i++) {
        bool framed = (far[i] && (g->spilled[i] || g->math[i])) ||
                      (g->npieces > 1 && g->nd[i].kind == AX_KN_REDUCE);
        if (!framed) continue;
        g->frame_off[i] = g->frame_bytes;
        g->frame_bytes += (g->tiled && g->nd[i].kind == AX_KN_REDUCE ? g->tile_w : B) * 8;
    }
}

static void plan_kernel(cg *g, int step) {
    const ax_code_step *k = &g->code->steps[step];
    g->step = step;
    g->ks = k;
    g->nd = g->code->nodes + k->first_node;
    g->n = k->nnodes;
    loop_order(g->code, k, g->order);
    g->lane = lane_dim(g->code, k);
    g->first_reduced = k->ndim + 1; /* none */
    g->run_pos = -1;
    g->rk = RK_NONE;
    g->tiled = false;
    if (has_reduce(g->code, k)) {
        int inner = k->ndim - 1;
        g->rk = !k->reduced[inner]     ? RK_ROWS
                : g->lane == inner     ? RK_RUNS
                : !k->reduced[g->lane] ? RK_SHORT_RUNS
                                       : RK_ACROSS_RUNS;
        /* reductions over axes of length 1 only (finish_kernel drops them): no reduced dim
         * is left, so the accumulators live and die around each block */
        g->first_reduced = k->ndim;
        for (int p = 0; p < k->ndim; p++)
            if (k->reduced[g->order[p]]) {
                g->first_reduced = p;
                break;
            }
        if (g->rk == RK_SHORT_RUNS || g->rk == RK_ACROSS_RUNS) g->run_pos = k->ndim - 1;
        g->tiled = g->rk == RK_ROWS && g->first_reduced < k->ndim && k->shape[g->lane] > B;
    }
    /* a tile no wider than the lane dim: fewer accumulators to clear on each call */
    int64_t lanes = (k->shape[g->lane] + B - 1) / B * B;
    g->tile_w = lanes < TILE ? lanes : TILE;
    g->tdim = tile_dim(g->code, k);
    g->trun = g->rk == RK_RUNS && g->tdim >= 0;
    for (int i = 0; i < g->n; i++) g->access[i] = (char)load_access(&g->nd[i], g->lane, g->tdim);
    ax_value_signs(g->nd, g->n, g->sign);
    g->prefetch = wants_prefetch(g);
    plan_pieces(g);
    plan_segments(g);
}

/* ---- functions ---- */

/* Starts a function: nothing made for another one is reused, and every buffer's typed
 * pointer is set in its entry block (so that any block may use it). */
static void begin_function(cg *g, gcc_jit_function *fn, gcc_jit_param **p) {
    g->fn = fn;
    g->blk = block(g, "entry");
    g->bufs = GJ(gcc_jit_param_as_rvalue)(p[0]);
    g->fns = GJ(gcc_jit_param_as_rvalue)(p[1]);
    size_t n = (size_t)g->n;
    memset(g->spill, 0, n * sizeof *g->spill);
    memset(g->mathin, 0, n * sizeof *g->mathin);
    memset(g->mathin2, 0, n * sizeof *g->mathin2);
    memset(g->acc, 0, n * sizeof *g->acc);
    memset(g->tot, 0, n * sizeof *g->tot);
    memset(g->lbuf, 0, n * sizeof *g->lbuf);
    memset(g->val, 0, n * sizeof *g->val);
    memset(g->idxp, 0, sizeof g->idxp);
    g->accoff_p = NULL;
    for (int b = 0; b < g->ks->nbufs; b++) {
        gcc_jit_type *pt = GJ(gcc_jit_type_get_pointer)(g->mt[g->code->bufs[g->ks->first_buf + b]]);
        g->ptr[b] = hold(g, pt, cast(g, rv(g, at(g, g->bufs, i64c(g, b))), pt));
    }
    g->j = local(g, g->t_i64, "j");
}

static gcc_jit_param *param(cg *g, gcc_jit_type *t, const char *name) {
    return GJ(gcc_jit_context_new_param)(g->c, NULL, t, name);
}

/* Piece p: void s<step>_p<p>(char **bufs, void **fns, int64_t L, char *frame, int64_t accoff,
 * int64_t i0..): nodes [first, end) on the block at the indices given, of L lanes (accoff:
 * the block's offset in a tile of accumulators). */
static gcc_jit_function *build_piece(cg *g, int p, int first, int end) {
    gcc_jit_param *ps[5 + AX_MAX_RANK] = {
        param(g, g->t_charpp, "bufs"), param(g, g->t_voidpp, "fns"), param(g, g->t_i64, "L"),
        param(g, g->t_charp, "frame"), param(g, g->t_i64, "accoff")};
    int nd = g->ks->ndim;
    for (int d = 0; d < nd; d++) {
        char name[16];
        snprintf(name, sizeof name, "i%d", d);
        ps[5 + d] = param(g, g->t_i64, name);
    }
    char name[48];
    snprintf(name, sizeof name, "s%d_p%d", g->step, p);
    /* exported: GCC must not inline the pieces back into one big function */
    gcc_jit_function *fn = GJ(gcc_jit_context_new_function)(g->c, NULL, GCC_JIT_FUNCTION_EXPORTED,
                                                            g->t_void, name, 5 + nd, ps, 0);
    begin_function(g, fn, ps);
    gcc_jit_rvalue *L = GJ(gcc_jit_param_as_rvalue)(ps[2]);
    g->frame = GJ(gcc_jit_param_as_rvalue)(ps[3]);
    g->accoff_p = GJ(gcc_jit_param_as_rvalue)(ps[4]);
    for (int d = 0; d < nd; d++) g->idxp[d] = GJ(gcc_jit_param_as_rvalue)(ps[5 + d]);
    gcc_jit_block *full = block(g, "full"), *part = block(g, "part");
    GJ(gcc_jit_block_end_with_conditional)
    (g->blk, NULL, cmp(g, GCC_JIT_COMPARISON_EQ, L, i64c(g, B)), full, part);
    /* a full block with the constant B lanes (vectorised), a tail with L */
    g->blk = full;
    g->L = i64c(g, B);
    g->tail = false;
    emit_block(g, first, end);
    GJ(gcc_jit_block_end_with_void_return)(g->blk, NULL);
    g->blk = part;
    g->L = L;
    g->tail = true;
    emit_block(g, first, end);
    GJ(gcc_jit_block_end_with_void_return)(g->blk, NULL);
    return fn;
}

/* Step `step`: void s<step>(char **bufs, void **fns, int64_t lo, int64_t hi). */
static gcc_jit_function *step_function(cg *g, gcc_jit_param **ps) {
    ps[0] = param(g, g->t_charpp, "bufs");
    ps[1] = param(g, g->t_voidpp, "fns");
    ps[2] = param(g, g->t_i64, "lo");
    ps[3] = param(g, g->t_i64, "hi");
    char name[32];
    snprintf(name, sizeof name, "s%d", g->step);
    return GJ(gcc_jit_context_new_function)(g->c, NULL, GCC_JIT_FUNCTION_EXPORTED, g->t_void, name,
                                            4, ps, 0);
}

static bool build_loop(cg *g, int step) {
    plan_kernel(g, step);
    g->piece_fn = calloc((size_t)g->npieces + 1, sizeof *g->piece_fn);
    if (!g->piece_fn) return false;
    for (int p = 0, first = 0; p < g->npieces && g->npieces > 1; p++) {
        int end = first;
        while (end < g->n && g->piece[end] == p) end++;
        g->piece_fn[p] = build_piece(g, p, first, end);
        first = end;
    }
    gcc_jit_param *ps[4];
    begin_function(g, step_function(g, ps), ps);
    g->lo = GJ(gcc_jit_param_as_rvalue)(ps[2]);
    g->hi = GJ(gcc_jit_param_as_rvalue)(ps[3]);
    g->frame = NULL;
    if (g->npieces > 1) {
        gcc_jit_type *bytes = GJ(gcc_jit_context_new_array_type)(
            g->c, NULL, GJ(gcc_jit_context_get_type)(g->c, GCC_JIT_TYPE_CHAR),
            g->frame_bytes ? g->frame_bytes : 1);
        gcc_jit_lvalue *frame = local(g, GJ(gcc_jit_type_get_aligned)(bytes, 64), "frame");
        g->frame = hold(g, g->t_charp,
                        GJ(gcc_jit_lvalue_get_address)(at(g, rv(g, frame), i64c(g, 0)), NULL));
    }
    for (int d = 0; d < g->ks->ndim; d++) {
        g->idxl[d] = local(g, g->t_i64, "i");
        assign(g, g->idxl[d], i64c(g, 0));
    }
    g->tile_lo = g->tiled ? local(g, g->t_i64, "tile") : NULL;
    g->t_lo = g->tdim >= 0 ? local(g, g->t_i64, "tlo") : NULL;
    g->t_i = g->tdim >= 0 ? local(g, g->t_i64, "ti") : NULL;
    g->L = i64c(g, B);
    nest(g, 0);
    GJ(gcc_jit_block_end_with_void_return)(g->blk, NULL);
    free(g->piece_fn);
    g->piece_fn = NULL;
    return true;
}

static void init_types(cg *g) {
    gcc_jit_context *c = g->c;
    g->t_void = GJ(gcc_jit_context_get_type)(c, GCC_JIT_TYPE_VOID);
    g->t_i64 = GJ(gcc_jit_context_get_type)(c, GCC_JIT_TYPE_INT64_T);
    g->t_int = GJ(gcc_jit_context_get_type)(c, GCC_JIT_TYPE_INT);
    g->t_bool = GJ(gcc_jit_context_get_type)(c, GCC_JIT_TYPE_BOOL);
    g->t_voidp = GJ(gcc_jit_context_get_type)(c, GCC_JIT_TYPE_VOID_PTR);
    g->t_voidpp = GJ(gcc_jit_type_get_pointer)(g->t_voidp);
    g->t_charp = GJ(gcc_jit_type_get_pointer)(GJ(gcc_jit_context_get_type)(c, GCC_JIT_TYPE_CHAR));
    g->t_charpp = GJ(gcc_jit_type_get_pointer)(g->t_charp);
    gcc_jit_type *u8 = GJ(gcc_jit_context_get_type)(c, GCC_JIT_TYPE_UINT8_T);
    gcc_jit_type *u32 = GJ(gcc_jit_context_get_type)(c, GCC_JIT_TYPE_UINT32_T);
    gcc_jit_type *u64 = GJ(gcc_jit_context_get_type)(c, GCC_JIT_TYPE_UINT64_T);
    g->st[AX_BOOL] = u32, g->ut[AX_BOOL] = u32;
    g->st[AX_U8] = u8, g->ut[AX_U8] = u8;
    g->st[AX_I32] = GJ(gcc_jit_context_get_type)(c, GCC_JIT_TYPE_INT32_T), g->ut[AX_I32] = u32;
    g->st[AX_U32] = u32, g->ut[AX_U32] = u32;
    g->st[AX_I64] = g->t_i64, g->ut[AX_I64] = u64;
    g->st[AX_F32] = GJ(gcc_jit_context_get_type)(c, GCC_JIT_TYPE_FLOAT), g->ut[AX_F32] = u32;
    g->st[AX_F64] = GJ(gcc_jit_context_get_type)(c, GCC_JIT_TYPE_DOUBLE), g->ut[AX_F64] = u64;
    for (int t = 0; t < AX_NDTYPES; t++) g->mt[t] = g->st[t];
    g->mt[AX_BOOL] = u8;
}

/* Per-node arrays for the biggest kernel of the code. */
static bool alloc_node_arrays(cg *g) {
    int most = 1;
    for (int s = 0; s < g->code->h.nsteps; s++)
        if (g->code->steps[s].nnodes > most) most = g->code->steps[s].nnodes;
    size_t n = (size_t)most, bufs = (size_t)g->code->h.nbufs + 1;
    g->math = calloc(n, sizeof *g->math);
    g->sign = calloc(n, sizeof *g->sign);
    g->seg = calloc(n, sizeof *g->seg);
    g->spilled = calloc(n, sizeof *g->spilled);
    g->piece = calloc(n, sizeof *g->piece);
    g->frame_off = calloc(n, sizeof *g->frame_off);
    g->far = calloc(n, sizeof *g->far);
    g->ptr = calloc(bufs, sizeof *g->ptr);
    g->spill = calloc(n, sizeof *g->spill);
    g->mathin = calloc(n, sizeof *g->mathin);
    g->mathin2 = calloc(n, sizeof *g->mathin2);
    g->acc = calloc(n, sizeof *g->acc);
    g->tot = calloc(n, sizeof *g->tot);
    g->val = calloc(n, sizeof *g->val);
    g->access = calloc(n, sizeof *g->access);
    g->lbuf = calloc(n, sizeof *g->lbuf);
    g->gathers = calloc(n, sizeof *g->gathers);
    g->gathering = calloc(n, sizeof *g->gathering);
    return g->math && g->sign && g->seg && g->spilled && g->piece && g->frame_off && g->far &&
           g->ptr && g->spill && g->mathin && g->mathin2 && g->acc && g->tot && g->val &&
           g->access && g->lbuf && g->gathers && g->gathering;
}

static void free_node_arrays(cg *g) {
    free(g->math), free(g->sign), free(g->seg), free(g->spilled), free(g->piece),
        free(g->frame_off), free(g->far);
    free(g->ptr), free(g->spill), free(g->mathin), free(g->mathin2), free(g->acc), free(g->tot);
    free(g->val), free(g->access), free(g->lbuf), free(g->gathers), free(g->gathering);
}

bool ax_codegen_build(const ax_gccjit *api, gcc_jit_context *ctx, const ax_code *code, char *why,
                      size_t whylen) {
    cg g = {.api = api, .c = ctx, .code = code, .vw = code->h.vector_lanes};
    init_types(&g);
    bool ok = alloc_node_arrays(&g);
    for (int s = 0; s < code->h.nsteps && ok; s++) {
        memset(g.spilled, 0, (size_t)code->steps[s].nnodes * sizeof *g.spilled);
        if (code->steps[s].kind == AX_STEP_LOOP) ok = build_loop(&g, s);
    }
    free_node_arrays(&g);
    if (g.refused[0]) snprintf(why, whylen, "%s", g.refused);
    return ok && !g.refused[0];
}

/* ---------------------------------------------------------------- options */

/* -O2 unless AX_JIT_OPT asks for another level. Measured on the benchmarks of
 * docs/benchmarks.md, -O3 builds no faster code here (every lane loop has a constant trip
 * count that -O2's vectoriser already handles) but doubles compile latency: selu cold, 77 ms
 * at -O2 and 138 ms at -O3. */
/* Measured with tests/bench/jit_compile.py (docs/benchmarks.md): compile time per operation
 * is flat from 16 to 128 operations per piece; 48 keeps the calls per block few. */
int ax_codegen_piece_work(void) {
    const char *v = getenv("AX_JIT_PIECE_WORK");
    return v && *v ? atoi(v) : 48;
}

int ax_codegen_opt_level(void) {
    const char *v = getenv("AX_JIT_OPT");
    return v && *v >= '0' && *v <= '3' && !v[1] ? *v - '0' : 2;
}

const char *ax_codegen_target(void) {
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
        __builtin_cpu_supports("avx512cd"))
        return "x86-64-v4";
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
        __builtin_cpu_supports("bmi2"))
        return "x86-64-v3";
    if (__builtin_cpu_supports("sse4.2") && __builtin_cpu_supports("popcnt")) return "x86-64-v2";
    return "x86-64";
}

void ax_codegen_options(const ax_gccjit *api, gcc_jit_context *ctx) {
    char march[64];
    snprintf(march, sizeof march, "-march=%s", ax_codegen_target());
    GCCJIT(gcc_jit_context_set_int_option)
    (ctx, GCC_JIT_INT_OPTION_OPTIMIZATION_LEVEL, ax_codegen_opt_level());
    GCCJIT(gcc_jit_context_add_command_line_option)(ctx, march);
    if (!strcmp(ax_codegen_target(), "x86-64-v4"))
        GCCJIT(gcc_jit_context_add_command_line_option)(ctx, "-mprefer-vector-width=512");
    GCCJIT(gcc_jit_context_add_command_line_option)(ctx, "-fno-math-errno");
    GCCJIT(gcc_jit_context_add_command_line_option)(ctx, "-fno-trapping-math");
    GCCJIT(gcc_jit_context_add_command_line_option)(ctx, "-ffp-contract=off");
}

/* Code generation with libgccjit (see codegen.h).
 *
 * A LOOP step becomes one loop nest. The innermost dimension runs in blocks of B lanes (the
 * eager kernels' f32 vector width, 16 with AVX-512), and inside a block every equation is a
 * short loop over the lanes that GCC's -O3 vectorises: strides and extents are constants, so
 * loads, arithmetic and stores become vector instructions. Transcendental functions call
 * glibc's vector math library (libmvec) on whole blocks, through the same entry points the
 * eager kernels use, so jit and eager give the same bits. A block's code is split into
 * "segments" at each such call; values a later segment needs are kept in lane arrays.
 * Reductions keep one accumulator per lane (no reassociation needed to vectorise them) and
 * fold the lanes at the end. */
#include "codegen.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../runtime/blas.h"
#include "../runtime/elementwise.h"

/* libgccjit through the table of the generator in scope (compiler/gccjit.h) */
#define GJ(name) (g->api->name)

/* ---------------------------------------------------------------- what is supported */

static bool is_float(ax_dtype t) {
    return t == AX_F32 || t == AX_F64;
}
static bool is_intlike(ax_dtype t) {
    return t == AX_U8 || t == AX_I32 || t == AX_U32 || t == AX_I64;
}

/* Unary operations on floats: the eager kernels' functions, and how each is computed. */
typedef enum { M_NONE, M_EXPR, M_DIRECT, M_PROMOTED, M_LOGISTIC, M_AXFN } math_kind;

static const char *libm_name(ax_prim p) {
    switch (p) {
    case AX_P_EXP:
        return "exp";
    case AX_P_EXP2:
        return "exp2";
    case AX_P_LOG:
        return "log";
    case AX_P_LOG1P:
        return "log1p";
    case AX_P_EXPM1:
        return "expm1";
    case AX_P_SIN:
        return "sin";
    case AX_P_COS:
        return "cos";
    case AX_P_TAN:
        return "tan";
    case AX_P_ASIN:
        return "asin";
    case AX_P_ACOS:
        return "acos";
    case AX_P_ATAN:
        return "atan";
    case AX_P_SINH:
        return "sinh";
    case AX_P_COSH:
        return "cosh";
    case AX_P_TANH:
        return "tanh";
    case AX_P_ASINH:
        return "asinh";
    case AX_P_ACOSH:
        return "acosh";
    case AX_P_ATANH:
        return "atanh";
    case AX_P_CBRT:
        return "cbrt";
    case AX_P_ERF:
        return "erf";
    case AX_P_ERFC:
        return "erfc";
    case AX_P_POW:
        return "pow";
    case AX_P_ATAN2:
        return "atan2";
    default:
        return NULL;
    }
}

/* The eager kernels call libmvec's f32 functions directly for these (with AVX-512) and go
 * through the f64 functions for the rest (runtime/elementwise.c explains why). */
static bool mvec_direct(ax_prim p) {
    switch (p) {
    case AX_P_EXP2:
    case AX_P_LOG1P:
    case AX_P_SIN:
    case AX_P_COS:
    case AX_P_ACOS:
    case AX_P_SINH:
    case AX_P_TANH:
    case AX_P_ASINH:
    case AX_P_ACOSH:
    case AX_P_ATANH:
    case AX_P_CBRT:
    case AX_P_ERFC:
        return true;
    default:
        return false;
    }
}

static math_kind float_math(ax_prim p, ax_dtype t) {
    switch (p) {
    case AX_P_ERF_INV:
    case AX_P_LGAMMA:
    case AX_P_DIGAMMA:
        return M_AXFN;
    default:
        break;
    }
    if (p == AX_P_LOGISTIC)
        return t == AX_F32 && ax_elementwise_vector_lanes() > 1 ? M_LOGISTIC : M_EXPR;
    if (!libm_name(p)) return M_NONE;
    if (t == AX_F64 || ax_elementwise_vector_lanes() == 1) return M_EXPR; /* scalar libm */
    return mvec_direct(p) && ax_elementwise_vector_lanes() == 16 ? M_DIRECT : M_PROMOTED;
}

static bool unary_ok(ax_prim p, ax_dtype t, const ax_params *params) {
    switch (p) {
    case AX_P_NEG:
    case AX_P_STOP_GRADIENT:
        return t != AX_BOOL;
    case AX_P_ABS:
    case AX_P_SIGN:
        return t != AX_BOOL && t != AX_U8;
    case AX_P_NOT:
        return t == AX_BOOL || is_intlike(t);
    case AX_P_SQRT:
    case AX_P_RSQRT:
    case AX_P_FLOOR:
    case AX_P_CEIL:
    case AX_P_ROUND:
    case AX_P_SQUARE:
    case AX_P_IS_FINITE:
        return is_float(t) || (p == AX_P_SQUARE && is_intlike(t));
    case AX_P_INTEGER_POW:
        return is_float(t) && params->k >= -64 && params->k <= 64;
    default:
        return is_float(t) && float_math(p, t) != M_NONE;
    }
}

static bool binary_ok(ax_prim p, ax_dtype t) {
    switch (p) {
    case AX_P_ADD:
    case AX_P_SUB:
    case AX_P_MUL:
    case AX_P_MAX:
    case AX_P_MIN:
        return t != AX_BOOL;
    case AX_P_DIV:
        return is_float(t);
    case AX_P_POW:
    case AX_P_ATAN2:
        return is_float(t);
    case AX_P_EQ:
    case AX_P_NE:
    case AX_P_LT:
    case AX_P_LE:
    case AX_P_GT:
    case AX_P_GE:
        return true;
    case AX_P_AND:
    case AX_P_OR:
    case AX_P_XOR:
        return t == AX_BOOL || is_intlike(t);
    case AX_P_SHL:
    case AX_P_SHR_LOGICAL:
    case AX_P_SHR_ARITH:
        return t == AX_I32 || t == AX_U32 || t == AX_I64;
    default:
        return false;
    }
}

static bool reduce_ok(ax_prim p, ax_dtype in, ax_dtype out) {
    if (in != out) return false;
    switch (p) {
    case AX_P_REDUCE_SUM:
    case AX_P_REDUCE_PROD:
    case AX_P_REDUCE_MAX:
    case AX_P_REDUCE_MIN:
        return in != AX_BOOL;
    case AX_P_REDUCE_AND:
    case AX_P_REDUCE_OR:
        return in == AX_BOOL;
    default:
        return false;
    }
}

bool ax_codegen_fusable(const ax_ir_eqn *e, const ax_aval *in, const ax_aval *out) {
    if (e->nout != 1 || e->nsub) return false;
    const ax_prim_info *info = ax_prim_get(e->prim);
    ax_dtype t = e->nin ? in[0].dtype : out->dtype;
    /* A reduction over no axes is a copy, left to the eager kernel: fusion would take it for a
     * loop without reductions yet and let other reductions join it. */
    if (ax_prim_is_reduction(e->prim))
        return reduce_ok(e->prim, t, out->dtype) && in[0].ndim > 0 && e->params.naxes > 0;
    switch (e->prim) {
    case AX_P_BROADCAST_IN_DIM:
    case AX_P_TRANSPOSE:
    case AX_P_RESHAPE:
    case AX_P_SQUEEZE:
    case AX_P_EXPAND_DIMS:
        return true;
    case AX_P_IOTA:
        return out->dtype != AX_BOOL;
    case AX_P_SELECT:
        return in[0].dtype == AX_BOOL;
    case AX_P_CLAMP:
        return is_float(in[1].dtype) || is_intlike(in[1].dtype);
    case AX_P_CONVERT: /* float -> integer saturates: left to the eager kernel */
        return !(is_float(t) && is_intlike(out->dtype));
    default:
        break;
    }
    if (!(info->flags & AX_PRIM_ELEMENTWISE)) return false;
    if (info->nin == 1) return unary_ok(e->prim, t, &e->params);
    if (info->nin == 2) return binary_ok(e->prim, t);
    return false;
}

/* lhs [batch..., m, k] or [batch..., k, m] (or [batch..., k]); rhs likewise with n. */
typedef struct gemm_shape {
    int64_t batch, m, n, k;
    bool trans_a, trans_b;
    int lda, ldb;
} gemm_shape;

static bool gemm_layout(const ax_dot_dims *d, const ax_aval *lhs, const ax_aval *rhs,
                        gemm_shape *g) {
    if (d->ncontract != 1) return false;
    int nb = d->nbatch;
    for (int i = 0; i < nb; i++)
        if (d->lhs_batch[i] != i || d->rhs_batch[i] != i) return false;
    if (lhs->ndim < nb + 1 || lhs->ndim > nb + 2 || rhs->ndim < nb + 1 || rhs->ndim > nb + 2)
        return false;
    *g = (gemm_shape){.batch = 1, .m = 1, .n = 1};
    for (int i = 0; i < nb; i++) g->batch *= lhs->shape[i];
    int cl = d->lhs_contract[0], cr = d->rhs_contract[0];
    if (cl < nb || cr < nb) return false;
    g->k = lhs->shape[cl];
    if (lhs->ndim == nb + 2) {
        int fl = cl == nb ? nb + 1 : nb;
        g->m = lhs->shape[fl];
        g->trans_a = cl < fl;
    }
    if (rhs->ndim == nb + 2) {
        int fr = cr == nb ? nb + 1 : nb;
        g->n = rhs->shape[fr];
        g->trans_b = fr < cr;
    }
    g->lda = (int)(g->trans_a ? g->m : g->k);
    g->ldb = (int)(g->trans_b ? g->k : g->n);
    return g->m > 0 && g->n > 0 && g->k > 0 && g->m < (1 << 30) && g->n < (1 << 30) &&
           g->k < (1 << 30);
}

bool ax_codegen_gemm(const ax_ir_eqn *e, const ax_aval *lhs, const ax_aval *rhs) {
    gemm_shape g;
    return e->prim == AX_P_DOT_GENERAL && is_float(lhs->dtype) && lhs->dtype == rhs->dtype &&
           gemm_layout(&e->params.dot, lhs, rhs, &g);
}

int64_t ax_gemm_batches(const ax_plan *plan, int step) {
    const ax_ir_eqn *e = &plan->ir->eqns[plan->steps[step].eqn];
    gemm_shape g;
    gemm_layout(&e->params.dot, &plan->ir->types[e->in[0].var], &plan->ir->types[e->in[1].var], &g);
    return g.batch;
}

/* ---------------------------------------------------------------- loop structure */

static int lanes(void) {
    int v = ax_elementwise_vector_lanes();
    return v >= 8 ? v : 8;
}

static bool has_reduce(const ax_kernel *k) {
    for (int i = 0; i < k->nnodes; i++)
        if (k->nodes[i].kind == AX_KN_REDUCE) return true;
    return false;
}

/* The dim whose consecutive elements are a block's lanes: the innermost, unless it is a short
 * reduced run (sums over rows of 10): then the last kept dim, so that each lane accumulates
 * one row and no lanes are folded per row. */
static int lane_dim(const ax_kernel *k) {
    int inner = k->ndim - 1;
    if (!k->reduced[inner] || k->shape[inner] >= lanes() || !has_reduce(k)) return inner;
    for (int d = inner - 1; d >= 0; d--)
        if (!k->reduced[d]) return k->shape[d] >= 16 ? d : inner;
    return inner;
}

/* Loop order: kept dims outside, reduced dims inside, and the lane dim blocked; when the lane
 * dim is kept it comes before the reduced ones (per-lane accumulators). */
static int loop_order(const ax_kernel *k, int *order) {
    int n = 0, lane = lane_dim(k);
    for (int d = 0; d < k->ndim; d++)
        if (!k->reduced[d] && d != lane) order[n++] = d;
    if (!k->reduced[lane]) order[n++] = lane;
    for (int d = 0; d < k->ndim; d++)
        if (k->reduced[d] && d != lane) order[n++] = d;
    if (k->reduced[lane]) order[n++] = lane;
    return n;
}

void ax_kernel_split(const ax_kernel *k, ax_loop_split *out) {
    int order[AX_MAX_RANK];
    loop_order(k, order);
    int64_t total = 1;
    for (int d = 0; d < k->ndim; d++) total *= k->shape[d];
    out->extent = k->shape[order[0]];
    out->work_per_iter = out->extent ? total / out->extent : 0;
    out->granule = order[0] == lane_dim(k) ? lanes() : 1;
    out->splittable = !(k->reduced[order[0]] && has_reduce(k));
}

int ax_kernel_buffers(const ax_kernel *k, int *vars) {
    int n = 0;
    for (int i = 0; i < k->nnodes; i++) {
        const ax_knode *nd = &k->nodes[i];
        if (nd->kind != AX_KN_LOAD && !nd->store) continue;
        bool seen = false;
        for (int j = 0; j < n; j++) seen |= vars[j] == nd->var;
        if (!seen) vars[n++] = nd->var;
    }
    return n;
}

/* ---------------------------------------------------------------- the generator */

typedef struct cg {
    const ax_gccjit *api;
    gcc_jit_context *c;
    const ax_plan *plan;
    int B; /* lanes per block */
    gcc_jit_type *t_void, *t_i64, *t_int, *t_bool, *t_charp, *t_charpp, *t_voidp, *t_voidpp;
    gcc_jit_type *st[AX_NDTYPES]; /* type of each dtype's values in generated code */
    gcc_jit_type *mt[AX_NDTYPES]; /* its type in memory (bool: one byte; values: 32 bits, so
                                     masks have the width of the floats they select) */
    gcc_jit_type *ut[AX_NDTYPES]; /* its unsigned twin (bit patterns, wrapping arithmetic) */
    /* the function being built */
    gcc_jit_function *fn;
    gcc_jit_block *blk;
    gcc_jit_rvalue *bufs, *fns, *lo, *hi;
    int nlocals;
    /* the kernel being built */
    const ax_kernel *k;
    int order[AX_MAX_RANK], first_reduced; /* position in order of the first reduced dim */
    int lane;                              /* the blocked dim (lane_dim) */
    gcc_jit_lvalue *idx[AX_MAX_RANK];
    gcc_jit_rvalue **ptr; /* per node: typed data pointer (LOAD, stored) */
    gcc_jit_lvalue **acc, **spill, **mathin, **mathin2;
    int *seg;
    bool *spilled;
    /* the current lane loop */
    gcc_jit_lvalue *j;
    gcc_jit_rvalue *L; /* lanes in this block: B, or the tail's count */
    bool tail;
    int cur;              /* current segment */
    gcc_jit_rvalue **val; /* per node: its value in the current lane loop, or NULL */
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

static loop lanes_begin(cg *g) {
    memset(g->val, 0, (size_t)g->k->nnodes * sizeof *g->val);
    return loop_begin(g, g->j, i64c(g, 0), g->L, i64c(g, 1));
}

/* A lane array of B elements of type t, aligned for vector loads. */
static gcc_jit_lvalue *lane_array(cg *g, gcc_jit_type *t, const char *base) {
    gcc_jit_type *arr = GJ(gcc_jit_context_new_array_type)(g->c, NULL, t, g->B);
    return local(g, GJ(gcc_jit_type_get_aligned)(arr, 64), base);
}

static gcc_jit_lvalue *lane(cg *g, gcc_jit_lvalue *arr) {
    return at(g, rv(g, arr), rv(g, g->j));
}

/* ---- values ---- */

/* The element offset at lane j of an access with these strides: sum of index * stride over
 * the loop dims. */
static gcc_jit_rvalue *offset(cg *g, const int64_t *stride, bool with_lane) {
    const ax_kernel *k = g->k;
    gcc_jit_rvalue *off = NULL;
    for (int d = 0; d < k->ndim; d++) {
        if (!stride[d]) continue;
        gcc_jit_rvalue *pos = rv(g, g->idx[d]);
        if (d == g->lane && with_lane)
            pos = bin(g, GCC_JIT_BINARY_OP_PLUS, g->t_i64, pos, rv(g, g->j));
        gcc_jit_rvalue *term = bin(g, GCC_JIT_BINARY_OP_MULT, g->t_i64, pos, i64c(g, stride[d]));
        off = off ? bin(g, GCC_JIT_BINARY_OP_PLUS, g->t_i64, off, term) : term;
    }
    return off ? off : i64c(g, 0);
}

static gcc_jit_rvalue *value(cg *g, int i);
static gcc_jit_rvalue *op_value(cg *g, int i);

static gcc_jit_rvalue *compute(cg *g, int i) {
    const ax_knode *n = &g->k->nodes[i];
    switch (n->kind) {
    case AX_KN_LOAD:
        return cast(g, rv(g, at(g, g->ptr[i], offset(g, n->stride, true))), g->st[n->dtype]);
    case AX_KN_CONST:
        return literal(g, n->dtype, ax_array_data(n->lit));
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
    const ax_knode *n = &g->k->nodes[i];
    gcc_jit_rvalue *v;
    if (g->mathin[i] || (n->kind == AX_KN_OP && g->seg[i] != g->cur))
        v = rv(g, lane(g, g->spill[i]));
    else
        v = hold(g, g->st[n->dtype], compute(g, i));
    g->val[i] = v;
    return v;
}

static const ax_ir_eqn *eqn_of(cg *g, int i) {
    return &g->plan->ir->eqns[g->k->nodes[i].eqn];
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

/* A float function through its scalar implementation: libm for f64 (as the eager kernels),
 * ax's own special functions through the fns table. */
static gcc_jit_rvalue *scalar_math(cg *g, ax_prim p, ax_dtype t, gcc_jit_rvalue *a,
                                   gcc_jit_rvalue *b) {
    gcc_jit_type *ft = g->st[t];
    if (float_math(p, t) == M_AXFN) {
        int slot = p == AX_P_ERF_INV  ? AX_FN_ERF_INV_F32
                   : p == AX_P_LGAMMA ? AX_FN_LGAMMA_F32
                                      : AX_FN_DIGAMMA_F32;
        if (t == AX_F64) slot++;
        gcc_jit_type *fp = GJ(gcc_jit_context_new_function_ptr_type)(g->c, NULL, ft, 1, &ft, 0);
        gcc_jit_rvalue *f = cast(g, rv(g, at(g, g->fns, i64c(g, slot))), fp);
        return GJ(gcc_jit_context_new_call_through_ptr)(g->c, NULL, f, 1, &a);
    }
    if (p == AX_P_LOGISTIC) { /* 1/(1+e) or e/(1+e) with e = exp(-|x|), in f64 */
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
    const char *name = libm_name(p);
    int n = b ? 2 : 1;
    gcc_jit_function *f = import(g, name, d, d, n);
    gcc_jit_rvalue *r =
        n == 2 ? call2(g, f, cast(g, a, d), cast(g, b, d)) : call1(g, f, cast(g, a, d));
    return cast(g, r, ft);
}

static gcc_jit_rvalue *unary_value(cg *g, const ax_ir_eqn *e, ax_dtype t, gcc_jit_rvalue *v) {
    gcc_jit_type *ty = g->st[t];
    switch (e->prim) {
    case AX_P_NEG: /* floats: a sign flip (0 - x would give +0 for +0) */
        if (is_float(t))
            return GJ(gcc_jit_context_new_unary_op)(g->c, NULL, GCC_JIT_UNARY_OP_MINUS, ty, v);
        return wrap_arith(g, GCC_JIT_BINARY_OP_MINUS, t, GJ(gcc_jit_context_zero)(g->c, ty), v);
    case AX_P_STOP_GRADIENT:
        return v;
    case AX_P_ABS:
        if (is_float(t)) return fbuiltin(g, "fabs", t, v);
        return sel(g, t, cmp(g, GCC_JIT_COMPARISON_LT, v, GJ(gcc_jit_context_zero)(g->c, ty)),
                   wrap_arith(g, GCC_JIT_BINARY_OP_MINUS, t, GJ(gcc_jit_context_zero)(g->c, ty), v),
                   v);
    case AX_P_SIGN:
        if (is_float(t)) return float_sign(g, t, v);
        return cast(
            g,
            bin(g, GCC_JIT_BINARY_OP_MINUS, g->t_int,
                cast(g, cmp(g, GCC_JIT_COMPARISON_GT, v, GJ(gcc_jit_context_zero)(g->c, ty)),
                     g->t_int),
                cast(g, cmp(g, GCC_JIT_COMPARISON_LT, v, GJ(gcc_jit_context_zero)(g->c, ty)),
                     g->t_int)),
            ty);
    case AX_P_NOT:
        if (t == AX_BOOL)
            return bin(g, GCC_JIT_BINARY_OP_BITWISE_XOR, ty, v, GJ(gcc_jit_context_one)(g->c, ty));
        return GJ(gcc_jit_context_new_unary_op)(g->c, NULL, GCC_JIT_UNARY_OP_BITWISE_NEGATE, ty, v);
    case AX_P_SQRT:
        return fbuiltin(g, "sqrt", t, v);
    case AX_P_RSQRT:
        return bin(g, GCC_JIT_BINARY_OP_DIVIDE, ty, fconst(g, t, 1.0), fbuiltin(g, "sqrt", t, v));
    case AX_P_FLOOR:
        return fbuiltin(g, "floor", t, v);
    case AX_P_CEIL:
        return fbuiltin(g, "ceil", t, v);
    case AX_P_ROUND:
        return fbuiltin(g, "rint", t, v);
    case AX_P_SQUARE:
        return wrap_arith(g, GCC_JIT_BINARY_OP_MULT, t, v, v);
    case AX_P_IS_FINITE: {
        gcc_jit_type *u = g->ut[t];
        gcc_jit_rvalue *expo =
            t == AX_F32 ? GJ(gcc_jit_context_new_rvalue_from_long)(g->c, u, 0x7f800000L)
                        : GJ(gcc_jit_context_new_rvalue_from_long)(g->c, u, 0x7ff0000000000000L);
        return to_bool_storage(
            g, cmp(g, GCC_JIT_COMPARISON_NE,
                   bin(g, GCC_JIT_BINARY_OP_BITWISE_AND, u, bitcast(g, v, u), expo), expo));
    }
    case AX_P_INTEGER_POW:
        return integer_pow(g, t, v, e->params.k);
    default:
        return scalar_math(g, e->prim, t, v, NULL);
    }
}

static gcc_jit_rvalue *shift(cg *g, ax_prim p, ax_dtype t, gcc_jit_rvalue *a, gcc_jit_rvalue *b) {
    gcc_jit_type *u = g->ut[t];
    int bits = (int)ax_dtype_size(t) * 8;
    gcc_jit_rvalue *big = cmp(g, GCC_JIT_COMPARISON_GE, cast(g, b, u),
                              GJ(gcc_jit_context_new_rvalue_from_int)(g->c, u, bits));
    gcc_jit_rvalue *amount = bin(g, GCC_JIT_BINARY_OP_BITWISE_AND, u, cast(g, b, u),
                                 GJ(gcc_jit_context_new_rvalue_from_int)(g->c, u, bits - 1));
    gcc_jit_rvalue *zero = GJ(gcc_jit_context_zero)(g->c, g->st[t]);
    if (p == AX_P_SHL)
        return sel(g, t, big, zero,
                   cast(g, bin(g, GCC_JIT_BINARY_OP_LSHIFT, u, cast(g, a, u), amount), g->st[t]));
    if (p == AX_P_SHR_LOGICAL)
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

static enum gcc_jit_comparison comparison(ax_prim p) {
    switch (p) {
    case AX_P_EQ:
        return GCC_JIT_COMPARISON_EQ;
    case AX_P_NE:
        return GCC_JIT_COMPARISON_NE;
    case AX_P_LT:
        return GCC_JIT_COMPARISON_LT;
    case AX_P_LE:
        return GCC_JIT_COMPARISON_LE;
    case AX_P_GT:
        return GCC_JIT_COMPARISON_GT;
    default:
        return GCC_JIT_COMPARISON_GE;
    }
}

static gcc_jit_rvalue *binary_value(cg *g, const ax_ir_eqn *e, ax_dtype t, gcc_jit_rvalue *a,
                                    gcc_jit_rvalue *b) {
    gcc_jit_type *ty = g->st[t];
    switch (e->prim) {
    case AX_P_ADD:
        return wrap_arith(g, GCC_JIT_BINARY_OP_PLUS, t, a, b);
    case AX_P_SUB:
        return wrap_arith(g, GCC_JIT_BINARY_OP_MINUS, t, a, b);
    case AX_P_MUL:
        return wrap_arith(g, GCC_JIT_BINARY_OP_MULT, t, a, b);
    case AX_P_DIV:
        return bin(g, GCC_JIT_BINARY_OP_DIVIDE, ty, a, b);
    case AX_P_MAX:
        return max_min(g, t, true, a, b);
    case AX_P_MIN:
        return max_min(g, t, false, a, b);
    case AX_P_AND:
        return bin(g, GCC_JIT_BINARY_OP_BITWISE_AND, ty, a, b);
    case AX_P_OR:
        return bin(g, GCC_JIT_BINARY_OP_BITWISE_OR, ty, a, b);
    case AX_P_XOR:
        return bin(g, GCC_JIT_BINARY_OP_BITWISE_XOR, ty, a, b);
    case AX_P_SHL:
    case AX_P_SHR_LOGICAL:
    case AX_P_SHR_ARITH:
        return shift(g, e->prim, t, a, b);
    case AX_P_POW:
    case AX_P_ATAN2:
        return scalar_math(g, e->prim, t, a, b);
    default:
        return to_bool_storage(g, cmp(g, comparison(e->prim), a, b));
    }
}

static gcc_jit_rvalue *op_value(cg *g, int i) {
    const ax_knode *n = &g->k->nodes[i];
    const ax_ir_eqn *e = eqn_of(g, i);
    ax_dtype in_t = n->nin ? g->k->nodes[n->in[0]].dtype : n->dtype;
    switch (e->prim) {
    case AX_P_SELECT: {
        gcc_jit_rvalue *pred = value(g, n->in[0]);
        gcc_jit_rvalue *cond =
            cmp(g, GCC_JIT_COMPARISON_NE, pred, GJ(gcc_jit_context_zero)(g->c, g->st[AX_BOOL]));
        return sel(g, n->dtype, cond, value(g, n->in[1]), value(g, n->in[2]));
    }
    case AX_P_CLAMP: { /* min(max(x, lo), hi), as the eager kernel */
        gcc_jit_rvalue *m = hold(
            g, g->st[n->dtype], max_min(g, n->dtype, true, value(g, n->in[1]), value(g, n->in[0])));
        return max_min(g, n->dtype, false, m, value(g, n->in[2]));
    }
    case AX_P_CONVERT: {
        gcc_jit_rvalue *v = value(g, n->in[0]);
        if (n->dtype == AX_BOOL)
            return to_bool_storage(
                g, cmp(g, GCC_JIT_COMPARISON_NE, v, GJ(gcc_jit_context_zero)(g->c, g->st[in_t])));
        return cast(g, v, g->st[n->dtype]);
    }
    default:
        break;
    }
    if (n->nin == 1) return unary_value(g, e, in_t, value(g, n->in[0]));
    return binary_value(g, e, in_t, value(g, n->in[0]), value(g, n->in[1]));
}

/* ---- vector math on whole blocks ---- */

static bool is_math_node(const cg *g, int i) {
    const ax_knode *n = &g->k->nodes[i];
    if (n->kind != AX_KN_OP || n->dtype != AX_F32) return false;
    math_kind m = float_math(g->plan->ir->eqns[n->eqn].prim, AX_F32);
    return m == M_DIRECT || m == M_PROMOTED || m == M_LOGISTIC;
}

/* Calls vector function `name` on the lane arrays `in` (and `in2`) in chunks of `width`
 * elements of type t, writing `out`. */
static void vector_calls(cg *g, const char *name, gcc_jit_type *t, int width, int nargs,
                         gcc_jit_lvalue *out, gcc_jit_lvalue *in, gcc_jit_lvalue *in2) {
    gcc_jit_type *vt = GJ(gcc_jit_type_get_vector)(t, (size_t)width);
    gcc_jit_type *vp = GJ(gcc_jit_type_get_pointer)(vt);
    gcc_jit_function *f = import(g, name, vt, vt, nargs);
    for (int h = 0; h < g->B; h += width) {
        gcc_jit_lvalue *src[2] = {in, in2};
        gcc_jit_rvalue *args[2];
        for (int a = 0; a < nargs; a++)
            args[a] = rv(
                g,
                GJ(gcc_jit_rvalue_dereference)(
                    cast(g, GJ(gcc_jit_lvalue_get_address)(at(g, rv(g, src[a]), i64c(g, h)), NULL),
                         vp),
                    NULL));
        gcc_jit_lvalue *dst = GJ(gcc_jit_rvalue_dereference)(
            cast(g, GJ(gcc_jit_lvalue_get_address)(at(g, rv(g, out), i64c(g, h)), NULL), vp), NULL);
        assign(g, dst, GJ(gcc_jit_context_new_call)(g->c, NULL, f, nargs, args));
    }
}

/* Runs a whole-block lane loop `dst[j] = f(src[j])` for a simple conversion. */
static void lane_convert(cg *g, gcc_jit_lvalue *dst, gcc_jit_lvalue *src, gcc_jit_type *t,
                         bool negabs) {
    gcc_jit_rvalue *saveL = g->L;
    g->L = i64c(g, g->B);
    loop l = lanes_begin(g);
    gcc_jit_rvalue *v = cast(g, rv(g, lane(g, src)), t);
    if (negabs)
        v = GJ(gcc_jit_context_new_unary_op)(g->c, NULL, GCC_JIT_UNARY_OP_MINUS, t,
                                             call1(g, builtin(g, "__builtin_fabs"), v));
    assign(g, lane(g, dst), v);
    loop_end(g, &l);
    g->L = saveL;
}

/* The vector call of math node i: reads mathin[i] (and mathin2[i]), writes spill[i]. */
static void math_call(cg *g, int i) {
    const ax_ir_eqn *e = eqn_of(g, i);
    int vw = ax_elementwise_vector_lanes();
    const char *isa = vw == 16 ? "e" : "d";
    gcc_jit_type *f = g->st[AX_F32], *d = g->st[AX_F64];
    math_kind m = float_math(e->prim, AX_F32);
    char name[64];
    if (m == M_DIRECT) {
        snprintf(name, sizeof name, "_ZGV%sN%dv_%sf", isa, vw, libm_name(e->prim));
        vector_calls(g, name, f, vw, 1, g->spill[i], g->mathin[i], NULL);
        return;
    }
    gcc_jit_lvalue *din = lane_array(g, d, "din"), *din2 = NULL, *dout = lane_array(g, d, "dout");
    lane_convert(g, din, g->mathin[i], d, m == M_LOGISTIC);
    int nargs = e->nin;
    if (nargs == 2) {
        din2 = lane_array(g, d, "din");
        lane_convert(g, din2, g->mathin2[i], d, false);
    }
    snprintf(name, sizeof name, "_ZGV%sN%d%s_%s", isa, vw / 2, nargs == 2 ? "vv" : "v",
             m == M_LOGISTIC ? "exp" : libm_name(e->prim));
    vector_calls(g, name, d, vw / 2, nargs, dout, din, din2);
    gcc_jit_rvalue *saveL = g->L;
    g->L = i64c(g, g->B);
    loop l = lanes_begin(g);
    gcc_jit_rvalue *r = rv(g, lane(g, dout));
    if (m == M_LOGISTIC) { /* the eager kernel's vlogistic_f64 */
        gcc_jit_rvalue *x = cast(g, rv(g, lane(g, g->mathin[i])), d);
        gcc_jit_rvalue *q = bin(g, GCC_JIT_BINARY_OP_PLUS, d, fconst(g, AX_F64, 1.0), r);
        r = sel(g, AX_F64, cmp(g, GCC_JIT_COMPARISON_GE, x, fconst(g, AX_F64, 0.0)),
                bin(g, GCC_JIT_BINARY_OP_DIVIDE, d, fconst(g, AX_F64, 1.0), q),
                bin(g, GCC_JIT_BINARY_OP_DIVIDE, d, r, q));
    }
    assign(g, lane(g, g->spill[i]), cast(g, r, f));
    loop_end(g, &l);
    g->L = saveL;
}

/* ---- kernels ---- */

static ax_dtype reduce_dtype(const cg *g, int i) {
    return g->k->nodes[i].dtype;
}

static gcc_jit_rvalue *reduce_identity(cg *g, ax_prim p, ax_dtype t) {
    switch (p) {
    case AX_P_REDUCE_SUM:
    case AX_P_REDUCE_OR:
        return GJ(gcc_jit_context_zero)(g->c, g->st[t]);
    case AX_P_REDUCE_PROD:
    case AX_P_REDUCE_AND:
        return GJ(gcc_jit_context_one)(g->c, g->st[t]);
    default:
        break;
    }
    bool is_max = p == AX_P_REDUCE_MAX;
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

static gcc_jit_rvalue *reduce_step(cg *g, ax_prim p, ax_dtype t, gcc_jit_rvalue *acc,
                                   gcc_jit_rvalue *v) {
    switch (p) {
    case AX_P_REDUCE_SUM:
        return wrap_arith(g, GCC_JIT_BINARY_OP_PLUS, t, acc, v);
    case AX_P_REDUCE_PROD:
        return wrap_arith(g, GCC_JIT_BINARY_OP_MULT, t, acc, v);
    case AX_P_REDUCE_MAX:
        return max_min(g, t, true, acc, v);
    case AX_P_REDUCE_MIN:
        return max_min(g, t, false, acc, v);
    case AX_P_REDUCE_AND:
        return bin(g, GCC_JIT_BINARY_OP_BITWISE_AND, g->st[t], acc, v);
    default:
        return bin(g, GCC_JIT_BINARY_OP_BITWISE_OR, g->st[t], acc, v);
    }
}

static void store_node(cg *g, int i, gcc_jit_rvalue *v) {
    assign(g, at(g, g->ptr[i], offset(g, g->k->nodes[i].ostride, true)),
           cast(g, v, g->mt[g->k->nodes[i].dtype]));
}

/* The body of one block: every node's lane loops and vector calls. */
static void block_body(cg *g) {
    const ax_kernel *k = g->k;
    if (g->tail) /* lanes past the tail's end feed the vector calls something harmless */
        for (int i = 0; i < k->nnodes; i++) {
            if (!g->mathin[i]) continue;
            gcc_jit_rvalue *saveL = g->L;
            g->L = i64c(g, g->B);
            loop l = lanes_begin(g);
            assign(g, lane(g, g->mathin[i]), fconst(g, AX_F32, 0.5));
            if (g->mathin2[i]) assign(g, lane(g, g->mathin2[i]), fconst(g, AX_F32, 0.5));
            loop_end(g, &l);
            g->L = saveL;
        }
    g->cur = 0;
    loop l = lanes_begin(g);
    for (int i = 0; i < k->nnodes; i++) {
        const ax_knode *n = &k->nodes[i];
        if (g->mathin[i]) {
            assign(g, lane(g, g->mathin[i]), value(g, n->in[0]));
            if (g->mathin2[i]) assign(g, lane(g, g->mathin2[i]), value(g, n->in[1]));
            loop_end(g, &l);
            math_call(g, i);
            g->cur++;
            l = lanes_begin(g);
        } else if (n->kind == AX_KN_OP) {
            gcc_jit_rvalue *v = value(g, i);
            if (g->spilled[i]) assign(g, lane(g, g->spill[i]), v);
        } else if (n->kind == AX_KN_REDUCE) {
            ax_prim p = eqn_of(g, i)->prim;
            gcc_jit_lvalue *a = lane(g, g->acc[i]);
            assign(g, a, reduce_step(g, p, n->dtype, rv(g, a), value(g, n->in[0])));
        }
    }
    loop_end(g, &l);
    /* Stores last, one loop per output: a loop that loads from one buffer and stores to
     * another would need a run-time alias check before GCC vectorises it. */
    for (int i = 0; i < k->nnodes; i++) {
        const ax_knode *n = &k->nodes[i];
        if (!n->store || n->kind == AX_KN_REDUCE) continue;
        l = lanes_begin(g);
        store_node(g, i, n->kind == AX_KN_OP ? rv(g, lane(g, g->spill[i])) : value(g, i));
        loop_end(g, &l);
    }
}

/* Lanes the accumulators use: all B, or fewer when a reduced lane dim is shorter. */
static int64_t acc_lanes(const cg *g) {
    const ax_kernel *k = g->k;
    int64_t e = k->shape[g->lane];
    return k->reduced[g->lane] && e < g->B ? (e > 0 ? e : 1) : g->B;
}

static void init_accumulators(cg *g) {
    gcc_jit_rvalue *saveL = g->L;
    g->L = i64c(g, acc_lanes(g));
    loop l = lanes_begin(g);
    for (int i = 0; i < g->k->nnodes; i++)
        if (g->acc[i])
            assign(g, lane(g, g->acc[i]),
                   reduce_identity(g, eqn_of(g, i)->prim, reduce_dtype(g, i)));
    loop_end(g, &l);
    g->L = saveL;
}

/* After the reduced loops: the per-lane accumulators go to the outputs. With the lane dim
 * kept, lane j is output element j of the block; with it reduced, the lanes fold into one
 * element. */
static void finish_accumulators(cg *g) {
    const ax_kernel *k = g->k;
    bool inner_kept = !k->reduced[g->lane];
    for (int i = 0; i < k->nnodes; i++) {
        if (!g->acc[i]) continue;
        if (inner_kept) {
            loop l = lanes_begin(g);
            store_node(g, i, rv(g, lane(g, g->acc[i])));
            loop_end(g, &l);
            continue;
        }
        ax_dtype t = reduce_dtype(g, i);
        ax_prim p = eqn_of(g, i)->prim;
        gcc_jit_lvalue *r = local(g, g->st[t], "r");
        assign(g, r, rv(g, at(g, rv(g, g->acc[i]), i64c(g, 0))));
        gcc_jit_rvalue *saveL = g->L;
        g->L = i64c(g, acc_lanes(g));
        loop l = loop_begin(g, g->j, i64c(g, 1), g->L, i64c(g, 1));
        assign(g, r, reduce_step(g, p, t, rv(g, r), rv(g, lane(g, g->acc[i]))));
        loop_end(g, &l);
        g->L = saveL;
        assign(g, at(g, g->ptr[i], offset(g, k->nodes[i].ostride, false)),
               cast(g, rv(g, r), g->mt[t]));
    }
}

static void nest(cg *g, int pos);

/* The blocked innermost dim over its whole extent E: E / B full blocks, then a tail of the
 * constant length E % B (short rows then get loops of known trip count, with no run-time
 * bounds to test). */
static void blocked_whole(cg *g, int pos) {
    int d = g->lane;
    int64_t extent = g->k->shape[d], full = extent / g->B * g->B;
    if (full > 0) {
        g->L = i64c(g, g->B);
        g->tail = false;
        loop l = loop_begin(g, g->idx[d], i64c(g, 0), i64c(g, full), i64c(g, g->B));
        nest(g, pos + 1);
        loop_end(g, &l);
    }
    if (extent > full) {
        assign(g, g->idx[d], i64c(g, full));
        g->L = i64c(g, extent - full);
        g->tail = true;
        nest(g, pos + 1);
    }
}

/* The blocked innermost dim: full blocks of B lanes, then the tail. */
static void blocked(cg *g, int pos, gcc_jit_rvalue *from, gcc_jit_rvalue *to) {
    int d = g->lane;
    if (pos > 0) { /* the whole dim: block counts and the tail's length are constants */
        blocked_whole(g, pos);
        return;
    }
    gcc_jit_lvalue *i = g->idx[d];
    gcc_jit_rvalue *B = i64c(g, g->B);
    assign(g, i, from);
    gcc_jit_block *head = block(g, "bhead"), *body = block(g, "bbody"), *rest = block(g, "tail");
    GJ(gcc_jit_block_end_with_jump)(g->blk, NULL, head);
    GJ(gcc_jit_block_end_with_conditional)
    (head, NULL,
     cmp(g, GCC_JIT_COMPARISON_LE, bin(g, GCC_JIT_BINARY_OP_PLUS, g->t_i64, rv(g, i), B), to), body,
     rest);
    g->blk = body;
    g->L = B;
    g->tail = false;
    nest(g, pos + 1);
    GJ(gcc_jit_block_add_assignment_op)(g->blk, NULL, i, GCC_JIT_BINARY_OP_PLUS, B);
    GJ(gcc_jit_block_end_with_jump)(g->blk, NULL, head);
    g->blk = rest;
    gcc_jit_block *tail = block(g, "tbody"), *done = block(g, "done");
    GJ(gcc_jit_block_end_with_conditional)
    (rest, NULL, cmp(g, GCC_JIT_COMPARISON_LT, rv(g, i), to), tail, done);
    g->blk = tail;
    g->L = hold(g, g->t_i64, bin(g, GCC_JIT_BINARY_OP_MINUS, g->t_i64, to, rv(g, i)));
    g->tail = true;
    nest(g, pos + 1);
    GJ(gcc_jit_block_end_with_jump)(g->blk, NULL, done);
    g->blk = done;
}

/* Emits loop positions pos.. of the nest (position 0 runs over [lo, hi)). */
static void nest(cg *g, int pos) {
    const ax_kernel *k = g->k;
    if (pos == g->first_reduced) init_accumulators(g);
    if (pos == k->ndim) {
        block_body(g);
    } else {
        int d = g->order[pos];
        gcc_jit_rvalue *from = pos == 0 ? g->lo : i64c(g, 0);
        gcc_jit_rvalue *to = pos == 0 ? g->hi : i64c(g, k->shape[d]);
        if (d == g->lane) {
            blocked(g, pos, from, to);
        } else {
            loop l = loop_begin(g, g->idx[d], from, to, i64c(g, 1));
            nest(g, pos + 1);
            loop_end(g, &l);
        }
    }
    if (pos == g->first_reduced) finish_accumulators(g);
}

/* Which values cross a vector call (and so live in lane arrays), and the arrays. */
static void plan_segments(cg *g) {
    const ax_kernel *k = g->k;
    int cur = 0;
    for (int i = 0; i < k->nnodes; i++) {
        if (is_math_node(g, i)) cur++;
        g->seg[i] = cur;
    }
    for (int i = 0; i < k->nnodes; i++) {
        const ax_knode *n = &k->nodes[i];
        bool math = is_math_node(g, i);
        for (int a = 0; a < n->nin; a++) {
            int src = n->in[a];
            if (k->nodes[src].kind == AX_KN_OP && !is_math_node(g, src) &&
                g->seg[src] != g->seg[i] - (math ? 1 : 0))
                g->spilled[src] = true;
            if (is_math_node(g, src) && g->seg[src] != g->seg[i]) g->spilled[src] = true;
        }
        gcc_jit_type *t = g->st[n->dtype];
        if (math) {
            g->mathin[i] = lane_array(g, g->st[AX_F32], "min");
            if (n->nin == 2) g->mathin2[i] = lane_array(g, g->st[AX_F32], "min");
        }
        if (n->kind == AX_KN_REDUCE) g->acc[i] = lane_array(g, t, "acc");
    }
    for (int i = 0; i < k->nnodes; i++) {
        if (k->nodes[i].kind == AX_KN_OP && k->nodes[i].store) g->spilled[i] = true;
        if (g->spilled[i] || is_math_node(g, i))
            g->spill[i] = lane_array(g, g->st[k->nodes[i].dtype], "sp");
    }
}

static gcc_jit_function *new_step_function(cg *g, int step) {
    gcc_jit_param *p[4] = {
        GJ(gcc_jit_context_new_param)(g->c, NULL, g->t_charpp, "bufs"),
        GJ(gcc_jit_context_new_param)(g->c, NULL, g->t_voidpp, "fns"),
        GJ(gcc_jit_context_new_param)(g->c, NULL, g->t_i64, "lo"),
        GJ(gcc_jit_context_new_param)(g->c, NULL, g->t_i64, "hi"),
    };
    char name[32];
    snprintf(name, sizeof name, "s%d", step);
    g->fn = GJ(gcc_jit_context_new_function)(g->c, NULL, GCC_JIT_FUNCTION_EXPORTED, g->t_void, name,
                                             4, p, 0);
    g->bufs = GJ(gcc_jit_param_as_rvalue)(p[0]);
    g->fns = GJ(gcc_jit_param_as_rvalue)(p[1]);
    g->lo = GJ(gcc_jit_param_as_rvalue)(p[2]);
    g->hi = GJ(gcc_jit_param_as_rvalue)(p[3]);
    g->blk = block(g, "entry");
    return g->fn;
}

/* bufs[b] as a T* local. */
static gcc_jit_rvalue *buffer_ptr(cg *g, int b, ax_dtype t) {
    gcc_jit_type *pt = GJ(gcc_jit_type_get_pointer)(g->mt[t]);
    return hold(g, pt, cast(g, rv(g, at(g, g->bufs, i64c(g, b))), pt));
}

/* Builds step `step`'s loop nest; false when out of memory. */
static bool build_loop(cg *g, int step) {
    const ax_kernel *k = g->plan->steps[step].k;
    g->k = k;
    new_step_function(g, step);
    int n = k->nnodes;
    int *vars = calloc((size_t)2 * n + 1, sizeof *vars);
    g->ptr = calloc((size_t)n, sizeof *g->ptr);
    g->acc = calloc((size_t)n, sizeof *g->acc);
    g->spill = calloc((size_t)n, sizeof *g->spill);
    g->mathin = calloc((size_t)n, sizeof *g->mathin);
    g->mathin2 = calloc((size_t)n, sizeof *g->mathin2);
    g->val = calloc((size_t)n, sizeof *g->val);
    g->seg = calloc((size_t)n, sizeof *g->seg);
    g->spilled = calloc((size_t)n, sizeof *g->spilled);
    int nbufs = vars ? ax_kernel_buffers(k, vars) : 0;
    gcc_jit_rvalue **bp = calloc((size_t)nbufs + 1, sizeof *bp);
    bool ok = vars && bp && g->ptr && g->acc && g->spill && g->mathin && g->mathin2 && g->val &&
              g->seg && g->spilled;
    if (!ok) goto done;
    for (int b = 0; b < nbufs; b++) bp[b] = buffer_ptr(g, b, g->plan->ir->types[vars[b]].dtype);
    for (int i = 0; i < n; i++)
        for (int b = 0; b < nbufs; b++)
            if ((k->nodes[i].kind == AX_KN_LOAD || k->nodes[i].store) && vars[b] == k->nodes[i].var)
                g->ptr[i] = bp[b];
    for (int d = 0; d < k->ndim; d++) {
        g->idx[d] = local(g, g->t_i64, "i");
        assign(g, g->idx[d], i64c(g, 0));
    }
    g->j = local(g, g->t_i64, "j");
    loop_order(k, g->order);
    g->lane = lane_dim(k);
    g->first_reduced = k->ndim + 1; /* none */
    if (has_reduce(k)) {
        /* reductions over axes of length 1 only (finish_kernel drops them): no reduced dim
         * is left, so the accumulators live and die around each block */
        g->first_reduced = k->ndim;
        for (int p = 0; p < k->ndim; p++)
            if (k->reduced[g->order[p]]) {
                g->first_reduced = p;
                break;
            }
    }
    plan_segments(g);
    g->L = i64c(g, g->B);
    nest(g, 0);
    GJ(gcc_jit_block_end_with_void_return)(g->blk, NULL);
done:
    free(bp);
    free(vars);
    free(g->ptr), free(g->acc), free(g->spill), free(g->mathin), free(g->mathin2);
    free(g->val), free(g->seg), free(g->spilled);
    return ok;
}

/* A GEMM step: one cblas_?gemm call per batch element in [lo, hi). */
static void build_gemm(cg *g, int step) {
    const ax_ir_eqn *e = &g->plan->ir->eqns[g->plan->steps[step].eqn];
    const ax_aval *lt = &g->plan->ir->types[e->in[0].var];
    gemm_shape s;
    gemm_layout(&e->params.dot, lt, &g->plan->ir->types[e->in[1].var], &s);
    new_step_function(g, step);
    ax_dtype t = lt->dtype;
    gcc_jit_type *ft = g->st[t], *fp = GJ(gcc_jit_type_get_pointer)(ft), *it = g->t_int;
    gcc_jit_type *args[14] = {it, it, it, it, it, it, ft, fp, it, fp, it, ft, fp, it};
    gcc_jit_type *fnt =
        GJ(gcc_jit_context_new_function_ptr_type)(g->c, NULL, g->t_void, 14, args, 0);
    gcc_jit_rvalue *gemm =
        hold(g, fnt,
             cast(g, rv(g, at(g, g->fns, i64c(g, t == AX_F32 ? AX_FN_SGEMM : AX_FN_DGEMM))), fnt));
    gcc_jit_rvalue *a = buffer_ptr(g, 0, t), *b = buffer_ptr(g, 1, t), *c = buffer_ptr(g, 2, t);
    gcc_jit_lvalue *bi = local(g, g->t_i64, "b");
    loop l = loop_begin(g, bi, g->lo, g->hi, i64c(g, 1));
#define INT(v) GJ(gcc_jit_context_new_rvalue_from_int)(g->c, it, (int)(v))
#define PLUS(p, n)                                                                                 \
    GJ(gcc_jit_lvalue_get_address)                                                                 \
    (at(g, p, bin(g, GCC_JIT_BINARY_OP_MULT, g->t_i64, rv(g, bi), i64c(g, n))), NULL)
    /* C = op(A) op(B) (m x n), or for a transposed step C^T = op(B)^T op(A)^T (n x m) */
    bool tr = g->plan->steps[step].transposed;
    gcc_jit_rvalue *first = tr ? PLUS(b, s.k * s.n) : PLUS(a, s.m * s.k);
    gcc_jit_rvalue *second = tr ? PLUS(a, s.m * s.k) : PLUS(b, s.k * s.n);
    bool t1 = tr ? !s.trans_b : s.trans_a, t2 = tr ? !s.trans_a : s.trans_b;
    int64_t rows = tr ? s.n : s.m, cols = tr ? s.m : s.n;
    gcc_jit_rvalue *call_args[14] = {INT(AX_CBLAS_ROW_MAJOR),
                                     INT(t1 ? AX_CBLAS_TRANS : AX_CBLAS_NO_TRANS),
                                     INT(t2 ? AX_CBLAS_TRANS : AX_CBLAS_NO_TRANS),
                                     INT(rows),
                                     INT(cols),
                                     INT(s.k),
                                     fconst(g, t, 1.0),
                                     first,
                                     INT(tr ? s.ldb : s.lda),
                                     second,
                                     INT(tr ? s.lda : s.ldb),
                                     fconst(g, t, 0.0),
                                     PLUS(c, s.m * s.n),
                                     INT(cols)};
#undef INT
#undef PLUS
    GJ(gcc_jit_block_add_eval)
    (g->blk, NULL, GJ(gcc_jit_context_new_call_through_ptr)(g->c, NULL, gemm, 14, call_args));
    loop_end(g, &l);
    GJ(gcc_jit_block_end_with_void_return)(g->blk, NULL);
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

bool ax_codegen_build(const ax_gccjit *api, gcc_jit_context *ctx, const ax_plan *plan) {
    cg g = {.api = api, .c = ctx, .plan = plan, .B = lanes()};
    init_types(&g);
    for (int s = 0; s < plan->nsteps; s++) {
        if (plan->steps[s].kind == AX_STEP_LOOP && !build_loop(&g, s)) return false;
        if (plan->steps[s].kind == AX_STEP_GEMM) build_gemm(&g, s);
    }
    return true;
}

/* ---------------------------------------------------------------- options */

/* -O2 unless AX_JIT_OPT asks for another level. Measured on the benchmarks of
 * docs/benchmarks.md, -O3 builds no faster code here (every lane loop has a constant trip
 * count that -O2's vectoriser already handles) but doubles compile latency: selu cold, 77 ms
 * at -O2 and 138 ms at -O3. */
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

/* Fusion: partitions a (simplified) IR into the steps that jit runs.
 *
 * A LOOP step is one loop nest: chains of elementwise operations over one iteration shape,
 * reading the arrays it needs through broadcasts, transposes and reshapes folded into strides,
 * and optionally reducing some axes (sums, maxima, ...), so no intermediate array is made.
 * A CONTROL step is a cond, while or scan: each of its sub-programs is fused into a plan of its
 * own, whose steps are part of the same code (so compiled once, with the program), and jit
 * runs the loop over them (compiler/jit.c). Everything else is an EAGER step: the equation
 * runs on its eager kernel (matrix products through OpenBLAS exactly as eagerly, sorting,
 * gathers, Cholesky, ...). compiler/codegen.c turns LOOP steps into native code. */
#ifndef AX_FUSE_H
#define AX_FUSE_H

#include "ir.h"

typedef enum {
    AX_KN_LOAD,   /* an element of buffer `var` at offset sum(index[d] * stride[d]) */
    AX_KN_CONST,  /* a literal scalar */
    AX_KN_INDEX,  /* iota: sum(index[d] * stride[d]) converted to dtype */
    AX_KN_OP,     /* elementwise equation `eqn` on nodes in[0..nin) */
    AX_KN_REDUCE, /* reduction equation `eqn` of node in[0] over the kernel's reduced axes */
} ax_knode_kind;

typedef struct ax_knode {
    ax_knode_kind kind;
    ax_dtype dtype;
    int var; /* LOAD: the buffer read; OP, REDUCE: the output variable */
    int eqn; /* OP, REDUCE, INDEX: the equation */
    int nin;
    int in[3];                    /* OP, REDUCE: operand nodes (earlier in the list) */
    const ax_array *lit;          /* CONST: the literal (owned by the IR) */
    bool store;                   /* OP, INDEX: also written to var's buffer; REDUCE: always */
    int64_t stride[AX_MAX_RANK];  /* LOAD, INDEX: the strides the value is read with */
    int64_t ostride[AX_MAX_RANK]; /* stored nodes: the strides of the output buffer */
} ax_knode;

typedef struct ax_kernel {
    int ndim; /* after merging dims that are contiguous for every access; at least 1 */
    int64_t shape[AX_MAX_RANK];
    bool reduced[AX_MAX_RANK]; /* dims that the REDUCE nodes sum away */
    int nreduce;               /* axes of the reductions before merging (0: none yet) */
    int reduce_axes[AX_MAX_RANK];
    int nnodes, cap;
    ax_knode *nodes;
} ax_kernel;

typedef enum { AX_STEP_LOOP, AX_STEP_EAGER, AX_STEP_CONTROL } ax_step_kind;

struct ax_plan;

typedef struct ax_step {
    ax_step_kind kind;
    int eqn;      /* EAGER, CONTROL */
    ax_kernel *k; /* LOOP */
    /* CONTROL: the plans of the equation's sub-programs (cond's branches, while's cond and
     * body, scan's body); sub-program i's steps are steps sub_base[i] .. of this plan's code */
    int nsub;
    struct ax_plan **sub;
    int *sub_base;
} ax_step;

/* ---- The code: what native code is generated from ----
 * A plan lowered to plain values: everything compiler/codegen.c reads, and nothing else (it
 * never sees the IR). The records hold no pointers and are zeroed before they are filled, so
 * the jit cache key, a hash of their bytes (ax_code_key), covers every field by construction:
 * a field added here is part of the key without anyone having to remember it. */
typedef struct ax_code_node {
    ax_knode_kind kind;
    ax_dtype dtype;
    ax_prim prim; /* OP, REDUCE, INDEX */
    int nin;
    int in[3]; /* OP, REDUCE: operand nodes (earlier in the step) */
    int buf;   /* LOAD: the buffer slot read; stored nodes: the slot written; else -1 */
    bool store;
    int64_t k;    /* OP integer_pow: the exponent */
    uint64_t lit; /* CONST: the value's bits (the low ax_dtype_size bytes) */
    int64_t stride[AX_MAX_RANK], ostride[AX_MAX_RANK];
} ax_code_node;

/* How a LOOP step's function is called: [0, extent) of its outermost loop, which may be split
 * into ranges at multiples of `granule` (not when it runs over a reduced axis), each
 * iteration touching work_per_iter elements. */
typedef struct ax_loop_split {
    int64_t extent, work_per_iter, granule;
    bool splittable;
} ax_loop_split;

typedef struct ax_code_step {
    ax_step_kind kind;
    /* LOOP */
    int ndim;
    int64_t shape[AX_MAX_RANK];
    bool reduced[AX_MAX_RANK];
    int first_node, nnodes; /* the step's nodes: code->nodes[first_node ..] */
    int first_buf, nbufs;   /* the buffers the function takes: code->bufs[first_buf ..] */
    /* the ranges its function is called with: in the key, so that an object cached by a build
     * that ordered the loop otherwise is never called with this build's ranges */
    ax_loop_split split;
} ax_code_step;

typedef struct ax_code_header {
    char version[32]; /* CODEGEN_VERSION (compiler/codegen.h) */
    char target[16];  /* the -march level (ax_codegen_target) */
    int vector_lanes; /* the eager kernels' f32 width: the libmvec entry points called */
    int opt_level;    /* ax_codegen_opt_level */
    int piece_work;   /* ax_codegen_piece_work */
    int nsteps, nnodes, nbufs;
} ax_code_header;

typedef struct ax_code {
    ax_code_header h;
    ax_code_step *steps; /* h.nsteps (EAGER steps too, so step s is function "s<s>"): the
                            plan's own, then those of its sub-programs' plans */
    ax_code_node *nodes; /* h.nnodes */
    ax_dtype *bufs;      /* h.nbufs: the dtype of each buffer slot */
} ax_code;

typedef struct ax_plan {
    const ax_ir *ir; /* borrowed */
    int nsteps, cap;
    ax_step *steps;
    ax_code code;  /* the steps lowered for code generation */
    int *slot_var; /* per buffer slot of `code`: the variable bound to it when running */
    /* a primitive whose row declares no lowering (AX_KOP_NONE: a bug in the row), here or in a
     * sub-program: jit refuses the program with an internal error; NULL: none */
    const char *unlowered;
} ax_plan;

/* The steps for `ir`, with their code; NULL when out of memory. */
ax_plan *ax_fuse(const ax_ir *ir);
/* The cache key of the code: a hash of its header and records, and of the lowerings of the
 * primitive table that the code generator reads with them. */
uint64_t ax_code_key(const ax_code *code);
void ax_plan_free(ax_plan *plan);
/* The plan as text ("loop f32[5000,5000]: mul mul add -> c" per step), for logs and :ir. */
void ax_plan_format(ax_strbuf *out, const ax_plan *plan);

#endif

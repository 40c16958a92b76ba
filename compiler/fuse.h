/* Fusion: partitions a (simplified) IR into the steps that jit runs.
 *
 * A LOOP step is one loop nest: chains of elementwise operations over one iteration shape,
 * reading the arrays it needs through broadcasts, transposes and reshapes folded into strides,
 * and optionally reducing some axes (sums, maxima, ...), so no intermediate array is made.
 * A GEMM step is a matrix product handed to OpenBLAS from generated code. Everything else is an
 * EAGER step: the equation runs on its eager kernel (sorting, gathers, Cholesky, ...).
 * compiler/codegen.c turns LOOP and GEMM steps into native code. */
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

typedef enum { AX_STEP_LOOP, AX_STEP_GEMM, AX_STEP_EAGER } ax_step_kind;

typedef struct ax_step {
    ax_step_kind kind;
    int eqn;      /* GEMM, EAGER */
    ax_kernel *k; /* LOOP */
    int out;      /* GEMM: the variable written: the product's, or the transpose's that was its
                     only use (then `transposed`: the step computes (A B)^T = B^T A^T) */
    bool transposed;
} ax_step;

typedef struct ax_plan {
    const ax_ir *ir; /* borrowed */
    int nsteps, cap;
    ax_step *steps;
} ax_plan;

/* The steps for `ir`; NULL when out of memory. */
ax_plan *ax_fuse(const ax_ir *ir);
void ax_plan_free(ax_plan *plan);
/* The plan as text ("loop f32[5000,5000]: mul mul add -> c" per step), for logs and :ir. */
void ax_plan_format(ax_strbuf *out, const ax_plan *plan);

#endif

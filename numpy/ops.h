/* The operators of the language, as codes: what the parser writes into the AST and what the
 * NumPy layer (numpy/np.h) computes on arrays. */
#ifndef AX_OPS_H
#define AX_OPS_H

typedef enum {
    AX_OP_ADD,
    AX_OP_SUB,
    AX_OP_MUL,
    AX_OP_DIV,
    AX_OP_FLOORDIV,
    AX_OP_MOD,
    AX_OP_POW,
    AX_OP_MATMUL,
    AX_OP_BITAND,
    AX_OP_BITOR,
    AX_OP_BITXOR,
    AX_OP_LSHIFT,
    AX_OP_RSHIFT
} ax_binop;

typedef enum { AX_OP_NEG, AX_OP_POS, AX_OP_INVERT } ax_unop;

/* in, not in, is and is not compare values, not arrays: the evaluator answers them. */
typedef enum {
    AX_CMP_LT,
    AX_CMP_LE,
    AX_CMP_GT,
    AX_CMP_GE,
    AX_CMP_EQ,
    AX_CMP_NE,
    AX_CMP_IN,
    AX_CMP_NOT_IN,
    AX_CMP_IS,
    AX_CMP_IS_NOT
} ax_cmpop;

#endif

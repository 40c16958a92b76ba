/* What jit knows of a fused loop's float values' signs from how they are computed: x * x and
 * exp(y) are non-negative, -(x * x) non-positive, and so on. Code generation uses it to pick
 * shorter code that gives the same bits (runtime/vecmath_body.h's exp_nonpos for the
 * exp(-x * x) of a Gaussian, exp(x - m) with m >= x unknown to it). */
#ifndef AX_VALUE_SIGN_H
#define AX_VALUE_SIGN_H

#include "fuse.h"

/* NONNEG: >= 0, +inf or NaN; NONPOS: <= 0, -inf or NaN. Zeros of either sign count as both
 * (the functions that use it give the same bits for +0 and -0 either way). */
typedef enum ax_sign { AX_SIGN_ANY, AX_SIGN_NONNEG, AX_SIGN_NONPOS } ax_sign;

/* The signs of nodes[0 .. n) of one LOOP step (each node's operands come before it). */
void ax_value_signs(const ax_code_node *nodes, int n, ax_sign *sign);

#endif

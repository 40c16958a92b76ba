/* The libgccjit back end of ax's f32 vector math (runtime/vecmath.h): emits a function's lane
 * code into a block of the function being built, where it joins the rest of a lane loop's
 * body and is vectorised with it. The code is runtime/vecmath_body.h, the same the eager
 * kernels run, so results are the same bits. */
#ifndef AX_VECMATH_JIT_H
#define AX_VECMATH_JIT_H

#include "gccjit.h"
#include "value_sign.h"

#include "../runtime/vecmath.h"

/* Where the code goes: assignments to `blk`, locals and blocks of `fn` (named with *nlocals,
 * which it advances). The code branches (GCC if-converts it): `blk` becomes the block where
 * it ends, where the caller continues. */
typedef struct ax_vecmath_jit {
    const ax_gccjit *api;
    gcc_jit_context *c;
    gcc_jit_function *fn;
    gcc_jit_block *blk;
    int *nlocals;
} ax_vecmath_jit;

/* f(x) for an f32 rvalue x of sign `sign` (what is known of it: exp has shorter code for
 * x <= 0 and for x >= 0, which gives the same bits). */
gcc_jit_rvalue *ax_vecmath_jit_emit(ax_vecmath_jit *where, ax_vm_fn f, gcc_jit_rvalue *x,
                                    ax_sign sign);

/* A hash of runtime/vecmath_body.h (made by the Makefile), part of jit's cache keys: code
 * built from an older body is never loaded. At most AX_VECMATH_REVISION_MAX characters (a
 * cksum of 10 digits, "f" when FMA steps are fused). */
const char *ax_vecmath_jit_revision(void);
#define AX_VECMATH_REVISION_MAX 11

#endif

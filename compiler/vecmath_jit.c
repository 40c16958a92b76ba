/* runtime/vecmath_body.h as libgccjit calls (see vecmath_jit.h): every lane operation builds
 * the rvalue of the same C operation, LET holds a value in a local, and comparisons select
 * through bit masks (libgccjit has no conditional expression; masks vectorise). */
#include "vecmath_jit.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#define GJ(name) (J->w.api->name)

typedef struct vmj {
    ax_vecmath_jit w;
    gcc_jit_type *f32, *f64, *i32, *u32, *u64;
    bool fused; /* FMA as one rounding, as the eager kernels (ax_vecmath_fused) */
} vmj;

typedef gcc_jit_rvalue *VM_F;
typedef gcc_jit_rvalue *VM_I;
typedef gcc_jit_rvalue *VM_U;

static gcc_jit_type *type_of(vmj *J, gcc_jit_rvalue *v) {
    return GJ(gcc_jit_rvalue_get_type)(v);
}

static gcc_jit_rvalue *hold(vmj *J, gcc_jit_rvalue *v) {
    char name[32];
    snprintf(name, sizeof name, "vm%d", (*J->w.nlocals)++);
    gcc_jit_lvalue *l = GJ(gcc_jit_function_new_local)(J->w.fn, NULL, type_of(J, v), name);
    GJ(gcc_jit_block_add_assignment)(J->w.blk, NULL, l, v);
    return GJ(gcc_jit_lvalue_as_rvalue)(l);
}

static gcc_jit_rvalue *bin(vmj *J, enum gcc_jit_binary_op op, gcc_jit_rvalue *a,
                           gcc_jit_rvalue *b) {
    return GJ(gcc_jit_context_new_binary_op)(J->w.c, NULL, op, type_of(J, a), a, b);
}

static gcc_jit_rvalue *cmp(vmj *J, enum gcc_jit_comparison op, gcc_jit_rvalue *a,
                           gcc_jit_rvalue *b) {
    return GJ(gcc_jit_context_new_comparison)(J->w.c, NULL, op, a, b);
}

static gcc_jit_rvalue *cast(vmj *J, gcc_jit_rvalue *v, gcc_jit_type *t) {
    return GJ(gcc_jit_context_new_cast)(J->w.c, NULL, v, t);
}

static gcc_jit_rvalue *bitcast(vmj *J, gcc_jit_rvalue *v, gcc_jit_type *t) {
    return GJ(gcc_jit_context_new_bitcast)(J->w.c, NULL, v, t);
}

static gcc_jit_rvalue *fconst(vmj *J, float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return bitcast(J, GJ(gcc_jit_context_new_rvalue_from_long)(J->w.c, J->u32, (long)u), J->f32);
}

static gcc_jit_rvalue *dconst(vmj *J, double d) {
    uint64_t u;
    memcpy(&u, &d, 8);
    return bitcast(J, GJ(gcc_jit_context_new_rvalue_from_long)(J->w.c, J->u64, (long)u), J->f64);
}

static gcc_jit_rvalue *iconst(vmj *J, gcc_jit_type *t, long v) {
    return GJ(gcc_jit_context_new_rvalue_from_long)(J->w.c, t, v);
}

/* m ? a : b as `t = b; if (m) t = a;`: GCC if-converts it into a blend when it vectorises the
 * lane loop (a mask of bits, and-ed and or-ed, costs it 3-4 instructions more) */
static gcc_jit_rvalue *lane_select(vmj *J, gcc_jit_rvalue *m, gcc_jit_rvalue *a,
                                   gcc_jit_rvalue *b) {
    char name[32];
    snprintf(name, sizeof name, "vm%d", (*J->w.nlocals)++);
    gcc_jit_lvalue *t = GJ(gcc_jit_function_new_local)(J->w.fn, NULL, type_of(J, a), name);
    GJ(gcc_jit_block_add_assignment)(J->w.blk, NULL, t, b);
    snprintf(name, sizeof name, "vmthen%d", (*J->w.nlocals)++);
    gcc_jit_block *then = GJ(gcc_jit_function_new_block)(J->w.fn, name);
    snprintf(name, sizeof name, "vmjoin%d", (*J->w.nlocals)++);
    gcc_jit_block *join = GJ(gcc_jit_function_new_block)(J->w.fn, name);
    GJ(gcc_jit_block_end_with_conditional)(J->w.blk, NULL, m, then, join);
    GJ(gcc_jit_block_add_assignment)(then, NULL, t, a);
    GJ(gcc_jit_block_end_with_jump)(then, NULL, join);
    J->w.blk = join;
    return GJ(gcc_jit_lvalue_as_rvalue)(t);
}

static gcc_jit_rvalue *shift(vmj *J, enum gcc_jit_binary_op op, gcc_jit_rvalue *a, int k) {
    return bin(J, op, a, iconst(J, type_of(J, a), k));
}

/* a * b + c (f32): fmaf where the eager kernels fuse it */
static gcc_jit_rvalue *fma_op(vmj *J, gcc_jit_rvalue *a, gcc_jit_rvalue *b, gcc_jit_rvalue *c) {
    if (!J->fused) return bin(J, GCC_JIT_BINARY_OP_PLUS, bin(J, GCC_JIT_BINARY_OP_MULT, a, b), c);
    gcc_jit_rvalue *args[3] = {a, b, c};
    return GJ(gcc_jit_context_new_call)(
        J->w.c, NULL, GJ(gcc_jit_context_get_builtin_function)(J->w.c, "__builtin_fmaf"), 3, args);
}

static gcc_jit_rvalue *horner(vmj *J, gcc_jit_rvalue *z, const float *c, int n) {
    gcc_jit_rvalue *p = fconst(J, c[n - 1]);
    for (int k = n - 2; k >= 0; k--) p = fma_op(J, p, z, fconst(J, c[k]));
    return p;
}

#define VM_FN(name, ...) static gcc_jit_rvalue *vm_##name(vmj *J, __VA_ARGS__)
#define CALL(name, ...)  vm_##name(J, __VA_ARGS__)
#define LET(v, e)        gcc_jit_rvalue *v = hold(J, (e))
#define RETURN(e)        return (e)

#define F(c) fconst(J, (float)(c))
#define D(c) dconst(J, (double)(c))
#define I(c) iconst(J, J->i32, (long)(c))
#define U(c) iconst(J, J->u32, (long)(c))

#define ADD(a, b) bin(J, GCC_JIT_BINARY_OP_PLUS, a, b)
#define SUB(a, b) bin(J, GCC_JIT_BINARY_OP_MINUS, a, b)
#define MUL(a, b) bin(J, GCC_JIT_BINARY_OP_MULT, a, b)
#define DIV(a, b) bin(J, GCC_JIT_BINARY_OP_DIVIDE, a, b)
#define NEG(a)                                                                                     \
    GJ(gcc_jit_context_new_unary_op)(J->w.c, NULL, GCC_JIT_UNARY_OP_MINUS, type_of(J, a), a)
#define LT(a, b)     cmp(J, GCC_JIT_COMPARISON_LT, a, b)
#define GT(a, b)     cmp(J, GCC_JIT_COMPARISON_GT, a, b)
#define GE(a, b)     cmp(J, GCC_JIT_COMPARISON_GE, a, b)
#define EQ(a, b)     cmp(J, GCC_JIT_COMPARISON_EQ, a, b)
#define SEL(m, a, b) lane_select(J, m, a, b)
#define BAND(a, b)   bin(J, GCC_JIT_BINARY_OP_BITWISE_AND, a, b)
#define BOR(a, b)    bin(J, GCC_JIT_BINARY_OP_BITWISE_OR, a, b)
#define SHL(a, k)    shift(J, GCC_JIT_BINARY_OP_LSHIFT, a, k)
#define SHR(a, k)    shift(J, GCC_JIT_BINARY_OP_RSHIFT, a, k)
#define BITS(f)      bitcast(J, f, J->u32)
#define FROMBITS(u)  bitcast(J, u, J->f32)
#define TOI(u)       cast(J, u, J->i32)
#define TOU(i)       cast(J, i, J->u32)
#define I2F(i)       cast(J, i, J->f32)
#define F2D(f)       cast(J, f, J->f64)
#define D2F(d)       cast(J, d, J->f32)
#define HORNER(z, c) horner(J, z, c, (int)(sizeof c / sizeof *c))
#define FMA(a, b, c) fma_op(J, a, b, c)
#define FUSED        (J->fused)

#include "../runtime/vecmath_body.h"

#ifndef AX_VECMATH_BODY_HASH
#error "the Makefile defines AX_VECMATH_BODY_HASH, a hash of runtime/vecmath_body.h"
#endif

const char *ax_vecmath_jit_revision(void) {
    return ax_vecmath_fused() ? AX_VECMATH_BODY_HASH "f" : AX_VECMATH_BODY_HASH;
}

gcc_jit_rvalue *ax_vecmath_jit_emit(ax_vecmath_jit *where, ax_vm_fn f, gcc_jit_rvalue *x,
                                    ax_sign sign) {
    vmj j = {.w = *where}, *J = &j;
    j.f32 = GJ(gcc_jit_context_get_type)(j.w.c, GCC_JIT_TYPE_FLOAT);
    j.f64 = GJ(gcc_jit_context_get_type)(j.w.c, GCC_JIT_TYPE_DOUBLE);
    j.i32 = GJ(gcc_jit_context_get_type)(j.w.c, GCC_JIT_TYPE_INT32_T);
    j.u32 = GJ(gcc_jit_context_get_type)(j.w.c, GCC_JIT_TYPE_UINT32_T);
    j.u64 = GJ(gcc_jit_context_get_type)(j.w.c, GCC_JIT_TYPE_UINT64_T);
    j.fused = ax_vecmath_fused();
    x = hold(J, x);
    static gcc_jit_rvalue *(*const emit[AX_VM_COUNT])(vmj *, gcc_jit_rvalue *) = {
        [AX_VM_EXP] = vm_exp,   [AX_VM_EXPM1] = vm_expm1, [AX_VM_LOG] = vm_log,
        [AX_VM_TANH] = vm_tanh, [AX_VM_ERF] = vm_erf,     [AX_VM_LOGISTIC] = vm_logistic,
    };
    gcc_jit_rvalue *y = f != AX_VM_EXP || sign == AX_SIGN_ANY ? emit[f](J, x)
                        : sign == AX_SIGN_NONPOS              ? vm_exp_nonpos(J, x)
                                                              : vm_exp_nonneg(J, x);
    where->blk = j.w.blk;
    return y;
}

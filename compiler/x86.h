/* A small x86-64 assembler: the instructions the quick tier's code generator emits
 * (compiler/quickgen.h), encoded into a growing buffer, with labels for jumps.
 *
 * Operands are general registers (AX_X86_RAX ..) or vector registers (0-15, xmm or ymm by
 * the instruction), and memory operands [base + index * scale + disp]. Vector instructions
 * use the VEX encoding (AVX, AVX2, FMA): three operands, the destination first, as Intel's
 * manuals write them. Encodings follow the Intel SDM, volume 2. */
#ifndef AX_X86_H
#define AX_X86_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum {
    AX_X86_RAX,
    AX_X86_RCX,
    AX_X86_RDX,
    AX_X86_RBX,
    AX_X86_RSP,
    AX_X86_RBP,
    AX_X86_RSI,
    AX_X86_RDI,
    AX_X86_R8,
    AX_X86_R9,
    AX_X86_R10,
    AX_X86_R11,
    AX_X86_R12,
    AX_X86_R13,
    AX_X86_R14,
    AX_X86_R15
};

/* Jump conditions (after cmp a, b: signed less, greater or equal, ...). */
typedef enum {
    AX_X86_JE = 0x4,
    AX_X86_JNE = 0x5,
    AX_X86_JL = 0xc,
    AX_X86_JGE = 0xd,
    AX_X86_JLE = 0xe,
    AX_X86_JG = 0xf
} ax_x86_cond;

/* A memory operand [base + index * scale + disp]; index -1: none. */
typedef struct ax_x86_mem {
    int base, index, scale;
    int32_t disp;
} ax_x86_mem;

static inline ax_x86_mem ax_x86_at(int base, int32_t disp) {
    return (ax_x86_mem){base, -1, 1, disp};
}
static inline ax_x86_mem ax_x86_idx(int base, int index, int scale, int32_t disp) {
    return (ax_x86_mem){base, index, scale, disp};
}

typedef struct ax_x86 {
    uint8_t *code;
    size_t len, cap;
    int32_t *label_at; /* per label: its offset, or -1 while unbound */
    int nlabels, label_cap;
    struct ax_x86_fixup *fixups; /* rel32 fields waiting for their label */
    int nfixups, fixup_cap;
    bool oom; /* an allocation failed: the code is unusable */
} ax_x86;

void ax_x86_init(ax_x86 *a);
void ax_x86_free(ax_x86 *a);
/* A new, unbound label; bound to the current offset by ax_x86_bind. */
int ax_x86_label(ax_x86 *a);
void ax_x86_bind(ax_x86 *a, int label);
/* Resolves jumps: false when a label was never bound or memory ran out. */
bool ax_x86_finish(ax_x86 *a);

/* ---- general registers (64-bit) ---- */
void ax_x86_mov_rr(ax_x86 *a, int dst, int src);
void ax_x86_load(ax_x86 *a, int dst, ax_x86_mem m);        /* mov dst, qword [m] */
void ax_x86_store(ax_x86 *a, ax_x86_mem m, int src);       /* mov qword [m], src */
void ax_x86_store_imm(ax_x86 *a, ax_x86_mem m, int32_t v); /* mov qword [m], v (sign-extended) */
void ax_x86_mov_imm(ax_x86 *a, int dst, int64_t v);
void ax_x86_lea(ax_x86 *a, int dst, ax_x86_mem m);
void ax_x86_add_rr(ax_x86 *a, int dst, int src);
void ax_x86_sub_rr(ax_x86 *a, int dst, int src);
void ax_x86_add_imm(ax_x86 *a, int dst, int32_t v);
void ax_x86_add_mem_imm(ax_x86 *a, ax_x86_mem m, int32_t v); /* add qword [m], v */
void ax_x86_sub_imm(ax_x86 *a, int dst, int32_t v);
void ax_x86_and_imm(ax_x86 *a, int dst, int32_t v);
void ax_x86_imul_rr(ax_x86 *a, int dst, int src);
void ax_x86_cmp_rr(ax_x86 *a, int x, int y);
void ax_x86_cmp_imm(ax_x86 *a, int x, int32_t v);
void ax_x86_cmp_mem(ax_x86 *a, int x, ax_x86_mem m);      /* cmp x, qword [m] */
void ax_x86_movzx_byte(ax_x86 *a, int dst, ax_x86_mem m); /* movzx dst32, byte [m] */
void ax_x86_neg32(ax_x86 *a, int r);
void ax_x86_push(ax_x86 *a, int r);
void ax_x86_pop(ax_x86 *a, int r);
void ax_x86_call(ax_x86 *a, const void *fn); /* through rax */
void ax_x86_ret(ax_x86 *a);
void ax_x86_jmp(ax_x86 *a, int label);
void ax_x86_jcc(ax_x86 *a, ax_x86_cond c, int label);

/* ---- vector registers ----
 * Every instruction names its VEX fields: map (1: 0F, 2: 0F38, 3: 0F3A), pp (0: none, 1: 66,
 * 2: F3, 3: F2), W, L (0: xmm, 1: ymm) and opcode. ax_x86_vrr: dst = op(src1, src2);
 * ax_x86_vrm: dst = op(src1, [m]); src1 -1 where the instruction has no first source. */
typedef struct ax_x86_vop {
    uint8_t map, pp, w, opcode;
} ax_x86_vop;

void ax_x86_vrr(ax_x86 *a, ax_x86_vop op, int l, int dst, int src1, int src2);
void ax_x86_vrm(ax_x86 *a, ax_x86_vop op, int l, int reg, int src1, ax_x86_mem m);
void ax_x86_imm8(ax_x86 *a, uint8_t v); /* the immediate byte of the instruction just emitted */
void ax_x86_vzeroupper(ax_x86 *a);
/* vmovd xmm, r32 */
void ax_x86_vmovd_from(ax_x86 *a, int x, int r);

/* The VEX opcodes used (name: map, pp, W, opcode). */
#define AX_X86_VMOVUPS_LOAD  ((ax_x86_vop){1, 0, 0, 0x10})
#define AX_X86_VMOVUPS_STORE ((ax_x86_vop){1, 0, 0, 0x11})
#define AX_X86_VMOVSD_LOAD   ((ax_x86_vop){1, 3, 0, 0x10})
#define AX_X86_VMOVSD_STORE  ((ax_x86_vop){1, 3, 0, 0x11})
#define AX_X86_VMOVQ_STORE   ((ax_x86_vop){1, 1, 0, 0xd6})
#define AX_X86_VMOVAPS       ((ax_x86_vop){1, 0, 0, 0x28}) /* register to register */
#define AX_X86_VGATHERDPS    ((ax_x86_vop){2, 1, 0, 0x92}) /* [base + vindex * scale] */
#define AX_X86_VSQRTPS       ((ax_x86_vop){1, 0, 0, 0x51})
#define AX_X86_VANDPS        ((ax_x86_vop){1, 0, 0, 0x54})
#define AX_X86_VORPS         ((ax_x86_vop){1, 0, 0, 0x56})
#define AX_X86_VXORPS        ((ax_x86_vop){1, 0, 0, 0x57})
#define AX_X86_VADDPS        ((ax_x86_vop){1, 0, 0, 0x58})
#define AX_X86_VMULPS        ((ax_x86_vop){1, 0, 0, 0x59})
#define AX_X86_VSUBPS        ((ax_x86_vop){1, 0, 0, 0x5c})
#define AX_X86_VDIVPS        ((ax_x86_vop){1, 0, 0, 0x5e})
#define AX_X86_VADDPD        ((ax_x86_vop){1, 1, 0, 0x58})
#define AX_X86_VMULPD        ((ax_x86_vop){1, 1, 0, 0x59})
#define AX_X86_VCVTPS2PD     ((ax_x86_vop){1, 0, 0, 0x5a})
#define AX_X86_VCVTDQ2PS     ((ax_x86_vop){1, 0, 0, 0x5b})
#define AX_X86_VCMPPS        ((ax_x86_vop){1, 0, 0, 0xc2})
#define AX_X86_VPCMPGTD      ((ax_x86_vop){1, 1, 0, 0x66})
#define AX_X86_VPACKUSWB     ((ax_x86_vop){1, 1, 0, 0x67})
#define AX_X86_VPSHIFTD_IMM  ((ax_x86_vop){1, 1, 0, 0x72}) /* /2 srl, /4 sra, /6 sll */
#define AX_X86_VPCMPEQD      ((ax_x86_vop){1, 1, 0, 0x76})
#define AX_X86_VPAND         ((ax_x86_vop){1, 1, 0, 0xdb})
#define AX_X86_VPOR          ((ax_x86_vop){1, 1, 0, 0xeb})
#define AX_X86_VPXOR         ((ax_x86_vop){1, 1, 0, 0xef})
#define AX_X86_VPSUBD        ((ax_x86_vop){1, 1, 0, 0xfa})
#define AX_X86_VPADDD        ((ax_x86_vop){1, 1, 0, 0xfe})
#define AX_X86_VBROADCASTSS  ((ax_x86_vop){2, 1, 0, 0x18})
#define AX_X86_VPABSD        ((ax_x86_vop){2, 1, 0, 0x1e})
#define AX_X86_VPACKUSDW     ((ax_x86_vop){2, 1, 0, 0x2b})
#define AX_X86_VPMOVZXBD     ((ax_x86_vop){2, 1, 0, 0x31})
#define AX_X86_VPMINSD       ((ax_x86_vop){2, 1, 0, 0x39})
#define AX_X86_VPMINUD       ((ax_x86_vop){2, 1, 0, 0x3b})
#define AX_X86_VPMAXSD       ((ax_x86_vop){2, 1, 0, 0x3d})
#define AX_X86_VPMAXUD       ((ax_x86_vop){2, 1, 0, 0x3f})
#define AX_X86_VPMULLD       ((ax_x86_vop){2, 1, 0, 0x40})
#define AX_X86_VPSRLVD       ((ax_x86_vop){2, 1, 0, 0x45})
#define AX_X86_VPSRAVD       ((ax_x86_vop){2, 1, 0, 0x46})
#define AX_X86_VPSLLVD       ((ax_x86_vop){2, 1, 0, 0x47})
#define AX_X86_VPBROADCASTD  ((ax_x86_vop){2, 1, 0, 0x58})
#define AX_X86_VROUNDPS      ((ax_x86_vop){3, 1, 0, 0x08})
#define AX_X86_VEXTRACTF128  ((ax_x86_vop){3, 1, 0, 0x19})
#define AX_X86_VBLENDVPS     ((ax_x86_vop){3, 1, 0, 0x4a})
/* float64 lanes (4 per ymm), and the moves between 64-bit and 32-bit lanes */
#define AX_X86_VMOVD_STORE  ((ax_x86_vop){1, 1, 0, 0x7e}) /* dword [m] = xmm's low lane */
#define AX_X86_VSQRTPD      ((ax_x86_vop){1, 1, 0, 0x51})
#define AX_X86_VSUBPD       ((ax_x86_vop){1, 1, 0, 0x5c})
#define AX_X86_VDIVPD       ((ax_x86_vop){1, 1, 0, 0x5e})
#define AX_X86_VCVTPD2PS    ((ax_x86_vop){1, 1, 0, 0x5a}) /* xmm = ymm's 4 doubles rounded */
#define AX_X86_VCMPPD       ((ax_x86_vop){1, 1, 0, 0xc2})
#define AX_X86_VSHUFPS      ((ax_x86_vop){1, 0, 0, 0xc6})
#define AX_X86_VCVTDQ2PD    ((ax_x86_vop){1, 2, 0, 0xe6}) /* ymm = xmm's 4 int32 */
#define AX_X86_VBROADCASTSD ((ax_x86_vop){2, 1, 0, 0x19})
#define AX_X86_VPCMPEQQ     ((ax_x86_vop){2, 1, 0, 0x29})
#define AX_X86_VPMOVZXBQ    ((ax_x86_vop){2, 1, 0, 0x32})
#define AX_X86_VPCMPGTQ     ((ax_x86_vop){2, 1, 0, 0x37})
#define AX_X86_VGATHERDPD   ((ax_x86_vop){2, 1, 1, 0x92}) /* [base + xmm vindex * scale] */
#define AX_X86_VROUNDPD     ((ax_x86_vop){3, 1, 0, 0x09})
/* int64 lanes */
#define AX_X86_VPSHIFTQ_IMM ((ax_x86_vop){1, 1, 0, 0x73}) /* /2 srl, /6 sll */
#define AX_X86_VPADDQ       ((ax_x86_vop){1, 1, 0, 0xd4})
#define AX_X86_VPSUBQ       ((ax_x86_vop){1, 1, 0, 0xfb})
#define AX_X86_VPMOVSXDQ    ((ax_x86_vop){2, 1, 0, 0x25}) /* ymm = xmm's 4 int32 */
#define AX_X86_VPMOVZXDQ    ((ax_x86_vop){2, 1, 0, 0x35}) /* ymm = xmm's 4 uint32 */
#define AX_X86_VPSRLVQ      ((ax_x86_vop){2, 1, 1, 0x45})
#define AX_X86_VPSLLVQ      ((ax_x86_vop){2, 1, 1, 0x47})

/* vcmpps predicates: ordered comparisons are false when either operand is NaN. */
enum {
    AX_X86_CMP_EQ_OQ = 0x00,
    AX_X86_CMP_LT_OS = 0x01,
    AX_X86_CMP_LE_OS = 0x02,
    AX_X86_CMP_UNORD_Q = 0x03,
    AX_X86_CMP_NEQ_UQ = 0x04,
    AX_X86_CMP_GE_OS = 0x0d,
    AX_X86_CMP_GT_OS = 0x0e
};

#endif

/* A small x86-64 assembler (see x86.h). */
#include "x86.h"

#include <stdlib.h>
#include <string.h>

typedef struct ax_x86_fixup {
    size_t at; /* the rel32 field */
    int label;
} ax_x86_fixup;

void ax_x86_init(ax_x86 *a) {
    memset(a, 0, sizeof *a);
}

void ax_x86_free(ax_x86 *a) {
    free(a->code);
    free(a->label_at);
    free(a->fixups);
    memset(a, 0, sizeof *a);
}

static bool grow(void **p, int *cap, int need, size_t elem) {
    if (need <= *cap) return true;
    int n = *cap ? *cap * 2 : 64;
    while (n < need) n *= 2;
    void *q = realloc(*p, (size_t)n * elem);
    if (!q) return false;
    *p = q;
    *cap = n;
    return true;
}

static void byte(ax_x86 *a, uint8_t b) {
    if (a->len == a->cap) {
        size_t n = a->cap ? a->cap * 2 : 4096;
        uint8_t *c = realloc(a->code, n);
        if (!c) {
            a->oom = true;
            return;
        }
        a->code = c;
        a->cap = n;
    }
    a->code[a->len++] = b;
}

static void le32(ax_x86 *a, uint32_t v) {
    for (int i = 0; i < 4; i++) byte(a, (uint8_t)(v >> (8 * i)));
}

int ax_x86_label(ax_x86 *a) {
    if (!grow((void **)&a->label_at, &a->label_cap, a->nlabels + 1, sizeof *a->label_at)) {
        a->oom = true;
        return 0;
    }
    a->label_at[a->nlabels] = -1;
    return a->nlabels++;
}

void ax_x86_bind(ax_x86 *a, int label) {
    if (!a->oom) a->label_at[label] = (int32_t)a->len;
}

static void rel32_to(ax_x86 *a, int label) {
    if (a->oom) return;
    if (!grow((void **)&a->fixups, &a->fixup_cap, a->nfixups + 1, sizeof *a->fixups)) {
        a->oom = true;
        return;
    }
    a->fixups[a->nfixups++] = (ax_x86_fixup){a->len, label};
    le32(a, 0);
}

bool ax_x86_finish(ax_x86 *a) {
    if (a->oom) return false;
    for (int i = 0; i < a->nfixups; i++) {
        int32_t target = a->label_at[a->fixups[i].label];
        if (target < 0) return false;
        int32_t rel = target - (int32_t)(a->fixups[i].at + 4);
        memcpy(a->code + a->fixups[i].at, &rel, 4);
    }
    return true;
}

/* ---- ModRM, SIB and displacement ---- */

/* The ModRM byte (and SIB, displacement) for register field `reg` and operand [m]. */
static void modrm_mem(ax_x86 *a, int reg, ax_x86_mem m) {
    int base = m.base & 7, r = (reg & 7) << 3;
    bool sib = m.index >= 0 || base == AX_X86_RSP;
    int mod = m.disp == 0 && base != AX_X86_RBP ? 0 : m.disp >= -128 && m.disp <= 127 ? 1 : 2;
    byte(a, (uint8_t)(mod << 6 | r | (sib ? 4 : base)));
    if (sib) {
        int scale = m.scale == 8 ? 3 : m.scale == 4 ? 2 : m.scale == 2 ? 1 : 0;
        int index = m.index >= 0 ? m.index & 7 : 4;
        byte(a, (uint8_t)(scale << 6 | index << 3 | base));
    }
    if (mod == 1) byte(a, (uint8_t)(int8_t)m.disp);
    if (mod == 2) le32(a, (uint32_t)m.disp);
}

static void modrm_reg(ax_x86 *a, int reg, int rm) {
    byte(a, (uint8_t)(0xc0 | (reg & 7) << 3 | (rm & 7)));
}

/* REX.W with the high bits of reg, index and base (or rm register). */
static void rex_w(ax_x86 *a, int reg, int index, int base) {
    byte(a, (uint8_t)(0x48 | (reg >= 8) << 2 | (index >= 8) << 1 | (base >= 8)));
}

static void gpr_mem(ax_x86 *a, uint8_t opcode, int reg, ax_x86_mem m) {
    rex_w(a, reg, m.index, m.base);
    byte(a, opcode);
    modrm_mem(a, reg, m);
}

static void gpr_rr(ax_x86 *a, uint8_t opcode, int reg, int rm) {
    rex_w(a, reg, -1, rm);
    byte(a, opcode);
    modrm_reg(a, reg, rm);
}

/* ---- general registers ---- */

void ax_x86_mov_rr(ax_x86 *a, int dst, int src) {
    gpr_rr(a, 0x8b, dst, src);
}
void ax_x86_load(ax_x86 *a, int dst, ax_x86_mem m) {
    gpr_mem(a, 0x8b, dst, m);
}
void ax_x86_store(ax_x86 *a, ax_x86_mem m, int src) {
    gpr_mem(a, 0x89, src, m);
}
void ax_x86_store_imm(ax_x86 *a, ax_x86_mem m, int32_t v) {
    gpr_mem(a, 0xc7, 0, m);
    le32(a, (uint32_t)v);
}
void ax_x86_lea(ax_x86 *a, int dst, ax_x86_mem m) {
    gpr_mem(a, 0x8d, dst, m);
}
void ax_x86_add_rr(ax_x86 *a, int dst, int src) {
    gpr_rr(a, 0x03, dst, src);
}
void ax_x86_sub_rr(ax_x86 *a, int dst, int src) {
    gpr_rr(a, 0x2b, dst, src);
}
void ax_x86_imul_rr(ax_x86 *a, int dst, int src) {
    rex_w(a, dst, -1, src);
    byte(a, 0x0f);
    byte(a, 0xaf);
    modrm_reg(a, dst, src);
}
void ax_x86_cmp_rr(ax_x86 *a, int x, int y) {
    gpr_rr(a, 0x3b, x, y);
}
void ax_x86_cmp_mem(ax_x86 *a, int x, ax_x86_mem m) {
    gpr_mem(a, 0x3b, x, m);
}

void ax_x86_mov_imm(ax_x86 *a, int dst, int64_t v) {
    if (v >= INT32_MIN && v <= INT32_MAX) { /* mov r/m64, imm32 (sign-extended) */
        rex_w(a, 0, -1, dst);
        byte(a, 0xc7);
        modrm_reg(a, 0, dst);
        le32(a, (uint32_t)v);
        return;
    }
    rex_w(a, 0, -1, dst);
    byte(a, (uint8_t)(0xb8 + (dst & 7)));
    le32(a, (uint32_t)v);
    le32(a, (uint32_t)((uint64_t)v >> 32));
}

/* Group 1 (81 /digit id): add 0, or 1, and 4, sub 5, cmp 7. */
static void group1_imm(ax_x86 *a, int digit, int r, int32_t v) {
    rex_w(a, 0, -1, r);
    byte(a, 0x81);
    modrm_reg(a, digit, r);
    le32(a, (uint32_t)v);
}
void ax_x86_add_imm(ax_x86 *a, int dst, int32_t v) {
    group1_imm(a, 0, dst, v);
}
void ax_x86_sub_imm(ax_x86 *a, int dst, int32_t v) {
    group1_imm(a, 5, dst, v);
}
void ax_x86_and_imm(ax_x86 *a, int dst, int32_t v) {
    group1_imm(a, 4, dst, v);
}
void ax_x86_cmp_imm(ax_x86 *a, int x, int32_t v) {
    group1_imm(a, 7, x, v);
}
void ax_x86_add_mem_imm(ax_x86 *a, ax_x86_mem m, int32_t v) {
    gpr_mem(a, 0x81, 0, m);
    le32(a, (uint32_t)v);
}

void ax_x86_movzx_byte(ax_x86 *a, int dst, ax_x86_mem m) {
    if (dst >= 8 || m.base >= 8 || m.index >= 8)
        byte(a, (uint8_t)(0x40 | (dst >= 8) << 2 | (m.index >= 8) << 1 | (m.base >= 8)));
    byte(a, 0x0f);
    byte(a, 0xb6);
    modrm_mem(a, dst, m);
}

void ax_x86_neg32(ax_x86 *a, int r) {
    if (r >= 8) byte(a, 0x41);
    byte(a, 0xf7);
    modrm_reg(a, 3, r);
}

void ax_x86_push(ax_x86 *a, int r) {
    if (r >= 8) byte(a, 0x41);
    byte(a, (uint8_t)(0x50 + (r & 7)));
}
void ax_x86_pop(ax_x86 *a, int r) {
    if (r >= 8) byte(a, 0x41);
    byte(a, (uint8_t)(0x58 + (r & 7)));
}

void ax_x86_call(ax_x86 *a, const void *fn) {
    ax_x86_mov_imm(a, AX_X86_RAX, (int64_t)(uintptr_t)fn);
    byte(a, 0xff); /* call rax */
    byte(a, 0xd0);
}

void ax_x86_ret(ax_x86 *a) {
    byte(a, 0xc3);
}

void ax_x86_jmp(ax_x86 *a, int label) {
    byte(a, 0xe9);
    rel32_to(a, label);
}

void ax_x86_jcc(ax_x86 *a, ax_x86_cond c, int label) {
    byte(a, 0x0f);
    byte(a, (uint8_t)(0x80 + c));
    rel32_to(a, label);
}

/* ---- VEX ---- */

/* The three-byte VEX prefix and opcode; vvvv = src1 (-1: none), rm_x/rm_b the high bits of
 * the rm operand's index and base (or register). */
static void vex(ax_x86 *a, ax_x86_vop op, int l, int reg, int src1, int rm_x, int rm_b) {
    byte(a, 0xc4);
    byte(a, (uint8_t)((reg < 8) << 7 | (rm_x < 8) << 6 | (rm_b < 8) << 5 | op.map));
    int vvvv = src1 < 0 ? 0 : src1;
    byte(a, (uint8_t)(op.w << 7 | (~vvvv & 15) << 3 | l << 2 | op.pp));
    byte(a, op.opcode);
}

void ax_x86_vrr(ax_x86 *a, ax_x86_vop op, int l, int dst, int src1, int src2) {
    vex(a, op, l, dst, src1, 0, src2);
    modrm_reg(a, dst, src2);
}

void ax_x86_vrm(ax_x86 *a, ax_x86_vop op, int l, int reg, int src1, ax_x86_mem m) {
    vex(a, op, l, reg, src1, m.index < 0 ? 0 : m.index, m.base);
    modrm_mem(a, reg, m);
}

void ax_x86_imm8(ax_x86 *a, uint8_t v) {
    byte(a, v);
}

void ax_x86_vzeroupper(ax_x86 *a) {
    byte(a, 0xc5);
    byte(a, 0xf8);
    byte(a, 0x77);
}

void ax_x86_vmovd_from(ax_x86 *a, int x, int r) {
    ax_x86_vrr(a, (ax_x86_vop){1, 1, 0, 0x6e}, 0, x, -1, r);
}

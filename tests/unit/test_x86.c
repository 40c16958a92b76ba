/* The x86-64 assembler of the quick tier (compiler/x86.h): each instruction form the code
 * generator emits, with the registers and addressing modes whose encodings have special cases
 * (r8-r15 and ymm8-ymm15 in every field, rsp and r12 bases that need a SIB byte, rbp and r13
 * bases that need a displacement, 8- and 32-bit displacements, index scales, VSIB), is
 * disassembled by objdump and must read as the instruction meant. A second test runs a small
 * function built with it. Skipped where objdump is missing (binutils, which jit needs anyway). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../../compiler/x86.h"

#define R(name) AX_X86_##name

typedef struct expect {
    const char *text; /* objdump's Intel syntax, spaces collapsed */
} expect;

/* Emits the instructions; `want` gets what each must disassemble to, in order. */
static int emit_all(ax_x86 *a, const char **want) {
    int n = 0;
#define E(text, ...) (__VA_ARGS__, want[n++] = (text))
    E("mov rax,rbx", ax_x86_mov_rr(a, R(RAX), R(RBX)));
    E("mov r12,r15", ax_x86_mov_rr(a, R(R12), R(R15)));
    E("mov rax,QWORD PTR [rsp+0x10]", ax_x86_load(a, R(RAX), ax_x86_at(R(RSP), 16)));
    E("mov r13,QWORD PTR [r12]", ax_x86_load(a, R(R13), ax_x86_at(R(R12), 0)));
    E("mov rcx,QWORD PTR [r13+0x0]", ax_x86_load(a, R(RCX), ax_x86_at(R(R13), 0)));
    E("mov rdx,QWORD PTR [rbp+0x200]", ax_x86_load(a, R(RDX), ax_x86_at(R(RBP), 0x200)));
    E("mov QWORD PTR [rsp+0x1000],r9", ax_x86_store(a, ax_x86_at(R(RSP), 0x1000), R(R9)));
    E("mov QWORD PTR [rsp+0x8],0xffffffffffffffff", ax_x86_store_imm(a, ax_x86_at(R(RSP), 8), -1));
    E("mov rax,0x12345678", ax_x86_mov_imm(a, R(RAX), 0x12345678));
    E("mov r11,0xffffffffffffffff", ax_x86_mov_imm(a, R(R11), -1));
    E("movabs r10,0x123456789a", ax_x86_mov_imm(a, R(R10), 0x123456789a));
    E("lea rax,[r12+0x8]", ax_x86_lea(a, R(RAX), ax_x86_at(R(R12), 8)));
    E("lea rsi,[rsp+r12*8+0x280]", ax_x86_lea(a, R(RSI), ax_x86_idx(R(RSP), R(R12), 8, 0x280)));
    E("lea r8,[rbx+rax*4-0x10]", ax_x86_lea(a, R(R8), ax_x86_idx(R(RBX), R(RAX), 4, -16)));
    E("add rax,rcx", ax_x86_add_rr(a, R(RAX), R(RCX)));
    E("add r14,0xfffffffffffffffb", ax_x86_add_imm(a, R(R14), -5));
    E("sub rcx,r12", ax_x86_sub_rr(a, R(RCX), R(R12)));
    E("sub rsp,0x1000", ax_x86_sub_imm(a, R(RSP), 4096));
    E("and rsp,0xffffffffffffffc0", ax_x86_and_imm(a, R(RSP), -64));
    E("imul rcx,rdx", ax_x86_imul_rr(a, R(RCX), R(RDX)));
    E("imul r9,r12", ax_x86_imul_rr(a, R(R9), R(R12)));
    E("cmp rax,r13", ax_x86_cmp_rr(a, R(RAX), R(R13)));
    E("cmp r12,0x7fffffff", ax_x86_cmp_imm(a, R(R12), 0x7fffffff));
    E("cmp rax,QWORD PTR [rsp+0x8]", ax_x86_cmp_mem(a, R(RAX), ax_x86_at(R(RSP), 8)));
    E("add QWORD PTR [rsp+0x18],0x1", ax_x86_add_mem_imm(a, ax_x86_at(R(RSP), 0x18), 1));
    E("movzx eax,BYTE PTR [rax]", ax_x86_movzx_byte(a, R(RAX), ax_x86_at(R(RAX), 0)));
    E("movzx r9d,BYTE PTR [r13+r12*1+0x3]",
      ax_x86_movzx_byte(a, R(R9), ax_x86_idx(R(R13), R(R12), 1, 3)));
    E("neg eax", ax_x86_neg32(a, R(RAX)));
    E("push rbx", ax_x86_push(a, R(RBX)));
    E("push r15", ax_x86_push(a, R(R15)));
    E("pop r12", ax_x86_pop(a, R(R12)));
    E("vmovups ymm0,YMMWORD PTR [rax+r12*4]",
      ax_x86_vrm(a, AX_X86_VMOVUPS_LOAD, 1, 0, -1, ax_x86_idx(R(RAX), R(R12), 4, 0)));
    E("vmovups YMMWORD PTR [rsp+0x1a0],ymm11",
      ax_x86_vrm(a, AX_X86_VMOVUPS_STORE, 1, 11, -1, ax_x86_at(R(RSP), 0x1a0)));
    E("vmovups ymm9,YMMWORD PTR [r13+0x0]",
      ax_x86_vrm(a, AX_X86_VMOVUPS_LOAD, 1, 9, -1, ax_x86_at(R(R13), 0)));
    E("vmovups ymm2,YMMWORD PTR [rsp+r12*8+0x280]",
      ax_x86_vrm(a, AX_X86_VMOVUPS_LOAD, 1, 2, -1, ax_x86_idx(R(RSP), R(R12), 8, 0x280)));
    E("vmovups ymm0,YMMWORD PTR [rsp+r15*1+0x300]",
      ax_x86_vrm(a, AX_X86_VMOVUPS_LOAD, 1, 0, -1, ax_x86_idx(R(RSP), R(R15), 1, 0x300)));
    E("vaddps ymm0,ymm1,ymm2", ax_x86_vrr(a, AX_X86_VADDPS, 1, 0, 1, 2));
    E("vaddps ymm12,ymm13,ymm14", ax_x86_vrr(a, AX_X86_VADDPS, 1, 12, 13, 14));
    E("vaddps ymm3,ymm9,ymm4", ax_x86_vrr(a, AX_X86_VADDPS, 1, 3, 9, 4));
    E("vmovaps ymm6,ymm0", ax_x86_vrr(a, AX_X86_VMOVAPS, 1, 6, -1, 0));
    E("vmovaps ymm0,ymm15", ax_x86_vrr(a, AX_X86_VMOVAPS, 1, 0, -1, 15));
    E("vcmpgeps ymm3,ymm1,ymm8",
      (ax_x86_vrr(a, AX_X86_VCMPPS, 1, 3, 1, 8), ax_x86_imm8(a, AX_X86_CMP_GE_OS)));
    E("vblendvps ymm0,ymm2,ymm1,ymm10",
      (ax_x86_vrr(a, AX_X86_VBLENDVPS, 1, 0, 2, 1), ax_x86_imm8(a, 10 << 4)));
    E("vpcmpgtd ymm0,ymm0,ymm1", ax_x86_vrr(a, AX_X86_VPCMPGTD, 1, 0, 0, 1));
    E("vpmovzxbd ymm0,QWORD PTR [rax+r12*1]",
      ax_x86_vrm(a, AX_X86_VPMOVZXBD, 1, 0, -1, ax_x86_idx(R(RAX), R(R12), 1, 0)));
    E("vbroadcastss ymm0,DWORD PTR [rax]",
      ax_x86_vrm(a, AX_X86_VBROADCASTSS, 1, 0, -1, ax_x86_at(R(RAX), 0)));
    E("vpbroadcastd ymm0,xmm0", ax_x86_vrr(a, AX_X86_VPBROADCASTD, 1, 0, -1, 0));
    E("vcvtps2pd ymm1,xmm0", ax_x86_vrr(a, AX_X86_VCVTPS2PD, 1, 1, -1, 0));
    E("vextractf128 xmm1,ymm9,0x1",
      (ax_x86_vrr(a, AX_X86_VEXTRACTF128, 1, 9, -1, 1), ax_x86_imm8(a, 1)));
    E("vpackusdw xmm0,xmm0,xmm1", ax_x86_vrr(a, AX_X86_VPACKUSDW, 0, 0, 0, 1));
    E("vpackuswb xmm0,xmm0,xmm0", ax_x86_vrr(a, AX_X86_VPACKUSWB, 0, 0, 0, 0));
    E("vmovq QWORD PTR [rax+r12*1],xmm0",
      ax_x86_vrm(a, AX_X86_VMOVQ_STORE, 0, 0, -1, ax_x86_idx(R(RAX), R(R12), 1, 0)));
    E("vpsrld ymm1,ymm0,0x10",
      (ax_x86_vrr(a, AX_X86_VPSHIFTD_IMM, 1, 2, 1, 0), ax_x86_imm8(a, 16)));
    E("vsqrtps ymm0,ymm0", ax_x86_vrr(a, AX_X86_VSQRTPS, 1, 0, -1, 0));
    E("vroundps ymm0,ymm0,0x9", (ax_x86_vrr(a, AX_X86_VROUNDPS, 1, 0, -1, 0), ax_x86_imm8(a, 9)));
    E("vcvtdq2ps ymm1,ymm1", ax_x86_vrr(a, AX_X86_VCVTDQ2PS, 1, 1, -1, 1));
    E("vpabsd ymm0,ymm0", ax_x86_vrr(a, AX_X86_VPABSD, 1, 0, -1, 0));
    E("vpsllvd ymm0,ymm0,ymm1", ax_x86_vrr(a, AX_X86_VPSLLVD, 1, 0, 0, 1));
    E("vpsravd ymm0,ymm0,ymm1", ax_x86_vrr(a, AX_X86_VPSRAVD, 1, 0, 0, 1));
    E("vpsrlvd ymm0,ymm0,ymm1", ax_x86_vrr(a, AX_X86_VPSRLVD, 1, 0, 0, 1));
    E("vpmulld ymm0,ymm0,ymm1", ax_x86_vrr(a, AX_X86_VPMULLD, 1, 0, 0, 1));
    E("vpmaxud ymm0,ymm0,ymm1", ax_x86_vrr(a, AX_X86_VPMAXUD, 1, 0, 0, 1));
    E("vpminsd ymm7,ymm8,ymm9", ax_x86_vrr(a, AX_X86_VPMINSD, 1, 7, 8, 9));
    E("vgatherdps ymm0,DWORD PTR [rsi+ymm1*1],ymm2",
      ax_x86_vrm(a, AX_X86_VGATHERDPS, 1, 0, 2, ax_x86_idx(R(RSI), 1, 1, 0)));
    E("vmovd xmm0,eax", ax_x86_vmovd_from(a, 0, R(RAX)));
    E("vmovd xmm0,r9d", ax_x86_vmovd_from(a, 0, R(R9)));
    E("vaddpd ymm1,ymm2,ymm1", ax_x86_vrr(a, AX_X86_VADDPD, 1, 1, 2, 1));
    /* float64 lanes (the quick tier's 4-lane blocks) */
    E("vmovups xmm0,XMMWORD PTR [rax+r12*4]",
      ax_x86_vrm(a, AX_X86_VMOVUPS_LOAD, 0, 0, -1, ax_x86_idx(R(RAX), R(R12), 4, 0)));
    E("vmovups XMMWORD PTR [rax+r12*4],xmm0",
      ax_x86_vrm(a, AX_X86_VMOVUPS_STORE, 0, 0, -1, ax_x86_idx(R(RAX), R(R12), 4, 0)));
    E("vmovups ymm0,YMMWORD PTR [rax+r12*8]",
      ax_x86_vrm(a, AX_X86_VMOVUPS_LOAD, 1, 0, -1, ax_x86_idx(R(RAX), R(R12), 8, 0)));
    E("vmovd DWORD PTR [rax+r12*1],xmm0",
      ax_x86_vrm(a, AX_X86_VMOVD_STORE, 0, 0, -1, ax_x86_idx(R(RAX), R(R12), 1, 0)));
    E("vsubpd ymm0,ymm0,ymm1", ax_x86_vrr(a, AX_X86_VSUBPD, 1, 0, 0, 1));
    E("vmulpd ymm10,ymm11,ymm12", ax_x86_vrr(a, AX_X86_VMULPD, 1, 10, 11, 12));
    E("vdivpd ymm0,ymm0,ymm9", ax_x86_vrr(a, AX_X86_VDIVPD, 1, 0, 0, 9));
    E("vsqrtpd ymm0,ymm0", ax_x86_vrr(a, AX_X86_VSQRTPD, 1, 0, -1, 0));
    E("vroundpd ymm0,ymm0,0xa", (ax_x86_vrr(a, AX_X86_VROUNDPD, 1, 0, -1, 0), ax_x86_imm8(a, 10)));
    E("vcmpgepd ymm3,ymm1,ymm8",
      (ax_x86_vrr(a, AX_X86_VCMPPD, 1, 3, 1, 8), ax_x86_imm8(a, AX_X86_CMP_GE_OS)));
    E("vcmpunordpd ymm4,ymm0,ymm0",
      (ax_x86_vrr(a, AX_X86_VCMPPD, 1, 4, 0, 0), ax_x86_imm8(a, AX_X86_CMP_UNORD_Q)));
    E("vcvtps2pd ymm0,xmm0", ax_x86_vrr(a, AX_X86_VCVTPS2PD, 1, 0, -1, 0));
    E("vcvtpd2ps xmm0,ymm0", ax_x86_vrr(a, AX_X86_VCVTPD2PS, 1, 0, -1, 0));
    E("vcvtpd2ps xmm9,ymm12", ax_x86_vrr(a, AX_X86_VCVTPD2PS, 1, 9, -1, 12));
    E("vcvtdq2pd ymm0,xmm0", ax_x86_vrr(a, AX_X86_VCVTDQ2PD, 1, 0, -1, 0));
    E("vcvtdq2pd ymm10,xmm1", ax_x86_vrr(a, AX_X86_VCVTDQ2PD, 1, 10, -1, 1));
    E("vbroadcastsd ymm0,QWORD PTR [rax]",
      ax_x86_vrm(a, AX_X86_VBROADCASTSD, 1, 0, -1, ax_x86_at(R(RAX), 0)));
    E("vpmovzxbq ymm0,DWORD PTR [rax+r12*1]",
      ax_x86_vrm(a, AX_X86_VPMOVZXBQ, 1, 0, -1, ax_x86_idx(R(RAX), R(R12), 1, 0)));
    E("vpcmpgtq ymm0,ymm0,ymm1", ax_x86_vrr(a, AX_X86_VPCMPGTQ, 1, 0, 0, 1));
    E("vpcmpeqq ymm0,ymm0,ymm13", ax_x86_vrr(a, AX_X86_VPCMPEQQ, 1, 0, 0, 13));
    E("vgatherdpd ymm0,QWORD PTR [rsi+xmm1*1],ymm2",
      ax_x86_vrm(a, AX_X86_VGATHERDPD, 1, 0, 2, ax_x86_idx(R(RSI), 1, 1, 0)));
    E("vgatherdps xmm0,DWORD PTR [rsi+xmm1*1],xmm2",
      ax_x86_vrm(a, AX_X86_VGATHERDPS, 0, 0, 2, ax_x86_idx(R(RSI), 1, 1, 0)));
    E("vshufps xmm0,xmm0,xmm1,0x88",
      (ax_x86_vrr(a, AX_X86_VSHUFPS, 0, 0, 0, 1), ax_x86_imm8(a, 0x88)));
    /* int64 lanes */
    E("vpaddq ymm0,ymm0,ymm1", ax_x86_vrr(a, AX_X86_VPADDQ, 1, 0, 0, 1));
    E("vpsubq ymm0,ymm1,ymm0", ax_x86_vrr(a, AX_X86_VPSUBQ, 1, 0, 1, 0));
    E("vpsubq ymm8,ymm12,ymm15", ax_x86_vrr(a, AX_X86_VPSUBQ, 1, 8, 12, 15));
    E("vpsllvq ymm0,ymm0,ymm1", ax_x86_vrr(a, AX_X86_VPSLLVQ, 1, 0, 0, 1));
    E("vpsrlvq ymm0,ymm0,ymm11", ax_x86_vrr(a, AX_X86_VPSRLVQ, 1, 0, 0, 11));
    E("vpsrlq ymm0,ymm0,0x3f",
      (ax_x86_vrr(a, AX_X86_VPSHIFTQ_IMM, 1, 2, 0, 0), ax_x86_imm8(a, 63)));
    E("vpmovsxdq ymm0,xmm0", ax_x86_vrr(a, AX_X86_VPMOVSXDQ, 1, 0, -1, 0));
    E("vpmovzxdq ymm9,xmm1", ax_x86_vrr(a, AX_X86_VPMOVZXDQ, 1, 9, -1, 1));
    E("vzeroupper", ax_x86_vzeroupper(a));
    E("ret", ax_x86_ret(a));
#undef E
    return n;
}

static void collapse(char *s) { /* runs of spaces and tabs to one space, trimmed */
    char *w = s;
    bool space = true;
    for (char *r = s; *r; r++) {
        bool sp = *r == ' ' || *r == '\t' || *r == '\n';
        if (sp && space) continue;
        *w++ = sp ? ' ' : *r;
        space = sp;
    }
    if (w > s && w[-1] == ' ') w--;
    *w = 0;
}

static void test_encodings(void **state) {
    (void)state;
    if (system("objdump --version > /dev/null 2>&1") != 0) skip();
    ax_x86 a;
    ax_x86_init(&a);
    const char *want[192];
    int n = emit_all(&a, want);
    assert_true(ax_x86_finish(&a));
    char bin[] = "/tmp/ax-test-x86-XXXXXX";
    int fd = mkstemp(bin);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, a.code, a.len), (ssize_t)a.len);
    close(fd);
    char cmd[256];
    snprintf(cmd, sizeof cmd, "objdump -D -b binary -m i386:x86-64 -M intel %s", bin);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    char line[512];
    int k = 0;
    while (fgets(line, sizeof line, p)) {
        char *tab = strchr(line, '\t'), *text = tab ? strchr(tab + 1, '\t') : NULL;
        if (!text) continue; /* headers, and the continuation lines of long encodings */
        collapse(++text);
        if (k >= n) fail_msg("more instructions than emitted: '%s'", text);
        if (strcmp(text, want[k])) fail_msg("instruction %d: '%s', meant '%s'", k, text, want[k]);
        k++;
    }
    pclose(p);
    unlink(bin);
    assert_int_equal(k, n);
    ax_x86_free(&a);
}

/* A function built with the assembler: long f(long *x, long n) = sum of x[i] * 3, through a
 * loop with labels and a forward and a backward jump, callee-saved registers kept. */
static void test_runs(void **state) {
    (void)state;
#if !defined(__x86_64__)
    skip(); /* the code is x86-64's */
#endif
    ax_x86 a;
    ax_x86_init(&a);
    int top = ax_x86_label(&a), done = ax_x86_label(&a);
    ax_x86_push(&a, R(R12));
    ax_x86_mov_imm(&a, R(RAX), 0);
    ax_x86_mov_imm(&a, R(R12), 0);
    ax_x86_bind(&a, top);
    ax_x86_cmp_rr(&a, R(R12), R(RSI));
    ax_x86_jcc(&a, AX_X86_JGE, done);
    ax_x86_load(&a, R(RCX), ax_x86_idx(R(RDI), R(R12), 8, 0));
    ax_x86_mov_imm(&a, R(RDX), 3);
    ax_x86_imul_rr(&a, R(RCX), R(RDX));
    ax_x86_add_rr(&a, R(RAX), R(RCX));
    ax_x86_add_imm(&a, R(R12), 1);
    ax_x86_jmp(&a, top);
    ax_x86_bind(&a, done);
    ax_x86_pop(&a, R(R12));
    ax_x86_ret(&a);
    assert_true(ax_x86_finish(&a));
    void *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(m != MAP_FAILED);
    memcpy(m, a.code, a.len);
    assert_int_equal(mprotect(m, 4096, PROT_READ | PROT_EXEC), 0);
    long (*f)(const long *, long);
    memcpy(&f, &m, sizeof m);
    const long x[] = {1, -2, 5, 1000000007};
    assert_int_equal(f(x, 4), 3 * (1 - 2 + 5 + 1000000007L));
    assert_int_equal(f(x, 0), 0);
    munmap(m, 4096);
    ax_x86_free(&a);
}

/* A label never bound is an error, not a jump anywhere. */
static void test_unbound_label(void **state) {
    (void)state;
    ax_x86 a;
    ax_x86_init(&a);
    ax_x86_jmp(&a, ax_x86_label(&a));
    assert_false(ax_x86_finish(&a));
    ax_x86_free(&a);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_encodings),
        cmocka_unit_test(test_runs),
        cmocka_unit_test(test_unbound_label),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/* The quick tier: LOOP steps of a fusion plan rendered straight to x86-64 machine code
 * (compiler/x86.h), in microseconds, for jit's first calls while GCC compiles the same code
 * in the background (compiler/codegen.h: the code that replaces it once ready).
 *
 * A second renderer of the same kernel IR (ax_code, compiler/fuse.h): each LOOP step becomes
 * a function with the signature of ax_step_fn, computing the same bits as the eager kernels
 * and GCC's code (the same IEEE operations per element, reductions in the order of
 * runtime/reduce.h). It keeps every value in the frame and runs 8 lanes at a time with AVX2;
 * it is several times cheaper to build than GCC's code and a little slower to run.
 *
 * It renders f32, int32, uint32 and bool elementwise operations, loads with any strides,
 * and f32 sums, products, maxima and minima; a program with any other LOOP step (f64, int64,
 * libm functions other than ax's own vector math, ...) gets no quick code and runs on the
 * eager kernels until GCC's code is ready, as before. */
#ifndef AX_QUICKGEN_H
#define AX_QUICKGEN_H

#include <stddef.h>

#include "codegen.h"

typedef struct ax_quick_code ax_quick_code;

/* Whether this CPU runs the quick tier's code (AVX2). */
bool ax_quickgen_supported(void);
/* The functions of every LOOP step of `code`; NULL with the reason in `why` when a step holds
 * something the quick tier does not render, or memory (or executable memory) ran out. */
ax_quick_code *ax_quickgen_build(const ax_code *code, char *why, size_t whylen);
/* Step s's function (NULL for steps that are not LOOP steps). */
ax_step_fn ax_quickgen_fn(const ax_quick_code *q, int s);
/* Bytes of machine code, for logs. */
size_t ax_quickgen_size(const ax_quick_code *q);
void ax_quickgen_free(ax_quick_code *q);

#endif

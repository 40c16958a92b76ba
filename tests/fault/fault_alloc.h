/* Allocation hook for tests: fault injection (the N-th allocation fails, as in SQLite's
 * malloc tests) and allocation limits (the fuzzer bounds the memory an input may take).
 *
 * Linked into test binaries with
 *   -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=strdup,--wrap=strndup,
 *   --wrap=aligned_alloc
 * so that every allocation made by ax's own objects (runtime/, compiler/, lang/, stdlib/)
 * goes through __wrap_malloc & co. here; shared libraries (libc's stdio, readline, libgccjit,
 * OpenBLAS) keep the real allocator. Under ASan the real allocator is ASan's, so leaks and
 * misuse are still reported.
 *
 * Fault injection is set from the environment when the process starts:
 *   AX_FAULT_AT=N       the N-th allocation (counting from 1) returns NULL with errno ENOMEM
 *   AX_FAULT_PERSIST=1  ... and so does every later one
 *   AX_FAULT_LOG=FILE   appends "N OFFSET..." for the failed allocation, OFFSET being the
 *                       caller's return address minus the executable's load address (for
 *                       `addr2line -e BINARY OFFSET`), then those of a few of its callers;
 *                       when no allocation failed, nothing is written, which tells the
 *                       runner that the program completed before N.
 *   AX_FAULT_COUNT=FILE at exit, writes the number of allocations the run made
 *   AX_FAULT_TRACE=1    prints the stack of the failed allocation on stderr (debugging) */
#ifndef AX_FAULT_ALLOC_H
#define AX_FAULT_ALLOC_H

#include <stddef.h>

/* Fails allocations bigger than `max_one` bytes, and those that would bring the bytes
 * requested since this call above `max_total` (0: no limit). The fuzzer arms it around each
 * input, so that an input asking for 10**12 elements gets a MemoryError, not the machine's
 * memory. */
void ax_fault_limit_arm(size_t max_one, size_t max_total);
void ax_fault_limit_disarm(void);

#endif

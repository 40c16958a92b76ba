/* A compile of lowered code (compiler/fuse.h's ax_code) to a shared object, in a child
 * process: GCC cannot be stopped in the middle of a compile, but a child can be killed (Ctrl-C
 * abandons a long compile at once), and a child runs while ax goes on (jit's first tier runs
 * the program on the eager kernels meanwhile: compiler/jit.c). The parent never waits unless
 * asked: ax_jit_job_poll with a timeout of 0 only looks.
 *
 * The child writes the shared object into the process's scratch directory (jit_cache.h) under
 * a name of its own, with $TMPDIR pointing there (so libgccjit's and the driver's temporary
 * files go there too); the parent's environment is never changed. The child dies with its
 * parent (PR_SET_PDEATHSIG), so a compile never outlives ax. */
#ifndef AX_JIT_JOB_H
#define AX_JIT_JOB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fuse.h"
#include "gccjit.h"

typedef struct ax_jit_job ax_jit_job;

typedef enum { AX_JOB_RUNNING, AX_JOB_DONE, AX_JOB_FAILED } ax_jit_job_state;

/* Starts compiling `code`. When no child process can be had (fork fails) it compiles here,
 * and the job is finished when it returns. `api` NULL: the child opens libgccjit itself (a
 * process that never compiles in the foreground need not load the compiler at all; the job
 * fails when there is no child). NULL (reason in why) when it cannot even start: no scratch
 * directory, out of memory. */
ax_jit_job *ax_jit_job_start(const ax_gccjit *api, const ax_code *code, uint64_t key, char *why,
                             size_t whylen);
/* Lowers the priority of the job's child process (and of the assembler and linker it has yet
 * to run) by `nice` steps: for a compile whose program already runs on quick code, so that on
 * a busy machine the program's own steps go first. No effect on a job compiled here. */
void ax_jit_job_renice(ax_jit_job *j, int nice);
/* Looks at the job, waiting up to timeout_ms (0: not at all) for it to end. Once it is not
 * RUNNING, it stays so. */
ax_jit_job_state ax_jit_job_poll(ax_jit_job *j, int timeout_ms);
/* Waits up to timeout_ms for any of the n jobs to end (for a caller waiting on several). */
void ax_jit_job_wait_any(ax_jit_job *const *jobs, int n, int timeout_ms);
/* DONE: the shared object (removed by ax_jit_job_free); FAILED: why (a sentence). */
const char *ax_jit_job_so(const ax_jit_job *j);
const char *ax_jit_job_why(const ax_jit_job *j);
/* The CPU time (user + system) the job's child process and the assembler and linker it ran
 * took, in milliseconds, once it ended; 0 when it compiled in this process. */
double ax_jit_job_cpu_ms(const ax_jit_job *j);
/* Kills the child if it still runs, reaps it, removes the shared object. NULL is fine. */
void ax_jit_job_free(ax_jit_job *j);

/* A libgccjit context holding the code's functions with jit's options (NULL when libgccjit
 * fails): what a job compiles, and what `:c` dumps. A loop step that makes the same function
 * as an earlier one is not generated again: */
gcc_jit_context *ax_jit_new_context(const ax_gccjit *api, const ax_code *code, char *why,
                                    size_t whylen);
/* the step whose function ("s<n>") step s calls: the first with the same code (s itself when
 * there is none). */
int ax_jit_code_twin(const ax_code *code, int s);

#endif

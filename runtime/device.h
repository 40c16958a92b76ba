/* CPU devices: worker threads, each with its own runtime context, that run the slices of a pmap
 * in parallel, and the rendezvous where their collectives meet (docs/parallel.md).
 *
 * How devices share memory without locks (the rule every run follows):
 *  - a context is used by one thread at a time. A device's context belongs to its thread while
 *    a run is under way and to the thread that started the run otherwise; the hand-over goes
 *    through the run's mutex, so each side sees what the other did;
 *  - the caller makes each device's inputs (views of its arrays) with the device's context
 *    before the run, and copies the outputs out and drops them after it: every header and
 *    buffer returns to the cache of the context that made it, on the thread that owns it;
 *  - what all devices read during a run (the compiled body, its constants and literals) is
 *    made before the run and not changed by it; the reference counts they take and drop on it
 *    are atomic (runtime/array.h), and none of them drops the last one.
 *
 * Across processes (mpirun), jax.distributed.initialize() joins them (runtime/mpi.h): each
 * process owns its devices, and a collective gathers every device of every process. */
#ifndef AX_DEVICE_H
#define AX_DEVICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "array.h"

struct ax_axis_frame;
struct ax_devices;
struct ax_mpi;
struct interned;
typedef struct ax_device_run ax_device_run;

/* What a context knows about parallel work (cx->parallel, made on first use). */
typedef struct ax_parallel {
    struct ax_devices *devices; /* this process's devices (the main context only) */
    struct ax_mpi *mpi;         /* the processes joined by jax.distributed.initialize() */
    int process_index, process_count;
    bool mpi_finished;          /* MPI_Finalize was called: MPI cannot start again */
    ax_device_run *run;         /* on a device's context during a run: the run */
    int run_index;              /* and its position in it */
    struct ax_axis_frame *axes; /* the named axes in scope, innermost first
                                   (compiler/collectives.h) */
    const char *batching_axis;  /* the name of the vmap whose batching rule is running
                                   (compiler/vmap.c), or NULL */
    struct interned *interned;  /* ax_intern's copies */
} ax_parallel;

/* cx's parallel state, made on first use (NULL with a MemoryError). */
ax_parallel *ax_parallel_of(ax_ctx *cx);
/* Stops the devices' threads and frees their contexts; closes MPI (MPI_Finalize). */
void ax_parallel_free(ax_parallel *p);

/* A copy of the n bytes at `data` that lives as long as cx: equal bytes give the same pointer,
 * so interned names and parameters compare by address. NULL with a MemoryError. */
const void *ax_intern(ax_ctx *cx, const void *data, size_t n);
const char *ax_intern_str(ax_ctx *cx, const char *s);

/* ---- devices and processes ---- */

/* The devices of this process: --devices N, else AX_DEVICES=N, else one per core (shared
 * among the processes mpirun starts on this host). Fixed once the devices have started.
 * -1 with a ValueError when AX_DEVICES is not a positive number. */
int ax_local_device_count(ax_ctx *cx);
/* jax.config.update("jax_num_cpu_devices", n): this process's device count from now on, as
 * --devices n. 0, or -1 with a ValueError when n is not 1 to 1024, or when the devices have
 * already started with another count (JAX also wants it set before the first use). */
int ax_set_local_device_count(ax_ctx *cx, int64_t n);
/* This process's position among those joined by jax.distributed.initialize() (0 without). */
int ax_process_index(ax_ctx *cx);
int ax_process_count(ax_ctx *cx);

/* jax.distributed.initialize(): under mpirun, loads OpenMPI and joins the processes; every
 * process must have the same number of devices. Outside mpirun, and when already done,
 * nothing. 0, or -1 with an error. */
int ax_distributed_initialize(ax_ctx *cx);
/* Checks that every process has the same `value` (what a collective across processes needs,
 * such as the number of slices of a pmap); -1 with a ValueError naming `what` otherwise. */
int ax_distributed_same(ax_ctx *cx, int64_t value, const char *what);
/* The end of the program (lang/main.c): MPI_Finalize, or MPI_Abort after a failure, which
 * stops the other processes rather than leaving them waiting for this one. */
void ax_distributed_finish(ax_ctx *cx, bool failed);

/* A device's context (starting the devices on first use), for making its inputs before a run
 * and dropping its outputs after one. NULL with an error. */
ax_ctx *ax_device_context(ax_ctx *cx, int device);

/* Runs fn(device context, i, arg) for i in [0, n) on the local devices devs[i] (NULL: devices
 * 0..n-1) at once, as one group of n devices per process for collectives, and returns when
 * every one has finished. An error on a device is recorded in cx (the first device's that
 * failed on its own, rather than one that stopped because another failed). 0, or -1. */
typedef int (*ax_device_fn)(ax_ctx *dcx, int i, void *arg);
int ax_devices_run(ax_ctx *cx, int n, const int *devs, ax_device_fn fn, void *arg);

/* ---- collectives, on a device's context during a run ---- */

/* Whether dcx is a device's context running a slice of a pmap. */
bool ax_device_running(const ax_ctx *dcx);
/* The run's devices across every process, and this device's position among them (process
 * index * devices per process + its position in this process's group). */
int64_t ax_device_group_size(const ax_ctx *dcx);
int64_t ax_device_group_index(const ax_ctx *dcx);
/* Every device's contribution to one collective: x (contiguous, held until the run is past
 * the next collective, so that slower devices can still read it) goes in; *parts gets the
 * data of every device of the group in group order (ax_device_group_size of them), valid until
 * this device's next exchange. Every device of the group must call it, with an array of the
 * same size. 0, or -1 with an error (another device failed, or the devices do not meet). */
int ax_device_exchange(ax_ctx *dcx, ax_array *x, const void *const **parts);

#endif

/* OpenMPI, opened with dlopen when a program run by mpirun calls jax.distributed.initialize(),
 * so that ax builds and runs without MPI installed (as OpenBLAS and libgccjit are loaded).
 *
 * ax uses MPI for one thing: the collectives of a pmap whose devices are spread over processes
 * (runtime/device.c). Every process gathers every device's contribution (MPI_Allgather) and
 * computes the result the same way, in global device order, so the answer does not depend on
 * how the devices are split between processes. MPI calls come from one thread at a time (the
 * device that leads this process's part of a collective): MPI_THREAD_SERIALIZED. */
#ifndef AX_MPI_H
#define AX_MPI_H

#include <stdbool.h>
#include <stddef.h>

#include "context.h"

typedef struct ax_mpi ax_mpi;

/* Whether this process was started by mpirun (OpenMPI's environment is set). */
bool ax_mpi_launched(void);
/* The number of processes mpirun started on this host (1 outside mpirun). */
int ax_mpi_local_size(void);

/* Loads libmpi and joins the processes (MPI_Init_thread). NULL with an error (an ImportError
 * naming the library when it is not installed). */
ax_mpi *ax_mpi_open(ax_ctx *cx);
int ax_mpi_rank(const ax_mpi *m);
int ax_mpi_size(const ax_mpi *m);
/* Every process's `nbytes` bytes at `mine`, in rank order, into `all` (size * nbytes bytes).
 * 0, or -1 with an error. */
int ax_mpi_allgather(ax_ctx *cx, ax_mpi *m, const void *mine, size_t nbytes, void *all);
/* The end of the program: MPI_Finalize after a success; after a failure MPI_Abort, which stops
 * the other processes too (they may be waiting in a collective for this one). Frees m. */
void ax_mpi_close(ax_mpi *m, bool failed);

#endif

/* OpenMPI through dlopen (see mpi.h). The handles MPI_COMM_WORLD and MPI_BYTE are, in OpenMPI's
 * ABI, the addresses of the library's globals ompi_mpi_comm_world and ompi_mpi_byte: no MPI
 * header is needed to build ax. */
#include "mpi.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MPI_OK = 0, THREAD_SERIALIZED = 2 };

typedef void *mpi_handle; /* MPI_Comm, MPI_Datatype: pointers in OpenMPI */

struct ax_mpi {
    void *lib;
    mpi_handle world, byte;
    int rank, size;
    int (*init_thread)(int *argc, char ***argv, int required, int *provided);
    int (*initialized)(int *flag);
    int (*finalized)(int *flag);
    int (*finalize)(void);
    int (*abort)(mpi_handle comm, int code);
    int (*comm_rank)(mpi_handle comm, int *rank);
    int (*comm_size)(mpi_handle comm, int *size);
    int (*allgather)(const void *send, int scount, mpi_handle stype, void *recv, int rcount,
                     mpi_handle rtype, mpi_handle comm);
};

static const char *const sonames[] = {"libmpi.so.40", "libmpi.so"};

bool ax_mpi_launched(void) {
    return getenv("OMPI_COMM_WORLD_SIZE") != NULL;
}

int ax_mpi_local_size(void) {
    const char *s = getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
    int n = s ? atoi(s) : 1;
    return n > 0 ? n : 1;
}

static bool lookup(void *lib, const char *name, void *fn_ptr) {
    void *p = dlsym(lib, name);
    if (p) memcpy(fn_ptr, &p, sizeof p);
    return p != NULL;
}

/* Finds every function and handle; the name of the first one missing, or NULL. */
static const char *bind_symbols(ax_mpi *m) {
    static const char *const names[] = {"MPI_Init_thread", "MPI_Initialized", "MPI_Finalized",
                                        "MPI_Finalize",    "MPI_Abort",       "MPI_Comm_rank",
                                        "MPI_Comm_size",   "MPI_Allgather"};
    void *slots[] = {&m->init_thread, &m->initialized, &m->finalized, &m->finalize,
                     &m->abort,       &m->comm_rank,   &m->comm_size, &m->allgather};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (!lookup(m->lib, names[i], slots[i])) return names[i];
    m->world = dlsym(m->lib, "ompi_mpi_comm_world");
    m->byte = dlsym(m->lib, "ompi_mpi_byte");
    if (!m->world || !m->byte) return "ompi_mpi_comm_world (is this OpenMPI?)";
    return NULL;
}

static void *open_library(char *why, size_t n) {
    for (size_t i = 0; i < sizeof sonames / sizeof *sonames; i++) {
        /* RTLD_GLOBAL: OpenMPI's plugins, which it dlopens itself, look for its symbols */
        void *lib = dlopen(sonames[i], RTLD_NOW | RTLD_GLOBAL);
        if (lib) return lib;
        const char *e = dlerror();
        if (i == 0) snprintf(why, n, "%s", e ? e : "not found");
    }
    return NULL;
}

ax_mpi *ax_mpi_open(ax_ctx *cx) {
    char why[512] = "";
    ax_mpi *m = calloc(1, sizeof *m);
    if (!m) return ax_error_oom(cx);
    if (!(m->lib = open_library(why, sizeof why))) {
        free(m);
        return ax_error(cx, AX_ERR_IMPORT,
                        "jax.distributed.initialize: cannot load OpenMPI (%s): %s; install "
                        "openmpi-bin and libopenmpi-dev (make deps)",
                        sonames[0], why);
    }
    const char *missing = bind_symbols(m);
    int provided = 0, done = 0, rc = MPI_OK;
    if (!missing) {
        m->initialized(&done);
        if (!done)
            rc = m->init_thread(NULL, NULL, THREAD_SERIALIZED, &provided);
        else
            provided = THREAD_SERIALIZED;
    }
    if (!missing && rc == MPI_OK) {
        m->comm_rank(m->world, &m->rank);
        m->comm_size(m->world, &m->size);
    }
    if (missing || rc != MPI_OK || provided < THREAD_SERIALIZED) {
        if (missing)
            ax_error(cx, AX_ERR_IMPORT, "jax.distributed.initialize: %s has no %s", sonames[0],
                     missing);
        else if (rc != MPI_OK)
            ax_error(cx, AX_ERR_RUNTIME, "jax.distributed.initialize: MPI_Init_thread failed (%d)",
                     rc);
        else
            ax_error(cx, AX_ERR_RUNTIME,
                     "jax.distributed.initialize: this MPI does not let threads take turns "
                     "(MPI_THREAD_SERIALIZED); it provides level %d",
                     provided);
        dlclose(m->lib);
        free(m);
        return NULL;
    }
    return m;
}

int ax_mpi_rank(const ax_mpi *m) {
    return m->rank;
}

int ax_mpi_size(const ax_mpi *m) {
    return m->size;
}

int ax_mpi_allgather(ax_ctx *cx, ax_mpi *m, const void *mine, size_t nbytes, void *all) {
    if (nbytes > INT_MAX) {
        ax_error(cx, AX_ERR_VALUE,
                 "a collective across processes moves at most 2 GB per device at once, not %zu "
                 "bytes",
                 nbytes);
        return -1;
    }
    int rc = m->allgather(mine, (int)nbytes, m->byte, all, (int)nbytes, m->byte, m->world);
    if (rc == MPI_OK) return 0;
    ax_error(cx, AX_ERR_RUNTIME, "MPI_Allgather failed (%d)", rc);
    return -1;
}

void ax_mpi_close(ax_mpi *m, bool failed) {
    if (!m) return;
    int done = 0;
    m->finalized(&done);
    if (!done && failed && m->size > 1) {
        fflush(stdout);
        fflush(stderr);
        m->abort(m->world, 1); /* does not return */
    }
    if (!done) m->finalize();
    /* libmpi stays loaded: its atexit handlers and threads may still refer to it */
    free(m);
}

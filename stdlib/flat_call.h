/* Calls of user functions on flattened arguments: what every transformation shares. The
 * traced arguments (pytrees) are flattened to arrays; a flat function rebuilds them, calls the
 * user's function and flattens its result, remembering the output's structure. */
#ifndef AX_FLAT_CALL_H
#define AX_FLAT_CALL_H

#include "../compiler/trace_ir.h"
#include "../lang/interp.h"

/* A call of a user function whose traced arguments (pytrees) are flattened to arrays. */
typedef struct flat_call {
    ax_interp *in;
    const char *what; /* "grad", "jit", ... for messages */
    ax_value *fn;
    int nargs;
    ax_value **args; /* positional arguments (borrowed) */
    int nkw;
    const char **kwnames;
    ax_value **kwvals;
    int ntraced;
    int *traced;     /* positions of the traced arguments */
    ax_value **defs; /* the structure of each */
    int *counts;     /* and its number of leaves */
    ax_array **flat;  /* the leaves of the traced arguments (borrowed from args) */
    int nflat;
    bool shares_layout; /* traced, defs, counts and flat are another flat_call's */
    bool has_aux;
    ax_value *out_def; /* structure of the (main) output, set by each call */
    int nmain;
    ax_value *aux_def;      /* has_aux: structure of the auxiliary output */
    ax_value **aux_leaves;  /* its leaves; array leaves are outputs (NULL here) */
    int naux;
} flat_call;

/* Flattens the traced arguments (positions `traced`, or all positional arguments when it is
 * NULL) of a call; their leaves must be arrays. After a failure fc is still to be freed. */
int ax_flat_call_init(flat_call *fc, ax_interp *in, const char *what, ax_value *fn,
                      const ax_args *a, int ntraced, const int *traced, bool has_aux);
/* The same, taking the leaves and structure of the arguments that `from` (a flat_call of the
 * same arguments a, or NULL) flattened already instead of flattening them again; when it
 * flattened exactly these arguments, fc shares its lists (from must outlive fc). */
int ax_flat_call_init_from(flat_call *fc, ax_interp *in, const char *what, ax_value *fn,
                           const ax_args *a, int ntraced, const int *traced, bool has_aux,
                           const flat_call *from);
void ax_flat_call_free(flat_call *fc);
/* A flat_call that only knows src's argument structure (in, ntraced, traced, defs, counts):
 * enough to rebuild arguments. Free it with ax_flat_call_free. */
int ax_flat_call_copy_layout(flat_call *dst, const flat_call *src);
/* The flat function (an ax_flat_fn whose closure is a flat_call). */
int ax_flat_call_fn(ax_ctx *cx, void *closure, int nin, ax_array **in, int *nout,
                    ax_array ***out);
/* Values around arrays (new references to the arrays), and the rebuilding of trees. */
ax_value **ax_flat_wrap_arrays(ax_ctx *cx, int n, ax_array **arrs);
ax_value *ax_flat_rebuild_arg(flat_call *fc, int k, ax_array **arrs);
ax_value *ax_flat_rebuild_main(flat_call *fc, ax_array **outs);
ax_value *ax_flat_rebuild_aux(flat_call *fc, ax_array **outs);
/* One value per traced argument (a tuple when as_tuple, else the first one). */
ax_value *ax_flat_rebuild_per_arg(flat_call *fc, ax_array **flat, bool as_tuple);
void ax_flat_release_arrays(ax_array **a, int n);
/* (a, b), taking both; NULL when either is NULL, or with MemoryError when the pair cannot be
 * made. */
ax_value *ax_flat_pair_take(ax_ctx *cx, ax_value *a, ax_value *b);

#endif

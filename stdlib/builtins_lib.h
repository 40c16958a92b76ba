/* Internal to stdlib/builtins*.c: the tables of builtins and the argument helpers they share.
 *
 * Each builtins_<concern>.c file defines one table of {name, fn, doc, flags}; builtins.c
 * registers them all. Array functions double as methods (x.sum(0) calls sum with x first). */
#ifndef AX_BUILTINS_LIB_H
#define AX_BUILTINS_LIB_H

#include "builtins.h"
#include "np_lib.h"

/* AX_BI_NP: also a member of jnp / np. AX_BI_LINALG: only a member of jnp.linalg / linalg. */
enum { AX_BI_NP = 1, AX_BI_LINALG = 2 };

typedef struct ax_builtin_def {
    const char *name;
    ax_builtin_fn fn;
    const char *doc; /* one line, for :help */
    unsigned flags;
} ax_builtin_def;

/* The tables, each ended by an entry with a NULL name. */
extern const ax_builtin_def ax_builtins_py[];      /* print, len, range, zip, ... */
extern const ax_builtin_def ax_builtins_pytypes[]; /* isinstance, ord, chr, slice, ... */
extern const ax_builtin_def ax_builtins_create[];  /* array, zeros, arange, ... */
extern const ax_builtin_def ax_builtins_math[];    /* elementwise functions */
extern const ax_builtin_def ax_builtins_reduce[];  /* sum, mean, argmax, cumsum, ... */
extern const ax_builtin_def ax_builtins_shape[];   /* reshape, concatenate, ... */
extern const ax_builtin_def ax_builtins_linalg[];  /* dot, matmul, outer, ... */
extern const ax_builtin_def ax_builtins_index[];   /* take, sort, nonzero, one_hot, ... */
extern const ax_builtin_def ax_builtins_einsum[];  /* einsum */
extern const ax_builtin_def ax_builtins_compare[]; /* isclose, allclose, array_equal, ... */
extern const ax_builtin_def ax_builtins_time[];    /* timeit */
extern const ax_builtin_def ax_builtins_help[];    /* help */
extern const ax_builtin_def ax_builtins_types[];   /* type, isinstance, ndarray */
extern const ax_builtin_def ax_builtins_lax[];     /* cond, switch, while_loop, scan */
extern const ax_builtin_def ax_builtins_conv[];    /* conv_general_dilated, reduce_window, ... */
extern const ax_builtin_def ax_builtins_io[];      /* loadtxt */
extern const ax_builtin_def ax_builtins_parallel[]; /* pmap, psum, devices, ... */
/* The devices an array lives on, x.devices() (stdlib/builtins_parallel.c). */
ax_value *ax_parallel_devices_of(ax_interp *in, const ax_array *x);

/* The array builtin called `name`, or NULL (used for method sugar). */
const ax_builtin_def *ax_builtin_find(const char *name);

/* Matches args against a signature: the NULL-terminated parameter `names`, of which the first
 * `maxpos` may be given positionally. Fills vals[i] (borrowed, NULL when absent). TypeError
 * "f() got an unexpected keyword argument 'k'" and the like otherwise. */
bool ax_bi_parse(ax_interp *in, const ax_args *args, const char *fname, const char *const *names,
                 int maxpos, ax_value **vals);
/* Checks that every keyword is one of `names` (for functions with *args). */
bool ax_bi_keywords(ax_interp *in, const ax_args *args, const char *fname,
                    const char *const *names);
/* The keyword argument `name`, or NULL. */
ax_value *ax_bi_kwarg(const ax_args *args, const char *name);
/* A required argument: TypeError "f() missing required argument 'x'" when NULL. */
bool ax_bi_required(ax_interp *in, ax_value *v, const char *fname, const char *name);

/* Concrete scalars (ConcretizationError for traced values, TypeError for non-scalars).
 * An absent (NULL) or None value gives the default. */
bool ax_bi_int(ax_interp *in, ax_value *v, const char *what, int64_t dflt, int64_t *out);
bool ax_bi_double(ax_interp *in, ax_value *v, const char *what, double dflt, double *out);
bool ax_bi_bool(ax_interp *in, ax_value *v, const char *what, bool dflt, bool *out);
/* A dtype argument (f32, "float32", float, int, bool); -1 when absent or None. */
bool ax_bi_dtype(ax_interp *in, ax_value *v, int *out);
/* A shape: an int or a tuple/list of ints. */
bool ax_bi_shape(ax_interp *in, ax_value *v, const char *what, int *ndim, int64_t *shape);
/* An axis argument: None (all axes, in order) / int / tuple of ints, normalised and sorted;
 * ValueError for out-of-range or repeated axes. */
bool ax_bi_axes(ax_interp *in, ax_value *v, int ndim, int *naxes, int *axes);
/* A single axis, normalised. When v is absent the default applies; None (or an absent v
 * with the default AX_BI_NO_AXIS) gives -1 when allow_none, a TypeError otherwise. */
#define AX_BI_NO_AXIS INT64_MIN
bool ax_bi_axis(ax_interp *in, ax_value *v, int ndim, int64_t dflt, bool allow_none, int *axis);
/* The arrays of a sequence value (list/tuple of array-likes, or an array along axis 0):
 * new references in *out (free with ax_bi_free_arrays). */
bool ax_bi_arrays(ax_interp *in, ax_value *v, const char *what, int *n, ax_array ***out);
void ax_bi_free_arrays(int n, ax_array **xs);

/* A string value of `what` (borrowed), or NULL with a TypeError. */
const char *ax_bi_str(ax_interp *in, ax_value *v, const char *what);

/* A Python-style number value: a weak scalar of the default int / float dtype. */
ax_value *ax_bi_int_value(ax_interp *in, int64_t v);
ax_value *ax_bi_float_value(ax_interp *in, double v);
ax_value *ax_bi_bool_value(ax_interp *in, bool v);

#endif

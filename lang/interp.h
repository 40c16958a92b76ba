/* The interpreter: modules, the builtin namespace, evaluation of programs, calls. */
#ifndef AX_INTERP_H
#define AX_INTERP_H

#include <stdio.h>

#include "value.h"

/* Where a call was made: the file and the line:col of the call expression. */
typedef struct ax_call_site {
    const char *file;
    int line, col;
} ax_call_site;

#define AX_CALL_SITES 64

struct ax_interp;
/* How arrays behave as values: indexing, attributes and methods, calling a dtype (f32(x)).
 * The core knows arrays as data and their operators (numpy/np.h); the library that defines
 * the rest installs it (stdlib/libs.c), as Lua's string library sets the strings' metatable. */
typedef struct ax_array_class {
    ax_value *(*getitem)(struct ax_interp *in, ax_value *x, ax_value *index);
    /* NULL without an error when there is no such attribute */
    ax_value *(*getattr)(struct ax_interp *in, ax_value *x, const char *name);
    void (*each_attr)(void (*fn)(void *arg, const char *name), void *arg);
    ax_value *(*call_dtype)(struct ax_interp *in, ax_dtype dtype, const ax_args *args);
} ax_array_class;

typedef struct ax_interp {
    ax_ctx *cx;
    ax_module *main;            /* the __main__ module (script or REPL) */
    ax_module *builtins;        /* the builtin namespace, searched after a module's globals */
    const ax_array_class *arrays; /* what arrays do as values, or NULL (no library opened) */
    ax_module **modules;        /* imported modules, live until the interpreter is freed */
    int nmodules;
    char **search_path;         /* where `import name` looks for name.ax */
    int npath;
    int depth;                  /* call depth, for RecursionError */
    bool allow_key_reuse;
    bool threefry_unpartitioned; /* jax_threefry_partitionable off: JAX's keys before 0.5 */
    ax_call_site sites[AX_CALL_SITES]; /* the calls being evaluated, innermost last (only the
                                          outermost AX_CALL_SITES are kept) */
    int nsites;
    void *key_uses;             /* the PRNG's record of consumed keys (stdlib/prng.c) */
    char *stdlib_dir;           /* where prelude.ax was found: errors inside the standard
                                   library point at the user's call instead */
    void (*free_key_uses)(void *key_uses);
    const char *current_file;   /* the file being evaluated, for error spans */
    const char *current_source;
} ax_interp;

/* A new interpreter with no library opened: its builtin namespace is empty until the
 * embedder opens the libraries (the command line: ax_libs_open, stdlib/libs.h).
 * `exe_path` (argv[0]) is used to find stdlib/ next to the binary. */
ax_interp *ax_interp_new(ax_ctx *cx, const char *exe_path);
/* Runs the standard library's `file` (found on the search path, the first match) in `module`:
 * how the prelude fills the builtin namespace. 0 when there is no such file, -1 on error. */
int ax_interp_run_stdlib(ax_interp *in, ax_module *module, const char *file);
void ax_interp_free(ax_interp *in);

/* Parses and runs `source` in the main module. When `echo` is non-NULL (the REPL), the value
 * of a top-level expression statement that is not None is written there in the REPL form
 * ("0.4199743 : f32[]"). Returns 0, or -1 with the error (and its span) in in->cx. */
int ax_interp_run(ax_interp *in, const char *source, const char *file, FILE *echo);
/* The same for source[0, len), which may hold NUL bytes (a SyntaxError). */
int ax_interp_run_n(ax_interp *in, const char *source, size_t len, const char *file, FILE *echo);
/* Reads and runs a file (an IOError when it cannot be read; Ctrl-C stops the reading). */
int ax_interp_run_file(ax_interp *in, const char *path, FILE *echo);

/* The whole of a stream as a NUL-terminated string (malloc'd; *len counts its bytes), or NULL
 * with errno set. Reading stops soon after a NUL byte (a program cannot hold one: the parser
 * reports it), and with EINTR when Ctrl-C is pressed (cx may be NULL). */
char *ax_read_stream(FILE *f, ax_ctx *cx, size_t *len);
/* ax_read_stream of a file (NULL with errno when it cannot be opened). */
char *ax_read_file(const char *path, ax_ctx *cx, size_t *len);

/* Evaluates one expression in the main module (for :type, :time); new reference or NULL. */
ax_value *ax_interp_eval_expr(ax_interp *in, const char *source, const char *file);

/* Calls any callable value. New reference, or NULL with an error recorded. */
ax_value *ax_call(ax_interp *in, ax_value *fn, const ax_args *args);
ax_value *ax_call1(ax_interp *in, ax_value *fn, ax_value *arg);

/* Defines a name in the builtin namespace (takes the reference to v). */
void ax_interp_define_builtin_take(ax_interp *in, const char *name, ax_value *v);
/* Defines a name in a module's globals (takes the reference). */
void ax_module_define_take(ax_module *m, const char *name, ax_value *v);
/* Looks a name up in the main module, then the builtins (borrowed, NULL if absent). */
ax_value *ax_interp_lookup(ax_interp *in, const char *name);
/* Names visible at top level (main module + builtins), for completion and :vars.
 * Calls fn for each; `is_builtin` tells which namespace. */
void ax_interp_each_name(ax_interp *in, void (*fn)(void *arg, const char *name, ax_value *v,
                                                   bool is_builtin), void *arg);
/* Member names of a value (module members, dict keys, array attributes, methods): what
 * ax_getattr resolves, for Tab completion and dir(). Unsorted; a name may come twice. */
void ax_value_each_attr(ax_interp *in, ax_value *v, void (*fn)(void *arg, const char *name),
                        void *arg);
/* A new empty module named `name`, owned by the interpreter (it lives until ax_interp_free)
 * and importable by that name (`import random`, `from random import normal`). Fill it with
 * ax_module_define_take; bind it with ax_interp_define_builtin_take(in, name, ax_value_module(m)).
 * NULL + error on out of memory. */
ax_module *ax_interp_new_module(ax_interp *in, const char *name);
/* A value referring to a module (modules are owned by the interpreter, not by values). */
ax_value *ax_value_module(ax_module *m);
/* A module's global (borrowed, NULL if absent), and its name. */
ax_value *ax_module_lookup(ax_module *m, const char *name);
const char *ax_module_name(const ax_module *m);
/* Forgets all user definitions in the main module (REPL :reset). */
void ax_interp_reset(ax_interp *in);
/* Imports (or returns the already imported) module `name`: borrowed, NULL + error (also when
 * the name stands for a namespace that is not a module, such as jax.numpy). */
ax_module *ax_interp_import(ax_interp *in, const char *name);
/* What `import name` binds: a module, or the object that stands for one (jax.numpy is the jnp
 * namespace). New reference or NULL + ImportError. */
ax_value *ax_interp_import_value(ax_interp *in, const char *name);

/* ---- libraries ----
 * A library is a module the embedder offers by name, as Lua's package.preload: `open` makes
 * its value (a module, or an object that stands for one) on its first import, and every
 * later import of that name gets the same value. Imports look among the libraries before
 * files, and an attribute a module lacks may be the library named `module.attribute` (a
 * submodule: jax.scipy.special). */
typedef struct ax_lib {
    const char *name; /* as programs import it: "jax.numpy" */
    /* the library's value: new reference, or NULL + error */
    ax_value *(*open)(ax_interp *in, const struct ax_lib *lib);
    const char *arg; /* what `open` reads (another library's name, a builtin's name), or NULL */
} ax_lib;
/* Offers the libraries of `libs`, a table ending with a NULL name (kept, not copied). */
void ax_interp_offer_libs(ax_interp *in, const ax_lib *libs);
/* The offered library of that name, or NULL. */
const ax_lib *ax_interp_find_lib(const ax_interp *in, const char *name);
/* Builtins kept in the offered library `lib` (a module), opened when a program first uses a
 * name the builtins lack: a public member of it becomes a builtin then. Starting ax does not
 * pay for them. */
void ax_interp_offer_lazy_builtins(ax_interp *in, const char *lib);
/* The builtin `name` from the lazy builtins' library: borrowed, or NULL (an error pending
 * if opening the library failed). */
ax_value *ax_interp_lookup_lazy(ax_interp *in, const char *name);
/* Each public name of the library offered by ax_interp_offer_lazy_builtins, which this opens
 * (for Tab completion: the names are there before a program has used one). */
void ax_interp_each_lazy_builtin(ax_interp *in, void (*fn)(void *arg, const char *name),
                                 void *arg);
/* Runs the standard library's file of module `name` (its dots are directories: jax.tree_util
 * is jax/tree_util.ax under a stdlib directory) as a new module. Borrowed, or NULL + error. */
ax_module *ax_interp_load_stdlib(ax_interp *in, const char *name);

/* Attribute lookup on any value (`x.shape`, `p.w`, `random.normal`, methods): new ref. */
ax_value *ax_getattr(ax_interp *in, ax_value *obj, const char *name);

/* ---- helpers for builtins ---- */

/* v, or NULL + MemoryError when v is NULL: the value constructors (ax_value_str, ...) have no
 * context to record their failure in. */
ax_value *ax_value_or_oom(ax_interp *in, ax_value *v);
/* The text built in s as a str value, or NULL + MemoryError if building it (or the value)
 * failed; frees s's buffer. */
ax_value *ax_value_str_take_buf(ax_interp *in, ax_strbuf *s);

/* The argument at position `pos` or with keyword `name` (borrowed), or NULL if not given. */
ax_value *ax_arg(const ax_args *args, int pos, const char *name);
/* Checks that at most `maxpos` positional arguments were given and that every keyword is one
 * of the NULL-terminated `names` (positional names first); records a TypeError naming `fname`
 * otherwise. Returns false on error. Also rejects a keyword that repeats a positional. */
bool ax_args_check(ax_interp *in, const ax_args *args, const char *fname, int maxpos,
                   const char *const *names);
/* Converts a value (array, number, nested lists/tuples of numbers) to an array: new reference,
 * or NULL + TypeError mentioning `what`. */
ax_array *ax_value_to_array(ax_interp *in, ax_value *v, const char *what);
/* Reads a concrete integer / float / bool (ConcretizationError for a tracer, TypeError for
 * a non-scalar). */
bool ax_value_to_int(ax_interp *in, ax_value *v, const char *what, int64_t *out);
bool ax_value_to_double(ax_interp *in, ax_value *v, const char *what, double *out);
bool ax_value_truthy(ax_interp *in, ax_value *v, bool *out);
/* `a == b` on values: structural (strings, None, dtypes, containers; arrays by shape and
 * values; objects by their type's rule). 1 equal, 0 not, -1 error (a traced array inside a
 * container). */
int ax_value_equal(ax_interp *in, const ax_value *a, const ax_value *b);

/* Iteration over lists, tuples, dict keys, strings (bytes), ranges, arrays along axis 0 and
 * objects that support integer indexing. Loops that may run long poll Ctrl-C themselves. */
typedef struct ax_value_iter {
    ax_value *seq; /* borrowed */
    int64_t i, n;  /* n < 0: unknown (objects: until IndexError) */
} ax_value_iter;
int ax_value_iter_begin(ax_interp *in, ax_value *seq, ax_value_iter *it); /* 0 or -1 */
/* 1 with *item (new ref), 0 at the end, -1 on error. */
int ax_value_iter_next(ax_interp *in, ax_value_iter *it, ax_value **item);

/* set(iterable): a set of its items (which must be hashable, as dict keys); new reference or
 * NULL + error. */
ax_value *ax_set_from(ax_interp *in, ax_value *iterable);

#endif

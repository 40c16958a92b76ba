/* Internals shared by the evaluator's files (value.c, eval.c, interp.c, args.c): programs kept
 * alive by closures, local environments, modules, and the operations of the language on
 * values. Nothing outside lang/{value,eval,interp,args}.c should need this header. */
#ifndef AX_EVAL_H
#define AX_EVAL_H

#include <stdio.h>

#include "interp.h"

/* A parsed program shared by the closures defined in it (the REPL parses one entry at a
 * time; a function defined in entry 3 may be called in entry 9). */
struct ax_program_ref {
    int64_t refs;
    ax_program *prog;
};
struct ax_program_ref *ax_program_ref_new(ax_program *prog); /* takes prog; NULL on OOM */
struct ax_program_ref *ax_program_ref_retain(struct ax_program_ref *r);
void ax_program_ref_release(struct ax_program_ref *r);

/* Local names of a function call or comprehension. Lookups walk `parent` (the enclosing
 * scope: a closure's captured snapshot, or the function around a comprehension). Bindings
 * always go to the innermost env: rebinding a name replaces its value there, which is the
 * same as shadowing because closures captured a copy. */
struct ax_env {
    int n, cap;
    char **names;
    ax_value **vals;
    ax_env *parent; /* borrowed */
};
ax_env *ax_env_new(ax_env *parent);
void ax_env_free(ax_env *env);
ax_value *ax_env_get(const ax_env *env, const char *name);  /* borrowed, NULL if absent */
int ax_env_set_take(ax_env *env, const char *name, ax_value *v); /* takes v; -1 on OOM */
/* A flat copy of everything visible through env and its parents (innermost wins). */
ax_env *ax_env_snapshot(const ax_env *env);

/* A module: its globals, in insertion order, with a hash index. */
typedef struct ax_module_entry {
    char *name;
    ax_value *val;
} ax_module_entry;
struct ax_module {
    char *name;
    char *file;  /* the .ax file it was loaded from, or NULL */
    bool failed; /* its evaluation failed: kept alive for its closures, but not importable */
    ax_module_entry *entries;
    int n, cap;
    int *index; /* open addressing over `entries`, -1 for empty; size icap (a power of 2) */
    int icap;
};
ax_module *ax_module_new(const char *name);
void ax_module_free(ax_module *m);
void ax_module_clear(ax_module *m);
int ax_module_set_take(ax_module *m, const char *name, ax_value *v); /* takes v; -1 on OOM */

/* The interpreter's private part: the public struct comes first. */
typedef struct ax_interp_impl {
    ax_interp pub;
    int max_depth;
    /* The current thread's stack bounds, to stop recursion before the C stack overflows. */
    unsigned long stack_thread;
    char *stack_lo;
    char *main_dir; /* directory of the main script (for imports), or NULL */
    int npath_env;  /* search_path[0..npath_env) came from $AX_PATH */
    const ax_lib *libs;  /* the offered libraries (ax_interp_offer_libs), or NULL */
    ax_module *opened;   /* the libraries opened so far: name -> value */
    const char *lazy_builtins; /* ax_interp_offer_lazy_builtins's library, or NULL */
    bool opening_lazy;         /* it is being opened (names it lacks are errors, not loops) */
} ax_interp_impl;

/* Recursion guard around every call: RecursionError when too deep or the C stack is
 * nearly exhausted; also polls Ctrl-C. ax_call_leave undoes a successful ax_call_enter. */
bool ax_call_enter(ax_interp *in);
void ax_call_leave(ax_interp *in);

/* Runs a parsed program's statements in `module` (top-level frame). With `echo`, writes the
 * REPL form of each top-level expression statement's value that is not None. 0 or -1. */
int ax_eval_program(ax_interp *in, struct ax_program_ref *prog, ax_module *module, FILE *echo);
/* Evaluates one expression of `prog` at the top level of `module`: new reference or NULL. */
ax_value *ax_eval_expr_in_module(ax_interp *in, struct ax_program_ref *prog, const ax_node *expr,
                                 ax_module *module);
/* Checks what the parser leaves to the evaluator: `return` only in tail position of a
 * function, break/continue only in loops. Records a SyntaxError with its span; 0 or -1. */
int ax_check_program(ax_interp *in, const ax_program *prog);
/* Calls a closure value. */
ax_value *ax_call_closure(ax_interp *in, ax_value *fn, const ax_args *args);
void ax_closure_free(ax_closure *c);

/* Operators of the language on any values (arrays go to the NumPy layer). New refs. */
ax_value *ax_value_binop(ax_interp *in, ax_binop op, ax_value *a, ax_value *b);
ax_value *ax_value_unop(ax_interp *in, ax_unop op, ax_value *a);
ax_value *ax_value_compare(ax_interp *in, ax_cmpop op, ax_value *a, ax_value *b);
ax_value *ax_value_getitem(ax_interp *in, ax_value *obj, ax_value *index);

/* Closest name (Levenshtein) among candidates, for "did you mean" hints; NULL if none. */
typedef struct ax_near_miss {
    const char *target;
    const char *best;
    int best_dist;
} ax_near_miss;
void ax_near_miss_offer(ax_near_miss *nm, const char *candidate);

ax_value *ax_value_ellipsis(void);

/* The methods of lists and tuples (index, count) and the fields of slices (start, stop,
 * step, indices), or NULL without an error when there is no such attribute. */
ax_value *ax_sequence_getattr(ax_interp *in, ax_value *obj, const char *name);
/* Those names, each passed to fn (Tab completion, dir()). */
void ax_sequence_each_attr(const ax_value *obj, void (*fn)(void *arg, const char *name),
                           void *arg);

/* Sets (sets.c): a | b, a & b, a - b, a ^ b; subset comparisons (a <= b, a < b, ...); the
 * position of a (hashable) item (-1 if absent); the methods of a set value (a bound builtin,
 * or NULL without an error when there is no such method). */
ax_value *ax_set_binop(ax_interp *in, ax_binop op, ax_value *a, ax_value *b);
ax_value *ax_set_compare(ax_interp *in, ax_cmpop op, ax_value *a, ax_value *b);
int ax_set_index(const ax_value *set, const ax_value *item);
ax_value *ax_set_getattr(ax_interp *in, ax_value *s, const char *name);
void ax_set_each_attr(void (*fn)(void *arg, const char *name), void *arg);

/* Strings (strings.c): `fmt % args` (args a tuple or one value), and the methods of a string
 * value (a bound builtin, or NULL without an error when there is no such method). */
ax_value *ax_string_percent(ax_interp *in, const char *fmt, ax_value *args);
ax_value *ax_string_getattr(ax_interp *in, ax_value *s, const char *name);
void ax_string_each_attr(void (*fn)(void *arg, const char *name), void *arg);

#endif

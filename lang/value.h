/* Values of the language. Every number is an array (a scalar is a rank-0 array), so a value
 * is either an array or one of the few non-array kinds below. Values are immutable and
 * reference-counted; closures capture their enclosing locals by value (a snapshot), so values
 * never form reference cycles.
 *
 * Ownership follows the convention written at the top of runtime/array.h: results are new
 * references (NULL + an error recorded), arguments are borrowed, and a function that consumes a
 * reference has `_take` in its name. The constructors below are the one documented exception:
 * they wrap what they are given, so ax_value_array, ax_value_tuple/_list/_dict (their items and
 * keys), ax_value_object (its payload) and ax_value_builtin (its data) take those references,
 * also when they fail. */
#ifndef AX_VALUE_H
#define AX_VALUE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "../runtime/array.h"
#include "../runtime/format.h"
#include "ast.h"

typedef enum {
    AX_V_NONE,
    AX_V_ARRAY,   /* arr (numbers, bools: always arrays, possibly tracers) */
    AX_V_STR,     /* str */
    AX_V_TUPLE,   /* items, n */
    AX_V_LIST,    /* items, n */
    AX_V_DICT,    /* keys (AX_V_STR values), items (values), n; insertion order */
    AX_V_FUNC,    /* a closure: fn */
    AX_V_BUILTIN, /* a C function: builtin */
    AX_V_MODULE,  /* module */
    AX_V_DTYPE,   /* dtype */
    AX_V_SLICE,   /* items[0..2] = start, stop, step (each AX_V_NONE or an int array) */
    AX_V_ELLIPSIS,
    AX_V_OBJECT, /* an opaque object implemented in C (keys, `.at` helpers, ...): obj */
    AX_V_RANGE,  /* range(start, stop, step): range; its ints are made as they are read */
    AX_V_SET,    /* items, n: distinct dict keys (hashable values), in sorted key order */
    AX_V_NKINDS
} ax_value_kind;

typedef struct ax_value ax_value;
struct ax_interp;

/* Positional and keyword arguments of a call. */
typedef struct ax_args {
    int n;
    ax_value **pos;
    int nkw;
    const char **kwnames;
    ax_value **kwvals;
} ax_args;

/* A builtin: returns a new reference, or NULL with an error recorded in the interpreter's
 * context. `self` is the builtin value itself (its `data` carries bound state). */
typedef ax_value *(*ax_builtin_fn)(struct ax_interp *in, ax_value *self, const ax_args *args);

typedef struct ax_builtin {
    const char *name;
    const char *doc; /* one line, shown by :help */
    ax_builtin_fn fn;
    ax_value *data;  /* bound state (e.g. `self` of a method, the wrapped function), or NULL */
} ax_builtin;

/* An opaque C object (typed PRNG key, `.at` index helper, jit-wrapped function, ...). */
typedef struct ax_object_type {
    const char *name;                       /* type name for errors: "key", "at" */
    void (*free)(void *payload);
    void (*format)(ax_strbuf *out, void *payload);  /* str() */
    /* attribute lookup (`obj.name`), or NULL: returns NULL without error if absent */
    ax_value *(*getattr)(struct ax_interp *in, ax_value *self, const char *name);
    /* the names getattr knows, each passed to fn (for Tab completion), or NULL: none */
    void (*each_attr)(struct ax_interp *in, ax_value *self, void (*fn)(void *arg, const char *name),
                      void *arg);
    /* call (`obj(args)`), or NULL when not callable */
    ax_value *(*call)(struct ax_interp *in, ax_value *self, const ax_args *args);
    /* indexing (`obj[idx]`), or NULL */
    ax_value *(*getitem)(struct ax_interp *in, ax_value *self, ax_value *index);
    /* len() and iteration of an array-like object (an array of PRNG keys): the length of its
     * leading dimension, or -1 with a TypeError when it has none (a 0-d key), worded for
     * iteration or for len(). NULL: iteration goes through getitem until an IndexError. */
    int64_t (*length)(struct ax_interp *in, ax_value *self, bool iterating);
    /* A pytree node with one leaf (a typed PRNG key: its u32 data), so that transformations
     * see arrays: the leaf (new reference), and a new object of this type around a leaf.
     * NULL for objects that are leaves themselves. */
    ax_value *(*tree_leaf)(void *payload);
    ax_value *(*tree_rebuild)(struct ax_interp *in, ax_value *leaf);
    /* `a == b` for two objects of this type: 1, 0, or -1 with an error. NULL: by identity. */
    int (*equal)(struct ax_interp *in, const ax_value *a, const ax_value *b);
    /* For the walk over reference cycles (lang/cycles.h), or NULL: `children` calls visit on
     * each value the object holds a reference to (NULL: the walk does not see through it);
     * `forget`, for objects a library mutates after making them (which may close a cycle),
     * drops those references without releasing them (the cycle collector releases them). */
    void (*children)(void *payload, void (*visit)(void *arg, ax_value *child), void *arg);
    void (*forget)(void *payload);
    /* For an object a builtin carries as its data (ax_builtin.data): whether the builtin shows
     * the object's attributes (getattr, each_attr) as its own, as a jitted function shows
     * jit(f).lower. */
    bool function_attrs;
} ax_object_type;

typedef struct ax_env ax_env;
typedef struct ax_module ax_module;

typedef struct ax_closure {
    char *name;
    const ax_node *def;   /* AX_N_DEF or AX_N_LAMBDA; owned by the program, kept alive below */
    struct ax_program_ref *program; /* keeps the AST alive while the closure lives */
    ax_env *captured;     /* snapshot of the enclosing locals (NULL at top level) */
    ax_module *module;    /* late-bound globals; not owned (modules live as long as the interp) */
    ax_value **defaults;  /* evaluated default values, one per parameter (NULL if none) */
    /* What a library keeps per function and frees with it (jit's traces, which every jit of
     * the function shares), or NULL. */
    void *cache;
    void (*cache_free)(void *cache);
} ax_closure;

struct ax_value {
    int64_t refs;
    ax_value_kind kind;
    /* On a reference cycle (lang/cycles.h): the references it gets from that cycle's values;
     * 0 for the values on none (nearly all). */
    uint32_t cycle_refs;
    union {
        ax_array *arr;
        char *str;
        struct {
            ax_value **items;
            ax_value **keys; /* dicts only */
            int n;
        };
        ax_closure *fn;
        ax_builtin *builtin;
        ax_module *module;
        ax_dtype dtype;
        struct {
            const ax_object_type *type;
            void *payload;
        } obj;
        struct {
            int64_t start, stop, step;
        } range;
    };
};

ax_value *ax_value_retain(ax_value *v);
void ax_value_release(ax_value *v);

/* Constructors return new references (NULL + error on out of memory). */
ax_value *ax_none(void);                       /* the shared None */
ax_value *ax_value_array(ax_array *a);         /* takes the reference to a */
ax_value *ax_value_str(const char *s);
ax_value *ax_value_tuple(int n, ax_value **items); /* takes the references to items */
ax_value *ax_value_list(int n, ax_value **items);  /* takes the references to items */
ax_value *ax_value_dict(int n, ax_value **keys, ax_value **vals); /* takes references */
/* The same for entries whose keys may repeat (each checked with ax_dict_key_check): a repeated
 * key keeps its first place and takes its last value, as Python's {**a, **b} and dict(pairs). */
ax_value *ax_value_dict_merged(int n, ax_value **keys, ax_value **vals);
/* A set of the distinct items (each checked with ax_dict_key_check; equal ones keep the first,
 * as Python's {1, 1.0} is {1}), kept in ax_dict_key_order: takes the references. */
ax_value *ax_value_set(int n, ax_value **items);
ax_value *ax_value_builtin(const char *name, const char *doc, ax_builtin_fn fn, ax_value *data);
ax_value *ax_value_dtype(ax_dtype t);
/* A slice (takes the three references; each None or an int array). */
ax_value *ax_value_slice(ax_value *start, ax_value *stop, ax_value *step);
ax_value *ax_value_object(const ax_object_type *type, void *payload);
/* Python's range (step != 0); NULL + ValueError when it has more than INT64_MAX ints. */
ax_value *ax_value_range(struct ax_interp *in, int64_t start, int64_t stop, int64_t step);
/* Its number of ints, and its i-th int (0 <= i < len), computed without overflow. */
int64_t ax_range_len(const ax_value *range);
int64_t ax_range_item(const ax_value *range, int64_t i);
/* A range as a tuple of its ints, for arguments read as tuples (axes, shapes): NULL +
 * ValueError when it has more than `max` ints (a bound far above what the caller accepts, so
 * that the caller itself says what is wrong with a short one). */
ax_value *ax_range_tuple(struct ax_interp *in, const ax_value *range, int64_t max);
/* Scalars as weakly typed rank-0 arrays (what a literal `1` or `1.0` is). */
ax_value *ax_value_int(struct ax_interp *in, int64_t v);
ax_value *ax_value_float(struct ax_interp *in, double v);
ax_value *ax_value_bool(struct ax_interp *in, bool v);

/* The number of items of a sized value (tuple, list, dict, str: its characters, range, array
 * of rank >= 1: its rows), or -1 for values that have none. */
int64_t ax_value_length(const ax_value *v);

/* "array", "tuple", "function", ... for error messages (arrays: their type, e.g. "f32[3]"). */
const char *ax_value_kind_name(ax_value_kind kind);
void ax_value_describe(char *out, size_t cap, const ax_value *v);

/* str(v) as print shows it; repr-like forms inside containers ('a' quoted, 2.0 for scalars). */
void ax_value_format(ax_strbuf *out, const ax_value *v);
/* The form a value takes inside a container (strings quoted, scalars as Python numbers). */
void ax_value_format_nested(ax_strbuf *out, const ax_value *v);
/* Repr of a string as Python writes it inside containers: 'a', "it's". */
void ax_format_string_repr(ax_strbuf *out, const char *s);
/* The REPL echo: "0.4199743 : f32[]" for arrays, str for the rest. A Ctrl-C pending in cx (may
 * be NULL) cuts the text short. */
void ax_value_format_repl(ax_strbuf *out, const ax_value *v, const ax_ctx *cx);
/* ax_value_format that Ctrl-C stops: false with KeyboardInterrupt recorded (the text is cut),
 * or with MemoryError when the text could not grow (out->failed). */
bool ax_value_format_checked(struct ax_interp *in, ax_strbuf *out, const ax_value *v);
/* Writes len bytes to f in pieces, false with KeyboardInterrupt recorded when Ctrl-C stops it. */
bool ax_write_checked(struct ax_interp *in, FILE *f, const char *data, size_t len);

/* Dict lookup by string key (borrowed result, NULL if absent). */
ax_value *ax_dict_get(const ax_value *dict, const char *key);
/* Dict keys are Python's hashable values: strings, concrete scalars (numbers and bools, equal
 * across dtypes as 1 == 1.0 == True), None, dtypes and tuples of them. ax_dict_key_check: true,
 * or false with a TypeError (a ConcretizationError for a traced scalar). */
bool ax_dict_key_check(struct ax_interp *in, const ax_value *key);
bool ax_dict_key_equal(const ax_value *a, const ax_value *b);
/* A hash of a key that equal keys share. */
uint64_t ax_dict_key_hash(const ax_value *k);
/* The order of sorted keys (JAX's for dict nodes): -1, 0 or 1; keys of different kinds (which
 * Python cannot compare) sort None, numbers, strings, tuples, dtypes. */
int ax_dict_key_order(const ax_value *a, const ax_value *b);
/* The position of `key` in a dict (-1 if absent), and its value (borrowed, NULL if absent). */
int ax_dict_index(const ax_value *dict, const ax_value *key);
ax_value *ax_dict_lookup(const ax_value *dict, const ax_value *key);

#endif

/* The typed IR: first-order, A-normal form, every variable typed with a dtype and a shape,
 * printed like a jaxpr:
 *   { lambda ; a:f32[3]. let b:f32[3] = exp a; c:f32[] = reduce_sum[axes=(0,)] b in (c,) }
 * Variables are numbered 0..nvars-1; an operand is a variable or a literal (a rank-0 array).
 * Closed-over arrays are constants bound to `constvars`. IRs are reference-counted and
 * immutable once built (ax_ir_builder makes them). */
#ifndef AX_IR_H
#define AX_IR_H

#include "../runtime/format.h"
#include "primitive.h"

typedef struct ax_ir ax_ir;

/* An operand: variable `var` (>= 0), or the literal `lit` when var < 0. */
typedef struct ax_ir_atom {
    int var;
    ax_array *lit;
} ax_ir_atom;

typedef struct ax_ir_eqn {
    ax_prim prim;
    ax_params params; /* params.sub and params.nsub are the two fields below */
    int nin, nout;
    ax_ir_atom *in;
    int *out;
    int nsub;
    ax_ir **sub; /* closed sub-IRs of higher-order primitives (references held) */
} ax_ir_eqn;

struct ax_ir {
    int64_t refs;
    int nvars;
    ax_aval *types; /* types[v] for each variable */
    int nconsts;
    int *constvars;
    ax_array **consts; /* the values bound to constvars (owned references) */
    int nin;
    int *invars;
    int neqns;
    ax_ir_eqn *eqns;
    int nout;
    ax_ir_atom *outs;
    char *name; /* the function it was traced from, or NULL (pjit[name=...]) */
    /* What other modules attach to an IR and free with it (the native program of a call's
     * body, compiler/call.c); set once, under the context that uses the IR. */
    void *attached;
    void (*attached_free)(void *attached);
};

ax_ir *ax_ir_retain(ax_ir *ir);
void ax_ir_release(ax_ir *ir);

/* ---- building ---- */
typedef struct ax_ir_builder ax_ir_builder;
ax_ir_builder *ax_ir_builder_new(void);
void ax_ir_builder_free(ax_ir_builder *b);
/* A fresh variable of the given type. Returns its number, or -1 when out of memory. */
int ax_ir_new_var(ax_ir_builder *b, const ax_aval *type);
int ax_ir_add_input(ax_ir_builder *b, const ax_aval *type);
/* A constant: a variable bound to `value` (retained). */
int ax_ir_add_const(ax_ir_builder *b, ax_array *value);
/* Appends an equation; `out` receives nout fresh variables typed `out_types`. Literal
 * operands are retained, and so are the sub-IRs: `sub[0..nsub)`, or when nsub is 0 those of
 * params (params->sub). Returns 0, or -1 when out of memory. */
int ax_ir_add_eqn(ax_ir_builder *b, ax_prim prim, const ax_params *params, int nin,
                  const ax_ir_atom *in, int nout, const ax_aval *out_types, int *out, int nsub,
                  ax_ir *const *sub);
/* Finishes with the given outputs; the builder is consumed (freed). */
ax_ir *ax_ir_builder_finish(ax_ir_builder *b, int nout, const ax_ir_atom *outs);
/* Names the IR after the function it was traced from (copied; NULL clears it). */
int ax_ir_set_name(ax_ir *ir, const char *name);
/* The type of an atom. */
void ax_ir_atom_type(const ax_ir_builder *b, const ax_ir_atom *a, ax_aval *out);
const ax_aval *ax_ir_builder_type(const ax_ir_builder *b, int var);
/* The IR built so far (read-only; valid until the next change to the builder). */
const ax_ir *ax_ir_builder_peek(const ax_ir_builder *b);

/* Closure conversion: a copy of ir whose constants marked lift[i] (by constant index) become
 * its leading inputs, in constant order. NULL when out of memory. */
ax_ir *ax_ir_lift_consts(const ax_ir *ir, const bool *lift);

/* A copy of ir with new inputs and outputs: input i is ir's input in_src[i], or (in_src[i] < 0)
 * a fresh input of type new_types[i] that nothing uses; output j is ir's output out_src[j].
 * Inputs of ir left out must be unused. NULL when out of memory. */
ax_ir *ax_ir_rewire(const ax_ir *ir, int nin, const int *in_src, const ax_aval *new_types,
                    int nout, const int *out_src);
/* Which outputs depend on the inputs marked in_mask (through any chain of equations). False
 * when memory ran out: out_mask is then conservative (more outputs marked than depend). */
bool ax_ir_dependencies(const ax_ir *ir, const bool *in_mask, bool *out_mask);
/* Whether ir's input i is used by an equation or an output. */
bool ax_ir_uses_input(const ax_ir *ir, int i);

/* ---- using ---- */
/* Prints in jaxpr syntax: on one line when it fits in 80 columns, else one equation a line. */
void ax_ir_format(ax_strbuf *out, const ax_ir *ir);
/* "[axes=(0,)]" or "" — the static parameters of an equation as the printer shows them. */
void ax_ir_format_params(ax_strbuf *out, ax_prim prim, const ax_params *p);
/* For the rows' format_params: a tuple as Python prints it, "(1, 2)", "(0,)" or "()". */
void ax_ir_format_ints(ax_strbuf *s, int n, const int *v);
void ax_ir_format_i64s(ax_strbuf *s, int n, const int64_t *v);
/* For the rows of higher-order primitives (ax_prim_info.format_subs): their parameters one per
 * line, as JAX prints them. ax_ir_print_param starts a line and returns the text to write it
 * to; ax_ir_print_sub writes "name=" and a sub-program, ax_ir_print_subs "name=(" and each of
 * n sub-programs, ")". Variables are named across the whole program. */
typedef struct ax_ir_printer ax_ir_printer;
ax_strbuf *ax_ir_print_param(ax_ir_printer *pr);
void ax_ir_print_sub(ax_ir_printer *pr, const char *name, const ax_ir *sub);
void ax_ir_print_subs(ax_ir_printer *pr, const char *name, int n, ax_ir *const *subs);
/* Checks types (each equation's outputs equal its shape rule's), single assignment and
 * definition before use. Returns 0, or -1 with a RuntimeError describing the first problem. */
int ax_ir_verify(ax_ctx *cx, const ax_ir *ir);
/* Evaluates the IR on `args` (nin arrays) through ax_bind, so an enclosing transformation sees
 * every equation. Fills outs[0..nout) with new references. */
int ax_ir_eval(ax_ctx *cx, const ax_ir *ir, ax_array **args, ax_array **outs);
/* The same, with the bodies of custom_call and call equations evaluated in place of the calls
 * (under an IR trace this inlines them: what native code needs, since it is never
 * differentiated). */
int ax_ir_eval_inlined(ax_ctx *cx, const ax_ir *ir, ax_array **args, ax_array **outs);
/* Whether the IR holds custom_call or call equations (that ax_ir_eval_inlined inlines). */
bool ax_ir_has_custom_calls(const ax_ir *ir);
/* The two evaluations as flat functions (ax_flat_fn, closure = the IR), to trace or vmap an
 * IR: *out gets a malloc'd array of nout new references. */
int ax_ir_flat_fn(ax_ctx *cx, void *closure, int nin, ax_array **in, int *nout, ax_array ***out);
int ax_ir_inlined_flat_fn(ax_ctx *cx, void *closure, int nin, ax_array **in, int *nout,
                          ax_array ***out);

#endif

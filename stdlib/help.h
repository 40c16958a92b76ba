/* Describing values for people: the REPL's :help, :type and :vars, and the builtin help().
 *
 * Every function appends to a text buffer and records no error. */
#ifndef AX_HELP_H
#define AX_HELP_H

#include "../lang/interp.h"

/* The type of a value, with the structure of containers: "(f32[3], {'b': f32[]})". */
void ax_help_describe_value(ax_strbuf *out, const ax_value *v, int depth);
/* "def f(x, alpha=1.67, *args, **kw)" for a closure. */
void ax_help_signature(ax_strbuf *out, const ax_value *v);
/* The documentation of `v`, shown under `name`: a builtin's one-line doc, a def's signature
 * and docstring, a module's members, or a value's type. */
void ax_help_text(ax_interp *in, ax_strbuf *out, const char *name, const ax_value *v);

#endif

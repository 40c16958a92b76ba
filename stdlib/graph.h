/* Pictures of computations: show_graph(f, *args, values=False, grads=False, path=None) draws
 * the typed IR that f traces to at args with graphviz (one node per equation: primitive and
 * output type; edges are values; inputs and outputs named as in the source), optionally with
 * each value and the gradient of the output with respect to it; graph_dot(...) returns the
 * DOT text. Sub-programs (custom rules, loops, conditionals) are drawn as clusters. */
#ifndef AX_GRAPH_H
#define AX_GRAPH_H

#include "builtins_lib.h"

/* show_graph and graph_dot, registered with the other builtin tables (builtins.c). */
extern const ax_builtin_def ax_builtins_graph[];

#endif

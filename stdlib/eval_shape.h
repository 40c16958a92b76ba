/* jax.ShapeDtypeStruct and jax.eval_shape: the types of a function's outputs, found by tracing
 * it abstractly (no arithmetic runs). A ShapeDtypeStruct stands for an array of that shape and
 * dtype wherever a function is only traced: eval_shape, make_jaxpr and jit(f).lower take them
 * as arguments. */
#ifndef AX_EVAL_SHAPE_H
#define AX_EVAL_SHAPE_H

#include "../compiler/primitive.h"
#include "../lang/interp.h"

/* The call's arguments with every ShapeDtypeStruct leaf (in positional and keyword arguments)
 * replaced by an array of that type that holds no data per element (a broadcast zero). *out
 * owns new references: free it with ax_shape_args_free. 0, or -1 + error. */
int ax_shape_args(ax_interp *in, const ax_args *a, ax_args *out);
void ax_shape_args_free(ax_args *out);

/* A ShapeDtypeStruct of type t. New reference, or NULL with an error. */
ax_value *ax_shape_dtype_struct(ax_interp *in, const ax_aval *t);
bool ax_is_shape_dtype_struct(const ax_value *v);

/* ShapeDtypeStruct and eval_shape as builtins. */
int ax_eval_shape_register(ax_interp *in);

#endif

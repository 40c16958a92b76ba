/* Element types and JAX's type promotion (jnp.promote_types, with weak types for literals). */
#ifndef AX_DTYPE_H
#define AX_DTYPE_H

#include <stdbool.h>
#include <stddef.h>

/* Ordered so that switch tables stay small; the order carries no meaning. */
typedef enum { AX_BOOL, AX_U8, AX_I32, AX_U32, AX_I64, AX_F32, AX_F64, AX_NDTYPES } ax_dtype;

size_t ax_dtype_size(ax_dtype t);
const char *ax_dtype_name(ax_dtype t);  /* NumPy's name: "float32", "int32", "bool", ... */
const char *ax_dtype_short(ax_dtype t); /* IR name: "f32", "i32", "bool", ... */
bool ax_dtype_is_float(ax_dtype t);
bool ax_dtype_is_int(ax_dtype t); /* signed or unsigned integer (not bool) */
bool ax_dtype_is_signed(ax_dtype t);
bool ax_dtype_is_unsigned(ax_dtype t);

/* Parses "f32", "float32", "int64", "bool", "uint8", ... Returns false if unknown. */
bool ax_dtype_parse(const char *name, ax_dtype *out);

/* Result type of a binary operation between (a, a_weak) and (b, b_weak), as JAX computes it;
 * *weak_out tells whether the result is still weakly typed (both inputs weak). x64 decides the
 * width of a weak float/int meeting only weak operands (weak values keep their own dtype). */
ax_dtype ax_dtype_promote(ax_dtype a, bool a_weak, ax_dtype b, bool b_weak, bool *weak_out);

/* The default float / int dtype: f32 / i32, or f64 / i64 under x64. */
ax_dtype ax_dtype_default_float(bool x64);
ax_dtype ax_dtype_default_int(bool x64);

#endif

/* Records: Python's collections.namedtuple. `Point = namedtuple("Point", ["x", "y"])` makes a
 * class; `Point(1.0, y=2.0)` a record, read as p.x or p[0], printed Point(x=1.0, y=2.0).
 * ax has no class statement, so these classes are also what jax.tree_util.register_pytree_node
 * takes: a record is a pytree node whose children are its fields (as JAX treats namedtuples)
 * until its class is registered, and then its class's flatten and unflatten functions say what
 * its children are. */
#ifndef AX_RECORDS_H
#define AX_RECORDS_H

#include "../lang/interp.h"

bool ax_record_is_class(const ax_value *v);
bool ax_record_is_instance(const ax_value *v);
/* An instance's class (borrowed). */
ax_value *ax_record_class_of(const ax_value *record);
const char *ax_record_class_name(const ax_value *cls);
/* The fields of a class or an instance, and an instance's values (borrowed). */
int ax_record_nfields(const ax_value *cls_or_record);
const char *ax_record_field_name(const ax_value *cls_or_record, int i);
ax_value *ax_record_value(const ax_value *record, int i);
/* A new instance of cls with these values (borrowed, one per field). */
ax_value *ax_record_new(ax_interp *in, ax_value *cls, ax_value **values);

/* The functions register_pytree_node gave the class, or NULL (borrowed). */
ax_value *ax_record_flatten_fn(const ax_value *cls);
ax_value *ax_record_unflatten_fn(const ax_value *cls);
/* Registers them (their references are retained); -1 + TypeError when cls is not a class. */
int ax_record_register(ax_interp *in, ax_value *cls, ax_value *flatten, ax_value *unflatten);

/* The collections module: namedtuple. */
ax_value *ax_lib_open_collections(ax_interp *in, const struct ax_lib *lib);

#endif

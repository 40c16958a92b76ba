/* Pytrees: tuples, lists, dicts (visited in sorted key order) and None are nodes; everything
 * else is a leaf. Transformations flatten their arguments to leaves and rebuild results. */
#ifndef AX_PYTREE_H
#define AX_PYTREE_H

#include <stdint.h>

#include "../lang/interp.h"

/* Flattens `tree`: *leaves gets new references to the leaves (a malloc'd array, *nleaves of
 * them) and *treedef the structure (a value printing like JAX's PyTreeDef). -1 on error. */
int ax_tree_flatten(ax_interp *in, ax_value *tree, ax_value ***leaves, int *nleaves,
                    ax_value **treedef);
/* Rebuilds a tree of structure `treedef` from `leaves` (borrowed). New reference or NULL. */
ax_value *ax_tree_unflatten(ax_interp *in, ax_value *treedef, ax_value **leaves, int nleaves);
/* The number of leaves of a structure; -1 if `treedef` is not one. */
int ax_treedef_leaves(ax_value *treedef);
/* Whether the structure is a single leaf (the tree was not a container). */
bool ax_treedef_is_leaf(const ax_value *treedef);
bool ax_treedef_equal(ax_value *a, ax_value *b);
/* A hash of a treedef's structure: equal treedefs hash equally (jit's cache key). */
uint64_t ax_treedef_hash(ax_value *treedef);
/* ((args...), {}): the tree of a call's positional arguments, as JAX flattens them (its
 * in_tree). New reference, or NULL with an error. */
ax_value *ax_tree_call_args(ax_interp *in, int n, ax_value *const *args);
/* The path of leaf `leaf` of tree as keystr writes it: "['w'][0]", "" for a tree that is a
 * leaf. malloc'd; NULL with an error. */
char *ax_tree_leaf_keystr(ax_interp *in, ax_value *tree, int leaf);
void ax_values_release(ax_value **values, int n); /* releases each and frees the array */
/* The tree with each leaf replaced by fn(leaf) (a new reference, or NULL with an error, which
 * stops the walk). New reference or NULL. */
ax_value *ax_tree_map_leaves(ax_interp *in, ax_value *tree,
                             ax_value *(*fn)(ax_interp *in, ax_value *leaf, void *data),
                             void *data);

/* tree_map, tree_leaves, tree_structure, tree_flatten, tree_unflatten. */
int ax_pytree_register(ax_interp *in);

#endif

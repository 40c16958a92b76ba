/* Reference cycles among values, and freeing them.
 *
 * Values are immutable and closures capture a snapshot, so reference counting frees them all,
 * except where a library mutates an object after it was made: `f.defjvp(rule)` stores in f a
 * rule that may close over f (a custom_jvp function defined inside a function, whose rule
 * calls it). Such a library calls ax_cycles_note(f) after the mutation: the values on a cycle
 * through f are marked with the number of references they hold to one another. When a marked
 * value loses a reference and is left with no more than that, ax_value_release asks
 * ax_cycles_collect whether its cycle is still referenced from outside (trial deletion, as
 * CPython's collector does, but only over the marked values); when not, the objects that close
 * the cycle let go of what they hold, and reference counting frees the rest.
 *
 * The walk sees the values inside containers, closures (captured values and defaults),
 * builtins (their data) and objects whose type lists its references (ax_object_type.children);
 * a reference it cannot see counts as one from outside, so an unseen cycle is kept (never
 * freed early): one through jit's traces (a function jit-compiled inside the function that
 * defines the rule, whose trace calls the custom function) is never freed.
 * Out of memory, nothing is freed. */
#ifndef AX_CYCLES_H
#define AX_CYCLES_H

#include "value.h"

/* Marks the values on reference cycles through `root` (after a library stored a reference in
 * it). Values on no cycle are left as they are. */
void ax_cycles_note(ax_value *root);

/* v (marked, still referenced) lost a reference: frees its cycle if nothing outside the cycle
 * refers to it any more. Called by ax_value_release. */
void ax_cycles_collect(ax_value *v);

#endif

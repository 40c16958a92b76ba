/* The standard library's table of modules: every name a program can import that is not a file
 * of its own, mapped to the one implementation (see ax_lib in lang/interp.h). */
#ifndef AX_LIBS_H
#define AX_LIBS_H

#include "../lang/interp.h"

/* The table, ended by an entry with a NULL name. */
extern const ax_lib ax_stdlib_libs[];

/* Opens the standard library in a new interpreter, as Lua's luaL_openlibs: the builtin
 * namespace (the C builtins, then stdlib/prelude.ax), what arrays do as values, and the table
 * above for imports. What the command line and every embedder call after ax_interp_new.
 * 0, or -1 with the error in in->cx. */
int ax_libs_open(ax_interp *in);

/* Library openers for tables (the standard library's and an embedder's own). */
/* The standard library's file of the library's name (jax.tree_util: jax/tree_util.ax). */
ax_value *ax_lib_open_file(ax_interp *in, const ax_lib *lib);
/* The library named lib->arg: two names for one module (jax.lax is lax). */
ax_value *ax_lib_open_alias(ax_interp *in, const ax_lib *lib);
/* The builtin value named lib->arg (jax.numpy is the jnp namespace). */
ax_value *ax_lib_open_builtin(ax_interp *in, const ax_lib *lib);
/* An empty module whose attributes are its submodules (jax.scipy). */
ax_value *ax_lib_open_package(ax_interp *in, const ax_lib *lib);
/* A module of the library's name holding the C functions of `fns` (ended by a NULL name): what
 * the openers of modules built in C return. */
struct ax_builtin_def;
ax_value *ax_lib_module_of(ax_interp *in, const ax_lib *lib, const struct ax_builtin_def *fns);

/* A member of another library: arg is "library:member" (jax.nn.initializers is nn's
 * initializers). */
ax_value *ax_lib_open_member(ax_interp *in, const ax_lib *lib);

/* The time module (stdlib/builtins_time.c): time, perf_counter, monotonic, sleep. */
ax_value *ax_lib_open_time(ax_interp *in, const ax_lib *lib);
/* jax.distributed (stdlib/builtins_parallel.c): initialize, shutdown. */
ax_value *ax_lib_open_distributed(ax_interp *in, const ax_lib *lib);
/* jax._devices (stdlib/builtins_parallel.c): the device functions stdlib/jax.ax binds, as
 * devices, device_count, process_index, device_put. */
ax_value *ax_lib_open_devices(ax_interp *in, const ax_lib *lib);

#endif

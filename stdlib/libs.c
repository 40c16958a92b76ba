/* The standard library's modules by name (see libs.h). Adding a module is one line here:
 * a file of stdlib/ (its dots as directories), another name for a module, a builtin value that
 * stands for one, a package of submodules, or a module built in C. */
#include "libs.h"

#include <stdio.h>
#include <string.h>

#include "builtins.h"
#include "builtins_lib.h"
#include "np.h"
#include "records.h"

ax_value *ax_lib_open_file(ax_interp *in, const ax_lib *lib) {
    ax_module *m = ax_interp_load_stdlib(in, lib->name);
    ax_value *v = m ? ax_value_module(m) : NULL;
    return v || !m ? v : ax_error_oom(in->cx);
}

ax_value *ax_lib_open_alias(ax_interp *in, const ax_lib *lib) {
    return ax_interp_import_value(in, lib->arg);
}

ax_value *ax_lib_open_builtin(ax_interp *in, const ax_lib *lib) {
    ax_value *v = ax_module_lookup(in->builtins, lib->arg);
    if (!v) return ax_error(in->cx, AX_ERR_IMPORT, "no module named '%s'", lib->name);
    return ax_value_retain(v);
}

ax_value *ax_lib_open_package(ax_interp *in, const ax_lib *lib) {
    ax_module *m = ax_interp_new_module(in, lib->name);
    ax_value *v = m ? ax_value_module(m) : NULL;
    return v || !m ? v : ax_error_oom(in->cx);
}

ax_value *ax_lib_module_of(ax_interp *in, const ax_lib *lib, const ax_builtin_def *fns) {
    ax_module *m = ax_interp_new_module(in, lib->name);
    if (!m) return NULL;
    for (const ax_builtin_def *d = fns; d->name; d++) {
        ax_value *v = ax_value_builtin(d->name, d->doc, d->fn, NULL);
        if (!v) return ax_error_oom(in->cx);
        ax_module_define_take(m, d->name, v);
    }
    ax_value *v = ax_value_module(m);
    return v ? v : ax_error_oom(in->cx);
}

ax_value *ax_lib_open_member(ax_interp *in, const ax_lib *lib) {
    const char *colon = strchr(lib->arg, ':');
    char owner[128];
    if (!colon || (size_t)(colon - lib->arg) >= sizeof owner)
        return ax_error(in->cx, AX_ERR_IMPORT, "no module named '%s'", lib->name);
    snprintf(owner, sizeof owner, "%.*s", (int)(colon - lib->arg), lib->arg);
    ax_value *m = ax_interp_import_value(in, owner);
    ax_value *v = m ? ax_getattr(in, m, colon + 1) : NULL;
    if (m) ax_value_release(m);
    return v;
}

const ax_lib ax_stdlib_libs[] = {
    /* JAX's namespaces */
    {"jax", ax_lib_open_file, NULL},
    {"jax.numpy", ax_lib_open_builtin, "jnp"},
    {"jax.lax", ax_lib_open_alias, "lax"},
    {"jax.random", ax_lib_open_alias, "random"},
    {"jax.nn", ax_lib_open_alias, "nn"},
    {"jax.nn.initializers", ax_lib_open_member, "nn:initializers"},
    {"jax.tree_util", ax_lib_open_file, NULL},
    {"jax.tree", ax_lib_open_file, NULL},
    {"jax.scipy", ax_lib_open_package, NULL},
    {"jax.scipy.special", ax_lib_open_file, NULL},
    {"jax.scipy.optimize", ax_lib_open_file, NULL},
    {"jax.scipy.signal", ax_lib_open_file, NULL},
    {"jax.scipy.integrate", ax_lib_open_file, NULL},
    {"jax.scipy.ndimage", ax_lib_open_file, NULL},
    {"jax.scipy.stats", ax_lib_open_file, NULL}, /* mode, rankdata, sem; the distributions: */
    {"jax.scipy.stats.bernoulli", ax_lib_open_file, NULL},
    {"jax.scipy.stats.beta", ax_lib_open_file, NULL},
    {"jax.scipy.stats.betabinom", ax_lib_open_file, NULL},
    {"jax.scipy.stats.binom", ax_lib_open_file, NULL},
    {"jax.scipy.stats.cauchy", ax_lib_open_file, NULL},
    {"jax.scipy.stats.chi2", ax_lib_open_file, NULL},
    {"jax.scipy.stats.dirichlet", ax_lib_open_file, NULL},
    {"jax.scipy.stats.expon", ax_lib_open_file, NULL},
    {"jax.scipy.stats.gamma", ax_lib_open_file, NULL},
    {"jax.scipy.stats.gennorm", ax_lib_open_file, NULL},
    {"jax.scipy.stats.geom", ax_lib_open_file, NULL},
    {"jax.scipy.stats.gumbel_l", ax_lib_open_file, NULL},
    {"jax.scipy.stats.gumbel_r", ax_lib_open_file, NULL},
    {"jax.scipy.stats.laplace", ax_lib_open_file, NULL},
    {"jax.scipy.stats.logistic", ax_lib_open_file, NULL},
    {"jax.scipy.stats.multinomial", ax_lib_open_file, NULL},
    {"jax.scipy.stats.multivariate_normal", ax_lib_open_file, NULL},
    {"jax.scipy.stats.nbinom", ax_lib_open_file, NULL},
    {"jax.scipy.stats.norm", ax_lib_open_file, NULL},
    {"jax.scipy.stats.pareto", ax_lib_open_file, NULL},
    {"jax.scipy.stats.poisson", ax_lib_open_file, NULL},
    {"jax.scipy.stats.t", ax_lib_open_file, NULL},
    {"jax.scipy.stats.truncnorm", ax_lib_open_file, NULL},
    {"jax.scipy.stats.uniform", ax_lib_open_file, NULL},
    {"jax.scipy.stats.vonmises", ax_lib_open_file, NULL},
    {"jax.scipy.stats.wrapcauchy", ax_lib_open_file, NULL},
    {"jax.scipy.linalg", ax_lib_open_alias, "scipy_linalg"},
    {"jax.numpy.linalg", ax_lib_open_builtin, "linalg"},
    {"jax.debug", ax_lib_open_file, NULL},
    {"jax.test_util", ax_lib_open_file, NULL},
    {"jax.distributed", ax_lib_open_distributed, NULL},
    {"jax._devices", ax_lib_open_devices, NULL},
    /* ax's own modules */
    {"lax", ax_lib_open_file, NULL},
    {"random", ax_lib_open_file, NULL},
    {"plot", ax_lib_open_file, NULL},
    {"nn", ax_lib_open_file, NULL},
    {"optim", ax_lib_open_file, NULL},
    {"scipy_linalg", ax_lib_open_file, NULL},
    {"jnp_more", ax_lib_open_file, NULL},
    /* Flax's and Optax's names for nn and optim (stdlib/flax.ax serves `from flax import
     * linen`) */
    {"flax", ax_lib_open_file, NULL},
    {"flax.linen", ax_lib_open_alias, "nn"},
    {"flax.linen.initializers", ax_lib_open_member, "nn:initializers"},
    {"optax", ax_lib_open_alias, "optim"},
    /* NumPy's name: one array namespace (np is jnp; np.random says how keys work) */
    {"numpy", ax_lib_open_builtin, "jnp"},
    {"numpy.linalg", ax_lib_open_builtin, "linalg"},
    {"matplotlib", ax_lib_open_package, NULL},
    {"matplotlib.pyplot", ax_lib_open_alias, "plot"},
    /* Python's */
    {"collections", ax_lib_open_collections, NULL},
    {"functools", ax_lib_open_file, NULL},
    {"operator", ax_lib_open_file, NULL},
    {"math", ax_lib_open_file, NULL},
    {"time", ax_lib_open_time, NULL},
    {NULL, NULL, NULL},
};

int ax_libs_open(ax_interp *in) {
    in->arrays = &ax_np_array_class;
    ax_interp_offer_libs(in, ax_stdlib_libs);
    /* more of jax.numpy, written in ax, opened when a program first uses one of its names */
    ax_interp_offer_lazy_builtins(in, "jnp_more");
    if (ax_builtins_register(in) < 0 || ax_error_pending(in->cx) ||
        ax_interp_run_stdlib(in, in->builtins, "prelude.ax") < 0) {
        if (!ax_error_pending(in->cx)) ax_error_oom(in->cx);
        return -1;
    }
    return 0;
}

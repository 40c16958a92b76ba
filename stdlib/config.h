/* jax.config: jax.config.update("jax_enable_x64", True) and reading an option as an
 * attribute (jax.config.jax_enable_x64). */
#ifndef AX_CONFIG_H
#define AX_CONFIG_H

#include "../lang/interp.h"

/* The `_jax_config` builtin: the config object jax.ax names jax.config. */
int ax_config_register(ax_interp *in);

#endif

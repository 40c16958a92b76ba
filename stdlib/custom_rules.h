/* custom_jvp and custom_vjp: functions with user-defined derivative rules (e.g. a numerically
 * stable log1pexp), honoured by grad/jvp/vjp and under jit and vmap of a differentiated
 * function. */
#ifndef AX_CUSTOM_RULES_H
#define AX_CUSTOM_RULES_H

#include "../lang/interp.h"

int ax_custom_rules_register(ax_interp *in);

#endif

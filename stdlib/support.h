/* What libraries written in ax (stdlib/nn.ax) need and the language does not offer: the
 * private builtins _record and _is_record (callable values with attributes), _with_state,
 * _state_get and _state_set (a dynamically scoped state slot), _kind (the kind of a value, for
 * Python's type() tests) and _raise (an error of a given kind). */
#ifndef AX_SUPPORT_H
#define AX_SUPPORT_H

#include "../lang/interp.h"

int ax_support_register(ax_interp *in);

#endif

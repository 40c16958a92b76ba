/* A cmocka fixture holding a runtime context and an interpreter, shared by the tests that run
 * ax programs (test_eval.c, test_np.c). */
#ifndef AX_TEST_INTERP_FIXTURE_H
#define AX_TEST_INTERP_FIXTURE_H

#include <stdio.h>
#include <stdlib.h>

#include "../../lang/interp.h"
#include "../../stdlib/libs.h"

typedef struct {
    ax_ctx *cx;
    ax_interp *in;
} fixture;

static int setup(void **state) {
    fixture *fx = calloc(1, sizeof *fx);
    fx->cx = ax_ctx_new();
    fx->in = ax_interp_new(fx->cx, NULL);
    if (fx->in && ax_libs_open(fx->in) < 0) {
        ax_interp_free(fx->in);
        fx->in = NULL;
    }
    if (!fx->in) {
        ax_error_print(fx->cx, stderr);
        return -1;
    }
    *state = fx;
    return 0;
}

static int teardown(void **state) {
    fixture *fx = *state;
    ax_interp_free(fx->in);
    ax_ctx_free(fx->cx);
    free(fx);
    return 0;
}

#endif

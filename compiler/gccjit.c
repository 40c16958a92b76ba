/* libgccjit through dlopen (see gccjit.h). */
#include "gccjit.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

ax_gccjit *ax_gccjit_open(char *why, size_t n) {
    void *h = dlopen("libgccjit.so.0", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        snprintf(why, n, "cannot load libgccjit: %s", dlerror());
        return NULL;
    }
    /* On failure the library stays loaded too: unloading it would turn what its
     * constructors allocated into leaks (see ax_gccjit_close). */
    ax_gccjit *api = calloc(1, sizeof *api);
    if (!api) {
        snprintf(why, n, "out of memory");
        return NULL;
    }
    api->handle = h;
#define AX_GCCJIT_LOAD(name)                                                                       \
    if (!(*(void **)&api->name = dlsym(h, #name))) {                                               \
        snprintf(why, n, "libgccjit lacks %s", #name);                                             \
        ax_gccjit_close(api);                                                                      \
        return NULL;                                                                               \
    }
    AX_GCCJIT_FUNCTIONS(AX_GCCJIT_LOAD)
#undef AX_GCCJIT_LOAD
    return api;
}

/* The library stays loaded: its globals own memory (leak checkers count it as reachable
 * only while they are mapped), and code it built never depends on it. */
void ax_gccjit_close(ax_gccjit *api) {
    free(api);
}

/* Where pictures go. In a notebook (cli/notebook.c) the interpreter has a display that
 * collects the pictures a block draws (plots, computation graphs), each with the position in
 * the block's output where it was shown; elsewhere a picture is written to a temporary file
 * whose path is printed. */
#ifndef AX_DISPLAY_H
#define AX_DISPLAY_H

#include <stddef.h>

#include "../lang/interp.h"

typedef struct ax_picture {
    char *format; /* "svg" or "png" */
    char *data;
    size_t len;
    char *alt; /* what the picture shows: "figure: Waves", "graph of tanh" */
    long at;   /* bytes of the captured output written before it was shown, or -1 */
} ax_picture;

typedef struct ax_display {
    ax_picture *items;
    int n, cap;
} ax_display;

/* Gives the interpreter a display (owned by it, as a hidden builtin). NULL + error on OOM. */
ax_display *ax_display_install(ax_interp *in);
/* The interpreter's display, or NULL outside a notebook. */
ax_display *ax_display_of(ax_interp *in);
/* Forgets the pictures collected so far. */
void ax_display_clear(ax_display *d);

/* Shows a picture (takes `data`, malloc'd): added to the display in a notebook, else written
 * to $TMPDIR/ax-<kind>-XXXXXX.<format> and its path printed on stdout. 0, or -1 + error. */
int ax_display_show_take(ax_interp *in, const char *kind, const char *format, char *data,
                         size_t len, const char *alt);

#endif

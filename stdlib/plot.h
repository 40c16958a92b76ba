/* The C side of the plot module (stdlib/plot.ax, also `import matplotlib.pyplot as plt`):
 * figures and axes as matplotlib has them, held by the interpreter (a hidden builtin), drawn
 * by gnuplot (stdlib/plot_gnuplot.c). Figure and Axes objects carry the methods
 * (ax.plot, ax.set_title, fig.savefig, ...); plot.ax writes pyplot's functions over them. */
#ifndef AX_PLOT_H
#define AX_PLOT_H

#include "builtins_lib.h"

/* The builtins plot.ax uses (_plt_figure, _plt_gca, ...), registered with the other tables
 * (builtins.c). */
extern const ax_builtin_def ax_builtins_plot[];

/* Creates the interpreter's figure state (a hidden builtin). 0, or -1 on out of memory. */
int ax_plot_register(ax_interp *in);

/* Shows every open figure (as plt.show() does) and closes them: what a notebook does after
 * each block. 0 when there was nothing to show or it was shown; -1 + error. */
int ax_plot_flush(ax_interp *in);

#endif

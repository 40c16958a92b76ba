/* Figures as data, and their rendering through gnuplot (pngcairo, svg and pdfcairo terminals).
 * stdlib/plot.c fills these structures from matplotlib-style calls; this module writes each
 * series to a data file, writes a gnuplot script that lays the axes out (multiplot, one
 * origin/size per axes) and runs gnuplot on it in a private temporary directory. */
#ifndef AX_PLOT_GNUPLOT_H
#define AX_PLOT_GNUPLOT_H

#include <stdbool.h>
#include <stdint.h>

#include "../runtime/context.h"

typedef enum {
    PLOT_LINE,     /* x, y: lines and/or markers */
    PLOT_SCATTER,  /* x, y, optional per-point colour values c and sizes s */
    PLOT_BAR,      /* x (centres), y (heights), w (widths), optional tick labels */
    PLOT_STEP,     /* hist(histtype='step'): x = edges (n + 1), y = heights (n) */
    PLOT_IMAGE,    /* z: rows x cols values through a colormap */
    PLOT_RGB,      /* z: rows x cols x 3 intensities in [0, 1] */
    PLOT_CONTOUR,  /* z on the grid gx (cols) x gy (rows) */
    PLOT_ERRORBAR, /* x, y, yerr and/or xerr (symmetric) */
    PLOT_FILL,     /* x, y (one edge), y2 (the other) */
    PLOT_HLINE,    /* axhline: y[0] across the axes */
    PLOT_VLINE,    /* axvline: x[0] across the axes */
} plot_kind;

typedef struct plot_series {
    plot_kind kind;
    int64_t n;
    double *x, *y, *y2, *xerr, *yerr, *c, *s, *w;
    char **ticks; /* bar: n category labels, or NULL */
    int64_t rows, cols;
    double *z, *gx, *gy;
    double extent[4]; /* imshow: left, right, bottom, top */
    bool has_extent, origin_lower;
    bool smooth;    /* imshow: interpolated pixels (interpolation='bilinear', ...), not blocks */
    char *label;    /* legend entry, or NULL */
    char color[16]; /* "#rrggbb", or "" for the next colour of the cycle */
    char line;      /* '-' solid, 'd' dashed, ':' dotted, '.' dash-dot, 0 none */
    char marker;    /* 'o' 's' '^' 'v' 'D' 'x' '+' '*' '.', 0 none */
    double linewidth, markersize, alpha;
    char cmap[24]; /* colormap name for images, contours, coloured scatters */
    double vmin, vmax;
    bool has_vmin, has_vmax;
    int nlevels;    /* contour: how many levels (auto), or the count of `levels` */
    double *levels; /* contour: explicit levels, or NULL */
} plot_series;

typedef struct plot_axes {
    int nrows, ncols, index; /* its cell of a subplot grid (index from 1, row-major) */
    char *title, *xlabel, *ylabel;
    double xlim[2], ylim[2];
    bool has_xlim[2], has_ylim[2]; /* each end may be set alone */
    bool xlog, ylog, grid, legend, colorbar;
    bool axis_off; /* axis('off'): no frame, ticks or axis labels */
    char legend_loc[24];
    plot_series *series;
    int nseries, cap;
} plot_axes;

typedef struct plot_figure {
    int number;
    double width, height, dpi; /* inches, dots per inch */
    char *suptitle;
    plot_axes *axes;
    int naxes, cap, current; /* current: the axes gca() returns, -1 when none */
} plot_figure;

void plot_series_free(plot_series *s);
void plot_axes_free(plot_axes *a);
void plot_figure_free(plot_figure *f);

/* Renders the figure as "png", "svg" or "pdf": *data gets the file's bytes (malloc'd, *len of
 * them). 0, or -1 + error (gnuplot missing or failing, I/O). */
int plot_render(ax_ctx *cx, const plot_figure *fig, const char *format, char **data, size_t *len);

/* The x (or y) range the axes show: the limits set, else the data's range with matplotlib's
 * 5% margins (none at the edges of bars, images and contours). */
void plot_axes_limits(const plot_axes *a, bool x, double out[2]);

/* The format savefig would use for a file name: "png", "svg", "pdf", or NULL. */
const char *plot_format_of_path(const char *path);

/* Colours: "#rrggbb" for a matplotlib colour name ("r", "C1", "tab:orange", "red", "#ff0000",
 * "0.5" grey); false when it is not one. */
bool plot_parse_color(const char *name, char out[16]);
/* The n-th colour of matplotlib's default cycle. */
const char *plot_cycle_color(int n);
/* Whether the colormap is known (viridis, gray, ...; "_r" reverses). */
bool plot_colormap_known(const char *name);

#endif

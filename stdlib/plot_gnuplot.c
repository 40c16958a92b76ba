/* Figures rendered by gnuplot (see plot_gnuplot.h). */
#include "plot_gnuplot.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../runtime/format.h"
#include "external.h"

/* ---------------------------------------------------------------- freeing */

void plot_series_free(plot_series *s) {
    free(s->x), free(s->y), free(s->y2), free(s->xerr), free(s->yerr);
    free(s->c), free(s->s), free(s->w), free(s->z), free(s->gx), free(s->gy);
    free(s->levels), free(s->label);
    if (s->ticks)
        for (int64_t i = 0; i < s->n; i++) free(s->ticks[i]);
    free(s->ticks);
}

void plot_axes_free(plot_axes *a) {
    for (int i = 0; i < a->nseries; i++) plot_series_free(&a->series[i]);
    free(a->series), free(a->title), free(a->xlabel), free(a->ylabel);
}

void plot_figure_free(plot_figure *f) {
    if (!f) return;
    for (int i = 0; i < f->naxes; i++) plot_axes_free(&f->axes[i]);
    free(f->axes);
    free(f->suptitle);
    free(f);
}

/* ---------------------------------------------------------------- colours */

static const char *const cycle[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                    "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};

const char *plot_cycle_color(int n) {
    return cycle[(n % 10 + 10) % 10];
}

static const struct {
    const char *name, *rgb;
} named_colors[] = {
    {"b", "#0000ff"},           {"g", "#008000"},          {"r", "#ff0000"},
    {"c", "#00bfbf"},           {"m", "#bf00bf"},          {"y", "#bfbf00"},
    {"k", "#000000"},           {"w", "#ffffff"},          {"blue", "#0000ff"},
    {"green", "#008000"},       {"red", "#ff0000"},        {"cyan", "#00ffff"},
    {"magenta", "#ff00ff"},     {"yellow", "#ffff00"},     {"black", "#000000"},
    {"white", "#ffffff"},       {"orange", "#ffa500"},     {"purple", "#800080"},
    {"brown", "#a52a2a"},       {"pink", "#ffc0cb"},       {"gray", "#808080"},
    {"grey", "#808080"},        {"olive", "#808000"},      {"navy", "#000080"},
    {"teal", "#008080"},        {"lime", "#00ff00"},       {"maroon", "#800000"},
    {"gold", "#ffd700"},        {"darkgreen", "#006400"},  {"darkblue", "#00008b"},
    {"darkred", "#8b0000"},     {"lightblue", "#add8e6"},  {"lightgray", "#d3d3d3"},
    {"lightgrey", "#d3d3d3"},   {"darkgray", "#a9a9a9"},   {"darkgrey", "#a9a9a9"},
    {"skyblue", "#87ceeb"},     {"salmon", "#fa8072"},     {"indigo", "#4b0082"},
    {"violet", "#ee82ee"},      {"crimson", "#dc143c"},    {"coral", "#ff7f50"},
    {"tomato", "#ff6347"},      {"steelblue", "#4682b4"},  {"royalblue", "#4169e1"},
    {"forestgreen", "#228b22"}, {"seagreen", "#2e8b57"},   {"darkorange", "#ff8c00"},
    {"tab:blue", "#1f77b4"},    {"tab:orange", "#ff7f0e"}, {"tab:green", "#2ca02c"},
    {"tab:red", "#d62728"},     {"tab:purple", "#9467bd"}, {"tab:brown", "#8c564b"},
    {"tab:pink", "#e377c2"},    {"tab:gray", "#7f7f7f"},   {"tab:grey", "#7f7f7f"},
    {"tab:olive", "#bcbd22"},   {"tab:cyan", "#17becf"},
};

static bool is_hex_color(const char *s) {
    if (s[0] != '#' || strlen(s) != 7) return false;
    for (int i = 1; i < 7; i++)
        if (!isxdigit((unsigned char)s[i])) return false;
    return true;
}

bool plot_parse_color(const char *name, char out[16]) {
    if (is_hex_color(name)) {
        for (int i = 0; i < 8; i++) out[i] = (char)tolower((unsigned char)name[i]);
        return true;
    }
    if (name[0] == 'C' && isdigit((unsigned char)name[1]) && !name[2]) {
        snprintf(out, 16, "%s", plot_cycle_color(name[1] - '0'));
        return true;
    }
    for (size_t i = 0; i < sizeof named_colors / sizeof *named_colors; i++)
        if (!strcasecmp(name, named_colors[i].name)) {
            snprintf(out, 16, "%s", named_colors[i].rgb);
            return true;
        }
    char *end;
    double grey = strtod(name, &end); /* "0.75": a grey level, as matplotlib reads it */
    if (end != name && !*end && grey >= 0 && grey <= 1) {
        int v = (int)lround(grey * 255);
        snprintf(out, 16, "#%02x%02x%02x", v, v, v);
        return true;
    }
    return false;
}

/* gnuplot's colour with transparency: "#AARRGGBB", AA = 255 * (1 - alpha). */
static void color_spec(char out[16], const char *rgb, double alpha) {
    int a = (int)lround(255 * (1 - (alpha < 0 ? 0 : alpha > 1 ? 1 : alpha)));
    snprintf(out, 16, "#%02x%s", a, rgb + 1);
}

/* ---------------------------------------------------------------- colormaps */

typedef struct colormap {
    const char *name;
    const char *stops; /* evenly spaced colours */
} colormap;

static const colormap colormaps[] = {
    {"viridis", "#440154 #472d7b #3b528b #2c728e #21918c #28ae80 #5ec962 #addc30 #fde725"},
    {"plasma", "#0d0887 #4c02a1 #7e03a8 #a92395 #cc4778 #e56b5d #f89540 #fdc328 #f0f921"},
    {"inferno", "#000004 #1f0c48 #550f6d #88226a #ba3655 #e35933 #f98e09 #f9cb35 #fcffa4"},
    {"magma", "#000004 #1c1044 #4f127b #812581 #b5367a #e55064 #fb8861 #fec287 #fcfdbf"},
    {"cividis", "#00224e #123570 #3b496c #575d6d #707173 #8a8678 #a59c74 #c3b369 #fee838"},
    {"gray", "#000000 #ffffff"},
    {"grey", "#000000 #ffffff"},
    {"Greys", "#ffffff #000000"},
    {"binary", "#ffffff #000000"},
    {"hot", "#0b0000 #ff0000 #ffff00 #ffffff"},
    {"jet", "#000080 #0000ff #0080ff #00ffff #80ff80 #ffff00 #ff8000 #ff0000 #800000"},
    {"coolwarm", "#3b4cc0 #8db0fe #dddcdc #f49a7b #b40426"},
    {"bwr", "#0000ff #ffffff #ff0000"},
    {"RdBu", "#67001f #d6604d #f7f7f7 #4393c3 #053061"},
    {"Blues", "#f7fbff #c6dbef #6baed6 #2171b5 #08306b"},
    {"Reds", "#fff5f0 #fcbba1 #fb6a4a #cb181d #67000d"},
    {"Greens", "#f7fcf5 #c7e9c0 #74c476 #238b45 #00441b"},
};

static const colormap *find_colormap(const char *name, bool *reversed) {
    size_t n = strlen(name);
    *reversed = n > 2 && !strcmp(name + n - 2, "_r");
    if (*reversed) n -= 2;
    for (size_t i = 0; i < sizeof colormaps / sizeof *colormaps; i++)
        if (strlen(colormaps[i].name) == n && !strncmp(colormaps[i].name, name, n))
            return &colormaps[i];
    return NULL;
}

bool plot_colormap_known(const char *name) {
    bool reversed;
    return find_colormap(name, &reversed) != NULL;
}

static void emit_palette(ax_strbuf *s, const char *name) {
    bool reversed = false;
    const colormap *cm = find_colormap(*name ? name : "viridis", &reversed);
    if (!cm) cm = &colormaps[0];
    int n = 0;
    const char *p = cm->stops;
    for (const char *q = p; *q; q++) n += *q == '#';
    ax_strbuf_append(s, "set palette defined (");
    for (int i = 0; i < n; i++) {
        int k = reversed ? n - 1 - i : i;
        ax_strbuf_appendf(s, "%s%d '%.7s'", i ? ", " : "", i, p + 8 * k);
    }
    ax_strbuf_append(s, ")\n");
}

/* ---------------------------------------------------------------- script text */

/* A gnuplot double-quoted string (escapes processed: backslash, quote and newline kept). */
static void quoted(ax_strbuf *s, const char *text) {
    ax_strbuf_append(s, "\"");
    for (const char *p = text; *p; p++) {
        if (*p == '"' || *p == '\\')
            ax_strbuf_appendf(s, "\\%c", *p);
        else if (*p == '\n')
            ax_strbuf_append(s, "\\n");
        else if ((unsigned char)*p >= 32 || *p == '\t')
            ax_strbuf_appendf(s, "%c", *p);
    }
    ax_strbuf_append(s, "\"");
}

/* A file name in single quotes (nothing is processed; a quote is doubled). */
static void path_quoted(ax_strbuf *s, const char *dir, const char *name) {
    ax_strbuf_append(s, "'");
    for (const char *p = dir; *p; p++) ax_strbuf_append(s, *p == '\'' ? "''" : (char[]){*p, 0});
    ax_strbuf_appendf(s, "/%s'", name);
}

static void number(ax_strbuf *s, double v) {
    if (isfinite(v))
        ax_strbuf_appendf(s, "%.9g", v);
    else
        ax_strbuf_append(s, "NaN");
}

static void range(ax_strbuf *s, const char *axis, const double lim[2]) {
    ax_strbuf_appendf(s, "set %srange [", axis);
    number(s, lim[0]);
    ax_strbuf_append(s, ":");
    number(s, lim[1]);
    ax_strbuf_append(s, "]\n");
}

/* gnuplot point types for matplotlib markers (filled where matplotlib fills). */
static int point_type(char marker) {
    switch (marker) {
    case 's':
        return 5;
    case '^':
        return 9;
    case 'v':
        return 11;
    case 'D':
        return 13;
    case 'x':
        return 2;
    case '+':
        return 1;
    case '*':
        return 3;
    default:
        return 7; /* 'o', '.' */
    }
}

static int dash_type(char line) {
    return line == 'd' ? 2 : line == ':' ? 3 : line == '.' ? 4 : 1;
}

static void line_style(ax_strbuf *s, const plot_series *se) {
    char c[16];
    color_spec(c, se->color, se->alpha);
    ax_strbuf_appendf(s, " lc rgb '%s' lw %.3g dt %d", c, se->linewidth, dash_type(se->line));
}

static void marker_style(ax_strbuf *s, const plot_series *se) {
    double ps = se->markersize / 7.0 * (se->marker == '.' ? 0.5 : 1.0);
    ax_strbuf_appendf(s, " pt %d ps %.3g", point_type(se->marker), ps);
}

static void title_of(ax_strbuf *s, const plot_series *se) {
    if (se->label && se->label[0] && se->label[0] != '_') {
        ax_strbuf_append(s, " title ");
        quoted(s, se->label);
    } else {
        ax_strbuf_append(s, " notitle");
    }
}

/* ---------------------------------------------------------------- data files */

typedef struct render {
    ax_ctx *cx;
    char *dir;
    ax_strbuf script;
    int files;
} render;

/* Writes `data` to a new file of the render's directory; its name goes into *name. */
static int data_file(render *r, ax_strbuf *data, char name[32]) {
    snprintf(name, 32, "d%d.dat", r->files++);
    char *path = ax_ext_join(r->cx, r->dir, name);
    int rc = path ? ax_ext_write_file(r->cx, path, data->data ? data->data : "", data->len) : -1;
    free(path);
    return rc;
}

/* Columns x y [more...] per point, one point a line. */
static void columns_text(ax_strbuf *d, int64_t n, const double *const *cols, int ncols) {
    for (int64_t i = 0; i < n; i++) {
        for (int k = 0; k < ncols; k++) {
            if (k) ax_strbuf_append(d, " ");
            number(d, cols[k][i]);
        }
        ax_strbuf_append(d, "\n");
    }
}

static void line_text(ax_strbuf *d, const plot_series *se) {
    columns_text(d, se->n, (const double *const[]){se->x, se->y}, 2);
}

static void fill_text(ax_strbuf *d, const plot_series *se) {
    columns_text(d, se->n, (const double *const[]){se->x, se->y, se->y2}, 3);
}

/* x y, then the optional columns a and b that are given. */
static void xy_text(ax_strbuf *d, const plot_series *se, const double *a, const double *b) {
    const double *cols[4] = {se->x, se->y, a, b};
    int n = 2;
    if (a) cols[n++] = a;
    if (b) cols[n++] = b;
    columns_text(d, se->n, cols, n);
}

/* x y [s] [c]: per-point sizes and colour values when given. */
static void scatter_text(ax_strbuf *d, const plot_series *se) {
    xy_text(d, se, se->s, se->c);
}

/* x y [xerr] [yerr] */
static void errorbar_text(ax_strbuf *d, const plot_series *se) {
    xy_text(d, se, se->xerr, se->yerr);
}

static void bar_text(ax_strbuf *d, const plot_series *se) {
    for (int64_t i = 0; i < se->n; i++) {
        number(d, se->x[i]), ax_strbuf_append(d, " ");
        number(d, se->y[i]), ax_strbuf_append(d, " ");
        number(d, se->w[i]);
        if (se->ticks) {
            ax_strbuf_append(d, " \"");
            for (const char *p = se->ticks[i]; *p; p++)
                ax_strbuf_append(d, *p == '"' ? "'" : *p == '\n' ? " " : (char[]){*p, 0});
            ax_strbuf_append(d, "\"");
        }
        ax_strbuf_append(d, "\n");
    }
}

/* A histogram's outline: (e0, 0), (e0, h0), (e1, h1), ..., (en, h(n-1)), (en, 0). */
static void step_text(ax_strbuf *d, const plot_series *se) {
    int64_t n = se->n;
    for (int64_t i = -1; i <= n; i++) {
        double x = se->x[i < 0 ? 0 : i], y = i < 0 || i == n ? 0 : se->y[i];
        if (i == n) {
            number(d, x), ax_strbuf_append(d, " "), number(d, se->y[n - 1]);
            ax_strbuf_append(d, "\n");
        }
        number(d, x), ax_strbuf_append(d, " "), number(d, y), ax_strbuf_append(d, "\n");
    }
}

/* An image as (x, y, value) or (x, y, r, g, b) per pixel, rows separated by blank lines. */
static void image_text(ax_strbuf *d, const plot_series *se) {
    double l = -0.5, rt = (double)se->cols - 0.5, b = -0.5, t = (double)se->rows - 0.5;
    if (se->has_extent) l = se->extent[0], rt = se->extent[1], b = se->extent[2], t = se->extent[3];
    double dx = (rt - l) / (double)se->cols, dy = (t - b) / (double)se->rows;
    int channels = se->kind == PLOT_RGB ? 3 : 1;
    for (int64_t i = 0; i < se->rows; i++) {
        /* row 0 is at the top unless origin='lower'; without an extent, pixel (i, j) is at
         * (j, i) and the y axis runs downwards (see axes_settings) */
        double y = !se->has_extent    ? (double)i
                   : se->origin_lower ? b + ((double)i + 0.5) * dy
                                      : t - ((double)i + 0.5) * dy;
        for (int64_t j = 0; j < se->cols; j++) {
            double x = se->has_extent ? l + ((double)j + 0.5) * dx : (double)j;
            number(d, x), ax_strbuf_append(d, " "), number(d, y);
            for (int k = 0; k < channels; k++) {
                ax_strbuf_append(d, " ");
                number(d, se->z[(i * se->cols + j) * channels + k]);
            }
            ax_strbuf_append(d, "\n");
        }
        ax_strbuf_append(d, "\n");
    }
}

/* A contour's surface as a grid of (x, y, z) lines, rows separated by blank lines. */
static void grid_text(ax_strbuf *d, const plot_series *se) {
    for (int64_t i = 0; i < se->rows; i++) {
        for (int64_t j = 0; j < se->cols; j++) {
            number(d, se->gx[j]), ax_strbuf_append(d, " ");
            number(d, se->gy[i]), ax_strbuf_append(d, " ");
            number(d, se->z[i * se->cols + j]), ax_strbuf_append(d, "\n");
        }
        ax_strbuf_append(d, "\n");
    }
}

typedef void (*series_text_fn)(ax_strbuf *d, const plot_series *se);

/* Writes a series' data, as `text` lays it out, to a new file of the render's directory. */
static int series_file(render *r, series_text_fn text, const plot_series *se, char name[32]) {
    ax_strbuf d;
    ax_strbuf_init(&d);
    text(&d, se);
    int rc = data_file(r, &d, name);
    ax_strbuf_free(&d);
    return rc;
}

/* Contour lines are computed first, by gnuplot itself, into a table file per contour series
 * (x y level, one block per line); the axes then plot those tables as lines. */
static int contour_table(render *r, const plot_series *se, char table[32]) {
    char grid[32];
    if (series_file(r, grid_text, se, grid) < 0) return -1;
    snprintf(table, 32, "t%d.dat", r->files++);
    ax_strbuf *s = &r->script;
    ax_strbuf_append(s, "set table ");
    path_quoted(s, r->dir, table);
    ax_strbuf_append(s, "\nset contour base\nunset surface\nset cntrparam levels ");
    if (se->levels) {
        ax_strbuf_append(s, "discrete ");
        for (int i = 0; i < se->nlevels; i++) {
            if (i) ax_strbuf_append(s, ",");
            number(s, se->levels[i]);
        }
    } else {
        ax_strbuf_appendf(s, "auto %d", se->nlevels > 0 ? se->nlevels : 7);
    }
    ax_strbuf_append(s, "\nsplot ");
    path_quoted(s, r->dir, grid);
    ax_strbuf_append(s, " using 1:2:3 with lines notitle\nunset table\nreset\n");
    return 0;
}

/* ---------------------------------------------------------------- limits */

/* A running [lo, hi] over finite values; `sticky` ends take no margin (bars stand on 0,
 * images and contours fill the axes exactly), as matplotlib's sticky edges do. */
typedef struct span {
    double lo, hi;
    bool sticky_lo, sticky_hi;
} span;

static void span_add(span *sp, double v, bool log) {
    if (!isfinite(v) || (log && v <= 0)) return;
    sp->lo = fmin(sp->lo, v), sp->hi = fmax(sp->hi, v);
}

static void span_add_all(span *sp, const double *d, int64_t n, const double *err, double sign,
                         bool log) {
    for (int64_t i = 0; d && i < n; i++) span_add(sp, d[i] + (err ? sign * err[i] : 0), log);
}

/* Bars and histograms stand on 0: that end is sticky when all of them are on one side. */
static void span_add_sticky(span *sp, double v) {
    span_add(sp, v, false);
    if (v == sp->lo) sp->sticky_lo = true;
    if (v == sp->hi) sp->sticky_hi = true;
}

static void series_span(const plot_series *se, bool x, bool log, span *sp) {
    const double *d = x ? se->x : se->y;
    switch (se->kind) {
    case PLOT_HLINE:
    case PLOT_VLINE:
        return;
    case PLOT_IMAGE:
    case PLOT_RGB: {
        double l = -0.5, r = (double)se->cols - 0.5, b = -0.5, t = (double)se->rows - 0.5;
        if (se->has_extent)
            l = se->extent[0], r = se->extent[1], b = se->extent[2], t = se->extent[3];
        span_add_sticky(sp, x ? fmin(l, r) : fmin(b, t));
        span_add_sticky(sp, x ? fmax(l, r) : fmax(b, t));
        return;
    }
    case PLOT_CONTOUR:
        d = x ? se->gx : se->gy;
        for (int64_t i = 0; i < (x ? se->cols : se->rows); i++) span_add_sticky(sp, d[i]);
        return;
    case PLOT_BAR:
        for (int64_t i = 0; i < se->n; i++) {
            if (x) {
                span_add(sp, se->x[i] - se->w[i] / 2, log);
                span_add(sp, se->x[i] + se->w[i] / 2, log);
            } else {
                span_add(sp, se->y[i], log);
            }
        }
        if (!x && !log) span_add_sticky(sp, 0);
        return;
    case PLOT_STEP:
        span_add_all(sp, d, x ? se->n + 1 : se->n, NULL, 0, log);
        if (!x && !log) span_add_sticky(sp, 0);
        return;
    case PLOT_ERRORBAR: {
        const double *err = x ? se->xerr : se->yerr;
        span_add_all(sp, d, se->n, err, -1, log);
        span_add_all(sp, d, se->n, err, 1, log);
        return;
    }
    case PLOT_FILL:
        span_add_all(sp, d, se->n, NULL, 0, log);
        if (!x) span_add_all(sp, se->y2, se->n, NULL, 0, log);
        return;
    default:
        span_add_all(sp, d, se->n, NULL, 0, log);
        return;
    }
}

void plot_axes_limits(const plot_axes *a, bool x, double out[2]) {
    bool log = x ? a->xlog : a->ylog;
    span sp = {INFINITY, -INFINITY, false, false};
    for (int i = 0; i < a->nseries; i++) series_span(&a->series[i], x, log, &sp);
    double lo = sp.lo, hi = sp.hi;
    if (!(lo <= hi)) {
        lo = log ? 1 : 0, hi = log ? 10 : 1;
    } else if (log) { /* margins of 5% in log space */
        double l = log10(lo), h = log10(hi), m = l == h ? 0.05 : (h - l) * 0.05;
        if (!sp.sticky_lo) lo = pow(10, l - m);
        if (!sp.sticky_hi) hi = pow(10, h + m);
    } else {
        double m = lo == hi ? (lo ? fabs(lo) * 0.055 : 0.055) : (hi - lo) * 0.05;
        if (!sp.sticky_lo || lo == hi) lo -= m;
        if (!sp.sticky_hi || lo == hi) hi += m;
    }
    const double *lim = x ? a->xlim : a->ylim;
    const bool *has = x ? a->has_xlim : a->has_ylim;
    out[0] = has[0] ? lim[0] : lo;
    out[1] = has[1] ? lim[1] : hi;
    const plot_series *img = NULL;
    for (int i = 0; i < a->nseries && !img; i++)
        if (a->series[i].kind == PLOT_IMAGE || a->series[i].kind == PLOT_RGB) img = &a->series[i];
    if (!x && img && !img->has_extent && !img->origin_lower && !has[0] && !has[1]) {
        double t = out[0]; /* row 0 at the top: the y axis runs downwards */
        out[0] = out[1], out[1] = t;
    }
}

/* The range of the values drawn through the palette. */
static void palette_range(const plot_series *se, double out[2]) {
    span sp = {INFINITY, -INFINITY, false, false};
    if (se->kind == PLOT_IMAGE)
        span_add_all(&sp, se->z, se->rows * se->cols, NULL, 0, false);
    else if (se->kind == PLOT_CONTOUR && se->levels)
        span_add_all(&sp, se->levels, se->nlevels, NULL, 0, false);
    else if (se->kind == PLOT_CONTOUR)
        span_add_all(&sp, se->z, se->rows * se->cols, NULL, 0, false);
    else
        span_add_all(&sp, se->c, se->n, NULL, 0, false);
    if (!(sp.lo <= sp.hi)) sp.lo = 0, sp.hi = 1;
    if (sp.lo == sp.hi) sp.lo -= 0.5, sp.hi += 0.5;
    out[0] = se->has_vmin ? se->vmin : sp.lo;
    out[1] = se->has_vmax ? se->vmax : sp.hi;
}

/* ---------------------------------------------------------------- one axes */

static const struct {
    const char *mpl, *gp;
} legend_places[] = {
    {"best", "top right"},
    {"upper right", "top right"},
    {"upper left", "top left"},
    {"lower left", "bottom left"},
    {"lower right", "bottom right"},
    {"right", "right center"},
    {"center left", "left center"},
    {"center right", "right center"},
    {"lower center", "bottom center"},
    {"upper center", "top center"},
    {"center", "center center"},
};

static const char *legend_place(const char *loc) {
    for (size_t i = 0; i < sizeof legend_places / sizeof *legend_places; i++)
        if (!strcmp(loc, legend_places[i].mpl)) return legend_places[i].gp;
    return "top right";
}

/* The first series drawn through the palette (images, contours, coloured scatters). */
static const plot_series *palette_series(const plot_axes *a) {
    for (int i = 0; i < a->nseries; i++) {
        const plot_series *se = &a->series[i];
        if (se->kind == PLOT_IMAGE || se->kind == PLOT_CONTOUR ||
            (se->kind == PLOT_SCATTER && se->c))
            return se;
    }
    return NULL;
}

static const plot_series *image_series(const plot_axes *a) {
    for (int i = 0; i < a->nseries; i++)
        if (a->series[i].kind == PLOT_IMAGE || a->series[i].kind == PLOT_RGB) return &a->series[i];
    return NULL;
}

/* Axes settings: place, labels, ranges, scales, key, palette. */
static void axes_settings(render *r, const plot_figure *f, const plot_axes *a) {
    ax_strbuf *s = &r->script;
    double top = f->suptitle ? 0.93 : 1.0;
    int col = (a->index - 1) % a->ncols, row = (a->index - 1) / a->ncols;
    double w = 1.0 / a->ncols, h = top / a->nrows;
    const plot_series *img = image_series(a);
    ax_strbuf_appendf(s, "reset\nset origin %.6g,%.6g\nset size %s%.6g,%.6g\n", col * w,
                      top - (row + 1) * h, img ? "ratio -1 " : "", w, h);
    if (a->title) ax_strbuf_append(s, "set title "), quoted(s, a->title), ax_strbuf_append(s, "\n");
    if (a->xlabel && !a->axis_off)
        ax_strbuf_append(s, "set xlabel "), quoted(s, a->xlabel), ax_strbuf_append(s, "\n");
    if (a->ylabel && !a->axis_off)
        ax_strbuf_append(s, "set ylabel "), quoted(s, a->ylabel), ax_strbuf_append(s, "\n");
    double xl[2], yl[2];
    plot_axes_limits(a, true, xl);
    plot_axes_limits(a, false, yl);
    range(s, "x", xl);
    range(s, "y", yl);
    if (a->xlog) ax_strbuf_append(s, "set logscale x 10\n");
    if (a->ylog) ax_strbuf_append(s, "set logscale y 10\n");
    if (a->grid) ax_strbuf_append(s, "set grid lc rgb '#b0b0b0' lw 0.8 dt 1\n");
    if (a->legend)
        ax_strbuf_appendf(s, "set key %s reverse Left box opaque samplen 2 spacing 1.1 width 1\n",
                          legend_place(a->legend_loc));
    else
        ax_strbuf_append(s, "unset key\n");
    const plot_series *pal = palette_series(a);
    if (pal) {
        emit_palette(s, pal->cmap);
        double cb[2];
        palette_range(pal, cb);
        range(s, "cb", cb);
    }
    if (!a->colorbar) ax_strbuf_append(s, "unset colorbox\n");
    ax_strbuf_append(s, a->axis_off ? "unset border\nunset tics\n"
                                    : "set border 15 lw 0.8\nset tics out scale 0.6\n");
    for (int i = 0; i < a->nseries; i++) {
        const plot_series *se = &a->series[i];
        if (se->kind != PLOT_HLINE && se->kind != PLOT_VLINE) continue;
        if (se->kind == PLOT_HLINE) {
            ax_strbuf_append(s, "set arrow from graph 0, first ");
            number(s, se->y[0]);
            ax_strbuf_append(s, " to graph 1, first ");
            number(s, se->y[0]);
        } else {
            ax_strbuf_append(s, "set arrow from first ");
            number(s, se->x[0]);
            ax_strbuf_append(s, ", graph 0 to first ");
            number(s, se->x[0]);
            ax_strbuf_append(s, ", graph 1");
        }
        ax_strbuf_append(s, " nohead front");
        line_style(s, se);
        ax_strbuf_append(s, "\n");
    }
}

/* A filled series (bars, a band): its data, the `using ... with ...` part, and its colour
 * with its transparency. */
static int filled_term(render *r, const plot_series *se, series_text_fn text, const char *style) {
    char name[32], c[16];
    int rc = series_file(r, text, se, name);
    path_quoted(&r->script, r->dir, name);
    color_spec(c, se->color, 1.0);
    ax_strbuf_appendf(&r->script, " %s fs transparent solid %.3g noborder lc rgb '%s'", style,
                      se->alpha, c);
    return rc;
}

/* One term of the plot command for a series (nothing for axhline/axvline). */
static int series_term(render *r, const plot_series *se, const char *table, bool *first) {
    if (se->kind == PLOT_HLINE || se->kind == PLOT_VLINE) return 0;
    ax_strbuf *s = &r->script;
    char name[32], c[16];
    int rc = 0;
    ax_strbuf_append(s, *first ? "plot " : ", \\\n     ");
    *first = false;
    switch (se->kind) {
    case PLOT_LINE:
        rc = series_file(r, line_text, se, name);
        path_quoted(s, r->dir, name);
        ax_strbuf_appendf(s, " using 1:2 with %s",
                          !se->marker ? "lines"
                          : !se->line ? "points"
                                      : "linespoints");
        line_style(s, se);
        if (se->marker) marker_style(s, se);
        break;
    case PLOT_SCATTER:
        rc = series_file(r, scatter_text, se, name);
        path_quoted(s, r->dir, name);
        ax_strbuf_appendf(s, " using 1:2%s%s with points pt %d", se->s ? ":3" : "",
                          se->c ? (se->s ? ":4" : ":3") : "", point_type(se->marker));
        if (se->s)
            ax_strbuf_append(s, " ps variable");
        else
            ax_strbuf_appendf(s, " ps %.3g", se->markersize / 7.0);
        color_spec(c, se->color, se->alpha);
        if (se->c)
            ax_strbuf_append(s, " lc palette");
        else
            ax_strbuf_appendf(s, " lc rgb '%s'", c);
        break;
    case PLOT_BAR:
        rc = filled_term(r, se, bar_text,
                         se->ticks ? "using 1:2:3:xtic(4) with boxes" : "using 1:2:3 with boxes");
        break;
    case PLOT_STEP:
        rc = series_file(r, step_text, se, name);
        path_quoted(s, r->dir, name);
        ax_strbuf_append(s, " using 1:2 with steps");
        line_style(s, se);
        break;
    case PLOT_IMAGE:
    case PLOT_RGB:
        rc = series_file(r, image_text, se, name);
        path_quoted(s, r->dir, name);
        ax_strbuf_append(s, se->kind == PLOT_RGB ? " using 1:2:3:4:5 with rgbimage"
                                                 : " using 1:2:3 with image");
        break;
    case PLOT_CONTOUR:
        path_quoted(s, r->dir, table);
        ax_strbuf_append(s, " using 1:2:3 with lines");
        if (se->color[0]) {
            line_style(s, se);
        } else {
            ax_strbuf_appendf(s, " lc palette lw %.3g", se->linewidth);
        }
        break;
    case PLOT_ERRORBAR: {
        bool xe = se->xerr != NULL, ye = se->yerr != NULL;
        rc = series_file(r, errorbar_text, se, name);
        path_quoted(s, r->dir, name);
        const char *kind = xe && ye ? "xy" : xe ? "x" : "y";
        ax_strbuf_appendf(s, " using 1:2:3%s with %serror%s", xe && ye ? ":4" : "", kind,
                          se->line ? "lines" : "bars");
        line_style(s, se);
        if (se->marker)
            marker_style(s, se);
        else
            ax_strbuf_append(s, " pt 7 ps 0");
        break;
    }
    case PLOT_FILL:
        rc = filled_term(r, se, fill_text, "using 1:2:3 with filledcurves");
        break;
    default:
        break;
    }
    title_of(s, se);
    return rc;
}

static int axes_plot(render *r, const plot_figure *f, const plot_axes *a, char (*tables)[32]) {
    axes_settings(r, f, a);
    ax_strbuf *s = &r->script;
    if (image_series(a) || palette_series(a)) ax_strbuf_append(s, "set style fill solid\n");
    bool first = true;
    for (int i = 0; i < a->nseries; i++)
        if (series_term(r, &a->series[i], tables[i], &first) < 0) return -1;
    if (first) ax_strbuf_append(s, "plot NaN notitle"); /* empty axes */
    ax_strbuf_append(s, "\n");
    return 0;
}

/* ---------------------------------------------------------------- the figure */

const char *plot_format_of_path(const char *path) {
    const char *dot = strrchr(path, '.');
    if (!dot || strchr(dot, '/')) return NULL;
    static const char *const formats[] = {"png", "svg", "pdf"};
    for (size_t i = 0; i < 3; i++)
        if (!strcasecmp(dot + 1, formats[i])) return formats[i];
    return NULL;
}

static void terminal(ax_strbuf *s, const plot_figure *f, const char *format) {
    double w = f->width * f->dpi, h = f->height * f->dpi;
    if (!strcmp(format, "pdf"))
        ax_strbuf_appendf(s, "set terminal pdfcairo size %.4gin,%.4gin noenhanced font 'sans,10'\n",
                          f->width, f->height);
    else if (!strcmp(format, "svg")) /* sizes in pixels: 10 points at 100 dpi */
        ax_strbuf_appendf(s,
                          "set terminal svg size %d,%d noenhanced font 'sans,%d' "
                          "background '#ffffff'\n",
                          (int)lround(w), (int)lround(h), (int)lround(13.9 * f->dpi / 100));
    else
        ax_strbuf_appendf(s,
                          "set terminal pngcairo size %d,%d noenhanced font 'sans,%d' "
                          "background '#ffffff'\n",
                          (int)lround(w), (int)lround(h), (int)lround(10 * f->dpi / 100));
}

static int write_script(render *r, const plot_figure *f, const char *format, const char *out) {
    ax_strbuf *s = &r->script;
    int maxseries = 1;
    for (int i = 0; i < f->naxes; i++)
        if (f->axes[i].nseries > maxseries) maxseries = f->axes[i].nseries;
    char(*tables)[32] = calloc((size_t)maxseries * (size_t)(f->naxes ? f->naxes : 1), 32);
    if (!tables) return ax_error_oom(r->cx), -1;
    int rc = 0;
    for (int i = 0; i < f->naxes && !rc; i++)
        for (int k = 0; k < f->axes[i].nseries && !rc; k++)
            if (f->axes[i].series[k].kind == PLOT_CONTOUR)
                rc = contour_table(r, &f->axes[i].series[k], tables[i * maxseries + k]);
    terminal(s, f, format);
    ax_strbuf_append(s, "set output ");
    path_quoted(s, r->dir, out);
    ax_strbuf_append(s, "\nset encoding utf8\nset multiplot");
    if (f->suptitle) ax_strbuf_append(s, " title "), quoted(s, f->suptitle);
    ax_strbuf_append(s, "\n");
    for (int i = 0; i < f->naxes && !rc; i++)
        rc = axes_plot(r, f, &f->axes[i], tables + i * maxseries);
    if (f->naxes == 0) ax_strbuf_append(s, "unset border\nunset tics\nplot NaN notitle\n");
    ax_strbuf_append(s, "unset multiplot\nunset output\n");
    free(tables);
    return rc;
}

/* gnuplot's SVG embeds each image at its own size, which browsers enlarge smoothly; matplotlib
 * draws an enlarged image as blocks of pixels unless asked to interpolate. Marks the <image>
 * elements (one per imshow, in drawing order) of blocky images to be enlarged as blocks (the
 * first MAX_MARKED_IMAGES of a figure). Replaces *data; 0, or -1 + error. */
#define MAX_MARKED_IMAGES 1024

static int pixelate_images(ax_ctx *cx, const plot_figure *fig, char **data, size_t *len) {
    static const char tag[] = "<image ",
                      style[] = "style='image-rendering:optimizeSpeed;image-rendering:pixelated' ";
    bool blocky[MAX_MARKED_IMAGES];
    int nimages = 0, nblocky = 0;
    for (int i = 0; i < fig->naxes; i++)
        for (int k = 0; k < fig->axes[i].nseries && nimages < MAX_MARKED_IMAGES; k++) {
            const plot_series *se = &fig->axes[i].series[k];
            if (se->kind != PLOT_IMAGE && se->kind != PLOT_RGB) continue;
            nblocky += blocky[nimages++] = !se->smooth;
        }
    if (!nblocky) return 0;
    char *out = malloc(*len + (size_t)nblocky * (sizeof style - 1) + 1);
    if (!out) return ax_error_oom(cx), -1;
    size_t n = 0;
    const char *p = *data, *end = *data + *len;
    for (int img = 0; img < nimages; img++) {
        const char *at = memmem(p, (size_t)(end - p), tag, sizeof tag - 1);
        if (!at) break;
        at += sizeof tag - 1;
        memcpy(out + n, p, (size_t)(at - p)), n += (size_t)(at - p);
        if (blocky[img]) memcpy(out + n, style, sizeof style - 1), n += sizeof style - 1;
        p = at;
    }
    memcpy(out + n, p, (size_t)(end - p)), n += (size_t)(end - p);
    out[n] = 0;
    free(*data);
    *data = out, *len = n;
    return 0;
}

int plot_render(ax_ctx *cx, const plot_figure *fig, const char *format, char **data, size_t *len) {
    char out[16];
    snprintf(out, sizeof out, "figure.%s", format);
    render r = {.cx = cx, .dir = ax_ext_tmpdir_new(cx)};
    ax_strbuf_init(&r.script);
    char *script_path = NULL, *log_path = NULL, *out_path = NULL;
    int rc = -1;
    if (!r.dir || write_script(&r, fig, format, out) < 0) goto done;
    script_path = ax_ext_join(cx, r.dir, "figure.gp");
    log_path = ax_ext_join(cx, r.dir, "gnuplot.log");
    out_path = ax_ext_join(cx, r.dir, out);
    if (!script_path || !log_path || !out_path ||
        ax_ext_write_file(cx, script_path, r.script.data, r.script.len) < 0)
        goto done;
    char *argv[] = {(char *)"gnuplot", script_path, NULL};
    if (ax_ext_run(cx, &ax_ext_gnuplot, argv, log_path) < 0) goto done;
    *data = ax_ext_read_file(cx, out_path, len);
    rc = !*data ? -1 : !strcmp(format, "svg") ? pixelate_images(cx, fig, data, len) : 0;
    if (rc) free(*data), *data = NULL;
done:
    free(script_path), free(log_path), free(out_path);
    ax_strbuf_free(&r.script);
    ax_ext_tmpdir_free(r.dir);
    return rc;
}

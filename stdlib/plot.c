/* matplotlib's figures and axes for the plot module (see plot.h).
 *
 * The state (the open figures, which one is current) is the one mutable thing of the module:
 * matplotlib's API is a state machine, and programs port only if `plt.plot(...)` draws into
 * the current axes. It lives in an object held by the interpreter's builtins, so it is per
 * interpreter and freed with it. Figure and Axes values are handles (a figure number and an
 * axes index) into that state. */
#include "plot.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "builtins_lib.h"
#include "display.h"
#include "external.h"
#include "plot_gnuplot.h"

#define STATE_NAME "__plot__"
/* Beyond this many points a figure shown in a notebook is a PNG rather than an SVG. */
#define SVG_MAX_POINTS 5000

typedef struct plot_state {
    plot_figure **figs;
    int n, cap;
    int current; /* index into figs, or -1 */
} plot_state;

/* A Figure (axes < 0) or an Axes value. */
typedef struct plot_handle {
    ax_value *state; /* the state object (a reference) */
    int number;
    int axes;
} plot_handle;

/* ---------------------------------------------------------------- the state */

static void state_free(void *payload) {
    plot_state *st = payload;
    for (int i = 0; i < st->n; i++) plot_figure_free(st->figs[i]);
    free(st->figs);
    free(st);
}

static void state_format(ax_strbuf *out, void *payload) {
    ax_strbuf_appendf(out, "<plot state: %d figures>", ((plot_state *)payload)->n);
}

static const ax_object_type state_type = {
    .name = "plot state", .free = state_free, .format = state_format};

static ax_value *state_value(ax_interp *in) {
    ax_value *v = ax_module_lookup(in->builtins, STATE_NAME);
    if (v && v->kind == AX_V_OBJECT && v->obj.type == &state_type) return v;
    return ax_error(in->cx, AX_ERR_RUNTIME, "the plot module's state is missing");
}

static plot_state *state_of(ax_interp *in) {
    ax_value *v = state_value(in);
    return v ? v->obj.payload : NULL;
}

static int find_figure(const plot_state *st, int number) {
    for (int i = 0; i < st->n; i++)
        if (st->figs[i]->number == number) return i;
    return -1;
}

static plot_figure *new_figure(ax_interp *in, plot_state *st, int number) {
    if (st->n == st->cap) {
        int cap = st->cap ? 2 * st->cap : 4;
        plot_figure **figs = realloc(st->figs, (size_t)cap * sizeof *figs);
        if (!figs) return ax_error_oom(in->cx);
        st->figs = figs;
        st->cap = cap;
    }
    plot_figure *f = calloc(1, sizeof *f);
    if (!f) return ax_error_oom(in->cx);
    f->number = number;
    if (number <= 0) { /* matplotlib's next number: one more than the largest open one */
        f->number = 1;
        for (int i = 0; i < st->n; i++)
            if (st->figs[i]->number >= f->number) f->number = st->figs[i]->number + 1;
    }
    f->width = 6.4, f->height = 4.8, f->dpi = 100;
    f->current = -1;
    st->figs[st->n] = f;
    st->current = st->n++;
    return f;
}

static plot_figure *current_figure(ax_interp *in, plot_state *st) {
    return st->current >= 0 ? st->figs[st->current] : new_figure(in, st, 0);
}

static void close_figure(plot_state *st, int i) {
    plot_figure_free(st->figs[i]);
    memmove(st->figs + i, st->figs + i + 1, (size_t)(st->n - i - 1) * sizeof *st->figs);
    st->n--;
    st->current = st->n - 1; /* matplotlib makes the most recent remaining figure current */
}

/* The axes in cell `index` of an nrows x ncols grid: the existing one, or a new one. */
static int figure_axes_at(ax_interp *in, plot_figure *f, int nrows, int ncols, int index) {
    for (int i = 0; i < f->naxes; i++)
        if (f->axes[i].nrows == nrows && f->axes[i].ncols == ncols && f->axes[i].index == index)
            return f->current = i;
    if (f->naxes == f->cap) {
        int cap = f->cap ? 2 * f->cap : 4;
        plot_axes *axes = realloc(f->axes, (size_t)cap * sizeof *axes);
        if (!axes) return ax_error_oom(in->cx), -1;
        f->axes = axes;
        f->cap = cap;
    }
    f->axes[f->naxes] = (plot_axes){.nrows = nrows, .ncols = ncols, .index = index};
    snprintf(f->axes[f->naxes].legend_loc, sizeof f->axes[0].legend_loc, "best");
    return f->current = f->naxes++;
}

static int current_axes(ax_interp *in, plot_figure *f) {
    return f->current >= 0 ? f->current : figure_axes_at(in, f, 1, 1, 1);
}

/* ---------------------------------------------------------------- handles */

static void handle_free(void *payload) {
    plot_handle *h = payload;
    ax_value_release(h->state);
    free(h);
}

static void figure_format(ax_strbuf *out, void *payload) {
    ax_strbuf_appendf(out, "<Figure %d>", ((plot_handle *)payload)->number);
}

static void axes_format(ax_strbuf *out, void *payload) {
    plot_handle *h = payload;
    ax_strbuf_appendf(out, "<Axes %d of Figure %d>", h->axes + 1, h->number);
}

static ax_value *figure_getattr(ax_interp *in, ax_value *self, const char *name);
static ax_value *axes_getattr(ax_interp *in, ax_value *self, const char *name);

static const ax_object_type figure_type = {
    .name = "Figure", .free = handle_free, .format = figure_format, .getattr = figure_getattr};
static const ax_object_type axes_type = {
    .name = "Axes", .free = handle_free, .format = axes_format, .getattr = axes_getattr};

static ax_value *handle_value(ax_interp *in, int number, int axes) {
    ax_value *state = state_value(in);
    if (!state) return NULL;
    plot_handle *h = malloc(sizeof *h);
    if (!h) return ax_error_oom(in->cx);
    *h = (plot_handle){ax_value_retain(state), number, axes};
    ax_value *v = ax_value_object(axes < 0 ? &figure_type : &axes_type, h);
    return v ? v : ax_error_oom(in->cx);
}

/* The figure a handle refers to, or NULL + ValueError when it was closed. */
static plot_figure *handle_figure(ax_interp *in, const plot_handle *h) {
    plot_state *st = ((ax_value *)h->state)->obj.payload;
    int i = find_figure(st, h->number);
    if (i < 0)
        return ax_error(in->cx, AX_ERR_VALUE,
                        "figure %d was closed: draw into a new figure (plt.figure())", h->number);
    return st->figs[i];
}

static plot_axes *handle_axes(ax_interp *in, const plot_handle *h) {
    plot_figure *f = handle_figure(in, h);
    if (!f) return NULL;
    if (h->axes >= f->naxes)
        return ax_error(in->cx, AX_ERR_VALUE, "these axes were cleared from figure %d", h->number);
    return &f->axes[h->axes];
}

/* The Axes (or Figure) a method was called on: `self->builtin->data` is the object. */
static plot_handle *method_handle(ax_value *self) {
    return self->builtin->data->obj.payload;
}

/* A bound method: a builtin whose data is the object. */
typedef struct method_def {
    const char *name;
    ax_builtin_fn fn;
    const char *doc;
} method_def;

static ax_value *bind_method(ax_interp *in, ax_value *self, const method_def *methods,
                             const char *name) {
    for (const method_def *m = methods; m->name; m++)
        if (!strcmp(m->name, name)) {
            ax_value *v = ax_value_builtin(m->name, m->doc, m->fn, ax_value_retain(self));
            return v ? v : ax_error_oom(in->cx);
        }
    return NULL;
}

/* ---------------------------------------------------------------- reading arguments */

static ax_value *none(void) {
    return ax_none();
}

/* A concrete array argument as doubles (row-major): malloc'd, NULL + error otherwise. */
static double *doubles_of(ax_interp *in, ax_value *v, const char *what, int *ndim, int64_t *shape) {
    ax_array *a = ax_value_to_array(in, v, what);
    if (!a) return NULL;
    if (!ax_np_is_concrete(a)) {
        ax_array_release(a);
        return ax_error(in->cx, AX_ERR_CONCRETIZATION,
                        "%s must be a concrete array to be drawn, but it is traced (by jit, "
                        "vmap or grad): plot outside the transformed function",
                        what);
    }
    double *d = malloc((size_t)(a->size ? a->size : 1) * sizeof *d);
    if (!d) {
        ax_array_release(a);
        return ax_error_oom(in->cx);
    }
    for (int64_t i = 0; i < a->size; i++) d[i] = ax_array_get_f64(a, i);
    if (ndim) *ndim = a->ndim;
    if (shape) memcpy(shape, a->shape, (size_t)a->ndim * sizeof *shape);
    ax_array_release(a);
    return d;
}

/* A 1-D array argument of `n` entries (a scalar is repeated). n < 0: any length, set. */
static double *vector_of(ax_interp *in, ax_value *v, const char *fname, const char *what,
                         int64_t *n) {
    int ndim;
    int64_t shape[AX_MAX_RANK];
    char desc[96];
    snprintf(desc, sizeof desc, "%s() argument '%s'", fname, what);
    double *d = doubles_of(in, v, desc, &ndim, shape);
    if (!d) return NULL;
    int64_t len = ndim == 0 ? 1 : shape[0];
    if (ndim > 1) {
        free(d);
        return ax_error(in->cx, AX_ERR_SHAPE, "%s must be 1-D, got %d dimensions", desc, ndim);
    }
    if (*n < 0) {
        *n = len;
        return d;
    }
    if (ndim == 0 && *n != 1) { /* a scalar stands for all points */
        double x = d[0];
        free(d);
        if (!(d = malloc((size_t)(*n ? *n : 1) * sizeof *d))) return ax_error_oom(in->cx);
        for (int64_t i = 0; i < *n; i++) d[i] = x;
        return d;
    }
    if (len != *n) {
        free(d);
        return ax_error(in->cx, AX_ERR_SHAPE, "%s has %lld entries, but there are %lld points",
                        desc, (long long)len, (long long)*n);
    }
    return d;
}

static bool is_str(const ax_value *v) {
    return v && v->kind == AX_V_STR;
}

static bool given(const ax_value *v) {
    return v && v->kind != AX_V_NONE;
}

static char *dup_str(ax_interp *in, const char *s) {
    char *d = strdup(s);
    return d ? d : ax_error_oom(in->cx);
}

/* A string argument (or None / absent: *out stays NULL), copied. */
static bool text_arg(ax_interp *in, ax_value *v, const char *what, char **out) {
    if (!given(v)) return true;
    if (!is_str(v)) {
        char d[96];
        ax_value_describe(d, sizeof d, v);
        ax_error(in->cx, AX_ERR_TYPE, "%s must be a string, got %s", what, d);
        return false;
    }
    free(*out);
    return (*out = dup_str(in, v->str)) != NULL;
}

static bool color_arg(ax_interp *in, ax_value *v, const char *fname, char out[16]) {
    if (!given(v)) return true;
    if (!is_str(v)) {
        ax_error(in->cx, AX_ERR_TYPE,
                 "%s(): a colour is a name like 'r', 'C1', 'tab:blue' or "
                 "'#1f77b4'",
                 fname);
        return false;
    }
    if (plot_parse_color(v->str, out)) return true;
    ax_error(in->cx, AX_ERR_VALUE,
             "%s(): '%s' is not a colour (use a name like 'red', 'k', 'C1', 'tab:blue', a grey "
             "level '0.5' or '#rrggbb')",
             fname, v->str);
    return false;
}

static bool cmap_arg(ax_interp *in, ax_value *v, const char *fname, char out[24]) {
    if (!given(v)) return true;
    if (!is_str(v) || !plot_colormap_known(v->str)) {
        ax_error(in->cx, AX_ERR_VALUE,
                 "%s(): unknown colormap%s%s%s (known: viridis, plasma, inferno, magma, cividis, "
                 "gray, Greys, binary, hot, jet, coolwarm, bwr, RdBu, Blues, Reds, Greens; "
                 "'_r' reverses)",
                 fname, is_str(v) ? " '" : "", is_str(v) ? v->str : "", is_str(v) ? "'" : "");
        return false;
    }
    snprintf(out, 24, "%s", v->str);
    return true;
}

/* Line styles: '-', '--', ':', '-.', 'solid', 'dashed', 'dotted', 'dashdot', 'None'. */
static bool linestyle_arg(ax_interp *in, ax_value *v, const char *fname, char *out) {
    if (!given(v)) return true;
    static const struct {
        const char *name;
        char code;
    } styles[] = {{"-", '-'},     {"--", 'd'},     {":", ':'},      {"-.", '.'},
                  {"solid", '-'}, {"dashed", 'd'}, {"dotted", ':'}, {"dashdot", '.'},
                  {"None", 0},    {"none", 0},     {"", 0},         {" ", 0}};
    for (size_t i = 0; is_str(v) && i < sizeof styles / sizeof *styles; i++)
        if (!strcmp(v->str, styles[i].name)) {
            *out = styles[i].code;
            return true;
        }
    ax_error(in->cx, AX_ERR_VALUE,
             "%s(): linestyle must be '-', '--', ':', '-.' (or solid, dashed, dotted, dashdot, "
             "None)",
             fname);
    return false;
}

static bool marker_arg(ax_interp *in, ax_value *v, const char *fname, char *out) {
    if (!given(v)) return true;
    if (is_str(v) && (!strcmp(v->str, "None") || !strcmp(v->str, "none") || !v->str[0])) {
        *out = 0;
        return true;
    }
    if (is_str(v) && strlen(v->str) == 1 && strchr("os^vDdx+*.", v->str[0])) {
        *out = v->str[0] == 'd' ? 'D' : v->str[0];
        return true;
    }
    ax_error(in->cx, AX_ERR_VALUE, "%s(): marker must be one of o s ^ v D x + * . (or None)",
             fname);
    return false;
}

/* matplotlib's format strings: "r--", "bo", "k:", "g^-", "C2.". */
static bool parse_fmt(ax_interp *in, const char *fmt, plot_series *se) {
    bool has_line = false, has_marker = false;
    for (const char *p = fmt; *p; p++) {
        if (p[0] == '-' && p[1] == '-')
            se->line = 'd', has_line = true, p++;
        else if (p[0] == '-' && p[1] == '.')
            se->line = '.', has_line = true, p++;
        else if (*p == '-')
            se->line = '-', has_line = true;
        else if (*p == ':')
            se->line = ':', has_line = true;
        else if (*p == 'C' && p[1] >= '0' && p[1] <= '9')
            snprintf(se->color, sizeof se->color, "%s", plot_cycle_color(p[1] - '0')), p++;
        else if (strchr("bgrcmykw", *p) && *p)
            plot_parse_color((char[]){*p, 0}, se->color);
        else if (strchr("os^vDdx+*.", *p) && *p)
            se->marker = *p == 'd' ? 'D' : *p, has_marker = true;
        else {
            ax_error(in->cx, AX_ERR_VALUE,
                     "plot(): cannot read the format string '%s' at '%c' (colours bgrcmykw or "
                     "C0-C9, markers o s ^ v D x + * ., lines - -- : -.)",
                     fmt, *p);
            return false;
        }
    }
    if (has_marker && !has_line) se->line = 0; /* "o" alone: markers, no line */
    return true;
}

/* The style keywords every drawing method shares. */
static const char *const style_names[] = {"color",     "c",     "linestyle", "ls",
                                          "linewidth", "lw",    "marker",    "markersize",
                                          "ms",        "label", "alpha",     NULL};

static ax_value *kw_either(const ax_args *a, const char *x, const char *y) {
    ax_value *v = ax_bi_kwarg(a, x);
    return v ? v : ax_bi_kwarg(a, y);
}

static bool style_args(ax_interp *in, const ax_args *a, const char *fname, plot_series *se,
                       bool c_is_color) {
    double lw = se->linewidth, ms = se->markersize, alpha = se->alpha;
    ax_value *color = ax_bi_kwarg(a, "color");
    if (!color && c_is_color) color = ax_bi_kwarg(a, "c");
    char label_what[64];
    snprintf(label_what, sizeof label_what, "%s() label", fname);
    return color_arg(in, color, fname, se->color) &&
           linestyle_arg(in, kw_either(a, "linestyle", "ls"), fname, &se->line) &&
           marker_arg(in, ax_bi_kwarg(a, "marker"), fname, &se->marker) &&
           ax_bi_double(in, kw_either(a, "linewidth", "lw"), "linewidth", lw, &se->linewidth) &&
           ax_bi_double(in, kw_either(a, "markersize", "ms"), "markersize", ms, &se->markersize) &&
           ax_bi_double(in, ax_bi_kwarg(a, "alpha"), "alpha", alpha, &se->alpha) &&
           text_arg(in, ax_bi_kwarg(a, "label"), label_what, &se->label);
}

static plot_series new_series(plot_kind kind) {
    return (plot_series){.kind = kind,
                         .line = '-',
                         .linewidth = 1.5,
                         .markersize = 6,
                         .alpha = 1.0,
                         .cmap = "viridis"};
}

/* Keyword names: the style names plus a method's own, NULL-terminated, in `out`. */
static const char *const *with_style(const char **out, const char *const *own) {
    int n = 0;
    for (int i = 0; own && own[i]; i++) out[n++] = own[i];
    for (int i = 0; style_names[i]; i++) out[n++] = style_names[i];
    out[n] = NULL;
    return out;
}

/* ---------------------------------------------------------------- adding series */

/* Matplotlib keeps two colour cycles per axes: lines (plot, scatter, errorbar) and patches
 * (bar, hist, fill_between). */
static int cycle_position(const plot_axes *ax, bool patches) {
    int k = 0;
    for (int i = 0; i < ax->nseries; i++) {
        plot_kind kind = ax->series[i].kind;
        bool patch = kind == PLOT_BAR || kind == PLOT_STEP || kind == PLOT_FILL;
        bool cycled = kind != PLOT_IMAGE && kind != PLOT_RGB && kind != PLOT_CONTOUR &&
                      kind != PLOT_HLINE && kind != PLOT_VLINE;
        if (cycled && patch == patches && !ax->series[i].c) k++;
    }
    return k;
}

/* Appends the series (taking what it holds); frees it on failure. */
static int add_series(ax_interp *in, plot_axes *ax, plot_series *se) {
    if (!se->color[0] && se->kind != PLOT_IMAGE && se->kind != PLOT_RGB &&
        se->kind != PLOT_CONTOUR) {
        bool patch = se->kind == PLOT_BAR || se->kind == PLOT_STEP || se->kind == PLOT_FILL;
        bool fixed = se->kind == PLOT_HLINE || se->kind == PLOT_VLINE;
        snprintf(se->color, sizeof se->color, "%s",
                 fixed ? "#000000" : plot_cycle_color(cycle_position(ax, patch)));
    }
    if (ax->nseries == ax->cap) {
        int cap = ax->cap ? 2 * ax->cap : 4;
        plot_series *s = realloc(ax->series, (size_t)cap * sizeof *s);
        if (!s) {
            plot_series_free(se);
            return ax_error_oom(in->cx), -1;
        }
        ax->series = s;
        ax->cap = cap;
    }
    ax->series[ax->nseries++] = *se;
    return 0;
}

static double *range_vector(ax_interp *in, int64_t n) {
    double *d = malloc((size_t)(n ? n : 1) * sizeof *d);
    if (!d) return ax_error_oom(in->cx);
    for (int64_t i = 0; i < n; i++) d[i] = (double)i;
    return d;
}

/* One plot() group: x (or NULL), y (1-D or 2-D: one line per column) and a format string. */
static int plot_group(ax_interp *in, plot_axes *ax, const ax_args *a, ax_value *xv, ax_value *yv,
                      const char *fmt) {
    int ydim, xdim = 1;
    int64_t yshape[AX_MAX_RANK], xshape[AX_MAX_RANK];
    double *y = doubles_of(in, yv, "plot() y", &ydim, yshape);
    double *x = y && xv ? doubles_of(in, xv, "plot() x", &xdim, xshape) : NULL;
    int rc = -1;
    if (!y || (xv && !x)) goto done;
    int64_t n = ydim == 0 ? 1 : yshape[0], ncols = ydim == 2 ? yshape[1] : 1;
    if (ydim > 2 || xdim > 1) {
        ax_error(in->cx, AX_ERR_SHAPE,
                 "plot(): x must be 1-D and y 1-D or 2-D (one line per "
                 "column), got %d and %d dimensions",
                 xdim, ydim);
        goto done;
    }
    if (x && (xdim == 0 ? 1 : xshape[0]) != n) {
        ax_error(in->cx, AX_ERR_SHAPE,
                 "plot(): x and y must have the same first dimension, but have %lld and %lld "
                 "entries",
                 (long long)(xdim == 0 ? 1 : xshape[0]), (long long)n);
        goto done;
    }
    for (int64_t k = 0; k < ncols; k++) {
        plot_series se = new_series(PLOT_LINE);
        se.n = n;
        se.x = x ? malloc((size_t)(n ? n : 1) * sizeof *se.x) : range_vector(in, n);
        se.y = malloc((size_t)(n ? n : 1) * sizeof *se.y);
        if (!se.x || !se.y) {
            plot_series_free(&se);
            ax_error_oom(in->cx);
            goto done;
        }
        for (int64_t i = 0; i < n; i++) {
            if (x) se.x[i] = x[i];
            se.y[i] = y[i * ncols + k];
        }
        if ((fmt && !parse_fmt(in, fmt, &se)) || !style_args(in, a, "plot", &se, true) ||
            add_series(in, ax, &se) < 0) {
            plot_series_free(&se);
            goto done;
        }
    }
    rc = 0;
done:
    free(x);
    free(y);
    return rc;
}

/* The axes of a method call. */
static plot_axes *self_axes(ax_interp *in, ax_value *self) {
    return handle_axes(in, method_handle(self));
}

static ax_value *m_plot(ax_interp *in, ax_value *self, const ax_args *a) {
    const char *names[24];
    if (!ax_bi_keywords(in, a, "plot", with_style(names, NULL))) return NULL;
    plot_axes *ax = self_axes(in, self);
    if (!ax) return NULL;
    if (a->n == 0) return ax_error(in->cx, AX_ERR_TYPE, "plot() needs y, or x and y");
    for (int i = 0; i < a->n;) {
        ax_value *first = a->pos[i];
        if (is_str(first))
            return ax_error(in->cx, AX_ERR_TYPE, "plot(): a format string must follow the data");
        ax_value *second = i + 1 < a->n && !is_str(a->pos[i + 1]) ? a->pos[i + 1] : NULL;
        i += second ? 2 : 1;
        const char *fmt = i < a->n && is_str(a->pos[i]) ? a->pos[i++]->str : NULL;
        if (plot_group(in, ax, a, second ? first : NULL, second ? second : first, fmt) < 0)
            return NULL;
    }
    return none();
}

/* scatter(x, y, s=None, c=None, marker='o', cmap=None, vmin=None, vmax=None, ...) */
static ax_value *m_scatter(ax_interp *in, ax_value *self, const ax_args *a) {
    const char *names[32];
    static const char *const own[] = {"x", "y", "s", "cmap", "vmin", "vmax", NULL};
    ax_value *v[32];
    if (!ax_bi_parse(in, a, "scatter", with_style(names, own), 3, v)) return NULL;
    if (!ax_bi_required(in, v[0], "scatter", "x") || !ax_bi_required(in, v[1], "scatter", "y"))
        return NULL;
    plot_axes *ax = self_axes(in, self);
    if (!ax) return NULL;
    plot_series se = new_series(PLOT_SCATTER);
    se.n = -1;
    se.line = 0;
    se.marker = 'o';
    ax_value *c = ax_bi_kwarg(a, "c");
    bool c_values = given(c) && !is_str(c);
    if (!(se.x = vector_of(in, v[0], "scatter", "x", &se.n)) ||
        !(se.y = vector_of(in, v[1], "scatter", "y", &se.n)) ||
        (given(v[2]) && !(se.s = vector_of(in, v[2], "scatter", "s", &se.n))) ||
        (c_values && !(se.c = vector_of(in, c, "scatter", "c", &se.n))) ||
        (is_str(c) && !color_arg(in, c, "scatter", se.color)) ||
        !style_args(in, a, "scatter", &se, false) || !cmap_arg(in, v[3], "scatter", se.cmap) ||
        !ax_bi_double(in, v[4], "vmin", 0, &se.vmin) ||
        !ax_bi_double(in, v[5], "vmax", 0, &se.vmax))
        goto fail;
    se.has_vmin = given(v[4]), se.has_vmax = given(v[5]);
    if (se.s) /* matplotlib's s is an area in points^2; gnuplot's size is a diameter */
        for (int64_t i = 0; i < se.n; i++) se.s[i] = sqrt(fabs(se.s[i])) / 8.0;
    if (!se.s) se.markersize = 6;
    if (add_series(in, ax, &se) < 0) return NULL;
    return none();
fail:
    plot_series_free(&se);
    return NULL;
}

/* bar(x, height, width=0.8, align='center', ...): x may be category names. */
static ax_value *m_bar(ax_interp *in, ax_value *self, const ax_args *a) {
    const char *names[32];
    static const char *const own[] = {"x", "height", "width", "align", "tick_label", NULL};
    ax_value *v[32];
    if (!ax_bi_parse(in, a, "bar", with_style(names, own), 3, v)) return NULL;
    if (!ax_bi_required(in, v[0], "bar", "x") || !ax_bi_required(in, v[1], "bar", "height"))
        return NULL;
    plot_axes *ax = self_axes(in, self);
    if (!ax) return NULL;
    plot_series se = new_series(PLOT_BAR);
    se.n = -1;
    ax_value *labels = v[4];
    bool categories = (v[0]->kind == AX_V_LIST || v[0]->kind == AX_V_TUPLE) && v[0]->n > 0 &&
                      is_str(v[0]->items[0]);
    if (categories) labels = v[0];
    if (!(se.y = vector_of(in, v[1], "bar", "height", &se.n))) goto fail;
    if (categories ? !(se.x = range_vector(in, se.n))
                   : !(se.x = vector_of(in, v[0], "bar", "x", &se.n)))
        goto fail;
    if (categories && v[0]->n != se.n) {
        ax_error(in->cx, AX_ERR_SHAPE, "bar(): %d names for %lld bars", v[0]->n, (long long)se.n);
        goto fail;
    }
    if (given(v[2])) {
        if (!(se.w = vector_of(in, v[2], "bar", "width", &se.n))) goto fail;
    } else {
        if (!(se.w = malloc((size_t)(se.n ? se.n : 1) * sizeof *se.w))) goto oom;
        for (int64_t i = 0; i < se.n; i++) se.w[i] = 0.8;
    }
    if (is_str(v[3]) && !strcmp(v[3]->str, "edge"))
        for (int64_t i = 0; i < se.n; i++) se.x[i] += se.w[i] / 2;
    if (given(labels)) {
        if ((labels->kind != AX_V_LIST && labels->kind != AX_V_TUPLE) || labels->n != se.n) {
            ax_error(in->cx, AX_ERR_VALUE, "bar(): tick_label needs one name per bar");
            goto fail;
        }
        if (!(se.ticks = calloc((size_t)(se.n ? se.n : 1), sizeof *se.ticks))) goto oom;
        for (int64_t i = 0; i < se.n; i++) {
            ax_strbuf t;
            ax_strbuf_init(&t);
            ax_value_format(&t, labels->items[i]);
            se.ticks[i] = t.data ? t.data : strdup("");
            if (!se.ticks[i]) goto oom;
        }
    }
    if (!style_args(in, a, "bar", &se, true) || add_series(in, ax, &se) < 0) goto fail;
    return none();
oom:
    ax_error_oom(in->cx);
fail:
    plot_series_free(&se);
    return NULL;
}

/* The counts of hist(): bins equal-width bins over [lo, hi] (the last one closed), or the
 * given edges. */
static void histogram(const double *x, int64_t n, const double *edges, int64_t nbins,
                      double *counts) {
    for (int64_t b = 0; b < nbins; b++) counts[b] = 0;
    for (int64_t i = 0; i < n; i++) {
        if (!(x[i] >= edges[0] && x[i] <= edges[nbins])) continue;
        int64_t lo = 0, hi = nbins; /* the last edge <= x[i] */
        while (hi - lo > 1) {
            int64_t mid = (lo + hi) / 2;
            if (edges[mid] <= x[i])
                lo = mid;
            else
                hi = mid;
        }
        counts[lo] += 1;
    }
}

static ax_value *float_vector_value(ax_interp *in, const double *d, int64_t n) {
    ax_dtype t = in->cx->x64 ? AX_F64 : AX_F32;
    ax_array *arr = ax_array_new(in->cx, t, 1, &n);
    if (!arr) return NULL;
    for (int64_t i = 0; i < n; i++) {
        if (t == AX_F64)
            ((double *)ax_array_data(arr))[i] = d[i];
        else
            ((float *)ax_array_data(arr))[i] = (float)d[i];
    }
    ax_value *v = ax_value_array(arr);
    return v ? v : ax_error_oom(in->cx);
}

/* hist(x, bins=10, range=None, density=False, histtype='bar', ...) -> (counts, edges, None) */
static ax_value *m_hist(ax_interp *in, ax_value *self, const ax_args *a) {
    const char *names[32];
    static const char *const own[] = {"x", "bins", "range", "density", "histtype", NULL};
    ax_value *v[32];
    if (!ax_bi_parse(in, a, "hist", with_style(names, own), 2, v)) return NULL;
    if (!ax_bi_required(in, v[0], "hist", "x")) return NULL;
    plot_axes *ax = self_axes(in, self);
    if (!ax) return NULL;
    int64_t n = -1, nbins = 10;
    double *x = NULL, *edges = NULL;
    bool density = false, step = is_str(v[4]) && !strcmp(v[4]->str, "step");
    plot_series se = new_series(step ? PLOT_STEP : PLOT_BAR);
    ax_value *result = NULL;
    int ndim;
    int64_t shape[AX_MAX_RANK];
    if (!(x = doubles_of(in, v[0], "hist() x", &ndim, shape))) goto done;
    n = 1;
    for (int i = 0; i < ndim; i++)
        n *= shape[i]; /* matplotlib flattens 2-D input per column;
                          one histogram of everything here */
    if (given(v[1]) && !(v[1]->kind == AX_V_ARRAY && v[1]->arr->ndim == 0)) {
        nbins = -1;
        if (!(edges = vector_of(in, v[1], "hist", "bins", &nbins))) goto done;
        nbins--;
        if (nbins < 1) {
            ax_error(in->cx, AX_ERR_VALUE, "hist(): bins needs at least two edges");
            goto done;
        }
    } else {
        if (!ax_bi_int(in, v[1], "bins", 10, &nbins)) goto done;
        if (nbins < 1 || nbins > 100000) {
            ax_error(in->cx, AX_ERR_VALUE, "hist(): bins must be between 1 and 100000");
            goto done;
        }
        double lo = INFINITY, hi = -INFINITY;
        for (int64_t i = 0; i < n; i++)
            if (isfinite(x[i])) lo = fmin(lo, x[i]), hi = fmax(hi, x[i]);
        if (given(v[2])) {
            int64_t two = 2;
            double *r = vector_of(in, v[2], "hist", "range", &two);
            if (!r) goto done;
            lo = r[0], hi = r[1];
            free(r);
        }
        if (!(lo <= hi)) lo = 0, hi = 1; /* no finite data: matplotlib's default range */
        if (lo == hi) lo -= 0.5, hi += 0.5;
        if (!(edges = malloc((size_t)(nbins + 1) * sizeof *edges))) goto oom;
        for (int64_t b = 0; b <= nbins; b++) edges[b] = lo + (hi - lo) * (double)b / (double)nbins;
    }
    if (!ax_bi_bool(in, v[3], "density", false, &density)) goto done;
    se.n = nbins;
    se.y = malloc((size_t)nbins * sizeof *se.y);
    se.x = malloc((size_t)(nbins + 1) * sizeof *se.x);
    se.w = malloc((size_t)nbins * sizeof *se.w);
    if (!se.x || !se.y || !se.w) goto oom;
    histogram(x, n, edges, nbins, se.y);
    double total = 0;
    for (int64_t b = 0; b < nbins; b++) total += se.y[b];
    for (int64_t b = 0; b < nbins; b++) {
        se.w[b] = edges[b + 1] - edges[b];
        if (density && total > 0) se.y[b] /= total * se.w[b];
        se.x[b] = step ? edges[b] : edges[b] + se.w[b] / 2;
    }
    se.x[nbins] = edges[nbins];
    ax_value *counts = float_vector_value(in, se.y, nbins);
    ax_value *edge_value = counts ? float_vector_value(in, edges, nbins + 1) : NULL;
    if (!edge_value) {
        ax_value_release(counts);
        goto done;
    }
    result = ax_value_tuple(3, (ax_value *[]){counts, edge_value, ax_none()});
    if (!result) goto oom;
    if (!style_args(in, a, "hist", &se, true)) {
        ax_value_release(result);
        result = NULL;
        goto done; /* frees se */
    }
    if (add_series(in, ax, &se) < 0) { /* it freed se */
        ax_value_release(result);
        result = NULL;
    }
    se = (plot_series){0}; /* the axes own it now */
    goto done;
oom:
    ax_error_oom(in->cx);
done:
    plot_series_free(&se);
    free(x);
    free(edges);
    return result;
}

/* Whether matplotlib draws an image upsampled with this interpolation as blocks of pixels:
 * its default ('antialiased', nearest when enlarged 3 times or more, as images on a page are)
 * and 'nearest'. Others ('bilinear', 'bicubic', ...) blend neighbouring pixels. */
static bool is_block_interpolation(const char *name) {
    static const char *const blocks[] = {"none", "nearest", "antialiased", "auto", "data"};
    for (size_t i = 0; i < sizeof blocks / sizeof *blocks; i++)
        if (!strcmp(name, blocks[i])) return true;
    return false;
}

/* imshow(X, cmap=None, vmin=None, vmax=None, origin='upper', extent=None, aspect=None,
 * interpolation=None): 2-D values through a colormap, or (H, W, 3|4) colours. */
static ax_value *m_imshow(ax_interp *in, ax_value *self, const ax_args *a) {
    static const char *const names[] = {"X",      "cmap",   "vmin",   "vmax",
                                        "origin", "extent", "aspect", "interpolation",
                                        "alpha",  "label",  NULL};
    ax_value *v[10];
    if (!ax_bi_parse(in, a, "imshow", names, 2, v)) return NULL;
    if (!ax_bi_required(in, v[0], "imshow", "X")) return NULL;
    plot_axes *ax = self_axes(in, self);
    if (!ax) return NULL;
    int ndim;
    int64_t shape[AX_MAX_RANK];
    plot_series se = new_series(PLOT_IMAGE);
    bool is_int = v[0]->kind == AX_V_ARRAY && !ax_dtype_is_float(v[0]->arr->dtype);
    if (!(se.z = doubles_of(in, v[0], "imshow() X", &ndim, shape))) return NULL;
    if (!(ndim == 2 || (ndim == 3 && (shape[2] == 3 || shape[2] == 4)))) {
        ax_error(in->cx, AX_ERR_SHAPE,
                 "imshow(): X must be 2-D (values) or (height, width, 3 or 4) (colours), got %d "
                 "dimensions",
                 ndim);
        goto fail;
    }
    se.rows = shape[0], se.cols = shape[1];
    if (ndim == 3) { /* RGB(A) -> RGB in 0..255 */
        se.kind = PLOT_RGB;
        int64_t ch = shape[2], pixels = se.rows * se.cols;
        for (int64_t p = 0; p < pixels; p++)
            for (int k = 0; k < 3; k++) {
                double c = se.z[p * ch + k] * (is_int ? 1.0 : 255.0);
                se.z[p * 3 + k] = c < 0 ? 0 : c > 255 ? 255 : c;
            }
    }
    char *origin = NULL, *aspect = NULL, *interp = NULL;
    if (!cmap_arg(in, v[1], "imshow", se.cmap) || !ax_bi_double(in, v[2], "vmin", 0, &se.vmin) ||
        !ax_bi_double(in, v[3], "vmax", 0, &se.vmax) ||
        !text_arg(in, v[4], "imshow() origin", &origin) ||
        !text_arg(in, v[6], "imshow() aspect", &aspect) ||
        !text_arg(in, v[7], "imshow() interpolation", &interp) ||
        !text_arg(in, v[9], "imshow() label", &se.label))
        goto fail_text;
    se.has_vmin = given(v[2]), se.has_vmax = given(v[3]);
    se.origin_lower = origin && !strcmp(origin, "lower");
    se.smooth = interp && !is_block_interpolation(interp);
    free(interp);
    if (given(v[5])) {
        int64_t four = 4;
        double *e = vector_of(in, v[5], "imshow", "extent", &four);
        if (!e) goto fail_text;
        memcpy(se.extent, e, sizeof se.extent);
        free(e);
        se.has_extent = true;
    }
    (void)aspect; /* equal aspect always; aspect='auto' is accepted */
    free(origin), free(aspect);
    if (add_series(in, ax, &se) < 0) return NULL;
    return none();
fail_text:
    free(origin), free(aspect);
fail:
    plot_series_free(&se);
    return NULL;
}

/* The grid coordinates of contour(X, Y, Z): 1-D, or 2-D as meshgrid makes them. */
static double *grid_axis(ax_interp *in, ax_value *v, const char *what, bool rows, int64_t n) {
    int ndim;
    int64_t shape[AX_MAX_RANK];
    char desc[64];
    snprintf(desc, sizeof desc, "contour() %s", what);
    double *d = doubles_of(in, v, desc, &ndim, shape);
    if (!d) return NULL;
    int64_t len = ndim == 1 ? shape[0] : ndim == 2 ? (rows ? shape[0] : shape[1]) : -1;
    if (len != n) {
        free(d);
        return ax_error(in->cx, AX_ERR_SHAPE, "contour(): %s does not match Z's shape", what);
    }
    if (ndim == 2 && rows) /* Y[:, 0] */
        for (int64_t i = 0; i < n; i++) d[i] = d[i * shape[1]];
    return d;
}

/* contour([X, Y,] Z, [levels], levels=, colors=, cmap=, linewidths=) */
static ax_value *m_contour(ax_interp *in, ax_value *self, const ax_args *a) {
    static const char *const kw[] = {"levels", "colors", "cmap",  "linewidths",
                                     "vmin",   "vmax",   "label", NULL};
    if (!ax_bi_keywords(in, a, "contour", kw)) return NULL;
    if (a->n < 1 || a->n > 4)
        return ax_error(in->cx, AX_ERR_TYPE, "contour() takes Z or X, Y, Z (and levels)");
    plot_axes *ax = self_axes(in, self);
    if (!ax) return NULL;
    bool with_xy = a->n >= 3;
    ax_value *zv = a->pos[with_xy ? 2 : 0];
    ax_value *levels = a->n == 2 ? a->pos[1] : a->n == 4 ? a->pos[3] : ax_bi_kwarg(a, "levels");
    plot_series se = new_series(PLOT_CONTOUR);
    int ndim;
    int64_t shape[AX_MAX_RANK];
    if (!(se.z = doubles_of(in, zv, "contour() Z", &ndim, shape))) return NULL;
    if (ndim != 2 || shape[0] < 2 || shape[1] < 2) {
        ax_error(in->cx, AX_ERR_SHAPE, "contour(): Z must be 2-D, at least 2x2");
        goto fail;
    }
    se.rows = shape[0], se.cols = shape[1];
    if (with_xy) {
        if (!(se.gx = grid_axis(in, a->pos[0], "X", false, se.cols)) ||
            !(se.gy = grid_axis(in, a->pos[1], "Y", true, se.rows)))
            goto fail;
    } else if (!(se.gx = range_vector(in, se.cols)) || !(se.gy = range_vector(in, se.rows))) {
        goto fail;
    }
    if (given(levels) && levels->kind == AX_V_ARRAY && levels->arr->ndim == 0) {
        int64_t k;
        if (!ax_bi_int(in, levels, "levels", 7, &k)) goto fail;
        se.nlevels = (int)(k < 1 ? 1 : k > 100 ? 100 : k);
    } else if (given(levels)) {
        int64_t k = -1;
        if (!(se.levels = vector_of(in, levels, "contour", "levels", &k))) goto fail;
        se.nlevels = (int)k;
    }
    ax_value *colors = ax_bi_kwarg(a, "colors");
    if (!color_arg(in, colors, "contour", se.color) ||
        !cmap_arg(in, ax_bi_kwarg(a, "cmap"), "contour", se.cmap) ||
        !ax_bi_double(in, ax_bi_kwarg(a, "linewidths"), "linewidths", 1.5, &se.linewidth) ||
        !ax_bi_double(in, ax_bi_kwarg(a, "vmin"), "vmin", 0, &se.vmin) ||
        !ax_bi_double(in, ax_bi_kwarg(a, "vmax"), "vmax", 0, &se.vmax) ||
        !text_arg(in, ax_bi_kwarg(a, "label"), "contour() label", &se.label))
        goto fail;
    se.has_vmin = given(ax_bi_kwarg(a, "vmin")), se.has_vmax = given(ax_bi_kwarg(a, "vmax"));
    if (add_series(in, ax, &se) < 0) return NULL;
    return none();
fail:
    plot_series_free(&se);
    return NULL;
}

/* errorbar(x, y, yerr=None, xerr=None, fmt='', capsize=None, ...) */
static ax_value *m_errorbar(ax_interp *in, ax_value *self, const ax_args *a) {
    const char *names[32];
    static const char *const own[] = {"x", "y", "yerr", "xerr", "fmt", "capsize", "ecolor", NULL};
    ax_value *v[32];
    if (!ax_bi_parse(in, a, "errorbar", with_style(names, own), 5, v)) return NULL;
    if (!ax_bi_required(in, v[0], "errorbar", "x") || !ax_bi_required(in, v[1], "errorbar", "y"))
        return NULL;
    plot_axes *ax = self_axes(in, self);
    if (!ax) return NULL;
    plot_series se = new_series(PLOT_ERRORBAR);
    se.n = -1;
    if (!(se.x = vector_of(in, v[0], "errorbar", "x", &se.n)) ||
        !(se.y = vector_of(in, v[1], "errorbar", "y", &se.n)) ||
        (given(v[2]) && !(se.yerr = vector_of(in, v[2], "errorbar", "yerr", &se.n))) ||
        (given(v[3]) && !(se.xerr = vector_of(in, v[3], "errorbar", "xerr", &se.n))))
        goto fail;
    if (!se.xerr && !se.yerr) { /* nothing to draw as bars: zero-height ones, like matplotlib */
        if (!(se.yerr = calloc((size_t)(se.n ? se.n : 1), sizeof *se.yerr))) {
            ax_error_oom(in->cx);
            goto fail;
        }
    }
    if (is_str(v[4]) && !strcmp(v[4]->str, "none"))
        se.line = 0;
    else if (is_str(v[4]) && v[4]->str[0] && !parse_fmt(in, v[4]->str, &se))
        goto fail;
    if (!style_args(in, a, "errorbar", &se, true) || add_series(in, ax, &se) < 0) goto fail;
    return none();
fail:
    plot_series_free(&se);
    return NULL;
}

/* fill_between(x, y1, y2=0, ...) */
static ax_value *m_fill_between(ax_interp *in, ax_value *self, const ax_args *a) {
    const char *names[32];
    static const char *const own[] = {"x", "y1", "y2", NULL};
    ax_value *v[32];
    if (!ax_bi_parse(in, a, "fill_between", with_style(names, own), 3, v)) return NULL;
    if (!ax_bi_required(in, v[0], "fill_between", "x") ||
        !ax_bi_required(in, v[1], "fill_between", "y1"))
        return NULL;
    plot_axes *ax = self_axes(in, self);
    if (!ax) return NULL;
    plot_series se = new_series(PLOT_FILL);
    se.n = -1;
    if (!(se.x = vector_of(in, v[0], "fill_between", "x", &se.n)) ||
        !(se.y = vector_of(in, v[1], "fill_between", "y1", &se.n)))
        goto fail;
    if (given(v[2])) {
        if (!(se.y2 = vector_of(in, v[2], "fill_between", "y2", &se.n))) goto fail;
    } else if (!(se.y2 = calloc((size_t)(se.n ? se.n : 1), sizeof *se.y2))) {
        ax_error_oom(in->cx);
        goto fail;
    }
    if (!style_args(in, a, "fill_between", &se, true) || add_series(in, ax, &se) < 0) goto fail;
    return none();
fail:
    plot_series_free(&se);
    return NULL;
}

/* axhline(y=0, ...) and axvline(x=0, ...) */
static ax_value *axis_line(ax_interp *in, ax_value *self, const ax_args *a, bool horizontal) {
    const char *fname = horizontal ? "axhline" : "axvline";
    const char *names[32];
    static const char *const own_h[] = {"y", NULL}, *const own_v[] = {"x", NULL};
    ax_value *v[32];
    if (!ax_bi_parse(in, a, fname, with_style(names, horizontal ? own_h : own_v), 1, v))
        return NULL;
    plot_axes *ax = self_axes(in, self);
    if (!ax) return NULL;
    plot_series se = new_series(horizontal ? PLOT_HLINE : PLOT_VLINE);
    se.n = 1;
    double at;
    if (!ax_bi_double(in, v[0], horizontal ? "y" : "x", 0, &at)) return NULL;
    se.x = malloc(sizeof *se.x), se.y = malloc(sizeof *se.y);
    if (!se.x || !se.y) {
        plot_series_free(&se);
        return ax_error_oom(in->cx);
    }
    se.x[0] = se.y[0] = at;
    se.linewidth = 1.0;
    if (!style_args(in, a, fname, &se, true) || add_series(in, ax, &se) < 0) {
        plot_series_free(&se);
        return NULL;
    }
    return none();
}

static ax_value *m_axhline(ax_interp *in, ax_value *self, const ax_args *a) {
    return axis_line(in, self, a, true);
}

static ax_value *m_axvline(ax_interp *in, ax_value *self, const ax_args *a) {
    return axis_line(in, self, a, false);
}

/* ---------------------------------------------------------------- axes settings */

/* legend(labels=None, loc='best'): shows the legend (the series' labels, or these). */
static ax_value *m_legend(ax_interp *in, ax_value *self, const ax_args *a) {
    static const char *const names[] = {"labels", "loc", "fontsize", "frameon", "title", NULL};
    ax_value *v[5];
    if (!ax_bi_parse(in, a, "legend", names, 2, v)) return NULL;
    plot_axes *ax = self_axes(in, self);
    if (!ax) return NULL;
    ax_value *labels = v[0];
    if (given(labels)) {
        if (labels->kind != AX_V_LIST && labels->kind != AX_V_TUPLE)
            return ax_error(in->cx, AX_ERR_TYPE, "legend(): labels must be a list of strings");
        for (int i = 0, k = 0; i < labels->n && k < ax->nseries; k++) {
            plot_series *se = &ax->series[k];
            if (se->kind == PLOT_HLINE || se->kind == PLOT_VLINE) continue;
            if (!text_arg(in, labels->items[i++], "legend() label", &se->label)) return NULL;
        }
    }
    if (given(v[1])) {
        if (!is_str(v[1])) return ax_error(in->cx, AX_ERR_TYPE, "legend(): loc must be a string");
        snprintf(ax->legend_loc, sizeof ax->legend_loc, "%s", v[1]->str);
    }
    ax->legend = true;
    return none();
}

/* set_title(label), set_xlabel(label), set_ylabel(label) (fontsize and loc are accepted). */
static ax_value *set_text(ax_interp *in, ax_value *self, const ax_args *a, const char *fname,
                          size_t field) {
    static const char *const names[] = {"label", "fontsize", "loc", "fontdict", NULL};
    ax_value *v[4];
    if (!ax_bi_parse(in, a, fname, names, 2, v) || !ax_bi_required(in, v[0], fname, "label"))
        return NULL;
    plot_axes *ax = self_axes(in, self);
    if (!ax) return NULL;
    char what[48];
    snprintf(what, sizeof what, "%s() label", fname);
    char **slot = (char **)((char *)ax + field);
    return text_arg(in, v[0], what, slot) ? none() : NULL;
}

static ax_value *m_set_title(ax_interp *in, ax_value *self, const ax_args *a) {
    return set_text(in, self, a, "set_title", offsetof(plot_axes, title));
}
static ax_value *m_set_xlabel(ax_interp *in, ax_value *self, const ax_args *a) {
    return set_text(in, self, a, "set_xlabel", offsetof(plot_axes, xlabel));
}
static ax_value *m_set_ylabel(ax_interp *in, ax_value *self, const ax_args *a) {
    return set_text(in, self, a, "set_ylabel", offsetof(plot_axes, ylabel));
}

/* set_xlim(left, right), set_xlim((left, right)), set_xlim(right=3): None leaves an end. */
static ax_value *set_limits(ax_interp *in, ax_value *self, const ax_args *a, bool x) {
    const char *fname = x ? "set_xlim" : "set_ylim";
    static const char *const xnames[] = {"left", "right", NULL};
    static const char *const ynames[] = {"bottom", "top", NULL};
    ax_value *v[2];
    if (!ax_bi_parse(in, a, fname, x ? xnames : ynames, 2, v)) return NULL;
    plot_axes *ax = self_axes(in, self);
    if (!ax) return NULL;
    ax_value *lo = v[0], *hi = v[1];
    if (lo && (lo->kind == AX_V_TUPLE || lo->kind == AX_V_LIST)) {
        if (lo->n != 2 || hi)
            return ax_error(in->cx, AX_ERR_TYPE, "%s() takes (low, high) or low, high", fname);
        hi = lo->items[1], lo = lo->items[0];
    }
    double *lim = x ? ax->xlim : ax->ylim;
    bool *has = x ? ax->has_xlim : ax->has_ylim;
    ax_value *ends[2] = {lo, hi};
    for (int k = 0; k < 2; k++) {
        if (!given(ends[k])) continue;
        if (!ax_bi_double(in, ends[k], k ? "the high limit" : "the low limit", 0, &lim[k]))
            return NULL;
        has[k] = true;
    }
    return none();
}

static ax_value *m_set_xlim(ax_interp *in, ax_value *self, const ax_args *a) {
    return set_limits(in, self, a, true);
}
static ax_value *m_set_ylim(ax_interp *in, ax_value *self, const ax_args *a) {
    return set_limits(in, self, a, false);
}

static ax_value *get_limits(ax_interp *in, ax_value *self, const ax_args *a, bool x) {
    if (!ax_args_check(in, a, x ? "get_xlim" : "get_ylim", 0, NULL)) return NULL;
    plot_axes *ax = self_axes(in, self);
    if (!ax) return NULL;
    double lim[2];
    plot_axes_limits(ax, x, lim);
    ax_value *lo = ax_bi_float_value(in, lim[0]), *hi = lo ? ax_bi_float_value(in, lim[1]) : NULL;
    if (!hi) {
        ax_value_release(lo);
        return NULL;
    }
    ax_value *t = ax_value_tuple(2, (ax_value *[]){lo, hi});
    return t ? t : ax_error_oom(in->cx);
}

static ax_value *m_get_xlim(ax_interp *in, ax_value *self, const ax_args *a) {
    return get_limits(in, self, a, true);
}
static ax_value *m_get_ylim(ax_interp *in, ax_value *self, const ax_args *a) {
    return get_limits(in, self, a, false);
}

static ax_value *set_scale(ax_interp *in, ax_value *self, const ax_args *a, bool x) {
    const char *fname = x ? "set_xscale" : "set_yscale";
    static const char *const names[] = {"value", "base", NULL};
    ax_value *v[2];
    if (!ax_bi_parse(in, a, fname, names, 1, v) || !ax_bi_required(in, v[0], fname, "value"))
        return NULL;
    plot_axes *ax = self_axes(in, self);
    if (!ax) return NULL;
    bool log = is_str(v[0]) && !strcmp(v[0]->str, "log");
    if (!log && !(is_str(v[0]) && !strcmp(v[0]->str, "linear")))
        return ax_error(in->cx, AX_ERR_VALUE, "%s(): the scale must be 'linear' or 'log'", fname);
    *(x ? &ax->xlog : &ax->ylog) = log;
    return none();
}

static ax_value *m_set_xscale(ax_interp *in, ax_value *self, const ax_args *a) {
    return set_scale(in, self, a, true);
}
static ax_value *m_set_yscale(ax_interp *in, ax_value *self, const ax_args *a) {
    return set_scale(in, self, a, false);
}

/* grid(visible=None): grid() toggles, as in matplotlib. */
static ax_value *m_grid(ax_interp *in, ax_value *self, const ax_args *a) {
    static const char *const names[] = {"visible",   "which", "axis", "alpha",
                                        "linestyle", "color", NULL};
    ax_value *v[6];
    if (!ax_bi_parse(in, a, "grid", names, 3, v)) return NULL;
    plot_axes *ax = self_axes(in, self);
    if (!ax) return NULL;
    if (!v[0]) return ax->grid = a->nkw > 0 || !ax->grid, none();
    bool on;
    if (!ax_bi_bool(in, v[0], "visible", true, &on)) return NULL;
    ax->grid = on;
    return none();
}

static ax_value *limits_tuple(ax_interp *in, const plot_axes *ax) {
    double lim[4];
    plot_axes_limits(ax, true, lim);
    plot_axes_limits(ax, false, lim + 2);
    ax_value *items[4];
    for (int i = 0; i < 4; i++)
        if (!(items[i] = ax_bi_float_value(in, lim[i]))) {
            for (int k = 0; k < i; k++) ax_value_release(items[k]);
            return NULL;
        }
    ax_value *t = ax_value_tuple(4, items);
    return t ? t : ax_error_oom(in->cx);
}

/* axis('off' | 'on' | False | True): hide or show the frame, ticks and axis labels (the title
 * stays); returns (xmin, xmax, ymin, ymax), as matplotlib does. */
static ax_value *m_axis(ax_interp *in, ax_value *self, const ax_args *a) {
    static const char *const names[] = {"arg", NULL};
    ax_value *v[1];
    if (!ax_bi_parse(in, a, "axis", names, 1, v)) return NULL;
    plot_axes *ax = self_axes(in, self);
    if (!ax) return NULL;
    if (is_str(v[0]) && (!strcmp(v[0]->str, "off") || !strcmp(v[0]->str, "on")))
        ax->axis_off = !strcmp(v[0]->str, "off");
    else if (given(v[0]) && v[0]->kind != AX_V_STR) {
        bool on;
        if (!ax_bi_bool(in, v[0], "axis() arg", true, &on)) return NULL;
        ax->axis_off = !on;
    } else if (given(v[0]))
        return ax_error(in->cx, AX_ERR_VALUE,
                        "axis(): '%s' is not supported; 'off' and 'on' (or False and True) are",
                        v[0]->str);
    return limits_tuple(in, ax);
}

static ax_value *set_axis_visible(ax_interp *in, ax_value *self, const ax_args *a, bool on) {
    if (!ax_args_check(in, a, on ? "set_axis_on" : "set_axis_off", 0, NULL)) return NULL;
    plot_axes *ax = self_axes(in, self);
    if (!ax) return NULL;
    ax->axis_off = !on;
    return none();
}
static ax_value *m_set_axis_off(ax_interp *in, ax_value *self, const ax_args *a) {
    return set_axis_visible(in, self, a, false);
}
static ax_value *m_set_axis_on(ax_interp *in, ax_value *self, const ax_args *a) {
    return set_axis_visible(in, self, a, true);
}

static ax_value *m_colorbar(ax_interp *in, ax_value *self, const ax_args *a) {
    static const char *const names[] = {"mappable", "label", NULL};
    ax_value *v[2];
    if (!ax_bi_parse(in, a, "colorbar", names, 1, v)) return NULL;
    plot_axes *ax = self_axes(in, self);
    if (!ax) return NULL;
    ax->colorbar = true;
    return none();
}

/* set(title=..., xlabel=..., ylabel=..., xlim=..., ylim=..., xscale=..., yscale=...) */
static ax_value *m_set(ax_interp *in, ax_value *self, const ax_args *a) {
    static const struct {
        const char *kw;
        ax_builtin_fn fn;
    } setters[] = {{"title", m_set_title},  {"xlabel", m_set_xlabel}, {"ylabel", m_set_ylabel},
                   {"xlim", m_set_xlim},    {"ylim", m_set_ylim},     {"xscale", m_set_xscale},
                   {"yscale", m_set_yscale}};
    if (!ax_args_check(in, a, "set", 0,
                       (const char *[]){"title", "xlabel", "ylabel", "xlim", "ylim", "xscale",
                                        "yscale", NULL}))
        return NULL;
    for (int k = 0; k < a->nkw; k++)
        for (size_t i = 0; i < sizeof setters / sizeof *setters; i++) {
            if (strcmp(a->kwnames[k], setters[i].kw)) continue;
            ax_args one = {.n = 1, .pos = &a->kwvals[k]};
            ax_value *r = setters[i].fn(in, self, &one);
            if (!r) return NULL;
            ax_value_release(r);
        }
    return none();
}

static const method_def axes_methods[] = {
    {"plot", m_plot, "plot([x,] y, [fmt], ..., label=, color=, linestyle=, marker=): lines"},
    {"scatter", m_scatter, "scatter(x, y, s=None, c=None, cmap=, marker=): points"},
    {"bar", m_bar, "bar(x, height, width=0.8): bars (x may be names)"},
    {"hist", m_hist, "hist(x, bins=10, range=None, density=False): (counts, edges, None)"},
    {"imshow", m_imshow, "imshow(X, cmap='viridis', vmin=, vmax=, origin=, extent=): an image"},
    {"contour", m_contour, "contour([X, Y,] Z, levels=): contour lines"},
    {"errorbar", m_errorbar, "errorbar(x, y, yerr=None, xerr=None, fmt=''): error bars"},
    {"fill_between", m_fill_between, "fill_between(x, y1, y2=0, alpha=): a filled band"},
    {"axhline", m_axhline, "axhline(y=0): a horizontal line across the axes"},
    {"axvline", m_axvline, "axvline(x=0): a vertical line across the axes"},
    {"legend", m_legend, "legend(labels=None, loc='best'): show the legend"},
    {"set_title", m_set_title, "set_title(label)"},
    {"set_xlabel", m_set_xlabel, "set_xlabel(label)"},
    {"set_ylabel", m_set_ylabel, "set_ylabel(label)"},
    {"set_xlim", m_set_xlim, "set_xlim(left, right)"},
    {"set_ylim", m_set_ylim, "set_ylim(bottom, top)"},
    {"get_xlim", m_get_xlim, "get_xlim(): (left, right)"},
    {"get_ylim", m_get_ylim, "get_ylim(): (bottom, top)"},
    {"set_xscale", m_set_xscale, "set_xscale('linear' | 'log')"},
    {"set_yscale", m_set_yscale, "set_yscale('linear' | 'log')"},
    {"grid", m_grid, "grid(visible=None): show or hide the grid (toggles without argument)"},
    {"colorbar", m_colorbar, "colorbar(): show the colour scale of the image"},
    {"axis", m_axis,
     "axis('off' | 'on'): hide or show the frame and ticks; (xmin, xmax, ymin, ymax)"},
    {"set_axis_off", m_set_axis_off, "set_axis_off(): hide the frame, ticks and axis labels"},
    {"set_axis_on", m_set_axis_on, "set_axis_on(): show the frame, ticks and axis labels"},
    {"set", m_set, "set(title=, xlabel=, ylabel=, xlim=, ylim=, xscale=, yscale=)"},
    {NULL, NULL, NULL},
};

static ax_value *axes_getattr(ax_interp *in, ax_value *self, const char *name) {
    return bind_method(in, self, axes_methods, name);
}

/* ---------------------------------------------------------------- figures */

static int figure_points(const plot_figure *f) {
    int64_t n = 0;
    for (int i = 0; i < f->naxes; i++)
        for (int k = 0; k < f->axes[i].nseries; k++) {
            const plot_series *se = &f->axes[i].series[k];
            n += se->kind == PLOT_SCATTER || se->kind == PLOT_LINE ? se->n : 0;
        }
    return n > SVG_MAX_POINTS ? SVG_MAX_POINTS + 1 : (int)n;
}

/* "figure 1: Waves" (the suptitle, else the first title). */
static void figure_alt(const plot_figure *f, char *out, size_t cap) {
    const char *title = f->suptitle;
    for (int i = 0; !title && i < f->naxes; i++) title = f->axes[i].title;
    snprintf(out, cap, "figure %d%s%s", f->number, title ? ": " : "", title ? title : "");
}

static int show_figure(ax_interp *in, const plot_figure *f, bool notebook) {
    const char *format = notebook && figure_points(f) <= SVG_MAX_POINTS ? "svg" : "png";
    char *data = NULL;
    size_t len = 0;
    if (plot_render(in->cx, f, format, &data, &len) < 0) return -1;
    char alt[256];
    figure_alt(f, alt, sizeof alt);
    return ax_display_show_take(in, "figure", format, data, len, alt);
}

static int show_all(ax_interp *in, plot_state *st) {
    bool notebook = ax_display_of(in) != NULL;
    int rc = 0;
    for (int i = 0; i < st->n && rc == 0; i++) rc = show_figure(in, st->figs[i], notebook);
    while (st->n) close_figure(st, st->n - 1);
    return rc;
}

int ax_plot_flush(ax_interp *in) {
    ax_value *v = ax_module_lookup(in->builtins, STATE_NAME);
    if (!v || v->kind != AX_V_OBJECT || v->obj.type != &state_type) return 0;
    return show_all(in, v->obj.payload);
}

static int save_figure(ax_interp *in, const plot_figure *f, const ax_args *a, const char *fname) {
    static const char *const names[] = {"fname",       "dpi",         "format",
                                        "bbox_inches", "transparent", NULL};
    ax_value *v[5];
    if (!ax_bi_parse(in, a, fname, names, 1, v) || !ax_bi_required(in, v[0], fname, "fname"))
        return -1;
    if (!is_str(v[0]))
        return ax_error(in->cx, AX_ERR_TYPE, "%s(): fname must be a file name", fname), -1;
    const char *format = is_str(v[2]) ? v[2]->str : plot_format_of_path(v[0]->str);
    if (!format || (strcmp(format, "png") && strcmp(format, "svg") && strcmp(format, "pdf"))) {
        ax_error(in->cx, AX_ERR_VALUE,
                 "%s(): cannot tell the format of '%s': name the file .png, .svg or .pdf", fname,
                 v[0]->str);
        return -1;
    }
    plot_figure copy = *f;
    if (!ax_bi_double(in, v[1], "dpi", f->dpi, &copy.dpi)) return -1;
    if (copy.dpi < 10 || copy.dpi > 1200)
        return ax_error(in->cx, AX_ERR_VALUE, "%s(): dpi must be between 10 and 1200", fname), -1;
    char *data = NULL;
    size_t len = 0;
    if (plot_render(in->cx, &copy, format, &data, &len) < 0) return -1;
    int rc = ax_ext_write_file(in->cx, v[0]->str, data, len);
    free(data);
    return rc;
}

static plot_figure *self_figure(ax_interp *in, ax_value *self) {
    return handle_figure(in, method_handle(self));
}

static ax_value *m_savefig(ax_interp *in, ax_value *self, const ax_args *a) {
    plot_figure *f = self_figure(in, self);
    return f && save_figure(in, f, a, "savefig") == 0 ? none() : NULL;
}

static ax_value *m_suptitle(ax_interp *in, ax_value *self, const ax_args *a) {
    static const char *const names[] = {"t", "fontsize", NULL};
    ax_value *v[2];
    if (!ax_bi_parse(in, a, "suptitle", names, 1, v) || !ax_bi_required(in, v[0], "suptitle", "t"))
        return NULL;
    plot_figure *f = self_figure(in, self);
    return f && text_arg(in, v[0], "suptitle() t", &f->suptitle) ? none() : NULL;
}

/* (nrows, ncols, index) from subplot's arguments: three ints, or one like 221. */
static bool subplot_spec(ax_interp *in, const ax_args *a, const char *fname, int spec[3]) {
    if (!ax_args_check(in, a, fname, 3, NULL)) return false;
    int64_t v[3] = {1, 1, 1};
    if (a->n == 1) {
        int64_t code;
        if (!ax_bi_int(in, a->pos[0], "the subplot code", 111, &code)) return false;
        v[0] = code / 100, v[1] = code / 10 % 10, v[2] = code % 10;
    } else if (a->n == 3) {
        for (int i = 0; i < 3; i++)
            if (!ax_bi_int(in, a->pos[i], "a subplot number", 1, &v[i])) return false;
    } else if (a->n != 0) {
        ax_error(in->cx, AX_ERR_TYPE, "%s() takes (nrows, ncols, index) or a code like 221", fname);
        return false;
    }
    if (v[0] < 1 || v[1] < 1 || v[0] > 20 || v[1] > 20 || v[2] < 1 || v[2] > v[0] * v[1]) {
        ax_error(in->cx, AX_ERR_VALUE,
                 "%s(): index %lld is not in a %lld x %lld grid (indices run from 1 to %lld)",
                 fname, (long long)v[2], (long long)v[0], (long long)v[1],
                 (long long)(v[0] * v[1]));
        return false;
    }
    for (int i = 0; i < 3; i++) spec[i] = (int)v[i];
    return true;
}

static ax_value *axes_in(ax_interp *in, plot_figure *f, int nrows, int ncols, int index) {
    int i = figure_axes_at(in, f, nrows, ncols, index);
    return i < 0 ? NULL : handle_value(in, f->number, i);
}

static ax_value *m_add_subplot(ax_interp *in, ax_value *self, const ax_args *a) {
    int spec[3];
    plot_figure *f = self_figure(in, self);
    if (!f || !subplot_spec(in, a, "add_subplot", spec)) return NULL;
    return axes_in(in, f, spec[0], spec[1], spec[2]);
}

static ax_value *m_fig_gca(ax_interp *in, ax_value *self, const ax_args *a) {
    plot_figure *f = self_figure(in, self);
    if (!f || !ax_args_check(in, a, "gca", 0, NULL)) return NULL;
    int i = current_axes(in, f);
    return i < 0 ? NULL : handle_value(in, f->number, i);
}

static ax_value *m_fig_clf(ax_interp *in, ax_value *self, const ax_args *a) {
    plot_figure *f = self_figure(in, self);
    if (!f || !ax_args_check(in, a, "clf", 0, NULL)) return NULL;
    for (int i = 0; i < f->naxes; i++) plot_axes_free(&f->axes[i]);
    f->naxes = 0, f->current = -1;
    return none();
}

static const method_def figure_methods[] = {
    {"savefig", m_savefig, "savefig(fname, dpi=None, format=None): write .png, .svg or .pdf"},
    {"suptitle", m_suptitle, "suptitle(t): the figure's title"},
    {"add_subplot", m_add_subplot, "add_subplot(nrows, ncols, index): axes in a grid cell"},
    {"gca", m_fig_gca, "gca(): the current axes of the figure"},
    {"clf", m_fig_clf, "clf(): remove every axes"},
    {NULL, NULL, NULL},
};

static ax_value *figure_getattr(ax_interp *in, ax_value *self, const char *name) {
    if (!strcmp(name, "number"))
        return ax_bi_int_value(in, ((plot_handle *)self->obj.payload)->number);
    return bind_method(in, self, figure_methods, name);
}

/* ---------------------------------------------------------------- pyplot's functions */

/* figure(num=None, figsize=None, dpi=None): a new figure, or figure `num` made current. */
static ax_value *b_figure(ax_interp *in, ax_value *self, const ax_args *a) {
    (void)self;
    static const char *const names[] = {"num", "figsize", "dpi", "facecolor", NULL};
    ax_value *v[4];
    plot_state *st = state_of(in);
    if (!st || !ax_bi_parse(in, a, "figure", names, 1, v)) return NULL;
    int64_t num = 0;
    if (!ax_bi_int(in, v[0], "num", 0, &num)) return NULL;
    int i = num > 0 ? find_figure(st, (int)num) : -1;
    if (i >= 0) {
        st->current = i;
        return handle_value(in, (int)num, -1);
    }
    double size[2] = {6.4, 4.8}, dpi = 100;
    if (given(v[1])) {
        int64_t two = 2;
        double *d = vector_of(in, v[1], "figure", "figsize", &two);
        if (!d) return NULL;
        size[0] = d[0], size[1] = d[1];
        free(d);
        if (!(size[0] > 0.5 && size[1] > 0.5 && size[0] < 100 && size[1] < 100))
            return ax_error(in->cx, AX_ERR_VALUE,
                            "figure(): figsize is (width, height) in inches, each in 0.5..100");
    }
    if (!ax_bi_double(in, v[2], "dpi", 100, &dpi)) return NULL;
    if (dpi < 10 || dpi > 1200)
        return ax_error(in->cx, AX_ERR_VALUE, "figure(): dpi must be between 10 and 1200");
    plot_figure *f = new_figure(in, st, (int)(num > 0 ? num : 0));
    if (!f) return NULL;
    f->width = size[0], f->height = size[1], f->dpi = dpi;
    return handle_value(in, f->number, -1);
}

static ax_value *b_gcf(ax_interp *in, ax_value *self, const ax_args *a) {
    (void)self;
    plot_state *st = state_of(in);
    if (!st || !ax_args_check(in, a, "gcf", 0, NULL)) return NULL;
    plot_figure *f = current_figure(in, st);
    return f ? handle_value(in, f->number, -1) : NULL;
}

static ax_value *b_gca(ax_interp *in, ax_value *self, const ax_args *a) {
    (void)self;
    plot_state *st = state_of(in);
    if (!st || !ax_args_check(in, a, "gca", 0, NULL)) return NULL;
    plot_figure *f = current_figure(in, st);
    int i = f ? current_axes(in, f) : -1;
    return i < 0 ? NULL : handle_value(in, f->number, i);
}

static ax_value *b_subplot(ax_interp *in, ax_value *self, const ax_args *a) {
    (void)self;
    int spec[3];
    plot_state *st = state_of(in);
    if (!st || !subplot_spec(in, a, "subplot", spec)) return NULL;
    plot_figure *f = current_figure(in, st);
    return f ? axes_in(in, f, spec[0], spec[1], spec[2]) : NULL;
}

/* ---------------------------------------------------------------- subplots' grid of axes */

/* A 2-D grid of axes, as subplots(2, 2) returns it: axs[0, 1] and axs[0][1] are an Axes,
 * axs[0] a row (a tuple), axs.flat every Axes in a tuple, axs.shape (nrows, ncols). */
typedef struct axes_grid {
    ax_value *rows; /* a tuple of row tuples */
    int nrows, ncols;
} axes_grid;

static void grid_free(void *payload) {
    axes_grid *g = payload;
    ax_value_release(g->rows);
    free(g);
}

static void grid_format(ax_strbuf *out, void *payload) {
    axes_grid *g = payload;
    ax_strbuf_appendf(out, "<Axes grid %dx%d>", g->nrows, g->ncols);
}

/* An index along one dimension (negative from the end); false when out of range. */
static bool grid_index(ax_interp *in, ax_value *v, int n, int *out, bool *ok) {
    int64_t i;
    if (!ax_bi_int(in, v, "an axes index", 0, &i)) return *ok = false;
    if (i < 0) i += n;
    *out = (int)i;
    return i >= 0 && i < n;
}

static ax_value *grid_getitem(ax_interp *in, ax_value *self, ax_value *index) {
    axes_grid *g = self->obj.payload;
    bool ok = true;
    int i, j;
    if (index->kind == AX_V_TUPLE && index->n == 2) {
        if (!grid_index(in, index->items[0], g->nrows, &i, &ok) ||
            !grid_index(in, index->items[1], g->ncols, &j, &ok))
            return ok ? ax_error(in->cx, AX_ERR_INDEX, "axes index out of the %dx%d grid", g->nrows,
                                 g->ncols)
                      : NULL;
        return ax_value_retain(g->rows->items[i]->items[j]);
    }
    if (index->kind == AX_V_ARRAY && index->arr->ndim == 0) {
        if (!grid_index(in, index, g->nrows, &i, &ok)) return NULL; /* IndexError ends a loop */
        return ax_value_retain(g->rows->items[i]);
    }
    return ax_error(in->cx, AX_ERR_TYPE, "axes are indexed as axs[row, col] or axs[row]");
}

static ax_value *grid_flat(ax_interp *in, axes_grid *g) {
    int n = g->nrows * g->ncols;
    ax_value **cells = malloc((size_t)n * sizeof *cells);
    if (!cells) return ax_error_oom(in->cx);
    for (int k = 0; k < n; k++)
        cells[k] = ax_value_retain(g->rows->items[k / g->ncols]->items[k % g->ncols]);
    ax_value *t = ax_value_tuple(n, cells);
    free(cells);
    return t ? t : ax_error_oom(in->cx);
}

static ax_value *m_grid_ravel(ax_interp *in, ax_value *self, const ax_args *a) {
    if (!ax_args_check(in, a, "ravel", 0, NULL)) return NULL;
    return grid_flat(in, self->builtin->data->obj.payload);
}

static ax_value *grid_getattr(ax_interp *in, ax_value *self, const char *name) {
    axes_grid *g = self->obj.payload;
    static const method_def methods[] = {
        {"ravel", m_grid_ravel, "ravel(): every Axes, row by row, in a tuple"},
        {"flatten", m_grid_ravel, "flatten(): every Axes, row by row, in a tuple"},
        {NULL, NULL, NULL},
    };
    if (!strcmp(name, "flat")) return grid_flat(in, g);
    if (!strcmp(name, "shape")) {
        ax_value *r = ax_bi_int_value(in, g->nrows), *c = r ? ax_bi_int_value(in, g->ncols) : NULL;
        if (!c) return ax_value_release(r), NULL;
        ax_value *t = ax_value_tuple(2, (ax_value *[]){r, c});
        return t ? t : ax_error_oom(in->cx);
    }
    return bind_method(in, self, methods, name);
}

static const ax_object_type grid_type = {.name = "Axes grid",
                                         .free = grid_free,
                                         .format = grid_format,
                                         .getattr = grid_getattr,
                                         .getitem = grid_getitem};

/* A tuple of nrows row tuples: takes the cells' references (and releases them on failure). */
static ax_value *rows_of(ax_value **cells, int nrows, int ncols) {
    int n = nrows * ncols;
    ax_value **rows = calloc((size_t)nrows, sizeof *rows);
    for (int r = 0; rows && r < nrows; r++) {
        if ((rows[r] = ax_value_tuple(ncols, cells + r * ncols))) continue;
        for (int k = 0; k < r; k++) ax_value_release(rows[k]); /* row r released its cells */
        for (int i = (r + 1) * ncols; i < n; i++) ax_value_release(cells[i]);
        free(rows);
        return NULL;
    }
    if (!rows) {
        for (int i = 0; i < n; i++) ax_value_release(cells[i]);
        return NULL;
    }
    ax_value *t = ax_value_tuple(nrows, rows); /* releases the rows on failure */
    free(rows);
    return t;
}

/* The axes of subplots(): one Axes, a tuple (one row or one column), or a grid. */
static ax_value *axes_grid_of(ax_interp *in, plot_figure *f, int nrows, int ncols, bool squeeze) {
    int n = nrows * ncols;
    ax_value **cells = calloc((size_t)n, sizeof *cells);
    if (!cells) return ax_error_oom(in->cx);
    for (int i = 0; i < n; i++)
        if (!(cells[i] = axes_in(in, f, nrows, ncols, i + 1))) {
            while (i-- > 0) ax_value_release(cells[i]);
            free(cells);
            return NULL;
        }
    ax_value *result = NULL;
    if (squeeze && n == 1) {
        result = cells[0];
    } else if (squeeze && (nrows == 1 || ncols == 1)) {
        result = ax_value_tuple(n, cells);
    } else {
        ax_value *rows = rows_of(cells, nrows, ncols);
        axes_grid *g = rows ? malloc(sizeof *g) : NULL;
        if (g)
            *g = (axes_grid){rows, nrows, ncols};
        else
            ax_value_release(rows);
        result = g ? ax_value_object(&grid_type, g) : NULL;
    }
    free(cells);
    return result ? result : ax_error_oom(in->cx);
}

/* subplots(nrows=1, ncols=1, figsize=None, dpi=None, squeeze=True) -> (fig, axes) */
static ax_value *b_subplots(ax_interp *in, ax_value *self, const ax_args *a) {
    static const char *const names[] = {"nrows",   "ncols",  "figsize", "dpi",
                                        "squeeze", "sharex", "sharey",  NULL};
    ax_value *v[7];
    if (!ax_bi_parse(in, a, "subplots", names, 2, v)) return NULL;
    int64_t nrows, ncols;
    bool squeeze;
    if (!ax_bi_int(in, v[0], "nrows", 1, &nrows) || !ax_bi_int(in, v[1], "ncols", 1, &ncols) ||
        !ax_bi_bool(in, v[4], "squeeze", true, &squeeze))
        return NULL;
    if (nrows < 1 || ncols < 1 || nrows > 20 || ncols > 20)
        return ax_error(in->cx, AX_ERR_VALUE, "subplots(): nrows and ncols must be in 1..20");
    ax_args fa = {.n = 0, .nkw = 0};
    const char *kwnames[2];
    ax_value *kwvals[2];
    if (v[2]) kwnames[fa.nkw] = "figsize", kwvals[fa.nkw++] = v[2];
    if (v[3]) kwnames[fa.nkw] = "dpi", kwvals[fa.nkw++] = v[3];
    fa.kwnames = kwnames, fa.kwvals = kwvals;
    ax_value *fig = b_figure(in, self, &fa);
    if (!fig) return NULL;
    plot_figure *f = handle_figure(in, fig->obj.payload);
    ax_value *axes = f ? axes_grid_of(in, f, (int)nrows, (int)ncols, squeeze) : NULL;
    if (!axes) {
        ax_value_release(fig);
        return NULL;
    }
    f->current = 0;
    ax_value *t = ax_value_tuple(2, (ax_value *[]){fig, axes});
    return t ? t : ax_error_oom(in->cx);
}

static ax_value *b_savefig(ax_interp *in, ax_value *self, const ax_args *a) {
    (void)self;
    plot_state *st = state_of(in);
    plot_figure *f = st ? current_figure(in, st) : NULL;
    return f && save_figure(in, f, a, "savefig") == 0 ? none() : NULL;
}

static ax_value *b_show(ax_interp *in, ax_value *self, const ax_args *a) {
    (void)self;
    static const char *const names[] = {"block", NULL};
    ax_value *v[1];
    plot_state *st = state_of(in);
    if (!st || !ax_bi_parse(in, a, "show", names, 0, v)) return NULL;
    return show_all(in, st) == 0 ? none() : NULL;
}

/* close(fig=None): the current figure, a Figure, a number, or 'all'. */
static ax_value *b_close(ax_interp *in, ax_value *self, const ax_args *a) {
    (void)self;
    static const char *const names[] = {"fig", NULL};
    ax_value *v[1];
    plot_state *st = state_of(in);
    if (!st || !ax_bi_parse(in, a, "close", names, 1, v)) return NULL;
    if (is_str(v[0]) && !strcmp(v[0]->str, "all")) {
        while (st->n) close_figure(st, st->n - 1);
        return none();
    }
    int i = st->current;
    if (given(v[0])) {
        int64_t num;
        if (v[0]->kind == AX_V_OBJECT && v[0]->obj.type == &figure_type)
            num = ((plot_handle *)v[0]->obj.payload)->number;
        else if (!ax_bi_int(in, v[0], "close() fig", 0, &num))
            return NULL;
        i = find_figure(st, (int)num);
    }
    if (i >= 0) close_figure(st, i);
    return none();
}

static ax_value *b_clf(ax_interp *in, ax_value *self, const ax_args *a) {
    plot_state *st = state_of(in);
    plot_figure *f = st ? current_figure(in, st) : NULL;
    if (!f) return NULL;
    ax_value *fig = handle_value(in, f->number, -1);
    if (!fig) return NULL;
    ax_value *method = ax_value_builtin("clf", "", m_fig_clf, fig);
    if (!method) return ax_error_oom(in->cx);
    ax_value *r = m_fig_clf(in, method, a);
    ax_value_release(method);
    (void)self;
    return r;
}

const ax_builtin_def ax_builtins_plot[] = {
    {"_plt_figure", b_figure, "figure(num=None, figsize=None, dpi=None): a new or existing figure",
     0},
    {"_plt_gcf", b_gcf, "gcf(): the current figure", 0},
    {"_plt_gca", b_gca, "gca(): the current axes", 0},
    {"_plt_subplot", b_subplot, "subplot(nrows, ncols, index): axes in a grid cell of the figure",
     0},
    {"_plt_subplots", b_subplots, "subplots(nrows=1, ncols=1, figsize=None): (figure, axes)", 0},
    {"_plt_savefig", b_savefig, "savefig(fname, dpi=None, format=None): write the current figure",
     0},
    {"_plt_show", b_show, "show(): show the open figures and close them", 0},
    {"_plt_close", b_close, "close(fig=None): close the current figure, one figure, or 'all'", 0},
    {"_plt_clf", b_clf, "clf(): clear the current figure", 0},
    {NULL, NULL, NULL, 0},
};

int ax_plot_register(ax_interp *in) {
    plot_state *st = calloc(1, sizeof *st);
    if (!st) return ax_error_oom(in->cx), -1;
    st->current = -1;
    ax_value *v = ax_value_object(&state_type, st);
    if (!v) return ax_error_oom(in->cx), -1;
    ax_interp_define_builtin_take(in, STATE_NAME, v);
    return 0;
}

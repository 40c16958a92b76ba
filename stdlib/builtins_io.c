/* loadtxt(fname, dtype=float, delimiter=None, skiprows=0, usecols=None, ndmin=0): a text file
 * of numbers as an array, as numpy.loadtxt reads it (one row per line; `#` starts a comment;
 * columns split by `delimiter`, or by runs of whitespace when it is None). */
#include "builtins_lib.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../runtime/elementwise.h"

typedef struct numbers {
    double *v;
    int64_t n, cap;
} numbers;

static bool numbers_push(numbers *b, double x) {
    if (b->n == b->cap) {
        int64_t cap = b->cap ? 2 * b->cap : 4096;
        double *v = realloc(b->v, (size_t)cap * sizeof *v);
        if (!v) return false;
        b->v = v;
        b->cap = cap;
    }
    b->v[b->n++] = x;
    return true;
}

static char *read_all(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap + 1);
    while (buf) {
        n += fread(buf + n, 1, cap - n, f);
        if (n < cap) break;
        char *grown = realloc(buf, 2 * cap + 1);
        if (!grown) {
            free(buf);
            buf = NULL;
            break;
        }
        buf = grown;
        cap *= 2;
    }
    int err = ferror(f) ? EIO : 0;
    fclose(f);
    if (buf && err) {
        free(buf);
        errno = err;
        return NULL;
    }
    if (buf) buf[n] = '\0';
    *len = n;
    return buf;
}

typedef struct columns {
    int n;
    int64_t list[64]; /* usecols, or n == 0 for all */
} columns;

static bool wanted(const columns *c, int64_t col, int64_t ncols) {
    if (c->n == 0) return true;
    for (int i = 0; i < c->n; i++)
        if (c->list[i] == col || (c->list[i] < 0 && c->list[i] + ncols == col)) return true;
    return false;
}

/* The fields of one line (comment removed), split by delim (or whitespace when 0). */
static int split_fields(char *line, char delim, char **fields, int cap) {
    char *hash = strchr(line, '#');
    if (hash) *hash = '\0';
    int n = 0;
    if (!delim) {
        for (char *tok = strtok(line, " \t\r"); tok; tok = strtok(NULL, " \t\r"))
            if (n < cap)
                fields[n++] = tok;
            else
                return -1;
        return n;
    }
    char *p = line;
    while (*p == ' ' || *p == '\t' || *p == '\r') p++;
    if (!*p) return 0;
    for (;;) {
        if (n == cap) return -1;
        fields[n++] = p;
        char *d = strchr(p, delim);
        if (!d) break;
        *d = '\0';
        p = d + 1;
    }
    return n;
}

/* Records an out-of-memory error for the bool-returning helpers below. */
static bool no_memory(ax_interp *in) {
    ax_error_oom(in->cx);
    return false;
}

/* Parses the text into b (row-major) and the row and column counts; false + error. */
static bool parse(ax_interp *in, const char *fname, char *text, char delim, int64_t skiprows,
                  const columns *cols, numbers *b, int64_t *rows, int64_t *ncols) {
    enum { MAXF = 1 << 14 };
    char **fields = malloc(MAXF * sizeof *fields);
    if (!fields) return no_memory(in);
    int64_t lineno = 0, width = -1;
    *rows = 0;
    for (char *line = text, *next; line && *line; line = next) {
        next = strchr(line, '\n');
        if (next) *next++ = '\0';
        if (lineno++ < skiprows) continue;
        int nf = split_fields(line, delim, fields, MAXF);
        if (nf == 0) continue;
        if (nf < 0) {
            free(fields);
            ax_error(in->cx, AX_ERR_VALUE, "loadtxt: line %lld of %s has too many columns",
                     (long long)lineno, fname);
            return false;
        }
        int64_t kept = 0;
        for (int i = 0; i < nf; i++) {
            if (!wanted(cols, i, nf)) continue;
            char *end;
            errno = 0;
            double x = strtod(fields[i], &end);
            while (*end == ' ' || *end == '\t' || *end == '\r') end++;
            if (end == fields[i] || *end) {
                ax_error(in->cx, AX_ERR_VALUE,
                         "loadtxt: could not convert '%.40s' to a number (line %lld, column %d "
                         "of %s)",
                         fields[i], (long long)lineno, i + 1, fname);
                free(fields);
                return false;
            }
            if (!numbers_push(b, x)) {
                free(fields);
                return no_memory(in);
            }
            kept++;
        }
        if (width >= 0 && kept != width) {
            free(fields);
            ax_error(in->cx, AX_ERR_VALUE,
                     "loadtxt: line %lld of %s has %lld columns, the lines before %lld",
                     (long long)lineno, fname, (long long)kept, (long long)width);
            return false;
        }
        width = kept;
        (*rows)++;
    }
    free(fields);
    *ncols = width < 0 ? 0 : width;
    return true;
}

static bool read_usecols(ax_interp *in, ax_value *v, columns *c) {
    c->n = 0;
    if (!v || v->kind == AX_V_NONE) return true;
    if (v->kind == AX_V_TUPLE || v->kind == AX_V_LIST) {
        if (v->n > 64) {
            ax_error(in->cx, AX_ERR_VALUE, "loadtxt: at most 64 usecols");
            return false;
        }
        for (int i = 0; i < v->n; i++)
            if (!ax_bi_int(in, v->items[i], "usecols", 0, &c->list[c->n++])) return false;
        return true;
    }
    return ax_bi_int(in, v, "usecols", 0, &c->list[c->n++]);
}

static ax_value *bi_loadtxt(ax_interp *in, ax_value *self, const ax_args *args) {
    static const char *const names[] = {"fname",    "dtype",   "comments", "delimiter",
                                        "skiprows", "usecols", "ndmin",    NULL};
    ax_value *v[7];
    if (!ax_bi_parse(in, args, self->builtin->name, names, 4, v) ||
        !ax_bi_required(in, v[0], "loadtxt", "fname"))
        return NULL;
    const char *fname = ax_bi_str(in, v[0], "loadtxt: fname");
    if (!fname) return NULL;
    int dtype;
    int64_t skiprows, ndmin;
    columns cols;
    if (!ax_bi_dtype(in, v[1], &dtype) || !ax_bi_int(in, v[4], "skiprows", 0, &skiprows) ||
        !read_usecols(in, v[5], &cols) || !ax_bi_int(in, v[6], "ndmin", 0, &ndmin))
        return NULL;
    if (v[2] && v[2]->kind != AX_V_NONE && (v[2]->kind != AX_V_STR || strcmp(v[2]->str, "#")))
        return ax_error(in->cx, AX_ERR_VALUE, "loadtxt: only comments='#' is supported");
    char delim = 0;
    if (v[3] && v[3]->kind != AX_V_NONE) {
        const char *d = ax_bi_str(in, v[3], "loadtxt: delimiter");
        if (!d) return NULL;
        if (strlen(d) != 1)
            return ax_error(in->cx, AX_ERR_VALUE, "loadtxt: the delimiter must be one character");
        delim = d[0];
    }
    if (ndmin < 0 || ndmin > 2)
        return ax_error(in->cx, AX_ERR_VALUE, "loadtxt: ndmin must be 0, 1 or 2");
    size_t len;
    char *text = read_all(fname, &len);
    if (!text)
        return ax_error(in->cx, AX_ERR_IO, "loadtxt: cannot read %s: %s", fname, strerror(errno));
    numbers b = {0};
    int64_t rows, ncols;
    bool ok = parse(in, fname, text, delim, skiprows, &cols, &b, &rows, &ncols);
    free(text);
    if (!ok) {
        free(b.v);
        return NULL;
    }
    /* NumPy squeezes axes of length one, keeping at least ndmin dimensions */
    int64_t shape[2] = {rows, ncols};
    int nd = 2;
    if (ndmin < 2 && (rows == 1 || ncols == 1)) {
        nd = 1;
        shape[0] = rows * ncols;
        if (ndmin == 0 && rows * ncols == 1) nd = 0;
    }
    ax_array *f64 = ax_array_from_data(in->cx, AX_F64, nd, shape, b.v ? b.v : (double[1]){0});
    free(b.v);
    if (!f64) return NULL;
    ax_dtype to = dtype < 0 ? ax_np_default_float(in->cx) : (ax_dtype)dtype;
    ax_array *r = to == AX_F64 ? f64 : ax_convert(in->cx, f64, to, false);
    if (r != f64) ax_array_release(f64);
    return r ? ax_value_array(r) : NULL;
}

const ax_builtin_def ax_builtins_io[] = {
    {"loadtxt", bi_loadtxt,
     "loadtxt(fname, dtype=float, comments='#', delimiter=None, skiprows=0, usecols=None, "
     "ndmin=0): the numbers of a text file as an array, one row per line",
     AX_BI_NP},
    {NULL, NULL, NULL, 0},
};

/* Array I/O, as NumPy spells it: save / load / savez / savez_compressed in the .npy and .npz
 * formats, loadtxt / genfromtxt / savetxt for text (gzip-compressed when the name ends in .gz),
 * and the builtins behind stdlib/safetensors.ax. Every file is written atomically (ax_file_out:
 * a temporary file renamed over the target), and every reader treats the file as untrusted:
 * a bad or truncated file is an error naming it, never a crash. */
#include "builtins_lib.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../runtime/elementwise.h"
#include "../runtime/file.h"
#include "../runtime/npy.h"
#include "../runtime/safetensors.h"
#include "../runtime/zip.h"
#include "../runtime/zlib.h"

/* ---------------------------------------------------------------- shared helpers */

static bool ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

/* path + suffix unless path already ends with it (NumPy's rule for save and savez). */
static char *with_suffix(ax_interp *in, const char *path, const char *suffix) {
    size_t n = strlen(path), k = ends_with(path, suffix) ? 0 : strlen(suffix);
    char *s = malloc(n + k + 1);
    if (!s) return ax_error_oom(in->cx);
    memcpy(s, path, n);
    memcpy(s + n, suffix, k + 1);
    if (!k) s[n] = '\0';
    return s;
}

/* A concrete array from an array-like argument (new reference). */
static ax_array *concrete_array(ax_interp *in, ax_value *v, const char *who) {
    ax_array *a = ax_value_to_array(in, v, who);
    if (a && !ax_np_is_concrete(a)) {
        ax_array_release(a);
        return ax_error(in->cx, AX_ERR_CONCRETIZATION,
                        "%s: the array is traced (inside jit, grad or vmap), so it has no values "
                        "to write; save it outside the transformation",
                        who);
    }
    return a;
}

static const char *path_arg(ax_interp *in, ax_value *v, const char *who, const char *what) {
    if (!ax_bi_required(in, v, who, what)) return NULL;
    char label[64];
    snprintf(label, sizeof label, "%s: %s", who, what);
    return ax_bi_str(in, v, label);
}

/* ---------------------------------------------------------------- .npy and .npz: writing */

/* The pieces of one .npy file: header and C-order data (a keeps the data alive). */
typedef struct npy_pieces {
    char *header;
    ax_array *a; /* contiguous */
    const void *ptr[2];
    size_t len[2];
} npy_pieces;

static bool npy_pieces_make(ax_ctx *cx, ax_array *x, npy_pieces *p) {
    memset(p, 0, sizeof *p);
    if (!(p->a = ax_array_contiguous(cx, x))) return false;
    if (!(p->header = ax_npy_format_header(cx, p->a, &p->len[0]))) return false;
    p->ptr[0] = p->header;
    p->ptr[1] = ax_array_data(p->a);
    p->len[1] = (size_t)p->a->size * ax_dtype_size(p->a->dtype);
    return true;
}

static void npy_pieces_free(npy_pieces *p) {
    free(p->header);
    if (p->a) ax_array_release(p->a);
}

static ax_value *bi_save(ax_interp *in, ax_value *self, const ax_args *args) {
    static const char *const names[] = {"file", "arr", "allow_pickle", "fix_imports", NULL};
    ax_value *v[4] = {0};
    if (!ax_bi_parse(in, args, self->builtin->name, names, 4, v)) return NULL;
    const char *file = path_arg(in, v[0], "save", "file");
    if (!file || !ax_bi_required(in, v[1], "save", "arr")) return NULL;
    ax_array *x = concrete_array(in, v[1], "save");
    char *path = x ? with_suffix(in, file, ".npy") : NULL;
    npy_pieces p;
    ax_file_out out;
    bool ok = path && npy_pieces_make(in->cx, x, &p);
    if (path && x) {
        ok = ok && ax_file_out_open(in->cx, "save", path, &out);
        for (int i = 0; ok && i < 2; i++) ok = ax_file_out_write(in->cx, &out, p.ptr[i], p.len[i]);
        ok = ok && ax_file_out_commit(in->cx, &out);
        npy_pieces_free(&p);
    }
    if (x) ax_array_release(x);
    free(path);
    return ok ? ax_none() : NULL;
}

/* The (name, value) pairs savez stores, in NumPy's order: the keyword arguments, then the
 * positional arrays as arr_0, arr_1, ... */
static bool savez_members(ax_interp *in, const char *who, const ax_args *args, int first,
                          ax_value ***vals, char ***names, int *n) {
    int total = args->n - first + args->nkw;
    *vals = calloc((size_t)total + 1, sizeof **vals);
    *names = calloc((size_t)total + 1, sizeof **names);
    *n = 0;
    if (!*vals || !*names) return ax_error_oom(in->cx), false;
    for (int k = 0; k < args->nkw; k++) {
        if (!strcmp(args->kwnames[k], "file")) continue;
        (*vals)[*n] = args->kwvals[k];
        if (!((*names)[(*n)++] = strdup(args->kwnames[k]))) return ax_error_oom(in->cx), false;
    }
    for (int i = first; i < args->n; i++) {
        char buf[32];
        snprintf(buf, sizeof buf, "arr_%d", i - first);
        for (int j = 0; j < *n; j++)
            if (!strcmp((*names)[j], buf))
                return ax_error(in->cx, AX_ERR_VALUE,
                                "%s: cannot use un-named variables and keyword %s", who, buf),
                       false;
        (*vals)[*n] = args->pos[i];
        if (!((*names)[(*n)++] = strdup(buf))) return ax_error_oom(in->cx), false;
    }
    return true;
}

static bool savez_write(ax_interp *in, const char *who, const char *path, int n, ax_value **vals,
                        char **names, bool compress) {
    ax_file_out out;
    if (!ax_file_out_open(in->cx, who, path, &out)) return false;
    ax_zip_writer w = {.out = &out};
    bool ok = true;
    for (int i = 0; ok && i < n; i++) {
        ax_array *x = concrete_array(in, vals[i], who);
        size_t len = strlen(names[i]);
        char *member = x ? malloc(len + 5) : NULL;
        npy_pieces p = {0};
        ok = member && npy_pieces_make(in->cx, x, &p);
        if (ok) {
            memcpy(member, names[i], len);
            memcpy(member + len, ".npy", 5);
            ok = ax_zip_add(in->cx, &w, member, 2, p.ptr, p.len, compress);
        } else if (x && !member) {
            ax_error_oom(in->cx);
        }
        npy_pieces_free(&p);
        free(member);
        if (x) ax_array_release(x);
    }
    ok = ok && ax_zip_finish(in->cx, &w) && ax_file_out_commit(in->cx, &out);
    ax_zip_writer_free(&w);
    ax_file_out_abort(&out);
    return ok;
}

static ax_value *savez_common(ax_interp *in, ax_value *self, const ax_args *args, bool compress) {
    const char *who = self->builtin->name;
    ax_value *filev = args->n ? args->pos[0] : ax_bi_kwarg(args, "file");
    const char *file = path_arg(in, filev, who, "file");
    if (!file) return NULL;
    ax_value **vals;
    char **names;
    int n;
    char *path = NULL;
    bool ok = savez_members(in, who, args, args->n ? 1 : 0, &vals, &names, &n) &&
              (path = with_suffix(in, file, ".npz")) &&
              savez_write(in, who, path, n, vals, names, compress);
    for (int i = 0; names && i < n; i++) free(names[i]);
    free(names);
    free(vals);
    free(path);
    return ok ? ax_none() : NULL;
}

static ax_value *bi_savez(ax_interp *in, ax_value *self, const ax_args *args) {
    return savez_common(in, self, args, false);
}

static ax_value *bi_savez_compressed(ax_interp *in, ax_value *self, const ax_args *args) {
    return savez_common(in, self, args, true);
}

/* ---------------------------------------------------------------- .npy and .npz: reading */

static ax_value *load_npy(ax_interp *in, const char *path, int fd, uint64_t size) {
    unsigned char pre[AX_NPY_PREAMBLE];
    size_t npre = size < sizeof pre ? (size_t)size : sizeof pre;
    ax_fd_reader r = {in->cx, fd, 0, path};
    if (!ax_fd_read(&r, pre, npre)) return NULL;
    size_t hlen = ax_npy_header_length(in->cx, path, pre, npre);
    if (!hlen) return NULL;
    if (hlen > size)
        return ax_error(in->cx, AX_ERR_VALUE, "%s is truncated (inside its .npy header)", path);
    unsigned char *header = malloc(hlen);
    if (!header) return ax_error_oom(in->cx);
    r.at = 0;
    ax_npy_header h;
    bool ok = ax_fd_read(&r, header, hlen) && ax_npy_parse_header(in->cx, path, header, hlen, &h);
    free(header);
    if (!ok) return NULL;
    if (size - h.data_offset < h.nbytes)
        return ax_error(in->cx, AX_ERR_VALUE,
                        "%s is truncated: its header promises %" PRIu64 " bytes of data, the file "
                        "holds %" PRIu64,
                        path, h.nbytes, size - h.data_offset);
    r.at = h.data_offset;
    ax_array *a = ax_raw_array(in->cx, h.type, h.ndim, h.shape, h.fortran, ax_fd_read, &r);
    return a ? ax_value_or_oom(in, ax_value_array(a)) : NULL;
}

/* An .npz file: a dict from member name (less ".npy") to array, in the archive's order. */
static ax_value *load_npz(ax_interp *in, const char *path, int fd, uint64_t size) {
    ax_zip z;
    if (!ax_zip_open(in->cx, path, fd, size, &z)) return NULL;
    ax_value **keys = calloc((size_t)z.n + 1, sizeof *keys);
    ax_value **vals = calloc((size_t)z.n + 1, sizeof *vals);
    int n = 0;
    bool ok = keys && vals;
    if (!ok) ax_error_oom(in->cx);
    for (int i = 0; ok && i < z.n; i++) {
        const ax_zip_entry *e = &z.entries[i];
        char name[600];
        snprintf(name, sizeof name, "%s (member %s)", path, e->name);
        if (!ends_with(e->name, ".npy")) {
            ax_error(in->cx, AX_ERR_VALUE, "%s is not an array (.npy) file", name);
            ok = false;
            break;
        }
        unsigned char *data;
        size_t len;
        if (!(ok = ax_zip_read(in->cx, &z, e, &data, &len))) break;
        ax_array *a = ax_npy_decode(in->cx, name, data, len);
        free(data);
        e->name[strlen(e->name) - 4] = '\0';
        for (int k = 0; a && k < n; k++)
            if (!strcmp(keys[k]->str, e->name)) {
                ax_error(in->cx, AX_ERR_VALUE, "%s holds two arrays named '%s'", path, e->name);
                ax_array_release(a);
                a = NULL;
            }
        if (!(ok = a != NULL)) break;
        keys[n] = ax_value_str(e->name);
        vals[n] = ax_value_array(a);
        n++;
        if (!(ok = keys[n - 1] && vals[n - 1])) ax_error_oom(in->cx);
    }
    ax_zip_close(&z);
    ax_value *d = ok ? ax_value_dict(n, keys, vals) : NULL;
    if (ok && !d) ax_error_oom(in->cx);
    if (!ok)
        for (int i = 0; i < n; i++) {
            if (keys[i]) ax_value_release(keys[i]);
            if (vals[i]) ax_value_release(vals[i]);
        }
    free(keys);
    free(vals);
    return d;
}

static ax_value *bi_load(ax_interp *in, ax_value *self, const ax_args *args) {
    static const char *const names[] = {
        "file", "mmap_mode", "allow_pickle", "fix_imports", "encoding", "max_header_size", NULL};
    ax_value *v[6] = {0};
    if (!ax_bi_parse(in, args, self->builtin->name, names, 6, v)) return NULL;
    const char *path = path_arg(in, v[0], "load", "file");
    if (!path) return NULL;
    uint64_t size;
    FILE *f = ax_file_open_read(in->cx, "load", path, &size);
    if (!f) return NULL;
    unsigned char magic[6] = {0};
    ax_fd_reader r = {in->cx, fileno(f), 0, path};
    size_t nmagic = size < sizeof magic ? (size_t)size : sizeof magic;
    ax_value *result = NULL;
    if (ax_fd_read(&r, magic, nmagic)) {
        if (nmagic >= 4 && !memcmp(magic, "PK", 2) && (magic[2] == 3 || magic[2] == 5))
            result = load_npz(in, path, fileno(f), size);
        else if (nmagic >= 1 && magic[0] == 0x93)
            result = load_npy(in, path, fileno(f), size);
        else if (nmagic >= 1 && magic[0] == 0x80)
            ax_error(in->cx, AX_ERR_VALUE,
                     "%s holds pickled Python objects, which ax does not "
                     "load (allow_pickle is not supported)",
                     path);
        else
            ax_error(in->cx, AX_ERR_VALUE, "%s is not a .npy or .npz file%s", path,
                     size ? "" : " (it is empty)");
    }
    fclose(f);
    return result;
}

/* ---------------------------------------------------------------- text files: reading */

/* A text file's contents, decompressed when it is gzip (by its name or its magic bytes). */
static char *read_text(ax_interp *in, const char *who, const char *fname, size_t *len) {
    if (ends_with(fname, ".bz2") || ends_with(fname, ".xz") || ends_with(fname, ".lzma"))
        return ax_error(in->cx, AX_ERR_VALUE, "%s: %s: only gzip (.gz) compression is supported",
                        who, fname);
    char *raw = ax_file_read(in->cx, who, fname, len);
    if (!raw) return NULL;
    bool gz = *len >= 2 && (unsigned char)raw[0] == 0x1f && (unsigned char)raw[1] == 0x8b;
    if (!gz && ends_with(fname, ".gz") && *len) {
        free(raw);
        return ax_error(in->cx, AX_ERR_VALUE, "%s: %s is not a gzip file", who, fname);
    }
    if (!gz) return raw;
    unsigned char *text;
    size_t n;
    bool ok = ax_zlib_inflate(in->cx, fname, AX_ZLIB_GZIP, raw, *len, SIZE_MAX - 1, &text, &n);
    free(raw);
    if (!ok) return NULL;
    char *s = realloc(text, n + 1);
    if (!s) {
        free(text);
        return ax_error_oom(in->cx);
    }
    s[n] = '\0';
    *len = n;
    return s;
}

typedef union number {
    double f;
    int64_t i;
} number;

typedef struct numbers {
    number *v;
    int64_t n, cap;
} numbers;

static bool numbers_push(numbers *b, number x) {
    if (b->n == b->cap) {
        int64_t cap = b->cap ? 2 * b->cap : 4096;
        number *v = realloc(b->v, (size_t)cap * sizeof *v);
        if (!v) return false;
        b->v = v;
        b->cap = cap;
    }
    b->v[b->n++] = x;
    return true;
}

typedef struct columns {
    int n;
    int64_t list[64]; /* usecols, or n == 0 for all */
} columns;

/* How a text file is read (loadtxt's and genfromtxt's options). */
typedef struct text_opts {
    const char *who, *fname;
    char delim;           /* 0: runs of whitespace */
    const char *comments; /* NULL: none */
    int64_t skiprows;     /* lines skipped first */
    int64_t max_rows;     /* rows read at most (-1: all) */
    int64_t skip_footer;  /* rows dropped at the end */
    columns cols;
    bool ints;       /* parse int64 values (an integer dtype) */
    bool genfromtxt; /* missing or invalid fields take `filling` */
    number filling;
    int nmissing;
    const char *missing[16]; /* strings that mean "missing" (genfromtxt) */
} text_opts;

static bool wanted(const columns *c, int64_t col, int64_t ncols) {
    if (c->n == 0) return true;
    for (int i = 0; i < c->n; i++)
        if (c->list[i] == col || (c->list[i] < 0 && c->list[i] + ncols == col)) return true;
    return false;
}

static bool is_blank(char c) {
    return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

/* The fields of one line (comment removed), split by delim (or whitespace when 0). */
static int split_fields(char *line, const text_opts *o, char **fields, int cap) {
    if (o->comments && *o->comments) {
        char *c = strstr(line, o->comments);
        if (c) *c = '\0';
    }
    int n = 0;
    if (!o->delim) {
        for (char *tok = strtok(line, " \t\r\v\f"); tok; tok = strtok(NULL, " \t\r\v\f"))
            if (n < cap)
                fields[n++] = tok;
            else
                return -1;
        return n;
    }
    char *p = line;
    while (is_blank(*p)) p++;
    if (!*p) return 0;
    for (;;) {
        if (n == cap) return -1;
        fields[n++] = p;
        char *d = strchr(p, o->delim);
        if (!d) break;
        *d = '\0';
        p = d + 1;
    }
    return n;
}

/* Parses one field; false when it is not a number. */
static bool parse_number(char *s, bool ints, number *out) {
    while (is_blank(*s)) s++;
    char *end = s + strlen(s);
    while (end > s && is_blank(end[-1])) *--end = '\0';
    if (!*s) return false;
    if (ints) {
        errno = 0;
        char *e;
        long long v = strtoll(s, &e, 10);
        if (!*e && !errno) {
            out->i = v;
            return true;
        }
    }
    char *e;
    double d = strtod(s, &e);
    if (*e || e == s) return false;
    if (ints) {
        if (!(d > -9.3e18 && d < 9.3e18)) return false;
        out->i = (int64_t)d;
    } else {
        out->f = d;
    }
    return true;
}

static bool is_missing(const text_opts *o, const char *field) {
    while (is_blank(*field)) field++;
    size_t n = strlen(field);
    while (n && is_blank(field[n - 1])) n--;
    if (n == 0) return true;
    for (int i = 0; i < o->nmissing; i++)
        if (strlen(o->missing[i]) == n && !strncmp(o->missing[i], field, n)) return true;
    return false;
}

/* Records an out-of-memory error for the bool-returning helpers below. */
static bool no_memory(ax_interp *in) {
    ax_error_oom(in->cx);
    return false;
}

/* One line's kept fields into b; the count kept in *kept. */
static bool parse_fields(ax_interp *in, const text_opts *o, char **fields, int nf, int64_t lineno,
                         numbers *b, int64_t *kept) {
    *kept = 0;
    for (int i = 0; i < nf; i++) {
        if (!wanted(&o->cols, i, nf)) continue;
        number x;
        bool good =
            !(o->genfromtxt && is_missing(o, fields[i])) && parse_number(fields[i], o->ints, &x);
        if (!good && o->genfromtxt) {
            x = o->filling;
        } else if (!good) {
            char *f = fields[i];
            while (is_blank(*f)) f++;
            ax_error(in->cx, AX_ERR_VALUE,
                     "%s: could not convert '%.40s' to a number (line %lld, column %d of %s)",
                     o->who, f, (long long)lineno, i + 1, o->fname);
            return false;
        }
        if (!numbers_push(b, x)) return no_memory(in);
        (*kept)++;
    }
    for (int c = 0; c < o->cols.n; c++) {
        int64_t col = o->cols.list[c];
        if (col >= nf || col < -nf) {
            ax_error(in->cx, AX_ERR_VALUE,
                     "%s: usecols has column %lld, but line %lld of %s has "
                     "%d columns",
                     o->who, (long long)col, (long long)lineno, o->fname, nf);
            return false;
        }
    }
    return true;
}

/* Parses the text into b (row-major) and the row and column counts; false + error. */
static bool parse_text(ax_interp *in, const text_opts *o, char *text, numbers *b, int64_t *rows,
                       int64_t *ncols) {
    enum { MAXF = 1 << 14 };
    char **fields = malloc(MAXF * sizeof *fields);
    if (!fields) return no_memory(in);
    int64_t lineno = 0, width = -1;
    *rows = 0;
    bool ok = true;
    for (char *line = text, *next; ok && line && *line; line = next) {
        next = strchr(line, '\n');
        if (next) *next++ = '\0';
        if (lineno++ < o->skiprows) continue;
        if (o->max_rows >= 0 && *rows >= o->max_rows) break;
        int nf = split_fields(line, o, fields, MAXF);
        if (nf == 0) continue;
        if (nf < 0) {
            ax_error(in->cx, AX_ERR_VALUE, "%s: line %lld of %s has too many columns", o->who,
                     (long long)lineno, o->fname);
            ok = false;
            break;
        }
        int64_t kept;
        if (!(ok = parse_fields(in, o, fields, nf, lineno, b, &kept))) break;
        if (width >= 0 && kept != width) {
            ax_error(in->cx, AX_ERR_VALUE,
                     "%s: line %lld of %s has %lld columns, the lines "
                     "before %lld",
                     o->who, (long long)lineno, o->fname, (long long)kept, (long long)width);
            ok = false;
            break;
        }
        width = kept;
        (*rows)++;
    }
    free(fields);
    *ncols = width < 0 ? 0 : width;
    if (ok && o->skip_footer > 0) {
        *rows = o->skip_footer >= *rows ? 0 : *rows - o->skip_footer;
        b->n = *rows * *ncols;
    }
    return ok;
}

static bool read_usecols(ax_interp *in, ax_value *v, columns *c) {
    c->n = 0;
    if (!v || v->kind == AX_V_NONE) return true;
    if (v->kind == AX_V_TUPLE || v->kind == AX_V_LIST) {
        if (v->n > 64) {
            ax_error(in->cx, AX_ERR_VALUE, "at most 64 usecols");
            return false;
        }
        for (int i = 0; i < v->n; i++)
            if (!ax_bi_int(in, v->items[i], "usecols", 0, &c->list[c->n++])) return false;
        return true;
    }
    return ax_bi_int(in, v, "usecols", 0, &c->list[c->n++]);
}

/* comments: a string or None ('#' when absent). */
static bool read_comments(ax_interp *in, ax_value *v, const char *who, const char **out) {
    *out = "#";
    if (!v) return true;
    if (v->kind == AX_V_NONE) {
        *out = NULL;
        return true;
    }
    char what[64];
    snprintf(what, sizeof what, "%s: comments", who);
    return (*out = ax_bi_str(in, v, what)) != NULL;
}

static bool read_delimiter(ax_interp *in, ax_value *v, const char *who, char *out) {
    *out = 0;
    if (!v || v->kind == AX_V_NONE) return true;
    char what[64];
    snprintf(what, sizeof what, "%s: delimiter", who);
    const char *d = ax_bi_str(in, v, what);
    if (!d) return false;
    if (strlen(d) != 1) {
        ax_error(in->cx, AX_ERR_VALUE, "%s: the delimiter must be one character", who);
        return false;
    }
    *out = d[0];
    return true;
}

/* NumPy's _ensure_ndmin_ndarray: squeeze axes of length one when there are more than ndmin,
 * add them (a column for ndmin=2) when fewer. */
static int text_shape(int64_t rows, int64_t ncols, int64_t ndmin, int64_t *shape) {
    int nd = 0;
    if (rows == 0) {
        shape[nd++] = 0; /* an empty file reads as shape (0,) */
    } else {
        if (rows != 1 || ndmin >= 2) shape[nd++] = rows;
        if (ncols != 1 || ndmin >= 2) shape[nd++] = ncols;
        if (nd == 2 && ndmin < 2 && (rows == 1 || ncols == 1)) { /* not reached */
        }
    }
    if (nd == 0 && ndmin >= 1) shape[nd++] = 1;
    if (nd == 1 && ndmin == 2) { /* atleast_2d(a).T: a column */
        shape[1] = 1;
        nd = 2;
    }
    return nd;
}

/* The parsed numbers as an array of `dtype` (-1: the default float), transposed by unpack. */
static ax_value *text_result(ax_interp *in, numbers *b, bool ints, int64_t rows, int64_t ncols,
                             int64_t ndmin, int dtype, bool unpack) {
    int64_t shape[2];
    int nd = text_shape(rows, ncols, ndmin, shape);
    ax_array *raw = ax_array_from_data(in->cx, ints ? AX_I64 : AX_F64, nd, shape,
                                       b->v ? (void *)b->v : (void *)(double[1]){0});
    if (!raw) return NULL;
    ax_dtype to = dtype < 0 ? ax_np_default_float(in->cx) : (ax_dtype)dtype;
    ax_array *r = raw->dtype == to ? raw : ax_convert(in->cx, raw, to, false);
    if (r != raw) ax_array_release(raw);
    if (r && unpack && r->ndim == 2) {
        int64_t tshape[2] = {r->shape[1], r->shape[0]}, tstr[2] = {r->strides[1], r->strides[0]};
        ax_array *t = ax_array_view(in->cx, r, 2, tshape, tstr, r->offset);
        ax_array_release(r);
        r = t ? ax_array_copy(in->cx, t) : NULL;
        if (t) ax_array_release(t);
    }
    return r ? ax_value_or_oom(in, ax_value_array(r)) : NULL;
}

static ax_value *read_table(ax_interp *in, text_opts *o, int dtype, int64_t ndmin, bool unpack) {
    if (ndmin < 0 || ndmin > 2)
        return ax_error(in->cx, AX_ERR_VALUE, "%s: ndmin must be 0, 1 or 2", o->who);
    o->ints =
        dtype >= 0 && (dtype == AX_I32 || dtype == AX_I64 || dtype == AX_U32 || dtype == AX_U8);
    size_t len;
    char *text = read_text(in, o->who, o->fname, &len);
    if (!text) return NULL;
    if (strlen(text) != len) {
        free(text);
        return ax_error(in->cx, AX_ERR_VALUE, "%s: %s is not a text file (it holds NUL bytes)",
                        o->who, o->fname);
    }
    numbers b = {0};
    int64_t rows, ncols;
    bool ok = parse_text(in, o, text, &b, &rows, &ncols);
    free(text);
    ax_value *r = ok ? text_result(in, &b, o->ints, rows, ncols, ndmin, dtype, unpack) : NULL;
    free(b.v);
    return r;
}

static ax_value *bi_loadtxt(ax_interp *in, ax_value *self, const ax_args *args) {
    static const char *const names[] = {"fname",      "dtype",    "comments", "delimiter",
                                        "converters", "skiprows", "usecols",  "unpack",
                                        "ndmin",      "encoding", "max_rows", NULL};
    ax_value *v[11] = {0};
    if (!ax_bi_parse(in, args, self->builtin->name, names, 4, v)) return NULL;
    text_opts o = {.who = "loadtxt", .max_rows = -1};
    int dtype;
    int64_t ndmin;
    bool unpack;
    if (!(o.fname = path_arg(in, v[0], "loadtxt", "fname")) || !ax_bi_dtype(in, v[1], &dtype) ||
        !read_comments(in, v[2], "loadtxt", &o.comments) ||
        !read_delimiter(in, v[3], "loadtxt", &o.delim) ||
        !ax_bi_int(in, v[5], "skiprows", 0, &o.skiprows) || !read_usecols(in, v[6], &o.cols) ||
        !ax_bi_bool(in, v[7], "unpack", false, &unpack) ||
        !ax_bi_int(in, v[8], "ndmin", 0, &ndmin) ||
        !ax_bi_int(in, v[10], "max_rows", -1, &o.max_rows))
        return NULL;
    if (v[4] && v[4]->kind != AX_V_NONE)
        return ax_error(in->cx, AX_ERR_VALUE, "loadtxt: converters are not supported");
    return read_table(in, &o, dtype, ndmin, unpack);
}

/* missing_values: a string, or a list/tuple of strings. */
static bool read_missing(ax_interp *in, ax_value *v, text_opts *o) {
    if (!v || v->kind == AX_V_NONE) return true;
    int n = v->kind == AX_V_LIST || v->kind == AX_V_TUPLE ? v->n : 1;
    if (n > 16)
        return ax_error(in->cx, AX_ERR_VALUE, "genfromtxt: at most 16 missing_values"), false;
    for (int i = 0; i < n; i++) {
        ax_value *s = n == 1 && v->kind == AX_V_STR ? v : v->items[i];
        if (!(o->missing[o->nmissing++] = ax_bi_str(in, s, "genfromtxt: missing_values")))
            return false;
    }
    return true;
}

static ax_value *bi_genfromtxt(ax_interp *in, ax_value *self, const ax_args *args) {
    static const char *const names[] = {
        "fname",      "dtype",          "comments",       "delimiter", "skip_header", "skip_footer",
        "converters", "missing_values", "filling_values", "usecols",   "names",       "unpack",
        "ndmin",      "encoding",       "max_rows",       NULL};
    ax_value *v[15] = {0};
    if (!ax_bi_parse(in, args, self->builtin->name, names, 4, v)) return NULL;
    text_opts o = {.who = "genfromtxt", .max_rows = -1, .genfromtxt = true};
    int dtype;
    int64_t ndmin;
    bool unpack;
    if (!(o.fname = path_arg(in, v[0], "genfromtxt", "fname")) || !ax_bi_dtype(in, v[1], &dtype) ||
        !read_comments(in, v[2], "genfromtxt", &o.comments) ||
        !read_delimiter(in, v[3], "genfromtxt", &o.delim) ||
        !ax_bi_int(in, v[4], "skip_header", 0, &o.skiprows) ||
        !ax_bi_int(in, v[5], "skip_footer", 0, &o.skip_footer) || !read_missing(in, v[7], &o) ||
        !read_usecols(in, v[9], &o.cols) || !ax_bi_bool(in, v[11], "unpack", false, &unpack) ||
        !ax_bi_int(in, v[12], "ndmin", 0, &ndmin) ||
        !ax_bi_int(in, v[14], "max_rows", -1, &o.max_rows))
        return NULL;
    if (v[6] && v[6]->kind != AX_V_NONE)
        return ax_error(in->cx, AX_ERR_VALUE, "genfromtxt: converters are not supported");
    if (v[10] && v[10]->kind != AX_V_NONE &&
        !(v[10]->kind == AX_V_ARRAY && v[10]->arr->ndim == 0 && !ax_array_get_i64(v[10]->arr, 0)))
        return ax_error(in->cx, AX_ERR_TYPE,
                        "genfromtxt: names= makes a structured array, which "
                        "ax does not have; skip the header line with skip_header=1 instead");
    bool ints = dtype >= 0 && dtype != AX_F32 && dtype != AX_F64 && dtype != AX_BOOL;
    double fill = ints ? -1 : NAN;
    if (!ax_bi_double(in, v[8], "filling_values", fill, &fill)) return NULL;
    if (ints)
        o.filling.i = (int64_t)fill;
    else
        o.filling.f = fill;
    return read_table(in, &o, dtype, ndmin, unpack);
}

/* ---------------------------------------------------------------- text files: writing */

/* One conversion of a Python %-format: "%-12.4e" -> flags/width/precision and its letter. */
typedef struct conversion {
    char spec[48]; /* the C format for it, "%-12.4" plus "lld" or "e" */
    char letter;
} conversion;

/* Splits a row format into literal text and conversions: 1, or 0 on anything but numeric ones
 * (%d %i %u %o %x %X %e %E %f %F %g %G with flags, width and precision) or %%, or -1 when
 * memory ran out. */
static int compile_format(const char *fmt, conversion *conv, int *nconv, int cap, char **literals) {
    *nconv = 0;
    ax_strbuf lit;
    ax_strbuf_init(&lit);
    ax_strbuf_append(&lit, "");
    for (const char *p = fmt; *p; p++) {
        if (*p != '%') {
            ax_strbuf_appendf(&lit, "%c", *p);
            continue;
        }
        if (p[1] == '%') {
            ax_strbuf_append(&lit, "%");
            p++;
            continue;
        }
        const char *start = p++;
        while (*p && strchr("-+ #0", *p)) p++;
        while (*p >= '0' && *p <= '9') p++;
        if (*p == '.') p++;
        while (*p >= '0' && *p <= '9') p++;
        if (!*p || !strchr("diuoxXeEfFgG", *p) || p - start > 30 || *nconv == cap) {
            ax_strbuf_free(&lit);
            return 0;
        }
        conversion *c = &conv[(*nconv)++];
        c->letter = *p;
        int n = (int)(p - start);
        bool integer = strchr("diuoxX", *p) != NULL;
        snprintf(c->spec, sizeof c->spec, "%.*s%s%c", n, start, integer ? "ll" : "",
                 *p == 'i' || *p == 'u' ? 'd' : *p);
        ax_strbuf_append(&lit, "\x01"); /* marks where a conversion goes */
    }
    if (lit.failed) {
        ax_strbuf_free(&lit);
        return -1;
    }
    *literals = lit.data;
    return 1;
}

/* A value formatted as Python's % would: integers from the float truncate; nan has no sign. */
static void format_value(ax_strbuf *b, const conversion *c, const ax_array *x, int64_t flat) {
    bool integer = strchr("diuoxX", c->letter) != NULL;
    if (!integer) {
        double v = ax_array_get_f64(x, flat);
        ax_strbuf_appendf(b, c->spec, isnan(v) ? NAN : v);
        return;
    }
    long long v = ax_dtype_is_float(x->dtype) ? (long long)ax_array_get_f64(x, flat)
                                              : (long long)ax_array_get_i64(x, flat);
    if (v < 0 && strchr("oxX", c->letter)) { /* Python prints -0xff, not two's complement */
        ax_strbuf_append(b, "-");
        v = -v;
    }
    ax_strbuf_appendf(b, c->spec, v);
}

typedef struct text_sink {
    ax_ctx *cx;
    ax_file_out *out;
    ax_deflater *gz;
} text_sink;

static bool sink_file(void *arg, const void *data, size_t n) {
    text_sink *s = arg;
    return ax_file_out_write(s->cx, s->out, data, n);
}

/* Writes out what b holds and empties it; false (MemoryError) if b could not hold it all. */
static bool text_put(text_sink *s, ax_strbuf *b, bool last) {
    if (b->failed) return ax_error_oom(s->cx), false;
    bool ok = s->gz ? ax_deflater_write(s->gz, b->data ? b->data : "", b->len, last)
                    : ax_file_out_write(s->cx, s->out, b->data ? b->data : "", b->len);
    b->len = 0;
    if (b->data) b->data[0] = '\0';
    return ok;
}

/* header/footer lines, each prefixed by `comments`. */
static void comment_block(ax_strbuf *b, const char *text, const char *comments,
                          const char *newline) {
    if (!*text) return;
    ax_strbuf_append(b, comments);
    for (const char *p = text; *p; p++) {
        if (*p == '\n')
            ax_strbuf_appendf(b, "\n%s", comments);
        else
            ax_strbuf_appendf(b, "%c", *p);
    }
    ax_strbuf_append(b, newline);
}

typedef struct savetxt_args {
    const char *fname, *fmt, *delimiter, *newline, *header, *footer, *comments;
    char *row_format; /* fmt for a whole row */
} savetxt_args;

static bool write_rows(ax_interp *in, const savetxt_args *s, ax_array *x, text_sink *sink) {
    int64_t rows = x->ndim == 2 ? x->shape[0] : x->shape[0], cols = x->ndim == 2 ? x->shape[1] : 1;
    conversion conv[64];
    int nconv;
    char *lit;
    int compiled = compile_format(s->row_format, conv, &nconv, 64, &lit);
    if (compiled < 0) return no_memory(in);
    if (!compiled)
        return ax_error(in->cx, AX_ERR_VALUE,
                        "savetxt: bad fmt '%.60s' (numeric %% conversions "
                        "only, such as '%%.18e' or '%%d')",
                        s->fmt),
               false;
    if (nconv != cols) {
        free(lit);
        return ax_error(in->cx, AX_ERR_VALUE,
                        "savetxt: fmt has %d %% formats for %lld columns: "
                        "%.60s",
                        nconv, (long long)cols, s->fmt),
               false;
    }
    ax_strbuf b;
    ax_strbuf_init(&b);
    comment_block(&b, s->header, s->comments, s->newline);
    bool ok = true;
    for (int64_t r = 0; ok && r < rows; r++) {
        int k = 0;
        for (const char *p = lit; *p; p++) {
            if (*p == '\x01')
                format_value(&b, &conv[k], x, r * cols + k), k++;
            else
                ax_strbuf_appendf(&b, "%c", *p);
        }
        ax_strbuf_append(&b, s->newline);
        if (b.len > (1 << 16)) ok = text_put(sink, &b, false);
    }
    if (ok) comment_block(&b, s->footer, s->comments, s->newline);
    ok = ok && text_put(sink, &b, true);
    ax_strbuf_free(&b);
    free(lit);
    return ok;
}

/* fmt: one format for every column, a list of them, or one for the whole row. */
static bool row_format(ax_interp *in, ax_value *fmtv, const char *delimiter, int64_t cols,
                       savetxt_args *s) {
    ax_strbuf b;
    ax_strbuf_init(&b);
    if (fmtv && (fmtv->kind == AX_V_LIST || fmtv->kind == AX_V_TUPLE)) {
        if (fmtv->n != cols)
            return ax_error(in->cx, AX_ERR_VALUE, "savetxt: fmt has %d entries for %lld columns",
                            fmtv->n, (long long)cols),
                   false;
        for (int i = 0; i < fmtv->n; i++) {
            const char *f = ax_bi_str(in, fmtv->items[i], "savetxt: fmt");
            if (!f) {
                ax_strbuf_free(&b);
                return false;
            }
            ax_strbuf_appendf(&b, "%s%s", i ? delimiter : "", f);
        }
        s->fmt = "(a list)";
    } else {
        s->fmt = fmtv ? ax_bi_str(in, fmtv, "savetxt: fmt") : "%.18e";
        if (!s->fmt) return false;
        int percents = 0;
        for (const char *p = s->fmt; *p; p++) percents += *p == '%';
        ax_strbuf_append(&b, "");
        for (int64_t i = 0; i < (percents == 1 ? cols : 1); i++)
            ax_strbuf_appendf(&b, "%s%s", i ? delimiter : "", s->fmt);
    }
    if (b.failed || !b.data) {
        ax_strbuf_free(&b);
        return no_memory(in);
    }
    s->row_format = b.data;
    return true;
}

static ax_value *bi_savetxt(ax_interp *in, ax_value *self, const ax_args *args) {
    static const char *const names[] = {"fname",  "X",      "fmt",      "delimiter", "newline",
                                        "header", "footer", "comments", "encoding",  NULL};
    ax_value *v[9] = {0};
    if (!ax_bi_parse(in, args, self->builtin->name, names, 8, v)) return NULL;
    savetxt_args s = {0};
    const char **strs[] = {&s.delimiter, &s.newline, &s.header, &s.footer, &s.comments};
    const char *dflt[] = {" ", "\n", "", "", "# "};
    for (int i = 0; i < 5; i++) {
        *strs[i] = dflt[i];
        if (v[3 + i] && v[3 + i]->kind != AX_V_NONE &&
            !(*strs[i] = ax_bi_str(in, v[3 + i], "savetxt: an option")))
            return NULL;
    }
    if (!(s.fname = path_arg(in, v[0], "savetxt", "fname")) ||
        !ax_bi_required(in, v[1], "savetxt", "X"))
        return NULL;
    ax_array *x = concrete_array(in, v[1], "savetxt");
    if (!x) return NULL;
    if (x->ndim != 1 && x->ndim != 2) {
        int nd = x->ndim;
        ax_array_release(x);
        return ax_error(in->cx, AX_ERR_VALUE, "savetxt: expected a 1-D or 2-D array, got %d-D", nd);
    }
    bool ok = row_format(in, v[2], s.delimiter, x->ndim == 2 ? x->shape[1] : 1, &s);
    ax_file_out out;
    text_sink sink = {in->cx, &out, NULL};
    if (ok && (ok = ax_file_out_open(in->cx, "savetxt", s.fname, &out))) {
        if (ends_with(s.fname, ".gz"))
            ok = (sink.gz = ax_deflater_new(in->cx, s.fname, AX_ZLIB_GZIP, sink_file, &sink));
        ok = ok && write_rows(in, &s, x, &sink) && ax_file_out_commit(in->cx, &out);
        ax_deflater_free(sink.gz);
        ax_file_out_abort(&out);
    }
    free(s.row_format);
    ax_array_release(x);
    return ok ? ax_none() : NULL;
}

/* ---------------------------------------------------------------- safetensors */

/* _safetensors_save(tensors, filename, metadata): tensors a flat dict name -> array. */
static ax_value *bi_safetensors_save(ax_interp *in, ax_value *self, const ax_args *args) {
    static const char *const names[] = {"tensors", "filename", "metadata", NULL};
    ax_value *v[3] = {0};
    if (!ax_bi_parse(in, args, self->builtin->name, names, 3, v)) return NULL;
    const char *path = path_arg(in, v[1], "save_file", "filename");
    if (!path || !ax_bi_required(in, v[0], "save_file", "tensors")) return NULL;
    if (v[0]->kind != AX_V_DICT)
        return ax_error(in->cx, AX_ERR_TYPE, "save_file: tensors must be a dict of arrays");
    ax_value *meta = v[2] && v[2]->kind != AX_V_NONE ? v[2] : NULL;
    if (meta && meta->kind != AX_V_DICT)
        return ax_error(in->cx, AX_ERR_TYPE, "save_file: metadata must be a dict of strings");
    ax_tensor_file t = {0};
    int n = v[0]->n, nm = meta ? meta->n : 0;
    t.names = calloc((size_t)n + 1, sizeof *t.names);
    t.arrays = calloc((size_t)n + 1, sizeof *t.arrays);
    t.meta_keys = calloc((size_t)nm + 1, sizeof *t.meta_keys);
    t.meta_values = calloc((size_t)nm + 1, sizeof *t.meta_values);
    bool ok = t.names && t.arrays && t.meta_keys && t.meta_values;
    if (!ok) ax_error_oom(in->cx);
    for (int i = 0; ok && i < n; i++) {
        ax_value *x = v[0]->items[i];
        if (v[0]->keys[i]->kind != AX_V_STR) {
            ax_error(in->cx, AX_ERR_TYPE, "save_file: tensor names must be strings");
            ok = false;
            break;
        }
        const char *name = v[0]->keys[i]->str;
        if (x->kind == AX_V_DICT) {
            ax_error(in->cx, AX_ERR_TYPE,
                     "save_file: tensors['%s'] is a dict: flatten the tree "
                     "first, e.g. save_file(flatten_dict(params, sep='/'), ...) with "
                     "flatten_dict from flax.traverse_util",
                     name);
            ok = false;
        } else if ((t.arrays[i] = concrete_array(in, x, "save_file"))) {
            ok = (t.names[i] = strdup(name)) != NULL;
            t.n++;
            if (!ok) ax_error_oom(in->cx);
        } else {
            ok = false;
        }
    }
    for (int i = 0; ok && i < nm; i++) {
        if (meta->keys[i]->kind != AX_V_STR) {
            ax_error(in->cx, AX_ERR_TYPE, "save_file: metadata keys must be strings");
            ok = false;
            break;
        }
        if (meta->items[i]->kind != AX_V_STR) {
            ax_error(in->cx, AX_ERR_TYPE, "save_file: metadata['%s'] must be a string",
                     meta->keys[i]->str);
            ok = false;
            break;
        }
        t.meta_keys[i] = strdup(meta->keys[i]->str);
        t.meta_values[i] = strdup(meta->items[i]->str);
        t.nmeta++;
        if (!(ok = t.meta_keys[i] && t.meta_values[i])) ax_error_oom(in->cx);
    }
    ok = ok && ax_safetensors_write(in->cx, path, &t);
    ax_tensor_file_free(&t);
    return ok ? ax_none() : NULL;
}

/* A dict from C strings and values (takes the values, released on failure). */
static ax_value *make_dict(ax_interp *in, int n, char **keys, ax_value **vals) {
    ax_value **k = calloc((size_t)n + 1, sizeof *k);
    bool ok = k != NULL;
    for (int i = 0; ok && i < n; i++) ok = (k[i] = ax_value_str(keys[i])) != NULL;
    if (!ok) {
        for (int i = 0; i < n; i++) {
            if (k && k[i]) ax_value_release(k[i]);
            if (vals[i]) ax_value_release(vals[i]);
        }
        free(k);
        return ax_error_oom(in->cx);
    }
    ax_value *d = ax_value_dict(n, k, vals); /* releases keys and values when it fails */
    free(k);
    return d ? d : ax_error_oom(in->cx);
}

/* _safetensors_load(filename): (tensors, metadata), dicts sorted by name / in file order. */
static ax_value *bi_safetensors_load(ax_interp *in, ax_value *self, const ax_args *args) {
    static const char *const names[] = {"filename", "device", NULL};
    ax_value *v[2] = {0};
    if (!ax_bi_parse(in, args, self->builtin->name, names, 2, v)) return NULL;
    const char *path = path_arg(in, v[0], "load_file", "filename");
    ax_tensor_file t;
    if (!path || !ax_safetensors_read(in->cx, path, &t)) return NULL;
    ax_value **tv = calloc((size_t)t.n + 1, sizeof *tv);
    ax_value **mv = calloc((size_t)t.nmeta + 1, sizeof *mv);
    bool ok = tv && mv;
    for (int i = 0; ok && i < t.n; i++) { /* the arrays move into the values */
        ok = (tv[i] = ax_value_array(t.arrays[i])) != NULL;
        t.arrays[i] = NULL;
    }
    for (int i = 0; ok && i < t.nmeta; i++) ok = (mv[i] = ax_value_str(t.meta_values[i])) != NULL;
    ax_value *items[2] = {NULL, NULL};
    if (ok) {
        items[0] = make_dict(in, t.n, t.names, tv);
        items[1] = make_dict(in, t.nmeta, t.meta_keys, mv);
    } else {
        ax_error_oom(in->cx);
        for (int i = 0; tv && i < t.n; i++)
            if (tv[i]) ax_value_release(tv[i]);
        for (int i = 0; mv && i < t.nmeta; i++)
            if (mv[i]) ax_value_release(mv[i]);
    }
    ax_tensor_file_free(&t);
    free(tv);
    free(mv);
    if (!items[0] || !items[1]) {
        if (items[0]) ax_value_release(items[0]);
        if (items[1]) ax_value_release(items[1]);
        return NULL;
    }
    ax_value *r = ax_value_tuple(2, items);
    return r ? r : ax_error_oom(in->cx);
}

const ax_builtin_def ax_builtins_io[] = {
    {"save", bi_save,
     "save(file, arr): writes arr to file (.npy appended if missing) in NumPy's .npy format",
     AX_BI_NP},
    {"load", bi_load,
     "load(file): the array of a .npy file, or a dict of the arrays of an .npz file", AX_BI_NP},
    {"savez", bi_savez,
     "savez(file, *args, **kwds): writes arrays to an .npz archive (arr_0, ... for positional "
     "ones)",
     AX_BI_NP},
    {"savez_compressed", bi_savez_compressed,
     "savez_compressed(file, *args, **kwds): savez with deflate-compressed members", AX_BI_NP},
    {"loadtxt", bi_loadtxt,
     "loadtxt(fname, dtype=float, comments='#', delimiter=None, skiprows=0, usecols=None, "
     "unpack=False, ndmin=0, max_rows=None): the numbers of a text file (.gz too) as an array",
     AX_BI_NP},
    {"genfromtxt", bi_genfromtxt,
     "genfromtxt(fname, dtype=float, delimiter=None, skip_header=0, skip_footer=0, "
     "missing_values=None, filling_values=None, usecols=None, ...): loadtxt with missing values",
     AX_BI_NP},
    {"savetxt", bi_savetxt,
     "savetxt(fname, X, fmt='%.18e', delimiter=' ', newline='\\n', header='', footer='', "
     "comments='# '): writes a 1-D or 2-D array as text (.gz compresses)",
     AX_BI_NP},
    {"_safetensors_save", bi_safetensors_save,
     "_safetensors_save(tensors, filename, metadata): safetensors.save_file", 0},
    {"_safetensors_load", bi_safetensors_load,
     "_safetensors_load(filename): (tensors, metadata) of a safetensors file", 0},
    {NULL, NULL, NULL, 0},
};

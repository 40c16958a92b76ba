/* safetensors files (see safetensors.h). */
#include "safetensors.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "error.h"
#include "file.h"
#include "format.h"
#include "npy.h"

#define MAX_HEADER 100000000u /* the reference reader's limit */

/* The dtype names, in the reference implementation's order (the writer sorts by it). */
static const struct {
    const char *name;
    ax_raw_type raw; /* kind 0: ax cannot load it */
    int size;
} dtypes[] = {
    {"BOOL", {'b', 1, false}, 1},  {"U8", {'u', 1, false}, 1},    {"I8", {'i', 1, false}, 1},
    {"F8_E5M2", {0, 1, false}, 1}, {"F8_E4M3", {0, 1, false}, 1}, {"F8_E8M0", {0, 1, false}, 1},
    {"I16", {'i', 2, false}, 2},   {"U16", {'u', 2, false}, 2},   {"F16", {'f', 2, false}, 2},
    {"BF16", {'B', 2, false}, 2},  {"I32", {'i', 4, false}, 4},   {"U32", {'u', 4, false}, 4},
    {"F32", {'f', 4, false}, 4},   {"F64", {'f', 8, false}, 8},   {"C64", {0, 8, false}, 8},
    {"I64", {'i', 8, false}, 8},   {"U64", {0, 8, false}, 8},
};
#define NDTYPES (int)(sizeof dtypes / sizeof *dtypes)

static int dtype_index(const char *name) {
    for (int i = 0; i < NDTYPES; i++)
        if (!strcmp(dtypes[i].name, name)) return i;
    return -1;
}

static const char *dtype_name_of(ax_dtype t) {
    switch (t) {
    case AX_BOOL:
        return "BOOL";
    case AX_U8:
        return "U8";
    case AX_I32:
        return "I32";
    case AX_U32:
        return "U32";
    case AX_I64:
        return "I64";
    case AX_F32:
        return "F32";
    default:
        return "F64";
    }
}

static bool valid_utf8(const unsigned char *s, size_t n) {
    for (size_t i = 0; i < n;) {
        unsigned c = s[i];
        int len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
        if (!len || i + (size_t)len > n || (len == 2 && c < 0xc2)) return false;
        uint32_t cp = len == 1 ? c : c & (0x7f >> len);
        for (int k = 1; k < len; k++) {
            if ((s[i + k] & 0xc0) != 0x80) return false;
            cp = cp << 6 | (s[i + k] & 0x3f);
        }
        if ((len == 3 && (cp < 0x800 || (cp >= 0xd800 && cp < 0xe000))) ||
            (len == 4 && (cp < 0x10000 || cp > 0x10ffff)))
            return false;
        i += (size_t)len;
    }
    return true;
}

/* ---------------------------------------------------------------- a small JSON reader */

typedef struct json {
    const char *p, *end;
    ax_ctx *cx;
    const char *path;
} json;

static void *bad_json(json *j, const char *why) {
    return ax_error(j->cx, AX_ERR_VALUE, "%s is not a valid safetensors file: %s", j->path, why);
}

static void ws(json *j) {
    while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r'))
        j->p++;
}

static bool eat(json *j, char c) {
    ws(j);
    if (j->p < j->end && *j->p == c) {
        j->p++;
        return true;
    }
    return false;
}

static int hex4(const char *p) {
    int v = 0;
    for (int i = 0; i < 4; i++) {
        int c = p[i], d = c >= '0' && c <= '9'   ? c - '0'
                          : c >= 'a' && c <= 'f' ? c - 'a' + 10
                          : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                                 : -1;
        if (d < 0) return -1;
        v = v * 16 + d;
    }
    return v;
}

static char *put_utf8(char *o, uint32_t cp) {
    if (cp < 0x80) {
        *o++ = (char)cp;
    } else if (cp < 0x800) {
        *o++ = (char)(0xc0 | cp >> 6);
        *o++ = (char)(0x80 | (cp & 0x3f));
    } else if (cp < 0x10000) {
        *o++ = (char)(0xe0 | cp >> 12);
        *o++ = (char)(0x80 | ((cp >> 6) & 0x3f));
        *o++ = (char)(0x80 | (cp & 0x3f));
    } else {
        *o++ = (char)(0xf0 | cp >> 18);
        *o++ = (char)(0x80 | ((cp >> 12) & 0x3f));
        *o++ = (char)(0x80 | ((cp >> 6) & 0x3f));
        *o++ = (char)(0x80 | (cp & 0x3f));
    }
    return o;
}

/* A string, unescaped into a new buffer (NULL for `skip`); NUL characters are refused. */
static bool string(json *j, char **out) {
    if (!eat(j, '"')) return bad_json(j, "expected a string"), false;
    const char *start = j->p;
    while (j->p < j->end && *j->p != '"') j->p += *j->p == '\\' && j->p + 1 < j->end ? 2 : 1;
    if (j->p >= j->end) return bad_json(j, "unterminated string"), false;
    const char *stop = j->p++;
    char *s = malloc((size_t)(stop - start) + 1), *o = s;
    if (!s) return ax_error_oom(j->cx), false;
    for (const char *p = start; p < stop; p++) {
        if ((unsigned char)*p < 0x20) goto bad;
        if (*p != '\\') {
            *o++ = *p;
            continue;
        }
        char c = *++p;
        const char *plain = strchr("\"\\/bfnrt", c);
        if (c && plain) {
            *o++ = "\"\\/\b\f\n\r\t"[plain - "\"\\/bfnrt"];
            continue;
        }
        if (c != 'u' || stop - p < 5) goto bad;
        int cp = hex4(p + 1);
        p += 4;
        if (cp >= 0xd800 && cp < 0xdc00) { /* a surrogate pair */
            int lo = stop - p >= 7 && p[1] == '\\' && p[2] == 'u' ? hex4(p + 3) : -1;
            if (lo < 0xdc00 || lo >= 0xe000) goto bad;
            cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
            p += 6;
        }
        if (cp <= 0 || (cp >= 0xdc00 && cp < 0xe000)) goto bad;
        o = put_utf8(o, (uint32_t)cp);
    }
    *o = '\0';
    if (!valid_utf8((unsigned char *)s, (size_t)(o - s))) goto bad;
    if (out)
        *out = s;
    else
        free(s);
    return true;
bad:
    free(s);
    return bad_json(j, "a bad string in the header"), false;
}

static bool uint_value(json *j, uint64_t *v) {
    ws(j);
    if (j->p >= j->end || *j->p < '0' || *j->p > '9') return bad_json(j, "expected a size"), false;
    *v = 0;
    while (j->p < j->end && *j->p >= '0' && *j->p <= '9') {
        if (*v > (UINT64_MAX - 9) / 10) return bad_json(j, "a number overflows"), false;
        *v = *v * 10 + (uint64_t)(*j->p++ - '0');
    }
    return true;
}

/* Skips any value (for fields the format does not define), nesting at most 64 deep. */
static bool skip_value(json *j, int depth) {
    ws(j);
    if (depth > 64 || j->p >= j->end) return bad_json(j, "a malformed value"), false;
    char c = *j->p;
    if (c == '"') return string(j, NULL);
    if (c == '{' || c == '[') {
        j->p++;
        char close = c == '{' ? '}' : ']';
        if (eat(j, close)) return true;
        do {
            if (c == '{' && (!string(j, NULL) || !eat(j, ':')))
                return ax_error_pending(j->cx) ? false : (bad_json(j, "expected ':'"), false);
            if (!skip_value(j, depth + 1)) return false;
        } while (eat(j, ','));
        return eat(j, close) ? true : (bad_json(j, "an unclosed object or array"), false);
    }
    const char *start = j->p;
    while (j->p < j->end && strchr("+-.0123456789eEtruefalsn", *j->p)) j->p++;
    return j->p > start ? true : (bad_json(j, "a malformed value"), false);
}

typedef struct entry {
    char *name;
    int dtype; /* index into dtypes */
    int ndim;
    int64_t shape[AX_MAX_RANK];
    uint64_t begin, end;
} entry;

static bool shape_value(json *j, entry *e) {
    if (!eat(j, '[')) return bad_json(j, "a shape is not a list"), false;
    e->ndim = 0;
    if (eat(j, ']')) return true;
    do {
        uint64_t v;
        if (!uint_value(j, &v)) return false;
        if (e->ndim == AX_MAX_RANK)
            return ax_error(j->cx, AX_ERR_VALUE,
                            "%s: tensor '%s' has more than %d dimensions, "
                            "ax's limit",
                            j->path, e->name, AX_MAX_RANK),
                   false;
        if (v > INT64_MAX) return bad_json(j, "a size overflows"), false;
        e->shape[e->ndim++] = (int64_t)v;
    } while (eat(j, ','));
    return eat(j, ']') ? true : (bad_json(j, "a shape is not a list of sizes"), false);
}

static bool tensor_info(json *j, entry *e) {
    if (!eat(j, '{')) return bad_json(j, "a tensor's entry is not an object"), false;
    bool seen[3] = {false, false, false};
    e->dtype = -1;
    if (!eat(j, '}')) do {
            char *key;
            if (!string(j, &key)) return false;
            bool ok = eat(j, ':') || (bad_json(j, "expected ':'"), false);
            if (ok && !strcmp(key, "dtype")) {
                char *d;
                ok = string(j, &d);
                if (ok) {
                    e->dtype = dtype_index(d);
                    if (e->dtype < 0)
                        ax_error(j->cx, AX_ERR_VALUE,
                                 "%s: tensor '%s' has the unknown dtype '%.40s'", j->path, e->name,
                                 d);
                    ok = e->dtype >= 0;
                    free(d);
                }
                seen[0] = true;
            } else if (ok && !strcmp(key, "shape")) {
                ok = shape_value(j, e);
                seen[1] = true;
            } else if (ok && !strcmp(key, "data_offsets")) {
                ok = eat(j, '[') && uint_value(j, &e->begin) && eat(j, ',') &&
                     uint_value(j, &e->end) && eat(j, ']');
                if (!ok && !ax_error_pending(j->cx))
                    bad_json(j, "data_offsets is not [begin, end]");
                seen[2] = true;
            } else if (ok) {
                ok = skip_value(j, 0);
            }
            free(key);
            if (!ok) return false;
        } while (eat(j, ','));
    if (!eat(j, '}')) return bad_json(j, "a tensor's entry is not closed"), false;
    if (!seen[0] || !seen[1] || !seen[2])
        return ax_error(j->cx, AX_ERR_VALUE, "%s: tensor '%s' lacks dtype, shape or data_offsets",
                        j->path, e->name),
               false;
    return true;
}

typedef struct header {
    entry *e;
    int n, cap;
    ax_tensor_file *meta; /* receives the metadata */
} header;

static bool metadata(json *j, ax_tensor_file *t) {
    ws(j);
    if (j->end - j->p >= 4 && !memcmp(j->p, "null", 4)) {
        j->p += 4;
        return true;
    }
    if (!eat(j, '{')) return bad_json(j, "__metadata__ is not an object"), false;
    if (eat(j, '}')) return true;
    do {
        char **k = realloc(t->meta_keys, (size_t)(t->nmeta + 1) * sizeof *k);
        if (k) t->meta_keys = k;
        char **v = realloc(t->meta_values, (size_t)(t->nmeta + 1) * sizeof *v);
        if (v) t->meta_values = v;
        if (!k || !v) return ax_error_oom(j->cx), false;
        t->meta_keys[t->nmeta] = t->meta_values[t->nmeta] = NULL;
        t->nmeta++;
        if (!string(j, &t->meta_keys[t->nmeta - 1])) return false;
        if (!eat(j, ':')) return bad_json(j, "expected ':'"), false;
        ws(j);
        if (j->p < j->end && *j->p != '"')
            return bad_json(j, "__metadata__ values must be strings"), false;
        if (!string(j, &t->meta_values[t->nmeta - 1])) return false;
    } while (eat(j, ','));
    return eat(j, '}') ? true : (bad_json(j, "__metadata__ is not closed"), false);
}

static bool parse_header(json *j, header *h) {
    if (!eat(j, '{')) return bad_json(j, "the header is not a JSON object"), false;
    bool seen_meta = false;
    if (!eat(j, '}')) do {
            char *name;
            if (!string(j, &name)) return false;
            if (!eat(j, ':')) {
                free(name);
                return bad_json(j, "expected ':'"), false;
            }
            if (!strcmp(name, "__metadata__")) {
                free(name);
                if (seen_meta) return bad_json(j, "two __metadata__ entries"), false;
                seen_meta = true;
                if (!metadata(j, h->meta)) return false;
                continue;
            }
            if (h->n == h->cap) {
                int cap = h->cap ? 2 * h->cap : 16;
                entry *e = realloc(h->e, (size_t)cap * sizeof *e);
                if (!e) {
                    free(name);
                    return ax_error_oom(j->cx), false;
                }
                h->e = e;
                h->cap = cap;
            }
            h->e[h->n] = (entry){.name = name};
            if (!tensor_info(j, &h->e[h->n++])) return false;
        } while (eat(j, ','));
    if (!eat(j, '}')) return bad_json(j, "the header is not closed"), false;
    ws(j);
    if (j->p != j->end) return bad_json(j, "text after the header"), false;
    return true;
}

static int by_offsets(const void *a, const void *b) {
    const entry *x = a, *y = b;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    return x->end < y->end ? -1 : x->end > y->end;
}

static int by_name(const void *a, const void *b) {
    return strcmp(((const entry *)a)->name, ((const entry *)b)->name);
}

/* The reference reader's checks: offsets tile [0, data_len) in order, sizes match shapes. */
static bool validate(ax_ctx *cx, const char *path, header *h, uint64_t data_len) {
    qsort(h->e, (size_t)h->n, sizeof *h->e, by_offsets);
    uint64_t at = 0;
    for (int i = 0; i < h->n; i++) {
        entry *e = &h->e[i];
        uint64_t nbytes;
        if (!ax_raw_nbytes(e->ndim, e->shape, dtypes[e->dtype].size, &nbytes))
            return ax_error(cx, AX_ERR_VALUE, "%s: tensor '%s' has a shape whose size overflows",
                            path, e->name),
                   false;
        if (e->begin != at || e->end < e->begin || e->end - e->begin != nbytes)
            return ax_error(cx, AX_ERR_VALUE,
                            "%s: tensor '%s' has invalid data_offsets [%" PRIu64 ", %" PRIu64
                            "] (its %s data needs %" PRIu64 " bytes from offset %" PRIu64 ")",
                            path, e->name, e->begin, e->end, dtypes[e->dtype].name, nbytes, at),
                   false;
        at = e->end;
    }
    if (at != data_len)
        return ax_error(cx, AX_ERR_VALUE,
                        "%s: the tensors cover %" PRIu64 " bytes of data but "
                        "the file holds %" PRIu64 " (truncated or corrupt file?)",
                        path, at, data_len),
               false;
    qsort(h->e, (size_t)h->n, sizeof *h->e, by_name);
    for (int i = 1; i < h->n; i++)
        if (!strcmp(h->e[i].name, h->e[i - 1].name))
            return ax_error(cx, AX_ERR_VALUE, "%s: the tensor name '%s' appears twice", path,
                            h->e[i].name),
                   false;
    return true;
}

static bool load_tensors(ax_ctx *cx, const char *path, int fd, uint64_t data_start, header *h,
                         ax_tensor_file *t) {
    t->names = calloc((size_t)h->n + 1, sizeof *t->names);
    t->arrays = calloc((size_t)h->n + 1, sizeof *t->arrays);
    if (!t->names || !t->arrays) return ax_error_oom(cx), false;
    for (int i = 0; i < h->n; i++) {
        entry *e = &h->e[i];
        ax_raw_type raw = dtypes[e->dtype].raw;
        if (!raw.kind)
            return ax_error(cx, AX_ERR_TYPE,
                            "%s: tensor '%s' is %s, which no ax dtype holds "
                            "exactly (ax has BOOL, U8, I32, U32, I64, F32, F64; I8, I16, U16, F16 "
                            "and BF16 load widened)",
                            path, e->name, dtypes[e->dtype].name),
                   false;
        ax_fd_reader r = {cx, fd, data_start + e->begin, path};
        ax_array *a = ax_raw_array(cx, raw, e->ndim, e->shape, false, ax_fd_read, &r);
        if (!a) return false;
        t->arrays[t->n] = a;
        t->names[t->n++] = e->name;
        e->name = NULL;
    }
    return true;
}

bool ax_safetensors_read(ax_ctx *cx, const char *path, ax_tensor_file *t) {
    memset(t, 0, sizeof *t);
    uint64_t size;
    FILE *f = ax_file_open_read(cx, "load_file", path, &size);
    if (!f) return false;
    int fd = fileno(f);
    unsigned char len8[8];
    ax_fd_reader r = {cx, fd, 0, path};
    char *text = NULL;
    header h = {.meta = t};
    bool ok = false;
    if (size < 8) {
        ax_error(cx, AX_ERR_VALUE,
                 "%s is not a valid safetensors file: %" PRIu64 " bytes, "
                 "shorter than the 8-byte header length",
                 path, size);
        goto done;
    }
    if (!ax_fd_read(&r, len8, 8)) goto done;
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--) n = n << 8 | len8[i];
    if (n > MAX_HEADER || n > size - 8) {
        ax_error(cx, AX_ERR_VALUE,
                 "%s is not a valid safetensors file: its header length %" PRIu64 " is %s", path, n,
                 n > MAX_HEADER ? "over the 100 MB limit" : "past the end of the file");
        goto done;
    }
    if (!(text = malloc(n + 1))) {
        ax_error_oom(cx);
        goto done;
    }
    if (!ax_fd_read(&r, text, n)) goto done;
    text[n] = '\0';
    json j = {text, text + n, cx, path};
    if (!valid_utf8((unsigned char *)text, n)) {
        bad_json(&j, "the header is not UTF-8");
        goto done;
    }
    ok = parse_header(&j, &h) && validate(cx, path, &h, size - 8 - n) &&
         load_tensors(cx, path, fd, 8 + n, &h, t);
done:
    for (int i = 0; i < h.n; i++) free(h.e[i].name);
    free(h.e);
    free(text);
    fclose(f);
    if (!ok) ax_tensor_file_free(t);
    return ok;
}

/* ---------------------------------------------------------------- writing */

static void json_string(ax_strbuf *b, const char *s) {
    ax_strbuf_append(b, "\"");
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        const char *esc = *p == '"'    ? "\\\""
                          : *p == '\\' ? "\\\\"
                          : *p == '\n' ? "\\n"
                          : *p == '\r' ? "\\r"
                          : *p == '\t' ? "\\t"
                          : *p == '\b' ? "\\b"
                          : *p == '\f' ? "\\f"
                                       : NULL;
        if (esc)
            ax_strbuf_append(b, esc);
        else if (*p < 0x20)
            ax_strbuf_appendf(b, "\\u%04x", *p);
        else
            ax_strbuf_appendf(b, "%c", *p);
    }
    ax_strbuf_append(b, "\"");
}

typedef struct out_tensor {
    const char *name;
    ax_array *a; /* contiguous */
    int rank;    /* of its dtype name in the reference order */
} out_tensor;

static int write_order(const void *a, const void *b) {
    const out_tensor *x = a, *y = b;
    if (x->rank != y->rank) return y->rank - x->rank;
    return strcmp(x->name, y->name);
}

static bool check_text(ax_ctx *cx, const char *path, const char *what, const char *s) {
    if (valid_utf8((const unsigned char *)s, strlen(s))) return true;
    ax_error(cx, AX_ERR_VALUE, "save_file %s: the %s '%.60s' is not valid UTF-8", path, what, s);
    return false;
}

static bool write_file(ax_ctx *cx, const char *path, const ax_tensor_file *t, out_tensor *ts) {
    for (int i = 0; i < t->n; i++)
        for (int k = i + 1; k < t->n; k++)
            if (!strcmp(t->names[i], t->names[k]))
                return ax_error(cx, AX_ERR_VALUE,
                                "save_file %s: the tensor name '%s' appears "
                                "twice",
                                path, t->names[i]),
                       false;
    qsort(ts, (size_t)t->n, sizeof *ts, write_order);
    ax_strbuf b;
    ax_strbuf_init(&b);
    ax_strbuf_append(&b, "{");
    if (t->nmeta) {
        ax_strbuf_append(&b, "\"__metadata__\":{");
        for (int i = 0; i < t->nmeta; i++) {
            if (i) ax_strbuf_append(&b, ",");
            json_string(&b, t->meta_keys[i]);
            ax_strbuf_append(&b, ":");
            json_string(&b, t->meta_values[i]);
        }
        ax_strbuf_append(&b, "}");
    }
    uint64_t at = 0;
    for (int i = 0; i < t->n; i++) {
        ax_array *a = ts[i].a;
        if (i || t->nmeta) ax_strbuf_append(&b, ",");
        json_string(&b, ts[i].name);
        ax_strbuf_appendf(&b, ":{\"dtype\":\"%s\",\"shape\":[", dtype_name_of(a->dtype));
        for (int d = 0; d < a->ndim; d++)
            ax_strbuf_appendf(&b, "%s%" PRId64, d ? "," : "", a->shape[d]);
        uint64_t nbytes = (uint64_t)a->size * ax_dtype_size(a->dtype);
        ax_strbuf_appendf(&b, "],\"data_offsets\":[%" PRIu64 ",%" PRIu64 "]}", at, at + nbytes);
        at += nbytes;
    }
    ax_strbuf_append(&b, "}");
    while (!b.failed && b.len % 8) ax_strbuf_append(&b, " ");
    if (b.failed) {
        ax_strbuf_free(&b);
        return ax_error_oom(cx), false;
    }
    unsigned char len8[8];
    for (int i = 0; i < 8; i++) len8[i] = (unsigned char)((uint64_t)b.len >> (8 * i));
    ax_file_out out;
    bool ok = ax_file_out_open(cx, "save_file", path, &out) &&
              ax_file_out_write(cx, &out, len8, 8) && ax_file_out_write(cx, &out, b.data, b.len);
    ax_strbuf_free(&b);
    for (int i = 0; ok && i < t->n; i++)
        ok = ax_file_out_write(cx, &out, ax_array_data(ts[i].a),
                               (size_t)ts[i].a->size * ax_dtype_size(ts[i].a->dtype));
    ok = ok && ax_file_out_commit(cx, &out);
    ax_file_out_abort(&out);
    return ok;
}

bool ax_safetensors_write(ax_ctx *cx, const char *path, const ax_tensor_file *t) {
    for (int i = 0; i < t->n; i++)
        if (!check_text(cx, path, "tensor name", t->names[i])) return false;
    for (int i = 0; i < t->nmeta; i++)
        if (!check_text(cx, path, "metadata key", t->meta_keys[i]) ||
            !check_text(cx, path, "metadata value", t->meta_values[i]))
            return false;
    out_tensor *ts = calloc((size_t)t->n + 1, sizeof *ts);
    if (!ts) return ax_error_oom(cx), false;
    bool ok = true;
    for (int i = 0; ok && i < t->n; i++) {
        ts[i] = (out_tensor){.name = t->names[i],
                             .a = ax_array_contiguous(cx, t->arrays[i]),
                             .rank = dtype_index(dtype_name_of(t->arrays[i]->dtype))};
        ok = ts[i].a != NULL;
    }
    ok = ok && write_file(cx, path, t, ts);
    for (int i = 0; i < t->n; i++)
        if (ts[i].a) ax_array_release(ts[i].a);
    free(ts);
    return ok;
}

void ax_tensor_file_free(ax_tensor_file *t) {
    for (int i = 0; i < t->n; i++) {
        free(t->names[i]);
        ax_array_release(t->arrays[i]);
    }
    for (int i = 0; i < t->nmeta; i++) {
        free(t->meta_keys[i]);
        free(t->meta_values[i]);
    }
    free(t->names);
    free(t->arrays);
    free(t->meta_keys);
    free(t->meta_values);
    memset(t, 0, sizeof *t);
}

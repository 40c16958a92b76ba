/* NumPy's .npy format and the element conversions of array I/O (see npy.h). */
#include "npy.h"

#include <ctype.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "array I/O assumes a little-endian host (the byte order of .npy and safetensors files)"
#endif

/* ---------------------------------------------------------------- element types */

bool ax_raw_type_dtype(ax_raw_type t, ax_dtype *out) {
    switch (t.kind) {
    case 'b':
        *out = AX_BOOL;
        return t.size == 1;
    case 'i':
        *out = t.size == 8 ? AX_I64 : AX_I32;
        return t.size == 1 || t.size == 2 || t.size == 4 || t.size == 8;
    case 'u':
        *out = t.size == 1 ? AX_U8 : t.size == 4 ? AX_U32 : AX_I32;
        return t.size == 1 || t.size == 2 || t.size == 4;
    case 'f':
        *out = t.size == 8 ? AX_F64 : AX_F32;
        return t.size == 2 || t.size == 4 || t.size == 8;
    case 'B':
        *out = AX_F32;
        return t.size == 2;
    default:
        return false;
    }
}

bool ax_raw_nbytes(int ndim, const int64_t *shape, int size, uint64_t *nbytes) {
    uint64_t n = (uint64_t)size;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 0) return false;
        if (shape[i] && n > (UINT64_MAX >> 1) / (uint64_t)shape[i]) return false;
        n *= (uint64_t)shape[i];
    }
    *nbytes = n;
    return true;
}

static float half_to_float(uint16_t h) {
    int exp = (h >> 10) & 0x1f, man = h & 0x3ff;
    float v = exp == 0    ? ldexpf((float)man, -24)
              : exp == 31 ? (man ? NAN : INFINITY)
                          : ldexpf((float)(man | 0x400), exp - 25);
    return h & 0x8000 ? -v : v;
}

static float bfloat_to_float(uint16_t h) {
    uint32_t bits = (uint32_t)h << 16;
    float v;
    memcpy(&v, &bits, sizeof v);
    return v;
}

/* One raw element (already in host byte order) stored as dtype `to` at dst. */
static void convert_one(ax_raw_type t, const unsigned char *p, ax_dtype to, void *dst) {
    uint16_t u16;
    int8_t i8;
    int16_t i16;
    if (t.kind == 'f' && t.size == 2) {
        memcpy(&u16, p, 2);
        *(float *)dst = half_to_float(u16);
    } else if (t.kind == 'B') {
        memcpy(&u16, p, 2);
        *(float *)dst = bfloat_to_float(u16);
    } else if (t.kind == 'i' && t.size == 1) {
        memcpy(&i8, p, 1);
        *(int32_t *)dst = i8;
    } else if (t.kind == 'i' && t.size == 2) {
        memcpy(&i16, p, 2);
        *(int32_t *)dst = i16;
    } else if (t.kind == 'u' && t.size == 2) {
        memcpy(&u16, p, 2);
        *(int32_t *)dst = u16;
    } else if (t.kind == 'b') {
        *(uint8_t *)dst = p[0] != 0;
    } else {
        memcpy(dst, p, ax_dtype_size(to)); /* same layout */
    }
}

static void swap_bytes(unsigned char *p, int size, size_t count) {
    for (size_t i = 0; i < count; i++, p += size)
        for (int a = 0, b = size - 1; a < b; a++, b--) {
            unsigned char c = p[a];
            p[a] = p[b];
            p[b] = c;
        }
}

/* Reads a's elements, converting from t (a is contiguous, of t's ax dtype). */
static bool read_converted(ax_array *a, ax_raw_type t, ax_raw_reader read, void *src) {
    size_t out_size = ax_dtype_size(a->dtype);
    bool direct = !t.swap && (size_t)t.size == out_size && t.kind != 'b' && t.kind != 'B';
    unsigned char *dst = ax_array_data(a);
    if (direct) return read(src, dst, (size_t)a->size * out_size);
    enum { CHUNK = 1 << 14 };
    unsigned char buf[CHUNK * 8];
    for (int64_t done = 0; done < a->size;) {
        size_t n = a->size - done < CHUNK ? (size_t)(a->size - done) : CHUNK;
        if (!read(src, buf, n * (size_t)t.size)) return false;
        if (t.swap) swap_bytes(buf, t.size, n);
        for (size_t i = 0; i < n; i++)
            convert_one(t, buf + i * (size_t)t.size, a->dtype, dst + (done + i) * out_size);
        done += (int64_t)n;
    }
    return true;
}

ax_array *ax_raw_array(ax_ctx *cx, ax_raw_type t, int ndim, const int64_t *shape, bool fortran,
                       ax_raw_reader read, void *src) {
    ax_dtype dtype;
    if (!ax_raw_type_dtype(t, &dtype) || t.size > 8)
        return ax_error(cx, AX_ERR_TYPE, "unsupported element type");
    /* Fortran order is C order of the reversed shape; transposed back below. */
    int64_t stored[AX_MAX_RANK];
    for (int i = 0; i < ndim; i++) stored[i] = fortran ? shape[ndim - 1 - i] : shape[i];
    ax_array *a = ax_array_new(cx, dtype, ndim, stored);
    if (!a) return NULL;
    if (!read_converted(a, t, read, src)) {
        ax_array_release(a);
        return NULL;
    }
    if (!fortran || ndim < 2) return a;
    int64_t st[AX_MAX_RANK], rev[AX_MAX_RANK];
    ax_shape_strides(ndim, stored, st);
    for (int i = 0; i < ndim; i++) rev[i] = st[ndim - 1 - i];
    ax_array *view = ax_array_view(cx, a, ndim, shape, rev, 0);
    ax_array_release(a);
    if (!view) return NULL;
    ax_array *c = ax_array_copy(cx, view);
    ax_array_release(view);
    return c;
}

/* ---------------------------------------------------------------- reading headers */

size_t ax_npy_header_length(ax_ctx *cx, const char *name, const unsigned char *buf, size_t n) {
    if (n < 8 || memcmp(buf, AX_NPY_MAGIC, 6) != 0) {
        ax_error(cx, AX_ERR_VALUE, "%s is not a .npy file (no \\x93NUMPY magic string)", name);
        return 0;
    }
    int major = buf[6], minor = buf[7];
    if ((major != 1 && major != 2 && major != 3) || minor != 0) {
        ax_error(cx, AX_ERR_VALUE, "%s: unsupported .npy format version %d.%d", name, major, minor);
        return 0;
    }
    size_t fixed = major == 1 ? 10 : 12;
    if (n < fixed) {
        ax_error(cx, AX_ERR_VALUE, "%s: the .npy header is truncated", name);
        return 0;
    }
    uint64_t len = major == 1 ? (uint64_t)buf[8] | (uint64_t)buf[9] << 8
                              : (uint64_t)buf[8] | (uint64_t)buf[9] << 8 | (uint64_t)buf[10] << 16 |
                                    (uint64_t)buf[11] << 24;
    if (len > (1u << 20)) {
        ax_error(cx, AX_ERR_VALUE, "%s: the .npy header claims %" PRIu64 " bytes (corrupt file?)",
                 name, len);
        return 0;
    }
    return fixed + (size_t)len;
}

typedef struct scan {
    const char *p, *end;
} scan;

static void skip_space(scan *s) {
    while (s->p < s->end && isspace((unsigned char)*s->p)) s->p++;
}

static bool accept(scan *s, char c) {
    skip_space(s);
    if (s->p < s->end && *s->p == c) {
        s->p++;
        return true;
    }
    return false;
}

/* A quoted string (either quote, no escapes: NumPy's keys and descrs have none). */
static bool read_string(scan *s, char *out, size_t cap) {
    skip_space(s);
    if (s->p >= s->end || (*s->p != '\'' && *s->p != '"')) return false;
    char q = *s->p++;
    size_t n = 0;
    while (s->p < s->end && *s->p != q) {
        if (*s->p == '\\' || n + 1 >= cap) return false;
        out[n++] = *s->p++;
    }
    if (s->p >= s->end) return false;
    s->p++;
    out[n] = '\0';
    return true;
}

static bool read_word(scan *s, const char *word) {
    skip_space(s);
    size_t n = strlen(word);
    if ((size_t)(s->end - s->p) < n || memcmp(s->p, word, n) != 0) return false;
    s->p += n;
    return true;
}

static void *bad_header(ax_ctx *cx, const char *name, const char *why) {
    return ax_error(cx, AX_ERR_VALUE, "%s: corrupt .npy header (%s)", name, why);
}

/* (3, 4), (3,), (), with Python 2's long suffix (3L, 4L) too. */
static bool read_shape(ax_ctx *cx, const char *name, scan *s, ax_npy_header *h) {
    if (!accept(s, '(')) return bad_header(cx, name, "the shape is not a tuple"), false;
    h->ndim = 0;
    while (!accept(s, ')')) {
        skip_space(s);
        if (s->p >= s->end || !isdigit((unsigned char)*s->p))
            return bad_header(cx, name, "the shape is not a tuple of sizes"), false;
        int64_t v = 0;
        while (s->p < s->end && isdigit((unsigned char)*s->p)) {
            if (v > (INT64_MAX - 9) / 10) return bad_header(cx, name, "a size overflows"), false;
            v = v * 10 + (*s->p++ - '0');
        }
        if (s->p < s->end && (*s->p == 'L' || *s->p == 'l')) s->p++;
        if (h->ndim == AX_MAX_RANK) {
            ax_error(cx, AX_ERR_VALUE, "%s: the array has more than %d dimensions, ax's limit",
                     name, AX_MAX_RANK);
            return false;
        }
        h->shape[h->ndim++] = v;
        if (!accept(s, ',')) {
            if (!accept(s, ')')) return bad_header(cx, name, "the shape is not a tuple"), false;
            break;
        }
    }
    return true;
}

/* NumPy's name of an element type, for messages. */
static void numpy_type_name(char kind, int size, char *out, size_t cap) {
    switch (kind) {
    case 'b':
        snprintf(out, cap, "bool");
        break;
    case 'i':
        snprintf(out, cap, "int%d", 8 * size);
        break;
    case 'u':
        snprintf(out, cap, "uint%d", 8 * size);
        break;
    case 'f':
        snprintf(out, cap, "float%d", 8 * size);
        break;
    case 'c':
        snprintf(out, cap, "complex%d", 8 * size);
        break;
    case 'U':
        snprintf(out, cap, "str");
        break;
    case 'S':
        snprintf(out, cap, "bytes");
        break;
    case 'O':
        snprintf(out, cap, "object");
        break;
    case 'V':
        snprintf(out, cap, "void%d", 8 * size);
        break;
    case 'M':
        snprintf(out, cap, "datetime64");
        break;
    case 'm':
        snprintf(out, cap, "timedelta64");
        break;
    default:
        snprintf(out, cap, "'%c'", kind);
        break;
    }
}

static bool parse_descr(ax_ctx *cx, const char *name, const char *d, ax_raw_type *t) {
    const char *p = d;
    char order = strchr("<>|=", *p) && *p ? *p++ : '=';
    char kind = *p ? *p++ : 0;
    int size = 0;
    while (isdigit((unsigned char)*p) && size < 100000) size = size * 10 + (*p++ - '0');
    ax_dtype dt;
    *t = (ax_raw_type){.kind = kind, .size = size, .swap = order == '>' && size > 1};
    if (!strchr("biufcUSOVMm", kind) || !kind) {
        ax_error(cx, AX_ERR_VALUE, "%s: corrupt .npy header (unknown dtype '%s')", name, d);
        return false;
    }
    if (*p || !ax_raw_type_dtype(*t, &dt)) {
        char tn[32];
        numpy_type_name(kind, size, tn, sizeof tn);
        ax_error(cx, AX_ERR_TYPE,
                 "%s holds %s elements ('%s'), which no ax dtype holds exactly (ax has bool, "
                 "uint8, int32, uint32, int64, float32, float64)",
                 name, *p ? d : tn, d);
        return false;
    }
    return true;
}

bool ax_npy_parse_header(ax_ctx *cx, const char *name, const unsigned char *buf, size_t n,
                         ax_npy_header *h) {
    size_t total = ax_npy_header_length(cx, name, buf, n);
    if (!total) return false;
    if (n < total) {
        ax_error(cx, AX_ERR_VALUE, "%s: the .npy header is truncated", name);
        return false;
    }
    memset(h, 0, sizeof *h);
    h->data_offset = total;
    scan s = {(const char *)buf + (buf[6] == 1 ? 10 : 12), (const char *)buf + total};
    if (!accept(&s, '{')) return bad_header(cx, name, "not a dict"), false;
    bool seen[3] = {false, false, false};
    char key[32], descr[64];
    while (!accept(&s, '}')) {
        if (!read_string(&s, key, sizeof key) || !accept(&s, ':'))
            return bad_header(cx, name, "expected 'key': value"), false;
        if (!strcmp(key, "descr")) {
            skip_space(&s);
            if (s.p < s.end && *s.p == '[') {
                ax_error(cx, AX_ERR_TYPE,
                         "%s holds a structured array (named fields), which ax "
                         "arrays cannot represent",
                         name);
                return false;
            }
            if (!read_string(&s, descr, sizeof descr))
                return bad_header(cx, name, "descr is not a string"), false;
            if (!parse_descr(cx, name, descr, &h->type)) return false;
            seen[0] = true;
        } else if (!strcmp(key, "fortran_order")) {
            if (read_word(&s, "True"))
                h->fortran = true;
            else if (!read_word(&s, "False"))
                return bad_header(cx, name, "fortran_order is not True or False"), false;
            seen[1] = true;
        } else if (!strcmp(key, "shape")) {
            if (!read_shape(cx, name, &s, h)) return false;
            seen[2] = true;
        } else {
            return bad_header(cx, name, "unexpected key"), false;
        }
        if (!accept(&s, ',')) {
            if (!accept(&s, '}')) return bad_header(cx, name, "expected ',' or '}'"), false;
            break;
        }
    }
    skip_space(&s);
    if (s.p != s.end) return bad_header(cx, name, "text after the dict"), false;
    if (!seen[0] || !seen[1] || !seen[2])
        return bad_header(cx, name, "descr, fortran_order or shape is missing"), false;
    if (!ax_raw_nbytes(h->ndim, h->shape, h->type.size, &h->nbytes))
        return bad_header(cx, name, "the shape's size overflows"), false;
    return true;
}

bool ax_mem_read(void *reader, void *dst, size_t n) {
    ax_mem_reader *r = reader;
    if (n > r->left) return false;
    memcpy(dst, r->p, n);
    r->p += n;
    r->left -= n;
    return true;
}

ax_array *ax_npy_decode(ax_ctx *cx, const char *name, const unsigned char *buf, size_t n) {
    ax_npy_header h;
    if (!ax_npy_parse_header(cx, name, buf, n, &h)) return NULL;
    if (n - h.data_offset < h.nbytes)
        return ax_error(cx, AX_ERR_VALUE,
                        "%s is truncated: its header promises %" PRIu64
                        " bytes of data, it holds %zu",
                        name, h.nbytes, n - h.data_offset);
    ax_mem_reader r = {buf + h.data_offset, n - h.data_offset};
    return ax_raw_array(cx, h.type, h.ndim, h.shape, h.fortran, ax_mem_read, &r);
}

/* ---------------------------------------------------------------- writing headers */

static const char *descr_of(ax_dtype t) {
    switch (t) {
    case AX_BOOL:
        return "|b1";
    case AX_U8:
        return "|u1";
    case AX_I32:
        return "<i4";
    case AX_U32:
        return "<u4";
    case AX_I64:
        return "<i8";
    case AX_F32:
        return "<f4";
    case AX_F64:
        return "<f8";
    default:
        return "?";
    }
}

char *ax_npy_format_header(ax_ctx *cx, const ax_array *a, size_t *len) {
    enum { ALIGN = 64, GROWTH_DIGITS = 21 }; /* NumPy's ARRAY_ALIGN, GROWTH_AXIS_MAX_DIGITS */
    char dict[1024], shape[640];
    ax_shape_format(shape, sizeof shape, a->ndim, a->shape);
    int n = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': %s, }",
                     descr_of(a->dtype), shape);
    /* NumPy leaves room to grow the first axis in place: spaces up to 21 digits */
    if (a->ndim > 0) {
        int digits = snprintf(NULL, 0, "%" PRId64, a->shape[0]);
        for (int i = digits; i < GROWTH_DIGITS; i++) dict[n++] = ' ';
    }
    size_t hlen = (size_t)n + 1; /* + '\n' */
    size_t pad = ALIGN - (10 + hlen) % ALIGN;
    size_t total = 10 + hlen + pad;
    char *out = malloc(total);
    if (!out) return ax_error_oom(cx);
    memcpy(out, AX_NPY_MAGIC "\x01\x00", 8);
    out[8] = (char)((hlen + pad) & 0xff);
    out[9] = (char)((hlen + pad) >> 8);
    memcpy(out + 10, dict, (size_t)n);
    memset(out + 10 + n, ' ', pad);
    out[total - 1] = '\n';
    *len = total;
    return out;
}

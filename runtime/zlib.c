/* zlib through dlopen (see zlib.h). Each use opens the library and closes it again: dlopen of
 * a library already loaded is cheap, and nothing is kept in global state. */
#include "zlib.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "error.h"

#define ZLIB_SONAME "libz.so.1"

uint32_t ax_crc32(uint32_t crc, const void *data, size_t n) {
    uint32_t table[256];
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        table[i] = c;
    }
    const unsigned char *p = data;
    crc = ~crc;
    for (size_t i = 0; i < n; i++) crc = table[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
    return ~crc;
}

typedef struct zlib_fns {
    void *handle;
    int (*inflate_init)(z_streamp, int, const char *, int);
    int (*inflate)(z_streamp, int);
    int (*inflate_reset)(z_streamp);
    int (*inflate_end)(z_streamp);
    int (*deflate_init)(z_streamp, int, int, int, int, int, const char *, int);
    int (*deflate)(z_streamp, int);
    int (*deflate_end)(z_streamp);
} zlib_fns;

static bool lookup(void *handle, const char *name, void *fn_ptr) {
    void *p = dlsym(handle, name);
    if (p) memcpy(fn_ptr, &p, sizeof p);
    return p != NULL;
}

/* Loads zlib, or records an error saying which package provides it. */
static bool zlib_open(ax_ctx *cx, const char *what, zlib_fns *z) {
    memset(z, 0, sizeof *z);
    z->handle = dlopen(ZLIB_SONAME, RTLD_NOW | RTLD_LOCAL);
    if (!z->handle) {
        const char *why = dlerror();
        ax_error(cx, AX_ERR_RUNTIME,
                 "%s is compressed, and zlib (%s, Debian package zlib1g) cannot be loaded: %s",
                 what, ZLIB_SONAME, why ? why : "unknown reason");
        return false;
    }
    if (lookup(z->handle, "inflateInit2_", &z->inflate_init) &&
        lookup(z->handle, "inflate", &z->inflate) &&
        lookup(z->handle, "inflateReset", &z->inflate_reset) &&
        lookup(z->handle, "inflateEnd", &z->inflate_end) &&
        lookup(z->handle, "deflateInit2_", &z->deflate_init) &&
        lookup(z->handle, "deflate", &z->deflate) &&
        lookup(z->handle, "deflateEnd", &z->deflate_end))
        return true;
    dlclose(z->handle);
    ax_error(cx, AX_ERR_RUNTIME, "%s lacks the inflate/deflate functions", ZLIB_SONAME);
    return false;
}

static void zlib_close(zlib_fns *z) {
    if (z->handle) dlclose(z->handle);
    z->handle = NULL;
}

/* ---------------------------------------------------------------- inflate */

/* True when the bytes are all zero (padding after a gzip stream, which gzip tolerates). */
static bool all_zero(const unsigned char *p, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (p[i]) return false;
    return true;
}

typedef struct inflate_job {
    zlib_fns z;
    z_stream s;
    const unsigned char *in;
    size_t n, used; /* input bytes, and those consumed so far */
    unsigned char *out;
    size_t cap, len, max; /* output capacity, length, limit */
} inflate_job;

/* Grows the output buffer (up to one byte past the limit, to see an overflow). */
static bool inflate_grow(ax_ctx *cx, inflate_job *j) {
    size_t cap = j->cap ? j->cap * 2 : (j->n < (SIZE_MAX - 65536) / 4 ? j->n * 4 + 65536 : j->n);
    if (cap < j->cap) cap = SIZE_MAX;
    if (j->max < SIZE_MAX && cap > j->max + 1) cap = j->max + 1;
    unsigned char *out = realloc(j->out, cap ? cap : 1);
    if (!out) return ax_error_oom(cx), false;
    j->out = out;
    j->cap = cap;
    return true;
}

/* Runs the stream to its end; false with an error recorded. */
static bool inflate_run(ax_ctx *cx, const char *what, ax_zlib_format fmt, inflate_job *j) {
    for (;;) {
        if (j->len == j->cap && !inflate_grow(cx, j)) return false;
        size_t in_left = j->n - j->used, out_left = j->cap - j->len;
        j->s.next_in = (Bytef *)(j->in + j->used);
        j->s.avail_in = in_left > UINT_MAX ? UINT_MAX : (uInt)in_left;
        j->s.next_out = j->out + j->len;
        j->s.avail_out = out_left > UINT_MAX ? UINT_MAX : (uInt)out_left;
        uInt ain = j->s.avail_in, aout = j->s.avail_out;
        int rc = j->z.inflate(&j->s, Z_NO_FLUSH);
        j->used += ain - j->s.avail_in;
        j->len += aout - j->s.avail_out;
        if (j->len > j->max) {
            ax_error(cx, AX_ERR_VALUE,
                     "%s: the compressed data expands past the %zu bytes declared", what, j->max);
            return false;
        }
        if (rc == Z_STREAM_END) {
            const unsigned char *rest = j->in + j->used;
            size_t nrest = j->n - j->used;
            if (fmt == AX_ZLIB_GZIP && nrest >= 2 && rest[0] == 0x1f && rest[1] == 0x8b) {
                j->z.inflate_reset(&j->s); /* another gzip member follows */
                continue;
            }
            if (nrest && !(fmt == AX_ZLIB_GZIP && all_zero(rest, nrest))) {
                ax_error(cx, AX_ERR_VALUE,
                         "%s: %zu bytes of unexpected data after the compressed "
                         "stream",
                         what, nrest);
                return false;
            }
            return true;
        }
        if (rc == Z_OK) continue;
        if (rc == Z_BUF_ERROR && j->s.avail_out == 0) continue; /* needs more room */
        if (rc == Z_BUF_ERROR) {
            ax_error(cx, AX_ERR_VALUE, "%s: the compressed data ends early (truncated file?)",
                     what);
            return false;
        }
        if (rc == Z_MEM_ERROR) return ax_error_oom(cx), false;
        ax_error(cx, AX_ERR_VALUE, "%s: corrupt compressed data (%s)", what,
                 j->s.msg ? j->s.msg : "zlib error");
        return false;
    }
}

bool ax_zlib_inflate(ax_ctx *cx, const char *what, ax_zlib_format fmt, const void *src, size_t n,
                     size_t max_out, unsigned char **out, size_t *out_len) {
    inflate_job j = {.in = src, .n = n, .max = max_out};
    if (!zlib_open(cx, what, &j.z)) return false;
    /* -15: raw deflate; 15 + 32: gzip or zlib, told apart by the header */
    int bits = fmt == AX_ZLIB_RAW ? -MAX_WBITS : MAX_WBITS + 32;
    int rc = j.z.inflate_init(&j.s, bits, ZLIB_VERSION, (int)sizeof j.s);
    if (rc != Z_OK) {
        zlib_close(&j.z);
        ax_error(cx, AX_ERR_RUNTIME, "%s: zlib cannot start decompressing (error %d)", what, rc);
        return false;
    }
    bool ok = inflate_run(cx, what, fmt, &j);
    j.z.inflate_end(&j.s);
    zlib_close(&j.z);
    if (!ok) {
        free(j.out);
        return false;
    }
    *out = j.out ? j.out : malloc(1);
    *out_len = j.len;
    if (!*out) return ax_error_oom(cx), false;
    return true;
}

/* ---------------------------------------------------------------- deflate */

struct ax_deflater {
    ax_ctx *cx;
    const char *what;
    zlib_fns z;
    z_stream s;
    bool started;
    ax_zlib_sink sink;
    void *arg;
    unsigned char buf[1 << 16];
};

ax_deflater *ax_deflater_new(ax_ctx *cx, const char *what, ax_zlib_format fmt, ax_zlib_sink sink,
                             void *arg) {
    ax_deflater *d = calloc(1, sizeof *d);
    if (!d) return ax_error_oom(cx);
    *d = (ax_deflater){.cx = cx, .what = what, .sink = sink, .arg = arg};
    if (!zlib_open(cx, what, &d->z)) {
        free(d);
        return NULL;
    }
    int bits = fmt == AX_ZLIB_RAW ? -MAX_WBITS : MAX_WBITS + 16; /* + 16: a gzip wrapper */
    int rc = d->z.deflate_init(&d->s, Z_DEFAULT_COMPRESSION, Z_DEFLATED, bits, 8,
                               Z_DEFAULT_STRATEGY, ZLIB_VERSION, (int)sizeof d->s);
    if (rc != Z_OK) {
        ax_deflater_free(d);
        return rc == Z_MEM_ERROR ? ax_error_oom(cx)
                                 : ax_error(cx, AX_ERR_RUNTIME, "%s: zlib cannot compress", what);
    }
    d->started = true;
    return d;
}

bool ax_deflater_write(ax_deflater *d, const void *data, size_t n, bool finish) {
    const unsigned char *p = data;
    for (;;) {
        uInt chunk = n > UINT_MAX ? UINT_MAX : (uInt)n;
        bool last = finish && chunk == n;
        d->s.next_in = (Bytef *)p;
        d->s.avail_in = chunk;
        int rc;
        do {
            d->s.next_out = d->buf;
            d->s.avail_out = sizeof d->buf;
            rc = d->z.deflate(&d->s, last ? Z_FINISH : Z_NO_FLUSH);
            if (rc == Z_STREAM_ERROR) {
                ax_error(d->cx, AX_ERR_RUNTIME, "%s: zlib failed while compressing", d->what);
                return false;
            }
            size_t got = sizeof d->buf - d->s.avail_out;
            if (got && !d->sink(d->arg, d->buf, got)) return false;
        } while (d->s.avail_out == 0 || (last && rc != Z_STREAM_END));
        p += chunk;
        n -= chunk;
        if (n == 0) return true;
    }
}

void ax_deflater_free(ax_deflater *d) {
    if (!d) return;
    if (d->started) d->z.deflate_end(&d->s);
    zlib_close(&d->z);
    free(d);
}

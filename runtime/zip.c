/* Zip archives for .npz files (see zip.h). Layout: local headers and data, the central
 * directory, its end record (preceded by the zip64 end record and locator when counts or
 * offsets overflow 16/32 bits). */
#include "zip.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "error.h"
#include "zlib.h"

enum {
    LOCAL_SIG = 0x04034b50,
    CENTRAL_SIG = 0x02014b50,
    END_SIG = 0x06054b50,
    END64_SIG = 0x06064b50,
    LOCATOR64_SIG = 0x07064b50,
    LOCAL_SIZE = 30,
    CENTRAL_SIZE = 46,
    END_SIZE = 22,
    END64_SIZE = 56,
    LOCATOR64_SIZE = 20,
    DOS_DATE_1980 = 0x21, /* 1980-01-01, 00:00: archives do not depend on the clock */
};
#define MAX32 0xffffffffu

static uint16_t get16(const unsigned char *p) {
    return (uint16_t)(p[0] | p[1] << 8);
}
static uint32_t get32(const unsigned char *p) {
    return get16(p) | (uint32_t)get16(p + 2) << 16;
}
static uint64_t get64(const unsigned char *p) {
    return get32(p) | (uint64_t)get32(p + 4) << 32;
}
static unsigned char *put16(unsigned char *p, unsigned v) {
    p[0] = (unsigned char)v;
    p[1] = (unsigned char)(v >> 8);
    return p + 2;
}
static unsigned char *put32(unsigned char *p, uint32_t v) {
    return put16(put16(p, v & 0xffff), v >> 16);
}
static unsigned char *put64(unsigned char *p, uint64_t v) {
    return put32(put32(p, (uint32_t)v), (uint32_t)(v >> 32));
}

/* ---------------------------------------------------------------- reading */

static void *corrupt(ax_ctx *cx, const char *path, const char *why) {
    return ax_error(cx, AX_ERR_VALUE, "%s is not a valid .npz (zip) file: %s", path, why);
}

/* n bytes at offset `at`; false with an error when the file is shorter or unreadable. */
static bool read_at(ax_ctx *cx, ax_zip *z, uint64_t at, void *dst, size_t n) {
    if (at > z->size || n > z->size - at) return corrupt(cx, z->path, "truncated"), false;
    ax_fd_reader r = {cx, z->fd, at, z->path};
    return ax_fd_read(&r, dst, n);
}

/* The end of central directory record: the entry count, the directory's size and offset. */
static bool read_end(ax_ctx *cx, ax_zip *z, uint64_t *count, uint64_t *cd_size,
                     uint64_t *cd_offset) {
    size_t tail = z->size < 65535 + END_SIZE ? (size_t)z->size : 65535 + END_SIZE;
    if (tail < END_SIZE) return corrupt(cx, z->path, "too short"), false;
    unsigned char *buf = malloc(tail);
    if (!buf) return ax_error_oom(cx), false;
    uint64_t base = z->size - tail;
    if (!read_at(cx, z, base, buf, tail)) {
        free(buf);
        return false;
    }
    /* the record is last, followed only by the archive comment */
    size_t at = tail - END_SIZE + 1;
    bool found = false;
    while (at-- > 0)
        if (get32(buf + at) == END_SIG && at + END_SIZE + get16(buf + at + 20) <= tail) {
            found = true;
            break;
        }
    if (!found) {
        free(buf);
        return corrupt(cx, z->path, "no end of central directory record"), false;
    }
    const unsigned char *e = buf + at;
    *count = get16(e + 10);
    *cd_size = get32(e + 12);
    *cd_offset = get32(e + 16);
    uint64_t end_pos = base + at;
    free(buf);
    if (*count != 0xffff && *cd_size != MAX32 && *cd_offset != MAX32) return true;
    unsigned char loc[LOCATOR64_SIZE], e64[END64_SIZE];
    if (end_pos < LOCATOR64_SIZE || !read_at(cx, z, end_pos - LOCATOR64_SIZE, loc, sizeof loc))
        return ax_error_pending(cx) ? false : (corrupt(cx, z->path, "no zip64 locator"), false);
    if (get32(loc) != LOCATOR64_SIG) return corrupt(cx, z->path, "no zip64 locator"), false;
    if (!read_at(cx, z, get64(loc + 8), e64, sizeof e64)) return false;
    if (get32(e64) != END64_SIG) return corrupt(cx, z->path, "bad zip64 end record"), false;
    *count = get64(e64 + 32);
    *cd_size = get64(e64 + 40);
    *cd_offset = get64(e64 + 48);
    return true;
}

/* Applies a zip64 extra field (id 1) to the sizes and offset marked 0xffffffff. */
static bool apply_zip64(const unsigned char *extra, size_t len, ax_zip_entry *e) {
    while (len >= 4) {
        unsigned id = get16(extra), size = get16(extra + 2);
        if (size > len - 4) return false;
        if (id == 1) {
            const unsigned char *p = extra + 4, *end = p + size;
            uint64_t *fields[] = {&e->usize, &e->csize, &e->offset};
            for (int i = 0; i < 3; i++)
                if (*fields[i] == MAX32) {
                    if (end - p < 8) return false;
                    *fields[i] = get64(p);
                    p += 8;
                }
            return true;
        }
        extra += 4 + size;
        len -= 4 + size;
    }
    return true;
}

static bool read_directory(ax_ctx *cx, ax_zip *z, const unsigned char *cd, uint64_t cd_size,
                           uint64_t count) {
    if (count > cd_size / CENTRAL_SIZE) return corrupt(cx, z->path, "bad entry count"), false;
    z->entries = calloc(count ? count : 1, sizeof *z->entries);
    if (!z->entries) return ax_error_oom(cx), false;
    const unsigned char *p = cd, *end = cd + cd_size;
    for (uint64_t i = 0; i < count; i++) {
        if (end - p < CENTRAL_SIZE || get32(p) != CENTRAL_SIG)
            return corrupt(cx, z->path, "bad central directory entry"), false;
        size_t nlen = get16(p + 28), xlen = get16(p + 30), clen = get16(p + 32);
        if ((size_t)(end - p) < CENTRAL_SIZE + nlen + xlen + clen)
            return corrupt(cx, z->path, "bad central directory entry"), false;
        ax_zip_entry *e = &z->entries[z->n];
        *e = (ax_zip_entry){.flags = get16(p + 8),
                            .method = get16(p + 10),
                            .crc = get32(p + 16),
                            .csize = get32(p + 20),
                            .usize = get32(p + 24),
                            .offset = get32(p + 42)};
        if (!apply_zip64(p + CENTRAL_SIZE + nlen, xlen, e))
            return corrupt(cx, z->path, "bad zip64 extra field"), false;
        if (!(e->name = malloc(nlen + 1))) return ax_error_oom(cx), false;
        memcpy(e->name, p + CENTRAL_SIZE, nlen);
        e->name[nlen] = '\0';
        z->n++;
        if (strlen(e->name) != nlen) return corrupt(cx, z->path, "a member name has a NUL"), false;
        p += CENTRAL_SIZE + nlen + xlen + clen;
    }
    return true;
}

bool ax_zip_open(ax_ctx *cx, const char *path, int fd, uint64_t size, ax_zip *z) {
    *z = (ax_zip){.fd = fd, .size = size, .path = path};
    uint64_t count, cd_size, cd_offset;
    if (!read_end(cx, z, &count, &cd_size, &cd_offset)) return false;
    if (cd_offset > size || cd_size > size - cd_offset)
        return corrupt(cx, path, "the central directory lies outside the file"), false;
    unsigned char *cd = malloc(cd_size ? cd_size : 1);
    if (!cd) return ax_error_oom(cx), false;
    bool ok = read_at(cx, z, cd_offset, cd, cd_size) && read_directory(cx, z, cd, cd_size, count);
    free(cd);
    if (!ok) ax_zip_close(z);
    return ok;
}

bool ax_zip_read(ax_ctx *cx, ax_zip *z, const ax_zip_entry *e, unsigned char **data, size_t *len) {
    char what[512];
    snprintf(what, sizeof what, "%s (member %s)", z->path, e->name);
    if (e->flags & 1) return ax_error(cx, AX_ERR_VALUE, "%s is encrypted", what), false;
    if (e->method != 0 && e->method != 8)
        return ax_error(cx, AX_ERR_VALUE,
                        "%s uses zip compression method %d (only stored and "
                        "deflated members are supported)",
                        what, e->method),
               false;
    unsigned char local[LOCAL_SIZE];
    if (!read_at(cx, z, e->offset, local, sizeof local)) return false;
    if (get32(local) != LOCAL_SIG) return corrupt(cx, z->path, "bad local header"), false;
    uint64_t start = e->offset + LOCAL_SIZE + get16(local + 26) + get16(local + 28);
    if (start > z->size || e->csize > z->size - start)
        return corrupt(cx, z->path, "a member extends past the end of the file"), false;
    /* deflate expands at most ~1032:1, which bounds what a corrupt size can allocate */
    if ((e->method == 0 && e->usize != e->csize) ||
        (e->method == 8 && e->usize / 1032 > e->csize + 64) || e->usize > SIZE_MAX / 2)
        return corrupt(cx, z->path, "a member's sizes disagree"), false;
    unsigned char *raw = malloc(e->csize ? e->csize : 1);
    if (!raw) return ax_error_oom(cx), false;
    if (!read_at(cx, z, start, raw, e->csize)) {
        free(raw);
        return false;
    }
    if (e->method == 8) {
        unsigned char *out;
        size_t n;
        bool ok = ax_zlib_inflate(cx, what, AX_ZLIB_RAW, raw, e->csize, e->usize, &out, &n);
        free(raw);
        if (!ok) return false;
        if (n != e->usize) {
            free(out);
            return corrupt(cx, z->path, "a member's size disagrees with its data"), false;
        }
        raw = out;
    }
    if (ax_crc32(0, raw, e->usize) != e->crc) {
        free(raw);
        return ax_error(cx, AX_ERR_VALUE, "%s is corrupt (its CRC-32 does not match)", what), false;
    }
    *data = raw;
    *len = e->usize;
    return true;
}

void ax_zip_close(ax_zip *z) {
    for (int i = 0; i < z->n; i++) free(z->entries[i].name);
    free(z->entries);
    z->entries = NULL;
    z->n = 0;
}

/* ---------------------------------------------------------------- writing */

/* A member this large gets zip64 sizes (its deflated form may grow a little past it). */
#define ZIP64_MEMBER 0xf0000000u

typedef struct file_sink {
    ax_ctx *cx;
    ax_file_out *out;
} file_sink;

static bool sink_to_file(void *arg, const void *data, size_t n) {
    file_sink *s = arg;
    return ax_file_out_write(s->cx, s->out, data, n);
}

static bool has_high_bytes(const char *s) {
    for (; *s; s++)
        if ((unsigned char)*s >= 0x80) return true;
    return false;
}

/* The fields local and central headers share: version needed .. uncompressed size (sizes
 * that zip64 fields carry are written as 0xffffffff). */
static unsigned char *common_fields(unsigned char *p, const ax_zip_entry *e, bool zip64_version,
                                    bool big_c, bool big_u) {
    p = put16(p, zip64_version ? 45 : 20);
    p = put16(p, e->flags);
    p = put16(p, (unsigned)e->method);
    p = put16(p, 0);
    p = put16(p, DOS_DATE_1980);
    p = put32(p, e->crc);
    p = put32(p, big_c ? MAX32 : (uint32_t)e->csize);
    return put32(p, big_u ? MAX32 : (uint32_t)e->usize);
}

static size_t local_header(unsigned char *h, const ax_zip_entry *e, bool zip64) {
    unsigned char *p = common_fields(put32(h, LOCAL_SIG), e, zip64, zip64, zip64);
    p = put16(p, (unsigned)strlen(e->name));
    p = put16(p, zip64 ? 20 : 0);
    memcpy(p, e->name, strlen(e->name));
    p += strlen(e->name);
    if (zip64) {
        p = put16(p, 1);
        p = put16(p, 16);
        p = put64(p, e->usize);
        p = put64(p, e->csize);
    }
    return (size_t)(p - h);
}

static bool push_entry(ax_ctx *cx, ax_zip_writer *w, const ax_zip_entry *e) {
    if (w->n == w->cap) {
        int cap = w->cap ? 2 * w->cap : 8;
        ax_zip_entry *es = realloc(w->entries, (size_t)cap * sizeof *es);
        if (!es) return ax_error_oom(cx), false;
        w->entries = es;
        w->cap = cap;
    }
    w->entries[w->n] = *e;
    if (!(w->entries[w->n].name = strdup(e->name))) return ax_error_oom(cx), false;
    w->n++;
    return true;
}

bool ax_zip_add(ax_ctx *cx, ax_zip_writer *w, const char *name, int npieces,
                const void *const *pieces, const size_t *lens, bool deflate) {
    size_t nlen = strlen(name);
    if (nlen > 0xffff)
        return ax_error(cx, AX_ERR_VALUE, "member name too long: %.60s...", name), false;
    ax_zip_entry e = {.name = (char *)name,
                      .method = deflate ? 8 : 0,
                      .flags = has_high_bytes(name) ? 0x800 : 0,
                      .offset = w->out->pos};
    for (int i = 0; i < npieces; i++) {
        e.crc = ax_crc32(e.crc, pieces[i], lens[i]);
        e.usize += lens[i];
    }
    e.csize = deflate ? 0 : e.usize;
    bool zip64 = e.usize > ZIP64_MEMBER;
    unsigned char *h = malloc(LOCAL_SIZE + nlen + 20);
    if (!h) return ax_error_oom(cx), false;
    size_t hlen = local_header(h, &e, zip64);
    bool ok = ax_file_out_write(cx, w->out, h, hlen);
    uint64_t data_start = w->out->pos;
    if (ok && !deflate) {
        for (int i = 0; ok && i < npieces; i++)
            ok = ax_file_out_write(cx, w->out, pieces[i], lens[i]);
    } else if (ok) {
        file_sink sink = {cx, w->out};
        ax_deflater *d = ax_deflater_new(cx, w->out->path, AX_ZLIB_RAW, sink_to_file, &sink);
        ok = d != NULL;
        for (int i = 0; ok && i < npieces; i++)
            ok = ax_deflater_write(d, pieces[i], lens[i], i == npieces - 1);
        if (ok && npieces == 0) ok = ax_deflater_write(d, "", 0, true);
        ax_deflater_free(d);
        e.csize = w->out->pos - data_start;
        if (ok) ok = ax_file_out_patch(cx, w->out, e.offset, h, local_header(h, &e, zip64));
    }
    free(h);
    return ok && push_entry(cx, w, &e);
}

bool ax_zip_finish(ax_ctx *cx, ax_zip_writer *w) {
    uint64_t cd_offset = w->out->pos;
    bool ok = true;
    for (int i = 0; ok && i < w->n; i++) {
        const ax_zip_entry *e = &w->entries[i];
        size_t nlen = strlen(e->name);
        bool big_u = e->usize >= MAX32, big_c = e->csize >= MAX32, big_o = e->offset >= MAX32;
        size_t xlen = big_u || big_c || big_o ? 4 + 8 * (big_u + big_c + big_o) : 0;
        unsigned char *h = malloc(CENTRAL_SIZE + nlen + xlen), *p = h;
        if (!h) return ax_error_oom(cx), false;
        p = put32(p, CENTRAL_SIG);
        p = put16(p, 3 << 8 | (xlen ? 45 : 20)); /* made by: Unix */
        p = common_fields(p, e, xlen || e->usize > ZIP64_MEMBER, big_c, big_u);
        p = put16(p, (unsigned)nlen);
        p = put16(p, (unsigned)xlen);
        p = put16(p, 0);              /* comment */
        p = put16(p, 0);              /* disk */
        p = put16(p, 0);              /* internal attributes */
        p = put32(p, 0100644u << 16); /* a regular file, rw-r--r-- */
        p = put32(p, big_o ? MAX32 : (uint32_t)e->offset);
        memcpy(p, e->name, nlen);
        p += nlen;
        if (xlen) {
            p = put16(p, 1);
            p = put16(p, (unsigned)xlen - 4);
            if (big_u) p = put64(p, e->usize);
            if (big_c) p = put64(p, e->csize);
            if (big_o) p = put64(p, e->offset);
        }
        ok = ax_file_out_write(cx, w->out, h, (size_t)(p - h));
        free(h);
    }
    if (!ok) return false;
    uint64_t cd_size = w->out->pos - cd_offset, end64 = w->out->pos;
    bool zip64 = w->n >= 0xffff || cd_offset >= MAX32 || cd_size >= MAX32;
    unsigned char buf[END64_SIZE + LOCATOR64_SIZE + END_SIZE], *p = buf;
    if (zip64) {
        p = put32(p, END64_SIG);
        p = put64(p, END64_SIZE - 12);
        p = put16(p, 3 << 8 | 45);
        p = put16(p, 45);
        p = put32(p, 0);
        p = put32(p, 0);
        p = put64(p, (uint64_t)w->n);
        p = put64(p, (uint64_t)w->n);
        p = put64(p, cd_size);
        p = put64(p, cd_offset);
        p = put32(p, LOCATOR64_SIG);
        p = put32(p, 0);
        p = put64(p, end64);
        p = put32(p, 1);
    }
    p = put32(p, END_SIG);
    p = put16(p, 0);
    p = put16(p, 0);
    p = put16(p, zip64 ? 0xffff : (unsigned)w->n);
    p = put16(p, zip64 ? 0xffff : (unsigned)w->n);
    p = put32(p, zip64 ? MAX32 : (uint32_t)cd_size);
    p = put32(p, zip64 ? MAX32 : (uint32_t)cd_offset);
    p = put16(p, 0);
    return ax_file_out_write(cx, w->out, buf, (size_t)(p - buf));
}

void ax_zip_writer_free(ax_zip_writer *w) {
    for (int i = 0; i < w->n; i++) free(w->entries[i].name);
    free(w->entries);
    w->entries = NULL;
    w->n = w->cap = 0;
}

/* Whole-file reads and atomic writes for array I/O (see file.h). */
#include "file.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "error.h"

static void *io_error(ax_ctx *cx, const char *who, const char *verb, const char *path, int err) {
    return ax_error(cx, AX_ERR_IO, "%s: cannot %s %s: %s", who, verb, path, strerror(err));
}

FILE *ax_file_open_read(ax_ctx *cx, const char *who, const char *path, uint64_t *size) {
    FILE *f = fopen(path, "rb");
    if (!f) return io_error(cx, who, "read", path, errno);
    struct stat st;
    if (fstat(fileno(f), &st) != 0 || S_ISDIR(st.st_mode)) {
        int err = S_ISDIR(st.st_mode) ? EISDIR : errno;
        fclose(f);
        return io_error(cx, who, "read", path, err);
    }
    *size = (uint64_t)st.st_size;
    return f;
}

char *ax_file_read(ax_ctx *cx, const char *who, const char *path, size_t *len) {
    uint64_t size;
    FILE *f = ax_file_open_read(cx, who, path, &size);
    if (!f) return NULL;
    /* The size is a hint (pipes and /proc files report 0): read until the end. */
    size_t cap = size < SIZE_MAX / 2 ? (size_t)size + 1 : 1 << 16, n = 0;
    char *buf = malloc(cap + 1);
    while (buf) {
        n += fread(buf + n, 1, cap - n, f);
        if (n < cap) break;
        char *grown = cap < SIZE_MAX / 4 ? realloc(buf, 2 * cap + 1) : NULL;
        if (!grown) {
            free(buf);
            buf = NULL;
            break;
        }
        buf = grown;
        cap *= 2;
    }
    int err = ferror(f) ? (errno ? errno : EIO) : 0;
    fclose(f);
    if (!buf) return ax_error_oom(cx);
    if (err) {
        free(buf);
        return io_error(cx, who, "read", path, err);
    }
    buf[n] = '\0';
    *len = n;
    return buf;
}

bool ax_fd_read(void *reader, void *dst, size_t n) {
    ax_fd_reader *r = reader;
    unsigned char *p = dst;
    while (n) {
        ssize_t got = pread(r->fd, p, n, (off_t)r->at);
        if (got <= 0) {
            ax_error(r->cx, AX_ERR_IO, "cannot read %s: %s", r->path,
                     got < 0 ? strerror(errno)
                             : "the file ends early (it shrank while being read?)");
            return false;
        }
        p += got;
        r->at += (uint64_t)got;
        n -= (size_t)got;
    }
    return true;
}

/* ---------------------------------------------------------------- atomic writes */

/* The mode a newly created file gets (0666 less the umask). */
static mode_t creation_mode(void) {
    mode_t mask = umask(022);
    umask(mask);
    return 0666 & ~mask;
}

bool ax_file_out_open(ax_ctx *cx, const char *who, const char *path, ax_file_out *out) {
    *out = (ax_file_out){.who = who};
    char *dcopy = strdup(path), *bcopy = strdup(path);
    out->path = strdup(path);
    size_t cap = strlen(path) + 32;
    out->tmp = malloc(cap);
    if (!dcopy || !bcopy || !out->path || !out->tmp) {
        free(dcopy);
        free(bcopy);
        ax_file_out_abort(out);
        ax_error_oom(cx);
        return false;
    }
    /* Hidden, in the same directory: rename() is atomic within one file system. */
    snprintf(out->tmp, cap, "%s/.%s.tmp-XXXXXX", dirname(dcopy), basename(bcopy));
    free(dcopy);
    free(bcopy);
    int fd = mkstemp(out->tmp);
    if (fd < 0) {
        int err = errno;
        free(out->tmp);
        out->tmp = NULL;
        ax_file_out_abort(out);
        io_error(cx, who, "write", path, err);
        return false;
    }
    struct stat st;
    /* an existing target keeps its permissions; a new one gets the usual ones */
    fchmod(fd, stat(path, &st) == 0 ? st.st_mode & 07777 : creation_mode());
    out->f = fdopen(fd, "wb");
    if (!out->f) {
        int err = errno;
        close(fd);
        ax_file_out_abort(out);
        io_error(cx, who, "write", path, err);
        return false;
    }
    return true;
}

static bool write_failed(ax_ctx *cx, ax_file_out *out, int err) {
    io_error(cx, out->who, "write", out->path, err ? err : EIO);
    ax_file_out_abort(out);
    return false;
}

bool ax_file_out_write(ax_ctx *cx, ax_file_out *out, const void *data, size_t n) {
    if (!out->f) return false;
    if (n && fwrite(data, 1, n, out->f) != n) return write_failed(cx, out, errno);
    out->pos += n;
    return true;
}

bool ax_file_out_patch(ax_ctx *cx, ax_file_out *out, uint64_t at, const void *data, size_t n) {
    if (!out->f) return false;
    if (fseeko(out->f, (off_t)at, SEEK_SET) != 0 || fwrite(data, 1, n, out->f) != n ||
        fseeko(out->f, (off_t)out->pos, SEEK_SET) != 0)
        return write_failed(cx, out, errno);
    return true;
}

bool ax_file_out_commit(ax_ctx *cx, ax_file_out *out) {
    if (!out->f) return false;
    if (fflush(out->f) != 0 || fsync(fileno(out->f)) != 0) return write_failed(cx, out, errno);
    FILE *f = out->f;
    out->f = NULL;
    if (fclose(f) != 0) return write_failed(cx, out, errno);
    if (rename(out->tmp, out->path) != 0) return write_failed(cx, out, errno);
    /* the rename itself reaches the disk when the directory is synced */
    char *dcopy = strdup(out->path);
    int dfd = dcopy ? open(dirname(dcopy), O_RDONLY | O_DIRECTORY) : -1;
    if (dfd >= 0) {
        fsync(dfd);
        close(dfd);
    }
    free(dcopy);
    free(out->tmp);
    out->tmp = NULL;
    ax_file_out_abort(out);
    return true;
}

void ax_file_out_abort(ax_file_out *out) {
    if (out->f) fclose(out->f);
    out->f = NULL;
    if (out->tmp) unlink(out->tmp);
    free(out->tmp);
    free(out->path);
    out->tmp = out->path = NULL;
}

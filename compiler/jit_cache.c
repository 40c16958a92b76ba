/* The on-disk cache of compiled programs (see jit_cache.h). */
#include "jit_cache.h"

#include <ctype.h>
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define SUM_MAGIC     "ax-jit-cache-1"
#define DEFAULT_LIMIT ((uint64_t)1 << 30)
/* A temporary file of a writer killed before it renamed it is removed after this long. */
#define STALE_TEMP_SECONDS 3600
#define TEMP_INFIX         ".tmp-"

struct ax_jit_cache {
    char *dir; /* NULL: no cache (none configured, unusable or refused) */
    bool log;
    uint64_t limit;
    bool warned_entry, warned_write;
};

uint64_t ax_hash_bytes(uint64_t h, const void *data, size_t n) {
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 1099511628211ULL;
    }
    return h;
}

static char *join(const char *a, const char *b) {
    size_t n = strlen(a) + strlen(b) + 2;
    char *s = malloc(n);
    if (s) snprintf(s, n, "%s/%s", a, b);
    return s;
}

static char *entry_path(const char *dir, uint64_t key, const char *ext) {
    char name[64];
    snprintf(name, sizeof name, "%016llx.%s", (unsigned long long)key, ext);
    return join(dir, name);
}

/* ---- where the cache is, and whether it may be trusted ---- */

/* mkdir -p, new directories private to the user (as the XDG spec asks). */
static void make_dirs(const char *path) {
    char *p = strdup(path);
    if (!p) return;
    for (char *slash = strchr(p + 1, '/'); slash; slash = strchr(slash + 1, '/')) {
        *slash = 0;
        mkdir(p, 0700); /* existing components fail with EEXIST: fine */
        *slash = '/';
    }
    mkdir(p, 0700);
    free(p);
}

/* $XDG_CACHE_HOME/ax (an absolute XDG_CACHE_HOME only, as the spec says), else
 * $HOME/.cache/ax; NULL when neither is set. */
static char *configured_dir(void) {
    const char *xdg = getenv("XDG_CACHE_HOME");
    if (xdg && xdg[0] == '/') return join(xdg, "ax");
    const char *home = getenv("HOME");
    return home && *home ? join(home, ".cache/ax") : NULL;
}

/* Why ax must not load code from a file or directory with this status, or NULL: anyone who
 * can write it can make ax run their code. */
static const char *unsafe_reason(const struct stat *st) {
    if (st->st_uid != geteuid()) return "owned by another user";
    if (st->st_mode & (S_IWGRP | S_IWOTH)) return "writable by others";
    return NULL;
}

static void warn_unusable_dir(const char *dir, const char *why, const char *fix) {
    fprintf(stderr, "ax: warning: the jit cache %s is %s; compiled code is not cached%s\n", dir,
            why, fix);
}

/* The directory, if it exists (or can be made) and is safe; NULL otherwise (with a warning
 * when something is wrong with it, rather than merely absent or unreachable). */
static char *usable_dir(void) {
    char *dir = configured_dir();
    if (!dir) return NULL;
    make_dirs(dir);
    struct stat st;
    const char *why = NULL;
    if (stat(dir, &st) != 0) {
        free(dir);
        return NULL;
    }
    if (!S_ISDIR(st.st_mode))
        warn_unusable_dir(dir, "not a directory", "");
    else if ((why = unsafe_reason(&st)))
        warn_unusable_dir(dir, why,
                          " (ax does not run code from a directory others can write: "
                          "make it the user's own, mode 0700)");
    else
        return dir;
    free(dir);
    return NULL;
}

/* Bytes, with an optional K, M or G (powers of 1024) and an optional B; false if malformed. */
static bool parse_size(const char *s, uint64_t *out) {
    if (!isdigit((unsigned char)*s)) return false;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno) return false;
    int shift = 0;
    switch (toupper((unsigned char)*end)) {
    case 'K':
        shift = 10, end++;
        break;
    case 'M':
        shift = 20, end++;
        break;
    case 'G':
        shift = 30, end++;
        break;
    default:
        break;
    }
    if (toupper((unsigned char)*end) == 'B') end++;
    if (*end || (shift && v > (UINT64_MAX >> shift))) return false;
    *out = (uint64_t)v << shift;
    return true;
}

static uint64_t size_limit(void) {
    const char *s = getenv("AX_CACHE_MAX");
    uint64_t limit = DEFAULT_LIMIT;
    if (s && !parse_size(s, &limit)) {
        fprintf(stderr,
                "ax: warning: AX_CACHE_MAX='%s' is not a size (bytes, or a number with K, M or "
                "G); the jit cache keeps at most 1G\n",
                s);
        limit = DEFAULT_LIMIT;
    }
    return limit;
}

ax_jit_cache *ax_jit_cache_open(bool log) {
    ax_jit_cache *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->log = log;
    c->limit = size_limit();
    c->dir = usable_dir();
    return c;
}

void ax_jit_cache_close(ax_jit_cache *c) {
    if (!c) return;
    free(c->dir);
    free(c);
}

/* ---- loading ---- */

/* Opens a cache file for reading, or returns -1: missing, not a regular file (a symbolic
 * link is not followed, a FIFO does not block), or unsafe (then with a warning, the first
 * time). */
static int open_entry_file(ax_jit_cache *c, const char *path) {
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    struct stat st;
    if (fd < 0) return -1;
    const char *why = fstat(fd, &st) != 0 ? "unreadable" : !S_ISREG(st.st_mode) ? "" : NULL;
    if (!why && (why = unsafe_reason(&st)) && !c->warned_entry) {
        c->warned_entry = true;
        fprintf(stderr,
                "ax: warning: jit cache entry %s is %s; not loading it (compiling "
                "instead)\n",
                path, why);
    }
    if (why) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Size and checksum of a file's bytes; false if it cannot be read. */
static bool fd_digest(int fd, uint64_t *size, uint64_t *sum) {
    unsigned char buf[1 << 16];
    uint64_t h = AX_HASH_INIT, n = 0;
    ssize_t got;
    while ((got = read(fd, buf, sizeof buf)) > 0) {
        h = ax_hash_bytes(h, buf, (size_t)got);
        n += (uint64_t)got;
    }
    *size = n;
    *sum = h;
    return got == 0;
}

static bool read_sum(int fd, uint64_t *size, uint64_t *sum) {
    char text[128];
    ssize_t got = read(fd, text, sizeof text - 1);
    if (got <= 0) return false;
    text[got] = 0;
    char magic[32] = {0};
    unsigned long long s = 0, h = 0;
    bool ok = sscanf(text, "%31s %llu %llx", magic, &s, &h) == 3 && !strcmp(magic, SUM_MAGIC);
    *size = s;
    *sum = h;
    return ok;
}

void *ax_jit_cache_load(ax_jit_cache *c, uint64_t key) {
    if (!c || !c->dir) return NULL;
    char *so = entry_path(c->dir, key, "so"), *sum = entry_path(c->dir, key, "sum");
    int sum_fd = so && sum ? open_entry_file(c, sum) : -1;
    int so_fd = sum_fd >= 0 ? open_entry_file(c, so) : -1;
    void *handle = NULL;
    uint64_t want_size, want_sum, size, digest;
    if (so_fd >= 0 && read_sum(sum_fd, &want_size, &want_sum) && fd_digest(so_fd, &size, &digest) &&
        size == want_size && digest == want_sum)
        handle = dlopen(so, RTLD_NOW | RTLD_LOCAL);
    /* The directory is the user's alone (checked when opened), so the file dlopen finds at
     * `so` is the one just verified, or another writer's build of the same key. */
    if (handle) futimens(sum_fd, NULL); /* used now: the eviction order */
    if (so_fd >= 0) close(so_fd);
    if (sum_fd >= 0) close(sum_fd);
    free(so);
    free(sum);
    return handle;
}

/* ---- storing ---- */

/* A failed write: quiet for a cache the user may not write (a read-only, shared one), a
 * warning (once) for anything else, such as a full disk. */
static void write_failed(ax_jit_cache *c, const char *what, int err) {
    bool expected = err == EACCES || err == EPERM || err == EROFS;
    if (c->log) fprintf(stderr, "ax: jit: cache: not stored (%s: %s)\n", what, strerror(err));
    if (expected || c->warned_write) return;
    c->warned_write = true;
    fprintf(stderr,
            "ax: warning: cannot write to the jit cache %s (%s); code compiled now is "
            "not cached\n",
            what, strerror(err));
}

/* A new file "<path>.tmp-XXXXXX", mode 0600; its name goes to *tmp (malloc'd). */
static int create_temp(const char *path, char **tmp) {
    size_t n = strlen(path) + sizeof TEMP_INFIX + 6;
    *tmp = malloc(n);
    if (!*tmp) return errno = ENOMEM, -1;
    snprintf(*tmp, n, "%s" TEMP_INFIX "XXXXXX", path);
    int fd = mkostemp(*tmp, O_CLOEXEC);
    if (fd < 0) {
        free(*tmp);
        *tmp = NULL;
    }
    return fd;
}

static bool write_all(int fd, const void *data, size_t n) {
    const char *p = data;
    while (n > 0) {
        ssize_t put = write(fd, p, n);
        if (put < 0 && errno == EINTR) continue;
        if (put <= 0) return false;
        p += put;
        n -= (size_t)put;
    }
    return true;
}

/* Copies src into fd, returning its size and checksum; false (errno set) on failure. */
static bool copy_digest(const char *src, int fd, uint64_t *size, uint64_t *sum) {
    int in = open(src, O_RDONLY | O_CLOEXEC);
    if (in < 0) return false;
    unsigned char buf[1 << 16];
    uint64_t h = AX_HASH_INIT, n = 0;
    ssize_t got;
    bool ok = true;
    while (ok && (got = read(in, buf, sizeof buf)) != 0) {
        ok = got > 0 && write_all(fd, buf, (size_t)got);
        if (ok) h = ax_hash_bytes(h, buf, (size_t)got), n += (uint64_t)got;
    }
    int err = errno;
    close(in);
    errno = err;
    *size = n;
    *sum = h;
    return ok;
}

/* The two temporary files of an entry being written, and their bytes. */
typedef struct pending {
    char *so, *sum;
    uint64_t bytes;
} pending;

static void pending_drop(pending *t) {
    if (t->so) unlink(t->so);
    if (t->sum) unlink(t->sum);
    free(t->so);
    free(t->sum);
}

enum { TOO_LARGE = -1 };

/* Writes the entry's files under temporary names; 0, the errno of the failure, or
 * TOO_LARGE when the entry alone would exceed the limit. */
static int write_pending(const char *src, const char *so, const char *sum, pending *t,
                         uint64_t limit) {
    uint64_t size = 0, digest = 0;
    int fd = create_temp(so, &t->so);
    bool ok = fd >= 0 && copy_digest(src, fd, &size, &digest);
    int err = ok ? 0 : errno;
    if (fd >= 0 && close(fd) != 0 && ok) ok = false, err = errno;
    if (!ok) return err ? err : EIO;
    if (size > limit) return TOO_LARGE;
    char text[128];
    int len = snprintf(text, sizeof text, "%s %llu %016llx\n", SUM_MAGIC, (unsigned long long)size,
                       (unsigned long long)digest);
    fd = create_temp(sum, &t->sum);
    ok = fd >= 0 && write_all(fd, text, (size_t)len);
    err = ok ? 0 : errno;
    if (fd >= 0 && close(fd) != 0 && ok) ok = false, err = errno;
    t->bytes = size + (uint64_t)len;
    return ok ? 0 : err ? err : EIO;
}

/* ---- eviction ---- */

typedef struct cached_file {
    uint64_t key;
    bool is_sum;
    uint64_t bytes;
    struct timespec mtime;
} cached_file;

typedef struct entry {
    uint64_t key, bytes;
    struct timespec used; /* the .sum's time (marked on every load); else the .so's */
    bool has_sum;
} entry;

static int timespec_cmp(struct timespec a, struct timespec b) {
    return a.tv_sec != b.tv_sec ? (a.tv_sec < b.tv_sec ? -1 : 1)
                                : (a.tv_nsec > b.tv_nsec) - (a.tv_nsec < b.tv_nsec);
}

static int by_key(const void *a, const void *b) {
    const cached_file *x = a, *y = b;
    return (x->key > y->key) - (x->key < y->key);
}

static int by_use(const void *a, const void *b) {
    const entry *x = a, *y = b;
    int c = timespec_cmp(x->used, y->used);
    return c ? c : (x->key > y->key) - (x->key < y->key);
}

/* "<16 hex digits>.so" or ".sum": its key and kind; false for any other name. */
static bool parse_entry_name(const char *name, uint64_t *key, bool *is_sum) {
    for (int i = 0; i < 16; i++)
        if (!isxdigit((unsigned char)name[i]) || isupper((unsigned char)name[i])) return false;
    if (strcmp(name + 16, ".so") && strcmp(name + 16, ".sum")) return false;
    char hex[17];
    memcpy(hex, name, 16);
    hex[16] = 0;
    *key = strtoull(hex, NULL, 16);
    *is_sum = name[17] == 's' && name[18] == 'u';
    return true;
}

static bool stale_temp(const struct stat *st, time_t now) {
    return now - st->st_mtime > STALE_TEMP_SECONDS;
}

/* The cache's entry files (and removes stale temporaries on the way). NULL when the
 * directory cannot be read or memory is short. */
static cached_file *list_files(int dfd, size_t *n) {
    int fd = dup(dfd);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0) close(fd);
        return NULL;
    }
    size_t cap = 64;
    cached_file *files = malloc(cap * sizeof *files);
    time_t now = time(NULL);
    struct dirent *e;
    *n = 0;
    while (files && (e = readdir(d))) {
        struct stat st;
        cached_file f;
        bool is_entry = parse_entry_name(e->d_name, &f.key, &f.is_sum);
        bool is_temp = !is_entry && strstr(e->d_name, TEMP_INFIX);
        if ((!is_entry && !is_temp) || fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
            continue;
        if (is_temp) {
            if (S_ISREG(st.st_mode) && stale_temp(&st, now)) unlinkat(dfd, e->d_name, 0);
            continue;
        }
        if (*n == cap) {
            cached_file *more = realloc(files, 2 * cap * sizeof *files);
            if (!more) {
                free(files);
                files = NULL;
                break;
            }
            files = more;
            cap *= 2;
        }
        f.bytes = (uint64_t)st.st_size;
        f.mtime = st.st_mtim;
        files[(*n)++] = f;
    }
    closedir(d);
    return files;
}

/* Groups the files by key into entries (in place of `files`, which it frees). */
static entry *group_entries(cached_file *files, size_t nfiles, size_t *n) {
    entry *entries = malloc((nfiles + 1) * sizeof *entries);
    *n = 0;
    if (entries) {
        qsort(files, nfiles, sizeof *files, by_key);
        for (size_t i = 0; i < nfiles; i++) {
            const cached_file *f = &files[i];
            if (*n == 0 || entries[*n - 1].key != f->key)
                entries[(*n)++] = (entry){.key = f->key, .used = f->mtime};
            entry *e = &entries[*n - 1];
            e->bytes += f->bytes;
            if (f->is_sum)
                e->used = f->mtime, e->has_sum = true;
            else if (!e->has_sum && timespec_cmp(f->mtime, e->used) > 0)
                e->used = f->mtime;
        }
    }
    free(files);
    return entries;
}

static void remove_entry(int dfd, uint64_t key) {
    char name[32];
    snprintf(name, sizeof name, "%016llx.sum", (unsigned long long)key);
    unlinkat(dfd, name, 0); /* the .sum first: a lone .so is a miss, like a lone .sum */
    snprintf(name, sizeof name, "%016llx.so", (unsigned long long)key);
    unlinkat(dfd, name, 0);
}

/* Removes least recently used entries until the cache holds at most c->limit bytes, and
 * returns the bytes left (UINT64_MAX if the directory cannot be read). The caller holds the
 * cache's lock. */
static uint64_t evict(ax_jit_cache *c, int dfd) {
    size_t nfiles = 0, n = 0;
    cached_file *files = list_files(dfd, &nfiles);
    entry *entries = files ? group_entries(files, nfiles, &n) : NULL;
    if (!entries) return UINT64_MAX;
    uint64_t total = 0, freed = 0;
    for (size_t i = 0; i < n; i++) total += entries[i].bytes;
    size_t removed = 0;
    if (total > c->limit) {
        qsort(entries, n, sizeof *entries, by_use);
        for (; removed < n && total - freed > c->limit; removed++) {
            remove_entry(dfd, entries[removed].key);
            freed += entries[removed].bytes;
        }
    }
    if (c->log && removed)
        fprintf(stderr,
                "ax: jit: cache: evicted %zu least recently used entries (%llu bytes) to stay "
                "within %llu bytes\n",
                removed, (unsigned long long)freed, (unsigned long long)c->limit);
    free(entries);
    return total - freed;
}

/* The lock file also holds the cache's size as of the last write, so that a write scans the
 * directory (a stat per file) only when the limit may be exceeded. The figure can only err
 * high (an entry replaced is counted twice, files removed by hand are still counted), which
 * brings the next scan forward; a missing or garbled figure means "scan". */
static bool read_total(int lock, uint64_t *total) {
    char text[32] = {0};
    char *end;
    if (pread(lock, text, sizeof text - 1, 0) <= 0 || !isdigit((unsigned char)text[0]))
        return false;
    *total = strtoull(text, &end, 10);
    return *end == '\n';
}

static void write_total(int lock, uint64_t total) {
    char text[32];
    int len = snprintf(text, sizeof text, "%020llu\n", (unsigned long long)total);
    if (pwrite(lock, text, (size_t)len, 0) != len) { /* then the next write scans */
    }
}

/* Accounts for an entry of `bytes` just published, evicting if the cache may be over its
 * limit. The caller holds the lock. */
static void account(ax_jit_cache *c, int lock, uint64_t bytes) {
    uint64_t total;
    if (read_total(lock, &total) && total <= c->limit && bytes <= c->limit - total) {
        write_total(lock, total + bytes);
        return;
    }
    int dfd = open(c->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) return;
    total = evict(c, dfd);
    close(dfd);
    if (total != UINT64_MAX) write_total(lock, total);
}

/* The cache's lock file, locked; -1 if it cannot be had (then nothing is written). */
static int lock_cache(const char *dir) {
    char *path = join(dir, ".lock");
    int fd = path ? open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600) : -1;
    int err = errno;
    free(path);
    if (fd >= 0 && flock(fd, LOCK_EX) != 0) {
        err = errno;
        close(fd);
        fd = -1;
    }
    errno = err;
    return fd;
}

void ax_jit_cache_store(ax_jit_cache *c, uint64_t key, const char *src) {
    if (!c || !c->dir) return;
    char *so = entry_path(c->dir, key, "so"), *sum = entry_path(c->dir, key, "sum");
    pending t = {0};
    int err = so && sum ? write_pending(src, so, sum, &t, c->limit) : ENOMEM;
    const char *what = c->dir;
    int lock = err ? -1 : lock_cache(c->dir);
    if (!err && lock < 0) err = errno;
    /* Publish under the lock, so that an eviction's view of the directory is never stale
     * when it ends: the cache is within its limit once every writer is done. The .so goes
     * first: a reader that finds the new .sum also finds the .so it describes. */
    if (!err && rename(t.so, so) != 0) err = errno, what = so;
    if (!err && rename(t.sum, sum) != 0) err = errno, what = sum;
    if (!err) {
        account(c, lock, t.bytes);
        free(t.so), free(t.sum);
        t = (pending){0};
    } else if (err == TOO_LARGE) {
        if (c->log) fprintf(stderr, "ax: jit: cache: not stored (larger than AX_CACHE_MAX)\n");
    } else {
        write_failed(c, what, err);
    }
    if (lock >= 0) close(lock); /* closing releases the lock */
    pending_drop(&t);
    free(so);
    free(sum);
}

/* ---- the scratch directory ---- */

/* The process's scratch directory. It is per process, not per context, because libgccjit
 * reads $TMPDIR once per process (libiberty memoizes it), at its first compile. The lock
 * (flock on the directory) is held for the process's life: the next process tells a dead
 * one's directory by it. */
static struct {
    pthread_once_t once;
    char *dir;
    int lock;
} scratch = {PTHREAD_ONCE_INIT, NULL, -1};

/* rm -r of `name` in the directory `dfd`, never following symbolic links. */
static void remove_tree(int dfd, const char *name, int depth) {
    int fd = depth < 16 ? openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : -1;
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (fd >= 0 && !d) close(fd);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        struct stat st;
        if (fstatat(fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode))
            remove_tree(fd, e->d_name, depth + 1);
        else
            unlinkat(fd, e->d_name, 0);
    }
    if (d) closedir(d);
    unlinkat(dfd, name, AT_REMOVEDIR);
}

/* A scratch directory of a process that is gone: ours by owner, named by a pid that no
 * longer runs, and not locked. */
static void remove_if_abandoned(int base, const char *name) {
    long pid = 0;
    int used = 0;
    if (sscanf(name, "ax-jit-%ld-%*6[A-Za-z0-9]%n", &pid, &used) != 1 || name[used] || pid <= 0 ||
        pid == (long)getpid())
        return;
    struct stat st;
    if (fstatat(base, name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode) ||
        st.st_uid != geteuid())
        return;
    if (kill((pid_t)pid, 0) == 0 || errno != ESRCH) return;
    int fd = openat(base, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return;
    if (flock(fd, LOCK_EX | LOCK_NB) == 0) remove_tree(base, name, 0);
    close(fd);
}

static void sweep_abandoned(const char *base) {
    DIR *d = opendir(base);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d)))
        if (!strncmp(e->d_name, "ax-jit-", 7)) remove_if_abandoned(dirfd(d), e->d_name);
    closedir(d);
}

static void scratch_remove(void) {
    if (scratch.dir) remove_tree(AT_FDCWD, scratch.dir, 0);
    if (scratch.lock >= 0) close(scratch.lock);
}

static bool scratch_make(const char *base) {
    if (!base || base[0] != '/') return false;
    sweep_abandoned(base);
    char *dir = malloc(strlen(base) + 64);
    if (!dir) return false;
    sprintf(dir, "%s/ax-jit-%ld-XXXXXX", base, (long)getpid());
    int fd = mkdtemp(dir) ? open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
    if (fd < 0 || flock(fd, LOCK_EX) != 0) {
        if (fd >= 0) close(fd), rmdir(dir);
        free(dir);
        return false;
    }
    scratch.dir = dir;
    scratch.lock = fd;
    return true;
}

static void scratch_init(void) {
    const char *tmpdir = getenv("TMPDIR");
    if (!scratch_make(tmpdir) && !scratch_make("/tmp") && !scratch_make("/var/tmp")) return;
    atexit(scratch_remove);
}

const char *ax_jit_scratch_dir(void) {
    pthread_once(&scratch.once, scratch_init);
    return scratch.dir;
}

bool ax_jit_scratch_enter(ax_jit_scratch *s) {
    *s = (ax_jit_scratch){0};
    const char *dir = ax_jit_scratch_dir(), *tmpdir = getenv("TMPDIR");
    if (!dir || (tmpdir && !(s->saved_tmpdir = strdup(tmpdir)))) return false;
    setenv("TMPDIR", dir, 1);
    s->entered = true;
    return true;
}

void ax_jit_scratch_leave(ax_jit_scratch *s) {
    if (!s->entered) return;
    /* The user's own temporary files (show()'s figures, ...) must not land in a directory
     * that goes away at exit. */
    if (s->saved_tmpdir)
        setenv("TMPDIR", s->saved_tmpdir, 1);
    else
        unsetenv("TMPDIR");
    free(s->saved_tmpdir);
    *s = (ax_jit_scratch){0};
}

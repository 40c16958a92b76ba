/* The on-disk cache of compiled programs (see jit_cache.h). */
#include "jit_cache.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SUM_MAGIC "ax-jit-cache-1"

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

/* mkdir -p for the last two components ($XDG_CACHE_HOME may itself be missing). */
static bool make_dir(const char *path) {
    if (mkdir(path, 0755) == 0 || errno == EEXIST) return true;
    char *parent = strdup(path);
    if (!parent) return false;
    char *slash = strrchr(parent, '/');
    bool ok = false;
    if (slash && slash != parent) {
        *slash = 0;
        ok = (mkdir(parent, 0755) == 0 || errno == EEXIST) &&
             (mkdir(path, 0755) == 0 || errno == EEXIST);
    }
    free(parent);
    return ok;
}

char *ax_jit_cache_dir(void) {
    const char *xdg = getenv("XDG_CACHE_HOME");
    char *dir = NULL;
    if (xdg && *xdg) {
        dir = join(xdg, "ax");
    } else {
        const char *home = getenv("HOME");
        if (!home || !*home) return NULL;
        dir = join(home, ".cache/ax");
    }
    if (dir && (!make_dir(dir) || access(dir, W_OK) != 0)) {
        free(dir);
        dir = NULL;
    }
    return dir;
}

char *ax_jit_cache_path(const char *dir, uint64_t key, const char *ext) {
    char name[64];
    snprintf(name, sizeof name, "%016llx.%s", (unsigned long long)key, ext);
    return join(dir, name);
}

/* Size and checksum of a file's bytes; false if it cannot be read. */
static bool file_digest(const char *path, uint64_t *size, uint64_t *sum) {
    FILE *f = fopen(path, "rb");
    if (!f) return false;
    unsigned char buf[1 << 16];
    uint64_t h = AX_HASH_INIT, n = 0;
    size_t got;
    while ((got = fread(buf, 1, sizeof buf, f)) > 0) {
        h = ax_hash_bytes(h, buf, got);
        n += got;
    }
    bool ok = !ferror(f);
    fclose(f);
    *size = n;
    *sum = h;
    return ok;
}

static bool read_sum(const char *path, uint64_t *size, uint64_t *sum) {
    FILE *f = fopen(path, "r");
    if (!f) return false;
    char magic[32] = {0};
    unsigned long long s = 0, h = 0;
    bool ok = fscanf(f, "%31s %llu %llx", magic, &s, &h) == 3 && !strcmp(magic, SUM_MAGIC);
    fclose(f);
    *size = s;
    *sum = h;
    return ok;
}

void *ax_jit_cache_load(const char *dir, uint64_t key) {
    char *so = ax_jit_cache_path(dir, key, "so"), *sum = ax_jit_cache_path(dir, key, "sum");
    void *handle = NULL;
    uint64_t want_size, want_sum, size, digest;
    if (so && sum && read_sum(sum, &want_size, &want_sum) && file_digest(so, &size, &digest) &&
        size == want_size && digest == want_sum)
        handle = dlopen(so, RTLD_NOW | RTLD_LOCAL);
    free(so);
    free(sum);
    return handle;
}

char *ax_jit_cache_publish(const char *dir, uint64_t key, const char *tmp_so) {
    char *so = ax_jit_cache_path(dir, key, "so"), *sum = ax_jit_cache_path(dir, key, "sum");
    char *tmp_sum = NULL;
    uint64_t size, digest;
    bool ok = so && sum && file_digest(tmp_so, &size, &digest) && size > 0;
    if (ok) {
        size_t n = strlen(sum) + 32;
        tmp_sum = malloc(n);
        ok = tmp_sum != NULL;
        if (ok) snprintf(tmp_sum, n, "%s.%ld.tmp", sum, (long)getpid());
    }
    if (ok) {
        FILE *f = fopen(tmp_sum, "w");
        ok = f && fprintf(f, "%s %llu %016llx\n", SUM_MAGIC, (unsigned long long)size,
                          (unsigned long long)digest) > 0;
        if (f) ok = fclose(f) == 0 && ok;
    }
    /* the .so first: a reader that finds the new .sum also finds the .so it describes */
    ok = ok && rename(tmp_so, so) == 0 && rename(tmp_sum, sum) == 0;
    if (!ok) { /* tmp_so stays: the caller may still load it */
        if (tmp_sum) unlink(tmp_sum);
        free(so);
        so = NULL;
    }
    free(tmp_sum);
    free(sum);
    return so;
}

/* The on-disk cache of compiled programs: shared objects under $XDG_CACHE_HOME/ax (default
 * ~/.cache/ax), named by a hash of what the code is generated from, so a second process loads
 * instead of compiling.
 *
 * Each entry is `<key>.so` and `<key>.sum`; the .sum records the .so's size and checksum.
 * Both are written to temporary names and renamed into place, so readers never see half an
 * entry; on load the .so is checked against its .sum, and anything missing, truncated or
 * corrupt is reported as a miss (the caller rebuilds and overwrites it). */
#ifndef AX_JIT_CACHE_H
#define AX_JIT_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* 64-bit FNV-1a, continued from `h` (start with AX_HASH_INIT). */
#define AX_HASH_INIT 1469598103934665603ULL
uint64_t ax_hash_bytes(uint64_t h, const void *data, size_t n);

/* The cache directory (created if needed), or NULL when there is no usable one. The string
 * is malloc'd. */
char *ax_jit_cache_dir(void);
/* "<dir>/<key>.<ext>", malloc'd. */
char *ax_jit_cache_path(const char *dir, uint64_t key, const char *ext);
/* A dlopen handle for a verified entry, or NULL (a miss: absent, truncated or corrupt). */
void *ax_jit_cache_load(const char *dir, uint64_t key);
/* Publishes the shared object at `tmp_so` (already written in `dir`) as the entry for `key`:
 * writes its checksum and renames both into place. Returns the final .so path (malloc'd) or
 * NULL when that failed (tmp_so is then left for the caller to load and remove). */
char *ax_jit_cache_publish(const char *dir, uint64_t key, const char *tmp_so);

#endif

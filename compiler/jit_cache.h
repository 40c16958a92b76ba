/* The on-disk cache of compiled programs: shared objects under $XDG_CACHE_HOME/ax (default
 * ~/.cache/ax), named by a hash of what the code is generated from, so a second process loads
 * instead of compiling.
 *
 * Each entry is `<key>.so` and `<key>.sum`; the .sum records the .so's size and checksum.
 * Code is compiled in a private scratch directory, loaded from there, and only then copied
 * into the cache (to temporary names renamed into place, so readers never see half an
 * entry): a cache that cannot be written (read-only, full, in the way) costs the caching,
 * never the native code. On load the .so is checked against its .sum; anything missing,
 * truncated or corrupt is a miss (the caller rebuilds and overwrites it).
 *
 * ax runs the code it finds there, so it refuses, with a warning, a cache directory or entry
 * that is not owned by the user or is writable by others (group or world): a planted .so
 * with a matching .sum would otherwise be run.
 *
 * The cache holds at most AX_CACHE_MAX bytes (K, M, G suffixes: powers of 1024; default 1G).
 * Loading an entry marks it used (the .sum's modification time, which ax maintains itself:
 * atime is often not updated); writing one evicts the least recently used entries beyond the
 * limit, under a lock (`.lock`) that concurrent writers take in turn. */
#ifndef AX_JIT_CACHE_H
#define AX_JIT_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* 64-bit FNV-1a, continued from `h` (start with AX_HASH_INIT). */
#define AX_HASH_INIT 1469598103934665603ULL
uint64_t ax_hash_bytes(uint64_t h, const void *data, size_t n);

typedef struct ax_jit_cache ax_jit_cache;

/* Finds (creating it if needed) and checks the cache directory, and reads AX_CACHE_MAX.
 * Problems are warnings (each once), never errors: the result may be a cache that holds
 * nothing. `log`: report what the cache does (evictions, failed writes) on stderr as
 * "ax: jit: cache: ..." lines. NULL only when out of memory; every function takes NULL. */
ax_jit_cache *ax_jit_cache_open(bool log);
void ax_jit_cache_close(ax_jit_cache *c);

/* A dlopen handle for the verified entry of `key`, or NULL (a miss: absent, truncated,
 * corrupt, or refused as unsafe). A hit marks the entry used. */
void *ax_jit_cache_load(ax_jit_cache *c, uint64_t key);

/* Copies the shared object at `so` (compiled by the caller, who may already have loaded it)
 * into the cache as the entry of `key`, then evicts what exceeds the size limit. A failure
 * leaves no partial entry and only costs the caching. */
void ax_jit_cache_store(ax_jit_cache *c, uint64_t key, const char *so);

/* The process's scratch directory (`ax-jit-<pid>-XXXXXX` under $TMPDIR, default /tmp), made
 * on first use and removed at exit; NULL when none can be made. Compiles write their shared
 * objects there, with $TMPDIR pointing at it, so that libgccjit's temporary directories and
 * the compiler driver's files go there too: a process killed mid-compile leaves only that
 * directory, and the next process to compile removes it (its owner gone and its lock free). */
const char *ax_jit_scratch_dir(void);

/* For a compile in this process (no child to be had): points $TMPDIR at the scratch
 * directory until ax_jit_scratch_leave puts it back. false (nothing to leave) when there is no
 * scratch directory or memory is short. */
typedef struct ax_jit_scratch {
    bool entered;
    char *saved_tmpdir; /* NULL: $TMPDIR was unset */
} ax_jit_scratch;
bool ax_jit_scratch_enter(ax_jit_scratch *s);
void ax_jit_scratch_leave(ax_jit_scratch *s);

#endif

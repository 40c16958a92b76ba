/* zlib (Debian's zlib1g, libz.so.1) through dlopen, for the compressed formats of array I/O:
 * .npz members (raw deflate), .gz text files (gzip). Loading it on demand keeps ax's start-up
 * free of it and lets ax run without it: only reading or writing compressed data then fails,
 * with an error naming the package. CRC-32 needs no zlib (stored .npz members). */
#ifndef AX_ZLIB_H
#define AX_ZLIB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "context.h"

/* The stream formats: raw deflate (zip members), gzip (.gz files; reading also accepts zlib
 * streams and concatenated gzip members, as Python's gzip does). */
typedef enum { AX_ZLIB_RAW, AX_ZLIB_GZIP } ax_zlib_format;

/* CRC-32 (zip's and gzip's), continued from crc (0 to start). */
uint32_t ax_crc32(uint32_t crc, const void *data, size_t n);

/* Decompresses src into a new malloc'd buffer *out of *out_len bytes. At most max_out bytes
 * are produced (more is an error: a corrupt or hostile stream). `what` names the file in
 * errors ("cannot decompress data.npz (member w.npy): ..."). */
bool ax_zlib_inflate(ax_ctx *cx, const char *what, ax_zlib_format fmt, const void *src, size_t n,
                     size_t max_out, unsigned char **out, size_t *out_len);

/* Streaming compression: bytes go in by ax_deflater_write, compressed bytes come out through
 * `sink` (which returns false, with an error recorded, when it cannot write). */
typedef bool (*ax_zlib_sink)(void *arg, const void *data, size_t n);
typedef struct ax_deflater ax_deflater;
ax_deflater *ax_deflater_new(ax_ctx *cx, const char *what, ax_zlib_format fmt, ax_zlib_sink sink,
                             void *arg);
/* finish: the last input (flushes the stream's end). */
bool ax_deflater_write(ax_deflater *d, const void *data, size_t n, bool finish);
void ax_deflater_free(ax_deflater *d);

#endif

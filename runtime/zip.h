/* The zip archives of NumPy's .npz files: members stored (np.savez) or deflated
 * (np.savez_compressed), with the zip64 extensions NumPy's writer uses. Reading checks every
 * offset and size against the file and every member's CRC, so a corrupt or truncated archive
 * is an error naming the file, never a crash. */
#ifndef AX_ZIP_H
#define AX_ZIP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "context.h"
#include "file.h"

typedef struct ax_zip_entry {
    char *name;
    int method; /* 0 stored, 8 deflated */
    unsigned flags;
    uint32_t crc;
    uint64_t csize, usize; /* compressed and uncompressed sizes */
    uint64_t offset;       /* of the member's local header */
} ax_zip_entry;

typedef struct ax_zip {
    int fd;
    uint64_t size;
    const char *path; /* borrowed, for errors */
    int n;
    ax_zip_entry *entries;
} ax_zip;

/* Reads the central directory of the archive open as fd (size bytes). */
bool ax_zip_open(ax_ctx *cx, const char *path, int fd, uint64_t size, ax_zip *z);
/* The member's uncompressed bytes in a new buffer. */
bool ax_zip_read(ax_ctx *cx, ax_zip *z, const ax_zip_entry *e, unsigned char **data, size_t *len);
void ax_zip_close(ax_zip *z);

typedef struct ax_zip_writer {
    ax_file_out *out;
    int n, cap;
    ax_zip_entry *entries;
} ax_zip_writer;

/* Adds a member made of the concatenated pieces, stored or deflated. */
bool ax_zip_add(ax_ctx *cx, ax_zip_writer *w, const char *name, int npieces,
                const void *const *pieces, const size_t *lens, bool deflate);
/* Writes the central directory (the caller then commits w->out). */
bool ax_zip_finish(ax_ctx *cx, ax_zip_writer *w);
void ax_zip_writer_free(ax_zip_writer *w);

#endif

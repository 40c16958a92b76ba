/* NumPy's .npy format (format versions 1.0, 2.0 and 3.0): a magic string, a header that is a
 * Python dict literal {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }, then the
 * raw elements. Also the element conversions array I/O shares with safetensors: element types
 * ax lacks load as the nearest ax dtype that holds every value exactly (int8, int16, uint16 ->
 * int32; float16, bfloat16 -> float32); the others (uint64, complex, strings, objects, ...)
 * are a TypeError naming the dtype. Errors name the file (`name`). */
#ifndef AX_NPY_H
#define AX_NPY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "array.h"

/* An element type as a file stores it: kind 'b' (bool), 'i', 'u', 'f', or 'B' (bfloat16). */
typedef struct ax_raw_type {
    char kind;
    int size;  /* bytes */
    bool swap; /* big-endian in the file */
} ax_raw_type;

/* The ax dtype an element type loads as; false when none holds it exactly. */
bool ax_raw_type_dtype(ax_raw_type t, ax_dtype *out);

/* Reads the next n bytes into dst; false (with an error recorded) when it cannot. */
typedef bool (*ax_raw_reader)(void *src, void *dst, size_t n);

/* Sequential reads from memory (an ax_raw_reader; the caller checks the length first). */
typedef struct ax_mem_reader {
    const unsigned char *p;
    size_t left;
} ax_mem_reader;
bool ax_mem_read(void *reader, void *dst, size_t n);

/* An array of `shape` read from size(shape) raw elements of type t (C order, or Fortran order
 * when fortran), converted to its ax dtype. The caller has checked that the bytes exist. */
ax_array *ax_raw_array(ax_ctx *cx, ax_raw_type t, int ndim, const int64_t *shape, bool fortran,
                       ax_raw_reader read, void *src);

/* The bytes of `shape` elements of size `size`, or false when that overflows. */
bool ax_raw_nbytes(int ndim, const int64_t *shape, int size, uint64_t *nbytes);

#define AX_NPY_MAGIC "\x93NUMPY"
/* The preamble (magic, version, header length) is at most this long. */
#define AX_NPY_PREAMBLE 12

typedef struct ax_npy_header {
    ax_raw_type type;
    bool fortran;
    int ndim;
    int64_t shape[AX_MAX_RANK];
    size_t data_offset; /* bytes from the file's start to the data */
    uint64_t nbytes;    /* bytes of data */
} ax_npy_header;

/* The total header length (preamble included) from the first n bytes (n >= AX_NPY_PREAMBLE
 * or the whole file), or 0 with an error when this is not a .npy file of a known version. */
size_t ax_npy_header_length(ax_ctx *cx, const char *name, const unsigned char *buf, size_t n);
/* Parses the header in buf[0..n) (n >= its length). */
bool ax_npy_parse_header(ax_ctx *cx, const char *name, const unsigned char *buf, size_t n,
                         ax_npy_header *h);

/* The array of a whole .npy file in memory (an .npz member): errors name `name`. */
ax_array *ax_npy_decode(ax_ctx *cx, const char *name, const unsigned char *buf, size_t n);

/* The header of a (format 1.0) .npy file holding a, padded to 64 bytes as NumPy pads it, in
 * a new buffer of *len bytes; the data that follows is a's elements in C order. */
char *ax_npy_format_header(ax_ctx *cx, const ax_array *a, size_t *len);

#endif

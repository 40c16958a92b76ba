/* The safetensors format (Hugging Face's checkpoints): an 8-byte little-endian header length
 * N, N bytes of JSON {"NAME": {"dtype": "F32", "shape": [2, 3], "data_offsets": [BEGIN, END]},
 * ..., "__metadata__": {"key": "value"}}, padded with spaces to a multiple of 8, then the
 * tensors' bytes (little-endian, C order), packed without gaps in the order of their offsets.
 * Writing follows the reference implementation: tensors sorted by dtype (widest first), then
 * by name; compact JSON with "__metadata__" first. Reading validates what it does: a header
 * under 100 MB, offsets that tile the data exactly, sizes that match the shapes. */
#ifndef AX_SAFETENSORS_H
#define AX_SAFETENSORS_H

#include <stdbool.h>

#include "array.h"

typedef struct ax_tensor_file {
    int n; /* tensors, sorted by name */
    char **names;
    ax_array **arrays;
    int nmeta; /* "__metadata__" entries, in file order */
    char **meta_keys;
    char **meta_values;
} ax_tensor_file;

bool ax_safetensors_read(ax_ctx *cx, const char *path, ax_tensor_file *out);
bool ax_safetensors_write(ax_ctx *cx, const char *path, const ax_tensor_file *t);
void ax_tensor_file_free(ax_tensor_file *t);

#endif

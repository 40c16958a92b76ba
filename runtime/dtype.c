/* Element types and JAX's promotion lattice. */
#include "dtype.h"

#include <assert.h>
#include <string.h>

static const struct {
    const char *name, *short_name;
    size_t size;
} dtype_info[AX_NDTYPES] = {
    [AX_BOOL] = {"bool", "bool", 1}, [AX_U8] = {"uint8", "u8", 1},
    [AX_I32] = {"int32", "i32", 4},  [AX_U32] = {"uint32", "u32", 4},
    [AX_I64] = {"int64", "i64", 8},  [AX_F32] = {"float32", "f32", 4},
    [AX_F64] = {"float64", "f64", 8},
};

/* assert: a dtype out of the enum is a bug (a corrupted header, an uninitialised params) */
#define INFO(t) (assert((unsigned)(t) < AX_NDTYPES), dtype_info[t])

size_t ax_dtype_size(ax_dtype t) { return INFO(t).size; }
const char *ax_dtype_name(ax_dtype t) { return INFO(t).name; }
const char *ax_dtype_short(ax_dtype t) { return INFO(t).short_name; }
bool ax_dtype_is_float(ax_dtype t) { return t == AX_F32 || t == AX_F64; }
bool ax_dtype_is_int(ax_dtype t) { return t == AX_U8 || t == AX_I32 || t == AX_U32 || t == AX_I64; }
bool ax_dtype_is_signed(ax_dtype t) { return t == AX_I32 || t == AX_I64; }
bool ax_dtype_is_unsigned(ax_dtype t) { return t == AX_U8 || t == AX_U32; }

bool ax_dtype_parse(const char *name, ax_dtype *out) {
    for (int t = 0; t < AX_NDTYPES; t++) {
        if (!strcmp(name, dtype_info[t].name) || !strcmp(name, dtype_info[t].short_name)) {
            *out = (ax_dtype)t;
            return true;
        }
    }
    if (!strcmp(name, "bool_")) {
        *out = AX_BOOL;
        return true;
    }
    return false;
}

ax_dtype ax_dtype_default_float(bool x64) { return x64 ? AX_F64 : AX_F32; }
ax_dtype ax_dtype_default_int(bool x64) { return x64 ? AX_I64 : AX_I32; }

/* Join of two integer types in JAX's lattice (u8 < i32 < i64, u8 < u32 < i64). */
static ax_dtype join_ints(ax_dtype a, ax_dtype b) {
    if (a == b) return a;
    if (a == AX_U8) return b;
    if (b == AX_U8) return a;
    return AX_I64; /* i32/u32, i32/i64, u32/i64 */
}

static ax_dtype join_strong(ax_dtype a, ax_dtype b) {
    if (a == b) return a;
    if (a == AX_BOOL) return b;
    if (b == AX_BOOL) return a;
    if (ax_dtype_is_float(a) && ax_dtype_is_float(b)) return a == AX_F64 || b == AX_F64 ? AX_F64 : AX_F32;
    if (ax_dtype_is_float(a)) return a;
    if (ax_dtype_is_float(b)) return b;
    return join_ints(a, b);
}

/* A weak value `w` (a literal) meets a strongly typed `s`. */
static ax_dtype join_weak_strong(ax_dtype w, ax_dtype s, bool *weak_out) {
    if (ax_dtype_is_float(w)) {
        if (ax_dtype_is_float(s)) return s;
        *weak_out = true; /* i32 + 1.0 is a weak float, as in JAX */
        return w;
    }
    if (w == AX_BOOL) return s;
    if (s == AX_BOOL) {
        *weak_out = true;
        return w;
    }
    return s; /* weak int adopts the strong int or float type */
}

ax_dtype ax_dtype_promote(ax_dtype a, bool a_weak, ax_dtype b, bool b_weak, bool *weak_out) {
    bool weak = false;
    ax_dtype r;
    if (a_weak && b_weak) {
        weak = true;
        r = join_strong(a, b);
    } else if (a_weak) {
        r = join_weak_strong(a, b, &weak);
    } else if (b_weak) {
        r = join_weak_strong(b, a, &weak);
    } else {
        r = join_strong(a, b);
    }
    if (r == AX_BOOL) weak = false; /* JAX has no weak bool */
    if (weak_out) *weak_out = weak;
    return r;
}

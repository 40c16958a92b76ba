/* x[index] with NumPy's rules, and the functional update helper x.at[index].set(v).
 *
 * An index is parsed into entries (ints, slices, None, Ellipsis, integer arrays, bool masks).
 * Basic entries become views: rev (negative steps), slice, squeeze (int entries) and
 * expand_dims (None). Integer arrays (and masks, turned into the integer arrays of their
 * nonzero positions) then gather from what remains; their result dimensions go where NumPy
 * puts them: in place when the advanced entries (integer arrays and ints) are adjacent, first
 * otherwise. */
#include "np_lib.h"

#include "../compiler/trace.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* No valid index has more entries: at most AX_MAX_RANK of them take a dimension, at most
 * AX_MAX_RANK add one (None), and one may be an ellipsis. */
#define MAX_ENTRIES (2 * AX_MAX_RANK + 1)

typedef enum { IX_INT, IX_SLICE, IX_NEWAXIS, IX_ELLIPSIS, IX_ARRAY, IX_MASK } ix_kind;

typedef struct ix_entry {
    ix_kind kind;
    int64_t i;             /* IX_INT */
    const ax_value *slice; /* IX_SLICE: the slice value, or NULL for a full `:` */
    ax_array *arr;         /* IX_ARRAY / IX_MASK: an owned reference */
} ix_entry;

typedef struct ix_list {
    ix_entry e[MAX_ENTRIES];
    int n;
} ix_list;

/* Whether an entry indexes a dimension of x (masks: see expand_masks) / makes one of the
 * result of basic indexing. An Ellipsis left in the list spans no dimension: it only keeps
 * advanced indices on either side of it apart, as in NumPy. */
static bool takes_dim(ix_kind k) {
    return k == IX_INT || k == IX_SLICE || k == IX_ARRAY;
}
static bool makes_dim(ix_kind k) {
    return k == IX_SLICE || k == IX_ARRAY || k == IX_NEWAXIS;
}

static void ix_free(ix_list *l) {
    for (int i = 0; i < l->n; i++) ax_array_release(l->e[i].arr);
    l->n = 0;
}

/* Appends e (taking its array); false with an error when the index is too long. */
static bool ix_add(ax_ctx *cx, ix_list *l, ix_entry e) {
    if (l->n == MAX_ENTRIES) {
        ax_array_release(e.arr);
        ax_error(
            cx, AX_ERR_INDEX,
            "too many indices: an index has at most %d entries (arrays have at most %d dimensions)",
            MAX_ENTRIES, AX_MAX_RANK);
        return false;
    }
    l->e[l->n++] = e;
    return true;
}

static bool bad_index(ax_ctx *cx, const char *got) {
    ax_error(cx, AX_ERR_INDEX,
             "only integers, slices (`:`), ellipsis (`...`), None and integer or boolean arrays "
             "are valid indices, got %s",
             got);
    return false;
}

/* ---------------------------------------------------------------- parsing */

/* Classifies an array entry (taking the reference to a). */
static bool parse_array_take(ax_ctx *cx, ax_array *a, ix_list *l) {
    if (a->dtype == AX_BOOL) {
        if (a->ndim > 0) return ix_add(cx, l, (ix_entry){.kind = IX_MASK, .arr = a});
        bool truth = ax_np_is_concrete(a) && !a->tracer && ax_array_get_i64(a, 0);
        ax_array_release(a);
        if (truth) return ix_add(cx, l, (ix_entry){.kind = IX_NEWAXIS});
        ax_error(cx, AX_ERR_INDEX, "a scalar boolean index must be a concrete True");
        return false;
    }
    if (!ax_dtype_is_int(a->dtype)) {
        char t[160];
        ax_array_type_format(t, sizeof t, a);
        ax_array_release(a);
        return bad_index(cx, t);
    }
    if (a->ndim == 0 && !a->tracer) {
        int64_t i = ax_array_get_i64(a, 0);
        ax_array_release(a);
        return ix_add(cx, l, (ix_entry){.kind = IX_INT, .i = i});
    }
    return ix_add(cx, l, (ix_entry){.kind = IX_ARRAY, .arr = a});
}

static bool parse_entry(ax_interp *in, ax_value *v, ix_list *l) {
    ax_ctx *cx = in->cx;
    switch (v->kind) {
    case AX_V_NONE:
        return ix_add(cx, l, (ix_entry){.kind = IX_NEWAXIS});
    case AX_V_ELLIPSIS:
        return ix_add(cx, l, (ix_entry){.kind = IX_ELLIPSIS});
    case AX_V_SLICE:
        return ix_add(cx, l, (ix_entry){.kind = IX_SLICE, .slice = v});
    case AX_V_ARRAY:
        return parse_array_take(cx, ax_array_retain(v->arr), l);
    case AX_V_RANGE: /* an array of its ints, as NumPy reads x[range(2)] */
    case AX_V_LIST: {
        ax_array *a = ax_np_asarray(in, v, "index");
        if (a && a->size == 0 && ax_dtype_is_float(a->dtype)) {
            ax_array *b = ax_np_astype(cx, a, ax_np_default_int(cx), false);
            ax_array_release(a);
            a = b;
        }
        return a && parse_array_take(cx, a, l);
    }
    default:
        return bad_index(cx, ax_value_kind_name(v->kind));
    }
}

static bool parse_index(ax_interp *in, ax_value *index, ix_list *l) {
    if (index->kind != AX_V_TUPLE) return parse_entry(in, index, l);
    for (int i = 0; i < index->n; i++)
        if (!parse_entry(in, index->items[i], l)) return false;
    return true;
}

/* Replaces the Ellipsis (or appends at the end) with full slices for the dimensions that no
 * entry indexes. */
static bool expand_ellipsis(ax_ctx *cx, ix_list *l, int ndim) {
    int used = 0, ellipsis = -1;
    for (int i = 0; i < l->n; i++) {
        ix_kind k = l->e[i].kind;
        if (k == IX_ELLIPSIS) {
            if (ellipsis >= 0) {
                ax_error(cx, AX_ERR_INDEX, "an index can only have a single ellipsis ('...')");
                return false;
            }
            ellipsis = i;
        } else if (k == IX_MASK) {
            used += l->e[i].arr->ndim;
        } else if (k != IX_NEWAXIS) {
            used++;
        }
    }
    if (used > ndim) {
        ax_error(cx, AX_ERR_INDEX,
                 "too many indices for array: array is %d-dimensional, but %d were indexed", ndim,
                 used);
        return false;
    }
    int fill = ndim - used, at = ellipsis >= 0 ? ellipsis : l->n;
    int total = l->n - (ellipsis >= 0) + fill;
    if (total > MAX_ENTRIES) {
        ax_error(
            cx, AX_ERR_INDEX,
            "too many indices: an index has at most %d entries (arrays have at most %d dimensions)",
            MAX_ENTRIES, AX_MAX_RANK);
        return false;
    }
    if (ellipsis >= 0 && fill == 0) return true; /* stays, as a separator */
    int tail = l->n - at - (ellipsis >= 0);
    memmove(&l->e[at + fill], &l->e[l->n - tail], (size_t)tail * sizeof l->e[0]);
    for (int i = 0; i < fill; i++) l->e[at + i] = (ix_entry){.kind = IX_SLICE};
    l->n = total;
    return true;
}

/* ---------------------------------------------------------------- masks */

/* The coordinates of the true elements of a concrete mask: one index array per dimension. */
static bool mask_nonzero(ax_ctx *cx, ax_array *mask, ax_array **coords) {
    int64_t count = 0;
    for (int64_t k = 0; k < mask->size; k++) count += ax_array_get_i64(mask, k) != 0;
    ax_dtype t = ax_np_default_int(cx);
    for (int d = 0; d < mask->ndim; d++) {
        coords[d] = ax_array_new(cx, t, 1, &count);
        if (!coords[d]) {
            for (int j = 0; j < d; j++) ax_array_release(coords[j]);
            return false;
        }
    }
    for (int64_t k = 0, n = 0; k < mask->size; k++) {
        if (!ax_array_get_i64(mask, k)) continue;
        int64_t rest = k;
        for (int d = mask->ndim - 1; d >= 0; d--) {
            int64_t c = rest % mask->shape[d];
            rest /= mask->shape[d];
            if (t == AX_I64)
                ((int64_t *)ax_array_data(coords[d]))[n] = c;
            else
                ((int32_t *)ax_array_data(coords[d]))[n] = (int32_t)c;
        }
        n++;
    }
    return true;
}

static bool check_mask(ax_ctx *cx, const ax_array *mask, const ax_array *x, int dim) {
    if (!ax_np_is_concrete(mask)) {
        ax_error(cx, AX_ERR_CONCRETIZATION,
                 "boolean mask indexing needs a concrete mask: the shape of x[mask] depends on "
                 "its values; use where(mask, x, 0) instead");
        return false;
    }
    for (int j = 0; j < mask->ndim; j++)
        if (mask->shape[j] != x->shape[dim + j]) {
            ax_error(cx, AX_ERR_INDEX,
                     "boolean index did not match indexed array along axis %d; size of axis is "
                     "%lld but size of corresponding boolean axis is %lld",
                     dim + j, (long long)x->shape[dim + j], (long long)mask->shape[j]);
            return false;
        }
    return true;
}

/* Turns every mask entry into the integer array entries of its nonzero coordinates. */
static bool expand_masks(ax_ctx *cx, ix_list *l, const ax_array *x) {
    for (int i = 0, dim = 0; i < l->n; i++) {
        ix_entry *e = &l->e[i];
        if (e->kind != IX_MASK) {
            dim += takes_dim(e->kind);
            continue;
        }
        int k = e->arr->ndim;
        ax_array *coords[AX_MAX_RANK];
        if (l->n - 1 + k > MAX_ENTRIES) {
            ax_error(cx, AX_ERR_INDEX,
                     "too many indices: an index has at most %d entries (arrays have at most %d "
                     "dimensions)",
                     MAX_ENTRIES, AX_MAX_RANK);
            return false;
        }
        if (!check_mask(cx, e->arr, x, dim) || !mask_nonzero(cx, e->arr, coords)) return false;
        ax_array_release(e->arr);
        memmove(&l->e[i + k], &l->e[i + 1], (size_t)(l->n - i - 1) * sizeof l->e[0]);
        for (int j = 0; j < k; j++) l->e[i + j] = (ix_entry){.kind = IX_ARRAY, .arr = coords[j]};
        l->n += k - 1;
        i += k - 1;
        dim += k;
    }
    return true;
}

/* ---------------------------------------------------------------- basic indexing */

/* A concrete integer slice bound (NULL or None: absent). */
static bool slice_int(ax_ctx *cx, const ax_value *v, bool *given, int64_t *out) {
    *given = v && v->kind != AX_V_NONE;
    if (!*given) return true;
    if (v->kind != AX_V_ARRAY || v->arr->ndim != 0 || !ax_dtype_is_int(v->arr->dtype)) {
        ax_error(cx, AX_ERR_TYPE, "slice indices must be integers or None");
        return false;
    }
    if (!ax_np_is_concrete(v->arr)) {
        ax_error(cx, AX_ERR_CONCRETIZATION,
                 "slice bounds must be concrete integers: the shape of x[a:b] depends on them; "
                 "use lax.dynamic_slice for traced starts");
        return false;
    }
    *out = ax_array_get_i64(v->arr, 0);
    return true;
}

static int64_t clamp_bound(int64_t v, int64_t n, bool negative_step) {
    if (v < 0) {
        v += n;
        if (v < 0) v = negative_step ? -1 : 0;
    } else if (v >= n) {
        v = negative_step ? n - 1 : n;
    }
    return v;
}

/* Python's slice.indices(n), as the lax.slice of a dimension (reversed first when the step is
 * negative): *lo, *hi, *step for the (possibly reversed) dimension. */
static bool slice_range(ax_ctx *cx, const ax_value *sl, int64_t n, int64_t *lo, int64_t *hi,
                        int64_t *step, bool *reverse) {
    int64_t start = 0, stop = 0, st = 1;
    bool has_start = false, has_stop = false, has_step = false;
    if (sl && (!slice_int(cx, sl->items[0], &has_start, &start) ||
               !slice_int(cx, sl->items[1], &has_stop, &stop) ||
               !slice_int(cx, sl->items[2], &has_step, &st)))
        return false;
    if (!has_step) st = 1;
    if (st == 0) {
        ax_error(cx, AX_ERR_VALUE, "slice step cannot be zero");
        return false;
    }
    if (st < -INT64_MAX) st = -INT64_MAX; /* as CPython clamps it: -st must not overflow */
    bool neg = st < 0;
    start = has_start ? clamp_bound(start, n, neg) : neg ? n - 1 : 0;
    stop = has_stop ? clamp_bound(stop, n, neg) : neg ? -1 : n;
    int64_t a = neg ? -st : st, span = neg ? start - stop : stop - start;
    int64_t count = span > 0 ? (span - 1) / a + 1 : 0;
    int64_t first = neg ? n - 1 - start : start;
    *reverse = neg;
    *step = a;
    *lo = count ? first : 0;
    *hi = count ? first + (count - 1) * a + 1 : 0;
    return true;
}

static bool static_bound_ok(ax_ctx *cx, int64_t i, int dim, int64_t n) {
    if (i >= -n && i < n) return true;
    ax_error(cx, AX_ERR_INDEX, "index %lld is out of bounds for axis %d with size %lld",
             (long long)i, dim, (long long)n);
    return false;
}

/* Applies the int, slice and None entries (integer array dimensions are kept whole). */
static ax_array *basic_index(ax_ctx *cx, ax_array *x, const ix_list *l) {
    ax_params rev = {0}, sl = {.ndim = x->ndim}, sq = {0}, ex = {0};
    bool sliced = false;
    for (int i = 0, dim = 0, out = 0; i < l->n; i++) {
        const ix_entry *e = &l->e[i];
        if (e->kind == IX_NEWAXIS) ex.axes[ex.naxes++] = out++;
        if (!takes_dim(e->kind)) continue;
        int64_t n = x->shape[dim], lo = 0, hi = n, step = 1;
        bool reverse = false;
        if (e->kind == IX_INT) {
            if (!static_bound_ok(cx, e->i, dim, n)) return NULL;
            lo = e->i < 0 ? e->i + n : e->i;
            hi = lo + 1;
            sq.axes[sq.naxes++] = dim; /* rev and slice keep x's dimensions */
        } else {
            if (e->kind == IX_SLICE && !slice_range(cx, e->slice, n, &lo, &hi, &step, &reverse))
                return NULL;
            out++;
        }
        if (reverse) rev.axes[rev.naxes++] = dim;
        sl.lo[dim] = lo;
        sl.hi[dim] = hi;
        sl.step[dim] = step;
        sliced |= lo != 0 || hi != n || step != 1;
        dim++;
    }
    ax_scope s;
    ax_scope_begin(&s, cx);
    ax_array *y = x;
    if (rev.naxes) y = ax_lax_bind(&s, AX_P_REV, 1, &y, &rev);
    if (sliced) y = ax_lax_bind(&s, AX_P_SLICE, 1, &y, &sl);
    if (sq.naxes) y = ax_lax_bind(&s, AX_P_SQUEEZE, 1, &y, &sq);
    if (ex.naxes) y = ax_lax_bind(&s, AX_P_EXPAND_DIMS, 1, &y, &ex);
    y = ax_scope_keep(&s, y);
    ax_scope_end(&s);
    return y;
}

/* ---------------------------------------------------------------- advanced indexing */

/* Checks a concrete index array against its dimension's size. */
static bool check_index_bounds(ax_ctx *cx, const ax_array *idx, int dim, int64_t n) {
    if (!ax_np_is_concrete(idx)) return true;
    for (int64_t k = 0; k < idx->size; k++)
        if (!static_bound_ok(cx, ax_array_get_i64(idx, k), dim, n)) return false;
    return true;
}

/* where(i < 0, i + n, i), converted to the index dtype t. */
static ax_array *normalize_index(ax_scope *s, ax_array *idx, int64_t n, ax_dtype t) {
    ax_array *i = ax_scope_own(s, ax_np_astype(s->cx, idx, t, false));
    if (!i || !ax_dtype_is_signed(idx->dtype)) return i;
    /* only in-range negatives wrap: an index below -n stays as it is, so the bounds error
     * names the index the program wrote */
    ax_array *neg =
        ax_lax_binary(s, AX_P_AND, ax_lax_binary(s, AX_P_LT, i, ax_lax_scalar_like(s, i, 0)),
                      ax_lax_binary(s, AX_P_GE, i, ax_lax_scalar_like(s, i, -(double)n)));
    ax_array *wrapped = ax_lax_add(s, i, ax_lax_scalar_like(s, i, (double)n));
    return ax_lax_select(s, neg, wrapped, i);
}

/* The index dtype: i32 unless an index array or a dimension needs 64 bits. */
static ax_dtype index_dtype(const ix_list *l, const ax_array *x) {
    for (int i = 0; i < l->n; i++)
        if (l->e[i].kind == IX_ARRAY &&
            (l->e[i].arr->dtype == AX_I64 || l->e[i].arr->dtype == AX_U32))
            return AX_I64;
    for (int d = 0; d < x->ndim; d++)
        if (x->shape[d] > INT32_MAX) return AX_I64;
    return AX_I32;
}

/* Where NumPy puts the broadcast index dimensions: at the output position of the first
 * advanced entry when the advanced entries (arrays and ints) are adjacent, else first. */
static int advanced_position(const ix_list *l) {
    int first = -1, last = -1, out_before = 0;
    for (int i = 0; i < l->n; i++) {
        ix_kind k = l->e[i].kind;
        if (k == IX_ARRAY || k == IX_INT) {
            if (first < 0) first = i;
            last = i;
        }
    }
    for (int i = first + 1; i < last; i++)
        if (l->e[i].kind != IX_ARRAY && l->e[i].kind != IX_INT) return 0;
    for (int i = 0; i < first; i++) out_before += makes_dim(l->e[i].kind);
    return out_before;
}

/* Broadcasts the index arrays together and stacks them into one B + (k,) index. */
static ax_array *stacked_indices(ax_scope *s, const ix_list *l, const ax_array *x, const int *dims,
                                 int k, ax_dtype t) {
    ax_ctx *cx = s->cx;
    int nb = 0;
    int64_t b[AX_MAX_RANK];
    for (int i = 0; i < l->n; i++) {
        const ax_array *a = l->e[i].arr;
        if (l->e[i].kind != IX_ARRAY) continue;
        if (!ax_np_broadcast_shapes(nb, b, a->ndim, a->shape, &nb, b)) {
            char ts[200];
            ax_shape_format(ts, sizeof ts, a->ndim, a->shape);
            return ax_error(cx, AX_ERR_INDEX,
                            "shape mismatch: indexing arrays could not be broadcast together "
                            "(an index of shape %s)",
                            ts);
        }
    }
    if (!ax_rank_check(cx, "index arrays", nb + 1)) return NULL;
    ax_array *cols[AX_MAX_RANK];
    int64_t col_shape[AX_MAX_RANK];
    memcpy(col_shape, b, (size_t)nb * sizeof *b);
    col_shape[nb] = 1;
    for (int i = 0, j = 0; i < l->n; i++) {
        if (l->e[i].kind != IX_ARRAY) continue;
        ax_array *a = l->e[i].arr;
        if (!check_index_bounds(cx, a, dims[j], x->shape[dims[j]])) return NULL;
        ax_array *v = normalize_index(s, a, x->shape[dims[j]], t);
        v = ax_scope_own(s, ax_np_broadcast_to(cx, v, nb, b));
        cols[j++] = ax_lax_reshape(s, v, nb + 1, col_shape);
        if (!cols[j - 1]) return NULL;
    }
    if (k == 1) return cols[0];
    ax_params p = {.naxes = 1};
    p.axes[0] = nb;
    return ax_lax_bind(s, AX_P_CONCATENATE, k, cols, &p);
}

/* Gathers along the integer array entries of y (the result of basic_index). */
static ax_array *advanced_index(ax_ctx *cx, ax_array *x, ax_array *y, const ix_list *l) {
    int gather_axes[AX_MAX_RANK], x_dims[AX_MAX_RANK], k = 0;
    for (int i = 0, dim = 0, out = 0; i < l->n; i++) {
        ix_kind kind = l->e[i].kind;
        if (kind == IX_ARRAY) {
            x_dims[k] = dim;
            gather_axes[k++] = out;
        }
        dim += takes_dim(kind);
        out += makes_dim(kind);
    }
    ax_scope s;
    ax_scope_begin(&s, cx);
    ax_array *idx = stacked_indices(&s, l, x, x_dims, k, index_dtype(l, x));
    ax_params p = {.naxes = k};
    memcpy(p.axes, gather_axes, (size_t)k * sizeof *gather_axes);
    ax_array *g = idx ? ax_lax_bind(&s, AX_P_GATHER, 2, (ax_array *[]){y, idx}, &p) : NULL;
    int q = advanced_position(l), nb = idx ? idx->ndim - 1 : 0;
    if (g && q > 0 && nb > 0) {
        int perm[AX_MAX_RANK];
        for (int i = 0; i < g->ndim; i++) perm[i] = i < q ? nb + i : i < q + nb ? i - q : i;
        g = ax_lax_transpose(&s, g, perm);
    }
    g = ax_scope_keep(&s, g);
    ax_scope_end(&s);
    return g;
}

/* x indexed by a parsed index (ellipsis and masks expanded). */
static ax_array *index_list(ax_ctx *cx, ax_array *x, const ix_list *l) {
    bool advanced = false;
    for (int i = 0; i < l->n; i++) advanced |= l->e[i].kind == IX_ARRAY;
    ax_array *y = basic_index(cx, x, l);
    if (!advanced || !y) return y;
    ax_array *r = advanced_index(cx, x, y, l);
    ax_array_release(y);
    return r;
}

/* Parses an index for x; false with an error. */
static bool parse_full(ax_interp *in, const ax_array *x, ax_value *index, ix_list *l) {
    return parse_index(in, index, l) && expand_ellipsis(in->cx, l, x->ndim) &&
           expand_masks(in->cx, l, x);
}

static ax_array *index_array(ax_interp *in, ax_array *x, ax_value *index) {
    ix_list l = {.n = 0};
    ax_array *r = parse_full(in, x, index, &l) ? index_list(in->cx, x, &l) : NULL;
    ix_free(&l);
    return r;
}

/* ---------------------------------------------------------------- sequences */

static ax_value *sequence_item(ax_interp *in, ax_value *x, ax_value *index) {
    ax_ctx *cx = in->cx;
    int64_t n = x->n;
    if (index->kind == AX_V_SLICE) {
        int64_t lo, hi, step;
        bool reverse;
        if (!slice_range(cx, index, n, &lo, &hi, &step, &reverse)) return NULL;
        int64_t count = hi > lo ? (hi - lo - 1) / step + 1 : 0;
        ax_value **items = calloc((size_t)(count ? count : 1), sizeof *items);
        if (!items) return ax_error_oom(cx);
        for (int64_t i = 0; i < count; i++) {
            int64_t at = lo + i * step;
            items[i] = ax_value_retain(x->items[reverse ? n - 1 - at : at]);
        }
        ax_value *r = x->kind == AX_V_LIST ? ax_value_list((int)count, items)
                                           : ax_value_tuple((int)count, items);
        free(items);
        return r;
    }
    const ax_array *a = ax_np_value_array(index);
    if (!a || a->ndim != 0 || !ax_dtype_is_int(a->dtype) || !ax_np_is_concrete(a))
        return ax_error(cx, AX_ERR_TYPE, "%s indices must be concrete integers or slices",
                        ax_value_kind_name(x->kind));
    int64_t i = ax_array_get_i64(a, 0);
    if (i < -n || i >= n)
        return ax_error(cx, AX_ERR_INDEX, "%s index %lld out of range (length %lld)",
                        ax_value_kind_name(x->kind), (long long)i, (long long)n);
    return ax_value_retain(x->items[i < 0 ? i + n : i]);
}

ax_value *ax_np_getitem(ax_interp *in, ax_value *x, ax_value *index) {
    if (!x || !index) return NULL;
    if (x->kind == AX_V_LIST || x->kind == AX_V_TUPLE) return sequence_item(in, x, index);
    if (x->kind == AX_V_DICT && index->kind == AX_V_STR) {
        ax_value *v = ax_dict_get(x, index->str);
        if (!v) return ax_error(in->cx, AX_ERR_KEY, "'%s'", index->str);
        return ax_value_retain(v);
    }
    if (x->kind != AX_V_ARRAY)
        return ax_error(in->cx, AX_ERR_TYPE, "%s is not subscriptable",
                        ax_value_kind_name(x->kind));
    return ax_np_wrap_take(in, index_array(in, x->arr, index));
}

/* ---------------------------------------------------------------- x.at[index] */

typedef struct at_state {
    ax_value *x;     /* the array value */
    ax_value *index; /* NULL for the bare `x.at` */
} at_state;

static void at_free(void *payload) {
    at_state *st = payload;
    ax_value_release(st->x);
    if (st->index) ax_value_release(st->index);
    free(st);
}

static void at_format(ax_strbuf *out, void *payload) {
    at_state *st = payload;
    ax_strbuf_append(out, st->index ? "<at[...] of an array>" : "<at of an array>");
}

static ax_value *at_value(ax_interp *in, ax_value *x, ax_value *index);

static ax_value *at_getitem(ax_interp *in, ax_value *self, ax_value *index) {
    at_state *st = self->obj.payload;
    return at_value(in, st->x, index);
}

/* The flat positions of the elements x[index] addresses, in the shape of x[index]. */
static ax_array *addressed_positions(ax_interp *in, ax_array *x, ax_value *index) {
    ax_ctx *cx = in->cx;
    int64_t n = x->size;
    ax_array *iota = ax_np_iota(cx, x->size > INT32_MAX ? AX_I64 : AX_I32, 1, &n, 0);
    ax_array *pos = ax_np_reshape(cx, iota, x->ndim, x->shape);
    ax_array_release(iota);
    ax_array *sel = pos ? index_array(in, pos, index) : NULL;
    ax_array_release(pos);
    return sel;
}

/* ---- JAX's out-of-bounds modes (mode= of .at[] methods, take, take_along_axis, put):
 * "clip" clamps each index into its dimension; "fill" (for gets) and "drop" (for updates) make
 * an out-of-bounds element read the fill value and an out-of-bounds update disappear;
 * "promise_in_bounds" clips gets and drops updates, as XLA does. Negative indices count from
 * the end first. Without a mode, out of bounds is an IndexError. */

bool ax_np_parse_mode(ax_interp *in, ax_value *v, bool update, ax_index_mode *mode) {
    *mode = AX_INDEX_CHECK;
    if (!v || v->kind == AX_V_NONE) return true;
    if (v->kind == AX_V_STR) {
        if (!strcmp(v->str, "clip"))
            *mode = AX_INDEX_CLIP;
        else if (!strcmp(v->str, "fill") || !strcmp(v->str, "drop"))
            *mode = AX_INDEX_FILL;
        else if (!strcmp(v->str, "promise_in_bounds"))
            *mode = update ? AX_INDEX_FILL : AX_INDEX_CLIP;
        else if (!strcmp(v->str, "raise"))
            *mode = AX_INDEX_CHECK;
        else
            v = NULL;
        if (v) return true;
    }
    ax_error(in->cx, AX_ERR_VALUE,
             "mode must be one of 'promise_in_bounds', 'clip', 'drop', 'fill' (or None)");
    return false;
}

/* An index array for a dimension of size n under the mode: clipped into [0, n), or with n
 * (one past the end) where it is out of bounds. Owned by s. */
static ax_array *mode_index(ax_scope *s, ax_array *idx, int64_t n, ax_index_mode mode, ax_dtype t) {
    ax_array *i = ax_scope_own(s, ax_np_astype(s->cx, idx, t, false));
    if (!i) return NULL;
    ax_array *zero = ax_lax_scalar_like(s, i, 0), *size = ax_lax_scalar_like(s, i, (double)n);
    if (ax_dtype_is_signed(i->dtype))
        i = ax_lax_select(s, ax_lax_binary(s, AX_P_LT, i, zero), ax_lax_add(s, i, size), i);
    if (mode == AX_INDEX_CLIP) {
        ax_array *last = ax_lax_scalar_like(s, i, (double)(n > 0 ? n - 1 : 0));
        return ax_lax_binary(s, AX_P_MAX, ax_lax_binary(s, AX_P_MIN, i, last), zero);
    }
    ax_array *inside = ax_lax_binary(s, AX_P_AND, ax_lax_binary(s, AX_P_GE, i, zero),
                                     ax_lax_binary(s, AX_P_LT, i, size));
    return ax_lax_select(s, inside, i, size);
}

/* The flat positions of the elements x[index] addresses under a mode, in the shape of
 * x[index]; with AX_INDEX_FILL an out-of-bounds element's position is x->size. The positions
 * are an iota in x's shape indexed like x, its dimensions that an int or an array indexes
 * extended by one element holding x->size, where "fill" indices point when out of bounds. */
static ax_array *mode_positions(ax_interp *in, ax_array *x, ax_value *index, ax_index_mode mode) {
    if (mode == AX_INDEX_CHECK) return addressed_positions(in, x, index);
    ax_ctx *cx = in->cx;
    ix_list l = {.n = 0};
    ax_array *r = NULL;
    if (!parse_full(in, x, index, &l)) goto done;
    ax_dtype t = x->size >= INT32_MAX ? AX_I64 : AX_I32;
    int64_t n = x->size;
    ax_params pad = {.ndim = x->ndim};
    ax_scope s;
    ax_scope_begin(&s, cx);
    for (int i = 0, dim = 0; i < l.n; i++) {
        ix_entry *e = &l.e[i];
        if (!takes_dim(e->kind)) continue;
        if (e->kind == IX_INT) { /* a 0-d index array addresses what the int did */
            e->arr = ax_array_scalar_i64(cx, AX_I64, e->i);
            e->kind = IX_ARRAY;
        }
        if (e->kind == IX_ARRAY) {
            ax_array *m = e->arr ? mode_index(&s, e->arr, x->shape[dim], mode, t) : NULL;
            ax_array_release(e->arr);
            e->arr = ax_scope_keep(&s, m);
            if (!e->arr) {
                ax_scope_end(&s);
                goto done;
            }
            pad.hi[dim] = mode == AX_INDEX_FILL;
        }
        dim++;
    }
    ax_array *iota = ax_scope_own(&s, ax_np_iota(cx, t, 1, &n, 0));
    ax_array *pos = ax_scope_own(&s, ax_np_reshape(cx, iota, x->ndim, x->shape));
    ax_array *ext = ax_lax_scalar_like(&s, pos ? pos : x, (double)n);
    if (pos && ext) pos = ax_lax_bind(&s, AX_P_PAD, 2, (ax_array *[]){pos, ext}, &pad);
    r = pos ? index_list(cx, pos, &l) : NULL;
    ax_scope_end(&s);
done:
    ix_free(&l);
    return r;
}

ax_array *ax_np_fill_default(ax_ctx *cx, ax_dtype dtype) {
    switch (dtype) {
    case AX_BOOL:
        return ax_array_scalar_i64(cx, dtype, 1);
    case AX_I32:
        return ax_array_scalar_i64(cx, dtype, INT32_MIN);
    case AX_I64:
        return ax_array_scalar_i64(cx, dtype, INT64_MIN);
    case AX_U32:
        return ax_array_scalar_i64(cx, dtype, UINT32_MAX);
    case AX_U8:
        return ax_array_scalar_i64(cx, dtype, UINT8_MAX);
    default:
        return ax_array_scalar(cx, dtype, NAN);
    }
}

/* The elements of x at flat positions `sel` (any shape), reading fill_value (absent: JAX's
 * default, NaN for floats) at position x->size. */
static ax_array *gather_positions(ax_ctx *cx, ax_array *x, ax_array *sel, ax_index_mode mode,
                                  ax_array *fill_value) {
    ax_scope s;
    ax_scope_begin(&s, cx);
    int64_t n = x->size, shape[AX_MAX_RANK + 1];
    ax_array *flat = ax_lax_reshape(&s, x, 1, &n);
    if (flat && mode == AX_INDEX_FILL) {
        ax_array *f = fill_value ? ax_scope_own(&s, ax_np_astype(cx, fill_value, x->dtype, x->weak))
                                 : ax_scope_own(&s, ax_np_fill_default(cx, x->dtype));
        int64_t one = 1;
        f = ax_lax_reshape(&s, f, 1, &one);
        flat = f ? ax_scope_own(&s, ax_np_concatenate(cx, 2, (ax_array *[]){flat, f}, 0)) : NULL;
    }
    memcpy(shape, sel->shape, (size_t)sel->ndim * sizeof *shape);
    shape[sel->ndim] = 1;
    ax_array *idx = ax_lax_reshape(&s, sel, sel->ndim + 1, shape);
    ax_params p = {.naxes = 1};
    ax_array *r =
        flat && idx ? ax_lax_bind(&s, AX_P_GATHER, 2, (ax_array *[]){flat, idx}, &p) : NULL;
    r = ax_scope_keep(&s, r);
    ax_scope_end(&s);
    return r;
}

ax_array *ax_np_index_mode(ax_interp *in, ax_array *x, ax_value *index, ax_index_mode mode,
                           ax_array *fill_value) {
    if (mode == AX_INDEX_CHECK) return index_array(in, x, index);
    ax_array *sel = mode_positions(in, x, index, mode);
    ax_array *r = sel ? gather_positions(in->cx, x, sel, mode, fill_value) : NULL;
    ax_array_release(sel);
    return r;
}

/* x with the addressed elements combined with `values` by a scatter of the given mode: the
 * flat positions of x[index] index a scatter into the flattened x, which handles every kind of
 * index (and repeated positions) the same way. */
static ax_array *at_scatter(ax_interp *in, ax_array *x, ax_value *index, ax_array *values,
                            ax_scatter_mode mode, ax_index_mode imode) {
    ax_ctx *cx = in->cx;
    ax_scope s;
    ax_scope_begin(&s, cx);
    ax_array *sel = ax_scope_own(&s, mode_positions(in, x, index, imode));
    ax_array *r = NULL;
    if (sel) {
        /* dropped updates go to one extra element past the end, cut off after */
        int64_t n = x->size, ext = n + (imode == AX_INDEX_FILL), idx_shape[AX_MAX_RANK + 1];
        memcpy(idx_shape, sel->shape, (size_t)sel->ndim * sizeof *idx_shape);
        idx_shape[sel->ndim] = 1;
        ax_array *v = ax_scope_own(&s, ax_np_astype(cx, values, x->dtype, x->weak));
        v = ax_scope_own(&s, ax_np_broadcast_to(cx, v, sel->ndim, sel->shape));
        ax_array *idx = ax_lax_reshape(&s, sel, sel->ndim + 1, idx_shape);
        ax_array *flat = ax_lax_reshape(&s, x, 1, &n);
        if (flat && ext > n) {
            ax_params grow = {.ndim = 1};
            grow.hi[0] = 1;
            ax_array *zero = ax_lax_scalar_like(&s, flat, 0);
            flat = ax_lax_bind(&s, AX_P_PAD, 2, (ax_array *[]){flat, zero}, &grow);
        }
        ax_params p = {.naxes = 1, .flag = (int)mode};
        ax_array *out = v && idx && flat
                            ? ax_lax_bind(&s, AX_P_SCATTER, 3, (ax_array *[]){flat, idx, v}, &p)
                            : NULL;
        if (out && ext > n) {
            ax_params cut = {.ndim = 1};
            cut.hi[0] = n;
            cut.step[0] = 1;
            out = ax_lax_bind(&s, AX_P_SLICE, 1, &out, &cut);
        }
        r = ax_scope_keep(&s, ax_lax_reshape(&s, out, x->ndim, x->shape));
    }
    ax_scope_end(&s);
    return r;
}

/* The options every .at[] method takes: mode= (JAX's out-of-bounds modes) and the hints
 * indices_are_sorted= and unique_indices= (accepted; they change nothing here). */
static const char *const update_params[] = {"values", "indices_are_sorted", "unique_indices",
                                            "mode", NULL};

/* Reads the arguments of a method: names[0..nnames), the first npos positionally. */
static bool read_args(ax_interp *in, const ax_args *args, const char *name,
                      const char *const *names, int npos, ax_value **v) {
    if (!ax_args_check(in, args, name, npos, names)) return false;
    for (int i = 0; names[i]; i++) v[i] = ax_arg(args, i < npos ? i : -1, names[i]);
    return true;
}

/* The hints: accepted as JAX takes them (bools), and changing nothing. */
static bool read_hints(ax_interp *in, ax_value *sorted, ax_value *unique) {
    bool b;
    return (!sorted || ax_value_truthy(in, sorted, &b)) &&
           (!unique || ax_value_truthy(in, unique, &b));
}

static bool read_update(ax_interp *in, const ax_args *args, const char *name, ax_value **values,
                        ax_index_mode *imode) {
    ax_value *v[4];
    if (!read_args(in, args, name, update_params, 1, v)) return false;
    if (!(*values = v[0]))
        return ax_error(in->cx, AX_ERR_TYPE, "%s() missing the values argument", name), false;
    return read_hints(in, v[1], v[2]) && ax_np_parse_mode(in, v[3], true, imode);
}

static ax_array *at_update(ax_interp *in, ax_value *self, const ax_args *args, ax_scatter_mode mode,
                           const char *name, ax_array *base) {
    at_state *st = self->builtin->data->obj.payload;
    ax_value *v;
    ax_index_mode imode;
    if (!read_update(in, args, name, &v, &imode)) return NULL;
    ax_array *values = ax_np_asarray(in, v, name);
    ax_array *r =
        values ? at_scatter(in, base ? base : st->x->arr, st->index, values, mode, imode) : NULL;
    ax_array_release(values);
    return r;
}

static ax_value *at_method(ax_interp *in, ax_value *self, const ax_args *args, ax_scatter_mode mode,
                           const char *name) {
    return ax_np_wrap_take(in, at_update(in, self, args, mode, name, NULL));
}

static ax_value *at_set(ax_interp *in, ax_value *self, const ax_args *args) {
    return at_method(in, self, args, AX_SCATTER_SET, "set");
}
static ax_value *at_add(ax_interp *in, ax_value *self, const ax_args *args) {
    return at_method(in, self, args, AX_SCATTER_ADD, "add");
}
static ax_value *at_mul(ax_interp *in, ax_value *self, const ax_args *args) {
    return at_method(in, self, args, AX_SCATTER_MUL, "mul");
}
static ax_value *at_min(ax_interp *in, ax_value *self, const ax_args *args) {
    return at_method(in, self, args, AX_SCATTER_MIN, "min");
}
static ax_value *at_max(ax_interp *in, ax_value *self, const ax_args *args) {
    return at_method(in, self, args, AX_SCATTER_MAX, "max");
}

/* x.at[i].subtract(v): x[i] -= v, as an add of -v. */
static ax_value *at_subtract(ax_interp *in, ax_value *self, const ax_args *args) {
    ax_value *v;
    ax_index_mode imode;
    if (!read_update(in, args, "subtract", &v, &imode)) return NULL;
    at_state *st = self->builtin->data->obj.payload;
    ax_array *values = ax_np_asarray(in, v, "subtract");
    ax_array *neg = values ? ax_np_unop(in->cx, AX_OP_NEG, values) : NULL;
    ax_array *r = neg ? at_scatter(in, st->x->arr, st->index, neg, AX_SCATTER_ADD, imode) : NULL;
    ax_array_release(values);
    ax_array_release(neg);
    return ax_np_wrap_take(in, r);
}

/* divide and power, as JAX computes them: x / ones.at[i].multiply(v) and
 * x ** ones.at[i].multiply(v) (so an int x divides to floats, as x / y does). */
static ax_value *at_divide_or_power(ax_interp *in, ax_value *self, const ax_args *args, ax_binop op,
                                    const char *name) {
    at_state *st = self->builtin->data->obj.payload;
    ax_array *x = st->x->arr;
    ax_array *ones = ax_array_scalar(in->cx, x->dtype, 1.0), *base = NULL;
    if (ones) {
        ones->weak = x->weak;
        base = ax_np_broadcast_to(in->cx, ones, x->ndim, x->shape);
    }
    ax_array *by = base ? at_update(in, self, args, AX_SCATTER_MUL, name, base) : NULL;
    ax_array *r = by ? ax_np_binop(in->cx, op, x, by) : NULL;
    ax_array_release(ones);
    ax_array_release(base);
    ax_array_release(by);
    return ax_np_wrap_take(in, r);
}
static ax_value *at_divide(ax_interp *in, ax_value *self, const ax_args *args) {
    return at_divide_or_power(in, self, args, AX_OP_DIV, "divide");
}
static ax_value *at_power(ax_interp *in, ax_value *self, const ax_args *args) {
    return at_divide_or_power(in, self, args, AX_OP_POW, "power");
}

/* x.at[i].apply(f): f applied to the addressed elements, once per time an element is
 * addressed (repeated indices apply it again, as JAX's scatter_apply). */
static ax_value *at_apply(ax_interp *in, ax_value *self, const ax_args *args) {
    static const char *const names[] = {"func", "indices_are_sorted", "unique_indices", "mode",
                                        NULL};
    ax_value *v[4];
    ax_index_mode imode;
    if (!read_args(in, args, "apply", names, 1, v) || !read_hints(in, v[1], v[2]) ||
        !ax_np_parse_mode(in, v[3], true, &imode))
        return NULL;
    if (!v[0]) return ax_error(in->cx, AX_ERR_TYPE, "apply() missing the function to apply");
    at_state *st = self->builtin->data->obj.payload;
    ax_array *x = st->x->arr;
    /* how many times each element is addressed */
    ax_array *zero = ax_array_scalar(in->cx, AX_I32, 0.0),
             *one = ax_array_scalar(in->cx, AX_I32, 1.0);
    ax_array *zeros = zero ? ax_np_broadcast_to(in->cx, zero, x->ndim, x->shape) : NULL;
    ax_array *counts =
        zeros && one ? at_scatter(in, zeros, st->index, one, AX_SCATTER_ADD, imode) : NULL;
    ax_array_release(zero), ax_array_release(one), ax_array_release(zeros);
    if (!counts) return NULL;
    int64_t times = 1;
    ax_array *c = ax_concrete_value(in->cx, counts);
    if (c && c->buf) {
        times = 0;
        for (int64_t k = 0; k < c->size; k++)
            if (ax_array_get_i64(c, k) > times) times = ax_array_get_i64(c, k);
    }
    ax_value *y = ax_value_retain(st->x);
    for (int64_t k = 0; k < times && y; k++) {
        ax_value *fy = ax_call1(in, v[0], y);
        ax_array *fa = fy ? ax_np_asarray(in, fy, "apply") : NULL;
        ax_array *step = ax_array_scalar(in->cx, AX_I32, (double)k);
        ax_array *more = step ? ax_np_compare(in->cx, AX_CMP_GT, counts, step) : NULL;
        ax_array *next = fa && more ? ax_np_where(in->cx, more, fa, y->arr) : NULL;
        if (fy) ax_value_release(fy);
        ax_array_release(fa), ax_array_release(step), ax_array_release(more);
        ax_value_release(y);
        y = next ? ax_np_wrap_take(in, ax_np_astype(in->cx, next, x->dtype, x->weak)) : NULL;
        ax_array_release(next);
    }
    ax_array_release(counts);
    return y;
}

static ax_value *at_get(ax_interp *in, ax_value *self, const ax_args *args) {
    at_state *st = self->builtin->data->obj.payload;
    static const char *const names[] = {"indices_are_sorted", "unique_indices", "mode",
                                        "fill_value", NULL};
    ax_value *v[4];
    ax_index_mode imode;
    if (!read_args(in, args, "get", names, 0, v) || !read_hints(in, v[0], v[1]) ||
        !ax_np_parse_mode(in, v[2], false, &imode))
        return NULL;
    ax_array *fill = NULL;
    if (v[3] && v[3]->kind != AX_V_NONE) {
        if (imode == AX_INDEX_CHECK) imode = AX_INDEX_FILL; /* a fill value asks for "fill" */
        if (!(fill = ax_np_asarray(in, v[3], "fill_value"))) return NULL;
    }
    if (imode == AX_INDEX_CHECK) return ax_np_getitem(in, st->x, st->index);
    ax_array *r = ax_np_index_mode(in, st->x->arr, st->index, imode, fill);
    ax_array_release(fill);
    return ax_np_wrap_take(in, r);
}

static const struct {
    const char *name, *doc;
    ax_builtin_fn fn;
} at_methods[] = {
    {"set", "x.at[i].set(v, mode=None): a copy of x with x[i] replaced by v", at_set},
    {"add", "x.at[i].add(v, mode=None): a copy of x with v added at x[i] (repeats accumulate)",
     at_add},
    {"subtract", "x.at[i].subtract(v, mode=None): a copy of x with v subtracted at x[i]",
     at_subtract},
    {"mul", "x.at[i].mul(v, mode=None): a copy of x with x[i] multiplied by v", at_mul},
    {"multiply", "x.at[i].multiply(v, mode=None): a copy of x with x[i] multiplied by v", at_mul},
    {"divide", "x.at[i].divide(v, mode=None): a copy of x with x[i] divided by v", at_divide},
    {"power", "x.at[i].power(v, mode=None): a copy of x with x[i] raised to the power v", at_power},
    {"min", "x.at[i].min(v, mode=None): a copy of x with x[i] replaced by minimum(x[i], v)",
     at_min},
    {"max", "x.at[i].max(v, mode=None): a copy of x with x[i] replaced by maximum(x[i], v)",
     at_max},
    {"apply", "x.at[i].apply(f, mode=None): a copy of x with f applied at x[i]", at_apply},
    {"get", "x.at[i].get(mode=None, fill_value=None): x[i], with JAX's out-of-bounds modes",
     at_get},
};

static ax_value *at_getattr(ax_interp *in, ax_value *self, const char *name) {
    at_state *st = self->obj.payload;
    if (!st->index) return NULL;
    for (size_t i = 0; i < sizeof at_methods / sizeof *at_methods; i++)
        if (!strcmp(name, at_methods[i].name))
            return ax_value_or_oom(in, ax_value_builtin(at_methods[i].name, at_methods[i].doc,
                                                        at_methods[i].fn, ax_value_retain(self)));
    return NULL;
}

static const ax_object_type at_type = {
    .name = "at",
    .free = at_free,
    .format = at_format,
    .getattr = at_getattr,
    .getitem = at_getitem,
};

static ax_value *at_value(ax_interp *in, ax_value *x, ax_value *index) {
    at_state *st = calloc(1, sizeof *st);
    if (!st) return ax_error_oom(in->cx);
    st->x = ax_value_retain(x);
    st->index = index ? ax_value_retain(index) : NULL;
    return ax_value_or_oom(in, ax_value_object(&at_type, st)); /* frees st on failure */
}

ax_value *ax_np_at(ax_interp *in, ax_value *x) {
    return at_value(in, x, NULL);
}

/* Shape builtins: reshape, transpose, concatenate, stack, split, tile, repeat, roll, pad, ... */
#include "builtins_lib.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* The first argument `a` as an array, with the rest of the signature parsed into v. */
static ax_array *first_array(ax_interp *in, ax_value *self, const ax_args *args,
                             const char *const *names, int maxpos, ax_value **v) {
    const char *f = self->builtin->name;
    if (!ax_bi_parse(in, args, f, names, maxpos, v) || !ax_bi_required(in, v[0], f, names[0]))
        return NULL;
    return ax_np_asarray(in, v[0], f);
}

static ax_value *done_take(ax_interp *in, ax_array *x, ax_array *r) {
    ax_array_release(x);
    return ax_np_wrap_take(in, r);
}

static ax_value *bi_reshape(ax_interp *in, ax_value *self, const ax_args *args) {
    static const char *const names[] = {"a", "shape", "order", "newshape", NULL};
    ax_value *v[4];
    ax_array *x = first_array(in, self, args, names, 3, v);
    ax_value *sv = v[1] ? v[1] : v[3];
    int ndim;
    int64_t shape[AX_MAX_RANK];
    if (!x) return NULL;
    if (!ax_bi_required(in, sv, "reshape", "shape") || !ax_bi_shape(in, sv, "shape", &ndim, shape))
        return done_take(in, x, NULL);
    return done_take(in, x, ax_np_reshape(in->cx, x, ndim, shape));
}

static ax_value *bi_ravel(ax_interp *in, ax_value *self, const ax_args *args) {
    static const char *const names[] = {"a", "order", NULL};
    ax_value *v[2];
    ax_array *x = first_array(in, self, args, names, 2, v);
    return x ? done_take(in, x, ax_np_ravel(in->cx, x)) : NULL;
}

/* A permutation argument (tuple of possibly negative axes) for an array of rank ndim. */
static bool permutation(ax_interp *in, ax_value *v, int ndim, int *perm) {
    if (v->kind == AX_V_RANGE) { /* read as the tuple of its ints */
        ax_value *t = ax_range_tuple(in, v, 1024);
        bool ok = t && permutation(in, t, ndim, perm);
        ax_value_release(t);
        return ok;
    }
    if (v->kind != AX_V_TUPLE && v->kind != AX_V_LIST) {
        ax_error(in->cx, AX_ERR_TYPE, "axes must be a tuple of ints");
        return false;
    }
    if (v->n != ndim) {
        ax_error(in->cx, AX_ERR_VALUE, "axes don't match array: %d axes for an array of rank %d",
                 v->n, ndim);
        return false;
    }
    for (int i = 0; i < ndim; i++) {
        int64_t a;
        if (!ax_bi_int(in, v->items[i], "axis", 0, &a) || !ax_np_axis(in->cx, a, ndim, &perm[i]))
            return false;
    }
    return true;
}

static ax_value *bi_transpose(ax_interp *in, ax_value *self, const ax_args *args) {
    static const char *const names[] = {"a", "axes", NULL};
    ax_value *v[2];
    ax_array *x = first_array(in, self, args, names, 2, v);
    int perm[AX_MAX_RANK];
    if (!x) return NULL;
    if (v[1] && v[1]->kind != AX_V_NONE) {
        if (!permutation(in, v[1], x->ndim, perm)) return done_take(in, x, NULL);
        return done_take(in, x, ax_np_transpose(in->cx, x, perm));
    }
    return done_take(in, x, ax_np_transpose(in->cx, x, NULL));
}

static ax_value *bi_swapaxes(ax_interp *in, ax_value *self, const ax_args *args) {
    static const char *const names[] = {"a", "axis1", "axis2", NULL};
    ax_value *v[3];
    ax_array *x = first_array(in, self, args, names, 3, v);
    int a, b, perm[AX_MAX_RANK];
    if (!x) return NULL;
    if (!ax_bi_axis(in, v[1], x->ndim, AX_BI_NO_AXIS, false, &a) ||
        !ax_bi_axis(in, v[2], x->ndim, AX_BI_NO_AXIS, false, &b))
        return done_take(in, x, NULL);
    for (int i = 0; i < x->ndim; i++) perm[i] = i == a ? b : i == b ? a : i;
    return done_take(in, x, ax_np_transpose(in->cx, x, perm));
}

/* One or several axes (an int or a tuple), normalised, in the given order. */
static bool axis_list(ax_interp *in, ax_value *v, int ndim, int *n, int *axes) {
    if (v->kind == AX_V_RANGE) { /* read as the tuple of its ints */
        ax_value *t = ax_range_tuple(in, v, 1024);
        bool ok = t && axis_list(in, t, ndim, n, axes);
        ax_value_release(t);
        return ok;
    }
    bool seq = v->kind == AX_V_TUPLE || v->kind == AX_V_LIST;
    *n = seq ? v->n : 1;
    if (*n > ndim) {
        ax_error(in->cx, AX_ERR_VALUE, "%d axes given for an array of rank %d", *n, ndim);
        return false;
    }
    for (int i = 0; i < *n; i++) {
        int64_t a;
        if (!ax_bi_int(in, seq ? v->items[i] : v, "axis", 0, &a) ||
            !ax_np_axis(in->cx, a, ndim, &axes[i]))
            return false;
    }
    return true;
}

static ax_value *bi_moveaxis(ax_interp *in, ax_value *self, const ax_args *args) {
    static const char *const names[] = {"a", "source", "destination", NULL};
    ax_value *v[3];
    ax_array *x = first_array(in, self, args, names, 3, v);
    int ns, nd, src[AX_MAX_RANK], dst[AX_MAX_RANK], perm[AX_MAX_RANK];
    if (!x) return NULL;
    if (!ax_bi_required(in, v[1], "moveaxis", "source") ||
        !ax_bi_required(in, v[2], "moveaxis", "destination") ||
        !axis_list(in, v[1], x->ndim, &ns, src) || !axis_list(in, v[2], x->ndim, &nd, dst))
        return done_take(in, x, NULL);
    if (ns != nd) {
        ax_error(in->cx, AX_ERR_VALUE, "source and destination must have the same length");
        return done_take(in, x, NULL);
    }
    /* The axes not moved keep their order in the free slots. */
    bool moved[AX_MAX_RANK] = {false}, taken[AX_MAX_RANK] = {false};
    for (int i = 0; i < ns; i++) {
        moved[src[i]] = true;
        taken[dst[i]] = true;
        perm[dst[i]] = src[i];
    }
    for (int i = 0, slot = 0; i < x->ndim; i++) {
        if (moved[i]) continue;
        while (taken[slot]) slot++;
        perm[slot++] = i;
    }
    return done_take(in, x, ax_np_transpose(in->cx, x, perm));
}

static ax_value *bi_squeeze(ax_interp *in, ax_value *self, const ax_args *args) {
    static const char *const names[] = {"a", "axis", NULL};
    ax_value *v[2];
    ax_array *x = first_array(in, self, args, names, 2, v);
    int n, axes[AX_MAX_RANK];
    if (!x) return NULL;
    if (!v[1] || v[1]->kind == AX_V_NONE)
        return done_take(in, x, ax_np_squeeze(in->cx, x, -1, NULL));
    if (!axis_list(in, v[1], x->ndim, &n, axes)) return done_take(in, x, NULL);
    return done_take(in, x, ax_np_squeeze(in->cx, x, n, axes));
}

static ax_value *bi_expand_dims(ax_interp *in, ax_value *self, const ax_args *args) {
    static const char *const names[] = {"a", "axis", NULL};
    ax_value *v[2];
    ax_array *x = first_array(in, self, args, names, 2, v);
    if (!x) return NULL;
    if (!ax_bi_required(in, v[1], "expand_dims", "axis")) return done_take(in, x, NULL);
    bool seq = v[1]->kind == AX_V_TUPLE || v[1]->kind == AX_V_LIST;
    int n = seq ? v[1]->n : 1;
    int64_t axes[AX_MAX_RANK];
    if (!ax_rank_check(in->cx, "expand_dims", x->ndim + n)) return done_take(in, x, NULL);
    for (int i = 0; i < n; i++)
        if (!ax_bi_int(in, seq ? v[1]->items[i] : v[1], "axis", 0, &axes[i]))
            return done_take(in, x, NULL);
    return done_take(in, x, ax_np_expand_dims(in->cx, x, n, axes));
}

static ax_value *bi_flip(ax_interp *in, ax_value *self, const ax_args *args) {
    static const char *const names[] = {"m", "axis", NULL};
    ax_value *v[2];
    ax_array *x = first_array(in, self, args, names, 2, v);
    int n, axes[AX_MAX_RANK];
    if (!x) return NULL;
    if (!v[1] || v[1]->kind == AX_V_NONE) return done_take(in, x, ax_np_flip(in->cx, x, -1, NULL));
    if (!axis_list(in, v[1], x->ndim, &n, axes)) return done_take(in, x, NULL);
    return done_take(in, x, ax_np_flip(in->cx, x, n, axes));
}

static ax_value *flip_axis(ax_interp *in, ax_value *self, const ax_args *args, int axis) {
    static const char *const names[] = {"m", NULL};
    ax_value *v[1];
    ax_array *x = first_array(in, self, args, names, 1, v);
    if (!x) return NULL;
    if (x->ndim <= axis)
        return done_take(in, x,
                         ax_error(in->cx, AX_ERR_VALUE, "%s needs an array of rank >= %d",
                                  self->builtin->name, axis + 1));
    return done_take(in, x, ax_np_flip(in->cx, x, 1, &axis));
}

static ax_value *bi_fliplr(ax_interp *in, ax_value *self, const ax_args *args) {
    return flip_axis(in, self, args, 1);
}
static ax_value *bi_flipud(ax_interp *in, ax_value *self, const ax_args *args) {
    return flip_axis(in, self, args, 0);
}

/* ---------------------------------------------------------------- joining */

/* concatenate(arrays, axis=0); axis=None joins the flattened arrays. */
static ax_value *bi_concatenate(ax_interp *in, ax_value *self, const ax_args *args) {
    static const char *const names[] = {"arrays", "axis", NULL};
    ax_value *v[2];
    const char *f = self->builtin->name;
    int n;
    ax_array **xs = NULL;
    int64_t axis;
    if (!ax_bi_parse(in, args, f, names, 2, v) || !ax_bi_required(in, v[0], f, "arrays") ||
        !ax_bi_arrays(in, v[0], f, &n, &xs))
        return NULL;
    ax_array *r = NULL;
    if (v[1] && v[1]->kind == AX_V_NONE) {
        bool ok = true;
        for (int i = 0; i < n && ok; i++) {
            ax_array *flat = ax_np_ravel(in->cx, xs[i]);
            ax_array_release(xs[i]);
            ok = (xs[i] = flat) != NULL;
        }
        if (ok) r = ax_np_concatenate(in->cx, n, xs, 0);
    } else if (ax_bi_int(in, v[1], "axis", 0, &axis)) {
        r = ax_np_concatenate(in->cx, n, xs, axis);
    }
    ax_bi_free_arrays(n, xs);
    return ax_np_wrap_take(in, r);
}

static ax_value *bi_stack(ax_interp *in, ax_value *self, const ax_args *args) {
    static const char *const names[] = {"arrays", "axis", NULL};
    ax_value *v[2];
    const char *f = self->builtin->name;
    int n;
    ax_array **xs = NULL;
    int64_t axis;
    if (!ax_bi_parse(in, args, f, names, 2, v) || !ax_bi_required(in, v[0], f, "arrays") ||
        !ax_bi_int(in, v[1], "axis", 0, &axis) || !ax_bi_arrays(in, v[0], f, &n, &xs))
        return NULL;
    ax_array *r = ax_np_stack(in->cx, n, xs, axis);
    ax_bi_free_arrays(n, xs);
    return ax_np_wrap_take(in, r);
}

/* x with leading (at_least 2: leading and trailing as NumPy) size-1 axes up to rank `rank`. */
static ax_array *at_least(ax_ctx *cx, ax_array *x, int rank) {
    if (!x || x->ndim >= rank) return ax_array_retain(x);
    int64_t shape[AX_MAX_RANK];
    int n = 0;
    if (x->ndim == 0) {
        for (; n < rank; n++) shape[n] = 1;
    } else if (x->ndim == 1) {
        shape[n++] = 1;
        shape[n++] = x->shape[0];
        if (rank == 3) shape[n++] = 1;
    } else { /* rank 2 -> 3 */
        shape[n++] = x->shape[0];
        shape[n++] = x->shape[1];
        shape[n++] = 1;
    }
    return ax_np_reshape(cx, x, n, shape);
}

/* vstack / hstack / dstack / column_stack. */
static ax_value *joined(ax_interp *in, ax_value *self, const ax_args *args, int rank, int axis) {
    static const char *const names[] = {"tup", NULL};
    ax_value *v[1];
    const char *f = self->builtin->name;
    int n;
    ax_array **xs = NULL;
    if (!ax_bi_parse(in, args, f, names, 1, v) || !ax_bi_required(in, v[0], f, "tup") ||
        !ax_bi_arrays(in, v[0], f, &n, &xs))
        return NULL;
    bool ok = true;
    for (int i = 0; i < n && ok; i++) {
        ax_array *t = rank == 0 && xs[i]->ndim < 2 /* column_stack: 1-D become columns */
                          ? ax_np_reshape(in->cx, xs[i], 2, (int64_t[]){xs[i]->size, 1})
                          : at_least(in->cx, xs[i], rank ? rank : 2);
        ax_array_release(xs[i]);
        ok = (xs[i] = t) != NULL;
    }
    if (ok && rank == 1 && n > 0 && xs[0]->ndim == 1) axis = 0; /* hstack of vectors */
    ax_array *r = ok ? ax_np_concatenate(in->cx, n, xs, axis) : NULL;
    ax_bi_free_arrays(n, xs);
    return ax_np_wrap_take(in, r);
}

static ax_value *bi_vstack(ax_interp *in, ax_value *self, const ax_args *args) {
    return joined(in, self, args, 2, 0);
}
static ax_value *bi_hstack(ax_interp *in, ax_value *self, const ax_args *args) {
    return joined(in, self, args, 1, 1);
}
static ax_value *bi_dstack(ax_interp *in, ax_value *self, const ax_args *args) {
    return joined(in, self, args, 3, 2);
}
static ax_value *bi_column_stack(ax_interp *in, ax_value *self, const ax_args *args) {
    return joined(in, self, args, 0, 1);
}

static ax_value *at_least_fn(ax_interp *in, ax_value *self, const ax_args *args, int rank) {
    if (!ax_bi_keywords(in, args, self->builtin->name, (const char *const[]){NULL})) return NULL;
    ax_value **outs = calloc((size_t)(args->n ? args->n : 1), sizeof *outs);
    if (!outs) return ax_error_oom(in->cx);
    int i = 0;
    for (; i < args->n; i++) {
        ax_array *x = ax_np_asarray(in, args->pos[i], self->builtin->name);
        outs[i] = ax_np_wrap_take(in, at_least(in->cx, x, rank));
        ax_array_release(x);
        if (!outs[i]) break;
    }
    ax_value *r = NULL;
    if (i == args->n && args->n == 1)
        r = outs[0];
    else if (i == args->n)
        r = ax_value_list(i, outs);
    else
        for (int j = 0; j < i; j++) ax_value_release(outs[j]);
    free(outs);
    return r;
}

static ax_value *bi_atleast_1d(ax_interp *in, ax_value *self, const ax_args *args) {
    return at_least_fn(in, self, args, 1);
}
static ax_value *bi_atleast_2d(ax_interp *in, ax_value *self, const ax_args *args) {
    return at_least_fn(in, self, args, 2);
}
static ax_value *bi_atleast_3d(ax_interp *in, ax_value *self, const ax_args *args) {
    return at_least_fn(in, self, args, 3);
}

/* ---------------------------------------------------------------- splitting */

/* x[lo:hi] along `axis`. */
static ax_array *slice_axis(ax_ctx *cx, ax_array *x, int axis, int64_t lo, int64_t hi) {
    ax_params p = {.ndim = x->ndim};
    for (int d = 0; d < x->ndim; d++) {
        p.lo[d] = d == axis ? lo : 0;
        p.hi[d] = d == axis ? hi : x->shape[d];
        p.step[d] = 1;
    }
    if (lo == 0 && hi == x->shape[axis]) return ax_array_retain(x);
    return ax_bind1(cx, AX_P_SLICE, 1, &x, &p);
}

/* The end of each piece of a split of n elements (pieces may be empty), from sections (an int)
 * or a list of indices: *pts (malloc'd) gets *count of them. */
static bool split_points(ax_interp *in, ax_value *v, int64_t n, bool even, int64_t **pts,
                         int *count) {
    *pts = NULL;
    bool listed = v->kind == AX_V_LIST || v->kind == AX_V_TUPLE ||
                  (v->kind == AX_V_ARRAY && v->arr->ndim == 1);
    int64_t sections = 0, npts;
    if (listed) {
        npts = (v->kind == AX_V_ARRAY ? v->arr->size : v->n) + 1;
    } else {
        if (!ax_bi_int(in, v, "sections", 0, &sections)) return false;
        if (sections <= 0) {
            ax_error(in->cx, AX_ERR_VALUE, "number of sections must be larger than 0, not %lld",
                     (long long)sections);
            return false;
        }
        if (even && n % sections) {
            ax_error(in->cx, AX_ERR_VALUE, "array split does not result in an equal division");
            return false;
        }
        npts = sections;
    }
    /* each piece is a value in a list: a list holds at most INT_MAX of them */
    if (npts > INT_MAX || !(*pts = malloc((size_t)npts * sizeof **pts))) {
        if (npts > INT_MAX)
            ax_error(in->cx, AX_ERR_VALUE, "split into %lld pieces: a list holds at most %d",
                     (long long)npts, INT_MAX);
        else
            ax_error_oom(in->cx);
        return false;
    }
    *count = (int)npts;
    if (!listed) {
        int64_t base = n / sections, extra = n % sections, at = 0;
        for (int64_t i = 0; i < sections; i++) (*pts)[i] = at += base + (i < extra);
        return true;
    }
    for (int i = 0; i + 1 < *count; i++) {
        int64_t p;
        if (v->kind == AX_V_ARRAY) {
            p = ax_array_get_i64(v->arr, i);
        } else if (!ax_bi_int(in, v->items[i], "split index", 0, &p)) {
            free(*pts);
            *pts = NULL;
            return false;
        }
        if (p < 0) p = p < -n ? 0 : p + n;
        (*pts)[i] = p > n ? n : p;
    }
    (*pts)[*count - 1] = n;
    return true;
}

static ax_value *split(ax_interp *in, ax_value *self, const ax_args *args, bool even) {
    static const char *const names[] = {"ary", "indices_or_sections", "axis", NULL};
    ax_value *v[3];
    ax_array *x = first_array(in, self, args, names, 3, v);
    int axis, n = 0, i = 0;
    int64_t *pts = NULL;
    ax_value **outs = NULL;
    if (!x) return NULL;
    bool ok = ax_bi_required(in, v[1], "split", "indices_or_sections") &&
              ax_bi_axis(in, v[2], x->ndim, 0, false, &axis) &&
              split_points(in, v[1], x->shape[axis], even, &pts, &n);
    if (ok && !(outs = calloc((size_t)n, sizeof *outs))) ok = ax_error_oom(in->cx) != NULL;
    for (int64_t lo = 0; ok && i < n; lo = pts[i], i++) {
        int64_t hi = pts[i] < lo ? lo : pts[i];
        outs[i] = ax_np_wrap_take(in, slice_axis(in->cx, x, axis, lo, hi));
        if (!outs[i]) break;
    }
    ax_value *r = ok && i == n ? ax_value_list(n, outs) : NULL;
    if (!r && outs)
        for (int j = 0; j < i; j++) ax_value_release(outs[j]);
    free(pts);
    free(outs);
    ax_array_release(x);
    return r;
}

static ax_value *bi_split(ax_interp *in, ax_value *self, const ax_args *args) {
    return split(in, self, args, true);
}
static ax_value *bi_array_split(ax_interp *in, ax_value *self, const ax_args *args) {
    return split(in, self, args, false);
}

/* ---------------------------------------------------------------- tile, repeat, roll */

/* x repeated r times along axis (r * n elements there): (..., n, ...) -> (..., 1, n, ...) ->
 * broadcast (..., r, n, ...) -> (..., r * n, ...); an axis of size 1 just broadcasts. */
static ax_array *tile_axis(ax_ctx *cx, ax_array *x, int axis, int64_t r) {
    int64_t n = x->shape[axis], wide[AX_MAX_RANK], out[AX_MAX_RANK];
    if (r == 1) return ax_array_retain(x);
    memcpy(out, x->shape, (size_t)x->ndim * sizeof *out);
    if (!ax_mul_i64(n, r, &out[axis])) {
        char t[200];
        ax_array_type_format(t, sizeof t, x);
        return ax_error(cx, AX_ERR_VALUE,
                        "tile: %lld repetitions of axis %d of %s make more than 2**63 elements",
                        (long long)r, axis, t);
    }
    if (n == 1) return ax_np_broadcast_to(cx, x, x->ndim, out);
    int64_t ax = axis;
    ax_array *e = ax_np_expand_dims(cx, x, 1, &ax);
    if (!e) return NULL;
    memcpy(wide, e->shape, (size_t)e->ndim * sizeof *wide);
    wide[axis] = r;
    ax_array *b = ax_np_broadcast_to(cx, e, e->ndim, wide);
    ax_array *t = ax_np_reshape(cx, b, x->ndim, out);
    ax_array_release(e);
    ax_array_release(b);
    return t;
}

static ax_value *bi_tile(ax_interp *in, ax_value *self, const ax_args *args) {
    static const char *const names[] = {"A", "reps", NULL};
    ax_value *v[2];
    ax_array *x = first_array(in, self, args, names, 2, v);
    int nr;
    int64_t reps[AX_MAX_RANK];
    if (!x) return NULL;
    if (!ax_bi_required(in, v[1], "tile", "reps") || !ax_bi_shape(in, v[1], "reps", &nr, reps))
        return done_take(in, x, NULL);
    for (int i = 0; i < nr; i++)
        if (reps[i] < 0)
            return done_take(in, x,
                             ax_error(in->cx, AX_ERR_VALUE, "tile: reps must be >= 0, got %lld",
                                      (long long)reps[i]));
    /* x with leading 1s up to the rank of the result, then one axis at a time */
    int d = nr > x->ndim ? nr : x->ndim;
    int64_t shape[AX_MAX_RANK];
    for (int i = 0; i < d; i++) shape[i] = i < d - x->ndim ? 1 : x->shape[i - (d - x->ndim)];
    ax_array *r = ax_np_reshape(in->cx, x, d, shape);
    for (int i = d - nr; i < d && r; i++) {
        ax_array *t = tile_axis(in->cx, r, i, reps[i - (d - nr)]);
        ax_array_release(r);
        r = t;
    }
    return done_take(in, x, r);
}

static ax_value *bi_repeat(ax_interp *in, ax_value *self, const ax_args *args) {
    static const char *const names[] = {"a", "repeats", "axis", NULL};
    ax_value *v[3];
    ax_array *x = first_array(in, self, args, names, 3, v);
    int64_t reps;
    int axis;
    if (!x) return NULL;
    if (!ax_bi_required(in, v[1], "repeat", "repeats") ||
        !ax_bi_int(in, v[1], "repeats (an integer)", 0, &reps) ||
        !ax_bi_axis(in, v[2], x->ndim ? x->ndim : 1, AX_BI_NO_AXIS, true, &axis))
        return done_take(in, x, NULL);
    if (reps < 0)
        return done_take(in, x, ax_error(in->cx, AX_ERR_VALUE, "repeats may not be negative"));
    ax_array *y = axis < 0 ? ax_np_ravel(in->cx, x) : ax_array_retain(x);
    if (axis < 0) axis = 0;
    if (!y) return done_take(in, x, NULL);
    /* (..., n, ...) -> (..., n, 1, ...) -> (..., n, reps, ...) -> (..., n * reps, ...) */
    int64_t wide[AX_MAX_RANK + 1], out[AX_MAX_RANK], ax1 = axis + 1;
    int nd = y->ndim;
    for (int i = 0, j = 0; i < nd; i++) {
        wide[j++] = y->shape[i];
        if (i == axis) wide[j++] = reps;
        out[i] = y->shape[i];
    }
    if (!ax_mul_i64(y->shape[axis], reps, &out[axis])) {
        ax_error(in->cx, AX_ERR_VALUE,
                 "repeat: %lld repeats of %lld elements make more than 2**63 elements",
                 (long long)reps, (long long)y->shape[axis]);
        ax_array_release(y);
        return done_take(in, x, NULL);
    }
    ax_array *e = ax_np_expand_dims(in->cx, y, 1, &ax1);
    ax_array *b = ax_np_broadcast_to(in->cx, e, nd + 1, wide);
    ax_array *r = ax_np_reshape(in->cx, b, nd, out);
    ax_array_release(y);
    ax_array_release(e);
    ax_array_release(b);
    return done_take(in, x, r);
}

/* x rolled by `shift` along axis: concatenate(x[n - s:], x[:n - s]). */
static ax_array *roll_axis(ax_ctx *cx, ax_array *x, int64_t shift, int axis) {
    int64_t n = x->shape[axis];
    if (n == 0) return ax_array_retain(x);
    int64_t s = ((shift % n) + n) % n;
    if (s == 0) return ax_array_retain(x);
    ax_array *tail = slice_axis(cx, x, axis, n - s, n);
    ax_array *head = tail ? slice_axis(cx, x, axis, 0, n - s) : NULL;
    ax_array *r = head ? ax_np_concatenate(cx, 2, (ax_array *[]){tail, head}, axis) : NULL;
    ax_array_release(tail);
    ax_array_release(head);
    return r;
}

static ax_value *bi_roll(ax_interp *in, ax_value *self, const ax_args *args) {
    static const char *const names[] = {"a", "shift", "axis", NULL};
    ax_value *v[3];
    ax_array *x = first_array(in, self, args, names, 3, v);
    int64_t shifts[AX_MAX_RANK];
    int ns, na, axes[AX_MAX_RANK];
    if (!x) return NULL;
    if (!ax_bi_required(in, v[1], "roll", "shift") || !ax_bi_shape(in, v[1], "shift", &ns, shifts))
        return done_take(in, x, NULL);
    if (!v[2] || v[2]->kind == AX_V_NONE) {
        ax_array *flat = ax_np_ravel(in->cx, x);
        ax_array *rolled = flat && ns == 1 ? roll_axis(in->cx, flat, shifts[0], 0) : NULL;
        if (flat && ns != 1) ax_error(in->cx, AX_ERR_VALUE, "roll: one shift without an axis");
        ax_array *r = ax_np_reshape(in->cx, rolled, x->ndim, x->shape);
        ax_array_release(flat);
        ax_array_release(rolled);
        return done_take(in, x, r);
    }
    if (!axis_list(in, v[2], x->ndim, &na, axes)) return done_take(in, x, NULL);
    if (ns != na)
        return done_take(
            in, x,
            ax_error(in->cx, AX_ERR_VALUE, "roll: shift and axis must have the same length"));
    ax_array *r = ax_array_retain(x);
    for (int i = 0; i < na && r; i++) {
        ax_array *t = roll_axis(in->cx, r, shifts[i], axes[i]);
        ax_array_release(r);
        r = t;
    }
    return done_take(in, x, r);
}

/* ---------------------------------------------------------------- broadcasting, pad, astype */

static ax_value *bi_broadcast_to(ax_interp *in, ax_value *self, const ax_args *args) {
    static const char *const names[] = {"array", "shape", NULL};
    ax_value *v[2];
    ax_array *x = first_array(in, self, args, names, 2, v);
    int ndim;
    int64_t shape[AX_MAX_RANK];
    if (!x) return NULL;
    if (!ax_bi_required(in, v[1], "broadcast_to", "shape") ||
        !ax_bi_shape(in, v[1], "shape", &ndim, shape))
        return done_take(in, x, NULL);
    return done_take(in, x, ax_np_broadcast_to(in->cx, x, ndim, shape));
}

static ax_value *bi_broadcast_arrays(ax_interp *in, ax_value *self, const ax_args *args) {
    if (!ax_bi_keywords(in, args, self->builtin->name, (const char *const[]){NULL})) return NULL;
    int n = args->n, nd = 0;
    int64_t shape[AX_MAX_RANK];
    ax_array **xs = calloc((size_t)(n ? n : 1), sizeof *xs);
    ax_value **outs = calloc((size_t)(n ? n : 1), sizeof *outs);
    bool ok = xs && outs;
    if (!ok) ax_error_oom(in->cx);
    for (int i = 0; i < n && ok; i++) {
        ok = (xs[i] = ax_np_asarray(in, args->pos[i], "broadcast_arrays")) != NULL;
        if (ok && !(ok = ax_np_broadcast_shapes(nd, shape, xs[i]->ndim, xs[i]->shape, &nd, shape)))
            ax_error(in->cx, AX_ERR_SHAPE, "broadcast_arrays: shapes do not broadcast");
    }
    for (int i = 0; i < n && ok; i++)
        ok = (outs[i] = ax_np_wrap_take(in, ax_np_broadcast_to(in->cx, xs[i], nd, shape))) != NULL;
    ax_value *r = ok ? ax_value_list(n, outs) : NULL;
    for (int i = 0; i < n; i++) {
        if (xs) ax_array_release(xs[i]);
        if (!ok && outs && outs[i]) ax_value_release(outs[i]);
    }
    free(xs);
    free(outs);
    return r;
}

/* pad_width: an int, (before, after), or one (before, after) per dimension. */
static bool pad_widths(ax_interp *in, ax_value *v, int ndim, int64_t *lo, int64_t *hi) {
    bool seq = v->kind == AX_V_TUPLE || v->kind == AX_V_LIST;
    bool nested =
        seq && v->n > 0 && (v->items[0]->kind == AX_V_TUPLE || v->items[0]->kind == AX_V_LIST);
    if (nested && v->n != 1 && v->n != ndim) {
        ax_error(in->cx, AX_ERR_VALUE, "pad_width has %d entries for an array of rank %d", v->n,
                 ndim);
        return false;
    }
    for (int d = 0; d < ndim; d++) {
        ax_value *w = nested ? v->items[v->n == 1 ? 0 : d] : v;
        bool pair = w->kind == AX_V_TUPLE || w->kind == AX_V_LIST;
        if (pair && w->n != 2 && w->n != 1) {
            ax_error(in->cx, AX_ERR_VALUE, "pad_width entries are (before, after) pairs");
            return false;
        }
        if (!ax_bi_int(in, pair ? w->items[0] : w, "pad width", 0, &lo[d]) ||
            !ax_bi_int(in, pair ? w->items[w->n - 1] : w, "pad width", 0, &hi[d]))
            return false;
        if (lo[d] < 0 || hi[d] < 0) {
            ax_error(in->cx, AX_ERR_VALUE, "pad widths must be non-negative");
            return false;
        }
    }
    return true;
}

static ax_value *bi_pad(ax_interp *in, ax_value *self, const ax_args *args) {
    static const char *const names[] = {"array", "pad_width", "mode", "constant_values", NULL};
    ax_value *v[4];
    ax_array *x = first_array(in, self, args, names, 3, v);
    ax_params p = {0};
    if (!x) return NULL;
    const char *mode = v[2] ? ax_bi_str(in, v[2], "mode") : "constant";
    if (!mode || !ax_bi_required(in, v[1], "pad", "pad_width") ||
        !pad_widths(in, v[1], x->ndim, p.lo, p.hi))
        return done_take(in, x, NULL);
    if (strcmp(mode, "constant"))
        return done_take(in, x,
                         ax_error(in->cx, AX_ERR_VALUE,
                                  "pad: only mode='constant' is supported, not '%s'", mode));
    p.ndim = x->ndim;
    ax_array *c = v[3] ? ax_np_asarray(in, v[3], "pad") : ax_np_scalar(in->cx, x->dtype, 0);
    ax_array *cv = c && c->ndim == 0 ? ax_np_astype(in->cx, c, x->dtype, false) : NULL;
    if (c && c->ndim) ax_error(in->cx, AX_ERR_VALUE, "pad: constant_values must be a scalar");
    ax_array *r = cv ? ax_bind1(in->cx, AX_P_PAD, 2, (ax_array *[]){x, cv}, &p) : NULL;
    ax_array_release(c);
    ax_array_release(cv);
    return done_take(in, x, r);
}

static ax_value *bi_astype(ax_interp *in, ax_value *self, const ax_args *args) {
    static const char *const names[] = {"x", "dtype", NULL};
    ax_value *v[2];
    ax_array *x = first_array(in, self, args, names, 2, v);
    int dtype;
    if (!x) return NULL;
    if (!ax_bi_required(in, v[1], "astype", "dtype") || !ax_bi_dtype(in, v[1], &dtype))
        return done_take(in, x, NULL);
    return done_take(in, x, ax_np_astype(in->cx, x, (ax_dtype)dtype, false));
}

/* shape(a), ndim(a), size(a) */
static ax_value *bi_shape(ax_interp *in, ax_value *self, const ax_args *args) {
    static const char *const names[] = {"a", NULL};
    ax_value *v[1];
    ax_array *x = first_array(in, self, args, names, 1, v);
    if (!x) return NULL;
    ax_value *r = ax_np_shape_value(in, x);
    ax_array_release(x);
    return r;
}

static ax_value *bi_ndim(ax_interp *in, ax_value *self, const ax_args *args) {
    static const char *const names[] = {"a", NULL};
    ax_value *v[1];
    ax_array *x = first_array(in, self, args, names, 1, v);
    if (!x) return NULL;
    ax_value *r = ax_bi_int_value(in, x->ndim);
    ax_array_release(x);
    return r;
}

static ax_value *bi_size(ax_interp *in, ax_value *self, const ax_args *args) {
    static const char *const names[] = {"a", "axis", NULL};
    ax_value *v[2];
    ax_array *x = first_array(in, self, args, names, 2, v);
    int axis;
    if (!x) return NULL;
    ax_value *r = NULL;
    if (ax_bi_axis(in, v[1], x->ndim, AX_BI_NO_AXIS, true, &axis))
        r = ax_bi_int_value(in, axis < 0 ? x->size : x->shape[axis]);
    ax_array_release(x);
    return r;
}

#define NP AX_BI_NP

const ax_builtin_def ax_builtins_shape[] = {
    {"reshape", bi_reshape, "reshape(a, shape): a with a new shape (one entry may be -1)", NP},
    {"ravel", bi_ravel, "ravel(a): a flattened to one dimension", NP},
    {"transpose", bi_transpose, "transpose(a, axes=None): a with its axes permuted (reversed)", NP},
    {"permute_dims", bi_transpose, "permute_dims(a, axes): a with its axes permuted", NP},
    {"swapaxes", bi_swapaxes, "swapaxes(a, axis1, axis2): a with two axes exchanged", NP},
    {"moveaxis", bi_moveaxis, "moveaxis(a, source, destination): a with axes moved", NP},
    {"squeeze", bi_squeeze, "squeeze(a, axis=None): a without its size-1 axes", NP},
    {"expand_dims", bi_expand_dims, "expand_dims(a, axis): a with new size-1 axes", NP},
    {"flip", bi_flip, "flip(m, axis=None): m with the order of elements reversed along axes", NP},
    {"fliplr", bi_fliplr, "fliplr(m): m reversed along axis 1", NP},
    {"flipud", bi_flipud, "flipud(m): m reversed along axis 0", NP},
    {"concatenate", bi_concatenate, "concatenate(arrays, axis=0): arrays joined along an axis", NP},
    {"stack", bi_stack, "stack(arrays, axis=0): arrays joined along a new axis", NP},
    {"vstack", bi_vstack, "vstack(tup): arrays stacked row-wise (along axis 0)", NP},
    {"hstack", bi_hstack, "hstack(tup): arrays stacked column-wise (along axis 1)", NP},
    {"dstack", bi_dstack, "dstack(tup): arrays stacked depth-wise (along axis 2)", NP},
    {"column_stack", bi_column_stack, "column_stack(tup): 1-D arrays as the columns of a matrix",
     NP},
    {"atleast_1d", bi_atleast_1d, "atleast_1d(*arys): arrays of rank at least 1", NP},
    {"atleast_2d", bi_atleast_2d, "atleast_2d(*arys): arrays of rank at least 2", NP},
    {"atleast_3d", bi_atleast_3d, "atleast_3d(*arys): arrays of rank at least 3", NP},
    {"split", bi_split, "split(ary, sections_or_indices, axis=0): a list of equal sub-arrays", NP},
    {"array_split", bi_array_split,
     "array_split(ary, sections_or_indices, axis=0): a list of sub-arrays (maybe unequal)", NP},
    {"tile", bi_tile, "tile(A, reps): A repeated reps times along each axis", NP},
    {"repeat", bi_repeat, "repeat(a, repeats, axis=None): each element repeated `repeats` times",
     NP},
    {"roll", bi_roll, "roll(a, shift, axis=None): elements shifted cyclically along axes", NP},
    {"broadcast_to", bi_broadcast_to, "broadcast_to(array, shape): array broadcast to shape", NP},
    {"broadcast_arrays", bi_broadcast_arrays,
     "broadcast_arrays(*args): the arrays broadcast to one shape, as a list", NP},
    {"pad", bi_pad, "pad(array, pad_width, mode='constant', constant_values=0): padded array", NP},
    {"astype", bi_astype, "astype(x, dtype): x converted to dtype", NP},
    {"shape", bi_shape, "shape(a): the shape of a, as a tuple", NP},
    {"ndim", bi_ndim, "ndim(a): the number of dimensions of a", NP},
    {"size", bi_size, "size(a, axis=None): the number of elements of a (along axis)", NP},
    {NULL, NULL, NULL, 0},
};

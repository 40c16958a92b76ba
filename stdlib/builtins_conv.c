/* Convolution and pooling builtins with JAX's signatures: lax.conv_general_dilated, lax.conv,
 * lax.conv_with_general_padding, lax.conv_transpose, lax.conv_dimension_numbers,
 * lax.ConvDimensionNumbers, lax.padtype_to_pads, lax.reduce_window, and jnp.convolve /
 * jnp.correlate. They parse JAX's arguments (padding strings, dimension-number strings) into
 * the parameters of the primitives in compiler/conv_rules.c. */
#include "builtins_lib.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../compiler/conv_rules.h"

/* ---------------------------------------------------------------- argument helpers */

/* A value as str() shows it, cut to fit `out` (for messages). */
static void show_value(char *out, size_t cap, const ax_value *v) {
    ax_strbuf s;
    ax_strbuf_init(&s);
    if (v) ax_value_format(&s, v);
    snprintf(out, cap, "%s", v && s.data ? s.data : "nothing");
    if (s.data && strlen(s.data) >= cap && cap > 4) memcpy(out + cap - 4, "...", 4);
    ax_strbuf_free(&s);
}

static bool is_seq(const ax_value *v) {
    return v && (v->kind == AX_V_TUPLE || v->kind == AX_V_LIST);
}

static bool is_none(const ax_value *v) {
    return !v || v->kind == AX_V_NONE;
}

/* n ints from a sequence (None or absent: all `dflt`). */
static bool int_seq(ax_interp *in, ax_value *v, const char *fname, const char *what, int n,
                    int64_t dflt, int64_t *out) {
    if (is_none(v)) {
        for (int i = 0; i < n; i++) out[i] = dflt;
        return true;
    }
    int got = 0;
    char label[96];
    snprintf(label, sizeof label, "%s: %s", fname, what);
    int64_t tmp[AX_MAX_RANK];
    if (!is_seq(v) && !(v->kind == AX_V_ARRAY && v->arr->ndim == 1)) {
        ax_error(in->cx, AX_ERR_TYPE, "%s must be a sequence of %d ints", label, n);
        return false;
    }
    if (!ax_bi_shape(in, v, label, &got, tmp)) return false;
    if (got != n) {
        ax_error(in->cx, AX_ERR_VALUE, "%s has %d entr%s, expected %d (one per %s dimension)",
                 label, got, got == 1 ? "y" : "ies", n,
                 strstr(what, "window_dim") ? "operand" : "spatial");
        return false;
    }
    memcpy(out, tmp, (size_t)n * sizeof *out);
    return true;
}

/* "SAME" / "SAME_LOWER" / "VALID" (any case): 1, 2, 0; -1 for other strings. */
static int padding_kind(const char *s) {
    char up[16];
    size_t n = strlen(s);
    if (n >= sizeof up) return -1;
    for (size_t i = 0; i <= n; i++) up[i] = (char)toupper((unsigned char)s[i]);
    return !strcmp(up, "VALID") ? 0 : !strcmp(up, "SAME") ? 1 : !strcmp(up, "SAME_LOWER") ? 2 : -1;
}

/* lax.padtype_to_pads for one dim: the padding that keeps ceil(in / stride) windows. */
static void string_pads(int kind, int64_t in, int64_t window, int64_t stride, int64_t *lo,
                        int64_t *hi) {
    if (kind == 0) {
        *lo = *hi = 0;
        return;
    }
    int64_t out = (in + stride - 1) / stride;
    int64_t total = (out - 1) * stride + window - in;
    if (total < 0) total = 0;
    *lo = kind == 1 ? total / 2 : (total + 1) / 2;
    *hi = total - *lo;
}

/* A padding argument: a string, resolved against the sizes, or n (low, high) pairs; absent:
 * "VALID". */
static bool parse_padding(ax_interp *in, ax_value *v, const char *fname, int n, const int64_t *size,
                          const int64_t *window, const int64_t *stride, int64_t *lo, int64_t *hi) {
    if (!v || v->kind == AX_V_STR) {
        int kind = v ? padding_kind(v->str) : 0;
        if (kind < 0) {
            ax_error(in->cx, AX_ERR_VALUE,
                     "%s: unknown padding '%s' (use 'SAME', 'SAME_LOWER', "
                     "'VALID' or a sequence of (low, high) pairs)",
                     fname, v->str);
            return false;
        }
        for (int d = 0; d < n; d++)
            string_pads(kind, size[d], window[d], stride[d], &lo[d], &hi[d]);
        return true;
    }
    if (!is_seq(v) || v->n != n) {
        char d[160];
        show_value(d, sizeof d, v);
        ax_error(in->cx, is_seq(v) ? AX_ERR_VALUE : AX_ERR_TYPE,
                 "%s: padding must be a string or a sequence of %d (low, high) pairs, got %s",
                 fname, n, d);
        return false;
    }
    for (int d = 0; d < n; d++) {
        int64_t pair[AX_MAX_RANK];
        int got = 0;
        ax_value *item = v->items[d];
        if (!is_seq(item) || !ax_bi_shape(in, item, "padding", &got, pair) || got != 2) {
            if (!ax_error_pending(in->cx))
                ax_error(in->cx, AX_ERR_VALUE, "%s: padding entry %d must be a (low, high) pair",
                         fname, d);
            return false;
        }
        lo[d] = pair[0];
        hi[d] = pair[1];
    }
    return true;
}

/* ---------------------------------------------------------------- dimension numbers */

/* lax.conv_general_permutations: strings such as ("NHWC", "HWIO", "NHWC") as dimension
 * numbers, spatial dims ordered as in the kernel's string. */
static bool specs_from_strings(ax_interp *in, const char *fname, const char *const *s, int n,
                               int **specs) {
    static const char pairs[3][2] = {{'N', 'C'}, {'O', 'I'}, {'N', 'C'}};
    for (int i = 0; i < 3; i++) {
        if ((int)strlen(s[i]) != n) {
            ax_error(in->cx, AX_ERR_TYPE,
                     "%s: dimension_numbers[%d] '%s' must have one letter "
                     "per dimension of lhs and rhs (%d)",
                     fname, i, s[i], n);
            return false;
        }
        for (int a = 0; a < n; a++)
            for (int b = a + 1; b < n; b++)
                if (s[i][a] == s[i][b]) {
                    ax_error(in->cx, AX_ERR_TYPE, "%s: dimension_numbers[%d] '%s' repeats '%c'",
                             fname, i, s[i], s[i][a]);
                    return false;
                }
        if (!strchr(s[i], pairs[i][0]) || !strchr(s[i], pairs[i][1])) {
            ax_error(in->cx, AX_ERR_TYPE,
                     "%s: dimension_numbers[%d] '%s' must contain '%c' and "
                     "'%c' once each",
                     fname, i, s[i], pairs[i][0], pairs[i][1]);
            return false;
        }
    }
    const char *rhs = s[1];
    for (int i = 0; i < 3; i++) {
        int at = 2;
        specs[i][0] = (int)(strchr(s[i], pairs[i][0]) - s[i]);
        specs[i][1] = (int)(strchr(s[i], pairs[i][1]) - s[i]);
        for (int r = 0; r < n; r++) { /* spatial letters in the kernel's order */
            char c = rhs[r];
            if (c == 'O' || c == 'I') continue;
            const char *where = strchr(s[i], c);
            if (!where || c == pairs[i][0] || c == pairs[i][1]) {
                ax_error(in->cx, AX_ERR_TYPE,
                         "%s: dimension_numbers %s, %s and %s must have the "
                         "same spatial letters",
                         fname, s[0], s[1], s[2]);
                return false;
            }
            specs[i][at++] = (int)(where - s[i]);
        }
    }
    return true;
}

/* None (NCHW, OIHW, NCHW), three strings, or three int sequences (ConvDimensionNumbers). */
static bool parse_dimension_numbers(ax_interp *in, ax_value *v, const char *fname, int n,
                                    ax_conv_dims *c) {
    int *specs[3] = {c->lhs_spec, c->rhs_spec, c->out_spec};
    if (is_none(v)) {
        for (int i = 0; i < 3; i++)
            for (int d = 0; d < n; d++) specs[i][d] = d;
        return true;
    }
    if (!is_seq(v) || v->n != 3) {
        ax_error(in->cx, AX_ERR_TYPE,
                 "%s: dimension_numbers must be None, three strings such as "
                 "('NHWC', 'HWIO', 'NHWC') or a ConvDimensionNumbers",
                 fname);
        return false;
    }
    if (v->items[0]->kind == AX_V_STR) {
        const char *s[3];
        for (int i = 0; i < 3; i++)
            if (!(s[i] = ax_bi_str(in, v->items[i], "dimension_numbers entries"))) return false;
        return specs_from_strings(in, fname, s, n, specs);
    }
    for (int i = 0; i < 3; i++) {
        int64_t spec[AX_MAX_RANK];
        int got = 0;
        if (!is_seq(v->items[i]) || !ax_bi_shape(in, v->items[i], "dimension_numbers", &got, spec))
            return ax_error_pending(in->cx) ? false
                                            : (ax_error(in->cx, AX_ERR_TYPE,
                                                        "%s: dimension_numbers entries must all "
                                                        "be strings or all int sequences",
                                                        fname),
                                               false);
        if (got != n) {
            ax_error(in->cx, AX_ERR_VALUE,
                     "%s: dimension_numbers[%d] has %d entries for arrays "
                     "of rank %d",
                     fname, i, got, n);
            return false;
        }
        for (int d = 0; d < n; d++) specs[i][d] = (int)spec[d];
    }
    return true;
}

static ax_value *int_tuple(ax_interp *in, int n, const int *v) {
    ax_value *items[AX_MAX_RANK];
    for (int i = 0; i < n; i++)
        if (!(items[i] = ax_bi_int_value(in, v[i]))) {
            while (i--) ax_value_release(items[i]);
            return NULL;
        }
    return ax_value_or_oom(in, ax_value_tuple(n, items));
}

static ax_value *specs_value(ax_interp *in, int n, const ax_conv_dims *c) {
    ax_value *t[3] = {int_tuple(in, n, c->lhs_spec), int_tuple(in, n, c->rhs_spec),
                      int_tuple(in, n, c->out_spec)};
    if (!t[0] || !t[1] || !t[2]) {
        for (int i = 0; i < 3; i++) ax_value_release(t[i]);
        return ax_error_oom(in->cx);
    }
    return ax_value_or_oom(in, ax_value_tuple(3, t));
}

/* ---------------------------------------------------------------- conv_general_dilated */

/* The arrays of lhs and rhs in one dtype: promoted as jnp would (JAX's lax insists on equal
 * dtypes; ax promotes, so that f32 data meets the f64 kernels of check_grads), or converted to
 * preferred_element_type when it is given. */
static bool conv_operands(ax_interp *in, ax_value *lv, ax_value *rv, ax_value *pref,
                          const char *fname, ax_array **l, ax_array **r) {
    *l = ax_np_asarray(in, lv, fname);
    *r = *l ? ax_np_asarray(in, rv, fname) : NULL;
    int dtype = -1;
    if (!*r || !ax_bi_dtype(in, pref, &dtype)) return false;
    bool weak = false;
    ax_array *both[2] = {*l, *r};
    ax_dtype t = dtype >= 0 ? (ax_dtype)dtype : ax_np_result_type(2, both, &weak);
    ax_array *a = ax_np_astype(in->cx, *l, t, weak && (*l)->weak);
    ax_array *b = a ? ax_np_astype(in->cx, *r, t, weak && (*r)->weak) : NULL;
    ax_array_release(*l);
    ax_array_release(*r);
    *l = a, *r = b;
    return b != NULL;
}

static void release2(ax_array *a, ax_array *b) {
    ax_array_release(a);
    ax_array_release(b);
}

/* Spatial sizes of lhs and of the dilated kernel, in kernel order (for string padding). */
static bool spatial_sizes(ax_interp *in, const char *fname, const ax_array *l, const ax_array *r,
                          const ax_params *p, int64_t *size, int64_t *window) {
    int n = l->ndim;
    if (r->ndim != n || n < 2) {
        char lt[160], rt[160];
        ax_array_type_format(lt, sizeof lt, l);
        ax_array_type_format(rt, sizeof rt, r);
        ax_error(in->cx, AX_ERR_SHAPE,
                 "%s: lhs %s and rhs %s must have one rank, at least 2 "
                 "(batch, feature, spatial...)",
                 fname, lt, rt);
        return false;
    }
    const ax_conv_dims *c = &p->conv;
    for (int i = 0; i < n; i++)
        if (c->lhs_spec[i] < 0 || c->lhs_spec[i] >= n || c->rhs_spec[i] < 0 || c->rhs_spec[i] >= n)
            return true; /* the shape rule reports bad specs */
    for (int d = 0; d < n - 2; d++) {
        size[d] = l->shape[c->lhs_spec[2 + d]];
        window[d] = ax_dilate_dim(r->shape[c->rhs_spec[2 + d]], c->rhs_dilation[d]);
    }
    return true;
}

/* The common part of the conv builtins: parsed params (strides, dilations, dimension numbers
 * and groups set) plus the padding value, resolved here. */
static ax_value *bind_conv(ax_interp *in, const char *fname, ax_array *l, ax_array *r, ax_params *p,
                           ax_value *padding) {
    int64_t size[AX_MAX_RANK], window[AX_MAX_RANK];
    ax_array *out = NULL;
    if (spatial_sizes(in, fname, l, r, p, size, window) &&
        parse_padding(in, padding, fname, p->ndim - 2, size, window, p->step, p->lo, p->hi))
        out = ax_bind1(in->cx, AX_P_CONV_GENERAL_DILATED, 2, (ax_array *[]){l, r}, p);
    release2(l, r);
    return ax_np_wrap_take(in, out);
}

static bool string_padding_with_lhs_dilation(ax_interp *in, const char *fname, ax_value *padding,
                                             const ax_params *p) {
    if (!padding || padding->kind != AX_V_STR) return false;
    for (int d = 0; d < p->ndim - 2; d++)
        if (p->conv.lhs_dilation[d] != 1) {
            ax_error(in->cx, AX_ERR_VALUE,
                     "%s: string padding is not implemented for transposed "
                     "convolution (lhs_dilation); give the padding explicitly or use "
                     "conv_transpose",
                     fname);
            return true;
        }
    return false;
}

/* Where a convolution builtin's arguments sit in its parameter list (-1: it has none). */
typedef struct conv_signature {
    const char *const *names; /* NULL-terminated */
    int nrequired;            /* the first ones */
    int strides, padding, lhs_dilation, rhs_dilation, dimension_numbers, feature_groups,
        batch_groups, preferred;
} conv_signature;

/* conv_general_dilated and its wrappers (lhs and rhs first): parse, then bind. */
static ax_value *conv_builtin(ax_interp *in, ax_value *self, const ax_args *args,
                              const conv_signature *sig) {
    const char *f = self->builtin->name;
    ax_value *v[16], *none = NULL;
    int n = 0;
    while (sig->names[n]) n++;
    if (!ax_bi_parse(in, args, f, sig->names, n, v)) return NULL;
    for (int i = 0; i < sig->nrequired; i++)
        if (!ax_bi_required(in, v[i], f, sig->names[i])) return NULL;
#define ARG(k) (sig->k >= 0 ? v[sig->k] : none)
    ax_array *l = NULL, *r = NULL;
    if (!conv_operands(in, v[0], v[1], ARG(preferred), f, &l, &r)) goto fail;
    ax_params p;
    ax_conv_params_init(&p, l->ndim);
    int ns = l->ndim - 2 < 0 ? 0 : l->ndim - 2;
    if (!int_seq(in, ARG(strides), f, "window_strides", ns, 1, p.step) ||
        !int_seq(in, ARG(lhs_dilation), f, "lhs_dilation", ns, 1, p.conv.lhs_dilation) ||
        !int_seq(in, ARG(rhs_dilation), f, "rhs_dilation", ns, 1, p.conv.rhs_dilation) ||
        !parse_dimension_numbers(in, ARG(dimension_numbers), f, l->ndim, &p.conv) ||
        !ax_bi_int(in, ARG(feature_groups), "feature_group_count", 1,
                   &p.conv.feature_group_count) ||
        !ax_bi_int(in, ARG(batch_groups), "batch_group_count", 1, &p.conv.batch_group_count) ||
        string_padding_with_lhs_dilation(in, f, ARG(padding), &p))
        goto fail;
    return bind_conv(in, f, l, r, &p, ARG(padding));
#undef ARG
fail:
    release2(l, r);
    return NULL;
}

static ax_value *bi_conv_general_dilated(ax_interp *in, ax_value *self, const ax_args *args) {
    static const char *const names[] = {"lhs",
                                        "rhs",
                                        "window_strides",
                                        "padding",
                                        "lhs_dilation",
                                        "rhs_dilation",
                                        "dimension_numbers",
                                        "feature_group_count",
                                        "batch_group_count",
                                        "precision",
                                        "preferred_element_type",
                                        NULL};
    static const conv_signature sig = {names, 4, 2, 3, 4, 5, 6, 7, 8, 10};
    return conv_builtin(in, self, args, &sig);
}

static ax_value *bi_conv(ax_interp *in, ax_value *self, const ax_args *args) {
    static const char *const names[] = {
        "lhs", "rhs", "window_strides", "padding", "precision", "preferred_element_type", NULL};
    static const conv_signature sig = {names, 4, 2, 3, -1, -1, -1, -1, -1, 5};
    return conv_builtin(in, self, args, &sig);
}

static ax_value *bi_conv_with_general_padding(ax_interp *in, ax_value *self, const ax_args *args) {
    static const char *const names[] = {
        "lhs",          "rhs",       "window_strides",         "padding", "lhs_dilation",
        "rhs_dilation", "precision", "preferred_element_type", NULL};
    static const conv_signature sig = {names, 6, 2, 3, 4, 5, -1, -1, -1, 7};
    return conv_builtin(in, self, args, &sig);
}

/* ---------------------------------------------------------------- conv_transpose */

/* JAX's _conv_transpose_padding: the padding of the dilated-input convolution that undoes a
 * forward convolution with kernel size k, stride s and this padding. */
static void transpose_pads(int kind, int64_t k, int64_t s, const int64_t *pair, int64_t *lo,
                           int64_t *hi) {
    int64_t len, a;
    if (kind == 1) { /* SAME */
        len = k + s - 2;
        a = s > k - 1 ? k - 1 : (len + 1) / 2;
    } else if (kind == 0) { /* VALID */
        len = k + s - 2 + (k - s > 0 ? k - s : 0);
        a = k - 1;
    } else { /* explicit forward padding */
        a = k - pair[0] - 1;
        len = a + (k - pair[1] - 1);
    }
    *lo = a;
    *hi = len - a;
}

static const char *default_transpose_dims(int n) {
    static const char *const dn[][3] = {{"NC", "IO", "NC"},
                                        {"NHC", "HIO", "NHC"},
                                        {"NHWC", "HWIO", "NHWC"},
                                        {"NHWDC", "HWDIO", "NHWDC"}};
    return n >= 2 && n <= 5 ? (const char *)dn[n - 2] : NULL;
}

/* The kernel flipped along its spatial dims with its in and out feature dims swapped. */
static ax_array *transposed_kernel(ax_ctx *cx, ax_array *r, const ax_conv_dims *c) {
    int n = r->ndim, axes[AX_MAX_RANK], perm[AX_MAX_RANK];
    for (int d = 0; d < n - 2; d++) axes[d] = c->rhs_spec[2 + d];
    for (int d = 0; d < n; d++) perm[d] = d;
    perm[c->rhs_spec[0]] = c->rhs_spec[1];
    perm[c->rhs_spec[1]] = c->rhs_spec[0];
    ax_array *f = ax_np_flip(cx, r, n - 2, axes);
    ax_array *t = f ? ax_np_transpose(cx, f, perm) : NULL;
    ax_array_release(f);
    return t;
}

/* conv_transpose's padding: per dim from the string or (when use_consistent_padding) the
 * forward convolution's pairs; otherwise the pairs as they are. */
static bool conv_transpose_padding(ax_interp *in, const char *f, ax_value *pad, bool consistent,
                                   ax_params *p, const int64_t *k) {
    int ns = p->ndim - 2;
    int kind = pad && pad->kind == AX_V_STR ? padding_kind(pad->str) : -1;
    if (pad && pad->kind == AX_V_STR && kind != 0 && kind != 1) {
        ax_error(in->cx, AX_ERR_VALUE,
                 "%s: padding must be 'SAME', 'VALID' or (low, high) pairs, "
                 "got '%s'",
                 f, pad->str);
        return false;
    }
    int64_t ones[AX_MAX_RANK] = {0}, lo[AX_MAX_RANK] = {0}, hi[AX_MAX_RANK] = {0};
    for (int d = 0; d < ns; d++) ones[d] = 1;
    if (kind < 0 && !parse_padding(in, pad, f, ns, ones, ones, ones, lo, hi)) return false;
    for (int d = 0; d < ns; d++) {
        if (kind < 0 && !consistent) {
            p->lo[d] = lo[d], p->hi[d] = hi[d];
            continue;
        }
        int64_t eff = ax_dilate_dim(k[d], p->conv.rhs_dilation[d]), pair[2] = {lo[d], hi[d]};
        transpose_pads(kind < 0 ? 2 : kind, eff, p->conv.lhs_dilation[d], pair, &p->lo[d],
                       &p->hi[d]);
    }
    return true;
}

static ax_value *bi_conv_transpose(ax_interp *in, ax_value *self, const ax_args *args) {
    static const char *const names[] = {"lhs",
                                        "rhs",
                                        "strides",
                                        "padding",
                                        "rhs_dilation",
                                        "dimension_numbers",
                                        "transpose_kernel",
                                        "precision",
                                        "preferred_element_type",
                                        "use_consistent_padding",
                                        NULL};
    const char *f = self->builtin->name;
    ax_value *v[10];
    ax_array *l = NULL, *r = NULL, *out = NULL;
    bool flip = false, consistent = false;
    if (!ax_bi_parse(in, args, f, names, 10, v)) return NULL;
    for (int i = 0; i < 4; i++)
        if (!ax_bi_required(in, v[i], f, names[i])) return NULL;
    if (!conv_operands(in, v[0], v[1], v[8], f, &l, &r)) goto done;
    int n = l->ndim, ns = n - 2 < 0 ? 0 : n - 2;
    ax_params p;
    ax_conv_params_init(&p, n);
    if (is_none(v[5])) {
        const char *const *dn = (const char *const *)default_transpose_dims(n);
        if (!dn) {
            ax_error(in->cx, AX_ERR_VALUE,
                     "%s: no default dimension_numbers for arrays of rank %d; "
                     "give them",
                     f, n);
            goto done;
        }
        int *specs[3] = {p.conv.lhs_spec, p.conv.rhs_spec, p.conv.out_spec};
        if (!specs_from_strings(in, f, dn, n, specs)) goto done;
    } else if (!parse_dimension_numbers(in, v[5], f, n, &p.conv)) {
        goto done;
    }
    if (!int_seq(in, v[2], f, "strides", ns, 1, p.conv.lhs_dilation) ||
        !int_seq(in, v[4], f, "rhs_dilation", ns, 1, p.conv.rhs_dilation) ||
        !ax_bi_bool(in, v[6], "transpose_kernel", false, &flip) ||
        !ax_bi_bool(in, v[9], "use_consistent_padding", false, &consistent))
        goto done;
    int64_t k[AX_MAX_RANK], size[AX_MAX_RANK];
    if (!spatial_sizes(in, f, l, r, &p, size, k)) goto done;
    for (int d = 0; d < ns; d++) {
        int at = p.conv.rhs_spec[2 + d];
        k[d] = at >= 0 && at < n ? r->shape[at] : 1;
    }
    if (!conv_transpose_padding(in, f, v[3], consistent, &p, k)) goto done;
    if (flip) {
        ax_array *t = transposed_kernel(in->cx, r, &p.conv);
        ax_array_release(r);
        if (!(r = t)) goto done;
    }
    out = ax_bind1(in->cx, AX_P_CONV_GENERAL_DILATED, 2, (ax_array *[]){l, r}, &p);
done:
    release2(l, r);
    return ax_np_wrap_take(in, out);
}

/* ---------------------------------------------------------------- dimension-number helpers */

static ax_value *bi_conv_dimension_numbers(ax_interp *in, ax_value *self, const ax_args *args) {
    static const char *const names[] = {"lhs_shape", "rhs_shape", "dimension_numbers", NULL};
    const char *f = self->builtin->name;
    ax_value *v[3];
    int nl = 0, nr = 0;
    int64_t ls[AX_MAX_RANK], rs[AX_MAX_RANK];
    if (!ax_bi_parse(in, args, f, names, 3, v) || !ax_bi_required(in, v[0], f, names[0]) ||
        !ax_bi_required(in, v[1], f, names[1]) || !ax_bi_shape(in, v[0], "lhs_shape", &nl, ls) ||
        !ax_bi_shape(in, v[1], "rhs_shape", &nr, rs))
        return NULL;
    if (nl != nr) {
        ax_error(in->cx, AX_ERR_TYPE,
                 "%s: convolution requires lhs and rhs of one rank, got %d and "
                 "%d",
                 f, nl, nr);
        return NULL;
    }
    ax_conv_dims c;
    if (!parse_dimension_numbers(in, v[2], f, nl, &c)) return NULL;
    return specs_value(in, nl, &c);
}

static ax_value *bi_conv_dims_tuple(ax_interp *in, ax_value *self, const ax_args *args) {
    static const char *const names[] = {"lhs_spec", "rhs_spec", "out_spec", NULL};
    const char *f = self->builtin->name;
    ax_value *v[3];
    if (!ax_bi_parse(in, args, f, names, 3, v)) return NULL;
    for (int i = 0; i < 3; i++)
        if (!ax_bi_required(in, v[i], f, names[i])) return NULL;
    ax_value *t[3] = {0};
    for (int i = 0; i < 3; i++) {
        int64_t spec[AX_MAX_RANK];
        int n = 0, ints[AX_MAX_RANK];
        if (!ax_bi_shape(in, v[i], names[i], &n, spec)) {
            for (int j = 0; j < i; j++) ax_value_release(t[j]);
            return NULL;
        }
        for (int d = 0; d < n; d++) ints[d] = (int)spec[d];
        if (!(t[i] = int_tuple(in, n, ints))) {
            for (int j = 0; j < i; j++) ax_value_release(t[j]);
            return NULL;
        }
    }
    return ax_value_or_oom(in, ax_value_tuple(3, t));
}

static ax_value *bi_padtype_to_pads(ax_interp *in, ax_value *self, const ax_args *args) {
    static const char *const names[] = {"in_shape", "window_shape", "window_strides", "padding",
                                        NULL};
    const char *f = self->builtin->name;
    ax_value *v[4];
    int n = 0, nw = 0, ns = 0;
    int64_t size[AX_MAX_RANK], win[AX_MAX_RANK], st[AX_MAX_RANK], lo[AX_MAX_RANK], hi[AX_MAX_RANK];
    if (!ax_bi_parse(in, args, f, names, 4, v)) return NULL;
    for (int i = 0; i < 4; i++)
        if (!ax_bi_required(in, v[i], f, names[i])) return NULL;
    if (!ax_bi_shape(in, v[0], "in_shape", &n, size) ||
        !ax_bi_shape(in, v[1], "window_shape", &nw, win) ||
        !ax_bi_shape(in, v[2], "window_strides", &ns, st))
        return NULL;
    if (nw != n || ns != n) {
        ax_error(in->cx, AX_ERR_VALUE,
                 "%s: in_shape, window_shape and window_strides must have one "
                 "length, got %d, %d and %d",
                 f, n, nw, ns);
        return NULL;
    }
    if (v[3]->kind != AX_V_STR) return ax_value_retain(v[3]);
    if (!parse_padding(in, v[3], f, n, size, win, st, lo, hi)) return NULL;
    ax_value *pairs[AX_MAX_RANK];
    for (int d = 0; d < n; d++) {
        ax_value *two[2] = {ax_bi_int_value(in, lo[d]), ax_bi_int_value(in, hi[d])};
        if (two[0] && two[1]) {
            pairs[d] = ax_value_or_oom(in, ax_value_tuple(2, two)); /* takes both */
        } else {
            ax_value_release(two[0]);
            ax_value_release(two[1]);
            pairs[d] = NULL;
        }
        if (!pairs[d]) {
            while (d--) ax_value_release(pairs[d]);
            return NULL;
        }
    }
    return ax_value_or_oom(in, ax_value_tuple(n, pairs));
}

/* ---------------------------------------------------------------- reduce_window */

/* The reduction `computation` names: add, max (maximum) or min (minimum) as builtins. */
static int window_op(ax_interp *in, ax_value *fn, ax_prim *prim) {
    static const struct {
        const char *name;
        ax_prim prim;
    } ops[] = {{"add", AX_P_REDUCE_WINDOW_SUM},
               {"max", AX_P_REDUCE_WINDOW_MAX},
               {"maximum", AX_P_REDUCE_WINDOW_MAX},
               {"min", AX_P_REDUCE_WINDOW_MIN},
               {"minimum", AX_P_REDUCE_WINDOW_MIN}};
    if (fn && fn->kind == AX_V_BUILTIN)
        for (size_t i = 0; i < sizeof ops / sizeof *ops; i++)
            if (!strcmp(fn->builtin->name, ops[i].name)) {
                *prim = ops[i].prim;
                return 0;
            }
    char d[160];
    show_value(d, sizeof d, fn);
    ax_error(in->cx, AX_ERR_TYPE,
             "reduce_window: computation must be lax.add, lax.max or lax.min "
             "(or add, maximum, minimum), got %s",
             d);
    return -1;
}

/* Whether init (concrete, rank 0) is the identity of the reduction, in its own dtype. */
static bool is_identity(ax_prim prim, const ax_array *init) {
    if (!ax_np_is_concrete(init) || init->size != 1) return false;
    double v = ax_array_get_f64(init, 0);
    if (prim == AX_P_REDUCE_WINDOW_SUM) return v == 0;
    bool max = prim == AX_P_REDUCE_WINDOW_MAX;
    switch (init->dtype) {
    case AX_F32:
    case AX_F64:
        return v == (max ? -INFINITY : INFINITY);
    case AX_BOOL:
    case AX_U8:
    case AX_U32:
        return max ? v == 0
                   : v == (init->dtype == AX_BOOL ? 1
                           : init->dtype == AX_U8 ? 255.0
                                                  : 4294967295.0);
    case AX_I32:
        return v == (max ? -2147483648.0 : 2147483647.0);
    default: {
        int64_t i = ax_array_get_i64(init, 0);
        return i == (max ? INT64_MIN : INT64_MAX);
    }
    }
}

/* A reduction with another start value: XLA's reduce_window puts init in every window and in
 * the padding, so pad with it, reduce from the identity and combine with init once more. */
static ax_array *window_with_init(ax_ctx *cx, ax_prim prim, ax_array *x, ax_array *init,
                                  const ax_params *p) {
    ax_array *v = init;
    if (init->dtype != x->dtype) {
        if (!init->weak) {
            char xt[160], it[160];
            ax_array_type_format(xt, sizeof xt, x);
            ax_array_type_format(it, sizeof it, init);
            return ax_error(cx, AX_ERR_TYPE,
                            "reduce_window: init_value %s must have the operand's "
                            "dtype (operand %s)",
                            it, xt);
        }
        if (!(v = ax_np_astype(cx, init, x->dtype, false))) return NULL;
    } else {
        ax_array_retain(v);
    }
    ax_params pad = {.ndim = x->ndim}, q = *p;
    for (int d = 0; d < x->ndim; d++) {
        pad.lo[d] = p->lo[d], pad.hi[d] = p->hi[d];
        pad.step[d] = p->conv.lhs_dilation[d] - 1;
        q.lo[d] = q.hi[d] = 0;
        q.conv.lhs_dilation[d] = 1;
    }
    ax_array *padded = ax_bind1(cx, AX_P_PAD, 2, (ax_array *[]){x, v}, &pad);
    ax_array *r = padded ? ax_bind1(cx, prim, 1, &padded, &q) : NULL;
    ax_prim op = prim == AX_P_REDUCE_WINDOW_SUM   ? AX_P_ADD
                 : prim == AX_P_REDUCE_WINDOW_MAX ? AX_P_MAX
                                                  : AX_P_MIN;
    ax_array *out = r ? ax_bind1(cx, op, 2, (ax_array *[]){r, v}, NULL) : NULL;
    ax_array_release(padded);
    ax_array_release(r);
    ax_array_release(v);
    return out;
}

static ax_value *bi_reduce_window(ax_interp *in, ax_value *self, const ax_args *args) {
    static const char *const names[] = {"operand",           "init_value",      "computation",
                                        "window_dimensions", "window_strides",  "padding",
                                        "base_dilation",     "window_dilation", NULL};
    const char *f = self->builtin->name;
    ax_value *v[8];
    ax_prim prim;
    if (!ax_bi_parse(in, args, f, names, 8, v)) return NULL;
    for (int i = 0; i < 4; i++)
        if (!ax_bi_required(in, v[i], f, names[i])) return NULL;
    if (window_op(in, v[2], &prim)) return NULL;
    ax_array *x = ax_np_asarray(in, v[0], f), *init = x ? ax_np_asarray(in, v[1], f) : NULL;
    ax_array *out = NULL;
    if (!init) goto done;
    if (init->ndim != 0) {
        char t[160];
        ax_array_type_format(t, sizeof t, init);
        ax_error(in->cx, AX_ERR_TYPE, "%s: init_value must be a scalar, got %s", f, t);
        goto done;
    }
    int n = x->ndim;
    ax_params p;
    ax_window_params_init(&p, n);
    int64_t window[AX_MAX_RANK];
    if (!int_seq(in, v[3], f, "window_dimensions", n, 1, p.shape) ||
        !int_seq(in, v[4], f, "window_strides", n, 1, p.step) ||
        !int_seq(in, v[6], f, "base_dilation", n, 1, p.conv.lhs_dilation) ||
        !int_seq(in, v[7], f, "window_dilation", n, 1, p.conv.rhs_dilation))
        goto done;
    for (int d = 0; d < n; d++) window[d] = ax_dilate_dim(p.shape[d], p.conv.rhs_dilation[d]);
    if (!parse_padding(in, v[5], f, n, x->shape, window, p.step, p.lo, p.hi)) goto done;
    out = is_identity(prim, init) ? ax_bind1(in->cx, prim, 1, &x, &p)
                                  : window_with_init(in->cx, prim, x, init, &p);
done:
    release2(x, init);
    return ax_np_wrap_take(in, out);
}

/* ---------------------------------------------------------------- jnp.convolve / correlate */

/* JAX's _conv: 1-d inputs promoted to floats, the shorter one slid along the longer as a
 * one-feature convolution (convolve flips it; correlate reverses the output when it swaps). */
static ax_array *convolve_1d(ax_ctx *cx, const char *fname, bool flip, ax_array *a, ax_array *v,
                             int mode) {
    if (a->ndim != 1 || v->ndim != 1)
        return ax_error(cx, AX_ERR_VALUE, "%s() only supports 1-dimensional inputs", fname);
    if (a->size == 0 || v->size == 0)
        return ax_error(cx, AX_ERR_VALUE,
                        "%s: inputs cannot be empty, got shapes (%lld,) and "
                        "(%lld,)",
                        fname, (long long)a->size, (long long)v->size);
    bool weak;
    ax_array *pair[2] = {a, v};
    ax_dtype t = ax_np_result_type(2, pair, &weak);
    ax_array *ta = ax_np_astype(cx, a, t, weak), *tv = ta ? ax_np_astype(cx, v, t, weak) : NULL;
    ax_array *x = tv ? ax_np_to_inexact(cx, ta) : NULL, *y = x ? ax_np_to_inexact(cx, tv) : NULL;
    release2(ta, tv);
    bool reverse = false;
    ax_array *out = NULL, *ry = NULL, *lx = NULL, *ly = NULL, *c = NULL;
    if (!y) goto done;
    if (x->size < y->size) {
        ax_array *tmp = x;
        x = y, y = tmp;
        reverse = !flip;
    }
    ry = flip ? ax_np_flip(cx, y, 1, (int[]){0}) : ax_array_retain(y);
    lx = ry ? ax_np_reshape(cx, x, 3, (int64_t[]){1, 1, x->size}) : NULL;
    ly = lx ? ax_np_reshape(cx, ry, 3, (int64_t[]){1, 1, ry->size}) : NULL;
    if (!ly) goto done;
    ax_params p;
    ax_conv_params_init(&p, 3);
    int64_t k = ly->shape[2];
    p.lo[0] = mode == 2 ? k - 1 : mode == 1 ? k / 2 : 0;
    p.hi[0] = mode == 2 ? k - 1 : mode == 1 ? k - k / 2 - 1 : 0;
    c = ax_bind1(cx, AX_P_CONV_GENERAL_DILATED, 2, (ax_array *[]){lx, ly}, &p);
    ax_array *flat = c ? ax_np_reshape(cx, c, 1, (int64_t[]){c->size}) : NULL;
    out = flat && reverse ? ax_np_flip(cx, flat, 1, (int[]){0}) : ax_array_retain(flat);
    ax_array_release(flat);
done:
    ax_array_release(x);
    ax_array_release(y);
    ax_array_release(ry);
    ax_array_release(lx);
    ax_array_release(ly);
    ax_array_release(c);
    return out;
}

static ax_value *convolve_builtin(ax_interp *in, ax_value *self, const ax_args *args, bool flip,
                                  const char *dflt_mode) {
    static const char *const names[] = {"a", "v", "mode", "precision", "preferred_element_type",
                                        NULL};
    const char *f = self->builtin->name;
    ax_value *v[5];
    if (!ax_bi_parse(in, args, f, names, 3, v) || !ax_bi_required(in, v[0], f, "a") ||
        !ax_bi_required(in, v[1], f, "v"))
        return NULL;
    const char *mode = v[2] ? ax_bi_str(in, v[2], "mode") : dflt_mode;
    if (!mode) return NULL;
    int m = !strcmp(mode, "valid") ? 0 : !strcmp(mode, "same") ? 1 : !strcmp(mode, "full") ? 2 : -1;
    if (m < 0) {
        ax_error(in->cx, AX_ERR_VALUE, "%s: mode must be one of 'full', 'same', 'valid', got '%s'",
                 f, mode);
        return NULL;
    }
    ax_array *a = ax_np_asarray(in, v[0], f), *b = a ? ax_np_asarray(in, v[1], f) : NULL;
    int dtype = -1;
    ax_array *out =
        b && ax_bi_dtype(in, v[4], &dtype) ? convolve_1d(in->cx, f, flip, a, b, m) : NULL;
    if (out && dtype >= 0) {
        ax_array *c = ax_np_astype(in->cx, out, (ax_dtype)dtype, false);
        ax_array_release(out);
        out = c;
    }
    release2(a, b);
    return ax_np_wrap_take(in, out);
}

static ax_value *bi_convolve(ax_interp *in, ax_value *self, const ax_args *args) {
    return convolve_builtin(in, self, args, true, "full");
}

static ax_value *bi_correlate(ax_interp *in, ax_value *self, const ax_args *args) {
    return convolve_builtin(in, self, args, false, "valid");
}

const ax_builtin_def ax_builtins_conv[] = {
    {"conv_general_dilated", bi_conv_general_dilated,
     "conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation=None, "
     "rhs_dilation=None, dimension_numbers=None, feature_group_count=1, batch_group_count=1, "
     "precision=None, preferred_element_type=None): n-d convolution (lax)",
     0},
    {"conv", bi_conv,
     "conv(lhs, rhs, window_strides, padding, precision=None, preferred_element_type=None): "
     "NCHW/OIHW convolution (lax)",
     0},
    {"conv_with_general_padding", bi_conv_with_general_padding,
     "conv_with_general_padding(lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation, "
     "precision=None, preferred_element_type=None): NCHW/OIHW convolution with dilations (lax)",
     0},
    {"conv_transpose", bi_conv_transpose,
     "conv_transpose(lhs, rhs, strides, padding, rhs_dilation=None, dimension_numbers=None, "
     "transpose_kernel=False, ...): transposed (fractionally strided) convolution (lax)",
     0},
    {"conv_dimension_numbers", bi_conv_dimension_numbers,
     "conv_dimension_numbers(lhs_shape, rhs_shape, dimension_numbers): the specs as "
     "(lhs_spec, rhs_spec, out_spec) tuples (lax)",
     0},
    {"ConvDimensionNumbers", bi_conv_dims_tuple,
     "ConvDimensionNumbers(lhs_spec, rhs_spec, out_spec): convolution dimension numbers (lax)", 0},
    {"padtype_to_pads", bi_padtype_to_pads,
     "padtype_to_pads(in_shape, window_shape, window_strides, padding): 'SAME'/'VALID' as "
     "(low, high) pairs (lax)",
     0},
    {"reduce_window", bi_reduce_window,
     "reduce_window(operand, init_value, computation, window_dimensions, window_strides=None, "
     "padding='VALID', base_dilation=None, window_dilation=None): pooling with lax.add/max/min "
     "(lax)",
     0},
    {"convolve", bi_convolve,
     "convolve(a, v, mode='full'): discrete linear convolution of 1-d "
     "arrays",
     AX_BI_NP},
    {"correlate", bi_correlate, "correlate(a, v, mode='valid'): cross-correlation of 1-d arrays",
     AX_BI_NP},
    {NULL, NULL, NULL, 0},
};

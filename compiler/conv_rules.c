/* The rules of conv_general_dilated, reduce_window_{sum,max,min}, select_and_gather_add and
 * select_and_scatter_add (see conv_rules.h). */
#include "conv_rules.h"

#include <stdio.h>
#include <string.h>

#include "prim_rows.h"

/* The shape rule of a primitive (ax_shape_rule). */
#define SHAPE_RULE(name)                                                                           \
    static int shape_##name(ax_ctx *cx, int nin, const ax_aval *in, const ax_params *p,            \
                            ax_aval *out)

/* ---------------------------------------------------------------- parameters */

void ax_window_params_init(ax_params *p, int n) {
    memset(p, 0, sizeof *p);
    p->ndim = n;
    for (int d = 0; d < n; d++) {
        p->shape[d] = p->step[d] = 1;
        p->conv.lhs_dilation[d] = p->conv.rhs_dilation[d] = 1;
    }
}

void ax_conv_params_init(ax_params *p, int n) {
    ax_window_params_init(p, n);
    for (int d = 0; d < n; d++) p->conv.lhs_spec[d] = p->conv.rhs_spec[d] = p->conv.out_spec[d] = d;
    p->conv.feature_group_count = p->conv.batch_group_count = 1;
}

/* The window of the params over n dims (sizes: p->shape; a convolution sets them later). */
static void window_of(const ax_params *p, int n, ax_window *w) {
    memset(w, 0, sizeof *w);
    w->ndim = n;
    for (int d = 0; d < n; d++) {
        w->size[d] = p->shape[d];
        w->stride[d] = p->step[d];
        w->pad_lo[d] = p->lo[d];
        w->pad_hi[d] = p->hi[d];
        w->base_dilation[d] = p->conv.lhs_dilation[d];
        w->window_dilation[d] = p->conv.rhs_dilation[d];
    }
}

static int nspatial(const ax_params *p) {
    return p->ndim - 2;
}

/* ---------------------------------------------------------------- messages */

typedef struct {
    char s[400];
} text;

static text type_text(const ax_aval *a) {
    text t;
    ax_type_format(t.s, sizeof t.s, a->dtype, a->ndim, a->shape);
    return t;
}

static text ints_text(int n, const int *v) {
    text t;
    int64_t wide[AX_MAX_RANK];
    for (int i = 0; i < n && i < AX_MAX_RANK; i++) wide[i] = v[i];
    ax_shape_format(t.s, sizeof t.s, n < AX_MAX_RANK ? n : AX_MAX_RANK, wide);
    return t;
}

static text i64s_text(int n, const int64_t *v) {
    text t;
    ax_shape_format(t.s, sizeof t.s, n, v);
    return t;
}

#define TYPE(a)    type_text(a).s
#define INTS(n, v) ints_text(n, v).s
#define I64S(n, v) i64s_text(n, v).s
#define CONV       "conv_general_dilated"

/* Records an error about two arrays. */
static int fail2(ax_ctx *cx, ax_error_kind kind, const char *fmt, const ax_aval *a,
                 const ax_aval *b) {
    ax_error(cx, kind, fmt, TYPE(a), TYPE(b));
    return -1;
}

/* ---------------------------------------------------------------- shape rules */

static bool is_permutation(int n, const int *v) {
    bool seen[AX_MAX_RANK] = {0};
    for (int i = 0; i < n; i++) {
        if (v[i] < 0 || v[i] >= n || seen[v[i]]) return false;
        seen[v[i]] = true;
    }
    return true;
}

/* Window strides and dilations >= 1 over n dims (sizes >= 1 too when `sizes`). */
static int check_window_params(ax_ctx *cx, const char *name, const ax_params *p, int n,
                               bool sizes) {
    const char *bad = NULL;
    const int64_t *v = NULL;
    for (int d = 0; d < n && !bad; d++) {
        if (sizes && p->shape[d] < 1) bad = "window_dimensions", v = p->shape;
        if (p->step[d] < 1) bad = "window_strides", v = p->step;
        if (p->conv.lhs_dilation[d] < 1)
            bad = strcmp(name, CONV) ? "base_dilation" : "lhs_dilation", v = p->conv.lhs_dilation;
        if (p->conv.rhs_dilation[d] < 1)
            bad = strcmp(name, CONV) ? "window_dilation" : "rhs_dilation", v = p->conv.rhs_dilation;
    }
    if (!bad) return 0;
    ax_error(cx, AX_ERR_VALUE, "%s: %s must be positive integers, got %s", name, bad, I64S(n, v));
    return -1;
}

/* The output extent of each windowed dim; a ValueError when padding crops too much. */
static int window_extents(ax_ctx *cx, const char *name, const ax_window *w, const int64_t *in,
                          int64_t *out) {
    for (int d = 0; d < w->ndim; d++) {
        out[d] = ax_window_out_dim(w, d, in[d]);
        if (out[d] >= 0) continue;
        ax_error(cx, AX_ERR_VALUE,
                 "%s: negative padding (%lld, %lld) is larger than dimension %d of size %lld "
                 "(%lld after dilation)",
                 name, (long long)w->pad_lo[d], (long long)w->pad_hi[d], d, (long long)in[d],
                 (long long)ax_dilate_dim(in[d], w->base_dilation[d]));
        return -1;
    }
    return 0;
}

static int check_conv_specs(ax_ctx *cx, const ax_params *p, int n) {
    const ax_conv_dims *c = &p->conv;
    const int *specs[3] = {c->lhs_spec, c->rhs_spec, c->out_spec};
    static const char *names[3] = {"lhs_spec", "rhs_spec", "out_spec"};
    for (int i = 0; i < 3; i++) {
        if (is_permutation(n, specs[i])) continue;
        ax_error(cx, AX_ERR_VALUE,
                 CONV ": dimension_numbers %s %s is not a permutation of the %d "
                      "dimensions",
                 names[i], INTS(n, specs[i]), n);
        return -1;
    }
    return 0;
}

static int check_conv_groups(ax_ctx *cx, const ax_params *p, const ax_aval *l, const ax_aval *r) {
    const ax_conv_dims *c = &p->conv;
    int64_t fgc = c->feature_group_count, bgc = c->batch_group_count;
    int64_t batch = l->shape[c->lhs_spec[0]], feats = l->shape[c->lhs_spec[1]];
    int64_t kin = r->shape[c->rhs_spec[1]], kout = r->shape[c->rhs_spec[0]];
    if (fgc < 1 || bgc < 1) {
        ax_error(cx, AX_ERR_VALUE,
                 CONV ": feature_group_count (%lld) and batch_group_count (%lld) "
                      "must be positive",
                 (long long)fgc, (long long)bgc);
        return -1;
    }
    if (fgc > 1 && bgc > 1) {
        ax_error(cx, AX_ERR_VALUE,
                 CONV ": at most one of feature_group_count (%lld) and "
                      "batch_group_count (%lld) may be > 1",
                 (long long)fgc, (long long)bgc);
        return -1;
    }
    if (feats % fgc) {
        ax_error(cx, AX_ERR_VALUE,
                 CONV ": feature_group_count=%lld must divide the %lld input "
                      "features of lhs %s (its dimension %d)",
                 (long long)fgc, (long long)feats, TYPE(l), c->lhs_spec[1]);
        return -1;
    }
    if (feats / fgc != kin) {
        char per_group[120] = "";
        if (fgc > 1)
            snprintf(per_group, sizeof per_group, ", %lld per group with feature_group_count=%lld",
                     (long long)(feats / fgc), (long long)fgc);
        ax_error(cx, AX_ERR_SHAPE,
                 CONV ": lhs %s has %lld input features (dimension %d)%s, but "
                      "the kernel %s takes %lld (its dimension %d)",
                 TYPE(l), (long long)feats, c->lhs_spec[1], per_group, TYPE(r), (long long)kin,
                 c->rhs_spec[1]);
        return -1;
    }
    int64_t groups = fgc > 1 ? fgc : bgc;
    if (kout % groups) {
        ax_error(cx, AX_ERR_VALUE,
                 CONV ": the kernel's %lld output features (dimension %d of %s) "
                      "must be a multiple of %s=%lld",
                 (long long)kout, c->rhs_spec[0], TYPE(r),
                 fgc > 1 ? "feature_group_count" : "batch_group_count", (long long)groups);
        return -1;
    }
    if (batch % bgc) {
        ax_error(cx, AX_ERR_VALUE,
                 CONV ": batch_group_count=%lld must divide the batch of lhs %s "
                      "(%lld, dimension %d)",
                 (long long)bgc, TYPE(l), (long long)batch, c->lhs_spec[0]);
        return -1;
    }
    return 0;
}

/* The convolution's window (sizes from the kernel) and output shape; 0 or -1 with an error. */
static int conv_shape(ax_ctx *cx, const ax_params *p, const ax_aval *l, const ax_aval *r,
                      ax_window *w, int64_t *out) {
    const ax_conv_dims *c = &p->conv;
    int ns = nspatial(p);
    int64_t in[AX_MAX_RANK], sp[AX_MAX_RANK];
    window_of(p, ns, w);
    for (int d = 0; d < ns; d++) {
        w->size[d] = r->shape[c->rhs_spec[2 + d]];
        in[d] = l->shape[c->lhs_spec[2 + d]];
    }
    if (window_extents(cx, CONV, w, in, sp)) return -1;
    out[c->out_spec[0]] = l->shape[c->lhs_spec[0]] / c->batch_group_count;
    out[c->out_spec[1]] = r->shape[c->rhs_spec[0]];
    for (int d = 0; d < ns; d++) out[c->out_spec[2 + d]] = sp[d];
    return 0;
}

SHAPE_RULE(conv_general_dilated) {
    (void)nin;
    const ax_aval *l = &in[0], *r = &in[1];
    int n = p->ndim;
    if (l->dtype != r->dtype)
        return fail2(cx, AX_ERR_TYPE, CONV " requires lhs and rhs of one dtype, got %s and %s", l,
                     r);
    if (l->dtype == AX_BOOL)
        return fail2(cx, AX_ERR_TYPE, CONV " requires numeric arrays, got %s and %s", l, r);
    if (l->ndim != r->ndim || l->ndim != n || n < 2) {
        ax_error(cx, AX_ERR_SHAPE,
                 CONV ": lhs %s and rhs %s must both have rank %d (batch, "
                      "feature and %d spatial dimensions)",
                 TYPE(l), TYPE(r), n < 2 ? 2 : n, n < 2 ? 0 : n - 2);
        return -1;
    }
    ax_window w;
    if (check_conv_specs(cx, p, n) || check_window_params(cx, CONV, p, n - 2, false) ||
        check_conv_groups(cx, p, l, r) || conv_shape(cx, p, l, r, &w, out->shape))
        return -1;
    out->dtype = l->dtype;
    out->weak = l->weak && r->weak;
    out->ndim = n;
    return 0;
}

static int window_shape(ax_ctx *cx, const char *name, const ax_params *p, const ax_aval *x,
                        ax_aval *out) {
    if (p->ndim != x->ndim) {
        ax_error(cx, AX_ERR_SHAPE,
                 "%s: window_dimensions %s have %d entries for operand %s of "
                 "rank %d",
                 name, I64S(p->ndim, p->shape), p->ndim, TYPE(x), x->ndim);
        return -1;
    }
    ax_window w;
    window_of(p, x->ndim, &w);
    if (check_window_params(cx, name, p, x->ndim, true) ||
        window_extents(cx, name, &w, x->shape, out->shape))
        return -1;
    out->dtype = x->dtype;
    out->weak = x->weak;
    out->ndim = x->ndim;
    return 0;
}

SHAPE_RULE(reduce_window_sum) {
    (void)nin;
    if (in[0].dtype == AX_BOOL) {
        ax_error(cx, AX_ERR_TYPE, "reduce_window_sum requires a numeric operand, got %s",
                 TYPE(&in[0]));
        return -1;
    }
    return window_shape(cx, "reduce_window_sum", p, &in[0], out);
}

SHAPE_RULE(reduce_window_max) {
    (void)nin;
    return window_shape(cx, "reduce_window_max", p, &in[0], out);
}

SHAPE_RULE(reduce_window_min) {
    (void)nin;
    return window_shape(cx, "reduce_window_min", p, &in[0], out);
}

/* select_and_*: float operands of one dtype, the flag a known select. */
static int check_select(ax_ctx *cx, const char *name, const ax_params *p, const ax_aval *a,
                        const ax_aval *x) {
    if (!ax_dtype_is_float(a->dtype) || a->dtype != x->dtype) {
        ax_error(cx, AX_ERR_TYPE, "%s requires floating-point operands of one dtype, got %s and %s",
                 name, TYPE(a), TYPE(x));
        return -1;
    }
    if (p->flag != AX_SELECT_GE && p->flag != AX_SELECT_LE) {
        ax_error(cx, AX_ERR_VALUE, "%s: unknown select %d", name, p->flag);
        return -1;
    }
    return 0;
}

SHAPE_RULE(select_and_gather_add) {
    (void)nin;
    const char *name = "select_and_gather_add";
    if (check_select(cx, name, p, &in[0], &in[1])) return -1;
    if (!ax_shape_equal(in[0].ndim, in[0].shape, in[1].ndim, in[1].shape))
        return fail2(cx, AX_ERR_SHAPE,
                     "select_and_gather_add: tangents %s and operand %s must "
                     "have one shape",
                     &in[0], &in[1]);
    return window_shape(cx, name, p, &in[1], out);
}

SHAPE_RULE(select_and_scatter_add) {
    (void)nin;
    const char *name = "select_and_scatter_add";
    if (check_select(cx, name, p, &in[0], &in[1])) return -1;
    ax_aval windows;
    if (window_shape(cx, name, p, &in[1], &windows)) return -1;
    if (!ax_shape_equal(in[0].ndim, in[0].shape, windows.ndim, windows.shape)) {
        ax_error(cx, AX_ERR_SHAPE,
                 "select_and_scatter_add: source %s must have the shape of the "
                 "windows of operand %s, %s",
                 TYPE(&in[0]), TYPE(&in[1]), TYPE(&windows));
        return -1;
    }
    *out = in[1];
    out->weak = in[0].weak && in[1].weak;
    return 0;
}

/* ---------------------------------------------------------------- eager adapters */

AX_EAGER(conv_general_dilated) {
    (void)nin;
    ax_aval l, r;
    ax_aval_of(&l, in[0]);
    ax_aval_of(&r, in[1]);
    ax_conv_geometry g = {.feature_groups = p->conv.feature_group_count,
                          .batch_groups = p->conv.batch_group_count};
    int64_t out_shape[AX_MAX_RANK];
    if (conv_shape(cx, p, &l, &r, &g.win, out_shape)) return -1;
    memcpy(g.lhs_spec, p->conv.lhs_spec, sizeof g.lhs_spec);
    memcpy(g.rhs_spec, p->conv.rhs_spec, sizeof g.rhs_spec);
    memcpy(g.out_spec, p->conv.out_spec, sizeof g.out_spec);
    return ax_eager_one(ax_conv_general(cx, in[0], in[1], &g, out_shape), out);
}

static int eager_window(ax_ctx *cx, ax_window_op op, ax_array *x, const ax_params *p,
                        ax_array **out) {
    ax_window w;
    window_of(p, x->ndim, &w);
    return ax_eager_one(ax_reduce_window(cx, op, x, &w), out);
}

AX_EAGER(reduce_window_sum) {
    (void)nin;
    return eager_window(cx, AX_WINDOW_SUM, in[0], p, out);
}

AX_EAGER(reduce_window_max) {
    (void)nin;
    return eager_window(cx, AX_WINDOW_MAX, in[0], p, out);
}

AX_EAGER(reduce_window_min) {
    (void)nin;
    return eager_window(cx, AX_WINDOW_MIN, in[0], p, out);
}

AX_EAGER(select_and_gather_add) {
    (void)nin;
    ax_window w;
    window_of(p, in[1]->ndim, &w);
    return ax_eager_one(ax_select_and_gather_add(cx, in[0], in[1], p->flag == AX_SELECT_LE, &w),
                        out);
}

AX_EAGER(select_and_scatter_add) {
    (void)nin;
    ax_window w;
    window_of(p, in[1]->ndim, &w);
    return ax_eager_one(ax_select_and_scatter_add(cx, in[0], in[1], p->flag == AX_SELECT_LE, &w),
                        out);
}

/* ---------------------------------------------------------------- JVP */

static ax_array *conv(ax_scope *s, ax_array *l, ax_array *r, const ax_params *p) {
    return ax_lax_bind(s, AX_P_CONV_GENERAL_DILATED, 2, (ax_array *[]){l, r}, p);
}

/* The tangent rules (ax_tangent_rule). Integer windows carry no tangent. */
static ax_array *conv_general_dilated_tangent(ax_scope *s, const ax_params *p, ax_array **in,
                                              ax_array **tin, ax_array *out) {
    if (!ax_dtype_is_float(out->dtype)) return NULL;
    ax_array *a = tin[0] ? conv(s, tin[0], in[1], p) : NULL;
    ax_array *b = tin[1] ? conv(s, in[0], tin[1], p) : NULL;
    return a && b ? ax_lax_add(s, a, b) : a ? a : b;
}

/* A window's maximum (minimum) takes the tangent of the element it selects. */
static ax_array *selected_tangent(ax_scope *s, const ax_params *p, int select, ax_array **in,
                                  ax_array **tin, ax_array *out) {
    if (!ax_dtype_is_float(out->dtype)) return NULL;
    ax_params q = *p;
    q.flag = select;
    return ax_lax_bind(s, AX_P_SELECT_AND_GATHER_ADD, 2, (ax_array *[]){tin[0], in[0]}, &q);
}
static ax_array *reduce_window_max_tangent(ax_scope *s, const ax_params *p, ax_array **in,
                                           ax_array **tin, ax_array *out) {
    return selected_tangent(s, p, AX_SELECT_GE, in, tin, out);
}
static ax_array *reduce_window_min_tangent(ax_scope *s, const ax_params *p, ax_array **in,
                                           ax_array **tin, ax_array *out) {
    return selected_tangent(s, p, AX_SELECT_LE, in, tin, out);
}

/* Linear in operand 0; the operand they select by (if any) only picks positions. */
#define LINEAR_IN_FIRST_TANGENT(name, prim)                                                        \
    static ax_array *name##_tangent(ax_scope *s, const ax_params *p, ax_array **in,                \
                                    ax_array **tin, ax_array *out) {                               \
        if (!ax_dtype_is_float(out->dtype) || !tin[0]) return NULL;                                \
        int nin = ax_prim_get(prim)->nin;                                                          \
        ax_array *args[2] = {tin[0], nin > 1 ? in[1] : NULL};                                      \
        return ax_lax_bind(s, prim, nin, args, p);                                                 \
    }
LINEAR_IN_FIRST_TANGENT(reduce_window_sum, AX_P_REDUCE_WINDOW_SUM)
LINEAR_IN_FIRST_TANGENT(select_and_gather_add, AX_P_SELECT_AND_GATHER_ADD)
LINEAR_IN_FIRST_TANGENT(select_and_scatter_add, AX_P_SELECT_AND_SCATTER_ADD)

/* ---------------------------------------------------------------- reshapes for groups */

/* Dim src of x merged into dim dst (numbered with src removed) as its major part: JAX's
 * _reshape_axis_into. */
static ax_array *axis_into(ax_scope *s, int src, int dst, ax_array *x) {
    if (!x) return NULL;
    int perm[AX_MAX_RANK], n = 0;
    int64_t shape[AX_MAX_RANK];
    for (int i = 0; i < x->ndim; i++)
        if (i != src) perm[n] = i, shape[n++] = x->shape[i];
    memmove(perm + dst + 1, perm + dst, (size_t)(n - dst) * sizeof *perm);
    perm[dst] = src;
    shape[dst] *= x->shape[src];
    return ax_lax_reshape(s, ax_lax_transpose(s, x, perm), n, shape);
}

/* Dim src of x split into (size1, rest): JAX's _reshape_axis_out_of. */
static ax_array *axis_out_of(ax_scope *s, int src, int64_t size1, ax_array *x) {
    if (!x) return NULL;
    int64_t shape[AX_MAX_RANK];
    int n = 0;
    for (int i = 0; i < x->ndim; i++) {
        if (i == src)
            shape[n++] = size1, shape[n++] = size1 ? x->shape[i] / size1 : 0;
        else
            shape[n++] = x->shape[i];
    }
    return ax_lax_reshape(s, x, n, shape);
}

/* ---------------------------------------------------------------- transposes */

/* A spec with its first two entries swapped (batch <-> feature, out <-> in feature). */
static void swap_spec(int n, const int *spec, int *out) {
    memcpy(out, spec, (size_t)n * sizeof *out);
    out[0] = spec[1];
    out[1] = spec[0];
}

typedef struct spatial_sizes {
    int64_t in[AX_MAX_RANK], win[AX_MAX_RANK], out[AX_MAX_RANK];
} spatial_sizes;

static void sizes_of(const ax_params *p, const ax_aval *l, const ax_aval *r, const ax_aval *o,
                     spatial_sizes *z) {
    for (int d = 0; d < nspatial(p); d++) {
        z->in[d] = l->shape[p->conv.lhs_spec[2 + d]];
        z->win[d] = r->shape[p->conv.rhs_spec[2 + d]];
        z->out[d] = o->shape[p->conv.out_spec[2 + d]];
    }
}

/* The convolution giving the lhs cotangent: the output cotangent convolved with the kernel,
 * reversed and with its feature dims swapped (groups moved along), strides and lhs dilation
 * trading places. */
static ax_array *conv_transpose_lhs(ax_scope *s, const ax_params *p, ax_array *ct, ax_array *rhs,
                                    const ax_aval *lhs_t) {
    const ax_conv_dims *c = &p->conv;
    int n = p->ndim, ns = n - 2;
    int64_t fgc = c->feature_group_count, bgc = c->batch_group_count;
    ax_aval rt, ot;
    ax_aval_of(&rt, rhs);
    ax_aval_of(&ot, ct);
    spatial_sizes z;
    sizes_of(p, lhs_t, &rt, &ot, &z);
    if (fgc > 1 || bgc > 1) {
        rhs = axis_out_of(s, c->rhs_spec[0], fgc > 1 ? fgc : bgc, rhs);
        rhs = axis_into(s, c->rhs_spec[0], c->rhs_spec[1], rhs);
    }
    ax_params q = *p;
    memcpy(q.conv.lhs_spec, c->out_spec, sizeof q.conv.lhs_spec);
    swap_spec(n, c->rhs_spec, q.conv.rhs_spec);
    memcpy(q.conv.out_spec, c->lhs_spec, sizeof q.conv.out_spec);
    q.conv.feature_group_count = fgc > 1 ? fgc : bgc;
    q.conv.batch_group_count = 1;
    for (int d = 0; d < ns; d++) {
        int64_t ld = ax_dilate_dim(z.in[d], c->lhs_dilation[d]);
        int64_t rd = ax_dilate_dim(z.win[d], c->rhs_dilation[d]);
        int64_t od = ax_dilate_dim(z.out[d], p->step[d]);
        q.lo[d] = rd - p->lo[d] - 1;
        q.hi[d] = ld + rd - 1 - od - q.lo[d];
        q.step[d] = c->lhs_dilation[d];
        q.conv.lhs_dilation[d] = p->step[d];
    }
    ax_params rev = {.naxes = ns};
    for (int d = 0; d < ns; d++) rev.axes[d] = c->rhs_spec[2 + d];
    ax_array *out = conv(s, ct, ax_lax_bind(s, AX_P_REV, 1, &rhs, &rev), &q);
    if (bgc > 1) {
        out = axis_out_of(s, c->lhs_spec[1], bgc, out);
        out = axis_into(s, c->lhs_spec[1], c->lhs_spec[0], out);
    }
    return out;
}

/* The convolution giving the kernel cotangent: the lhs convolved with the output cotangent,
 * batch and feature dims swapped (feature groups become batch groups and back), strides and
 * rhs dilation trading places. */
static ax_array *conv_transpose_rhs(ax_scope *s, const ax_params *p, ax_array *ct, ax_array *lhs,
                                    const ax_aval *rhs_t) {
    const ax_conv_dims *c = &p->conv;
    int n = p->ndim, ns = n - 2;
    if (ct->size == 0) return ax_lax_full_aval(s, rhs_t, 0.0);
    ax_aval lt, ot;
    ax_aval_of(&lt, lhs);
    ax_aval_of(&ot, ct);
    spatial_sizes z;
    sizes_of(p, &lt, rhs_t, &ot, &z);
    ax_params q = *p;
    swap_spec(n, c->lhs_spec, q.conv.lhs_spec);
    swap_spec(n, c->out_spec, q.conv.rhs_spec);
    swap_spec(n, c->rhs_spec, q.conv.out_spec);
    q.conv.feature_group_count = c->batch_group_count;
    q.conv.batch_group_count = c->feature_group_count;
    for (int d = 0; d < ns; d++) {
        int64_t ld = ax_dilate_dim(z.in[d], c->lhs_dilation[d]);
        int64_t rd = ax_dilate_dim(z.win[d], c->rhs_dilation[d]);
        int64_t od = ax_dilate_dim(z.out[d], p->step[d]);
        q.hi[d] = (od - ld) + (rd - p->lo[d] - 1);
        q.step[d] = c->rhs_dilation[d];
        q.conv.rhs_dilation[d] = p->step[d];
    }
    return conv(s, lhs, ct, &q);
}

/* reduce_window_sum's transpose: the cotangent spread back over each window: padded by the
 * strides, summed over windows again (JAX's rule). */
static ax_array *window_sum_transpose(ax_scope *s, const ax_params *p, ax_array *ct,
                                      const ax_aval *x) {
    int n = p->ndim;
    ax_params pad = {.ndim = n}, q;
    ax_window_params_init(&q, n);
    for (int d = 0; d < n; d++) {
        int64_t ld = ax_dilate_dim(x->shape[d], p->conv.lhs_dilation[d]);
        int64_t rd = ax_dilate_dim(p->shape[d], p->conv.rhs_dilation[d]);
        int64_t od = ax_dilate_dim(ct->shape[d], p->step[d]);
        pad.lo[d] = rd - p->lo[d] - 1;
        pad.hi[d] = ld + rd - 1 - od - pad.lo[d];
        pad.step[d] = p->step[d] - 1;
        q.shape[d] = p->shape[d];
        q.step[d] = p->conv.lhs_dilation[d];
        q.conv.rhs_dilation[d] = p->conv.rhs_dilation[d];
    }
    ax_array *zero = ax_lax_scalar_like(s, ct, 0.0);
    ax_array *padded = ax_lax_bind(s, AX_P_PAD, 2, (ax_array *[]){ct, zero}, &pad);
    return ax_lax_bind(s, AX_P_REDUCE_WINDOW_SUM, 1, &padded, &q);
}

/* A cotangent made for operand i, checked against its type. */
static int cotangent_for(ax_scope *s, const char *name, int i, const ax_aval *ty, ax_array *r,
                         ax_array **out) {
    if (r && !ax_shape_equal(r->ndim, r->shape, ty[i].ndim, ty[i].shape)) {
        char got[200], want[200];
        ax_array_type_format(got, sizeof got, r);
        ax_type_format(want, sizeof want, ty[i].dtype, ty[i].ndim, ty[i].shape);
        ax_error(s->cx, AX_ERR_RUNTIME,
                 "internal error: %s's transpose gave %s for operand %d of type %s", name, got, i,
                 want);
        r = NULL;
    }
    out[i] = r;
    return r ? 0 : -1;
}

/* The cotangent rules (ax_cotangent_rule). The convolution is bilinear, linear in one operand
 * at a time. */
static int conv_general_dilated_cotangent(ax_scope *s, const ax_params *p, int nin, ax_array **in,
                                          const bool *lin, const ax_aval *ty, ax_array *ct,
                                          ax_array **r) {
    (void)nin;
    if (lin[0] && lin[1]) {
        ax_error(s->cx, AX_ERR_RUNTIME, "conv_general_dilated is linear in one operand at a time");
        return -1;
    }
    if (lin[0])
        return cotangent_for(s, CONV, 0, ty, conv_transpose_lhs(s, p, ct, in[1], &ty[0]), r);
    return cotangent_for(s, CONV, 1, ty, conv_transpose_rhs(s, p, ct, in[0], &ty[1]), r);
}

static int reduce_window_sum_cotangent(ax_scope *s, const ax_params *p, int nin, ax_array **in,
                                       const bool *lin, const ax_aval *ty, ax_array *ct,
                                       ax_array **r) {
    (void)nin, (void)in, (void)lin;
    return cotangent_for(s, "reduce_window_sum", 0, ty, window_sum_transpose(s, p, ct, &ty[0]), r);
}

/* select_and_gather_add and select_and_scatter_add transpose into each other (in the
 * tangents / source they move; the operand only picks positions). */
static int select_transpose(ax_scope *s, ax_prim prim, ax_prim to, const ax_params *p,
                            ax_array **in, const bool *lin, const ax_aval *ty, ax_array *ct,
                            ax_array **r) {
    const char *name = ax_prim_get(prim)->name;
    if (lin[1]) {
        ax_error(s->cx, AX_ERR_RUNTIME, "%s is not linear in the operand it selects by", name);
        return -1;
    }
    return cotangent_for(s, name, 0, ty, ax_lax_bind(s, to, 2, (ax_array *[]){ct, in[1]}, p), r);
}
static int select_and_gather_add_cotangent(ax_scope *s, const ax_params *p, int nin, ax_array **in,
                                           const bool *lin, const ax_aval *ty, ax_array *ct,
                                           ax_array **r) {
    (void)nin;
    return select_transpose(s, AX_P_SELECT_AND_GATHER_ADD, AX_P_SELECT_AND_SCATTER_ADD, p, in, lin,
                            ty, ct, r);
}
static int select_and_scatter_add_cotangent(ax_scope *s, const ax_params *p, int nin, ax_array **in,
                                            const bool *lin, const ax_aval *ty, ax_array *ct,
                                            ax_array **r) {
    (void)nin;
    return select_transpose(s, AX_P_SELECT_AND_SCATTER_ADD, AX_P_SELECT_AND_GATHER_ADD, p, in, lin,
                            ty, ct, r);
}

/* ---------------------------------------------------------------- batching */

static int done1(ax_scope *s, ax_array *r, int bdim, ax_array **out, int *out_bdim) {
    out[0] = r ? ax_scope_keep(s, r) : NULL;
    out_bdim[0] = bdim;
    ax_scope_end(s);
    return out[0] ? 0 : -1;
}

/* JAX's _conv_general_dilated_batch_rule: the vmapped dimension joins the batch dimension (a
 * batched lhs), the out features (a batched kernel) or the feature groups (both). */
static int batch_conv(ax_ctx *cx, ax_prim prim, const ax_params *p, int nin, ax_array **in,
                      const int *bdim, int64_t size, ax_array **out, int *out_bdim) {
    (void)prim, (void)nin;
    const ax_conv_dims *c = &p->conv;
    int lb = bdim[0], rb = bdim[1];
    ax_array *l = in[0], *r = in[1];
    ax_params q = *p;
    int64_t fgc = c->feature_group_count, bgc = c->batch_group_count;
    ax_scope s;
    ax_scope_begin(&s, cx);
    if (lb >= 0 && rb >= 0) {
        if (bgc > 1) {
            l = axis_into(&s, lb, c->lhs_spec[0], l);
            q.conv.batch_group_count = bgc * size;
        } else {
            l = axis_into(&s, lb, c->lhs_spec[1], l);
            q.conv.feature_group_count = fgc * size;
        }
        r = axis_into(&s, rb, c->rhs_spec[0], r);
        ax_array *o = axis_out_of(&s, c->out_spec[1], size, conv(&s, l, r, &q));
        return done1(&s, o, c->out_spec[1], out, out_bdim);
    }
    if (lb >= 0) {
        if (bgc == 1) {
            l = axis_into(&s, lb, c->lhs_spec[0], l);
        } else {
            int at = c->lhs_spec[0];
            l = axis_out_of(&s, at + (lb <= at), bgc, l);
            l = axis_into(&s, lb + (at < lb), at + 1, l);
            l = axis_into(&s, at, at, l);
        }
        ax_array *o = axis_out_of(&s, c->out_spec[0], size, conv(&s, l, r, &q));
        return done1(&s, o, c->out_spec[0], out, out_bdim);
    }
    int at = c->rhs_spec[0], of = c->out_spec[1];
    if (fgc == 1 && bgc == 1) {
        r = axis_into(&s, rb, at, r);
        return done1(&s, axis_out_of(&s, of, size, conv(&s, l, r, &q)), of, out, out_bdim);
    }
    int64_t groups = fgc > 1 ? fgc : bgc;
    r = axis_out_of(&s, at + (rb <= at), groups, r);
    r = axis_into(&s, rb + (at < rb), at + 1, r);
    r = axis_into(&s, at, at, r);
    ax_array *o = axis_out_of(&s, of, groups, conv(&s, l, r, &q));
    o = axis_out_of(&s, of + 1, size, o);
    return done1(&s, axis_into(&s, of, of + 1, o), of, out, out_bdim);
}

/* Params with a window dim of 1 inserted at `at` (no stride, padding or dilation there). */
static ax_params with_unit_dim(const ax_params *p, int at) {
    ax_params q = *p;
    q.ndim = p->ndim + 1;
    for (int d = q.ndim - 1; d >= 0; d--) {
        int src = d > at ? d - 1 : d;
        bool unit = d == at;
        q.shape[d] = unit ? 1 : p->shape[src];
        q.step[d] = unit ? 1 : p->step[src];
        q.lo[d] = unit ? 0 : p->lo[src];
        q.hi[d] = unit ? 0 : p->hi[src];
        q.conv.lhs_dilation[d] = unit ? 1 : p->conv.lhs_dilation[src];
        q.conv.rhs_dilation[d] = unit ? 1 : p->conv.rhs_dilation[src];
    }
    return q;
}

static int batch_window(ax_ctx *cx, ax_prim prim, const ax_params *p, int nin, ax_array **in,
                        const int *bdim, int64_t size, ax_array **out, int *out_bdim) {
    ax_scope s;
    ax_scope_begin(&s, cx);
    if (nin == 1) {
        ax_params q = with_unit_dim(p, bdim[0]);
        return done1(&s, ax_lax_bind(&s, prim, 1, in, &q), bdim[0], out, out_bdim);
    }
    ax_array *args[2] = {ax_batch_first(&s, in[0], bdim[0], size),
                         ax_batch_first(&s, in[1], bdim[1], size)};
    ax_params q = with_unit_dim(p, 0);
    return done1(&s, ax_lax_bind(&s, prim, 2, args, &q), 0, out, out_bdim);
}

/* ---------------------------------------------------------------- printing */

static void append_tuple(ax_strbuf *s, int n, const int64_t *v) {
    char buf[400];
    ax_shape_format(buf, sizeof buf, n, v);
    ax_strbuf_append(s, buf);
}

static void append_spec(ax_strbuf *s, int n, const int *spec) {
    ax_strbuf_append(s, INTS(n, spec));
}

static void append_padding(ax_strbuf *s, int n, const int64_t *lo, const int64_t *hi) {
    ax_strbuf_append(s, "(");
    for (int d = 0; d < n; d++)
        ax_strbuf_appendf(s, "%s(%lld, %lld)", d ? ", " : "", (long long)lo[d], (long long)hi[d]);
    ax_strbuf_append(s, n == 1 ? ",)" : ")");
}

static void format_conv(ax_strbuf *s, const ax_params *p) {
    const ax_conv_dims *c = &p->conv;
    int n = p->ndim, ns = n - 2;
    ax_strbuf_appendf(s, "[batch_group_count=%lld dimension_numbers=ConvDimensionNumbers(lhs_spec=",
                      (long long)c->batch_group_count);
    append_spec(s, n, c->lhs_spec);
    ax_strbuf_append(s, ", rhs_spec=");
    append_spec(s, n, c->rhs_spec);
    ax_strbuf_append(s, ", out_spec=");
    append_spec(s, n, c->out_spec);
    ax_strbuf_appendf(
        s, ") feature_group_count=%lld lhs_dilation=", (long long)c->feature_group_count);
    append_tuple(s, ns, c->lhs_dilation);
    ax_strbuf_append(s, " padding=");
    append_padding(s, ns, p->lo, p->hi);
    ax_strbuf_append(s, " precision=None preferred_element_type=None rhs_dilation=");
    append_tuple(s, ns, c->rhs_dilation);
    ax_strbuf_append(s, " window_strides=");
    append_tuple(s, ns, p->step);
    ax_strbuf_append(s, "]");
}

/* The windowed reductions' parameters; `select`: select_and_{gather,scatter}_add's too. */
static void format_window(ax_strbuf *s, const ax_params *p, bool select) {
    int n = p->ndim;
    ax_strbuf_append(s, "[base_dilation=");
    append_tuple(s, n, p->conv.lhs_dilation);
    ax_strbuf_append(s, " padding=");
    append_padding(s, n, p->lo, p->hi);
    if (select) ax_strbuf_appendf(s, " select_prim=%s", p->flag == AX_SELECT_LE ? "le" : "ge");
    ax_strbuf_append(s, " window_dilation=");
    append_tuple(s, n, p->conv.rhs_dilation);
    ax_strbuf_append(s, " window_dimensions=");
    append_tuple(s, n, p->shape);
    ax_strbuf_append(s, " window_strides=");
    append_tuple(s, n, p->step);
    ax_strbuf_append(s, "]");
}

static void format_reduce_window(ax_strbuf *s, const ax_params *p) {
    format_window(s, p, false);
}

static void format_select_window(ax_strbuf *s, const ax_params *p) {
    format_window(s, p, true);
}

/* ---------------------------------------------------------------- the table's rows */

#define WINDOW_ROW(NAME, NIN, FLAGS, BATCH, FORMAT, ...)                                           \
    const ax_prim_info ax_##NAME##_info = {.name = #NAME,                                          \
                                           .nin = NIN,                                             \
                                           .nout = 1,                                              \
                                           .flags = FLAGS,                                         \
                                           .shape = shape_##NAME,                                  \
                                           .eager = eager_##NAME,                                  \
                                           .jvp = ax_jvp_tangent,                                  \
                                           .tangent = NAME##_tangent,                              \
                                           .batch = BATCH,                                         \
                                           .format_params = FORMAT,                                \
                                           .lower = AX_LOWER_EAGER,                                \
                                           __VA_ARGS__}
#define LINEAR(NAME) .transpose = ax_transpose_linear, .cotangent = NAME##_cotangent

/* Examples' parameters: a convolution's dimension numbers (lhs, rhs and out specs) and groups
 * ((feature, batch) group counts), then the spatial dims' strides, padding and dilations
 * (base = lhs, window = rhs); a window's dims, strides, padding and dilations. */
#define ONES                                                                                       \
    { 1, 1, 1, 1, 1 }
#define CONV_PARAMS(n, lhs, rhs, out, groups, strides, lo_, hi_, base, wdil)                       \
    {                                                                                              \
        .ndim = n, .step = {AX_LIST strides}, .lo = {AX_LIST lo_}, .hi = {AX_LIST hi_}, .conv = {  \
            .lhs_spec = {AX_LIST lhs},                                                             \
            .rhs_spec = {AX_LIST rhs},                                                             \
            .out_spec = {AX_LIST out},                                                             \
            .lhs_dilation = {AX_LIST base},                                                        \
            .rhs_dilation = {AX_LIST wdil},                                                        \
            .feature_group_count = AX_FIRST groups,                                                \
            .batch_group_count = AX_SECOND groups                                                  \
        }                                                                                          \
    }
#define WINDOW_PARAMS(n, dims, strides, lo_, hi_, base, wdil, select)                              \
    {                                                                                              \
        .ndim = n, .shape = {AX_LIST dims}, .step = {AX_LIST strides}, .lo = {AX_LIST lo_},        \
        .hi = {AX_LIST hi_}, .flag = select, .conv = {                                             \
            .lhs_dilation = {AX_LIST base},                                                        \
            .rhs_dilation = {AX_LIST wdil}                                                         \
        }                                                                                          \
    }
#define AX_FIRST(a, b)  a
#define AX_SECOND(a, b) b
#define NCW             (0, 1, 2)

WINDOW_ROW(conv_general_dilated, 2, LIN, batch_conv, format_conv, LINEAR(conv_general_dilated),
           AX_EXAMPLES(
               /* 1-d NCW: strided, padded, rhs-dilated */
               {.nin = 2,
                .in = {AX_FLOATS(-2, 2, 2, 2, 5), AX_FLOATS(-2, 2, 3, 2, 2)},
                .p = CONV_PARAMS(3, NCW, NCW, NCW, (1, 1), (2), (1), (0), (1), (2))},
               /* 2-d NHWC / HWIO with lhs dilation and uneven padding */
               {.nin = 2,
                .in = {AX_FLOATS(-2, 2, 1, 4, 3, 2), AX_FLOATS(-2, 2, 2, 2, 2, 3)},
                .p = CONV_PARAMS(4, (0, 3, 1, 2), (3, 2, 0, 1), (0, 3, 1, 2), (1, 1), (1, 2),
                                 (1, 0), (1, 1), (2, 1), (1, 1))},
               /* feature groups, batch groups */
               {.nin = 2,
                .in = {AX_FLOATS(-2, 2, 1, 4, 4), AX_FLOATS(-2, 2, 4, 2, 3)},
                .p = CONV_PARAMS(3, NCW, NCW, NCW, (2, 1), (1), (1), (1), (1), (1))},
               {.nin = 2,
                .in = {AX_FLOATS(-2, 2, 4, 2, 4), AX_FLOATS(-2, 2, 4, 2, 2)},
                .p = CONV_PARAMS(3, NCW, NCW, NCW, (1, 2), (1), (0), (0), (1), (1))},
               /* 2-d NCHW, feature groups */
               {.nin = 2,
                .in = {AX_FLOATS(-2, 2, 1, 4, 3, 3), AX_FLOATS(-2, 2, 4, 2, 2, 2)},
                .p = CONV_PARAMS(4, (0, 1, 2, 3), (0, 1, 2, 3), (0, 1, 2, 3), (2, 1), (1, 1),
                                 (1, 0), (0, 1), (1, 1), (1, 1))},
               /* 3-d, negative padding */
               {.nin = 2,
                .in = {AX_FLOATS(-2, 2, 1, 1, 3, 4, 3), AX_FLOATS(-2, 2, 2, 1, 2, 2, 2)},
                .p = CONV_PARAMS(5, (0, 1, 2, 3, 4), (0, 1, 2, 3, 4), (0, 1, 4, 3, 2), (1, 1),
                                 (1, 2, 1), (0, -1, 1), (1, 0, 0), (1, 1, 1), (1, 1, 1))}));
WINDOW_ROW(reduce_window_sum, 1, LIN, batch_window, format_reduce_window, LINEAR(reduce_window_sum),
           AX_EXAMPLES({.nin = 1,
                        .in = {AX_FLOATS(-2, 2, 3, 4)},
                        .p = WINDOW_PARAMS(2, (2, 2), (1, 2), (1, 0), (0, 1), (2, 1), (1, 1), 0)}));
WINDOW_ROW(reduce_window_max, 1, 0, batch_window, format_reduce_window,
           AX_EXAMPLES({.nin = 1,
                        .in = {AX_FLOATS(-2, 2, 4, 5)},
                        .p = WINDOW_PARAMS(2, (2, 3), (2, 1), (0, 1), (1, 0), (1, 1), (1, 2), 0)}));
WINDOW_ROW(reduce_window_min, 1, 0, batch_window, format_reduce_window,
           AX_EXAMPLES({.nin = 1,
                        .in = {AX_FLOATS(-2, 2, 4, 5)},
                        .p = WINDOW_PARAMS(2, (2, 2), (1, 2), (1, 1), (0, 0), (1, 1), (1, 1), 0)}));
/* linear in operand 0 (tangents / source); operand 1 only picks positions */
WINDOW_ROW(select_and_gather_add, 2, LIN, batch_window, format_select_window,
           LINEAR(select_and_gather_add), .linear_in = 1,
           AX_EXAMPLES({.nin = 2,
                        .in = {AX_FLOATS(-2, 2, 4, 5), AX_FLOATS(-2, 2, 4, 5)},
                        .p = WINDOW_PARAMS(2, (2, 2), (2, 1), (1, 0), (0, 1), (1, 1), (1, 1),
                                           AX_SELECT_GE)}));
WINDOW_ROW(select_and_scatter_add, 2, LIN, batch_window, format_select_window,
           LINEAR(select_and_scatter_add), .linear_in = 1,
           AX_EXAMPLES({.nin = 2,
                        .in = {AX_FLOATS(-2, 2, 2, 5), AX_FLOATS(-2, 2, 4, 5)},
                        .p = WINDOW_PARAMS(2, (2, 2), (2, 1), (1, 0), (0, 1), (1, 1), (1, 1),
                                           AX_SELECT_LE)}));

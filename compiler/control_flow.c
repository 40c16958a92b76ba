/* cond, while and scan: every rule of each (see control_flow.h). */
#include "control_flow.h"

#include <stdlib.h>
#include <string.h>

#include "ad.h"
#include "ad_rules.h"
#include "ir.h"
#include "lax.h"
#include "passes.h"
#include "trace.h"
#include "trace_ir.h"
#include "vmap.h"

/* ---------------------------------------------------------------- shared helpers */

/* n zeroed elements (room for one more, so n may be 0); NULL with a MemoryError. */
static void *alloc0(ax_ctx *cx, size_t n, size_t size) {
    void *p = calloc(n + 1, size);
    if (!p) ax_error_oom(cx);
    return p;
}

static void release_n(int n, ax_array **a) {
    for (int i = 0; a && i < n; i++) {
        ax_array_release(a[i]);
        a[i] = NULL;
    }
}

static void release_irs(int n, ax_ir **irs) {
    for (int i = 0; irs && i < n; i++) ax_ir_release(irs[i]);
    free(irs);
}

static int internal(ax_ctx *cx, const char *what) {
    ax_error(cx, AX_ERR_RUNTIME, "internal error: %s", what);
    return -1;
}

static bool same_type(const ax_aval *a, const ax_aval *b) {
    return a->dtype == b->dtype && ax_shape_equal(a->ndim, a->shape, b->ndim, b->shape);
}

static int count(int n, const bool *m) {
    int k = 0;
    for (int i = 0; i < n; i++) k += m[i];
    return k;
}

/* p with other sub-programs. */
static ax_params with_subs(const ax_params *p, int nsub, ax_ir *const *sub) {
    ax_params q = *p;
    q.nsub = nsub;
    q.sub = (struct ax_ir *const *)sub;
    return q;
}

/* A zero of type t (a broadcast scalar), strongly typed. */
static ax_array *zeros_of(ax_ctx *cx, const ax_aval *t) {
    ax_scope s;
    ax_scope_begin(&s, cx);
    ax_aval strong = *t;
    strong.weak = false;
    ax_array *z = ax_lax_full_aval(&s, &strong, 0.0);
    z = z ? ax_scope_keep(&s, z) : NULL;
    ax_scope_end(&s);
    return z;
}

/* x with its batch dimension `bdim` (-1: none) at 0, or broadcast to `size` examples when
 * `broadcast` (else returned as it is). A new reference. */
static ax_array *batch_at(ax_ctx *cx, ax_array *x, int bdim, int to, int64_t size, bool broadcast) {
    if (bdim < 0 && !broadcast) return ax_array_retain(x);
    return ax_vmap_place_take(cx, ax_array_retain(x), bdim, size, to);
}

/* The concrete integer in a rank-0 array, clamped into [0, n). */
static int branch_index(const ax_array *index, int n) {
    int64_t k = ax_array_get_i64(index, 0);
    return k < 0 ? 0 : k >= n ? n - 1 : (int)k;
}

/* A flat function that evaluates an IR and keeps some of its outputs or adds others: the way
 * the rules below assemble a sub-program from the passes' results. */
typedef struct assembly assembly;
typedef int (*assembly_fn)(ax_ctx *cx, const assembly *a, ax_array **in, ax_array **out);
struct assembly {
    assembly_fn fn;
    int nout;
    const ax_ir *ir, *ir2;
    int k, n1, n2, n3;
    const int *counts;
    const ax_aval *types;
};

static int assembly_flat(ax_ctx *cx, void *closure, int nin, ax_array **in, int *nout,
                         ax_array ***out) {
    const assembly *a = closure;
    (void)nin;
    *out = alloc0(cx, (size_t)a->nout, sizeof **out);
    if (!*out) return -1;
    *nout = a->nout;
    if (a->fn(cx, a, in, *out) == 0) return 0;
    release_n(a->nout, *out);
    free(*out);
    *out = NULL;
    return -1;
}

/* Traces an assembly on input types `types` (nin of them). */
static ax_ir *assemble(ax_ctx *cx, const assembly *a, int nin, const ax_aval *types) {
    int nout = 0;
    return ax_trace_to_ir(cx, assembly_flat, (void *)a, nin, types, &nout);
}

/* ================================================================ cond */
/* (index, operands...): branch sub[clamp(index, 0, nsub - 1)] applied to the operands. */

static int cond_nout(const ax_params *p) {
    return p->sub[0]->nout;
}

static int cond_shape(ax_ctx *cx, int nin, const ax_aval *in, const ax_params *p, ax_aval *out) {
    if (p->nsub < 1 || nin < 1) return internal(cx, "cond needs an index and a branch");
    if (in[0].ndim != 0 || !(ax_dtype_is_int(in[0].dtype) || in[0].dtype == AX_BOOL)) {
        char t[64];
        ax_type_format(t, sizeof t, in[0].dtype, in[0].ndim, in[0].shape);
        return ax_error(cx, AX_ERR_TYPE, "cond: the index must be an integer scalar, not %s", t),
               -1;
    }
    const ax_ir *b0 = p->sub[0];
    for (int j = 0; j < b0->nout; j++) ax_ir_out_type(b0, j, &out[j]);
    for (int k = 0; k < p->nsub; k++) {
        const ax_ir *b = p->sub[k];
        if (b->nin != nin - 1 || b->nout != b0->nout)
            return internal(cx, "cond: a branch's arity differs from the operands");
        for (int i = 0; i < b->nin; i++) {
            ax_aval t;
            ax_ir_in_type(b, i, &t);
            if (!same_type(&t, &in[i + 1]))
                return internal(cx, "cond: a branch's input type differs from its operand's");
        }
        for (int j = 0; j < b->nout; j++) {
            ax_aval t;
            ax_ir_out_type(b, j, &t);
            if (!same_type(&t, &out[j]))
                return internal(cx, "cond: the branches' output types differ");
            out[j].weak &= t.weak;
        }
    }
    return 0;
}

static int cond_eager(ax_ctx *cx, int nin, ax_array **in, const ax_params *p, ax_array **out) {
    (void)nin;
    return ax_ir_eval(cx, p->sub[branch_index(in[0], p->nsub)], in + 1, out);
}

/* The JVP of each branch, with the same tangent outputs in all (the union, zeros filled in):
 * jb[k] gets branch k's; nonzero_out the outputs with tangents. */
static int jvp_branches(ax_ctx *cx, const ax_params *p, const bool *nonzero_in, bool *nonzero_out,
                        ax_ir **jb) {
    int nout = p->sub[0]->nout;
    bool *one = alloc0(cx, (size_t)nout, sizeof *one);
    if (!one) return -1;
    for (int j = 0; j < nout; j++) nonzero_out[j] = false;
    for (int k = 0; k < p->nsub && p->nsub > 1; k++) {
        ax_ir *ir = ax_pass_jvp(cx, p->sub[k], nonzero_in, NULL, one);
        if (!ir) goto fail;
        ax_ir_release(ir);
        for (int j = 0; j < nout; j++) nonzero_out[j] |= one[j];
    }
    for (int k = 0; k < p->nsub; k++) {
        jb[k] = ax_pass_jvp(cx, p->sub[k], nonzero_in, p->nsub > 1 ? nonzero_out : NULL, one);
        if (!jb[k]) goto fail;
        if (p->nsub == 1) memcpy(nonzero_out, one, (size_t)nout * sizeof *one);
    }
    free(one);
    return 0;
fail:
    free(one);
    return -1;
}

static int cond_jvp(ax_ctx *cx, ax_prim prim, const ax_params *p, int nin, ax_array **in,
                    ax_array **tin, ax_array **out, ax_array **tout) {
    int nops = nin - 1, nout = p->sub[0]->nout, nb = p->nsub;
    bool *nz = alloc0(cx, (size_t)nops + (size_t)nout, sizeof *nz), *nzo = nz ? nz + nops : NULL;
    ax_ir **jb = alloc0(cx, (size_t)nb, sizeof *jb);
    ax_array **args = alloc0(cx, 2 * (size_t)nin + 2 * (size_t)nout, sizeof *args);
    int rc = nz && jb && args ? 0 : -1;
    for (int i = 0; i < nops && !rc; i++) nz[i] = tin[i + 1] != NULL;
    if (!rc) rc = jvp_branches(cx, p, nz, nzo, jb);
    if (!rc) {
        int n = 0;
        for (int i = 0; i < nin; i++) args[n++] = in[i];
        for (int i = 0; i < nops; i++)
            if (nz[i]) args[n++] = tin[i + 1];
        ax_array **res = args + n;
        ax_params q = with_subs(p, nb, jb);
        rc = ax_bind(cx, prim, n, args, &q, res);
        for (int j = 0, t = nout; j < nout && !rc; j++) {
            out[j] = res[j];
            tout[j] = nzo[j] ? res[t++] : NULL;
        }
    }
    release_irs(nb, jb);
    free(nz);
    free(args);
    return rc;
}

/* Branch k's known part padded to output every branch's residuals (zeros for the others'), so
 * that all the known branches have one type. */
static int pad_known_fn(ax_ctx *cx, const assembly *a, ax_array **in, ax_array **out) {
    int nk = a->n1, nres = a->counts[a->k];
    ax_array **res = alloc0(cx, (size_t)nk + (size_t)nres, sizeof *res);
    if (!res || ax_ir_eval(cx, a->ir, in, res)) {
        free(res);
        return -1;
    }
    int o = 0, t = 0;
    for (int j = 0; j < nk; j++) out[o++] = res[j];
    for (int b = 0; b < a->n2; b++)
        for (int r = 0; r < a->counts[b]; r++, t++)
            out[o++] = b == a->k ? res[nk + r] : zeros_of(cx, &a->types[t]);
    free(res);
    for (int j = 0; j < o; j++)
        if (!out[j]) return -1;
    return 0;
}

static int cond_partial_eval(ax_ctx *cx, ax_ir_trace *t, ax_prim prim, const ax_params *p,
                             int nin, ax_array **in, const bool *unknown, ax_array **out) {
    if (unknown[0]) return ax_ir_trace_record(t, prim, nin, in, p, out);
    /* a concrete index (eager grad): the taken branch, evaluated in place */
    ax_array *index = ax_concrete_value(cx, in[0]);
    if (index) return ax_ir_eval(cx, p->sub[branch_index(index, p->nsub)], in + 1, out);
    int nops = nin - 1, nout = p->sub[0]->nout, nb = p->nsub;
    bool *uo = alloc0(cx, 2 * (size_t)nout, sizeof *uo), *one = uo ? uo + nout : NULL;
    ax_ir **kn = alloc0(cx, 3 * (size_t)nb, sizeof *kn), **un = kn ? kn + nb : NULL;
    ax_ir **padded = kn ? kn + 2 * nb : NULL;
    int *nres = alloc0(cx, (size_t)nb, sizeof *nres);
    if (!uo || !kn || !nres) {
        free(uo), free(kn), free(nres);
        return -1;
    }
    int rc = 0;
    /* which outputs are unknown in any branch: unknown in all */
    for (int k = 0; k < nb && !rc; k++) {
        ax_ir *a = NULL, *b = NULL;
        int r = 0;
        rc = ax_pass_partial_eval(cx, p->sub[k], unknown + 1, NULL, one, &a, &b, &r);
        ax_ir_release(a), ax_ir_release(b);
        for (int j = 0; j < nout; j++) uo[j] |= one[j];
    }
    int R = 0;
    for (int k = 0; k < nb && !rc; k++) {
        rc = ax_pass_partial_eval(cx, p->sub[k], unknown + 1, uo, one, &kn[k], &un[k], &nres[k]);
        R += rc ? 0 : nres[k];
    }
    int nu = count(nout, uo), nk = nout - nu, nku = count(nops, unknown + 1);
    ax_aval *types = rc ? NULL : alloc0(cx, (size_t)R + (size_t)nops, sizeof *types);
    if (!types) rc = -1;
    /* residual types, branch by branch; the known branches padded with the others' */
    for (int k = 0, r = 0; k < nb && !rc; k++)
        for (int j = 0; j < nres[k]; j++) ax_ir_out_type(kn[k], nk + j, &types[r++]);
    for (int k = 0; k < nb && !rc; k++) {
        assembly a = {.fn = pad_known_fn, .nout = nk + R, .ir = kn[k], .k = k, .n1 = nk, .n2 = nb,
                      .counts = nres, .types = types};
        ax_aval *kt = types + R;
        for (int i = 0; i < kn[k]->nin; i++) ax_ir_in_type(kn[k], i, &kt[i]);
        if (!(padded[k] = assemble(cx, &a, kn[k]->nin, kt))) rc = -1;
    }
    /* the unknown branches take every residual and use their own */
    for (int k = 0, off = 0; k < nb && !rc; off += nres[k++]) {
        int n = R + nku, *src = alloc0(cx, (size_t)n + (size_t)nu, sizeof *src);
        int *outs = src ? src + n : NULL;
        if (!src) {
            rc = -1;
            break;
        }
        for (int i = 0; i < R; i++) src[i] = i >= off && i < off + nres[k] ? i - off : -1;
        for (int i = 0; i < nku; i++) src[R + i] = nres[k] + i;
        for (int j = 0; j < nu; j++) outs[j] = j;
        ax_ir *w = ax_ir_rewire(un[k], n, src, types, nu, outs);
        free(src);
        ax_ir_release(un[k]);
        un[k] = w;
        if (!w) ax_error_oom(cx), rc = -1;
    }
    ax_array **args =
        rc ? NULL : alloc0(cx, 2 * (size_t)nin + 2 * (size_t)R + (size_t)nout, sizeof *args);
    if (!rc && !args) rc = -1;
    if (!rc) {
        /* known: (index, known operands) -> known outputs, residuals */
        int n = 0;
        args[n++] = in[0];
        for (int i = 0; i < nops; i++)
            if (!unknown[i + 1]) args[n++] = in[i + 1];
        ax_array **kres = args + n;
        ax_params q = with_subs(p, nb, padded);
        rc = ax_bind(cx, prim, n, args, &q, kres);
        /* unknown: (index, residuals, unknown operands) -> unknown outputs, recorded */
        ax_array **uargs = kres + nk + R, **ures = NULL;
        int m = 0;
        if (!rc) {
            uargs[m++] = in[0];
            for (int r = 0; r < R; r++) uargs[m++] = kres[nk + r];
            for (int i = 0; i < nops; i++)
                if (unknown[i + 1]) uargs[m++] = in[i + 1];
            ures = uargs + m;
            ax_params q2 = with_subs(p, nb, un);
            rc = ax_ir_trace_record(t, prim, m, uargs, &q2, ures);
            if (rc) release_n(nk, kres);
        }
        for (int j = 0, a = 0, b = 0; j < nout && !rc; j++) out[j] = uo[j] ? ures[b++] : kres[a++];
        if (!rc || ures) release_n(R, kres + nk);
    }
    free(args);
    free(types);
    for (int k = 0; k < 3 * nb; k++) ax_ir_release(kn[k]);
    free(kn);
    free(uo);
    free(nres);
    return rc;
}

static int cond_transpose(ax_ctx *cx, ax_prim prim, const ax_params *p, int nin, ax_array **in,
                          const bool *lin, const ax_aval *in_types, ax_array *const *cts,
                          ax_array **ct_in) {
    (void)in_types;
    if (lin[0]) return internal(cx, "cond: the index cannot be linear");
    int nops = nin - 1, nout = p->sub[0]->nout, nb = p->nsub, nlin = count(nops, lin + 1);
    ax_ir **tb = alloc0(cx, (size_t)nb, sizeof *tb);
    ax_array **args = alloc0(cx, (size_t)nin + 2 * (size_t)nout + (size_t)nlin, sizeof *args);
    int rc = tb && args ? 0 : -1, n = 0, nz = 0;
    for (int k = 0; k < nb && !rc; k++)
        if (!(tb[k] = ax_pass_transpose(cx, p->sub[k], lin + 1))) rc = -1;
    if (!rc) {
        args[n++] = in[0];
        for (int i = 0; i < nops; i++)
            if (!lin[i + 1]) args[n++] = in[i + 1];
        ax_array **zeros = args + n + nout + nlin;
        for (int j = 0; j < nout && !rc; j++) {
            ax_aval t;
            ax_ir_out_type(p->sub[0], j, &t);
            args[n++] = cts[j] ? cts[j] : (zeros[nz++] = zeros_of(cx, &t));
            if (!args[n - 1]) rc = -1;
        }
    }
    ax_array **res = args ? args + n : NULL;
    if (!rc) {
        ax_params q = with_subs(p, nb, tb);
        rc = ax_bind(cx, prim, n, args, &q, res);
    }
    ct_in[0] = NULL;
    for (int i = 0, r = 0; i < nops; i++) ct_in[i + 1] = !rc && lin[i + 1] ? res[r++] : NULL;
    if (args) release_n(nz, args + n + nout + nlin);
    release_irs(nb, tb);
    free(args);
    return rc;
}

/* Batched index: every branch runs on the whole batch and each example takes its branch's
 * outputs (select), as JAX does: the branches must be free of effects. */
static int cond_batch_select(ax_ctx *cx, const ax_params *p, ax_array *index, ax_array **ops, const bool *batched, int64_t size, ax_array **out) {
    int nout = p->sub[0]->nout, nb = p->nsub;
    bool *force = alloc0(cx, 2 * (size_t)nout, sizeof *force), *bo = force ? force + nout : NULL;
    ax_array **res = alloc0(cx, (size_t)nb * (size_t)nout, sizeof *res);
    int rc = force && res ? 0 : -1;
    for (int j = 0; j < nout && !rc; j++) force[j] = true;
    for (int k = 0; k < nb && !rc; k++) {
        ax_ir *vb = ax_pass_vmap(cx, p->sub[k], size, batched, force, bo);
        rc = vb ? ax_ir_eval(cx, vb, ops, res + (size_t)k * nout) : -1;
        ax_ir_release(vb);
    }
    ax_scope s;
    ax_scope_begin(&s, cx);
    ax_array *idx = rc ? NULL : ax_lax_convert(&s, index, AX_I32);
    if (idx) {
        ax_array *lo = ax_lax_scalar_like(&s, idx, 0), *hi = ax_lax_scalar_like(&s, idx, nb - 1);
        idx = lo && hi ? ax_lax_binary(&s, AX_P_MIN, ax_lax_binary(&s, AX_P_MAX, idx, lo), hi)
                       : NULL;
    }
    if (!rc && !idx) rc = -1;
    for (int j = 0; j < nout && !rc; j++) {
        ax_array *acc = res[j];
        for (int k = 1; k < nb && acc; k++) {
            ax_array *v = res[(size_t)k * nout + j];
            ax_array *is_k = ax_lax_binary(&s, AX_P_EQ, idx, ax_lax_scalar_like(&s, idx, k));
            int dims[1] = {0};
            ax_array *pred = is_k ? ax_lax_broadcast_in_dim(&s, is_k, v->ndim, v->shape, dims)
                                  : NULL;
            acc = pred ? ax_lax_select(&s, pred, v, acc) : NULL;
        }
        out[j] = acc ? ax_scope_keep(&s, acc) : NULL;
        if (!out[j]) rc = -1;
    }
    ax_scope_end(&s);
    if (rc) release_n(nout, out);
    if (res) release_n(nb * nout, res);
    free(res);
    free(force);
    return rc;
}

static int cond_batch(ax_ctx *cx, ax_prim prim, const ax_params *p, int nin, ax_array **in,
                      const int *bdim, int64_t size, ax_array **out, int *out_bdim) {
    int nops = nin - 1, nout = p->sub[0]->nout, nb = p->nsub;
    ax_array **x = alloc0(cx, (size_t)nin, sizeof *x);
    bool *bm = alloc0(cx, (size_t)nops + 2 * (size_t)nout, sizeof *bm);
    bool *force = bm ? bm + nops : NULL, *bo = bm ? force + nout : NULL;
    ax_ir **vb = alloc0(cx, (size_t)nb, sizeof *vb);
    int rc = x && bm && vb ? 0 : -1;
    for (int i = 0; i < nops && !rc; i++) {
        bm[i] = bdim[i + 1] >= 0;
        if (!(x[i + 1] = batch_at(cx, in[i + 1], bdim[i + 1], 0, size, false))) rc = -1;
    }
    if (!rc && bdim[0] >= 0) {
        ax_array *index = ax_moveaxis(cx, in[0], bdim[0], 0);
        rc = index ? cond_batch_select(cx, p, index, x + 1, bm, size, out) : -1;
        ax_array_release(index);
        for (int j = 0; j < nout; j++) out_bdim[j] = 0;
    } else if (!rc) {
        for (int k = 0; k < nb && !rc && nb > 1; k++) {
            ax_ir *ir = ax_pass_vmap(cx, p->sub[k], size, bm, NULL, bo);
            rc = ir ? 0 : -1;
            ax_ir_release(ir);
            for (int j = 0; j < nout; j++) force[j] |= bo[j];
        }
        for (int k = 0; k < nb && !rc; k++)
            if (!(vb[k] = ax_pass_vmap(cx, p->sub[k], size, bm, force, bo))) rc = -1;
        x[0] = ax_array_retain(in[0]);
        if (!rc) {
            ax_params q = with_subs(p, nb, vb);
            rc = ax_bind(cx, prim, nin, x, &q, out);
        }
        for (int j = 0; j < nout; j++) out_bdim[j] = bo[j] ? 0 : -1;
    }
    if (x) release_n(nin, x);
    free(x);
    free(bm);
    release_irs(nb, vb);
    return rc;
}

static void cond_dependencies(const ax_params *p, int nin, const bool *in, bool *out) {
    int nout = p->sub[0]->nout;
    bool *one = calloc((size_t)nout + 1, sizeof *one);
    for (int j = 0; j < nout; j++) out[j] = in[0] || !one; /* the index decides them all */
    for (int k = 0; k < p->nsub && one && !in[0]; k++) {
        ax_ir_dependencies(p->sub[k], in + 1, one);
        for (int j = 0; j < nout; j++) out[j] |= one[j];
    }
    (void)nin;
    free(one);
}

static void cond_format(ax_ir_printer *pr, const ax_params *p) {
    ax_ir_print_subs(pr, "branches", p->nsub, p->sub);
}

const ax_prim_info ax_cond_info = {
    .name = "cond",
    .nin = -1,
    .nout = -1,
    .shape = cond_shape,
    .eager = cond_eager,
    .jvp = cond_jvp,
    .transpose = cond_transpose,
    .batch = cond_batch,
    .partial_eval = cond_partial_eval,
    .nout_of = cond_nout,
    .dependencies = cond_dependencies,
    .format_subs = cond_format,
    .lower = {.kop = AX_KOP_COND},
    .tested_by = "tests/unit/test_control_flow.c, tests/lang/control_flow.ax",
};

/* ================================================================ while */
/* (cond consts, body consts, carry...): carry = body(body consts, carry) while
 * cond(cond consts, carry); sub[0] = cond, sub[1] = body, nconsts / nconsts2 their consts. */

static int while_nout(const ax_params *p) {
    return p->sub[1]->nout;
}

static int while_shape(ax_ctx *cx, int nin, const ax_aval *in, const ax_params *p, ax_aval *out) {
    if (p->nsub != 2) return internal(cx, "while needs a cond and a body");
    int nc = p->nconsts, nb = p->nconsts2, n = nin - nc - nb;
    const ax_ir *cond = p->sub[0], *body = p->sub[1];
    if (n < 0 || cond->nin != nc + n || cond->nout != 1 || body->nin != nb + n || body->nout != n)
        return internal(cx, "while: the cond or the body does not fit the operands");
    ax_aval t;
    ax_ir_out_type(cond, 0, &t);
    if (t.dtype != AX_BOOL || t.ndim != 0) return internal(cx, "while: cond must give a bool");
    for (int i = 0; i < nc + n; i++) {
        ax_ir_in_type(cond, i, &t);
        if (!same_type(&t, &in[i < nc ? i : i + nb])) return internal(cx, "while: cond types");
    }
    for (int i = 0; i < nb + n; i++) {
        ax_ir_in_type(body, i, &t);
        if (!same_type(&t, &in[nc + i])) return internal(cx, "while: body input types");
    }
    for (int j = 0; j < n; j++) {
        ax_ir_out_type(body, j, &t);
        out[j] = in[nc + nb + j];
        if (!same_type(&t, &out[j])) return internal(cx, "while: the body changes the carry");
    }
    return 0;
}

/* cond(consts, carry) on concrete values: 1 true, 0 false, -1 error. */
static int eval_predicate(ax_ctx *cx, const ax_ir *cond, int nc, ax_array **consts, int n,
                          ax_array **carry, ax_array **args) {
    for (int i = 0; i < nc; i++) args[i] = consts[i];
    for (int j = 0; j < n; j++) args[nc + j] = carry[j];
    ax_array *pred = NULL;
    if (ax_ir_eval(cx, cond, args, &pred)) return -1;
    ax_array *v = ax_concrete_value(cx, pred);
    int r = v ? ax_array_get_i64(v, 0) != 0 : -1;
    if (!v) internal(cx, "while: the predicate is not concrete");
    ax_array_release(pred);
    return r;
}

/* Runs the loop on values the predicate can read: what the eager rule does, and what partial
 * evaluation does when the loop's known part is concrete (eager grad of a while_loop). The
 * body's equations bind as usual, so under a recording trace its unknown part is recorded,
 * step by step. */
static int run_loop(ax_ctx *cx, const ax_params *p, int nin, ax_array **in, ax_array **out) {
    int nc = p->nconsts, nb = p->nconsts2, n = nin - nc - nb;
    ax_array **args = alloc0(cx, (size_t)(nin + n), sizeof *args);
    if (!args) return -1;
    for (int j = 0; j < n; j++) out[j] = ax_array_retain(in[nc + nb + j]);
    int rc = 0;
    for (;;) {
        if (ax_ctx_check_interrupt(cx)) {
            rc = -1;
            break;
        }
        int go = eval_predicate(cx, p->sub[0], nc, in, n, out, args);
        if (go <= 0) {
            rc = go;
            break;
        }
        for (int i = 0; i < nb; i++) args[i] = in[nc + i];
        for (int j = 0; j < n; j++) args[nb + j] = out[j];
        ax_array **next = args + nb + n;
        if ((rc = ax_ir_eval(cx, p->sub[1], args, next))) break;
        for (int j = 0; j < n; j++) {
            ax_array_release(out[j]);
            out[j] = next[j];
        }
    }
    if (rc) release_n(n, out);
    free(args);
    return rc;
}

static int while_eager(ax_ctx *cx, int nin, ax_array **in, const ax_params *p, ax_array **out) {
    return run_loop(cx, p, nin, in, out);
}

/* The carried values that become `what` (tangent, unknown, batched) in the loop: those that
 * start so, and those the body makes so from them (iterated to a fixed point). mask: the body's
 * inputs (its consts, then the carry), updated in place; the carry part is the answer. False
 * when memory ran out: the mask is then conservative (every carry is `what`), which the
 * dependency rules may use, but the passes need the exact answer (partial evaluation computes
 * wrong derivatives when a known carry is taken for unknown) and report MemoryError. */
static bool carry_fixpoint(const ax_ir *body, int nconsts, int ncarry, bool *mask) {
    bool *deps = calloc((size_t)body->nout + 1, sizeof *deps), exact = deps != NULL;
    for (bool changed = deps != NULL; changed;) {
        changed = false;
        exact = ax_ir_dependencies(body, mask, deps) && exact;
        for (int j = 0; j < ncarry; j++)
            if (deps[j] && !mask[nconsts + j]) mask[nconsts + j] = changed = true;
    }
    free(deps);
    if (!exact)
        for (int j = 0; j < ncarry; j++) mask[nconsts + j] = true;
    return exact;
}

static int while_jvp(ax_ctx *cx, ax_prim prim, const ax_params *p, int nin, ax_array **in,
                     ax_array **tin, ax_array **out, ax_array **tout) {
    int nc = p->nconsts, nb = p->nconsts2, n = nin - nc - nb;
    bool *nz = alloc0(cx, (size_t)(nb + 2 * n), sizeof *nz), *nzo = nz ? nz + nb + n : NULL;
    if (!nz) return -1;
    for (int i = 0; i < nb + n; i++) nz[i] = tin[nc + i] != NULL;
    if (!carry_fixpoint(p->sub[1], nb, n, nz)) {
        free(nz);
        return ax_error_oom(cx), -1;
    }
    bool *nzc = nz + nb;
    int tb = count(nb, nz), tc = count(n, nzc);
    ax_ir *bj = ax_pass_jvp(cx, p->sub[1], nz, nzc, nzo), *subs[2] = {NULL, NULL};
    /* body: (consts, const tangents, carry, carry tangents); cond ignores the tangents */
    int total = nb + n + tb + tc, *src = alloc0(cx, (size_t)total + (size_t)(n + tc), sizeof *src);
    int *ident = src ? src + total : NULL;
    ax_aval *types = alloc0(cx, (size_t)(nc + n + tc), sizeof *types);
    ax_array **args = alloc0(cx, (size_t)(total + nc + tc) + (size_t)(n + tc), sizeof *args);
    int rc = bj && src && types && args ? 0 : -1, k = 0;
    if (!rc) {
        for (int i = 0; i < nb; i++) src[k++] = i;
        for (int i = 0; i < tb; i++) src[k++] = nb + n + i;
        for (int j = 0; j < n; j++) src[k++] = nb + j;
        for (int j = 0; j < tc; j++) src[k++] = nb + n + tb + j;
        for (int j = 0; j < n + tc; j++) ident[j] = j;
        subs[1] = ax_ir_rewire(bj, total, src, NULL, n + tc, ident);
        for (int i = 0; i < nc + n; i++) {
            src[i] = i;
            ax_ir_in_type(p->sub[0], i, &types[i]);
        }
        for (int j = 0, t = 0; j < n; j++)
            if (nzc[j]) {
                src[nc + n + t] = -1;
                types[nc + n + t] = types[nc + j];
                types[nc + n + t++].weak = false;
            }
        subs[0] = ax_ir_rewire(p->sub[0], nc + n + tc, src, types, 1, ident);
        if (!subs[0] || !subs[1]) ax_error_oom(cx), rc = -1;
    }
    int nz_made = 0;
    ax_array **zeros = args ? args + total + nc : NULL;
    if (!rc) {
        int m = 0;
        for (int i = 0; i < nc + nb; i++) args[m++] = in[i];
        for (int i = 0; i < nb; i++)
            if (nz[i]) args[m++] = tin[nc + i];
        for (int j = 0; j < n; j++) args[m++] = in[nc + nb + j];
        for (int j = 0; j < n && !rc; j++) {
            if (!nzc[j]) continue;
            ax_array *t = tin[nc + nb + j];
            if (!t) {
                ax_aval ty;
                ax_aval_of(&ty, in[nc + nb + j]);
                t = zeros[nz_made++] = zeros_of(cx, &ty);
            }
            args[m++] = t;
            if (!t) rc = -1;
        }
        ax_array **res = zeros + tc;
        ax_params q = with_subs(p, 2, subs);
        q.nconsts2 = nb + tb;
        if (!rc) rc = ax_bind(cx, prim, m, args, &q, res);
        for (int j = 0, t = n; j < n && !rc; j++) {
            out[j] = res[j];
            tout[j] = nzc[j] ? res[t++] : NULL;
        }
    }
    if (zeros) release_n(nz_made, zeros);
    ax_ir_release(bj), ax_ir_release(subs[0]), ax_ir_release(subs[1]);
    free(nz), free(src), free(types), free(args);
    return rc;
}

static int while_partial_eval(ax_ctx *cx, ax_ir_trace *t, ax_prim prim, const ax_params *p,
                              int nin, ax_array **in, const bool *unknown, ax_array **out) {
    int nc = p->nconsts, nb = p->nconsts2, n = nin - nc - nb;
    bool *mask = alloc0(cx, (size_t)(nb + n), sizeof *mask);
    if (!mask) return -1;
    memcpy(mask, unknown + nc, (size_t)(nb + n) * sizeof *mask);
    if (!carry_fixpoint(p->sub[1], nb, n, mask)) {
        free(mask);
        return ax_error_oom(cx), -1;
    }
    /* The loop runs now, its unknown part recorded step by step, when the predicate reads only
     * known values and every known input is concrete (so each step's predicate is); otherwise
     * it is recorded whole (forward mode works on it, reverse mode cannot transpose it). */
    bool now = true;
    for (int i = 0; i < nc + n && now; i++) {
        if (!ax_ir_uses_input(p->sub[0], i)) continue;
        now = !(i < nc ? unknown[i] : mask[nb + i - nc]);
    }
    for (int i = 0; i < nin && now; i++)
        now = unknown[i] || ax_concrete_value(cx, in[i]) != NULL;
    free(mask);
    return now ? run_loop(cx, p, nin, in, out) : ax_ir_trace_record(t, prim, nin, in, p, out);
}

static int while_transpose(ax_ctx *cx, ax_prim prim, const ax_params *p, int nin, ax_array **in,
                           const bool *lin, const ax_aval *in_types, ax_array *const *cts,
                           ax_array **ct_in) {
    (void)prim, (void)p, (void)nin, (void)in, (void)lin, (void)in_types, (void)cts, (void)ct_in;
    ax_error(cx, AX_ERR_VALUE,
             "reverse-mode differentiation does not work for while_loop, or for fori_loop with "
             "traced bounds: the number of steps is not known to keep their values; use scan, "
             "or fori_loop with concrete bounds (forward mode, jvp and jacfwd, works)");
    return -1;
}

/* Predicate batched: the loop runs while any example's predicate holds; the body keeps the
 * carry of the examples whose predicate is false (select). */
typedef struct any_pred {
    const ax_ir *cond, *body;
    int nc, nb, n;
} any_pred;

static int any_cond_fn(ax_ctx *cx, const assembly *a, ax_array **in, ax_array **out) {
    const any_pred *w = (const any_pred *)a->types;
    ax_array *pred = NULL;
    if (ax_ir_eval(cx, w->cond, in, &pred)) return -1;
    ax_scope s;
    ax_scope_begin(&s, cx);
    int axes[1] = {0};
    ax_array *any = ax_lax_reduce(&s, AX_P_REDUCE_OR, pred, 1, axes);
    out[0] = any ? ax_scope_keep(&s, any) : NULL;
    ax_scope_end(&s);
    ax_array_release(pred);
    return out[0] ? 0 : -1;
}

static int select_body_fn(ax_ctx *cx, const assembly *a, ax_array **in, ax_array **out) {
    const any_pred *w = (const any_pred *)a->types;
    ax_array **cin = alloc0(cx, (size_t)(w->nc + w->nb + 2 * w->n), sizeof *cin);
    if (!cin) return -1;
    ax_array **carry = in + w->nc + w->nb, **bin = cin + w->nc + w->n, **next = bin + w->nb;
    for (int i = 0; i < w->nc; i++) cin[i] = in[i];
    for (int j = 0; j < w->n; j++) cin[w->nc + j] = bin[w->nb + j] = carry[j];
    for (int i = 0; i < w->nb; i++) bin[i] = in[w->nc + i];
    ax_array *pred = NULL;
    int rc = ax_ir_eval(cx, w->cond, cin, &pred);
    if (!rc) rc = ax_ir_eval(cx, w->body, bin, next);
    ax_scope s;
    ax_scope_begin(&s, cx);
    for (int j = 0; j < w->n && !rc; j++) {
        int dims[1] = {0};
        ax_array *pb = ax_lax_broadcast_in_dim(&s, pred, next[j]->ndim, next[j]->shape, dims);
        ax_array *v = pb ? ax_lax_select(&s, pb, next[j], carry[j]) : NULL;
        out[j] = v ? ax_scope_keep(&s, v) : NULL;
        if (!out[j]) rc = -1;
    }
    ax_scope_end(&s);
    if (!rc || next[0]) release_n(w->n, next);
    ax_array_release(pred);
    free(cin);
    return rc;
}

static int while_batch_any(ax_ctx *cx, const ax_params *p, int nin, ax_array **x, bool *bm,
                           int64_t size, ax_array **out) {
    int nc = p->nconsts, nb = p->nconsts2, n = nin - nc - nb;
    bool *force = alloc0(cx, (size_t)(2 * n + 2), sizeof *force), *bo = force ? force + n + 1 : 0;
    ax_aval *types = alloc0(cx, (size_t)(nin + nc + nb + n), sizeof *types);
    ax_array **args = alloc0(cx, (size_t)(nin + nc), sizeof *args);
    if (!force || !types || !args) {
        free(force), free(types), free(args);
        return -1;
    }
    /* every carried value batched: the examples leave the loop at different steps */
    bool *cm = alloc0(cx, (size_t)(nc + n), sizeof *cm), *bmask = alloc0(cx, (size_t)(nb + n), 1);
    for (int i = 0; cm && bmask && i < nc + n; i++) cm[i] = i < nc ? bm[i] : true;
    for (int i = 0; cm && bmask && i < nb + n; i++) bmask[i] = i < nb ? bm[nc + i] : true;
    for (int j = 0; j < n + 1; j++) force[j] = true;
    ax_ir *cv = cm && bmask ? ax_pass_vmap(cx, p->sub[0], size, cm, force, bo) : NULL;
    ax_ir *bv = cv ? ax_pass_vmap(cx, p->sub[1], size, bmask, force, bo) : NULL;
    any_pred w = {cv, bv, nc, nb, n};
    ax_ir *subs[2] = {NULL, NULL};
    int rc = bv ? 0 : -1;
    for (int j = 0; j < n && !rc; j++) { /* the carry, all batched */
        ax_array *c = x[nc + nb + j];
        if (!bm[nc + nb + j]) {
            x[nc + nb + j] = ax_vmap_place_take(cx, c, -1, size, 0);
            if (!x[nc + nb + j]) rc = -1;
        }
    }
    for (int i = 0; i < nin && !rc; i++) ax_aval_of(&types[i], x[i]);
    if (!rc) {
        /* cond: (cond consts, carry); body: (cond consts, body consts, carry) */
        ax_aval *ct = types + nin;
        for (int i = 0; i < nc; i++) ct[i] = types[i];
        for (int j = 0; j < n; j++) ct[nc + j] = types[nc + nb + j];
        assembly ac = {.fn = any_cond_fn, .nout = 1, .types = (const ax_aval *)&w};
        subs[0] = assemble(cx, &ac, nc + n, ct);
        ax_aval *bt = types + nin;
        for (int i = 0; i < nc; i++) bt[i] = types[i];
        for (int i = 0; i < nb + n; i++) bt[nc + i] = types[nc + i];
        assembly ab = {.fn = select_body_fn, .nout = n, .types = (const ax_aval *)&w};
        subs[1] = subs[0] ? assemble(cx, &ab, nc + nb + n, bt) : NULL;
        if (!subs[1]) rc = -1;
    }
    if (!rc) {
        for (int i = 0; i < nc; i++) args[i] = args[nc + i] = x[i];
        for (int i = 0; i < nb + n; i++) args[2 * nc + i] = x[nc + i];
        ax_params q = with_subs(p, 2, subs);
        q.nconsts2 = nc + nb;
        rc = ax_bind(cx, AX_P_WHILE, nin + nc, args, &q, out);
    }
    ax_ir_release(cv), ax_ir_release(bv), ax_ir_release(subs[0]), ax_ir_release(subs[1]);
    free(force), free(types), free(args), free(cm), free(bmask);
    return rc;
}

static int while_batch(ax_ctx *cx, ax_prim prim, const ax_params *p, int nin, ax_array **in,
                       const int *bdim, int64_t size, ax_array **out, int *out_bdim) {
    int nc = p->nconsts, nb = p->nconsts2, n = nin - nc - nb;
    ax_array **x = alloc0(cx, (size_t)nin, sizeof *x);
    bool *bm = alloc0(cx, (size_t)nin + 2 * (size_t)(n + 1), sizeof *bm);
    bool *mask = alloc0(cx, (size_t)(nc + nb + n), sizeof *mask);
    bool *bo = bm ? bm + nin : NULL, *po = bo ? bo + n + 1 : NULL;
    int rc = x && bm && mask ? 0 : -1;
    for (int i = 0; i < nin && !rc; i++) {
        bm[i] = bdim[i] >= 0;
        if (!(x[i] = batch_at(cx, in[i], bdim[i], 0, size, false))) rc = -1;
    }
    ax_ir *subs[2] = {NULL, NULL};
    if (!rc) {
        memcpy(mask, bm + nc, (size_t)(nb + n) * sizeof *mask);
        if (!carry_fixpoint(p->sub[1], nb, n, mask)) rc = -1, ax_error_oom(cx);
    }
    /* is the predicate batched? */
    bool *cm = rc ? NULL : alloc0(cx, (size_t)(nc + n), sizeof *cm);
    if (!rc && !cm) rc = -1;
    for (int i = 0; cm && i < nc + n; i++) cm[i] = i < nc ? bm[i] : mask[nb + i - nc];
    ax_ir *cv = cm ? ax_pass_vmap(cx, p->sub[0], size, cm, NULL, po) : NULL;
    if (!rc && !cv) rc = -1;
    if (!rc && po[0]) {
        rc = while_batch_any(cx, p, nin, x, bm, size, out);
        for (int j = 0; j < n; j++) out_bdim[j] = 0;
    } else if (!rc) {
        subs[0] = ax_ir_retain(cv);
        subs[1] = ax_pass_vmap(cx, p->sub[1], size, mask, mask + nb, bo);
        for (int j = 0; j < n && !rc && subs[1]; j++) {
            if (!mask[nb + j] || bm[nc + nb + j]) continue;
            ax_array *c = x[nc + nb + j];
            if (!(x[nc + nb + j] = ax_vmap_place_take(cx, c, -1, size, 0))) rc = -1;
        }
        if (!subs[1]) rc = -1;
        if (!rc) {
            ax_params q = with_subs(p, 2, subs);
            rc = ax_bind(cx, prim, nin, x, &q, out);
        }
        for (int j = 0; j < n; j++) out_bdim[j] = mask[nb + j] ? 0 : -1;
    }
    if (x) release_n(nin, x);
    ax_ir_release(cv), ax_ir_release(subs[0]), ax_ir_release(subs[1]);
    free(x), free(bm), free(mask), free(cm);
    return rc;
}

static void while_dependencies(const ax_params *p, int nin, const bool *in, bool *out) {
    int nc = p->nconsts, nb = p->nconsts2, n = nin - nc - nb;
    bool *mask = calloc((size_t)(nb + n + nc + n) + 1, sizeof *mask), *cm = mask + nb + n;
    if (!mask) {
        for (int j = 0; j < n; j++) out[j] = true;
        return;
    }
    memcpy(mask, in + nc, (size_t)(nb + n) * sizeof *mask);
    (void)carry_fixpoint(p->sub[1], nb, n, mask); /* conservative will do here */
    /* a predicate that depends on them makes the number of steps, so every value, depend */
    memcpy(cm, in, (size_t)nc * sizeof *cm);
    memcpy(cm + nc, mask + nb, (size_t)n * sizeof *cm);
    bool pred = false;
    ax_ir_dependencies(p->sub[0], cm, &pred);
    for (int j = 0; j < n; j++) out[j] = pred || mask[nb + j];
    free(mask);
}

static void while_format(ax_ir_printer *pr, const ax_params *p) {
    ax_ir_print_sub(pr, "body_jaxpr", p->sub[1]);
    ax_strbuf_appendf(ax_ir_print_param(pr), "body_nconsts=%d", p->nconsts2);
    ax_ir_print_sub(pr, "cond_jaxpr", p->sub[0]);
    ax_strbuf_appendf(ax_ir_print_param(pr), "cond_nconsts=%d", p->nconsts);
}

const ax_prim_info ax_while_info = {
    .name = "while",
    .nin = -1,
    .nout = -1,
    .shape = while_shape,
    .eager = while_eager,
    .jvp = while_jvp,
    .transpose = while_transpose,
    .batch = while_batch,
    .partial_eval = while_partial_eval,
    .nout_of = while_nout,
    .dependencies = while_dependencies,
    .format_subs = while_format,
    .lower = {.kop = AX_KOP_WHILE},
    .tested_by = "tests/unit/test_control_flow.c, tests/lang/control_flow.ax",
};

/* ================================================================ scan */
/* (consts, carry, xs...) -> (carry, ys...): for each step i (from the last when reverse),
 * (carry, y_i) = body(consts, carry, x_i); ys stack the y_i along a new leading axis. */

static int scan_nout(const ax_params *p) {
    return p->sub[0]->nout;
}

static int scan_shape(ax_ctx *cx, int nin, const ax_aval *in, const ax_params *p, ax_aval *out) {
    const ax_ir *body = p->nsub == 1 ? p->sub[0] : NULL;
    int nc = p->nconsts, ncar = p->ncarry;
    if (!body || body->nin != nin || body->nout < ncar || nc + ncar > nin || p->length < 0)
        return internal(cx, "scan: the body does not fit the operands");
    for (int i = 0; i < nin; i++) {
        ax_aval t, want = in[i];
        ax_ir_in_type(body, i, &t);
        if (i >= nc + ncar) { /* an x: one slice of xs */
            if (want.ndim < 1 || want.shape[0] != p->length)
                return internal(cx, "scan: xs must have length leading elements");
            want.ndim--;
            memmove(want.shape, want.shape + 1, (size_t)want.ndim * sizeof *want.shape);
        }
        if (!same_type(&t, &want)) return internal(cx, "scan: body input types");
    }
    for (int j = 0; j < body->nout; j++) {
        ax_aval t;
        ax_ir_out_type(body, j, &t);
        if (j < ncar) {
            out[j] = in[nc + j];
            if (!same_type(&t, &out[j])) return internal(cx, "scan: the body changes the carry");
            continue;
        }
        if (t.ndim >= AX_MAX_RANK)
            return ax_error(cx, AX_ERR_VALUE, "scan: the stacked outputs would have rank %d "
                            "(the most is %d)", t.ndim + 1, AX_MAX_RANK), -1;
        out[j] = t;
        memmove(out[j].shape + 1, t.shape, (size_t)t.ndim * sizeof *t.shape);
        out[j].shape[0] = p->length;
        out[j].ndim = t.ndim + 1;
    }
    return 0;
}

/* Element i of xs along its leading axis: a view. */
static ax_array *slice_at(ax_ctx *cx, ax_array *xs, int64_t i) {
    return ax_array_view(cx, xs, xs->ndim - 1, xs->shape + 1, xs->strides + 1,
                         xs->offset + i * xs->strides[0]);
}

/* Copies y into row i of the contiguous array ys. */
static int store_row(ax_ctx *cx, ax_array *ys, int64_t i, ax_array *y) {
    ax_array *c = ax_array_contiguous(cx, y);
    if (!c) return -1;
    size_t row = (size_t)c->size * ax_dtype_size(c->dtype);
    if (row) memcpy((char *)ax_array_data(ys) + (size_t)i * row, ax_array_data(c), row);
    ax_array_release(c);
    return 0;
}

/* The loop on concrete values: O(length), each y_i written in place into the stacked ys. */
static int scan_eager(ax_ctx *cx, int nin, ax_array **in, const ax_params *p, ax_array **out) {
    const ax_ir *body = p->sub[0];
    int nc = p->nconsts, ncar = p->ncarry, nx = nin - nc - ncar, ny = body->nout - ncar;
    ax_array **args = alloc0(cx, (size_t)nin + (size_t)body->nout, sizeof *args);
    if (!args) return -1;
    ax_array **res = args + nin, **ys = out + ncar;
    int rc = 0;
    for (int j = 0; j < ncar; j++) out[j] = ax_array_retain(in[nc + j]);
    for (int j = 0; j < ny && !rc; j++) {
        ax_aval t;
        ax_ir_out_type(body, ncar + j, &t);
        int64_t shape[AX_MAX_RANK];
        shape[0] = p->length;
        memcpy(shape + 1, t.shape, (size_t)t.ndim * sizeof *shape);
        if (!(ys[j] = ax_array_new(cx, t.dtype, t.ndim + 1, shape))) rc = -1;
    }
    for (int64_t step = 0; step < p->length && !rc; step++) {
        int64_t i = p->reverse ? p->length - 1 - step : step;
        if (ax_ctx_check_interrupt(cx)) {
            rc = -1;
            break;
        }
        for (int k = 0; k < nc; k++) args[k] = ax_array_retain(in[k]);
        for (int j = 0; j < ncar; j++) args[nc + j] = ax_array_retain(out[j]);
        for (int k = 0; k < nx && !rc; k++)
            if (!(args[nc + ncar + k] = slice_at(cx, in[nc + ncar + k], i))) rc = -1;
        if (!rc) rc = ax_ir_eval(cx, body, args, res);
        release_n(nin, args);
        if (rc) break;
        for (int j = 0; j < ncar; j++) {
            ax_array_release(out[j]);
            out[j] = res[j];
        }
        for (int j = 0; j < ny && !rc; j++) rc = store_row(cx, ys[j], i, res[ncar + j]);
        release_n(ny, res + ncar);
    }
    if (rc) release_n(ncar + ny, out);
    free(args);
    return rc;
}

/* Input / output orders of a scan body: the passes append tangents (or cotangents) after all
 * the inputs; a scan wants each group's together. src[] maps new positions to old ones. */
static int *regroup(ax_ctx *cx, int ngroups, const int *sizes, const int *extra) {
    int total = 0;
    for (int g = 0; g < ngroups; g++) total += sizes[g] + extra[g];
    int *src = alloc0(cx, (size_t)total, sizeof *src);
    if (!src) return NULL;
    int k = 0, base = 0, ebase = 0;
    for (int g = 0; g < ngroups; g++) base += sizes[g];
    for (int g = 0, at = 0; g < ngroups; g++) {
        for (int i = 0; i < sizes[g]; i++) src[k++] = at + i;
        for (int i = 0; i < extra[g]; i++) src[k++] = base + ebase + i;
        at += sizes[g];
        ebase += extra[g];
    }
    return src;
}

static int scan_jvp(ax_ctx *cx, ax_prim prim, const ax_params *p, int nin, ax_array **in,
                    ax_array **tin, ax_array **out, ax_array **tout) {
    const ax_ir *body = p->sub[0];
    int nc = p->nconsts, ncar = p->ncarry, nx = nin - nc - ncar, nout = body->nout;
    int ny = nout - ncar;
    bool *nz = alloc0(cx, (size_t)nin + 2 * (size_t)nout, sizeof *nz);
    bool *inst = nz ? nz + nin : NULL, *nzo = nz ? inst + nout : NULL;
    if (!nz) return -1;
    for (int i = 0; i < nin; i++) nz[i] = tin[i] != NULL;
    if (!carry_fixpoint(body, nc, ncar, nz)) {
        free(nz);
        return ax_error_oom(cx), -1;
    }
    for (int j = 0; j < ncar; j++) inst[j] = nz[nc + j];
    ax_ir *bj = ax_pass_jvp(cx, body, nz, inst, nzo), *sub = NULL;
    int tk = count(nc, nz), tc = count(ncar, nz + nc), tx = count(nx, nz + nc + ncar);
    int ty = bj ? count(ny, nzo + ncar) : 0;
    int in_sizes[3] = {nc, ncar, nx}, in_extra[3] = {tk, tc, tx};
    int out_sizes[2] = {ncar, ny}, out_extra[2] = {tc, ty};
    int *isrc = bj ? regroup(cx, 3, in_sizes, in_extra) : NULL;
    int *osrc = bj ? regroup(cx, 2, out_sizes, out_extra) : NULL;
    if (isrc && osrc) sub = ax_ir_rewire(bj, bj->nin, isrc, NULL, bj->nout, osrc);
    int total = nin + tk + tc + tx;
    ax_array **args = alloc0(cx, (size_t)total + (size_t)tc + (size_t)(nout + tc + ty), sizeof *args);
    int rc = sub && args ? 0 : -1, m = 0, made = 0;
    if (bj && isrc && osrc && !sub) ax_error_oom(cx);
    ax_array **zeros = args ? args + total : NULL, **res = zeros ? zeros + tc : NULL;
    for (int g = 0, at = 0; g < 3 && !rc; at += in_sizes[g++]) {
        for (int i = at; i < at + in_sizes[g]; i++) args[m++] = in[i];
        for (int i = at; i < at + in_sizes[g] && !rc; i++) {
            if (!nz[i]) continue;
            ax_array *t = tin[i];
            if (!t) { /* a carry whose tangent the body makes nonzero */
                ax_aval ty0;
                ax_aval_of(&ty0, in[i]);
                t = zeros[made++] = zeros_of(cx, &ty0);
            }
            args[m++] = t;
            if (!t) rc = -1;
        }
    }
    if (!rc) {
        ax_params q = with_subs(p, 1, &sub);
        q.nconsts = nc + tk;
        q.ncarry = ncar + tc;
        rc = ax_bind(cx, prim, m, args, &q, res);
    }
    /* res: carry, carry tangents, ys, y tangents */
    for (int j = 0, t = ncar, yt = ncar + tc + ny; j < nout && !rc; j++) {
        if (j < ncar) {
            out[j] = res[j];
            tout[j] = nz[nc + j] ? res[t++] : NULL;
        } else {
            out[j] = res[tc + j];
            tout[j] = nzo[j] ? res[yt++] : NULL;
        }
    }
    if (zeros) release_n(made, zeros);
    ax_ir_release(bj), ax_ir_release(sub);
    free(nz), free(isrc), free(osrc), free(args);
    return rc;
}

/* Which residuals of a split body are loop invariant: the known part returns one of its known
 * constants as it is (a weight matrix the tangent multiplies by). Those become constants of the
 * unknown scan instead of being stacked `length` times. inv[r] = the known constant's position
 * among the known body's inputs, or -1. */
static void invariant_residuals(const ax_ir *kn, int nk_out, int nres, int nknown_consts,
                                int *inv) {
    for (int r = 0; r < nres; r++) {
        inv[r] = -1;
        const ax_ir_atom *a = &kn->outs[nk_out + r];
        for (int i = 0; a->var >= 0 && i < nknown_consts; i++)
            if (kn->invars[i] == a->var) inv[r] = i;
    }
}

static int scan_partial_eval(ax_ctx *cx, ax_ir_trace *t, ax_prim prim, const ax_params *p,
                             int nin, ax_array **in, const bool *unknown, ax_array **out) {
    const ax_ir *body = p->sub[0];
    int nc = p->nconsts, ncar = p->ncarry, nx = nin - nc - ncar, nout = body->nout;
    int ny = nout - ncar;
    bool *uk = alloc0(cx, (size_t)nin + 2 * (size_t)nout, sizeof *uk);
    bool *inst = uk ? uk + nin : NULL, *uo = uk ? inst + nout : NULL;
    if (!uk) return -1;
    memcpy(uk, unknown, (size_t)nin * sizeof *uk);
    if (!carry_fixpoint(body, nc, ncar, uk)) {
        free(uk);
        return ax_error_oom(cx), -1;
    }
    for (int j = 0; j < ncar; j++) inst[j] = uk[nc + j];
    ax_ir *kn = NULL, *un = NULL, *kb = NULL, *ub = NULL;
    int nres = 0, rc = ax_pass_partial_eval(cx, body, uk, inst, uo, &kn, &un, &nres);
    int nkc = nc - count(nc, uk), nkcar = ncar - count(ncar, uk + nc);
    int nkx = nx - count(nx, uk + nc + ncar), nky = rc ? 0 : ny - count(ny, uo + ncar);
    int nuc = nc - nkc, nucar = ncar - nkcar, nux = nx - nkx, nuy = ny - nky;
    int *inv = rc ? NULL : alloc0(cx, (size_t)nres, sizeof *inv);
    int *src = rc ? NULL : alloc0(cx, (size_t)(nres + nin + nout), sizeof *src);
    ax_array **args = rc ? NULL : alloc0(cx, 3 * (size_t)(nin + nres + nout), sizeof *args);
    if (!rc && (!inv || !src || !args)) rc = -1;
    int ninv = 0;
    if (!rc) {
        invariant_residuals(kn, nkcar + nky, nres, nkc, inv);
        for (int r = 0; r < nres; r++) ninv += inv[r] >= 0;
        /* known body: its outputs less the invariant residuals */
        int k = 0;
        for (int j = 0; j < nkcar + nky; j++) src[k++] = j;
        for (int r = 0; r < nres; r++)
            if (inv[r] < 0) src[k++] = nkcar + nky + r;
        int *ident = src + k;
        for (int i = 0; i < kn->nin; i++) ident[i] = i;
        kb = ax_ir_rewire(kn, kn->nin, ident, NULL, k, src);
        /* unknown body: (invariant residuals, unknown consts | unknown carry | stacked
         * residuals, unknown xs); un's inputs are (residuals, unknown consts, carry, xs) */
        k = 0;
        for (int r = 0; r < nres; r++)
            if (inv[r] >= 0) src[k++] = r;
        for (int i = 0; i < nuc + nucar; i++) src[k++] = nres + i;
        for (int r = 0; r < nres; r++)
            if (inv[r] < 0) src[k++] = r;
        for (int i = 0; i < nux; i++) src[k++] = nres + nuc + nucar + i;
        int *outs = src + k;
        for (int j = 0; j < un->nout; j++) outs[j] = j;
        ub = ax_ir_rewire(un, k, src, NULL, un->nout, outs);
        if (!kb || !ub) ax_error_oom(cx), rc = -1;
    }
    ax_array **kres = args ? args + nin : NULL;
    if (!rc) { /* the known scan, bound now */
        int m = 0;
        for (int i = 0; i < nin; i++)
            if (!uk[i]) args[m++] = in[i];
        ax_params q = with_subs(p, 1, &kb);
        q.nconsts = nkc;
        q.ncarry = nkcar;
        rc = ax_bind(cx, prim, m, args, &q, kres);
    }
    int nstacked = nres - ninv;
    ax_array **uargs = kres ? kres + nkcar + nky + nstacked : NULL;
    ax_array **ures = uargs ? uargs + nin + nres : NULL;
    if (!rc) { /* the unknown scan, recorded */
        int m = 0, known_const = 0;
        for (int r = 0; r < nres; r++) {
            if (inv[r] < 0) continue;
            for (int i = 0, kc = 0; i < nc; i++)
                if (!uk[i] && kc++ == inv[r]) uargs[m] = in[i];
            m++;
        }
        (void)known_const;
        for (int i = 0; i < nc; i++)
            if (uk[i]) uargs[m++] = in[i];
        for (int j = 0; j < ncar; j++)
            if (uk[nc + j]) uargs[m++] = in[nc + j];
        for (int r = 0; r < nstacked; r++) uargs[m++] = kres[nkcar + nky + r];
        for (int i = 0; i < nx; i++)
            if (uk[nc + ncar + i]) uargs[m++] = in[nc + ncar + i];
        ax_params q = with_subs(p, 1, &ub);
        q.nconsts = ninv + nuc;
        q.ncarry = nucar;
        rc = ax_ir_trace_record(t, prim, m, uargs, &q, ures);
        release_n(nstacked, kres + nkcar + nky);
        if (rc) release_n(nkcar + nky, kres);
    }
    for (int j = 0, a = 0, b = 0; j < nout && !rc; j++) {
        bool from_unknown = j < ncar ? uk[nc + j] : uo[j];
        out[j] = from_unknown ? ures[b++] : kres[a++];
    }
    (void)nuy;
    ax_ir_release(kn), ax_ir_release(un), ax_ir_release(kb), ax_ir_release(ub);
    free(uk), free(inv), free(src), free(args);
    return rc;
}

/* The body of the transposed scan: (residual consts | const cotangent sums, carry cotangents |
 * residual xs, y cotangents) -> (the sums plus this step's, the carry's cotangent | the
 * linear xs' cotangents), from bt, the transposed body: (residual consts, residual xs, carry
 * cotangents, y cotangents) -> (linear consts', carry, linear xs' cotangents). */
typedef struct scan_t_layout {
    const ax_ir *bt;
    int nrk, nlk, ncar, nrx, ny, nlx;
} scan_t_layout;

static int scan_t_body_fn(ax_ctx *cx, const assembly *a, ax_array **in, ax_array **out) {
    const scan_t_layout *L = (const scan_t_layout *)a->types;
    int nbt = L->nrk + L->nrx + L->ncar + L->ny, nres = L->nlk + L->ncar + L->nlx;
    ax_array **args = alloc0(cx, (size_t)(nbt + nres), sizeof *args);
    if (!args) return -1;
    ax_array **rk = in, **acc = in + L->nrk, **ctc = acc + L->nlk, **rx = ctc + L->ncar;
    ax_array **cty = rx + L->nrx, **res = args + nbt;
    int k = 0;
    for (int i = 0; i < L->nrk; i++) args[k++] = rk[i];
    for (int i = 0; i < L->nrx; i++) args[k++] = rx[i];
    for (int i = 0; i < L->ncar; i++) args[k++] = ctc[i];
    for (int i = 0; i < L->ny; i++) args[k++] = cty[i];
    int rc = ax_ir_eval(cx, L->bt, args, res);
    ax_scope s;
    ax_scope_begin(&s, cx);
    for (int i = 0; i < L->nlk && !rc; i++) {
        ax_array *sum = ax_lax_add(&s, acc[i], res[i]);
        out[i] = sum ? ax_scope_keep(&s, sum) : NULL;
        if (!out[i]) rc = -1;
    }
    ax_scope_end(&s);
    for (int i = L->nlk; i < nres && !rc; i++) {
        out[i] = res[i];
        res[i] = NULL;
    }
    if (!rc || res[0]) release_n(nres, res);
    free(args);
    return rc;
}

static int scan_transpose(ax_ctx *cx, ax_prim prim, const ax_params *p, int nin, ax_array **in,
                          const bool *lin, const ax_aval *in_types, ax_array *const *cts,
                          ax_array **ct_in) {
    const ax_ir *body = p->sub[0];
    int nc = p->nconsts, ncar = p->ncarry, nx = nin - nc - ncar, nout = body->nout;
    int ny = nout - ncar;
    /* the body is linear in the carry even where its initial value is a constant (a zero
     * tangent): that carry's cotangent is computed and dropped */
    bool *blin = alloc0(cx, (size_t)nin, sizeof *blin);
    if (!blin) return -1;
    for (int i = 0; i < nin; i++) blin[i] = lin[i] || (i >= nc && i < nc + ncar);
    int nlk = count(nc, lin), nrk = nc - nlk, nlx = count(nx, lin + nc + ncar), nrx = nx - nlx;
    ax_ir *bt = ax_pass_transpose(cx, body, blin), *tb = NULL;
    free(blin);
    scan_t_layout L = {bt, nrk, nlk, ncar, nrx, ny, nlx};
    int nt = nrk + nlk + ncar + nrx + ny;
    ax_aval *types = alloc0(cx, (size_t)nt, sizeof *types);
    ax_array **args = alloc0(cx, 2 * (size_t)nt + (size_t)(nlk + ncar + nlx), sizeof *args);
    int rc = bt && types && args ? 0 : -1, k = 0, made = 0;
    ax_array **zeros = args ? args + nt : NULL, **res = zeros ? zeros + nt : NULL;
    ax_aval ty;
    /* inputs of the transposed scan and their types (xs as slices for the body) */
    for (int i = 0; i < nc && !rc; i++)
        if (!lin[i]) types[k] = in_types[i], args[k++] = in[i];
    for (int i = 0; i < nc && !rc; i++) {
        if (!lin[i]) continue;
        types[k] = in_types[i];
        types[k].weak = false;
        args[k++] = zeros[made++] = zeros_of(cx, &in_types[i]);
    }
    for (int j = 0; j < ncar && !rc; j++) {
        types[k] = in_types[nc + j];
        types[k].weak = false;
        args[k] = cts[j] ? cts[j] : (zeros[made++] = zeros_of(cx, &types[k]));
        k++;
    }
    for (int i = nc + ncar; i < nin && !rc; i++) {
        if (lin[i]) continue;
        types[k] = in_types[i];
        args[k++] = in[i];
    }
    for (int j = ncar; j < nout && !rc; j++) {
        ax_ir_out_type(body, j, &ty);
        ty.weak = false;
        types[k] = ty;
        memmove(types[k].shape + 1, ty.shape, (size_t)ty.ndim * sizeof *ty.shape);
        types[k].shape[0] = p->length;
        types[k].ndim++;
        args[k] = cts[j] ? cts[j] : (zeros[made++] = zeros_of(cx, &types[k]));
        k++;
    }
    for (int i = 0; i < k && !rc; i++) {
        if (!args[i]) rc = -1;
        if (i >= nrk + nlk + ncar) { /* xs and ys: the body sees one slice */
            types[i].ndim--;
            memmove(types[i].shape, types[i].shape + 1, (size_t)types[i].ndim * sizeof(int64_t));
        }
    }
    if (!rc) {
        assembly a = {.fn = scan_t_body_fn, .nout = nlk + ncar + nlx,
                      .types = (const ax_aval *)&L};
        if (!(tb = assemble(cx, &a, nt, types))) rc = -1;
    }
    if (!rc) {
        ax_params q = with_subs(p, 1, &tb);
        q.nconsts = nrk;
        q.ncarry = nlk + ncar;
        q.reverse = !p->reverse;
        rc = ax_bind(cx, prim, nt, args, &q, res);
    }
    for (int i = 0, r = 0, x = nlk + ncar; i < nin; i++) {
        ct_in[i] = NULL;
        if (rc || !lin[i]) continue;
        ct_in[i] = i < nc ? res[r++] : i < nc + ncar ? res[nlk + i - nc] : res[x++];
    }
    for (int j = 0; !rc && j < ncar; j++) /* a constant initial carry: no cotangent */
        if (!lin[nc + j]) ax_array_release(res[nlk + j]);
    if (zeros) release_n(made, zeros);
    ax_ir_release(bt), ax_ir_release(tb);
    free(types), free(args);
    return rc;
}

static int scan_batch(ax_ctx *cx, ax_prim prim, const ax_params *p, int nin, ax_array **in,
                      const int *bdim, int64_t size, ax_array **out, int *out_bdim) {
    const ax_ir *body = p->sub[0];
    int nc = p->nconsts, ncar = p->ncarry, nout = body->nout;
    ax_array **x = alloc0(cx, (size_t)nin, sizeof *x);
    bool *bm = alloc0(cx, (size_t)nin + 2 * (size_t)nout, sizeof *bm);
    bool *force = bm ? bm + nin : NULL, *bo = bm ? force + nout : NULL;
    int rc = x && bm ? 0 : -1;
    for (int i = 0; i < nin && !rc; i++) bm[i] = bdim[i] >= 0;
    if (!rc && !carry_fixpoint(body, nc, ncar, bm)) rc = -1, ax_error_oom(cx);
    for (int i = 0; i < nin && !rc; i++) {
        bool is_x = i >= nc + ncar, is_carry = i >= nc && !is_x;
        /* xs keep their leading (scan) axis: the batch goes after it */
        x[i] = batch_at(cx, in[i], bdim[i], is_x ? 1 : 0, size, is_carry && bm[i]);
        if (!x[i]) rc = -1;
    }
    for (int j = 0; j < ncar; j++) force[j] = bm && bm[nc + j];
    ax_ir *vb = rc ? NULL : ax_pass_vmap(cx, body, size, bm, force, bo);
    if (!rc && !vb) rc = -1;
    if (!rc) {
        ax_params q = with_subs(p, 1, &vb);
        rc = ax_bind(cx, prim, nin, x, &q, out);
    }
    for (int j = 0; j < nout && bo; j++) out_bdim[j] = !bo[j] ? -1 : j < ncar ? 0 : 1;
    if (x) release_n(nin, x);
    ax_ir_release(vb);
    free(x), free(bm);
    return rc;
}

static void scan_dependencies(const ax_params *p, int nin, const bool *in, bool *out) {
    const ax_ir *body = p->sub[0];
    bool *mask = calloc((size_t)nin + 1, sizeof *mask);
    if (!mask) {
        for (int j = 0; j < body->nout; j++) out[j] = true;
        return;
    }
    memcpy(mask, in, (size_t)nin * sizeof *mask);
    (void)carry_fixpoint(body, p->nconsts, p->ncarry, mask); /* conservative will do here */
    (void)ax_ir_dependencies(body, mask, out);
    free(mask);
}

static void scan_format(ax_ir_printer *pr, const ax_params *p) {
    ax_ir_print_sub(pr, "jaxpr", p->sub[0]);
    ax_strbuf_appendf(ax_ir_print_param(pr), "length=%lld", (long long)p->length);
    ax_strbuf_appendf(ax_ir_print_param(pr), "num_carry=%d", p->ncarry);
    ax_strbuf_appendf(ax_ir_print_param(pr), "num_consts=%d", p->nconsts);
    ax_strbuf_appendf(ax_ir_print_param(pr), "reverse=%s", p->reverse ? "True" : "False");
    ax_strbuf_appendf(ax_ir_print_param(pr), "unroll=%d", p->unroll);
}

const ax_prim_info ax_scan_info = {
    .name = "scan",
    .nin = -1,
    .nout = -1,
    .shape = scan_shape,
    .eager = scan_eager,
    .jvp = scan_jvp,
    .transpose = scan_transpose,
    .batch = scan_batch,
    .partial_eval = scan_partial_eval,
    .nout_of = scan_nout,
    .dependencies = scan_dependencies,
    .format_subs = scan_format,
    .lower = {.kop = AX_KOP_SCAN},
    .tested_by = "tests/unit/test_control_flow.c, tests/lang/control_flow.ax",
};

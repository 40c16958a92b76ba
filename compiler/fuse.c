/* Fusion: a greedy pass over the equations in program order (see fuse.h).
 *
 * Every variable is in one of three states while the pass runs:
 *   - materialized: a buffer that exists once step `ready` has run (inputs and constants: -1);
 *   - in a kernel: a value computed inside LOOP step `kern` (node `node`), not stored yet;
 *   - a view: a broadcast / transpose / reshape of a materialized buffer, i.e. that buffer read
 *     with other strides, which any kernel can fold into its loads.
 * An elementwise equation joins the kernel of its operands when they agree on the iteration
 * shape and everything else it reads is ready before that kernel runs; otherwise it starts a
 * new kernel. A value is stored (materialized) only when something outside its kernel needs it:
 * an eager step, a matrix product, another kernel, or the program's outputs. */
#include "fuse.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../runtime/elementwise.h"
#include "../runtime/reduce.h"
#include "codegen.h"
#include "jit_cache.h"
#include "vecmath_jit.h"

enum { ST_MAT, ST_KERNEL, ST_VIEW };

typedef struct var_state {
    int state;
    int ready;                   /* ST_MAT: the step after which the buffer exists */
    int kern, node;              /* ST_KERNEL: step index and node */
    int src;                     /* ST_VIEW: the materialized variable read */
    int64_t stride[AX_MAX_RANK]; /* ST_VIEW: strides over this variable's shape */
    int view_eqn;        /* ST_VIEW: the equation that made the view (run eagerly if needed) */
    const ax_array *lit; /* ST_VIEW of a rank-0 literal (src < 0): the literal broadcast */
} var_state;

typedef struct fuser {
    ax_plan *plan;
    const ax_ir *ir;
    var_state *vs;
    const ax_array **uniform; /* per variable: a constant holding one value everywhere (a
                                 broadcast scalar), or NULL */
    bool oom;
} fuser;

static const ax_aval *type_of(const fuser *f, int var) {
    return &f->ir->types[var];
}

static void contiguous_strides(const ax_aval *t, int64_t *stride) {
    int64_t s = 1;
    for (int d = t->ndim - 1; d >= 0; d--) {
        stride[d] = t->shape[d] == 1 ? 0 : s;
        s *= t->shape[d];
    }
}

static bool same_shape(const ax_aval *a, int ndim, const int64_t *shape) {
    if (a->ndim != ndim) return false;
    for (int d = 0; d < ndim; d++)
        if (a->shape[d] != shape[d]) return false;
    return true;
}

static int add_step(fuser *f, ax_step step) {
    ax_plan *p = f->plan;
    if (p->nsteps == p->cap) {
        int cap = p->cap ? 2 * p->cap : 16;
        ax_step *grown = realloc(p->steps, (size_t)cap * sizeof *grown);
        if (!grown) {
            f->oom = true;
            return -1;
        }
        p->steps = grown;
        p->cap = cap;
    }
    p->steps[p->nsteps] = step;
    return p->nsteps++;
}

static int add_node(fuser *f, ax_kernel *k, ax_knode node) {
    if (k->nnodes == k->cap) {
        int cap = k->cap ? 2 * k->cap : 8;
        ax_knode *grown = realloc(k->nodes, (size_t)cap * sizeof *grown);
        if (!grown) {
            f->oom = true;
            return -1;
        }
        k->nodes = grown;
        k->cap = cap;
    }
    k->nodes[k->nnodes] = node;
    return k->nnodes++;
}

static ax_kernel *kernel_at(fuser *f, int step) {
    return f->plan->steps[step].k;
}

static int new_kernel(fuser *f, int ndim, const int64_t *shape) {
    ax_kernel *k = calloc(1, sizeof *k);
    if (!k) {
        f->oom = true;
        return -1;
    }
    k->ndim = ndim;
    memcpy(k->shape, shape, (size_t)ndim * sizeof *shape);
    int s = add_step(f, (ax_step){.kind = AX_STEP_LOOP, .eqn = -1, .k = k});
    if (s < 0) free(k);
    return s;
}

static void materialize(fuser *f, int var);

/* Runs the equation that made a view eagerly, so that its variable becomes a buffer. */
static void materialize_view(fuser *f, int var) {
    var_state *v = &f->vs[var];
    const ax_ir_eqn *e = &f->ir->eqns[v->view_eqn];
    for (int i = 0; i < e->nin; i++)
        if (e->in[i].var >= 0) materialize(f, e->in[i].var);
    int s = add_step(f, (ax_step){.kind = AX_STEP_EAGER, .eqn = v->view_eqn});
    *v = (var_state){.state = ST_MAT, .ready = s};
}

/* Makes `var` a buffer: a kernel value is stored by its kernel, a view is computed eagerly. */
static void materialize(fuser *f, int var) {
    var_state *v = &f->vs[var];
    if (v->state == ST_KERNEL) {
        ax_kernel *k = kernel_at(f, v->kern);
        k->nodes[v->node].store = true;
        *v = (var_state){.state = ST_MAT, .ready = v->kern};
    } else if (v->state == ST_VIEW) {
        materialize_view(f, var);
    }
}

/* The step after which `var`'s data can be read by a new reader (a view reads its source). */
static int ready_step(const fuser *f, int var) {
    const var_state *v = &f->vs[var];
    if (v->state == ST_VIEW) return v->src < 0 ? -1 : f->vs[v->src].ready;
    if (v->state == ST_KERNEL) return v->kern;
    return v->ready;
}

/* A LOAD node in kernel `ks` reading `var` (a buffer or a view) broadcast to the kernel shape:
 * rank-0 variables are read with stride 0. Reuses an identical load. */
static int load_node(fuser *f, int ks, int var) {
    ax_kernel *k = kernel_at(f, ks);
    const var_state *v = &f->vs[var];
    const ax_array *scalar = v->state == ST_VIEW && v->src < 0 ? v->lit
                             : v->state == ST_VIEW             ? f->uniform[v->src]
                                                               : f->uniform[var];
    if (scalar) /* a broadcast scalar: a constant in the loop */
        return add_node(
            f, k,
            (ax_knode){
                .kind = AX_KN_CONST, .dtype = scalar->dtype, .lit = scalar, .var = -1, .eqn = -1});
    ax_knode n = {.kind = AX_KN_LOAD, .dtype = type_of(f, var)->dtype, .eqn = -1};
    const ax_aval *t = type_of(f, var);
    if (t->ndim == 0) {
        n.var = v->state == ST_VIEW ? v->src : var;
    } else if (v->state == ST_VIEW) {
        n.var = v->src;
        memcpy(n.stride, v->stride, sizeof n.stride);
    } else {
        n.var = var;
        contiguous_strides(t, n.stride);
    }
    for (int i = 0; i < k->nnodes; i++) {
        const ax_knode *m = &k->nodes[i];
        if (m->kind == AX_KN_LOAD && m->var == n.var &&
            !memcmp(m->stride, n.stride, (size_t)k->ndim * sizeof *n.stride))
            return i;
    }
    return add_node(f, k, n);
}

/* The node of kernel `ks` giving operand `a`, adding a load or a constant when needed. */
static int operand_node(fuser *f, int ks, const ax_ir_atom *a) {
    if (a->var < 0)
        return add_node(
            f, kernel_at(f, ks),
            (ax_knode){
                .kind = AX_KN_CONST, .dtype = a->lit->dtype, .lit = a->lit, .var = -1, .eqn = -1});
    const var_state *v = &f->vs[a->var];
    if (v->state == ST_KERNEL && v->kern == ks) return v->node;
    return load_node(f, ks, a->var);
}

/* Whether operand `a` can be read inside kernel `ks` without reordering steps. */
static bool readable_in(const fuser *f, int ks, const ax_ir_atom *a) {
    if (a->var < 0) return true;
    const var_state *v = &f->vs[a->var];
    if (v->state == ST_KERNEL) return v->kern == ks || v->kern < ks;
    return ready_step(f, a->var) < ks;
}

/* Operands that live in another kernel must be stored there to be read here. */
static void prepare_operands(fuser *f, int ks, const ax_ir_eqn *e) {
    for (int i = 0; i < e->nin; i++) {
        int var = e->in[i].var;
        if (var < 0) continue;
        var_state *v = &f->vs[var];
        if (v->state == ST_KERNEL && v->kern != ks) materialize(f, var);
    }
}

/* The latest kernel holding one of e's operands with the same iteration shape, or -1. */
static int candidate_kernel(const fuser *f, const ax_ir_eqn *e, const ax_aval *shape) {
    int best = -1;
    for (int i = 0; i < e->nin; i++) {
        int var = e->in[i].var;
        if (var < 0 || f->vs[var].state != ST_KERNEL) continue;
        int ks = f->vs[var].kern;
        const ax_kernel *k = f->plan->steps[ks].k;
        if (same_shape(shape, k->ndim, k->shape) && ks > best) best = ks;
    }
    if (best >= 0) {
        for (int i = 0; i < e->nin; i++)
            if (!readable_in(f, best, &e->in[i])) return -1;
        return best;
    }
    /* no operand is in a kernel: join the latest kernel of this shape that can read them all
     * (x * x and x * 2.0 then share one loop) */
    for (int ks = f->plan->nsteps - 1; ks >= 0; ks--) {
        const ax_kernel *k = f->plan->steps[ks].k;
        if (!k || !same_shape(shape, k->ndim, k->shape)) continue;
        bool ok = true;
        for (int i = 0; i < e->nin; i++) ok &= readable_in(f, ks, &e->in[i]);
        if (ok) return ks;
    }
    return -1;
}

static void fuse_elementwise(fuser *f, int eqn) {
    const ax_ir_eqn *e = &f->ir->eqns[eqn];
    const ax_aval *t = type_of(f, e->out[0]);
    int ks = candidate_kernel(f, e, t);
    if (ks < 0) ks = new_kernel(f, t->ndim, t->shape);
    if (ks < 0) return;
    prepare_operands(f, ks, e);
    ax_knode n = {.kind = AX_KN_OP, .dtype = t->dtype, .var = e->out[0], .eqn = eqn, .nin = e->nin};
    if (ax_prim_get(e->prim)->lower.kop == AX_KOP_INDEX) {
        n.kind = AX_KN_INDEX;
        n.stride[e->params.axes[0]] = 1;
    }
    for (int i = 0; i < e->nin; i++) {
        n.in[i] = operand_node(f, ks, &e->in[i]);
        if (n.in[i] < 0) return;
    }
    int node = add_node(f, kernel_at(f, ks), n);
    if (node < 0) return;
    f->vs[e->out[0]] = (var_state){.state = ST_KERNEL, .kern = ks, .node = node};
}

static bool same_axes(const ax_kernel *k, const ax_params *p) {
    if (k->nreduce != p->naxes) return false;
    for (int i = 0; i < p->naxes; i++)
        if (k->reduce_axes[i] != p->axes[i]) return false;
    return true;
}

static void fuse_reduce(fuser *f, int eqn) {
    const ax_ir_eqn *e = &f->ir->eqns[eqn];
    const ax_aval *in = e->in[0].var >= 0 ? type_of(f, e->in[0].var) : NULL;
    int ks = -1;
    if (in && f->vs[e->in[0].var].state == ST_KERNEL) {
        ks = f->vs[e->in[0].var].kern;
        const ax_kernel *k = kernel_at(f, ks);
        if (!same_shape(in, k->ndim, k->shape) || (k->nreduce && !same_axes(k, &e->params)))
            ks = -1;
    }
    if (ks < 0) {
        if (!in) return; /* reductions of literals were folded away by simplify */
        if (f->vs[e->in[0].var].state == ST_KERNEL) materialize(f, e->in[0].var);
        ks = new_kernel(f, in->ndim, in->shape);
        if (ks < 0) return;
    }
    ax_kernel *k = kernel_at(f, ks);
    k->nreduce = e->params.naxes;
    memcpy(k->reduce_axes, e->params.axes, sizeof k->reduce_axes);
    for (int i = 0; i < e->params.naxes; i++) k->reduced[e->params.axes[i]] = true;
    int src = operand_node(f, ks, &e->in[0]);
    if (src < 0) return;
    k = kernel_at(f, ks);
    ax_knode n = {.kind = AX_KN_REDUCE,
                  .dtype = type_of(f, e->out[0])->dtype,
                  .var = e->out[0],
                  .eqn = eqn,
                  .nin = 1,
                  .in = {src},
                  .store = true};
    if (add_node(f, k, n) < 0) return;
    f->vs[e->out[0]] = (var_state){.state = ST_MAT, .ready = ks};
}

/* broadcast_in_dim, transpose and reshapes of buffers become views; of anything else (a view
 * of a view that is not a plain composition, a literal) they run eagerly. */
static bool make_view(fuser *f, int eqn) {
    const ax_ir_eqn *e = &f->ir->eqns[eqn];
    ax_kop kop = ax_prim_get(e->prim)->lower.kop;
    int x = e->in[0].var;
    const ax_array *lit = x < 0 ? e->in[0].lit : f->vs[x].state == ST_VIEW ? f->vs[x].lit : NULL;
    if (lit && lit->size == 1) { /* a scalar literal broadcast: every loop reads the constant */
        f->vs[e->out[0]] = (var_state){.state = ST_VIEW, .src = -1, .lit = lit, .view_eqn = eqn};
        return true;
    }
    if (x < 0) return false;
    var_state *src = &f->vs[x];
    const ax_aval *in = type_of(f, x), *out = type_of(f, e->out[0]);
    if (src->state == ST_KERNEL) materialize(f, x);
    int64_t base[AX_MAX_RANK];
    int src_var = x;
    if (src->state == ST_VIEW) {
        if (kop != AX_KOP_BROADCAST && kop != AX_KOP_TRANSPOSE) return false;
        memcpy(base, src->stride, sizeof base);
        src_var = src->src;
    } else {
        contiguous_strides(in, base);
    }
    var_state v = {.state = ST_VIEW, .src = src_var, .view_eqn = eqn};
    if (kop == AX_KOP_BROADCAST) {
        for (int i = 0; i < in->ndim; i++)
            v.stride[e->params.axes[i]] = in->shape[i] == 1 ? 0 : base[i];
    } else if (kop == AX_KOP_TRANSPOSE) {
        for (int d = 0; d < out->ndim; d++) v.stride[d] = base[e->params.axes[d]];
    } else { /* reshape, squeeze, expand_dims of a contiguous buffer */
        contiguous_strides(out, v.stride);
    }
    f->vs[e->out[0]] = v;
    return true;
}

/* An equation on its eager kernel, between the loops: matrix products too, so that they make
 * exactly the OpenBLAS calls they make eagerly (the layout of an operand decides which, and
 * OpenBLAS's bits depend on it), and anything the loops do not do. */
static void run_eagerly(fuser *f, int eqn) {
    const ax_ir_eqn *e = &f->ir->eqns[eqn];
    for (int i = 0; i < e->nin; i++)
        if (e->in[i].var >= 0) materialize(f, e->in[i].var);
    int s = add_step(f, (ax_step){.kind = AX_STEP_EAGER, .eqn = eqn});
    for (int i = 0; i < e->nout; i++) f->vs[e->out[i]] = (var_state){.state = ST_MAT, .ready = s};
}

/* cond, while, scan: a step whose sub-programs have plans of their own. */
static void fuse_control(fuser *f, int eqn) {
    const ax_ir_eqn *e = &f->ir->eqns[eqn];
    for (int i = 0; i < e->nin; i++)
        if (e->in[i].var >= 0) materialize(f, e->in[i].var);
    ax_step st = {.kind = AX_STEP_CONTROL, .eqn = eqn, .nsub = e->nsub};
    st.sub = calloc((size_t)e->nsub, sizeof *st.sub);
    st.sub_base = calloc((size_t)e->nsub, sizeof *st.sub_base);
    for (int i = 0; st.sub && st.sub_base && i < e->nsub; i++) {
        if (!(st.sub[i] = ax_fuse(e->sub[i])))
            f->oom = true;
        else if (st.sub[i]->unlowered)
            f->plan->unlowered = st.sub[i]->unlowered;
    }
    if (!st.sub || !st.sub_base) f->oom = true;
    int s = add_step(f, st);
    if (s < 0) { /* not kept: freed here */
        for (int i = 0; st.sub && i < e->nsub; i++) ax_plan_free(st.sub[i]);
        free(st.sub), free(st.sub_base);
    }
    for (int i = 0; i < e->nout; i++) f->vs[e->out[i]] = (var_state){.state = ST_MAT, .ready = s};
}

static void fuse_eqn(fuser *f, int eqn) {
    const ax_ir_eqn *e = &f->ir->eqns[eqn];
    const ax_prim_info *info = ax_prim_get(e->prim);
    if (info->lower.kop == AX_KOP_NONE) { /* a row that does not say: refused (see ax_plan) */
        f->plan->unlowered = info->name;
        run_eagerly(f, eqn);
        return;
    }
    if (ax_kop_is_control(info->lower.kop)) {
        fuse_control(f, eqn);
        return;
    }
    if (e->nout == 0) { /* an effect (debug_callback): an eager step, in program order */
        run_eagerly(f, eqn);
        return;
    }
    ax_aval in[4];
    int nin = e->nin < 4 ? e->nin : 4;
    for (int i = 0; i < nin; i++) {
        if (e->in[i].var >= 0)
            in[i] = *type_of(f, e->in[i].var);
        else
            ax_aval_of(&in[i], e->in[i].lit);
    }
    const ax_aval *out = type_of(f, e->out[0]);
    if (e->nin <= 3 && ax_codegen_fusable(e, in, out)) {
        if (ax_kop_is_reduction(info->lower.kop))
            fuse_reduce(f, eqn);
        else if (!ax_kop_is_view(info->lower.kop))
            fuse_elementwise(f, eqn);
        else if (!make_view(f, eqn))
            run_eagerly(f, eqn);
        return;
    }
    run_eagerly(f, eqn);
}

/* ---- finishing: merge dims that every access walks contiguously, and set store strides ---- */

static void store_strides(const ax_kernel *k, ax_knode *n) {
    int64_t s = 1;
    for (int d = k->ndim - 1; d >= 0; d--) {
        bool skip = n->kind == AX_KN_REDUCE && k->reduced[d];
        n->ostride[d] = skip || k->shape[d] == 1 ? 0 : s;
        if (!skip) s *= k->shape[d];
    }
}

static bool reads_strided(const ax_knode *n) {
    return n->kind == AX_KN_LOAD || n->kind == AX_KN_INDEX;
}

static bool steps_over(const int64_t *stride, const ax_kernel *k, int d) {
    return stride[d] == stride[d + 1] * k->shape[d + 1];
}

/* Dims d and d+1 merge when both are reduced or both kept and every access steps over d as
 * over a whole run of d+1; not into a reduced last dim, unless its runs are whole chunks: the
 * reductions' lanes and chunks are counted along it (runtime/reduce.h). */
static bool mergeable(const ax_kernel *k, int d) {
    if (k->reduced[d] != k->reduced[d + 1]) return false;
    if (k->reduced[d + 1] && d + 1 == k->ndim - 1 && k->shape[d + 1] % AX_REDUCE_CHUNK != 0)
        return false;
    for (int i = 0; i < k->nnodes; i++) {
        const ax_knode *n = &k->nodes[i];
        if (reads_strided(n) && !steps_over(n->stride, k, d)) return false;
        if (n->store && !steps_over(n->ostride, k, d)) return false;
    }
    return true;
}

static void remove_at(int64_t *a, int n, int d) {
    memmove(&a[d], &a[d + 1], (size_t)(n - d - 1) * sizeof *a);
}

static void drop_dim(ax_kernel *k, int d) {
    for (int i = 0; i < k->nnodes; i++) {
        remove_at(k->nodes[i].stride, k->ndim, d);
        remove_at(k->nodes[i].ostride, k->ndim, d);
    }
    remove_at(k->shape, k->ndim, d);
    memmove(&k->reduced[d], &k->reduced[d + 1], (size_t)(k->ndim - d - 1) * sizeof(bool));
    k->ndim--;
}

static void finish_kernel(ax_kernel *k) {
    for (int i = 0; i < k->nnodes; i++)
        if (k->nodes[i].store) store_strides(k, &k->nodes[i]);
    for (int d = k->ndim - 1; d >= 0 && k->ndim > 1; d--)
        if (k->shape[d] == 1) drop_dim(k, d);
    for (int d = k->ndim - 2; d >= 0; d--) {
        if (!mergeable(k, d)) continue;
        k->shape[d] *= k->shape[d + 1];
        for (int i = 0; i < k->nnodes; i++) {
            k->nodes[i].stride[d] = k->nodes[i].stride[d + 1];
            k->nodes[i].ostride[d] = k->nodes[i].ostride[d + 1];
        }
        drop_dim(k, d + 1);
    }
    if (k->ndim == 0) { /* a scalar kernel: one iteration */
        k->ndim = 1;
        k->shape[0] = 1;
        k->reduced[0] = false;
        for (int i = 0; i < k->nnodes; i++) k->nodes[i].stride[0] = k->nodes[i].ostride[0] = 0;
    }
}

/* Constants whose every element is one value (broadcasts of a scalar, which tracing makes of
 * zeros_like and the like): loops read them as constants. */
static void find_uniform_consts(fuser *f) {
    for (int i = 0; i < f->ir->nconsts; i++) {
        const ax_array *c = f->ir->consts[i];
        bool uniform = c->size >= 1 && !c->tracer && c->buf;
        for (int d = 0; uniform && d < c->ndim; d++)
            uniform = c->strides[d] == 0 || c->shape[d] == 1;
        if (uniform) f->uniform[f->ir->constvars[i]] = c;
    }
}

/* ---- lowering: the plan as code (see ax_code in fuse.h) ---- */

/* The variables whose buffers a LOOP step's function takes, in order; returns how many. */
static int kernel_buffers(const ax_kernel *k, int *vars) {
    int n = 0;
    for (int i = 0; i < k->nnodes; i++) {
        const ax_knode *nd = &k->nodes[i];
        if (nd->kind != AX_KN_LOAD && !nd->store) continue;
        bool seen = false;
        for (int j = 0; j < n && !seen; j++) seen = vars[j] == nd->var;
        if (!seen) vars[n++] = nd->var;
    }
    return n;
}

static int slot_of(const int *vars, int n, int var) {
    for (int b = 0; b < n; b++)
        if (vars[b] == var) return b;
    return -1;
}

/* Node n of a kernel as code. `code` is zeroed: fields are set one by one (never by assigning
 * a whole struct, whose padding bytes would then be undefined and reach the key). */
static void lower_node(const ax_plan *plan, const ax_knode *n, int ndim, const int *vars, int nbufs,
                       ax_code_node *c) {
    c->kind = n->kind;
    c->dtype = n->dtype;
    c->nin = n->nin;
    memcpy(c->in, n->in, sizeof c->in);
    c->store = n->store;
    memcpy(c->stride, n->stride, (size_t)ndim * sizeof *c->stride);
    memcpy(c->ostride, n->ostride, (size_t)ndim * sizeof *c->ostride);
    c->buf = n->kind == AX_KN_LOAD || n->store ? slot_of(vars, nbufs, n->var) : -1;
    if (n->kind == AX_KN_OP || n->kind == AX_KN_REDUCE || n->kind == AX_KN_INDEX) {
        const ax_ir_eqn *e = &plan->ir->eqns[n->eqn];
        c->prim = e->prim;
        if (ax_prim_get(e->prim)->lower.kop == AX_KOP_INTEGER_POW) c->k = e->params.k;
    }
    if (n->kind == AX_KN_CONST) memcpy(&c->lit, ax_array_data(n->lit), ax_dtype_size(n->dtype));
}

/* Counts what the code needs: steps, nodes and buffer slots (the sub-programs' included). */
static void count_code(const ax_plan *plan, int *nsteps, int *nnodes, int *nbufs) {
    *nsteps = plan->nsteps;
    *nnodes = *nbufs = 0;
    for (int s = 0; s < plan->nsteps; s++) {
        const ax_step *st = &plan->steps[s];
        if (st->kind == AX_STEP_LOOP) *nnodes += st->k->nnodes;
        if (st->kind == AX_STEP_LOOP) *nbufs += 2 * st->k->nnodes;
        for (int i = 0; i < st->nsub; i++) {
            const ax_code_header *h = &st->sub[i]->code.h;
            *nsteps += h->nsteps, *nnodes += h->nnodes, *nbufs += h->nbufs;
        }
    }
}

/* Appends a sub-program's code (already lowered, its own sub-programs included) to the
 * plan's; returns the step it starts at. */
static int append_code(ax_plan *plan, int *nsteps, const ax_plan *sub) {
    ax_code *code = &plan->code;
    const ax_code *sc = &sub->code;
    int base = *nsteps;
    for (int s = 0; s < sc->h.nsteps; s++) {
        ax_code_step *cs = &code->steps[base + s];
        *cs = sc->steps[s]; /* records are zeroed where unused: a copy keeps them so */
        if (cs->kind != AX_STEP_LOOP) continue;
        cs->first_node += code->h.nnodes;
        cs->first_buf += code->h.nbufs;
    }
    memcpy(code->nodes + code->h.nnodes, sc->nodes, (size_t)sc->h.nnodes * sizeof *sc->nodes);
    memcpy(code->bufs + code->h.nbufs, sc->bufs, (size_t)sc->h.nbufs * sizeof *sc->bufs);
    memcpy(plan->slot_var + code->h.nbufs, sub->slot_var,
           (size_t)sc->h.nbufs * sizeof *sub->slot_var);
    code->h.nnodes += sc->h.nnodes;
    code->h.nbufs += sc->h.nbufs;
    *nsteps += sc->h.nsteps;
    return base;
}

static void lower_loop(ax_plan *plan, const ax_kernel *k, ax_code_step *cs, int *vars) {
    ax_code *code = &plan->code;
    cs->ndim = k->ndim;
    memcpy(cs->shape, k->shape, (size_t)k->ndim * sizeof *k->shape);
    memcpy(cs->reduced, k->reduced, (size_t)k->ndim * sizeof *k->reduced);
    cs->first_node = code->h.nnodes;
    cs->nnodes = k->nnodes;
    cs->first_buf = code->h.nbufs;
    cs->nbufs = kernel_buffers(k, vars);
    for (int b = 0; b < cs->nbufs; b++) {
        code->bufs[code->h.nbufs + b] = plan->ir->types[vars[b]].dtype;
        plan->slot_var[code->h.nbufs + b] = vars[b];
    }
    for (int i = 0; i < k->nnodes; i++)
        lower_node(plan, &k->nodes[i], k->ndim, vars, cs->nbufs, &code->nodes[code->h.nnodes + i]);
    ax_codegen_choose_split(code, (int)(cs - code->steps), &cs->split); /* field by field */
    code->h.nnodes += k->nnodes;
    code->h.nbufs += cs->nbufs;
}

/* Fills plan->code and plan->slot_var; false when out of memory. */
static bool lower_plan(ax_plan *plan) {
    ax_code *code = &plan->code;
    int nsteps, nnodes, nbufs, maxnodes = 0;
    count_code(plan, &nsteps, &nnodes, &nbufs);
    for (int s = 0; s < plan->nsteps; s++)
        if (plan->steps[s].k && plan->steps[s].k->nnodes > maxnodes)
            maxnodes = plan->steps[s].k->nnodes;
    code->steps = calloc((size_t)nsteps + 1, sizeof *code->steps);
    code->nodes = calloc((size_t)nnodes + 1, sizeof *code->nodes);
    code->bufs = calloc((size_t)nbufs + 1, sizeof *code->bufs);
    plan->slot_var = calloc((size_t)nbufs + 1, sizeof *plan->slot_var);
    int *vars = malloc((2 * (size_t)maxnodes + 1) * sizeof *vars);
    if (!code->steps || !code->nodes || !code->bufs || !plan->slot_var || !vars) {
        free(vars);
        return false;
    }
    _Static_assert(sizeof AX_CODEGEN_VERSION + 1 + AX_VECMATH_REVISION_MAX <=
                       sizeof code->h.version,
                   "the version and the vector math's revision must fit the header, whole");
    snprintf(code->h.version, sizeof code->h.version, "%s+%s", AX_CODEGEN_VERSION,
             ax_vecmath_jit_revision());
    snprintf(code->h.target, sizeof code->h.target, "%s", ax_codegen_target());
    code->h.vector_lanes = ax_elementwise_vector_lanes();
    code->h.opt_level = ax_codegen_opt_level();
    code->h.piece_work = ax_codegen_piece_work();
    for (int s = 0; s < plan->nsteps; s++) {
        const ax_step *st = &plan->steps[s];
        ax_code_step *cs = &code->steps[s];
        cs->kind = st->kind;
        if (st->kind == AX_STEP_LOOP) lower_loop(plan, st->k, cs, vars);
    }
    int at = plan->nsteps;
    for (int s = 0; s < plan->nsteps; s++)
        for (int i = 0; i < plan->steps[s].nsub; i++)
            plan->steps[s].sub_base[i] = append_code(plan, &at, plan->steps[s].sub[i]);
    code->h.nsteps = at;
    free(vars);
    return true;
}

/* The key hashes the header and the records' bytes, so it covers every field of them. A new
 * member of ax_code itself (another array) would not be: this assertion stops the build
 * until it is added to the hash below. */
_Static_assert(sizeof(ax_code_header) % 8 == 0 &&
                   sizeof(ax_code) == sizeof(ax_code_header) + 3 * sizeof(void *),
               "a new member of ax_code must be hashed in ax_code_key");

/* What the code generator reads from the primitive table besides the code: the rows'
 * lowerings (compiler/primitive.h). Hashed into every key, so that a row whose lowering changes
 * never meets the code compiled for the old one in the disk cache. */
static uint64_t hash_lowerings(uint64_t h) {
    for (int p = 0; p < AX_P_NPRIMS; p++) {
        const ax_prim_info *info = ax_prim_get((ax_prim)p);
        const ax_lowering *l = &info->lower;
        int64_t v[7] = {l->kop, l->dtypes, l->vec_f32, l->fn_slot, l->vecmath, l->vm, info->nin};
        h = ax_hash_bytes(h, v, sizeof v);
        if (l->fn) h = ax_hash_bytes(h, l->fn, strlen(l->fn) + 1);
    }
    return h;
}

uint64_t ax_code_key(const ax_code *code) {
    uint64_t h = hash_lowerings(ax_hash_bytes(AX_HASH_INIT, &code->h, sizeof code->h));
    h = ax_hash_bytes(h, code->steps, (size_t)code->h.nsteps * sizeof *code->steps);
    h = ax_hash_bytes(h, code->nodes, (size_t)code->h.nnodes * sizeof *code->nodes);
    return ax_hash_bytes(h, code->bufs, (size_t)code->h.nbufs * sizeof *code->bufs);
}

ax_plan *ax_fuse(const ax_ir *ir) {
    fuser f = {.ir = ir};
    f.plan = calloc(1, sizeof *f.plan);
    f.vs = calloc((size_t)ir->nvars + 1, sizeof *f.vs);
    f.uniform = calloc((size_t)ir->nvars + 1, sizeof *f.uniform);
    if (!f.plan || !f.vs || !f.uniform) {
        free(f.vs), free(f.uniform);
        free(f.plan);
        return NULL;
    }
    f.plan->ir = ir;
    find_uniform_consts(&f);
    for (int v = 0; v < ir->nvars; v++) {
        f.vs[v] = (var_state){.state = ST_MAT, .ready = -1};
    }
    for (int k = 0; k < ir->neqns && !f.oom; k++) fuse_eqn(&f, k);
    for (int i = 0; i < ir->nout && !f.oom; i++)
        if (ir->outs[i].var >= 0) materialize(&f, ir->outs[i].var);
    free(f.vs), free(f.uniform);
    if (f.oom) {
        ax_plan_free(f.plan);
        return NULL;
    }
    for (int s = 0; s < f.plan->nsteps; s++)
        if (f.plan->steps[s].kind == AX_STEP_LOOP) finish_kernel(f.plan->steps[s].k);
    if (!lower_plan(f.plan)) {
        ax_plan_free(f.plan);
        return NULL;
    }
    return f.plan;
}

void ax_plan_free(ax_plan *plan) {
    if (!plan) return;
    free(plan->code.steps);
    free(plan->code.nodes);
    free(plan->code.bufs);
    free(plan->slot_var);
    for (int s = 0; s < plan->nsteps; s++) {
        ax_step *st = &plan->steps[s];
        if (st->k) {
            free(st->k->nodes);
            free(st->k);
        }
        for (int i = 0; st->sub && i < st->nsub; i++) ax_plan_free(st->sub[i]);
        free(st->sub);
        free(st->sub_base);
    }
    free(plan->steps);
    free(plan);
}

static void format_kernel(ax_strbuf *out, const ax_plan *plan, const ax_kernel *k) {
    ax_strbuf_appendf(out, "loop[");
    for (int d = 0; d < k->ndim; d++)
        ax_strbuf_appendf(out, "%s%s%lld", d ? "," : "", k->reduced[d] ? "+" : "",
                          (long long)k->shape[d]);
    ax_strbuf_appendf(out, "]:");
    for (int i = 0; i < k->nnodes; i++) {
        const ax_knode *n = &k->nodes[i];
        if (n->kind == AX_KN_OP || n->kind == AX_KN_REDUCE || n->kind == AX_KN_INDEX)
            ax_strbuf_appendf(out, " %s", ax_prim_get(plan->ir->eqns[n->eqn].prim)->name);
    }
}

static void format_steps(ax_strbuf *out, const ax_plan *plan, int depth) {
    for (int s = 0; s < plan->nsteps; s++) {
        const ax_step *st = &plan->steps[s];
        for (int i = 0; i < depth; i++) ax_strbuf_append(out, "  ");
        if (st->kind == AX_STEP_LOOP)
            format_kernel(out, plan, st->k);
        else
            ax_strbuf_appendf(out, "%s %s", st->kind == AX_STEP_EAGER ? "eager" : "loop over",
                              ax_prim_get(plan->ir->eqns[st->eqn].prim)->name);
        ax_strbuf_appendf(out, "\n");
        for (int i = 0; i < st->nsub; i++) format_steps(out, st->sub[i], depth + 1);
    }
}

void ax_plan_format(ax_strbuf *out, const ax_plan *plan) {
    format_steps(out, plan, 0);
}

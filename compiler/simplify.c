/* The simplify pass (see simplify.h). One forward sweep rewrites each equation through a map
 * from old variables to new atoms (identities, folding, CSE), then a backward sweep drops the
 * equations whose results are unused. */
#include "simplify.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "debug_callback.h"

typedef struct rewriter {
    ax_ctx *cx;
    const ax_ir *ir;
    ax_ir_builder *b;
    ax_ir_atom *map;  /* old variable -> atom of the new IR */
    ax_array **owned; /* folded literals, released at the end */
    int nowned;
    int *seen;    /* hash table of equations of the new IR, for CSE: index + 1, 0 = empty */
    int nseen;    /* its size (a power of two, at least twice the equations) */
    int *made_by; /* variable of the new IR -> the equation that makes it, or -1 */
    int nmade;    /* its size */
} rewriter;

bool ax_ir_atom_is(const ax_ir_atom *a, double v) {
    if (a->var >= 0 || !a->lit || a->lit->ndim != 0 || !a->lit->buf) return false;
    return ax_array_get_f64(a->lit, 0) == v;
}

bool ax_ir_atom_is_zero(const ax_ir_atom *a, bool negative) {
    if (!ax_ir_atom_is(a, 0.0)) return false;
    return !ax_dtype_is_float(a->lit->dtype) || signbit(ax_array_get_f64(a->lit, 0)) == negative;
}

int ax_identity_operand(const ax_params *p, const ax_ir_atom *in) {
    (void)p, (void)in;
    return 0;
}

static bool same_atom(const ax_ir_atom *x, const ax_ir_atom *y) {
    if (x->var >= 0 || y->var >= 0) return x->var == y->var;
    if (x->lit->dtype != y->lit->dtype || x->lit->weak != y->lit->weak) return false;
    /* the same bits: 0.0 and -0.0 differ (x * 0.0 is not x * -0.0), NaNs match */
    double a = ax_array_get_f64(x->lit, 0), b = ax_array_get_f64(y->lit, 0);
    return memcmp(&a, &b, sizeof a) == 0 || (a != a && b != b);
}

static void atom_type(const rewriter *r, const ax_ir_atom *a, ax_aval *t) {
    ax_ir_atom_type(r->b, a, t);
}

static bool type_equal(const ax_aval *a, const ax_aval *b) {
    return a->dtype == b->dtype && ax_shape_equal(a->ndim, a->shape, b->ndim, b->shape);
}

/* The operand an identity reduces the equation to, or NULL. */
static const ax_ir_atom *identity_of(const rewriter *r, const ax_ir_eqn *e, const ax_ir_atom *in,
                                     const ax_aval *out) {
    const ax_prim_info *info = ax_prim_get(e->prim);
    const ax_ir_atom *keep = NULL;
    if (info->identity) {
        int k = info->identity(&e->params, in);
        keep = k >= 0 ? &in[k] : NULL;
    }
    if (!keep) return NULL;
    ax_aval t;
    atom_type(r, keep, &t);
    /* Only when the kept operand already has the result's type (x * 1 with x: f32[] and a
     * result f32[3] is a broadcast, not an identity). */
    return type_equal(&t, out) ? keep : NULL; /* weak or not: the IR's types are fixed */
}

const ax_ir_eqn *ax_simplify_producer(const ax_simplify_view *v, const ax_ir_atom *a) {
    const rewriter *r = (const rewriter *)v;
    if (a->var < 0 || a->var >= r->nmade || r->made_by[a->var] < 0) return NULL;
    return &ax_ir_builder_peek(r->b)->eqns[r->made_by[a->var]];
}

/* Evaluates an equation whose operands are all literals; the result becomes a literal. */
static bool try_fold(rewriter *r, const ax_ir_eqn *e, const ax_ir_atom *in, ax_ir_atom *res) {
    /* sub-programs are not run at compile time (a loop may be long) */
    if (e->nout != 1 || e->nin == 0 || e->nin > 8 || e->nsub) return false;
    ax_array *args[8];
    for (int i = 0; i < e->nin; i++) {
        if (in[i].var >= 0) return false;
        args[i] = in[i].lit;
    }
    ax_array *out = NULL;
    if (ax_bind(r->cx, e->prim, e->nin, args, &e->params, &out)) {
        ax_error_clear(r->cx); /* not foldable here; the equation stays */
        return false;
    }
    if (out->ndim != 0 || out->tracer) {
        ax_array_release(out);
        return false;
    }
    ax_array **owned = realloc(r->owned, (size_t)(r->nowned + 1) * sizeof *owned);
    if (!owned) {
        ax_array_release(out);
        return false;
    }
    r->owned = owned;
    r->owned[r->nowned++] = out;
    *res = (ax_ir_atom){.var = -1, .lit = out};
    return true;
}

/* An earlier equation of the new IR computing the same thing, or -1. */
/* A hash of what an equation computes: primitive and operands (parameters are compared). */
static unsigned eqn_hash(ax_prim prim, int nin, const ax_ir_atom *in) {
    unsigned h = 2166136261u ^ (unsigned)prim;
    for (int i = 0; i < nin; i++) {
        double v = in[i].var < 0 && in[i].lit->buf ? ax_array_get_f64(in[i].lit, 0) : 0;
        uint64_t bits;
        memcpy(&bits, &v, sizeof bits); /* a literal by its bits (NaN and -0.0 included) */
        unsigned x =
            in[i].var >= 0 ? (unsigned)in[i].var * 2654435761u : (unsigned)(bits ^ (bits >> 32));
        h = (h ^ x) * 16777619u;
    }
    return h;
}

static bool same_eqn(const ax_ir_eqn *f, const ax_ir_eqn *e, const ax_ir_atom *in) {
    if (f->prim != e->prim || f->nin != e->nin || f->nout != 1 || f->nsub || e->nsub) return false;
    if (memcmp(&f->params, &e->params, sizeof e->params)) return false;
    for (int i = 0; i < e->nin; i++)
        if (!same_atom(&f->in[i], &in[i])) return false;
    return true;
}

/* An earlier equation of the new IR computing the same thing (its output variable), or -1;
 * when none, *slot is where the next equation goes in the table. */
static int find_common(const rewriter *r, const ax_ir_eqn *e, const ax_ir_atom *in, int *slot) {
    const ax_ir *nir = ax_ir_builder_peek(r->b);
    unsigned mask = (unsigned)r->nseen - 1;
    for (unsigned h = eqn_hash(e->prim, e->nin, in) & mask;; h = (h + 1) & mask) {
        if (!r->seen[h]) {
            *slot = (int)h;
            return -1;
        }
        const ax_ir_eqn *f = &nir->eqns[r->seen[h] - 1];
        if (same_eqn(f, e, in)) return f->out[0];
    }
}

static int add_rewritten(rewriter *r, const ax_ir_eqn *e, const ax_ir_atom *in, int slot,
                         ax_aval *out_types, int *vars) {
    if (ax_ir_add_eqn(r->b, e->prim, &e->params, e->nin, in, e->nout, out_types, vars, e->nsub,
                      e->sub))
        return -1;
    int made = ax_ir_builder_peek(r->b)->neqns;
    if (slot >= 0) r->seen[slot] = made;
    for (int i = 0; i < e->nout; i++) {
        r->map[e->out[i]] = (ax_ir_atom){.var = vars[i]};
        if (vars[i] < r->nmade) r->made_by[vars[i]] = made - 1;
    }
    return 0;
}

/* Maps e's operands into the new IR and applies the rewrites that replace an equation by an
 * atom: 0 when one did, 1 when the equation must be added. */
static int rewrite_into(rewriter *r, ax_ir_eqn *e, ax_ir_atom *in, int *pslot, ax_aval *out_types) {
    int slot = -1;
    for (int i = 0; i < e->nin; i++) in[i] = e->in[i].var >= 0 ? r->map[e->in[i].var] : e->in[i];
    const ax_prim_info *info = ax_prim_get(e->prim);
    if (info->fold) info->fold((const ax_simplify_view *)r, &e->params, in);
    for (int i = 0; i < e->nout; i++) out_types[i] = r->ir->types[e->out[i]];
    if (e->nout == 1) {
        const ax_ir_atom *keep = identity_of(r, e, in, &out_types[0]);
        ax_ir_atom folded;
        if (keep) {
            r->map[e->out[0]] = *keep;
            return 0;
        }
        if (try_fold(r, e, in, &folded)) {
            r->map[e->out[0]] = folded;
            return 0;
        }
        int common = find_common(r, e, in, &slot);
        if (common >= 0) {
            r->map[e->out[0]] = (ax_ir_atom){.var = common};
            return 0;
        }
    }
    *pslot = slot;
    return 1;
}

static int rewrite_eqn(rewriter *r, const ax_ir_eqn *orig) {
    ax_ir_eqn local = *orig, *e = &local; /* its parameters may change */
    int slot = -1;
    ax_ir_atom in_small[16], *in = e->nin <= 16 ? in_small : malloc((size_t)e->nin * sizeof *in);
    ax_aval types_small[4];
    ax_aval *out_types = e->nout <= 4 ? types_small : malloc((size_t)e->nout * sizeof *out_types);
    int vars_small[4], *vars = e->nout <= 4 ? vars_small : malloc((size_t)e->nout * sizeof *vars);
    int rc = in && out_types && vars ? 1 : -1;
    if (rc > 0) rc = rewrite_into(r, e, in, &slot, out_types);
    if (rc > 0) rc = add_rewritten(r, e, in, slot, out_types, vars);
    if (in != in_small) free(in);
    if (out_types != types_small) free(out_types);
    if (vars != vars_small) free(vars);
    return rc;
}

/* Dead code elimination: a copy of `ir` without equations whose outputs are never used. */
static ax_ir *drop_dead(ax_ctx *cx, ax_ir *ir) {
    bool *live = calloc((size_t)ir->nvars + 1, sizeof *live);
    bool *keep = calloc((size_t)ir->neqns + 1, sizeof *keep);
    ax_ir_builder *b = ax_ir_builder_new();
    ax_ir_atom *map = calloc((size_t)ir->nvars + 1, sizeof *map);
    ax_ir *res = NULL;
    int maxin = 1, maxout = 1;
    for (int k = 0; k < ir->neqns; k++) {
        if (ir->eqns[k].nin > maxin) maxin = ir->eqns[k].nin;
        if (ir->eqns[k].nout > maxout) maxout = ir->eqns[k].nout;
    }
    ax_ir_atom *in = malloc((size_t)maxin * sizeof *in);
    ax_aval *types = malloc((size_t)maxout * sizeof *types);
    int *vars = malloc((size_t)maxout * sizeof *vars);
    if (!live || !keep || !b || !map || !in || !types || !vars) goto done;
    for (int j = 0; j < ir->nout; j++)
        if (ir->outs[j].var >= 0) live[ir->outs[j].var] = true;
    for (int k = ir->neqns - 1; k >= 0; k--) {
        const ax_ir_eqn *e = &ir->eqns[k];
        keep[k] = ax_eqn_has_effect(e); /* effects stay, with what they read */
        for (int i = 0; i < e->nout; i++) keep[k] |= live[e->out[i]];
        for (int i = 0; keep[k] && i < e->nin; i++)
            if (e->in[i].var >= 0) live[e->in[i].var] = true;
    }
    int rc = 0;
    for (int i = 0; i < ir->nconsts && !rc; i++) {
        int v = ax_ir_add_const(b, ir->consts[i]);
        map[ir->constvars[i]] = (ax_ir_atom){.var = v};
        rc = v < 0;
    }
    for (int i = 0; i < ir->nin && !rc; i++) {
        int v = ax_ir_add_input(b, &ir->types[ir->invars[i]]);
        map[ir->invars[i]] = (ax_ir_atom){.var = v};
        rc = v < 0;
    }
    for (int k = 0; k < ir->neqns && !rc; k++) {
        const ax_ir_eqn *e = &ir->eqns[k];
        if (!keep[k]) continue;
        for (int i = 0; i < e->nin; i++) in[i] = e->in[i].var >= 0 ? map[e->in[i].var] : e->in[i];
        for (int i = 0; i < e->nout; i++) types[i] = ir->types[e->out[i]];
        rc = ax_ir_add_eqn(b, e->prim, &e->params, e->nin, in, e->nout, types, vars, e->nsub,
                           e->sub);
        for (int i = 0; !rc && i < e->nout; i++) map[e->out[i]] = (ax_ir_atom){.var = vars[i]};
    }
    if (!rc) {
        ax_ir_atom *outs = calloc((size_t)ir->nout + 1, sizeof *outs);
        if (outs) {
            for (int j = 0; j < ir->nout; j++)
                outs[j] = ir->outs[j].var >= 0 ? map[ir->outs[j].var] : ir->outs[j];
            res = ax_ir_builder_finish(b, ir->nout, outs);
            b = NULL;
            free(outs);
        }
    }
done:
    ax_ir_builder_free(b);
    free(live);
    free(keep);
    free(map);
    free(in);
    free(types);
    free(vars);
    if (!res && !ax_error_pending(cx)) ax_error_oom(cx);
    return res;
}

ax_ir *ax_simplify(ax_ctx *cx, const ax_ir *ir) {
    rewriter r = {.cx = cx, .ir = ir, .b = ax_ir_builder_new()};
    r.map = calloc((size_t)ir->nvars + 1, sizeof *r.map);
    r.nseen = 16;
    while (r.nseen < 2 * ir->neqns + 2) r.nseen *= 2;
    r.seen = calloc((size_t)r.nseen, sizeof *r.seen);
    r.nmade = ir->nvars; /* the new IR has no more variables than the old */
    r.made_by = malloc(((size_t)r.nmade + 1) * sizeof *r.made_by);
    for (int v = 0; r.made_by && v < r.nmade; v++) r.made_by[v] = -1;
    ax_ir *mid = NULL, *res = NULL;
    int rc = r.b && r.map && r.seen && r.made_by ? 0 : -1;
    for (int i = 0; i < ir->nconsts && !rc; i++) {
        int v = ax_ir_add_const(r.b, ir->consts[i]);
        r.map[ir->constvars[i]] = (ax_ir_atom){.var = v};
        rc = v < 0;
    }
    for (int i = 0; i < ir->nin && !rc; i++) {
        int v = ax_ir_add_input(r.b, &ir->types[ir->invars[i]]);
        r.map[ir->invars[i]] = (ax_ir_atom){.var = v};
        rc = v < 0;
    }
    for (int k = 0; k < ir->neqns && !rc; k++) rc = rewrite_eqn(&r, &ir->eqns[k]);
    if (!rc) {
        ax_ir_atom *outs = calloc((size_t)ir->nout + 1, sizeof *outs);
        if (outs) {
            for (int j = 0; j < ir->nout; j++)
                outs[j] = ir->outs[j].var >= 0 ? r.map[ir->outs[j].var] : ir->outs[j];
            mid = ax_ir_builder_finish(r.b, ir->nout, outs);
            r.b = NULL;
            free(outs);
        }
    }
    ax_ir_builder_free(r.b);
    if (mid) res = drop_dead(cx, mid);
    ax_ir_release(mid);
    for (int i = 0; i < r.nowned; i++) ax_array_release(r.owned[i]);
    free(r.owned);
    free(r.map);
    free(r.seen);
    free(r.made_by);
    if (!res && !ax_error_pending(cx)) ax_error_oom(cx);
    return res;
}

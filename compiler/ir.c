/* The typed IR: builder, printer, verifier, evaluator. */
#include "ir.h"

#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- lifetime */

ax_ir *ax_ir_retain(ax_ir *ir) {
    if (ir) ir->refs++;
    return ir;
}

static void atom_release(ax_ir_atom *a) {
    if (a->var < 0) ax_array_release(a->lit);
}

static void eqn_free(ax_ir_eqn *e) {
    ax_callback_release(e->params.cb);
    for (int i = 0; i < e->nin; i++) atom_release(&e->in[i]);
    for (int i = 0; i < e->nsub; i++) ax_ir_release(e->sub[i]);
    free(e->in);
    free(e->out);
    free(e->sub);
}

void ax_ir_release(ax_ir *ir) {
    if (!ir || --ir->refs > 0) return;
    for (int i = 0; i < ir->neqns; i++) eqn_free(&ir->eqns[i]);
    for (int i = 0; i < ir->nconsts; i++) ax_array_release(ir->consts[i]);
    for (int i = 0; i < ir->nout; i++) atom_release(&ir->outs[i]);
    free(ir->types);
    free(ir->constvars);
    free(ir->consts);
    free(ir->invars);
    free(ir->eqns);
    free(ir->outs);
    free(ir->name);
    if (ir->attached_free) ir->attached_free(ir->attached);
    free(ir);
}

int ax_ir_set_name(ax_ir *ir, const char *name) {
    char *copy = name ? strdup(name) : NULL;
    if (name && !copy) return -1;
    free(ir->name);
    ir->name = copy;
    return 0;
}

/* ---------------------------------------------------------------- building */

struct ax_ir_builder {
    ax_ir *ir; /* grows in place; capacities below */
    int cap_vars, cap_eqns, cap_in, cap_consts;
};

ax_ir_builder *ax_ir_builder_new(void) {
    ax_ir_builder *b = calloc(1, sizeof *b);
    if (!b) return NULL;
    b->ir = calloc(1, sizeof *b->ir);
    if (!b->ir) {
        free(b);
        return NULL;
    }
    b->ir->refs = 1;
    return b;
}

void ax_ir_builder_free(ax_ir_builder *b) {
    if (!b) return;
    ax_ir_release(b->ir);
    free(b);
}

/* Grows *arr (of elements of `size` bytes) so that index n fits. The first allocation holds
 * about 1 KB: an equation is ~1 KB (its parameters), and most traced IRs are small. */
static bool grow(void **arr, int *cap, int n, size_t size) {
    if (n < *cap) return true;
    int nc = *cap ? *cap * 2 : size >= 256 ? 2 : 16;
    while (nc <= n) nc *= 2;
    void *p = realloc(*arr, (size_t)nc * size);
    if (!p) return false;
    *arr = p;
    *cap = nc;
    return true;
}

int ax_ir_new_var(ax_ir_builder *b, const ax_aval *type) {
    ax_ir *ir = b->ir;
    if (!grow((void **)&ir->types, &b->cap_vars, ir->nvars, sizeof *ir->types)) return -1;
    ir->types[ir->nvars] = *type;
    return ir->nvars++;
}

int ax_ir_add_input(ax_ir_builder *b, const ax_aval *type) {
    ax_ir *ir = b->ir;
    int v = ax_ir_new_var(b, type);
    if (v < 0 || !grow((void **)&ir->invars, &b->cap_in, ir->nin, sizeof *ir->invars)) return -1;
    ir->invars[ir->nin++] = v;
    return v;
}

int ax_ir_add_const(ax_ir_builder *b, ax_array *value) {
    ax_ir *ir = b->ir;
    ax_aval t;
    ax_aval_of(&t, value);
    int v = ax_ir_new_var(b, &t);
    int cap = b->cap_consts;
    if (v < 0 || !grow((void **)&ir->constvars, &cap, ir->nconsts, sizeof *ir->constvars) ||
        !grow((void **)&ir->consts, &b->cap_consts, ir->nconsts, sizeof *ir->consts))
        return -1;
    ir->constvars[ir->nconsts] = v;
    ir->consts[ir->nconsts++] = ax_array_retain(value);
    return v;
}

int ax_ir_add_eqn(ax_ir_builder *b, ax_prim prim, const ax_params *params, int nin,
                  const ax_ir_atom *in, int nout, const ax_aval *out_types, int *out, int nsub,
                  ax_ir *const *sub) {
    ax_ir *ir = b->ir;
    if (!grow((void **)&ir->eqns, &b->cap_eqns, ir->neqns, sizeof *ir->eqns)) return -1;
    if (!nsub && params) {
        nsub = params->nsub;
        sub = (ax_ir *const *)params->sub;
    }
    ax_ir_eqn e = {.prim = prim, .nin = nin, .nout = nout, .nsub = nsub};
    if (params) e.params = *params;
    e.in = malloc((size_t)(nin ? nin : 1) * sizeof *e.in);
    e.out = malloc((size_t)(nout ? nout : 1) * sizeof *e.out);
    e.sub = nsub ? malloc((size_t)nsub * sizeof *e.sub) : NULL;
    if (!e.in || !e.out || (nsub && !e.sub)) goto fail;
    for (int i = 0; i < nout; i++) {
        out[i] = e.out[i] = ax_ir_new_var(b, &out_types[i]);
        if (out[i] < 0) goto fail;
    }
    for (int i = 0; i < nin; i++) {
        e.in[i] = in[i];
        if (in[i].var < 0) ax_array_retain(in[i].lit);
    }
    for (int i = 0; i < nsub; i++) e.sub[i] = ax_ir_retain(sub[i]);
    e.params.nsub = nsub;
    e.params.sub = (struct ax_ir *const *)e.sub;
    ax_callback_retain(e.params.cb);
    ir->eqns[ir->neqns++] = e;
    return 0;
fail:
    free(e.in);
    free(e.out);
    free(e.sub);
    return -1;
}

ax_ir *ax_ir_builder_finish(ax_ir_builder *b, int nout, const ax_ir_atom *outs) {
    ax_ir *ir = b->ir;
    ir->outs = malloc((size_t)(nout ? nout : 1) * sizeof *ir->outs);
    if (!ir->outs) {
        ax_ir_builder_free(b);
        return NULL;
    }
    for (int i = 0; i < nout; i++) {
        ir->outs[i] = outs[i];
        if (outs[i].var < 0) ax_array_retain(outs[i].lit);
    }
    ir->nout = nout;
    free(b);
    return ir;
}

const ax_aval *ax_ir_builder_type(const ax_ir_builder *b, int var) {
    return &b->ir->types[var];
}
const ax_ir *ax_ir_builder_peek(const ax_ir_builder *b) {
    return b->ir;
}

void ax_ir_atom_type(const ax_ir_builder *b, const ax_ir_atom *a, ax_aval *out) {
    if (a->var >= 0)
        *out = b->ir->types[a->var];
    else
        ax_aval_of(out, a->lit);
}

/* ---------------------------------------------------------------- closure conversion */

static int copy_eqn(ax_ir_eqn *dst, const ax_ir_eqn *src) {
    *dst = *src;
    dst->in = malloc((size_t)(src->nin ? src->nin : 1) * sizeof *dst->in);
    dst->out = malloc((size_t)(src->nout ? src->nout : 1) * sizeof *dst->out);
    dst->sub = src->nsub ? malloc((size_t)src->nsub * sizeof *dst->sub) : NULL;
    if (!dst->in || !dst->out || (src->nsub && !dst->sub)) {
        free(dst->in);
        free(dst->out);
        free(dst->sub);
        return -1;
    }
    if (src->nin) memcpy(dst->in, src->in, (size_t)src->nin * sizeof *dst->in);
    memcpy(dst->out, src->out, (size_t)src->nout * sizeof *dst->out);
    for (int i = 0; i < src->nin; i++)
        if (dst->in[i].var < 0) ax_array_retain(dst->in[i].lit);
    for (int i = 0; i < src->nsub; i++) dst->sub[i] = ax_ir_retain(src->sub[i]);
    dst->params.sub = (struct ax_ir *const *)dst->sub;
    ax_callback_retain(dst->params.cb);
    return 0;
}

ax_ir *ax_ir_lift_consts(const ax_ir *ir, const bool *lift) {
    ax_ir *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    r->refs = 1;
    int nlift = 0;
    for (int i = 0; i < ir->nconsts; i++) nlift += lift[i];
    r->nvars = ir->nvars;
    r->types = malloc(((size_t)ir->nvars + 1) * sizeof *r->types);
    r->constvars = malloc(((size_t)ir->nconsts + 1) * sizeof *r->constvars);
    r->consts = malloc(((size_t)ir->nconsts + 1) * sizeof *r->consts);
    r->invars = malloc(((size_t)ir->nin + (size_t)nlift + 1) * sizeof *r->invars);
    r->eqns = calloc((size_t)ir->neqns + 1, sizeof *r->eqns);
    r->outs = malloc(((size_t)ir->nout + 1) * sizeof *r->outs);
    if (!r->types || !r->constvars || !r->consts || !r->invars || !r->eqns || !r->outs) goto fail;
    if (ir->nvars) memcpy(r->types, ir->types, (size_t)ir->nvars * sizeof *r->types);
    for (int i = 0; i < ir->nconsts; i++) {
        if (lift[i]) {
            r->invars[r->nin++] = ir->constvars[i];
            continue;
        }
        r->constvars[r->nconsts] = ir->constvars[i];
        r->consts[r->nconsts++] = ax_array_retain(ir->consts[i]);
    }
    for (int i = 0; i < ir->nin; i++) r->invars[r->nin++] = ir->invars[i];
    for (int k = 0; k < ir->neqns; k++, r->neqns++)
        if (copy_eqn(&r->eqns[k], &ir->eqns[k])) goto fail;
    for (int i = 0; i < ir->nout; i++, r->nout++) {
        r->outs[i] = ir->outs[i];
        if (r->outs[i].var < 0) ax_array_retain(r->outs[i].lit);
    }
    if (ir->name && ax_ir_set_name(r, ir->name)) goto fail;
    return r;
fail:
    ax_ir_release(r);
    return NULL;
}

ax_ir *ax_ir_rewire(const ax_ir *ir, int nin, const int *in_src, const ax_aval *new_types,
                    int nout, const int *out_src) {
    bool *none = calloc((size_t)ir->nconsts + 1, sizeof *none);
    ax_ir *r = none ? ax_ir_lift_consts(ir, none) : NULL;
    free(none);
    if (!r) return NULL;
    int nfresh = 0;
    for (int i = 0; i < nin; i++) nfresh += in_src[i] < 0;
    ax_aval *types = realloc(r->types, ((size_t)r->nvars + (size_t)nfresh + 1) * sizeof *types);
    int *invars = malloc(((size_t)nin + 1) * sizeof *invars);
    ax_ir_atom *outs = malloc(((size_t)nout + 1) * sizeof *outs);
    if (types) r->types = types;
    if (!types || !invars || !outs) {
        free(invars);
        free(outs);
        ax_ir_release(r);
        return NULL;
    }
    for (int i = 0; i < nin; i++) {
        if (in_src[i] >= 0) {
            invars[i] = ir->invars[in_src[i]];
            continue;
        }
        r->types[r->nvars] = new_types[i];
        invars[i] = r->nvars++;
    }
    for (int j = 0; j < nout; j++) {
        outs[j] = ir->outs[out_src[j]];
        if (outs[j].var < 0) ax_array_retain(outs[j].lit);
    }
    for (int j = 0; j < r->nout; j++)
        if (r->outs[j].var < 0) ax_array_release(r->outs[j].lit);
    free(r->invars);
    free(r->outs);
    r->invars = invars;
    r->nin = nin;
    r->outs = outs;
    r->nout = nout;
    return r;
}

bool ax_ir_dependencies(const ax_ir *ir, const bool *in_mask, bool *out_mask) {
    bool *dep = calloc((size_t)ir->nvars + 1, sizeof *dep);
    if (!dep) { /* conservative: everything depends on everything */
        for (int j = 0; j < ir->nout; j++) out_mask[j] = true;
        return false;
    }
    bool exact = true;
    for (int i = 0; i < ir->nin; i++) dep[ir->invars[i]] = in_mask[i];
    for (int k = 0; k < ir->neqns; k++) {
        const ax_ir_eqn *e = &ir->eqns[k];
        bool any = false;
        for (int i = 0; i < e->nin; i++) any |= e->in[i].var >= 0 && dep[e->in[i].var];
        const ax_prim_info *info = ax_prim_get(e->prim);
        bool *in = any && info->dependencies ? calloc((size_t)e->nin + (size_t)e->nout + 1, 1)
                                             : NULL;
        if (in) { /* output by output, through the sub-programs */
            for (int i = 0; i < e->nin; i++) in[i] = e->in[i].var >= 0 && dep[e->in[i].var];
            info->dependencies(&e->params, e->nin, in, in + e->nin);
            for (int i = 0; i < e->nout; i++) dep[e->out[i]] = in[e->nin + i];
            free(in);
            continue;
        }
        exact = exact && !(any && info->dependencies); /* out of memory: every output, then */
        for (int i = 0; i < e->nout; i++) dep[e->out[i]] = any;
    }
    for (int j = 0; j < ir->nout; j++) out_mask[j] = ir->outs[j].var >= 0 && dep[ir->outs[j].var];
    free(dep);
    return exact;
}

bool ax_ir_uses_input(const ax_ir *ir, int i) {
    int v = ir->invars[i];
    for (int k = 0; k < ir->neqns; k++)
        for (int j = 0; j < ir->eqns[k].nin; j++)
            if (ir->eqns[k].in[j].var == v) return true;
    for (int j = 0; j < ir->nout; j++)
        if (ir->outs[j].var == v) return true;
    return false;
}

/* ---------------------------------------------------------------- printing */

/* JAX's variable names: a..z, then ba, bb, ... */
static void var_name(char *out, int v) {
    char tmp[16];
    int n = 0;
    do {
        tmp[n++] = (char)('a' + v % 26);
        v = v / 26;
    } while (v > 0 && n < 15);
    for (int i = 0; i < n; i++) out[i] = tmp[n - 1 - i];
    out[n] = 0;
}

static void format_type(ax_strbuf *s, const ax_aval *t) {
    char buf[256];
    ax_type_format(buf, sizeof buf, t->dtype, t->ndim, t->shape);
    ax_strbuf_append(s, buf);
}

/* Printing state: variables are named in the order they are printed, across nested sub-IRs
 * too, as JAX names them (names[v] = -1 until v is first printed). */
typedef struct ax_ir_printer {
    ax_strbuf *s;
    int next;     /* the next name */
    int depth;    /* nesting of sub-IRs: their indentation */
    bool failed;  /* out of memory */
} printer;

typedef struct ir_names {
    const ax_ir *ir;
    int *names;
} ir_names;

static void format_var(printer *pr, ir_names *n, int v) {
    if (n->names[v] < 0) n->names[v] = pr->next++;
    char name[16];
    var_name(name, n->names[v]);
    ax_strbuf_append(pr->s, name);
}

static void format_binder(printer *pr, ir_names *n, int v) {
    format_var(pr, n, v);
    ax_strbuf_append(pr->s, ":");
    format_type(pr->s, &n->ir->types[v]);
}

static void format_atom(printer *pr, ir_names *n, const ax_ir_atom *a) {
    if (a->var >= 0) {
        format_var(pr, n, a->var);
        return;
    }
    ax_strbuf tmp;
    ax_strbuf_init(&tmp);
    ax_format_array(&tmp, a->lit);
    ax_strbuf_append(pr->s, tmp.data ? tmp.data : "?");
    pr->s->failed |= tmp.failed;
    ax_strbuf_free(&tmp);
    ax_strbuf_append(pr->s, ":");
    ax_aval t;
    ax_aval_of(&t, a->lit);
    format_type(pr->s, &t);
}

void ax_ir_format_ints(ax_strbuf *s, int n, const int *v) {
    ax_strbuf_append(s, "(");
    for (int i = 0; i < n; i++) ax_strbuf_appendf(s, i ? ", %d" : "%d", v[i]);
    ax_strbuf_append(s, n == 1 ? ",)" : ")");
}

void ax_ir_format_i64s(ax_strbuf *s, int n, const int64_t *v) {
    ax_strbuf_append(s, "(");
    for (int i = 0; i < n; i++) ax_strbuf_appendf(s, i ? ", %lld" : "%lld", (long long)v[i]);
    ax_strbuf_append(s, n == 1 ? ",)" : ")");
}

void ax_ir_format_params(ax_strbuf *s, ax_prim prim, const ax_params *p) {
    const ax_prim_info *info = ax_prim_get(prim);
    if (info && info->format_params) info->format_params(s, p);
}

static void format_ir(printer *pr, const ax_ir *ir);

static void newline(printer *pr, int extra) {
    ax_strbuf_append(pr->s, "\n");
    for (int i = 0; i < 2 * pr->depth + extra; i++) ax_strbuf_append(pr->s, " ");
}

static void format_sub_param(printer *pr, const char *name, const ax_ir *sub) {
    newline(pr, 6);
    ax_strbuf_appendf(pr->s, "%s=", name);
    pr->depth += 3;
    format_ir(pr, sub);
    pr->depth -= 3;
}

ax_strbuf *ax_ir_print_param(ax_ir_printer *pr) {
    newline(pr, 6);
    return pr->s;
}

void ax_ir_print_sub(ax_ir_printer *pr, const char *name, const ax_ir *sub) {
    format_sub_param(pr, name, sub);
}

void ax_ir_print_subs(ax_ir_printer *pr, const char *name, int n, ax_ir *const *subs) {
    ax_strbuf_appendf(ax_ir_print_param(pr), "%s=(", name);
    pr->depth += 4;
    for (int i = 0; i < n; i++) {
        newline(pr, 0);
        format_ir(pr, subs[i]);
    }
    pr->depth -= 4;
    ax_strbuf_append(ax_ir_print_param(pr), ")");
}

/* The parameters of a higher-order primitive, one per line as JAX prints them: by its row, or
 * each sub-program as jaxpr=. */
static void format_sub_params(printer *pr, const ax_ir_eqn *e) {
    ax_strbuf_append(pr->s, "[");
    const ax_prim_info *info = ax_prim_get(e->prim);
    if (info->format_subs) {
        info->format_subs(pr, &e->params);
    } else { /* its parameters on a line, then each sub-program as jaxpr= */
        if (info->format_params) info->format_params(ax_ir_print_param(pr), &e->params);
        for (int i = 0; i < e->nsub; i++) format_sub_param(pr, "jaxpr", e->sub[i]);
    }
    newline(pr, 4);
    ax_strbuf_append(pr->s, "]");
}

static void format_eqn(printer *pr, ir_names *n, const ax_ir_eqn *e) {
    for (int i = 0; i < e->nout; i++) {
        if (i) ax_strbuf_append(pr->s, " ");
        format_binder(pr, n, e->out[i]);
    }
    ax_strbuf_appendf(pr->s, e->nout ? " = %s" : "%s", ax_prim_get(e->prim)->name);
    if (e->nsub)
        format_sub_params(pr, e);
    else
        ax_ir_format_params(pr->s, e->prim, &e->params);
    for (int i = 0; i < e->nin; i++) {
        ax_strbuf_append(pr->s, " ");
        format_atom(pr, n, &e->in[i]);
    }
}

static void format_header(printer *pr, ir_names *n) {
    const ax_ir *ir = n->ir;
    ax_strbuf_append(pr->s, "{ lambda ");
    for (int i = 0; i < ir->nconsts; i++) {
        if (i) ax_strbuf_append(pr->s, " ");
        format_binder(pr, n, ir->constvars[i]);
    }
    ax_strbuf_append(pr->s, "; ");
    for (int i = 0; i < ir->nin; i++) {
        if (i) ax_strbuf_append(pr->s, " ");
        format_binder(pr, n, ir->invars[i]);
    }
    ax_strbuf_append(pr->s, ". let");
}

static void format_outs(printer *pr, ir_names *n) {
    const ax_ir *ir = n->ir;
    ax_strbuf_append(pr->s, "in (");
    for (int i = 0; i < ir->nout; i++) {
        if (i) ax_strbuf_append(pr->s, ", ");
        format_atom(pr, n, &ir->outs[i]);
    }
    ax_strbuf_append(pr->s, ir->nout == 1 ? ",) }" : ") }");
}

static bool has_subs(const ax_ir *ir) {
    for (int i = 0; i < ir->neqns; i++)
        if (ir->eqns[i].nsub > 0) return true;
    return false;
}

/* An IR on one line when it fits in 80 columns and holds no sub-IRs, else one equation a line
 * (indented by the nesting depth). */
static void format_ir(printer *pr, const ax_ir *ir) {
    ir_names n = {ir, malloc(((size_t)ir->nvars + 1) * sizeof *n.names)};
    if (!n.names) {
        pr->failed = true;
        return;
    }
    for (int v = 0; v < ir->nvars; v++) n.names[v] = -1;
    ax_strbuf *out = pr->s;
    int first = pr->next;
    if (!has_subs(ir)) {
        ax_strbuf one;
        ax_strbuf_init(&one);
        pr->s = &one;
        format_header(pr, &n);
        for (int i = 0; i < ir->neqns; i++) {
            ax_strbuf_append(&one, i ? "; " : " ");
            format_eqn(pr, &n, &ir->eqns[i]);
        }
        ax_strbuf_append(&one, " ");
        format_outs(pr, &n);
        pr->s = out;
        out->failed |= one.failed; /* then nothing more is appended to out */
        bool fits = one.data && one.len + 2 * (size_t)pr->depth <= 80;
        if (fits) ax_strbuf_append(out, one.data);
        ax_strbuf_free(&one);
        if (fits) {
            free(n.names);
            return;
        }
        /* name again, in the same order */
        for (int v = 0; v < ir->nvars; v++) n.names[v] = -1;
        pr->next = first;
    }
    format_header(pr, &n);
    for (int i = 0; i < ir->neqns; i++) {
        newline(pr, 4);
        format_eqn(pr, &n, &ir->eqns[i]);
    }
    newline(pr, 2);
    format_outs(pr, &n);
    free(n.names);
}

void ax_ir_format(ax_strbuf *out, const ax_ir *ir) {
    printer pr = {.s = out};
    format_ir(&pr, ir);
    out->failed |= pr.failed;
}

/* ---------------------------------------------------------------- verifying */

static bool aval_equal(const ax_aval *a, const ax_aval *b) {
    return a->dtype == b->dtype && ax_shape_equal(a->ndim, a->shape, b->ndim, b->shape);
}

static int verify_atom(ax_ctx *cx, const ax_ir *ir, const bool *defined, const ax_ir_atom *a,
                       int eqn) {
    if (a->var < 0) {
        if (!a->lit)
            return ax_error(cx, AX_ERR_RUNTIME, "IR: equation %d has a null literal", eqn), -1;
        return 0;
    }
    if (a->var >= ir->nvars || !defined[a->var])
        return ax_error(cx, AX_ERR_RUNTIME, "IR: equation %d uses variable %d before it is defined",
                        eqn, a->var),
               -1;
    return 0;
}

static int define_var(ax_ctx *cx, const ax_ir *ir, bool *defined, int v) {
    if (v < 0 || v >= ir->nvars)
        return ax_error(cx, AX_ERR_RUNTIME, "IR: variable %d out of range", v), -1;
    if (defined[v]) return ax_error(cx, AX_ERR_RUNTIME, "IR: variable %d is assigned twice", v), -1;
    defined[v] = true;
    return 0;
}

static int check_eqn_types(ax_ctx *cx, const ax_ir *ir, bool *defined, int k, ax_aval *in,
                           ax_aval *out) {
    const ax_ir_eqn *e = &ir->eqns[k];
    const ax_prim_info *info = ax_prim_get(e->prim);
    for (int i = 0; i < e->nin; i++) {
        if (verify_atom(cx, ir, defined, &e->in[i], k)) return -1;
        if (e->in[i].var >= 0)
            in[i] = ir->types[e->in[i].var];
        else
            ax_aval_of(&in[i], e->in[i].lit);
    }
    if (info->shape(cx, e->nin, in, &e->params, out)) return -1;
    for (int i = 0; i < e->nout; i++) {
        if (define_var(cx, ir, defined, e->out[i])) return -1;
        if (!aval_equal(&out[i], &ir->types[e->out[i]])) {
            char want[128], got[128];
            ax_type_format(want, sizeof want, out[i].dtype, out[i].ndim, out[i].shape);
            const ax_aval *t = &ir->types[e->out[i]];
            ax_type_format(got, sizeof got, t->dtype, t->ndim, t->shape);
            return ax_error(cx, AX_ERR_RUNTIME,
                            "IR: equation %d (%s) declares %s, its rule gives %s", k, info->name,
                            got, want),
                   -1;
        }
    }
    return 0;
}

static int verify_eqn(ax_ctx *cx, const ax_ir *ir, bool *defined, int k) {
    const ax_ir_eqn *e = &ir->eqns[k];
    const ax_prim_info *info = ax_prim_get(e->prim);
    if (!info || (info->nin >= 0 && info->nin != e->nin) ||
        ax_prim_nout(e->prim, &e->params) != e->nout || e->params.nsub != e->nsub ||
        (e->nsub && e->params.sub != (struct ax_ir *const *)e->sub))
        return ax_error(cx, AX_ERR_RUNTIME, "IR: equation %d (%s) has the wrong arity", k,
                        info ? info->name : "?"),
               -1;
    /* the sub-IRs first: the shape rule reads their types */
    for (int i = 0; i < e->nsub; i++)
        if (ax_ir_verify(cx, e->sub[i])) return -1;
    ax_aval *in = calloc((size_t)e->nin + 1, sizeof *in);
    ax_aval *out = calloc((size_t)e->nout + 1, sizeof *out);
    int rc = in && out ? check_eqn_types(cx, ir, defined, k, in, out) : -1;
    if (!in || !out) ax_error_oom(cx);
    free(in);
    free(out);
    return rc;
}

int ax_ir_verify(ax_ctx *cx, const ax_ir *ir) {
    bool *defined = calloc((size_t)ir->nvars + 1, sizeof *defined);
    if (!defined) return ax_error_oom(cx), -1;
    int rc = 0;
    for (int i = 0; i < ir->nconsts && !rc; i++) rc = define_var(cx, ir, defined, ir->constvars[i]);
    for (int i = 0; i < ir->nin && !rc; i++) rc = define_var(cx, ir, defined, ir->invars[i]);
    for (int k = 0; k < ir->neqns && !rc; k++) rc = verify_eqn(cx, ir, defined, k);
    for (int i = 0; i < ir->nout && !rc; i++) rc = verify_atom(cx, ir, defined, &ir->outs[i], -1);
    free(defined);
    return rc;
}

/* ---------------------------------------------------------------- evaluating */

static ax_array *atom_value(ax_array **env, const ax_ir_atom *a) {
    return a->var >= 0 ? env[a->var] : a->lit;
}

/* One equation's outputs: bound, or (inline) the body of a custom_call or call evaluated in
 * place. */
static int eval_eqn(ax_ctx *cx, const ax_ir_eqn *e, ax_array **in, ax_array **res,
                    bool inline_calls) {
    if (inline_calls && e->prim == AX_P_CALL) return ax_ir_eval_inlined(cx, e->sub[0], in, res);
    if (!inline_calls || e->prim != AX_P_CUSTOM_CALL)
        return ax_bind(cx, e->prim, e->nin, in, &e->params, res);
    const ax_ir *body = e->params.cb->body;
    ax_array **outs = calloc((size_t)body->nout + 1, sizeof *outs);
    if (!outs) return ax_error_oom(cx), -1;
    int rc = ax_ir_eval_inlined(cx, body, in, outs);
    for (int j = 0; j < body->nout; j++) {
        if (!rc && j == e->params.k)
            res[0] = outs[j];
        else
            ax_array_release(outs[j]);
    }
    free(outs);
    return rc;
}

static int eval_ir(ax_ctx *cx, const ax_ir *ir, ax_array **args, ax_array **outs,
                   bool inline_calls) {
    ax_array **env = calloc((size_t)ir->nvars + 1, sizeof *env);
    ax_array **in = NULL;
    int maxin = 1, rc = -1;
    for (int k = 0; k < ir->neqns; k++)
        if (ir->eqns[k].nin > maxin) maxin = ir->eqns[k].nin;
    in = malloc((size_t)maxin * sizeof *in);
    if (!env || !in) {
        ax_error_oom(cx);
        goto done;
    }
    for (int i = 0; i < ir->nconsts; i++) env[ir->constvars[i]] = ax_array_retain(ir->consts[i]);
    for (int i = 0; i < ir->nin; i++) env[ir->invars[i]] = ax_array_retain(args[i]);
    for (int k = 0; k < ir->neqns; k++) {
        const ax_ir_eqn *e = &ir->eqns[k];
        for (int i = 0; i < e->nin; i++) in[i] = atom_value(env, &e->in[i]);
        /* outputs go straight to their variables (each is assigned once) */
        ax_array *one = NULL, **res = e->nout == 1 ? &one : calloc((size_t)e->nout, sizeof *res);
        if (!res) {
            ax_error_oom(cx);
            goto done;
        }
        int erc = eval_eqn(cx, e, in, res, inline_calls);
        for (int i = 0; !erc && i < e->nout; i++) env[e->out[i]] = res[i];
        if (res != &one) free(res);
        if (erc) goto done;
    }
    for (int i = 0; i < ir->nout; i++) outs[i] = ax_array_retain(atom_value(env, &ir->outs[i]));
    rc = 0;
done:
    if (env)
        for (int v = 0; v < ir->nvars; v++) ax_array_release(env[v]);
    free(env);
    free(in);
    return rc;
}

int ax_ir_eval(ax_ctx *cx, const ax_ir *ir, ax_array **args, ax_array **outs) {
    return eval_ir(cx, ir, args, outs, false);
}

int ax_ir_eval_inlined(ax_ctx *cx, const ax_ir *ir, ax_array **args, ax_array **outs) {
    return eval_ir(cx, ir, args, outs, true);
}

/* The flat-function forms (closure = the IR): outputs in a new array of new references. */
static int eval_flat(ax_ctx *cx, const ax_ir *ir, ax_array **in, int *nout, ax_array ***out,
                     bool inline_calls) {
    *nout = ir->nout;
    *out = calloc((size_t)ir->nout + 1, sizeof **out);
    if (!*out) return ax_error_oom(cx), -1;
    if (eval_ir(cx, ir, in, *out, inline_calls) == 0) return 0;
    free(*out); /* a flat function leaves nothing behind when it fails */
    *out = NULL;
    return -1;
}

int ax_ir_flat_fn(ax_ctx *cx, void *closure, int nin, ax_array **in, int *nout, ax_array ***out) {
    (void)nin;
    return eval_flat(cx, closure, in, nout, out, false);
}

int ax_ir_inlined_flat_fn(ax_ctx *cx, void *closure, int nin, ax_array **in, int *nout,
                          ax_array ***out) {
    (void)nin;
    return eval_flat(cx, closure, in, nout, out, true);
}

bool ax_ir_has_custom_calls(const ax_ir *ir) {
    for (int k = 0; k < ir->neqns; k++)
        if (ir->eqns[k].prim == AX_P_CUSTOM_CALL || ir->eqns[k].prim == AX_P_CALL) return true;
    return false;
}

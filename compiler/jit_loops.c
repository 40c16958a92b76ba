/* Native loops over sub-programs (see jit_loops.h). */
#include "jit_loops.h"

#include <stdlib.h>
#include <string.h>

#include "../runtime/elementwise.h"
#include "../runtime/pool.h"

/* ---------------------------------------------------------------- LOOP steps */

enum {
    STREAM_MAX_OUTS = 8,
    STREAM_MAX_BUFS = 64,
    /* A tile holds a multiple of the split's granule of outer iterations: up to this much when
     * one granule exceeds AX_STREAM_TILE_BYTES (rows of 5000 f32), in L2 then. */
    STREAM_STAGE_BYTES = 1 << 16,
};

/* A loop whose outputs are streamed (see run_streamed): each output slot, its bytes per outer
 * iteration, and the outer iterations per tile. */
typedef struct stream_plan {
    int nout;
    int slot[STREAM_MAX_OUTS];
    int64_t bytes_per_iter[STREAM_MAX_OUTS];
    int64_t iters;
} stream_plan;

typedef struct loop_call {
    ax_step_fn fn;
    char **bufs;
    void *const *fns;
    int64_t granule, extent;
    int nbufs;
    const stream_plan *stream; /* or NULL */
} loop_call;

/* Whether node n's output is the step's elements in row-major order (dims of one ignored). */
static bool stores_in_order(const ax_code_step *st, const ax_code_node *n) {
    int64_t want = 1;
    for (int d = st->ndim - 1; d >= 0; d--) {
        if (st->shape[d] != 1 && n->ostride[d] != want) return false;
        want *= st->shape[d];
    }
    return true;
}

/* Whether LOOP step s's outputs are big enough to bypass the caches (AX_STREAM_MIN_BYTES, as
 * the eager kernels) and can be: no reductions, every output written in row-major order and
 * the outer loop over dim 0, so that outer iterations [a, b) write one contiguous stretch of
 * each output, which a tile can stand in for. */
static bool plan_stream(const ax_code *code, int s, const ax_loop_split *sp, int nbufs,
                        stream_plan *out) {
    const ax_code_step *st = &code->steps[s];
    int64_t elems = sp->extent * sp->work_per_iter, total = 0;
    if (!sp->splittable || elems * 8 < (int64_t)AX_STREAM_MIN_BYTES || nbufs > STREAM_MAX_BUFS)
        return false;
    *out = (stream_plan){0};
    for (int i = 0; i < st->nnodes; i++) {
        const ax_code_node *n = &code->nodes[st->first_node + i];
        if (n->kind == AX_KN_REDUCE) return false;
        if (!n->store) continue;
        if (out->nout == STREAM_MAX_OUTS || !stores_in_order(st, n)) return false;
        /* a node's slot counts from the step's first buffer (ax_code_node.buf) */
        int64_t es = (int64_t)ax_dtype_size(code->bufs[st->first_buf + n->buf]);
        out->slot[out->nout] = n->buf;
        out->bytes_per_iter[out->nout++] = sp->work_per_iter * es;
        total += elems * es;
    }
    if (out->nout == 0 || total < (int64_t)AX_STREAM_MIN_BYTES ||
        ax_codegen_outer_dim(code, s) != 0)
        return false;
    int64_t per_iter = 0;
    for (int k = 0; k < out->nout; k++) per_iter += out->bytes_per_iter[k] + 64; /* + alignment */
    int64_t iters = AX_STREAM_TILE_BYTES / per_iter / sp->granule * sp->granule;
    out->iters = iters > 0 ? iters : sp->granule;
    return out->iters * per_iter <= STREAM_STAGE_BYTES;
}

/* Runs outer iterations [lo, hi) a tile at a time: the function writes its outputs into a
 * staging tile (the output pointers it is given are moved so that iteration a lands at the
 * tile's start, at the same offset modulo 64 as in the output), which is then copied out with
 * non-temporal stores. The generated code is the one the loop always runs; only the pointers
 * differ. */
static void run_streamed(const loop_call *c, int64_t lo, int64_t hi) {
    const stream_plan *sp = c->stream;
    _Alignas(64) char stage[STREAM_STAGE_BYTES];
    char *bufs[STREAM_MAX_BUFS], *tile[STREAM_MAX_OUTS];
    memcpy(bufs, c->bufs, (size_t)c->nbufs * sizeof *bufs);
    for (int64_t a = lo; a < hi; a += sp->iters) {
        int64_t b = hi - a < sp->iters ? hi : a + sp->iters;
        char *t = stage;
        for (int k = 0; k < sp->nout; k++) {
            uintptr_t skip = (uintptr_t)(a * sp->bytes_per_iter[k]);
            tile[k] = t + (((uintptr_t)c->bufs[sp->slot[k]] + skip) & 63);
            bufs[sp->slot[k]] = (char *)((uintptr_t)tile[k] - skip);
            t += (sp->iters * sp->bytes_per_iter[k] + 64 + 63) / 64 * 64;
        }
        c->fn(bufs, c->fns, a, b);
        for (int k = 0; k < sp->nout; k++)
            ax_stream_copy(c->bufs[sp->slot[k]] + a * sp->bytes_per_iter[k], tile[k],
                           (size_t)((b - a) * sp->bytes_per_iter[k]));
    }
    ax_stream_fence(); /* the streamed stores before the pool's release of the chunk */
}

static void run_chunk(void *arg, int64_t begin, int64_t end) {
    const loop_call *c = arg;
    int64_t lo = begin * c->granule, hi = end * c->granule;
    if (hi > c->extent) hi = c->extent;
    if (c->stream)
        run_streamed(c, lo, hi);
    else
        c->fn(c->bufs, c->fns, lo, hi);
}

/* Runs LOOP step s of `code`, whose split is sp, with its buffers. */
static void run_split(ax_ctx *cx, ax_step_fn fn, const ax_code *code, int s, ax_loop_split sp,
                      char **bufs, void *const *fns) {
    const int64_t min_chunk = 1 << 15;
    stream_plan stream;
    int nbufs = code->steps[s].nbufs;
    bool streams = plan_stream(code, s, &sp, nbufs, &stream);
    loop_call c = {fn, bufs, fns, sp.granule, sp.extent, nbufs, streams ? &stream : NULL};
    if (!sp.splittable || sp.extent * sp.work_per_iter < 2 * min_chunk) {
        run_chunk(&c, 0, (sp.extent + sp.granule - 1) / sp.granule);
        return;
    }
    int64_t units = (sp.extent + sp.granule - 1) / sp.granule;
    int64_t per_unit = sp.granule * (sp.work_per_iter ? sp.work_per_iter : 1);
    int64_t grain = (min_chunk + per_unit - 1) / per_unit;
    ax_parallel_for(cx, units, grain ? grain : 1, run_chunk, &c);
}

bool ax_jit_loop_streams(const ax_code *code, int s) {
    ax_loop_split sp;
    stream_plan stream;
    ax_codegen_split(code, s, &sp);
    return plan_stream(code, s, &sp, code->steps[s].nbufs, &stream);
}

void ax_jit_run_loop(ax_ctx *cx, ax_step_fn fn, const ax_code *code, int s, char **bufs,
                     void *const *fns) {
    ax_loop_split sp;
    ax_codegen_split(code, s, &sp);
    run_split(cx, fn, code, s, sp, bufs, fns);
}

/* ---------------------------------------------------------------- frames */

static size_t nbytes_of(const ax_aval *t) {
    return (size_t)ax_shape_size(t->ndim, t->shape) * ax_dtype_size(t->dtype);
}

static void atom_type(const ax_ir *ir, const ax_ir_atom *a, ax_aval *t) {
    if (a->var >= 0)
        *t = ir->types[a->var];
    else
        ax_aval_of(t, a->lit);
}

/* A sub-program's variables while it runs. */
typedef struct frame {
    const ax_plan *plan;
    const ax_ir *ir;
    int base;              /* its first step in the program's code */
    char **at;             /* per variable: its data (NULL: not a buffer) */
    const ax_array **cst;  /* per variable: the constant bound to it, or NULL */
    char *scratch;         /* the values its steps make, one aligned piece each */
    ax_array **held;       /* contiguous copies of constants that are views */
    int nheld;
    char ***bufs;          /* per LOOP step: room for its buffers */
    ax_loop_split *split;  /* per LOOP step: how its loop runs (computed once) */
} frame;

static void frame_close(frame *fr) {
    for (int i = 0; i < fr->nheld; i++) ax_array_release(fr->held[i]);
    for (int s = 0; fr->bufs && s < fr->plan->nsteps; s++) free(fr->bufs[s]);
    free(fr->bufs);
    free(fr->split);
    free(fr->held);
    free(fr->at);
    free(fr->cst);
    free(fr->scratch);
}

/* Whether step s of the plan makes variable v. */
static void mark_made(const ax_plan *plan, bool *made) {
    for (int s = 0; s < plan->nsteps; s++) {
        const ax_step *st = &plan->steps[s];
        if (st->kind == AX_STEP_LOOP) {
            for (int i = 0; i < st->k->nnodes; i++)
                if (st->k->nodes[i].store) made[st->k->nodes[i].var] = true;
            continue;
        }
        const ax_ir_eqn *e = &plan->ir->eqns[st->eqn];
        for (int i = 0; i < e->nout; i++) made[e->out[i]] = true;
    }
}

/* Binds constants, gives every value a step makes its piece of scratch (except those marked
 * `placed`, whose buffers the loop sets each iteration), and makes room for the LOOP steps'
 * buffer lists. */
static int frame_open(ax_ctx *cx, frame *fr, const ax_plan *plan, int base, const bool *placed) {
    const ax_ir *ir = plan->ir;
    *fr = (frame){.plan = plan, .ir = ir, .base = base};
    fr->at = calloc((size_t)ir->nvars + 1, sizeof *fr->at);
    fr->cst = calloc((size_t)ir->nvars + 1, sizeof *fr->cst);
    fr->held = calloc((size_t)ir->nconsts + 1, sizeof *fr->held);
    fr->bufs = calloc((size_t)plan->nsteps + 1, sizeof *fr->bufs);
    fr->split = calloc((size_t)plan->nsteps + 1, sizeof *fr->split);
    bool *made = calloc((size_t)ir->nvars + 1, sizeof *made);
    if (!fr->at || !fr->cst || !fr->held || !fr->bufs || !fr->split || !made) goto oom;
    for (int i = 0; i < ir->nconsts; i++) {
        ax_array *c = ir->consts[i];
        fr->cst[ir->constvars[i]] = c;
        if (!ax_array_is_contiguous(c)) { /* a view: LOOP steps read it as a buffer */
            if (!(c = fr->held[fr->nheld] = ax_array_contiguous(cx, c))) goto fail;
            fr->nheld++;
        }
        fr->at[ir->constvars[i]] = ax_array_data(c);
    }
    mark_made(plan, made);
    size_t total = 0;
    for (int v = 0; v < ir->nvars; v++)
        if (made[v] && !(placed && placed[v])) total += (nbytes_of(&ir->types[v]) + 63) / 64 * 64;
    if (total && !(fr->scratch = aligned_alloc(64, total))) goto oom;
    for (int v = 0, off = 0; v < ir->nvars; v++) {
        if (!made[v] || (placed && placed[v])) continue;
        fr->at[v] = fr->scratch + off;
        off += (int)((nbytes_of(&ir->types[v]) + 63) / 64 * 64);
    }
    for (int s = 0; s < plan->nsteps; s++) {
        if (plan->steps[s].kind != AX_STEP_LOOP) continue;
        int nb = plan->code.steps[s].nbufs;
        if (!(fr->bufs[s] = calloc((size_t)nb + 1, sizeof *fr->bufs[s]))) goto oom;
        ax_codegen_split(&plan->code, s, &fr->split[s]);
    }
    free(made);
    return 0;
oom:
    ax_error_oom(cx);
fail:
    free(made);
    frame_close(fr);
    return -1;
}

static char *atom_data(const frame *fr, const ax_ir_atom *a) {
    return a->var >= 0 ? fr->at[a->var] : ax_array_data(a->lit);
}

/* An operand of an eager kernel: the literal or constant itself, else an array borrowing the
 * frame's buffer. *borrowed tells the caller to release it. */
static ax_array *operand(ax_ctx *cx, const frame *fr, const ax_ir_atom *a, bool *borrowed) {
    *borrowed = false;
    if (a->var < 0) return a->lit;
    if (fr->cst[a->var]) return (ax_array *)fr->cst[a->var];
    const ax_aval *t = &fr->ir->types[a->var];
    *borrowed = true;
    ax_array *r = ax_array_borrow(cx, t->dtype, t->ndim, t->shape, fr->at[a->var]);
    if (r) r->weak = t->weak;
    return r;
}

/* An eager step: its kernel on arrays borrowing the frame, the results copied into it. */
static int run_eager(ax_ctx *cx, const frame *fr, const ax_ir_eqn *e) {
    size_t n = (size_t)e->nin + (size_t)e->nout;
    ax_array **in = calloc(n + 1, sizeof *in);
    bool *borrowed = calloc((size_t)e->nin + 1, sizeof *borrowed);
    int rc = in && borrowed ? 0 : -1;
    if (rc) ax_error_oom(cx);
    ax_array **res = in ? in + e->nin : NULL;
    for (int i = 0; i < e->nin && !rc; i++)
        if (!(in[i] = operand(cx, fr, &e->in[i], &borrowed[i]))) rc = -1;
    if (!rc) rc = ax_bind(cx, e->prim, e->nin, in, &e->params, res);
    for (int j = 0; !rc && j < e->nout; j++) {
        ax_array *c = ax_array_contiguous(cx, res[j]);
        if (!c) {
            rc = -1;
            break;
        }
        /* memmove: a kernel may hand back (a view of) an operand's buffer */
        memmove(fr->at[e->out[j]], ax_array_data(c), nbytes_of(&fr->ir->types[e->out[j]]));
        ax_array_release(c);
    }
    for (int j = 0; res && j < e->nout; j++) ax_array_release(res[j]);
    for (int i = 0; in && i < e->nin; i++)
        if (borrowed[i]) ax_array_release(in[i]);
    free(in), free(borrowed);
    return rc;
}

static int run_nested(ax_ctx *cx, const ax_jit_fns *f, const frame *fr, const ax_step *st) {
    const ax_ir_eqn *e = &fr->ir->eqns[st->eqn];
    char **io = calloc((size_t)e->nin + (size_t)e->nout + 1, sizeof *io);
    if (!io) return ax_error_oom(cx), -1;
    for (int i = 0; i < e->nin; i++) io[i] = atom_data(fr, &e->in[i]);
    for (int j = 0; j < e->nout; j++) io[e->nin + j] = fr->at[e->out[j]];
    int rc = ax_jit_run_control(cx, f, fr->plan, st, fr->base, io, io + e->nin);
    free(io);
    return rc;
}

static int run_frame(ax_ctx *cx, const ax_jit_fns *f, frame *fr) {
    const ax_plan *plan = fr->plan;
    for (int s = 0; s < plan->nsteps; s++) {
        const ax_step *st = &plan->steps[s];
        int rc = 0;
        if (st->kind == AX_STEP_LOOP) {
            const ax_code_step *cs = &plan->code.steps[s];
            const int *vars = plan->slot_var + cs->first_buf;
            for (int i = 0; i < cs->nbufs; i++) fr->bufs[s][i] = fr->at[vars[i]];
            run_split(cx, f->fn[fr->base + s], &plan->code, s, fr->split[s], fr->bufs[s], f->fns);
        } else if (st->kind == AX_STEP_EAGER) {
            rc = run_eager(cx, fr, &fr->ir->eqns[st->eqn]);
        } else {
            rc = run_nested(cx, f, fr, st);
        }
        if (rc) return -1;
    }
    return 0;
}

/* ---------------------------------------------------------------- the loops */

/* The carried values: two buffers per value, `cur` read by an iteration and `next` written. */
typedef struct carry {
    int n;
    char **cur, **next;
    size_t *bytes;
    char *block;
} carry;

static int carry_open(ax_ctx *cx, carry *c, int n, const ax_ir *ir, const ax_ir_atom *outs,
                      char *const *init) {
    *c = (carry){.n = n};
    c->cur = calloc(2 * (size_t)n + 1, sizeof *c->cur);
    c->bytes = calloc((size_t)n + 1, sizeof *c->bytes);
    size_t total = 0;
    for (int j = 0; c->bytes && j < n; j++) {
        ax_aval t;
        atom_type(ir, &outs[j], &t);
        c->bytes[j] = nbytes_of(&t);
        total += 2 * ((c->bytes[j] + 63) / 64 * 64);
    }
    if (!c->cur || !c->bytes || (total && !(c->block = aligned_alloc(64, total)))) {
        free(c->cur), free(c->bytes);
        *c = (carry){0}; /* closing it frees nothing more */
        return ax_error_oom(cx), -1;
    }
    c->next = c->cur + n;
    for (size_t j = 0, off = 0; j < (size_t)n; j++) {
        size_t piece = (c->bytes[j] + 63) / 64 * 64;
        c->cur[j] = c->block + off;
        c->next[j] = c->block + off + piece;
        off += 2 * piece;
        memcpy(c->cur[j], init[j], c->bytes[j]);
    }
    return 0;
}

static void carry_swap(carry *c) {
    char **t = c->cur;
    c->cur = c->next;
    c->next = t;
}

static void carry_close(carry *c, char *const *out) {
    for (int j = 0; out && j < c->n; j++) memcpy(out[j], c->cur[j], c->bytes[j]);
    free(c->cur < c->next ? c->cur : c->next);
    free(c->bytes);
    free(c->block);
}

/* The body's outputs that its steps make and that appear once among the outputs are written
 * straight into their destination (the next carry, a row of ys): `placed`. The others are
 * copied after each iteration. */
static bool *placed_outputs(const ax_plan *body) {
    const ax_ir *ir = body->ir;
    bool *made = calloc((size_t)ir->nvars + 1, sizeof *made);
    bool *placed = calloc((size_t)ir->nvars + 1, sizeof *placed);
    if (!made || !placed) {
        free(made), free(placed);
        return NULL;
    }
    mark_made(body, made);
    for (int j = 0; j < ir->nout; j++) {
        int v = ir->outs[j].var, uses = 0;
        for (int k = 0; k < ir->nout; k++) uses += ir->outs[k].var == v;
        if (v >= 0 && made[v] && uses == 1) placed[v] = true;
    }
    free(made);
    return placed;
}

/* Output j of the body goes to dst: placed before the iteration, or copied after it. */
static void place_output(frame *fr, const bool *placed, int j, char *dst) {
    int v = fr->ir->outs[j].var;
    if (v >= 0 && placed[v]) fr->at[v] = dst;
}

static void copy_output(const frame *fr, const bool *placed, int j, char *dst, size_t bytes) {
    const ax_ir_atom *a = &fr->ir->outs[j];
    if (a->var >= 0 && placed[a->var]) return;
    memmove(dst, atom_data(fr, a), bytes);
}

static int64_t read_int(const char *p, ax_dtype t) {
    switch (t) {
    case AX_BOOL:
    case AX_U8:
        return *(const uint8_t *)p;
    case AX_I32:
        return *(const int32_t *)p;
    case AX_U32:
        return *(const uint32_t *)p;
    default:
        return *(const int64_t *)p;
    }
}

static int run_cond(ax_ctx *cx, const ax_jit_fns *f, const ax_plan *plan, const ax_step *st,
                    int base, char *const *in, char *const *out) {
    const ax_ir_eqn *e = &plan->ir->eqns[st->eqn];
    ax_aval it;
    atom_type(plan->ir, &e->in[0], &it);
    int64_t k = read_int(in[0], it.dtype);
    k = k < 0 ? 0 : k >= st->nsub ? st->nsub - 1 : k;
    const ax_plan *br = st->sub[k];
    frame fr;
    if (frame_open(cx, &fr, br, base + st->sub_base[k], NULL)) return -1;
    for (int i = 0; i < br->ir->nin; i++) fr.at[br->ir->invars[i]] = in[1 + i];
    int rc = run_frame(cx, f, &fr);
    for (int j = 0; !rc && j < br->ir->nout; j++)
        memmove(out[j], atom_data(&fr, &br->ir->outs[j]), nbytes_of(&plan->ir->types[e->out[j]]));
    frame_close(&fr);
    return rc;
}

static int run_scan(ax_ctx *cx, const ax_jit_fns *f, const ax_plan *plan, const ax_step *st,
                    int base, char *const *in, char *const *out) {
    const ax_ir_eqn *e = &plan->ir->eqns[st->eqn];
    const ax_params *p = &e->params;
    const ax_plan *body = st->sub[0];
    const ax_ir *b = body->ir;
    int nc = p->nconsts, ncar = p->ncarry, nx = e->nin - nc - ncar, ny = b->nout - ncar;
    size_t *xbytes = calloc((size_t)(nx + ny) + 1, sizeof *xbytes);
    size_t *ybytes = xbytes ? xbytes + nx : NULL; /* NULL + n is undefined */
    bool *placed = placed_outputs(body);
    carry c = {0};
    frame fr = {0};
    int rc = xbytes && placed ? 0 : (ax_error_oom(cx), -1);
    for (int k = 0; !rc && k < nx; k++) xbytes[k] = nbytes_of(&b->types[b->invars[nc + ncar + k]]);
    for (int j = 0; !rc && j < ny; j++) {
        ax_aval t;
        atom_type(b, &b->outs[ncar + j], &t);
        ybytes[j] = nbytes_of(&t);
    }
    if (!rc) rc = carry_open(cx, &c, ncar, b, b->outs, in + nc);
    bool opened = !rc && !(rc = frame_open(cx, &fr, body, base + st->sub_base[0], placed));
    for (int k = 0; !rc && k < nc; k++) fr.at[b->invars[k]] = in[k];
    for (int64_t step = 0; !rc && step < p->length; step++) {
        int64_t i = p->reverse ? p->length - 1 - step : step;
        for (int j = 0; j < ncar; j++) {
            fr.at[b->invars[nc + j]] = c.cur[j];
            place_output(&fr, placed, j, c.next[j]);
        }
        for (int k = 0; k < nx; k++)
            fr.at[b->invars[nc + ncar + k]] = in[nc + ncar + k] + i * (int64_t)xbytes[k];
        for (int j = 0; j < ny; j++)
            place_output(&fr, placed, ncar + j, out[ncar + j] + i * (int64_t)ybytes[j]);
        if ((rc = run_frame(cx, f, &fr))) break;
        for (int j = 0; j < ncar; j++) copy_output(&fr, placed, j, c.next[j], c.bytes[j]);
        for (int j = 0; j < ny; j++)
            copy_output(&fr, placed, ncar + j, out[ncar + j] + i * (int64_t)ybytes[j], ybytes[j]);
        carry_swap(&c);
        if (ax_ctx_check_interrupt(cx)) rc = -1;
    }
    if (opened) frame_close(&fr);
    if (c.cur) carry_close(&c, rc ? NULL : out);
    free(xbytes), free(placed);
    return rc;
}

/* The predicate of a while loop on the current carry: 1, 0, or -1 on error. */
static int predicate(ax_ctx *cx, const ax_jit_fns *f, frame *cf, int nc, char *const *consts,
                     char **cur) {
    const ax_ir *ir = cf->ir;
    for (int k = 0; k < nc; k++) cf->at[ir->invars[k]] = consts[k];
    for (int j = 0; j < ir->nin - nc; j++) cf->at[ir->invars[nc + j]] = cur[j];
    if (run_frame(cx, f, cf)) return -1;
    return *(const uint8_t *)atom_data(cf, &ir->outs[0]) != 0;
}

static int run_while(ax_ctx *cx, const ax_jit_fns *f, const ax_plan *plan, const ax_step *st,
                     int base, char *const *in, char *const *out) {
    const ax_ir_eqn *e = &plan->ir->eqns[st->eqn];
    int nc = e->params.nconsts, nb = e->params.nconsts2, n = e->nin - nc - nb;
    const ax_plan *body = st->sub[1];
    const ax_ir *b = body->ir;
    bool *placed = placed_outputs(body);
    carry c = {0};
    frame cf = {0}, bf = {0};
    int rc = placed ? 0 : (ax_error_oom(cx), -1);
    if (!rc) rc = carry_open(cx, &c, n, b, b->outs, in + nc + nb);
    bool c_open = !rc && !(rc = frame_open(cx, &cf, st->sub[0], base + st->sub_base[0], NULL));
    bool b_open = !rc && !(rc = frame_open(cx, &bf, body, base + st->sub_base[1], placed));
    for (int k = 0; !rc && k < nb; k++) bf.at[b->invars[k]] = in[nc + k];
    while (!rc) {
        int go = predicate(cx, f, &cf, nc, in, c.cur);
        if (go <= 0) {
            rc = go;
            break;
        }
        for (int j = 0; j < n; j++) {
            bf.at[b->invars[nb + j]] = c.cur[j];
            place_output(&bf, placed, j, c.next[j]);
        }
        if ((rc = run_frame(cx, f, &bf))) break;
        for (int j = 0; j < n; j++) copy_output(&bf, placed, j, c.next[j], c.bytes[j]);
        carry_swap(&c);
        if (ax_ctx_check_interrupt(cx)) rc = -1;
    }
    if (c_open) frame_close(&cf);
    if (b_open) frame_close(&bf);
    if (c.cur) carry_close(&c, rc ? NULL : out);
    free(placed);
    return rc;
}

int ax_jit_run_control(ax_ctx *cx, const ax_jit_fns *f, const ax_plan *plan, const ax_step *st,
                       int base, char *const *in, char *const *out) {
    const ax_prim_info *info = ax_prim_get(plan->ir->eqns[st->eqn].prim);
    switch (info->lower.kop) {
    case AX_KOP_COND:
        return run_cond(cx, f, plan, st, base, in, out);
    case AX_KOP_SCAN:
        return run_scan(cx, f, plan, st, base, in, out);
    case AX_KOP_WHILE:
        return run_while(cx, f, plan, st, base, in, out);
    default: /* fusion makes CONTROL steps of these three only */
        ax_error(cx, AX_ERR_RUNTIME, "internal error: %s is not a loop jit runs", info->name);
        return -1;
    }
}

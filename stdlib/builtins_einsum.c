/* einsum(subscripts, *operands): Einstein summation as reductions, dot_general and transpose.
 *
 * Operands are combined left to right. For each pair, a label is a batch dimension when both
 * operands and the rest of the computation (later operands or the output) use it, contracted
 * when only the pair uses it, and free otherwise; labels used by one operand alone are summed
 * first. Repeated labels within one operand (diagonals) and `...` are not supported. */
#include "builtins_lib.h"

#include <stdlib.h>
#include <string.h>

/* Labels are letters: a set of them fits in this many chars (with the terminating 0). */
#define LABEL_SET 64

typedef struct term {
    ax_array *x; /* owned */
    int n;
    char labels[AX_MAX_RANK + 1];
} term;

static bool has(const char *s, char c) {
    return c && strchr(s, c) != NULL;
}

/* Reads the operand labels of "ij,jk" (a copy of the left of "->", cut up here) into terms. */
static int parse_operands(ax_ctx *cx, const char *spec, char *buf, int nops, term *terms) {
    int count = 0;
    char *save = NULL;
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (count == nops) break;
        int n = 0;
        for (char *p = tok; *p; p++) {
            if (*p == ' ') continue;
            if (*p == '.')
                return ax_error(cx, AX_ERR_VALUE, "einsum: '...' is not supported yet"), -1;
            if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z')))
                return ax_error(cx, AX_ERR_VALUE, "einsum: bad subscripts '%s'", spec), -1;
            if (n == AX_MAX_RANK && !ax_rank_check(cx, "einsum", n + 1)) return -1;
            if (memchr(terms[count].labels, *p, (size_t)n))
                return ax_error(cx, AX_ERR_VALUE,
                                "einsum: repeated label '%c' in one operand is not supported", *p),
                       -1;
            terms[count].labels[n++] = *p;
        }
        terms[count].labels[n] = 0;
        terms[count++].n = n;
    }
    int commas = 0;
    for (const char *p = spec; *p && !(p[0] == '-' && p[1] == '>'); p++) commas += *p == ',';
    if (count != nops || commas + 1 != nops)
        return ax_error(cx, AX_ERR_VALUE,
                        "einsum: the subscripts '%s' do not match the %d operand(s) given", spec,
                        nops),
               -1;
    return 0;
}

/* Parses "ij,jk->ik" into operand label strings and the output labels. */
static int parse_subscripts(ax_ctx *cx, const char *spec, int nops, term *terms, char *out) {
    const char *arrow = strstr(spec, "->");
    size_t lhs = arrow ? (size_t)(arrow - spec) : strlen(spec);
    char *buf = strndup(spec, lhs);
    if (!buf) return ax_error_oom(cx), -1;
    int rc = parse_operands(cx, spec, buf, nops, terms);
    free(buf);
    if (rc) return -1;
    int n = 0;
    if (arrow) {
        for (const char *p = arrow + 2; *p; p++) {
            if (*p == ' ') continue;
            if (n == AX_MAX_RANK && !ax_rank_check(cx, "einsum", n + 1)) return -1;
            out[n++] = *p;
        }
    } else { /* implicit output: the labels used once, in alphabetical order */
        for (int c = 'A'; c <= 'z'; c++) {
            int uses = 0;
            for (int t = 0; t < nops; t++) uses += has(terms[t].labels, (char)c);
            if (uses != 1) continue;
            if (n == AX_MAX_RANK && !ax_rank_check(cx, "einsum", n + 1)) return -1;
            out[n++] = (char)c;
        }
    }
    out[n] = 0;
    return 0;
}

/* Adds the labels of `add` missing from the set `set` (at most LABEL_SET - 1 letters). */
static void add_labels(char *set, const char *add) {
    size_t n = strlen(set);
    for (const char *p = add; *p && n < LABEL_SET - 1; p++)
        if (!strchr(set, *p)) set[n++] = *p, set[n] = 0;
}

/* Sums t over the labels not in `keep`. */
static bool sum_unused(ax_ctx *cx, term *t, const char *keep) {
    int axes[AX_MAX_RANK], naxes = 0, n = 0;
    char labels[AX_MAX_RANK + 1];
    for (int i = 0; i < t->n; i++) {
        if (has(keep, t->labels[i]))
            labels[n++] = t->labels[i];
        else
            axes[naxes++] = i;
    }
    labels[n] = 0;
    if (!naxes) return true;
    ax_array *r = ax_np_sum(cx, AX_P_REDUCE_SUM, t->x, naxes, axes, false, -1);
    ax_array_release(t->x);
    t->x = r;
    t->n = n;
    memcpy(t->labels, labels, (size_t)n + 1);
    return r != NULL;
}

/* The labels that the operands after `upto` and the output still need. */
static void needed_after(const term *terms, int nops, int upto, const char *out, char *need) {
    need[0] = 0;
    add_labels(need, out);
    for (int t = upto + 1; t < nops; t++) add_labels(need, terms[t].labels);
}

/* a := a (x) b over their shared labels: batch when still needed, contracted otherwise. */
static bool combine(ax_ctx *cx, term *a, term *b, const char *need) {
    ax_dot_dims d = {0};
    char labels[AX_MAX_RANK + 1];
    int n = 0;
    for (int i = 0; i < a->n; i++) {
        char c = a->labels[i];
        const char *in_b = strchr(b->labels, c);
        if (!in_b) continue;
        int j = (int)(in_b - b->labels);
        if (a->x->shape[i] != b->x->shape[j]) {
            ax_error(cx, AX_ERR_SHAPE, "einsum: label '%c' has sizes %lld and %lld", c,
                     (long long)a->x->shape[i], (long long)b->x->shape[j]);
            return false;
        }
        if (has(need, c)) {
            d.lhs_batch[d.nbatch] = i;
            d.rhs_batch[d.nbatch++] = j;
            labels[n++] = c;
        } else {
            d.lhs_contract[d.ncontract] = i;
            d.rhs_contract[d.ncontract++] = j;
        }
    }
    int rank = n;
    for (int i = 0; i < a->n; i++) rank += !has(b->labels, a->labels[i]);
    for (int j = 0; j < b->n; j++) rank += !has(a->labels, b->labels[j]);
    if (!ax_rank_check(cx, "einsum", rank)) return false;
    for (int i = 0; i < a->n; i++)
        if (!has(b->labels, a->labels[i])) labels[n++] = a->labels[i];
    for (int j = 0; j < b->n; j++)
        if (!has(a->labels, b->labels[j])) labels[n++] = b->labels[j];
    labels[n] = 0;
    bool weak;
    ax_dtype t = ax_dtype_promote(a->x->dtype, a->x->weak, b->x->dtype, b->x->weak, &weak);
    ax_array *x = ax_np_astype(cx, a->x, t, weak), *y = ax_np_astype(cx, b->x, t, weak);
    ax_params p = {.dot = d};
    ax_array *r = x && y ? ax_bind1(cx, AX_P_DOT_GENERAL, 2, (ax_array *[]){x, y}, &p) : NULL;
    ax_array_release(x);
    ax_array_release(y);
    ax_array_release(a->x);
    a->x = r;
    a->n = n;
    memcpy(a->labels, labels, (size_t)n + 1);
    return r != NULL;
}

/* Transposes the final term into the output's label order. */
static ax_array *to_output(ax_ctx *cx, term *t, const char *out) {
    int perm[AX_MAX_RANK], n = (int)strlen(out);
    if (n != t->n) return ax_error(cx, AX_ERR_VALUE, "einsum: bad output subscripts '%s'", out);
    for (int i = 0; i < n; i++) {
        const char *at = strchr(t->labels, out[i]);
        if (!at) return ax_error(cx, AX_ERR_VALUE, "einsum: output label '%c' is unknown", out[i]);
        perm[i] = (int)(at - t->labels);
    }
    return ax_np_transpose(cx, t->x, perm);
}

static ax_array *einsum(ax_ctx *cx, const char *spec, int nops, term *terms) {
    char out[AX_MAX_RANK + 1], need[LABEL_SET];
    if (parse_subscripts(cx, spec, nops, terms, out) < 0) return NULL;
    for (int t = 0; t < nops; t++)
        if (terms[t].n != terms[t].x->ndim)
            return ax_error(cx, AX_ERR_VALUE,
                            "einsum: operand %d has rank %d but '%s' has %d labels", t,
                            terms[t].x->ndim, terms[t].labels, terms[t].n);
    /* Each operand first sums the labels nobody else uses. */
    for (int t = 0; t < nops; t++) {
        need[0] = 0;
        add_labels(need, out);
        for (int u = 0; u < nops; u++)
            if (u != t) add_labels(need, terms[u].labels);
        if (!sum_unused(cx, &terms[t], need)) return NULL;
    }
    for (int t = 1; t < nops; t++) {
        needed_after(terms, nops, t, out, need);
        if (!combine(cx, &terms[0], &terms[t], need)) return NULL;
    }
    if (!sum_unused(cx, &terms[0], out)) return NULL;
    return to_output(cx, &terms[0], out);
}

static ax_value *bi_einsum(ax_interp *in, ax_value *self, const ax_args *args) {
    const char *f = self->builtin->name;
    if (!ax_bi_keywords(in, args, f, (const char *const[]){"optimize", "precision", NULL}))
        return NULL;
    if (args->n < 2)
        return ax_error(in->cx, AX_ERR_TYPE, "einsum(subscripts, *operands) needs an operand");
    const char *spec = ax_bi_str(in, args->pos[0], "einsum subscripts");
    if (!spec) return NULL;
    int nops = args->n - 1;
    term *terms = calloc((size_t)nops, sizeof *terms);
    if (!terms) return ax_error_oom(in->cx);
    bool ok = true;
    for (int i = 0; i < nops && ok; i++)
        ok = (terms[i].x = ax_np_asarray(in, args->pos[i + 1], f)) != NULL;
    ax_array *r = ok ? einsum(in->cx, spec, nops, terms) : NULL;
    for (int i = 0; i < nops; i++) ax_array_release(terms[i].x);
    free(terms);
    return ax_np_wrap_take(in, r);
}

const ax_builtin_def ax_builtins_einsum[] = {
    {"einsum", bi_einsum, "einsum(subscripts, *operands): Einstein summation, e.g. 'ij,jk->ik'",
     AX_BI_NP},
    {NULL, NULL, NULL, 0},
};

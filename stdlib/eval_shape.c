/* ShapeDtypeStruct and eval_shape (see eval_shape.h). */
#include "eval_shape.h"

#include <stdlib.h>
#include <string.h>

#include "../compiler/trace_ir.h"
#include "builtins_lib.h"
#include "flat_call.h"
#include "pytree.h"

/* ---------------------------------------------------------------- ShapeDtypeStruct */

static void struct_format(ax_strbuf *out, void *p) {
    const ax_aval *t = p;
    ax_strbuf_append(out, "ShapeDtypeStruct(shape=(");
    for (int i = 0; i < t->ndim; i++)
        ax_strbuf_appendf(out, "%s%lld", i ? ", " : "", (long long)t->shape[i]);
    ax_strbuf_appendf(out, "%s), dtype=%s%s)", t->ndim == 1 ? "," : "", ax_dtype_name(t->dtype),
                      t->weak ? ", weak_type=True" : "");
}

static ax_value *shape_tuple(ax_interp *in, const ax_aval *t) {
    ax_value *items[AX_MAX_RANK];
    for (int i = 0; i < t->ndim; i++)
        if (!(items[i] = ax_value_int(in, t->shape[i]))) {
            for (int k = 0; k < i; k++) ax_value_release(items[k]);
            return NULL;
        }
    ax_value *r = ax_value_tuple(t->ndim, items);
    return r ? r : ax_error_oom(in->cx);
}

static ax_value *struct_getattr(ax_interp *in, ax_value *self, const char *name) {
    const ax_aval *t = self->obj.payload;
    if (strcmp(name, "shape") == 0) return shape_tuple(in, t);
    if (strcmp(name, "dtype") == 0) {
        ax_value *d = ax_value_dtype(t->dtype);
        return d ? d : ax_error_oom(in->cx);
    }
    if (strcmp(name, "ndim") == 0) return ax_value_int(in, t->ndim);
    if (strcmp(name, "weak_type") == 0) return ax_value_bool(in, t->weak);
    if (strcmp(name, "size") == 0) {
        int64_t n = 1;
        for (int i = 0; i < t->ndim; i++) n *= t->shape[i];
        return ax_value_int(in, n);
    }
    return NULL;
}

/* The names struct_getattr resolves (Tab completion, dir). */
static void struct_each_attr(ax_interp *in, ax_value *self, void (*fn)(void *arg, const char *name),
                             void *arg) {
    (void)in, (void)self;
    static const char *const names[] = {"dtype", "ndim", "shape", "size", "weak_type"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) fn(arg, names[i]);
}

static int struct_equal(ax_interp *in, const ax_value *a, const ax_value *b) {
    (void)in;
    const ax_aval *x = a->obj.payload, *y = b->obj.payload;
    return x->dtype == y->dtype && x->weak == y->weak &&
           ax_shape_equal(x->ndim, x->shape, y->ndim, y->shape);
}

static const ax_object_type struct_type = {.name = "ShapeDtypeStruct",
                                           .free = free,
                                           .format = struct_format,
                                           .getattr = struct_getattr,
                                           .each_attr = struct_each_attr,
                                           .equal = struct_equal};

ax_value *ax_shape_dtype_struct(ax_interp *in, const ax_aval *t) {
    ax_aval *p = malloc(sizeof *p);
    if (!p) return ax_error_oom(in->cx);
    *p = *t;
    ax_value *v = ax_value_object(&struct_type, p);
    return v ? v : ax_error_oom(in->cx);
}

/* ShapeDtypeStruct(shape, dtype) */
static ax_value *b_shape_dtype_struct(ax_interp *in, ax_value *self, const ax_args *a) {
    (void)self;
    static const char *const names[] = {"shape", "dtype", "weak_type", NULL};
    ax_value *vals[3];
    if (!ax_bi_parse(in, a, "ShapeDtypeStruct", names, 3, vals) ||
        !ax_bi_required(in, vals[0], "ShapeDtypeStruct", "shape") ||
        !ax_bi_required(in, vals[1], "ShapeDtypeStruct", "dtype"))
        return NULL;
    ax_aval t = {0};
    int dtype;
    if (!ax_bi_shape(in, vals[0], "shape", &t.ndim, t.shape) || !ax_bi_dtype(in, vals[1], &dtype) ||
        !ax_bi_bool(in, vals[2], "weak_type", false, &t.weak))
        return NULL;
    if (dtype < 0) return ax_error(in->cx, AX_ERR_TYPE, "ShapeDtypeStruct needs a dtype");
    t.dtype = (ax_dtype)dtype;
    return ax_shape_dtype_struct(in, &t);
}

/* ---------------------------------------------------------------- arguments */

bool ax_is_shape_dtype_struct(const ax_value *v) {
    return v->kind == AX_V_OBJECT && v->obj.type == &struct_type;
}

/* v with its ShapeDtypeStruct leaves replaced by data-free arrays (new reference). */
static ax_value *struct_tree_to_arrays(ax_interp *in, ax_value *v) {
    ax_value **leaves, *def;
    int n;
    if (ax_tree_flatten(in, v, &leaves, &n, &def)) return NULL;
    int rc = 0;
    for (int i = 0; i < n && !rc; i++) {
        if (!ax_is_shape_dtype_struct(leaves[i])) continue;
        ax_scope s;
        ax_scope_begin(&s, in->cx);
        ax_array *z = ax_scope_keep(&s, ax_lax_full_aval(&s, leaves[i]->obj.payload, 0.0));
        ax_scope_end(&s);
        ax_value *arr = z ? ax_value_array(z) : NULL;
        if (!arr)
            rc = -1;
        else {
            ax_value_release(leaves[i]);
            leaves[i] = arr;
        }
    }
    ax_value *r = rc ? NULL : ax_tree_unflatten(in, def, leaves, n);
    ax_values_release(leaves, n);
    ax_value_release(def);
    return r;
}

void ax_shape_args_free(ax_args *out) {
    for (int i = 0; out->pos && i < out->n; i++) /* pos, kwvals: NULL when not allocated */
        if (out->pos[i]) ax_value_release(out->pos[i]);
    for (int i = 0; out->kwvals && i < out->nkw; i++)
        if (out->kwvals[i]) ax_value_release(out->kwvals[i]);
    free(out->pos);
    free(out->kwvals);
    memset(out, 0, sizeof *out);
}

int ax_shape_args(ax_interp *in, const ax_args *a, ax_args *out) {
    *out = (ax_args){.n = a->n, .nkw = a->nkw, .kwnames = a->kwnames};
    out->pos = calloc((size_t)a->n + 1, sizeof *out->pos);
    out->kwvals = calloc((size_t)a->nkw + 1, sizeof *out->kwvals);
    int rc = out->pos && out->kwvals ? 0 : (ax_error_oom(in->cx), -1);
    for (int i = 0; i < a->n && !rc; i++)
        if (!(out->pos[i] = struct_tree_to_arrays(in, a->pos[i]))) rc = -1;
    for (int i = 0; i < a->nkw && !rc; i++)
        if (!(out->kwvals[i] = struct_tree_to_arrays(in, a->kwvals[i]))) rc = -1;
    if (rc) ax_shape_args_free(out);
    return rc;
}

/* ---------------------------------------------------------------- eval_shape */

/* eval_shape(fun, *args, **kwargs): fun's output as a pytree of ShapeDtypeStructs. */
static ax_value *b_eval_shape(ax_interp *in, ax_value *self, const ax_args *a) {
    (void)self;
    if (a->n < 1) return ax_error(in->cx, AX_ERR_TYPE, "eval_shape(fun, *args) needs a function");
    ax_args rest = *a, args;
    rest.n--;
    rest.pos++;
    if (ax_shape_args(in, &rest, &args)) return NULL;
    flat_call fc;
    ax_value *result = NULL;
    ax_aval *types = NULL;
    ax_ir *ir = NULL;
    int nout = 0;
    if (ax_flat_call_init(&fc, in, "eval_shape", a->pos[0], &args, 0, NULL, false)) goto done;
    if (!(types = calloc((size_t)fc.nflat + 1, sizeof *types))) {
        ax_error_oom(in->cx);
        goto done;
    }
    for (int i = 0; i < fc.nflat; i++) ax_aval_of(&types[i], fc.flat[i]);
    if (!(ir = ax_trace_to_ir(in->cx, ax_flat_call_fn, &fc, fc.nflat, types, &nout))) goto done;
    ax_value **outs = calloc((size_t)fc.nmain + 1, sizeof *outs);
    int made = 0;
    for (; outs && made < fc.nmain; made++) {
        const ax_ir_atom *o = &ir->outs[made];
        ax_aval t;
        if (o->var >= 0)
            t = ir->types[o->var];
        else
            ax_aval_of(&t, o->lit);
        if (!(outs[made] = ax_shape_dtype_struct(in, &t))) break;
    }
    if (!outs)
        ax_error_oom(in->cx);
    else if (made == fc.nmain)
        result = ax_tree_unflatten(in, fc.out_def, outs, fc.nmain);
    if (outs) ax_values_release(outs, made);
done:
    ax_ir_release(ir);
    free(types);
    ax_flat_call_free(&fc);
    ax_shape_args_free(&args);
    return result;
}

int ax_eval_shape_register(ax_interp *in) {
    static const ax_builtin_def fns[] = {
        {"ShapeDtypeStruct", b_shape_dtype_struct,
         "ShapeDtypeStruct(shape, dtype): the type of an array, for eval_shape and make_jaxpr", 0},
        {"eval_shape", b_eval_shape,
         "eval_shape(fun, *args): fun's output shapes and dtypes, found without computing", 0},
    };
    for (size_t i = 0; i < sizeof fns / sizeof *fns; i++) {
        ax_value *v = ax_value_builtin(fns[i].name, fns[i].doc, fns[i].fn, NULL);
        if (!v) return -1;
        ax_interp_define_builtin_take(in, fns[i].name, v);
    }
    return 0;
}

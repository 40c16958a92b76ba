/* Two values that libraries written in ax (stdlib/nn.ax) need and the language itself does not
 * offer: records that are callable and have attributes (a Flax module is both `model(x)` and
 * `model.init(...)`), and a dynamically scoped state slot (Flax names submodules `Dense_0`,
 * `Dense_1` in call order, which needs a counter that survives between the calls a module body
 * makes; nothing else in the language is mutable).
 *
 * The state slot is a stack that lives on the C stack of the `_with_state` calls, so an error
 * that unwinds a call also pops its slot: no state outlives the extent that made it. Values in
 * the slot are ordinary immutable values, and the slot is not a value, so no reference cycle
 * can form. */
#include "support.h"

#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- records */

typedef struct record {
    char *name;
    char *repr;
    ax_value *attrs; /* a dict */
    ax_value *call;  /* a callable, or NULL */
} record;

static void record_free(void *p) {
    record *r = p;
    free(r->name);
    free(r->repr);
    ax_value_release(r->attrs);
    if (r->call) ax_value_release(r->call);
    free(r);
}

static void record_format(ax_strbuf *out, void *p) {
    const record *r = p;
    ax_strbuf_append(out, r->repr ? r->repr : r->name);
}

static ax_value *record_getattr(ax_interp *in, ax_value *self, const char *name) {
    const record *r = self->obj.payload;
    ax_value *v = ax_dict_get(r->attrs, name);
    if (v) return ax_value_retain(v);
    if (strcmp(name, "__name__") == 0) {
        v = ax_value_str(r->name);
        return v ? v : ax_error_oom(in->cx);
    }
    return ax_error(in->cx, AX_ERR_ATTRIBUTE, "%s has no attribute '%s'", r->name, name);
}

static ax_value *record_call(ax_interp *in, ax_value *self, const ax_args *args) {
    const record *r = self->obj.payload;
    if (!r->call) return ax_error(in->cx, AX_ERR_TYPE, "%s is not callable", r->name);
    return ax_call(in, r->call, args);
}

static const ax_object_type record_type = {.name = "record",
                                           .free = record_free,
                                           .format = record_format,
                                           .getattr = record_getattr,
                                           .call = record_call};

/* _record(name, attrs, call=None, repr=None): a value whose attributes are the entries of the
 * dict `attrs`, that calls `call` when called, and prints as `repr` (default: name). */
static ax_value *b_record(ax_interp *in, ax_value *self, const ax_args *a) {
    (void)self;
    static const char *const names[] = {"name", "attrs", "call", "repr", NULL};
    if (!ax_args_check(in, a, "_record", 4, names)) return NULL;
    ax_value *name = ax_arg(a, 0, "name"), *attrs = ax_arg(a, 1, "attrs");
    ax_value *call = ax_arg(a, 2, "call"), *repr = ax_arg(a, 3, "repr");
    if (!name || name->kind != AX_V_STR || !attrs || attrs->kind != AX_V_DICT ||
        (repr && repr->kind != AX_V_STR && repr->kind != AX_V_NONE))
        return ax_error(in->cx, AX_ERR_TYPE,
                        "_record(name, attrs, call=None, repr=None) takes a string, a dict, "
                        "a callable and a string");
    record *r = calloc(1, sizeof *r);
    if (!r) return ax_error_oom(in->cx);
    r->name = strdup(name->str);
    r->repr = repr && repr->kind == AX_V_STR ? strdup(repr->str) : NULL;
    r->attrs = ax_value_retain(attrs);
    r->call = call && call->kind != AX_V_NONE ? ax_value_retain(call) : NULL;
    if (!r->name || (!r->repr && repr && repr->kind != AX_V_NONE)) {
        record_free(r);
        return ax_error_oom(in->cx);
    }
    return ax_value_or_oom(in, ax_value_object(&record_type, r)); /* frees r on failure */
}

static ax_value *b_is_record(ax_interp *in, ax_value *self, const ax_args *a) {
    (void)self;
    if (a->n != 1 || a->nkw) return ax_error(in->cx, AX_ERR_TYPE, "_is_record(x) takes one value");
    return ax_value_bool(in, a->pos[0]->kind == AX_V_OBJECT && a->pos[0]->obj.type == &record_type);
}

/* _kind(x): "array", "tuple", "list", "dict", "str", "function", ... and for C objects their
 * type name ("record", "key", "jit"): what Python's type() would tell a library. */
static ax_value *b_kind(ax_interp *in, ax_value *self, const ax_args *a) {
    (void)self;
    if (a->n != 1 || a->nkw) return ax_error(in->cx, AX_ERR_TYPE, "_kind(x) takes one value");
    const ax_value *v = a->pos[0];
    ax_value *r =
        ax_value_str(v->kind == AX_V_OBJECT ? v->obj.type->name : ax_value_kind_name(v->kind));
    return r ? r : ax_error_oom(in->cx);
}

/* _stdlib_dir(): the directory of the standard library (where prelude.ax was found), so that
 * a library can find the data files installed beside it. */
static ax_value *b_stdlib_dir(ax_interp *in, ax_value *self, const ax_args *a) {
    (void)self;
    if (a->n || a->nkw) return ax_error(in->cx, AX_ERR_TYPE, "_stdlib_dir() takes no arguments");
    if (!in->stdlib_dir) return ax_none();
    ax_value *r = ax_value_str(in->stdlib_dir);
    return r ? r : ax_error_oom(in->cx);
}

/* ---------------------------------------------------------------- the state slot */

typedef struct slot {
    ax_value *value;
    struct slot *outer;
} slot;

/* The innermost slot; shared by the three builtins through their bound data. */
typedef struct slots {
    slot *top;
} slots;

static void slots_free(void *p) {
    free(p);
}
static const ax_object_type slots_type = {.name = "state", .free = slots_free};

static slots *slots_of(ax_value *self) {
    return self->builtin->data->obj.payload;
}

/* _with_state(init, fn, *args, **kwargs): calls fn(*args, **kwargs) with a new slot holding
 * init, and returns (fn's result, the slot's final value). */
static ax_value *b_with_state(ax_interp *in, ax_value *self, const ax_args *a) {
    if (a->n < 2) return ax_error(in->cx, AX_ERR_TYPE, "_with_state(init, fn, *args, **kwargs)");
    slots *s = slots_of(self);
    slot here = {.value = ax_value_retain(a->pos[0]), .outer = s->top};
    s->top = &here;
    ax_args rest = *a;
    rest.n -= 2;
    rest.pos += 2;
    ax_value *r = ax_call(in, a->pos[1], &rest);
    s->top = here.outer;
    if (!r) {
        ax_value_release(here.value);
        return NULL;
    }
    ax_value *pair[2] = {r, here.value};
    ax_value *t = ax_value_tuple(2, pair);
    return t ? t : ax_error_oom(in->cx);
}

static ax_value *b_state_get(ax_interp *in, ax_value *self, const ax_args *a) {
    slots *s = slots_of(self);
    if (a->n || a->nkw) return ax_error(in->cx, AX_ERR_TYPE, "_state_get() takes no arguments");
    return ax_value_retain(s->top ? s->top->value : ax_none());
}

static ax_value *b_state_set(ax_interp *in, ax_value *self, const ax_args *a) {
    slots *s = slots_of(self);
    if (a->n != 1 || a->nkw) return ax_error(in->cx, AX_ERR_TYPE, "_state_set(value)");
    if (!s->top) return ax_error(in->cx, AX_ERR_RUNTIME, "_state_set() outside _with_state()");
    ax_value *old = s->top->value;
    s->top->value = ax_value_retain(a->pos[0]);
    ax_value_release(old);
    return ax_none();
}

/* _raise("TypeError", message): fails with an error of that kind (ValueError if the kind is
 * unknown), so that a library written in ax reports errors as the C builtins do. */
static ax_value *b_raise(ax_interp *in, ax_value *self, const ax_args *a) {
    (void)self;
    if (a->n != 2 || a->nkw || a->pos[0]->kind != AX_V_STR || a->pos[1]->kind != AX_V_STR)
        return ax_error(in->cx, AX_ERR_TYPE, "_raise(kind, message) takes two strings");
    ax_error_kind kind = AX_ERR_VALUE;
    for (int k = AX_ERR_NONE + 1; k < AX_ERR_NKINDS; k++)
        if (strcmp(ax_error_kind_name((ax_error_kind)k), a->pos[0]->str) == 0)
            kind = (ax_error_kind)k;
    return ax_error(in->cx, kind, "%s", a->pos[1]->str);
}

int ax_support_register(ax_interp *in) {
    slots *s = calloc(1, sizeof *s);
    ax_value *sv = s ? ax_value_object(&slots_type, s) : NULL; /* frees s on failure */
    if (!sv) return -1;
    static const struct {
        const char *name, *doc;
        ax_builtin_fn fn;
        bool stateful;
    } fns[] = {
        {"_record", "_record(name, attrs, call=None, repr=None): a callable value with attributes",
         b_record, false},
        {"_is_record", "whether a value was made by _record", b_is_record, false},
        {"_kind", "_kind(x): the kind of a value (array, tuple, list, dict, str, ...)", b_kind,
         false},
        {"_stdlib_dir", "the standard library's directory (None if unknown)", b_stdlib_dir, false},
        {"_raise", "_raise(kind, message): fails with an error of that kind", b_raise, false},
        {"_with_state",
         "_with_state(init, fn, *args): (fn(*args), the final state) with a new state slot",
         b_with_state, true},
        {"_state_get", "the innermost state slot's value (None outside _with_state)", b_state_get,
         true},
        {"_state_set", "replaces the innermost state slot's value", b_state_set, true},
    };
    for (size_t i = 0; i < sizeof fns / sizeof *fns; i++) {
        ax_value *v = ax_value_builtin(fns[i].name, fns[i].doc, fns[i].fn,
                                       fns[i].stateful ? ax_value_retain(sv) : NULL);
        if (!v) {
            ax_value_release(sv);
            return -1;
        }
        ax_interp_define_builtin_take(in, fns[i].name, v);
    }
    ax_value_release(sv);
    return 0;
}

/* Records: namedtuple classes and their instances (see records.h). */
#include "records.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "builtins_lib.h"
#include "pytree.h"

typedef struct record_class {
    char *name;
    int n;
    char **fields;
    ax_value **defaults;           /* one per field: the default value, or NULL */
    ax_value *flatten, *unflatten; /* from register_pytree_node, or NULL */
} record_class;

typedef struct record {
    ax_value *cls;
    ax_value **values;
} record;

static void class_free(void *p) {
    record_class *c = p;
    for (int i = 0; i < c->n; i++) {
        free(c->fields[i]);
        if (c->defaults[i]) ax_value_release(c->defaults[i]);
    }
    free(c->fields);
    free(c->defaults);
    if (c->flatten) ax_value_release(c->flatten);
    if (c->unflatten) ax_value_release(c->unflatten);
    free(c->name);
    free(c);
}

static void class_format(ax_strbuf *out, void *p) {
    ax_strbuf_appendf(out, "<class '__main__.%s'>", ((record_class *)p)->name);
}

static ax_value *class_call(ax_interp *in, ax_value *self, const ax_args *a);
static ax_value *class_getattr(ax_interp *in, ax_value *self, const char *name);

static void class_each_attr(ax_interp *in, ax_value *self, void (*fn)(void *arg, const char *name),
                            void *arg);

static const ax_object_type class_type = {.name = "class",
                                          .free = class_free,
                                          .format = class_format,
                                          .getattr = class_getattr,
                                          .each_attr = class_each_attr,
                                          .call = class_call};

static void record_free(void *p) {
    record *r = p;
    int n = ((record_class *)r->cls->obj.payload)->n;
    ax_values_release(r->values, n);
    ax_value_release(r->cls);
    free(r);
}

static void record_format(ax_strbuf *out, void *p) {
    record *r = p;
    record_class *c = r->cls->obj.payload;
    ax_strbuf_appendf(out, "%s(", c->name);
    for (int i = 0; i < c->n; i++) {
        ax_strbuf_appendf(out, "%s%s=", i ? ", " : "", c->fields[i]);
        ax_value_format_nested(out, r->values[i]);
    }
    ax_strbuf_append(out, ")");
}

static ax_value *record_getattr(ax_interp *in, ax_value *self, const char *name);
static void record_each_attr(ax_interp *in, ax_value *self, void (*fn)(void *arg, const char *name),
                             void *arg);

static ax_value *record_getitem(ax_interp *in, ax_value *self, ax_value *index) {
    record *r = self->obj.payload;
    int n = ax_record_nfields(self);
    int64_t i;
    if (!ax_value_to_int(in, index, "a record index", &i)) return NULL;
    int64_t k = i < 0 ? i + n : i;
    if (k < 0 || k >= n)
        return ax_error(in->cx, AX_ERR_INDEX, "%s index %lld is out of range (it has %d fields)",
                        ax_record_class_name(r->cls), (long long)i, n);
    return ax_value_retain(r->values[k]);
}

static int record_equal(ax_interp *in, const ax_value *a, const ax_value *b) {
    const record *x = a->obj.payload, *y = b->obj.payload;
    if (x->cls != y->cls) return 0;
    for (int i = 0; i < ax_record_nfields(a); i++) {
        int r = ax_value_equal(in, x->values[i], y->values[i]);
        if (r != 1) return r;
    }
    return 1;
}

static const ax_object_type record_type = {.name = "record",
                                           .free = record_free,
                                           .format = record_format,
                                           .getattr = record_getattr,
                                           .each_attr = record_each_attr,
                                           .getitem = record_getitem,
                                           .equal = record_equal};

bool ax_record_is_class(const ax_value *v) {
    return v->kind == AX_V_OBJECT && v->obj.type == &class_type;
}

bool ax_record_is_instance(const ax_value *v) {
    return v->kind == AX_V_OBJECT && v->obj.type == &record_type;
}

ax_value *ax_record_class_of(const ax_value *r) {
    return ((record *)r->obj.payload)->cls;
}

static record_class *class_of(const ax_value *v) {
    return ax_record_is_class(v) ? v->obj.payload : ax_record_class_of(v)->obj.payload;
}

const char *ax_record_class_name(const ax_value *cls) {
    return class_of(cls)->name;
}

int ax_record_nfields(const ax_value *v) {
    return class_of(v)->n;
}

const char *ax_record_field_name(const ax_value *v, int i) {
    return class_of(v)->fields[i];
}

ax_value *ax_record_value(const ax_value *r, int i) {
    return ((record *)r->obj.payload)->values[i];
}

ax_value *ax_record_flatten_fn(const ax_value *cls) {
    return class_of(cls)->flatten;
}

ax_value *ax_record_unflatten_fn(const ax_value *cls) {
    return class_of(cls)->unflatten;
}

ax_value *ax_record_new(ax_interp *in, ax_value *cls, ax_value **values) {
    record_class *c = cls->obj.payload;
    record *r = calloc(1, sizeof *r);
    ax_value **vals = calloc((size_t)c->n + 1, sizeof *vals);
    if (!r || !vals) {
        free(r);
        free(vals);
        return ax_error_oom(in->cx);
    }
    for (int i = 0; i < c->n; i++) vals[i] = ax_value_retain(values[i]);
    r->cls = ax_value_retain(cls);
    r->values = vals;
    return ax_value_or_oom(in, ax_value_object(&record_type, r)); /* frees r on failure */
}

int ax_record_register(ax_interp *in, ax_value *cls, ax_value *flatten, ax_value *unflatten) {
    if (!ax_record_is_class(cls)) {
        char d[128];
        ax_value_describe(d, sizeof d, cls);
        ax_error(in->cx, AX_ERR_TYPE,
                 "register_pytree_node takes a class made by namedtuple (ax has no class "
                 "statement), not %s",
                 d);
        return -1;
    }
    record_class *c = cls->obj.payload;
    if (c->flatten) ax_value_release(c->flatten);
    if (c->unflatten) ax_value_release(c->unflatten);
    c->flatten = ax_value_retain(flatten);
    c->unflatten = ax_value_retain(unflatten);
    return 0;
}

/* ---------------------------------------------------------------- calls and attributes */

static int field_index(const record_class *c, const char *name) {
    for (int i = 0; i < c->n; i++)
        if (strcmp(c->fields[i], name) == 0) return i;
    return -1;
}

/* Fills vals (borrowed) from a call's arguments: positionally, by keyword, then defaults. */
static bool bind_fields(ax_interp *in, const record_class *c, const ax_args *a, ax_value **vals) {
    if (a->n > c->n)
        return ax_error(in->cx, AX_ERR_TYPE, "%s() takes %d arguments but %d were given", c->name,
                        c->n, a->n),
               false;
    for (int i = 0; i < a->n; i++) vals[i] = a->pos[i];
    for (int k = 0; k < a->nkw; k++) {
        int i = field_index(c, a->kwnames[k]);
        if (i < 0)
            return ax_error(in->cx, AX_ERR_TYPE, "%s() got an unexpected keyword argument '%s'",
                            c->name, a->kwnames[k]),
                   false;
        if (vals[i])
            return ax_error(in->cx, AX_ERR_TYPE, "%s() got multiple values for argument '%s'",
                            c->name, a->kwnames[k]),
                   false;
        vals[i] = a->kwvals[k];
    }
    for (int i = 0; i < c->n; i++) {
        if (!vals[i]) vals[i] = c->defaults[i];
        if (!vals[i])
            return ax_error(in->cx, AX_ERR_TYPE, "%s() missing required argument '%s'", c->name,
                            c->fields[i]),
                   false;
    }
    return true;
}

static ax_value *class_call(ax_interp *in, ax_value *self, const ax_args *a) {
    record_class *c = self->obj.payload;
    ax_value **vals = calloc((size_t)c->n + 1, sizeof *vals);
    if (!vals) return ax_error_oom(in->cx);
    ax_value *r = bind_fields(in, c, a, vals) ? ax_record_new(in, self, vals) : NULL;
    free(vals);
    return r;
}

static ax_value *fields_tuple(ax_interp *in, const record_class *c) {
    ax_value **names = calloc((size_t)c->n + 1, sizeof *names);
    if (!names) return ax_error_oom(in->cx);
    for (int i = 0; i < c->n; i++)
        if (!(names[i] = ax_value_str(c->fields[i]))) {
            ax_values_release(names, i);
            return ax_error_oom(in->cx);
        }
    ax_value *t = ax_value_tuple(c->n, names);
    free(names);
    return t ? t : ax_error_oom(in->cx);
}

static ax_value *class_getattr(ax_interp *in, ax_value *self, const char *name) {
    record_class *c = self->obj.payload;
    if (strcmp(name, "_fields") == 0) return fields_tuple(in, c);
    if (strcmp(name, "__name__") == 0) {
        ax_value *v = ax_value_str(c->name);
        return v ? v : ax_error_oom(in->cx);
    }
    return NULL;
}

/* The names class_getattr and record_getattr resolve (Tab completion, dir). */
static void class_each_attr(ax_interp *in, ax_value *self, void (*fn)(void *arg, const char *name),
                            void *arg) {
    (void)in, (void)self;
    fn(arg, "__name__");
    fn(arg, "_fields");
}

static void record_each_attr(ax_interp *in, ax_value *self, void (*fn)(void *arg, const char *name),
                             void *arg) {
    (void)in;
    const record_class *c = ((record *)self->obj.payload)->cls->obj.payload;
    for (int i = 0; i < c->n; i++) fn(arg, c->fields[i]);
    fn(arg, "_asdict");
    fn(arg, "_fields");
    fn(arg, "_replace");
}

/* r._replace(**changes): a copy with some fields replaced. */
static ax_value *record_replace(ax_interp *in, ax_value *self, const ax_args *a) {
    ax_value *rv = self->builtin->data;
    record *r = rv->obj.payload;
    record_class *c = r->cls->obj.payload;
    if (a->n) return ax_error(in->cx, AX_ERR_TYPE, "_replace() takes keyword arguments only");
    ax_value **vals = calloc((size_t)c->n + 1, sizeof *vals);
    if (!vals) return ax_error_oom(in->cx);
    memcpy(vals, r->values, (size_t)c->n * sizeof *vals);
    ax_value *out = NULL;
    for (int k = 0; k < a->nkw; k++) {
        int i = field_index(c, a->kwnames[k]);
        if (i < 0) {
            ax_error(in->cx, AX_ERR_VALUE, "got unexpected field name: '%s'", a->kwnames[k]);
            goto done;
        }
        vals[i] = a->kwvals[k];
    }
    out = ax_record_new(in, r->cls, vals);
done:
    free(vals);
    return out;
}

/* r._asdict(): {field: value} in field order. */
static ax_value *record_asdict(ax_interp *in, ax_value *self, const ax_args *a) {
    ax_value *rv = self->builtin->data;
    record *r = rv->obj.payload;
    record_class *c = r->cls->obj.payload;
    if (a->n || a->nkw) return ax_error(in->cx, AX_ERR_TYPE, "_asdict() takes no arguments");
    ax_value **keys = calloc((size_t)c->n + 1, sizeof *keys);
    ax_value **vals = calloc((size_t)c->n + 1, sizeof *vals);
    if (!keys || !vals) {
        free(keys);
        free(vals);
        return ax_error_oom(in->cx);
    }
    for (int i = 0; i < c->n; i++) {
        keys[i] = ax_value_str(c->fields[i]);
        vals[i] = ax_value_retain(r->values[i]);
    }
    ax_value *d = ax_value_dict(c->n, keys, vals);
    free(keys);
    free(vals);
    return d ? d : ax_error_oom(in->cx);
}

static ax_value *record_getattr(ax_interp *in, ax_value *self, const char *name) {
    record *r = self->obj.payload;
    record_class *c = r->cls->obj.payload;
    int i = field_index(c, name);
    if (i >= 0) return ax_value_retain(r->values[i]);
    if (strcmp(name, "_fields") == 0) return fields_tuple(in, c);
    ax_builtin_fn fn = strcmp(name, "_replace") == 0  ? record_replace
                       : strcmp(name, "_asdict") == 0 ? record_asdict
                                                      : NULL;
    if (!fn) return NULL;
    ax_value *m = ax_value_builtin(name, "a record method", fn, ax_value_retain(self));
    return m ? m : ax_error_oom(in->cx);
}

/* ---------------------------------------------------------------- namedtuple */

/* The field names: a list or tuple of strings, or one string of names separated by spaces or
 * commas. */
static int read_fields(ax_interp *in, ax_value *spec, char ***out) {
    ax_strbuf all;
    ax_strbuf_init(&all);
    if (spec->kind == AX_V_STR) {
        ax_strbuf_append(&all, spec->str);
    } else if (spec->kind == AX_V_LIST || spec->kind == AX_V_TUPLE) {
        for (int i = 0; i < spec->n; i++) {
            if (spec->items[i]->kind != AX_V_STR) {
                ax_strbuf_free(&all);
                return ax_error(in->cx, AX_ERR_TYPE, "namedtuple field names must be strings"), -1;
            }
            ax_strbuf_appendf(&all, "%s ", spec->items[i]->str);
        }
    } else {
        return ax_error(in->cx, AX_ERR_TYPE,
                        "namedtuple(typename, field_names): field_names is a list of strings "
                        "or one string"),
               -1;
    }
    if (all.failed) {
        ax_strbuf_free(&all);
        return ax_error_oom(in->cx), -1;
    }
    char **fields = NULL, *save = NULL;
    int n = 0;
    for (char *tok = all.data ? strtok_r(all.data, " ,", &save) : NULL; tok;
         tok = strtok_r(NULL, " ,", &save)) {
        bool ok = isalpha((unsigned char)tok[0]);
        for (char *p = tok; ok && *p; p++) ok = *p == '_' || isalnum((unsigned char)*p);
        for (int i = 0; ok && i < n; i++) ok = strcmp(fields[i], tok) != 0;
        char **grown = ok ? realloc(fields, (size_t)(n + 1) * sizeof *fields) : NULL;
        if (grown) fields = grown;
        if (!grown || !(fields[n] = strdup(tok))) {
            if (ok)
                ax_error_oom(in->cx);
            else
                ax_error(in->cx, AX_ERR_VALUE,
                         "namedtuple field names must be distinct identifiers not starting "
                         "with '_': '%s'",
                         tok);
            for (int i = 0; i < n; i++) free(fields[i]);
            free(fields);
            ax_strbuf_free(&all);
            return -1;
        }
        n++;
    }
    ax_strbuf_free(&all);
    *out = fields;
    return n;
}

/* namedtuple(typename, field_names, defaults=None): a record class. Defaults apply to the last
 * fields, as in Python. */
static ax_value *b_namedtuple(ax_interp *in, ax_value *self, const ax_args *a) {
    (void)self;
    static const char *const names[] = {"typename", "field_names", "defaults", NULL};
    if (!ax_args_check(in, a, "namedtuple", 2, names)) return NULL;
    ax_value *tn = ax_arg(a, 0, "typename"), *spec = ax_arg(a, 1, "field_names");
    ax_value *defs = ax_arg(a, 2, "defaults");
    if (!tn || tn->kind != AX_V_STR || !spec)
        return ax_error(in->cx, AX_ERR_TYPE,
                        "namedtuple(typename, field_names) takes a name and the field names");
    if (defs && defs->kind == AX_V_NONE) defs = NULL;
    if (defs && defs->kind != AX_V_LIST && defs->kind != AX_V_TUPLE)
        return ax_error(in->cx, AX_ERR_TYPE, "namedtuple defaults must be a list or a tuple");
    record_class *c = calloc(1, sizeof *c);
    if (!c || !(c->name = strdup(tn->str))) {
        free(c);
        return ax_error_oom(in->cx);
    }
    int n = read_fields(in, spec, &c->fields);
    if (n < 0 || !(c->defaults = calloc((size_t)n + 1, sizeof *c->defaults))) {
        if (n >= 0) {
            c->n = n;
            ax_error_oom(in->cx);
        }
        class_free(c);
        return NULL;
    }
    c->n = n;
    if (defs && defs->n > n) {
        class_free(c);
        return ax_error(in->cx, AX_ERR_TYPE, "got more default values than field names");
    }
    for (int i = 0; defs && i < defs->n; i++)
        c->defaults[n - defs->n + i] = ax_value_retain(defs->items[i]);
    return ax_value_or_oom(in, ax_value_object(&class_type, c)); /* frees c on failure */
}

ax_value *ax_lib_open_collections(ax_interp *in, const ax_lib *lib) {
    ax_module *m = ax_interp_new_module(in, lib->name);
    if (!m) return NULL;
    ax_value *f = ax_value_builtin("namedtuple",
                                   "namedtuple(typename, field_names, defaults=None): a class of "
                                   "records with named fields",
                                   b_namedtuple, NULL);
    if (!f) return ax_error_oom(in->cx);
    ax_module_define_take(m, "namedtuple", f);
    ax_value *v = ax_value_module(m);
    return v ? v : ax_error_oom(in->cx);
}

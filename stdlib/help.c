/* help(): the documentation of builtins, functions and modules, and the types of values. The
 * REPL's :help shows the same text (cli/repl.c), so a notebook or a script can ask too. */
#include "help.h"
#include "builtins_lib.h"

#include <stdio.h>
#include <string.h>

void ax_help_describe_value(ax_strbuf *out, const ax_value *v, int depth) {
    char buf[256];
    if (depth > 4 || (v->kind != AX_V_TUPLE && v->kind != AX_V_LIST && v->kind != AX_V_DICT)) {
        ax_value_describe(buf, sizeof buf, v);
        ax_strbuf_append(out, buf);
        return;
    }
    const char *open = v->kind == AX_V_TUPLE ? "(" : v->kind == AX_V_LIST ? "[" : "{";
    const char *close = v->kind == AX_V_TUPLE ? ")" : v->kind == AX_V_LIST ? "]" : "}";
    ax_strbuf_append(out, open);
    for (int i = 0; i < v->n; i++) {
        if (i) ax_strbuf_append(out, ", ");
        if (i == 16) {
            ax_strbuf_append(out, "...");
            break;
        }
        if (v->kind == AX_V_DICT) {
            ax_value_format_nested(out, v->keys[i]);
            ax_strbuf_append(out, ": ");
        }
        ax_help_describe_value(out, v->items[i], depth + 1);
    }
    if (v->kind == AX_V_TUPLE && v->n == 1) ax_strbuf_append(out, ",");
    ax_strbuf_append(out, close);
}

void ax_help_signature(ax_strbuf *out, const ax_value *v) {
    const ax_closure *fn = v->fn;
    const ax_node *def = fn->def;
    bool is_lambda = def->kind == AX_N_LAMBDA;
    ax_strbuf_appendf(out, "%s%s(", is_lambda ? "lambda " : "def ",
                      is_lambda ? "" : (fn->name ? fn->name : "?"));
    bool kwonly_marked = false;
    for (int i = 0; i < def->nparams; i++) {
        const ax_param *p = &def->params[i];
        if (i) ax_strbuf_append(out, ", ");
        if (p->kwonly && !kwonly_marked && !p->star2) {
            kwonly_marked = true;
            bool star_before = i > 0 && def->params[i - 1].star;
            if (!star_before) ax_strbuf_append(out, "*, ");
        }
        ax_strbuf_appendf(out, "%s%s", p->star ? "*" : p->star2 ? "**" : "", p->name);
        if (p->star) kwonly_marked = true;
        if (fn->defaults && fn->defaults[i]) {
            ax_strbuf_append(out, "=");
            ax_value_format(out, fn->defaults[i]);
        }
    }
    ax_strbuf_append(out, ")");
}

/* The docstring of a def: a string literal as the first statement of its body. */
static const char *closure_docstring(const ax_value *v) {
    const ax_node *def = v->fn->def;
    if (def->kind != AX_N_DEF || def->body.n < 2) return NULL;
    const ax_node *first = def->body.items[0];
    if (first->kind == AX_N_EXPR && first->a && first->a->kind == AX_N_STR) return first->a->text;
    return NULL;
}

typedef struct attr_list {
    ax_strbuf text;
    int n;
} attr_list;

enum { MAX_LISTED_MEMBERS = 60 };

static void collect_attr(void *arg, const char *name) {
    attr_list *l = arg;
    if (l->n >= MAX_LISTED_MEMBERS) return;
    ax_strbuf_appendf(&l->text, "%s%s", l->n ? ", " : "", name);
    l->n++;
}

static void builtin_text(ax_strbuf *out, const char *name, const ax_builtin *b) {
    const char *doc = b->doc && *b->doc ? b->doc : "(no documentation)";
    size_t n = strlen(b->name);
    const char *sig = strncmp(doc, "class ", 6) == 0 ? doc + 6 : doc;
    if (strncmp(sig, b->name, n) == 0 && (sig[n] == '(' || sig[n] == ':'))
        ax_strbuf_append(out, doc);
    else
        ax_strbuf_appendf(out, "%s: %s", name, doc);
}

void ax_help_text(ax_interp *in, ax_strbuf *out, const char *name, const ax_value *v) {
    switch (v->kind) {
    case AX_V_BUILTIN:
        builtin_text(out, name, v->builtin);
        break;
    case AX_V_FUNC: {
        ax_help_signature(out, v);
        const char *doc = closure_docstring(v);
        if (doc) ax_strbuf_appendf(out, "\n    %s", doc);
        break;
    }
    case AX_V_MODULE: {
        attr_list l = {.n = 0};
        ax_strbuf_init(&l.text);
        ax_value_each_attr(in, (ax_value *)v, collect_attr, &l);
        ax_strbuf_appendf(out, "module %s: %s%s", name, l.text.data ? l.text.data : "",
                          l.n >= MAX_LISTED_MEMBERS ? ", ..." : "");
        ax_strbuf_free(&l.text);
        break;
    }
    default:
        ax_strbuf_appendf(out, "%s : ", name);
        ax_help_describe_value(out, v, 0);
        break;
    }
}

/* The name help() shows a value under: its own name where it has one. */
static const char *own_name(const ax_value *v) {
    switch (v->kind) {
    case AX_V_BUILTIN:
        return v->builtin->name;
    case AX_V_FUNC:
        return v->fn->name ? v->fn->name : "<lambda>";
    case AX_V_MODULE:
        return ax_module_name(v->module);
    default:
        return NULL;
    }
}

static ax_value *bi_help(ax_interp *in, ax_value *self, const ax_args *args) {
    static const char *const names[] = {"obj", NULL};
    ax_value *v[1];
    if (!ax_bi_parse(in, args, self->builtin->name, names, 1, v)) return NULL;
    ax_strbuf s;
    ax_strbuf_init(&s);
    if (!v[0]) {
        ax_strbuf_append(&s, "help(name) shows the documentation of a function, builtin or "
                             "module, and the type of any other value; docs/reference.md lists "
                             "every builtin");
    } else if (v[0]->kind == AX_V_OBJECT) {
        ax_value_format(&s, v[0]); /* a namespace (jnp), a key, a jitted function: its str */
    } else {
        char type[64];
        const char *name = own_name(v[0]);
        if (!name) {
            snprintf(type, sizeof type, "%s", ax_value_kind_name(v[0]->kind));
            name = type;
        }
        ax_help_text(in, &s, name, v[0]);
    }
    ax_strbuf_append(&s, "\n");
    bool ok = !s.data || ax_write_checked(in, stdout, s.data, s.len);
    ax_strbuf_free(&s);
    return ok ? ax_none() : NULL;
}

const ax_builtin_def ax_builtins_help[] = {
    {"help", bi_help, "help(obj): prints the documentation of a function, builtin or module", 0},
    {NULL, NULL, NULL, 0},
};

/* Sets: Python's set operations on immutable set values (AX_V_SET, value.h). A set keeps its
 * items sorted by ax_dict_key_order, so lookups are binary searches and two sets compare item
 * by item. Methods that would change a set in Python (add, update, ...) are errors that show
 * the functional form: values never change in ax. */
#include <stdlib.h>
#include <string.h>

#include "eval.h"

typedef struct item_list {
    ax_value **v;
    int n, cap;
} item_list;

static bool list_push(item_list *l, ax_value *v) { /* takes v */
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 8;
        ax_value **items = realloc(l->v, (size_t)cap * sizeof *items);
        if (!items) {
            ax_value_release(v);
            return false;
        }
        l->v = items;
        l->cap = cap;
    }
    l->v[l->n++] = v;
    return true;
}

static void list_free(item_list *l) {
    for (int i = 0; i < l->n; i++) ax_value_release(l->v[i]);
    free(l->v);
    *l = (item_list){0};
}

/* A set of the list's items (which it takes). */
static ax_value *list_to_set(ax_interp *in, item_list *l) {
    ax_value *s = ax_value_set(l->n, l->v);
    free(l->v);
    *l = (item_list){0};
    return s ? s : ax_error_oom(in->cx);
}

int ax_set_index(const ax_value *set, const ax_value *item) {
    int lo = 0, hi = set->n; /* the first item not ordered before `item` */
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (ax_dict_key_order(set->items[mid], item) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < set->n && ax_dict_key_equal(set->items[lo], item) ? lo : -1;
}

ax_value *ax_set_from(ax_interp *in, ax_value *iterable) {
    if (iterable->kind == AX_V_SET) return ax_value_retain(iterable);
    ax_value_iter it;
    if (ax_value_iter_begin(in, iterable, &it) < 0) return NULL;
    item_list l = {0};
    for (;;) {
        if ((it.i & 4095) == 4095 && ax_ctx_check_interrupt(in->cx)) break;
        ax_value *item;
        int r = ax_value_iter_next(in, &it, &item);
        if (r == 0) return list_to_set(in, &l);
        if (r < 0) break;
        if (!ax_dict_key_check(in, item)) {
            ax_value_release(item);
            break;
        }
        if (!list_push(&l, item)) {
            ax_error_oom(in->cx);
            break;
        }
    }
    list_free(&l);
    return NULL;
}

/* The items of a that are (keep_common) or are not in b, appended to l. */
static bool filter_into(item_list *l, const ax_value *a, const ax_value *b, bool keep_common) {
    for (int i = 0; i < a->n; i++)
        if ((ax_set_index(b, a->items[i]) >= 0) == keep_common &&
            !list_push(l, ax_value_retain(a->items[i])))
            return false;
    return true;
}

ax_value *ax_set_binop(ax_interp *in, ax_binop op, ax_value *a, ax_value *b) {
    item_list l = {0};
    bool ok = true;
    switch (op) {
    case AX_OP_BITOR:
        for (int i = 0; ok && i < a->n; i++) ok = list_push(&l, ax_value_retain(a->items[i]));
        for (int i = 0; ok && i < b->n; i++) ok = list_push(&l, ax_value_retain(b->items[i]));
        break;
    case AX_OP_BITAND:
        ok = filter_into(&l, a, b, true);
        break;
    case AX_OP_SUB:
        ok = filter_into(&l, a, b, false);
        break;
    default: /* ^ */
        ok = filter_into(&l, a, b, false) && filter_into(&l, b, a, false);
        break;
    }
    if (!ok) {
        list_free(&l);
        return ax_error_oom(in->cx);
    }
    return list_to_set(in, &l);
}

static bool is_subset(const ax_value *a, const ax_value *b) {
    if (a->n > b->n) return false;
    for (int i = 0; i < a->n; i++)
        if (ax_set_index(b, a->items[i]) < 0) return false;
    return true;
}

ax_value *ax_set_compare(ax_interp *in, ax_cmpop op, ax_value *a, ax_value *b) {
    bool r;
    switch (op) {
    case AX_CMP_LE:
        r = is_subset(a, b);
        break;
    case AX_CMP_LT:
        r = a->n < b->n && is_subset(a, b);
        break;
    case AX_CMP_GE:
        r = is_subset(b, a);
        break;
    default: /* > */
        r = b->n < a->n && is_subset(b, a);
        break;
    }
    return ax_value_bool(in, r);
}

/* ---- methods ---- */

static const struct {
    const char *name;
    int op; /* the operator it is (union: |, ...), or -1 */
    const char *doc;
} set_methods[] = {
    {"union", AX_OP_BITOR, "s.union(*others): the items in s or any of others"},
    {"intersection", AX_OP_BITAND, "s.intersection(*others): the items in s and all others"},
    {"difference", AX_OP_SUB, "s.difference(*others): the items of s in none of others"},
    {"symmetric_difference", AX_OP_BITXOR, "s.symmetric_difference(t): the items in one only"},
    {"issubset", -1, "s.issubset(t): every item of s is in t"},
    {"issuperset", -1, "s.issuperset(t): every item of t is in s"},
    {"isdisjoint", -1, "s.isdisjoint(t): no item in both"},
    {"copy", -1, "s.copy(): s itself (sets never change)"},
};

/* What Python's mutating methods become: the same set, made anew. */
static const struct {
    const char *name, *instead;
} mutators[] = {
    {"add", "s = s | {x}"},
    {"update", "s = s | set(t)"},
    {"remove", "s = s - {x}"},
    {"discard", "s = s - {x}"},
    {"pop", "x = sorted(s)[0]; s = s - {x}"},
    {"clear", "s = set()"},
    {"intersection_update", "s = s & set(t)"},
    {"difference_update", "s = s - set(t)"},
    {"symmetric_difference_update", "s = s ^ set(t)"},
};

static ax_value *set_method(ax_interp *in, ax_value *self, const ax_args *a) {
    const char *m = self->builtin->name;
    ax_value *s = self->builtin->data;
    if (!ax_args_check(in, a, m, a->n, NULL)) return NULL;
    if (strcmp(m, "copy") == 0) {
        if (a->n) return ax_error(in->cx, AX_ERR_TYPE, "set.copy() takes no arguments");
        return ax_value_retain(s);
    }
    int op = -1;
    for (size_t i = 0; i < sizeof set_methods / sizeof *set_methods; i++)
        if (strcmp(m, set_methods[i].name) == 0) op = set_methods[i].op;
    bool variadic = op == AX_OP_BITOR || op == AX_OP_BITAND || op == AX_OP_SUB;
    if (!variadic && a->n != 1)
        return ax_error(in->cx, AX_ERR_TYPE, "set.%s() takes one argument (%d given)", m, a->n);
    ax_value *acc = ax_value_retain(s);
    for (int i = 0; acc && i < a->n; i++) {
        ax_value *other = ax_set_from(in, a->pos[i]), *next = NULL;
        if (other && op >= 0) {
            next = ax_set_binop(in, op, acc, other);
        } else if (other) { /* issubset, issuperset, isdisjoint */
            bool r = true;
            if (strcmp(m, "isdisjoint") == 0)
                for (int k = 0; r && k < acc->n; k++) r = ax_set_index(other, acc->items[k]) < 0;
            else
                r = strcmp(m, "issubset") == 0 ? is_subset(acc, other) : is_subset(other, acc);
            next = ax_value_bool(in, r);
        }
        if (other) ax_value_release(other);
        ax_value_release(acc);
        acc = next;
    }
    return acc;
}

ax_value *ax_set_getattr(ax_interp *in, ax_value *s, const char *name) {
    for (size_t i = 0; i < sizeof set_methods / sizeof *set_methods; i++)
        if (strcmp(name, set_methods[i].name) == 0) {
            ax_value *m =
                ax_value_builtin(name, set_methods[i].doc, set_method, ax_value_retain(s));
            return m ? m : ax_error_oom(in->cx);
        }
    for (size_t i = 0; i < sizeof mutators / sizeof *mutators; i++)
        if (strcmp(name, mutators[i].name) == 0)
            return ax_error(in->cx, AX_ERR_ATTRIBUTE,
                            "sets never change in ax, so there is no set.%s(): make a new one, "
                            "as in %s",
                            name, mutators[i].instead);
    return NULL;
}

void ax_set_each_attr(void (*fn)(void *arg, const char *name), void *arg) {
    for (size_t i = 0; i < sizeof set_methods / sizeof *set_methods; i++)
        fn(arg, set_methods[i].name);
}

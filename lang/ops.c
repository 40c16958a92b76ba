/* The operators of the language on values: arrays go to the NumPy layer (numpy/np.h; their
 * indexing to the array class the library installs, lang/interp.h); containers and strings get Python's meaning (concatenation, repetition, structural
 * equality, membership, indexing and slicing). */
#include <stdlib.h>
#include <string.h>

#include "../compiler/trace.h"
#include "../compiler/trace_ir.h"
#include "../numpy/np.h"
#include "eval.h"

static const char *binop_symbol(ax_binop op) {
    static const char *const symbols[] = {
        [AX_OP_ADD] = "+",       [AX_OP_SUB] = "-",   [AX_OP_MUL] = "*",    [AX_OP_DIV] = "/",
        [AX_OP_FLOORDIV] = "//", [AX_OP_MOD] = "%",   [AX_OP_POW] = "**",   [AX_OP_MATMUL] = "@",
        [AX_OP_BITAND] = "&",    [AX_OP_BITOR] = "|", [AX_OP_BITXOR] = "^", [AX_OP_LSHIFT] = "<<",
        [AX_OP_RSHIFT] = ">>",
    };
    return op >= 0 && op <= AX_OP_RSHIFT ? symbols[op] : "?";
}

static const char *cmpop_symbol(ax_cmpop op) {
    static const char *const symbols[] = {
        [AX_CMP_LT] = "<",          [AX_CMP_LE] = "<=",         [AX_CMP_GT] = ">",
        [AX_CMP_GE] = ">=",         [AX_CMP_EQ] = "==",         [AX_CMP_NE] = "!=",
        [AX_CMP_IN] = "in",         [AX_CMP_NOT_IN] = "not in", [AX_CMP_IS] = "is",
        [AX_CMP_IS_NOT] = "is not",
    };
    return op >= 0 && op <= AX_CMP_IS_NOT ? symbols[op] : "?";
}

static ax_value *wrap_array(ax_interp *in, ax_array *a) {
    if (!a) return NULL;
    ax_value *v = ax_value_array(a);
    return v ? v : ax_error_oom(in->cx);
}

static ax_value *oom(ax_interp *in, ax_value *v) {
    return v ? v : ax_error_oom(in->cx);
}

/* x[index] of an array, as the array library defines it. */
static ax_value *array_getitem(ax_interp *in, ax_value *x, ax_value *index) {
    if (in->arrays) return in->arrays->getitem(in, x, index);
    return ax_error(in->cx, AX_ERR_TYPE, "indexing an array needs the array library");
}

/* ---- sequences ---- */

static ax_value *make_sequence_take(ax_value_kind kind, int n, ax_value **items) {
    return kind == AX_V_TUPLE ? ax_value_tuple(n, items) : ax_value_list(n, items);
}

static ax_value *concat(ax_interp *in, ax_value *a, ax_value *b) {
    int n = a->n + b->n;
    ax_value **items = malloc((size_t)(n ? n : 1) * sizeof *items);
    if (!items) return ax_error_oom(in->cx);
    for (int i = 0; i < a->n; i++) items[i] = ax_value_retain(a->items[i]);
    for (int i = 0; i < b->n; i++) items[a->n + i] = ax_value_retain(b->items[i]);
    ax_value *r = make_sequence_take(a->kind, n, items);
    free(items);
    return oom(in, r);
}

static ax_value *concat_str(ax_interp *in, const char *a, const char *b, int64_t times) {
    size_t la = strlen(a), lb = strlen(b);
    size_t total = la + lb * (size_t)times;
    char *s = malloc(total + 1);
    if (!s) return ax_error_oom(in->cx);
    memcpy(s, a, la);
    for (int64_t i = 0; i < times; i++) memcpy(s + la + (size_t)i * lb, b, lb);
    s[total] = 0;
    ax_value *r = ax_value_str(s);
    free(s);
    return oom(in, r);
}

/* Is v a concrete integer scalar (the count of a repetition)? */
static bool is_int_scalar(const ax_value *v) {
    return v->kind == AX_V_ARRAY && v->arr->ndim == 0 && ax_dtype_is_int(v->arr->dtype);
}

static ax_value *repeat(ax_interp *in, ax_value *seq, ax_value *count) {
    int64_t k;
    if (!ax_value_to_int(in, count, "the repetition count", &k)) return NULL;
    if (k < 0) k = 0;
    if (seq->kind == AX_V_STR) {
        if (k > 0 && strlen(seq->str) * (size_t)k > (1u << 30))
            return ax_error(in->cx, AX_ERR_VALUE, "repeated string is too long");
        return concat_str(in, "", seq->str, k);
    }
    if (seq->n > 0 && k > (int64_t)(1 << 28) / seq->n)
        return ax_error(in->cx, AX_ERR_VALUE, "repeated %s is too long",
                        ax_value_kind_name(seq->kind));
    int n = (int)(seq->n * k);
    ax_value **items = malloc((size_t)(n ? n : 1) * sizeof *items);
    if (!items) return ax_error_oom(in->cx);
    for (int i = 0; i < n; i++) {
        if ((i & 0xFFFFF) == 0 && ax_ctx_check_interrupt(in->cx)) {
            while (i-- > 0) ax_value_release(items[i]);
            free(items);
            return NULL;
        }
        items[i] = ax_value_retain(seq->items[i % seq->n]);
    }
    ax_value *r = make_sequence_take(seq->kind, n, items);
    free(items);
    return oom(in, r);
}

/* d1 | d2: a new dict with d2's entries replacing d1's (Python 3.9). */
static ax_value *dict_merge(ax_interp *in, ax_value *a, ax_value *b) {
    int n = a->n + b->n;
    ax_value **keys = malloc((size_t)(n ? n : 1) * sizeof *keys);
    ax_value **vals = malloc((size_t)(n ? n : 1) * sizeof *vals);
    if (!keys || !vals) {
        free(keys);
        free(vals);
        return ax_error_oom(in->cx);
    }
    for (int i = 0; i < n; i++) {
        const ax_value *d = i < a->n ? a : b;
        int k = i < a->n ? i : i - a->n;
        keys[i] = ax_value_retain(d->keys[k]);
        vals[i] = ax_value_retain(d->items[k]);
    }
    ax_value *r = ax_value_dict_merged(n, keys, vals);
    free(keys);
    free(vals);
    return oom(in, r);
}

static bool is_sequence(const ax_value *v) {
    return v->kind == AX_V_LIST || v->kind == AX_V_TUPLE;
}

ax_value *ax_value_binop(ax_interp *in, ax_binop op, ax_value *a, ax_value *b) {
    if (a->kind == AX_V_ARRAY && b->kind == AX_V_ARRAY) {
        ax_ir_trace *host = ax_ir_trace_host_begin(in->cx, 2, (ax_array *[]){a->arr, b->arr});
        ax_array *r = ax_np_binop(in->cx, op, a->arr, b->arr);
        ax_ir_trace_host_end(host);
        return wrap_array(in, r);
    }
    if (op == AX_OP_ADD && is_sequence(a) && a->kind == b->kind) return concat(in, a, b);
    if (op == AX_OP_ADD && a->kind == AX_V_STR && b->kind == AX_V_STR)
        return concat_str(in, a->str, b->str, 1);
    if (op == AX_OP_MUL && (is_sequence(a) || a->kind == AX_V_STR) && is_int_scalar(b))
        return repeat(in, a, b);
    if (op == AX_OP_MUL && (is_sequence(b) || b->kind == AX_V_STR) && is_int_scalar(a))
        return repeat(in, b, a);
    if (op == AX_OP_BITOR && a->kind == AX_V_DICT && b->kind == AX_V_DICT)
        return dict_merge(in, a, b);
    if (op == AX_OP_MOD && a->kind == AX_V_STR) return ax_string_percent(in, a->str, b);
    if (a->kind == AX_V_SET && b->kind == AX_V_SET &&
        (op == AX_OP_BITOR || op == AX_OP_BITAND || op == AX_OP_SUB || op == AX_OP_BITXOR))
        return ax_set_binop(in, op, a, b);
    char da[128], db[128];
    ax_value_describe(da, sizeof da, a);
    ax_value_describe(db, sizeof db, b);
    const char *hint = "";
    if ((is_sequence(a) && b->kind == AX_V_ARRAY) || (is_sequence(b) && a->kind == AX_V_ARRAY))
        hint = " (make the list an array first: array([...]))";
    return ax_error(in->cx, AX_ERR_TYPE, "unsupported operand types for %s: %s and %s%s",
                    binop_symbol(op), da, db, hint);
}

ax_value *ax_value_unop(ax_interp *in, ax_unop op, ax_value *a) {
    if (a->kind == AX_V_ARRAY) {
        ax_ir_trace *host = ax_ir_trace_host_begin(in->cx, 1, &a->arr);
        ax_array *r = ax_np_unop(in->cx, op, a->arr);
        ax_ir_trace_host_end(host);
        return wrap_array(in, r);
    }
    static const char *const symbols[] = {
        [AX_OP_NEG] = "-", [AX_OP_POS] = "+", [AX_OP_INVERT] = "~"};
    char d[128];
    ax_value_describe(d, sizeof d, a);
    return ax_error(in->cx, AX_ERR_TYPE, "bad operand type for unary %s: %s",
                    op >= 0 && op <= AX_OP_INVERT ? symbols[op] : "?", d);
}

/* ---- equality and membership ---- */

static int arrays_equal(ax_interp *in, ax_array *a, ax_array *b) {
    if (!ax_shape_equal(a->ndim, a->shape, b->ndim, b->shape)) return 0;
    ax_array *ca = ax_concrete_value(in->cx, a), *cb = ax_concrete_value(in->cx, b);
    if (!ca || !cb || !ca->buf || !cb->buf) {
        char d[128];
        ax_array_type_format(d, sizeof d, ca && ca->buf ? b : a);
        ax_error(in->cx, AX_ERR_CONCRETIZATION,
                 "comparing containers needs concrete values, but one holds a traced %s value", d);
        return -1;
    }
    bool floats = ax_dtype_is_float(a->dtype) || ax_dtype_is_float(b->dtype);
    for (int64_t i = 0; i < a->size; i++) {
        bool same = floats ? ax_array_get_f64(ca, i) == ax_array_get_f64(cb, i)
                           : ax_array_get_i64(ca, i) == ax_array_get_i64(cb, i);
        if (!same) return 0;
    }
    return 1;
}

static int equal_at(ax_interp *in, const ax_value *a, const ax_value *b, int depth) {
    if (a == b) return 1;
    bool container = a->kind == AX_V_TUPLE || a->kind == AX_V_LIST || a->kind == AX_V_DICT;
    if (container && depth >= AX_MAX_VALUE_DEPTH) {
        ax_error(in->cx, AX_ERR_RECURSION, "comparing containers nested more than %d levels deep",
                 AX_MAX_VALUE_DEPTH);
        return -1;
    }
    if (a->kind == AX_V_DTYPE && b->kind == AX_V_STR) {
        ax_dtype t;
        return ax_dtype_parse(b->str, &t) && t == a->dtype;
    }
    if (a->kind == AX_V_STR && b->kind == AX_V_DTYPE) return equal_at(in, b, a, depth);
    if (a->kind != b->kind) return 0;
    switch (a->kind) {
    case AX_V_NONE:
    case AX_V_ELLIPSIS:
        return 1;
    case AX_V_STR:
        return strcmp(a->str, b->str) == 0;
    case AX_V_DTYPE:
        return a->dtype == b->dtype;
    case AX_V_MODULE:
        return a->module == b->module;
    case AX_V_ARRAY:
        return arrays_equal(in, a->arr, b->arr);
    case AX_V_BUILTIN:
        return a->builtin->fn == b->builtin->fn && a->builtin->data == b->builtin->data;
    case AX_V_OBJECT: /* by the type's own rule (PyTreeDefs by structure), else identity */
        if (a->obj.type != b->obj.type) return 0;
        if (a->obj.type->equal) return a->obj.type->equal(in, a, b);
        return a->obj.payload == b->obj.payload;
    case AX_V_SET: /* both sorted and without repeats */
        if (a->n != b->n) return 0;
        for (int i = 0; i < a->n; i++)
            if (!ax_dict_key_equal(a->items[i], b->items[i])) return 0;
        return 1;
    case AX_V_TUPLE:
    case AX_V_LIST:
    case AX_V_SLICE:
        if (a->n != b->n) return 0;
        for (int i = 0; i < a->n; i++) {
            int r = equal_at(in, a->items[i], b->items[i], depth + 1);
            if (r != 1) return r;
        }
        return 1;
    case AX_V_DICT:
        if (a->n != b->n) return 0;
        for (int i = 0; i < a->n; i++) {
            ax_value *other = ax_dict_lookup(b, a->keys[i]);
            if (!other) return 0;
            int r = equal_at(in, a->items[i], other, depth + 1);
            if (r != 1) return r;
        }
        return 1;
    case AX_V_RANGE: { /* as sequences: range(0) == range(2, 2), range(3) == range(0, 3, 1) */
        int64_t n = ax_range_len(a);
        return n == ax_range_len(b) && (n == 0 || (a->range.start == b->range.start &&
                                                   (n == 1 || a->range.step == b->range.step)));
    }
    default:
        return 0;
    }
}

int ax_value_equal(ax_interp *in, const ax_value *a, const ax_value *b) {
    return equal_at(in, a, b, 0);
}

/* `x in range(...)`: arithmetic for a number (2.0 in range(3) too), never a scan. */
static int range_contains(ax_interp *in, const ax_value *r, ax_value *item) {
    if (item->kind != AX_V_ARRAY || item->arr->ndim != 0) return 0;
    int64_t x;
    if (ax_dtype_is_float(item->arr->dtype)) {
        double d;
        if (!ax_value_to_double(in, item, "the value tested with `in`", &d)) return -1;
        if (!(d >= -0x1p63 && d < 0x1p63) || d != (double)(int64_t)d) return 0;
        x = (int64_t)d;
    } else if (!ax_value_to_int(in, item, "the value tested with `in`", &x)) {
        return -1;
    }
    int64_t start = r->range.start, step = r->range.step;
    if (ax_range_len(r) == 0 ||
        (step > 0 ? x < start || x >= r->range.stop : x > start || x <= r->range.stop))
        return 0;
    uint64_t offset = step > 0 ? (uint64_t)x - (uint64_t)start : (uint64_t)start - (uint64_t)x;
    uint64_t by = step > 0 ? (uint64_t)step : 0 - (uint64_t)step;
    return offset % by == 0;
}

/* `x in arr`: any(arr == x), on concrete values. */
static int array_contains(ax_interp *in, ax_array *arr, ax_value *item) {
    if (item->kind != AX_V_ARRAY) return 0;
    ax_array *eq = ax_np_compare(in->cx, AX_CMP_EQ, arr, item->arr);
    if (!eq) return -1;
    ax_array *c = ax_concrete_value(in->cx, eq);
    int found = -1;
    if (!c || !c->buf) {
        ax_error(in->cx, AX_ERR_CONCRETIZATION,
                 "`in` on a traced array needs concrete values; use any(x == v) instead");
    } else {
        found = 0;
        for (int64_t i = 0; i < c->size && !found; i++) found = ax_array_get_f64(c, i) != 0;
    }
    ax_array_release(eq);
    return found;
}

static int contains(ax_interp *in, ax_value *container, ax_value *item) {
    switch (container->kind) {
    case AX_V_LIST:
    case AX_V_TUPLE:
        for (int i = 0; i < container->n; i++) {
            if ((i & 4095) == 4095 && ax_ctx_check_interrupt(in->cx)) return -1;
            int r = ax_value_equal(in, item, container->items[i]);
            if (r != 0) return r;
        }
        return 0;
    case AX_V_DICT:
        if (!ax_dict_key_check(in, item)) return -1;
        return ax_dict_index(container, item) >= 0;
    case AX_V_SET:
        if (!ax_dict_key_check(in, item)) return -1;
        return ax_set_index(container, item) >= 0;
    case AX_V_STR:
        if (item->kind != AX_V_STR) {
            char d[128];
            ax_value_describe(d, sizeof d, item);
            ax_error(in->cx, AX_ERR_TYPE, "'in <string>' requires a string on the left, not %s", d);
            return -1;
        }
        return strstr(container->str, item->str) != NULL;
    case AX_V_ARRAY:
        return array_contains(in, container->arr, item);
    case AX_V_RANGE:
        return range_contains(in, container, item);
    default: {
        char d[128];
        ax_value_describe(d, sizeof d, container);
        ax_error(in->cx, AX_ERR_TYPE, "argument of type %s is not a container (for `in`)", d);
        return -1;
    }
    }
}

static int order_strings(ax_cmpop op, const char *a, const char *b) {
    int c = strcmp(a, b);
    switch (op) {
    case AX_CMP_LT:
        return c < 0;
    case AX_CMP_LE:
        return c <= 0;
    case AX_CMP_GT:
        return c > 0;
    default:
        return c >= 0;
    }
}

/* A Python bool or int: a concrete scalar, bool or weakly typed int (what True, 3 and 1 < 2
 * are), whose value, not its place in memory, says which object it is. */
static bool is_python_int(const ax_value *v) {
    const ax_array *x = v->kind == AX_V_ARRAY ? v->arr : NULL;
    return x && x->ndim == 0 && x->buf && !x->tracer &&
           (x->dtype == AX_BOOL || (x->weak && ax_dtype_is_int(x->dtype)));
}

/* `a is b`: the same value. Python's True, False and None are single objects, and so are small
 * ints: `flag is False` tests the value; an array is only itself. */
static bool identical(const ax_value *a, const ax_value *b) {
    if (a == b) return true;
    if (a->kind != b->kind) return false;
    switch (a->kind) {
    case AX_V_NONE:
    case AX_V_ELLIPSIS:
        return true;
    case AX_V_DTYPE:
        return a->dtype == b->dtype;
    case AX_V_MODULE:
        return a->module == b->module;
    case AX_V_ARRAY:
        return is_python_int(a) && is_python_int(b) &&
               (a->arr->dtype == AX_BOOL) == (b->arr->dtype == AX_BOOL) &&
               ax_array_get_i64(a->arr, 0) == ax_array_get_i64(b->arr, 0);
    default:
        return false;
    }
}

/* (1, 2) < (1, 3): Python's order of two tuples (or two lists), the first unequal items
 * deciding, else the lengths. */
static ax_value *order_sequences(ax_interp *in, ax_cmpop op, ax_value *a, ax_value *b) {
    for (int i = 0; i < a->n && i < b->n; i++) {
        int eq = ax_value_equal(in, a->items[i], b->items[i]);
        if (eq < 0) return NULL;
        if (eq) continue;
        if (!ax_call_enter(in)) return NULL; /* nested sequences: the recursion guard */
        ax_value *r = ax_value_compare(in, op, a->items[i], b->items[i]);
        ax_call_leave(in);
        return r;
    }
    int64_t x = a->n, y = b->n;
    bool r = op == AX_CMP_LT ? x < y : op == AX_CMP_LE ? x <= y : op == AX_CMP_GT ? x > y : x >= y;
    return ax_value_bool(in, r);
}

ax_value *ax_value_compare(ax_interp *in, ax_cmpop op, ax_value *a, ax_value *b) {
    int r;
    switch (op) {
    case AX_CMP_IS:
    case AX_CMP_IS_NOT:
        r = identical(a, b);
        return ax_value_bool(in, op == AX_CMP_IS ? r : !r);
    case AX_CMP_IN:
    case AX_CMP_NOT_IN:
        if ((r = contains(in, b, a)) < 0) return NULL;
        return ax_value_bool(in, op == AX_CMP_IN ? r : !r);
    default:
        break;
    }
    if (a->kind == AX_V_ARRAY && b->kind == AX_V_ARRAY) {
        ax_ir_trace *host = ax_ir_trace_host_begin(in->cx, 2, (ax_array *[]){a->arr, b->arr});
        ax_array *r = ax_np_compare(in->cx, op, a->arr, b->arr);
        ax_ir_trace_host_end(host);
        return wrap_array(in, r);
    }
    if (op == AX_CMP_EQ || op == AX_CMP_NE) {
        if ((r = ax_value_equal(in, a, b)) < 0) return NULL;
        return ax_value_bool(in, op == AX_CMP_EQ ? r : !r);
    }
    if (a->kind == AX_V_STR && b->kind == AX_V_STR)
        return ax_value_bool(in, order_strings(op, a->str, b->str));
    if (a->kind == AX_V_SET && b->kind == AX_V_SET) return ax_set_compare(in, op, a, b);
    if (is_sequence(a) && a->kind == b->kind) return order_sequences(in, op, a, b);
    char da[128], db[128];
    ax_value_describe(da, sizeof da, a);
    ax_value_describe(db, sizeof db, b);
    return ax_error(in->cx, AX_ERR_TYPE, "'%s' is not supported between %s and %s",
                    cmpop_symbol(op), da, db);
}

/* ---- indexing ---- */

/* Python's slice.indices(len): the start, stop and step (stop may be NULL), and the number
 * of selected items. */
static bool slice_indices(ax_interp *in, const ax_value *s, int64_t len, int64_t *start,
                          int64_t *stop, int64_t *step, int64_t *count) {
    int64_t v[3] = {0, 0, 1};
    bool given[3];
    for (int i = 0; i < 3; i++) {
        given[i] = s->items[i]->kind != AX_V_NONE;
        if (given[i] && !ax_value_to_int(in, s->items[i], "a slice bound", &v[i])) return false;
    }
    if (v[2] == 0) {
        ax_error(in->cx, AX_ERR_VALUE, "slice step cannot be zero");
        return false;
    }
    if (v[2] < -INT64_MAX) v[2] = -INT64_MAX; /* as CPython clamps it: -step must not overflow */
    int64_t lower = v[2] > 0 ? 0 : -1, upper = v[2] > 0 ? len : len - 1;
    for (int i = 0; i < 2; i++) {
        if (!given[i]) {
            v[i] = (i == 0) == (v[2] > 0) ? lower : upper;
            continue;
        }
        if (v[i] < 0) v[i] += len;
        if (v[i] < lower) v[i] = lower;
        if (v[i] > upper) v[i] = upper;
    }
    *start = v[0];
    if (stop) *stop = v[1];
    *step = v[2];
    if (v[2] > 0)
        *count = v[1] > v[0] ? (v[1] - v[0] - 1) / v[2] + 1 : 0;
    else
        *count = v[0] > v[1] ? (v[0] - v[1] - 1) / (-v[2]) + 1 : 0;
    return true;
}

static ax_value *slice_sequence(ax_interp *in, ax_value *seq, const ax_value *s) {
    int64_t len = seq->kind == AX_V_STR ? (int64_t)strlen(seq->str) : seq->n;
    int64_t start, step, count;
    if (!slice_indices(in, s, len, &start, NULL, &step, &count)) return NULL;
    if (seq->kind == AX_V_STR) {
        char *out = malloc((size_t)count + 1);
        if (!out) return ax_error_oom(in->cx);
        for (int64_t i = 0; i < count; i++) out[i] = seq->str[start + i * step];
        out[count] = 0;
        ax_value *r = ax_value_str(out);
        free(out);
        return oom(in, r);
    }
    ax_value **items = malloc((size_t)(count ? count : 1) * sizeof *items);
    if (!items) return ax_error_oom(in->cx);
    for (int64_t i = 0; i < count; i++) items[i] = ax_value_retain(seq->items[start + i * step]);
    ax_value *r = make_sequence_take(seq->kind, (int)count, items);
    free(items);
    return oom(in, r);
}

static ax_value *index_sequence(ax_interp *in, ax_value *seq, ax_value *index) {
    const char *kind = ax_value_kind_name(seq->kind);
    if (index->kind == AX_V_SLICE) return slice_sequence(in, seq, index);
    if (index->kind != AX_V_ARRAY) {
        char d[128];
        ax_value_describe(d, sizeof d, index);
        return ax_error(in->cx, AX_ERR_TYPE, "%s indices must be integers or slices, not %s", kind,
                        d);
    }
    int64_t i;
    char what[64];
    snprintf(what, sizeof what, "a %s index", kind);
    if (!ax_value_to_int(in, index, what, &i)) return NULL;
    int64_t len = seq->kind == AX_V_STR ? (int64_t)strlen(seq->str) : seq->n;
    int64_t k = i < 0 ? i + len : i;
    if (k < 0 || k >= len)
        return ax_error(in->cx, AX_ERR_INDEX,
                        "%s index %lld is out of range for a %s of length %lld", kind, (long long)i,
                        kind, (long long)len);
    if (seq->kind == AX_V_STR) {
        char c[2] = {seq->str[k], 0};
        return oom(in, ax_value_str(c));
    }
    return ax_value_retain(seq->items[k]);
}

/* range(...)[i] is an int, range(...)[a:b:c] a range, as in Python. */
static ax_value *index_range(ax_interp *in, ax_value *r, ax_value *index) {
    int64_t len = ax_range_len(r);
    if (index->kind == AX_V_SLICE) {
        int64_t start, stop, step, count;
        if (!slice_indices(in, index, len, &start, &stop, &step, &count)) return NULL;
        /* Python's bounds: start + i * step for the slice's start and stop indices */
        __int128 base = r->range.start, by = r->range.step;
        __int128 lo = base + start * by, hi = base + stop * by, new_step = by * step;
        if (hi < INT64_MIN || hi > INT64_MAX) hi = new_step > 0 ? INT64_MAX : INT64_MIN;
        ax_value *sliced = NULL;
        if (lo >= INT64_MIN && lo <= INT64_MAX && new_step >= INT64_MIN && new_step <= INT64_MAX)
            sliced = ax_value_range(in, (int64_t)lo, (int64_t)hi, (int64_t)new_step);
        if (sliced && ax_range_len(sliced) == count) return sliced;
        ax_value_release(sliced); /* a bound Python would write as a bigger int */
        return ax_error(in->cx, AX_ERR_VALUE, "the slice of the range leaves the int64 range");
    }
    if (index->kind != AX_V_ARRAY) {
        char d[128];
        ax_value_describe(d, sizeof d, index);
        return ax_error(in->cx, AX_ERR_TYPE, "range indices must be integers or slices, not %s", d);
    }
    int64_t i;
    if (!ax_value_to_int(in, index, "a range index", &i)) return NULL;
    int64_t k = i < 0 ? i + len : i;
    if (k < 0 || k >= len)
        return ax_error(in->cx, AX_ERR_INDEX,
                        "range index %lld is out of range for a range of length %lld", (long long)i,
                        (long long)len);
    return ax_value_int(in, ax_range_item(r, k));
}

static ax_value *key_error(ax_interp *in, ax_value *dict, const ax_value *key) {
    ax_near_miss nm = {.target = key->kind == AX_V_STR ? key->str : ""};
    ax_strbuf keys, shown;
    ax_strbuf_init(&keys);
    ax_strbuf_init(&shown);
    ax_value_format_nested(&shown, key);
    for (int i = 0; i < dict->n; i++) {
        if (key->kind == AX_V_STR && dict->keys[i]->kind == AX_V_STR)
            ax_near_miss_offer(&nm, dict->keys[i]->str);
        if (i < 8) {
            if (i) ax_strbuf_append(&keys, ", ");
            ax_value_format_nested(&keys, dict->keys[i]);
        }
    }
    if (dict->n > 8) ax_strbuf_append(&keys, ", ...");
    const char *k = shown.data ? shown.data : "?";
    if (nm.best)
        ax_error(in->cx, AX_ERR_KEY, "%s is not a key of the dict; did you mean '%s'?", k, nm.best);
    else
        ax_error(in->cx, AX_ERR_KEY, "%s is not a key of the dict (its keys: %s)", k,
                 keys.data ? keys.data : "none");
    ax_strbuf_free(&keys);
    ax_strbuf_free(&shown);
    return NULL;
}

ax_value *ax_value_getitem(ax_interp *in, ax_value *obj, ax_value *index) {
    char d[128];
    switch (obj->kind) {
    case AX_V_ARRAY:
        return array_getitem(in, obj, index);
    case AX_V_TUPLE:
    case AX_V_LIST:
    case AX_V_STR:
        return index_sequence(in, obj, index);
    case AX_V_RANGE:
        return index_range(in, obj, index);
    case AX_V_DICT: {
        if (!ax_dict_key_check(in, index)) return NULL;
        ax_value *v = ax_dict_lookup(obj, index);
        return v ? ax_value_retain(v) : key_error(in, obj, index);
    }
    case AX_V_OBJECT:
        if (obj->obj.type->getitem) {
            ax_value *r = obj->obj.type->getitem(in, obj, index);
            if (!r && !ax_error_pending(in->cx))
                ax_error(in->cx, AX_ERR_INDEX, "%s index is out of range", obj->obj.type->name);
            return r;
        }
        break;
    default:
        break;
    }
    ax_value_describe(d, sizeof d, obj);
    return ax_error(in->cx, AX_ERR_TYPE, "%s cannot be indexed", d);
}

/* ---- methods of lists, tuples and slices ---- */

/* What Python's mutating list methods become: a new list. */
static const struct {
    const char *name, *instead;
} list_mutators[] = {
    {"append", "a = a + [x]"},
    {"extend", "a = a + list(b)"},
    {"insert", "a = a[:i] + [x] + a[i:]"},
    {"pop", "x, a = a[-1], a[:-1]"},
    {"remove", "a = [v for v in a if v != x]"},
    {"sort", "a = sorted(a)"},
    {"reverse", "a = a[::-1]"},
    {"clear", "a = []"},
};

/* seq.index(x, start=0, stop=len) and seq.count(x), by ==, as Python's. */
static ax_value *sequence_method(ax_interp *in, ax_value *self, const ax_args *a) {
    ax_value *seq = self->builtin->data;
    const char *m = self->builtin->name;
    bool index = strcmp(m, "index") == 0;
    if (!ax_args_check(in, a, m, index ? 3 : 1, NULL)) return NULL;
    if (a->n < 1) return ax_error(in->cx, AX_ERR_TYPE, "%s() takes the value to look for", m);
    int64_t lo = 0, hi = seq->n;
    if (index && a->n > 1 && !ax_value_to_int(in, a->pos[1], "index()'s start", &lo)) return NULL;
    if (index && a->n > 2 && !ax_value_to_int(in, a->pos[2], "index()'s stop", &hi)) return NULL;
    if (lo < 0) lo = lo + seq->n < 0 ? 0 : lo + seq->n;
    if (hi < 0) hi += seq->n;
    if (hi > seq->n) hi = seq->n;
    int64_t count = 0;
    for (int64_t i = lo; i < hi; i++) {
        int r = ax_value_equal(in, seq->items[i], a->pos[0]);
        if (r < 0) return NULL;
        if (r && index) return ax_value_int(in, i);
        count += r;
    }
    if (!index) return ax_value_int(in, count);
    ax_strbuf v;
    ax_strbuf_init(&v);
    ax_value_format_nested(&v, a->pos[0]);
    ax_error(in->cx, AX_ERR_VALUE, "%s is not in the %s", v.data ? v.data : "the value",
             ax_value_kind_name(seq->kind));
    ax_strbuf_free(&v);
    return NULL;
}

/* slice.indices(length): (start, stop, step) for a sequence of that length. */
static ax_value *slice_method(ax_interp *in, ax_value *self, const ax_args *a) {
    int64_t len, start, stop, step, count;
    if (!ax_args_check(in, a, "indices", 1, NULL)) return NULL;
    if (a->n != 1) return ax_error(in->cx, AX_ERR_TYPE, "slice.indices() takes the length");
    if (!ax_value_to_int(in, a->pos[0], "the length", &len)) return NULL;
    if (len < 0) return ax_error(in->cx, AX_ERR_VALUE, "length should not be negative");
    if (!slice_indices(in, self->builtin->data, len, &start, &stop, &step, &count)) return NULL;
    ax_value *items[3] = {ax_value_int(in, start), ax_value_int(in, stop), ax_value_int(in, step)};
    if (!items[0] || !items[1] || !items[2]) {
        for (int i = 0; i < 3; i++)
            if (items[i]) ax_value_release(items[i]);
        return NULL;
    }
    return oom(in, ax_value_tuple(3, items));
}

static const char *const slice_fields[] = {"start", "stop", "step"}; /* items[0..2] */

void ax_sequence_each_attr(const ax_value *obj, void (*fn)(void *arg, const char *name),
                           void *arg) {
    if (obj->kind == AX_V_SLICE) {
        for (int i = 0; i < 3; i++) fn(arg, slice_fields[i]);
        fn(arg, "indices");
        return;
    }
    fn(arg, "count");
    fn(arg, "index");
}

ax_value *ax_sequence_getattr(ax_interp *in, ax_value *obj, const char *name) {
    if (obj->kind == AX_V_SLICE) {
        for (int i = 0; i < 3; i++)
            if (strcmp(name, slice_fields[i]) == 0) return ax_value_retain(obj->items[i]);
        if (strcmp(name, "indices") == 0)
            return oom(in, ax_value_builtin(name, "s.indices(length): (start, stop, step)",
                                            slice_method, ax_value_retain(obj)));
        return NULL;
    }
    if (strcmp(name, "index") == 0 || strcmp(name, "count") == 0)
        return oom(in, ax_value_builtin(name,
                                        name[0] == 'i' ? "s.index(x, start=0, stop=len): where "
                                                         "x first is"
                                                       : "s.count(x): how many items equal x",
                                        sequence_method, ax_value_retain(obj)));
    for (size_t i = 0; obj->kind == AX_V_LIST && i < sizeof list_mutators / sizeof *list_mutators;
         i++)
        if (strcmp(name, list_mutators[i].name) == 0)
            return ax_error(in->cx, AX_ERR_ATTRIBUTE,
                            "lists never change in ax, so there is no list.%s(): make a new one, "
                            "as in %s",
                            name, list_mutators[i].instead);
    return NULL;
}

/* ---- iteration ---- */

int ax_value_iter_begin(ax_interp *in, ax_value *seq, ax_value_iter *it) {
    *it = (ax_value_iter){.seq = seq, .i = 0, .n = -1};
    char d[128];
    switch (seq->kind) {
    case AX_V_LIST:
    case AX_V_TUPLE:
    case AX_V_DICT:
    case AX_V_SET:
        it->n = seq->n;
        return 0;
    case AX_V_STR:
        it->n = (int64_t)strlen(seq->str);
        return 0;
    case AX_V_RANGE:
        it->n = ax_range_len(seq);
        return 0;
    case AX_V_ARRAY:
        if (seq->arr->ndim == 0) {
            ax_error(in->cx, AX_ERR_TYPE, "iteration over a 0-d array"); /* NumPy's and JAX's */
            return -1;
        }
        it->n = seq->arr->shape[0];
        return 0;
    case AX_V_OBJECT:
        if (seq->obj.type->length) {
            it->n = seq->obj.type->length(in, seq, true);
            return it->n < 0 ? -1 : 0;
        }
        if (seq->obj.type->getitem) return 0;
        break;
    default:
        break;
    }
    ax_value_describe(d, sizeof d, seq);
    ax_error(in->cx, AX_ERR_TYPE, "cannot iterate over %s", d);
    return -1;
}

int ax_value_iter_next(ax_interp *in, ax_value_iter *it, ax_value **item) {
    ax_value *seq = it->seq;
    *item = NULL;
    if (it->n >= 0 && it->i >= it->n) return 0;
    int64_t i = it->i++;
    switch (seq->kind) {
    case AX_V_LIST:
    case AX_V_TUPLE:
    case AX_V_SET:
        *item = ax_value_retain(seq->items[i]);
        return 1;
    case AX_V_DICT:
        *item = ax_value_retain(seq->keys[i]);
        return 1;
    case AX_V_STR: { /* a character: its UTF-8 bytes (it->i counts bytes) */
        char c[5] = {seq->str[i], 0};
        for (int k = 1; k < 4 && ((unsigned char)seq->str[it->i] & 0xC0) == 0x80; k++)
            c[k] = seq->str[it->i++];
        *item = oom(in, ax_value_str(c));
        return *item ? 1 : -1;
    }
    case AX_V_RANGE:
        *item = ax_value_int(in, ax_range_item(seq, i));
        return *item ? 1 : -1;
    default:
        break;
    }
    ax_value *index = ax_value_int(in, i);
    if (!index) return -1;
    if (seq->kind == AX_V_ARRAY) {
        *item = array_getitem(in, seq, index);
    } else {
        *item = seq->obj.type->getitem(in, seq, index);
        /* Objects end their iteration with an IndexError, as Python's old protocol. */
        if (!*item && (!ax_error_pending(in->cx) || in->cx->err.kind == AX_ERR_INDEX)) {
            ax_error_clear(in->cx);
            ax_value_release(index);
            it->n = it->i = i;
            return 0;
        }
    }
    ax_value_release(index);
    return *item ? 1 : -1;
}

/* ---- near misses ---- */

static int levenshtein(const char *a, const char *b, int limit) {
    int la = (int)strlen(a), lb = (int)strlen(b);
    if (la > 64 || lb > 64 || abs(la - lb) > limit) return limit + 1;
    int row[65];
    for (int j = 0; j <= lb; j++) row[j] = j;
    for (int i = 1; i <= la; i++) {
        int prev = row[0];
        row[0] = i;
        for (int j = 1; j <= lb; j++) {
            int cur = row[j];
            int best = prev + (a[i - 1] != b[j - 1]);
            if (row[j] + 1 < best) best = row[j] + 1;
            if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
            row[j] = best;
            prev = cur;
        }
    }
    return row[lb];
}

void ax_near_miss_offer(ax_near_miss *nm, const char *candidate) {
    if (!candidate || strcmp(candidate, nm->target) == 0) return;
    int len = (int)strlen(nm->target);
    /* about one edit per four characters, as Python's difflib cutoff of 0.6 behaves */
    int limit = len <= 2 ? 0 : len <= 4 ? 1 : len <= 8 ? 2 : 3;
    int d = levenshtein(nm->target, candidate, limit);
    if (d > limit) return;
    /* Ties keep the first offer: callers offer the nearest scope first. */
    if (!nm->best || d < nm->best_dist) {
        nm->best = candidate;
        nm->best_dist = d;
    }
}

/* The stack of active transformations (see trace.h). */
#include "trace.h"

#include <stdlib.h>

int ax_trace_push(ax_ctx *cx, ax_trace *trace) {
    struct ax_trace_state *st = cx->traces;
    if (!st) {
        st = calloc(1, sizeof *st);
        if (!st) return ax_error_oom(cx), -1;
        cx->traces = st;
    }
    if (st->depth == st->cap) {
        int cap = st->cap ? 2 * st->cap : 8;
        ax_trace **stack = realloc(st->stack, (size_t)cap * sizeof *stack);
        if (!stack) {
            if (st->depth == 0) ax_trace_pop(cx, NULL);
            return ax_error_oom(cx), -1;
        }
        st->stack = stack;
        st->cap = cap;
    }
    trace->level = st->depth;
    trace->id = ++cx->trace_ids;
    st->stack[st->depth++] = trace;
    return 0;
}

void ax_trace_pop(ax_ctx *cx, ax_trace *trace) {
    struct ax_trace_state *st = cx->traces;
    if (!st) return;
    if (trace && st->depth > 0 && st->stack[st->depth - 1] == trace) st->depth--;
    if (st->depth == 0) {
        free(st->stack);
        free(st);
        cx->traces = NULL;
    }
}

int ax_trace_depth(const ax_ctx *cx) {
    return cx->traces ? cx->traces->depth : 0;
}

ax_trace *ax_trace_top(const ax_ctx *cx) {
    int depth = ax_trace_depth(cx);
    return depth ? cx->traces->stack[depth - 1] : NULL;
}

/* The position of `trace` in the stack, or -1 when it is not active. Compares pointers only:
 * the trace of an escaped tracer may already be freed, so it must not be read. */
static int active_level(const ax_ctx *cx, const struct ax_tracer *t) {
    for (int i = ax_trace_depth(cx) - 1; i >= 0; i--)
        if (cx->traces->stack[i] == t->trace && cx->traces->stack[i]->id == t->trace_id) return i;
    return -1;
}

int ax_trace_find(ax_ctx *cx, int nin, ax_array *const *in, ax_trace **out) {
    int best = -1;
    *out = NULL;
    for (int i = 0; i < nin; i++) {
        if (!in[i] || !in[i]->tracer) continue;
        int level = active_level(cx, in[i]->tracer);
        if (level < 0) {
            ax_error(cx, AX_ERR_RUNTIME,
                     "a value traced by a transformation (grad, vmap, jit) escaped it and was "
                     "used outside it; return it from the transformed function instead");
            return -1;
        }
        if (level > best) best = level;
    }
    if (best >= 0) *out = cx->traces->stack[best];
    return 0;
}

ax_array *ax_tracer_new(ax_ctx *cx, ax_trace *t, const ax_aval *type, void *data,
                        void (*free_data)(void *data)) {
    ax_array *a = ax_array_new_abstract(cx, type->dtype, type->ndim, type->shape);
    struct ax_tracer *tr = a ? malloc(sizeof *tr) : NULL;
    if (!tr) {
        ax_array_release(a);
        if (free_data) free_data(data);
        return ax_error_oom(cx);
    }
    *tr = (struct ax_tracer){.trace = t, .trace_id = t->id, .data = data, .free_data = free_data};
    a->tracer = tr;
    a->weak = type->weak;
    return a;
}

void *ax_tracer_data(const ax_array *a, const ax_trace *t) {
    if (!a || !a->tracer || a->tracer->trace != t || a->tracer->trace_id != t->id) return NULL;
    return a->tracer->data;
}

ax_array *ax_concrete_value(ax_ctx *cx, ax_array *a) {
    while (a && a->tracer) {
        /* An escaped tracer's trace may be gone: only active traces are asked. */
        int level = active_level(cx, a->tracer);
        if (level < 0) return NULL;
        ax_trace *t = cx->traces->stack[level];
        if (!t->concrete_value) return NULL;
        a = t->concrete_value(t, a);
    }
    return a;
}

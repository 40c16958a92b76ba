/* jax.config (see config.h). Each option reads and writes the interpreter's own state:
 * jax_enable_x64 is --x64 (the default float and int: arrays made before the change keep
 * their dtypes, as in JAX, which wants it set at start-up); jax_threefry_partitionable off
 * gives JAX's PRNG before 0.5 (what older recorded outputs show); jax_num_cpu_devices is
 * --devices (before the devices start); options about devices and compilation that ax has
 * no use for are accepted and read back. */
#include "config.h"

#include "../runtime/device.h"
#include "builtins_lib.h"

#include <stdlib.h>
#include <string.h>

typedef enum { OPT_X64, OPT_PARTITIONABLE, OPT_NUM_CPU_DEVICES, OPT_STORED } option_kind;

static const struct {
    const char *name;
    option_kind kind;
} options[] = {
    {"jax_enable_x64", OPT_X64},
    {"jax_threefry_partitionable", OPT_PARTITIONABLE},
    {"jax_num_cpu_devices", OPT_NUM_CPU_DEVICES},
    /* accepted, with no effect: ax's devices are the CPU's cores, arrays always checked by
     * ax's own errors */
    {"jax_platforms", OPT_STORED},
    {"jax_platform_name", OPT_STORED},
    {"jax_default_matmul_precision", OPT_STORED},
    {"jax_debug_nans", OPT_STORED},
    {"jax_debug_infs", OPT_STORED},
    {"jax_numpy_rank_promotion", OPT_STORED},
    {"jax_log_compiles", OPT_STORED},
};

/* The stored options' values: a dict held by the config object (replaced on update). */
typedef struct config {
    ax_value *stored;
} config;

static void config_free(void *p) {
    config *c = p;
    ax_value_release(c->stored);
    free(c);
}

static void config_format(ax_strbuf *out, void *p) {
    (void)p;
    ax_strbuf_append(out, "<jax.config>");
}

static int option_of(const char *name) {
    for (size_t i = 0; i < sizeof options / sizeof *options; i++)
        if (!strcmp(options[i].name, name)) return (int)i;
    return -1;
}

static ax_value *read_option(ax_interp *in, config *c, int i) {
    switch (options[i].kind) {
    case OPT_X64:
        return ax_value_bool(in, in->cx->x64);
    case OPT_PARTITIONABLE:
        return ax_value_bool(in, !in->threefry_unpartitioned);
    case OPT_NUM_CPU_DEVICES: /* JAX's default, -1, until set (here or by --devices) */
        return ax_value_int(in, in->cx->ndevices > 0 ? in->cx->ndevices : -1);
    default: {
        ax_value *v = ax_dict_get(c->stored, options[i].name);
        return v ? ax_value_retain(v) : ax_none();
    }
    }
}

/* config.update(name, value) */
static ax_value *config_update(ax_interp *in, ax_value *self, const ax_args *a) {
    config *c = self->builtin->data->obj.payload;
    if (a->n != 2 || a->nkw || a->pos[0]->kind != AX_V_STR)
        return ax_error(in->cx, AX_ERR_TYPE, "jax.config.update(name, value) takes two arguments");
    const char *name = a->pos[0]->str;
    int i = option_of(name);
    if (i < 0) return ax_error(in->cx, AX_ERR_ATTRIBUTE, "Unrecognized config option: %s", name);
    if (options[i].kind == OPT_NUM_CPU_DEVICES) {
        int64_t n;
        if (!ax_bi_int(in, a->pos[1], "jax_num_cpu_devices", 0, &n) ||
            ax_set_local_device_count(in->cx, n) < 0)
            return NULL;
        return ax_none();
    }
    bool on;
    if (options[i].kind != OPT_STORED && !ax_value_truthy(in, a->pos[1], &on)) return NULL;
    if (options[i].kind == OPT_X64) {
        in->cx->x64 = on;
    } else if (options[i].kind == OPT_PARTITIONABLE) {
        in->threefry_unpartitioned = !on;
    } else {
        const ax_value *d = c->stored;
        ax_value **keys = calloc((size_t)d->n + 2, sizeof *keys);
        ax_value **vals = calloc((size_t)d->n + 2, sizeof *vals);
        if (!keys || !vals) {
            free(keys), free(vals);
            return ax_error_oom(in->cx);
        }
        int n = 0;
        for (int k = 0; k < d->n; k++)
            if (strcmp(d->keys[k]->str, name)) {
                keys[n] = ax_value_retain(d->keys[k]);
                vals[n++] = ax_value_retain(d->items[k]);
            }
        keys[n] = ax_value_str(name);
        vals[n++] = ax_value_retain(a->pos[1]);
        ax_value *next = ax_value_dict(n, keys, vals);
        free(keys), free(vals);
        if (!next) return ax_error_oom(in->cx);
        ax_value_release(c->stored);
        c->stored = next;
    }
    return ax_none();
}

static ax_value *config_getattr(ax_interp *in, ax_value *self, const char *name) {
    config *c = self->obj.payload;
    if (!strcmp(name, "update")) {
        ax_value *m = ax_value_builtin("update", "jax.config.update(name, value)", config_update,
                                       ax_value_retain(self));
        return m ? m : ax_error_oom(in->cx);
    }
    int i = option_of(name);
    if (i < 0) return ax_error(in->cx, AX_ERR_ATTRIBUTE, "Unrecognized config option: %s", name);
    return read_option(in, c, i);
}

static const ax_object_type config_type = {
    .name = "config", .free = config_free, .format = config_format, .getattr = config_getattr};

int ax_config_register(ax_interp *in) {
    config *c = calloc(1, sizeof *c);
    if (!c || !(c->stored = ax_value_dict(0, NULL, NULL))) {
        free(c);
        return -1;
    }
    ax_value *v = ax_value_object(&config_type, c);
    if (!v) return -1;
    ax_interp_define_builtin_take(in, "_jax_config", v);
    return 0;
}

/* Pictures: the notebook's display, or temporary files (see display.h). */
#include "display.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "external.h"

#define DISPLAY_NAME "__display__"

static void picture_free(ax_picture *p) {
    free(p->format);
    free(p->data);
    free(p->alt);
}

void ax_display_clear(ax_display *d) {
    for (int i = 0; i < d->n; i++) picture_free(&d->items[i]);
    d->n = 0;
}

static void display_free(void *payload) {
    ax_display *d = payload;
    ax_display_clear(d);
    free(d->items);
    free(d);
}

static void display_format(ax_strbuf *out, void *payload) {
    ax_strbuf_appendf(out, "<display: %d pictures>", ((ax_display *)payload)->n);
}

static const ax_object_type display_type = {
    .name = "display", .free = display_free, .format = display_format};

ax_display *ax_display_install(ax_interp *in) {
    ax_display *d = calloc(1, sizeof *d);
    if (!d) return ax_error_oom(in->cx);
    ax_value *v = ax_value_object(&display_type, d);
    if (!v) return ax_error_oom(in->cx);
    ax_interp_define_builtin_take(in, DISPLAY_NAME, v);
    return ax_display_of(in);
}

ax_display *ax_display_of(ax_interp *in) {
    ax_value *v = ax_module_lookup(in->builtins, DISPLAY_NAME);
    return v && v->kind == AX_V_OBJECT && v->obj.type == &display_type ? v->obj.payload : NULL;
}

/* How much the notebook has captured so far: where the picture goes among the text. */
static long output_position(void) {
    fflush(stdout);
    fflush(stderr);
    off_t at = lseek(STDOUT_FILENO, 0, SEEK_CUR);
    return at < 0 ? -1 : (long)at;
}

static int display_add(ax_interp *in, ax_display *d, const char *format, char *data, size_t len,
                       const char *alt) {
    if (d->n == d->cap) {
        int cap = d->cap ? 2 * d->cap : 8;
        ax_picture *items = realloc(d->items, (size_t)cap * sizeof *items);
        if (!items) {
            free(data);
            return ax_error_oom(in->cx), -1;
        }
        d->items = items;
        d->cap = cap;
    }
    ax_picture p = {strdup(format), data, len, strdup(alt ? alt : "picture"), output_position()};
    if (!p.format || !p.alt) {
        picture_free(&p);
        return ax_error_oom(in->cx), -1;
    }
    d->items[d->n++] = p;
    return 0;
}

/* Writes the picture to a new temporary file and prints the file's path. */
static int write_temporary(ax_interp *in, const char *kind, const char *format, const char *data,
                           size_t len) {
    const char *base = getenv("TMPDIR");
    if (!base || !*base) base = "/tmp";
    char path[4096];
    int suffix = snprintf(path, sizeof path, "%s/ax-%s-XXXXXX.%s", base, kind, format);
    if (suffix < 0 || (size_t)suffix >= sizeof path) {
        ax_error(in->cx, AX_ERR_IO, "TMPDIR is too long");
        return -1;
    }
    int fd = mkstemps(path, (int)strlen(format) + 1);
    if (fd < 0) {
        ax_error(in->cx, AX_ERR_IO, "cannot make a file in %s: %s", base, strerror(errno));
        return -1;
    }
    close(fd);
    if (ax_ext_write_file(in->cx, path, data, len) < 0) return -1;
    printf("%s\n", path);
    fflush(stdout);
    return 0;
}

int ax_display_show_take(ax_interp *in, const char *kind, const char *format, char *data,
                         size_t len, const char *alt) {
    ax_display *d = ax_display_of(in);
    if (d) return display_add(in, d, format, data, len, alt);
    int rc = write_temporary(in, kind, format, data, len);
    free(data);
    return rc;
}

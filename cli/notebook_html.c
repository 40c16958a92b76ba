/* The notebook's HTML page: the Markdown rendered by libcmark (loaded with dlopen, so that ax
 * runs without it), with an HTML block of outputs inserted after each ax code block and the
 * recorded ```output blocks left out (the page shows this run's outputs). Pictures are inline
 * data: URIs, so the page is one self-contained file. */
#include "notebook.h"

#include <cmark.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../runtime/format.h"

/* The libcmark functions the page needs. */
typedef struct cmark_api {
    void *handle;
    cmark_node *(*parse_document)(const char *, size_t, int);
    char *(*render_html)(cmark_node *, int);
    void (*node_free)(cmark_node *);
    cmark_iter *(*iter_new)(cmark_node *);
    cmark_event_type (*iter_next)(cmark_iter *);
    cmark_node *(*iter_get_node)(cmark_iter *);
    void (*iter_free)(cmark_iter *);
    cmark_node_type (*node_get_type)(cmark_node *);
    const char *(*node_get_fence_info)(cmark_node *);
    int (*node_get_start_line)(cmark_node *);
    cmark_node *(*node_new)(cmark_node_type);
    int (*node_set_literal)(cmark_node *, const char *);
    int (*node_insert_after)(cmark_node *, cmark_node *);
    void (*node_unlink)(cmark_node *);
} cmark_api;

#define CMARK_PACKAGE "libcmark0.30.2"

static bool load_symbol(void *handle, const char *name, void *fn_ptr) {
    void *p = dlsym(handle, name);
    if (p) memcpy(fn_ptr, &p, sizeof p);
    return p != NULL;
}

/* $AX_LIBCMARK names another build of the library (same ABI) to load instead. */
static bool cmark_open(cmark_api *api) {
    const char *own = getenv("AX_LIBCMARK");
    const char *const sonames[] = {"libcmark.so.0.30.2", "libcmark.so"};
    if (own && *own) api->handle = dlopen(own, RTLD_NOW | RTLD_LOCAL);
    for (size_t i = 0; i < 2 && !api->handle && !(own && *own); i++)
        api->handle = dlopen(sonames[i], RTLD_NOW | RTLD_LOCAL);
    if (!api->handle) {
        fprintf(stderr,
                "ax notebook: the HTML page needs libcmark, which is not installed: install the "
                "Debian package %s (or libcmark-dev) (%s)\n",
                CMARK_PACKAGE, dlerror());
        return false;
    }
    struct {
        const char *name;
        void *slot;
    } syms[] = {
        {"cmark_parse_document", &api->parse_document},
        {"cmark_render_html", &api->render_html},
        {"cmark_node_free", &api->node_free},
        {"cmark_iter_new", &api->iter_new},
        {"cmark_iter_next", &api->iter_next},
        {"cmark_iter_get_node", &api->iter_get_node},
        {"cmark_iter_free", &api->iter_free},
        {"cmark_node_get_type", &api->node_get_type},
        {"cmark_node_get_fence_info", &api->node_get_fence_info},
        {"cmark_node_get_start_line", &api->node_get_start_line},
        {"cmark_node_new", &api->node_new},
        {"cmark_node_set_literal", &api->node_set_literal},
        {"cmark_node_insert_after", &api->node_insert_after},
        {"cmark_node_unlink", &api->node_unlink},
    };
    for (size_t i = 0; i < sizeof syms / sizeof *syms; i++)
        if (!load_symbol(api->handle, syms[i].name, syms[i].slot)) {
            fprintf(stderr, "ax notebook: libcmark lacks %s\n", syms[i].name);
            dlclose(api->handle);
            return false;
        }
    return true;
}

/* ---------------------------------------------------------------- HTML text */

static void escaped(ax_strbuf *s, const char *text, size_t n) {
    size_t start = 0;
    for (size_t i = 0; i < n; i++) {
        const char *rep = text[i] == '<'   ? "&lt;"
                          : text[i] == '>' ? "&gt;"
                          : text[i] == '&' ? "&amp;"
                          : text[i] == '"' ? "&quot;"
                                           : NULL;
        if (!rep) continue;
        ax_strbuf_appendf(s, "%.*s%s", (int)(i - start), text + start, rep);
        start = i + 1;
    }
    ax_strbuf_appendf(s, "%.*s", (int)(n - start), text + start);
}

static void base64(ax_strbuf *s, const unsigned char *d, size_t n) {
    static const char digits[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    char *out = malloc((n + 2) / 3 * 4 + 1), *o = out;
    if (!out) return;
    for (size_t i = 0; i < n; i += 3) {
        unsigned v = (unsigned)d[i] << 16 | (i + 1 < n ? (unsigned)d[i + 1] << 8 : 0) |
                     (i + 2 < n ? d[i + 2] : 0);
        *o++ = digits[v >> 18 & 63];
        *o++ = digits[v >> 12 & 63];
        *o++ = i + 1 < n ? digits[v >> 6 & 63] : '=';
        *o++ = i + 2 < n ? digits[v & 63] : '=';
    }
    *o = 0;
    ax_strbuf_append(s, out);
    free(out);
}

static void output_part(void *arg, const char *text, size_t len, const ax_picture *pic) {
    ax_strbuf *s = arg;
    if (text) {
        while (len && text[len - 1] == '\n') len--;
        if (!len) return;
        ax_strbuf_append(s, "<pre class=\"ax-text\">");
        escaped(s, text, len);
        ax_strbuf_append(s, "</pre>\n");
        return;
    }
    const char *mime = !strcmp(pic->format, "svg") ? "image/svg+xml" : "image/png";
    ax_strbuf_append(s, "<figure class=\"ax-picture\"><img alt=\"");
    escaped(s, pic->alt, strlen(pic->alt));
    ax_strbuf_appendf(s, "\" src=\"data:%s;base64,", mime);
    base64(s, (const unsigned char *)pic->data, pic->len);
    ax_strbuf_append(s, "\"></figure>\n");
}

/* The outputs of one block, as an HTML fragment (malloc'd). */
static char *outputs_html(const nb_result *r) {
    ax_strbuf s;
    ax_strbuf_init(&s);
    ax_strbuf_append(&s, "<div class=\"ax-out\">\n");
    ax_notebook_each_part(r, output_part, &s);
    if (r->error) {
        ax_strbuf_append(&s, "<pre class=\"ax-error\">");
        size_t n = strlen(r->error);
        while (n && r->error[n - 1] == '\n') n--;
        escaped(&s, r->error, n);
        ax_strbuf_append(&s, "</pre>\n");
    }
    ax_strbuf_append(&s, "</div>\n");
    return s.data;
}

/* ---------------------------------------------------------------- the document */

static const nb_block *block_at_line(const nb_document *doc, int line, int *index) {
    for (int i = 0; i < doc->nblocks; i++)
        if (doc->blocks[i].line == line) return *index = i, &doc->blocks[i];
    return NULL;
}

/* Whether block i is the recorded output of an ax block that ran. */
static bool is_replaced_output(const nb_document *doc, int i) {
    for (int k = 0; k < doc->nblocks; k++)
        if (doc->blocks[k].output == i && doc->results[k].ran) return true;
    return false;
}

/* Inserts the outputs after the ax blocks and drops the recorded outputs they replace. */
static int decorate(const cmark_api *api, cmark_node *root, const nb_document *doc) {
    cmark_node **found = NULL;
    int n = 0, cap = 0, rc = 0;
    cmark_iter *it = api->iter_new(root);
    for (cmark_event_type ev; it && (ev = api->iter_next(it)) != CMARK_EVENT_DONE;) {
        cmark_node *node = api->iter_get_node(it);
        if (ev != CMARK_EVENT_ENTER || api->node_get_type(node) != CMARK_NODE_CODE_BLOCK) continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 32;
            cmark_node **grown = realloc(found, (size_t)cap * sizeof *grown);
            if (!grown) {
                rc = -1;
                break;
            }
            found = grown;
        }
        found[n++] = node;
    }
    if (it) api->iter_free(it);
    for (int k = 0; k < n && rc == 0; k++) {
        int i;
        const nb_block *b = block_at_line(doc, api->node_get_start_line(found[k]), &i);
        if (!b) continue;
        if (!strcmp(b->lang, "output") && is_replaced_output(doc, i)) {
            api->node_unlink(found[k]);
            api->node_free(found[k]);
        } else if (!strcmp(b->lang, "ax") && doc->results[i].ran) {
            char *html = outputs_html(&doc->results[i]);
            cmark_node *out = api->node_new(CMARK_NODE_HTML_BLOCK);
            if (!html || !out || !api->node_set_literal(out, html) ||
                !api->node_insert_after(found[k], out)) {
                if (out) api->node_free(out);
                rc = -1;
            }
            free(html);
        }
    }
    free(found);
    return rc;
}

/* The first level-1 heading outside code blocks, else the file's name. */
static void page_title(const nb_document *doc, ax_strbuf *s) {
    const char *p = doc->text;
    for (int line = 1; *p; line++) {
        const char *eol = strchr(p, '\n');
        size_t n = eol ? (size_t)(eol - p) : strlen(p);
        bool in_block = false;
        for (int i = 0; i < doc->nblocks && !in_block; i++)
            in_block = line >= doc->blocks[i].line && line <= doc->blocks[i].end_line;
        if (!in_block && n > 2 && p[0] == '#' && p[1] == ' ') {
            escaped(s, p + 2, n - 2);
            return;
        }
        p = eol ? eol + 1 : p + n;
    }
    const char *slash = strrchr(doc->path, '/');
    escaped(s, slash ? slash + 1 : doc->path, strlen(slash ? slash + 1 : doc->path));
}

static const char page_style[] =
    "body{margin:0;background:#fff;color:#1d1d1f;font:16px/1.55 system-ui,-apple-system,"
    "'Segoe UI',sans-serif}\n"
    "main{max-width:52rem;margin:2rem auto;padding:0 1.2rem}\n"
    "h1,h2,h3{line-height:1.25}\n"
    "code{font-family:ui-monospace,'DejaVu Sans Mono',Menlo,monospace;font-size:.9em}\n"
    "pre{padding:.7rem .9rem;overflow-x:auto;border-radius:6px;line-height:1.4}\n"
    "pre>code{font-size:.88em}\n"
    "pre:has(>code.language-ax){background:#f4f6fa;border:1px solid #dde3ee}\n"
    "pre:has(>code){background:#f6f7f9}\n"
    ".ax-out{margin:-.6rem 0 1.2rem 0;border-left:3px solid #c9d3e3;padding-left:.6rem}\n"
    ".ax-out pre{margin:.4rem 0;padding:.3rem .5rem;background:none;font:.85em/1.35 "
    "ui-monospace,'DejaVu Sans Mono',Menlo,monospace}\n"
    ".ax-out pre.ax-error{color:#b00020;background:#fff4f4}\n"
    ".ax-picture{margin:.5rem 0}\n"
    ".ax-picture img{max-width:100%;height:auto}\n"
    "table{border-collapse:collapse}td,th{border:1px solid #ddd;padding:.3rem .6rem}\n"
    "footer{color:#888;font-size:.8em;margin:3rem 0 1rem}\n";

int ax_notebook_write_html(const nb_document *doc, const char *out_path) {
    cmark_api api = {0};
    if (!cmark_open(&api)) return -1;
    int rc = -1;
    char *body = NULL;
    cmark_node *root = api.parse_document(doc->text, doc->len, CMARK_OPT_UNSAFE);
    if (root && decorate(&api, root, doc) == 0) body = api.render_html(root, CMARK_OPT_UNSAFE);
    if (root) api.node_free(root);
    if (body) {
        ax_strbuf s;
        ax_strbuf_init(&s);
        ax_strbuf_append(&s, "<!DOCTYPE html>\n<html>\n<head>\n<meta charset=\"utf-8\">\n"
                             "<meta name=\"viewport\" content=\"width=device-width, "
                             "initial-scale=1\">\n<title>");
        page_title(doc, &s);
        ax_strbuf_appendf(&s, "</title>\n<style>\n%s</style>\n</head>\n<body>\n<main>\n",
                          page_style);
        ax_strbuf_append(&s, body);
        ax_strbuf_append(&s, "<footer>Made by <code>ax notebook</code> from ");
        escaped(&s, doc->path, strlen(doc->path));
        ax_strbuf_append(&s, "</footer>\n</main>\n</body>\n</html>\n");
        FILE *f = fopen(out_path, "wb");
        if (f && s.data && fputs(s.data, f) >= 0 && fclose(f) == 0) {
            rc = 0;
        } else {
            if (f) fclose(f);
            perror(out_path);
        }
        ax_strbuf_free(&s);
        free(body);
    } else {
        fputs("ax notebook: libcmark could not render the page\n", stderr);
    }
    dlclose(api.handle);
    return rc;
}

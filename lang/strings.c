/* Strings: printf-style formatting (`"%.3f" % loss`), str.format (`"{} {:.2f}".format(a, b)`)
 * and the common methods (join, split, strip, replace, startswith, endswith, upper, lower).
 * Numbers are arrays: a number to format must be a concrete scalar. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "eval.h"

static bool is_number(const ax_value *v) {
    return v->kind == AX_V_ARRAY && v->arr->size == 1;
}

/* ---- "%" formatting ---- */

/* One conversion: the printf directive `spec` (without the conversion character's argument
 * kind decided yet) applied to v. */
static bool percent_one(ax_interp *in, ax_strbuf *out, const char *flags, int width, int prec,
                        char conv, ax_value *v) {
    char fmt[32], buf[512];
    int n = 0;
    n += snprintf(fmt + n, sizeof fmt - (size_t)n, "%%%s", flags);
    if (width >= 0) n += snprintf(fmt + n, sizeof fmt - (size_t)n, "%d", width);
    if (prec >= 0) n += snprintf(fmt + n, sizeof fmt - (size_t)n, ".%d", prec);
    if (conv == 's' || conv == 'r') {
        ax_strbuf text;
        ax_strbuf_init(&text);
        if (conv == 'r')
            ax_value_format_nested(&text, v);
        else
            ax_value_format(&text, v);
        snprintf(fmt + n, sizeof fmt - (size_t)n, "s");
        int len = snprintf(NULL, 0, fmt, text.data ? text.data : "");
        char *big = malloc((size_t)len + 1);
        if (big) {
            snprintf(big, (size_t)len + 1, fmt, text.data ? text.data : "");
            ax_strbuf_append(out, big);
        }
        free(big);
        out->failed |= text.failed;
        ax_strbuf_free(&text);
        return big ? true : (ax_error_oom(in->cx), false);
    }
    double d;
    if (!ax_value_to_double(in, v, "a number to format with %", &d)) return false;
    if (strchr("diouxXc", conv)) {
        snprintf(fmt + n, sizeof fmt - (size_t)n, "ll%c", conv == 'i' || conv == 'u' ? 'd' : conv);
        if (conv == 'c') snprintf(fmt + n, sizeof fmt - (size_t)n, "c");
        if (conv == 'c')
            snprintf(buf, sizeof buf, fmt, (int)d);
        else
            snprintf(buf, sizeof buf, fmt, (long long)d);
    } else {
        snprintf(fmt + n, sizeof fmt - (size_t)n, "%c", conv);
        snprintf(buf, sizeof buf, fmt, d);
    }
    ax_strbuf_append(out, buf);
    return true;
}

ax_value *ax_string_percent(ax_interp *in, const char *fmt, ax_value *args) {
    ax_value **items = args->kind == AX_V_TUPLE ? args->items : &args;
    int nargs = args->kind == AX_V_TUPLE ? args->n : 1, used = 0;
    ax_strbuf out;
    ax_strbuf_init(&out);
    for (const char *p = fmt; *p; p++) {
        if (*p != '%') {
            char c[2] = {*p, 0};
            ax_strbuf_append(&out, c);
            continue;
        }
        p++;
        if (*p == '%') {
            ax_strbuf_append(&out, "%");
            continue;
        }
        char flags[8] = "";
        size_t nf = 0;
        while (*p && strchr("-+ #0", *p) && nf < sizeof flags - 1) flags[nf++] = *p++;
        int width = -1, prec = -1;
        if (isdigit((unsigned char)*p)) width = (int)strtol(p, (char **)&p, 10);
        if (*p == '.') {
            p++;
            prec = (int)strtol(p, (char **)&p, 10);
        }
        if (width > 256 || prec > 100) {
            ax_strbuf_free(&out);
            return ax_error(in->cx, AX_ERR_VALUE, "a format width or precision is too large");
        }
        if (!*p || !strchr("diouxXeEfFgGcsr", *p)) {
            ax_strbuf_free(&out);
            if (!*p) return ax_error(in->cx, AX_ERR_VALUE, "incomplete format");
            return ax_error(in->cx, AX_ERR_VALUE, "unsupported format character '%c'", *p);
        }
        if (used >= nargs) {
            ax_strbuf_free(&out);
            return ax_error(in->cx, AX_ERR_TYPE, "not enough arguments for format string");
        }
        if (!percent_one(in, &out, flags, width, prec, *p, items[used++])) {
            ax_strbuf_free(&out);
            return NULL;
        }
    }
    if (used < nargs) {
        ax_strbuf_free(&out);
        return ax_error(in->cx, AX_ERR_TYPE,
                        "not all arguments converted during string formatting");
    }
    return ax_value_str_take_buf(in, &out);
}

/* ---- str.format ---- */

typedef struct format_spec {
    char fill, align, sign, type;
    bool alt, zero;
    int width, prec;
} format_spec;

static bool parse_spec(ax_interp *in, const char *s, format_spec *fs) {
    *fs = (format_spec){.fill = ' ', .width = -1, .prec = -1};
    if (s[0] && s[1] && strchr("<>^=", s[1])) {
        fs->fill = s[0];
        fs->align = s[1];
        s += 2;
    } else if (s[0] && strchr("<>^=", s[0])) {
        fs->align = *s++;
    }
    if (*s && strchr("+- ", *s)) fs->sign = *s++;
    if (*s == '#') fs->alt = true, s++;
    if (*s == '0') fs->zero = true, s++;
    if (isdigit((unsigned char)*s)) fs->width = (int)strtol(s, (char **)&s, 10);
    if (*s == '.') {
        s++;
        if (!isdigit((unsigned char)*s)) goto bad;
        fs->prec = (int)strtol(s, (char **)&s, 10);
    }
    if (*s && strchr("deEfFgGxXobs%", *s)) fs->type = *s++;
    if (*s || fs->width > 256 || fs->prec > 100) goto bad;
    return true;
bad:
    ax_error(in->cx, AX_ERR_VALUE, "invalid or unsupported format specifier");
    return false;
}

static void pad(ax_strbuf *out, const char *text, const format_spec *fs, bool number) {
    int len = (int)strlen(text), fill = fs->width > len ? fs->width - len : 0;
    char align = fs->align ? fs->align : number ? '>' : '<';
    int left = align == '>' ? fill : align == '^' ? fill / 2 : 0;
    char c[2] = {fs->fill, 0};
    for (int i = 0; i < left; i++) ax_strbuf_append(out, c);
    ax_strbuf_append(out, text);
    for (int i = 0; i < fill - left; i++) ax_strbuf_append(out, c);
}

static bool format_field(ax_interp *in, ax_strbuf *out, ax_value *v, const char *spec,
                         char conversion) {
    format_spec fs;
    if (!parse_spec(in, spec, &fs)) return false;
    ax_strbuf text;
    ax_strbuf_init(&text);
    bool numeric = fs.type && fs.type != 's';
    if (!numeric && !(is_number(v) && fs.prec >= 0)) {
        if (conversion == 'r')
            ax_value_format_nested(&text, v);
        else
            ax_value_format(&text, v);
        const char *t = text.data ? text.data : "";
        if (fs.prec >= 0 && (int)strlen(t) > fs.prec) text.data[fs.prec] = 0;
        pad(out, text.data ? text.data : "", &fs, false);
        out->failed |= text.failed;
        ax_strbuf_free(&text);
        return true;
    }
    double d;
    if (!ax_value_to_double(in, v, "a number to format", &d)) return false;
    char fmt[32], buf[512];
    int n = snprintf(fmt, sizeof fmt, "%%%s%s%s",
                     fs.sign == '+'   ? "+"
                     : fs.sign == ' ' ? " "
                                      : "",
                     fs.alt ? "#" : "", fs.zero && !fs.align ? "0" : "");
    if (fs.zero && !fs.align && fs.width >= 0)
        n += snprintf(fmt + n, sizeof fmt - (size_t)n, "%d", fs.width);
    if (fs.prec >= 0) n += snprintf(fmt + n, sizeof fmt - (size_t)n, ".%d", fs.prec);
    char type = fs.type ? fs.type : 'g';
    if (strchr("dxXob", type)) {
        if (type == 'b') type = 'd'; /* binary: rare, printed as decimal */
        snprintf(fmt + n, sizeof fmt - (size_t)n, "ll%c", type);
        snprintf(buf, sizeof buf, fmt, (long long)d);
    } else if (type == '%') {
        snprintf(fmt + n, sizeof fmt - (size_t)n, "f%%%%");
        snprintf(buf, sizeof buf, fmt, d * 100);
    } else {
        snprintf(fmt + n, sizeof fmt - (size_t)n, "%c", type);
        snprintf(buf, sizeof buf, fmt, d);
    }
    pad(out, buf, &fs, true);
    return true;
}

/* The value a replacement field names: {} (next), {0}, {name}, {name.attr}, {0[key]}. */
static ax_value *field_value(ax_interp *in, const char *name, const ax_args *args, int *next) {
    char head[128];
    size_t hl = strcspn(name, ".[");
    if (hl >= sizeof head) return ax_error(in->cx, AX_ERR_VALUE, "format field name too long");
    memcpy(head, name, hl);
    head[hl] = 0;
    ax_value *v;
    if (hl == 0 || isdigit((unsigned char)head[0])) {
        int i = hl == 0 ? (*next)++ : atoi(head);
        if (i >= args->n)
            return ax_error(in->cx, AX_ERR_INDEX,
                            "format field {%s} needs positional argument %d, but %d given", name, i,
                            args->n);
        v = ax_value_retain(args->pos[i]);
    } else {
        v = ax_arg(args, -1, head);
        if (!v) return ax_error(in->cx, AX_ERR_KEY, "format field {%s} has no argument", head);
        ax_value_retain(v);
    }
    for (const char *p = name + hl; *p && v;) {
        char part[128];
        ax_value *next_v;
        if (*p == '.') {
            size_t l = strcspn(++p, ".[");
            snprintf(part, sizeof part, "%.*s", (int)l, p);
            p += l;
            next_v = ax_getattr(in, v, part);
        } else {
            size_t l = strcspn(++p, "]");
            snprintf(part, sizeof part, "%.*s", (int)l, p);
            p += l + (p[l] == ']');
            ax_value *key =
                isdigit((unsigned char)part[0]) ? ax_value_int(in, atoi(part)) : ax_value_str(part);
            next_v = key ? ax_value_getitem(in, v, key) : ax_error_oom(in->cx);
            ax_value_release(key);
        }
        ax_value_release(v);
        v = next_v;
    }
    return v;
}

static ax_value *str_format(ax_interp *in, const char *fmt, const ax_args *args) {
    ax_strbuf out;
    ax_strbuf_init(&out);
    int next = 0;
    for (const char *p = fmt; *p; p++) {
        if ((*p == '{' && p[1] == '{') || (*p == '}' && p[1] == '}')) {
            char c[2] = {*p++, 0};
            ax_strbuf_append(&out, c);
            continue;
        }
        if (*p == '}') {
            ax_strbuf_free(&out);
            return ax_error(in->cx, AX_ERR_VALUE, "single '}' encountered in format string");
        }
        if (*p != '{') {
            char c[2] = {*p, 0};
            ax_strbuf_append(&out, c);
            continue;
        }
        const char *end = strchr(p, '}');
        if (!end || end - p > 250) {
            ax_strbuf_free(&out);
            return ax_error(in->cx, AX_ERR_VALUE, "unmatched '{' in format string");
        }
        char field[256];
        snprintf(field, sizeof field, "%.*s", (int)(end - p - 1), p + 1);
        char *spec = strchr(field, ':');
        if (spec) *spec++ = 0;
        char conversion = 0;
        char *bang = strchr(field, '!');
        if (bang) {
            conversion = bang[1];
            *bang = 0;
        }
        ax_value *v = field_value(in, field, args, &next);
        bool ok = v && format_field(in, &out, v, spec ? spec : "", conversion);
        ax_value_release(v);
        if (!ok) {
            ax_strbuf_free(&out);
            return NULL;
        }
        p = end;
    }
    return ax_value_str_take_buf(in, &out);
}

/* ---- methods ---- */

static ax_value *join(ax_interp *in, const char *sep, ax_value *seq) {
    ax_value_iter it;
    if (ax_value_iter_begin(in, seq, &it) < 0) return NULL;
    ax_strbuf out;
    ax_strbuf_init(&out);
    for (int i = 0;; i++) {
        ax_value *item;
        int r = (i & 4095) == 4095 && ax_ctx_check_interrupt(in->cx)
                    ? -1
                    : ax_value_iter_next(in, &it, &item);
        if (r == 0) break;
        if (r < 0 || item->kind != AX_V_STR) {
            if (r > 0) {
                char d[64];
                ax_value_describe(d, sizeof d, item);
                ax_error(in->cx, AX_ERR_TYPE, "join() item %d is %s, not a string", i, d);
                ax_value_release(item);
            }
            ax_strbuf_free(&out);
            return NULL;
        }
        if (i) ax_strbuf_append(&out, sep);
        ax_strbuf_append(&out, item->str);
        ax_value_release(item);
    }
    return ax_value_str_take_buf(in, &out);
}

/* Python's split: on runs of whitespace (ends trimmed) without a separator, else exactly on
 * each separator (keeping empty pieces). */
static ax_value *split(ax_interp *in, const char *s, const char *sep) {
    size_t seplen = sep ? strlen(sep) : 0;
    if (sep && seplen == 0) return ax_error(in->cx, AX_ERR_VALUE, "split() separator is empty");
    ax_value **items = NULL;
    int n = 0, cap = 0;
    bool ok = true;
    for (const char *p = s; ok;) {
        if (!sep) {
            while (isspace((unsigned char)*p)) p++;
            if (!*p) break;
        }
        const char *end = sep ? strstr(p, sep) : p + strcspn(p, " \t\n\r\f\v");
        bool last = !end || (!sep && !*end);
        if (!end) end = p + strlen(p);
        if (n == cap) {
            cap = cap ? 2 * cap : 8;
            ax_value **grown = realloc(items, (size_t)cap * sizeof *grown);
            if (!grown) {
                ok = false;
                break;
            }
            items = grown;
        }
        char *piece = strndup(p, (size_t)(end - p));
        ok = piece && (items[n] = ax_value_str(piece)) != NULL;
        free(piece);
        if (ok) n++;
        if (last) break;
        p = end + seplen;
    }
    ax_value *r = ok ? ax_value_list(n, items) : NULL;
    if (!ok)
        for (int i = 0; i < n; i++) ax_value_release(items[i]);
    free(items);
    return r ? r : ax_error_oom(in->cx);
}

static const char *string_arg(ax_interp *in, const ax_args *a, int i, const char *m) {
    ax_value *v = ax_arg(a, i, NULL);
    if (!v || v->kind != AX_V_STR) {
        ax_error(in->cx, AX_ERR_TYPE, "str.%s() needs a string argument", m);
        return NULL;
    }
    return v->str;
}

static ax_value *replace(ax_interp *in, const char *s, const char *old, const char *new) {
    size_t ol = strlen(old);
    ax_strbuf out;
    ax_strbuf_init(&out);
    ax_strbuf_append(&out, "");
    for (const char *p = s; *p;) {
        const char *hit = ol ? strstr(p, old) : NULL;
        if (!hit) {
            ax_strbuf_append(&out, p);
            break;
        }
        ax_strbuf_appendf(&out, "%.*s%s", (int)(hit - p), p, new);
        p = hit + ol;
    }
    return ax_value_str_take_buf(in, &out);
}

static ax_value *strip(ax_interp *in, const char *s, const char *m) {
    const char *b = s, *e = s + strlen(s);
    if (strcmp(m, "rstrip") != 0)
        while (*b && isspace((unsigned char)*b)) b++;
    if (strcmp(m, "lstrip") != 0)
        while (e > b && isspace((unsigned char)e[-1])) e--;
    char *t = strndup(b, (size_t)(e - b));
    ax_value *v = t ? ax_value_str(t) : NULL;
    free(t);
    return v ? v : ax_error_oom(in->cx);
}

/* ---- searching, testing and padding (positions count characters, as len does) ---- */

/* The byte offset of character i of s (clamped to its length), and the reverse. */
static size_t byte_at(const char *s, int64_t i) {
    size_t b = 0;
    for (int64_t k = 0; k < i && s[b]; k++)
        for (b++; ((unsigned char)s[b] & 0xC0) == 0x80; b++) {
        }
    return b;
}

static int64_t chars_before(const char *s, size_t b) {
    int64_t n = 0;
    for (size_t k = 0; k < b; k++) n += ((unsigned char)s[k] & 0xC0) != 0x80;
    return n;
}

/* The [start, end) window of s that find/count search (Python's slice rules, in characters). */
static bool search_window(ax_interp *in, const ax_args *a, const char *s, size_t *lo, size_t *hi) {
    int64_t n = chars_before(s, strlen(s)), v[2] = {0, n};
    for (int i = 0; i < 2; i++) {
        ax_value *x = ax_arg(a, i + 1, NULL);
        if (x && x->kind != AX_V_NONE && !ax_value_to_int(in, x, "a string position", &v[i]))
            return false;
        if (v[i] < 0) v[i] = v[i] + n < 0 ? 0 : v[i] + n;
    }
    *lo = byte_at(s, v[0]);
    *hi = v[1] < v[0] ? *lo : byte_at(s, v[1]);
    return true;
}

/* find, rfind, index, rindex, count. */
static ax_value *string_search(ax_interp *in, const char *m, const char *s, const ax_args *a) {
    if (!ax_args_check(in, a, m, 3, NULL)) return NULL;
    const char *x = string_arg(in, a, 0, m);
    size_t lo, hi;
    if (!x || !search_window(in, a, s, &lo, &hi)) return NULL;
    size_t lx = strlen(x);
    bool last = m[0] == 'r', count = m[0] == 'c';
    int64_t found = -1, hits = 0;
    for (size_t b = lo; b + lx <= hi;) {
        if (strncmp(s + b, x, lx) == 0) {
            found = (int64_t)b, hits++;
            if (!last && !count) break;
            if (count) {
                b += lx ? lx : 1;
                continue;
            }
        }
        b++;
    }
    if (count) return ax_value_int(in, hits);
    if (found < 0 && m[strlen(m) - 1] == 'x')
        return ax_error(in->cx, AX_ERR_VALUE, "substring not found");
    return ax_value_int(in, found < 0 ? -1 : chars_before(s, (size_t)found));
}

/* isdigit, isalpha, isalnum, isspace, islower, isupper (ASCII classes; false when empty). */
static ax_value *string_test(ax_interp *in, const char *m, const char *s) {
    bool r = *s != 0, cased = false;
    for (const unsigned char *p = (const unsigned char *)s; *p && r; p++) {
        int c = *p;
        if (!strcmp(m, "isdigit"))
            r = isdigit(c);
        else if (!strcmp(m, "isalpha"))
            r = isalpha(c);
        else if (!strcmp(m, "isalnum"))
            r = isalnum(c);
        else if (!strcmp(m, "isspace"))
            r = isspace(c);
        else if (!strcmp(m, "islower"))
            r = !isupper(c), cased |= islower(c) != 0;
        else
            r = !islower(c), cased |= isupper(c) != 0;
    }
    if (!strcmp(m, "islower") || !strcmp(m, "isupper")) r = r && cased;
    return ax_value_bool(in, r);
}

/* ljust, rjust, center (width, fillchar=' ') and zfill(width). */
static ax_value *string_pad(ax_interp *in, const char *m, const char *s, const ax_args *a) {
    bool z = !strcmp(m, "zfill");
    if (!ax_args_check(in, a, m, z ? 1 : 2, NULL)) return NULL;
    int64_t width;
    if (a->n < 1 || !ax_value_to_int(in, a->pos[0], "the width", &width)) {
        if (!ax_error_pending(in->cx)) ax_error(in->cx, AX_ERR_TYPE, "%s() takes a width", m);
        return NULL;
    }
    const char *fill = a->n > 1 ? string_arg(in, a, 1, m) : z ? "0" : " ";
    if (!fill) return NULL;
    if (strlen(fill) != 1)
        return ax_error(in->cx, AX_ERR_TYPE, "the fill character must be exactly one character");
    int64_t len = chars_before(s, strlen(s)), pad = width > len ? width - len : 0;
    if (pad > (1 << 24)) return ax_error(in->cx, AX_ERR_VALUE, "%s(): width is too large", m);
    int64_t left = !strcmp(m, "rjust") || z ? pad
                   : !strcmp(m, "center")   ? pad / 2 + (pad & width & 1)
                                            : 0;
    ax_strbuf out;
    ax_strbuf_init(&out);
    ax_strbuf_append(&out, "");
    if (z && (*s == '-' || *s == '+')) ax_strbuf_appendf(&out, "%c", *s++);
    for (int64_t i = 0; i < left; i++) ax_strbuf_append(&out, fill);
    ax_strbuf_append(&out, s);
    for (int64_t i = left; i < pad; i++) ax_strbuf_append(&out, fill);
    return ax_value_str_take_buf(in, &out);
}

/* partition / rpartition(sep): (head, sep, tail). */
static ax_value *string_partition(ax_interp *in, const char *m, const char *s, const ax_args *a) {
    if (!ax_args_check(in, a, m, 1, NULL)) return NULL;
    const char *sep = string_arg(in, a, 0, m);
    if (!sep) return NULL;
    if (!*sep) return ax_error(in->cx, AX_ERR_VALUE, "empty separator");
    const char *hit = strstr(s, sep);
    if (m[0] == 'r')
        for (const char *h = hit; h; h = strstr(h + 1, sep)) hit = h;
    size_t ls = strlen(s), lp = strlen(sep);
    const char *parts[3] = {s, "", ""};
    size_t lens[3] = {ls, 0, 0};
    if (hit) {
        lens[0] = (size_t)(hit - s), parts[1] = sep, lens[1] = lp;
        parts[2] = hit + lp, lens[2] = ls - lens[0] - lp;
    } else if (m[0] == 'r') {
        parts[2] = s, lens[2] = ls, parts[0] = "", lens[0] = 0;
    }
    ax_value *items[3] = {NULL, NULL, NULL};
    for (int i = 0; i < 3; i++) {
        char *t = strndup(parts[i], lens[i]);
        items[i] = t ? ax_value_str(t) : NULL;
        free(t);
        if (!items[i]) {
            for (int k = 0; k < i; k++) ax_value_release(items[k]);
            return ax_error_oom(in->cx);
        }
    }
    ax_value *r = ax_value_tuple(3, items);
    return r ? r : ax_error_oom(in->cx);
}

/* capitalize, title, splitlines, removeprefix, removesuffix. */
static ax_value *string_reshape(ax_interp *in, const char *m, const char *s, const ax_args *a) {
    bool affix = !strncmp(m, "remove", 6);
    if (!ax_args_check(in, a, m, affix ? 1 : 0, NULL)) return NULL;
    char *t = strdup(s);
    if (!t) return ax_error_oom(in->cx);
    if (!strcmp(m, "splitlines")) { /* a last line break ends the last line */
        size_t ls = strlen(t);
        if (ls && t[ls - 1] == '\n') t[ls - 1] = 0;
        ax_value *lines = *s ? split(in, t, "\n") : ax_value_list(0, NULL);
        free(t);
        return lines ? lines : ax_error_oom(in->cx);
    }
    if (affix) {
        const char *x = string_arg(in, a, 0, m);
        if (!x) {
            free(t);
            return NULL;
        }
        size_t lx = strlen(x), ls = strlen(t);
        if (m[6] == 'p' && !strncmp(t, x, lx))
            memmove(t, t + lx, ls - lx + 1);
        else if (m[6] == 's' && lx <= ls && lx && !strcmp(t + ls - lx, x))
            t[ls - lx] = 0;
    } else {
        bool start = true;
        for (char *p = t; *p; p++) {
            int c = (unsigned char)*p;
            *p = (char)(start ? toupper(c) : tolower(c));
            start = m[0] == 't' ? !isalpha(c) : false;
        }
    }
    ax_value *v = ax_value_str(t);
    free(t);
    return v ? v : ax_error_oom(in->cx);
}

static ax_value *string_method2(ax_interp *in, const char *m, const char *s, const ax_args *a) {
    if (strstr(m, "find") || strstr(m, "index") || !strcmp(m, "count"))
        return string_search(in, m, s, a);
    if (!strncmp(m, "is", 2)) {
        if (!ax_args_check(in, a, m, 0, NULL)) return NULL;
        return string_test(in, m, s);
    }
    if (strstr(m, "just") || !strcmp(m, "center") || !strcmp(m, "zfill"))
        return string_pad(in, m, s, a);
    if (strstr(m, "partition")) return string_partition(in, m, s, a);
    return string_reshape(in, m, s, a);
}

/* startswith / endswith: x may be a tuple of strings (any of them). */
static ax_value *string_affix_test(ax_interp *in, const char *m, const char *s, const ax_args *a) {
    if (!ax_args_check(in, a, m, 1, NULL)) return NULL;
    ax_value *x = ax_arg(a, 0, NULL);
    int n = x && x->kind == AX_V_TUPLE ? x->n : 1;
    size_t ls = strlen(s);
    for (int i = 0; i < n; i++) {
        ax_value *v = x && x->kind == AX_V_TUPLE ? x->items[i] : x;
        if (!v || v->kind != AX_V_STR)
            return ax_error(in->cx, AX_ERR_TYPE, "str.%s() needs a string or a tuple of strings",
                            m);
        size_t lx = strlen(v->str);
        if (lx <= ls &&
            (m[0] == 's' ? strncmp(s, v->str, lx) == 0 : strcmp(s + ls - lx, v->str) == 0))
            return ax_value_bool(in, true);
    }
    return ax_value_bool(in, false);
}

/* strip / lstrip / rstrip (chars=None: whitespace). */
static ax_value *strip_chars(ax_interp *in, const char *s, const char *m, const ax_args *a) {
    if (!ax_args_check(in, a, m, 1, NULL)) return NULL;
    ax_value *c = ax_arg(a, 0, NULL);
    if (!c || c->kind == AX_V_NONE) return strip(in, s, m);
    if (c->kind != AX_V_STR) return ax_error(in->cx, AX_ERR_TYPE, "%s arg must be None or str", m);
    const char *b = s, *e = s + strlen(s);
    if (strcmp(m, "rstrip") != 0)
        while (*b && strchr(c->str, *b)) b++;
    if (strcmp(m, "lstrip") != 0)
        while (e > b && strchr(c->str, e[-1])) e--;
    char *t = strndup(b, (size_t)(e - b));
    ax_value *v = t ? ax_value_str(t) : NULL;
    free(t);
    return v ? v : ax_error_oom(in->cx);
}

static const char *const string_methods2[] = {
    "find",    "rfind",      "index",        "rindex",       "count",      "isdigit",
    "isalpha", "isalnum",    "isspace",      "islower",      "isupper",    "ljust",
    "rjust",   "center",     "zfill",        "partition",    "rpartition", "capitalize",
    "title",   "splitlines", "removeprefix", "removesuffix", NULL};

static ax_value *string_method(ax_interp *in, ax_value *self, const ax_args *a) {
    const char *m = self->builtin->name, *s = self->builtin->data->str;
    if (strcmp(m, "format") == 0) return str_format(in, s, a);
    if (strcmp(m, "join") == 0) {
        if (!ax_args_check(in, a, "join", 1, NULL)) return NULL;
        if (a->n != 1) return ax_error(in->cx, AX_ERR_TYPE, "str.join() takes one list");
        return join(in, s, a->pos[0]);
    }
    if (strcmp(m, "split") == 0) {
        if (!ax_args_check(in, a, "split", 1, NULL)) return NULL;
        ax_value *sep = ax_arg(a, 0, NULL);
        if (sep && sep->kind != AX_V_NONE && sep->kind != AX_V_STR)
            return ax_error(in->cx, AX_ERR_TYPE, "str.split() needs a string separator");
        return split(in, s, sep && sep->kind == AX_V_STR ? sep->str : NULL);
    }
    if (strcmp(m, "replace") == 0) {
        if (!ax_args_check(in, a, "replace", 2, NULL)) return NULL;
        const char *old = string_arg(in, a, 0, m), *new = old ? string_arg(in, a, 1, m) : NULL;
        return new ? replace(in, s, old, new) : NULL;
    }
    if (strcmp(m, "startswith") == 0 || strcmp(m, "endswith") == 0)
        return string_affix_test(in, m, s, a);
    if (strstr(m, "strip")) return strip_chars(in, s, m, a);
    for (int i = 0; string_methods2[i]; i++)
        if (strcmp(m, string_methods2[i]) == 0) return string_method2(in, m, s, a);
    if (!ax_args_check(in, a, m, 0, NULL)) return NULL;
    char *t = strdup(s); /* upper, lower */
    if (!t) return ax_error_oom(in->cx);
    for (char *p = t; *p; p++)
        *p = (char)(m[0] == 'u' ? toupper((unsigned char)*p) : tolower((unsigned char)*p));
    ax_value *v = ax_value_str(t);
    free(t);
    return v ? v : ax_error_oom(in->cx);
}

static const char *const string_methods[] = {"endswith",   "format",  "join",   "lower",
                                             "lstrip",     "replace", "rstrip", "split",
                                             "startswith", "strip",   "upper",  NULL};

ax_value *ax_string_getattr(ax_interp *in, ax_value *s, const char *name) {
    const char *const *tables[] = {string_methods, string_methods2};
    for (int t = 0; t < 2; t++)
        for (int i = 0; tables[t][i]; i++)
            if (strcmp(name, tables[t][i]) == 0) {
                ax_value *m =
                    ax_value_builtin(name, "a string method", string_method, ax_value_retain(s));
                return m ? m : ax_error_oom(in->cx);
            }
    return NULL;
}

void ax_string_each_attr(void (*fn)(void *arg, const char *name), void *arg) {
    for (int i = 0; string_methods[i]; i++) fn(arg, string_methods[i]);
    for (int i = 0; string_methods2[i]; i++) fn(arg, string_methods2[i]);
}

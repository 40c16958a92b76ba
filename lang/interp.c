/* The interpreter: environments, modules and imports, the builtin namespace, calls with a
 * recursion guard, attribute lookup, and running programs. */
#include "interp.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "eval.h"

/* Calls deeper than this are a RecursionError, as Python's default limit. */
#define MAX_CALL_DEPTH 1000
/* Stack left for what runs below the last guarded call (kernels, tracing, the jit). */
#define STACK_RESERVE (1024 * 1024)

static ax_interp_impl *impl(ax_interp *in) {
    return (ax_interp_impl *)in;
}

/* ---- programs kept alive by closures ---- */

struct ax_program_ref *ax_program_ref_new(ax_program *prog) {
    struct ax_program_ref *r = malloc(sizeof *r);
    if (!r) {
        ax_program_free(prog);
        return NULL;
    }
    r->refs = 1;
    r->prog = prog;
    return r;
}

struct ax_program_ref *ax_program_ref_retain(struct ax_program_ref *r) {
    if (r) r->refs++;
    return r;
}

void ax_program_ref_release(struct ax_program_ref *r) {
    if (!r || --r->refs > 0) return;
    ax_program_free(r->prog);
    free(r);
}

/* ---- environments ---- */

ax_env *ax_env_new(ax_env *parent) {
    ax_env *e = calloc(1, sizeof *e);
    if (e) e->parent = parent;
    return e;
}

void ax_env_free(ax_env *env) {
    if (!env) return;
    for (int i = 0; i < env->n; i++) {
        free(env->names[i]);
        ax_value_release(env->vals[i]);
    }
    free(env->names);
    free(env->vals);
    free(env);
}

static int env_find(const ax_env *env, const char *name) {
    for (int i = env->n - 1; i >= 0; i--)
        if (strcmp(env->names[i], name) == 0) return i;
    return -1;
}

ax_value *ax_env_get(const ax_env *env, const char *name) {
    for (; env; env = env->parent) {
        int i = env_find(env, name);
        if (i >= 0) return env->vals[i];
    }
    return NULL;
}

static int env_append(ax_env *env, const char *name, ax_value *v) {
    if (env->n == env->cap) {
        int cap = env->cap ? 2 * env->cap : 8;
        char **names = realloc(env->names, (size_t)cap * sizeof *names);
        if (names) env->names = names;
        ax_value **vals = names ? realloc(env->vals, (size_t)cap * sizeof *vals) : NULL;
        if (!vals) {
            ax_value_release(v);
            return -1;
        }
        env->vals = vals;
        env->cap = cap;
    }
    char *copy = strdup(name);
    if (!copy) {
        ax_value_release(v);
        return -1;
    }
    env->names[env->n] = copy;
    env->vals[env->n++] = v;
    return 0;
}

int ax_env_set_take(ax_env *env, const char *name, ax_value *v) {
    int i = env_find(env, name);
    if (i >= 0) {
        ax_value_release(env->vals[i]);
        env->vals[i] = v;
        return 0;
    }
    return env_append(env, name, v);
}

ax_env *ax_env_snapshot(const ax_env *env) {
    ax_env *s = ax_env_new(NULL);
    if (!s) return NULL;
    for (const ax_env *e = env; e; e = e->parent)
        for (int i = 0; i < e->n; i++) {
            if (env_find(s, e->names[i]) >= 0) continue; /* shadowed by an inner scope */
            if (env_append(s, e->names[i], ax_value_retain(e->vals[i])) < 0) {
                ax_env_free(s);
                return NULL;
            }
        }
    return s;
}

/* ---- modules ---- */

static uint64_t hash_name(const char *s) {
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

ax_module *ax_module_new(const char *name) {
    ax_module *m = calloc(1, sizeof *m);
    if (!m || !(m->name = strdup(name))) {
        free(m);
        return NULL;
    }
    return m;
}

void ax_module_clear(ax_module *m) {
    for (int i = 0; i < m->n; i++) {
        free(m->entries[i].name);
        ax_value_release(m->entries[i].val);
    }
    free(m->entries);
    free(m->index);
    m->entries = NULL;
    m->index = NULL;
    m->n = m->cap = m->icap = 0;
}

void ax_module_free(ax_module *m) {
    if (!m) return;
    ax_module_clear(m);
    free(m->name);
    free(m->file);
    free(m);
}

static int module_find(const ax_module *m, const char *name) {
    if (!m->icap) return -1;
    size_t mask = (size_t)m->icap - 1;
    for (size_t h = hash_name(name) & mask;; h = (h + 1) & mask) {
        int i = m->index[h];
        if (i < 0) return -1;
        if (strcmp(m->entries[i].name, name) == 0) return i;
    }
}

static int module_reindex(ax_module *m, int icap) {
    int *index = malloc((size_t)icap * sizeof *index);
    if (!index) return -1;
    for (int i = 0; i < icap; i++) index[i] = -1;
    size_t mask = (size_t)icap - 1;
    for (int i = 0; i < m->n; i++) {
        size_t h = hash_name(m->entries[i].name) & mask;
        while (index[h] >= 0) h = (h + 1) & mask;
        index[h] = i;
    }
    free(m->index);
    m->index = index;
    m->icap = icap;
    return 0;
}

int ax_module_set_take(ax_module *m, const char *name, ax_value *v) {
    int i = module_find(m, name);
    if (i >= 0) {
        ax_value_release(m->entries[i].val);
        m->entries[i].val = v;
        return 0;
    }
    if (m->n == m->cap) {
        int cap = m->cap ? 2 * m->cap : 16;
        ax_module_entry *e = realloc(m->entries, (size_t)cap * sizeof *e);
        if (!e) goto fail;
        m->entries = e;
        m->cap = cap;
    }
    char *copy = strdup(name);
    if (!copy) goto fail;
    m->entries[m->n++] = (ax_module_entry){.name = copy, .val = v};
    if (2 * m->n > m->icap) {
        if (module_reindex(m, m->icap ? 2 * m->icap : 32) < 0) {
            m->n--;
            free(copy);
            goto fail;
        }
    } else {
        size_t mask = (size_t)m->icap - 1, h = hash_name(name) & mask;
        while (m->index[h] >= 0) h = (h + 1) & mask;
        m->index[h] = m->n - 1;
    }
    return 0;
fail:
    ax_value_release(v);
    return -1;
}

ax_value *ax_module_lookup(ax_module *m, const char *name) {
    int i = m ? module_find(m, name) : -1;
    return i >= 0 ? m->entries[i].val : NULL;
}

const char *ax_module_name(const ax_module *m) {
    return m ? m->name : "?";
}

void ax_module_define_take(ax_module *m, const char *name, ax_value *v) {
    if (!v) return;
    ax_module_set_take(m, name, v); /* out of memory drops the definition; nothing else to do */
}

static int add_module(ax_interp *in, ax_module *m) {
    ax_module **ms = realloc(in->modules, (size_t)(in->nmodules + 1) * sizeof *ms);
    if (!ms) return -1;
    in->modules = ms;
    in->modules[in->nmodules++] = m;
    return 0;
}

ax_module *ax_interp_new_module(ax_interp *in, const char *name) {
    ax_module *m = ax_module_new(name);
    if (!m || add_module(in, m) < 0) {
        ax_module_free(m);
        return ax_error_oom(in->cx);
    }
    return m;
}

/* ---- the search path ---- */

static int path_add(ax_interp *in, const char *dir) {
    if (!dir || !dir[0]) return 0;
    for (int i = 0; i < in->npath; i++)
        if (strcmp(in->search_path[i], dir) == 0) return 0;
    char **p = realloc(in->search_path, (size_t)(in->npath + 1) * sizeof *p);
    if (!p) return -1;
    in->search_path = p;
    if (!(p[in->npath] = strdup(dir))) return -1;
    in->npath++;
    return 0;
}

static bool is_dir(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* A copy of the directory part of `path` ("." when it has none). */
static char *dir_of(const char *path) {
    const char *slash = strrchr(path, '/');
    if (!slash) return strdup(".");
    if (slash == path) return strdup("/");
    return strndup(path, (size_t)(slash - path));
}

static int add_stdlib_dirs(ax_interp *in, const char *exe_path) {
    char exe[PATH_MAX];
    bool found = false;
    if (exe_path && strchr(exe_path, '/') && realpath(exe_path, exe)) found = true;
    if (!found) {
        ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
        if (n > 0) {
            exe[n] = 0;
            found = true;
        }
    }
    if (found) {
        char *dir = dir_of(exe);
        if (!dir) return -1;
        /* build/ax -> ../stdlib; build/tests/x -> ../../stdlib; installed bin/ax -> ../share */
        const char *rel[] = {"/../stdlib", "/../../stdlib", "/stdlib", "/../share/ax/stdlib"};
        for (size_t i = 0; i < sizeof rel / sizeof rel[0]; i++) {
            char cand[PATH_MAX + 32], real[PATH_MAX];
            snprintf(cand, sizeof cand, "%s%s", dir, rel[i]);
            if (is_dir(cand) && realpath(cand, real) && path_add(in, real) < 0) {
                free(dir);
                return -1;
            }
        }
        free(dir);
    }
#ifdef AX_STDLIB_DIR
    if (is_dir(AX_STDLIB_DIR) && path_add(in, AX_STDLIB_DIR) < 0) return -1;
#endif
    return 0;
}

static int add_env_path(ax_interp *in) {
    const char *env = getenv("AX_PATH");
    if (!env) return 0;
    char *copy = strdup(env);
    if (!copy) return -1;
    int rc = 0;
    char *save = NULL;
    for (char *tok = strtok_r(copy, ":", &save); tok && rc == 0; tok = strtok_r(NULL, ":", &save))
        rc = path_add(in, tok);
    free(copy);
    return rc;
}

/* ---- running source ---- */

char *ax_read_stream(FILE *f, ax_ctx *cx, size_t *len) {
    char *buf = NULL;
    size_t n = 0, cap = 0;
    for (;;) {
        if (ax_ctx_interrupted(cx)) {
            errno = EINTR;
            break;
        }
        if (n + 65536 + 1 > cap) {
            cap = cap ? 2 * cap : 65536 + 1;
            char *b = realloc(buf, cap);
            if (!b) {
                errno = ENOMEM;
                break;
            }
            buf = b;
        }
        size_t got = fread(buf + n, 1, cap - n - 1, f);
        /* a program stops being one at its first NUL byte (the parser reports it): reading
         * on would only hold up `:load /dev/zero` */
        bool nul = memchr(buf + n, 0, got) != NULL;
        n += got;
        if (nul || (got == 0 && feof(f))) {
            buf[n] = 0;
            *len = n;
            return buf;
        }
        if (got == 0 && ferror(f)) {
            if (errno != EINTR) break;
            clearerr(f); /* a signal: go on unless it was Ctrl-C */
        }
    }
    int saved = errno ? errno : EIO;
    free(buf);
    errno = saved;
    return NULL;
}

char *ax_read_file(const char *path, ax_ctx *cx, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *text = ax_read_stream(f, cx, len);
    int saved = errno;
    fclose(f);
    errno = saved;
    return text;
}

/* A failed read: KeyboardInterrupt for Ctrl-C, MemoryError, else IOError saying what could
 * not be read. */
static void *read_error(ax_interp *in, const char *what, const char *path) {
    if (errno == EINTR && ax_ctx_check_interrupt(in->cx)) return NULL;
    if (errno == ENOMEM) return ax_error_oom(in->cx);
    return ax_error(in->cx, AX_ERR_IO, "cannot read %s%s: %s", what, path, strerror(errno));
}

/* Parses and runs source[0, len) in `module`. */
static int run_in_module(ax_interp *in, ax_module *module, const char *source, size_t len,
                         const char *file, FILE *echo) {
    ax_program *p = ax_parse_n(in->cx, source, len, file);
    if (!p) {
        if (!ax_error_pending(in->cx)) ax_error(in->cx, AX_ERR_SYNTAX, "cannot parse %s", file);
        return -1;
    }
    struct ax_program_ref *ref = ax_program_ref_new(p);
    if (!ref) return ax_error_oom(in->cx), -1;
    int rc = ax_check_program(in, p);
    if (rc == 0) rc = ax_eval_program(in, ref, module, echo);
    ax_program_ref_release(ref);
    return rc;
}

static bool is_pseudo_file(const char *file) {
    return !file || file[0] == '<';
}

int ax_interp_run_n(ax_interp *in, const char *source, size_t len, const char *file, FILE *echo) {
    ax_interp_impl *ii = impl(in);
    if (!ii->main_dir && !is_pseudo_file(file)) ii->main_dir = dir_of(file);
    return run_in_module(in, in->main, source, len, file ? file : "<string>", echo);
}

int ax_interp_run(ax_interp *in, const char *source, const char *file, FILE *echo) {
    return ax_interp_run_n(in, source, source ? strlen(source) : 0, file, echo);
}

int ax_interp_run_file(ax_interp *in, const char *path, FILE *echo) {
    size_t len;
    char *source = ax_read_file(path, in->cx, &len);
    if (!source) return read_error(in, "", path), -1;
    int rc = ax_interp_run_n(in, source, len, path, echo);
    free(source);
    return rc;
}

ax_value *ax_interp_eval_expr(ax_interp *in, const char *source, const char *file) {
    ax_program *p = ax_parse(in->cx, source, file ? file : "<string>");
    if (!p) {
        if (!ax_error_pending(in->cx)) ax_error(in->cx, AX_ERR_SYNTAX, "cannot parse the input");
        return NULL;
    }
    if (p->stmts.n != 1 || p->stmts.items[0]->kind != AX_N_EXPR) {
        ax_error(in->cx, AX_ERR_SYNTAX, "expected one expression");
        if (p->stmts.n > 0) ax_error_set_span(in->cx, p->stmts.items[0]->span, p->file, p->source);
        ax_program_free(p);
        return NULL;
    }
    struct ax_program_ref *ref = ax_program_ref_new(p);
    if (!ref) return ax_error_oom(in->cx);
    ax_value *result = ax_eval_expr_in_module(in, ref, p->stmts.items[0]->a, in->main);
    ax_program_ref_release(ref);
    return result;
}

/* ---- imports ---- */

static ax_module *find_loaded(ax_interp *in, const char *name) {
    for (int i = 0; i < in->nmodules; i++)
        if (!in->modules[i]->failed && strcmp(in->modules[i]->name, name) == 0)
            return in->modules[i];
    return NULL;
}

void ax_interp_offer_libs(ax_interp *in, const ax_lib *libs) {
    impl(in)->libs = libs;
}

const ax_lib *ax_interp_find_lib(const ax_interp *in, const char *name) {
    const ax_lib *lib = impl((ax_interp *)in)->libs;
    for (; lib && lib->name; lib++)
        if (strcmp(lib->name, name) == 0) return lib;
    return NULL;
}

void ax_interp_offer_lazy_builtins(ax_interp *in, const char *lib) {
    impl(in)->lazy_builtins = lib;
}

ax_value *ax_interp_lookup_lazy(ax_interp *in, const char *name) {
    ax_interp_impl *ii = impl(in);
    if (!ii->lazy_builtins || ii->opening_lazy || name[0] == '_') return NULL;
    ii->opening_lazy = true;
    ax_value *lib = ax_interp_import_value(in, ii->lazy_builtins);
    ii->opening_lazy = false;
    ax_value *v = lib && lib->kind == AX_V_MODULE ? ax_module_lookup(lib->module, name) : NULL;
    if (v) ax_interp_define_builtin_take(in, name, ax_value_retain(v));
    if (lib) ax_value_release(lib);
    return v ? ax_module_lookup(in->builtins, name) : NULL;
}

void ax_interp_each_lazy_builtin(ax_interp *in, void (*fn)(void *arg, const char *name),
                                 void *arg) {
    ax_interp_impl *ii = impl(in);
    if (!ii->lazy_builtins || ii->opening_lazy) return;
    ii->opening_lazy = true;
    ax_value *lib = ax_interp_import_value(in, ii->lazy_builtins);
    ii->opening_lazy = false;
    if (lib && lib->kind == AX_V_MODULE)
        for (int i = 0; i < lib->module->n; i++)
            if (lib->module->entries[i].name[0] != '_') fn(arg, lib->module->entries[i].name);
    if (lib) ax_value_release(lib);
    ax_error_clear(in->cx);
}

/* The value of an offered library, opened on first use; NULL (no error) when `name` is not
 * offered. */
static ax_value *open_lib(ax_interp *in, const char *name) {
    ax_interp_impl *ii = impl(in);
    ax_value *v = ii->opened ? ax_module_lookup(ii->opened, name) : NULL;
    if (v) return ax_value_retain(v);
    const ax_lib *lib = ax_interp_find_lib(in, name);
    if (!lib) return NULL;
    if (!ii->opened && !(ii->opened = ax_module_new("<libraries>"))) return ax_error_oom(in->cx);
    if (!(v = lib->open(in, lib))) {
        if (!ax_error_pending(in->cx))
            ax_error(in->cx, AX_ERR_IMPORT, "the library '%s' did not open", name);
        return NULL;
    }
    if (ax_module_set_take(ii->opened, name, ax_value_retain(v)) < 0) {
        ax_value_release(v);
        return ax_error_oom(in->cx);
    }
    return v;
}

static ax_module *load_module_file(ax_interp *in, const char *name, const char *path) {
    size_t len;
    char *source = ax_read_file(path, in->cx, &len);
    if (!source) {
        char what[256];
        snprintf(what, sizeof what, "module '%s' from ", name);
        return read_error(in, what, path);
    }
    ax_module *m = ax_interp_new_module(in, name);
    if (!m || !(m->file = strdup(path))) {
        free(source);
        return m ? ax_error_oom(in->cx) : NULL;
    }
    /* Registered before running so that an import cycle finds the partial module. */
    int rc = run_in_module(in, m, source, len, path, NULL);
    free(source);
    if (rc < 0) {
        m->failed = true; /* stays alive: closures created so far point at it */
        return NULL;
    }
    return m;
}

/* Finds name.ax (dots as directories) in dirs[0, nd): loads it, or says where it looked. */
static ax_module *load_from_dirs(ax_interp *in, const char *name, const char **dirs, int nd) {
    char rel[PATH_MAX];
    snprintf(rel, sizeof rel, "%s.ax", name);
    for (char *p = rel; *p && p < rel + strlen(name); p++)
        if (*p == '.') *p = '/';
    ax_strbuf tried;
    ax_strbuf_init(&tried);
    for (int i = 0; i < nd; i++) {
        char path[PATH_MAX * 2];
        snprintf(path, sizeof path, "%s/%s", dirs[i], rel);
        if (access(path, R_OK) == 0) {
            ax_strbuf_free(&tried);
            return load_module_file(in, name, path);
        }
        ax_strbuf_appendf(&tried, "%s%s", i ? ", " : "", path);
    }
    ax_error(in->cx, AX_ERR_IMPORT, "no module named '%s' (looked for %s)", name,
             tried.data ? tried.data : rel);
    ax_strbuf_free(&tried);
    return NULL;
}

ax_module *ax_interp_load_stdlib(ax_interp *in, const char *name) {
    ax_module *m = find_loaded(in, name);
    if (m) return m;
    ax_interp_impl *ii = impl(in);
    const char **dirs = (const char **)in->search_path + ii->npath_env;
    return load_from_dirs(in, name, dirs, in->npath - ii->npath_env);
}

ax_module *ax_interp_import(ax_interp *in, const char *name) {
    ax_module *m = find_loaded(in, name);
    if (m) return m;
    ax_value *lib = open_lib(in, name);
    if (lib) {
        m = lib->kind == AX_V_MODULE ? lib->module : NULL;
        ax_value_release(lib);
        return m ? m : ax_error(in->cx, AX_ERR_IMPORT, "'%s' is a namespace, not a module", name);
    }
    if (ax_error_pending(in->cx)) return NULL;
    /* AX_PATH entries, the script's directory, then stdlib/ (in->search_path order, with the
     * script's directory after the AX_PATH entries). */
    ax_interp_impl *ii = impl(in);
    const char *dirs[256];
    int nd = 0;
    for (int i = 0; i < ii->npath_env && nd < 250; i++) dirs[nd++] = in->search_path[i];
    dirs[nd++] = ii->main_dir ? ii->main_dir : ".";
    for (int i = ii->npath_env; i < in->npath && nd < 255; i++) dirs[nd++] = in->search_path[i];
    return load_from_dirs(in, name, dirs, nd);
}

ax_value *ax_interp_import_value(ax_interp *in, const char *name) {
    ax_value *v = open_lib(in, name);
    if (v || ax_error_pending(in->cx)) return v;
    ax_module *m = ax_interp_import(in, name);
    if (!m) return NULL;
    return (v = ax_value_module(m)) ? v : ax_error_oom(in->cx);
}

/* ---- calls ---- */

/* The stack of the calling thread: cached, since finding it reads /proc for the main thread. */
static char *stack_low(ax_interp_impl *ii) {
    unsigned long self = (unsigned long)pthread_self();
    if (ii->stack_lo && ii->stack_thread == self) return ii->stack_lo;
    pthread_attr_t attr;
    void *addr = NULL;
    size_t size = 0;
    if (pthread_getattr_np(pthread_self(), &attr) == 0) {
        pthread_attr_getstack(&attr, &addr, &size);
        pthread_attr_destroy(&attr);
    }
    ii->stack_thread = self;
    ii->stack_lo = addr;
    return ii->stack_lo;
}

bool ax_call_enter(ax_interp *in) {
    ax_interp_impl *ii = impl(in);
    if (ax_ctx_check_interrupt(in->cx)) return false;
    char *lo = stack_low(ii), *here = __builtin_frame_address(0);
    if (in->depth >= ii->max_depth || (lo && here < lo + STACK_RESERVE)) {
        ax_error(in->cx, AX_ERR_RECURSION,
                 "maximum recursion depth exceeded (%d nested calls); ax functions loop with "
                 "`for`, fori_loop or scan",
                 in->depth);
        return false;
    }
    in->depth++;
    return true;
}

void ax_call_leave(ax_interp *in) {
    in->depth--;
}

ax_value *ax_call(ax_interp *in, ax_value *fn, const ax_args *args) {
    char d[128];
    switch (fn->kind) {
    case AX_V_FUNC:
    case AX_V_BUILTIN:
    case AX_V_OBJECT:
        break;
    case AX_V_DTYPE: /* f32(x), jnp.int32(3) */
        if (in->arrays) return in->arrays->call_dtype(in, fn->dtype, args);
        return ax_error(in->cx, AX_ERR_TYPE, "calling a dtype needs the array library");
    default:
        ax_value_describe(d, sizeof d, fn);
        return ax_error(in->cx, AX_ERR_TYPE, "%s is not callable", d);
    }
    if (fn->kind == AX_V_OBJECT && !fn->obj.type->call)
        return ax_error(in->cx, AX_ERR_TYPE, "a %s object is not callable", fn->obj.type->name);
    if (!ax_call_enter(in)) return NULL;
    ax_value *r;
    if (fn->kind == AX_V_FUNC)
        r = ax_call_closure(in, fn, args);
    else if (fn->kind == AX_V_BUILTIN)
        r = fn->builtin->fn(in, fn, args);
    else
        r = fn->obj.type->call(in, fn, args);
    ax_call_leave(in);
    if (!r && !ax_error_pending(in->cx)) {
        ax_value_describe(d, sizeof d, fn);
        ax_error(in->cx, AX_ERR_RUNTIME, "%s failed without saying why", d);
    }
    return r;
}

ax_value *ax_call1(ax_interp *in, ax_value *fn, ax_value *arg) {
    ax_value *pos[1] = {arg};
    ax_args args = {.n = 1, .pos = pos};
    return ax_call(in, fn, &args);
}

/* ---- attributes ---- */

static ax_value *dict_method(ax_interp *in, ax_value *self, const ax_args *args) {
    ax_value *d = self->builtin->data;
    const char *name = self->builtin->name;
    if (strcmp(name, "get") == 0) {
        if (!ax_args_check(in, args, "get", 2, NULL)) return NULL;
        ax_value *key = ax_arg(args, 0, NULL), *dflt = ax_arg(args, 1, NULL);
        if (!key) return ax_error(in->cx, AX_ERR_TYPE, "dict.get() needs a key");
        if (!ax_dict_key_check(in, key)) return NULL;
        ax_value *v = ax_dict_lookup(d, key);
        return ax_value_retain(v ? v : dflt ? dflt : ax_none());
    }
    if (!ax_args_check(in, args, name, 0, NULL)) return NULL;
    ax_value **items = malloc((size_t)(d->n ? d->n : 1) * sizeof *items);
    if (!items) return ax_error_oom(in->cx);
    int n = 0;
    for (int i = 0; i < d->n; i++) {
        ax_value *item;
        if (strcmp(name, "keys") == 0) {
            item = ax_value_retain(d->keys[i]);
        } else if (strcmp(name, "values") == 0) {
            item = ax_value_retain(d->items[i]);
        } else {
            ax_value *pair[2] = {ax_value_retain(d->keys[i]), ax_value_retain(d->items[i])};
            item = ax_value_tuple(2, pair);
        }
        if (!item) break;
        items[n++] = item;
    }
    ax_value *r = n == d->n ? ax_value_list(n, items) : NULL;
    if (n != d->n)
        for (int i = 0; i < n; i++) ax_value_release(items[i]);
    free(items);
    return r ? r : ax_error_oom(in->cx);
}

static ax_value *attr_error(ax_interp *in, ax_value *obj, const char *name) {
    char d[128];
    ax_value_describe(d, sizeof d, obj);
    return ax_error(in->cx, AX_ERR_ATTRIBUTE, "%s has no attribute '%s'", d, name);
}

static ax_value *module_attr(ax_interp *in, ax_module *m, const char *name) {
    ax_value *v = ax_module_lookup(m, name);
    if (v) return ax_value_retain(v);
    /* a submodule offered as a library (jax.numpy, jax.scipy.special) is opened on first use */
    char sub[512];
    if (snprintf(sub, sizeof sub, "%s.%s", m->name, name) < (int)sizeof sub &&
        ax_interp_find_lib(in, sub))
        return ax_interp_import_value(in, sub);
    ax_near_miss nm = {.target = name};
    for (int i = 0; i < m->n; i++) ax_near_miss_offer(&nm, m->entries[i].name);
    if (nm.best)
        return ax_error(in->cx, AX_ERR_ATTRIBUTE,
                        "module '%s' has no attribute '%s'; did you mean '%s'?", m->name, name,
                        nm.best);
    return ax_error(in->cx, AX_ERR_ATTRIBUTE, "module '%s' has no attribute '%s'", m->name, name);
}

static ax_value *dict_attr(ax_interp *in, ax_value *d, const char *name) {
    ax_value *v = ax_dict_get(d, name);
    if (v) return ax_value_retain(v);
    static const char *const methods[] = {"keys", "values", "items", "get"};
    for (size_t i = 0; i < sizeof methods / sizeof methods[0]; i++)
        if (strcmp(name, methods[i]) == 0) {
            ax_value *m = ax_value_builtin(name, "a dict method", dict_method, ax_value_retain(d));
            return m ? m : ax_error_oom(in->cx);
        }
    ax_near_miss nm = {.target = name};
    for (int i = 0; i < d->n; i++)
        if (d->keys[i]->kind == AX_V_STR) ax_near_miss_offer(&nm, d->keys[i]->str);
    if (nm.best)
        return ax_error(in->cx, AX_ERR_ATTRIBUTE,
                        "the dict has no key or attribute '%s'; did you mean '%s'?", name, nm.best);
    return ax_error(in->cx, AX_ERR_ATTRIBUTE, "the dict has no key or attribute '%s'", name);
}

ax_value *ax_value_or_oom(ax_interp *in, ax_value *v) {
    return v ? v : ax_error_oom(in->cx);
}

ax_value *ax_value_str_take_buf(ax_interp *in, ax_strbuf *s) {
    ax_value *v = s->failed ? NULL : ax_value_str(s->data ? s->data : "");
    ax_strbuf_free(s);
    return ax_value_or_oom(in, v);
}

/* The object whose attributes a builtin shows as its own (see ax_object_type.function_attrs),
 * or NULL. */
static ax_value *function_attrs_of(const ax_value *fn) {
    ax_value *d = fn->kind == AX_V_BUILTIN ? fn->builtin->data : NULL;
    return d && d->kind == AX_V_OBJECT && d->obj.type->function_attrs ? d : NULL;
}

ax_value *ax_getattr(ax_interp *in, ax_value *obj, const char *name) {
    ax_value *r = NULL;
    switch (obj->kind) {
    case AX_V_MODULE:
        return module_attr(in, obj->module, name);
    case AX_V_DICT:
        return dict_attr(in, obj, name);
    case AX_V_ARRAY:
        r = in->arrays ? in->arrays->getattr(in, obj, name) : NULL;
        if (!r && !ax_error_pending(in->cx)) attr_error(in, obj, name);
        return r;
    case AX_V_OBJECT:
        if (obj->obj.type->getattr) r = obj->obj.type->getattr(in, obj, name);
        if (!r && !ax_error_pending(in->cx)) attr_error(in, obj, name);
        return r;
    case AX_V_STR:
        r = ax_string_getattr(in, obj, name);
        return r || ax_error_pending(in->cx) ? r : attr_error(in, obj, name);
    case AX_V_SET:
        r = ax_set_getattr(in, obj, name);
        return r || ax_error_pending(in->cx) ? r : attr_error(in, obj, name);
    case AX_V_LIST:
    case AX_V_TUPLE:
    case AX_V_SLICE:
        r = ax_sequence_getattr(in, obj, name);
        return r || ax_error_pending(in->cx) ? r : attr_error(in, obj, name);
    case AX_V_DTYPE:
        if (strcmp(name, "name") == 0)
            r = ax_value_str(ax_dtype_name(obj->dtype));
        else if (strcmp(name, "itemsize") == 0)
            return ax_value_int(in, (int64_t)ax_dtype_size(obj->dtype));
        else
            return attr_error(in, obj, name);
        return r ? r : ax_error_oom(in->cx);
    case AX_V_FUNC:
    case AX_V_BUILTIN:
        if (strcmp(name, "__name__") == 0) {
            r = ax_value_str(obj->kind == AX_V_FUNC ? obj->fn->name : obj->builtin->name);
            return r ? r : ax_error_oom(in->cx);
        }
        ax_value *attrs = function_attrs_of(obj);
        if (attrs && attrs->obj.type->getattr) r = attrs->obj.type->getattr(in, attrs, name);
        return r || ax_error_pending(in->cx) ? r : attr_error(in, obj, name);
    default:
        return attr_error(in, obj, name);
    }
}

void ax_value_each_attr(ax_interp *in, ax_value *v, void (*fn)(void *arg, const char *name),
                        void *arg) {
    switch (v->kind) {
    case AX_V_MODULE: {
        for (int i = 0; i < v->module->n; i++) fn(arg, v->module->entries[i].name);
        size_t len = strlen(v->module->name); /* and its submodules, opened or not */
        for (const ax_lib *lib = impl(in)->libs; lib && lib->name; lib++)
            if (!strncmp(lib->name, v->module->name, len) && lib->name[len] == '.' &&
                !strchr(lib->name + len + 1, '.') &&
                !ax_module_lookup(v->module, lib->name + len + 1))
                fn(arg, lib->name + len + 1);
        break;
    }
    case AX_V_DICT:
        for (int i = 0; i < v->n; i++)
            if (v->keys[i]->kind == AX_V_STR) fn(arg, v->keys[i]->str);
        fn(arg, "get");
        fn(arg, "items");
        fn(arg, "keys");
        fn(arg, "values");
        break;
    case AX_V_ARRAY:
        if (in->arrays) in->arrays->each_attr(fn, arg);
        break;
    case AX_V_SET:
        ax_set_each_attr(fn, arg);
        break;
    case AX_V_STR:
        ax_string_each_attr(fn, arg);
        break;
    case AX_V_DTYPE:
        fn(arg, "itemsize");
        fn(arg, "name");
        break;
    case AX_V_OBJECT:
        if (v->obj.type->each_attr) v->obj.type->each_attr(in, v, fn, arg);
        break;
    case AX_V_LIST:
    case AX_V_TUPLE:
    case AX_V_SLICE:
        ax_sequence_each_attr(v, fn, arg);
        break;
    case AX_V_FUNC:
    case AX_V_BUILTIN: {
        fn(arg, "__name__");
        ax_value *attrs = function_attrs_of(v);
        if (attrs && attrs->obj.type->each_attr) attrs->obj.type->each_attr(in, attrs, fn, arg);
        break;
    }
    default:
        break;
    }
}

/* ---- names ---- */

void ax_interp_define_builtin_take(ax_interp *in, const char *name, ax_value *v) {
    if (!v) return;
    if (ax_module_set_take(in->builtins, name, v) < 0) ax_error_oom(in->cx);
}

ax_value *ax_interp_lookup(ax_interp *in, const char *name) {
    ax_value *v = ax_module_lookup(in->main, name);
    return v ? v : ax_module_lookup(in->builtins, name);
}

void ax_interp_each_name(ax_interp *in,
                         void (*fn)(void *arg, const char *name, ax_value *v, bool is_builtin),
                         void *arg) {
    for (int i = 0; i < in->main->n; i++)
        fn(arg, in->main->entries[i].name, in->main->entries[i].val, false);
    for (int i = 0; i < in->builtins->n; i++)
        fn(arg, in->builtins->entries[i].name, in->builtins->entries[i].val, true);
}

void ax_interp_reset(ax_interp *in) {
    ax_module_clear(in->main);
}

/* ---- life cycle ---- */

int ax_interp_run_stdlib(ax_interp *in, ax_module *module, const char *file) {
    for (int i = 0; i < in->npath; i++) {
        char path[PATH_MAX * 2];
        snprintf(path, sizeof path, "%s/%s", in->search_path[i], file);
        if (access(path, R_OK) != 0) continue;
        size_t len;
        char *source = ax_read_file(path, in->cx, &len);
        if (!source) return read_error(in, "", path), -1;
        int rc = run_in_module(in, module, source, len, path, NULL);
        free(source);
        free(in->stdlib_dir);
        in->stdlib_dir = strdup(in->search_path[i]);
        return rc;
    }
    return 0; /* no such file: nothing to load */
}

ax_interp *ax_interp_new(ax_ctx *cx, const char *exe_path) {
    ax_interp_impl *ii = calloc(1, sizeof *ii);
    if (!ii) return ax_error_oom(cx);
    ax_interp *in = &ii->pub;
    in->cx = cx;
    ii->max_depth = MAX_CALL_DEPTH;
    in->main = ax_module_new("__main__");
    in->builtins = ax_module_new("builtins");
    bool ok = in->main && in->builtins && add_env_path(in) == 0;
    ii->npath_env = in->npath;
    ok = ok && add_stdlib_dirs(in, exe_path) == 0;
    if (!ok) {
        ax_error_oom(cx);
        ax_interp_free(in);
        return NULL;
    }
    return in;
}

void ax_interp_free(ax_interp *in) {
    if (!in) return;
    ax_interp_impl *ii = impl(in);
    if (in->free_key_uses) in->free_key_uses(in->key_uses);
    free(in->stdlib_dir);
    /* Values first (closures point at modules), then the modules themselves. */
    ax_module_free(ii->opened);
    if (in->main) ax_module_clear(in->main);
    for (int i = 0; i < in->nmodules; i++) ax_module_clear(in->modules[i]);
    if (in->builtins) ax_module_clear(in->builtins);
    ax_module_free(in->main);
    ax_module_free(in->builtins);
    for (int i = 0; i < in->nmodules; i++) ax_module_free(in->modules[i]);
    free(in->modules);
    for (int i = 0; i < in->npath; i++) free(in->search_path[i]);
    free(in->search_path);
    free(ii->main_dir);
    free(ii);
}

/* The command line: `ax` (REPL, or a program on stdin), `ax FILE.ax [args]`, `ax -e CODE`.
 * Exit status: 0; 1 when the program fails (the error is on stderr); 2 on bad usage. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../runtime/context.h"
#include "../runtime/device.h"
#include "../runtime/format.h"
#include "../stdlib/libs.h"
#include "../lang/interp.h"
#include "notebook.h"
#include "repl.h"

#ifndef AX_VERSION
#define AX_VERSION "0.1.0"
#endif

enum { EXIT_PROGRAM_ERROR = 1, EXIT_USAGE = 2 };

static const char usage_text[] =
    "usage: ax [options] [FILE.ax [args...]]\n"
    "       ax [options] -e CODE [args...]\n"
    "       ax notebook [options] FILE.md   (run a Markdown notebook: ax notebook --help)\n"
    "\n"
    "With no FILE: an interactive session when stdin is a terminal, else stdin is read as a\n"
    "program. FILE '-' also reads the program from stdin.\n"
    "\n"
    "options:\n"
    "  -e CODE             run CODE as a program\n"
    "  -i                  the REPL, after FILE or CODE if given; it reads stdin as a session\n"
    "                      (echoing values, :commands) even when stdin is not a terminal\n"
    "  --x64               default float f64 and int i64 (also: environment AX_X64=1)\n"
    "  --allow-key-reuse   do not report a PRNG key used twice\n"
    "  --devices N         N CPU devices for pmap (default: one per core; also AX_DEVICES=N)\n"
    "  --version           print the version and exit\n"
    "  -h, --help          print this help and exit\n";

typedef struct options {
    const char *code; /* -e */
    const char *file; /* FILE, or NULL */
    bool force_repl;  /* -i */
    bool x64;
    bool allow_key_reuse;
    int devices; /* --devices N, or 0 */
    int nargs; /* program arguments: argv[0] is the file (or "-e", "-") */
    char **args;
} options;

static int usage_error(const char *fmt, const char *what) {
    fputs("ax: ", stderr);
    fprintf(stderr, fmt, what);
    fputs(" (try 'ax --help')\n", stderr);
    return EXIT_USAGE;
}

/* Fills *o from the command line. Returns -1 to go on, or an exit status. */
static int parse_options(int argc, char **argv, options *o) {
    const char *x64 = getenv("AX_X64");
    o->x64 = x64 && *x64 && strcmp(x64, "0") != 0;
    int i = 1;
    for (; i < argc && argv[i][0] == '-' && argv[i][1]; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--")) {
            i++;
            break;
        } else if (!strcmp(a, "-e")) {
            if (i + 1 >= argc) return usage_error("%s needs an argument", a);
            o->code = argv[++i];
            break; /* what follows is the program's arguments */
        } else if (!strcmp(a, "-i")) {
            o->force_repl = true;
        } else if (!strcmp(a, "--x64")) {
            o->x64 = true;
        } else if (!strcmp(a, "--allow-key-reuse")) {
            o->allow_key_reuse = true;
        } else if (!strcmp(a, "--devices")) {
            char *end = NULL;
            long n = i + 1 < argc ? strtol(argv[i + 1], &end, 10) : 0;
            if (i + 1 >= argc || *end || n < 1 || n > 1024)
                return usage_error("%s needs a number of devices from 1 to 1024", a);
            o->devices = (int)n;
            i++;
        } else if (!strcmp(a, "--version") || !strcmp(a, "-V")) {
            printf("ax %s\n", AX_VERSION);
            return 0;
        } else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(usage_text, stdout);
            return 0;
        } else {
            return usage_error("unknown option '%s'", a);
        }
    }
    if (o->code) {
        o->args = argv + i; /* argv[i] is CODE itself: it plays the script's part */
        o->nargs = argc - i;
    } else if (i < argc) {
        o->file = argv[i];
        o->args = argv + i;
        o->nargs = argc - i;
    }
    return -1;
}

/* `argv` for the program, like Python's sys.argv: the script, then its arguments. Defined
 * only when the builtins do not define the name themselves. */
static void define_argv(ax_interp *in, const options *o, bool from_stdin) {
    if (ax_interp_lookup(in, "argv")) return;
    static char *const stdin_args[] = {"-"};
    char *const *args = o->nargs == 0 && from_stdin ? stdin_args : o->args;
    int n = o->nargs == 0 && from_stdin ? 1 : o->nargs;
    ax_value **items = n ? calloc((size_t)n, sizeof *items) : NULL;
    if (n && !items) return;
    for (int i = 0; i < n; i++) {
        items[i] = ax_value_str(i == 0 && o->code ? "-e" : args[i]);
        if (!items[i]) {
            while (i-- > 0) ax_value_release(items[i]);
            free(items);
            ax_error_clear(in->cx);
            return;
        }
    }
    ax_value *list = ax_value_list(n, items);
    free(items);
    if (list) ax_interp_define_builtin_take(in, "argv", list);
    ax_error_clear(in->cx);
}

/* Before the runtime context exists: the same report as ax_error_print's. */
static int out_of_memory(void) {
    fputs("error[MemoryError]: out of memory\n", stderr);
    return EXIT_PROGRAM_ERROR;
}

static int run_source(ax_interp *in, const char *src, size_t len, const char *file) {
    int rc = ax_interp_run_n(in, src, len, file, NULL);
    fflush(stdout);
    if (rc == 0) return 0;
    if (!ax_error_pending(in->cx)) ax_error(in->cx, AX_ERR_RUNTIME, "the program failed");
    ax_error_print(in->cx, stderr);
    return EXIT_PROGRAM_ERROR;
}

static int run(const options *o, const char *exe) {
    /* Read the program first: a missing file is a usage error, reported before start-up. */
    char *src = NULL;
    size_t len = 0;
    const char *name = "<string>";
    bool from_stdin =
        o->file ? !strcmp(o->file, "-") : !o->code && !o->force_repl && !isatty(STDIN_FILENO);
    if (o->file && !from_stdin) {
        src = ax_read_file(o->file, NULL, &len);
        if (!src && errno == ENOMEM) return out_of_memory();
        if (!src) {
            fprintf(stderr, "ax: cannot read '%s': %s\n", o->file, strerror(errno));
            return EXIT_USAGE;
        }
        name = o->file;
    } else if (from_stdin) {
        src = ax_read_stream(stdin, NULL, &len);
        if (!src && errno == ENOMEM) return out_of_memory();
        if (!src) {
            fprintf(stderr, "ax: cannot read the program from stdin: %s\n", strerror(errno));
            return EXIT_PROGRAM_ERROR;
        }
        name = "<stdin>";
    }

    ax_ctx *cx = ax_ctx_new();
    if (!cx) {
        free(src);
        return out_of_memory();
    }
    cx->x64 = o->x64;
    cx->ndevices = o->devices;
    int status = 0;
    ax_interp *in = ax_interp_new(cx, exe);
    if (in && ax_libs_open(in) < 0) {
        ax_interp_free(in);
        in = NULL;
    }
    if (!in) {
        if (!ax_error_pending(cx)) ax_error(cx, AX_ERR_RUNTIME, "the interpreter did not start");
        ax_error_print(cx, stderr);
        status = EXIT_PROGRAM_ERROR;
    } else {
        in->allow_key_reuse = o->allow_key_reuse;
        define_argv(in, o, from_stdin);
        if (src || o->code)
            status = run_source(in, src ? src : o->code, src ? len : strlen(o->code), name);
        if (o->force_repl || (!src && !o->code)) {
            /* -i after a program: its definitions stay for the session, as with python -i */
            ax_repl_options ropt = {.interactive = isatty(STDIN_FILENO), .in = stdin};
            status = ax_repl_run(in, &ropt);
        }
        /* under mpirun: a failed process stops the others, which may wait for it */
        ax_distributed_finish(cx, status != 0);
        ax_interp_free(in);
    }
    ax_ctx_free(cx);
    free(src);
    return status;
}

int main(int argc, char **argv) {
    if (argc > 1 && !strcmp(argv[1], "notebook"))
        return ax_notebook_main(argc - 1, argv + 1, argv[0]);
    options o = {0};
    int status = parse_options(argc, argv, &o);
    if (status >= 0) return status;
    return run(&o, argv[0]);
}

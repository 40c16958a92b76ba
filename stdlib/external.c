/* Child processes and temporary files for the picture makers (see external.h). */
#include "external.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

const ax_ext_program ax_ext_gnuplot = {"gnuplot", "gnuplot-nox", "plots are drawn"};
const ax_ext_program ax_ext_dot = {"dot", "graphviz", "computation graphs are drawn"};

char *ax_ext_tmpdir_new(ax_ctx *cx) {
    const char *base = getenv("TMPDIR");
    if (!base || !*base) base = "/tmp";
    size_t n = strlen(base) + sizeof "/ax-XXXXXX";
    char *dir = malloc(n);
    if (!dir) return ax_error_oom(cx);
    snprintf(dir, n, "%s/ax-XXXXXX", base);
    if (!mkdtemp(dir)) {
        ax_error(cx, AX_ERR_IO, "cannot make a temporary directory in %s: %s", base,
                 strerror(errno));
        free(dir);
        return NULL;
    }
    return dir;
}

void ax_ext_tmpdir_free(char *dir) {
    if (!dir) return;
    DIR *d = opendir(dir);
    if (d) {
        int fd = dirfd(d);
        for (struct dirent *e; (e = readdir(d));)
            if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) unlinkat(fd, e->d_name, 0);
        closedir(d);
    }
    rmdir(dir);
    free(dir);
}

char *ax_ext_join(ax_ctx *cx, const char *dir, const char *name) {
    size_t n = strlen(dir) + strlen(name) + 2;
    char *path = malloc(n);
    if (!path) return ax_error_oom(cx);
    snprintf(path, n, "%s/%s", dir, name);
    return path;
}

int ax_ext_write_file(ax_ctx *cx, const char *path, const char *data, size_t len) {
    FILE *f = fopen(path, "wb");
    bool ok = f && fwrite(data, 1, len, f) == len;
    int saved = errno;
    if (f && fclose(f) != 0) ok = false, saved = errno;
    if (ok) return 0;
    ax_error(cx, AX_ERR_IO, "cannot write %s: %s", path, strerror(saved ? saved : EIO));
    return -1;
}

char *ax_ext_read_file(ax_ctx *cx, const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return ax_error(cx, AX_ERR_IO, "cannot read %s: %s", path, strerror(errno));
    size_t cap = 8192, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        n += fread(buf + n, 1, cap - n - 1, f);
        if (n < cap - 1) break;
        char *grown = realloc(buf, cap *= 2);
        if (!grown) free(buf);
        buf = grown;
    }
    bool failed = ferror(f);
    fclose(f);
    if (!buf) return ax_error_oom(cx);
    if (failed) {
        free(buf);
        return ax_error(cx, AX_ERR_IO, "cannot read %s", path);
    }
    buf[n] = 0;
    if (len) *len = n;
    return buf;
}

bool ax_ext_available(const ax_ext_program *prog) {
    const char *path = getenv("PATH");
    if (!path) path = "/usr/bin:/bin";
    char *copy = strdup(path), *save = NULL;
    bool found = false;
    for (char *dir = copy ? strtok_r(copy, ":", &save) : NULL; dir && !found;
         dir = strtok_r(NULL, ":", &save)) {
        char cand[PATH_MAX];
        snprintf(cand, sizeof cand, "%s/%s", *dir ? dir : ".", prog->name);
        found = access(cand, X_OK) == 0;
    }
    free(copy);
    return found;
}

static int missing_program(ax_ctx *cx, const ax_ext_program *prog) {
    ax_error(cx, AX_ERR_RUNTIME,
             "%s by the program '%s', which is not installed: install the Debian package %s "
             "(apt-get install %s)",
             prog->purpose, prog->name, prog->package, prog->package);
    return -1;
}

/* The last lines of the program's log, for the error message. */
static void quote_log(const char *log_path, char *out, size_t cap) {
    out[0] = 0;
    FILE *f = fopen(log_path, "rb");
    if (!f) return;
    char buf[4096];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    while (n && (buf[n - 1] == '\n' || buf[n - 1] == ' ')) buf[--n] = 0;
    size_t keep = cap - 1 < 600 ? cap - 1 : 600;
    const char *start = n > keep ? buf + n - keep : buf;
    memcpy(out, start, strlen(start) + 1 > cap ? cap - 1 : strlen(start) + 1);
    out[cap - 1] = 0;
}

static int wait_child(pid_t pid, int *status) {
    for (;;) {
        if (waitpid(pid, status, 0) == pid) return 0;
        if (errno != EINTR) return -1;
    }
}

int ax_ext_run(ax_ctx *cx, const ax_ext_program *prog, char *const argv[], const char *log_path) {
    posix_spawn_file_actions_t fa;
    if (posix_spawn_file_actions_init(&fa) != 0) return ax_error_oom(cx), -1;
    posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, log_path, O_WRONLY | O_CREAT | O_TRUNC,
                                     0600);
    posix_spawn_file_actions_adddup2(&fa, STDOUT_FILENO, STDERR_FILENO);
    pid_t pid;
    int rc = posix_spawnp(&pid, prog->name, &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc == ENOENT) return missing_program(cx, prog);
    if (rc != 0) {
        ax_error(cx, AX_ERR_RUNTIME, "cannot run %s: %s", prog->name, strerror(rc));
        return -1;
    }
    int status = 0;
    if (wait_child(pid, &status) != 0) {
        ax_error(cx, AX_ERR_RUNTIME, "lost track of %s: %s", prog->name, strerror(errno));
        return -1;
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return 0;
    char log[700];
    quote_log(log_path, log, sizeof log);
    if (WIFSIGNALED(status)) {
        ax_error(cx, WTERMSIG(status) == SIGINT ? AX_ERR_INTERRUPT : AX_ERR_RUNTIME,
                 "%s was stopped by signal %d%s%s", prog->name, WTERMSIG(status), *log ? ": " : "",
                 log);
    } else if (WEXITSTATUS(status) == 127) {
        return missing_program(cx, prog);
    } else {
        ax_error(cx, AX_ERR_RUNTIME, "%s failed (exit status %d)%s%s", prog->name,
                 WEXITSTATUS(status), *log ? ": " : "", log);
    }
    return -1;
}

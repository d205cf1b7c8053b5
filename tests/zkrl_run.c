/* Helpers of test_zkrlock.c: see zkrl_run.h. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/harness/zkr_test.h"
#include "tests/zkrl_run.h"

char zkrl_workdir[256];
const char *zkrl_tool = "zkr-lock";

const char *tool_bin(void)
{
    static char bin[256];
    int cache = strcmp(zkrl_tool, "zkr-cache") == 0;
    const char *b = getenv(cache ? "ZKR_CACHE_BIN" : "ZKR_LOCK_BIN");
    if (b && *b)
        return b;
    snprintf(bin, sizeof bin, "tools/%s", zkrl_tool);
    return bin;
}

/* A file name in the work directory (static buffer per slot 0..7). */
const char *wfile(const char *name)
{
    static char bufs[8][512];
    static int slot;
    char *b = bufs[slot++ % 8];
    snprintf(b, sizeof bufs[0], "%s/%s", zkrl_workdir, name);
    return b;
}

/* Start zkr-lock with args (NULL-terminated); stdout and stderr to the given
 * files (NULL: /dev/null). */
pid_t start_tool(const char *out, const char *err, const char *const *args)
{
    const char *argv[64];
    int n = 0;
    argv[n++] = tool_bin();
    for (int i = 0; args[i] && n < 63; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    pid_t pid = fork();
    if (pid == 0) {
        int in = open("/dev/null", O_RDONLY);
        int o = open(out ? out : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int e = open(err ? err : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (in < 0 || o < 0 || e < 0 || dup2(in, 0) < 0 || dup2(o, 1) < 0 || dup2(e, 2) < 0)
            _exit(120);
        close_range(3, ~0U, 0); /* zkr-lock starts with 0, 1 and 2 only */
        execv(argv[0], (char *const *)argv);
        _exit(121);
    }
    CU_ASSERT_FATAL(pid > 0);
    return pid;
}

int run_tool(const char *out, const char *err, const char *const *args)
{
    return zkt_wait_child(start_tool(out, err, args), RUN_MS);
}

/* Malloc'd contents of a file ("" if missing). */
char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    char *buf = calloc(1, 65536);
    CU_ASSERT_PTR_NOT_NULL_FATAL(buf);
    if (f) {
        size_t n = fread(buf, 1, 65535, f);
        buf[n] = '\0';
        fclose(f);
    }
    return buf;
}

int count_lines(const char *text)
{
    int n = 0;
    for (const char *p = text; *p; p++)
        n += *p == '\n';
    return n;
}

/* Lines of path starting with prefix. */
int lines_with(const char *path, const char *prefix)
{
    char *t = slurp(path);
    int n = 0;
    size_t pl = strlen(prefix);
    for (char *line = t; line && *line;) {
        if (strncmp(line, prefix, pl) == 0)
            n++;
        line = strchr(line, '\n');
        if (line)
            line++;
    }
    free(t);
    return n;
}

typedef struct file_want {
    const char *path, *prefix;
    int n;
} file_want_t;

static int file_has(void *arg)
{
    file_want_t *w = arg;
    return lines_with(w->path, w->prefix) >= w->n;
}

int wait_lines(const char *path, const char *prefix, int n, int ms)
{
    file_want_t w = {path, prefix, n};
    return zkt_wait_for(file_has, &w, ms);
}

int contains(const char *path, const char *needle)
{
    char *t = slurp(path);
    int r = strstr(t, needle) != NULL;
    free(t);
    return r;
}

/* stderr of a failure: exactly one line of the tool's own, "zkr-lock:
 * ..." containing what (the command may have written lines of its own). */
void assert_one_line(const char *err, const char *what)
{
    char prefix[64];
    snprintf(prefix, sizeof prefix, "%s: ", zkrl_tool);
    int ours = lines_with(err, prefix);
    char *t = slurp(err);
    CU_ASSERT_EQUAL(ours, 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(t, what));
    if (ours != 1 || !strstr(t, what))
        printf("\n    stderr was: %s", t);
    free(t);
}

void touch(const char *path)
{
    int fd = open(path, O_WRONLY | O_CREAT, 0644);
    CU_ASSERT_FATAL(fd >= 0);
    close(fd);
}

int children_of(const char *path)
{
    zhandle_t *zh = zkt_raw();
    int n = zkt_count_children(zh, path);
    zkt_raw_close(zh);
    return n;
}

void scene(scene_t *s, const char *name)
{
    zkt_path(name, s->path, sizeof s->path);
    snprintf(s->rec, sizeof s->rec, "%s/%s.rec", zkrl_workdir, name);
    snprintf(s->go, sizeof s->go, "%s/%s.go", zkrl_workdir, name);
    snprintf(s->err, sizeof s->err, "%s/%s.err", zkrl_workdir, name);
    unlink(s->rec);
    unlink(s->go);
}

/* zkr-lock [opts] PATH -- sh -c SCRIPT sh REC GO LABEL, on the test server
 * unless opts say --hosts. */
pid_t start_script(const scene_t *s, const char *const *opts, const char *script, const char *label,
                          const char *err)
{
    const char *args[48];
    int k = 0;
    args[k++] = "--hosts";
    args[k++] = zkt_hosts();
    for (int i = 0; opts && opts[i] && k < 36; i++)
        args[k++] = opts[i];
    const char *rest[] = {s->path, "--", "sh", "-c", script, "sh", s->rec, s->go, label, NULL};
    for (int i = 0; rest[i]; i++)
        args[k++] = rest[i];
    args[k] = NULL;
    return start_tool(NULL, err, args);
}

int read_listing(const char *path, listing_t *e, int max)
{
    char *t = slurp(path);
    int n = 0;
    for (char *line = strtok(t, "\n"); line; line = strtok(NULL, "\n"), n++) {
        if (n >= max || sscanf(line, "%15s %255s 0x%llx %lld", e[n].role, e[n].node, &e[n].session,
                               &e[n].token) != 4) {
            printf("\n    listing: %s", line);
            n = -1;
            break;
        }
    }
    free(t);
    return n;
}

int zkrl_server_port(void)
{
    const char *colon = strrchr(zkt_hosts(), ':');
    return colon ? atoi(colon + 1) : 2181;
}

int zkrl_suite_init(void)
{
    zoo_set_debug_level((ZooLogLevel)(getenv("ZKR_ZK_LOG") ? atoi(getenv("ZKR_ZK_LOG")) : 0));
    snprintf(zkrl_workdir, sizeof zkrl_workdir, "%s/zkrl-test.XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(zkrl_workdir))
        return 1;
    if (access(tool_bin(), X_OK) != 0) {
        fprintf(stderr, "%s: %s not found (run from the build directory)\n", zkrl_tool, tool_bin());
        return 1;
    }
    return 0;
}

int zkrl_suite_clean(void)
{
    char cmd[320];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", zkrl_workdir);
    return system(cmd) == 0 ? 0 : 1;
}

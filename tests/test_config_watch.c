/* examples/config_watch, run as a user runs it against the test server: a
 * service keeping its configuration in a zkr_cache_t.  The test changes
 * the settings with the raw C client while it runs and checks that each
 * change is told and applied with the right values, that a stalled
 * connection makes it say the configuration may be stale (and current
 * again after), that it stops cleanly on SIGTERM, SIGINT and after
 * --seconds, its --demo, and its usage errors.  The example runs in a
 * process group of its own, killed whole on every exit path.  Every wait
 * is bounded. */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/harness/zkproxy.h"
#include "tests/harness/zkr_test.h"

#define RUN_MS 60000  /* bound on one run */
#define WAIT_MS 20000 /* bound on a line to come */

static char out_file[256];

static const char *example_bin(void)
{
    static char bin[1024];
    const char *b = getenv("ZKR_BUILDDIR");
    snprintf(bin, sizeof bin, "%s/examples/config_watch", b && *b ? b : ".");
    return bin;
}

/* Start the example with args (NULL-terminated), stdout and stderr to
 * out_file, in a process group of its own. */
static pid_t start_example(const char *const *args)
{
    const char *argv[32];
    int n = 0;
    argv[n++] = example_bin();
    for (int i = 0; args[i] && n < 31; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    pid_t pid = fork();
    if (pid == 0) {
        setpgid(0, 0);
        int o = open(out_file, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (o < 0 || dup2(o, 1) < 0 || dup2(o, 2) < 0)
            _exit(120);
        execv(argv[0], (char *const *)argv);
        _exit(121);
    }
    CU_ASSERT_FATAL(pid > 0);
    setpgid(pid, pid);
    return pid;
}

/* Wait for it (bounded): its exit status, or -1 (killed at the bound). */
static int end_example(pid_t pid)
{
    int rc = zkt_wait_child(pid, RUN_MS);
    kill(-pid, SIGKILL); /* whatever is left of the group */
    return rc;
}

static int run_example(const char *const *args)
{
    return end_example(start_example(args));
}

static char *slurp_out(void)
{
    return zkt_slurp(out_file);
}

static int count_lines(const char *text, const char *line)
{
    int n = 0;
    size_t len = strlen(line);
    for (const char *p = text; *p;) {
        if (strncmp(p, line, len) == 0 && (p[len] == '\n' || p[len] == '\0'))
            n++;
        p = strchr(p, '\n');
        if (!p)
            break;
        p++;
    }
    return n;
}

typedef struct want {
    const char *line;
    int n;
} want_t;

static int has_lines(void *arg)
{
    want_t *w = arg;
    char *t = slurp_out();
    int ok = count_lines(t, w->line) >= w->n;
    free(t);
    return ok;
}

/* Wait for the n-th copy of a whole line; 1 if it came. */
static int wait_line_n(const char *line, int n)
{
    want_t w = {line, n};
    int ok = zkt_wait_for(has_lines, &w, WAIT_MS);
    if (!ok) {
        char *t = slurp_out();
        printf("\n    no line \"%s\" (#%d) in:\n%s", line, n, t);
        free(t);
    }
    return ok;
}

static int wait_line(const char *line)
{
    return wait_line_n(line, 1);
}

static void create(zhandle_t *zh, const char *path, const char *data)
{
    CU_ASSERT_EQUAL_FATAL(zoo_create(zh, path, data, (int)strlen(data), &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0), ZOK);
}

static void setting(zhandle_t *zh, const char *base, const char *key, const char *value, int make)
{
    char p[256];
    snprintf(p, sizeof p, "%s/%s", base, key);
    if (make) {
        create(zh, p, value);
    } else if (value) {
        CU_ASSERT_EQUAL(zoo_set(zh, p, value, (int)strlen(value), -1), ZOK);
    } else {
        CU_ASSERT_EQUAL(zoo_delete(zh, p, -1), ZOK);
    }
}

static zhandle_t *fresh_config(char *path, size_t len, const char *name)
{
    zkt_path(name, path, len);
    zhandle_t *zh = zkt_raw();
    int rc = zoo_create(zh, "/zkr-test", NULL, -1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
    CU_ASSERT(rc == ZOK || rc == ZNODEEXISTS);
    create(zh, path, "");
    setting(zh, path, "port", "8080", 1);
    setting(zh, path, "mode", "fast", 1);
    return zh;
}

static void remove_config(zhandle_t *zh, const char *path)
{
    struct String_vector kids = {0, NULL};
    if (zoo_get_children(zh, path, 0, &kids) == ZOK) {
        for (int i = 0; i < kids.count; i++)
            setting(zh, path, kids.data[i], NULL, 0);
        deallocate_String_vector(&kids);
    }
    zoo_delete(zh, path, -1);
}

/* ---- the tests ------------------------------------------------------------------- */

/* Each change: one "change:" line with its value, one "reload:" line with
 * the whole configuration, in order; SIGTERM: a clean stop. */
static void test_reloads(void)
{
    char path[128];
    zhandle_t *zh = fresh_config(path, sizeof path, "config-watch");
    const char *const args[] = {zkt_hosts(), "--path", path, "--seconds", "120", NULL};
    pid_t pid = start_example(args);
    CU_ASSERT_FATAL(wait_line("config: mode=fast port=8080"));
    int64_t t0 = zkt_now_ms();
    setting(zh, path, "mode", "safe", 0);
    CU_ASSERT(wait_line("change: CHANGED mode=safe"));
    CU_ASSERT(wait_line("reload: mode=safe port=8080"));
    printf("\n    a change applied after %lld ms", (long long)(zkt_now_ms() - t0));
    setting(zh, path, "debug", "on", 1);
    CU_ASSERT(wait_line("change: CREATED debug=on"));
    CU_ASSERT(wait_line("reload: debug=on mode=safe port=8080"));
    setting(zh, path, "port", NULL, 0);
    CU_ASSERT(wait_line("change: DELETED port"));
    CU_ASSERT(wait_line("reload: debug=on mode=safe"));
    /* a value with a space and a control: one word */
    setting(zh, path, "motd", "hi there\n", 1);
    CU_ASSERT(wait_line("reload: debug=on mode=safe motd=hi\\x20there\\x0a"));
    /* the same value written again: still a change (a new mzxid) */
    setting(zh, path, "mode", "safe", 0);
    CU_ASSERT(wait_line_n("change: CHANGED mode=safe", 2));

    kill(pid, SIGTERM);
    CU_ASSERT_EQUAL(end_example(pid), 0);
    char *out = slurp_out();
    CU_ASSERT_EQUAL(count_lines(out, "config_watch: SIGTERM: stopping"), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "CHECK PASSED: configuration loaded, 5 reload(s), last applied: "
                                       "debug=on mode=safe motd=hi\\x20there\\x0a\n"));
    /* nothing told twice, no reload without a change */
    CU_ASSERT_EQUAL(count_lines(out, "change: CREATED debug=on"), 1);
    CU_ASSERT_EQUAL(count_lines(out, "change: DELETED port"), 1);
    CU_ASSERT_PTR_NULL(strstr(out, "may be stale"));
    if (!strstr(out, "CHECK PASSED"))
        printf("\n%s", out);
    free(out);
    remove_config(zh, path);
    zkt_raw_close(zh);
}

/* The path made after the start, and deleted: told as changes. */
static void test_path_later(void)
{
    char path[128];
    zkt_path("config-later", path, sizeof path);
    zhandle_t *zh = zkt_raw();
    const char *const args[] = {zkt_hosts(), "--path", path, NULL};
    pid_t pid = start_example(args);
    CU_ASSERT_FATAL(wait_line("config: (no settings)"));
    int rc = zoo_create(zh, "/zkr-test", NULL, -1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
    CU_ASSERT(rc == ZOK || rc == ZNODEEXISTS);
    create(zh, path, "");
    setting(zh, path, "k", "v", 1);
    CU_ASSERT(wait_line("reload: k=v"));
    remove_config(zh, path);
    CU_ASSERT(wait_line("change: DELETED k"));
    char line[256];
    snprintf(line, sizeof line, "change: DELETED %s (the configuration's node)", path);
    CU_ASSERT(wait_line(line));
    CU_ASSERT(wait_line("reload: (no settings)"));
    kill(pid, SIGINT);
    CU_ASSERT_EQUAL(end_example(pid), 0);
    char *out = slurp_out();
    CU_ASSERT_EQUAL(count_lines(out, "config_watch: SIGINT: stopping"), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "CHECK PASSED"));
    free(out);
    zkt_raw_close(zh);
}

/* A stalled connection: SUSPENDED says the configuration may be stale
 * (zkr_cache_is_fresh 0), and it is current again once reconnected. */
static void test_stale(void)
{
    char path[128];
    zhandle_t *zh = fresh_config(path, sizeof path, "config-stale");
    zkt_proxy_t *px = zkt_proxy_start(zkt_server_port());
    CU_ASSERT_PTR_NOT_NULL_FATAL(px);
    /* 9 s session: the client gives up on the connection after 2/3 of it,
     * the server expires it only after all of it */
    const char *const args[] = {zkt_proxy_hosts(px), "--path", path, "--session-ms", "9000", NULL};
    pid_t pid = start_example(args);
    CU_ASSERT_FATAL(wait_line("config: mode=fast port=8080"));
    CU_ASSERT_EQUAL(zkt_proxy_stall(px, 1), 0);
    int stale = wait_line("connection SUSPENDED: configuration may be stale (kept, not trusted)");
    CU_ASSERT(stale);
    CU_ASSERT(wait_line("configuration may be stale"));
    /* written while the connection is down: told once it is back */
    setting(zh, path, "mode", "safe", 0);
    CU_ASSERT_EQUAL(zkt_proxy_stall(px, 0), 0);
    CU_ASSERT(wait_line("connection RECONNECTED"));
    CU_ASSERT(wait_line("configuration is current again"));
    CU_ASSERT(wait_line("reload: mode=safe port=8080"));
    kill(pid, SIGTERM);
    CU_ASSERT_EQUAL(end_example(pid), 0);
    char *out = slurp_out();
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "CHECK PASSED"));
    free(out);
    zkt_proxy_stop(px);
    remove_config(zh, path);
    zkt_raw_close(zh);
}

/* --seconds: it stops by itself; --demo: its own changes, checked. */
static void test_seconds_and_demo(void)
{
    char path[128];
    zkt_path("config-demo", path, sizeof path);
    const char *const secs[] = {zkt_hosts(), "--path", path, "--seconds", "1", NULL};
    int64_t t0 = zkt_now_ms();
    CU_ASSERT_EQUAL(run_example(secs), 0);
    printf("\n    --seconds 1: ended after %lld ms", (long long)(zkt_now_ms() - t0));
    char *out = slurp_out();
    CU_ASSERT_EQUAL(count_lines(out, "config: (no settings)"), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "CHECK PASSED"));
    free(out);

    const char *const demo[] = {zkt_hosts(), "--path", path, "--demo", NULL};
    CU_ASSERT_EQUAL(run_example(demo), 0);
    out = slurp_out();
    CU_ASSERT_EQUAL(count_lines(out, "config: mode=fast port=8080"), 1);
    CU_ASSERT(count_lines(out, "reload: debug=on mode=safe") >= 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "CHECK PASSED"));
    if (!strstr(out, "CHECK PASSED"))
        printf("\n%s", out);
    free(out);
    zhandle_t *zh = zkt_raw();
    CU_ASSERT_EQUAL(zoo_exists(zh, path, 0, NULL), ZNONODE); /* the demo removed its data */
    zkt_raw_close(zh);
}

static void test_usage(void)
{
    const char *const rel[] = {zkt_hosts(), "--path", "relative", NULL};
    CU_ASSERT_EQUAL(run_example(rel), 2);
    const char *const slash[] = {zkt_hosts(), "--path", "/", NULL};
    CU_ASSERT_EQUAL(run_example(slash), 2);
    const char *const secs[] = {zkt_hosts(), "--seconds", "-1", NULL};
    CU_ASSERT_EQUAL(run_example(secs), 2);
    const char *const two[] = {zkt_hosts(), zkt_hosts(), NULL};
    CU_ASSERT_EQUAL(run_example(two), 2);
    const char *const help[] = {"--help", NULL};
    CU_ASSERT_EQUAL(run_example(help), 0);
    char *out = slurp_out();
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "usage: config_watch"));
    free(out);
}

static int suite_init(void)
{
    zoo_set_debug_level((ZooLogLevel)0);
    const char *dir = getenv("ZKR_TEST_ZKDIR");
    snprintf(out_file, sizeof out_file, "%s/config_watch.out", dir ? dir : "/tmp");
    return access(example_bin(), X_OK) == 0 ? 0 : 1;
}

static void add_suites(void)
{
    CU_pSuite s = CU_add_suite("config_watch example", suite_init, NULL);
    CU_add_test(s, "bad usage: exit 2; --help: exit 0", test_usage);
    CU_add_test(s, "each change told and applied with its values; SIGTERM: clean stop", test_reloads);
    CU_add_test(s, "the path made and deleted while it runs; SIGINT: clean stop", test_path_later);
    CU_add_test(s, "a stalled connection: may be stale, then current again, and the change missed",
                test_stale);
    CU_add_test(s, "--seconds: stops by itself; --demo passes its own check", test_seconds_and_demo);
}

int main(void)
{
    return zkt_main("config_watch example", add_suites);
}

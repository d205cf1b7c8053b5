/* examples/service_registry, run as a user runs it against the test
 * server: two services (--serve) and a client (--client) as separate
 * processes.  The client lists both, its picks alternate between them;
 * one service stops on SIGTERM and unregisters: the client is told, lists
 * the other alone and picks it alone; each stops cleanly, and the
 * instances' nodes are gone.  Then --demo, --seconds, and usage errors.
 * The examples run in process groups of their own, killed whole on every
 * exit path.  Every wait is bounded. */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/harness/zkr_test.h"

#define RUN_MS 60000  /* bound on one run */
#define WAIT_MS 20000 /* bound on a line to come */

typedef struct proc {
    pid_t pid;
    char out[256];
} proc_t;

static const char *example_bin(void)
{
    static char bin[1024];
    const char *b = getenv("ZKR_BUILDDIR");
    snprintf(bin, sizeof bin, "%s/examples/service_registry", b && *b ? b : ".");
    return bin;
}

/* Start the example with args (NULL-terminated), its output to a file of
 * its own, in a process group of its own. */
static void start(proc_t *p, const char *tag, const char *const *args)
{
    const char *dir = getenv("ZKR_TEST_ZKDIR");
    snprintf(p->out, sizeof p->out, "%s/service-registry-%s-%d.out", dir && *dir ? dir : "/tmp", tag, (int)getpid());
    const char *argv[32];
    int n = 0;
    argv[n++] = example_bin();
    for (int i = 0; args[i] && n < 31; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    p->pid = fork();
    if (p->pid == 0) {
        setpgid(0, 0);
        int o = open(p->out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (o < 0 || dup2(o, 1) < 0 || dup2(o, 2) < 0)
            _exit(120);
        execv(argv[0], (char *const *)argv);
        _exit(121);
    }
    CU_ASSERT_FATAL(p->pid > 0);
    setpgid(p->pid, p->pid);
}

/* Wait for it (bounded): its exit status, or -1 (killed at the bound). */
static int finish(proc_t *p)
{
    int rc = zkt_wait_child(p->pid, RUN_MS);
    kill(-p->pid, SIGKILL);
    return rc;
}

static char *slurp(const proc_t *p)
{
    return zkt_slurp(p->out);
}

/* Lines that start with prefix, counted from the line after the last
 * one equal to `after` (NULL: from the start). */
static int count_lines(const char *text, const char *prefix, const char *after)
{
    int n = 0, on = after == NULL;
    size_t len = strlen(prefix);
    for (const char *p = text; *p;) {
        const char *nl = strchr(p, '\n');
        size_t ll = nl ? (size_t)(nl - p) : strlen(p);
        if (on && strncmp(p, prefix, len) == 0)
            n++;
        if (after && ll == strlen(after) && strncmp(p, after, ll) == 0)
            on = 1, n = 0;
        if (!nl)
            break;
        p = nl + 1;
    }
    return n;
}

typedef struct want {
    const proc_t *p;
    const char *prefix, *after;
    int n;
} want_t;

static int has(void *arg)
{
    want_t *w = arg;
    char *t = slurp(w->p);
    int ok = count_lines(t, w->prefix, w->after) >= w->n;
    free(t);
    return ok;
}

static int wait_lines(const proc_t *p, const char *prefix, const char *after, int n)
{
    want_t w = {p, prefix, after, n};
    int ok = zkt_wait_for(has, &w, WAIT_MS);
    if (!ok) {
        char *t = slurp(p);
        printf("\n    not %d line(s) \"%s...\"%s%s in:\n%s", n, prefix, after ? " after " : "", after ? after : "", t);
        free(t);
    }
    return ok;
}

static int count_in(const proc_t *p, const char *prefix, const char *after)
{
    char *t = slurp(p);
    int n = count_lines(t, prefix, after);
    free(t);
    return n;
}

static void test_serve_and_follow(void)
{
    char base[128], dir[200];
    zkt_path("registry", base, sizeof base);
    snprintf(dir, sizeof dir, "%s/api", base);
    const char *const a1[] = {zkt_hosts(), "--serve", "--base", base, "--name", "api", "--id", "s-1",
                              "--address", "10.9.0.1", "--port", "9001", "--seconds", "100", NULL};
    const char *const a2[] = {zkt_hosts(), "--serve", "--base", base, "--name", "api", "--id", "s-2",
                              "--address", "10.9.0.2", "--port", "9002", "--seconds", "100", NULL};
    const char *const ac[] = {zkt_hosts(), "--client", "--base", base, "--name", "api", "--every", "100",
                              "--seconds", "100", NULL};
    proc_t s1, s2, cl;
    start(&s1, "s1", a1);
    CU_ASSERT(wait_lines(&s1, "registered api/s-1 at 10.9.0.1:9001", NULL, 1));
    start(&s2, "s2", a2);
    CU_ASSERT(wait_lines(&s2, "registered api/s-2 at 10.9.0.2:9002", NULL, 1));
    start(&cl, "client", ac);
    CU_ASSERT(wait_lines(&cl, "instances: s-1 s-2", NULL, 1));
    /* round robin: both, in turn */
    CU_ASSERT(wait_lines(&cl, "pick: s-1 10.9.0.1:9001", NULL, 3));
    CU_ASSERT(wait_lines(&cl, "pick: s-2 10.9.0.2:9002", NULL, 3));
    /* one service stops: unregistered, the client follows */
    kill(s1.pid, SIGTERM);
    CU_ASSERT_EQUAL(finish(&s1), 0);
    CU_ASSERT(wait_lines(&s1, "unregistered api/s-1", NULL, 1));
    CU_ASSERT(wait_lines(&cl, "change: REMOVED s-1", NULL, 1));
    CU_ASSERT(wait_lines(&cl, "instances: s-2", NULL, 1));
    CU_ASSERT(wait_lines(&cl, "pick: s-2", "instances: s-2", 3));
    CU_ASSERT_EQUAL(count_in(&cl, "pick: s-1", "instances: s-2"), 0);
    /* it comes back (a new process, the same id): followed again */
    start(&s1, "s1b", a1);
    CU_ASSERT(wait_lines(&cl, "change: ADDED s-1", NULL, 2)); /* (the first: the first load's) */
    CU_ASSERT(wait_lines(&cl, "pick: s-1", "instances: s-1 s-2", 2));
    kill(cl.pid, SIGTERM);
    CU_ASSERT_EQUAL(finish(&cl), 0);
    CU_ASSERT(wait_lines(&cl, "CHECK PASSED", NULL, 1));
    kill(s1.pid, SIGTERM);
    kill(s2.pid, SIGTERM);
    CU_ASSERT_EQUAL(finish(&s1), 0);
    CU_ASSERT_EQUAL(finish(&s2), 0);
    CU_ASSERT(wait_lines(&s2, "CHECK PASSED", NULL, 1));
    zhandle_t *zh = zkt_raw();
    CU_ASSERT_EQUAL(zkt_count_children(zh, dir), 0);
    zkt_raw_close(zh);
    unlink(s1.out);
    unlink(s2.out);
    unlink(cl.out);
}

static void test_demo_and_seconds(void)
{
    char base[128];
    zkt_path("registry-demo", base, sizeof base);
    const char *const ad[] = {zkt_hosts(), "--demo", "--base", base, NULL};
    proc_t d;
    start(&d, "demo", ad);
    CU_ASSERT_EQUAL(finish(&d), 0);
    CU_ASSERT(wait_lines(&d, "CHECK PASSED", NULL, 1));
    CU_ASSERT(wait_lines(&d, "pick: demo-b", "instances: demo-b", 3));
    unlink(d.out);
    /* --seconds: stops by itself, unregistered */
    const char *const as[] = {zkt_hosts(), "--serve", "--base", base, "--seconds", "1", NULL};
    start(&d, "seconds", as);
    CU_ASSERT_EQUAL(finish(&d), 0);
    CU_ASSERT(wait_lines(&d, "unregistered web/", NULL, 1));
    unlink(d.out);
}

static void test_usage(void)
{
    const char *const bad[][6] = {
        {"--serve", "--port", "70000", NULL},
        {"--client", "--every", "1", NULL},
        {"--port", "1", NULL},
        {"--serve", "--client", NULL},
        {"--serve", "a", "b", NULL},
        {"--serve", "--base", "relative", NULL},
    };
    proc_t p;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        start(&p, "usage", bad[i]);
        CU_ASSERT_EQUAL(finish(&p), 2);
    }
    const char *const help[] = {"--help", NULL};
    start(&p, "help", help);
    CU_ASSERT_EQUAL(finish(&p), 0);
    CU_ASSERT(wait_lines(&p, "usage: service_registry --serve", NULL, 1));
    unlink(p.out);
}

static void add_suites(void)
{
    CU_pSuite s = CU_add_suite("service_registry example", NULL, NULL);
    CU_add_test(s, "two services and a client: both picked in turn; one stops: followed, picked no more; back",
                test_serve_and_follow);
    CU_add_test(s, "--demo passes its check; --seconds stops and unregisters", test_demo_and_seconds);
    CU_add_test(s, "usage errors exit 2, --help 0", test_usage);
}

int main(void)
{
    return zkt_main("test_service_registry", add_suites);
}

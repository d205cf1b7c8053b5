/* examples/leader_scheduler, run as a user runs it against the test
 * server: its workers elect a leader that records job slots with guarded
 * writes while the example stops (past the session) and kills leaders;
 * the example ends with its own check ("CHECK PASSED", exit 0).  Here:
 * that it passes, that takeovers happened, that it leaves nothing behind,
 * and its usage errors.  The example runs in a process group of its own,
 * killed whole on every exit path.  Every wait is bounded. */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/harness/zkr_test.h"

#define RUN_MS 150000

static char out_file[256];

static const char *example_bin(void)
{
    static char bin[1024];
    const char *b = getenv("ZKR_BUILDDIR");
    snprintf(bin, sizeof bin, "%s/examples/leader_scheduler", b && *b ? b : ".");
    return bin;
}

/* Run the example with args (NULL-terminated), stdout and stderr to
 * out_file: its exit status, or -1 (killed at the bound). */
static int run_example(const char *const *args)
{
    const char *argv[32];
    int n = 0;
    argv[n++] = example_bin();
    for (int i = 0; args[i] && n < 31; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    pid_t pid = fork();
    if (pid == 0) {
        setpgid(0, 0); /* its workers with it: one group to kill */
        int o = open(out_file, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (o < 0 || dup2(o, 1) < 0 || dup2(o, 2) < 0)
            _exit(120);
        execv(argv[0], (char *const *)argv);
        _exit(121);
    }
    CU_ASSERT_FATAL(pid > 0);
    setpgid(pid, pid);
    int rc = zkt_wait_child(pid, RUN_MS);
    kill(-pid, SIGKILL); /* whatever is left of the group */
    return rc;
}

static char *slurp_out(void)
{
    return zkt_slurp(out_file);
}

static int count(const char *text, const char *needle)
{
    int n = 0;
    for (const char *p = text; (p = strstr(p, needle)); p += strlen(needle))
        n++;
    return n;
}

static void scheduler_run(const char *procs, const char *kills, const char *pauses)
{
    char path[128];
    zkt_path("scheduler", path, sizeof path);
    const char *const args[] = {zkt_hosts(), "--path", path, "--procs", procs, "--slots", "24", "--period-ms", "40",
                                "--session-ms", "2000", "--kills", kills, "--pauses", pauses, NULL};
    int64_t t0 = zkt_now_ms();
    int rc = run_example(args);
    char *out = slurp_out();
    const char *check = strstr(out, "CHECK ");
    printf("\n    %s procs, %s kill(s), %s pause(s): exit %d after %lld ms: %.*s", procs, kills, pauses, rc,
           (long long)(zkt_now_ms() - t0), check ? (int)strcspn(check, "\n") : 0, check ? check : "");
    CU_ASSERT_EQUAL(rc, 0);
    CU_ASSERT_EQUAL(count(out, "CHECK PASSED"), 1);
    /* every kill and pause hit a leader, who was then replaced */
    CU_ASSERT_EQUAL(count(out, "parent: killing leader"), atoi(kills));
    CU_ASSERT_EQUAL(count(out, "parent: stopping leader"), atoi(pauses));
    printf("\n    writes refused to a deposed leader: %d", count(out, "no longer leader"));
    if (rc != 0)
        printf("\n%s", out);
    /* the workers left nothing, and the example removed its data */
    zhandle_t *raw = zkt_raw();
    CU_ASSERT_EQUAL(zoo_exists(raw, path, 0, NULL), ZNONODE);
    zkt_raw_close(raw);
    free(out);
}

static void test_pause_and_kill(void)
{
    scheduler_run("3", "1", "1");
}

static void test_two_kills(void)
{
    scheduler_run("4", "2", "0");
}

static void test_usage(void)
{
    const char *const one[] = {zkt_hosts(), "--procs", "1", NULL};
    CU_ASSERT_EQUAL(run_example(one), 2);
    const char *const all[] = {zkt_hosts(), "--procs", "3", "--kills", "3", NULL};
    CU_ASSERT_EQUAL(run_example(all), 2);
    const char *const rel[] = {zkt_hosts(), "--path", "relative", NULL};
    CU_ASSERT_EQUAL(run_example(rel), 2);
    const char *const help[] = {"--help", NULL};
    CU_ASSERT_EQUAL(run_example(help), 0);
    char *out = slurp_out();
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "usage: leader_scheduler"));
    free(out);
}

static int suite_init(void)
{
    zoo_set_debug_level((ZooLogLevel)0);
    const char *dir = getenv("ZKR_TEST_ZKDIR");
    snprintf(out_file, sizeof out_file, "%s/scheduler.out", dir ? dir : "/tmp");
    return access(example_bin(), X_OK) == 0 ? 0 : 1;
}

static void add_suites(void)
{
    CU_pSuite s = CU_add_suite("leader_scheduler example", suite_init, NULL);
    CU_add_test(s, "bad usage: exit 2; --help: exit 0", test_usage);
    CU_add_test(s, "3 workers, a leader stopped past its session, one killed: every slot once", test_pause_and_kill);
    CU_add_test(s, "4 workers, two leaders killed: every slot once", test_two_kills);
}

int main(void)
{
    return zkt_main("scheduler example", add_suites);
}

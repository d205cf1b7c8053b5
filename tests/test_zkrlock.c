/* zkr-lock, the command-line tool, run as a user runs it: the built
 * tools/zkr-lock is started with fork/exec against the test server, with
 * small sh scripts as commands that record "begin"/"end" lines in a file.
 * Mutual exclusion, waiting and --timeout 0, semaphore and read/write
 * kinds, the hold lost under a stalled connection (the test proxy), the
 * fencing token in the environment, signals, --print, bad usage and the
 * exit codes.
 *
 * Every wait is bounded; no test asserts a speed. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/harness/zkproxy.h"
#include "tests/harness/zkr_test.h"
#include "tests/zkrl_run.h"

/* Start a holder a and then a waiter b with opts; b is not waited for. */
static void start_pair(const scene_t *sc, const char *const *opts, pid_t *a, pid_t *b)
{
    *a = start_script(sc, opts, HOLD_UNTIL_GO, "a", NULL);
    CU_ASSERT_FATAL(wait_lines(sc->rec, "begin a", 1, WAIT_MS));
    *b = start_script(sc, opts, HOLD_UNTIL_GO, "b", NULL);
}

/* Let a and b through; both must succeed. */
static void finish_pair(const scene_t *sc, pid_t a, pid_t b)
{
    touch(sc->go);
    CU_ASSERT_EQUAL(zkt_wait_child(a, RUN_MS), 0);
    CU_ASSERT_EQUAL(zkt_wait_child(b, RUN_MS), 0);
}

/* The record says begin a, end a, begin b, end b: never interleaved. */
static void assert_a_then_b(const char *rec)
{
    char *t = slurp(rec);
    char l[4][64];
    int n = sscanf(t, "%63[^\n]\n%63[^\n]\n%63[^\n]\n%63[^\n]\n", l[0], l[1], l[2], l[3]);
    CU_ASSERT_EQUAL(n, 4);
    CU_ASSERT_EQUAL(count_lines(t), 4);
    if (n == 4) {
        CU_ASSERT_EQUAL(strncmp(l[0], "begin a", 7), 0);
        CU_ASSERT_EQUAL(strncmp(l[1], "end a", 5), 0);
        CU_ASSERT_EQUAL(strncmp(l[2], "begin b", 7), 0);
        CU_ASSERT_EQUAL(strncmp(l[3], "end b", 5), 0);
    }
    free(t);
}

/* ---- mutual exclusion ----------------------------------------------------------------- */

static void test_two_runs_exclude(void)
{
    scene_t sc;
    scene(&sc, "cli-mutex");
    pid_t a, b;
    start_pair(&sc, NULL, &a, &b);
    zhandle_t *zh = zkt_raw();
    int queued = zkt_wait_children(zh, sc.path, 2, WAIT_MS); /* b is waiting in the queue */
    CU_ASSERT(queued);
    zkt_sleep_ms(300);
    CU_ASSERT_EQUAL(lines_with(sc.rec, "begin"), 1); /* b did not get in */
    finish_pair(&sc, a, b);
    assert_a_then_b(sc.rec);
    CU_ASSERT_EQUAL(zkt_count_children(zh, sc.path), 0);
    zkt_raw_close(zh);
}

/* ---- --timeout 0 and the exit status ---------------------------------------------------- */

static void test_timeout_zero_and_status(void)
{
    char path[128];
    zkt_path("cli-timeout", path, sizeof path);
    zkr_client_t *c = zkt_client(10000);
    zkr_mutex_t *m = NULL;
    CU_ASSERT_EQUAL_FATAL(zkr_mutex_new(&m, c, path), ZKR_OK);
    CU_ASSERT_EQUAL_FATAL(zkr_mutex_acquire(m, RUN_MS), ZKR_OK);

    const char *err = wfile("err2");
    const char *const args[] = {"--hosts", zkt_hosts(), "--timeout", "0", path, "--", "true", NULL};
    int64_t t0 = zkt_now_ms();
    int rc = run_tool(NULL, err, args);
    int64_t took = zkt_now_ms() - t0;
    printf("\n    --timeout 0 on a held lock: exit %d after %" PRId64 " ms (the whole run: start, connect, one try) ",
           rc, took);
    CU_ASSERT_EQUAL(rc, 1);
    assert_one_line(err, "is held by another process");

    const char *const e9[] = {"--hosts", zkt_hosts(), "-n", "--conflict-exit-code", "9", path, "--", "true", NULL};
    CU_ASSERT_EQUAL(run_tool(NULL, err, e9), 9);
    const char *const quiet[] = {"--hosts", zkt_hosts(), "-q", "-t", "0", path, "--", "true", NULL};
    CU_ASSERT_EQUAL(run_tool(NULL, err, quiet), 1);
    char *t = slurp(err);
    CU_ASSERT_STRING_EQUAL(t, ""); /* --quiet */
    free(t);
    const char *const wait[] = {"--hosts", zkt_hosts(), "--timeout", "0.3", path, "--", "true", NULL};
    CU_ASSERT_EQUAL(run_tool(NULL, err, wait), 1);
    assert_one_line(err, "not acquired within");
    CU_ASSERT_EQUAL(children_of(path), 1); /* only ours: the tries left nothing */

    CU_ASSERT_EQUAL(zkr_mutex_release(m), ZKR_OK);
    const char *const st3[] = {"--hosts", zkt_hosts(), "--timeout", "0", path, "--", "sh", "-c", "exit 3", NULL};
    CU_ASSERT_EQUAL(run_tool(NULL, NULL, st3), 3);
    const char *const st0[] = {"--hosts", zkt_hosts(), path, "--", "true", NULL};
    CU_ASSERT_EQUAL(run_tool(NULL, NULL, st0), 0);
    CU_ASSERT_EQUAL(children_of(path), 0);
    zkr_mutex_free(m);
    zkr_client_close(c);
}

/* ---- semaphore ----------------------------------------------------------------------------- */

#define SEM_RUNS 5

static void test_semaphore_two(void)
{
    scene_t sc;
    scene(&sc, "cli-sem");
    const char *script = "echo \"begin $$\" >> \"$1\"; sleep 0.5; echo \"end $$\" >> \"$1\"";
    const char *const opts[] = {"--semaphore", "2", NULL};
    pid_t pids[SEM_RUNS];
    for (int i = 0; i < SEM_RUNS; i++)
        pids[i] = start_script(&sc, opts, script, "s", NULL);
    for (int i = 0; i < SEM_RUNS; i++)
        CU_ASSERT_EQUAL(zkt_wait_child(pids[i], RUN_MS * 2), 0);
    char *t = slurp(sc.rec);
    int inside = 0, max = 0, begins = 0, ends = 0;
    for (char *line = strtok(t, "\n"); line; line = strtok(NULL, "\n")) {
        if (strncmp(line, "begin", 5) == 0) {
            begins++;
            if (++inside > max)
                max = inside;
        } else if (strncmp(line, "end", 3) == 0) {
            ends++;
            inside--;
        }
    }
    free(t);
    printf("\n    %d runs, at most %d inside at once ", SEM_RUNS, max);
    CU_ASSERT_EQUAL(begins, SEM_RUNS);
    CU_ASSERT_EQUAL(ends, SEM_RUNS);
    CU_ASSERT(max >= 1 && max <= 2);
    CU_ASSERT_EQUAL(children_of(sc.path), 2); /* leases/ and locks/ */
    char leases[160];
    snprintf(leases, sizeof leases, "%s/leases", sc.path);
    CU_ASSERT_EQUAL(children_of(leases), 0);
}

/* ---- read/write ----------------------------------------------------------------------------- */

static void test_read_write(void)
{
    scene_t sc, sc2;
    scene(&sc, "cli-rw");
    scene(&sc2, "cli-rw2");
    memcpy(sc2.path, sc.path, sizeof sc.path);
    memcpy(sc2.rec, sc.rec, sizeof sc.rec);
    touch(sc2.go); /* the second writer does not wait for a go */
    /* a reader stays inside until both readers are (bounded: 15 s) */
    const char *reader = "echo \"begin $3\" >> \"$1\"; n=0; "
                         "while [ \"$(grep -c '^begin r' \"$1\")\" -lt 2 ] && [ $n -lt 300 ]; do sleep 0.05; n=$((n+1)); done; "
                         "echo \"end $3\" >> \"$1\"";
    const char *const rd[] = {"--read", NULL}, *const wr[] = {"--write", NULL};
    zhandle_t *zh = zkt_raw();
    pid_t pw1 = start_script(&sc, wr, HOLD_UNTIL_GO, "w1", NULL);
    CU_ASSERT_FATAL(wait_lines(sc.rec, "begin w1", 1, WAIT_MS));
    pid_t pr1 = start_script(&sc, rd, reader, "r1", NULL);
    pid_t pr2 = start_script(&sc, rd, reader, "r2", NULL);
    CU_ASSERT(zkt_wait_children(zh, sc.path, 3, WAIT_MS));
    pid_t pw2 = start_script(&sc2, wr, HOLD_UNTIL_GO, "w2", NULL);
    CU_ASSERT(zkt_wait_children(zh, sc.path, 4, WAIT_MS));
    zkt_sleep_ms(300);
    CU_ASSERT_EQUAL(lines_with(sc.rec, "begin"), 1); /* the readers wait for the writer */
    touch(sc.go);
    CU_ASSERT_EQUAL(zkt_wait_child(pw1, RUN_MS), 0);
    CU_ASSERT_EQUAL(zkt_wait_child(pr1, RUN_MS), 0);
    CU_ASSERT_EQUAL(zkt_wait_child(pr2, RUN_MS), 0);
    CU_ASSERT_EQUAL(zkt_wait_child(pw2, RUN_MS), 0);
    char *t = slurp(sc.rec);
    char l[8][32];
    int n = sscanf(t, "%31[^\n]\n%31[^\n]\n%31[^\n]\n%31[^\n]\n%31[^\n]\n%31[^\n]\n%31[^\n]\n%31[^\n]\n", l[0],
                   l[1], l[2], l[3], l[4], l[5], l[6], l[7]);
    CU_ASSERT_EQUAL(n, 8);
    if (n == 8) {
        CU_ASSERT_EQUAL(strncmp(l[0], "begin w1", 8), 0);
        CU_ASSERT_EQUAL(strncmp(l[1], "end w1", 6), 0);
        /* both readers inside before either left: they overlapped */
        CU_ASSERT_EQUAL(strncmp(l[2], "begin r", 7), 0);
        CU_ASSERT_EQUAL(strncmp(l[3], "begin r", 7), 0);
        CU_ASSERT_EQUAL(strncmp(l[4], "end r", 5), 0);
        CU_ASSERT_EQUAL(strncmp(l[5], "end r", 5), 0);
        /* and the second writer only after both */
        CU_ASSERT_EQUAL(strncmp(l[6], "begin w2", 8), 0);
        CU_ASSERT_EQUAL(strncmp(l[7], "end w2", 6), 0);
    } else {
        printf("\n    records: %s", t);
    }
    free(t);
    CU_ASSERT_EQUAL(zkt_count_children(zh, sc.path), 0);
    zkt_raw_close(zh);
}

/* ---- the hold lost under a stalled connection ---------------------------------------------- */

/* Run a holder through a proxy, stall it for good: the command is stopped
 * and zkr-lock exits 75.  grace "0": stopped when in doubt; a long grace:
 * stopped when the session is LOST; the command ignores SIGTERM there, so
 * --kill-after's SIGKILL ends it. */
static void lost_case(const char *grace, int ignore_term, const char *why, const char *kind)
{
    scene_t sc;
    scene(&sc, ignore_term ? "cli-lost-ignore" : "cli-lost");
    zkt_proxy_t *p = zkt_proxy_start(zkrl_server_port());
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    const char *ignoring = "trap '' TERM; echo \"pid $$\" >> \"$1\"; " HOLD_UNTIL_GO;
    const char *const opts[] = {"--hosts", zkt_proxy_hosts(p), "--session-timeout", "3000", "--grace", grace,
                                "--kill-after", "1", kind, NULL};
    pid_t pid = start_script(&sc, opts, ignore_term ? ignoring : TRAP_TERM, "x", sc.err);
    CU_ASSERT_FATAL(wait_lines(sc.rec, "begin x", 1, WAIT_MS));
    CU_ASSERT_EQUAL(children_of(sc.path), 1);
    CU_ASSERT_EQUAL(zkt_proxy_stall(p, 1), 0);
    int rc = zkt_wait_child(pid, RUN_MS);
    CU_ASSERT_EQUAL(zkt_proxy_stall(p, 0), 0);
    CU_ASSERT_EQUAL(rc, 75);
    assert_one_line(sc.err, why);
    CU_ASSERT_EQUAL(lines_with(sc.rec, "end"), 0); /* the command was stopped */
    if (ignore_term) {
        int child = 0;
        char *t = slurp(sc.rec);
        CU_ASSERT_EQUAL(sscanf(t, "pid %d", &child), 1);
        free(t);
        CU_ASSERT(child > 0 && kill(child, 0) == -1 && errno == ESRCH); /* SIGKILLed, reaped */
    } else {
        CU_ASSERT_EQUAL(lines_with(sc.rec, "TERM x"), 1);
    }
    touch(sc.go);
    zhandle_t *zh = zkt_raw();
    CU_ASSERT(zkt_wait_children(zh, sc.path, 0, WAIT_MS)); /* the session expired */
    zkt_raw_close(zh);
    zkt_proxy_stop(p);
}

static void test_lost_in_doubt(void)
{
    lost_case("0", 0, "in doubt", NULL);
}

static void test_lost_session(void)
{
    lost_case("600", 1, "lost the lock", NULL);
}

static void test_leader_in_doubt(void)
{
    lost_case("0", 0, "leadership of", "--leader");
}

static void test_leader_lost_session(void)
{
    lost_case("600", 1, "lost leadership", "--leader");
}

/* A short stall within --grace: the command carries on (kind: NULL for
 * the mutex, "--leader" for leadership). */
static void grace_case(const char *kind)
{
    scene_t sc;
    scene(&sc, "cli-grace");
    zkt_proxy_t *p = zkt_proxy_start(zkrl_server_port());
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    /* 12 s session: the client gives up on the connection after 2/3 of it,
     * the server expires it only after all of it */
    const char *const opts[] = {"--hosts", zkt_proxy_hosts(p), "--session-timeout", "12000", "--grace", "600",
                                "--verbose", kind, NULL};
    pid_t pid = start_script(&sc, opts, TRAP_TERM, "g", sc.err);
    CU_ASSERT_FATAL(wait_lines(sc.rec, "begin g", 1, WAIT_MS));
    CU_ASSERT_EQUAL(zkt_proxy_stall(p, 1), 0);
    int in_doubt = 0;
    for (int64_t end = zkt_now_ms() + WAIT_MS; !in_doubt && zkt_now_ms() < end; zkt_sleep_ms(50))
        in_doubt = contains(sc.err, ": IN_DOUBT");
    CU_ASSERT_EQUAL(zkt_proxy_stall(p, 0), 0);
    CU_ASSERT(in_doubt);
    int safe = 0;
    for (int64_t end = zkt_now_ms() + WAIT_MS; !safe && zkt_now_ms() < end; zkt_sleep_ms(50))
        safe = contains(sc.err, ": SAFE");
    CU_ASSERT(safe);
    touch(sc.go);
    CU_ASSERT_EQUAL(zkt_wait_child(pid, RUN_MS), 0);
    CU_ASSERT_EQUAL(lines_with(sc.rec, "end g"), 1);
    CU_ASSERT_EQUAL(lines_with(sc.rec, "TERM"), 0);
    CU_ASSERT(contains(sc.err, "connection: CONNECTED"));
    CU_ASSERT(contains(sc.err, "connection: SUSPENDED"));
    CU_ASSERT(contains(sc.err, "connection: RECONNECTED"));
    if (!safe) {
        char *t = slurp(sc.err);
        printf("\n    log: %s", t);
        free(t);
    }
    CU_ASSERT_EQUAL(children_of(sc.path), 0);
    zkt_proxy_stop(p);
}

static void test_grace_survives(void)
{
    grace_case(NULL);
}

/* Leadership kept through the stall (the session policy), the same term. */
static void test_leader_grace_survives(void)
{
    grace_case("--leader");
}

/* ---- the environment ------------------------------------------------------------------------ */

static void env_case(const char *kind, const char *arg, const char *node_dir)
{
    scene_t sc;
    scene(&sc, "cli-env");
    const char *script = "echo \"$ZKR_FENCING_TOKEN $ZKR_LOCK_NODE $ZKR_LOCK_PATH\" >> \"$1\"";
    const char *const opts[] = {kind, arg, NULL};
    for (int run = 0; run < 2; run++)
        CU_ASSERT_EQUAL(zkt_wait_child(start_script(&sc, opts, script, "e", NULL), RUN_MS), 0);
    char *t = slurp(sc.rec);
    long long tok[2] = {0, 0};
    char node[2][256], lp[2][128];
    int n = sscanf(t, "%lld %255s %127s\n%lld %255s %127s", &tok[0], node[0], lp[0], &tok[1], node[1], lp[1]);
    CU_ASSERT_EQUAL(n, 6);
    if (n == 6) {
        CU_ASSERT(tok[0] > 0);
        CU_ASSERT(tok[1] > tok[0]); /* a later holder has a larger token */
        char prefix[192];
        snprintf(prefix, sizeof prefix, "%s%s/_c_", sc.path, node_dir);
        for (int i = 0; i < 2; i++) {
            CU_ASSERT_STRING_EQUAL(lp[i], sc.path);
            CU_ASSERT_EQUAL(strncmp(node[i], prefix, strlen(prefix)), 0);
        }
        printf("\n    %s: tokens %lld then %lld ", kind ? kind : "mutex", tok[0], tok[1]);
    } else {
        printf("\n    records: %s", t);
    }
    free(t);
}

static void test_fencing_env(void)
{
    /* the command gets the descriptors zkr-lock was started with, not
     * those of its ZooKeeper connection */
    char path[128];
    zkt_path("cli-fds", path, sizeof path);
    const char *out = wfile("fds.out");
    const char *const fds[] = {"--hosts", zkt_hosts(), path, "--", "sh", "-c", "ls /proc/$$/fd", NULL};
    CU_ASSERT_EQUAL(run_tool(out, NULL, fds), 0);
    char *t = slurp(out);
    CU_ASSERT_STRING_EQUAL(t, "0\n1\n2\n");
    free(t);

    env_case(NULL, NULL, "");
    env_case("--read", NULL, "");
    env_case("--write", NULL, "");
    env_case("--semaphore", "3", "/leases");
    env_case("--semaphore-mutex", NULL, "/leases");
}

/* ---- signals --------------------------------------------------------------------------------- */

static void test_sigterm(void)
{
    scene_t sc;
    scene(&sc, "cli-sig");
    pid_t h = start_script(&sc, NULL, TRAP_TERM, "h", NULL);
    CU_ASSERT_FATAL(wait_lines(sc.rec, "begin h", 1, WAIT_MS));
    pid_t w = start_script(&sc, NULL, TRAP_TERM, "w", sc.err);
    zhandle_t *zh = zkt_raw();
    CU_ASSERT(zkt_wait_children(zh, sc.path, 2, WAIT_MS));
    /* SIGTERM while waiting: zkr-lock gives up, its waiting node goes */
    kill(w, SIGTERM);
    int64_t t0_ = zkt_now_ms();
    int st_ = zkt_wait_child(w, RUN_MS);
    printf("\n    SIGTERM while waiting: exit %d after %lld ms ", st_, (long long)(zkt_now_ms() - t0_));
    CU_ASSERT_EQUAL(st_, 128 + SIGTERM);
    assert_one_line(sc.err, "interrupted by SIGTERM");
    CU_ASSERT(zkt_wait_children(zh, sc.path, 1, WAIT_MS));
    /* SIGTERM while holding: the command gets it, the lock node is gone */
    kill(h, SIGTERM);
    CU_ASSERT_EQUAL(zkt_wait_child(h, RUN_MS), 143);
    CU_ASSERT_EQUAL(zkt_count_children(zh, sc.path), 0); /* at once, not after a session timeout */
    CU_ASSERT_EQUAL(lines_with(sc.rec, "TERM h"), 1);
    CU_ASSERT_EQUAL(lines_with(sc.rec, "begin w"), 0);
    zkt_raw_close(zh);
}

/* ---- --print ----------------------------------------------------------------------------------- */

static void test_print_rwlock(void)
{
    scene_t sc;
    scene(&sc, "cli-print");
    const char *out = wfile("print.out");
    const char *const rd[] = {"--read", NULL}, *const wr[] = {"--write", NULL};
    pid_t pa = start_script(&sc, rd, HOLD_UNTIL_GO, "a", NULL);
    CU_ASSERT_FATAL(wait_lines(sc.rec, "begin a", 1, WAIT_MS));
    pid_t pb = start_script(&sc, wr, HOLD_UNTIL_GO, "b", NULL);
    zhandle_t *zh = zkt_raw();
    CU_ASSERT(zkt_wait_children(zh, sc.path, 2, WAIT_MS));
    const char *const pr[] = {"--hosts", zkt_hosts(), "--print", "--read", sc.path, NULL};
    CU_ASSERT_EQUAL(run_tool(out, NULL, pr), 0);
    listing_t e[4];
    int n = read_listing(out, e, 4);
    CU_ASSERT_EQUAL(n, 2);
    if (n == 2) {
        CU_ASSERT_STRING_EQUAL(e[0].role, "holder");
        CU_ASSERT_STRING_EQUAL(e[1].role, "waiting");
        CU_ASSERT_PTR_NOT_NULL(strstr(e[0].node, "__READ__"));
        CU_ASSERT_PTR_NOT_NULL(strstr(e[1].node, "__WRIT__"));
        for (int i = 0; i < 2; i++) { /* what the server says of that node */
            struct Stat st;
            CU_ASSERT_EQUAL(zoo_exists(zh, e[i].node, 0, &st), ZOK);
            CU_ASSERT_EQUAL((long long)st.czxid, e[i].token);
            CU_ASSERT_EQUAL((unsigned long long)st.ephemeralOwner, e[i].session);
        }
        CU_ASSERT(e[0].token < e[1].token);
    }
    finish_pair(&sc, pa, pb);
    CU_ASSERT_EQUAL(run_tool(out, NULL, pr), 0); /* nothing left: nothing printed */
    CU_ASSERT_EQUAL(read_listing(out, e, 4), 0);
    zkt_raw_close(zh);
}

/* A semaphore of 1: the first lease holds; the waiter has a lease node
 * beyond the first and holds the head of the locks/ queue. */
static void test_print_semaphore(void)
{
    scene_t sc;
    scene(&sc, "cli-print-sem");
    const char *out = wfile("print.out");
    const char *const sem[] = {"--semaphore", "1", NULL};
    pid_t pa, pb;
    start_pair(&sc, sem, &pa, &pb);
    char leases[160];
    snprintf(leases, sizeof leases, "%s/leases", sc.path);
    zhandle_t *zh = zkt_raw();
    CU_ASSERT(zkt_wait_children(zh, leases, 2, WAIT_MS)); /* b is waiting for a lease */
    zkt_raw_close(zh);
    const char *const prs[] = {"--hosts", zkt_hosts(), "-p", "-s", "1", sc.path, NULL};
    CU_ASSERT_EQUAL(run_tool(out, NULL, prs), 0);
    listing_t e[4];
    int n = read_listing(out, e, 4);
    CU_ASSERT_EQUAL(n, 3);
    if (n == 3) {
        CU_ASSERT_STRING_EQUAL(e[0].role, "holder");
        CU_ASSERT_PTR_NOT_NULL(strstr(e[0].node, "/leases/_c_"));
        CU_ASSERT_STRING_EQUAL(e[1].role, "waiting");
        CU_ASSERT_PTR_NOT_NULL(strstr(e[1].node, "/leases/_c_"));
        CU_ASSERT_STRING_EQUAL(e[2].role, "waiting");
        CU_ASSERT_PTR_NOT_NULL(strstr(e[2].node, "/locks/_c_"));
        CU_ASSERT(e[0].session != e[1].session);
        CU_ASSERT(e[1].session == e[2].session); /* both b's */
    }
    finish_pair(&sc, pa, pb);
}

/* ---- --leader: an election (Curator LeaderLatch) --------------------------------------------- */

/* Two runs in one election: the second leads only when the first's
 * command has ended; --print --leader lists both, leader first. */
static void test_leader_one_at_a_time(void)
{
    scene_t sc;
    scene(&sc, "cli-leader");
    const char *out = wfile("leader.out");
    const char *const opts[] = {"--leader", NULL};
    pid_t a, b;
    start_pair(&sc, opts, &a, &b);
    zhandle_t *zh = zkt_raw();
    CU_ASSERT(zkt_wait_children(zh, sc.path, 2, WAIT_MS)); /* b takes part, waiting */
    zkt_sleep_ms(300);
    CU_ASSERT_EQUAL(lines_with(sc.rec, "begin"), 1);
    const char *const pr[] = {"--hosts", zkt_hosts(), "--print", "--leader", sc.path, NULL};
    CU_ASSERT_EQUAL(run_tool(out, NULL, pr), 0);
    listing_t e[4];
    int n = read_listing(out, e, 4);
    CU_ASSERT_EQUAL(n, 2);
    if (n == 2) {
        CU_ASSERT_STRING_EQUAL(e[0].role, "leader");
        CU_ASSERT_STRING_EQUAL(e[1].role, "participant");
        for (int i = 0; i < 2; i++) { /* what the server says of that node */
            struct Stat st;
            char id[64];
            int len = (int)sizeof id - 1;
            CU_ASSERT_PTR_NOT_NULL(strstr(e[i].node, "-latch-"));
            CU_ASSERT_EQUAL(zoo_get(zh, e[i].node, 0, id, &len, &st), ZOK);
            CU_ASSERT_EQUAL((long long)st.czxid, e[i].token);
            CU_ASSERT_EQUAL((unsigned long long)st.ephemeralOwner, e[i].session);
            id[len > 0 ? len : 0] = '\0';
            CU_ASSERT(len > 0 && contains(out, id)); /* the id, HOSTNAME-PID by default */
        }
        CU_ASSERT(e[0].token < e[1].token);
    }
    finish_pair(&sc, a, b);
    assert_a_then_b(sc.rec); /* one leader at a time */
    CU_ASSERT_EQUAL(zkt_count_children(zh, sc.path), 0); /* both left the election */
    CU_ASSERT_EQUAL(run_tool(out, NULL, pr), 0);
    CU_ASSERT_EQUAL(read_listing(out, e, 4), 0);
    zkt_raw_close(zh);
}

/* Participants' ids and names come from the server: --print --leader
 * escapes what could break the listing or act on a terminal (C0 and C1
 * controls, bytes that are not UTF-8, spaces, backslashes), and keeps
 * well-formed UTF-8 as it is. */
static void test_print_leader_hostile(void)
{
    char path[128], node[192];
    zkt_path("cli-leader-hostile", path, sizeof path);
    const char *out = wfile("hostile.out");
    zhandle_t *zh = zkt_raw();
    CU_ASSERT_EQUAL_FATAL(zoo_create(zh, path, "", 0, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0), ZOK);
    snprintf(node, sizeof node, "%s/_c_x\xc3\xa9-latch-0000000001", path); /* (names: UTF-8, no controls) */
    static const char id[] = "a\xc2\x9b[2J\xff c\x1b\\\xc3\xa9\xe2\x82\xac";
    CU_ASSERT_EQUAL(zoo_create(zh, node, id, (int)sizeof id - 1, &ZOO_OPEN_ACL_UNSAFE, ZOO_EPHEMERAL, NULL, 0), ZOK);
    const char *const pr[] = {"--hosts", zkt_hosts(), "--print", "--leader", path, NULL};
    CU_ASSERT_EQUAL(run_tool(out, NULL, pr), 0);
    /* an id that is not UTF-8: a usage error that says so, nothing joined */
    const char *err = wfile("hostile.err");
    const char *const bad[] = {"--hosts", zkt_hosts(), "--leader", "--id", "\xff", path, "--", "true", NULL};
    CU_ASSERT_EQUAL(run_tool(NULL, err, bad), 64);
    assert_one_line(err, "--id: not valid UTF-8");
    CU_ASSERT_EQUAL(children_of(path), 1);
    char *t = slurp(out);
    CU_ASSERT_PTR_NOT_NULL_FATAL(t);
    CU_ASSERT_PTR_NOT_NULL(strstr(t, "_c_x\xc3\xa9-latch-0000000001"));
    CU_ASSERT_PTR_NOT_NULL(strstr(t, " a\\xc2\\x9b[2J\\xff\\x20c\\x1b\\x5c\xc3\xa9\xe2\x82\xac\n"));
    for (const unsigned char *p = (const unsigned char *)t; *p; p++)
        CU_ASSERT(*p >= 0x20 || *p == '\n'); /* no control reaches the terminal */
    CU_ASSERT_PTR_NULL(strstr(t, "\xc2\x9b"));
    CU_ASSERT_PTR_NULL(strchr(t, '\xff'));
    if (!strstr(t, "\\xc2\\x9b[2J"))
        printf("\n    listing: %s", t);
    free(t);
    zoo_delete(zh, node, -1);
    zoo_delete(zh, path, -1);
    zkt_raw_close(zh);
}

/* Another leader (a C latch): --timeout 0 and a short timeout give the
 * conflict code and leave nothing; once it closes, the command runs with
 * the id, the token and the node in its environment. */
static void test_leader_timeout_and_env(void)
{
    char path[128];
    zkt_path("cli-leader-env", path, sizeof path);
    zkr_client_t *c = zkt_client(10000);
    zkr_latch_t *l = NULL;
    CU_ASSERT_EQUAL_FATAL(zkr_latch_new(&l, c, path, "c-leader"), ZKR_OK);
    CU_ASSERT_EQUAL_FATAL(zkr_latch_start(l), ZKR_OK);
    CU_ASSERT_EQUAL_FATAL(zkr_latch_await(l, RUN_MS), ZKR_OK);
    const char *err = wfile("err-leader");
    const char *const t0[] = {"--hosts", zkt_hosts(), "--leader", "-t", "0", path, "--", "true", NULL};
    CU_ASSERT_EQUAL(run_tool(NULL, err, t0), 1);
    assert_one_line(err, "has another leader");
    const char *const t3[] = {"--hosts", zkt_hosts(), "-L", "-t", "0.3", "-E", "7", path, "--", "true", NULL};
    CU_ASSERT_EQUAL(run_tool(NULL, err, t3), 7);
    assert_one_line(err, "not gained within");
    CU_ASSERT_EQUAL(children_of(path), 1); /* only the C leader's node */
    CU_ASSERT_EQUAL(zkr_latch_close(l, ZKR_LATCH_CLOSE_SILENT), ZKR_OK);
    zkr_latch_free(l);

    const char *rec = wfile("leader-env");
    char script[600];
    snprintf(script, sizeof script, "echo \"$ZKR_LEADER_ID $ZKR_FENCING_TOKEN $ZKR_LOCK_NODE $ZKR_LOCK_PATH\" > %s",
             rec);
    const char *const run[] = {"--hosts", zkt_hosts(), "--leader", "--id", "tool-7", path, "--", "sh", "-c", script,
                               NULL};
    CU_ASSERT_EQUAL(run_tool(NULL, NULL, run), 0);
    char *t = slurp(rec);
    char id[64], node[256], lp[128];
    long long token = 0;
    CU_ASSERT_EQUAL_FATAL(sscanf(t, "%63s %lld %255s %127s", id, &token, node, lp), 4);
    CU_ASSERT_STRING_EQUAL(id, "tool-7");
    CU_ASSERT_STRING_EQUAL(lp, path);
    char prefix[160];
    snprintf(prefix, sizeof prefix, "%s/_c_", path);
    CU_ASSERT_EQUAL(strncmp(node, prefix, strlen(prefix)), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(node, "-latch-"));
    CU_ASSERT(token > 0);
    free(t);
    CU_ASSERT_EQUAL(children_of(path), 0);
    zkr_client_close(c);
}

/* ---- bad usage, no server, no command ------------------------------------------------------- */

static void usage_case(const char *const *args, const char *what)
{
    const char *err = wfile("err10");
    CU_ASSERT_EQUAL(run_tool(NULL, err, args), 64);
    assert_one_line(err, what);
    char *t = slurp(err);
    CU_ASSERT_EQUAL(count_lines(t), 1); /* and nothing else */
    free(t);
}

static void test_usage_and_errors(void)
{
    usage_case((const char *const[]){NULL}, "no LOCKPATH");
    usage_case((const char *const[]){"--bogus", "/x", "--", "true", NULL}, "unknown option --bogus");
    usage_case((const char *const[]){"--semaphore", "0", "/x", "--", "true", NULL}, "--semaphore");
    usage_case((const char *const[]){"--read", "--write", "/x", "--", "true", NULL}, "one lock kind");
    usage_case((const char *const[]){"--leader", "--read", "/x", "--", "true", NULL}, "one lock kind");
    usage_case((const char *const[]){"--id", "me", "/x", "--", "true", NULL}, "--id goes with --leader");
    usage_case((const char *const[]){"relative", "--", "true", NULL}, "absolute");
    usage_case((const char *const[]){"/x", "true", NULL}, "expected --");
    usage_case((const char *const[]){"/x", "--", NULL}, "no COMMAND");
    usage_case((const char *const[]){"--timeout", "-1", "/x", "--", "true", NULL}, "--timeout");
    usage_case((const char *const[]){"--timeout", NULL}, "needs a value");
    usage_case((const char *const[]){"--auth", "nocolon", "/x", "--", "true", NULL}, "SCHEME:CREDENTIALS");

    const char *out = wfile("out10"), *err = wfile("err10");
    CU_ASSERT_EQUAL(run_tool(out, err, (const char *const[]){"--help", NULL}), 0);
    char *t = slurp(out);
    const char *opts[] = {"--hosts", "--session-timeout", "--connect-timeout", "--chroot", "--auth", "--read",
                          "--write", "--semaphore", "--semaphore-mutex", "--leader", "--id", "--timeout",
                          "--conflict-exit-code", "--grace", "--kill-after", "--print", "--verbose", "--quiet",
                          "--help", "--version",
                          "Exit status", "64", "69", "75", "77", "126", "127", "128+N"};
    for (size_t i = 0; i < sizeof opts / sizeof opts[0]; i++)
        CU_ASSERT_PTR_NOT_NULL(strstr(t, opts[i]));
    free(t);
    CU_ASSERT_EQUAL(run_tool(out, err, (const char *const[]){"--version", NULL}), 0);
    t = slurp(out);
    char want[64];
    snprintf(want, sizeof want, "zkr-lock (zkrecipes) %s\n", zkr_version());
    CU_ASSERT_STRING_EQUAL(t, want);
    free(t);

    /* nothing listens on port 1 */
    const char *const down[] = {"--hosts", "127.0.0.1:1", "--connect-timeout", "1", "/x", "--", "true", NULL};
    CU_ASSERT_EQUAL(run_tool(NULL, err, down), 69);
    assert_one_line(err, "cannot connect to 127.0.0.1:1");

    char path[128];
    zkt_path("cli-exec", path, sizeof path);
    const char *const missing[] = {"--hosts", zkt_hosts(), path, "--", "/nonexistent/zkr-command", NULL};
    CU_ASSERT_EQUAL(run_tool(NULL, err, missing), 127);
    assert_one_line(err, "/nonexistent/zkr-command: command not found");
    const char *const nopath[] = {"--hosts", zkt_hosts(), path, "--", "zkr-no-such-command-here", NULL};
    CU_ASSERT_EQUAL(run_tool(NULL, err, nopath), 127);
    assert_one_line(err, "command not found");
    const char *plain = wfile("not-executable");
    touch(plain);
    chmod(plain, 0644);
    const char *const noexec[] = {"--hosts", zkt_hosts(), path, "--", plain, NULL};
    CU_ASSERT_EQUAL(run_tool(NULL, err, noexec), 126);
    assert_one_line(err, "cannot execute");
    CU_ASSERT_EQUAL(children_of(path), 0);
}

/* ---- authentication and ACLs ------------------------------------------------------------------ */

static void test_auth_acl(void)
{
    char path[128];
    zkt_path("cli-acl", path, sizeof path);
    zhandle_t *zh = zkt_raw();
    CU_ASSERT_EQUAL_FATAL(zoo_add_auth(zh, "digest", "zkr:secret", 10, NULL, NULL), ZOK);
    int rc = zoo_create(zh, "/zkr-test", NULL, -1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
    CU_ASSERT(rc == ZOK || rc == ZNODEEXISTS);
    /* only the digest user zkr:secret may do anything below it */
    CU_ASSERT_EQUAL_FATAL(zoo_create(zh, path, NULL, -1, &ZOO_CREATOR_ALL_ACL, 0, NULL, 0), ZOK);

    const char *err = wfile("acl.err"), *out = wfile("acl.out");
    const char *const none[] = {"--hosts", zkt_hosts(), path, "--", "true", NULL};
    CU_ASSERT_EQUAL(run_tool(NULL, err, none), 77);
    assert_one_line(err, "not authorised");
    const char *const wrong[] = {"--hosts", zkt_hosts(), "--auth", "digest:zkr:wrong", path, "--", "true", NULL};
    CU_ASSERT_EQUAL(run_tool(NULL, err, wrong), 77);
    const char *const ok[] = {"--hosts", zkt_hosts(), "--auth", "digest:zkr:secret", "-v", path, "--", "true", NULL};
    CU_ASSERT_EQUAL(run_tool(NULL, err, ok), 0);
    CU_ASSERT(!contains(err, "secret")); /* never printed, even with --verbose */
    /* the default comes from ZKR_AUTH */
    CU_ASSERT_EQUAL_FATAL(setenv("ZKR_AUTH", "digest:zkr:secret", 1), 0);
    const char *const env[] = {"--hosts", zkt_hosts(), path, "--", "sh", "-c", "echo \"$ZKR_FENCING_TOKEN\"", NULL};
    CU_ASSERT_EQUAL(run_tool(out, err, env), 0);
    unsetenv("ZKR_AUTH");
    char *t = slurp(out);
    CU_ASSERT(atoll(t) > 0);
    free(t);
    CU_ASSERT_EQUAL(zkt_count_children(zh, path), 0);
    zoo_delete(zh, path, -1);
    zkt_raw_close(zh);
}

/* ---- chroot ------------------------------------------------------------------------------------ */

static void test_chroot(void)
{
    char root[128];
    zkt_path("cli-chroot", root, sizeof root);
    zhandle_t *zh = zkt_raw();
    int rc = zoo_create(zh, "/zkr-test", NULL, -1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
    CU_ASSERT(rc == ZOK || rc == ZNODEEXISTS);
    CU_ASSERT_EQUAL_FATAL(zoo_create(zh, root, NULL, -1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0), ZOK);
    const char *out = wfile("chroot.out"), *err = wfile("chroot.err");
    /* the command sees paths inside the chroot; the node is below it on the server */
    const char *script = "echo \"$ZKR_LOCK_PATH $ZKR_LOCK_NODE\"; sleep 0.2";
    const char *const args[] = {"--hosts", zkt_hosts(), "--chroot", root, "/l", "--", "sh", "-c", script, NULL};
    pid_t pid = start_tool(out, NULL, args);
    char inside[160];
    snprintf(inside, sizeof inside, "%s/l", root);
    int seen = zkt_wait_children(zh, inside, 1, WAIT_MS);
    CU_ASSERT(seen);
    CU_ASSERT_EQUAL(zkt_wait_child(pid, RUN_MS), 0);
    char *t = slurp(out);
    CU_ASSERT_EQUAL(strncmp(t, "/l /l/_c_", 9), 0);
    free(t);
    CU_ASSERT_EQUAL(zkt_count_children(zh, inside), 0);
    /* a chroot that does not exist: bad usage, one line */
    const char *const missing[] = {"--hosts", zkt_hosts(), "--chroot", "/zkr-no-such-chroot", "/l", "--", "true", NULL};
    CU_ASSERT_EQUAL(run_tool(NULL, err, missing), 64);
    assert_one_line(err, "the chroot /zkr-no-such-chroot does not exist");
    zoo_delete(zh, inside, -1);
    zoo_delete(zh, root, -1);
    zkt_raw_close(zh);
}

/* ---- the suite --------------------------------------------------------------------------------- */

static void add_suites(void)
{
    CU_pSuite s = CU_add_suite("zkr-lock", zkrl_suite_init, zkrl_suite_clean);
    CU_add_test(s, "bad usage, no server, no command: codes and one-line messages", test_usage_and_errors);
    CU_add_test(s, "two runs never interleave; the second waits", test_two_runs_exclude);
    CU_add_test(s, "--timeout 0 on a held lock: conflict code at once; status passed through",
                test_timeout_zero_and_status);
    CU_add_test(s, "--semaphore 2, 5 runs: never more than 2 inside", test_semaphore_two);
    CU_add_test(s, "--read runs overlap, never with --write", test_read_write);
    CU_add_test(s, "fencing token and node in the environment, increasing", test_fencing_env);
    CU_add_test(s, "SIGTERM: passed to the command; waiting and held nodes gone", test_sigterm);
    CU_add_test(s, "--print --read: holders and queue with session and token", test_print_rwlock);
    CU_add_test(s, "--print --semaphore: leases held, lease and queue waiting", test_print_semaphore);
    CU_add_test(s, "--chroot: paths inside it; a missing chroot is bad usage", test_chroot);
    CU_add_test(s, "--auth / ZKR_AUTH: refused without (77), granted with, never printed", test_auth_acl);
    CU_add_test(s, "stalled connection, no grace: command stopped when in doubt, exit 75", test_lost_in_doubt);
    CU_add_test(s, "stalled past the session: LOST, SIGTERM ignored, SIGKILL, exit 75", test_lost_session);
    CU_add_test(s, "short stall within --grace: the command survives", test_grace_survives);
    CU_add_test(s, "--leader: short stall within --grace: the command survives, leadership kept",
                test_leader_grace_survives);
    CU_add_test(s, "--print --leader: hostile ids and names escaped (controls, C1, not UTF-8)",
                test_print_leader_hostile);
    CU_add_test(s, "--leader: two runs lead one after the other; --print --leader lists both",
                test_leader_one_at_a_time);
    CU_add_test(s, "--leader: another leader gives the conflict code; the id, token and node in the environment",
                test_leader_timeout_and_env);
    CU_add_test(s, "--leader, stalled connection, no grace: command stopped when in doubt, exit 75",
                test_leader_in_doubt);
    CU_add_test(s, "--leader, stalled past the session: leadership lost, SIGKILL, exit 75",
                test_leader_lost_session);
}

int main(void)
{
    return zkt_main("zkr-lock", add_suites);
}

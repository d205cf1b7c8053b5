/* zkr-cache, the command-line tool, run as a user runs it: the built
 * tools/zkr-cache is started with fork/exec against the test server, its
 * output read from a file while the test changes nodes with the raw C
 * client.  The listing (--once, --depth, --children, --node, --stat, a
 * node its ACL keeps from us), the changes printed as they happen (within
 * a bound), connection states through a stalled proxy, a lost session,
 * hostile bytes escaped, --timeout, bad usage and the exit codes.
 *
 * Every wait is bounded. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/harness/zkproxy.h"
#include "tests/harness/zkr_test.h"
#include "tests/zkrl_run.h"

#define CHANGE_BOUND_MS 5000 /* a change is printed within this */

static void create(zhandle_t *zh, const char *path, const char *data, int len)
{
    int rc = zoo_create(zh, path, data, data ? len : -1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
    CU_ASSERT_EQUAL_FATAL(rc, ZOK);
}

/* A tree: P "root", P/a "1", P/a/x "deep", P/b "two words", P/e (empty). */
static zhandle_t *make_tree(char *path, size_t len, const char *name)
{
    zkt_path(name, path, len);
    zhandle_t *zh = zkt_raw();
    int rc = zoo_create(zh, "/zkr-test", NULL, -1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
    CU_ASSERT(rc == ZOK || rc == ZNODEEXISTS);
    char p[256];
    create(zh, path, "root", 4);
    snprintf(p, sizeof p, "%s/a", path);
    create(zh, p, "1", 1);
    snprintf(p, sizeof p, "%s/a/x", path);
    create(zh, p, "deep", 4);
    snprintf(p, sizeof p, "%s/b", path);
    create(zh, p, "two words", 9);
    snprintf(p, sizeof p, "%s/e", path);
    create(zh, p, "", 0);
    return zh;
}

static void delete_tree(zhandle_t *zh, const char *path)
{
    struct String_vector kids = {0, NULL};
    if (zoo_get_children(zh, path, 0, &kids) == ZOK) {
        for (int i = 0; i < kids.count; i++) {
            char child[512];
            snprintf(child, sizeof child, "%s/%s", path, kids.data[i]);
            delete_tree(zh, child);
        }
        deallocate_String_vector(&kids);
    }
    zoo_delete(zh, path, -1);
}

/* zkr-cache --hosts HOSTS opts... path --once: exit status; out has the
 * listing. */
static int once(const char *out, const char *err, const char *path, const char *const *opts)
{
    const char *args[32];
    int k = 0;
    args[k++] = "--hosts";
    args[k++] = zkt_hosts();
    args[k++] = "--once";
    for (int i = 0; opts && opts[i] && k < 28; i++)
        args[k++] = opts[i];
    args[k++] = path;
    args[k] = NULL;
    return run_tool(out, err, args);
}

/* The listing, with the test's path replaced by "P" (malloc'd). */
static char *listing(const char *out, const char *path)
{
    char *t = slurp(out);
    char *r = calloc(1, strlen(t) + 1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    size_t pl = strlen(path), k = 0;
    for (const char *s = t; *s;) {
        if (strncmp(s, path, pl) == 0) {
            r[k++] = 'P';
            s += pl;
        } else {
            r[k++] = *s++;
        }
    }
    free(t);
    return r;
}

static void assert_listing(const char *out, const char *path, const char *want)
{
    char *got = listing(out, path);
    CU_ASSERT_STRING_EQUAL(got, want);
    if (strcmp(got, want) != 0)
        printf("\n    listing:\n%s    wanted:\n%s", got, want);
    free(got);
}

/* ---- the listing ------------------------------------------------------------------- */

static void test_once_shapes(void)
{
    char path[128];
    zhandle_t *zh = make_tree(path, sizeof path, "cache-once");
    const char *out = wfile("once.out"), *err = wfile("once.err");
    /* parents before children, siblings in name order, the data after one
     * space (an empty one: the path alone) */
    CU_ASSERT_EQUAL(once(out, err, path, NULL), 0);
    assert_listing(out, path, "P root\nP/a 1\nP/a/x deep\nP/b two words\nP/e\n");
    CU_ASSERT_EQUAL(once(out, err, path, (const char *const[]){"--depth", "1", NULL}), 0);
    assert_listing(out, path, "P root\nP/a 1\nP/b two words\nP/e\n");
    CU_ASSERT_EQUAL(once(out, err, path, (const char *const[]){"--depth", "0", NULL}), 0);
    assert_listing(out, path, "P root\n");
    CU_ASSERT_EQUAL(once(out, err, path, (const char *const[]){"--children", NULL}), 0);
    assert_listing(out, path, "P/a 1\nP/b two words\nP/e\n");
    CU_ASSERT_EQUAL(once(out, err, path, (const char *const[]){"--node", NULL}), 0);
    assert_listing(out, path, "P root\n");
    char *e = slurp(err);
    CU_ASSERT_STRING_EQUAL(e, ""); /* nothing of its own on success */
    free(e);

    /* --stat: the stat instead of the data, as the server has it */
    CU_ASSERT_EQUAL(once(out, err, path, (const char *const[]){"--stat", "--node", NULL}), 0);
    struct Stat st;
    CU_ASSERT_EQUAL(zoo_exists(zh, path, 0, &st), ZOK);
    char want[512];
    snprintf(want, sizeof want, "%s czxid=%lld mzxid=%lld version=%d length=4 children=3 owner=0x0\n", path,
             (long long)st.czxid, (long long)st.mzxid, st.version);
    char *t = slurp(out);
    CU_ASSERT_STRING_EQUAL(t, want);
    if (strcmp(t, want) != 0)
        printf("\n    --stat: %s    wanted: %s", t, want);
    free(t);

    /* a path that does not exist: nothing to print, and no error */
    char missing[192];
    snprintf(missing, sizeof missing, "%s/none", path);
    CU_ASSERT_EQUAL(once(out, err, missing, NULL), 0);
    t = slurp(out);
    CU_ASSERT_STRING_EQUAL(t, "");
    free(t);
    delete_tree(zh, path);
    zkt_raw_close(zh);
}

/* A node whose ACL refuses the read: left out (with what is below it),
 * said in one line of the tool's own (not with --quiet); with the
 * credentials (ZKR_AUTH) it is there. */
static void test_unreadable(void)
{
    char path[128], p[256];
    zkt_path("cache-acl", path, sizeof path);
    zhandle_t *zh = zkt_raw();
    CU_ASSERT_EQUAL_FATAL(zoo_add_auth(zh, "digest", "zkr:secret", 10, NULL, NULL), ZOK);
    int rc = zoo_create(zh, "/zkr-test", NULL, -1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
    CU_ASSERT(rc == ZOK || rc == ZNODEEXISTS);
    create(zh, path, "root", 4);
    snprintf(p, sizeof p, "%s/plain", path);
    create(zh, p, "p", 1);
    snprintf(p, sizeof p, "%s/secret", path);
    CU_ASSERT_EQUAL_FATAL(zoo_create(zh, p, "s", 1, &ZOO_CREATOR_ALL_ACL, 0, NULL, 0), ZOK);
    snprintf(p, sizeof p, "%s/secret/below", path);
    CU_ASSERT_EQUAL_FATAL(zoo_create(zh, p, "b", 1, &ZOO_CREATOR_ALL_ACL, 0, NULL, 0), ZOK);
    const char *out = wfile("acl.out"), *err = wfile("acl.err");
    CU_ASSERT_EQUAL(once(out, err, path, NULL), 0);
    assert_listing(out, path, "P root\nP/plain p\n");
    snprintf(p, sizeof p, "%s/secret", path);
    assert_one_line(err, p);
    CU_ASSERT_EQUAL(once(out, err, path, (const char *const[]){"--quiet", NULL}), 0);
    char *t = slurp(err);
    CU_ASSERT_STRING_EQUAL(t, "");
    free(t);
    CU_ASSERT_EQUAL_FATAL(setenv("ZKR_AUTH", "digest:zkr:secret", 1), 0);
    CU_ASSERT_EQUAL(once(out, err, path, NULL), 0);
    unsetenv("ZKR_AUTH");
    assert_listing(out, path, "P root\nP/plain p\nP/secret s\nP/secret/below b\n");
    delete_tree(zh, path);
    zkt_raw_close(zh);
}

/* ---- changes as they happen ------------------------------------------------------------- */

/* Wait for a line (exactly), with the test's path as "P"; the time it took,
 * or -1. */
static int64_t wait_line(const char *out, const char *path, const char *want, int ms)
{
    int64_t t0 = zkt_now_ms();
    char line[512];
    /* the line as printed: "P" back to the path */
    size_t k = 0;
    for (const char *s = want; *s && k + strlen(path) + 1 < sizeof line; s++) {
        if (*s == 'P' && (s == want || s[-1] == ' ')) {
            memcpy(line + k, path, strlen(path));
            k += strlen(path);
        } else {
            line[k++] = *s;
        }
    }
    line[k++] = '\n';
    line[k] = '\0';
    while (zkt_now_ms() - t0 < ms) {
        char *t = slurp(out);
        /* a whole line: at the start, or after a newline */
        char nl[520];
        snprintf(nl, sizeof nl, "\n%s", line);
        int found = strncmp(t, line, strlen(line)) == 0 || strstr(t, nl) != NULL;
        free(t);
        if (found)
            return zkt_now_ms() - t0;
        zkt_sleep_ms(20);
    }
    return -1;
}

static void expect_line(const char *out, const char *path, const char *want)
{
    int64_t took = wait_line(out, path, want, CHANGE_BOUND_MS);
    printf("\n    %-40s %lld ms", want, (long long)took);
    CU_ASSERT(took >= 0);
    if (took < 0) {
        char *t = listing(out, path);
        printf("\n    output:\n%s", t);
        free(t);
    }
}

static void test_follow_changes(void)
{
    char path[128], p[256];
    zhandle_t *zh = make_tree(path, sizeof path, "cache-follow");
    const char *out = wfile("follow.out"), *err = wfile("follow.err");
    const char *const args[] = {"--hosts", zkt_hosts(), path, NULL};
    pid_t pid = start_tool(out, err, args);
    CU_ASSERT_FATAL(wait_lines(out, "INITIALIZED", 1, WAIT_MS));
    /* each change is printed, within a bound, one line each */
    snprintf(p, sizeof p, "%s/a", path);
    CU_ASSERT_EQUAL(zoo_set(zh, p, "2", 1, -1), ZOK);
    expect_line(out, path, "CHANGED P/a 2");
    snprintf(p, sizeof p, "%s/c", path);
    create(zh, p, "new one", 7);
    expect_line(out, path, "CREATED P/c new one");
    snprintf(p, sizeof p, "%s/a/x", path);
    CU_ASSERT_EQUAL(zoo_delete(zh, p, -1), ZOK);
    expect_line(out, path, "DELETED P/a/x");
    /* deleted and made again with the same data: DELETED, then CREATED */
    snprintf(p, sizeof p, "%s/c", path);
    CU_ASSERT_EQUAL(zoo_delete(zh, p, -1), ZOK);
    create(zh, p, "new one", 7);
    expect_line(out, path, "DELETED P/c");
    CU_ASSERT(wait_lines(out, "CREATED ", 2, CHANGE_BOUND_MS));
    /* the path itself */
    CU_ASSERT_EQUAL(zoo_set(zh, path, "", 0, -1), ZOK);
    expect_line(out, path, "CHANGED P");

    kill(pid, SIGTERM);
    CU_ASSERT_EQUAL(zkt_wait_child(pid, RUN_MS), 0); /* a signal after the listing: a clean stop */
    char *e = slurp(err);
    CU_ASSERT_STRING_EQUAL(e, "");
    free(e);
    /* the whole output, in order: the listing, INITIALIZED, one line per change */
    assert_listing(out, path,
                   "P root\nP/a 1\nP/a/x deep\nP/b two words\nP/e\nINITIALIZED\n"
                   "CHANGED P/a 2\nCREATED P/c new one\nDELETED P/a/x\nDELETED P/c\nCREATED P/c new one\n"
                   "CHANGED P\n");
    delete_tree(zh, path);
    zkt_raw_close(zh);
}

/* A path that does not exist yet: an empty listing, then its creation. */
static void test_follow_missing_path(void)
{
    char path[128], p[256];
    zkt_path("cache-later", path, sizeof path);
    zhandle_t *zh = zkt_raw();
    int rc = zoo_create(zh, "/zkr-test", NULL, -1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
    CU_ASSERT(rc == ZOK || rc == ZNODEEXISTS);
    const char *out = wfile("later.out");
    const char *const args[] = {"-s", zkt_hosts(), "--children", path, NULL};
    pid_t pid = start_tool(out, NULL, args);
    CU_ASSERT_FATAL(wait_lines(out, "INITIALIZED", 1, WAIT_MS));
    create(zh, path, "not shown", 9); /* --children: the path is not a cached node */
    snprintf(p, sizeof p, "%s/k", path);
    create(zh, p, "v", 1);
    expect_line(out, path, "CREATED P/k v");
    delete_tree(zh, path);
    expect_line(out, path, "DELETED P/k");
    kill(pid, SIGINT);
    CU_ASSERT_EQUAL(zkt_wait_child(pid, RUN_MS), 0);
    assert_listing(out, path, "INITIALIZED\nCREATED P/k v\nDELETED P/k\n");
    zkt_raw_close(zh);
}

/* A stalled connection: STATE SUSPENDED, then STATE RECONNECTED. */
static void test_states(void)
{
    char path[128];
    zhandle_t *zh = make_tree(path, sizeof path, "cache-states");
    zkt_proxy_t *px = zkt_proxy_start(zkt_server_port());
    CU_ASSERT_PTR_NOT_NULL_FATAL(px);
    const char *out = wfile("states.out");
    /* 9 s session: the client gives up on the connection after 2/3 of it,
     * the server expires it only after all of it */
    const char *const args[] = {"--hosts", zkt_proxy_hosts(px), "--session-timeout", "9000", "--node", path, NULL};
    pid_t pid = start_tool(out, NULL, args);
    CU_ASSERT_FATAL(wait_lines(out, "INITIALIZED", 1, WAIT_MS));
    CU_ASSERT_EQUAL(zkt_proxy_stall(px, 1), 0);
    int suspended = wait_lines(out, "STATE SUSPENDED", 1, WAIT_MS);
    CU_ASSERT(suspended);
    CU_ASSERT_EQUAL(zkt_proxy_stall(px, 0), 0);
    CU_ASSERT(wait_lines(out, "STATE RECONNECTED", 1, WAIT_MS));
    /* and it goes on following */
    CU_ASSERT_EQUAL(zoo_set(zh, path, "after", 5, -1), ZOK);
    expect_line(out, path, "CHANGED P after");
    kill(pid, SIGTERM);
    CU_ASSERT_EQUAL(zkt_wait_child(pid, RUN_MS), 0);
    zkt_proxy_stop(px);
    delete_tree(zh, path);
    zkt_raw_close(zh);
}

/* The session lost (the connection stalled past it) while the tree
 * changes: STATE LOST, then on a new session the copy read again, only the
 * differences told, and INITIALIZED again. */
static void test_session_lost(void)
{
    char path[128], p[256];
    zhandle_t *zh = make_tree(path, sizeof path, "cache-lost");
    zkt_proxy_t *px = zkt_proxy_start(zkt_server_port());
    CU_ASSERT_PTR_NOT_NULL_FATAL(px);
    const char *out = wfile("lost.out");
    const char *const args[] = {"--hosts", zkt_proxy_hosts(px), "--session-timeout", "4000", path, NULL};
    pid_t pid = start_tool(out, NULL, args);
    CU_ASSERT_FATAL(wait_lines(out, "INITIALIZED", 1, WAIT_MS));
    CU_ASSERT_EQUAL(zkt_proxy_stall(px, 1), 0);
    CU_ASSERT(wait_lines(out, "STATE SUSPENDED", 1, WAIT_MS));
    /* meanwhile: one node changed, one deleted, one made */
    snprintf(p, sizeof p, "%s/a", path);
    CU_ASSERT_EQUAL(zoo_set(zh, p, "while away", 10, -1), ZOK);
    snprintf(p, sizeof p, "%s/a/x", path);
    CU_ASSERT_EQUAL(zoo_delete(zh, p, -1), ZOK);
    snprintf(p, sizeof p, "%s/f", path);
    create(zh, p, "F", 1);
    CU_ASSERT(wait_lines(out, "STATE LOST", 1, WAIT_MS));
    CU_ASSERT_EQUAL(zkt_proxy_stall(px, 0), 0);
    CU_ASSERT(wait_lines(out, "INITIALIZED", 2, WAIT_MS));
    kill(pid, SIGTERM);
    CU_ASSERT_EQUAL(zkt_wait_child(pid, RUN_MS), 0);
    /* after the listing: only what differs, each once, then INITIALIZED */
    char *t = listing(out, path);
    const char *after = strstr(t, "STATE LOST\n");
    CU_ASSERT_PTR_NOT_NULL_FATAL(after);
    CU_ASSERT_PTR_NOT_NULL(strstr(after, "CHANGED P/a while away\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(after, "DELETED P/a/x\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(after, "CREATED P/f F\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(after, "STATE RECONNECTED\n"));
    const char *init = strstr(after, "INITIALIZED\n");
    CU_ASSERT_PTR_NOT_NULL(init);
    /* the unchanged nodes are not told again */
    CU_ASSERT_PTR_NULL(strstr(after, "P/b"));
    CU_ASSERT_PTR_NULL(strstr(after, "P/e"));
    CU_ASSERT_PTR_NULL(strstr(after, "P root"));
    CU_ASSERT_PTR_NULL(strstr(strstr(after, "CHANGED P/a while away\n") + 1, "CHANGED P/a"));
    if (!init || strstr(after, "P/b"))
        printf("\n    output:\n%s", t);
    free(t);
    zkt_proxy_stop(px);
    delete_tree(zh, path);
    zkt_raw_close(zh);
}

/* ---- hostile bytes ------------------------------------------------------------------------ */

/* Data and names come from the server: what could break a line or act on a
 * terminal is escaped (C0 and C1 controls, DEL, backslashes, bytes that are
 * not UTF-8; in paths spaces too); well-formed UTF-8 is kept. */
static void test_hostile_bytes(void)
{
    char path[128], p[256];
    zkt_path("cache-hostile", path, sizeof path);
    zhandle_t *zh = zkt_raw();
    int rc = zoo_create(zh, "/zkr-test", NULL, -1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
    CU_ASSERT(rc == ZOK || rc == ZNODEEXISTS);
    create(zh, path, NULL, 0);
    snprintf(p, sizeof p, "%s/sp ace\xc3\xa9", path);
    static const char data[] = "a\xc2\x9b[2J\xff b\x1b\\\n\x7f\xc3\xa9\xe2\x82\xac\xed\xa0\x80";
    create(zh, p, data, (int)sizeof data - 1);
    const char *out = wfile("hostile.out");
    CU_ASSERT_EQUAL(once(out, NULL, path, (const char *const[]){"--children", NULL}), 0);
    assert_listing(out, path, "P/sp\\x20ace\xc3\xa9 a\\xc2\\x9b[2J\\xff b\\x1b\\x5c\\x0a\\x7f\xc3\xa9\xe2\x82\xac"
                              "\\xed\\xa0\\x80\n");
    /* and in an event */
    const char *const args[] = {"--hosts", zkt_hosts(), "--children", path, NULL};
    pid_t pid = start_tool(out, NULL, args);
    CU_ASSERT_FATAL(wait_lines(out, "INITIALIZED", 1, WAIT_MS));
    CU_ASSERT_EQUAL(zoo_set(zh, p, "\x01\xc0\xaf", 3, -1), ZOK);
    expect_line(out, path, "CHANGED P/sp\\x20ace\xc3\xa9 \\x01\\xc0\\xaf");
    kill(pid, SIGTERM);
    CU_ASSERT_EQUAL(zkt_wait_child(pid, RUN_MS), 0);
    char *t = slurp(out);
    for (const unsigned char *s = (const unsigned char *)t; *s; s++)
        CU_ASSERT(*s >= 0x20 || *s == '\n'); /* no control reaches the terminal */
    CU_ASSERT_PTR_NULL(strstr(t, "\xc2\x9b"));
    CU_ASSERT_PTR_NULL(strchr(t, '\xff'));
    free(t);
    delete_tree(zh, path);
    zkt_raw_close(zh);
}

/* ---- bad usage, no server ------------------------------------------------------------------ */

static void usage_case(const char *const *args, const char *what)
{
    const char *err = wfile("usage.err"), *out = wfile("usage.out");
    CU_ASSERT_EQUAL(run_tool(out, err, args), 64);
    assert_one_line(err, what);
    char *t = slurp(err);
    CU_ASSERT_EQUAL(count_lines(t), 1); /* and nothing else */
    free(t);
    t = slurp(out);
    CU_ASSERT_STRING_EQUAL(t, "");
    free(t);
}

static void test_usage_and_errors(void)
{
    usage_case((const char *const[]){NULL}, "no PATH");
    usage_case((const char *const[]){"--bogus", "/x", NULL}, "unknown option --bogus");
    usage_case((const char *const[]){"-Z", "/x", NULL}, "unknown option -Z");
    usage_case((const char *const[]){"relative", NULL}, "absolute");
    usage_case((const char *const[]){"/x/", NULL}, "absolute");
    usage_case((const char *const[]){"/x", "/y", NULL}, "one PATH only");
    usage_case((const char *const[]){"--depth", "-1", "/x", NULL}, "--depth");
    usage_case((const char *const[]){"--depth", "2", "--children", "/x", NULL}, "--depth goes with");
    usage_case((const char *const[]){"--children", "--node", "/x", NULL}, "one of --children and --node");
    usage_case((const char *const[]){"--timeout", "soon", "/x", NULL}, "--timeout");
    usage_case((const char *const[]){"--timeout", NULL}, "needs a value");
    usage_case((const char *const[]){"--auth", "nocolon", "/x", NULL}, "SCHEME:CREDENTIALS");

    const char *out = wfile("help.out"), *err = wfile("help.err");
    CU_ASSERT_EQUAL(run_tool(out, err, (const char *const[]){"--help", NULL}), 0);
    char *t = slurp(out);
    const char *opts[] = {"--hosts", "--server", "--session-timeout", "--connect-timeout", "--chroot", "--auth",
                          "--depth", "--children", "--node", "--stat", "--once", "--timeout", "--quiet", "--help",
                          "--version", "Exit status", "64", "69", "70", "75", "77", "128+N"};
    for (size_t i = 0; i < sizeof opts / sizeof opts[0]; i++) {
        CU_ASSERT_PTR_NOT_NULL(strstr(t, opts[i]));
        if (!strstr(t, opts[i]))
            printf("\n    --help does not say %s", opts[i]);
    }
    free(t);
    CU_ASSERT_EQUAL(run_tool(out, err, (const char *const[]){"--version", NULL}), 0);
    t = slurp(out);
    char want[64];
    snprintf(want, sizeof want, "zkr-cache (zkrecipes) %s\n", zkr_version());
    CU_ASSERT_STRING_EQUAL(t, want);
    free(t);

    /* nothing listens on port 1 */
    const char *const down[] = {"--hosts", "127.0.0.1:1", "--connect-timeout", "1", "/x", NULL};
    CU_ASSERT_EQUAL(run_tool(NULL, err, down), 69);
    assert_one_line(err, "cannot connect to 127.0.0.1:1");
    /* a chroot that does not exist: bad usage */
    const char *const chroot[] = {"--hosts", zkt_hosts(), "--chroot", "/zkr-no-such-chroot", "--once", "/x", NULL};
    CU_ASSERT_EQUAL(run_tool(NULL, err, chroot), 64);
    assert_one_line(err, "the chroot /zkr-no-such-chroot does not exist");
}

/* --timeout: a first load not done in time gives up with 75.  With 0 the
 * tool looks once, right after the cache starts: the load of a tree of
 * three levels takes several round trips to the server, so it is not done
 * then.  A long timeout lets the same load finish. */
static void test_load_timeout(void)
{
    char path[128], p[256];
    zhandle_t *zh = make_tree(path, sizeof path, "cache-timeout");
    for (int i = 0; i < 40; i++) {
        snprintf(p, sizeof p, "%s/b/n%02d", path, i);
        create(zh, p, "x", 1);
    }
    const char *out = wfile("timeout.out"), *err = wfile("timeout.err");
    int64_t t0 = zkt_now_ms();
    CU_ASSERT_EQUAL(once(out, err, path, (const char *const[]){"--timeout", "0", NULL}), 75);
    printf("\n    --timeout 0: exit 75 after %lld ms", (long long)(zkt_now_ms() - t0));
    assert_one_line(err, "not loaded within 0.0 s");
    char *t = slurp(out);
    CU_ASSERT_STRING_EQUAL(t, ""); /* nothing printed */
    free(t);
    CU_ASSERT_EQUAL(once(out, err, path, (const char *const[]){"--timeout", "30", NULL}), 0);
    CU_ASSERT_EQUAL(lines_with(out, path), 45);
    delete_tree(zh, path);
    zkt_raw_close(zh);
}

/* ---- the suite ----------------------------------------------------------------------------- */

static void add_suites(void)
{
    CU_pSuite s = CU_add_suite("zkr-cache", zkrl_suite_init, zkrl_suite_clean);
    CU_add_test(s, "bad usage, no server, a missing chroot: codes and one-line messages", test_usage_and_errors);
    CU_add_test(s, "--once: the listing, --depth, --children, --node, --stat, a missing path", test_once_shapes);
    CU_add_test(s, "a node its ACL keeps from us: left out, said once; with ZKR_AUTH: there", test_unreadable);
    CU_add_test(s, "changes printed as they happen, in order, within a bound; SIGTERM: exit 0",
                test_follow_changes);
    CU_add_test(s, "--children on a path made later: its children's events", test_follow_missing_path);
    CU_add_test(s, "hostile data and names escaped (controls, C1, not UTF-8), in the listing and events",
                test_hostile_bytes);
    CU_add_test(s, "a stalled connection: STATE SUSPENDED, STATE RECONNECTED, then changes again", test_states);
    CU_add_test(s, "the session lost: STATE LOST, the differences, INITIALIZED again", test_session_lost);
    CU_add_test(s, "--timeout: the first load not done in time: 75", test_load_timeout);
}

int main(void)
{
    zkrl_tool = "zkr-cache";
    return zkt_main("zkr-cache", add_suites);
}

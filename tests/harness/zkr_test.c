#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/harness/zkr_test.h"

/* Under AddressSanitizer (scripts/sanitize.sh), every allocation's stack is
 * taken with the slow unwinder (the unwind tables) instead of frame
 * pointers.  The ZooKeeper C client is built without frame pointers: with
 * the fast unwinder the stack of an allocation made inside it stops at its
 * first frame, an internal function without a name, so tests/lsan.supp
 * (zookeeper_process, zoo_a...) never matches the C client's own leak of
 * what it queued before a close (tests/valgrind.supp) and every such close
 * fails the run.  Our own allocations' stacks only get more complete.  No
 * effect without ASan (the runtime asks for this function; nothing else
 * calls it). */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
    return "fast_unwind_on_malloc=0";
}

const char *zkt_hosts(void)
{
    const char *h = getenv("ZKR_TEST_HOSTS");
    return h ? h : "127.0.0.1:2181";
}

int zkt_server(const char *cmd)
{
    const char *harness = getenv("ZKR_HARNESS");
    const char *dir = getenv("ZKR_TEST_ZKDIR");
    if (!harness || !dir)
        return -1;
    char line[2048];
    snprintf(line, sizeof line, "'%s' %s '%s' >/dev/null 2>&1", harness, cmd, dir);
    int st = system(line);
    return st == -1 ? -1 : WEXITSTATUS(st);
}

char *zkt_4lw(const char *word)
{
    const char *harness = getenv("ZKR_HARNESS");
    const char *dir = getenv("ZKR_TEST_ZKDIR");
    if (!harness || !dir)
        return NULL;
    char line[2048];
    snprintf(line, sizeof line, "'%s' 4lw '%s' %s", harness, dir, word);
    FILE *p = popen(line, "r");
    if (!p)
        return NULL;
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    if (!buf) {
        pclose(p);
        return NULL;
    }
    size_t r;
    while ((r = fread(buf + n, 1, cap - n - 1, p)) > 0) {
        n += r;
        if (cap - n < 2) {
            char *nb = realloc(buf, cap * 2);
            if (!nb)
                break;
            buf = nb;
            cap *= 2;
        }
    }
    buf[n] = '\0';
    pclose(p);
    return buf;
}

const char *zkt_path(const char *name, char *buf, size_t len)
{
    static int counter;
    snprintf(buf, len, "/zkr-test/%s-%d-%d", name, (int)getpid(), ++counter);
    return buf;
}

zkr_client_t *zkt_client(int session_timeout_ms)
{
    zkr_client_t *c = zkt_plain_client(session_timeout_ms);
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    return c;
}

static void raw_watcher(zhandle_t *zh, int type, int state, const char *path, void *ctx)
{
    (void)zh, (void)type, (void)state, (void)path, (void)ctx;
}

zhandle_t *zkt_raw(void)
{
    return zkt_raw_at(zkt_hosts());
}

zhandle_t *zkt_raw_at(const char *hosts)
{
    zhandle_t *zh = zookeeper_init(hosts, raw_watcher, 10000, NULL, NULL, 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(zh);
    for (int i = 0; i < 200 && zoo_state(zh) != ZOO_CONNECTED_STATE; i++)
        zkt_sleep_ms(50);
    CU_ASSERT_EQUAL_FATAL(zoo_state(zh), ZOO_CONNECTED_STATE);
    return zh;
}

zhandle_t *zkt_plain_raw(void)
{
    return zkt_plain_raw_at(zkt_hosts());
}

zhandle_t *zkt_plain_raw_at(const char *hosts)
{
    zhandle_t *zh = zookeeper_init(hosts, raw_watcher, 10000, NULL, NULL, 0);
    if (!zh)
        return NULL;
    for (int i = 0; i < 200 && zoo_state(zh) != ZOO_CONNECTED_STATE; i++)
        zkt_sleep_ms(50);
    if (zoo_state(zh) != ZOO_CONNECTED_STATE) {
        zookeeper_close(zh);
        return NULL;
    }
    return zh;
}

void zkt_raw_close(zhandle_t *zh)
{
    if (zh)
        zookeeper_close(zh);
}

int zkt_count_children(zhandle_t *zh, const char *path)
{
    struct String_vector sv = {0, NULL};
    int rc = zoo_get_children(zh, path, 0, &sv);
    if (rc == ZNONODE)
        return 0;
    if (rc != ZOK)
        return -1;
    int n = sv.count;
    deallocate_String_vector(&sv);
    return n;
}

void zkt_sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) == -1 && errno == EINTR) {
    }
}

int64_t zkt_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int zkt_wait_for(int (*cond)(void *), void *arg, int timeout_ms)
{
    int64_t end = zkt_now_ms() + timeout_ms;
    for (;;) {
        if (cond(arg))
            return 1;
        if (zkt_now_ms() >= end)
            return 0;
        zkt_sleep_ms(20);
    }
}

/* wchp output: "/path\n\t0x<session>\n..." : count sessions under the exact
 * path line. */
zkr_client_t *zkt_client_at(const char *hosts, int session_ms)
{
    zkr_client_options_t o;
    zkr_client_options_init(&o);
    o.session_timeout_ms = session_ms;
    o.connect_timeout_ms = 20000;
    o.zk_log_level = 0;
    zkr_client_t *c = NULL;
    CU_ASSERT_EQUAL_FATAL(zkr_client_open(&c, hosts, &o), ZKR_OK);
    return c;
}

int zkt_server_port(void)
{
    const char *colon = strrchr(zkt_hosts(), ':');
    return colon ? atoi(colon + 1) : 2181;
}

/* A raw handle kept for owner look-ups (zhandle_t is thread-safe). */
static pthread_mutex_t owner_mu = PTHREAD_MUTEX_INITIALIZER;
static zhandle_t *owner_zh;

int64_t zkt_owner_of(const char *path)
{
    pthread_mutex_lock(&owner_mu);
    if (!owner_zh)
        owner_zh = zkt_raw_at(zkt_hosts());
    zhandle_t *zh = owner_zh;
    pthread_mutex_unlock(&owner_mu);
    struct Stat st;
    return zh && zoo_exists(zh, path, 0, &st) == ZOK ? st.ephemeralOwner : 0;
}

int zkt_watch_report_sessions(const char *report, const char *path, int own, int64_t *out, int max)
{
    int64_t owner = zkt_owner_of(path);
    char *copy = strdup(report);
    if (!copy)
        return -1;
    int n = 0, in = 0;
    char *save = NULL;
    for (char *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        if (line[0] == '/') {
            in = strcmp(line, path) == 0;
            continue;
        }
        char *x = in ? strstr(line, "0x") : NULL;
        if (!x)
            continue;
        int64_t id = (int64_t)strtoull(x + 2, NULL, 16);
        if ((own != 0) != (owner != 0 && id == owner))
            continue;
        if (n < max)
            out[n] = id;
        n++;
    }
    free(copy);
    return n;
}

int zkt_watch_count_on_exact(const char *path)
{
    char *out = zkt_4lw("wchp");
    if (!out)
        return -1;
    int n = zkt_watch_report_sessions(out, path, 0, NULL, 0);
    free(out);
    return n;
}

int zkt_watches_on(const char *path)
{
    return zkt_watch_count_on_exact(path);
}

int zkt_report_waiter_watches_under(const char *report, const char *dir)
{
    char *copy = strdup(report);
    if (!copy)
        return -1;
    size_t dl = strlen(dir);
    int n = 0;
    char *save = NULL;
    for (char *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        if (line[0] == '/' && strncmp(line, dir, dl) == 0 && (line[dl] == '\0' || line[dl] == '/'))
            n += zkt_watch_report_sessions(report, line, 0, NULL, 0);
    }
    free(copy);
    return n;
}

int zkt_waiter_watches_under(const char *dir)
{
    char *r = zkt_4lw("wchp");
    if (!r)
        return -1;
    int n = zkt_report_waiter_watches_under(r, dir);
    free(r);
    return n;
}

int zkt_newest_child(zhandle_t *zh, const char *dir, char *out, size_t len)
{
    struct String_vector sv = {0, NULL};
    if (zoo_get_children(zh, dir, 0, &sv) != ZOK)
        return 0;
    const char *best = NULL;
    for (int32_t i = 0; i < sv.count; i++) {
        size_t n = strlen(sv.data[i]);
        if (n >= 10 && (!best || strcmp(sv.data[i] + n - 10, best + strlen(best) - 10) > 0))
            best = sv.data[i];
    }
    int ok = best && (size_t)snprintf(out, len, "%s/%s", dir, best) < len;
    deallocate_String_vector(&sv);
    return ok;
}

int zkt_owner_watches(const char *path)
{
    char *out = zkt_4lw("wchp");
    if (!out)
        return -1;
    int n = zkt_watch_report_sessions(out, path, 1, NULL, 0);
    free(out);
    return n;
}

int zkt_main(const char *name, void (*add)(void))
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    /* The ZooKeeper C client's own lines (process-wide; the raw handles of
     * the tests print them to stderr): none, unless ZKR_ZK_LOG asks. */
    zkr_set_zk_log_level(getenv("ZKR_ZK_LOG") ? atoi(getenv("ZKR_ZK_LOG")) : 0);
    if (CU_initialize_registry() != CUE_SUCCESS)
        return 2;
    add();
    CU_basic_set_mode(CU_BRM_VERBOSE);
    printf("== %s ==\n", name);
    const char *only = getenv("ZKR_SUITE"); /* run one suite by name */
    if (only && *only) {
        CU_pSuite s = CU_get_suite(only);
        if (!s) {
            fprintf(stderr, "%s: no suite named \"%s\"\n", name, only);
            CU_cleanup_registry();
            return 2;
        }
        const char *test = getenv("ZKR_TEST"); /* and one test of it */
        CU_pTest t = test && *test ? CU_get_test(s, test) : NULL;
        if (test && *test && !t) {
            fprintf(stderr, "%s: no test named \"%s\" in \"%s\"\n", name, test, only);
            CU_cleanup_registry();
            return 2;
        }
        if (t)
            CU_basic_run_test(s, t);
        else
            CU_basic_run_suite(s);
    } else {
        CU_basic_run_tests();
    }
    unsigned failed = CU_get_number_of_tests_failed() + CU_get_number_of_suites_failed();
    unsigned ran = CU_get_number_of_tests_run();
    CU_cleanup_registry();
    return (failed == 0 && ran > 0) ? 0 : 1;
}

int zkt_expire_session(int64_t id, const char passwd[16])
{
    return zkt_expire_session_at(zkt_hosts(), id, passwd);
}

int zkt_expire_session_at(const char *hosts, int64_t id, const char passwd[16])
{
    clientid_t cid;
    memset(&cid, 0, sizeof cid);
    cid.client_id = id;
    memcpy(cid.passwd, passwd, 16);
    for (int attempt = 0; attempt < 8; attempt++) {
        zhandle_t *zh = zookeeper_init(hosts, raw_watcher, 4000, &cid, NULL, 0);
        if (!zh)
            return -1;
        int st = 0;
        for (int i = 0; i < 200; i++) {
            st = zoo_state(zh);
            if (st == ZOO_CONNECTED_STATE || st == ZOO_EXPIRED_SESSION_STATE)
                break;
            zkt_sleep_ms(25);
        }
        zookeeper_close(zh); /* connected: this closes the session */
        if (st == ZOO_EXPIRED_SESSION_STATE)
            return 0;
        zkt_sleep_ms(200);
    }
    return -1;
}

/* ---- shared by the suites ---- */

/* A client for code that must not use CUnit (threads of a forked child). */
zkr_client_t *zkt_plain_client(int session_ms)
{
    zkr_client_options_t o;
    zkr_client_options_init(&o);
    o.session_timeout_ms = session_ms;
    o.connect_timeout_ms = 20000;
    o.zk_log_level = getenv("ZKR_ZK_LOG") ? atoi(getenv("ZKR_ZK_LOG")) : 0;
    zkr_client_t *c = NULL;
    return zkr_client_open(&c, zkt_hosts(), &o) == ZKR_OK ? c : NULL;
}

/* A "key<TAB>value" line of mntr, or "Total watches:N" of wchs. */
long long zkt_stat_value(const char *word, const char *key)
{
    char *r = zkt_4lw(word);
    if (!r)
        return -1;
    long long v = -1;
    size_t kl = strlen(key);
    char *save = NULL;
    for (char *line = strtok_r(r, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        if (strncmp(line, key, kl) == 0 && (line[kl] == '\t' || line[kl] == ':')) {
            v = atoll(line + kl + 1);
            break;
        }
    }
    free(r);
    return v;
}

/* Children watches on the whole server: every watch (mntr zk_watch_count)
 * minus the data watches (wchs); -1 if it could not be told. */
long long zkt_children_watches(void)
{
    for (int i = 0; i < 5; i++) {
        long long d1 = zkt_stat_value("wchs", "Total watches");
        long long all = zkt_stat_value("mntr", "zk_watch_count");
        long long d2 = zkt_stat_value("wchs", "Total watches");
        if (d1 >= 0 && all >= 0 && d1 == d2)
            return all - d1;
    }
    return -1;
}

/* Wait (bounded) for a child; its exit status, 128+signal, or -1 if it had
 * to be killed. */
int zkt_wait_child(pid_t pid, int timeout_ms)
{
    int64_t end = zkt_now_ms() + timeout_ms;
    int st = 0;
    for (;;) {
        pid_t r = waitpid(pid, &st, WNOHANG);
        if (r == pid)
            break;
        if (r < 0 && errno != EINTR)
            return -1;
        if (zkt_now_ms() >= end) {
            kill(pid, SIGKILL);
            waitpid(pid, &st, 0);
            return -1;
        }
        zkt_sleep_ms(20);
    }
    if (WIFEXITED(st))
        return WEXITSTATUS(st);
    if (WIFSIGNALED(st))
        return 128 + WTERMSIG(st);
    return -1;
}

/* Read one byte within timeout_ms; the byte, or -1. */
int zkt_read_byte(int fd, int timeout_ms)
{
    struct pollfd p = {fd, POLLIN, 0};
    int64_t end = zkt_now_ms() + timeout_ms;
    for (;;) {
        int left = (int)(end - zkt_now_ms());
        if (left < 0)
            return -1;
        int r = poll(&p, 1, left);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        unsigned char b;
        ssize_t n = read(fd, &b, 1);
        if (n < 0 && errno == EINTR)
            continue;
        return n == 1 ? b : -1;
    }
}

/* A random pause of up to max_us (0 half of the time): varies who
 * arrives when, so that every window of the protocol gets visited. */
void zkt_jitter(unsigned *seed, int max_us)
{
    int r = (int)(rand_r(seed) % (unsigned)(2 * max_us));
    if (r < max_us) {
        struct timespec ts = {0, (long)r * 1000L};
        nanosleep(&ts, NULL);
    }
}


/* ---- waiting on the server ---- */

typedef struct children_want {
    zhandle_t *zh;
    const char *path;
    int n;
} children_want_t;

static int children_are(void *arg)
{
    children_want_t *w = arg;
    return zkt_count_children(w->zh, w->path) == w->n;
}

int zkt_wait_children(zhandle_t *zh, const char *path, int n, int timeout_ms)
{
    children_want_t w = {zh, path, n};
    return zkt_wait_for(children_are, &w, timeout_ms);
}

typedef struct gone {
    zhandle_t *zh;
    const char *path;
} gone_t;

static int is_gone(void *arg)
{
    gone_t *g = arg;
    return zoo_exists(g->zh, g->path, 0, NULL) == ZNONODE;
}

int zkt_wait_gone(zhandle_t *zh, const char *path, int timeout_ms)
{
    gone_t g = {zh, path};
    return zkt_wait_for(is_gone, &g, timeout_ms);
}

int zkt_flag_set(void *arg)
{
    return atomic_load((atomic_int *)arg) > 0;
}

void zkt_noop_watcher(zhandle_t *zh, int type, int state, const char *path, void *ctx)
{
    (void)zh, (void)type, (void)state, (void)path, (void)ctx;
}

typedef struct session_change {
    zkr_client_t *c;
    int64_t old;
} session_change_t;

static int new_session_cond(void *arg)
{
    session_change_t *s = arg;
    int64_t id = 0;
    return zkr_client_session(s->c, &id, NULL) == ZKR_OK && id != s->old && zkr_client_is_connected(s->c);
}

void zkt_expire_client(zkr_client_t *c, int session_ms)
{
    clientid_t cid;
    memset(&cid, 0, sizeof cid);
    CU_ASSERT_EQUAL_FATAL(zkr_client_session(c, &cid.client_id, cid.passwd), ZKR_OK);
    session_change_t s = {c, cid.client_id};
    for (int attempt = 1; attempt <= 5; attempt++) {
        zhandle_t *zh = zookeeper_init(zkt_hosts(), zkt_noop_watcher, session_ms, &cid, NULL, 0);
        CU_ASSERT_PTR_NOT_NULL_FATAL(zh);
        for (int i = 0; i < 400 && zoo_state(zh) != ZOO_CONNECTED_STATE; i++)
            zkt_sleep_ms(25);
        int connected = zoo_state(zh) == ZOO_CONNECTED_STATE;
        zookeeper_close(zh);
        if (zkt_wait_for(new_session_cond, &s, 20000))
            return;
        printf("\n    expire attempt %d: handle %s, client state %s ", attempt,
               connected ? "connected" : "not connected", zkr_state_name(zkr_client_state(c)));
    }
    CU_FAIL_FATAL("could not end the session");
}

char *zkt_slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    char *buf = malloc(256 * 1024 + 1);
    size_t n = f && buf ? fread(buf, 1, 256 * 1024, f) : 0;
    if (f)
        fclose(f);
    if (!buf)
        return strdup("");
    buf[n] = '\0';
    return buf;
}

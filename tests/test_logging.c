/* What production users need around the locks: per-client log callbacks
 * (the library's lines and the ZooKeeper client's, for its own client
 * only, nothing on stderr), the ZooKeeper error behind a ZKR_E... code, and
 * one session for locks and data (zkr_client_with_handle) across a lost
 * session. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/harness/zkproxy.h"
#include "tests/harness/zkr_test.h"

#define SESSION_MS 4000
#define MAX_LINES 512

typedef struct rec {
    pthread_mutex_t mu;
    zkr_client_t *expect; /* set once open returns */
    int lines, foreign, zk, lib, deletes;
} rec_t;

static void rec_fn(zkr_client_t *c, int level, const char *source, const char *message, void *ctx)
{
    rec_t *r = ctx;
    pthread_mutex_lock(&r->mu);
    r->lines++;
    if (r->expect && c != r->expect)
        r->foreign++;
    if (strcmp(source, "zookeeper") == 0)
        r->zk++;
    else if (strcmp(source, "zkrecipes") == 0)
        r->lib++;
    if (strstr(message, "cannot delete") && level == ZKR_LOG_ERROR)
        r->deletes++;
    pthread_mutex_unlock(&r->mu);
}

static zkr_client_t *open_logged(const char *hosts, rec_t *r)
{
    zkr_client_options_t o;
    zkr_client_options_init(&o);
    o.session_timeout_ms = SESSION_MS;
    o.log_fn = rec_fn;
    o.log_ctx = r;
    o.log_level = ZKR_LOG_DEBUG;
    zkr_client_t *c = NULL;
    CU_ASSERT_EQUAL_FATAL(zkr_client_open(&c, hosts, &o), ZKR_OK);
    pthread_mutex_lock(&r->mu);
    r->expect = c;
    pthread_mutex_unlock(&r->mu);
    return c;
}

static void test_log_callbacks(void)
{
    /* A directory that forbids delete gives client a a library error line. */
    char base[128], path[160];
    zkt_path("log", base, sizeof base);
    snprintf(path, sizeof path, "%s/lock", base);
    zhandle_t *raw = zkt_raw();
    zoo_create(raw, "/zkr-test", "", 0, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0); /* may exist */
    CU_ASSERT_EQUAL_FATAL(zoo_create(raw, base, "", 0, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0), ZOK);
    struct ACL no_delete_acl = {ZOO_PERM_ALL & ~ZOO_PERM_DELETE, {"world", "anyone"}};
    struct ACL_vector no_delete = {1, &no_delete_acl};
    CU_ASSERT_EQUAL_FATAL(zoo_create(raw, path, "", 0, &no_delete, 0, NULL, 0), ZOK);
    zkt_raw_close(raw);

    /* Everything this process writes to stderr from here on lands in a file. */
    char errpath[] = "/tmp/zkr-stderr.XXXXXX";
    int errfd = mkstemp(errpath);
    CU_ASSERT_FATAL(errfd >= 0);
    fflush(stderr);
    int saved = dup(2);
    CU_ASSERT_FATAL(saved >= 0 && dup2(errfd, 2) == 2);
    zoo_set_debug_level(ZOO_LOG_LEVEL_DEBUG); /* the C client says a lot now */

    rec_t ra, rb;
    memset(&ra, 0, sizeof ra);
    memset(&rb, 0, sizeof rb);
    pthread_mutex_init(&ra.mu, NULL);
    pthread_mutex_init(&rb.mu, NULL);
    zkr_client_t *a = open_logged(zkt_hosts(), &ra), *b = open_logged(zkt_hosts(), &rb);
    zkr_mutex_t *m;
    CU_ASSERT_EQUAL_FATAL(zkr_mutex_new(&m, a, path), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_mutex_acquire(m, 5000), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_mutex_release(m), ZKR_ENOAUTH); /* refused: logged */
    zkr_mutex_free(m);
    zkr_client_close(a);
    zkr_client_close(b);

    zoo_set_debug_level(0);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    off_t stray = lseek(errfd, 0, SEEK_END);
    if (stray > 0) {
        char buf[512];
        ssize_t n = pread(errfd, buf, sizeof buf - 1, 0);
        buf[n > 0 ? n : 0] = '\0';
        printf("\n    on stderr: %s", buf);
    }
    close(errfd);
    unlink(errpath);
    printf("\n    client a: %d lines (%d zookeeper, %d zkrecipes); client b: %d lines (%d zookeeper, %d "
           "zkrecipes) ",
           ra.lines, ra.zk, ra.lib, rb.lines, rb.zk, rb.lib);
    CU_ASSERT_EQUAL(stray, 0);   /* nothing reached stderr */
    CU_ASSERT_TRUE(ra.zk > 0);   /* the C client's lines for a's handle */
    CU_ASSERT_TRUE(rb.zk > 0);
    CU_ASSERT_EQUAL(ra.deletes, 1); /* the library's line, to a only */
    CU_ASSERT_EQUAL(rb.deletes, 0);
    CU_ASSERT_EQUAL(rb.lib, 0);
    CU_ASSERT_EQUAL(ra.foreign, 0); /* each callback hears its own client */
    CU_ASSERT_EQUAL(rb.foreign, 0);
    pthread_mutex_destroy(&ra.mu);
    pthread_mutex_destroy(&rb.mu);
}

/* ---- the ZooKeeper error behind a code ------------------------------------------------- */

static void *other_thread(void *arg)
{
    *(int *)arg = zkr_last_zk_error(NULL);
    return NULL;
}

static void test_error_detail(void)
{
    char eph[128], count[160];
    zkt_path("ephemeral", eph, sizeof eph);
    snprintf(count, sizeof count, "%s/count", eph);
    zhandle_t *raw = zkt_raw();
    zoo_create(raw, "/zkr-test", "", 0, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
    CU_ASSERT_EQUAL_FATAL(zoo_create(raw, eph, "", 0, &ZOO_OPEN_ACL_UNSAFE, ZOO_EPHEMERAL, NULL, 0), ZOK);
    zkr_client_t *c = zkt_client(SESSION_MS);
    const char *msg = NULL;
    /* An ephemeral node cannot have children: ZooKeeper says why. */
    CU_ASSERT_EQUAL(zkr_shared_count_set(c, count, 3), ZKR_EZOOKEEPER);
    CU_ASSERT_EQUAL(zkr_last_zk_error(&msg), ZNOCHILDRENFOREPHEMERALS);
    CU_ASSERT_PTR_NOT_NULL(msg);
    CU_ASSERT_STRING_EQUAL(msg, zerror(ZNOCHILDRENFOREPHEMERALS));
    printf("\n    ZKR_EZOOKEEPER from ZooKeeper %d: %s ", zkr_last_zk_error(NULL), msg);
    int seen = 1;
    pthread_t t;
    CU_ASSERT_FATAL(pthread_create(&t, NULL, other_thread, &seen) == 0);
    pthread_join(t, NULL);
    CU_ASSERT_EQUAL(seen, 0); /* per thread */
    zkr_client_close(c);
    zkt_raw_close(raw);
}

/* ---- one session for locks and data -------------------------------------------------------- */

typedef struct data_op {
    const char *path;
    const char *value;
    int zrc;
    int64_t session;
    zkr_client_t *c;
    int close_rc;
} data_op_t;

static int put_data(struct _zhandle *zh, int64_t session, void *ctx)
{
    data_op_t *op = ctx;
    op->session = session;
    op->zrc = zoo_create(zh, op->path, op->value, (int)strlen(op->value), &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
    if (op->zrc == ZNODEEXISTS)
        op->zrc = zoo_set(zh, op->path, op->value, (int)strlen(op->value), -1);
    return 7; /* passed through */
}

static int get_data(struct _zhandle *zh, int64_t session, void *ctx)
{
    data_op_t *op = ctx;
    op->session = session;
    char buf[32];
    int len = (int)sizeof buf - 1;
    op->zrc = zoo_get(zh, op->path, 0, buf, &len, NULL);
    return op->zrc == ZOK && len == (int)strlen(op->value) && memcmp(buf, op->value, (size_t)len) == 0;
}

static int close_inside(struct _zhandle *zh, int64_t session, void *ctx)
{
    (void)zh;
    (void)session;
    data_op_t *op = ctx;
    op->close_rc = zkr_client_close(op->c);
    return 0;
}

static int client_lost(void *c)
{
    return zkr_client_state(c) == ZKR_STATE_LOST;
}

static int client_usable(void *c)
{
    return zkr_client_is_connected(c);
}

static void test_with_handle(void)
{
    zkt_proxy_t *px = zkt_proxy_start(zkt_server_port());
    CU_ASSERT_PTR_NOT_NULL_FATAL(px);
    zkr_client_options_t o;
    zkr_client_options_init(&o);
    o.session_timeout_ms = SESSION_MS;
    o.zk_log_level = 0;
    zkr_client_t *c = NULL;
    CU_ASSERT_EQUAL_FATAL(zkr_client_open(&c, zkt_proxy_hosts(px), &o), ZKR_OK);
    char path[128];
    zkt_path("data", path, sizeof path);
    data_op_t op = {path, "v1", 1, 0, c, 1};
    zhandle_t *raw = zkt_raw();
    zoo_create(raw, "/zkr-test", "", 0, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);

    CU_ASSERT_EQUAL(zkr_client_with_handle(c, put_data, &op), 7);
    CU_ASSERT_EQUAL(op.zrc, ZOK);
    int64_t s1 = 0;
    zkr_client_session(c, &s1, NULL);
    CU_ASSERT_EQUAL(op.session, s1); /* the locks' session */
    CU_ASSERT_EQUAL(zkr_client_with_handle(c, get_data, &op), 1);
    CU_ASSERT_EQUAL(zkr_client_with_handle(c, close_inside, &op), 0);
    CU_ASSERT_EQUAL(op.close_rc, ZKR_EDEADLK);
    CU_ASSERT_EQUAL(zkr_client_with_handle(NULL, get_data, &op), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_client_with_handle(c, NULL, &op), ZKR_EINVAL);

    /* The session is lost (a stall past the timeout): calls through the
     * handle fail cleanly, and work again on the new session. */
    CU_ASSERT_EQUAL(zkt_proxy_stall(px, 1), 0);
    CU_ASSERT_TRUE(zkt_wait_for(client_lost, c, 4 * SESSION_MS));
    op.zrc = 1;
    CU_ASSERT_EQUAL(zkr_client_with_handle(c, get_data, &op), 0);
    printf("\n    after LOST: zoo_get -> %s ", zerror(op.zrc));
    CU_ASSERT_TRUE(op.zrc == ZCONNECTIONLOSS || op.zrc == ZOPERATIONTIMEOUT || op.zrc == ZSESSIONEXPIRED ||
                   op.zrc == ZINVALIDSTATE);
    zkt_proxy_cut(px);
    CU_ASSERT_EQUAL(zkt_proxy_stall(px, 0), 0); /* cut while stalled: only new connections move */
    CU_ASSERT_TRUE(zkt_wait_for(client_usable, c, 20000));
    CU_ASSERT_EQUAL(zkr_client_with_handle(c, get_data, &op), 1);
    int64_t s2 = 0;
    zkr_client_session(c, &s2, NULL);
    CU_ASSERT_NOT_EQUAL(s2, s1);
    CU_ASSERT_EQUAL(op.session, s2);
    CU_ASSERT_EQUAL(zkr_client_close(c), ZKR_OK);
    zoo_delete(raw, path, -1);
    zkt_raw_close(raw);
    zkt_proxy_stop(px);
}

/* The C client's level is process-wide and set only by
 * zkr_set_zk_log_level; a client's zk_log_level only filters the lines
 * about its own handles. */
extern ZooLogLevel logLevel; /* the C client's (zookeeper_log.h) */

static void test_zk_log_level(void)
{
    CU_ASSERT_EQUAL(zkr_set_zk_log_level(-1), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_set_zk_log_level(5), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_set_zk_log_level(ZKR_LOG_DEBUG), ZKR_OK);
    CU_ASSERT_EQUAL((int)logLevel, ZOO_LOG_LEVEL_DEBUG);

    /* Two clients: one filters the C client's lines to errors, one takes
     * them all.  Opening them leaves the process-wide level alone. */
    rec_t quiet, loud;
    memset(&quiet, 0, sizeof quiet);
    memset(&loud, 0, sizeof loud);
    pthread_mutex_init(&quiet.mu, NULL);
    pthread_mutex_init(&loud.mu, NULL);
    zkr_client_options_t o;
    zkr_client_options_init(&o);
    o.session_timeout_ms = SESSION_MS;
    o.log_fn = rec_fn;
    o.log_ctx = &quiet;
    o.log_level = ZKR_LOG_DEBUG;
    o.zk_log_level = ZKR_LOG_ERROR;
    zkr_client_t *a = NULL, *b = NULL;
    CU_ASSERT_EQUAL_FATAL(zkr_client_open(&a, zkt_hosts(), &o), ZKR_OK);
    CU_ASSERT_EQUAL((int)logLevel, ZOO_LOG_LEVEL_DEBUG);
    o.log_ctx = &loud;
    o.zk_log_level = -1; /* log_level: everything */
    CU_ASSERT_EQUAL_FATAL(zkr_client_open(&b, zkt_hosts(), &o), ZKR_OK);
    zkr_client_close(a);
    zkr_client_close(b);
    printf("\n    C client lines: filtered to errors %d, all %d ", quiet.zk, loud.zk);
    CU_ASSERT_EQUAL(quiet.zk, 0); /* a connect and a close say nothing at error level */
    CU_ASSERT_TRUE(loud.zk > 0);  /* at debug level they say a lot */

    /* Silenced process-wide: even the client that takes everything hears
     * nothing from the C client. */
    CU_ASSERT_EQUAL(zkr_set_zk_log_level(0), ZKR_OK);
    CU_ASSERT_EQUAL((int)logLevel, 0);
    memset(&loud, 0, sizeof loud);
    pthread_mutex_init(&loud.mu, NULL);
    CU_ASSERT_EQUAL_FATAL(zkr_client_open(&b, zkt_hosts(), &o), ZKR_OK);
    zkr_client_close(b);
    CU_ASSERT_EQUAL(loud.zk, 0);
    CU_ASSERT_TRUE(loud.lib >= 0);
    pthread_mutex_destroy(&quiet.mu);
}

static void add_suites(void)
{
    CU_pSuite s = CU_add_suite("production", NULL, NULL);
    CU_add_test(s, "log callbacks: each client's own lines, nothing on stderr", test_log_callbacks);
    CU_add_test(s, "the ZooKeeper error behind ZKR_EZOOKEEPER, per thread", test_error_detail);
    CU_add_test(s, "one session for locks and data, across a lost session", test_with_handle);
    CU_add_test(s, "the C client's level: process-wide, zkr_set_zk_log_level only", test_zk_log_level);
}

int main(void)
{
    return zkt_main("test_logging", add_suites);
}

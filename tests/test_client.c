/* zkr_client against a real server: connection states, session loss and
 * rebuild, listeners, close, bad arguments.  Linked with the library's
 * convenience copy, so that a test can see the threads inside the client. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "session/core_private.h"
#include "tests/harness/zkr_test.h"

#define SESSION_MS 2000
#define MAX_SEEN 64

/* ---- a listener that records what it is told ------------------------------ */

typedef struct recorder {
    pthread_mutex_t mu;
    zkr_state_t seen[MAX_SEEN];
    int64_t at[MAX_SEEN];
    int n;
    int on_client_thread_ok; /* listener could call back into the library */
} recorder_t;

static void rec_init(recorder_t *r)
{
    memset(r, 0, sizeof *r);
    pthread_mutex_init(&r->mu, NULL);
}

static void rec_fn(zkr_client_t *c, zkr_state_t s, void *ctx)
{
    recorder_t *r = ctx;
    /* Calling back into the library from a listener must work. */
    zkr_state_t now = zkr_client_state(c);
    int64_t id;
    int rc = zkr_client_session(c, &id, NULL);
    pthread_mutex_lock(&r->mu);
    if (r->n < MAX_SEEN) {
        r->at[r->n] = zkt_now_ms();
        r->seen[r->n++] = s;
    }
    if (now != ZKR_STATE_LATENT && rc == ZKR_OK)
        r->on_client_thread_ok++;
    pthread_mutex_unlock(&r->mu);
}

typedef struct want {
    recorder_t *r;
    int from;
    zkr_state_t s;
} want_t;

/* Index of the first `s` at or after `from`, or -1. */
static int rec_find(recorder_t *r, int from, zkr_state_t s)
{
    pthread_mutex_lock(&r->mu);
    int at = -1;
    for (int i = from; i < r->n; i++) {
        if (r->seen[i] == s) {
            at = i;
            break;
        }
    }
    pthread_mutex_unlock(&r->mu);
    return at;
}

static int want_cond(void *arg)
{
    want_t *w = arg;
    return rec_find(w->r, w->from, w->s) >= 0;
}

static int rec_wait(recorder_t *r, int from, zkr_state_t s, int timeout_ms)
{
    want_t w = {r, from, s};
    if (!zkt_wait_for(want_cond, &w, timeout_ms))
        return -1;
    return rec_find(r, from, s);
}

static int rec_count(recorder_t *r)
{
    pthread_mutex_lock(&r->mu);
    int n = r->n;
    pthread_mutex_unlock(&r->mu);
    return n;
}

static void assert_no_duplicates(recorder_t *r)
{
    pthread_mutex_lock(&r->mu);
    for (int i = 1; i < r->n; i++)
        CU_ASSERT_NOT_EQUAL(r->seen[i], r->seen[i - 1]);
    pthread_mutex_unlock(&r->mu);
}

static zkr_client_t *open_recorded(recorder_t *r, int session_ms)
{
    zkr_client_options_t o;
    zkr_client_options_init(&o);
    o.session_timeout_ms = session_ms;
    o.connect_timeout_ms = -1;
    o.zk_log_level = 0;
    zkr_client_t *c = NULL;
    CU_ASSERT_EQUAL_FATAL(zkr_client_open(&c, zkt_hosts(), &o), ZKR_OK);
    CU_ASSERT_EQUAL_FATAL(zkr_client_add_listener(c, rec_fn, r), ZKR_OK);
    CU_ASSERT_EQUAL_FATAL(zkr_client_wait_connected(c, 20000), ZKR_OK);
    CU_ASSERT_TRUE_FATAL(rec_wait(r, 0, ZKR_STATE_CONNECTED, 5000) == 0);
    return c;
}

/* ---- tests ------------------------------------------------------------------ */

static void test_connect_close(void)
{
    zkr_client_t *c = zkt_client(SESSION_MS);
    CU_ASSERT_EQUAL(zkr_client_state(c), ZKR_STATE_CONNECTED);
    CU_ASSERT_TRUE(zkr_client_is_connected(c));
    int64_t id = 0;
    char pw[16];
    CU_ASSERT_EQUAL(zkr_client_session(c, &id, pw), ZKR_OK);
    CU_ASSERT_NOT_EQUAL(id, 0);
    int64_t t = 0;
    CU_ASSERT_EQUAL(zkr_client_session_timeout(c, &t), ZKR_OK);
    CU_ASSERT_TRUE(t >= 1000 && t <= SESSION_MS);
    zkr_client_close(c);

    /* Default options, NULL opt. */
    zkr_client_t *c2 = NULL;
    CU_ASSERT_EQUAL(zkr_client_open(&c2, zkt_hosts(), NULL), ZKR_OK);
    CU_ASSERT_PTR_NOT_NULL(c2);
    zkr_client_close(c2);
}

static void test_connect_timeout(void)
{
    /* A port with no server: the harness's own port after... no: pick a
     * port nobody listens on (port 1 on loopback is never a ZooKeeper). */
    zkr_client_options_t o;
    zkr_client_options_init(&o);
    o.connect_timeout_ms = 1500;
    o.zk_log_level = 0;
    zkr_client_t *c = (zkr_client_t *)0x1;
    int64_t t0 = zkt_now_ms();
    int rc = zkr_client_open(&c, "127.0.0.1:1", &o);
    int64_t took = zkt_now_ms() - t0;
    CU_ASSERT_EQUAL(rc, ZKR_ETIMEDOUT);
    CU_ASSERT_PTR_NULL(c);
    CU_ASSERT_TRUE(took >= 1400);
    CU_ASSERT_STRING_EQUAL(zkr_strerror(rc), "timed out");
}

static void test_chroot(void)
{
    zhandle_t *raw = zkt_raw();
    zoo_create(raw, "/zkr-chroot", "", 0, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
    zkr_client_options_t o;
    zkr_client_options_init(&o);
    o.chroot = "/zkr-chroot";
    o.zk_log_level = 0;
    zkr_client_t *c = NULL;
    CU_ASSERT_EQUAL_FATAL(zkr_client_open(&c, zkt_hosts(), &o), ZKR_OK);
    zkr_mutex_t *m = NULL;
    CU_ASSERT_EQUAL(zkr_mutex_new(&m, c, "/locks/a"), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_mutex_acquire(m, 5000), ZKR_OK);
    /* The lock node lives under the chroot on the server. */
    CU_ASSERT_EQUAL(zkt_count_children(raw, "/zkr-chroot/locks/a"), 1);
    CU_ASSERT_EQUAL(zkr_mutex_release(m), ZKR_OK);
    CU_ASSERT_EQUAL(zkt_count_children(raw, "/zkr-chroot/locks/a"), 0);
    zkr_mutex_free(m);
    zkr_client_close(c);
    zkt_raw_close(raw);
}

static void test_suspended_reconnected_same_session(void)
{
    recorder_t r;
    rec_init(&r);
    /* Long enough a session to survive a server restart. */
    zkr_client_t *c = open_recorded(&r, 20000);
    int64_t id1 = 0, id2 = 0;
    CU_ASSERT_EQUAL(zkr_client_session(c, &id1, NULL), ZKR_OK);

    CU_ASSERT_EQUAL_FATAL(zkt_server("stop"), 0);
    int s = rec_wait(&r, 1, ZKR_STATE_SUSPENDED, 10000);
    CU_ASSERT_TRUE(s >= 1);
    CU_ASSERT_FALSE(zkr_client_is_connected(c));
    CU_ASSERT_EQUAL_FATAL(zkt_server("restart"), 0);
    int rc_at = rec_wait(&r, s > 0 ? s : 1, ZKR_STATE_RECONNECTED, 15000);
    CU_ASSERT_TRUE(rc_at > s);
    CU_ASSERT_EQUAL(zkr_client_session(c, &id2, NULL), ZKR_OK);
    CU_ASSERT_EQUAL(id1, id2);
    CU_ASSERT_EQUAL(rec_find(&r, 0, ZKR_STATE_LOST), -1);
    assert_no_duplicates(&r);
    CU_ASSERT_TRUE(r.on_client_thread_ok >= 3);
    zkr_client_close(c);
}

static void test_lost_after_session_timeout(void)
{
    recorder_t r;
    rec_init(&r);
    zkr_client_t *c = open_recorded(&r, SESSION_MS);
    int64_t id1 = 0, id2 = 0;
    CU_ASSERT_EQUAL(zkr_client_session(c, &id1, NULL), ZKR_OK);
    int64_t negotiated = 0;
    zkr_client_session_timeout(c, &negotiated);

    CU_ASSERT_EQUAL_FATAL(zkt_server("stop"), 0);
    int s = rec_wait(&r, 1, ZKR_STATE_SUSPENDED, 10000);
    CU_ASSERT_TRUE_FATAL(s >= 1);
    int l = rec_wait(&r, s, ZKR_STATE_LOST, negotiated + 10000);
    CU_ASSERT_TRUE_FATAL(l > s);
    /* LOST comes only after SUSPENDED has lasted the session timeout. */
    CU_ASSERT_TRUE(r.at[l] - r.at[s] >= negotiated - 50);
    CU_ASSERT_EQUAL_FATAL(zkt_server("restart"), 0);
    int rc_at = rec_wait(&r, l > 0 ? l : 1, ZKR_STATE_RECONNECTED, 20000);
    CU_ASSERT_TRUE(rc_at > l);
    CU_ASSERT_EQUAL(zkr_client_session(c, &id2, NULL), ZKR_OK);
    CU_ASSERT_NOT_EQUAL(id1, id2);
    CU_ASSERT_TRUE(zkr_client_is_connected(c));
    assert_no_duplicates(&r);

    /* The new session works. */
    zkr_mutex_t *m = NULL;
    char p[128];
    CU_ASSERT_EQUAL(zkr_mutex_new(&m, c, zkt_path("after-lost", p, sizeof p)), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_mutex_acquire(m, 5000), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_mutex_release(m), ZKR_OK);
    zkr_mutex_free(m);
    zkr_client_close(c);
}

static void test_forced_expiry(void)
{
    recorder_t r;
    rec_init(&r);
    zkr_client_t *c = open_recorded(&r, SESSION_MS);
    clientid_t cid;
    memset(&cid, 0, sizeof cid);
    CU_ASSERT_EQUAL_FATAL(zkr_client_session(c, &cid.client_id, cid.passwd), ZKR_OK);

    /* A second handle on the same session, closed: the session ends. */
    CU_ASSERT_EQUAL_FATAL(zkt_expire_session(cid.client_id, cid.passwd), 0);

    int l = rec_wait(&r, 1, ZKR_STATE_LOST, 15000);
    CU_ASSERT_TRUE_FATAL(l >= 1);
    int rc_at = rec_wait(&r, l, ZKR_STATE_RECONNECTED, 15000);
    CU_ASSERT_TRUE(rc_at > l);
    int64_t id2 = 0;
    CU_ASSERT_EQUAL(zkr_client_session(c, &id2, NULL), ZKR_OK);
    CU_ASSERT_NOT_EQUAL(id2, cid.client_id);
    assert_no_duplicates(&r);
    zkr_client_close(c);
}

/* A listener that removes itself on its first call. */
typedef struct selfremove {
    int calls;
    int remove_rc;
} selfremove_t;

static void selfremove_fn(zkr_client_t *c, zkr_state_t s, void *ctx)
{
    (void)s;
    selfremove_t *x = ctx;
    x->calls++;
    x->remove_rc = zkr_client_remove_listener(c, selfremove_fn, ctx);
}

static void test_listeners_add_remove(void)
{
    recorder_t r1, r2;
    rec_init(&r1);
    rec_init(&r2);
    selfremove_t sr = {0, 1};
    zkr_client_options_t o;
    zkr_client_options_init(&o);
    o.session_timeout_ms = SESSION_MS;
    o.connect_timeout_ms = -1;
    o.zk_log_level = 0;
    zkr_client_t *c = NULL;
    CU_ASSERT_EQUAL_FATAL(zkr_client_open(&c, zkt_hosts(), &o), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_client_add_listener(c, rec_fn, &r1), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_client_add_listener(c, rec_fn, &r2), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_client_add_listener(c, selfremove_fn, &sr), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_client_add_listener(c, rec_fn, &r1), ZKR_EALREADY);
    CU_ASSERT_EQUAL_FATAL(zkr_client_wait_connected(c, 20000), ZKR_OK);
    CU_ASSERT_TRUE(rec_wait(&r1, 0, ZKR_STATE_CONNECTED, 5000) == 0);
    CU_ASSERT_TRUE(rec_wait(&r2, 0, ZKR_STATE_CONNECTED, 5000) == 0);

    /* Remove r2; it must hear nothing more. */
    CU_ASSERT_EQUAL(zkr_client_remove_listener(c, rec_fn, &r2), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_client_remove_listener(c, rec_fn, &r2), ZKR_ENOTFOUND);
    int before = rec_count(&r2);
    CU_ASSERT_EQUAL_FATAL(zkt_server("stop"), 0);
    CU_ASSERT_TRUE(rec_wait(&r1, 1, ZKR_STATE_SUSPENDED, 10000) >= 1);
    CU_ASSERT_EQUAL_FATAL(zkt_server("restart"), 0);
    CU_ASSERT_TRUE(rec_wait(&r1, 1, ZKR_STATE_RECONNECTED, 15000) >= 2);
    CU_ASSERT_EQUAL(rec_count(&r2), before);
    /* The self-removing listener ran once and removed itself from inside. */
    CU_ASSERT_EQUAL(sr.calls, 1);
    CU_ASSERT_EQUAL(sr.remove_rc, ZKR_OK);
    zkr_client_close(c);
}

typedef struct waiter_arg {
    zkr_client_t *c;
    int rc;
    int started;
} waiter_arg_t;

static void *wait_connected_thread(void *p)
{
    waiter_arg_t *a = p;
    __atomic_store_n(&a->started, 1, __ATOMIC_SEQ_CST);
    a->rc = zkr_client_wait_connected(a->c, ZKR_WAIT_FOREVER);
    return NULL;
}

/* A thread is inside a blocking call on c (zkr__client_enter): close
 * waits for it to leave before it frees c. */
static int thread_inside(void *p)
{
    zkr_client_t *c = p;
    pthread_mutex_lock(&c->mu);
    int users = c->users;
    pthread_mutex_unlock(&c->mu);
    return users > 0;
}

static void test_close_while_waiting(void)
{
    zkr_client_options_t o;
    zkr_client_options_init(&o);
    o.connect_timeout_ms = -1;
    o.zk_log_level = 0;
    zkr_client_t *c = NULL;
    CU_ASSERT_EQUAL_FATAL(zkr_client_open(&c, "127.0.0.1:1", &o), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_client_state(c), ZKR_STATE_LATENT);
    waiter_arg_t a = {c, 12345, 0};
    pthread_t t;
    CU_ASSERT_EQUAL_FATAL(pthread_create(&t, NULL, wait_connected_thread, &a), 0);
    /* Close only once the thread is inside: a thread that calls in after
     * close has freed the client reads freed memory. */
    int inside = zkt_wait_for(thread_inside, c, 10000);
    CU_ASSERT_TRUE(inside);
    zkr_mutex_t *keep = NULL;
    if (!inside) /* a lock object keeps the client's memory for a late thread */
        CU_ASSERT_EQUAL(zkr_mutex_new(&keep, c, "/zkr-test/keep"), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_client_close(c), ZKR_OK); /* disconnected, with a thread blocked inside */
    pthread_join(t, NULL);
    zkr_mutex_free(keep);
    CU_ASSERT_EQUAL(a.rc, ZKR_ECLOSED);
}

static void test_close_while_suspended(void)
{
    zkr_client_t *c = zkt_client(SESSION_MS);
    CU_ASSERT_EQUAL_FATAL(zkt_server("stop"), 0);
    for (int i = 0; i < 200 && zkr_client_is_connected(c); i++)
        zkt_sleep_ms(25);
    CU_ASSERT_FALSE(zkr_client_is_connected(c));
    zkr_client_close(c);
    CU_ASSERT_EQUAL(zkt_server("restart"), 0);
}

static void test_bad_arguments(void)
{
    zkr_client_t *c = (zkr_client_t *)0x1;
    CU_ASSERT_EQUAL(zkr_client_open(NULL, zkt_hosts(), NULL), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_client_open(&c, NULL, NULL), ZKR_EINVAL);
    CU_ASSERT_PTR_NULL(c);
    CU_ASSERT_EQUAL(zkr_client_open(&c, "", NULL), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_client_open(&c, "127.0.0.1:1 bad", NULL), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_client_open(&c, "127.0.0.1:1/chroot", NULL), ZKR_EINVAL);
    char *huge = malloc(10000);
    CU_ASSERT_PTR_NOT_NULL_FATAL(huge);
    memset(huge, 'a', 9999);
    huge[9999] = '\0';
    CU_ASSERT_EQUAL(zkr_client_open(&c, huge, NULL), ZKR_EINVAL);
    free(huge);
    zkr_client_options_t o;
    zkr_client_options_init(&o);
    o.session_timeout_ms = -5;
    CU_ASSERT_EQUAL(zkr_client_open(&c, zkt_hosts(), &o), ZKR_EINVAL);
    zkr_client_options_init(&o);
    o.chroot = "relative";
    CU_ASSERT_EQUAL(zkr_client_open(&c, zkt_hosts(), &o), ZKR_EINVAL);
    o.chroot = "/trailing/";
    CU_ASSERT_EQUAL(zkr_client_open(&c, zkt_hosts(), &o), ZKR_EINVAL);
    zkr_client_options_init(&o);
    o.zk_log_level = 9;
    CU_ASSERT_EQUAL(zkr_client_open(&c, zkt_hosts(), &o), ZKR_EINVAL);
    zkr_client_options_init(&o);
    o.auth_scheme = "digest";
    o.auth_data = NULL;
    CU_ASSERT_EQUAL(zkr_client_open(&c, zkt_hosts(), &o), ZKR_EINVAL);
    zkr_client_options_init(NULL);

    /* The options' size is the program's: init writes no byte past it
     * (a struct of a later, larger header), and open reads none past it;
     * a struct larger than this library's is a newer program's: refused. */
    struct {
        zkr_client_options_t o;
        unsigned char tail[32];
    } bigger;
    memset(&bigger, 0xa5, sizeof bigger);
    zkr_client_options_init_size(&bigger.o, sizeof bigger.o); /* the macro's call */
    CU_ASSERT_EQUAL(bigger.o.size, sizeof bigger.o);
    CU_ASSERT_EQUAL(bigger.o.session_timeout_ms, 15000);
    CU_ASSERT_EQUAL(bigger.tail[0], 0xa5); /* nothing written past it */
    zkr_client_options_init_size(&bigger.o, sizeof bigger); /* a newer header's struct */
    CU_ASSERT_EQUAL(bigger.o.size, sizeof bigger);
    for (size_t i = 0; i < sizeof bigger.tail; i++)
        CU_ASSERT_EQUAL(bigger.tail[i], 0xa5); /* its new fields are not this library's to fill */
    CU_ASSERT_EQUAL(zkr_client_open(&c, zkt_hosts(), &bigger.o), ZKR_EINVAL);
    zkr_client_options_init_size(&o, sizeof o - 1); /* smaller than 1.0's: not a struct we know */
    CU_ASSERT_EQUAL(zkr_client_open(&c, zkt_hosts(), &o), ZKR_EINVAL);
    zkr_client_options_init_size(NULL, sizeof o);
    zkr_client_options_init_size(&o, 1); /* too small to hold its size: ignored */

    CU_ASSERT_EQUAL(zkr_client_wait_connected(NULL, 0), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_client_state(NULL), ZKR_STATE_LATENT);
    CU_ASSERT_EQUAL(zkr_client_is_connected(NULL), 0);
    int64_t id;
    int64_t t;
    CU_ASSERT_EQUAL(zkr_client_session(NULL, &id, NULL), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_client_session_timeout(NULL, &t), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_client_add_listener(NULL, rec_fn, NULL), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_client_remove_listener(NULL, rec_fn, NULL), ZKR_EINVAL);
    zkr_client_close(NULL);

    zkr_client_t *ok = zkt_client(SESSION_MS);
    CU_ASSERT_EQUAL(zkr_client_session(ok, NULL, NULL), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_client_session_timeout(ok, NULL), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_client_add_listener(ok, NULL, NULL), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_client_remove_listener(ok, NULL, NULL), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_client_remove_listener(ok, rec_fn, NULL), ZKR_ENOTFOUND);
    zkr_client_close(ok);

    CU_ASSERT_STRING_EQUAL(zkr_state_name(ZKR_STATE_SUSPENDED), "SUSPENDED");
    CU_ASSERT_STRING_EQUAL(zkr_state_name((zkr_state_t)99), "UNKNOWN");
    CU_ASSERT_STRING_EQUAL(zkr_err_name(ZKR_ENOTOWNER), "ZKR_ENOTOWNER");
    CU_ASSERT_STRING_EQUAL(zkr_strerror(-999), "unknown error");
    CU_ASSERT_PTR_NOT_NULL(zkr_version());
}

static void add_suites(void)
{
    CU_pSuite s = CU_add_suite("client", NULL, NULL);
    CU_add_test(s, "connect and close", test_connect_close);
    CU_add_test(s, "connect timeout to a port with no server", test_connect_timeout);
    CU_add_test(s, "chroot", test_chroot);
    CU_add_test(s, "bad arguments", test_bad_arguments);
    CU_add_test(s, "close while another thread waits for a connection", test_close_while_waiting);
    CU_pSuite f = CU_add_suite("client states", NULL, NULL);
    CU_add_test(f, "server stop/restart: SUSPENDED then RECONNECTED, same session",
                test_suspended_reconnected_same_session);
    CU_add_test(f, "server down past the session timeout: LOST, then RECONNECTED on a new session",
                test_lost_after_session_timeout);
    CU_add_test(f, "forced session expiry: LOST then RECONNECTED", test_forced_expiry);
    CU_add_test(f, "listeners: add, remove, remove self, call back into the library",
                test_listeners_add_remove);
    CU_add_test(f, "close while SUSPENDED", test_close_while_suspended);
}

int main(void)
{
    return zkt_main("client", add_suites);
}

/* The persistent node (zkr/pnode.h) on a real server: each mode (names,
 * owners, data), data written and rewritten, a node deleted by another
 * session made again (DELETED, CREATED; a sequential one under its first
 * name), a lost session (DELETED then CREATED on the new one, same data),
 * another session's ephemeral node at the path left alone while the pnode
 * waits and the pnode made as soon as it goes, our own session's node and
 * a persistent node adopted (the latter ours across a lost session), free
 * deleting its node and nothing else, a lost create answer found again by
 * its protected prefix (also with its session lost), FAILED, the timeouts
 * on a stalled link (wait_created, set_data, free) and the persistent node
 * deleted once the link is back, a listener that frees its own pnode, and
 * bad input. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/harness/zkproxy.h"
#include "tests/harness/zkr_test.h"

#define SESSION_MS 6000
#define WAIT_MS 20000

/* ---- a listener that records every event ------------------------------------------------ */

typedef struct ev {
    zkr_pnode_event_type_t type;
    char path[256];
    int rc;
} ev_t;

typedef struct rec {
    pthread_mutex_t mu;
    ev_t ev[256];
    int n;
    zkr_pnode_t *node;
    atomic_int wrong_node;
    atomic_int free_own; /* free its own pnode from the listener once */
    atomic_int calls;
} rec_t;

static rec_t *rec_new(void)
{
    rec_t *r = calloc(1, sizeof *r);
    pthread_mutex_init(&r->mu, NULL);
    return r;
}

static void rec_free(rec_t *r)
{
    pthread_mutex_destroy(&r->mu);
    free(r);
}

static void on_event(zkr_pnode_t *node, const zkr_pnode_event_t *e, void *ctx)
{
    rec_t *r = ctx;
    atomic_fetch_add(&r->calls, 1);
    if (node != r->node)
        atomic_fetch_add(&r->wrong_node, 1);
    if (atomic_exchange(&r->free_own, 0))
        zkr_pnode_free(node); /* refused: logged, nothing done */
    pthread_mutex_lock(&r->mu);
    if (r->n < (int)(sizeof r->ev / sizeof r->ev[0])) {
        ev_t *v = &r->ev[r->n++];
        v->type = e->type;
        snprintf(v->path, sizeof v->path, "%s", e->node_path ? e->node_path : "");
        v->rc = e->rc;
    }
    pthread_mutex_unlock(&r->mu);
}

static int count(rec_t *r, zkr_pnode_event_type_t t)
{
    int n = 0;
    pthread_mutex_lock(&r->mu);
    for (int i = 0; i < r->n; i++)
        n += r->ev[i].type == t;
    pthread_mutex_unlock(&r->mu);
    return n;
}

typedef struct wait_ev {
    rec_t *r;
    zkr_pnode_event_type_t t;
    int n;
} wait_ev_t;

static int have(void *arg)
{
    wait_ev_t *w = arg;
    return count(w->r, w->t) >= w->n;
}

static int wait_events(rec_t *r, zkr_pnode_event_type_t t, int n)
{
    wait_ev_t w = {r, t, n};
    return zkt_wait_for(have, &w, WAIT_MS);
}

/* The types told, in order, as letters (C D W F). */
static void sequence(rec_t *r, char *out, size_t len)
{
    size_t k = 0;
    pthread_mutex_lock(&r->mu);
    for (int i = 0; i < r->n && k + 1 < len; i++)
        out[k++] = "?CDWF"[r->ev[i].type >= 1 && r->ev[i].type <= 4 ? r->ev[i].type : 0];
    pthread_mutex_unlock(&r->mu);
    out[k] = '\0';
}

/* ---- helpers ------------------------------------------------------------------------------------ */

static void base(const char *name, char *path, size_t len, zhandle_t *zh)
{
    zkt_path(name, path, len);
    zoo_create(zh, "/zkr-test", "", 0, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0); /* may exist */
}

static zkr_pnode_t *new_pnode(zkr_client_t *c, const char *path, const char *data, zkr_pnode_mode_t mode,
                              rec_t *r)
{
    zkr_pnode_options_t opt;
    zkr_pnode_options_init(&opt);
    opt.mode = mode;
    zkr_pnode_t *n = NULL;
    CU_ASSERT_EQUAL_FATAL(zkr_pnode_new(&n, c, path, data, data ? strlen(data) : 0, &opt), ZKR_OK);
    if (r) {
        r->node = n;
        CU_ASSERT_EQUAL(zkr_pnode_set_listener(n, on_event, r), ZKR_OK);
    }
    return n;
}

/* The node's data on the server ("" if none) and stat; the ZooKeeper code. */
static int server_get(zhandle_t *zh, const char *path, char *buf, size_t len, struct Stat *st)
{
    int n = (int)len - 1;
    struct Stat s;
    int rc = zoo_get(zh, path, 0, buf, &n, st ? st : &s);
    buf[rc == ZOK && n > 0 ? n : 0] = '\0';
    return rc;
}

static int64_t session_of(zkr_client_t *c)
{
    int64_t s = 0;
    CU_ASSERT_EQUAL(zkr_client_session(c, &s, NULL), ZKR_OK);
    return s;
}

static char *node_path(zkr_pnode_t *n)
{
    char *p = NULL;
    CU_ASSERT_EQUAL(zkr_pnode_node_path(n, &p), ZKR_OK);
    return p;
}

/* The pnode's node differs from `old` (made again) and is created. */
typedef struct remade {
    zkr_pnode_t *n;
    const char *old;
    int64_t old_czxid;
    zhandle_t *zh;
} remade_t;

static int is_remade(void *arg)
{
    remade_t *m = arg;
    char *p = NULL;
    if (zkr_pnode_node_path(m->n, &p) != ZKR_OK)
        return 0;
    struct Stat st;
    int ok = zoo_exists(m->zh, p, 0, &st) == ZOK && (strcmp(p, m->old) != 0 || st.czxid != m->old_czxid);
    zkr_free(p);
    return ok;
}

/* ---- each mode -------------------------------------------------------------------------------------- */

/* "_c_" + 36 + "-" + base + 10 digits */
static int protected_seq(const char *name, const char *base)
{
    size_t bl = strlen(base);
    if (strlen(name) != 40 + bl + 10 || strncmp(name, "_c_", 3) != 0 || name[39] != '-' ||
        strncmp(name + 40, base, bl) != 0)
        return 0;
    for (size_t i = 40 + bl; name[i]; i++)
        if (name[i] < '0' || name[i] > '9')
            return 0;
    return 1;
}

static void one_mode(zkr_pnode_mode_t mode, const char *name)
{
    char dir[128], path[200], buf[64];
    zhandle_t *zh = zkt_raw();
    base(name, dir, sizeof dir, zh);
    snprintf(path, sizeof path, "%s/sub/member", dir); /* parents made */
    zkr_client_t *c = zkt_client(SESSION_MS);
    rec_t *r = rec_new();
    zkr_pnode_t *n = new_pnode(c, path, "hello", mode, r);
    CU_ASSERT_EQUAL(zkr_pnode_is_created(n), 0);
    CU_ASSERT_EQUAL(zkr_pnode_start(n), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_pnode_wait_created(n, WAIT_MS), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_pnode_is_created(n), 1);
    char *p = node_path(n);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    int seq = mode == ZKR_PNODE_EPHEMERAL_SEQUENTIAL || mode == ZKR_PNODE_PERSISTENT_SEQUENTIAL;
    int eph = mode == ZKR_PNODE_EPHEMERAL || mode == ZKR_PNODE_EPHEMERAL_SEQUENTIAL;
    if (seq) {
        char sub[160];
        snprintf(sub, sizeof sub, "%s/sub/", dir);
        CU_ASSERT_EQUAL(strncmp(p, sub, strlen(sub)), 0);
        CU_ASSERT_TRUE(protected_seq(p + strlen(sub), "member"));
    } else {
        CU_ASSERT_STRING_EQUAL(p, path);
    }
    struct Stat st;
    CU_ASSERT_EQUAL(server_get(zh, p, buf, sizeof buf, &st), ZOK);
    CU_ASSERT_STRING_EQUAL(buf, "hello");
    CU_ASSERT_EQUAL(st.ephemeralOwner, eph ? session_of(c) : 0);
    CU_ASSERT_TRUE(wait_events(r, ZKR_PNODE_CREATED, 1));
    pthread_mutex_lock(&r->mu);
    CU_ASSERT_STRING_EQUAL(r->ev[0].path, p);
    pthread_mutex_unlock(&r->mu);
    /* the parents were made (as containers, by session/requests.c) */
    char sub[160];
    snprintf(sub, sizeof sub, "%s/sub", dir);
    CU_ASSERT_EQUAL(zoo_exists(zh, sub, 0, &st), ZOK);
    CU_ASSERT_EQUAL(st.ephemeralOwner, 0);
    zkr_pnode_free(n);
    CU_ASSERT_EQUAL(zoo_exists(zh, p, 0, NULL), ZNONODE);
    CU_ASSERT_EQUAL(zkt_count_children(zh, sub), 0);
    CU_ASSERT_EQUAL(atomic_load(&r->wrong_node), 0);
    zkr_free(p);
    zkr_client_close(c);
    zkt_raw_close(zh);
    rec_free(r);
}

static void test_modes(void)
{
    one_mode(ZKR_PNODE_EPHEMERAL, "pnode-eph");
    one_mode(ZKR_PNODE_PERSISTENT, "pnode-pers");
    one_mode(ZKR_PNODE_EPHEMERAL_SEQUENTIAL, "pnode-eseq");
    one_mode(ZKR_PNODE_PERSISTENT_SEQUENTIAL, "pnode-pseq");
}

/* ---- data -------------------------------------------------------------------------------------------- */

static void test_data(void)
{
    char path[128], buf[64];
    zhandle_t *zh = zkt_raw();
    base("pnode-data", path, sizeof path, zh);
    zkr_client_t *c = zkt_client(SESSION_MS);
    zkr_pnode_t *n = new_pnode(c, path, NULL, ZKR_PNODE_EPHEMERAL, NULL);
    char *d = (char *)1;
    size_t len = 9;
    CU_ASSERT_EQUAL(zkr_pnode_data(n, &d, &len), ZKR_OK);
    CU_ASSERT_PTR_NULL(d);
    CU_ASSERT_EQUAL(len, 0);
    /* before start: kept, made with it */
    CU_ASSERT_EQUAL(zkr_pnode_set_data(n, "first", 5, 0), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_pnode_start(n), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_pnode_wait_created(n, WAIT_MS), ZKR_OK);
    CU_ASSERT_EQUAL(server_get(zh, path, buf, sizeof buf, NULL), ZOK);
    CU_ASSERT_STRING_EQUAL(buf, "first");
    /* written before set_data returns */
    struct Stat st0, st;
    CU_ASSERT_EQUAL(zoo_exists(zh, path, 0, &st0), ZOK);
    for (int i = 0; i < 5; i++) {
        char v[16];
        snprintf(v, sizeof v, "v%d", i);
        CU_ASSERT_EQUAL(zkr_pnode_set_data(n, v, strlen(v), WAIT_MS), ZKR_OK);
        CU_ASSERT_EQUAL(server_get(zh, path, buf, sizeof buf, &st), ZOK);
        CU_ASSERT_STRING_EQUAL(buf, v);
        CU_ASSERT_EQUAL(st.czxid, st0.czxid); /* the same node, written */
    }
    CU_ASSERT_EQUAL(zkr_pnode_data(n, &d, &len), ZKR_OK);
    CU_ASSERT_EQUAL(len, 2);
    CU_ASSERT_STRING_EQUAL(d, "v4");
    zkr_free(d);
    /* empty data: zero bytes on the server */
    CU_ASSERT_EQUAL(zkr_pnode_set_data(n, NULL, 0, WAIT_MS), ZKR_OK);
    CU_ASSERT_EQUAL(zoo_exists(zh, path, 0, &st), ZOK);
    CU_ASSERT_EQUAL(st.dataLength, 0);
    /* binary data with a NUL inside */
    CU_ASSERT_EQUAL(zkr_pnode_set_data(n, "a\0b", 3, WAIT_MS), ZKR_OK);
    int blen = (int)sizeof buf;
    CU_ASSERT_EQUAL(zoo_get(zh, path, 0, buf, &blen, NULL), ZOK);
    CU_ASSERT_EQUAL(blen, 3);
    CU_ASSERT_EQUAL(memcmp(buf, "a\0b", 3), 0);
    zkr_pnode_free(n);
    CU_ASSERT_EQUAL(zoo_exists(zh, path, 0, NULL), ZNONODE);
    zkr_client_close(c);
    zkt_raw_close(zh);
}

/* ---- deleted by another session: made again ------------------------------------------------------ */

static void deleted_by_other(zkr_pnode_mode_t mode, const char *name)
{
    char dir[128], path[200], buf[64];
    zhandle_t *zh = zkt_raw();
    base(name, dir, sizeof dir, zh);
    snprintf(path, sizeof path, "%s/m", dir);
    zkr_client_t *c = zkt_client(SESSION_MS);
    rec_t *r = rec_new();
    zkr_pnode_t *n = new_pnode(c, path, "mine", mode, r);
    CU_ASSERT_EQUAL(zkr_pnode_start(n), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_pnode_wait_created(n, WAIT_MS), ZKR_OK);
    CU_ASSERT_TRUE(wait_events(r, ZKR_PNODE_CREATED, 1));
    char *p = node_path(n);
    struct Stat st0;
    CU_ASSERT_EQUAL_FATAL(zoo_exists(zh, p, 0, &st0), ZOK);
    for (int round = 0; round < 3; round++) {
        char *old = node_path(n);
        struct Stat st;
        CU_ASSERT_EQUAL_FATAL(zoo_exists(zh, old, 0, &st), ZOK);
        CU_ASSERT_EQUAL(zoo_delete(zh, old, -1), ZOK);
        remade_t m = {n, old, st.czxid, zh};
        CU_ASSERT_TRUE(zkt_wait_for(is_remade, &m, WAIT_MS));
        CU_ASSERT_TRUE(wait_events(r, ZKR_PNODE_CREATED, round + 2));
        char *now = node_path(n);
        CU_ASSERT_EQUAL(server_get(zh, now, buf, sizeof buf, NULL), ZOK);
        CU_ASSERT_STRING_EQUAL(buf, "mine");
        /* Curator's rule: made again under the same name (a sequential
         * node: its uuid and number, not sequential again) */
        CU_ASSERT_STRING_EQUAL(now, p);
        zkr_free(old);
        zkr_free(now);
    }
    char seq[16];
    sequence(r, seq, sizeof seq);
    CU_ASSERT_STRING_EQUAL(seq, "CDCDCDC");
    CU_ASSERT_EQUAL(zkt_count_children(zh, dir), 1);
    zkr_pnode_free(n);
    CU_ASSERT_EQUAL(zkt_count_children(zh, dir), 0);
    zkr_free(p);
    zkr_client_close(c);
    zkt_raw_close(zh);
    rec_free(r);
}

static void test_deleted(void)
{
    deleted_by_other(ZKR_PNODE_EPHEMERAL, "pnode-del");
    deleted_by_other(ZKR_PNODE_EPHEMERAL_SEQUENTIAL, "pnode-delseq");
    deleted_by_other(ZKR_PNODE_PERSISTENT, "pnode-delpers");
}

/* ---- a lost session -------------------------------------------------------------------------------- */

static void test_expiry(void)
{
    char path[128], buf[64];
    zhandle_t *zh = zkt_raw();
    base("pnode-expiry", path, sizeof path, zh);
    zkr_client_t *c = zkt_client(SESSION_MS);
    rec_t *r = rec_new();
    zkr_pnode_t *n = new_pnode(c, path, "one", ZKR_PNODE_EPHEMERAL, r);
    CU_ASSERT_EQUAL(zkr_pnode_start(n), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_pnode_wait_created(n, WAIT_MS), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_pnode_set_data(n, "two", 3, WAIT_MS), ZKR_OK);
    int64_t s1 = session_of(c);
    zkt_expire_client(c, SESSION_MS);
    CU_ASSERT_TRUE(wait_events(r, ZKR_PNODE_CREATED, 2));
    CU_ASSERT_EQUAL(zkr_pnode_wait_created(n, WAIT_MS), ZKR_OK);
    int64_t s2 = session_of(c);
    CU_ASSERT_NOT_EQUAL(s1, s2);
    struct Stat st;
    CU_ASSERT_EQUAL(server_get(zh, path, buf, sizeof buf, &st), ZOK);
    CU_ASSERT_STRING_EQUAL(buf, "two");
    CU_ASSERT_EQUAL(st.ephemeralOwner, s2);
    char seq[16];
    sequence(r, seq, sizeof seq);
    CU_ASSERT_STRING_EQUAL(seq, "CDC");
    zkr_pnode_free(n);
    CU_ASSERT_EQUAL(zoo_exists(zh, path, 0, NULL), ZNONODE);
    zkr_client_close(c);
    zkt_raw_close(zh);
    rec_free(r);
}

/* ---- another session's node at the path ----------------------------------------------------------- */

static void test_foreign_ephemeral(void)
{
    char path[128], buf[64];
    zhandle_t *zh = zkt_raw();
    base("pnode-foreign", path, sizeof path, zh);
    zhandle_t *other = zkt_raw();
    CU_ASSERT_EQUAL_FATAL(zoo_create(other, path, "theirs", 6, &ZOO_OPEN_ACL_UNSAFE, ZOO_EPHEMERAL, NULL, 0), ZOK);
    struct Stat st0, st;
    CU_ASSERT_EQUAL(zoo_exists(zh, path, 0, &st0), ZOK);
    zkr_client_t *c = zkt_client(SESSION_MS);
    rec_t *r = rec_new();
    zkr_pnode_t *n = new_pnode(c, path, "ours", ZKR_PNODE_EPHEMERAL, r);
    CU_ASSERT_EQUAL(zkr_pnode_start(n), ZKR_OK);
    CU_ASSERT_TRUE(wait_events(r, ZKR_PNODE_WAITING, 1));
    CU_ASSERT_EQUAL(zkr_pnode_wait_created(n, 1500), ZKR_ETIMEDOUT);
    CU_ASSERT_EQUAL(zkr_pnode_is_created(n), 0);
    char *p = (char *)1;
    CU_ASSERT_EQUAL(zkr_pnode_node_path(n, &p), ZKR_ENONODE);
    CU_ASSERT_PTR_NULL(p);
    /* untouched: the same node, its data, its owner */
    CU_ASSERT_EQUAL(server_get(zh, path, buf, sizeof buf, &st), ZOK);
    CU_ASSERT_STRING_EQUAL(buf, "theirs");
    CU_ASSERT_EQUAL(st.czxid, st0.czxid);
    CU_ASSERT_EQUAL(st.mzxid, st0.mzxid);
    CU_ASSERT_EQUAL(st.ephemeralOwner, st0.ephemeralOwner);
    /* set_data while waiting: kept, not written over theirs */
    CU_ASSERT_EQUAL(zkr_pnode_set_data(n, "ours2", 5, 1000), ZKR_OK);
    CU_ASSERT_EQUAL(server_get(zh, path, buf, sizeof buf, &st), ZOK);
    CU_ASSERT_STRING_EQUAL(buf, "theirs");
    pthread_mutex_lock(&r->mu);
    CU_ASSERT_STRING_EQUAL(r->ev[0].path, path);
    pthread_mutex_unlock(&r->mu);
    /* it goes: ours is made at once (the watch) */
    zkt_raw_close(other);
    CU_ASSERT_EQUAL(zkr_pnode_wait_created(n, 5000), ZKR_OK);
    CU_ASSERT_EQUAL(server_get(zh, path, buf, sizeof buf, &st), ZOK);
    CU_ASSERT_STRING_EQUAL(buf, "ours2");
    CU_ASSERT_EQUAL(st.ephemeralOwner, session_of(c));
    CU_ASSERT_TRUE(wait_events(r, ZKR_PNODE_CREATED, 1)); /* (told on the callback thread, maybe later) */
    char seq[16];
    sequence(r, seq, sizeof seq);
    CU_ASSERT_STRING_EQUAL(seq, "WC");
    zkr_pnode_free(n);
    zkr_client_close(c);
    zkt_raw_close(zh);
    rec_free(r);
}

/* The client closed while the pnode waits for another session's node:
 * set_data cannot be written ever, and says so (ZKR_ECLOSED, not "made
 * with it later"); wait_created too. */
static void test_closed_while_waiting(void)
{
    char path[128];
    zhandle_t *zh = zkt_raw();
    base("pnode-closed-waiting", path, sizeof path, zh);
    CU_ASSERT_EQUAL_FATAL(zoo_create(zh, path, "theirs", 6, &ZOO_OPEN_ACL_UNSAFE, ZOO_EPHEMERAL, NULL, 0), ZOK);
    zkr_client_t *c = zkt_client(SESSION_MS);
    rec_t *r = rec_new();
    zkr_pnode_t *n = new_pnode(c, path, "ours", ZKR_PNODE_EPHEMERAL, r);
    CU_ASSERT_EQUAL(zkr_pnode_start(n), ZKR_OK);
    CU_ASSERT_TRUE(wait_events(r, ZKR_PNODE_WAITING, 1));
    zkr_client_close(c);
    CU_ASSERT_EQUAL(zkr_pnode_set_data(n, "new", 3, 1000), ZKR_ECLOSED);
    CU_ASSERT_EQUAL(zkr_pnode_wait_created(n, 1000), ZKR_ECLOSED);
    char *d = NULL;
    size_t len = 0;
    CU_ASSERT_EQUAL(zkr_pnode_data(n, &d, &len), ZKR_OK); /* (kept all the same) */
    CU_ASSERT(d && len == 3 && memcmp(d, "new", 3) == 0);
    zkr_free(d);
    zkr_pnode_free(n);
    zkt_raw_close(zh);
    rec_free(r);
}

/* free at once after start, many times, while another session's node is
 * at the path: the pnode's thread is between its create and its exists
 * when free runs.  (Under ThreadSanitizer: free wrote the subscription
 * the thread reads for its watch, a data race.)  Their node stays. */
static void test_free_right_after_start(void)
{
    char path[128];
    zhandle_t *zh = zkt_raw();
    base("pnode-quick-free", path, sizeof path, zh);
    CU_ASSERT_EQUAL_FATAL(zoo_create(zh, path, "theirs", 6, &ZOO_OPEN_ACL_UNSAFE, ZOO_EPHEMERAL, NULL, 0), ZOK);
    struct Stat st0, st;
    CU_ASSERT_EQUAL(zoo_exists(zh, path, 0, &st0), ZOK);
    zkr_client_t *c = zkt_client(SESSION_MS);
    unsigned seed = 7;
    for (int i = 0; i < 150; i++) {
        zkr_pnode_t *n = NULL;
        CU_ASSERT_EQUAL_FATAL(zkr_pnode_new(&n, c, path, "ours", 4, NULL), ZKR_OK);
        CU_ASSERT_EQUAL(zkr_pnode_start(n), ZKR_OK);
        zkt_jitter(&seed, 3000);
        zkr_pnode_free(n);
    }
    CU_ASSERT_EQUAL(zoo_exists(zh, path, 0, &st), ZOK);
    CU_ASSERT_EQUAL(st.czxid, st0.czxid);
    CU_ASSERT_EQUAL(st.mzxid, st0.mzxid);
    zkr_client_close(c);
    zkt_raw_close(zh);
}

/* free while waiting: the other session's node stays */
static void test_free_while_waiting(void)
{
    char path[128], buf[64];
    zhandle_t *zh = zkt_raw();
    base("pnode-freewait", path, sizeof path, zh);
    zhandle_t *other = zkt_raw();
    CU_ASSERT_EQUAL_FATAL(zoo_create(other, path, "theirs", 6, &ZOO_OPEN_ACL_UNSAFE, ZOO_EPHEMERAL, NULL, 0), ZOK);
    struct Stat st0, st;
    CU_ASSERT_EQUAL(zoo_exists(zh, path, 0, &st0), ZOK);
    zkr_client_t *c = zkt_client(SESSION_MS);
    for (int mode = ZKR_PNODE_EPHEMERAL; mode <= ZKR_PNODE_PERSISTENT; mode++) {
        rec_t *r = rec_new();
        zkr_pnode_t *n = new_pnode(c, path, "ours", (zkr_pnode_mode_t)mode, r);
        CU_ASSERT_EQUAL(zkr_pnode_start(n), ZKR_OK);
        CU_ASSERT_TRUE(wait_events(r, ZKR_PNODE_WAITING, 1));
        zkr_pnode_free(n);
        CU_ASSERT_EQUAL(server_get(zh, path, buf, sizeof buf, &st), ZOK);
        CU_ASSERT_STRING_EQUAL(buf, "theirs");
        CU_ASSERT_EQUAL(st.czxid, st0.czxid);
        rec_free(r);
    }
    /* and a pnode whose node was replaced by another session's */
    zkt_raw_close(other);
    CU_ASSERT_TRUE(zkt_wait_gone(zh, path, WAIT_MS));
    rec_t *r = rec_new();
    zkr_pnode_t *n = new_pnode(c, path, "ours", ZKR_PNODE_PERSISTENT, r);
    CU_ASSERT_EQUAL(zkr_pnode_start(n), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_pnode_wait_created(n, WAIT_MS), ZKR_OK);
    other = zkt_raw();
    CU_ASSERT_EQUAL(zoo_delete(zh, path, -1), ZOK);
    int zrc = zoo_create(other, path, "theirs", 6, &ZOO_OPEN_ACL_UNSAFE, ZOO_EPHEMERAL, NULL, 0);
    if (zrc == ZOK) { /* (else the pnode was quicker: nothing to test this time) */
        CU_ASSERT_TRUE(wait_events(r, ZKR_PNODE_WAITING, 1));
        CU_ASSERT_EQUAL(zoo_exists(zh, path, 0, &st0), ZOK);
        zkr_pnode_free(n);
        CU_ASSERT_EQUAL(zoo_exists(zh, path, 0, &st), ZOK);
        CU_ASSERT_EQUAL(st.czxid, st0.czxid);
    } else {
        CU_ASSERT_EQUAL(zrc, ZNODEEXISTS);
        zkr_pnode_free(n);
    }
    zkt_raw_close(other);
    rec_free(r);
    zkr_client_close(c);
    zkt_raw_close(zh);
}

/* ---- adopted: our own session's node, a persistent node ---------------------------------------- */

static int create_own(zhandle_t *zh, int64_t session, void *ctx)
{
    (void)session;
    return zoo_create(zh, ctx, "old", 3, &ZOO_OPEN_ACL_UNSAFE, ZOO_EPHEMERAL, NULL, 0) == ZOK ? ZKR_OK : ZKR_EZOOKEEPER;
}

static void test_adopt(void)
{
    char path[128], buf[64];
    zhandle_t *zh = zkt_raw();
    base("pnode-adopt", path, sizeof path, zh);
    zkr_client_t *c = zkt_client(SESSION_MS);
    CU_ASSERT_EQUAL_FATAL(zkr_client_with_handle(c, create_own, path), ZKR_OK);
    struct Stat st0, st;
    CU_ASSERT_EQUAL(zoo_exists(zh, path, 0, &st0), ZOK);
    CU_ASSERT_EQUAL(st0.ephemeralOwner, session_of(c));
    rec_t *r = rec_new();
    zkr_pnode_t *n = new_pnode(c, path, "new", ZKR_PNODE_EPHEMERAL, r);
    CU_ASSERT_EQUAL(zkr_pnode_start(n), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_pnode_wait_created(n, WAIT_MS), ZKR_OK);
    CU_ASSERT_EQUAL(server_get(zh, path, buf, sizeof buf, &st), ZOK);
    CU_ASSERT_STRING_EQUAL(buf, "new");
    CU_ASSERT_EQUAL(st.czxid, st0.czxid); /* adopted, not made again */
    CU_ASSERT_TRUE(wait_events(r, ZKR_PNODE_CREATED, 1));
    CU_ASSERT_EQUAL(count(r, ZKR_PNODE_WAITING), 0);
    zkr_pnode_free(n);
    CU_ASSERT_EQUAL(zoo_exists(zh, path, 0, NULL), ZNONODE);
    rec_free(r);
    /* a persistent node is ours too */
    CU_ASSERT_EQUAL(zoo_create(zh, path, "old", 3, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0), ZOK);
    CU_ASSERT_EQUAL(zoo_exists(zh, path, 0, &st0), ZOK);
    n = new_pnode(c, path, "new", ZKR_PNODE_PERSISTENT, NULL);
    CU_ASSERT_EQUAL(zkr_pnode_start(n), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_pnode_wait_created(n, WAIT_MS), ZKR_OK);
    CU_ASSERT_EQUAL(server_get(zh, path, buf, sizeof buf, &st), ZOK);
    CU_ASSERT_STRING_EQUAL(buf, "new");
    CU_ASSERT_EQUAL(st.czxid, st0.czxid);
    zkr_pnode_free(n);
    CU_ASSERT_EQUAL(zoo_exists(zh, path, 0, NULL), ZNONODE);
    /* a persistent node adopted in the ephemeral mode stays ours across a
     * lost session: nothing told */
    CU_ASSERT_EQUAL(zoo_create(zh, path, "old", 3, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0), ZOK);
    CU_ASSERT_EQUAL(zoo_exists(zh, path, 0, &st0), ZOK);
    r = rec_new();
    n = new_pnode(c, path, "new", ZKR_PNODE_EPHEMERAL, r);
    CU_ASSERT_EQUAL(zkr_pnode_start(n), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_pnode_wait_created(n, WAIT_MS), ZKR_OK);
    zkt_expire_client(c, SESSION_MS);
    zkt_sleep_ms(500);
    CU_ASSERT_EQUAL(zkr_pnode_set_data(n, "newer", 5, WAIT_MS), ZKR_OK); /* (it looks again first) */
    CU_ASSERT_EQUAL(server_get(zh, path, buf, sizeof buf, &st), ZOK);
    CU_ASSERT_STRING_EQUAL(buf, "newer");
    CU_ASSERT_EQUAL(st.czxid, st0.czxid);
    char seq[16];
    sequence(r, seq, sizeof seq);
    CU_ASSERT_STRING_EQUAL(seq, "C");
    zkr_pnode_free(n);
    CU_ASSERT_EQUAL(zoo_exists(zh, path, 0, NULL), ZNONODE);
    rec_free(r);
    zkr_client_close(c);
    zkt_raw_close(zh);
}

/* ---- free deletes its own node and nothing else --------------------------------------------------- */

static void test_free_own_only(void)
{
    char dir[128], a[200], b[200];
    zhandle_t *zh = zkt_raw();
    base("pnode-free", dir, sizeof dir, zh);
    CU_ASSERT_EQUAL(zoo_create(zh, dir, "", 0, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0), ZOK);
    snprintf(a, sizeof a, "%s/a", dir);
    snprintf(b, sizeof b, "%s/b", dir);
    CU_ASSERT_EQUAL(zoo_create(zh, b, "b", 1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0), ZOK);
    zkr_client_t *c = zkt_client(SESSION_MS);
    zkr_pnode_t *n1 = new_pnode(c, a, "a", ZKR_PNODE_PERSISTENT, NULL);
    zkr_pnode_t *n2 = new_pnode(c, a, "a", ZKR_PNODE_PERSISTENT_SEQUENTIAL, NULL);
    CU_ASSERT_EQUAL(zkr_pnode_start(n1), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_pnode_start(n2), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_pnode_wait_created(n1, WAIT_MS), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_pnode_wait_created(n2, WAIT_MS), ZKR_OK);
    CU_ASSERT_EQUAL(zkt_count_children(zh, dir), 3);
    zkr_pnode_free(n2);
    CU_ASSERT_EQUAL(zkt_count_children(zh, dir), 2);
    CU_ASSERT_EQUAL(zoo_exists(zh, a, 0, NULL), ZOK);
    zkr_pnode_free(n1);
    CU_ASSERT_EQUAL(zkt_count_children(zh, dir), 1);
    CU_ASSERT_EQUAL(zoo_exists(zh, b, 0, NULL), ZOK);
    /* never started: nothing made, nothing deleted */
    zkr_pnode_t *n3 = new_pnode(c, b, "x", ZKR_PNODE_PERSISTENT, NULL);
    zkr_pnode_free(n3);
    CU_ASSERT_EQUAL(zoo_exists(zh, b, 0, NULL), ZOK);
    zkr_client_close(c);
    zkt_raw_close(zh);
}

/* ---- a stalled link ------------------------------------------------------------------------------ */

static void test_stalled(void)
{
    char path[128], buf[64];
    zhandle_t *zh = zkt_raw();
    base("pnode-stall", path, sizeof path, zh);
    zkt_proxy_t *px = zkt_proxy_start(zkt_server_port());
    CU_ASSERT_PTR_NOT_NULL_FATAL(px);
    zkr_client_t *c = zkt_client_at(zkt_proxy_hosts(px), 30000);
    zkr_pnode_t *n = new_pnode(c, path, "x", ZKR_PNODE_PERSISTENT, NULL);
    CU_ASSERT_EQUAL(zkt_proxy_stall(px, 1), 0);
    CU_ASSERT_EQUAL(zkr_pnode_start(n), ZKR_OK);
    int64_t t0 = zkt_now_ms();
    CU_ASSERT_EQUAL(zkr_pnode_wait_created(n, 1500), ZKR_ETIMEDOUT);
    int64_t took = zkt_now_ms() - t0;
    CU_ASSERT_TRUE(took >= 1400 && took < 2500);
    CU_ASSERT_EQUAL(zkr_pnode_wait_created(n, 0), ZKR_ETIMEDOUT);
    CU_ASSERT_EQUAL(zkt_proxy_stall(px, 0), 0);
    CU_ASSERT_EQUAL(zkr_pnode_wait_created(n, WAIT_MS), ZKR_OK);
    /* set_data keeps its time limit */
    CU_ASSERT_EQUAL(zkt_proxy_stall(px, 1), 0);
    t0 = zkt_now_ms();
    CU_ASSERT_EQUAL(zkr_pnode_set_data(n, "y", 1, 1000), ZKR_ETIMEDOUT);
    took = zkt_now_ms() - t0;
    CU_ASSERT_TRUE(took >= 900 && took < 2000);
    /* free on a stalled link: bounded; the persistent node is deleted once
     * the link is back */
    t0 = zkt_now_ms();
    zkr_pnode_free(n);
    took = zkt_now_ms() - t0;
    CU_ASSERT_TRUE(took < ZKR_RELEASE_WAIT_MS + 1000);
    CU_ASSERT_EQUAL(zoo_exists(zh, path, 0, NULL), ZOK);
    CU_ASSERT_EQUAL(zkt_proxy_stall(px, 0), 0);
    CU_ASSERT_TRUE(zkt_wait_gone(zh, path, WAIT_MS));
    (void)buf;
    zkr_client_close(c);
    zkt_proxy_stop(px);
    zkt_raw_close(zh);
}

/* A protected create whose answer is lost (the server made it, the reply
 * never came): found again by its prefix, adopted: one node, ours. */
static void test_lost_answer(void)
{
    char dir[128], path[200];
    zhandle_t *zh = zkt_raw();
    base("pnode-lost", dir, sizeof dir, zh);
    CU_ASSERT_EQUAL(zoo_create(zh, dir, "", 0, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0), ZOK);
    snprintf(path, sizeof path, "%s/m", dir);
    zkt_proxy_t *px = zkt_proxy_start(zkt_server_port());
    CU_ASSERT_PTR_NOT_NULL_FATAL(px);
    zkr_client_t *c = zkt_client_at(zkt_proxy_hosts(px), 30000);
    for (int mode = ZKR_PNODE_EPHEMERAL_SEQUENTIAL; mode <= ZKR_PNODE_PERSISTENT_SEQUENTIAL; mode++) {
        rec_t *r = rec_new();
        zkr_pnode_t *n = new_pnode(c, path, "x", (zkr_pnode_mode_t)mode, r);
        CU_ASSERT_EQUAL(zkt_proxy_stall_replies(px, 1), 0);
        CU_ASSERT_EQUAL(zkr_pnode_start(n), ZKR_OK);
        CU_ASSERT_TRUE(zkt_wait_children(zh, dir, 1, WAIT_MS)); /* made, its answer held */
        zkt_proxy_cut(px);
        CU_ASSERT_EQUAL(zkt_proxy_stall_replies(px, 0), 0);
        CU_ASSERT_EQUAL(zkr_pnode_wait_created(n, WAIT_MS), ZKR_OK);
        CU_ASSERT_EQUAL(zkt_count_children(zh, dir), 1);
        char *p = node_path(n);
        CU_ASSERT_EQUAL(zoo_exists(zh, p, 0, NULL), ZOK);
        CU_ASSERT_EQUAL(count(r, ZKR_PNODE_CREATED), 1);
        zkr_pnode_free(n);
        CU_ASSERT_EQUAL(zkt_count_children(zh, dir), 0);
        zkr_free(p);
        rec_free(r);
    }
    zkr_client_close(c);
    zkt_proxy_stop(px);
    zkt_raw_close(zh);
}

/* The same with the session ended before the answer comes: the persistent
 * node is found by its prefix on the new session and adopted (one node,
 * ours); an ephemeral one went with the session and is made again. */
static void test_lost_answer_and_session(void)
{
    char dir[128], path[200];
    zhandle_t *zh = zkt_raw();
    base("pnode-lostsess", dir, sizeof dir, zh);
    CU_ASSERT_EQUAL(zoo_create(zh, dir, "", 0, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0), ZOK);
    snprintf(path, sizeof path, "%s/m", dir);
    zkt_proxy_t *px = zkt_proxy_start(zkt_server_port());
    CU_ASSERT_PTR_NOT_NULL_FATAL(px);
    zkr_client_t *c = zkt_client_at(zkt_proxy_hosts(px), SESSION_MS);
    for (int mode = ZKR_PNODE_EPHEMERAL_SEQUENTIAL; mode <= ZKR_PNODE_PERSISTENT_SEQUENTIAL; mode++) {
        rec_t *r = rec_new();
        zkr_pnode_t *n = new_pnode(c, path, "x", (zkr_pnode_mode_t)mode, r);
        int64_t id = 0;
        char pw[16];
        CU_ASSERT_EQUAL_FATAL(zkr_client_session(c, &id, pw), ZKR_OK);
        CU_ASSERT_EQUAL(zkt_proxy_stall_replies(px, 1), 0);
        CU_ASSERT_EQUAL(zkr_pnode_start(n), ZKR_OK);
        CU_ASSERT_TRUE(zkt_wait_children(zh, dir, 1, WAIT_MS)); /* made, its answer held */
        char first[200];
        CU_ASSERT_EQUAL(zkt_newest_child(zh, dir, first, sizeof first), 1);
        struct Stat st0;
        CU_ASSERT_EQUAL(zoo_exists(zh, first, 0, &st0), ZOK);
        CU_ASSERT_EQUAL(zkt_expire_session(id, pw), 0);
        zkt_proxy_cut(px); /* the held answer is lost */
        CU_ASSERT_EQUAL(zkt_proxy_stall_replies(px, 0), 0);
        CU_ASSERT_EQUAL(zkr_pnode_wait_created(n, WAIT_MS), ZKR_OK);
        CU_ASSERT_EQUAL(zkt_count_children(zh, dir), 1);
        char *p = node_path(n);
        struct Stat st;
        CU_ASSERT_EQUAL(zoo_exists(zh, p, 0, &st), ZOK);
        if (mode == ZKR_PNODE_PERSISTENT_SEQUENTIAL) {
            CU_ASSERT_STRING_EQUAL(p, first); /* adopted */
            CU_ASSERT_EQUAL(st.czxid, st0.czxid);
        } else {
            CU_ASSERT_NOT_EQUAL(st.czxid, st0.czxid); /* made again */
            CU_ASSERT_NOT_EQUAL(st.ephemeralOwner, id);
        }
        CU_ASSERT_EQUAL(count(r, ZKR_PNODE_CREATED), 1);
        zkr_pnode_free(n);
        CU_ASSERT_EQUAL(zkt_count_children(zh, dir), 0);
        zkr_free(p);
        rec_free(r);
    }
    zkr_client_close(c);
    zkt_proxy_stop(px);
    zkt_raw_close(zh);
}

/* ---- refused for good --------------------------------------------------------------------------- */

static void test_failed(void)
{
    char dir[128], path[200];
    zhandle_t *zh = zkt_raw();
    base("pnode-failed", dir, sizeof dir, zh);
    CU_ASSERT_EQUAL_FATAL(zoo_create(zh, dir, "", 0, &ZOO_READ_ACL_UNSAFE, 0, NULL, 0), ZOK);
    snprintf(path, sizeof path, "%s/m", dir);
    zkr_client_t *c = zkt_client(SESSION_MS);
    rec_t *r = rec_new();
    zkr_pnode_t *n = new_pnode(c, path, "x", ZKR_PNODE_EPHEMERAL, r);
    CU_ASSERT_EQUAL(zkr_pnode_start(n), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_pnode_wait_created(n, WAIT_MS), ZKR_ENOAUTH);
    CU_ASSERT_TRUE(wait_events(r, ZKR_PNODE_FAILED, 1));
    pthread_mutex_lock(&r->mu);
    CU_ASSERT_EQUAL(r->ev[0].rc, ZKR_ENOAUTH);
    CU_ASSERT_STRING_EQUAL(r->ev[0].path, path);
    pthread_mutex_unlock(&r->mu);
    /* not tried again on this session */
    zkt_sleep_ms(500);
    CU_ASSERT_EQUAL(count(r, ZKR_PNODE_FAILED), 1);
    CU_ASSERT_EQUAL(zkr_pnode_is_created(n), 0);
    zkr_pnode_free(n);
    CU_ASSERT_EQUAL(zoo_exists(zh, dir, 0, NULL), ZOK);
    zkr_client_close(c);
    zkt_raw_close(zh);
    rec_free(r);
}

/* ---- the listener ------------------------------------------------------------------------------- */

static void test_free_from_listener(void)
{
    char path[128];
    zhandle_t *zh = zkt_raw();
    base("pnode-listener", path, sizeof path, zh);
    zkr_client_t *c = zkt_client(SESSION_MS);
    rec_t *r = rec_new();
    zkr_pnode_t *n = new_pnode(c, path, "x", ZKR_PNODE_EPHEMERAL, r);
    atomic_store(&r->free_own, 1);
    CU_ASSERT_EQUAL(zkr_pnode_start(n), ZKR_OK);
    CU_ASSERT_TRUE(wait_events(r, ZKR_PNODE_CREATED, 1));
    CU_ASSERT_EQUAL(atomic_load(&r->free_own), 0);
    /* refused: still working */
    CU_ASSERT_EQUAL(zkr_pnode_is_created(n), 1);
    CU_ASSERT_EQUAL(zoo_delete(zh, path, -1), ZOK);
    CU_ASSERT_TRUE(wait_events(r, ZKR_PNODE_CREATED, 2));
    zkr_pnode_free(n);
    int calls = atomic_load(&r->calls);
    CU_ASSERT_EQUAL(zoo_exists(zh, path, 0, NULL), ZNONODE);
    zkt_sleep_ms(300);
    CU_ASSERT_EQUAL(atomic_load(&r->calls), calls); /* nothing after free */
    /* a listener set later, and removed */
    n = new_pnode(c, path, "x", ZKR_PNODE_EPHEMERAL, r);
    CU_ASSERT_EQUAL(zkr_pnode_set_listener(n, NULL, NULL), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_pnode_start(n), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_pnode_wait_created(n, WAIT_MS), ZKR_OK);
    zkt_sleep_ms(200);
    CU_ASSERT_EQUAL(atomic_load(&r->calls), calls);
    zkr_pnode_free(n);
    zkr_client_close(c);
    zkt_raw_close(zh);
    rec_free(r);
}

/* ---- bad input -------------------------------------------------------------------------------------- */

static void test_bad_input(void)
{
    zkr_client_t *c = zkt_client(SESSION_MS);
    zkr_pnode_t *n = (zkr_pnode_t *)1;
    zkr_pnode_options_t opt;
    zkr_pnode_options_init(&opt);
    CU_ASSERT_EQUAL(opt.size, sizeof opt);
    CU_ASSERT_EQUAL(opt.mode, ZKR_PNODE_EPHEMERAL);
    zkr_pnode_options_init(NULL);
    CU_ASSERT_EQUAL(zkr_pnode_new(NULL, c, "/a", NULL, 0, NULL), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_pnode_new(&n, NULL, "/a", NULL, 0, NULL), ZKR_EINVAL);
    CU_ASSERT_PTR_NULL(n);
    const char *bad[] = {NULL, "", "a", "/", "/a/", "//a", "/a/./b", "/a/..", "/zookeeper", "/zookeeper/x",
                         "/a\x01"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        n = (zkr_pnode_t *)1;
        CU_ASSERT_EQUAL(zkr_pnode_new(&n, c, bad[i], NULL, 0, NULL), ZKR_EINVAL);
        CU_ASSERT_PTR_NULL(n);
    }
    CU_ASSERT_EQUAL(zkr_pnode_new(&n, c, "/a", NULL, 1, NULL), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_pnode_new(&n, c, "/a", "x", (size_t)ZKR_DATA_MAX + 1, NULL), ZKR_EINVAL);
    opt.mode = (zkr_pnode_mode_t)7;
    CU_ASSERT_EQUAL(zkr_pnode_new(&n, c, "/a", NULL, 0, &opt), ZKR_EINVAL);
    opt.mode = (zkr_pnode_mode_t)-1;
    CU_ASSERT_EQUAL(zkr_pnode_new(&n, c, "/a", NULL, 0, &opt), ZKR_EINVAL);
    zkr_pnode_options_init(&opt);
    opt.size = sizeof opt - 1;
    CU_ASSERT_EQUAL(zkr_pnode_new(&n, c, "/a", NULL, 0, &opt), ZKR_EINVAL);
    opt.size = sizeof opt + 8;
    CU_ASSERT_EQUAL(zkr_pnode_new(&n, c, "/a", NULL, 0, &opt), ZKR_EINVAL);
    /* NULL objects */
    CU_ASSERT_EQUAL(zkr_pnode_set_listener(NULL, on_event, NULL), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_pnode_start(NULL), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_pnode_wait_created(NULL, 0), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_pnode_is_created(NULL), 0);
    CU_ASSERT_EQUAL(zkr_pnode_set_data(NULL, "x", 1, 0), ZKR_EINVAL);
    char *s = (char *)1;
    size_t len = 5;
    CU_ASSERT_EQUAL(zkr_pnode_data(NULL, &s, &len), ZKR_EINVAL);
    CU_ASSERT_PTR_NULL(s);
    s = (char *)1;
    CU_ASSERT_EQUAL(zkr_pnode_node_path(NULL, &s), ZKR_EINVAL);
    CU_ASSERT_PTR_NULL(s);
    zkr_pnode_free(NULL);
    CU_ASSERT_STRING_EQUAL(zkr_pnode_event_name(ZKR_PNODE_CREATED), "CREATED");
    CU_ASSERT_STRING_EQUAL(zkr_pnode_event_name(ZKR_PNODE_DELETED), "DELETED");
    CU_ASSERT_STRING_EQUAL(zkr_pnode_event_name(ZKR_PNODE_WAITING), "WAITING");
    CU_ASSERT_STRING_EQUAL(zkr_pnode_event_name(ZKR_PNODE_FAILED), "FAILED");
    CU_ASSERT_STRING_EQUAL(zkr_pnode_event_name((zkr_pnode_event_type_t)0), "UNKNOWN");
    /* a good one: the rest of its calls */
    char path[128];
    zkt_path("pnode-bad", path, sizeof path);
    CU_ASSERT_EQUAL_FATAL(zkr_pnode_new(&n, c, path, NULL, 0, NULL), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_pnode_wait_created(n, 0), ZKR_ESTATE);
    CU_ASSERT_EQUAL(zkr_pnode_set_data(n, NULL, 3, 0), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_pnode_set_data(n, "x", (size_t)ZKR_DATA_MAX + 1, 0), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_pnode_data(n, NULL, &len), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_pnode_data(n, &s, NULL), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_pnode_node_path(n, NULL), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_pnode_node_path(n, &s), ZKR_ENONODE);
    CU_ASSERT_EQUAL(zkr_pnode_start(n), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_pnode_start(n), ZKR_ESTATE);
    CU_ASSERT_EQUAL(zkr_pnode_wait_created(n, WAIT_MS), ZKR_OK);
    /* the client closed: its calls say so; free still frees */
    zkr_client_close(c);
    CU_ASSERT_EQUAL(zkr_pnode_set_data(n, "y", 1, 1000), ZKR_ECLOSED);
    zkr_pnode_free(n);
    /* started after close */
    c = zkt_client(SESSION_MS);
    CU_ASSERT_EQUAL_FATAL(zkr_pnode_new(&n, c, path, NULL, 0, NULL), ZKR_OK);
    zkr_client_close(c);
    CU_ASSERT_EQUAL(zkr_pnode_start(n), ZKR_ECLOSED);
    zkr_pnode_free(n);
}

static void add_suites(void)
{
    CU_pSuite s = CU_add_suite("pnode", NULL, NULL);
    CU_add_test(s, "each mode: its name, owner and data; parents made; free deletes it", test_modes);
    CU_add_test(s, "data: kept before start, written before set_data returns, empty and binary", test_data);
    CU_add_test(s, "deleted by another session: DELETED, CREATED, same data, same name (sequential too)",
                test_deleted);
    CU_add_test(s, "a lost session: DELETED then CREATED on the new one, with the data last set", test_expiry);
    CU_add_test(s, "another session's ephemeral node: untouched while WAITING, ours made as it goes",
                test_foreign_ephemeral);
    CU_add_test(s, "free at once after start, many times, while another session's node is there: it stays",
                test_free_right_after_start);
    CU_add_test(s, "the client closed while WAITING: set_data and wait_created say ZKR_ECLOSED",
                test_closed_while_waiting);
    CU_add_test(s, "free while waiting, and free after another session took the path: their node stays",
                test_free_while_waiting);
    CU_add_test(s, "our own session's ephemeral node and a persistent node: adopted, data written; a persistent "
                   "one stays ours across a lost session",
                test_adopt);
    CU_add_test(s, "free deletes its own node and nothing else", test_free_own_only);
    CU_add_test(s, "a stalled link: wait_created and set_data keep their timeouts, free is bounded and the "
                   "persistent node goes once the link is back",
                test_stalled);
    CU_add_test(s, "a protected create whose answer was lost: found by its prefix and adopted", test_lost_answer);
    CU_add_test(s, "a protected create whose answer and session were lost: a persistent node adopted on the new "
                   "session, an ephemeral one made again",
                test_lost_answer_and_session);
    CU_add_test(s, "refused for good (no right to create): FAILED, wait_created says why", test_failed);
    CU_add_test(s, "a listener that frees its own pnode is refused; nothing told after free", test_free_from_listener);
    CU_add_test(s, "bad input and NULL: the documented codes", test_bad_input);
}

int main(void)
{
    return zkt_main("test_pnode", add_suites);
}

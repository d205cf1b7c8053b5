/* The counters (zkr/counter.h) on a real server: the shared count (seed,
 * get, set, compare-and-set by version, its listener, malformed data, a
 * deleted node), the atomic long (every operation, Curator's bytes,
 * compare-and-set, promotion to the lock), threads on several clients
 * incrementing with no update lost, bad input, and a stalled link that
 * keeps every timeout. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/counter_check.h"
#include "tests/harness/zkproxy.h"
#include "tests/harness/zkr_test.h"

#define SESSION_MS 6000
#define WAIT_MS 15000

/* ---- raw helpers -------------------------------------------------------- */

static void raw_put(zhandle_t *zh, const char *path, const void *data, int len)
{
    int zrc = zoo_set(zh, path, data, len, -1);
    if (zrc == ZNONODE)
        zrc = zoo_create(zh, path, data, len, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
    CU_ASSERT_EQUAL_FATAL(zrc, ZOK);
}

/* The node's bytes into buf (its length), -1 if missing. */
static int raw_get(zhandle_t *zh, const char *path, unsigned char *buf, int cap, struct Stat *st)
{
    int len = cap;
    int zrc = zoo_get(zh, path, 0, (char *)buf, &len, st);
    return zrc == ZOK ? len : -1;
}

static int64_t raw_long(zhandle_t *zh, const char *path)
{
    unsigned char b[16];
    int len = raw_get(zh, path, b, sizeof b, NULL);
    CU_ASSERT_EQUAL(len, 8);
    int64_t v = 0;
    for (int i = 0; i < 8 && len == 8; i++)
        v = (int64_t)((uint64_t)v << 8 | b[i]);
    return v;
}

/* ---- shared count --------------------------------------------------------- */

typedef struct seen {
    pthread_mutex_t mu;
    zkr_count_t *sc;
    int n, wrong;
    zkr_count_event_t ev[256];
} seen_t;

static void on_count(zkr_count_t *sc, const zkr_count_event_t *e, void *ctx)
{
    seen_t *s = ctx;
    pthread_mutex_lock(&s->mu);
    if (sc != s->sc)
        s->wrong++;
    if (s->n < 256)
        s->ev[s->n++] = *e;
    pthread_mutex_unlock(&s->mu);
}

typedef struct want {
    seen_t *s;
    zkr_count_event_type_t type;
    int32_t value;
} want_t;

static int has_event(void *arg)
{
    want_t *w = arg;
    pthread_mutex_lock(&w->s->mu);
    int found = 0;
    for (int i = 0; i < w->s->n && !found; i++)
        found = w->s->ev[i].type == w->type && (w->type != ZKR_COUNT_CHANGED || w->s->ev[i].value == w->value);
    pthread_mutex_unlock(&w->s->mu);
    return found;
}

static int wait_event(seen_t *s, zkr_count_event_type_t type, int32_t value)
{
    want_t w = {s, type, value};
    return zkt_wait_for(has_event, &w, WAIT_MS);
}

typedef struct gets {
    zkr_count_t *sc;
    int rc;
    int32_t value;
} gets_t;

static int get_is(void *arg)
{
    gets_t *g = arg;
    int32_t v = 0, ver = 0;
    int rc = zkr_count_get(g->sc, &v, &ver);
    return rc == g->rc && (rc != ZKR_OK || v == g->value);
}

static int wait_get(zkr_count_t *sc, int rc, int32_t value)
{
    gets_t g = {sc, rc, value};
    return zkt_wait_for(get_is, &g, WAIT_MS);
}

static void test_count_basics(void)
{
    char path[256];
    zkt_path("count", path, sizeof path);
    char nested[300];
    snprintf(nested, sizeof nested, "%s/deep/count", path);
    zkr_client_t *c = zkt_client(SESSION_MS);
    zhandle_t *zh = zkt_raw();
    seen_t s;
    memset(&s, 0, sizeof s);
    pthread_mutex_init(&s.mu, NULL);

    zkr_count_t *sc = NULL;
    CU_ASSERT_EQUAL_FATAL(zkr_count_new(&sc, c, nested, -7), ZKR_OK);
    s.sc = sc;
    int32_t v = 0, ver = 0;
    CU_ASSERT_EQUAL(zkr_count_get(sc, &v, &ver), ZKR_ESTATE);
    int set = 1;
    CU_ASSERT_EQUAL(zkr_count_try_set(sc, 0, 1, &set, 1000), ZKR_ESTATE);
    CU_ASSERT_EQUAL(set, 0);
    CU_ASSERT_EQUAL(zkr_count_set_listener(sc, on_count, &s), ZKR_OK);
    CU_ASSERT_EQUAL_FATAL(zkr_count_start(sc, WAIT_MS), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_count_start(sc, WAIT_MS), ZKR_ESTATE);

    /* the seed: 4 bytes big-endian, a persistent node, parents containers */
    unsigned char b[16];
    struct Stat st;
    CU_ASSERT_EQUAL(raw_get(zh, nested, b, sizeof b, &st), 4);
    CU_ASSERT(b[0] == 0xff && b[1] == 0xff && b[2] == 0xff && b[3] == 0xf9);
    CU_ASSERT_EQUAL(st.ephemeralOwner, 0);
    char parent[300];
    snprintf(parent, sizeof parent, "%s/deep", path);
    CU_ASSERT_EQUAL(zoo_exists(zh, parent, 0, &st), ZOK);
    CU_ASSERT_EQUAL(zkr_count_get(sc, &v, &ver), ZKR_OK);
    CU_ASSERT_EQUAL(v, -7);
    CU_ASSERT_EQUAL(ver, 0);
    CU_ASSERT_EQUAL(s.n, 0); /* the initial value is not told */

    /* set, then try_set by the version read; a stale version is refused */
    CU_ASSERT_EQUAL(zkr_count_set(sc, 10, WAIT_MS), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_count_get(sc, &v, &ver), ZKR_OK); /* our write at once */
    CU_ASSERT_EQUAL(v, 10);
    CU_ASSERT_EQUAL(ver, 1);
    CU_ASSERT_EQUAL(zkr_count_try_set(sc, 1, 11, &set, WAIT_MS), ZKR_OK);
    CU_ASSERT_EQUAL(set, 1);
    CU_ASSERT_EQUAL(zkr_count_try_set(sc, 1, 12, &set, WAIT_MS), ZKR_OK);
    CU_ASSERT_EQUAL(set, 0);
    CU_ASSERT_EQUAL(zkr_count_get(sc, &v, &ver), ZKR_OK);
    CU_ASSERT_EQUAL(v, 11);
    CU_ASSERT_EQUAL(ver, 2);

    /* another writer: told, and a try_set with the old version loses */
    unsigned char w[4] = {0, 0, 1, 0}; /* 256 */
    raw_put(zh, nested, w, 4);
    CU_ASSERT(wait_event(&s, ZKR_COUNT_CHANGED, 256));
    CU_ASSERT(wait_get(sc, ZKR_OK, 256));
    CU_ASSERT_EQUAL(zkr_count_get(sc, &v, &ver), ZKR_OK);
    CU_ASSERT_EQUAL(ver, 3);
    /* a race the copy cannot see yet: the server refuses, the copy is read again */
    unsigned char w2[4] = {0, 0, 2, 0}; /* 512 */
    raw_put(zh, nested, w2, 4);
    int rc = zkr_count_try_set(sc, 3, 99, &set, WAIT_MS);
    CU_ASSERT_EQUAL(rc, ZKR_OK);
    CU_ASSERT_EQUAL(set, 0);
    CU_ASSERT(wait_get(sc, ZKR_OK, 512));

    /* malformed data: told, a clear error, never a crash */
    raw_put(zh, nested, "abc", 3);
    CU_ASSERT(wait_event(&s, ZKR_COUNT_BADDATA, 0));
    CU_ASSERT(wait_get(sc, ZKR_EBADDATA, 0));
    ver = -1;
    CU_ASSERT_EQUAL(zkr_count_get(sc, &v, &ver), ZKR_EBADDATA);
    CU_ASSERT_EQUAL(ver, 5);
    CU_ASSERT_EQUAL(zkr_count_try_set(sc, 5, 1, &set, WAIT_MS), ZKR_OK); /* may repair it */
    CU_ASSERT_EQUAL(set, 1);
    CU_ASSERT(wait_get(sc, ZKR_OK, 1));

    /* deleted: told, ENONODE; set refused; created again: read again */
    CU_ASSERT_EQUAL(zoo_delete(zh, nested, -1), ZOK);
    CU_ASSERT(wait_event(&s, ZKR_COUNT_DELETED, 0));
    CU_ASSERT(wait_get(sc, ZKR_ENONODE, 0));
    CU_ASSERT_EQUAL(zkr_count_set(sc, 3, WAIT_MS), ZKR_ENONODE);
    CU_ASSERT_EQUAL(zkr_count_try_set(sc, 6, 3, &set, WAIT_MS), ZKR_ENONODE);
    raw_put(zh, nested, w, 4);
    CU_ASSERT(wait_get(sc, ZKR_OK, 256));
    CU_ASSERT_EQUAL(zkr_count_get(sc, &v, &ver), ZKR_OK);
    CU_ASSERT_EQUAL(ver, 0);

    /* a second count on the node keeps its value (the seed is not written) */
    zkr_count_t *sc2 = NULL;
    CU_ASSERT_EQUAL_FATAL(zkr_count_new(&sc2, c, nested, 77), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_count_start(sc2, WAIT_MS), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_count_get(sc2, &v, &ver), ZKR_OK);
    CU_ASSERT_EQUAL(v, 256);
    zkr_count_free(sc2);

    pthread_mutex_lock(&s.mu);
    CU_ASSERT_EQUAL(s.wrong, 0);
    pthread_mutex_unlock(&s.mu);
    zkr_count_free(sc);
    zkr_client_close(c);
    zkt_raw_close(zh);
}

/* A listener that frees its own count (refused) and sets the count (allowed). */
typedef struct own {
    atomic_int calls, set_rc;
} own_t;

static void on_count_own(zkr_count_t *sc, const zkr_count_event_t *e, void *ctx)
{
    own_t *o = ctx;
    if (e->type != ZKR_COUNT_CHANGED)
        return;
    zkr_count_free(sc); /* refused: logged, nothing done */
    if (atomic_fetch_add(&o->calls, 1) == 0)
        atomic_store(&o->set_rc, zkr_count_set(sc, 1000, WAIT_MS) + 100);
}

static int own_set(void *arg)
{
    own_t *o = arg;
    return atomic_load(&o->set_rc) != 0;
}

static void test_count_listener_calls(void)
{
    char path[256];
    zkt_path("count-own", path, sizeof path);
    zkr_client_t *c = zkt_client(SESSION_MS);
    zkr_client_t *c2 = zkt_client(SESSION_MS);
    zkr_count_t *sc = NULL, *other = NULL;
    own_t o;
    memset(&o, 0, sizeof o);
    CU_ASSERT_EQUAL_FATAL(zkr_count_new(&sc, c, path, 0), ZKR_OK);
    zkr_count_set_listener(sc, on_count_own, &o);
    CU_ASSERT_EQUAL_FATAL(zkr_count_start(sc, WAIT_MS), ZKR_OK);
    CU_ASSERT_EQUAL_FATAL(zkr_count_new(&other, c2, path, 5), ZKR_OK);
    CU_ASSERT_EQUAL_FATAL(zkr_count_start(other, WAIT_MS), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_count_set(other, 1, WAIT_MS), ZKR_OK);
    CU_ASSERT(zkt_wait_for(own_set, &o, WAIT_MS));
    CU_ASSERT_EQUAL(atomic_load(&o.set_rc), ZKR_OK + 100);
    CU_ASSERT(wait_get(other, ZKR_OK, 1000));
    zkr_count_free(other);
    zkr_count_free(sc);
    zkr_client_close(c2);
    zkr_client_close(c);
}

/* Across connection states: SUSPENDED and RECONNECTED told; a change made
 * while the link was down is told after the reconnection, and one made while
 * the session was lost after the new session's load. */
typedef struct st_want {
    seen_t *s;
    zkr_state_t state;
} st_want_t;

static int has_state(void *arg)
{
    st_want_t *w = arg;
    pthread_mutex_lock(&w->s->mu);
    int found = 0;
    for (int i = 0; i < w->s->n && !found; i++)
        found = w->s->ev[i].type == ZKR_COUNT_STATE && w->s->ev[i].state == w->state;
    pthread_mutex_unlock(&w->s->mu);
    return found;
}

/* A client through a new proxy (to stall or cut its link), and a path. */
static zkr_client_t *proxied_client(const char *name, char *path, size_t len, int session_ms, zkt_proxy_t **p)
{
    zkt_path(name, path, len);
    *p = zkt_proxy_start(zkt_server_port());
    CU_ASSERT_PTR_NOT_NULL_FATAL(*p);
    return zkt_client_at(zkt_proxy_hosts(*p), session_ms);
}

static void test_count_states(void)
{
    char path[256];
    zkt_proxy_t *p;
    zkr_client_t *c = proxied_client("count-states", path, sizeof path, SESSION_MS, &p);
    zhandle_t *zh = zkt_raw();
    seen_t s;
    memset(&s, 0, sizeof s);
    pthread_mutex_init(&s.mu, NULL);
    zkr_count_t *sc = NULL;
    CU_ASSERT_EQUAL_FATAL(zkr_count_new(&sc, c, path, 1), ZKR_OK);
    s.sc = sc;
    zkr_count_set_listener(sc, on_count, &s);
    CU_ASSERT_EQUAL_FATAL(zkr_count_start(sc, WAIT_MS), ZKR_OK);

    CU_ASSERT_EQUAL(zkt_proxy_stall(p, 1), 0);
    unsigned char w[4] = {0, 0, 0, 77};
    raw_put(zh, path, w, 4); /* while our link is stalled */
    zkt_proxy_cut(p);
    CU_ASSERT_EQUAL(zkt_proxy_stall(p, 0), 0);
    st_want_t sw = {&s, ZKR_STATE_SUSPENDED};
    CU_ASSERT(zkt_wait_for(has_state, &sw, WAIT_MS));
    sw.state = ZKR_STATE_RECONNECTED;
    CU_ASSERT(zkt_wait_for(has_state, &sw, WAIT_MS));
    CU_ASSERT(wait_event(&s, ZKR_COUNT_CHANGED, 77));
    CU_ASSERT(wait_get(sc, ZKR_OK, 77));

    zkt_expire_client(c, SESSION_MS); /* a new session: read again */
    unsigned char w2[4] = {0, 0, 0, 88};
    raw_put(zh, path, w2, 4);
    CU_ASSERT(wait_event(&s, ZKR_COUNT_CHANGED, 88));
    CU_ASSERT(wait_get(sc, ZKR_OK, 88));
    int32_t v, ver;
    int set = 0;
    CU_ASSERT_EQUAL(zkr_count_get(sc, &v, &ver), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_count_try_set(sc, ver, 89, &set, WAIT_MS), ZKR_OK);
    CU_ASSERT_EQUAL(set, 1);
    zkr_count_free(sc);
    zkr_client_close(c);
    zkt_raw_close(zh);
    zkt_proxy_stop(p);
}

/* ---- atomic long --------------------------------------------------------- */

static void test_atomic_basics(void)
{
    char path[256];
    zkt_path("atomic", path, sizeof path);
    char node[300];
    snprintf(node, sizeof node, "%s/a/n", path);
    zkr_client_t *c = zkt_client(SESSION_MS);
    zhandle_t *zh = zkt_raw();
    zkr_atomic_long_t *a = NULL;
    CU_ASSERT_EQUAL_FATAL(zkr_atomic_long_new(&a, c, node, NULL), ZKR_OK);
    zkr_atomic_result_t r;

    CU_ASSERT_EQUAL(zkr_atomic_long_get(a, &r), ZKR_OK); /* missing: 0 */
    CU_ASSERT(r.succeeded && r.pre_value == 0 && r.post_value == 0);
    CU_ASSERT_EQUAL(zkr_atomic_long_compare_and_set(a, 0, 5, &r), ZKR_OK); /* missing never matches */
    CU_ASSERT_EQUAL(r.succeeded, 0);
    CU_ASSERT_EQUAL(zoo_exists(zh, node, 0, NULL), ZNONODE);

    CU_ASSERT_EQUAL(zkr_atomic_long_increment(a, &r), ZKR_OK); /* made from 0 */
    CU_ASSERT(r.succeeded && r.pre_value == 0 && r.post_value == 1 && r.optimistic_tries == 1 &&
              r.promoted_tries == 0);
    unsigned char b[16];
    CU_ASSERT_EQUAL(raw_get(zh, node, b, sizeof b, NULL), 8);
    CU_ASSERT(b[0] == 0 && b[6] == 0 && b[7] == 1);
    CU_ASSERT_EQUAL(zkr_atomic_long_add(a, 41, &r), ZKR_OK);
    CU_ASSERT(r.succeeded && r.pre_value == 1 && r.post_value == 42);
    CU_ASSERT_EQUAL(zkr_atomic_long_subtract(a, 50, &r), ZKR_OK);
    CU_ASSERT(r.succeeded && r.post_value == -8);
    CU_ASSERT_EQUAL(raw_get(zh, node, b, sizeof b, NULL), 8);
    CU_ASSERT(b[0] == 0xff && b[7] == 0xf8);
    CU_ASSERT_EQUAL(zkr_atomic_long_decrement(a, &r), ZKR_OK);
    CU_ASSERT(r.succeeded && r.pre_value == -8 && r.post_value == -9);
    CU_ASSERT_EQUAL(raw_long(zh, node), -9);

    CU_ASSERT_EQUAL(zkr_atomic_long_compare_and_set(a, -9, 100, &r), ZKR_OK);
    CU_ASSERT(r.succeeded && r.pre_value == -9 && r.post_value == 100);
    CU_ASSERT_EQUAL(zkr_atomic_long_compare_and_set(a, -9, 200, &r), ZKR_OK);
    CU_ASSERT(!r.succeeded && r.pre_value == 100 && r.post_value == 100);
    CU_ASSERT_EQUAL(raw_long(zh, node), 100);

    int init = -1;
    CU_ASSERT_EQUAL(zkr_atomic_long_try_initialize(a, 7, &init), ZKR_OK);
    CU_ASSERT_EQUAL(init, 0);
    CU_ASSERT_EQUAL(zkr_atomic_long_try_set(a, INT64_MAX, &r), ZKR_OK);
    CU_ASSERT(r.succeeded && r.pre_value == 100 && r.post_value == INT64_MAX);
    CU_ASSERT_EQUAL(zkr_atomic_long_increment(a, &r), ZKR_OK); /* wraps as Java */
    CU_ASSERT(r.succeeded && r.post_value == INT64_MIN);
    CU_ASSERT_EQUAL(zkr_atomic_long_force_set(a, 3), ZKR_OK);
    CU_ASSERT_EQUAL(raw_long(zh, node), 3);

    /* an empty node reads 0 (Curator), but never matches a compare */
    raw_put(zh, node, NULL, -1);
    CU_ASSERT_EQUAL(zkr_atomic_long_get(a, &r), ZKR_OK);
    CU_ASSERT(r.succeeded && r.pre_value == 0);
    CU_ASSERT_EQUAL(zkr_atomic_long_compare_and_set(a, 0, 1, &r), ZKR_OK);
    CU_ASSERT_EQUAL(r.succeeded, 0);
    CU_ASSERT_EQUAL(zkr_atomic_long_increment(a, &r), ZKR_OK);
    CU_ASSERT(r.succeeded && r.post_value == 1);
    /* malformed: a clear error, nothing written */
    raw_put(zh, node, "12345", 5);
    CU_ASSERT_EQUAL(zkr_atomic_long_get(a, &r), ZKR_EBADDATA);
    CU_ASSERT_EQUAL(zkr_atomic_long_increment(a, &r), ZKR_EBADDATA);
    CU_ASSERT_EQUAL(r.succeeded, 0);
    CU_ASSERT_EQUAL(raw_get(zh, node, b, sizeof b, NULL), 5);
    CU_ASSERT_EQUAL(zkr_atomic_long_force_set(a, -2), ZKR_OK); /* repairs it */
    CU_ASSERT_EQUAL(raw_long(zh, node), -2);

    /* try_initialize on a missing node; force_set on a missing node */
    CU_ASSERT_EQUAL(zoo_delete(zh, node, -1), ZOK);
    CU_ASSERT_EQUAL(zkr_atomic_long_try_initialize(a, 7, &init), ZKR_OK);
    CU_ASSERT_EQUAL(init, 1);
    CU_ASSERT_EQUAL(raw_long(zh, node), 7);
    CU_ASSERT_EQUAL(zoo_delete(zh, node, -1), ZOK);
    CU_ASSERT_EQUAL(zkr_atomic_long_force_set(a, 9), ZKR_OK);
    CU_ASSERT_EQUAL(raw_long(zh, node), 9);

    zkr_atomic_long_free(a);
    zkr_client_close(c);
    zkt_raw_close(zh);
}

/* ---- contention ---------------------------------------------------------------- */

#define CLIENTS 4
#define THREADS 2
#define INCS 40
#define WORKERS (CLIENTS * THREADS)

/* WORKERS threads on CLIENTS clients; the server's value checked exactly. */
static cw_sum_t contend(const char *path, const char *lock_path, int retries, void *(*fn)(void *), int width)
{
    zkr_client_t *cs[CLIENTS];
    static cw_t ws[WORKERS];
    memset(ws, 0, sizeof ws);
    for (int i = 0; i < CLIENTS; i++)
        cs[i] = zkt_client(SESSION_MS);
    for (int i = 0; i < WORKERS; i++) {
        ws[i].path = path;
        ws[i].lock_path = lock_path;
        ws[i].retries = retries;
        ws[i].n = INCS;
    }
    cw_run(ws, WORKERS, cs, CLIENTS, fn);
    for (int i = 0; i < CLIENTS; i++)
        zkr_client_close(cs[i]);
    cw_sum_t sum = cw_sum(ws, WORKERS);
    CU_ASSERT_EQUAL(sum.other, 0);
    CU_ASSERT_EQUAL(sum.unknown, 0);
    CU_ASSERT_EQUAL(sum.wrong, 0);
    zhandle_t *zh = zkt_raw();
    unsigned char b[16];
    int len = raw_get(zh, path, b, sizeof b, NULL);
    CU_ASSERT_EQUAL(len, width);
    int64_t v = 0;
    for (int i = 0; i < width && len == width; i++)
        v = (int64_t)((uint64_t)v << 8 | b[i]);
    if (width == 4)
        v = (int32_t)(uint32_t)v;
    int applied = -1;
    CU_ASSERT_EQUAL(v, sum.ok); /* no update lost, none twice */
    CU_ASSERT(cw_exactly_once(ws, WORKERS, v, &applied));
    zkt_raw_close(zh);
    return sum;
}

static void test_atomic_contention(void)
{
    char path[256];
    zkt_path("atomic-race", path, sizeof path);
    cw_sum_t s = contend(path, NULL, 29, cw_atomic, 8);
    CU_ASSERT_EQUAL(s.ok + s.failed, WORKERS * INCS);
    CU_ASSERT(s.ok > 0);
}

static void test_atomic_promoted(void)
{
    char path[256], lock[300];
    zkt_path("atomic-lock", path, sizeof path);
    snprintf(lock, sizeof lock, "%s-lock", path);
    cw_sum_t s = contend(path, lock, 0, cw_atomic, 8); /* one optimistic try: races go to the lock */
    CU_ASSERT(s.promoted > 0);
    CU_ASSERT(s.promoted_ok > 0);
    zhandle_t *zh = zkt_raw();
    CU_ASSERT_EQUAL(zkt_count_children(zh, lock), 0); /* every lock node released */
    zkt_raw_close(zh);
}

static void test_count_contention(void)
{
    char path[256];
    zkt_path("count-race", path, sizeof path);
    cw_sum_t s = contend(path, NULL, 0, cw_count, 4);
    CU_ASSERT_EQUAL(s.ok, WORKERS * INCS);
    CU_ASSERT(s.failed > 0); /* they did race */
}

/* ---- bad input ----------------------------------------------------------- */

static void test_bad_input(void)
{
    zkr_client_t *c = zkt_client(SESSION_MS);
    zkr_retry_t r;
    memset(&r, 0, sizeof r);
    CU_ASSERT_EQUAL(zkr_retry_exponential(NULL, 1, 1, 1), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_retry_exponential(&r, 1, 30, 100), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_retry_exponential(&r, 1, -1, 100), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_retry_exponential(&r, -1, 1, 100), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_retry_exponential(&r, 100, 1, 10), ZKR_EINVAL);
    CU_ASSERT_EQUAL(r.kind, 0); /* untouched */
    CU_ASSERT_EQUAL(zkr_retry_exponential(&r, 10, 29, INT32_MAX), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_retry_until_elapsed(&r, -1, 10), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_retry_until_elapsed(&r, 100, -1), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_retry_until_elapsed(NULL, 100, 1), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_retry_until_elapsed(&r, 100, 1), ZKR_OK);

    zkr_atomic_long_t *a = (zkr_atomic_long_t *)1;
    CU_ASSERT_EQUAL(zkr_atomic_long_new(&a, c, "relative", NULL), ZKR_EINVAL);
    CU_ASSERT_PTR_NULL(a);
    CU_ASSERT_EQUAL(zkr_atomic_long_new(&a, NULL, "/x", NULL), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_atomic_long_new(NULL, c, "/x", NULL), ZKR_EINVAL);
    zkr_atomic_options_t opt;
    zkr_atomic_options_init(&opt);
    opt.retry.max_retries = 40;
    CU_ASSERT_EQUAL(zkr_atomic_long_new(&a, c, "/x", &opt), ZKR_EINVAL);
    zkr_atomic_options_init(&opt);
    opt.lock_path = "/bad//lock";
    CU_ASSERT_EQUAL(zkr_atomic_long_new(&a, c, "/x", &opt), ZKR_EINVAL);
    zkr_atomic_options_init(&opt);
    opt.lock_path = "/ok-lock";
    opt.lock_retry.kind = 9;
    CU_ASSERT_EQUAL(zkr_atomic_long_new(&a, c, "/x", &opt), ZKR_EINVAL);
    zkr_atomic_options_init(&opt);
    opt.size = 8;
    CU_ASSERT_EQUAL(zkr_atomic_long_new(&a, c, "/x", &opt), ZKR_EINVAL);
    zkr_atomic_result_t res;
    int init = 3;
    CU_ASSERT_EQUAL(zkr_atomic_long_get(NULL, &res), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_atomic_long_increment(NULL, &res), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_atomic_long_add(NULL, 1, &res), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_atomic_long_compare_and_set(NULL, 1, 2, &res), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_atomic_long_try_initialize(NULL, 1, &init), ZKR_EINVAL);
    CU_ASSERT_EQUAL(init, 0);
    CU_ASSERT_EQUAL(zkr_atomic_long_force_set(NULL, 1), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_atomic_long_new(&a, c, "/zkr-test-bad-input", NULL), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_atomic_long_increment(a, NULL), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_atomic_long_try_initialize(a, 1, NULL), ZKR_EINVAL);
    zkr_atomic_long_free(a);
    zkr_atomic_long_free(NULL);

    zkr_count_t *sc = (zkr_count_t *)1;
    CU_ASSERT_EQUAL(zkr_count_new(&sc, c, "/a/", 0), ZKR_EINVAL);
    CU_ASSERT_PTR_NULL(sc);
    CU_ASSERT_EQUAL(zkr_count_new(&sc, NULL, "/a", 0), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_count_new(NULL, c, "/a", 0), ZKR_EINVAL);
    int32_t v, ver;
    int set = 4;
    CU_ASSERT_EQUAL(zkr_count_get(NULL, &v, &ver), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_count_set(NULL, 1, 10), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_count_try_set(NULL, 0, 1, &set, 10), ZKR_EINVAL);
    CU_ASSERT_EQUAL(set, 0);
    CU_ASSERT_EQUAL(zkr_count_start(NULL, 10), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_count_set_listener(NULL, on_count, NULL), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_count_new(&sc, c, "/zkr-test-bad-count", 0), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_count_get(sc, NULL, &ver), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_count_try_set(sc, 0, 1, NULL, 10), ZKR_EINVAL);
    zkr_count_free(sc);
    zkr_count_free(NULL);
    CU_ASSERT_STRING_EQUAL(zkr_count_event_name(ZKR_COUNT_BADDATA), "BADDATA");
    CU_ASSERT_STRING_EQUAL(zkr_count_event_name((zkr_count_event_type_t)99), "UNKNOWN");
    zkr_client_close(c);
}

/* ---- a stalled link ------------------------------------------------------------ */

static void test_stalled_link(void)
{
    char path[256];
    zkt_path("count-stall", path, sizeof path);
    char apath[300];
    snprintf(apath, sizeof apath, "%s-atomic", path);
    zkt_proxy_t *p = zkt_proxy_start(zkt_server_port());
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    zkr_client_t *c = zkt_client_at(zkt_proxy_hosts(p), 20000); /* outlives the stall */
    zkr_count_t *sc = NULL;
    CU_ASSERT_EQUAL_FATAL(zkr_count_new(&sc, c, path, 1), ZKR_OK);
    CU_ASSERT_EQUAL_FATAL(zkr_count_start(sc, WAIT_MS), ZKR_OK);
    zkr_atomic_options_t opt;
    zkr_atomic_options_init(&opt);
    opt.timeout_ms = 1000;
    zkr_atomic_long_t *a = NULL;
    CU_ASSERT_EQUAL_FATAL(zkr_atomic_long_new(&a, c, apath, &opt), ZKR_OK);
    zkr_atomic_result_t r;
    CU_ASSERT_EQUAL(zkr_atomic_long_increment(a, &r), ZKR_OK);

    CU_ASSERT_EQUAL(zkt_proxy_stall(p, 1), 0);
    int64_t t0 = zkt_now_ms();
    int rc = zkr_atomic_long_increment(a, &r); /* its read is stalled: nothing written */
    int64_t took = zkt_now_ms() - t0;
    CU_ASSERT_EQUAL(rc, ZKR_ETIMEDOUT);
    CU_ASSERT(took >= 900 && took < 3000);
    t0 = zkt_now_ms();
    rc = zkr_atomic_long_get(a, &r);
    CU_ASSERT_EQUAL(rc, ZKR_ETIMEDOUT);
    CU_ASSERT(zkt_now_ms() - t0 < 3000);
    t0 = zkt_now_ms();
    rc = zkr_count_set(sc, 5, 1000); /* sent into the stall: outcome unknown */
    CU_ASSERT_EQUAL(rc, ZKR_ECONNLOSS);
    CU_ASSERT(zkt_now_ms() - t0 < 3000);
    int32_t v, ver;
    CU_ASSERT_EQUAL(zkr_count_get(sc, &v, &ver), ZKR_OK); /* the copy, no request */
    CU_ASSERT_EQUAL(v, 1);
    int set = 0;
    t0 = zkt_now_ms();
    rc = zkr_count_try_set(sc, ver, 9, &set, 1000);
    CU_ASSERT_EQUAL(rc, ZKR_ECONNLOSS);
    CU_ASSERT(zkt_now_ms() - t0 < 3000);
    CU_ASSERT_EQUAL(zkt_proxy_stall(p, 0), 0);
    /* both reach the server in order: the set applies (version 2), so the
     * try_set by version 1 is refused: 5 it is */
    CU_ASSERT(wait_get(sc, ZKR_OK, 5));
    CU_ASSERT_EQUAL(zkr_atomic_long_increment(a, &r), ZKR_OK);
    CU_ASSERT(r.succeeded && r.pre_value == 1 && r.post_value == 2);
    zkr_atomic_long_free(a);
    zkr_count_free(sc);
    zkr_client_close(c);
    zkt_proxy_stop(p);
}

/* The C client gives a stalled connection up (after 2/3 of the session
 * timeout) by answering what is in flight ZOPERATIONTIMEOUT: a read then
 * is sent again once the link is back, not reported ZKR_ETIMEDOUT before
 * the call's own timeout. */
/* A call run on a thread of its own (its code when done). */
typedef struct bg_call {
    int (*call)(struct bg_call *b);
    zkr_atomic_long_t *a;
    zkr_count_t *sc;
    zkr_atomic_result_t r;
    int rc;
    atomic_int done;
    pthread_t t;
} bg_call_t;

static void *bg_main(void *arg)
{
    bg_call_t *b = arg;
    b->rc = b->call(b);
    atomic_store(&b->done, 1);
    return NULL;
}

static void bg_start(bg_call_t *b)
{
    CU_ASSERT_EQUAL_FATAL(pthread_create(&b->t, NULL, bg_main, b), 0);
}

static int call_get(bg_call_t *b)
{
    return zkr_atomic_long_get(b->a, &b->r);
}

static int call_increment(bg_call_t *b)
{
    return zkr_atomic_long_increment(b->a, &b->r);
}

static int call_set_7(bg_call_t *b)
{
    return zkr_count_set(b->sc, 7, -1);
}

static void test_read_outlasts_connection_timeout(void)
{
    char path[256];
    zkt_proxy_t *p;
    zkr_client_t *c = proxied_client("atomic-ctimeout", path, sizeof path, 4000, &p);
    zkr_atomic_options_t opt;
    zkr_atomic_options_init(&opt);
    opt.timeout_ms = 20000;
    bg_call_t g = {.call = call_get, .rc = 99};
    CU_ASSERT_EQUAL_FATAL(zkr_atomic_long_new(&g.a, c, path, &opt), ZKR_OK);
    int init = 0;
    CU_ASSERT_EQUAL(zkr_atomic_long_try_initialize(g.a, 41, &init), ZKR_OK);
    CU_ASSERT_EQUAL(zkt_proxy_stall(p, 1), 0);
    bg_start(&g);
    zkt_sleep_ms(4000); /* past the C client's 2/3 of 4 s */
    CU_ASSERT_EQUAL(zkt_proxy_stall(p, 0), 0);
    pthread_join(g.t, NULL);
    CU_ASSERT_EQUAL(g.rc, ZKR_OK);
    CU_ASSERT(g.r.succeeded && g.r.pre_value == 41);
    zkr_atomic_long_free(g.a);
    zkr_client_close(c);
    zkt_proxy_stop(p);
}

/* zkr_client_close while calls without a timeout wait on a stalled link:
 * they return ZKR_ECLOSED (the read) or ZKR_ECONNLOSS (the write sent into
 * the stall), and close returns as on any stalled link (zkr/client.h: at
 * most 1 s to drain, 1.5 s for the server), not when the C client gives
 * the connection up (2/3 of the 20 s session). */
static void test_close_stalled_calls(void)
{
    char path[256], apath[300];
    zkt_proxy_t *p;
    zkr_client_t *c = proxied_client("count-close", path, sizeof path, 20000, &p);
    snprintf(apath, sizeof apath, "%s-atomic", path);
    zkr_count_t *sc = NULL;
    CU_ASSERT_EQUAL_FATAL(zkr_count_new(&sc, c, path, 1), ZKR_OK);
    CU_ASSERT_EQUAL_FATAL(zkr_count_start(sc, WAIT_MS), ZKR_OK);
    zkr_atomic_options_t opt;
    zkr_atomic_options_init(&opt);
    opt.timeout_ms = -1;
    zkr_atomic_long_t *a = NULL;
    CU_ASSERT_EQUAL_FATAL(zkr_atomic_long_new(&a, c, apath, &opt), ZKR_OK);
    CU_ASSERT_EQUAL(zkt_proxy_stall(p, 1), 0);
    bg_call_t bi = {.call = call_increment, .a = a}, bs = {.call = call_set_7, .sc = sc};
    bg_start(&bi);
    bg_start(&bs);
    zkt_sleep_ms(300); /* both sent into the stall */
    CU_ASSERT(!atomic_load(&bi.done) && !atomic_load(&bs.done));
    int64_t t0 = zkt_now_ms();
    CU_ASSERT_EQUAL(zkr_client_close(c), ZKR_OK);
    int64_t took = zkt_now_ms() - t0;
    pthread_join(bi.t, NULL);
    pthread_join(bs.t, NULL);
    printf("(close took %lld ms; %d, %d) ", (long long)took, bi.rc, bs.rc);
    CU_ASSERT(took < 6000);
    CU_ASSERT_EQUAL(bi.rc, ZKR_ECLOSED); /* its read: nothing written */
    CU_ASSERT_EQUAL(bs.rc, ZKR_ECONNLOSS);
    zkr_atomic_long_free(a);
    zkr_count_free(sc);
    zkt_proxy_stop(p);
}

/* A create refused for a missing parent makes the parents, then is sent
 * again; the call's timeout passing while the parents are made is not a
 * lost answer of the write (it was refused): ZKR_ETIMEDOUT, exact, not
 * ZKR_ECONNLOSS.  A deep path (about 400 parents) makes that phase long;
 * only tries whose timeout passed in it (some parents made, not the
 * last) are judged, and at least one must be. */
static void test_timeout_among_parents(void)
{
    zhandle_t *zh = zkt_raw();
    zkr_client_t *c = zkt_client(SESSION_MS);
    int judged = 0;
    for (int round = 0; round < 20 && judged < 3; round++) {
        char base[128], path[1024], first[160], last[1024];
        zkt_path("parents-timeout", base, sizeof base);
        int n = snprintf(path, sizeof path, "%s", base);
        while (n < 1000)
            n += snprintf(path + n, sizeof path - (size_t)n, "/p");
        snprintf(first, sizeof first, "%s/p", base);
        snprintf(last, sizeof last, "%.*s", n - 2, path);
        zkr_atomic_options_t opt;
        zkr_atomic_options_init(&opt);
        opt.timeout_ms = 5 + round * 5;
        zkr_atomic_long_t *a = NULL;
        CU_ASSERT_EQUAL_FATAL(zkr_atomic_long_new(&a, c, path, &opt), ZKR_OK);
        int init = 0;
        int rc = zkr_atomic_long_try_initialize(a, 1, &init);
        zkr_atomic_long_free(a);
        /* let what was sent land before looking */
        zkt_sleep_ms(200);
        int in_parents = zoo_exists(zh, first, 0, NULL) == ZOK && zoo_exists(zh, last, 0, NULL) == ZNONODE;
        if (!in_parents)
            continue;
        judged++;
        CU_ASSERT_EQUAL(rc, ZKR_ETIMEDOUT);
        CU_ASSERT_EQUAL(init, 0);
    }
    printf("(%d judged) ", judged);
    CU_ASSERT(judged > 0);
    zkr_client_close(c);
    zkt_raw_close(zh);
}

static void add_suites(void)
{
    CU_pSuite s = CU_add_suite("counter", NULL, NULL);
    CU_add_test(s, "shared count: seed, get, set, try_set by version, listener, bad data, deleted node",
                test_count_basics);
    CU_add_test(s, "shared count: a listener may set, may not free its own count", test_count_listener_calls);
    CU_add_test(s, "shared count across states: SUSPENDED, RECONNECTED told; changes missed while down or "
                   "without a session told after",
                test_count_states);
    CU_add_test(s, "atomic long: every operation, Curator's bytes, empty and malformed data", test_atomic_basics);
    CU_add_test(s, "atomic long: 4 clients x 2 threads incrementing: the value is the sum of the successes",
                test_atomic_contention);
    CU_add_test(s, "atomic long: promoted to the lock after one optimistic try; nothing lost",
                test_atomic_promoted);
    CU_add_test(s, "shared count: 4 clients x 2 threads in a try_set loop: nothing lost", test_count_contention);
    CU_add_test(s, "bad input: the documented codes", test_bad_input);
    CU_add_test(s, "a stalled link: every call returns by its timeout; unknown writes say so",
                test_stalled_link);
    CU_add_test(s, "a read in flight when the C client gives the connection up is sent again, not ZKR_ETIMEDOUT",
                test_read_outlasts_connection_timeout);
    CU_add_test(s, "the timeout passing while a create's parents are made: ZKR_ETIMEDOUT, not ZKR_ECONNLOSS",
                test_timeout_among_parents);
    CU_add_test(s, "close while calls without a timeout wait on a stalled link: they return, close is not held",
                test_close_stalled_calls);
}

int main(void)
{
    return zkt_main("test_counter", add_suites);
}

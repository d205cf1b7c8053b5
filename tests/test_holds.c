/* Holds that know when they are gone: a holder's node deleted by another
 * session (every lock kind), a waiter's node deleted, a release the server
 * refuses, a release on a stalled link. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/harness/zkproxy.h"
#include "tests/harness/zkr_test.h"

#define SESSION_MS 4000
#define LONG_WAIT_MS 30000

/* ---- one lock kind, seen through the common interface ---------------------------- */

typedef enum kind { K_MUTEX, K_WRITE, K_READ, K_SMUTEX, K_LEASE, K_KINDS } kind_t;
static const char *const kind_names[] = {"mutex", "write hold", "read hold", "semaphore mutex",
                                         "semaphore lease"};

typedef struct lk {
    kind_t kind;
    zkr_mutex_t *m;
    zkr_rwlock_t *rw;
    zkr_semaphore_mutex_t *sm;
    zkr_semaphore_t *s;
    zkr_lease_t *lease;
    int write; /* for K_WRITE/K_READ: which half this one takes */
} lk_t;

static void lk_new(lk_t *l, kind_t k, int write, zkr_client_t *c, const char *path)
{
    memset(l, 0, sizeof *l);
    l->kind = k;
    l->write = write;
    int rc = ZKR_EINVAL;
    if (k == K_MUTEX)
        rc = zkr_mutex_new(&l->m, c, path);
    else if (k == K_WRITE || k == K_READ)
        rc = zkr_rwlock_new(&l->rw, c, path);
    else if (k == K_SMUTEX)
        rc = zkr_semaphore_mutex_new(&l->sm, c, path);
    else
        rc = zkr_semaphore_new(&l->s, c, path, 1);
    CU_ASSERT_EQUAL_FATAL(rc, ZKR_OK);
}

/* A lock's listener, or a semaphore's (lfn). */
static int lk_set_listener(lk_t *l, zkr_hold_fn fn, zkr_lease_fn lfn, void *ctx)
{
    if (l->m)
        return zkr_mutex_set_hold_listener(l->m, fn, ctx);
    if (l->rw)
        return zkr_rwlock_set_hold_listener(l->rw, fn, ctx);
    if (l->sm)
        return zkr_semaphore_mutex_set_hold_listener(l->sm, fn, ctx);
    return zkr_semaphore_set_hold_listener(l->s, lfn, ctx);
}

static zkr_lock_ref_t lk_ref(lk_t *l)
{
    if (l->m)
        return zkr_mutex_ref(l->m);
    if (l->rw)
        return l->write ? zkr_rwlock_write_ref(l->rw) : zkr_rwlock_read_ref(l->rw);
    return zkr_semaphore_mutex_ref(l->sm);
}

static int lk_acquire(lk_t *l, int64_t timeout_ms)
{
    if (l->s)
        return zkr_semaphore_acquire(l->s, timeout_ms, &l->lease);
    return zkr_lock_acquire(lk_ref(l), timeout_ms);
}

static int lk_release(lk_t *l)
{
    if (l->s) {
        int rc = zkr_lease_release(l->lease);
        l->lease = NULL;
        return rc;
    }
    return zkr_lock_release(lk_ref(l));
}

static int lk_is_held(lk_t *l)
{
    if (l->s)
        return l->lease && zkr_lease_hold_state(l->lease) != ZKR_HOLD_LOST;
    return zkr_lock_is_held(lk_ref(l));
}

static zkr_hold_state_t lk_state(lk_t *l)
{
    if (l->s)
        return zkr_lease_hold_state(l->lease);
    return zkr_lock_hold_state(lk_ref(l));
}

static int64_t lk_token(lk_t *l)
{
    int64_t t = -1;
    if (l->s)
        zkr_lease_fencing_token(l->lease, &t);
    else
        zkr_lock_fencing_token(lk_ref(l), &t);
    return t;
}

static void lk_free(lk_t *l)
{
    if (l->lease)
        zkr_lease_release(l->lease);
    zkr_mutex_free(l->m);
    zkr_rwlock_free(l->rw);
    zkr_semaphore_mutex_free(l->sm);
    zkr_semaphore_free(l->s);
}

/* The directory a kind's holds live in. */
static void hold_dir(kind_t k, const char *path, char *dir, size_t len)
{
    if (k == K_SMUTEX || k == K_LEASE)
        snprintf(dir, len, "%s/leases", path);
    else
        snprintf(dir, len, "%s", path);
}

/* The child of dir owned by `session` (malloc'd full path), or NULL. */
static char *node_of(zhandle_t *zh, const char *dir, int64_t session)
{
    struct String_vector sv = {0, NULL};
    if (zoo_get_children(zh, dir, 0, &sv) != ZOK)
        return NULL;
    char *found = NULL;
    for (int32_t i = 0; i < sv.count && !found; i++) {
        char p[512];
        snprintf(p, sizeof p, "%s/%s", dir, sv.data[i]);
        struct Stat st;
        if (zoo_exists(zh, p, 0, &st) == ZOK && st.ephemeralOwner == session)
            found = strdup(p);
    }
    deallocate_String_vector(&sv);
    return found;
}

static int64_t session_of(zkr_client_t *c)
{
    int64_t id = 0;
    zkr_client_session(c, &id, NULL);
    return id;
}

/* ---- a hold listener that records LOST -------------------------------------------- */

typedef struct told {
    atomic_int lost;
    atomic_llong lost_at;
    atomic_int calls;
    zkr_lock_ref_t lock;    /* the object each call must be told */
    zkr_semaphore_t *sem;
    atomic_int wrong;       /* calls told another object, or no node */
} told_t;

static void told_note(told_t *t, zkr_hold_state_t s)
{
    atomic_fetch_add(&t->calls, 1);
    if (s == ZKR_HOLD_LOST && atomic_fetch_add(&t->lost, 1) == 0)
        atomic_store(&t->lost_at, zkt_now_ms());
}

static void told_fn(zkr_lock_ref_t lock, zkr_hold_state_t s, const char *node, void *ctx)
{
    told_t *t = ctx;
    if (!zkr_lock_ref_equal(lock, t->lock) || t->sem || !node)
        atomic_fetch_add(&t->wrong, 1);
    told_note(t, s);
}

static void told_lease(zkr_semaphore_t *sem, zkr_hold_state_t s, const char *node, void *ctx)
{
    told_t *t = ctx;
    if (sem != t->sem || !sem || !node)
        atomic_fetch_add(&t->wrong, 1);
    told_note(t, s);
}

static int int_set(void *p)
{
    return atomic_load((atomic_int *)p) != 0;
}

/* ---- a waiter on another thread ------------------------------------------------------ */

typedef struct waiter {
    lk_t *l;
    int64_t timeout_ms;
    atomic_int done;
    int rc;
    int64_t token;    /* of its hold, read on its thread (holds are per thread) */
    int release_rc;   /* it releases at once */
    int64_t returned_at;
    pthread_t tid;
} waiter_t;

static void *waiter_main(void *arg)
{
    waiter_t *w = arg;
    w->rc = lk_acquire(w->l, w->timeout_ms);
    w->returned_at = zkt_now_ms();
    if (w->rc == ZKR_OK) {
        w->token = lk_token(w->l);
        w->release_rc = lk_release(w->l);
    }
    atomic_store(&w->done, 1);
    return NULL;
}

static void waiter_start(waiter_t *w, lk_t *l, int64_t timeout_ms)
{
    memset(w, 0, sizeof *w);
    w->l = l;
    w->timeout_ms = timeout_ms;
    w->rc = w->release_rc = 1;
    CU_ASSERT_FATAL(pthread_create(&w->tid, NULL, waiter_main, w) == 0);
}

/* ---- outside deletion of a holder's node ---------------------------------------------- */

static void outside_delete_holder(kind_t k)
{
    char path[128], dir[160];
    zkt_path("outside", path, sizeof path);
    hold_dir(k, path, dir, sizeof dir);
    zhandle_t *zh = zkt_raw();
    zkr_client_t *ca = zkt_client(SESSION_MS), *cb = zkt_client(SESSION_MS);
    lk_t a, b;
    lk_new(&a, k, k != K_READ, ca, path);
    /* a write hold has a reader waiting, a read hold a writer */
    lk_new(&b, k, k == K_READ, cb, path);
    told_t told;
    memset(&told, 0, sizeof told);
    if (a.s)
        told.sem = a.s;
    else
        told.lock = lk_ref(&a);
    CU_ASSERT_EQUAL(lk_set_listener(&a, told_fn, told_lease, &told), ZKR_OK);
    CU_ASSERT_EQUAL_FATAL(lk_acquire(&a, 5000), ZKR_OK);
    int64_t ta = lk_token(&a);
    waiter_t w;
    waiter_start(&w, &b, LONG_WAIT_MS);
    char *anode = node_of(zh, dir, session_of(ca));
    CU_ASSERT_PTR_NOT_NULL_FATAL(anode);
    CU_ASSERT_TRUE(zkt_wait_for(int_set, &told.calls, 300) == 0); /* nothing said yet */
    CU_ASSERT_EQUAL(atomic_load(&w.done), 0);

    int64_t t0 = zkt_now_ms();
    CU_ASSERT_EQUAL(zoo_delete(zh, anode, -1), ZOK); /* another session deletes it */
    CU_ASSERT_TRUE(zkt_wait_for(int_set, &told.lost, 10000));
    long long delay = atomic_load(&told.lost_at) - t0;
    printf("\n    %s: holder told LOST %lld ms after the outside delete ", kind_names[k], delay);
    CU_ASSERT_EQUAL(lk_state(&a), ZKR_HOLD_LOST);
    CU_ASSERT_FALSE(lk_is_held(&a));
    CU_ASSERT_EQUAL(atomic_load(&told.calls), 1); /* one notification */
    CU_ASSERT_EQUAL(atomic_load(&told.wrong), 0); /* about the object it was set on */
    /* The next holder gets in, with a larger token. */
    pthread_join(w.tid, NULL);
    CU_ASSERT_EQUAL(w.rc, ZKR_OK);
    CU_ASSERT_TRUE(w.token > ta);
    CU_ASSERT_EQUAL(w.release_rc, ZKR_OK);
    CU_ASSERT_EQUAL(lk_release(&a), ZKR_ELOST);
    CU_ASSERT_TRUE(zkt_count_children(zh, dir) == 0);
    free(anode);
    lk_free(&a);
    lk_free(&b);
    zkr_client_close(ca);
    zkr_client_close(cb);
    zkt_raw_close(zh);
}

static void test_outside_mutex(void)
{
    outside_delete_holder(K_MUTEX);
}
static void test_outside_write(void)
{
    outside_delete_holder(K_WRITE);
}
static void test_outside_read(void)
{
    outside_delete_holder(K_READ);
}
static void test_outside_smutex(void)
{
    outside_delete_holder(K_SMUTEX);
}
static void test_outside_lease(void)
{
    outside_delete_holder(K_LEASE);
}

/* ---- outside deletion of a waiting node ----------------------------------------------- */

typedef struct waiting_watches {
    const char *pred, *own;
} waiting_watches_t;

/* The waiter has set its watches: one waiter's watch on its predecessor,
 * and its own session's on its node. */
static int waiter_watching(void *arg)
{
    waiting_watches_t *w = arg;
    return zkt_watches_on(w->pred) == 1 && zkt_owner_watches(w->own) == 1;
}

static int owner_watches_node_of(void *path)
{
    return zkt_owner_watches(path) == 1;
}

static void test_outside_delete_waiter(void)
{
    char path[128];
    zkt_path("outside-waiter", path, sizeof path);
    zhandle_t *zh = zkt_raw();
    zkr_client_t *ca = zkt_client(SESSION_MS), *cb = zkt_client(SESSION_MS);
    lk_t a, b;
    lk_new(&a, K_MUTEX, 1, ca, path);
    lk_new(&b, K_MUTEX, 1, cb, path);
    CU_ASSERT_EQUAL_FATAL(lk_acquire(&a, 5000), ZKR_OK);
    waiter_t w;
    waiter_start(&w, &b, LONG_WAIT_MS);
    CU_ASSERT_TRUE_FATAL(zkt_wait_children(zh, path, 2, 10000));
    char *anode = node_of(zh, path, session_of(ca));
    char *bnode = node_of(zh, path, session_of(cb));
    CU_ASSERT_PTR_NOT_NULL_FATAL(anode);
    CU_ASSERT_PTR_NOT_NULL_FATAL(bnode);
    waiting_watches_t ww = {anode, bnode};
    CU_ASSERT_TRUE(zkt_wait_for(waiter_watching, &ww, 10000)); /* it has set its watches */
    free(anode);
    int64_t t0 = zkt_now_ms();
    CU_ASSERT_EQUAL(zoo_delete(zh, bnode, -1), ZOK);
    CU_ASSERT_TRUE(zkt_wait_for(int_set, &w.done, 10000));
    pthread_join(w.tid, NULL);
    printf("\n    waiter returned %s %lld ms after its node was deleted ", zkr_err_name(w.rc),
           (long long)(w.returned_at - t0));
    CU_ASSERT_EQUAL(w.rc, ZKR_EDELETED);
    CU_ASSERT_TRUE(w.returned_at - t0 < 5000);
    CU_ASSERT_FALSE(zkr_mutex_is_held(b.m));
    /* The holder is untouched. */
    CU_ASSERT_EQUAL(lk_state(&a), ZKR_HOLD_SAFE);
    CU_ASSERT_EQUAL(lk_release(&a), ZKR_OK);
    /* b can queue again. */
    CU_ASSERT_EQUAL(lk_acquire(&b, 5000), ZKR_OK);
    CU_ASSERT_EQUAL(lk_release(&b), ZKR_OK);
    CU_ASSERT_EQUAL(zkt_count_children(zh, path), 0);
    free(bnode);
    lk_free(&a);
    lk_free(&b);
    zkr_client_close(ca);
    zkr_client_close(cb);
    zkt_raw_close(zh);
}

/* A waiter further back in line (its turn comes only through a listing,
 * which would show its node gone) costs nothing while it waits less than
 * ZKR__WAITER_WATCH_DELAY_MS (2 s): then its own session watches its node,
 * and an outside deletion ends its wait with ZKR_EDELETED at once, not
 * when its turn comes. */
static void test_outside_delete_waiter_behind(void)
{
    char path[128];
    zkt_path("outside-behind", path, sizeof path);
    zhandle_t *zh = zkt_raw();
    enum { N = 4 };
    zkr_client_t *cs[N];
    lk_t l[N];
    waiter_t w[N];
    for (int i = 0; i < N; i++) {
        cs[i] = zkt_client(SESSION_MS);
        lk_new(&l[i], K_MUTEX, 1, cs[i], path);
    }
    CU_ASSERT_EQUAL_FATAL(lk_acquire(&l[0], 5000), ZKR_OK);
    for (int i = 1; i < N; i++) {
        waiter_start(&w[i], &l[i], LONG_WAIT_MS);
        CU_ASSERT_TRUE_FATAL(zkt_wait_children(zh, path, i + 1, 10000));
    }
    char *last = node_of(zh, path, session_of(cs[N - 1]));
    CU_ASSERT_PTR_NOT_NULL_FATAL(last);
    int64_t queued = zkt_now_ms();
    /* The last waiter's node is not watched by its owner at first ... */
    CU_ASSERT_EQUAL(zkt_owner_watches(last), 0);
    /* ... and is once it has waited 2 s. */
    CU_ASSERT_TRUE(zkt_wait_for(owner_watches_node_of, last, 10000));
    int64_t watched = zkt_now_ms() - queued;
    printf("\n    the last waiter's own watch came after %lld ms ", (long long)watched);
    CU_ASSERT_TRUE(watched >= 1500);
    int64_t t0 = zkt_now_ms();
    CU_ASSERT_EQUAL(zoo_delete(zh, last, -1), ZOK);
    CU_ASSERT_TRUE(zkt_wait_for(int_set, &w[N - 1].done, 10000));
    pthread_join(w[N - 1].tid, NULL);
    printf("returned %s %lld ms after its node was deleted ", zkr_err_name(w[N - 1].rc),
           (long long)(w[N - 1].returned_at - t0));
    CU_ASSERT_EQUAL(w[N - 1].rc, ZKR_EDELETED);
    CU_ASSERT_TRUE(w[N - 1].returned_at - t0 < 1000);
    /* The others are untouched and take their turns in order. */
    CU_ASSERT_EQUAL(atomic_load(&w[1].done), 0);
    CU_ASSERT_EQUAL(atomic_load(&w[2].done), 0);
    CU_ASSERT_EQUAL(lk_release(&l[0]), ZKR_OK);
    for (int i = 1; i < N - 1; i++) {
        CU_ASSERT_TRUE(zkt_wait_for(int_set, &w[i].done, 10000));
        pthread_join(w[i].tid, NULL);
        CU_ASSERT_EQUAL(w[i].rc, ZKR_OK);
        CU_ASSERT_EQUAL(w[i].release_rc, ZKR_OK);
    }
    CU_ASSERT_EQUAL(zkt_count_children(zh, path), 0);
    free(last);
    for (int i = 0; i < N; i++) {
        lk_free(&l[i]);
        zkr_client_close(cs[i]);
    }
    zkt_raw_close(zh);
}

/* ---- holds that outlive their object: its free turns their listener off ------------------ */

typedef struct granted {
    zkr_hold_t *hold;
    atomic_int done;
} granted_t;

static void on_granted(uint64_t acquire_id, int rc, zkr_hold_t *hold, void *ctx)
{
    (void)acquire_id;
    granted_t *g = ctx;
    g->hold = rc == ZKR_OK ? hold : NULL;
    atomic_store(&g->done, 1);
}

static int hold_lost(void *p)
{
    return zkr_hold_state(p) == ZKR_HOLD_LOST;
}

static int lease_lost(void *p)
{
    return zkr_lease_hold_state(p) == ZKR_HOLD_LOST;
}

static void test_outliving_holds(void)
{
    char path[128], spath[160], leases[192];
    zkt_path("outlive", path, sizeof path);
    snprintf(spath, sizeof spath, "%s-sem", path);
    snprintf(leases, sizeof leases, "%s/leases", spath);
    zhandle_t *zh = zkt_raw();
    zkr_client_t *c = zkt_client(SESSION_MS);
    CU_ASSERT_EQUAL(zkr_client_set_dispatch(c, ZKR_DISPATCH_THREAD), ZKR_OK);
    told_t tm, ts;
    memset(&tm, 0, sizeof tm);
    memset(&ts, 0, sizeof ts);

    /* a mutex's asynchronous hold, and a semaphore's lease */
    zkr_mutex_t *m;
    zkr_semaphore_t *s;
    CU_ASSERT_EQUAL_FATAL(zkr_mutex_new(&m, c, path), ZKR_OK);
    CU_ASSERT_EQUAL_FATAL(zkr_semaphore_new(&s, c, spath, 2), ZKR_OK);
    tm.lock = zkr_mutex_ref(m);
    ts.sem = s;
    CU_ASSERT_EQUAL(zkr_mutex_set_hold_listener(m, told_fn, &tm), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_semaphore_set_hold_listener(s, told_lease, &ts), ZKR_OK);
    granted_t g = {NULL, 0};
    CU_ASSERT_EQUAL(zkr_lock_acquire_async(zkr_mutex_ref(m), 5000, on_granted, &g, NULL), ZKR_OK);
    zkr_lease_t *l = NULL;
    CU_ASSERT_EQUAL_FATAL(zkr_semaphore_acquire(s, 5000, &l), ZKR_OK);
    CU_ASSERT_TRUE_FATAL(zkt_wait_for(zkt_flag_set, &g.done, 5000));
    zkr_hold_t *h = g.hold;
    CU_ASSERT_PTR_NOT_NULL_FATAL(h);
    char *hnode = node_of(zh, path, session_of(c)), *lnode = node_of(zh, leases, session_of(c));
    CU_ASSERT_PTR_NOT_NULL_FATAL(hnode);
    CU_ASSERT_PTR_NOT_NULL_FATAL(lnode);

    /* The objects go; their holds stay (they are the program's), their
     * listeners are off: an outside deletion makes them LOST, untold. */
    zkr_mutex_free(m);
    zkr_semaphore_free(s);
    CU_ASSERT_EQUAL(zkr_hold_state(h), ZKR_HOLD_SAFE);
    CU_ASSERT_EQUAL(zkr_lease_hold_state(l), ZKR_HOLD_SAFE);
    CU_ASSERT_EQUAL(zoo_delete(zh, hnode, -1), ZOK);
    CU_ASSERT_EQUAL(zoo_delete(zh, lnode, -1), ZOK);
    CU_ASSERT_TRUE(zkt_wait_for(hold_lost, h, 10000));
    CU_ASSERT_TRUE(zkt_wait_for(lease_lost, l, 10000));
    zkt_sleep_ms(200); /* a call, if one were made, has had its time */
    CU_ASSERT_EQUAL(atomic_load(&tm.calls), 0);
    CU_ASSERT_EQUAL(atomic_load(&ts.calls), 0);
    CU_ASSERT_EQUAL(zkr_hold_release(h), ZKR_ELOST);
    CU_ASSERT_EQUAL(zkr_lease_release(l), ZKR_ELOST);
    free(hnode);
    free(lnode);
    zkr_client_close(c);
    zkt_raw_close(zh);
}

/* ---- a hold after zkr_client_close: gone with the session ------------------------------- */

static void test_hold_after_close(void)
{
    for (kind_t k = 0; k < K_KINDS; k++) {
        char path[128];
        zkt_path("afterclose", path, sizeof path);
        zkr_client_t *c = zkt_client(SESSION_MS);
        lk_t a;
        unsigned failures = CU_get_number_of_failures();
        lk_new(&a, k, k != K_READ, c, path);
        CU_ASSERT_EQUAL_FATAL(lk_acquire(&a, 5000), ZKR_OK);
        CU_ASSERT_EQUAL(zkr_client_close(c), ZKR_OK);
        /* its node went with the session: not held, not SAFE */
        CU_ASSERT_EQUAL(lk_state(&a), ZKR_HOLD_LOST);
        CU_ASSERT_FALSE(lk_is_held(&a));
        if (k != K_LEASE) /* a reentrant kind is not granted again on it */
            CU_ASSERT_EQUAL(zkr_lock_acquire(lk_ref(&a), 0), ZKR_ECLOSED);
        CU_ASSERT_EQUAL(lk_release(&a), ZKR_OK); /* released: with the session */
        CU_ASSERT_FALSE(lk_is_held(&a));
        lk_free(&a);
        if (CU_get_number_of_failures() != failures)
            printf("\n    %s after close: failed ", kind_names[k]);
    }
}

/* ---- a directory that forbids delete ---------------------------------------------------- */

static void test_release_refused(void)
{
    char base[128], path[160];
    zkt_path("nodelete", base, sizeof base);
    snprintf(path, sizeof path, "%s/lock", base);
    zhandle_t *zh = zkt_raw();
    zoo_create(zh, "/zkr-test", "", 0, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0); /* may exist */
    CU_ASSERT_EQUAL_FATAL(zoo_create(zh, base, "", 0, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0), ZOK);
    struct ACL no_delete_acl = {ZOO_PERM_ALL & ~ZOO_PERM_DELETE, {"world", "anyone"}};
    struct ACL_vector no_delete = {1, &no_delete_acl};
    CU_ASSERT_EQUAL_FATAL(zoo_create(zh, path, "", 0, &no_delete, 0, NULL, 0), ZOK);

    zkr_client_t *c = zkt_client(SESSION_MS), *c2 = zkt_client(SESSION_MS);
    zkr_mutex_t *m, *m2;
    CU_ASSERT_EQUAL_FATAL(zkr_mutex_new(&m, c, path), ZKR_OK);
    CU_ASSERT_EQUAL_FATAL(zkr_mutex_new(&m2, c2, path), ZKR_OK);
    CU_ASSERT_EQUAL_FATAL(zkr_mutex_acquire(m, 5000), ZKR_OK);
    /* A failed acquire cannot delete its node either: it says so (log),
     * returns its own failure, and the node stays with its session. */
    CU_ASSERT_EQUAL(zkr_mutex_acquire(m2, 0), ZKR_ETIMEDOUT);
    CU_ASSERT_EQUAL(zkt_count_children(zh, path), 2);
    /* The release is refused: it says so, and the object no longer holds. */
    CU_ASSERT_EQUAL(zkr_mutex_release(m), ZKR_ENOAUTH);
    CU_ASSERT_FALSE(zkr_mutex_is_held(m));
    CU_ASSERT_EQUAL(zkr_mutex_release(m), ZKR_ENOTOWNER);
    CU_ASSERT_EQUAL(zkt_count_children(zh, path), 2);
    /* The nodes go with their sessions. */
    zkr_mutex_free(m);
    zkr_mutex_free(m2);
    zkr_client_close(c);
    zkr_client_close(c2);
    CU_ASSERT_TRUE(zkt_wait_children(zh, path, 0, 10000));
    zkt_raw_close(zh);
}

/* ---- release on a stalled link: bounded ------------------------------------------------- */

static void test_release_during_stall(void)
{
    zkt_proxy_t *px = zkt_proxy_start(zkt_server_port());
    CU_ASSERT_PTR_NOT_NULL_FATAL(px);
    zkr_client_options_t o;
    zkr_client_options_init(&o);
    o.session_timeout_ms = 8000; /* the stall stays undetected for seconds */
    o.zk_log_level = 0;
    zkr_client_t *c = NULL;
    CU_ASSERT_EQUAL_FATAL(zkr_client_open(&c, zkt_proxy_hosts(px), &o), ZKR_OK);
    char path[128];
    zkt_path("release-stall", path, sizeof path);
    zhandle_t *zh = zkt_raw();
    zkr_mutex_t *m;
    CU_ASSERT_EQUAL_FATAL(zkr_mutex_new(&m, c, path), ZKR_OK);
    CU_ASSERT_EQUAL_FATAL(zkr_mutex_acquire(m, 5000), ZKR_OK);
    CU_ASSERT_EQUAL(zkt_proxy_stall(px, 1), 0);
    int64_t t0 = zkt_now_ms();
    int rc = zkr_mutex_release(m);
    long long took = zkt_now_ms() - t0;
    printf("\n    release on a stalled link returned %s after %lld ms (bound %d) ", zkr_err_name(rc), took,
           ZKR_RELEASE_WAIT_MS);
    CU_ASSERT_EQUAL(rc, ZKR_OK);
    CU_ASSERT_TRUE(took <= ZKR_RELEASE_WAIT_MS + 500);
    CU_ASSERT_FALSE(zkr_mutex_is_held(m));
    /* The delete is finished once the link is back. */
    zkt_proxy_cut(px);
    CU_ASSERT_EQUAL(zkt_proxy_stall(px, 0), 0); /* cut while stalled: only new connections move */
    CU_ASSERT_TRUE(zkt_wait_children(zh, path, 0, 20000));
    zkr_mutex_free(m);
    zkr_client_close(c);
    zkt_proxy_stop(px);
    zkt_raw_close(zh);
}

static void add_suites(void)
{
    CU_pSuite s = CU_add_suite("holds", NULL, NULL);
    CU_add_test(s, "outside deletion of a mutex holder's node: LOST at once", test_outside_mutex);
    CU_add_test(s, "outside deletion of a write holder's node (reader waiting)", test_outside_write);
    CU_add_test(s, "outside deletion of a read holder's node (writer waiting)", test_outside_read);
    CU_add_test(s, "outside deletion of a semaphore mutex holder's lease", test_outside_smutex);
    CU_add_test(s, "outside deletion of a lease of a 1-lease semaphore", test_outside_lease);
    CU_add_test(s, "outside deletion of a waiting node: ZKR_EDELETED at once", test_outside_delete_waiter);
    CU_add_test(s, "a waiter further back: watched after 2 s, then ZKR_EDELETED at once",
                test_outside_delete_waiter_behind);
    CU_add_test(s, "holds that outlive their object: its free turns their listener off", test_outliving_holds);
    CU_add_test(s, "a hold after zkr_client_close: LOST, not held, never granted again", test_hold_after_close);
    CU_add_test(s, "a directory that forbids delete: release returns the refusal", test_release_refused);
    CU_add_test(s, "release on a stalled link returns within ZKR_RELEASE_WAIT_MS", test_release_during_stall);
}

int main(void)
{
    return zkt_main("test_holds", add_suites);
}

/* Parity of the blocking and the asynchronous API (issue 20): every
 * behaviour that applies to both is written once here and run through
 * each, by a table of acquire functions: the blocking zkr_lock_acquire /
 * zkr_semaphore_acquire, and the asynchronous start (zkr_lock_acquire_async
 * / zkr_semaphore_acquire_async) followed by a poll-and-dispatch loop on
 * the same thread until its completion.  Each acquire runs on a worker
 * thread of its own (a blocking hold belongs to its thread: that thread
 * asks its state and token and releases it); CUnit asserts stay on the
 * main thread.
 *
 * Behaviours and where each API has a test ("parity" = this program):
 *
 * | behaviour                                              | blocking                         | asynchronous                  |
 * |--------------------------------------------------------|----------------------------------|-------------------------------|
 * | granted; timeout 0 and > 0 leave no node               | test_mutex/rwlock/semaphore      | test_async one_kind           |
 * | outside deletion of a waiting acquire's node:          | test_holds (mutex only);         | test_async one_kind (5 kinds);|
 * |   ZKR_EDELETED at once, every kind                     |   parity (5 kinds)               |   parity (5 kinds)            |
 * | session lost (forced expiry) while waiting:            | test_faults (mutex, by a stall); | test_async session_lost;      |
 * |   ZKR_ESESSIONLOST, nothing left                       |   parity (mutex, read, lease)    |   parity                      |
 * | close while waiting: ZKR_ECLOSED                       | test_client                      | test_async close_pending      |
 * | cancel while waiting / object freed while waiting      | n/a (no cancel; free needs no    | test_async one_kind,          |
 * |                                                        |   thread inside)                 |   close_pending               |
 * | holder's node deleted outside: LOST at once,           | test_holds (5 kinds);            | parity                        |
 * |   release ZKR_ELOST                                    |   parity (mutex, write, lease)   |   (mutex, write, lease)       |
 * | holder's session expired: LOST, release ZKR_ELOST      | test_faults forced_expiry;       | test_async release_async      |
 * |                                                        |   parity (mutex, write, lease)   |   (mutex); parity             |
 * | fencing tokens increase across holders                 | test_mutex, test_rwlock,         | parity (test_async checks     |
 * |                                                        |   test_semaphore; parity         |   only > 0)                   |
 * | semaphore: at most max leases, a return admits the next| test_semaphore max_holders;      | parity                        |
 * |                                                        |   parity                         |                               |
 * | herd: one watch per waiter                             | test_mutex herd, test_rwlock,    | test_async thousand (mutex);  |
 * |                                                        |   test_semaphore no_herd; parity | parity (mutex, read, lease)   |
 * | FIFO order of waiters                                  | test_mutex fifo                  | test_async thousand           |
 * | multi-lock all-or-nothing                              | test_multilock                   | n/a (no asynchronous multi)   |
 * | lost create reply: node adopted, no orphan             | parity (mutex, write, read)      | parity (mutex, write, read)   |
 * | lost create reply, its session expired meanwhile: no   | parity (mutex, write, read)      | parity (mutex, write, read)   |
 * |   dead session's node granted, nothing left            |                                  |                               |
 *
 * The lost replies are made with the proxy's one-way stall
 * (zkt_proxy_stall_replies): the create reaches the server, its reply is
 * held in the proxy and lost when the test cuts the connection. */
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/harness/zkproxy.h"
#include "tests/harness/zkr_test.h"

#define SESSION_MS 4000
#define WAIT_MS 20000
#define AT_ONCE_MS 5000 /* "at once": no session timeout or deadline involved */

/* ---- the lock kinds ---------------------------------------------------------------- */

enum { K_MUTEX, K_READ, K_WRITE, K_SMUTEX, K_LEASE, K_N };
static const char *const kind_names[K_N] = {"mutex", "read", "write", "smutex", "lease"};

typedef struct obj {
    int kind;
    zkr_client_t *c;
    zkr_mutex_t *m;
    zkr_rwlock_t *rw;
    zkr_semaphore_mutex_t *sm;
    zkr_semaphore_t *s;
} obj_t;

static void obj_new(obj_t *o, zkr_client_t *c, int kind, const char *path, int leases)
{
    memset(o, 0, sizeof *o);
    o->kind = kind;
    o->c = c;
    int rc = ZKR_OK;
    if (kind == K_MUTEX)
        rc = zkr_mutex_new(&o->m, c, path);
    else if (kind == K_READ || kind == K_WRITE)
        rc = zkr_rwlock_new(&o->rw, c, path);
    else if (kind == K_SMUTEX)
        rc = zkr_semaphore_mutex_new(&o->sm, c, path);
    else
        rc = zkr_semaphore_new(&o->s, c, path, leases);
    CU_ASSERT_EQUAL_FATAL(rc, ZKR_OK);
}

static void obj_free(obj_t *o)
{
    zkr_mutex_free(o->m);
    zkr_rwlock_free(o->rw);
    zkr_semaphore_mutex_free(o->sm);
    zkr_semaphore_free(o->s);
    memset(o, 0, sizeof *o);
}

static zkr_lock_ref_t obj_ref(const obj_t *o)
{
    switch (o->kind) {
    case K_MUTEX: return zkr_mutex_ref(o->m);
    case K_READ: return zkr_rwlock_read_ref(o->rw);
    case K_WRITE: return zkr_rwlock_write_ref(o->rw);
    default: return zkr_semaphore_mutex_ref(o->sm);
    }
}

/* The directory the kind's acquire node goes in (the lease's for the
 * semaphore kinds). */
static void node_dir(int kind, const char *path, char *out, size_t len)
{
    if (kind == K_SMUTEX || kind == K_LEASE)
        snprintf(out, len, "%s/leases", path);
    else
        snprintf(out, len, "%s", path);
}

/* ---- the two APIs ------------------------------------------------------------------ */

/* What an acquire gave: a blocking hold is the calling thread's (hold and
 * lease NULL but for a blocking lease); an asynchronous one is a handle. */
typedef struct held {
    zkr_hold_t *hold;
    zkr_lease_t *lease;
} held_t;

typedef struct api {
    const char *name;
    int (*acquire)(const obj_t *o, int64_t timeout_ms, held_t *h);
    int (*release)(const obj_t *o, held_t *h);
    int (*token)(const obj_t *o, const held_t *h, int64_t *tok);
    zkr_hold_state_t (*state)(const obj_t *o, const held_t *h);
} api_t;

static int blk_acquire(const obj_t *o, int64_t timeout_ms, held_t *h)
{
    if (o->kind == K_LEASE)
        return zkr_semaphore_acquire(o->s, timeout_ms, &h->lease);
    return zkr_lock_acquire(obj_ref(o), timeout_ms);
}

static int blk_release(const obj_t *o, held_t *h)
{
    if (o->kind == K_LEASE) {
        int rc = zkr_lease_release(h->lease);
        h->lease = NULL;
        return rc;
    }
    return zkr_lock_release(obj_ref(o));
}

static int blk_token(const obj_t *o, const held_t *h, int64_t *tok)
{
    return o->kind == K_LEASE ? zkr_lease_fencing_token(h->lease, tok) : zkr_lock_fencing_token(obj_ref(o), tok);
}

static zkr_hold_state_t blk_state(const obj_t *o, const held_t *h)
{
    return o->kind == K_LEASE ? zkr_lease_hold_state(h->lease) : zkr_lock_hold_state(obj_ref(o));
}

/* The asynchronous acquire's completion record (one per worker). */
typedef struct arec {
    atomic_int calls;
    int rc;
    zkr_hold_t *hold;
    zkr_lease_t *lease;
} arec_t;

static void on_hold(uint64_t acquire_id, int rc, zkr_hold_t *hold, void *ctx)
{
    (void)acquire_id;
    arec_t *r = ctx;
    r->rc = rc;
    r->hold = hold;
    atomic_fetch_add(&r->calls, 1);
}

static void on_lease(uint64_t acquire_id, int rc, zkr_lease_t *lease, void *ctx)
{
    (void)acquire_id;
    arec_t *r = ctx;
    r->rc = rc;
    r->lease = lease;
    atomic_fetch_add(&r->calls, 1);
}

/* Start, then poll the client's fd and dispatch on this thread until the
 * completion has run (each runs exactly once, whichever thread of the
 * program dispatches it). */
static int async_acquire(const obj_t *o, int64_t timeout_ms, held_t *h)
{
    arec_t r;
    memset(&r, 0, sizeof r);
    int rc = o->kind == K_LEASE ? zkr_semaphore_acquire_async(o->s, timeout_ms, on_lease, &r, NULL)
                                : zkr_lock_acquire_async(obj_ref(o), timeout_ms, on_hold, &r, NULL);
    if (rc != ZKR_OK)
        return rc;
    int fd = zkr_client_fd(o->c);
    while (atomic_load(&r.calls) == 0) {
        struct pollfd p = {fd, POLLIN, 0};
        if (poll(&p, 1, 50) > 0)
            zkr_client_dispatch(o->c);
    }
    h->hold = r.hold;
    h->lease = r.lease;
    return r.rc;
}

static int async_release(const obj_t *o, held_t *h)
{
    int rc = o->kind == K_LEASE ? zkr_lease_release(h->lease) : zkr_hold_release(h->hold);
    h->hold = NULL;
    h->lease = NULL;
    return rc;
}

static int async_token(const obj_t *o, const held_t *h, int64_t *tok)
{
    return o->kind == K_LEASE ? zkr_lease_fencing_token(h->lease, tok) : zkr_hold_fencing_token(h->hold, tok);
}

static zkr_hold_state_t async_state(const obj_t *o, const held_t *h)
{
    return o->kind == K_LEASE ? zkr_lease_hold_state(h->lease) : zkr_hold_state(h->hold);
}

static const api_t apis[] = {
    {"blocking", blk_acquire, blk_release, blk_token, blk_state},
    {"async", async_acquire, async_release, async_token, async_state},
};
#define N_APIS (sizeof apis / sizeof apis[0])

/* ---- a worker: one thread that acquires, asks and releases ------------------------- */

enum { W_ACQUIRE = 1, W_RELEASE, W_TOKEN, W_WAIT_LOST, W_QUIT };

typedef struct worker {
    const api_t *api;
    obj_t o;
    held_t h;
    pthread_t t;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int op, posted, finished; /* under mu */
    int64_t arg;
    int rc;                   /* the last op's result */
    int64_t tok;
    zkr_hold_state_t st;
} worker_t;

static void *worker_main(void *arg)
{
    worker_t *w = arg;
    for (;;) {
        pthread_mutex_lock(&w->mu);
        while (w->finished == w->posted)
            pthread_cond_wait(&w->cv, &w->mu);
        int op = w->op;
        int64_t a = w->arg;
        pthread_mutex_unlock(&w->mu);
        int rc = ZKR_OK;
        int64_t tok = 0;
        zkr_hold_state_t st = ZKR_HOLD_NONE;
        if (op == W_ACQUIRE) {
            rc = w->api->acquire(&w->o, a, &w->h);
        } else if (op == W_RELEASE) {
            rc = w->api->release(&w->o, &w->h);
        } else if (op == W_TOKEN) {
            rc = w->api->token(&w->o, &w->h, &tok);
        } else if (op == W_WAIT_LOST) {
            /* the hold's state, once LOST or after arg ms */
            int64_t end = zkt_now_ms() + a;
            while ((st = w->api->state(&w->o, &w->h)) != ZKR_HOLD_LOST && zkt_now_ms() < end)
                zkt_sleep_ms(10);
        }
        pthread_mutex_lock(&w->mu);
        w->rc = rc;
        w->tok = tok;
        w->st = st;
        w->finished = w->posted;
        pthread_cond_broadcast(&w->cv);
        pthread_mutex_unlock(&w->mu);
        if (op == W_QUIT)
            return NULL;
    }
}

static void worker_start(worker_t *w, const api_t *api, zkr_client_t *c, int kind, const char *path, int leases)
{
    memset(w, 0, sizeof *w);
    w->api = api;
    obj_new(&w->o, c, kind, path, leases);
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    CU_ASSERT_EQUAL_FATAL(pthread_create(&w->t, NULL, worker_main, w), 0);
}

static void worker_post(worker_t *w, int op, int64_t arg)
{
    pthread_mutex_lock(&w->mu);
    w->op = op;
    w->arg = arg;
    w->posted++;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

/* 1 once the op posted last has finished, 0 if not within ms. */
static int worker_wait(worker_t *w, int ms)
{
    int64_t end = zkt_now_ms() + ms;
    pthread_mutex_lock(&w->mu);
    while (w->finished != w->posted && zkt_now_ms() < end) {
        pthread_mutex_unlock(&w->mu);
        zkt_sleep_ms(5);
        pthread_mutex_lock(&w->mu);
    }
    int done = w->finished == w->posted;
    pthread_mutex_unlock(&w->mu);
    return done;
}

static int worker_done(worker_t *w)
{
    return worker_wait(w, 0);
}

/* Post op and wait for it (bounded); its rc (-999 if it did not finish). */
static int worker_do(worker_t *w, int op, int64_t arg)
{
    worker_post(w, op, arg);
    return worker_wait(w, WAIT_MS) ? w->rc : -999;
}

/* The worker is idle (the last op finished: join it) or stuck (the test
 * fails; the thread is left, its client is closed later by the test). */
static void worker_stop(worker_t *w)
{
    if (!worker_wait(w, WAIT_MS)) {
        CU_FAIL("worker still busy");
        return;
    }
    worker_do(w, W_QUIT, 0);
    pthread_join(w->t, NULL);
    obj_free(&w->o);
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->cv);
}

/* Another client's blocking hold that conflicts with kind (a writer for
 * read and write; the semaphore kinds: its only lease). */
typedef struct blocker {
    obj_t o;
    zkr_lease_t *lease;
} blocker_t;

static void blocker_take(blocker_t *b, zkr_client_t *c, int kind, const char *path)
{
    int bk = (kind == K_READ || kind == K_WRITE) ? K_WRITE : kind;
    obj_new(&b->o, c, bk, path, 1);
    b->lease = NULL;
    int rc = bk == K_LEASE ? zkr_semaphore_acquire(b->o.s, WAIT_MS, &b->lease) : zkr_lock_acquire(obj_ref(&b->o), WAIT_MS);
    CU_ASSERT_EQUAL_FATAL(rc, ZKR_OK);
}

static void blocker_drop(blocker_t *b)
{
    int rc = b->o.kind == K_LEASE ? zkr_lease_release(b->lease) : zkr_lock_release(obj_ref(&b->o));
    CU_ASSERT_EQUAL(rc, ZKR_OK);
    obj_free(&b->o);
}

typedef struct watches_want {
    const char *dir;
    int n;
} watches_want_t;

static int waiter_watches_are(void *arg)
{
    const watches_want_t *w = arg;
    return zkt_waiter_watches_under(w->dir) == w->n;
}

static int one_children_watch(void *arg)
{
    (void)arg;
    return zkt_children_watches() == 1;
}

/* The n waiters of kind under path have set their watches: a data watch
 * each on the node before them (readers: on the writer); the semaphore's
 * waiters queue on locks/ the same way, but its holder (the first waiter)
 * watches the leases with a children watch instead. */
static int waiters_settled(int kind, const char *path, int n)
{
    int sem = kind == K_SMUTEX || kind == K_LEASE;
    watches_want_t ww = {path, sem ? n - 1 : n};
    return zkt_wait_for(waiter_watches_are, &ww, WAIT_MS) &&
           (!sem || zkt_wait_for(one_children_watch, NULL, WAIT_MS));
}

static int owner_watches(void *path)
{
    return zkt_owner_watches(path) == 1;
}

/* A scenario, run once per API and (where it loops) per kind. */
typedef void (*scenario_fn)(const api_t *api, int kind);

static void each_api(scenario_fn fn, const int *kinds, size_t nkinds)
{
    for (size_t a = 0; a < N_APIS; a++)
        for (size_t k = 0; k < nkinds; k++) {
            printf("\n    %s %s ", apis[a].name, kind_names[kinds[k]]);
            unsigned before = CU_get_number_of_failures();
            fn(&apis[a], kinds[k]);
            if (CU_get_number_of_failures() != before) /* which run the failures below are from */
                printf("[%u failed] ", CU_get_number_of_failures() - before);
        }
}

/* ---- an acquire waiting behind another client's hold -------------------------------- */

typedef struct waiting {
    char path[128], dir[160];
    zkr_client_t *c, *other;
    zhandle_t *zh;
    blocker_t b;
    worker_t w; /* the waiter, on c */
} waiting_t;

/* The worker's acquire (no deadline) waits: its node is made and its
 * watch set, behind a blocking hold of another client. */
static void waiting_start(waiting_t *s, const api_t *api, int kind, const char *name)
{
    zkt_path(name, s->path, sizeof s->path);
    node_dir(kind, s->path, s->dir, sizeof s->dir);
    s->c = zkt_client(SESSION_MS);
    s->other = zkt_client(SESSION_MS);
    s->zh = zkt_raw();
    blocker_take(&s->b, s->other, kind, s->path);
    worker_start(&s->w, api, s->c, kind, s->path, 1);
    worker_post(&s->w, W_ACQUIRE, -1);
    CU_ASSERT_FATAL(zkt_wait_children(s->zh, s->dir, 2, WAIT_MS));
    CU_ASSERT(waiters_settled(kind, s->path, 1));
    CU_ASSERT_EQUAL(worker_done(&s->w), 0);
}

/* After blocker_drop. */
static void waiting_end(waiting_t *s)
{
    worker_stop(&s->w);
    zkt_raw_close(s->zh);
    zkr_client_close(s->other);
    zkr_client_close(s->c);
}

/* ---- outside deletion of a waiting acquire's node: ZKR_EDELETED at once ------------- */

static void deleted_while_waiting(const api_t *api, int kind)
{
    waiting_t s;
    waiting_start(&s, api, kind, "par-deleted");
    char victim[512];
    CU_ASSERT_FATAL(zkt_newest_child(s.zh, s.dir, victim, sizeof victim));
    CU_ASSERT_EQUAL(zoo_delete(s.zh, victim, -1), ZOK);
    /* told while the blocker still holds: no session timeout, no deadline */
    CU_ASSERT(worker_wait(&s.w, AT_ONCE_MS));
    CU_ASSERT_EQUAL(s.w.rc, ZKR_EDELETED);
    CU_ASSERT(s.w.h.hold == NULL && s.w.h.lease == NULL);
    CU_ASSERT(zkt_wait_children(s.zh, s.dir, 1, WAIT_MS)); /* the blocker's alone */
    blocker_drop(&s.b);
    waiting_end(&s);
}

static void test_deleted_while_waiting(void)
{
    static const int kinds[] = {K_MUTEX, K_READ, K_WRITE, K_SMUTEX, K_LEASE};
    each_api(deleted_while_waiting, kinds, 5);
}

/* ---- the session lost while waiting: ZKR_ESESSIONLOST, nothing left ----------------- */

static void session_lost_while_waiting(const api_t *api, int kind)
{
    waiting_t s;
    waiting_start(&s, api, kind, "par-lost");
    zkt_expire_client(s.c, SESSION_MS);
    CU_ASSERT(worker_wait(&s.w, WAIT_MS));
    CU_ASSERT_EQUAL(s.w.rc, ZKR_ESESSIONLOST);
    CU_ASSERT(s.w.h.hold == NULL && s.w.h.lease == NULL);
    CU_ASSERT(zkt_wait_children(s.zh, s.dir, 1, WAIT_MS));
    if (kind == K_SMUTEX || kind == K_LEASE) {
        char locks[160];
        snprintf(locks, sizeof locks, "%s/locks", s.path);
        CU_ASSERT(zkt_wait_children(s.zh, locks, 0, WAIT_MS));
    }
    /* the new session acquires once the blocker is gone */
    blocker_drop(&s.b);
    CU_ASSERT_EQUAL(worker_do(&s.w, W_ACQUIRE, WAIT_MS), ZKR_OK);
    CU_ASSERT_EQUAL(worker_do(&s.w, W_RELEASE, 0), ZKR_OK);
    CU_ASSERT(zkt_wait_children(s.zh, s.dir, 0, WAIT_MS));
    waiting_end(&s);
}

static void test_session_lost_while_waiting(void)
{
    static const int kinds[] = {K_MUTEX, K_READ, K_LEASE};
    each_api(session_lost_while_waiting, kinds, 3);
}

/* ---- a hold lost: by an outside deletion, by its session; release ZKR_ELOST --------- */

static void hold_lost(const api_t *api, int kind, int by_expiry)
{
    char path[128], dir[160], victim[512];
    zkt_path(by_expiry ? "par-held-expired" : "par-held-deleted", path, sizeof path);
    node_dir(kind, path, dir, sizeof dir);
    zkr_client_t *c = zkt_client(SESSION_MS);
    zhandle_t *zh = zkt_raw();
    worker_t w;
    worker_start(&w, api, c, kind, path, 1);
    CU_ASSERT_EQUAL_FATAL(worker_do(&w, W_ACQUIRE, WAIT_MS), ZKR_OK);
    CU_ASSERT(zkt_wait_children(zh, dir, 1, WAIT_MS));
    if (by_expiry) {
        zkt_expire_client(c, SESSION_MS);
        CU_ASSERT_EQUAL(worker_do(&w, W_WAIT_LOST, WAIT_MS), ZKR_OK);
    } else {
        /* the library watches a node of its own once it has lived
         * ZKR__SELF_WATCH_DELAY_MS (20 ms): that watch is how the deletion
         * is seen at once */
        CU_ASSERT_FATAL(zkt_newest_child(zh, dir, victim, sizeof victim));
        CU_ASSERT(zkt_wait_for(owner_watches, victim, AT_ONCE_MS));
        CU_ASSERT_EQUAL(zoo_delete(zh, victim, -1), ZOK);
        CU_ASSERT_EQUAL(worker_do(&w, W_WAIT_LOST, AT_ONCE_MS), ZKR_OK);
    }
    CU_ASSERT_EQUAL(w.st, ZKR_HOLD_LOST);
    CU_ASSERT_EQUAL(worker_do(&w, W_RELEASE, 0), ZKR_ELOST);
    CU_ASSERT_EQUAL(zkt_count_children(zh, dir), 0);
    /* and the lock can be had again */
    CU_ASSERT_EQUAL(worker_do(&w, W_ACQUIRE, WAIT_MS), ZKR_OK);
    CU_ASSERT_EQUAL(worker_do(&w, W_RELEASE, 0), ZKR_OK);
    worker_stop(&w);
    zkt_raw_close(zh);
    zkr_client_close(c);
}

static void hold_deleted(const api_t *api, int kind) { hold_lost(api, kind, 0); }
static void hold_expired(const api_t *api, int kind) { hold_lost(api, kind, 1); }

static void test_hold_deleted(void)
{
    static const int kinds[] = {K_MUTEX, K_WRITE, K_LEASE};
    each_api(hold_deleted, kinds, 3);
}

static void test_hold_expired(void)
{
    static const int kinds[] = {K_MUTEX, K_WRITE, K_LEASE};
    each_api(hold_expired, kinds, 3);
}

/* ---- fencing tokens increase across holders ----------------------------------------- */

static void tokens_increase(const api_t *api, int kind)
{
    char path[128];
    zkt_path("par-tokens", path, sizeof path);
    zkr_client_t *c = zkt_client(SESSION_MS), *other = zkt_client(SESSION_MS);
    worker_t w, o;
    worker_start(&w, api, c, kind, path, 1);
    worker_start(&o, &apis[0], other, kind, path, 1); /* a blocking holder between */
    int64_t last = 0;
    for (int round = 0; round < 3; round++) {
        CU_ASSERT_EQUAL_FATAL(worker_do(&w, W_ACQUIRE, WAIT_MS), ZKR_OK);
        CU_ASSERT_EQUAL(worker_do(&w, W_TOKEN, 0), ZKR_OK);
        CU_ASSERT(w.tok > last);
        last = w.tok;
        CU_ASSERT_EQUAL(worker_do(&w, W_RELEASE, 0), ZKR_OK);
        CU_ASSERT_EQUAL_FATAL(worker_do(&o, W_ACQUIRE, WAIT_MS), ZKR_OK);
        CU_ASSERT_EQUAL(worker_do(&o, W_TOKEN, 0), ZKR_OK);
        CU_ASSERT(o.tok > last);
        last = o.tok;
        CU_ASSERT_EQUAL(worker_do(&o, W_RELEASE, 0), ZKR_OK);
    }
    worker_stop(&w);
    worker_stop(&o);
    zkr_client_close(other);
    zkr_client_close(c);
}

static void test_tokens_increase(void)
{
    static const int kinds[] = {K_MUTEX, K_WRITE, K_SMUTEX, K_LEASE};
    each_api(tokens_increase, kinds, 4);
}

/* ---- a semaphore of 2: never more than 2 leases, a return admits the next ------------ */

static int count_done(worker_t *w, int n)
{
    int k = 0;
    for (int i = 0; i < n; i++)
        k += worker_done(&w[i]);
    return k;
}

static void lease_count(const api_t *api, int kind)
{
    char path[128], dir[160], locks[160];
    zkt_path("par-max", path, sizeof path);
    node_dir(kind, path, dir, sizeof dir);
    snprintf(locks, sizeof locks, "%s/locks", path);
    zkr_client_t *c[3];
    zhandle_t *zh = zkt_raw();
    worker_t w[3];
    for (int i = 0; i < 3; i++) {
        c[i] = zkt_client(SESSION_MS);
        worker_start(&w[i], api, c[i], kind, path, 2);
        worker_post(&w[i], W_ACQUIRE, WAIT_MS);
    }
    /* two get in; the third holds locks/ and watches the leases */
    int64_t end = zkt_now_ms() + WAIT_MS;
    while (count_done(w, 3) < 2 && zkt_now_ms() < end)
        zkt_sleep_ms(10);
    CU_ASSERT_EQUAL_FATAL(count_done(w, 3), 2);
    CU_ASSERT(zkt_wait_children(zh, locks, 1, WAIT_MS));
    int waiting = -1;
    for (int i = 0; i < 3; i++) {
        if (!worker_done(&w[i]))
            waiting = i;
        else
            CU_ASSERT_EQUAL(w[i].rc, ZKR_OK);
    }
    CU_ASSERT_FATAL(waiting >= 0);
    CU_ASSERT(zkt_count_children(zh, dir) <= 3); /* 2 held, maybe the waiter's */
    CU_ASSERT_EQUAL(worker_done(&w[waiting]), 0);
    /* one returns: the waiter gets in, and still 2 leases */
    int first = waiting == 0 ? 1 : 0;
    CU_ASSERT_EQUAL(worker_do(&w[first], W_RELEASE, 0), ZKR_OK);
    CU_ASSERT(worker_wait(&w[waiting], WAIT_MS));
    CU_ASSERT_EQUAL(w[waiting].rc, ZKR_OK);
    CU_ASSERT(zkt_wait_children(zh, dir, 2, WAIT_MS));
    for (int i = 0; i < 3; i++)
        if (i != first)
            CU_ASSERT_EQUAL(worker_do(&w[i], W_RELEASE, 0), ZKR_OK);
    CU_ASSERT(zkt_wait_children(zh, dir, 0, WAIT_MS));
    for (int i = 0; i < 3; i++) {
        worker_stop(&w[i]);
        zkr_client_close(c[i]);
    }
    zkt_raw_close(zh);
}

static void test_lease_count(void)
{
    static const int kinds[] = {K_LEASE};
    each_api(lease_count, kinds, 1);
}

/* ---- herd: one watch per waiter ---------------------------------------------------- */

static void one_watch_each(const api_t *api, int kind)
{
    char path[128], dir[160];
    zkt_path("par-herd", path, sizeof path);
    node_dir(kind, path, dir, sizeof dir);
    zkr_client_t *other = zkt_client(SESSION_MS);
    zhandle_t *zh = zkt_raw();
    blocker_t b;
    blocker_take(&b, other, kind, path);
    /* a session each: a session's watch on its own node is not counted */
    enum { N = 3 };
    zkr_client_t *c[N];
    worker_t w[N];
    for (int i = 0; i < N; i++) {
        c[i] = zkt_client(SESSION_MS);
        worker_start(&w[i], api, c[i], kind, path, 1);
        worker_post(&w[i], W_ACQUIRE, WAIT_MS);
    }
    /* readers all watch the writer; mutex waiters their predecessor; the
     * semaphore's waiters queue on locks/, whose holder alone watches
     * the leases (a children watch, not counted here) */
    int nodes = kind == K_LEASE ? 2 : 1 + N;
    CU_ASSERT(zkt_wait_children(zh, dir, nodes, WAIT_MS));
    CU_ASSERT(waiters_settled(kind, path, N));
    printf("(%d waiter watches) ", zkt_waiter_watches_under(path));
    blocker_drop(&b);
    /* every one gets in, one after the other (readers together) */
    for (int i = 0; i < N; i++) {
        CU_ASSERT(worker_wait(&w[i], WAIT_MS));
        CU_ASSERT_EQUAL(w[i].rc, ZKR_OK);
        if (w[i].rc != ZKR_OK)
            printf("(waiter %d: %s) ", i, zkr_strerror(w[i].rc));
        CU_ASSERT_EQUAL(worker_do(&w[i], W_RELEASE, 0), ZKR_OK);
    }
    CU_ASSERT(zkt_wait_children(zh, dir, 0, WAIT_MS));
    for (int i = 0; i < N; i++) {
        worker_stop(&w[i]);
        zkr_client_close(c[i]);
    }
    zkt_raw_close(zh);
    zkr_client_close(other);
}

static void test_one_watch_each(void)
{
    static const int kinds[] = {K_MUTEX, K_READ, K_LEASE};
    each_api(one_watch_each, kinds, 3);
}

/* ---- a create's reply lost: our node adopted, nothing orphaned ---------------------- */

/* The name of dir's only child as a full path; 0 unless it has exactly one. */
static int only_child(zhandle_t *zh, const char *dir, char *out, size_t len)
{
    struct String_vector sv = {0, NULL};
    if (zoo_get_children(zh, dir, 0, &sv) != ZOK)
        return 0;
    int ok = sv.count == 1 && (size_t)snprintf(out, len, "%s/%s", dir, sv.data[0]) < len;
    deallocate_String_vector(&sv);
    return ok;
}

/* The acquire's create reaches the server through a proxy that holds every
 * reply; the observer (a raw handle straight to the server) sees the node
 * it made; the connection is cut, so the reply is lost, and the client
 * reconnects.  With its session alive (expire = 0) the acquire must adopt
 * that very node: same name, owned by the same session, its czxid the
 * token, the only node in the directory, gone after the release.  With the
 * session that sent the create expired meanwhile (expire = 1, while the
 * replies are held, so the client learns it only on reconnecting), the
 * dead session's node is never granted: the acquire creates afresh on the
 * new session, or fails with ZKR_ESESSIONLOST, and nothing is left. */
static void lost_reply(const api_t *api, int kind, int expire)
{
    char path[128], dir[160], lost[512], got[512];
    zkt_path(expire ? "par-lost-reply-expired" : "par-lost-reply", path, sizeof path);
    node_dir(kind, path, dir, sizeof dir);
    zhandle_t *zh = zkt_raw();
    /* the directory made first: a create into a missing one is refused
     * ("no node", held like any reply) and makes nothing */
    int zrc = zoo_create(zh, "/zkr-test", NULL, -1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
    CU_ASSERT_FATAL(zrc == ZOK || zrc == ZNODEEXISTS);
    CU_ASSERT_EQUAL_FATAL(zoo_create(zh, dir, NULL, -1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0), ZOK);
    zkt_proxy_t *px = zkt_proxy_start(zkt_server_port());
    CU_ASSERT_PTR_NOT_NULL_FATAL(px);
    zkr_client_t *c = zkt_client_at(zkt_proxy_hosts(px), SESSION_MS);
    int64_t sid = 0, sid_after = 0;
    char passwd[16];
    CU_ASSERT_EQUAL_FATAL(zkr_client_session(c, &sid, passwd), ZKR_OK);
    worker_t w;
    worker_start(&w, api, c, kind, path, 1);

    CU_ASSERT_EQUAL_FATAL(zkt_proxy_stall_replies(px, 1), 0);
    worker_post(&w, W_ACQUIRE, WAIT_MS);
    /* the create is on the server, its reply in the proxy */
    CU_ASSERT_FATAL(zkt_wait_children(zh, dir, 1, WAIT_MS));
    CU_ASSERT_FATAL(only_child(zh, dir, lost, sizeof lost));
    struct Stat st;
    CU_ASSERT_EQUAL_FATAL(zoo_exists(zh, lost, 0, &st), ZOK);
    CU_ASSERT_EQUAL(st.ephemeralOwner, sid);
    int64_t lost_czxid = st.czxid;
    CU_ASSERT_EQUAL(worker_done(&w), 0);
    if (expire) {
        CU_ASSERT_EQUAL_FATAL(zkt_expire_session(sid, passwd), 0);
        CU_ASSERT(zkt_wait_children(zh, dir, 0, WAIT_MS)); /* it went with its session */
    }
    zkt_proxy_cut(px); /* the reply goes with the connection */
    CU_ASSERT_EQUAL(zkt_proxy_stall_replies(px, 0), 0);
    CU_ASSERT_FATAL(worker_wait(&w, WAIT_MS));
    int rc = w.rc;
    if (rc != ZKR_OK)
        printf("(acquire: %s) ", zkr_strerror(rc));
    int64_t owner = 0, czxid = 0;
    int have = rc == ZKR_OK && only_child(zh, dir, got, sizeof got);
    if (have && zoo_exists(zh, got, 0, &st) == ZOK) {
        owner = st.ephemeralOwner;
        czxid = st.czxid;
    }
    if (!expire) {
        CU_ASSERT_EQUAL(rc, ZKR_OK);
        CU_ASSERT(have); /* one node of ours: no second create */
        CU_ASSERT(have && strcmp(got, lost) == 0); /* the node of the lost reply */
        if (have && strcmp(got, lost) != 0)
            printf("(granted %s, lost reply's %s) ", got, lost);
        CU_ASSERT_EQUAL(zkr_client_session(c, &sid_after, NULL), ZKR_OK);
        CU_ASSERT_EQUAL(sid_after, sid); /* the same session throughout */
        CU_ASSERT_EQUAL(owner, sid);
        CU_ASSERT_EQUAL(czxid, lost_czxid);
    } else {
        CU_ASSERT(rc == ZKR_OK || rc == ZKR_ESESSIONLOST);
        CU_ASSERT_EQUAL(zoo_exists(zh, lost, 0, &st), ZNONODE);
        if (rc == ZKR_OK) {
            CU_ASSERT(have && strcmp(got, lost) != 0); /* made afresh */
            CU_ASSERT_EQUAL(zkr_client_session(c, &sid_after, NULL), ZKR_OK);
            CU_ASSERT(sid_after != sid);
            CU_ASSERT_EQUAL(owner, sid_after); /* the live session's */
        } else {
            CU_ASSERT(zkt_wait_children(zh, dir, 0, WAIT_MS));
        }
    }
    if (rc == ZKR_OK) {
        CU_ASSERT_EQUAL(worker_do(&w, W_TOKEN, 0), ZKR_OK);
        CU_ASSERT_EQUAL(w.tok, czxid);
        CU_ASSERT_EQUAL(worker_do(&w, W_RELEASE, 0), ZKR_OK);
    }
    CU_ASSERT(zkt_wait_children(zh, dir, 0, WAIT_MS)); /* nothing orphaned */
    worker_stop(&w);
    zkr_client_close(c);
    zkt_proxy_stop(px);
    CU_ASSERT_EQUAL(zoo_delete(zh, dir, -1), ZOK);
    zkt_raw_close(zh);
}

static void lost_reply_adopted(const api_t *api, int kind) { lost_reply(api, kind, 0); }
static void lost_reply_expired(const api_t *api, int kind) { lost_reply(api, kind, 1); }

static void test_lost_reply_adopted(void)
{
    static const int kinds[] = {K_MUTEX, K_WRITE, K_READ};
    each_api(lost_reply_adopted, kinds, 3);
}

static void test_lost_reply_expired(void)
{
    static const int kinds[] = {K_MUTEX, K_WRITE, K_READ};
    each_api(lost_reply_expired, kinds, 3);
}

static void add_suites(void)
{
    CU_pSuite s = CU_add_suite("parity", NULL, NULL);
    CU_add_test(s, "outside deletion of a waiting node: ZKR_EDELETED at once", test_deleted_while_waiting);
    CU_add_test(s, "session lost while waiting: ZKR_ESESSIONLOST, nothing left", test_session_lost_while_waiting);
    CU_add_test(s, "holder's node deleted outside: LOST at once, release ZKR_ELOST", test_hold_deleted);
    CU_add_test(s, "holder's session expired: LOST, release ZKR_ELOST", test_hold_expired);
    CU_add_test(s, "fencing tokens increase across holders", test_tokens_increase);
    CU_add_test(s, "semaphore of 2: two leases, a return admits the third", test_lease_count);
    CU_add_test(s, "herd: one watch per waiter", test_one_watch_each);
    CU_add_test(s, "lost create reply: our node is adopted, nothing orphaned", test_lost_reply_adopted);
    CU_add_test(s, "lost create reply, its session expired: no dead node adopted, nothing left",
                test_lost_reply_expired);
}

int main(void)
{
    return zkt_main("parity", add_suites);
}

/* Surviving faults: stalls and cuts (loopback proxy), server restarts,
 * forced expiry, ensemble leader loss; holder notification; and an
 * invariant checker over a multi-process workload with faults injected. */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/harness/zkfaults.h"
#include "tests/harness/zkproxy.h"
#include "tests/harness/zkr_test.h"

#define SESSION_MS 3000

/* ---- helpers ---------------------------------------------------------------- */

/* Records what a hold listener is told. */
typedef struct told {
    atomic_int n;
    atomic_int states[32];
    atomic_llong first_doubt_ms;
} told_t;

static void told_fn(zkr_lock_ref_t lock, zkr_hold_state_t st, const char *path, void *ctx)
{
    (void)lock;
    (void)path;
    told_t *t = ctx;
    int i = atomic_fetch_add(&t->n, 1);
    if (i < 32)
        atomic_store(&t->states[i], (int)st);
    long long zero = 0;
    if (st != ZKR_HOLD_SAFE)
        atomic_compare_exchange_strong(&t->first_doubt_ms, &zero, (long long)zkt_now_ms());
}

static void told_fn_lease(zkr_semaphore_t *sem, zkr_hold_state_t st, const char *path, void *ctx)
{
    (void)sem;
    told_fn((zkr_lock_ref_t){0}, st, path, ctx);
}

typedef struct told_want {
    told_t *t;
    zkr_hold_state_t st;
} told_want_t;

static int told_has(void *arg)
{
    told_want_t *w = arg;
    int n = atomic_load(&w->t->n);
    for (int i = 0; i < n && i < 32; i++)
        if (atomic_load(&w->t->states[i]) == (int)w->st)
            return 1;
    return 0;
}

static int wait_told(told_t *t, zkr_hold_state_t st, int ms)
{
    told_want_t w = {t, st};
    return zkt_wait_for(told_has, &w, ms);
}

/* A thread that acquires, then (holds being per thread) releases itself
 * when told to. */
typedef struct acq_arg {
    zkr_mutex_t *m;
    int64_t timeout;
    atomic_int done;
    int rc;
    int64_t token;
    atomic_int release_now;
    int release_rc;
    int token_rc; /* zkr_mutex_fencing_token's, read once done */
} acq_arg_t;

static void *acq_thread(void *p)
{
    acq_arg_t *a = p;
    a->rc = zkr_mutex_acquire(a->m, a->timeout);
    a->token_rc = -99;
    if (a->rc == ZKR_OK)
        a->token_rc = zkr_mutex_fencing_token(a->m, &a->token);
    atomic_store(&a->done, 1);
    if (a->rc != ZKR_OK)
        return NULL;
    for (int i = 0; i < 6000 && !atomic_load(&a->release_now); i++)
        zkt_sleep_ms(10);
    a->release_rc = zkr_mutex_release(a->m);
    return NULL;
}

static int acq_finish(acq_arg_t *a, pthread_t t)
{
    atomic_store(&a->release_now, 1);
    pthread_join(t, NULL);
    return a->release_rc;
}

static int acq_done(void *p)
{
    return atomic_load(&((acq_arg_t *)p)->done);
}

/* ---- single-fault tests --------------------------------------------------------- */

/* Stall shorter than the session timeout: IN_DOUBT, then SAFE again. */
static void test_stall_short_holder_safe_again(void)
{
    zkt_proxy_t *px = zkt_proxy_start(zkt_server_port());
    CU_ASSERT_PTR_NOT_NULL_FATAL(px);
    zkr_client_t *a = zkt_client_at(zkt_proxy_hosts(px), 6000);
    char p[128];
    zkt_path("stall-short", p, sizeof p);
    zkr_mutex_t *m;
    told_t told;
    memset(&told, 0, sizeof told);
    CU_ASSERT_EQUAL_FATAL(zkr_mutex_new(&m, a, p), ZKR_OK);
    zkr_mutex_set_hold_listener(m, told_fn, &told);
    CU_ASSERT_EQUAL_FATAL(zkr_mutex_acquire(m, 5000), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_mutex_hold_state(m), ZKR_HOLD_SAFE);
    int64_t t1;
    CU_ASSERT_EQUAL(zkr_mutex_fencing_token(m, &t1), ZKR_OK);

    CU_ASSERT_EQUAL(zkt_proxy_stall(px, 1), 0);
    CU_ASSERT_TRUE(wait_told(&told, ZKR_HOLD_IN_DOUBT, 8000));
    CU_ASSERT_EQUAL(zkr_mutex_hold_state(m), ZKR_HOLD_IN_DOUBT);
    zkt_proxy_cut(px); /* drop the stalled connection so the client reconnects at once */
    CU_ASSERT_EQUAL(zkt_proxy_stall(px, 0), 0); /* cut while stalled: only new connections move */
    CU_ASSERT_TRUE(wait_told(&told, ZKR_HOLD_SAFE, 10000));
    CU_ASSERT_EQUAL(zkr_mutex_hold_state(m), ZKR_HOLD_SAFE);
    CU_ASSERT_FALSE(told_has(&(told_want_t){&told, ZKR_HOLD_LOST}));
    int64_t t2;
    CU_ASSERT_EQUAL(zkr_mutex_fencing_token(m, &t2), ZKR_OK);
    CU_ASSERT_EQUAL(t1, t2);
    CU_ASSERT_EQUAL(zkr_mutex_release(m), ZKR_OK);
    zkr_mutex_free(m);
    zkr_client_close(a);
    zkt_proxy_stop(px);
}

/* Stall longer than the session timeout: the holder is told IN_DOUBT before
 * the other client enters, then LOST; release says ZKR_ELOST. */
static void test_stall_long_holder_lost(void)
{
    zkt_proxy_t *px = zkt_proxy_start(zkt_server_port());
    CU_ASSERT_PTR_NOT_NULL_FATAL(px);
    zkr_client_t *a = zkt_client_at(zkt_proxy_hosts(px), SESSION_MS);
    zkr_client_t *b = zkt_client_at(zkt_hosts(), SESSION_MS);
    char p[128];
    zkt_path("stall-long", p, sizeof p);
    zkr_mutex_t *ma, *mb;
    told_t told;
    memset(&told, 0, sizeof told);
    CU_ASSERT_EQUAL_FATAL(zkr_mutex_new(&ma, a, p), ZKR_OK);
    CU_ASSERT_EQUAL_FATAL(zkr_mutex_new(&mb, b, p), ZKR_OK);
    zkr_mutex_set_hold_listener(ma, told_fn, &told);
    CU_ASSERT_EQUAL_FATAL(zkr_mutex_acquire(ma, 5000), ZKR_OK);
    int64_t ta = 0, tb = 0;
    CU_ASSERT_EQUAL(zkr_mutex_fencing_token(ma, &ta), ZKR_OK);
    CU_ASSERT_TRUE(ta > 0);

    CU_ASSERT_EQUAL(zkt_proxy_stall(px, 1), 0);
    CU_ASSERT_EQUAL(zkr_mutex_acquire(mb, 20000), ZKR_OK);
    int64_t b_entered = zkt_now_ms();
    long long doubt = atomic_load(&told.first_doubt_ms);
    CU_ASSERT_TRUE(doubt > 0 && doubt <= b_entered);
    CU_ASSERT_EQUAL(zkr_mutex_fencing_token(mb, &tb), ZKR_OK);
    CU_ASSERT_TRUE(tb > ta);
    CU_ASSERT_TRUE(wait_told(&told, ZKR_HOLD_LOST, 15000));
    CU_ASSERT_EQUAL(zkr_mutex_hold_state(ma), ZKR_HOLD_LOST);
    CU_ASSERT_EQUAL(zkr_mutex_release(ma), ZKR_ELOST);
    CU_ASSERT_FALSE(zkr_mutex_is_held(ma));
    zkt_proxy_cut(px);
    CU_ASSERT_EQUAL(zkt_proxy_stall(px, 0), 0); /* cut while stalled: only new connections move */
    CU_ASSERT_EQUAL(zkr_client_wait_connected(a, 15000), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_mutex_release(mb), ZKR_OK);
    /* The local state is consistent: a later acquire works. */
    CU_ASSERT_EQUAL(zkr_mutex_acquire(ma, 10000), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_mutex_release(ma), ZKR_OK);
    zkr_mutex_free(ma);
    zkr_mutex_free(mb);
    zkr_client_close(a);
    zkr_client_close(b);
    zkt_proxy_stop(px);
}

/* Server restart: holder IN_DOUBT then SAFE; a waiter keeps its place. */
static void test_server_restart_waiter_keeps_place(void)
{
    zkr_client_t *a = zkt_client_at(zkt_hosts(), 20000);
    zkr_client_t *b = zkt_client_at(zkt_hosts(), 20000);
    zhandle_t *raw = zkt_raw();
    char p[128];
    zkt_path("restart", p, sizeof p);
    zkr_mutex_t *ma, *mb;
    told_t told;
    memset(&told, 0, sizeof told);
    CU_ASSERT_EQUAL_FATAL(zkr_mutex_new(&ma, a, p), ZKR_OK);
    CU_ASSERT_EQUAL_FATAL(zkr_mutex_new(&mb, b, p), ZKR_OK);
    zkr_mutex_set_hold_listener(ma, told_fn, &told);
    CU_ASSERT_EQUAL_FATAL(zkr_mutex_acquire(ma, 5000), ZKR_OK);
    acq_arg_t w = {mb, 60000, 0, -99, 0, 0, -99, -99};
    pthread_t t;
    CU_ASSERT_EQUAL_FATAL(pthread_create(&t, NULL, acq_thread, &w), 0);
    CU_ASSERT_TRUE(zkt_wait_children(raw, p, 2, 10000));
    char **before = NULL;
    size_t nb = 0;
    CU_ASSERT_EQUAL(zkr_mutex_participants(ma, &before, &nb), ZKR_OK);
    zkt_raw_close(raw);

    CU_ASSERT_EQUAL_FATAL(zkt_server("restart"), 0);
    CU_ASSERT_TRUE(wait_told(&told, ZKR_HOLD_IN_DOUBT, 10000));
    CU_ASSERT_TRUE(wait_told(&told, ZKR_HOLD_SAFE, 20000));
    CU_ASSERT_EQUAL(zkr_mutex_hold_state(ma), ZKR_HOLD_SAFE);
    CU_ASSERT_FALSE(atomic_load(&w.done));
    char **after = NULL;
    size_t na = 0;
    CU_ASSERT_EQUAL(zkr_mutex_participants(ma, &after, &na), ZKR_OK);
    CU_ASSERT_EQUAL(na, nb);
    for (size_t i = 0; i < na && i < nb; i++)
        CU_ASSERT_STRING_EQUAL(after[i], before[i]);
    CU_ASSERT_EQUAL(zkr_mutex_release(ma), ZKR_OK);
    CU_ASSERT_TRUE(zkt_wait_for(acq_done, &w, 15000));
    CU_ASSERT_EQUAL(w.rc, ZKR_OK);
    CU_ASSERT_EQUAL(acq_finish(&w, t), ZKR_OK);
    zkr_strings_free(before, nb);
    zkr_strings_free(after, na);
    zkr_mutex_free(ma);
    zkr_mutex_free(mb);
    zkr_client_close(a);
    zkr_client_close(b);
}

/* A waiter cut off briefly keeps its place in the queue. */
static void test_cut_waiter_keeps_place(void)
{
    zkt_proxy_t *px = zkt_proxy_start(zkt_server_port());
    CU_ASSERT_PTR_NOT_NULL_FATAL(px);
    zkr_client_t *a = zkt_client_at(zkt_hosts(), SESSION_MS);
    zkr_client_t *b = zkt_client_at(zkt_proxy_hosts(px), 10000);
    zhandle_t *raw = zkt_raw();
    char p[128];
    zkt_path("cut-waiter", p, sizeof p);
    zkr_mutex_t *ma, *mb;
    CU_ASSERT_EQUAL_FATAL(zkr_mutex_new(&ma, a, p), ZKR_OK);
    CU_ASSERT_EQUAL_FATAL(zkr_mutex_new(&mb, b, p), ZKR_OK);
    CU_ASSERT_EQUAL_FATAL(zkr_mutex_acquire(ma, 5000), ZKR_OK);
    acq_arg_t w = {mb, 60000, 0, -99, 0, 0, -99, -99};
    pthread_t t;
    CU_ASSERT_EQUAL_FATAL(pthread_create(&t, NULL, acq_thread, &w), 0);
    CU_ASSERT_TRUE(zkt_wait_children(raw, p, 2, 10000));
    int64_t b_session = 0;
    zkr_client_session(b, &b_session, NULL);
    for (int i = 0; i < 3; i++) {
        zkt_proxy_cut(px);
        zkt_sleep_ms(300);
    }
    CU_ASSERT_EQUAL(zkr_client_wait_connected(b, 10000), ZKR_OK);
    int64_t s2 = 0;
    zkr_client_session(b, &s2, NULL);
    CU_ASSERT_EQUAL(s2, b_session);
    CU_ASSERT_EQUAL(zkt_count_children(raw, p), 2);
    CU_ASSERT_FALSE(atomic_load(&w.done));
    CU_ASSERT_EQUAL(zkr_mutex_release(ma), ZKR_OK);
    CU_ASSERT_TRUE(zkt_wait_for(acq_done, &w, 15000));
    CU_ASSERT_EQUAL(w.rc, ZKR_OK);
    CU_ASSERT_EQUAL(acq_finish(&w, t), ZKR_OK);
    CU_ASSERT_TRUE(zkt_wait_children(raw, p, 0, 10000));
    zkt_raw_close(raw);
    zkr_mutex_free(ma);
    zkr_mutex_free(mb);
    zkr_client_close(a);
    zkr_client_close(b);
    zkt_proxy_stop(px);
}

/* A waiter whose session is lost while waiting gets an error, not a hang,
 * and leaves nothing behind. */
static void test_waiter_session_lost(void)
{
    zkt_proxy_t *px = zkt_proxy_start(zkt_server_port());
    CU_ASSERT_PTR_NOT_NULL_FATAL(px);
    zkr_client_t *a = zkt_client_at(zkt_hosts(), SESSION_MS);
    zkr_client_t *b = zkt_client_at(zkt_proxy_hosts(px), SESSION_MS);
    zhandle_t *raw = zkt_raw();
    char p[128];
    zkt_path("waiter-lost", p, sizeof p);
    zkr_mutex_t *ma, *mb;
    CU_ASSERT_EQUAL_FATAL(zkr_mutex_new(&ma, a, p), ZKR_OK);
    CU_ASSERT_EQUAL_FATAL(zkr_mutex_new(&mb, b, p), ZKR_OK);
    CU_ASSERT_EQUAL_FATAL(zkr_mutex_acquire(ma, 5000), ZKR_OK);
    acq_arg_t w = {mb, ZKR_WAIT_FOREVER, 0, -99, 0, 0, -99, -99};
    pthread_t t;
    CU_ASSERT_EQUAL_FATAL(pthread_create(&t, NULL, acq_thread, &w), 0);
    CU_ASSERT_TRUE(zkt_wait_children(raw, p, 2, 10000));
    CU_ASSERT_EQUAL(zkt_proxy_stall(px, 1), 0);
    /* Two outcomes, both right.  Its node known: ZKR_ESESSIONLOST once the
     * client says LOST (its place went with the session).  Its create's
     * reply caught in the stall: it cannot know whether it had a place, so
     * it waits on (-1) and queues again in the next session, as an acquire
     * started while LOST does (test_promises): it gets the lock once the
     * link is back and the holder releases. */
    int waited_on = !zkt_wait_for(acq_done, &w, 20000);
    if (waited_on)
        printf("\n    the waiter's create reply was caught in the stall: it waits into the next session ");
    else
        CU_ASSERT_EQUAL(w.rc, ZKR_ESESSIONLOST);
    CU_ASSERT_TRUE(zkt_wait_children(raw, p, 1, 10000)); /* only the holder */
    zkt_proxy_cut(px);
    CU_ASSERT_EQUAL(zkt_proxy_stall(px, 0), 0); /* cut while stalled: only new connections move */
    CU_ASSERT_EQUAL(zkr_client_wait_connected(b, 15000), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_mutex_release(ma), ZKR_OK);
    if (waited_on) {
        CU_ASSERT_TRUE(zkt_wait_for(acq_done, &w, 15000));
        CU_ASSERT_EQUAL(w.rc, ZKR_OK);
        CU_ASSERT_EQUAL(acq_finish(&w, t), ZKR_OK);
    } else {
        acq_finish(&w, t);
        CU_ASSERT_EQUAL(zkr_mutex_acquire(mb, 10000), ZKR_OK);
        CU_ASSERT_EQUAL(zkr_mutex_release(mb), ZKR_OK);
    }
    CU_ASSERT_TRUE(zkt_wait_children(raw, p, 0, 10000));
    zkt_raw_close(raw);
    zkr_mutex_free(ma);
    zkr_mutex_free(mb);
    zkr_client_close(a);
    zkr_client_close(b);
    zkt_proxy_stop(px);
}

/* Release during SUSPENDED: local state cleared at once, the node deleted
 * once the connection is back. */
static void test_release_while_suspended(void)
{
    zkt_proxy_t *px = zkt_proxy_start(zkt_server_port());
    CU_ASSERT_PTR_NOT_NULL_FATAL(px);
    zkr_client_t *a = zkt_client_at(zkt_proxy_hosts(px), 10000);
    zhandle_t *raw = zkt_raw();
    char p[128];
    zkt_path("release-suspended", p, sizeof p);
    zkr_mutex_t *m;
    CU_ASSERT_EQUAL_FATAL(zkr_mutex_new(&m, a, p), ZKR_OK);
    CU_ASSERT_EQUAL_FATAL(zkr_mutex_acquire(m, 5000), ZKR_OK);
    CU_ASSERT_EQUAL(zkt_proxy_stall(px, 1), 0);
    zkt_proxy_cut(px);
    for (int i = 0; i < 400 && zkr_client_is_connected(a); i++)
        zkt_sleep_ms(25);
    CU_ASSERT_FALSE(zkr_client_is_connected(a));
    CU_ASSERT_EQUAL(zkr_mutex_release(m), ZKR_OK);
    CU_ASSERT_FALSE(zkr_mutex_is_held(m));
    CU_ASSERT_EQUAL(zkt_count_children(raw, p), 1); /* still there */
    CU_ASSERT_EQUAL(zkt_proxy_stall(px, 0), 0);
    CU_ASSERT_TRUE(zkt_wait_children(raw, p, 0, 15000));
    CU_ASSERT_EQUAL(zkr_mutex_acquire(m, 10000), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_mutex_release(m), ZKR_OK);
    zkt_raw_close(raw);
    zkr_mutex_free(m);
    zkr_client_close(a);
    zkt_proxy_stop(px);
}

/* Forced expiry of a holder: LOST, another client gets in, release says
 * ZKR_ELOST; semaphore lease and rwlock likewise. */
static void test_forced_expiry_all_kinds(void)
{
    zkr_client_t *a = zkt_client_at(zkt_hosts(), SESSION_MS);
    zkr_client_t *b = zkt_client_at(zkt_hosts(), SESSION_MS);
    char pm[128], pr[128], ps[128];
    zkt_path("exp-mutex", pm, sizeof pm);
    zkt_path("exp-rw", pr, sizeof pr);
    zkt_path("exp-sem", ps, sizeof ps);
    zkr_mutex_t *m;
    zkr_rwlock_t *rw;
    zkr_semaphore_t *s;
    told_t tm, tr, ts;
    memset(&tm, 0, sizeof tm);
    memset(&tr, 0, sizeof tr);
    memset(&ts, 0, sizeof ts);
    CU_ASSERT_EQUAL_FATAL(zkr_mutex_new(&m, a, pm), ZKR_OK);
    CU_ASSERT_EQUAL_FATAL(zkr_rwlock_new(&rw, a, pr), ZKR_OK);
    CU_ASSERT_EQUAL_FATAL(zkr_semaphore_new(&s, a, ps, 1), ZKR_OK);
    zkr_mutex_set_hold_listener(m, told_fn, &tm);
    zkr_rwlock_set_hold_listener(rw, told_fn, &tr);
    zkr_semaphore_set_hold_listener(s, told_fn_lease, &ts);
    zkr_lease_t *lease = NULL;
    CU_ASSERT_EQUAL_FATAL(zkr_mutex_acquire(m, 5000), ZKR_OK);
    CU_ASSERT_EQUAL_FATAL(zkr_rwlock_write_acquire(rw, 5000), ZKR_OK);
    CU_ASSERT_EQUAL_FATAL(zkr_semaphore_acquire(s, 5000, &lease), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_lease_hold_state(lease), ZKR_HOLD_SAFE);
    CU_ASSERT_EQUAL(zkr_rwlock_write_hold_state(rw), ZKR_HOLD_SAFE);

    int64_t id;
    char pw[16];
    CU_ASSERT_EQUAL_FATAL(zkr_client_session(a, &id, pw), ZKR_OK);
    CU_ASSERT_EQUAL_FATAL(zkt_expire_session(id, pw), 0);
    CU_ASSERT_TRUE(wait_told(&tm, ZKR_HOLD_LOST, 15000));
    CU_ASSERT_TRUE(wait_told(&tr, ZKR_HOLD_LOST, 15000));
    CU_ASSERT_TRUE(wait_told(&ts, ZKR_HOLD_LOST, 15000));
    CU_ASSERT_EQUAL(zkr_mutex_hold_state(m), ZKR_HOLD_LOST);
    CU_ASSERT_EQUAL(zkr_lease_hold_state(lease), ZKR_HOLD_LOST);

    zkr_mutex_t *mb;
    zkr_rwlock_t *rwb;
    zkr_semaphore_t *sb;
    zkr_lease_t *lb = NULL;
    CU_ASSERT_EQUAL_FATAL(zkr_mutex_new(&mb, b, pm), ZKR_OK);
    CU_ASSERT_EQUAL_FATAL(zkr_rwlock_new(&rwb, b, pr), ZKR_OK);
    CU_ASSERT_EQUAL_FATAL(zkr_semaphore_new(&sb, b, ps, 1), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_mutex_acquire(mb, 10000), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_rwlock_write_acquire(rwb, 10000), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_semaphore_acquire(sb, 10000, &lb), ZKR_OK);

    CU_ASSERT_EQUAL(zkr_mutex_release(m), ZKR_ELOST);
    CU_ASSERT_EQUAL(zkr_rwlock_write_release(rw), ZKR_ELOST);
    CU_ASSERT_EQUAL(zkr_lease_release(lease), ZKR_ELOST);
    CU_ASSERT_EQUAL(zkr_mutex_release(mb), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_rwlock_write_release(rwb), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_lease_release(lb), ZKR_OK);
    /* The client rebuilt its session: acquiring works again. */
    CU_ASSERT_EQUAL(zkr_client_wait_connected(a, 15000), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_mutex_acquire(m, 10000), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_mutex_hold_state(m), ZKR_HOLD_SAFE);
    CU_ASSERT_EQUAL(zkr_mutex_release(m), ZKR_OK);
    zkr_mutex_free(m);
    zkr_mutex_free(mb);
    zkr_rwlock_free(rw);
    zkr_rwlock_free(rwb);
    zkr_semaphore_free(s);
    zkr_semaphore_free(sb);
    zkr_client_close(a);
    zkr_client_close(b);
}

/* ---- ensemble: leader loss ------------------------------------------------------ */

static void test_ensemble_leader_kill(void)
{
    zkr_client_t *a = zkt_client_at(zkt_ensemble_hosts(), 10000);
    zkr_client_t *b = zkt_client_at(zkt_ensemble_hosts(), 10000);
    zkr_mutex_t *ma, *mb;
    told_t told;
    memset(&told, 0, sizeof told);
    CU_ASSERT_EQUAL_FATAL(zkr_mutex_new(&ma, a, "/ens/lock"), ZKR_OK);
    CU_ASSERT_EQUAL_FATAL(zkr_mutex_new(&mb, b, "/ens/lock"), ZKR_OK);
    zkr_mutex_set_hold_listener(ma, told_fn, &told);
    CU_ASSERT_EQUAL_FATAL(zkr_mutex_acquire(ma, 10000), ZKR_OK);
    int64_t ta = 0, tb = 0;
    CU_ASSERT_EQUAL(zkr_mutex_fencing_token(ma, &ta), ZKR_OK);
    CU_ASSERT_TRUE(ta > 0);
    acq_arg_t w = {mb, 60000, 0, -99, 0, 0, -99, -99};
    pthread_t t;
    CU_ASSERT_EQUAL_FATAL(pthread_create(&t, NULL, acq_thread, &w), 0);
    /* b is queued behind a before the leader goes */
    zhandle_t *raw = zkt_raw_at(zkt_ensemble_hosts());
    CU_ASSERT_TRUE(zkt_wait_children(raw, "/ens/lock", 2, 15000));
    zkt_raw_close(raw);

    int k = zkt_ensemble_kill_leader();
    CU_ASSERT_TRUE(k > 0);
    /* Every client of the ensemble loses its connection while it elects. */
    CU_ASSERT_TRUE(wait_told(&told, ZKR_HOLD_IN_DOUBT, 15000));
    CU_ASSERT_TRUE(wait_told(&told, ZKR_HOLD_SAFE, 30000));
    CU_ASSERT_FALSE(atomic_load(&w.done));
    CU_ASSERT_EQUAL(zkr_mutex_release(ma), ZKR_OK);
    CU_ASSERT_TRUE(zkt_wait_for(acq_done, &w, 20000));
    CU_ASSERT_EQUAL(w.rc, ZKR_OK);
    CU_ASSERT_EQUAL(w.token_rc, ZKR_OK);
    tb = w.token;
    CU_ASSERT_TRUE(tb > ta);
    if (k > 0)
        CU_ASSERT_EQUAL(zkt_ensemble_restart(k), 0);
    CU_ASSERT_EQUAL(acq_finish(&w, t), ZKR_OK);
    zkr_mutex_free(ma);
    zkr_mutex_free(mb);
    zkr_client_close(a);
    zkr_client_close(b);
}

/* Another connection takes our session over through a different server.
 * ZooKeeper then refuses our connection's requests ("session moved") and
 * drops it; the C client may report that as an out-of-order reply.  The
 * client must not turn this into a hard error: the next acquire works, and
 * the hold we had is SAFE again if our session came back to us, or LOST
 * (told, release says so) if it did not. */
static void test_ensemble_session_taken_over(void)
{
    char one[64], two[64];
    const char *hosts = zkt_ensemble_hosts();
    const char *comma = strchr(hosts, ',');
    CU_ASSERT_PTR_NOT_NULL_FATAL(comma);
    snprintf(one, sizeof one, "%.*s", (int)(comma - hosts), hosts);
    snprintf(two, sizeof two, "%s", comma + 1);
    char *c2 = strchr(two, ',');
    if (c2)
        *c2 = '\0';
    zkr_client_t *a = zkt_client_at(one, 6000);
    zkr_mutex_t *m1, *m2;
    told_t told;
    memset(&told, 0, sizeof told);
    CU_ASSERT_EQUAL_FATAL(zkr_mutex_new(&m1, a, "/ens/moved-1"), ZKR_OK);
    CU_ASSERT_EQUAL_FATAL(zkr_mutex_new(&m2, a, "/ens/moved-2"), ZKR_OK);
    zkr_mutex_set_hold_listener(m1, told_fn, &told);
    CU_ASSERT_EQUAL_FATAL(zkr_mutex_acquire(m1, 10000), ZKR_OK);
    int64_t sid = 0;
    clientid_t cid;
    memset(&cid, 0, sizeof cid);
    CU_ASSERT_EQUAL_FATAL(zkr_client_session(a, &sid, cid.passwd), ZKR_OK);
    cid.client_id = sid;

    zhandle_t *thief = zookeeper_init(two, zkt_noop_watcher, 6000, &cid, NULL, 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(thief);
    for (int i = 0; i < 400 && zoo_state(thief) != ZOO_CONNECTED_STATE; i++)
        zkt_sleep_ms(25);
    CU_ASSERT_EQUAL(zoo_state(thief), ZOO_CONNECTED_STATE);

    int64_t t0 = zkt_now_ms();
    int rc = zkr_mutex_acquire(m2, 20000);
    if (rc != ZKR_OK)
        fprintf(stderr, "acquire after the take-over: %s after %lld ms\n", zkr_strerror(rc),
                (long long)(zkt_now_ms() - t0));
    CU_ASSERT_EQUAL(rc, ZKR_OK);
    /* Whatever happened, the client is usable and says where m1 stands. */
    CU_ASSERT_TRUE(zkr_client_wait_connected(a, 20000) == ZKR_OK);
    int64_t now_sid = 0;
    char pw[16];
    CU_ASSERT_EQUAL(zkr_client_session(a, &now_sid, pw), ZKR_OK);
    if (now_sid == sid) {
        printf("\n    our session came back to us: hold %s\n", zkr_hold_state_name(zkr_mutex_hold_state(m1)));
        for (int i = 0; i < 400 && zkr_mutex_hold_state(m1) != ZKR_HOLD_SAFE; i++)
            zkt_sleep_ms(25);
        CU_ASSERT_EQUAL(zkr_mutex_hold_state(m1), ZKR_HOLD_SAFE);
        CU_ASSERT_EQUAL(zkr_mutex_release(m1), ZKR_OK);
    } else {
        printf("\n    a new session: hold told LOST\n");
        CU_ASSERT_TRUE(wait_told(&told, ZKR_HOLD_LOST, 10000));
        CU_ASSERT_FALSE(zkr_mutex_is_held(m1));
        CU_ASSERT_EQUAL(zkr_mutex_release(m1), ZKR_ELOST);
    }
    CU_ASSERT_EQUAL(zkr_mutex_release(m2), ZKR_OK);
    zookeeper_close(thief);
    zkr_mutex_free(m1);
    zkr_mutex_free(m2);
    zkr_client_close(a);
    zhandle_t *raw = zkt_raw_at(zkt_ensemble_hosts());
    CU_ASSERT_TRUE(zkt_wait_children(raw, "/ens/moved-1", 0, 15000));
    CU_ASSERT_TRUE(zkt_wait_children(raw, "/ens/moved-2", 0, 15000));
    zkt_raw_close(raw);
}

/* ---- the invariant checker -------------------------------------------------------- */

#define WORKERS 4
#define MAX_RECORDS 4000
#define SEM_LEASES 2 /* capacity of the counted semaphore workload */
#define ENS_SESSION_MS 6000

enum { KIND_MUTEX, KIND_SMUTEX, KIND_READWRITE, KIND_SEMAPHORE };

typedef struct record {
    int64_t token;
    int64_t call_ms;  /* when the acquire was called */
    int64_t enter_ms; /* when it returned the hold */
    int64_t exit_ms;
    _Atomic long long doubt_ms; /* when told IN_DOUBT/LOST during the hold */
    int worker;
    int reader;
    int release_lost; /* its release said ZKR_ELOST */
} record_t;

typedef struct shared {
    atomic_int stop;
    atomic_int nrec;
    atomic_int errors;
    int64_t session[WORKERS];
    char passwd[WORKERS][16];
    atomic_int ready[WORKERS];
    atomic_int holding[WORKERS];
    /* Each worker's acquires that returned an error (timed out, session
     * lost, connection lost, other), its last one, and its client's state
     * then: printed when a worker does not get in. */
    atomic_int failed[WORKERS][4];
    atomic_int last_rc[WORKERS];
    atomic_int last_state[WORKERS];
    _Atomic long long last_ms[WORKERS];
    record_t rec[MAX_RECORDS];
} shared_t;

static shared_t *sh;
static _Atomic(record_t *) current_hold;

static void worker_told(zkr_lock_ref_t lock, zkr_hold_state_t st, const char *path, void *ctx)
{
    (void)lock;
    (void)path;
    (void)ctx;
    record_t *r = atomic_load(&current_hold);
    if (r && st != ZKR_HOLD_SAFE) {
        long long zero = 0;
        atomic_compare_exchange_strong(&r->doubt_ms, &zero, (long long)zkt_now_ms());
    }
}

static void worker_told_lease(zkr_semaphore_t *sem, zkr_hold_state_t st, const char *path, void *ctx)
{
    (void)sem;
    worker_told((zkr_lock_ref_t){0}, st, path, ctx);
}

/* What a worker holds: a lock through the common interface, or a lease of
 * the counted semaphore. */
typedef struct wlock {
    zkr_mutex_t *m;
    zkr_rwlock_t *rw;
    zkr_semaphore_mutex_t *sm;
    zkr_semaphore_t *sem;
    zkr_lease_t *lease;
    zkr_lock_ref_t ref;
} wlock_t;

static int w_acquire(wlock_t *l, int64_t ms)
{
    return l->sem ? zkr_semaphore_acquire(l->sem, ms, &l->lease) : zkr_lock_acquire(l->ref, ms);
}

static int w_release(wlock_t *l)
{
    if (!l->sem)
        return zkr_lock_release(l->ref);
    int rc = zkr_lease_release(l->lease);
    l->lease = NULL;
    return rc;
}

static zkr_hold_state_t w_state(wlock_t *l)
{
    return l->sem ? zkr_lease_hold_state(l->lease) : zkr_lock_hold_state(l->ref);
}

static int w_token(wlock_t *l, int64_t *token)
{
    if (l->sem)
        return zkr_lease_fencing_token(l->lease, token);
    return zkr_lock_fencing_token(l->ref, token);
}

static void worker(int id, int kind, const char *hosts, const char *path, int session_ms)
{
    zkr_client_options_t o;
    zkr_client_options_init(&o);
    o.session_timeout_ms = session_ms;
    o.connect_timeout_ms = 20000;
    o.zk_log_level = 0;
    zkr_client_t *c = NULL;
    if (zkr_client_open(&c, hosts, &o) != ZKR_OK)
        _exit(2);
    wlock_t l;
    memset(&l, 0, sizeof l);
    int reader = 0, rc = ZKR_OK;
    if (kind == KIND_MUTEX) {
        rc = zkr_mutex_new(&l.m, c, path);
        if (rc == ZKR_OK)
            rc = zkr_mutex_set_hold_listener(l.m, worker_told, NULL);
        l.ref = zkr_mutex_ref(l.m);
    } else if (kind == KIND_SMUTEX) {
        rc = zkr_semaphore_mutex_new(&l.sm, c, path);
        if (rc == ZKR_OK)
            rc = zkr_semaphore_mutex_set_hold_listener(l.sm, worker_told, NULL);
        l.ref = zkr_semaphore_mutex_ref(l.sm);
    } else if (kind == KIND_SEMAPHORE) {
        rc = zkr_semaphore_new(&l.sem, c, path, SEM_LEASES);
        if (rc == ZKR_OK)
            rc = zkr_semaphore_set_hold_listener(l.sem, worker_told_lease, NULL);
    } else {
        rc = zkr_rwlock_new(&l.rw, c, path);
        if (rc == ZKR_OK)
            rc = zkr_rwlock_set_hold_listener(l.rw, worker_told, NULL);
        reader = id % 2 == 1;
        l.ref = reader ? zkr_rwlock_read_ref(l.rw) : zkr_rwlock_write_ref(l.rw);
    }
    if (rc != ZKR_OK)
        _exit(3);
    while (!atomic_load(&sh->stop)) {
        zkr_client_session(c, &sh->session[id], sh->passwd[id]);
        atomic_store(&sh->ready[id], 1);
        int64_t call_ms = zkt_now_ms();
        rc = w_acquire(&l, 2000);
        atomic_store(&sh->last_rc[id], rc);
        atomic_store(&sh->last_state[id], (int)zkr_client_state(c));
        atomic_store(&sh->last_ms[id], (long long)zkt_now_ms());
        if (rc != ZKR_OK) {
            atomic_fetch_add(&sh->failed[id][rc == ZKR_ETIMEDOUT     ? 0
                                             : rc == ZKR_ESESSIONLOST ? 1
                                             : rc == ZKR_ECONNLOSS    ? 2
                                                                      : 3],
                             1);
            if (rc != ZKR_ETIMEDOUT && rc != ZKR_ESESSIONLOST && rc != ZKR_ECONNLOSS) {
                fprintf(stderr, "worker %d: acquire: %s (ZooKeeper %d) at %lld\n", id, zkr_strerror(rc),
                        zkr_last_zk_error(NULL), (long long)zkt_now_ms());
                atomic_fetch_add(&sh->errors, 1);
            }
            zkt_sleep_ms(20);
            continue;
        }
        int slot = atomic_fetch_add(&sh->nrec, 1);
        record_t *r = slot < MAX_RECORDS ? &sh->rec[slot] : NULL;
        if (r) {
            r->worker = id;
            r->reader = reader;
            r->call_ms = call_ms;
            if (w_token(&l, &r->token) != ZKR_OK) {
                fprintf(stderr, "worker %d: no fencing token\n", id);
                atomic_fetch_add(&sh->errors, 1);
            }
            atomic_store(&r->doubt_ms, 0);
            atomic_store(&current_hold, r);
            r->enter_ms = zkt_now_ms();
            if (w_state(&l) != ZKR_HOLD_SAFE) /* already in doubt */
                atomic_store(&r->doubt_ms, (long long)r->enter_ms);
        }
        atomic_store(&sh->holding[id], 1);
        zkt_sleep_ms(15 + id * 3);
        /* A holder that does not stop when told IN_DOUBT (like a paused
         * process): it keeps "acting" until SAFE or LOST, so faults create
         * real overlaps for the checker to judge. */
        for (int i = 0; i < session_ms * 4 / 20 && w_state(&l) == ZKR_HOLD_IN_DOUBT; i++)
            zkt_sleep_ms(20);
        atomic_store(&sh->holding[id], 0);
        if (r) {
            r->exit_ms = zkt_now_ms();
            atomic_store(&current_hold, NULL);
        }
        rc = w_release(&l);
        if (r)
            r->release_lost = rc == ZKR_ELOST;
        if (rc != ZKR_OK && rc != ZKR_ELOST) {
            fprintf(stderr, "worker %d: release: %s (ZooKeeper %d) at %lld\n", id, zkr_strerror(rc),
                        zkr_last_zk_error(NULL), (long long)zkt_now_ms());
            atomic_fetch_add(&sh->errors, 1);
        }
        zkt_sleep_ms(id); /* let others in */
    }
    zkr_mutex_free(l.m);
    zkr_rwlock_free(l.rw);
    zkr_semaphore_mutex_free(l.sm);
    zkr_semaphore_free(l.sem);
    zkr_client_close(c);
    _exit(0);
}

static int cmp_enter(const void *a, const void *b)
{
    const record_t *x = a, *y = b;
    return (x->enter_ms > y->enter_ms) - (x->enter_ms < y->enter_ms);
}

/* Check the records.  Capacity: a hold may begin while fewer than
 * `capacity` conflicting holds are inside, not counting holds whose holder
 * had been told IN_DOUBT/LOST before it began (readers do not conflict with
 * readers).  Tokens: exclusive holds get increasing tokens in order of
 * entry; with several leases, a hold asked for after another had ended has
 * a larger token, and no two holds share one.  Every worker got in again
 * after the last fault. */
/* A forced expiry closes a session from outside, at once: the server drops
 * its nodes and its connection together, and nothing can tell the holder
 * before another process sees the node go and enters (as with a node
 * deleted by another session).  What the library owes there: the holder
 * whose session was closed is told IN_DOUBT/LOST as soon as its connection
 * drops, within `bound` ms of the fault's end (told while it held, or its
 * release said ZKR_ELOST).  The fault (forced expiry of its session) that
 * excuses an overlap between holds a and b, the later entered at `at`, or
 * -1: one of the two holds is the victim's, the entry is inside the fault
 * (or within the bound after it), and the victim's hold learnt it within
 * the bound. */
static int outside_expiry(const record_t *a, const record_t *b, int64_t at, int64_t bound)
{
    for (int f = 0; (f = zkt_fault_outside(a->worker, b->worker, at, bound, f)) >= 0; f++) {
        const zkt_fault_t *m = zkt_fault_get(f);
        const record_t *v = a->worker == m->worker ? a : b;
        long long d = v->doubt_ms;
        if ((d > 0 && d <= m->end + bound) || (v->release_lost && v->exit_ms <= m->end + bound))
            return f;
    }
    return -1;
}

static void check_records(int n, int kind, int64_t last_fault_ms, int session_ms)
{
    int capacity = kind == KIND_SEMAPHORE ? SEM_LEASES : 1;
    record_t *r = malloc((size_t)n * sizeof *r);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    for (int i = 0; i < n; i++) {
        r[i] = sh->rec[i];
        r[i].doubt_ms = atomic_load(&sh->rec[i].doubt_ms);
    }
    qsort(r, (size_t)n, sizeof *r, cmp_enter);
    int bad_overlap = 0, bad_token = 0, excused = 0, expired = 0;
    int64_t last_token = -1;
    for (int j = 0; j < n; j++) {
        int inside = 0;
        for (int i = 0; i < j; i++) {
            if (r[i].exit_ms == 0 || r[i].exit_ms <= r[j].enter_ms)
                continue; /* not inside when j entered (or never recorded leaving) */
            if (r[i].reader && r[j].reader)
                continue; /* readers share */
            long long d = r[i].doubt_ms;
            if (d > 0 && d <= r[j].enter_ms)
                excused++;
            else if (outside_expiry(&r[i], &r[j], r[j].enter_ms, session_ms) >= 0)
                expired++;
            else
                inside++;
        }
        if (inside >= capacity) {
            bad_overlap++;
            fprintf(stderr, "worker %d entered at %lld (token %lld, told %s%+lld) with %d holds inside not told "
                    "of a fault\n", r[j].worker, (long long)r[j].enter_ms, (long long)r[j].token,
                    r[j].doubt_ms > 0 ? "" : "never ",
                    r[j].doubt_ms > 0 ? (long long)(r[j].doubt_ms - r[j].enter_ms) : 0LL, inside);
            /* Who was inside, and the faults, in ms from that entry. */
            for (int i = 0; i < j; i++) {
                if (r[i].exit_ms == 0 || r[i].exit_ms <= r[j].enter_ms || (r[i].reader && r[j].reader))
                    continue;
                long long d = r[i].doubt_ms;
                fprintf(stderr, "  inside: worker %d (%s, token %lld) asked %+lld, entered %+lld, left %+lld, "
                        "told %s%+lld\n",
                        r[i].worker, r[i].reader ? "reader" : "writer", (long long)r[i].token,
                        (long long)(r[i].call_ms - r[j].enter_ms), (long long)(r[i].enter_ms - r[j].enter_ms),
                        (long long)(r[i].exit_ms - r[j].enter_ms), d > 0 ? "" : "never ",
                        d > 0 ? (long long)(d - r[j].enter_ms) : 0LL);
            }
            zkt_faults_print(stderr, r[j].enter_ms);
        }
        if (capacity == 1 && !r[j].reader) {
            if (r[j].token <= last_token) {
                bad_token++;
                fprintf(stderr, "token %lld after %lld\n", (long long)r[j].token, (long long)last_token);
            }
            last_token = r[j].token;
        }
        if (capacity > 1) {
            for (int i = 0; i < n; i++) {
                if (i == j)
                    continue;
                int later = r[i].exit_ms > 0 && r[j].call_ms > r[i].exit_ms;
                if (r[i].token == r[j].token || (later && r[j].token <= r[i].token)) {
                    bad_token++;
                    fprintf(stderr, "lease token %lld (asked at %lld) vs %lld (ended %lld)\n",
                            (long long)r[j].token, (long long)r[j].call_ms, (long long)r[i].token,
                            (long long)r[i].exit_ms);
                }
            }
        }
    }
    printf("    overlaps after the earlier holder was told IN_DOUBT/LOST: %d; with the holder whose session "
           "was closed from outside (told within %d ms of it): %d; unexcused overlaps: %d; token inversions: %d\n",
           excused, session_ms, expired, bad_overlap, bad_token);
    CU_ASSERT_EQUAL(bad_overlap, 0);
    CU_ASSERT_EQUAL(bad_token, 0);
    int after[WORKERS] = {0};
    for (int i = 0; i < n; i++)
        if (r[i].enter_ms > last_fault_ms)
            after[r[i].worker]++;
    for (int w = 0; w < WORKERS; w++) {
        if (after[w] == 0)
            fprintf(stderr, "worker %d did not get in after the last fault\n", w);
        CU_ASSERT_TRUE(after[w] > 0);
    }
    free(r);
}

/* Each worker's acquires that failed and its last one (ms before now). */
static void print_workers(void)
{
    int64_t now = zkt_now_ms();
    for (int w = 0; w < WORKERS; w++) {
        int rc = atomic_load(&sh->last_rc[w]);
        fprintf(stderr, "  worker %d session 0x%llx holding %d; acquires failed: %d timed out, %d session lost, "
                "%d connection lost, %d other; the last one returned %s %lld ms ago, client %s\n", w,
                (long long)sh->session[w], atomic_load(&sh->holding[w]), atomic_load(&sh->failed[w][0]),
                atomic_load(&sh->failed[w][1]), atomic_load(&sh->failed[w][2]), atomic_load(&sh->failed[w][3]),
                rc == ZKR_OK ? "OK" : zkr_strerror(rc), (long long)(now - atomic_load(&sh->last_ms[w])),
                zkr_state_name((zkr_state_t)atomic_load(&sh->last_state[w])));
    }
}

/* Wait (bounded: 15 s) until worker w holds the lock, so that the next
 * fault hits a holder; fails the test if it never does. */
static void wait_holding(int w)
{
    int64_t end = zkt_now_ms() + 15000;
    for (int i = 0; i < 100000 && !atomic_load(&sh->holding[w]) && zkt_now_ms() < end; i++)
        zkt_sleep_ms(1);
    if (!atomic_load(&sh->holding[w])) {
        fprintf(stderr, "worker %d did not hold within 15 s\n", w);
        print_workers();
    }
    CU_ASSERT_TRUE(atomic_load(&sh->holding[w]));
}

/* Every worker has entered (recorded a hold) after `since` (ms). */
static int64_t entered_since;
static int all_entered_since(void *arg)
{
    (void)arg;
    int n = atomic_load(&sh->nrec);
    if (n > MAX_RECORDS)
        n = MAX_RECORDS;
    int in[WORKERS] = {0};
    for (int i = 0; i < n; i++)
        if (sh->rec[i].enter_ms > entered_since && sh->rec[i].worker >= 0 && sh->rec[i].worker < WORKERS)
            in[sh->rec[i].worker] = 1;
    for (int w = 0; w < WORKERS; w++)
        if (!in[w])
            return 0;
    return 1;
}

static int all_ready(void *arg)
{
    (void)arg;
    for (int w = 0; w < WORKERS; w++)
        if (!atomic_load(&sh->ready[w]))
            return 0;
    return 1;
}

/* Faults on the standalone server, each applied to a worker while it holds
 * (the others wait or are about to); returns when the last one happened. */
static int64_t standalone_faults(zkt_proxy_t **px)
{
    zkt_faults_reset();
    wait_holding(0);
    int f = zkt_fault_begin("short stall", 0);
    CU_ASSERT_EQUAL(zkt_proxy_stall(px[0], 1), 0); /* stall shorter than the session timeout */
    zkt_sleep_ms(SESSION_MS / 2);
    CU_ASSERT_EQUAL(zkt_proxy_stall(px[0], 0), 0);
    zkt_fault_end(f);
    zkt_sleep_ms(1000);
    wait_holding(1);
    f = zkt_fault_begin("long stall", 1);
    CU_ASSERT_EQUAL(zkt_proxy_stall(px[1], 1), 0); /* stall longer than the session timeout */
    zkt_sleep_ms(SESSION_MS * 2);
    zkt_proxy_cut(px[1]);
    CU_ASSERT_EQUAL(zkt_proxy_stall(px[1], 0), 0); /* cut while stalled: only new connections move */
    zkt_fault_end(f);
    zkt_sleep_ms(1000);
    wait_holding(2);
    f = zkt_fault_begin("cut", 2);
    zkt_proxy_cut(px[2]); /* cut + reconnect */
    zkt_fault_end(f);
    zkt_sleep_ms(1000);
    f = zkt_fault_begin("server restart", -1);
    CU_ASSERT_EQUAL(zkt_server("restart"), 0); /* server restart */
    zkt_fault_end(f);
    zkt_sleep_ms(1500);
    wait_holding(3);
    f = zkt_fault_begin("forced expiry", 3);
    CU_ASSERT_EQUAL(zkt_expire_session(sh->session[3], sh->passwd[3]), 0); /* forced expiry */
    zkt_fault_end(f);
    return zkt_now_ms();
}

/* Faults on the ensemble: the leader is killed twice (each time while a
 * worker holds) and brought back, then a session is expired by force. */
static int64_t ensemble_faults(void)
{
    zkt_faults_reset();
    for (int round = 0; round < 2; round++) {
        wait_holding(round);
        int f = zkt_fault_begin("leader killed", round);
        CU_ASSERT_EQUAL(zkt_ensemble_bounce_leader(3000), 0);
        zkt_fault_end(f);
        zkt_sleep_ms(2000);
    }
    wait_holding(2);
    int f = zkt_fault_begin("forced expiry", 2);
    CU_ASSERT_EQUAL(zkt_expire_session_at(zkt_ensemble_hosts(), sh->session[2], sh->passwd[2]), 0);
    zkt_fault_end(f);
    return zkt_now_ms();
}

static void run_invariant_workload(int kind, const char *name, int on_ensemble)
{
    sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    CU_ASSERT_NOT_EQUAL_FATAL(sh, MAP_FAILED);
    memset(sh, 0, sizeof *sh);
    char p[128];
    zkt_path(name, p, sizeof p);
    zkt_proxy_t *px[WORKERS] = {NULL};
    for (int w = 0; w < WORKERS && !on_ensemble; w++) {
        px[w] = zkt_proxy_start(zkt_server_port());
        CU_ASSERT_PTR_NOT_NULL_FATAL(px[w]);
    }
    int session_ms = on_ensemble ? ENS_SESSION_MS : SESSION_MS;
    pid_t pids[WORKERS];
    for (int w = 0; w < WORKERS; w++) {
        pids[w] = fork();
        if (pids[w] == 0)
            worker(w, kind, on_ensemble ? zkt_ensemble_hosts() : zkt_proxy_hosts(px[w]), p, session_ms);
    }
    /* Every worker is connected and running, and has held the lock once,
     * before the first fault. */
    int ready = zkt_wait_for(all_ready, NULL, 20000);
    CU_ASSERT_TRUE(ready);
    entered_since = 0;
    int warm = ready && zkt_wait_for(all_entered_since, NULL, 20000);
    CU_ASSERT_TRUE(warm);

    int64_t last_fault = zkt_now_ms();
    if (warm)
        last_fault = on_ensemble ? ensemble_faults() : standalone_faults(px);
    /* Everyone must get in again after the last fault (bounded: a session
     * timeout for the expired one to be seen, a new session, its turn). */
    entered_since = last_fault;
    CU_ASSERT_TRUE(zkt_wait_for(all_entered_since, NULL, on_ensemble ? 40000 : 30000));

    /* What the queue looks like now (printed only if a worker is stuck). */
    int stuck = 0;
    for (int w = 0; w < WORKERS; w++) {
        int in = 0;
        for (int i = 0; i < atomic_load(&sh->nrec) && i < MAX_RECORDS; i++)
            in |= sh->rec[i].worker == w && sh->rec[i].enter_ms > last_fault;
        stuck |= !in;
    }
    if (stuck) {
        zhandle_t *raw = zkt_raw_at(on_ensemble ? zkt_ensemble_hosts() : zkt_hosts());
        const char *dirs[3] = {p, NULL, NULL};
        char d1[200], d2[200];
        if (kind == KIND_SMUTEX || kind == KIND_SEMAPHORE) {
            snprintf(d1, sizeof d1, "%s/locks", p);
            snprintf(d2, sizeof d2, "%s/leases", p);
            dirs[0] = d1;
            dirs[1] = d2;
        }
        for (int d = 0; d < 3 && dirs[d]; d++)
            zkt_print_nodes(stderr, raw, dirs[d], "stuck", last_fault);
        print_workers();
        char *wchp = on_ensemble ? NULL : zkt_4lw("wchp"); /* the standalone server's */
        if (!on_ensemble)
            fprintf(stderr, "wchp:\n%s\n", wchp ? wchp : "(none)");
        free(wchp);
        zkt_raw_close(raw);
    }

    atomic_store(&sh->stop, 1);
    int exited_ok = 1;
    for (int w = 0; w < WORKERS; w++)
        if (zkt_wait_child(pids[w], 30000) != 0)
            exited_ok = 0;
    CU_ASSERT_TRUE(exited_ok);
    int n = atomic_load(&sh->nrec);
    if (n > MAX_RECORDS)
        n = MAX_RECORDS;
    printf("\n    %s: %d holds recorded, %d unexpected errors\n", name, n, atomic_load(&sh->errors));
    CU_ASSERT_TRUE(n > 20);
    if (atomic_load(&sh->errors) > 0)
        zkt_faults_print(stderr, 0);
    CU_ASSERT_EQUAL(atomic_load(&sh->errors), 0);
    check_records(n, kind, last_fault, session_ms);

    /* Nothing is left once every client has closed. */
    zhandle_t *raw = zkt_raw_at(on_ensemble ? zkt_ensemble_hosts() : zkt_hosts());
    if (kind == KIND_SMUTEX || kind == KIND_SEMAPHORE) {
        char sub[200];
        snprintf(sub, sizeof sub, "%s/leases", p);
        CU_ASSERT_TRUE(zkt_wait_children(raw, sub, 0, 10000));
        snprintf(sub, sizeof sub, "%s/locks", p);
        CU_ASSERT_TRUE(zkt_wait_children(raw, sub, 0, 10000));
    } else {
        CU_ASSERT_TRUE(zkt_wait_children(raw, p, 0, 10000));
    }
    zkt_raw_close(raw);
    for (int w = 0; w < WORKERS; w++)
        zkt_proxy_stop(px[w]);
    munmap(sh, sizeof *sh);
    sh = NULL;
}

static void test_invariants_mutex(void)
{
    run_invariant_workload(KIND_MUTEX, "inv-mutex", 0);
}

static void test_invariants_rwlock(void)
{
    run_invariant_workload(KIND_READWRITE, "inv-rwlock", 0);
}

static void test_invariants_semaphore_mutex(void)
{
    run_invariant_workload(KIND_SMUTEX, "inv-smutex", 0);
}

static void test_invariants_semaphore(void)
{
    run_invariant_workload(KIND_SEMAPHORE, "inv-semaphore", 0);
}

static void test_ensemble_invariants_mutex(void)
{
    run_invariant_workload(KIND_MUTEX, "ens-mutex", 1);
}

static void test_ensemble_invariants_rwlock(void)
{
    run_invariant_workload(KIND_READWRITE, "ens-rwlock", 1);
}

static void test_ensemble_invariants_semaphore(void)
{
    run_invariant_workload(KIND_SEMAPHORE, "ens-semaphore", 1);
}

static void add_suites(void)
{
    CU_pSuite s = CU_add_suite("faults", NULL, NULL);
    CU_add_test(s, "stall shorter than the session timeout: holder IN_DOUBT then SAFE",
                test_stall_short_holder_safe_again);
    CU_add_test(s, "stall longer than the session timeout: holder told before the next enters, then LOST",
                test_stall_long_holder_lost);
    CU_add_test(s, "server restart: holder SAFE again, waiter keeps its place", test_server_restart_waiter_keeps_place);
    CU_add_test(s, "cut + reconnect: waiter keeps its place", test_cut_waiter_keeps_place);
    CU_add_test(s, "waiter whose session is lost gets an error and leaves nothing", test_waiter_session_lost);
    CU_add_test(s, "release while SUSPENDED: node deleted once back", test_release_while_suspended);
    CU_add_test(s, "forced expiry: mutex, rwlock and lease holders told LOST", test_forced_expiry_all_kinds);
    CU_pSuite i = CU_add_suite("invariants under faults", NULL, NULL);
    CU_add_test(i, "mutex: 4 processes, stall/cut/restart/expiry", test_invariants_mutex);
    CU_add_test(i, "rwlock: 4 processes (readers and writers), same faults", test_invariants_rwlock);
    CU_add_test(i, "semaphore mutex: 4 processes, same faults", test_invariants_semaphore_mutex);
    CU_add_test(i, "semaphore of 2 leases: 4 processes, same faults", test_invariants_semaphore);
    CU_pSuite e = CU_add_suite("3-node ensemble", zkt_ensemble_up, zkt_ensemble_down);
    CU_add_test(e, "leader killed: holder SAFE again, waiter gets in", test_ensemble_leader_kill);
    CU_add_test(e, "session taken over through another server: acquire works, hold SAFE again or LOST",
                test_ensemble_session_taken_over);
    CU_add_test(e, "mutex: 4 processes, leader killed twice, forced expiry", test_ensemble_invariants_mutex);
    CU_add_test(e, "rwlock: 4 processes, leader killed twice, forced expiry", test_ensemble_invariants_rwlock);
    CU_add_test(e, "semaphore of 2 leases: 4 processes, leader killed twice, forced expiry",
                test_ensemble_invariants_semaphore);
}

int main(void)
{
    return zkt_main("faults", add_suites);
}

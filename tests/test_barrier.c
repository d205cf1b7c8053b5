/* Barriers (zkr/barrier.h) on a real server: a barrier set, waited on and
 * removed, waits that time out; a double barrier's members on several
 * clients in rounds, none passing early (counters taken before each call
 * are checked at its return); a stale "ready" node; a member count of 1;
 * bad input; a callback thread refused; a stalled link keeps the
 * timeouts; a member whose session expires inside or while entering; a
 * stall during enter. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/barrier_calls.h"
#include "tests/harness/zkproxy.h"
#include "tests/harness/zkr_test.h"

#define SESSION_MS 6000
#define WAIT_MS 20000

static int exists(zhandle_t *zh, const char *path, struct Stat *st)
{
    struct Stat s;
    return zoo_exists(zh, path, 0, st ? st : &s) == ZOK;
}

/* ---- barrier ------------------------------------------------------------------------------ */

static void test_barrier(void)
{
    char base[128], path[192];
    zkt_path("barrier", base, sizeof base);
    snprintf(path, sizeof path, "%s/a/gate", base);
    zkr_client_t *c = zkt_client(SESSION_MS), *c2 = zkt_client(SESSION_MS);
    zhandle_t *zh = zkt_raw();
    zkr_barrier_t *b = NULL, *b2 = NULL;
    CU_ASSERT_EQUAL_FATAL(zkr_barrier_new(&b, c, path), ZKR_OK);
    CU_ASSERT_EQUAL_FATAL(zkr_barrier_new(&b2, c2, path), ZKR_OK);
    /* not set: the wait returns at once; removing is fine */
    CU_ASSERT_EQUAL(zkr_barrier_wait(b2, 0), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_barrier_remove(b, 5000), ZKR_OK);
    /* set (parents made), twice is fine: persistent, empty */
    CU_ASSERT_EQUAL(zkr_barrier_set(b, 5000), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_barrier_set(b, 5000), ZKR_OK);
    struct Stat st;
    CU_ASSERT_TRUE_FATAL(exists(zh, path, &st));
    CU_ASSERT_EQUAL(st.ephemeralOwner, 0);
    CU_ASSERT_EQUAL(st.dataLength, 0);
    /* a wait times out while it is set */
    int64_t t0 = zkt_now_ms();
    CU_ASSERT_EQUAL(zkr_barrier_wait(b2, 300), ZKR_ETIMEDOUT);
    CU_ASSERT(zkt_now_ms() - t0 >= 290);
    CU_ASSERT_EQUAL(zkr_barrier_wait(b2, 0), ZKR_ETIMEDOUT);
    /* waiters (forever, and bounded) return when it is removed, not before */
    zkr_barrier_t *b3 = NULL;
    CU_ASSERT_EQUAL_FATAL(zkr_barrier_new(&b3, c2, path), ZKR_OK);
    bcall_t w[2];
    bc_start(&w[0], BC_WAIT, NULL, b2, -1);
    bc_start(&w[1], BC_WAIT, NULL, b3, WAIT_MS);
    zkt_sleep_ms(400);
    /* a change of its data wakes them, but they go on waiting */
    CU_ASSERT_EQUAL(zoo_set(zh, path, "x", 1, -1), ZOK);
    zkt_sleep_ms(200);
    int64_t removed = zkt_now_ms();
    CU_ASSERT_EQUAL(zkr_barrier_remove(b, 5000), ZKR_OK);
    for (int i = 0; i < 2; i++) {
        CU_ASSERT_EQUAL(bc_join(&w[i]), ZKR_OK);
        CU_ASSERT(w[i].returned >= removed);
    }
    CU_ASSERT_FALSE(exists(zh, path, NULL));
    CU_ASSERT_EQUAL(zkr_barrier_remove(b, 5000), ZKR_OK);
    /* no watch of ours is left on the path */
    CU_ASSERT_EQUAL(zkt_watch_count_on_exact(path), 0);
    zkr_barrier_free(b);
    zkr_barrier_free(b2);
    zkr_barrier_free(b3);
    zkr_client_close(c);
    zkr_client_close(c2);
    zkt_raw_close(zh);
}

/* ---- double barrier: members in rounds ---------------------------------------------------- */

#define MEMBERS 6
#define ROUNDS 8
#define CLIENTS 3

typedef struct rounds {
    atomic_int called_enter[ROUNDS], called_leave[ROUNDS];
    atomic_int early_enter, early_leave, failed;
    atomic_int passed[ROUNDS], left[ROUNDS];
    atomic_int overlaps; /* enters of a round while some of the last were still leaving */
} rounds_t;

typedef struct member {
    rounds_t *r;
    zkr_client_t *c;
    const char *path;
    unsigned seed;
} member_t;

static void *member_main(void *arg)
{
    member_t *m = arg;
    zkr_double_barrier_t *d = NULL;
    if (zkr_double_barrier_new(&d, m->c, m->path, MEMBERS) != ZKR_OK) {
        atomic_fetch_add(&m->r->failed, 1);
        return NULL;
    }
    for (int i = 0; i < ROUNDS; i++) {
        zkt_jitter(&m->seed, 30000);
        if (i > 0 && atomic_load(&m->r->left[i - 1]) < MEMBERS)
            atomic_fetch_add(&m->r->overlaps, 1);
        atomic_fetch_add(&m->r->called_enter[i], 1);
        int rc = zkr_double_barrier_enter(d, WAIT_MS);
        /* every member of this round called enter before anyone got in */
        if (atomic_load(&m->r->called_enter[i]) < MEMBERS)
            atomic_fetch_add(&m->r->early_enter, 1);
        if (rc != ZKR_OK) {
            printf("\n    round %d: enter %s", i, zkr_err_name(rc));
            atomic_fetch_add(&m->r->failed, 1);
            break;
        }
        atomic_fetch_add(&m->r->passed[i], 1);
        zkt_jitter(&m->seed, 30000);
        atomic_fetch_add(&m->r->called_leave[i], 1);
        rc = zkr_double_barrier_leave(d, WAIT_MS);
        /* nobody returns from leave before all called it */
        if (atomic_load(&m->r->called_leave[i]) < MEMBERS)
            atomic_fetch_add(&m->r->early_leave, 1);
        if (rc != ZKR_OK) {
            printf("\n    round %d: leave %s", i, zkr_err_name(rc));
            atomic_fetch_add(&m->r->failed, 1);
            break;
        }
        atomic_fetch_add(&m->r->left[i], 1);
    }
    zkr_double_barrier_free(d);
    return NULL;
}

static void test_rounds(void)
{
    char path[128];
    zkt_path("rounds", path, sizeof path);
    zkr_client_t *c[CLIENTS];
    for (int i = 0; i < CLIENTS; i++)
        c[i] = zkt_client(SESSION_MS);
    rounds_t r;
    memset(&r, 0, sizeof r);
    member_t m[MEMBERS];
    pthread_t t[MEMBERS];
    int64_t t0 = zkt_now_ms();
    for (int i = 0; i < MEMBERS; i++) {
        m[i] = (member_t){&r, c[i % CLIENTS], path, 77u + (unsigned)i};
        CU_ASSERT_FATAL(pthread_create(&t[i], NULL, member_main, &m[i]) == 0);
    }
    for (int i = 0; i < MEMBERS; i++)
        pthread_join(t[i], NULL);
    printf("\n    %d members on %d clients, %d rounds back to back: %lld ms, %d enters while the last round "
           "was still leaving",
           MEMBERS, CLIENTS, ROUNDS, (long long)(zkt_now_ms() - t0), atomic_load(&r.overlaps));
    CU_ASSERT(atomic_load(&r.overlaps) > 0); /* the rounds did overlap */
    CU_ASSERT_EQUAL(atomic_load(&r.failed), 0);
    CU_ASSERT_EQUAL(atomic_load(&r.early_enter), 0);
    CU_ASSERT_EQUAL(atomic_load(&r.early_leave), 0);
    for (int i = 0; i < ROUNDS; i++)
        CU_ASSERT_EQUAL(atomic_load(&r.passed[i]), MEMBERS);
    /* nothing is left: no member, no "ready" */
    zhandle_t *zh = zkt_raw();
    CU_ASSERT_EQUAL(zkt_count_children(zh, path), 0);
    zkt_raw_close(zh);
    for (int i = 0; i < CLIENTS; i++)
        zkr_client_close(c[i]);
}

/* ---- a stale "ready"; one member ---------------------------------------------------------- */

static void test_stale_ready(void)
{
    char path[128], ready[160];
    zkt_path("stale", path, sizeof path);
    snprintf(ready, sizeof ready, "%s/ready", path);
    zhandle_t *zh = zkt_raw();
    int64_t old = bc_stale_ready(zh, path); /* a round whose members died inside */
    zkr_client_t *c = zkt_client(SESSION_MS), *c2 = zkt_client(SESSION_MS);
    zkr_double_barrier_t *a = NULL, *b = NULL;
    CU_ASSERT_EQUAL_FATAL(zkr_double_barrier_new(&a, c, path, 2), ZKR_OK);
    CU_ASSERT_EQUAL_FATAL(zkr_double_barrier_new(&b, c2, path, 2), ZKR_OK);
    /* alone, it is not let through (nor is "ready" counted as a member) */
    CU_ASSERT_EQUAL(zkr_double_barrier_enter(a, 600), ZKR_ETIMEDOUT);
    CU_ASSERT_EQUAL(zkr_double_barrier_is_inside(a), 0);
    CU_ASSERT_EQUAL(zkt_wait_children(zh, path, 1, WAIT_MS), 1); /* its node went: "ready" alone */
    /* with the second, both are: a new "ready" replaces the old */
    bcall_t k;
    bc_start(&k, BC_ENTER, a, NULL, WAIT_MS);
    zkt_sleep_ms(300);
    int64_t second = zkt_now_ms();
    CU_ASSERT_EQUAL(zkr_double_barrier_enter(b, WAIT_MS), ZKR_OK);
    CU_ASSERT_EQUAL(bc_join(&k), ZKR_OK);
    CU_ASSERT(k.returned >= second);
    CU_ASSERT_EQUAL(zkr_double_barrier_is_inside(a), 1);
    struct Stat now;
    CU_ASSERT_TRUE(exists(zh, ready, &now));
    CU_ASSERT(now.czxid > old);
    CU_ASSERT_EQUAL(zkt_count_children(zh, path), 3);
    /* one leaves: it waits for the other */
    bc_start(&k, BC_LEAVE, a, NULL, WAIT_MS);
    zkt_sleep_ms(300);
    int64_t last = zkt_now_ms();
    CU_ASSERT_EQUAL(zkr_double_barrier_leave(b, WAIT_MS), ZKR_OK);
    CU_ASSERT_EQUAL(bc_join(&k), ZKR_OK);
    CU_ASSERT(k.returned >= last);
    /* the round's "ready" went with them */
    CU_ASSERT_EQUAL(zkt_count_children(zh, path), 0);
    zkr_double_barrier_free(a);
    zkr_double_barrier_free(b);
    zkr_client_close(c);
    zkr_client_close(c2);
    zkt_raw_close(zh);
}

/* N = 2 and three members: a and b are let in; c, coming after their
 * "ready", belongs to the next round (Curator lets it in at once): a and
 * b leave without waiting for it, and it is let in when a comes again. */
static void test_late_member(void)
{
    char path[128];
    zkt_path("late", path, sizeof path);
    zkr_client_t *c = zkt_client(SESSION_MS);
    zkr_double_barrier_t *a = NULL, *b = NULL, *x = NULL;
    CU_ASSERT_EQUAL_FATAL(zkr_double_barrier_new(&a, c, path, 2), ZKR_OK);
    CU_ASSERT_EQUAL_FATAL(zkr_double_barrier_new(&b, c, path, 2), ZKR_OK);
    CU_ASSERT_EQUAL_FATAL(zkr_double_barrier_new(&x, c, path, 2), ZKR_OK);
    bcall_t ka, kx;
    bc_start(&ka, BC_ENTER, a, NULL, WAIT_MS);
    CU_ASSERT_EQUAL(zkr_double_barrier_enter(b, WAIT_MS), ZKR_OK);
    CU_ASSERT_EQUAL(bc_join(&ka), ZKR_OK);
    bc_start(&kx, BC_ENTER, x, NULL, WAIT_MS);
    zhandle_t *zh = zkt_raw();
    CU_ASSERT_EQUAL(zkt_wait_children(zh, path, 4, WAIT_MS), 1); /* a, b, x, ready */
    zkt_sleep_ms(300);
    CU_ASSERT_EQUAL(kx.rc, BC_PENDING);
    /* a and b leave: they do not wait for x */
    bc_start(&ka, BC_LEAVE, a, NULL, WAIT_MS);
    CU_ASSERT_EQUAL(zkr_double_barrier_leave(b, WAIT_MS), ZKR_OK);
    CU_ASSERT_EQUAL(bc_join(&ka), ZKR_OK);
    zkt_sleep_ms(300);
    CU_ASSERT_EQUAL(kx.rc, BC_PENDING);
    /* a comes again: x and a are the next round */
    int64_t again = zkt_now_ms();
    CU_ASSERT_EQUAL(zkr_double_barrier_enter(a, WAIT_MS), ZKR_OK);
    CU_ASSERT_EQUAL(bc_join(&kx), ZKR_OK);
    CU_ASSERT(kx.returned >= again);
    bc_start(&kx, BC_LEAVE, x, NULL, WAIT_MS);
    CU_ASSERT_EQUAL(zkr_double_barrier_leave(a, WAIT_MS), ZKR_OK);
    CU_ASSERT_EQUAL(bc_join(&kx), ZKR_OK);
    CU_ASSERT_EQUAL(zkt_count_children(zh, path), 0);
    zkr_double_barrier_free(a);
    zkr_double_barrier_free(b);
    zkr_double_barrier_free(x);
    zkr_client_close(c);
    zkt_raw_close(zh);
}

static void test_one_member(void)
{
    char path[128], ready[160];
    zkt_path("one", path, sizeof path);
    snprintf(ready, sizeof ready, "%s/x/ready", path);
    char deep[160];
    snprintf(deep, sizeof deep, "%s/x", path);
    zkr_client_t *c = zkt_client(SESSION_MS);
    zhandle_t *zh = zkt_raw();
    zkr_double_barrier_t *d = NULL;
    CU_ASSERT_EQUAL_FATAL(zkr_double_barrier_new(&d, c, deep, 1), ZKR_OK);
    for (int i = 0; i < 3; i++) {
        CU_ASSERT_EQUAL(zkr_double_barrier_enter(d, 0), ZKR_OK); /* parents made; no wait */
        CU_ASSERT_EQUAL(zkr_double_barrier_is_inside(d), 1);
        CU_ASSERT_EQUAL(zkt_count_children(zh, deep), 2);     /* us and "ready" */
        CU_ASSERT_EQUAL(zkr_double_barrier_enter(d, 0), ZKR_ESTATE);
        CU_ASSERT_EQUAL(zkr_double_barrier_leave(d, 0), ZKR_OK);
        CU_ASSERT_EQUAL(zkr_double_barrier_leave(d, 0), ZKR_ESTATE);
        CU_ASSERT_EQUAL(zkt_count_children(zh, deep), 0);
    }
    /* a stale "ready" does not matter to one member either */
    CU_ASSERT_EQUAL_FATAL(zoo_create(zh, ready, NULL, -1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0), ZOK);
    CU_ASSERT_EQUAL(zkr_double_barrier_enter(d, 5000), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_double_barrier_leave(d, 5000), ZKR_OK);
    CU_ASSERT_EQUAL(zkt_count_children(zh, deep), 0);
    /* freed inside: its node goes */
    CU_ASSERT_EQUAL(zkr_double_barrier_enter(d, 5000), ZKR_OK);
    zkr_double_barrier_free(d);
    CU_ASSERT_EQUAL(zkt_wait_children(zh, deep, 1, 5000), 1); /* "ready" stays */
    zkr_client_close(c);
    zkt_raw_close(zh);
}

/* ---- bad input; the callback thread ------------------------------------------------------- */

static void test_bad_input(void)
{
    zkr_client_t *c = zkt_client(SESSION_MS);
    zkr_barrier_t *b = (zkr_barrier_t *)1;
    zkr_double_barrier_t *d = (zkr_double_barrier_t *)1;
    CU_ASSERT_EQUAL(zkr_barrier_new(NULL, c, "/b"), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_barrier_new(&b, NULL, "/b"), ZKR_EINVAL);
    CU_ASSERT_PTR_NULL(b);
    const char *bad[] = {NULL, "", "b", "/b/", "/b//c", "/b/./c", "/zookeeper/x", "/"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        b = (zkr_barrier_t *)1;
        CU_ASSERT_EQUAL(zkr_barrier_new(&b, c, bad[i]), ZKR_EINVAL);
        CU_ASSERT_PTR_NULL(b);
        CU_ASSERT_EQUAL(zkr_double_barrier_new(&d, c, bad[i], 2), ZKR_EINVAL);
        CU_ASSERT_PTR_NULL(d);
    }
    CU_ASSERT_EQUAL(zkr_double_barrier_new(&d, c, "/b", 0), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_double_barrier_new(&d, NULL, "/b", 2), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_double_barrier_new(NULL, c, "/b", 2), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_barrier_set(NULL, 0), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_barrier_remove(NULL, 0), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_barrier_wait(NULL, 0), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_double_barrier_enter(NULL, 0), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_double_barrier_leave(NULL, 0), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_double_barrier_is_inside(NULL), 0);
    zkr_barrier_free(NULL);
    zkr_double_barrier_free(NULL);
    /* leave before enter */
    char path[128];
    zkt_path("bad", path, sizeof path);
    CU_ASSERT_EQUAL_FATAL(zkr_double_barrier_new(&d, c, path, 2), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_double_barrier_leave(d, 0), ZKR_ESTATE);
    zkr_double_barrier_free(d);
    /* a closed client */
    CU_ASSERT_EQUAL_FATAL(zkr_barrier_new(&b, c, path), ZKR_OK);
    CU_ASSERT_EQUAL_FATAL(zkr_double_barrier_new(&d, c, path, 2), ZKR_OK);
    zkr_client_close(c);
    CU_ASSERT_EQUAL(zkr_barrier_set(b, 1000), ZKR_ECLOSED);
    CU_ASSERT_EQUAL(zkr_barrier_wait(b, 1000), ZKR_ECLOSED);
    CU_ASSERT_EQUAL(zkr_double_barrier_enter(d, 1000), ZKR_ECLOSED);
    zkr_barrier_free(b);
    zkr_double_barrier_free(d);
}

/* A barrier at <name>/gate and a double barrier at <name>/d, on c. */
typedef struct pair {
    char path[128], gate[160], dir[160];
    zkr_barrier_t *b;
    zkr_double_barrier_t *d;
} pair_t;

static void pair_new(pair_t *p, const char *name, zkr_client_t *c, size_t members)
{
    zkt_path(name, p->path, sizeof p->path);
    snprintf(p->gate, sizeof p->gate, "%s/gate", p->path);
    snprintf(p->dir, sizeof p->dir, "%s/d", p->path);
    CU_ASSERT_EQUAL_FATAL(zkr_barrier_new(&p->b, c, p->gate), ZKR_OK);
    CU_ASSERT_EQUAL_FATAL(zkr_double_barrier_new(&p->d, c, p->dir, members), ZKR_OK);
}

static void pair_free(pair_t *p)
{
    zkr_barrier_free(p->b);
    zkr_double_barrier_free(p->d);
}

/* The client closes while a member waits in enter and another in
 * zkr_barrier_wait: both return ZKR_ECLOSED. */
static void test_close_while_waiting(void)
{
    zkr_client_t *c = zkt_client(SESSION_MS);
    zhandle_t *zh = zkt_raw();
    pair_t p;
    pair_new(&p, "close", c, 2);
    CU_ASSERT_EQUAL(zkr_barrier_set(p.b, 5000), ZKR_OK);
    bcall_t kw, ke;
    bc_start(&kw, BC_WAIT, NULL, p.b, -1);
    bc_start(&ke, BC_ENTER, p.d, NULL, -1);
    CU_ASSERT_EQUAL(zkt_wait_children(zh, p.dir, 1, WAIT_MS), 1);
    zkt_sleep_ms(200);
    CU_ASSERT_EQUAL(zkr_client_close(c), ZKR_OK);
    CU_ASSERT_EQUAL(bc_join(&kw), ZKR_ECLOSED);
    CU_ASSERT_EQUAL(bc_join(&ke), ZKR_ECLOSED);
    CU_ASSERT_EQUAL(zkt_wait_children(zh, p.dir, 0, WAIT_MS), 1); /* its session closed */
    pair_free(&p);
    CU_ASSERT_EQUAL(zoo_delete(zh, p.gate, -1), ZOK);
    zkt_raw_close(zh);
}

/* The client closes while a member is inside: its leave returns
 * ZKR_ECLOSED and, as every return of leave but ZKR_EDEADLK, it is no
 * longer inside (its node went with the session): a second leave is
 * ZKR_ESTATE, an enter ZKR_ECLOSED. */
static void test_leave_closed(void)
{
    zkr_client_t *c = zkt_client(SESSION_MS);
    zhandle_t *zh = zkt_raw();
    char path[128];
    zkt_path("leaveclosed", path, sizeof path);
    zkr_double_barrier_t *d = NULL;
    CU_ASSERT_EQUAL_FATAL(zkr_double_barrier_new(&d, c, path, 1), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_double_barrier_enter(d, WAIT_MS), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_double_barrier_is_inside(d), 1);
    CU_ASSERT_EQUAL(zkr_client_close(c), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_double_barrier_leave(d, 1000), ZKR_ECLOSED);
    CU_ASSERT_EQUAL(zkr_double_barrier_is_inside(d), 0);
    CU_ASSERT_EQUAL(zkr_double_barrier_leave(d, 1000), ZKR_ESTATE);
    CU_ASSERT_EQUAL(zkr_double_barrier_enter(d, 1000), ZKR_ECLOSED);
    CU_ASSERT_EQUAL(zkt_wait_children(zh, path, 1, WAIT_MS), 1); /* "ready" only */
    zkr_double_barrier_free(d);
    zkt_raw_close(zh);
}

typedef struct in_cb {
    zkr_barrier_t *b;
    zkr_double_barrier_t *d, *in; /* in: inside before the callback */
    atomic_int wait_rc, enter_rc, set_rc, leave_rc, done;
} in_cb_t;

static void cb_listener(zkr_cache_t *cache, const zkr_cache_event_t *ev, void *ctx)
{
    (void)cache;
    in_cb_t *k = ctx;
    if (ev->type != ZKR_CACHE_INITIALIZED || atomic_load(&k->done))
        return;
    atomic_store(&k->set_rc, zkr_barrier_set(k->b, 5000)); /* one request: allowed */
    atomic_store(&k->wait_rc, zkr_barrier_wait(k->b, 5000));
    atomic_store(&k->enter_rc, zkr_double_barrier_enter(k->d, 5000));
    atomic_store(&k->leave_rc, zkr_double_barrier_leave(k->in, 5000));
    atomic_store(&k->done, 1);
}

static int cb_done(void *arg)
{
    return atomic_load(&((in_cb_t *)arg)->done);
}

static void test_callback_thread(void)
{
    zkr_client_t *c = zkt_client(SESSION_MS);
    pair_t p;
    pair_new(&p, "cb", c, 1);
    in_cb_t k;
    memset(&k, 0, sizeof k);
    k.b = p.b;
    k.d = p.d;
    char in_path[192];
    snprintf(in_path, sizeof in_path, "%s/in", p.path);
    CU_ASSERT_EQUAL_FATAL(zkr_double_barrier_new(&k.in, c, in_path, 1), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_double_barrier_enter(k.in, WAIT_MS), ZKR_OK);
    zkr_cache_t *cache = NULL;
    CU_ASSERT_EQUAL_FATAL(zkr_cache_new(&cache, c, p.path, NULL), ZKR_OK);
    zkr_cache_set_listener(cache, cb_listener, &k);
    CU_ASSERT_EQUAL(zkr_cache_start(cache), ZKR_OK);
    CU_ASSERT_TRUE(zkt_wait_for(cb_done, &k, WAIT_MS));
    CU_ASSERT_EQUAL(atomic_load(&k.set_rc), ZKR_OK);
    CU_ASSERT_EQUAL(atomic_load(&k.wait_rc), ZKR_EDEADLK);
    CU_ASSERT_EQUAL(atomic_load(&k.enter_rc), ZKR_EDEADLK);
    CU_ASSERT_EQUAL(zkr_double_barrier_is_inside(k.d), 0);
    /* a leave refused there is still inside: leave again elsewhere */
    CU_ASSERT_EQUAL(atomic_load(&k.leave_rc), ZKR_EDEADLK);
    CU_ASSERT_EQUAL(zkr_double_barrier_is_inside(k.in), 1);
    CU_ASSERT_EQUAL(zkr_double_barrier_leave(k.in, WAIT_MS), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_double_barrier_is_inside(k.in), 0);
    zkr_double_barrier_free(k.in);
    zkr_cache_free(cache);
    CU_ASSERT_EQUAL(zkr_barrier_remove(k.b, 5000), ZKR_OK);
    pair_free(&p);
    zkr_client_close(c);
}

/* ---- a stalled link; lost sessions --------------------------------------------------------- */

static int gone_within(zhandle_t *zh, const char *path, int timeout_ms)
{
    for (int64_t end = zkt_now_ms() + timeout_ms; zkt_now_ms() < end; zkt_sleep_ms(50))
        if (!exists(zh, path, NULL))
            return 1;
    return 0;
}

static void test_stalled_link(void)
{
    zkt_proxy_t *px = zkt_proxy_start(zkt_server_port());
    CU_ASSERT_PTR_NOT_NULL_FATAL(px);
    zkr_client_t *c = zkt_client_at(zkt_proxy_hosts(px), SESSION_MS);
    zhandle_t *zh = zkt_raw();
    pair_t p;
    pair_new(&p, "stall", c, 2);
    zkr_barrier_t *b = p.b;
    zkr_double_barrier_t *d = p.d;
    CU_ASSERT_EQUAL(zkr_barrier_set(b, 5000), ZKR_OK);
    CU_ASSERT_EQUAL(zkt_proxy_stall(px, 1), 0);
    int rcs[4];
    int64_t took[4];
    for (int i = 0; i < 4; i++) {
        int64_t t0 = zkt_now_ms();
        rcs[i] = i == 0   ? zkr_barrier_wait(b, 400)
                 : i == 1 ? zkr_barrier_set(b, 400)
                 : i == 2 ? zkr_double_barrier_enter(d, 400)
                          : zkr_barrier_remove(b, 400);
        took[i] = zkt_now_ms() - t0;
    }
    CU_ASSERT_EQUAL(zkt_proxy_stall(px, 0), 0);
    for (int i = 0; i < 4; i++) {
        CU_ASSERT_EQUAL(rcs[i], ZKR_ETIMEDOUT);
        CU_ASSERT(took[i] >= 350 && took[i] < 3000);
    }
    CU_ASSERT_EQUAL(zkr_double_barrier_is_inside(d), 0);
    /* the requests held in the stall go through after it: the member node
     * is made, then deleted in the background; the remove is applied */
    CU_ASSERT_EQUAL(zkt_wait_children(zh, p.dir, 0, WAIT_MS), 1);
    CU_ASSERT_TRUE(gone_within(zh, p.gate, WAIT_MS));
    CU_ASSERT_EQUAL(zkr_barrier_wait(b, WAIT_MS), ZKR_OK);
    pair_free(&p);
    zkr_client_close(c);
    zkt_raw_close(zh);
    zkt_proxy_stop(px);
}

/* A member's session expires while it waits in enter, and while it is
 * inside: it is gone from the barrier; the others do not count it. */
static void test_expiry(void)
{
    char path[128];
    zkt_path("expiry", path, sizeof path);
    zkr_client_t *ca = zkt_client(SESSION_MS), *cb = zkt_client(SESSION_MS), *cc = zkt_client(SESSION_MS);
    zhandle_t *zh = zkt_raw();
    zkr_double_barrier_t *a = NULL, *b = NULL, *x = NULL;
    CU_ASSERT_EQUAL_FATAL(zkr_double_barrier_new(&a, ca, path, 3), ZKR_OK);
    CU_ASSERT_EQUAL_FATAL(zkr_double_barrier_new(&b, cb, path, 3), ZKR_OK);
    CU_ASSERT_EQUAL_FATAL(zkr_double_barrier_new(&x, cc, path, 3), ZKR_OK);
    /* while entering: a's enter ends; b still waits, and is not let in
     * by two more (a is no longer counted)... */
    bcall_t ka, kb;
    bc_start(&ka, BC_ENTER, a, NULL, WAIT_MS);
    bc_start(&kb, BC_ENTER, b, NULL, WAIT_MS);
    CU_ASSERT_EQUAL(zkt_wait_children(zh, path, 2, WAIT_MS), 1);
    zkt_expire_client(ca, SESSION_MS);
    CU_ASSERT_EQUAL(bc_join(&ka), ZKR_ESESSIONLOST);
    CU_ASSERT_EQUAL(zkr_double_barrier_is_inside(a), 0);
    CU_ASSERT_EQUAL(zkt_wait_children(zh, path, 1, WAIT_MS), 1);
    bcall_t kx;
    bc_start(&kx, BC_ENTER, x, NULL, WAIT_MS);
    CU_ASSERT_EQUAL(zkt_wait_children(zh, path, 2, WAIT_MS), 1);
    zkt_sleep_ms(300);
    CU_ASSERT_EQUAL(kb.rc, BC_PENDING); /* both still waiting */
    CU_ASSERT_EQUAL(kx.rc, BC_PENDING);
    /* ...but by a third: a again, on its new session */
    int64_t third = zkt_now_ms();
    CU_ASSERT_EQUAL(zkr_double_barrier_enter(a, WAIT_MS), ZKR_OK);
    CU_ASSERT_EQUAL(bc_join(&kb), ZKR_OK);
    CU_ASSERT_EQUAL(bc_join(&kx), ZKR_OK);
    CU_ASSERT(kb.returned >= third && kx.returned >= third);
    /* inside: a's session expires; b and x leave without it; a's leave
     * says its session was lost */
    zkt_expire_client(ca, SESSION_MS);
    bc_start(&kb, BC_LEAVE, b, NULL, WAIT_MS);
    CU_ASSERT_EQUAL(zkr_double_barrier_leave(x, WAIT_MS), ZKR_OK);
    CU_ASSERT_EQUAL(bc_join(&kb), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_double_barrier_leave(a, WAIT_MS), ZKR_ESESSIONLOST);
    CU_ASSERT_EQUAL(zkr_double_barrier_is_inside(a), 0);
    CU_ASSERT_EQUAL(zkt_count_children(zh, path), 0);
    zkr_double_barrier_free(a);
    zkr_double_barrier_free(b);
    zkr_double_barrier_free(x);
    zkr_client_close(ca);
    zkr_client_close(cb);
    zkr_client_close(cc);
    zkt_raw_close(zh);
}

/* A stall (shorter than the session) while a member waits in enter: the
 * other enters meanwhile and is let in at once; the stalled one is let
 * in once the link is back (its session, node and watch lived on). */
static void test_stall_during_enter(void)
{
    char path[128];
    zkt_path("stall-enter", path, sizeof path);
    zkt_proxy_t *px = zkt_proxy_start(zkt_server_port());
    CU_ASSERT_PTR_NOT_NULL_FATAL(px);
    zkr_client_t *ca = zkt_client_at(zkt_proxy_hosts(px), SESSION_MS), *cb = zkt_client(SESSION_MS);
    zhandle_t *zh = zkt_raw();
    zkr_double_barrier_t *a = NULL, *b = NULL;
    CU_ASSERT_EQUAL_FATAL(zkr_double_barrier_new(&a, ca, path, 2), ZKR_OK);
    CU_ASSERT_EQUAL_FATAL(zkr_double_barrier_new(&b, cb, path, 2), ZKR_OK);
    bcall_t ka;
    bc_start(&ka, BC_ENTER, a, NULL, WAIT_MS);
    CU_ASSERT_EQUAL(zkt_wait_children(zh, path, 1, WAIT_MS), 1);
    CU_ASSERT_EQUAL(zkt_proxy_stall(px, 1), 0);
    CU_ASSERT_EQUAL(zkr_double_barrier_enter(b, WAIT_MS), ZKR_OK);
    zkt_sleep_ms(SESSION_MS / 4);
    CU_ASSERT_EQUAL(ka.rc, BC_PENDING); /* a has not heard yet */
    int64_t back = zkt_now_ms();
    CU_ASSERT_EQUAL(zkt_proxy_stall(px, 0), 0);
    CU_ASSERT_EQUAL(bc_join(&ka), ZKR_OK);
    CU_ASSERT(ka.returned >= back);
    bcall_t kb;
    bc_start(&kb, BC_LEAVE, b, NULL, WAIT_MS);
    CU_ASSERT_EQUAL(zkr_double_barrier_leave(a, WAIT_MS), ZKR_OK);
    CU_ASSERT_EQUAL(bc_join(&kb), ZKR_OK);
    CU_ASSERT_EQUAL(zkt_count_children(zh, path), 0);
    /* A stall past a's timeout: b counts a's node and goes in; a, not
     * hearing of it, times out (its node is deleted once the link is
     * back).  Each side says what it saw: the barrier cannot do better
     * (Curator neither: CURATOR-318). */
    bc_start(&ka, BC_ENTER, a, NULL, 1500);
    CU_ASSERT_EQUAL(zkt_wait_children(zh, path, 1, WAIT_MS), 1);
    CU_ASSERT_EQUAL(zkt_proxy_stall(px, 1), 0);
    CU_ASSERT_EQUAL(zkr_double_barrier_enter(b, WAIT_MS), ZKR_OK);
    CU_ASSERT_EQUAL(bc_join(&ka), ZKR_ETIMEDOUT);
    CU_ASSERT_EQUAL(zkr_double_barrier_is_inside(a), 0);
    CU_ASSERT_EQUAL(zkt_proxy_stall(px, 0), 0);
    CU_ASSERT_EQUAL(zkt_wait_children(zh, path, 2, WAIT_MS), 1); /* b and "ready" */
    CU_ASSERT_EQUAL(zkr_double_barrier_leave(b, WAIT_MS), ZKR_OK);
    CU_ASSERT_EQUAL(zkt_count_children(zh, path), 0);
    zkr_double_barrier_free(a);
    zkr_double_barrier_free(b);
    zkr_client_close(ca);
    zkr_client_close(cb);
    zkt_raw_close(zh);
    zkt_proxy_stop(px);
}

static void add_suites(void)
{
    CU_pSuite s = CU_add_suite("barrier", NULL, NULL);
    CU_add_test(s, "barrier: set (parents, twice), waits time out while set, waiters return when removed",
                test_barrier);
    CU_add_test(s, "double barrier: members on several clients in rounds back to back, none passing early",
                test_rounds);
    CU_add_test(s, "a stale \"ready\" lets no single member through and is replaced", test_stale_ready);
    CU_add_test(s, "a member after the round's \"ready\" is the next round's; the round leaves without it",
                test_late_member);
    CU_add_test(s, "a member count of 1; freed inside", test_one_member);
    CU_add_test(s, "bad input, NULL, a closed client: the documented codes", test_bad_input);
    CU_add_test(s, "from the callback thread: waits refused with ZKR_EDEADLK", test_callback_thread);
    CU_add_test(s, "the client closes while they wait: ZKR_ECLOSED", test_close_while_waiting);
    CU_add_test(s, "the client closed while inside: leave says ZKR_ECLOSED and we are out", test_leave_closed);
    CU_pSuite f = CU_add_suite("barrier faults", NULL, NULL);
    CU_add_test(f, "a stalled link: every call keeps its timeout", test_stalled_link);
    CU_add_test(f, "a member's session expires while entering and while inside", test_expiry);
    CU_add_test(f, "a stall during enter: let in once the link is back; past its timeout: out, the other in",
                test_stall_during_enter);
}

int main(void)
{
    return zkt_main("test_barrier", add_suites);
}

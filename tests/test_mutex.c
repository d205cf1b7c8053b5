/* zkr_mutex (Curator InterProcessMutex) against a real server: mutual
 * exclusion across threads, objects, sessions and processes; reentrancy;
 * timeouts that leave nothing behind; no herd effect (checked on the
 * server's own watch tables); FIFO; a SIGKILLed holder; fencing tokens;
 * participants; revocation; bad arguments; several threads on one object.
 *
 * Threads never call CUnit: they record what happened and the main thread
 * asserts after joining them.  Child processes are forked before the test
 * opens any client or handle, open their own client, and report through
 * their exit status and shared memory. */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <regex.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/harness/zkr_test.h"

#define SESSION_MS 10000
#define LONG_WAIT_MS 60000   /* bound on any acquire that must succeed */
#define POLL_MS 20000        /* bound on polling for a condition */
#define CHILD_WAIT_MS 120000 /* bound on a child process */

/* ---- small helpers -------------------------------------------------------------- */

static zkr_mutex_t *new_mutex(zkr_client_t *c, const char *path)
{
    zkr_mutex_t *m = NULL;
    CU_ASSERT_EQUAL_FATAL(zkr_mutex_new(&m, c, path), ZKR_OK);
    CU_ASSERT_PTR_NOT_NULL_FATAL(m);
    return m;
}

typedef struct int_at_least {
    atomic_int *v;
    int n;
} int_at_least_t;

static int int_reached(void *arg)
{
    int_at_least_t *w = arg;
    return atomic_load(w->v) >= w->n;
}

static int wait_atomic_at_least(atomic_int *v, int n, int ms)
{
    int_at_least_t w = {v, n};
    return zkt_wait_for(int_reached, &w, ms);
}

static int64_t owner_of(zhandle_t *zh, const char *path)
{
    struct Stat st;
    return zoo_exists(zh, path, 0, &st) == ZOK ? st.ephemeralOwner : -1;
}

/* ---- the server's watch tables ----------------------------------------------------- */

/* Sessions other than the node's owner listed under the exact path `path`
 * in a wchp report (data watches; ZooKeeper's wchp/wchc/wchs never show
 * children watches; the owner's own watch is the outside-deletion watch). */
static int report_sessions(const char *report, const char *path, int64_t *out, int max)
{
    return zkt_watch_report_sessions(report, path, 0, out, max);
}

/* Number of waiters' data watches on dir itself or on anything below it
 * (owners' watches on their own nodes left out). */
static int report_watches_under(const char *report, const char *dir)
{
    return zkt_report_waiter_watches_under(report, dir);
}

static int owner_watches_node(void *path)
{
    return zkt_owner_watches(path) == 1;
}

static int watches_under(const char *dir)
{
    char *r = zkt_4lw("wchp");
    if (!r)
        return -1;
    int n = report_watches_under(r, dir);
    free(r);
    return n;
}

/* ---- child processes ------------------------------------------------------------------ */

/* ---- mutual exclusion under contention -------------------------------------------------- */

#define ST_OWN_THREADS 8
#define ST_SHARED_THREADS 3
#define ST_CHILDREN 2
#define ST_THREAD_CYCLES 150
#define ST_CHILD_CYCLES 200

/* In a MAP_SHARED mapping made before fork: seen by threads and children. */
typedef struct stress_shared {
    atomic_int inside;
    atomic_int overlaps;
    atomic_int fence_violations;
    atomic_int errors;
    atomic_int first_error;
    atomic_llong last_token;
    atomic_long counter; /* read, then written: lost updates show overlaps */
    atomic_long cycles;
} stress_shared_t;

static void stress_error(stress_shared_t *sh, int rc)
{
    int zero = 0;
    atomic_fetch_add(&sh->errors, 1);
    atomic_compare_exchange_strong(&sh->first_error, &zero, rc);
}

/* cycles acquire/check/release rounds on m; 0 if every call behaved. */
static int stress_cycles(stress_shared_t *sh, zkr_mutex_t *m, int cycles, unsigned seed)
{
    for (int i = 0; i < cycles; i++) {
        zkt_jitter(&seed, 1000);
        int rc = zkr_mutex_acquire(m, LONG_WAIT_MS);
        if (rc != ZKR_OK) {
            stress_error(sh, rc);
            return 1;
        }
        int64_t token = 0;
        rc = zkr_mutex_fencing_token(m, &token);
        if (rc != ZKR_OK || !zkr_mutex_is_held(m))
            stress_error(sh, rc != ZKR_OK ? rc : -100);

        if (atomic_fetch_add(&sh->inside, 1) != 0)
            atomic_fetch_add(&sh->overlaps, 1);
        if (token <= atomic_load(&sh->last_token))
            atomic_fetch_add(&sh->fence_violations, 1);
        atomic_store(&sh->last_token, token);
        long v = atomic_load(&sh->counter);
        sched_yield();
        zkt_jitter(&seed, 300);
        atomic_store(&sh->counter, v + 1);
        atomic_fetch_add(&sh->cycles, 1);
        atomic_fetch_sub(&sh->inside, 1);

        rc = zkr_mutex_release(m);
        if (rc != ZKR_OK) {
            stress_error(sh, rc);
            return 1;
        }
    }
    return 0;
}

typedef struct stress_thread {
    pthread_t tid;
    stress_shared_t *sh;
    zkr_mutex_t *m;
    int cycles;
    unsigned seed;
    int failed;
} stress_thread_t;

static void *stress_thread_main(void *arg)
{
    stress_thread_t *t = arg;
    t->failed = stress_cycles(t->sh, t->m, t->cycles, t->seed);
    return NULL;
}

/* The body of a forked contender: waits for the go byte, then hammers. */
static int stress_child(stress_shared_t *sh, const char *path, int go_fd)
{
    if (zkt_read_byte(go_fd, CHILD_WAIT_MS) != 'g')
        return 10;
    zkr_client_t *c = zkt_plain_client(SESSION_MS);
    if (!c)
        return 11;
    zkr_mutex_t *m = NULL;
    if (zkr_mutex_new(&m, c, path) != ZKR_OK) {
        zkr_client_close(c);
        return 12;
    }
    int failed = stress_cycles(sh, m, ST_CHILD_CYCLES, (unsigned)getpid());
    zkr_mutex_free(m);
    zkr_client_close(c);
    return failed ? 13 : 0;
}

static void test_mutual_exclusion(void)
{
    char path[256];
    zkt_path("stress", path, sizeof path);
    stress_shared_t *sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    CU_ASSERT_FATAL(sh != MAP_FAILED);
    memset(sh, 0, sizeof *sh);
    int go[2];
    CU_ASSERT_FATAL(pipe(go) == 0);

    /* Fork first: this process has no client or handle open yet. */
    pid_t pids[ST_CHILDREN];
    for (int i = 0; i < ST_CHILDREN; i++) {
        fflush(NULL);
        pids[i] = fork();
        CU_ASSERT_FATAL(pids[i] >= 0);
        if (pids[i] == 0) {
            close(go[1]);
            _exit(stress_child(sh, path, go[0]));
        }
    }
    close(go[0]);

    zkr_client_t *own_c[ST_OWN_THREADS];
    stress_thread_t th[ST_OWN_THREADS + ST_SHARED_THREADS];
    memset(th, 0, sizeof th);
    for (int i = 0; i < ST_OWN_THREADS; i++) {
        own_c[i] = zkt_client(SESSION_MS);
        th[i].m = new_mutex(own_c[i], path);
    }
    zkr_client_t *shared_c = zkt_client(SESSION_MS);
    zkr_mutex_t *shared_m = new_mutex(shared_c, path);
    for (int i = ST_OWN_THREADS; i < ST_OWN_THREADS + ST_SHARED_THREADS; i++)
        th[i].m = shared_m;

    int n = ST_OWN_THREADS + ST_SHARED_THREADS;
    for (int i = 0; i < n; i++) {
        th[i].sh = sh;
        th[i].cycles = ST_THREAD_CYCLES;
        th[i].seed = 1000u + (unsigned)i;
        CU_ASSERT_FATAL(pthread_create(&th[i].tid, NULL, stress_thread_main, &th[i]) == 0);
    }
    for (int i = 0; i < ST_CHILDREN; i++)
        CU_ASSERT_EQUAL(write(go[1], "g", 1), 1);
    close(go[1]);

    for (int i = 0; i < n; i++) {
        pthread_join(th[i].tid, NULL);
        CU_ASSERT_EQUAL(th[i].failed, 0);
    }
    for (int i = 0; i < ST_CHILDREN; i++)
        CU_ASSERT_EQUAL(zkt_wait_child(pids[i], CHILD_WAIT_MS), 0);

    long expected = (long)n * ST_THREAD_CYCLES + (long)ST_CHILDREN * ST_CHILD_CYCLES;
    CU_ASSERT_EQUAL(atomic_load(&sh->errors), 0);
    if (atomic_load(&sh->errors))
        printf("\n  first error: %s\n", zkr_err_name(atomic_load(&sh->first_error)));
    CU_ASSERT_EQUAL(atomic_load(&sh->overlaps), 0);
    CU_ASSERT_EQUAL(atomic_load(&sh->fence_violations), 0);
    CU_ASSERT_EQUAL(atomic_load(&sh->cycles), expected);
    CU_ASSERT_EQUAL(atomic_load(&sh->counter), expected);
    CU_ASSERT_EQUAL(atomic_load(&sh->inside), 0);

    zkr_mutex_free(shared_m);
    zkr_client_close(shared_c);
    for (int i = 0; i < ST_OWN_THREADS; i++) {
        zkr_mutex_free(th[i].m);
        zkr_client_close(own_c[i]);
    }
    zhandle_t *zh = zkt_raw();
    CU_ASSERT_EQUAL(zkt_count_children(zh, path), 0);
    zkt_raw_close(zh);
    munmap(sh, sizeof *sh);
}

/* ---- a call on another thread ---------------------------------------------------------- */

typedef struct other_call {
    zkr_mutex_t *m;
    int64_t timeout_ms;
    int acquire;   /* 1: acquire (then release if release_after); 0: release */
    int release_after;
    int rc;
    int rc_release;
    int held_seen;
    atomic_int done;
    char *node; /* our node while held (malloc'd) */
    pthread_t tid;
} other_call_t;

static void *other_main(void *arg)
{
    other_call_t *o = arg;
    if (o->acquire) {
        o->rc = zkr_mutex_acquire(o->m, o->timeout_ms);
        o->held_seen = zkr_mutex_is_held(o->m);
        if (o->rc == ZKR_OK) {
            zkr_mutex_node_path(o->m, &o->node);
            atomic_store(&o->done, 1);
            if (o->release_after)
                o->rc_release = zkr_mutex_release(o->m);
        }
    } else {
        o->held_seen = zkr_mutex_is_held(o->m);
        o->rc = zkr_mutex_release(o->m);
    }
    atomic_store(&o->done, 1);
    return NULL;
}

static void other_start(other_call_t *o, zkr_mutex_t *m, int acquire, int64_t timeout_ms, int release_after)
{
    memset(o, 0, sizeof *o);
    o->m = m;
    o->acquire = acquire;
    o->timeout_ms = timeout_ms;
    o->release_after = release_after;
    o->rc = 1;
    o->rc_release = 1;
    CU_ASSERT_FATAL(pthread_create(&o->tid, NULL, other_main, o) == 0);
}

static void other_join(other_call_t *o)
{
    pthread_join(o->tid, NULL);
}

/* Release from a thread that does not hold m: its result. */
static int release_elsewhere(zkr_mutex_t *m, int *held_there)
{
    other_call_t o;
    other_start(&o, m, 0, 0, 0);
    other_join(&o);
    *held_there = o.held_seen;
    return o.rc;
}

/* ---- reentrancy --------------------------------------------------------------------------- */

static void test_reentrancy(void)
{
    char path[256];
    zkt_path("reentrant", path, sizeof path);
    zkr_client_t *ca = zkt_client(SESSION_MS), *cb = zkt_client(SESSION_MS);
    zkr_mutex_t *a = new_mutex(ca, path), *b = new_mutex(cb, path);
    zhandle_t *zh = zkt_raw();

    CU_ASSERT_EQUAL(zkr_mutex_is_held(a), 0);
    CU_ASSERT_EQUAL(zkr_mutex_acquire(a, 5000), ZKR_OK);
    int64_t t1 = 0, t2 = 0;
    char *n1 = NULL, *n2 = NULL;
    CU_ASSERT_EQUAL(zkr_mutex_fencing_token(a, &t1), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_mutex_node_path(a, &n1), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_mutex_acquire(a, 5000), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_mutex_acquire(a, 0), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_mutex_is_held(a), 1);
    CU_ASSERT_EQUAL(zkr_mutex_is_held_by_process(a), 1);
    CU_ASSERT_EQUAL(zkr_mutex_hold_state(a), ZKR_HOLD_SAFE);
    /* Reentry adds no node and keeps the token. */
    CU_ASSERT_EQUAL(zkt_count_children(zh, path), 1);
    CU_ASSERT_EQUAL(zkr_mutex_fencing_token(a, &t2), ZKR_OK);
    CU_ASSERT_EQUAL(t1, t2);
    CU_ASSERT_EQUAL(zkr_mutex_node_path(a, &n2), ZKR_OK);
    CU_ASSERT_PTR_NOT_NULL_FATAL(n1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(n2);
    CU_ASSERT_STRING_EQUAL(n1, n2);

    /* Another session cannot have it. */
    CU_ASSERT_EQUAL(zkr_mutex_acquire(b, 0), ZKR_ETIMEDOUT);
    CU_ASSERT_EQUAL(zkr_mutex_acquire(b, 200), ZKR_ETIMEDOUT);
    CU_ASSERT_EQUAL(zkr_mutex_is_held(b), 0);

    /* A thread that does not hold it cannot release it. */
    int held_there = -1;
    CU_ASSERT_EQUAL(release_elsewhere(a, &held_there), ZKR_ENOTOWNER);
    CU_ASSERT_EQUAL(held_there, 0);
    CU_ASSERT_EQUAL(zkr_mutex_is_held(a), 1);

    CU_ASSERT_EQUAL(zkr_mutex_release(a), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_mutex_release(a), ZKR_OK);
    /* One hold left: still ours, still not acquirable elsewhere. */
    CU_ASSERT_EQUAL(zkr_mutex_is_held(a), 1);
    CU_ASSERT_EQUAL(zkt_count_children(zh, path), 1);
    CU_ASSERT_EQUAL(zkr_mutex_acquire(b, 0), ZKR_ETIMEDOUT);
    CU_ASSERT_EQUAL(zkr_mutex_acquire(b, 200), ZKR_ETIMEDOUT);
    CU_ASSERT_EQUAL(release_elsewhere(a, &held_there), ZKR_ENOTOWNER);
    CU_ASSERT_EQUAL(zkr_mutex_is_held(a), 1);
    CU_ASSERT_EQUAL(zkt_count_children(zh, path), 1);

    CU_ASSERT_EQUAL(zkr_mutex_release(a), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_mutex_is_held(a), 0);
    CU_ASSERT_EQUAL(zkr_mutex_is_held_by_process(a), 0);
    CU_ASSERT_EQUAL(zkr_mutex_hold_state(a), ZKR_HOLD_NONE);
    CU_ASSERT_EQUAL(zkt_count_children(zh, path), 0);
    int64_t tok = 0;
    CU_ASSERT_EQUAL(zkr_mutex_fencing_token(a, &tok), ZKR_ENOTOWNER);
    char *np = NULL;
    CU_ASSERT_EQUAL(zkr_mutex_node_path(a, &np), ZKR_ENOTOWNER);
    CU_ASSERT_PTR_NULL(np);

    /* Free now: the release happened on the server synchronously. */
    CU_ASSERT_EQUAL(zkr_mutex_acquire(b, 0), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_mutex_release(a), ZKR_ENOTOWNER); /* a 4th release */
    CU_ASSERT_EQUAL(zkr_mutex_is_held(b), 1);
    CU_ASSERT_EQUAL(zkt_count_children(zh, path), 1);
    CU_ASSERT_EQUAL(zkr_mutex_release(b), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_mutex_release(b), ZKR_ENOTOWNER);
    CU_ASSERT_EQUAL(zkt_count_children(zh, path), 0);

    free(n1);
    free(n2);
    zkt_raw_close(zh);
    zkr_mutex_free(a);
    zkr_mutex_free(b);
    zkr_client_close(ca);
    zkr_client_close(cb);
}

/* ---- timeouts ---------------------------------------------------------------------------- */

static void test_timeouts(void)
{
    char path[256];
    zkt_path("timeout", path, sizeof path);
    zkr_client_t *ca = zkt_client(SESSION_MS), *cb = zkt_client(SESSION_MS);
    zkr_mutex_t *a = new_mutex(ca, path), *b = new_mutex(cb, path);
    zhandle_t *zh = zkt_raw();

    /* Free lock, timeout 0: one try suffices. */
    CU_ASSERT_EQUAL(zkr_mutex_acquire(a, 0), ZKR_OK);
    char *holder = NULL;
    CU_ASSERT_EQUAL_FATAL(zkr_mutex_node_path(a, &holder), ZKR_OK);

    for (int round = 0; round < 5; round++) {
        CU_ASSERT_EQUAL(zkr_mutex_acquire(b, 0), ZKR_ETIMEDOUT);
        CU_ASSERT_EQUAL(zkt_count_children(zh, path), 1);
        int64_t t0 = zkt_now_ms();
        CU_ASSERT_EQUAL(zkr_mutex_acquire(b, 200), ZKR_ETIMEDOUT);
        CU_ASSERT(zkt_now_ms() - t0 >= 195); /* it really waited */
        CU_ASSERT_EQUAL(zkt_count_children(zh, path), 1);
        CU_ASSERT_EQUAL(zkr_mutex_is_held(b), 0);
        CU_ASSERT_EQUAL(zkr_mutex_hold_state(b), ZKR_HOLD_NONE);
    }
    /* The one child left is the holder's node. */
    struct String_vector sv = {0, NULL};
    CU_ASSERT_EQUAL_FATAL(zoo_get_children(zh, path, 0, &sv), ZOK);
    CU_ASSERT_EQUAL(sv.count, 1);
    if (sv.count == 1)
        CU_ASSERT_STRING_EQUAL(sv.data[0], strrchr(holder, '/') + 1);
    deallocate_String_vector(&sv);

    /* The timed-out waiter is not queued: when a releases, b gets it at
     * once and nobody else is in the way. */
    CU_ASSERT_EQUAL(zkr_mutex_release(a), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_mutex_acquire(b, 0), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_mutex_release(b), ZKR_OK);
    CU_ASSERT_EQUAL(zkt_count_children(zh, path), 0);

    free(holder);
    zkt_raw_close(zh);
    zkr_mutex_free(a);
    zkr_mutex_free(b);
    zkr_client_close(ca);
    zkr_client_close(cb);
}

typedef struct dir_watches {
    const char *dir;
    int n;
} dir_watches_t;

static int dir_watches_are(void *arg)
{
    dir_watches_t *w = arg;
    return watches_under(w->dir) == w->n;
}

/* A waiter in the middle of the queue gives up: the one behind it must
 * move its watch to the node now before it, and gets the lock in turn. */
static void test_abandoned_middle(void)
{
    char path[256];
    zkt_path("middle", path, sizeof path);
    zhandle_t *zh = zkt_raw();
    zkr_client_t *ca = zkt_client(SESSION_MS), *cb = zkt_client(SESSION_MS), *cc = zkt_client(SESSION_MS);
    zkr_mutex_t *a = new_mutex(ca, path), *b = new_mutex(cb, path), *c = new_mutex(cc, path);
    CU_ASSERT_EQUAL_FATAL(zkr_mutex_acquire(a, 5000), ZKR_OK);

    other_call_t ob, oc;
    other_start(&ob, b, 1, 3000, 1);
    CU_ASSERT_FATAL(zkt_wait_children(zh, path, 2, POLL_MS));
    other_start(&oc, c, 1, LONG_WAIT_MS, 1);
    CU_ASSERT_FATAL(zkt_wait_children(zh, path, 3, POLL_MS));
    dir_watches_t dw = {path, 2};
    CU_ASSERT(zkt_wait_for(dir_watches_are, &dw, POLL_MS));
    char **parts = NULL;
    size_t np = 0;
    CU_ASSERT_EQUAL_FATAL(zkr_mutex_participants(a, &parts, &np), ZKR_OK);
    CU_ASSERT_EQUAL_FATAL(np, 3);
    int64_t sc = owner_of(zh, parts[2]);

    /* b gives up; c now watches a's node (b's old watch may stay there
     * too: ZooKeeper keeps a data watch until it fires). */
    other_join(&ob);
    CU_ASSERT_EQUAL(ob.rc, ZKR_ETIMEDOUT);
    CU_ASSERT_EQUAL(zkt_count_children(zh, path), 2);
    int64_t s[4];
    int n = 0, c_on_a = 0;
    int64_t end = zkt_now_ms() + POLL_MS;
    while (!c_on_a && zkt_now_ms() < end) {
        char *report = zkt_4lw("wchp");
        n = report ? report_sessions(report, parts[0], s, 4) : -1;
        for (int i = 0; i < n && i < 4; i++)
            if (s[i] == sc)
                c_on_a = 1;
        free(report);
        if (!c_on_a)
            zkt_sleep_ms(20);
    }
    CU_ASSERT(c_on_a);
    CU_ASSERT_EQUAL(atomic_load(&oc.done), 0);

    CU_ASSERT_EQUAL(zkr_mutex_release(a), ZKR_OK);
    other_join(&oc);
    CU_ASSERT_EQUAL(oc.rc, ZKR_OK);
    CU_ASSERT_EQUAL(oc.rc_release, ZKR_OK);
    if (oc.node)
        CU_ASSERT_STRING_EQUAL(oc.node, parts[2]);
    free(oc.node);
    CU_ASSERT_EQUAL(zkt_count_children(zh, path), 0);

    zkr_strings_free(parts, np);
    zkr_mutex_free(a);
    zkr_mutex_free(b);
    zkr_mutex_free(c);
    zkr_client_close(ca);
    zkr_client_close(cb);
    zkr_client_close(cc);
    zkt_raw_close(zh);
}

/* ---- herd effect ------------------------------------------------------------------------- */

#define HERD_N 20

typedef struct herd {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int inside, max_inside;
    int acquired;
    int order[HERD_N];
    int go[HERD_N];
} herd_t;

typedef struct herd_waiter {
    herd_t *h;
    int idx;
    zkr_mutex_t *m;
    pthread_t tid;
    int rc_acquire, rc_release, go_timed_out;
    char *node;
} herd_waiter_t;

static void *herd_main(void *arg)
{
    herd_waiter_t *w = arg;
    herd_t *h = w->h;
    w->rc_acquire = zkr_mutex_acquire(w->m, LONG_WAIT_MS);
    if (w->rc_acquire != ZKR_OK)
        return NULL;
    zkr_mutex_node_path(w->m, &w->node);
    pthread_mutex_lock(&h->mu);
    if (++h->inside > h->max_inside)
        h->max_inside = h->inside;
    h->order[h->acquired++] = w->idx;
    pthread_cond_broadcast(&h->cv);
    struct timespec end;
    clock_gettime(CLOCK_REALTIME, &end);
    end.tv_sec += LONG_WAIT_MS / 1000;
    while (!h->go[w->idx]) {
        if (pthread_cond_timedwait(&h->cv, &h->mu, &end) == ETIMEDOUT) {
            w->go_timed_out = 1;
            break;
        }
    }
    h->inside--;
    pthread_mutex_unlock(&h->mu);
    w->rc_release = zkr_mutex_release(w->m);
    return NULL;
}

typedef struct herd_want {
    herd_t *h;
    int n;
} herd_want_t;

static int herd_acquired_at_least(void *arg)
{
    herd_want_t *w = arg;
    pthread_mutex_lock(&w->h->mu);
    int ok = w->h->acquired >= w->n;
    pthread_mutex_unlock(&w->h->mu);
    return ok;
}

static void test_herd(void)
{
    char path[256];
    zkt_path("herd", path, sizeof path);
    zhandle_t *zh = zkt_raw();
    zkr_client_t *hc = zkt_client(SESSION_MS);
    zkr_mutex_t *hm = new_mutex(hc, path);
    CU_ASSERT_EQUAL_FATAL(zkr_mutex_acquire(hm, 5000), ZKR_OK);

    herd_t h;
    memset(&h, 0, sizeof h);
    pthread_mutex_init(&h.mu, NULL);
    pthread_cond_init(&h.cv, NULL);
    zkr_client_t *wc[HERD_N];
    herd_waiter_t w[HERD_N];
    memset(w, 0, sizeof w);
    for (int i = 0; i < HERD_N; i++) {
        wc[i] = zkt_client(SESSION_MS);
        w[i].h = &h;
        w[i].idx = i;
        w[i].m = new_mutex(wc[i], path);
        w[i].rc_acquire = w[i].rc_release = 1;
    }
    for (int i = 0; i < HERD_N; i++)
        CU_ASSERT_FATAL(pthread_create(&w[i].tid, NULL, herd_main, &w[i]) == 0);

    /* Everyone queued, and every waiter has set its watch. */
    CU_ASSERT(zkt_wait_children(zh, path, HERD_N + 1, POLL_MS));
    dir_watches_t dw = {path, HERD_N};
    CU_ASSERT(zkt_wait_for(dir_watches_are, &dw, POLL_MS));

    char **parts = NULL;
    size_t np = 0;
    CU_ASSERT_EQUAL(zkr_mutex_participants(hm, &parts, &np), ZKR_OK);
    CU_ASSERT_EQUAL_FATAL(np, HERD_N + 1);
    char *holder = NULL;
    CU_ASSERT_EQUAL(zkr_mutex_node_path(hm, &holder), ZKR_OK);
    CU_ASSERT_PTR_NOT_NULL_FATAL(holder);
    CU_ASSERT_STRING_EQUAL(parts[0], holder);

    /* Each node's own session watches it (for outside deletion): the
     * holder and the next in line ZKR__SELF_WATCH_DELAY_MS after they
     * became so, the waiters further back once they have waited
     * ZKR__WAITER_WATCH_DELAY_MS (2 s). */
    for (size_t i = 0; i < np; i++)
        CU_ASSERT(zkt_wait_for(owner_watches_node, parts[i], POLL_MS));
    /* The server's own table: exactly one data watch on each node but the
     * last, set by the session of the node right after it; none on the
     * last node or on the directory; no children watch anywhere. */
    char *report = zkt_4lw("wchp");
    CU_ASSERT_PTR_NOT_NULL_FATAL(report);
    for (size_t i = 0; i < np; i++) {
        int64_t s[4];
        int n = report_sessions(report, parts[i], s, 4);
        if (i + 1 < np) {
            CU_ASSERT_EQUAL(n, 1);
            if (n == 1)
                CU_ASSERT_EQUAL(s[0], owner_of(zh, parts[i + 1]));
        } else {
            CU_ASSERT_EQUAL(n, 0);
        }
    }
    int64_t dummy[1];
    CU_ASSERT_EQUAL(report_sessions(report, path, dummy, 1), 0);
    /* ... and each node watched by its own session, for outside deletion. */
    for (size_t i = 0; i < np; i++)
        CU_ASSERT_EQUAL(zkt_watch_report_sessions(report, parts[i], 1, NULL, 0), 1);
    CU_ASSERT_EQUAL(report_watches_under(report, path), HERD_N);
    free(report);
    CU_ASSERT_EQUAL(zkt_children_watches(), 0);

    /* Hand the lock down the queue: each release wakes exactly one other
     * session.  A release's delete also fires its own session's watch on
     * its node (left on: a notification costs the server less than a
     * request to remove it), counted here as `own`. */
    long long woken0 = zkt_stat_value("mntr", "zk_sum_node_deleted_watch_count");
    int own = zkt_owner_watches(parts[0]) == 1;
    CU_ASSERT_EQUAL(zkr_mutex_release(hm), ZKR_OK);
    for (int k = 0; k < HERD_N; k++) {
        herd_want_t want = {&h, k + 1};
        CU_ASSERT_FATAL(zkt_wait_for(herd_acquired_at_least, &want, POLL_MS));
        /* The remaining waiters still wait on their own predecessors (this
         * query also gives a wrongly woken waiter time to show up). */
        CU_ASSERT_EQUAL(watches_under(path), HERD_N - 1 - k);
        pthread_mutex_lock(&h.mu);
        CU_ASSERT_EQUAL(h.acquired, k + 1);
        CU_ASSERT_EQUAL(h.inside, 1);
        int who = h.order[k];
        own += zkt_owner_watches(parts[k + 1]) == 1;
        h.go[who] = 1;
        pthread_cond_broadcast(&h.cv);
        pthread_mutex_unlock(&h.mu);
        /* FIFO: the k-th to acquire is the (k+1)-th in the queue. */
        CU_ASSERT_PTR_NOT_NULL(w[who].node);
        if (w[who].node)
            CU_ASSERT_STRING_EQUAL(w[who].node, parts[k + 1]);
    }
    for (int i = 0; i < HERD_N; i++) {
        pthread_join(w[i].tid, NULL);
        CU_ASSERT_EQUAL(w[i].rc_acquire, ZKR_OK);
        CU_ASSERT_EQUAL(w[i].rc_release, ZKR_OK);
        CU_ASSERT_EQUAL(w[i].go_timed_out, 0);
    }
    CU_ASSERT_EQUAL(h.max_inside, 1);
    long long woken1 = zkt_stat_value("mntr", "zk_sum_node_deleted_watch_count");
    /* 21 deletions woke 20 waiters in all, one per hand-off, and each
     * deleting session's own watch. */
    CU_ASSERT_EQUAL(own, HERD_N + 1);
    CU_ASSERT_EQUAL(woken1 - woken0, HERD_N + own);
    CU_ASSERT_EQUAL(zkt_count_children(zh, path), 0);

    zkr_strings_free(parts, np);
    free(holder);
    for (int i = 0; i < HERD_N; i++) {
        free(w[i].node);
        zkr_mutex_free(w[i].m);
        zkr_client_close(wc[i]);
    }
    zkr_mutex_free(hm);
    zkr_client_close(hc);
    zkt_raw_close(zh);
    pthread_mutex_destroy(&h.mu);
    pthread_cond_destroy(&h.cv);
}

/* ---- FIFO ----------------------------------------------------------------------------------- */

#define FIFO_N 6

typedef struct fifo {
    pthread_mutex_t mu;
    int order[FIFO_N];
    int n;
} fifo_t;

typedef struct fifo_waiter {
    fifo_t *f;
    int idx;
    zkr_mutex_t *m;
    pthread_t tid;
    int rc_acquire, rc_release;
} fifo_waiter_t;

static void *fifo_main(void *arg)
{
    fifo_waiter_t *w = arg;
    w->rc_acquire = zkr_mutex_acquire(w->m, LONG_WAIT_MS);
    if (w->rc_acquire != ZKR_OK)
        return NULL;
    pthread_mutex_lock(&w->f->mu);
    w->f->order[w->f->n++] = w->idx;
    pthread_mutex_unlock(&w->f->mu);
    w->rc_release = zkr_mutex_release(w->m);
    return NULL;
}

static void test_fifo(void)
{
    char path[256];
    zkt_path("fifo", path, sizeof path);
    zhandle_t *zh = zkt_raw();
    zkr_client_t *hc = zkt_client(SESSION_MS);
    zkr_mutex_t *hm = new_mutex(hc, path);
    CU_ASSERT_EQUAL_FATAL(zkr_mutex_acquire(hm, 5000), ZKR_OK);

    fifo_t f;
    memset(&f, 0, sizeof f);
    pthread_mutex_init(&f.mu, NULL);
    zkr_client_t *wc[FIFO_N];
    fifo_waiter_t w[FIFO_N];
    memset(w, 0, sizeof w);
    /* Start them one at a time, each only once the previous one's node is
     * on the server; alternate between two orders of client creation so
     * the queue order is not the order of session ids. */
    for (int i = 0; i < FIFO_N; i++)
        wc[i] = zkt_client(SESSION_MS);
    for (int i = 0; i < FIFO_N; i++) {
        int ci = (i % 2) ? FIFO_N - 1 - i / 2 : i / 2;
        w[i].f = &f;
        w[i].idx = i;
        w[i].m = new_mutex(wc[ci], path);
        w[i].rc_acquire = w[i].rc_release = 1;
        CU_ASSERT_FATAL(pthread_create(&w[i].tid, NULL, fifo_main, &w[i]) == 0);
        CU_ASSERT_FATAL(zkt_wait_children(zh, path, i + 2, POLL_MS));
    }
    CU_ASSERT_EQUAL(zkr_mutex_release(hm), ZKR_OK);
    for (int i = 0; i < FIFO_N; i++) {
        pthread_join(w[i].tid, NULL);
        CU_ASSERT_EQUAL(w[i].rc_acquire, ZKR_OK);
        CU_ASSERT_EQUAL(w[i].rc_release, ZKR_OK);
    }
    CU_ASSERT_EQUAL(f.n, FIFO_N);
    for (int i = 0; i < FIFO_N && i < f.n; i++)
        CU_ASSERT_EQUAL(f.order[i], i);
    CU_ASSERT_EQUAL(zkt_count_children(zh, path), 0);

    for (int i = 0; i < FIFO_N; i++)
        zkr_mutex_free(w[i].m);
    for (int i = 0; i < FIFO_N; i++)
        zkr_client_close(wc[i]);
    zkr_mutex_free(hm);
    zkr_client_close(hc);
    zkt_raw_close(zh);
    pthread_mutex_destroy(&f.mu);
}

/* ---- a holder killed with SIGKILL -------------------------------------------------------- */

#define KILLED_SESSION_MS 2000

static int killed_holder_child(const char *path, int fd)
{
    zkr_client_t *c = zkt_plain_client(KILLED_SESSION_MS);
    if (!c)
        return 20;
    zkr_mutex_t *m = NULL;
    if (zkr_mutex_new(&m, c, path) != ZKR_OK || zkr_mutex_acquire(m, 20000) != ZKR_OK)
        return 21;
    if (write(fd, "H", 1) != 1)
        return 22;
    for (int i = 0; i < 600; i++) /* the parent kills us long before this */
        zkt_sleep_ms(100);
    return 23;
}

static void test_killed_holder(void)
{
    char path[256];
    zkt_path("killed", path, sizeof path);
    int p[2];
    CU_ASSERT_FATAL(pipe(p) == 0);
    fflush(NULL);
    pid_t pid = fork();
    CU_ASSERT_FATAL(pid >= 0);
    if (pid == 0) {
        close(p[0]);
        _exit(killed_holder_child(path, p[1]));
    }
    close(p[1]);
    int b = zkt_read_byte(p[0], 30000);
    close(p[0]);
    if (b != 'H') {
        kill(pid, SIGKILL);
        zkt_wait_child(pid, 10000);
        CU_FAIL_FATAL("the child did not take the lock");
    }

    zhandle_t *zh = zkt_raw();
    zkr_client_t *c = zkt_client(SESSION_MS);
    zkr_mutex_t *m = new_mutex(c, path);
    CU_ASSERT_EQUAL(zkt_count_children(zh, path), 1);
    CU_ASSERT_EQUAL(zkr_mutex_acquire(m, 0), ZKR_ETIMEDOUT);

    CU_ASSERT_EQUAL(kill(pid, SIGKILL), 0);
    CU_ASSERT_EQUAL(zkt_wait_child(pid, 10000), 128 + SIGKILL);
    /* Queued behind the dead holder's node until its session expires. */
    CU_ASSERT_EQUAL(zkr_mutex_acquire(m, 20000), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_mutex_is_held(m), 1);
    CU_ASSERT_EQUAL(zkt_count_children(zh, path), 1);
    CU_ASSERT_EQUAL(zkr_mutex_release(m), ZKR_OK);
    zkr_mutex_free(m);
    zkr_client_close(c);
    CU_ASSERT_EQUAL(zkt_count_children(zh, path), 0);
    zkt_raw_close(zh);
}

/* ---- fencing tokens ------------------------------------------------------------------------ */

#define FENCE_CLIENTS 3
#define FENCE_ROUNDS 15

static void test_fencing(void)
{
    char path[256];
    zkt_path("fence", path, sizeof path);
    zkr_client_t *c[FENCE_CLIENTS];
    zkr_mutex_t *m[FENCE_CLIENTS];
    for (int i = 0; i < FENCE_CLIENTS; i++) {
        c[i] = zkt_client(SESSION_MS);
        m[i] = new_mutex(c[i], path);
    }
    int64_t last = 0;
    unsigned seed = 12345;
    for (int r = 0; r < FENCE_ROUNDS * FENCE_CLIENTS; r++) {
        int i = (int)(rand_r(&seed) % FENCE_CLIENTS);
        CU_ASSERT_EQUAL_FATAL(zkr_mutex_acquire(m[i], 5000), ZKR_OK);
        int64_t tok = 0, again = 0;
        CU_ASSERT_EQUAL(zkr_mutex_fencing_token(m[i], &tok), ZKR_OK);
        CU_ASSERT(tok > last);
        /* A reentrant hold is the same hold: same token. */
        CU_ASSERT_EQUAL(zkr_mutex_acquire(m[i], 0), ZKR_OK);
        CU_ASSERT_EQUAL(zkr_mutex_fencing_token(m[i], &again), ZKR_OK);
        CU_ASSERT_EQUAL(again, tok);
        CU_ASSERT_EQUAL(zkr_mutex_release(m[i]), ZKR_OK);
        CU_ASSERT_EQUAL(zkr_mutex_release(m[i]), ZKR_OK);
        CU_ASSERT_EQUAL(zkr_mutex_fencing_token(m[i], &again), ZKR_ENOTOWNER);
        last = tok;
    }
    for (int i = 0; i < FENCE_CLIENTS; i++) {
        zkr_mutex_free(m[i]);
        zkr_client_close(c[i]);
    }
}

/* ---- participants -------------------------------------------------------------------------- */

#define PART_WAITERS 3

static void test_participants(void)
{
    char path[256];
    zkt_path("parts", path, sizeof path);
    zhandle_t *zh = zkt_raw();
    zkr_client_t *hc = zkt_client(SESSION_MS);
    zkr_mutex_t *hm = new_mutex(hc, path);

    /* Nothing there yet (the directory does not even exist). */
    char **parts = NULL;
    size_t np = 99;
    CU_ASSERT_EQUAL(zkr_mutex_participants(hm, &parts, &np), ZKR_OK);
    CU_ASSERT_EQUAL(np, 0);
    CU_ASSERT_PTR_NULL(parts);
    zkr_strings_free(parts, np);

    CU_ASSERT_EQUAL_FATAL(zkr_mutex_acquire(hm, 5000), ZKR_OK);
    zkr_client_t *wc[PART_WAITERS];
    zkr_mutex_t *wm[PART_WAITERS];
    other_call_t o[PART_WAITERS];
    for (int i = 0; i < PART_WAITERS; i++) {
        wc[i] = zkt_client(SESSION_MS);
        wm[i] = new_mutex(wc[i], path);
        other_start(&o[i], wm[i], 1, LONG_WAIT_MS, 1);
        CU_ASSERT_FATAL(zkt_wait_children(zh, path, i + 2, POLL_MS));
    }

    CU_ASSERT_EQUAL(zkr_mutex_participants(hm, &parts, &np), ZKR_OK);
    CU_ASSERT_EQUAL_FATAL(np, PART_WAITERS + 1);
    char *holder = NULL;
    CU_ASSERT_EQUAL(zkr_mutex_node_path(hm, &holder), ZKR_OK);
    CU_ASSERT_PTR_NOT_NULL_FATAL(holder);
    CU_ASSERT_STRING_EQUAL(parts[0], holder);

    /* "<path>/_c_<uuid>-lock-<10 digits>", sequence increasing. */
    char pattern[512];
    snprintf(pattern, sizeof pattern,
             "^%s/_c_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}-lock-[0-9]{10}$", path);
    regex_t re;
    CU_ASSERT_EQUAL_FATAL(regcomp(&re, pattern, REG_EXTENDED | REG_NOSUB), 0);
    for (size_t i = 0; i < np; i++) {
        CU_ASSERT_EQUAL(regexec(&re, parts[i], 0, NULL, 0), 0);
        if (i > 0)
            CU_ASSERT(strcmp(parts[i] + strlen(parts[i]) - 10, parts[i - 1] + strlen(parts[i - 1]) - 10) > 0);
        struct Stat st;
        CU_ASSERT_EQUAL(zoo_exists(zh, parts[i], 0, &st), ZOK);
    }
    regfree(&re);
    /* The same list from a waiter's object. */
    char **parts2 = NULL;
    size_t np2 = 0;
    CU_ASSERT_EQUAL(zkr_mutex_participants(wm[0], &parts2, &np2), ZKR_OK);
    CU_ASSERT_EQUAL(np2, np);
    for (size_t i = 0; i < np && i < np2; i++)
        CU_ASSERT_STRING_EQUAL(parts[i], parts2[i]);
    zkr_strings_free(parts2, np2);

    /* Waiters were started in queue order: each one's node is its place. */
    CU_ASSERT_EQUAL(zkr_mutex_release(hm), ZKR_OK);
    for (int i = 0; i < PART_WAITERS; i++) {
        other_join(&o[i]);
        CU_ASSERT_EQUAL(o[i].rc, ZKR_OK);
        CU_ASSERT_EQUAL(o[i].rc_release, ZKR_OK);
        CU_ASSERT_PTR_NOT_NULL(o[i].node);
        if (o[i].node)
            CU_ASSERT_STRING_EQUAL(o[i].node, parts[i + 1]);
        free(o[i].node);
    }
    zkr_strings_free(parts, np);
    CU_ASSERT_EQUAL(zkr_mutex_participants(hm, &parts, &np), ZKR_OK);
    CU_ASSERT_EQUAL(np, 0);
    zkr_strings_free(parts, np);

    free(holder);
    for (int i = 0; i < PART_WAITERS; i++) {
        zkr_mutex_free(wm[i]);
        zkr_client_close(wc[i]);
    }
    zkr_mutex_free(hm);
    zkr_client_close(hc);
    zkt_raw_close(zh);
}

/* ---- revocation ------------------------------------------------------------------------------- */

typedef struct revoked {
    atomic_int n;
    zkr_mutex_t *_Atomic m;
} revoked_t;

static void on_revoke(zkr_mutex_t *m, void *ctx)
{
    revoked_t *r = ctx;
    atomic_store(&r->m, m);
    atomic_fetch_add(&r->n, 1);
}

static void test_revocation(void)
{
    char path[256];
    zkt_path("revoke", path, sizeof path);
    zhandle_t *zh = zkt_raw();
    zkr_client_t *ca = zkt_client(SESSION_MS), *cb = zkt_client(SESSION_MS);
    zkr_mutex_t *a = new_mutex(ca, path), *b = new_mutex(cb, path);
    revoked_t rv;
    atomic_init(&rv.n, 0);
    atomic_init(&rv.m, NULL);
    CU_ASSERT_EQUAL(zkr_mutex_make_revocable(a, on_revoke, &rv), ZKR_OK);
    CU_ASSERT_EQUAL_FATAL(zkr_mutex_acquire(a, 5000), ZKR_OK);
    char *anode = NULL;
    CU_ASSERT_EQUAL_FATAL(zkr_mutex_node_path(a, &anode), ZKR_OK);

    other_call_t o;
    other_start(&o, b, 1, LONG_WAIT_MS, 1);
    CU_ASSERT_FATAL(zkt_wait_children(zh, path, 2, POLL_MS));

    char **parts = NULL;
    size_t np = 0;
    CU_ASSERT_EQUAL_FATAL(zkr_mutex_participants(b, &parts, &np), ZKR_OK);
    CU_ASSERT_EQUAL_FATAL(np, 2);
    CU_ASSERT_STRING_EQUAL(parts[0], anode);
    CU_ASSERT_EQUAL(atomic_load(&rv.n), 0);
    CU_ASSERT_EQUAL(zkr_revoke_request(cb, parts[0]), ZKR_OK);
    CU_ASSERT_FATAL(zkt_wait_for(zkt_flag_set, &rv.n, POLL_MS));
    CU_ASSERT_PTR_EQUAL(atomic_load(&rv.m), a);
    /* What went on the wire: "__REVOKE__" in the holder's node. */
    char buf[32];
    int blen = (int)sizeof buf;
    struct Stat st;
    CU_ASSERT_EQUAL(zoo_get(zh, anode, 0, buf, &blen, &st), ZOK);
    CU_ASSERT_EQUAL(blen, 10);
    CU_ASSERT(blen == 10 && memcmp(buf, "__REVOKE__", 10) == 0);

    /* Revocation is a request: the holder still holds until it releases.
     * A second request is told again (the watch is re-armed). */
    CU_ASSERT_EQUAL(zkr_mutex_is_held(a), 1);
    CU_ASSERT_EQUAL(atomic_load(&o.done), 0);
    CU_ASSERT_EQUAL(zkr_revoke_request(cb, parts[0]), ZKR_OK);
    CU_ASSERT(wait_atomic_at_least(&rv.n, 2, POLL_MS));

    CU_ASSERT_EQUAL(zkr_mutex_release(a), ZKR_OK);
    other_join(&o);
    CU_ASSERT_EQUAL(o.rc, ZKR_OK);
    CU_ASSERT_EQUAL(o.rc_release, ZKR_OK);
    CU_ASSERT_PTR_NOT_NULL(o.node);
    if (o.node)
        CU_ASSERT_STRING_EQUAL(o.node, parts[1]);
    free(o.node);
    int told = atomic_load(&rv.n);

    /* A node that is already gone is not an error. */
    CU_ASSERT_EQUAL(zkr_revoke_request(cb, anode), ZKR_OK);
    /* A hold of b (not revocable) ignores a request. */
    CU_ASSERT_EQUAL_FATAL(zkr_mutex_acquire(b, 5000), ZKR_OK);
    char *bnode = NULL;
    CU_ASSERT_EQUAL_FATAL(zkr_mutex_node_path(b, &bnode), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_revoke_request(ca, bnode), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_mutex_release(b), ZKR_OK);
    CU_ASSERT_EQUAL(atomic_load(&rv.n), told);
    CU_ASSERT_EQUAL(zkt_count_children(zh, path), 0);

    free(bnode);
    free(anode);
    zkr_strings_free(parts, np);
    zkr_mutex_free(a);
    zkr_mutex_free(b);
    zkr_client_close(ca);
    zkr_client_close(cb);
    zkt_raw_close(zh);
}

/* A request written to a waiter's node before it holds: the hold is told
 * at once, inside zkr_mutex_acquire. */
typedef struct revocable_waiter {
    zkr_mutex_t *m;
    revoked_t *rv;
    int rc, rc_release, told_on_return;
    pthread_t tid;
} revocable_waiter_t;

static void *revocable_waiter_main(void *arg)
{
    revocable_waiter_t *w = arg;
    w->rc = zkr_mutex_acquire(w->m, LONG_WAIT_MS);
    w->told_on_return = atomic_load(&w->rv->n);
    if (w->rc == ZKR_OK)
        w->rc_release = zkr_mutex_release(w->m);
    return NULL;
}

static void test_revocation_pending(void)
{
    char path[256];
    zkt_path("revokepending", path, sizeof path);
    zhandle_t *zh = zkt_raw();
    zkr_client_t *ca = zkt_client(SESSION_MS), *cb = zkt_client(SESSION_MS);
    zkr_mutex_t *a = new_mutex(ca, path), *b = new_mutex(cb, path);
    revoked_t rv;
    atomic_init(&rv.n, 0);
    atomic_init(&rv.m, NULL);
    CU_ASSERT_EQUAL(zkr_mutex_make_revocable(b, on_revoke, &rv), ZKR_OK);
    CU_ASSERT_EQUAL_FATAL(zkr_mutex_acquire(a, 5000), ZKR_OK);

    revocable_waiter_t w = {.m = b, .rv = &rv, .rc = 1, .rc_release = 1, .told_on_return = -1};
    CU_ASSERT_FATAL(pthread_create(&w.tid, NULL, revocable_waiter_main, &w) == 0);
    CU_ASSERT_FATAL(zkt_wait_children(zh, path, 2, POLL_MS));
    char **parts = NULL;
    size_t np = 0;
    CU_ASSERT_EQUAL_FATAL(zkr_mutex_participants(a, &parts, &np), ZKR_OK);
    CU_ASSERT_EQUAL_FATAL(np, 2);
    CU_ASSERT_EQUAL(zkr_revoke_request(ca, parts[1]), ZKR_OK);
    /* b is not a holder yet: nobody is told. */
    CU_ASSERT_EQUAL(atomic_load(&rv.n), 0);
    CU_ASSERT_EQUAL(zkr_mutex_release(a), ZKR_OK);
    pthread_join(w.tid, NULL);
    CU_ASSERT_EQUAL(w.rc, ZKR_OK);
    CU_ASSERT_EQUAL(w.told_on_return, 1);
    CU_ASSERT_PTR_EQUAL(atomic_load(&rv.m), b);
    CU_ASSERT_EQUAL(w.rc_release, ZKR_OK);
    CU_ASSERT_EQUAL(zkt_count_children(zh, path), 0);

    zkr_strings_free(parts, np);
    zkr_mutex_free(a);
    zkr_mutex_free(b);
    zkr_client_close(ca);
    zkr_client_close(cb);
    zkt_raw_close(zh);
}

/* ---- bad arguments ---------------------------------------------------------------------------- */

static const char *const bad_paths[] = {
    NULL, "", "relative", "/trailing/", "/a//b", "/zookeeper/x", "/", "/zookeeper", "/a/./b", "/a/../b",
};
#define N_BAD_PATHS (sizeof bad_paths / sizeof bad_paths[0])

static void test_bad_arguments(void)
{
    char path[256];
    zkt_path("badargs", path, sizeof path);
    zkr_client_t *c = zkt_client(SESSION_MS);
    zkr_mutex_t *m = (zkr_mutex_t *)1;

    CU_ASSERT_EQUAL(zkr_mutex_new(NULL, c, path), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_mutex_new(&m, NULL, path), ZKR_EINVAL);
    CU_ASSERT_PTR_NULL(m);
    for (size_t i = 0; i < N_BAD_PATHS; i++) {
        m = (zkr_mutex_t *)1;
        CU_ASSERT_EQUAL(zkr_mutex_new(&m, c, bad_paths[i]), ZKR_EINVAL);
        CU_ASSERT_PTR_NULL(m);
        CU_ASSERT_EQUAL(zkr_revoke_request(c, bad_paths[i]), ZKR_EINVAL);
    }
    CU_ASSERT_EQUAL(zkr_revoke_request(NULL, path), ZKR_EINVAL);

    /* NULL object everywhere. */
    int64_t tok = 0;
    char *np = NULL;
    char **parts = NULL;
    size_t n = 0;
    CU_ASSERT_EQUAL(zkr_mutex_acquire(NULL, 0), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_mutex_acquire(NULL, 100), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_mutex_release(NULL), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_mutex_is_held(NULL), 0);
    CU_ASSERT_EQUAL(zkr_mutex_is_held_by_process(NULL), 0);
    CU_ASSERT_EQUAL(zkr_mutex_set_hold_listener(NULL, NULL, NULL), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_mutex_hold_state(NULL), ZKR_HOLD_NONE);
    CU_ASSERT_EQUAL(zkr_mutex_fencing_token(NULL, &tok), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_mutex_node_path(NULL, &np), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_mutex_participants(NULL, &parts, &n), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_mutex_make_revocable(NULL, on_revoke, NULL), ZKR_EINVAL);
    zkr_mutex_free(NULL);
    zkr_strings_free(NULL, 0);
    zkr_strings_free(NULL, 3);

    /* A good object, NULL outputs. */
    CU_ASSERT_EQUAL_FATAL(zkr_mutex_new(&m, c, path), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_mutex_fencing_token(m, NULL), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_mutex_node_path(m, NULL), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_mutex_participants(m, NULL, &n), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_mutex_participants(m, &parts, NULL), ZKR_EINVAL);
    /* And the not-held answers. */
    CU_ASSERT_EQUAL(zkr_mutex_release(m), ZKR_ENOTOWNER);
    CU_ASSERT_EQUAL(zkr_mutex_fencing_token(m, &tok), ZKR_ENOTOWNER);
    CU_ASSERT_EQUAL(zkr_mutex_node_path(m, &np), ZKR_ENOTOWNER);
    CU_ASSERT_EQUAL(zkr_mutex_is_held(m), 0);
    CU_ASSERT_EQUAL(zkr_mutex_hold_state(m), ZKR_HOLD_NONE);
    /* Still a working mutex after all that. */
    CU_ASSERT_EQUAL(zkr_mutex_acquire(m, 5000), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_mutex_release(m), ZKR_OK);
    zkr_mutex_free(m);

    /* Freeing an object with holds still open releases them. */
    CU_ASSERT_EQUAL_FATAL(zkr_mutex_new(&m, c, path), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_mutex_acquire(m, 5000), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_mutex_acquire(m, 5000), ZKR_OK);
    zkr_mutex_free(m);
    zhandle_t *zh = zkt_raw();
    CU_ASSERT_EQUAL(zkt_count_children(zh, path), 0);
    zkt_raw_close(zh);
    zkr_client_close(c);
}

/* ---- several threads on one object --------------------------------------------------------------- */

static void test_threads_one_object(void)
{
    char path[256];
    zkt_path("oneobj", path, sizeof path);
    zhandle_t *zh = zkt_raw();
    zkr_client_t *c = zkt_client(SESSION_MS);
    zkr_mutex_t *m = new_mutex(c, path);

    CU_ASSERT_EQUAL_FATAL(zkr_mutex_acquire(m, 5000), ZKR_OK);
    char *mine = NULL;
    CU_ASSERT_EQUAL(zkr_mutex_node_path(m, &mine), ZKR_OK);

    /* Not reentrant across threads: another thread on the same object
     * queues behind us with a node of its own. */
    other_call_t quick;
    other_start(&quick, m, 1, 0, 1);
    other_join(&quick);
    CU_ASSERT_EQUAL(quick.rc, ZKR_ETIMEDOUT);
    CU_ASSERT_EQUAL(quick.held_seen, 0);
    CU_ASSERT_EQUAL(zkt_count_children(zh, path), 1);

    other_call_t o;
    other_start(&o, m, 1, LONG_WAIT_MS, 1);
    CU_ASSERT_FATAL(zkt_wait_children(zh, path, 2, POLL_MS));
    /* Its watch on our node is set once its node is queued: the server
     * shows one watch of our session there (its and our own, one session),
     * and it is still blocked. */
    CU_ASSERT(zkt_wait_for(owner_watches_node, mine, POLL_MS));
    dir_watches_t dw = {path, 0};
    CU_ASSERT(zkt_wait_for(dir_watches_are, &dw, POLL_MS));
    CU_ASSERT_EQUAL(atomic_load(&o.done), 0);
    CU_ASSERT_EQUAL(zkr_mutex_is_held(m), 1);
    CU_ASSERT_EQUAL(zkr_mutex_is_held_by_process(m), 1);

    CU_ASSERT_EQUAL(zkr_mutex_release(m), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_mutex_is_held(m), 0);
    other_join(&o);
    CU_ASSERT_EQUAL(o.rc, ZKR_OK);
    CU_ASSERT_EQUAL(o.held_seen, 1);
    CU_ASSERT_EQUAL(o.rc_release, ZKR_OK);
    CU_ASSERT_PTR_NOT_NULL(o.node);
    if (o.node && mine)
        CU_ASSERT_STRING_NOT_EQUAL(o.node, mine);
    free(o.node);
    free(mine);
    CU_ASSERT_EQUAL(zkr_mutex_is_held_by_process(m), 0);
    CU_ASSERT_EQUAL(zkt_count_children(zh, path), 0);

    zkr_mutex_free(m);
    zkr_client_close(c);
    zkt_raw_close(zh);
}

/* ---- registration --------------------------------------------------------------------------------- */

static void add_suites(void)
{
    CU_pSuite s = CU_add_suite("mutex", NULL, NULL);
    CU_add_test(s, "bad arguments", test_bad_arguments);
    CU_add_test(s, "reentrancy: 3 acquires need 3 releases; not owner", test_reentrancy);
    CU_add_test(s, "timeouts 0 and 200 ms leave no node behind", test_timeouts);
    CU_add_test(s, "several threads on one object queue separately", test_threads_one_object);
    CU_add_test(s, "participants: holder first, full protected names", test_participants);
    CU_add_test(s, "FIFO: waiters acquire in queue order", test_fifo);
    CU_add_test(s, "fencing tokens increase across holders", test_fencing);
    CU_add_test(s, "revocation: request, callback, hand-over", test_revocation);
    CU_add_test(s, "revocation requested before the hold: told inside acquire", test_revocation_pending);
    CU_add_test(s, "a waiter gives up mid-queue: the next one re-targets its watch", test_abandoned_middle);
    CU_add_test(s, "herd: one watch per waiter on its predecessor, one wake per release", test_herd);
    CU_add_test(s, "holder SIGKILLed: waiter acquires after session expiry", test_killed_holder);
    CU_add_test(s, "mutual exclusion: threads, shared object, processes", test_mutual_exclusion);
}

int main(void)
{
    return zkt_main("mutex", add_suites);
}

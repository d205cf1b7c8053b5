/* zkr_semaphore (Curator InterProcessSemaphoreV2) and zkr_semaphore_mutex
 * (InterProcessSemaphoreMutex) against a real server: the lease limit under
 * stress, all-or-nothing acquire_n, the shared count, a SIGKILLed holder,
 * no orphan lease after timeouts, only the locks/ holder watching the
 * leases, the non-reentrant mutex, bad arguments.
 *
 * Threads never call CUnit: they record what happened and the main thread
 * asserts after joining them.  A child process is forked before the test
 * opens any client or handle and opens its own client. */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <regex.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/harness/zkr_test.h"

#define SESSION_MS 10000
#define LONG_WAIT_MS 60000 /* bound on any acquire that must succeed */
#define POLL_MS 20000      /* bound on polling for a condition */

/* ---- small helpers -------------------------------------------------------------- */

static zkr_semaphore_t *new_sem(zkr_client_t *c, const char *path, int max)
{
    zkr_semaphore_t *s = NULL;
    CU_ASSERT_EQUAL_FATAL(zkr_semaphore_new(&s, c, path, max), ZKR_OK);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    return s;
}

/* "<path>/leases" and "<path>/locks". */
typedef struct sem_dirs {
    char leases[300];
    char locks[300];
} sem_dirs_t;

static void dirs_of(sem_dirs_t *d, const char *path)
{
    snprintf(d->leases, sizeof d->leases, "%s/leases", path);
    snprintf(d->locks, sizeof d->locks, "%s/locks", path);
}

/* 1 if the children of dir are exactly the basenames of paths[0..n). */
/* The lease's node path: the caller's (zkr_free). */
static char *lease_path(const zkr_lease_t *l)
{
    char *p = NULL;
    CU_ASSERT_EQUAL(zkr_lease_node_path(l, &p), ZKR_OK);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    return p;
}

static int children_are(zhandle_t *zh, const char *dir, const char *const *paths, int n)
{
    struct String_vector sv = {0, NULL};
    if (zoo_get_children(zh, dir, 0, &sv) != ZOK)
        return 0;
    int ok = sv.count == n;
    for (int i = 0; ok && i < n; i++) {
        const char *base = strrchr(paths[i], '/');
        int found = 0;
        for (int32_t j = 0; base && j < sv.count; j++)
            if (strcmp(sv.data[j], base + 1) == 0)
                found = 1;
        ok = found;
    }
    deallocate_String_vector(&sv);
    return ok;
}

/* ---- the server's watch tables (see test_mutex.c) ------------------------------------- */

/* Waiters' data watches under dir (each node's own watch by its owner, for
 * outside deletion, left out). */
static int watches_under(const char *dir)
{
    return zkt_waiter_watches_under(dir);
}

/* ---- child processes ---------------------------------------------------------------------- */

/* ---- at most N holders under stress ----------------------------------------------------------- */

#define MAX_LEASES 3
#define ST_THREADS 8
#define ST_CYCLES 40

typedef struct sem_stress {
    atomic_int inside;
    atomic_int max_inside;
    atomic_int violations;
    atomic_int errors;
    atomic_int first_error;
    atomic_int running;
    atomic_long cycles;
} sem_stress_t;

typedef struct sem_worker {
    pthread_t tid;
    sem_stress_t *st;
    zkr_semaphore_t *s;
    unsigned seed;
} sem_worker_t;

static void stress_error(sem_stress_t *st, int rc)
{
    int zero = 0;
    atomic_fetch_add(&st->errors, 1);
    atomic_compare_exchange_strong(&st->first_error, &zero, rc);
}

static void *sem_worker_main(void *arg)
{
    sem_worker_t *w = arg;
    sem_stress_t *st = w->st;
    for (int i = 0; i < ST_CYCLES; i++) {
        zkt_jitter(&w->seed, 1000);
        zkr_lease_t *l = NULL;
        int rc = zkr_semaphore_acquire(w->s, LONG_WAIT_MS, &l);
        if (rc != ZKR_OK || !l) {
            stress_error(st, rc != ZKR_OK ? rc : -100);
            break;
        }
        int now = atomic_fetch_add(&st->inside, 1) + 1;
        if (now > MAX_LEASES)
            atomic_fetch_add(&st->violations, 1);
        int m = atomic_load(&st->max_inside);
        while (now > m && !atomic_compare_exchange_weak(&st->max_inside, &m, now)) {
        }
        if (zkr_lease_hold_state(l) != ZKR_HOLD_SAFE)
            stress_error(st, -101);
        /* Hold long against the time an acquire takes (acquirers pass
         * locks/ one at a time), so that the semaphore stays full. */
        struct timespec hold = {0, (long)(5 + rand_r(&w->seed) % 20) * 1000000L};
        nanosleep(&hold, NULL);
        atomic_fetch_sub(&st->inside, 1);
        atomic_fetch_add(&st->cycles, 1);
        rc = zkr_lease_release(l);
        if (rc != ZKR_OK)
            stress_error(st, rc);
    }
    atomic_fetch_sub(&st->running, 1);
    return NULL;
}

static void test_max_holders(void)
{
    char path[256];
    zkt_path("semstress", path, sizeof path);
    sem_dirs_t d;
    dirs_of(&d, path);
    zhandle_t *zh = zkt_raw();
    sem_stress_t st;
    memset(&st, 0, sizeof st);
    zkr_client_t *c[ST_THREADS];
    sem_worker_t w[ST_THREADS];
    memset(w, 0, sizeof w);
    for (int i = 0; i < ST_THREADS; i++) {
        c[i] = zkt_client(SESSION_MS);
        w[i].s = new_sem(c[i], path, MAX_LEASES);
        w[i].st = &st;
        w[i].seed = 77u + (unsigned)i;
    }
    atomic_store(&st.running, ST_THREADS);
    for (int i = 0; i < ST_THREADS; i++)
        CU_ASSERT_FATAL(pthread_create(&w[i].tid, NULL, sem_worker_main, &w[i]) == 0);

    /* Meanwhile, on the server: at most one lease node per client: its
     * granted lease, the one its locks/ holder decides about, or one sent
     * ahead behind its locks/ node (a semaphore's first acquire, and one
     * whose last acquire found locks/ free at once, send it; it is
     * withdrawn if locks/ is not theirs).  So the granted ones plus the
     * deciding one, as the holders count (max_inside above), and up to
     * one more per client sent ahead: not more than one per client. */
    int most = 0, samples = 0;
    int64_t end = zkt_now_ms() + 120000;
    while (atomic_load(&st.running) > 0 && zkt_now_ms() < end) {
        int n = zkt_count_children(zh, d.leases);
        if (n > most)
            most = n;
        samples++;
        zkt_sleep_ms(5);
    }
    for (int i = 0; i < ST_THREADS; i++)
        pthread_join(w[i].tid, NULL);

    CU_ASSERT_EQUAL(atomic_load(&st.errors), 0);
    if (atomic_load(&st.errors))
        printf("\n  first error: %s\n", zkr_err_name(atomic_load(&st.first_error)));
    CU_ASSERT_EQUAL(atomic_load(&st.violations), 0);
    CU_ASSERT(atomic_load(&st.max_inside) <= MAX_LEASES);
    CU_ASSERT_EQUAL(atomic_load(&st.cycles), (long)ST_THREADS * ST_CYCLES);
    CU_ASSERT(samples > 0);
    CU_ASSERT(most <= ST_THREADS);
    printf("\n    most lease nodes seen at once: %d (%d granted at most) ", most, atomic_load(&st.max_inside));
    CU_ASSERT_EQUAL(zkt_count_children(zh, d.leases), 0);
    CU_ASSERT_TRUE(zkt_wait_children(zh, d.locks, 0, 5000)); /* (its delete is not waited for) */

    for (int i = 0; i < ST_THREADS; i++) {
        zkr_semaphore_free(w[i].s);
        zkr_client_close(c[i]);
    }
    zkt_raw_close(zh);
}

/* ---- acquire_n: all or nothing ------------------------------------------------------------------ */

static void test_acquire_n(void)
{
    char path[256];
    zkt_path("semn", path, sizeof path);
    sem_dirs_t d;
    dirs_of(&d, path);
    zhandle_t *zh = zkt_raw();
    zkr_client_t *ca = zkt_client(SESSION_MS), *cb = zkt_client(SESSION_MS);
    zkr_semaphore_t *a = new_sem(ca, path, 4), *b = new_sem(cb, path, 4);

    zkr_lease_t *theirs[2] = {NULL, NULL};
    CU_ASSERT_EQUAL_FATAL(zkr_semaphore_acquire_n(a, 2, 5000, theirs), ZKR_OK);
    CU_ASSERT_PTR_NOT_NULL_FATAL(theirs[0]);
    CU_ASSERT_PTR_NOT_NULL_FATAL(theirs[1]);
    char *their_paths[2] = {lease_path(theirs[0]), lease_path(theirs[1])};
    CU_ASSERT_STRING_NOT_EQUAL(their_paths[0], their_paths[1]);
    CU_ASSERT_EQUAL(zkt_count_children(zh, d.leases), 2);

    /* The lease names: "<path>/leases/_c_<uuid>-lease-<10 digits>". */
    char pattern[512];
    snprintf(pattern, sizeof pattern,
             "^%s/_c_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}-lease-[0-9]{10}$",
             d.leases);
    regex_t re;
    CU_ASSERT_EQUAL_FATAL(regcomp(&re, pattern, REG_EXTENDED | REG_NOSUB), 0);
    CU_ASSERT_EQUAL(regexec(&re, their_paths[0], 0, NULL, 0), 0);
    CU_ASSERT_EQUAL(regexec(&re, their_paths[1], 0, NULL, 0), 0);
    regfree(&re);

    /* 3 more than the 2 left: nothing at all, after the deadline. */
    zkr_lease_t *ours[3] = {(zkr_lease_t *)1, (zkr_lease_t *)1, (zkr_lease_t *)1};
    int64_t t0 = zkt_now_ms();
    CU_ASSERT_EQUAL(zkr_semaphore_acquire_n(b, 3, 300, ours), ZKR_ETIMEDOUT);
    CU_ASSERT(zkt_now_ms() - t0 >= 295);
    CU_ASSERT_PTR_NULL(ours[0]);
    CU_ASSERT_PTR_NULL(ours[1]);
    CU_ASSERT_PTR_NULL(ours[2]);
    CU_ASSERT(children_are(zh, d.leases, (const char *const *)their_paths, 2));
    CU_ASSERT_TRUE(zkt_wait_children(zh, d.locks, 0, 5000)); /* (its delete is not waited for) */

    /* Participants: every lease, in order. */
    char **parts = NULL;
    size_t np = 0;
    CU_ASSERT_EQUAL(zkr_semaphore_participants(b, &parts, &np), ZKR_OK);
    CU_ASSERT_EQUAL(np, 2);
    if (np == 2) {
        CU_ASSERT_STRING_EQUAL(parts[0], their_paths[0]);
        CU_ASSERT_STRING_EQUAL(parts[1], their_paths[1]);
    }
    zkr_strings_free(parts, np);

    /* 2 fit. */
    zkr_lease_t *two[2] = {NULL, NULL};
    CU_ASSERT_EQUAL(zkr_semaphore_acquire_n(b, 2, 5000, two), ZKR_OK);
    CU_ASSERT_PTR_NOT_NULL(two[0]);
    CU_ASSERT_PTR_NOT_NULL(two[1]);
    CU_ASSERT_EQUAL(zkt_count_children(zh, d.leases), 4);
    CU_ASSERT_TRUE(zkt_wait_children(zh, d.locks, 0, 5000)); /* (its delete is not waited for) */
    /* Full now. */
    zkr_lease_t *one = (zkr_lease_t *)1;
    CU_ASSERT_EQUAL(zkr_semaphore_acquire(b, 0, &one), ZKR_ETIMEDOUT);
    CU_ASSERT_PTR_NULL(one);
    CU_ASSERT_EQUAL(zkt_count_children(zh, d.leases), 4);

    CU_ASSERT_EQUAL(zkr_lease_release_all(two, 2), ZKR_OK);
    CU_ASSERT_PTR_NULL(two[0]);
    CU_ASSERT_PTR_NULL(two[1]);
    CU_ASSERT(children_are(zh, d.leases, (const char *const *)their_paths, 2));

    /* Leases outlive the semaphore object that made them. */
    zkr_semaphore_free(a);
    CU_ASSERT_EQUAL(zkt_count_children(zh, d.leases), 2);
    CU_ASSERT_EQUAL(zkr_lease_release(theirs[0]), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_lease_release(theirs[1]), ZKR_OK);
    CU_ASSERT_EQUAL(zkt_count_children(zh, d.leases), 0);

    zkr_semaphore_free(b);
    zkr_client_close(ca);
    zkr_client_close(cb);
    zkt_raw_close(zh);
    zkr_free(their_paths[0]);
    zkr_free(their_paths[1]);
}

/* ---- shared count -------------------------------------------------------------------------------- */

typedef struct sem_call {
    zkr_semaphore_t *s;
    int64_t timeout_ms;
    int rc;
    zkr_lease_t *lease;
    atomic_int done;
    pthread_t tid;
} sem_call_t;

static void *sem_call_main(void *arg)
{
    sem_call_t *sc = arg;
    sc->rc = zkr_semaphore_acquire(sc->s, sc->timeout_ms, &sc->lease);
    atomic_store(&sc->done, 1);
    return NULL;
}

static void sem_call_start(sem_call_t *sc, zkr_semaphore_t *s, int64_t timeout_ms)
{
    memset(sc, 0, sizeof *sc);
    sc->s = s;
    sc->timeout_ms = timeout_ms;
    sc->rc = 1;
    CU_ASSERT_FATAL(pthread_create(&sc->tid, NULL, sem_call_main, sc) == 0);
}

static void test_shared_count(void)
{
    char path[256], count[256], bad[256], missing[256];
    zkt_path("semshared", path, sizeof path);
    zkt_path("count", count, sizeof count);
    zkt_path("badcount", bad, sizeof bad);
    zkt_path("nocount", missing, sizeof missing);
    sem_dirs_t d;
    dirs_of(&d, path);
    zhandle_t *zh = zkt_raw();
    zkr_client_t *ca = zkt_client(SESSION_MS), *cb = zkt_client(SESSION_MS);

    /* The count node: 4 bytes, big-endian, signed (Curator SharedCount). */
    int32_t v = 0;
    CU_ASSERT_EQUAL(zkr_shared_count_get(ca, count, &v), ZKR_ENONODE);
    /* A count below one can never grant: refused, nothing written. */
    CU_ASSERT_EQUAL(zkr_shared_count_set(ca, count, -5), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zoo_exists(zh, count, 0, NULL), ZNONODE);
    /* Another program (Curator's SharedCount) may write one: read as signed. */
    CU_ASSERT_EQUAL(zoo_create(zh, "/zkr-test", "", 0, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0) == ZOK ||
                        zoo_exists(zh, "/zkr-test", 0, NULL) == ZOK,
                    1);
    CU_ASSERT_EQUAL(zoo_create(zh, count, "\xff\xff\xff\xfb", 4, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0), ZOK);
    CU_ASSERT_EQUAL(zkr_shared_count_get(cb, count, &v), ZKR_OK);
    CU_ASSERT_EQUAL(v, -5);
    char raw[16];
    int rlen = (int)sizeof raw;
    struct Stat stt;
    CU_ASSERT_EQUAL(zkr_shared_count_set(ca, count, 1), ZKR_OK);
    rlen = (int)sizeof raw;
    CU_ASSERT_EQUAL(zoo_get(zh, count, 0, raw, &rlen, &stt), ZOK);
    CU_ASSERT(rlen == 4 && memcmp(raw, "\0\0\0\1", 4) == 0);
    CU_ASSERT_EQUAL(zkr_shared_count_get(cb, count, &v), ZKR_OK);
    CU_ASSERT_EQUAL(v, 1);

    zkr_semaphore_t *a = NULL, *b = NULL;
    CU_ASSERT_EQUAL_FATAL(zkr_semaphore_new_shared(&a, ca, path, count), ZKR_OK);
    CU_ASSERT_EQUAL_FATAL(zkr_semaphore_new_shared(&b, cb, path, count), ZKR_OK);
    zkr_lease_t *held = NULL;
    CU_ASSERT_EQUAL_FATAL(zkr_semaphore_acquire(a, 5000, &held), ZKR_OK);

    /* The waiter is in (its lease waits for room), and stays there. */
    sem_call_t w;
    sem_call_start(&w, b, 20000);
    CU_ASSERT(zkt_wait_children(zh, d.leases, 2, POLL_MS));
    CU_ASSERT_EQUAL(zkt_count_children(zh, d.locks), 1);
    CU_ASSERT_EQUAL(atomic_load(&w.done), 0);

    /* Raising the count lets it in; the holder has not released. */
    CU_ASSERT_EQUAL(zkr_shared_count_set(ca, count, 2), ZKR_OK);
    CU_ASSERT(zkt_wait_for(zkt_flag_set, &w.done, POLL_MS));
    pthread_join(w.tid, NULL);
    CU_ASSERT_EQUAL(w.rc, ZKR_OK);
    CU_ASSERT_PTR_NOT_NULL(w.lease);
    CU_ASSERT_EQUAL(zkr_lease_hold_state(held), ZKR_HOLD_SAFE);
    CU_ASSERT_EQUAL(zkt_count_children(zh, d.leases), 2);
    CU_ASSERT_TRUE(zkt_wait_children(zh, d.locks, 0, 5000)); /* (its delete is not waited for) */
    CU_ASSERT_EQUAL(zkr_lease_release(w.lease), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_lease_release(held), ZKR_OK);
    CU_ASSERT_EQUAL(zkt_count_children(zh, d.leases), 0);
    zkr_semaphore_free(a);
    zkr_semaphore_free(b);

    /* A count node that is not 4 bytes. */
    CU_ASSERT_EQUAL_FATAL(zoo_create(zh, bad, "abc", 3, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0), ZOK);
    CU_ASSERT_EQUAL(zkr_shared_count_get(ca, bad, &v), ZKR_EBADDATA);
    CU_ASSERT_EQUAL_FATAL(zkr_semaphore_new_shared(&a, ca, path, bad), ZKR_OK);
    zkr_lease_t *l = (zkr_lease_t *)1;
    CU_ASSERT_EQUAL(zkr_semaphore_acquire(a, 1000, &l), ZKR_EBADDATA);
    CU_ASSERT_PTR_NULL(l);
    CU_ASSERT_EQUAL(zkt_count_children(zh, d.leases), 0);
    CU_ASSERT_TRUE(zkt_wait_children(zh, d.locks, 0, 5000)); /* (its delete is not waited for) */
    /* Longer than 4 bytes is just as bad (and so is empty). */
    CU_ASSERT_EQUAL(zoo_set(zh, bad, "\0\0\0\1\0\0\0\1\0\0\0\1", 12, -1), ZOK);
    CU_ASSERT_EQUAL(zkr_shared_count_get(ca, bad, &v), ZKR_EBADDATA);
    CU_ASSERT_EQUAL(zkr_semaphore_acquire(a, 1000, &l), ZKR_EBADDATA);
    CU_ASSERT_EQUAL(zoo_set(zh, bad, "", 0, -1), ZOK);
    CU_ASSERT_EQUAL(zkr_shared_count_get(ca, bad, &v), ZKR_EBADDATA);
    CU_ASSERT_EQUAL(zkr_semaphore_acquire(a, 1000, &l), ZKR_EBADDATA);
    CU_ASSERT_PTR_NULL(l);
    CU_ASSERT_EQUAL(zkt_count_children(zh, d.leases), 0);
    CU_ASSERT_TRUE(zkt_wait_children(zh, d.locks, 0, 5000)); /* (its delete is not waited for) */
    zkr_semaphore_free(a);

    /* No count node at all. */
    CU_ASSERT_EQUAL_FATAL(zkr_semaphore_new_shared(&a, ca, path, missing), ZKR_OK);
    l = (zkr_lease_t *)1;
    CU_ASSERT_EQUAL(zkr_semaphore_acquire(a, 1000, &l), ZKR_ENONODE);
    CU_ASSERT_PTR_NULL(l);
    CU_ASSERT_EQUAL(zkr_shared_count_get(ca, missing, &v), ZKR_ENONODE);
    CU_ASSERT_EQUAL(zkt_count_children(zh, d.leases), 0);
    CU_ASSERT_TRUE(zkt_wait_children(zh, d.locks, 0, 5000)); /* (its delete is not waited for) */
    zkr_semaphore_free(a);

    zkr_client_close(ca);
    zkr_client_close(cb);
    zkt_raw_close(zh);
}

/* ---- a holder killed with SIGKILL --------------------------------------------------------------- */

#define KILLED_SESSION_MS 2000

static int killed_holder_child(const char *path, int fd)
{
    zkr_client_t *c = zkt_plain_client(KILLED_SESSION_MS);
    if (!c)
        return 20;
    zkr_semaphore_t *s = NULL;
    zkr_lease_t *l = NULL;
    if (zkr_semaphore_new(&s, c, path, 1) != ZKR_OK || zkr_semaphore_acquire(s, 20000, &l) != ZKR_OK)
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
    zkt_path("semkilled", path, sizeof path);
    sem_dirs_t d;
    dirs_of(&d, path);
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
        CU_FAIL_FATAL("the child did not take the lease");
    }

    zhandle_t *zh = zkt_raw();
    zkr_client_t *c = zkt_client(SESSION_MS);
    zkr_semaphore_t *s = new_sem(c, path, 1);
    CU_ASSERT_EQUAL(zkt_count_children(zh, d.leases), 1);
    zkr_lease_t *l = NULL;
    CU_ASSERT_EQUAL(zkr_semaphore_acquire(s, 0, &l), ZKR_ETIMEDOUT);
    CU_ASSERT_EQUAL(zkt_count_children(zh, d.leases), 1);

    CU_ASSERT_EQUAL(kill(pid, SIGKILL), 0);
    CU_ASSERT_EQUAL(zkt_wait_child(pid, 10000), 128 + SIGKILL);
    CU_ASSERT_EQUAL(zkr_semaphore_acquire(s, 20000, &l), ZKR_OK);
    CU_ASSERT_PTR_NOT_NULL(l);
    CU_ASSERT_EQUAL(zkt_count_children(zh, d.leases), 1);
    CU_ASSERT_TRUE(zkt_wait_children(zh, d.locks, 0, 5000)); /* (its delete is not waited for) */
    CU_ASSERT_EQUAL(zkr_lease_release(l), ZKR_OK);
    zkr_semaphore_free(s);
    zkr_client_close(c);
    CU_ASSERT_EQUAL(zkt_count_children(zh, d.leases), 0);
    CU_ASSERT_TRUE(zkt_wait_children(zh, d.locks, 0, 5000)); /* (its delete is not waited for) */
    zkt_raw_close(zh);
}

/* ---- timeouts leave no orphan lease ---------------------------------------------------------------- */

#define TO_THREADS 4
#define TO_ROUNDS 5

typedef struct to_worker {
    pthread_t tid;
    zkr_semaphore_t *s;
    int unexpected; /* results other than ZKR_ETIMEDOUT */
    int last_rc;
    int leaked;     /* a lease handed out anyway */
} to_worker_t;

static void *to_worker_main(void *arg)
{
    to_worker_t *w = arg;
    for (int i = 0; i < 2 * TO_ROUNDS; i++) {
        zkr_lease_t *l = NULL;
        int rc = zkr_semaphore_acquire(w->s, (i % 2) ? 100 : 0, &l);
        if (rc != ZKR_ETIMEDOUT) {
            w->unexpected++;
            w->last_rc = rc;
        }
        if (l) {
            w->leaked++;
            zkr_lease_release(l);
        }
    }
    return NULL;
}

static void test_no_orphans(void)
{
    char path[256];
    zkt_path("semorphan", path, sizeof path);
    sem_dirs_t d;
    dirs_of(&d, path);
    zhandle_t *zh = zkt_raw();
    zkr_client_t *ca = zkt_client(SESSION_MS), *cb = zkt_client(SESSION_MS);
    zkr_semaphore_t *a = new_sem(ca, path, 2), *b = new_sem(cb, path, 2);
    zkr_lease_t *la = NULL, *lb = NULL;
    CU_ASSERT_EQUAL_FATAL(zkr_semaphore_acquire(a, 5000, &la), ZKR_OK);
    CU_ASSERT_EQUAL_FATAL(zkr_semaphore_acquire(b, 5000, &lb), ZKR_OK);
    char *held[2] = {lease_path(la), lease_path(lb)};

    zkr_client_t *wc[TO_THREADS];
    to_worker_t w[TO_THREADS];
    memset(w, 0, sizeof w);
    for (int i = 0; i < TO_THREADS; i++) {
        wc[i] = zkt_client(SESSION_MS);
        w[i].s = new_sem(wc[i], path, 2);
        CU_ASSERT_FATAL(pthread_create(&w[i].tid, NULL, to_worker_main, &w[i]) == 0);
    }
    for (int i = 0; i < TO_THREADS; i++) {
        pthread_join(w[i].tid, NULL);
        CU_ASSERT_EQUAL(w[i].unexpected, 0);
        if (w[i].unexpected)
            printf("\n  unexpected: %s\n", zkr_err_name(w[i].last_rc));
        CU_ASSERT_EQUAL(w[i].leaked, 0);
    }
    /* Exactly the holders' leases; nobody left in locks/. */
    CU_ASSERT(children_are(zh, d.leases, (const char *const *)held, 2));
    CU_ASSERT_TRUE(zkt_wait_children(zh, d.locks, 0, 5000)); /* (its delete is not waited for) */

    /* And the semaphore still works for the ones that timed out. */
    CU_ASSERT_EQUAL(zkr_lease_release(la), ZKR_OK);
    zkr_lease_t *l = NULL;
    CU_ASSERT_EQUAL(zkr_semaphore_acquire(w[0].s, 0, &l), ZKR_OK);
    CU_ASSERT_EQUAL(zkt_count_children(zh, d.leases), 2);
    CU_ASSERT_EQUAL(zkr_lease_release(l), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_lease_release(lb), ZKR_OK);
    CU_ASSERT_EQUAL(zkt_count_children(zh, d.leases), 0);

    for (int i = 0; i < TO_THREADS; i++) {
        zkr_semaphore_free(w[i].s);
        zkr_client_close(wc[i]);
    }
    zkr_semaphore_free(a);
    zkr_semaphore_free(b);
    zkr_client_close(ca);
    zkr_client_close(cb);
    zkt_raw_close(zh);
    zkr_free(held[0]);
    zkr_free(held[1]);
}

/* ---- a lease made ahead of locks/ is withdrawn while another holds locks/ ----------------- */

typedef struct spec_worker {
    pthread_t tid;
    zkr_semaphore_t *s;
    zkr_lease_t *lease;
    int rc;
    atomic_int returned;
} spec_worker_t;

static void *spec_worker_main(void *arg)
{
    spec_worker_t *w = arg;
    w->rc = zkr_semaphore_acquire(w->s, 10000, &w->lease);
    atomic_store(&w->returned, 1);
    return NULL;
}

/* The acquire sends its lease's create behind the locks/ node's when the
 * last acquire found locks/ free.  If locks/ turns out to be held (here by
 * a node another session made, as a Curator process holding locks/ would),
 * that lease must not stand while we wait: the locks/ holder counts the
 * leases to know whether it has room. */
typedef struct spec_dirs {
    zhandle_t *zh;
    const char *leases, *locks;
} spec_dirs_t;

/* The waiter made its lease ahead and withdrew it: leases/ has changed
 * three times (the holder's lease, the one made ahead, its delete) and
 * holds one; locks/ holds the outside holder's node and the waiter's. */
static int spec_lease_withdrawn(void *arg)
{
    spec_dirs_t *d = arg;
    struct Stat st;
    return zoo_exists(d->zh, d->leases, 0, &st) == ZOK && st.cversion >= 3 && st.numChildren == 1 &&
           zkt_count_children(d->zh, d->locks) == 2;
}

static void test_speculative_lease_withdrawn(void)
{
    char path[256], node[400], made[400];
    zkt_path("semspec", path, sizeof path);
    sem_dirs_t d;
    dirs_of(&d, path);
    zhandle_t *zh = zkt_raw();
    zkr_client_t *ch = zkt_client(SESSION_MS), *cb = zkt_client(SESSION_MS);
    zkr_semaphore_t *h = new_sem(ch, path, 1);
    zkr_lease_t *lh = NULL;
    CU_ASSERT_EQUAL_FATAL(zkr_semaphore_acquire(h, 5000, &lh), ZKR_OK); /* lease-0000000000 */
    /* Another session holds locks/. */
    snprintf(node, sizeof node, "%s/_c_00000000-0000-4000-8000-000000000000-lock-", d.locks);
    CU_ASSERT_EQUAL_FATAL(zoo_create(zh, node, "", 0, &ZOO_OPEN_ACL_UNSAFE, ZOO_EPHEMERAL | ZOO_SEQUENCE, made,
                                     sizeof made),
                          ZOK);
    spec_worker_t w = {.s = new_sem(cb, path, 1)};
    CU_ASSERT_FATAL(pthread_create(&w.tid, NULL, spec_worker_main, &w) == 0);
    /* While it waits for locks/, only the holder's lease stands (a lease
     * that stays is never withdrawn: the wait runs out). */
    spec_dirs_t sd = {zh, d.leases, d.locks};
    CU_ASSERT_TRUE(zkt_wait_for(spec_lease_withdrawn, &sd, 10000));
    CU_ASSERT_EQUAL(atomic_load(&w.returned), 0);
    CU_ASSERT_EQUAL(zkt_count_children(zh, d.leases), 1);
    CU_ASSERT_EQUAL(zkt_count_children(zh, d.locks), 2);
    /* locks/ comes free and the lease goes back: the waiter gets in, with
     * a new lease made under locks/. */
    CU_ASSERT_EQUAL(zkr_lease_release(lh), ZKR_OK);
    CU_ASSERT_EQUAL(zoo_delete(zh, made, -1), ZOK);
    pthread_join(w.tid, NULL);
    CU_ASSERT_EQUAL(w.rc, ZKR_OK);
    if (w.rc == ZKR_OK) {
        char *lp = lease_path(w.lease);
        /* 0 was the holder's; 1 the lease made ahead and withdrawn */
        CU_ASSERT_TRUE(strlen(lp) > 10 && strcmp(lp + strlen(lp) - 10, "0000000002") == 0);
        char *held[1] = {lp};
        CU_ASSERT(children_are(zh, d.leases, (const char *const *)held, 1));
        zkr_free(lp);
        CU_ASSERT_TRUE(zkt_wait_children(zh, d.locks, 0, 5000)); /* (its delete is not waited for) */
        CU_ASSERT_EQUAL(zkr_lease_release(w.lease), ZKR_OK);
    }
    /* Uncontended now: the next acquire makes its lease ahead again and
     * keeps it (one lease number used, none withdrawn). */
    zkr_lease_t *l = NULL;
    CU_ASSERT_EQUAL(zkr_semaphore_acquire(w.s, 5000, &l), ZKR_OK); /* locks/ free: speculate next time */
    CU_ASSERT_EQUAL(zkr_lease_release(l), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_semaphore_acquire(w.s, 5000, &l), ZKR_OK);
    if (l) {
        char *lp = lease_path(l);
        CU_ASSERT_TRUE(strlen(lp) > 10 && strcmp(lp + strlen(lp) - 10, "0000000004") == 0);
        zkr_free(lp);
        CU_ASSERT_EQUAL(zkr_lease_release(l), ZKR_OK);
    }
    CU_ASSERT_EQUAL(zkt_count_children(zh, d.leases), 0);
    CU_ASSERT_TRUE(zkt_wait_children(zh, d.locks, 0, 5000)); /* (its delete is not waited for) */
    zkr_semaphore_free(w.s);
    zkr_semaphore_free(h);
    zkr_client_close(cb);
    zkr_client_close(ch);
    zkt_raw_close(zh);
}

/* ---- only the locks/ holder watches the leases ------------------------------------------------------ */

#define NH_WAITERS 4

typedef struct nh_waiter {
    pthread_t tid;
    zkr_semaphore_t *s;
    int rc, rc_return;
} nh_waiter_t;

static void *nh_main(void *arg)
{
    nh_waiter_t *w = arg;
    zkr_lease_t *l = NULL;
    w->rc = zkr_semaphore_acquire(w->s, LONG_WAIT_MS, &l);
    w->rc_return = zkr_lease_release(l);
    return NULL;
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

static int one_children_watch(void *arg)
{
    (void)arg;
    return zkt_children_watches() == 1;
}

static void test_no_herd(void)
{
    char path[256];
    zkt_path("semherd", path, sizeof path);
    sem_dirs_t d;
    dirs_of(&d, path);
    zhandle_t *zh = zkt_raw();
    zkr_client_t *hc = zkt_client(SESSION_MS);
    zkr_semaphore_t *hs = new_sem(hc, path, 1);
    zkr_lease_t *held = NULL;
    CU_ASSERT_EQUAL_FATAL(zkr_semaphore_acquire(hs, 5000, &held), ZKR_OK);

    zkr_client_t *wc[NH_WAITERS];
    nh_waiter_t w[NH_WAITERS];
    memset(w, 0, sizeof w);
    for (int i = 0; i < NH_WAITERS; i++) {
        wc[i] = zkt_client(SESSION_MS);
        w[i].s = new_sem(wc[i], path, 1);
        w[i].rc = w[i].rc_return = 1;
        CU_ASSERT_FATAL(pthread_create(&w[i].tid, NULL, nh_main, &w[i]) == 0);
    }
    /* One waiter holds locks/ and has its lease waiting for room; the
     * others queue on locks/, each watching its predecessor there. */
    CU_ASSERT(zkt_wait_children(zh, d.locks, NH_WAITERS, POLL_MS));
    CU_ASSERT(zkt_wait_children(zh, d.leases, 2, POLL_MS));
    dir_watches_t dw = {d.locks, NH_WAITERS - 1};
    CU_ASSERT(zkt_wait_for(dir_watches_are, &dw, POLL_MS));
    CU_ASSERT_EQUAL(watches_under(d.leases), 0);
    /* Exactly one children watch on the whole server: the locks/ holder's
     * on leases/ (set just after its lease appeared). */
    CU_ASSERT(zkt_wait_for(one_children_watch, NULL, POLL_MS));
    CU_ASSERT_EQUAL(zkt_children_watches(), 1);

    CU_ASSERT_EQUAL(zkr_lease_release(held), ZKR_OK);
    for (int i = 0; i < NH_WAITERS; i++) {
        pthread_join(w[i].tid, NULL);
        CU_ASSERT_EQUAL(w[i].rc, ZKR_OK);
        CU_ASSERT_EQUAL(w[i].rc_return, ZKR_OK);
    }
    CU_ASSERT_EQUAL(zkt_count_children(zh, d.leases), 0);
    CU_ASSERT_TRUE(zkt_wait_children(zh, d.locks, 0, 5000)); /* (its delete is not waited for) */

    for (int i = 0; i < NH_WAITERS; i++) {
        zkr_semaphore_free(w[i].s);
        zkr_client_close(wc[i]);
    }
    zkr_semaphore_free(hs);
    zkr_client_close(hc);
    zkt_raw_close(zh);
}

/* ---- the non-reentrant mutex -------------------------------------------------------------------------- */

typedef struct smx_call {
    pthread_t tid;
    zkr_semaphore_mutex_t *m;
    int rc;
} smx_call_t;

static void *smx_release_main(void *arg)
{
    smx_call_t *sc = arg;
    sc->rc = zkr_semaphore_mutex_release(sc->m);
    return NULL;
}

static void test_semaphore_mutex(void)
{
    char path[256];
    zkt_path("semmutex", path, sizeof path);
    sem_dirs_t d;
    dirs_of(&d, path);
    zhandle_t *zh = zkt_raw();
    zkr_client_t *ca = zkt_client(SESSION_MS), *cb = zkt_client(SESSION_MS);
    zkr_semaphore_mutex_t *m1 = NULL, *m2 = NULL;
    CU_ASSERT_EQUAL_FATAL(zkr_semaphore_mutex_new(&m1, ca, path), ZKR_OK);
    CU_ASSERT_EQUAL_FATAL(zkr_semaphore_mutex_new(&m2, cb, path), ZKR_OK);

    CU_ASSERT_EQUAL(zkr_semaphore_mutex_release(m1), ZKR_ENOTOWNER);
    CU_ASSERT_EQUAL(zkr_semaphore_mutex_hold_state(m1), ZKR_HOLD_NONE);
    CU_ASSERT_EQUAL_FATAL(zkr_semaphore_mutex_acquire(m1, 5000), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_semaphore_mutex_is_held(m1), 1);
    CU_ASSERT_EQUAL(zkr_semaphore_mutex_hold_state(m1), ZKR_HOLD_SAFE);
    int64_t t1 = 0, t1b = 0;
    CU_ASSERT_EQUAL(zkr_semaphore_mutex_fencing_token(m1, &t1), ZKR_OK);

    /* Not reentrant: the holder itself waits and times out, and keeps its
     * hold; nothing of the attempt is left behind. */
    int64_t t0 = zkt_now_ms();
    CU_ASSERT_EQUAL(zkr_semaphore_mutex_acquire(m1, 300), ZKR_ETIMEDOUT);
    CU_ASSERT(zkt_now_ms() - t0 >= 295);
    CU_ASSERT_EQUAL(zkr_semaphore_mutex_is_held(m1), 1);
    CU_ASSERT_EQUAL(zkr_semaphore_mutex_fencing_token(m1, &t1b), ZKR_OK);
    CU_ASSERT_EQUAL(t1, t1b);
    CU_ASSERT_EQUAL(zkt_count_children(zh, d.leases), 1);
    CU_ASSERT_TRUE(zkt_wait_children(zh, d.locks, 0, 5000)); /* (its delete is not waited for) */
    CU_ASSERT_EQUAL(zkr_semaphore_mutex_acquire(m2, 0), ZKR_ETIMEDOUT);
    CU_ASSERT_EQUAL(zkr_semaphore_mutex_acquire(m2, 200), ZKR_ETIMEDOUT);
    CU_ASSERT_EQUAL(zkr_semaphore_mutex_is_held(m2), 0);
    CU_ASSERT_EQUAL(zkr_semaphore_mutex_release(m2), ZKR_ENOTOWNER);
    CU_ASSERT_EQUAL(zkr_semaphore_mutex_is_held(m1), 1);

    /* Any thread may release. */
    smx_call_t sc = {.m = m1, .rc = 1};
    CU_ASSERT_FATAL(pthread_create(&sc.tid, NULL, smx_release_main, &sc) == 0);
    pthread_join(sc.tid, NULL);
    CU_ASSERT_EQUAL(sc.rc, ZKR_OK);
    CU_ASSERT_EQUAL(zkr_semaphore_mutex_is_held(m1), 0);
    CU_ASSERT_EQUAL(zkr_semaphore_mutex_fencing_token(m1, &t1b), ZKR_ENOTOWNER);
    CU_ASSERT_EQUAL(zkt_count_children(zh, d.leases), 0);
    CU_ASSERT_EQUAL(zkr_semaphore_mutex_release(m1), ZKR_ENOTOWNER);

    /* And then it can be taken again. */
    CU_ASSERT_EQUAL(zkr_semaphore_mutex_acquire(m1, 5000), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_semaphore_mutex_release(m1), ZKR_OK);

    /* Successive holders (alternating objects and sessions): increasing
     * fencing tokens. */
    int64_t last = t1;
    zkr_semaphore_mutex_t *ms[2] = {m1, m2};
    for (int r = 0; r < 10; r++) {
        zkr_semaphore_mutex_t *m = ms[r % 2];
        CU_ASSERT_EQUAL_FATAL(zkr_semaphore_mutex_acquire(m, 5000), ZKR_OK);
        int64_t t = 0;
        CU_ASSERT_EQUAL(zkr_semaphore_mutex_fencing_token(m, &t), ZKR_OK);
        CU_ASSERT(t > last);
        last = t;
        CU_ASSERT_EQUAL(zkr_semaphore_mutex_release(m), ZKR_OK);
    }

    /* Freeing a held one releases it. */
    CU_ASSERT_EQUAL(zkr_semaphore_mutex_acquire(m2, 5000), ZKR_OK);
    zkr_semaphore_mutex_free(m2);
    CU_ASSERT_EQUAL(zkt_count_children(zh, d.leases), 0);
    CU_ASSERT_EQUAL(zkr_semaphore_mutex_acquire(m1, 0), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_semaphore_mutex_release(m1), ZKR_OK);
    CU_ASSERT_EQUAL(zkt_count_children(zh, d.leases), 0);
    CU_ASSERT_TRUE(zkt_wait_children(zh, d.locks, 0, 5000)); /* (its delete is not waited for) */

    zkr_semaphore_mutex_free(m1);
    zkr_client_close(ca);
    zkr_client_close(cb);
    zkt_raw_close(zh);
}

/* ---- bad arguments ------------------------------------------------------------------------------------- */

static const char *const bad_paths[] = {
    NULL, "", "relative", "/trailing/", "/a//b", "/zookeeper/x", "/", "/zookeeper", "/a/./b", "/a/../b",
};
#define N_BAD_PATHS (sizeof bad_paths / sizeof bad_paths[0])

static void test_bad_arguments(void)
{
    char path[256], count[256];
    zkt_path("sembad", path, sizeof path);
    zkt_path("sembadcount", count, sizeof count);
    zkr_client_t *c = zkt_client(SESSION_MS);
    zkr_semaphore_t *s = (zkr_semaphore_t *)1;
    zkr_semaphore_mutex_t *m = (zkr_semaphore_mutex_t *)1;

    /* Constructors. */
    CU_ASSERT_EQUAL(zkr_semaphore_new(NULL, c, path, 1), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_semaphore_new(&s, NULL, path, 1), ZKR_EINVAL);
    CU_ASSERT_PTR_NULL(s);
    s = (zkr_semaphore_t *)1;
    CU_ASSERT_EQUAL(zkr_semaphore_new(&s, c, path, 0), ZKR_EINVAL);
    CU_ASSERT_PTR_NULL(s);
    s = (zkr_semaphore_t *)1;
    CU_ASSERT_EQUAL(zkr_semaphore_new(&s, c, path, -1), ZKR_EINVAL);
    CU_ASSERT_PTR_NULL(s);
    CU_ASSERT_EQUAL(zkr_semaphore_new_shared(NULL, c, path, count), ZKR_EINVAL);
    s = (zkr_semaphore_t *)1;
    CU_ASSERT_EQUAL(zkr_semaphore_new_shared(&s, NULL, path, count), ZKR_EINVAL);
    CU_ASSERT_PTR_NULL(s);
    CU_ASSERT_EQUAL(zkr_semaphore_mutex_new(NULL, c, path), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_semaphore_mutex_new(&m, NULL, path), ZKR_EINVAL);
    CU_ASSERT_PTR_NULL(m);
    int32_t v = 0;
    for (size_t i = 0; i < N_BAD_PATHS; i++) {
        const char *bp = bad_paths[i];
        s = (zkr_semaphore_t *)1;
        CU_ASSERT_EQUAL(zkr_semaphore_new(&s, c, bp, 1), ZKR_EINVAL);
        CU_ASSERT_PTR_NULL(s);
        s = (zkr_semaphore_t *)1;
        CU_ASSERT_EQUAL(zkr_semaphore_new_shared(&s, c, bp, count), ZKR_EINVAL);
        CU_ASSERT_PTR_NULL(s);
        s = (zkr_semaphore_t *)1;
        CU_ASSERT_EQUAL(zkr_semaphore_new_shared(&s, c, path, bp), ZKR_EINVAL);
        CU_ASSERT_PTR_NULL(s);
        m = (zkr_semaphore_mutex_t *)1;
        CU_ASSERT_EQUAL(zkr_semaphore_mutex_new(&m, c, bp), ZKR_EINVAL);
        CU_ASSERT_PTR_NULL(m);
        CU_ASSERT_EQUAL(zkr_shared_count_set(c, bp, 1), ZKR_EINVAL);
        CU_ASSERT_EQUAL(zkr_shared_count_get(c, bp, &v), ZKR_EINVAL);
    }
    CU_ASSERT_EQUAL(zkr_shared_count_set(NULL, count, 1), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_shared_count_get(NULL, count, &v), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_shared_count_get(c, count, NULL), ZKR_EINVAL);

    /* NULL objects. */
    zkr_lease_t *l = (zkr_lease_t *)1;
    zkr_lease_t *ls[2] = {(zkr_lease_t *)1, (zkr_lease_t *)1};
    int64_t tok = 0;
    char **parts = NULL;
    size_t n = 0;
    CU_ASSERT_EQUAL(zkr_semaphore_acquire(NULL, 0, &l), ZKR_EINVAL);
    CU_ASSERT_PTR_NULL(l);
    CU_ASSERT_EQUAL(zkr_semaphore_acquire_n(NULL, 1, 0, ls), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_semaphore_set_hold_listener(NULL, NULL, NULL), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_semaphore_participants(NULL, &parts, &n), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_lease_release(NULL), ZKR_EINVAL); /* as every release */
    CU_ASSERT_EQUAL(zkr_lease_release_all(NULL, 1), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_lease_hold_state(NULL), ZKR_HOLD_NONE);
    char *np = (char *)1;
    CU_ASSERT_EQUAL(zkr_lease_node_path(NULL, &np), ZKR_EINVAL);
    CU_ASSERT_PTR_NULL(np);
    CU_ASSERT_EQUAL(zkr_lease_fencing_token(NULL, &tok), ZKR_EINVAL);
    zkr_semaphore_free(NULL);
    CU_ASSERT_EQUAL(zkr_semaphore_mutex_acquire(NULL, 0), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_semaphore_mutex_release(NULL), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_semaphore_mutex_is_held(NULL), 0);
    CU_ASSERT_EQUAL(zkr_semaphore_mutex_fencing_token(NULL, &tok), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_semaphore_mutex_set_hold_listener(NULL, NULL, NULL), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_semaphore_mutex_hold_state(NULL), ZKR_HOLD_NONE);
    zkr_semaphore_mutex_free(NULL);

    /* Good objects, bad other arguments. */
    CU_ASSERT_EQUAL_FATAL(zkr_semaphore_new(&s, c, path, 2), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_semaphore_acquire(s, 0, NULL), ZKR_EINVAL);
    ls[0] = ls[1] = (zkr_lease_t *)1;
    CU_ASSERT_EQUAL(zkr_semaphore_acquire_n(s, 0, 0, ls), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_semaphore_acquire_n(s, -1, 0, ls), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_semaphore_acquire_n(s, 2, 0, NULL), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_semaphore_participants(s, NULL, &n), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_semaphore_participants(s, &parts, NULL), ZKR_EINVAL);
    ls[0] = ls[1] = NULL;
    CU_ASSERT_EQUAL(zkr_lease_release_all(ls, -1), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_lease_release_all(ls, 2), ZKR_OK); /* NULL entries skipped */
    CU_ASSERT_EQUAL(zkr_semaphore_acquire(s, 5000, &l), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_lease_fencing_token(l, NULL), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_lease_fencing_token(l, &tok), ZKR_OK);
    CU_ASSERT(tok > 0);
    CU_ASSERT_EQUAL(zkr_lease_release(l), ZKR_OK);
    zkr_semaphore_free(s);
    CU_ASSERT_EQUAL_FATAL(zkr_semaphore_mutex_new(&m, c, path), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_semaphore_mutex_fencing_token(m, NULL), ZKR_EINVAL);
    zkr_semaphore_mutex_free(m);

    zhandle_t *zh = zkt_raw();
    sem_dirs_t d;
    dirs_of(&d, path);
    CU_ASSERT_EQUAL(zkt_count_children(zh, d.leases), 0);
    CU_ASSERT_TRUE(zkt_wait_children(zh, d.locks, 0, 5000)); /* (its delete is not waited for) */
    zkt_raw_close(zh);
    zkr_client_close(c);
}

/* ---- registration ---------------------------------------------------------------------------------------- */

/* The names of 0.2.0 still work for one release (the compiler warns and
 * names the replacement); zkr_lease_return(NULL) keeps its old ZKR_OK. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
static int done_set(void *p)
{
    return atomic_load((atomic_int *)p) != 0;
}

static void release_done(int rc, void *ctx)
{
    atomic_store((atomic_int *)ctx, rc == ZKR_OK ? 1 : 2);
}

static void test_old_names(void)
{
    char path[128];
    zkt_path("sem-old-names", path, sizeof path);
    zhandle_t *raw = zkt_raw();
    zkr_client_t *c = zkt_client(SESSION_MS);
    CU_ASSERT_EQUAL(zkr_client_set_dispatch(c, ZKR_DISPATCH_THREAD), ZKR_OK); /* the async one's completion */
    zkr_semaphore_t *s;
    CU_ASSERT_EQUAL_FATAL(zkr_semaphore_new(&s, c, path, 3), ZKR_OK);
    zkr_lease_t *ls[3] = {NULL, NULL, NULL};
    CU_ASSERT_EQUAL_FATAL(zkr_semaphore_acquire_n(s, 3, 5000, ls), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_lease_return(NULL), ZKR_OK);
    CU_ASSERT_PTR_NULL(zkr_lease_path(NULL));
    char *copy = NULL;
    CU_ASSERT_EQUAL(zkr_lease_node_path(ls[0], &copy), ZKR_OK);
    CU_ASSERT_STRING_EQUAL(zkr_lease_path(ls[0]), copy); /* lent, the same path */
    zkr_free(copy);
    CU_ASSERT_EQUAL(zkr_lease_return(ls[0]), ZKR_OK);
    atomic_int done = 0;
    CU_ASSERT_EQUAL(zkr_lease_return_async(ls[1], release_done, &done), ZKR_OK);
    CU_ASSERT_TRUE(zkt_wait_for(done_set, &done, 10000));
    CU_ASSERT_EQUAL(atomic_load(&done), 1);
    ls[0] = ls[1] = NULL;
    CU_ASSERT_EQUAL(zkr_lease_return_all(ls, 3), ZKR_OK);
    char leases[160];
    snprintf(leases, sizeof leases, "%s/leases", path);
    CU_ASSERT_EQUAL(zkt_count_children(raw, leases), 0);
    zkr_semaphore_free(s);
    zkr_client_close(c);
    zkt_raw_close(raw);
}
#pragma GCC diagnostic pop

static void add_suites(void)
{
    CU_pSuite s = CU_add_suite("semaphore", NULL, NULL);
    CU_add_test(s, "bad arguments", test_bad_arguments);
    CU_add_test(s, "acquire_n is all or nothing", test_acquire_n);
    CU_add_test(s, "shared count: raising it admits a waiter; bad and missing node", test_shared_count);
    CU_add_test(s, "timeouts 0 and 100 ms leave no orphan lease", test_no_orphans);
    CU_add_test(s, "only the locks/ holder watches the leases", test_no_herd);
    CU_add_test(s, "a lease made ahead of locks/ is withdrawn while another holds locks/",
                test_speculative_lease_withdrawn);
    CU_add_test(s, "semaphore mutex: not reentrant, any thread releases, tokens", test_semaphore_mutex);
    CU_add_test(s, "holder SIGKILLed: its lease goes with its session", test_killed_holder);
    CU_add_test(s, "never more than max holders under stress", test_max_holders);
    CU_add_test(s, "the names of 0.2.0: zkr_lease_return*, for one release", test_old_names);
}

int main(void)
{
    return zkt_main("semaphore", add_suites);
}

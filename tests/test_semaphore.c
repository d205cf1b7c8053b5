/* zkr_semaphore and zkr_semaphore_mutex against a real server. */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/harness/zkr_test.h"

#define SESSION_MS 4000

static int children_of(const char *base, const char *sub)
{
    char p[256];
    snprintf(p, sizeof p, "%s/%s", base, sub);
    zhandle_t *raw = zkt_raw();
    int n = zkt_count_children(raw, p);
    zkt_raw_close(raw);
    return n;
}

/* ---- max leases under stress --------------------------------------------------- */

typedef struct stress {
    zkr_client_t *c;
    const char *path;
    int max;
    int cycles;
    atomic_int *inside;
    atomic_int *peak;
    atomic_int *over;
    atomic_int *errors;
} stress_t;

static void *stress_thread(void *p)
{
    stress_t *s = p;
    zkr_semaphore_t *sem;
    if (zkr_semaphore_new(&sem, s->c, s->path, s->max) != ZKR_OK) {
        atomic_fetch_add(s->errors, 1);
        return NULL;
    }
    for (int i = 0; i < s->cycles; i++) {
        zkr_lease_t *l = NULL;
        if (zkr_semaphore_acquire(sem, 30000, &l) != ZKR_OK) {
            atomic_fetch_add(s->errors, 1);
            continue;
        }
        int now = atomic_fetch_add(s->inside, 1) + 1;
        if (now > s->max)
            atomic_fetch_add(s->over, 1);
        int peak = atomic_load(s->peak);
        while (now > peak && !atomic_compare_exchange_weak(s->peak, &peak, now)) {
        }
        zkt_sleep_ms(30); /* long enough for the others to fill the slots */
        atomic_fetch_sub(s->inside, 1);
        if (zkr_lease_return(l) != ZKR_OK)
            atomic_fetch_add(s->errors, 1);
    }
    zkr_semaphore_free(sem);
    return NULL;
}

static void test_max_never_exceeded(void)
{
    enum { THREADS = 8, CYCLES = 30, MAX = 3 };
    char p[128];
    zkt_path("sem-stress", p, sizeof p);
    atomic_int inside = 0, peak = 0, over = 0, errors = 0;
    zkr_client_t *cs[THREADS];
    stress_t ss[THREADS];
    pthread_t ts[THREADS];
    for (int i = 0; i < THREADS; i++) {
        cs[i] = zkt_client(SESSION_MS);
        ss[i] = (stress_t){cs[i], p, MAX, CYCLES, &inside, &peak, &over, &errors};
        pthread_create(&ts[i], NULL, stress_thread, &ss[i]);
    }
    for (int i = 0; i < THREADS; i++)
        pthread_join(ts[i], NULL);
    printf("\n    %d cycles, peak %d inside (max %d)\n", THREADS * CYCLES, atomic_load(&peak), MAX);
    CU_ASSERT_EQUAL(atomic_load(&over), 0);
    CU_ASSERT_EQUAL(atomic_load(&errors), 0);
    CU_ASSERT_TRUE(atomic_load(&peak) <= MAX);
    for (int i = 0; i < THREADS; i++)
        zkr_client_close(cs[i]);
    CU_ASSERT_EQUAL(children_of(p, "leases"), 0);
    CU_ASSERT_EQUAL(children_of(p, "locks"), 0);
}

/* ---- all or nothing ------------------------------------------------------------- */

static void test_acquire_n_all_or_nothing(void)
{
    char p[128];
    zkt_path("sem-n", p, sizeof p);
    zkr_client_t *a = zkt_client(SESSION_MS), *b = zkt_client(SESSION_MS);
    zkr_semaphore_t *sa, *sb;
    CU_ASSERT_EQUAL_FATAL(zkr_semaphore_new(&sa, a, p, 4), ZKR_OK);
    CU_ASSERT_EQUAL_FATAL(zkr_semaphore_new(&sb, b, p, 4), ZKR_OK);
    zkr_lease_t *held[2];
    CU_ASSERT_EQUAL_FATAL(zkr_semaphore_acquire_n(sa, 2, 5000, held), ZKR_OK);
    zkr_lease_t *three[3] = {(zkr_lease_t *)0x1, (zkr_lease_t *)0x1, (zkr_lease_t *)0x1};
    int64_t t0 = zkt_now_ms();
    CU_ASSERT_EQUAL(zkr_semaphore_acquire_n(sb, 3, 300, three), ZKR_ETIMEDOUT);
    CU_ASSERT_TRUE(zkt_now_ms() - t0 < 5000); /* one deadline, not three */
    for (int i = 0; i < 3; i++)
        CU_ASSERT_PTR_NULL(three[i]);
    CU_ASSERT_EQUAL(children_of(p, "leases"), 2); /* none of ours left */
    CU_ASSERT_EQUAL(children_of(p, "locks"), 0);
    zkr_lease_t *two[2];
    CU_ASSERT_EQUAL(zkr_semaphore_acquire_n(sb, 2, 5000, two), ZKR_OK);
    CU_ASSERT_EQUAL(children_of(p, "leases"), 4);
    char **parts = NULL;
    size_t n = 0;
    CU_ASSERT_EQUAL(zkr_semaphore_participants(sb, &parts, &n), ZKR_OK);
    CU_ASSERT_EQUAL(n, 4);
    for (size_t i = 0; i < n; i++)
        CU_ASSERT_PTR_NOT_NULL(strstr(parts[i], "/leases/_c_"));
    zkr_strings_free(parts, n);
    int64_t t1, t2;
    CU_ASSERT_EQUAL(zkr_lease_fencing_token(two[0], &t1), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_lease_fencing_token(two[1], &t2), ZKR_OK);
    CU_ASSERT_TRUE(t2 > t1);
    CU_ASSERT_PTR_NOT_NULL(strstr(zkr_lease_path(two[0]), "-lease-"));
    CU_ASSERT_EQUAL(zkr_lease_return_all(two, 2), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_lease_return_all(held, 2), ZKR_OK);
    CU_ASSERT_EQUAL(children_of(p, "leases"), 0);
    zkr_semaphore_free(sa);
    zkr_semaphore_free(sb);
    zkr_client_close(a);
    zkr_client_close(b);
}

/* ---- shared count ------------------------------------------------------------------ */

typedef struct sem_wait_arg {
    zkr_semaphore_t *s;
    int64_t timeout;
    atomic_int done;
    int rc;
    zkr_lease_t *lease;
} sem_wait_arg_t;

static void *sem_wait_thread(void *p)
{
    sem_wait_arg_t *a = p;
    a->rc = zkr_semaphore_acquire(a->s, a->timeout, &a->lease);
    atomic_store(&a->done, 1);
    return NULL;
}

static int sem_done(void *p)
{
    return atomic_load(&((sem_wait_arg_t *)p)->done);
}

static void test_shared_count(void)
{
    char p[128], cp[160];
    zkt_path("sem-shared", p, sizeof p);
    snprintf(cp, sizeof cp, "%s-count", p);
    zkr_client_t *a = zkt_client(SESSION_MS), *b = zkt_client(SESSION_MS);
    int32_t v = 0;
    CU_ASSERT_EQUAL(zkr_shared_count_get(a, cp, &v), ZKR_ENONODE);
    CU_ASSERT_EQUAL_FATAL(zkr_shared_count_set(a, cp, 1), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_shared_count_get(b, cp, &v), ZKR_OK);
    CU_ASSERT_EQUAL(v, 1);
    zkr_semaphore_t *sa, *sb;
    CU_ASSERT_EQUAL_FATAL(zkr_semaphore_new_shared(&sa, a, p, cp), ZKR_OK);
    CU_ASSERT_EQUAL_FATAL(zkr_semaphore_new_shared(&sb, b, p, cp), ZKR_OK);
    zkr_lease_t *la = NULL;
    CU_ASSERT_EQUAL_FATAL(zkr_semaphore_acquire(sa, 5000, &la), ZKR_OK);
    sem_wait_arg_t w = {sb, 20000, 0, -99, NULL};
    pthread_t t;
    pthread_create(&t, NULL, sem_wait_thread, &w);
    zkt_sleep_ms(500);
    CU_ASSERT_FALSE(atomic_load(&w.done)); /* count 1, held */
    CU_ASSERT_EQUAL(zkr_shared_count_set(a, cp, 2), ZKR_OK);
    CU_ASSERT_TRUE(zkt_wait_for(sem_done, &w, 10000)); /* in without a release */
    pthread_join(t, NULL);
    CU_ASSERT_EQUAL(w.rc, ZKR_OK);
    CU_ASSERT_EQUAL(children_of(p, "leases"), 2);
    zkr_lease_return(w.lease);
    zkr_lease_return(la);

    /* Malformed and missing counts. */
    zhandle_t *raw = zkt_raw();
    char badp[200];
    snprintf(badp, sizeof badp, "%s-bad", p);
    CU_ASSERT_EQUAL(zoo_create(raw, badp, "abc", 3, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0), ZOK);
    zkr_semaphore_t *sbad, *smissing;
    CU_ASSERT_EQUAL_FATAL(zkr_semaphore_new_shared(&sbad, a, p, badp), ZKR_OK);
    zkr_lease_t *l = (zkr_lease_t *)0x1;
    CU_ASSERT_EQUAL(zkr_semaphore_acquire(sbad, 1000, &l), ZKR_EBADDATA);
    CU_ASSERT_PTR_NULL(l);
    CU_ASSERT_EQUAL(zkr_shared_count_get(a, badp, &v), ZKR_EBADDATA);
    snprintf(badp, sizeof badp, "%s-missing", p);
    CU_ASSERT_EQUAL_FATAL(zkr_semaphore_new_shared(&smissing, a, p, badp), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_semaphore_acquire(smissing, 1000, &l), ZKR_ENONODE);
    CU_ASSERT_EQUAL(children_of(p, "leases"), 0); /* failures leave nothing */
    CU_ASSERT_EQUAL(children_of(p, "locks"), 0);
    zkt_raw_close(raw);
    zkr_semaphore_free(sbad);
    zkr_semaphore_free(smissing);
    zkr_semaphore_free(sa);
    zkr_semaphore_free(sb);
    zkr_client_close(a);
    zkr_client_close(b);
}

/* ---- killed holder --------------------------------------------------------------------- */

static void test_killed_holder_lease_vanishes(void)
{
    char p[128];
    zkt_path("sem-killed", p, sizeof p);
    int fds[2];
    CU_ASSERT_EQUAL_FATAL(pipe(fds), 0);
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        zkr_client_options_t o;
        zkr_client_options_init(&o);
        o.session_timeout_ms = 2000;
        o.zk_log_level = 0;
        zkr_client_t *c = NULL;
        zkr_semaphore_t *s = NULL;
        zkr_lease_t *l = NULL;
        char ok = 'n';
        if (zkr_client_open(&c, zkt_hosts(), &o) == ZKR_OK && zkr_semaphore_new(&s, c, p, 1) == ZKR_OK &&
            zkr_semaphore_acquire(s, 5000, &l) == ZKR_OK)
            ok = 'y';
        if (write(fds[1], &ok, 1) != 1)
            _exit(3);
        for (;;)
            pause();
    }
    close(fds[1]);
    char got = 0;
    CU_ASSERT_EQUAL_FATAL(read(fds[0], &got, 1), 1);
    close(fds[0]);
    CU_ASSERT_EQUAL(got, 'y');
    CU_ASSERT_EQUAL(children_of(p, "leases"), 1);
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    zkr_client_t *b = zkt_client(SESSION_MS);
    zkr_semaphore_t *sb;
    zkr_lease_t *lb = NULL;
    CU_ASSERT_EQUAL_FATAL(zkr_semaphore_new(&sb, b, p, 1), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_semaphore_acquire(sb, 20000, &lb), ZKR_OK);
    CU_ASSERT_EQUAL(children_of(p, "leases"), 1); /* only ours: the dead one vanished */
    CU_ASSERT_EQUAL(zkr_lease_return(lb), ZKR_OK);
    zkr_semaphore_free(sb);
    zkr_client_close(b);
}

/* ---- no orphans after timeouts --------------------------------------------------------- */

static void test_no_orphan_after_timeouts(void)
{
    char p[128];
    zkt_path("sem-orphans", p, sizeof p);
    zkr_client_t *a = zkt_client(SESSION_MS), *b = zkt_client(SESSION_MS);
    zkr_semaphore_t *sa, *sb;
    CU_ASSERT_EQUAL_FATAL(zkr_semaphore_new(&sa, a, p, 2), ZKR_OK);
    CU_ASSERT_EQUAL_FATAL(zkr_semaphore_new(&sb, b, p, 2), ZKR_OK);
    zkr_lease_t *held[2];
    CU_ASSERT_EQUAL_FATAL(zkr_semaphore_acquire_n(sa, 2, 5000, held), ZKR_OK);
    for (int i = 0; i < 12; i++) {
        zkr_lease_t *l = NULL;
        CU_ASSERT_EQUAL(zkr_semaphore_acquire(sb, i % 2 ? 100 : 0, &l), ZKR_ETIMEDOUT);
        CU_ASSERT_PTR_NULL(l);
    }
    CU_ASSERT_EQUAL(children_of(p, "leases"), 2);
    CU_ASSERT_EQUAL(children_of(p, "locks"), 0);
    CU_ASSERT_EQUAL(zkr_lease_return_all(held, 2), ZKR_OK);
    zkr_semaphore_free(sa);
    zkr_semaphore_free(sb);
    zkr_client_close(a);
    zkr_client_close(b);
}

/* ---- non-reentrant mutex ----------------------------------------------------------------- */

typedef struct smx_arg {
    zkr_semaphore_mutex_t *m;
    int rc;
} smx_arg_t;

static void *smx_release_thread(void *p)
{
    smx_arg_t *a = p;
    a->rc = zkr_semaphore_mutex_release(a->m);
    return NULL;
}

static void test_semaphore_mutex(void)
{
    char p[128];
    zkt_path("smutex", p, sizeof p);
    zkr_client_t *a = zkt_client(SESSION_MS), *b = zkt_client(SESSION_MS);
    zkr_semaphore_mutex_t *ma, *mb;
    CU_ASSERT_EQUAL_FATAL(zkr_semaphore_mutex_new(&ma, a, p), ZKR_OK);
    CU_ASSERT_EQUAL_FATAL(zkr_semaphore_mutex_new(&mb, b, p), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_semaphore_mutex_release(ma), ZKR_ENOTOWNER);
    CU_ASSERT_EQUAL_FATAL(zkr_semaphore_mutex_acquire(ma, 5000), ZKR_OK);
    CU_ASSERT_TRUE(zkr_semaphore_mutex_is_held(ma));
    CU_ASSERT_EQUAL(zkr_semaphore_mutex_hold_state(ma), ZKR_HOLD_SAFE);
    int64_t t1 = 0, t2 = 0;
    CU_ASSERT_EQUAL(zkr_semaphore_mutex_fencing_token(ma, &t1), ZKR_OK);
    /* Not reentrant: the holder's own second acquire waits and times out. */
    int64_t t0 = zkt_now_ms();
    CU_ASSERT_EQUAL(zkr_semaphore_mutex_acquire(ma, 300), ZKR_ETIMEDOUT);
    CU_ASSERT_TRUE(zkt_now_ms() - t0 >= 290);
    CU_ASSERT_TRUE(zkr_semaphore_mutex_is_held(ma)); /* the first hold stands */
    CU_ASSERT_EQUAL(zkr_semaphore_mutex_acquire(mb, 200), ZKR_ETIMEDOUT);
    /* Release from another thread. */
    smx_arg_t r = {ma, -99};
    pthread_t t;
    pthread_create(&t, NULL, smx_release_thread, &r);
    pthread_join(t, NULL);
    CU_ASSERT_EQUAL(r.rc, ZKR_OK);
    CU_ASSERT_FALSE(zkr_semaphore_mutex_is_held(ma));
    CU_ASSERT_EQUAL(zkr_semaphore_mutex_acquire(mb, 5000), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_semaphore_mutex_fencing_token(mb, &t2), ZKR_OK);
    CU_ASSERT_TRUE(t2 > t1);
    CU_ASSERT_EQUAL(zkr_semaphore_mutex_release(mb), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_semaphore_mutex_acquire(ma, 5000), ZKR_OK);
    int64_t t3 = 0;
    zkr_semaphore_mutex_fencing_token(ma, &t3);
    CU_ASSERT_TRUE(t3 > t2);
    zkr_semaphore_mutex_free(ma); /* releases the open hold */
    CU_ASSERT_EQUAL(children_of(p, "leases"), 0);
    zkr_semaphore_mutex_free(mb);
    zkr_client_close(a);
    zkr_client_close(b);
}

/* ---- bad arguments ------------------------------------------------------------------------- */

static void test_bad_arguments(void)
{
    zkr_client_t *c = zkt_client(SESSION_MS);
    zkr_semaphore_t *s = (zkr_semaphore_t *)0x1;
    const char *bad[] = {"", "relative", "/trailing/", "/a//b", "/zookeeper/x", "/", NULL};
    for (int i = 0; bad[i]; i++) {
        CU_ASSERT_EQUAL(zkr_semaphore_new(&s, c, bad[i], 1), ZKR_EINVAL);
        CU_ASSERT_EQUAL(zkr_semaphore_new_shared(&s, c, bad[i], "/count"), ZKR_EINVAL);
        CU_ASSERT_EQUAL(zkr_semaphore_new_shared(&s, c, "/sem", bad[i]), ZKR_EINVAL);
        zkr_semaphore_mutex_t *m;
        CU_ASSERT_EQUAL(zkr_semaphore_mutex_new(&m, c, bad[i]), ZKR_EINVAL);
        CU_ASSERT_EQUAL(zkr_shared_count_set(c, bad[i], 1), ZKR_EINVAL);
    }
    CU_ASSERT_PTR_NULL(s);
    CU_ASSERT_EQUAL(zkr_semaphore_new(&s, c, "/sem", 0), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_semaphore_new(&s, c, "/sem", -1), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_semaphore_new(NULL, c, "/sem", 1), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_semaphore_new(&s, NULL, "/sem", 1), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_semaphore_new(&s, c, NULL, 1), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_semaphore_new_shared(&s, c, "/sem", NULL), ZKR_EINVAL);
    zkr_lease_t *l;
    zkr_lease_t *ls[2];
    CU_ASSERT_EQUAL(zkr_semaphore_acquire(NULL, 0, &l), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_semaphore_acquire_n(NULL, 1, 0, ls), ZKR_EINVAL);
    zkr_semaphore_t *ok;
    CU_ASSERT_EQUAL_FATAL(zkr_semaphore_new(&ok, c, "/zkr-test/sem-bad-args", 1), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_semaphore_acquire(ok, 0, NULL), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_semaphore_acquire_n(ok, 0, 0, ls), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_semaphore_acquire_n(ok, -1, 0, ls), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_semaphore_acquire_n(ok, 1, 0, NULL), ZKR_EINVAL);
    char **parts;
    size_t n;
    CU_ASSERT_EQUAL(zkr_semaphore_participants(NULL, &parts, &n), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_semaphore_participants(ok, NULL, &n), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_semaphore_set_hold_listener(NULL, NULL, NULL), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_lease_return(NULL), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_lease_return_all(NULL, 1), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_lease_return_all(ls, -1), ZKR_EINVAL);
    int64_t tok;
    int32_t v;
    CU_ASSERT_EQUAL(zkr_lease_fencing_token(NULL, &tok), ZKR_EINVAL);
    CU_ASSERT_PTR_NULL(zkr_lease_path(NULL));
    CU_ASSERT_EQUAL(zkr_lease_hold_state(NULL), ZKR_HOLD_NONE);
    CU_ASSERT_EQUAL(zkr_shared_count_set(NULL, "/c", 1), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_shared_count_get(c, "/c", NULL), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_shared_count_get(NULL, "/c", &v), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_semaphore_mutex_new(NULL, c, "/m"), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_semaphore_mutex_acquire(NULL, 0), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_semaphore_mutex_release(NULL), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_semaphore_mutex_is_held(NULL), 0);
    CU_ASSERT_EQUAL(zkr_semaphore_mutex_fencing_token(NULL, &tok), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_semaphore_mutex_set_hold_listener(NULL, NULL, NULL), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_semaphore_mutex_hold_state(NULL), ZKR_HOLD_NONE);
    zkr_semaphore_free(ok);
    zkr_semaphore_free(NULL);
    zkr_semaphore_mutex_free(NULL);
    zkr_client_close(c);
}

static void add_suites(void)
{
    CU_pSuite s = CU_add_suite("semaphore", NULL, NULL);
    CU_add_test(s, "bad arguments", test_bad_arguments);
    CU_add_test(s, "acquire N: all or nothing, one deadline", test_acquire_n_all_or_nothing);
    CU_add_test(s, "no orphan lease after timeouts", test_no_orphan_after_timeouts);
    CU_add_test(s, "shared count: a change lets waiters in; bad and missing counts", test_shared_count);
    CU_add_test(s, "non-reentrant mutex", test_semaphore_mutex);
    CU_add_test(s, "killed holder: its lease vanishes with the session", test_killed_holder_lease_vanishes);
    CU_add_test(s, "max leases never exceeded under stress", test_max_never_exceeded);
}

int main(void)
{
    return zkt_main("semaphore", add_suites);
}

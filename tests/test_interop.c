/* Wire compatibility with Apache Curator 5.4 (Debian's jars): C clients and
 * Java Curator clients, in separate processes and sessions, on the same
 * lock paths.  The Java side is tests/interop/CuratorPeer.java, driven over
 * a pipe. */
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/harness/zkr_test.h"
#include "tests/interop/jpeer.h"

#define SESSION_MS 10000

/* ---- the Java peer (tests/interop/CuratorPeer.java) ----------------------------------- */

static int suite_init(void)
{
    jpeer_java = jpeer_start("CuratorPeer");
    return jpeer_java ? 0 : 1;
}

static int suite_clean(void)
{
    jpeer_stop(jpeer_java);
    jpeer_java = NULL;
    return 0;
}

/* A C holder in a thread of its own (holds are per thread). */
typedef struct cholder {
    zkr_lock_ref_t ref;
    int64_t timeout;
    atomic_int state; /* 0 waiting, 1 held, 2 failed, 3 released */
    atomic_int release_now;
    int rc;
    atomic_int *order;
    int acquired_as;
    pthread_t t;
} cholder_t;

static void *cholder_main(void *p)
{
    cholder_t *h = p;
    h->rc = zkr_lock_acquire(h->ref, h->timeout);
    if (h->rc != ZKR_OK) {
        atomic_store(&h->state, 2);
        return NULL;
    }
    if (h->order)
        h->acquired_as = atomic_fetch_add(h->order, 1) + 1;
    atomic_store(&h->state, 1);
    for (int i = 0; i < 12000 && !atomic_load(&h->release_now); i++)
        zkt_sleep_ms(5);
    zkr_lock_release(h->ref);
    atomic_store(&h->state, 3);
    return NULL;
}

static void cholder_start(cholder_t *h, zkr_lock_ref_t ref, int64_t timeout, atomic_int *order)
{
    memset(h, 0, sizeof *h);
    h->ref = ref;
    h->timeout = timeout;
    h->order = order;
    CU_ASSERT_EQUAL_FATAL(pthread_create(&h->t, NULL, cholder_main, h), 0);
}

static int cholder_is(void *p)
{
    return atomic_load(&((cholder_t *)p)->state) == 1;
}

static void cholder_finish(cholder_t *h)
{
    atomic_store(&h->release_now, 1);
    pthread_join(h->t, NULL);
}

/* ---- 1. mutex ------------------------------------------------------------------------ */

static void test_mutex_alternate(void)
{
    char p[128];
    zkt_path("interop-mutex", p, sizeof p);
    zkr_client_t *c = zkt_client(SESSION_MS);
    zkr_mutex_t *m;
    CU_ASSERT_EQUAL_FATAL(zkr_mutex_new(&m, c, p), ZKR_OK);
    CU_ASSERT_EQUAL_FATAL(zkr_mutex_acquire(m, 5000), ZKR_OK);
    CU_ASSERT_TRUE(jis("STARTED", "hold j1 mutex %s 300", p));
    CU_ASSERT_TRUE(jis("TIMEOUT", "wait j1 5000"));
    CU_ASSERT_EQUAL(zkr_mutex_release(m), ZKR_OK);
    CU_ASSERT_TRUE(jis("STARTED", "hold j2 mutex %s -1", p));
    CU_ASSERT_TRUE(jis("HELD", "wait j2 10000"));
    CU_ASSERT_EQUAL(zkr_mutex_acquire(m, 300), ZKR_ETIMEDOUT);
    CU_ASSERT_TRUE(jis("OK", "release j2"));
    CU_ASSERT_EQUAL(zkr_mutex_acquire(m, 5000), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_mutex_release(m), ZKR_OK);
    zhandle_t *raw = zkt_raw();
    CU_ASSERT_TRUE(zkt_wait_children(raw, p, 0, 5000));
    zkt_raw_close(raw);
    zkr_mutex_free(m);
    zkr_client_close(c);
}

typedef struct incr {
    zkr_client_t *c;
    const char *lock, *counter;
    int n;
    int overlaps;
    int errors;
} incr_t;

static void *c_increment(void *p)
{
    incr_t *a = p;
    zkr_mutex_t *m;
    if (zkr_mutex_new(&m, a->c, a->lock) != ZKR_OK) {
        a->errors++;
        return NULL;
    }
    zhandle_t *zh = zkt_plain_raw(); /* no CUnit in this thread */
    if (!zh) {
        a->errors++;
        zkr_mutex_free(m);
        return NULL;
    }
    for (int i = 0; i < a->n; i++) {
        if (zkr_mutex_acquire(m, 60000) != ZKR_OK) {
            a->errors++;
            continue;
        }
        char buf[32];
        int len = (int)sizeof buf - 1;
        struct Stat st;
        if (zoo_get(zh, a->counter, 0, buf, &len, &st) == ZOK && len >= 0) {
            buf[len] = '\0';
            int n = snprintf(buf, sizeof buf, "%d", atoi(buf) + 1);
            int rc = zoo_set(zh, a->counter, buf, n, st.version);
            if (rc == ZBADVERSION)
                a->overlaps++; /* someone wrote while we held the lock */
            else if (rc != ZOK)
                a->errors++;
        } else {
            a->errors++;
        }
        zkr_mutex_release(m);
    }
    zkt_raw_close(zh);
    zkr_mutex_free(m);
    return NULL;
}

static void test_mutex_shared_counter(void)
{
    enum { JAVA_N = 1000, C_THREADS = 2, C_N = 500 };
    char lock[128], counter[160];
    zkt_path("interop-counter", lock, sizeof lock);
    snprintf(counter, sizeof counter, "%s-value", lock);
    zhandle_t *raw = zkt_raw();
    CU_ASSERT_EQUAL_FATAL(zoo_create(raw, "/zkr-test", "", 0, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0) == ZOK ||
                              zoo_exists(raw, "/zkr-test", 0, NULL) == ZOK,
                          1);
    CU_ASSERT_EQUAL_FATAL(zoo_create(raw, counter, "0", 1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0), ZOK);
    /* The Java side increments while the C threads do. */
    CU_ASSERT_EQUAL_FATAL(jpeer_send(jpeer_java, "counter %s %s %d", lock, counter, JAVA_N), 0);
    zkr_client_t *cs[C_THREADS];
    incr_t args[C_THREADS];
    pthread_t ts[C_THREADS];
    for (int i = 0; i < C_THREADS; i++) {
        cs[i] = zkt_client(SESSION_MS);
        args[i] = (incr_t){cs[i], lock, counter, C_N, 0, 0};
        CU_ASSERT_EQUAL_FATAL(pthread_create(&ts[i], NULL, c_increment, &args[i]), 0);
    }
    for (int i = 0; i < C_THREADS; i++) {
        pthread_join(ts[i], NULL);
        CU_ASSERT_EQUAL(args[i].overlaps, 0);
        CU_ASSERT_EQUAL(args[i].errors, 0);
        zkr_client_close(cs[i]);
    }
    char *r = jpeer_line(jpeer_java, 180000);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    CU_ASSERT_STRING_EQUAL(r, "OK 0"); /* Java saw no overlap either */
    free(r);
    char buf[32];
    int len = (int)sizeof buf - 1;
    CU_ASSERT_EQUAL(zoo_get(raw, counter, 0, buf, &len, NULL), ZOK);
    buf[len > 0 ? len : 0] = '\0';
    printf("\n    counter = %s (expected %d)\n", buf, JAVA_N + C_THREADS * C_N);
    CU_ASSERT_EQUAL(atoi(buf), JAVA_N + C_THREADS * C_N);
    zkt_raw_close(raw);
}

/* ---- 2. queue order and participants ---------------------------------------------------- */

static void test_queue_order(void)
{
    char p[128];
    zkt_path("interop-order", p, sizeof p);
    zkr_client_t *c = zkt_client(SESSION_MS), *cb = zkt_client(SESSION_MS), *cd = zkt_client(SESSION_MS);
    zkr_mutex_t *m, *mb, *md;
    CU_ASSERT_EQUAL_FATAL(zkr_mutex_new(&m, c, p), ZKR_OK);
    CU_ASSERT_EQUAL_FATAL(zkr_mutex_new(&mb, cb, p), ZKR_OK);
    CU_ASSERT_EQUAL_FATAL(zkr_mutex_new(&md, cd, p), ZKR_OK);
    CU_ASSERT_EQUAL_FATAL(zkr_mutex_acquire(m, 5000), ZKR_OK);
    zhandle_t *raw = zkt_raw();
    atomic_int order = 0;
    cholder_t b, d;
    /* Queue: Java a, C b, Java c, C d, each once the previous is in. */
    CU_ASSERT_TRUE(jis("STARTED", "hold qa mutex %s -1", p));
    CU_ASSERT_TRUE(zkt_wait_children(raw, p, 2, 15000));
    cholder_start(&b, zkr_mutex_ref(mb), 60000, &order);
    CU_ASSERT_TRUE(zkt_wait_children(raw, p, 3, 15000));
    CU_ASSERT_TRUE(jis("STARTED", "hold qc mutex %s -1", p));
    CU_ASSERT_TRUE(zkt_wait_children(raw, p, 4, 15000));
    cholder_start(&d, zkr_mutex_ref(md), 60000, &order);
    CU_ASSERT_TRUE(zkt_wait_children(raw, p, 5, 15000));

    /* Our participant list is Curator's, item for item. */
    char **parts = NULL;
    size_t n = 0;
    CU_ASSERT_EQUAL_FATAL(zkr_mutex_participants(m, &parts, &n), ZKR_OK);
    char *ours = jpeer_joined(parts, n);
    char *theirs = jcmd("participants mutex %s", p);
    CU_ASSERT_STRING_EQUAL(ours, theirs);
    free(ours);
    free(theirs);
    for (size_t i = 0; i < n; i++)
        CU_ASSERT_TRUE(jpeer_curator_name(strrchr(parts[i], '/') + 1, "lock-"));
    zkr_strings_free(parts, n);

    CU_ASSERT_EQUAL(zkr_mutex_release(m), ZKR_OK);
    CU_ASSERT_TRUE(jis("HELD", "wait qa 10000"));
    CU_ASSERT_EQUAL(atomic_load(&b.state), 0);
    CU_ASSERT_TRUE(jis("OK", "release qa"));
    CU_ASSERT_TRUE(zkt_wait_for(cholder_is, &b, 10000));
    CU_ASSERT_TRUE(jis("WAITING", "state qc"));
    cholder_finish(&b);
    CU_ASSERT_TRUE(jis("HELD", "wait qc 10000"));
    CU_ASSERT_EQUAL(atomic_load(&d.state), 0);
    CU_ASSERT_TRUE(jis("OK", "release qc"));
    CU_ASSERT_TRUE(zkt_wait_for(cholder_is, &d, 10000));
    cholder_finish(&d);
    CU_ASSERT_EQUAL(b.acquired_as, 1);
    CU_ASSERT_EQUAL(d.acquired_as, 2);
    CU_ASSERT_TRUE(zkt_wait_children(raw, p, 0, 5000));
    zkt_raw_close(raw);
    zkr_mutex_free(m);
    zkr_mutex_free(mb);
    zkr_mutex_free(md);
    zkr_client_close(c);
    zkr_client_close(cb);
    zkr_client_close(cd);
}

/* ---- 3. read/write lock -------------------------------------------------------------------- */

static void test_rwlock(void)
{
    char p[128];
    zkt_path("interop-rw", p, sizeof p);
    zkr_client_t *c1 = zkt_client(SESSION_MS), *c2 = zkt_client(SESSION_MS);
    zkr_rwlock_t *l1, *l2;
    CU_ASSERT_EQUAL_FATAL(zkr_rwlock_new(&l1, c1, p), ZKR_OK);
    CU_ASSERT_EQUAL_FATAL(zkr_rwlock_new(&l2, c2, p), ZKR_OK);
    zhandle_t *raw = zkt_raw();

    /* Java and C readers share. */
    CU_ASSERT_TRUE(jis("STARTED", "hold r1 read %s -1", p));
    CU_ASSERT_TRUE(jis("HELD", "wait r1 10000"));
    CU_ASSERT_EQUAL(zkr_rwlock_read_acquire(l1, 5000), ZKR_OK);
    /* ... and exclude a C writer. */
    CU_ASSERT_EQUAL(zkr_rwlock_write_acquire(l2, 300), ZKR_ETIMEDOUT);
    CU_ASSERT_TRUE(jis("OK", "release r1"));
    CU_ASSERT_EQUAL(zkr_rwlock_read_release(l1), ZKR_OK);

    /* A C writer excludes Java readers. */
    CU_ASSERT_EQUAL_FATAL(zkr_rwlock_write_acquire(l2, 5000), ZKR_OK);
    CU_ASSERT_TRUE(jis("STARTED", "hold r2 read %s 300", p));
    CU_ASSERT_TRUE(jis("TIMEOUT", "wait r2 5000"));
    CU_ASSERT_EQUAL(zkr_rwlock_write_release(l2), ZKR_OK);

    /* A Java writer excludes C readers. */
    CU_ASSERT_TRUE(jis("STARTED", "hold w1 write %s -1", p));
    CU_ASSERT_TRUE(jis("HELD", "wait w1 10000"));
    CU_ASSERT_EQUAL(zkr_rwlock_read_acquire(l1, 300), ZKR_ETIMEDOUT);
    CU_ASSERT_TRUE(jis("OK", "release w1"));

    /* A Java writer queued behind a C reader is not overtaken by a C reader
     * that arrives later. */
    CU_ASSERT_EQUAL_FATAL(zkr_rwlock_read_acquire(l1, 5000), ZKR_OK);
    CU_ASSERT_TRUE(jis("STARTED", "hold w2 write %s -1", p));
    CU_ASSERT_TRUE(zkt_wait_children(raw, p, 2, 15000));
    CU_ASSERT_EQUAL(zkr_rwlock_read_acquire(l2, 300), ZKR_ETIMEDOUT);
    CU_ASSERT_TRUE(jis("WAITING", "state w2"));
    char **parts = NULL;
    size_t n = 0;
    CU_ASSERT_EQUAL(zkr_rwlock_participants(l1, &parts, &n), ZKR_OK);
    /* Ours lists every node in lock order; Curator's halves list their own
     * kind: the same nodes in the same order, filtered. */
    const char *kinds[2] = {"read", "write"}, *markers[2] = {"__READ__", "__WRIT__"};
    for (int k = 0; k < 2; k++) {
        char *mine[8];
        size_t nm = 0;
        for (size_t i = 0; i < n && nm < 8; i++)
            if (strstr(strrchr(parts[i], '/'), markers[k]))
                mine[nm++] = parts[i];
        char *ours = jpeer_joined(mine, nm);
        char *theirs = jcmd("participants %s %s", kinds[k], p);
        CU_ASSERT_STRING_EQUAL(ours, theirs);
        free(ours);
        free(theirs);
    }
    CU_ASSERT_TRUE(n == 2 && jpeer_curator_name(strrchr(parts[0], '/') + 1, "__READ__") &&
                   jpeer_curator_name(strrchr(parts[1], '/') + 1, "__WRIT__"));
    zkr_strings_free(parts, n);
    CU_ASSERT_EQUAL(zkr_rwlock_read_release(l1), ZKR_OK);
    CU_ASSERT_TRUE(jis("HELD", "wait w2 10000"));
    CU_ASSERT_TRUE(jis("OK", "release w2"));
    CU_ASSERT_EQUAL(zkr_rwlock_read_acquire(l2, 5000), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_rwlock_read_release(l2), ZKR_OK);
    CU_ASSERT_TRUE(zkt_wait_children(raw, p, 0, 5000));
    zkt_raw_close(raw);
    zkr_rwlock_free(l1);
    zkr_rwlock_free(l2);
    zkr_client_close(c1);
    zkr_client_close(c2);
}

/* ---- 4. semaphore and non-reentrant mutex ---------------------------------------------------- */

typedef struct cstress {
    const char *kind, *path, *inside;
    int max, cycles, id;
    int violations, errors, done;
    int names_seen, bad_names; /* leases/ children seen while holding, not Curator's */
} cstress_t;

/* A C contender in a thread of its own: no CUnit here (the main thread
 * asserts what it records). */
static void *cstress_main(void *p)
{
    cstress_t *s = p;
    zkr_client_t *c = zkt_plain_client(SESSION_MS);
    zhandle_t *zh = zkt_plain_raw();
    zkr_semaphore_t *sem = NULL;
    zkr_semaphore_mutex_t *sm = NULL;
    int made = ZKR_EINVAL;
    if (c && zh) {
        if (strcmp(s->kind, "sem") == 0)
            made = zkr_semaphore_new(&sem, c, s->path, s->max);
        else
            made = zkr_semaphore_mutex_new(&sm, c, s->path);
    }
    if (made != ZKR_OK) {
        s->errors++;
        s->cycles = 0;
    }
    char leases[200];
    snprintf(leases, sizeof leases, "%s/leases", s->path);
    for (int i = 0; i < s->cycles; i++) {
        zkr_lease_t *l = NULL;
        int rc = sem ? zkr_semaphore_acquire(sem, 30000, &l) : zkr_semaphore_mutex_acquire(sm, 30000);
        if (rc != ZKR_OK) {
            s->errors++;
            continue;
        }
        char me[256];
        snprintf(me, sizeof me, "%s/c-%d-%d", s->inside, s->id, i);
        if (zoo_create(zh, me, "", 0, &ZOO_OPEN_ACL_UNSAFE, ZOO_EPHEMERAL, NULL, 0) != ZOK)
            s->errors++;
        if (zkt_count_children(zh, s->inside) > s->max)
            s->violations++;
        /* Every lease, Java's and ours, is named as Curator names it. */
        struct String_vector sv = {0, NULL};
        if (zoo_get_children(zh, leases, 0, &sv) == ZOK) {
            for (int32_t k = 0; k < sv.count; k++) {
                s->names_seen++;
                if (!jpeer_curator_name(sv.data[k], "lease-"))
                    s->bad_names++;
            }
            deallocate_String_vector(&sv);
        } else {
            s->errors++;
        }
        zkt_sleep_ms(15);
        zoo_delete(zh, me, -1);
        if (sem)
            zkr_lease_release(l);
        else
            zkr_semaphore_mutex_release(sm);
        s->done++;
    }
    zkr_semaphore_free(sem);
    zkr_semaphore_mutex_free(sm);
    zkt_raw_close(zh);
    if (c)
        zkr_client_close(c);
    return NULL;
}

static void mixed_stress(const char *kind, int max)
{
    enum { N = 4, CYCLES = 15 };
    char p[128], inside[160];
    zkt_path(kind, p, sizeof p);
    snprintf(inside, sizeof inside, "%s-inside", p);
    zhandle_t *raw = zkt_raw();
    zoo_create(raw, "/zkr-test", "", 0, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
    CU_ASSERT_EQUAL_FATAL(zoo_create(raw, inside, "", 0, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0), ZOK);
    for (int j = 0; j < N; j++)
        CU_ASSERT_TRUE(jis("STARTED", "stress j%d %s %s %d %d %s", j, kind, p, max, CYCLES, inside));
    cstress_t cs[N];
    pthread_t ts[N];
    for (int i = 0; i < N; i++) {
        cs[i] = (cstress_t){kind, p, inside, max, CYCLES, i, 0, 0, 0, 0, 0};
        CU_ASSERT_EQUAL_FATAL(pthread_create(&ts[i], NULL, cstress_main, &cs[i]), 0);
    }
    int c_done = 0, names_seen = 0, bad_names = 0;
    for (int i = 0; i < N; i++) {
        pthread_join(ts[i], NULL);
        CU_ASSERT_EQUAL(cs[i].violations, 0);
        CU_ASSERT_EQUAL(cs[i].errors, 0);
        c_done += cs[i].done;
        names_seen += cs[i].names_seen;
        bad_names += cs[i].bad_names;
    }
    int j_done = 0;
    for (int j = 0; j < N; j++) {
        char *r = jcmd("join j%d", j);
        int done = -1, viol = -1;
        CU_ASSERT_EQUAL(sscanf(r, "DONE %d %d", &done, &viol), 2);
        CU_ASSERT_EQUAL(viol, 0);
        if (done > 0)
            j_done += done;
        if (viol != 0)
            fprintf(stderr, "\n    java stress: %s\n", r);
        free(r);
    }
    printf("\n    %s max %d: C %d + Java %d holds, never more than %d inside\n", kind, max, c_done, j_done, max);
    CU_ASSERT_EQUAL(c_done, N * CYCLES);
    CU_ASSERT_EQUAL(j_done, N * CYCLES);
    char sub[200];
    snprintf(sub, sizeof sub, "%s/leases", p);
    CU_ASSERT_TRUE(zkt_wait_children(raw, sub, 0, 5000));
    /* Lease names are Curator's: every lease the C holders saw (each saw
     * at least its own). */
    printf("    lease names seen by the C holders: %d, not Curator's: %d\n", names_seen, bad_names);
    CU_ASSERT_TRUE(names_seen >= N * CYCLES);
    CU_ASSERT_EQUAL(bad_names, 0);
    zkt_raw_close(raw);
}

static void test_semaphore_mixed(void)
{
    mixed_stress("sem", 3);
}

static void test_semaphore_mutex_mixed(void)
{
    mixed_stress("smutex", 1);
}

static void test_lease_names(void)
{
    char p[128];
    zkt_path("interop-lease-names", p, sizeof p);
    zkr_client_t *c = zkt_client(SESSION_MS);
    zkr_semaphore_t *s;
    zkr_lease_t *l;
    CU_ASSERT_EQUAL_FATAL(zkr_semaphore_new(&s, c, p, 2), ZKR_OK);
    CU_ASSERT_EQUAL_FATAL(zkr_semaphore_acquire(s, 5000, &l), ZKR_OK);
    CU_ASSERT_TRUE(jis("STARTED", "hold s1 sem %s -1 2", p));
    CU_ASSERT_TRUE(jis("HELD", "wait s1 10000"));
    CU_ASSERT_TRUE(jis("STARTED", "hold s2 sem %s 300 2", p));
    CU_ASSERT_TRUE(jis("TIMEOUT", "wait s2 5000")); /* 2 of 2 taken across languages */
    char **parts = NULL;
    size_t n = 0;
    CU_ASSERT_EQUAL(zkr_semaphore_participants(s, &parts, &n), ZKR_OK);
    CU_ASSERT_EQUAL(n, 2);
    for (size_t i = 0; i < n; i++)
        CU_ASSERT_TRUE(jpeer_curator_name(strrchr(parts[i], '/') + 1, "lease-"));
    zkr_strings_free(parts, n);
    CU_ASSERT_TRUE(jis("OK", "release s1"));
    CU_ASSERT_EQUAL(zkr_lease_release(l), ZKR_OK);
    zkr_semaphore_free(s);
    zkr_client_close(c);
}

/* ---- 5. revocation ------------------------------------------------------------------------------ */

static void on_revoke(zkr_mutex_t *m, void *ctx)
{
    (void)m;
    atomic_fetch_add((atomic_int *)ctx, 1);
}

static void test_revocation_both_ways(void)
{
    char p[128];
    zkt_path("interop-revoke", p, sizeof p);
    zkr_client_t *c = zkt_client(SESSION_MS);
    zkr_mutex_t *m;
    CU_ASSERT_EQUAL_FATAL(zkr_mutex_new(&m, c, p), ZKR_OK);

    /* C asks a revocable Java holder to let go. */
    CU_ASSERT_TRUE(jis("STARTED", "hold jr revocable %s -1", p));
    CU_ASSERT_TRUE(jis("HELD", "wait jr 10000"));
    char **parts = NULL;
    size_t n = 0;
    CU_ASSERT_EQUAL_FATAL(zkr_mutex_participants(m, &parts, &n), ZKR_OK);
    CU_ASSERT_EQUAL_FATAL(n, 1);
    CU_ASSERT_EQUAL(zkr_revoke_request(c, parts[0]), ZKR_OK);
    zkr_strings_free(parts, n);
    CU_ASSERT_EQUAL(zkr_mutex_acquire(m, 10000), ZKR_OK); /* it let go */
    CU_ASSERT_TRUE(jis("YES", "revoked jr"));
    CU_ASSERT_TRUE(jis("OK", "release jr"));
    CU_ASSERT_EQUAL(zkr_mutex_release(m), ZKR_OK);

    /* Curator's Revoker asks a C holder. */
    atomic_int asked = 0;
    CU_ASSERT_EQUAL(zkr_mutex_make_revocable(m, on_revoke, &asked), ZKR_OK);
    CU_ASSERT_EQUAL_FATAL(zkr_mutex_acquire(m, 5000), ZKR_OK);
    char *node = NULL;
    CU_ASSERT_EQUAL_FATAL(zkr_mutex_node_path(m, &node), ZKR_OK);
    CU_ASSERT_TRUE(jis("OK", "revoke %s", node));
    CU_ASSERT_TRUE(zkt_wait_for(zkt_flag_set, &asked, 10000));
    CU_ASSERT_EQUAL(zkr_mutex_release(m), ZKR_OK);
    free(node);
    zkr_mutex_free(m);
    zkr_client_close(c);
}

/* ---- 6. names and foreign children ----------------------------------------------------------------- */

static void test_foreign_children_order(void)
{
    char p[128];
    zkt_path("interop-foreign", p, sizeof p);
    zhandle_t *raw = zkt_raw();
    zoo_create(raw, "/zkr-test", "", 0, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
    CU_ASSERT_EQUAL_FATAL(zoo_create(raw, p, "", 0, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0), ZOK);
    /* Children without the marker sort by their whole name, against the
     * sequence part of ours: both sides must agree exactly. */
    const char *foreign[] = {"zzz", "aaa-0000000001", "0000000000", "9999999999x", "lock-", "-",
                             "x-lock-0000000002-lock-", NULL};
    for (int i = 0; foreign[i]; i++) {
        char f[256];
        snprintf(f, sizeof f, "%s/%s", p, foreign[i]);
        CU_ASSERT_EQUAL(zoo_create(raw, f, "", 0, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0), ZOK);
    }
    zkr_client_t *c = zkt_client(SESSION_MS);
    zkr_mutex_t *m;
    CU_ASSERT_EQUAL_FATAL(zkr_mutex_new(&m, c, p), ZKR_OK);
    cholder_t h;
    cholder_start(&h, zkr_mutex_ref(m), 2000, NULL); /* queues behind foreign nodes */
    CU_ASSERT_TRUE(jis("STARTED", "hold fj mutex %s 2000", p));
    CU_ASSERT_TRUE(zkt_wait_children(raw, p, 9, 10000));
    char **parts = NULL;
    size_t n = 0;
    CU_ASSERT_EQUAL(zkr_mutex_participants(m, &parts, &n), ZKR_OK);
    char *ours = jpeer_joined(parts, n);
    char *theirs = jcmd("participants mutex %s", p);
    CU_ASSERT_STRING_EQUAL(ours, theirs);
    /* Every node our library created is one Curator accepts: named as
     * Curator names it, and in Curator's own list of participants. */
    struct String_vector sv = {0, NULL};
    CU_ASSERT_EQUAL(zoo_get_children(raw, p, 0, &sv), ZOK);
    int curators = 0;
    for (int32_t i = 0; i < sv.count; i++) {
        if (strncmp(sv.data[i], "_c_", 3) != 0)
            continue;
        curators++;
        char full[400];
        snprintf(full, sizeof full, "%s/%s", p, sv.data[i]);
        CU_ASSERT_TRUE(jpeer_curator_name(sv.data[i], "lock-"));
        CU_ASSERT_PTR_NOT_NULL(strstr(theirs, full));
    }
    deallocate_String_vector(&sv);
    CU_ASSERT_EQUAL(curators, 2); /* ours and Java's */
    free(ours);
    free(theirs);
    zkr_strings_free(parts, n);
    /* Both queue behind foreign nodes that never go: both time out. */
    pthread_join(h.t, NULL);
    CU_ASSERT_EQUAL(h.rc, ZKR_ETIMEDOUT);
    CU_ASSERT_TRUE(jis("TIMEOUT", "wait fj 10000"));
    zkr_mutex_free(m);
    zkr_client_close(c);
    zkt_raw_close(raw);
}

static void add_suites(void)
{
    CU_pSuite s = CU_add_suite("curator interop", suite_init, suite_clean);
    CU_add_test(s, "mutex: alternate holders across languages", test_mutex_alternate);
    CU_add_test(s, "mutex: shared counter, thousands of increments from both sides", test_mutex_shared_counter);
    CU_add_test(s, "mutex: queue order across languages; participants equal Curator's", test_queue_order);
    CU_add_test(s, "rwlock: readers share, writers exclude, queued writer not overtaken", test_rwlock);
    CU_add_test(s, "semaphore: 3 leases, 4 Java + 4 C contenders", test_semaphore_mixed);
    CU_add_test(s, "non-reentrant mutex: 4 Java + 4 C contenders", test_semaphore_mutex_mixed);
    CU_add_test(s, "semaphore: lease names and counting across languages", test_lease_names);
    CU_add_test(s, "revocation both ways", test_revocation_both_ways);
    CU_add_test(s, "foreign children are ordered as Curator orders them", test_foreign_children_order);
}

int main(void)
{
    return zkt_main("interop", add_suites);
}

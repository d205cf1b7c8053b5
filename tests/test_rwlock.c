/* zkr_rwlock against a real server: readers share, writers exclude, FIFO
 * (writers are never starved), the watch pattern (readers watch the nearest
 * writer before them, writers their predecessor, nobody the directory), downgrade,
 * refused upgrade, reentrancy, fencing tokens, participants, timeouts and
 * bad arguments. */
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/harness/zkr_test.h"

#define SESSION_MS 4000
#define LONG_WAIT_MS 30000 /* bound for acquires that must succeed */
#define POLL_MS 15000      /* bound for polling the server for a state */
#define READ_MARK "__READ__"
#define WRITE_MARK "__WRIT__"

/* A global order stamp: which of two events happened first. */
static atomic_long g_stamp;

static long next_stamp(void)
{
    return atomic_fetch_add(&g_stamp, 1) + 1;
}

typedef struct watch_want {
    const char *path;
    int n;
} watch_want_t;

static int watch_cond(void *arg)
{
    watch_want_t *w = arg;
    return zkt_watch_count_on_exact(w->path) == w->n;
}

/* Wait (bounded) until the server reports n watches on exactly `path`. */
static int wait_watches(const char *path, int n)
{
    watch_want_t w = {path, n};
    return zkt_wait_for(watch_cond, &w, POLL_MS);
}

/* The sessions the server lists under `path` in its "wchp" report.
 * Returns how many were stored, -1 on error. */
static int watch_sessions(const char *path, int64_t *ids, int max)
{
    char *out = zkt_4lw("wchp");
    if (!out)
        return -1;
    int n = zkt_watch_report_sessions(out, path, 0, ids, max);
    free(out);
    return n < max ? n : max;
}

static int64_t session_of(zkr_client_t *c)
{
    int64_t id = 0;
    CU_ASSERT_EQUAL(zkr_client_session(c, &id, NULL), ZKR_OK);
    return id;
}

static int contains_id(const int64_t *ids, int n, int64_t id)
{
    for (int i = 0; i < n; i++)
        if (ids[i] == id)
            return 1;
    return 0;
}

static const char *basename_of(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

/* Checks "_c_<uuid>-<marker><10 digits>" and copies the digits to seq
 * (11 bytes).  Returns 1 if well formed. */
static int protected_name(const char *name, const char *marker, char *seq)
{
    if (strncmp(name, "_c_", 3) != 0)
        return 0;
    const char *u = name + 3;
    for (int i = 0; i < 36; i++) {
        char ch = u[i];
        if (i == 8 || i == 13 || i == 18 || i == 23) {
            if (ch != '-')
                return 0;
        } else if (!((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f'))) {
            return 0;
        }
    }
    if (u[36] != '-')
        return 0;
    const char *m = u + 37;
    size_t ml = strlen(marker);
    if (strncmp(m, marker, ml) != 0)
        return 0;
    const char *d = m + ml;
    if (strlen(d) != 10)
        return 0;
    for (int i = 0; i < 10; i++)
        if (d[i] < '0' || d[i] > '9')
            return 0;
    if (seq)
        memcpy(seq, d, 11);
    return 1;
}

/* The participants of l as a malloc'd array; asserts success. */
static char **participants(zkr_rwlock_t *l, size_t *n)
{
    char **p = NULL;
    *n = 0;
    CU_ASSERT_EQUAL(zkr_rwlock_participants(l, &p, n), ZKR_OK);
    return p;
}

/* ---- a thread that takes one half, holds it until told, and releases ------------ */

typedef struct worker {
    zkr_rwlock_t *l;
    int writer;
    int64_t timeout_ms;
    pthread_t t;
    atomic_int returned;   /* acquire returned */
    atomic_int rc;         /* its result */
    atomic_long acq_stamp; /* order stamp taken right after a successful acquire */
    atomic_long rel_stamp; /* order stamp taken right before the release */
    atomic_int release_now;
    atomic_int release_rc;
    atomic_int done;
    int64_t token;
} worker_t;

static void *worker_main(void *p)
{
    worker_t *w = p;
    int rc = w->writer ? zkr_rwlock_write_acquire(w->l, w->timeout_ms)
                       : zkr_rwlock_read_acquire(w->l, w->timeout_ms);
    if (rc == ZKR_OK) {
        atomic_store(&w->acq_stamp, next_stamp());
        int64_t tok = 0;
        if (w->writer)
            zkr_rwlock_write_fencing_token(w->l, &tok);
        else
            zkr_rwlock_read_fencing_token(w->l, &tok);
        w->token = tok;
    }
    atomic_store(&w->rc, rc);
    atomic_store(&w->returned, 1);
    if (rc == ZKR_OK) {
        for (int i = 0; i < LONG_WAIT_MS / 10 && !atomic_load(&w->release_now); i++)
            zkt_sleep_ms(10);
        atomic_store(&w->rel_stamp, next_stamp());
        atomic_store(&w->release_rc, w->writer ? zkr_rwlock_write_release(w->l) : zkr_rwlock_read_release(w->l));
    }
    atomic_store(&w->done, 1);
    return NULL;
}

/* Start a worker with a lock object of its own on client c. */
static void worker_start(worker_t *w, zkr_client_t *c, const char *path, int writer, int64_t timeout_ms)
{
    memset(w, 0, sizeof *w);
    w->writer = writer;
    w->timeout_ms = timeout_ms;
    atomic_store(&w->rc, 1);
    CU_ASSERT_EQUAL_FATAL(zkr_rwlock_new(&w->l, c, path), ZKR_OK);
    CU_ASSERT_EQUAL_FATAL(pthread_create(&w->t, NULL, worker_main, w), 0);
}

static int returned_cond(void *arg)
{
    return atomic_load(&((worker_t *)arg)->returned);
}

/* Wait (bounded) until its acquire returned; its result, or 1 if not yet. */
static int worker_wait(worker_t *w)
{
    if (!zkt_wait_for(returned_cond, w, LONG_WAIT_MS))
        return 1;
    return atomic_load(&w->rc);
}

static int done_cond(void *arg)
{
    return atomic_load(&((worker_t *)arg)->done);
}

/* Tell it to release and wait until it did (bounded). */
static void worker_release(worker_t *w)
{
    atomic_store(&w->release_now, 1);
    CU_ASSERT_TRUE(zkt_wait_for(done_cond, w, LONG_WAIT_MS));
    if (atomic_load(&w->rc) == ZKR_OK)
        CU_ASSERT_EQUAL(atomic_load(&w->release_rc), ZKR_OK);
}

static void worker_join(worker_t *w)
{
    atomic_store(&w->release_now, 1);
    pthread_join(w->t, NULL);
    zkr_rwlock_free(w->l);
    w->l = NULL;
}

/* ---- many readers at once, a writer alone --------------------------------------- */

#define STRESS_THREADS 6
#define STRESS_ITERS 12

typedef struct shared_res {
    atomic_int readers;
    atomic_int writers;
    atomic_int max_readers;
    atomic_int violations;
    atomic_int errors;
    atomic_int reads;
    atomic_int writes;
    atomic_long value; /* changed only by writers */
} shared_res_t;

typedef struct stress_arg {
    zkr_rwlock_t *l;
    shared_res_t *res;
    unsigned seed;
} stress_arg_t;

static void note_max(atomic_int *max, int v)
{
    int cur = atomic_load(max);
    while (v > cur && !atomic_compare_exchange_weak(max, &cur, v)) {
    }
}

static void *stress_main(void *p)
{
    stress_arg_t *a = p;
    shared_res_t *r = a->res;
    for (int i = 0; i < STRESS_ITERS; i++) {
        int writer = rand_r(&a->seed) % 3 == 0;
        int hold_ms = 1 + rand_r(&a->seed) % 4;
        if (writer) {
            int rc = zkr_rwlock_write_acquire(a->l, LONG_WAIT_MS);
            if (rc != ZKR_OK) {
                atomic_fetch_add(&r->errors, 1);
                continue;
            }
            if (atomic_fetch_add(&r->writers, 1) != 0 || atomic_load(&r->readers) != 0)
                atomic_fetch_add(&r->violations, 1);
            atomic_fetch_add(&r->value, 1);
            zkt_sleep_ms(hold_ms);
            if (atomic_load(&r->readers) != 0)
                atomic_fetch_add(&r->violations, 1);
            atomic_fetch_sub(&r->writers, 1);
            atomic_fetch_add(&r->writes, 1);
            if (zkr_rwlock_write_release(a->l) != ZKR_OK)
                atomic_fetch_add(&r->errors, 1);
        } else {
            int rc = zkr_rwlock_read_acquire(a->l, LONG_WAIT_MS);
            if (rc != ZKR_OK) {
                atomic_fetch_add(&r->errors, 1);
                continue;
            }
            int n = atomic_fetch_add(&r->readers, 1) + 1;
            note_max(&r->max_readers, n);
            if (atomic_load(&r->writers) != 0)
                atomic_fetch_add(&r->violations, 1);
            long v = atomic_load(&r->value);
            zkt_sleep_ms(hold_ms);
            if (atomic_load(&r->writers) != 0 || atomic_load(&r->value) != v)
                atomic_fetch_add(&r->violations, 1);
            atomic_fetch_sub(&r->readers, 1);
            atomic_fetch_add(&r->reads, 1);
            if (zkr_rwlock_read_release(a->l) != ZKR_OK)
                atomic_fetch_add(&r->errors, 1);
        }
    }
    return NULL;
}

static void test_readers_share_writer_excludes(void)
{
    char path[128];
    zkt_path("rw-stress", path, sizeof path);
    shared_res_t res;
    memset(&res, 0, sizeof res);
    /* Threads 0..3: a client and a lock object each.  Threads 4 and 5
     * share one client and one lock object (holds are per thread). */
    zkr_client_t *c[5];
    zkr_rwlock_t *l[5];
    for (int i = 0; i < 5; i++) {
        c[i] = zkt_client(SESSION_MS);
        CU_ASSERT_EQUAL_FATAL(zkr_rwlock_new(&l[i], c[i], path), ZKR_OK);
    }
    stress_arg_t args[STRESS_THREADS];
    pthread_t t[STRESS_THREADS];
    for (int i = 0; i < STRESS_THREADS; i++) {
        args[i].l = l[i < 5 ? i : 4];
        args[i].res = &res;
        args[i].seed = 7919u * (unsigned)(i + 1);
        CU_ASSERT_EQUAL_FATAL(pthread_create(&t[i], NULL, stress_main, &args[i]), 0);
    }
    for (int i = 0; i < STRESS_THREADS; i++)
        pthread_join(t[i], NULL);
    printf("\n    reads %d, writes %d, max concurrent readers %d ", atomic_load(&res.reads),
           atomic_load(&res.writes), atomic_load(&res.max_readers));
    CU_ASSERT_EQUAL(atomic_load(&res.violations), 0);
    CU_ASSERT_EQUAL(atomic_load(&res.errors), 0);
    CU_ASSERT_EQUAL(atomic_load(&res.reads) + atomic_load(&res.writes), STRESS_THREADS * STRESS_ITERS);
    CU_ASSERT_TRUE(atomic_load(&res.writes) > 0);
    CU_ASSERT_TRUE(atomic_load(&res.reads) > 0);

    zhandle_t *raw = zkt_raw();
    CU_ASSERT_EQUAL(zkt_count_children(raw, path), 0);
    zkt_raw_close(raw);
    for (int i = 0; i < 5; i++) {
        zkr_rwlock_free(l[i]);
        zkr_client_close(c[i]);
    }
}

/* Two readers that each wait, while holding, until both have entered
 * (`entered` only grows).  Each holds from before its own increment until
 * after it saw both increments, so at the later increment both hold: this
 * can only finish if readers really share the lock. */
typedef struct pair_arg {
    zkr_rwlock_t *l;
    atomic_int *inside;
    int rc;
    int saw_both;
} pair_arg_t;

static int both_inside_cond(void *arg)
{
    return atomic_load((atomic_int *)arg) >= 2;
}

static void *pair_reader(void *p)
{
    pair_arg_t *a = p;
    a->rc = zkr_rwlock_read_acquire(a->l, LONG_WAIT_MS);
    if (a->rc != ZKR_OK)
        return NULL;
    atomic_fetch_add(a->inside, 1);
    a->saw_both = zkt_wait_for(both_inside_cond, a->inside, POLL_MS);
    a->rc = zkr_rwlock_read_release(a->l);
    return NULL;
}

static void test_two_readers_hold_together(void)
{
    char path[128];
    zkt_path("rw-two-readers", path, sizeof path);
    zkr_client_t *c1 = zkt_client(SESSION_MS), *c2 = zkt_client(SESSION_MS), *c3 = zkt_client(SESSION_MS);
    zkr_rwlock_t *l1, *l2, *l3;
    CU_ASSERT_EQUAL_FATAL(zkr_rwlock_new(&l1, c1, path), ZKR_OK);
    CU_ASSERT_EQUAL_FATAL(zkr_rwlock_new(&l2, c2, path), ZKR_OK);
    CU_ASSERT_EQUAL_FATAL(zkr_rwlock_new(&l3, c3, path), ZKR_OK);

    /* In threads: each holds until it sees the other inside. */
    atomic_int inside = 0;
    pair_arg_t a1 = {l1, &inside, 1, 0}, a2 = {l2, &inside, 1, 0};
    pthread_t t1, t2;
    CU_ASSERT_EQUAL_FATAL(pthread_create(&t1, NULL, pair_reader, &a1), 0);
    CU_ASSERT_EQUAL_FATAL(pthread_create(&t2, NULL, pair_reader, &a2), 0);
    pthread_join(t1, NULL);
    pthread_join(t2, NULL);
    CU_ASSERT_EQUAL(a1.rc, ZKR_OK);
    CU_ASSERT_EQUAL(a2.rc, ZKR_OK);
    CU_ASSERT_TRUE(a1.saw_both);
    CU_ASSERT_TRUE(a2.saw_both);

    /* From one thread: a second reader gets in on a single try while the
     * first holds; a writer cannot. */
    CU_ASSERT_EQUAL_FATAL(zkr_rwlock_read_acquire(l1, 5000), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_rwlock_read_acquire(l2, 0), ZKR_OK);
    CU_ASSERT_TRUE(zkr_rwlock_read_is_held(l1));
    CU_ASSERT_TRUE(zkr_rwlock_read_is_held(l2));
    size_t n = 0;
    char **p = participants(l3, &n);
    CU_ASSERT_EQUAL(n, 2);
    for (size_t i = 0; i < n; i++)
        CU_ASSERT_TRUE(protected_name(basename_of(p[i]), READ_MARK, NULL));
    zkr_strings_free(p, n);
    CU_ASSERT_EQUAL(zkr_rwlock_write_acquire(l3, 300), ZKR_ETIMEDOUT);
    CU_ASSERT_FALSE(zkr_rwlock_write_is_held(l3));
    CU_ASSERT_EQUAL(zkr_rwlock_read_release(l1), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_rwlock_write_acquire(l3, 300), ZKR_ETIMEDOUT); /* l2 still reads */
    CU_ASSERT_EQUAL(zkr_rwlock_read_release(l2), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_rwlock_write_acquire(l3, 5000), ZKR_OK);
    /* ... and now readers cannot. */
    CU_ASSERT_EQUAL(zkr_rwlock_read_acquire(l1, 300), ZKR_ETIMEDOUT);
    CU_ASSERT_EQUAL(zkr_rwlock_write_release(l3), ZKR_OK);

    zkr_rwlock_free(l1);
    zkr_rwlock_free(l2);
    zkr_rwlock_free(l3);
    zkr_client_close(c1);
    zkr_client_close(c2);
    zkr_client_close(c3);
}

/* ---- writers are not starved ------------------------------------------------------ */

static void test_writer_not_starved(void)
{
    char path[128];
    zkt_path("rw-starve", path, sizeof path);
    zhandle_t *raw = zkt_raw();
    zkr_client_t *cr1 = zkt_client(SESSION_MS), *cw = zkt_client(SESSION_MS), *cr2 = zkt_client(SESSION_MS);
    zkr_rwlock_t *r1, *r2probe;
    CU_ASSERT_EQUAL_FATAL(zkr_rwlock_new(&r1, cr1, path), ZKR_OK);
    CU_ASSERT_EQUAL_FATAL(zkr_rwlock_new(&r2probe, cr2, path), ZKR_OK);

    CU_ASSERT_EQUAL_FATAL(zkr_rwlock_read_acquire(r1, 5000), ZKR_OK);
    worker_t w;
    worker_start(&w, cw, path, 1, LONG_WAIT_MS);
    CU_ASSERT_TRUE_FATAL(zkt_wait_children(raw, path, 2, POLL_MS)); /* W is queued */
    CU_ASSERT_EQUAL(atomic_load(&w.returned), 0);

    /* R2 arrives after W: it must wait behind W, although only a reader
     * holds the lock. */
    CU_ASSERT_EQUAL(zkr_rwlock_read_acquire(r2probe, 300), ZKR_ETIMEDOUT);
    CU_ASSERT_EQUAL(zkt_count_children(raw, path), 2);
    worker_t r2;
    worker_start(&r2, cr2, path, 0, LONG_WAIT_MS);
    CU_ASSERT_TRUE_FATAL(zkt_wait_children(raw, path, 3, POLL_MS));
    zkt_sleep_ms(300);
    CU_ASSERT_EQUAL(atomic_load(&w.returned), 0);
    CU_ASSERT_EQUAL(atomic_load(&r2.returned), 0);

    /* R1 leaves: W gets it, R2 still waits. */
    long r1_left = next_stamp();
    CU_ASSERT_EQUAL(zkr_rwlock_read_release(r1), ZKR_OK);
    CU_ASSERT_EQUAL(worker_wait(&w), ZKR_OK);
    CU_ASSERT_TRUE(atomic_load(&w.acq_stamp) > r1_left);
    zkt_sleep_ms(300);
    CU_ASSERT_EQUAL(atomic_load(&r2.returned), 0);

    /* W leaves: R2 gets it, after W's release. */
    worker_release(&w);
    CU_ASSERT_EQUAL(worker_wait(&r2), ZKR_OK);
    CU_ASSERT_TRUE(atomic_load(&r2.acq_stamp) > atomic_load(&w.rel_stamp));
    worker_release(&r2);
    worker_join(&w);
    worker_join(&r2);
    CU_ASSERT_EQUAL(zkt_count_children(raw, path), 0);

    zkr_rwlock_free(r1);
    zkr_rwlock_free(r2probe);
    zkr_client_close(cr1);
    zkr_client_close(cw);
    zkr_client_close(cr2);
    zkt_raw_close(raw);
}

/* ---- the watch pattern: readers wait on a writer, writers on their predecessor ------ */

#define HERD_READERS 10

static void test_herd_watches(void)
{
    char path[128];
    zkt_path("rw-herd", path, sizeof path);
    zhandle_t *raw = zkt_raw();
    zkr_client_t *cw = zkt_client(SESSION_MS);
    zkr_rwlock_t *lw;
    CU_ASSERT_EQUAL_FATAL(zkr_rwlock_new(&lw, cw, path), ZKR_OK);
    CU_ASSERT_EQUAL_FATAL(zkr_rwlock_write_acquire(lw, 5000), ZKR_OK);
    size_t n = 0;
    char **p = participants(lw, &n);
    CU_ASSERT_FATAL(n == 1);
    char wpath[256];
    snprintf(wpath, sizeof wpath, "%s", p[0]);
    zkr_strings_free(p, n);

    /* Ten readers, one client (= one session) each. */
    zkr_client_t *cr[HERD_READERS];
    worker_t r[HERD_READERS];
    int64_t rid[HERD_READERS];
    for (int i = 0; i < HERD_READERS; i++) {
        cr[i] = zkt_client(SESSION_MS);
        rid[i] = session_of(cr[i]);
        worker_start(&r[i], cr[i], path, 0, LONG_WAIT_MS);
    }
    CU_ASSERT_TRUE(zkt_wait_children(raw, path, HERD_READERS + 1, POLL_MS));
    CU_ASSERT_TRUE(wait_watches(wpath, HERD_READERS));
    int64_t ids[2 * HERD_READERS];
    int k = watch_sessions(wpath, ids, 2 * HERD_READERS);
    CU_ASSERT_EQUAL(k, HERD_READERS);
    for (int i = 0; i < HERD_READERS; i++)
        CU_ASSERT_TRUE(contains_id(ids, k, rid[i]));
    CU_ASSERT_EQUAL(zkt_watch_count_on_exact(path), 0); /* no children watch on the directory */
    /* ... and no reader watches another reader. */
    p = participants(lw, &n);
    CU_ASSERT_EQUAL(n, HERD_READERS + 1);
    for (size_t i = 1; i < n; i++) {
        CU_ASSERT_TRUE(protected_name(basename_of(p[i]), READ_MARK, NULL));
        CU_ASSERT_EQUAL(zkt_watch_count_on_exact(p[i]), 0);
    }
    zkr_strings_free(p, n);
    for (int i = 0; i < HERD_READERS; i++)
        CU_ASSERT_EQUAL(atomic_load(&r[i].returned), 0);

    /* The writer goes: every reader gets in, all at once. */
    CU_ASSERT_EQUAL(zkr_rwlock_write_release(lw), ZKR_OK);
    for (int i = 0; i < HERD_READERS; i++)
        CU_ASSERT_EQUAL(worker_wait(&r[i]), ZKR_OK);
    CU_ASSERT_EQUAL(zkt_count_children(raw, path), HERD_READERS);
    for (int i = 0; i < HERD_READERS; i++)
        worker_release(&r[i]);
    for (int i = 0; i < HERD_READERS; i++) {
        worker_join(&r[i]);
        zkr_client_close(cr[i]);
    }
    CU_ASSERT_EQUAL(zkt_count_children(raw, path), 0);

    /* Writers queued: each watches only its predecessor. */
    char path2[128];
    zkt_path("rw-writers", path2, sizeof path2);
    zkr_rwlock_t *lw1;
    CU_ASSERT_EQUAL_FATAL(zkr_rwlock_new(&lw1, cw, path2), ZKR_OK);
    CU_ASSERT_EQUAL_FATAL(zkr_rwlock_write_acquire(lw1, 5000), ZKR_OK);
    zkr_client_t *c2 = zkt_client(SESSION_MS), *c3 = zkt_client(SESSION_MS);
    worker_t w2, w3;
    worker_start(&w2, c2, path2, 1, LONG_WAIT_MS);
    CU_ASSERT_TRUE_FATAL(zkt_wait_children(raw, path2, 2, POLL_MS));
    worker_start(&w3, c3, path2, 1, LONG_WAIT_MS);
    CU_ASSERT_TRUE_FATAL(zkt_wait_children(raw, path2, 3, POLL_MS));
    p = participants(lw1, &n);
    CU_ASSERT_FATAL(n == 3);
    CU_ASSERT_TRUE(wait_watches(p[0], 1));
    CU_ASSERT_TRUE(wait_watches(p[1], 1));
    CU_ASSERT_EQUAL(watch_sessions(p[0], ids, 4), 1);
    CU_ASSERT_EQUAL(ids[0], session_of(c2));
    CU_ASSERT_EQUAL(watch_sessions(p[1], ids, 4), 1);
    CU_ASSERT_EQUAL(ids[0], session_of(c3));
    CU_ASSERT_EQUAL(zkt_watch_count_on_exact(p[2]), 0);
    CU_ASSERT_EQUAL(zkt_watch_count_on_exact(path2), 0);
    zkr_strings_free(p, n);

    /* They get it one after the other, in order. */
    CU_ASSERT_EQUAL(zkr_rwlock_write_release(lw1), ZKR_OK);
    CU_ASSERT_EQUAL(worker_wait(&w2), ZKR_OK);
    zkt_sleep_ms(200);
    CU_ASSERT_EQUAL(atomic_load(&w3.returned), 0);
    worker_release(&w2);
    CU_ASSERT_EQUAL(worker_wait(&w3), ZKR_OK);
    CU_ASSERT_TRUE(atomic_load(&w3.acq_stamp) > atomic_load(&w2.rel_stamp));
    CU_ASSERT_TRUE(w3.token > w2.token);
    worker_release(&w3);
    worker_join(&w2);
    worker_join(&w3);

    /* A writer queued behind two readers watches the later reader only. */
    char path3[128];
    zkt_path("rw-writer-behind-readers", path3, sizeof path3);
    zkr_rwlock_t *la, *lb;
    CU_ASSERT_EQUAL_FATAL(zkr_rwlock_new(&la, cw, path3), ZKR_OK);
    CU_ASSERT_EQUAL_FATAL(zkr_rwlock_new(&lb, c2, path3), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_rwlock_read_acquire(la, 5000), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_rwlock_read_acquire(lb, 5000), ZKR_OK);
    worker_t w4;
    worker_start(&w4, c3, path3, 1, LONG_WAIT_MS);
    CU_ASSERT_TRUE_FATAL(zkt_wait_children(raw, path3, 3, POLL_MS));
    p = participants(la, &n);
    CU_ASSERT_FATAL(n == 3);
    CU_ASSERT_TRUE(wait_watches(p[1], 1));
    CU_ASSERT_EQUAL(zkt_watch_count_on_exact(p[0]), 0);
    CU_ASSERT_EQUAL(zkt_watch_count_on_exact(path3), 0);
    zkr_strings_free(p, n);
    CU_ASSERT_EQUAL(zkr_rwlock_read_release(la), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_rwlock_read_release(lb), ZKR_OK);
    CU_ASSERT_EQUAL(worker_wait(&w4), ZKR_OK);
    worker_release(&w4);
    worker_join(&w4);
    CU_ASSERT_EQUAL(zkt_count_children(raw, path3), 0);

    zkr_rwlock_free(la);
    zkr_rwlock_free(lb);
    zkr_rwlock_free(lw1);
    zkr_rwlock_free(lw);
    zkr_client_close(c2);
    zkr_client_close(c3);
    zkr_client_close(cw);
    zkt_raw_close(raw);
}

/* ---- readers behind two writers: each wakes only when its own writer goes ---------- */

#define NW_READERS 3

/* W1 holds; readers a queue, then writer W2, then readers b.  The a
 * readers watch W1, the b readers watch W2 (the nearest writer before
 * them), so W1's release wakes exactly the a readers. */

typedef struct woken_want {
    long long from;
    int n;
} woken_want_t;

/* The server's count of watches fired by deletes has grown by n or more. */
static int woken_reached(void *arg)
{
    woken_want_t *w = arg;
    long long v = zkt_stat_value("mntr", "zk_sum_node_deleted_watch_count");
    return v >= 0 && v - w->from >= w->n;
}

static void test_readers_watch_nearest_writer(void)
{
    char path[128];
    zkt_path("rw-nearest", path, sizeof path);
    zhandle_t *raw = zkt_raw();
    zkr_client_t *cw = zkt_client(SESSION_MS);
    zkr_rwlock_t *lw;
    CU_ASSERT_EQUAL_FATAL(zkr_rwlock_new(&lw, cw, path), ZKR_OK);
    CU_ASSERT_EQUAL_FATAL(zkr_rwlock_write_acquire(lw, 5000), ZKR_OK);
    zkr_client_t *ca[NW_READERS], *cb[NW_READERS], *cw2 = zkt_client(SESSION_MS);
    worker_t ra[NW_READERS], rb[NW_READERS], w2;
    int nodes = 1;
    for (int i = 0; i < NW_READERS; i++) {
        ca[i] = zkt_client(SESSION_MS);
        worker_start(&ra[i], ca[i], path, 0, LONG_WAIT_MS);
        CU_ASSERT_TRUE_FATAL(zkt_wait_children(raw, path, ++nodes, POLL_MS));
    }
    worker_start(&w2, cw2, path, 1, LONG_WAIT_MS);
    CU_ASSERT_TRUE_FATAL(zkt_wait_children(raw, path, ++nodes, POLL_MS));
    for (int i = 0; i < NW_READERS; i++) {
        cb[i] = zkt_client(SESSION_MS);
        worker_start(&rb[i], cb[i], path, 0, LONG_WAIT_MS);
        CU_ASSERT_TRUE_FATAL(zkt_wait_children(raw, path, ++nodes, POLL_MS));
    }
    size_t n = 0;
    char **p = participants(lw, &n);
    CU_ASSERT_FATAL(n == 2 + 2 * NW_READERS);
    const char *w1node = p[0], *w2node = p[1 + NW_READERS];
    /* W1: watched by the a readers only; W2: by the b readers, and W2
     * itself watches the last a reader. */
    CU_ASSERT_TRUE(wait_watches(w1node, NW_READERS));
    CU_ASSERT_TRUE(wait_watches(w2node, NW_READERS));
    int64_t ids[4 * NW_READERS];
    int k = watch_sessions(w1node, ids, 4 * NW_READERS);
    CU_ASSERT_EQUAL(k, NW_READERS);
    for (int i = 0; i < NW_READERS; i++)
        CU_ASSERT_TRUE(contains_id(ids, k, session_of(ca[i])));
    k = watch_sessions(w2node, ids, 4 * NW_READERS);
    CU_ASSERT_EQUAL(k, NW_READERS);
    for (int i = 0; i < NW_READERS; i++)
        CU_ASSERT_TRUE(contains_id(ids, k, session_of(cb[i])));
    CU_ASSERT_TRUE(wait_watches(p[NW_READERS], 1));

    /* W1 goes: the a readers get in, and only they were woken (and W1's
     * own session, whose watch on its node its delete fires). */
    int own = zkt_owner_watches(w1node) == 1;
    long long woken0 = zkt_stat_value("mntr", "zk_sum_node_deleted_watch_count");
    CU_ASSERT_EQUAL(zkr_rwlock_write_release(lw), ZKR_OK);
    for (int i = 0; i < NW_READERS; i++)
        CU_ASSERT_EQUAL(worker_wait(&ra[i]), ZKR_OK);
    /* The server adds the watches one delete fired to its count after it
     * has sent them: wait for it, then it must be exactly those. */
    woken_want_t ww = {woken0, NW_READERS + own};
    CU_ASSERT_TRUE(zkt_wait_for(woken_reached, &ww, 10000));
    long long woken1 = zkt_stat_value("mntr", "zk_sum_node_deleted_watch_count");
    CU_ASSERT_EQUAL(woken1 - woken0, NW_READERS + own);
    CU_ASSERT_EQUAL(atomic_load(&w2.returned), 0);
    for (int i = 0; i < NW_READERS; i++)
        CU_ASSERT_EQUAL(atomic_load(&rb[i].returned), 0);
    /* The a readers go: W2 gets it; then the b readers after W2. */
    for (int i = 0; i < NW_READERS; i++)
        worker_release(&ra[i]);
    CU_ASSERT_EQUAL(worker_wait(&w2), ZKR_OK);
    for (int i = 0; i < NW_READERS; i++)
        CU_ASSERT_EQUAL(atomic_load(&rb[i].returned), 0);
    worker_release(&w2);
    for (int i = 0; i < NW_READERS; i++)
        CU_ASSERT_EQUAL(worker_wait(&rb[i]), ZKR_OK);
    for (int i = 0; i < NW_READERS; i++) {
        CU_ASSERT_TRUE(rb[i].token > w2.token);
        worker_release(&rb[i]);
    }
    for (int i = 0; i < NW_READERS; i++) {
        worker_join(&ra[i]);
        worker_join(&rb[i]);
        zkr_client_close(ca[i]);
        zkr_client_close(cb[i]);
    }
    worker_join(&w2);
    zkr_strings_free(p, n);
    CU_ASSERT_EQUAL(zkt_count_children(raw, path), 0);
    zkr_rwlock_free(lw);
    zkr_client_close(cw2);
    zkr_client_close(cw);
    zkt_raw_close(raw);
}

/* ---- downgrade ------------------------------------------------------------------- */

static void test_downgrade(void)
{
    char path[128];
    zkt_path("rw-downgrade", path, sizeof path);
    zhandle_t *raw = zkt_raw();
    zkr_client_t *ca = zkt_client(SESSION_MS), *cb = zkt_client(SESSION_MS), *cc = zkt_client(SESSION_MS);
    zkr_rwlock_t *l, *probe;
    CU_ASSERT_EQUAL_FATAL(zkr_rwlock_new(&l, ca, path), ZKR_OK);
    CU_ASSERT_EQUAL_FATAL(zkr_rwlock_new(&probe, cc, path), ZKR_OK);

    CU_ASSERT_EQUAL_FATAL(zkr_rwlock_write_acquire(l, 5000), ZKR_OK);
    size_t n = 0;
    char **p = participants(l, &n);
    CU_ASSERT_FATAL(n == 1);
    char wname[128], wseq[11] = "";
    snprintf(wname, sizeof wname, "%s", basename_of(p[0]));
    zkr_strings_free(p, n);
    CU_ASSERT_TRUE(protected_name(wname, WRITE_MARK, wseq));
    int64_t wtok = 0;
    CU_ASSERT_EQUAL(zkr_rwlock_write_fencing_token(l, &wtok), ZKR_OK);

    /* Another writer queues. */
    worker_t w2;
    worker_start(&w2, cb, path, 1, LONG_WAIT_MS);
    CU_ASSERT_TRUE_FATAL(zkt_wait_children(raw, path, 2, POLL_MS));

    /* The holder takes the read lock on a single try: no queueing. */
    CU_ASSERT_EQUAL_FATAL(zkr_rwlock_read_acquire(l, 0), ZKR_OK);
    CU_ASSERT_TRUE(zkr_rwlock_read_is_held(l));
    CU_ASSERT_TRUE(zkr_rwlock_write_is_held(l));
    CU_ASSERT_EQUAL(zkt_count_children(raw, path), 3);

    /* Its read node: "_c_<uuid>-__READ__<the writer's digits>", ephemeral,
     * owned by our session. */
    p = participants(l, &n);
    int found = 0;
    for (size_t i = 0; i < n; i++) {
        const char *b = basename_of(p[i]);
        if (!strstr(b, READ_MARK))
            continue;
        found++;
        char rseq[11] = "";
        CU_ASSERT_TRUE(protected_name(b, READ_MARK, rseq));
        CU_ASSERT_STRING_EQUAL(rseq, wseq);
        CU_ASSERT_NOT_EQUAL(strncmp(b, wname, 39), 0); /* a fresh uuid */
        struct Stat st;
        CU_ASSERT_EQUAL(zoo_exists(raw, p[i], 0, &st), ZOK);
        CU_ASSERT_EQUAL(st.ephemeralOwner, session_of(ca));
        int64_t rtok = 0;
        CU_ASSERT_EQUAL(zkr_rwlock_read_fencing_token(l, &rtok), ZKR_OK);
        CU_ASSERT_EQUAL(rtok, st.czxid);
        CU_ASSERT_TRUE(rtok > wtok);
    }
    CU_ASSERT_EQUAL(found, 1);
    /* It sorts where the writer stood: before the queued writer. */
    if (n == 3) {
        CU_ASSERT_PTR_NOT_NULL(strstr(basename_of(p[2]), WRITE_MARK));
        CU_ASSERT_NOT_EQUAL(strcmp(basename_of(p[2]), wname), 0);
    }
    zkr_strings_free(p, n);

    /* Release the write half: the queued writer still cannot get in. */
    CU_ASSERT_EQUAL(zkr_rwlock_write_release(l), ZKR_OK);
    CU_ASSERT_FALSE(zkr_rwlock_write_is_held(l));
    CU_ASSERT_TRUE(zkr_rwlock_read_is_held(l));
    CU_ASSERT_EQUAL(zkt_count_children(raw, path), 2);
    CU_ASSERT_EQUAL(zkr_rwlock_write_acquire(probe, 300), ZKR_ETIMEDOUT);
    CU_ASSERT_EQUAL(zkt_count_children(raw, path), 2);
    zkt_sleep_ms(200);
    CU_ASSERT_EQUAL(atomic_load(&w2.returned), 0);
    /* Other readers still can't pass the queued writer. */
    CU_ASSERT_EQUAL(zkr_rwlock_read_acquire(probe, 300), ZKR_ETIMEDOUT);

    /* Release the read: now the writer gets in. */
    long read_left = next_stamp();
    CU_ASSERT_EQUAL(zkr_rwlock_read_release(l), ZKR_OK);
    CU_ASSERT_EQUAL(worker_wait(&w2), ZKR_OK);
    CU_ASSERT_TRUE(atomic_load(&w2.acq_stamp) > read_left);
    CU_ASSERT_TRUE(w2.token > wtok);
    worker_release(&w2);
    worker_join(&w2);
    CU_ASSERT_EQUAL(zkt_count_children(raw, path), 0);

    /* Downgrade, then release in the other order (read first). */
    CU_ASSERT_EQUAL(zkr_rwlock_write_acquire(l, 5000), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_rwlock_read_acquire(l, 0), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_rwlock_read_release(l), ZKR_OK);
    CU_ASSERT_TRUE(zkr_rwlock_write_is_held(l));
    CU_ASSERT_EQUAL(zkt_count_children(raw, path), 1);
    CU_ASSERT_EQUAL(zkr_rwlock_write_release(l), ZKR_OK);
    CU_ASSERT_EQUAL(zkt_count_children(raw, path), 0);

    zkr_rwlock_free(l);
    zkr_rwlock_free(probe);
    zkr_client_close(ca);
    zkr_client_close(cb);
    zkr_client_close(cc);
    zkt_raw_close(raw);
}

/* A write hold lost with its session is no ground for a downgrade: the
 * read node would take the old writer's place at the head of the queue
 * while another writer holds the lock. */
static void test_no_downgrade_after_session_loss(void)
{
    char path[128];
    zkt_path("rw-downgrade-lost", path, sizeof path);
    zhandle_t *raw = zkt_raw();
    zkr_client_t *c = zkt_client(SESSION_MS), *o = zkt_client(SESSION_MS);
    zkr_rwlock_t *l, *lo;
    CU_ASSERT_EQUAL_FATAL(zkr_rwlock_new(&l, c, path), ZKR_OK);
    CU_ASSERT_EQUAL_FATAL(zkr_rwlock_new(&lo, o, path), ZKR_OK);
    CU_ASSERT_EQUAL_FATAL(zkr_rwlock_write_acquire(l, 5000), ZKR_OK);

    zkt_expire_client(c, SESSION_MS);
    /* The write node went with the session: another writer gets in. */
    CU_ASSERT_EQUAL_FATAL(zkr_rwlock_write_acquire(lo, 10000), ZKR_OK);
    CU_ASSERT_EQUAL(zkt_count_children(raw, path), 1);

    /* The thread still has its (lost) write hold locally; a read must not
     * be granted on it while the other writer holds the lock. */
    int rc = zkr_rwlock_read_acquire(l, 0);
    CU_ASSERT_NOT_EQUAL(rc, ZKR_OK);
    CU_ASSERT_EQUAL(rc, ZKR_ESESSIONLOST);
    CU_ASSERT_FALSE(zkr_rwlock_read_is_held(l));
    CU_ASSERT_EQUAL(zkt_count_children(raw, path), 1); /* nothing left behind */
    if (rc == ZKR_OK)
        zkr_rwlock_read_release(l);
    CU_ASSERT_EQUAL(zkr_rwlock_write_release(l), ZKR_ELOST);

    CU_ASSERT_EQUAL(zkr_rwlock_write_release(lo), ZKR_OK);
    /* The client works on its new session. */
    CU_ASSERT_EQUAL(zkr_rwlock_write_acquire(l, 5000), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_rwlock_read_acquire(l, 0), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_rwlock_write_release(l), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_rwlock_read_release(l), ZKR_OK);
    CU_ASSERT_EQUAL(zkt_count_children(raw, path), 0);

    zkr_rwlock_free(l);
    zkr_rwlock_free(lo);
    zkr_client_close(c);
    zkr_client_close(o);
    zkt_raw_close(raw);
}

/* ---- upgrade refused ---------------------------------------------------------------- */

static void test_upgrade_refused(void)
{
    char path[128];
    zkt_path("rw-upgrade", path, sizeof path);
    zhandle_t *raw = zkt_raw();
    zkr_client_t *c = zkt_client(SESSION_MS);
    zkr_rwlock_t *l;
    CU_ASSERT_EQUAL_FATAL(zkr_rwlock_new(&l, c, path), ZKR_OK);
    CU_ASSERT_EQUAL_FATAL(zkr_rwlock_read_acquire(l, 5000), ZKR_OK);
    CU_ASSERT_EQUAL(zkt_count_children(raw, path), 1);

    /* Refused at once although the timeout is long (it would otherwise
     * have queued behind our own read node and timed out). */
    int64_t t0 = zkt_now_ms();
    CU_ASSERT_EQUAL(zkr_rwlock_write_acquire(l, 10000), ZKR_ENEVER);
    CU_ASSERT_TRUE(zkt_now_ms() - t0 < 9000);
    CU_ASSERT_EQUAL(zkr_rwlock_write_acquire(l, 0), ZKR_ENEVER);
    CU_ASSERT_EQUAL(zkt_count_children(raw, path), 1);
    CU_ASSERT_FALSE(zkr_rwlock_write_is_held(l));
    CU_ASSERT_TRUE(zkr_rwlock_read_is_held(l));
    CU_ASSERT_EQUAL(zkr_rwlock_write_release(l), ZKR_ENOTOWNER);

    /* Reentrant read: still refused; the read holds are intact. */
    CU_ASSERT_EQUAL(zkr_rwlock_read_acquire(l, 0), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_rwlock_write_acquire(l, 10000), ZKR_ENEVER);
    CU_ASSERT_EQUAL(zkt_count_children(raw, path), 1);
    CU_ASSERT_EQUAL(zkr_rwlock_read_release(l), ZKR_OK);
    CU_ASSERT_TRUE(zkr_rwlock_read_is_held(l));
    CU_ASSERT_EQUAL(zkr_rwlock_read_release(l), ZKR_OK);
    CU_ASSERT_FALSE(zkr_rwlock_read_is_held(l));
    CU_ASSERT_EQUAL(zkt_count_children(raw, path), 0);

    /* Once the read is released, the write lock is granted. */
    CU_ASSERT_EQUAL(zkr_rwlock_write_acquire(l, 5000), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_rwlock_write_release(l), ZKR_OK);

    zkr_rwlock_free(l);
    zkr_client_close(c);
    zkt_raw_close(raw);
}

/* ---- reentrancy, ENOTOWNER, fencing, participants ------------------------------------ */

typedef struct other_release {
    zkr_rwlock_t *l;
    int read_rc, write_rc, read_held, write_held;
} other_release_t;

static void *other_thread_release(void *p)
{
    other_release_t *o = p;
    o->read_held = zkr_rwlock_read_is_held(o->l);
    o->write_held = zkr_rwlock_write_is_held(o->l);
    o->read_rc = zkr_rwlock_read_release(o->l);
    o->write_rc = zkr_rwlock_write_release(o->l);
    return NULL;
}

static void test_reentrancy_and_owner(void)
{
    char path[128];
    zkt_path("rw-reentrant", path, sizeof path);
    zhandle_t *raw = zkt_raw();
    zkr_client_t *c = zkt_client(SESSION_MS);
    zkr_rwlock_t *l;
    CU_ASSERT_EQUAL_FATAL(zkr_rwlock_new(&l, c, path), ZKR_OK);

    /* Not held: nothing to release, no token. */
    int64_t tok = 0;
    CU_ASSERT_EQUAL(zkr_rwlock_read_release(l), ZKR_ENOTOWNER);
    CU_ASSERT_EQUAL(zkr_rwlock_write_release(l), ZKR_ENOTOWNER);
    CU_ASSERT_EQUAL(zkr_rwlock_read_fencing_token(l, &tok), ZKR_ENOTOWNER);
    CU_ASSERT_EQUAL(zkr_rwlock_write_fencing_token(l, &tok), ZKR_ENOTOWNER);

    /* Read, three times: one node. */
    for (int i = 0; i < 3; i++)
        CU_ASSERT_EQUAL(zkr_rwlock_read_acquire(l, 5000), ZKR_OK);
    CU_ASSERT_EQUAL(zkt_count_children(raw, path), 1);
    int64_t t1 = 0, t2 = 0;
    CU_ASSERT_EQUAL(zkr_rwlock_read_fencing_token(l, &t1), ZKR_OK);
    CU_ASSERT_TRUE(t1 > 0);

    /* Another thread holds nothing of it. */
    other_release_t o = {l, 0, 0, 1, 1};
    pthread_t t;
    CU_ASSERT_EQUAL_FATAL(pthread_create(&t, NULL, other_thread_release, &o), 0);
    pthread_join(t, NULL);
    CU_ASSERT_EQUAL(o.read_held, 0);
    CU_ASSERT_EQUAL(o.write_held, 0);
    CU_ASSERT_EQUAL(o.read_rc, ZKR_ENOTOWNER);
    CU_ASSERT_EQUAL(o.write_rc, ZKR_ENOTOWNER);
    CU_ASSERT_EQUAL(zkt_count_children(raw, path), 1);

    for (int i = 0; i < 2; i++) {
        CU_ASSERT_EQUAL(zkr_rwlock_read_release(l), ZKR_OK);
        CU_ASSERT_TRUE(zkr_rwlock_read_is_held(l));
        CU_ASSERT_EQUAL(zkt_count_children(raw, path), 1);
    }
    CU_ASSERT_EQUAL(zkr_rwlock_read_fencing_token(l, &t2), ZKR_OK);
    CU_ASSERT_EQUAL(t1, t2);
    CU_ASSERT_EQUAL(zkr_rwlock_read_release(l), ZKR_OK);
    CU_ASSERT_FALSE(zkr_rwlock_read_is_held(l));
    CU_ASSERT_EQUAL(zkt_count_children(raw, path), 0);
    CU_ASSERT_EQUAL(zkr_rwlock_read_release(l), ZKR_ENOTOWNER);

    /* Write, three times (and a read in between: a downgrade hold). */
    for (int i = 0; i < 3; i++)
        CU_ASSERT_EQUAL(zkr_rwlock_write_acquire(l, 5000), ZKR_OK);
    CU_ASSERT_EQUAL(zkt_count_children(raw, path), 1);
    CU_ASSERT_EQUAL(zkr_rwlock_read_acquire(l, 0), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_rwlock_read_acquire(l, 0), ZKR_OK);
    CU_ASSERT_EQUAL(zkt_count_children(raw, path), 2);
    CU_ASSERT_EQUAL(zkr_rwlock_write_acquire(l, 0), ZKR_OK); /* reentry, not an upgrade */
    for (int i = 0; i < 4; i++) {
        CU_ASSERT_TRUE(zkr_rwlock_write_is_held(l));
        CU_ASSERT_EQUAL(zkr_rwlock_write_release(l), ZKR_OK);
    }
    CU_ASSERT_FALSE(zkr_rwlock_write_is_held(l));
    CU_ASSERT_EQUAL(zkr_rwlock_write_release(l), ZKR_ENOTOWNER);
    CU_ASSERT_EQUAL(zkt_count_children(raw, path), 1);
    CU_ASSERT_EQUAL(zkr_rwlock_read_release(l), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_rwlock_read_release(l), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_rwlock_read_release(l), ZKR_ENOTOWNER);
    CU_ASSERT_EQUAL(zkt_count_children(raw, path), 0);

    /* Free releases holds still open. */
    zkr_rwlock_t *l2;
    CU_ASSERT_EQUAL_FATAL(zkr_rwlock_new(&l2, c, path), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_rwlock_write_acquire(l2, 5000), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_rwlock_read_acquire(l2, 0), ZKR_OK);
    CU_ASSERT_EQUAL(zkt_count_children(raw, path), 2);
    zkr_rwlock_free(l2);
    CU_ASSERT_EQUAL(zkt_count_children(raw, path), 0);

    zkr_rwlock_free(l);
    zkr_client_close(c);
    zkt_raw_close(raw);
}

static void test_fencing_tokens(void)
{
    char path[128];
    zkt_path("rw-fencing", path, sizeof path);
    zkr_client_t *c[2] = {zkt_client(SESSION_MS), zkt_client(SESSION_MS)};
    zkr_rwlock_t *l[2];
    CU_ASSERT_EQUAL_FATAL(zkr_rwlock_new(&l[0], c[0], path), ZKR_OK);
    CU_ASSERT_EQUAL_FATAL(zkr_rwlock_new(&l[1], c[1], path), ZKR_OK);
    int64_t prev = 0;
    for (int i = 0; i < 6; i++) {
        zkr_rwlock_t *x = l[i % 2];
        int64_t tok = 0;
        if (i == 3) {
            /* a reader in between: its token is larger too */
            CU_ASSERT_EQUAL_FATAL(zkr_rwlock_read_acquire(x, 5000), ZKR_OK);
            int64_t none = 0;
            CU_ASSERT_EQUAL(zkr_rwlock_write_fencing_token(x, &none), ZKR_ENOTOWNER);
            CU_ASSERT_EQUAL(zkr_rwlock_read_fencing_token(x, &tok), ZKR_OK);
            CU_ASSERT_TRUE(tok > prev);
            prev = tok;
            CU_ASSERT_EQUAL(zkr_rwlock_read_release(x), ZKR_OK);
            continue;
        }
        CU_ASSERT_EQUAL_FATAL(zkr_rwlock_write_acquire(x, 5000), ZKR_OK);
        CU_ASSERT_EQUAL(zkr_rwlock_write_fencing_token(x, &tok), ZKR_OK);
        CU_ASSERT_TRUE(tok > prev);
        prev = tok;
        CU_ASSERT_EQUAL(zkr_rwlock_write_release(x), ZKR_OK);
        CU_ASSERT_EQUAL(zkr_rwlock_write_fencing_token(x, &tok), ZKR_ENOTOWNER);
    }
    zkr_rwlock_free(l[0]);
    zkr_rwlock_free(l[1]);
    zkr_client_close(c[0]);
    zkr_client_close(c[1]);
}

static void test_participants_order(void)
{
    char path[128];
    zkt_path("rw-participants", path, sizeof path);
    zhandle_t *raw = zkt_raw();
    zkr_client_t *c0 = zkt_client(SESSION_MS);
    zkr_rwlock_t *l0;
    CU_ASSERT_EQUAL_FATAL(zkr_rwlock_new(&l0, c0, path), ZKR_OK);

    /* Empty (even the directory missing): no participants. */
    size_t n = 99;
    char **p = participants(l0, &n);
    CU_ASSERT_EQUAL(n, 0);
    zkr_strings_free(p, n);

    /* W holds; then R, W, R queue, in that order. */
    CU_ASSERT_EQUAL_FATAL(zkr_rwlock_write_acquire(l0, 5000), ZKR_OK);
    const int kinds[4] = {1, 0, 1, 0};
    zkr_client_t *c[3];
    worker_t w[3];
    for (int i = 0; i < 3; i++) {
        c[i] = zkt_client(SESSION_MS);
        worker_start(&w[i], c[i], path, kinds[i + 1], LONG_WAIT_MS);
        CU_ASSERT_TRUE_FATAL(zkt_wait_children(raw, path, i + 2, POLL_MS));
    }
    p = participants(l0, &n);
    CU_ASSERT_EQUAL_FATAL(n, 4);
    char prev_seq[11] = "";
    for (size_t i = 0; i < n; i++) {
        size_t dl = strlen(path);
        CU_ASSERT_EQUAL(strncmp(p[i], path, dl), 0);
        CU_ASSERT_EQUAL(p[i][dl], '/');
        char seq[11] = "";
        CU_ASSERT_TRUE(protected_name(basename_of(p[i]), kinds[i] ? WRITE_MARK : READ_MARK, seq));
        CU_ASSERT_TRUE(strcmp(seq, prev_seq) > 0);
        memcpy(prev_seq, seq, sizeof seq);
        struct Stat st;
        CU_ASSERT_EQUAL(zoo_exists(raw, p[i], 0, &st), ZOK);
        CU_ASSERT_EQUAL(st.ephemeralOwner, session_of(i == 0 ? c0 : c[i - 1]));
    }
    zkr_strings_free(p, n);

    /* The same list from another client's object. */
    p = participants(w[0].l, &n);
    CU_ASSERT_EQUAL(n, 4);
    zkr_strings_free(p, n);

    CU_ASSERT_EQUAL(zkr_rwlock_write_release(l0), ZKR_OK);
    CU_ASSERT_EQUAL(worker_wait(&w[0]), ZKR_OK);
    zkt_sleep_ms(100);
    CU_ASSERT_EQUAL(atomic_load(&w[1].returned), 0);
    worker_release(&w[0]);
    CU_ASSERT_EQUAL(worker_wait(&w[1]), ZKR_OK);
    worker_release(&w[1]);
    CU_ASSERT_EQUAL(worker_wait(&w[2]), ZKR_OK);
    worker_release(&w[2]);
    for (int i = 0; i < 3; i++) {
        worker_join(&w[i]);
        zkr_client_close(c[i]);
    }
    p = participants(l0, &n);
    CU_ASSERT_EQUAL(n, 0);
    zkr_strings_free(p, n);

    zkr_rwlock_free(l0);
    zkr_client_close(c0);
    zkt_raw_close(raw);
}

/* ---- timeouts leave nothing behind ------------------------------------------------------ */

static void test_timeouts_leave_nothing(void)
{
    char path[128];
    zkt_path("rw-timeouts", path, sizeof path);
    zhandle_t *raw = zkt_raw();
    zkr_client_t *ca = zkt_client(SESSION_MS), *cb = zkt_client(SESSION_MS);
    zkr_rwlock_t *la, *lb;
    CU_ASSERT_EQUAL_FATAL(zkr_rwlock_new(&la, ca, path), ZKR_OK);
    CU_ASSERT_EQUAL_FATAL(zkr_rwlock_new(&lb, cb, path), ZKR_OK);

    CU_ASSERT_EQUAL_FATAL(zkr_rwlock_write_acquire(la, 5000), ZKR_OK);
    int64_t timeouts[] = {0, 1, 300};
    for (size_t i = 0; i < sizeof timeouts / sizeof timeouts[0]; i++) {
        CU_ASSERT_EQUAL(zkr_rwlock_read_acquire(lb, timeouts[i]), ZKR_ETIMEDOUT);
        CU_ASSERT_EQUAL(zkt_count_children(raw, path), 1);
        CU_ASSERT_EQUAL(zkr_rwlock_write_acquire(lb, timeouts[i]), ZKR_ETIMEDOUT);
        CU_ASSERT_EQUAL(zkt_count_children(raw, path), 1);
        CU_ASSERT_FALSE(zkr_rwlock_read_is_held(lb));
        CU_ASSERT_FALSE(zkr_rwlock_write_is_held(lb));
    }
    CU_ASSERT_EQUAL(zkr_rwlock_write_release(la), ZKR_OK);

    /* A reader holds: a writer times out, and leaves nothing. */
    CU_ASSERT_EQUAL_FATAL(zkr_rwlock_read_acquire(la, 5000), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_rwlock_write_acquire(lb, 300), ZKR_ETIMEDOUT);
    CU_ASSERT_EQUAL(zkt_count_children(raw, path), 1);
    /* ... and then a reader gets in at once (nothing left queued in between). */
    CU_ASSERT_EQUAL(zkr_rwlock_read_acquire(lb, 0), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_rwlock_read_release(lb), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_rwlock_read_release(la), ZKR_OK);
    CU_ASSERT_EQUAL(zkt_count_children(raw, path), 0);

    /* Free lock: timeout 0 succeeds. */
    CU_ASSERT_EQUAL(zkr_rwlock_write_acquire(lb, 0), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_rwlock_write_release(lb), ZKR_OK);
    CU_ASSERT_EQUAL(zkt_count_children(raw, path), 0);

    zkr_rwlock_free(la);
    zkr_rwlock_free(lb);
    zkr_client_close(ca);
    zkr_client_close(cb);
    zkt_raw_close(raw);
}

/* ---- bad arguments ------------------------------------------------------------------------ */

static void test_bad_arguments(void)
{
    zkr_client_t *c = zkt_client(SESSION_MS);
    zkr_rwlock_t *l = (zkr_rwlock_t *)0x1;
    CU_ASSERT_EQUAL(zkr_rwlock_new(NULL, c, "/a"), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_rwlock_new(&l, NULL, "/a"), ZKR_EINVAL);
    CU_ASSERT_PTR_NULL(l);
    const char *bad[] = {NULL, "", "/", "relative", "/trailing/", "//a", "/a//b", "/a/./b", "/a/../b", "/zookeeper",
                         "/zookeeper/x", "/bad\001char"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        l = (zkr_rwlock_t *)0x1;
        CU_ASSERT_EQUAL(zkr_rwlock_new(&l, c, bad[i]), ZKR_EINVAL);
        CU_ASSERT_PTR_NULL(l);
    }
    CU_ASSERT_EQUAL(zkr_rwlock_read_acquire(NULL, 0), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_rwlock_write_acquire(NULL, 0), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_rwlock_read_acquire(NULL, ZKR_WAIT_FOREVER), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_rwlock_write_acquire(NULL, ZKR_WAIT_FOREVER), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_rwlock_read_release(NULL), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_rwlock_write_release(NULL), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_rwlock_read_is_held(NULL), 0);
    CU_ASSERT_EQUAL(zkr_rwlock_write_is_held(NULL), 0);
    int64_t tok;
    CU_ASSERT_EQUAL(zkr_rwlock_read_fencing_token(NULL, &tok), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_rwlock_write_fencing_token(NULL, &tok), ZKR_EINVAL);
    char **p = (char **)0x1;
    size_t n = 7;
    CU_ASSERT_EQUAL(zkr_rwlock_participants(NULL, &p, &n), ZKR_EINVAL);
    zkr_rwlock_free(NULL);

    char path[128];
    CU_ASSERT_EQUAL_FATAL(zkr_rwlock_new(&l, c, zkt_path("rw-badargs", path, sizeof path)), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_rwlock_read_fencing_token(l, NULL), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_rwlock_write_fencing_token(l, NULL), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_rwlock_participants(l, NULL, &n), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_rwlock_participants(l, &p, NULL), ZKR_EINVAL);
    /* Also while held. */
    CU_ASSERT_EQUAL(zkr_rwlock_write_acquire(l, 5000), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_rwlock_write_fencing_token(l, NULL), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_rwlock_write_release(l), ZKR_OK);
    zkr_rwlock_free(l);
    zkr_client_close(c);
}

static void add_suites(void)
{
    CU_pSuite s = CU_add_suite("rwlock", NULL, NULL);
    CU_add_test(s, "bad arguments", test_bad_arguments);
    CU_add_test(s, "many readers at once, a writer excludes everyone", test_readers_share_writer_excludes);
    CU_add_test(s, "two readers hold together", test_two_readers_hold_together);
    CU_add_test(s, "writer not starved by later readers", test_writer_not_starved);
    CU_add_test(s, "watches: readers on the writer, writers on their predecessor", test_herd_watches);
    CU_add_test(s, "readers watch the nearest writer before them: a release wakes only those it admits",
                test_readers_watch_nearest_writer);
    CU_add_test(s, "downgrade: write -> read, named after the writer", test_downgrade);
    CU_add_test(s, "no downgrade on a write hold lost with its session", test_no_downgrade_after_session_loss);
    CU_add_test(s, "upgrade refused with ZKR_ENEVER, nothing left behind", test_upgrade_refused);
    CU_add_test(s, "reentrancy of both halves, ENOTOWNER, free releases", test_reentrancy_and_owner);
    CU_add_test(s, "fencing tokens increase across holders", test_fencing_tokens);
    CU_add_test(s, "participants in lock order with the right names", test_participants_order);
    CU_add_test(s, "timeouts leave no node behind", test_timeouts_leave_nothing);
}

int main(void)
{
    return zkt_main("rwlock", add_suites);
}

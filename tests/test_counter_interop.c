/* The counters against Curator 5.x (tests/interop/CounterPeer.java on
 * Debian's jars), both directions: the same bytes (Curator reads what C
 * writes and C what Curator writes; a SharedCount seeds what a zkr_count_t
 * reads and the other way round), then C and Curator processes
 * incrementing one DistributedAtomicLong together (optimistic, and
 * promoted to one InterProcessMutex) and one SharedCount in trySetCount
 * loops: the final value is the sum of the successes each side reports. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/counter_check.h"
#include "tests/harness/zkr_test.h"
#include "tests/interop/jpeer.h"

#define SESSION_MS 10000
#define WAIT_MS 15000

static int suite_init(void)
{
    jpeer_java = jpeer_start("CounterPeer");
    return jpeer_java ? 0 : 1;
}

static int suite_clean(void)
{
    jpeer_stop(jpeer_java);
    jpeer_java = NULL;
    return 0;
}

static int64_t curator_long(const char *path)
{
    char *a = jcmd("getlong %s", path);
    long long v = 0;
    int ok = sscanf(a, "VALUE true %lld", &v) == 1;
    if (!ok)
        printf("\n    getlong: %s", a);
    CU_ASSERT(ok);
    free(a);
    return (int64_t)v;
}

static int64_t c_long(zkr_atomic_long_t *a)
{
    zkr_atomic_result_t r;
    CU_ASSERT_EQUAL(zkr_atomic_long_get(a, &r), ZKR_OK);
    CU_ASSERT(r.succeeded);
    return r.post_value;
}

static void test_atomic_both_ways(void)
{
    char p[256];
    zkt_path("interop-atomic", p, sizeof p);
    char node[300];
    snprintf(node, sizeof node, "%s/x/n", p);
    zkr_client_t *c = zkt_client(SESSION_MS);
    zkr_atomic_long_t *a = NULL;
    CU_ASSERT_EQUAL_FATAL(zkr_atomic_long_new(&a, c, node, NULL), ZKR_OK);
    zkr_atomic_result_t r;

    /* C writes (the node made with its parents), Curator reads */
    CU_ASSERT_EQUAL(zkr_atomic_long_add(a, -5, &r), ZKR_OK);
    CU_ASSERT(r.succeeded && r.post_value == -5);
    CU_ASSERT_EQUAL(curator_long(node), -5);
    CU_ASSERT_TRUE(jis("BYTES fffffffffffffffb", "bytes %s", node));
    CU_ASSERT_EQUAL(zkr_atomic_long_force_set(a, INT64_MAX), ZKR_OK);
    CU_ASSERT_EQUAL(curator_long(node), INT64_MAX);
    CU_ASSERT_TRUE(jis("BYTES 7fffffffffffffff", "bytes %s", node));

    /* Curator writes, C reads */
    CU_ASSERT_TRUE(jis("OK true 9223372036854775807 -9223372036854775808", "addlong %s 1", node));
    CU_ASSERT_EQUAL(c_long(a), INT64_MIN);
    CU_ASSERT_TRUE(jis("OK", "forcelong %s 1234567890123", node));
    CU_ASSERT_EQUAL(c_long(a), 1234567890123LL);
    CU_ASSERT_EQUAL(zkr_atomic_long_compare_and_set(a, 1234567890123LL, 7, &r), ZKR_OK);
    CU_ASSERT(r.succeeded);
    /* a compare that fails: Curator's postValue is 0 (ours: the value read) */
    CU_ASSERT_TRUE(jis("OK false 7 0", "caslong %s 8 9", node));
    CU_ASSERT_EQUAL(zkr_atomic_long_compare_and_set(a, 8, 9, &r), ZKR_OK);
    CU_ASSERT(!r.succeeded && r.pre_value == 7 && r.post_value == 7);
    CU_ASSERT_TRUE(jis("OK true 7 9", "caslong %s 7 9", node));
    CU_ASSERT_EQUAL(c_long(a), 9);

    /* initialize: whoever comes first */
    char fresh[300];
    snprintf(fresh, sizeof fresh, "%s/y/n", p);
    zkr_atomic_long_t *b = NULL;
    CU_ASSERT_EQUAL_FATAL(zkr_atomic_long_new(&b, c, fresh, NULL), ZKR_OK);
    CU_ASSERT_TRUE(jis("OK true", "initlong %s 77", fresh));
    int init = -1;
    CU_ASSERT_EQUAL(zkr_atomic_long_try_initialize(b, 5, &init), ZKR_OK);
    CU_ASSERT_EQUAL(init, 0);
    CU_ASSERT_EQUAL(c_long(b), 77);
    zkr_atomic_long_free(b);

    zkr_atomic_long_free(a);
    zkr_client_close(c);
}

typedef struct seen {
    pthread_mutex_t mu;
    int32_t last;
    int changes;
} seen_t;

static void on_count(zkr_count_t *sc, const zkr_count_event_t *e, void *ctx)
{
    (void)sc;
    seen_t *s = ctx;
    if (e->type != ZKR_COUNT_CHANGED)
        return;
    pthread_mutex_lock(&s->mu);
    s->last = e->value;
    s->changes++;
    pthread_mutex_unlock(&s->mu);
}

typedef struct want {
    seen_t *s;
    int32_t v;
} want_t;

static int told(void *arg)
{
    want_t *w = arg;
    pthread_mutex_lock(&w->s->mu);
    int yes = w->s->changes > 0 && w->s->last == w->v;
    pthread_mutex_unlock(&w->s->mu);
    return yes;
}

static void test_count_both_ways(void)
{
    char p[256];
    zkt_path("interop-count", p, sizeof p);
    char node[300], node2[300];
    snprintf(node, sizeof node, "%s/a/c", p);
    snprintf(node2, sizeof node2, "%s/b/c", p);
    zkr_client_t *c = zkt_client(SESSION_MS);
    seen_t s;
    memset(&s, 0, sizeof s);
    pthread_mutex_init(&s.mu, NULL);

    /* C seeds, Curator reads the seed (its own seed ignored) */
    zkr_count_t *sc = NULL;
    CU_ASSERT_EQUAL_FATAL(zkr_count_new(&sc, c, node, -42), ZKR_OK);
    zkr_count_set_listener(sc, on_count, &s);
    CU_ASSERT_EQUAL_FATAL(zkr_count_start(sc, WAIT_MS), ZKR_OK);
    CU_ASSERT_TRUE(jis("VALUE -42 0", "getcount %s 5", node));
    CU_ASSERT_TRUE(jis("BYTES ffffffd6", "bytes %s", node));

    /* Curator writes: C's listener is told, its copy follows */
    CU_ASSERT_TRUE(jis("OK", "setcount %s 1000", node));
    want_t w = {&s, 1000};
    CU_ASSERT(zkt_wait_for(told, &w, WAIT_MS));
    int32_t v, ver;
    CU_ASSERT_EQUAL(zkr_count_get(sc, &v, &ver), ZKR_OK);
    CU_ASSERT(v == 1000 && ver == 1);
    CU_ASSERT_TRUE(jis("OK 1 true", "trysetcount %s 1001", node));
    w.v = 1001;
    CU_ASSERT(zkt_wait_for(told, &w, WAIT_MS));
    /* C's try_set by the version it read: Curator reads it */
    CU_ASSERT_EQUAL(zkr_count_get(sc, &v, &ver), ZKR_OK);
    int set = 0;
    CU_ASSERT_EQUAL(zkr_count_try_set(sc, ver, v + 1, &set, WAIT_MS), ZKR_OK);
    CU_ASSERT_EQUAL(set, 1);
    CU_ASSERT_TRUE(jis("VALUE 1002 3", "getcount %s 0", node));

    /* Curator seeds, C reads the seed */
    CU_ASSERT_TRUE(jis("VALUE 31 0", "getcount %s 31", node2));
    zkr_count_t *sc2 = NULL;
    CU_ASSERT_EQUAL_FATAL(zkr_count_new(&sc2, c, node2, 8), ZKR_OK);
    CU_ASSERT_EQUAL_FATAL(zkr_count_start(sc2, WAIT_MS), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_count_get(sc2, &v, &ver), ZKR_OK);
    CU_ASSERT(v == 31 && ver == 0);
    zkr_count_free(sc2);
    zkr_count_free(sc);
    zkr_client_close(c);
}

/* ---- together --------------------------------------------------------------- */

#define C_CLIENTS 2
#define C_THREADS 2
#define J_THREADS 3
#define N 30

/* C and Curator at once; returns the successes of both sides. */
static int together(const char *path, const char *lock, int retries, int count, int *java_promoted)
{
    CU_ASSERT_TRUE_FATAL(count ? jis("STARTED", "counts J %s %d %d", path, J_THREADS, N)
                               : lock ? jis("STARTED", "incs J %s %d %d %d %s", path, J_THREADS, N, retries, lock)
                                      : jis("STARTED", "incs J %s %d %d %d", path, J_THREADS, N, retries));
    zkr_client_t *cs[C_CLIENTS];
    static cw_t ws[C_CLIENTS * C_THREADS];
    memset(ws, 0, sizeof ws);
    for (int i = 0; i < C_CLIENTS; i++)
        cs[i] = zkt_client(SESSION_MS);
    for (int i = 0; i < C_CLIENTS * C_THREADS; i++) {
        ws[i].path = path;
        ws[i].lock_path = lock;
        ws[i].retries = retries;
        ws[i].n = N;
    }
    cw_run(ws, C_CLIENTS * C_THREADS, cs, C_CLIENTS, count ? cw_count : cw_atomic);
    for (int i = 0; i < C_CLIENTS; i++)
        zkr_client_close(cs[i]);
    cw_sum_t sum = cw_sum(ws, C_CLIENTS * C_THREADS);
    CU_ASSERT_EQUAL(sum.other, 0);
    CU_ASSERT_EQUAL(sum.unknown, 0);
    int c_ok = sum.ok;
    char *a = jcmd("await J");
    int j_ok = -1, j_failed = -1, j_errors = -1, j_promoted = -1;
    int parsed = sscanf(a, "DONE %d %d %d %d", &j_ok, &j_failed, &j_errors, &j_promoted) == 4;
    printf("\n    C %d succeeded, Curator %d succeeded (%d not, %d promoted)", c_ok, j_ok, j_failed, j_promoted);
    if (!parsed)
        printf(": %s", a);
    free(a);
    CU_ASSERT(parsed);
    CU_ASSERT_EQUAL(j_errors, 0);
    CU_ASSERT(c_ok > 0 && j_ok > 0);
    if (java_promoted)
        *java_promoted = j_promoted;
    return c_ok + j_ok;
}

static void test_atomic_together(void)
{
    char p[256];
    zkt_path("interop-inc", p, sizeof p);
    int total = together(p, NULL, 29, 0, NULL);
    CU_ASSERT_EQUAL(curator_long(p), total);
    zkr_client_t *c = zkt_client(SESSION_MS);
    zkr_atomic_long_t *a = NULL;
    CU_ASSERT_EQUAL_FATAL(zkr_atomic_long_new(&a, c, p, NULL), ZKR_OK);
    CU_ASSERT_EQUAL(c_long(a), total);
    zkr_atomic_long_free(a);
    zkr_client_close(c);
}

static void test_atomic_promoted_together(void)
{
    char p[256], lock[300];
    zkt_path("interop-lock", p, sizeof p);
    snprintf(lock, sizeof lock, "%s-lock", p);
    int promoted = 0;
    int total = together(p, lock, 0, 0, &promoted);
    CU_ASSERT_EQUAL(curator_long(p), total);
    CU_ASSERT(promoted > 0);
    zhandle_t *zh = zkt_raw();
    CU_ASSERT_EQUAL(zkt_count_children(zh, lock), 0);
    zkt_raw_close(zh);
}

static void test_count_together(void)
{
    char p[256];
    zkt_path("interop-cas", p, sizeof p);
    int total = together(p, NULL, 0, 1, NULL);
    CU_ASSERT_EQUAL(total, (C_CLIENTS * C_THREADS + J_THREADS) * N);
    char want[64];
    snprintf(want, sizeof want, "VALUE %d ", total);
    char *a = jcmd("getcount %s 0", p);
    CU_ASSERT_EQUAL(strncmp(a, want, strlen(want)), 0);
    free(a);
}

static void add_suites(void)
{
    CU_pSuite s = CU_add_suite("counter interop", suite_init, suite_clean);
    CU_add_test(s, "atomic long: C writes what Curator reads, Curator what C reads; the same bytes",
                test_atomic_both_ways);
    CU_add_test(s, "shared count: either side seeds, writes and is read; C's listener hears Curator",
                test_count_both_ways);
    CU_add_test(s, "C and Curator incrementing one DistributedAtomicLong: the value is the sum of successes",
                test_atomic_together);
    CU_add_test(s, "both promoted to one InterProcessMutex after one optimistic try: nothing lost, no node left",
                test_atomic_promoted_together);
    CU_add_test(s, "C and Curator in trySetCount loops on one SharedCount: every success counted once",
                test_count_together);
}

int main(void)
{
    return zkt_main("counter interop", add_suites);
}

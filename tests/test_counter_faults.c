/* The counters under faults: threads on several clients (two through a
 * TCP proxy, one direct) incrementing one atomic long, or looping
 * try_set on one shared count, while the proxy loses replies (a request
 * applied, its answer cut off), stalls the link past the calls' timeouts
 * and cuts it, the server restarts, and a session is expired.  At the end
 * the server's value is exactly the successes plus some of the outcomes
 * reported unknown (ZKR_ECONNLOSS), every value written once
 * (tests/counter_check.h).  Then the two lost-answer cases one by one: the
 * request applied (unknown, and the server shows it once) and the request
 * never delivered (sent again: applied once, succeeded). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/counter_check.h"
#include "tests/harness/zkproxy.h"
#include "tests/harness/zkr_test.h"

#define SESSION_MS 8000
#define WAIT_MS 15000
#define CLIENTS 3
#define WORKERS 6
#define RUN_MS 14000
#define CALL_MS 2000

static int64_t raw_value(const char *path, int width)
{
    zhandle_t *zh = zkt_raw();
    unsigned char b[16];
    int len = sizeof b;
    int zrc = zoo_get(zh, path, 0, (char *)b, &len, NULL);
    zkt_raw_close(zh);
    CU_ASSERT_EQUAL(zrc, ZOK);
    CU_ASSERT_EQUAL(len, width);
    int64_t v = 0;
    for (int i = 0; i < width && len == width; i++)
        v = (int64_t)((uint64_t)v << 8 | b[i]);
    return width == 4 ? (int32_t)(uint32_t)v : v;
}

typedef struct runner {
    cw_t *ws;
    zkr_client_t **cs;
    void *(*fn)(void *);
} runner_t;

static void *run_workers(void *arg)
{
    runner_t *r = arg;
    cw_run(r->ws, WORKERS, r->cs, CLIENTS, r->fn);
    return NULL;
}

/* The faults, on the main thread while the workers run. */
static void inflict(zkt_proxy_t *px, zkr_client_t *victim)
{
    zkt_sleep_ms(800);
    for (int i = 0; i < 3; i++) { /* replies lost: requests applied, answers cut off */
        CU_ASSERT_EQUAL(zkt_proxy_stall_replies(px, 1), 0);
        zkt_sleep_ms(200);
        zkt_proxy_cut(px);
        CU_ASSERT_EQUAL(zkt_proxy_stall_replies(px, 0), 0);
        zkt_sleep_ms(500);
    }
    CU_ASSERT_EQUAL(zkt_proxy_stall(px, 1), 0); /* past the calls' timeouts */
    zkt_sleep_ms(CALL_MS + 500);
    CU_ASSERT_EQUAL(zkt_proxy_stall(px, 0), 0);
    zkt_sleep_ms(500);
    CU_ASSERT_EQUAL(zkt_proxy_stall(px, 1), 0); /* a stall ended by a cut */
    zkt_sleep_ms(300);
    zkt_proxy_cut(px);
    CU_ASSERT_EQUAL(zkt_proxy_stall(px, 0), 0);
    zkt_sleep_ms(800);
    CU_ASSERT_EQUAL(zkt_server("restart"), 0);
    zkt_sleep_ms(1000);
    zkt_expire_client(victim, SESSION_MS);
}

static void under_faults(const char *name, void *(*fn)(void *), int width)
{
    char path[256];
    zkt_path(name, path, sizeof path);
    zkt_proxy_t *px = zkt_proxy_start(zkt_server_port());
    CU_ASSERT_PTR_NOT_NULL_FATAL(px);
    zkr_client_t *cs[CLIENTS];
    cs[0] = zkt_client_at(zkt_proxy_hosts(px), SESSION_MS);
    cs[1] = zkt_client_at(zkt_proxy_hosts(px), SESSION_MS);
    cs[2] = zkt_client(SESSION_MS);
    static cw_t ws[WORKERS];
    memset(ws, 0, sizeof ws);
    for (int i = 0; i < WORKERS; i++) {
        ws[i].path = path;
        ws[i].retries = 29;
        ws[i].n = CW_MAX;
        ws[i].timeout_ms = CALL_MS;
        ws[i].run_ms = RUN_MS;
        ws[i].pause_ms = 3;
    }
    runner_t r = {ws, cs, fn};
    pthread_t th;
    pthread_create(&th, NULL, run_workers, &r);
    inflict(px, cs[0]);
    pthread_join(th, NULL);
    for (int i = 0; i < CLIENTS; i++)
        zkr_client_close(cs[i]);
    zkt_proxy_stop(px);

    cw_sum_t s = cw_sum(ws, WORKERS);
    int64_t final = raw_value(path, width);
    int applied = -1;
    int exact = cw_exactly_once(ws, WORKERS, final, &applied);
    printf("\n    final %lld: %d succeeded, %d not applied (lost races), %d unknown (%d of them applied), "
           "%d failed with another code (nothing applied)",
           (long long)final, s.ok, s.failed, s.unknown, applied, s.other);
    for (int i = 0; i < WORKERS; i++) {
        if (ws[i].other)
            printf("\n    worker %d: last other code %s", i, zkr_err_name(ws[i].last_other));
        /* the workers ran through every fault: none stopped early */
        CU_ASSERT_EQUAL(ws[i].ran_out, 0);
    }
    CU_ASSERT(exact);
    CU_ASSERT(s.ok > 0);
    CU_ASSERT_EQUAL(s.wrong, 0);
    CU_ASSERT(final >= s.ok && final <= s.ok + s.unknown);
}

static void test_atomic_faults(void)
{
    under_faults("atomic-faults", cw_atomic, 8);
}

static void test_count_faults(void)
{
    under_faults("count-faults", cw_count, 4);
}

/* ---- the two lost answers, one at a time ------------------------------------- */

typedef struct try_call {
    zkr_count_t *sc;
    int32_t version, value;
    int rc, set;
    atomic_int done;
} try_call_t;

static void *call_try_set(void *arg)
{
    try_call_t *t = arg;
    t->rc = zkr_count_try_set(t->sc, t->version, t->value, &t->set, WAIT_MS);
    atomic_store(&t->done, 1);
    return NULL;
}

static int version_is(const char *path, int32_t version)
{
    zhandle_t *zh = zkt_raw();
    struct Stat st;
    int zrc = zoo_exists(zh, path, 0, &st);
    zkt_raw_close(zh);
    return zrc == ZOK && st.version == version;
}

typedef struct vwant {
    const char *path;
    int32_t version;
} vwant_t;

static int at_version(void *arg)
{
    vwant_t *w = arg;
    return version_is(w->path, w->version);
}

static void test_lost_answers(void)
{
    char path[256];
    zkt_path("count-lost", path, sizeof path);
    zkt_proxy_t *px = zkt_proxy_start(zkt_server_port());
    CU_ASSERT_PTR_NOT_NULL_FATAL(px);
    zkr_client_t *c = zkt_client_at(zkt_proxy_hosts(px), SESSION_MS);
    zkr_count_t *sc = NULL;
    CU_ASSERT_EQUAL_FATAL(zkr_count_new(&sc, c, path, 10), ZKR_OK);
    CU_ASSERT_EQUAL_FATAL(zkr_count_start(sc, WAIT_MS), ZKR_OK);

    /* 1. applied, its answer cut off: sent again, refused, the node holds our
     * data at the version ours made: nobody can tell -> unknown; once on the server */
    CU_ASSERT_EQUAL(zkt_proxy_stall_replies(px, 1), 0);
    try_call_t t = {sc, 0, 11, 0, 0, 0};
    pthread_t th;
    pthread_create(&th, NULL, call_try_set, &t);
    vwant_t w = {path, 1};
    CU_ASSERT(zkt_wait_for(at_version, &w, WAIT_MS)); /* applied on the server */
    zkt_proxy_cut(px);
    CU_ASSERT_EQUAL(zkt_proxy_stall_replies(px, 0), 0);
    pthread_join(th, NULL);
    CU_ASSERT_EQUAL(t.rc, ZKR_ECONNLOSS);
    CU_ASSERT_EQUAL(t.set, 0);
    CU_ASSERT_EQUAL(raw_value(path, 4), 11);
    CU_ASSERT(version_is(path, 1)); /* once */

    /* 2. never delivered (the link stalled, then cut): sent again, applied once */
    int32_t v = 0, ver = -1;
    for (int i = 0; i < 100 && (zkr_count_get(sc, &v, &ver) != ZKR_OK || ver != 1); i++)
        zkt_sleep_ms(50);
    CU_ASSERT_EQUAL(ver, 1);
    CU_ASSERT_EQUAL(zkt_proxy_stall(px, 1), 0);
    try_call_t t2 = {sc, 1, 12, 0, 0, 0};
    pthread_create(&th, NULL, call_try_set, &t2);
    zkt_sleep_ms(500);
    CU_ASSERT(version_is(path, 1)); /* not arrived */
    zkt_proxy_cut(px);
    CU_ASSERT_EQUAL(zkt_proxy_stall(px, 0), 0);
    pthread_join(th, NULL);
    CU_ASSERT_EQUAL(t2.rc, ZKR_OK);
    CU_ASSERT_EQUAL(t2.set, 1);
    CU_ASSERT_EQUAL(raw_value(path, 4), 12);
    CU_ASSERT(version_is(path, 2)); /* once */

    zkr_count_free(sc);
    zkr_client_close(c);
    zkt_proxy_stop(px);
}

static void add_suites(void)
{
    CU_pSuite s = CU_add_suite("counter faults", NULL, NULL);
    CU_add_test(s, "atomic long: lost replies, stalls, cuts, a restart, an expiry: successes + some unknowns, "
                   "each value written once",
                test_atomic_faults);
    CU_add_test(s, "shared count try_set loops under the same faults: the same account", test_count_faults);
    CU_add_test(s, "a write applied with its answer lost is unknown and once; one never delivered is sent "
                   "again and applied once",
                test_lost_answers);
}

int main(void)
{
    return zkt_main("test_counter_faults", add_suites);
}

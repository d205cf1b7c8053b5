/* zkr_cache_t under faults: a writer thread (the raw C client, on a
 * connection of its own, direct to the server) makes random changes to a
 * subtree (creates, setData, deletes of leaves and of subtrees, a node
 * deleted and created again with the same data, rarely the path itself
 * deleted and created again) while a ZKR_CACHE_TREE cache watches it
 * through a client whose connection goes through the fault proxy: a stall
 * shorter than the session timeout, a cut with an immediate reconnection,
 * a cut held for a while, a server restart, a forced expiry of the cache's
 * session, and, on a 3-node ensemble, its ZooKeeper leader killed (twice).
 *
 * After each fault, once the link is back (the writer runs on for 500 ms,
 * then pauses), within a bound (20 s) the copy (zkr_cache_walk) and the
 * events told, replayed, equal the server's tree (paths, data, czxid,
 * mzxid); the events per node are valid (CREATED first, CHANGED and
 * DELETED only of a node in the copy, no CREATED twice without a DELETED
 * between, a new czxid after each DELETED); ZKR_CACHE_INITIALIZED is told
 * again after a lost session (and not after a reconnection that kept it);
 * zkr_cache_is_fresh is 0 while the link is down (sampled once SUSPENDED
 * was told, as long as the client still says so) and 1 again after.  The
 * time each fault took to converge is printed; no speed is asserted.
 * Every loop is bounded in time and count. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/cache_check.h"
#include "tests/harness/zkfaults.h"
#include "tests/harness/zkproxy.h"
#include "tests/harness/zkr_test.h"

#define SESSION_MS 6000 /* SUSPENDED after about 2/3 of it without an answer */
#define CONVERGE_MS 20000
#define DOWN_MS 20000 /* bound for SUSPENDED to be told */
#define WRITE_ON_MS 500 /* the writer goes on after the link is back */

/* ---- the rig: a cache behind a proxy, a writer beside it ---------------------------------- */

typedef struct rig {
    char path[128];
    const char *hosts; /* the server or the ensemble, direct */
    zkt_proxy_t *px;   /* NULL on the ensemble */
    zkr_client_t *c;   /* the cache's */
    zhandle_t *raw;    /* the writer's (and the checks') */
    cc_cache_t t;
    cc_writer_t w;
    int faults;
} rig_t;

static void rig_up(rig_t *r, const char *name, int on_ensemble, unsigned seed)
{
    memset(r, 0, sizeof *r);
    zkt_path(name, r->path, sizeof r->path);
    r->hosts = on_ensemble ? zkt_ensemble_hosts() : zkt_hosts();
    r->raw = zkt_raw_at(r->hosts);
    cc_make_parents(r->raw, r->path);
    cc_wstats_t st;
    memset(&st, 0, sizeof st);
    for (int i = 0; i < 60; i++) /* something there before the cache starts */
        cc_random_op(r->raw, r->path, 3, &seed, &st);
    if (!on_ensemble) {
        r->px = zkt_proxy_start(zkt_server_port());
        CC_ASSERT_FATAL(r->px != NULL);
    }
    r->c = zkt_client_at(r->px ? zkt_proxy_hosts(r->px) : r->hosts, SESSION_MS);
    CC_ASSERT_FATAL(cc_cache_open(&r->t, r->c, r->path, ZKR_CACHE_TREE, -1, 1, "TREE", 20000) == ZKR_OK);
    CU_ASSERT_EQUAL(atomic_load(&r->t.log.inits), 1);
    CU_ASSERT_EQUAL(zkr_cache_is_fresh(r->t.cache), 1);
    r->w.zh = r->raw;
    r->w.root = r->path;
    r->w.max_depth = 3;
    r->w.seed = seed * 7 + 1;
    r->w.pause_ms = 12;
    r->w.max_ops = 20000;
    r->w.max_ms = 200000;
    CC_ASSERT_FATAL(cc_writer_start(&r->w) == 0);
}

static void rig_down(rig_t *r)
{
    cc_writer_stop(&r->w);
    cc_wstats_print(stdout, &r->w.st, "the writer, in all");
    int down = atomic_load(&r->t.log.down_checked), bad = atomic_load(&r->t.log.fresh_while_down);
    printf("\n    SUSPENDED/LOST told %d times while the client said so: zkr_cache_is_fresh 1 then %d times", down, bad);
    CU_ASSERT_EQUAL(bad, 0);
    cc_cache_close(&r->t);
    zkr_client_close(r->c);
    zkt_raw_close(r->raw);
    zkt_proxy_stop(r->px);
}

/* ---- while the link is down ------------------------------------------------------------------ */

typedef struct since {
    rig_t *r;
    size_t from;
    zkr_cache_event_type_t type;
    zkr_state_t state;
} since_t;

static int told_since(void *arg)
{
    since_t *s = arg;
    return cc_log_has(&s->r->t.log, s->from, s->type, s->state) > 0;
}

/* Wait (bounded) until the cache tells `state` after event index from. */
static int wait_state(rig_t *r, size_t from, zkr_state_t state, int ms)
{
    since_t s = {r, from, ZKR_CACHE_STATE, state};
    return zkt_wait_for(told_since, &s, ms);
}

static int down(zkr_state_t s)
{
    return s == ZKR_STATE_SUSPENDED || s == ZKR_STATE_LOST;
}

/* Sample zkr_cache_is_fresh for up to ms (or until `until` says stop)
 * while the client says it is down (before and after each sample): how
 * many samples, how many said 1. */
static void sample_down(rig_t *r, int ms, atomic_int *until, int *samples, int *fresh)
{
    *samples = *fresh = 0;
    int64_t end = zkt_now_ms() + ms;
    for (int i = 0; i < 10000 && zkt_now_ms() < end && !(until && atomic_load(until)); i++) {
        zkr_state_t s1 = zkr_client_state(r->c);
        int f = zkr_cache_is_fresh(r->t.cache);
        zkr_state_t s2 = zkr_client_state(r->c);
        if (down(s1) && down(s2)) {
            (*samples)++;
            *fresh += f != 0;
        }
        zkt_sleep_ms(10);
    }
}

/* The link is held down: SUSPENDED told, then is_fresh 0 throughout. */
static void check_down(rig_t *r, size_t from, const char *what, int ms)
{
    int told = wait_state(r, from, ZKR_STATE_SUSPENDED, DOWN_MS);
    CU_ASSERT_TRUE(told);
    int samples = 0, fresh = 0;
    if (told)
        sample_down(r, ms, NULL, &samples, &fresh);
    printf("\n    %s: SUSPENDED told %s; zkr_cache_is_fresh sampled %d times while down: 1 %d times", what,
           told ? "yes" : "NO", samples, fresh);
    CU_ASSERT_TRUE(samples > 0);
    CU_ASSERT_EQUAL(fresh, 0);
}

/* ---- after a fault -------------------------------------------------------------------------- */

/* The server's tree (the writer paused): retried (bounded) while the raw
 * handle reconnects. */
static int read_server(rig_t *r, cc_tree_t *out)
{
    char why[256] = "";
    for (int i = 0; i < 200; i++) {
        if (cc_server_tree(r->raw, &r->t.scope, out, why, sizeof why) == 0)
            return 0;
        zkt_sleep_ms(100);
    }
    printf("\n    reading the server: %s", why);
    return -1;
}

/* When the cache told the last RECONNECTED at index >= from (0 if none). */
static int64_t reconnected_at(rig_t *r, size_t from)
{
    int64_t at = 0;
    pthread_mutex_lock(&r->t.log.mu);
    for (size_t i = from; i < r->t.log.n; i++)
        if (r->t.log.v[i].type == ZKR_CACHE_STATE && r->t.log.v[i].state == ZKR_STATE_RECONNECTED)
            at = r->t.log.v[i].at_ms;
    pthread_mutex_unlock(&r->t.log.mu);
    return at;
}

static int is_fresh(void *arg)
{
    return zkr_cache_is_fresh(((rig_t *)arg)->t.cache) == 1;
}

/* The link came back at t_back; `from` is the log's size when the fault
 * began, `session` the session then.  expired: the session was lost.
 * Printed: when the copy was fresh again (the writer still writing), and
 * how long after the writer paused and the server's tree was read the
 * copy equalled it. */
static void after_fault(rig_t *r, const char *what, int64_t t_back, size_t from, int64_t session, int expired)
{
    int fresh = zkt_wait_for(is_fresh, r, CONVERGE_MS);
    int64_t t_fresh = zkt_now_ms();
    int64_t left = t_back + WRITE_ON_MS - zkt_now_ms();
    if (left > 0)
        zkt_sleep_ms((int)left);
    CC_ASSERT_FATAL(cc_writer_pause(&r->w, 20000));
    cc_tree_t srv = {0};
    CC_ASSERT_FATAL(read_server(r, &srv) == 0);
    int64_t t_read = zkt_now_ms();
    /* what broke the rules before this fault was told then */
    int before = cc_log_check(&r->t.log, &r->t.scope, NULL, NULL, "", from);
    r->t.log.quiet_before = from;
    cc_result_t res;
    int ok = cc_converge(&r->t, &srv, CC_CMP_ALL, CONVERGE_MS, stdout, &res);
    int64_t now_session = 0;
    zkr_client_session(r->c, &now_session, NULL);
    int inits = cc_log_has(&r->t.log, from, ZKR_CACHE_INITIALIZED, 0);
    int64_t t_rec = reconnected_at(r, from);
    printf("\n    %s: the client told RECONNECTED at %s%lld ms from the link back, the copy fresh again at +%lld ms "
           "(the writer still writing); the copy equal to the server's tree (%zu nodes) %s%lld ms after it was read "
           "(+%lld ms); %zu events so far, %d of them since the fault began broke the rules; session %s; "
           "INITIALIZED told %d times since",
           what, t_rec == 0 ? "(never) " : t_rec >= t_back ? "+" : "", (long long)(t_rec ? t_rec - t_back : 0),
           (long long)(t_fresh - t_back), srv.n, res.ms < 0 ? "NOT within " : "",
           (long long)(res.ms < 0 ? CONVERGE_MS : res.ms), (long long)(t_read - t_back), res.events,
           res.violations - before, now_session == session ? "kept" : "new", inits);
    CU_ASSERT_TRUE(fresh);
    CU_ASSERT_TRUE(res.ms >= 0);
    CU_ASSERT_EQUAL(res.walk_rc, ZKR_OK);
    CU_ASSERT_TRUE(res.ordered);
    CU_ASSERT_EQUAL(res.out_of_scope, 0);
    CU_ASSERT_EQUAL(res.violations - before, 0);
    CU_ASSERT_EQUAL(zkr_cache_is_fresh(r->t.cache), 1);
    if (ok == 0)
        CU_ASSERT_EQUAL(zkr_cache_size(r->t.cache), srv.n);
    if (expired) {
        CU_ASSERT_NOT_EQUAL(now_session, session);
        CU_ASSERT_TRUE(inits >= 1);
    } else if (now_session == session) {
        CU_ASSERT_EQUAL(inits, 0); /* a kept session is no full reload */
    }
    CU_ASSERT_EQUAL(atomic_load(&r->t.log.fresh_while_down), 0);
    cc_tree_clear(&srv);
    r->faults++;
    cc_writer_resume(&r->w);
}

static int64_t session_of(rig_t *r)
{
    int64_t s = 0;
    zkr_client_session(r->c, &s, NULL);
    return s;
}

/* ---- the faults ------------------------------------------------------------------------------------ */

/* A stall shorter than the session timeout: the client says SUSPENDED
 * (about 2/3 of the timeout without an answer), the copy is not fresh; the
 * stalled connection is dropped and the link moves again before the
 * session ends. */
static void fault_stall(rig_t *r)
{
    size_t from = cc_log_count(&r->t.log);
    int64_t s = session_of(r);
    CU_ASSERT_EQUAL(zkt_proxy_stall(r->px, 1), 0);
    check_down(r, from, "stall", 300);
    zkt_proxy_cut(r->px); /* the stalled connection goes: the client reconnects at once */
    CU_ASSERT_EQUAL(zkt_proxy_stall(r->px, 0), 0);
    after_fault(r, "stall", zkt_now_ms(), from, s, 0);
}

/* Every connection cut; the client reconnects at once. */
static void fault_cut(rig_t *r)
{
    size_t from = cc_log_count(&r->t.log);
    int64_t s = session_of(r);
    zkt_proxy_cut(r->px);
    int64_t t = zkt_now_ms();
    CU_ASSERT_TRUE(wait_state(r, from, ZKR_STATE_SUSPENDED, DOWN_MS));
    after_fault(r, "cut", t, from, s, 0);
}

/* Cut, and no new connection moves for 1.5 s. */
static void fault_cut_held(rig_t *r)
{
    size_t from = cc_log_count(&r->t.log);
    int64_t s = session_of(r);
    CU_ASSERT_EQUAL(zkt_proxy_stall(r->px, 1), 0);
    zkt_proxy_cut(r->px);
    check_down(r, from, "cut, held down", 1500);
    zkt_proxy_cut(r->px);
    CU_ASSERT_EQUAL(zkt_proxy_stall(r->px, 0), 0);
    after_fault(r, "cut held down 1.5 s", zkt_now_ms(), from, s, 0);
}

typedef struct restart_arg {
    atomic_int done;
    int rc;
} restart_arg_t;

static void *restart_main(void *p)
{
    restart_arg_t *a = p;
    a->rc = zkt_server("restart");
    atomic_store(&a->done, 1);
    return NULL;
}

/* The server stopped and started again (the session survives: it is in
 * the server's log); is_fresh sampled while it is down. */
static void fault_restart(rig_t *r)
{
    size_t from = cc_log_count(&r->t.log);
    int64_t s = session_of(r);
    restart_arg_t a = {0, -1};
    pthread_t t;
    CC_ASSERT_FATAL(pthread_create(&t, NULL, restart_main, &a) == 0);
    int told = wait_state(r, from, ZKR_STATE_SUSPENDED, DOWN_MS);
    int samples = 0, fresh = 0;
    if (told)
        sample_down(r, 30000, &a.done, &samples, &fresh);
    pthread_join(t, NULL);
    CU_ASSERT_EQUAL(a.rc, 0);
    printf("\n    server restart: SUSPENDED told %s; zkr_cache_is_fresh sampled %d times while down: 1 %d times",
           told ? "yes" : "NO", samples, fresh);
    CU_ASSERT_TRUE(told);
    CU_ASSERT_EQUAL(fresh, 0);
    after_fault(r, "server restart", zkt_now_ms(), from, s, 0);
}

/* The cache's session closed from outside: LOST, a new session, the copy
 * read again (INITIALIZED again). */
static void fault_expiry(rig_t *r)
{
    size_t from = cc_log_count(&r->t.log);
    int64_t s = session_of(r);
    zkt_expire_client(r->c, SESSION_MS); /* returns once the client runs on a new session */
    int64_t t = zkt_now_ms();
    CU_ASSERT_TRUE(wait_state(r, from, ZKR_STATE_LOST, DOWN_MS));
    since_t init = {r, from, ZKR_CACHE_INITIALIZED, 0};
    CU_ASSERT_TRUE(zkt_wait_for(told_since, &init, CONVERGE_MS));
    after_fault(r, "forced expiry", t, from, s, 1);
}

/* ---- the tests ------------------------------------------------------------------------------------ */

static void test_stall(void)
{
    rig_t r;
    rig_up(&r, "cache-stall", 0, 11);
    zkt_sleep_ms(300);
    fault_stall(&r);
    rig_down(&r);
}

static void test_cut(void)
{
    rig_t r;
    rig_up(&r, "cache-cut", 0, 12);
    zkt_sleep_ms(300);
    fault_cut(&r);
    zkt_sleep_ms(300);
    fault_cut_held(&r);
    rig_down(&r);
}

static void test_restart(void)
{
    rig_t r;
    rig_up(&r, "cache-restart", 0, 13);
    zkt_sleep_ms(300);
    fault_restart(&r);
    rig_down(&r);
}

static void test_expiry(void)
{
    rig_t r;
    rig_up(&r, "cache-expiry", 0, 14);
    zkt_sleep_ms(300);
    fault_expiry(&r);
    zkt_sleep_ms(300);
    fault_expiry(&r);
    rig_down(&r);
}

/* While the link is down (a held cut, then a lost session), a subtree is
 * deleted and created again with the same names: once back, each node is
 * told once (the old ones DELETED, the new ones CREATED, none DELETED and
 * CREATED again with the same czxid).  Deterministic: no writer thread. */
static void subtree_again(zhandle_t *zh, const char *p)
{
    char a[200], b[220];
    snprintf(a, sizeof a, "%s/a", p);
    CU_ASSERT_EQUAL(cc_rmr(zh, a), ZOK);
    CU_ASSERT_EQUAL(zoo_create(zh, a, "A", 1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0), ZOK);
    for (int i = 0; i < 10; i++) {
        snprintf(b, sizeof b, "%s/b%d", a, i);
        CU_ASSERT_EQUAL(zoo_create(zh, b, "B", 1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0), ZOK);
    }
}

static void test_subtree_recreated_while_down(void)
{
    char p[128], a[200];
    zkt_path("cache-subtree", p, sizeof p);
    snprintf(a, sizeof a, "%s/a", p);
    zhandle_t *zh = zkt_raw();
    cc_make_parents(zh, a);
    CU_ASSERT_EQUAL(zoo_create(zh, a, "A", 1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0), ZOK);
    subtree_again(zh, p);
    zkt_proxy_t *px = zkt_proxy_start(zkt_server_port());
    CC_ASSERT_FATAL(px != NULL);
    zkr_client_t *c = zkt_client_at(zkt_proxy_hosts(px), SESSION_MS);
    cc_cache_t t;
    CC_ASSERT_FATAL(cc_cache_open(&t, c, p, ZKR_CACHE_TREE, -1, 1, "TREE", 20000) == ZKR_OK);
    cc_scope_t scope = t.scope;
    for (int round = 0; round < 4; round++) {
        int expire = round >= 2;
        size_t from = cc_log_count(&t.log);
        int before = cc_log_check(&t.log, &scope, NULL, NULL, "", from);
        t.log.quiet_before = from;
        if (expire) {
            /* the session closed from outside while no byte moves */
            int64_t id;
            char pw[16];
            CC_ASSERT_FATAL(zkr_client_session(c, &id, pw) == ZKR_OK);
            CU_ASSERT_EQUAL(zkt_proxy_stall(px, 1), 0);
            CU_ASSERT_EQUAL(zkt_expire_session(id, pw), 0);
        } else {
            CU_ASSERT_EQUAL(zkt_proxy_stall(px, 1), 0);
            zkt_proxy_cut(px);
        }
        for (int i = 0; i < 400 && zkr_client_is_connected(c) && !expire; i++)
            zkt_sleep_ms(10);
        subtree_again(zh, p);
        zkt_proxy_cut(px);
        CU_ASSERT_EQUAL(zkt_proxy_stall(px, 0), 0);
        int64_t t_back = zkt_now_ms();
        CU_ASSERT_EQUAL(zkr_client_wait_connected(c, 20000), ZKR_OK);
        cc_tree_t srv = {0};
        CU_ASSERT_EQUAL(cc_server_tree(zh, &scope, &srv, NULL, 0), 0);
        cc_result_t res;
        cc_converge(&t, &srv, CC_CMP_ALL, CONVERGE_MS, stdout, &res);
        printf("\n    round %d (%s): the copy equal to the server (%zu nodes) %s%lld ms after the link was back; "
               "%d events broke the rules", round, expire ? "session lost" : "cut held down", srv.n,
               res.ms < 0 ? "NOT within " : "", (long long)(zkt_now_ms() - t_back), res.violations - before);
        CU_ASSERT_TRUE(res.ms >= 0);
        CU_ASSERT_EQUAL(res.violations - before, 0);
        cc_tree_clear(&srv);
    }
    cc_cache_close(&t);
    zkr_client_close(c);
    zkt_proxy_stop(px);
    zkt_raw_close(zh);
}

/* Every fault in a row on one cache. */
static void test_all_in_a_row(void)
{
    rig_t r;
    rig_up(&r, "cache-all", 0, 15);
    void (*faults[])(rig_t *) = {fault_cut, fault_stall, fault_expiry, fault_cut_held, fault_restart, fault_cut,
                                 fault_expiry};
    for (size_t i = 0; i < sizeof faults / sizeof *faults; i++) {
        zkt_sleep_ms(200);
        faults[i](&r);
    }
    rig_down(&r);
}

/* The ensemble's ZooKeeper leader killed, down 3 s, started again; twice.
 * Every client of the ensemble loses its connection while it elects. */
static void test_ensemble_leader_killed(void)
{
    rig_t r;
    rig_up(&r, "cache-ens", 1, 16);
    for (int round = 0; round < 2; round++) {
        zkt_sleep_ms(500);
        size_t from = cc_log_count(&r.t.log);
        int64_t s = session_of(&r);
        int k = zkt_ensemble_kill_leader();
        CU_ASSERT_TRUE(k > 0);
        int told = wait_state(&r, from, ZKR_STATE_SUSPENDED, DOWN_MS);
        int samples = 0, fresh = 0;
        if (told)
            sample_down(&r, 3000, NULL, &samples, &fresh);
        printf("\n    leader (node %d) killed: SUSPENDED told %s; zkr_cache_is_fresh sampled %d times while down: "
               "1 %d times", k, told ? "yes" : "NO", samples, fresh);
        CU_ASSERT_TRUE(told);
        CU_ASSERT_EQUAL(fresh, 0);
        if (k > 0)
            CU_ASSERT_EQUAL(zkt_ensemble_restart(k), 0);
        /* back once the client is connected again (through whichever node) */
        CU_ASSERT_EQUAL(zkr_client_wait_connected(r.c, 30000), ZKR_OK);
        after_fault(&r, round ? "leader killed (2)" : "leader killed (1)", zkt_now_ms(), from, s, 0);
    }
    rig_down(&r);
}

static void add_suites(void)
{
    CU_pSuite s = CU_add_suite("cache under faults", NULL, NULL);
    CU_add_test(s, "stall shorter than the session: not fresh while SUSPENDED, the copy equal again", test_stall);
    CU_add_test(s, "cut (reconnected at once, then held down 1.5 s): the copy equal again", test_cut);
    CU_add_test(s, "server restart: not fresh while down, the copy equal again", test_restart);
    CU_add_test(s, "forced expiry (twice): INITIALIZED again, the copy equal again", test_expiry);
    CU_add_test(s, "a subtree deleted and created again while the link is down: each node told once",
                test_subtree_recreated_while_down);
    CU_add_test(s, "every fault in a row on one cache", test_all_in_a_row);
    CU_pSuite e = CU_add_suite("3-node ensemble", zkt_ensemble_up, zkt_ensemble_down);
    CU_add_test(e, "leader killed twice: the copy equal again", test_ensemble_leader_killed);
}

int main(void)
{
    return zkt_main("cache faults", add_suites);
}

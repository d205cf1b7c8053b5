/* A persistent node (zkr_pnode_t, EPHEMERAL) and a group member
 * (zkr_group_t) under faults, on a client whose connection goes through
 * the fault proxy (a stall shorter than the session, a cut with an
 * immediate reconnection, a cut held down 1.5 s, a server restart, a
 * forced expiry of its session, twice) and on a 3-node ensemble (its
 * ZooKeeper leader killed, twice; a forced expiry).
 *
 * Beside them another process (a raw handle, its own session, direct to
 * the server) keeps its own nodes: a member of the same group and a node
 * at another path beside our pnode's.  After each fault, within a bound
 * (20 s): our pnode's node is on the server with the data last set, owned
 * by the client's current session; our member's node is there with its
 * payload and our group's members are exactly ours and the other's, with
 * their payloads; after a lost session the pnode was told DELETED then
 * CREATED (WAITING between them while the old session's node outlives
 * it: a server restart longer than the session); the other process's nodes are still there with their czxid (we
 * never delete another session's node), and there is no extra node.  The
 * time each fault took to come back is printed; no speed is asserted.
 * Every loop is bounded in time and count. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/harness/zkfaults.h"
#include "tests/harness/zkproxy.h"
#include "tests/harness/zkr_test.h"

#define SESSION_MS 6000
#define BACK_MS 20000 /* bound for everything to be back after a fault */
#define DOWN_MS 20000 /* bound for SUSPENDED to be told */

/* ---- the rig ------------------------------------------------------------------------------ */

typedef struct rig {
    char base[128], group[160], svc[160], ours[200], theirs[200], their_member[200], our_member[200];
    const char *hosts;
    zkt_proxy_t *px; /* NULL on the ensemble */
    zkr_client_t *c;
    zhandle_t *raw;   /* the checks' */
    zhandle_t *other; /* the other process */
    zkr_pnode_t *n;
    zkr_group_t *g;
    int64_t their_czxid, their_member_czxid;
    char data[32], payload[32];
    int round;
    /* the pnode's events, as letters (C D W F) */
    pthread_mutex_t mu;
    char told[256];
    size_t ntold;
    atomic_int states_down; /* SUSPENDED or LOST told */
} rig_t;

static void on_pnode(zkr_pnode_t *n, const zkr_pnode_event_t *e, void *ctx)
{
    (void)n;
    rig_t *r = ctx;
    pthread_mutex_lock(&r->mu);
    if (r->ntold + 1 < sizeof r->told)
        r->told[r->ntold++] = "?CDWF"[e->type >= 1 && e->type <= 4 ? e->type : 0];
    r->told[r->ntold] = '\0';
    pthread_mutex_unlock(&r->mu);
}

static void on_state(zkr_client_t *c, zkr_state_t state, void *ctx)
{
    (void)c;
    rig_t *r = ctx;
    if (state == ZKR_STATE_SUSPENDED || state == ZKR_STATE_LOST)
        atomic_fetch_add(&r->states_down, 1);
}

static int64_t session_of(rig_t *r)
{
    int64_t s = 0;
    zkr_client_session(r->c, &s, NULL);
    return s;
}

static int64_t czxid_of(zhandle_t *zh, const char *path)
{
    struct Stat st;
    return zoo_exists(zh, path, 0, &st) == ZOK ? st.czxid : -1;
}

static void rig_up(rig_t *r, const char *name, int on_ensemble)
{
    memset(r, 0, sizeof *r);
    pthread_mutex_init(&r->mu, NULL);
    zkt_path(name, r->base, sizeof r->base);
    snprintf(r->group, sizeof r->group, "%s/group", r->base);
    snprintf(r->svc, sizeof r->svc, "%s/svc", r->base);
    snprintf(r->ours, sizeof r->ours, "%s/ours", r->svc);
    snprintf(r->theirs, sizeof r->theirs, "%s/theirs", r->svc);
    snprintf(r->our_member, sizeof r->our_member, "%s/me", r->group);
    snprintf(r->their_member, sizeof r->their_member, "%s/other", r->group);
    r->hosts = on_ensemble ? zkt_ensemble_hosts() : zkt_hosts();
    r->raw = zkt_raw_at(r->hosts);
    /* (a session that outlives the longest fault: a slow restart) */
    r->other = zookeeper_init(r->hosts, zkt_noop_watcher, 30000, NULL, NULL, 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r->other);
    for (int i = 0; i < 800 && zoo_state(r->other) != ZOO_CONNECTED_STATE; i++)
        zkt_sleep_ms(25);
    CU_ASSERT_EQUAL_FATAL(zoo_state(r->other), ZOO_CONNECTED_STATE);
    /* the other process: persistent parents, its ephemeral nodes */
    const char *dirs[] = {"/zkr-test", r->base, r->group, r->svc};
    for (size_t i = 0; i < 4; i++)
        zoo_create(r->other, dirs[i], "", 0, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
    CU_ASSERT_EQUAL_FATAL(zoo_create(r->other, r->theirs, "t", 1, &ZOO_OPEN_ACL_UNSAFE, ZOO_EPHEMERAL, NULL, 0), ZOK);
    CU_ASSERT_EQUAL_FATAL(
        zoo_create(r->other, r->their_member, "theirs", 6, &ZOO_OPEN_ACL_UNSAFE, ZOO_EPHEMERAL, NULL, 0), ZOK);
    r->their_czxid = czxid_of(r->raw, r->theirs);
    r->their_member_czxid = czxid_of(r->raw, r->their_member);
    if (!on_ensemble) {
        r->px = zkt_proxy_start(zkt_server_port());
        CU_ASSERT_PTR_NOT_NULL_FATAL(r->px);
    }
    r->c = zkt_client_at(r->px ? zkt_proxy_hosts(r->px) : r->hosts, SESSION_MS);
    CU_ASSERT_EQUAL(zkr_client_add_listener(r->c, on_state, r), ZKR_OK);
    snprintf(r->data, sizeof r->data, "data-0");
    snprintf(r->payload, sizeof r->payload, "payload-0");
    CU_ASSERT_EQUAL_FATAL(zkr_pnode_new(&r->n, r->c, r->ours, r->data, strlen(r->data), NULL), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_pnode_set_listener(r->n, on_pnode, r), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_pnode_start(r->n), ZKR_OK);
    CU_ASSERT_EQUAL_FATAL(zkr_group_new(&r->g, r->c, r->group, "me", r->payload, strlen(r->payload), NULL), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_group_start(r->g), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_pnode_wait_created(r->n, BACK_MS), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_group_wait_initialized(r->g, BACK_MS), ZKR_OK);
}

static void rig_down(rig_t *r)
{
    zkr_pnode_free(r->n);
    zkr_group_free(r->g);
    /* ours deleted (seen by the checks' handle, which may read from
     * another server of the ensemble, a little behind), theirs not */
    CU_ASSERT_TRUE(zkt_wait_gone(r->raw, r->ours, 5000));
    CU_ASSERT_TRUE(zkt_wait_gone(r->raw, r->our_member, 5000));
    CU_ASSERT_EQUAL(czxid_of(r->raw, r->theirs), r->their_czxid);
    CU_ASSERT_EQUAL(czxid_of(r->raw, r->their_member), r->their_member_czxid);
    zkr_client_remove_listener(r->c, on_state, r);
    zkr_client_close(r->c);
    zkt_raw_close(r->other);
    zkt_raw_close(r->raw);
    zkt_proxy_stop(r->px);
    pthread_mutex_destroy(&r->mu);
}

/* ---- back after a fault ----------------------------------------------------------------------- */

/* The node at path has `data` and is owned by the client's current
 * session. */
static int node_is(rig_t *r, const char *path, const char *data)
{
    char buf[64];
    int len = (int)sizeof buf - 1;
    struct Stat st;
    if (zoo_get(r->raw, path, 0, buf, &len, &st) != ZOK)
        return 0;
    buf[len > 0 ? len : 0] = '\0';
    return strcmp(buf, data) == 0 && st.ephemeralOwner == session_of(r) && zkr_client_is_connected(r->c);
}

static int members_are(rig_t *r, const char *want)
{
    zkr_group_member_t *m = NULL;
    size_t n = 0;
    char line[256];
    size_t k = 0;
    line[0] = '\0';
    if (zkr_group_members(r->g, &m, &n) != ZKR_OK)
        return 0;
    for (size_t i = 0; i < n && k < sizeof line; i++)
        k += (size_t)snprintf(line + k, sizeof line - k, "%s%s=%s", i ? " " : "", m[i].id, m[i].payload);
    zkr_group_members_free(m, n);
    return strcmp(line, want) == 0;
}

static int all_back(void *arg)
{
    rig_t *r = arg;
    char want[128];
    snprintf(want, sizeof want, "me=%s other=theirs", r->payload);
    return zkr_pnode_is_created(r->n) && zkr_group_is_member(r->g) && node_is(r, r->ours, r->data) &&
           node_is(r, r->our_member, r->payload) && members_are(r, want);
}

static size_t told_count(rig_t *r)
{
    pthread_mutex_lock(&r->mu);
    size_t n = r->ntold;
    pthread_mutex_unlock(&r->mu);
    return n;
}

/* After fault `what` (begun at t0, the pnode's events from index from): all
 * back within BACK_MS, nothing of the other process's touched, no extra
 * node; `lost`: the session was lost (DELETED then CREATED told).  Then a
 * new data and payload for the next fault. */
static void after_fault(rig_t *r, const char *what, int64_t t0, size_t from, int lost)
{
    int back = zkt_wait_for(all_back, r, BACK_MS);
    int64_t ms = zkt_now_ms() - t0;
    pthread_mutex_lock(&r->mu);
    char since[128];
    snprintf(since, sizeof since, "%s", r->told + (from < r->ntold ? from : r->ntold));
    pthread_mutex_unlock(&r->mu);
    printf("\n    %s: %s %lld ms after it began; the pnode told \"%s\"", what, back ? "all back" : "NOT back within",
           (long long)(back ? ms : BACK_MS), since);
    CU_ASSERT_TRUE(back);
    /* a session lost: DELETED then CREATED; WAITING between them if the
     * old session's node outlived it on the server (a restart that took
     * longer than the session: the client gave the session up first) */
    int remade = strcmp(since, "DC") == 0 || strcmp(since, "DWC") == 0;
    CU_ASSERT_TRUE(remade || (!lost && since[0] == '\0'));
    CU_ASSERT_EQUAL(czxid_of(r->raw, r->theirs), r->their_czxid);
    CU_ASSERT_EQUAL(czxid_of(r->raw, r->their_member), r->their_member_czxid);
    CU_ASSERT_EQUAL(zkt_count_children(r->raw, r->svc), 2);
    CU_ASSERT_EQUAL(zkt_count_children(r->raw, r->group), 2);
    /* new data for the next one */
    r->round++;
    snprintf(r->data, sizeof r->data, "data-%d", r->round);
    snprintf(r->payload, sizeof r->payload, "payload-%d", r->round);
    CU_ASSERT_EQUAL(zkr_pnode_set_data(r->n, r->data, strlen(r->data), BACK_MS), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_group_set_payload(r->g, r->payload, strlen(r->payload), BACK_MS), ZKR_OK);
    CU_ASSERT_TRUE(zkt_wait_for(all_back, r, BACK_MS));
}

typedef struct down_since {
    rig_t *r;
    int before;
} down_since_t;

static int went_down(void *arg)
{
    down_since_t *d = arg;
    return atomic_load(&d->r->states_down) > d->before;
}

/* ---- the faults ------------------------------------------------------------------------------------- */

static void fault_stall(rig_t *r)
{
    size_t from = told_count(r);
    int64_t t0 = zkt_now_ms();
    down_since_t d = {r, atomic_load(&r->states_down)};
    CU_ASSERT_EQUAL(zkt_proxy_stall(r->px, 1), 0);
    CU_ASSERT_TRUE(zkt_wait_for(went_down, &d, DOWN_MS)); /* about 2/3 of the session */
    zkt_proxy_cut(r->px);
    CU_ASSERT_EQUAL(zkt_proxy_stall(r->px, 0), 0);
    after_fault(r, "stall", t0, from, 0);
}

static void fault_cut(rig_t *r)
{
    size_t from = told_count(r);
    int64_t t0 = zkt_now_ms();
    zkt_proxy_cut(r->px);
    after_fault(r, "cut", t0, from, 0);
}

static void fault_cut_held(rig_t *r)
{
    size_t from = told_count(r);
    int64_t t0 = zkt_now_ms();
    CU_ASSERT_EQUAL(zkt_proxy_stall(r->px, 1), 0);
    zkt_proxy_cut(r->px);
    zkt_sleep_ms(1500);
    zkt_proxy_cut(r->px);
    CU_ASSERT_EQUAL(zkt_proxy_stall(r->px, 0), 0);
    after_fault(r, "cut held down 1.5 s", t0, from, 0);
}

static void fault_restart(rig_t *r)
{
    size_t from = told_count(r);
    int64_t t0 = zkt_now_ms();
    CU_ASSERT_EQUAL(zkt_server("restart"), 0);
    after_fault(r, "server restart", t0, from, 0);
}

typedef struct new_session {
    rig_t *r;
    int64_t old;
} new_session_t;

static int on_new_session(void *arg)
{
    new_session_t *s = arg;
    int64_t now = session_of(s->r);
    return now != 0 && now != s->old && zkr_client_is_connected(s->r->c);
}

static void fault_expiry(rig_t *r)
{
    size_t from = told_count(r);
    int64_t t0 = zkt_now_ms();
    if (r->px) {
        zkt_expire_client(r->c, SESSION_MS);
    } else {
        int64_t id = 0;
        char pw[16];
        CU_ASSERT_EQUAL_FATAL(zkr_client_session(r->c, &id, pw), ZKR_OK);
        CU_ASSERT_EQUAL(zkt_expire_session_at(r->hosts, id, pw), 0);
        new_session_t s = {r, id};
        CU_ASSERT_TRUE(zkt_wait_for(on_new_session, &s, BACK_MS));
    }
    after_fault(r, "forced expiry", t0, from, 1);
}

static void fault_leader_killed(rig_t *r)
{
    size_t from = told_count(r);
    int64_t t0 = zkt_now_ms();
    down_since_t d = {r, atomic_load(&r->states_down)};
    int k = zkt_ensemble_kill_leader();
    CU_ASSERT_TRUE(k > 0);
    CU_ASSERT_TRUE(zkt_wait_for(went_down, &d, DOWN_MS));
    zkt_sleep_ms(1000);
    if (k > 0)
        CU_ASSERT_EQUAL(zkt_ensemble_restart(k), 0);
    CU_ASSERT_EQUAL(zkr_client_wait_connected(r->c, 30000), ZKR_OK);
    after_fault(r, "leader killed", t0, from, 0);
}

/* ---- the tests ------------------------------------------------------------------------------------------- */

static void test_standalone(void)
{
    rig_t r;
    rig_up(&r, "member-faults", 0);
    void (*faults[])(rig_t *) = {fault_stall, fault_cut, fault_cut_held, fault_restart, fault_expiry, fault_expiry};
    for (size_t i = 0; i < sizeof faults / sizeof *faults; i++) {
        zkt_sleep_ms(200);
        faults[i](&r);
    }
    rig_down(&r);
}

static void test_ensemble(void)
{
    rig_t r;
    rig_up(&r, "member-faults-ens", 1);
    void (*faults[])(rig_t *) = {fault_leader_killed, fault_leader_killed, fault_expiry};
    for (size_t i = 0; i < sizeof faults / sizeof *faults; i++) {
        zkt_sleep_ms(500);
        faults[i](&r);
    }
    rig_down(&r);
}

static void add_suites(void)
{
    CU_pSuite s = CU_add_suite("pnode and member under faults", NULL, NULL);
    CU_add_test(s, "stall, cut, cut held, server restart, forced expiry twice: back with the same data, "
                   "the other process's nodes untouched",
                test_standalone);
    CU_pSuite e = CU_add_suite("3-node ensemble", zkt_ensemble_up, zkt_ensemble_down);
    CU_add_test(e, "leader killed twice, forced expiry: back with the same data, the other process's nodes "
                   "untouched",
                test_ensemble);
}

int main(void)
{
    return zkt_main("test_member_faults", add_suites);
}

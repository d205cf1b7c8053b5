/* Registered instances (zkr/discovery.h) under faults: each comes back,
 * with its latest data, on the client's session, after a forced expiry of
 * the session (twice) and after the ZooKeeper leader of a 3-node ensemble
 * is killed (twice); another process's instances (an ephemeral one of
 * another session, with an id of ours among them, and a persistent one)
 * are never deleted nor written, and the persistent instances of ours are
 * never made again.  A service cache of another client follows: at the
 * end it lists exactly the server's instances.  Every wait is bounded. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/harness/zkfaults.h"
#include "tests/harness/zkr_test.h"

#define SESSION_MS 6000
#define WAIT_MS 30000

typedef struct rig {
    const char *hosts;
    char base[256];
    zkr_client_t *c;     /* ours */
    zkr_client_t *watch; /* the service cache's */
    zhandle_t *raw;      /* the other process (its own session) */
    zkr_discovery_t *d, *wd;
    zkr_service_cache_t *sc;
    zkr_instance_t dyn, stat, seq, theirs, twin;
    char their_json[1024];
    struct Stat their_st, persist_st, stat_st;
} rig_t;

static void mk(zkr_instance_t *in, const char *id, zkr_service_type_t type, int port)
{
    CU_ASSERT_EQUAL_FATAL(zkr_instance_init(in), ZKR_OK);
    in->name = "svc";
    snprintf(in->id_buf, sizeof in->id_buf, "%s", id);
    in->address = "10.0.0.1";
    in->port = port;
    in->service_type = type;
}

static const char *path_of(rig_t *r, const char *id)
{
    static char buf[4][512];
    static int slot;
    char *s = buf[slot++ % 4];
    snprintf(s, 512, "%s/svc/%s", r->base, id);
    return s;
}

static void other_create(rig_t *r, const char *id, int flags)
{
    char dir[300];
    snprintf(dir, sizeof dir, "%s/svc", r->base);
    zoo_create(r->raw, "/zkr-test", NULL, -1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
    zoo_create(r->raw, r->base, NULL, -1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
    zoo_create(r->raw, dir, NULL, -1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
    CU_ASSERT_EQUAL(zoo_create(r->raw, path_of(r, id), r->their_json, (int)strlen(r->their_json),
                               &ZOO_OPEN_ACL_UNSAFE, flags, NULL, 0),
                    ZOK);
}

static void rig_up(rig_t *r, const char *name, int on_ensemble)
{
    memset(r, 0, sizeof *r);
    r->hosts = on_ensemble ? zkt_ensemble_hosts() : zkt_hosts();
    zkt_path(name, r->base, sizeof r->base);
    r->c = zkt_client_at(r->hosts, SESSION_MS);
    r->watch = zkt_client_at(r->hosts, SESSION_MS);
    r->raw = zkt_raw_at(r->hosts);
    mk(&r->dyn, "dyn", ZKR_SERVICE_DYNAMIC, 1);
    mk(&r->stat, "stat", ZKR_SERVICE_STATIC, 2);
    mk(&r->seq, "seq", ZKR_SERVICE_DYNAMIC_SEQUENTIAL, 3);
    mk(&r->theirs, "theirs", ZKR_SERVICE_DYNAMIC, 4);
    mk(&r->twin, "twin", ZKR_SERVICE_DYNAMIC, 5);
    char *j = NULL;
    size_t len = 0;
    CU_ASSERT_EQUAL_FATAL(zkr_instance_to_json(&r->theirs, &j, &len), ZKR_OK);
    snprintf(r->their_json, sizeof r->their_json, "%s", j);
    zkr_free(j);
    /* the other process: an ephemeral instance, one at the id "twin" we
     * register too, and a persistent one */
    other_create(r, "theirs", ZOO_EPHEMERAL);
    other_create(r, "twin", ZOO_EPHEMERAL);
    other_create(r, "persist", 0);
    CU_ASSERT_EQUAL(zoo_exists(r->raw, path_of(r, "theirs"), 0, &r->their_st), ZOK);
    CU_ASSERT_EQUAL(zoo_exists(r->raw, path_of(r, "persist"), 0, &r->persist_st), ZOK);
    CU_ASSERT_EQUAL_FATAL(zkr_discovery_new(&r->d, r->c, r->base), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_discovery_register(r->d, &r->dyn, WAIT_MS), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_discovery_register(r->d, &r->stat, WAIT_MS), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_discovery_register(r->d, &r->seq, WAIT_MS), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_discovery_register(r->d, &r->twin, 300), ZKR_ETIMEDOUT); /* theirs is there */
    CU_ASSERT_EQUAL(zoo_exists(r->raw, path_of(r, "stat"), 0, &r->stat_st), ZOK);
    CU_ASSERT_EQUAL_FATAL(zkr_discovery_new(&r->wd, r->watch, r->base), ZKR_OK);
    CU_ASSERT_EQUAL_FATAL(zkr_service_cache_new(&r->sc, r->wd, "svc"), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_service_cache_start(r->sc), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_service_cache_wait_initialized(r->sc, WAIT_MS), ZKR_OK);
}

static void rig_down(rig_t *r)
{
    zkr_service_cache_free(r->sc);
    zkr_discovery_free(r->wd);
    zkr_discovery_free(r->d);
    zkr_client_close(r->watch);
    zkr_client_close(r->c);
    zkt_raw_close(r->raw);
}

/* Ours back: the ephemeral ones on c's current session with their latest
 * data (the sequential one: one node of ours, protected name), the static
 * one untouched. */
typedef struct check {
    rig_t *r;
    char why[256];
} check_t;

static int ours_back(void *arg)
{
    check_t *k = arg;
    rig_t *r = k->r;
    int64_t session = 0;
    if (zkr_client_session(r->c, &session, NULL) != ZKR_OK)
        return snprintf(k->why, sizeof k->why, "no session"), 0;
    zkr_instance_t *got = NULL;
    int rc = zkr_discovery_instance(r->d, "svc", "dyn", &got, 2000);
    struct Stat st;
    int ok = rc == ZKR_OK && got->port == r->dyn.port &&
             zoo_exists(r->raw, path_of(r, "dyn"), 0, &st) == ZOK && st.ephemeralOwner == session;
    zkr_instance_free(got);
    if (!ok)
        return snprintf(k->why, sizeof k->why, "dyn: %s", zkr_err_name(rc)), 0;
    zkr_instance_t **v = NULL;
    size_t n = 0;
    if (zkr_discovery_instances(r->d, "svc", &v, &n, 2000) != ZKR_OK)
        return snprintf(k->why, sizeof k->why, "list"), 0;
    int seqs = 0;
    for (size_t i = 0; i < n; i++)
        seqs += strcmp(v[i]->id, "seq") == 0 && v[i]->port == r->seq.port;
    zkr_instances_free(v, n);
    if (seqs != 1)
        return snprintf(k->why, sizeof k->why, "%d sequential instances of ours", seqs), 0;
    return 1;
}

/* Theirs as they were (the ephemeral one while its session lives). */
static void theirs_untouched(rig_t *r)
{
    char buf[1024];
    int len = sizeof buf - 1;
    struct Stat st;
    const char *ids[] = {"theirs", "twin", "persist"};
    for (int i = 0; i < 3; i++) {
        len = sizeof buf - 1;
        int rc = zoo_get(r->raw, path_of(r, ids[i]), 0, buf, &len, &st);
        CU_ASSERT_EQUAL(rc, ZOK);
        if (rc != ZOK) {
            printf("\n    their %s: %s", ids[i], zerror(rc));
            continue;
        }
        buf[len < 0 ? 0 : len] = '\0';
        CU_ASSERT_STRING_EQUAL(buf, r->their_json);
        CU_ASSERT_EQUAL(st.version, 0);
        if (i == 0)
            CU_ASSERT_EQUAL(st.czxid, r->their_st.czxid);
        if (i == 2)
            CU_ASSERT_EQUAL(st.czxid, r->persist_st.czxid);
        if (i < 2)
            CU_ASSERT_EQUAL(st.ephemeralOwner, zoo_client_id(r->raw)->client_id);
    }
    CU_ASSERT_EQUAL(zoo_exists(r->raw, path_of(r, "stat"), 0, &st), ZOK);
    CU_ASSERT_EQUAL(st.czxid, r->stat_st.czxid);
}

/* The cache lists what the server has: dyn, persist, seq, stat, theirs,
 * twin (theirs), by id. */
static int cache_settled(void *arg)
{
    rig_t *r = arg;
    zkr_instance_t **v = NULL;
    size_t n = 0;
    if (zkr_service_cache_instances(r->sc, &v, &n) != ZKR_OK)
        return 0;
    char ids[256] = "";
    for (size_t i = 0; i < n; i++)
        snprintf(ids + strlen(ids), sizeof ids - strlen(ids), "%s%s", i ? "," : "", v[i]->id);
    zkr_instances_free(v, n);
    /* (node-name order: the sequential one's protected name sorts first) */
    return strcmp(ids, "seq,dyn,theirs,stat,theirs,theirs") == 0;
}

static void after_fault(rig_t *r, const char *what)
{
    check_t k = {r, ""};
    int back = zkt_wait_for(ours_back, &k, WAIT_MS);
    printf("\n    %s: our instances back %s%s", what, back ? "yes" : "NO: ", back ? "" : k.why);
    CU_ASSERT(back);
    theirs_untouched(r);
    CU_ASSERT(zkt_wait_for(cache_settled, r, WAIT_MS));
}

static void test_expiry(void)
{
    rig_t r;
    rig_up(&r, "disc-fx", 0);
    for (int round = 0; round < 2; round++) {
        r.dyn.port = 100 + round; /* the latest data comes back */
        r.seq.port = 200 + round;
        CU_ASSERT_EQUAL(zkr_discovery_update(r.d, &r.dyn, WAIT_MS), ZKR_OK);
        CU_ASSERT_EQUAL(zkr_discovery_update(r.d, &r.seq, WAIT_MS), ZKR_OK);
        zkt_expire_client(r.c, SESSION_MS);
        after_fault(&r, round ? "forced expiry (2)" : "forced expiry (1)");
    }
    rig_down(&r);
}

static void test_ensemble_leader_killed(void)
{
    rig_t r;
    rig_up(&r, "disc-fe", 1);
    for (int round = 0; round < 2; round++) {
        r.dyn.port = 300 + round;
        CU_ASSERT_EQUAL(zkr_discovery_update(r.d, &r.dyn, WAIT_MS), ZKR_OK);
        int k = zkt_ensemble_kill_leader();
        CU_ASSERT_TRUE(k > 0);
        zkt_sleep_ms(1000);
        if (k > 0)
            CU_ASSERT_EQUAL(zkt_ensemble_restart(k), 0);
        CU_ASSERT_EQUAL(zkr_client_wait_connected(r.c, WAIT_MS), ZKR_OK);
        after_fault(&r, round ? "leader killed (2)" : "leader killed (1)");
    }
    rig_down(&r);
}

static void add_suites(void)
{
    CU_pSuite s = CU_add_suite("discovery under faults", NULL, NULL);
    CU_add_test(s, "forced expiry (twice): ours made again with the latest data, theirs untouched", test_expiry);
    CU_pSuite e = CU_add_suite("3-node ensemble", zkt_ensemble_up, zkt_ensemble_down);
    CU_add_test(e, "leader killed (twice): ours there with the latest data, theirs untouched",
                test_ensemble_leader_killed);
}

int main(void)
{
    return zkt_main("discovery faults", add_suites);
}

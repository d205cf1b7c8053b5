/* Leader election from outside, as a new user and a hostile one: calls in
 * the wrong order and their documented codes, elections whose children
 * were made by something else (no marker, not sequential, invalid UTF-8
 * or NUL bytes in the data, 1 MB of data), a latch or selector closed from
 * another object's callback on the client thread, a latch asked about
 * after its client closed, and a guarded write too large for one request. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/harness/zkr_test.h"

#define SESSION_MS 4000
#define WAIT_MS 15000 /* bound for what must happen */

static void idle_take(zkr_selector_t *s, int64_t token, void *ctx)
{
    (void)token;
    (void)ctx;
    while (zkr_selector_wait_stop(s, 1000) == ZKR_ETIMEDOUT) {
    }
}

static int selector_leads(void *arg)
{
    return zkr_selector_has_leadership(arg);
}

static void create_child(zhandle_t *zh, const char *dir, const char *name, const char *data, int len)
{
    char full[256];
    snprintf(full, sizeof full, "%s/%s", dir, name);
    CU_ASSERT_EQUAL(zoo_create(zh, full, data, len, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0), ZOK);
}

/* ---- every call in the wrong order: the documented code --------------------------------- */

static void test_wrong_order(void)
{
    char path[128], spath[160];
    zkt_path("edges-order", path, sizeof path);
    snprintf(spath, sizeof spath, "%s-sel", path);
    zkr_client_t *c = zkt_client(SESSION_MS);
    zkr_latch_t *l;
    int64_t token = 0;
    zkr_op_t op = ZKR_OP_CHECK_INIT("/zkr-test", -1);
    CU_ASSERT_EQUAL_FATAL(zkr_latch_new(&l, c, path, NULL), ZKR_OK);
    CU_ASSERT_STRING_EQUAL(zkr_latch_id(l), "");
    CU_ASSERT_EQUAL(zkr_latch_await(l, 50), ZKR_ESTATE); /* before start */
    CU_ASSERT_EQUAL(zkr_latch_close(l, ZKR_LATCH_CLOSE_SILENT), ZKR_ESTATE);
    CU_ASSERT_EQUAL(zkr_latch_fencing_token(l, &token), ZKR_ENOTLEADER);
    CU_ASSERT_EQUAL(zkr_latch_fencing_token(l, NULL), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_latch_guarded_write(l, &op, 1), ZKR_ENOTLEADER);
    CU_ASSERT_EQUAL(zkr_latch_start(l), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_latch_start(l), ZKR_ESTATE);
    CU_ASSERT_EQUAL(zkr_latch_set_listener(l, NULL, NULL), ZKR_OK); /* any time */
    CU_ASSERT_EQUAL(zkr_latch_await(l, WAIT_MS), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_latch_proclaim(l, ""), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_latch_guarded_write(l, NULL, 1), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_latch_guarded_write(l, &op, 0), ZKR_EINVAL);
    zkr_op_t bad_version = ZKR_OP_SET_INIT(path, "x", 1, 12345);
    CU_ASSERT_EQUAL(zkr_latch_guarded_write(l, &bad_version, 1), ZKR_EZOOKEEPER);
    CU_ASSERT_EQUAL(bad_version.rc, ZKR_EZOOKEEPER);
    /* Our node's ACL changed from outside to refuse writes: ZKR_ENOAUTH */
    zkr_participant_t *ld = NULL;
    CU_ASSERT_EQUAL_FATAL(zkr_election_leader(c, path, ZKR_ELECTION_LATCH, &ld), ZKR_OK);
    struct ACL read_only = {ZOO_PERM_READ, {"world", "anyone"}};
    struct ACL_vector acl = {1, &read_only};
    zhandle_t *raw = zkt_raw();
    CU_ASSERT_EQUAL(zoo_set_acl(raw, ld->node_path, -1, &acl), ZOK);
    CU_ASSERT_EQUAL(zkr_latch_proclaim(l, "refused"), ZKR_ENOAUTH);
    zkt_raw_close(raw);
    zkr_participants_free(ld, 1);
    CU_ASSERT_EQUAL(zkr_latch_close(l, ZKR_LATCH_CLOSE_SILENT), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_latch_close(l, ZKR_LATCH_CLOSE_SILENT), ZKR_ESTATE);
    CU_ASSERT_EQUAL(zkr_latch_set_listener(l, NULL, NULL), ZKR_ESTATE); /* closed */
    CU_ASSERT_EQUAL(zkr_latch_start(l), ZKR_ESTATE); /* closed */
    CU_ASSERT_EQUAL(zkr_latch_await(l, 0), ZKR_ESTATE);
    CU_ASSERT_EQUAL(zkr_latch_proclaim(l, "x"), ZKR_ENOTLEADER);
    zkr_latch_free(l);

    zkr_selector_t *s;
    CU_ASSERT_EQUAL_FATAL(zkr_selector_new(&s, c, spath, NULL, idle_take, NULL), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_selector_requeue(s), ZKR_ESTATE);
    CU_ASSERT_EQUAL(zkr_selector_close(s), ZKR_ESTATE);
    CU_ASSERT_EQUAL(zkr_selector_interrupt(s), ZKR_ENOTLEADER);
    CU_ASSERT_EQUAL(zkr_selector_wait_stop(s, 50), ZKR_OK); /* not leading: stop */
    CU_ASSERT_EQUAL(zkr_selector_proclaim(s, "x"), ZKR_ENOTLEADER);
    CU_ASSERT_EQUAL(zkr_selector_start(s), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_selector_start(s), ZKR_ESTATE);
    CU_ASSERT_TRUE(zkt_wait_for(selector_leads, s, WAIT_MS));
    CU_ASSERT_EQUAL(zkr_selector_requeue(s), ZKR_OK); /* leading: nothing to do */
    CU_ASSERT_EQUAL(zkr_selector_close(s), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_selector_close(s), ZKR_ESTATE);
    CU_ASSERT_EQUAL(zkr_selector_requeue(s), ZKR_ESTATE);
    zkr_selector_free(s);

    zkr_participant_t *p = NULL;
    size_t n = 7;
    CU_ASSERT_EQUAL(zkr_election_participants(c, path, ZKR_ELECTION_LATCH, &p, &n), ZKR_OK); /* all gone */
    CU_ASSERT_EQUAL(n, 0);
    CU_ASSERT_PTR_NULL(p);
    CU_ASSERT_EQUAL(zkr_election_leader(c, path, ZKR_ELECTION_LATCH, &p), ZKR_ENONODE);
    CU_ASSERT_EQUAL(zkr_election_leader(c, path, ZKR_ELECTION_LATCH, NULL), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_election_participants(c, path, ZKR_ELECTION_LATCH, &p, NULL), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_election_participants(c, "/zookeeper", ZKR_ELECTION_LATCH, &p, &n), ZKR_EINVAL);
    zkr_client_close(c);
}

/* ---- children made by something else ---------------------------------------------------- */

typedef struct seen_leader {
    pthread_mutex_t mu;
    int calls;
    char last[256]; /* the last leader's node name ("" for nobody) */
    size_t last_len;
} seen_leader_t;

static void on_observe(zkr_observer_t *observer, const zkr_participant_t *leader, void *ctx)
{
    (void)observer;
    seen_leader_t *s = ctx;
    pthread_mutex_lock(&s->mu);
    s->calls++;
    const char *name = leader ? strrchr(leader->node_path, '/') + 1 : "";
    snprintf(s->last, sizeof s->last, "%s", name);
    s->last_len = leader ? leader->id_len : 0;
    pthread_mutex_unlock(&s->mu);
}

typedef struct want_leader {
    seen_leader_t *s;
    const char *name;
} want_leader_t;

static int observed(void *arg)
{
    want_leader_t *w = arg;
    pthread_mutex_lock(&w->s->mu);
    int ok = w->s->calls > 0 && strcmp(w->s->last, w->name) == 0;
    pthread_mutex_unlock(&w->s->mu);
    return ok;
}

static void test_foreign_children(void)
{
    char path[128];
    zkt_path("edges-foreign", path, sizeof path);
    zhandle_t *raw = zkt_raw();
    zkr_client_t *c = zkt_client(SESSION_MS);
    CU_ASSERT_EQUAL_FATAL(zoo_create(raw, path, NULL, -1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0), ZOK);
    /* Curator's order: the text after the last "latch-", else the name */
    create_child(raw, path, "x-latch-", "", 0);                     /* empty key: first */
    create_child(raw, path, "foo", "\xff\xfe\0zz", 5);              /* no marker; bad UTF-8, a NUL */
    create_child(raw, path, "zzz-latch-abc", NULL, -1);             /* not sequential, no data */
    size_t big_len = 1000 * 1000;
    char *big = malloc(big_len);
    CU_ASSERT_PTR_NOT_NULL_FATAL(big);
    memset(big, 0xc3, big_len); /* invalid UTF-8 throughout */
    create_child(raw, path, "_c_big-latch-0000000000", big, (int)big_len);
    free(big);

    zkr_participant_t *p = NULL;
    size_t n = 0;
    CU_ASSERT_EQUAL_FATAL(zkr_election_participants(c, path, ZKR_ELECTION_LATCH, &p, &n), ZKR_OK);
    CU_ASSERT_EQUAL_FATAL(n, 4);
    const char *order[4] = {"x-latch-", "_c_big-latch-0000000000", "zzz-latch-abc", "foo"};
    size_t lens[4] = {0, 1000 * 1000, 0, 5};
    for (size_t i = 0; i < n; i++) {
        CU_ASSERT_STRING_EQUAL(strrchr(p[i].node_path, '/') + 1, order[i]);
        CU_ASSERT_EQUAL(p[i].id_len, lens[i]);
        CU_ASSERT_EQUAL(p[i].id[p[i].id_len], '\0');
        CU_ASSERT_EQUAL(p[i].is_leader, i == 0);
        CU_ASSERT_EQUAL(p[i].session, 0); /* persistent */
    }
    CU_ASSERT_EQUAL(memcmp(p[3].id, "\xff\xfe\0zz", 5), 0);
    zkr_participants_free(p, n);

    /* The observer tells the first node; a latch queues behind all of them. */
    seen_leader_t seen;
    memset(&seen, 0, sizeof seen);
    pthread_mutex_init(&seen.mu, NULL);
    zkr_observer_t *o;
    CU_ASSERT_EQUAL_FATAL(zkr_observer_new(&o, c, path, ZKR_ELECTION_LATCH, on_observe, &seen), ZKR_OK);
    want_leader_t w = {&seen, "x-latch-"};
    CU_ASSERT_TRUE(zkt_wait_for(observed, &w, WAIT_MS));
    zkr_latch_t *l;
    CU_ASSERT_EQUAL_FATAL(zkr_latch_new(&l, c, path, "me"), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_latch_start(l), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_latch_await(l, 500), ZKR_ETIMEDOUT);
    /* Gone one by one from the front: the big node is observed, then ours. */
    char full[256];
    snprintf(full, sizeof full, "%s/x-latch-", path);
    CU_ASSERT_EQUAL(zoo_delete(raw, full, -1), ZOK);
    w.name = "_c_big-latch-0000000000";
    CU_ASSERT_TRUE(zkt_wait_for(observed, &w, WAIT_MS));
    pthread_mutex_lock(&seen.mu);
    CU_ASSERT_EQUAL(seen.last_len, 1000 * 1000);
    pthread_mutex_unlock(&seen.mu);
    const char *rest[3] = {"_c_big-latch-0000000000", "zzz-latch-abc", "foo"};
    for (int i = 0; i < 3; i++) {
        snprintf(full, sizeof full, "%s/%s", path, rest[i]);
        CU_ASSERT_EQUAL(zoo_delete(raw, full, -1), ZOK);
    }
    CU_ASSERT_EQUAL(zkr_latch_await(l, WAIT_MS), ZKR_OK);
    zkr_participant_t *ld = NULL;
    CU_ASSERT_EQUAL(zkr_election_leader(c, path, ZKR_ELECTION_LATCH, &ld), ZKR_OK);
    CU_ASSERT_TRUE(ld && ld->id_len == 2 && strcmp(ld->id, "me") == 0);
    w.name = ld ? strrchr(ld->node_path, '/') + 1 : "?";
    CU_ASSERT_TRUE(zkt_wait_for(observed, &w, WAIT_MS));
    zkr_participants_free(ld, 1);
    zkr_observer_free(o);
    zkr_latch_free(l);
    zkr_client_close(c);
    zkt_raw_close(raw);
}

/* ---- closed from another object's callback, on the client thread ------------------------ */

/* The listener told of a latch or selector closed from a callback of
 * another object: it runs on the client thread, the very thread that runs
 * the closed object's pending "not leader". */
typedef struct victim {
    zkr_latch_t *latch;
    zkr_selector_t *sel;
    atomic_int told_leader, told_not_leader;
    atomic_int closed, rc;
} victim_t;

static void on_victim(zkr_latch_t *latch, int is_leader, int64_t token, void *ctx)
{
    (void)latch;
    (void)token;
    victim_t *v = ctx;
    atomic_fetch_add(is_leader ? &v->told_leader : &v->told_not_leader, 1);
}

static void on_victim_sel(zkr_selector_t *sel, int is_leader, int64_t token, void *ctx)
{
    (void)sel;
    on_victim(NULL, is_leader, token, ctx);
}

static void close_victim(victim_t *v)
{
    if (atomic_exchange(&v->closed, 1))
        return;
    int rc = v->latch ? zkr_latch_close(v->latch, ZKR_LATCH_CLOSE_NOTIFY_LEADER) : zkr_selector_close(v->sel);
    atomic_store(&v->rc, rc + 1000); /* 1000: returned ZKR_OK */
}

static void closer_listener(zkr_latch_t *latch, int is_leader, int64_t token, void *ctx)
{
    (void)latch;
    (void)token;
    if (is_leader)
        close_victim(ctx);
}

static void closer_observer(zkr_observer_t *observer, const zkr_participant_t *leader, void *ctx)
{
    (void)observer;
    if (leader)
        close_victim(ctx);
}

static int victim_closed(void *arg)
{
    return atomic_load(&((victim_t *)arg)->rc) != 0;
}

static int victim_told(void *arg)
{
    return atomic_load(&((victim_t *)arg)->told_leader) > 0;
}

/* kind 0: a latch closed from another latch's listener; 1: a selector
 * closed from a latch's listener; 2: a latch closed from an observer. */
static void close_from_callback(int kind)
{
    char path[128], vpath[160];
    zkt_path("edges-cross", path, sizeof path);
    snprintf(vpath, sizeof vpath, "%s-victim", path);
    zkr_client_t *c = zkt_client(SESSION_MS);
    victim_t v;
    memset(&v, 0, sizeof v);
    if (kind == 1) {
        CU_ASSERT_EQUAL_FATAL(zkr_selector_new(&v.sel, c, vpath, "v", idle_take, NULL), ZKR_OK);
        CU_ASSERT_EQUAL(zkr_selector_set_listener(v.sel, on_victim_sel, &v), ZKR_OK);
        CU_ASSERT_EQUAL(zkr_selector_start(v.sel), ZKR_OK);
    } else {
        CU_ASSERT_EQUAL_FATAL(zkr_latch_new(&v.latch, c, vpath, "v"), ZKR_OK);
        CU_ASSERT_EQUAL(zkr_latch_set_listener(v.latch, on_victim, &v), ZKR_OK);
        CU_ASSERT_EQUAL(zkr_latch_start(v.latch), ZKR_OK);
    }
    CU_ASSERT_TRUE_FATAL(zkt_wait_for(victim_told, &v, WAIT_MS));
    zkr_latch_t *closer = NULL;
    zkr_observer_t *o = NULL;
    if (kind == 2) {
        CU_ASSERT_EQUAL(zkr_observer_new(&o, c, vpath, ZKR_ELECTION_LATCH, closer_observer, &v), ZKR_OK);
    } else {
        CU_ASSERT_EQUAL_FATAL(zkr_latch_new(&closer, c, path, "closer"), ZKR_OK);
        CU_ASSERT_EQUAL(zkr_latch_set_listener(closer, closer_listener, &v), ZKR_OK);
        CU_ASSERT_EQUAL(zkr_latch_start(closer), ZKR_OK);
    }
    int ok = zkt_wait_for(victim_closed, &v, WAIT_MS);
    CU_ASSERT_TRUE(ok);
    if (!ok)
        zkr_client_close(c); /* the client thread is stuck: its close frees it */
    CU_ASSERT_EQUAL(atomic_load(&v.rc), 1000 + ZKR_OK);
    CU_ASSERT_EQUAL(atomic_load(&v.told_not_leader), 1); /* told before close returned */
    zkr_observer_free(o);
    zkr_latch_free(closer);
    zkr_latch_free(v.latch);
    zkr_selector_free(v.sel);
    if (ok)
        zkr_client_close(c);
}

static void test_close_latch_from_listener(void)
{
    close_from_callback(0);
}

static void test_close_selector_from_listener(void)
{
    close_from_callback(1);
}

static void test_close_latch_from_observer(void)
{
    close_from_callback(2);
}

/* ---- asked about once its client has closed ---------------------------------------------- */

static void test_after_client_close(void)
{
    char path[128];
    zkt_path("edges-closed", path, sizeof path);
    zkr_client_t *c = zkt_client(SESSION_MS);
    zkr_latch_t *l;
    CU_ASSERT_EQUAL_FATAL(zkr_latch_new(&l, c, path, "l"), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_latch_start(l), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_latch_await(l, WAIT_MS), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_client_close(c), ZKR_OK);
    /* The session, and the leader's node with it, is gone: at once. */
    CU_ASSERT_EQUAL(zkr_latch_has_leadership(l), 0);
    CU_ASSERT_EQUAL(zkr_latch_await(l, 0), ZKR_ECLOSED);
    int64_t token = 0;
    CU_ASSERT_EQUAL(zkr_latch_fencing_token(l, &token), ZKR_ENOTLEADER);
    zkr_op_t op = ZKR_OP_CHECK_INIT("/zkr-test", -1);
    CU_ASSERT_EQUAL(zkr_latch_guarded_write(l, &op, 1), ZKR_ENOTLEADER);
    CU_ASSERT_EQUAL(zkr_latch_close(l, ZKR_LATCH_CLOSE_SILENT), ZKR_OK);
    zkr_latch_free(l);
}

/* ---- a guarded write too large for one request -------------------------------------------- */

static void on_state(zkr_client_t *c, zkr_state_t state, void *ctx)
{
    (void)c;
    if (state == ZKR_STATE_SUSPENDED)
        atomic_fetch_add((atomic_int *)ctx, 1);
}

static void test_guarded_write_too_large(void)
{
    char path[128], target[160];
    zkt_path("edges-large", path, sizeof path);
    snprintf(target, sizeof target, "%s-data", path);
    zkr_client_t *c = zkt_client(SESSION_MS);
    atomic_int suspended = 0;
    CU_ASSERT_EQUAL(zkr_client_add_listener(c, on_state, &suspended), ZKR_OK);
    zkr_latch_t *l;
    CU_ASSERT_EQUAL_FATAL(zkr_latch_new(&l, c, path, "l"), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_latch_start(l), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_latch_await(l, WAIT_MS), ZKR_OK);
    char *big = malloc(ZKR_DATA_MAX);
    CU_ASSERT_PTR_NOT_NULL_FATAL(big);
    memset(big, 'b', ZKR_DATA_MAX);
    /* Each write within ZKR_DATA_MAX, together over ZooKeeper's request
     * limit: refused here, or the server drops the connection (and the
     * leadership with it). */
    zkr_op_t ops[2] = {ZKR_OP_CREATE_INIT(target, big, ZKR_DATA_MAX, 0),
                       ZKR_OP_SET_INIT(target, big, ZKR_DATA_MAX, -1)};
    CU_ASSERT_EQUAL(zkr_latch_guarded_write(l, ops, 2), ZKR_EINVAL);
    zkr_ops_clear(ops, 2);
    /* The largest value allowed still goes through, in one request. */
    big[ZKR_LEADER_ID_MAX - 1] = '\0';
    CU_ASSERT_EQUAL(zkr_latch_proclaim(l, big), ZKR_OK);
    zkr_participant_t *ld = NULL;
    CU_ASSERT_EQUAL(zkr_election_leader(c, path, ZKR_ELECTION_LATCH, &ld), ZKR_OK);
    CU_ASSERT_EQUAL(ld ? ld->id_len : 0, ZKR_LEADER_ID_MAX - 1);
    zkr_participants_free(ld, 1);
    free(big);
    CU_ASSERT_TRUE(zkr_latch_has_leadership(l));
    CU_ASSERT_EQUAL(atomic_load(&suspended), 0);
    zkr_latch_free(l);
    zkr_client_close(c);
}

static void add_suites(void)
{
    CU_pSuite s = CU_add_suite("leader_edges", NULL, NULL);
    CU_add_test(s, "every call in the wrong order: the documented code", test_wrong_order);
    CU_add_test(s, "children made by something else: names and data untrusted", test_foreign_children);
    CU_add_test(s, "a latch closed from another latch's listener", test_close_latch_from_listener);
    CU_add_test(s, "a selector closed from a latch's listener", test_close_selector_from_listener);
    CU_add_test(s, "a latch closed from an observer", test_close_latch_from_observer);
    CU_add_test(s, "a latch once its client closed: not leader at once", test_after_client_close);
    CU_add_test(s, "a guarded write over the request limit: refused, the connection kept",
                test_guarded_write_too_large);
}

int main(void)
{
    return zkt_main("test_leader_edges", add_suites);
}

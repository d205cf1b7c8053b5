/* Group membership (zkr/group.h) on a real server: members of three
 * clients join, change their payloads and leave, and every member sees
 * it (events and zkr_group_members); a member whose session is lost
 * leaves and comes back, seen by the others; this member is always among
 * the members; the node's wire form (EPHEMERAL <path>/<id>, the payload
 * as data); a listener that frees its own group; bad input. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/harness/zkr_test.h"

#define SESSION_MS 6000
#define WAIT_MS 20000

/* ---- a listener that records every event ------------------------------------------------ */

typedef struct ev {
    zkr_group_event_type_t type;
    char id[64];
    char payload[64];
} ev_t;

typedef struct rec {
    pthread_mutex_t mu;
    ev_t ev[512];
    int n;
    zkr_group_t *group;
    atomic_int wrong_group;
    atomic_int free_own;
    atomic_int calls;
} rec_t;

static rec_t *rec_new(void)
{
    rec_t *r = calloc(1, sizeof *r);
    pthread_mutex_init(&r->mu, NULL);
    return r;
}

static void rec_free(rec_t *r)
{
    pthread_mutex_destroy(&r->mu);
    free(r);
}

static void on_event(zkr_group_t *g, const zkr_group_event_t *e, void *ctx)
{
    rec_t *r = ctx;
    atomic_fetch_add(&r->calls, 1);
    if (g != r->group)
        atomic_fetch_add(&r->wrong_group, 1);
    if (atomic_exchange(&r->free_own, 0))
        zkr_group_free(g); /* refused: logged, nothing done */
    pthread_mutex_lock(&r->mu);
    if (r->n < (int)(sizeof r->ev / sizeof r->ev[0])) {
        ev_t *v = &r->ev[r->n++];
        memset(v, 0, sizeof *v);
        v->type = e->type;
        if (e->member) {
            snprintf(v->id, sizeof v->id, "%s", e->member->id);
            snprintf(v->payload, sizeof v->payload, "%.*s", (int)e->member->payload_len, e->member->payload);
        }
    }
    pthread_mutex_unlock(&r->mu);
}

/* Events of type t (for id, payload; NULL: any), counted. */
static int count(rec_t *r, zkr_group_event_type_t t, const char *id, const char *payload)
{
    int n = 0;
    pthread_mutex_lock(&r->mu);
    for (int i = 0; i < r->n; i++)
        n += r->ev[i].type == t && (!id || strcmp(r->ev[i].id, id) == 0) &&
             (!payload || strcmp(r->ev[i].payload, payload) == 0);
    pthread_mutex_unlock(&r->mu);
    return n;
}

/* ---- the members as one line: "id=payload id=payload" ---------------------------------------- */

static void members_line(zkr_group_t *g, char *out, size_t len)
{
    zkr_group_member_t *m = NULL;
    size_t n = 0;
    out[0] = '\0';
    if (zkr_group_members(g, &m, &n) != ZKR_OK) {
        snprintf(out, len, "ERROR");
        return;
    }
    size_t k = 0;
    for (size_t i = 0; i < n && k < len; i++) {
        CU_ASSERT_EQUAL(strlen(m[i].payload), m[i].payload_len); /* NUL after it */
        k += (size_t)snprintf(out + k, len - k, "%s%s=%s", i ? " " : "", m[i].id, m[i].payload);
    }
    zkr_group_members_free(m, n);
}

typedef struct want {
    zkr_group_t *g;
    const char *line;
} want_t;

static int members_are(void *arg)
{
    want_t *w = arg;
    char line[512];
    members_line(w->g, line, sizeof line);
    return strcmp(line, w->line) == 0;
}

static int is_member(void *arg)
{
    return zkr_group_is_member(arg) == 1;
}

/* Every group's members become `line`. */
static int all_see(zkr_group_t **g, int n, const char *line)
{
    for (int i = 0; i < n; i++) {
        want_t w = {g[i], line};
        if (!zkt_wait_for(members_are, &w, WAIT_MS)) {
            char now[512];
            members_line(g[i], now, sizeof now);
            printf("\n    member %d sees \"%s\", not \"%s\"", i, now, line);
            return 0;
        }
    }
    return 1;
}

typedef struct wait_ev {
    rec_t *r;
    zkr_group_event_type_t t;
    const char *id, *payload;
    int n;
} wait_ev_t;

static int have(void *arg)
{
    wait_ev_t *w = arg;
    return count(w->r, w->t, w->id, w->payload) >= w->n;
}

static int wait_event(rec_t *r, zkr_group_event_type_t t, const char *id, const char *payload, int n)
{
    wait_ev_t w = {r, t, id, payload, n};
    return zkt_wait_for(have, &w, WAIT_MS);
}

static zkr_group_t *join(zkr_client_t *c, const char *path, const char *id, const char *payload, rec_t *r)
{
    zkr_group_t *g = NULL;
    CU_ASSERT_EQUAL_FATAL(zkr_group_new(&g, c, path, id, payload, strlen(payload), NULL), ZKR_OK);
    r->group = g;
    CU_ASSERT_EQUAL(zkr_group_set_listener(g, on_event, r), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_group_start(g), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_group_wait_initialized(g, WAIT_MS), ZKR_OK);
    return g;
}

/* ---- three members ------------------------------------------------------------------------ */

static void test_members(void)
{
    char path[128], node[200], buf[64];
    zkt_path("group", path, sizeof path); /* made by the first member (containers) */
    zhandle_t *zh = zkt_raw();
    zkr_client_t *c[3];
    rec_t *r[3];
    zkr_group_t *g[3];
    const char *ids[3] = {"a", "b", "c"};
    for (int i = 0; i < 3; i++) {
        c[i] = zkt_client(SESSION_MS);
        r[i] = rec_new();
        char payload[16];
        snprintf(payload, sizeof payload, "p-%s", ids[i]);
        g[i] = join(c[i], path, ids[i], payload, r[i]);
    }
    CU_ASSERT_TRUE(all_see(g, 3, "a=p-a b=p-b c=p-c"));
    for (int i = 0; i < 3; i++) {
        CU_ASSERT_EQUAL(zkr_group_is_member(g[i]), 1);
        /* the wire form: <path>/<id>, EPHEMERAL of its session, the payload */
        struct Stat st;
        snprintf(node, sizeof node, "%s/%s", path, ids[i]);
        int len = (int)sizeof buf - 1;
        CU_ASSERT_EQUAL(zoo_get(zh, node, 0, buf, &len, &st), ZOK);
        buf[len > 0 ? len : 0] = '\0';
        CU_ASSERT_EQUAL(strncmp(buf, "p-", 2), 0);
        int64_t s = 0;
        zkr_client_session(c[i], &s, NULL);
        CU_ASSERT_EQUAL(st.ephemeralOwner, s);
        /* told: each join (the first load's included), INITIALIZED */
        CU_ASSERT_TRUE(wait_event(r[i], ZKR_GROUP_JOINED, "c", "p-c", 1));
        CU_ASSERT_TRUE(wait_event(r[i], ZKR_GROUP_INITIALIZED, NULL, NULL, 1));
    }
    CU_ASSERT_EQUAL(zkt_count_children(zh, path), 3);
    /* a payload changes */
    CU_ASSERT_EQUAL(zkr_group_set_payload(g[1], "q-b", 3, WAIT_MS), ZKR_OK);
    CU_ASSERT_TRUE(all_see(g, 3, "a=p-a b=q-b c=p-c"));
    for (int i = 0; i < 3; i++)
        CU_ASSERT_TRUE(wait_event(r[i], ZKR_GROUP_CHANGED, "b", "q-b", 1));
    /* one leaves */
    zkr_group_free(g[2]);
    CU_ASSERT_TRUE(all_see(g, 2, "a=p-a b=q-b"));
    for (int i = 0; i < 2; i++)
        CU_ASSERT_TRUE(wait_event(r[i], ZKR_GROUP_LEFT, "c", "p-c", 1));
    CU_ASSERT_EQUAL(zkt_count_children(zh, path), 2);
    for (int i = 0; i < 2; i++) {
        CU_ASSERT_EQUAL(atomic_load(&r[i]->wrong_group), 0);
        zkr_group_free(g[i]);
    }
    CU_ASSERT_EQUAL(zkt_count_children(zh, path), 0);
    for (int i = 0; i < 3; i++) {
        zkr_client_close(c[i]);
        rec_free(r[i]);
    }
    zkt_raw_close(zh);
}

/* ---- a member's session lost -------------------------------------------------------------- */

static void test_expiry(void)
{
    char path[128];
    zkt_path("group-expiry", path, sizeof path);
    zkr_client_t *c[3];
    rec_t *r[3];
    zkr_group_t *g[3];
    const char *ids[3] = {"x", "y", "z"};
    for (int i = 0; i < 3; i++) {
        c[i] = zkt_client(SESSION_MS);
        r[i] = rec_new();
        g[i] = join(c[i], path, ids[i], ids[i], r[i]);
    }
    CU_ASSERT_TRUE(all_see(g, 3, "x=x y=y z=z"));
    CU_ASSERT_EQUAL(zkr_group_set_payload(g[1], "y2", 2, WAIT_MS), ZKR_OK);
    zkt_expire_client(c[1], SESSION_MS);
    /* the others see it leave and come back, with its payload */
    for (int i = 0; i < 3; i += 2) {
        CU_ASSERT_TRUE(wait_event(r[i], ZKR_GROUP_LEFT, "y", NULL, 1));
        CU_ASSERT_TRUE(wait_event(r[i], ZKR_GROUP_JOINED, "y", "y2", 1)); /* (first: "y", then CHANGED) */
        CU_ASSERT_TRUE(wait_event(r[i], ZKR_GROUP_JOINED, "y", NULL, 2));
    }
    CU_ASSERT_TRUE(all_see(g, 3, "x=x y=y2 z=z"));
    /* and y itself: its cache read everything again */
    CU_ASSERT_TRUE(wait_event(r[1], ZKR_GROUP_INITIALIZED, NULL, NULL, 2));
    CU_ASSERT_EQUAL(zkr_group_is_member(g[1]), 1);
    for (int i = 0; i < 3; i++) {
        zkr_group_free(g[i]);
        zkr_client_close(c[i]);
        rec_free(r[i]);
    }
}

/* ---- this member is always one -------------------------------------------------------------- */

static void test_self(void)
{
    char path[128], line[256];
    zkt_path("group-self", path, sizeof path);
    zkr_client_t *c = zkt_client(SESSION_MS);
    zkr_group_t *g = NULL;
    CU_ASSERT_EQUAL_FATAL(zkr_group_new(&g, c, path, "me", "mine", 4, NULL), ZKR_OK);
    /* not started: nothing read, nothing made; still a member to itself */
    members_line(g, line, sizeof line);
    CU_ASSERT_STRING_EQUAL(line, "me=mine");
    CU_ASSERT_EQUAL(zkr_group_is_member(g), 0);
    CU_ASSERT_EQUAL(zkr_group_wait_initialized(g, 0), ZKR_ESTATE);
    CU_ASSERT_EQUAL(zkr_group_set_payload(g, "new", 3, 0), ZKR_OK);
    members_line(g, line, sizeof line);
    CU_ASSERT_STRING_EQUAL(line, "me=new");
    /* another session holds our id: we wait, its payload is the member's */
    zhandle_t *other = zkt_raw();
    zoo_create(other, "/zkr-test", "", 0, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
    CU_ASSERT_EQUAL(zoo_create(other, path, "", 0, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0), ZOK);
    char node[200];
    snprintf(node, sizeof node, "%s/me", path);
    CU_ASSERT_EQUAL(zoo_create(other, node, "theirs", 6, &ZOO_OPEN_ACL_UNSAFE, ZOO_EPHEMERAL, NULL, 0), ZOK);
    CU_ASSERT_EQUAL(zkr_group_start(g), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_group_start(g), ZKR_ESTATE);
    CU_ASSERT_EQUAL(zkr_group_wait_initialized(g, WAIT_MS), ZKR_OK);
    members_line(g, line, sizeof line);
    CU_ASSERT_STRING_EQUAL(line, "me=theirs");
    zkt_sleep_ms(500);
    CU_ASSERT_EQUAL(zkr_group_is_member(g), 0);
    zkt_raw_close(other);
    want_t w = {g, "me=new"};
    CU_ASSERT_TRUE(zkt_wait_for(members_are, &w, WAIT_MS));
    /* the cache may see our node before the pnode has the create's answer */
    CU_ASSERT_TRUE(zkt_wait_for(is_member, g, WAIT_MS));
    zkr_group_free(g);
    zkr_client_close(c);
}

/* ---- the listener ---------------------------------------------------------------------------- */

static void test_free_from_listener(void)
{
    char path[128];
    zkt_path("group-listener", path, sizeof path);
    zkr_client_t *c = zkt_client(SESSION_MS);
    rec_t *r = rec_new();
    atomic_store(&r->free_own, 1);
    zkr_group_t *g = join(c, path, "m", "x", r);
    CU_ASSERT_TRUE(wait_event(r, ZKR_GROUP_INITIALIZED, NULL, NULL, 1));
    CU_ASSERT_EQUAL(atomic_load(&r->free_own), 0);
    CU_ASSERT_TRUE(zkt_wait_for((int (*)(void *))zkr_group_is_member, g, WAIT_MS)); /* still working */
    zkr_group_free(g);
    int calls = atomic_load(&r->calls);
    zkt_sleep_ms(300);
    CU_ASSERT_EQUAL(atomic_load(&r->calls), calls);
    zkr_client_close(c);
    rec_free(r);
}

/* ---- bad input -------------------------------------------------------------------------------- */

static void test_bad_input(void)
{
    zkr_client_t *c = zkt_client(SESSION_MS);
    zkr_group_t *g = (zkr_group_t *)1;
    zkr_group_options_t opt;
    zkr_group_options_init(&opt);
    CU_ASSERT_EQUAL(opt.size, sizeof opt);
    zkr_group_options_init(NULL);
    CU_ASSERT_EQUAL(zkr_group_new(NULL, c, "/g", "a", NULL, 0, NULL), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_group_new(&g, NULL, "/g", "a", NULL, 0, NULL), ZKR_EINVAL);
    CU_ASSERT_PTR_NULL(g);
    const char *bad_ids[] = {NULL, "", ".", "..", "a/b", "/a", "a/", "x\x01", "zookeeper/x"};
    for (size_t i = 0; i < sizeof bad_ids / sizeof bad_ids[0]; i++)
        CU_ASSERT_EQUAL(zkr_group_new(&g, c, "/g", bad_ids[i], NULL, 0, NULL), ZKR_EINVAL);
    const char *bad_paths[] = {NULL, "", "g", "/", "/g/", "/zookeeper", "/zookeeper/g", "/g/../h"};
    for (size_t i = 0; i < sizeof bad_paths / sizeof bad_paths[0]; i++)
        CU_ASSERT_EQUAL(zkr_group_new(&g, c, bad_paths[i], "a", NULL, 0, NULL), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_group_new(&g, c, "/g", "a", NULL, 1, NULL), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_group_new(&g, c, "/g", "a", "x", (size_t)ZKR_DATA_MAX + 1, NULL), ZKR_EINVAL);
    opt.size = sizeof opt + 1;
    CU_ASSERT_EQUAL(zkr_group_new(&g, c, "/g", "a", NULL, 0, &opt), ZKR_EINVAL);
    opt.size = 1;
    CU_ASSERT_EQUAL(zkr_group_new(&g, c, "/g", "a", NULL, 0, &opt), ZKR_EINVAL);
    CU_ASSERT_PTR_NULL(g);
    CU_ASSERT_EQUAL(zkr_group_set_listener(NULL, on_event, NULL), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_group_start(NULL), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_group_wait_initialized(NULL, 0), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_group_is_member(NULL), 0);
    CU_ASSERT_EQUAL(zkr_group_set_payload(NULL, "x", 1, 0), ZKR_EINVAL);
    zkr_group_member_t *m = (zkr_group_member_t *)1;
    size_t n = 7;
    CU_ASSERT_EQUAL(zkr_group_members(NULL, &m, &n), ZKR_EINVAL);
    CU_ASSERT_PTR_NULL(m);
    CU_ASSERT_EQUAL(n, 0);
    zkr_group_members_free(NULL, 3);
    zkr_group_free(NULL);
    CU_ASSERT_STRING_EQUAL(zkr_group_event_name(ZKR_GROUP_JOINED), "JOINED");
    CU_ASSERT_STRING_EQUAL(zkr_group_event_name(ZKR_GROUP_CHANGED), "CHANGED");
    CU_ASSERT_STRING_EQUAL(zkr_group_event_name(ZKR_GROUP_LEFT), "LEFT");
    CU_ASSERT_STRING_EQUAL(zkr_group_event_name(ZKR_GROUP_INITIALIZED), "INITIALIZED");
    CU_ASSERT_STRING_EQUAL(zkr_group_event_name((zkr_group_event_type_t)9), "UNKNOWN");
    /* a good one: its other calls */
    CU_ASSERT_EQUAL_FATAL(zkr_group_new(&g, c, "/g", "a.b-c_d", NULL, 0, NULL), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_group_members(g, NULL, &n), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_group_members(g, &m, NULL), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_group_set_payload(g, NULL, 2, 0), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_group_members(g, &m, &n), ZKR_OK);
    CU_ASSERT_EQUAL_FATAL(n, 1);
    CU_ASSERT_STRING_EQUAL(m[0].id, "a.b-c_d");
    CU_ASSERT_EQUAL(m[0].payload_len, 0);
    CU_ASSERT_STRING_EQUAL(m[0].payload, "");
    zkr_group_members_free(m, n);
    zkr_group_free(g);
    zkr_client_close(c);
}

static void add_suites(void)
{
    CU_pSuite s = CU_add_suite("group", NULL, NULL);
    CU_add_test(s, "three members: joins, a payload change and a leave seen by all; the wire form", test_members);
    CU_add_test(s, "a member's session lost: it leaves and comes back, seen by the others", test_expiry);
    CU_add_test(s, "this member is always one; another session's node with our id is waited for", test_self);
    CU_add_test(s, "a listener that frees its own group is refused; nothing told after free",
                test_free_from_listener);
    CU_add_test(s, "bad input and NULL: the documented codes", test_bad_input);
}

int main(void)
{
    return zkt_main("test_group", add_suites);
}

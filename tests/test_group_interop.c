/* zkr_group_t and Apache Curator 5.4's GroupMember (Debian's jars, driven
 * through tests/interop/GroupPeer.java) in one group: each side sees the
 * other's members with their payloads (an empty one included), payload
 * changes on either side, a member leaving on either side, a Curator
 * member's session ended from outside (it leaves and Curator makes it
 * again); and both write the same node: <path>/<id>, EPHEMERAL, the
 * payload as data, no protected name.  And zkr_pnode_t beside Curator's
 * PersistentNode: the same protected sequential names, made again under
 * the same name (uuid and number); ours waits while Curator's ephemeral
 * node holds its path. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/harness/zkr_test.h"
#include "tests/interop/jpeer.h"

#define SESSION_MS 10000
#define WAIT_MS 30000

static int suite_init(void)
{
    jpeer_java = jpeer_start("GroupPeer");
    return jpeer_java ? 0 : 1;
}

static int suite_clean(void)
{
    jpeer_stop(jpeer_java);
    jpeer_java = NULL;
    return 0;
}

/* "MEMBERS id=payload ..." as GroupPeer prints it ("-": none). */
static void c_line(zkr_group_t *g, char *out, size_t len)
{
    zkr_group_member_t *m = NULL;
    size_t n = 0;
    if (zkr_group_members(g, &m, &n) != ZKR_OK) {
        snprintf(out, len, "ERROR");
        return;
    }
    size_t k = (size_t)snprintf(out, len, "MEMBERS%s", n ? "" : " -");
    for (size_t i = 0; i < n && k < len; i++)
        k += (size_t)snprintf(out + k, len - k, " %s=%.*s", m[i].id, (int)m[i].payload_len, m[i].payload);
    zkr_group_members_free(m, n);
}

typedef struct want {
    zkr_group_t *g;  /* a C member, or NULL: */
    const char *java; /* the Java member's name */
    const char *line;
} want_t;

static int sees(void *arg)
{
    want_t *w = arg;
    char line[1024];
    if (w->g) {
        c_line(w->g, line, sizeof line);
    } else {
        char *r = jcmd("members %s", w->java);
        snprintf(line, sizeof line, "%s", r ? r : "");
        free(r);
    }
    return strcmp(line, w->line) == 0;
}

static int wait_sees(zkr_group_t *g, const char *java, const char *line)
{
    want_t w = {g, java, line};
    if (zkt_wait_for(sees, &w, WAIT_MS))
        return 1;
    char now[1024];
    if (g) {
        c_line(g, now, sizeof now);
    } else {
        char *r = jcmd("members %s", java);
        snprintf(now, sizeof now, "%s", r ? r : "");
        free(r);
    }
    printf("\n    %s %s sees \"%s\", not \"%s\"", g ? "C" : "Curator", g ? "member" : java, now, line);
    return 0;
}

/* Counts of the events told to a C member, per type. */
typedef struct counts {
    pthread_mutex_t mu;
    int joined, changed, left;
    char last[128]; /* the last event: "TYPE id=payload" */
} counts_t;

static void on_event(zkr_group_t *g, const zkr_group_event_t *e, void *ctx)
{
    (void)g;
    counts_t *k = ctx;
    pthread_mutex_lock(&k->mu);
    k->joined += e->type == ZKR_GROUP_JOINED;
    k->changed += e->type == ZKR_GROUP_CHANGED;
    k->left += e->type == ZKR_GROUP_LEFT;
    if (e->member)
        snprintf(k->last, sizeof k->last, "%s %s=%.*s", zkr_group_event_name(e->type), e->member->id,
                 (int)e->member->payload_len, e->member->payload);
    pthread_mutex_unlock(&k->mu);
}

static zkr_group_t *c_join(zkr_client_t *c, const char *path, const char *id, const char *payload, counts_t *k)
{
    zkr_group_t *g = NULL;
    CU_ASSERT_EQUAL_FATAL(zkr_group_new(&g, c, path, id, payload, strlen(payload), NULL), ZKR_OK);
    if (k) {
        CU_ASSERT_EQUAL(zkr_group_set_listener(g, on_event, k), ZKR_OK);
    }
    CU_ASSERT_EQUAL(zkr_group_start(g), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_group_wait_initialized(g, WAIT_MS), ZKR_OK);
    return g;
}

/* The node of member id: EPHEMERAL of `owner` (0: any but 0), data
 * `payload`. */
static void check_node(zhandle_t *zh, const char *path, const char *id, const char *payload, int64_t owner)
{
    char node[256], buf[128];
    snprintf(node, sizeof node, "%s/%s", path, id);
    struct Stat st;
    int len = (int)sizeof buf - 1;
    CU_ASSERT_EQUAL_FATAL(zoo_get(zh, node, 0, buf, &len, &st), ZOK);
    buf[len > 0 ? len : 0] = '\0';
    CU_ASSERT_STRING_EQUAL(buf, payload);
    if (owner) {
        CU_ASSERT_EQUAL(st.ephemeralOwner, owner);
    } else {
        CU_ASSERT_NOT_EQUAL(st.ephemeralOwner, 0);
    }
}

/* ---- one group, both kinds of member ----------------------------------------------------------- */

static void test_mixed(void)
{
    char path[128];
    zkt_path("group-interop", path, sizeof path);
    zhandle_t *zh = zkt_raw();
    zkr_client_t *c1 = zkt_client(SESSION_MS), *c2 = zkt_client(SESSION_MS);
    counts_t k = {.mu = PTHREAD_MUTEX_INITIALIZER};
    /* Curator first (it makes the path), then C, then Curator again */
    CU_ASSERT_TRUE(jis("OK", "join j1 %s java-1 jp1", path));
    zkr_group_t *g1 = c_join(c1, path, "c-1", "cp1", &k);
    zkr_group_t *g2 = c_join(c2, path, "c-2", "", NULL); /* an empty payload */
    CU_ASSERT_TRUE(jis("OK", "join j2 %s java-2 -", path));
    const char *all = "MEMBERS c-1=cp1 c-2= java-1=jp1 java-2=";
    CU_ASSERT_TRUE(wait_sees(g1, NULL, all));
    CU_ASSERT_TRUE(wait_sees(g2, NULL, all));
    CU_ASSERT_TRUE(wait_sees(NULL, "j1", all));
    CU_ASSERT_TRUE(wait_sees(NULL, "j2", all));
    /* the same node on the wire, either side */
    int64_t s1 = 0;
    zkr_client_session(c1, &s1, NULL);
    check_node(zh, path, "c-1", "cp1", s1);
    check_node(zh, path, "java-1", "jp1", 0);
    CU_ASSERT_EQUAL(zkt_count_children(zh, path), 4); /* no other node: no protected names */
    /* payloads change on either side */
    CU_ASSERT_EQUAL(zkr_group_set_payload(g1, "cp1b", 4, WAIT_MS), ZKR_OK);
    CU_ASSERT_TRUE(jis("OK", "set j1 jp1b"));
    all = "MEMBERS c-1=cp1b c-2= java-1=jp1b java-2=";
    CU_ASSERT_TRUE(wait_sees(g2, NULL, all));
    CU_ASSERT_TRUE(wait_sees(NULL, "j2", all));
    pthread_mutex_lock(&k.mu);
    CU_ASSERT_TRUE(k.changed >= 2); /* ours, and Curator's */
    pthread_mutex_unlock(&k.mu);
    /* a Curator member leaves; then a C member */
    CU_ASSERT_TRUE(jis("OK", "leave j2"));
    all = "MEMBERS c-1=cp1b c-2= java-1=jp1b";
    CU_ASSERT_TRUE(wait_sees(g1, NULL, all));
    CU_ASSERT_TRUE(wait_sees(NULL, "j1", all));
    pthread_mutex_lock(&k.mu);
    CU_ASSERT_EQUAL(k.left, 1);
    CU_ASSERT_STRING_EQUAL(k.last, "LEFT java-2=");
    pthread_mutex_unlock(&k.mu);
    zkr_group_free(g2);
    all = "MEMBERS c-1=cp1b java-1=jp1b";
    CU_ASSERT_TRUE(wait_sees(g1, NULL, all));
    CU_ASSERT_TRUE(wait_sees(NULL, "j1", all));
    /* a Curator member's session ended from outside: it leaves, and
     * Curator makes it again; C sees both */
    pthread_mutex_lock(&k.mu);
    int left = k.left, joined = k.joined;
    pthread_mutex_unlock(&k.mu);
    CU_ASSERT_TRUE(jis("OK", "expire j1"));
    CU_ASSERT_TRUE(wait_sees(g1, NULL, all));
    int64_t t0 = zkt_now_ms();
    int back = 0;
    while (!back && zkt_now_ms() - t0 < WAIT_MS) {
        pthread_mutex_lock(&k.mu);
        back = k.left > left && k.joined > joined;
        pthread_mutex_unlock(&k.mu);
        if (!back)
            zkt_sleep_ms(50);
    }
    CU_ASSERT_TRUE(back);
    CU_ASSERT_TRUE(wait_sees(g1, NULL, all));
    /* the last ones leave */
    zkr_group_free(g1);
    CU_ASSERT_TRUE(wait_sees(NULL, "j1", "MEMBERS java-1=jp1b"));
    CU_ASSERT_TRUE(jis("OK", "leave j1"));
    CU_ASSERT_EQUAL(zkt_count_children(zh, path), 0);
    zkr_client_close(c1);
    zkr_client_close(c2);
    zkt_raw_close(zh);
}

/* A C member's session lost: its node made again on the new session,
 * with its payload, and Curator sees it. */
typedef struct owned {
    zhandle_t *zh;
    const char *node;
    zkr_client_t *c;
} owned_t;

static int owned_by_current(void *arg)
{
    owned_t *o = arg;
    struct Stat st;
    int64_t s = 0;
    return zkr_client_session(o->c, &s, NULL) == ZKR_OK && zoo_exists(o->zh, o->node, 0, &st) == ZOK &&
           st.ephemeralOwner == s;
}

static void test_c_expiry(void)
{
    char path[128], node[200];
    zkt_path("group-interop-exp", path, sizeof path);
    snprintf(node, sizeof node, "%s/c", path);
    zhandle_t *zh = zkt_raw();
    zkr_client_t *c = zkt_client(SESSION_MS);
    zkr_group_t *g = c_join(c, path, "c", "cp", NULL);
    CU_ASSERT_TRUE(jis("OK", "join j %s j jp", path));
    const char *all = "MEMBERS c=cp j=jp";
    CU_ASSERT_TRUE(wait_sees(NULL, "j", all));
    struct Stat st0, st;
    CU_ASSERT_EQUAL(zoo_exists(zh, node, 0, &st0), ZOK);
    zkt_expire_client(c, SESSION_MS);
    owned_t o = {zh, node, c};
    CU_ASSERT_TRUE(zkt_wait_for(owned_by_current, &o, WAIT_MS));
    CU_ASSERT_EQUAL(zoo_exists(zh, node, 0, &st), ZOK);
    CU_ASSERT_NOT_EQUAL(st.czxid, st0.czxid);
    CU_ASSERT_TRUE(zkt_wait_for((int (*)(void *))zkr_group_is_member, g, WAIT_MS));
    CU_ASSERT_TRUE(wait_sees(NULL, "j", all));
    CU_ASSERT_TRUE(wait_sees(g, NULL, all));
    zkr_group_free(g);
    CU_ASSERT_TRUE(wait_sees(NULL, "j", "MEMBERS j=jp"));
    CU_ASSERT_TRUE(jis("OK", "leave j"));
    zkr_client_close(c);
    zkt_raw_close(zh);
}

/* ---- Curator's PersistentNode and ours: the same names, the same rules --------------------------- */

/* The Java pnode's path now ("" if none). */
static void java_pnode_path(const char *name, char *out, size_t len)
{
    char *r = jcmd("pnodepath %s", name);
    snprintf(out, len, "%s", r && strncmp(r, "PATH ", 5) == 0 ? r + 5 : "");
    free(r);
}

typedef struct remade {
    zhandle_t *zh;
    const char *java; /* the Java pnode's name, or NULL: */
    zkr_pnode_t *n;
    int64_t old_czxid;
    char now[256];
} remade_t;

static int is_remade(void *arg)
{
    remade_t *m = arg;
    if (m->java) {
        java_pnode_path(m->java, m->now, sizeof m->now);
    } else {
        char *p = NULL;
        m->now[0] = '\0';
        if (zkr_pnode_node_path(m->n, &p) == ZKR_OK)
            snprintf(m->now, sizeof m->now, "%s", p);
        zkr_free(p);
    }
    struct Stat st;
    return m->now[0] && zoo_exists(m->zh, m->now, 0, &st) == ZOK && st.czxid != m->old_czxid;
}

/* A sequential mode, on each side: _c_<uuid>-<name><seq>; deleted, it is
 * made again under the same name (the same uuid and number: Curator 5.4
 * keeps its create builder's protected id), ours too. */
static void one_seq_mode(zhandle_t *zh, zkr_client_t *c, const char *dir, zkr_pnode_mode_t mode, const char *jmode)
{
    char path[200];
    snprintf(path, sizeof path, "%s/inst", dir);
    CU_ASSERT_TRUE_FATAL(jis("OK", "pnode jp %s %s jdata", path, jmode));
    zkr_pnode_options_t opt;
    zkr_pnode_options_init(&opt);
    opt.mode = mode;
    zkr_pnode_t *n = NULL;
    CU_ASSERT_EQUAL_FATAL(zkr_pnode_new(&n, c, path, "cdata", 5, &opt), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_pnode_start(n), ZKR_OK);
    CU_ASSERT_EQUAL_FATAL(zkr_pnode_wait_created(n, WAIT_MS), ZKR_OK);
    char jpath[256], cpath[256];
    java_pnode_path("jp", jpath, sizeof jpath);
    char *p = NULL;
    CU_ASSERT_EQUAL(zkr_pnode_node_path(n, &p), ZKR_OK);
    snprintf(cpath, sizeof cpath, "%s", p ? p : "");
    zkr_free(p);
    size_t dl = strlen(dir) + 1;
    CU_ASSERT_TRUE(strlen(jpath) > dl && jpeer_curator_name(jpath + dl, "inst"));
    CU_ASSERT_TRUE(strlen(cpath) > dl && jpeer_curator_name(cpath + dl, "inst"));
    for (int side = 0; side < 2; side++) {
        const char *old = side ? cpath : jpath;
        struct Stat st;
        CU_ASSERT_EQUAL(zoo_exists(zh, old, 0, &st), ZOK);
        CU_ASSERT_EQUAL(zoo_delete(zh, old, -1), ZOK);
        remade_t m = {zh, side ? NULL : "jp", n, st.czxid, ""};
        CU_ASSERT_TRUE(zkt_wait_for(is_remade, &m, WAIT_MS));
        printf("\n    %s %s: %s deleted, made again as %s", side ? "C" : "Curator", jmode, old + dl, m.now + dl);
        CU_ASSERT_STRING_EQUAL(m.now, old);
        char buf[16];
        int len = (int)sizeof buf - 1;
        CU_ASSERT_EQUAL(zoo_get(zh, m.now, 0, buf, &len, NULL), ZOK);
        buf[len > 0 ? len : 0] = '\0';
        CU_ASSERT_STRING_EQUAL(buf, side ? "cdata" : "jdata");
    }
    CU_ASSERT_TRUE(jis("OK", "closepnode jp"));
    zkr_pnode_free(n);
    CU_ASSERT_TRUE(zkt_wait_children(zh, dir, 0, WAIT_MS));
}

static void test_pnode_names(void)
{
    char dir[128], path[200];
    zkt_path("pnode-interop", dir, sizeof dir);
    zhandle_t *zh = zkt_raw();
    zkr_client_t *c = zkt_client(SESSION_MS);
    one_seq_mode(zh, c, dir, ZKR_PNODE_EPHEMERAL_SEQUENTIAL, "EPHEMERAL_SEQUENTIAL");
    one_seq_mode(zh, c, dir, ZKR_PNODE_PERSISTENT_SEQUENTIAL, "PERSISTENT_SEQUENTIAL");
    /* Curator's ephemeral node at our path: ours waits, and is made when
     * Curator's goes */
    snprintf(path, sizeof path, "%s/plain", dir);
    CU_ASSERT_TRUE_FATAL(jis("OK", "pnode jp %s EPHEMERAL jdata", path));
    zkr_pnode_t *n = NULL;
    CU_ASSERT_EQUAL_FATAL(zkr_pnode_new(&n, c, path, "cdata", 5, NULL), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_pnode_start(n), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_pnode_wait_created(n, 1500), ZKR_ETIMEDOUT);
    char buf[16];
    int len = (int)sizeof buf - 1;
    CU_ASSERT_EQUAL(zoo_get(zh, path, 0, buf, &len, NULL), ZOK);
    buf[len > 0 ? len : 0] = '\0';
    CU_ASSERT_STRING_EQUAL(buf, "jdata");
    CU_ASSERT_TRUE(jis("OK", "closepnode jp"));
    CU_ASSERT_EQUAL(zkr_pnode_wait_created(n, WAIT_MS), ZKR_OK);
    len = (int)sizeof buf - 1;
    CU_ASSERT_EQUAL(zoo_get(zh, path, 0, buf, &len, NULL), ZOK);
    buf[len > 0 ? len : 0] = '\0';
    CU_ASSERT_STRING_EQUAL(buf, "cdata");
    zkr_pnode_free(n);
    zkr_client_close(c);
    zkt_raw_close(zh);
}

static void add_suites(void)
{
    CU_pSuite s = CU_add_suite("group interop", suite_init, suite_clean);
    CU_add_test(s, "C and Curator members in one group: members, payloads, leaves, a Curator session ended",
                test_mixed);
    CU_add_test(s, "a C member's session lost: Curator sees it come back", test_c_expiry);
    CU_add_test(s, "Curator's PersistentNode and zkr_pnode_t: protected sequential names, made again under the "
                   "same name; ours waits for Curator's ephemeral node",
                test_pnode_names);
}

int main(void)
{
    return zkt_main("test_group_interop", add_suites);
}

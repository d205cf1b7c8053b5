/* The cache (zkr/cache.h) on a real server: the three shapes, the event
 * rules (czxid/mzxid decide; a delete and create again is DELETED then
 * CREATED even with the same data and version; children before parents on
 * a deletion; never an event out of order for one node), the reads, the
 * depth limit and the filter, the watch budget, a lost session's full
 * reload, random writers against the final tree, and bad input. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/harness/zkr_test.h"

#define SESSION_MS 6000
#define WAIT_MS 15000

/* ---- a listener that records every event ------------------------------------------------ */

typedef struct ev {
    zkr_cache_event_type_t type;
    char path[256];
    char data[64];
    int64_t czxid, mzxid;
} ev_t;

typedef struct rec {
    pthread_mutex_t mu;
    ev_t ev[4096];
    int n;
    atomic_int initialized;
    atomic_int wrong_cache; /* told another cache */
    zkr_cache_t *cache;
    atomic_int free_own;    /* free its own cache from the listener once */
} rec_t;

static void rec_init(rec_t *r)
{
    memset(r, 0, sizeof *r);
    pthread_mutex_init(&r->mu, NULL);
}

static void on_event(zkr_cache_t *cache, const zkr_cache_event_t *e, void *ctx)
{
    rec_t *r = ctx;
    if (cache != r->cache)
        atomic_fetch_add(&r->wrong_cache, 1);
    if (atomic_exchange(&r->free_own, 0))
        zkr_cache_free(cache); /* refused: logged, nothing done */
    if (e->type == ZKR_CACHE_INITIALIZED)
        atomic_fetch_add(&r->initialized, 1);
    if (e->type == ZKR_CACHE_STATE)
        return;
    pthread_mutex_lock(&r->mu);
    if (r->n < (int)(sizeof r->ev / sizeof r->ev[0])) {
        ev_t *v = &r->ev[r->n++];
        memset(v, 0, sizeof *v);
        v->type = e->type;
        if (e->node) {
            snprintf(v->path, sizeof v->path, "%s", e->node->path);
            if (e->node->data)
                snprintf(v->data, sizeof v->data, "%s", e->node->data);
            v->czxid = e->node->stat.czxid;
            v->mzxid = e->node->stat.mzxid;
        }
    }
    pthread_mutex_unlock(&r->mu);
}

/* Events of type t for path, counted. */
static int count(rec_t *r, zkr_cache_event_type_t t, const char *path)
{
    int n = 0;
    pthread_mutex_lock(&r->mu);
    for (int i = 0; i < r->n; i++)
        if (r->ev[i].type == t && (!path || strcmp(r->ev[i].path, path) == 0))
            n++;
    pthread_mutex_unlock(&r->mu);
    return n;
}

typedef struct wait_ev {
    rec_t *r;
    zkr_cache_event_type_t t;
    const char *path;
    int n;
} wait_ev_t;

static int have(void *arg)
{
    wait_ev_t *w = arg;
    return count(w->r, w->t, w->path) >= w->n;
}

static int wait_events(rec_t *r, zkr_cache_event_type_t t, const char *path, int n)
{
    wait_ev_t w = {r, t, path, n};
    return zkt_wait_for(have, &w, WAIT_MS);
}

/* Every node's events valid: CREATED first, then CHANGED (mzxid growing)
 * and one DELETED, CREATED again only after it; returns the bad ones. */
static int bad_sequences(rec_t *r)
{
    int bad = 0;
    pthread_mutex_lock(&r->mu);
    for (int i = 0; i < r->n; i++) {
        if (!r->ev[i].path[0])
            continue;
        int seen = 0;
        for (int j = 0; j < i; j++)
            if (strcmp(r->ev[j].path, r->ev[i].path) == 0)
                seen = 1;
        if (seen)
            continue; /* checked from its first event */
        int live = 0;
        int64_t mz = 0, cz = 0;
        for (int j = i; j < r->n; j++) {
            ev_t *v = &r->ev[j];
            if (strcmp(v->path, r->ev[i].path) != 0)
                continue;
            if (v->type == ZKR_CACHE_CREATED) {
                bad += live || v->czxid <= cz;
                live = 1;
                cz = v->czxid;
                mz = v->mzxid;
            } else if (v->type == ZKR_CACHE_CHANGED) {
                bad += !live || v->mzxid <= mz;
                mz = v->mzxid;
            } else if (v->type == ZKR_CACHE_DELETED) {
                bad += !live;
                live = 0;
            }
        }
    }
    pthread_mutex_unlock(&r->mu);
    return bad;
}

/* ---- the server's tree against the copy -------------------------------------------------- */

typedef struct flat {
    char path[64][160];
    int64_t mzxid[64];
    char data[64][64];
    int n;
} flat_t;

static void server_tree(zhandle_t *zh, const char *path, int depth, int max_depth, flat_t *f)
{
    char buf[64];
    int len = (int)sizeof buf - 1;
    struct Stat st;
    if (zoo_get(zh, path, 0, buf, &len, &st) != ZOK || f->n >= 64)
        return;
    buf[len < 0 ? 0 : len] = '\0';
    snprintf(f->path[f->n], sizeof f->path[0], "%s", path);
    snprintf(f->data[f->n], sizeof f->data[0], "%s", buf);
    f->mzxid[f->n++] = st.mzxid;
    if (max_depth >= 0 && depth >= max_depth)
        return;
    struct String_vector sv = {0, NULL};
    if (zoo_get_children(zh, path, 0, &sv) != ZOK)
        return;
    /* in name order, as the walk goes */
    for (int i = 0; i < sv.count; i++)
        for (int j = i + 1; j < sv.count; j++)
            if (strcmp(sv.data[j], sv.data[i]) < 0) {
                char *t = sv.data[i];
                sv.data[i] = sv.data[j];
                sv.data[j] = t;
            }
    for (int i = 0; i < sv.count; i++) {
        char kid[160];
        snprintf(kid, sizeof kid, "%s/%s", path, sv.data[i]);
        server_tree(zh, kid, depth + 1, max_depth, f);
    }
    deallocate_String_vector(&sv);
}

static int add_flat(const zkr_cache_node_t *n, int depth, void *ctx)
{
    (void)depth;
    flat_t *f = ctx;
    if (f->n >= 64)
        return 1;
    snprintf(f->path[f->n], sizeof f->path[0], "%s", n->path);
    snprintf(f->data[f->n], sizeof f->data[0], "%s", n->data ? n->data : "");
    f->mzxid[f->n++] = n->stat.mzxid;
    return 0;
}

typedef struct same {
    zkr_cache_t *k;
    zhandle_t *zh;
    const char *path;
    int max_depth;
} same_t;

static int same_tree(void *arg)
{
    same_t *s = arg;
    static flat_t a, b;
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    server_tree(s->zh, s->path, 0, s->max_depth, &a);
    int rc = zkr_cache_walk(s->k, NULL, add_flat, &b);
    if (rc == ZKR_ENONODE && a.n == 0)
        return 1;
    if (rc != ZKR_OK || a.n != b.n)
        return 0;
    for (int i = 0; i < a.n; i++)
        if (strcmp(a.path[i], b.path[i]) != 0 || a.mzxid[i] != b.mzxid[i] || strcmp(a.data[i], b.data[i]) != 0)
            return 0;
    return 1;
}

static zkr_cache_t *new_cache(zkr_client_t *c, const char *path, zkr_cache_shape_t shape, int max_depth, int data,
                              rec_t *r)
{
    zkr_cache_options_t opt;
    zkr_cache_options_init(&opt);
    opt.shape = shape;
    opt.max_depth = max_depth;
    opt.data = data;
    zkr_cache_t *k = NULL;
    CU_ASSERT_EQUAL_FATAL(zkr_cache_new(&k, c, path, &opt), ZKR_OK);
    r->cache = k;
    CU_ASSERT_EQUAL(zkr_cache_set_listener(k, on_event, r), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_cache_start(k), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_cache_wait_initialized(k, WAIT_MS), ZKR_OK);
    /* the first load's events are queued by then, maybe not all told yet */
    CU_ASSERT_TRUE(wait_events(r, ZKR_CACHE_INITIALIZED, NULL, 1));
    return k;
}

static void mk(zhandle_t *zh, const char *path, const char *data)
{
    CU_ASSERT_EQUAL(zoo_create(zh, path, data, (int)strlen(data), &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0), ZOK);
}

static void base(const char *name, char *path, size_t len, zhandle_t *zh)
{
    zkt_path(name, path, len);
    zoo_create(zh, "/zkr-test", "", 0, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0); /* may exist */
}

/* ---- one node ------------------------------------------------------------------------------ */

static void test_node(void)
{
    char path[128];
    zhandle_t *zh = zkt_raw();
    base("cache-node", path, sizeof path, zh);
    zkr_client_t *c = zkt_client(SESSION_MS);
    rec_t *r = calloc(1, sizeof *r);
    rec_init(r);
    zkr_cache_t *k = new_cache(c, path, ZKR_CACHE_NODE, -1, 1, r);
    /* missing: initialized, empty */
    CU_ASSERT_TRUE(wait_events(r, ZKR_CACHE_INITIALIZED, NULL, 1));
    CU_ASSERT_EQUAL(zkr_cache_size(k), 0);
    zkr_cache_node_t *got = (zkr_cache_node_t *)1;
    CU_ASSERT_EQUAL(zkr_cache_get(k, path, &got), ZKR_ENONODE);
    CU_ASSERT_PTR_NULL(got);
    CU_ASSERT_EQUAL(zkr_cache_is_fresh(k), 1);

    mk(zh, path, "a");
    CU_ASSERT_TRUE(wait_events(r, ZKR_CACHE_CREATED, path, 1));
    CU_ASSERT_EQUAL(zkr_cache_get(k, path, &got), ZKR_OK);
    CU_ASSERT_TRUE(got && got->data_len == 1 && strcmp(got->data, "a") == 0);
    zkr_cache_node_free(got);
    CU_ASSERT_EQUAL(zoo_set(zh, path, "b", 1, -1), ZOK);
    CU_ASSERT_TRUE(wait_events(r, ZKR_CACHE_CHANGED, path, 1));

    /* deleted and created again in one transaction: the same data, the
     * same version 0 -> DELETED then CREATED (czxid), not "nothing" */
    CU_ASSERT_EQUAL(zoo_set(zh, path, "x", 1, -1), ZOK);
    CU_ASSERT_TRUE(wait_events(r, ZKR_CACHE_CHANGED, path, 2));
    CU_ASSERT_EQUAL(zoo_delete(zh, path, -1), ZOK);
    mk(zh, path, "x");
    CU_ASSERT_TRUE(wait_events(r, ZKR_CACHE_DELETED, path, 1));
    CU_ASSERT_TRUE(wait_events(r, ZKR_CACHE_CREATED, path, 2));
    zoo_op_t ops[2];
    zoo_op_result_t res[2];
    zoo_delete_op_init(&ops[0], path, -1);
    zoo_create_op_init(&ops[1], path, "x", 1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
    CU_ASSERT_EQUAL(zoo_multi(zh, 2, ops, res), ZOK);
    CU_ASSERT_TRUE(wait_events(r, ZKR_CACHE_CREATED, path, 3));
    CU_ASSERT_EQUAL(count(r, ZKR_CACHE_DELETED, path), 2);
    CU_ASSERT_EQUAL(zoo_delete(zh, path, -1), ZOK);
    CU_ASSERT_TRUE(wait_events(r, ZKR_CACHE_DELETED, path, 3));
    zkt_sleep_ms(200);
    CU_ASSERT_EQUAL(count(r, ZKR_CACHE_CREATED, path), 3);
    CU_ASSERT_EQUAL(count(r, ZKR_CACHE_CHANGED, path), 2);
    CU_ASSERT_EQUAL(bad_sequences(r), 0);
    CU_ASSERT_EQUAL(atomic_load(&r->wrong_cache), 0);
    zkr_cache_free(k);
    zkr_client_close(c);
    zkt_raw_close(zh);
    free(r);
}

typedef struct gone {
    zkr_cache_t *k;
    const char *path;
} gone_t;

static int path_gone(void *arg)
{
    gone_t *g = arg;
    char **names = NULL;
    size_t n = 0;
    int rc = zkr_cache_children(g->k, g->path, &names, &n);
    zkr_strings_free(names, n);
    return rc == ZKR_ENONODE;
}

/* ---- the children of one node -------------------------------------------------------------- */

static void test_children(void)
{
    char path[128], p[200];
    zhandle_t *zh = zkt_raw();
    base("cache-kids", path, sizeof path, zh);
    mk(zh, path, "parent");
    snprintf(p, sizeof p, "%s/b", path);
    mk(zh, p, "B");
    snprintf(p, sizeof p, "%s/a", path);
    mk(zh, p, "A");
    snprintf(p, sizeof p, "%s/a/deep", path);
    mk(zh, p, "D");
    zkr_client_t *c = zkt_client(SESSION_MS);
    rec_t *r = calloc(1, sizeof *r);
    rec_init(r);
    zkr_cache_t *k = new_cache(c, path, ZKR_CACHE_CHILDREN, -1, 1, r);
    CU_ASSERT_EQUAL(zkr_cache_size(k), 2);
    char **names = NULL;
    size_t n = 0;
    CU_ASSERT_EQUAL(zkr_cache_children(k, path, &names, &n), ZKR_OK);
    CU_ASSERT_TRUE(n == 2 && strcmp(names[0], "a") == 0 && strcmp(names[1], "b") == 0);
    zkr_strings_free(names, n);
    zkr_cache_node_t *got = NULL;
    CU_ASSERT_EQUAL(zkr_cache_get(k, path, &got), ZKR_ENONODE); /* the path itself is not cached */
    CU_ASSERT_EQUAL(zkr_cache_get(k, p, &got), ZKR_ENONODE);    /* nor a grandchild */
    snprintf(p, sizeof p, "%s/c", path);
    mk(zh, p, "C");
    CU_ASSERT_TRUE(wait_events(r, ZKR_CACHE_CREATED, p, 1));
    CU_ASSERT_EQUAL(zoo_delete(zh, p, -1), ZOK);
    CU_ASSERT_TRUE(wait_events(r, ZKR_CACHE_DELETED, p, 1));
    /* the path goes (children first) and comes back with a child */
    snprintf(p, sizeof p, "%s/a/deep", path);
    CU_ASSERT_EQUAL(zoo_delete(zh, p, -1), ZOK);
    snprintf(p, sizeof p, "%s/a", path);
    CU_ASSERT_EQUAL(zoo_delete(zh, p, -1), ZOK);
    snprintf(p, sizeof p, "%s/b", path);
    CU_ASSERT_EQUAL(zoo_delete(zh, p, -1), ZOK);
    CU_ASSERT_EQUAL(zoo_delete(zh, path, -1), ZOK);
    CU_ASSERT_TRUE(wait_events(r, ZKR_CACHE_DELETED, p, 1));
    gone_t g = {k, path};
    CU_ASSERT_TRUE(zkt_wait_for(path_gone, &g, WAIT_MS));
    mk(zh, path, "again");
    snprintf(p, sizeof p, "%s/z", path);
    mk(zh, p, "Z");
    CU_ASSERT_TRUE(wait_events(r, ZKR_CACHE_CREATED, p, 1));
    CU_ASSERT_EQUAL(count(r, ZKR_CACHE_CREATED, path), 0); /* never told about the path */
    CU_ASSERT_EQUAL(bad_sequences(r), 0);
    zkr_cache_free(k);
    zkr_client_close(c);
    zkt_raw_close(zh);
    free(r);
}

/* ---- a subtree ------------------------------------------------------------------------------- */

static int skip_private(const char *path, int depth, void *ctx)
{
    (void)depth;
    (void)ctx;
    const char *b = strrchr(path, '/');
    return !(b && strcmp(b, "/private") == 0);
}

static void test_tree(void)
{
    char path[128], p[200];
    zhandle_t *zh = zkt_raw();
    base("cache-tree", path, sizeof path, zh);
    mk(zh, path, "r");
    const char *names[] = {"a", "a/x", "a/x/deep", "b", "b/y", "private", "private/secret"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        snprintf(p, sizeof p, "%s/%s", path, names[i]);
        mk(zh, p, names[i]);
    }
    zkr_client_t *c = zkt_client(SESSION_MS);
    rec_t *r = calloc(1, sizeof *r);
    rec_init(r);
    /* down to depth 2, without "private" */
    zkr_cache_options_t opt;
    zkr_cache_options_init(&opt);
    opt.max_depth = 2;
    opt.filter = skip_private;
    zkr_cache_t *k = NULL;
    CU_ASSERT_EQUAL_FATAL(zkr_cache_new(&k, c, path, &opt), ZKR_OK);
    r->cache = k;
    zkr_cache_set_listener(k, on_event, r);
    CU_ASSERT_EQUAL(zkr_cache_start(k), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_cache_start(k), ZKR_ESTATE);
    CU_ASSERT_EQUAL(zkr_cache_wait_initialized(k, WAIT_MS), ZKR_OK);
    CU_ASSERT_TRUE(wait_events(r, ZKR_CACHE_INITIALIZED, NULL, 1));
    CU_ASSERT_EQUAL(zkr_cache_size(k), 5); /* the path, a, a/x, b, b/y */
    snprintf(p, sizeof p, "%s/a/x/deep", path);
    zkr_cache_node_t *got = NULL;
    CU_ASSERT_EQUAL(zkr_cache_get(k, p, &got), ZKR_ENONODE);
    snprintf(p, sizeof p, "%s/private", path);
    CU_ASSERT_EQUAL(zkr_cache_get(k, p, &got), ZKR_ENONODE);
    /* parents told before children; INITIALIZED after the first load */
    pthread_mutex_lock(&r->mu);
    int init_at = -1, a_at = -1, ax_at = -1;
    for (int i = 0; i < r->n; i++) {
        char want[200];
        snprintf(want, sizeof want, "%s/a", path);
        if (r->ev[i].type == ZKR_CACHE_INITIALIZED && init_at < 0)
            init_at = i;
        if (strcmp(r->ev[i].path, want) == 0 && a_at < 0)
            a_at = i;
        snprintf(want, sizeof want, "%s/a/x", path);
        if (strcmp(r->ev[i].path, want) == 0 && ax_at < 0)
            ax_at = i;
    }
    pthread_mutex_unlock(&r->mu);
    CU_ASSERT_TRUE(a_at >= 0 && ax_at > a_at && init_at > ax_at);
    same_t s = {k, zh, path, 2};
    /* the server's tree without "private" is the copy: drop it there */
    snprintf(p, sizeof p, "%s/private/secret", path);
    zoo_delete(zh, p, -1);
    snprintf(p, sizeof p, "%s/private", path);
    zoo_delete(zh, p, -1);
    CU_ASSERT_TRUE(zkt_wait_for(same_tree, &s, WAIT_MS));
    /* a subtree deleted: children told before their parent */
    snprintf(p, sizeof p, "%s/a/x/deep", path);
    CU_ASSERT_EQUAL(zoo_delete(zh, p, -1), ZOK);
    snprintf(p, sizeof p, "%s/a/x", path);
    CU_ASSERT_EQUAL(zoo_delete(zh, p, -1), ZOK);
    snprintf(p, sizeof p, "%s/a", path);
    CU_ASSERT_EQUAL(zoo_delete(zh, p, -1), ZOK);
    CU_ASSERT_TRUE(wait_events(r, ZKR_CACHE_DELETED, p, 1));
    char ax[200];
    snprintf(ax, sizeof ax, "%s/a/x", path);
    CU_ASSERT_EQUAL(count(r, ZKR_CACHE_DELETED, ax), 1);
    pthread_mutex_lock(&r->mu);
    int del_a = -1, del_ax = -1;
    for (int i = 0; i < r->n; i++) {
        if (r->ev[i].type != ZKR_CACHE_DELETED)
            continue;
        if (strcmp(r->ev[i].path, p) == 0)
            del_a = i;
        if (strcmp(r->ev[i].path, ax) == 0)
            del_ax = i;
    }
    pthread_mutex_unlock(&r->mu);
    CU_ASSERT_TRUE(del_ax >= 0 && del_a > del_ax);
    /* walk: depth 0 for the path given, parents before children */
    CU_ASSERT_TRUE(zkt_wait_for(same_tree, &s, WAIT_MS));
    CU_ASSERT_EQUAL(bad_sequences(r), 0);
    zkr_cache_free(k);
    zkr_client_close(c);
    zkt_raw_close(zh);
    free(r);
}

/* ---- random writers: the copy ends as the server's tree ---------------------------------------- */

static void test_random_writers(void)
{
    char path[128], p[200];
    zhandle_t *zh = zkt_raw();
    base("cache-random", path, sizeof path, zh);
    mk(zh, path, "");
    zkr_client_t *c = zkt_client(SESSION_MS);
    rec_t *r = calloc(1, sizeof *r);
    rec_init(r);
    zkr_cache_t *k = new_cache(c, path, ZKR_CACHE_TREE, -1, 1, r);
    unsigned seed = 7;
    const char *names[] = {"a", "b", "c", "a/x", "a/y", "b/x", "a/x/1", "a/x/2"};
    for (int i = 0; i < 400; i++) {
        const char *name = names[rand_r(&seed) % 8];
        snprintf(p, sizeof p, "%s/%s", path, name);
        char data[16];
        snprintf(data, sizeof data, "v%d", i % 3); /* data repeats: versions decide nothing */
        switch (rand_r(&seed) % 3) {
        case 0: zoo_create(zh, p, data, (int)strlen(data), &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0); break;
        case 1: zoo_set(zh, p, data, (int)strlen(data), -1); break;
        default: zoo_delete(zh, p, -1); break;
        }
    }
    same_t s = {k, zh, path, -1};
    CU_ASSERT_TRUE(zkt_wait_for(same_tree, &s, WAIT_MS));
    CU_ASSERT_EQUAL(bad_sequences(r), 0);
    CU_ASSERT_EQUAL(zkr_cache_is_fresh(k), 1);
    zkr_cache_free(k);
    zkr_client_close(c);
    zkt_raw_close(zh);
    free(r);
}

/* ---- the watch budget ---------------------------------------------------------------------------- */

static long long data_watches(void)
{
    return zkt_stat_value("wchs", "Total watches");
}

static void budget(int data)
{
    char path[128], p[200];
    zhandle_t *zh = zkt_raw();
    base(data ? "cache-budget" : "cache-budget-stat", path, sizeof path, zh);
    mk(zh, path, "");
    for (int i = 0; i < 10; i++) {
        snprintf(p, sizeof p, "%s/n%d", path, i);
        mk(zh, p, "x");
    }
    long long d0 = data_watches(), c0 = zkt_children_watches();
    zkr_client_t *c = zkt_client(SESSION_MS);
    rec_t *r = calloc(1, sizeof *r);
    rec_init(r);
    zkr_cache_t *k = new_cache(c, path, ZKR_CACHE_TREE, 1, data, r); /* the path and its 10 children */
    long long d = data_watches() - d0, ch = zkt_children_watches() - c0;
    printf("\n    %s: %lld data watches, %lld children watches for 11 nodes ", data ? "with data" : "stat only", d,
           ch);
    CU_ASSERT_EQUAL(d, data ? 11 : 1); /* each node's own; stat only: the path's exists watch */
    CU_ASSERT_EQUAL(ch, 1);            /* the path's children (depth 1 is the last level) */
    pthread_mutex_lock(&r->mu);
    int told = r->n;
    pthread_mutex_unlock(&r->mu);
    zkr_cache_free(k);
    /* its watches went with it from the client: a change fires them on the
     * server, to nobody (the session stays, and so does the client) */
    for (int i = 0; i < 10; i++) {
        snprintf(p, sizeof p, "%s/n%d", path, i);
        zoo_set(zh, p, "y", 1, -1);
    }
    snprintf(p, sizeof p, "%s/n10", path);
    mk(zh, p, "x");
    zoo_set(zh, path, "y", 1, -1);
    zkt_sleep_ms(200);
    pthread_mutex_lock(&r->mu);
    CU_ASSERT_EQUAL(r->n, told); /* nothing told after the free */
    pthread_mutex_unlock(&r->mu);
    CU_ASSERT_TRUE(zkr_client_is_connected(c));
    zkr_client_close(c);
    zkt_raw_close(zh);
    free(r);
}

static void test_budget(void)
{
    budget(1);
}

static void test_budget_stat_only(void)
{
    budget(0);
}

/* Without data: created and deleted told (a delete and create again in
 * between two listings too), never CHANGED. */
static void test_stat_only_events(void)
{
    char path[128], p[200];
    zhandle_t *zh = zkt_raw();
    base("cache-statonly", path, sizeof path, zh);
    mk(zh, path, "");
    snprintf(p, sizeof p, "%s/k", path);
    mk(zh, p, "1");
    zkr_client_t *c = zkt_client(SESSION_MS);
    rec_t *r = calloc(1, sizeof *r);
    rec_init(r);
    zkr_cache_t *k = new_cache(c, path, ZKR_CACHE_CHILDREN, -1, 0, r);
    CU_ASSERT_EQUAL(zoo_set(zh, p, "2", 1, -1), ZOK);
    /* deleted and created again, with another child added: one listing
     * shows "k" still there, the cversion shows more happened */
    zoo_op_t ops[3];
    zoo_op_result_t res[3];
    char q[200];
    snprintf(q, sizeof q, "%s/other", path);
    zoo_delete_op_init(&ops[0], p, -1);
    zoo_create_op_init(&ops[1], p, "1", 1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
    zoo_create_op_init(&ops[2], q, "", 0, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
    CU_ASSERT_EQUAL(zoo_multi(zh, 3, ops, res), ZOK);
    CU_ASSERT_TRUE(wait_events(r, ZKR_CACHE_CREATED, q, 1));
    CU_ASSERT_TRUE(wait_events(r, ZKR_CACHE_CREATED, p, 2));
    CU_ASSERT_EQUAL(count(r, ZKR_CACHE_DELETED, p), 1);
    CU_ASSERT_EQUAL(count(r, ZKR_CACHE_CHANGED, NULL), 0);
    zkr_cache_node_t *got = NULL;
    CU_ASSERT_EQUAL(zkr_cache_get(k, p, &got), ZKR_OK);
    CU_ASSERT_TRUE(got && got->data == NULL && got->stat.czxid > 0);
    zkr_cache_node_free(got);
    CU_ASSERT_EQUAL(bad_sequences(r), 0);
    zkr_cache_free(k);
    zkr_client_close(c);
    zkt_raw_close(zh);
    free(r);
}

/* ---- a lost session: everything read again, only differences told --------------------------------- */

static void test_expiry(void)
{
    char path[128], p[200];
    zhandle_t *zh = zkt_raw();
    base("cache-expiry", path, sizeof path, zh);
    mk(zh, path, "");
    for (int i = 0; i < 5; i++) {
        snprintf(p, sizeof p, "%s/n%d", path, i);
        mk(zh, p, "x");
    }
    zkr_client_t *c = zkt_client(SESSION_MS);
    rec_t *r = calloc(1, sizeof *r);
    rec_init(r);
    zkr_cache_t *k = new_cache(c, path, ZKR_CACHE_TREE, -1, 1, r);
    pthread_mutex_lock(&r->mu);
    int before = r->n;
    pthread_mutex_unlock(&r->mu);
    zkt_expire_client(c, SESSION_MS);
    snprintf(p, sizeof p, "%s/n0", path);
    zoo_delete(zh, p, -1); /* while the session is lost: maybe seen only by the reload */
    snprintf(p, sizeof p, "%s/n9", path);
    mk(zh, p, "new");
    CU_ASSERT_TRUE(wait_events(r, ZKR_CACHE_INITIALIZED, NULL, 2));
    same_t s = {k, zh, path, -1};
    CU_ASSERT_TRUE(zkt_wait_for(same_tree, &s, WAIT_MS));
    /* told: n0 deleted, n9 created; nothing about the others */
    pthread_mutex_lock(&r->mu);
    int others = 0;
    for (int i = before; i < r->n; i++) {
        if (!r->ev[i].path[0])
            continue;
        if (!strstr(r->ev[i].path, "/n0") && !strstr(r->ev[i].path, "/n9"))
            others++;
    }
    pthread_mutex_unlock(&r->mu);
    CU_ASSERT_EQUAL(others, 0);
    CU_ASSERT_EQUAL(bad_sequences(r), 0);
    CU_ASSERT_TRUE(zkt_wait_for((int (*)(void *))zkr_cache_is_fresh, k, WAIT_MS));
    zkr_cache_free(k);
    zkr_client_close(c);
    zkt_raw_close(zh);
    free(r);
}

/* ---- bad input, and a listener that frees its own cache ---------------------------------------------- */

static int never(const zkr_cache_node_t *n, int depth, void *ctx)
{
    (void)n, (void)depth, (void)ctx;
    return 1;
}

static void test_bad_input(void)
{
    zkr_client_t *c = zkt_client(SESSION_MS);
    zkr_cache_t *k = (zkr_cache_t *)1;
    zkr_cache_options_t opt;
    zkr_cache_options_init(&opt);
    CU_ASSERT_EQUAL(opt.shape, ZKR_CACHE_TREE);
    CU_ASSERT_EQUAL(opt.max_depth, -1);
    CU_ASSERT_EQUAL(opt.data, 1);
    CU_ASSERT_EQUAL(zkr_cache_new(&k, NULL, "/x", NULL), ZKR_EINVAL);
    CU_ASSERT_PTR_NULL(k);
    CU_ASSERT_EQUAL(zkr_cache_new(NULL, c, "/x", NULL), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_cache_new(&k, c, "x", NULL), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_cache_new(&k, c, "/x/", NULL), ZKR_EINVAL);
    opt.shape = (zkr_cache_shape_t)7;
    CU_ASSERT_EQUAL(zkr_cache_new(&k, c, "/x", &opt), ZKR_EINVAL);
    zkr_cache_options_init(&opt);
    opt.size = 8;
    CU_ASSERT_EQUAL(zkr_cache_new(&k, c, "/x", &opt), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_cache_new(&k, c, "/zkr-test/never-made", NULL), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_cache_wait_initialized(k, 10), ZKR_ESTATE);
    zkr_cache_node_t *n = (zkr_cache_node_t *)1;
    CU_ASSERT_EQUAL(zkr_cache_get(k, "/elsewhere", &n), ZKR_EINVAL);
    CU_ASSERT_PTR_NULL(n);
    CU_ASSERT_EQUAL(zkr_cache_get(k, "/zkr-test/never-made-not", &n), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_cache_get(k, NULL, &n), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_cache_get(k, "/zkr-test/never-made", NULL), ZKR_EINVAL);
    char **names = (char **)1;
    size_t cnt = 9;
    CU_ASSERT_EQUAL(zkr_cache_children(k, "/zkr-test/never-made", &names, &cnt), ZKR_ENONODE);
    CU_ASSERT_PTR_NULL(names);
    CU_ASSERT_EQUAL(cnt, 0);
    CU_ASSERT_EQUAL(zkr_cache_walk(k, NULL, NULL, NULL), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_cache_walk(k, "/elsewhere", never, NULL), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_cache_walk(k, NULL, never, NULL), ZKR_ENONODE);
    CU_ASSERT_EQUAL(zkr_cache_is_fresh(k), 0); /* not started */
    CU_ASSERT_EQUAL(zkr_cache_set_listener(k, NULL, NULL), ZKR_OK);
    zkr_cache_free(k);
    /* NULL */
    CU_ASSERT_EQUAL(zkr_cache_set_listener(NULL, NULL, NULL), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_cache_start(NULL), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_cache_wait_initialized(NULL, 0), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_cache_is_fresh(NULL), 0);
    CU_ASSERT_EQUAL(zkr_cache_size(NULL), 0);
    CU_ASSERT_STRING_EQUAL(zkr_cache_event_name(ZKR_CACHE_CHANGED), "CHANGED");
    CU_ASSERT_STRING_EQUAL(zkr_cache_event_name((zkr_cache_event_type_t)99), "UNKNOWN");
    zkr_cache_free(NULL);
    zkr_cache_node_free(NULL);
    zkr_cache_options_init(NULL);
    zkr_client_close(c);
}

/* "/" and ZooKeeper's own tree may be cached (only read). */
static void test_root(void)
{
    zkr_client_t *c = zkt_client(SESSION_MS);
    zkr_cache_options_t opt;
    zkr_cache_options_init(&opt);
    opt.max_depth = 1;
    zkr_cache_t *k = NULL;
    CU_ASSERT_EQUAL_FATAL(zkr_cache_new(&k, c, "/", &opt), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_cache_start(k), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_cache_wait_initialized(k, WAIT_MS), ZKR_OK);
    zkr_cache_node_t *n = NULL;
    CU_ASSERT_EQUAL(zkr_cache_get(k, "/", &n), ZKR_OK);
    zkr_cache_node_free(n);
    CU_ASSERT_EQUAL(zkr_cache_get(k, "/zookeeper", &n), ZKR_OK);
    CU_ASSERT_TRUE(n && strcmp(n->path, "/zookeeper") == 0);
    zkr_cache_node_free(n);
    char **names = NULL;
    size_t cnt = 0;
    CU_ASSERT_EQUAL(zkr_cache_children(k, "/", &names, &cnt), ZKR_OK);
    int found = 0;
    for (size_t i = 0; i < cnt; i++)
        found |= strcmp(names[i], "zookeeper") == 0;
    CU_ASSERT_TRUE(found);
    zkr_strings_free(names, cnt);
    zkr_cache_free(k);
    CU_ASSERT_EQUAL(zkr_cache_new(&k, c, "/zookeeper", NULL), ZKR_OK);
    zkr_cache_free(k);
    zkr_client_close(c);
}

static void test_free_from_listener(void)
{
    char path[128], p[200];
    zhandle_t *zh = zkt_raw();
    base("cache-selffree", path, sizeof path, zh);
    mk(zh, path, "");
    zkr_client_t *c = zkt_client(SESSION_MS);
    rec_t *r = calloc(1, sizeof *r);
    rec_init(r);
    zkr_cache_t *k = new_cache(c, path, ZKR_CACHE_CHILDREN, -1, 1, r);
    atomic_store(&r->free_own, 1);
    snprintf(p, sizeof p, "%s/one", path);
    mk(zh, p, "1");
    CU_ASSERT_TRUE(wait_events(r, ZKR_CACHE_CREATED, p, 1)); /* refused: the cache goes on */
    snprintf(p, sizeof p, "%s/two", path);
    mk(zh, p, "2");
    CU_ASSERT_TRUE(wait_events(r, ZKR_CACHE_CREATED, p, 1));
    zkr_cache_free(k); /* from another thread: fine, even with events flowing */
    zkr_client_close(c);
    zkt_raw_close(zh);
    free(r);
}

/* A node the client may not read is left out, and the load still ends. */
static void test_unreadable(void)
{
    char path[128], p[200];
    zhandle_t *zh = zkt_raw();
    base("cache-noread", path, sizeof path, zh);
    mk(zh, path, "");
    snprintf(p, sizeof p, "%s/open", path);
    mk(zh, p, "o");
    snprintf(p, sizeof p, "%s/closed", path);
    struct ACL no_read_acl = {ZOO_PERM_ALL & ~ZOO_PERM_READ, {"world", "anyone"}};
    struct ACL_vector no_read = {1, &no_read_acl};
    CU_ASSERT_EQUAL(zoo_create(zh, p, "secret", 6, &no_read, 0, NULL, 0), ZOK);
    zkr_client_t *c = zkt_client(SESSION_MS);
    rec_t *r = calloc(1, sizeof *r);
    rec_init(r);
    zkr_cache_t *k = new_cache(c, path, ZKR_CACHE_TREE, -1, 1, r); /* initialized within the bound */
    CU_ASSERT_EQUAL(zkr_cache_size(k), 2); /* the path and "open" */
    zkr_cache_node_t *got = NULL;
    CU_ASSERT_EQUAL(zkr_cache_get(k, p, &got), ZKR_ENONODE);
    zkr_cache_free(k);
    zkr_client_close(c);
    zkt_raw_close(zh);
    free(r);
}

static void add_suites(void)
{
    CU_pSuite s = CU_add_suite("cache", NULL, NULL);
    CU_add_test(s, "one node: created, changed, a delete and create again with the same data, deleted", test_node);
    CU_add_test(s, "children of one node: not the node, not grandchildren; the node goes and comes back",
                test_children);
    CU_add_test(s, "a subtree: depth, filter, parents before children, children deleted before parents", test_tree);
    CU_add_test(s, "random writers: the copy ends as the server's tree, every node's events valid",
                test_random_writers);
    CU_add_test(s, "watch budget with data: one data watch per node, one children watch per listed node; "
                   "nothing told after free",
                test_budget);
    CU_add_test(s, "watch budget without data: children watches and the path's exists watch only",
                test_budget_stat_only);
    CU_add_test(s, "without data: created and deleted (also hidden between two listings), never changed",
                test_stat_only_events);
    CU_add_test(s, "a lost session: read again, only the differences told, INITIALIZED again", test_expiry);
    CU_add_test(s, "a node the client may not read is left out; the load still ends", test_unreadable);
    CU_add_test(s, "bad input and NULL: the documented codes", test_bad_input);
    CU_add_test(s, "\"/\" and /zookeeper may be cached", test_root);
    CU_add_test(s, "a listener that frees its own cache is refused; free from another thread", test_free_from_listener);
}

int main(void)
{
    return zkt_main("test_cache", add_suites);
}

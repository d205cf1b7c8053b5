/* Group membership (include/zkr/group.h), Curator's GroupMember: our
 * member node is a zkr_pnode_t (EPHEMERAL, at <membership path>/<id>), the
 * members a zkr_cache_t of the membership path's children, whose events
 * become the group's (on the callback thread) and whose copy gives the
 * members, ours always among them. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "session/core.h"
#include "zkr/cache.h"
#include "zkr/group.h"
#include "zkr/pnode.h"

struct zkr_group {
    zkr_client_t *c; /* (for the log: the pnode and the cache retain it) */
    char *path;      /* the membership path */
    char *id;
    zkr_pnode_t *node;
    zkr_cache_t *cache;
    /* mu: the listener */
    pthread_mutex_t mu;
    zkr_group_fn fn;
    void *ctx;
    int dead; /* freed: nothing more is told */
    int in_call;
    pthread_t calling;
};

/* ---- events: the cache's, told as the group's ------------------------------------------ */

static void on_cache(zkr_cache_t *cache, const zkr_cache_event_t *e, void *ctx)
{
    (void)cache;
    zkr_group_t *g = ctx;
    zkr_group_event_t ev = {ZKR_GROUP_INITIALIZED, NULL};
    zkr_group_member_t m;
    switch (e->type) {
    case ZKR_CACHE_CREATED: ev.type = ZKR_GROUP_JOINED; break;
    case ZKR_CACHE_CHANGED: ev.type = ZKR_GROUP_CHANGED; break;
    case ZKR_CACHE_DELETED: ev.type = ZKR_GROUP_LEFT; break;
    case ZKR_CACHE_INITIALIZED: break;
    default: return; /* (the connection's states: the client's listeners tell them) */
    }
    if (e->node) {
        m.id = zkr__path_basename(e->node->path);
        m.payload = e->node->data ? e->node->data : "";
        m.payload_len = e->node->data ? e->node->data_len : 0;
        ev.member = &m;
    }
    pthread_mutex_lock(&g->mu);
    zkr_group_fn fn = g->dead ? NULL : g->fn;
    void *fctx = g->ctx;
    if (fn) {
        g->in_call = 1;
        g->calling = pthread_self();
    }
    pthread_mutex_unlock(&g->mu);
    if (!fn)
        return;
    fn(g, &ev, fctx);
    pthread_mutex_lock(&g->mu);
    g->in_call = 0;
    pthread_mutex_unlock(&g->mu);
}

/* ---- the public calls -------------------------------------------------------------------- */

void zkr_group_options_init_size(zkr_group_options_t *opt, size_t size)
{
    if (!opt || size < sizeof(size_t))
        return;
    zkr_group_options_t d;
    memset(&d, 0, sizeof d);
    d.size = size < sizeof d ? size : sizeof d;
    memcpy(opt, &d, d.size);
}

/* The member's path (*full, malloc'd), if its id is one path segment
 * making a path ZooKeeper accepts under `path`.  ZKR_OK, ZKR_EINVAL,
 * ZKR_ENOMEM. */
static int member_path(const char *path, const char *id, char **full)
{
    *full = NULL;
    if (!id || !id[0] || strchr(id, '/') || strcmp(id, ".") == 0 || strcmp(id, "..") == 0)
        return ZKR_EINVAL;
    if (!(*full = zkr__path_join(path, id)))
        return ZKR_ENOMEM;
    if (zkr__path_valid(*full))
        return ZKR_OK;
    free(*full);
    *full = NULL;
    return ZKR_EINVAL;
}

static void group_destroy(zkr_group_t *g)
{
    zkr_cache_free(g->cache);
    zkr_pnode_free(g->node);
    pthread_mutex_destroy(&g->mu);
    free(g->path);
    free(g->id);
    free(g);
}

int zkr_group_new(zkr_group_t **out, zkr_client_t *c, const char *membership_path, const char *member_id,
                  const void *payload, size_t payload_len, const zkr_group_options_t *opt)
{
    if (out)
        *out = NULL;
    if (opt && opt->size != sizeof(zkr_group_options_t))
        return ZKR_EINVAL;
    if (!out || !c || !zkr__path_valid(membership_path) || payload_len > ZKR_DATA_MAX ||
        (!payload && payload_len > 0))
        return ZKR_EINVAL;
    char *full;
    int rc = member_path(membership_path, member_id, &full);
    if (rc != ZKR_OK)
        return rc;
    zkr_group_t *g = calloc(1, sizeof *g);
    if (!g) {
        free(full);
        return ZKR_ENOMEM;
    }
    if (pthread_mutex_init(&g->mu, NULL) != 0) {
        free(g);
        free(full);
        return ZKR_ESYSTEM;
    }
    g->c = c;
    g->path = strdup(membership_path);
    g->id = strdup(member_id);
    rc = g->path && g->id ? ZKR_OK : ZKR_ENOMEM;
    if (rc == ZKR_OK)
        rc = zkr_pnode_new(&g->node, c, full, payload, payload_len, NULL); /* EPHEMERAL */
    zkr_cache_options_t co;
    zkr_cache_options_init(&co);
    co.shape = ZKR_CACHE_CHILDREN;
    if (rc == ZKR_OK)
        rc = zkr_cache_new(&g->cache, c, membership_path, &co);
    free(full);
    if (rc != ZKR_OK) {
        group_destroy(g);
        return rc;
    }
    *out = g;
    return ZKR_OK;
}

int zkr_group_set_listener(zkr_group_t *g, zkr_group_fn fn, void *ctx)
{
    if (!g)
        return ZKR_EINVAL;
    pthread_mutex_lock(&g->mu);
    g->fn = fn;
    g->ctx = ctx;
    pthread_mutex_unlock(&g->mu);
    /* the cache copies its events only while someone listens */
    return zkr_cache_set_listener(g->cache, fn ? on_cache : NULL, g);
}

int zkr_group_start(zkr_group_t *g)
{
    if (!g)
        return ZKR_EINVAL;
    int rc = zkr_pnode_start(g->node);
    return rc == ZKR_OK ? zkr_cache_start(g->cache) : rc;
}

int zkr_group_wait_initialized(zkr_group_t *g, int64_t timeout_ms)
{
    return g ? zkr_cache_wait_initialized(g->cache, timeout_ms) : ZKR_EINVAL;
}

int zkr_group_is_member(zkr_group_t *g)
{
    return g ? zkr_pnode_is_created(g->node) : 0;
}

int zkr_group_set_payload(zkr_group_t *g, const void *payload, size_t payload_len, int64_t timeout_ms)
{
    return g ? zkr_pnode_set_data(g->node, payload, payload_len, timeout_ms) : ZKR_EINVAL;
}

/* ---- the members ------------------------------------------------------------------------- */

typedef struct members {
    zkr_group_member_t *v;
    size_t n, cap;
    int nomem;
} members_t;

static int add_member(members_t *ms, const char *id, const char *payload, size_t len)
{
    if (ms->n == ms->cap) {
        size_t cap = ms->cap ? ms->cap * 2 : 16;
        zkr_group_member_t *v = realloc(ms->v, cap * sizeof *v);
        if (!v)
            return -1;
        ms->v = v;
        ms->cap = cap;
    }
    char *i = strdup(id);
    char *p = malloc(len + 1);
    if (!i || !p) {
        free(i);
        free(p);
        return -1;
    }
    if (len)
        memcpy(p, payload, len);
    p[len] = '\0';
    ms->v[ms->n++] = (zkr_group_member_t){i, p, len};
    return 0;
}

/* A walk's node: the children (depth 1) are the members. */
static int take_child(const zkr_cache_node_t *node, int depth, void *ctx)
{
    members_t *ms = ctx;
    if (depth != 1)
        return 0;
    if (add_member(ms, zkr__path_basename(node->path), node->data ? node->data : "",
                   node->data ? node->data_len : 0) != 0) {
        ms->nomem = 1;
        return 1;
    }
    return 0;
}

int zkr_group_members(zkr_group_t *g, zkr_group_member_t **members, size_t *count)
{
    if (members)
        *members = NULL;
    if (count)
        *count = 0;
    if (!g || !members || !count)
        return ZKR_EINVAL;
    members_t ms = {NULL, 0, 0, 0};
    int rc = zkr_cache_walk(g->cache, NULL, take_child, &ms); /* in name order */
    if (rc == ZKR_ENONODE)
        rc = ZKR_OK; /* no membership path yet */
    if (rc == ZKR_OK && ms.nomem)
        rc = ZKR_ENOMEM;
    size_t at = 0;
    while (rc == ZKR_OK && at < ms.n && strcmp(ms.v[at].id, g->id) < 0)
        at++;
    if (rc == ZKR_OK && (at == ms.n || strcmp(ms.v[at].id, g->id) != 0)) {
        /* this member always is one (Curator's rule): the payload it keeps */
        char *data = NULL;
        size_t len = 0;
        rc = zkr_pnode_data(g->node, &data, &len);
        if (rc == ZKR_OK && add_member(&ms, g->id, data ? data : "", len) != 0)
            rc = ZKR_ENOMEM;
        zkr_free(data);
        if (rc == ZKR_OK) {
            zkr_group_member_t me = ms.v[ms.n - 1];
            memmove(&ms.v[at + 1], &ms.v[at], (ms.n - 1 - at) * sizeof me);
            ms.v[at] = me;
        }
    }
    if (rc != ZKR_OK) {
        zkr_group_members_free(ms.v, ms.n);
        return rc;
    }
    *members = ms.v;
    *count = ms.n;
    return ZKR_OK;
}

void zkr_group_members_free(zkr_group_member_t *members, size_t count)
{
    if (!members)
        return;
    for (size_t i = 0; i < count; i++) {
        free((char *)members[i].id);
        free((char *)members[i].payload);
    }
    free(members);
}

void zkr_group_free(zkr_group_t *g)
{
    if (!g)
        return;
    pthread_mutex_lock(&g->mu);
    int inside = g->in_call && pthread_equal(g->calling, pthread_self());
    if (!inside)
        g->dead = 1; /* nothing more is told */
    pthread_mutex_unlock(&g->mu);
    if (inside) {
        zkr__log(g->c, ZKR_LOG_ERROR, "group %s: zkr_group_free from its own listener: not freed", g->path);
        return;
    }
    group_destroy(g); /* the cache first (its listener ends), then our node: we leave */
}

const char *zkr_group_event_name(zkr_group_event_type_t type)
{
    switch (type) {
    case ZKR_GROUP_JOINED: return "JOINED";
    case ZKR_GROUP_CHANGED: return "CHANGED";
    case ZKR_GROUP_LEFT: return "LEFT";
    case ZKR_GROUP_INITIALIZED: return "INITIALIZED";
    }
    return "UNKNOWN";
}

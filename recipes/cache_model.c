/* The cache's copy: a tree of nodes (each node's kids sorted by name),
 * the events told to the listener, and the public reads (get, children,
 * walk), each under the copy's read lock, so each sees one state. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "recipes/cache_private.h"

/* ---- nodes ---------------------------------------------------------------------- */

zkr__cnode_t *zkr__cnode_new(zkr_cache_t *k, zkr__cnode_t *parent, const char *name)
{
    zkr__cnode_t *n = calloc(1, sizeof *n);
    if (!n)
        return NULL;
    n->name = strdup(name);
    n->path = parent ? zkr__path_join(parent->path, name) : strdup(k->path);
    if (!n->name || !n->path) {
        free(n->name);
        free(n->path);
        free(n);
        return NULL;
    }
    n->parent = parent;
    n->depth = parent ? parent->depth + 1 : 0;
    n->gen = ++k->next_gen;
    return n;
}

/* Where name is, or goes, among n's kids. */
static size_t kid_slot(const zkr__cnode_t *n, const char *name, int *found)
{
    size_t lo = 0, hi = n->nkids;
    *found = 0;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(n->kids[mid]->name, name);
        if (c == 0) {
            *found = 1;
            return mid;
        }
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

zkr__cnode_t *zkr__cnode_kid(const zkr__cnode_t *n, const char *name)
{
    int found;
    size_t i = kid_slot(n, name, &found);
    return found ? n->kids[i] : NULL;
}

int zkr__cnode_attach(zkr__cnode_t *n)
{
    zkr__cnode_t *p = n->parent;
    if (p->nkids == p->cap) {
        size_t cap = p->cap ? p->cap * 2 : 4;
        zkr__cnode_t **kids = realloc(p->kids, cap * sizeof *kids);
        if (!kids)
            return ZKR_ENOMEM;
        p->kids = kids;
        p->cap = cap;
    }
    int found;
    size_t i = kid_slot(p, n->name, &found);
    memmove(p->kids + i + 1, p->kids + i, (p->nkids - i) * sizeof *p->kids);
    p->kids[i] = n;
    p->nkids++;
    return ZKR_OK;
}

static void detach(zkr__cnode_t *n)
{
    zkr__cnode_t *p = n->parent;
    int found;
    size_t i = kid_slot(p, n->name, &found);
    if (found && p->kids[i] == n) {
        memmove(p->kids + i, p->kids + i + 1, (p->nkids - i - 1) * sizeof *p->kids);
        p->nkids--;
    }
}

zkr__cnode_t *zkr__cnode_find(const zkr_cache_t *k, const char *path)
{
    size_t rl = strlen(k->path);
    if (strncmp(path, k->path, rl) != 0)
        return NULL;
    const char *rest = path + rl;
    if (*rest == '\0')
        return k->root;
    if (rl == 1) /* the cache's path is "/" */
        rest--;
    if (*rest != '/')
        return NULL;
    zkr__cnode_t *n = k->root;
    char name[ZKR__CACHE_NAME_MAX + 1];
    while (n && *rest == '/') {
        const char *end = strchr(rest + 1, '/');
        size_t len = end ? (size_t)(end - rest - 1) : strlen(rest + 1);
        if (len == 0 || len >= sizeof name)
            return NULL;
        memcpy(name, rest + 1, len);
        name[len] = '\0';
        n = zkr__cnode_kid(n, name);
        rest += len + 1;
    }
    return *rest ? NULL : n;
}

void zkr__cnode_free_tree(zkr__cnode_t *n)
{
    if (!n)
        return;
    for (size_t i = 0; i < n->nkids; i++)
        zkr__cnode_free_tree(n->kids[i]);
    free(n->kids);
    free(n->name);
    free(n->path);
    free(n->data);
    free(n);
}

static void forget(zkr_cache_t *k, zkr__cnode_t *n)
{
    zkr__cache_unlist(k, n);
    if (n->live) {
        n->live = 0;
        if (!(n->depth == 0 && k->opt.shape == ZKR_CACHE_CHILDREN)) {
            k->live--;
            zkr__cache_tell(k, ZKR_CACHE_DELETED, n, 0);
        }
    }
}

void zkr__cnode_drop_kids(zkr_cache_t *k, zkr__cnode_t *n)
{
    for (size_t i = n->nkids; i-- > 0;) {
        zkr__cnode_t *kid = n->kids[i];
        zkr__cnode_drop_kids(k, kid);
        forget(k, kid);
        kid->nkids = 0;
        zkr__cnode_free_tree(kid);
    }
    n->nkids = 0;
    n->listed = 0;
}

void zkr__cnode_drop(zkr_cache_t *k, zkr__cnode_t *n)
{
    zkr__cnode_drop_kids(k, n);
    forget(k, n);
    free(n->data);
    n->data = NULL;
    n->len = 0;
    if (n->parent) {
        detach(n);
        zkr__cnode_free_tree(n);
    }
}

void zkr__stat_from(zkr_stat_t *out, const struct Stat *st)
{
    out->czxid = st->czxid;
    out->mzxid = st->mzxid;
    out->pzxid = st->pzxid;
    out->ctime_ms = st->ctime;
    out->mtime_ms = st->mtime;
    out->ephemeral_owner = st->ephemeralOwner;
    out->version = st->version;
    out->cversion = st->cversion;
    out->aversion = st->aversion;
    out->data_length = st->dataLength;
    out->num_children = st->numChildren;
}

/* ---- the dirty list -------------------------------------------------------------- */

void zkr__cache_mark(zkr_cache_t *k, zkr__cnode_t *n, unsigned need)
{
    n->need |= need;
    if (n->dirty)
        return;
    n->dirty = 1;
    n->dnext = NULL;
    n->dprev = k->dirty_tail;
    if (k->dirty_tail)
        k->dirty_tail->dnext = n;
    else
        k->dirty_head = n;
    k->dirty_tail = n;
}

void zkr__cache_unlist(zkr_cache_t *k, zkr__cnode_t *n)
{
    if (!n->dirty)
        return;
    if (n->dprev)
        n->dprev->dnext = n->dnext;
    else
        k->dirty_head = n->dnext;
    if (n->dnext)
        n->dnext->dprev = n->dprev;
    else
        k->dirty_tail = n->dprev;
    n->dirty = 0;
    n->need = 0;
    n->dnext = n->dprev = NULL;
}

/* ---- copies and events ------------------------------------------------------------- */

/* One block: the struct, the path, the data. */
static zkr_cache_node_t *node_copy(const zkr__cnode_t *n)
{
    size_t pl = strlen(n->path) + 1;
    size_t dl = n->data ? n->len + 1 : 0;
    zkr_cache_node_t *c = malloc(sizeof *c + pl + dl);
    if (!c)
        return NULL;
    char *p = (char *)(c + 1);
    memcpy(p, n->path, pl);
    c->path = p;
    c->data = NULL;
    c->data_len = 0;
    if (n->data) {
        memcpy(p + pl, n->data, dl);
        c->data = p + pl;
        c->data_len = n->len;
    }
    c->stat = n->st;
    return c;
}

void zkr_cache_node_free(zkr_cache_node_t *node)
{
    free(node);
}

int zkr__cache_tell(zkr_cache_t *k, zkr_cache_event_type_t type, const zkr__cnode_t *n, zkr_state_t state)
{
    pthread_mutex_lock(&k->emu);
    int listening = k->fn != NULL;
    pthread_mutex_unlock(&k->emu);
    if (!listening)
        return ZKR_OK; /* no listener: nothing to copy (one set later hears what comes after) */
    zkr__cevent_t *e = calloc(1, sizeof *e);
    if (e && n && !(e->node = node_copy(n))) {
        free(e);
        e = NULL;
    }
    if (!e) {
        zkr__log(k->c, ZKR_LOG_ERROR, "cache %s: out of memory, a %s event is not told", k->path,
                 zkr_cache_event_name(type));
        return ZKR_ENOMEM;
    }
    e->type = type;
    e->state = state;
    pthread_mutex_lock(&k->emu);
    int post = k->fn != NULL;
    if (post) {
        if (k->etail)
            k->etail->next = e;
        else
            k->ehead = e;
        k->etail = e;
    }
    pthread_mutex_unlock(&k->emu);
    if (!post) {
        free(e->node);
        free(e);
        return ZKR_OK;
    }
    zkr__sub_post(k->c, k->sub, ZKR__CACHE_DELIVER, NULL);
    return ZKR_OK;
}

void zkr__cache_deliver(zkr_cache_t *k)
{
    pthread_mutex_lock(&k->emu);
    zkr__cevent_t *e = k->ehead;
    if (e && !(k->ehead = e->next))
        k->etail = NULL;
    zkr_cache_fn fn = k->fn;
    void *ctx = k->ctx;
    if (e && fn) {
        k->in_call = 1;
        k->calling = pthread_self();
    }
    pthread_mutex_unlock(&k->emu);
    if (!e)
        return;
    if (fn) {
        zkr_cache_event_t ev = {e->type, e->node, e->state};
        fn(k, &ev, ctx);
        pthread_mutex_lock(&k->emu);
        k->in_call = 0;
        pthread_cond_broadcast(&k->econd);
        pthread_mutex_unlock(&k->emu);
    }
    free(e->node);
    free(e);
}

void zkr__cache_events_free(zkr_cache_t *k)
{
    while (k->ehead) {
        zkr__cevent_t *e = k->ehead;
        k->ehead = e->next;
        free(e->node);
        free(e);
    }
    k->etail = NULL;
}

const char *zkr_cache_event_name(zkr_cache_event_type_t type)
{
    switch (type) {
    case ZKR_CACHE_CREATED: return "CREATED";
    case ZKR_CACHE_CHANGED: return "CHANGED";
    case ZKR_CACHE_DELETED: return "DELETED";
    case ZKR_CACHE_INITIALIZED: return "INITIALIZED";
    case ZKR_CACHE_STATE: return "STATE";
    }
    return "UNKNOWN";
}

/* ---- the public reads ----------------------------------------------------------------- */

/* A node the program may see: in the copy, and cached (not the path of a
 * ZKR_CACHE_CHILDREN cache). */
static int visible(const zkr_cache_t *k, const zkr__cnode_t *n)
{
    return n && n->live && !(n->depth == 0 && k->opt.shape == ZKR_CACHE_CHILDREN);
}

static int inside(const zkr_cache_t *k, const char *path)
{
    size_t rl = strlen(k->path);
    return zkr__path_readable(path) && strncmp(path, k->path, rl) == 0 &&
           (path[rl] == '\0' || path[rl] == '/' || rl == 1);
}

int zkr_cache_get(zkr_cache_t *k, const char *path, zkr_cache_node_t **node)
{
    if (node)
        *node = NULL;
    if (!k || !path || !node || !inside(k, path))
        return ZKR_EINVAL;
    pthread_rwlock_rdlock(&k->lock);
    const zkr__cnode_t *n = zkr__cnode_find(k, path);
    int rc = ZKR_ENONODE;
    if (visible(k, n))
        rc = (*node = node_copy(n)) ? ZKR_OK : ZKR_ENOMEM;
    pthread_rwlock_unlock(&k->lock);
    return rc;
}

int zkr_cache_children(zkr_cache_t *k, const char *path, char ***names, size_t *count)
{
    if (names)
        *names = NULL;
    if (count)
        *count = 0;
    if (!k || !path || !names || !count || !inside(k, path))
        return ZKR_EINVAL;
    pthread_rwlock_rdlock(&k->lock);
    const zkr__cnode_t *n = zkr__cnode_find(k, path);
    int rc = n && n->live ? ZKR_OK : ZKR_ENONODE;
    size_t m = 0;
    char **v = NULL;
    if (rc == ZKR_OK && n->nkids > 0 && !(v = calloc(n->nkids, sizeof *v)))
        rc = ZKR_ENOMEM;
    for (size_t i = 0; rc == ZKR_OK && i < n->nkids; i++) {
        if (!n->kids[i]->live)
            continue;
        if (!(v[m] = strdup(n->kids[i]->name)))
            rc = ZKR_ENOMEM;
        else
            m++;
    }
    pthread_rwlock_unlock(&k->lock);
    if (rc != ZKR_OK || m == 0) {
        zkr_strings_free(v, m);
        return rc;
    }
    *names = v;
    *count = m;
    return ZKR_OK;
}

static int walk(const zkr__cnode_t *n, int depth, zkr_cache_walk_fn fn, void *ctx, int skip)
{
    if (!n->live)
        return 0;
    if (!skip) {
        zkr_cache_node_t v = {n->path, n->data, n->len, n->st};
        if (fn(&v, depth, ctx))
            return 1;
    }
    for (size_t i = 0; i < n->nkids; i++)
        if (walk(n->kids[i], depth + 1, fn, ctx, 0))
            return 1;
    return 0;
}

int zkr_cache_walk(zkr_cache_t *k, const char *path, zkr_cache_walk_fn fn, void *ctx)
{
    if (!k || !fn || (path && !inside(k, path)))
        return ZKR_EINVAL;
    pthread_rwlock_rdlock(&k->lock);
    const zkr__cnode_t *n = zkr__cnode_find(k, path ? path : k->path);
    int rc = n && n->live ? ZKR_OK : ZKR_ENONODE;
    if (rc == ZKR_OK && n->depth == 0 && k->opt.shape == ZKR_CACHE_CHILDREN)
        walk(n, 0, fn, ctx, 1); /* the path itself is not cached */
    else if (rc == ZKR_OK)
        walk(n, 0, fn, ctx, 0);
    pthread_rwlock_unlock(&k->lock);
    return rc;
}

size_t zkr_cache_size(zkr_cache_t *k)
{
    if (!k)
        return 0;
    pthread_rwlock_rdlock(&k->lock);
    size_t n = k->live;
    pthread_rwlock_unlock(&k->lock);
    return n;
}

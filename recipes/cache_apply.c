/* What comes back to the cache, applied to the copy (on the cache's
 * thread, under the copy's write lock): a node's read decides CREATED,
 * CHANGED or DELETED by its czxid and mzxid (never its version); a
 * listing adds the new children (to be read) and drops the gone ones; a
 * watch event marks what must be read again.  A reply for a node dropped
 * since, or sent before a resynchronisation, carries an older generation
 * and is ignored: nothing deleted comes back from a late reply. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "recipes/cache_private.h"

int zkr__cache_lists(const zkr_cache_t *k, const zkr__cnode_t *n)
{
    if (k->opt.shape == ZKR_CACHE_NODE)
        return 0;
    if (k->opt.shape == ZKR_CACHE_CHILDREN)
        return n->depth == 0;
    return k->opt.max_depth < 0 || n->depth < k->opt.max_depth;
}

int zkr__cache_data_kind(const zkr_cache_t *k, const zkr__cnode_t *n)
{
    if (n->depth == 0 && (k->opt.shape == ZKR_CACHE_CHILDREN || !k->opt.data))
        return ZKR__IT_EXISTS;
    return k->opt.data ? ZKR__IT_DATA : ZKR__IT_STAT;
}

unsigned zkr__cache_all_needs(const zkr_cache_t *k, const zkr__cnode_t *n)
{
    return ZKR__NEED_DATA | (zkr__cache_lists(k, n) ? ZKR__NEED_KIDS : 0);
}

/* The node is told (the path of a ZKR_CACHE_CHILDREN cache is not). */
static int told(const zkr_cache_t *k, const zkr__cnode_t *n)
{
    return !(n->depth == 0 && k->opt.shape == ZKR_CACHE_CHILDREN);
}

static void set_content(zkr__cnode_t *n, const zkr__citem_t *it)
{
    zkr__stat_from(&n->st, &it->st);
    if (it->kind == ZKR__IT_DATA) {
        free(n->data);
        n->data = it->data ? malloc((size_t)it->len + 1) : NULL;
        n->len = 0;
        if (n->data) {
            memcpy(n->data, it->data, (size_t)it->len + 1);
            n->len = (size_t)it->len;
        }
    }
}

static void make_live(zkr_cache_t *k, zkr__cnode_t *n, const zkr__citem_t *it)
{
    set_content(n, it);
    n->live = 1;
    if (told(k, n)) {
        k->live++;
        zkr__cache_tell(k, ZKR_CACHE_CREATED, n, 0);
    }
}

/* A node's read (data, stat, or the path's exists). */
static void apply_read(zkr_cache_t *k, zkr__cnode_t *n, const zkr__citem_t *it)
{
    int probe = it->kind == ZKR__IT_EXISTS && zkr__cache_data_kind(k, n) != ZKR__IT_EXISTS;
    int is_root = n == k->root;
    if (is_root)
        k->root_seen = 1;
    if (it->rc == ZNONODE) {
        /* gone: it, and everything below it, leaves the copy (n is freed,
         * unless it is the path) */
        zkr__cnode_drop(k, n);
        if (is_root && it->kind != ZKR__IT_EXISTS)
            zkr__cache_mark(k, n, ZKR__NEED_EXISTS); /* told when it comes */
        return;
    }
    if (probe) { /* the missing path is there now: read it */
        zkr__cache_mark(k, n, zkr__cache_all_needs(k, n));
        return;
    }
    if (!n->live) {
        make_live(k, n, it); /* (its listing was sent with this read) */
    } else if (it->st.czxid > n->st.czxid) {
        /* Deleted and created again meanwhile: a new node, new children.
         * Unless its parent was too (then it goes with the parent, and
         * comes back once, from the parent's new listing): read the
         * parent again first, then this node, and apply it only if the
         * parent is the same node and not itself in doubt. */
        if (n->parent && (n->verify_czxid != it->st.czxid || n->parent->verify_czxid)) {
            if (n->verify_czxid != it->st.czxid) {
                n->verify_czxid = it->st.czxid;
                zkr__cache_mark(k, n->parent, ZKR__NEED_DATA);
            }
            zkr__cache_unlist(k, n); /* behind the parent's read */
            zkr__cache_mark(k, n, ZKR__NEED_DATA);
            return;
        }
        n->verify_czxid = 0;
        zkr__cnode_drop_kids(k, n);
        n->live = 0;
        if (told(k, n)) {
            k->live--;
            zkr__cache_tell(k, ZKR_CACHE_DELETED, n, 0);
        }
        make_live(k, n, it);
        if (zkr__cache_lists(k, n))
            zkr__cache_mark(k, n, ZKR__NEED_KIDS);
        return;
    } else if (it->st.czxid < n->st.czxid) {
        return; /* an older node's reply */
    } else if (it->st.mzxid > n->st.mzxid && it->kind == ZKR__IT_DATA) {
        set_content(n, it);
        if (told(k, n))
            zkr__cache_tell(k, ZKR_CACHE_CHANGED, n, 0);
    }
    /* (without data a node keeps the stat read when it appeared: the copy
     * holds only what was told) */
    n->verify_czxid = 0;
    /* a children change this read shows and no listing has: list again
     * (after a reconnection, the path's own read finds what was missed) */
    if (zkr__cache_lists(k, n) && n->listed && it->st.pzxid > n->kids_pzxid)
        zkr__cache_mark(k, n, ZKR__NEED_KIDS);
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A name the server gave is a child we can cache. */
static int good_name(zkr_cache_t *k, const char *name)
{
    size_t len = strlen(name);
    if (len > 0 && len <= ZKR__CACHE_NAME_MAX && !strchr(name, '/') && strcmp(name, ".") != 0 &&
        strcmp(name, "..") != 0)
        return 1;
    zkr__log(k->c, ZKR_LOG_WARN, "cache %s: a child name the server gave is left out (%zu bytes)", k->path, len);
    return 0;
}

static void add_kid(zkr_cache_t *k, zkr__cnode_t *n, const char *name)
{
    if (!good_name(k, name))
        return;
    zkr__cnode_t *kid = zkr__cnode_new(k, n, name);
    if (kid && k->opt.filter && !k->opt.filter(kid->path, kid->depth, k->opt.filter_ctx)) {
        zkr__cnode_free_tree(kid);
        return;
    }
    if (!kid || zkr__cnode_attach(kid) != ZKR_OK) {
        zkr__cnode_free_tree(kid);
        zkr__log(k->c, ZKR_LOG_ERROR, "cache %s: out of memory, a child of %s is not cached", k->path, n->path);
        return;
    }
    zkr__cache_mark(k, kid, zkr__cache_all_needs(k, kid));
}

/* A listing of n's children. */
static void apply_kids(zkr_cache_t *k, zkr__cnode_t *n, const zkr__citem_t *it, int *retry)
{
    if (it->rc == ZNONODE || !n->live)
        return; /* its own read tells (and its watch) */
    if (it->st.czxid != n->st.czxid) {
        /* the listing of another node at this path (created again): its
         * own read decides, then it is listed again */
        if (it->st.czxid > n->st.czxid)
            zkr__cache_mark(k, n, ZKR__NEED_DATA);
        return;
    }
    if (n->listed && it->st.pzxid < n->kids_pzxid)
        return; /* older than the listing we have */
    size_t m = it->kids.n;
    char **names = m ? malloc(m * sizeof *names) : NULL;
    if (m && !names) {
        zkr__cache_mark(k, n, ZKR__NEED_KIDS);
        *retry = 1;
        return;
    }
    if (m) {
        memcpy(names, it->kids.v, m * sizeof *names);
        qsort(names, m, sizeof *names, by_name);
    }
    /* gone: in the copy, not in the listing */
    size_t added = 0, removed = 0, j = 0;
    for (size_t i = 0; i < n->nkids;) {
        zkr__cnode_t *kid = n->kids[i];
        while (j < m && strcmp(names[j], kid->name) < 0)
            j++;
        if (j < m && strcmp(names[j], kid->name) == 0) {
            i++;
            continue;
        }
        if (kid->live)
            removed++;
        zkr__cnode_drop(k, kid); /* detaches it: i stays */
    }
    /* new: in the listing, not in the copy */
    for (size_t i = 0; i < m; i++) {
        if (i > 0 && strcmp(names[i], names[i - 1]) == 0)
            continue;
        if (zkr__cnode_kid(n, names[i]))
            continue;
        add_kid(k, n, names[i]);
        added++;
    }
    /* Without data the children have no watch of their own: a name listed
     * again may be a node deleted and created again in between.  Each
     * create and delete adds one to the parent's cversion: if more
     * happened than the listings show, read the stat of the others. */
    if (!k->opt.data && n->listed && (int64_t)it->st.cversion - n->kids_cversion > (int64_t)(added + removed))
        for (size_t i = 0; i < n->nkids; i++)
            if (n->kids[i]->live)
                zkr__cache_mark(k, n->kids[i], ZKR__NEED_STAT);
    free(names);
    n->listed = 1;
    n->kids_pzxid = it->st.pzxid;
    n->kids_cversion = it->st.cversion;
}

static void apply_watch(zkr_cache_t *k, zkr__cnode_t *n, int type)
{
    if (type == ZOO_CHILD_EVENT) {
        if (zkr__cache_lists(k, n))
            zkr__cache_mark(k, n, ZKR__NEED_KIDS);
        return;
    }
    if (type == ZOO_CREATED_EVENT || type == ZOO_NOTWATCHING_EVENT)
        zkr__cache_mark(k, n, zkr__cache_all_needs(k, n));
    else /* changed, deleted: read it again */
        zkr__cache_mark(k, n, ZKR__NEED_DATA);
}

int zkr__cache_apply(zkr_cache_t *k, const zkr__citem_t *it, int *retry)
{
    int is_reply = it->kind != ZKR__IT_WATCH;
    zkr__cnode_t *n = zkr__cnode_find(k, it->path);
    if (!n || (is_reply && n->gen != it->gen))
        return is_reply; /* dropped since, or sent before a resynchronisation */
    if (!is_reply) {
        apply_watch(k, n, it->type);
        return 0;
    }
    if (it->rc == ZNOAUTH || it->rc == ZBADARGUMENTS) {
        /* not ours to read: left out (as if missing), and said once */
        zkr__log(k->c, ZKR_LOG_WARN, "cache %s: %s cannot be read (%s): left out of the copy", k->path, n->path,
                 zerror(it->rc));
        if (it->kind != ZKR__IT_KIDS) {
            int is_root = n == k->root;
            zkr__cnode_drop(k, n);
            if (is_root)
                k->root_seen = 1;
        }
        return 1;
    }
    if (it->rc != ZOK && it->rc != ZNONODE) {
        /* no connection, or no memory: read it again */
        unsigned need = it->kind == ZKR__IT_KIDS     ? ZKR__NEED_KIDS
                        : it->kind == ZKR__IT_EXISTS && zkr__cache_data_kind(k, n) != ZKR__IT_EXISTS
                            ? ZKR__NEED_EXISTS
                            : ZKR__NEED_DATA;
        zkr__cache_mark(k, n, need);
        *retry = 1;
        return 1;
    }
    if (it->kind == ZKR__IT_KIDS)
        apply_kids(k, n, it, retry);
    else
        apply_read(k, n, it);
    return 1;
}

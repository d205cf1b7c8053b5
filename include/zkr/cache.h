/* zkr_cache_t: a local copy of one node, of the children of one node, or
 * of a subtree, kept equal to the server's by watches, with an event for
 * every change (Curator's NodeCache, PathChildrenCache and TreeCache).
 *
 *   zkr_cache_options_t opt;
 *   zkr_cache_options_init(&opt);
 *   opt.shape = ZKR_CACHE_TREE;
 *   zkr_cache_new(&cache, c, "/config", &opt);
 *   zkr_cache_set_listener(cache, on_change, NULL);
 *   zkr_cache_start(cache);
 *   zkr_cache_wait_initialized(cache, 10000);
 *
 * Rules (beyond <zkr/common.h>'s):
 *  - The cache never writes to the server.  Its path may not exist yet,
 *    and may be deleted and created again.  A node the client may not
 *    read (its ACL) is left out of the copy, with what is below it, and
 *    logged.
 *  - Events come per node in the server's order: CREATED, CHANGED,
 *    DELETED, never twice the same, never CHANGED after DELETED without a
 *    CREATED between.  A change is decided by the node's czxid and mzxid,
 *    never by its version: a node deleted and created again is told
 *    DELETED then CREATED, even with the same version and data.  A reply
 *    that comes after the node was deleted never brings it back.
 *  - Watches: one data watch on every cached node and one children watch
 *    on every node whose children are cached (ZKR_CACHE_TREE: every node
 *    above max_depth; ZKR_CACHE_CHILDREN: the path).  Without data
 *    (opt.data 0) the cached nodes have no watch of their own, only the
 *    children watches (and one exists watch on the path): created and
 *    deleted are told, a node's stat is the one read when it appeared,
 *    CHANGED is never told.
 *  - After a reconnection that kept the session, the C client sets every
 *    watch again with the last zxid it saw, and the server fires at once
 *    those whose node changed meanwhile: the cache reads again only those
 *    nodes, and the path's own stat (one request).  After a lost session
 *    it reads everything again and tells only what differs, then
 *    ZKR_CACHE_INITIALIZED again.
 *  - A limit of ZooKeeper 3.8's C client: at a reconnection it sends the
 *    paths of all the session's watches in one packet, which a server
 *    refuses past its jute.maxbuffer (1 MB by default): the client then
 *    never reconnects.  A cache whose watched paths pass 768 KiB says so
 *    in the log when initialized; cache less (max_depth, a filter, a
 *    chroot in the hosts string) or raise the servers' jute.maxbuffer.
 *  - Reads (zkr_cache_get, _children, _walk) are served from the copy,
 *    from any thread, each consistent in itself; while the connection is
 *    down the copy may be stale: zkr_cache_is_fresh says 0. */
#ifndef ZKR_CACHE_H
#define ZKR_CACHE_H

#include "zkr/client.h"
#include "zkr/common.h"
#include "zkr/errors.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct zkr_cache zkr_cache_t;

typedef enum zkr_cache_shape {
    ZKR_CACHE_NODE = 0,     /* the node at the path (NodeCache) */
    ZKR_CACHE_CHILDREN = 1, /* the children of the path, not the path itself
                               (PathChildrenCache) */
    ZKR_CACHE_TREE = 2      /* the path and its descendants down to max_depth
                               (TreeCache) */
} zkr_cache_shape_t;

/* A node's stat, as ZooKeeper gives it (times in ms since the epoch). */
typedef struct zkr_stat {
    int64_t czxid;           /* creation: changes only if deleted and created again */
    int64_t mzxid;           /* last data change */
    int64_t pzxid;           /* last change of its children */
    int64_t ctime_ms;
    int64_t mtime_ms;
    int64_t ephemeral_owner; /* the owning session, 0 if not ephemeral */
    int32_t version;
    int32_t cversion;
    int32_t aversion;
    int32_t data_length;
    int32_t num_children;
} zkr_stat_t;

/* One cached node.  In an event it is valid during the call; from
 * zkr_cache_get it is the caller's (zkr_cache_node_free). */
typedef struct zkr_cache_node {
    const char *path;
    const char *data; /* data_len bytes, then a NUL byte (not counted); NULL
                         without data (opt.data 0) */
    size_t data_len;
    zkr_stat_t stat;
} zkr_cache_node_t;

typedef enum zkr_cache_event_type {
    ZKR_CACHE_CREATED = 1,     /* node: the node now in the copy */
    ZKR_CACHE_CHANGED = 2,     /* node: the node with its new data and stat */
    ZKR_CACHE_DELETED = 3,     /* node: the node as it was last known */
    ZKR_CACHE_INITIALIZED = 4, /* the copy equals the server's: after the
                                  first load, and after each full reload
                                  (a lost session) */
    ZKR_CACHE_STATE = 5        /* the connection's state changed (state) */
} zkr_cache_event_type_t;

typedef struct zkr_cache_event {
    zkr_cache_event_type_t type;
    const zkr_cache_node_t *node; /* CREATED, CHANGED, DELETED; else NULL */
    zkr_state_t state;            /* STATE: the client's new state */
} zkr_cache_event_t;

/* The cache's listener: told each event on the client's callback thread,
 * in order, with its cache first.  It may call the library (the cache's
 * reads too), but not zkr_cache_free on its own cache. */
typedef void (*zkr_cache_fn)(zkr_cache_t *cache, const zkr_cache_event_t *event, void *ctx);

/* Which nodes to cache: called (on the cache's thread) for each node
 * below the path before it is read; 0 leaves it, and all below it, out.
 * depth: 1 for a child of the path.  Must not call the cache. */
typedef int (*zkr_cache_filter_fn)(const char *path, int depth, void *ctx);

typedef struct zkr_cache_options {
    size_t size;                /* set by zkr_cache_options_init */
    zkr_cache_shape_t shape;    /* default ZKR_CACHE_TREE */
    int max_depth;              /* TREE: the deepest level cached below the
                                   path (1: its children); < 0 (default):
                                   no limit */
    int data;                   /* 1 (default): data and stat; 0: stat only,
                                   fewer watches (above) */
    zkr_cache_filter_fn filter; /* NULL (default): everything */
    void *filter_ctx;
} zkr_cache_options_t;

/* Fill opt with the defaults (a macro passing the program's struct size,
 * as zkr_client_options_init).  NULL is ignored. */
ZKR_EXTERN void zkr_cache_options_init_size(zkr_cache_options_t *opt, size_t size);
#define zkr_cache_options_init(opt) zkr_cache_options_init_size((opt), sizeof(zkr_cache_options_t))

/* A cache of `path` (opt NULL: the defaults).  Nothing is read until
 * zkr_cache_start.  Returns ZKR_OK, ZKR_EINVAL (out, c NULL; a path
 * ZooKeeper would refuse: "/" and /zookeeper are fine; an unknown shape;
 * opt->size too small or too large), ZKR_ECLOSED, ZKR_ENOMEM,
 * ZKR_ESYSTEM. */
ZKR_EXTERN int zkr_cache_new(zkr_cache_t **out, zkr_client_t *c, const char *path, const zkr_cache_options_t *opt);

/* The listener (NULL removes it), any time until freed: told the events
 * after the call.  Returns ZKR_OK, ZKR_EINVAL (cache NULL). */
ZKR_EXTERN int zkr_cache_set_listener(zkr_cache_t *cache, zkr_cache_fn fn, void *ctx);
#ifdef ZKR__CHECKS
#define zkr_cache_set_listener(cache, fn, ctx)                                                                   \
    ZKR__CHECKED(fn, zkr_cache_fn,                                                                              \
                 "a cache listener is void fn(zkr_cache_t *cache, const zkr_cache_event_t *event, void *ctx)", \
                 zkr_cache_set_listener(cache, fn, ctx))
#endif

/* Start reading and watching (once; the cache's thread starts).  Returns
 * ZKR_OK, ZKR_EINVAL, ZKR_ESTATE (started before), ZKR_ECLOSED,
 * ZKR_ESYSTEM. */
ZKR_EXTERN int zkr_cache_start(zkr_cache_t *cache);

/* Wait until the first load is done: its events, ZKR_CACHE_INITIALIZED
 * last, are queued for the listener (they may still be running; a
 * listener set after this returns is told none of them).  Returns
 * ZKR_OK (at once if done), ZKR_EINVAL, ZKR_ESTATE (not started),
 * ZKR_ETIMEDOUT, ZKR_ECLOSED (the client closed). */
ZKR_EXTERN int zkr_cache_wait_initialized(zkr_cache_t *cache, int64_t timeout_ms);

/* 1 while the copy is known current: initialized, connected, and not
 * reading again after a reconnection; else 0 (also for NULL). */
ZKR_EXTERN int zkr_cache_is_fresh(zkr_cache_t *cache);

/* The cached node at `path` (the cache's path or below): *node is the
 * caller's (zkr_cache_node_free).  Returns ZKR_OK, ZKR_EINVAL (NULL
 * argument, a path outside the cache; *node NULL), ZKR_ENONODE (not in
 * the copy), ZKR_ENOMEM. */
ZKR_EXTERN int zkr_cache_get(zkr_cache_t *cache, const char *path, zkr_cache_node_t **node);
/* NULL is a no-op. */
ZKR_EXTERN void zkr_cache_node_free(zkr_cache_node_t *node);

/* The names of the cached children of `path`, sorted (bytewise), as one
 * consistent read: *names is the caller's (zkr_strings_free; NULL when
 * *count is 0).  Returns ZKR_OK, ZKR_EINVAL, ZKR_ENONODE (`path` not in
 * the copy: the cache's own path is, for ZKR_CACHE_CHILDREN, while it
 * exists), ZKR_ENOMEM. */
ZKR_EXTERN int zkr_cache_children(zkr_cache_t *cache, const char *path, char ***names, size_t *count);

/* Call fn for `path` (NULL: the cache's path) and every cached node below
 * it, parents before children, siblings in name order, depth 0 for
 * `path`, all from one consistent state of the copy (the copy does not
 * change during the walk: keep fn short; it must not call the cache).  A
 * nonzero return of fn stops the walk.  Returns ZKR_OK (also when
 * stopped), ZKR_EINVAL, ZKR_ENONODE (`path` not in the copy). */
typedef int (*zkr_cache_walk_fn)(const zkr_cache_node_t *node, int depth, void *ctx);
ZKR_EXTERN int zkr_cache_walk(zkr_cache_t *cache, const char *path, zkr_cache_walk_fn fn, void *ctx);

/* How many nodes the copy holds (0 for NULL). */
ZKR_EXTERN size_t zkr_cache_size(zkr_cache_t *cache);

/* Stop and free: after it returns the listener is not running (unless
 * called from it: not allowed, logged, nothing done) and will not run
 * again.  Its watches leave the C client at once (no request: the
 * server's copies go when they fire, to nobody, or with the session).
 * NULL is a no-op. */
ZKR_EXTERN void zkr_cache_free(zkr_cache_t *cache);

/* "CREATED", "CHANGED", "DELETED", "INITIALIZED", "STATE"; "UNKNOWN"
 * otherwise. */
ZKR_EXTERN const char *zkr_cache_event_name(zkr_cache_event_type_t type);

#ifdef __cplusplus
}
#endif
#endif

/* The cache's insides (cache.c: the thread that reads and watches;
 * cache_model.c: the copy, its events and the public reads).  Never
 * installed. */
#ifndef ZKR_CACHE_PRIVATE_H
#define ZKR_CACHE_PRIVATE_H

#include <pthread.h>

#include "recipes/recipes.h"
#include "zkr/cache.h"

/* The longest child name cached (bytes); longer names from the server are
 * left out. */
#define ZKR__CACHE_NAME_MAX 1023

/* What a node needs read (cnode_t.need). */
#define ZKR__NEED_DATA 1u /* its data (or stat) and its own watch */
#define ZKR__NEED_KIDS 2u /* its children, with the children watch */
#define ZKR__NEED_STAT 4u /* its stat, no watch (a name listed again: the
                             same node, or one created again?) */

/* One node of the copy, or one about to be read.  Fields are the cache
 * thread's; name, path, parent, kids, live, st and data change only under
 * the cache's write lock (readers take it to read). */
typedef struct zkr__cnode zkr__cnode_t;
struct zkr__cnode {
    char *name; /* last component ("" for the cache's path) */
    char *path;
    zkr__cnode_t *parent;
    zkr__cnode_t **kids; /* sorted by name (bytewise) */
    size_t nkids, cap;
    int depth;
    int live; /* in the copy: told CREATED (the cache's own path in
                 ZKR_CACHE_CHILDREN: exists, never told) */
    zkr_stat_t st;
    char *data; /* len bytes + NUL; NULL without data */
    size_t len;
    int listed; /* its children were listed (then kids_*) */
    int64_t kids_pzxid;
    int32_t kids_cversion;
    int64_t verify_czxid; /* a read showed this new czxid: applied once its
                             parent is read again and still the same node */
    unsigned need;  /* ZKR__NEED_* to send */
    uint64_t gen;   /* replies to older requests are ignored */
    zkr__cnode_t *dnext, *dprev; /* on the dirty list */
    int dirty;
};

/* An event queued for the listener (node: a copy, or NULL). */
typedef struct zkr__cevent {
    zkr_cache_event_type_t type;
    zkr_cache_node_t *node;
    zkr_state_t state;
    struct zkr__cevent *next;
} zkr__cevent_t;

/* Replies, watch events and states for the cache thread.  Refcounted:
 * requests still out when the cache is freed keep it until answered. */
typedef struct zkr__citem zkr__citem_t;
typedef struct zkr__inbox {
    pthread_mutex_t mu;
    pthread_cond_t cond;
    int refs;
    int dead; /* the cache is gone: replies are dropped */
    zkr__citem_t *head, *tail;
} zkr__inbox_t;

struct zkr_cache {
    zkr_client_t *c;
    char *path;
    zkr_cache_options_t opt;
    pthread_rwlock_t lock; /* the copy */
    zkr__cnode_t *root;
    size_t live;           /* nodes in the copy */
    uint64_t next_gen;
    /* the cache thread's */
    zkr__cnode_t *dirty_head, *dirty_tail;
    long inflight;
    int64_t session;
    int root_seen;         /* the path's own read has come back once */
    /* inbox->mu */
    zkr__inbox_t *in;
    int started, stop, initialized, resyncing, fresh, connected;
    pthread_t thread;
    /* emu: the listener and its queue */
    pthread_mutex_t emu;
    pthread_cond_t econd;
    zkr_cache_fn fn;
    void *ctx;
    zkr__cevent_t *ehead, *etail;
    int in_call;
    pthread_t calling;
    void *sub;     /* watch events and our deliveries, on the callback thread */
    int listening; /* the state listener is registered */
};

/* ---- cache_model.c ---------------------------------------------------------- */

/* A node (not live) named `name` under parent (NULL: the cache's path).
 * NULL on ZKR_ENOMEM. */
zkr__cnode_t *zkr__cnode_new(zkr_cache_t *k, zkr__cnode_t *parent, const char *name);
/* Insert n among its parent's kids (sorted).  Returns ZKR_OK, ZKR_ENOMEM.
 * Write lock held. */
int zkr__cnode_attach(zkr__cnode_t *n);
/* The kid of n named name, or NULL. */
zkr__cnode_t *zkr__cnode_kid(const zkr__cnode_t *n, const char *name);
/* The node at path (in the copy or not), or NULL. */
zkr__cnode_t *zkr__cnode_find(const zkr_cache_t *k, const char *path);
/* Take every live node under n (not n) out of the copy, deepest first,
 * telling DELETED for each, and free them (off the dirty list).  Write
 * lock held. */
void zkr__cnode_drop_kids(zkr_cache_t *k, zkr__cnode_t *n);
/* Take n out of the copy (DELETED if live, after its kids) and, unless it
 * is the cache's path, detach and free it.  Write lock held. */
void zkr__cnode_drop(zkr_cache_t *k, zkr__cnode_t *n);
void zkr__cnode_free_tree(zkr__cnode_t *n);
/* Queue an event (node copied from n; n NULL: none).  Returns ZKR_OK or
 * ZKR_ENOMEM (logged: the event is lost). */
int zkr__cache_tell(zkr_cache_t *k, zkr_cache_event_type_t type, const zkr__cnode_t *n, zkr_state_t state);
/* The dirty list (the cache thread's). */
void zkr__cache_mark(zkr_cache_t *k, zkr__cnode_t *n, unsigned need);
void zkr__cache_unlist(zkr_cache_t *k, zkr__cnode_t *n);
/* Callback thread: tell the queued events. */
void zkr__cache_deliver(zkr_cache_t *k);
void zkr__cache_events_free(zkr_cache_t *k);
void zkr__stat_from(zkr_stat_t *out, const struct Stat *st);

/* ---- cache_apply.c: what comes back, applied to the copy --------------------------- */

/* What the cache thread is handed (replies, watch events, states). */
enum { ZKR__IT_DATA = 1, ZKR__IT_KIDS, ZKR__IT_STAT, ZKR__IT_EXISTS, ZKR__IT_WATCH, ZKR__IT_STATE };
#define ZKR__NEED_EXISTS 8u /* the path is missing: an exists watch on it */
struct zkr__citem {
    int kind;
    int rc;       /* replies: the C client's code */
    uint64_t gen; /* replies: the node's generation when sent */
    char *path;
    int type;     /* IT_WATCH: the event; IT_STATE: the state */
    struct Stat st;
    char *data;
    int len;
    zkr__strvec_t kids;
    zkr__inbox_t *in; /* while the request is out */
    zkr__citem_t *next;
};

/* Its children are cached. */
int zkr__cache_lists(const zkr_cache_t *k, const zkr__cnode_t *n);
/* The read that gives a node's data (or stat): ZKR__IT_DATA, _STAT or
 * _EXISTS (the path without data, or of a ZKR_CACHE_CHILDREN cache). */
int zkr__cache_data_kind(const zkr_cache_t *k, const zkr__cnode_t *n);
/* Everything a node needs read from scratch. */
unsigned zkr__cache_all_needs(const zkr_cache_t *k, const zkr__cnode_t *n);
/* Apply a reply or a watch event (write lock held).  Returns 1 if it was
 * a reply (one read fewer out), else 0; sets *retry if a read failed for
 * want of a connection (it is marked again). */
int zkr__cache_apply(zkr_cache_t *k, const zkr__citem_t *it, int *retry);

#define ZKR__CACHE_DELIVER (-101) /* our own post: tell the queued events */

#endif

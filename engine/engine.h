/* The queue engine (Curator's LockInternals): one mechanism for "create a
 * protected sequential node under a directory, list, sort, decide with a
 * predicate, watch the one node the predicate names, wait until a deadline,
 * and clean up on every exit path".  Every lock kind is a driver on it. */
#ifndef ZKR_ENGINE_H
#define ZKR_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#include "session/core.h"

/* Decide whether the node at index `ours` of the sorted children holds the
 * lock.  Returns 1 (held), 0 (not held: *watch is the index of the one node
 * to data-watch) or a negative ZKR_E... code. */
typedef int (*zkr__decide_fn)(const void *arg, char *const *sorted, size_t n, size_t ours,
                              size_t *watch);

/* How many times a create is sent again (connection or session trouble)
 * before the acquire or named create gives up (ZKR_EZOOKEEPER). */
#define ZKR__CREATE_RETRIES 20

/* The semaphore's lease nodes (Curator's InterProcessSemaphoreV2 "lease-"). */
#define ZKR__LEASE_MARKER "lease-"

typedef struct zkr__driver {
    const char *marker;   /* "lock-", "__READ__", "__WRIT__", "lease-" */
    zkr__key_fn key;      /* sort key (zkr__sort_key or zkr__rw_sort_key) */
    const char *key_marker; /* marker passed to key() */
    zkr__decide_fn decide;
    const void *decide_arg;
    /* 1 if nodes can only ever be added after ours (sequence order, as for
     * the mutex): then the deletion of the first node, when that is the
     * one we watch, means we are next, without listing again.  Not for
     * the read/write lock, whose order is not the creation order. */
    int next_in_line;
} zkr__driver_t;

/* Sort the listing `kids` in place with the driver's key and decide for
 * our node `name`: 1 held; 0 not held (*watch: the index, < kids->n, of
 * the one node to watch); ZKR__DECIDE_GONE if `name` is not listed;
 * ZKR_ENOMEM, ZKR_EZOOKEEPER (a driver naming no node), or the driver's
 * own negative code. */
#define ZKR__DECIDE_GONE 2
struct zkr__driver;
int zkr__queue_decide(const struct zkr__driver *drv, zkr__strvec_t *kids, const char *name, size_t *watch);

/* Sort a listing in place in the driver's (Curator's) order: ZKR_OK or
 * ZKR_ENOMEM. */
int zkr__queue_sort(const struct zkr__driver *drv, zkr__strvec_t *kids);

/* "first `max` in the order hold it; otherwise watch the node `max` places
 * before ours" (StandardLockInternalsDriver).  arg points to an int max. */
int zkr__decide_first_n(const void *arg, char *const *sorted, size_t n, size_t ours,
                        size_t *watch);

/* The ordinary mutex driver: marker "lock-", first node holds it. */
extern const zkr__driver_t zkr__lock_driver;
/* The read/write lock's drivers (rwlock.c), on one axis (strip through the
 * last __READ__, then the last __WRIT__): a writer holds when first; a
 * reader when no writer stands before it, else it watches the first one. */
extern const zkr__driver_t zkr__write_driver;
extern const zkr__driver_t zkr__read_driver;

/* One node we created. */
typedef struct zkr__node {
    char *path;       /* full path (malloc'd), NULL when empty */
    char uuid[ZKR__UUID_LEN + 1];
    int64_t czxid;    /* fencing token */
    int64_t session;  /* the session that owns it */
    zkr__track_t *track; /* set once the node grants a hold */
} zkr__node_t;

/* A lock object's hold listener (zkr__hold_listener_t, session/core.h),
 * set and read under the object's mutex.  Returns ZKR_OK. */
int zkr__hold_listener_set(pthread_mutex_t *mu, zkr__hold_listener_t *l, zkr__hold_listener_t v);
zkr__hold_listener_t zkr__hold_listener_get(pthread_mutex_t *mu, const zkr__hold_listener_t *l);

/* Tests only (never set by the library): called between "the node holds
 * the lock" and the hold's first state, where a connection can drop. */
extern void (*zkr__test_grant_pause)(zkr_client_t *c);

/* Start telling whether the hold this node grants is safe (hl may name
 * nobody).  Returns ZKR_OK or ZKR_EINVAL (the node is not tracked). */
int zkr__node_track(zkr_client_t *c, zkr__node_t *node, zkr__hold_listener_t hl);
/* The hold's state (ZKR_HOLD_NONE if not tracked). */
zkr_hold_state_t zkr__node_hold_state(zkr_client_t *c, const zkr__node_t *node);

/* Create the node "<dir>/<name>" (a caller-chosen name, unique by
 * construction) with `mode`, making missing parents as containers; after a
 * lost reply the node is kept only if our session made it.  Tracked.
 * Returns ZKR_OK, ZKR_ETIMEDOUT, ZKR_ECLOSED, ZKR_ENOMEM, ZKR_ENOAUTH,
 * ZKR_ENODEEXISTS, ZKR_EZOOKEEPER.  On failure nothing is left behind (or
 * its deletion is scheduled). */
int zkr__node_create_named(zkr_client_t *c, const char *dir, const char *name, int mode, int64_t deadline,
                           zkr__node_t *out);

/* Delete our node (version -1; ZNONODE is success) and stop tracking it.
 * If it cannot be done now, it is done in the background.  Returns ZKR_OK,
 * or ZKR_ELOST if the hold had been lost (its session is gone; the node is
 * deleted anyway if it still exists). */
int zkr__node_delete(zkr_client_t *c, zkr__node_t *node);

/* The same, without waiting for the answer: the delete is sent now (in
 * order on the session) and its answer settled in the background. */
void zkr__node_delete_nowait(zkr_client_t *c, zkr__node_t *node);

/* A protected create whose reply was lost and that nobody will look for
 * any more: whatever it made (a child of dir named "_c_<uuid>-...") is
 * deleted in the background, on `session`'s behalf. */
void zkr__lost_create_delete_later(zkr_client_t *c, const char *dir, const char *uuid, int64_t session);

void zkr__node_clear(zkr__node_t *node);

/* The same as zkr__node_delete, without waiting: done(c, rc, arg) runs
 * exactly once with what zkr__node_delete would have returned (ZKR_OK,
 * ZKR_ELOST, or the server's refusal), on ZooKeeper's completion thread
 * or on the calling thread (if nothing could be sent), with no lock of
 * ours held.  An answer that does not come is settled in the background,
 * as a blocking release's not answered in time. */
typedef void (*zkr__delete_done_fn)(zkr_client_t *c, int rc, void *arg);
void zkr__node_delete_cb(zkr_client_t *c, zkr__node_t *node, zkr__delete_done_fn done, void *arg);

/* Deletes awaited together: between begin and end, zkr__node_delete on
 * this thread sends its delete and returns at once (ZKR_OK or ZKR_ELOST);
 * end waits for every answer (ZKR_RELEASE_WAIT_MS in all) and returns
 * ZKR_OK or the first refusal (ZKR_ENOAUTH, ZKR_EZOOKEEPER: the node stays
 * until its session ends, and is logged).  Answers that do not come in
 * time are settled in the background. */
void zkr__deletes_defer_begin(void);
int zkr__deletes_defer_end(void);
/* The same, the answers awaited until `by` at the most. */
int zkr__deletes_defer_end_by(int64_t by);
/* The roll-back of a failed acquire (the multi-lock's parts, a
 * semaphore's leases): the answers awaited within the call's time limit
 * (its deadline and the grace), and at least a round trip's grace, so
 * that a try that failed leaves nothing behind on a working link; then in
 * the background. */
int zkr__deletes_defer_end_within(int64_t deadline);

/* A node created ahead of its acquire, so that the multi-lock sends the
 * creates (and listings) of all its parts at once.  start_all sends them
 * (a NULL prefetch where it cannot now: the acquire then creates its node
 * the usual way); finish waits and returns 1 if the node holds the lock by its listing, 0
 * if it exists but does not (or was not listed), -1 if there is none.
 * offer(p) makes the calling thread's next zkr__queue_acquire on the same
 * client, directory and driver take p's node instead of creating one
 * (offer(NULL) withdraws it).  free deletes the node if nobody took it. */
typedef struct zkr__prefetch zkr__prefetch_t;
/* Prefetches for n targets at once (out[i] NULL where t[i].c is NULL or
 * nothing can be sent): the creates of targets on one client go out as
 * one multi (one transaction on the server), each listing right behind
 * it. */
typedef struct zkr__prefetch_target {
    zkr_client_t *c; /* NULL: no prefetch for this one */
    const char *dir;
    const zkr__driver_t *drv;
} zkr__prefetch_target_t;
void zkr__prefetch_start_all(const zkr__prefetch_target_t *t, size_t n, zkr__prefetch_t **out);
int zkr__prefetch_finish(zkr__prefetch_t *p, int64_t deadline);
void zkr__prefetch_offer(zkr__prefetch_t *p);
void zkr__prefetch_free(zkr__prefetch_t *p);

/* What became of an offered create that left no node to take. */
typedef struct zkr__prefetch_miss {
    int dir_missing;  /* it found no directory: make it first */
    int reply_lost;   /* its reply was lost: the node may exist; look for it
                         by the prefix of `uuid`, made on `session` (the
                         acquire's recovery: the one lost-reply policy) */
    char uuid[ZKR__UUID_LEN + 1];
    int64_t session;
} zkr__prefetch_miss_t;
/* The node offered (zkr__prefetch_offer) for this very queue, if any: 1 if
 * taken (the caller owns *out and *kids), else 0 (*miss says why, when an
 * offered create was there: the caller then owns what it says). */
int zkr__prefetch_take_offered(zkr_client_t *c, const char *dir, const zkr__driver_t *drv, zkr__node_t *out,
                               zkr__strvec_t *kids, zkr__prefetch_miss_t *miss);

/* A listing's answer copied into *out (empty unless zrc is ZOK): zrc, or
 * ZSYSTEMERROR if the copy ran out of memory (a failed listing). */
int zkr__listing_copy(int zrc, const struct String_vector *sv, zkr__strvec_t *out);

/* The one synchronous listing: dir's children on zh (with the watch w if
 * not NULL), copied and sorted in the driver's order into *out.  Returns
 * ZKR_OK, ZKR_ENONODE (dir is missing; *out empty), ZKR_ENOMEM, or the
 * refusal (zkr__zk_error); *zrc, if not NULL, gets the listing's
 * ZooKeeper code. */
int zkr__queue_list(zhandle_t *zh, const char *dir, watcher_fn w, void *wctx, const zkr__driver_t *drv,
                    zkr__strvec_t *out, int *zrc);

/* The sorted children of dir as full paths.  Missing dir -> empty list.
 * Returns ZKR_OK, ZKR_ECONNLOSS, ZKR_ESESSIONLOST, ZKR_ECLOSED, ZKR_ENOMEM. */
int zkr__queue_participants(zkr_client_t *c, const char *dir, const zkr__driver_t *drv,
                            zkr__strvec_t *out);

/* The public form of zkr__queue_participants: validates the output
 * arguments, enters the client, hands out a char** to free with
 * zkr_strings_free. */
int zkr__participants(zkr_client_t *c, const char *dir, const zkr__driver_t *drv, char ***paths,
                      size_t *count);

/* ---- inside the engine only (node.c's create, used by prefetch.c) ---- */

/* A create and the listing behind it, waited for by a caller with a
 * deadline.  The completions signal the caller through the op's own mutex
 * (no client-wide lock on this path).  A caller that gives up at its
 * deadline leaves the op to its completions: the last one deletes what
 * the create made (our node, or by its protected prefix after a lost
 * reply: the same policy as an acquire's) and frees it. */
typedef struct zkr__create_op zkr__create_op_t;
struct zkr__create_op {
    zkr__req_t req;   /* first: registered on its handle while a direct
                         create is in flight (the handle's close answers it) */
    zkr_client_t *c;
    char *path;       /* what was asked for (a sequential node's prefix) */
    char *dir;
    int mode;
    int64_t session;  /* the session it goes out on */
    pthread_mutex_t mu;
    pthread_cond_t cond;
    int pending;
    int abandoned;    /* mu: its caller gave up */
    int create_rc;
    char *created;
    struct Stat stat;
    int list_rc;
    zkr__strvec_t children;
    zkr__zcreate_t z; /* when sent through the handle's combiner */
};

/* A new op for `path` in `dir` (copied) on `session`, nothing sent: NULL
 * on ZKR_ENOMEM. */
zkr__create_op_t *zkr__create_op_new(zkr_client_t *c, const char *path, const char *dir, int mode, int64_t session);
/* Make op ready for the handle's combiner (op->z), counting the create and
 * its listing as pending (an EPHEMERAL_SEQUENTIAL node without data). */
void zkr__create_op_combine(zkr__create_op_t *op);
/* Send op's create on h, and the listing of its dir right behind it if
 * `list`.  Wait with zkr__create_wait, whatever happened. */
void zkr__create_send(zkr__zh_t *h, zkr__create_op_t *op, const char *data, int datalen, int list);
/* Wait for every answer op is owed, until `deadline`: 1 if they came (the
 * caller frees op with zkr__create_op_free), 0 if the deadline passed
 * first (op is the completions' from now on: never touch it again). */
int zkr__create_wait(zkr__zh_t *h, zkr__create_op_t *op, int64_t deadline);
void zkr__create_op_free(zkr__create_op_t *op);
/* Nobody takes what op's create made (every answer is in): delete it, as
 * an acquire does with what a late answer made (our node; a lost reply's
 * by its protected prefix, a named node by its name), and free op. */
void zkr__create_op_forget(zkr__create_op_t *op);
/* 1 if op's create was answered with a lost reply (the node may exist). */
int zkr__create_op_reply_lost(const zkr__create_op_t *op);

/* How long past its deadline an acquire with requests in flight waits for
 * their answers before it ends anyway (ZKR_ETIMEDOUT; what they made is
 * deleted when they are answered).  A timeout of 0 ("try once") is a
 * round trip's chance: on a working link the answers are in long before;
 * on a stalled one the call returns within timeout + this. */
#define ZKR__DEADLINE_GRACE_MS 100
/* deadline + ZKR__DEADLINE_GRACE_MS (INT64_MAX stays). */
static inline int64_t zkr__hard_deadline(int64_t deadline)
{
    return deadline > INT64_MAX - ZKR__DEADLINE_GRACE_MS ? INT64_MAX : deadline + ZKR__DEADLINE_GRACE_MS;
}

#endif

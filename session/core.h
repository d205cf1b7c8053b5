/* The session core as the layers above see it (engine/, recipes/): handles
 * and their requests, the combiners, tracked holds, background
 * deletes, subscriptions, lifetimes, and the hooks through which the core
 * calls up without naming anything above it.  Never installed. */
#ifndef ZKR_CORE_H
#define ZKR_CORE_H

#include <pthread.h>
#include <stdint.h>
#include <zookeeper/zookeeper.h>

#include "zkr/client.h"
#include "zkr/semaphore.h"
#include "util/util.h"

/* A ZooKeeper handle with a use count.  A recipe takes a reference for as
 * long as it has requests outstanding on the handle; the client closes a
 * replaced handle only when its last reference is gone. */
typedef struct zkr__zh zkr__zh_t;

/* Map a ZooKeeper return code to a ZKR_E... code. */
int zkr__zk_error(int zrc);

/* What a ZooKeeper return code says about the request's fate.  ZooKeeper's
 * codes are an enum (ZOO_ERRORS), compared with if, not case. */
typedef enum zkr__zk_class {
    ZKR__ZC_OK = 0,      /* ZOK */
    ZKR__ZC_CONNECTION,  /* the connection failed under it: fate unknown,
                            the session may live on (ZCONNECTIONLOSS,
                            ZOPERATIONTIMEOUT, and ZRUNTIMEINCONSISTENCY:
                            an unexpected reply, after which the C client
                            drops the connection) */
    ZKR__ZC_SESSION,     /* the session is gone or the handle is closing */
    ZKR__ZC_FINAL        /* the server's answer: it will not change by
                            retrying the same request (ZNONODE, ZNOAUTH, ...) */
} zkr__zk_class_t;
zkr__zk_class_t zkr__zk_class(int zrc);

/* Every answer to a request on a client's handle passes through here
 * (returns zrc unchanged).  "Session expired" or "session moved" means the
 * server no longer counts this connection as the session's: the C client
 * may keep the connection up and never say so (a session closed through
 * another connection to the same server), so the client declares the
 * session LOST at once and builds a new one. */
int zkr__zh_answer(zhandle_t *zh, int zrc);

/* ---- the layer above: what the core calls without naming it --------------
 *
 * The core never calls a function of a higher layer by name.  The engine's
 * asynchronous acquires register this table (once per client, on first
 * use); the client thread and zkr_client_close call through it. */
typedef struct zkr__hooks {
    /* Client thread, c->mu held (may drop it): step what has news, end what
     * is past its deadline; returns the next time it is due. */
    int64_t (*run_relocking)(zkr_client_t *c);
    /* c->mu held: 1 if run_relocking has work now. */
    int (*pending_locked)(const zkr_client_t *c);
    /* Callback thread, c->mu held (dropped around the call): deliver one
     * ended acquire or release whose completion runs there; 1 if it did. */
    int (*deliver_relocking)(zkr_client_t *c);
    /* c->mu held: 1 if deliver_relocking has work now. */
    int (*deliver_pending_locked)(const zkr_client_t *c);
    /* Client thread, c->mu held: state s happened (applied to the holds;
     * the listeners hear of it on the callback thread). */
    void (*state_locked)(zkr_client_t *c, zkr_state_t s);
    /* zkr_client_close, after the handles are closed (no lock held): end
     * everything still pending and run its completions. */
    void (*close)(zkr_client_t *c);
    /* The client's memory is being freed. */
    void (*free)(zkr_client_t *c);
    /* 1 if the calling thread is inside a completion of c's. */
    int (*in_dispatch)(const zkr_client_t *c);
    /* c->mu held: zkr_client_close has begun; whatever a blocked caller
     * waits for must end so that the caller leaves. */
    void (*closing_locked)(zkr_client_t *c);
    /* c->mu held: the node a waiter registered with zkr__track_set_waiter
     * was deleted by someone else; wake waiter `id`. */
    void (*wake_id_locked)(zkr_client_t *c, uint64_t id);
} zkr__hooks_t;
/* Register the layer above's hooks (the first registration stays). */
void zkr__client_set_hooks(zkr_client_t *c, const zkr__hooks_t *hooks);

/* ---- lifetime ----------------------------------------------------------- */

/* Every lock object and lease holds the client: its memory outlives
 * zkr_client_close until the last of them is freed, so freeing or
 * releasing one after (or while) the client closes is safe.  retain fails
 * with ZKR_ECLOSED once the client is closing. */
int zkr__client_retain(zkr_client_t *c);
/* 1 if the calling thread is one of the client's own: the callback thread
 * (listeners, hold listeners, subscriptions, completions run there: it
 * must never wait for itself) or the client thread. */
int zkr__client_on_own_thread(const zkr_client_t *c);
void zkr__client_release(zkr_client_t *c);

/* The library's own messages (ZKR_LOG_*), to the client's log callback or
 * stderr (log.c).  c may be NULL.  May be called with c->mu held: a log
 * callback must not call into the library. */
void zkr__log(zkr_client_t *c, int level, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Mark the calling thread as inside a blocking call on `c`, so that
 * zkr_client_close waits for it.  ZKR_ECLOSED if the client is closing. */
int zkr__client_enter(zkr_client_t *c);
void zkr__client_leave(zkr_client_t *c);

/* Take / drop a reference to the current handle (valid even while
 * disconnected).  ZKR_ECLOSED if closing. */
int zkr__client_get_handle(zkr_client_t *c, zkr__zh_t **h);
void zkr__client_put_handle(zkr_client_t *c, zkr__zh_t *h);
zhandle_t *zkr__zh(const zkr__zh_t *h);

/* A request sent without anyone waiting for it: its completion frees its
 * context.  The C client does not always run the completions still
 * pending when a handle is closed (its completion thread may stop before
 * it gets to them), so such a request is registered on its handle from
 * just before it is sent until its completion runs; zkr__handle_close
 * runs `closing` (which must run the completion with ZCLOSING) for each
 * one left once the C client's threads are gone.  `closing` gets the
 * zkr__req_t: put it first in the context, so that it is the context
 * (async.c, whose acquires keep one for all their requests, uses
 * offsetof). */
typedef struct zkr__req zkr__req_t;
struct zkr__req {
    zkr__req_t *prev, *next;
    zkr__zh_t *h; /* NULL once answered (or never registered) */
    void (*closing)(zkr__req_t *r);
};
/* Register r on h; call it before the request is sent, since the
 * completion may run before the send returns. */
void zkr__req_start(zkr__zh_t *h, zkr__req_t *r, void (*closing)(zkr__req_t *r));
/* First thing in the completion, and when the send fails. */
void zkr__req_end(zkr__req_t *r);
/* How long closing a connected handle waits for the answers to its
 * registered requests before it closes anyway. */
#define ZKR__CLOSE_DRAIN_MS 1000
/* Requests registered and not yet answered, over every handle (tests). */
long zkr__reqs_live(void);
/* Threads closing retired handles not yet joined (tests). */
int zkr__session_closers(zkr_client_t *c);

/* The combiners' queues (combine.c): a link first in each request. */
typedef struct zkr__qlink {
    struct zkr__qlink *next;
} zkr__qlink_t;
typedef struct zkr__queue {
    zkr__qlink_t *head, *tail;
    int inflight; /* one of its batches is in flight */
} zkr__queue_t;

/* A delete through its handle's combiner (combine.c). */
typedef struct zkr__zdel zkr__zdel_t;
struct zkr__zdel {
    zkr__qlink_t link; /* first: the combiner's */
    const char *path;  /* valid until done runs */
    /* Exactly once, with the delete's answer: on the C client's completion
     * thread, on the caller's if nothing could be sent, or by the handle's
     * close (ZCLOSING). */
    void (*done)(zkr__zdel_t *d, int rc);
};
/* Delete d->path (any version) on h.  If one of h's deletes is in flight,
 * d waits and goes out with every other delete that came meanwhile, as
 * one multi (one transaction), when that one is answered; a multi refused
 * as a whole (a node already gone fails it) is sent again one delete at a
 * time, so each gets its own answer.  Registered on h while in flight. */
void zkr__zh_delete(zkr__zh_t *h, zkr__zdel_t *d);
/* The deletes of list (linked through link) as one multi now, whatever is
 * in flight (the multi-lock's release); a refused multi is sent again one
 * delete at a time. */
void zkr__zh_delete_group(zkr__zh_t *h, zkr__zdel_t *list);

/* A create (EPHEMERAL_SEQUENTIAL, with the node data `value`, value_len
 * bytes: none when NULL) with its directory listed after it, through its
 * handle's combiner (combine.c).  `created` and `listed` each run exactly
 * once, as zoo_acreate2's and zoo_aget_children's completions would (with
 * `data`), also when nothing could be sent. */
typedef struct zkr__zcreate zkr__zcreate_t;
struct zkr__zcreate {
    zkr__qlink_t link;    /* first: the combiner's */
    const char *path;     /* valid until both have run */
    const char *dir;
    const struct ACL_vector *acl;
    string_stat_completion_t created;
    strings_completion_t listed;
    const void *data;
    const char *value; /* the node's data, valid until `created` has run */
    int value_len;
};
/* If one of h's batches of creates is in flight, z waits and goes out with
 * every other create that came meanwhile (one per directory), as one
 * multi, when that one is answered; else at once, its listing right
 * behind it.  A multi's creates share one czxid (the fencing token),
 * asked for with one exists after the answer, the listings sent before
 * it; a multi refused as a whole (a directory missing) is sent again one
 * create at a time. */
void zkr__zh_create(zkr__zh_t *h, zkr__zcreate_t *z);
/* The creates of list (distinct directories) as one multi now, whatever
 * is in flight, each listing right behind it (the multi-lock's parts: one
 * round trip); a refused multi answers every create with the refusal. */
void zkr__zh_create_group(zkr__zh_t *h, zkr__zcreate_t *list);

/* An answer the sending thread waits for a while (or not at all): put it
 * first in the request's context.  If the sender stops waiting, the
 * completion settles the answer and frees the context. */
typedef struct zkr__awaited {
    zkr__req_t req; /* first: registered on the handle while in flight */
    pthread_mutex_t mu;
    pthread_cond_t cond;
    int done, abandoned, rc;
} zkr__awaited_t;
/* 0, or -1 (nothing made). */
int zkr__awaited_init(zkr__awaited_t *a);
void zkr__awaited_destroy(zkr__awaited_t *a);
/* In the completion: record rc, wake the sender.  Returns 1 if the
 * sender has stopped waiting (the completion must settle and free). */
int zkr__awaited_answer(zkr__awaited_t *a, int rc);
/* Wait until the deadline: 1 with a->rc (the caller frees), or 0: given
 * up, the completion settles it. */
int zkr__awaited_wait(zkr__awaited_t *a, int64_t deadline);

/* Is `path` there (and whose is it: *st)?  The server's answer (through
 * zkr__zh_answer), or ZOPERATIONTIMEOUT if none came by the deadline (the
 * request is left to its completion, which frees it). */
int zkr__zh_exists_until(zkr__zh_t *h, const char *path, int64_t deadline, struct Stat *st);

/* The session the handle is (or was last) connected with; 0 if none yet. */
int64_t zkr__zh_session(zkr_client_t *c, const zkr__zh_t *h);
/* 1 if `h` is the current handle and connected (CONNECTED/RECONNECTED). */
int zkr__zh_usable(zkr_client_t *c, const zkr__zh_t *h);

/* Wait until the client is connected, the deadline passes (ZKR_ETIMEDOUT)
 * or it closes (ZKR_ECLOSED). */
int zkr__client_wait_usable(zkr_client_t *c, int64_t deadline);

/* Like zkr__client_wait_usable, for work that belongs to one session:
 * returns ZKR_ESESSIONLOST at once when that session is LOST or replaced. */
int zkr__client_wait_session(zkr_client_t *c, int64_t session, int64_t deadline);

/* ---- tracked holds: the client tells each hold whether it is still safe -- */

typedef struct zkr__track zkr__track_t;

/* Who is told about a hold: a lock's listener (fn, told `lock`), a
 * semaphore's (lease_fn, told `sem`), or nobody (both NULL).  owner is the
 * object whose *_free turns it off (zkr__tracks_forget). */
typedef struct zkr__hold_listener {
    zkr_hold_fn fn;
    zkr_lease_fn lease_fn;
    void *ctx;
    zkr_lock_ref_t lock;
    zkr_semaphore_t *sem;
    const void *owner;
} zkr__hold_listener_t;

/* Track the node at `path` that `session` just created; `waiter` (or 0) is
 * woken if someone else is seen deleting it (see zkr__track_set_waiter).
 * A node that holds, or is next in line (granted on its predecessor's
 * deletion, without another listing), gets one data watch of its own
 * session ZKR__SELF_WATCH_DELAY_MS after that began (set by the client
 * thread), which tells if anyone else deletes it; a deletion sooner than
 * that is seen when the watch is set (the server answers "no node").
 * A lock taken and released within the delay, the common case, costs no
 * request for it.  A node further back in line (granted only on a
 * listing, which shows it) is watched once it has waited
 * ZKR__WAITER_WATCH_DELAY_MS: a long wait costs one request, a short one
 * none.  The watch is never
 * removed: our own delete fires it, to our session alone.
 * Returns ZKR_OK, ZKR_ENOMEM. */
#define ZKR__SELF_WATCH_DELAY_MS 20
#define ZKR__WAITER_WATCH_DELAY_MS 2000
int zkr__track_add(zkr_client_t *c, const char *path, int64_t session, uint64_t waiter, zkr__track_t **out);
/* The node grants a hold: it starts SAFE if the client is connected on its
 * session now, IN_DOUBT if disconnected, LOST if the session or the node is
 * gone; the listener is told at once if it does not start SAFE (an acquire
 * that returned ZKR_OK implies SAFE).  fn may be NULL (poll only): such a
 * hold changes state exactly like the others. */
void zkr__track_grant(zkr_client_t *c, zkr__track_t *t, zkr__hold_listener_t hl);
/* The object `owner` is being freed: holds whose listener it set tell
 * nothing more; after it returns no such listener is running (unless
 * called from one).  NULL is a no-op. */
void zkr__tracks_forget(zkr_client_t *c, const void *owner);
/* The node is next in line: it will be granted when the one node before it
 * goes, without a listing; it gets its self watch (above).  c->mu held.
 * NULL: no-op. */
void zkr__track_next_in_line_locked(zkr_client_t *c, zkr__track_t *t);
/* The waiter (an id the hooks' wake_id_locked knows) to wake if someone
 * else deletes the node; 0 for none. */
void zkr__track_set_waiter(zkr_client_t *c, zkr__track_t *t, uint64_t waiter);
/* Mark the node as deleted by someone else (a listing on its live session
 * no longer shows it). */
void zkr__track_mark_deleted(zkr_client_t *c, zkr__track_t *t);
zkr_hold_state_t zkr__track_state(zkr_client_t *c, const zkr__track_t *t);
/* Stop tracking; after it returns fn is not running (unless called from fn)
 * and will not run again.  Returns the last state (ZKR_HOLD_LOST also for
 * a node deleted by someone else).  NULL is a no-op. */
zkr_hold_state_t zkr__track_remove(zkr_client_t *c, zkr__track_t *t);

/* ---- background deletes -------------------------------------------------- */

/* Delete `path` (version -1) in the background until it succeeds or the
 * node is gone.  Entries are kept across sessions (every path carries a
 * unique protected uuid, so a late delete is always safe, and a session
 * declared LOST by timeout may still be alive on the server).  Errors of
 * the connection or session are retried without limit; any other error
 * (ZNOAUTH, ...) ZKR__DELETE_MAX_FAILURES times with backoff, then the
 * delete is given up and logged.  Used for every node that an abandoned or
 * released hold could otherwise leave behind. */
void zkr__client_delete_later(zkr_client_t *c, const char *path, int64_t session_id);
/* The same for a node at a path that is not ours alone (a plain path, a
 * persistent node): deleted only while it is the node we made, czxid (or,
 * czxid 0, an ephemeral node of session `owner`): an exists, then a delete
 * with the version it read (written meanwhile: looked at again).  Kept
 * across sessions (a persistent node outlives them), until done, another
 * node is there, or the client closes.  Both 0: nothing is done. */
void zkr__client_delete_owned_later(zkr_client_t *c, const char *path, int64_t czxid, int64_t owner,
                                    int64_t session_id);
/* The same for every child of `dir` whose name starts with `prefix` (a
 * protected "_c_<uuid>-" prefix whose create reply was lost). */
void zkr__client_delete_prefix_later(zkr_client_t *c, const char *dir, const char *prefix,
                                     int64_t session_id);
#define ZKR__DELETE_MAX_FAILURES 6
/* Background deletes not yet done, and deletes given up since open. */
int zkr__client_pending_deletes(zkr_client_t *c);
int zkr__client_abandoned_deletes(zkr_client_t *c);

/* ---- subscriptions: watches whose events run a callback on the client
 * thread (revocation).  The watch context is the id, so a watch that fires
 * after zkr__sub_remove is ignored. ---------------------------------------- */

typedef void (*zkr__sub_fn)(zkr_client_t *c, void *arg, int type, const char *path);

/* Register fn(arg); *ctx is the watch context to pass with zkr__sub_watcher().
 * Returns ZKR_OK, ZKR_ENOMEM. */
int zkr__sub_add(zkr_client_t *c, zkr__sub_fn fn, void *arg, void **ctx);
/* After it returns fn is not running (unless called from fn itself) and
 * will not run again for this subscription. */
void zkr__sub_remove(zkr_client_t *c, void *ctx);
watcher_fn zkr__sub_watcher(void);
/* Queue an event of `type` for the subscription, as its watch would (from
 * a completion: the event runs on the client thread). */
void zkr__sub_post(zkr_client_t *c, void *ctx, int type, const char *path);

/* The ACL of every node the recipes create (the client's option). */
const struct ACL_vector *zkr__client_acl(const zkr_client_t *c);

/* Parents as containers, the one rule for both ways of making them: every
 * ancestor of `path` and `path` itself ("/a/b": "/a", then "/a/b"), root
 * side first, each made by create(ctx, p, acl, mode) with empty data, the
 * client's ACL and mode CONTAINER.  The walk stops at the first create
 * that returns nonzero, and returns that; ZKR_ENOMEM if it cannot start. */
typedef int (*zkr__parent_fn)(void *ctx, const char *p, const struct ACL_vector *acl, int mode);
int zkr__parents_each(zkr_client_t *c, const char *path, zkr__parent_fn create, void *ctx);

/* Create `path` and any missing ancestors (zkr__parents_each), waiting
 * for each.  ZNODEEXISTS is success. */
int zkr__ensure_path(zkr_client_t *c, zhandle_t *zh, const char *path);

#endif

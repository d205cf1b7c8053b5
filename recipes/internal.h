/* Internal interface between the client and the recipes.  Never installed. */
#ifndef ZKR_INTERNAL_H
#define ZKR_INTERNAL_H

#include <pthread.h>
#include <stdint.h>
#include <zookeeper/zookeeper.h>

#include "zkr/client.h"
#include "util/util.h"

/* A ZooKeeper handle with a use count.  A recipe takes a reference for as
 * long as it has requests outstanding on the handle; the client closes a
 * replaced handle only when its last reference is gone. */
typedef struct zkr__zh zkr__zh_t;

/* Map a ZooKeeper return code to a ZKR_E... code. */
int zkr__zk_error(int zrc);

/* Every answer to a request on a client's handle passes through here
 * (returns zrc unchanged).  "Session expired" or "session moved" means the
 * server no longer counts this connection as the session's: the C client
 * may keep the connection up and never say so (a session closed through
 * another connection to the same server), so the client declares the
 * session LOST at once and builds a new one. */
int zkr__zh_answer(zhandle_t *zh, int zrc);

/* Mark the calling thread as inside a blocking call on `c`, so that
 * zkr_client_close waits for it.  ZKR_ECLOSED if the client is closing. */
int zkr__client_enter(zkr_client_t *c);
void zkr__client_leave(zkr_client_t *c);

/* Take / drop a reference to the current handle (valid even while
 * disconnected).  ZKR_ECLOSED if closing. */
int zkr__client_get_handle(zkr_client_t *c, zkr__zh_t **h);
void zkr__client_put_handle(zkr_client_t *c, zkr__zh_t *h);
zhandle_t *zkr__zh(const zkr__zh_t *h);

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

/* Track the hold whose node is `path`, created by `session`.  State starts
 * SAFE (IN_DOUBT if the client is not connected now).  fn may be NULL (poll
 * only).  Returns ZKR_OK or ZKR_ENOMEM. */
int zkr__track_add(zkr_client_t *c, const char *path, int64_t session, zkr_hold_fn fn, void *ctx,
                   zkr__track_t **out);
zkr_hold_state_t zkr__track_state(zkr_client_t *c, const zkr__track_t *t);
/* Stop tracking; after it returns fn is not running (unless called from fn)
 * and will not run again.  Returns the last state.  NULL is a no-op. */
zkr_hold_state_t zkr__track_remove(zkr_client_t *c, zkr__track_t *t);

/* The client's mutex: waiters and async completions synchronise on it. */
pthread_mutex_t *zkr__client_mutex(zkr_client_t *c);
/* Caller holds the client mutex. */
int zkr__client_closing_locked(const zkr_client_t *c);

/* ---- waiters: one per blocked caller, woken only by its own watch or by a
 * session event ----------------------------------------------------------- */

#define ZKR__WAKE_WATCH   1u  /* its own watch fired */
#define ZKR__WAKE_SESSION 2u  /* a session event (state change) */
#define ZKR__WAKE_CLOSE   4u  /* the client is closing */
#define ZKR__WAKE_OTHER   8u  /* explicit wake (zkr__waiter_wake) */

typedef struct zkr__waiter {
    uint64_t id;
    pthread_cond_t cond;
    unsigned events; /* ZKR__WAKE_* bits, under the client mutex */
    struct zkr__waiter *next;
} zkr__waiter_t;

int zkr__waiter_init(zkr_client_t *c, zkr__waiter_t *w);
void zkr__waiter_destroy(zkr_client_t *c, zkr__waiter_t *w);
/* Watcher function and context to register a watch that wakes `w`.  The
 * context is an id, not a pointer: a watch that fires after its waiter has
 * gone is ignored safely. */
watcher_fn zkr__waiter_watcher(void);
void *zkr__waiter_ctx(const zkr__waiter_t *w);
/* Wait (client mutex held by the caller) until an event bit is set or the
 * deadline passes; returns and clears the bits (0 on timeout). */
unsigned zkr__waiter_wait_locked(zkr_client_t *c, zkr__waiter_t *w, int64_t deadline);
void zkr__waiter_wake(zkr_client_t *c, zkr__waiter_t *w);

/* ---- background work ------------------------------------------------------ */

/* Delete `path` (version -1) in the background until it succeeds, the node
 * is gone, or session `session_id` is gone.  Used for every node that an
 * abandoned or released hold could otherwise leave behind. */
void zkr__client_delete_later(zkr_client_t *c, const char *path, int64_t session_id);
/* Delete, in the background, every child of `dir` whose name starts with
 * `prefix` (a protected "_c_<uuid>-" prefix whose create reply was lost). */
void zkr__client_delete_prefix_later(zkr_client_t *c, const char *dir, const char *prefix,
                                     int64_t session_id);
/* Number of background deletes not yet done (tests). */
int zkr__client_pending_deletes(zkr_client_t *c);

/* Run fn(arg) on the client's own thread (where listeners run). */
int zkr__client_post(zkr_client_t *c, void (*fn)(void *), void *arg);

/* ---- subscriptions: watches whose events run a callback on the client
 * thread (revocation, shared counts).  The watch context is the id, so a
 * watch that fires after zkr__sub_remove is ignored. ----------------------- */

typedef void (*zkr__sub_fn)(zkr_client_t *c, void *arg, int type, const char *path);

/* Register fn(arg); *id is the watch context to pass with zkr__sub_watcher(). */
int zkr__sub_add(zkr_client_t *c, zkr__sub_fn fn, void *arg, void **ctx);
/* After it returns fn is not running (unless called from fn itself) and
 * will not run again for this subscription. */
void zkr__sub_remove(zkr_client_t *c, void *ctx);
watcher_fn zkr__sub_watcher(void);

/* Internal state listeners, called on the client's thread right after the
 * public ones see the same state. */
int zkr__client_add_hook(zkr_client_t *c, zkr_state_fn fn, void *ctx);
int zkr__client_remove_hook(zkr_client_t *c, zkr_state_fn fn, void *ctx);

/* Create `path` and any missing ancestors as CONTAINER nodes with empty
 * data and the open ACL.  ZNODEEXISTS is success. */
int zkr__ensure_path(zhandle_t *zh, const char *path);

#endif

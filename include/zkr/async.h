/* Asynchronous acquire, for event-driven programs: start an acquire on any
 * lock kind (through zkr_lock_ref_t) or a semaphore lease, get a handle
 * (an id) at once, and have a completion function called later with the
 * same codes the blocking call returns.  Waiting costs no thread: the
 * acquire is a state machine driven by ZooKeeper's answers and watches and
 * by the client's callback thread (deadlines, session events).
 *
 * Where completions run (zkr_client_set_dispatch):
 *   ZKR_DISPATCH_LOOP (the default): on the thread that calls
 *     zkr_client_dispatch, typically the program's event loop, woken by
 *     zkr_client_fd becoming readable (the c-ares / libcurl-multi model):
 *
 *       struct pollfd p = {zkr_client_fd(c), POLLIN, 0};
 *       while (poll(&p, 1, -1) >= 0)
 *           zkr_client_dispatch(c);   // runs the pending completions here
 *
 *   ZKR_DISPATCH_THREAD: on the client's callback thread (like
 *     listeners, in order with them: see zkr/client.h), for programs
 *     without a loop.  A completion may block there: it delays only the
 *     callbacks after it.
 * Completions never run inside zkr_*_acquire_async itself, never on
 * ZooKeeper's threads, and each runs exactly once for every acquire that
 * was started (zkr_*_acquire_async returned ZKR_OK).
 *
 * Holds granted asynchronously (zkr_hold_t, zkr_lease_t) belong to no
 * thread: they are not reentrant, do not show in the lock object's
 * per-thread queries (zkr_mutex_is_held, zkr_lock_fencing_token, ...) and
 * may be released once, from any thread: zkr_hold_release and
 * zkr_lease_release wait for the delete's answer (one round trip, bounded by
 * ZKR_RELEASE_WAIT_MS), zkr_hold_release_async and zkr_lease_release_async
 * return at once and deliver the same answer as a completion, like an
 * acquire's (an event loop never waits on the network).  An asynchronous acquire queues like any other contender (FIFO
 * with every process's acquires), also behind a hold of the same object
 * taken by a blocking call: it never re-enters or downgrades.  The lock
 * object's hold listener (as set when the acquire starts) is told the
 * hold's states, on the callback thread, as for blocking holds.  Mutex holds
 * granted asynchronously are not revocable.
 *
 * Lifetimes: a hold or lease stays valid after its lock object is freed
 * (release it with zkr_hold_release / zkr_lease_release, also after
 * zkr_client_close); freeing a lock object or semaphore cancels its pending
 * acquires (their completions report ZKR_ECANCELED).  zkr_client_close
 * ends every acquire still pending or granted but not yet delivered with
 * ZKR_ECLOSED (a granted one is released first), and runs those
 * completions on the thread calling zkr_client_close, before it returns.
 * No call on the client is allowed once zkr_client_close has returned. */
#ifndef ZKR_ASYNC_H
#define ZKR_ASYNC_H

#include "zkr/client.h"
#include "zkr/common.h"
#include "zkr/errors.h"
#include "zkr/lock.h"
#include "zkr/semaphore.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A hold granted asynchronously (mutex, semaphore mutex, read, write). */
typedef struct zkr_hold zkr_hold_t;

/* Completion of zkr_lock_acquire_async.  rc: ZKR_OK (hold is yours: release
 * it with zkr_hold_release), ZKR_ETIMEDOUT, ZKR_ECANCELED (zkr_async_cancel,
 * or the lock object was freed), ZKR_ESESSIONLOST (the session, and our
 * node with it, was lost while waiting), ZKR_ECLOSED (the client closed),
 * ZKR_EDELETED (another session deleted our node), ZKR_ENOAUTH, ZKR_ENOMEM,
 * ZKR_ENONODE (the lock's parent could not be created), ZKR_EZOOKEEPER.
 * hold is NULL unless rc is ZKR_OK. */
typedef void (*zkr_acquire_fn)(int rc, zkr_hold_t *hold, void *ctx);

/* Completion of zkr_semaphore_acquire_async: the same codes; lease is NULL
 * unless rc is ZKR_OK (return it with zkr_lease_release). */
typedef void (*zkr_lease_acquire_fn)(int rc, zkr_lease_t *lease, void *ctx);

/* Start acquiring `ref` (any kind of zkr_lock.h) within timeout_ms (< 0:
 * no limit; 0: one look).  Returns at once:
 *   ZKR_OK       started: fn(rc, hold, ctx) will run exactly once;
 *                *acquire_id (if not NULL) names the acquire for
 *                zkr_async_cancel
 *   ZKR_EINVAL   bad reference, fn NULL
 *   ZKR_ECLOSED  the client is closing
 *   ZKR_ENOMEM
 * On any code but ZKR_OK, fn is never called. */
ZKR_EXTERN int zkr_lock_acquire_async(zkr_lock_ref_t ref, int64_t timeout_ms, zkr_acquire_fn fn, void *ctx,
                                      uint64_t *acquire_id);

/* The same for one lease of a semaphore (Curator's protocol: the locks/
 * mutex, then a lease node).  Returns ZKR_OK, ZKR_EINVAL (s or fn NULL),
 * ZKR_ECLOSED, ZKR_ENOMEM. */
ZKR_EXTERN int zkr_semaphore_acquire_async(zkr_semaphore_t *s, int64_t timeout_ms, zkr_lease_acquire_fn fn,
                                           void *ctx, uint64_t *acquire_id);

/* Cancel a pending acquire by its acquire id (never a pointer, so a cancel racing
 * the completion touches no freed memory).
 *   ZKR_OK      cancelled: its completion will run once with ZKR_ECANCELED
 *               (on the dispatching thread, not inside this call), and its
 *               node is deleted (or its deletion scheduled).  This holds
 *               also when the grant raced ahead of the cancel but its
 *               completion had not started yet: the hold is released and
 *               ZKR_ECANCELED reported instead.
 *   ZKR_ENOTFOUND no such pending acquire: the id is unknown, or its
 *               completion has started or run (then the completion
 *               reported the outcome, a hold to release if ZKR_OK)
 *   ZKR_EINVAL  c NULL or acquire_id 0 */
ZKR_EXTERN int zkr_async_cancel(zkr_client_t *c, uint64_t acquire_id);

/* Where completions run (see above). */
typedef enum zkr_dispatch_mode {
    ZKR_DISPATCH_LOOP = 0,  /* zkr_client_dispatch, on the caller's thread */
    ZKR_DISPATCH_THREAD = 1 /* the client's callback thread */
} zkr_dispatch_mode_t;

/* Choose where completions run; may be changed at any time (completions
 * already waiting then follow the new mode).  Returns ZKR_OK, ZKR_EINVAL
 * (c NULL or unknown mode), ZKR_ECLOSED. */
ZKR_EXTERN int zkr_client_set_dispatch(zkr_client_t *c, zkr_dispatch_mode_t mode);

/* A file descriptor that is readable while completions wait to be
 * dispatched (an eventfd, non-blocking, close-on-exec, owned by the client:
 * never read, write or close it; poll it for reading).  The same fd for the
 * client's whole life.  Returns the fd (>= 0), or ZKR_EINVAL (c NULL),
 * ZKR_ECLOSED, ZKR_ESYSTEM (no eventfd). */
ZKR_EXTERN int zkr_client_fd(zkr_client_t *c);

/* Run, on the calling thread, the completions waiting now (not those that
 * become ready meanwhile: call it again when the fd is readable).  Safe
 * with nothing pending, and from several threads (each completion runs
 * once).  A completion may call the library (acquire, cancel, release,
 * dispatch), but not zkr_client_close on this client (ZKR_EDEADLK).
 * Returns how many completions ran (>= 0), or ZKR_EINVAL (c NULL). */
ZKR_EXTERN int zkr_client_dispatch(zkr_client_t *c);

/* Release a hold granted asynchronously and free it (from any thread, once).
 * Returns like the kind's release: ZKR_OK, ZKR_ELOST (the hold had been lost
 * with its session; its node is deleted anyway if it still exists), or a
 * refusal of the server (ZKR_ENOAUTH, ...: the node stays with its
 * session).  NULL: ZKR_EINVAL. */
ZKR_EXTERN int zkr_hold_release(zkr_hold_t *hold);

/* Completion of an asynchronous release: rc is what the blocking release
 * would have returned (ZKR_OK: the node is gone, or its delete could not be
 * answered in time and is finished in the background; ZKR_ELOST: the hold
 * had been lost with its session; a refusal of the server, ZKR_ENOAUTH...:
 * the node stays until its session ends, and is logged). */
typedef void (*zkr_release_fn)(int rc, void *ctx);

/* Release a hold granted asynchronously without waiting, and free it (once,
 * from any thread; the hold must not be used after the call).  Its delete
 * goes out now (combined with the client's other deletes in flight), and
 * fn(rc, ctx) runs exactly once where completions run (see
 * zkr_client_set_dispatch), never inside this call.  Returns:
 *   ZKR_OK      fn will run
 *   ZKR_EINVAL  hold or fn NULL (nothing is done)
 *   ZKR_ECLOSED the client is closing: the hold is released at once (its
 *               node goes with the session) and freed; fn is never called
 *   ZKR_ENOMEM  nothing is done: the hold is still yours */
ZKR_EXTERN int zkr_hold_release_async(zkr_hold_t *hold, zkr_release_fn fn, void *ctx);

/* The same for a lease, from zkr_semaphore_acquire_async or the blocking
 * acquire alike (the lease must not be used after the call).  Returns
 * ZKR_OK, ZKR_EINVAL (lease or fn NULL), ZKR_ECLOSED (returned at once and
 * freed; fn is never called), ZKR_ENOMEM (still yours). */
ZKR_EXTERN int zkr_lease_release_async(zkr_lease_t *lease, zkr_release_fn fn, void *ctx);
/* The name of 0.2.0. */
ZKR_EXTERN int zkr_lease_return_async(zkr_lease_t *lease, zkr_release_fn fn, void *ctx)
    ZKR_DEPRECATED("zkr_lease_release_async");

/* The hold's fencing token (its node's creation zxid).  ZKR_OK, ZKR_EINVAL. */
ZKR_EXTERN int zkr_hold_fencing_token(const zkr_hold_t *hold, int64_t *token);

/* The hold's state (SAFE, IN_DOUBT, LOST); ZKR_HOLD_NONE for NULL. */
ZKR_EXTERN zkr_hold_state_t zkr_hold_state(const zkr_hold_t *hold);

/* The hold's node path (owned by the hold); NULL for NULL. */
ZKR_EXTERN const char *zkr_hold_node_path(const zkr_hold_t *hold);

/* The hold's kind: "mutex", "semaphore-mutex", "read", "write", "leader"
 * (zkr_leader_acquire_async); "invalid" for NULL. */
ZKR_EXTERN const char *zkr_hold_kind(const zkr_hold_t *hold);

#ifdef __cplusplus
}
#endif
#endif

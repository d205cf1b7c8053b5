/* zkr_mutex: reentrant distributed mutex, wire-compatible with Apache
 * Curator's InterProcessMutex.
 *
 * Nodes: "<path>/_c_<uuid>-lock-<seq>", EPHEMERAL_SEQUENTIAL.  The holder is
 * the first node in Curator's order; each waiter data-watches only the node
 * just before its own (no herd effect).
 *
 * Reentrancy is per (mutex object, thread): a thread that holds the mutex
 * may acquire it again; it is released when every acquire has been matched
 * by a release.  Several threads using one mutex object each queue with a
 * node of their own.
 *
 *   zkr_mutex_t *m;
 *   zkr_mutex_new(&m, client, "/app/locks/orders");
 *   if (zkr_mutex_acquire(m, 5000) == ZKR_OK) {
 *       int64_t token;
 *       zkr_mutex_fencing_token(m, &token);   // pass it to the resource
 *       ... critical section ...
 *       zkr_mutex_release(m);
 *   }
 *   zkr_mutex_free(m);
 */
#ifndef ZKR_MUTEX_H
#define ZKR_MUTEX_H

#include "zkr/client.h"
#include "zkr/common.h"
#include "zkr/errors.h"
#include "zkr/op.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct zkr_mutex zkr_mutex_t;

/* Create a mutex object on `path` (the lock directory; created as container
 * nodes, with the client's ACL, when first needed).  Nothing is sent to
 * ZooKeeper.  Returns ZKR_OK, ZKR_ENOMEM, ZKR_ESYSTEM, ZKR_ECLOSED (the client is
 * closing), ZKR_EINVAL (NULL argument; a path ZooKeeper would refuse:
 * relative, trailing or double '/', "." or "..", under /zookeeper, over
 * 1024 bytes, or characters it does not accept, see zkrecipes(7)). */
ZKR_EXTERN int zkr_mutex_new(zkr_mutex_t **out, zkr_client_t *c, const char *path);

/* Acquire, waiting at most timeout_ms (< 0 forever, 0 one try).
 * Returns:
 *   ZKR_OK            held by the calling thread (hold count + 1)
 *   ZKR_EINVAL        m NULL
 *   ZKR_ETIMEDOUT     not acquired in time (our node is deleted)
 *   ZKR_ESESSIONLOST  the session was lost while waiting (nothing left behind)
 *   ZKR_EDELETED      another session deleted our node while we waited
 *   ZKR_ELOST         the calling thread's earlier hold was lost (session
 *                     gone, or its node deleted by another session):
 *                     nothing is granted; release it first
 *   ZKR_EBUSY         the calling thread's hold count would pass INT_MAX
 *   ZKR_ECLOSED       the client is closing
 *   ZKR_ENOAUTH       the ACL of the lock directory refuses us
 *   ZKR_ENOMEM, ZKR_ESYSTEM, ZKR_EZOOKEEPER */
ZKR_EXTERN int zkr_mutex_acquire(zkr_mutex_t *m, int64_t timeout_ms);

/* Release one hold of the calling thread; the node is deleted when the
 * count reaches zero.  If the link is down, or gives no answer within
 * ZKR_RELEASE_WAIT_MS, the delete is finished in the background.  After the
 * last release the thread holds nothing, whatever the return code.
 * Returns ZKR_OK, ZKR_EINVAL (m NULL), ZKR_ENOTOWNER (the calling thread
 * does not hold it: nothing changes), ZKR_ELOST (the hold had already been
 * lost: session gone, or node deleted by another session), ZKR_ENOAUTH or
 * ZKR_EZOOKEEPER (the server refused the delete: the node stays until the
 * session ends, and its path is logged). */
ZKR_EXTERN int zkr_mutex_release(zkr_mutex_t *m);

/* 1 if the calling thread holds `m` (and the hold is not LOST), 0
 * otherwise (or m NULL). */
ZKR_EXTERN int zkr_mutex_is_held(zkr_mutex_t *m);

/* Hold notifications: fn is told (on the client's callback thread) when a hold of
 * this object becomes IN_DOUBT (connection down), SAFE again (same session,
 * node still ours) or LOST (session gone: another process may hold the lock
 * now).  Applies to holds taken after this call; fn NULL turns it off.
 * Returns ZKR_OK, ZKR_EINVAL (m NULL). */
ZKR_EXTERN int zkr_mutex_set_hold_listener(zkr_mutex_t *m, zkr_hold_fn fn, void *ctx);
#ifdef ZKR__CHECKS
#define zkr_mutex_set_hold_listener(m, fn, ctx) \
    ZKR__CHECKED(fn, zkr_hold_fn, "a hold listener is void fn(zkr_lock_ref_t lock, zkr_hold_state_t state, const char *node_path, void *ctx)", zkr_mutex_set_hold_listener(m, fn, ctx))
#endif

/* The state of the calling thread's hold: ZKR_HOLD_SAFE, ZKR_HOLD_IN_DOUBT,
 * ZKR_HOLD_LOST, or ZKR_HOLD_NONE if it holds nothing (or m is NULL). */
ZKR_EXTERN zkr_hold_state_t zkr_mutex_hold_state(zkr_mutex_t *m);

/* 1 if any thread of this process holds `m` through this object. */
ZKR_EXTERN int zkr_mutex_is_held_by_process(zkr_mutex_t *m);

/* The fencing token of the calling thread's hold: the czxid of its node,
 * strictly larger for every later holder of the same lock.
 * Returns ZKR_OK, ZKR_EINVAL (NULL argument), ZKR_ENOTOWNER (not held). */
ZKR_EXTERN int zkr_mutex_fencing_token(zkr_mutex_t *m, int64_t *token);

/* The full path of the calling thread's lock node: *path is the caller's
 * (zkr_free).  Returns ZKR_OK, ZKR_EINVAL (NULL argument), ZKR_ENOTOWNER
 * (the calling thread holds nothing; *path NULL), ZKR_ENOMEM. */
ZKR_EXTERN int zkr_mutex_node_path(zkr_mutex_t *m, char **path);

/* Everyone queued on the lock, in lock order, as full paths (holder first).
 * Free with zkr_strings_free.  Returns ZKR_OK, ZKR_EINVAL, ZKR_ECONNLOSS,
 * ZKR_ESESSIONLOST, ZKR_ECLOSED, ZKR_ENOMEM, ZKR_ESYSTEM. */
ZKR_EXTERN int zkr_mutex_participants(zkr_mutex_t *m, char ***paths, size_t *count);

/* Revocation (Curator's cooperative protocol).  A holder that accepts it is
 * told, through `fn`, when someone asks it to release; it decides what to do
 * (typically tell the holding thread to finish and release: release is per
 * thread).  fn runs on the client's callback thread, or inside zkr_mutex_acquire if
 * the request was already there when the hold began.  Applies to holds
 * taken after this call.  fn NULL turns it off.
 * Returns ZKR_OK, ZKR_EINVAL (m NULL). */
typedef void (*zkr_revoke_fn)(zkr_mutex_t *m, void *ctx);
ZKR_EXTERN int zkr_mutex_make_revocable(zkr_mutex_t *m, zkr_revoke_fn fn, void *ctx);

/* Ask the holder of the node at `node_path` (a participant path) to
 * release, by writing "__REVOKE__" to it.  A node that is already gone is
 * not an error.  Returns ZKR_OK, ZKR_EINVAL, ZKR_ECONNLOSS,
 * ZKR_ESESSIONLOST, ZKR_ECLOSED, ZKR_ENOAUTH, ZKR_EZOOKEEPER. */
ZKR_EXTERN int zkr_revoke_request(zkr_client_t *c, const char *node_path);

/* A reference for the common lock interface (zkr/lock.h); a NULL object
 * gives a reference every zkr_lock_* call refuses with ZKR_EINVAL. */
ZKR_EXTERN zkr_lock_ref_t zkr_mutex_ref(zkr_mutex_t *m);

/* Guarded by the calling thread's hold: zkr_guarded_write (zkr/guard.h) on
 * its node; also ZKR_EINVAL (NULL object), ZKR_ENOTOWNER (nothing held:
 * nothing sent), ZKR_EGUARD also when the hold is already known LOST. */
ZKR_EXTERN int zkr_mutex_guarded_write(zkr_mutex_t *m, zkr_op_t *ops, size_t n);

/* Free the object.  Holds still open are released (their nodes deleted).
 * NULL is a no-op.  No thread may be inside a call on `m`. */
ZKR_EXTERN void zkr_mutex_free(zkr_mutex_t *m);

#ifdef __cplusplus
}
#endif
#endif

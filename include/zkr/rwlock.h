/* zkr_rwlock: distributed read/write lock, wire-compatible with Apache
 * Curator's InterProcessReadWriteLock.
 *
 * Both kinds of node live directly under the lock path,
 * "_c_<uuid>-__READ__<seq>" and "_c_<uuid>-__WRIT__<seq>", on one
 * sequence axis:
 *   - a writer holds the lock when it is first of all nodes, and watches
 *     only its immediate predecessor;
 *   - a reader holds it when no writer is before it, and otherwise watches
 *     the nearest writer before it (so a writer's release wakes only the
 *     readers it admits).
 * Order is FIFO: a reader that arrives after a queued writer waits behind
 * it, so writers are never starved.
 *
 * Both halves are reentrant per (object, thread).  The thread holding the
 * write lock may take the read lock at once (downgrade): its read node is
 * named after the writer's sequence, so after it releases the write lock no
 * queued writer can overtake its read hold.  A thread holding only the read
 * lock that asks for the write lock (upgrade) is refused with ZKR_ENEVER at
 * once: that request could never be granted.
 *
 *   zkr_rwlock_t *l;
 *   zkr_rwlock_new(&l, client, "/app/config-lock");
 *   if (zkr_rwlock_read_acquire(l, 1000) == ZKR_OK) {
 *       ... read the shared configuration ...
 *       zkr_rwlock_read_release(l);
 *   }
 *   zkr_rwlock_free(l);
 */
#ifndef ZKR_RWLOCK_H
#define ZKR_RWLOCK_H

#include "zkr/client.h"
#include "zkr/common.h"
#include "zkr/errors.h"
#include "zkr/op.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct zkr_rwlock zkr_rwlock_t;

/* Returns ZKR_OK, ZKR_EINVAL (NULL argument, a path ZooKeeper would refuse,
 * as zkr_mutex_new), ZKR_ECLOSED, ZKR_ENOMEM, ZKR_ESYSTEM. */
ZKR_EXTERN int zkr_rwlock_new(zkr_rwlock_t **out, zkr_client_t *c, const char *path);

/* Acquire the read lock (timeout as everywhere: < 0 forever, 0 one try).
 * Returns ZKR_OK, ZKR_EINVAL, ZKR_ETIMEDOUT (nothing left behind),
 * ZKR_ESESSIONLOST (lost while waiting, or a downgrade on a write hold whose
 * session is gone), ZKR_EDELETED (another session deleted our node while
 * we waited), ZKR_ELOST (the thread's earlier read hold was lost: release
 * it first), ZKR_EBUSY (hold count would pass INT_MAX), ZKR_ECLOSED,
 * ZKR_ENOAUTH, ZKR_ENOMEM, ZKR_ESYSTEM, ZKR_EZOOKEEPER. */
ZKR_EXTERN int zkr_rwlock_read_acquire(zkr_rwlock_t *l, int64_t timeout_ms);

/* Acquire the write lock.  Same codes as zkr_rwlock_read_acquire, plus
 * ZKR_ENEVER if the calling thread holds the read lock but not the write
 * lock (an upgrade can never be granted). */
ZKR_EXTERN int zkr_rwlock_write_acquire(zkr_rwlock_t *l, int64_t timeout_ms);

/* Release one hold of the calling thread (as zkr_mutex_release).  Returns
 * ZKR_OK, ZKR_EINVAL, ZKR_ENOTOWNER (not held by this thread: nothing
 * changes), ZKR_ELOST (session gone or node deleted by another session),
 * ZKR_ENOAUTH or ZKR_EZOOKEEPER (the server refused the delete). */
ZKR_EXTERN int zkr_rwlock_read_release(zkr_rwlock_t *l);
ZKR_EXTERN int zkr_rwlock_write_release(zkr_rwlock_t *l);

/* 1 if the calling thread holds that half (and it is not LOST), else 0. */
ZKR_EXTERN int zkr_rwlock_read_is_held(zkr_rwlock_t *l);
ZKR_EXTERN int zkr_rwlock_write_is_held(zkr_rwlock_t *l);

/* Hold notifications for holds of either half taken after this call (see
 * zkr_mutex_set_hold_listener).  Returns ZKR_OK, ZKR_EINVAL. */
ZKR_EXTERN int zkr_rwlock_set_hold_listener(zkr_rwlock_t *l, zkr_hold_fn fn, void *ctx);
#ifdef ZKR__CHECKS
#define zkr_rwlock_set_hold_listener(l, fn, ctx) \
    ZKR__CHECKED(fn, zkr_hold_fn, "a hold listener is void fn(zkr_lock_ref_t lock, zkr_hold_state_t state, const char *node_path, void *ctx)", zkr_rwlock_set_hold_listener(l, fn, ctx))
#endif

/* State of the calling thread's read / write hold (ZKR_HOLD_NONE if none). */
ZKR_EXTERN zkr_hold_state_t zkr_rwlock_read_hold_state(zkr_rwlock_t *l);
ZKR_EXTERN zkr_hold_state_t zkr_rwlock_write_hold_state(zkr_rwlock_t *l);

/* Fencing token of the calling thread's read / write hold.
 * Returns ZKR_OK, ZKR_EINVAL, ZKR_ENOTOWNER. */
ZKR_EXTERN int zkr_rwlock_read_fencing_token(zkr_rwlock_t *l, int64_t *token);
ZKR_EXTERN int zkr_rwlock_write_fencing_token(zkr_rwlock_t *l, int64_t *token);

/* The full path of the calling thread's read (write) node: *path is the
 * caller's (zkr_free).  Returns ZKR_OK, ZKR_EINVAL (NULL argument),
 * ZKR_ENOTOWNER (that half not held by the calling thread; *path NULL),
 * ZKR_ENOMEM. */
ZKR_EXTERN int zkr_rwlock_read_node_path(zkr_rwlock_t *l, char **path);
ZKR_EXTERN int zkr_rwlock_write_node_path(zkr_rwlock_t *l, char **path);

/* Every reader and writer node, in lock order, as full paths.  Free with
 * zkr_strings_free.  Returns ZKR_OK, ZKR_EINVAL, ZKR_ECONNLOSS,
 * ZKR_ESESSIONLOST, ZKR_ECLOSED, ZKR_ENOMEM, ZKR_ESYSTEM. */
ZKR_EXTERN int zkr_rwlock_participants(zkr_rwlock_t *l, char ***paths, size_t *count);

/* References for the common lock interface (zkr/lock.h); a NULL object
 * gives a reference every zkr_lock_* call refuses with ZKR_EINVAL. */
ZKR_EXTERN zkr_lock_ref_t zkr_rwlock_read_ref(zkr_rwlock_t *l);
ZKR_EXTERN zkr_lock_ref_t zkr_rwlock_write_ref(zkr_rwlock_t *l);

/* Free (holds still open are released).  NULL is a no-op. */
ZKR_EXTERN void zkr_rwlock_free(zkr_rwlock_t *l);

#ifdef __cplusplus
}
#endif
#endif

/* zkr_multilock: hold several locks of any kind as one (Curator's
 * InterProcessMultiLock).  No state of its own in ZooKeeper.
 *
 * Acquire takes the locks in the given order under ONE deadline for the
 * whole call (Curator gives each lock the full timeout); if any part fails
 * or times out, everything taken so far is released and the error is
 * returned.  The creates of all parts are sent at once (one round trip
 * when none must wait), those of the parts on one client as one ZooKeeper
 * multi (one transaction: every such part's fencing token is that
 * transaction's zxid); from the first part that must wait, the later
 * parts' nodes are withdrawn and those parts taken one by one, so the
 * multi-lock never waits on a part while queued on a later one.  Release
 * goes in reverse order, sends every part's delete at once (one multi per
 * client; if the server refuses it as a whole, say because a part's node
 * was already deleted, each node is deleted on its own), releases every
 * part, and reports the first error.  To avoid deadlocks between multi-locks, give
 * every process the same global order (e.g. sort by path).
 *
 *   zkr_lock_ref_t parts[2] = { zkr_mutex_ref(acct_a), zkr_mutex_ref(acct_b) };
 *   zkr_multilock_t *ml;
 *   zkr_multilock_new(&ml, parts, 2);
 *   if (zkr_multilock_acquire(ml, 2000) == ZKR_OK) { transfer(); zkr_multilock_release(ml); }
 *   zkr_multilock_free(ml);
 */
#ifndef ZKR_MULTILOCK_H
#define ZKR_MULTILOCK_H

#include "zkr/lock.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct zkr_multilock zkr_multilock_t;

/* Copies the n references (n >= 1, each valid).  The lock objects must
 * outlive the multi-lock.  Returns ZKR_OK, ZKR_ENOMEM, ZKR_EINVAL (NULL,
 * n == 0, a bad reference, the same lock twice), ZKR_ENEVER (the read
 * half of a read/write lock before its write half: an upgrade, never
 * granted; write then read is a downgrade and allowed). */
ZKR_EXTERN int zkr_multilock_new(zkr_multilock_t **out, const zkr_lock_ref_t *locks, size_t n);

/* Acquire every part in order within timeout_ms in total (< 0 forever,
 * 0 one try each).  Returns ZKR_OK, ZKR_EINVAL, ZKR_ENOMEM, or the first
 * failing part's code (ZKR_ETIMEDOUT, ZKR_ENEVER, ...) after releasing
 * what was taken. */
ZKR_EXTERN int zkr_multilock_acquire(zkr_multilock_t *ml, int64_t timeout_ms);

/* Release every part in reverse order.  Returns ZKR_OK, ZKR_EINVAL, or the
 * first error of a part (the others are still released). */
ZKR_EXTERN int zkr_multilock_release(zkr_multilock_t *ml);

/* 1 if every part is held, else 0. */
ZKR_EXTERN int zkr_multilock_is_held(zkr_multilock_t *ml);

/* Free: the acquires the calling thread made through this multi-lock and
 * has not released are released first (as every object's _free releases
 * what it holds).  Parts taken otherwise, and another thread's acquires
 * through it, are left as they are.  The part objects stay (they are the
 * caller's).  NULL is a no-op. */
ZKR_EXTERN void zkr_multilock_free(zkr_multilock_t *ml);

#ifdef __cplusplus
}
#endif
#endif

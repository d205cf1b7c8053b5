/* A common lock interface over every lock kind of the library, so that
 * code (and zkr_multilock) can hold any mix of them.
 *
 *   zkr_lock_ref_t r = zkr_rwlock_write_ref(config_lock);
 *   if (zkr_lock_acquire(r, 1000) == ZKR_OK) { ...; zkr_lock_release(r); }
 *
 * A reference is a small value (copy it freely); it does not own the lock
 * object, which must outlive it. */
#ifndef ZKR_LOCK_H
#define ZKR_LOCK_H

#include "zkr/common.h"
#include "zkr/errors.h"
#include "zkr/hold.h"
#include "zkr/mutex.h"
#include "zkr/rwlock.h"
#include "zkr/semaphore.h"

#ifdef __cplusplus
extern "C" {
#endif


/* References to each kind.  A NULL object gives a reference that every
 * zkr_lock_* call refuses with ZKR_EINVAL. */

/* The kind's acquire: its return codes (ZKR_EINVAL for a bad reference). */
ZKR_EXTERN int zkr_lock_acquire(zkr_lock_ref_t ref, int64_t timeout_ms);
/* The kind's release: its return codes (ZKR_EINVAL for a bad reference). */
ZKR_EXTERN int zkr_lock_release(zkr_lock_ref_t ref);
/* 1 if held (by the calling thread for the reentrant kinds, by the object
 * for the semaphore mutex), 0 otherwise or for a bad reference. */
ZKR_EXTERN int zkr_lock_is_held(zkr_lock_ref_t ref);
/* Fencing token of the current hold: ZKR_OK, ZKR_EINVAL, ZKR_ENOTOWNER. */
ZKR_EXTERN int zkr_lock_fencing_token(zkr_lock_ref_t ref, int64_t *token);
/* The kind's node-path getter: *path is the caller's (zkr_free).  ZKR_OK,
 * ZKR_EINVAL (a bad reference, path NULL), ZKR_ENOTOWNER, ZKR_ENOMEM. */
ZKR_EXTERN int zkr_lock_node_path(zkr_lock_ref_t ref, char **path);
/* The hold's state (see zkr_hold_state_t); ZKR_HOLD_NONE if not held or
 * for a bad reference. */
ZKR_EXTERN zkr_hold_state_t zkr_lock_hold_state(zkr_lock_ref_t ref);
/* "mutex", "semaphore-mutex", "read", "write"; "invalid" for a bad one. */
ZKR_EXTERN const char *zkr_lock_kind(zkr_lock_ref_t ref);

/* 1 if a and b refer to the same lock (the same object and, for a
 * read/write lock, the same half), else 0.  For hold listeners
 * (zkr_hold_fn), which are told the lock. */
ZKR_EXTERN int zkr_lock_ref_equal(zkr_lock_ref_t a, zkr_lock_ref_t b);

/* Start acquiring `ref` (any kind of zkr_lock.h) within timeout_ms (< 0:
 * no limit; 0: one look).  Returns at once:
 *   ZKR_OK       started: fn(acquire_id, rc, hold, ctx) will run exactly once;
 *                *acquire_id (if not NULL) names the acquire for
 *                zkr_async_cancel
 *   ZKR_EINVAL   bad reference, fn NULL
 *   ZKR_ECLOSED  the client is closing
 *   ZKR_ENOMEM
 * On any code but ZKR_OK, fn is never called. */
ZKR_EXTERN int zkr_lock_acquire_async(zkr_lock_ref_t ref, int64_t timeout_ms, zkr_acquire_fn fn, void *ctx,
                                      uint64_t *acquire_id);
#ifdef ZKR__CHECKS
#define zkr_lock_acquire_async(ref, timeout_ms, fn, ctx, acquire_id) \
    ZKR__CHECKED(fn, zkr_acquire_fn, "the completion is void fn(uint64_t acquire_id, int rc, zkr_hold_t *hold, void *ctx)", zkr_lock_acquire_async(ref, timeout_ms, fn, ctx, acquire_id))
#endif

/* Guarded by the reference's hold (the calling thread's, for the
 * per-thread kinds): zkr_guarded_write (zkr/guard.h) on its node; also
 * ZKR_EINVAL (a bad reference), ZKR_ENOTOWNER (nothing held: nothing
 * sent), ZKR_EGUARD also when the hold is already known LOST. */
ZKR_EXTERN int zkr_lock_guarded_write(zkr_lock_ref_t ref, zkr_op_t *ops, size_t n);

#ifdef __cplusplus
}
#endif
#endif

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
#include "zkr/mutex.h"
#include "zkr/rwlock.h"
#include "zkr/semaphore.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct zkr_lock_ref {
    const void *ops; /* which kind (opaque) */
    void *obj;       /* the lock object */
} zkr_lock_ref_t;

/* References to each kind.  A NULL object gives a reference that every
 * zkr_lock_* call refuses with ZKR_EINVAL. */
ZKR_EXTERN zkr_lock_ref_t zkr_mutex_ref(zkr_mutex_t *m);
ZKR_EXTERN zkr_lock_ref_t zkr_semaphore_mutex_ref(zkr_semaphore_mutex_t *m);
ZKR_EXTERN zkr_lock_ref_t zkr_rwlock_read_ref(zkr_rwlock_t *l);
ZKR_EXTERN zkr_lock_ref_t zkr_rwlock_write_ref(zkr_rwlock_t *l);

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

#ifdef __cplusplus
}
#endif
#endif

/* zkr_semaphore: counted semaphore with leases, wire-compatible with Apache
 * Curator's InterProcessSemaphoreV2; and zkr_semaphore_mutex, the
 * non-reentrant mutex built on it (Curator InterProcessSemaphoreMutex).
 *
 * Layout: "<path>/locks" holds an ordinary mutex that serialises acquirers;
 * "<path>/leases" holds one EPHEMERAL_SEQUENTIAL node per lease,
 * "_c_<uuid>-lease-<seq>".  At most max_leases leases exist at once; only the
 * acquirer holding "<path>/locks" watches "<path>/leases" (no herd).
 *
 * max_leases is a convention between all users of the path, or is read
 * from a shared count node (4-byte big-endian int, Curator's SharedCount)
 * that is watched, so a change takes effect for waiters.
 *
 *   zkr_semaphore_t *s;  zkr_lease_t *lease;
 *   zkr_semaphore_new(&s, client, "/app/sem/db-connections", 10);
 *   if (zkr_semaphore_acquire(s, 2000, &lease) == ZKR_OK) {
 *       ... use one of the 10 slots ...
 *       zkr_lease_release(lease);
 *   }
 *   zkr_semaphore_free(s);
 */
#ifndef ZKR_SEMAPHORE_H
#define ZKR_SEMAPHORE_H

#include "zkr/client.h"
#include "zkr/common.h"
#include "zkr/errors.h"
#include "zkr/op.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct zkr_semaphore zkr_semaphore_t;

/* The most leases one zkr_semaphore_acquire_n may ask for. */
#define ZKR_LEASES_MAX 65536
typedef struct zkr_lease zkr_lease_t;

/* A semaphore on `path` with a fixed max_leases (>= 1).  Nothing is sent.
 * Returns ZKR_OK, ZKR_EINVAL (NULL argument, a path ZooKeeper would refuse,
 * max_leases < 1), ZKR_ECLOSED, ZKR_ENOMEM, ZKR_ESYSTEM. */
ZKR_EXTERN int zkr_semaphore_new(zkr_semaphore_t **out, zkr_client_t *c, const char *path,
                                 int max_leases);

/* A semaphore whose max_leases is the shared count stored at count_path
 * (which must exist when acquiring; see zkr_shared_count_set).
 * Returns ZKR_OK, ZKR_EINVAL, ZKR_ECLOSED, ZKR_ENOMEM, ZKR_ESYSTEM. */
ZKR_EXTERN int zkr_semaphore_new_shared(zkr_semaphore_t **out, zkr_client_t *c, const char *path,
                                        const char *count_path);

/* Acquire one lease, waiting at most timeout_ms (< 0 forever, 0 one try).
 * Returns:
 *   ZKR_OK            *lease is yours; give it back with zkr_lease_release
 *   ZKR_EINVAL        NULL argument
 *   ZKR_ETIMEDOUT     no lease in time (nothing is left behind)
 *   ZKR_ESESSIONLOST  the session was lost while waiting
 *   ZKR_EDELETED      another session deleted our lease or lock node while
 *                     we waited
 *   ZKR_ENONODE       the shared count node does not exist
 *   ZKR_EBADDATA      the shared count node does not hold a 4-byte count
 *   ZKR_ECLOSED, ZKR_ENOAUTH, ZKR_ENOMEM, ZKR_ESYSTEM, ZKR_EZOOKEEPER */
ZKR_EXTERN int zkr_semaphore_acquire(zkr_semaphore_t *s, int64_t timeout_ms, zkr_lease_t **lease);

/* Acquire n leases, all or nothing, with one deadline for the whole call.
 * leases must have room for n.  On failure every lease taken is returned
 * and leases[] is set to NULL.  Same return codes as zkr_semaphore_acquire,
 * plus ZKR_EINVAL for n < 1 or n > ZKR_LEASES_MAX, and ZKR_ENEVER for n above a fixed max
 * leases (never granted; a shared count is read, and waited for, instead). */
ZKR_EXTERN int zkr_semaphore_acquire_n(zkr_semaphore_t *s, size_t n, int64_t timeout_ms,
                                       zkr_lease_t **leases);

/* Release a lease (from any thread) and free it: its node is deleted (in
 * the background if the link is down or gives no answer within
 * ZKR_RELEASE_WAIT_MS).  The lease is freed whatever the code.  Returns
 * ZKR_OK, ZKR_EINVAL (lease NULL, as for every release), ZKR_ELOST (lost
 * with its session, or deleted by another session), ZKR_ENOAUTH or
 * ZKR_EZOOKEEPER (the server refused the delete: the node stays until the
 * session ends; logged). */
ZKR_EXTERN int zkr_lease_release(zkr_lease_t *lease);

/* Release n leases (NULL entries skipped) and set each entry to NULL;
 * reports the first error but releases them all.  Returns ZKR_OK,
 * ZKR_EINVAL (leases NULL, n > ZKR_LEASES_MAX: nothing released), or the
 * first error of zkr_lease_release (ZKR_ELOST, ZKR_ENOAUTH, ...). */
ZKR_EXTERN int zkr_lease_release_all(zkr_lease_t **leases, size_t n);

/* Completion of zkr_semaphore_acquire_async: the same codes; lease is NULL
 * unless rc is ZKR_OK (release it with zkr_lease_release); acquire_id is
 * the acquire's id. */
typedef void (*zkr_lease_acquire_fn)(uint64_t acquire_id, int rc, zkr_lease_t *lease, void *ctx);

/* The same for one lease of a semaphore (Curator's protocol: the locks/
 * mutex, then a lease node).  Returns ZKR_OK, ZKR_EINVAL (s or fn NULL),
 * ZKR_ECLOSED, ZKR_ENOMEM. */
ZKR_EXTERN int zkr_semaphore_acquire_async(zkr_semaphore_t *s, int64_t timeout_ms, zkr_lease_acquire_fn fn,
                                           void *ctx, uint64_t *acquire_id);
#ifdef ZKR__CHECKS
#define zkr_semaphore_acquire_async(s, timeout_ms, fn, ctx, acquire_id) \
    ZKR__CHECKED(fn, zkr_lease_acquire_fn, "the completion is void fn(uint64_t acquire_id, int rc, zkr_lease_t *lease, void *ctx)", zkr_semaphore_acquire_async(s, timeout_ms, fn, ctx, acquire_id))
#endif

/* The same for a lease, from zkr_semaphore_acquire_async or the blocking
 * acquire alike (the lease must not be used after the call).  Returns
 * ZKR_OK, ZKR_EINVAL (lease or fn NULL: nothing is done, the lease is
 * still yours), ZKR_ECLOSED (returned at once and
 * freed; fn is never called), ZKR_ENOMEM (still yours). */
ZKR_EXTERN int zkr_lease_release_async(zkr_lease_t *lease, zkr_release_fn fn, void *ctx);
/* The name of 0.2.0. */
ZKR_EXTERN int zkr_lease_return_async(zkr_lease_t *lease, zkr_release_fn fn, void *ctx)
    ZKR_DEPRECATED("zkr_lease_release_async");

/* Guarded by the lease: zkr_guarded_write (zkr/guard.h) on its node; also
 * ZKR_EINVAL (lease NULL), ZKR_EGUARD also when the lease is already known
 * LOST (nothing sent). */
ZKR_EXTERN int zkr_lease_guarded_write(zkr_lease_t *lease, zkr_op_t *ops, size_t n);

/* The names of 0.2.0 (zkr_lease_return(NULL) still returns ZKR_OK). */
ZKR_EXTERN int zkr_lease_return(zkr_lease_t *lease) ZKR_DEPRECATED("zkr_lease_release");
ZKR_EXTERN int zkr_lease_return_all(zkr_lease_t **leases, size_t n) ZKR_DEPRECATED("zkr_lease_release_all");

/* A semaphore's hold listener: told on the client's callback thread when
 * one of its leases changes state, with the semaphore it came from and
 * the lease's node path (valid during the call).  The semaphore is valid
 * during the call: zkr_semaphore_free turns its listener off (leases that
 * outlive it are told nothing more) and waits for a call in progress. */
typedef void (*zkr_lease_fn)(zkr_semaphore_t *s, zkr_hold_state_t state, const char *node_path, void *ctx);

/* Hold notifications for leases acquired after this call (see
 * zkr_mutex_set_hold_listener); fn NULL turns it off.  Returns ZKR_OK,
 * ZKR_EINVAL (s NULL). */
ZKR_EXTERN int zkr_semaphore_set_hold_listener(zkr_semaphore_t *s, zkr_lease_fn fn, void *ctx);
#ifdef ZKR__CHECKS
#define zkr_semaphore_set_hold_listener(s, fn, ctx) \
    ZKR__CHECKED(fn, zkr_lease_fn, "a semaphore hold listener is void fn(zkr_semaphore_t *s, zkr_hold_state_t state, const char *node_path, void *ctx)", zkr_semaphore_set_hold_listener(s, fn, ctx))
#endif

/* SAFE, IN_DOUBT or LOST; ZKR_HOLD_NONE for NULL. */
ZKR_EXTERN zkr_hold_state_t zkr_lease_hold_state(const zkr_lease_t *lease);

/* The lease node's full path: *path is the caller's (zkr_free).  Returns
 * ZKR_OK, ZKR_EINVAL (NULL argument; *path NULL), ZKR_ENOMEM. */
ZKR_EXTERN int zkr_lease_node_path(const zkr_lease_t *lease, char **path);
/* The name of 0.2.0: the path lent by the lease (valid until it is
 * released); NULL for NULL. */
ZKR_EXTERN const char *zkr_lease_path(const zkr_lease_t *lease) ZKR_DEPRECATED("zkr_lease_node_path");

/* The lease's fencing token (czxid of its node).
 * Returns ZKR_OK, ZKR_EINVAL. */
ZKR_EXTERN int zkr_lease_fencing_token(const zkr_lease_t *lease, int64_t *token);

/* All current lease nodes as full paths, in sequence order.  Free with
 * zkr_strings_free.  Returns ZKR_OK, ZKR_EINVAL, ZKR_ECONNLOSS,
 * ZKR_ESESSIONLOST, ZKR_ECLOSED, ZKR_ENOMEM, ZKR_ESYSTEM. */
ZKR_EXTERN int zkr_semaphore_participants(zkr_semaphore_t *s, char ***paths, size_t *count);

/* Free the semaphore object.  Leases already taken stay valid (they belong
 * to the client) and must still be returned.  NULL is a no-op. */
ZKR_EXTERN void zkr_semaphore_free(zkr_semaphore_t *s);

/* Set the shared count at count_path to `value` (>= 1), creating the node
 * (and its parents, with the client's ACL) if needed.  Returns ZKR_OK,
 * ZKR_EINVAL (NULL, bad path, value < 1), ZKR_ECONNLOSS,
 * ZKR_ESESSIONLOST, ZKR_ECLOSED, ZKR_ENOAUTH, ZKR_EZOOKEEPER. */
ZKR_EXTERN int zkr_shared_count_set(zkr_client_t *c, const char *count_path, int32_t value);

/* Read the shared count.  Returns ZKR_OK, ZKR_EINVAL, ZKR_ENONODE,
 * ZKR_EBADDATA, ZKR_ECONNLOSS, ZKR_ESESSIONLOST, ZKR_ECLOSED. */
ZKR_EXTERN int zkr_shared_count_get(zkr_client_t *c, const char *count_path, int32_t *value);

/* ---- non-reentrant mutex: a semaphore of one lease ----------------------- */

typedef struct zkr_semaphore_mutex zkr_semaphore_mutex_t;

/* Returns ZKR_OK, ZKR_EINVAL, ZKR_ECLOSED, ZKR_ENOMEM, ZKR_ESYSTEM. */
ZKR_EXTERN int zkr_semaphore_mutex_new(zkr_semaphore_mutex_t **out, zkr_client_t *c, const char *path);

/* Acquire.  Not reentrant: if this object already holds the mutex, the call
 * waits like any other contender (and times out).  Same return codes as
 * zkr_semaphore_acquire. */
ZKR_EXTERN int zkr_semaphore_mutex_acquire(zkr_semaphore_mutex_t *m, int64_t timeout_ms);

/* Release; any thread may release.  Returns ZKR_OK, ZKR_EINVAL,
 * ZKR_ENOTOWNER (this object does not hold it), and the codes of
 * zkr_lease_release. */
ZKR_EXTERN int zkr_semaphore_mutex_release(zkr_semaphore_mutex_t *m);

/* 1 if this object holds the mutex (and the hold is not LOST). */
ZKR_EXTERN int zkr_semaphore_mutex_is_held(zkr_semaphore_mutex_t *m);

/* Fencing token of the current hold.  Returns ZKR_OK, ZKR_EINVAL,
 * ZKR_ENOTOWNER. */
ZKR_EXTERN int zkr_semaphore_mutex_fencing_token(zkr_semaphore_mutex_t *m, int64_t *token);

/* The full path of the current hold's lease node: *path is the caller's
 * (zkr_free).  Returns ZKR_OK, ZKR_EINVAL (NULL argument), ZKR_ENOTOWNER
 * (not held; *path NULL), ZKR_ENOMEM. */
ZKR_EXTERN int zkr_semaphore_mutex_node_path(zkr_semaphore_mutex_t *m, char **path);

/* Hold notifications (see zkr_mutex_set_hold_listener); the listener is
 * told zkr_semaphore_mutex_ref(m).  Returns ZKR_OK, ZKR_EINVAL. */
ZKR_EXTERN int zkr_semaphore_mutex_set_hold_listener(zkr_semaphore_mutex_t *m, zkr_hold_fn fn, void *ctx);
#ifdef ZKR__CHECKS
#define zkr_semaphore_mutex_set_hold_listener(m, fn, ctx) \
    ZKR__CHECKED(fn, zkr_hold_fn, "a hold listener is void fn(zkr_lock_ref_t lock, zkr_hold_state_t state, const char *node_path, void *ctx)", zkr_semaphore_mutex_set_hold_listener(m, fn, ctx))
#endif

/* State of the current hold (ZKR_HOLD_NONE if not held). */
ZKR_EXTERN zkr_hold_state_t zkr_semaphore_mutex_hold_state(zkr_semaphore_mutex_t *m);

/* References for the common lock interface (zkr/lock.h); a NULL object
 * gives a reference every zkr_lock_* call refuses with ZKR_EINVAL. */
ZKR_EXTERN zkr_lock_ref_t zkr_semaphore_mutex_ref(zkr_semaphore_mutex_t *m);

/* Free (a hold still open is released).  NULL is a no-op. */
ZKR_EXTERN void zkr_semaphore_mutex_free(zkr_semaphore_mutex_t *m);

#ifdef __cplusplus
}
#endif
#endif

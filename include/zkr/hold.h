/* zkr_hold_t: a hold granted asynchronously (zkr_lock_acquire_async,
 * zkr_leader_acquire_async), a handle of its own: every function of it is
 * here.  See zkr/async.h for where completions run. */
#ifndef ZKR_HOLD_H
#define ZKR_HOLD_H

#include "zkr/common.h"
#include "zkr/errors.h"
#include "zkr/op.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A hold granted asynchronously (mutex, semaphore mutex, read, write, leader). */
typedef struct zkr_hold zkr_hold_t;

/* Completion of zkr_lock_acquire_async.  rc: ZKR_OK (hold is yours: release
 * it with zkr_hold_release), ZKR_ETIMEDOUT, ZKR_ECANCELED (zkr_async_cancel,
 * or the lock object was freed), ZKR_ESESSIONLOST (the session, and our
 * node with it, was lost while waiting), ZKR_ECLOSED (the client closed),
 * ZKR_EDELETED (another session deleted our node), ZKR_ENOAUTH, ZKR_ENOMEM,
 * ZKR_ENONODE (the lock's parent could not be created), ZKR_EZOOKEEPER.
 * hold is NULL unless rc is ZKR_OK.  acquire_id is the acquire's id (the
 * one the starting call stored in *acquire_id). */
typedef void (*zkr_acquire_fn)(uint64_t acquire_id, int rc, zkr_hold_t *hold, void *ctx);

/* Release a hold granted asynchronously and free it (from any thread, once).
 * Returns like the kind's release: ZKR_OK, ZKR_ELOST (the hold had been lost
 * with its session; its node is deleted anyway if it still exists), or a
 * refusal of the server (ZKR_ENOAUTH, ...: the node stays with its
 * session).  NULL: ZKR_EINVAL. */
ZKR_EXTERN int zkr_hold_release(zkr_hold_t *hold);

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

/* The hold's fencing token (its node's creation zxid).  ZKR_OK, ZKR_EINVAL. */
ZKR_EXTERN int zkr_hold_fencing_token(const zkr_hold_t *hold, int64_t *token);

/* The hold's state (SAFE, IN_DOUBT, LOST); ZKR_HOLD_NONE for NULL. */
ZKR_EXTERN zkr_hold_state_t zkr_hold_state(const zkr_hold_t *hold);

/* The hold's node path: *path is the caller's (zkr_free), as for every
 * *_node_path getter (0.2.0 returned a string the hold lent).  Returns
 * ZKR_OK, ZKR_EINVAL (NULL argument; *path NULL), ZKR_ENOMEM. */
ZKR_EXTERN int zkr_hold_node_path(const zkr_hold_t *hold, char **path);

/* The hold's kind: "mutex", "semaphore-mutex", "read", "write", "leader"
 * (zkr_leader_acquire_async); "invalid" for NULL. */
ZKR_EXTERN const char *zkr_hold_kind(const zkr_hold_t *hold);

/* Guarded by the hold: zkr_guarded_write on its node (zkr/guard.h), and
 * ZKR_EINVAL (hold NULL), ZKR_EGUARD also when the hold is already known
 * LOST (nothing sent). */
ZKR_EXTERN int zkr_hold_guarded_write(zkr_hold_t *hold, zkr_op_t *ops, size_t n);

/* Proclaim through a "leader" hold.  Returns the codes of
 * zkr_latch_proclaim; ZKR_EINVAL also for a hold of another kind;
 * ZKR_ENOTLEADER when the hold is LOST. */
ZKR_EXTERN int zkr_hold_proclaim(zkr_hold_t *hold, const char *value);

#ifdef __cplusplus
}
#endif
#endif

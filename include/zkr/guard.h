/* Guarded writes: apply the program's own ZooKeeper writes only while a
 * hold stands.  One call sends the writes and a check that the holder's
 * node still exists as one multi (one transaction): either the node is
 * there and every write is applied, or nothing is written and the call
 * says so (ZKR_EGUARD).  Data in ZooKeeper then changes only while the
 * lock, lease or leadership is held (the answer to CURATOR-542/689: a
 * paused holder whose session expired cannot write after its successor
 * began).
 *
 *   zkr_op_t ops[2] = {
 *       ZKR_OP_SET_INIT("/app/jobs/last", "42", 2, -1),
 *       ZKR_OP_CREATE_INIT("/app/jobs/done-42", "", 0, 0),
 *   };
 *   int rc = zkr_mutex_guarded_write(m, ops, 2);
 *   if (rc == ZKR_EGUARD) ... the hold is gone: nothing was written
 *
 * Every hold kind has its call: zkr_mutex_guarded_write (the calling
 * thread's hold), zkr_lock_guarded_write (any zkr_lock_ref_t),
 * zkr_hold_guarded_write (a hold granted asynchronously, leadership terms
 * included), zkr_lease_guarded_write, and the leader recipes'
 * zkr_latch_guarded_write and zkr_selector_guarded_write (zkr/leader.h).
 * All of them are zkr_guarded_write on the hold's node path. */
#ifndef ZKR_GUARD_H
#define ZKR_GUARD_H

#include "zkr/async.h"
#include "zkr/client.h"
#include "zkr/common.h"
#include "zkr/errors.h"
#include "zkr/hold.h"
#include "zkr/lock.h"
#include "zkr/mutex.h"
#include "zkr/op.h"
#include "zkr/semaphore.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Apply ops[0..n) in one multi together with a check that the node at
 * guard_path (a hold's node) exists, on the client's current session,
 * which must be the session `guard_session` (the node's owner; 0: any).
 * Waits for the answer (at most the session timeout).  Returns:
 *   ZKR_OK          every write is applied (ops[i].rc ZKR_OK, created set)
 *   ZKR_EGUARD      the guard failed: the node is gone (deleted, or its
 *                   session expired), or the client's session is no longer
 *                   the node's.  Nothing was written.
 *   ZKR_EINVAL      NULL argument, n < 1 or n > ZKR_GUARD_OPS_MAX, a bad
 *                   path or type in ops, data_len > 0 with data NULL,
 *                   data_len over ZKR_DATA_MAX, or the writes together
 *                   (data, paths, ACLs) over ZooKeeper's default request
 *                   limit, jute.maxbuffer (1 MiB), for which a server
 *                   would drop the connection.  Nothing was sent.
 *   ZKR_ENONODE, ZKR_ENODEEXISTS, ZKR_ENOAUTH, ZKR_EZOOKEEPER (a version
 *                   mismatch among others): one of the program's writes was refused
 *                   (see its ops[i].rc); nothing was written
 *   ZKR_ECONNLOSS   the connection failed before the answer: the outcome
 *                   is unknown (the writes are applied only if the guard
 *                   held when the server ran them)
 *   ZKR_ESESSIONLOST, ZKR_ECLOSED, ZKR_ENOMEM */
ZKR_EXTERN int zkr_guarded_write(zkr_client_t *c, const char *guard_path, int64_t guard_session, zkr_op_t *ops,
                                 size_t n);

/* Each hold kind's guarded write is declared with its handle:
 * zkr_mutex_guarded_write (zkr/mutex.h), zkr_lock_guarded_write
 * (zkr/lock.h), zkr_lease_guarded_write (zkr/semaphore.h),
 * zkr_hold_guarded_write (zkr/hold.h), zkr_latch_guarded_write and
 * zkr_selector_guarded_write (zkr/leader.h); the operations, zkr_op_t, in
 * zkr/op.h.  Each returns the codes of zkr_guarded_write. */

#ifdef __cplusplus
}
#endif
#endif

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
#include "zkr/lock.h"
#include "zkr/mutex.h"
#include "zkr/semaphore.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The most operations one guarded write may carry (the guard's check is
 * added to them). */
#define ZKR_GUARD_OPS_MAX 1000

typedef enum zkr_op_type {
    ZKR_OP_CREATE = 1, /* create path with data (flags: ZKR_CREATE_*) */
    ZKR_OP_DELETE = 2, /* delete path at version (-1: any) */
    ZKR_OP_SET = 3,    /* set path's data at version (-1: any) */
    ZKR_OP_CHECK = 4   /* path exists at version (-1: any version) */
} zkr_op_type_t;

/* Flags of a create (ZooKeeper's modes).  A guarded create of an
 * ephemeral node belongs to the client's current session. */
#define ZKR_CREATE_PERSISTENT 0
#define ZKR_CREATE_EPHEMERAL 1
#define ZKR_CREATE_SEQUENTIAL 2

/* One write.  The program fills type, path, data/data_len (create, set),
 * flags (create), version (delete, set, check); the call fills rc (the
 * operation's own result: ZKR_OK, or why the transaction was refused:
 * ZKR_ENONODE, ZKR_ENODEEXISTS, ZKR_ENOAUTH, ZKR_EZOOKEEPER (a version
 * mismatch among others: zkr_last_zk_error tells which); ZKR_OK for every operation of a refused
 * transaction that was not the cause) and, for a create, created (the
 * node's path as made, sequence included: malloc'd, free() it; NULL
 * otherwise).  Creates use the client's ACL (zkr_client_options_t). */
typedef struct zkr_op {
    zkr_op_type_t type;
    const char *path;
    const char *data;
    size_t data_len;
    int flags;
    int32_t version;
    /* results */
    int rc;
    char *created;
} zkr_op_t;

#define ZKR_OP_CREATE_INIT(p, d, len, fl) {ZKR_OP_CREATE, (p), (d), (len), (fl), -1, 0, NULL}
#define ZKR_OP_DELETE_INIT(p, ver) {ZKR_OP_DELETE, (p), NULL, 0, 0, (ver), 0, NULL}
#define ZKR_OP_SET_INIT(p, d, len, ver) {ZKR_OP_SET, (p), (d), (len), 0, (ver), 0, NULL}
#define ZKR_OP_CHECK_INIT(p, ver) {ZKR_OP_CHECK, (p), NULL, 0, 0, (ver), 0, NULL}

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

/* The largest data a create or set may carry (ZooKeeper's default
 * jute.maxbuffer, 1 MiB, less room for the request's other fields). */
#define ZKR_DATA_MAX (1024 * 1024 - 16 * 1024)

/* Guarded by a hold: zkr_guarded_write on the hold's node.  Each returns
 * the codes of zkr_guarded_write, and also:
 *   ZKR_EINVAL     the object is NULL
 *   ZKR_ENOTOWNER  nothing is held (the calling thread's hold, for the
 *                  reentrant kinds): nothing was sent
 *   ZKR_EGUARD     also when the hold is already known LOST (nothing sent) */
ZKR_EXTERN int zkr_mutex_guarded_write(zkr_mutex_t *m, zkr_op_t *ops, size_t n);
ZKR_EXTERN int zkr_lock_guarded_write(zkr_lock_ref_t ref, zkr_op_t *ops, size_t n);
ZKR_EXTERN int zkr_hold_guarded_write(zkr_hold_t *hold, zkr_op_t *ops, size_t n);
ZKR_EXTERN int zkr_lease_guarded_write(zkr_lease_t *lease, zkr_op_t *ops, size_t n);

/* Free what a guarded write put in ops (the created paths); sets them to
 * NULL.  NULL ops is a no-op. */
ZKR_EXTERN void zkr_ops_clear(zkr_op_t *ops, size_t n);

#ifdef __cplusplus
}
#endif
#endif

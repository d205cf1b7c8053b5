/* What the recipes say to each other (never installed): the kinds of the
 * common lock interface, each kind's asynchronous target (small accessors
 * at the end of mutex.c, rwlock.c, semaphore.c, used by the lock table and
 * the public asynchronous calls), and a lease made of a granted node. */
#ifndef ZKR_RECIPES_H
#define ZKR_RECIPES_H

#include "engine/async.h"
#include "zkr/guard.h"
#include "zkr/lock.h"
#include "zkr/semaphore.h"

/* Kinds of zkr_lock_ref_t (lock.c: zkr__lock_ref_kind); 0 is invalid. */
#define ZKR__LK_MUTEX 1
#define ZKR__LK_SMUTEX 2
#define ZKR__LK_READ 3
#define ZKR__LK_WRITE 4
/* a term of leadership (zkr_leader_acquire_async): a hold, not a lock */
#define ZKR__LK_LEADER 5
int zkr__lock_ref_kind(zkr_lock_ref_t r);

void zkr__mutex_async_target(zkr_mutex_t *m, zkr__async_target_t *t);
void zkr__rwlock_async_target(zkr_rwlock_t *l, int writer, zkr__async_target_t *t);
void zkr__semaphore_async_target(zkr_semaphore_t *s, zkr__async_target_t *t);
zkr_semaphore_t *zkr__semaphore_mutex_sem(zkr_semaphore_mutex_t *m);
/* The hold listeners, stored for the public setters (lock.c, which makes
 * the lock references they are told). */
void zkr__mutex_set_listener(zkr_mutex_t *m, zkr__hold_listener_t hl);
void zkr__rwlock_set_listener(zkr_rwlock_t *l, zkr__hold_listener_t read, zkr__hold_listener_t write);
void zkr__semaphore_mutex_set_listener(zkr_semaphore_mutex_t *m, zkr__hold_listener_t hl);
/* A lease made of a granted node (moved out of *node): retains the client.
 * NULL on ZKR_ENOMEM or ZKR_ECLOSED (*node untouched then). */
zkr_lease_t *zkr__lease_wrap(zkr_client_t *c, zkr__node_t *node);

/* What a guarded write (guard.c) needs of a hold: its client, its node's
 * path (malloc'd: zkr__guard_run frees it), session and state. */
typedef struct zkr__guard {
    zkr_client_t *c;
    char *path;
    int64_t session;
    zkr_hold_state_t state;
} zkr__guard_t;
/* Fill g from a granted node.  Returns ZKR_OK, ZKR_ENOTOWNER (no node),
 * ZKR_ENOMEM. */
int zkr__guard_fill(zkr_client_t *c, const zkr__node_t *n, zkr__guard_t *g);
/* zkr_guarded_write guarded by g (a LOST hold: ZKR_EGUARD, nothing
 * sent); frees g->path. */
int zkr__guard_run(zkr__guard_t *g, zkr_op_t *ops, size_t n);
/* Each kind's hold as a guard (ZKR_ENOTOWNER when nothing is held). */
int zkr__mutex_guard(zkr_mutex_t *m, zkr__guard_t *g);
int zkr__rwlock_guard(zkr_rwlock_t *l, int writer, zkr__guard_t *g);
int zkr__lease_guard(const zkr_lease_t *lease, zkr__guard_t *g);
int zkr__semaphore_mutex_guard(zkr_semaphore_mutex_t *m, zkr__guard_t *g);
/* An asynchronous hold as a guard; ZKR_EINVAL when want_kind (non-zero)
 * is not its kind. */
int zkr__hold_guard(const zkr_hold_t *hold, int want_kind, zkr__guard_t *g);

#endif

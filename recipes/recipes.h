/* What the recipes say to each other (never installed): the kinds of the
 * common lock interface, each kind's asynchronous target (small accessors
 * at the end of mutex.c, rwlock.c, semaphore.c, used by the lock table and
 * the public asynchronous calls), and a lease made of a granted node. */
#ifndef ZKR_RECIPES_H
#define ZKR_RECIPES_H

#include "engine/async.h"
#include "zkr/lock.h"
#include "zkr/semaphore.h"

/* Kinds of zkr_lock_ref_t (lock.c: zkr__lock_ref_kind); 0 is invalid. */
#define ZKR__LK_MUTEX 1
#define ZKR__LK_SMUTEX 2
#define ZKR__LK_READ 3
#define ZKR__LK_WRITE 4
int zkr__lock_ref_kind(zkr_lock_ref_t r);

void zkr__mutex_async_target(zkr_mutex_t *m, zkr__async_target_t *t);
void zkr__rwlock_async_target(zkr_rwlock_t *l, int writer, zkr__async_target_t *t);
void zkr__semaphore_async_target(zkr_semaphore_t *s, zkr__async_target_t *t);
zkr_semaphore_t *zkr__semaphore_mutex_sem(zkr_semaphore_mutex_t *m);
/* A lease made of a granted node (moved out of *node): retains the client.
 * NULL on ZKR_ENOMEM or ZKR_ECLOSED (*node untouched then). */
zkr_lease_t *zkr__lease_wrap(zkr_client_t *c, zkr__node_t *node);

#endif

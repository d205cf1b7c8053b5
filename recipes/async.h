/* What the asynchronous layer (async.c) needs from the recipes: each lock
 * kind describes an acquire on it as a target (small accessors appended to
 * mutex.c, rwlock.c, semaphore.c), and a freed object cancels its pending
 * asynchronous acquires (zkr__async_forget). */
#ifndef ZKR_ASYNC_INTERNAL_H
#define ZKR_ASYNC_INTERNAL_H

#include "recipes/engine.h"
#include "zkr/async.h"

/* Kinds of zkr_lock_ref_t (lock.c: zkr__lock_ref_kind); 0 is invalid. */
#define ZKR__LK_MUTEX 1
#define ZKR__LK_SMUTEX 2
#define ZKR__LK_READ 3
#define ZKR__LK_WRITE 4
int zkr__lock_ref_kind(zkr_lock_ref_t r);

/* One acquire's target, filled by the kind's accessor.  The strings are the
 * object's (async.c copies them before the call returns). */
typedef struct zkr__async_target {
    zkr_client_t *c;
    const char *dir;             /* the queue's directory (the semaphore's locks/) */
    const zkr__driver_t *drv;    /* the queue's driver (the lock driver for a semaphore) */
    const char *leases_dir;      /* semaphore only: its leases/ */
    const char *count_path;      /* semaphore only: shared count, or NULL */
    int max;                     /* semaphore only: the fixed count */
    zkr__hold_listener_t hold;   /* the object's hold listener now */
    const void *owner;           /* the object (cancelled when it is freed) */
} zkr__async_target_t;

void zkr__mutex_async_target(zkr_mutex_t *m, zkr__async_target_t *t);
void zkr__rwlock_async_target(zkr_rwlock_t *l, int writer, zkr__async_target_t *t);
void zkr__semaphore_async_target(zkr_semaphore_t *s, zkr__async_target_t *t);
zkr_semaphore_t *zkr__semaphore_mutex_sem(zkr_semaphore_mutex_t *m);
/* A lease made of a granted node (moved out of *node): retains the client.
 * NULL on ZKR_ENOMEM or ZKR_ECLOSED (*node untouched then). */
zkr_lease_t *zkr__lease_wrap(zkr_client_t *c, zkr__node_t *node);

/* Cancel every pending asynchronous acquire made on `owner` (its object is
 * being freed): their completions report ZKR_ECANCELED. */
void zkr__async_forget(zkr_client_t *c, const void *owner);

#endif

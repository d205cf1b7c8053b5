/* Per-thread holds of one lock object: a thread's hold count and its node.
 * Shared by the reentrant recipes (mutex, both halves of the rwlock). */
#ifndef ZKR_HOLDS_H
#define ZKR_HOLDS_H

#include <pthread.h>

#include "engine/engine.h"

typedef struct zkr__hold {
    pthread_t tid;
    int count;
    zkr__node_t node;
    void *extra; /* recipe-specific (revocation watch) */
    struct zkr__hold *next;
} zkr__hold_t;

typedef struct zkr__holds {
    pthread_mutex_t *mu; /* the owning object's mutex */
    zkr__hold_t *list;
} zkr__holds_t;

/* The calling thread's hold, or NULL.  Caller holds *hs->mu. */
zkr__hold_t *zkr__holds_mine_locked(zkr__holds_t *hs);

/* If the calling thread has a hold, return 1 with *rc: ZKR_OK (count + 1),
 * ZKR_ELOST (the hold was lost with its session: nothing granted; release
 * it first) or ZKR_EBUSY (count overflow).  0 if it has none.  Takes
 * *hs->mu itself. */
int zkr__holds_reenter(zkr__holds_t *hs, zkr_client_t *c, int *rc);

/* 1 if the calling thread has a hold that is not LOST. */
int zkr__holds_mine_alive(zkr__holds_t *hs, zkr_client_t *c);

/* Record a new hold for the calling thread (count 1).  Takes the mutex. */
void zkr__holds_add(zkr__holds_t *hs, zkr__hold_t *h);

/* Drop one count of the calling thread's hold.  Returns ZKR_ENOTOWNER if it
 * has none, ZKR_OK with *out = NULL if holds remain, or ZKR_OK with *out the
 * unlinked hold when the count reached zero (the caller deletes its node and
 * frees it).  Takes the mutex. */
int zkr__holds_drop(zkr__holds_t *hs, zkr__hold_t **out);

/* Unlink and return any hold (for free); NULL when empty.  Takes the mutex. */
zkr__hold_t *zkr__holds_pop(zkr__holds_t *hs);

/* Copy of a field of the calling thread's hold.  ZKR_ENOTOWNER if none. */
int zkr__holds_token(zkr__holds_t *hs, int64_t *token);
int zkr__holds_path(zkr__holds_t *hs, char **path);
int zkr__holds_any(zkr__holds_t *hs);
/* The calling thread's hold as a guarded write's guard (recipes.h). */
struct zkr__guard;
int zkr__holds_guard(zkr__holds_t *hs, zkr_client_t *c, struct zkr__guard *g);

#endif

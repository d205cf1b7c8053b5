/* Writes of the counters (recipes/vwrite.c): a read that outlasts a lost
 * connection, a write whose lost answer is settled without ever applying
 * it twice, and the retry policies' sleeps.  Never installed. */
#ifndef ZKR_RECIPES_VWRITE_H
#define ZKR_RECIPES_VWRITE_H

#include "session/requests.h"
#include "zkr/counter.h"

/* What became of a write. */
typedef enum zkr__vw_outcome {
    ZKR__VW_APPLIED = 1, /* applied exactly once: stat is the node's after it */
    ZKR__VW_RACE = 2,    /* not applied: another write got there first */
    ZKR__VW_UNKNOWN = 3  /* the answer was lost and cannot be settled: applied
                            once or not at all */
} zkr__vw_outcome_t;

/* What to write: data (len bytes) at path, either a set with `version`
 * (czxid: the node's as read, to know it was not created again) or, with
 * create 1, a create of a missing node (persistent, parents as containers).
 * version -1 (unconditional set): a lost answer is never sent again. */
typedef struct zkr__vw {
    const char *path;
    const char *data;
    int len;
    int create;
    int version;
    int64_t czxid;
} zkr__vw_t;

/* Write w until the deadline (the rule of zkr/counter.h).  Returns ZKR_OK
 * with *outcome (APPLIED: *st set when st is not NULL), or nothing applied:
 * ZKR_ETIMEDOUT (nothing sent in time), ZKR_ENONODE (an unconditional set
 * of a missing node), ZKR_ENOAUTH, ZKR_ECLOSED, ZKR_ENOMEM, ZKR_EZOOKEEPER. */
int zkr__vwrite(zkr_client_t *c, const zkr__vw_t *w, int64_t deadline, zkr__vw_outcome_t *outcome,
                struct Stat *st);

/* Read path (GET) into rq until the deadline, sent again after a lost
 * connection.  Returns the ZooKeeper code (ZOK, ZNONODE, ZNOAUTH, ...;
 * ZOPERATIONTIMEOUT when the deadline passed, ZCLOSING). */
int zkr__vread(zkr_client_t *c, const char *path, zkr__rq_t *rq, int64_t deadline);

/* 1 if r is a valid policy. */
int zkr__retry_valid(const zkr_retry_t *r);
/* After the try numbered `tries` (1: the first) failed, started at
 * start_ms: sleep as the policy says and return 1 to try again, or 0 (the
 * policy ran out, or the sleep would pass the deadline: *late set). */
int zkr__retry_sleep(const zkr_retry_t *r, int tries, int64_t start_ms, int64_t deadline, int *late);

#endif

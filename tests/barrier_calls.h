/* Helpers of the barrier suites (test_barrier, test_barrier_interop): a
 * barrier call on a thread of its own, with its result and the time it
 * returned, and a stale "ready" node made by hand. */
#ifndef ZKR_BARRIER_CALLS_H
#define ZKR_BARRIER_CALLS_H

#include <pthread.h>
#include <stdint.h>
#include <zookeeper/zookeeper.h>

#include "zkr/zkr.h"

typedef enum bc_kind { BC_ENTER, BC_LEAVE, BC_WAIT } bc_kind_t;

typedef struct bcall {
    bc_kind_t kind;
    zkr_double_barrier_t *d; /* BC_ENTER, BC_LEAVE */
    zkr_barrier_t *b;        /* BC_WAIT */
    int64_t timeout;
    _Atomic int rc;          /* BC_PENDING until it returned (read while it runs) */
    int64_t returned;        /* zkt_now_ms() then */
    pthread_t t;
} bcall_t;
#define BC_PENDING 1

/* Run the call here (k filled as bc_start would). */
void bc_run(bcall_t *k, bc_kind_t kind, zkr_double_barrier_t *d, zkr_barrier_t *b, int64_t timeout);
/* Start it on a thread of its own (the test fails if it cannot). */
void bc_start(bcall_t *k, bc_kind_t kind, zkr_double_barrier_t *d, zkr_barrier_t *b, int64_t timeout);
/* Wait for it; its rc. */
int bc_join(bcall_t *k);

/* Make `path` (persistent) with a "ready" child, as a round whose members
 * died leaves it; the ready node's czxid (the test fails if it cannot). */
int64_t bc_stale_ready(zhandle_t *zh, const char *path);

#endif

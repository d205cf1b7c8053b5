/* What the barriers share (recipes/barrier_wait.c; never installed): a
 * blocking call's wait for watch events and state changes, and a request
 * sent again after a lost connection until its deadline. */
#ifndef ZKR_BARRIER_PRIVATE_H
#define ZKR_BARRIER_PRIVATE_H

#include <pthread.h>
#include <stdint.h>

#include "session/requests.h"
#include "zkr/barrier.h"

/* One blocking call's waiter: its watches (rq.watch = sub) and every
 * state change of the client count as news. */
typedef struct zkr__bwait {
    zkr_client_t *c;
    pthread_mutex_t mu;
    pthread_cond_t cond;
    uint64_t news; /* mu */
    void *sub;
    int listening;
} zkr__bwait_t;

/* Returns ZKR_OK, ZKR_EDEADLK (on the client's own threads: the events
 * come there), ZKR_ECLOSED, ZKR_ENOMEM, ZKR_ESYSTEM. */
int zkr__bwait_start(zkr__bwait_t *w, zkr_client_t *c);
/* After it returns no event reaches w.  Watches set meanwhile fire to
 * nobody. */
void zkr__bwait_stop(zkr__bwait_t *w);
/* The news count now: take it before sending the requests that set the
 * watches, then wait for it to move. */
uint64_t zkr__bwait_news(zkr__bwait_t *w);
/* Wait until news moved past `seen`: ZKR_OK, ZKR_ETIMEDOUT (deadline),
 * ZKR_ECLOSED (the client is closing). */
int zkr__bwait_until(zkr__bwait_t *w, uint64_t seen, int64_t deadline);

/* A call's deadlines: `wait` for the call, `send` for its requests (a
 * timeout of 0 waits for nobody, yet its requests may take up to
 * ZKR_BARRIER_LOOK_MS). */
typedef struct zkr__bdeadline {
    int64_t wait, send;
} zkr__bdeadline_t;
zkr__bdeadline_t zkr__bdeadline(int64_t timeout_ms);

/* zkr__request, sent again after ZCONNECTIONLOSS (or the C client's
 * ZOPERATIONTIMEOUT) until the deadline (for
 * a write: the caller's answer to "already done" must be right, as
 * ZNODEEXISTS after a create, ZNONODE after a delete).  `session` (0:
 * any): the answer of a request sent on another session is
 * ZSESSIONEXPIRED (the work of that session is over). */
int zkr__bsend(zkr_client_t *c, zkr__rq_t *r, int64_t session, int64_t deadline);

#endif

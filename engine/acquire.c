/* The blocking acquire: a record of the one machine (record_step.c), run by
 * the one executor (the client thread) like every other acquire; the
 * caller waits on the record's own condition variable for its end, and
 * takes the result.  The executor ends it at its deadline whatever is in
 * flight (async.c); the caller's own wait is bounded the same way, so the
 * call returns within its time limit even if the client thread is late.
 * A caller that leaves early (the client closing, the limit passed) gives
 * the record up: the executor ends it, and a node it granted meanwhile is
 * deleted on delivery (a cancelled grant). */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "engine/record.h"

/* Nothing to hand over to a caller that has left: deliver_one deleted a
 * granted node already (the record was cancelled). */
static void deliver_to_nobody(zkr_client_t *c, int rc, zkr__node_t *node, const zkr__async_done_t *d)
{
    (void)c;
    (void)rc;
    (void)node;
    (void)d;
}

/* How long after the executor's own end of the record its caller gives up
 * by itself (the executor is late only if its thread is starved). */
#define WAITER_SLACK_MS 20

int zkr__acquire(const zkr__async_target_t *t, int64_t deadline, zkr__node_t *out)
{
    zkr_client_t *c = t->c;
    memset(out, 0, sizeof *out);
    zkr__async_use(c);
    zkr__record_t *op = zkr__record_new(t, deadline);
    if (!op)
        return ZKR_ENOMEM;
    op->waited = 1;
    op->done = (zkr__async_done_t){.deliver = deliver_to_nobody, .on_client = 1};
    /* A node sent ahead for this very queue (the multi-lock's parts; a
     * semaphore's locks/ node). */
    zkr__strvec_t kids = {NULL, 0};
    zkr__prefetch_miss_t miss;
    if (zkr__prefetch_take_offered(c, op->dir, op->drv, &op->node, &kids, &miss)) {
        op->phase = ZKR__PH_QUEUE;
        op->lsession = op->node.session;
        memcpy(op->uuid, op->node.uuid, sizeof op->uuid);
        if (kids.v) {
            op->nw.listed = 1;
            op->nw.kids = kids;
        } else {
            op->need_look = 1;
        }
    }
    op->need_parents = miss.dir_missing; /* the parents, then the create: one round trip */
    if (miss.reply_lost) {
        /* The create sent ahead lost its reply: the one lost-reply policy,
         * the machine's recovery (find our node by its prefix, adopt it if
         * our session made it). */
        op->phase = ZKR__PH_RECOVER;
        memcpy(op->uuid, miss.uuid, sizeof op->uuid);
        op->csession = miss.session;
        op->recover_tries = 1;
        op->need_look = 1;
    }
    pthread_mutex_lock(&c->mu);
    int rc = zkr__record_add_locked(c, op);
    if (rc != ZKR_OK) {
        pthread_mutex_unlock(&c->mu);
        zkr__node_delete_nowait(c, &op->node);
        zkr__record_free(op);
        return rc;
    }
    pthread_mutex_unlock(&c->mu);
    if (op->node.track) /* (the track's lock is c->mu) */
        zkr__track_set_waiter(c, op->node.track, op->id);
    pthread_mutex_lock(&c->mu);
    zkr__record_wake_locked(c, op, 0); /* the client thread sends the create, or decides */
    pthread_mutex_unlock(&c->mu);

    int64_t give_up = zkr__hard_deadline(deadline);
    if (give_up < INT64_MAX - WAITER_SLACK_MS)
        give_up += WAITER_SLACK_MS;
    pthread_mutex_lock(&op->mu);
    while (!op->finished && !op->close_wake) {
        if (zkr__cond_wait_until(&op->cond, &op->mu, give_up) == ETIMEDOUT)
            break;
    }
    pthread_mutex_unlock(&op->mu);

    pthread_mutex_lock(&c->mu);
    op->waited = 0;
    if (op->finished) {
        rc = op->rc;
        *out = op->granted;
        memset(&op->granted, 0, sizeof op->granted);
        op->taken = op->delivered = 1;
        /* answers still in flight only clean up; the client thread frees it */
        zkr__record_maybe_free_locked(c, op);
    } else {
        /* Gone before its end: the executor ends it, and undoes a grant. */
        rc = c->closing ? ZKR_ECLOSED : ZKR_ETIMEDOUT;
        op->cancel = 1;
        zkr__record_wake_locked(c, op, 0);
    }
    pthread_mutex_unlock(&c->mu);
    return rc;
}

int zkr__queue_acquire(zkr_client_t *c, const char *dir, const zkr__driver_t *drv, zkr__hold_listener_t hold,
                       int64_t deadline, zkr__node_t *out)
{
    zkr__async_target_t t = {.c = c, .dir = dir, .drv = drv, .hold = hold};
    return zkr__acquire(&t, deadline, out);
}

/* The blocking acquire: the one machine (aop_step.c), stepped on the
 * caller's thread.  The caller waits on the acquire's own condition
 * variable for news (answers, watches, a delivered state, close) or its
 * deadline, and takes the result itself; the acquire then passes to the
 * client thread, which only cleans up after answers still in flight. */
#include "config.h"

#include <string.h>

#include "engine/aop.h"

int zkr__acquire(const zkr__async_target_t *t, int64_t deadline, zkr__node_t *out)
{
    zkr_client_t *c = t->c;
    memset(out, 0, sizeof *out);
    zkr__async_use(c);
    zkr__aop_t *op = zkr__aop_new(t, deadline);
    if (!op)
        return ZKR_ENOMEM;
    atomic_store(&op->blocking, 1);
    /* A node sent ahead for this very queue (the multi-lock's parts; a
     * semaphore's locks/ node). */
    zkr__strvec_t kids = {NULL, 0};
    if (zkr__prefetch_take_offered(c, op->dir, op->drv, &op->node, &kids)) {
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
    op->kick = 1; /* step at once: send the create, or decide */
    pthread_mutex_lock(&c->mu);
    int rc = zkr__aop_add_locked(c, op);
    if (rc != ZKR_OK) {
        pthread_mutex_unlock(&c->mu);
        zkr__node_delete_nowait(c, &op->node);
        zkr__aop_free(op);
        return rc;
    }
    pthread_mutex_unlock(&c->mu);
    if (op->node.track) /* (the track's lock is c->mu) */
        zkr__track_set_waiter(c, op->node.track, op->id);
    /* Answers wake us through op->mu alone: no client-wide lock on the
     * way from ZooKeeper's completion thread to this one. */
    pthread_mutex_lock(&op->mu);
    while (!op->finished) {
        if (!op->kick) {
            /* At the deadline with nothing in flight, the step ends it;
             * with requests in flight it waits for their answers (the
             * step decides at a look boundary, as an asynchronous one). */
            int64_t until = op->inflight > 0 ? INT64_MAX : op->deadline;
            if (zkr__cond_wait_until(&op->cond, &op->mu, until) != 0 && op->inflight == 0)
                op->kick = 1;
            continue;
        }
        op->kick = 0;
        pthread_mutex_unlock(&op->mu);
        zkr__aop_step(c, op);
        pthread_mutex_lock(&op->mu);
    }
    pthread_mutex_unlock(&op->mu);
    pthread_mutex_lock(&c->mu);
    rc = op->rc;
    *out = op->granted;
    memset(&op->granted, 0, sizeof op->granted);
    /* From here the client thread steps it (answers still in flight only
     * clean up) and frees it. */
    pthread_mutex_lock(&op->mu);
    atomic_store(&op->blocking, 0);
    op->taken = op->delivered = 1;
    if (op->kick) {
        op->kick = 0;
        zkr__aop_ready_locked(c, op);
    }
    pthread_mutex_unlock(&op->mu);
    zkr__aop_maybe_free_locked(c, op);
    pthread_mutex_unlock(&c->mu);
    return rc;
}

int zkr__queue_acquire(zkr_client_t *c, const char *dir, const zkr__driver_t *drv, int64_t deadline,
                       zkr__node_t *out)
{
    zkr__async_target_t t = {.c = c, .dir = dir, .drv = drv};
    return zkr__acquire(&t, deadline, out);
}

/* The acquire machine as the client sees it: the core's hooks (the client
 * thread steps the ready asynchronous acquires and ends those past their
 * deadline; a delivered state, a release nearby or an outside deletion
 * makes an acquire look again; close ends the rest), starting and
 * cancelling an asynchronous acquire, the asynchronous release, and the
 * program's dispatch (mode, event descriptor, dispatch call).  See record.h
 * for the threads. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "engine/record.h"

#define STEPS_PER_RUN 256

static _Thread_local const zkr_client_t *dispatching;

/* ---- the core's hooks ---- */

static int pending_locked(const zkr_client_t *c)
{
    return c->ready_head != NULL;
}

/* What the callback thread delivers: the library's own ends, and the
 * program's in ZKR_DISPATCH_THREAD mode. */
static int deliver_which(const zkr_client_t *c)
{
    return ZKR__DELIVER_OWN | (c->dispatch_mode == ZKR_DISPATCH_THREAD ? ZKR__DELIVER_PROGRAM : 0);
}

static int deliver_pending_locked(const zkr_client_t *c)
{
    return c->own_ended_head != NULL || (c->dispatch_mode == ZKR_DISPATCH_THREAD && c->ended_head != NULL);
}

static int deliver_relocking(zkr_client_t *c)
{
    return !c->closing && zkr__record_deliver_one_relocking(c, deliver_which(c));
}

static int64_t run_relocking(zkr_client_t *c)
{
    for (int n = 0; n < STEPS_PER_RUN && c->ready_head && !c->closing; n++) {
        zkr__record_t *op = c->ready_head;
        c->ready_head = op->ready_next;
        if (!c->ready_head)
            c->ready_tail = NULL;
        pthread_mutex_unlock(&c->mu);
        zkr__record_step(c, op);
        pthread_mutex_lock(&c->mu);
        op->in_ready = 0;
        /* news that came while it stepped: again */
        pthread_mutex_lock(&op->mu);
        if (zkr__news_any(&op->nw, op->finished))
            zkr__record_ready_locked(c, op);
        pthread_mutex_unlock(&op->mu);
        zkr__record_maybe_free_locked(c, op);
    }
    int64_t now = zkr__now_ms();
    if (now < c->records_due_at) /* no record's time has come: no scan */
        return c->ready_head ? now : c->records_due_at;
    int64_t next = INT64_MAX;
    for (zkr__record_t *op = c->records; op; op = op->next) {
        if (op->release || op->finished || op->expired)
            continue;
        pthread_mutex_lock(&op->mu);
        int inflight = op->inflight + op->end_pending;
        pthread_mutex_unlock(&op->mu);
        int64_t due;
        if (op->ending) {
            /* its deletes awaited until end_by */
            due = op->end_by;
            if (due <= now) {
                op->expired = 1;
                zkr__record_wake_locked(c, op, 0);
                continue;
            }
        } else if (inflight > 0) {
            /* Its answers are awaited until the grace is over; then it
             * ends whatever is in flight (a stalled link never holds a
             * caller past its limit). */
            due = zkr__hard_deadline(op->deadline);
            if (due <= now) {
                op->expired = 1;
                zkr__record_wake_locked(c, op, 0);
                continue;
            }
        } else {
            /* (a retry's pause: not_before, cleared once it has passed) */
            due = op->not_before > 0 && op->not_before < op->deadline ? op->not_before : op->deadline;
            if (due <= now) {
                zkr__record_wake_locked(c, op, 0);
                /* its step may leave it waiting on: its deadline (after a
                 * pause) or the grace (a first create past the deadline)
                 * comes next */
                due = op->deadline > now ? op->deadline : zkr__hard_deadline(op->deadline);
            }
        }
        if (due < next)
            next = due;
    }
    c->records_due_at = next;
    return c->ready_head ? now : next;
}

static void state_locked(zkr_client_t *c, zkr_state_t s)
{
    (void)s;
    for (zkr__record_t *op = c->records; op; op = op->next) {
        if (!op->finished) /* after RECONNECTED the watch may be gone: look again */
            zkr__record_wake_locked(c, op, 1);
    }
}

static int in_dispatch(const zkr_client_t *c)
{
    return dispatching == c;
}

static void close_all(zkr_client_t *c)
{
    /* The client thread is gone and every ZooKeeper completion has run:
     * only the program's threads (dispatch, cancel) may still look. */
    pthread_mutex_lock(&c->mu);
    c->ready_head = c->ready_tail = NULL;
    for (zkr__record_t *op = c->records; op; op = op->next) {
        op->in_ready = 0;
        if (op->finished)
            continue;
        pthread_mutex_lock(&op->mu);
        op->finished = 1; /* ours now */
        pthread_mutex_unlock(&op->mu);
        pthread_mutex_unlock(&c->mu);
        /* The session is closed: its ephemeral nodes are gone. */
        zkr__track_remove(c, op->lease.track);
        zkr__track_remove(c, op->node.track);
        op->lease.track = op->node.track = NULL;
        pthread_mutex_lock(&c->mu);
        zkr__record_finish_locked(c, op, ZKR_ECLOSED);
    }
    while (zkr__record_deliver_one_relocking(c, ZKR__DELIVER_OWN | ZKR__DELIVER_PROGRAM))
        ;
    /* Wait for completions another thread's dispatch is running. */
    for (;;) {
        zkr__record_t *op = c->records;
        while (op && op->delivered)
            op = op->next;
        if (!op)
            break;
        pthread_cond_wait(&c->cond, &c->mu);
    }
    while (c->records) {
        zkr__record_t *op = c->records;
        c->records = op->next;
        zkr__record_free(op);
    }
    c->records_tail = NULL;
    pthread_mutex_unlock(&c->mu);
}

static void free_all(zkr_client_t *c)
{
    while (c->records) {
        zkr__record_t *op = c->records;
        c->records = op->next;
        zkr__record_free(op);
    }
    if (c->event_fd >= 0)
        close(c->event_fd);
    c->event_fd = -1;
}

/* The client is closing: blocking callers leave at once (ZKR_ECLOSED;
 * what their acquires made goes with the session).  c->mu held. */
static void closing_locked(zkr_client_t *c)
{
    for (zkr__record_t *op = c->records; op; op = op->next) {
        if (!op->waited)
            continue;
        pthread_mutex_lock(&op->mu);
        op->close_wake = 1;
        pthread_cond_signal(&op->cond);
        pthread_mutex_unlock(&op->mu);
    }
}

/* The node of the acquire with this id was deleted by someone else: it
 * looks again (and finds it gone).  c->mu held. */
static void wake_id_locked(zkr_client_t *c, uint64_t id)
{
    zkr__record_t *op = zkr__record_find_locked(c, id);
    if (op && !op->finished)
        zkr__record_wake_locked(c, op, 1);
}

static const zkr__hooks_t hooks = {
    .closing_locked = closing_locked,
    .wake_id_locked = wake_id_locked,
    .run_relocking = run_relocking,
    .pending_locked = pending_locked,
    .deliver_relocking = deliver_relocking,
    .deliver_pending_locked = deliver_pending_locked,
    .state_locked = state_locked,
    .close = close_all,
    .free = free_all,
    .in_dispatch = in_dispatch,
};

/* The core calls the hooks once the client has an acquire, a dispatch
 * mode, an event descriptor or a dispatch call. */
void zkr__async_use(zkr_client_t *c)
{
    zkr__client_set_hooks(c, &hooks);
}

/* Cancel owner's acquires and let go of what they point to in it (c->mu
 * held). */
static void forget_locked(zkr_client_t *c, zkr__record_t *op)
{
    op->owner = NULL;
    op->speculate = NULL; /* the object's: it may be freed next */
    if (!op->taken)
        op->cancel = 1;
    if (!op->finished)
        zkr__record_wake_locked(c, op, 0);
}

void zkr__async_forget(zkr_client_t *c, const void *owner)
{
    pthread_mutex_lock(&c->mu);
    for (zkr__record_t *op = c->records; op; op = op->next)
        if (op->owner == owner)
            forget_locked(c, op);
    pthread_mutex_unlock(&c->mu);
}

void zkr__async_detach(zkr_client_t *c, const void *owner)
{
    pthread_mutex_lock(&c->mu);
    for (;;) {
        zkr__record_t *busy = NULL;
        for (zkr__record_t *op = c->records; op; op = op->next) {
            if (op->owner == owner) {
                forget_locked(c, op);
                op->detached = 1;
            }
            /* (a detached one whose deliver runs now on another thread:
             * it may still be inside the owner) */
            if (op->detached && op->delivering && !pthread_equal(op->delivering_thread, pthread_self()) &&
                op->done.ctx == owner)
                busy = op;
        }
        if (!busy)
            break;
        pthread_cond_wait(&c->cond, &c->mu); /* deliver_one broadcasts */
    }
    pthread_mutex_unlock(&c->mu);
}

/* ---- starting, cancelling, dispatching ---- */

int zkr__async_start(const zkr__async_target_t *t, int64_t timeout_ms, const zkr__async_done_t *done,
                     uint64_t *id)
{
    zkr_client_t *c = t->c;
    zkr__async_use(c);
    zkr__record_t *op = zkr__record_new(t, zkr__deadline(timeout_ms));
    if (!op)
        return ZKR_ENOMEM;
    op->done = *done;
    pthread_mutex_lock(&c->mu);
    int rc = zkr__record_add_locked(c, op);
    if (rc != ZKR_OK) {
        pthread_mutex_unlock(&c->mu);
        zkr__record_free(op);
        return rc;
    }
    zkr__record_wake_locked(c, op, 0); /* the client thread sends its create, in order */
    if (id)
        *id = op->id;
    pthread_mutex_unlock(&c->mu);
    return ZKR_OK;
}

/* ---- releasing without waiting ---- */

static void release_done(zkr_client_t *c, int rc, void *arg)
{
    zkr__record_t *op = arg;
    pthread_mutex_lock(&c->mu);
    zkr__record_finish_locked(c, op, rc);
    pthread_mutex_unlock(&c->mu);
}

/* The program's completion, then the reference to the client that the
 * released hold or lease held (the client is not closed yet: close waits
 * for every delivery). */
static void deliver_release(zkr_client_t *c, int rc, zkr__node_t *node, const zkr__async_done_t *d)
{
    (void)node;
    ((zkr_release_fn)d->fn)(rc, d->ctx);
    zkr__client_release(c);
}

int zkr__async_release(zkr_client_t *c, zkr__node_t *node, zkr_release_fn fn, void *ctx)
{
    zkr__async_use(c);
    zkr__record_t *op = zkr__record_alloc();
    if (!op)
        return ZKR_ENOMEM;
    op->c = c;
    op->release = 1;
    op->done = (zkr__async_done_t){.deliver = deliver_release, .fn = (void (*)(void))fn, .ctx = ctx};
    op->taken = 1; /* nothing to cancel */
    /* Inside the client from the record's publication until its delete is
     * on its way: a close meanwhile waits, and then finds the delete in
     * flight on the handle it closes (answered ZCLOSING), never a record
     * it would end and free under us. */
    int rc = zkr__client_enter(c); /* ZKR_ECLOSED once closing */
    if (rc == ZKR_OK) {
        pthread_mutex_lock(&c->mu);
        rc = zkr__record_add_locked(c, op);
        pthread_mutex_unlock(&c->mu);
        if (rc != ZKR_OK)
            zkr__client_leave(c);
    }
    if (rc != ZKR_OK) {
        zkr__record_free(op);
        return rc;
    }
    zkr__node_delete_cb(c, node, release_done, op);
    zkr__client_leave(c);
    return ZKR_OK;
}

int zkr_async_cancel(zkr_client_t *c, uint64_t id)
{
    if (!c || id == 0)
        return ZKR_EINVAL;
    pthread_mutex_lock(&c->mu);
    zkr__record_t *op = zkr__record_find_locked(c, id);
    int rc = (op && !op->taken) ? ZKR_OK : ZKR_ENOTFOUND;
    if (rc == ZKR_OK) {
        op->cancel = 1;
        if (!op->finished)
            zkr__record_wake_locked(c, op, 0);
    }
    pthread_mutex_unlock(&c->mu);
    return rc;
}

int zkr_client_set_dispatch(zkr_client_t *c, zkr_dispatch_mode_t mode)
{
    if (!c || (mode != ZKR_DISPATCH_LOOP && mode != ZKR_DISPATCH_THREAD))
        return ZKR_EINVAL;
    zkr__async_use(c);
    pthread_mutex_lock(&c->mu);
    int rc = c->closing ? ZKR_ECLOSED : ZKR_OK;
    if (rc == ZKR_OK) {
        c->dispatch_mode = mode;
        zkr__wake_callbacks_locked(c);
    }
    pthread_mutex_unlock(&c->mu);
    return rc;
}

int zkr_client_fd(zkr_client_t *c)
{
    if (!c)
        return ZKR_EINVAL;
    zkr__async_use(c);
    pthread_mutex_lock(&c->mu);
    int rc = c->closing ? ZKR_ECLOSED : ZKR_OK;
    if (rc == ZKR_OK && c->event_fd < 0) {
        c->event_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (c->event_fd < 0)
            rc = ZKR_ESYSTEM;
        else if (c->ended_head)
            zkr__record_raise_fd_locked(c);
    }
    if (rc == ZKR_OK)
        rc = c->event_fd;
    pthread_mutex_unlock(&c->mu);
    return rc;
}

int zkr_client_dispatch(zkr_client_t *c)
{
    if (!c)
        return ZKR_EINVAL;
    zkr__async_use(c);
    const zkr_client_t *outer = dispatching;
    dispatching = c;
    pthread_mutex_lock(&c->mu);
    int waiting = 0;
    for (zkr__record_t *op = c->ended_head; op; op = op->ended_next)
        waiting++;
    int ran = 0;
    while (ran < waiting && zkr__record_deliver_one_relocking(c, ZKR__DELIVER_PROGRAM))
        ran++;
    if (!c->ended_head)
        zkr__record_lower_fd_locked(c);
    pthread_mutex_unlock(&c->mu);
    dispatching = outer;
    return ran;
}

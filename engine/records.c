/* The acquires' records and the client's lists of them (every one, the
 * asynchronous ones ready to step, the ended ones waiting for dispatch),
 * the event descriptor a loop polls, and the delivery of one ended
 * acquire or release.  c->mu held (see record.h). */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/record.h"

zkr__record_t *zkr__record_find_locked(zkr_client_t *c, uint64_t id)
{
    for (zkr__record_t *op = c->records; op; op = op->next)
        if (op->id == id)
            return op;
    return NULL;
}

void zkr__record_ready_locked(zkr_client_t *c, zkr__record_t *op)
{
    if (op->release)
        return; /* a release is never stepped: its delete's answer ends it */
    if (op->in_ready)
        return;
    op->in_ready = 1;
    op->ready_next = NULL;
    if (c->ready_tail)
        c->ready_tail->ready_next = op;
    else
        c->ready_head = op;
    c->ready_tail = op;
    zkr__wake_locked(c);
}

void zkr__record_wake_locked(zkr_client_t *c, zkr__record_t *op, int look)
{
    pthread_mutex_lock(&op->mu);
    if (look)
        op->nw.look = 1;
    zkr__record_ready_locked(c, op);
    pthread_mutex_unlock(&op->mu);
}

void zkr__record_raise_fd_locked(zkr_client_t *c)
{
    if (c->event_fd < 0 || c->event_fd_raised)
        return;
    uint64_t one = 1;
    if (write(c->event_fd, &one, sizeof one) == (ssize_t)sizeof one)
        c->event_fd_raised = 1;
}

void zkr__record_lower_fd_locked(zkr_client_t *c)
{
    if (c->event_fd < 0 || !c->event_fd_raised)
        return;
    uint64_t v;
    if (read(c->event_fd, &v, sizeof v) == (ssize_t)sizeof v || errno == EAGAIN)
        c->event_fd_raised = 0;
}

void zkr__news_clear(zkr__news_t *nw)
{
    free(nw->path);
    free(nw->ahead_path);
    zkr__strvec_free(&nw->kids);
    zkr__strvec_free(&nw->ahead_kids);
    memset(nw, 0, sizeof *nw);
}

int zkr__news_any(const zkr__news_t *nw, int finished)
{
    return nw->created || nw->listed || nw->counted || nw->watch_set || nw->parents || nw->existed || nw->ahead_created ||
           nw->ahead_listed || ((nw->look || nw->gone_first) && !finished);
}

/* Answers kept until the rest of the batch is answered. */
void zkr__news_park(zkr__record_t *op, zkr__news_t *nw)
{
    zkr__news_t *p = &op->parked;
    if (nw->listed) {
        zkr__strvec_free(&p->kids);
        p->kids = nw->kids;
        p->listed = 1;
        p->list_rc = nw->list_rc;
        nw->kids.v = NULL;
        nw->kids.n = 0;
    }
    if (nw->counted) {
        p->counted = 1;
        p->count_rc = nw->count_rc;
        p->count = nw->count;
    }
    if (nw->existed) {
        p->existed = 1;
        p->exists_rc = nw->exists_rc;
        p->ex_czxid = nw->ex_czxid;
        p->ex_owner = nw->ex_owner;
    }
    if (nw->parents) {
        p->parents = 1;
        if (nw->parents_rc != ZOK && p->parents_rc == ZOK)
            p->parents_rc = nw->parents_rc;
    }
    p->look |= nw->look;
    p->gone_first |= nw->gone_first;
}

void zkr__news_unpark(zkr__record_t *op, zkr__news_t *nw)
{
    zkr__news_t *p = &op->parked;
    if (p->listed && !nw->listed) {
        nw->listed = 1;
        nw->list_rc = p->list_rc;
        nw->kids = p->kids;
        p->kids.v = NULL;
        p->kids.n = 0;
    }
    if (p->counted && !nw->counted) {
        nw->counted = 1;
        nw->count_rc = p->count_rc;
        nw->count = p->count;
    }
    if (p->existed && !nw->existed) {
        nw->existed = 1;
        nw->exists_rc = p->exists_rc;
        nw->ex_czxid = p->ex_czxid;
        nw->ex_owner = p->ex_owner;
    }
    if (p->parents) {
        nw->parents = 1;
        if (nw->parents_rc == ZOK)
            nw->parents_rc = p->parents_rc;
    }
    nw->look |= p->look;
    nw->gone_first |= p->gone_first;
    zkr__news_clear(p);
}

void zkr__record_free(zkr__record_t *op)
{
    zkr__news_clear(&op->nw);
    zkr__news_clear(&op->parked);
    free(op->watching);
    free(op->dir);
    free(op->leases_dir);
    free(op->count_path);
    free(op->value);
    zkr__node_clear(&op->node);
    zkr__node_clear(&op->lease);
    zkr__node_clear(&op->granted);
    zkr__strvec_free(&op->ahead_kids);
    free(op->rpath);
    free(op->cpath);
    zkr__sync_destroy(&op->mu, &op->cond);
    free(op);
}

/* Free op if nothing will touch it any more.  c->mu held. */
void zkr__record_maybe_free_locked(zkr_client_t *c, zkr__record_t *op)
{
    if (!op->delivered || op->in_ready || op->waited)
        return;
    pthread_mutex_lock(&op->mu);
    int busy = op->inflight > 0 || op->end_pending > 0;
    pthread_mutex_unlock(&op->mu);
    if (busy)
        return;
    if (op->prev)
        op->prev->next = op->next;
    else
        c->records = op->next;
    if (op->next)
        op->next->prev = op->prev;
    else
        c->records_tail = op->prev;
    zkr__record_free(op);
}

/* Append op to a list of ended acquires (ended_next), and take the first. */
static void push_done(zkr__record_t **head, zkr__record_t **tail, zkr__record_t *op)
{
    op->ended_next = NULL;
    if (*tail)
        (*tail)->ended_next = op;
    else
        *head = op;
    *tail = op;
}

static zkr__record_t *take_done(zkr__record_t **head, zkr__record_t **tail)
{
    zkr__record_t *op = *head;
    if (op && !(*head = op->ended_next))
        *tail = NULL;
    return op;
}

void zkr__record_finish_locked(zkr_client_t *c, zkr__record_t *op, int rc)
{
    pthread_mutex_lock(&op->mu);
    op->finished = 1;
    op->rc = rc;
    int waited = op->waited;
    if (waited)
        pthread_cond_signal(&op->cond); /* its caller takes the result */
    pthread_mutex_unlock(&op->mu);
    free(op->watching);
    op->watching = NULL;
    if (waited)
        return;
    if (op->done.on_client) { /* the library's own: the callback thread delivers it */
        push_done(&c->own_ended_head, &c->own_ended_tail, op);
        zkr__wake_callbacks_locked(c);
        return;
    }
    push_done(&c->ended_head, &c->ended_tail, op);
    zkr__record_raise_fd_locked(c);
    if (c->dispatch_mode == ZKR_DISPATCH_THREAD)
        zkr__wake_callbacks_locked(c);
}

zkr__record_t *zkr__record_alloc(void)
{
    zkr__record_t *op = calloc(1, sizeof *op);
    if (op && zkr__sync_init(&op->mu, &op->cond) != 0) {
        free(op);
        return NULL;
    }
    return op;
}

zkr__record_t *zkr__record_new(const zkr__async_target_t *t, int64_t deadline)
{
    zkr__record_t *op = zkr__record_alloc();
    if (!op)
        return NULL;
    op->c = t->c;
    op->sem = t->leases_dir != NULL;
    op->drv = t->drv;
    op->dir = strdup(t->dir);
    if (op->sem) {
        op->leases_dir = strdup(t->leases_dir);
        op->count_path = t->count_path ? strdup(t->count_path) : NULL;
        op->max = t->max;
        op->speculate = t->count_path ? NULL : t->speculate;
    }
    if (t->data && (op->value = malloc(t->data_len > 0 ? (size_t)t->data_len : 1)) != NULL) {
        memcpy(op->value, t->data, (size_t)t->data_len);
        op->value_len = t->data_len;
    }
    if (!op->dir || (op->sem && (!op->leases_dir || (t->count_path && !op->count_path))) ||
        (t->data && !op->value)) {
        zkr__record_free(op);
        return NULL;
    }
    op->hl = t->hold;
    op->owner = t->owner;
    op->deadline = deadline;
    op->not_before = t->delay_ms > 0 ? zkr__now_ms() + t->delay_ms : 0;
    op->phase = ZKR__PH_START;
    return op;
}

void zkr__record_due_locked(zkr_client_t *c, int64_t at)
{
    if (at < c->records_due_at) {
        c->records_due_at = at;
        zkr__wake_locked(c); /* (its timer may be set later than this) */
    }
}

int zkr__record_add_locked(zkr_client_t *c, zkr__record_t *op)
{
    if (c->closing)
        return ZKR_ECLOSED;
    op->id = ++c->next_record_id;
    if (!op->release) {
        zkr__record_due_locked(c, op->not_before > 0 && op->not_before < op->deadline ? op->not_before
                                                                                       : op->deadline);
    }
    op->prev = c->records_tail;
    if (c->records_tail)
        c->records_tail->next = op;
    else
        c->records = op;
    c->records_tail = op;
    return ZKR_OK;
}

int zkr__record_deliver_one_relocking(zkr_client_t *c, int which)
{
    zkr__record_t *op = which & ZKR__DELIVER_OWN ? take_done(&c->own_ended_head, &c->own_ended_tail) : NULL;
    if (!op && (which & ZKR__DELIVER_PROGRAM)) {
        op = take_done(&c->ended_head, &c->ended_tail);
        if (!c->ended_head)
            zkr__record_lower_fd_locked(c);
    }
    if (!op)
        return 0;
    op->taken = 1;
    int rc = op->rc;
    zkr__node_t node = op->granted;
    memset(&op->granted, 0, sizeof op->granted);
    /* Cancelled (or closing) after the grant, before delivery: undo it.
     * The delete is not waited for: this may be the client thread, which
     * never waits on the network. */
    int undo = rc == ZKR_OK && !op->release && (op->cancel || c->closing);
    int undo_rc = op->cancel ? ZKR_ECANCELED : ZKR_ECLOSED;
    int detached = op->detached;
    if (!detached) {
        op->delivering = 1;
        op->delivering_thread = pthread_self();
    }
    pthread_mutex_unlock(&c->mu);
    if (undo || (detached && rc == ZKR_OK)) {
        zkr__node_delete_nowait(c, &node);
        rc = undo ? undo_rc : ZKR_ECANCELED;
    }
    if (!detached) {
        op->done.id = op->id;
        op->done.deliver(c, rc, rc == ZKR_OK ? &node : NULL, &op->done);
    }
    zkr__node_clear(&node); /* deliver moved it out, or it is empty */
    pthread_mutex_lock(&c->mu);
    op->delivering = 0;
    op->delivered = 1;
    pthread_cond_broadcast(&c->cond);
    zkr__record_maybe_free_locked(c, op);
    return 1;
}

/* The acquires' records and the client's lists of them (every one, the
 * asynchronous ones ready to step, the ended ones waiting for dispatch),
 * the event descriptor a loop polls, and the delivery of one ended
 * acquire or release.  c->mu held (see aop.h). */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/aop.h"

zkr__aop_t *zkr__aop_find_locked(zkr_client_t *c, uint64_t id)
{
    for (zkr__aop_t *op = c->aops; op; op = op->next)
        if (op->id == id)
            return op;
    return NULL;
}

void zkr__aop_ready_locked(zkr_client_t *c, zkr__aop_t *op)
{
    if (op->release)
        return; /* a release is never stepped: its delete's answer ends it */
    if (op->in_ready)
        return;
    op->in_ready = 1;
    op->rnext = NULL;
    if (c->aready_tail)
        c->aready_tail->rnext = op;
    else
        c->aready = op;
    c->aready_tail = op;
    zkr__wake_locked(c);
}

void zkr__aop_wake_locked(zkr_client_t *c, zkr__aop_t *op, int look)
{
    pthread_mutex_lock(&op->mu);
    if (look)
        op->nw.look = 1;
    zkr__aop_ready_locked(c, op);
    pthread_mutex_unlock(&op->mu);
}

void zkr__aop_raise_fd_locked(zkr_client_t *c)
{
    if (c->afd < 0 || c->afd_raised)
        return;
    uint64_t one = 1;
    if (write(c->afd, &one, sizeof one) == (ssize_t)sizeof one)
        c->afd_raised = 1;
}

void zkr__aop_lower_fd_locked(zkr_client_t *c)
{
    if (c->afd < 0 || !c->afd_raised)
        return;
    uint64_t v;
    if (read(c->afd, &v, sizeof v) == (ssize_t)sizeof v || errno == EAGAIN)
        c->afd_raised = 0;
}

void zkr__news_clear(zkr__news_t *nw)
{
    free(nw->path);
    free(nw->spath);
    zkr__strvec_free(&nw->kids);
    zkr__strvec_free(&nw->skids);
    memset(nw, 0, sizeof *nw);
}

int zkr__news_any(const zkr__news_t *nw, int finished)
{
    return nw->created || nw->listed || nw->counted || nw->wset || nw->parents || nw->existed || nw->screated ||
           nw->slisted || ((nw->look || nw->gone_first) && !finished);
}

/* Answers kept until the rest of the batch is answered. */
void zkr__news_park(zkr__aop_t *op, zkr__news_t *nw)
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

void zkr__news_unpark(zkr__aop_t *op, zkr__news_t *nw)
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

void zkr__aop_free(zkr__aop_t *op)
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
    zkr__strvec_free(&op->skids);
    free(op->rpath);
    free(op->cpath);
    zkr__sync_destroy(&op->mu, &op->cond);
    free(op);
}

/* Free op if nothing will touch it any more.  c->mu held. */
void zkr__aop_maybe_free_locked(zkr_client_t *c, zkr__aop_t *op)
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
        c->aops = op->next;
    if (op->next)
        op->next->prev = op->prev;
    else
        c->aops_tail = op->prev;
    zkr__aop_free(op);
}

/* Append op to a list of ended acquires (dnext), and take the first. */
static void push_done(zkr__aop_t **head, zkr__aop_t **tail, zkr__aop_t *op)
{
    op->dnext = NULL;
    if (*tail)
        (*tail)->dnext = op;
    else
        *head = op;
    *tail = op;
}

static zkr__aop_t *take_done(zkr__aop_t **head, zkr__aop_t **tail)
{
    zkr__aop_t *op = *head;
    if (op && !(*head = op->dnext))
        *tail = NULL;
    return op;
}

void zkr__aop_finish_locked(zkr_client_t *c, zkr__aop_t *op, int rc)
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
    if (op->timed) {
        op->timed = 0;
        c->aops_timed--;
    }
    if (waited)
        return;
    if (op->done.on_client) { /* the library's own: the callback thread delivers it */
        push_done(&c->ainner, &c->ainner_tail, op);
        zkr__wake_callbacks_locked(c);
        return;
    }
    push_done(&c->adone, &c->adone_tail, op);
    zkr__aop_raise_fd_locked(c);
    if (c->adispatch == ZKR_DISPATCH_THREAD)
        zkr__wake_callbacks_locked(c);
}

zkr__aop_t *zkr__aop_alloc(void)
{
    zkr__aop_t *op = calloc(1, sizeof *op);
    if (op && zkr__sync_init(&op->mu, &op->cond) != 0) {
        free(op);
        return NULL;
    }
    return op;
}

zkr__aop_t *zkr__aop_new(const zkr__async_target_t *t, int64_t deadline)
{
    zkr__aop_t *op = zkr__aop_alloc();
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
        zkr__aop_free(op);
        return NULL;
    }
    op->hfn = t->hold.fn;
    op->hctx = t->hold.ctx;
    op->owner = t->owner;
    op->deadline = deadline;
    op->not_before = t->delay_ms > 0 ? zkr__now_ms() + t->delay_ms : 0;
    op->phase = ZKR__PH_START;
    return op;
}

int zkr__aop_add_locked(zkr_client_t *c, zkr__aop_t *op)
{
    if (c->closing)
        return ZKR_ECLOSED;
    op->id = ++c->next_aop_id;
    if (!op->release) {
        op->timed = 1;
        c->aops_timed++;
    }
    op->prev = c->aops_tail;
    if (c->aops_tail)
        c->aops_tail->next = op;
    else
        c->aops = op;
    c->aops_tail = op;
    return ZKR_OK;
}

int zkr__aop_deliver_one_locked(zkr_client_t *c, int which)
{
    zkr__aop_t *op = which & ZKR__DELIVER_OWN ? take_done(&c->ainner, &c->ainner_tail) : NULL;
    if (!op && (which & ZKR__DELIVER_PROGRAM)) {
        op = take_done(&c->adone, &c->adone_tail);
        if (!c->adone)
            zkr__aop_lower_fd_locked(c);
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
    if (!detached)
        op->done.deliver(c, rc, rc == ZKR_OK ? &node : NULL, &op->done);
    zkr__node_clear(&node); /* deliver moved it out, or it is empty */
    pthread_mutex_lock(&c->mu);
    op->delivering = 0;
    op->delivered = 1;
    pthread_cond_broadcast(&c->cond);
    zkr__aop_maybe_free_locked(c, op);
    return 1;
}

/* Deletes combined per handle (zkr__zh_delete): while one of a handle's
 * deletes is in flight, the deletes that come meanwhile wait and then go
 * out together, as one multi (one transaction), when its answer comes.
 * One thread alone never waits (nothing of its own is in flight when it
 * releases); many threads on one client send far fewer requests, and the
 * server commits far fewer transactions.  The queue is guarded by the
 * handle's req_mu; a queue that is not empty always has a batch in flight
 * (registered on the handle) whose answer, or close, takes it over. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "recipes/core.h"

typedef struct batch {
    zkr__req_t req; /* first */
    zkr__zh_t *h;
    int alone;      /* sent again on its own after a refused multi: not the handle's batch in flight */
    size_t n;
    zkr__zdel_t **d;
    zoo_op_t *ops;
    zoo_op_result_t *res;
} batch_t;

static void batch_free(batch_t *b)
{
    free(b->res);
    free(b->ops);
    free(b->d);
    free(b);
}

/* Take the waiting deletes over; if there are none, nothing of h's is in
 * flight any more. */
static zkr__zdel_t *queue_take(zkr__zh_t *h)
{
    pthread_mutex_lock(&h->req_mu);
    zkr__zdel_t *list = h->dq_head;
    h->dq_head = h->dq_tail = NULL;
    if (!list)
        h->dq_inflight = 0;
    pthread_mutex_unlock(&h->req_mu);
    return list;
}

static void finish_all(zkr__zdel_t *list, int rc)
{
    while (list) {
        zkr__zdel_t *next = list->next;
        list->done(list, rc);
        list = next;
    }
}

static int batch_send(zkr__zh_t *h, zkr__zdel_t *list, int alone);

/* The answer to batch b (rc), or its handle's close (can_send 0: the C
 * client is gone or going, nothing more may be sent). */
static void batch_answer(batch_t *b, int rc, int can_send)
{
    zkr__zh_t *h = b->h;
    if (!b->alone) {
        /* The handle's next batch goes out before this one's deletes are
         * told: their waiters may add more. */
        zkr__zdel_t *next;
        while ((next = queue_take(h)) != NULL) {
            int zrc = can_send ? batch_send(h, next, 0) : ZCLOSING;
            if (zrc == ZOK)
                break;
            finish_all(next, zrc);
        }
    }
    if (can_send && rc != ZOK && b->n > 1 && zkr__zk_class(rc) == ZKR__ZC_FINAL) {
        /* Refused as a whole (one node already gone, say): nothing was
         * deleted; each goes on its own, with its own answer. */
        for (size_t i = 0; i < b->n; i++) {
            b->d[i]->next = NULL;
            int zrc = batch_send(h, b->d[i], 1);
            if (zrc != ZOK)
                b->d[i]->done(b->d[i], zrc);
        }
    } else {
        for (size_t i = 0; i < b->n; i++)
            b->d[i]->done(b->d[i], rc);
    }
    batch_free(b);
}

static void batch_done(int rc, const void *data)
{
    batch_t *b = (batch_t *)data;
    zkr__req_end(&b->req);
    batch_answer(b, rc, rc != ZCLOSING);
}

static void batch_closing(zkr__req_t *r)
{
    batch_answer((batch_t *)r, ZCLOSING, 0);
}

/* Send the deletes of list as one batch (a lone delete by itself).  ZOK
 * if sent; else why nothing was sent (the caller tells them). */
static int batch_send(zkr__zh_t *h, zkr__zdel_t *list, int alone)
{
    size_t n = 0;
    for (zkr__zdel_t *d = list; d; d = d->next)
        n++;
    batch_t *b = calloc(1, sizeof *b);
    if (!b)
        return ZSYSTEMERROR;
    b->h = h;
    b->alone = alone;
    b->n = n;
    b->d = calloc(n, sizeof *b->d);
    b->ops = calloc(n, sizeof *b->ops);
    b->res = calloc(n, sizeof *b->res);
    if (!b->d || !b->ops || !b->res) {
        batch_free(b);
        return ZSYSTEMERROR;
    }
    size_t i = 0;
    for (zkr__zdel_t *d = list; d; d = d->next, i++) {
        b->d[i] = d;
        zoo_delete_op_init(&b->ops[i], d->path, -1);
    }
    zkr__req_start(h, &b->req, batch_closing);
    int zrc = n == 1 ? zoo_adelete(h->zh, list->path, -1, batch_done, b)
                     : zoo_amulti(h->zh, (int)n, b->ops, b->res, batch_done, b);
    if (zrc != ZOK) {
        zkr__req_end(&b->req);
        batch_free(b);
    }
    return zrc;
}

void zkr__zh_delete(zkr__zh_t *h, zkr__zdel_t *d)
{
    d->next = NULL;
    pthread_mutex_lock(&h->req_mu);
    if (h->dq_inflight) {
        if (h->dq_tail)
            h->dq_tail->next = d;
        else
            h->dq_head = d;
        h->dq_tail = d;
        pthread_mutex_unlock(&h->req_mu);
        return;
    }
    h->dq_inflight = 1;
    pthread_mutex_unlock(&h->req_mu);
    zkr__zdel_t *list = d;
    int zrc;
    while (list && (zrc = batch_send(h, list, 0)) != ZOK) {
        finish_all(list, zrc);
        list = queue_take(h); /* what came meanwhile */
    }
}

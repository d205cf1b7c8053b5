/* Requests combined per handle: releases' deletes (zkr__zh_delete) and
 * acquires' creates (zkr__zh_create), each kind in a queue of its own.
 * While one batch of a kind is in flight, the requests of that kind that
 * come meanwhile wait, and go out together as one multi (one transaction)
 * when its answer comes.  One thread alone never waits (nothing of its own
 * is in flight when it sends); many threads on one client send far fewer
 * requests, and the server commits far fewer transactions.  The queues
 * are guarded by the handle's req_mu; a queue that is not empty always has
 * a batch in flight (registered on the handle) whose answer, or close,
 * takes it over. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "session/core_private.h"

/* A batch of one kind's requests, sent as one multi (a lone one as
 * itself).  Registered on its handle while in flight. */
typedef struct batch {
    zkr__req_t req; /* first */
    zkr__zh_t *h;
    int alone;      /* not the handle's batch in flight (a group, or sent again after a refused multi) */
    int behind;     /* creates: the listings went right behind the multi (a group) */
    int listed;     /* creates: the members' listings are sent (close answers only the creates) */
    size_t n;
    zkr__qlink_t **m; /* the members: zkr__zdel_t or zkr__zcreate_t */
    zoo_op_t *ops;
    zoo_op_result_t *res;
    char **names;   /* creates: the created names, as the server gives them */
} batch_t;

static void batch_free(batch_t *b)
{
    for (size_t i = 0; b->names && i < b->n; i++)
        free(b->names[i]);
    free(b->names);
    free(b->res);
    free(b->ops);
    free(b->m);
    free(b);
}

static size_t queue_count(const zkr__qlink_t *l);

/* A batch of list's members (creates: with a buffer for each name), or
 * NULL. */
static batch_t *batch_new(zkr__zh_t *h, zkr__qlink_t *list, int alone, int creates)
{
    batch_t *b = calloc(1, sizeof *b);
    if (!b)
        return NULL;
    b->h = h;
    b->alone = alone;
    b->n = queue_count(list);
    b->m = calloc(b->n, sizeof *b->m);
    b->ops = calloc(b->n, sizeof *b->ops);
    b->res = calloc(b->n, sizeof *b->res);
    int ok = b->m && b->ops && b->res && (!creates || (b->names = calloc(b->n, sizeof *b->names)));
    size_t i = 0;
    for (zkr__qlink_t *l = list; ok && l; l = l->next, i++) {
        b->m[i] = l;
        if (creates) {
            zkr__zcreate_t *z = (zkr__zcreate_t *)l;
            int len = (int)strlen(z->path) + 16; /* the 10-digit sequence, and more */
            ok = (b->names[i] = calloc(1, (size_t)len)) != NULL;
            zoo_create_op_init(&b->ops[i], z->path, z->value ? z->value : "", z->value ? z->value_len : 0, z->acl,
                               ZOO_EPHEMERAL_SEQUENTIAL, b->names[i], len);
        } else {
            zoo_delete_op_init(&b->ops[i], ((zkr__zdel_t *)l)->path, -1);
        }
    }
    if (!ok) {
        batch_free(b);
        return NULL;
    }
    return b;
}

#define DEL(b, i) ((zkr__zdel_t *)(b)->m[i])
#define CRE(b, i) ((zkr__zcreate_t *)(b)->m[i])

/* At most this many requests in one multi (far below the server's 1 MB
 * packet limit). */
#define BATCH_MAX 256

/* Join q, or, if none of q's batches is in flight, become the one in
 * flight: 1 (the caller sends e now) or 0 (queued). */
static int queue_join(zkr__zh_t *h, zkr__queue_t *q, zkr__qlink_t *e)
{
    e->next = NULL;
    pthread_mutex_lock(&h->req_mu);
    int lead = !q->inflight;
    if (lead) {
        q->inflight = 1;
    } else {
        if (q->tail)
            q->tail->next = e;
        else
            q->head = e;
        q->tail = e;
    }
    pthread_mutex_unlock(&h->req_mu);
    return lead;
}

/* Take the next batch over: up to BATCH_MAX, none that clashes with one
 * taken before it (clash NULL: none does); the others stay queued, in
 * order.  NULL: nothing was waiting, and nothing of q's is in flight any
 * more. */
static zkr__qlink_t *queue_take(zkr__zh_t *h, zkr__queue_t *q,
                                int (*clash)(const zkr__qlink_t *a, const zkr__qlink_t *b))
{
    zkr__qlink_t *take = NULL, **tail = &take, *kept = NULL;
    size_t n = 0;
    pthread_mutex_lock(&h->req_mu);
    zkr__qlink_t **pp = &q->head;
    while (*pp) {
        zkr__qlink_t *e = *pp;
        int skip = n >= BATCH_MAX;
        for (zkr__qlink_t *t = take; t && clash && !skip; t = t->next)
            skip = clash(t, e);
        if (skip) {
            kept = e;
            pp = &e->next;
            continue;
        }
        *pp = e->next;
        e->next = NULL;
        *tail = e;
        tail = &e->next;
        n++;
    }
    q->tail = kept;
    if (!take)
        q->inflight = 0;
    pthread_mutex_unlock(&h->req_mu);
    return take;
}

static size_t queue_count(const zkr__qlink_t *l)
{
    size_t n = 0;
    for (; l; l = l->next)
        n++;
    return n;
}

/* ---- deletes ---------------------------------------------------------------- */

static void finish_all(zkr__qlink_t *list, int rc)
{
    while (list) {
        zkr__zdel_t *d = (zkr__zdel_t *)list;
        list = list->next;
        d->done(d, rc);
    }
}

static int batch_send(zkr__zh_t *h, zkr__qlink_t *list, int alone);

/* The answer to batch b (rc), or its handle's close (can_send 0: the C
 * client is gone or going, nothing more may be sent). */
static void batch_answer(batch_t *b, int rc, int can_send)
{
    zkr__zh_t *h = b->h;
    if (!b->alone) {
        /* The handle's next batch goes out before this one's deletes are
         * told: their waiters may add more. */
        zkr__qlink_t *next;
        while ((next = queue_take(h, &h->dq, NULL)) != NULL) {
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
            b->m[i]->next = NULL;
            int zrc = batch_send(h, b->m[i], 1);
            if (zrc != ZOK)
                DEL(b, i)->done(DEL(b, i), zrc);
        }
    } else {
        for (size_t i = 0; i < b->n; i++)
            DEL(b, i)->done(DEL(b, i), rc);
    }
    batch_free(b);
}

/* The C client answers a multi still pending when its handle closes with
 * a made-up reply that a multi cannot read: ZMARSHALLINGERROR, not
 * ZCLOSING.  No server says that; its fate is unknown, as after a lost
 * connection. */
static int multi_rc(const batch_t *b, int rc)
{
    return b->n > 1 && rc == ZMARSHALLINGERROR ? ZCONNECTIONLOSS : rc;
}

static void batch_done(int rc, const void *data)
{
    batch_t *b = (batch_t *)data;
    zkr__req_end(&b->req);
    rc = multi_rc(b, rc);
    batch_answer(b, rc, rc != ZCLOSING);
}

static void batch_closing(zkr__req_t *r)
{
    batch_answer((batch_t *)r, ZCLOSING, 0);
}

/* Send the deletes of list as one batch (a lone delete by itself).  ZOK
 * if sent; else why nothing was sent (the caller tells them). */
static int batch_send(zkr__zh_t *h, zkr__qlink_t *list, int alone)
{
    batch_t *b = batch_new(h, list, alone, 0);
    if (!b)
        return ZSYSTEMERROR;
    zkr__req_start(h, &b->req, batch_closing);
    int zrc = b->n == 1 ? zoo_adelete(h->zh, DEL(b, 0)->path, -1, batch_done, b)
                        : zoo_amulti(h->zh, (int)b->n, b->ops, b->res, batch_done, b);
    if (zrc != ZOK) {
        zkr__req_end(&b->req);
        batch_free(b);
    }
    return zrc;
}

void zkr__zh_delete_group(zkr__zh_t *h, zkr__zdel_t *list)
{
    int zrc = batch_send(h, &list->link, 1);
    if (zrc != ZOK)
        finish_all(&list->link, zrc);
}

/* Send now, or join the batch behind the one in flight; if what is sent
 * now cannot be, it is told, and so is what came meanwhile. */
void zkr__zh_delete(zkr__zh_t *h, zkr__zdel_t *d)
{
    if (!queue_join(h, &h->dq, &d->link))
        return;
    zkr__qlink_t *list = &d->link;
    int zrc;
    while (list && (zrc = batch_send(h, list, 0)) != ZOK) {
        finish_all(list, zrc);
        list = queue_take(h, &h->dq, NULL);
    }
}

/* ---- creates ---------------------------------------------------------------- */

/* Creates combined the same way (zkr__zh_create), in a queue of their
 * own: a batch of several is one multi, and a multi's answer carries no
 * Stat, so the completion asks for one of the new nodes (the nodes of one
 * transaction share their czxid, the fencing token) and sends every
 * member's listing before it: the listings follow the creates on the
 * session, as for a lone create.  One node per directory in a batch: two
 * holders of one lock must never share a token. */
static void member_fail(zkr__zcreate_t *z, int rc, int list_too)
{
    z->created(rc, NULL, NULL, z->data);
    if (list_too)
        z->listed(rc, NULL, z->data);
}

static void members_fail(zkr__qlink_t *list, int rc)
{
    while (list) {
        zkr__zcreate_t *z = (zkr__zcreate_t *)list;
        list = list->next;
        member_fail(z, rc, 1);
    }
}

static void member_list(zkr__zh_t *h, zkr__zcreate_t *z)
{
    int zrc = zoo_aget_children(h->zh, z->dir, 0, z->listed, z->data);
    if (zrc != ZOK)
        z->listed(zrc, NULL, z->data);
}

/* Two creates in one directory never share a batch. */
static int same_dir(const zkr__qlink_t *a, const zkr__qlink_t *b)
{
    return strcmp(((const zkr__zcreate_t *)a)->dir, ((const zkr__zcreate_t *)b)->dir) == 0;
}

static int cbatch_send(zkr__zh_t *h, zkr__qlink_t *list, int alone, int behind);
static void cbatch_closing(zkr__req_t *r);

static void cflush(zkr__zh_t *h, int can_send)
{
    zkr__qlink_t *next;
    while ((next = queue_take(h, &h->cq, same_dir)) != NULL) {
        int zrc = can_send ? cbatch_send(h, next, 0, 0) : ZCLOSING;
        if (zrc == ZOK)
            return;
        members_fail(next, zrc);
    }
}

/* Every member's create answered: rc, with the shared Stat if ZOK. */
static void cbatch_answer(batch_t *b, int rc, const struct Stat *stat)
{
    for (size_t i = 0; i < b->n; i++)
        CRE(b, i)->created(rc, rc == ZOK ? b->names[i] : NULL, stat, CRE(b, i)->data);
    batch_free(b);
}

static void cbatch_stat_done(int rc, const struct Stat *stat, const void *data)
{
    batch_t *b = (batch_t *)data;
    zkr__req_end(&b->req);
    /* Our node not there, or no answer: whatever the multi made is found
     * by its prefix, as after a lost reply. */
    if (rc != ZOK && zkr__zk_class(rc) == ZKR__ZC_FINAL)
        rc = ZCONNECTIONLOSS;
    cbatch_answer(b, rc, rc == ZOK ? stat : NULL);
}

static void cbatch_one_done(int rc, const char *value, const struct Stat *stat, const void *data)
{
    batch_t *b = (batch_t *)data;
    zkr__req_end(&b->req);
    zkr__zh_t *h = b->h;
    zkr__zcreate_t *z = CRE(b, 0);
    int alone = b->alone;
    batch_free(b);
    if (!alone)
        cflush(h, rc != ZCLOSING);
    z->created(rc, value, stat, z->data);
}

static void cbatch_multi_done(int rc, const void *data)
{
    batch_t *b = (batch_t *)data;
    zkr__req_end(&b->req);
    rc = multi_rc(b, rc);
    zkr__zh_t *h = b->h;
    int alone = b->alone;
    if (rc == ZOK) {
        for (size_t i = 0; !b->behind && i < b->n; i++)
            member_list(h, CRE(b, i));
        b->listed = 1;
        zkr__req_start(h, &b->req, cbatch_closing);
        int zrc = zoo_aexists(h->zh, b->names[0], 0, cbatch_stat_done, b);
        if (zrc != ZOK) {
            zkr__req_end(&b->req);
            cbatch_answer(b, ZCONNECTIONLOSS, NULL);
        }
        if (!alone)
            cflush(h, 1);
        return;
    }
    if (!alone)
        cflush(h, rc != ZCLOSING);
    if (!b->behind && rc != ZCLOSING && zkr__zk_class(rc) == ZKR__ZC_FINAL) {
        /* Refused as a whole (a directory missing, say): nothing was
         * made; each goes on its own, with its own answer. */
        for (size_t i = 0; i < b->n; i++) {
            zkr__zcreate_t *z = CRE(b, i);
            z->link.next = NULL;
            int zrc = cbatch_send(h, &z->link, 1, 0);
            if (zrc != ZOK)
                member_fail(z, zrc, 1);
        }
    } else {
        /* (A group's listings are on their way: their own answers come.) */
        for (size_t i = 0; i < b->n; i++)
            member_fail(CRE(b, i), rc, !b->behind);
    }
    batch_free(b);
}

static void cbatch_closing(zkr__req_t *r)
{
    batch_t *b = (batch_t *)r;
    if (!b->alone)
        cflush(b->h, 0);
    for (size_t i = 0; i < b->n; i++)
        member_fail(CRE(b, i), ZCLOSING, !b->listed);
    batch_free(b);
}

/* Send list's creates as one batch (a lone one with its listing right
 * behind it; several with their listings after the answer, or right
 * behind it if `behind`: a refusal then fails them all).  ZOK if sent;
 * else why nothing was sent (the caller tells them). */
static int cbatch_send(zkr__zh_t *h, zkr__qlink_t *list, int alone, int behind)
{
    batch_t *b = batch_new(h, list, alone, 1);
    if (!b)
        return ZSYSTEMERROR;
    b->behind = behind;
    size_t n = b->n;
    int zrc;
    zkr__req_start(h, &b->req, cbatch_closing);
    if (n == 1) {
        /* The listing right behind: b may be answered and freed as soon as
         * the create is sent. */
        b->listed = 1;
        zkr__zcreate_t *z = CRE(b, 0);
        zrc = zoo_acreate2(h->zh, z->path, z->value ? z->value : "", z->value ? z->value_len : 0, z->acl,
                           ZOO_EPHEMERAL_SEQUENTIAL, cbatch_one_done, b);
        if (zrc == ZOK)
            member_list(h, z);
    } else {
        b->listed = behind;
        zrc = zoo_amulti(h->zh, (int)n, b->ops, b->res, cbatch_multi_done, b);
        /* b may be answered and freed from here on: the members' own
         * listings go out from the list. */
        for (zkr__qlink_t *l = list; zrc == ZOK && behind && l; l = l->next)
            member_list(h, (zkr__zcreate_t *)l);
    }
    if (zrc != ZOK) {
        zkr__req_end(&b->req);
        batch_free(b);
    }
    return zrc;
}

void zkr__zh_create(zkr__zh_t *h, zkr__zcreate_t *z)
{
    if (!queue_join(h, &h->cq, &z->link))
        return;
    int zrc = cbatch_send(h, &z->link, 0, 0);
    if (zrc != ZOK) {
        member_fail(z, zrc, 1);
        cflush(h, 1); /* what came meanwhile */
    }
}

void zkr__zh_create_group(zkr__zh_t *h, zkr__zcreate_t *list)
{
    int zrc = cbatch_send(h, &list->link, 1, 1);
    if (zrc != ZOK)
        members_fail(&list->link, zrc);
}

/* The asynchronous acquires' requests and their answers: what they send
 * (c->mu held, asynchronous calls only, on the current handle, registered
 * there while in flight) and the completions and watches that record the
 * answers as news for the step (see aop.h for the threads). */
#include "config.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine/aop.h"

/* ---- completions and watches (ZooKeeper's completion thread) ---- */

/* After op's sends, and after each answer: nothing in flight, nothing
 * registered.  c->mu held. */
static void sent_locked(zkr__aop_t *op)
{
    if (op->inflight == 0)
        zkr__req_end(&op->req);
}

/* One of op's requests is answered.  c->mu held. */
static void answered_locked(zkr__aop_t *op)
{
    op->inflight--;
    sent_locked(op);
}

/* The handle closed with op's requests unanswered (zkr__req_t): as if they
 * had all been answered ZCLOSING. */
static void op_closing(zkr__req_t *r)
{
    zkr__aop_t *op = (zkr__aop_t *)(void *)((char *)r - offsetof(zkr__aop_t, req));
    zkr_client_t *c = op->c;
    pthread_mutex_lock(&c->mu);
    if (op->inflight > 0) {
        op->inflight = 0;
        if (op->create_inflight) {
            op->create_inflight = 0;
            op->nw.created = 1;
            op->nw.create_rc = ZCLOSING;
        }
        op->nw.look = 1;
        zkr__aop_ready_locked(c, op);
    }
    pthread_mutex_unlock(&c->mu);
}

static void create_done(int rc, const char *value, const struct Stat *st, const void *data)
{
    zkr__aop_t *op = (zkr__aop_t *)data;
    zkr_client_t *c = op->c;
    char *copy = (rc == ZOK && value) ? strdup(value) : NULL;
    pthread_mutex_lock(&c->mu);
    zkr__answer_locked(c, op->h, rc);
    op->create_inflight = 0;
    answered_locked(op);
    op->nw.created = 1;
    op->nw.create_rc = (rc == ZOK && !copy) ? ZSYSTEMERROR : rc; /* ENOMEM: as a lost reply */
    op->nw.path = copy;
    op->nw.czxid = st ? st->czxid : 0;
    op->nw.owner = st ? st->ephemeralOwner : 0;
    zkr__aop_ready_locked(c, op);
    pthread_mutex_unlock(&c->mu);
}

static void list_done(int rc, const struct String_vector *sv, const void *data)
{
    zkr__aop_t *op = (zkr__aop_t *)data;
    zkr_client_t *c = op->c;
    zkr__strvec_t kids = {NULL, 0};
    if (rc == ZOK && sv && sv->count > 0 && zkr__strvec_copy(&kids, sv->data, (size_t)sv->count) != 0)
        rc = ZSYSTEMERROR;
    pthread_mutex_lock(&c->mu);
    zkr__answer_locked(c, op->h, rc);
    answered_locked(op);
    zkr__strvec_free(&op->nw.kids);
    op->nw.listed = 1;
    op->nw.list_rc = rc;
    op->nw.kids = kids;
    zkr__aop_ready_locked(c, op);
    pthread_mutex_unlock(&c->mu);
}

static void count_done(int rc, const char *value, int len, const struct Stat *st, const void *data)
{
    (void)st;
    zkr__aop_t *op = (zkr__aop_t *)data;
    zkr_client_t *c = op->c;
    int32_t v = 0;
    if (rc == ZOK && zkr__count_parse(value, len, &v) != 0)
        rc = 1; /* not a ZooKeeper code: bad data */
    pthread_mutex_lock(&c->mu);
    zkr__answer_locked(c, op->h, rc);
    answered_locked(op);
    op->nw.counted = 1;
    op->nw.count_rc = rc;
    op->nw.count = v;
    zkr__aop_ready_locked(c, op);
    pthread_mutex_unlock(&c->mu);
}

static void wset_done(int rc, const char *value, int len, const struct Stat *st, const void *data)
{
    (void)value;
    (void)len;
    (void)st;
    zkr__aop_t *op = (zkr__aop_t *)data;
    zkr_client_t *c = op->c;
    pthread_mutex_lock(&c->mu);
    zkr__answer_locked(c, op->h, rc);
    answered_locked(op);
    op->nw.wset = 1;
    op->nw.wset_rc = rc;
    zkr__aop_ready_locked(c, op);
    pthread_mutex_unlock(&c->mu);
}

static void parent_done(int rc, const char *value, const void *data)
{
    (void)value;
    zkr__aop_t *op = (zkr__aop_t *)data;
    zkr_client_t *c = op->c;
    pthread_mutex_lock(&c->mu);
    zkr__answer_locked(c, op->h, rc);
    answered_locked(op);
    op->nw.parents = 1;
    if (rc != ZOK && rc != ZNODEEXISTS && op->nw.parents_rc == ZOK)
        op->nw.parents_rc = rc;
    zkr__aop_ready_locked(c, op);
    pthread_mutex_unlock(&c->mu);
}

static void watch_fn(zhandle_t *zh, int type, int state, const char *path, void *ctx)
{
    (void)state;
    (void)path;
    if (type == ZOO_SESSION_EVENT)
        return; /* the client's session watcher sees those */
    const zkr__zh_t *h = zoo_get_context(zh);
    if (!h)
        return;
    zkr_client_t *c = h->c;
    pthread_mutex_lock(&c->mu);
    zkr__aop_t *op = zkr__aop_find_locked(c, (uint64_t)(uintptr_t)ctx);
    if (op && !op->finished) {
        op->nw.look = 1;
        zkr__aop_ready_locked(c, op);
    }
    pthread_mutex_unlock(&c->mu);
}

/* ---- sending (c->mu held; asynchronous calls only) ------------------------------- */

static zhandle_t *current_locked(zkr_client_t *c, zkr__aop_t *op)
{
    if (!c->cur || c->closing)
        return NULL;
    op->h = c->cur;
    if (!op->req.h) /* every request in flight goes on one handle */
        zkr__req_start(c->cur, &op->req, op_closing);
    return c->cur->zh;
}

const char *zkr__aop_stage_dir(const zkr__aop_t *op)
{
    return op->in_lease ? op->leases_dir : op->dir;
}

/* The lease stage's look: the leases with a children watch, and the shared
 * count with a data watch. */
static void send_lease_look_locked(zkr_client_t *c, zkr__aop_t *op, zhandle_t *zh)
{
    void *wctx = (void *)(uintptr_t)op->id;
    op->lsession = c->cur->session_id;
    int zrc = zoo_awget_children(zh, op->leases_dir, watch_fn, wctx, list_done, op);
    if (zrc == ZOK) {
        op->inflight++;
    } else {
        op->nw.listed = 1;
        op->nw.list_rc = zrc;
    }
    if (!op->count_path)
        return;
    zrc = zoo_awget(zh, op->count_path, watch_fn, wctx, count_done, op);
    if (zrc == ZOK) {
        op->inflight++;
    } else {
        op->nw.counted = 1;
        op->nw.count_rc = zrc;
    }
}

void zkr__aop_send_create_locked(zkr_client_t *c, zkr__aop_t *op, const char *path)
{
    zhandle_t *zh = current_locked(c, op);
    if (!zh) {
        op->nw.created = 1;
        op->nw.create_rc = ZCLOSING;
        op->nw.create_local = 1;
        zkr__aop_ready_locked(c, op);
        return;
    }
    op->csession = c->cur->session_id;
    int zrc = zoo_acreate2(zh, path, "", 0, zkr__client_acl(c), ZOO_EPHEMERAL_SEQUENTIAL, create_done, op);
    if (zrc != ZOK) {
        op->nw.created = 1;
        op->nw.create_rc = zrc;
        op->nw.create_local = 1;
        sent_locked(op);
        zkr__aop_ready_locked(c, op);
        return;
    }
    op->inflight++;
    op->create_inflight = 1;
    op->phase = ZKR__PH_CREATE;
    /* The listing right behind the create (one session's requests are
     * answered in order): it already shows our node. */
    if (op->in_lease) {
        send_lease_look_locked(c, op, zh);
    } else {
        op->lsession = op->csession;
        if (zoo_aget_children(zh, op->dir, 0, list_done, op) == ZOK)
            op->inflight++;
    }
    sent_locked(op);
    if (op->inflight == 0)
        zkr__aop_ready_locked(c, op);
}

void zkr__aop_send_look_locked(zkr_client_t *c, zkr__aop_t *op)
{
    zhandle_t *zh = current_locked(c, op);
    if (!zh) {
        op->nw.listed = 1;
        op->nw.list_rc = ZCLOSING;
    } else if (op->in_lease) {
        send_lease_look_locked(c, op, zh);
    } else {
        op->lsession = c->cur->session_id;
        int zrc = zoo_aget_children(zh, op->dir, 0, list_done, op);
        if (zrc == ZOK) {
            op->inflight++;
        } else {
            op->nw.listed = 1;
            op->nw.list_rc = zrc;
        }
    }
    sent_locked(op);
    if (op->inflight == 0)
        zkr__aop_ready_locked(c, op);
}

void zkr__aop_send_parents_locked(zkr_client_t *c, zkr__aop_t *op, char *dir)
{
    zhandle_t *zh = current_locked(c, op);
    size_t n = strlen(dir);
    for (size_t i = 1; zh && i <= n; i++) {
        if (dir[i] != '/' && dir[i] != '\0')
            continue;
        char saved = dir[i];
        dir[i] = '\0';
        if (zoo_acreate(zh, dir, "", 0, zkr__client_acl(c), ZOO_CONTAINER, parent_done, op) == ZOK)
            op->inflight++;
        dir[i] = saved;
    }
    op->nw.parents = 1; /* also when nothing could be sent: look again */
    sent_locked(op);
    if (op->inflight == 0)
        zkr__aop_ready_locked(c, op);
}

/* The data watch on the one node the driver names (wpath, taken). */
void zkr__aop_send_watch_locked(zkr_client_t *c, zkr__aop_t *op, char *wpath)
{
    free(op->watching);
    op->watching = wpath;
    zhandle_t *zh = current_locked(c, op);
    int zrc = zh ? zoo_awget(zh, wpath, watch_fn, (void *)(uintptr_t)op->id, wset_done, op) : ZCLOSING;
    if (zrc == ZOK) {
        op->inflight++;
    } else {
        op->nw.wset = 1;
        op->nw.wset_rc = zrc;
        sent_locked(op);
        zkr__aop_ready_locked(c, op);
    }
}

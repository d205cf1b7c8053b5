/* The acquire machine's requests and their answers: what a step sends
 * (asynchronous calls only, on the current handle: a queue node's create
 * and listing through the handle's combiner, everything else registered
 * on the handle while in flight) and the completions and watches that
 * record the answers as news for the next step (see record.h). */
#include "config.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine/record.h"

/* ---- completions and watches (ZooKeeper's completion thread) ---- */

/* After op's sends, and after each answer: nothing in flight, nothing
 * registered.  op->mu held. */
static void sent_locked(zkr__record_t *op)
{
    if (op->inflight == 0)
        zkr__req_end(&op->req);
}

/* After a batch is sent: if nothing of it is in flight (every send
 * failed, and was answered here), step again at once.  c->mu and op->mu
 * held. */
static void sent_all_locked(zkr_client_t *c, zkr__record_t *op)
{
    sent_locked(op);
    if (op->inflight == 0)
        zkr__record_ready_locked(c, op);
}

/* Take what a completion of op needs: c->mu, then op->mu.  An expired
 * session's answer is told to the core first. */
static void answer_lock(zkr__record_t *op, int rc)
{
    zkr_client_t *c = op->c;
    if (rc == ZSESSIONEXPIRED || rc == ZSESSIONMOVED) {
        pthread_mutex_lock(&c->mu);
        zkr__answer_locked(c, op->h, rc);
        pthread_mutex_unlock(&c->mu);
    }
    pthread_mutex_lock(&c->mu);
    pthread_mutex_lock(&op->mu);
}

/* The answer is recorded: count it, give op to the client thread, and
 * unlock.  op may be freed as soon as this returns. */
static void answer_unlock(zkr__record_t *op)
{
    zkr_client_t *c = op->c;
    op->inflight--;
    sent_locked(op);
    zkr__record_ready_locked(c, op);
    pthread_mutex_unlock(&op->mu);
    pthread_mutex_unlock(&c->mu);
}

/* The handle closed with op's requests unanswered (zkr__req_t): as if they
 * had all been answered ZCLOSING. */
static void op_closing(zkr__req_t *r)
{
    zkr__record_t *op = (zkr__record_t *)(void *)((char *)r - offsetof(zkr__record_t, req));
    zkr_client_t *c = op->c;
    pthread_mutex_lock(&c->mu);
    pthread_mutex_lock(&op->mu);
    if (op->inflight > 0) {
        op->inflight = 0;
        if (op->create_inflight) {
            op->create_inflight = 0;
            op->nw.created = 1;
            op->nw.create_rc = ZCLOSING;
        }
        op->nw.look = 1;
        zkr__record_ready_locked(c, op);
    }
    pthread_mutex_unlock(&op->mu);
    pthread_mutex_unlock(&c->mu);
}

/* A create's answer (copy: its path, copied), into the news of the stage's
 * create or (spec) of the lease sent ahead.  op->mu held. */
static void record_created(zkr__record_t *op, int spec, int rc, char *copy, const struct Stat *st)
{
    rc = (rc == ZOK && !copy) ? ZSYSTEMERROR : rc; /* ENOMEM: as a lost reply */
    zkr__news_t *nw = &op->nw;
    int64_t czxid = st ? st->czxid : 0, owner = st ? st->ephemeralOwner : 0;
    if (spec) {
        nw->ahead_created = 1, nw->ahead_create_rc = rc, nw->ahead_path = copy, nw->ahead_czxid = czxid, nw->ahead_owner = owner;
    } else {
        op->create_inflight = 0;
        nw->created = 1, nw->create_rc = rc, nw->path = copy, nw->czxid = czxid, nw->owner = owner;
    }
}

static void created(int rc, const char *value, const struct Stat *st, const void *data, int spec)
{
    zkr__record_t *op = (zkr__record_t *)data;
    char *copy = (rc == ZOK && value) ? strdup(value) : NULL;
    answer_lock(op, rc);
    record_created(op, spec, rc, copy, st);
    answer_unlock(op);
}

static void listed(int rc, const struct String_vector *sv, const void *data, int spec)
{
    zkr__record_t *op = (zkr__record_t *)data;
    zkr__strvec_t kids;
    rc = zkr__listing_copy(rc, sv, &kids); /* out of memory: a failed listing */
    answer_lock(op, rc);
    zkr__news_t *nw = &op->nw;
    zkr__strvec_free(spec ? &nw->ahead_kids : &nw->kids);
    if (spec)
        nw->ahead_listed = 1, nw->ahead_list_rc = rc, nw->ahead_kids = kids;
    else
        nw->listed = 1, nw->list_rc = rc, nw->kids = kids;
    answer_unlock(op);
}

static void create_done(int rc, const char *value, const struct Stat *st, const void *data)
{
    created(rc, value, st, data, 0);
}

static void list_done(int rc, const struct String_vector *sv, const void *data)
{
    listed(rc, sv, data, 0);
}

static void count_done(int rc, const char *value, int len, const struct Stat *st, const void *data)
{
    (void)st;
    zkr__record_t *op = (zkr__record_t *)data;
    int32_t v = 0;
    if (rc == ZOK && zkr__count_parse(value, len, &v) != 0)
        rc = 1; /* not a ZooKeeper code: bad data */
    answer_lock(op, rc);
    op->nw.counted = 1;
    op->nw.count_rc = rc;
    op->nw.count = v;
    answer_unlock(op);
}

static void wset_done(int rc, const char *value, int len, const struct Stat *st, const void *data)
{
    (void)value;
    (void)len;
    (void)st;
    zkr__record_t *op = (zkr__record_t *)data;
    answer_lock(op, rc);
    op->nw.watch_set = 1;
    op->nw.watch_set_rc = rc;
    answer_unlock(op);
}

static void parent_done(int rc, const char *value, const void *data)
{
    (void)value;
    zkr__record_t *op = (zkr__record_t *)data;
    answer_lock(op, rc);
    op->nw.parents = 1;
    if (rc != ZOK && rc != ZNODEEXISTS && op->nw.parents_rc == ZOK)
        op->nw.parents_rc = rc;
    answer_unlock(op);
}

static void exists_done(int rc, const struct Stat *st, const void *data)
{
    zkr__record_t *op = (zkr__record_t *)data;
    answer_lock(op, rc);
    op->nw.existed = 1;
    op->nw.exists_rc = rc;
    op->nw.ex_czxid = st ? st->czxid : 0;
    op->nw.ex_owner = st ? st->ephemeralOwner : 0;
    answer_unlock(op);
}

/* The lease sent ahead behind locks/ (the semaphore's one round trip). */
static void ahead_create_done(int rc, const char *value, const struct Stat *st, const void *data)
{
    created(rc, value, st, data, 1);
}

static void ahead_list_done(int rc, const struct String_vector *sv, const void *data)
{
    listed(rc, sv, data, 1);
}

static void watch_fn(zhandle_t *zh, int type, int state, const char *path, void *ctx)
{
    (void)state;
    if (type == ZOO_SESSION_EVENT)
        return; /* the client's session watcher sees those */
    const zkr__zh_t *h = zoo_get_context(zh);
    if (!h)
        return;
    zkr_client_t *c = h->c;
    pthread_mutex_lock(&c->mu);
    zkr__record_t *op = zkr__record_find_locked(c, (uint64_t)(uintptr_t)ctx);
    if (op && !op->finished) {
        pthread_mutex_lock(&op->mu);
        op->nw.look = 1;
        /* Next in line: the deletion of the very node it watches now, when
         * that node was first in the order. */
        if (type == ZOO_DELETED_EVENT && path && op->watching_first && op->watching &&
            strcmp(path, op->watching) == 0)
            op->nw.gone_first = 1;
        zkr__record_ready_locked(c, op);
        pthread_mutex_unlock(&op->mu);
    }
    pthread_mutex_unlock(&c->mu);
}

/* ---- sending (asynchronous calls only) ---- */

static zhandle_t *current_locked(zkr_client_t *c, zkr__record_t *op)
{
    if (!c->cur || c->closing)
        return NULL;
    op->h = c->cur;
    if (!op->req.h) /* every request in flight goes on one handle */
        zkr__req_start(c->cur, &op->req, op_closing);
    return c->cur->zh;
}

const char *zkr__record_stage_dir(const zkr__record_t *op)
{
    return op->in_lease ? op->leases_dir : op->dir;
}

/* The lease stage's look: the leases with a children watch, and the shared
 * count with a data watch. */
static void send_lease_look_locked(zkr_client_t *c, zkr__record_t *op, zhandle_t *zh)
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

/* Nothing could be sent: the create is answered here (a local refusal,
 * not the server's: nothing can exist). */
static void create_local_locked(zkr_client_t *c, zkr__record_t *op, int zrc)
{
    op->nw.created = 1;
    op->nw.create_rc = zrc;
    op->nw.create_local = 1;
    sent_locked(op);
    zkr__record_ready_locked(c, op);
}

/* The lease, its create and the leases' listing (no watch: we may not
 * hold locks/ yet) right behind the locks/ create and listing. */
static void send_lease_ahead_locked(zkr_client_t *c, zkr__record_t *op, zhandle_t *zh)
{
    char *path = NULL;
    if (zkr__uuid(op->ahead_uuid) == 0)
        path = zkr__protected_path(op->leases_dir, op->ahead_uuid, ZKR__LEASE_MARKER);
    if (path && zoo_acreate2(zh, path, "", 0, zkr__client_acl(c), ZOO_EPHEMERAL_SEQUENTIAL, ahead_create_done,
                             op) == ZOK) {
        op->inflight++;
        op->spec = 1;
        if (zoo_aget_children(zh, op->leases_dir, 0, ahead_list_done, op) == ZOK)
            op->inflight++;
    }
    free(path);
}

/* Direct: the create, then what decides behind it. */
static void send_create_direct_locked(zkr_client_t *c, zkr__record_t *op, int spec)
{
    zhandle_t *zh = current_locked(c, op);
    if (!zh) {
        create_local_locked(c, op, ZCLOSING);
        return;
    }
    op->csession = c->cur->session_id;
    /* the queue node carries the target's data; a lease none */
    const char *value = !op->in_lease && op->value ? op->value : "";
    int vlen = !op->in_lease ? op->value_len : 0;
    int zrc =
        zoo_acreate2(zh, op->cpath, value, vlen, zkr__client_acl(c), ZOO_EPHEMERAL_SEQUENTIAL, create_done, op);
    if (zrc != ZOK) {
        create_local_locked(c, op, zrc);
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
        if (spec)
            send_lease_ahead_locked(c, op, zh);
    }
    sent_all_locked(c, op);
}

typedef struct parents_send {
    zhandle_t *zh;
    zkr__record_t *op;
} parents_send_t;

/* One parent, sent (op->mu held); the walk goes on whatever happened. */
static int send_parent(void *ctx, const char *p, const struct ACL_vector *acl, int mode)
{
    parents_send_t *s = ctx;
    if (zoo_acreate(s->zh, p, "", 0, acl, mode, parent_done, s->op) == ZOK)
        s->op->inflight++;
    return 0;
}

/* The stage's directory and its ancestors as containers (each "exists" is
 * fine), counted in flight.  c->mu and op->mu held. */
static void send_parents_inner_locked(zkr_client_t *c, zkr__record_t *op)
{
    parents_send_t s = {current_locked(c, op), op};
    if (s.zh)
        zkr__parents_each(c, zkr__record_stage_dir(op), send_parent, &s);
}

void zkr__record_send_create(zkr_client_t *c, zkr__record_t *op)
{
    char *path = NULL;
    if (zkr__uuid(op->uuid) == 0)
        path = zkr__protected_path(zkr__record_stage_dir(op), op->uuid, op->in_lease ? ZKR__LEASE_MARKER : op->drv->marker);
    pthread_mutex_lock(&c->mu);
    pthread_mutex_lock(&op->mu);
    free(op->cpath);
    op->cpath = path;
    int spec = !op->in_lease && op->speculate && atomic_load(op->speculate);
    /* The directory is missing: its parents, then the create and its
     * listing right behind them, one batch (one round trip, in order on
     * the session), all direct. */
    int parents = op->need_parents;
    op->need_parents = 0;
    if (!path) {
        create_local_locked(c, op, ZSYSTEMERROR);
    } else if (op->in_lease || spec || parents) {
        if (parents)
            send_parents_inner_locked(c, op);
        send_create_direct_locked(c, op, spec);
    }
    if (!path || op->in_lease || spec || parents) {
        pthread_mutex_unlock(&op->mu);
        pthread_mutex_unlock(&c->mu);
        return;
    }
    /* A queue node: through the handle's combiner (while another batch of
     * the client's creates is in flight, it goes out with the others as
     * one multi).  The combiner registers its batches on the handle and
     * answers both requests exactly once, so op is not registered; and it
     * may answer on this thread, so c->mu is dropped around it. */
    zkr__zh_t *h = c->cur;
    if (!h || c->closing) {
        create_local_locked(c, op, ZCLOSING);
        pthread_mutex_unlock(&op->mu);
        pthread_mutex_unlock(&c->mu);
        return;
    }
    h->refs++;
    op->h = h;
    op->csession = op->lsession = h->session_id;
    op->inflight += 2;
    op->create_inflight = 1;
    op->phase = ZKR__PH_CREATE;
    op->z = (zkr__zcreate_t){{NULL}, op->cpath, op->dir, zkr__client_acl(c), create_done, list_done, op,
                             op->value, op->value_len};
    pthread_mutex_unlock(&op->mu);
    pthread_mutex_unlock(&c->mu);
    zkr__zh_create(h, &op->z);
    zkr__client_put_handle(c, h);
}

/* A plain listing of dir (no watch) on the current handle; a send that
 * fails is answered here. */
static void send_list_locked(zkr_client_t *c, zkr__record_t *op, const char *dir)
{
    zhandle_t *zh = current_locked(c, op);
    int zrc = ZCLOSING;
    if (zh) {
        op->lsession = c->cur->session_id;
        zrc = zoo_aget_children(zh, dir, 0, list_done, op);
    }
    if (zrc == ZOK) {
        op->inflight++;
    } else {
        op->nw.listed = 1;
        op->nw.list_rc = zrc;
    }
}

void zkr__record_send_look_locked(zkr_client_t *c, zkr__record_t *op)
{
    zhandle_t *zh;
    pthread_mutex_lock(&op->mu);
    if (op->in_lease && (zh = current_locked(c, op))) {
        send_lease_look_locked(c, op, zh);
    } else if (op->in_lease) {
        op->nw.listed = 1;
        op->nw.list_rc = ZCLOSING;
    } else {
        send_list_locked(c, op, op->dir);
    }
    sent_all_locked(c, op);
    pthread_mutex_unlock(&op->mu);
}

void zkr__record_send_recover_list_locked(zkr_client_t *c, zkr__record_t *op)
{
    pthread_mutex_lock(&op->mu);
    send_list_locked(c, op, zkr__record_stage_dir(op));
    sent_all_locked(c, op);
    pthread_mutex_unlock(&op->mu);
}

void zkr__record_send_recover_exists_locked(zkr_client_t *c, zkr__record_t *op)
{
    pthread_mutex_lock(&op->mu);
    zhandle_t *zh = current_locked(c, op);
    int zrc = zh ? zoo_aexists(zh, op->rpath, 0, exists_done, op) : ZCLOSING;
    if (zrc == ZOK) {
        op->inflight++;
    } else {
        op->nw.existed = 1;
        op->nw.exists_rc = zrc;
    }
    sent_all_locked(c, op);
    pthread_mutex_unlock(&op->mu);
}


/* The data watch on the one node the driver names (wpath, taken); `first`:
 * that node is first in the order (next in line). */
void zkr__record_send_watch_locked(zkr_client_t *c, zkr__record_t *op, char *wpath, int first)
{
    free(op->watching);
    op->watching = wpath;
    op->watching_first = first;
    if (first) /* granted on that node's deletion, unlisted: watch ours */
        zkr__track_next_in_line_locked(c, op->in_lease ? op->lease.track : op->node.track);
    pthread_mutex_lock(&op->mu);
    zhandle_t *zh = current_locked(c, op);
    int zrc = zh ? zoo_awget(zh, wpath, watch_fn, (void *)(uintptr_t)op->id, wset_done, op) : ZCLOSING;
    if (zrc == ZOK) {
        op->inflight++;
    } else {
        op->nw.watch_set = 1;
        op->nw.watch_set_rc = zrc;
        sent_locked(op);
        zkr__record_ready_locked(c, op);
    }
    pthread_mutex_unlock(&op->mu);
}

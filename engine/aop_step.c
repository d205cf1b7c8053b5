/* The asynchronous acquire's machine: one step on the news its requests
 * and watches brought (client thread, no lock held): the create's answer
 * (parents made, a lost reply cleaned up by its protected prefix and the
 * create made afresh), the driver's decision on a listing, the one data
 * watch, the semaphore's lease stage, the grant, and every way to fail
 * (cancel, deadline, session lost, our node deleted by someone else). */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "engine/aop.h"

static void fail(zkr_client_t *c, zkr__aop_t *op, int rc)
{
    zkr__node_delete_nowait(c, &op->lease);
    zkr__node_delete_nowait(c, &op->node);
    pthread_mutex_lock(&c->mu);
    zkr__aop_finish_locked(c, op, rc);
    pthread_mutex_unlock(&c->mu);
}

/* A create answered after its acquire ended: delete what it made. */
static void cleanup_news(zkr_client_t *c, zkr__aop_t *op, zkr__news_t *nw)
{
    if (nw->created && nw->create_rc == ZOK && nw->path) {
        zkr__node_t n;
        memset(&n, 0, sizeof n);
        n.path = nw->path;
        n.session = nw->owner ? nw->owner : op->csession;
        nw->path = NULL;
        zkr__node_delete_nowait(c, &n);
    } else if (nw->created && !nw->create_local && nw->create_rc != ZOK) {
        /* Lost reply: whatever it made goes by its protected prefix. */
        char prefix[ZKR__UUID_LEN + 8];
        memcpy(prefix, "_c_", 3);
        memcpy(prefix + 3, op->uuid, ZKR__UUID_LEN);
        prefix[3 + ZKR__UUID_LEN] = '-';
        prefix[4 + ZKR__UUID_LEN] = '\0';
        pthread_mutex_lock(&c->mu);
        int closed = c->closing;
        pthread_mutex_unlock(&c->mu);
        if (!closed && nw->create_rc != ZNONODE && nw->create_rc != ZNODEEXISTS &&
            zkr__zk_class(nw->create_rc) != ZKR__ZC_FINAL)
            zkr__client_delete_prefix_later(c, zkr__aop_stage_dir(op), prefix, op->csession);
    }
}

/* The create's answer.  Returns 0, or a code to end the acquire with. */
static int on_created(zkr_client_t *c, zkr__aop_t *op, zkr__news_t *nw)
{
    int rc = nw->create_rc;
    if (rc == ZOK) {
        zkr__node_t *n = op->in_lease ? &op->lease : &op->node;
        n->path = nw->path;
        nw->path = NULL;
        n->czxid = nw->czxid;
        n->session = nw->owner ? nw->owner : op->csession;
        memcpy(n->uuid, op->uuid, sizeof n->uuid);
        int r = zkr__track_add(c, n->path, n->session, &n->track);
        if (r != ZKR_OK)
            return r;
        op->phase = op->in_lease ? ZKR__PH_LEASE : ZKR__PH_QUEUE;
        op->need_look = 1; /* until a listing decides */
        return 0;
    }
    op->phase = ZKR__PH_START;
    if (rc == ZNONODE) {
        if (op->parent_tries++ >= ZKR__AOP_PARENT_RETRIES)
            return ZKR_ENONODE;
        char *dir = strdup(zkr__aop_stage_dir(op));
        if (!dir)
            return ZKR_ENOMEM;
        pthread_mutex_lock(&c->mu);
        zkr__aop_send_parents_locked(c, op, dir);
        pthread_mutex_unlock(&c->mu);
        free(dir);
        return 0;
    }
    if (zkr__zk_class(rc) == ZKR__ZC_FINAL && rc != ZSYSTEMERROR)
        return zkr__zk_error(rc);
    /* Connection or session trouble: the reply is lost, the node may exist.
     * It goes by its prefix in the background; try afresh. */
    cleanup_news(c, op, nw);
    if (++op->attempts >= ZKR__AOP_CREATE_RETRIES)
        return ZKR_EZOOKEEPER;
    return 0;
}

/* The queue stage's decision on a listing: 1 held, 0 wait (*wpath: the one
 * node to watch), or a code. */
static int queue_decide(zkr_client_t *c, zkr__aop_t *op, zkr__strvec_t *kids, char **wpath)
{
    size_t watch = 0;
    int d = zkr__queue_decide(op->drv, kids, zkr__path_basename(op->node.path), &watch);
    if (d == ZKR__DECIDE_GONE) {
        if (op->lsession != op->node.session)
            return ZKR_ESESSIONLOST;
        zkr__track_mark_deleted(c, op->node.track);
        return ZKR_EDELETED;
    }
    if (d != 0)
        return d > 0 ? 1 : d;
    *wpath = zkr__path_join(op->dir, kids->v[watch]);
    return *wpath ? 0 : ZKR_ENOMEM;
}

/* The lease stage's decision: 1 held, 0 wait (the listing set the watch), or a code. */
static int lease_decide(zkr_client_t *c, zkr__aop_t *op, zkr__news_t *nw)
{
    if (nw->counted && nw->count_rc != ZOK)
        return nw->count_rc == 1 ? ZKR_EBADDATA : zkr__zk_error(nw->count_rc);
    long ours = zkr__strvec_find(&nw->kids, zkr__path_basename(op->lease.path));
    if (ours < 0) {
        if (op->lsession != op->lease.session)
            return ZKR_ESESSIONLOST;
        zkr__track_mark_deleted(c, op->lease.track);
        return ZKR_EDELETED;
    }
    int max = op->count_path ? nw->count : op->max;
    return nw->kids.n <= (size_t)(max > 0 ? max : 0) ? 1 : 0;
}

static void grant(zkr_client_t *c, zkr__aop_t *op)
{
    zkr__node_t *n = op->sem ? &op->lease : &op->node;
    if (op->sem)
        zkr__node_delete_nowait(c, &op->node); /* the locks/ mutex: done with it */
    zkr__node_track(c, n, op->hfn, op->hctx);
    pthread_mutex_lock(&c->mu);
    op->granted = *n;
    memset(n, 0, sizeof *n);
    zkr__aop_finish_locked(c, op, ZKR_OK);
    pthread_mutex_unlock(&c->mu);
}

/* Start the semaphore's lease stage (locks/ is held). */
static void lease_stage(zkr__aop_t *op)
{
    op->in_lease = 1;
    op->phase = ZKR__PH_START;
    op->attempts = 0;
    op->parent_tries = 0;
}

void zkr__aop_step(zkr_client_t *c, zkr__aop_t *op)
{
    pthread_mutex_lock(&c->mu);
    zkr__news_t nw = op->nw;
    memset(&op->nw, 0, sizeof op->nw);
    int finished = op->finished;
    int cancel = op->cancel;
    int inflight = op->inflight;
    int usable = c->cur && zkr__usable_locked(c);
    int have_session = c->have_session;
    int64_t session = c->session_id;
    int lost_state = c->sm.state == ZKR_STATE_LOST;
    pthread_mutex_unlock(&c->mu);
    /* answers parked by an earlier step */
    if (op->parked.listed && !nw.listed) {
        nw.listed = 1;
        nw.list_rc = op->parked.list_rc;
        nw.kids = op->parked.kids;
        op->parked.kids.v = NULL;
        op->parked.kids.n = 0;
    }
    if (op->parked.counted && !nw.counted) {
        nw.counted = 1;
        nw.count_rc = op->parked.count_rc;
        nw.count = op->parked.count;
    }
    nw.look |= op->parked.look;
    zkr__news_clear(&op->parked);

    if (finished) {
        cleanup_news(c, op, &nw);
        zkr__news_clear(&nw);
        return;
    }
    int rc = 0;
    if (nw.created)
        rc = on_created(c, op, &nw);
    if (nw.listed && nw.list_rc != ZOK && nw.list_rc != ZNONODE) {
        if (rc == 0 && zkr__zk_class(nw.list_rc) == ZKR__ZC_FINAL && nw.list_rc != ZSYSTEMERROR)
            rc = zkr__zk_error(nw.list_rc);
        op->need_look = 1;
        nw.listed = 0;
    }
    if (nw.counted && nw.count_rc != ZOK && zkr__zk_class(nw.count_rc) != ZKR__ZC_FINAL) {
        op->need_look = 1; /* connection trouble: count again */
        nw.listed = 0;
    }
    if (nw.wset && nw.wset_rc != ZOK) {
        if (zkr__zk_class(nw.wset_rc) == ZKR__ZC_FINAL && nw.wset_rc != ZNONODE)
            rc = rc ? rc : zkr__zk_error(nw.wset_rc);
        op->need_look = 1; /* gone already, or the link: look again */
    }
    if (nw.look)
        op->need_look = 1;
    if (nw.parents && nw.parents_rc != ZOK && zkr__zk_class(nw.parents_rc) == ZKR__ZC_FINAL)
        rc = rc ? rc : zkr__zk_error(nw.parents_rc);

    const zkr__node_t *mine = op->lease.path ? &op->lease : &op->node;
    if (rc == 0 && cancel)
        rc = ZKR_ECANCELED;
    if (rc == 0 && mine->path && (lost_state || (have_session && session != mine->session)))
        rc = ZKR_ESESSIONLOST; /* our node went with the session */
    if (rc != 0) {
        zkr__news_clear(&nw);
        fail(c, op, rc);
        return;
    }
    if (inflight > 0) {
        /* The rest of the answers come: decide on all of them. */
        if (nw.listed) {
            op->parked.kids = nw.kids;
            op->parked.listed = 1;
            op->parked.list_rc = nw.list_rc;
            nw.kids.v = NULL;
            nw.kids.n = 0;
        }
        if (nw.counted) {
            op->parked.counted = 1;
            op->parked.count_rc = nw.count_rc;
            op->parked.count = nw.count;
        }
        op->parked.look = nw.look;
        zkr__news_clear(&nw);
        return;
    }
    int64_t now = zkr__now_ms();
    int can_wait = now < op->deadline;

    if (nw.listed && op->phase == ZKR__PH_QUEUE) {
        char *wpath = NULL;
        int d = queue_decide(c, op, &nw.kids, &wpath);
        zkr__news_clear(&nw);
        op->need_look = 0;
        if (d == 1) {
            if (!op->sem) {
                grant(c, op);
                return;
            }
            lease_stage(op);
        } else if (d < 0) {
            fail(c, op, d);
            return;
        } else if (!can_wait) {
            free(wpath);
            fail(c, op, ZKR_ETIMEDOUT);
            return;
        } else {
            pthread_mutex_lock(&c->mu);
            zkr__aop_send_watch_locked(c, op, wpath);
            pthread_mutex_unlock(&c->mu);
            return;
        }
    } else if (nw.listed && op->phase == ZKR__PH_LEASE) {
        int d = lease_decide(c, op, &nw);
        zkr__news_clear(&nw);
        op->need_look = 0;
        if (d == 1) {
            grant(c, op);
            return;
        }
        if (d < 0 || !can_wait) {
            fail(c, op, d < 0 ? d : ZKR_ETIMEDOUT);
            return;
        }
        return; /* the listing left a children watch (and the count a data watch) */
    }
    zkr__news_clear(&nw);

    if (op->phase == ZKR__PH_START) {
        if (!usable) {
            if (!can_wait)
                fail(c, op, ZKR_ETIMEDOUT);
            return; /* a state delivered brings us back */
        }
        if (zkr__uuid(op->uuid) != 0) {
            fail(c, op, ZKR_ESYSTEM);
            return;
        }
        char *path = zkr__protected_path(zkr__aop_stage_dir(op), op->uuid, op->in_lease ? "lease-" : op->drv->marker);
        if (!path) {
            fail(c, op, ZKR_ENOMEM);
            return;
        }
        pthread_mutex_lock(&c->mu);
        zkr__aop_send_create_locked(c, op, path);
        pthread_mutex_unlock(&c->mu);
        free(path);
        return;
    }
    if (!can_wait) {
        fail(c, op, ZKR_ETIMEDOUT);
        return;
    }
    if (op->need_look && usable) {
        op->need_look = 0;
        pthread_mutex_lock(&c->mu);
        zkr__aop_send_look_locked(c, op);
        pthread_mutex_unlock(&c->mu);
    }
}

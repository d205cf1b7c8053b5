/* The acquire machine: one step on the news its requests and watches
 * brought (one thread at a time, no lock held; see record.h).  The create's
 * answer (parents made first when the directory is missing; a lost reply
 * recovered by finding our node by its protected prefix and adopting it
 * only under the session that sent it), the driver's decision on a
 * listing, the one data watch (next in line: the deletion of the first
 * node grants without listing), the semaphore's lease stage (with the
 * lease sent ahead behind locks/ when locks/ was free last time), the
 * grant, and every way to fail (cancel, close, deadline, session lost,
 * our node deleted by someone else). */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "engine/record.h"

/* A waited acquire's failure ends when the deletes of its nodes are
 * answered, so that its caller, back from the call, finds none of its
 * nodes left (a try that failed, a timeout), as after a blocking release;
 * at the deadline's grace it ends anyway (the deletes go on). */
static void end_delete_done(zkr_client_t *c, int rc, void *arg)
{
    (void)rc; /* settled by the delete (a refusal is logged and retried) */
    zkr__record_t *op = arg;
    pthread_mutex_lock(&c->mu);
    pthread_mutex_lock(&op->mu);
    int last = --op->end_pending == 0;
    int finished = op->finished;
    pthread_mutex_unlock(&op->mu);
    if (last && !finished)
        zkr__record_finish_locked(c, op, op->end_rc);
    else if (last)
        zkr__record_maybe_free_locked(c, op);
    pthread_mutex_unlock(&c->mu);
}

static void fail(zkr_client_t *c, zkr__record_t *op, int rc)
{
    if (op->phase == ZKR__PH_RECOVER)
        zkr__lost_create_delete_later(c, zkr__record_stage_dir(op), op->uuid, op->csession);
    pthread_mutex_lock(&c->mu);
    int n = !!op->lease.path + !!op->node.path;
    /* Awaited only while the nodes' session lives (else they are gone,
     * or go, with it), and at most as long as a blocking release waits. */
    int64_t sess = op->lease.path ? op->lease.session : op->node.session;
    int live = c->have_session && c->session_id == sess && c->sm.state != ZKR_STATE_LOST;
    int await = op->waited && n > 0 && !c->closing && live;
    if (await) {
        op->ending = 1;
        op->end_rc = rc;
        int64_t by = zkr__deadline(ZKR_RELEASE_WAIT_MS);
        op->end_by = zkr__hard_deadline(op->deadline) < by ? zkr__hard_deadline(op->deadline) : by;
        zkr__record_due_locked(c, op->end_by);
        pthread_mutex_lock(&op->mu);
        op->end_pending = n; /* before any answer can count down */
        pthread_mutex_unlock(&op->mu);
    }
    pthread_mutex_unlock(&c->mu);
    if (await) {
        /* (op lives until end_pending is 0: maybe_free waits for it) */
        if (op->lease.path)
            zkr__node_delete_cb(c, &op->lease, end_delete_done, op);
        if (op->node.path)
            zkr__node_delete_cb(c, &op->node, end_delete_done, op);
        return;
    }
    /* The client thread never waits: the delete goes out before the end
     * is handed over, and our session's later requests are ordered after
     * it. */
    zkr__node_delete_nowait(c, &op->lease);
    zkr__node_delete_nowait(c, &op->node);
    pthread_mutex_lock(&c->mu);
    zkr__record_finish_locked(c, op, rc);
    pthread_mutex_unlock(&c->mu);
}

/* A create answered with a lost reply: whatever it made goes by its
 * prefix.  ZNONODE, ZNODEEXISTS and final answers made nothing. */
static int reply_lost(const zkr__news_t *nw, int rc)
{
    return !nw->create_local && rc != ZOK && rc != ZNONODE && rc != ZNODEEXISTS &&
           (zkr__zk_class(rc) != ZKR__ZC_FINAL || rc == ZSYSTEMERROR);
}

/* Answers that came after the acquire ended: delete what they made. */
static void cleanup_news(zkr_client_t *c, zkr__record_t *op, zkr__news_t *nw)
{
    if (nw->created && nw->create_rc == ZOK && nw->path) {
        zkr__node_t n = {.path = nw->path, .session = nw->owner ? nw->owner : op->csession};
        nw->path = NULL;
        zkr__node_delete_nowait(c, &n);
    } else if (nw->created && reply_lost(nw, nw->create_rc)) {
        zkr__lost_create_delete_later(c, zkr__record_stage_dir(op), op->uuid, op->csession);
    }
    if (nw->ahead_created && nw->ahead_create_rc == ZOK && nw->ahead_path) {
        zkr__node_t n = {.path = nw->ahead_path, .session = nw->ahead_owner ? nw->ahead_owner : op->csession};
        nw->ahead_path = NULL;
        zkr__node_delete_nowait(c, &n);
    } else if (nw->ahead_created && reply_lost(nw, nw->ahead_create_rc)) {
        zkr__lost_create_delete_later(c, op->leases_dir, op->ahead_uuid, op->csession);
    }
}

/* Our node of the current stage exists (created, or adopted): track it,
 * and have its deletion by someone else wake this acquire. */
static int have_node(zkr_client_t *c, zkr__record_t *op, char *path, int64_t czxid, int64_t session)
{
    zkr__node_t *n = op->in_lease ? &op->lease : &op->node;
    n->path = path;
    n->czxid = czxid;
    n->session = session;
    memcpy(n->uuid, op->uuid, sizeof n->uuid);
    int r = zkr__track_add(c, n->path, n->session, op->id, &n->track);
    if (r != ZKR_OK)
        return r;
    op->phase = op->in_lease ? ZKR__PH_LEASE : ZKR__PH_QUEUE;
    op->need_look = 1; /* until a listing decides */
    return 0;
}

/* The create's answer.  Returns 0, or a code to end the acquire with. */
static int on_created(zkr_client_t *c, zkr__record_t *op, zkr__news_t *nw)
{
    int rc = nw->create_rc;
    if (rc == ZOK) {
        char *path = nw->path;
        nw->path = NULL;
        return have_node(c, op, path, nw->czxid, nw->owner ? nw->owner : op->csession);
    }
    op->phase = ZKR__PH_START;
    if (rc == ZNONODE) {
        /* Parents are containers: make them (again: the server may have
         * reaped an empty one since), then create. */
        if (op->parent_tries++ >= ZKR__AOP_PARENT_RETRIES)
            return ZKR_ENONODE;
        op->need_parents = 1;
        return 0;
    }
    if (zkr__zk_class(rc) == ZKR__ZC_FINAL && rc != ZSYSTEMERROR)
        return zkr__zk_error(rc);
    if (++op->attempts >= ZKR__CREATE_RETRIES)
        return ZKR_EZOOKEEPER;
    if (reply_lost(nw, rc) && op->recover_tries++ < ZKR__AOP_RECOVER_RETRIES) {
        /* The reply is lost, the node may exist: find it by its prefix
         * (Curator's way) before creating again. */
        op->phase = ZKR__PH_RECOVER;
        op->need_look = 1;
    } else if (reply_lost(nw, rc)) {
        zkr__lost_create_delete_later(c, zkr__record_stage_dir(op), op->uuid, op->csession);
    }
    return 0;
}

/* The lease sent ahead: kept until locks/ decides, or given up at once
 * when the locks/ create did not succeed (it was not made under locks/). */
static void on_lease_ahead(zkr_client_t *c, zkr__record_t *op, zkr__news_t *nw)
{
    if (nw->ahead_created && nw->ahead_create_rc == ZOK) {
        op->lease = (zkr__node_t){.path = nw->ahead_path, .czxid = nw->ahead_czxid,
                                  .session = nw->ahead_owner ? nw->ahead_owner : op->csession};
        memcpy(op->lease.uuid, op->ahead_uuid, sizeof op->lease.uuid);
        nw->ahead_path = NULL;
    } else if (nw->ahead_created && reply_lost(nw, nw->ahead_create_rc)) {
        zkr__lost_create_delete_later(c, op->leases_dir, op->ahead_uuid, op->csession);
    }
    if (nw->ahead_listed) {
        zkr__strvec_free(&op->ahead_kids);
        if (nw->ahead_list_rc == ZOK) {
            op->ahead_kids = nw->ahead_kids;
            nw->ahead_kids.v = NULL;
            nw->ahead_kids.n = 0;
        }
    }
}

static void lease_ahead_drop(zkr_client_t *c, zkr__record_t *op)
{
    zkr__node_delete_nowait(c, &op->lease); /* withdrawn before we wait */
    zkr__strvec_free(&op->ahead_kids);
    op->spec = 0;
}

/* The queue stage's decision on a listing: 1 held, 0 wait (*wpath: the one
 * node to watch, *first: it is first in the order), or a code. */
static int queue_decide(zkr_client_t *c, zkr__record_t *op, zkr__strvec_t *kids, char **wpath, int *first)
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
    *first = op->drv->next_in_line && watch == 0;
    *wpath = zkr__path_join(op->dir, kids->v[watch]);
    return *wpath ? 0 : ZKR_ENOMEM;
}

/* The lease stage's decision on the leases (and count): 1 held, 0 wait, or a code. */
static int lease_decide(zkr_client_t *c, zkr__record_t *op, const zkr__strvec_t *kids, int counted, int count_rc,
                        int32_t count)
{
    if (counted && count_rc != ZOK)
        return count_rc == 1 ? ZKR_EBADDATA : zkr__zk_error(count_rc);
    long ours = zkr__strvec_find(kids, zkr__path_basename(op->lease.path));
    if (ours < 0) {
        if (op->lsession != op->lease.session)
            return ZKR_ESESSIONLOST;
        zkr__track_mark_deleted(c, op->lease.track);
        return ZKR_EDELETED;
    }
    int max = op->count_path ? count : op->max;
    return kids->n <= (size_t)(max > 0 ? max : 0) ? 1 : 0;
}

static void grant(zkr_client_t *c, zkr__record_t *op)
{
    zkr__node_t *n = op->sem ? &op->lease : &op->node;
    /* The locks/ node: done with it; nobody waits for its delete, and our
     * next request on this session is ordered after it. */
    if (op->sem)
        zkr__node_delete_nowait(c, &op->node);
    /* The hold begins here, for every kind of caller: tracked with the
     * object's hold listener (none if the caller has given up: the grant
     * is undone on delivery).  (Its track may still name this acquire as
     * its waiter: a wake of an acquire that has ended is ignored.) */
    pthread_mutex_lock(&c->mu);
    int cancelled = op->cancel;
    pthread_mutex_unlock(&c->mu);
    zkr__node_track(c, n, cancelled ? (zkr__hold_listener_t){0} : op->hl);
    pthread_mutex_lock(&c->mu);
    op->granted = *n;
    memset(n, 0, sizeof *n);
    zkr__record_finish_locked(c, op, ZKR_OK);
    pthread_mutex_unlock(&c->mu);
}

/* locks/ is ours: start the lease stage, or decide at once on the lease
 * sent ahead (made after our locks/ node on the same session, so made
 * while we held locks/, exactly as if we had waited).  Returns 1 if
 * granted. */
static int lease_stage(zkr_client_t *c, zkr__record_t *op)
{
    op->in_lease = 1;
    op->phase = ZKR__PH_START;
    op->attempts = 0;
    op->parent_tries = 0;
    op->recover_tries = 0;
    if (!op->lease.path)
        return 0;
    if (op->lease.session != op->node.session) {
        lease_ahead_drop(c, op);
        return 0;
    }
    memcpy(op->uuid, op->ahead_uuid, sizeof op->uuid);
    zkr__node_t spec = op->lease;
    memset(&op->lease, 0, sizeof op->lease);
    if (have_node(c, op, spec.path, spec.czxid, spec.session) != 0) {
        zkr__node_delete_nowait(c, &(zkr__node_t){.path = spec.path, .session = spec.session});
        op->phase = ZKR__PH_START;
        return 0;
    }
    op->lsession = op->node.session;
    int d = op->ahead_kids.v ? lease_decide(c, op, &op->ahead_kids, 0, ZOK, 0) : 0;
    zkr__strvec_free(&op->ahead_kids);
    if (d == 1) {
        grant(c, op);
        return 1;
    }
    op->need_look = 1; /* no room, or not listed: count again, watching */
    return 0;
}

/* The recovery's step, with nothing in flight: returns 0 or a code. */
static int recover_step(zkr_client_t *c, zkr__record_t *op, zkr__news_t *nw, int usable, int64_t session)
{
    if (nw->listed) {
        char prefix[ZKR__PROTECTED_PREFIX_LEN + 1];
        zkr__protected_name(prefix, sizeof prefix, op->uuid, "");
        long i = zkr__strvec_find_prefix(&nw->kids, prefix);
        if (i < 0 || op->lsession != op->csession) {
            if (i >= 0 || op->lsession != op->csession)
                zkr__lost_create_delete_later(c, zkr__record_stage_dir(op), op->uuid, op->csession);
            op->phase = ZKR__PH_START; /* the create never happened, or not on our session */
            return 0;
        }
        free(op->rpath);
        if (!(op->rpath = zkr__path_join(zkr__record_stage_dir(op), nw->kids.v[i])))
            return ZKR_ENOMEM;
        pthread_mutex_lock(&c->mu);
        zkr__record_send_recover_exists_locked(c, op);
        pthread_mutex_unlock(&c->mu);
        return 0;
    }
    if (nw->existed) {
        int zrc = nw->exists_rc;
        if (zrc == ZOK && nw->ex_owner == op->csession && session == op->csession) {
            char *path = op->rpath; /* adopt our own node */
            op->rpath = NULL;
            return have_node(c, op, path, nw->ex_czxid, op->csession);
        }
        if (zrc == ZOK) {
            /* A node of another session (the one that sent the create is
             * gone): it would block every contender. */
            zkr__client_delete_later(c, op->rpath, op->csession);
            op->phase = ZKR__PH_START;
        } else if (zrc == ZNONODE) {
            op->phase = ZKR__PH_START;
        } else {
            op->need_look = 1; /* could not look: again */
        }
        return 0;
    }
    if (!usable)
        return 0; /* a state delivered brings us back */
    if (session != op->csession) {
        /* The session that sent the create is gone: so is its node, or it
         * goes by its prefix once we can see it. */
        zkr__lost_create_delete_later(c, zkr__record_stage_dir(op), op->uuid, op->csession);
        op->phase = ZKR__PH_START;
        return 0;
    }
    if (op->need_look) {
        op->need_look = 0;
        pthread_mutex_lock(&c->mu);
        zkr__record_send_recover_list_locked(c, op);
        pthread_mutex_unlock(&c->mu);
    }
    return 0;
}

/* What the news says went wrong, if anything (also: what to look at again). */
static int news_errors(zkr__record_t *op, zkr__news_t *nw, int rc, int create_pending)
{
    if (nw->listed && nw->list_rc != ZOK && nw->list_rc != ZNONODE) {
        if (rc == 0 && zkr__zk_class(nw->list_rc) == ZKR__ZC_FINAL && nw->list_rc != ZSYSTEMERROR)
            rc = zkr__zk_error(nw->list_rc);
        op->need_look = 1;
        nw->listed = 0;
    }
    if (nw->counted && nw->count_rc != ZOK && zkr__zk_class(nw->count_rc) != ZKR__ZC_FINAL) {
        op->need_look = 1; /* connection trouble: count again */
        nw->listed = 0;
    }
    if (nw->watch_set && nw->watch_set_rc != ZOK) {
        if (zkr__zk_class(nw->watch_set_rc) == ZKR__ZC_FINAL && nw->watch_set_rc != ZNONODE)
            rc = rc ? rc : zkr__zk_error(nw->watch_set_rc);
        op->need_look = 1; /* gone already, or the link: look again */
        nw->gone_first = 0;
    }
    if (nw->look)
        op->need_look = 1;
    /* (a parent refused, but the create behind it made our node: a parent
     * that exists may refuse us its creation, ZNOAUTH before "exists") */
    if (nw->parents && nw->parents_rc != ZOK && zkr__zk_class(nw->parents_rc) == ZKR__ZC_FINAL &&
        !(nw->created && nw->create_rc == ZOK) && !create_pending)
        rc = rc ? rc : zkr__zk_error(nw->parents_rc);
    return rc;
}

void zkr__record_step(zkr_client_t *c, zkr__record_t *op)
{
    pthread_mutex_lock(&c->mu);
    pthread_mutex_lock(&op->mu);
    zkr__news_t nw = op->nw;
    memset(&op->nw, 0, sizeof op->nw);
    int finished = op->finished;
    int inflight = op->inflight;
    int create_pending = op->create_inflight;
    pthread_mutex_unlock(&op->mu);
    int cancel = op->cancel;
    int expired = op->expired;
    int closing = c->closing;
    int usable = c->cur && zkr__usable_locked(c);
    int have_session = c->have_session;
    int64_t session = c->session_id;
    int lost_state = c->sm.state == ZKR_STATE_LOST;
    pthread_mutex_unlock(&c->mu);
    zkr__news_unpark(op, &nw);

    if (finished) {
        cleanup_news(c, op, &nw);
        zkr__news_clear(&nw);
        return;
    }
    if (op->ending) {
        /* failed, its deletes awaited: past the grace it ends now */
        cleanup_news(c, op, &nw);
        zkr__news_clear(&nw);
        if (expired) {
            pthread_mutex_lock(&c->mu);
            zkr__record_finish_locked(c, op, op->end_rc);
            pthread_mutex_unlock(&c->mu);
        }
        return;
    }
    int rc = 0;
    if (nw.created)
        rc = on_created(c, op, &nw);
    if (nw.ahead_created || nw.ahead_listed) {
        on_lease_ahead(c, op, &nw);
        if (nw.created && nw.create_rc != ZOK)
            lease_ahead_drop(c, op); /* no locks/ node: the lease was not made under it */
    }
    rc = news_errors(op, &nw, rc, create_pending);

    const zkr__node_t *mine = op->in_lease ? &op->lease : &op->node;
    if (rc == 0 && cancel)
        rc = ZKR_ECANCELED;
    if (rc == 0 && closing)
        rc = ZKR_ECLOSED;
    if (rc == 0 && expired)
        rc = ZKR_ETIMEDOUT; /* past the grace, with requests in flight */
    if (rc == 0 && mine->path && (lost_state || (have_session && session != mine->session)))
        rc = ZKR_ESESSIONLOST; /* our node went with the session */
    if (rc != 0) {
        /* on_created and on_lease_ahead took the creates' answers: what is
         * left is listings (fail deletes our nodes; a lost reply's prefix
         * delete is scheduled once, by on_created or by fail) */
        zkr__news_clear(&nw);
        fail(c, op, rc);
        return;
    }
    if (inflight > 0) {
        zkr__news_park(op, &nw); /* the rest of the answers come: decide on all of them */
        zkr__news_clear(&nw);
        return;
    }
    int can_wait = zkr__now_ms() < op->deadline;

    if (op->phase == ZKR__PH_RECOVER) {
        rc = recover_step(c, op, &nw, usable, session);
        zkr__news_clear(&nw);
        if (rc == 0 && op->phase == ZKR__PH_RECOVER && !can_wait)
            rc = ZKR_ETIMEDOUT;
        if (rc != 0) {
            fail(c, op, rc);
            return;
        }
        if (op->phase == ZKR__PH_RECOVER)
            return;
        /* adopted (look next), or create afresh */
    } else if (op->phase == ZKR__PH_QUEUE && (nw.listed || nw.gone_first)) {
        char *wpath = NULL;
        int first = 0;
        /* Next in line (no listing): the one node before ours is gone, and
         * no node can come before ours (the driver's order is creation
         * order), so it is ours. */
        int d = nw.listed ? queue_decide(c, op, &nw.kids, &wpath, &first) : 1;
        zkr__news_clear(&nw);
        op->need_look = 0;
        if (!op->decided) {
            /* send the lease ahead next time?  (under c->mu: the semaphore
             * may be freed meanwhile, and forgets us first) */
            pthread_mutex_lock(&c->mu);
            if (op->speculate)
                atomic_store(op->speculate, d == 1);
            pthread_mutex_unlock(&c->mu);
        }
        op->decided = 1;
        if (d != 1 && op->lease.path)
            lease_ahead_drop(c, op); /* locks/ is not ours yet */
        if (d == 1) {
            if (!op->sem) {
                grant(c, op);
                return;
            }
            if (lease_stage(c, op))
                return;
        } else if (d < 0) {
            fail(c, op, d);
            return;
        } else if (!can_wait) {
            free(wpath);
            fail(c, op, ZKR_ETIMEDOUT);
            return;
        } else {
            pthread_mutex_lock(&c->mu);
            zkr__record_send_watch_locked(c, op, wpath, first);
            pthread_mutex_unlock(&c->mu);
            return;
        }
    } else if (nw.listed && op->phase == ZKR__PH_LEASE) {
        int d = lease_decide(c, op, &nw.kids, nw.counted, nw.count_rc, nw.count);
        /* A watch that fired with the listing's answer may have fired after
         * the listing was made (it is used up): then look again now. */
        int stale = nw.look;
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
        if (!stale)
            return; /* the listing left a children watch (and the count a data watch) */
        op->need_look = 1;
    }
    zkr__news_clear(&nw);
    if (op->finished)
        return;

    if (op->phase == ZKR__PH_START) {
        /* Past the deadline, a stage's first create still goes out (a
         * timeout of 0 tries once); a retry does not. */
        if (!can_wait && (!usable || op->attempts > 0)) {
            fail(c, op, ZKR_ETIMEDOUT);
            return;
        }
        if (op->not_before > 0) {
            if (zkr__now_ms() < op->not_before)
                return; /* a retry's pause: the client thread's timer brings us back */
            op->not_before = 0;
        }
        if (!usable)
            return; /* a state delivered brings us back */
        zkr__record_send_create(c, op); /* (the parents first if need_parents) */
        return;
    }
    if (!can_wait) {
        fail(c, op, ZKR_ETIMEDOUT);
        return;
    }
    if (op->need_look && usable) {
        op->need_look = 0;
        pthread_mutex_lock(&c->mu);
        zkr__record_send_look_locked(c, op);
        pthread_mutex_unlock(&c->mu);
    }
}

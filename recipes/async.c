/* Asynchronous acquires (include/zkr/async.h): the queue engine's protocol
 * (engine.c: protected sequential node with the listing pipelined behind
 * it, sort with the driver's key, the driver's decide function, a data
 * watch on the one node it names) and the semaphore's (semaphore.c: the
 * locks/ mutex, a lease node, the leases counted under a children watch),
 * as state machines instead of blocked threads.
 *
 * Threads and locks.  Every field shared with another thread is guarded by
 * c->mu (see core.h for the order).
 *  - ZooKeeper's completion thread runs our completions and watchers: they
 *    only record their news in the acquire (found by pointer for a
 *    completion: an acquire is freed only when none of its requests is in
 *    flight; by id for a watch, which may fire after it is gone), put it on
 *    the ready list and wake the client thread.
 *  - The client thread (client_main) steps the ready acquires, one at a
 *    time, with c->mu dropped (only this thread ever steps one), ends those
 *    past their deadline, and sees every state delivered
 *    (zkr__async_state_locked).  It sends only asynchronous requests (under
 *    c->mu, on the current handle: they only queue).
 *  - Completions (the user's functions) run on the thread calling
 *    zkr_client_dispatch, or on the client thread in ZKR_DISPATCH_THREAD
 *    mode, or on the thread closing the client; never under a lock of ours.
 * An acquire ends exactly once (finish_locked puts it on the done list);
 * requests still in flight then are answered into a finished acquire,
 * whose step only cleans up (a node created meanwhile is deleted). */
#include "config.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "recipes/async.h"
#include "recipes/core.h"

#define PARENT_RETRIES 5
#define CREATE_RETRIES 20
#define STEPS_PER_RUN 256

enum {
    PH_START,  /* the current stage's create is to be sent (when connected) */
    PH_CREATE, /* the create and the listing behind it are in flight */
    PH_QUEUE,  /* our queue node exists: list, decide, watch one node */
    PH_LEASE   /* semaphore: locks/ held, our lease exists: count leases */
};

struct zkr_hold {
    zkr_client_t *c;
    int kind;            /* ZKR__LK_* */
    zkr__node_t node;    /* mutex, read, write */
    zkr_lease_t *lease;  /* semaphore mutex */
};

/* What completions and watches report; taken whole by the step. */
typedef struct news {
    int created, create_rc, create_local;
    char *path;
    int64_t czxid, owner;
    int listed, list_rc;
    zkr__strvec_t kids;
    int counted, count_rc;
    int32_t count;
    int wset, wset_rc;
    int look;            /* a watch fired, a state changed, a release nearby */
    int parents, parents_rc;
} news_t;

struct zkr__aop {
    uint64_t id;
    zkr_client_t *c;
    /* ---- constant ---- */
    int kind;                  /* ZKR__LK_*, or 0 for a semaphore lease */
    int sem;                   /* the semaphore protocol (lease, semaphore mutex) */
    const zkr__driver_t *drv;
    char *dir;                 /* the queue's directory */
    char *leases_dir;          /* semaphore */
    char *count_path;          /* semaphore, shared count */
    int max;
    zkr_hold_fn hfn;
    void *hctx;
    zkr_acquire_fn hold_fn;
    zkr_lease_acquire_fn lease_fn;
    void *ctx;
    int64_t deadline;
    /* ---- c->mu ---- */
    zkr__aop_t *prev, *next;   /* c->aops */
    zkr__aop_t *rnext;         /* c->aready */
    zkr__aop_t *dnext;         /* c->adone */
    int in_ready;
    const void *owner;
    int inflight;              /* requests whose completion has not run */
    int create_inflight;       /* the create is one of them */
    zkr__req_t req;            /* registered on h while inflight > 0 */
    news_t nw;
    const zkr__zh_t *h;        /* handle of the last requests: compared, never followed */
    int cancel;
    int finished, taken, delivered;
    int rc;
    void *result;
    char *watching;            /* the node our data watch is on */
    /* ---- the client thread only ---- */
    int phase;
    int in_lease;              /* semaphore: the lease stage */
    int attempts, parent_tries;
    int need_look;
    int64_t csession;          /* session the create went on */
    int64_t lsession;          /* session the listing went on */
    char uuid[ZKR__UUID_LEN + 1];
    zkr__node_t node;          /* the queue node */
    zkr__node_t lease;         /* semaphore: the lease node */
    news_t parked;             /* answers kept until the rest of them come */
};

static _Thread_local const zkr_client_t *dispatching;

/* ---- lists (c->mu) ------------------------------------------------------------ */

static zkr__aop_t *find_locked(zkr_client_t *c, uint64_t id)
{
    for (zkr__aop_t *op = c->aops; op; op = op->next)
        if (op->id == id)
            return op;
    return NULL;
}

static void ready_locked(zkr_client_t *c, zkr__aop_t *op)
{
    if (op->in_ready)
        return;
    op->in_ready = 1;
    op->rnext = NULL;
    if (c->aready_tail)
        c->aready_tail->rnext = op;
    else
        c->aready = op;
    c->aready_tail = op;
    pthread_cond_signal(&c->wake);
}

static void raise_fd_locked(zkr_client_t *c)
{
    if (c->afd < 0 || c->afd_raised)
        return;
    uint64_t one = 1;
    if (write(c->afd, &one, sizeof one) == (ssize_t)sizeof one)
        c->afd_raised = 1;
}

static void lower_fd_locked(zkr_client_t *c)
{
    if (c->afd < 0 || !c->afd_raised)
        return;
    uint64_t v;
    if (read(c->afd, &v, sizeof v) == (ssize_t)sizeof v || errno == EAGAIN)
        c->afd_raised = 0;
}

static void news_clear(news_t *nw)
{
    free(nw->path);
    zkr__strvec_free(&nw->kids);
    memset(nw, 0, sizeof *nw);
}

static void op_free(zkr__aop_t *op)
{
    news_clear(&op->nw);
    news_clear(&op->parked);
    free(op->watching);
    free(op->dir);
    free(op->leases_dir);
    free(op->count_path);
    zkr__node_clear(&op->node);
    zkr__node_clear(&op->lease);
    free(op);
}

/* Free op if nothing will touch it any more.  c->mu held. */
static void maybe_free_locked(zkr_client_t *c, zkr__aop_t *op)
{
    if (!op->delivered || op->inflight > 0 || op->in_ready)
        return;
    if (op->prev)
        op->prev->next = op->next;
    else
        c->aops = op->next;
    if (op->next)
        op->next->prev = op->prev;
    else
        c->aops_tail = op->prev;
    op_free(op);
}

/* The acquire ends with rc (result: the hold or lease for ZKR_OK).  c->mu held. */
static void finish_locked(zkr_client_t *c, zkr__aop_t *op, int rc, void *result)
{
    op->finished = 1;
    op->rc = rc;
    op->result = result;
    free(op->watching);
    op->watching = NULL;
    op->dnext = NULL;
    if (c->adone_tail)
        c->adone_tail->dnext = op;
    else
        c->adone = op;
    c->adone_tail = op;
    raise_fd_locked(c);
    if (c->adispatch == ZKR_DISPATCH_THREAD)
        pthread_cond_signal(&c->wake);
}

/* ---- completions and watches (ZooKeeper's completion thread) ------------------- */

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
        ready_locked(c, op);
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
    ready_locked(c, op);
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
    ready_locked(c, op);
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
    ready_locked(c, op);
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
    ready_locked(c, op);
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
    ready_locked(c, op);
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
    zkr__aop_t *op = find_locked(c, (uint64_t)(uintptr_t)ctx);
    if (op && !op->finished) {
        op->nw.look = 1;
        ready_locked(c, op);
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

/* Delete one of our nodes without waiting: the engine's delete (our own
 * watch on it first, if set; the answer settled in the background).  No
 * lock held. */
static void node_drop(zkr_client_t *c, zkr__node_t *n)
{
    zkr__node_delete_nowait(c, n);
}

static const char *stage_dir(const zkr__aop_t *op)
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

static void send_create_locked(zkr_client_t *c, zkr__aop_t *op, const char *path)
{
    zhandle_t *zh = current_locked(c, op);
    if (!zh) {
        op->nw.created = 1;
        op->nw.create_rc = ZCLOSING;
        op->nw.create_local = 1;
        ready_locked(c, op);
        return;
    }
    op->csession = c->cur->session_id;
    int zrc = zoo_acreate2(zh, path, "", 0, zkr__client_acl(c), ZOO_EPHEMERAL_SEQUENTIAL, create_done, op);
    if (zrc != ZOK) {
        op->nw.created = 1;
        op->nw.create_rc = zrc;
        op->nw.create_local = 1;
        sent_locked(op);
        ready_locked(c, op);
        return;
    }
    op->inflight++;
    op->create_inflight = 1;
    op->phase = PH_CREATE;
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
        ready_locked(c, op);
}

static void send_look_locked(zkr_client_t *c, zkr__aop_t *op)
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
        ready_locked(c, op);
}

static void send_parents_locked(zkr_client_t *c, zkr__aop_t *op, char *dir)
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
        ready_locked(c, op);
}

/* ---- the step (client thread, no lock held) ---------------------------------------- */

static void fail(zkr_client_t *c, zkr__aop_t *op, int rc)
{
    node_drop(c, &op->lease);
    node_drop(c, &op->node);
    pthread_mutex_lock(&c->mu);
    finish_locked(c, op, rc, NULL);
    pthread_mutex_unlock(&c->mu);
}

/* A create answered after its acquire ended: delete what it made. */
static void cleanup_news(zkr_client_t *c, zkr__aop_t *op, news_t *nw)
{
    if (nw->created && nw->create_rc == ZOK && nw->path) {
        zkr__node_t n;
        memset(&n, 0, sizeof n);
        n.path = nw->path;
        n.session = nw->owner ? nw->owner : op->csession;
        nw->path = NULL;
        node_drop(c, &n);
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
            zkr__client_delete_prefix_later(c, stage_dir(op), prefix, op->csession);
    }
}

/* The create's answer.  Returns 0, or a code to end the acquire with. */
static int on_created(zkr_client_t *c, zkr__aop_t *op, news_t *nw)
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
        op->phase = op->in_lease ? PH_LEASE : PH_QUEUE;
        op->need_look = 1; /* until a listing decides */
        return 0;
    }
    op->phase = PH_START;
    if (rc == ZNONODE) {
        if (op->parent_tries++ >= PARENT_RETRIES)
            return ZKR_ENONODE;
        char *dir = strdup(stage_dir(op));
        if (!dir)
            return ZKR_ENOMEM;
        pthread_mutex_lock(&c->mu);
        send_parents_locked(c, op, dir);
        pthread_mutex_unlock(&c->mu);
        free(dir);
        return 0;
    }
    if (zkr__zk_class(rc) == ZKR__ZC_FINAL && rc != ZSYSTEMERROR)
        return zkr__zk_error(rc);
    /* Connection or session trouble: the reply is lost, the node may exist.
     * It goes by its prefix in the background; try afresh. */
    cleanup_news(c, op, nw);
    if (++op->attempts >= CREATE_RETRIES)
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
static int lease_decide(zkr_client_t *c, zkr__aop_t *op, news_t *nw)
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
    void *result = NULL;
    int rc = ZKR_OK;
    zkr_hold_t *hd = NULL;
    if (op->kind != 0 && !(hd = calloc(1, sizeof *hd))) {
        fail(c, op, ZKR_ENOMEM);
        return;
    }
    if (op->sem) {
        node_drop(c, &op->node); /* the locks/ mutex: done with it */
        zkr__node_track(c, &op->lease, op->hfn, op->hctx);
        zkr_lease_t *l = zkr__lease_wrap(c, &op->lease);
        if (!l)
            rc = ZKR_ECLOSED;
        else if (hd)
            hd->lease = l;
        result = l;
    } else if (zkr__client_retain(c) != ZKR_OK) {
        rc = ZKR_ECLOSED;
    } else {
        zkr__node_track(c, &op->node, op->hfn, op->hctx);
        hd->node = op->node;
        memset(&op->node, 0, sizeof op->node);
    }
    if (rc != ZKR_OK) {
        free(hd);
        fail(c, op, rc);
        return;
    }
    if (hd) {
        hd->c = c;
        hd->kind = op->kind;
        result = hd;
    }
    pthread_mutex_lock(&c->mu);
    finish_locked(c, op, ZKR_OK, result);
    pthread_mutex_unlock(&c->mu);
}

/* Start the semaphore's lease stage (locks/ is held). */
static void lease_stage(zkr__aop_t *op)
{
    op->in_lease = 1;
    op->phase = PH_START;
    op->attempts = 0;
    op->parent_tries = 0;
}

static void step(zkr_client_t *c, zkr__aop_t *op)
{
    pthread_mutex_lock(&c->mu);
    news_t nw = op->nw;
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
    news_clear(&op->parked);

    if (finished) {
        cleanup_news(c, op, &nw);
        news_clear(&nw);
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
        news_clear(&nw);
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
        news_clear(&nw);
        return;
    }
    int64_t now = zkr__now_ms();
    int can_wait = now < op->deadline;

    if (nw.listed && op->phase == PH_QUEUE) {
        char *wpath = NULL;
        int d = queue_decide(c, op, &nw.kids, &wpath);
        news_clear(&nw);
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
                ready_locked(c, op);
            }
            pthread_mutex_unlock(&c->mu);
            return;
        }
    } else if (nw.listed && op->phase == PH_LEASE) {
        int d = lease_decide(c, op, &nw);
        news_clear(&nw);
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
    news_clear(&nw);

    if (op->phase == PH_START) {
        if (!usable) {
            if (!can_wait)
                fail(c, op, ZKR_ETIMEDOUT);
            return; /* a state delivered brings us back */
        }
        if (zkr__uuid(op->uuid) != 0) {
            fail(c, op, ZKR_ESYSTEM);
            return;
        }
        char *path = zkr__protected_path(stage_dir(op), op->uuid, op->in_lease ? "lease-" : op->drv->marker);
        if (!path) {
            fail(c, op, ZKR_ENOMEM);
            return;
        }
        pthread_mutex_lock(&c->mu);
        send_create_locked(c, op, path);
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
        send_look_locked(c, op);
        pthread_mutex_unlock(&c->mu);
    }
}

/* ---- the client thread's part ---------------------------------------------------------- */

int zkr__async_pending_locked(const zkr_client_t *c)
{
    return c->aready != NULL || (c->adispatch == ZKR_DISPATCH_THREAD && c->adone != NULL);
}

/* Run the first waiting completion on the calling thread.  c->mu held,
 * dropped around the call.  Returns 1 if there was one. */
static int deliver_one_locked(zkr_client_t *c)
{
    zkr__aop_t *op = c->adone;
    if (!op) {
        lower_fd_locked(c);
        return 0;
    }
    c->adone = op->dnext;
    if (!c->adone) {
        c->adone_tail = NULL;
        lower_fd_locked(c);
    }
    op->taken = 1;
    int rc = op->rc;
    void *res = op->result;
    /* Cancelled (or closing) after the grant, before delivery: undo it. */
    int undo = rc == ZKR_OK && (op->cancel || c->closing);
    int undo_rc = op->cancel ? ZKR_ECANCELED : ZKR_ECLOSED;
    pthread_mutex_unlock(&c->mu);
    if (undo) {
        if (op->kind == 0)
            zkr_lease_return(res);
        else
            zkr_hold_release(res);
        rc = undo_rc;
        res = NULL;
    }
    if (op->kind == 0)
        op->lease_fn(rc, res, op->ctx);
    else
        op->hold_fn(rc, res, op->ctx);
    pthread_mutex_lock(&c->mu);
    op->delivered = 1;
    pthread_cond_broadcast(&c->cond);
    maybe_free_locked(c, op);
    return 1;
}

int64_t zkr__async_run_locked(zkr_client_t *c)
{
    for (int n = 0; n < STEPS_PER_RUN && c->aready && !c->closing; n++) {
        zkr__aop_t *op = c->aready;
        c->aready = op->rnext;
        if (!c->aready)
            c->aready_tail = NULL;
        pthread_mutex_unlock(&c->mu);
        step(c, op);
        pthread_mutex_lock(&c->mu);
        op->in_ready = 0;
        /* news that came while it stepped: again */
        if (op->nw.created || op->nw.listed || op->nw.counted || op->nw.wset || op->nw.parents ||
            (op->nw.look && !op->finished))
            ready_locked(c, op);
        maybe_free_locked(c, op);
    }
    int64_t now = zkr__now_ms();
    int64_t next = INT64_MAX;
    for (zkr__aop_t *op = c->aops; op; op = op->next) {
        if (op->finished || op->inflight > 0)
            continue;
        if (op->deadline <= now)
            ready_locked(c, op);
        else if (op->deadline < next)
            next = op->deadline;
    }
    while (c->adispatch == ZKR_DISPATCH_THREAD && !c->closing && deliver_one_locked(c))
        ;
    return c->aready ? now : next;
}

void zkr__async_state_locked(zkr_client_t *c, zkr_state_t s)
{
    (void)s;
    for (zkr__aop_t *op = c->aops; op; op = op->next) {
        if (op->finished)
            continue;
        op->nw.look = 1; /* after RECONNECTED the watch may be gone: look again */
        ready_locked(c, op);
    }
}

void zkr__async_wake_path(zkr_client_t *c, const char *path)
{
    pthread_mutex_lock(&c->mu);
    for (zkr__aop_t *op = c->aops; op; op = op->next) {
        if (!op->finished && op->watching && strcmp(op->watching, path) == 0) {
            op->nw.look = 1;
            ready_locked(c, op);
        }
    }
    pthread_mutex_unlock(&c->mu);
}

int zkr__async_in_dispatch(const zkr_client_t *c)
{
    return dispatching == c;
}

void zkr__async_close(zkr_client_t *c)
{
    /* The client thread is gone and every ZooKeeper completion has run:
     * only the program's threads (dispatch, cancel) may still look. */
    pthread_mutex_lock(&c->mu);
    c->aready = c->aready_tail = NULL;
    for (zkr__aop_t *op = c->aops; op; op = op->next) {
        op->in_ready = 0;
        if (op->finished)
            continue;
        op->finished = 1; /* ours now */
        pthread_mutex_unlock(&c->mu);
        /* The session is closed: its ephemeral nodes are gone. */
        zkr__track_remove(c, op->lease.track, NULL);
        zkr__track_remove(c, op->node.track, NULL);
        op->lease.track = op->node.track = NULL;
        pthread_mutex_lock(&c->mu);
        finish_locked(c, op, ZKR_ECLOSED, NULL);
    }
    while (deliver_one_locked(c))
        ;
    /* Wait for completions another thread's dispatch is running. */
    for (;;) {
        zkr__aop_t *op = c->aops;
        while (op && op->delivered)
            op = op->next;
        if (!op)
            break;
        pthread_cond_wait(&c->cond, &c->mu);
    }
    while (c->aops) {
        zkr__aop_t *op = c->aops;
        c->aops = op->next;
        op_free(op);
    }
    c->aops_tail = NULL;
    pthread_mutex_unlock(&c->mu);
}

void zkr__async_free(zkr_client_t *c)
{
    while (c->aops) {
        zkr__aop_t *op = c->aops;
        c->aops = op->next;
        op_free(op);
    }
    if (c->afd >= 0)
        close(c->afd);
    c->afd = -1;
}

void zkr__async_forget(zkr_client_t *c, const void *owner)
{
    pthread_mutex_lock(&c->mu);
    for (zkr__aop_t *op = c->aops; op; op = op->next) {
        if (op->owner != owner)
            continue;
        op->owner = NULL;
        if (!op->taken)
            op->cancel = 1;
        if (!op->finished)
            ready_locked(c, op);
    }
    pthread_mutex_unlock(&c->mu);
}

/* ---- the public calls ------------------------------------------------------------------------ */

static int start(const zkr__async_target_t *t, int kind, int64_t timeout_ms, zkr_acquire_fn hfn,
                 zkr_lease_acquire_fn lfn, void *ctx, uint64_t *id)
{
    zkr_client_t *c = t->c;
    zkr__aop_t *op = calloc(1, sizeof *op);
    if (!op)
        return ZKR_ENOMEM;
    op->c = c;
    op->kind = kind;
    op->sem = kind == 0 || kind == ZKR__LK_SMUTEX;
    op->drv = t->drv;
    op->dir = strdup(t->dir);
    if (op->sem) {
        op->leases_dir = strdup(t->leases_dir);
        op->count_path = t->count_path ? strdup(t->count_path) : NULL;
        op->max = t->max;
    }
    if (!op->dir || (op->sem && (!op->leases_dir || (t->count_path && !op->count_path)))) {
        op_free(op);
        return ZKR_ENOMEM;
    }
    op->hfn = t->hold.fn;
    op->hctx = t->hold.ctx;
    op->hold_fn = hfn;
    op->lease_fn = lfn;
    op->ctx = ctx;
    op->owner = t->owner;
    op->deadline = zkr__deadline(timeout_ms);
    op->phase = PH_START;
    pthread_mutex_lock(&c->mu);
    if (c->closing) {
        pthread_mutex_unlock(&c->mu);
        op_free(op);
        return ZKR_ECLOSED;
    }
    op->id = ++c->next_aop_id;
    op->prev = c->aops_tail;
    if (c->aops_tail)
        c->aops_tail->next = op;
    else
        c->aops = op;
    c->aops_tail = op;
    ready_locked(c, op); /* the client thread sends its create, in order */
    if (id)
        *id = op->id;
    pthread_mutex_unlock(&c->mu);
    return ZKR_OK;
}

int zkr_lock_acquire_async(zkr_lock_ref_t ref, int64_t timeout_ms, zkr_acquire_fn fn, void *ctx, uint64_t *id)
{
    int kind = zkr__lock_ref_kind(ref);
    if (!kind || !fn)
        return ZKR_EINVAL;
    zkr__async_target_t t;
    memset(&t, 0, sizeof t);
    if (kind == ZKR__LK_MUTEX)
        zkr__mutex_async_target(ref.obj, &t);
    else if (kind == ZKR__LK_SMUTEX)
        zkr__semaphore_async_target(zkr__semaphore_mutex_sem(ref.obj), &t);
    else
        zkr__rwlock_async_target(ref.obj, kind == ZKR__LK_WRITE, &t);
    return start(&t, kind, timeout_ms, fn, NULL, ctx, id);
}

int zkr_semaphore_acquire_async(zkr_semaphore_t *s, int64_t timeout_ms, zkr_lease_acquire_fn fn, void *ctx,
                                uint64_t *id)
{
    if (!s || !fn)
        return ZKR_EINVAL;
    zkr__async_target_t t;
    memset(&t, 0, sizeof t);
    zkr__semaphore_async_target(s, &t);
    return start(&t, 0, timeout_ms, NULL, fn, ctx, id);
}

int zkr_async_cancel(zkr_client_t *c, uint64_t id)
{
    if (!c || id == 0)
        return ZKR_EINVAL;
    pthread_mutex_lock(&c->mu);
    zkr__aop_t *op = find_locked(c, id);
    int rc = (op && !op->taken) ? ZKR_OK : ZKR_ENONODE;
    if (rc == ZKR_OK) {
        op->cancel = 1;
        if (!op->finished)
            ready_locked(c, op);
    }
    pthread_mutex_unlock(&c->mu);
    return rc;
}

int zkr_client_set_dispatch(zkr_client_t *c, zkr_dispatch_mode_t mode)
{
    if (!c || (mode != ZKR_DISPATCH_LOOP && mode != ZKR_DISPATCH_THREAD))
        return ZKR_EINVAL;
    pthread_mutex_lock(&c->mu);
    int rc = c->closing ? ZKR_ECLOSED : ZKR_OK;
    if (rc == ZKR_OK) {
        c->adispatch = mode;
        pthread_cond_signal(&c->wake);
    }
    pthread_mutex_unlock(&c->mu);
    return rc;
}

int zkr_client_fd(zkr_client_t *c)
{
    if (!c)
        return ZKR_EINVAL;
    pthread_mutex_lock(&c->mu);
    int rc = c->closing ? ZKR_ECLOSED : ZKR_OK;
    if (rc == ZKR_OK && c->afd < 0) {
        c->afd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (c->afd < 0)
            rc = ZKR_ESYSTEM;
        else if (c->adone)
            raise_fd_locked(c);
    }
    if (rc == ZKR_OK)
        rc = c->afd;
    pthread_mutex_unlock(&c->mu);
    return rc;
}

int zkr_client_dispatch(zkr_client_t *c)
{
    if (!c)
        return ZKR_EINVAL;
    const zkr_client_t *outer = dispatching;
    dispatching = c;
    pthread_mutex_lock(&c->mu);
    int waiting = 0;
    for (zkr__aop_t *op = c->adone; op; op = op->dnext)
        waiting++;
    int ran = 0;
    while (ran < waiting && deliver_one_locked(c))
        ran++;
    if (!c->adone)
        lower_fd_locked(c);
    pthread_mutex_unlock(&c->mu);
    dispatching = outer;
    return ran;
}

/* ---- holds ------------------------------------------------------------------------------ */

int zkr_hold_release(zkr_hold_t *hd)
{
    if (!hd)
        return ZKR_EINVAL;
    int rc;
    if (hd->lease) {
        rc = zkr_lease_return(hd->lease);
    } else {
        rc = zkr__node_delete(hd->c, &hd->node);
        if (rc == ZKR_ECLOSED)
            rc = ZKR_OK; /* the node went with the session */
        zkr__client_release(hd->c);
    }
    free(hd);
    return rc;
}

int zkr_hold_fencing_token(const zkr_hold_t *hd, int64_t *token)
{
    if (!hd || !token)
        return ZKR_EINVAL;
    if (hd->lease)
        return zkr_lease_fencing_token(hd->lease, token);
    *token = hd->node.czxid;
    return ZKR_OK;
}

zkr_hold_state_t zkr_hold_state(const zkr_hold_t *hd)
{
    if (!hd)
        return ZKR_HOLD_NONE;
    if (hd->lease)
        return zkr_lease_hold_state(hd->lease);
    return zkr__node_hold_state(hd->c, &hd->node);
}

const char *zkr_hold_node_path(const zkr_hold_t *hd)
{
    if (!hd)
        return NULL;
    return hd->lease ? zkr_lease_path(hd->lease) : hd->node.path;
}

const char *zkr_hold_kind(const zkr_hold_t *hd)
{
    static const char *const names[] = {"invalid", "mutex", "semaphore-mutex", "read", "write"};
    if (!hd || hd->kind < 1 || hd->kind > 4)
        return names[0];
    return names[hd->kind];
}

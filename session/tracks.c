/* Tracked nodes and holds.  Every node a recipe creates is tracked from
 * its creation to its delete.  A node that holds, or is next in line (the
 * one node before it is first: it will be granted on that node's deletion
 * without another listing), gets one data watch of its own session
 * ZKR__SELF_WATCH_DELAY_MS after that began, set by the client thread
 * (asynchronously): if anyone else deletes it while our session lives, its
 * waiter is woken (the acquire fails with ZKR_EDELETED) or the hold
 * becomes LOST at once.  A node deleted by someone else before then (after
 * the listing or the create that last showed it) is seen when the watch
 * is set (the server answers "no node").  A lock taken
 * and released within the delay (the common case) sends nothing for it.
 * A node further back in line is granted only on a listing, which shows
 * whether it is still there; it is watched only once it has waited
 * ZKR__WAITER_WATCH_DELAY_MS (a waiter whose node is deleted learns of it
 * within that, or when its turn comes, if sooner).  The watch stays on
 * through our own delete, which fires it to our session alone (a
 * notification, not a request; the track is gone by then, so it is
 * ignored).
 *
 * The client tells each granted hold whether it is still safe.  States
 * change on the client thread as soon as a connection state happens
 * (however slow the listeners are), or on an outside deletion, except a
 * hold's first state; the hold listener is then told, on the callback
 * thread, every state it has not been told.  The check after
 * RECONNECTED (is our node still there, owned by our session?) is an
 * asynchronous exists, so a stalled server never holds up the client
 * thread.  Guarded by c->mu. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "session/core_private.h"

struct zkr__track {
    uint64_t id;
    char *path;
    int64_t session;
    int watch_queued;      /* its self watch is due at watch_at: on
                              c->watch_q[watch_queued - 1] */
    int64_t watch_at;      /* monotonic ms */
    int watch_sent;        /* once per node */
    int held;              /* granted a hold (else a node still queued) */
    int deleted;           /* deleted by someone else while our session lived */
    uint64_t waiter;       /* the waiter to wake if it is deleted (0: none) */
    zkr_hold_state_t state; /* NONE until held */
    zkr_hold_state_t told; /* what the listener was last told (SAFE at grant) */
    int doubt_untold;      /* it was IN_DOUBT since the listener was last
                              told: told so first, even if SAFE again */
    zkr__hold_listener_t hl;
    int removed;           /* unlinked during its own callback: runner frees */
    struct zkr__track *prev, *next;
    struct zkr__track *wprev, *wnext; /* the nodes awaiting their self
                                         watch, soonest due first */
};

typedef struct verify_op {
    zkr__req_t req; /* first */
    zkr_client_t *c;
    const zkr__zh_t *h; /* compared, never followed */
    uint64_t id;
    unsigned epoch;
} verify_op_t;

static void watch_plan_locked(zkr_client_t *c, zkr__track_t *t, int late);

static void track_free(zkr__track_t *t)
{
    free(t->path);
    free(t);
}

static zkr_hold_state_t initial_state_locked(const zkr_client_t *c, const zkr__track_t *t)
{
    if (t->deleted || c->sm.state == ZKR_STATE_LOST || (c->have_session && c->session_id != t->session))
        return ZKR_HOLD_LOST;
    return zkr__usable_locked(c) ? ZKR_HOLD_SAFE : ZKR_HOLD_IN_DOUBT;
}

static zkr__track_t *find_locked(zkr_client_t *c, uint64_t id)
{
    zkr__track_t *t = c->tracks;
    while (t && t->id != id)
        t = t->next;
    return t;
}

/* Our node was deleted while our session lives (a watch or a read said
 * so).  c->mu held. */
static void deleted_locked(zkr_client_t *c, zkr__track_t *t)
{
    if (t->deleted)
        return;
    t->deleted = 1;
    if (t->held && t->state != ZKR_HOLD_LOST) {
        t->state = ZKR_HOLD_LOST;
        c->tracks_dirty = 1;
        zkr__wake_callbacks_locked(c);
        zkr__log(c, ZKR_LOG_WARN, "lock node %s was deleted by another session: hold LOST", t->path);
    }
    if (t->waiter && c->hooks)
        c->hooks->wake_id_locked(c, t->waiter);
}

static void self_watch_fn(zhandle_t *zh, int type, int state, const char *path, void *ctx)
{
    (void)state;
    (void)path;
    if (type != ZOO_DELETED_EVENT)
        return; /* session events, changes (revocation has its own watch), removal */
    const zkr__zh_t *h = zoo_get_context(zh);
    if (!h)
        return;
    zkr_client_t *c = h->c;
    pthread_mutex_lock(&c->mu);
    zkr__track_t *t = find_locked(c, (uint64_t)(uintptr_t)ctx);
    if (t)
        deleted_locked(c, t);
    pthread_mutex_unlock(&c->mu);
}

typedef struct self_op {
    zkr__req_t req; /* first */
    zkr_client_t *c;
    const zkr__zh_t *h; /* compared, never followed */
    uint64_t id;
} self_op_t;

static void self_watch_done(int rc, const char *value, int len, const struct Stat *st, const void *data)
{
    (void)value;
    (void)len;
    self_op_t *op = (self_op_t *)data;
    zkr__req_end(&op->req);
    zkr_client_t *c = op->c;
    pthread_mutex_lock(&c->mu);
    zkr__answer_locked(c, op->h, rc);
    zkr__track_t *t = find_locked(c, op->id);
    if (t && rc == ZNONODE)
        deleted_locked(c, t); /* gone before the watch was set */
    else if (t && rc == ZOK && st && st->ephemeralOwner != t->session)
        deleted_locked(c, t); /* deleted and made again by someone else */
    pthread_mutex_unlock(&c->mu);
    free(op);
}

static void self_watch_closing(zkr__req_t *r)
{
    self_watch_done(ZCLOSING, NULL, 0, NULL, r);
}

int zkr__track_add(zkr_client_t *c, const char *path, int64_t session, uint64_t waiter, zkr__track_t **out)
{
    zkr__track_t *t = calloc(1, sizeof *t);
    if (!t || !(t->path = strdup(path))) {
        free(t);
        return ZKR_ENOMEM;
    }
    t->session = session;
    t->waiter = waiter;
    t->told = ZKR_HOLD_SAFE;
    pthread_mutex_lock(&c->mu);
    t->id = ++c->next_id;
    t->prev = c->tracks_tail;
    if (c->tracks_tail)
        c->tracks_tail->next = t;
    else
        c->tracks = t;
    c->tracks_tail = t;
    watch_plan_locked(c, t, 1); /* a waiter further back, for now */
    pthread_mutex_unlock(&c->mu);
    *out = t;
    return ZKR_OK;
}

/* Set t's self watch on the current handle.  c->mu held. */
static void self_watch_send_locked(zkr_client_t *c, zkr__track_t *t)
{
    self_op_t *op = malloc(sizeof *op);
    int zrc = ZSYSTEMERROR;
    if (op) {
        op->c = c;
        op->h = c->cur;
        op->id = t->id;
        zkr__req_start(c->cur, &op->req, self_watch_closing);
        zrc = zoo_awget(c->cur->zh, t->path, self_watch_fn, (void *)(uintptr_t)t->id, self_watch_done, op);
        if (zrc != ZOK)
            zkr__req_end(&op->req);
    }
    if (zrc != ZOK) {
        free(op);
        zkr__log(c, ZKR_LOG_WARN, "cannot watch %s (%s): its deletion by others is seen only at reconnection",
                 t->path, zerror(zrc));
    }
}

/* The two queues of nodes awaiting their self watch: 0 (soon: holds and
 * next in line) and 1 (late: further back in line).  Each is in due order
 * as it is appended, for its delay is constant. */
static void watch_unqueue_locked(zkr_client_t *c, zkr__track_t *t)
{
    if (!t->watch_queued)
        return;
    zkr__watch_queue_t *q = &c->watch_q[t->watch_queued - 1];
    if (t->wprev)
        t->wprev->wnext = t->wnext;
    else
        q->head = t->wnext;
    if (t->wnext)
        t->wnext->wprev = t->wprev;
    else
        q->tail = t->wprev;
    t->wprev = t->wnext = NULL;
    t->watch_queued = 0;
}

/* t's self watch is due delay_ms from now (now: the listing or the create
 * that last showed it), unless it is sent or due sooner already.  The
 * client thread is woken only if it would look later than that (once per
 * batch, not per node).  c->mu held. */
static void watch_plan_locked(zkr_client_t *c, zkr__track_t *t, int late)
{
    int64_t at = zkr__now_ms() + (late ? ZKR__WAITER_WATCH_DELAY_MS : ZKR__SELF_WATCH_DELAY_MS);
    if (t->watch_sent || (t->watch_queued && t->watch_at <= at))
        return;
    watch_unqueue_locked(c, t);
    zkr__watch_queue_t *q = &c->watch_q[late];
    t->watch_queued = late + 1;
    t->watch_at = at;
    t->wprev = q->tail;
    if (q->tail)
        q->tail->wnext = t;
    else
        q->head = t;
    q->tail = t;
    if (c->track_timer_at > at) {
        c->track_timer_at = at;
        zkr__wake_locked(c);
    }
}

void zkr__track_next_in_line_locked(zkr_client_t *c, zkr__track_t *t)
{
    if (t)
        watch_plan_locked(c, t, 0);
}

int64_t zkr__tracks_watch_locked(zkr_client_t *c)
{
    int64_t now = zkr__now_ms(), next = INT64_MAX;
    for (int k = 0; k < 2; k++) {
        zkr__watch_queue_t *q = &c->watch_q[k];
        while (q->head && q->head->watch_at <= now) {
            zkr__track_t *t = q->head;
            if (!c->cur || !c->sm.connected || !c->have_session) {
                /* Cut off: look again in a while (the check after
                 * RECONNECTED covers the holds meanwhile). */
                c->track_timer_at = now + ZKR__SELF_WATCH_DELAY_MS;
                return c->track_timer_at;
            }
            if (c->session_id == t->session && t->state != ZKR_HOLD_LOST && !t->deleted)
                self_watch_send_locked(c, t);
            /* (another session's node went with it: nothing to watch) */
            watch_unqueue_locked(c, t);
            t->watch_sent = 1;
        }
        if (q->head && q->head->watch_at < next)
            next = q->head->watch_at;
    }
    c->track_timer_at = next;
    return next;
}

void zkr__track_grant(zkr_client_t *c, zkr__track_t *t, zkr__hold_listener_t hl)
{
    pthread_mutex_lock(&c->mu);
    zkr__session_process_locked(c); /* the hold begins in the state the C client knows */
    t->hl = hl;
    t->held = 1;
    t->state = initial_state_locked(c, t);
    if (t->state != t->told) {
        c->tracks_dirty = 1; /* the listener hears how the hold begins */
        zkr__wake_callbacks_locked(c);
    }
    if (t->state != ZKR_HOLD_LOST)
        watch_plan_locked(c, t, 0);
    pthread_mutex_unlock(&c->mu);
}

void zkr__track_set_waiter(zkr_client_t *c, zkr__track_t *t, uint64_t waiter)
{
    pthread_mutex_lock(&c->mu);
    t->waiter = waiter;
    pthread_mutex_unlock(&c->mu);
}

void zkr__track_mark_deleted(zkr_client_t *c, zkr__track_t *t)
{
    pthread_mutex_lock(&c->mu);
    deleted_locked(c, t);
    pthread_mutex_unlock(&c->mu);
}

zkr_hold_state_t zkr__track_state(zkr_client_t *c, const zkr__track_t *t)
{
    if (!t)
        return ZKR_HOLD_NONE;
    pthread_mutex_lock(&c->mu);
    zkr_hold_state_t st = t->state;
    /* closing or closed: the node goes with the session (a release says
     * ZKR_OK: it is t->state that zkr__track_remove returns) */
    if (c->closing && st != ZKR_HOLD_NONE)
        st = ZKR_HOLD_LOST;
    pthread_mutex_unlock(&c->mu);
    return st;
}

zkr_hold_state_t zkr__track_remove(zkr_client_t *c, zkr__track_t *t)
{
    if (!t)
        return ZKR_HOLD_NONE;
    pthread_mutex_lock(&c->mu);
    watch_unqueue_locked(c, t);
    if (t->prev)
        t->prev->next = t->next;
    else
        c->tracks = t->next;
    if (t->next)
        t->next->prev = t->prev;
    else
        c->tracks_tail = t->prev;
    t->prev = t->next = NULL;
    memset(&t->hl, 0, sizeof t->hl);
    zkr_hold_state_t st = t->state;
    int inside = zkr__callback_wait_relocking(c, t);
    if (inside)
        t->removed = 1; /* freed by the notifier after this call */
    pthread_mutex_unlock(&c->mu);
    if (!inside)
        track_free(t);
    return st;
}

static void verify_done(int rc, const struct Stat *st, const void *data)
{
    verify_op_t *op = (verify_op_t *)data;
    zkr__req_end(&op->req);
    zkr_client_t *c = op->c;
    pthread_mutex_lock(&c->mu);
    zkr__answer_locked(c, op->h, rc);
    zkr__track_t *t = c->tracks;
    while (t && t->id != op->id)
        t = t->next;
    /* Only if nothing has happened to the connection since we asked. */
    if (t && op->epoch == c->track_epoch && t->state == ZKR_HOLD_IN_DOUBT) {
        if (rc == ZOK && st && st->ephemeralOwner == t->session)
            t->state = ZKR_HOLD_SAFE;
        else if (rc == ZOK || rc == ZNONODE)
            t->state = ZKR_HOLD_LOST;
        /* otherwise we could not tell: stay in doubt until the next
         * RECONNECTED asks again */
        if (t->state != ZKR_HOLD_IN_DOUBT) {
            c->tracks_dirty = 1;
            zkr__wake_callbacks_locked(c);
        }
    }
    pthread_mutex_unlock(&c->mu);
    free(op);
}

static void verify_closing(zkr__req_t *r)
{
    verify_done(ZCLOSING, NULL, r);
}

/* Ask the server whether t's node is still ours.  c->mu held (the call
 * only queues the request). */
static void verify_send_locked(zkr_client_t *c, zkr__track_t *t)
{
    verify_op_t *op = malloc(sizeof *op);
    int zrc = ZSYSTEMERROR;
    if (op) {
        op->c = c;
        op->h = c->cur;
        op->id = t->id;
        op->epoch = c->track_epoch;
        zkr__req_start(c->cur, &op->req, verify_closing);
        zrc = zoo_aexists(c->cur->zh, t->path, 0, verify_done, op);
        if (zrc != ZOK)
            zkr__req_end(&op->req);
    }
    if (zrc != ZOK) {
        free(op);
        zkr__log(c, ZKR_LOG_WARN, "cannot check hold %s after reconnecting (%s): it stays IN_DOUBT", t->path,
                 zerror(zrc));
    }
}

void zkr__tracks_apply_locked(zkr_client_t *c, zkr_state_t s)
{
    c->track_epoch++;
    for (zkr__track_t *t = c->tracks; t; t = t->next) {
        zkr_hold_state_t next = t->state;
        if (!t->held || t->state == ZKR_HOLD_LOST)
            continue; /* queued nodes have no state; LOST is final */
        if (s == ZKR_STATE_LOST) {
            next = ZKR_HOLD_LOST;
        } else if (s == ZKR_STATE_SUSPENDED || s == ZKR_STATE_READ_ONLY) {
            next = ZKR_HOLD_IN_DOUBT;
        } else if (zkr__is_usable_state(s) && t->state == ZKR_HOLD_IN_DOUBT) {
            if (t->session != c->session_id)
                next = ZKR_HOLD_LOST; /* a new session: the node went with the old one */
            else if (c->cur && c->sm.connected)
                verify_send_locked(c, t);
        }
        if (next != t->state) {
            t->state = next;
            t->doubt_untold |= next == ZKR_HOLD_IN_DOUBT;
            c->tracks_dirty = 1;
        }
    }
    if (c->tracks_dirty)
        zkr__wake_callbacks_locked(c);
}

int zkr__tracks_notify_relocking(zkr_client_t *c)
{
    if (!c->tracks_dirty)
        return 0;
    c->tracks_dirty = 0;
    int called = 0;
    for (;;) {
        zkr__track_t *t = c->tracks;
        while (t && t->state == t->told && !t->doubt_untold)
            t = t->next;
        if (!t)
            break;
        /* States change at once, listeners are told in their turn: a
         * doubt that has passed meanwhile is still told, before what
         * followed it (LOST is told alone: it is final). */
        zkr_hold_state_t st = t->state;
        if (t->doubt_untold && t->told != ZKR_HOLD_IN_DOUBT && st == ZKR_HOLD_SAFE)
            st = ZKR_HOLD_IN_DOUBT;
        t->doubt_untold = 0;
        t->told = st;
        if (!t->hl.fn && !t->hl.lease_fn)
            continue;
        zkr__hold_listener_t hl = t->hl;
        zkr__callback_begin_locked(c, t);
        pthread_mutex_unlock(&c->mu);
        if (hl.fn)
            hl.fn(hl.lock, st, t->path, hl.ctx);
        else
            hl.lease_fn(hl.sem, st, t->path, hl.ctx);
        pthread_mutex_lock(&c->mu);
        zkr__callback_end_locked(c);
        if (t->removed)
            track_free(t);
        called = 1;
    }
    return called;
}

void zkr__tracks_forget(zkr_client_t *c, const void *owner)
{
    if (!owner)
        return;
    pthread_mutex_lock(&c->mu);
    for (zkr__track_t *t = c->tracks; t;) {
        if (t->hl.owner != owner) {
            t = t->next;
            continue;
        }
        memset(&t->hl, 0, sizeof t->hl);
        /* A call in progress ends before the object goes (from inside it,
         * it is the caller's own).  The wait lets go of c->mu, and the
         * list may change meanwhile: look again from the start (the
         * tracks seen have no owner now). */
        if (c->calling == t && !zkr__client_on_own_thread(c)) {
            zkr__callback_wait_relocking(c, t);
            t = c->tracks;
        } else {
            t = t->next;
        }
    }
    pthread_mutex_unlock(&c->mu);
}

void zkr__tracks_free(zkr_client_t *c)
{
    while (c->tracks) {
        zkr__track_t *t = c->tracks;
        c->tracks = t->next;
        track_free(t);
    }
    c->tracks_tail = NULL;
    memset(c->watch_q, 0, sizeof c->watch_q);
}

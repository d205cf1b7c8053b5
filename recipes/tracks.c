/* Tracked holds: the client tells each granted hold whether it is still
 * safe.  States change only on the client thread (after the listeners of
 * each connection state), except a hold's first state; the hold listener is
 * then told every state it has not been told.  The check after RECONNECTED
 * (is our node still there, owned by our session?) is an asynchronous
 * exists, so a stalled server never holds up the client thread.  Guarded
 * by c->mu. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "recipes/core.h"

struct zkr__track {
    uint64_t id;
    char *path;
    int64_t session;
    zkr_hold_state_t state;
    zkr_hold_state_t told; /* what the listener was last told (SAFE at grant) */
    zkr_hold_fn fn;
    void *ctx;
    int removed;           /* unlinked during its own callback: runner frees */
    struct zkr__track *next;
};

typedef struct verify_op {
    zkr_client_t *c;
    const zkr__zh_t *h; /* compared, never followed */
    uint64_t id;
    unsigned epoch;
} verify_op_t;

static void track_free(zkr__track_t *t)
{
    free(t->path);
    free(t);
}

static zkr_hold_state_t initial_state_locked(const zkr_client_t *c, int64_t session)
{
    if (c->sm.state == ZKR_STATE_LOST || (c->have_session && c->session_id != session))
        return ZKR_HOLD_LOST;
    return zkr__usable_locked(c) ? ZKR_HOLD_SAFE : ZKR_HOLD_IN_DOUBT;
}

int zkr__track_add(zkr_client_t *c, const char *path, int64_t session, zkr_hold_fn fn, void *ctx,
                   zkr__track_t **out)
{
    zkr__track_t *t = calloc(1, sizeof *t);
    if (!t || !(t->path = strdup(path))) {
        free(t);
        return ZKR_ENOMEM;
    }
    t->session = session;
    t->fn = fn;
    t->ctx = ctx;
    t->told = ZKR_HOLD_SAFE;
    pthread_mutex_lock(&c->mu);
    t->id = ++c->next_id;
    t->state = initial_state_locked(c, session);
    if (t->state != t->told) {
        c->tracks_dirty = 1; /* the listener hears how the hold begins */
        pthread_cond_signal(&c->wake);
    }
    t->next = c->tracks;
    c->tracks = t;
    pthread_mutex_unlock(&c->mu);
    *out = t;
    return ZKR_OK;
}

zkr_hold_state_t zkr__track_state(zkr_client_t *c, const zkr__track_t *t)
{
    if (!t)
        return ZKR_HOLD_NONE;
    pthread_mutex_lock(&c->mu);
    zkr_hold_state_t st = t->state;
    pthread_mutex_unlock(&c->mu);
    return st;
}

zkr_hold_state_t zkr__track_remove(zkr_client_t *c, zkr__track_t *t)
{
    if (!t)
        return ZKR_HOLD_NONE;
    pthread_mutex_lock(&c->mu);
    for (zkr__track_t **p = &c->tracks; *p; p = &(*p)->next) {
        if (*p == t) {
            *p = t->next;
            break;
        }
    }
    t->fn = NULL;
    zkr_hold_state_t st = t->state;
    int inside = zkr__callback_wait_locked(c, t);
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
    zkr_client_t *c = op->c;
    pthread_mutex_lock(&c->mu);
    zkr__answer_locked(c, op->h, rc);
    zkr__track_t *t = c->tracks;
    while (t && t->id != op->id)
        t = t->next;
    /* Only if nothing has happened to the connection since we asked. */
    if (t && op->epoch == c->track_epoch && t->state == ZKR_HOLD_IN_DOUBT) {
        if (rc == ZOK && st)
            t->state = st->ephemeralOwner == t->session ? ZKR_HOLD_SAFE : ZKR_HOLD_LOST;
        else if (rc == ZNONODE)
            t->state = ZKR_HOLD_LOST;
        /* otherwise we could not tell: stay in doubt until the next
         * RECONNECTED asks again */
        if (t->state != ZKR_HOLD_IN_DOUBT) {
            c->tracks_dirty = 1;
            pthread_cond_signal(&c->wake);
        }
    }
    pthread_mutex_unlock(&c->mu);
    free(op);
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
        zrc = zoo_aexists(c->cur->zh, t->path, 0, verify_done, op);
    }
    if (zrc != ZOK) {
        free(op);
        zkr__log(c, 2, "cannot check hold %s after reconnecting (%s): it stays IN_DOUBT", t->path,
                 zerror(zrc));
    }
}

void zkr__tracks_apply_locked(zkr_client_t *c, zkr_state_t s)
{
    c->track_epoch++;
    for (zkr__track_t *t = c->tracks; t; t = t->next) {
        zkr_hold_state_t next = t->state;
        if (t->state == ZKR_HOLD_LOST)
            continue; /* final */
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
            c->tracks_dirty = 1;
        }
    }
}

int zkr__tracks_notify_locked(zkr_client_t *c)
{
    if (!c->tracks_dirty)
        return 0;
    c->tracks_dirty = 0;
    int called = 0;
    for (;;) {
        zkr__track_t *t = c->tracks;
        while (t && t->state == t->told)
            t = t->next;
        if (!t)
            break;
        zkr_hold_state_t st = t->state;
        t->told = st;
        if (!t->fn)
            continue;
        zkr_hold_fn fn = t->fn;
        void *ctx = t->ctx;
        zkr__callback_begin_locked(c, t);
        pthread_mutex_unlock(&c->mu);
        fn(st, t->path, ctx);
        pthread_mutex_lock(&c->mu);
        zkr__callback_end_locked(c);
        if (t->removed)
            track_free(t);
        called = 1;
    }
    return called;
}

void zkr__tracks_free(zkr_client_t *c)
{
    while (c->tracks) {
        zkr__track_t *t = c->tracks;
        c->tracks = t->next;
        track_free(t);
    }
}

/* The session: ZooKeeper handles and their generations, the session
 * watcher, the application of the state machine (states.c), the answer
 * filter, the LOST timer, and the rebuild after a session is lost.
 * Guarded by c->mu (see core.h). */
#include "config.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "session/core_private.h"

#define ZKR__RESOLUTION_DELAY_MS 5000

/* ---- handles ------------------------------------------------------------------ */

/* Runs on ZooKeeper's completion thread: only records and signals.  Events
 * of a handle older than the current one are stale; those of a newer one
 * (being built while the client thread has dropped c->mu) are kept. */
static void session_watcher(zhandle_t *zh, int type, int state, const char *path, void *ctx)
{
    (void)zh;
    (void)path;
    zkr__zh_t *h = ctx;
    if (type != ZOO_SESSION_EVENT || !h)
        return;
    zkr_client_t *c = h->c;
    pthread_mutex_lock(&c->mu);
    if (h->gen >= c->gen && !c->closing) {
        if (c->raw_n < ZKR__RAW_MAX) {
            c->raw[c->raw_n].gen = h->gen;
            c->raw[c->raw_n].state = state;
            c->raw_n++;
        } else {
            c->raw_overflow = 1;
        }
        zkr__wake_locked(c);
    }
    pthread_mutex_unlock(&c->mu);
}

/* The server's answer to the credentials (the handle lives until every
 * completion of it has run). */
static void auth_done(int rc, const void *data)
{
    zkr__zh_t *h = (zkr__zh_t *)data;
    zkr_client_t *c = h->c;
    pthread_mutex_lock(&c->mu);
    h->auth_rc = rc;
    if (rc != ZOK && rc != ZCLOSING && h == c->cur) {
        c->auth_failed = 1;
        zkr__log(c, ZKR_LOG_ERROR, "the server refused the credentials (%s): %s", c->auth_scheme, zerror(rc));
    }
    pthread_cond_broadcast(&c->cond);
    pthread_mutex_unlock(&c->mu);
}

int zkr__handle_new(zkr_client_t *c, unsigned gen, zkr__zh_t **out)
{
    zkr__zh_t *h = calloc(1, sizeof *h);
    if (!h)
        return ZKR_ENOMEM;
    h->c = c;
    h->gen = gen;
    h->refs = 1;
    if (pthread_mutex_init(&h->req_mu, NULL) != 0) {
        free(h);
        return ZKR_ENOMEM;
    }
    if (zkr__cond_init(&h->req_cond) != 0) {
        pthread_mutex_destroy(&h->req_mu);
        free(h);
        return ZKR_ENOMEM;
    }
    int flags = c->allow_read_only ? ZOO_READONLY : 0;
    log_callback_fn logf = zkr__log_slot_take(c, &h->log_slot);
    errno = 0;
    h->zh = zookeeper_init2(c->hosts, session_watcher, c->session_timeout_req, NULL, h, flags, logf);
    if (!h->zh) {
        int e = errno;
        zkr__log_slot_give(h->log_slot);
        pthread_cond_destroy(&h->req_cond);
        pthread_mutex_destroy(&h->req_mu);
        free(h);
        return e == ENOMEM ? ZKR_ENOMEM : (e == EINVAL ? ZKR_EINVAL : ZKR_EZOOKEEPER);
    }
    /* By default the C client looks the host list up again on every poll
     * of its I/O thread (half of its system calls per lock cycle); once
     * every few seconds is plenty (it still does on connection loss). */
    zoo_set_servers_resolution_delay(h->zh, ZKR__RESOLUTION_DELAY_MS);
    if (c->auth_scheme) {
        h->auth_rc = 1; /* asked, no answer yet */
        int rc = zoo_add_auth(h->zh, c->auth_scheme, c->auth_data, c->auth_data_len, auth_done, h);
        if (rc != ZOK) {
            zookeeper_close(h->zh);
            zkr__log_slot_give(h->log_slot);
            pthread_cond_destroy(&h->req_cond);
            pthread_mutex_destroy(&h->req_mu);
            free(h);
            return zkr__zk_error(rc);
        }
    }
    *out = h;
    return ZKR_OK;
}

static atomic_long reqs_live;

void zkr__req_start(zkr__zh_t *h, zkr__req_t *r, void (*closing)(zkr__req_t *r))
{
    r->h = h;
    r->closing = closing;
    r->prev = NULL;
    pthread_mutex_lock(&h->req_mu);
    r->next = h->reqs;
    if (h->reqs)
        h->reqs->prev = r;
    h->reqs = r;
    pthread_mutex_unlock(&h->req_mu);
    atomic_fetch_add(&reqs_live, 1);
}

void zkr__req_end(zkr__req_t *r)
{
    zkr__zh_t *h = r->h;
    if (!h)
        return;
    pthread_mutex_lock(&h->req_mu);
    if (r->prev)
        r->prev->next = r->next;
    else
        h->reqs = r->next;
    if (r->next)
        r->next->prev = r->prev;
    r->h = NULL;
    if (!h->reqs)
        pthread_cond_broadcast(&h->req_cond);
    pthread_mutex_unlock(&h->req_mu);
    atomic_fetch_sub(&reqs_live, 1);
}

long zkr__reqs_live(void)
{
    return atomic_load(&reqs_live);
}

void zkr__handle_close(zkr__zh_t *h)
{
    /* Let the answers in flight come first: the C client itself leaks the
     * requests it has not answered when it closes (see zkr__req_t).  On a
     * live link that takes a round trip; a stalled one gets a bound. */
    int64_t deadline = zkr__deadline(ZKR__CLOSE_DRAIN_MS);
    pthread_mutex_lock(&h->req_mu);
    while (h->reqs && h->zh && zoo_state(h->zh) == ZOO_CONNECTED_STATE &&
           zkr__cond_wait_until(&h->req_cond, &h->req_mu, deadline) != ETIMEDOUT)
        ;
    pthread_mutex_unlock(&h->req_mu);
    if (h->zh)
        zookeeper_close(h->zh); /* its last log line comes before it returns */
    /* The C client's threads are gone: whatever it left unanswered is
     * answered here, so that every context is freed and every waiter
     * told. */
    while (h->reqs) {
        zkr__req_t *r = h->reqs;
        zkr__req_end(r);
        r->closing(r);
    }
    pthread_cond_destroy(&h->req_cond);
    pthread_mutex_destroy(&h->req_mu);
    zkr__log_slot_give(h->log_slot);
    free(h);
}

int zkr__client_get_handle(zkr_client_t *c, zkr__zh_t **h)
{
    pthread_mutex_lock(&c->mu);
    if (c->closing || !c->cur) {
        pthread_mutex_unlock(&c->mu);
        return ZKR_ECLOSED;
    }
    c->cur->refs++;
    *h = c->cur;
    pthread_mutex_unlock(&c->mu);
    return ZKR_OK;
}

void zkr__client_put_handle(zkr_client_t *c, zkr__zh_t *h)
{
    if (!h)
        return;
    pthread_mutex_lock(&c->mu);
    if (--h->refs <= 1) {
        zkr__wake_locked(c);     /* a retired handle can be closed */
        pthread_cond_broadcast(&c->cond);  /* close waits for the current one */
    }
    pthread_mutex_unlock(&c->mu);
}

zhandle_t *zkr__zh(const zkr__zh_t *h)
{
    return h->zh;
}

int64_t zkr__zh_session(zkr_client_t *c, const zkr__zh_t *h)
{
    pthread_mutex_lock(&c->mu);
    int64_t s = h->session_id;
    pthread_mutex_unlock(&c->mu);
    return s;
}

int zkr__usable_locked(const zkr_client_t *c)
{
    return !c->closing && c->sm.connected && zkr__is_usable_state(c->sm.state);
}

int zkr__zh_usable(zkr_client_t *c, const zkr__zh_t *h)
{
    pthread_mutex_lock(&c->mu);
    int ok = h == c->cur && zkr__usable_locked(c);
    pthread_mutex_unlock(&c->mu);
    return ok;
}

/* ---- the state machine, applied ---------------------------------------------------- */

/* Append s to a ring of states; when it is full, the newest slot takes s,
 * so that whoever is far behind ends up told where the client really is. */
static void ring_push(zkr_state_t *ring, int head, int *n, zkr_state_t s)
{
    if (*n < ZKR__REPORT_MAX)
        ring[(head + (*n)++) % ZKR__REPORT_MAX] = s;
    else
        ring[(head + ZKR__REPORT_MAX - 1) % ZKR__REPORT_MAX] = s;
}

/* A new state: the client thread applies it to the holds and acquires at
 * once, then hands it to the callback thread, which tells it to the
 * listeners however slow they are (so a listener never hears of a state
 * its holds do not show yet). */
static void report_locked(zkr_client_t *c, zkr_state_t s)
{
    ring_push(c->applies, c->app_head, &c->app_n, s);
    zkr__wake_locked(c);
}

int zkr__session_next_state_locked(zkr_client_t *c, zkr_state_t *s)
{
    if (c->app_n == 0)
        return 0;
    *s = c->applies[c->app_head];
    c->app_head = (c->app_head + 1) % ZKR__REPORT_MAX;
    c->app_n--;
    return 1;
}

void zkr__session_tell_locked(zkr_client_t *c, zkr_state_t s)
{
    ring_push(c->reports, c->rep_head, &c->rep_n, s);
    zkr__wake_callbacks_locked(c);
}

static void apply_locked(zkr_client_t *c, zkr__sm_effect_t e)
{
    zkr__zh_t *h = c->cur;
    if (e.session_up && h) {
        const clientid_t *id = zoo_client_id(h->zh);
        c->have_session = 1;
        c->session_id = id->client_id;
        memcpy(c->passwd, id->passwd, sizeof c->passwd);
        c->session_timeout = zoo_recv_timeout(h->zh);
        h->session_id = id->client_id;
    }
    if (e.clear_lost_timer)
        c->lost_deadline = INT64_MAX;
    if (e.arm_lost_timer) {
        int64_t t = c->session_timeout > 0 ? c->session_timeout : c->session_timeout_req;
        c->lost_deadline = zkr__now_ms() + t;
    }
    if (e.rebuild)
        c->need_rebuild = 1;
    if (e.auth_failed)
        c->auth_failed = 1;
    if (e.report != ZKR_STATE_LATENT)
        report_locked(c, e.report);
    pthread_cond_broadcast(&c->cond); /* waits on the state re-check */
}

void zkr__session_process_locked(zkr_client_t *c)
{
    if (!c->cur)
        return;
    if (c->raw_overflow) {
        /* More events than we could queue: the handle's present state is
         * what matters. */
        c->raw_overflow = 0;
        c->raw_n = 0;
        apply_locked(c, zkr__sm_step(&c->sm, zoo_state(c->cur->zh)));
        return;
    }
    int keep = 0;
    for (int i = 0; i < c->raw_n; i++) {
        zkr__raw_t r = c->raw[i];
        if (r.gen == c->gen)
            apply_locked(c, zkr__sm_step(&c->sm, r.state));
        else if (r.gen > c->gen && c->building)
            c->raw[keep++] = r; /* the handle being built: not current yet */
    }
    c->raw_n = keep;
}

void zkr__answer_locked(zkr_client_t *c, const zkr__zh_t *h, int zrc)
{
    if ((zrc != ZSESSIONEXPIRED && zrc != ZSESSIONMOVED) || h != c->cur || c->closing)
        return;
    if (!c->sm.connected && c->sm.state == ZKR_STATE_LOST)
        return; /* already known */
    zkr__session_process_locked(c); /* earlier events first, in order */
    apply_locked(c, zkr__sm_step(&c->sm, ZOO_EXPIRED_SESSION_STATE));
    zkr__wake_locked(c);
}

int zkr__zh_answer(zhandle_t *zh, int zrc)
{
    if ((zrc != ZSESSIONEXPIRED && zrc != ZSESSIONMOVED) || !zh)
        return zrc;
    const zkr__zh_t *h = zoo_get_context(zh);
    if (!h)
        return zrc;
    zkr_client_t *c = h->c;
    pthread_mutex_lock(&c->mu);
    zkr__answer_locked(c, h, zrc);
    pthread_mutex_unlock(&c->mu);
    return zrc;
}

/* ---- rebuild and retired handles ------------------------------------------------------ */

void (*zkr__test_rebuild_pause)(void);

/* Replace the current handle by a new session.  c->mu held; dropped while
 * the new handle is made (its first events are queued meanwhile under its
 * own, newer, generation and processed once it is current). */
static void rebuild_relocking(zkr_client_t *c)
{
    c->need_rebuild = 0;
    unsigned gen = ++c->gen_seq;
    c->building = 1;
    pthread_mutex_unlock(&c->mu);
    zkr__zh_t *nh = NULL;
    int rc = zkr__handle_new(c, gen, &nh);
    if (zkr__test_rebuild_pause)
        zkr__test_rebuild_pause(); /* tests widen the window here */
    pthread_mutex_lock(&c->mu);
    c->building = 0;
    if (rc != ZKR_OK || c->closing) {
        if (nh) {
            pthread_mutex_unlock(&c->mu);
            zkr__handle_close(nh);
            pthread_mutex_lock(&c->mu);
        }
        if (!c->closing) {
            c->need_rebuild = 1; /* try again shortly */
            zkr__log(c, ZKR_LOG_WARN, "cannot open a new session: %s (trying again)", zkr_strerror(rc));
        }
        return;
    }
    zkr__zh_t *old = c->cur;
    c->gen = gen;
    c->cur = nh;
    c->sm.connected = 0;
    old->refs--; /* the client's own reference */
    old->next_retired = c->retired;
    c->retired = old;
    zkr__log(c, ZKR_LOG_INFO, "session lost: opening a new one");
}

int64_t zkr__session_tick_relocking(zkr_client_t *c)
{
    int64_t now = zkr__now_ms();
    if (c->sm.state == ZKR_STATE_SUSPENDED && now >= c->lost_deadline)
        apply_locked(c, zkr__sm_lost_timer(&c->sm));
    if (c->need_rebuild && now >= c->rebuild_at) {
        rebuild_relocking(c);
        if (c->need_rebuild)
            c->rebuild_at = zkr__now_ms() + 1000;
    }
    int64_t next = c->lost_deadline;
    if (c->need_rebuild && c->rebuild_at < next)
        next = c->rebuild_at;
    return next;
}

static void *closer_main(void *arg)
{
    zkr__closer_t *cl = arg;
    zkr__handle_close(cl->h);
    atomic_store_explicit(&cl->done, 1, memory_order_release);
    return NULL;
}

/* Join the closers that have finished (a long-lived client that loses its
 * session many times keeps no finished thread).  c->mu held. */
static void join_finished_closers_locked(zkr_client_t *c)
{
    for (zkr__closer_t **p = &c->closers; *p;) {
        zkr__closer_t *cl = *p;
        if (!atomic_load_explicit(&cl->done, memory_order_acquire)) {
            p = &cl->next;
            continue;
        }
        *p = cl->next;
        pthread_join(cl->thread, NULL); /* it has returned: no wait */
        free(cl);
    }
}

void zkr__session_join_closers(zkr_client_t *c)
{
    while (c->closers) {
        zkr__closer_t *cl = c->closers;
        c->closers = cl->next;
        pthread_join(cl->thread, NULL);
        free(cl);
    }
}

/* zookeeper_close may wait a whole receive timeout for a stalled server,
 * so a retired handle is closed on a thread of its own: the client thread
 * must go on reporting the new session meanwhile.  Finished closers are
 * joined here; zkr_client_close joins the rest. */
void zkr__session_close_retired_relocking(zkr_client_t *c)
{
    join_finished_closers_locked(c);
    for (zkr__zh_t **p = &c->retired; *p;) {
        zkr__zh_t *h = *p;
        if (h->refs > 0) {
            p = &h->next_retired;
            continue;
        }
        zkr__zh_t *next = h->next_retired; /* h is the closer's from now on */
        zkr__closer_t *cl = calloc(1, sizeof *cl);
        if (cl) {
            cl->h = h;
            if (pthread_create(&cl->thread, NULL, closer_main, cl) == 0) {
                *p = next;
                cl->next = c->closers;
                c->closers = cl;
                continue;
            }
        }
        free(cl);
        /* No thread to spare: close it here. */
        *p = next;
        pthread_mutex_unlock(&c->mu);
        zkr__handle_close(h);
        pthread_mutex_lock(&c->mu);
        p = &c->retired; /* the list may have changed meanwhile */
    }
}

/* Closer threads not yet joined (tests). */
int zkr__session_closers(zkr_client_t *c)
{
    pthread_mutex_lock(&c->mu);
    int n = 0;
    for (zkr__closer_t *cl = c->closers; cl; cl = cl->next)
        n++;
    pthread_mutex_unlock(&c->mu);
    return n;
}

/* ---- a bounded read ---------------------------------------------------------------- */

int zkr__awaited_init(zkr__awaited_t *a)
{
    return zkr__sync_init(&a->mu, &a->cond) == 0 ? 0 : -1;
}

void zkr__awaited_destroy(zkr__awaited_t *a)
{
    zkr__sync_destroy(&a->mu, &a->cond);
}

int zkr__awaited_answer(zkr__awaited_t *a, int rc)
{
    zkr__req_end(&a->req);
    pthread_mutex_lock(&a->mu);
    int abandoned = a->abandoned;
    a->done = 1;
    a->rc = rc;
    pthread_cond_signal(&a->cond);
    pthread_mutex_unlock(&a->mu);
    return abandoned;
}

int zkr__awaited_wait(zkr__awaited_t *a, int64_t deadline)
{
    pthread_mutex_lock(&a->mu);
    while (!a->done && zkr__cond_wait_until(&a->cond, &a->mu, deadline) != ETIMEDOUT)
        ;
    int done = a->done;
    a->abandoned = !done;
    pthread_mutex_unlock(&a->mu);
    return done;
}

/* An exists awaited until a deadline. */
typedef struct exists_op {
    zkr__awaited_t aw; /* first */
    struct Stat st;
} exists_op_t;

static void exists_op_free(exists_op_t *e)
{
    zkr__awaited_destroy(&e->aw);
    free(e);
}

static void exists_done(int rc, const struct Stat *st, const void *data)
{
    exists_op_t *e = (exists_op_t *)data;
    if (st && rc == ZOK)
        e->st = *st; /* (read by the waiter only once done is set) */
    if (zkr__awaited_answer(&e->aw, rc))
        exists_op_free(e);
}

static void exists_closing(zkr__req_t *r)
{
    exists_done(ZCLOSING, NULL, r);
}

int zkr__zh_exists_until(zkr__zh_t *h, const char *path, int64_t deadline, struct Stat *st)
{
    exists_op_t *e = calloc(1, sizeof *e);
    if (!e)
        return ZSYSTEMERROR;
    if (zkr__awaited_init(&e->aw) != 0) {
        free(e);
        return ZSYSTEMERROR;
    }
    zkr__req_start(h, &e->aw.req, exists_closing);
    int zrc = zoo_aexists(zkr__zh(h), path, 0, exists_done, e);
    if (zrc != ZOK) {
        zkr__req_end(&e->aw.req);
        exists_op_free(e);
        return zrc;
    }
    if (!zkr__awaited_wait(&e->aw, deadline))
        return ZOPERATIONTIMEOUT; /* the completion frees it */
    zrc = e->aw.rc;
    if (zrc == ZOK)
        *st = e->st;
    exists_op_free(e);
    return zkr__zh_answer(zkr__zh(h), zrc);
}

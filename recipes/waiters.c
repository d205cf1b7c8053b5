/* Waiting: waiters (one per blocked caller), the one watch-and-wait loop
 * every recipe uses, and subscriptions (watches whose events run a callback
 * on the client thread).  See core.h for the locks. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "recipes/core.h"

/* ---- waiters (guarded by c->wmu) --------------------------------------------- */

void zkr__waiters_wake_all(zkr_client_t *c, unsigned bits)
{
    pthread_mutex_lock(&c->wmu);
    if (bits & ZKR__WAKE_CLOSE)
        c->wclosing = 1;
    for (zkr__waiter_t *w = c->waiters; w; w = w->next) {
        w->events |= bits;
        pthread_cond_signal(&w->cond);
    }
    pthread_mutex_unlock(&c->wmu);
}

int zkr__waiter_init(zkr_client_t *c, zkr__waiter_t *w)
{
    if (zkr__cond_init(&w->cond) != 0)
        return ZKR_ESYSTEM;
    pthread_mutex_lock(&c->wmu);
    if (c->wclosing) {
        pthread_mutex_unlock(&c->wmu);
        pthread_cond_destroy(&w->cond);
        return ZKR_ECLOSED;
    }
    w->id = ++c->next_waiter_id;
    w->events = 0;
    w->last = 0;
    w->watching = NULL;
    w->next = c->waiters;
    c->waiters = w;
    pthread_mutex_unlock(&c->wmu);
    return ZKR_OK;
}

void zkr__waiter_destroy(zkr_client_t *c, zkr__waiter_t *w)
{
    pthread_mutex_lock(&c->wmu);
    for (zkr__waiter_t **p = &c->waiters; *p; p = &(*p)->next) {
        if (*p == w) {
            *p = w->next;
            break;
        }
    }
    pthread_mutex_unlock(&c->wmu);
    free(w->watching);
    pthread_cond_destroy(&w->cond);
}

int zkr__waiter_watching(zkr_client_t *c, zkr__waiter_t *w, const char *path)
{
    char *copy = path ? strdup(path) : NULL;
    if (path && !copy)
        return ZKR_ENOMEM;
    pthread_mutex_lock(&c->wmu);
    char *old = w->watching;
    w->watching = copy;
    pthread_mutex_unlock(&c->wmu);
    free(old);
    return ZKR_OK;
}

void zkr__waiters_wake_path(zkr_client_t *c, const char *path)
{
    zkr__async_wake_path(c, path); /* c->mu: before wmu */
    pthread_mutex_lock(&c->wmu);
    for (zkr__waiter_t *w = c->waiters; w; w = w->next) {
        if (w->watching && strcmp(w->watching, path) == 0) {
            w->events |= ZKR__WAKE_WATCH;
            pthread_cond_signal(&w->cond);
        }
    }
    pthread_mutex_unlock(&c->wmu);
}

void zkr__waiter_arm(zkr_client_t *c, zkr__waiter_t *w)
{
    pthread_mutex_lock(&c->wmu);
    w->events = 0;
    pthread_mutex_unlock(&c->wmu);
}

static void waiter_watch_fn(zhandle_t *zh, int type, int state, const char *path, void *ctx)
{
    (void)state;
    /* Session events reach every registered watcher; the client's own
     * session watcher already wakes all waiters for those. */
    if (type == ZOO_SESSION_EVENT)
        return;
    const zkr__zh_t *h = zoo_get_context(zh);
    if (!h)
        return;
    zkr_client_t *c = h->c;
    uint64_t id = (uint64_t)(uintptr_t)ctx;
    pthread_mutex_lock(&c->wmu);
    for (zkr__waiter_t *w = c->waiters; w; w = w->next) {
        if (w->id == id) {
            w->events |= ZKR__WAKE_WATCH;
            /* The deletion of the very node it watches now (not of one it
             * watched before and looked past). */
            if (type == ZOO_DELETED_EVENT && path && w->watching && strcmp(path, w->watching) == 0)
                w->events |= ZKR__WAKE_GONE;
            pthread_cond_signal(&w->cond);
            break;
        }
    }
    pthread_mutex_unlock(&c->wmu);
}

void zkr__waiter_wake_id(zkr_client_t *c, uint64_t id, unsigned bits)
{
    pthread_mutex_lock(&c->wmu);
    for (zkr__waiter_t *w = c->waiters; w; w = w->next) {
        if (w->id == id) {
            w->events |= bits;
            pthread_cond_signal(&w->cond);
            break;
        }
    }
    pthread_mutex_unlock(&c->wmu);
}

watcher_fn zkr__waiter_watcher(void)
{
    return waiter_watch_fn;
}

void *zkr__waiter_ctx(const zkr__waiter_t *w)
{
    return (void *)(uintptr_t)w->id;
}

unsigned zkr__waiter_wait(zkr_client_t *c, zkr__waiter_t *w, int64_t deadline)
{
    pthread_mutex_lock(&c->wmu);
    while (w->events == 0 && !c->wclosing) {
        if (zkr__cond_wait_until(&w->cond, &c->wmu, deadline) == ETIMEDOUT)
            break;
    }
    unsigned ev = w->events;
    if (c->wclosing)
        ev |= ZKR__WAKE_CLOSE;
    w->events = 0;
    pthread_mutex_unlock(&c->wmu);
    return ev;
}

/* ---- the watch-and-wait loop -------------------------------------------------- */

int zkr__watch_loop(zkr_client_t *c, int64_t session, zkr__track_t *own, int64_t deadline, zkr__step_fn step,
                    void *arg)
{
    zkr__waiter_t w;
    int rc = zkr__waiter_init(c, &w);
    if (rc != ZKR_OK)
        return rc;
    if (own)
        zkr__track_set_waiter(c, own, w.id);
    for (;;) {
        zkr__zh_t *h;
        if ((rc = zkr__client_get_handle(c, &h)) != ZKR_OK)
            break;
        if (zkr__zh_session(c, h) != session) {
            /* The work belonged to a session that is gone. */
            zkr__client_put_handle(c, h);
            rc = ZKR_ESESSIONLOST;
            break;
        }
        zkr__waiter_arm(c, &w);
        int r = step(arg, c, h, &w, zkr__remaining_ms(deadline) != 0);
        zkr__client_put_handle(c, h);
        w.last = 0;
        if (r == ZKR__STEP_AGAIN)
            continue;
        if (r == ZKR__STEP_WAIT) {
            unsigned ev = zkr__waiter_wait(c, &w, deadline);
            w.last = ev;
            if (ev & ZKR__WAKE_CLOSE) {
                rc = ZKR_ECLOSED;
                break;
            }
            if (ev == 0) {
                rc = ZKR_ETIMEDOUT;
                break;
            }
            if (!(ev & ZKR__WAKE_SESSION))
                continue;
            /* Cut off briefly: keep our place and wait for the same
             * session; if it is lost, so is the work. */
        } else if (r != ZKR__STEP_RECONNECT) {
            rc = r;
            break;
        }
        if ((rc = zkr__client_wait_session(c, session, deadline)) != ZKR_OK)
            break;
    }
    if (own)
        zkr__track_set_waiter(c, own, 0);
    zkr__waiter_destroy(c, &w);
    return rc;
}

/* ---- subscriptions (guarded by c->mu) -------------------------------------------- */

struct zkr__sub {
    uint64_t id;
    zkr__sub_fn fn;
    void *arg;
    int removed; /* freed by the runner after its current call */
    struct zkr__sub *next;
};

struct zkr__sub_event {
    uint64_t id;
    int type;
    char *path;
    struct zkr__sub_event *next;
};

void zkr__sub_post(zkr_client_t *c, void *ctx, int type, const char *path)
{
    zkr__sub_event_t *e = calloc(1, sizeof *e);
    char *p = path ? strdup(path) : NULL;
    if (!e || (path && !p)) {
        free(e);
        free(p);
        zkr__log(c, ZKR_LOG_ERROR, "out of memory: a watch event was dropped");
        return;
    }
    e->id = (uint64_t)(uintptr_t)ctx;
    e->type = type;
    e->path = p;
    pthread_mutex_lock(&c->mu);
    if (c->closing) {
        pthread_mutex_unlock(&c->mu);
        free(e->path);
        free(e);
        return;
    }
    if (c->sev_tail)
        c->sev_tail->next = e;
    else
        c->sev_head = e;
    c->sev_tail = e;
    pthread_cond_signal(&c->wake);
    pthread_mutex_unlock(&c->mu);
}

static void sub_watch_fn(zhandle_t *zh, int type, int state, const char *path, void *ctx)
{
    (void)state;
    if (type == ZOO_SESSION_EVENT)
        return;
    const zkr__zh_t *h = zoo_get_context(zh);
    if (h)
        zkr__sub_post(h->c, ctx, type, path);
}

watcher_fn zkr__sub_watcher(void)
{
    return sub_watch_fn;
}

int zkr__sub_add(zkr_client_t *c, zkr__sub_fn fn, void *arg, void **ctx)
{
    zkr__sub_t *s = calloc(1, sizeof *s);
    if (!s)
        return ZKR_ENOMEM;
    s->fn = fn;
    s->arg = arg;
    pthread_mutex_lock(&c->mu);
    s->id = ++c->next_id;
    s->next = c->subs;
    c->subs = s;
    pthread_mutex_unlock(&c->mu);
    *ctx = (void *)(uintptr_t)s->id;
    return ZKR_OK;
}

void zkr__sub_remove(zkr_client_t *c, void *ctx)
{
    uint64_t id = (uint64_t)(uintptr_t)ctx;
    pthread_mutex_lock(&c->mu);
    for (zkr__sub_t **p = &c->subs; *p; p = &(*p)->next) {
        zkr__sub_t *s = *p;
        if (s->id != id)
            continue;
        *p = s->next;
        s->fn = NULL; /* no new calls */
        if (zkr__callback_wait_locked(c, s))
            s->removed = 1; /* inside its own call: the runner frees it */
        else
            free(s);
        break;
    }
    pthread_mutex_unlock(&c->mu);
}

int zkr__subs_run_next_locked(zkr_client_t *c)
{
    zkr__sub_event_t *e = c->sev_head;
    if (!e)
        return 0;
    c->sev_head = e->next;
    if (!c->sev_head)
        c->sev_tail = NULL;
    zkr__sub_t *s = c->subs;
    while (s && s->id != e->id)
        s = s->next;
    if (s && s->fn) {
        zkr__sub_fn fn = s->fn;
        void *arg = s->arg;
        zkr__callback_begin_locked(c, s);
        pthread_mutex_unlock(&c->mu);
        fn(c, arg, e->type, e->path);
        pthread_mutex_lock(&c->mu);
        zkr__callback_end_locked(c);
        if (s->removed)
            free(s); /* it removed itself during the call */
    }
    free(e->path);
    free(e);
    return 1;
}

void zkr__subs_free(zkr_client_t *c)
{
    while (c->sev_head) {
        zkr__sub_event_t *e = c->sev_head;
        c->sev_head = e->next;
        free(e->path);
        free(e);
    }
    c->sev_tail = NULL;
    while (c->subs) {
        zkr__sub_t *s = c->subs;
        c->subs = s->next;
        free(s);
    }
}

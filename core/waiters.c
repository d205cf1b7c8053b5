/* Waiters: one per blocked caller, woken only by its own watch, a session
 * event, a release of the node it watches, or close.  The wait loop built on
 * them is the engine's (engine/wait.c).  Guarded by c->wmu (see
 * core_private.h for the lock order). */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/core_private.h"

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
    pthread_mutex_lock(&c->mu);
    const zkr__hooks_t *hooks = c->hooks;
    pthread_mutex_unlock(&c->mu);
    if (hooks)
        hooks->wake_path(c, path); /* takes c->mu: before wmu */
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

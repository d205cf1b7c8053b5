/* Subscriptions: watches whose events run a callback on the callback thread
 * (revocation), and zkr__sub_post for completions that need the same.  The
 * watch context is the subscription's id, so an event that comes after
 * zkr__sub_remove is dropped.  Guarded by c->mu. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "session/core_private.h"

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
    zkr__wake_callbacks_locked(c);
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
        if (zkr__callback_wait_relocking(c, s))
            s->removed = 1; /* inside its own call: the runner frees it */
        else
            free(s);
        break;
    }
    pthread_mutex_unlock(&c->mu);
}

int zkr__subs_run_next_relocking(zkr_client_t *c)
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

/* Connection-state listeners: registered by the user, called on the
 * callback thread, one at a time, in registration order.  Guarded by
 * c->mu. */
#include "config.h"

#include <stdlib.h>

#include "session/core_private.h"

struct zkr__listener {
    zkr_state_fn fn;
    void *ctx;
    int removed; /* unlinked by the client thread when not in a call */
    struct zkr__listener *next;
};

int zkr_client_add_listener(zkr_client_t *c, zkr_state_fn fn, void *ctx)
{
    if (!c || !fn)
        return ZKR_EINVAL;
    zkr__listener_t *l = calloc(1, sizeof *l);
    if (!l)
        return ZKR_ENOMEM;
    l->fn = fn;
    l->ctx = ctx;
    pthread_mutex_lock(&c->mu);
    if (c->closing) {
        pthread_mutex_unlock(&c->mu);
        free(l);
        return ZKR_ECLOSED;
    }
    zkr__listener_t **p = &c->listeners;
    for (; *p; p = &(*p)->next) {
        if (!(*p)->removed && (*p)->fn == fn && (*p)->ctx == ctx) {
            pthread_mutex_unlock(&c->mu);
            free(l);
            return ZKR_EALREADY;
        }
    }
    *p = l; /* append: listeners run in registration order */
    pthread_mutex_unlock(&c->mu);
    return ZKR_OK;
}

int zkr_client_remove_listener(zkr_client_t *c, zkr_state_fn fn, void *ctx)
{
    if (!c || !fn)
        return ZKR_EINVAL;
    pthread_mutex_lock(&c->mu);
    zkr__listener_t *l = c->listeners;
    while (l && (l->removed || l->fn != fn || l->ctx != ctx))
        l = l->next;
    if (!l) {
        pthread_mutex_unlock(&c->mu);
        return ZKR_ENOTFOUND;
    }
    l->removed = 1; /* stays linked (the runner may be walking past it) */
    zkr__callback_wait_relocking(c, l);
    zkr__wake_callbacks_locked(c);
    pthread_mutex_unlock(&c->mu);
    return ZKR_OK;
}

static void reap_removed_locked(zkr_client_t *c)
{
    for (zkr__listener_t **p = &c->listeners; *p;) {
        zkr__listener_t *l = *p;
        if (l->removed) {
            *p = l->next;
            free(l);
        } else {
            p = &l->next;
        }
    }
}

int zkr__listeners_deliver_next_relocking(zkr_client_t *c)
{
    if (c->rep_n == 0) {
        reap_removed_locked(c);
        return 0;
    }
    zkr_state_t s = c->reports[c->rep_head];
    c->rep_head = (c->rep_head + 1) % ZKR__REPORT_MAX;
    c->rep_n--;
    for (zkr__listener_t *l = c->listeners; l; l = l->next) {
        if (l->removed)
            continue;
        zkr__callback_begin_locked(c, l);
        pthread_mutex_unlock(&c->mu);
        l->fn(c, s, l->ctx);
        pthread_mutex_lock(&c->mu);
        zkr__callback_end_locked(c);
        /* l stays linked while we walk (removal only marks it) */
    }
    reap_removed_locked(c);
    return 1;
}

void zkr__listeners_free(zkr_client_t *c)
{
    while (c->listeners) {
        zkr__listener_t *l = c->listeners;
        c->listeners = l->next;
        free(l);
    }
}

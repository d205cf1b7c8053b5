/* Per-thread hold bookkeeping shared by the reentrant recipes. */
#include "config.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "recipes/holds.h"
#include "recipes/recipes.h"

zkr__hold_t *zkr__holds_mine_locked(zkr__holds_t *hs)
{
    pthread_t self = pthread_self();
    for (zkr__hold_t *h = hs->list; h; h = h->next)
        if (pthread_equal(h->tid, self))
            return h;
    return NULL;
}

int zkr__holds_reenter(zkr__holds_t *hs, zkr_client_t *c, int *rc)
{
    pthread_mutex_lock(hs->mu);
    zkr__hold_t *h = zkr__holds_mine_locked(hs);
    if (h) {
        if (zkr_client_state(c) == ZKR_STATE_CLOSED)
            *rc = ZKR_ECLOSED; /* the node went with the session */
        else if (zkr__node_hold_state(c, &h->node) == ZKR_HOLD_LOST)
            *rc = ZKR_ELOST; /* never grant on a hold that is gone */
        else if (h->count == INT_MAX)
            *rc = ZKR_EBUSY;
        else {
            *rc = ZKR_OK;
            h->count++;
        }
    }
    pthread_mutex_unlock(hs->mu);
    return h != NULL;
}

int zkr__holds_mine_alive(zkr__holds_t *hs, zkr_client_t *c)
{
    pthread_mutex_lock(hs->mu);
    zkr__hold_t *h = zkr__holds_mine_locked(hs);
    int alive = h && zkr__node_hold_state(c, &h->node) != ZKR_HOLD_LOST;
    pthread_mutex_unlock(hs->mu);
    return alive;
}

void zkr__holds_add(zkr__holds_t *hs, zkr__hold_t *h)
{
    h->tid = pthread_self();
    h->count = 1;
    pthread_mutex_lock(hs->mu);
    h->next = hs->list;
    hs->list = h;
    pthread_mutex_unlock(hs->mu);
}

int zkr__holds_drop(zkr__holds_t *hs, zkr__hold_t **out)
{
    *out = NULL;
    pthread_t self = pthread_self();
    pthread_mutex_lock(hs->mu);
    zkr__hold_t **p = &hs->list;
    while (*p && !pthread_equal((*p)->tid, self))
        p = &(*p)->next;
    zkr__hold_t *h = *p;
    if (!h) {
        pthread_mutex_unlock(hs->mu);
        return ZKR_ENOTOWNER;
    }
    if (--h->count == 0) {
        *p = h->next;
        *out = h;
    }
    pthread_mutex_unlock(hs->mu);
    return ZKR_OK;
}

zkr__hold_t *zkr__holds_pop(zkr__holds_t *hs)
{
    pthread_mutex_lock(hs->mu);
    zkr__hold_t *h = hs->list;
    if (h)
        hs->list = h->next;
    pthread_mutex_unlock(hs->mu);
    return h;
}

int zkr__holds_token(zkr__holds_t *hs, int64_t *token)
{
    pthread_mutex_lock(hs->mu);
    zkr__hold_t *h = zkr__holds_mine_locked(hs);
    if (h)
        *token = h->node.czxid;
    pthread_mutex_unlock(hs->mu);
    return h ? ZKR_OK : ZKR_ENOTOWNER;
}

int zkr__holds_path(zkr__holds_t *hs, char **path)
{
    *path = NULL;
    pthread_mutex_lock(hs->mu);
    zkr__hold_t *h = zkr__holds_mine_locked(hs);
    int rc = ZKR_ENOTOWNER;
    if (h) {
        *path = strdup(h->node.path);
        rc = *path ? ZKR_OK : ZKR_ENOMEM;
    }
    pthread_mutex_unlock(hs->mu);
    return rc;
}

int zkr__guard_fill(zkr_client_t *c, const zkr__node_t *n, zkr__guard_t *g)
{
    memset(g, 0, sizeof *g);
    if (!n || !n->path)
        return ZKR_ENOTOWNER;
    g->c = c;
    g->session = n->session;
    g->state = zkr__node_hold_state(c, n);
    g->path = strdup(n->path);
    return g->path ? ZKR_OK : ZKR_ENOMEM;
}

int zkr__holds_guard(zkr__holds_t *hs, zkr_client_t *c, zkr__guard_t *g)
{
    pthread_mutex_lock(hs->mu);
    zkr__hold_t *h = zkr__holds_mine_locked(hs);
    int rc = zkr__guard_fill(c, h ? &h->node : NULL, g);
    pthread_mutex_unlock(hs->mu);
    return rc;
}

int zkr__holds_any(zkr__holds_t *hs)
{
    pthread_mutex_lock(hs->mu);
    int any = hs->list != NULL;
    pthread_mutex_unlock(hs->mu);
    return any;
}

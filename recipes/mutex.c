/* Reentrant mutex (Curator InterProcessMutex) on the queue engine. */
#include "config.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "recipes/engine.h"
#include "zkr/mutex.h"

#define REVOKE_MESSAGE "__REVOKE__"
#define REVOKE_LEN 10

typedef struct revoke_watch {
    zkr_mutex_t *m;
    char *path;
    zkr_revoke_fn fn;
    void *ctx;
    void *sub; /* subscription id */
} revoke_watch_t;

typedef struct hold {
    pthread_t tid;
    int count;
    zkr__node_t node;
    revoke_watch_t *revoke;
    struct hold *next;
} hold_t;

struct zkr_mutex {
    zkr_client_t *c;
    char *path;
    pthread_mutex_t mu;
    hold_t *holds;
    zkr_revoke_fn revoke_fn;
    void *revoke_ctx;
    zkr_hold_fn hold_fn;
    void *hold_ctx;
};

#define mutex_driver zkr__lock_driver

int zkr_mutex_new(zkr_mutex_t **out, zkr_client_t *c, const char *path)
{
    if (out)
        *out = NULL;
    if (!out || !c || !zkr__path_valid(path))
        return ZKR_EINVAL;
    zkr_mutex_t *m = calloc(1, sizeof *m);
    if (!m)
        return ZKR_ENOMEM;
    m->path = strdup(path);
    if (!m->path) {
        free(m);
        return ZKR_ENOMEM;
    }
    if (pthread_mutex_init(&m->mu, NULL) != 0) {
        free(m->path);
        free(m);
        return ZKR_ESYSTEM;
    }
    m->c = c;
    *out = m;
    return ZKR_OK;
}

static hold_t *find_hold(zkr_mutex_t *m, pthread_t tid)
{
    for (hold_t *h = m->holds; h; h = h->next)
        if (pthread_equal(h->tid, tid))
            return h;
    return NULL;
}

/* ---- revocation ------------------------------------------------------------- */

/* Re-arm the data watch on our own node and report whether it already says
 * "__REVOKE__".  Runs on the client thread or the acquiring thread. */
static int arm_revoke_watch(zkr_client_t *c, revoke_watch_t *rw)
{
    zkr__zh_t *h;
    if (zkr__client_get_handle(c, &h) != ZKR_OK)
        return 0;
    char buf[REVOKE_LEN + 1];
    int len = (int)sizeof buf;
    struct Stat st;
    int zrc = zoo_wget(zkr__zh(h), rw->path, zkr__sub_watcher(), rw->sub, buf, &len, &st);
    zkr__client_put_handle(c, h);
    return zrc == ZOK && len == REVOKE_LEN && memcmp(buf, REVOKE_MESSAGE, REVOKE_LEN) == 0;
}

static void revoke_event(zkr_client_t *c, void *arg, int type, const char *path)
{
    (void)path;
    revoke_watch_t *rw = arg;
    if (type != ZOO_CHANGED_EVENT)
        return; /* deleted (released) or other: nothing to do */
    if (arm_revoke_watch(c, rw))
        rw->fn(rw->m, rw->ctx);
}

static void revoke_stop(zkr_client_t *c, revoke_watch_t *rw)
{
    if (!rw)
        return;
    if (rw->sub)
        zkr__sub_remove(c, rw->sub);
    free(rw->path);
    free(rw);
}

static revoke_watch_t *revoke_start(zkr_mutex_t *m, const char *node_path, zkr_revoke_fn fn, void *ctx)
{
    revoke_watch_t *rw = calloc(1, sizeof *rw);
    if (!rw)
        return NULL;
    rw->m = m;
    rw->fn = fn;
    rw->ctx = ctx;
    rw->path = strdup(node_path);
    if (!rw->path || zkr__sub_add(m->c, revoke_event, rw, &rw->sub) != ZKR_OK) {
        free(rw->path);
        free(rw);
        return NULL;
    }
    if (arm_revoke_watch(m->c, rw))
        fn(m, ctx); /* asked before we were watching: tell at once */
    return rw;
}

int zkr_mutex_make_revocable(zkr_mutex_t *m, zkr_revoke_fn fn, void *ctx)
{
    if (!m)
        return ZKR_EINVAL;
    pthread_mutex_lock(&m->mu);
    m->revoke_fn = fn;
    m->revoke_ctx = ctx;
    pthread_mutex_unlock(&m->mu);
    return ZKR_OK;
}

int zkr_revoke_request(zkr_client_t *c, const char *node_path)
{
    if (!c || !zkr__path_valid(node_path))
        return ZKR_EINVAL;
    int rc = zkr__client_enter(c);
    if (rc != ZKR_OK)
        return rc;
    zkr__zh_t *h;
    if ((rc = zkr__client_get_handle(c, &h)) == ZKR_OK) {
        int zrc = zoo_set(zkr__zh(h), node_path, REVOKE_MESSAGE, REVOKE_LEN, -1);
        rc = (zrc == ZNONODE) ? ZKR_OK : zkr__zk_error(zrc);
        zkr__client_put_handle(c, h);
    }
    zkr__client_leave(c);
    return rc;
}

/* ---- acquire / release ---------------------------------------------------------- */

int zkr_mutex_acquire(zkr_mutex_t *m, int64_t timeout_ms)
{
    if (!m)
        return ZKR_EINVAL;
    int64_t deadline = zkr__deadline(timeout_ms);
    pthread_t self = pthread_self();
    pthread_mutex_lock(&m->mu);
    hold_t *h = find_hold(m, self);
    if (h) {
        int rc = h->count == INT_MAX ? ZKR_EBUSY : ZKR_OK;
        if (rc == ZKR_OK)
            h->count++;
        pthread_mutex_unlock(&m->mu);
        return rc;
    }
    zkr_revoke_fn rfn = m->revoke_fn;
    void *rctx = m->revoke_ctx;
    zkr_hold_fn hfn = m->hold_fn;
    void *hctx = m->hold_ctx;
    pthread_mutex_unlock(&m->mu);

    h = calloc(1, sizeof *h);
    if (!h)
        return ZKR_ENOMEM;
    int rc = zkr__client_enter(m->c);
    if (rc != ZKR_OK) {
        free(h);
        return rc;
    }
    rc = zkr__queue_acquire(m->c, m->path, &mutex_driver, "", 0, deadline, &h->node);
    if (rc == ZKR_OK && zkr__node_track(m->c, &h->node, hfn, hctx) != ZKR_OK) {
        zkr__node_delete(m->c, &h->node);
        rc = ZKR_ENOMEM;
    }
    if (rc == ZKR_OK && rfn) {
        h->revoke = revoke_start(m, h->node.path, rfn, rctx);
        if (!h->revoke) {
            zkr__node_delete(m->c, &h->node);
            rc = ZKR_ENOMEM;
        }
    }
    zkr__client_leave(m->c);
    if (rc != ZKR_OK) {
        free(h);
        return rc;
    }
    h->tid = self;
    h->count = 1;
    pthread_mutex_lock(&m->mu);
    h->next = m->holds;
    m->holds = h;
    pthread_mutex_unlock(&m->mu);
    return ZKR_OK;
}

static int hold_release(zkr_mutex_t *m, hold_t *h)
{
    revoke_stop(m->c, h->revoke);
    int rc = zkr__node_delete(m->c, &h->node);
    free(h);
    return rc == ZKR_ECLOSED ? ZKR_OK : rc;
}

int zkr_mutex_release(zkr_mutex_t *m)
{
    if (!m)
        return ZKR_EINVAL;
    pthread_t self = pthread_self();
    pthread_mutex_lock(&m->mu);
    hold_t **p = &m->holds;
    while (*p && !pthread_equal((*p)->tid, self))
        p = &(*p)->next;
    hold_t *h = *p;
    if (!h) {
        pthread_mutex_unlock(&m->mu);
        return ZKR_ENOTOWNER;
    }
    if (--h->count > 0) {
        pthread_mutex_unlock(&m->mu);
        return ZKR_OK;
    }
    *p = h->next;
    pthread_mutex_unlock(&m->mu);
    return hold_release(m, h);
}

int zkr_mutex_is_held(zkr_mutex_t *m)
{
    if (!m)
        return 0;
    pthread_mutex_lock(&m->mu);
    int held = find_hold(m, pthread_self()) != NULL;
    pthread_mutex_unlock(&m->mu);
    return held;
}

int zkr_mutex_set_hold_listener(zkr_mutex_t *m, zkr_hold_fn fn, void *ctx)
{
    if (!m)
        return ZKR_EINVAL;
    pthread_mutex_lock(&m->mu);
    m->hold_fn = fn;
    m->hold_ctx = ctx;
    pthread_mutex_unlock(&m->mu);
    return ZKR_OK;
}

zkr_hold_state_t zkr_mutex_hold_state(zkr_mutex_t *m)
{
    if (!m)
        return ZKR_HOLD_NONE;
    pthread_mutex_lock(&m->mu);
    hold_t *h = find_hold(m, pthread_self());
    zkr_hold_state_t st = h ? zkr__node_hold_state(m->c, &h->node) : ZKR_HOLD_NONE;
    pthread_mutex_unlock(&m->mu);
    return st;
}

int zkr_mutex_is_held_by_process(zkr_mutex_t *m)
{
    if (!m)
        return 0;
    pthread_mutex_lock(&m->mu);
    int held = m->holds != NULL;
    pthread_mutex_unlock(&m->mu);
    return held;
}

int zkr_mutex_fencing_token(zkr_mutex_t *m, int64_t *token)
{
    if (!m || !token)
        return ZKR_EINVAL;
    pthread_mutex_lock(&m->mu);
    hold_t *h = find_hold(m, pthread_self());
    if (h)
        *token = h->node.czxid;
    pthread_mutex_unlock(&m->mu);
    return h ? ZKR_OK : ZKR_ENOTOWNER;
}

int zkr_mutex_node_path(zkr_mutex_t *m, char **path)
{
    if (!m || !path)
        return ZKR_EINVAL;
    *path = NULL;
    pthread_mutex_lock(&m->mu);
    hold_t *h = find_hold(m, pthread_self());
    int rc = ZKR_ENOTOWNER;
    if (h) {
        *path = strdup(h->node.path);
        rc = *path ? ZKR_OK : ZKR_ENOMEM;
    }
    pthread_mutex_unlock(&m->mu);
    return rc;
}

int zkr_mutex_participants(zkr_mutex_t *m, char ***paths, size_t *count)
{
    if (!m || !paths || !count)
        return ZKR_EINVAL;
    *paths = NULL;
    *count = 0;
    int rc = zkr__client_enter(m->c);
    if (rc != ZKR_OK)
        return rc;
    zkr__strvec_t sv;
    rc = zkr__queue_participants(m->c, m->path, &mutex_driver, &sv);
    zkr__client_leave(m->c);
    if (rc == ZKR_OK) {
        *paths = sv.v;
        *count = sv.n;
    }
    return rc;
}

void zkr_strings_free(char **strings, size_t count)
{
    zkr__strvec_t sv = {strings, count};
    zkr__strvec_free(&sv);
}

void zkr_mutex_free(zkr_mutex_t *m)
{
    if (!m)
        return;
    while (m->holds) {
        hold_t *h = m->holds;
        m->holds = h->next;
        hold_release(m, h);
    }
    pthread_mutex_destroy(&m->mu);
    free(m->path);
    free(m);
}

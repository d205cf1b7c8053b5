/* Reentrant mutex (Curator InterProcessMutex) on the queue engine. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "recipes/recipes.h"
#include "recipes/holds.h"
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

struct zkr_mutex {
    zkr_client_t *c;
    char *path;
    pthread_mutex_t mu;
    zkr__holds_t holds; /* hold->extra is its revoke_watch_t, if any */
    zkr_revoke_fn revoke_fn;
    void *revoke_ctx;
    zkr__hold_listener_t hold;
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
    int rc = zkr__client_retain(c);
    if (rc != ZKR_OK) {
        pthread_mutex_destroy(&m->mu);
        free(m->path);
        free(m);
        return rc;
    }
    m->c = c;
    m->holds.mu = &m->mu;
    *out = m;
    return ZKR_OK;
}

/* ---- revocation ------------------------------------------------------------- */

/* A "this node was asked to let go" event, posted by re_arm_done. */
#define REVOKE_ASKED 1000

static int is_revoke_message(const char *data, int len)
{
    return data && len == REVOKE_LEN && memcmp(data, REVOKE_MESSAGE, REVOKE_LEN) == 0;
}

/* Arm the data watch on our own node and report whether it already says
 * "__REVOKE__".  Synchronous: only on the acquiring thread. */
static int arm_revoke_watch(zkr_client_t *c, revoke_watch_t *rw)
{
    zkr__zh_t *h;
    if (zkr__client_get_handle(c, &h) != ZKR_OK)
        return 0;
    char buf[REVOKE_LEN + 1];
    int len = (int)sizeof buf;
    struct Stat st;
    int zrc = zkr__zh_answer(zkr__zh(h), zoo_wget(zkr__zh(h), rw->path, zkr__sub_watcher(), rw->sub, buf, &len, &st));
    zkr__client_put_handle(c, h);
    return zrc == ZOK && is_revoke_message(buf, len);
}

typedef struct re_arm_op {
    zkr__req_t req; /* first */
    zkr_client_t *c;
    void *sub; /* the subscription id: the watch may outlive rw */
} re_arm_op_t;

static void re_arm_done(int zrc, const char *value, int len, const struct Stat *st, const void *data)
{
    (void)st;
    re_arm_op_t *op = (re_arm_op_t *)data;
    zkr__req_end(&op->req);
    if (zrc == ZOK && is_revoke_message(value, len))
        zkr__sub_post(op->c, op->sub, REVOKE_ASKED, NULL);
    free(op);
}

static void re_arm_closing(zkr__req_t *r)
{
    re_arm_done(ZCLOSING, NULL, 0, NULL, r);
}

/* Runs on the client thread, which never waits on the network: the watch
 * is re-armed asynchronously, and its answer comes back as REVOKE_ASKED. */
static void revoke_event(zkr_client_t *c, void *arg, int type, const char *path)
{
    (void)path;
    revoke_watch_t *rw = arg;
    if (type == REVOKE_ASKED) {
        rw->fn(rw->m, rw->ctx);
        return;
    }
    if (type != ZOO_CHANGED_EVENT)
        return; /* deleted (released) or other: nothing to do */
    zkr__zh_t *h;
    if (zkr__client_get_handle(c, &h) != ZKR_OK)
        return;
    re_arm_op_t *op = malloc(sizeof *op);
    int zrc = ZSYSTEMERROR;
    if (op) {
        op->c = c;
        op->sub = rw->sub;
        zkr__req_start(h, &op->req, re_arm_closing);
        zrc = zoo_awget(zkr__zh(h), rw->path, zkr__sub_watcher(), rw->sub, re_arm_done, op);
        if (zrc != ZOK)
            zkr__req_end(&op->req);
    }
    zkr__client_put_handle(c, h);
    if (zrc != ZOK) {
        free(op);
        zkr__log(c, ZKR_LOG_WARN, "cannot watch %s for revocation: %s", rw->path, zerror(zrc));
    }
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

static revoke_watch_t *revoke_new(zkr_mutex_t *m, const char *node_path, zkr_revoke_fn fn, void *ctx)
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

static int revoke_on(struct _zhandle *zh, int64_t session, void *path)
{
    (void)session;
    int zrc = zkr__zh_answer(zh, zoo_set(zh, path, REVOKE_MESSAGE, REVOKE_LEN, -1));
    return zrc == ZNONODE ? ZKR_OK : zkr__zk_error(zrc);
}

int zkr_revoke_request(zkr_client_t *c, const char *node_path)
{
    if (!c || !zkr__path_valid(node_path))
        return ZKR_EINVAL;
    return zkr_client_with_handle(c, revoke_on, (void *)node_path);
}

/* ---- acquire / release ---------------------------------------------------------- */

int zkr_mutex_acquire(zkr_mutex_t *m, int64_t timeout_ms)
{
    if (!m)
        return ZKR_EINVAL;
    int64_t deadline = zkr__deadline(timeout_ms);
    int rc = ZKR_OK;
    if (zkr__holds_reenter(&m->holds, m->c, &rc))
        return rc;
    pthread_mutex_lock(&m->mu);
    zkr_revoke_fn rfn = m->revoke_fn;
    void *rctx = m->revoke_ctx;
    zkr__hold_listener_t hl = m->hold;
    pthread_mutex_unlock(&m->mu);

    zkr__hold_t *h = calloc(1, sizeof *h);
    if (!h)
        return ZKR_ENOMEM;
    if ((rc = zkr__client_enter(m->c)) != ZKR_OK) {
        free(h);
        return rc;
    }
    rc = zkr__queue_acquire(m->c, m->path, &mutex_driver, hl, deadline, &h->node);
    revoke_watch_t *rw = NULL;
    if (rc == ZKR_OK && rfn && !(rw = revoke_new(m, h->node.path, rfn, rctx))) {
        zkr__node_delete(m->c, &h->node);
        rc = ZKR_ENOMEM;
    }
    if (rc != ZKR_OK) {
        zkr__client_leave(m->c);
        free(h);
        return rc;
    }
    /* Recorded before anyone can ask it to let go: a revocation function
     * that releases finds the hold. */
    h->extra = rw;
    zkr__holds_add(&m->holds, h);
    int asked = rw && arm_revoke_watch(m->c, rw);
    zkr__client_leave(m->c);
    if (asked)
        rfn(m, rctx); /* asked before we were watching: tell at once */
    return ZKR_OK;
}

static int hold_release(zkr_mutex_t *m, zkr__hold_t *h)
{
    revoke_stop(m->c, h->extra);
    int rc = zkr__node_delete(m->c, &h->node);
    free(h);
    return rc == ZKR_ECLOSED ? ZKR_OK : rc;
}

int zkr_mutex_release(zkr_mutex_t *m)
{
    if (!m)
        return ZKR_EINVAL;
    zkr__hold_t *h = NULL;
    int rc = zkr__holds_drop(&m->holds, &h);
    if (rc != ZKR_OK || !h)
        return rc;
    return hold_release(m, h);
}

int zkr_mutex_is_held(zkr_mutex_t *m)
{
    return m ? zkr__holds_mine_alive(&m->holds, m->c) : 0;
}

void zkr__mutex_set_listener(zkr_mutex_t *m, zkr__hold_listener_t hl)
{
    zkr__hold_listener_set(&m->mu, &m->hold, hl);
}

zkr_hold_state_t zkr_mutex_hold_state(zkr_mutex_t *m)
{
    if (!m)
        return ZKR_HOLD_NONE;
    pthread_mutex_lock(&m->mu);
    zkr__hold_t *h = zkr__holds_mine_locked(&m->holds);
    zkr_hold_state_t st = h ? zkr__node_hold_state(m->c, &h->node) : ZKR_HOLD_NONE;
    pthread_mutex_unlock(&m->mu);
    return st;
}

int zkr_mutex_is_held_by_process(zkr_mutex_t *m)
{
    return m ? zkr__holds_any(&m->holds) : 0;
}

int zkr_mutex_fencing_token(zkr_mutex_t *m, int64_t *token)
{
    return (m && token) ? zkr__holds_token(&m->holds, token) : ZKR_EINVAL;
}

int zkr__mutex_guard(zkr_mutex_t *m, zkr__guard_t *g)
{
    return zkr__holds_guard(&m->holds, m->c, g);
}

int zkr_mutex_node_path(zkr_mutex_t *m, char **path)
{
    if (path)
        *path = NULL;
    return (m && path) ? zkr__holds_path(&m->holds, path) : ZKR_EINVAL;
}

int zkr_mutex_participants(zkr_mutex_t *m, char ***paths, size_t *count)
{
    return m ? zkr__participants(m->c, m->path, &mutex_driver, paths, count) : ZKR_EINVAL;
}

void zkr_free(void *p)
{
    free(p);
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
    zkr__async_forget(m->c, m);
    zkr__tracks_forget(m->c, m); /* asynchronous holds outlive it */
    zkr__hold_t *h;
    while ((h = zkr__holds_pop(&m->holds)))
        hold_release(m, h);
    pthread_mutex_destroy(&m->mu);
    zkr__client_release(m->c);
    free(m->path);
    free(m);
}

/* For the asynchronous layer (async.c): what an acquire on m needs. */
void zkr__mutex_async_target(zkr_mutex_t *m, zkr__async_target_t *t)
{
    t->c = m->c;
    t->dir = m->path;
    t->drv = &mutex_driver;
    t->hold = zkr__hold_listener_get(&m->mu, &m->hold);
    t->owner = m;
}

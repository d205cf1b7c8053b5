/* Node operations outside the acquire machine: a create with its listing
 * behind it, waited for on the caller's thread (the multi-lock's nodes sent
 * ahead, prefetch.c), a node of a caller-chosen name (the read/write lock's
 * downgrade), a directory listing, the tracking of a granted node and the
 * lock objects' hold listeners. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"

#define PARENT_RETRIES 5
#define CREATE_RETRIES 20

static int is_connection_error(int zrc)
{
    return zkr__zk_class(zrc) == ZKR__ZC_CONNECTION;
}

int zkr__list(zkr_client_t *c, zkr__zh_t *h, const char *dir, zkr__strvec_t *out)
{
    (void)c;
    struct String_vector sv = {0, NULL};
    out->v = NULL;
    out->n = 0;
    int zrc = zkr__zh_answer(zkr__zh(h), zoo_get_children(zkr__zh(h), dir, 0, &sv));
    if (zrc == ZNONODE)
        return ZKR_OK;
    if (zrc != ZOK)
        return zkr__zk_error(zrc);
    int rc = ZKR_OK;
    if (sv.count > 0 && zkr__strvec_copy(out, sv.data, (size_t)sv.count) != 0)
        rc = ZKR_ENOMEM;
    deallocate_String_vector(&sv);
    return rc;
}

/* ---- create, with the listing pipelined behind it ---------------------------- */

static void create_done(int rc, const char *value, const struct Stat *stat, const void *data)
{
    zkr__create_op_t *op = (zkr__create_op_t *)data;
    char *copy = (rc == ZOK && value) ? strdup(value) : NULL;
    pthread_mutex_lock(&op->mu);
    op->create_rc = rc;
    if (rc == ZOK) {
        if (!copy)
            op->create_rc = ZSYSTEMERROR; /* ENOMEM: treated as a lost reply */
        op->created = copy;
        if (stat)
            op->stat = *stat;
    }
    if (--op->pending == 0)
        pthread_cond_signal(&op->cond);
    pthread_mutex_unlock(&op->mu);
}

static void list_done(int rc, const struct String_vector *sv, const void *data)
{
    zkr__create_op_t *op = (zkr__create_op_t *)data;
    zkr__strvec_t kids = {NULL, 0};
    if (rc == ZOK && sv && sv->count > 0 && zkr__strvec_copy(&kids, sv->data, (size_t)sv->count) != 0)
        rc = ZSYSTEMERROR;
    pthread_mutex_lock(&op->mu);
    op->list_rc = rc;
    op->children = kids;
    if (--op->pending == 0)
        pthread_cond_signal(&op->cond);
    pthread_mutex_unlock(&op->mu);
}

/* An op before anything is sent: 0, or -1 (op->inited stays 0). */
int zkr__create_op_init(zkr__create_op_t *op)
{
    memset(op, 0, sizeof *op);
    op->create_rc = ZSYSTEMERROR;
    op->list_rc = ZSYSTEMERROR;
    if (pthread_mutex_init(&op->mu, NULL) != 0)
        return -1;
    if (zkr__cond_init(&op->cond) != 0) {
        pthread_mutex_destroy(&op->mu);
        return -1;
    }
    op->inited = 1;
    return 0;
}

/* Send the listing of dir behind what op already sent (op->mu held, so
 * that no answer can count down before the listing is counted). */
static void list_send_locked(zkr__zh_t *h, zkr__create_op_t *op, const char *dir)
{
    if (zoo_aget_children(zkr__zh(h), dir, 0, list_done, op) == ZOK)
        op->pending++;
}

/* Send the create of `path` on h, and the listing of dir right behind it
 * if `list`: ZooKeeper answers one session's requests in order, so the
 * listing already sees our node.  The completions signal through the
 * op's own mutex (no client-wide lock on this path).  Wait with
 * create_wait, whatever happened. */
void zkr__create_send(zkr_client_t *c, zkr__zh_t *h, zkr__create_op_t *op, const char *path, const char *dir,
                        const char *data, int datalen, int mode, int list)
{
    if (zkr__create_op_init(op) != 0)
        return;
    pthread_mutex_lock(&op->mu);
    int zrc = zoo_acreate2(zkr__zh(h), path, data, datalen, zkr__client_acl(c), mode, create_done, op);
    if (zrc == ZOK) {
        op->pending++;
        if (list)
            list_send_locked(h, op, dir);
    } else {
        op->create_rc = zrc;
    }
    pthread_mutex_unlock(&op->mu);
}

/* The same through the handle's combiner (an EPHEMERAL_SEQUENTIAL node
 * without data, listed behind): alone, it goes out at once; while another
 * batch of the handle's creates is in flight, it waits and goes with the
 * others as one multi (many threads on one client). */
void zkr__create_op_combine(zkr_client_t *c, zkr__create_op_t *op, const char *path, const char *dir)
{
    pthread_mutex_lock(&op->mu);
    op->pending = 2; /* the create and the listing */
    pthread_mutex_unlock(&op->mu);
    op->z = (zkr__zcreate_t){{NULL}, path, dir, zkr__client_acl(c), create_done, list_done, op, NULL, 0};
}

void zkr__create_wait(zkr__zh_t *h, zkr__create_op_t *op)
{
    if (!op->inited)
        return;
    pthread_mutex_lock(&op->mu);
    while (op->pending > 0)
        pthread_cond_wait(&op->cond, &op->mu);
    pthread_mutex_unlock(&op->mu);
    pthread_cond_destroy(&op->cond);
    pthread_mutex_destroy(&op->mu);
    op->inited = 0;
    zkr__zh_answer(zkr__zh(h), op->create_rc);
    zkr__zh_answer(zkr__zh(h), op->list_rc);
}

/* The node "<dir>/<name>" (a caller-chosen name, unique by construction:
 * the read/write lock's downgrade node), made at once and tracked. */
static int create_named(zkr_client_t *c, const char *path, const char *dir, int mode, int64_t deadline,
                        zkr__node_t *out)
{
    int parent_tries = 0;
    for (int attempt = 0; attempt < CREATE_RETRIES; attempt++) {
        int rc = zkr__client_wait_usable(c, deadline);
        zkr__zh_t *h = NULL;
        if (rc == ZKR_OK)
            rc = zkr__client_get_handle(c, &h);
        if (rc != ZKR_OK)
            return rc;
        int64_t session = zkr__zh_session(c, h);
        zkr__create_op_t op;
        zkr__create_send(c, h, &op, path, dir, "", 0, mode, 0);
        if (!op.inited) {
            zkr__client_put_handle(c, h);
            return ZKR_ESYSTEM;
        }
        zkr__create_wait(h, &op);
        zkr__strvec_free(&op.children);
        int zrc = op.create_rc;
        if (zrc == ZOK) {
            zkr__client_put_handle(c, h);
            out->path = op.created;
            out->czxid = op.stat.czxid;
            out->session = op.stat.ephemeralOwner ? op.stat.ephemeralOwner : session;
            return ZKR_OK;
        }
        free(op.created);
        if (zrc == ZNONODE && parent_tries++ < PARENT_RETRIES) {
            /* Parents are containers: make them (again: the server may
             * have reaped an empty one since). */
            rc = zkr__ensure_path(c, zkr__zh(h), dir);
            zkr__client_put_handle(c, h);
            if (rc != ZKR_OK && rc != ZKR_ECONNLOSS && rc != ZKR_ESESSIONLOST)
                return rc;
            continue;
        }
        zkr__client_put_handle(c, h);
        if (zrc == ZNODEEXISTS)
            return ZKR_ENODEEXISTS;
        if (zkr__zk_class(zrc) == ZKR__ZC_SESSION)
            continue; /* the session went away: try on the next one */
        if (!is_connection_error(zrc) && zrc != ZSYSTEMERROR)
            return zkr__zk_error(zrc);
        /* The reply was lost: the name is ours alone, so look for it, and
         * keep it only if our session made it. */
        if ((rc = zkr__client_wait_usable(c, deadline)) != ZKR_OK) {
            zkr__client_delete_later(c, path, session);
            return rc;
        }
        if ((rc = zkr__client_get_handle(c, &h)) != ZKR_OK)
            return rc;
        struct Stat st;
        int z = zkr__zh_answer(zkr__zh(h), zoo_exists(zkr__zh(h), path, 0, &st));
        int64_t now_session = zkr__zh_session(c, h);
        zkr__client_put_handle(c, h);
        if (z == ZOK && st.ephemeralOwner == session && now_session == session) {
            if (!(out->path = strdup(path)))
                return ZKR_ENOMEM;
            out->czxid = st.czxid;
            out->session = session;
            return ZKR_OK;
        }
        if (z == ZOK)
            zkr__client_delete_later(c, path, session);
    }
    return ZKR_EZOOKEEPER;
}

int zkr__hold_listener_set(pthread_mutex_t *mu, zkr__hold_listener_t *l, zkr_hold_fn fn, void *ctx)
{
    pthread_mutex_lock(mu);
    l->fn = fn;
    l->ctx = ctx;
    pthread_mutex_unlock(mu);
    return ZKR_OK;
}

zkr__hold_listener_t zkr__hold_listener_get(pthread_mutex_t *mu, const zkr__hold_listener_t *l)
{
    pthread_mutex_lock(mu);
    zkr__hold_listener_t copy = *l;
    pthread_mutex_unlock(mu);
    return copy;
}

int zkr__node_create_named(zkr_client_t *c, const char *dir, const char *name, int mode, int64_t deadline,
                           zkr__node_t *out)
{
    memset(out, 0, sizeof *out);
    char *path = zkr__path_join(dir, name);
    if (!path)
        return ZKR_ENOMEM;
    int rc = create_named(c, path, dir, mode, deadline, out);
    free(path);
    if (rc != ZKR_OK)
        return rc;
    /* Tracked from now on: anyone else deleting it is seen. */
    rc = zkr__track_add(c, out->path, out->session, 0, &out->track);
    if (rc != ZKR_OK)
        zkr__node_delete(c, out);
    return rc;
}

void (*zkr__test_grant_pause)(zkr_client_t *c);

int zkr__node_track(zkr_client_t *c, zkr__node_t *node, zkr_hold_fn fn, void *ctx)
{
    if (!node->track)
        return ZKR_EINVAL;
    if (zkr__test_grant_pause)
        zkr__test_grant_pause(c); /* tests drop the connection here */
    zkr__track_grant(c, node->track, fn, ctx);
    return ZKR_OK;
}

zkr_hold_state_t zkr__node_hold_state(zkr_client_t *c, const zkr__node_t *node)
{
    return node->track ? zkr__track_state(c, node->track) : ZKR_HOLD_NONE;
}

/* The C client requires a completion for every asynchronous call. */

/* Node operations outside the acquire machine: a create with its listing
 * behind it, waited for on the caller's thread (the multi-lock's nodes sent
 * ahead, prefetch.c), a node of a caller-chosen name (the read/write lock's
 * downgrade), the tracking of a granted node and the lock objects' hold
 * listeners. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"

static int is_connection_error(int zrc)
{
    return zkr__zk_class(zrc) == ZKR__ZC_CONNECTION;
}

/* ---- create, with the listing pipelined behind it ---------------------------- */

void zkr__create_op_free(zkr__create_op_t *op)
{
    if (!op)
        return;
    zkr__sync_destroy(&op->mu, &op->cond);
    zkr__strvec_free(&op->children);
    free(op->created);
    free(op->path);
    free(op->dir);
    free(op);
}

zkr__create_op_t *zkr__create_op_new(zkr_client_t *c, const char *path, const char *dir, int mode, int64_t session)
{
    zkr__create_op_t *op = calloc(1, sizeof *op);
    if (op && zkr__sync_init(&op->mu, &op->cond) != 0) {
        free(op);
        return NULL;
    }
    if (!op)
        return NULL;
    op->c = c;
    op->mode = mode;
    op->session = session;
    op->create_rc = ZSYSTEMERROR;
    op->list_rc = ZSYSTEMERROR;
    op->path = strdup(path);
    op->dir = strdup(dir);
    if (!op->path || !op->dir) {
        zkr__create_op_free(op);
        return NULL;
    }
    return op;
}

int zkr__create_op_reply_lost(const zkr__create_op_t *op)
{
    return op->create_rc != ZOK && op->create_rc != ZNONODE && op->create_rc != ZNODEEXISTS &&
           op->create_rc != ZCLOSING &&
           (zkr__zk_class(op->create_rc) != ZKR__ZC_FINAL || op->create_rc == ZSYSTEMERROR);
}

void zkr__create_op_forget(zkr__create_op_t *op)
{
    zkr_client_t *c = op->c;
    if (op->create_rc == ZOK && op->created) {
        int64_t owner = op->stat.ephemeralOwner ? op->stat.ephemeralOwner : op->session;
        zkr__client_delete_later(c, op->created, owner);
    } else if (zkr__create_op_reply_lost(op)) {
        /* The reply is lost: the node may exist.  A sequential one goes by
         * its protected prefix, a named one by its name. */
        if (op->mode & ZOO_SEQUENCE)
            zkr__client_delete_prefix_later(c, op->dir, zkr__path_basename(op->path), op->session);
        else
            zkr__client_delete_later(c, op->path, op->session);
    }
    zkr__create_op_free(op);
}

/* One answer is in (op->mu held): the last one wakes the caller, or, if
 * the caller gave up, cleans up and frees op (returns 1: op is gone, mu
 * released). */
static int answered_locked(zkr__create_op_t *op)
{
    if (--op->pending > 0)
        return 0;
    zkr__req_end(&op->req);
    if (!op->abandoned) {
        pthread_cond_signal(&op->cond);
        return 0;
    }
    pthread_mutex_unlock(&op->mu);
    zkr__create_op_forget(op);
    return 1;
}

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
    if (!answered_locked(op))
        pthread_mutex_unlock(&op->mu);
}

static void list_done(int rc, const struct String_vector *sv, const void *data)
{
    zkr__create_op_t *op = (zkr__create_op_t *)data;
    zkr__strvec_t kids;
    rc = zkr__listing_copy(rc, sv, &kids);
    pthread_mutex_lock(&op->mu);
    op->list_rc = rc;
    zkr__strvec_free(&op->children);
    op->children = kids;
    if (!answered_locked(op))
        pthread_mutex_unlock(&op->mu);
}

/* The handle closed with the create unanswered: as if answered ZCLOSING. */
static void create_closing(zkr__req_t *r)
{
    zkr__create_op_t *op = (zkr__create_op_t *)(void *)r;
    pthread_mutex_lock(&op->mu);
    if (op->pending > 0) {
        op->create_rc = op->create_rc == ZSYSTEMERROR ? ZCLOSING : op->create_rc;
        op->pending = 1;
        if (answered_locked(op))
            return;
    }
    pthread_mutex_unlock(&op->mu);
}

void zkr__create_send(zkr__zh_t *h, zkr__create_op_t *op, const char *data, int datalen, int list)
{
    pthread_mutex_lock(&op->mu);
    zkr__req_start(h, &op->req, create_closing);
    int zrc = zoo_acreate2(zkr__zh(h), op->path, data, datalen, zkr__client_acl(op->c), op->mode, create_done, op);
    if (zrc == ZOK) {
        op->pending++;
        /* the listing behind it: ZooKeeper answers one session's requests
         * in order, so it already sees our node */
        if (list && zoo_aget_children(zkr__zh(h), op->dir, 0, list_done, op) == ZOK)
            op->pending++;
    } else {
        op->create_rc = zrc;
        zkr__req_end(&op->req);
    }
    pthread_mutex_unlock(&op->mu);
}

void zkr__create_op_combine(zkr__create_op_t *op)
{
    pthread_mutex_lock(&op->mu);
    op->pending = 2; /* the create and the listing (the combiner answers both) */
    pthread_mutex_unlock(&op->mu);
    op->z = (zkr__zcreate_t){{NULL}, op->path, op->dir, zkr__client_acl(op->c), create_done, list_done, op, NULL, 0};
}

int zkr__create_wait(zkr__zh_t *h, zkr__create_op_t *op, int64_t deadline)
{
    pthread_mutex_lock(&op->mu);
    while (op->pending > 0) {
        if (zkr__cond_wait_until(&op->cond, &op->mu, deadline) == ETIMEDOUT && op->pending > 0) {
            op->abandoned = 1; /* the last answer cleans up */
            pthread_mutex_unlock(&op->mu);
            return 0;
        }
    }
    pthread_mutex_unlock(&op->mu);
    zkr__zh_answer(zkr__zh(h), op->create_rc);
    zkr__zh_answer(zkr__zh(h), op->list_rc);
    return 1;
}

/* The node "<dir>/<name>" (a caller-chosen name, unique by construction:
 * the read/write lock's downgrade node), made at once and tracked, within
 * the deadline (plus ZKR__DEADLINE_GRACE_MS for answers in flight). */
static int create_named(zkr_client_t *c, const char *path, const char *dir, int mode, int64_t deadline,
                        zkr__node_t *out)
{
    int64_t hard = zkr__hard_deadline(deadline);
    for (int attempt = 0; attempt < ZKR__CREATE_RETRIES; attempt++) {
        int rc = zkr__client_wait_usable(c, deadline);
        zkr__zh_t *h = NULL;
        if (rc == ZKR_OK)
            rc = zkr__client_get_handle(c, &h);
        if (rc != ZKR_OK)
            return rc;
        int64_t session = zkr__zh_session(c, h);
        zkr__create_op_t *op = zkr__create_op_new(c, path, dir, mode, session);
        if (!op) {
            zkr__client_put_handle(c, h);
            return ZKR_ENOMEM;
        }
        zkr__create_send(h, op, "", 0, 0);
        if (!zkr__create_wait(h, op, hard)) {
            /* no answer in time: what the create makes is deleted when it
             * is answered */
            zkr__client_put_handle(c, h);
            return ZKR_ETIMEDOUT;
        }
        int zrc = op->create_rc;
        if (zrc == ZOK) {
            zkr__client_put_handle(c, h);
            out->path = op->created;
            op->created = NULL;
            out->czxid = op->stat.czxid;
            out->session = op->stat.ephemeralOwner ? op->stat.ephemeralOwner : session;
            zkr__create_op_free(op);
            return ZKR_OK;
        }
        zkr__create_op_free(op);
        if (zrc == ZNONODE) {
            /* The directory is gone, and with it the node this one stands
             * beside (the write lock of a downgrade). */
            zkr__client_put_handle(c, h);
            return ZKR_ENONODE;
        }
        if (zrc == ZNODEEXISTS) {
            zkr__client_put_handle(c, h);
            return ZKR_ENODEEXISTS;
        }
        if (zkr__zk_class(zrc) == ZKR__ZC_SESSION) {
            zkr__client_put_handle(c, h);
            continue; /* the session went away: try on the next one */
        }
        if (!is_connection_error(zrc) && zrc != ZSYSTEMERROR) {
            zkr__client_put_handle(c, h);
            return zkr__zk_error(zrc);
        }
        /* The reply was lost: the name is ours alone, so look for it, and
         * keep it only if our session made it. */
        zkr__client_put_handle(c, h);
        if ((rc = zkr__client_wait_usable(c, deadline)) != ZKR_OK) {
            zkr__client_delete_later(c, path, session);
            return rc;
        }
        if ((rc = zkr__client_get_handle(c, &h)) != ZKR_OK)
            return rc;
        struct Stat st;
        memset(&st, 0, sizeof st);
        int z = zkr__zh_exists_until(h, path, hard, &st);
        int64_t now_session = zkr__zh_session(c, h);
        zkr__client_put_handle(c, h);
        if (z == ZOK && st.ephemeralOwner == session && now_session == session) {
            if (!(out->path = strdup(path)))
                return ZKR_ENOMEM;
            out->czxid = st.czxid;
            out->session = session;
            return ZKR_OK;
        }
        if (z == ZOK || z == ZOPERATIONTIMEOUT)
            zkr__client_delete_later(c, path, session);
        if (z == ZOPERATIONTIMEOUT)
            return ZKR_ETIMEDOUT;
    }
    return ZKR_EZOOKEEPER;
}

int zkr__hold_listener_set(pthread_mutex_t *mu, zkr__hold_listener_t *l, zkr__hold_listener_t v)
{
    pthread_mutex_lock(mu);
    *l = v;
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

int zkr__node_track(zkr_client_t *c, zkr__node_t *node, zkr__hold_listener_t hl)
{
    if (!node->track)
        return ZKR_EINVAL;
    if (zkr__test_grant_pause)
        zkr__test_grant_pause(c); /* tests drop the connection here */
    zkr__track_grant(c, node->track, hl);
    return ZKR_OK;
}

zkr_hold_state_t zkr__node_hold_state(zkr_client_t *c, const zkr__node_t *node)
{
    return node->track ? zkr__track_state(c, node->track) : ZKR_HOLD_NONE;
}

/* The C client requires a completion for every asynchronous call. */

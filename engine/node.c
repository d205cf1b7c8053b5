/* Node creation: a protected sequential node with its directory listed
 * right behind the create (one round trip), through the handle's create
 * combiner when it can be; missing parents made as containers; a lost create
 * reply recovered Curator's way (adopt our node only under the session that
 * sent it, else delete it and create afresh).  Also the tracking of a
 * granted node and the lock objects' hold listeners. */
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
    op->z = (zkr__zcreate_t){{NULL}, path, dir, zkr__client_acl(c), create_done, list_done, op};
}

static void create_send_combined(zkr_client_t *c, zkr__zh_t *h, zkr__create_op_t *op, const char *path, const char *dir)
{
    if (zkr__create_op_init(op) != 0)
        return;
    zkr__create_op_combine(c, op, path, dir);
    zkr__zh_create(h, &op->z);
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

/* Outcome of recovering a create whose reply was lost. */
#define RECOVER_RETRY 1

static int recover_protected(zkr_client_t *c, const char *dir, const char *uuid, int64_t create_session,
                             int64_t deadline, zkr__node_t *out)
{
    char prefix[ZKR__UUID_LEN + 8];
    memcpy(prefix, "_c_", 3);
    memcpy(prefix + 3, uuid, ZKR__UUID_LEN);
    prefix[3 + ZKR__UUID_LEN] = '-';
    prefix[4 + ZKR__UUID_LEN] = '\0';
    for (;;) {
        int rc = zkr__client_wait_session(c, create_session, deadline);
        if (rc != ZKR_OK) {
            /* We cannot look now: make sure whatever the create left behind
             * is deleted once we can.  If the session is gone, try afresh on
             * the next one. */
            zkr__client_delete_prefix_later(c, dir, prefix, create_session);
            return rc == ZKR_ESESSIONLOST ? RECOVER_RETRY : rc;
        }
        zkr__zh_t *h;
        if ((rc = zkr__client_get_handle(c, &h)) != ZKR_OK)
            return rc;
        zkr__strvec_t kids;
        rc = zkr__list(c, h, dir, &kids);
        if (rc == ZKR_ECONNLOSS || rc == ZKR_ESESSIONLOST) {
            zkr__client_put_handle(c, h);
            continue;
        }
        if (rc != ZKR_OK) {
            zkr__client_put_handle(c, h);
            zkr__client_delete_prefix_later(c, dir, prefix, create_session);
            return rc;
        }
        long i = zkr__strvec_find_prefix(&kids, prefix);
        if (i < 0) {
            zkr__strvec_free(&kids);
            zkr__client_put_handle(c, h);
            return RECOVER_RETRY; /* the create never happened */
        }
        char *full = zkr__path_join(dir, kids.v[i]);
        zkr__strvec_free(&kids);
        if (!full) {
            zkr__client_put_handle(c, h);
            zkr__client_delete_prefix_later(c, dir, prefix, create_session);
            return ZKR_ENOMEM;
        }
        struct Stat st;
        int zrc = zkr__zh_answer(zkr__zh(h), zoo_exists(zkr__zh(h), full, 0, &st));
        int64_t now_session = zkr__zh_session(c, h);
        if (zrc == ZOK && now_session == create_session && st.ephemeralOwner == create_session) {
            zkr__client_put_handle(c, h);
            out->path = full;
            out->czxid = st.czxid;
            out->session = create_session;
            return ZKR_OK; /* adopt our own node */
        }
        if (zrc == ZOK) {
            /* A node of another session (the one that sent the create is
             * gone): it would block every contender.  Delete it. */
            zrc = zkr__zh_answer(zkr__zh(h), zoo_delete(zkr__zh(h), full, -1));
            if (zrc != ZOK && zrc != ZNONODE)
                zkr__client_delete_later(c, full, create_session);
        } else if (zrc != ZNONODE) {
            zkr__client_put_handle(c, h);
            free(full);
            continue; /* could not look: try again */
        }
        zkr__client_put_handle(c, h);
        free(full);
        return RECOVER_RETRY;
    }
}

static int node_create(zkr_client_t *c, const char *dir, const char *marker, const char *exact_name, int mode,
                       const char *data, int datalen, int64_t deadline, zkr__node_t *out, zkr__strvec_t *children)
{
    memset(out, 0, sizeof *out);
    if (children) {
        children->v = NULL;
        children->n = 0;
    }
    int parent_tries = 0;
    for (int attempt = 0; attempt < CREATE_RETRIES; attempt++) {
        int rc = zkr__client_wait_usable(c, deadline);
        if (rc != ZKR_OK)
            return rc;
        zkr__zh_t *h;
        if ((rc = zkr__client_get_handle(c, &h)) != ZKR_OK)
            return rc;
        int64_t session = zkr__zh_session(c, h);
        char *path;
        if (exact_name) {
            out->uuid[0] = '\0';
            path = zkr__path_join(dir, exact_name);
        } else {
            if (zkr__uuid(out->uuid) != 0) {
                zkr__client_put_handle(c, h);
                return ZKR_ESYSTEM;
            }
            path = zkr__protected_path(dir, out->uuid, marker);
        }
        if (!path) {
            zkr__client_put_handle(c, h);
            return ZKR_ENOMEM;
        }

        zkr__create_op_t op;
        if (children && datalen == 0 && mode == ZOO_EPHEMERAL_SEQUENTIAL)
            create_send_combined(c, h, &op, path, dir);
        else
            zkr__create_send(c, h, &op, path, dir, data, datalen, mode, children != NULL);
        if (!op.inited) {
            zkr__client_put_handle(c, h);
            free(path);
            return ZKR_ESYSTEM;
        }
        zkr__create_wait(h, &op);
        zkr__client_put_handle(c, h);
        free(path);

        if (op.create_rc == ZOK) {
            out->path = op.created;
            out->czxid = op.stat.czxid;
            out->session = op.stat.ephemeralOwner ? op.stat.ephemeralOwner : session;
            if (children && op.list_rc == ZOK)
                *children = op.children;
            else
                zkr__strvec_free(&op.children);
            return ZKR_OK;
        }
        zkr__strvec_free(&op.children);
        free(op.created);

        if (op.create_rc == ZNONODE && parent_tries++ < PARENT_RETRIES) {
            /* Parents are containers: create them (again: ZooKeeper may
             * have reaped an empty one since). */
            if ((rc = zkr__client_get_handle(c, &h)) != ZKR_OK)
                return rc;
            rc = zkr__ensure_path(c, zkr__zh(h), dir);
            zkr__client_put_handle(c, h);
            if (rc != ZKR_OK && rc != ZKR_ECONNLOSS && rc != ZKR_ESESSIONLOST)
                return rc;
            continue;
        }
        if (op.create_rc == ZNODEEXISTS && exact_name)
            return ZKR_ENODEEXISTS;
        if (is_connection_error(op.create_rc) || op.create_rc == ZSYSTEMERROR) {
            if (exact_name) {
                /* Not protected: the name is ours alone by construction
                 * (a caller-chosen unique name); look for it. */
                zkr__node_t probe;
                memset(&probe, 0, sizeof probe);
                rc = zkr__client_wait_usable(c, deadline);
                if (rc != ZKR_OK) {
                    char *p = zkr__path_join(dir, exact_name);
                    if (p)
                        zkr__client_delete_later(c, p, session);
                    free(p);
                    return rc;
                }
                if ((rc = zkr__client_get_handle(c, &h)) != ZKR_OK)
                    return rc;
                char *p = zkr__path_join(dir, exact_name);
                struct Stat st;
                int z = p ? zkr__zh_answer(zkr__zh(h), zoo_exists(zkr__zh(h), p, 0, &st)) : ZSYSTEMERROR;
                int64_t now_session = zkr__zh_session(c, h);
                zkr__client_put_handle(c, h);
                if (z == ZOK && st.ephemeralOwner == session && now_session == session) {
                    out->path = p;
                    out->czxid = st.czxid;
                    out->session = session;
                    return ZKR_OK;
                }
                if (z == ZOK && p)
                    zkr__client_delete_later(c, p, session);
                free(p);
                continue;
            }
            rc = recover_protected(c, dir, out->uuid, session, deadline, out);
            if (rc == RECOVER_RETRY)
                continue;
            if (rc == ZKR_OK && children) {
                /* The adopted node is ours: list for the caller. */
                if (zkr__client_get_handle(c, &h) == ZKR_OK) {
                    if (zkr__list(c, h, dir, children) != ZKR_OK) {
                        children->v = NULL;
                        children->n = 0;
                    }
                    zkr__client_put_handle(c, h);
                }
            }
            return rc;
        }
        if (zkr__zk_class(op.create_rc) == ZKR__ZC_SESSION)
            continue; /* the session went away: try on the next one */
        return zkr__zk_error(op.create_rc);
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

int zkr__node_create(zkr_client_t *c, const char *dir, const char *marker, const char *exact_name,
                     int mode, const char *data, int datalen, int64_t deadline, zkr__node_t *out,
                     zkr__strvec_t *children)
{
    int rc = node_create(c, dir, marker, exact_name, mode, data, datalen, deadline, out, children);
    if (rc != ZKR_OK)
        return rc;
    /* Tracked from now on: anyone else deleting it is seen. */
    rc = zkr__track_add(c, out->path, out->session, &out->track);
    if (rc != ZKR_OK) {
        zkr__node_delete(c, out);
        if (children)
            zkr__strvec_free(children);
    }
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

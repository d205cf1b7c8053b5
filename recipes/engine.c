/* The queue engine.  See engine.h and docs/architecture.md. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "recipes/engine.h"

#define PARENT_RETRIES 5
#define CREATE_RETRIES 20

/* ---- decisions ------------------------------------------------------------ */

int zkr__decide_first_n(const void *arg, char *const *sorted, size_t n, size_t ours, size_t *watch)
{
    (void)sorted;
    (void)n;
    size_t max = (size_t)*(const int *)arg;
    if (ours < max)
        return 1;
    *watch = ours - max;
    return 0;
}

static const int one_holder = 1;

const zkr__driver_t zkr__lock_driver = {
    .marker = "lock-",
    .key = zkr__sort_key,
    .key_marker = "lock-",
    .decide = zkr__decide_first_n,
    .decide_arg = &one_holder,
    .next_in_line = 1,
};

/* ---- small helpers ---------------------------------------------------------- */

static int is_connection_error(int zrc)
{
    return zkr__zk_class(zrc) == ZKR__ZC_CONNECTION;
}

void zkr__node_clear(zkr__node_t *node)
{
    free(node->path);
    memset(node, 0, sizeof *node);
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

/* The create and the listing behind it; the completions signal the
 * caller through the op's own mutex (no client-wide lock on this path). */
typedef struct create_op {
    pthread_mutex_t mu;
    pthread_cond_t cond;
    int pending;
    int create_rc;
    char *created;
    struct Stat stat;
    int list_rc;
    zkr__strvec_t children;
    int inited;  /* mu and cond made */
    zkr__zcreate_t z; /* when sent through the handle's combiner */
} create_op_t;

static void create_done(int rc, const char *value, const struct Stat *stat, const void *data)
{
    create_op_t *op = (create_op_t *)data;
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
    create_op_t *op = (create_op_t *)data;
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
static int create_op_init(create_op_t *op)
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
static void list_send_locked(zkr__zh_t *h, create_op_t *op, const char *dir)
{
    if (zoo_aget_children(zkr__zh(h), dir, 0, list_done, op) == ZOK)
        op->pending++;
}

/* Send the create of `path` on h, and the listing of dir right behind it
 * if `list`: ZooKeeper answers one session's requests in order, so the
 * listing already sees our node.  The completions signal through the
 * op's own mutex (no client-wide lock on this path).  Wait with
 * create_wait, whatever happened. */
static void create_send(zkr_client_t *c, zkr__zh_t *h, create_op_t *op, const char *path, const char *dir,
                        const char *data, int datalen, int mode, int list)
{
    if (create_op_init(op) != 0)
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
static void create_op_combine(zkr_client_t *c, create_op_t *op, const char *path, const char *dir)
{
    pthread_mutex_lock(&op->mu);
    op->pending = 2; /* the create and the listing */
    pthread_mutex_unlock(&op->mu);
    op->z = (zkr__zcreate_t){{NULL}, path, dir, zkr__client_acl(c), create_done, list_done, op};
}

static void create_send_combined(zkr_client_t *c, zkr__zh_t *h, create_op_t *op, const char *path, const char *dir)
{
    if (create_op_init(op) != 0)
        return;
    create_op_combine(c, op, path, dir);
    zkr__zh_create(h, &op->z);
}

static void create_wait(zkr__zh_t *h, create_op_t *op)
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

        create_op_t op;
        if (children && datalen == 0 && mode == ZOO_EPHEMERAL_SEQUENTIAL)
            create_send_combined(c, h, &op, path, dir);
        else
            create_send(c, h, &op, path, dir, data, datalen, mode, children != NULL);
        if (!op.inited) {
            zkr__client_put_handle(c, h);
            free(path);
            return ZKR_ESYSTEM;
        }
        create_wait(h, &op);
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
static void ignore_void(int rc, const void *data)
{
    (void)rc;
    (void)data;
}

/* What the answer to our delete of `path` means.  Returns the release's
 * code: ZKR_OK (gone, or finished in the background), ZKR_ELOST if `lost`,
 * or the server's refusal. */
static int delete_settle(zkr_client_t *c, const char *path, int64_t session, int zrc, int lost)
{
    int rc = lost ? ZKR_ELOST : ZKR_OK;
    if (zrc == ZOK || zrc == ZNONODE) {
        /* gone */
    } else if (zkr__zk_class(zrc) != ZKR__ZC_FINAL || zrc == ZSYSTEMERROR) {
        /* the link (or a local shortage), not the server: again later */
        zkr__client_delete_later(c, path, session);
    } else {
        /* The server refuses (ZNOAUTH, ...): retrying will not help.  Say
         * so; the node stays until its session ends. */
        zkr__log(c, ZKR_LOG_ERROR, "cannot delete %s: %s; it stays until the session ends", path, zerror(zrc));
        rc = lost ? ZKR_ELOST : zkr__zk_error(zrc);
    }
    return rc;
}

/* An answer the sending thread waits for a while (or not at all).  If it
 * stops waiting, the completion settles the answer and frees it. */
typedef struct awaited {
    zkr__req_t req; /* first */
    pthread_mutex_t mu;
    pthread_cond_t cond;
    int done, abandoned, rc;
} awaited_t;

static int awaited_init(awaited_t *a)
{
    if (pthread_mutex_init(&a->mu, NULL) != 0)
        return -1;
    if (zkr__cond_init(&a->cond) != 0) {
        pthread_mutex_destroy(&a->mu);
        return -1;
    }
    return 0;
}

static void awaited_destroy(awaited_t *a)
{
    pthread_cond_destroy(&a->cond);
    pthread_mutex_destroy(&a->mu);
}

/* In the completion: record rc, wake the sender.  Returns 1 if the
 * sender has stopped waiting (the completion must settle and free). */
static int awaited_answer(awaited_t *a, int rc)
{
    zkr__req_end(&a->req);
    pthread_mutex_lock(&a->mu);
    int abandoned = a->abandoned;
    a->done = 1;
    a->rc = rc;
    pthread_cond_signal(&a->cond);
    pthread_mutex_unlock(&a->mu);
    return abandoned;
}

/* Wait until the deadline: 1 with a->rc (the caller frees), or 0: given
 * up, the completion settles it. */
static int awaited_wait(awaited_t *a, int64_t deadline)
{
    pthread_mutex_lock(&a->mu);
    while (!a->done && zkr__cond_wait_until(&a->cond, &a->mu, deadline) != ETIMEDOUT)
        ;
    int done = a->done;
    a->abandoned = !done;
    pthread_mutex_unlock(&a->mu);
    return done;
}

/* One delete. */
typedef struct delete_wait {
    awaited_t aw; /* first */
    zkr__zdel_t del; /* when sent through the handle's combiner */
    zkr_client_t *c;
    int64_t session;
    char path[];
} delete_wait_t;

static void delete_wait_free(delete_wait_t *dw)
{
    awaited_destroy(&dw->aw);
    free(dw);
}

static void delete_wait_done(int rc, const void *data)
{
    delete_wait_t *dw = (delete_wait_t *)data;
    if (awaited_answer(&dw->aw, rc)) {
        if (rc != ZCLOSING) /* closing: the session's end deletes it */
            delete_settle(dw->c, dw->path, dw->session, rc, 0);
        delete_wait_free(dw);
    }
}

static void delete_wait_closing(zkr__req_t *r)
{
    delete_wait_done(ZCLOSING, r);
}

static void delete_wait_combined(zkr__zdel_t *d, int rc)
{
    delete_wait_done(rc, (char *)d - offsetof(delete_wait_t, del));
}

static delete_wait_t *delete_wait_new(zkr_client_t *c, const char *path, int64_t session)
{
    size_t len = strlen(path) + 1;
    delete_wait_t *dw = calloc(1, sizeof *dw + len);
    if (!dw)
        return NULL;
    if (awaited_init(&dw->aw) != 0) {
        free(dw);
        return NULL;
    }
    dw->c = c;
    dw->session = session;
    memcpy(dw->path, path, len);
    dw->del.path = dw->path;
    dw->del.done = delete_wait_combined;
    return dw;
}

/* Send the delete of path on h: the wait, or NULL with *zrc the reason
 * nothing was sent. */
static delete_wait_t *delete_send(zkr_client_t *c, zkr__zh_t *h, const char *path, int64_t session, int *zrc)
{
    delete_wait_t *dw = delete_wait_new(c, path, session);
    *zrc = ZSYSTEMERROR;
    if (!dw)
        return NULL;
    zkr__req_start(h, &dw->aw.req, delete_wait_closing);
    *zrc = zoo_adelete(zkr__zh(h), path, -1, delete_wait_done, dw);
    if (*zrc != ZOK) {
        zkr__req_end(&dw->aw.req);
        delete_wait_free(dw);
        return NULL;
    }
    return dw;
}

/* What delete_bounded returns when it has no answer to give: not
 * ZooKeeper codes (those are <= 0; the C client itself answers a request
 * ZOPERATIONTIMEOUT when its connection times out, and that answer must be
 * settled like any other). */
#define DELETE_PENDING 2 /* not answered in time: the completion settles it */

/* Delete path; the answer if it came within wait_ms, else
 * DELETE_PENDING (a stalled link, or wait_ms 0): the completion then
 * settles it in the background. */
static int delete_bounded(zkr_client_t *c, zkr__zh_t *h, const char *path, int64_t session, int64_t wait_ms)
{
    int zrc = ZSYSTEMERROR;
    delete_wait_t *dw;
    if (wait_ms > 0) {
        /* Awaited: through the combiner, so that many threads' releases
         * go out as one multi while one is in flight. */
        if (!(dw = delete_wait_new(c, path, session)))
            return zrc;
        zkr__zh_delete(h, &dw->del);
    } else if (!(dw = delete_send(c, h, path, session, &zrc))) {
        return zrc;
    }
    /* wait_ms 0: only an answer already there; either way the wait says
     * who frees it. */
    if (!awaited_wait(&dw->aw, zkr__deadline(wait_ms > 0 ? wait_ms : 0)))
        return DELETE_PENDING;
    zrc = dw->aw.rc;
    delete_wait_free(dw);
    return zrc;
}

/* ---- deletes awaited together (the multi-lock's release) ---------------------- */

/* A release's delete, kept until zkr__deletes_defer_end sends it. */
typedef struct defer_entry {
    zkr_client_t *c;      /* entered until the answer is settled */
    zkr__zh_t *h;         /* a reference, as long */
    char *path;
    int64_t session;
    int watched;          /* our own watch was on it: wake our waiters once sent */
    delete_wait_t *dw;    /* its wait, once sent */
    int zrc;              /* the answer, or DELETE_PENDING */
} defer_entry_t;

typedef struct defer_list {
    int active;
    defer_entry_t *e;
    size_t n, cap;
} defer_list_t;
static _Thread_local defer_list_t deferred;

/* Keep the delete of path for zkr__deletes_defer_end, with the caller's
 * entry into c and its reference to h.  0 if not deferring (or no memory:
 * the caller deletes now). */
static int defer_add(zkr_client_t *c, zkr__zh_t *h, const char *path, int64_t session, int watched)
{
    if (!deferred.active)
        return 0;
    if (deferred.n == deferred.cap) {
        size_t cap = deferred.cap ? 2 * deferred.cap : 8;
        defer_entry_t *v = realloc(deferred.e, cap * sizeof *v);
        if (!v)
            return 0;
        deferred.e = v;
        deferred.cap = cap;
    }
    char *copy = strdup(path);
    if (!copy)
        return 0;
    deferred.e[deferred.n++] = (defer_entry_t){c, h, copy, session, watched, NULL, DELETE_PENDING};
    return 1;
}

void zkr__deletes_defer_begin(void)
{
    deferred.active = 1;
}

int zkr__deletes_defer_end(void)
{
    defer_list_t l = deferred;
    memset(&deferred, 0, sizeof deferred); /* from here on, deletes go out at once */
    int64_t deadline = zkr__deadline(ZKR_RELEASE_WAIT_MS);

    /* The deletes of one handle go out together, as one multi (one
     * transaction; zkr__zh_delete_group sends a refused one again one
     * delete at a time). */
    for (size_t i = 0; i < l.n; i++) {
        if (l.e[i].dw || l.e[i].zrc != DELETE_PENDING)
            continue; /* sent, or could not be */
        zkr__qlink_t *group = NULL, **tail = &group;
        for (size_t j = i; j < l.n; j++) {
            defer_entry_t *e = &l.e[j];
            if (e->h != l.e[i].h || e->dw || e->zrc != DELETE_PENDING)
                continue;
            if (!(e->dw = delete_wait_new(e->c, e->path, e->session))) {
                e->zrc = ZSYSTEMERROR; /* settled: deleted in the background */
                continue;
            }
            *tail = &e->dw->del.link;
            tail = &e->dw->del.link.next;
        }
        *tail = NULL;
        if (group)
            zkr__zh_delete_group(l.e[i].h, (zkr__zdel_t *)group);
    }
    /* Our own session's waiters on these nodes lost their watch with ours:
     * wake them now the deletes are on their way. */
    for (size_t i = 0; i < l.n; i++)
        if (l.e[i].watched)
            zkr__waiters_wake_path(l.e[i].c, l.e[i].path);

    int first = ZKR_OK;
    for (size_t i = 0; i < l.n; i++) {
        defer_entry_t *e = &l.e[i];
        if (e->dw && awaited_wait(&e->dw->aw, deadline)) {
            e->zrc = zkr__zh_answer(zkr__zh(e->h), e->dw->aw.rc);
            delete_wait_free(e->dw);
        } else if (e->dw) {
            e->zrc = DELETE_PENDING; /* its completion settles it */
        }
        if (e->zrc != DELETE_PENDING) {
            int rc = delete_settle(e->c, e->path, e->session, e->zrc, 0);
            if (rc != ZKR_OK && first == ZKR_OK)
                first = rc;
        }
        zkr__client_put_handle(e->c, e->h);
        zkr__client_leave(e->c);
        free(e->path);
    }
    free(l.e);
    return first;
}

/* Delete our node, waiting at most wait_ms for the answer (between
 * zkr__deletes_defer_begin and _end: kept, and sent by _end). */
static int node_delete(zkr_client_t *c, zkr__node_t *node, int64_t wait_ms)
{
    int was_lost = 0, watched = 0;
    if (node->track) {
        was_lost = zkr__track_remove(c, node->track, &watched) == ZKR_HOLD_LOST;
        node->track = NULL;
    }
    if (!node->path)
        return ZKR_OK;
    /* Inside the client, so that close waits for the delete; once it
     * closes, closing the session deletes the ephemeral node. */
    int rc = zkr__client_enter(c);
    zkr__zh_t *h = NULL;
    if (rc == ZKR_OK && (rc = zkr__client_get_handle(c, &h)) != ZKR_OK)
        zkr__client_leave(c);
    if (rc != ZKR_OK) {
        zkr__node_clear(node);
        return rc;
    }
    int lost = was_lost || zkr__zh_session(c, h) != node->session;
    int zrc = ZCONNECTIONLOSS;
    if (zkr__zh_usable(c, h)) {
        /* Our own watch, if it was set, goes first (same session: in
         * order), so the delete wakes only the next waiter. */
        /* zookeeper.h declares this completion as void_completion_t *, but
         * the C client stores and calls it as a void_completion_t. */
        if (watched)
            zoo_aremove_all_watches(zkr__zh(h), node->path, ZWATCHTYPE_DATA, 0,
                                    (void_completion_t *)ignore_void, NULL);
        if (wait_ms > 0 && defer_add(c, h, node->path, node->session, watched)) {
            /* zkr__deletes_defer_end sends it, settles it, and leaves. */
            zkr__node_clear(node);
            return lost ? ZKR_ELOST : ZKR_OK;
        }
        zrc = delete_bounded(c, h, node->path, node->session, wait_ms);
        if (zrc != DELETE_PENDING)
            zkr__zh_answer(zkr__zh(h), zrc);
        /* Our own session's waiters on this node lost their watch with
         * ours: wake them (they look again and find it gone). */
        if (watched)
            zkr__waiters_wake_path(c, node->path);
    }
    if (zrc == DELETE_PENDING)
        rc = lost ? ZKR_ELOST : ZKR_OK; /* settled in the background */
    else
        rc = delete_settle(c, node->path, node->session, zrc, lost);
    zkr__client_put_handle(c, h);
    zkr__client_leave(c);
    zkr__node_clear(node);
    return rc;
}

int zkr__node_delete(zkr_client_t *c, zkr__node_t *node)
{
    return node_delete(c, node, ZKR_RELEASE_WAIT_MS);
}

void zkr__node_delete_nowait(zkr_client_t *c, zkr__node_t *node)
{
    node_delete(c, node, 0);
}

int zkr__queue_decide(const zkr__driver_t *drv, zkr__strvec_t *kids, const char *name, size_t *watch)
{
    if (zkr__sort_children(kids->v, kids->n, drv->key, drv->key_marker) != 0)
        return ZKR_ENOMEM;
    long ours = zkr__strvec_find(kids, name);
    if (ours < 0)
        return ZKR__DECIDE_GONE;
    *watch = 0;
    int d = drv->decide(drv->decide_arg, kids->v, kids->n, (size_t)ours, watch);
    if (d == 0 && *watch >= kids->n)
        return ZKR_EZOOKEEPER; /* a driver bug, not a server answer */
    return d;
}

/* ---- waiting ------------------------------------------------------------------- */

typedef struct queue_step {
    zkr__track_t *track;   /* our node's */
    const char *dir;
    const zkr__driver_t *drv;
    const char *name;      /* our node's name */
    zkr__strvec_t kids;    /* a listing to use first (from the create) */
    int watching_first;    /* the node we watch was first in the order */
} queue_step_t;

/* List, sort, find our node, decide; if not held, data-watch the one node
 * the driver names (never exists, never a children watch). */
static int queue_step(void *arg, zkr_client_t *c, zkr__zh_t *h, zkr__waiter_t *w, int can_wait)
{
    queue_step_t *q = arg;
    int rc = ZKR_OK;
    if (q->watching_first && w->last == (ZKR__WAKE_WATCH | ZKR__WAKE_GONE)) {
        /* Next in line: the one node before ours is gone, and no node can
         * come before ours (decide_first_n with watch index 0: our index
         * was `max`, it is now below).  Nothing to list. */
        q->watching_first = 0;
        return ZKR_OK;
    }
    q->watching_first = 0;
    zkr__strvec_t kids = q->kids;
    q->kids.v = NULL;
    q->kids.n = 0;
    if (!kids.v) {
        rc = zkr__list(c, h, q->dir, &kids);
        if (rc == ZKR_ECONNLOSS || rc == ZKR_ESESSIONLOST)
            return ZKR__STEP_RECONNECT;
        if (rc != ZKR_OK)
            return rc;
    }
    char *wpath = NULL;
    size_t watch = 0;
    int d = zkr__queue_decide(q->drv, &kids, q->name, &watch);
    if (d == ZKR__DECIDE_GONE) {
        /* We just listed on our node's session, so the session lives:
         * someone else deleted our node. */
        zkr__track_mark_deleted(c, q->track);
        rc = ZKR_EDELETED;
        goto out;
    }
    if (d != 0) {
        rc = d > 0 ? ZKR_OK : d;
        goto out;
    }
    if (!can_wait) {
        rc = ZKR_ETIMEDOUT;
        goto out;
    }
    if (!(wpath = zkr__path_join(q->dir, kids.v[watch])) || zkr__waiter_watching(c, w, wpath) != ZKR_OK) {
        rc = ZKR_ENOMEM;
        goto out;
    }
    char buf[16];
    int blen = (int)sizeof buf;
    struct Stat st;
    int zrc = zkr__zh_answer(zkr__zh(h), zoo_wget(zkr__zh(h), wpath, zkr__waiter_watcher(),
                                                  zkr__waiter_ctx(w), buf, &blen, &st));
    if (zrc == ZOK) {
        rc = ZKR__STEP_WAIT;
        q->watching_first = q->drv->next_in_line && watch == 0;
    } else if (zrc == ZNONODE)
        rc = ZKR__STEP_AGAIN; /* already gone: re-evaluate at once */
    else if (zkr__zk_class(zrc) != ZKR__ZC_FINAL)
        rc = ZKR__STEP_RECONNECT;
    else
        rc = zkr__zk_error(zrc);
out:
    free(wpath);
    zkr__strvec_free(&kids);
    return rc;
}

int zkr__queue_wait(zkr_client_t *c, const char *dir, const zkr__driver_t *drv, zkr__node_t *node,
                    zkr__strvec_t *first_listing, int64_t deadline)
{
    queue_step_t q = {node->track, dir, drv, zkr__path_basename(node->path), {NULL, 0}, 0};
    if (first_listing && first_listing->v) {
        q.kids = *first_listing;
        first_listing->v = NULL;
        first_listing->n = 0;
    }
    int rc = zkr__watch_loop(c, node->session, node->track, deadline, queue_step, &q);
    zkr__strvec_free(&q.kids);
    return rc;
}

/* ---- nodes created ahead (the multi-lock) ------------------------------------- */

struct zkr__prefetch {
    zkr_client_t *c;
    zkr__zh_t *h;          /* held from start to finish */
    const char *dir;       /* the lock object's (outlives the prefetch) */
    const zkr__driver_t *drv;
    char *path;
    char uuid[ZKR__UUID_LEN + 1];
    int64_t session;
    create_op_t op;
    int sent;              /* zkr__prefetch_start_all: on its way */
    int finished;
    zkr__node_t node;      /* ours until an acquire takes it */
    zkr__strvec_t kids;
};

static _Thread_local zkr__prefetch_t *offered;

/* A prefetch with its name chosen and a reference to the handle it goes
 * out on; NULL if nothing can be sent now (the acquire then makes its own
 * node, the usual way). */
static zkr__prefetch_t *prefetch_new(zkr_client_t *c, const char *dir, const zkr__driver_t *drv)
{
    zkr__prefetch_t *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->c = c;
    p->dir = dir;
    p->drv = drv;
    if (zkr__client_get_handle(c, &p->h) != ZKR_OK) {
        free(p);
        return NULL;
    }
    if (!zkr__zh_usable(c, p->h) || zkr__uuid(p->uuid) != 0 ||
        !(p->path = zkr__protected_path(dir, p->uuid, drv->marker))) {
        zkr__client_put_handle(c, p->h);
        free(p);
        return NULL;
    }
    p->session = zkr__zh_session(c, p->h);
    return p;
}

zkr__prefetch_t *zkr__prefetch_start(zkr_client_t *c, const char *dir, const zkr__driver_t *drv)
{
    zkr__prefetch_t *p = prefetch_new(c, dir, drv);
    if (p)
        create_send(c, p->h, &p->op, p->path, dir, "", 0, ZOO_EPHEMERAL_SEQUENTIAL, 1);
    return p;
}

/* Several prefetches' creates (one handle, distinct directories) as one
 * multi: one transaction on the server, one log write instead of one per
 * node (zkr__zh_create_group).  0, or -1 if nothing was set up (the
 * caller sends them one by one). */
static int prefetch_group_send(zkr__prefetch_t **m, size_t n)
{
    size_t inited = 0;
    while (inited < n && create_op_init(&m[inited]->op) == 0)
        inited++;
    if (inited < n) {
        for (size_t i = 0; i < inited; i++) {
            pthread_cond_destroy(&m[i]->op.cond);
            pthread_mutex_destroy(&m[i]->op.mu);
            m[i]->op.inited = 0;
        }
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        create_op_combine(m[i]->c, &m[i]->op, m[i]->path, m[i]->dir);
        m[i]->op.z.link.next = i + 1 < n ? &m[i + 1]->op.z.link : NULL;
    }
    zkr__zh_create_group(m[0]->h, &m[0]->op.z);
    return 0;
}

void zkr__prefetch_start_all(const zkr__prefetch_target_t *t, size_t n, zkr__prefetch_t **out)
{
    zkr__prefetch_t **group = calloc(n ? n : 1, sizeof *group);
    for (size_t i = 0; i < n; i++)
        out[i] = t[i].c ? prefetch_new(t[i].c, t[i].dir, t[i].drv) : NULL;
    for (size_t i = 0; i < n; i++) {
        if (!out[i] || out[i]->sent)
            continue;
        /* Every later one on the same handle (one client, one session)
         * goes in the same multi. */
        size_t k = 0;
        for (size_t j = i; group && j < n; j++) {
            if (!out[j] || out[j]->sent || out[j]->h != out[i]->h)
                continue;
            /* One node per directory in a transaction: two holders of one
             * lock never share a fencing token. */
            int dup = 0;
            for (size_t g = 0; g < k && !dup; g++)
                dup = strcmp(group[g]->dir, out[j]->dir) == 0;
            if (!dup)
                group[k++] = out[j];
        }
        if (k >= 2 && prefetch_group_send(group, k) == 0) {
            for (size_t j = 0; j < k; j++)
                group[j]->sent = 1;
        } else {
            create_send(out[i]->c, out[i]->h, &out[i]->op, out[i]->path, out[i]->dir, "", 0,
                        ZOO_EPHEMERAL_SEQUENTIAL, 1);
            out[i]->sent = 1;
        }
    }
    free(group);
}

int zkr__prefetch_finish(zkr__prefetch_t *p)
{
    if (!p->finished) {
        p->finished = 1;
        create_wait(p->h, &p->op);
        zkr__client_put_handle(p->c, p->h);
        p->h = NULL;
        if (p->op.create_rc == ZOK) {
            p->node.path = p->op.created;
            p->op.created = NULL;
            p->node.czxid = p->op.stat.czxid;
            p->node.session = p->op.stat.ephemeralOwner ? p->op.stat.ephemeralOwner : p->session;
            memcpy(p->node.uuid, p->uuid, sizeof p->uuid);
            if (p->op.list_rc == ZOK) {
                p->kids = p->op.children;
                p->op.children.v = NULL;
                p->op.children.n = 0;
            }
            if (zkr__track_add(p->c, p->node.path, p->node.session, &p->node.track) != ZKR_OK)
                zkr__node_delete_nowait(p->c, &p->node);
        } else if (p->op.create_rc != ZNONODE && zkr__zk_class(p->op.create_rc) != ZKR__ZC_FINAL) {
            /* The create may have happened: whatever it left is deleted. */
            char prefix[ZKR__UUID_LEN + 8];
            snprintf(prefix, sizeof prefix, "_c_%s-", p->uuid);
            zkr__client_delete_prefix_later(p->c, p->dir, prefix, p->session);
        }
        zkr__strvec_free(&p->op.children);
        free(p->op.created);
    }
    if (!p->node.path)
        return -1;
    if (!p->kids.v)
        return 0; /* not listed: the acquire lists */
    /* Sorted in place: the acquire that takes the listing sorts it anyway. */
    size_t watch;
    return zkr__queue_decide(p->drv, &p->kids, zkr__path_basename(p->node.path), &watch) == 1;
}

void zkr__prefetch_offer(zkr__prefetch_t *p)
{
    offered = p;
}

void zkr__prefetch_free(zkr__prefetch_t *p)
{
    if (!p)
        return;
    if (offered == p)
        offered = NULL;
    zkr__prefetch_finish(p);
    if (p->node.path)
        zkr__node_delete_nowait(p->c, &p->node); /* not taken: nobody's */
    zkr__strvec_free(&p->kids);
    free(p->path);
    free(p);
}

int zkr__prefetch_take(zkr__prefetch_t *p, zkr__node_t *out, zkr__strvec_t *kids)
{
    if (zkr__prefetch_finish(p) < 0)
        return 0;
    *out = p->node;
    memset(&p->node, 0, sizeof p->node);
    *kids = p->kids;
    p->kids.v = NULL;
    p->kids.n = 0;
    return 1;
}

/* The node offered for this very queue, if any (taken: the caller owns it). */
static int take_offered(zkr_client_t *c, const char *dir, const zkr__driver_t *drv, zkr__node_t *out,
                        zkr__strvec_t *kids)
{
    zkr__prefetch_t *p = offered;
    if (!p || p->c != c || p->drv != drv || strcmp(p->dir, dir) != 0)
        return 0;
    offered = NULL;
    return zkr__prefetch_take(p, out, kids);
}

int zkr__queue_acquire(zkr_client_t *c, const char *dir, const zkr__driver_t *drv, const char *data,
                       int datalen, int64_t deadline, zkr__node_t *out)
{
    zkr__strvec_t kids = {NULL, 0};
    int rc = ZKR_OK;
    if (datalen != 0 || !take_offered(c, dir, drv, out, &kids))
        rc = zkr__node_create(c, dir, drv->marker, NULL, ZOO_EPHEMERAL_SEQUENTIAL, data, datalen, deadline, out,
                              &kids);
    if (rc != ZKR_OK)
        return rc;
    rc = zkr__queue_wait(c, dir, drv, out, &kids, deadline);
    zkr__strvec_free(&kids);
    if (rc != ZKR_OK)
        zkr__node_delete(c, out);
    return rc;
}

int zkr__queue_participants(zkr_client_t *c, const char *dir, const zkr__driver_t *drv, zkr__strvec_t *out)
{
    out->v = NULL;
    out->n = 0;
    zkr__zh_t *h;
    int rc = zkr__client_get_handle(c, &h);
    if (rc != ZKR_OK)
        return rc;
    zkr__strvec_t kids;
    rc = zkr__list(c, h, dir, &kids);
    zkr__client_put_handle(c, h);
    if (rc != ZKR_OK)
        return rc;
    if (zkr__sort_children(kids.v, kids.n, drv->key, drv->key_marker) != 0) {
        zkr__strvec_free(&kids);
        return ZKR_ENOMEM;
    }
    for (size_t i = 0; i < kids.n; i++) {
        char *full = zkr__path_join(dir, kids.v[i]);
        if (!full) {
            zkr__strvec_free(&kids);
            return ZKR_ENOMEM;
        }
        free(kids.v[i]);
        kids.v[i] = full;
    }
    *out = kids;
    return ZKR_OK;
}

int zkr__participants(zkr_client_t *c, const char *dir, const zkr__driver_t *drv, char ***paths, size_t *count)
{
    if (!paths || !count)
        return ZKR_EINVAL;
    *paths = NULL;
    *count = 0;
    int rc = zkr__client_enter(c);
    if (rc != ZKR_OK)
        return rc;
    zkr__strvec_t sv;
    rc = zkr__queue_participants(c, dir, drv, &sv);
    zkr__client_leave(c);
    if (rc == ZKR_OK) {
        *paths = sv.v;
        *count = sv.n;
    }
    return rc;
}

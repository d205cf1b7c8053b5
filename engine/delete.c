/* Deleting our nodes: a release's delete through the handle's delete
 * combiner, awaited at most ZKR_RELEASE_WAIT_MS (or not at all), its answer
 * settled (connection trouble: a background delete; a refusal: returned
 * and logged); deletes deferred and sent together (the multi-lock's
 * release, one multi per handle). */
#include "config.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"

void zkr__node_clear(zkr__node_t *node)
{
    free(node->path);
    memset(node, 0, sizeof *node);
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

/* One delete. */
typedef struct delete_wait {
    zkr__awaited_t aw; /* first */
    zkr__zdel_t del; /* when sent through the handle's combiner */
    zkr_client_t *c;
    int64_t session;
    char path[];
} delete_wait_t;

static void delete_wait_free(delete_wait_t *dw)
{
    zkr__awaited_destroy(&dw->aw);
    free(dw);
}

static void delete_wait_done(int rc, const void *data)
{
    delete_wait_t *dw = (delete_wait_t *)data;
    if (zkr__awaited_answer(&dw->aw, rc)) {
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
    if (zkr__awaited_init(&dw->aw) != 0) {
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
    if (!zkr__awaited_wait(&dw->aw, zkr__deadline(wait_ms > 0 ? wait_ms : 0)))
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
static int defer_add(zkr_client_t *c, zkr__zh_t *h, const char *path, int64_t session)
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
    deferred.e[deferred.n++] = (defer_entry_t){c, h, copy, session, NULL, DELETE_PENDING};
    return 1;
}

void zkr__deletes_defer_begin(void)
{
    deferred.active = 1;
}

int zkr__deletes_defer_end(void)
{
    return zkr__deletes_defer_end_by(zkr__deadline(ZKR_RELEASE_WAIT_MS));
}

int zkr__deletes_defer_end_within(int64_t deadline)
{
    int64_t by = zkr__hard_deadline(deadline);
    int64_t soon = zkr__deadline(ZKR__DEADLINE_GRACE_MS);
    return zkr__deletes_defer_end_by(by > soon ? by : soon);
}

int zkr__deletes_defer_end_by(int64_t by)
{
    defer_list_t l = deferred;
    memset(&deferred, 0, sizeof deferred); /* from here on, deletes go out at once */
    int64_t deadline = zkr__deadline(ZKR_RELEASE_WAIT_MS);
    if (by < deadline)
        deadline = by;

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
    int first = ZKR_OK;
    for (size_t i = 0; i < l.n; i++) {
        defer_entry_t *e = &l.e[i];
        if (e->dw && zkr__awaited_wait(&e->dw->aw, deadline)) {
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
    int was_lost = 0;
    if (node->track) {
        was_lost = zkr__track_remove(c, node->track) == ZKR_HOLD_LOST;
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
        /* Our own watch, if it was set, stays: the delete fires it to our
         * session alone (a notification; its track is gone, so it is
         * ignored), which costs the server less than a request to remove
         * it. */
        if (wait_ms > 0 && defer_add(c, h, node->path, node->session)) {
            /* zkr__deletes_defer_end sends it, settles it, and leaves. */
            zkr__node_clear(node);
            return lost ? ZKR_ELOST : ZKR_OK;
        }
        zrc = delete_bounded(c, h, node->path, node->session, wait_ms);
        if (zrc != DELETE_PENDING)
            zkr__zh_answer(zkr__zh(h), zrc);
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


/* ---- a release that does not wait (the asynchronous release) ---------------- */

typedef struct delete_cb {
    zkr__zdel_t del; /* first: the combiner's */
    zkr_client_t *c;
    int64_t session;
    int lost;
    zkr__delete_done_fn done;
    void *arg;
    char path[];
} delete_cb_t;

static void delete_cb_done(zkr__zdel_t *d, int zrc)
{
    delete_cb_t *dc = (delete_cb_t *)(void *)d;
    int rc;
    if (zrc == ZCLOSING) /* the client closes: its session's end deletes it */
        rc = dc->lost ? ZKR_ELOST : ZKR_OK;
    else
        rc = delete_settle(dc->c, dc->path, dc->session, zrc, dc->lost);
    dc->done(dc->c, rc, dc->arg);
    free(dc);
}

void zkr__node_delete_cb(zkr_client_t *c, zkr__node_t *node, zkr__delete_done_fn done, void *arg)
{
    int was_lost = 0;
    if (node->track) {
        was_lost = zkr__track_remove(c, node->track) == ZKR_HOLD_LOST;
        node->track = NULL;
    }
    zkr__zh_t *h = NULL;
    if (!node->path || zkr__client_get_handle(c, &h) != ZKR_OK) {
        /* nothing to delete, or the client closes (the session's end
         * deletes it) */
        done(c, was_lost ? ZKR_ELOST : ZKR_OK, arg);
        zkr__node_clear(node);
        return;
    }
    size_t len = strlen(node->path) + 1;
    delete_cb_t *dc = calloc(1, sizeof *dc + len);
    int lost = was_lost || zkr__zh_session(c, h) != node->session;
    if (!dc || !zkr__zh_usable(c, h)) {
        /* later, in the background: as a blocking release not answered in time */
        zkr__client_delete_later(c, node->path, node->session);
        zkr__client_put_handle(c, h);
        free(dc);
        done(c, lost ? ZKR_ELOST : ZKR_OK, arg);
        zkr__node_clear(node);
        return;
    }
    dc->c = c;
    dc->session = node->session;
    dc->lost = lost;
    dc->done = done;
    dc->arg = arg;
    memcpy(dc->path, node->path, len);
    dc->del.path = dc->path;
    dc->del.done = delete_cb_done;
    zkr__zh_delete(h, &dc->del); /* dc may be gone from here on (our own
                                    watch stays: see node_delete) */
    zkr__client_put_handle(c, h);
    zkr__node_clear(node);
}

void zkr__lost_create_delete_later(zkr_client_t *c, const char *dir, const char *uuid, int64_t session)
{
    char prefix[ZKR__PROTECTED_PREFIX_LEN + 1];
    int n = zkr__protected_name(prefix, sizeof prefix, uuid, "");
    if (n > 0 && (size_t)n < sizeof prefix)
        zkr__client_delete_prefix_later(c, dir, prefix, session);
}

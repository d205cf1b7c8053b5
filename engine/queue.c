/* The blocking queue acquire (Curator's LockInternals): create our node
 * (or take one sent ahead), then list, decide, data-watch the one node the
 * driver names and wait (engine/wait.c), until held or the deadline; and
 * the participants of a queue. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"

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

int zkr__queue_acquire(zkr_client_t *c, const char *dir, const zkr__driver_t *drv, const char *data,
                       int datalen, int64_t deadline, zkr__node_t *out)
{
    zkr__strvec_t kids = {NULL, 0};
    int rc = ZKR_OK;
    if (datalen != 0 || !zkr__prefetch_take_offered(c, dir, drv, out, &kids))
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

/* Nodes created ahead of their acquire (the multi-lock's parts): the
 * creates and listings are sent now, as one multi per handle, and the
 * thread's next acquire on the same client, directory and driver takes the
 * node instead of creating one. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"

/* ---- nodes created ahead (the multi-lock) ------------------------------------- */

struct zkr__prefetch {
    zkr_client_t *c;
    zkr__zh_t *h;          /* held from start to finish */
    const char *dir;       /* the lock object's (outlives the prefetch) */
    const zkr__driver_t *drv;
    char *path;
    char uuid[ZKR__UUID_LEN + 1];
    int64_t session;
    zkr__create_op_t *op;  /* until it is answered or given up */
    int sent;              /* zkr__prefetch_start_all: on its way */
    int finished;
    int dir_missing;       /* the create found no directory */
    int reply_lost;        /* its reply was lost: the node may exist */
    zkr__node_t node;      /* ours until an acquire takes it */
    zkr__strvec_t kids;
};

static _Thread_local zkr__prefetch_t *offered;

/* A prefetch with its name chosen and a reference to the handle it goes
 * out on, inside the client until it is finished (so that close waits for
 * its answers and never frees the handle under it); NULL if nothing can be
 * sent now (the acquire then makes its own node, the usual way). */
static zkr__prefetch_t *prefetch_new(zkr_client_t *c, const char *dir, const zkr__driver_t *drv)
{
    zkr__prefetch_t *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->c = c;
    p->dir = dir;
    p->drv = drv;
    if (zkr__client_enter(c) != ZKR_OK) {
        free(p);
        return NULL;
    }
    if (zkr__client_get_handle(c, &p->h) != ZKR_OK) {
        zkr__client_leave(c);
        free(p);
        return NULL;
    }
    if (!zkr__zh_usable(c, p->h) || zkr__uuid(p->uuid) != 0 ||
        !(p->path = zkr__protected_path(dir, p->uuid, drv->marker))) {
        zkr__client_put_handle(c, p->h);
        zkr__client_leave(c);
        free(p);
        return NULL;
    }
    p->session = zkr__zh_session(c, p->h);
    if (!(p->op = zkr__create_op_new(c, p->path, dir, ZOO_EPHEMERAL_SEQUENTIAL, p->session))) {
        zkr__client_put_handle(c, p->h);
        zkr__client_leave(c);
        free(p->path);
        free(p);
        return NULL;
    }
    return p;
}

/* Several prefetches' creates (one handle, distinct directories) as one
 * multi: one transaction on the server, one log write instead of one per
 * node (zkr__zh_create_group). */
static void prefetch_group_send(zkr__prefetch_t **m, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        zkr__create_op_combine(m[i]->op);
        m[i]->op->z.link.next = i + 1 < n ? &m[i + 1]->op->z.link : NULL;
    }
    zkr__zh_create_group(m[0]->h, &m[0]->op->z);
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
        if (k >= 2) {
            prefetch_group_send(group, k);
            for (size_t j = 0; j < k; j++)
                group[j]->sent = 1;
        } else {
            zkr__create_send(out[i]->h, out[i]->op, "", 0, 1);
            out[i]->sent = 1;
        }
    }
    free(group);
}

int zkr__prefetch_finish(zkr__prefetch_t *p, int64_t deadline)
{
    if (!p->finished) {
        p->finished = 1;
        zkr__create_op_t *op = p->op;
        p->op = NULL;
        /* no answer by the deadline: the op is its completions', which
         * delete what it made */
        int answered = zkr__create_wait(p->h, op, zkr__hard_deadline(deadline));
        zkr__client_put_handle(p->c, p->h);
        zkr__client_leave(p->c);
        p->h = NULL;
        if (answered && op->create_rc == ZOK) {
            p->node.path = op->created;
            op->created = NULL;
            p->node.czxid = op->stat.czxid;
            p->node.session = op->stat.ephemeralOwner ? op->stat.ephemeralOwner : p->session;
            memcpy(p->node.uuid, p->uuid, sizeof p->uuid);
            if (op->list_rc == ZOK) {
                p->kids = op->children;
                op->children.v = NULL;
                op->children.n = 0;
            }
            zkr__create_op_free(op);
            if (zkr__track_add(p->c, p->node.path, p->node.session, 0, &p->node.track) != ZKR_OK)
                zkr__node_delete_nowait(p->c, &p->node);
        } else if (answered && zkr__create_op_reply_lost(op)) {
            /* The node may exist: the acquire that takes this looks for it
             * (its recovery); if none does, it goes by its prefix. */
            p->reply_lost = 1;
            zkr__create_op_free(op);
        } else if (answered) {
            p->dir_missing = op->create_rc == ZNONODE;
            zkr__create_op_forget(op);
        }
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
    zkr__prefetch_finish(p, 0); /* not waited for any more */
    if (p->node.path)
        zkr__node_delete_nowait(p->c, &p->node); /* not taken: nobody's */
    if (p->reply_lost) /* not taken: what it may have made goes by its prefix */
        zkr__lost_create_delete_later(p->c, p->dir, p->uuid, p->session);
    zkr__strvec_free(&p->kids);
    free(p->path);
    free(p);
}

static int prefetch_take(zkr__prefetch_t *p, zkr__node_t *out, zkr__strvec_t *kids)
{
    if (zkr__prefetch_finish(p, 0) < 0) /* (finished by then: no wait) */
        return 0;
    *out = p->node;
    memset(&p->node, 0, sizeof p->node);
    *kids = p->kids;
    p->kids.v = NULL;
    p->kids.n = 0;
    return 1;
}

/* The node offered for this very queue, if any (taken: the caller owns it). */
int zkr__prefetch_take_offered(zkr_client_t *c, const char *dir, const zkr__driver_t *drv, zkr__node_t *out,
                               zkr__strvec_t *kids, zkr__prefetch_miss_t *miss)
{
    zkr__prefetch_t *p = offered;
    memset(miss, 0, sizeof *miss);
    if (!p || p->c != c || p->drv != drv || strcmp(p->dir, dir) != 0)
        return 0;
    offered = NULL;
    int taken = prefetch_take(p, out, kids);
    if (!taken) {
        miss->dir_missing = p->dir_missing;
        miss->reply_lost = p->reply_lost;
        memcpy(miss->uuid, p->uuid, sizeof miss->uuid);
        miss->session = p->session;
        p->reply_lost = 0; /* the taker's now */
    }
    return taken;
}


/* The public asynchronous acquires (include/zkr/async.h) on the engine's
 * machine: each lock kind's target, and the delivery that wraps a granted
 * node into what the program gets (a zkr_hold_t, or a zkr_lease_t for a
 * semaphore); the holds' own calls. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "recipes/election.h"

struct zkr_hold {
    zkr_client_t *c;
    int kind;            /* ZKR__LK_* */
    zkr__node_t node;    /* mutex, read, write */
    zkr_lease_t *lease;  /* semaphore mutex */
};

/* The engine's delivery: wrap the node (retaining the client, as every
 * hold does) and call the program's completion.  If the client is closing
 * the node is given up (its session's end deletes it) and the program is
 * told ZKR_ECLOSED. */
static void deliver(zkr_client_t *c, int rc, zkr__node_t *node, const zkr__async_done_t *d)
{
    void *result = NULL;
    if (rc == ZKR_OK) {
        zkr_lease_t *l = NULL;
        zkr_hold_t *hd = NULL;
        if (d->kind == 0 || d->kind == ZKR__LK_SMUTEX) {
            if (!(l = zkr__lease_wrap(c, node)))
                rc = ZKR_ECLOSED;
        }
        if (rc == ZKR_OK && d->kind != 0) {
            if (!(hd = calloc(1, sizeof *hd)))
                rc = ZKR_ENOMEM;
            else if (!l && zkr__client_retain(c) != ZKR_OK)
                rc = ZKR_ECLOSED;
        }
        if (rc != ZKR_OK) {
            free(hd);
            if (l)
                zkr_lease_release(l);
            else
                zkr__node_delete_nowait(c, node);
        } else if (hd) {
            hd->c = c;
            hd->kind = d->kind;
            hd->lease = l;
            if (!l) {
                hd->node = *node;
                memset(node, 0, sizeof *node);
            }
            result = hd;
        } else {
            result = l;
        }
    }
    if (d->kind == 0)
        ((zkr_lease_acquire_fn)d->fn)(d->id, rc, result, d->ctx);
    else
        ((zkr_acquire_fn)d->fn)(d->id, rc, result, d->ctx);
}

int zkr_lock_acquire_async(zkr_lock_ref_t ref, int64_t timeout_ms, zkr_acquire_fn fn, void *ctx, uint64_t *id)
{
    int kind = zkr__lock_ref_kind(ref);
    if (!kind || !fn)
        return ZKR_EINVAL;
    zkr__async_target_t t;
    memset(&t, 0, sizeof t);
    if (kind == ZKR__LK_MUTEX)
        zkr__mutex_async_target(ref.obj, &t);
    else if (kind == ZKR__LK_SMUTEX)
        zkr__semaphore_async_target(zkr__semaphore_mutex_sem(ref.obj), &t);
    else
        zkr__rwlock_async_target(ref.obj, kind == ZKR__LK_WRITE, &t);
    zkr__async_done_t d = {.deliver = deliver, .kind = kind, .fn = (void (*)(void))fn, .ctx = ctx, .on_client = 0};
    return zkr__async_start(&t, timeout_ms, &d, id);
}

int zkr_semaphore_acquire_async(zkr_semaphore_t *s, int64_t timeout_ms, zkr_lease_acquire_fn fn, void *ctx,
                                uint64_t *id)
{
    if (!s || !fn)
        return ZKR_EINVAL;
    zkr__async_target_t t;
    memset(&t, 0, sizeof t);
    zkr__semaphore_async_target(s, &t);
    zkr__async_done_t d = {.deliver = deliver, .kind = 0, .fn = (void (*)(void))fn, .ctx = ctx, .on_client = 0};
    return zkr__async_start(&t, timeout_ms, &d, id);
}

/* One term of leadership: a latch node carrying the id, granted first. */
int zkr_leader_acquire_async(zkr_client_t *c, const char *path, const char *id, int64_t timeout_ms,
                             zkr_acquire_fn fn, void *ctx, uint64_t *aid)
{
    if (!id)
        id = "";
    if (!c || !fn || !zkr__path_valid(path) || !zkr__leader_id_ok(id))
        return ZKR_EINVAL;
    zkr__async_target_t t = {.c = c, .dir = path, .drv = &zkr__latch_driver, .data = id, .data_len = (int)strlen(id)};
    zkr__async_done_t d = {.deliver = deliver, .kind = ZKR__LK_LEADER, .fn = (void (*)(void))fn, .ctx = ctx, .on_client = 0};
    return zkr__async_start(&t, timeout_ms, &d, aid);
}

/* ---- releasing without waiting ---- */

/* The engine's delivery of a release: the program's completion, then the
 * reference to the client that the hold or lease held. */
int zkr_hold_release_async(zkr_hold_t *hd, zkr_release_fn fn, void *ctx)
{
    if (!hd || !fn)
        return ZKR_EINVAL;
    if (hd->lease) {
        int rc = zkr_lease_release_async(hd->lease, fn, ctx);
        if (rc != ZKR_ENOMEM)
            free(hd);
        return rc;
    }
    int rc = zkr__async_release(hd->c, &hd->node, fn, ctx);
    if (rc == ZKR_ENOMEM)
        return rc;
    if (rc != ZKR_OK) {
        zkr_hold_release(hd); /* closing: the node goes with the session */
        return rc;
    }
    free(hd); /* its client reference goes with the completion */
    return ZKR_OK;
}

/* ---- holds ---- */

int zkr_hold_release(zkr_hold_t *hd)
{
    if (!hd)
        return ZKR_EINVAL;
    int rc;
    if (hd->lease) {
        rc = zkr_lease_release(hd->lease);
    } else {
        rc = zkr__node_delete(hd->c, &hd->node);
        if (rc == ZKR_ECLOSED)
            rc = ZKR_OK; /* the node went with the session */
        zkr__client_release(hd->c);
    }
    free(hd);
    return rc;
}

int zkr_hold_fencing_token(const zkr_hold_t *hd, int64_t *token)
{
    if (!hd || !token)
        return ZKR_EINVAL;
    if (hd->lease)
        return zkr_lease_fencing_token(hd->lease, token);
    *token = hd->node.czxid;
    return ZKR_OK;
}

zkr_hold_state_t zkr_hold_state(const zkr_hold_t *hd)
{
    if (!hd)
        return ZKR_HOLD_NONE;
    if (hd->lease)
        return zkr_lease_hold_state(hd->lease);
    return zkr__node_hold_state(hd->c, &hd->node);
}

int zkr_hold_node_path(const zkr_hold_t *hd, char **path)
{
    if (path)
        *path = NULL;
    if (!hd || !path)
        return ZKR_EINVAL;
    if (hd->lease)
        return zkr_lease_node_path(hd->lease, path);
    if (!hd->node.path)
        return ZKR_EINVAL;
    return (*path = strdup(hd->node.path)) ? ZKR_OK : ZKR_ENOMEM;
}

int zkr__hold_guard(const zkr_hold_t *hd, int want_kind, zkr__guard_t *g)
{
    memset(g, 0, sizeof *g);
    if (want_kind && hd->kind != want_kind)
        return ZKR_EINVAL;
    return hd->lease ? zkr__lease_guard(hd->lease, g) : zkr__guard_fill(hd->c, &hd->node, g);
}

const char *zkr_hold_kind(const zkr_hold_t *hd)
{
    static const char *const names[] = {"invalid", "mutex", "semaphore-mutex", "read", "write", "leader"};
    if (!hd || hd->kind < 1 || hd->kind > ZKR__LK_LEADER)
        return names[0];
    return names[hd->kind];
}

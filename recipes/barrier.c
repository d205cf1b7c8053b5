/* zkr_barrier_t (Curator's DistributedBarrier): set creates the barrier's
 * node, remove deletes it, wait reads it with a data watch until it is
 * gone.  One request at a time, each awaited until the call's deadline. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "recipes/barrier_private.h"

#define RETRY_MS 100 /* after a lost session, before reading again */

struct zkr_barrier {
    zkr_client_t *c;
    char *path;
};

int zkr_barrier_new(zkr_barrier_t **out, zkr_client_t *c, const char *path)
{
    if (out)
        *out = NULL;
    if (!out || !c || !zkr__path_valid(path))
        return ZKR_EINVAL;
    zkr_barrier_t *b = calloc(1, sizeof *b);
    if (!b || !(b->path = strdup(path))) {
        free(b);
        return ZKR_ENOMEM;
    }
    int rc = zkr__client_retain(c);
    if (rc != ZKR_OK) {
        free(b->path);
        free(b);
        return rc;
    }
    b->c = c;
    *out = b;
    return ZKR_OK;
}

void zkr_barrier_free(zkr_barrier_t *b)
{
    if (!b)
        return;
    zkr__client_release(b->c);
    free(b->path);
    free(b);
}

int zkr_barrier_set(zkr_barrier_t *b, int64_t timeout_ms)
{
    if (!b)
        return ZKR_EINVAL;
    zkr__bdeadline_t d = zkr__bdeadline(timeout_ms);
    /* Curator: create().creatingParentContainersIfNeeded(), PERSISTENT */
    zkr__rq_t r = {.type = ZKR__RQ_CREATE, .path = b->path, .mode = ZOO_PERSISTENT, .parents = 1};
    int zrc = zkr__bsend(b->c, &r, 0, d.send);
    zkr__rq_clear(&r);
    return zrc == ZNODEEXISTS ? ZKR_OK : zkr__rq_error(zrc);
}

int zkr_barrier_remove(zkr_barrier_t *b, int64_t timeout_ms)
{
    if (!b)
        return ZKR_EINVAL;
    zkr__bdeadline_t d = zkr__bdeadline(timeout_ms);
    zkr__rq_t r = {.type = ZKR__RQ_DELETE, .path = b->path, .version = -1};
    int zrc = zkr__bsend(b->c, &r, 0, d.send);
    zkr__rq_clear(&r);
    return zrc == ZNONODE ? ZKR_OK : zkr__rq_error(zrc);
}

int zkr_barrier_wait(zkr_barrier_t *b, int64_t timeout_ms)
{
    if (!b)
        return ZKR_EINVAL;
    zkr__bdeadline_t d = zkr__bdeadline(timeout_ms);
    zkr__bwait_t w;
    int rc = zkr__bwait_start(&w, b->c);
    if (rc != ZKR_OK)
        return rc;
    for (;;) {
        uint64_t seen = zkr__bwait_news(&w);
        /* a data watch: none is left behind once the node is gone */
        zkr__rq_t r = {.type = ZKR__RQ_GET, .path = b->path, .watch = w.sub};
        int zrc = zkr__bsend(b->c, &r, 0, d.send);
        zkr__rq_clear(&r);
        if (zrc == ZNONODE) {
            rc = ZKR_OK;
            break;
        }
        if (zrc == ZOK) {
            rc = zkr__bwait_until(&w, seen, d.wait); /* its deletion, a change, a state */
        } else if (zkr__zk_class(zrc) == ZKR__ZC_SESSION && zrc != ZCLOSING) {
            /* the session ended under the read: read again in the next one */
            int64_t pause = zkr__now_ms() + RETRY_MS;
            rc = zkr__bwait_until(&w, seen, d.wait < pause ? d.wait : pause);
            if (rc == ZKR_ETIMEDOUT && zkr__remaining_ms(d.wait) > 0)
                rc = ZKR_OK;
        } else {
            /* (a lost connection is given up only at the deadline) */
            rc = zrc == ZCONNECTIONLOSS ? ZKR_ETIMEDOUT : zkr__rq_error(zrc);
        }
        if (rc != ZKR_OK)
            break;
    }
    zkr__bwait_stop(&w);
    return rc;
}

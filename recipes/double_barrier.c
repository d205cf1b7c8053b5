/* zkr_double_barrier_t (Curator's DistributedDoubleBarrier, on its nodes):
 * enter creates our ephemeral member node and waits until enough members
 * of this round are there ("ready" made after our node, or counted by us);
 * leave follows Curator's order (the lowest member's node goes last) and
 * waits until every member of our round is gone.  A round is the members
 * older than the "ready" node that let them in (barrier.h says why). */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "recipes/barrier_private.h"

#define READY "ready"

struct zkr_double_barrier {
    zkr_client_t *c;
    char *path;
    char *ready; /* path/ready */
    size_t members;
    pthread_mutex_t mu;
    /* mu */
    int busy, inside;
    /* the caller of the call in progress (busy) */
    char *node;      /* our member node, while we may have one */
    int64_t session; /* the session that made it */
    int64_t czxid;   /* its creation */
    int64_t round;   /* the czxid of the "ready" node that let us in */
};

/* The members of one listing: every child but "ready", sorted bytewise
 * (Curator's order: the names are ASCII), with their czxid (0: gone since
 * the listing) when asked for. */
typedef struct listing {
    char **names;
    size_t n;
    int64_t *czxid;
} listing_t;

static void listing_free(listing_t *l)
{
    zkr__strvec_t v = {l->names, l->n};
    zkr__strvec_free(&v);
    free(l->czxid);
    memset(l, 0, sizeof *l);
}

/* An answer of our node's session (or ZSESSIONEXPIRED) as our code; a
 * lost connection is given up only at the deadline (zkr__bsend). */
static int node_error(int zrc)
{
    if (zrc == ZCONNECTIONLOSS)
        return ZKR_ETIMEDOUT;
    return zrc == ZSESSIONEXPIRED ? ZKR_ESESSIONLOST : zkr__rq_error(zrc);
}

/* List the members with a children watch (w's): any member or "ready"
 * coming or going is news.  Returns a ZooKeeper code. */
static int list_members(zkr_double_barrier_t *d, zkr__bwait_t *w, int64_t deadline, int stats, listing_t *out)
{
    memset(out, 0, sizeof *out);
    /* while we have a node, only on its session; after, on any */
    int64_t session = d->node ? d->session : 0;
    zkr__rq_t r = {.type = ZKR__RQ_CHILDREN, .path = d->path, .watch = w->sub};
    int zrc = zkr__bsend(d->c, &r, session, deadline);
    if (zrc == ZNONODE)
        zrc = ZOK; /* (a container reaped: nobody is in it, not even us) */
    if (zrc != ZOK) {
        zkr__rq_clear(&r);
        return zrc;
    }
    size_t k = 0;
    for (size_t i = 0; i < r.count; i++) {
        if (strcmp(r.names[i], READY) == 0)
            free(r.names[i]);
        else
            r.names[k++] = r.names[i];
    }
    out->names = r.names;
    out->n = k;
    r.names = NULL;
    r.count = 0;
    zkr__rq_clear(&r);
    if (!stats || k == 0)
        return ZOK;
    /* every member's stat asked at once (one round trip, not k); one whose
     * answer was lost is sent again alone, as zkr__bsend does */
    out->czxid = calloc(k, sizeof *out->czxid);
    zkr__rq_t *es = calloc(k, sizeof *es);
    char **paths = calloc(k, sizeof *paths);
    zrc = out->czxid && es && paths ? ZOK : ZSYSTEMERROR;
    for (size_t i = 0; i < k && zrc == ZOK; i++) {
        es[i].type = ZKR__RQ_EXISTS;
        es[i].path = paths[i] = zkr__path_join(d->path, out->names[i]);
        if (!paths[i])
            zrc = ZSYSTEMERROR;
    }
    if (zrc == ZOK && zkr__request_all(d->c, es, k, deadline) == ZSYSTEMERROR)
        zrc = ZSYSTEMERROR;
    for (size_t i = 0; i < k && zrc == ZOK; i++) {
        int rc = es[i].rc;
        if (session != 0 && es[i].session != 0 && es[i].session != session)
            rc = ZSESSIONEXPIRED;
        else if ((rc == ZCONNECTIONLOSS || rc == ZOPERATIONTIMEOUT) && zkr__remaining_ms(deadline) > 0)
            rc = zkr__bsend(d->c, &es[i], session, deadline);
        if (rc == ZOK)
            out->czxid[i] = es[i].stat.czxid;
        else if (rc != ZNONODE)
            zrc = rc;
    }
    for (size_t i = 0; es && paths && i < k; i++) {
        zkr__rq_clear(&es[i]);
        free(paths[i]);
    }
    free(es);
    free(paths);
    return zrc;
}

/* Index of our node in the listing, or -1. */
static long own_index(const zkr_double_barrier_t *d, const listing_t *l)
{
    const char *own = zkr__path_basename(d->node);
    for (size_t i = 0; i < l->n; i++)
        if (strcmp(l->names[i], own) == 0)
            return (long)i;
    return -1;
}

/* "ready": *czxid (0: none) and *version. */
static int ready_stat(zkr_double_barrier_t *d, int64_t deadline, int64_t *czxid, int *version)
{
    zkr__rq_t e = {.type = ZKR__RQ_EXISTS, .path = d->ready};
    int zrc = zkr__bsend(d->c, &e, d->session, deadline);
    *czxid = zrc == ZOK ? e.stat.czxid : 0;
    *version = zrc == ZOK ? e.stat.version : -1;
    zkr__rq_clear(&e);
    return zrc == ZNONODE ? ZOK : zrc;
}

/* Our node is gone: by its session's end, or deleted by someone. */
static int node_gone(zkr_double_barrier_t *d)
{
    int64_t now = 0;
    zkr_client_session(d->c, &now, NULL);
    return now == d->session && zkr_client_state(d->c) != ZKR_STATE_LOST ? ZKR_EDELETED : ZKR_ESESSIONLOST;
}

/* Delete our node (any version; gone is fine); if no answer comes in
 * time (or the call's time is up), in the background. */
static void node_drop(zkr_double_barrier_t *d, int64_t deadline)
{
    if (!d->node)
        return;
    int zrc = ZOPERATIONTIMEOUT;
    if (zkr__remaining_ms(deadline) > 0) {
        zkr__rq_t r = {.type = ZKR__RQ_DELETE, .path = d->node, .version = -1};
        zrc = zkr__bsend(d->c, &r, d->session, deadline);
        zkr__rq_clear(&r);
    }
    if (zrc != ZOK && zrc != ZNONODE)
        zkr__client_delete_later(d->c, d->node, d->session);
    free(d->node);
    d->node = NULL;
}

/* Create our member node: EPHEMERAL, a fresh UUID, parents as containers. */
static int node_create(zkr_double_barrier_t *d, int64_t deadline)
{
    char uuid[ZKR__UUID_LEN + 1];
    if (zkr__uuid(uuid) != 0)
        return ZKR_ESYSTEM;
    if (!(d->node = zkr__path_join(d->path, uuid)))
        return ZKR_ENOMEM;
    d->session = 0;
    zkr__rq_t r = {.type = ZKR__RQ_CREATE, .path = d->node, .mode = ZOO_EPHEMERAL, .parents = 1};
    int zrc = zkr__bsend(d->c, &r, 0, deadline);
    d->session = r.session;
    d->czxid = r.stat.czxid;
    if (zrc == ZNODEEXISTS) { /* sent again after a lost connection: ours if our session owns it */
        zkr__rq_t e = {.type = ZKR__RQ_EXISTS, .path = d->node};
        zrc = zkr__bsend(d->c, &e, d->session, deadline);
        if (zrc == ZOK && e.stat.ephemeralOwner != d->session)
            zrc = ZNODEEXISTS;
        d->czxid = e.stat.czxid;
        zkr__rq_clear(&e);
    }
    zkr__rq_clear(&r);
    if (zrc == ZOK)
        return ZKR_OK;
    if (zkr__zk_class(zrc) == ZKR__ZC_CONNECTION && d->session != 0)
        zkr__client_delete_later(d->c, d->node, d->session); /* it may have been made */
    free(d->node);
    d->node = NULL;
    return node_error(zrc);
}

/* One look of enter: 1 (in: d->round set), 0 (wait for news), 2 (look
 * again at once), or a code. */
static int enter_look(zkr_double_barrier_t *d, zkr__bwait_t *w, int64_t deadline)
{
    int64_t ready = 0;
    int version;
    listing_t l;
    int zrc = list_members(d, w, deadline, 0, &l);
    if (zrc == ZOK)
        zrc = ready_stat(d, deadline, &ready, &version);
    if (zrc == ZOK && own_index(d, &l) < 0) {
        listing_free(&l);
        return node_gone(d);
    }
    if (zrc == ZOK && ready > d->czxid) { /* made after our node: someone counted enough */
        listing_free(&l);
        d->round = ready;
        return 1;
    }
    size_t count = l.n;
    if (zrc == ZOK && ready != 0) { /* an earlier round's: count only those after it */
        listing_free(&l);
        zrc = list_members(d, w, deadline, 1, &l);
        count = 0;
        for (size_t i = 0; zrc == ZOK && i < l.n; i++)
            count += l.czxid[i] > ready;
    }
    listing_free(&l);
    if (zrc != ZOK)
        return node_error(zrc);
    if (count < d->members)
        return 0;
    if (ready != 0) { /* the old one goes, so that a new one can say "ready" */
        zkr__rq_t del = {.type = ZKR__RQ_DELETE, .path = d->ready, .version = version};
        zrc = zkr__bsend(d->c, &del, d->session, deadline);
        zkr__rq_clear(&del);
        if (zrc != ZOK && zrc != ZNONODE && zrc != ZBADVERSION)
            return node_error(zrc);
    }
    /* Curator: create().forPath(readyPath), PERSISTENT, no parents */
    zkr__rq_t cr = {.type = ZKR__RQ_CREATE, .path = d->ready, .mode = ZOO_PERSISTENT};
    zrc = zkr__bsend(d->c, &cr, d->session, deadline);
    int64_t made = cr.stat.czxid;
    zkr__rq_clear(&cr);
    if (zrc == ZNODEEXISTS)
        return 2; /* someone else's: newer than our node, or look why not */
    if (zrc != ZOK)
        return node_error(zrc);
    d->round = made;
    return 1;
}

/* One look of leave: 1 (all of our round have left), 0 (wait), 2 (look
 * again), or a code. */
static int leave_look(zkr_double_barrier_t *d, zkr__bwait_t *w, int64_t deadline)
{
    listing_t l;
    int zrc = list_members(d, w, deadline, 1, &l);
    if (zrc != ZOK) {
        listing_free(&l);
        /* gone from the barrier already: a session's end only delays the look */
        return !d->node && zkr__zk_class(zrc) == ZKR__ZC_SESSION && zrc != ZCLOSING ? 2 : node_error(zrc);
    }
    /* our round: the members older than its "ready" (names sorted) */
    long own = -1, lowest = -1;
    size_t others = 0;
    for (size_t i = 0; i < l.n; i++) {
        if (l.czxid[i] == 0 || l.czxid[i] >= d->round)
            continue;
        if (lowest < 0)
            lowest = (long)i;
        if (d->node && strcmp(l.names[i], zkr__path_basename(d->node)) == 0)
            own = (long)i;
        else
            others++;
    }
    listing_free(&l);
    if (d->node && own < 0)
        return node_gone(d);
    if (others == 0) {
        node_drop(d, deadline); /* the lowest goes last (Curator's order) */
        return 1;
    }
    if (d->node && own != lowest) {
        node_drop(d, deadline); /* not the lowest: ours goes first */
        return 2;
    }
    return 0;
}

/* Delete our round's "ready" (a later round's stays). */
static void ready_drop(zkr_double_barrier_t *d, int64_t deadline)
{
    int64_t czxid;
    int version;
    if (ready_stat(d, deadline, &czxid, &version) != ZOK || czxid != d->round)
        return;
    zkr__rq_t del = {.type = ZKR__RQ_DELETE, .path = d->ready, .version = version};
    zkr__bsend(d->c, &del, 0, deadline);
    zkr__rq_clear(&del);
}

static int end(zkr_double_barrier_t *d, int inside, int rc)
{
    pthread_mutex_lock(&d->mu);
    d->busy = 0;
    d->inside = inside;
    pthread_mutex_unlock(&d->mu);
    return rc;
}

/* Take the object for one call (ZKR_ESTATE: inside is not want_inside,
 * or a call is in progress) and start its waiter. */
static int begin(zkr_double_barrier_t *d, int want_inside, zkr__bwait_t *w)
{
    if (!d)
        return ZKR_EINVAL;
    pthread_mutex_lock(&d->mu);
    int rc = d->busy || d->inside != want_inside ? ZKR_ESTATE : ZKR_OK;
    if (rc == ZKR_OK)
        d->busy = 1;
    pthread_mutex_unlock(&d->mu);
    if (rc == ZKR_OK && (rc = zkr__bwait_start(w, d->c)) != ZKR_OK) {
        /* a leave refused on the callback thread is still inside; any
         * other failure (a closed client: our node went with its session)
         * leaves, without waiting for anyone */
        int inside = want_inside && rc == ZKR_EDEADLK;
        if (want_inside && !inside)
            node_drop(d, 0);
        end(d, inside, rc);
    }
    return rc;
}

/* Look until a look says done (ZKR_OK), or a code. */
static int look_until(zkr_double_barrier_t *d, zkr__bwait_t *w, zkr__bdeadline_t dl,
                      int (*look)(zkr_double_barrier_t *, zkr__bwait_t *, int64_t))
{
    for (;;) {
        uint64_t seen = zkr__bwait_news(w);
        int r = look(d, w, dl.send);
        if (r == 1)
            return ZKR_OK;
        if (r == 0)
            r = zkr__bwait_until(w, seen, dl.wait);
        if (r != ZKR_OK && r != 2)
            return r;
    }
}

int zkr_double_barrier_enter(zkr_double_barrier_t *d, int64_t timeout_ms)
{
    zkr__bwait_t w;
    int rc = begin(d, 0, &w);
    if (rc != ZKR_OK)
        return rc;
    zkr__bdeadline_t dl = zkr__bdeadline(timeout_ms);
    rc = node_create(d, dl.send);
    if (rc == ZKR_OK)
        rc = look_until(d, &w, dl, enter_look);
    if (rc != ZKR_OK)
        node_drop(d, dl.send);
    zkr__bwait_stop(&w);
    return end(d, rc == ZKR_OK, rc);
}

int zkr_double_barrier_leave(zkr_double_barrier_t *d, int64_t timeout_ms)
{
    zkr__bwait_t w;
    int rc = begin(d, 1, &w);
    if (rc != ZKR_OK)
        return rc;
    zkr__bdeadline_t dl = zkr__bdeadline(timeout_ms);
    rc = look_until(d, &w, dl, leave_look);
    if (rc == ZKR_OK)
        ready_drop(d, dl.send);
    node_drop(d, dl.send); /* we have left, whatever the others do */
    zkr__bwait_stop(&w);
    return end(d, 0, rc);
}

int zkr_double_barrier_new(zkr_double_barrier_t **out, zkr_client_t *c, const char *path, size_t members)
{
    if (out)
        *out = NULL;
    if (!out || !c || members == 0 || !zkr__path_valid(path))
        return ZKR_EINVAL;
    zkr_double_barrier_t *d = calloc(1, sizeof *d);
    if (!d)
        return ZKR_ENOMEM;
    d->path = strdup(path);
    d->ready = zkr__path_join(path, READY);
    int rc = d->path && d->ready ? ZKR_OK : ZKR_ENOMEM;
    if (rc == ZKR_OK && pthread_mutex_init(&d->mu, NULL) != 0)
        rc = ZKR_ESYSTEM;
    if (rc == ZKR_OK && (rc = zkr__client_retain(c)) != ZKR_OK)
        pthread_mutex_destroy(&d->mu);
    if (rc != ZKR_OK) {
        free(d->path);
        free(d->ready);
        free(d);
        return rc;
    }
    d->c = c;
    d->members = members;
    *out = d;
    return ZKR_OK;
}

int zkr_double_barrier_is_inside(zkr_double_barrier_t *d)
{
    if (!d)
        return 0;
    pthread_mutex_lock(&d->mu);
    int in = d->inside;
    pthread_mutex_unlock(&d->mu);
    return in;
}

void zkr_double_barrier_free(zkr_double_barrier_t *d)
{
    if (!d)
        return;
    if (d->node) /* inside: we leave, without waiting */
        zkr__client_delete_later(d->c, d->node, d->session);
    free(d->node);
    zkr__client_release(d->c);
    pthread_mutex_destroy(&d->mu);
    free(d->path);
    free(d->ready);
    free(d);
}

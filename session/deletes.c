/* Background deletes: nodes that must go but could not be deleted at once
 * (a release while disconnected, an abandoned create whose reply was lost:
 * deleted by its "_c_<uuid>-" prefix once we can list; a node at a path
 * that is not ours alone: deleted only while it is the one we made, by an
 * exists and a delete with the version read).  One retry policy for every
 * kind (see zkr__client_delete_later).  Guarded by c->mu; the
 * requests are asynchronous and sent from the client thread. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "session/core_private.h"

#define DELETE_RETRY_MIN_MS 100
#define DELETE_RETRY_MAX_MS 5000

struct zkr__pending_delete {
    uint64_t id;
    char *path;
    char *prefix; /* if set: delete every child of path starting with it */
    int64_t session;
    int owned;       /* only the node we made: czxid, or (czxid 0) owner */
    int64_t czxid, owner;
    int checked;     /* owned: the exists found it ours, at `version` */
    int32_t version;
    int inflight;
    int64_t retry_at;
    int64_t backoff;
    int failures; /* answers other than connection or session trouble */
    struct zkr__pending_delete *next;
};

typedef struct delete_op {
    zkr__req_t req; /* first */
    zkr_client_t *c;
    const zkr__zh_t *h; /* compared, never followed */
    uint64_t id;
} delete_op_t;

static void delete_free(zkr__pending_delete_t *d)
{
    free(d->prefix);
    free(d->path);
    free(d);
}

static void add_delete(zkr_client_t *c, const char *path, const char *prefix, int64_t session_id,
                       const int64_t *owned)
{
    zkr__pending_delete_t *d = calloc(1, sizeof *d);
    char *p = path ? strdup(path) : NULL;
    char *x = prefix ? strdup(prefix) : NULL;
    if (!d || !p || (prefix && !x)) {
        free(d);
        free(p);
        free(x);
        zkr__log(c, ZKR_LOG_ERROR, "out of memory: %s%s is left to vanish with its session", path ? path : "",
                 prefix ? "/<prefix>" : "");
        return;
    }
    d->path = p;
    d->prefix = x;
    d->session = session_id;
    if (owned) {
        d->owned = 1;
        d->czxid = owned[0];
        d->owner = owned[1];
    }
    d->backoff = DELETE_RETRY_MIN_MS;
    pthread_mutex_lock(&c->mu);
    if (c->closing) { /* its session's end deletes our nodes; nothing is sent any more */
        pthread_mutex_unlock(&c->mu);
        delete_free(d);
        return;
    }
    d->id = ++c->next_id;
    d->next = c->deletes;
    c->deletes = d;
    zkr__wake_locked(c);
    pthread_mutex_unlock(&c->mu);
}

void zkr__client_delete_later(zkr_client_t *c, const char *path, int64_t session_id)
{
    add_delete(c, path, NULL, session_id, NULL);
}

void zkr__client_delete_owned_later(zkr_client_t *c, const char *path, int64_t czxid, int64_t owner,
                                    int64_t session_id)
{
    const int64_t owned[2] = {czxid, owner};
    if (czxid != 0 || owner != 0)
        add_delete(c, path, NULL, session_id, owned);
}

void zkr__client_delete_prefix_later(zkr_client_t *c, const char *dir, const char *prefix,
                                     int64_t session_id)
{
    add_delete(c, dir, prefix, session_id, NULL);
}

int zkr__client_pending_deletes(zkr_client_t *c)
{
    int n = 0;
    pthread_mutex_lock(&c->mu);
    for (zkr__pending_delete_t *d = c->deletes; d; d = d->next)
        n++;
    pthread_mutex_unlock(&c->mu);
    return n;
}

/* The one retry policy.  Called with c->mu held when an answer for `op`
 * arrives.  Returns the entry, unlinked, if it is finished (done or given
 * up); NULL if it stays (to retry) or is unknown. */
static zkr__pending_delete_t *settle_locked(zkr_client_t *c, const delete_op_t *op, int zrc)
{
    zkr__answer_locked(c, op->h, zrc);
    for (zkr__pending_delete_t **p = &c->deletes; *p; p = &(*p)->next) {
        zkr__pending_delete_t *d = *p;
        if (d->id != op->id)
            continue;
        d->inflight = 0;
        zkr__zk_class_t k = zkr__zk_class(zrc);
        int done = zrc == ZOK || zrc == ZNONODE;
        d->checked = 0; /* (owned) look again before the next delete */
        if (!done && zrc == ZBADVERSION && d->owned) {
            d->retry_at = 0; /* written meanwhile: still ours? */
            return NULL;
        }
        if (!done && k == ZKR__ZC_FINAL && ++d->failures >= ZKR__DELETE_MAX_FAILURES) {
            zkr__log(c, ZKR_LOG_ERROR, "giving up deleting %s%s%s after %d refusals: %s", d->path,
                     d->prefix ? "/" : "", d->prefix ? d->prefix : "", d->failures, zerror(zrc));
            c->deletes_abandoned++;
            done = 1;
        }
        if (done) {
            *p = d->next;
            return d;
        }
        d->retry_at = zkr__now_ms() + d->backoff;
        d->backoff = d->backoff * 2 > DELETE_RETRY_MAX_MS ? DELETE_RETRY_MAX_MS : d->backoff * 2;
        return NULL;
    }
    return NULL;
}

/* A completion's part under the client mutex. */
static zkr__pending_delete_t *settle(const delete_op_t *op, int zrc)
{
    zkr_client_t *c = op->c;
    pthread_mutex_lock(&c->mu);
    zkr__pending_delete_t *d = settle_locked(c, op, zrc);
    zkr__wake_locked(c);
    pthread_mutex_unlock(&c->mu);
    return d;
}

static void delete_done(int zrc, const void *data)
{
    delete_op_t *op = (delete_op_t *)data;
    zkr__req_end(&op->req);
    zkr__pending_delete_t *d = settle(op, zrc);
    if (d)
        delete_free(d);
    free(op);
}

static void delete_closing(zkr__req_t *r)
{
    delete_done(ZCLOSING, r);
}

static void prefix_list_done(int zrc, const struct String_vector *names, const void *data)
{
    delete_op_t *op = (delete_op_t *)data;
    zkr__req_end(&op->req);
    zkr_client_t *c = op->c;
    zkr__pending_delete_t *d = settle(op, zrc);
    if (d && zrc == ZOK && names) {
        /* Names from the server are untrusted: compare within bounds. */
        size_t pl = strlen(d->prefix);
        for (int32_t i = 0; i < names->count; i++) {
            if (names->data[i] && strncmp(names->data[i], d->prefix, pl) == 0) {
                char *full = zkr__path_join(d->path, names->data[i]);
                if (full)
                    add_delete(c, full, NULL, d->session, NULL);
                else
                    zkr__log(c, ZKR_LOG_ERROR, "out of memory: %s/%s is left to vanish with its session", d->path,
                             names->data[i]);
                free(full);
            }
        }
    }
    if (d)
        delete_free(d);
    free(op);
}

/* An owned delete's exists: the node there is the one we made (delete
 * it, at the version read), another (nothing to do), or none. */
static void owned_exists_done(int zrc, const struct Stat *st, const void *data)
{
    delete_op_t *op = (delete_op_t *)data;
    zkr__req_end(&op->req);
    zkr_client_t *c = op->c;
    zkr__pending_delete_t *d = NULL;
    pthread_mutex_lock(&c->mu);
    int ours = 0;
    if (zrc == ZOK && st) {
        for (zkr__pending_delete_t *e = c->deletes; e; e = e->next) {
            if (e->id != op->id)
                continue;
            ours = e->czxid != 0 ? st->czxid == e->czxid : st->ephemeralOwner == e->owner;
            if (ours) {
                zkr__answer_locked(c, op->h, zrc);
                e->inflight = 0;
                e->checked = 1;
                e->version = st->version;
                e->retry_at = 0;
            }
            break;
        }
        if (!ours)
            zrc = ZNONODE; /* not the node we made: nothing of ours to delete */
    }
    if (!ours)
        d = settle_locked(c, op, zrc);
    zkr__wake_locked(c);
    pthread_mutex_unlock(&c->mu);
    if (d)
        delete_free(d);
    free(op);
}

static void owned_exists_closing(zkr__req_t *r)
{
    owned_exists_done(ZCLOSING, NULL, r);
}

static void prefix_list_closing(zkr__req_t *r)
{
    prefix_list_done(ZCLOSING, NULL, r);
}

int64_t zkr__deletes_run_locked(zkr_client_t *c)
{
    int64_t next = INT64_MAX;
    if (!c->cur || !zkr__usable_locked(c))
        return next;
    int64_t now = zkr__now_ms();
    zkr__zh_t *h = c->cur;
    for (zkr__pending_delete_t *d = c->deletes; d; d = d->next) {
        if (d->inflight)
            continue;
        if (d->retry_at > now) {
            if (d->retry_at < next)
                next = d->retry_at;
            continue;
        }
        delete_op_t *op = malloc(sizeof *op);
        if (!op) {
            d->retry_at = now + DELETE_RETRY_MIN_MS;
            next = d->retry_at < next ? d->retry_at : next;
            continue;
        }
        op->c = c;
        op->h = h;
        op->id = d->id;
        d->inflight = 1;
        int look = d->owned && !d->checked;
        zkr__req_start(h, &op->req, d->prefix ? prefix_list_closing : look ? owned_exists_closing : delete_closing);
        int zrc = d->prefix ? zoo_aget_children(h->zh, d->path, 0, prefix_list_done, op)
                  : look    ? zoo_aexists(h->zh, d->path, 0, owned_exists_done, op)
                            : zoo_adelete(h->zh, d->path, d->owned ? d->version : -1, delete_done, op);
        if (zrc != ZOK) {
            zkr__req_end(&op->req);
            free(op);
            d->inflight = 0;
            d->retry_at = now + d->backoff;
            if (d->retry_at < next)
                next = d->retry_at;
        }
    }
    return next;
}

int zkr__client_abandoned_deletes(zkr_client_t *c)
{
    pthread_mutex_lock(&c->mu);
    int n = c->deletes_abandoned;
    pthread_mutex_unlock(&c->mu);
    return n;
}

void zkr__deletes_free(zkr_client_t *c)
{
    while (c->deletes) {
        zkr__pending_delete_t *d = c->deletes;
        c->deletes = d->next;
        delete_free(d);
    }
}

/* The persistent node's thread (recipes/pnode_private.h): it makes the
 * node, keeps an exists watch on it, makes it again when it goes, writes
 * new data, waits while another session's node is at the path, finds a
 * protected node again after a lost answer; and, once stopped, deletes
 * the node it made (zkr__pnode_delete_own).  Every request waits at most
 * ZKR__PNODE_REQUEST_MS; a write to a node names the version just read,
 * so a node that is not ours is never overwritten or deleted. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "recipes/pnode_private.h"

#define IDLE INT64_MAX       /* look again only when kicked */
#define GO_CREATE (-1)       /* recover: nothing found, create */
#define NOT_CONNECTED_MS 500 /* (the state listener kicks sooner) */
#define WAIT_POLL_MS 10000   /* WAITING: the watch tells; a look now and then */
#define DELETE_TRIES 8

static int is_eph(const zkr_pnode_t *n)
{
    return n->mode == ZKR_PNODE_EPHEMERAL || n->mode == ZKR_PNODE_EPHEMERAL_SEQUENTIAL;
}

/* Curator's getCreateMode: a sequential mode's first create is
 * sequential, every later one takes the first one's number. */
static int create_mode(const zkr_pnode_t *n, int first)
{
    switch (n->mode) {
    case ZKR_PNODE_PERSISTENT: return ZOO_PERSISTENT;
    case ZKR_PNODE_EPHEMERAL_SEQUENTIAL: return first ? ZOO_EPHEMERAL_SEQUENTIAL : ZOO_EPHEMERAL;
    case ZKR_PNODE_PERSISTENT_SEQUENTIAL: return first ? ZOO_PERSISTENT_SEQUENTIAL : ZOO_PERSISTENT;
    default: return ZOO_EPHEMERAL;
    }
}

static int64_t req_deadline(void)
{
    return zkr__deadline(ZKR__PNODE_REQUEST_MS);
}

/* When to try again after a failed request. */
static int64_t retry_after(int zrc)
{
    if (zrc == ZCLOSING)
        return IDLE;
    if (zrc == ZOPERATIONTIMEOUT)
        return 0; /* it has waited already */
    return zkr__now_ms() + ZKR__PNODE_RETRY_MS;
}

/* ---- events ------------------------------------------------------------------------------ */

void zkr__pnode_tell(zkr_pnode_t *n, zkr_pnode_event_type_t type, const char *node_path, int rc)
{
    pthread_mutex_lock(&n->emu);
    int listening = n->fn != NULL && !n->dead;
    pthread_mutex_unlock(&n->emu);
    if (!listening)
        return; /* one set later hears what comes after */
    zkr__pevent_t *e = calloc(1, sizeof *e);
    if (e && !(e->node_path = strdup(node_path ? node_path : ""))) {
        free(e);
        e = NULL;
    }
    if (!e) {
        zkr__log(n->c, ZKR_LOG_ERROR, "pnode %s: out of memory, a %s event is not told", n->path,
                 zkr_pnode_event_name(type));
        return;
    }
    e->type = type;
    e->rc = rc;
    pthread_mutex_lock(&n->emu);
    int post = n->fn != NULL && !n->dead;
    if (post) {
        if (n->etail)
            n->etail->next = e;
        else
            n->ehead = e;
        n->etail = e;
    }
    pthread_mutex_unlock(&n->emu);
    if (!post) {
        free(e->node_path);
        free(e);
        return;
    }
    zkr__sub_post(n->c, n->sub, ZKR__PNODE_DELIVER, NULL);
}

const char *zkr_pnode_event_name(zkr_pnode_event_type_t type)
{
    switch (type) {
    case ZKR_PNODE_CREATED: return "CREATED";
    case ZKR_PNODE_DELETED: return "DELETED";
    case ZKR_PNODE_WAITING: return "WAITING";
    case ZKR_PNODE_FAILED: return "FAILED";
    }
    return "UNKNOWN";
}

/* ---- the node's state (changed under mu, told after) -------------------------------------- */

/* `path` (czxid; ephemeral of session `owner`, or 0: persistent) is on the
 * server and ours, with data generation gen. */
static void have_node(zkr_pnode_t *n, const char *path, int64_t czxid, int64_t owner, uint64_t gen)
{
    char *p = strdup(path);
    if (!p) {
        zkr__log(n->c, ZKR_LOG_ERROR, "pnode %s: out of memory", n->path);
        return;
    }
    n->plain_unknown = 0;
    n->waiting_czxid = 0;
    pthread_mutex_lock(&n->mu);
    free(n->node);
    n->node = p;
    n->czxid = czxid;
    n->node_owner = owner;
    if (gen > n->written_gen)
        n->written_gen = gen;
    pthread_cond_broadcast(&n->cond);
    pthread_mutex_unlock(&n->mu);
    zkr__pnode_tell(n, ZKR_PNODE_CREATED, path, ZKR_OK);
}

/* Our node is gone (or is not ours any more): made again next. */
static void lose_node(zkr_pnode_t *n)
{
    pthread_mutex_lock(&n->mu);
    char *p = n->node;
    n->node = NULL;
    n->czxid = 0;
    pthread_cond_broadcast(&n->cond);
    pthread_mutex_unlock(&n->mu);
    if (p)
        zkr__pnode_tell(n, ZKR_PNODE_DELETED, p, ZKR_OK);
    free(p);
}

/* The server refuses for good (on this session). */
static void fail(zkr_pnode_t *n, int zrc, int64_t session, const char *path)
{
    int rc = zkr__rq_error(zrc);
    zkr__log(n->c, ZKR_LOG_ERROR, "pnode %s: the server refuses %s: %s; tried again on a new session", n->path,
             path, zerror(zrc));
    pthread_mutex_lock(&n->mu);
    n->failed_rc = rc;
    n->failed_session = session;
    pthread_cond_broadcast(&n->cond);
    pthread_mutex_unlock(&n->mu);
    zkr__pnode_tell(n, ZKR_PNODE_FAILED, path, rc);
}

/* A copy of the data to send (never NULL unless out of memory). */
static char *data_copy(zkr_pnode_t *n, size_t *len, uint64_t *gen)
{
    pthread_mutex_lock(&n->mu);
    char *d = malloc(n->data_len + 1);
    if (d) {
        memcpy(d, n->data, n->data_len + 1);
        *len = n->data_len;
        *gen = n->data_gen;
    }
    pthread_mutex_unlock(&n->mu);
    if (!d)
        zkr__log(n->c, ZKR_LOG_ERROR, "pnode %s: out of memory", n->path);
    return d;
}

/* Write our data to `path` at `version` (the one just read: a node
 * replaced meanwhile is not written).  ZOK: *gen written, *czxid set. */
static int write_data(zkr_pnode_t *n, const char *path, int version, uint64_t *gen, int64_t *czxid)
{
    size_t len;
    char *data = data_copy(n, &len, gen);
    if (!data)
        return ZSYSTEMERROR;
    zkr__rq_t r = {.type = ZKR__RQ_SET, .path = path, .data = data, .data_len = (int)len, .version = version};
    int zrc = zkr__request(n->c, &r, req_deadline());
    *czxid = r.stat.czxid;
    zkr__rq_clear(&r);
    free(data);
    return zrc;
}

/* A node at `path` that is ours (ephemeral of this session, `owner`, or
 * persistent: 0): our data over it, then it is our node. */
static int64_t adopt(zkr_pnode_t *n, const char *path, int version, int64_t owner)
{
    uint64_t gen;
    int64_t czxid;
    int zrc = write_data(n, path, version, &gen, &czxid);
    if (zrc == ZOK) {
        have_node(n, path, czxid, owner, gen);
        return 0; /* (watched next) */
    }
    if (zrc == ZNONODE || zrc == ZBADVERSION)
        return 0; /* gone or changed meanwhile: look again */
    if (zkr__zk_class(zrc) == ZKR__ZC_FINAL && zrc != ZSYSTEMERROR) {
        int64_t session = 0;
        zkr_client_session(n->c, &session, NULL);
        fail(n, zrc, session, path);
        return IDLE;
    }
    return retry_after(zrc);
}

/* ZNODEEXISTS at `path`: adopt it if it is ours, else wait (watched) for
 * it to go. */
static int64_t look_at_existing(zkr_pnode_t *n, const char *path)
{
    zkr__rq_t r = {.type = ZKR__RQ_EXISTS, .path = path, .watch = n->sub};
    int zrc = zkr__request(n->c, &r, req_deadline());
    int64_t next;
    if (zrc == ZNONODE) {
        next = 0;
    } else if (zrc == ZOK) {
        int64_t owner = r.stat.ephemeralOwner;
        if (owner == 0 || owner == r.session) {
            if ((owner == 0) == is_eph(n))
                zkr__log(n->c, ZKR_LOG_WARN, "pnode %s: adopting a%s node already there (mode %d)", path,
                         owner ? "n ephemeral" : " persistent", (int)n->mode);
            next = adopt(n, path, r.stat.version, owner);
        } else {
            if (n->waiting_czxid != r.stat.czxid) {
                n->waiting_czxid = r.stat.czxid;
                zkr__log(n->c, ZKR_LOG_INFO, "pnode %s: another session's node is there (0x%llx): waiting", path,
                         (unsigned long long)owner);
                zkr__pnode_tell(n, ZKR_PNODE_WAITING, path, ZKR_OK);
            }
            next = zkr__now_ms() + WAIT_POLL_MS;
        }
    } else {
        next = retry_after(zrc);
    }
    zkr__rq_clear(&r);
    return next;
}

/* ---- the steps ---------------------------------------------------------------------------- */

/* We have a node: is it still there and ours (and watched)?  New data is
 * written to it. */
static int64_t check_node(zkr_pnode_t *n, int64_t session)
{
    pthread_mutex_lock(&n->mu);
    char *node = strdup(n->node);
    int64_t czxid = n->czxid, owner = n->node_owner;
    int stale = n->data_gen != n->written_gen;
    pthread_mutex_unlock(&n->mu);
    if (!node)
        return zkr__now_ms() + ZKR__PNODE_RETRY_MS;
    int64_t next;
    zkr__rq_t r = {.type = ZKR__RQ_EXISTS, .path = node, .watch = n->sub};
    int zrc = owner != 0 && owner != session ? ZNONODE : zkr__request(n->c, &r, req_deadline());
    if (zrc == ZOK && (r.stat.czxid != czxid || r.stat.ephemeralOwner != owner))
        zrc = ZNONODE; /* another node at its path now */
    if (zrc == ZNONODE) {
        lose_node(n);
        next = 0;
    } else if (zrc != ZOK) {
        next = retry_after(zrc);
    } else if (!stale) {
        next = IDLE;
    } else {
        uint64_t gen;
        int64_t cz;
        int wrc = write_data(n, node, r.stat.version, &gen, &cz);
        next = 0;
        if (wrc == ZOK || (zkr__zk_class(wrc) == ZKR__ZC_FINAL && wrc != ZNONODE && wrc != ZBADVERSION &&
                           wrc != ZSYSTEMERROR)) {
            if (wrc != ZOK)
                zkr__log(n->c, ZKR_LOG_ERROR, "pnode %s: the server refuses new data: %s", node, zerror(wrc));
            pthread_mutex_lock(&n->mu);
            if (gen > n->written_gen)
                n->written_gen = gen;
            pthread_cond_broadcast(&n->cond);
            pthread_mutex_unlock(&n->mu);
        } else if (wrc != ZNONODE && wrc != ZBADVERSION) {
            next = retry_after(wrc);
        }
    }
    zkr__rq_clear(&r);
    free(node);
    return next;
}

/* A protected create whose answer was lost: find it by its prefix.  Ours
 * (this session's, or persistent) is adopted; another session's is
 * deleted.  GO_CREATE when there is none. */
static int64_t recover(zkr_pnode_t *n)
{
    zkr__rq_t r = {.type = ZKR__RQ_CHILDREN, .path = n->dir};
    int zrc = zkr__request(n->c, &r, req_deadline());
    int64_t next = GO_CREATE;
    char *full = NULL;
    if (zrc == ZOK) {
        for (size_t i = 0; i < r.count && !full; i++)
            if (zkr__is_protected_for(r.names[i], n->pending) && !(full = zkr__path_join(n->dir, r.names[i])))
                next = zkr__now_ms() + ZKR__PNODE_RETRY_MS;
    } else if (zrc != ZNONODE) {
        next = retry_after(zrc);
    }
    zkr__rq_clear(&r);
    if (!full) {
        if (next == GO_CREATE)
            n->pending[0] = '\0';
        return next;
    }
    zkr__rq_t e = {.type = ZKR__RQ_EXISTS, .path = full};
    zrc = zkr__request(n->c, &e, req_deadline());
    if (zrc == ZOK && (e.stat.ephemeralOwner == 0 || e.stat.ephemeralOwner == e.session)) {
        n->pending[0] = '\0';
        if (!n->fixed)
            n->fixed = strdup(full); /* (the first create's: made again under its name) */
        next = adopt(n, full, e.stat.version, e.stat.ephemeralOwner);
    } else if (zrc == ZOK) {
        zkr__rq_t d = {.type = ZKR__RQ_DELETE, .path = full, .version = e.stat.version};
        zrc = zkr__request(n->c, &d, req_deadline());
        zkr__rq_clear(&d);
    }
    if (zrc == ZNONODE) {
        n->pending[0] = '\0';
        next = GO_CREATE;
    } else if (zrc != ZOK) {
        next = retry_after(zrc);
    } else if (next == GO_CREATE) {
        n->pending[0] = '\0'; /* the other session's node deleted */
    }
    zkr__rq_clear(&e);
    free(full);
    return next;
}

/* The name to create: the fixed one, or for a sequential mode's first
 * create a protected name with a fresh uuid. */
static char *create_target(zkr_pnode_t *n, char uuid[ZKR__UUID_LEN + 1], int *first)
{
    *first = 0;
    if (n->fixed)
        return strdup(n->fixed);
    if (zkr__uuid(uuid) != 0)
        return NULL;
    *first = 1;
    return zkr__protected_path(n->dir, uuid, zkr__path_basename(n->path));
}

static int64_t create(zkr_pnode_t *n, int64_t session)
{
    char uuid[ZKR__UUID_LEN + 1];
    int first;
    size_t len;
    uint64_t gen;
    char *target = create_target(n, uuid, &first);
    char *data = target ? data_copy(n, &len, &gen) : NULL;
    if (!data) {
        free(target);
        zkr__log(n->c, ZKR_LOG_ERROR, "pnode %s: out of memory (or no randomness)", n->path);
        return zkr__now_ms() + ZKR__PNODE_RETRY_MS;
    }
    zkr__rq_t r = {.type = ZKR__RQ_CREATE, .path = target, .data = data, .data_len = (int)len,
                   .mode = create_mode(n, first), .parents = 1};
    int zrc = zkr__request(n->c, &r, req_deadline());
    int64_t next;
    if (zrc == ZOK || zrc == ZNODEEXISTS)
        n->plain_unknown = 0; /* a session's requests are answered in order */
    if (zrc == ZOK && r.created) {
        if (first)
            n->fixed = strdup(r.created); /* NULL (no memory): a first create again */
        have_node(n, r.created, r.stat.czxid, is_eph(n) ? r.session : 0, gen);
        next = 0;
    } else if (zrc == ZNODEEXISTS) {
        next = look_at_existing(n, target);
    } else if (zrc == ZNONODE) {
        next = zkr__now_ms() + ZKR__PNODE_RETRY_MS; /* a parent gone meanwhile */
    } else if (zkr__zk_class(zrc) == ZKR__ZC_FINAL && zrc != ZSYSTEMERROR) {
        fail(n, zrc, session, target);
        next = IDLE;
    } else {
        if (r.session != 0 && zkr__zk_class(zrc) != ZKR__ZC_FINAL) {
            /* sent, fate unknown */
            if (first) {
                memcpy(n->pending, uuid, sizeof n->pending);
                n->pending_session = r.session;
            } else {
                n->plain_unknown = 1;
                n->plain_session = r.session;
            }
        }
        next = retry_after(zrc);
    }
    zkr__rq_clear(&r);
    free(data);
    free(target);
    return next;
}

/* One look: when to look again. */
static int64_t step(zkr_pnode_t *n)
{
    zkr_state_t st = zkr_client_state(n->c);
    if (st == ZKR_STATE_CLOSED)
        return IDLE;
    pthread_mutex_lock(&n->mu);
    int ephemeral = n->node != NULL && n->node_owner != 0;
    pthread_mutex_unlock(&n->mu);
    if (ephemeral && st == ZKR_STATE_LOST)
        lose_node(n); /* went with its session */
    int64_t session = 0;
    if (!zkr_client_is_connected(n->c) || zkr_client_session(n->c, &session, NULL) != ZKR_OK)
        return zkr__now_ms() + NOT_CONNECTED_MS;
    pthread_mutex_lock(&n->mu);
    int failed = n->failed_rc != 0 && n->failed_session == session;
    if (!failed)
        n->failed_rc = 0;
    int has = n->node != NULL;
    pthread_mutex_unlock(&n->mu);
    if (failed)
        return IDLE;
    if (has)
        return check_node(n, session);
    if (n->pending[0]) {
        int64_t next = recover(n);
        if (next != GO_CREATE)
            return next;
    }
    return create(n, session);
}

void *zkr__pnode_main(void *arg)
{
    zkr_pnode_t *n = arg;
    int64_t next = 0;
    uint64_t seen = 0;
    pthread_mutex_lock(&n->mu);
    while (!n->stop) {
        if (n->kicks == seen && next > zkr__now_ms()) {
            zkr__cond_wait_until(&n->cond, &n->mu, next);
            continue;
        }
        seen = n->kicks;
        pthread_mutex_unlock(&n->mu);
        next = step(n);
        pthread_mutex_lock(&n->mu);
    }
    pthread_mutex_unlock(&n->mu);
    return NULL;
}

/* ---- the delete at free ----------------------------------------------------------------------- */

/* Delete `path` while it is the node of czxid (czxid 0: of ephemeral
 * owner `owner`), until the deadline.  ZOK (gone, or not ours), or why
 * not. */
static int delete_if_ours(zkr_pnode_t *n, const char *path, int64_t czxid, int64_t owner, int64_t deadline)
{
    int zrc = ZOK;
    for (int i = 0; i < DELETE_TRIES; i++) {
        zkr__rq_t r = {.type = ZKR__RQ_EXISTS, .path = path};
        zrc = zkr__request(n->c, &r, deadline);
        int ours = czxid != 0 ? r.stat.czxid == czxid : r.stat.ephemeralOwner == owner;
        int version = r.stat.version;
        zkr__rq_clear(&r);
        if (zrc == ZNONODE || (zrc == ZOK && !ours))
            return ZOK;
        if (zrc != ZOK)
            return zrc;
        zkr__rq_t d = {.type = ZKR__RQ_DELETE, .path = path, .version = version};
        zrc = zkr__request(n->c, &d, deadline);
        zkr__rq_clear(&d);
        if (zrc == ZOK || zrc == ZNONODE)
            return ZOK;
        if (zrc != ZBADVERSION)
            return zrc;
    }
    return zrc;
}

void zkr__pnode_delete_own(zkr_pnode_t *n, int64_t deadline)
{
    if (n->node) {
        int zrc = delete_if_ours(n, n->node, n->czxid, 0, deadline);
        zkr__zk_class_t k = zkr__zk_class(zrc);
        if (zrc == ZCLOSING) {
            if (n->node_owner == 0)
                zkr__log(n->c, ZKR_LOG_WARN, "pnode %s: the client closed first: the persistent node %s stays",
                         n->path, n->node);
        } else if (k == ZKR__ZC_CONNECTION || k == ZKR__ZC_SESSION || zrc == ZSYSTEMERROR) {
            /* finished once the link allows (an ephemeral one goes with
             * its session anyway; a persistent one is deleted on the next
             * session too), still only if it is ours */
            zkr__client_delete_owned_later(n->c, n->node, n->czxid, 0, n->node_owner);
        } else if (zrc != ZOK) {
            zkr__log(n->c, ZKR_LOG_ERROR, "pnode %s: the server refuses to delete %s: %s", n->path, n->node,
                     zerror(zrc));
        }
    }
    if (n->pending[0]) {
        char prefix[ZKR__PROTECTED_PREFIX_LEN + 1];
        zkr__protected_name(prefix, sizeof prefix, n->pending, "");
        zkr__client_delete_prefix_later(n->c, n->dir, prefix, n->pending_session);
    }
    if (n->plain_unknown) {
        /* a create whose answer was lost: an ephemeral node of that session
         * at the path is ours; a persistent one cannot be told from
         * another's, and is adopted as ours (the adoption rule) only if
         * it can be seen now */
        if (is_eph(n)) {
            zkr__client_delete_owned_later(n->c, n->fixed, 0, n->plain_session, n->plain_session);
            return;
        }
        zkr__rq_t r = {.type = ZKR__RQ_EXISTS, .path = n->fixed};
        int zrc = zkr__request(n->c, &r, deadline);
        int64_t czxid = r.stat.czxid, owner = r.stat.ephemeralOwner;
        zkr__rq_clear(&r);
        if (zrc == ZOK && owner == 0 && delete_if_ours(n, n->fixed, czxid, 0, deadline) != ZOK)
            zkr__client_delete_owned_later(n->c, n->fixed, czxid, 0, n->plain_session);
        else if (zrc != ZOK && zrc != ZNONODE)
            zkr__log(n->c, ZKR_LOG_WARN, "pnode %s: a create whose answer was lost may yet make it: not deleted",
                     n->path);
    }
}

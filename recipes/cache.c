/* The cache (include/zkr/cache.h): its thread sends the reads the copy
 * needs (pipelined, many at once: the C client's asynchronous calls, sent
 * inside zkr_client_with_handle), and applies what comes back, in order:
 * the replies (each carries the generation of the node it was sent for:
 * one sent before a node was dropped or the session lost is ignored), the
 * watch events (through a subscription: the callback thread hands them
 * over) and the client's states.  A change is decided by czxid and mzxid.
 * Events go to the listener through the same subscription. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "recipes/cache_private.h"

#define WINDOW 4096  /* reads out at once */
#define RETRY_MS 500 /* reads that failed (no connection) are sent again */
#define POLL_MS 100  /* the thread looks at stop this often */

static void item_free(zkr__citem_t *it)
{
    free(it->path);
    free(it->data);
    zkr__strvec_free(&it->kids);
    free(it);
}

/* ---- the inbox --------------------------------------------------------------------- */

static void inbox_push(zkr__inbox_t *in, zkr__citem_t *it)
{
    pthread_mutex_lock(&in->mu);
    if (in->dead) {
        pthread_mutex_unlock(&in->mu);
        item_free(it);
        return;
    }
    it->next = NULL;
    if (in->tail)
        in->tail->next = it;
    else
        in->head = it;
    in->tail = it;
    pthread_cond_broadcast(&in->cond);
    pthread_mutex_unlock(&in->mu);
}

static void inbox_unref(zkr__inbox_t *in)
{
    pthread_mutex_lock(&in->mu);
    int last = --in->refs == 0;
    pthread_mutex_unlock(&in->mu);
    if (!last)
        return;
    while (in->head) {
        zkr__citem_t *it = in->head;
        in->head = it->next;
        item_free(it);
    }
    zkr__sync_destroy(&in->mu, &in->cond);
    free(in);
}

/* A reply (the C client's completion thread): hand the item sent with
 * the request to the cache thread. */
static void reply(zkr__citem_t *it, int rc, const struct Stat *st)
{
    zkr__inbox_t *in = it->in;
    it->in = NULL;
    it->rc = rc;
    if (st)
        it->st = *st;
    inbox_push(in, it);
    inbox_unref(in);
}

static void data_done(int rc, const char *value, int len, const struct Stat *st, const void *arg)
{
    zkr__citem_t *it = (zkr__citem_t *)arg;
    if (rc == ZOK) {
        size_t n = value && len > 0 ? (size_t)len : 0;
        if ((it->data = malloc(n + 1))) {
            if (n)
                memcpy(it->data, value, n);
            it->data[n] = '\0';
            it->len = (int)n;
        } else {
            rc = ZSYSTEMERROR; /* read again */
        }
    }
    reply(it, rc, rc == ZOK ? st : NULL);
}

static void kids_done(int rc, const struct String_vector *sv, const struct Stat *st, const void *arg)
{
    zkr__citem_t *it = (zkr__citem_t *)arg;
    if (rc == ZOK && sv && sv->count > 0 && zkr__strvec_copy(&it->kids, sv->data, (size_t)sv->count) != 0)
        rc = ZSYSTEMERROR;
    reply(it, rc, rc == ZOK ? st : NULL);
}

static void stat_done(int rc, const struct Stat *st, const void *arg)
{
    reply((zkr__citem_t *)arg, rc, rc == ZOK ? st : NULL);
}

/* ---- sending ------------------------------------------------------------------------- */

static int send_one(zhandle_t *zh, zkr_cache_t *k, zkr__cnode_t *n, int kind)
{
    zkr__citem_t *it = calloc(1, sizeof *it);
    if (!it || !(it->path = strdup(n->path))) {
        free(it);
        return ZKR_ENOMEM;
    }
    it->kind = kind;
    it->gen = n->gen;
    it->in = k->in;
    pthread_mutex_lock(&k->in->mu);
    k->in->refs++;
    pthread_mutex_unlock(&k->in->mu);
    watcher_fn w = zkr__sub_watcher();
    int zrc;
    switch (kind) {
    case ZKR__IT_DATA: zrc = zoo_awget(zh, n->path, w, k->sub, data_done, it); break;
    case ZKR__IT_KIDS: zrc = zoo_awget_children2(zh, n->path, w, k->sub, kids_done, it); break;
    case ZKR__IT_STAT: zrc = zoo_aexists(zh, n->path, 0, stat_done, it); break;
    default: zrc = zoo_awexists(zh, n->path, w, k->sub, stat_done, it); break;
    }
    if (zrc != ZOK) {
        it->in = NULL;
        item_free(it);
        inbox_unref(k->in);
        return zkr__zk_error(zrc);
    }
    k->inflight++;
    return ZKR_OK;
}

static void resync(zkr_cache_t *k, zkr__cnode_t *n)
{
    n->gen = ++k->next_gen;
    zkr__cache_mark(k, n, zkr__cache_all_needs(k, n));
    for (size_t i = 0; i < n->nkids; i++)
        resync(k, n->kids[i]);
}

/* A new session (the old one's watches are gone): everything read again;
 * replies sent before are ignored. */
static void start_resync(zkr_cache_t *k)
{
    resync(k, k->root);
    pthread_mutex_lock(&k->in->mu);
    k->resyncing = k->initialized;
    k->fresh = 0;
    pthread_mutex_unlock(&k->in->mu);
}

static void new_session(zkr_cache_t *k, int64_t session)
{
    if (session == k->session || session == 0)
        return;
    if (k->session != 0)
        start_resync(k);
    k->session = session;
}

/* Inside zkr_client_with_handle: send what is needed, up to the window.
 * What a failed send needed is marked again (a read sent twice is
 * harmless: replies are compared by zxid). */
static int send_fn(zhandle_t *zh, int64_t session, void *arg)
{
    zkr_cache_t *k = arg;
    new_session(k, session);
    int rc = ZKR_OK;
    while (rc == ZKR_OK && k->dirty_head && k->inflight < WINDOW) {
        zkr__cnode_t *n = k->dirty_head;
        unsigned need = n->need;
        zkr__cache_unlist(k, n);
        if (need & ZKR__NEED_DATA)
            rc = send_one(zh, k, n, zkr__cache_data_kind(k, n));
        if (rc == ZKR_OK && (need & ZKR__NEED_EXISTS))
            rc = send_one(zh, k, n, ZKR__IT_EXISTS);
        if (rc == ZKR_OK && (need & ZKR__NEED_KIDS))
            rc = send_one(zh, k, n, ZKR__IT_KIDS);
        if (rc == ZKR_OK && (need & ZKR__NEED_STAT))
            rc = send_one(zh, k, n, ZKR__IT_STAT);
        if (rc != ZKR_OK)
            zkr__cache_mark(k, n, need);
    }
    return rc;
}

/* ---- the thread ------------------------------------------------------------------------ */

/* A state of the client (in order with the events). */
static void apply_state(zkr_cache_t *k, zkr_state_t state)
{
    int up = state == ZKR_STATE_CONNECTED || state == ZKR_STATE_RECONNECTED || state == ZKR_STATE_READ_ONLY;
    int64_t session = 0;
    if (up)
        zkr_client_session(k->c, &session, NULL);
    pthread_mutex_lock(&k->in->mu);
    k->connected = up;
    if (!up)
        k->fresh = 0;
    int initialized = k->initialized;
    pthread_mutex_unlock(&k->in->mu);
    zkr__cache_tell(k, ZKR_CACHE_STATE, NULL, state);
    if (!up)
        return;
    if (session != k->session && k->session != 0) {
        new_session(k, session);
    } else if (initialized) {
        /* The same session: the C client set every watch again, and the
         * server fired those whose node changed.  One read of the path
         * checks what a watch cannot: its children's count (pzxid). */
        pthread_mutex_lock(&k->in->mu);
        k->fresh = 0;
        pthread_mutex_unlock(&k->in->mu);
        zkr__cache_mark(k, k->root, ZKR__NEED_DATA);
    }
    if (k->session == 0)
        k->session = session;
}

/* Bytes of the paths the cache watches (what the C client sends again,
 * in one SetWatches packet, at every reconnection). */
static size_t watched_bytes(const zkr_cache_t *k, const zkr__cnode_t *n)
{
    size_t one = strlen(n->path) + 4; /* (each path is length-prefixed) */
    size_t b = (n->live && (k->opt.data || n->depth == 0) ? one : 0) + (n->listed ? one : 0);
    for (size_t i = 0; i < n->nkids; i++)
        b += watched_bytes(k, n->kids[i]);
    return b;
}

/* ZooKeeper 3.8's C client sends every watched path in one packet at a
 * reconnection; past the server's jute.maxbuffer (1 MB by default) the
 * server drops the connection, every time: the client never reconnects. */
#define SETWATCHES_WARN_BYTES (768u * 1024u)

static void check_watch_budget(zkr_cache_t *k)
{
    size_t b = watched_bytes(k, k->root);
    if (b > SETWATCHES_WARN_BYTES)
        zkr__log(k->c, ZKR_LOG_WARN,
                 "cache %s: its watches take %zu bytes of paths, which the ZooKeeper C client sends in one packet "
                 "at every reconnection; a server refuses a packet over its jute.maxbuffer (1 MB by default): "
                 "cache less (max_depth, a filter, a chroot), or raise jute.maxbuffer",
                 k->path, b);
}

/* Nothing to read and nothing out: the copy is the server's. */
static void settle(zkr_cache_t *k)
{
    if (k->dirty_head || k->inflight > 0 || !k->root_seen)
        return;
    pthread_mutex_lock(&k->in->mu);
    int tell = !k->initialized || k->resyncing;
    pthread_mutex_unlock(&k->in->mu);
    /* queued before zkr_cache_wait_initialized can return: a listener set
     * after it is told nothing of the first load */
    if (tell) {
        zkr__cache_tell(k, ZKR_CACHE_INITIALIZED, NULL, 0);
        check_watch_budget(k);
    }
    pthread_mutex_lock(&k->in->mu);
    k->initialized = 1;
    k->resyncing = 0;
    k->fresh = k->connected;
    pthread_cond_broadcast(&k->in->cond);
    pthread_mutex_unlock(&k->in->mu);
}

static void *cache_main(void *arg)
{
    zkr_cache_t *k = arg;
    zkr__inbox_t *in = k->in;
    int64_t retry_at = 0;
    pthread_mutex_lock(&in->mu);
    while (!k->stop) {
        zkr__citem_t *items = in->head;
        in->head = in->tail = NULL;
        int64_t now = zkr__now_ms();
        /* (without a connection, fewer tries) */
        int64_t send_at = k->connected ? retry_at : retry_at + 4 * RETRY_MS;
        int can_send = k->dirty_head && k->inflight < WINDOW && now >= send_at;
        if (!items && !can_send) {
            int64_t until = now + POLL_MS;
            if (k->dirty_head && retry_at > now && retry_at < until)
                until = retry_at;
            zkr__cond_wait_until(&in->cond, &in->mu, until);
            continue;
        }
        pthread_mutex_unlock(&in->mu);
        int retry = 0;
        if (items) {
            pthread_rwlock_wrlock(&k->lock);
            for (zkr__citem_t *it = items; it; it = it->next) {
                if (it->kind == ZKR__IT_STATE)
                    continue;
                k->inflight -= zkr__cache_apply(k, it, &retry);
            }
            pthread_rwlock_unlock(&k->lock);
            while (items) {
                zkr__citem_t *it = items;
                items = it->next;
                if (it->kind == ZKR__IT_STATE)
                    apply_state(k, (zkr_state_t)it->type);
                item_free(it);
            }
        }
        if (retry)
            retry_at = zkr__now_ms() + RETRY_MS;
        if (k->dirty_head && zkr__now_ms() >= retry_at && zkr_client_with_handle(k->c, send_fn, k) != ZKR_OK)
            retry_at = zkr__now_ms() + RETRY_MS;
        settle(k);
        pthread_mutex_lock(&in->mu);
    }
    pthread_mutex_unlock(&in->mu);
    return NULL;
}

/* ---- the callback thread: watch events, deliveries, states ------------------------------ */

static void on_event(zkr_client_t *c, void *arg, int type, const char *path)
{
    (void)c;
    zkr_cache_t *k = arg;
    if (type == ZKR__CACHE_DELIVER) {
        zkr__cache_deliver(k);
        return;
    }
    zkr__citem_t *it = calloc(1, sizeof *it);
    if (!it || !path || !(it->path = strdup(path))) {
        free(it);
        zkr__log(k->c, ZKR_LOG_ERROR, "cache %s: out of memory, a watch event is lost", k->path);
        return;
    }
    it->kind = ZKR__IT_WATCH;
    it->type = type;
    inbox_push(k->in, it);
}

static void on_state(zkr_client_t *c, zkr_state_t state, void *ctx)
{
    (void)c;
    zkr_cache_t *k = ctx;
    zkr__citem_t *it = calloc(1, sizeof *it);
    if (!it) {
        zkr__log(k->c, ZKR_LOG_ERROR, "cache %s: out of memory, a state is lost", k->path);
        return;
    }
    it->kind = ZKR__IT_STATE;
    it->type = (int)state;
    inbox_push(k->in, it);
}

/* ---- the public calls ------------------------------------------------------------------- */

void zkr_cache_options_init_size(zkr_cache_options_t *opt, size_t size)
{
    if (!opt || size < sizeof(size_t))
        return;
    zkr_cache_options_t d;
    memset(&d, 0, sizeof d);
    d.size = size < sizeof d ? size : sizeof d;
    d.shape = ZKR_CACHE_TREE;
    d.max_depth = -1;
    d.data = 1;
    memcpy(opt, &d, d.size);
}

static void cache_destroy(zkr_cache_t *k)
{
    if (k->sub)
        zkr__sub_remove(k->c, k->sub);
    if (k->in) {
        pthread_mutex_lock(&k->in->mu);
        k->in->dead = 1;
        pthread_mutex_unlock(&k->in->mu);
        inbox_unref(k->in);
    }
    zkr__cache_events_free(k);
    zkr__cnode_free_tree(k->root);
    pthread_rwlock_destroy(&k->lock);
    zkr__sync_destroy(&k->emu, &k->econd);
    if (k->c)
        zkr__client_release(k->c);
    free(k->path);
    free(k);
}

int zkr_cache_new(zkr_cache_t **out, zkr_client_t *c, const char *path, const zkr_cache_options_t *opt)
{
    if (out)
        *out = NULL;
    zkr_cache_options_t o;
    zkr_cache_options_init(&o);
    if (opt && (opt->size < sizeof o || opt->size > sizeof o))
        return ZKR_EINVAL; /* (1.1 on: an earlier struct is read as far as it goes) */
    if (opt)
        o = *opt;
    if (!out || !c || !zkr__path_readable(path) || o.shape < ZKR_CACHE_NODE || o.shape > ZKR_CACHE_TREE)
        return ZKR_EINVAL;
    zkr_cache_t *k = calloc(1, sizeof *k);
    zkr__inbox_t *in = calloc(1, sizeof *in);
    if (!k || !in || !(k->path = strdup(path))) {
        free(in);
        if (k)
            free(k->path);
        free(k);
        return ZKR_ENOMEM;
    }
    k->opt = o;
    k->opt.data = o.data != 0;
    if (pthread_rwlock_init(&k->lock, NULL) != 0 || zkr__sync_init(&k->emu, &k->econd) != 0 ||
        zkr__sync_init(&in->mu, &in->cond) != 0) {
        free(in);
        free(k->path);
        free(k);
        return ZKR_ESYSTEM;
    }
    in->refs = 1;
    k->in = in;
    int rc = (k->root = zkr__cnode_new(k, NULL, "")) ? ZKR_OK : ZKR_ENOMEM;
    if (rc == ZKR_OK && (rc = zkr__client_retain(c)) == ZKR_OK)
        k->c = c;
    if (rc == ZKR_OK)
        rc = zkr__sub_add(c, on_event, k, &k->sub);
    if (rc != ZKR_OK) {
        cache_destroy(k);
        return rc;
    }
    *out = k;
    return ZKR_OK;
}

int zkr_cache_set_listener(zkr_cache_t *k, zkr_cache_fn fn, void *ctx)
{
    if (!k)
        return ZKR_EINVAL;
    pthread_mutex_lock(&k->emu);
    k->fn = fn;
    k->ctx = ctx;
    pthread_mutex_unlock(&k->emu);
    return ZKR_OK;
}

int zkr_cache_start(zkr_cache_t *k)
{
    if (!k)
        return ZKR_EINVAL;
    pthread_mutex_lock(&k->in->mu);
    int rc = k->started ? ZKR_ESTATE : ZKR_OK;
    if (rc == ZKR_OK && zkr_client_state(k->c) == ZKR_STATE_CLOSED)
        rc = ZKR_ECLOSED;
    if (rc == ZKR_OK) {
        k->connected = zkr_client_is_connected(k->c);
        zkr__cache_mark(k, k->root, zkr__cache_all_needs(k, k->root));
        if ((rc = zkr_client_add_listener(k->c, on_state, k)) == ZKR_OK)
            k->listening = 1;
    }
    if (rc == ZKR_OK && pthread_create(&k->thread, NULL, cache_main, k) != 0)
        rc = ZKR_ESYSTEM;
    if (rc == ZKR_OK)
        k->started = 1;
    else if (k->listening) {
        k->listening = 0;
        pthread_mutex_unlock(&k->in->mu);
        zkr_client_remove_listener(k->c, on_state, k);
        return rc;
    }
    pthread_mutex_unlock(&k->in->mu);
    return rc;
}

int zkr_cache_wait_initialized(zkr_cache_t *k, int64_t timeout_ms)
{
    if (!k)
        return ZKR_EINVAL;
    int64_t deadline = zkr__deadline(timeout_ms);
    pthread_mutex_lock(&k->in->mu);
    int rc = k->started ? ZKR_OK : ZKR_ESTATE;
    while (rc == ZKR_OK && !k->initialized) {
        if (zkr_client_state(k->c) == ZKR_STATE_CLOSED)
            rc = ZKR_ECLOSED;
        else if (zkr__remaining_ms(deadline) == 0)
            rc = ZKR_ETIMEDOUT;
        else {
            int64_t slice = zkr__now_ms() + POLL_MS;
            zkr__cond_wait_until(&k->in->cond, &k->in->mu, deadline < slice ? deadline : slice);
        }
    }
    pthread_mutex_unlock(&k->in->mu);
    return rc;
}

int zkr_cache_is_fresh(zkr_cache_t *k)
{
    if (!k)
        return 0;
    pthread_mutex_lock(&k->in->mu);
    int fresh = k->fresh && k->initialized && k->connected && !k->resyncing;
    pthread_mutex_unlock(&k->in->mu);
    return fresh && zkr_client_is_connected(k->c);
}

static void unwatch(zhandle_t *zh, zkr_cache_t *k, zkr__cnode_t *n)
{
    /* local: no request (ZooKeeper 3.8's C client removes a watch from the
     * server only all at once, other watchers on the path included); a
     * path without our watch is refused at once */
    zoo_remove_watches(zh, n->path, ZWATCHTYPE_ANY, zkr__sub_watcher(), k->sub, 1);
    for (size_t i = 0; i < n->nkids; i++)
        unwatch(zh, k, n->kids[i]);
}

/* The cache's watches go with it from the C client, which would otherwise
 * keep a record of each for the session's life and send them all again at
 * every reconnection.  The server's copies go when they fire (to nobody)
 * or with the session. */
static int unwatch_fn(zhandle_t *zh, int64_t session, void *arg)
{
    zkr_cache_t *k = arg;
    if (session == k->session)
        unwatch(zh, k, k->root);
    return ZKR_OK;
}

void zkr_cache_free(zkr_cache_t *k)
{
    if (!k)
        return;
    pthread_mutex_lock(&k->emu);
    int inside = k->in_call && pthread_equal(k->calling, pthread_self());
    pthread_mutex_unlock(&k->emu);
    if (inside) {
        zkr__log(k->c, ZKR_LOG_ERROR, "cache %s: zkr_cache_free from its own listener: not freed", k->path);
        return;
    }
    pthread_mutex_lock(&k->in->mu);
    k->stop = 1;
    int started = k->started;
    pthread_cond_broadcast(&k->in->cond);
    pthread_mutex_unlock(&k->in->mu);
    if (started) {
        pthread_join(k->thread, NULL);
        if (zkr_client_state(k->c) != ZKR_STATE_CLOSED)
            zkr_client_with_handle(k->c, unwatch_fn, k);
    }
    if (k->listening)
        zkr_client_remove_listener(k->c, on_state, k);
    cache_destroy(k);
}

/* zkr_count_t (zkr/counter.h), Curator's SharedCount: the node made with
 * the seed if missing, then kept by a node cache (zkr_cache_t), whose
 * events update the count's copy and are told to its listener; writes
 * through recipes/vwrite.c, their stats kept in the copy at once (the
 * newest change wins, by mzxid). */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "recipes/vwrite.h"
#include "zkr/cache.h"

struct zkr_count {
    zkr_client_t *c;
    char *path;
    int32_t seed;
    zkr_cache_t *cache;
    pthread_mutex_t mu;
    /* mu */
    int started, starting;
    int loaded;        /* the cache's first load was seen: tell what follows */
    zkr_count_fn fn;
    void *ctx;
    pthread_t teller;  /* the thread in the listener, while telling */
    int telling;
    /* the copy (mu) */
    int known, exists, bad;
    int32_t value, version;
    int64_t czxid, mzxid;
};

const char *zkr_count_event_name(zkr_count_event_type_t type)
{
    switch (type) {
    case ZKR_COUNT_CHANGED: return "CHANGED";
    case ZKR_COUNT_DELETED: return "DELETED";
    case ZKR_COUNT_BADDATA: return "BADDATA";
    case ZKR_COUNT_STATE: return "STATE";
    }
    return "UNKNOWN";
}

/* A node's data and stat seen (a cache event, a read, our write): kept
 * if newer than the copy. */
static void copy_node_locked(zkr_count_t *sc, const char *data, int len, int64_t czxid, int64_t mzxid,
                             int32_t version)
{
    if (sc->known && mzxid <= sc->mzxid)
        return;
    sc->known = sc->exists = 1;
    sc->bad = zkr__count_parse(data, len, &sc->value) != 0;
    sc->version = version;
    sc->czxid = czxid;
    sc->mzxid = mzxid;
}

/* The node `czxid` is gone (0: whichever). */
static void copy_gone_locked(zkr_count_t *sc, int64_t czxid)
{
    if (!sc->known || czxid == 0 || czxid == sc->czxid) {
        sc->known = 1;
        sc->exists = 0;
    }
}

/* Callback thread: the cache's events. */
static void on_cache(zkr_cache_t *cache, const zkr_cache_event_t *ev, void *ctx)
{
    (void)cache;
    zkr_count_t *sc = ctx;
    zkr_count_event_t out;
    memset(&out, 0, sizeof out);
    pthread_mutex_lock(&sc->mu);
    const zkr_cache_node_t *n = ev->node;
    switch (ev->type) {
    case ZKR_CACHE_CREATED:
    case ZKR_CACHE_CHANGED:
        copy_node_locked(sc, n->data, (int)n->data_len, n->stat.czxid, n->stat.mzxid, n->stat.version);
        out.type = zkr__count_parse(n->data, (int)n->data_len, &out.value) == 0 ? ZKR_COUNT_CHANGED
                                                                               : ZKR_COUNT_BADDATA;
        out.version = n->stat.version;
        if (out.type == ZKR_COUNT_BADDATA)
            zkr__log(sc->c, ZKR_LOG_WARN, "count %s: data of %zu bytes, not 4", sc->path, n->data_len);
        break;
    case ZKR_CACHE_DELETED:
        copy_gone_locked(sc, n->stat.czxid);
        out.type = ZKR_COUNT_DELETED;
        break;
    case ZKR_CACHE_INITIALIZED:
        sc->loaded = 1;
        break;
    case ZKR_CACHE_STATE:
        out.type = ZKR_COUNT_STATE;
        out.state = ev->state;
        break;
    }
    zkr_count_fn fn = sc->loaded ? sc->fn : NULL;
    void *fctx = sc->ctx;
    if (fn && out.type) {
        sc->teller = pthread_self();
        sc->telling = 1;
    }
    pthread_mutex_unlock(&sc->mu);
    if (!fn || !out.type)
        return;
    fn(sc, &out, fctx);
    pthread_mutex_lock(&sc->mu);
    sc->telling = 0;
    pthread_mutex_unlock(&sc->mu);
}

int zkr_count_new(zkr_count_t **out, zkr_client_t *c, const char *path, int32_t seed)
{
    if (out)
        *out = NULL;
    if (!out || !c || !zkr__path_valid(path))
        return ZKR_EINVAL;
    zkr_count_t *sc = calloc(1, sizeof *sc);
    if (!sc || !(sc->path = strdup(path))) {
        free(sc);
        return ZKR_ENOMEM;
    }
    sc->seed = seed;
    if (pthread_mutex_init(&sc->mu, NULL) != 0) {
        free(sc->path);
        free(sc);
        return ZKR_ESYSTEM;
    }
    int rc = zkr__client_retain(c);
    if (rc != ZKR_OK) {
        pthread_mutex_destroy(&sc->mu);
        free(sc->path);
        free(sc);
        return rc;
    }
    sc->c = c;
    *out = sc;
    return ZKR_OK;
}

int zkr_count_set_listener(zkr_count_t *sc, zkr_count_fn fn, void *ctx)
{
    if (!sc)
        return ZKR_EINVAL;
    pthread_mutex_lock(&sc->mu);
    sc->fn = fn;
    sc->ctx = ctx;
    pthread_mutex_unlock(&sc->mu);
    return ZKR_OK;
}

/* The node made with the seed unless there (Curator: creatingParentContainersIfNeeded,
 * NodeExists ignored; a lost answer too: the node is there either way), then
 * the cache loaded. */
static int start_cache(zkr_count_t *sc, int64_t deadline)
{
    unsigned char b[4];
    zkr__be32_put(b, sc->seed);
    zkr__vw_t w = {sc->path, (const char *)b, 4, 1, -1, 0};
    zkr__vw_outcome_t outcome;
    int rc = zkr__vwrite(sc->c, &w, deadline, &outcome, NULL);
    if (rc != ZKR_OK)
        return rc;
    zkr_cache_options_t opt;
    zkr_cache_options_init(&opt);
    opt.shape = ZKR_CACHE_NODE;
    zkr_cache_t *cache;
    if ((rc = zkr_cache_new(&cache, sc->c, sc->path, &opt)) != ZKR_OK)
        return rc;
    zkr_cache_set_listener(cache, on_cache, sc);
    int64_t left = zkr__remaining_ms(deadline);
    if ((rc = zkr_cache_start(cache)) == ZKR_OK)
        rc = zkr_cache_wait_initialized(cache, left == INT64_MAX ? -1 : left);
    zkr_cache_node_t *n = NULL;
    if (rc == ZKR_OK) {
        int grc = zkr_cache_get(cache, sc->path, &n);
        if (grc != ZKR_OK && grc != ZKR_ENONODE)
            rc = grc;
    }
    if (rc != ZKR_OK) {
        zkr_cache_free(cache);
        return rc;
    }
    pthread_mutex_lock(&sc->mu);
    if (n)
        copy_node_locked(sc, n->data, (int)n->data_len, n->stat.czxid, n->stat.mzxid, n->stat.version);
    else
        copy_gone_locked(sc, 0);
    sc->cache = cache;
    pthread_mutex_unlock(&sc->mu);
    zkr_cache_node_free(n);
    return ZKR_OK;
}

int zkr_count_start(zkr_count_t *sc, int64_t timeout_ms)
{
    if (!sc)
        return ZKR_EINVAL;
    pthread_mutex_lock(&sc->mu);
    int busy = sc->started || sc->starting;
    sc->starting = 1;
    pthread_mutex_unlock(&sc->mu);
    if (busy)
        return ZKR_ESTATE;
    int rc = start_cache(sc, zkr__deadline(timeout_ms));
    pthread_mutex_lock(&sc->mu);
    sc->starting = 0;
    sc->started = rc == ZKR_OK;
    pthread_mutex_unlock(&sc->mu);
    return rc;
}

int zkr_count_get(zkr_count_t *sc, int32_t *value, int32_t *version)
{
    if (!sc || !value || !version)
        return ZKR_EINVAL;
    pthread_mutex_lock(&sc->mu);
    int rc = !sc->started ? ZKR_ESTATE : !sc->exists ? ZKR_ENONODE : sc->bad ? ZKR_EBADDATA : ZKR_OK;
    if (rc == ZKR_OK)
        *value = sc->value;
    if (rc == ZKR_OK || rc == ZKR_EBADDATA)
        *version = sc->version;
    pthread_mutex_unlock(&sc->mu);
    return rc;
}

/* A set with `version` (-1: any): ZKR_OK with *outcome, the copy updated. */
static int write_count(zkr_count_t *sc, int32_t version, int64_t czxid, int32_t value, int64_t timeout_ms,
                       zkr__vw_outcome_t *outcome)
{
    unsigned char b[4];
    zkr__be32_put(b, value);
    zkr__vw_t w = {sc->path, (const char *)b, 4, 0, version, czxid};
    struct Stat st;
    int64_t deadline = zkr__deadline(timeout_ms);
    int rc = zkr__vwrite(sc->c, &w, deadline, outcome, &st);
    if (rc == ZKR_OK && *outcome == ZKR__VW_APPLIED) {
        pthread_mutex_lock(&sc->mu);
        copy_node_locked(sc, (const char *)b, 4, st.czxid, st.mzxid, st.version);
        pthread_mutex_unlock(&sc->mu);
    } else if (rc == ZKR_OK && *outcome == ZKR__VW_RACE) {
        /* Curator reads the value again: the next get sees the winner */
        zkr__rq_t rq;
        memset(&rq, 0, sizeof rq);
        int zrc = zkr__vread(sc->c, sc->path, &rq, deadline);
        pthread_mutex_lock(&sc->mu);
        if (zrc == ZOK)
            copy_node_locked(sc, rq.value, rq.value_len, rq.stat.czxid, rq.stat.mzxid, rq.stat.version);
        else if (zrc == ZNONODE)
            copy_gone_locked(sc, 0);
        pthread_mutex_unlock(&sc->mu);
        zkr__rq_clear(&rq);
    }
    return rc;
}

static int started(zkr_count_t *sc, int32_t *version, int64_t *czxid)
{
    pthread_mutex_lock(&sc->mu);
    int rc = !sc->started ? ZKR_ESTATE : !sc->exists ? ZKR_ENONODE : ZKR_OK;
    *version = sc->version;
    *czxid = sc->czxid;
    pthread_mutex_unlock(&sc->mu);
    return rc;
}

int zkr_count_set(zkr_count_t *sc, int32_t value, int64_t timeout_ms)
{
    if (!sc)
        return ZKR_EINVAL;
    int32_t version;
    int64_t czxid;
    int rc = started(sc, &version, &czxid);
    if (rc == ZKR_ENONODE)
        rc = ZKR_OK; /* the copy may be late: the server says */
    zkr__vw_outcome_t outcome = ZKR__VW_RACE;
    if (rc == ZKR_OK)
        rc = write_count(sc, -1, 0, value, timeout_ms, &outcome);
    if (rc == ZKR_ENONODE) {
        pthread_mutex_lock(&sc->mu);
        copy_gone_locked(sc, 0);
        pthread_mutex_unlock(&sc->mu);
    }
    return rc == ZKR_OK && outcome == ZKR__VW_UNKNOWN ? ZKR_ECONNLOSS : rc;
}

int zkr_count_try_set(zkr_count_t *sc, int32_t version, int32_t value, int *set, int64_t timeout_ms)
{
    if (set)
        *set = 0;
    if (!sc || !set)
        return ZKR_EINVAL;
    int32_t have;
    int64_t czxid;
    int rc = started(sc, &have, &czxid);
    if (rc != ZKR_OK || have != version)
        return rc; /* Curator: the copy's version differs, false at once */
    zkr__vw_outcome_t outcome = ZKR__VW_RACE;
    rc = write_count(sc, version, czxid, value, timeout_ms, &outcome);
    if (rc == ZKR_OK && outcome == ZKR__VW_UNKNOWN)
        return ZKR_ECONNLOSS;
    *set = rc == ZKR_OK && outcome == ZKR__VW_APPLIED;
    return rc;
}

void zkr_count_free(zkr_count_t *sc)
{
    if (!sc)
        return;
    pthread_mutex_lock(&sc->mu);
    int own = sc->telling && pthread_equal(sc->teller, pthread_self());
    pthread_mutex_unlock(&sc->mu);
    if (own) {
        zkr__log(sc->c, ZKR_LOG_ERROR, "count %s: zkr_count_free called from its own listener: ignored",
                 sc->path);
        return;
    }
    zkr_cache_free(sc->cache);
    zkr__client_release(sc->c);
    pthread_mutex_destroy(&sc->mu);
    free(sc->path);
    free(sc);
}

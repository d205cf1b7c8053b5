/* The service cache and the provider (include/zkr/discovery.h).  The
 * cache is a zkr_cache (CHILDREN, with data) of <base>/<name>: its events
 * are told again with the instance parsed from the node's data; its lists
 * are one consistent walk of the copy (the names and data copied under
 * the walk, parsed after it).  A provider picks among a cache's enabled
 * instances as Curator's strategies do. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "recipes/discovery_private.h"
#include "session/core.h"
#include "util/util.h"
#include "zkr/cache.h"

struct zkr_service_cache {
    zkr_client_t *c; /* retained */
    char *path;      /* <base>/<name> */
    zkr_cache_t *cache;
    pthread_mutex_t mu; /* guards fn, ctx, in_call, calling */
    zkr_service_cache_fn fn;
    void *ctx;
    int in_call;
    pthread_t calling;
};

static const char *const event_names[] = {"ADDED", "UPDATED", "REMOVED", "INITIALIZED", "STATE"};

const char *zkr_service_event_name(zkr_service_event_type_t type)
{
    return type >= ZKR_SERVICE_ADDED && type <= ZKR_SERVICE_STATE ? event_names[type - 1] : "UNKNOWN";
}

/* ---- the cache's events, told again ---------------------------------------------- */

static void tell(zkr_service_cache_t *sc, const zkr_service_event_t *ev)
{
    pthread_mutex_lock(&sc->mu);
    zkr_service_cache_fn fn = sc->fn;
    void *ctx = sc->ctx;
    sc->in_call = fn != NULL;
    sc->calling = pthread_self();
    pthread_mutex_unlock(&sc->mu);
    if (!fn)
        return;
    fn(sc, ev, ctx);
    pthread_mutex_lock(&sc->mu);
    sc->in_call = 0;
    pthread_mutex_unlock(&sc->mu);
}

static void on_cache(zkr_cache_t *cache, const zkr_cache_event_t *event, void *ctx)
{
    (void)cache;
    zkr_service_cache_t *sc = ctx;
    zkr_service_event_t ev;
    memset(&ev, 0, sizeof ev);
    zkr_instance_t *inst = NULL;
    switch (event->type) {
    case ZKR_CACHE_CREATED:
    case ZKR_CACHE_CHANGED:
    case ZKR_CACHE_DELETED:
        ev.type = event->type == ZKR_CACHE_CREATED   ? ZKR_SERVICE_ADDED
                  : event->type == ZKR_CACHE_CHANGED ? ZKR_SERVICE_UPDATED
                                                     : ZKR_SERVICE_REMOVED;
        ev.node_name = zkr__path_basename(event->node->path);
        if (zkr__disc_parse(event->node->data, event->node->data_len, &inst) == ZKR_EBADDATA &&
            event->type != ZKR_CACHE_DELETED)
            zkr__log(sc->c, ZKR_LOG_WARN, "service cache: %s is not a service instance: left out",
                     event->node->path);
        ev.instance = inst;
        break;
    case ZKR_CACHE_INITIALIZED: ev.type = ZKR_SERVICE_INITIALIZED; break;
    case ZKR_CACHE_STATE:
        ev.type = ZKR_SERVICE_STATE;
        ev.state = event->state;
        break;
    default: return;
    }
    tell(sc, &ev);
    zkr_instance_free(inst);
}

/* ---- the public calls ------------------------------------------------------------------ */

static void sc_destroy(zkr_service_cache_t *sc)
{
    zkr_cache_free(sc->cache);
    pthread_mutex_destroy(&sc->mu);
    if (sc->c)
        zkr__client_release(sc->c);
    free(sc->path);
    free(sc);
}

int zkr_service_cache_new(zkr_service_cache_t **out, zkr_discovery_t *d, const char *name)
{
    if (out)
        *out = NULL;
    if (!out || !d || !zkr__disc_segment_valid(name))
        return ZKR_EINVAL;
    zkr_service_cache_t *sc = calloc(1, sizeof *sc);
    if (!sc)
        return ZKR_ENOMEM;
    if (pthread_mutex_init(&sc->mu, NULL) != 0) {
        free(sc);
        return ZKR_ESYSTEM;
    }
    int rc = (sc->path = zkr__disc_path(d->base, name, NULL)) ? zkr__client_retain(d->c) : ZKR_ENOMEM;
    if (rc == ZKR_OK) {
        sc->c = d->c;
        zkr_cache_options_t opt;
        zkr_cache_options_init(&opt);
        opt.shape = ZKR_CACHE_CHILDREN;
        rc = zkr_cache_new(&sc->cache, sc->c, sc->path, &opt);
    }
    if (rc == ZKR_OK)
        rc = zkr_cache_set_listener(sc->cache, on_cache, sc);
    if (rc != ZKR_OK) {
        sc_destroy(sc);
        return rc;
    }
    *out = sc;
    return ZKR_OK;
}

int zkr_service_cache_set_listener(zkr_service_cache_t *sc, zkr_service_cache_fn fn, void *ctx)
{
    if (!sc)
        return ZKR_EINVAL;
    pthread_mutex_lock(&sc->mu);
    sc->fn = fn;
    sc->ctx = ctx;
    pthread_mutex_unlock(&sc->mu);
    return ZKR_OK;
}

int zkr_service_cache_start(zkr_service_cache_t *sc)
{
    return sc ? zkr_cache_start(sc->cache) : ZKR_EINVAL;
}

int zkr_service_cache_wait_initialized(zkr_service_cache_t *sc, int64_t timeout_ms)
{
    return sc ? zkr_cache_wait_initialized(sc->cache, timeout_ms) : ZKR_EINVAL;
}

void zkr_service_cache_free(zkr_service_cache_t *sc)
{
    if (!sc)
        return;
    pthread_mutex_lock(&sc->mu);
    int inside = sc->in_call && pthread_equal(sc->calling, pthread_self());
    pthread_mutex_unlock(&sc->mu);
    if (inside) {
        zkr__log(sc->c, ZKR_LOG_ERROR, "service cache %s: zkr_service_cache_free from its own listener: not freed",
                 sc->path);
        return;
    }
    sc_destroy(sc);
}

/* ---- lists -------------------------------------------------------------------------------- */

/* One cached instance node: its name and a copy of its data, then the
 * instance parsed. */
typedef struct entry {
    char *name;
    char *data;
    size_t len;
    zkr_instance_t *inst;
} entry_t;

typedef struct snapshot {
    entry_t *v;
    size_t n, cap;
    int failed;
} snapshot_t;

static void snapshot_free(snapshot_t *s)
{
    for (size_t i = 0; i < s->n; i++) {
        free(s->v[i].name);
        free(s->v[i].data);
        zkr_instance_free(s->v[i].inst);
    }
    free(s->v);
    memset(s, 0, sizeof *s);
}

static int walk_fn(const zkr_cache_node_t *node, int depth, void *ctx)
{
    snapshot_t *s = ctx;
    if (depth != 1)
        return 0;
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 16;
        entry_t *v = realloc(s->v, cap * sizeof *v);
        if (!v)
            return s->failed = 1;
        s->v = v;
        s->cap = cap;
    }
    entry_t *e = &s->v[s->n];
    memset(e, 0, sizeof *e);
    e->name = strdup(zkr__path_basename(node->path));
    e->data = node->data ? malloc(node->data_len + 1) : NULL;
    if (!e->name || (node->data && !e->data)) {
        free(e->name);
        free(e->data);
        return s->failed = 1;
    }
    if (e->data)
        memcpy(e->data, node->data, node->data_len + 1);
    e->len = node->data_len;
    s->n++;
    return 0;
}

/* The cache's instance nodes, in name order, parsed (unreadable ones
 * with inst NULL). */
static int snapshot(zkr_service_cache_t *sc, snapshot_t *s)
{
    memset(s, 0, sizeof *s);
    int rc = zkr_cache_walk(sc->cache, NULL, walk_fn, s);
    if (rc == ZKR_ENONODE)
        return ZKR_OK; /* (no service node: no instances) */
    if (rc == ZKR_OK && s->failed)
        rc = ZKR_ENOMEM;
    for (size_t i = 0; rc == ZKR_OK && i < s->n; i++)
        if (zkr__disc_parse(s->v[i].data, s->v[i].len, &s->v[i].inst) == ZKR_ENOMEM)
            rc = ZKR_ENOMEM;
    if (rc != ZKR_OK)
        snapshot_free(s);
    return rc;
}

int zkr_service_cache_instances(zkr_service_cache_t *sc, zkr_instance_t ***insts, size_t *count)
{
    if (insts)
        *insts = NULL;
    if (count)
        *count = 0;
    if (!sc || !insts || !count)
        return ZKR_EINVAL;
    snapshot_t s;
    int rc = snapshot(sc, &s);
    if (rc != ZKR_OK)
        return rc;
    zkr_instance_t **v = s.n ? calloc(s.n, sizeof *v) : NULL;
    size_t got = 0;
    for (size_t i = 0; v && i < s.n; i++)
        if (s.v[i].inst) {
            v[got++] = s.v[i].inst;
            s.v[i].inst = NULL;
        }
    rc = s.n && !v ? ZKR_ENOMEM : ZKR_OK;
    snapshot_free(&s);
    if (got == 0) {
        free(v);
        return rc;
    }
    *insts = v;
    *count = got;
    return ZKR_OK;
}

/* ---- the provider ---------------------------------------------------------------------------- */

struct zkr_service_provider {
    zkr_service_cache_t *sc;
    zkr_provider_strategy_t strategy;
    pthread_mutex_t mu; /* guards the rest */
    uint64_t next;      /* round robin (also sticky's next choice) */
    uint64_t rand;      /* xorshift64 state */
    char *sticky;       /* the node sticky keeps, or NULL */
};

int zkr_service_provider_new(zkr_service_provider_t **out, zkr_service_cache_t *sc, zkr_provider_strategy_t strategy)
{
    if (out)
        *out = NULL;
    if (!out || !sc || strategy < ZKR_PROVIDER_ROUND_ROBIN || strategy > ZKR_PROVIDER_STICKY)
        return ZKR_EINVAL;
    char seed[ZKR__UUID_LEN + 1];
    if (zkr__uuid(seed) != 0)
        return ZKR_ESYSTEM;
    zkr_service_provider_t *p = calloc(1, sizeof *p);
    if (!p)
        return ZKR_ENOMEM;
    if (pthread_mutex_init(&p->mu, NULL) != 0) {
        free(p);
        return ZKR_ESYSTEM;
    }
    p->sc = sc;
    p->strategy = strategy;
    for (const char *s = seed; *s; s++)
        p->rand = p->rand * 131 + (unsigned char)*s;
    p->rand |= 1;
    *out = p;
    return ZKR_OK;
}

void zkr_service_provider_free(zkr_service_provider_t *p)
{
    if (!p)
        return;
    pthread_mutex_destroy(&p->mu);
    free(p->sticky);
    free(p);
}

static uint64_t xorshift(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *s = x;
}

/* The index (among the n enabled entries e[]) this pick takes; with
 * p->mu held. */
static size_t choose_locked(zkr_service_provider_t *p, entry_t **e, size_t n)
{
    if (p->strategy == ZKR_PROVIDER_RANDOM)
        return (size_t)(xorshift(&p->rand) % n);
    if (p->strategy == ZKR_PROVIDER_STICKY && p->sticky)
        for (size_t i = 0; i < n; i++)
            if (strcmp(e[i]->name, p->sticky) == 0)
                return i;
    size_t i = (size_t)(p->next++ % n);
    if (p->strategy == ZKR_PROVIDER_STICKY) {
        char *keep = strdup(e[i]->name);
        if (keep) { /* (no memory: picked, but not kept) */
            free(p->sticky);
            p->sticky = keep;
        }
    }
    return i;
}

int zkr_service_provider_pick(zkr_service_provider_t *p, zkr_instance_t **inst)
{
    if (inst)
        *inst = NULL;
    if (!p || !inst)
        return ZKR_EINVAL;
    snapshot_t s;
    int rc = snapshot(p->sc, &s);
    if (rc != ZKR_OK)
        return rc;
    entry_t **usable = s.n ? calloc(s.n, sizeof *usable) : NULL;
    size_t n = 0;
    for (size_t i = 0; usable && i < s.n; i++)
        if (s.v[i].inst && s.v[i].inst->enabled)
            usable[n++] = &s.v[i];
    if (s.n && !usable) {
        rc = ZKR_ENOMEM;
    } else if (n == 0) {
        rc = ZKR_ENONODE;
    } else {
        pthread_mutex_lock(&p->mu);
        size_t i = choose_locked(p, usable, n);
        pthread_mutex_unlock(&p->mu);
        *inst = usable[i]->inst;
        usable[i]->inst = NULL;
    }
    free(usable);
    snapshot_free(&s);
    return rc;
}

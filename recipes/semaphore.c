/* Leased semaphore (Curator InterProcessSemaphoreV2) and the non-reentrant
 * mutex built on it (InterProcessSemaphoreMutex). */
#include "config.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "recipes/recipes.h"
#include "engine/engine.h"
#include "zkr/async.h"
#include "zkr/mutex.h"
#include "zkr/semaphore.h"

struct zkr_semaphore {
    zkr_client_t *c;
    char *locks_dir;
    char *leases_dir;
    int max_fixed;
    char *count_path; /* NULL: max_fixed applies */
    atomic_int speculate; /* last acquire found locks/ free at once */
    pthread_mutex_t mu;
    zkr__hold_listener_t hold;
};

struct zkr_lease {
    zkr_client_t *c;
    zkr__node_t node;
};

static const int all_hold = 0x7fffffff;

/* Lease nodes are only sorted for listing; who holds a lease is decided by
 * counting, not by position. */
static const zkr__driver_t lease_driver = {
    .marker = ZKR__LEASE_MARKER,
    .key = zkr__sort_key,
    .key_marker = ZKR__LEASE_MARKER,
    .decide = zkr__decide_first_n,
    .decide_arg = &all_hold,
};

static void sem_destroy(zkr_semaphore_t *s)
{
    if (s->c)
        zkr__client_release(s->c);
    pthread_mutex_destroy(&s->mu);
    free(s->locks_dir);
    free(s->leases_dir);
    free(s->count_path);
    free(s);
}

static int sem_make(zkr_semaphore_t **out, zkr_client_t *c, const char *path, int max,
                    const char *count_path)
{
    zkr_semaphore_t *s = calloc(1, sizeof *s);
    if (!s)
        return ZKR_ENOMEM;
    if (pthread_mutex_init(&s->mu, NULL) != 0) {
        free(s);
        return ZKR_ESYSTEM;
    }
    int rc = zkr__client_retain(c);
    if (rc != ZKR_OK) {
        sem_destroy(s);
        return rc;
    }
    s->c = c;
    s->max_fixed = max;
    atomic_init(&s->speculate, 1);
    s->locks_dir = zkr__path_join(path, "locks");
    s->leases_dir = zkr__path_join(path, "leases");
    if (count_path)
        s->count_path = strdup(count_path);
    if (!s->locks_dir || !s->leases_dir || (count_path && !s->count_path)) {
        sem_destroy(s);
        return ZKR_ENOMEM;
    }
    *out = s;
    return ZKR_OK;
}

int zkr_semaphore_new(zkr_semaphore_t **out, zkr_client_t *c, const char *path, int max_leases)
{
    if (out)
        *out = NULL;
    if (!out || !c || !zkr__path_valid(path) || max_leases < 1)
        return ZKR_EINVAL;
    return sem_make(out, c, path, max_leases, NULL);
}

int zkr_semaphore_new_shared(zkr_semaphore_t **out, zkr_client_t *c, const char *path,
                             const char *count_path)
{
    if (out)
        *out = NULL;
    if (!out || !c || !zkr__path_valid(path) || !zkr__path_valid(count_path))
        return ZKR_EINVAL;
    return sem_make(out, c, path, 0, count_path);
}

void zkr_semaphore_free(zkr_semaphore_t *s)
{
    if (s) {
        zkr__async_forget(s->c, s);
        zkr__tracks_forget(s->c, s); /* its leases outlive it */
        sem_destroy(s);
    }
}

/* Read the shared count. */
static int read_count(zhandle_t *zh, const char *path, int *max)
{
    char buf[8];
    int len = (int)sizeof buf;
    struct Stat st;
    int zrc = zkr__zh_answer(zh, zoo_get(zh, path, 0, buf, &len, &st));
    if (zrc != ZOK)
        return zkr__zk_error(zrc);
    int32_t v;
    if (zkr__count_parse(buf, len, &v) != 0)
        return ZKR_EBADDATA;
    *max = v;
    return ZKR_OK;
}

/* One lease: the engine's machine runs the semaphore protocol (the locks/
 * mutex, then the lease, counted under a children watch; with a fixed
 * count the lease goes out right behind the locks/ create when locks/ was
 * free last time, so an uncontended acquire is one round trip). */
static int acquire_one(zkr_semaphore_t *s, int64_t deadline, zkr_lease_t **out)
{
    zkr_client_t *c = s->c;
    zkr__async_target_t t;
    memset(&t, 0, sizeof t);
    zkr__semaphore_async_target(s, &t);
    zkr__node_t node;
    int rc = zkr__acquire(&t, deadline, &node);
    if (rc != ZKR_OK)
        return rc;
    zkr_lease_t *l = zkr__lease_wrap(c, &node);
    if (!l) {
        zkr__node_delete(c, &node);
        return ZKR_ENOMEM;
    }
    *out = l;
    return ZKR_OK;
}

int zkr_semaphore_set_hold_listener(zkr_semaphore_t *s, zkr_lease_fn fn, void *ctx)
{
    if (!s)
        return ZKR_EINVAL;
    return zkr__hold_listener_set(&s->mu, &s->hold,
                                  (zkr__hold_listener_t){.lease_fn = fn, .ctx = ctx, .sem = s, .owner = s});
}

zkr_hold_state_t zkr_lease_hold_state(const zkr_lease_t *l)
{
    return l ? zkr__node_hold_state(l->c, &l->node) : ZKR_HOLD_NONE;
}

int zkr_semaphore_acquire_n(zkr_semaphore_t *s, size_t n, int64_t timeout_ms, zkr_lease_t **leases)
{
    if (!s || !leases || n < 1 || n > ZKR_LEASES_MAX)
        return ZKR_EINVAL;
    if (!s->count_path && n > (size_t)s->max_fixed)
        return ZKR_ENEVER; /* more leases than the semaphore has */
    int64_t deadline = zkr__deadline(timeout_ms);
    for (size_t i = 0; i < n; i++)
        leases[i] = NULL;
    int rc = zkr__client_enter(s->c);
    if (rc != ZKR_OK)
        return rc;
    for (size_t i = 0; i < n && rc == ZKR_OK; i++)
        rc = acquire_one(s, deadline, &leases[i]);
    if (rc != ZKR_OK) {
        /* The leases taken go back together, within the time limit. */
        zkr__deletes_defer_begin();
        zkr_lease_release_all(leases, n);
        zkr__deletes_defer_end_within(deadline);
        for (size_t i = 0; i < n; i++)
            leases[i] = NULL;
    }
    zkr__client_leave(s->c);
    return rc;
}

int zkr_semaphore_acquire(zkr_semaphore_t *s, int64_t timeout_ms, zkr_lease_t **lease)
{
    if (lease)
        *lease = NULL;
    return zkr_semaphore_acquire_n(s, 1, timeout_ms, lease);
}

int zkr_lease_release(zkr_lease_t *l)
{
    if (!l)
        return ZKR_EINVAL;
    int rc = zkr__node_delete(l->c, &l->node);
    zkr__client_release(l->c);
    free(l);
    return rc == ZKR_ECLOSED ? ZKR_OK : rc;
}

int zkr_lease_release_async(zkr_lease_t *l, zkr_release_fn fn, void *ctx)
{
    if (!l || !fn)
        return ZKR_EINVAL;
    int rc = zkr__async_release(l->c, &l->node, fn, ctx);
    if (rc == ZKR_ENOMEM)
        return rc;
    if (rc != ZKR_OK) {
        zkr_lease_release(l); /* closing: the node goes with the session */
        return rc;
    }
    free(l); /* its client reference goes with the completion */
    return ZKR_OK;
}

int zkr_lease_release_all(zkr_lease_t **leases, size_t n)
{
    if (!leases || n > ZKR_LEASES_MAX)
        return ZKR_EINVAL; /* also a negative count from an int */
    int first = ZKR_OK;
    for (size_t i = 0; i < n; i++) {
        if (!leases[i])
            continue;
        int rc = zkr_lease_release(leases[i]);
        leases[i] = NULL;
        if (rc != ZKR_OK && first == ZKR_OK)
            first = rc;
    }
    return first;
}

int zkr_lease_node_path(const zkr_lease_t *l, char **path)
{
    if (path)
        *path = NULL;
    if (!l || !path || !l->node.path)
        return ZKR_EINVAL;
    return (*path = strdup(l->node.path)) ? ZKR_OK : ZKR_ENOMEM;
}

int zkr_lease_fencing_token(const zkr_lease_t *l, int64_t *token)
{
    if (!l || !token)
        return ZKR_EINVAL;
    *token = l->node.czxid;
    return ZKR_OK;
}

int zkr__lease_guard(const zkr_lease_t *l, zkr__guard_t *g)
{
    return zkr__guard_fill(l->c, &l->node, g);
}

int zkr_semaphore_participants(zkr_semaphore_t *s, char ***paths, size_t *count)
{
    return s ? zkr__participants(s->c, s->leases_dir, &lease_driver, paths, count) : ZKR_EINVAL;
}

/* ---- shared count ---------------------------------------------------------------- */

typedef struct count_op {
    zkr_client_t *c;
    const char *path;
    int32_t value;
} count_op_t;

static int count_set_on(struct _zhandle *zh, int64_t session, void *arg)
{
    (void)session;
    count_op_t *op = arg;
    unsigned char b[4];
    zkr__be32_put(b, op->value);
    int rc = ZKR_OK;
    int zrc = zkr__zh_answer(zh, zoo_set(zh, op->path, (const char *)b, 4, -1));
    if (zrc == ZNONODE) {
        const char *slash = strrchr(op->path, '/');
        if (slash && slash != op->path) {
            char *parent = strndup(op->path, (size_t)(slash - op->path));
            rc = parent ? zkr__ensure_path(op->c, zh, parent) : ZKR_ENOMEM;
            free(parent);
        }
        if (rc == ZKR_OK) {
            zrc = zkr__zh_answer(zh, zoo_create(zh, op->path, (const char *)b, 4, zkr__client_acl(op->c), 0, NULL, 0));
            if (zrc == ZNODEEXISTS)
                zrc = zkr__zh_answer(zh, zoo_set(zh, op->path, (const char *)b, 4, -1));
        }
    }
    return rc == ZKR_OK ? zkr__zk_error(zrc) : rc;
}

int zkr_shared_count_set(zkr_client_t *c, const char *count_path, int32_t value)
{
    if (!c || !zkr__path_valid(count_path) || value < 1)
        return ZKR_EINVAL; /* a semaphore of less than one lease never grants */
    count_op_t op = {c, count_path, value};
    return zkr_client_with_handle(c, count_set_on, &op);
}

static int count_get_on(struct _zhandle *zh, int64_t session, void *arg)
{
    (void)session;
    count_op_t *op = arg;
    int max = 0;
    int rc = read_count(zh, op->path, &max);
    op->value = max;
    return rc;
}

int zkr_shared_count_get(zkr_client_t *c, const char *count_path, int32_t *value)
{
    if (!c || !value || !zkr__path_valid(count_path))
        return ZKR_EINVAL;
    count_op_t op = {c, count_path, 0};
    int rc = zkr_client_with_handle(c, count_get_on, &op);
    if (rc == ZKR_OK)
        *value = op.value;
    return rc;
}

/* ---- non-reentrant mutex ------------------------------------------------------------- */

struct zkr_semaphore_mutex {
    zkr_semaphore_t *sem;
    pthread_mutex_t mu;
    zkr_lease_t *lease;
};

int zkr_semaphore_mutex_new(zkr_semaphore_mutex_t **out, zkr_client_t *c, const char *path)
{
    if (out)
        *out = NULL;
    if (!out || !c || !zkr__path_valid(path))
        return ZKR_EINVAL;
    zkr_semaphore_mutex_t *m = calloc(1, sizeof *m);
    if (!m)
        return ZKR_ENOMEM;
    int rc = zkr_semaphore_new(&m->sem, c, path, 1);
    if (rc != ZKR_OK) {
        free(m);
        return rc;
    }
    if (pthread_mutex_init(&m->mu, NULL) != 0) {
        zkr_semaphore_free(m->sem);
        free(m);
        return ZKR_ESYSTEM;
    }
    *out = m;
    return ZKR_OK;
}

int zkr_semaphore_mutex_acquire(zkr_semaphore_mutex_t *m, int64_t timeout_ms)
{
    if (!m)
        return ZKR_EINVAL;
    zkr_lease_t *l = NULL;
    int rc = zkr_semaphore_acquire(m->sem, timeout_ms, &l);
    if (rc != ZKR_OK)
        return rc;
    pthread_mutex_lock(&m->mu);
    zkr_lease_t *stale = m->lease; /* only if an earlier hold was lost */
    m->lease = l;
    pthread_mutex_unlock(&m->mu);
    if (stale)
        zkr_lease_release(stale);
    return ZKR_OK;
}

int zkr_semaphore_mutex_release(zkr_semaphore_mutex_t *m)
{
    if (!m)
        return ZKR_EINVAL;
    pthread_mutex_lock(&m->mu);
    zkr_lease_t *l = m->lease;
    m->lease = NULL;
    pthread_mutex_unlock(&m->mu);
    if (!l)
        return ZKR_ENOTOWNER;
    return zkr_lease_release(l);
}

int zkr_semaphore_mutex_is_held(zkr_semaphore_mutex_t *m)
{
    if (!m)
        return 0;
    pthread_mutex_lock(&m->mu);
    int held = m->lease != NULL && zkr_lease_hold_state(m->lease) != ZKR_HOLD_LOST;
    pthread_mutex_unlock(&m->mu);
    return held;
}

int zkr_semaphore_mutex_fencing_token(zkr_semaphore_mutex_t *m, int64_t *token)
{
    if (!m || !token)
        return ZKR_EINVAL;
    pthread_mutex_lock(&m->mu);
    int rc = m->lease ? zkr_lease_fencing_token(m->lease, token) : ZKR_ENOTOWNER;
    pthread_mutex_unlock(&m->mu);
    return rc;
}

int zkr__semaphore_mutex_guard(zkr_semaphore_mutex_t *m, zkr__guard_t *g)
{
    pthread_mutex_lock(&m->mu);
    int rc = m->lease ? zkr__lease_guard(m->lease, g) : ZKR_ENOTOWNER;
    pthread_mutex_unlock(&m->mu);
    return rc;
}

void zkr__semaphore_mutex_set_listener(zkr_semaphore_mutex_t *m, zkr__hold_listener_t hl)
{
    /* the semaphore of one lease carries it (and its free turns it off) */
    hl.owner = m->sem;
    zkr__hold_listener_set(&m->sem->mu, &m->sem->hold, hl);
}

int zkr_semaphore_mutex_node_path(zkr_semaphore_mutex_t *m, char **path)
{
    if (path)
        *path = NULL;
    if (!m || !path)
        return ZKR_EINVAL;
    pthread_mutex_lock(&m->mu);
    int rc = ZKR_ENOTOWNER;
    if (m->lease && m->lease->node.path)
        rc = (*path = strdup(m->lease->node.path)) ? ZKR_OK : ZKR_ENOMEM;
    pthread_mutex_unlock(&m->mu);
    return rc;
}

zkr_hold_state_t zkr_semaphore_mutex_hold_state(zkr_semaphore_mutex_t *m)
{
    if (!m)
        return ZKR_HOLD_NONE;
    pthread_mutex_lock(&m->mu);
    zkr_hold_state_t st = m->lease ? zkr_lease_hold_state(m->lease) : ZKR_HOLD_NONE;
    pthread_mutex_unlock(&m->mu);
    return st;
}

void zkr_semaphore_mutex_free(zkr_semaphore_mutex_t *m)
{
    if (!m)
        return;
    if (m->lease)
        zkr_lease_release(m->lease);
    pthread_mutex_destroy(&m->mu);
    zkr_semaphore_free(m->sem);
    free(m);
}

/* ---- for the asynchronous layer (async.c) ------------------------------------------- */

void zkr__semaphore_async_target(zkr_semaphore_t *s, zkr__async_target_t *t)
{
    t->c = s->c;
    t->dir = s->locks_dir;
    t->drv = &zkr__lock_driver;
    t->leases_dir = s->leases_dir;
    t->count_path = s->count_path;
    t->max = s->max_fixed;
    t->speculate = &s->speculate;
    t->hold = zkr__hold_listener_get(&s->mu, &s->hold);
    t->owner = s;
}

zkr_semaphore_t *zkr__semaphore_mutex_sem(zkr_semaphore_mutex_t *m)
{
    return m->sem;
}

zkr_lease_t *zkr__lease_wrap(zkr_client_t *c, zkr__node_t *node)
{
    zkr_lease_t *l = calloc(1, sizeof *l);
    if (!l || zkr__client_retain(c) != ZKR_OK) {
        free(l);
        return NULL;
    }
    l->c = c;
    l->node = *node;
    memset(node, 0, sizeof *node);
    return l;
}

/* ---- the names of 0.2.0, for one release (docs/versioning.md) ---------------- */

const char *zkr_lease_path(const zkr_lease_t *l)
{
    return l ? l->node.path : NULL;
}

int zkr_lease_return(zkr_lease_t *l)
{
    return l ? zkr_lease_release(l) : ZKR_OK; /* 0.2.0: NULL was a no-op */
}

int zkr_lease_return_all(zkr_lease_t **leases, size_t n)
{
    return zkr_lease_release_all(leases, n);
}

int zkr_lease_return_async(zkr_lease_t *l, zkr_release_fn fn, void *ctx)
{
    return zkr_lease_release_async(l, fn, ctx);
}

/* The common lock interface: one small table of functions per kind. */
#include "config.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "recipes/recipes.h"
#include "session/core.h"
#include "zkr/lock.h"
#include "zkr/multilock.h"

typedef struct lock_ops {
    const char *kind;
    zkr_hold_state_t (*state)(void *obj);
    int (*acquire)(void *obj, int64_t timeout_ms);
    int (*release)(void *obj);
    int (*is_held)(void *obj);
    int (*token)(void *obj, int64_t *token);
    int (*path)(void *obj, char **path);
} lock_ops_t;

#define OPS(name, kind_, acq, rel, held, tok, st, np)                                                        \
    static zkr_hold_state_t name##_st(void *o) { return st(o); }                                             \
    static int name##_acq(void *o, int64_t t) { return acq(o, t); }                                          \
    static int name##_rel(void *o) { return rel(o); }                                                        \
    static int name##_held(void *o) { return held(o); }                                                      \
    static int name##_tok(void *o, int64_t *t) { return tok(o, t); }                                         \
    static int name##_path(void *o, char **p) { return np(o, p); }                                           \
    static const lock_ops_t name##_ops = {kind_,       name##_st,  name##_acq, name##_rel,                   \
                                          name##_held, name##_tok, name##_path};

OPS(mutex, "mutex", zkr_mutex_acquire, zkr_mutex_release, zkr_mutex_is_held, zkr_mutex_fencing_token,
    zkr_mutex_hold_state, zkr_mutex_node_path)
OPS(smutex, "semaphore-mutex", zkr_semaphore_mutex_acquire, zkr_semaphore_mutex_release,
    zkr_semaphore_mutex_is_held, zkr_semaphore_mutex_fencing_token, zkr_semaphore_mutex_hold_state,
    zkr_semaphore_mutex_node_path)
OPS(rd, "read", zkr_rwlock_read_acquire, zkr_rwlock_read_release, zkr_rwlock_read_is_held,
    zkr_rwlock_read_fencing_token, zkr_rwlock_read_hold_state, zkr_rwlock_read_node_path)
OPS(wr, "write", zkr_rwlock_write_acquire, zkr_rwlock_write_release, zkr_rwlock_write_is_held,
    zkr_rwlock_write_fencing_token, zkr_rwlock_write_hold_state, zkr_rwlock_write_node_path)

static const lock_ops_t *valid_ops(zkr_lock_ref_t r)
{
    if (!r.obj)
        return NULL;
    if (r.ops == &mutex_ops || r.ops == &smutex_ops || r.ops == &rd_ops || r.ops == &wr_ops)
        return r.ops;
    return NULL;
}

static zkr_lock_ref_t make_ref(const lock_ops_t *ops, void *obj)
{
    zkr_lock_ref_t r = {obj ? ops : NULL, obj};
    return r;
}

zkr_lock_ref_t zkr_mutex_ref(zkr_mutex_t *m)
{
    return make_ref(&mutex_ops, m);
}

zkr_lock_ref_t zkr_semaphore_mutex_ref(zkr_semaphore_mutex_t *m)
{
    return make_ref(&smutex_ops, m);
}

zkr_lock_ref_t zkr_rwlock_read_ref(zkr_rwlock_t *l)
{
    return make_ref(&rd_ops, l);
}

zkr_lock_ref_t zkr_rwlock_write_ref(zkr_rwlock_t *l)
{
    return make_ref(&wr_ops, l);
}

int zkr_lock_acquire(zkr_lock_ref_t r, int64_t timeout_ms)
{
    const lock_ops_t *ops = valid_ops(r);
    return ops ? ops->acquire(r.obj, timeout_ms) : ZKR_EINVAL;
}

int zkr_lock_release(zkr_lock_ref_t r)
{
    const lock_ops_t *ops = valid_ops(r);
    return ops ? ops->release(r.obj) : ZKR_EINVAL;
}

int zkr_lock_is_held(zkr_lock_ref_t r)
{
    const lock_ops_t *ops = valid_ops(r);
    return ops ? ops->is_held(r.obj) : 0;
}

int zkr_lock_fencing_token(zkr_lock_ref_t r, int64_t *token)
{
    const lock_ops_t *ops = valid_ops(r);
    return (ops && token) ? ops->token(r.obj, token) : ZKR_EINVAL;
}

int zkr_lock_node_path(zkr_lock_ref_t r, char **path)
{
    if (path)
        *path = NULL;
    const lock_ops_t *ops = valid_ops(r);
    return (ops && path) ? ops->path(r.obj, path) : ZKR_EINVAL;
}

zkr_hold_state_t zkr_lock_hold_state(zkr_lock_ref_t r)
{
    const lock_ops_t *ops = valid_ops(r);
    return ops ? ops->state(r.obj) : ZKR_HOLD_NONE;
}

const char *zkr_lock_kind(zkr_lock_ref_t r)
{
    const lock_ops_t *ops = valid_ops(r);
    return ops ? ops->kind : "invalid";
}

/* ---- hold listeners: each is told its lock's reference -------------------------- */

int zkr_mutex_set_hold_listener(zkr_mutex_t *m, zkr_hold_fn fn, void *ctx)
{
    if (!m)
        return ZKR_EINVAL;
    zkr__mutex_set_listener(m, (zkr__hold_listener_t){.fn = fn, .ctx = ctx, .lock = zkr_mutex_ref(m), .owner = m});
    return ZKR_OK;
}

int zkr_rwlock_set_hold_listener(zkr_rwlock_t *l, zkr_hold_fn fn, void *ctx)
{
    if (!l)
        return ZKR_EINVAL;
    zkr__hold_listener_t read = {.fn = fn, .ctx = ctx, .lock = zkr_rwlock_read_ref(l), .owner = l};
    zkr__hold_listener_t write = read;
    write.lock = zkr_rwlock_write_ref(l);
    zkr__rwlock_set_listener(l, read, write);
    return ZKR_OK;
}

int zkr_semaphore_mutex_set_hold_listener(zkr_semaphore_mutex_t *m, zkr_hold_fn fn, void *ctx)
{
    if (!m)
        return ZKR_EINVAL;
    zkr__semaphore_mutex_set_listener(m, (zkr__hold_listener_t){.fn = fn, .ctx = ctx, .lock = zkr_semaphore_mutex_ref(m)});
    return ZKR_OK;
}

int zkr_lock_ref_equal(zkr_lock_ref_t a, zkr_lock_ref_t b)
{
    return a.ops == b.ops && a.obj == b.obj;
}

/* ---- multi-lock ------------------------------------------------------------ */

/* A thread's acquires through a multi-lock not yet released. */
typedef struct ml_holder {
    pthread_t thread;
    long count;
} ml_holder_t;

struct zkr_multilock {
    zkr_lock_ref_t *parts;
    size_t n;
    pthread_mutex_t mu;   /* holders */
    ml_holder_t *holders; /* the threads holding it through it */
    size_t nholders, capholders;
};

/* The calling thread's acquires through ml go up (+1) or down (-1).
 * Returns 0, or -1 if there is no memory for a new holder (the acquire is
 * then given back by the caller). */
static int holders_add(zkr_multilock_t *ml, int delta)
{
    pthread_t self = pthread_self();
    pthread_mutex_lock(&ml->mu);
    size_t i = 0;
    while (i < ml->nholders && !pthread_equal(ml->holders[i].thread, self))
        i++;
    if (i == ml->nholders && delta > 0) {
        if (ml->nholders == ml->capholders) {
            size_t cap = ml->capholders ? 2 * ml->capholders : 4;
            ml_holder_t *v = realloc(ml->holders, cap * sizeof *v);
            if (!v) {
                pthread_mutex_unlock(&ml->mu);
                return -1;
            }
            ml->holders = v;
            ml->capholders = cap;
        }
        ml->holders[ml->nholders++] = (ml_holder_t){self, 0};
    }
    if (i < ml->nholders) {
        ml->holders[i].count += delta;
        if (ml->holders[i].count <= 0)
            ml->holders[i] = ml->holders[--ml->nholders];
    }
    pthread_mutex_unlock(&ml->mu);
    return 0;
}

/* How many acquires the calling thread holds through ml. */
static long holders_mine(zkr_multilock_t *ml)
{
    pthread_t self = pthread_self();
    long n = 0;
    pthread_mutex_lock(&ml->mu);
    for (size_t i = 0; i < ml->nholders; i++)
        if (pthread_equal(ml->holders[i].thread, self))
            n = ml->holders[i].count;
    pthread_mutex_unlock(&ml->mu);
    return n;
}

int zkr_multilock_new(zkr_multilock_t **out, const zkr_lock_ref_t *locks, size_t n)
{
    if (out)
        *out = NULL;
    if (!out || !locks || n == 0 || n > 1024 * 1024)
        return ZKR_EINVAL;
    for (size_t i = 0; i < n; i++)
        if (!valid_ops(locks[i]))
            return ZKR_EINVAL;
    /* Combinations that can never be granted are refused now, not at the
     * deadline: the same lock twice, or a read lock before the write lock
     * of the same read/write lock (an upgrade). */
    for (size_t i = 0; i < n; i++) {
        for (size_t j = i + 1; j < n; j++) {
            if (locks[i].obj != locks[j].obj)
                continue;
            if (locks[i].ops == locks[j].ops)
                return ZKR_EINVAL;
            if (locks[i].ops == &rd_ops && locks[j].ops == &wr_ops)
                return ZKR_ENEVER;
        }
    }
    zkr_multilock_t *ml = calloc(1, sizeof *ml);
    if (!ml)
        return ZKR_ENOMEM;
    if (pthread_mutex_init(&ml->mu, NULL) != 0) {
        free(ml);
        return ZKR_ESYSTEM;
    }
    ml->parts = malloc(n * sizeof *ml->parts);
    if (!ml->parts) {
        pthread_mutex_destroy(&ml->mu);
        free(ml);
        return ZKR_ENOMEM;
    }
    memcpy(ml->parts, locks, n * sizeof *ml->parts);
    ml->n = n;
    *out = ml;
    return ZKR_OK;
}

/* How part r would be acquired by the calling thread now: PART_REENTER
 * (it holds r, or the other half of r's read/write lock: no new node, or
 * a node of its own kind), PART_QUEUE (*t: the queue it joins) or
 * PART_OWN (the semaphore mutex: its own protocol). */
#define PART_OWN 0
#define PART_QUEUE 1
#define PART_REENTER 2
static int part_kind(zkr_lock_ref_t r, zkr__async_target_t *t)
{
    switch (zkr__lock_ref_kind(r)) {
    case ZKR__LK_MUTEX:
        if (zkr_mutex_hold_state(r.obj) != ZKR_HOLD_NONE)
            return PART_REENTER;
        zkr__mutex_async_target(r.obj, t);
        return PART_QUEUE;
    case ZKR__LK_READ:
    case ZKR__LK_WRITE:
        if (zkr_rwlock_read_hold_state(r.obj) != ZKR_HOLD_NONE || zkr_rwlock_write_hold_state(r.obj) != ZKR_HOLD_NONE)
            return PART_REENTER;
        zkr__rwlock_async_target(r.obj, zkr__lock_ref_kind(r) == ZKR__LK_WRITE, t);
        return PART_QUEUE;
    default:
        return PART_OWN;
    }
}

/* The creates (and listings) of every part that joins a queue go out at
 * once, the creates of the parts on one client as one multi (one
 * transaction): an uncontended multi-lock costs one round trip, not one
 * per part.
 * The parts their listings grant are kept, in order, up to the first that
 * must wait; that one's node keeps its place, and every later node is
 * deleted: from there on the parts are taken one by one, in order, as
 * ever, so a multi-lock never waits on a part while queued on a later one
 * (the global order still prevents deadlocks). */
static zkr__prefetch_t **prefetch_parts(const zkr_multilock_t *ml, int64_t deadline)
{
    zkr__prefetch_t **pf = calloc(ml->n, sizeof *pf);
    int *kinds = calloc(ml->n, sizeof *kinds);
    zkr__prefetch_target_t *targets = calloc(ml->n, sizeof *targets);
    if (!pf || !kinds || !targets) {
        free(pf);
        free(kinds);
        free(targets);
        return NULL; /* one by one, as ever */
    }
    for (size_t i = 0; i < ml->n; i++) {
        zkr__async_target_t t;
        kinds[i] = part_kind(ml->parts[i], &t);
        /* The same lock again (a mutex re-entered, or the read part of a
         * write part before it: a downgrade) is granted at once by the
         * earlier part, on a node of its own: nothing to send ahead. */
        for (size_t j = 0; j < i && kinds[i] == PART_QUEUE; j++)
            if (ml->parts[j].obj == ml->parts[i].obj)
                kinds[i] = PART_REENTER;
        if (kinds[i] == PART_QUEUE)
            targets[i] = (zkr__prefetch_target_t){t.c, t.dir, t.drv};
    }
    /* The parts on one client: one multi of creates. */
    zkr__prefetch_start_all(targets, ml->n, pf);
    free(targets);
    int ahead = 1;
    for (size_t i = 0; i < ml->n; i++) {
        if (!ahead) {
            zkr__prefetch_free(pf[i]);
            pf[i] = NULL;
        } else if (pf[i]) {
            ahead = zkr__prefetch_finish(pf[i], deadline) == 1;
        } else {
            ahead = kinds[i] == PART_REENTER;
        }
    }
    free(kinds);
    return pf;
}

int zkr_multilock_acquire(zkr_multilock_t *ml, int64_t timeout_ms)
{
    if (!ml)
        return ZKR_EINVAL;
    int64_t deadline = zkr__deadline(timeout_ms);
    zkr__prefetch_t **pf = prefetch_parts(ml, deadline);
    int rc = ZKR_OK;
    size_t i;
    for (i = 0; i < ml->n; i++) {
        /* One deadline for the whole acquire: each part gets what is left. */
        int64_t left = deadline == INT64_MAX ? -1 : zkr__remaining_ms(deadline);
        zkr__prefetch_offer(pf ? pf[i] : NULL);
        rc = zkr_lock_acquire(ml->parts[i], left);
        zkr__prefetch_offer(NULL);
        if (pf) {
            zkr__prefetch_free(pf[i]); /* deletes its node if not taken */
            pf[i] = NULL;
        }
        if (rc != ZKR_OK)
            break;
    }
    if (rc == ZKR_OK && holders_add(ml, 1) != 0) {
        rc = ZKR_ENOMEM; /* not recorded: given back, as a failed part */
        i = ml->n;
    }
    if (rc != ZKR_OK) {
        for (size_t j = i + 1; pf && j < ml->n; j++)
            zkr__prefetch_free(pf[j]);
        /* The parts taken go back together, within the time limit. */
        zkr__deletes_defer_begin();
        while (i-- > 0)
            zkr_lock_release(ml->parts[i]);
        zkr__deletes_defer_end_within(deadline);
    }
    free(pf);
    return rc;
}

int zkr_multilock_release(zkr_multilock_t *ml)
{
    if (!ml)
        return ZKR_EINVAL;
    holders_add(ml, -1); /* (a release of parts taken otherwise: no record) */
    /* Every part's delete goes out at once; their answers are awaited
     * together. */
    zkr__deletes_defer_begin();
    int first = ZKR_OK;
    for (size_t i = ml->n; i-- > 0;) {
        int rc = zkr_lock_release(ml->parts[i]);
        if (rc != ZKR_OK && first == ZKR_OK)
            first = rc;
    }
    int rc = zkr__deletes_defer_end();
    return first != ZKR_OK ? first : rc;
}

int zkr_multilock_is_held(zkr_multilock_t *ml)
{
    if (!ml)
        return 0;
    for (size_t i = 0; i < ml->n; i++)
        if (!zkr_lock_is_held(ml->parts[i]))
            return 0;
    return 1;
}

void zkr_multilock_free(zkr_multilock_t *ml)
{
    if (!ml)
        return;
    /* What it holds goes with it, as for every object: the parts the
     * calling thread took through it, as many times as it took them.
     * Parts taken otherwise are not its own; another thread's acquires
     * through it are that thread's (released by it, or by freeing the
     * parts' objects). */
    for (long n = holders_mine(ml); n > 0; n--)
        zkr_multilock_release(ml);
    free(ml->holders);
    pthread_mutex_destroy(&ml->mu);
    free(ml->parts);
    free(ml);
}

/* For the asynchronous layer (async.c): which kind a reference is. */
int zkr__lock_ref_kind(zkr_lock_ref_t r)
{
    const lock_ops_t *ops = valid_ops(r);
    if (ops == &mutex_ops)
        return ZKR__LK_MUTEX;
    if (ops == &smutex_ops)
        return ZKR__LK_SMUTEX;
    if (ops == &rd_ops)
        return ZKR__LK_READ;
    if (ops == &wr_ops)
        return ZKR__LK_WRITE;
    return 0;
}

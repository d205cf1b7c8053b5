/* zkr_atomic_long_t (zkr/counter.h), Curator's DistributedAtomicLong: read
 * the 8-byte value with its stat, write the new one with that version (or
 * create the node), try again on a lost race by the retry policy, then
 * under the promoted mutex; a lost answer is settled by recipes/vwrite.c,
 * never applied twice. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "recipes/vwrite.h"
#include "zkr/mutex.h"

struct zkr_atomic_long {
    zkr_client_t *c;
    char *path;
    char *lock_path;
    zkr_atomic_options_t opt;
    zkr_mutex_t *mutex; /* NULL: never promoted */
};

/* How the new value is made from the one read. */
typedef struct make {
    int add;     /* 1: read + arg; 0: arg */
    int64_t arg;
} make_t;

void zkr_atomic_options_init_size(zkr_atomic_options_t *opt, size_t size)
{
    if (!opt || size < sizeof(size_t))
        return;
    zkr_atomic_options_t d;
    memset(&d, 0, sizeof d);
    d.size = size < sizeof d ? size : sizeof d;
    zkr_retry_exponential(&d.retry, 10, 10, 1000);
    zkr_retry_exponential(&d.lock_retry, 10, 3, 1000);
    d.lock_timeout_ms = 10000;
    d.timeout_ms = 30000;
    memcpy(opt, &d, d.size);
}

int zkr_atomic_long_new(zkr_atomic_long_t **out, zkr_client_t *c, const char *path, const zkr_atomic_options_t *opt)
{
    if (out)
        *out = NULL;
    zkr_atomic_options_t o;
    zkr_atomic_options_init(&o);
    if (opt && opt->size != sizeof o)
        return ZKR_EINVAL;
    if (opt)
        o = *opt;
    if (!out || !c || !zkr__path_valid(path) || !zkr__retry_valid(&o.retry) ||
        (o.lock_path && (!zkr__path_valid(o.lock_path) || !zkr__retry_valid(&o.lock_retry))))
        return ZKR_EINVAL;
    zkr_atomic_long_t *a = calloc(1, sizeof *a);
    if (!a || !(a->path = strdup(path)) || (o.lock_path && !(a->lock_path = strdup(o.lock_path)))) {
        if (a)
            free(a->path);
        free(a);
        return ZKR_ENOMEM;
    }
    a->opt = o;
    a->opt.lock_path = a->lock_path;
    int rc = zkr__client_retain(c);
    if (rc == ZKR_OK) {
        a->c = c;
        if (a->lock_path)
            rc = zkr_mutex_new(&a->mutex, c, a->lock_path);
    }
    if (rc != ZKR_OK) {
        zkr_atomic_long_free(a);
        return rc;
    }
    *out = a;
    return ZKR_OK;
}

void zkr_atomic_long_free(zkr_atomic_long_t *a)
{
    if (!a)
        return;
    zkr_mutex_free(a->mutex);
    if (a->c)
        zkr__client_release(a->c);
    free(a->lock_path);
    free(a->path);
    free(a);
}

/* Curator's bytesToValue: no data reads 0; else exactly 8 bytes. */
static int parse(const zkr__rq_t *rq, int64_t *v)
{
    if (!rq->value || rq->value_len == 0) {
        *v = 0;
        return ZKR_OK;
    }
    if (rq->value_len != 8)
        return ZKR_EBADDATA;
    *v = zkr__be64_get((const unsigned char *)rq->value);
    return ZKR_OK;
}

/* Read the value: ZKR_OK with *v and *st (*missing 1: no node, *v 0). */
static int read_value(zkr_atomic_long_t *a, int64_t deadline, int64_t *v, struct Stat *st, int *missing)
{
    zkr__rq_t rq;
    memset(&rq, 0, sizeof rq);
    int zrc = zkr__vread(a->c, a->path, &rq, deadline);
    int rc = zkr__rq_error(zrc);
    *missing = zrc == ZNONODE;
    *v = 0;
    if (zrc == ZNONODE)
        rc = ZKR_OK;
    else if (zrc == ZOK && (rc = parse(&rq, v)) == ZKR_OK)
        *st = rq.stat;
    zkr__rq_clear(&rq);
    return rc;
}

/* One read and one write of the made value (Curator's tryOnce). */
static int try_once(zkr_atomic_long_t *a, make_t mk, int64_t deadline, zkr_atomic_result_t *r,
                    zkr__vw_outcome_t *outcome)
{
    struct Stat st;
    memset(&st, 0, sizeof st);
    int64_t pre;
    int missing;
    int rc = read_value(a, deadline, &pre, &st, &missing);
    if (rc != ZKR_OK)
        return rc;
    r->pre_value = pre;
    r->post_value = mk.add ? (int64_t)((uint64_t)pre + (uint64_t)mk.arg) : mk.arg;
    unsigned char b[8];
    zkr__be64_put(b, r->post_value);
    zkr__vw_t w = {a->path, (const char *)b, 8, missing, st.version, st.czxid};
    return zkr__vwrite(a->c, &w, deadline, outcome, NULL);
}

/* Tries by `policy` until one is applied: ZKR_OK (*done 1: applied),
 * ZKR_ECONNLOSS (unknown), ZKR_ETIMEDOUT (the deadline), or a code. */
static int try_loop(zkr_atomic_long_t *a, make_t mk, const zkr_retry_t *policy, int64_t deadline,
                    zkr_atomic_result_t *r, int *tries, int *done)
{
    int64_t start = zkr__now_ms();
    int n = 0, late = 0;
    *done = 0;
    for (;;) {
        (*tries)++;
        n++;
        zkr__vw_outcome_t outcome = ZKR__VW_RACE;
        int rc = try_once(a, mk, deadline, r, &outcome);
        if (rc != ZKR_OK)
            return rc;
        if (outcome == ZKR__VW_UNKNOWN)
            return ZKR_ECONNLOSS;
        if (outcome == ZKR__VW_APPLIED) {
            *done = 1;
            return ZKR_OK;
        }
        if (!zkr__retry_sleep(policy, n, start, deadline, &late))
            return late ? ZKR_ETIMEDOUT : ZKR_OK;
    }
}

static int64_t min_timeout(int64_t lock_ms, int64_t deadline)
{
    int64_t left = zkr__remaining_ms(deadline);
    if (lock_ms < 0 || lock_ms > left)
        return left == INT64_MAX ? -1 : left;
    return lock_ms;
}

/* The result's last word: post_value is the value read unless written
 * (or maybe written: ZKR_ECONNLOSS). */
static int finish(zkr_atomic_result_t *r, int rc, int done)
{
    r->succeeded = rc == ZKR_OK && done;
    if (!r->succeeded && rc != ZKR_ECONNLOSS)
        r->post_value = r->pre_value;
    return rc;
}

/* Curator's trySet: optimistic, then promoted. */
static int run(zkr_atomic_long_t *a, make_t mk, zkr_atomic_result_t *r)
{
    if (!a || !r)
        return ZKR_EINVAL;
    memset(r, 0, sizeof *r);
    int64_t deadline = zkr__deadline(a->opt.timeout_ms);
    int64_t t0 = zkr__now_ms();
    int done;
    int rc = try_loop(a, mk, &a->opt.retry, deadline, r, &r->optimistic_tries, &done);
    r->optimistic_time_ms = zkr__now_ms() - t0;
    if (rc != ZKR_OK || done || !a->mutex)
        return finish(r, rc, done);
    t0 = zkr__now_ms();
    rc = zkr_mutex_acquire(a->mutex, min_timeout(a->opt.lock_timeout_ms, deadline));
    if (rc == ZKR_OK) {
        rc = try_loop(a, mk, &a->opt.lock_retry, deadline, r, &r->promoted_tries, &done);
        r->succeeded = rc == ZKR_OK && done;
        int rel = zkr_mutex_release(a->mutex);
        if (rel != ZKR_OK)
            zkr__log(a->c, ZKR_LOG_WARN, "atomic long %s: releasing %s: %s", a->path, a->lock_path,
                     zkr_strerror(rel));
    } else if (rc == ZKR_ETIMEDOUT && zkr__remaining_ms(deadline) > 0) {
        rc = ZKR_OK; /* Curator: the lock not had in time, not succeeded */
    }
    r->promoted_time_ms = zkr__now_ms() - t0;
    return finish(r, rc, r->succeeded);
}

int zkr_atomic_long_add(zkr_atomic_long_t *a, int64_t delta, zkr_atomic_result_t *r)
{
    return run(a, (make_t){1, delta}, r);
}

int zkr_atomic_long_subtract(zkr_atomic_long_t *a, int64_t delta, zkr_atomic_result_t *r)
{
    return run(a, (make_t){1, (int64_t)(0 - (uint64_t)delta)}, r);
}

int zkr_atomic_long_increment(zkr_atomic_long_t *a, zkr_atomic_result_t *r)
{
    return run(a, (make_t){1, 1}, r);
}

int zkr_atomic_long_decrement(zkr_atomic_long_t *a, zkr_atomic_result_t *r)
{
    return run(a, (make_t){1, -1}, r);
}

int zkr_atomic_long_try_set(zkr_atomic_long_t *a, int64_t value, zkr_atomic_result_t *r)
{
    return run(a, (make_t){0, value}, r);
}

int zkr_atomic_long_get(zkr_atomic_long_t *a, zkr_atomic_result_t *r)
{
    if (!a || !r)
        return ZKR_EINVAL;
    memset(r, 0, sizeof *r);
    struct Stat st;
    int missing;
    int rc = read_value(a, zkr__deadline(a->opt.timeout_ms), &r->pre_value, &st, &missing);
    r->post_value = r->pre_value;
    r->succeeded = rc == ZKR_OK;
    return rc;
}

int zkr_atomic_long_compare_and_set(zkr_atomic_long_t *a, int64_t expected, int64_t value, zkr_atomic_result_t *r)
{
    if (!a || !r)
        return ZKR_EINVAL;
    memset(r, 0, sizeof *r);
    int64_t deadline = zkr__deadline(a->opt.timeout_ms), t0 = zkr__now_ms();
    zkr__rq_t rq;
    memset(&rq, 0, sizeof rq);
    int zrc = zkr__vread(a->c, a->path, &rq, deadline);
    int rc = zrc == ZNONODE ? ZKR_OK : zkr__rq_error(zrc);
    r->optimistic_tries = 1;
    if (zrc == ZOK && (rc = parse(&rq, &r->pre_value)) == ZKR_OK && rq.value_len == 8 && r->pre_value == expected) {
        /* Curator compares the bytes: only 8 of them can match */
        unsigned char b[8];
        zkr__be64_put(b, value);
        zkr__vw_t w = {a->path, (const char *)b, 8, 0, rq.stat.version, rq.stat.czxid};
        zkr__vw_outcome_t outcome = ZKR__VW_RACE;
        r->post_value = value;
        rc = zkr__vwrite(a->c, &w, deadline, &outcome, NULL);
        if (rc == ZKR_OK && outcome == ZKR__VW_UNKNOWN)
            rc = ZKR_ECONNLOSS;
        r->succeeded = rc == ZKR_OK && outcome == ZKR__VW_APPLIED;
    }
    if (!r->succeeded && rc != ZKR_ECONNLOSS)
        r->post_value = r->pre_value;
    zkr__rq_clear(&rq);
    r->optimistic_time_ms = zkr__now_ms() - t0;
    return rc;
}

/* An unconditional or creating write of value: ZKR_OK (*outcome) or a code. */
static int write_value(zkr_atomic_long_t *a, int64_t value, int create, int64_t deadline, zkr__vw_outcome_t *outcome)
{
    unsigned char b[8];
    zkr__be64_put(b, value);
    zkr__vw_t w = {a->path, (const char *)b, 8, create, -1, 0};
    return zkr__vwrite(a->c, &w, deadline, outcome, NULL);
}

int zkr_atomic_long_try_initialize(zkr_atomic_long_t *a, int64_t value, int *initialized)
{
    if (initialized)
        *initialized = 0;
    if (!a || !initialized)
        return ZKR_EINVAL;
    zkr__vw_outcome_t outcome = ZKR__VW_RACE;
    int rc = write_value(a, value, 1, zkr__deadline(a->opt.timeout_ms), &outcome);
    if (rc == ZKR_OK && outcome == ZKR__VW_UNKNOWN)
        return ZKR_ECONNLOSS;
    *initialized = rc == ZKR_OK && outcome == ZKR__VW_APPLIED;
    return rc;
}

int zkr_atomic_long_force_set(zkr_atomic_long_t *a, int64_t value)
{
    if (!a)
        return ZKR_EINVAL;
    int64_t deadline = zkr__deadline(a->opt.timeout_ms);
    zkr__vw_outcome_t outcome = ZKR__VW_RACE;
    /* Curator's forceSet: set; missing: create; made meanwhile: set */
    int rc = write_value(a, value, 0, deadline, &outcome);
    if (rc == ZKR_ENONODE && (rc = write_value(a, value, 1, deadline, &outcome)) == ZKR_OK &&
        outcome == ZKR__VW_RACE)
        rc = write_value(a, value, 0, deadline, &outcome);
    if (rc == ZKR_OK && outcome == ZKR__VW_UNKNOWN)
        return ZKR_ECONNLOSS;
    return rc;
}

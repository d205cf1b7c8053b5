/* Counters: a shared 32-bit count kept by a watch (Curator's SharedCount)
 * and a 64-bit atomic long changed by versioned writes, optionally under
 * a lock (Curator's DistributedAtomicLong), on the same nodes as Curator.
 *
 *   zkr_count_t *sc;                       // SharedCount
 *   zkr_count_new(&sc, c, "/app/count", 0);
 *   zkr_count_start(sc, 10000);
 *   int32_t v, ver; int set;
 *   zkr_count_get(sc, &v, &ver);
 *   zkr_count_try_set(sc, ver, v + 1, &set, 5000);
 *
 *   zkr_atomic_long_t *a;                  // DistributedAtomicLong
 *   zkr_atomic_long_new(&a, c, "/app/hits", NULL);
 *   zkr_atomic_result_t r;
 *   zkr_atomic_long_increment(a, &r);      // r.succeeded, r.pre_value, r.post_value
 *
 * Wire format (the same bytes as Curator 5.x):
 *  - shared count: the node's data is exactly 4 bytes, a big-endian signed
 *    int; a persistent node, its parents made as containers.
 *  - atomic long: 8 bytes, a big-endian signed long; no data (or an empty
 *    node) reads as 0, as in Curator; a persistent node, its parents made
 *    as containers.  Promoted to a lock: an InterProcessMutex at the lock
 *    path (zkr_mutex_t, the same nodes as Curator's).
 *  Data of another length is refused with ZKR_EBADDATA (Curator reads the
 *  first 4 or 8 bytes of longer data, and fails on shorter).
 *
 * Exactly once.  A write whose answer is lost (the connection dropped, the
 * session expired, or the call's timeout passed while the link stalled)
 * may or may not have been applied.  Curator repeats the whole
 * read-then-write and can then apply an increment twice; here a write is
 * never sent again unless its version makes a second copy harmless:
 *  - a versioned write (set with the version read, or a create of a node
 *    that was missing) is sent again, unchanged, once the link is back: at
 *    most one of the copies can succeed.  ZOK: applied (once).  Refused
 *    (bad version, node exists): the node is read; if its version is not
 *    the one ours would have made, or its data differs from ours, ours was
 *    not applied (someone else's write won: tried again as any lost race);
 *    if it holds our data at exactly the version ours would have made, or
 *    the node is gone, or was changed further, nobody can tell whose write
 *    it was: the call returns ZKR_ECONNLOSS ("outcome unknown").
 *  - an unconditional write (zkr_count_set, zkr_atomic_long_force_set)
 *    whose answer is lost is not sent again: ZKR_ECONNLOSS.
 *  ZKR_ECONNLOSS therefore always means "applied at most once, maybe not
 *  at all"; every other result is exact: ZKR_OK with succeeded 1 was
 *  applied exactly once, anything else was not applied. */
#ifndef ZKR_COUNTER_H
#define ZKR_COUNTER_H

#include "zkr/client.h"
#include "zkr/common.h"
#include "zkr/errors.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- retry policies (Curator's ExponentialBackoffRetry,
 * BoundedExponentialBackoffRetry, RetryUntilElapsed) -------------------- */

typedef enum zkr_retry_kind {
    ZKR_RETRY_EXPONENTIAL = 1,  /* retry n sleeps base * random(1 .. 2^(n+1)-1)
                                   ms (at least base), capped at max_sleep_ms */
    ZKR_RETRY_UNTIL_ELAPSED = 2 /* retry while less than max_elapsed_ms passed
                                   since the first try, sleeping base_sleep_ms */
} zkr_retry_kind_t;

/* How often a lost race is tried again.  Fill it with zkr_retry_exponential
 * or zkr_retry_until_elapsed (or by hand: every call checks it). */
typedef struct zkr_retry {
    zkr_retry_kind_t kind;
    int max_retries;        /* EXPONENTIAL: tries after the first, 0..29 */
    int64_t base_sleep_ms;  /* >= 0 */
    int64_t max_sleep_ms;   /* EXPONENTIAL: the longest sleep, >= base (Curator's
                               unbounded form: INT32_MAX) */
    int64_t max_elapsed_ms; /* UNTIL_ELAPSED: >= 0 */
} zkr_retry_t;

/* Fill r.  Returns ZKR_OK, ZKR_EINVAL (r NULL, max_retries outside 0..29,
 * a negative sleep, max_sleep_ms < base_sleep_ms; r is untouched). */
ZKR_EXTERN int zkr_retry_exponential(zkr_retry_t *r, int64_t base_sleep_ms, int max_retries, int64_t max_sleep_ms);
/* Returns ZKR_OK, ZKR_EINVAL (r NULL, a negative time). */
ZKR_EXTERN int zkr_retry_until_elapsed(zkr_retry_t *r, int64_t max_elapsed_ms, int64_t sleep_ms);

/* ---- shared count (SharedCount) ---------------------------------------- */

typedef struct zkr_count zkr_count_t;

typedef enum zkr_count_event_type {
    ZKR_COUNT_CHANGED = 1, /* the node's data changed: value, version */
    ZKR_COUNT_DELETED = 2, /* the node was deleted (zkr_count_get: ZKR_ENONODE
                              until it is created again) */
    ZKR_COUNT_BADDATA = 3, /* the node's data is not 4 bytes: version */
    ZKR_COUNT_STATE = 4    /* the connection's state changed: state */
} zkr_count_event_type_t;

typedef struct zkr_count_event {
    zkr_count_event_type_t type;
    int32_t value;    /* CHANGED */
    int32_t version;  /* CHANGED, BADDATA */
    zkr_state_t state; /* STATE */
} zkr_count_event_t;

/* The count's listener: told each change after the first read of
 * zkr_count_start (never the value that read found), in the server's
 * order, on the client's callback thread, with its count first (Curator's
 * SharedCountListener: countHasChanged and stateChanged).
 * It may call the library (zkr_count_get, _set, _try_set too), but not
 * zkr_count_free on its own count. */
typedef void (*zkr_count_fn)(zkr_count_t *sc, const zkr_count_event_t *event, void *ctx);

/* A count at `path` whose node is made with `seed` by zkr_count_start if
 * missing.  Nothing is sent.  Returns ZKR_OK, ZKR_EINVAL (out, c NULL; a
 * path ZooKeeper would refuse), ZKR_ECLOSED, ZKR_ENOMEM, ZKR_ESYSTEM. */
ZKR_EXTERN int zkr_count_new(zkr_count_t **out, zkr_client_t *c, const char *path, int32_t seed);

/* The listener (NULL removes it), any time: told the events after the
 * call.  Returns ZKR_OK, ZKR_EINVAL (sc NULL). */
ZKR_EXTERN int zkr_count_set_listener(zkr_count_t *sc, zkr_count_fn fn, void *ctx);
#ifdef ZKR__CHECKS
#define zkr_count_set_listener(sc, fn, ctx)                                                                 \
    ZKR__CHECKED(fn, zkr_count_fn,                                                                          \
                 "a count listener is void fn(zkr_count_t *sc, const zkr_count_event_t *event, void *ctx)", \
                 zkr_count_set_listener(sc, fn, ctx))
#endif

/* Create the node with the seed if missing (parents as containers), then
 * read and watch it until freed (once).  timeout_ms < 0: no limit (the
 * same for zkr_count_set and zkr_count_try_set).  Returns ZKR_OK, ZKR_EINVAL,
 * ZKR_ESTATE (started before), ZKR_ETIMEDOUT,
 * ZKR_ENOAUTH, ZKR_ECLOSED, ZKR_ENOMEM, ZKR_ESYSTEM, ZKR_EZOOKEEPER (on
 * any error the count is not started: start again). */
ZKR_EXTERN int zkr_count_start(zkr_count_t *sc, int64_t timeout_ms);

/* The count and its version, from the watched copy (no request; any
 * thread).  While disconnected the copy may be stale.  Returns ZKR_OK,
 * ZKR_EINVAL (a NULL argument), ZKR_ESTATE (not started), ZKR_ENONODE (the
 * node was deleted), ZKR_EBADDATA (its data is not 4 bytes; *version is
 * set). */
ZKR_EXTERN int zkr_count_get(zkr_count_t *sc, int32_t *value, int32_t *version);

/* Set the count whatever its version (Curator's setCount).  Returns
 * ZKR_OK, ZKR_EINVAL, ZKR_ESTATE, ZKR_ENONODE (the node was deleted),
 * ZKR_ETIMEDOUT (nothing sent in time, or nothing applied), ZKR_ECONNLOSS
 * (the answer was lost: outcome unknown, never sent twice),
 * ZKR_ENOAUTH, ZKR_ECLOSED, ZKR_ENOMEM, ZKR_EZOOKEEPER. */
ZKR_EXTERN int zkr_count_set(zkr_count_t *sc, int32_t value, int64_t timeout_ms);

/* Set the count only if its version is still `version` (Curator's
 * trySetCount(VersionedValue, int)): *set is 1 if it was set, 0 if the
 * copy's version already differs (no request) or the server's did.
 * Returns ZKR_OK (see *set), ZKR_EINVAL, ZKR_ESTATE, ZKR_ENONODE,
 * ZKR_ETIMEDOUT (nothing applied), ZKR_ECONNLOSS (outcome unknown: the
 * rule above), ZKR_ENOAUTH, ZKR_ECLOSED, ZKR_ENOMEM,
 * ZKR_EZOOKEEPER. */
ZKR_EXTERN int zkr_count_try_set(zkr_count_t *sc, int32_t version, int32_t value, int *set, int64_t timeout_ms);

/* Stop watching and free: after it returns the listener is not running
 * (unless called from it: not allowed, logged, nothing done).  The node
 * stays.  No other thread may be inside a call on sc.  NULL is a no-op. */
ZKR_EXTERN void zkr_count_free(zkr_count_t *sc);

/* "CHANGED", "DELETED", "BADDATA", "STATE"; "UNKNOWN" otherwise. */
ZKR_EXTERN const char *zkr_count_event_name(zkr_count_event_type_t type);

/* ---- atomic long (DistributedAtomicLong) -------------------------------- */

typedef struct zkr_atomic_long zkr_atomic_long_t;

typedef struct zkr_atomic_options {
    size_t size;             /* set by zkr_atomic_options_init */
    zkr_retry_t retry;       /* lost races tried again (default: exponential,
                                10 ms base, 10 retries, 1000 ms max sleep) */
    const char *lock_path;   /* NULL (default): never promoted; else, when
                                the optimistic tries all lost, take the
                                mutex at this path and try again under it
                                (Curator's PromotedToLock) */
    int64_t lock_timeout_ms; /* the longest wait for that mutex (default
                                10000; < 0 forever) */
    zkr_retry_t lock_retry;  /* tries under the mutex (default: exponential,
                                10 ms base, 3 retries, 1000 ms max sleep) */
    int64_t timeout_ms;      /* each call returns within this (default
                                30000; < 0 never gives up) */
} zkr_atomic_options_t;

/* Fill opt with the defaults (a macro passing the program's struct size,
 * as zkr_client_options_init).  NULL is ignored. */
ZKR_EXTERN void zkr_atomic_options_init_size(zkr_atomic_options_t *opt, size_t size);
#define zkr_atomic_options_init(opt) zkr_atomic_options_init_size((opt), sizeof(zkr_atomic_options_t))

/* What a call did (Curator's AtomicValue and AtomicStats). */
typedef struct zkr_atomic_result {
    int succeeded;      /* 1: applied (exactly once) */
    int64_t pre_value;  /* the value read before the write (the last read) */
    int64_t post_value; /* the value written (succeeded); that would have
                           been (ZKR_ECONNLOSS: maybe written); else the
                           value read (Curator's postValue is then 0) */
    int optimistic_tries;
    int promoted_tries;
    int64_t optimistic_time_ms;
    int64_t promoted_time_ms;
} zkr_atomic_result_t;

/* An atomic long at `path` (opt NULL: the defaults; the lock path is
 * copied).  Nothing is sent.  Returns ZKR_OK, ZKR_EINVAL (out, c NULL; a
 * path or lock path ZooKeeper would refuse; a retry policy that is not
 * valid; opt->size too small or too large), ZKR_ECLOSED, ZKR_ENOMEM,
 * ZKR_ESYSTEM. */
ZKR_EXTERN int zkr_atomic_long_new(zkr_atomic_long_t **out, zkr_client_t *c, const char *path,
                                   const zkr_atomic_options_t *opt);

/* Every call below fills *r (zeroed first) and returns:
 *   ZKR_OK          done: r->succeeded says whether it was applied (0: the
 *                   retry policies ran out, the lock was not had in time,
 *                   or a compare did not match; nothing applied)
 *   ZKR_ECONNLOSS   a write's answer was lost and could not be settled:
 *                   applied once or not at all (r->pre_value, post_value:
 *                   what it read and wrote)
 *   ZKR_ETIMEDOUT   opt.timeout_ms passed, or the retry policy's next
 *                   sleep would pass it; nothing applied
 *   ZKR_EBADDATA    the node's data is not 8 bytes (nor empty)
 *   ZKR_EINVAL (a NULL argument), ZKR_ENOAUTH, ZKR_ECLOSED, ZKR_ENOMEM,
 *   ZKR_EZOOKEEPER; with a lock path also what zkr_mutex_acquire returns
 *   but ZKR_ETIMEDOUT (ZKR_EDEADLK, ZKR_ESESSIONLOST, ...): nothing applied.
 * Values wrap around as Java's long does. */

/* The value (a missing node reads 0, succeeded 1). */
ZKR_EXTERN int zkr_atomic_long_get(zkr_atomic_long_t *a, zkr_atomic_result_t *r);
/* value + delta (the node made if missing, from 0). */
ZKR_EXTERN int zkr_atomic_long_add(zkr_atomic_long_t *a, int64_t delta, zkr_atomic_result_t *r);
ZKR_EXTERN int zkr_atomic_long_subtract(zkr_atomic_long_t *a, int64_t delta, zkr_atomic_result_t *r);
ZKR_EXTERN int zkr_atomic_long_increment(zkr_atomic_long_t *a, zkr_atomic_result_t *r);
ZKR_EXTERN int zkr_atomic_long_decrement(zkr_atomic_long_t *a, zkr_atomic_result_t *r);
/* Set `value` whatever the value was, by the optimistic rule (Curator's
 * trySet). */
ZKR_EXTERN int zkr_atomic_long_try_set(zkr_atomic_long_t *a, int64_t value, zkr_atomic_result_t *r);
/* Set `value` if the value is `expected`: one read, one versioned write,
 * never retried nor promoted (Curator's compareAndSet: a missing node, or
 * an empty one, never matches). */
ZKR_EXTERN int zkr_atomic_long_compare_and_set(zkr_atomic_long_t *a, int64_t expected, int64_t value,
                                               zkr_atomic_result_t *r);
/* Create the node with `value` if missing: *initialized 1 if this call
 * made it, 0 if it was there (Curator's initialize).  Returns ZKR_OK,
 * ZKR_ECONNLOSS (unknown), ZKR_ETIMEDOUT, and the codes above. */
ZKR_EXTERN int zkr_atomic_long_try_initialize(zkr_atomic_long_t *a, int64_t value, int *initialized);
/* Write `value` unconditionally, the node made if missing (Curator's
 * forceSet).  Returns ZKR_OK, ZKR_ECONNLOSS (the answer was lost: not
 * sent again), ZKR_ETIMEDOUT, and the codes above. */
ZKR_EXTERN int zkr_atomic_long_force_set(zkr_atomic_long_t *a, int64_t value);

/* Free (its mutex too).  No other thread may be inside a call on a.  NULL
 * is a no-op. */
ZKR_EXTERN void zkr_atomic_long_free(zkr_atomic_long_t *a);

#ifdef __cplusplus
}
#endif
#endif

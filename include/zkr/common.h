/* zkrecipes: definitions shared by every public header. */
#ifndef ZKR_COMMON_H
#define ZKR_COMMON_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Every public function carries ZKR_EXTERN; the library is built with
 * -fvisibility=hidden, so nothing else is exported. */
#if defined(ZKR_BUILDING) && defined(__GNUC__)
#define ZKR_EXTERN __attribute__((visibility("default")))
#else
#define ZKR_EXTERN
#endif

/* A name of 0.2.0 kept, deprecated, through the 1.x series: the compiler
 * names its replacement (docs/versioning.md). */
#if defined(__GNUC__) && !defined(ZKR_BUILDING)
#define ZKR_DEPRECATED(replacement) __attribute__((deprecated("use " replacement " (zkrecipes 1.0)")))
#else
#define ZKR_DEPRECATED(replacement)
#endif

/* Timeouts are in milliseconds: < 0 waits forever, 0 tries once without
 * waiting, > 0 waits at most that long. */
#define ZKR_WAIT_FOREVER ((int64_t)-1)

/* The longest a release waits for the server to confirm its delete.  On a
 * link that is down, or stalled and not yet detected, release does not
 * wait: the lock is no longer the caller's, release returns ZKR_OK (or
 * ZKR_ELOST), and the delete is finished in the background (until it
 * succeeds; if the session ends first, the node goes with it).  Releases
 * of many threads on one client are combined: while one delete of the
 * client's is in flight, the deletes that come meanwhile wait for it and
 * then go out together as one request; this wait counts too. */
#define ZKR_RELEASE_WAIT_MS 2000

/* Whether a hold (a lock, a lease) is still safe to act on.
 *   SAFE      the session is connected and our node is in place.
 *   IN_DOUBT  the connection is down (SUSPENDED): the session may or may not
 *             survive; stop acting on the protected resource (or use fencing
 *             tokens) until SAFE again.
 *   LOST      the session is gone (expired or LOST): someone else may hold
 *             the lock now.  The hold is over; release it (ZKR_ELOST) and
 *             acquire again if needed.
 * NONE is the state of something not held. */
typedef enum zkr_hold_state {
    ZKR_HOLD_NONE = 0,
    ZKR_HOLD_SAFE = 1,
    ZKR_HOLD_IN_DOUBT = 2,
    ZKR_HOLD_LOST = 3
} zkr_hold_state_t;

/* Completion of an asynchronous release: rc is what the blocking release
 * would have returned (ZKR_OK: the node is gone, or its delete could not be
 * answered in time and is finished in the background; ZKR_ELOST: the hold
 * had been lost with its session; a refusal of the server, ZKR_ENOAUTH...:
 * the node stays until its session ends, and is logged). */
typedef void (*zkr_release_fn)(int rc, void *ctx);

/* A reference to a lock of any kind (zkr/lock.h): a small value, copied
 * freely, which does not own the lock object (that must outlive it).  Made
 * by zkr_mutex_ref, zkr_semaphore_mutex_ref, zkr_rwlock_read_ref and
 * zkr_rwlock_write_ref. */
typedef struct zkr_lock_ref {
    const void *ops; /* which kind (opaque) */
    void *obj;       /* the lock object */
} zkr_lock_ref_t;

/* A lock's hold listener (zkr_mutex_set_hold_listener,
 * zkr_rwlock_set_hold_listener, zkr_semaphore_mutex_set_hold_listener):
 * called on the client's callback thread whenever a hold of that lock
 * changes state (SAFE -> IN_DOUBT -> SAFE again, or -> LOST).  lock is the
 * lock the hold is of (for a read/write lock, its read or write half: compare
 * with zkr_lock_ref_equal), node_path the hold's node (valid during the call).
 * The lock object is valid during the call: its *_free turns its listener
 * off and waits for a call in progress (also for asynchronous holds that
 * outlive it). */
typedef void (*zkr_hold_fn)(zkr_lock_ref_t lock, zkr_hold_state_t state, const char *node_path, void *ctx);

/* 1.0.0 changed what some callbacks receive (their object first, ctx
 * last).  In C, passing a function of the 0.2.0 type is only a warning,
 * and the call would then go wrong at run time; so each call that takes
 * such a callback is checked at compile time, and a function of another
 * type fails the build with a message naming the type expected (NEWS,
 * "Migrating from 0.2.0").  NULL passes. */
#if !defined(__cplusplus) && !defined(ZKR_BUILDING) && defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
#define ZKR__CHECKS 1
#define ZKR__CHECK_FN(fn, type, msg)                                                                      \
    ((void)sizeof(struct {                                                                                \
        _Static_assert(_Generic((fn), type: 1, void *: 1, default: 0), "zkrecipes 1.0: " msg " (NEWS)"); \
        int zkr__unused;                                                                                  \
    }))
#define ZKR__CHECKED(fn, type, msg, call) (ZKR__CHECK_FN(fn, type, msg), call)
#else
#define ZKR__CHECKED(fn, type, msg, call) (call)
#endif

/* Conventions of the whole API (also in zkrecipes(7), CONVENTIONS):
 *
 *  - Functions return 0 (ZKR_OK) or a negative ZKR_E... code, each code
 *    with one meaning (errors.h).  The object comes first; a constructor
 *    hands its object out through its first argument
 *    (zkr_mutex_new(&m, c, path)); other outputs come last.  Counts are
 *    size_t; every timeout is int64_t milliseconds (< 0 forever, 0 one
 *    try).
 *  - Giving back what was acquired is always "release": zkr_*_release,
 *    zkr_lease_release, zkr_hold_release, zkr_multilock_release.
 *  - NULL: every *_free and zkr_client_close accept NULL and do nothing.
 *    Every other call, every release included, refuses a NULL object with
 *    ZKR_EINVAL; getters return the neutral value their declaration
 *    names (0, ZKR_HOLD_NONE, NULL, "invalid" for a kind's name).
 *  - *_free releases what the object itself holds (a mutex's and a
 *    read/write lock's holds in every thread, a semaphore mutex's, the
 *    calling thread's acquires through a multi-lock, a latch's
 *    or selector's place in the election, an observer's watch), then
 *    frees it.  Handles an object handed out (zkr_lease_t, zkr_hold_t)
 *    are objects of their own: each is released by its own call, also
 *    after the object that made it is freed.
 *  - Strings: a `const char *` the library returns is lent (valid as long
 *    as its declaration says; never free it: names, zkr_version,
 *    zkr_strerror); a string handed out through a `char **` out-parameter
 *    (every *_node_path getter, zkr_op_t.created) is the caller's, freed with zkr_free, and
 *    the getter sets it to NULL first, so that it is NULL on any error;
 *    arrays of strings with zkr_strings_free.
 *  - Which thread may release what:
 *        mutex, read/write lock (either half)   the thread that acquired
 *                                               it (holds are per thread)
 *        semaphore mutex                        any thread (the object
 *                                               holds it)
 *        lease, zkr_hold_t (asynchronous)       any thread
 *        multi-lock                             each part by its rule
 *    zkr_*_is_held and zkr_lock_is_held answer for the same holder: the
 *    calling thread (mutex, read/write lock), the object (semaphore
 *    mutex).
 *  - Callbacks get the object they are about first and ctx last: a hold
 *    listener its lock (zkr_hold_fn) or semaphore (zkr_lease_fn), a
 *    leadership listener its latch or selector, an observer's function
 *    its observer, a state listener its client, an asynchronous
 *    acquire's completion the acquire's id and, granted, the hold or
 *    lease.  The object is valid during the call.
 *  - Listeners (state, leadership, hold) may be set at any time and are
 *    told what happens after the call; nothing is told again.  A hold
 *    keeps the hold listener its object had when it was acquired (for an
 *    asynchronous acquire, when the acquire started), until the object
 *    is freed: then it is told nothing more.
 *  - Process-wide settings are set by process-wide functions
 *    (zkr_set_zk_log_level), never by a client's options. */

/* Free a string (or other memory) the library handed out through an
 * out-parameter.  NULL is a no-op. */
ZKR_EXTERN void zkr_free(void *p);

/* Free a string array the library returned (participants lists): every
 * string, then the array.  NULL is a no-op. */
ZKR_EXTERN void zkr_strings_free(char **strings, size_t count);

/* "NONE", "SAFE", "IN_DOUBT", "LOST"; "UNKNOWN" otherwise. */
ZKR_EXTERN const char *zkr_hold_state_name(zkr_hold_state_t state);

/* The library's version, "MAJOR.MINOR.PATCH". */
ZKR_EXTERN const char *zkr_version(void);

#ifdef __cplusplus
}
#endif
#endif

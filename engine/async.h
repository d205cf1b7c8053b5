/* The engine's acquires, as the recipes see them: an acquire is described
 * by a target (filled by the lock kind), runs as a state machine driven by
 * ZooKeeper's answers and watches on the client thread, and ends once:
 * handed to its blocking caller, or through `deliver` on the thread that
 * dispatches (see
 * include/zkr/async.h).  The engine knows nodes, not holds or leases: the
 * recipe's `deliver` wraps the granted node into what the program gets. */
#ifndef ZKR_ENGINE_ASYNC_H
#define ZKR_ENGINE_ASYNC_H

#include <stdatomic.h>

#include "engine/engine.h"
#include "zkr/async.h"

/* One acquire's target, filled by the kind's accessor.  The strings are the
 * object's (the engine copies them before zkr__async_start returns). */
typedef struct zkr__async_target {
    zkr_client_t *c;
    const char *dir;             /* the queue's directory (the semaphore's locks/) */
    const zkr__driver_t *drv;    /* the queue's driver (the lock driver for a semaphore) */
    const char *leases_dir;      /* semaphore only (the lease stage): its leases/ */
    const char *count_path;      /* semaphore only: shared count, or NULL */
    int max;                     /* semaphore only: the fixed count */
    atomic_int *speculate;       /* semaphore only (fixed count): the
                                    object's "locks/ was free last time" */
    zkr__hold_listener_t hold;   /* the object's hold listener now */
    const void *owner;           /* the object (cancelled when it is freed) */
    const char *data;            /* the queue node's data (NULL: none) */
    int data_len;
    int64_t delay_ms;            /* the first create no sooner than this
                                    (a retry's pause); 0: at once */
} zkr__async_target_t;

/* How an acquire ends.  deliver runs exactly once, on the dispatching
 * thread (or the client thread, or the closing one: see on_client), with
 * no lock held: rc
 * ZKR_OK with the granted, tracked node (deliver owns it: it moves it into
 * a hold or deletes it), or an error with node NULL. */
typedef struct zkr__async_done zkr__async_done_t;
struct zkr__async_done {
    void (*deliver)(zkr_client_t *c, int rc, zkr__node_t *node, const zkr__async_done_t *d);
    int kind;          /* the recipe's, opaque to the engine */
    void (*fn)(void);  /* the program's completion, cast back by deliver */
    void *ctx;
    int on_client;     /* the library's own acquire (a latch's): delivered
                          by the callback thread whatever the dispatch mode
                          (or by the closing thread), never by
                          zkr_client_dispatch */
    uint64_t id;       /* the acquire's id (set by the engine) */
};

/* A blocking acquire: the same record, run by the client thread; the
 * calling thread (which must be inside the client) waits for its end, at
 * most until the deadline plus ZKR__DEADLINE_GRACE_MS whatever is in
 * flight (then ZKR_ETIMEDOUT, and what its requests made is deleted when
 * they are answered).  The thread's offered prefetch for this
 * very queue (zkr__prefetch_offer), if any, gives the node and its first
 * listing.  Returns ZKR_OK (*out: the granted node, its hold begun with
 * t->hold as its listener, as for every acquire), ZKR_ETIMEDOUT,
 * ZKR_ECLOSED, ZKR_ESESSIONLOST (our node went with the session),
 * ZKR_EDELETED (someone else deleted it), ZKR_ENOMEM, ZKR_ENOAUTH,
 * ZKR_ENONODE, ZKR_EBADDATA (a shared count that is not one),
 * ZKR_EZOOKEEPER.  On failure our nodes are gone (or their deletion is
 * under way in the background). */
int zkr__acquire(const zkr__async_target_t *t, int64_t deadline, zkr__node_t *out);

/* zkr__acquire on a queue (a lock kind's directory and driver), the hold
 * told to `hold`. */
int zkr__queue_acquire(zkr_client_t *c, const char *dir, const zkr__driver_t *drv, zkr__hold_listener_t hold,
                       int64_t deadline, zkr__node_t *out);

/* Start an acquire.  Returns ZKR_OK (*id set if id is not NULL),
 * ZKR_ENOMEM, ZKR_ECLOSED. */
int zkr__async_start(const zkr__async_target_t *t, int64_t timeout_ms, const zkr__async_done_t *done,
                     uint64_t *id);

/* Release a granted node without waiting: its delete goes out now, and
 * fn(rc, ctx) runs once (rc: what zkr__node_delete would have returned)
 * where completions run; then the holder's reference to the client
 * (zkr__client_retain) is dropped.  Returns ZKR_OK, or ZKR_ENOMEM /
 * ZKR_ECLOSED (the client is closing) with *node and the reference
 * untouched and nothing delivered. */
int zkr__async_release(zkr_client_t *c, zkr__node_t *node, zkr_release_fn fn, void *ctx);

/* Cancel every pending asynchronous acquire made on `owner` (its object is
 * being freed): their completions report ZKR_ECANCELED. */
void zkr__async_forget(zkr_client_t *c, const void *owner);

/* zkr__async_forget, and more, for the library's own acquires whose
 * delivery would touch `owner` (done.ctx): none of them is delivered to it
 * any more (a grant is deleted instead), and a delivery running now on
 * another thread has ended when this returns.  So the owner may be freed
 * without waiting for the executor or the client's close. */
void zkr__async_detach(zkr_client_t *c, const void *owner);

#endif

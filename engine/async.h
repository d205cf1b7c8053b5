/* The engine's asynchronous acquires, as the recipes see them: an acquire
 * is described by a target (filled by the lock kind), runs as a state
 * machine driven by ZooKeeper's answers and watches on the client thread,
 * and ends once, through `deliver`, on the thread that dispatches (see
 * include/zkr/async.h).  The engine knows nodes, not holds or leases: the
 * recipe's `deliver` wraps the granted node into what the program gets. */
#ifndef ZKR_ENGINE_ASYNC_H
#define ZKR_ENGINE_ASYNC_H

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
    zkr__hold_listener_t hold;   /* the object's hold listener now */
    const void *owner;           /* the object (cancelled when it is freed) */
} zkr__async_target_t;

/* How an acquire ends.  deliver runs exactly once, on the dispatching
 * thread (or the client thread, or the closing one), with no lock held: rc
 * ZKR_OK with the granted, tracked node (deliver owns it: it moves it into
 * a hold or deletes it), or an error with node NULL. */
typedef struct zkr__async_done zkr__async_done_t;
struct zkr__async_done {
    void (*deliver)(zkr_client_t *c, int rc, zkr__node_t *node, const zkr__async_done_t *d);
    int kind;          /* the recipe's, opaque to the engine */
    void (*fn)(void);  /* the program's completion, cast back by deliver */
    void *ctx;
};

/* Start an acquire.  Returns ZKR_OK (*id set if id is not NULL),
 * ZKR_ENOMEM, ZKR_ECLOSED. */
int zkr__async_start(const zkr__async_target_t *t, int64_t timeout_ms, const zkr__async_done_t *done,
                     uint64_t *id);

/* Cancel every pending asynchronous acquire made on `owner` (its object is
 * being freed): their completions report ZKR_ECANCELED. */
void zkr__async_forget(zkr_client_t *c, const void *owner);

#endif

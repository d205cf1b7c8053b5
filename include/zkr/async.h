/* Asynchronous acquire, for event-driven programs: start an acquire on any
 * lock kind (through zkr_lock_ref_t) or a semaphore lease, get a handle
 * (an id) at once, and have a completion function called later with the
 * same codes the blocking call returns.  Waiting costs no thread: the
 * acquire is a state machine driven by ZooKeeper's answers and watches and
 * by the client's callback thread (deadlines, session events).
 *
 * Where completions run (zkr_client_set_dispatch):
 *   ZKR_DISPATCH_LOOP (the default): on the thread that calls
 *     zkr_client_dispatch, typically the program's event loop, woken by
 *     zkr_client_fd becoming readable (the c-ares / libcurl-multi model):
 *
 *       struct pollfd p = {zkr_client_fd(c), POLLIN, 0};
 *       while (poll(&p, 1, -1) >= 0)
 *           zkr_client_dispatch(c);   // runs the pending completions here
 *
 *   ZKR_DISPATCH_THREAD: on the client's callback thread (like
 *     listeners, in order with them: see zkr/client.h), for programs
 *     without a loop.  A completion may block there: it delays only the
 *     callbacks after it.
 * Completions never run inside zkr_*_acquire_async itself, never on
 * ZooKeeper's threads, and each runs exactly once for every acquire that
 * was started (zkr_*_acquire_async returned ZKR_OK).
 *
 * Holds granted asynchronously (zkr_hold_t, zkr_lease_t) belong to no
 * thread: they are not reentrant, do not show in the lock object's
 * per-thread queries (zkr_mutex_is_held, zkr_lock_fencing_token, ...) and
 * may be released once, from any thread: zkr_hold_release and
 * zkr_lease_release wait for the delete's answer (one round trip, bounded by
 * ZKR_RELEASE_WAIT_MS), zkr_hold_release_async and zkr_lease_release_async
 * return at once and deliver the same answer as a completion, like an
 * acquire's (an event loop never waits on the network).  An asynchronous acquire queues like any other contender (FIFO
 * with every process's acquires), also behind a hold of the same object
 * taken by a blocking call: it never re-enters or downgrades.  The lock
 * object's hold listener (as set when the acquire starts) is told the
 * hold's states, on the callback thread, as for blocking holds.  Mutex holds
 * granted asynchronously are not revocable.
 *
 * Lifetimes: a hold or lease stays valid after its lock object is freed
 * (release it with zkr_hold_release / zkr_lease_release, also after
 * zkr_client_close); freeing a lock object or semaphore cancels its pending
 * acquires (their completions report ZKR_ECANCELED).  zkr_client_close
 * ends every acquire still pending or granted but not yet delivered with
 * ZKR_ECLOSED (a granted one is released first), and runs those
 * completions on the thread calling zkr_client_close, before it returns.
 * No call on the client is allowed once zkr_client_close has returned. */
#ifndef ZKR_ASYNC_H
#define ZKR_ASYNC_H

#include "zkr/client.h"
#include "zkr/common.h"
#include "zkr/errors.h"
#include "zkr/hold.h"
#include "zkr/lock.h"
#include "zkr/semaphore.h"

/* The calls, by the handle they belong to: zkr_lock_acquire_async
 * (zkr/lock.h), zkr_semaphore_acquire_async and zkr_lease_release_async
 * (zkr/semaphore.h), zkr_leader_acquire_async (zkr/leader.h), zkr_hold_t
 * and its release (zkr/hold.h), the dispatch and zkr_async_cancel
 * (zkr/client.h).  This header includes them all. */
#endif

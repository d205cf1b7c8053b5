/* What the leader recipes (latch.c, selector.c, observe.c, the
 * asynchronous term in async_api.c) share, from election.c (never
 * installed). */
#ifndef ZKR_RECIPES_ELECTION_H
#define ZKR_RECIPES_ELECTION_H

#include <pthread.h>

#include "recipes/recipes.h"
#include "zkr/leader.h"

/* How often a leader recipe's waiter looks whether the client closed
 * (nothing signals it). */
#define ZKR__CLOSED_POLL_MS 100

/* The latch's driver: marker "latch-", the first node leads, the others
 * watch the node just before theirs. */
extern const zkr__driver_t zkr__latch_driver;
/* The driver of a kind's nodes; NULL for an unknown kind. */
const zkr__driver_t *zkr__election_driver(zkr_election_kind_t kind);

/* 1 if id is well-formed UTF-8 of at most ZKR_LEADER_ID_MAX bytes. */
int zkr__leader_id_ok(const char *id);
/* The host's first non-loopback IPv4 address as text ("127.0.0.1" if
 * none), malloc'd; NULL on ENOMEM. */
char *zkr__host_address(void);

/* Read the node at path into *out (its data, czxid, owner, a copy of the
 * path), with a data watch if w is not NULL.  Returns a ZooKeeper code
 * (ZNONODE: gone; ZSYSTEMERROR: out of memory). */
int zkr__participant_read(zhandle_t *zh, const char *path, watcher_fn w, void *wctx, zkr_participant_t *out);

/* A leadership listener: a latch's or a selector's, told obj. */
typedef struct zkr__leader_listener {
    zkr_latch_fn latch_fn;
    zkr_selector_fn selector_fn;
    void *obj;
    void *ctx;
} zkr__leader_listener_t;

/* Telling a leadership listener on the client thread, in order, only
 * changes.  The fields are guarded by the owner's *mu. */
typedef struct zkr__tell {
    zkr_client_t *c;
    pthread_mutex_t *mu;
    pthread_cond_t *cond; /* broadcast when a call has run */
    zkr__leader_listener_t who; /* nobody: both functions NULL */
    void *sub;
    int told;             /* the last state told (0 at first): posted once
                             started (fn is fixed by then) */
    int64_t told_token;   /* its token */
    int seen;             /* the last state the listener ran with */
    long posted, ran;
    int in_call;
    int muted;            /* what is posted is no longer told */
    pthread_t calling;
} zkr__tell_t;
/* Returns ZKR_OK or ZKR_ENOMEM. */
int zkr__tell_init(zkr__tell_t *t, zkr_client_t *c, pthread_mutex_t *mu, pthread_cond_t *cond);
/* Tell is_leader (and the term's token) if it is a change.  *mu held. */
void zkr__tell_locked(zkr__tell_t *t, int is_leader, int64_t token);
/* 1 if the calling thread is inside the listener.  *mu held. */
int zkr__tell_in_call_locked(const zkr__tell_t *t);
/* Wait until everything told has run, then stop (no lock held).  On the
 * client thread (a callback of another object), where what is posted
 * would run only after it returns, it does not wait: the listener is told
 * there the last state posted, if it is not the one it has. */
void zkr__tell_finish(zkr__tell_t *t);

/* A participant's seat (seat.c): the object's thread and its node.  The
 * fields after `c` are guarded by mu. */
typedef struct zkr__seat {
    zkr_client_t *c;
    char *path;
    char *data;               /* the node's data (the id) */
    const zkr__driver_t *drv;
    pthread_mutex_t mu;
    pthread_cond_t cond;      /* the thread's news, waiters, the listener's calls */
    zkr__tell_t tell;
    pthread_t thread;
    int started, closing, closed, exited;
    int attempts;             /* failed joins in a row */
    int leader;               /* the recipe's: granted and told it leads */
    int doubt_leads;          /* IN_DOUBT still leads (the latch's session
                                 policy) */
    zkr__node_t node;         /* our node while we hold it */
} zkr__seat_t;
/* Returns ZKR_OK, ZKR_ENOMEM, ZKR_ESYSTEM, ZKR_ECLOSED. */
int zkr__seat_init(zkr__seat_t *s, zkr_client_t *c, const char *path, const char *data,
                   const zkr__driver_t *drv);
/* Before start: ZKR_OK, ZKR_ESTATE. */
int zkr__seat_set_listener(zkr__seat_t *s, zkr__leader_listener_t who);
/* The pause before joining again after rc (0 at once for our node gone
 * the first time, longer each time; counted in attempts).  mu held. */
int64_t zkr__seat_retry_ms(zkr__seat_t *s, int rc);
/* Start (once): the listener set before is told from now on, and go(arg)
 * (mu held) starts the recipe (its thread, or its first acquire).
 * Returns ZKR_OK, ZKR_ESTATE, ZKR_ECLOSED, ZKR_ENOMEM, or go's code. */
int zkr__seat_start(zkr__seat_t *s, int (*go)(void *arg), void *arg);
int zkr__seat_client_closed(zkr__seat_t *s);
/* Wait for news until deadline (a short slice at most).  mu held. */
void zkr__seat_wait_locked(zkr__seat_t *s, int64_t deadline);
/* The thread: queue until first (no deadline; close cancels), node in
 * s->node, tracked (its state changes wake the thread).  Returns the
 * codes of zkr__acquire. */
int zkr__seat_take(zkr__seat_t *s);
/* Whether a hold in state st leads (SAFE; IN_DOUBT under the session
 * policy). */
int zkr__seat_state_leads(const zkr__seat_t *s, zkr_hold_state_t st);
/* Leading now: the one place that decides it.  The recipe was granted the
 * node (first in line) and told it leads, and the node's hold state, read
 * now (it changes on the client thread at once, before any callback runs),
 * still leads; LOST once the client closes.  mu held. */
int zkr__seat_leading_locked(zkr__seat_t *s);
/* The hold's state (LOST once the client closes).  mu held. */
zkr_hold_state_t zkr__seat_state_locked(zkr__seat_t *s);
/* The thread: delete our node (if any). */
void zkr__seat_give_up(zkr__seat_t *s);
/* The thread: wait before joining again after rc (longer each time). */
void zkr__seat_backoff(zkr__seat_t *s, int rc);
/* Proclaim and guarded writes while leading (ZKR_ENOTLEADER otherwise):
 * the codes of zkr_latch_proclaim and zkr_latch_guarded_write. */
int zkr__seat_proclaim(zkr__seat_t *s, const char *value);
int zkr__seat_guarded_write(zkr__seat_t *s, zkr_op_t *ops, size_t n);
/* The term's token: ZKR_OK, ZKR_ENOTLEADER. */
int zkr__seat_token(zkr__seat_t *s, int64_t *token);
/* The current term's node path, a copy (ZKR_ENOTLEADER if none). */
int zkr__seat_node_path(zkr__seat_t *s, char **path);
/* End the thread and tell what is left: ZKR_OK, ZKR_ESTATE, ZKR_EDEADLK. */
int zkr__seat_close(zkr__seat_t *s, int on_own_thread);
/* The thread's last act: give up the node, say it has ended. */
void zkr__seat_exit(zkr__seat_t *s);
void zkr__seat_destroy(zkr__seat_t *s);

/* Proclaim (guard.c): set the node's value while the guard stands.
 * Returns the codes of zkr_latch_proclaim. */
int zkr__proclaim(zkr__guard_t *g, const char *value);

#endif
